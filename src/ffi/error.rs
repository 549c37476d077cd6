//! Reading failures: a static text per status, and the per-thread record of the last failure.
use super::boundary::{call_or, with_last_error};
use super::handle::BC_MAX_NDIM;
use super::status::status_text;
use crate::engine::Error;
use std::ffi::c_char;

/// A static, NUL-terminated description of `status` ("unknown status" for a code that is not one
/// of `BC_OK` / `BC_ERR_*`). Never NULL; never to be freed.
#[no_mangle]
pub extern "C" fn bc_status_str(status: i32) -> *const c_char {
    status_text(status).as_ptr()
}

/// Copies the message of the last failed call on this thread into `buf`, NUL-terminated and
/// truncated to `len - 1` bytes when longer. The message stays until the next failure on the same
/// thread (a successful call does not clear it); it is `""` before any failure. Messages are
/// kept up to 4096 bytes (the library's longest, two 64-dimension shapes, is under 3 KiB).
///
/// Go callers: cgo may move a goroutine between OS threads between two calls, so read the
/// message in the same cgo call as the failing function (a C helper in the preamble).
///
/// # Returns
/// The full length of the message in bytes, without the NUL, whatever `len` is: call with
/// `(NULL, 0)` to size a buffer. Nothing is written when `buf` is NULL or `len` is 0.
///
/// # Safety
/// `buf`, when not NULL, must be valid for writes of `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn bc_last_error_message(buf: *mut c_char, len: usize) -> usize {
    call_or(0, || {
        with_last_error(0, |last| {
            let msg = last.message();
            if !buf.is_null() && len > 0 {
                let n = msg.len().min(len - 1);
                // SAFETY: buf is valid for len bytes (caller's contract) and n < len.
                unsafe {
                    std::ptr::copy_nonoverlapping(msg.as_ptr(), buf.cast::<u8>(), n);
                    *buf.add(n) = 0;
                }
            }
            msg.len()
        })
    })
}

/// The status of the last failed call on this thread, or `BC_OK` when there was none (or it was
/// cleared).
#[must_use]
#[no_mangle]
pub extern "C" fn bc_last_error_status() -> i32 {
    call_or(super::status::BC_ERR_INTERNAL, || {
        with_last_error(super::status::BC_ERR_INTERNAL, |last| last.status)
    })
}

/// Forgets the last failure on this thread: the message becomes `""`, the status `BC_OK`.
#[no_mangle]
pub extern "C" fn bc_last_error_clear() {
    call_or((), || with_last_error((), |last| last.clear()))
}

/// What exactly went wrong, for callers that react to a failure rather than print it.
/// Each code names one engine error; the fields of `bc_error_info` that apply are listed with it.
pub const BC_ERROR_KIND_NONE: i32 = 0;
/// Two shapes do not broadcast: `dim` (of the result, from the left), `size_a`, `size_b`; shapes a and b.
pub const BC_ERROR_KIND_NOT_BROADCASTABLE: i32 = 1;
/// Several shapes do not broadcast: `arg` (index of the shape), `dim` (negative, from the right),
/// `size_a` (its size), shape a = that shape, shape b = the common shape so far.
pub const BC_ERROR_KIND_NARY_NOT_BROADCASTABLE: i32 = 2;
/// In place, `other` does not expand to `self`: `dim`, `size_a` (self's size), `size_b` (other's);
/// shapes a = self, b = other.
pub const BC_ERROR_KIND_INPLACE_MISMATCH: i32 = 3;
/// The written-to tensor's shape is not the broadcast shape: shape a = output, b = broadcast shape.
pub const BC_ERROR_KIND_OUTPUT_SHAPE: i32 = 4;
/// expand: `dim`, `size_a` (target size), `size_b` (existing size); shape a = tensor, b = target sizes.
pub const BC_ERROR_KIND_EXPAND_MISMATCH: i32 = 5;
/// expand: -1 in a new leading dimension `dim`; shape a = tensor, b = target sizes.
pub const BC_ERROR_KIND_EXPAND_LEADING: i32 = 6;
/// expand: fewer sizes (`size_a`) than dimensions (`size_b`).
pub const BC_ERROR_KIND_EXPAND_TOO_FEW_SIZES: i32 = 7;
/// expand: negative target size `size_a` at `dim`.
pub const BC_ERROR_KIND_EXPAND_NEGATIVE: i32 = 8;
/// The result type (`dtype_a`) cannot be cast to the written-to type (`dtype_b`).
pub const BC_ERROR_KIND_CAST_REFUSED: i32 = 9;
/// Subtraction with bool operands.
pub const BC_ERROR_KIND_BOOL_SUBTRACTION: i32 = 10;
/// Two elements of the written-to tensor share a memory location (no fields).
pub const BC_ERROR_KIND_INTERNAL_OVERLAP: i32 = 11;
/// The written-to tensor partly overlaps an input (no fields).
pub const BC_ERROR_KIND_PARTIAL_OVERLAP: i32 = 12;
/// An element or byte count does not fit (the message names the quantity; no fields, but for
/// `bc_tensor_format`'s limit `size_a`, the elements its formatter would read).
pub const BC_ERROR_KIND_OVERFLOW: i32 = 13;
/// Allocation failed: `size_a` = bytes requested, or -1 when the handle limit was reached.
pub const BC_ERROR_KIND_ALLOC: i32 = 14;
/// An argument outside its domain (no fields; the message says which and why).
pub const BC_ERROR_KIND_INVALID_ARGUMENT: i32 = 15;
/// `size_a` = needed, `size_b` = given.
pub const BC_ERROR_KIND_BUFFER_TOO_SMALL: i32 = 16;
/// A required pointer was NULL (no fields; the message names the argument).
pub const BC_ERROR_KIND_NULL_ARG: i32 = 17;
/// A handle that is not live (no fields; the message names the argument).
pub const BC_ERROR_KIND_INVALID_HANDLE: i32 = 18;
/// A panic was caught at the boundary (no fields).
pub const BC_ERROR_KIND_INTERNAL: i32 = 19;
/// The operation has no kernel for the computation type `dtype_a` (PyTorch's `"..." not
/// implemented for '...'`).
pub const BC_ERROR_KIND_NOT_IMPLEMENTED: i32 = 30;
/// An integer division, remainder or fmod by zero (`BC_ERR_VALUE`).
pub const BC_ERROR_KIND_ZERO_DIVISION: i32 = 31;
/// `bc_where`: the condition's type `dtype_a` is neither bool nor uint8.
pub const BC_ERROR_KIND_WHERE_CONDITION: i32 = 32;
/// The written-to tensor's type (`dtype_b`) is not the result type (`dtype_a`) where it must be.
pub const BC_ERROR_KIND_OUT_DTYPE: i32 = 33;
/// A dimension out of range: `dim` (as given), `size_a` = the tensor's number of dimensions.
pub const BC_ERROR_KIND_DIM_OUT_OF_RANGE: i32 = 50;
/// A reduction names a dimension twice: `dim` (counted from 0).
pub const BC_ERROR_KIND_DIM_REPEATED: i32 = 51;
/// amax/amin with nothing to reduce: `dim` = the empty dimension (counted from 0), or -1 when no
/// dimension was given and the input has no elements.
pub const BC_ERROR_KIND_EMPTY_REDUCTION: i32 = 52;
/// A reduction not defined for the input type (mean of integers): `dtype_a` = the input's.
pub const BC_ERROR_KIND_REDUCE_DTYPE: i32 = 53;
/// sum_to_size: shape a = the requested size (may hold negative sizes), b = the tensor's shape.
pub const BC_ERROR_KIND_NOT_EXPANDABLE: i32 = 54;
/// A write to a read-only tensor (`BC_ERR_READ_ONLY`).
pub const BC_ERROR_KIND_READ_ONLY: i32 = 60;
/// view/reshape: the sizes do not hold the tensor's elements: `size_a` = its number of elements;
/// shape b = the sizes asked for (with any -1).
pub const BC_ERROR_KIND_VIEW_SIZE: i32 = 61;
/// view/reshape of an empty tensor where -1 could be any size; shape b = the sizes asked for.
pub const BC_ERROR_KIND_VIEW_AMBIGUOUS: i32 = 62;
/// view: the strides do not allow the new shape without a copy; shape a = the tensor's shape,
/// shape b = the shape asked for (-1 inferred).
pub const BC_ERROR_KIND_VIEW_STRIDES: i32 = 63;
/// A tensor that must not be written given to the legacy DLPack export (`BC_ERR_READ_ONLY`).
pub const BC_ERROR_KIND_READ_ONLY_LEGACY_EXPORT: i32 = 64;
/// An integer or bool tensor to a negative integer power given as a number.
pub const BC_ERROR_KIND_NEGATIVE_POWER: i32 = 70;
/// A number `pow` reads in the computation type (`dtype_a`) does not fit it.
pub const BC_ERROR_KIND_NUMBER_OVERFLOW: i32 = 71;

/// The last failure on this thread as data. Fields that do not apply to `kind` are -1.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct bc_error_info {
    /// The status the failed call returned (`BC_OK` when there was no failure).
    pub status: i32,
    /// A `BC_ERROR_KIND_*` code.
    pub kind: i32,
    /// The dimension where the conflict is.
    pub dim: i64,
    /// The first conflicting size (see the kind).
    pub size_a: i64,
    /// The second conflicting size (see the kind).
    pub size_b: i64,
    /// For n-shape broadcasting: the index of the mismatching shape.
    pub arg: i64,
    /// For type errors: `BC_DTYPE_*` codes (see the kind: for a cast, the result type and the
    /// written-to tensor's).
    pub dtype_a: i32,
    pub dtype_b: i32,
    /// Number of dimensions of shape a and b (read them with `bc_last_error_shape`), or -1.
    pub ndim_a: i64,
    pub ndim_b: i64,
}

/// A shape of an error, as sizes or as signed target sizes.
#[derive(Clone, Copy)]
enum Shape<'a> {
    Sizes(&'a [usize]),
    Targets(&'a [i64]),
}

/// A failure as data: the fields of `bc_error_info`, and its shapes a and b copied into `shapes`
/// (no allocation: this runs when a failure is recorded, possibly with memory exhausted).
pub(crate) fn describe(
    status: i32,
    error: Option<&Error>,
    shapes: &mut [[i64; BC_MAX_NDIM]; 2],
) -> bc_error_info {
    use crate::engine::Error as E;
    let mut info = bc_error_info {
        status,
        kind: BC_ERROR_KIND_NONE,
        dim: -1,
        size_a: -1,
        size_b: -1,
        arg: -1,
        dtype_a: -1,
        dtype_b: -1,
        ndim_a: -1,
        ndim_b: -1,
    };
    // A shape of sizes, as the arms below give them (read as int64 when copied out).
    let to_i64 = Shape::Sizes;
    let (mut a, mut b) = (None, None);
    match error {
        None => {
            info.kind = match status {
                super::status::BC_OK => BC_ERROR_KIND_NONE,
                super::status::BC_ERR_NULL_ARG => BC_ERROR_KIND_NULL_ARG,
                super::status::BC_ERR_INVALID_HANDLE => BC_ERROR_KIND_INVALID_HANDLE,
                // The handle limit: no byte count (`size_a` stays -1).
                super::status::BC_ERR_ALLOC => BC_ERROR_KIND_ALLOC,
                super::status::BC_ERR_INVALID_ARG => BC_ERROR_KIND_INVALID_ARGUMENT,
                _ => BC_ERROR_KIND_INTERNAL,
            }
        }
        Some(e) => match e {
            E::NotBroadcastable {
                a: sa,
                b: sb,
                dim,
                size_a,
                size_b,
            } => {
                info.kind = BC_ERROR_KIND_NOT_BROADCASTABLE;
                (info.dim, info.size_a, info.size_b) =
                    (*dim as i64, *size_a as i64, *size_b as i64);
                (a, b) = (Some(to_i64(sa)), Some(to_i64(sb)));
            }
            E::NaryNotBroadcastable {
                arg,
                index,
                size,
                shape,
                expected,
            } => {
                info.kind = BC_ERROR_KIND_NARY_NOT_BROADCASTABLE;
                (info.arg, info.dim, info.size_a) = (*arg as i64, *index as i64, *size);
                (a, b) = (Some(Shape::Targets(shape)), Some(to_i64(expected)));
            }
            E::InplaceMismatch {
                self_shape,
                other_shape,
                dim,
                self_size,
                other_size,
            } => {
                info.kind = BC_ERROR_KIND_INPLACE_MISMATCH;
                (info.dim, info.size_a, info.size_b) =
                    (*dim as i64, *self_size as i64, *other_size as i64);
                (a, b) = (Some(to_i64(self_shape)), Some(to_i64(other_shape)));
            }
            E::OutputShape { output, broadcast } => {
                info.kind = BC_ERROR_KIND_OUTPUT_SHAPE;
                (a, b) = (Some(to_i64(output)), Some(to_i64(broadcast)));
            }
            E::ExpandMismatch {
                sizes,
                shape,
                dim,
                target,
                size,
            } => {
                info.kind = BC_ERROR_KIND_EXPAND_MISMATCH;
                (info.dim, info.size_a, info.size_b) = (*dim as i64, *target, *size as i64);
                (a, b) = (Some(to_i64(shape)), Some(Shape::Targets(sizes)));
            }
            E::ExpandLeadingMinusOne { sizes, shape, dim } => {
                info.kind = BC_ERROR_KIND_EXPAND_LEADING;
                info.dim = *dim as i64;
                (a, b) = (Some(to_i64(shape)), Some(Shape::Targets(sizes)));
            }
            E::ExpandTooFewSizes { given, ndim } => {
                info.kind = BC_ERROR_KIND_EXPAND_TOO_FEW_SIZES;
                (info.size_a, info.size_b) = (*given as i64, *ndim as i64);
            }
            E::ExpandNegative { dim, target } => {
                info.kind = BC_ERROR_KIND_EXPAND_NEGATIVE;
                (info.dim, info.size_a) = (*dim as i64, *target);
            }
            E::CastRefused { from, to } => {
                info.kind = BC_ERROR_KIND_CAST_REFUSED;
                (info.dtype_a, info.dtype_b) = (from.code(), to.code());
            }
            E::BoolSubtraction { .. } => info.kind = BC_ERROR_KIND_BOOL_SUBTRACTION,
            E::NotImplemented { dtype, .. } => {
                info.kind = BC_ERROR_KIND_NOT_IMPLEMENTED;
                info.dtype_a = dtype.code();
            }
            E::ZeroDivision => info.kind = BC_ERROR_KIND_ZERO_DIVISION,
            E::NegativeIntegerPower => info.kind = BC_ERROR_KIND_NEGATIVE_POWER,
            E::NumberOverflow { dtype } => {
                info.kind = BC_ERROR_KIND_NUMBER_OVERFLOW;
                info.dtype_a = dtype.code();
            }
            E::WhereCondition { dtype } => {
                info.kind = BC_ERROR_KIND_WHERE_CONDITION;
                info.dtype_a = dtype.code();
            }
            E::OutDtype { expected, got } => {
                info.kind = BC_ERROR_KIND_OUT_DTYPE;
                (info.dtype_a, info.dtype_b) = (expected.code(), got.code());
            }
            E::InternalOverlap => info.kind = BC_ERROR_KIND_INTERNAL_OVERLAP,
            E::PartialOverlap => info.kind = BC_ERROR_KIND_PARTIAL_OVERLAP,
            E::Overflow { .. } => info.kind = BC_ERROR_KIND_OVERFLOW,
            E::FormatTooLarge { reads } => {
                info.kind = BC_ERROR_KIND_OVERFLOW;
                info.size_a = *reads as i64;
            }
            E::Alloc { bytes } => {
                info.kind = BC_ERROR_KIND_ALLOC;
                info.size_a = *bytes as i64;
            }
            E::InvalidArgument(_) => info.kind = BC_ERROR_KIND_INVALID_ARGUMENT,
            E::ReadOnly => info.kind = BC_ERROR_KIND_READ_ONLY,
            E::ReadOnlyLegacyExport => info.kind = BC_ERROR_KIND_READ_ONLY_LEGACY_EXPORT,
            E::ViewSize { sizes, numel } => {
                info.kind = BC_ERROR_KIND_VIEW_SIZE;
                info.size_a = *numel as i64;
                b = Some(Shape::Targets(sizes));
            }
            E::ViewAmbiguous { sizes } => {
                info.kind = BC_ERROR_KIND_VIEW_AMBIGUOUS;
                b = Some(Shape::Targets(sizes));
            }
            E::ViewStrides { shape, sizes } => {
                info.kind = BC_ERROR_KIND_VIEW_STRIDES;
                (a, b) = (Some(to_i64(shape)), Some(to_i64(sizes)));
            }
            E::DimOutOfRange { dim, ndim } => {
                info.kind = BC_ERROR_KIND_DIM_OUT_OF_RANGE;
                (info.dim, info.size_a) = (*dim, *ndim as i64);
            }
            E::DimRepeated { dim } => {
                info.kind = BC_ERROR_KIND_DIM_REPEATED;
                info.dim = *dim as i64;
            }
            E::EmptyReduction { dim, .. } => {
                info.kind = BC_ERROR_KIND_EMPTY_REDUCTION;
                info.dim = dim.map_or(-1, |(_, d)| d as i64);
            }
            E::ReduceDtype { dtype, .. } => {
                info.kind = BC_ERROR_KIND_REDUCE_DTYPE;
                info.dtype_a = dtype.code();
            }
            E::NotExpandable { size, shape } => {
                info.kind = BC_ERROR_KIND_NOT_EXPANDABLE;
                (a, b) = (Some(Shape::Targets(size)), Some(to_i64(shape)));
            }
            E::BufferTooSmall { needed, given, .. } => {
                info.kind = BC_ERROR_KIND_BUFFER_TOO_SMALL;
                (info.size_a, info.size_b) = (*needed as i64, *given as i64);
            }
            // The engine's error type is non-exhaustive: a new variant reads as invalid argument
            // until it gets a kind of its own.
            #[allow(unreachable_patterns)]
            _ => info.kind = BC_ERROR_KIND_INVALID_ARGUMENT,
        },
    }
    for ((shape, ndim), out) in [(a, &mut info.ndim_a), (b, &mut info.ndim_b)]
        .into_iter()
        .zip(shapes.iter_mut())
    {
        *ndim = match shape {
            None => -1,
            Some(Shape::Sizes(s)) => copy_shape(s.iter().map(|&d| d as i64), out),
            Some(Shape::Targets(s)) => copy_shape(s.iter().copied(), out),
        };
    }
    info
}

/// Copies up to `BC_MAX_NDIM` sizes (every shape the library accepts has at most that many).
fn copy_shape(sizes: impl Iterator<Item = i64>, out: &mut [i64; BC_MAX_NDIM]) -> i64 {
    let mut n = 0;
    for (o, d) in out.iter_mut().zip(sizes) {
        *o = d;
        n += 1;
    }
    n
}

/// The record's failure as data, or "no failure" (kind NONE, -1 fields) when there is none.
fn recorded_info(last: &super::boundary::LastError) -> bc_error_info {
    if last.status == super::status::BC_OK {
        let mut none = [[0; BC_MAX_NDIM]; 2];
        return describe(super::status::BC_OK, None, &mut none);
    }
    last.info
}

/// Fills `*out` with the last failure on this thread as data (kind, dimension, sizes, ...).
/// Reading it does not change the record; like the message, it lasts until the next failure.
///
/// # Returns
/// `BC_OK`, or `BC_ERR_NULL_ARG` (this failure is not recorded, so the last error stays readable).
///
/// # Safety
/// `out` must be valid for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_last_error_info(out: *mut bc_error_info) -> i32 {
    call_or(super::status::BC_ERR_INTERNAL, || {
        if out.is_null() {
            return super::status::BC_ERR_NULL_ARG;
        }
        let info = with_last_error(None, |last| Some(recorded_info(last)));
        let Some(info) = info else {
            return super::status::BC_ERR_INTERNAL;
        };
        // SAFETY: non-NULL and valid by the caller's contract.
        unsafe { out.write(info) };
        super::status::BC_OK
    })
}

/// Copies shape `which` (0: shape a, 1: shape b, see `BC_ERROR_KIND_*`) of the last failure on
/// this thread into `buf` (`cap` entries) and its length into `*ndim` (-1 when the failure has no
/// such shape, and then nothing is copied).
///
/// # Returns
/// `BC_OK`; `BC_ERR_NULL_ARG` (`ndim` NULL, or `buf` NULL with `cap` > 0);
/// `BC_ERR_BUFFER_TOO_SMALL` (`*ndim` is still set); `BC_ERR_INVALID_ARG` (`which` not 0 or 1).
/// These failures are not recorded, so the last error stays readable.
///
/// # Safety
/// `buf` must be valid for `cap` writes, `ndim` for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_last_error_shape(
    which: i32,
    buf: *mut i64,
    cap: usize,
    ndim: *mut i64,
) -> i32 {
    use super::status::*;
    call_or(BC_ERR_INTERNAL, || {
        // Every pointer is checked before anything is written: `buf` NULL with room is refused
        // even when there is no shape to copy.
        if ndim.is_null() || (buf.is_null() && cap > 0) {
            return BC_ERR_NULL_ARG;
        }
        if !(0..=1).contains(&which) {
            return BC_ERR_INVALID_ARG;
        }
        let got = with_last_error(None, |last| {
            let info = recorded_info(last);
            let n = if which == 0 { info.ndim_a } else { info.ndim_b };
            Some((n, last.shapes[which as usize]))
        });
        let Some((n, sizes)) = got else {
            return BC_ERR_INTERNAL;
        };
        let shape = &sizes[..n.max(0) as usize];
        // SAFETY: non-NULL and valid by the caller's contract.
        unsafe { ndim.write(n) };
        if n < 0 {
            return BC_OK;
        }
        if cap < shape.len() {
            return BC_ERR_BUFFER_TOO_SMALL;
        }
        if shape.is_empty() {
            return BC_OK;
        }
        // SAFETY: buf is not NULL (cap >= shape.len() > 0) and valid for cap writes.
        unsafe { std::ptr::copy_nonoverlapping(shape.as_ptr(), buf, shape.len()) };
        BC_OK
    })
}

/// A diagnostic entry point that panics inside the library on purpose, to show that no panic
/// crosses the boundary: it returns `BC_ERR_INTERNAL` with the message
/// `internal error: bc_debug_panic: deliberate panic`, and the library stays usable.
#[must_use]
#[no_mangle]
pub extern "C" fn bc_debug_panic() -> i32 {
    super::boundary::call(|| -> Result<(), super::status::FfiError> {
        panic!("bc_debug_panic: deliberate panic");
    })
}
