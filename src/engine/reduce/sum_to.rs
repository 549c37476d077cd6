//! `sum_to_size`, and `sum_to_size(a op b, size)` computed without materialising `a op b`: their
//! checks, decisions and entry points.

use super::execute::execute;
use super::reducer::SumR;
use super::source::Fused;
use super::{reduce_into, ReduceOp, Reduction};
use crate::engine::alloc::{try_small_collect, try_to_vec};
use crate::engine::binary_ops::BinaryOp;
use crate::engine::dtype::DType;
use crate::engine::error::{Error, Result};
use crate::engine::fast;
use crate::engine::iter::{broadcast_strides, Iter};
use crate::engine::kernels;
use crate::engine::ops::{self, Operand as _};
use crate::engine::shape::{broadcast_shapes, checked_numel, numel, Dims};
use crate::engine::tensor::{Init, Tensor};
use crate::with_elem;
use smallvec::SmallVec;
use std::marker::PhantomData;

/// PyTorch's `t.sum_to_size(size)`: sums the leading dimensions `size` lacks and those where
/// `size` has 1 and `t` has not, giving shape `size`; `size` `[]` always sums (even a 0-d `t`).
/// When nothing is summed the result is `t` itself (a view sharing its elements), with its type;
/// otherwise a new tensor of the sum's type.
pub fn sum_to_size(t: &Tensor, size: &[i64]) -> Result<Tensor> {
    match decide_sum_to_size(t.dtype(), t.shape(), size)? {
        None => t.try_clone(),
        Some(r) => reduce_into(ReduceOp::Sum, t, &r.reduced, r.dtype, &r.shape),
    }
}

/// The checks and decisions of [`sum_to_size`] from the input's type and shape (`None`: nothing
/// is summed, the result is the input): the call and the planner run this same code.
pub(super) fn decide_sum_to_size(
    dtype: DType,
    shape: &[usize],
    size: &[i64],
) -> Result<Option<Reduction>> {
    let Some(reduced) = summed_dims(size, shape)? else {
        return Ok(None);
    };
    Ok(Some(Reduction {
        dtype: ReduceOp::Sum.result_type(dtype)?,
        reduced,
        shape: as_sizes(size)?,
    }))
}

/// `sum_to_size(a op b, size)` without materialising `a op b`, for every operation of the
/// elementwise table: each element of the broadcast result is computed (by the scalar function
/// `bc_binary`'s kernel applies, at the same computation type) and summed at once, so the inputs
/// are read once and only the result of shape `size` is written. The types, errors (those of
/// `a op b` first, in `bc_binary`'s order, integer zero divisors included) and values are those of
/// the two calls, with the summation order of [`sum_to_size`] on `a op b` in the layout
/// `bc_binary` gives it; a bool result (comparisons, logical operations) sums to int64. When
/// nothing is summed, this is `a op b`.
pub fn binary_sum_to(op: BinaryOp, a: &Tensor, b: &Tensor, size: &[i64]) -> Result<Tensor> {
    let (ga, gb) = (a.geometry(), b.geometry());
    let d = decide_fused(op, ga, gb, size)?;
    let reduced = match d.reduced {
        // As `bc_binary` computes it (through the fast path where it applies).
        Ok(None) => return fast::binary(op, a, b, ops::Options::default()).map(|(t, _)| t),
        Ok(Some(reduced)) => Ok(reduced),
        Err(e) => Err(e),
    };
    let (shape, types) = (&d.shape, d.types);
    // The layout `bc_binary` gives `a op b`, whose order `sum_to_size` then follows.
    let order = ops::binary_layout(shape, types.compute, [ga, gb])?;
    let scalar = d.scalar.then(|| ops::read_f32(b));
    let ca = match d.convert[0] {
        true => ops::converted(a, types.compute)?,
        false => None,
    };
    let cb = match d.convert[1] {
        true => ops::converted(b, types.compute)?,
        false => None,
    };
    let (a, b) = (ca.as_ref().unwrap_or(a), cb.as_ref().unwrap_or(b));
    if d.checks_divisor {
        ops::check_divisor(b)?;
    }
    let reduced = reduced?;
    let out = Tensor::new(d.dtype, &as_sizes(size)?, Init::Zeros)?;
    if out.numel() == 0 || d.empty {
        return Ok(out); // nothing to write, or every sum is empty (0)
    }
    let it = fused_iter(shape, [a.geometry(), b.geometry()], &order, &reduced)?;
    let (base, simd) = ([a.data_ptr(), b.data_ptr()], kernels::simd_level());
    with_elem!(types.result, T => {
        let src = Fused::<T> {
            base,
            op,
            compute: types.compute,
            scalar,
            simd,
            elem: PhantomData,
        };
        execute::<SumR<T>, 2>(&it, &src, &out, false)
    })?;
    Ok(out)
}

/// What [`decide_fused`] finds.
pub(super) struct FusedSum {
    /// The broadcast shape of `a op b`.
    pub(super) shape: Dims,
    pub(super) types: ops::BinaryTypes,
    /// The result's type (the sum's).
    pub(super) dtype: DType,
    /// The dimensions of `shape` summed (`None`: none, the call is `a op b`), or `sum_to_size`'s
    /// refusal, which the call gives after anything `a op b` refuses (a zero divisor included).
    pub(super) reduced: Result<Option<SmallVec<[bool; 6]>>>,
    /// `a op b` has no elements (every sum is empty).
    pub(super) empty: bool,
    /// `b` has one element read in float32 (see [`ops::reads_scalar_in_f32`]).
    pub(super) scalar: bool,
    /// The operands converted to the computation type first (row-major copies).
    pub(super) convert: [bool; 2],
    /// `b`'s elements are read to refuse a zero integer divisor.
    pub(super) checks_divisor: bool,
}

/// The checks and decisions of [`binary_sum_to`], from the operands' types and geometry, in its
/// order: the call and the planner ([`plan_binary_sum_to`]) run this same code.
///
/// [`plan_binary_sum_to`]: super::plan_binary_sum_to
pub(super) fn decide_fused(
    op: BinaryOp,
    ga: ops::Geometry<'_>,
    gb: ops::Geometry<'_>,
    size: &[i64],
) -> Result<FusedSum> {
    ops::check_op_defined(op, ga.dtype, gb.dtype)?;
    let shape = broadcast_shapes(ga.shape, gb.shape)?;
    let types = ops::types_of(op, (ga.dtype, ga.rank()), (gb.dtype, gb.rank()));
    ops::check_kernel(op, types.compute)?;
    // Refused like the two calls, whose `a op b` could not exist.
    checked_numel(&shape)?;
    let reduced = summed_dims(size, &shape);
    let empty = shape.contains(&0);
    let rule = op.rule();
    // A one-element second operand of another type that `bc_binary` reads in float32.
    let scalar = !empty
        && ops::reads_scalar_in_f32(rule, types.compute, ga.dtype, gb.dtype, numel(gb.shape));
    // Other inputs of another type are converted first, at their own size, as `bc_binary` does
    // (when there is anything to compute).
    let convert = [
        !empty && ga.dtype != types.compute,
        !empty && !scalar && gb.dtype != types.compute,
    ];
    Ok(FusedSum {
        dtype: ReduceOp::Sum.result_type(types.result)?,
        checks_divisor: !empty && rule.nonzero_divisor && !types.compute.is_floating(),
        shape,
        types,
        reduced,
        empty,
        scalar,
        convert,
    })
}

/// The fused form's iterator over `a op b` of `shape` (`order`: the strides of its layout),
/// summing the dimensions marked in `reduced`, over the operands as they are read (of the
/// computation type).
pub(super) fn fused_iter(
    shape: &[usize],
    ab: [ops::Geometry<'_>; 2],
    order: &[isize],
    reduced: &[bool],
) -> Result<Iter<2>> {
    let sa = broadcast_strides(ab[0].shape, ab[0].strides, shape)?;
    let sb = broadcast_strides(ab[1].shape, ab[1].strides, shape)?;
    Iter::with_reduced(shape, [&sa, &sb], order, reduced)
}

/// Which dimensions of `shape` `sum_to_size(size)` sums, or `None` when it sums nothing (PyTorch
/// then returns the tensor itself); refuses a `size` that `shape` cannot be broadcast from.
fn summed_dims(size: &[i64], shape: &[usize]) -> Result<Option<SmallVec<[bool; 6]>>> {
    let lead = shape.len().checked_sub(size.len());
    let fits = lead.is_some_and(|lead| {
        size.iter()
            .zip(&shape[lead..])
            .all(|(&s, &d)| s == d as i64 || s == 1)
    });
    let Some(lead) = lead.filter(|_| fits) else {
        return Err(Error::or_alloc(|| {
            Ok(Error::NotExpandable {
                size: try_to_vec(size)?,
                shape: try_to_vec(shape)?,
            })
        }));
    };
    let reduced: SmallVec<[bool; 6]> = try_small_collect(
        (0..shape.len()).map(|d| d < lead || size[d - lead] == 1 && shape[d] != 1),
    )?;
    // An empty `size` is a full sum, even of nothing but size-1 dimensions (PyTorch's `sum_to`).
    Ok((size.is_empty() || reduced.contains(&true)).then_some(reduced))
}

/// Sizes already checked to be those of a shape.
pub(super) fn as_sizes(size: &[i64]) -> Result<Dims> {
    try_small_collect(size.iter().map(|&s| s as usize))
}
