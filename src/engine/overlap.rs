//! Memory-overlap tests for written-to tensors (docs/semantics.md, section 8), on addresses, so
//! two tensors that wrap the same caller memory separately are caught too. Cheap sufficient tests
//! come first; an exact test by enumeration settles the rest up to a size, beyond which overlap is
//! assumed.
//!
//! The lists these tests build (addresses, spans) are allocated fallibly: a refusal is
//! `Error::Alloc`, never an abort.
use super::alloc::{try_small_collect, try_vec};
use super::error::Result;
use super::shape::is_contiguous;
use super::tensor::Tensor;
use smallvec::SmallVec;

/// Largest view enumerated exactly; beyond it an undecided layout counts as overlapping.
const EXACT_LIMIT: usize = 1 << 20;

/// Do two elements of `t` share a memory location?
pub fn has_internal_overlap(t: &Tensor) -> Result<bool> {
    overlaps_itself(t.shape(), t.strides())
}

/// Do two elements of a view of this geometry (strides in elements) share a location? Decided
/// on the geometry alone, so the planner asks it too.
pub fn overlaps_itself(shape: &[usize], strides: &[isize]) -> Result<bool> {
    // The common case, decided without collecting dimensions. It includes every empty tensor:
    // with no elements, no two share a location (as in PyTorch, where an empty tensor counts as
    // contiguous), even when a dimension has stride 0.
    if is_contiguous(shape, strides) {
        return Ok(false);
    }
    let mut dims: SmallVec<[(usize, usize); 6]> =
        try_small_collect(shape.iter().zip(strides).map(|(&n, &s)| (n, s as usize)))?;
    dims.retain(|&mut (n, _)| n > 1);
    if dims.iter().any(|&(_, s)| s == 0) {
        return Ok(true);
    }
    // Non-overlapping when each stride passes the furthest offset of all smaller-stride dims.
    dims.sort_by_key(|&(_, s)| s);
    let mut reach = 0usize; // furthest element offset reachable by the dims so far
    let mut separable = true;
    for &(n, s) in &dims {
        if s <= reach {
            separable = false;
            break;
        }
        reach = reach.saturating_add((n - 1).saturating_mul(s));
    }
    if separable {
        return Ok(false);
    }
    Ok(match element_offsets(shape, strides)? {
        Some(mut addrs) => {
            addrs.sort_unstable();
            addrs.windows(2).any(|w| w[0] == w[1])
        }
        None => true,
    })
}

/// Does the written-to `dest` share memory with `input` other than by being the very same view?
pub fn overlaps_partially(dest: &Tensor, input: &Tensor) -> Result<bool> {
    // The common case, decided without walking shapes: separate blocks of memory.
    let ((d0, d1), (i0, i1)) = (dest.storage_range(), input.storage_range());
    if d1 <= i0 || i1 <= d0 {
        return Ok(false);
    }
    let (Some((d0, d1)), Some((i0, i1))) = (dest.byte_range(), input.byte_range()) else {
        return Ok(false);
    };
    if d1 <= i0 || i1 <= d0 {
        return Ok(false);
    }
    let same_view = d0 == i0
        && dest.shape() == input.shape()
        && dest.strides() == input.strides()
        && dest.dtype().size() == input.dtype().size();
    if same_view {
        return Ok(false);
    }
    // Ranges meet: compare the exact byte intervals of the elements.
    let (Some(dest_addrs), Some(input_addrs)) = (addresses(dest)?, addresses(input)?) else {
        return Ok(true);
    };
    let mut spans: Vec<(usize, usize, bool)> = try_vec(dest_addrs.len() + input_addrs.len())?;
    spans.extend(
        dest_addrs
            .iter()
            .map(|&a| (a, a + dest.dtype().size(), true)),
    );
    drop(dest_addrs);
    spans.extend(
        input_addrs
            .iter()
            .map(|&a| (a, a + input.dtype().size(), false)),
    );
    drop(input_addrs);
    spans.sort_unstable();
    // After sorting by start, an intersection between the two sets shows up as a span starting
    // before the furthest end seen so far of the other set.
    let (mut end_dest, mut end_input) = (0usize, 0usize);
    for (start, end, is_dest) in spans {
        if is_dest {
            if start < end_input {
                return Ok(true);
            }
            end_dest = end_dest.max(end);
        } else {
            if start < end_dest {
                return Ok(true);
            }
            end_input = end_input.max(end);
        }
    }
    Ok(false)
}

/// Start address of every element, or `None` when there are too many to list.
fn addresses(t: &Tensor) -> Result<Option<Vec<usize>>> {
    let (base, size) = (t.data_ptr() as usize, t.dtype().size());
    let mut offsets = element_offsets(t.shape(), t.strides())?;
    for a in offsets.iter_mut().flatten() {
        *a = base + *a * size;
    }
    Ok(offsets)
}

/// Offset (in elements) of every element, or `None` when there are too many to list.
fn element_offsets(shape: &[usize], strides: &[isize]) -> Result<Option<Vec<usize>>> {
    let numel = super::shape::numel(shape);
    if numel > EXACT_LIMIT {
        return Ok(None);
    }
    let mut out = try_vec(numel)?;
    let mut idx: SmallVec<[usize; 6]> = super::alloc::try_small_elem(0, shape.len())?;
    for _ in 0..numel {
        let off: usize = idx.iter().zip(strides).map(|(&i, &s)| i * s as usize).sum();
        out.push(off);
        for d in (0..idx.len()).rev() {
            idx[d] += 1;
            if idx[d] < shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    Ok(Some(out))
}
