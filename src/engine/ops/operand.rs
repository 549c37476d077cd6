//! An operand as a call's checks see it: a tensor, or its type and geometry alone (the planner).

use crate::engine::dtype::{DType, Rank};
use crate::engine::error::{Error, Result};
use crate::engine::overlap;
use crate::engine::shape::numel;
use crate::engine::tensor::Tensor;

/// An operand without its memory: its type and geometry (strides in elements). What the planner
/// is given, and all that the checks and decisions before a call's first allocation look at.
#[derive(Debug, Clone, Copy)]
pub struct Geometry<'a> {
    pub dtype: DType,
    pub shape: &'a [usize],
    pub strides: &'a [isize],
    /// A wrapped number (see [`Tensor::is_wrapped_number`]).
    pub wrapped: bool,
}

impl Geometry<'_> {
    pub(super) fn numel(&self) -> usize {
        numel(self.shape)
    }

    /// How it takes part in type promotion.
    pub(crate) fn rank(&self) -> Rank {
        match self.wrapped {
            true => Rank::Wrapped,
            false => Rank::of_tensor(self.shape.len()),
        }
    }
}

/// What the checks of a call need of an operand: a tensor (the call itself), or its geometry
/// alone (the planner).
pub trait Operand {
    fn geometry(&self) -> Geometry<'_>;
    /// May this operand be written, given the call's inputs? It may not overlap itself, nor
    /// partly overlap an input (docs/semantics.md, section 8), and memory shared read-only is
    /// never written. A geometry has no memory, so only what its strides settle is checked
    /// (elements sharing a location).
    fn check_writable(&self, inputs: &[&Self]) -> Result<()>;
}

impl Operand for Tensor {
    #[inline(always)]
    fn geometry(&self) -> Geometry<'_> {
        Geometry {
            dtype: self.dtype(),
            shape: self.shape(),
            strides: self.strides(),
            wrapped: self.is_wrapped_number(),
        }
    }

    #[inline(always)]
    fn check_writable(&self, inputs: &[&Self]) -> Result<()> {
        if self.is_read_only() {
            return Err(Error::ReadOnly);
        }
        // A row-major tensor (a flag it keeps) has no two elements in one place.
        if !self.is_row_major() && overlap::has_internal_overlap(self)? {
            return Err(Error::InternalOverlap);
        }
        for input in inputs {
            // Separate blocks of memory, the common case, tested here without a call.
            let ((d0, d1), (i0, i1)) = (self.storage_range(), input.storage_range());
            if d1 <= i0 || i1 <= d0 {
                continue;
            }
            if overlap::overlaps_partially(self, input)? {
                return Err(Error::PartialOverlap);
            }
        }
        Ok(())
    }
}

impl Operand for Geometry<'_> {
    fn geometry(&self) -> Geometry<'_> {
        *self
    }

    fn check_writable(&self, _inputs: &[&Self]) -> Result<()> {
        if overlap::overlaps_itself(self.shape, self.strides)? {
            return Err(Error::InternalOverlap);
        }
        Ok(())
    }
}
