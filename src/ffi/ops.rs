//! Elementwise arithmetic: out of place, in place, and into a caller's `out`.
use super::boundary::call;
use super::handle::{self, bc_tensor, hand_out, out_handle};
use super::settings::{emit, options};
use super::status::FfiError;
use crate::engine::{ops, BinaryOp};

/// Operation codes for `bc_binary*`.
pub const BC_OP_ADD: i32 = 0;
pub const BC_OP_SUB: i32 = 1;
pub const BC_OP_MUL: i32 = 2;
/// True division: integer and bool operands give float32.
pub const BC_OP_DIV: i32 = 3;

fn op_in(code: i32) -> Result<BinaryOp, FfiError> {
    usize::try_from(code)
        .ok()
        .and_then(|i| BinaryOp::ALL.get(i).copied())
        .ok_or_else(|| FfiError::invalid(format_args!("unknown op code {code}")))
}

/// `*out = a op b` in a new tensor of the broadcast shape and PyTorch's result type.
///
/// Shapes broadcast (docs/semantics.md, sections 1-2); the result type follows PyTorch 2.x's
/// `result_type` (0-d operands only raise the category; integer division gives float32; section
/// 6). Under the switches of `bc_set_broadcast_warning` / `bc_set_legacy_fallback` (section 5),
/// warnings go to the warning handler.
/// On success the caller owns `*out`; on failure `*out` is NULL.
///
/// # Returns
/// `BC_OK`; `BC_ERR_SHAPE` (`The size of tensor a (A) must match the size of tensor b (B) at
/// non-singleton dimension D`); `BC_ERR_DTYPE` (bool subtraction); `BC_ERR_INVALID_ARG` (unknown
/// op); `BC_ERR_NULL_ARG`; `BC_ERR_INVALID_HANDLE`; `BC_ERR_OVERFLOW`; `BC_ERR_ALLOC`.
///
/// # Safety
/// `out` must be valid for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_binary(
    op: i32,
    a: *const bc_tensor,
    b: *const bc_tensor,
    out: *mut *mut bc_tensor,
) -> i32 {
    call(|| {
        // SAFETY: the caller's contract.
        let slot = unsafe { out_handle(out, "out")? };
        let op = op_in(op)?;
        let opts = options();
        let (result, warnings) = handle::with([(a, "a"), (b, "b")], ops::is_small, |[a, b]| {
            ops::binary(op, a, b, opts)
        })??;
        hand_out(slot, result)?;
        emit(&warnings);
        Ok(())
    })
}

/// `target op= other` (PyTorch's `self op= other`), written into `target`'s elements. Allowed
/// exactly when `other` broadcasts to `target`'s shape (docs/semantics.md, section 4) and the
/// result type can be cast to `target`'s type (section 6). `target` may not have elements sharing
/// memory (e.g. an expanded view), nor partly overlap `other` (section 8); exactly the same view
/// (`x += x`) is fine. When the call fails, `target` is unchanged.
///
/// # Returns
/// `BC_OK`; `BC_ERR_SHAPE` (`The expanded size of the tensor (T) must match the existing size (S)
/// at non-singleton dimension D.`, or `output with shape [..] doesn't match the broadcast shape
/// [..]` when `other` has more dimensions); `BC_ERR_DTYPE` (`result type Float can't be cast to
/// the desired output type Int`); `BC_ERR_OVERLAP`; `BC_ERR_INVALID_ARG`; `BC_ERR_NULL_ARG`;
/// `BC_ERR_INVALID_HANDLE`; `BC_ERR_ALLOC`.
///
/// Must not run while another thread reads or writes `target`'s elements.
#[must_use]
#[no_mangle]
pub extern "C" fn bc_binary_inplace(
    op: i32,
    target: *mut bc_tensor,
    other: *const bc_tensor,
) -> i32 {
    call(|| {
        let op = op_in(op)?;
        let opts = options();
        let warnings = handle::with(
            [(target, "target"), (other, "other")],
            |[target, _]| ops::is_small([target]),
            |[s, o]| ops::binary_inplace(op, s, o, opts),
        )??;
        emit(&warnings);
        Ok(())
    })
}

/// `a op b` written into the caller's `out`, which must have exactly the broadcast shape and a
/// type the result type can be cast to (docs/semantics.md, sections 4 and 6). `out` may not have elements sharing memory, nor partly
/// overlap `a` or `b` (being exactly the same view as one of them is fine). When the call fails,
/// `out` is unchanged.
///
/// # Returns
/// As `bc_binary` and `bc_binary_inplace`.
#[must_use]
#[no_mangle]
pub extern "C" fn bc_binary_out(
    op: i32,
    a: *const bc_tensor,
    b: *const bc_tensor,
    out: *mut bc_tensor,
) -> i32 {
    call(|| {
        let op = op_in(op)?;
        let opts = options();
        let warnings = handle::with(
            [(a, "a"), (b, "b"), (out, "out")],
            |[_, _, out]| ops::is_small([out]),
            |[a, b, out]| ops::binary_out(op, a, b, out, opts),
        )??;
        emit(&warnings);
        Ok(())
    })
}

/// `*out = a + b` in a new tensor: `bc_binary` with `BC_OP_ADD`.
///
/// # Safety
/// `out` must be valid for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_add(
    a: *const bc_tensor,
    b: *const bc_tensor,
    out: *mut *mut bc_tensor,
) -> i32 {
    // SAFETY: forwarded.
    unsafe { bc_binary(BC_OP_ADD, a, b, out) }
}

/// `target += other`: `bc_binary_inplace` with `BC_OP_ADD`.
#[must_use]
#[no_mangle]
pub extern "C" fn bc_add_inplace(target: *mut bc_tensor, other: *const bc_tensor) -> i32 {
    bc_binary_inplace(BC_OP_ADD, target, other)
}

/// `out = a + b` into the caller's `out`: `bc_binary_out` with `BC_OP_ADD`.
#[must_use]
#[no_mangle]
pub extern "C" fn bc_add_out(a: *const bc_tensor, b: *const bc_tensor, out: *mut bc_tensor) -> i32 {
    bc_binary_out(BC_OP_ADD, a, b, out)
}

/// `*out = a - b` in a new tensor: `bc_binary` with `BC_OP_SUB`.
///
/// # Safety
/// `out` must be valid for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_sub(
    a: *const bc_tensor,
    b: *const bc_tensor,
    out: *mut *mut bc_tensor,
) -> i32 {
    // SAFETY: forwarded.
    unsafe { bc_binary(BC_OP_SUB, a, b, out) }
}

/// `target -= other`: `bc_binary_inplace` with `BC_OP_SUB`.
#[must_use]
#[no_mangle]
pub extern "C" fn bc_sub_inplace(target: *mut bc_tensor, other: *const bc_tensor) -> i32 {
    bc_binary_inplace(BC_OP_SUB, target, other)
}

/// `out = a - b` into the caller's `out`: `bc_binary_out` with `BC_OP_SUB`.
#[must_use]
#[no_mangle]
pub extern "C" fn bc_sub_out(a: *const bc_tensor, b: *const bc_tensor, out: *mut bc_tensor) -> i32 {
    bc_binary_out(BC_OP_SUB, a, b, out)
}

/// `*out = a * b` in a new tensor: `bc_binary` with `BC_OP_MUL`.
///
/// # Safety
/// `out` must be valid for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_mul(
    a: *const bc_tensor,
    b: *const bc_tensor,
    out: *mut *mut bc_tensor,
) -> i32 {
    // SAFETY: forwarded.
    unsafe { bc_binary(BC_OP_MUL, a, b, out) }
}

/// `target *= other`: `bc_binary_inplace` with `BC_OP_MUL`.
#[must_use]
#[no_mangle]
pub extern "C" fn bc_mul_inplace(target: *mut bc_tensor, other: *const bc_tensor) -> i32 {
    bc_binary_inplace(BC_OP_MUL, target, other)
}

/// `out = a * b` into the caller's `out`: `bc_binary_out` with `BC_OP_MUL`.
#[must_use]
#[no_mangle]
pub extern "C" fn bc_mul_out(a: *const bc_tensor, b: *const bc_tensor, out: *mut bc_tensor) -> i32 {
    bc_binary_out(BC_OP_MUL, a, b, out)
}

/// `*out = a / b` in a new tensor: `bc_binary` with `BC_OP_DIV`.
///
/// # Safety
/// `out` must be valid for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_div(
    a: *const bc_tensor,
    b: *const bc_tensor,
    out: *mut *mut bc_tensor,
) -> i32 {
    // SAFETY: forwarded.
    unsafe { bc_binary(BC_OP_DIV, a, b, out) }
}

/// `target /= other`: `bc_binary_inplace` with `BC_OP_DIV`.
#[must_use]
#[no_mangle]
pub extern "C" fn bc_div_inplace(target: *mut bc_tensor, other: *const bc_tensor) -> i32 {
    bc_binary_inplace(BC_OP_DIV, target, other)
}

/// `out = a / b` into the caller's `out`: `bc_binary_out` with `BC_OP_DIV`.
#[must_use]
#[no_mangle]
pub extern "C" fn bc_div_out(a: *const bc_tensor, b: *const bc_tensor, out: *mut bc_tensor) -> i32 {
    bc_binary_out(BC_OP_DIV, a, b, out)
}
