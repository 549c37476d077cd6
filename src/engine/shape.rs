//! Shape rules: broadcasting two or n shapes, the in-place rule, expand geometry, and checked
//! size products. Metadata only; nothing here touches element data.
use super::alloc::{try_collect, try_small_elem, try_to_vec};
use super::error::{Error, Result};
use smallvec::SmallVec;

/// Dimensions a shape holds inline: 5 covers nearly every real tensor and keeps a `Tensor` small
/// enough (120 bytes) to be moved without a call to `memcpy`.
const INLINE_DIMS: usize = 5;
/// Sizes of a shape, inline up to [`INLINE_DIMS`] dimensions.
pub type Dims = SmallVec<[usize; INLINE_DIMS]>;
/// Strides in elements, one per dimension.
pub type Strides = SmallVec<[isize; INLINE_DIMS]>;

/// Most dimensions a tensor may have (the C API's `BC_MAX_NDIM`): walkers keep a multi-index of
/// this many entries on the stack.
pub const MAX_NDIM: usize = 64;

/// `[2, 3]`, as PyTorch prints sizes. A `Display` adapter: formatting it allocates nothing, so
/// error messages can be written under memory exhaustion.
pub fn fmt_list<T: std::fmt::Display>(dims: &[T]) -> impl std::fmt::Display + '_ {
    Joined {
        dims,
        open: "[",
        close: "]",
        trailing_comma: false,
    }
}

/// `(2,)` or `(1, 3)`, as Python prints a tuple (a `Display` adapter, like [`fmt_list`]).
pub fn fmt_tuple<T: std::fmt::Display>(dims: &[T]) -> impl std::fmt::Display + '_ {
    Joined {
        dims,
        open: "(",
        close: ")",
        trailing_comma: dims.len() == 1,
    }
}

struct Joined<'a, T> {
    dims: &'a [T],
    open: &'static str,
    close: &'static str,
    trailing_comma: bool,
}

impl<T: std::fmt::Display> std::fmt::Display for Joined<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.open)?;
        for (i, d) in self.dims.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{d}")?;
        }
        if self.trailing_comma {
            f.write_str(",")?;
        }
        f.write_str(self.close)
    }
}

/// Number of elements of a shape already known to be valid (a tensor's: its product fits). A 0
/// anywhere makes 0, whatever the other sizes (which may overflow together).
pub fn numel(shape: &[usize]) -> usize {
    if shape.contains(&0) {
        0
    } else {
        shape.iter().product()
    }
}

/// Number of elements, refusing products that do not fit in `isize` (so byte offsets stay valid).
pub fn checked_numel(shape: &[usize]) -> Result<usize> {
    // A 0 anywhere makes 0, whatever the other sizes and their order.
    if shape.contains(&0) {
        return Ok(0);
    }
    match shape
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .filter(|&n| n <= isize::MAX as usize)
    {
        Some(n) => Ok(n),
        // (Not `ok_or`: its eager error value went through `Error`'s drop glue on success.)
        None => Err(Error::Overflow { what: "numel" }),
    }
}

/// Number of bytes of `numel` elements of `itemsize`, refusing overflow.
pub fn checked_nbytes(numel: usize, itemsize: usize) -> Result<usize> {
    match numel
        .checked_mul(itemsize)
        .filter(|&n| n <= isize::MAX as usize)
    {
        Some(n) => Ok(n),
        None => Err(Error::Overflow { what: "nbytes" }),
    }
}

/// Row-major strides, PyTorch's way: a size-0 or size-1 dimension counts as 1 for the
/// dimensions outside it, so strides never collapse to 0. (Inlined: built in the caller's frame,
/// a small vector is not copied out through memory right after being written.)
#[inline(always)]
pub fn contiguous_strides(shape: &[usize]) -> Result<Strides> {
    let mut strides: Strides = try_small_elem(0, shape.len())?;
    fill_contiguous_strides(&mut strides, shape);
    Ok(strides)
}

/// The row-major stride of the dimension outside one of size `d` and stride `stride` (a size-0
/// dimension counts as 1, as PyTorch has it).
#[inline(always)]
fn outer_stride(stride: isize, d: usize) -> isize {
    stride.saturating_mul(d.max(1) as isize)
}

/// Writes [`contiguous_strides`] of `shape` into `strides` (of the same length).
#[inline(always)]
pub fn fill_contiguous_strides(strides: &mut [isize], shape: &[usize]) {
    let mut acc: isize = 1;
    for (s, &d) in strides.iter_mut().zip(shape).rev() {
        *s = acc;
        acc = outer_stride(acc, d);
    }
}

/// Whether a stride of a dimension of size `n` addresses no element, in a shape that is `empty`
/// (holds a size 0): such a stride may be anything, even negative.
pub fn addresses_nothing(n: usize, empty: bool) -> bool {
    n == 1 || empty
}

/// Whether `strides` are exactly [`contiguous_strides`] of `shape`, size-1 dimensions included.
pub fn is_row_major(shape: &[usize], strides: &[isize]) -> bool {
    let mut acc: isize = 1;
    for (&s, &d) in strides.iter().zip(shape).rev() {
        if s != acc {
            return false;
        }
        acc = outer_stride(acc, d);
    }
    true
}

/// Row-major with no gaps, PyTorch's way: size-1 dimensions may have any stride, and a view with
/// no elements counts as contiguous.
pub fn is_contiguous(shape: &[usize], strides: &[isize]) -> bool {
    if shape.contains(&0) {
        return true;
    }
    let mut expected = 1isize;
    for (&size, &stride) in shape.iter().zip(strides).rev() {
        if size != 1 {
            if stride != expected {
                return false;
            }
            expected = expected.saturating_mul(size as isize);
        }
    }
    true
}

/// Broadcast two shapes (docs/semantics.md, sections 1-2). Walks from the right; a 1 gives way to
/// the other size, including 0; the error names the first mismatch from the right.
pub fn broadcast_shapes(a: &[usize], b: &[usize]) -> Result<Dims> {
    let ndim = a.len().max(b.len());
    let mut out: Dims = try_small_elem(0, ndim)?;
    for i in (0..ndim).rev() {
        let offset = ndim - 1 - i;
        let sa = if offset < a.len() {
            a[a.len() - 1 - offset]
        } else {
            1
        };
        let sb = if offset < b.len() {
            b[b.len() - 1 - offset]
        } else {
            1
        };
        out[i] = if sa == sb || sb == 1 {
            sa
        } else if sa == 1 {
            sb
        } else {
            return Err(Error::or_alloc(|| {
                Ok(Error::NotBroadcastable {
                    a: try_to_vec(a)?,
                    b: try_to_vec(b)?,
                    dim: i,
                    size_a: sa,
                    size_b: sb,
                })
            }));
        };
    }
    Ok(out)
}

/// A size as `broadcast_shapes` reads it: a tensor's (never negative) or a caller's (signed).
pub trait ShapeSize: Copy {
    fn signed(self) -> i64;
}

impl ShapeSize for usize {
    fn signed(self) -> i64 {
        // A tensor's sizes multiply to at most isize::MAX elements, so each fits.
        self as i64
    }
}

impl ShapeSize for i64 {
    fn signed(self) -> i64 {
        self
    }
}

/// Text of the error for a negative size that would enter the common shape (PyTorch's own).
pub const NEGATIVE_BROADCAST_DIM: &str =
    "Attempting to broadcast a dimension with negative length!";

/// Broadcast several shapes at once, with PyTorch's `broadcast_shapes` algorithm and texts.
///
/// The checks run in PyTorch's order, shape by shape and from the last dimension: a size equal
/// to the common one so far passes; a common 1 takes the size, unless it is negative
/// ([`NEGATIVE_BROADCAST_DIM`], an invalid argument); then a 1 passes and any other size is a
/// mismatch. So a negative size met against a common size other than 1 is a mismatch naming it,
/// and whichever problem comes first in that order is the one reported.
pub fn broadcast_shapes_n<S: ShapeSize>(shapes: &[&[S]]) -> Result<Dims> {
    let ndim = shapes.iter().map(|s| s.len()).max().unwrap_or(0);
    let mut common: Dims = try_small_elem(1, ndim)?;
    for (arg, shape) in shapes.iter().enumerate() {
        for back in 1..=shape.len() {
            let size = shape[shape.len() - back].signed();
            let slot = &mut common[ndim - back];
            if size == *slot as i64 {
                continue;
            }
            if *slot == 1 {
                *slot =
                    usize::try_from(size).map_err(|_| Error::invalid(NEGATIVE_BROADCAST_DIM))?;
            } else if size != 1 {
                return Err(Error::or_alloc(|| {
                    Ok(Error::NaryNotBroadcastable {
                        arg,
                        index: -(back as isize),
                        size,
                        shape: try_collect(shape.iter().map(|s| s.signed()))?,
                        expected: try_to_vec(&common)?,
                    })
                }));
            }
        }
    }
    Ok(common)
}

/// A written tensor keeps its shape: it must be the broadcast one (`output with shape [..]
/// doesn't match the broadcast shape [..]`).
pub(crate) fn check_output_shape(output: &[usize], broadcast: &[usize]) -> Result<()> {
    if output == broadcast {
        return Ok(());
    }
    Err(Error::or_alloc(|| {
        Ok(Error::OutputShape {
            output: try_to_vec(output)?,
            broadcast: try_to_vec(broadcast)?,
        })
    }))
}

/// The in-place rule (docs/semantics.md, section 4): `other` must expand to `self`'s shape.
pub fn check_inplace(self_shape: &[usize], other: &[usize]) -> Result<()> {
    if other.len() > self_shape.len() {
        // More dimensions than `self`: the broadcast shape cannot be `self`'s.
        return check_output_shape(self_shape, &broadcast_shapes(self_shape, other)?);
    }
    let lead = self_shape.len() - other.len();
    for i in (0..other.len()).rev() {
        let (s, o) = (self_shape[lead + i], other[i]);
        if o != s && o != 1 {
            return Err(Error::or_alloc(|| {
                Ok(Error::InplaceMismatch {
                    self_shape: try_to_vec(self_shape)?,
                    other_shape: try_to_vec(other)?,
                    dim: lead + i,
                    self_size: s,
                    other_size: o,
                })
            }));
        }
    }
    Ok(())
}

/// Shape and strides of `expand(sizes)` (PyTorch's `inferExpandGeometry`): -1 keeps a size,
/// expanded dimensions get stride 0, new leading dimensions of size 1 get the stride that keeps
/// them contiguous with the next one.
pub fn expand_geometry(
    shape: &[usize],
    strides: &[isize],
    sizes: &[i64],
) -> Result<(Dims, Strides)> {
    let ndim = sizes.len();
    if ndim < shape.len() {
        return Err(Error::ExpandTooFewSizes {
            given: ndim,
            ndim: shape.len(),
        });
    }
    let mut out_shape: Dims = try_small_elem(0, ndim)?;
    let mut out_strides: Strides = try_small_elem(0, ndim)?;
    let mut negative = None;
    for i in (0..ndim).rev() {
        let offset = ndim - 1 - i;
        let existing = shape.len().checked_sub(offset + 1);
        let (size, mut stride) = match existing {
            Some(d) => (shape[d] as i64, strides[d]),
            None if i + 1 < ndim => (
                1,
                (out_shape[i + 1] as isize).saturating_mul(out_strides[i + 1]),
            ),
            None => (1, 1),
        };
        let mut target = sizes[i];
        if target == -1 {
            if existing.is_none() {
                return Err(Error::or_alloc(|| {
                    Ok(Error::ExpandLeadingMinusOne {
                        sizes: try_to_vec(sizes)?,
                        shape: try_to_vec(shape)?,
                        dim: i,
                    })
                }));
            }
            target = size;
        }
        if size != target {
            if size != 1 {
                return Err(Error::or_alloc(|| {
                    Ok(Error::ExpandMismatch {
                        sizes: try_to_vec(sizes)?,
                        shape: try_to_vec(shape)?,
                        dim: i,
                        target,
                        size: size as usize,
                    })
                }));
            }
            stride = 0;
        }
        // PyTorch lets other negative sizes through this walk and fails on them afterwards, so
        // an error further left (such as a leading -1) is reported first.
        if target < 0 && negative.is_none() {
            negative = Some(Error::ExpandNegative { dim: i, target });
        }
        out_shape[i] = target.max(0) as usize;
        out_strides[i] = stride;
    }
    if let Some(e) = negative {
        return Err(e);
    }
    checked_numel(&out_shape)?;
    Ok((out_shape, out_strides))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcast_documented_examples() {
        assert_eq!(
            &broadcast_shapes(&[5, 7, 3], &[5, 7, 3]).unwrap()[..],
            &[5, 7, 3]
        );
        assert_eq!(
            &broadcast_shapes(&[5, 1, 4, 1], &[3, 1, 1]).unwrap()[..],
            &[5, 3, 4, 1]
        );
        assert_eq!(&broadcast_shapes(&[1], &[3, 1, 7]).unwrap()[..], &[3, 1, 7]);
        let e = broadcast_shapes(&[5, 2, 4, 1], &[3, 1, 1]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 1"
        );
        let e = broadcast_shapes(&[0], &[2, 2]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "The size of tensor a (0) must match the size of tensor b (2) at non-singleton dimension 1"
        );
    }

    #[test]
    fn row_major_includes_size_one_strides() {
        assert!(is_row_major(&[2, 3], &[3, 1]));
        assert!(is_row_major(&[3, 1], &[1, 1]));
        assert!(is_row_major(&[2, 0, 3], &[3, 3, 1]));
        assert!(is_row_major(&[], &[]));
        // Contiguous, but a size-1 dimension has a stride of its own.
        assert!(!is_row_major(&[1, 3], &[1, 1]));
        assert!(is_contiguous(&[1, 3], &[1, 1]));
        assert!(!is_row_major(&[2, 3], &[1, 2]));
    }

    #[test]
    fn zero_sizes_meet_ones() {
        assert_eq!(&broadcast_shapes(&[3, 1], &[1, 0]).unwrap()[..], &[3, 0]);
        assert_eq!(&broadcast_shapes(&[1, 0], &[3, 1]).unwrap()[..], &[3, 0]);
        assert!(broadcast_shapes(&[0, 3], &[2, 3]).is_err());
        assert_eq!(&broadcast_shapes(&[], &[0]).unwrap()[..], &[0]);
    }

    #[test]
    fn nary_message() {
        let e = broadcast_shapes_n::<usize>(&[&[3], &[2], &[], &[1]]).unwrap_err();
        assert_eq!(e.to_string(), "Attempting to broadcast a dimension of length 2 at -1! Mismatching argument at index 1 had (2,); but expected shape should be broadcastable to [3]");
    }

    #[test]
    fn nary_negative_sizes() {
        let e = broadcast_shapes_n::<i64>(&[&[2, -1]]).unwrap_err();
        assert_eq!(e.kind(), super::super::ErrorKind::InvalidArgument);
        assert_eq!(e.to_string(), NEGATIVE_BROADCAST_DIM);
        let e = broadcast_shapes_n::<i64>(&[&[2], &[-1]]).unwrap_err();
        assert_eq!(e.kind(), super::super::ErrorKind::Shape);
        assert_eq!(e.to_string(), "Attempting to broadcast a dimension of length -1 at -1! Mismatching argument at index 1 had (-1,); but expected shape should be broadcastable to [2]");
        assert_eq!(
            &broadcast_shapes_n::<i64>(&[&[2, 1], &[3]]).unwrap()[..],
            &[2, 3]
        );
    }

    #[test]
    fn inplace_rule() {
        assert!(check_inplace(&[5, 3, 4, 1], &[3, 1, 1]).is_ok());
        let e = check_inplace(&[1, 3, 1], &[3, 1, 7]).unwrap_err();
        assert_eq!(e.to_string(), "The expanded size of the tensor (1) must match the existing size (7) at non-singleton dimension 2.");
        let e = check_inplace(&[], &[2]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "output with shape [] doesn't match the broadcast shape [2]"
        );
    }

    #[test]
    fn expand_geometry_zero_strides() {
        let (shape, strides) = expand_geometry(&[3, 1], &[1, 1], &[2, -1, 4]).unwrap();
        assert_eq!(&shape[..], &[2, 3, 4]);
        assert_eq!(&strides[..], &[0, 1, 0]);
        let e = expand_geometry(&[1, 1, 2], &[2, 2, 1], &[2, -1, 4, -1, 2]).unwrap_err();
        assert_eq!(e.to_string(), "The expanded size of the tensor (-1) isn't allowed in a leading, non-existing dimension 1");
    }

    #[test]
    fn overflow_is_refused() {
        assert!(checked_numel(&[1 << 40, 1 << 40]).is_err());
        assert!(checked_nbytes(1 << 62, 8).is_err());
        assert_eq!(
            contiguous_strides(&[2, 0, 3]).unwrap().to_vec(),
            vec![3, 3, 1]
        );
    }
}
