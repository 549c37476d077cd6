//! Reductions (sum, mean, prod, amax, amin), `sum_to_size`, and `sum_to_size` fused with an
//! elementwise operation.
use super::boundary::call;
use super::handle::{self, bc_tensor, check_ndim, hand_out, out_handle, slice_in};
use super::ops::op_in;
use super::status::FfiError;
use crate::engine::{ops, reduce, ReduceOp};

/// Reduction codes for `bc_reduce`.
pub const BC_REDUCE_SUM: i32 = 0;
/// The sum divided by the number of elements reduced; floating types only.
pub const BC_REDUCE_MEAN: i32 = 1;
pub const BC_REDUCE_PROD: i32 = 2;
/// The largest element (NaN if any element is NaN).
pub const BC_REDUCE_AMAX: i32 = 3;
/// The smallest element (NaN if any element is NaN).
pub const BC_REDUCE_AMIN: i32 = 4;
/// How many reduction codes there are (0 to `BC_REDUCE_COUNT - 1`).
pub const BC_REDUCE_COUNT: i32 = 5;
// Each code names its reduction in the engine's list.
const _: () = {
    assert!(ReduceOp::ALL.len() == BC_REDUCE_COUNT as usize);
    assert!(matches!(
        ReduceOp::ALL[BC_REDUCE_SUM as usize],
        ReduceOp::Sum
    ));
    assert!(matches!(
        ReduceOp::ALL[BC_REDUCE_MEAN as usize],
        ReduceOp::Mean
    ));
    assert!(matches!(
        ReduceOp::ALL[BC_REDUCE_PROD as usize],
        ReduceOp::Prod
    ));
    assert!(matches!(
        ReduceOp::ALL[BC_REDUCE_AMAX as usize],
        ReduceOp::Amax
    ));
    assert!(matches!(
        ReduceOp::ALL[BC_REDUCE_AMIN as usize],
        ReduceOp::Amin
    ));
};

pub(super) fn reduce_op_in(code: i32) -> Result<ReduceOp, FfiError> {
    usize::try_from(code)
        .ok()
        .and_then(|i| ReduceOp::ALL.get(i).copied())
        .ok_or_else(|| FfiError::invalid(format_args!("unknown reduction code {code}")))
}

/// `*out` = the reduction `op` (a `BC_REDUCE_*` code) of `t` over the dimensions `dims[0..ndims]`
/// (negative ones count from the end), as PyTorch's `sum`, `mean`, `prod`, `amax` and `amin`
/// (docs/semantics.md, section 14).
///
/// `(NULL, 0)` (or any empty list) reduces every dimension, like PyTorch's `dim=None` and
/// `dim=()`. With `keepdim` the reduced dimensions stay, with size 1; without, they are removed.
/// A 0-d tensor takes dimension 0 or -1.
///
/// Result types: sum and prod of bool and integers are int64, of floats the input's type; mean
/// is for floating types only and keeps the type; amax and amin keep the type. Sums and means of
/// float16, bfloat16 and float32 accumulate in float32, of float64 in float64, in a pairwise
/// order: the error of a sum of `n` elements is at most `gamma(h) * sum(|x|)` with `h` at most
/// `106 + ceil(log2(max(1, n / 16384)))`, against `n - 1` for summing left to right (see the
/// engine's `reduce` module). Products multiply in the input's type; integers wrap. Empty
/// reductions give 0 (sum), 1 (prod), NaN (mean); amax and amin refuse them. Results are the
/// same for any thread count. PyTorch's `prod` takes at most one dimension; here it takes a
/// list, like the others.
///
/// On success the caller owns `*out` (a new row-major tensor) and frees it with
/// `bc_tensor_free`; on failure `*out` is NULL.
///
/// # Returns
/// `BC_OK`; `BC_ERR_INVALID_ARG` (unknown code; `Dimension out of range (expected to be in range
/// of [-2, 1], but got 2)`; `dim 0 appears multiple times in the list of dims`; more than
/// `BC_MAX_NDIM` dims); `BC_ERR_DTYPE` (`mean(): could not infer output dtype. Input dtype must be
/// either a floating point or complex dtype. Got: Int`); `BC_ERR_SHAPE` (amax/amin of nothing:
/// `amax(): Expected reduction dim 1 to have non-zero size.`, or with no dims and an empty input
/// `amax(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction
/// dim with the 'dim' argument.`); `BC_ERR_NULL_ARG` (`t`, `out`, or `dims` NULL with `ndims` >
/// 0); `BC_ERR_INVALID_HANDLE`; `BC_ERR_ALLOC`.
///
/// # Safety
/// `dims` must be valid for `ndims` reads; `out` for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_reduce(
    op: i32,
    t: *const bc_tensor,
    dims: *const i64,
    ndims: usize,
    keepdim: bool,
    out: *mut *mut bc_tensor,
) -> i32 {
    call(|| {
        // SAFETY (this block): the caller's contract.
        let slot = unsafe { out_handle(out, "out")? };
        let op = reduce_op_in(op)?;
        check_ndim(ndims, "dims")?;
        let dims = unsafe { slice_in(dims, ndims, "dims")? };
        let result = handle::with([(t, "t")], ops::is_small, |[t]| {
            reduce::reduce(op, t, dims, keepdim)
        })??;
        hand_out(slot, result)
    })
}

/// `bc_reduce` with `BC_REDUCE_SUM`: PyTorch's `torch.sum(t, dims, keepdim)`.
///
/// # Safety
/// As `bc_reduce`.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_sum(
    t: *const bc_tensor,
    dims: *const i64,
    ndims: usize,
    keepdim: bool,
    out: *mut *mut bc_tensor,
) -> i32 {
    // SAFETY: forwarded.
    unsafe { bc_reduce(BC_REDUCE_SUM, t, dims, ndims, keepdim, out) }
}

/// `bc_reduce` with `BC_REDUCE_MEAN`: PyTorch's `torch.mean(t, dims, keepdim)`.
///
/// # Safety
/// As `bc_reduce`.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_mean(
    t: *const bc_tensor,
    dims: *const i64,
    ndims: usize,
    keepdim: bool,
    out: *mut *mut bc_tensor,
) -> i32 {
    // SAFETY: forwarded.
    unsafe { bc_reduce(BC_REDUCE_MEAN, t, dims, ndims, keepdim, out) }
}

/// `bc_reduce` with `BC_REDUCE_PROD`: PyTorch's `torch.prod(t, dim, keepdim)`, over any list of
/// dimensions.
///
/// # Safety
/// As `bc_reduce`.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_prod(
    t: *const bc_tensor,
    dims: *const i64,
    ndims: usize,
    keepdim: bool,
    out: *mut *mut bc_tensor,
) -> i32 {
    // SAFETY: forwarded.
    unsafe { bc_reduce(BC_REDUCE_PROD, t, dims, ndims, keepdim, out) }
}

/// `bc_reduce` with `BC_REDUCE_AMAX`: PyTorch's `torch.amax(t, dims, keepdim)`.
///
/// # Safety
/// As `bc_reduce`.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_amax(
    t: *const bc_tensor,
    dims: *const i64,
    ndims: usize,
    keepdim: bool,
    out: *mut *mut bc_tensor,
) -> i32 {
    // SAFETY: forwarded.
    unsafe { bc_reduce(BC_REDUCE_AMAX, t, dims, ndims, keepdim, out) }
}

/// `bc_reduce` with `BC_REDUCE_AMIN`: PyTorch's `torch.amin(t, dims, keepdim)`.
///
/// # Safety
/// As `bc_reduce`.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_amin(
    t: *const bc_tensor,
    dims: *const i64,
    ndims: usize,
    keepdim: bool,
    out: *mut *mut bc_tensor,
) -> i32 {
    // SAFETY: forwarded.
    unsafe { bc_reduce(BC_REDUCE_AMIN, t, dims, ndims, keepdim, out) }
}

/// `*out` = `t` summed back to `shape[0..ndim]` (PyTorch's `t.sum_to_size(shape)`): the step
/// that undoes a broadcast, as autograd does for the gradient of a broadcast operand
/// (docs/semantics.md, section 14).
///
/// Sums the leading dimensions `shape` lacks (even of size 1) and every dimension where `shape`
/// has 1 and `t` has more; `shape` must be one `t` could be broadcast from. The result has the
/// sum's type (bool and integers give int64), except when nothing is summed: then `*out` is a
/// view of `t` itself (sharing its elements, as PyTorch returns `t`) with `t`'s type. An empty
/// `shape` always sums (PyTorch's `sum_to` returns `t.sum()` for it), a 0-d `t` included.
/// On success the caller owns `*out` and frees it with `bc_tensor_free`; on failure `*out` is NULL.
///
/// # Returns
/// `BC_OK`; `BC_ERR_SHAPE` (`size {[1, 4]} is not expandable to size {[2, 3]}.`; a negative size
/// is such a shape too); `BC_ERR_NULL_ARG` (`t`, `out`, or `shape` NULL with `ndim` > 0);
/// `BC_ERR_INVALID_ARG` (more than `BC_MAX_NDIM` sizes); `BC_ERR_INVALID_HANDLE`;
/// `BC_ERR_ALLOC`.
///
/// # Safety
/// `shape` must be valid for `ndim` reads; `out` for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_tensor_sum_to_size(
    t: *const bc_tensor,
    shape: *const i64,
    ndim: usize,
    out: *mut *mut bc_tensor,
) -> i32 {
    call(|| {
        // SAFETY (this block): the caller's contract.
        let slot = unsafe { out_handle(out, "out")? };
        check_ndim(ndim, "shape")?;
        let shape = unsafe { slice_in(shape, ndim, "shape")? };
        let result = handle::with([(t, "t")], ops::is_small, |[t]| {
            reduce::sum_to_size(t, shape)
        })??;
        hand_out(slot, result)
    })
}

/// `*out` = `sum_to_size(a op b, shape)` for any `BC_OP_*` code, without making `a op b`: each
/// element of the broadcast result is computed and summed at once, so the inputs are read once
/// and only the result of `shape` is written. For `(4096,4096) * (4096,)` summed to `(4096,)`
/// that is 4096 elements written instead of 16.8 million written and read again.
///
/// The result equals `bc_binary` followed by `bc_tensor_sum_to_size` (same types: a bool result,
/// as of a comparison, sums to int64; same errors in the same order; the same values, bit for
/// bit, except that a NaN may be any NaN: its sign and payload depend on the order operands meet
/// in, which PyTorch does not fix either), except that when nothing is summed it is a new tensor
/// holding `a op b`
/// (docs/semantics.md, section 14). The compatibility switches
/// (`bc_set_legacy_fallback`, `bc_set_broadcast_warning`) do not apply: the operands must
/// broadcast.
/// On success the caller owns `*out` and frees it with `bc_tensor_free`; on failure `*out` is NULL.
///
/// # Returns
/// `BC_OK`; `BC_ERR_SHAPE` (`a` and `b` do not broadcast, or the broadcast shape cannot be summed
/// to `shape`: `size {[..]} is not expandable to size {[..]}.`); `BC_ERR_DTYPE` (bool
/// subtraction, a type the operation has no kernel for); `BC_ERR_VALUE` (an integer zero
/// divisor of `remainder`, `fmod` or `floor_divide`, checked before `shape`);
/// `BC_ERR_INVALID_ARG` (unknown op, more than `BC_MAX_NDIM` sizes); `BC_ERR_NULL_ARG`;
/// `BC_ERR_INVALID_HANDLE`; `BC_ERR_OVERFLOW`; `BC_ERR_ALLOC`.
///
/// # Safety
/// `shape` must be valid for `ndim` reads; `out` for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_binary_sum_to(
    op: i32,
    a: *const bc_tensor,
    b: *const bc_tensor,
    shape: *const i64,
    ndim: usize,
    out: *mut *mut bc_tensor,
) -> i32 {
    call(|| {
        // SAFETY (this block): the caller's contract.
        let slot = unsafe { out_handle(out, "out")? };
        let op = op_in(op)?;
        check_ndim(ndim, "shape")?;
        let shape = unsafe { slice_in(shape, ndim, "shape")? };
        let result = handle::with([(a, "a"), (b, "b")], ops::is_small, |[a, b]| {
            reduce::binary_sum_to(op, a, b, shape)
        })??;
        hand_out(slot, result)
    })
}
