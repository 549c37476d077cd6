//! The checks of `a op b` in PyTorch's order, and what they decide before anything is allocated:
//! the shape, the types, the steps of the computation and the result's layout. The call and the
//! planner run this same code, which allocates nothing unless the call is refused (the message
//! is built then) or a new result has more dimensions than [`Dims`] holds inline: a written
//! operand's shape is borrowed, and a new result's is built in place.

use super::operand::{Geometry, Operand};
use super::{Dest, Options, Warning, Warnings};
use crate::engine::alloc::try_small;
use crate::engine::binary_ops::{BinaryOp, Compute, Rule};
use crate::engine::dtype::{can_cast, result_type_ranked, DType, Rank};
use crate::engine::error::{Error, ErrorKind, Result};
use crate::engine::layout;
use crate::engine::shape::{
    broadcast_shapes, check_inplace, check_output_shape, numel, Dims, Strides,
};
use smallvec::smallvec;

/// A call's decisions once every check has passed.
#[derive(Debug)]
pub(crate) struct BinaryDecision<'a> {
    /// The broadcast shape: the written operand's (in place, into `out`), or a new result's.
    pub(crate) shape: Shape<'a>,
    pub(crate) types: BinaryTypes,
    /// The legacy fallback applies: `b` is read as a row-major tensor of `a`'s shape.
    pub(crate) fallback: bool,
    pub(crate) warnings: Warnings,
}

impl BinaryDecision<'_> {
    /// Before [`decide_in`].
    #[inline(always)]
    pub(crate) fn new() -> Self {
        BinaryDecision {
            shape: Shape::Written(&[]),
            types: BinaryTypes {
                compute: DType::Bool,
                result: DType::Bool,
            },
            fallback: false,
            warnings: Warnings::new(),
        }
    }
}

/// A decided shape: a written operand's, borrowed (the call checks that the operands broadcast
/// to it, and builds nothing), or a new result's.
#[derive(Debug)]
pub(crate) enum Shape<'a> {
    Written(&'a [usize]),
    New(Dims),
}

impl std::ops::Deref for Shape<'_> {
    type Target = [usize];
    #[inline(always)]
    fn deref(&self) -> &[usize] {
        match self {
            Shape::Written(s) => s,
            Shape::New(s) => s,
        }
    }
}

/// The checks of `a op b` in PyTorch's order (the operation is defined for the types, the
/// written operand may be written, the shapes, the written operand's shape and type), with the
/// two switches applied. Decides on types and geometry only (and, for a tensor, on where its
/// memory is): the call and the planner run this same code.
pub(super) fn decide<'a, O: Operand>(
    op: BinaryOp,
    a: &'a O,
    b: &'a O,
    dest: Dest<'a, O>,
    opts: Options,
) -> Result<BinaryDecision<'a>> {
    decide_with(op, a, b, dest, opts, true)
}

/// [`decide`]; `kernel` false skips the check that the operation has a kernel for the computation
/// type (`pow` with an exponent of 0 or 1 given as a number runs none).
pub(super) fn decide_with<'a, O: Operand>(
    op: BinaryOp,
    a: &'a O,
    b: &'a O,
    dest: Dest<'a, O>,
    opts: Options,
    kernel: bool,
) -> Result<BinaryDecision<'a>> {
    let mut d = BinaryDecision::new();
    decide_in(&mut d, op, a, b, dest, opts, kernel, &mut ())?;
    Ok(d)
}

/// What the decision's one pass over the dimensions hands on, innermost dimension first, to
/// a caller that runs the decided computation itself: each broadcast size with the operands'
/// sizes there (1 where one is broadcast). The small-call shortcut builds its plan from it
/// (`fast::Plan`), in that same pass; the general path and the planner take nothing (`()`).
/// The pass ends with [`DimSink::done`] exactly when it reached every dimension: the shapes
/// broadcast without the switches' help (and, for a new result, to at most [`Dims`]' inline
/// size), and the written operand, if any, has the broadcast shape.
pub(crate) trait DimSink {
    fn dim(&mut self, size: usize, a: usize, b: usize);
    fn done(&mut self);
}

impl DimSink for () {
    #[inline(always)]
    fn dim(&mut self, _: usize, _: usize, _: usize) {}
    #[inline(always)]
    fn done(&mut self) {}
}

/// [`decide_with`], written into `d` (made by [`BinaryDecision::new`]): the decision itself,
/// handing its pass over the dimensions to `sink`. Inlined, with every refusal built out of
/// line, so that a call that passes pays only for its tests; a caller that keeps `d` itself
/// copies no decision through the layers of results.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(crate) fn decide_in<'a, O: Operand>(
    d: &mut BinaryDecision<'a>,
    op: BinaryOp,
    a: &'a O,
    b: &'a O,
    dest: Dest<'a, O>,
    opts: Options,
    kernel: bool,
    sink: &mut impl DimSink,
) -> Result<()> {
    let (ga, gb) = (a.geometry(), b.geometry());
    check_op_defined(op, ga.dtype, gb.dtype)?;
    // The written operand may be written, then the shapes (the written operand's geometry read
    // once): the written operand's type, if any.
    let written = match dest {
        Dest::New => {
            new_shape(d, ga.shape, gb.shape, opts, sink)?;
            None
        }
        Dest::InPlace => {
            a.check_writable(&[b])?;
            inplace_shape(d, ga.shape, gb.shape, opts, sink)?;
            Some(ga.dtype)
        }
        Dest::Out(out) => {
            out.check_writable(&[a, b])?;
            let go = out.geometry();
            out_shape(d, go.shape, ga.shape, gb.shape, opts, sink)?;
            Some(go.dtype)
        }
    };
    // Under the fallback `b` counts as a tensor of `a`'s shape. Operands of one type, neither
    // a wrapped number, promote to it: the common case, without their ranks.
    d.types = if ga.dtype == gb.dtype && !ga.wrapped && !gb.wrapped {
        types_in(op, ga.dtype)
    } else {
        let b_rank = if d.fallback { ga.rank() } else { gb.rank() };
        types_of(op, (ga.dtype, ga.rank()), (gb.dtype, b_rank))
    };
    if let Some(w) = written {
        check_cast(d.types.result, w)?;
    }
    if kernel {
        check_kernel(op, d.types.compute)?;
    }
    Ok(())
}

/// The layout of a new result (see [`layout`]): an input of another type than the computation
/// type takes part as the converted copy PyTorch makes of it.
pub(super) fn result_layout(
    d: &BinaryDecision<'_>,
    a: Geometry<'_>,
    b: Geometry<'_>,
) -> Result<Strides> {
    binary_layout(&d.shape, d.types.compute, [a, b])
}

/// The strides of a new result of `shape` computed in `compute` from operands `ab` (see
/// [`result_layout`]); also what a fused expression gives its result (`expr`).
pub(crate) fn binary_layout(
    shape: &[usize],
    compute: DType,
    ab: [Geometry<'_>; 2],
) -> Result<Strides> {
    let inputs = ab.map(|g| layout::Input {
        shape: g.shape,
        strides: g.strides,
        converted: g.dtype != compute,
    });
    layout::result_strides(shape, inputs)
}

#[inline(always)]
pub(crate) fn check_op_defined(op: BinaryOp, a: DType, b: DType) -> Result<()> {
    match (op, a == DType::Bool, b == DType::Bool) {
        (BinaryOp::Sub, true, true) => Err(Error::BoolSubtraction { both: true }),
        (BinaryOp::Sub, true, false) | (BinaryOp::Sub, false, true) => {
            Err(Error::BoolSubtraction { both: false })
        }
        _ => Ok(()),
    }
}

/// Whether a broadcasting failure lets the legacy fallback apply: a shape mismatch with the switch
/// on (never an allocation failure, which says nothing about the shapes).
fn falls_back(e: &Error, opts: Options) -> bool {
    opts.legacy_fallback && e.kind() == ErrorKind::Shape
}

/// The types of `a op b`: what it computes in (its inputs are converted to that), and what it
/// gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BinaryTypes {
    pub compute: DType,
    pub result: DType,
}

/// The types of `a op b` for operands given as (type, rank).
#[inline(always)]
pub(crate) fn types_of(op: BinaryOp, a: (DType, Rank), b: (DType, Rank)) -> BinaryTypes {
    // Operands of one type promote to it, unless one is a wrapped number (which takes part by
    // category only): the common case, without the promotion table.
    let t = if a.0 == b.0 && a.1 != Rank::Wrapped && b.1 != Rank::Wrapped {
        a.0
    } else {
        result_type_ranked([a, b])
    };
    types_in(op, t)
}

/// The types of `a op b` for operands that promote to `t`.
#[inline(always)]
fn types_in(op: BinaryOp, t: DType) -> BinaryTypes {
    let rule = op.rule();
    // Operations such as true division compute integers and bools in the default floating type.
    let compute = if rule.compute == Compute::Floating && !t.is_floating() {
        DType::F32
    } else {
        t
    };
    let result = if rule.bool_result {
        DType::Bool
    } else {
        compute
    };
    BinaryTypes { compute, result }
}

/// PyTorch's refusal of a computation type the operation has no kernel for.
#[inline(always)]
pub(crate) fn check_kernel(op: BinaryOp, compute: DType) -> Result<()> {
    let rule = op.rule();
    if rule.accepts(compute) {
        Ok(())
    } else {
        Err(Error::NotImplemented {
            kernel: rule.kernel_name,
            dtype: compute,
        })
    }
}

#[inline(always)]
fn check_cast(from: DType, to: DType) -> Result<()> {
    // One type, the common case, casts without the rule's tests.
    if from == to || can_cast(from, to) {
        Ok(())
    } else {
        Err(Error::CastRefused { from, to })
    }
}

/// The shape of a new result: the broadcast shape, with the switches applied.
#[inline(always)]
fn new_shape(
    d: &mut BinaryDecision<'_>,
    a: &[usize],
    b: &[usize],
    opts: Options,
    sink: &mut impl DimSink,
) -> Result<()> {
    match broadcast_inline(a, b, sink) {
        Some(shape) if !opts.broadcast_warning => d.shape = Shape::New(shape),
        _ => {
            let (shape, fallback, warnings) = out_of_place_shape(a, b, opts)?;
            (d.shape, d.fallback, d.warnings) = (Shape::New(shape), fallback, warnings);
        }
    }
    Ok(())
}

/// The shape of a result written into `out` (of shape `written`): the broadcast shape, with the
/// switches applied, which must be `out`'s.
#[inline(always)]
fn out_shape<'a>(
    d: &mut BinaryDecision<'a>,
    written: &'a [usize],
    a: &[usize],
    b: &[usize],
    opts: Options,
    sink: &mut impl DimSink,
) -> Result<()> {
    d.shape = Shape::Written(written);
    if opts.broadcast_warning || !broadcasts_to(written, a, b, sink) {
        let (shape, fallback, warnings) = out_of_place_shape(a, b, opts)?;
        check_output_shape(written, &shape)?;
        (d.fallback, d.warnings) = (fallback, warnings);
    }
    Ok(())
}

/// The result shape of an out-of-place operation, with the switches applied: the shape, whether
/// the legacy fallback applies, and the warnings. Out of line, given the shapes alone, so that
/// a call that passes keeps no geometry for it.
#[cold]
#[inline(never)]
fn out_of_place_shape(a: &[usize], b: &[usize], opts: Options) -> Result<(Dims, bool, Warnings)> {
    match broadcast_shapes(a, b) {
        Ok(shape) => {
            let mut warnings = Warnings::new();
            if opts.broadcast_warning && a != b && numel(a) == numel(b) {
                warnings.push(Warning::BroadcastChange);
            }
            Ok((shape, false, warnings))
        }
        Err(e) if falls_back(&e, opts) && numel(a) == numel(b) => {
            let shape = try_small(a)?;
            Ok((shape, true, smallvec![Warning::Fallback]))
        }
        Err(e) => Err(e),
    }
}

/// [`broadcast_shapes`] of shapes that broadcast to at most [`Dims`]' inline size, built in a
/// plain array (a small vector checks where its elements are at each access); `None` for
/// other shapes, left to [`broadcast_shapes`] (which gives the error, or allocates). Innermost
/// dimension first, each handed to `sink`.
#[inline(always)]
fn broadcast_inline(a: &[usize], b: &[usize], sink: &mut impl DimSink) -> Option<Dims> {
    let ndim = a.len().max(b.len());
    let mut buf = [0usize; 5];
    if ndim > buf.len() {
        return None;
    }
    for (i, size) in buf[..ndim].iter_mut().enumerate().rev() {
        let da = (i + a.len()).checked_sub(ndim).map_or(1, |k| a[k]);
        let db = (i + b.len()).checked_sub(ndim).map_or(1, |k| b[k]);
        *size = if da == db || db == 1 {
            da
        } else if da == 1 {
            db
        } else {
            return None;
        };
        sink.dim(*size, da, db);
    }
    sink.done();
    Some(Dims::from_buf_and_len(buf, ndim))
}

/// Whether shapes `a` and `b` broadcast to exactly `shape` (then [`broadcast_shapes`] gives
/// `shape`), tested without building the broadcast shape. Innermost dimension first, each
/// handed to `sink`.
#[inline(always)]
fn broadcasts_to(shape: &[usize], a: &[usize], b: &[usize], sink: &mut impl DimSink) -> bool {
    let ndim = shape.len();
    if a.len().max(b.len()) != ndim {
        return false;
    }
    // A plain loop: as an iterator's `all` the pass was a call of its own.
    let mut i = ndim;
    while i > 0 {
        i -= 1;
        let d = shape[i];
        let da = (i + a.len()).checked_sub(ndim).map_or(1, |k| a[k]);
        let db = (i + b.len()).checked_sub(ndim).map_or(1, |k| b[k]);
        // The broadcast size is the one that is not 1 (or 1), and both agree with it.
        if !((da == d || da == 1) && (db == d || db == 1) && (da == d || db == d)) {
            return false;
        }
        sink.dim(d, da, db);
    }
    sink.done();
    true
}

/// The shape of `self op= other` (`self`'s), with the switches applied, as
/// [`out_of_place_shape`].
#[inline(always)]
fn inplace_shape<'a>(
    d: &mut BinaryDecision<'a>,
    s: &'a [usize],
    other: &[usize],
    opts: Options,
    sink: &mut impl DimSink,
) -> Result<()> {
    d.shape = Shape::Written(s);
    // `other` broadcasts to `self` exactly when both broadcast to `self`'s shape; tested as for
    // an `out` (the dimensions handed to `sink`), [`check_inplace`] then giving the error.
    let fits = broadcasts_to(s, s, other, sink);
    match if fits {
        Ok(())
    } else {
        check_inplace(s, other)
    } {
        Ok(()) => {
            if opts.broadcast_warning && s != other && numel(s) == numel(other) {
                d.warnings.push(Warning::BroadcastChange);
            }
        }
        Err(e) if falls_back(&e, opts) && numel(s) == numel(other) => {
            d.warnings.push(Warning::FallbackInPlace);
            d.fallback = true;
        }
        Err(e) => return Err(e),
    }
    Ok(())
}

/// How a computation into a written tensor runs: decided from types and geometry before anything
/// is allocated, by the call and by the planner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Steps {
    /// Computed into a temporary of the result type, then cast into the written tensor (so a
    /// cast never happens half-way through a failed call: the temporary comes first).
    pub(super) temp: bool,
    /// The float16/bfloat16 rule for a one-element second operand of another type (see
    /// [`reads_scalar_in_f32`]): computed from `a` and that float32 alone.
    pub(super) f32_scalar: bool,
    /// Inputs first converted to the computation type, into row-major temporaries of their own
    /// (un-broadcast) shape.
    pub(super) convert: [bool; 2],
    /// The divisor's elements are read for a zero first (integer division, remainder, fmod).
    pub(super) divisor: bool,
}

#[inline(always)]
pub(super) fn steps(
    op: BinaryOp,
    dest: Geometry<'_>,
    a: Geometry<'_>,
    b: Geometry<'_>,
    types: BinaryTypes,
) -> Steps {
    let rule = op.rule();
    // With no elements nothing is computed, and no input needs converting.
    let empty = dest.shape.contains(&0);
    let f32_scalar = !empty
        && rule.float32_scalar
        && reads_scalar_in_f32(rule, types.compute, a.dtype, b.dtype, b.numel());
    let convert = [a, b].map(|g| !empty && !f32_scalar && g.dtype != types.compute);
    Steps {
        temp: dest.dtype != types.result,
        f32_scalar,
        convert,
        divisor: !empty && rule.nonzero_divisor && !types.compute.is_floating(),
    }
}

/// PyTorch's CPU kernels for `mul`, `div` and `floor_divide` in float16 and bfloat16 take a
/// second operand of one element (a 0-d tensor, or any shape of one element) of another type as a
/// float32 read straight from its own type, not first rounded to the computation type as every
/// other operand is, compute in float32 and round once at the end: `float16([5.]) *
/// float64(1/3)` is 1.6669921875, not 1.666015625. Not for other operations, nor for a
/// one-element first operand, nor for a second operand expanded to more elements (PyTorch 2.15;
/// `tests/data/pytorch/reduced_scalar.jsonl`, `ops_values.jsonl`). The operations that do it say
/// so in their table row ([`Rule::float32_scalar`](crate::engine::binary_ops::Rule)).
pub(crate) fn reads_scalar_in_f32(
    rule: &Rule,
    dtype: DType,
    a: DType,
    b: DType,
    b_numel: usize,
) -> bool {
    rule.float32_scalar
        && matches!(dtype, DType::F16 | DType::BF16)
        && a == dtype
        && b != dtype
        && b_numel == 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::tensor::{Init, Tensor};

    /// Into `out`, the operands must broadcast to exactly `out`'s shape, which the decision
    /// tests without building the broadcast shape: every size of `out` has to be the broadcast
    /// one (not just one both operands may broadcast to), with PyTorch's messages, the
    /// broadcasting one first; for tensors and for the planner's geometries alike.
    #[test]
    fn operands_broadcast_to_exactly_the_written_shape() {
        type Case = (
            &'static [usize],
            &'static [usize],
            &'static [usize],
            Option<&'static str>,
        );
        let cases: [Case; 9] = [
            (&[3], &[1], &[3], None),
            (&[2, 1], &[1, 3], &[2, 3], None),
            (&[0], &[1], &[0], None),
            (&[], &[], &[], None),
            (
                &[1],
                &[1],
                &[3],
                Some("output with shape [3] doesn't match the broadcast shape [1]"),
            ),
            (
                &[2, 1],
                &[1, 3],
                &[3, 2],
                Some("output with shape [3, 2] doesn't match the broadcast shape [2, 3]"),
            ),
            (
                &[3],
                &[3],
                &[1, 3],
                Some("output with shape [1, 3] doesn't match the broadcast shape [3]"),
            ),
            (
                &[1, 3],
                &[3],
                &[3],
                Some("output with shape [3] doesn't match the broadcast shape [1, 3]"),
            ),
            (
                &[4],
                &[3],
                &[4],
                Some(
                    "The size of tensor a (4) must match the size of tensor b (3) at \
                     non-singleton dimension 0",
                ),
            ),
        ];
        for (sa, sb, so, want) in cases {
            let t = |s: &[usize]| Tensor::new(DType::F32, s, Init::Fill(1.0)).unwrap();
            let (a, b, out) = (t(sa), t(sb), t(so));
            let d = decide(BinaryOp::Add, &a, &b, Dest::Out(&out), Options::default());
            let got = d.map(|d| d.shape.to_vec()).map_err(|e| e.to_string());
            let want = want.map_or(Ok(so.to_vec()), |m| Err(m.to_string()));
            assert_eq!(got, want, "{sa:?} + {sb:?} into {so:?}");
            let (ga, gb, go) = (a.geometry(), b.geometry(), out.geometry());
            let d = decide(BinaryOp::Add, &ga, &gb, Dest::Out(&go), Options::default());
            let got = d.map(|d| d.shape.to_vec()).map_err(|e| e.to_string());
            assert_eq!(got, want, "planned: {sa:?} + {sb:?} into {so:?}");
        }
    }
}
