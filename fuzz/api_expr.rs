//! Fused expressions: `bc_expr_eval` against the same steps made as separate calls (`bc_binary`
//! for every `BC_OP_*` code, `bc_unary` for every `BC_UNARY_*` code, `bc_where`, `bc_lerp`,
//! `bc_addcmul`, `bc_addcdiv` or `bc_clamp` for every `BC_TERNARY_*` code, a 0-d tensor for each
//! constant), as the header states: the first failing step's status, else the same type,
//! shape, strides and elements (a NaN may be any NaN), and the same broadcast warnings. The
//! separate calls are the reference here (each family checks them against the model); the fused
//! result is installed with their elements, so every later check of the world compares it too.
use super::unary::library_values;
use super::*;

/// A program step as drawn, with what the separate evaluation needs.
#[derive(Clone, Copy, Debug)]
pub(super) enum Step {
    Input(usize),
    Const(i32, Num),
    Op(i32),
    Where,
    Unary(i32),
    /// A `BC_TERNARY_*` code and the step's `int_value`, `float_value` (its `value`).
    Ternary(i32, i64, f64),
}

/// Frees the handles when the evaluation ends, whatever way.
pub(super) struct Owned(pub(super) Vec<*mut bc_tensor>);

impl Drop for Owned {
    fn drop(&mut self) {
        for &h in &self.0 {
            bc_tensor_free(h);
        }
    }
}

/// The three broadcast warning counters (the where warning, once per process, is not compared).
pub(super) fn broadcast_warnings() -> [usize; 3] {
    std::array::from_fn(|k| WARNINGS[k].load(Ordering::SeqCst))
}

pub(super) fn other_warnings() -> usize {
    WARNINGS[WARN_OTHER].load(Ordering::SeqCst)
}

/// A program with a code that names nothing, or with no operation, is malformed.
pub(super) fn well_formed(steps: &[Step]) -> bool {
    steps.iter().all(|s| match *s {
        Step::Op(op) => (0..BC_OP_COUNT).contains(&op),
        Step::Unary(op) => (0..BC_UNARY_COUNT).contains(&op),
        Step::Ternary(op, ..) => (0..BC_TERNARY_COUNT).contains(&op),
        _ => true,
    }) && steps.iter().any(|s| {
        matches!(
            s,
            Step::Op(_) | Step::Where | Step::Unary(_) | Step::Ternary(..)
        )
    })
}

/// The program as the C steps.
pub(super) fn c_steps(steps: &[Step]) -> Vec<bc_expr_step> {
    steps
        .iter()
        .map(|s| {
            let (kind, arg, int_value, float_value) = match *s {
                Step::Input(i) => (BC_EXPR_INPUT, i as i32, 0, 0.0),
                Step::Const(dt, n) if is_float(dt) => (BC_EXPR_CONST, dt, 0, n.to_f64()),
                Step::Const(dt, n) => (BC_EXPR_CONST, dt, n.to_i64(), 0.0),
                Step::Op(op) => (BC_EXPR_OP, op, 0, 0.0),
                Step::Where => (BC_EXPR_WHERE, 0, 0, 0.0),
                Step::Unary(op) => (BC_EXPR_UNARY, op, 0, 0.0),
                Step::Ternary(op, i, f) => (BC_EXPR_TERNARY, op, i, f),
            };
            bc_expr_step {
                kind,
                arg,
                int_value,
                float_value,
            }
        })
        .collect()
}

/// A live handle's type, shape and strides.
pub(super) fn geometry_of(h: *const bc_tensor) -> (i32, Vec<usize>, Vec<i64>) {
    let (mut dt, mut nd) = (0i32, 0usize);
    let mut shape = [0i64; BC_MAX_NDIM];
    let mut strides = [0i64; BC_MAX_NDIM];
    // SAFETY: a live handle; buffers of BC_MAX_NDIM entries.
    unsafe {
        let sts = [
            bc_tensor_dtype(h, &mut dt),
            bc_tensor_ndim(h, &mut nd),
            bc_tensor_shape(h, shape.as_mut_ptr(), BC_MAX_NDIM),
            bc_tensor_strides(h, strides.as_mut_ptr(), BC_MAX_NDIM),
        ];
        assert!(sts.iter().all(|&s| s == BC_OK), "queries of a live tensor");
    }
    (
        dt,
        shape[..nd].iter().map(|&s| s as usize).collect(),
        strides[..nd].to_vec(),
    )
}

impl Runner<'_> {
    /// Draws a well-formed program (or, rarely, one with a code that names nothing) over up to
    /// three live tensors with at most 64 elements each.
    pub(super) fn draw_program(&mut self, ninputs: usize) -> Vec<Step> {
        let len = 1 + self.inp.below(6);
        let mut steps = Vec::new();
        let mut depth = 0usize;
        for _ in 0..len {
            // Push while fewer than two values wait; otherwise reduce or push. The top bytes
            // draw a ternary step, after inputs up to the three values it takes (the other
            // bytes decode as they did before ternary steps, so the recorded inputs keep their
            // programs).
            let byte = self.inp.u8();
            let choice = byte as usize % 10;
            let step = match choice {
                _ if byte >= 232 => {
                    while depth < 3 {
                        steps.push(Step::Input(self.inp.below(ninputs)));
                        depth += 1;
                    }
                    let code = self.ternary_code();
                    match self.inp.flag() {
                        true => Step::Ternary(code, 0, self.inp.value()),
                        false => Step::Ternary(code, self.inp.int(), 0.0),
                    }
                }
                0..=2 if depth < 6 => Step::Input(self.inp.below(ninputs)),
                3 if depth < 6 => {
                    let dt = self.inp.below(10) as i32;
                    let v = self.inp.value();
                    let int = self.inp.int();
                    let n = match is_float(dt) {
                        true => Num::from_f64(dt, v),
                        false => Num::from_i64(dt, int),
                    };
                    Step::Const(dt, n)
                }
                4..=6 if depth >= 2 => Step::Op(self.any_op_code()),
                7 if depth >= 3 => Step::Where,
                _ if depth >= 1 => Step::Unary(self.unary_code()),
                _ => Step::Input(self.inp.below(ninputs)),
            };
            depth = match step {
                Step::Input(_) | Step::Const(..) => depth + 1,
                Step::Op(_) => depth - 1,
                Step::Where => depth - 2,
                Step::Unary(_) => depth,
                Step::Ternary(..) => depth - 2,
            };
            steps.push(step);
        }
        // Finish with binary operations down to one value.
        while depth > 1 {
            steps.push(Step::Op(self.any_op_code()));
            depth -= 1;
        }
        steps
    }

    /// A code drawn from `BC_TERNARY_COUNT`, or (rarely) one that names no operation.
    fn ternary_code(&mut self) -> i32 {
        let b = self.inp.u8();
        match b {
            0..=249 => b as i32 % BC_TERNARY_COUNT,
            _ => [BC_TERNARY_COUNT, -1][b as usize % 2],
        }
    }

    /// The steps as separate calls: the first failure's status, or the result handle.
    fn evaluate_separately(
        inputs: &[*mut bc_tensor],
        steps: &[Step],
        owned: &mut Owned,
    ) -> Result<*mut bc_tensor, i32> {
        let mut stack = Self::evaluate_stack(inputs, steps, owned).map_err(|(_, st)| st)?;
        Ok(stack.pop().expect("a well-formed program leaves one value"))
    }

    /// The steps as separate calls: the values left (bottom first), or the failing step's index
    /// and status.
    pub(super) fn evaluate_stack(
        inputs: &[*mut bc_tensor],
        steps: &[Step],
        owned: &mut Owned,
    ) -> Result<Vec<*mut bc_tensor>, (usize, i32)> {
        let mut stack: Vec<*mut bc_tensor> = Vec::new();
        for (k, &step) in steps.iter().enumerate() {
            let mut out: *mut bc_tensor = ptr::null_mut();
            // SAFETY: every handle is live (inputs, or results held in `owned`); out is valid.
            let st = unsafe {
                match step {
                    Step::Input(i) => {
                        stack.push(inputs[i]);
                        continue;
                    }
                    Step::Const(dt, n) => {
                        let bytes = n.encode();
                        bc_tensor_from_data(
                            dt,
                            ptr::null(),
                            0,
                            bytes.as_ptr().cast(),
                            bytes.len(),
                            &mut out,
                        )
                    }
                    Step::Op(op) => {
                        let b = stack.pop().unwrap();
                        let a = stack.pop().unwrap();
                        bc_binary(op, a, b, &mut out)
                    }
                    Step::Where => {
                        let b = stack.pop().unwrap();
                        let a = stack.pop().unwrap();
                        let c = stack.pop().unwrap();
                        bc_where(c, a, b, &mut out)
                    }
                    Step::Unary(op) => {
                        let x = stack.pop().unwrap();
                        bc_unary(op, x, &mut out)
                    }
                    Step::Ternary(code, int_value, float_value) => {
                        let c = stack.pop().unwrap();
                        let b = stack.pop().unwrap();
                        let x = stack.pop().unwrap();
                        // The step's `value` as BC_EXPR_TERNARY states it.
                        let value = match float_value.to_bits() {
                            0 => bc_scalar_int(int_value),
                            _ => bc_scalar_float(float_value),
                        };
                        match code {
                            BC_TERNARY_LERP => bc_lerp(x, b, c, &mut out),
                            BC_TERNARY_ADDCMUL => bc_addcmul(x, b, c, value, &mut out),
                            BC_TERNARY_ADDCDIV => bc_addcdiv(x, b, c, value, &mut out),
                            BC_TERNARY_CLAMP => bc_clamp(x, b, c, &mut out),
                            _ => unreachable!("a well-formed program's code"),
                        }
                    }
                }
            };
            if st != BC_OK {
                return Err((k, st));
            }
            owned.0.push(out);
            stack.push(out);
        }
        Ok(stack)
    }

    /// `bc_expr_reduce` against `bc_reduce` of `value`, what `bc_expr_eval` gave for the same
    /// program and inputs (the two calls it stands for): the same status and message, else the
    /// same type, shape and bytes (NaN payloads included); and `bc_plan_expr_reduce` for the
    /// inputs' geometries gives the call's status. The reduction, dims and keepdim come from
    /// `salt`, a value already drawn, so that programs decode as before. Warnings the fused call
    /// gives (the expression's, when it evaluates call by call) are expected of the world.
    fn check_expr_reduce(
        &mut self,
        c_steps: &[bc_expr_step],
        ins: &[*const bc_tensor],
        value: *mut bc_tensor,
        salt: usize,
    ) -> Result<(), String> {
        let (_, shape, _) = geometry_of(value);
        let nd = shape.len() as i64;
        let op = (salt % BC_REDUCE_COUNT as usize) as i32;
        let keepdim = salt / 5 % 2 == 1;
        let dims: Vec<i64> = match salt / 10 % 4 {
            0 => vec![],
            1 => vec![-1],
            2 => vec![0, nd - 1],
            _ => vec![nd],
        };
        let mut want: *mut bc_tensor = ptr::null_mut();
        // SAFETY: a live handle; dims valid for its length; want valid for one write.
        let st_want =
            unsafe { bc_reduce(op, value, dims.as_ptr(), dims.len(), keepdim, &mut want) };
        let msg_want = last_message();
        let (w0, o0) = (broadcast_warnings(), other_warnings());
        let mut got: *mut bc_tensor = 0x55 as *mut bc_tensor;
        // SAFETY: steps, inputs and dims valid for their lengths; got valid for one write.
        let st = unsafe {
            bc_expr_reduce(
                c_steps.as_ptr(),
                c_steps.len(),
                ins.as_ptr(),
                ins.len(),
                op,
                dims.as_ptr(),
                dims.len(),
                keepdim,
                &mut got,
            )
        };
        let msg = last_message();
        let (w1, o1) = (broadcast_warnings(), other_warnings());
        for k in 0..3 {
            self.expected_warnings[k] += w1[k] - w0[k];
        }
        self.expected_warnings[WARN_OTHER] += o1 - o0;
        let _owned = Owned(
            [want, got]
                .into_iter()
                .filter(|h| !h.is_null() && *h != 0x55 as *mut bc_tensor)
                .collect(),
        );
        self.check_status("expr_reduce", st, st_want)?;
        let what =
            || format!("expr_reduce({c_steps:?}, op {op}, dims {dims:?}, keepdim {keepdim})");
        if st != BC_OK {
            if !got.is_null() {
                return Err(format!("{}: failed but *out is set", what()));
            }
            if msg != msg_want {
                return Err(format!("{}: {msg:?}, the two calls {msg_want:?}", what()));
            }
        } else {
            let (gw, gg) = (geometry_of(want), geometry_of(got));
            if (gw.0, &gw.1) != (gg.0, &gg.1) {
                return Err(format!("{}: {gg:?}, the two calls {gw:?}", what()));
            }
            let n = numel_of(&gw.1) as usize;
            let bytes = |h: *mut bc_tensor| {
                let mut buf = vec![0u8; n * itemsize(gw.0) + 1];
                // SAFETY: buf holds the tensor's bytes.
                let s =
                    unsafe { bc_tensor_copy_to(h, buf.as_mut_ptr().cast(), n * itemsize(gw.0)) };
                (s, buf)
            };
            if bytes(got) != bytes(want) {
                return Err(format!("{}: other bytes than the two calls'", what()));
            }
        }
        // The planner, for the inputs' geometries.
        let geos: Vec<(i32, Vec<i64>, Vec<i64>)> = ins
            .iter()
            .map(|&h| {
                let (dt, shape, strides) = geometry_of(h);
                (dt, shape.iter().map(|&s| s as i64).collect(), strides)
            })
            .collect();
        let raw: Vec<bc_geometry> = geos
            .iter()
            .map(|(dt, shape, strides)| bc_geometry {
                dtype: *dt,
                ndim: shape.len(),
                shape: shape.as_ptr(),
                strides: strides.as_ptr(),
            })
            .collect();
        let mut plan = std::mem::MaybeUninit::<bc_plan>::uninit();
        // SAFETY: every array valid for its length; plan for one write.
        let sp = unsafe {
            bc_plan_expr_reduce(
                c_steps.as_ptr(),
                c_steps.len(),
                raw.as_ptr(),
                raw.len(),
                op,
                dims.as_ptr(),
                dims.len(),
                keepdim,
                plan.as_mut_ptr(),
            )
        };
        // What needs memory is the call's alone (a zero integer divisor: not here, the expression
        // was evaluated).
        self.check_status("plan_expr_reduce", sp, st)?;
        if sp == BC_OK {
            // SAFETY: written on success.
            let p = unsafe { plan.assume_init() };
            let (dt, shape, _) = geometry_of(got);
            if p.dtype != dt || p.shape[..p.ndim].iter().map(|&s| s as usize).ne(shape) {
                return Err(format!(
                    "{}: the plan's type or shape is not the call's",
                    what()
                ));
            }
        }
        Ok(())
    }

    /// `bc_expr_eval` against its separate calls.
    pub(super) fn op_expr(&mut self) -> Result<Result<(), Skip>, String> {
        let ninputs = 1 + self.inp.below(3);
        let args: Vec<Arg> = (0..ninputs).map(|_| self.arg()).collect();
        let dst = self.inp.below(NSLOTS);
        let steps = self.draw_program(ninputs);
        let mut inputs = Vec::new();
        for &a in &args {
            match (a, self.resolve(a)) {
                (Arg::Live(_), Ok(t)) if t.numel() <= 64 => inputs.push(self.raw(a)),
                _ => return Ok(Err(Skip)),
            }
        }
        let descr: Vec<String> = args.iter().map(|&a| self.describe(a)).collect();
        self.note(format!("expr_eval({steps:?}, {descr:?}) -> #{dst}"));
        let well_formed = well_formed(&steps);
        let c_steps = c_steps(&steps);
        // The separate calls, their warnings counted apart.
        let mut owned = Owned(Vec::new());
        let (w0, o0) = (broadcast_warnings(), other_warnings());
        let separate = match well_formed {
            // Refused with the program, before any step runs.
            false => Err(BC_ERR_INVALID_ARG),
            true => Self::evaluate_separately(&inputs, &steps, &mut owned),
        };
        let w1 = broadcast_warnings();
        let ins: Vec<*const bc_tensor> = inputs.iter().map(|&h| h as *const _).collect();
        let mut out: *mut bc_tensor = 0x55 as *mut bc_tensor;
        // SAFETY: steps and inputs valid for their lengths; out valid.
        let st = unsafe {
            bc_expr_eval(
                c_steps.as_ptr(),
                c_steps.len(),
                ins.as_ptr(),
                ins.len(),
                &mut out,
            )
        };
        let (w2, o2) = (broadcast_warnings(), other_warnings());
        for k in 0..3 {
            self.expected_warnings[k] += w2[k] - w0[k];
        }
        // The once-per-process where warning goes to whichever call came first.
        self.expected_warnings[WARN_OTHER] += o2 - o0;
        if o2 > o0 {
            super::where_::note_warned();
        }
        let fused: Vec<usize> = (0..3).map(|k| w2[k] - w1[k]).collect();
        let apart: Vec<usize> = (0..3).map(|k| w1[k] - w0[k]).collect();
        if separate.is_ok() && st == BC_OK && fused != apart {
            return Err(format!(
                "expr_eval: warnings {fused:?}, the separate calls gave {apart:?}"
            ));
        }
        let reference = match separate {
            Err(s) => return self.finish_new("expr_eval", st, out, Err(s), dst).map(Ok),
            Ok(h) => h,
        };
        self.check_status("expr_eval", st, BC_OK)?;
        if out.is_null() {
            return Err("expr_eval: BC_OK but *out is NULL".into());
        }
        self.check_expr_reduce(&c_steps, &ins, out, dst)?;
        // The separate result's type, shape, strides and elements become the model's.
        let (dt, shape, strides) = geometry_of(reference);
        let n = numel_of(&shape);
        if n > MAX_CHECK_ELEMS {
            // Too big to compare: freed, and the step counted as skipped.
            bc_tensor_free(out);
            return Ok(Err(Skip));
        }
        let values = library_values(reference, dt, n as usize)?
            .into_iter()
            .map(Some)
            .collect();
        let t = self.new_tensor_strided(dt, &shape, strides, Some(values));
        self.install(dst, out, t).map(Ok)
    }
}
