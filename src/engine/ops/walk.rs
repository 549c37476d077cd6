//! How the elements of an elementwise computation are walked: the one iterator
//! ([`crate::engine::iter`]) over the operands' geometries, with their element sizes.

use super::operand::{Geometry, Operand as _};
use super::report::LoopKind;
use crate::engine::alloc::try_small;
use crate::engine::error::Result;
use crate::engine::iter::Iter;
use crate::engine::kernels::Tile;
use crate::engine::parallel;
use crate::engine::shape::Dims;
use crate::engine::tensor::Tensor;

/// Runs `kernel(ptrs, byte_strides, len)` over the elements of `operands[0]` (the written one)
/// and the others broadcast to its shape.
///
/// # Safety
/// `kernel` must be sound for runs of these views at their types; the written operand may alias
/// an input only exactly.
pub(crate) unsafe fn run_elementwise<const N: usize>(
    operands: [&Tensor; N],
    kernel: impl Fn([*mut u8; N], [isize; N], usize) + Sync,
) -> Result<()> {
    // SAFETY: the walk covers operand 0's view and the others broadcast to it, all within their
    // storages; the kernel is sound for them (this function's contract).
    unsafe { run_elementwise_rows(operands, |tile| tile.for_each_run(&kernel)) }
}

/// [`run_elementwise`], by tiles of several runs (see [`Tile`]).
///
/// # Safety
/// As [`run_elementwise`], for every run of every tile.
pub(crate) unsafe fn run_elementwise_rows<const N: usize>(
    operands: [&Tensor; N],
    tile: impl Fn(&Tile<N>) + Sync,
) -> Result<()> {
    // Built where it lies (see `Iter::empty`).
    let mut iter = Iter::empty();
    let geometry = operands.map(Tensor::geometry);
    iter.rebuild_broadcast(operands[0].shape(), geometry.map(|g| (g.shape, g.strides)))?;
    let itemsize = geometry.map(|g| g.dtype.size());
    // SAFETY: as in `run_elementwise`.
    parallel::run_rows(&iter, operands.map(Tensor::data_ptr), itemsize, tile);
    Ok(())
}

/// The iterated sizes, inner loop and thread count of [`run_elementwise`] over operands of these
/// geometries (operand 0 the written one, of `shape`): what a fused expression's pass reports.
pub(crate) fn describe_elementwise(
    shape: &[usize],
    operands: &[Geometry<'_>],
) -> Result<(Dims, LoopKind, usize)> {
    macro_rules! with_n {
        ($($n:literal)*) => {
            match operands.len() {
                $($n => Walk::<$n>::new(shape, std::array::from_fn(|k| operands[k]))?.describe(),)*
                n => unreachable!("{n} operands: a pass takes at most 9"),
            }
        };
    }
    with_n!(1 2 3 4 5 6 7 8 9)
}

/// The walk of a computation: operand 0 is the written one, of the walk's shape; the others
/// broadcast to it. Decided from geometry alone, so that the planner describes exactly what the
/// call runs.
pub(super) struct Walk<const N: usize> {
    iter: Iter<N>,
    itemsize: [usize; N],
}

impl<const N: usize> Walk<N> {
    pub(super) fn new(shape: &[usize], operands: [Geometry<'_>; N]) -> Result<Walk<N>> {
        let mut walk = Walk {
            iter: Iter::empty(),
            itemsize: operands.map(|g| g.dtype.size()),
        };
        walk.iter
            .rebuild_broadcast(shape, operands.map(|g| (g.shape, g.strides)))?;
        Ok(walk)
    }

    /// The iterated sizes, the inner loop and the thread count.
    pub(super) fn describe(&self) -> Result<(Dims, LoopKind, usize)> {
        let (iter, itemsize) = (&self.iter, self.itemsize);
        let (tiled, threads) = match iter.is_small() {
            true => (false, 1),
            false => (
                iter.tiling(itemsize).is_some(),
                parallel::threads_for(iter.numel()),
            ),
        };
        // Inner strides in bytes, to compare with the element sizes.
        let inner = iter.inner_byte_strides(itemsize);
        let unit = |k: usize| inner[k] == itemsize[k] as isize;
        let kind = if tiled {
            LoopKind::Tiled
        } else if iter.ndim() == 0 || (0..N).all(unit) {
            LoopKind::Contiguous
        } else if unit(0) && (1..N).all(|k| unit(k) || inner[k] == 0) {
            LoopKind::Broadcast
        } else {
            LoopKind::Strided
        };
        Ok((try_small(iter.shape())?, kind, threads))
    }

    /// Runs `kernel(ptrs, byte_strides, len)` over every run.
    ///
    /// # Safety
    /// As [`Walk::run_rows`].
    pub(super) unsafe fn run(
        &self,
        base: [*mut u8; N],
        kernel: impl Fn([*mut u8; N], [isize; N], usize) + Sync,
    ) {
        // SAFETY: forwarded.
        unsafe { self.run_rows(base, |tile| tile.for_each_run(&kernel)) }
    }

    /// Runs `tile` over every tile of runs (small work gives one run at a time).
    ///
    /// # Safety
    /// `base` holds each operand's first element, every element the walk reaches is valid for
    /// the kernel's accesses, and the written operand aliases an input only exactly.
    unsafe fn run_rows(&self, base: [*mut u8; N], tile: impl Fn(&Tile<N>) + Sync) {
        parallel::run_rows(&self.iter, base, self.itemsize, tile)
    }
}
