//! Walking an iterator in 2-D tiles, for an input transposed against the written operand.
use super::Iter;

/// How an iterator is walked in 2-D tiles: when an input is strided along the innermost dimension
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

impl<const N: usize> Iter<N> {
    /// The tiling to walk this iterator with, if an input asks for one (see [`Tiling`]).
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
                self.strides[r][k].unsigned_abs(),
                self.strides[c][k].unsigned_abs(),
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
    /// `[start, end)` of `tiling` (from [`Iter::tiling`]): `rows` runs of `len` elements, run `r`
    /// starting at `ptrs[k] + r * row_strides[k]`; for each unit, column block by column block.
    /// Together the units cover every element exactly once. Strides are in bytes.
    ///
    /// # Safety
    /// As [`Iter::for_each_run`].
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
        let inner_stride: [isize; N] = std::array::from_fn(|k| self.byte_stride(k, c, itemsize));
        let row_stride: [isize; N] = std::array::from_fn(|k| self.byte_stride(k, r, itemsize));
        for unit in start..end.min(tiling.units) {
            let (outer, block) = (unit / tiling.blocks, unit % tiling.blocks);
            let r0 = block * tiling.rows;
            let r1 = (r0 + tiling.rows).min(rows_n);
            // Each operand's pointer at (outer index, row r0, column 0).
            let row = self
                .cursor_at((outer * rows_n + r0) * cols_n, base, itemsize)
                .ptrs;
            let mut c0 = 0;
            while c0 < cols_n {
                let len = tiling.cols.min(cols_n - c0);
                let ptrs: [*mut u8; N] =
                    std::array::from_fn(|k| row[k].wrapping_offset(c0 as isize * inner_stride[k]));
                tile(ptrs, inner_stride, row_stride, r1 - r0, len);
                c0 += len;
            }
        }
    }

    /// [`Iter::for_each_tile`] one run at a time: `inner(ptrs, strides, len)` for each row of
    /// each tile, in order.
    ///
    /// # Safety
    /// As [`Iter::for_each_run`].
    #[cfg(test)]
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

#[cfg(test)]
mod tests {
    use super::super::tests::iter3;

    #[test]
    fn a_transposed_operand_gets_tiles() {
        // transpose((64,40)) + (40,64): a is strided along the inner dimension.
        let p = iter3(&[40, 64], [&[64, 1], &[1, 40], &[64, 1]]);
        let t = p.tiling([4; 3]).expect("tiled");
        assert_eq!((t.rows, t.cols), (16, 64));
        assert_eq!(t.blocks, 3);
        assert_eq!(t.units, 3);
        // Contiguous and broadcast operands never ask for tiles.
        assert!(iter3(&[40, 64], [&[64, 1], &[64, 1], &[0, 1]])
            .tiling([4; 3])
            .is_none());
        assert!(iter3(&[40, 64], [&[64, 1], &[1, 0], &[0, 1]])
            .tiling([4; 3])
            .is_none());
        assert!(iter3(&[2560], [&[1], &[1], &[1]]).tiling([4; 3]).is_none());
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
        let p = iter3(&shape, [&out, &a, &b]);
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
}
