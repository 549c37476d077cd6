//! `a op b` between tensors: the entry points, and how the result is written once the checks have
//! passed.

use super::decide::{decide, result_layout, steps, BinaryDecision, BinaryTypes, Steps};
use super::operand::{Geometry, Operand as _};
use super::walk::{run_elementwise_rows, Walk};
use super::{Dest, Options, Warnings};
use crate::engine::binary_ops::BinaryOp;
use crate::engine::dtype::DType;
use crate::engine::error::{Error, Result};
use crate::engine::iter::Iter;
use crate::engine::kernels;
use crate::engine::shape::{checked_nbytes, checked_numel, contiguous_strides};
use crate::engine::tensor::{copy_into, Init, Tensor};

/// `a op b` into a new tensor.
pub fn binary(op: BinaryOp, a: &Tensor, b: &Tensor, opts: Options) -> Result<(Tensor, Warnings)> {
    let d = decide(op, a, b, Dest::New, opts)?;
    binary_decided(op, a, b, d)
}

/// [`binary`] once `d` is decided (`decide(op, a, b, Dest::New, ...)`).
pub(crate) fn binary_decided(
    op: BinaryOp,
    a: &Tensor,
    b: &Tensor,
    d: BinaryDecision<'_>,
) -> Result<(Tensor, Warnings)> {
    let reshaped = read_b(&d, a, b)?;
    let b = reshaped.as_ref().unwrap_or(b);
    let strides = result_layout(&d, a.geometry(), b.geometry())?;
    let result = Geometry {
        dtype: d.types.result,
        shape: &d.shape,
        strides: &strides,
        wrapped: false,
    };
    let steps = check_sizes(op, result, true, a, b, d.types)?;
    let out = Tensor::new_dense(d.types.result, &d.shape, strides, Init::Uninit)?;
    run_steps(op, &out, a, b, d.types, steps)?;
    Ok((out, d.warnings))
}

/// `self op= other`.
pub fn binary_inplace(
    op: BinaryOp,
    self_: &Tensor,
    other: &Tensor,
    opts: Options,
) -> Result<Warnings> {
    let d = decide(op, self_, other, Dest::InPlace, opts)?;
    binary_inplace_decided(op, self_, other, d)
}

/// [`binary_inplace`] once `d` is decided.
pub(crate) fn binary_inplace_decided(
    op: BinaryOp,
    self_: &Tensor,
    other: &Tensor,
    d: BinaryDecision<'_>,
) -> Result<Warnings> {
    let reshaped = read_b(&d, self_, other)?;
    write_result(
        op,
        self_,
        self_,
        reshaped.as_ref().unwrap_or(other),
        d.types,
    )?;
    Ok(d.warnings)
}

/// `a op b` into the caller's `out`, which must have the broadcast shape.
pub fn binary_out(
    op: BinaryOp,
    a: &Tensor,
    b: &Tensor,
    out: &Tensor,
    opts: Options,
) -> Result<Warnings> {
    let d = decide(op, a, b, Dest::Out(out), opts)?;
    binary_out_decided(op, a, b, out, d)
}

/// [`binary_out`] once `d` is decided.
pub(crate) fn binary_out_decided(
    op: BinaryOp,
    a: &Tensor,
    b: &Tensor,
    out: &Tensor,
    d: BinaryDecision<'_>,
) -> Result<Warnings> {
    let reshaped = read_b(&d, a, b)?;
    write_result(op, out, a, reshaped.as_ref().unwrap_or(b), d.types)?;
    Ok(d.warnings)
}

/// `b` as the computation reads it: under the legacy fallback, its elements in row-major order
/// viewed with `a`'s shape (a view when `b` is contiguous, else a contiguous copy first).
fn read_b(d: &BinaryDecision<'_>, a: &Tensor, b: &Tensor) -> Result<Option<Tensor>> {
    if !d.fallback {
        return Ok(None);
    }
    let b = if b.is_contiguous() {
        b.try_clone()?
    } else {
        b.to_contiguous(b.dtype())?
    };
    let strides = contiguous_strides(a.shape())?;
    Ok(Some(b.as_strided(a.shape(), &strides, b.offset())?))
}

/// Computes `a op b` into `dest` (which has the broadcast shape), following [`steps`].
pub(super) fn write_result(
    op: BinaryOp,
    dest: &Tensor,
    a: &Tensor,
    b: &Tensor,
    types: BinaryTypes,
) -> Result<()> {
    let steps = check_sizes(op, dest.geometry(), false, a, b, types)?;
    run_steps(op, dest, a, b, types, steps)
}

/// [`write_result`] once its `steps` are decided and their sizes checked ([`check_sizes`]):
/// a new result's call decides them once, for its result's geometry, before making it.
fn run_steps(
    op: BinaryOp,
    dest: &Tensor,
    a: &Tensor,
    b: &Tensor,
    types: BinaryTypes,
    steps: Steps,
) -> Result<()> {
    let tmp = match steps.temp {
        true => Some(Tensor::new(types.result, dest.shape(), Init::Uninit)?),
        false => None,
    };
    let target = tmp.as_ref().unwrap_or(dest);
    if steps.f32_scalar {
        compute_with_f32_scalar(op, target, a, read_f32(b))?;
    } else if target.numel() > 0 {
        let dtype = types.compute;
        let convert = |t: &Tensor, yes: bool| yes.then(|| t.to_contiguous(dtype)).transpose();
        let (ca, cb) = (convert(a, steps.convert[0])?, convert(b, steps.convert[1])?);
        let (a, b) = (ca.as_ref().unwrap_or(a), cb.as_ref().unwrap_or(b));
        if steps.divisor {
            check_divisor(b)?;
        }
        compute_same_type(op, target, a, b, dtype)?;
    }
    match tmp {
        Some(tmp) => copy_into(dest, &tmp),
        None => Ok(()),
    }
}

/// Refuses, before anything is allocated, what [`write_result`] would allocate (the new result
/// when `new_result`, the temporary, the converted inputs) whose bytes do not fit, in that order:
/// the planner counts every allocation before any is made, so a result that fails for want of
/// memory must not hide a converted copy too large to exist. Gives the steps, decided here once
/// for the computation that follows.
fn check_sizes(
    op: BinaryOp,
    dest: Geometry<'_>,
    new_result: bool,
    a: &Tensor,
    b: &Tensor,
    types: BinaryTypes,
) -> Result<Steps> {
    let bytes = |shape: &[usize], dtype: DType| checked_nbytes(checked_numel(shape)?, dtype.size());
    if new_result {
        bytes(dest.shape, types.result)?;
    }
    // (A written tensor exists, so its element count fits; a new result's was just checked.)
    let steps = steps(op, dest, a.geometry(), b.geometry(), types);
    if steps.temp {
        bytes(dest.shape, types.result)?;
    }
    for (t, convert) in [(a, steps.convert[0]), (b, steps.convert[1])] {
        if convert {
            bytes(t.shape(), types.compute)?;
        }
    }
    Ok(steps)
}

/// The one element of `t`, read as a float32.
pub(crate) fn read_f32(t: &Tensor) -> f32 {
    let mut s = 0f32;
    // SAFETY: `t`'s one element is readable; `s` is one writable float32.
    unsafe {
        kernels::cast_run(
            t.dtype(),
            DType::F32,
            [(&mut s as *mut f32).cast(), t.data_ptr()],
            [0, 0],
            1,
        )
    };
    s
}

/// `out = a op s` where `out` and `a` have the computation type (float16 or bfloat16) and `s` is
/// the float32 of [`reads_scalar_in_f32`](super::reads_scalar_in_f32).
fn compute_with_f32_scalar(op: BinaryOp, out: &Tensor, a: &Tensor, s: f32) -> Result<()> {
    let dtype = out.dtype();
    let walk = Walk::new(out.shape(), [out.geometry(), a.geometry()])?;
    // SAFETY: the walk covers out's view and `a` broadcast to it, both within their storages;
    // out aliases `a` only exactly (checked by check_writable).
    unsafe {
        walk.run([out.data_ptr(), a.data_ptr()], |ptrs, strides, n| {
            kernels::f32_scalar_run(op, dtype, s, ptrs, strides, n)
        })
    };
    Ok(())
}

/// `t` converted to `dtype` (a row-major copy), or `None` when it has that type already.
pub(crate) fn converted(t: &Tensor, dtype: DType) -> Result<Option<Tensor>> {
    Ok(if t.dtype() == dtype {
        None
    } else {
        Some(t.to_contiguous(dtype)?)
    })
}

/// PyTorch's `ZeroDivisionError`: an integer division, remainder or fmod with a zero among the
/// divisor's elements (every one is read when the result is not empty). Checked before anything
/// is written, so the refused call changes nothing.
pub(crate) fn check_divisor(divisor: &Tensor) -> Result<()> {
    let dtype = divisor.dtype();
    let plan = Iter::new(divisor.shape(), [divisor.strides()])?;
    let mut zero = false;
    // SAFETY: the plan covers exactly the divisor's view, which lies within its storage.
    unsafe {
        plan.for_each_run(
            [divisor.data_ptr()],
            [dtype.size()],
            0,
            plan.numel(),
            &mut |p, s, n| zero = zero || kernels::any_zero_run(dtype, p[0], s[0], n),
        )
    };
    if zero {
        Err(Error::ZeroDivision)
    } else {
        Ok(())
    }
}

/// [`write_result`]'s computation once both inputs have the computation type `dtype`; `out` has
/// the result type.
fn compute_same_type(
    op: BinaryOp,
    out: &Tensor,
    a: &Tensor,
    b: &Tensor,
    dtype: DType,
) -> Result<()> {
    // SAFETY: binary_run reads `dtype` inputs and writes the operation's result for them, which
    // is out's type; out aliases an input only exactly (checked by check_writable).
    unsafe { run_elementwise_rows([out, a, b], |tile| kernels::binary_run(op, dtype, tile)) }
}
