//! How the elements of an elementwise computation are walked: a small plan on the calling thread,
//! or a full plan shared among threads.

use super::operand::{Geometry, Operand as _};
use super::report::LoopKind;
use crate::engine::alloc::try_small;
use crate::engine::error::Result;
use crate::engine::kernels::Tile;
use crate::engine::parallel;
use crate::engine::plan::{broadcast_strides, Plan, SmallPlan};
use crate::engine::shape::{numel, Dims, Strides};
use crate::engine::tensor::Tensor;

/// Runs `kernel(ptrs, byte_strides, len)` over the elements of `operands[0]` (the written one)
/// and the others broadcast to its shape, walked as [`Walk`] decides.
///
/// # Safety
/// `kernel` must be sound for runs of these views at their types; the written operand may alias
/// an input only exactly.
pub(crate) unsafe fn run_elementwise<const N: usize>(
    operands: [&Tensor; N],
    kernel: impl Fn([*mut u8; N], [isize; N], usize) + Sync,
) -> Result<()> {
    let walk = Walk::new(operands[0].shape(), operands.map(Tensor::geometry))?;
    // SAFETY: the walk covers operand 0's view and the others broadcast to it, all within their
    // storages; the kernel is sound for them (this function's contract).
    unsafe { walk.run(operands.map(Tensor::data_ptr), kernel) };
    Ok(())
}

/// [`run_elementwise`], by tiles of several runs (see [`Tile`]).
///
/// # Safety
/// As [`run_elementwise`], for every run of every tile.
pub(crate) unsafe fn run_elementwise_rows<const N: usize>(
    operands: [&Tensor; N],
    tile: impl Fn(&Tile<N>) + Sync,
) -> Result<()> {
    let walk = Walk::new(operands[0].shape(), operands.map(Tensor::geometry))?;
    // SAFETY: as in `run_elementwise`.
    unsafe { walk.run_rows(operands.map(Tensor::data_ptr), tile) };
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

/// How the elements of a computation are walked: operand 0 is the written one, of the walk's
/// shape; the others broadcast to it. Decided from geometry alone.
pub(super) enum Walk<const N: usize> {
    /// Small work: a stack-only plan, on the calling thread (building the full plan would cost
    /// more than the arithmetic).
    Small(SmallPlan<N>, [usize; N]),
    /// A full plan, run by [`parallel::run`].
    Full(Plan<N>, [usize; N]),
}

impl<const N: usize> Walk<N> {
    pub(super) fn new(shape: &[usize], operands: [Geometry<'_>; N]) -> Result<Walk<N>> {
        let itemsize = operands.map(|g| g.dtype.size());
        if numel(shape) < parallel::SMALL_ELEMS {
            let small =
                std::array::from_fn(|k| (operands[k].shape, operands[k].strides, itemsize[k]));
            if let Some(plan) = SmallPlan::new(shape, small) {
                return Ok(Walk::Small(plan, itemsize));
            }
        }
        let mut strides: [Strides; N] = std::array::from_fn(|_| Strides::new());
        for (k, g) in operands.iter().enumerate().skip(1) {
            strides[k] = broadcast_strides(g.shape, g.strides, shape)?;
        }
        let views: [&[isize]; N] = std::array::from_fn(|k| {
            if k == 0 {
                operands[0].strides
            } else {
                &strides[k][..]
            }
        });
        Ok(Walk::Full(Plan::new(shape, views)?, itemsize))
    }

    /// The iterated sizes, the inner loop and the thread count.
    pub(super) fn describe(&self) -> Result<(Dims, LoopKind, usize)> {
        // Inner strides in bytes, to compare with the element sizes.
        let (shape, inner, itemsize, tiled, threads) = match self {
            Walk::Small(plan, itemsize) => (plan.shape(), plan.inner_strides(), itemsize, false, 1),
            Walk::Full(plan, itemsize) => {
                let inner = std::array::from_fn(|k| {
                    plan.strides[k]
                        .last()
                        .map_or(0, |&s| s * itemsize[k] as isize)
                });
                let threads = parallel::threads_for(plan.numel);
                (
                    &plan.shape[..],
                    inner,
                    itemsize,
                    plan.tiling(*itemsize).is_some(),
                    threads,
                )
            }
        };
        let unit = |k: usize| inner[k] == itemsize[k] as isize;
        let kind = if tiled {
            LoopKind::Tiled
        } else if shape.is_empty() || (0..N).all(unit) {
            LoopKind::Contiguous
        } else if unit(0) && (1..N).all(|k| unit(k) || inner[k] == 0) {
            LoopKind::Broadcast
        } else {
            LoopKind::Strided
        };
        Ok((try_small(shape)?, kind, threads))
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

    /// Runs `tile` over every tile of runs (a small walk gives one run at a time).
    ///
    /// # Safety
    /// `base` holds each operand's first element, every element the walk reaches is valid for
    /// the kernel's accesses, and the written operand aliases an input only exactly.
    unsafe fn run_rows(&self, base: [*mut u8; N], tile: impl Fn(&Tile<N>) + Sync) {
        match self {
            // SAFETY: forwarded.
            Walk::Small(plan, _) => unsafe {
                plan.for_each_run(base, |p, s, n| tile(&Tile::run(p, s, n)))
            },
            Walk::Full(plan, itemsize) => parallel::run_rows(plan, base, *itemsize, tile),
        }
    }
}
