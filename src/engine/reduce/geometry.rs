//! Which elements each output reduces, from metadata alone: the kept and reduced dimensions,
//! merged, and a cursor that walks them.

use super::cut::Cut;
use crate::engine::alloc::try_small_with_capacity;
use crate::engine::error::Result;
use crate::engine::shape::{Dims, Strides};
use smallvec::SmallVec;

/// Below this many elements per output, an output's stream is too short for lanes to pay: the
/// kept dimension is taken as the lanes instead (when there is one).
const MIN_STREAM: usize = 64;

/// The reduction's iteration space for `N` operands (strides in bytes, 0 where broadcast): the
/// kept dimensions in logical order (row-major in the output) and the reduced dimensions,
/// outermost first, each merged where every operand allows, size-1 dimensions dropped. Which
/// dimension is "outer" and which kept one gives the lanes follows a separate set of `order`
/// strides (with each merged dimension's weight that of its innermost part): the input's own for
/// a reduction of a view, those of the result's layout (as `bc_binary` makes it) for the fused
/// form, so that it sums in the order the two calls would.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct ReduceGeometry<const N: usize> {
    pub(super) kept: Dims,
    pub(super) kept_st: [Strides; N],
    kept_order: Strides,
    pub(super) red: Dims,
    pub(super) red_st: [Strides; N],
    red_order: Strides,
    /// Elements per output.
    pub(super) n: usize,
    /// Number of outputs.
    pub(super) m: usize,
}

impl<const N: usize> ReduceGeometry<N> {
    /// The geometry of `shape`, reducing the dimensions marked in `reduced`; operand `k` has
    /// element strides `strides[k]`. Every vector is reserved whole first (pushing within
    /// the capacity never allocates).
    pub(super) fn new(
        shape: &[usize],
        strides: [&[isize]; N],
        order: &[isize],
        reduced: &[bool],
        itemsize: usize,
    ) -> Result<Self> {
        // At most one dimension more than the shape has (the stream of a plain copy).
        let cap = shape.len() + 1;
        let strides_cap = || -> Result<[Strides; N]> {
            let mut st: [Strides; N] = std::array::from_fn(|_| Strides::new());
            for s in &mut st {
                *s = try_small_with_capacity(cap)?;
            }
            Ok(st)
        };
        let mut g = ReduceGeometry {
            kept: try_small_with_capacity(cap)?,
            kept_st: strides_cap()?,
            kept_order: try_small_with_capacity(cap)?,
            red: try_small_with_capacity(cap)?,
            red_st: strides_cap()?,
            red_order: try_small_with_capacity(cap)?,
            n: 1,
            m: 1,
        };
        let mut red_dims: SmallVec<[usize; 6]> = try_small_with_capacity(shape.len())?;
        for d in (0..shape.len()).filter(|&d| shape[d] != 1) {
            if reduced[d] {
                red_dims.push(d);
            } else {
                let st = |k: usize| strides[k][d] * itemsize as isize;
                push_merged(&mut g.kept, &mut g.kept_st, shape[d], st);
                g.kept_order.truncate(g.kept.len() - 1);
                g.kept_order.push(order[d].abs());
            }
        }
        // Outermost first; dimensions of equal weight keep their logical order (an unstable
        // sort on a key that includes the position, which, unlike a stable sort, never
        // allocates).
        red_dims.sort_unstable_by_key(|&d| (std::cmp::Reverse(order[d].unsigned_abs()), d));
        for &d in &red_dims {
            let st = |k: usize| strides[k][d] * itemsize as isize;
            push_merged(&mut g.red, &mut g.red_st, shape[d], st);
            g.red_order.truncate(g.red.len() - 1);
            g.red_order.push(order[d].abs());
        }
        if g.red.is_empty() {
            // One element per output: a stream of length 1.
            push_merged(&mut g.red, &mut g.red_st, 1, |_| 0);
            g.red_order.push(0);
        }
        debug_assert!(g.kept.len() + g.red.len() <= MAX_DIMS);
        g.n = g.red.iter().product();
        g.m = g.kept.iter().product();
        Ok(g)
    }

    /// The kept dimension that supplies the lanes (the innermost by order), or `None` when each
    /// output's own stream does.
    pub(super) fn column(&self) -> Option<usize> {
        // The last of equally light dimensions: the innermost in logical order.
        let col = (0..self.kept.len())
            .rev()
            .min_by_key(|&d| self.kept_order[d])?;
        let stream_inner = self.red_order[self.red.len() - 1] < self.kept_order[col];
        (self.n < MIN_STREAM || !stream_inner).then_some(col)
    }

    /// The operands' byte strides along the rows every tile has: the kept dimension's that
    /// gives the lanes, or the stream's.
    pub(super) fn row_strides(&self, cut: &Cut) -> [isize; N] {
        std::array::from_fn(|k| match cut.col {
            Some(col) => self.kept_st[k][col],
            None => self.red_st[k][self.red.len() - 1],
        })
    }
}

/// Appends a dimension of `size` (operand `k`'s stride `stride(k)`), merged into the last one
/// when that one steps exactly `size` times as far for every operand.
fn push_merged<const N: usize>(
    sizes: &mut Dims,
    st: &mut [Strides; N],
    size: usize,
    stride: impl Fn(usize) -> isize,
) {
    let mergeable = !sizes.is_empty()
        && (0..N).all(|k| *st[k].last().unwrap() == stride(k).wrapping_mul(size as isize));
    if mergeable {
        *sizes.last_mut().unwrap() *= size;
        for (k, s) in st.iter_mut().enumerate() {
            *s.last_mut().unwrap() = stride(k);
        }
    } else {
        sizes.push(size);
        for (k, s) in st.iter_mut().enumerate() {
            s.push(stride(k));
        }
    }
}

/// Most dimensions a [`ReduceGeometry`] has: its dimensions all have sizes of 2 or more and their
/// product fits in `isize`, so there are at most 63.
const MAX_DIMS: usize = 64;

/// A position in row-major order over some dimensions, with each operand's byte offset there.
pub(super) struct ReduceCursor<const N: usize> {
    pub(super) idx: [usize; MAX_DIMS],
    pub(super) off: [isize; N],
}

impl<const N: usize> ReduceCursor<N> {
    /// The position of element `pos`.
    pub(super) fn at(shape: &[usize], st: &[Strides; N], mut pos: usize) -> Self {
        let mut c = ReduceCursor {
            idx: [0; MAX_DIMS],
            off: [0; N],
        };
        for d in (0..shape.len()).rev() {
            c.idx[d] = pos % shape[d];
            pos /= shape[d];
            for (o, s) in c.off.iter_mut().zip(st) {
                *o += c.idx[d] as isize * s[d];
            }
        }
        c
    }

    /// Moves `k` elements along the innermost dimension (at most to its end), carrying outward.
    pub(super) fn advance(&mut self, shape: &[usize], st: &[Strides; N], k: usize) {
        let Some(mut d) = shape.len().checked_sub(1) else {
            return;
        };
        self.idx[d] += k;
        for (o, s) in self.off.iter_mut().zip(st) {
            *o += k as isize * s[d];
        }
        while self.idx[d] == shape[d] && d > 0 {
            for (o, s) in self.off.iter_mut().zip(st) {
                *o += s[d - 1] - shape[d] as isize * s[d];
            }
            self.idx[d] = 0;
            self.idx[d - 1] += 1;
            d -= 1;
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::engine::shape::contiguous_strides;

    pub(crate) fn geometry(
        shape: &[usize],
        strides: &[isize],
        reduced: &[bool],
    ) -> ReduceGeometry<1> {
        ReduceGeometry::new(shape, [strides], strides, reduced, 4).unwrap()
    }

    #[test]
    fn dimensions_merge_and_order_by_stride() {
        // (4,5,6) permuted so that dim 0 is innermost in memory: strides (1, 24, 4).
        let g = geometry(&[4, 5, 6], &[1, 24, 4], &[true, true, false]);
        assert_eq!(&g.red[..], &[5, 4]);
        assert_eq!(&g.red_st[0][..], &[96, 4]);
        assert_eq!((g.m, g.n), (6, 20));
        // Contiguous reduced dimensions merge; size-1 dimensions vanish.
        let st = contiguous_strides(&[3, 1, 4, 5]).unwrap();
        let g = geometry(&[3, 1, 4, 5], &st, &[false, true, true, true]);
        assert_eq!((&g.red[..], &g.kept[..]), (&[20][..], &[3][..]));
    }
}
