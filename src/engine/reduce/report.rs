//! The planner's reports: what a reduction would do, from its operands' types and geometry alone.

use super::cut::{row_strides, work};
use super::lanes::Mode;
use super::sum_to::{as_sizes, decide_fused, decide_sum_to_size, fused_iter};
use super::{decide, reduces_nothing, view_iter, ReduceOp, Reduction};
use crate::engine::alloc::try_small;
use crate::engine::binary_ops::BinaryOp;
use crate::engine::dtype::DType;
use crate::engine::error::Result;
use crate::engine::expr::{self, Step};
use crate::engine::iter::Iter;
use crate::engine::ops::{self, LoopKind, Report};
use crate::engine::shape::{
    checked_nbytes, checked_numel, contiguous_strides, numel, Dims, Strides,
};

/// What `reduce(op, t, dims, keepdim)` ([`reduce`]) would do for an input of this type and
/// geometry: the call's checks and decisions, so an error is the one it would give. The report's
/// computation type is the accumulator's; its loop shape is the number of outputs and the
/// elements each reduces.
///
/// [`reduce`]: super::reduce
pub fn plan_reduce(
    op: ReduceOp,
    t: ops::Geometry<'_>,
    dims: &[i64],
    keepdim: bool,
) -> Result<Report> {
    let r = decide(op, t.dtype, t.shape, dims, keepdim)?;
    plan_view(op, t, r)
}

/// What `sum_to_size(t, size)` ([`sum_to_size`]) would do, as [`plan_reduce`]; when nothing is
/// summed the result is `t` itself: no memory, no loop, `t`'s strides.
///
/// [`sum_to_size`]: super::sum_to_size
pub fn plan_sum_to_size(t: ops::Geometry<'_>, size: &[i64]) -> Result<Report> {
    match decide_sum_to_size(t.dtype, t.shape, size)? {
        Some(r) => plan_view(ReduceOp::Sum, t, r),
        None => Ok(Report {
            dtype: t.dtype,
            compute: t.dtype,
            checks_divisor: false,
            shape: try_small(t.shape)?,
            strides: try_small(t.strides)?,
            warnings: ops::Warnings::new(),
            loop_shape: Dims::new(),
            loop_kind: LoopKind::None,
            threads: 1,
            alloc_bytes: 0,
        }),
    }
}

/// What `binary_sum_to(op, a, b, size)` ([`binary_sum_to`]) would do, as [`plan_reduce`] (the
/// computation type is the operation's, as [`ops::plan_binary`] reports it); when nothing is
/// summed, [`ops::plan_binary`]'s report. A refusal of `size` is reported, where the call
/// refuses a zero integer divisor first (`checks_divisor` is not known then).
///
/// [`binary_sum_to`]: super::binary_sum_to
pub fn plan_binary_sum_to(
    op: BinaryOp,
    a: ops::Geometry<'_>,
    b: ops::Geometry<'_>,
    size: &[i64],
) -> Result<Report> {
    let d = decide_fused(op, a, b, size)?;
    let Some(reduced) = d.reduced? else {
        return ops::plan_binary(op, a, b, ops::Dest::New, ops::Options::default());
    };
    let (compute, out_shape) = (d.types.compute, as_sizes(size)?);
    // Converted operands are read from row-major copies.
    let given = [a, b];
    let mut row_major: [Strides; 2] = Default::default();
    let mut alloc_bytes = 0;
    for k in (0..2).filter(|&k| d.convert[k]) {
        row_major[k] = contiguous_strides(given[k].shape)?;
        alloc_bytes += checked_nbytes(numel(given[k].shape), compute.size())?;
    }
    let inputs = std::array::from_fn(|k| match d.convert[k] {
        true => ops::Geometry {
            dtype: compute,
            strides: &row_major[k],
            ..given[k]
        },
        false => given[k],
    });
    let geo = match d.empty || numel(&out_shape) == 0 {
        true => None,
        false => {
            let order = ops::binary_layout(&d.shape, compute, [a, b])?;
            Some(fused_iter(&d.shape, inputs, &order, &reduced)?)
        }
    };
    let acc = ReduceOp::Sum.accumulator(d.types.result);
    let mut r = report(
        d.dtype,
        compute,
        acc,
        out_shape,
        geo.as_ref(),
        compute.size(),
    )?;
    r.alloc_bytes += alloc_bytes;
    r.checks_divisor = d.checks_divisor;
    Ok(r)
}

/// What `expr_reduce(op, steps, inputs, dims, keepdim)` ([`expr_reduce`]) would do for inputs of
/// these geometries, and whether it runs as one fused pass (`true`) or evaluates the expression
/// whole first: the expression's checks ([`expr::plan_expr`]), then the reduction's on the
/// expression's result as [`expr::eval`] lays it out ([`plan_reduce`]), in the call's order. The
/// report is the reduction's, with the expression's warnings and divisor check; its bytes are
/// the reduction's result and, fused, the operations computed first (none when no output reduces
/// anything), else everything the expression's evaluation allocates as well.
///
/// [`expr_reduce`]: super::expr_reduce
pub fn plan_expr_reduce(
    op: ReduceOp,
    steps: &[Step],
    inputs: &[ops::Geometry<'_>],
    dims: &[i64],
    keepdim: bool,
    opts: ops::Options,
) -> Result<(Report, bool)> {
    let e = expr::plan_expr(steps, inputs, None, opts)?;
    let g = ops::Geometry {
        dtype: e.dtype,
        shape: &e.shape,
        strides: &e.strides,
        wrapped: false,
    };
    let mut r = plan_reduce(op, g, dims, keepdim)?;
    let fused = expr::fuses(steps, inputs, opts)?;
    let runs = r.loop_shape.len() == 2 && r.loop_shape[1] > 0;
    let before = match fused {
        // The pass's bytes are the result's and those of the operations computed first.
        true if runs => e
            .alloc_bytes
            .saturating_sub(checked_nbytes(numel(&e.shape), e.dtype.size())?),
        true => 0,
        false => e.alloc_bytes,
    };
    r.alloc_bytes = r.alloc_bytes.saturating_add(before);
    r.warnings = e.warnings;
    r.checks_divisor = e.checks_divisor;
    Ok((r, fused))
}

/// The report of reducing the view `t` as `r` decides.
fn plan_view(op: ReduceOp, t: ops::Geometry<'_>, r: Reduction) -> Result<Report> {
    // The call makes its result before anything else: a result whose elements cannot be counted
    // (a `sum_to_size` target can be any size) is refused first, as the call refuses it.
    let outputs = checked_numel(&r.shape)?;
    let geo = match reduces_nothing(t.shape, &r.reduced) || outputs == 0 {
        true => None,
        false => Some(view_iter(t, &r.reduced)?),
    };
    let acc = op.accumulator(t.dtype);
    report(r.dtype, acc, acc, r.shape, geo.as_ref(), t.dtype.size())
}

/// The report of a reduction into a new row-major result of `dtype` and `shape`, accumulating in
/// `acc` over the iterator `geo` (elements of `itemsize` bytes; `None`: every output reduces nothing and
/// takes the identity, written in one contiguous loop).
fn report<const N: usize>(
    dtype: DType,
    compute: DType,
    acc: DType,
    shape: Dims,
    geo: Option<&Iter<N>>,
    itemsize: usize,
) -> Result<Report> {
    let outputs = checked_numel(&shape)?;
    let (loop_shape, loop_kind, threads) = match geo {
        _ if outputs == 0 => (Dims::new(), LoopKind::None, 1),
        None => (try_small(&[outputs, 0])?, LoopKind::Contiguous, 1),
        Some(g) => {
            let w = work(g, acc.size());
            let kind = match Mode::of_size(itemsize, row_strides(g, &w.cut, itemsize)) {
                Some(Mode(mask)) if mask == (1 << N) - 1 => LoopKind::Contiguous,
                Some(_) => LoopKind::Broadcast,
                None => LoopKind::Strided,
            };
            (try_small(&[w.cut.m, w.cut.n])?, kind, w.threads)
        }
    };
    Ok(Report {
        dtype,
        compute,
        checks_divisor: false,
        alloc_bytes: checked_nbytes(outputs, dtype.size())?,
        strides: contiguous_strides(&shape)?,
        shape,
        warnings: ops::Warnings::new(),
        loop_shape,
        loop_kind,
        threads,
    })
}
