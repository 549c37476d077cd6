//! `a op b` with a Python number: the operation and order Python gives it, and `pow`'s rules for a
//! number exponent or base.

use super::binary::{binary, binary_inplace, write_result};
use super::decide::{decide_with, result_layout, BinaryDecision};
use super::operand::Operand;
use super::walk::Walk;
use super::{Dest, Options, Warnings};
use crate::engine::binary_ops::{BinaryOp, Number};
use crate::engine::dtype::DType;
use crate::engine::error::{Error, Result};
use crate::engine::kernels;
use crate::engine::tensor::{copy_into, Init, Scalar, Tensor};

/// `t op s` for a number `s` (`number_first`: `s op t`), as PyTorch computes it for a Python
/// number: the number is a wrapped number (it promotes by category only; see
/// [`Tensor::wrapped_number`]), Python's reflection decides the order (`s * t` is `t * s`, `s < t`
/// is `t > s`), the operations that take no number refuse it as PyTorch does, and `pow` has its
/// rules for a number exponent or base (see [`pow_number`]).
pub fn binary_number(
    op: BinaryOp,
    t: &Tensor,
    s: Scalar,
    number_first: bool,
    opts: Options,
) -> Result<(Tensor, Warnings)> {
    let (op, number_first) = python_order(op, s, number_first, false)?;
    binary_wrapped(op, t, &Tensor::wrapped_number(s)?, s, number_first, opts)
}

/// [`binary_number`] after [`python_order`], with `n` the wrapped number of `s`.
pub(crate) fn binary_wrapped(
    op: BinaryOp,
    t: &Tensor,
    n: &Tensor,
    s: Scalar,
    number_first: bool,
    opts: Options,
) -> Result<(Tensor, Warnings)> {
    if op == BinaryOp::Pow {
        return pow_number(t, n, s, number_first, Dest::New, opts).map(|(r, w)| (r.unwrap(), w));
    }
    match number_first {
        true => binary(op, n, t, opts),
        false => binary(op, t, n, opts),
    }
}

/// `t op= s` for a number `s`, as [`binary_number`].
pub fn binary_number_inplace(
    op: BinaryOp,
    t: &Tensor,
    s: Scalar,
    opts: Options,
) -> Result<Warnings> {
    let (op, _) = python_order(op, s, false, true)?;
    binary_wrapped_inplace(op, t, &Tensor::wrapped_number(s)?, s, opts)
}

/// [`binary_number_inplace`] after [`python_order`], with `n` the wrapped number of `s`.
pub(crate) fn binary_wrapped_inplace(
    op: BinaryOp,
    t: &Tensor,
    n: &Tensor,
    s: Scalar,
    opts: Options,
) -> Result<Warnings> {
    if op == BinaryOp::Pow {
        return pow_number(t, n, s, false, Dest::InPlace, opts).map(|(_, w)| w);
    }
    binary_inplace(op, t, n, opts)
}

/// The operation and order PyTorch runs for `t op s` (`number_first`: `s op t`) with a Python
/// number `s`: Python hands `s op t` to the tensor, whose reflected method computes `t op s` for
/// the operations that commute and the mirrored comparison for the others that compare, and
/// `op(s, t)` for the rest; the table's `number` column says which. An operation without a number
/// form (or `fmod` with the number first) gives PyTorch's TypeError, in its words.
pub(crate) fn python_order(
    op: BinaryOp,
    s: Scalar,
    number_first: bool,
    inplace: bool,
) -> Result<(BinaryOp, bool)> {
    let kind = match s {
        Scalar::Bool(_) => "bool",
        Scalar::Int(_) => "int",
        Scalar::Float(_) => "float",
    };
    match (op.rule().number, number_first) {
        (Number::Second, true) => Err(Error::invalid(format_args!(
            "{}() received an invalid combination of arguments - got ({kind}, Tensor), but \
             expected one of:\n * (Tensor input, Tensor other, *, Tensor out = None)\n * (Tensor \
             input, Number other, *, Tensor out = None)\n",
            op.name()
        ))),
        (Number::Refused, _) => {
            // `maximum` and `minimum` have no in-place method: their `out=` form's text.
            let method = inplace && !matches!(op, BinaryOp::Maximum | BinaryOp::Minimum);
            let (name, arg) = match (number_first, method) {
                (true, _) => ("", "'input' (position 1)"),
                (false, true) => ("_", "'other' (position 1)"),
                (false, false) => ("", "'other' (position 2)"),
            };
            Err(Error::invalid(format_args!(
                "{}{name}(): argument {arg} must be Tensor, not {kind}",
                op.name()
            )))
        }
        (Number::Reflected(reflected), true) => Ok((reflected, false)),
        _ => Ok((op, number_first)),
    }
}

/// `pow` with a number (PyTorch's `pow(Tensor, Scalar)` and `pow(Scalar, Tensor)`):
/// - `t ** s`: an integer or bool tensor to a negative integer is refused; after the call's
///   checks, an exponent of 0 fills the result with 1 and an exponent of 1 copies `t` (no kernel
///   runs, so a bool tensor is fine); otherwise the exponent must fit the computation type when
///   that is float16, bfloat16 or an integer type (PyTorch reads it there with a checked
///   conversion; float32 and float64 read it as a double).
/// - `s ** t`: a base of 1 (an int or a float, not `True`) fills a row-major result with 1, with
///   no check at all; any other base is `pow(s, t)` into a row-major result (PyTorch computes it
///   through its `out=` form, which does not follow the operands' layout).
fn pow_number(
    t: &Tensor,
    n: &Tensor,
    s: Scalar,
    number_first: bool,
    dest: Dest<'_, Tensor>,
    opts: Options,
) -> Result<(Option<Tensor>, Warnings)> {
    let op = BinaryOp::Pow;
    let (d, run) = decide_pow_number(t, n, s, number_first, dest, opts)?;
    if number_first {
        let init = match run {
            WriteKind::Fill => Init::Fill(1.0),
            _ => Init::Uninit,
        };
        let out = Tensor::new(d.types.result, &d.shape, init)?;
        if run == WriteKind::Compute {
            write_result(op, &out, n, t, d.types)?;
        }
        return Ok((Some(out), d.warnings));
    }
    let out = match dest {
        Dest::New => {
            let strides = result_layout(&d, t.geometry(), n.geometry())?;
            Some(Tensor::new_dense(
                d.types.result,
                &d.shape,
                strides,
                Init::Uninit,
            )?)
        }
        _ => None,
    };
    let written = out.as_ref().unwrap_or(t);
    match run {
        WriteKind::Copy => copy_into(written, t)?,
        WriteKind::Fill => fill(written, 1.0)?,
        WriteKind::Compute => write_result(op, written, t, n, d.types)?,
    }
    Ok((out, d.warnings))
}

/// How a call writes its result once its checks have passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum WriteKind {
    /// The operation's kernel (see [`steps`](super::decide::steps)).
    Compute,
    /// Every element set to 1 (`pow` to the exponent 0, or of the base 1).
    Fill,
    /// The tensor itself, cast to the written type (`pow` to the exponent 1).
    Copy,
}

/// The checks and decisions of [`pow_number`], in its order, before anything is allocated: the
/// call and the planner run this same code.
pub(super) fn decide_pow_number<'a, O: Operand>(
    t: &'a O,
    n: &'a O,
    s: Scalar,
    number_first: bool,
    dest: Dest<'a, O>,
    opts: Options,
) -> Result<(BinaryDecision<'a>, WriteKind)> {
    let op = BinaryOp::Pow;
    if number_first {
        let one = matches!(s, Scalar::Int(1)) || s == Scalar::Float(1.0);
        let d = decide_with(op, n, t, Dest::New, opts, !one)?;
        return Ok((
            d,
            if one {
                WriteKind::Fill
            } else {
                WriteKind::Compute
            },
        ));
    }
    let integral = |dtype: DType| !dtype.is_floating();
    if integral(t.geometry().dtype) && matches!(s, Scalar::Int(i) if i < 0) {
        return Err(Error::NegativeIntegerPower);
    }
    let trivial = match s {
        Scalar::Bool(b) => Some(b),
        Scalar::Int(i) => (i == 0 || i == 1).then_some(i == 1),
        Scalar::Float(f) => (f == 0.0 || f == 1.0).then_some(f == 1.0),
    };
    let d = decide_with(op, t, n, dest, opts, trivial.is_none())?;
    let checked = matches!(d.types.compute, DType::F16 | DType::BF16) || integral(d.types.compute);
    if trivial.is_none() && checked && !fits(s, d.types.compute) {
        return Err(Error::NumberOverflow {
            dtype: d.types.compute,
        });
    }
    let run = match trivial {
        Some(true) => WriteKind::Copy,
        Some(false) => WriteKind::Fill,
        None => WriteKind::Compute,
    };
    Ok((d, run))
}

/// Whether a number fits `dtype` as PyTorch's checked conversion requires (c10's `overflows`): a
/// bool always; a float when it is an infinity or NaN and the type has them, or lies within the
/// type's finite range; an integer within the type's range, or for an unsigned type down to
/// minus its maximum (negative values wrap).
pub(crate) fn fits(s: Scalar, dtype: DType) -> bool {
    let (lowest, max) = dtype.range();
    match s {
        Scalar::Bool(_) => true,
        Scalar::Float(f) if dtype.is_floating() && !f.is_finite() => true,
        Scalar::Float(f) => f >= lowest && f <= max,
        Scalar::Int(_) if dtype == DType::I64 => true,
        Scalar::Int(i) if lowest == 0.0 => {
            (i as f64) <= max && (i >= 0 || i.unsigned_abs() as f64 <= max)
        }
        Scalar::Int(i) => (i as f64) >= lowest && (i as f64) <= max,
    }
}

/// Writes `value` into every element of `dest` (any layout), as its type holds it.
fn fill(dest: &Tensor, value: f64) -> Result<()> {
    if dest.numel() == 0 {
        return Ok(());
    }
    let dtype = dest.dtype();
    let walk = Walk::new(dest.shape(), [dest.geometry()])?;
    // SAFETY: the walk covers exactly dest's view, which lies within its storage.
    unsafe {
        walk.run([dest.data_ptr()], |p, s, n| {
            kernels::fill_run(dtype, value, p[0], s[0], n)
        })
    };
    Ok(())
}
