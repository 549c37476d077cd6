//! Elementwise operations: the checks in PyTorch's order (operation defined for the types,
//! overlapping writes, shapes, result type, a kernel for the computation type, the values), the
//! two backwards-compatibility switches, then one plan run. Every check happens before the first
//! write, so a refused call changes nothing.
//!
//! What a call does is decided before it allocates, from its operands' types and geometry
//! ([`decide`](decide::decide), [`steps`](decide::steps), the result's layout,
//! [`Walk`](walk::Walk)): [`plan_binary`] runs those same decisions on geometry alone, so the
//! planner reports what the call would do.

mod binary;
mod decide;
mod number;
mod operand;
mod report;
mod walk;
mod where_;

pub use binary::{binary, binary_inplace, binary_out};
pub(crate) use binary::{
    binary_decided, binary_inplace_decided, binary_out_decided, check_divisor, converted, read_f32,
};
pub(crate) use decide::{
    binary_layout, check_kernel, check_op_defined, decide_in, reads_scalar_in_f32, types_of,
    BinaryDecision, BinaryTypes, DimSink,
};
pub use number::{binary_number, binary_number_inplace};
pub(crate) use number::{binary_wrapped, binary_wrapped_inplace, fits, python_order};
pub use operand::{Geometry, Operand};
pub use report::{plan_binary, plan_binary_number, plan_where, LoopKind, Report};
pub(crate) use walk::{describe_elementwise, run_elementwise, run_elementwise_rows};
pub(crate) use where_::where_layout;
pub use where_::{where_, where_out};

use super::alloc::try_collect;
use super::error::Result;
use super::parallel;
use super::shape::broadcast_shapes_n;
use super::tensor::Tensor;
use smallvec::SmallVec;

/// The backwards-compatibility switches of docs/semantics.md, section 5.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Options {
    pub broadcast_warning: bool,
    pub legacy_fallback: bool,
}

/// The warnings of one call (at most one; inline, so collecting them never allocates).
pub type Warnings = SmallVec<[Warning; 2]>;

/// A warning that a successful call emits (docs/semantics.md, section 5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Warning {
    /// Different shapes, broadcastable, same number of elements.
    BroadcastChange,
    /// Out of place: not broadcastable, same number of elements, computed as 1-D.
    Fallback,
    /// In place: `other` does not broadcast to `self`, same number of elements, computed as 1-D.
    FallbackInPlace,
    /// `where` with a uint8 condition (deprecated; once per process, as PyTorch warns).
    WhereUint8Condition,
    /// `var` or `std` (`std`) with at most 0 degrees of freedom left by the correction.
    DegreesOfFreedom { std: bool },
}

impl Warning {
    pub fn message(self) -> &'static str {
        match self {
            Warning::BroadcastChange => "self and other do not have the same shape, but are broadcastable, and have the same number of elements.  Changing behavior in a backwards incompatible manner to broadcasting rather than viewing as 1-dimensional.",
            Warning::Fallback => "self and other not broadcastable, but have the same number of elements.  Falling back to deprecated pointwise behavior.",
            Warning::FallbackInPlace => "other is not broadcastable to self, but they have the same number of elements.  Falling back to deprecated pointwise behavior.",
            Warning::DegreesOfFreedom { std: false } => "var(): degrees of freedom is <= 0. Correction should be strictly less than the reduction factor (input numel divided by output numel).",
            Warning::DegreesOfFreedom { std: true } => "std(): degrees of freedom is <= 0. Correction should be strictly less than the reduction factor (input numel divided by output numel).",
            Warning::WhereUint8Condition => "where received a uint8 condition tensor. This behavior is deprecated and will be removed in a future version of PyTorch. Use a boolean condition instead.",
        }
    }
}

/// Where a call writes its result.
#[derive(Debug)]
pub enum Dest<'a, O> {
    /// A new tensor.
    New,
    /// Into the first operand (`a op= b`).
    InPlace,
    /// Into the caller's `out`, which must have the broadcast shape.
    Out(&'a O),
}

impl<O> Clone for Dest<'_, O> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<O> Copy for Dest<'_, O> {}

/// Views of every input expanded to their common shape.
pub fn broadcast_tensors(inputs: &[&Tensor]) -> Result<Vec<Tensor>> {
    let shapes: Vec<&[usize]> = try_collect(inputs.iter().map(|t| t.shape()))?;
    let shape = broadcast_shapes_n(&shapes)?;
    let mut views = super::alloc::try_vec(inputs.len())?;
    for t in inputs {
        views.push(t.expand_to(&shape)?);
    }
    Ok(views)
}

/// Whether work on these tensors is sure to be short (below the parallel threshold, so it stays
/// on the calling thread): the product over dimensions (right-aligned) of their largest size,
/// which bounds the elements of any result broadcast from them, and of the legacy 1-D fallback
/// (as many elements as one operand), is below the threshold. Given only the written tensor when
/// there is one (its elements are the work). Callers decide from it whether to hold locks
/// meanwhile. Always inlined, as plain loops: every tiny call asks it first, and left to the
/// compiler it was a call of its own for two tensors (about 45 instructions for (4,)+(4,)).
#[inline(always)]
pub fn is_small<const K: usize>(tensors: [&Tensor; K]) -> bool {
    work_bound(tensors.map(Tensor::shape)) < parallel::threshold()
}

/// See [`is_small`].
#[inline(always)]
fn work_bound<const K: usize>(shapes: [&[usize]; K]) -> usize {
    let mut ndim = 0;
    for s in shapes {
        ndim = ndim.max(s.len());
    }
    let mut n = 1usize;
    for i in 1..=ndim {
        let mut largest = 1;
        for s in shapes {
            if let Some(d) = s.len().checked_sub(i) {
                largest = largest.max(s[d]);
            }
        }
        n = n.saturating_mul(largest);
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::shape::broadcast_shapes;

    /// The bound that decides whether an operation holds its operands' locks while it runs
    /// covers every result broadcast from the operands (and the legacy fallback's), and is exact
    /// when one shape contains the other.
    #[test]
    fn work_bound_covers_every_result() {
        assert_eq!(work_bound([&[1, 1024][..], &[1024][..]]), 1024);
        assert_eq!(work_bound([&[29, 1024][..], &[1024][..]]), 29 * 1024);
        assert_eq!(work_bound([&[4096, 1][..], &[1, 4096][..]]), 4096 * 4096);
        assert_eq!(work_bound([&[][..], &[][..]]), 1);
        let shapes: [&[usize]; 9] = [
            &[],
            &[0],
            &[3],
            &[1, 3],
            &[2, 1],
            &[2, 3],
            &[3, 2],
            &[4, 0, 3],
            &[5, 1, 1, 1],
        ];
        for a in shapes {
            for b in shapes {
                let bound = work_bound([a, b]);
                if let Ok(s) = broadcast_shapes(a, b) {
                    assert!(bound >= s.iter().product::<usize>(), "{a:?} {b:?}");
                }
                let (na, nb) = (a.iter().product::<usize>(), b.iter().product::<usize>());
                assert!(bound >= na && bound >= nb, "{a:?} {b:?}");
            }
        }
    }
}
