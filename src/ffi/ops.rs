//! Elementwise operations: out of place, in place, and into a caller's `out`; and `where`.
use super::boundary::call;
use super::handle::{self, bc_tensor, hand_out, out_handle};
use super::settings::{emit, options};
use super::status::FfiError;
use crate::engine::{fast, ops, BinaryOp};

pub(crate) fn op_in(code: i32) -> Result<BinaryOp, FfiError> {
    usize::try_from(code)
        .ok()
        .and_then(|i| BinaryOp::ALL.get(i).copied())
        .ok_or_else(|| FfiError::invalid(format_args!("unknown op code {code}")))
}

/// `*out = a op b` in a new tensor of the broadcast shape and PyTorch's result type, for `op` a
/// `BC_OP_*` code.
///
/// Shapes broadcast (docs/semantics.md, sections 1-2). The operands promote as PyTorch 2.x's
/// `result_type` (0-d operands only raise the category; section 6) to the type the operation
/// computes in, except that `BC_OP_DIV` and `BC_OP_ATAN2` compute integers and bool in float32.
/// Comparisons and logical operations give bool; the others give the computation type. Under the
/// switches of `bc_set_broadcast_warning` / `bc_set_legacy_fallback` (section 5), warnings go to
/// the warning handler.
///
/// The result is laid out as PyTorch lays it out: dense, in the dimension order the operands'
/// strides share (a result of permuted operands is permuted the same way), else row-major. Read
/// its layout with `bc_tensor_strides`, or make a row-major copy with `bc_tensor_contiguous`;
/// `bc_tensor_copy_to` writes row-major order whatever the layout.
///
/// On success the caller owns `*out` (free it with `bc_tensor_free`); on failure `*out` is NULL.
///
/// # Returns
/// `BC_OK`; `BC_ERR_SHAPE` (`The size of tensor a (A) must match the size of tensor b (B) at
/// non-singleton dimension D`); `BC_ERR_DTYPE` (bool subtraction, or no kernel for the
/// computation type: `"bitwise_and_cpu" not implemented for 'Float'`); `BC_ERR_VALUE`
/// (`ZeroDivisionError`: integer `BC_OP_REMAINDER`, `BC_OP_FMOD` or `BC_OP_FLOOR_DIVIDE` with a
/// zero divisor element; nothing is written); `BC_ERR_INVALID_ARG` (unknown op);
/// `BC_ERR_NULL_ARG`; `BC_ERR_INVALID_HANDLE`; `BC_ERR_OVERFLOW`; `BC_ERR_ALLOC`.
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
        // Registered inside the read (a new result has no release hook to run there), so the
        // tensor is not copied out through the layers of results first; the fast path builds
        // it in its slot directly. Without a slot, the general path reports the call's errors
        // first, then the registry's.
        // `is_small` in a closure: as a function given by name it is called through a shim
        // that is not inlined.
        #[allow(clippy::redundant_closure)]
        let (handle, warnings) = handle::with(
            [(a, "a"), (b, "b")],
            |ab| ops::is_small(ab),
            |[a, b]| {
                if let Ok(reserved) = handle::reserve() {
                    // SAFETY: `binary_in` initialises its place exactly when it returns Some(Ok).
                    let built =
                        unsafe { reserved.build(|place| fast::binary_in(place, op, a, b, opts)) };
                    if let Some(handle) = built {
                        return Ok((handle?, ops::Warnings::new()));
                    }
                }
                let (result, warnings) = ops::binary(op, a, b, opts)?;
                Ok::<_, FfiError>((handle::register(result)?, warnings))
            },
        )??;
        slot.set(handle);
        emit(&warnings);
        Ok(())
    })
}

/// `target op= other` (PyTorch's `self.op_(other)`; for `BC_OP_MAXIMUM` / `BC_OP_MINIMUM`,
/// `torch.maximum(self, other, out=self)`), written into `target`'s elements. Allowed exactly
/// when `other` broadcasts to `target`'s shape (docs/semantics.md, section 4) and the result type
/// can be cast to `target`'s type (section 6; comparisons and logical operations write 0 or 1 in
/// `target`'s type). `target` may not have elements sharing memory (e.g. an expanded view), nor
/// partly overlap `other` (section 8); exactly the same view (`x += x`) is fine. When the call
/// fails, `target` is unchanged.
///
/// # Returns
/// `BC_OK`; `BC_ERR_SHAPE` (`The expanded size of the tensor (T) must match the existing size (S)
/// at non-singleton dimension D.`, or `output with shape [..] doesn't match the broadcast shape
/// [..]` when `other` has more dimensions); `BC_ERR_DTYPE` (`result type Float can't be cast to
/// the desired output type Int`, and as `bc_binary`); `BC_ERR_VALUE` (as `bc_binary`);
/// `BC_ERR_OVERLAP`; `BC_ERR_READ_ONLY` (`target`'s memory was shared read-only);
/// `BC_ERR_INVALID_ARG`; `BC_ERR_NULL_ARG`; `BC_ERR_INVALID_HANDLE`; `BC_ERR_ALLOC`.
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
            |[s, o]| fast::binary_inplace(op, s, o, opts),
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
            |[a, b, out]| fast::binary_out(op, a, b, out, opts),
        )??;
        emit(&warnings);
        Ok(())
    })
}

/// `*out = where(cond, a, b)` in a new tensor: `a`'s element where `cond` is true, else `b`'s
/// (PyTorch's `torch.where`; docs/semantics.md, section 11). The three broadcast together, in
/// that order (an error names the shape so far as "tensor a"); the result type promotes `a` and
/// `b` only. `cond` is bool, or uint8 (non-zero is true; accepted with PyTorch's deprecation
/// warning, given to the warning handler once per process). The compatibility switches do not
/// apply. The result is laid out as `bc_binary` lays out its result, from the three operands in
/// that order (a uint8 `cond` counts as the bool copy PyTorch makes of it). On success the
/// caller owns `*out` (free it with `bc_tensor_free`); on failure `*out` is NULL.
///
/// # Returns
/// `BC_OK`; `BC_ERR_DTYPE` (`where expected condition to be a boolean tensor, but got a tensor
/// with dtype Float`); `BC_ERR_SHAPE` (as `bc_binary`); `BC_ERR_NULL_ARG`;
/// `BC_ERR_INVALID_HANDLE`; `BC_ERR_OVERFLOW`; `BC_ERR_ALLOC`.
///
/// # Safety
/// `out` must be valid for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_where(
    cond: *const bc_tensor,
    a: *const bc_tensor,
    b: *const bc_tensor,
    out: *mut *mut bc_tensor,
) -> i32 {
    call(|| {
        // SAFETY: the caller's contract.
        let slot = unsafe { out_handle(out, "out")? };
        let (result, warnings) = handle::with(
            [(cond, "cond"), (a, "a"), (b, "b")],
            ops::is_small,
            |[cond, a, b]| ops::where_(cond, a, b),
        )??;
        hand_out(slot, result)?;
        emit(&warnings);
        Ok(())
    })
}

/// `where(cond, a, b)` written into the caller's `out`, which must have exactly the broadcast
/// shape and the result type (PyTorch requires the type exactly here). `out` may not have
/// elements sharing memory, nor partly overlap an input. When the call fails, `out` is unchanged.
///
/// # Returns
/// `BC_OK`; `BC_ERR_DTYPE` (`Expected out type to be Float but got Int`, or as `bc_where`);
/// `BC_ERR_OVERLAP`; `BC_ERR_READ_ONLY`; `BC_ERR_SHAPE` (as `bc_where`, or `output with shape
/// [..] doesn't match the broadcast shape [..]`); `BC_ERR_NULL_ARG`; `BC_ERR_INVALID_HANDLE`;
/// `BC_ERR_ALLOC`.
#[must_use]
#[no_mangle]
pub extern "C" fn bc_where_out(
    cond: *const bc_tensor,
    a: *const bc_tensor,
    b: *const bc_tensor,
    out: *mut bc_tensor,
) -> i32 {
    call(|| {
        let warnings = handle::with(
            [(cond, "cond"), (a, "a"), (b, "b"), (out, "out")],
            |[_, _, _, out]| ops::is_small([out]),
            |[cond, a, b, out]| ops::where_out(cond, a, b, out),
        )??;
        emit(&warnings);
        Ok(())
    })
}
