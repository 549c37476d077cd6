//! The one iterator of elementwise work and reductions, in the spirit of PyTorch's TensorIterator and ndarray's
//! `Zip`: from the operands' geometries alone (any count: operand 0 the written one, the others
//! read and broadcast to its shape), the iteration shape and each operand's strides (0 on
//! broadcast dimensions), with size-1 dimensions dropped, dimensions ordered by the written
//! operand's strides, and adjacent dimensions merged wherever every operand allows it. Dimensions
//! stay inline up to [`INLINE_NDIM`] (on the heap past it, allocated fallibly).
//!
//! Every elementwise walk goes through it: binary operations and their number forms, `where`,
//! unary and ternary operations, fills, casts and copies, and the passes of fused expressions.
//! Small work (fewer than [`parallel::SMALL_ELEMS`](super::parallel::SMALL_ELEMS) elements) is
//! built in logical order, without sorting (with few elements the order hardly matters), and is
//! walked run by run on the calling thread ([`Iter::is_small`]); larger work is walked in blocks
//! of runs, or in 2-D tiles when an input is transposed ([`tile`]), shared among threads by
//! [`parallel::run_rows`](super::parallel::run_rows).
//!
//! The reductions take their iteration space from the same builder given a mask of reduced
//! dimensions ([`Iter::with_reduced`], in [`reduced`]): the kept dimensions outermost in the
//! result's order, the reduced ones innermost in the order they are summed, the two groups never
//! merged with each other. Row-major order over it is output after output, each output's elements
//! in the order they are summed, and the reductions walk it with the same cursor
//! ([`Iter::run_walk`]): an output's stream is a range of positions, and the rows of
//! a group of columns are the positions of its first column's stream.
mod reduced;
mod tile;
mod walk;

pub use tile::Tiling;
pub use walk::RunWalk;

use super::alloc::{alloc_error, try_small_elem};
use super::error::{Error, Result};
use super::parallel::SMALL_ELEMS;
use super::shape::{Strides, MAX_NDIM};
use smallvec::SmallVec;

/// Dimensions an iterator holds inline, after dropping size-1 dimensions and merging: small work
/// that needs more is walked as large work (sorted, on the heap).
pub const INLINE_NDIM: usize = 6;

/// Operand 0 is the written one; the rest are read. Strides are in elements.
#[derive(Debug, Clone, PartialEq)]
pub struct Iter<const N: usize> {
    /// Iteration sizes, outermost first. Empty for a single element.
    shape: SmallVec<[usize; INLINE_NDIM]>,
    /// Each dimension's strides, one per operand.
    strides: SmallVec<[[isize; N]; INLINE_NDIM]>,
    numel: usize,
    /// Built in logical order for work that stays on the calling thread, run by run.
    small: bool,
    /// A reduction's iterator ([`Iter::with_reduced`]): how many of the dimensions, the innermost
    /// ones, are reduced (0 for elementwise work).
    reduced_ndim: usize,
    /// A reduction's kept dimension innermost by its order, and whether the innermost reduced
    /// dimension lies inside it (see [`Iter::inner_kept`]).
    inner_kept: Option<(usize, bool)>,
}

/// Strides of an operand of shape `shape`/`strides` broadcast to `target` (right-aligned):
/// 0 where the operand has size 1 or no dimension.
pub fn broadcast_strides(shape: &[usize], strides: &[isize], target: &[usize]) -> Result<Strides> {
    let mut out: Strides = try_small_elem(0, target.len())?;
    for (d, o) in out.iter_mut().enumerate() {
        *o = broadcast_stride(shape, strides, target, d);
    }
    Ok(out)
}

/// The stride along dimension `d` of `target` of an operand broadcast to it (see
/// [`broadcast_strides`]).
#[inline(always)]
fn broadcast_stride(shape: &[usize], strides: &[isize], target: &[usize], d: usize) -> isize {
    match (d + shape.len()).checked_sub(target.len()) {
        Some(i) if shape[i] == target[d] && shape[i] != 1 => strides[i],
        _ => 0,
    }
}

/// Sorts dimension indices by `key`, largest first, keeping equal keys in their order: an
/// insertion sort (at most 64 dimensions, usually already in order, and no buffer to allocate).
#[inline]
fn sort_outermost_first(dims: &mut [u8], key: impl Fn(usize) -> usize) {
    for i in 1..dims.len() {
        let mut j = i;
        while j > 0 && key(dims[j - 1] as usize) < key(dims[j] as usize) {
            dims.swap(j - 1, j);
            j -= 1;
        }
    }
}

impl<const N: usize> Iter<N> {
    /// The iterator over `shape` for operands whose strides (`strides[k]`) are already aligned to
    /// it, walked as large work (sorted, possibly tiled or shared among threads). At most
    /// [`MAX_NDIM`] dimensions; fails only when memory for the dimensions is refused.
    pub fn new(shape: &[usize], strides: [&[isize]; N]) -> Result<Iter<N>> {
        let mut iter = Iter::empty();
        iter.build(shape, |k, d| strides[k][d], false)?;
        Ok(iter)
    }

    /// The iterator over `shape` for operands of these shapes and strides (operand 0 of `shape`
    /// itself; the others broadcastable to it, right-aligned). Small work keeps the logical
    /// order and is walked serially (see [`Iter::is_small`]).
    pub fn broadcast(shape: &[usize], operands: [(&[usize], &[isize]); N]) -> Result<Iter<N>> {
        let mut iter = Iter::empty();
        iter.rebuild_broadcast(shape, operands)?;
        Ok(iter)
    }

    /// An iterator over nothing yet, to be built where it lies with [`Iter::rebuild_broadcast`]:
    /// each copy of an iterator (a few hundred bytes) costs small work more than its walk's
    /// bookkeeping.
    pub fn empty() -> Iter<N> {
        Iter {
            shape: SmallVec::new(),
            strides: SmallVec::new(),
            numel: 0,
            small: false,
            reduced_ndim: 0,
            inner_kept: None,
        }
    }

    /// Makes this the iterator [`Iter::broadcast`] returns for these operands.
    #[inline]
    pub fn rebuild_broadcast(
        &mut self,
        shape: &[usize],
        operands: [(&[usize], &[isize]); N],
    ) -> Result<()> {
        let stride = |k: usize, d: usize| {
            let (s, st) = operands[k];
            broadcast_stride(s, st, shape, d)
        };
        if shape.iter().product::<usize>() < SMALL_ELEMS {
            self.build(shape, stride, true)?;
            if self.ndim() <= INLINE_NDIM {
                return Ok(());
            }
        }
        self.build(shape, stride, false)
    }

    /// The one builder: drops size-1 dimensions, orders the rest by the written operand's strides
    /// (largest outside) unless `small`, and merges each dimension into the one outside it
    /// wherever every operand's strides allow. Allocates nothing within [`INLINE_NDIM`] dimensions.
    fn build(
        &mut self,
        shape: &[usize],
        stride: impl Fn(usize, usize) -> isize,
        small: bool,
    ) -> Result<()> {
        if shape.len() > MAX_NDIM {
            return Err(Error::invalid(format_args!(
                "{} dimensions, more than the {MAX_NDIM} supported",
                shape.len()
            )));
        }
        let iter = self;
        iter.shape.clear();
        iter.strides.clear();
        iter.numel = shape.iter().product();
        iter.small = small;
        iter.reduced_ndim = 0;
        iter.inner_kept = None;
        // The dimensions that iterate, outermost first.
        let mut dims = [0u8; MAX_NDIM];
        let mut n = 0;
        for (d, &size) in shape.iter().enumerate() {
            if size != 1 {
                dims[n] = d as u8;
                n += 1;
            }
        }
        let dims = &mut dims[..n];
        if !small {
            // By the written operand's stride, largest first.
            sort_outermost_first(dims, |d| stride(0, d).unsigned_abs());
        }
        iter.reserve(n)?;
        for &d in dims.iter() {
            let d = d as usize;
            iter.push_dim(shape[d], std::array::from_fn(|k| stride(k, d)), 0);
        }
        Ok(())
    }

    /// Room for `n` dimensions up front, fallibly: pushes within it then never allocate.
    fn reserve(&mut self, n: usize) -> Result<()> {
        self.shape
            .try_reserve_exact(n)
            .map_err(|_| alloc_error::<usize>(n))?;
        self.strides
            .try_reserve_exact(n)
            .map_err(|_| alloc_error::<[isize; N]>(n))?;
        Ok(())
    }

    /// Appends a dimension of `size` with these strides, merged into the last one when that one
    /// is not among the first `floor` dimensions and steps exactly `size` times as far for every
    /// operand. Within the room reserved, never allocates.
    #[inline(always)]
    fn push_dim(&mut self, size: usize, strides: [isize; N], floor: usize) {
        // Wrapping: a product that overflows cannot equal a real stride anyway.
        let merges = self.strides.len() > floor
            && self.strides.last().is_some_and(|outer| {
                (0..N).all(|k| outer[k] == strides[k].wrapping_mul(size as isize))
            });
        if merges {
            *self.shape.last_mut().unwrap() *= size;
            *self.strides.last_mut().unwrap() = strides;
        } else {
            self.shape.push(size);
            self.strides.push(strides);
        }
    }

    /// The iteration sizes, outermost first (none for a single element).
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// How many dimensions remain after dropping and merging.
    pub fn ndim(&self) -> usize {
        self.shape.len()
    }

    /// Operand `k`'s stride, in elements, along each dimension of [`Iter::shape`].
    pub fn strides(&self, k: usize) -> impl ExactSizeIterator<Item = isize> + '_ {
        self.strides.iter().map(move |s| s[k])
    }

    /// Elements in all (those of the shape before dropping and merging).
    pub fn numel(&self) -> usize {
        self.numel
    }

    /// Work small enough to walk run by run on the calling thread: never tiled, shared or
    /// streamed.
    pub fn is_small(&self) -> bool {
        self.small
    }

    /// Each operand's stride in bytes along the innermost dimension (0 for a single element).
    pub fn inner_byte_strides(&self, itemsize: [usize; N]) -> [isize; N] {
        match self.strides.last() {
            Some(s) => std::array::from_fn(|k| s[k] * itemsize[k] as isize),
            None => [0; N],
        }
    }

    /// Operand `k`'s stride in bytes along dimension `d`.
    #[inline(always)]
    fn byte_stride(&self, k: usize, d: usize, itemsize: [usize; N]) -> isize {
        self.strides[d][k] * itemsize[k] as isize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn iter3(shape: &[usize], s: [&[isize]; 3]) -> Iter<3> {
        Iter::new(shape, s).unwrap()
    }

    fn strides_of<const N: usize>(it: &Iter<N>, k: usize) -> Vec<isize> {
        it.strides(k).collect()
    }

    #[test]
    fn contiguous_operands_coalesce_to_one_dimension() {
        let p = iter3(&[4, 5, 6], [&[30, 6, 1], &[30, 6, 1], &[30, 6, 1]]);
        assert_eq!(p.shape(), &[120]);
        assert_eq!(
            (0..3).map(|k| strides_of(&p, k)[0]).collect::<Vec<_>>(),
            vec![1, 1, 1]
        );
    }

    #[test]
    fn row_broadcast_keeps_two_dimensions() {
        // (4096,4096) + (4096,): b has stride 0 on the outer dimension.
        let b = broadcast_strides(&[4096], &[1], &[4096, 4096]).unwrap();
        assert_eq!(&b[..], &[0, 1]);
        let p = iter3(&[4096, 4096], [&[4096, 1], &[4096, 1], &b]);
        assert_eq!(p.shape(), &[4096, 4096]);
        assert_eq!(strides_of(&p, 2), vec![0, 1]);
    }

    #[test]
    fn size_one_dimensions_disappear() {
        // (5,1,4,1) + (3,1,1) -> (5,3,4,1)
        let a = broadcast_strides(&[5, 1, 4, 1], &[4, 4, 1, 1], &[5, 3, 4, 1]).unwrap();
        let b = broadcast_strides(&[3, 1, 1], &[1, 1, 1], &[5, 3, 4, 1]).unwrap();
        assert_eq!(&a[..], &[4, 0, 1, 0]);
        assert_eq!(&b[..], &[0, 1, 0, 0]);
        let p = iter3(&[5, 3, 4, 1], [&[12, 4, 1, 1], &a, &b]);
        assert_eq!(p.shape(), &[5, 3, 4]);
        assert_eq!(p.numel(), 60);
    }

    #[test]
    fn scalar_and_channel_broadcasts_merge_where_they_can() {
        // (32,64,56,56) + (1,64,1,1): the two spatial dims merge; channel stays apart.
        let b = broadcast_strides(&[1, 64, 1, 1], &[64, 1, 1, 1], &[32, 64, 56, 56]).unwrap();
        let c = [200704, 3136, 56, 1];
        let p = iter3(&[32, 64, 56, 56], [&c, &c, &b]);
        assert_eq!(p.shape(), &[32, 64, 3136]);
        assert_eq!(strides_of(&p, 2), vec![0, 1, 0]);
    }

    /// The broadcasting builder gives the aligned one's result for large work, and keeps the
    /// logical order for small work (where a written operand in another order is not sorted).
    #[test]
    fn broadcast_builder_orders_only_large_work() {
        let shape = [3usize, 4];
        let out_t: [isize; 2] = [1, 3]; // a transposed written operand
        let small = Iter::broadcast(&shape, [(&shape[..], &out_t[..]), (&[4][..], &[1][..])]);
        let small = small.unwrap();
        assert!(small.is_small());
        assert_eq!(small.shape(), &[3, 4]);
        assert_eq!(strides_of(&small, 0), vec![1, 3]);
        assert_eq!(strides_of(&small, 1), vec![0, 1]);

        let shape = [300usize, 400];
        let out_t: [isize; 2] = [1, 300];
        let large = Iter::broadcast(&shape, [(&shape[..], &out_t[..]), (&[400][..], &[1][..])]);
        let large = large.unwrap();
        assert!(!large.is_small());
        assert_eq!(large.shape(), &[400, 300]);
        assert_eq!(strides_of(&large, 1), vec![1, 0]);
        let b = broadcast_strides(&[400], &[1], &shape).unwrap();
        assert_eq!(large, Iter::new(&shape, [&out_t[..], &b[..]]).unwrap());
    }

    /// Small work that still has more than [`INLINE_NDIM`] dimensions after merging is walked as
    /// large work.
    #[test]
    fn small_work_past_the_inline_dimensions_is_large() {
        let shape = [2usize; 7];
        let strided: Vec<isize> = (0..7).map(|d| 3isize.pow(6 - d)).collect();
        let it = Iter::broadcast(&shape, [(&shape[..], &strided[..])]).unwrap();
        assert!(!it.is_small());
        assert_eq!(it.ndim(), 7);
    }
}
