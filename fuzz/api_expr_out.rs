//! `bc_expr_eval_out`: a random program (as `api_expr.rs` draws them) written into a live `out`,
//! often one of the inputs, against the header's statement: the same as evaluating the program
//! (the steps as separate calls, the reference of `api_expr.rs`) and writing the last operation's
//! result as `bc_binary_out` (or `bc_where_out`, `bc_unary_out`) would. So:
//!
//! * a NULL `out` is refused first (as `bc_expr_eval`'s out-pointer), then a malformed program,
//!   then a dead `out` (after the inputs);
//! * a step before the last that fails gives its status;
//! * else the call is refused exactly when one of these holds, with one of their statuses (the
//!   header does not order them): the last operation fails on its own; `out` has elements
//!   sharing memory, or partly overlaps one of the last operation's operands that is an input
//!   (the others are new tensors) (`BC_ERR_OVERLAP`); `out` does not have the result's shape
//!   (`BC_ERR_SHAPE`); the result's type cannot be cast to `out`'s (for `where`, is not `out`'s;
//!   for a unary operation, as `bc_unary_out` holds it: the predicates want bool, some
//!   operations exactly their type) (`BC_ERR_DTYPE`);
//! * on success `out` holds the separate result cast to its type (so an input that `out`
//!   overlaps other than as the last operation's operand must still be read before it is
//!   written), and the call's broadcast warnings are the separate calls'; on failure `out` is
//!   unchanged (the world check).
use super::expr::{
    broadcast_warnings, c_steps, geometry_of, other_warnings, well_formed, Owned, Step,
};
use super::unary::{library_values, unary_rule, OutRule};
use super::*;

/// What the model expects of the call.
enum Want {
    Status(i32),
    /// One of these refusals (at least one).
    OneOf(Vec<i32>),
    /// Success: the separate result (a live handle) to write into `out`.
    Ok(*mut bc_tensor),
}

impl Runner<'_> {
    pub(super) fn op_expr_out(&mut self) -> Result<Result<(), Skip>, String> {
        let ninputs = 1 + self.inp.below(3);
        let args: Vec<Arg> = (0..ninputs).map(|_| self.arg()).collect();
        let pick = self.inp.u8() as usize;
        let out_arg = if pick % 2 == 0 {
            args[pick / 2 % ninputs]
        } else {
            self.arg()
        };
        let steps = self.draw_program(ninputs);
        // A program ending in a ternary step (its `_out` form's own rules for `out`) is not
        // modelled here; tests/expr.rs checks it against the separate calls.
        if matches!(steps.last(), Some(Step::Ternary(..))) {
            return Ok(Err(Skip));
        }
        let mut inputs = Vec::new();
        let mut input_tms = Vec::new();
        for &a in &args {
            match (a, self.resolve(a)) {
                (Arg::Live(_), Ok(t)) if t.numel() <= 64 => {
                    inputs.push(self.raw(a));
                    input_tms.push(t);
                }
                _ => return Ok(Err(Skip)),
            }
        }
        let out_tm = self.resolve(out_arg);
        if matches!(&out_tm, Ok(t) if t.numel() > MAX_CHECK_ELEMS) {
            return Ok(Err(Skip));
        }
        let descr: Vec<String> = args.iter().map(|&a| self.describe(a)).collect();
        self.note(format!(
            "expr_eval_out({steps:?}, {descr:?}, out {})",
            self.describe(out_arg)
        ));
        let mut owned = Owned(Vec::new());
        let (w0, o0) = (broadcast_warnings(), other_warnings());
        let want = (|| {
            // A NULL `out` first (as `bc_expr_eval` checks its out-pointer first), a dead one
            // after the program and the inputs.
            if matches!(out_arg, Arg::Null) {
                return Want::Status(BC_ERR_NULL_ARG);
            }
            if !well_formed(&steps) {
                return Want::Status(BC_ERR_INVALID_ARG);
            }
            let out = match &out_tm {
                Ok(t) => t,
                Err(s) => return Want::Status(*s),
            };
            let n = steps.len();
            let mut stack = match Self::evaluate_stack(&inputs, &steps[..n - 1], &mut owned) {
                Ok(s) => s,
                Err((_, st)) => return Want::Status(st),
            };
            // The last operation, as a separate call, and its operands.
            let mut made: *mut bc_tensor = ptr::null_mut();
            // How `out`'s type is held: castable, exactly the result's, or bool.
            let (st, operands, out_rule) = match steps[n - 1] {
                Step::Op(op) => {
                    let b = stack.pop().unwrap();
                    let a = stack.pop().unwrap();
                    // SAFETY: live handles; made valid.
                    (
                        unsafe { bc_binary(op, a, b, &mut made) },
                        vec![a, b],
                        OutRule::Cast,
                    )
                }
                Step::Where => {
                    let b = stack.pop().unwrap();
                    let a = stack.pop().unwrap();
                    let c = stack.pop().unwrap();
                    // SAFETY: as above.
                    (
                        unsafe { bc_where(c, a, b, &mut made) },
                        vec![c, a, b],
                        OutRule::Exact,
                    )
                }
                Step::Unary(op) => {
                    let x = stack.pop().unwrap();
                    // SAFETY: as above.
                    (
                        unsafe { bc_unary(op, x, &mut made) },
                        vec![x],
                        unary_rule(op).out,
                    )
                }
                Step::Input(_) | Step::Const(..) | Step::Ternary(..) => {
                    unreachable!("a program ends with a binary, where or unary step here")
                }
            };
            if st == BC_OK {
                owned.0.push(made);
            }
            let mut refusals = Vec::new();
            if st != BC_OK {
                refusals.push(st);
            }
            let overlaps = self.internal_overlap(out)
                || operands.iter().any(|h| {
                    inputs
                        .iter()
                        .position(|i| i == h)
                        .is_some_and(|i| self.partial_overlap(out, &input_tms[i]))
                });
            if overlaps {
                refusals.push(BC_ERR_OVERLAP);
            }
            // The broadcast shape, known also when the operation fails on its own (it may be
            // refused for its types after `out`'s shape is checked).
            // (The result's own when there is one: the legacy fallback's shape is not the
            // broadcast.)
            let shape = match st {
                BC_OK => Some(geometry_of(made).1),
                _ => {
                    let shapes: Vec<Vec<usize>> =
                        operands.iter().map(|&h| geometry_of(h).1).collect();
                    let fallback = self.legacy
                        && matches!(steps[n - 1], Step::Op(_))
                        && numel_of(&shapes[0]) == numel_of(&shapes[1]);
                    shapes
                        .iter()
                        .try_fold(Vec::new(), |acc: Vec<usize>, s| broadcast(&acc, s))
                        // The legacy fallback's shape: the first operand's.
                        .or_else(|| fallback.then(|| shapes[0].clone()))
                }
            };
            if shape.is_some_and(|s| s != out.shape) {
                refusals.push(BC_ERR_SHAPE);
            }
            // The result's type: the result's, or, when the operation fails only on its values
            // (an integer zero divisor, after every check of types and shapes), the planner's.
            let rt = match st {
                BC_OK => Some(geometry_of(made).0),
                // `where`'s result type needs no broadcast: `bc_where_out` checks `out`'s type
                // before the shapes.
                _ if matches!(steps[n - 1], Step::Where) => {
                    let ((a, sa, _), (b, sb, _)) =
                        (geometry_of(operands[1]), geometry_of(operands[2]));
                    Some(result_type(a, sa.is_empty(), b, sb.is_empty()))
                }
                _ => {
                    let geoms: Vec<(i32, Vec<i64>, Vec<i64>)> = operands
                        .iter()
                        .map(|&h| {
                            let (dt, shape, strides) = geometry_of(h);
                            (dt, shape.iter().map(|&n| n as i64).collect(), strides)
                        })
                        .collect();
                    let g: Vec<bc_geometry> = geoms
                        .iter()
                        .map(|(dtype, shape, strides)| bc_geometry {
                            dtype: *dtype,
                            ndim: shape.len(),
                            shape: shape.as_ptr(),
                            strides: strides.as_ptr(),
                        })
                        .collect();
                    // SAFETY: a zeroed plan is a valid value of the plain C struct.
                    let mut plan: bc_plan = unsafe { std::mem::zeroed() };
                    // SAFETY: geometries whose arrays hold `ndim` entries; plan valid.
                    let planned = unsafe {
                        match steps[n - 1] {
                            Step::Op(op) => bc_plan_binary(op, &g[0], &g[1], &mut plan),
                            Step::Where => bc_plan_where(&g[0], &g[1], &g[2], &mut plan),
                            _ => BC_ERR_INVALID_ARG,
                        }
                    };
                    (planned == BC_OK).then_some(plan.dtype)
                }
            };
            if let Some(rt) = rt {
                let refused = match out_rule {
                    OutRule::Cast => !can_cast(rt, out.dtype),
                    OutRule::Exact => rt != out.dtype,
                    OutRule::Bool => out.dtype != BOOL,
                };
                if refused {
                    refusals.push(BC_ERR_DTYPE);
                }
            }
            match refusals.len() {
                0 => Want::Ok(made),
                1 => Want::Status(refusals[0]),
                _ => Want::OneOf(refusals),
            }
        })();
        let w1 = broadcast_warnings();
        let ins: Vec<*const bc_tensor> = inputs.iter().map(|&h| h as *const _).collect();
        let cs = c_steps(&steps);
        // SAFETY: steps and inputs valid for their lengths.
        let st = unsafe {
            bc_expr_eval_out(
                cs.as_ptr(),
                cs.len(),
                ins.as_ptr(),
                ins.len(),
                self.raw(out_arg),
            )
        };
        let (w2, o2) = (broadcast_warnings(), other_warnings());
        for k in 0..3 {
            self.expected_warnings[k] += w2[k] - w0[k];
        }
        self.expected_warnings[WARN_OTHER] += o2 - o0;
        if o2 > o0 {
            super::where_::note_warned();
        }
        match want {
            Want::Status(s) => self.check_status("expr_eval_out", st, s),
            Want::OneOf(list) => {
                let exp = if list.contains(&st) { st } else { list[0] };
                self.check_status("expr_eval_out", st, exp)
                    .map_err(|e| format!("{e} (any of {list:?})"))
            }
            Want::Ok(made) => {
                self.check_status("expr_eval_out", st, BC_OK)?;
                let fused: Vec<usize> = (0..3).map(|k| w2[k] - w1[k]).collect();
                let apart: Vec<usize> = (0..3).map(|k| w1[k] - w0[k]).collect();
                if fused != apart {
                    return Err(format!(
                        "expr_eval_out: warnings {fused:?}, the separate calls gave {apart:?}"
                    ));
                }
                let out = out_tm.expect("a live out");
                let (rt, shape, _) = geometry_of(made);
                let values = library_values(made, rt, numel_of(&shape) as usize)?;
                for (i, v) in values.into_iter().enumerate() {
                    self.write_at(&out, i, Some(v));
                }
                Ok(())
            }
        }
        .map(Ok)
    }
}
