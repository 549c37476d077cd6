//! The further reductions: `var`, `std`, `all`, `any`, `argmax`, `argmin`, `logsumexp`,
//! `nansum`, `nanmean` (PyTorch 2.15's, docs/semantics.md, section 14).
use super::boundary::call;
use super::handle::{self, bc_tensor, check_ndim, hand_out, out_handle, slice_in};
use super::settings::emit;
use super::status::FfiError;
use crate::engine::{ops, stats, Tensor};

/// The shared body of the reductions over a list of dimensions: checks `out` and `dims`, runs
/// `f` on `t` and the dimensions (`None` when `dims` is NULL), hands out the result and gives
/// the warnings to the warning handler.
///
/// # Safety
/// `dims` valid for `ndims` reads (or NULL), `out` for one write.
unsafe fn reduce_dims(
    t: *const bc_tensor,
    dims: *const i64,
    ndims: usize,
    out: *mut *mut bc_tensor,
    f: impl FnOnce(&Tensor, Option<&[i64]>) -> crate::engine::Result<(Tensor, ops::Warnings)>,
) -> i32 {
    call(|| {
        // SAFETY (this block): the caller's contract.
        let slot = unsafe { out_handle(out, "out")? };
        check_ndim(ndims, "dims")?;
        let given = !dims.is_null();
        let dims = unsafe { slice_in(dims, ndims, "dims")? };
        let (result, warnings) =
            handle::with([(t, "t")], ops::is_small, |[t]| f(t, given.then_some(dims)))??;
        hand_out(slot, result)?;
        emit(&warnings);
        Ok::<(), FfiError>(())
    })
}

fn quiet(r: crate::engine::Result<Tensor>) -> crate::engine::Result<(Tensor, ops::Warnings)> {
    r.map(|t| (t, ops::Warnings::new()))
}

/// `*out` = the variance of `t` over `dims[0..ndims]` (PyTorch's `t.var(dim, correction=,
/// keepdim=)`): the sum of squared deviations from the mean over `n - correction`, `n` the
/// elements each output reduces (`correction` 1 is Bessel's correction, 0 the population
/// variance). `(NULL, 0)` or an empty list reduces every dimension. Floating types only; the
/// result keeps the type. Computed in float64 in two passes (the mean, then the squared
/// deviations, each summed pairwise) and rounded once. Where `n - correction <= 0` the result is
/// inf, or NaN when no element deviates or nothing is reduced, and the warning handler gets
/// `var(): degrees of freedom is <= 0. Correction should be strictly less than the reduction
/// factor (input numel divided by output numel).` NaN or inf in a slice gives NaN. On success the
/// caller owns `*out`; on failure `*out` is NULL.
///
/// # Returns
/// `BC_OK`; `BC_ERR_DTYPE` (`std and var only support floating point and complex dtypes`);
/// `BC_ERR_INVALID_ARG` (a dimension out of range or repeated, as `bc_reduce`); `BC_ERR_NULL_ARG`;
/// `BC_ERR_INVALID_HANDLE`; `BC_ERR_ALLOC`.
///
/// # Safety
/// `dims` must be valid for `ndims` reads; `out` for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_var(
    t: *const bc_tensor,
    dims: *const i64,
    ndims: usize,
    correction: f64,
    keepdim: bool,
    out: *mut *mut bc_tensor,
) -> i32 {
    // SAFETY: forwarded.
    unsafe {
        reduce_dims(t, dims, ndims, out, |t, d| {
            stats::var_std(t, d.unwrap_or(&[]), correction, keepdim, false)
        })
    }
}

/// `*out` = the standard deviation: the square root of `bc_var`'s result (PyTorch's `t.std(dim,
/// correction=, keepdim=)`), with the same rules; its warning begins `std():`.
///
/// # Returns
/// As `bc_var`.
///
/// # Safety
/// As `bc_var`.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_std(
    t: *const bc_tensor,
    dims: *const i64,
    ndims: usize,
    correction: f64,
    keepdim: bool,
    out: *mut *mut bc_tensor,
) -> i32 {
    // SAFETY: forwarded.
    unsafe {
        reduce_dims(t, dims, ndims, out, |t, d| {
            stats::var_std(t, d.unwrap_or(&[]), correction, keepdim, true)
        })
    }
}

/// `*out` = whether every element is non-zero (PyTorch's `t.all(dim, keepdim)`; NaN is
/// non-zero): bool, or uint8 (0 or 1) for a uint8 `t`; an empty slice gives true. `dims` NULL
/// reduces every dimension (`t.all()`); a non-NULL list of `ndims` 0 reduces none, as PyTorch's
/// `dim=()` (each element tested, `t`'s shape kept).
///
/// # Returns
/// `BC_OK`; `BC_ERR_INVALID_ARG` (a dimension out of range or repeated); `BC_ERR_NULL_ARG`;
/// `BC_ERR_INVALID_HANDLE`; `BC_ERR_ALLOC`.
///
/// # Safety
/// `dims` must be NULL or valid for `ndims` reads; `out` valid for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_all(
    t: *const bc_tensor,
    dims: *const i64,
    ndims: usize,
    keepdim: bool,
    out: *mut *mut bc_tensor,
) -> i32 {
    // SAFETY: forwarded.
    unsafe {
        reduce_dims(t, dims, ndims, out, |t, d| {
            quiet(stats::all_any(t, d, keepdim, false))
        })
    }
}

/// `*out` = whether some element is non-zero (PyTorch's `t.any(dim, keepdim)`), as `bc_all`; an
/// empty slice gives false.
///
/// # Returns
/// As `bc_all`.
///
/// # Safety
/// As `bc_all`.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_any(
    t: *const bc_tensor,
    dims: *const i64,
    ndims: usize,
    keepdim: bool,
    out: *mut *mut bc_tensor,
) -> i32 {
    // SAFETY: forwarded.
    unsafe {
        reduce_dims(t, dims, ndims, out, |t, d| {
            quiet(stats::all_any(t, d, keepdim, true))
        })
    }
}

/// The shared body of `bc_argmax` and `bc_argmin`.
///
/// # Safety
/// `dim` NULL or valid for one read; `out` for one write.
unsafe fn arg_extreme(
    t: *const bc_tensor,
    dim: *const i64,
    keepdim: bool,
    out: *mut *mut bc_tensor,
    max: bool,
) -> i32 {
    call(|| {
        // SAFETY (this block): the caller's contract.
        let slot = unsafe { out_handle(out, "out")? };
        let dim = unsafe { dim.as_ref() }.copied();
        let result = handle::with([(t, "t")], ops::is_small, |[t]| {
            stats::arg_extreme(t, dim, keepdim, max)
        })??;
        hand_out(slot, result)
    })
}

/// `*out` = the int64 index of the largest element along `*dim` (PyTorch's `t.argmax(dim,
/// keepdim)`): the first one when several are equal (0.0 and -0.0 are equal), and the first NaN
/// when there is one. `dim` NULL: the index in the row-major flattened `t`, a 0-d result (with
/// `keepdim`, every dimension 1).
///
/// # Returns
/// `BC_OK`; `BC_ERR_DTYPE` (`argmax(): does not support bool input`); `BC_ERR_SHAPE` (nothing to
/// choose from: `argmax(): Expected reduction dim 1 to have non-zero size.`, or with `dim` NULL
/// and an empty `t` `argmax(): Expected reduction dim to be specified for input.numel() == 0.`);
/// `BC_ERR_INVALID_ARG` (`dim` out of range); `BC_ERR_NULL_ARG`; `BC_ERR_INVALID_HANDLE`;
/// `BC_ERR_ALLOC`.
///
/// # Safety
/// `dim` must be NULL or valid for one read; `out` valid for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_argmax(
    t: *const bc_tensor,
    dim: *const i64,
    keepdim: bool,
    out: *mut *mut bc_tensor,
) -> i32 {
    // SAFETY: forwarded.
    unsafe { arg_extreme(t, dim, keepdim, out, true) }
}

/// `*out` = the int64 index of the smallest element (PyTorch's `t.argmin(dim, keepdim)`), as
/// `bc_argmax`.
///
/// # Returns
/// As `bc_argmax` (the texts begin `argmin():`).
///
/// # Safety
/// As `bc_argmax`.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_argmin(
    t: *const bc_tensor,
    dim: *const i64,
    keepdim: bool,
    out: *mut *mut bc_tensor,
) -> i32 {
    // SAFETY: forwarded.
    unsafe { arg_extreme(t, dim, keepdim, out, false) }
}

/// `*out` = `log(sum(exp(t)))` over `dims[0..ndims]` without overflow (PyTorch's
/// `torch.logsumexp(t, dim, keepdim)`): `max + log(sum(exp(t - max)))`, computed in float64 and
/// rounded once; bool and integers give float32. An empty slice gives -inf, a NaN NaN, +inf
/// (without NaN) inf. `(NULL, 0)` or an empty list reduces every dimension (PyTorch needs one).
///
/// # Returns
/// `BC_OK`; `BC_ERR_INVALID_ARG` (a dimension out of range or repeated); `BC_ERR_NULL_ARG`;
/// `BC_ERR_INVALID_HANDLE`; `BC_ERR_ALLOC`.
///
/// # Safety
/// `dims` must be valid for `ndims` reads; `out` for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_logsumexp(
    t: *const bc_tensor,
    dims: *const i64,
    ndims: usize,
    keepdim: bool,
    out: *mut *mut bc_tensor,
) -> i32 {
    // SAFETY: forwarded.
    unsafe {
        reduce_dims(t, dims, ndims, out, |t, d| {
            quiet(stats::logsumexp(t, d.unwrap_or(&[]), keepdim))
        })
    }
}

/// `*out` = the sum with NaN counted as 0 (PyTorch's `t.nansum(dim, keepdim)`), as `bc_reduce`
/// with `BC_REDUCE_SUM` in every other respect (bool and integers give int64).
///
/// # Returns
/// As `bc_reduce`.
///
/// # Safety
/// `dims` must be valid for `ndims` reads; `out` for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_nansum(
    t: *const bc_tensor,
    dims: *const i64,
    ndims: usize,
    keepdim: bool,
    out: *mut *mut bc_tensor,
) -> i32 {
    // SAFETY: forwarded.
    unsafe {
        reduce_dims(t, dims, ndims, out, |t, d| {
            quiet(stats::nansum(t, d.unwrap_or(&[]), keepdim))
        })
    }
}

/// `*out` = the mean of the non-NaN elements (PyTorch's `t.nanmean(dim, keepdim)`): `nansum`
/// divided by their count; NaN where there are none. Floating types only.
///
/// # Returns
/// `BC_OK`; `BC_ERR_DTYPE` (`nanmean(): expected input to have floating point or complex dtype
/// but got Long`); as `bc_reduce` otherwise.
///
/// # Safety
/// `dims` must be valid for `ndims` reads; `out` for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_nanmean(
    t: *const bc_tensor,
    dims: *const i64,
    ndims: usize,
    keepdim: bool,
    out: *mut *mut bc_tensor,
) -> i32 {
    // SAFETY: forwarded.
    unsafe {
        reduce_dims(t, dims, ndims, out, |t, d| {
            quiet(stats::nanmean(t, d.unwrap_or(&[]), keepdim))
        })
    }
}
