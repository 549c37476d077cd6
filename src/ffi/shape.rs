//! Shapes without tensors.
use super::boundary::call;
use super::handle::{dims_in, dims_out, sizes_in_at, slice_in, write_out};
use super::status::FfiError;
use crate::engine::alloc::try_vec;
use crate::engine::shape::{broadcast_shapes, broadcast_shapes_n};
use crate::engine::ErrorKind;

/// Broadcasts shapes `a` and `b` (docs/semantics.md, sections 1-2) into `out`.
///
/// `*out_ndim` receives the result's number of dimensions (`max(a_ndim, b_ndim)`) as soon as both
/// shapes are read, whatever happens next (also when `out_cap` is too small, so a caller can size
/// the buffer, and when the shapes do not broadcast). `out` may be NULL when `out_cap` is 0.
///
/// # Returns
/// `BC_OK`; `BC_ERR_SHAPE` when the shapes do not broadcast (message: `The size of tensor a (A)
/// must match the size of tensor b (B) at non-singleton dimension D`); `BC_ERR_BUFFER_TOO_SMALL`;
/// `BC_ERR_NULL_ARG`; `BC_ERR_INVALID_ARG` for a negative size; `BC_ERR_ALLOC`.
///
/// # Safety
/// Each array must be valid for its length; `out_ndim` for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_shape_broadcast(
    a: *const i64,
    a_ndim: usize,
    b: *const i64,
    b_ndim: usize,
    out: *mut i64,
    out_cap: usize,
    out_ndim: *mut usize,
) -> i32 {
    call(|| {
        if out_ndim.is_null() {
            return Err(FfiError::NullArg("out_ndim"));
        }
        // SAFETY (this block): the caller's contract on each array.
        let (a, b) = unsafe { (dims_in(a, a_ndim, "a")?, dims_in(b, b_ndim, "b")?) };
        unsafe { write_out(out_ndim, a.len().max(b.len()), "out_ndim")? };
        let shape = broadcast_shapes(&a, &b)?;
        unsafe { dims_out(&shape, out, out_cap, "out") }
    })
}

/// Broadcasts `n` shapes at once (PyTorch's `broadcast_shapes`). `shapes[i]` has `ndims[i]` sizes
/// (it may be NULL when `ndims[i]` is 0). `*out_ndim` receives the result's number of dimensions
/// (the largest `ndims[i]`) as soon as every shape is read, whatever happens next.
///
/// # Returns
/// `BC_OK`; `BC_ERR_SHAPE` (message: `Attempting to broadcast a dimension of length L at -K!
/// Mismatching argument at index I had (..); but expected shape should be broadcastable to [..]`);
/// `BC_ERR_BUFFER_TOO_SMALL`; `BC_ERR_NULL_ARG`; `BC_ERR_INVALID_ARG` (more than `BC_MAX_NDIM`
/// sizes, or a negative size where the common shape so far has a 1: message `Attempting to
/// broadcast a dimension with negative length!`); `BC_ERR_ALLOC`. Shapes are checked in PyTorch's
/// order, one after another and each from its last size: a negative size meeting a common size
/// other than 1 is a `BC_ERR_SHAPE` mismatch naming it (L = -1 for `(2,)` with `(-1,)`).
///
/// # Safety
/// `shapes` and `ndims` must be valid for `n` reads, and each shape for its length.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_shape_broadcast_n(
    shapes: *const *const i64,
    ndims: *const usize,
    n: usize,
    out: *mut i64,
    out_cap: usize,
    out_ndim: *mut usize,
) -> i32 {
    call(|| {
        if out_ndim.is_null() {
            return Err(FfiError::NullArg("out_ndim"));
        }
        // SAFETY (this block): the caller's contract on each array.
        let (ptrs, lens) =
            unsafe { (slice_in(shapes, n, "shapes")?, slice_in(ndims, n, "ndims")?) };
        // Signed as given: a negative size is refused by the broadcast itself, in PyTorch's order
        // of checks, which decides between its two texts.
        let mut all: Vec<&[i64]> = try_vec(n)?;
        for (i, (&p, &len)) in ptrs.iter().zip(lens).enumerate() {
            all.push(unsafe { sizes_in_at(p, len, "shapes", i)? });
        }
        let ndim = all.iter().map(|s| s.len()).max().unwrap_or(0);
        unsafe { write_out(out_ndim, ndim, "out_ndim")? };
        let shape = broadcast_shapes_n(&all)?;
        unsafe { dims_out(&shape, out, out_cap, "out") }
    })
}

/// Whether shapes `a` and `b` broadcast together: `*out` is true or false, and the status is
/// `BC_OK` either way (not broadcastable is an answer here, not an error).
///
/// # Returns
/// `BC_OK`; `BC_ERR_NULL_ARG`; `BC_ERR_INVALID_ARG` for a negative size; `BC_ERR_ALLOC`.
///
/// # Safety
/// Each array must be valid for its length; `out` for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_shape_is_broadcastable(
    a: *const i64,
    a_ndim: usize,
    b: *const i64,
    b_ndim: usize,
    out: *mut bool,
) -> i32 {
    call(|| {
        if out.is_null() {
            return Err(FfiError::NullArg("out"));
        }
        // SAFETY (this block): the caller's contract on each array.
        let (a, b) = unsafe { (dims_in(a, a_ndim, "a")?, dims_in(b, b_ndim, "b")?) };
        let answer = match broadcast_shapes(&a, &b) {
            Ok(_) => true,
            // Out of memory says nothing about the shapes: that is a failure, not "no".
            Err(e) if e.kind() == ErrorKind::Alloc => return Err(e.into()),
            Err(_) => false,
        };
        unsafe { write_out(out, answer, "out") }
    })
}
