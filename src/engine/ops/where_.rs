//! `where(cond, a, b)`: its checks, the result's layout and the computation.

use super::binary::converted;
use super::operand::{Geometry, Operand};
use super::walk::Walk;
use super::{Warning, Warnings};
use crate::engine::dtype::{result_type, DType};
use crate::engine::error::{Error, Result};
use crate::engine::kernels;
use crate::engine::layout;
use crate::engine::shape::{broadcast_shapes, check_output_shape, Dims, Strides};
use crate::engine::tensor::{Init, Tensor};
use smallvec::smallvec;
use std::sync::atomic::{AtomicBool, Ordering};

/// The strides of a new `where` result of `shape` and type `dtype`: PyTorch converts a uint8
/// condition to bool, and an `a` or `b` of another type to `dtype`, before its TensorIterator lays
/// the result out from the three, in that order (see [`layout`]).
pub(crate) fn where_layout(
    shape: &[usize],
    dtype: DType,
    operands: [Geometry<'_>; 3],
) -> Result<Strides> {
    let to = [DType::Bool, dtype, dtype];
    let inputs: [layout::Input<'_>; 3] = std::array::from_fn(|k| layout::Input {
        shape: operands[k].shape,
        strides: operands[k].strides,
        converted: operands[k].dtype != to[k],
    });
    layout::result_strides(shape, inputs)
}

/// `where(cond, a, b)` into a new tensor: `a`'s element where `cond` is true, else `b`'s; the
/// three broadcast together (in that order), the type promotes `a` and `b` only. `cond` is bool,
/// or uint8 (non-zero is true) with PyTorch's deprecation warning.
pub fn where_(cond: &Tensor, a: &Tensor, b: &Tensor) -> Result<(Tensor, Warnings)> {
    let (dtype, shape) = decide_where(cond, a, b, None)?;
    let strides = where_layout(&shape, dtype, [cond, a, b].map(Tensor::geometry))?;
    let out = Tensor::new_dense(dtype, &shape, strides, Init::Uninit)?;
    compute_where(&out, cond, a, b)?;
    Ok((out, condition_warnings(cond.dtype(), true)))
}

/// [`where_`] into the caller's `out`, which must have the broadcast shape and exactly the
/// result type (PyTorch's rule for `where`).
pub fn where_out(cond: &Tensor, a: &Tensor, b: &Tensor, out: &Tensor) -> Result<Warnings> {
    decide_where(cond, a, b, Some(out))?;
    compute_where(out, cond, a, b)?;
    Ok(condition_warnings(cond.dtype(), true))
}

/// The checks of `where` (into `out` when given) in PyTorch's order, and the result's type and
/// shape: the call and the planner run this same code.
pub(super) fn decide_where<O: Operand>(
    cond: &O,
    a: &O,
    b: &O,
    out: Option<&O>,
) -> Result<(DType, Dims)> {
    let (gc, ga, gb) = (cond.geometry(), a.geometry(), b.geometry());
    let dtype = result_type(ga.dtype, ga.shape.is_empty(), gb.dtype, gb.shape.is_empty());
    if let Some(out) = out {
        if out.geometry().dtype != dtype {
            return Err(Error::OutDtype {
                expected: dtype,
                got: out.geometry().dtype,
            });
        }
    }
    if !matches!(gc.dtype, DType::Bool | DType::U8) {
        return Err(Error::WhereCondition { dtype: gc.dtype });
    }
    if let Some(out) = out {
        out.check_writable(&[cond, a, b])?;
    }
    // `cond`, `a` and `b` broadcast in that order (an error names the shape so far "tensor a").
    let shape = broadcast_shapes(&broadcast_shapes(gc.shape, ga.shape)?, gb.shape)?;
    if let Some(out) = out {
        check_output_shape(out.geometry().shape, &shape)?;
    }
    Ok((dtype, shape))
}

/// Whether the deprecation warning for a uint8 condition was given (once per process).
static WHERE_UINT8_WARNED: AtomicBool = AtomicBool::new(false);

/// The deprecation warning for a uint8 condition, the first time in the process (as PyTorch's
/// `TORCH_WARN_ONCE`); given by calls that succeed (`give`), foreseen by the planner.
pub(super) fn condition_warnings(cond: DType, give: bool) -> Warnings {
    let warned = match give {
        true => cond == DType::U8 && WHERE_UINT8_WARNED.swap(true, Ordering::Relaxed),
        false => WHERE_UINT8_WARNED.load(Ordering::Relaxed),
    };
    if cond == DType::U8 && !warned {
        smallvec![Warning::WhereUint8Condition]
    } else {
        Warnings::new()
    }
}

/// `out = where(cond, a, b)`, `out` of the result type and the broadcast shape; `a` and `b` of
/// another type are first converted into temporaries of their own shape. A bool or uint8
/// condition is read as it is (a non-zero byte is true).
fn compute_where(out: &Tensor, cond: &Tensor, a: &Tensor, b: &Tensor) -> Result<()> {
    if out.numel() == 0 {
        return Ok(());
    }
    let dtype = out.dtype();
    let (ca, cb) = (converted(a, dtype)?, converted(b, dtype)?);
    let (a, b) = (ca.as_ref().unwrap_or(a), cb.as_ref().unwrap_or(b));
    let size = dtype.size();
    // SAFETY: where_run reads a bool/uint8 condition and writes `size`-byte elements, which the
    // operands have; out aliases an input only exactly (check_writable), and is fresh or checked.
    let walk = Walk::new(out.shape(), [out, cond, a, b].map(Tensor::geometry))?;
    unsafe {
        walk.run([out, cond, a, b].map(Tensor::data_ptr), |p, s, n| {
            kernels::where_run(size, p, s, n)
        })
    };
    Ok(())
}
