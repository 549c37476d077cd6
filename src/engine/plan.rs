//! The execution plan, TensorIterator-style: from metadata alone, the iteration shape and each
//! operand's strides (0 on broadcast dimensions), with size-1 dimensions dropped, dimensions
//! ordered by the written operand's strides, and adjacent dimensions merged wherever every
//! operand allows it. Executing the plan walks it in runs along the innermost dimension, handed
//! to the kernels a block of runs at a time, or in 2-D tiles when an input is transposed.
use super::alloc::try_small_elem;
use super::error::{Error, Result};
use super::shape::{Dims, Strides, MAX_NDIM};
use smallvec::SmallVec;

/// Operand 0 is the written one; the rest are read. Strides are in elements.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan<const N: usize> {
    /// Iteration sizes, outermost first. Empty for a single element.
    pub shape: Dims,
    pub strides: [Strides; N],
    pub numel: usize,
}

/// Strides of an operand of shape `shape`/`strides` broadcast to `target` (right-aligned):
/// 0 where the operand has size 1 or no dimension.
pub fn broadcast_strides(shape: &[usize], strides: &[isize], target: &[usize]) -> Result<Strides> {
    let lead = target.len() - shape.len();
    let mut out: Strides = try_small_elem(0, target.len())?;
    for (i, (&size, &stride)) in shape.iter().zip(strides).enumerate() {
        if size == target[lead + i] && size != 1 {
            out[lead + i] = stride;
        }
    }
    Ok(out)
}

impl<const N: usize> Plan<N> {
    /// `strides[k]` must already be aligned to `shape` (see [`broadcast_strides`]); at most
    /// [`MAX_NDIM`] dimensions. Fails only when memory for more than 5 dimensions is refused.
    pub fn new(shape: &[usize], strides: [&[isize]; N]) -> Result<Plan<N>> {
        if shape.len() > MAX_NDIM {
            return Err(Error::invalid(format_args!(
                "{} dimensions, more than the {MAX_NDIM} supported",
                shape.len()
            )));
        }
        let numel = shape.iter().product();
        if shape.len() == 1 && shape[0] != 1 {
            // One dimension: nothing to drop, order or merge.
            return Ok(Plan {
                shape: SmallVec::from_elem(shape[0], 1),
                strides: std::array::from_fn(|k| SmallVec::from_elem(strides[k][0], 1)),
                numel,
            });
        }
        // Keep the dimensions that iterate, in the written operand's order: largest stride outside.
        let mut dims: SmallVec<[usize; 6]> = try_small_elem(0, shape.len())?;
        dims.clear(); // keeps the capacity: the extend below does not allocate
        dims.extend((0..shape.len()).filter(|&d| shape[d] != 1));
        dims.sort_by_key(|&d| std::cmp::Reverse(strides[0][d].unsigned_abs()));

        // Room for every dimension up front: the pushes below then never allocate.
        let mut out_shape: Dims = try_small_elem(0, dims.len())?;
        out_shape.clear();
        let mut out_strides: [Strides; N] = std::array::from_fn(|_| SmallVec::new());
        for s in &mut out_strides {
            s.try_reserve_exact(dims.len())
                .map_err(|_| crate::engine::alloc::alloc_error::<isize>(dims.len()))?;
        }
        for &d in &dims {
            let size = shape[d];
            let mergeable = !out_shape.is_empty()
                && (0..N).all(|k| *out_strides[k].last().unwrap() == strides[k][d] * size as isize);
            if mergeable {
                *out_shape.last_mut().unwrap() *= size;
                for k in 0..N {
                    *out_strides[k].last_mut().unwrap() = strides[k][d];
                }
            } else {
                out_shape.push(size);
                for k in 0..N {
                    out_strides[k].push(strides[k][d]);
                }
            }
        }
        Ok(Plan {
            shape: out_shape,
            strides: out_strides,
            numel,
        })
    }

    /// Like [`Plan::for_each_run`], but hands over whole blocks of consecutive full runs at once:
    /// `block(ptrs, strides, row_strides, rows, len)` covers `rows` runs of `len` elements along
    /// the second-innermost dimension, run `r` starting at `ptrs[k] + r * row_strides[k]`
    /// (`rows` is 1 for a partial run at either end of the range). A kernel that loops over the
    /// rows itself saves the per-run call overhead, which matters for short runs.
    ///
    /// # Safety
    /// As [`Plan::for_each_run`].
    pub unsafe fn for_each_block(
        &self,
        base: [*mut u8; N],
        itemsize: [usize; N],
        start: usize,
        end: usize,
        block: &mut impl FnMut([*mut u8; N], [isize; N], [isize; N], usize, usize),
    ) {
        if start >= end {
            return;
        }
        let nd = self.shape.len();
        if nd < 2 {
            // SAFETY: forwarded.
            unsafe {
                self.for_each_run(base, itemsize, start, end, &mut |p, s, n| {
                    block(p, s, [0; N], 1, n)
                })
            };
            return;
        }
        let bs = |k: usize, d: usize| self.strides[k][d] * itemsize[k] as isize;
        let inner_stride: [isize; N] = std::array::from_fn(|k| bs(k, nd - 1));
        let row_stride: [isize; N] = std::array::from_fn(|k| bs(k, nd - 2));
        let (inner_len, rows_n) = (self.shape[nd - 1], self.shape[nd - 2]);
        let Cursor { mut idx, mut off } = self.cursor_at(start, itemsize);
        let mut pos = start;
        loop {
            let ptrs: [*mut u8; N] = std::array::from_fn(|k| base[k].wrapping_offset(off[k]));
            let left = end - pos;
            let (rows, len) = if idx[nd - 1] == 0 && left >= inner_len {
                ((left / inner_len).min(rows_n - idx[nd - 2]), inner_len)
            } else {
                (1, (inner_len - idx[nd - 1]).min(left))
            };
            block(ptrs, inner_stride, row_stride, rows, len);
            pos += if rows > 1 { rows * inner_len } else { len };
            if pos >= end {
                return;
            }
            // Advance the odometer past the block.
            if rows > 1 || len + idx[nd - 1] == inner_len {
                for (k, o) in off.iter_mut().enumerate() {
                    *o += rows as isize * row_stride[k] - idx[nd - 1] as isize * inner_stride[k];
                }
                idx[nd - 1] = 0;
                idx[nd - 2] += rows;
                self.carry(&mut idx, &mut off, nd - 2, itemsize);
            } else {
                // A partial run that ended at `end`: nothing follows.
                return;
            }
        }
    }

    /// Calls `inner(ptrs, strides, len)` for consecutive runs along the innermost dimension that
    /// cover elements `[start, end)` of the plan, in row-major order. `base` holds each operand's
    /// pointer to its first element; strides are converted to bytes with `itemsize`.
    ///
    /// # Safety
    /// For every element of the plan, `base[k] + offset * itemsize[k]` must be valid for the
    /// access the kernel makes.
    pub unsafe fn for_each_run(
        &self,
        base: [*mut u8; N],
        itemsize: [usize; N],
        start: usize,
        end: usize,
        inner: &mut impl FnMut([*mut u8; N], [isize; N], usize),
    ) {
        if start >= end {
            return;
        }
        let nd = self.shape.len();
        if nd == 0 {
            inner(base, [0; N], 1);
            return;
        }
        let bs = |k: usize, d: usize| self.strides[k][d] * itemsize[k] as isize;
        let inner_stride: [isize; N] = std::array::from_fn(|k| bs(k, nd - 1));
        let inner_len = self.shape[nd - 1];
        if nd == 1 {
            let ptrs = std::array::from_fn(|k| base[k].wrapping_offset(start as isize * bs(k, 0)));
            inner(ptrs, inner_stride, end - start);
            return;
        }
        let Cursor { mut idx, mut off } = self.cursor_at(start, itemsize);
        let mut pos = start;
        loop {
            let len = (inner_len - idx[nd - 1]).min(end - pos);
            let ptrs: [*mut u8; N] = std::array::from_fn(|k| base[k].wrapping_offset(off[k]));
            inner(ptrs, inner_stride, len);
            pos += len;
            if pos >= end {
                return;
            }
            // Advance the odometer (the run ended at the end of the innermost dimension).
            idx[nd - 1] += len;
            for (k, o) in off.iter_mut().enumerate() {
                *o += len as isize * inner_stride[k];
            }
            self.carry(&mut idx, &mut off, nd - 1, itemsize);
        }
    }
}

/// A position while walking a plan: the multi-index, and each operand's byte offset there. On
/// the stack, for every dimension count a plan may have: a walk (on any thread) never allocates.
struct Cursor<const N: usize> {
    idx: [usize; MAX_NDIM],
    off: [isize; N],
}

impl<const N: usize> Plan<N> {
    /// The position of element `start` (in row-major order of the plan's shape).
    fn cursor_at(&self, start: usize, itemsize: [usize; N]) -> Cursor<N> {
        let nd = self.shape.len();
        let mut idx = [0usize; MAX_NDIM];
        let mut off = [0isize; N];
        let mut rem = start;
        for d in (0..nd).rev() {
            if rem == 0 {
                break;
            }
            idx[d] = rem % self.shape[d];
            rem /= self.shape[d];
            for (k, o) in off.iter_mut().enumerate() {
                *o += idx[d] as isize * self.strides[k][d] * itemsize[k] as isize;
            }
        }
        Cursor { idx, off }
    }

    /// After `idx[d]` was advanced: while dimension `d` has run past its end, wraps it to 0 and
    /// advances the next outer one (the outermost is left past its end: the walk is over).
    fn carry(&self, idx: &mut [usize], off: &mut [isize; N], mut d: usize, itemsize: [usize; N]) {
        let bs = |k: usize, d: usize| self.strides[k][d] * itemsize[k] as isize;
        while idx[d] == self.shape[d] && d > 0 {
            for (k, o) in off.iter_mut().enumerate() {
                *o += bs(k, d - 1) - self.shape[d] as isize * bs(k, d);
            }
            idx[d] = 0;
            idx[d - 1] += 1;
            d -= 1;
        }
    }
}

/// How a plan is walked in 2-D tiles: when an input is strided along the innermost dimension
/// but closer to contiguous along the next one (a transposed operand), runs of `cols` elements
/// are taken `rows` at a time, so each cache line of that input, brought in by the first row of a
/// tile, serves the next rows too instead of being evicted before its neighbours are used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tiling {
    /// Tile height along the second-innermost dimension.
    pub rows: usize,
    /// Tile width (run length) along the innermost dimension.
    pub cols: usize,
    /// Row blocks per outer index: `ceil(shape[nd-2] / rows)`.
    pub blocks: usize,
    /// Work units: one per (outer index, row block).
    pub units: usize,
}

/// Tile width: runs this long keep per-run overhead small while the strided operand's lines of
/// one tile (`cols` of them) stay in L1.
const TILE_COLS: usize = 256;

impl<const N: usize> Plan<N> {
    /// The tiling to walk this plan with, if an input asks for one (see [`Tiling`]).
    pub fn tiling(&self, itemsize: [usize; N]) -> Option<Tiling> {
        let nd = self.shape.len();
        if nd < 2 {
            return None;
        }
        let (r, c) = (nd - 2, nd - 1);
        let (rows_n, cols_n) = (self.shape[r], self.shape[c]);
        if rows_n < 2 || cols_n < 2 {
            return None;
        }
        let strided = (1..N).any(|k| {
            let (sr, sc) = (
                self.strides[k][r].unsigned_abs(),
                self.strides[k][c].unsigned_abs(),
            );
            sc > 1 && sr != 0 && sr < sc
        });
        if !strided {
            return None;
        }
        // One cache line of the narrowest operand per tile column, at least 8 rows.
        let narrowest = itemsize.iter().copied().min().unwrap_or(1).max(1);
        let rows = (64 / narrowest).max(8).min(rows_n);
        let cols = TILE_COLS.min(cols_n);
        let blocks = rows_n.div_ceil(rows);
        let outer: usize = self.shape[..r].iter().product();
        Some(Tiling {
            rows,
            cols,
            blocks,
            units: outer * blocks,
        })
    }

    /// Calls `tile(ptrs, strides, row_strides, rows, len)` for every tile in work units
    /// `[start, end)` of `tiling` (from [`Plan::tiling`]): `rows` runs of `len` elements, run `r`
    /// starting at `ptrs[k] + r * row_strides[k]`; for each unit, column block by column block.
    /// Together the units cover every element exactly once. Strides are in bytes.
    ///
    /// # Safety
    /// As [`Plan::for_each_run`].
    pub unsafe fn for_each_tile(
        &self,
        base: [*mut u8; N],
        itemsize: [usize; N],
        tiling: &Tiling,
        start: usize,
        end: usize,
        tile: &mut impl FnMut([*mut u8; N], [isize; N], [isize; N], usize, usize),
    ) {
        let nd = self.shape.len();
        let (r, c) = (nd - 2, nd - 1);
        let (rows_n, cols_n) = (self.shape[r], self.shape[c]);
        let bs = |k: usize, d: usize| self.strides[k][d] * itemsize[k] as isize;
        let inner_stride: [isize; N] = std::array::from_fn(|k| bs(k, c));
        let row_stride: [isize; N] = std::array::from_fn(|k| bs(k, r));
        for unit in start..end.min(tiling.units) {
            let (outer, block) = (unit / tiling.blocks, unit % tiling.blocks);
            let r0 = block * tiling.rows;
            let r1 = (r0 + tiling.rows).min(rows_n);
            // Offset of (outer index, row r0, column 0) for each operand.
            let off = self.cursor_at((outer * rows_n + r0) * cols_n, itemsize).off;
            let mut c0 = 0;
            while c0 < cols_n {
                let len = tiling.cols.min(cols_n - c0);
                let ptrs: [*mut u8; N] = std::array::from_fn(|k| {
                    base[k].wrapping_offset(off[k] + c0 as isize * inner_stride[k])
                });
                tile(ptrs, inner_stride, row_stride, r1 - r0, len);
                c0 += len;
            }
        }
    }

    /// [`Plan::for_each_tile`] one run at a time: `inner(ptrs, strides, len)` for each row of
    /// each tile, in order.
    ///
    /// # Safety
    /// As [`Plan::for_each_run`].
    pub unsafe fn for_each_tile_run(
        &self,
        base: [*mut u8; N],
        itemsize: [usize; N],
        tiling: &Tiling,
        start: usize,
        end: usize,
        inner: &mut impl FnMut([*mut u8; N], [isize; N], usize),
    ) {
        // SAFETY: forwarded.
        unsafe {
            self.for_each_tile(
                base,
                itemsize,
                tiling,
                start,
                end,
                &mut |p, s, rs, rows, len| {
                    for row in 0..rows {
                        let ptrs =
                            std::array::from_fn(|k| p[k].wrapping_offset(row as isize * rs[k]));
                        inner(ptrs, s, len);
                    }
                },
            )
        }
    }
}

/// Most dimensions a [`SmallPlan`] holds (after dropping size-1 dimensions and merging).
const SMALL_NDIM: usize = 6;

/// The plan for a computation small enough to stay on the calling thread: size-1 dimensions
/// dropped and adjacent dimensions merged as in [`Plan`], but kept in logical order (with few
/// elements, the walk order hardly matters), on the stack and with byte strides, with no heap
/// vectors to build or sort: a tiny operation spends less time computing than a [`Plan`] takes to
/// build.
pub struct SmallPlan<const N: usize> {
    ndim: usize,
    shape: [usize; SMALL_NDIM],
    /// Byte strides of each operand, 0 on broadcast dimensions.
    strides: [[isize; SMALL_NDIM]; N],
}

impl<const N: usize> SmallPlan<N> {
    /// Operands are (shape, strides in elements, itemsize), each broadcastable to `shape`
    /// (right-aligned). `None` when more than `SMALL_NDIM` (6) dimensions remain.
    #[inline]
    pub fn new(shape: &[usize], operands: [(&[usize], &[isize], usize); N]) -> Option<Self> {
        let mut plan = SmallPlan {
            ndim: 0,
            shape: [0; SMALL_NDIM],
            strides: [[0; SMALL_NDIM]; N],
        };
        for (d, &size) in shape.iter().enumerate() {
            if size == 1 {
                continue;
            }
            let stride = |k: usize| {
                let (s, st, itemsize) = operands[k];
                let i = (d + s.len()).checked_sub(shape.len())?;
                (s[i] == size).then(|| st[i] * itemsize as isize)
            };
            let strides: [isize; N] = std::array::from_fn(|k| stride(k).unwrap_or(0));
            let n = plan.ndim;
            // Wrapping: a product that overflows cannot equal a real stride anyway.
            let merges =
                |k: usize| plan.strides[k][n - 1] == strides[k].wrapping_mul(size as isize);
            if n > 0 && (0..N).all(merges) {
                plan.shape[n - 1] *= size;
                for (k, &s) in strides.iter().enumerate() {
                    plan.strides[k][n - 1] = s;
                }
                continue;
            }
            if n == SMALL_NDIM {
                return None;
            }
            plan.shape[n] = size;
            for (k, &s) in strides.iter().enumerate() {
                plan.strides[k][n] = s;
            }
            plan.ndim += 1;
        }
        Some(plan)
    }

    /// The iteration sizes, outermost first (none for a single element).
    pub fn shape(&self) -> &[usize] {
        &self.shape[..self.ndim]
    }

    /// Each operand's byte stride along the innermost dimension (0 for a single element).
    pub fn inner_strides(&self) -> [isize; N] {
        std::array::from_fn(|k| match self.ndim {
            0 => 0,
            n => self.strides[k][n - 1],
        })
    }

    /// Calls `inner(ptrs, strides, len)` for every run along the innermost dimension, in
    /// row-major order (once with length 1 for a single element).
    ///
    /// # Safety
    /// As [`Plan::for_each_run`], with byte strides.
    #[inline]
    pub unsafe fn for_each_run(
        &self,
        base: [*mut u8; N],
        inner: impl Fn([*mut u8; N], [isize; N], usize),
    ) {
        let nd = self.ndim;
        if nd == 0 {
            inner(base, [0; N], 1);
            return;
        }
        if self.shape[..nd].contains(&0) {
            return;
        }
        let inner_strides: [isize; N] = std::array::from_fn(|k| self.strides[k][nd - 1]);
        let mut idx = [0usize; SMALL_NDIM];
        let mut ptrs = base;
        loop {
            inner(ptrs, inner_strides, self.shape[nd - 1]);
            // Advance the odometer over the outer dimensions.
            let mut d = nd - 1;
            loop {
                if d == 0 {
                    return;
                }
                d -= 1;
                idx[d] += 1;
                if idx[d] < self.shape[d] {
                    for (k, p) in ptrs.iter_mut().enumerate() {
                        *p = p.wrapping_offset(self.strides[k][d]);
                    }
                    break;
                }
                idx[d] = 0;
                let back = self.shape[d] as isize - 1;
                for (k, p) in ptrs.iter_mut().enumerate() {
                    *p = p.wrapping_offset(-back * self.strides[k][d]);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan3(shape: &[usize], s: [&[isize]; 3]) -> Plan<3> {
        Plan::new(shape, s).unwrap()
    }

    #[test]
    fn contiguous_operands_coalesce_to_one_dimension() {
        let p = plan3(&[4, 5, 6], [&[30, 6, 1], &[30, 6, 1], &[30, 6, 1]]);
        assert_eq!(&p.shape[..], &[120]);
        assert_eq!(
            p.strides.iter().map(|s| s[0]).collect::<Vec<_>>(),
            vec![1, 1, 1]
        );
    }

    #[test]
    fn row_broadcast_keeps_two_dimensions() {
        // (4096,4096) + (4096,): b has stride 0 on the outer dimension.
        let b = broadcast_strides(&[4096], &[1], &[4096, 4096]).unwrap();
        assert_eq!(&b[..], &[0, 1]);
        let p = plan3(&[4096, 4096], [&[4096, 1], &[4096, 1], &b]);
        assert_eq!(&p.shape[..], &[4096, 4096]);
        assert_eq!(&p.strides[2][..], &[0, 1]);
    }

    #[test]
    fn size_one_dimensions_disappear() {
        // (5,1,4,1) + (3,1,1) -> (5,3,4,1)
        let a = broadcast_strides(&[5, 1, 4, 1], &[4, 4, 1, 1], &[5, 3, 4, 1]).unwrap();
        let b = broadcast_strides(&[3, 1, 1], &[1, 1, 1], &[5, 3, 4, 1]).unwrap();
        assert_eq!(&a[..], &[4, 0, 1, 0]);
        assert_eq!(&b[..], &[0, 1, 0, 0]);
        let p = plan3(&[5, 3, 4, 1], [&[12, 4, 1, 1], &a, &b]);
        assert_eq!(&p.shape[..], &[5, 3, 4]);
        assert_eq!(p.numel, 60);
    }

    #[test]
    fn scalar_and_channel_broadcasts_merge_where_they_can() {
        // (32,64,56,56) + (1,64,1,1): the two spatial dims merge; channel stays apart.
        let b = broadcast_strides(&[1, 64, 1, 1], &[64, 1, 1, 1], &[32, 64, 56, 56]).unwrap();
        let c = [200704, 3136, 56, 1];
        let p = plan3(&[32, 64, 56, 56], [&c, &c, &b]);
        assert_eq!(&p.shape[..], &[32, 64, 3136]);
        assert_eq!(&p.strides[2][..], &[0, 1, 0]);
    }

    #[test]
    fn runs_cover_a_range_exactly() {
        let p = plan3(&[3, 4], [&[4, 1], &[0, 1], &[1, 0]]);
        let mut seen = Vec::new();
        // SAFETY: the kernel only records offsets; no memory is touched.
        unsafe {
            p.for_each_run(
                [std::ptr::null_mut(); 3],
                [1, 1, 1],
                2,
                11,
                &mut |ptrs, _s, len| {
                    seen.push((ptrs[0] as usize, len));
                },
            );
        }
        assert_eq!(seen, vec![(2, 2), (4, 4), (8, 3)]);
    }

    #[test]
    fn a_transposed_operand_gets_tiles() {
        // transpose((64,40)) + (40,64): a is strided along the inner dimension.
        let p = plan3(&[40, 64], [&[64, 1], &[1, 40], &[64, 1]]);
        let t = p.tiling([4; 3]).expect("tiled");
        assert_eq!((t.rows, t.cols), (16, 64));
        assert_eq!(t.blocks, 3);
        assert_eq!(t.units, 3);
        // Contiguous and broadcast operands never ask for tiles.
        assert!(plan3(&[40, 64], [&[64, 1], &[64, 1], &[0, 1]])
            .tiling([4; 3])
            .is_none());
        assert!(plan3(&[40, 64], [&[64, 1], &[1, 0], &[0, 1]])
            .tiling([4; 3])
            .is_none());
        assert!(plan3(&[2560], [&[1], &[1], &[1]]).tiling([4; 3]).is_none());
    }

    /// Tiles cover every element exactly once, whatever the split into unit ranges, with each
    /// run's pointers matching the elements' offsets.
    #[test]
    fn tile_runs_cover_every_element_once() {
        // (3, 37, 300) with a transposed in its last two dims and b broadcast along the middle.
        let shape = [3usize, 37, 300];
        let out = [37 * 300, 300, 1];
        let a = [37 * 300, 1, 37];
        let b = [300, 0, 1];
        let p = plan3(&shape, [&out, &a, &b]);
        let t = p.tiling([4; 3]).expect("tiled");
        assert_eq!(t.units, 3 * 37usize.div_ceil(t.rows));
        let numel = shape.iter().product::<usize>();
        for splits in [
            vec![0, t.units],
            vec![0, 1, 4, t.units],
            (0..=t.units).collect(),
        ] {
            let mut count = vec![0u32; numel];
            for w in splits.windows(2) {
                // SAFETY: the kernel only records offsets; no memory is touched.
                unsafe {
                    p.for_each_tile_run(
                        [std::ptr::null_mut(); 3],
                        [1, 1, 1],
                        &t,
                        w[0],
                        w[1],
                        &mut |ptrs, s, len| {
                            assert_eq!(s, [1, 37, 1]);
                            for i in 0..len {
                                let o = ptrs[0] as usize + i;
                                count[o] += 1;
                                let (n, rest) = (o / (37 * 300), o % (37 * 300));
                                let (r, c) = (rest / 300, rest % 300);
                                assert_eq!(ptrs[1] as usize + i * 37, n * 37 * 300 + c * 37 + r);
                                assert_eq!(ptrs[2] as usize + i, n * 300 + c);
                            }
                        },
                    );
                }
            }
            assert!(count.iter().all(|&c| c == 1));
        }
    }

    /// Blocks cover exactly the elements of a range, in order, with full runs grouped.
    #[test]
    fn blocks_cover_a_range_exactly() {
        let shape = [3usize, 4, 5];
        let p = plan3(&shape, [&[20, 5, 1], &[0, 5, 1], &[20, 0, 1]]);
        assert_eq!(&p.shape[..], &[3, 4, 5]);
        for (start, end) in [(0, 60), (2, 58), (5, 40), (7, 8), (0, 5), (13, 47)] {
            let mut seen = Vec::new();
            let mut max_rows = 0;
            // SAFETY: the kernel only records offsets; no memory is touched.
            unsafe {
                p.for_each_block(
                    [std::ptr::null_mut(); 3],
                    [1, 1, 1],
                    start,
                    end,
                    &mut |ptrs, s, rs, rows, len| {
                        max_rows = max_rows.max(rows);
                        for r in 0..rows {
                            for i in 0..len {
                                let at = |k: usize| {
                                    ptrs[k] as isize + r as isize * rs[k] + i as isize * s[k]
                                };
                                let o = at(0) as usize;
                                let (n, rest) = (o / 20, o % 20);
                                assert_eq!(at(1) as usize, rest);
                                assert_eq!(at(2) as usize, n * 20 + rest % 5);
                                seen.push(o);
                            }
                        }
                    },
                );
            }
            assert_eq!(seen, (start..end).collect::<Vec<_>>(), "{start}..{end}");
            if end - start >= 20 {
                assert!(max_rows > 1);
            }
        }
    }
}
