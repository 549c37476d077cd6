//! The checks of `a op b` in PyTorch's order, and what they decide before anything is allocated:
//! the shape, the types, the steps of the computation and the result's layout.

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
pub(super) struct BinaryDecision {
    /// The broadcast shape (in place, the written operand's).
    pub(super) shape: Dims,
    pub(super) types: BinaryTypes,
    /// The legacy fallback applies: `b` is read as a row-major tensor of `a`'s shape.
    pub(super) fallback: bool,
    pub(super) warnings: Warnings,
}

/// The checks of `a op b` in PyTorch's order (the operation is defined for the types, the
/// written operand may be written, the shapes, the written operand's shape and type), with the
/// two switches applied. Decides on types and geometry only (and, for a tensor, on where its
/// memory is): the call and the planner run this same code.
pub(super) fn decide<O: Operand>(
    op: BinaryOp,
    a: &O,
    b: &O,
    dest: Dest<'_, O>,
    opts: Options,
) -> Result<BinaryDecision> {
    decide_with(op, a, b, dest, opts, true)
}

/// [`decide`]; `kernel` false skips the check that the operation has a kernel for the computation
/// type (`pow` with an exponent of 0 or 1 given as a number runs none).
pub(super) fn decide_with<O: Operand>(
    op: BinaryOp,
    a: &O,
    b: &O,
    dest: Dest<'_, O>,
    opts: Options,
    kernel: bool,
) -> Result<BinaryDecision> {
    let (ga, gb) = (a.geometry(), b.geometry());
    check_op_defined(op, ga.dtype, gb.dtype)?;
    let written = match dest {
        Dest::New => None,
        Dest::InPlace => {
            a.check_writable(&[b])?;
            Some(ga)
        }
        Dest::Out(out) => {
            out.check_writable(&[a, b])?;
            Some(out.geometry())
        }
    };
    let (shape, fallback, warnings) = match dest {
        Dest::InPlace => inplace_shape(ga, gb, opts)?,
        _ => out_of_place_shape(ga, gb, opts)?,
    };
    if let Dest::Out(out) = dest {
        check_output_shape(out.geometry().shape, &shape)?;
    }
    // Under the fallback `b` counts as a tensor of `a`'s shape.
    let b_rank = if fallback { ga.rank() } else { gb.rank() };
    let types = types_of(op, (ga.dtype, ga.rank()), (gb.dtype, b_rank));
    if let Some(w) = written {
        check_cast(types.result, w.dtype)?;
    }
    if kernel {
        check_kernel(op, types.compute)?;
    }
    Ok(BinaryDecision {
        shape,
        types,
        fallback,
        warnings,
    })
}

/// The layout of a new result (see [`layout`]): an input of another type than the computation
/// type takes part as the converted copy PyTorch makes of it.
pub(super) fn result_layout(
    d: &BinaryDecision,
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
pub(crate) fn types_of(op: BinaryOp, a: (DType, Rank), b: (DType, Rank)) -> BinaryTypes {
    let rule = op.rule();
    let t = result_type_ranked([a, b]);
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

fn check_cast(from: DType, to: DType) -> Result<()> {
    if can_cast(from, to) {
        Ok(())
    } else {
        Err(Error::CastRefused { from, to })
    }
}

/// The result shape of an out-of-place operation, with the switches applied: the shape, whether
/// the legacy fallback applies, and the warnings.
fn out_of_place_shape(
    a: Geometry<'_>,
    b: Geometry<'_>,
    opts: Options,
) -> Result<(Dims, bool, Warnings)> {
    match broadcast_shapes(a.shape, b.shape) {
        Ok(shape) => {
            let mut warnings = Warnings::new();
            if opts.broadcast_warning && a.shape != b.shape && a.numel() == b.numel() {
                warnings.push(Warning::BroadcastChange);
            }
            Ok((shape, false, warnings))
        }
        Err(e) if falls_back(&e, opts) && a.numel() == b.numel() => {
            let shape = try_small(a.shape)?;
            Ok((shape, true, smallvec![Warning::Fallback]))
        }
        Err(e) => Err(e),
    }
}

/// The shape of `self op= other` (`self`'s), with the switches applied, as
/// [`out_of_place_shape`].
fn inplace_shape(
    s: Geometry<'_>,
    other: Geometry<'_>,
    opts: Options,
) -> Result<(Dims, bool, Warnings)> {
    let mut warnings = Warnings::new();
    let fallback = match check_inplace(s.shape, other.shape) {
        Ok(()) => {
            if opts.broadcast_warning && s.shape != other.shape && s.numel() == other.numel() {
                warnings.push(Warning::BroadcastChange);
            }
            false
        }
        Err(e) if falls_back(&e, opts) && s.numel() == other.numel() => {
            warnings.push(Warning::FallbackInPlace);
            true
        }
        Err(e) => return Err(e),
    };
    Ok((try_small(s.shape)?, fallback, warnings))
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

pub(super) fn steps(
    op: BinaryOp,
    dest: Geometry<'_>,
    a: Geometry<'_>,
    b: Geometry<'_>,
    types: BinaryTypes,
) -> Steps {
    let rule = op.rule();
    // With no elements nothing is computed, and no input needs converting.
    let empty = numel(dest.shape) == 0;
    let f32_scalar =
        !empty && reads_scalar_in_f32(rule, types.compute, a.dtype, b.dtype, b.numel());
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
