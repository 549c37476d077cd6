//! The planner against the call: `bc_plan_binary` from the geometry of two live tensors, then
//! `bc_binary` on them, for every `BC_OP_*` code. The header's contract: when the planner
//! succeeds the call succeeds with the planned type, shape and strides (only what needs memory,
//! and an integer zero divisor, which only the call sees, may fail it), and when it fails the
//! call fails with the same status and message. The call's result is freed (the binary family
//! checks values).
use super::*;

impl Runner<'_> {
    pub(super) fn op_plan(&mut self) -> Result<Result<(), Skip>, String> {
        let op = self.any_op_code();
        let (a, b) = (self.arg(), self.arg());
        let (Ok(ta), Ok(tb)) = (self.resolve(a), self.resolve(b)) else {
            return Ok(Err(Skip));
        };
        self.note(format!(
            "plan_binary(op {op}, {}, {})",
            self.describe(a),
            self.describe(b)
        ));
        let shapes: Vec<Vec<i64>> = [&ta, &tb]
            .iter()
            .map(|t| t.shape.iter().map(|&s| s as i64).collect())
            .collect();
        let geometry = |t: &TM, shape: &Vec<i64>| bc_geometry {
            dtype: t.dtype,
            ndim: t.ndim(),
            shape: shape.as_ptr(),
            strides: t.strides.as_ptr(),
        };
        let (ga, gb) = (geometry(&ta, &shapes[0]), geometry(&tb, &shapes[1]));
        // SAFETY: a zeroed plan is a valid value of the plain C struct.
        let mut plan: bc_plan = unsafe { std::mem::zeroed() };
        // SAFETY: the geometries' arrays hold ndim entries; plan valid for one write.
        let planned = unsafe { bc_plan_binary(op, &ga, &gb, &mut plan) };
        let plan_message = last_message();
        let shape: Vec<usize> = plan.shape[..plan.ndim]
            .iter()
            .map(|&s| s as usize)
            .collect();
        if planned == BC_OK && numel_of(&shape) > MAX_CHECK_ELEMS {
            return Ok(Err(Skip));
        }
        let before: [usize; 4] = std::array::from_fn(|k| WARNINGS[k].load(Ordering::SeqCst));
        let mut out: *mut bc_tensor = ptr::null_mut();
        // SAFETY: live handles; out valid.
        let st = unsafe { bc_binary(op, self.raw(a), self.raw(b), &mut out) };
        let call_message = last_message();
        // The call's warnings are the binary family's to check; here they are only counted.
        for k in 0..4 {
            self.expected_warnings[k] += WARNINGS[k].load(Ordering::SeqCst) - before[k];
        }
        let zero_divisor = matches!(
            op,
            BC_OP_REMAINDER | BC_OP_FMOD | BC_OP_FLOOR_DIVIDE | BC_OP_DIV
        ) && st == BC_ERR_VALUE;
        let want = if planned == BC_OK && (st == BC_ERR_ALLOC || zero_divisor) {
            st
        } else {
            planned
        };
        let checked = self.check_status("plan_binary: the call", st, want);
        let result = checked.and_then(|()| {
            if planned != BC_OK && call_message != plan_message {
                return Err(format!(
                    "plan_binary: planner says {plan_message:?}, the call {call_message:?}"
                ));
            }
            if st != BC_OK {
                return Ok(());
            }
            let (mut dt, mut nd) = (0i32, 0usize);
            let mut strides = [0i64; BC_MAX_NDIM];
            let mut got_shape = [0i64; BC_MAX_NDIM];
            // SAFETY: a live result; buffers of BC_MAX_NDIM entries.
            unsafe {
                let _ = bc_tensor_dtype(out, &mut dt);
                let _ = bc_tensor_ndim(out, &mut nd);
                let _ = bc_tensor_shape(out, got_shape.as_mut_ptr(), BC_MAX_NDIM);
                let _ = bc_tensor_strides(out, strides.as_mut_ptr(), BC_MAX_NDIM);
            }
            if dt != plan.dtype
                || nd != plan.ndim
                || got_shape[..nd] != plan.shape[..nd]
                || strides[..nd] != plan.strides[..nd]
            {
                return Err(format!(
                    "plan_binary: planned dtype {} shape {:?} strides {:?}, the call gave {dt} {:?} {:?}",
                    plan.dtype,
                    &plan.shape[..plan.ndim],
                    &plan.strides[..plan.ndim],
                    &got_shape[..nd],
                    &strides[..nd]
                ));
            }
            Ok(())
        });
        if st == BC_OK {
            bc_tensor_free(out);
        }
        result.map(Ok)
    }
}
