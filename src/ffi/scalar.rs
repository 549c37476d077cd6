//! Elementwise operations with a number for an operand: a tensor and a `bc_scalar` (bool, int64
//! or double), in either order and in place, with PyTorch's rule for Python numbers ("wrapped
//! numbers"): the number takes part in type promotion by its category only, and is then cast to
//! the computation type like any operand (an integer that does not fit wraps modulo 2^bits).
use super::boundary::call;
use super::handle::{self, bc_tensor, hand_out, out_handle};
use super::ops::op_in;
use super::ops_named::{BC_OP_ADD, BC_OP_DIV, BC_OP_MUL, BC_OP_SUB};
use super::settings::{emit, options};
use super::status::FfiError;
use crate::engine::tensor::Scalar;
use crate::engine::{fast, ops};

/// A number given to an operation in place of a tensor (a Python number, in PyTorch's terms):
/// `kind` says which of `b`, `i`, `f` holds it. Make one with `bc_scalar_bool`, `bc_scalar_int`
/// or `bc_scalar_float`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct bc_scalar {
    /// `BC_SCALAR_BOOL`, `BC_SCALAR_INT` or `BC_SCALAR_FLOAT`.
    pub kind: i32,
    pub b: bool,
    pub i: i64,
    pub f: f64,
}

/// `bc_scalar.kind`: a bool (`b`). It promotes as PyTorch's `True`/`False` do.
pub const BC_SCALAR_BOOL: i32 = 0;
/// `bc_scalar.kind`: an integer (`i`). It promotes as a Python int: an integer tensor keeps its
/// type, a bool tensor becomes int64.
pub const BC_SCALAR_INT: i32 = 1;
/// `bc_scalar.kind`: a floating number (`f`). It promotes as a Python float: an integer or bool
/// tensor becomes float32 (the default floating type), a floating tensor keeps its type.
pub const BC_SCALAR_FLOAT: i32 = 2;

/// A bool `bc_scalar`.
#[no_mangle]
pub extern "C" fn bc_scalar_bool(value: bool) -> bc_scalar {
    bc_scalar {
        kind: BC_SCALAR_BOOL,
        b: value,
        i: 0,
        f: 0.0,
    }
}

/// An integer `bc_scalar`.
#[no_mangle]
pub extern "C" fn bc_scalar_int(value: i64) -> bc_scalar {
    bc_scalar {
        kind: BC_SCALAR_INT,
        b: false,
        i: value,
        f: 0.0,
    }
}

/// A floating `bc_scalar`.
#[no_mangle]
pub extern "C" fn bc_scalar_float(value: f64) -> bc_scalar {
    bc_scalar {
        kind: BC_SCALAR_FLOAT,
        b: false,
        i: 0,
        f: value,
    }
}

/// The number, checked.
pub(crate) fn number(s: bc_scalar) -> Result<Scalar, FfiError> {
    Ok(match s.kind {
        BC_SCALAR_BOOL => Scalar::Bool(s.b),
        BC_SCALAR_INT => Scalar::Int(s.i),
        BC_SCALAR_FLOAT => Scalar::Float(s.f),
        t => return Err(FfiError::invalid(format_args!("unknown scalar kind {t}"))),
    })
}

/// `*out = t op s` in a new tensor, for `op` a `BC_OP_*` code and `s` a number (PyTorch's `t op
/// s` with a Python number). The number promotes by category only: `int32 + 2.5` is float32,
/// `uint8 + 300` is uint8 (300 wraps to 44, as in PyTorch). The result is laid out as
/// `bc_binary`'s. Every operation takes a number except those PyTorch gives no number form
/// (`BC_OP_MAXIMUM`, `BC_OP_MINIMUM`, `BC_OP_ATAN2`, `BC_OP_HYPOT`, the logical operations), and
/// `BC_OP_POW` follows PyTorch's `pow(Tensor, Scalar)` (docs/semantics.md, section 13). On
/// success the caller owns `*out` (free it with `bc_tensor_free`); on failure `*out` is NULL.
///
/// # Returns
/// As `bc_binary`; also `BC_ERR_INVALID_ARG` for an unknown `s.kind` and, with PyTorch's
/// TypeError text, for an operation that takes no number (`atan2(): argument 'other' (position
/// 2) must be Tensor, not int`); `BC_ERR_VALUE` for `BC_OP_POW` with an integer or bool tensor
/// and a negative integer (`Integers to negative integer powers are not allowed.`) or an exponent
/// that does not fit a float16, bfloat16 or integer computation type (`value cannot be converted
/// to type c10::Half without overflow`).
///
/// # Safety
/// `out` must be valid for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_binary_scalar(
    op: i32,
    t: *const bc_tensor,
    s: bc_scalar,
    out: *mut *mut bc_tensor,
) -> i32 {
    // SAFETY: forwarded.
    unsafe { new_result(op, t, s, false, out) }
}

/// `*out = s op t` in a new tensor: PyTorch's `s op t` with a Python number `s`, as
/// `bc_binary_scalar` otherwise. Python hands `s op t` to the tensor: `BC_OP_ADD`, `BC_OP_MUL`,
/// `BC_OP_EQ`, `BC_OP_NE` and the bitwise and/or/xor compute `t op s`, `BC_OP_LT` and the other
/// ordered comparisons the mirrored `t > s` and so on, the others `op(s, t)` (`torch.div(s, t)`;
/// for `BC_OP_POW`, `torch.pow(s, t)`, a row-major result).
///
/// # Returns
/// As `bc_binary_scalar` (`BC_OP_FMOD` also refuses a number first, with PyTorch's text).
///
/// # Safety
/// `out` must be valid for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_binary_rscalar(
    op: i32,
    s: bc_scalar,
    t: *const bc_tensor,
    out: *mut *mut bc_tensor,
) -> i32 {
    // SAFETY: forwarded.
    unsafe { new_result(op, t, s, true, out) }
}

/// # Safety
/// `out` must be valid for one write.
unsafe fn new_result(
    op: i32,
    t: *const bc_tensor,
    s: bc_scalar,
    reversed: bool,
    out: *mut *mut bc_tensor,
) -> i32 {
    call(|| {
        // SAFETY: the caller's contract.
        let slot = unsafe { out_handle(out, "out")? };
        let op = op_in(op)?;
        let s = number(s)?;
        let opts = options();
        let (result, warnings) = handle::with([(t, "t")], ops::is_small, |[t]| {
            fast::binary_number(op, t, s, reversed, opts)
        })??;
        hand_out(slot, result)?;
        emit(&warnings);
        Ok(())
    })
}

/// `target op= s` (PyTorch's `target.op_(s)` with a Python number), written into `target`'s
/// elements; the result type must cast to `target`'s type (`int32 += 2.5` is refused). When
/// the call fails, `target` is unchanged.
///
/// # Returns
/// As `bc_binary_inplace`; also `BC_ERR_INVALID_ARG` and `BC_ERR_VALUE` as `bc_binary_scalar`.
///
/// Must not run while another thread reads or writes `target`'s elements.
#[must_use]
#[no_mangle]
pub extern "C" fn bc_binary_scalar_inplace(op: i32, target: *mut bc_tensor, s: bc_scalar) -> i32 {
    call(|| {
        let op = op_in(op)?;
        let s = number(s)?;
        let opts = options();
        let warnings = handle::with([(target, "target")], ops::is_small, |[t]| {
            fast::binary_number_inplace(op, t, s, opts)
        })??;
        emit(&warnings);
        Ok(())
    })
}

/// `*out = t + s`: `bc_binary_scalar` with `BC_OP_ADD`.
///
/// # Safety
/// `out` must be valid for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_add_scalar(
    t: *const bc_tensor,
    s: bc_scalar,
    out: *mut *mut bc_tensor,
) -> i32 {
    // SAFETY: forwarded.
    unsafe { bc_binary_scalar(BC_OP_ADD, t, s, out) }
}

/// `*out = t - s`: `bc_binary_scalar` with `BC_OP_SUB`.
///
/// # Safety
/// `out` must be valid for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_sub_scalar(
    t: *const bc_tensor,
    s: bc_scalar,
    out: *mut *mut bc_tensor,
) -> i32 {
    // SAFETY: forwarded.
    unsafe { bc_binary_scalar(BC_OP_SUB, t, s, out) }
}

/// `*out = t * s`: `bc_binary_scalar` with `BC_OP_MUL`.
///
/// # Safety
/// `out` must be valid for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_mul_scalar(
    t: *const bc_tensor,
    s: bc_scalar,
    out: *mut *mut bc_tensor,
) -> i32 {
    // SAFETY: forwarded.
    unsafe { bc_binary_scalar(BC_OP_MUL, t, s, out) }
}

/// `*out = t / s`: `bc_binary_scalar` with `BC_OP_DIV`.
///
/// # Safety
/// `out` must be valid for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_div_scalar(
    t: *const bc_tensor,
    s: bc_scalar,
    out: *mut *mut bc_tensor,
) -> i32 {
    // SAFETY: forwarded.
    unsafe { bc_binary_scalar(BC_OP_DIV, t, s, out) }
}

/// `*out = s - t`: `bc_binary_rscalar` with `BC_OP_SUB`.
///
/// # Safety
/// `out` must be valid for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_rsub_scalar(
    s: bc_scalar,
    t: *const bc_tensor,
    out: *mut *mut bc_tensor,
) -> i32 {
    // SAFETY: forwarded.
    unsafe { bc_binary_rscalar(BC_OP_SUB, s, t, out) }
}

/// `*out = s / t`: `bc_binary_rscalar` with `BC_OP_DIV`.
///
/// # Safety
/// `out` must be valid for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_rdiv_scalar(
    s: bc_scalar,
    t: *const bc_tensor,
    out: *mut *mut bc_tensor,
) -> i32 {
    // SAFETY: forwarded.
    unsafe { bc_binary_rscalar(BC_OP_DIV, s, t, out) }
}

/// `target += s`: `bc_binary_scalar_inplace` with `BC_OP_ADD`.
#[must_use]
#[no_mangle]
pub extern "C" fn bc_add_scalar_inplace(target: *mut bc_tensor, s: bc_scalar) -> i32 {
    bc_binary_scalar_inplace(BC_OP_ADD, target, s)
}

/// `target -= s`: `bc_binary_scalar_inplace` with `BC_OP_SUB`.
#[must_use]
#[no_mangle]
pub extern "C" fn bc_sub_scalar_inplace(target: *mut bc_tensor, s: bc_scalar) -> i32 {
    bc_binary_scalar_inplace(BC_OP_SUB, target, s)
}

/// `target *= s`: `bc_binary_scalar_inplace` with `BC_OP_MUL`.
#[must_use]
#[no_mangle]
pub extern "C" fn bc_mul_scalar_inplace(target: *mut bc_tensor, s: bc_scalar) -> i32 {
    bc_binary_scalar_inplace(BC_OP_MUL, target, s)
}

/// `target /= s`: `bc_binary_scalar_inplace` with `BC_OP_DIV`.
#[must_use]
#[no_mangle]
pub extern "C" fn bc_div_scalar_inplace(target: *mut bc_tensor, s: bc_scalar) -> i32 {
    bc_binary_scalar_inplace(BC_OP_DIV, target, s)
}
