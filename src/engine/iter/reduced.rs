//! A reduction's iterator: the same builder with a mask of reduced dimensions, kept apart from the
//! others when merging and placed innermost (as PyTorch's TensorIterator places them), so that
//! row-major order over the iterator is output after output, each output's elements in the order
//! they are summed.
use super::{sort_outermost_first, Iter};
use crate::engine::error::{Error, Result};
use crate::engine::shape::MAX_NDIM;

impl<const N: usize> Iter<N> {
    /// The iterator of a reduction over `shape` of the dimensions marked in `reduced`, for
    /// operands whose strides (`strides[k]`, in elements) are aligned to `shape`: the kept
    /// dimensions outermost, in logical order (row-major in the result), then the reduced ones,
    /// outermost first by the strides `order` (of the layout whose order the summation follows;
    /// equal strides keep the logical order); size-1 dimensions dropped, and each of the two
    /// groups merged within itself wherever every operand allows it. There is always a reduced
    /// dimension: one of size 1 (stride 0) when none remains, each output then reducing one
    /// element. Records which kept dimension is innermost by `order` ([`Iter::inner_kept`]).
    /// Reserves every dimension whole first, fallibly.
    pub fn with_reduced(
        shape: &[usize],
        strides: [&[isize]; N],
        order: &[isize],
        reduced: &[bool],
    ) -> Result<Iter<N>> {
        if shape.len() > MAX_NDIM {
            return Err(Error::invalid(format_args!(
                "{} dimensions, more than the {MAX_NDIM} supported",
                shape.len()
            )));
        }
        let mut it = Iter::empty();
        // At most one dimension more than the shape has (the reduced one of size 1).
        let cap = shape.len() + 1;
        it.reserve(cap)?;
        it.numel = shape.iter().product();
        // Each dimension's weight in `order`: that of its innermost part when merged.
        let mut weight = [0usize; MAX_NDIM + 1];
        let key = |d: usize| order[d].unsigned_abs();
        let at = |d: usize| -> [isize; N] { std::array::from_fn(|k| strides[k][d]) };
        for d in (0..shape.len()).filter(|&d| shape[d] != 1 && !reduced[d]) {
            it.push_dim(shape[d], at(d), 0);
            weight[it.ndim() - 1] = key(d);
        }
        let kept = it.ndim();
        // The reduced dimensions, outermost first: by weight, largest first, stably.
        let mut dims = [0u8; MAX_NDIM];
        let mut n = 0;
        for d in (0..shape.len()).filter(|&d| shape[d] != 1 && reduced[d]) {
            dims[n] = d as u8;
            n += 1;
        }
        let dims = &mut dims[..n];
        sort_outermost_first(dims, key);
        for &d in dims.iter() {
            it.push_dim(shape[d as usize], at(d as usize), kept);
            weight[it.ndim() - 1] = key(d as usize);
        }
        if it.ndim() == kept {
            it.push_dim(1, [0; N], kept);
            weight[kept] = 0;
        }
        it.reduced_ndim = it.ndim() - kept;
        // The last of equally light kept dimensions: the innermost in logical order.
        it.inner_kept = (0..kept)
            .rev()
            .min_by_key(|&d| weight[d])
            .map(|d| (d, weight[it.ndim() - 1] < weight[d]));
        Ok(it)
    }

    /// The kept dimensions of a reduction's iterator (all of them for elementwise work): the
    /// outputs, row-major.
    pub fn kept_shape(&self) -> &[usize] {
        &self.shape[..self.ndim() - self.reduced_ndim]
    }

    /// The reduced dimensions of a reduction's iterator (none for elementwise work): each
    /// output's elements, row-major in the order they are summed.
    pub fn reduced_shape(&self) -> &[usize] {
        &self.shape[self.ndim() - self.reduced_ndim..]
    }

    /// The kept dimension of a reduction's iterator innermost in the order it was built with
    /// (the last of equally light ones), and whether the innermost reduced dimension lies inside
    /// it in that order; `None` when no dimension is kept (or for elementwise work).
    pub fn inner_kept(&self) -> Option<(usize, bool)> {
        self.inner_kept
    }

    /// Operand `k`'s stride, in elements, along dimension `d` of [`Iter::shape`].
    #[inline(always)]
    pub fn stride(&self, k: usize, d: usize) -> isize {
        self.strides[d][k]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::shape::contiguous_strides;

    fn reducing(shape: &[usize], strides: &[isize], reduced: &[bool]) -> Iter<1> {
        Iter::with_reduced(shape, [strides], strides, reduced).unwrap()
    }

    #[test]
    fn dimensions_merge_and_order_by_stride() {
        // (4,5,6) permuted so that dim 0 is innermost in memory: strides (1, 24, 4).
        let it = reducing(&[4, 5, 6], &[1, 24, 4], &[true, true, false]);
        assert_eq!(
            (it.kept_shape(), it.reduced_shape()),
            (&[6][..], &[5, 4][..])
        );
        assert_eq!(it.strides(0).collect::<Vec<_>>(), vec![4, 24, 1]);
        assert_eq!(it.inner_kept(), Some((0, true)));
        // Contiguous reduced dimensions merge; size-1 dimensions vanish; kept and reduced
        // dimensions never merge with each other.
        let st = contiguous_strides(&[3, 1, 4, 5]).unwrap();
        let it = reducing(&[3, 1, 4, 5], &st, &[false, true, true, true]);
        assert_eq!((it.kept_shape(), it.reduced_shape()), (&[3][..], &[20][..]));
        assert_eq!(it.inner_kept(), Some((0, true)));
        // Nothing reduced (size 1): one reduced dimension of size 1; nothing kept.
        let it = reducing(&[3, 1], &[1, 1], &[false, true]);
        assert_eq!((it.kept_shape(), it.reduced_shape()), (&[3][..], &[1][..]));
        assert_eq!(it.stride(0, 1), 0);
        let it = reducing(&[4, 5], &[5, 1], &[true, true]);
        assert_eq!((it.kept_shape(), it.reduced_shape()), (&[][..], &[20][..]));
        assert_eq!(it.inner_kept(), None);
    }
}
