//! The other planners against their calls, as `api_plan.rs` does for `bc_plan_binary`:
//! `bc_plan_binary_scalar` / `bc_binary_scalar`, `bc_plan_binary_rscalar` /
//! `bc_binary_rscalar`, `bc_plan_where` / `bc_where`, `bc_plan_reduce` / `bc_reduce`,
//! `bc_plan_sum_to_size` / `bc_tensor_sum_to_size` and `bc_plan_binary_sum_to` /
//! `bc_binary_sum_to`, `bc_plan_expr` / `bc_expr_eval`, from the geometry of live tensors. The
//! header's contract: a plan that succeeds means the call succeeds with the planned type, shape
//! and strides (only memory, and an integer zero divisor, which only the call sees, may fail it);
//! a refused plan means the call is refused with the same status and message. Calls whose inputs
//! or result are too large to run in a fuzz step are not made. The call's result is freed (the
//! families of the calls check their values); its warnings are counted for the world check.
//!
//! The planners of calls that write, against those calls on the live tensors:
//! `bc_plan_binary_inplace`, `bc_plan_binary_out`, `bc_plan_binary_scalar_inplace`,
//! `bc_plan_where_out` and `bc_plan_expr_out`. The same contract, except what only the call sees
//! (a target that partly overlaps an input, which the model decides, may be refused by the call
//! alone); a successful plan's shape and strides are the written tensor's, its type one that
//! casts to the written tensor's. The written
//! values are the families' of those calls to check: here the library's are adopted by the
//! model.
use super::expr::{c_steps, Step};
use super::unary::library_values;
use super::*;

/// Frees a result when the comparison ends, whatever way.
struct Made(*mut bc_tensor);

impl Drop for Made {
    fn drop(&mut self) {
        if !self.0.is_null() {
            bc_tensor_free(self.0);
        }
    }
}

fn geometry<'a>(t: &'a TM, shape: &'a [i64]) -> bc_geometry {
    bc_geometry {
        dtype: t.dtype,
        ndim: t.ndim(),
        shape: shape.as_ptr(),
        strides: t.strides.as_ptr(),
    }
}

fn shape_i64(t: &TM) -> Vec<i64> {
    t.shape.iter().map(|&s| s as i64).collect()
}

impl Runner<'_> {
    /// Plans with `plan_fn`, calls with `call_fn`, and compares. `inputs` bound the call's work.
    fn plan_against_call(
        &mut self,
        what: &str,
        inputs: &[&TM],
        divides: bool,
        plan_fn: impl FnOnce(&mut bc_plan) -> i32,
        call_fn: impl FnOnce(*mut *mut bc_tensor) -> i32,
    ) -> Result<Result<(), Skip>, String> {
        // SAFETY: a zeroed plan is a valid value of the plain C struct.
        let mut plan: bc_plan = unsafe { std::mem::zeroed() };
        let planned = plan_fn(&mut plan);
        let plan_message = last_message();
        if planned == BC_OK {
            let shape: Vec<usize> = plan.shape[..plan.ndim]
                .iter()
                .map(|&s| s as usize)
                .collect();
            // The call's work: its inputs, their broadcast, its result.
            let spread = inputs
                .iter()
                .try_fold(Vec::new(), |acc: Vec<usize>, t| broadcast(&acc, &t.shape))
                .map_or(0, |s| numel_of(&s));
            if numel_of(&shape) > MAX_CHECK_ELEMS
                || spread > MAX_CHECK_ELEMS
                || inputs.iter().any(|t| t.numel() > MAX_CHECK_ELEMS)
            {
                return Ok(Err(Skip));
            }
        }
        let before: [usize; 4] = std::array::from_fn(|k| WARNINGS[k].load(Ordering::SeqCst));
        let mut out: *mut bc_tensor = ptr::null_mut();
        let st = call_fn(&mut out);
        let made = Made(if st == BC_OK { out } else { ptr::null_mut() });
        let call_message = last_message();
        for k in 0..4 {
            self.expected_warnings[k] += WARNINGS[k].load(Ordering::SeqCst) - before[k];
        }
        if WARNINGS[WARN_OTHER].load(Ordering::SeqCst) > before[WARN_OTHER] {
            super::where_::note_warned();
        }
        // `bc_binary_sum_to` refuses a zero divisor even before a shape the planner refuses
        // (the header).
        let divisor_first = divides && what == "plan_binary_sum_to";
        let want = if (planned == BC_OK && (st == BC_ERR_ALLOC || (divides && st == BC_ERR_VALUE)))
            || (divisor_first && st == BC_ERR_VALUE)
        {
            st
        } else {
            planned
        };
        self.check_status(&format!("{what}: the call"), st, want)?;
        if planned != BC_OK && st == planned && call_message != plan_message {
            return Err(format!(
                "{what}: planner says {plan_message:?}, the call {call_message:?}"
            ));
        }
        if st != BC_OK {
            return Ok(Ok(()));
        }
        let (mut dt, mut nd) = (0i32, 0usize);
        let mut strides = [0i64; BC_MAX_NDIM];
        let mut got_shape = [0i64; BC_MAX_NDIM];
        // SAFETY: a live result; buffers of BC_MAX_NDIM entries.
        unsafe {
            let _ = bc_tensor_dtype(made.0, &mut dt);
            let _ = bc_tensor_ndim(made.0, &mut nd);
            let _ = bc_tensor_shape(made.0, got_shape.as_mut_ptr(), BC_MAX_NDIM);
            let _ = bc_tensor_strides(made.0, strides.as_mut_ptr(), BC_MAX_NDIM);
        }
        if dt != plan.dtype
            || nd != plan.ndim
            || got_shape[..nd] != plan.shape[..nd]
            || strides[..nd] != plan.strides[..nd]
        {
            return Err(format!(
                "{what}: planned dtype {} shape {:?} strides {:?}, the call gave {dt} {:?} {:?}",
                plan.dtype,
                &plan.shape[..plan.ndim],
                &plan.strides[..plan.ndim],
                &got_shape[..nd],
                &strides[..nd]
            ));
        }
        Ok(Ok(()))
    }

    /// Plans a call that writes `target` with `plan_fn`, makes it with `call_fn`, and compares;
    /// `partial`: the target partly overlaps an input (only the call sees it).
    fn plan_against_write(
        &mut self,
        what: &str,
        target: &TM,
        inputs: &[&TM],
        partial: bool,
        divides: bool,
        plan_fn: impl FnOnce(&mut bc_plan) -> i32,
        call_fn: impl FnOnce() -> i32,
    ) -> Result<Result<(), Skip>, String> {
        if target.numel() > MAX_CHECK_ELEMS || inputs.iter().any(|t| t.numel() > MAX_CHECK_ELEMS) {
            return Ok(Err(Skip));
        }
        // SAFETY: a zeroed plan is a valid value of the plain C struct.
        let mut plan: bc_plan = unsafe { std::mem::zeroed() };
        let planned = plan_fn(&mut plan);
        let plan_message = last_message();
        let before: [usize; 4] = std::array::from_fn(|k| WARNINGS[k].load(Ordering::SeqCst));
        let st = call_fn();
        let call_message = last_message();
        for k in 0..4 {
            self.expected_warnings[k] += WARNINGS[k].load(Ordering::SeqCst) - before[k];
        }
        let call_only = st == BC_ERR_ALLOC
            || (divides && st == BC_ERR_VALUE)
            || (partial && st == BC_ERR_OVERLAP);
        let want = if call_only { st } else { planned };
        self.check_status(&format!("{what}: the call"), st, want)?;
        if st != BC_OK {
            if st == planned && call_message != plan_message {
                return Err(format!(
                    "{what}: planner says {plan_message:?}, the call {call_message:?}"
                ));
            }
            return Ok(Ok(()));
        }
        let shape: Vec<i64> = target.shape.iter().map(|&n| n as i64).collect();
        // The plan's type is the result's, which the call casts to the target's.
        if !can_cast(plan.dtype, target.dtype)
            || plan.shape[..plan.ndim] != shape[..]
            || plan.strides[..plan.ndim] != target.strides[..]
        {
            return Err(format!(
                "{what}: planned dtype {} shape {:?} strides {:?}, the target is {} {:?} {:?}",
                plan.dtype,
                &plan.shape[..plan.ndim],
                &plan.strides[..plan.ndim],
                target.dtype,
                target.shape,
                target.strides
            ));
        }
        // The written values, adopted.
        let h = self
            .slots
            .iter()
            .flatten()
            .find(|(_, t)| {
                t.st == target.st
                    && t.offset == target.offset
                    && t.shape == target.shape
                    && t.strides == target.strides
                    && t.dtype == target.dtype
            })
            .map(|(h, _)| *h as *mut bc_tensor)
            .expect("the target is live");
        let got = library_values(h, target.dtype, target.numel() as usize)?;
        for (i, v) in got.into_iter().enumerate() {
            self.write_at(target, i, Some(v));
            // The values read back are canonical (a bool is 0 or 1), but a bool the call copies
            // (`where`'s chosen element) keeps its source's byte, which in a caller's buffer may
            // be another non-zero byte: the model takes the byte from memory when it means the
            // same value.
            if target.dtype == BOOL {
                let (sp, at) = self.addr(target, &unflatten(i, &target.shape));
                if let Space::Buf(b) = sp {
                    let at = at as usize;
                    let real = self.arena[b][at / 8].to_ne_bytes()[at % 8];
                    let m = self.mem_mut(sp);
                    if (real != 0) == (m.bytes[at] != 0) {
                        m.bytes[at] = real;
                    }
                }
            }
        }
        Ok(Ok(()))
    }

    /// `bc_plan_expr` against `bc_expr_eval`, or (`into`) `bc_plan_expr_out` against
    /// `bc_expr_eval_out` into `c`, over the inputs `a` and `b`.
    fn plan_expr(
        &mut self,
        into: bool,
        a: Arg,
        b: Arg,
        c: Arg,
    ) -> Result<Result<(), Skip>, String> {
        let steps: Vec<Step> = self.draw_program(2);
        let (Ok(ta), Ok(tb), Ok(tc)) = (self.resolve(a), self.resolve(b), self.resolve(c)) else {
            return Ok(Err(Skip));
        };
        if ta.numel() > 64 || tb.numel() > 64 || (into && tc.numel() > MAX_CHECK_ELEMS) {
            return Ok(Err(Skip));
        }
        let cs = c_steps(&steps);
        let (sa, sb, sc) = (shape_i64(&ta), shape_i64(&tb), shape_i64(&tc));
        let geoms = [geometry(&ta, &sa), geometry(&tb, &sb)];
        let gc = geometry(&tc, &sc);
        let ins: Vec<*const bc_tensor> = vec![self.raw(a), self.raw(b)];
        let hc = self.raw(c);
        let (da, db, dc) = (self.describe(a), self.describe(b), self.describe(c));
        let before_where = WARNINGS[WARN_OTHER].load(Ordering::SeqCst);
        let r = if into {
            self.note(format!("plan_expr_out({steps:?}, [{da}, {db}], out {dc})"));
            let partial = self.partial_overlap(&tc, &ta) || self.partial_overlap(&tc, &tb);
            self.plan_against_write(
                "plan_expr_out",
                &tc,
                &[&ta, &tb],
                partial,
                true,
                // SAFETY: steps and geometries valid for their lengths; plan valid.
                |p| unsafe { bc_plan_expr_out(cs.as_ptr(), cs.len(), geoms.as_ptr(), 2, &gc, p) },
                // SAFETY: steps and inputs valid for their lengths; live handles.
                || unsafe { bc_expr_eval_out(cs.as_ptr(), cs.len(), ins.as_ptr(), 2, hc) },
            )
        } else {
            self.note(format!("plan_expr({steps:?}, [{da}, {db}])"));
            self.plan_against_call(
                "plan_expr",
                &[&ta, &tb],
                true,
                // SAFETY: steps and geometries valid for their lengths; plan valid.
                |p| unsafe { bc_plan_expr(cs.as_ptr(), cs.len(), geoms.as_ptr(), 2, p) },
                // SAFETY: steps and inputs valid for their lengths; out valid.
                |o| unsafe { bc_expr_eval(cs.as_ptr(), cs.len(), ins.as_ptr(), 2, o) },
            )
        };
        if WARNINGS[WARN_OTHER].load(Ordering::SeqCst) > before_where {
            super::where_::note_warned();
        }
        r
    }

    /// One of the planners of this family.
    pub(super) fn op_plan_more(&mut self) -> Result<Result<(), Skip>, String> {
        let kind = self.inp.below(12);
        let a = self.arg();
        let b = self.arg();
        let c = self.arg();
        let op = self.any_op_code();
        let s = self.number();
        let (dims, count) = self.dims_arg();
        let keepdim = self.inp.flag();
        let reduce_op = self.inp.below(BC_REDUCE_COUNT as usize + 1) as i32;
        let mut to: Vec<i64> = (0..self.inp.below(4)).map(|_| self.inp.size()).collect();
        let (Ok(ta), Ok(tb), Ok(tc)) = (self.resolve(a), self.resolve(b), self.resolve(c)) else {
            return Ok(Err(Skip));
        };
        // A shape to sum to: mostly the trailing sizes of `a`, some made 1.
        if self.inp.u8() % 4 != 0 {
            let keep = to.len().min(ta.ndim());
            to = ta.shape[ta.ndim() - keep..]
                .iter()
                .zip(&to)
                .map(|(&n, &r)| if r == 1 { 1 } else { n as i64 })
                .collect();
        }
        let (sa, sb, sc) = (shape_i64(&ta), shape_i64(&tb), shape_i64(&tc));
        let (ga, gb, gc) = (geometry(&ta, &sa), geometry(&tb, &sb), geometry(&tc, &sc));
        let (ha, hb, hc) = (self.raw(a), self.raw(b), self.raw(c));
        let dims_ptr = dims.as_ref().map_or(ptr::null(), |d| d.as_ptr());
        let divides = matches!(
            op,
            BC_OP_REMAINDER | BC_OP_FMOD | BC_OP_FLOOR_DIVIDE | BC_OP_DIV
        );
        let (da, db, dc) = (self.describe(a), self.describe(b), self.describe(c));
        // SAFETY (the closures below): geometries whose arrays hold `ndim` entries, live
        // handles, dims valid for `count` reads (or NULL), `to` for its length; plan and out
        // valid for one write.
        match kind {
            0 => {
                self.note(format!("plan_binary_scalar(op {op}, {da}, {s:?})"));
                self.plan_against_call(
                    "plan_binary_scalar",
                    &[&ta],
                    divides,
                    |p| unsafe { bc_plan_binary_scalar(op, &ga, s, p) },
                    |o| unsafe { bc_binary_scalar(op, ha, s, o) },
                )
            }
            1 => {
                self.note(format!("plan_binary_rscalar(op {op}, {s:?}, {da})"));
                self.plan_against_call(
                    "plan_binary_rscalar",
                    &[&ta],
                    divides,
                    |p| unsafe { bc_plan_binary_rscalar(op, s, &ga, p) },
                    |o| unsafe { bc_binary_rscalar(op, s, ha, o) },
                )
            }
            2 => {
                self.note(format!("plan_where({da}, {db}, {dc})"));
                self.plan_against_call(
                    "plan_where",
                    &[&ta, &tb, &tc],
                    false,
                    |p| unsafe { bc_plan_where(&ga, &gb, &gc, p) },
                    |o| unsafe { bc_where(ha, hb, hc, o) },
                )
            }
            3 => {
                self.note(format!(
                    "plan_reduce(op {reduce_op}, {da}, dims {dims:?} (count {count}), keepdim {keepdim})"
                ));
                self.plan_against_call(
                    "plan_reduce",
                    &[&ta],
                    false,
                    |p| unsafe { bc_plan_reduce(reduce_op, &ga, dims_ptr, count, keepdim, p) },
                    |o| unsafe { bc_reduce(reduce_op, ha, dims_ptr, count, keepdim, o) },
                )
            }
            4 => {
                self.note(format!("plan_sum_to_size({da}, {to:?})"));
                self.plan_against_call(
                    "plan_sum_to_size",
                    &[&ta],
                    false,
                    |p| unsafe { bc_plan_sum_to_size(&ga, to.as_ptr(), to.len(), p) },
                    |o| unsafe { bc_tensor_sum_to_size(ha, to.as_ptr(), to.len(), o) },
                )
            }
            6 => self.plan_expr(false, a, b, c),
            7 => {
                self.note(format!("plan_binary_inplace(op {op}, {da}, {db})"));
                let partial = self.partial_overlap(&ta, &tb);
                self.plan_against_write(
                    "plan_binary_inplace",
                    &ta,
                    &[&tb],
                    partial,
                    divides,
                    |p| unsafe { bc_plan_binary_inplace(op, &ga, &gb, p) },
                    || bc_binary_inplace(op, ha, hb),
                )
            }
            8 => {
                self.note(format!("plan_binary_out(op {op}, {da}, {db}, out {dc})"));
                let partial = self.partial_overlap(&tc, &ta) || self.partial_overlap(&tc, &tb);
                self.plan_against_write(
                    "plan_binary_out",
                    &tc,
                    &[&ta, &tb],
                    partial,
                    divides,
                    |p| unsafe { bc_plan_binary_out(op, &ga, &gb, &gc, p) },
                    || bc_binary_out(op, ha, hb, hc),
                )
            }
            9 => {
                self.note(format!("plan_binary_scalar_inplace(op {op}, {da}, {s:?})"));
                self.plan_against_write(
                    "plan_binary_scalar_inplace",
                    &ta,
                    &[],
                    false,
                    divides,
                    |p| unsafe { bc_plan_binary_scalar_inplace(op, &ga, s, p) },
                    || bc_binary_scalar_inplace(op, ha, s),
                )
            }
            10 => {
                // `where(a, b, b)` into `c`.
                self.note(format!("plan_where_out({da}, {db}, {db}, out {dc})"));
                let partial = self.partial_overlap(&tc, &ta) || self.partial_overlap(&tc, &tb);
                let before = WARNINGS[WARN_OTHER].load(Ordering::SeqCst);
                let r = self.plan_against_write(
                    "plan_where_out",
                    &tc,
                    &[&ta, &tb],
                    partial,
                    false,
                    |p| unsafe { bc_plan_where_out(&ga, &gb, &gb, &gc, p) },
                    || bc_where_out(ha, hb, hb, hc),
                );
                if WARNINGS[WARN_OTHER].load(Ordering::SeqCst) > before {
                    super::where_::note_warned();
                }
                r
            }
            11 => self.plan_expr(true, a, b, c),
            _ => {
                self.note(format!("plan_binary_sum_to(op {op}, {da}, {db}, {to:?})"));
                self.plan_against_call(
                    "plan_binary_sum_to",
                    &[&ta, &tb],
                    divides,
                    |p| unsafe { bc_plan_binary_sum_to(op, &ga, &gb, to.as_ptr(), to.len(), p) },
                    |o| unsafe { bc_binary_sum_to(op, ha, hb, to.as_ptr(), to.len(), o) },
                )
            }
        }
    }
}
