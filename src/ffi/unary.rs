//! Elementwise unary operations: out of place, in place, and into a caller's `out`.
use super::boundary::call;
use super::handle::{self, bc_tensor, hand_out, out_handle};
use super::status::FfiError;
use crate::engine::{ops, unary, UnaryOp};

pub(super) fn op_in(code: i32) -> Result<UnaryOp, FfiError> {
    usize::try_from(code)
        .ok()
        .and_then(|i| UnaryOp::ALL.get(i).copied())
        .ok_or_else(|| FfiError::invalid(format_args!("unknown unary op code {code}")))
}

/// `*out = op(x)` in a new tensor of `x`'s shape, for `op` a `BC_UNARY_*` code, with PyTorch's
/// result type (`torch.<name>(x)`): the floating functions (`BC_UNARY_SQRT`, `BC_UNARY_EXP`,
/// ...) give float32 for integer and bool inputs (converted first; int64 rounds) and keep a
/// floating input's type; the predicates (`isnan`, `isinf`, `isfinite`, `signbit`,
/// `logical_not`) give bool; `BC_UNARY_SQUARE` of bool gives int64; the others keep the input's
/// type. float16 and bfloat16 compute in float32 and round once. The result is laid out as `x`
/// (dense, in the dimension order of its strides). On success the caller owns `*out` (free it
/// with `bc_tensor_free`); on failure `*out` is NULL.
///
/// Accuracy: `abs neg sign reciprocal square floor ceil round trunc frac` and the predicates are
/// exact (IEEE arithmetic in the computation type); `sqrt` is correctly rounded; the other
/// floating functions are evaluated in float64 (float32 and the 16-bit types rounded once from
/// it) and are within one unit in the last place of the exact value. For float32 and the 16-bit
/// types, `exp exp2 expm1 log log2 log10 log1p sin cos tan sinh cosh tanh` (and `sigmoid`'s
/// exponential) use float64 polynomials that vectorize instead of a library call per element
/// (`sin cos tan` up to 1e6 in magnitude, libm beyond), accurate to a few float64 ulps, so the
/// rounded result is the correctly rounded one but in rare cases (then 1 ulp away).
///
/// # Returns
/// `BC_OK`; `BC_ERR_DTYPE` (no kernel for the type: `"frac_cpu" not implemented for 'Int'`,
/// `"bitwise_not_cpu" not implemented for 'Float'`, `"abs_cpu" not implemented for 'Bool'`;
/// `BC_UNARY_NEG` of bool: `Negation, the `-` operator, on a bool tensor is not supported. ...`);
/// `BC_ERR_INVALID_ARG` (unknown op); `BC_ERR_NULL_ARG`; `BC_ERR_INVALID_HANDLE`;
/// `BC_ERR_ALLOC`.
///
/// # Safety
/// `out` must be valid for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_unary(op: i32, x: *const bc_tensor, out: *mut *mut bc_tensor) -> i32 {
    call(|| {
        // SAFETY: the caller's contract.
        let slot = unsafe { out_handle(out, "out")? };
        let op = op_in(op)?;
        let result = handle::with([(x, "x")], ops::is_small, |[x]| unary::unary(op, x))??;
        hand_out(slot, result)?;
        Ok(())
    })
}

/// `x = op(x)` (PyTorch's `x.<name>_()`): the result cast back to `x`'s type, which must be
/// allowed (`result type Float can't be cast to the desired output type Int` for `sqrt` of an
/// int32 tensor). The predicates `isnan`, `isinf`, `isfinite` and `signbit` have no in-place
/// form (`BC_ERR_INVALID_ARG`); `logical_not` writes 0 or 1 in `x`'s type. `x` may not have
/// elements sharing memory (an expanded view). When the call fails, `x` is unchanged.
///
/// # Returns
/// `BC_OK`; `BC_ERR_DTYPE` (the cast back, or as `bc_unary`); `BC_ERR_OVERLAP`;
/// `BC_ERR_READ_ONLY`; `BC_ERR_INVALID_ARG`; `BC_ERR_NULL_ARG`; `BC_ERR_INVALID_HANDLE`;
/// `BC_ERR_ALLOC`.
///
/// Must not run while another thread reads or writes `x`'s elements.
#[must_use]
#[no_mangle]
pub extern "C" fn bc_unary_inplace(op: i32, x: *mut bc_tensor) -> i32 {
    call(|| {
        let op = op_in(op)?;
        handle::with(
            [(x, "x")],
            |[x]| ops::is_small([x]),
            |[x]| unary::unary_inplace(op, x),
        )??;
        Ok(())
    })
}

/// `op(x)` written into the caller's `out`, which must have exactly `x`'s shape (`output with
/// shape [..] doesn't match the broadcast shape [..]`, `BC_ERR_SHAPE`; PyTorch would resize it)
/// and a type the operation accepts there: any type the result type can be cast to for the
/// floating functions, `square` and `logical_not`; exactly the result type for `abs neg sign
/// floor ceil round trunc frac bitwise_not` (`Found dtype Double but expected Float`); bool for
/// `isnan isinf isfinite signbit` (`signbit does not support non-boolean outputs.`). `out` may
/// not have elements sharing memory, nor partly overlap `x` (exactly the same view is fine).
/// When the call fails, `out` is unchanged.
///
/// # Returns
/// `BC_OK`; `BC_ERR_DTYPE`; `BC_ERR_SHAPE`; `BC_ERR_OVERLAP`; `BC_ERR_READ_ONLY`;
/// `BC_ERR_INVALID_ARG`; `BC_ERR_NULL_ARG`; `BC_ERR_INVALID_HANDLE`; `BC_ERR_ALLOC`.
#[must_use]
#[no_mangle]
pub extern "C" fn bc_unary_out(op: i32, x: *const bc_tensor, out: *mut bc_tensor) -> i32 {
    call(|| {
        let op = op_in(op)?;
        handle::with(
            [(x, "x"), (out, "out")],
            |[_, out]| ops::is_small([out]),
            |[x, out]| unary::unary_out(op, x, out),
        )??;
        Ok(())
    })
}
