//! The layout of a newly allocated result: PyTorch's TensorIterator rule, so that a result's
//! strides equal PyTorch's. When the inputs are laid out in the same permuted order,
//! the result keeps that order (it is dense, not row-major); otherwise it is row-major.
//!
//! PyTorch decides it in three steps, reproduced here on metadata alone:
//! 1. An input whose type differs from the computation type is first converted by `.to(dtype)`,
//!    which keeps a dense, non-overlapping layout as it is (an empty tensor counts as one, so its
//!    strides are kept whatever they are) and gives any other layout the dense strides of the
//!    same dimension order ([`dense_strides`]).
//! 2. When every input has the result's shape, a fast set-up applies: all row-major gives
//!    row-major, all channels-last (4-d) gives channels-last, all dense with equal strides gives
//!    those strides.
//! 3. Otherwise the dimensions are sorted by the inputs' strides (an insertion sort in which a
//!    broadcast dimension compares equal to anything, the first input that tells two dimensions
//!    apart decides, and equal strides put the smaller size first), and the result is dense in
//!    that order; row-major when the order is plain row-major.
//!
//! Nothing is allocated for up to eight dimensions but the returned strides (inline up to five).
use super::alloc::{try_small_elem, try_small_with_capacity};
use super::error::Result;
use super::shape::{contiguous_strides, is_contiguous, Strides};
use smallvec::SmallVec;

/// An input as it enters the result's layout: its geometry (strides in elements), and whether
/// it is converted to the computation type first.
#[derive(Debug, Clone, Copy)]
pub struct Input<'a> {
    pub shape: &'a [usize],
    pub strides: &'a [isize],
    pub converted: bool,
}

/// A dimension order, fastest first.
type Perm = SmallVec<[usize; 8]>;

/// The strides (in elements) of a new dense result of `shape`, broadcast from `inputs` (in
/// PyTorch's operand order), as PyTorch 2.x lays it out. Every input must broadcast to `shape`.
pub fn result_strides<const N: usize>(shape: &[usize], inputs: [Input<'_>; N]) -> Result<Strides> {
    let nd = shape.len();
    // Step 1: each input's own strides, as its converted copy has them where it is converted.
    let mut copies: [Option<Strides>; N] = std::array::from_fn(|_| None);
    for (copy, input) in copies.iter_mut().zip(&inputs) {
        if input.converted && !is_non_overlapping_and_dense(input.shape, input.strides) {
            *copy = Some(dense_order_strides(input.shape, input.strides)?);
        }
    }
    let own: [&[isize]; N] =
        std::array::from_fn(|k| copies[k].as_deref().unwrap_or(inputs[k].strides));

    // Step 2: the fast set-up, when every input has the result's shape.
    if N > 0 && inputs.iter().all(|i| i.shape == shape) {
        if own.iter().all(|s| is_contiguous(shape, s)) {
            return contiguous_strides(shape);
        }
        if own.iter().all(|s| is_channels_last(shape, s)) {
            let (c, h, w) = (shape[1] as isize, shape[2] as isize, shape[3] as isize);
            return copy_of(&[c * h * w, 1, c * w, c]);
        }
        let dense = own.iter().all(|s| is_non_overlapping_and_dense(shape, s));
        if dense && own.iter().all(|s| *s == own[0]) {
            return copy_of(own[N - 1]);
        }
    }

    // Step 3: each input's stride along each result dimension (0 where an input of size 1 is
    // expanded or has no such dimension), then the dimensions sorted by them.
    let stride = |k: usize, d: usize| -> isize {
        let lead = nd - inputs[k].shape.len();
        match d.checked_sub(lead) {
            Some(i) if inputs[k].shape[i] != 1 || shape[d] == 1 => own[k][i],
            _ => 0,
        }
    };
    let perm = sort_dims(shape, N, stride)?;
    if perm.iter().enumerate().all(|(i, &d)| d == nd - 1 - i) {
        return contiguous_strides(shape);
    }
    let mut out: Strides = try_small_elem(0, nd)?;
    let mut next = 1isize;
    for &d in &perm {
        out[d] = next;
        // Empty results may have sizes whose product overflows: nothing is addressed then.
        next = next.saturating_mul(shape[d] as isize);
    }
    Ok(out)
}

/// Strides of a dense copy of a tensor that keeps its layout, as PyTorch's `.to(dtype)` and
/// `empty_like` give it: a dense, non-overlapping layout is kept; any other gets dense strides
/// in the order its strides sort in.
pub fn dense_strides(shape: &[usize], strides: &[isize]) -> Result<Strides> {
    if is_non_overlapping_and_dense(shape, strides) {
        copy_of(strides)
    } else {
        dense_order_strides(shape, strides)
    }
}

fn copy_of(strides: &[isize]) -> Result<Strides> {
    super::alloc::try_small(strides)
}

/// PyTorch's `infer_dense_strides`: dense strides in the order the dimensions sort in by
/// `strides` (sizes 0 and 1 count as 1).
fn dense_order_strides(shape: &[usize], strides: &[isize]) -> Result<Strides> {
    let mut out: Strides = try_small_elem(1, shape.len())?;
    if shape.len() == 1 {
        return Ok(out);
    }
    let mut next = 1isize;
    for d in sort_dims(shape, 1, |_, d| strides[d])? {
        out[d] = next;
        if shape[d] > 1 {
            next = next.saturating_mul(shape[d] as isize);
        }
    }
    Ok(out)
}

/// The dimension order, fastest first, of PyTorch's `reorder_dimensions` over `n` operands whose
/// strides `stride(k, d)` gives: starting from row-major order reversed, an insertion sort in
/// which two dimensions are compared by the first operand whose strides tell them apart. A stride
/// of 0 (broadcast) tells nothing; equal strides put the larger size after the smaller, else tell
/// nothing; when no operand tells, the comparison is ambiguous and the sort looks further back.
fn sort_dims(shape: &[usize], n: usize, stride: impl Fn(usize, usize) -> isize) -> Result<Perm> {
    let nd = shape.len();
    let mut perm: Perm = try_small_with_capacity(nd)?;
    perm.extend((0..nd).rev());
    // 1: `d0` goes after `d1`; -1: before; 0: ambiguous.
    let compare = |d0: usize, d1: usize| -> i32 {
        for k in 0..n {
            let (s0, s1) = (stride(k, d0), stride(k, d1));
            if s0 == 0 || s1 == 0 {
                continue;
            }
            if s0 != s1 {
                return if s0 < s1 { -1 } else { 1 };
            }
            if shape[d0] > shape[d1] {
                return 1;
            }
        }
        0
    };
    for i in 1..nd {
        let mut d1 = i;
        for d0 in (0..i).rev() {
            match compare(perm[d0], perm[d1]) {
                1 => {
                    perm.swap(d0, d1);
                    d1 = d0;
                }
                -1 => break,
                _ => {}
            }
        }
    }
    Ok(perm)
}

/// PyTorch's channels-last contiguity of a 4-d tensor: dense in the order channels, width,
/// height, batch (size-1 dimensions skipped).
fn is_channels_last(shape: &[usize], strides: &[isize]) -> bool {
    if shape.len() != 4 {
        return false;
    }
    let mut expected = 1isize;
    for d in [1, 3, 2, 0] {
        if shape[d] != 1 {
            if strides[d] != expected {
                return false;
            }
            expected = expected.saturating_mul(shape[d] as isize);
        }
    }
    true
}

/// PyTorch's `is_non_overlapping_and_dense` flag: the dimensions of size 2 or more, in
/// increasing order of stride, are dense (strides 1, then each the product of the sizes before
/// it). A tensor with no elements always has the flag, whatever its strides: PyTorch sets it
/// when the tensor is contiguous, and counts every empty tensor as contiguous. So `.to(dtype)`
/// and `empty_like` keep an empty tensor's strides as they are.
fn is_non_overlapping_and_dense(shape: &[usize], strides: &[isize]) -> bool {
    if shape.contains(&0) {
        return true;
    }
    if let [size] = shape {
        return *size < 2 || strides[0] == 1;
    }
    // Found by search rather than by sorting a copy: each stride in turn must belong to exactly
    // one dimension of size 2 or more.
    let mut expected = 1isize;
    for _ in shape.iter().filter(|&&n| n >= 2) {
        let mut found = shape
            .iter()
            .zip(strides)
            .filter(|&(&n, &s)| n >= 2 && s == expected);
        let (Some((&n, _)), None) = (found.next(), found.next()) else {
            return false;
        };
        expected = expected.saturating_mul(n as isize);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input<'a>(shape: &'a [usize], strides: &'a [isize]) -> Input<'a> {
        Input {
            shape,
            strides,
            converted: false,
        }
    }

    fn strides<const N: usize>(shape: &[usize], inputs: [Input<'_>; N]) -> Vec<isize> {
        result_strides(shape, inputs).unwrap().to_vec()
    }

    /// Cases checked against PyTorch 2.15 by hand (`(x op y).stride()`).
    #[test]
    fn follows_the_inputs_permutation() {
        // x.permute(2, 0, 1) + y, x (64, 256, 256), y (256, 1, 1).
        let (xs, xt) = ([256, 64, 256], [1, 65536, 256]);
        let y = input(&[256, 1, 1], &[1, 1, 1]);
        assert_eq!(strides(&xs, [input(&xs, &xt), y]), [1, 65536, 256]);
        // A transposed (3, 2) with a number, or with a row-major operand of its shape.
        let t = input(&[3, 2], &[1, 3]);
        assert_eq!(strides(&[3, 2], [t, input(&[], &[])]), [1, 3]);
        assert_eq!(strides(&[3, 2], [t, input(&[3, 2], &[2, 1])]), [1, 3]);
        assert_eq!(strides(&[3, 2], [input(&[3, 2], &[2, 1]), t]), [2, 1]);
        // A stepped (not dense) input keeps its order: row-major here.
        assert_eq!(
            strides(&[2, 3], [input(&[2, 3], &[18, 3]), input(&[], &[])]),
            [3, 1]
        );
        // Channels-last inputs of the same shape.
        let cl = input(&[2, 3, 4, 5], &[60, 1, 15, 3]);
        assert_eq!(strides(&[2, 3, 4, 5], [cl, cl]), [60, 1, 15, 3]);
        let cl1 = input(&[2, 3, 1, 1], &[3, 1, 3, 3]);
        assert_eq!(strides(&[2, 3, 1, 1], [cl1, cl1]), [3, 1, 1, 1]);
    }

    /// A converted input takes part with the dense strides of its copy: an expanded int32
    /// operand added to a transposed float32 one no longer lets the latter decide.
    #[test]
    fn converted_inputs_take_part_with_their_copys_strides() {
        let b = input(&[4, 3], &[1, 4]);
        let expanded = |converted| Input {
            shape: &[4, 3],
            strides: &[0, 1],
            converted,
        };
        assert_eq!(strides(&[4, 3], [expanded(false), b]), [1, 4]);
        assert_eq!(strides(&[4, 3], [expanded(true), b]), [3, 1]);
        assert_eq!(&dense_strides(&[4, 3], &[0, 1]).unwrap()[..], [3, 1]);
        assert_eq!(&dense_strides(&[3, 2], &[1, 3]).unwrap()[..], [1, 3]);
        assert_eq!(&dense_strides(&[2, 3], &[18, 3]).unwrap()[..], [3, 1]);
    }

    /// Empty results: the dense strides of the order, products with 0 included.
    #[test]
    fn empty_results() {
        let a = input(&[0, 3, 2], &[1, 1, 3]);
        let b = input(&[3, 2], &[1, 3]);
        assert_eq!(strides(&[0, 3, 2], [a, b]), [1, 0, 0]);
        let e = input(&[0, 3], &[1, 0]);
        assert_eq!(strides(&[0, 3], [e, e]), [3, 1]);
        // A converted empty input takes part with its own strides (PyTorch: int16 (2, 0, 1)
        // strides (0, 0, 0) plus int64 (1,) gives (1, 1, 1); int32 (2, 0, 0) strides (6, 1, 3)
        // plus int64 (1,) gives (0, 1, 0)).
        let one = input(&[1], &[1]);
        let converted = |shape, strides| Input {
            shape,
            strides,
            converted: true,
        };
        let zeros = converted(&[2, 0, 1], &[0, 0, 0]);
        assert_eq!(strides(&[2, 0, 1], [zeros, one]), [1, 1, 1]);
        let odd = converted(&[2, 0, 0], &[6, 1, 3]);
        assert_eq!(strides(&[2, 0, 0], [odd, one]), [0, 1, 0]);
        assert_eq!(
            &dense_strides(&[2, 0, 0], &[6, 1, 3]).unwrap()[..],
            [6, 1, 3]
        );
    }

    /// Row-major inputs give row-major results, broadcast or not, with no more than five
    /// dimensions allocating nothing (and more allocating only the result).
    #[test]
    fn row_major_stays_row_major() {
        let a = input(&[3, 1], &[1, 1]);
        let b = input(&[1, 3], &[3, 1]);
        assert_eq!(strides(&[3, 3], [a, b]), [3, 1]);
        let shape = [2usize; 8];
        let c = contiguous_strides(&shape).unwrap();
        assert_eq!(
            strides(&shape, [input(&shape, &c), input(&[2], &[1])]),
            c.to_vec()
        );
    }
}
