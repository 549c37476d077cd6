//! Walking an iterator: runs along the innermost dimension covering a range of elements in
//! row-major order, or blocks of consecutive full runs handed over at once. One cursor (a
//! multi-index and each operand's byte offset, on the stack) serves every walk.
use super::Iter;
use crate::engine::shape::MAX_NDIM;

/// A position while walking: the multi-index, and each operand's pointer there. On the stack,
/// for every dimension count an iterator may have: a walk (on any thread) never allocates.
pub(super) struct Cursor<const N: usize> {
    idx: [usize; MAX_NDIM],
    pub(super) ptrs: [*mut u8; N],
}

impl<const N: usize> Iter<N> {
    /// Like [`Iter::for_each_run`], but hands over whole blocks of consecutive full runs at once:
    /// `block(ptrs, strides, row_strides, rows, len)` covers `rows` runs of `len` elements along
    /// the second-innermost dimension, run `r` starting at `ptrs[k] + r * row_strides[k]`
    /// (`rows` is 1 for a partial run at either end of the range). A kernel that loops over the
    /// rows itself saves the per-run call overhead, which matters for short runs.
    ///
    /// # Safety
    /// As [`Iter::for_each_run`].
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
        let nd = self.ndim();
        if nd < 2 {
            // SAFETY: forwarded.
            unsafe {
                self.for_each_run(base, itemsize, start, end, &mut |p, s, n| {
                    block(p, s, [0; N], 1, n)
                })
            };
            return;
        }
        let (shape, strides) = (&self.shape[..], &self.strides[..]);
        let inner_stride = self.inner_byte_strides(itemsize);
        let row_stride: [isize; N] = std::array::from_fn(|k| self.byte_stride(k, nd - 2, itemsize));
        let (inner_len, rows_n) = (shape[nd - 1], shape[nd - 2]);
        let Cursor { mut idx, mut ptrs } = self.cursor_at(start, base, itemsize);
        let mut pos = start;
        loop {
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
            // Advance the odometer past the block (a partial run ended at a row's end, since
            // elements remain).
            let back = idx[nd - 1] as isize;
            for (k, p) in ptrs.iter_mut().enumerate() {
                *p = p.wrapping_offset(rows as isize * row_stride[k] - back * inner_stride[k]);
            }
            idx[nd - 1] = 0;
            idx[nd - 2] += rows;
            carry(shape, strides, &mut idx, &mut ptrs, nd - 2, itemsize);
        }
    }

    /// Calls `inner(ptrs, strides, len)` for consecutive runs along the innermost dimension that
    /// cover elements `[start, end)` of the iterator, in row-major order. `base` holds each
    /// operand's pointer to its first element; strides are converted to bytes with `itemsize`.
    ///
    /// # Safety
    /// For every element of the iterator, `base[k] + offset * itemsize[k]` must be valid for the
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
        let nd = self.ndim();
        if nd == 0 {
            inner(base, [0; N], 1);
            return;
        }
        let (shape, strides) = (&self.shape[..], &self.strides[..]);
        let inner_stride = self.inner_byte_strides(itemsize);
        let inner_len = shape[nd - 1];
        if nd == 1 {
            let ptrs =
                std::array::from_fn(|k| base[k].wrapping_offset(start as isize * inner_stride[k]));
            inner(ptrs, inner_stride, end - start);
            return;
        }
        let row_stride: [isize; N] = std::array::from_fn(|k| self.byte_stride(k, nd - 2, itemsize));
        let Cursor { mut idx, mut ptrs } = self.cursor_at(start, base, itemsize);
        let mut pos = start;
        loop {
            let len = (inner_len - idx[nd - 1]).min(end - pos);
            inner(ptrs, inner_stride, len);
            pos += len;
            if pos >= end {
                return;
            }
            // Back to the row's start, then on to the next row (the run ended at the row's end,
            // since elements remain).
            let back = idx[nd - 1] as isize;
            for (k, p) in ptrs.iter_mut().enumerate() {
                *p = p.wrapping_offset(row_stride[k] - back * inner_stride[k]);
            }
            idx[nd - 1] = 0;
            idx[nd - 2] += 1;
            carry(shape, strides, &mut idx, &mut ptrs, nd - 2, itemsize);
        }
    }

    /// The runs [`Iter::for_each_run`] calls its kernel with, handed out one at a time by
    /// [`RunWalk::next_run`] instead: for a caller whose kernel must be compiled into it (the
    /// reductions' AVX2 clone, whose loops a closure compiled on its own would not have).
    #[inline(always)]
    pub fn run_walk(
        &self,
        base: [*mut u8; N],
        itemsize: [usize; N],
        start: usize,
        end: usize,
    ) -> RunWalk<'_, N> {
        let nd = self.ndim();
        let row_stride = match nd {
            0 | 1 => [0; N],
            _ => std::array::from_fn(|k| self.byte_stride(k, nd - 2, itemsize)),
        };
        // Built in place: the reductions make a walk per output, and moving its multi-index
        // (MAX_NDIM words) from a returned cursor cost two copies of it each time.
        let mut walk = RunWalk {
            iter: self,
            idx: [0; MAX_NDIM],
            ptrs: base,
            inner_stride: self.inner_byte_strides(itemsize),
            row_stride,
            itemsize,
            pos: start,
            end,
        };
        self.seek(start, &mut walk.idx, &mut walk.ptrs, itemsize);
        walk
    }

    /// The position of element `start` (in row-major order of the iteration shape).
    pub(super) fn cursor_at(
        &self,
        start: usize,
        base: [*mut u8; N],
        itemsize: [usize; N],
    ) -> Cursor<N> {
        let mut cursor = Cursor {
            idx: [0; MAX_NDIM],
            ptrs: base,
        };
        self.seek(start, &mut cursor.idx, &mut cursor.ptrs, itemsize);
        cursor
    }

    /// Moves a cursor at element 0 (`idx` all zero, `ptrs` at the operands' bases) to element
    /// `start`.
    #[inline]
    fn seek(
        &self,
        start: usize,
        idx: &mut [usize; MAX_NDIM],
        ptrs: &mut [*mut u8; N],
        itemsize: [usize; N],
    ) {
        let mut rem = start;
        for d in (0..self.ndim()).rev() {
            if rem == 0 {
                break;
            }
            idx[d] = rem % self.shape[d];
            rem /= self.shape[d];
            for (k, p) in ptrs.iter_mut().enumerate() {
                *p = p.wrapping_offset(idx[d] as isize * self.byte_stride(k, d, itemsize));
            }
        }
    }
}

/// A walk over the runs covering a range of an iterator's elements (see [`Iter::run_walk`]).
pub struct RunWalk<'i, const N: usize> {
    iter: &'i Iter<N>,
    idx: [usize; MAX_NDIM],
    ptrs: [*mut u8; N],
    inner_stride: [isize; N],
    row_stride: [isize; N],
    itemsize: [usize; N],
    pos: usize,
    end: usize,
}

impl<const N: usize> RunWalk<'_, N> {
    /// The next run: each operand's pointer at its start, their byte strides along it, and its
    /// length (as [`Iter::for_each_run`] hands them to its kernel); `None` past the range.
    #[inline(always)]
    pub fn next_run(&mut self) -> Option<([*mut u8; N], [isize; N], usize)> {
        if self.pos >= self.end {
            return None;
        }
        let (shape, nd) = (&self.iter.shape[..], self.iter.ndim());
        if nd == 0 {
            self.pos = self.end;
            return Some((self.ptrs, [0; N], 1));
        }
        let len = (shape[nd - 1] - self.idx[nd - 1]).min(self.end - self.pos);
        let run = (self.ptrs, self.inner_stride, len);
        self.pos += len;
        if self.pos < self.end {
            // On to the next row's start (the run ended at its row's end, so there are two
            // dimensions or more).
            let back = self.idx[nd - 1] as isize;
            for (k, p) in self.ptrs.iter_mut().enumerate() {
                *p = p.wrapping_offset(self.row_stride[k] - back * self.inner_stride[k]);
            }
            self.idx[nd - 1] = 0;
            self.idx[nd - 2] += 1;
            let strides = &self.iter.strides[..];
            carry(
                shape,
                strides,
                &mut self.idx,
                &mut self.ptrs,
                nd - 2,
                self.itemsize,
            );
        }
        Some(run)
    }
}

/// After `idx[d]` and the pointers were advanced along dimension `d` (the dimensions inside it at
/// their start): while `d` has run past its end, wraps it to 0 and advances the next outer one
/// (the outermost is left past its end: the walk is over). Inlined: small work calls it once per
/// run.
#[inline(always)]
fn carry<const N: usize>(
    shape: &[usize],
    strides: &[[isize; N]],
    idx: &mut [usize; MAX_NDIM],
    ptrs: &mut [*mut u8; N],
    d: usize,
    itemsize: [usize; N],
) {
    let mut d = d;
    while d > 0 && idx[d] == shape[d] {
        let (outer, this, size) = (&strides[d - 1], &strides[d], shape[d] as isize);
        for (k, p) in ptrs.iter_mut().enumerate() {
            *p = p.wrapping_offset((outer[k] - size * this[k]) * itemsize[k] as isize);
        }
        idx[d] = 0;
        idx[d - 1] += 1;
        d -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::iter3;

    #[test]
    fn runs_cover_a_range_exactly() {
        let p = iter3(&[3, 4], [&[4, 1], &[0, 1], &[1, 0]]);
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

    /// A walk hands out the runs the kernel of `for_each_run` gets.
    #[test]
    fn a_run_walk_gives_the_same_runs() {
        let p = iter3(&[3, 4, 5], [&[20, 5, 1], &[0, 5, 1], &[20, 0, 1]]);
        let base = [std::ptr::null_mut(); 3];
        for (start, end) in [(0, 60), (2, 58), (5, 40), (7, 8), (13, 47), (9, 9)] {
            let mut want = Vec::new();
            // SAFETY: the kernel only records offsets; no memory is touched.
            unsafe {
                p.for_each_run(base, [4; 3], start, end, &mut |q, s, n| {
                    want.push((q, s, n))
                })
            };
            let mut walk = p.run_walk(base, [4; 3], start, end);
            let got: Vec<_> = std::iter::from_fn(|| walk.next_run()).collect();
            assert_eq!(got, want, "{start}..{end}");
        }
    }

    /// Blocks cover exactly the elements of a range, in order, with full runs grouped.
    #[test]
    fn blocks_cover_a_range_exactly() {
        let shape = [3usize, 4, 5];
        let p = iter3(&shape, [&[20, 5, 1], &[0, 5, 1], &[20, 0, 1]]);
        assert_eq!(p.shape(), &[3, 4, 5]);
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
