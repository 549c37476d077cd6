//! Status codes: fixed numbers, never renumbered. The one place where errors become statuses.
use crate::engine::{Error, ErrorKind};

/// Success.
pub const BC_OK: i32 = 0;
/// A required pointer argument was NULL.
pub const BC_ERR_NULL_ARG: i32 = 1;
/// An argument is outside its domain (unknown dtype or op code, negative size, bad dimension,
/// misaligned or out-of-bounds view, wrong data length, ...).
pub const BC_ERR_INVALID_ARG: i32 = 2;
/// Shapes that do not broadcast, an invalid expand, or an in-place operation that would change
/// the shape of `self`.
pub const BC_ERR_SHAPE: i32 = 3;
/// A result type that cannot be cast to the written-to tensor, or an operation that is not
/// defined for the element types (subtracting bools, bitwise operations on floats, a `where`
/// condition that is not bool, ...).
pub const BC_ERR_DTYPE: i32 = 4;
/// A written-to tensor that overlaps itself or partly overlaps an input.
pub const BC_ERR_OVERLAP: i32 = 5;
/// A product of sizes, or of elements and element size, that overflows.
pub const BC_ERR_OVERFLOW: i32 = 6;
/// Memory could not be allocated.
pub const BC_ERR_ALLOC: i32 = 7;
/// A caller's buffer is smaller than what the call must write.
pub const BC_ERR_BUFFER_TOO_SMALL: i32 = 8;
/// An internal error (a panic) was caught at the boundary; the library remains usable.
pub const BC_ERR_INTERNAL: i32 = 9;
/// A tensor handle that is not live: already freed, or never returned by this library.
pub const BC_ERR_INVALID_HANDLE: i32 = 10;
/// Types and shapes are fine but the values are refused: an integer division, remainder or
/// fmod by zero (PyTorch's `ZeroDivisionError`).
pub const BC_ERR_VALUE: i32 = 11;
/// A write (in place, or as `out`) to a tensor whose memory was shared read-only (imported
/// through DLPack with the read-only flag), or a read-only tensor passed where only a writable
/// one can go.
pub const BC_ERR_READ_ONLY: i32 = 12;

/// A failure at the boundary: an engine error, or one only the C side can have.
#[derive(Debug)]
pub(crate) enum FfiError {
    Engine(Error),
    NullArg(&'static str),
    InvalidHandle(&'static str),
    /// Every handle the registry can hold is live (`BC_ERR_ALLOC`: a resource is exhausted).
    HandleLimit,
    /// An invalid argument with a fixed text (`BC_ERR_INVALID_ARG`; nothing to allocate).
    Refused(&'static str),
}

impl From<Error> for FfiError {
    fn from(e: Error) -> Self {
        FfiError::Engine(e)
    }
}

impl FfiError {
    /// An invalid-argument failure with the text of `msg` (see `Error::invalid`).
    pub(crate) fn invalid(msg: impl std::fmt::Display) -> FfiError {
        FfiError::Engine(Error::invalid(msg))
    }

    pub(crate) fn status(&self) -> i32 {
        match self {
            FfiError::NullArg(_) => BC_ERR_NULL_ARG,
            FfiError::InvalidHandle(_) => BC_ERR_INVALID_HANDLE,
            FfiError::HandleLimit => BC_ERR_ALLOC,
            FfiError::Refused(_) => BC_ERR_INVALID_ARG,
            FfiError::Engine(e) => match e.kind() {
                ErrorKind::Shape => BC_ERR_SHAPE,
                ErrorKind::Dtype => BC_ERR_DTYPE,
                ErrorKind::Overlap => BC_ERR_OVERLAP,
                ErrorKind::Overflow => BC_ERR_OVERFLOW,
                ErrorKind::Alloc => BC_ERR_ALLOC,
                ErrorKind::InvalidArgument => BC_ERR_INVALID_ARG,
                ErrorKind::BufferTooSmall => BC_ERR_BUFFER_TOO_SMALL,
                ErrorKind::Value => BC_ERR_VALUE,
                ErrorKind::ReadOnly => BC_ERR_READ_ONLY,
            },
        }
    }

    /// The engine error behind this failure, if it is one.
    pub(crate) fn engine(&self) -> Option<&Error> {
        match self {
            FfiError::Engine(e) => Some(e),
            _ => None,
        }
    }
}

/// The message recorded for the failure (written without allocating).
impl std::fmt::Display for FfiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FfiError::NullArg(name) => write!(f, "argument `{name}` is NULL"),
            FfiError::InvalidHandle(name) => write!(
                f,
                "argument `{name}` is not a live tensor handle (already freed, or not from libbroadcast)"
            ),
            FfiError::HandleLimit => write!(
                f,
                "too many live tensor handles: all {} are in use; free some before making more",
                super::handle::MAX_HANDLES
            ),
            FfiError::Refused(text) => f.write_str(text),
            FfiError::Engine(e) => write!(f, "{e}"),
        }
    }
}

/// A static, NUL-terminated name for `status`, such as `"BC_ERR_SHAPE: shape error"`.
pub(crate) fn status_text(status: i32) -> &'static std::ffi::CStr {
    match status {
        BC_OK => c"BC_OK: success",
        BC_ERR_NULL_ARG => c"BC_ERR_NULL_ARG: a required pointer argument was NULL",
        BC_ERR_INVALID_ARG => c"BC_ERR_INVALID_ARG: invalid argument",
        BC_ERR_SHAPE => c"BC_ERR_SHAPE: shapes are not compatible",
        BC_ERR_DTYPE => c"BC_ERR_DTYPE: element type not allowed here",
        BC_ERR_OVERLAP => c"BC_ERR_OVERLAP: overlapping write refused",
        BC_ERR_OVERFLOW => c"BC_ERR_OVERFLOW: size arithmetic overflows",
        BC_ERR_ALLOC => c"BC_ERR_ALLOC: out of memory",
        BC_ERR_BUFFER_TOO_SMALL => c"BC_ERR_BUFFER_TOO_SMALL: caller buffer too small",
        BC_ERR_INTERNAL => c"BC_ERR_INTERNAL: internal error caught at the boundary",
        BC_ERR_INVALID_HANDLE => c"BC_ERR_INVALID_HANDLE: not a live tensor handle",
        BC_ERR_VALUE => c"BC_ERR_VALUE: values refused",
        BC_ERR_READ_ONLY => c"BC_ERR_READ_ONLY: the tensor is read-only",
        _ => c"unknown status",
    }
}
