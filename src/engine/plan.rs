//! The execution plan, TensorIterator-style: from metadata alone, the iteration shape and each
//! operand's strides (0 on broadcast dimensions), with size-1 dimensions dropped, dimensions
//! ordered by the written operand's strides, and adjacent dimensions merged wherever every
//! operand allows it. Executing the plan walks it in chunks of the innermost dimension.
use super::shape::{Dims, Strides};
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
pub fn broadcast_strides(shape: &[usize], strides: &[isize], target: &[usize]) -> Strides {
    let lead = target.len() - shape.len();
    let mut out: Strides = SmallVec::from_elem(0, target.len());
    for (i, (&size, &stride)) in shape.iter().zip(strides).enumerate() {
        if size == target[lead + i] && size != 1 {
            out[lead + i] = stride;
        }
    }
    out
}

impl<const N: usize> Plan<N> {
    /// `strides[k]` must already be aligned to `shape` (see [`broadcast_strides`]).
    pub fn new(shape: &[usize], strides: [&[isize]; N]) -> Plan<N> {
        let numel = shape.iter().product();
        // Keep the dimensions that iterate, in the written operand's order: largest stride outside.
        let mut dims: SmallVec<[usize; 6]> = (0..shape.len()).filter(|&d| shape[d] != 1).collect();
        dims.sort_by_key(|&d| std::cmp::Reverse(strides[0][d].unsigned_abs()));

        let mut out_shape: Dims = SmallVec::new();
        let mut out_strides: [Strides; N] = std::array::from_fn(|_| SmallVec::new());
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
        Plan {
            shape: out_shape,
            strides: out_strides,
            numel,
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
        let byte_strides: [Strides; N] = std::array::from_fn(|k| {
            self.strides[k]
                .iter()
                .map(|&s| s * itemsize[k] as isize)
                .collect()
        });
        let inner_stride: [isize; N] =
            std::array::from_fn(|k| byte_strides[k].last().copied().unwrap_or(0));
        if nd == 0 {
            inner(base, inner_stride, 1);
            return;
        }
        let inner_len = self.shape[nd - 1];
        // Multi-index of `start`.
        let mut idx: SmallVec<[usize; 6]> = SmallVec::from_elem(0, nd);
        let mut rem = start;
        for d in (0..nd).rev() {
            idx[d] = rem % self.shape[d];
            rem /= self.shape[d];
        }
        let mut pos = start;
        while pos < end {
            let len = (inner_len - idx[nd - 1]).min(end - pos);
            let ptrs: [*mut u8; N] = std::array::from_fn(|k| {
                let off: isize = (0..nd).map(|d| idx[d] as isize * byte_strides[k][d]).sum();
                base[k].wrapping_offset(off)
            });
            inner(ptrs, inner_stride, len);
            pos += len;
            idx[nd - 1] += len;
            let mut d = nd - 1;
            while idx[d] == self.shape[d] && d > 0 {
                idx[d] = 0;
                idx[d - 1] += 1;
                d -= 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan3(shape: &[usize], s: [&[isize]; 3]) -> Plan<3> {
        Plan::new(shape, s)
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
        let b = broadcast_strides(&[4096], &[1], &[4096, 4096]);
        assert_eq!(&b[..], &[0, 1]);
        let p = plan3(&[4096, 4096], [&[4096, 1], &[4096, 1], &b]);
        assert_eq!(&p.shape[..], &[4096, 4096]);
        assert_eq!(&p.strides[2][..], &[0, 1]);
    }

    #[test]
    fn size_one_dimensions_disappear() {
        // (5,1,4,1) + (3,1,1) -> (5,3,4,1)
        let a = broadcast_strides(&[5, 1, 4, 1], &[4, 4, 1, 1], &[5, 3, 4, 1]);
        let b = broadcast_strides(&[3, 1, 1], &[1, 1, 1], &[5, 3, 4, 1]);
        assert_eq!(&a[..], &[4, 0, 1, 0]);
        assert_eq!(&b[..], &[0, 1, 0, 0]);
        let p = plan3(&[5, 3, 4, 1], [&[12, 4, 1, 1], &a, &b]);
        assert_eq!(&p.shape[..], &[5, 3, 4]);
        assert_eq!(p.numel, 60);
    }

    #[test]
    fn scalar_and_channel_broadcasts_merge_where_they_can() {
        // (32,64,56,56) + (1,64,1,1): the two spatial dims merge; channel stays apart.
        let b = broadcast_strides(&[1, 64, 1, 1], &[64, 1, 1, 1], &[32, 64, 56, 56]);
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
}
