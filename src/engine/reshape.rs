//! Shape-changing views, PyTorch's way: `infer_size` (the sizes a reshape asks for, with one -1
//! inferred) and `computeStride` (whether the new shape can be a view of the old strides, and
//! which strides it gets). Metadata only; `Tensor::view_sizes`, `reshape`, `flatten` use them.
use super::alloc::{try_small, try_small_collect, try_small_elem, try_to_vec};
use super::error::{Error, Result};
use super::shape::{fmt_list, Dims, Strides};

/// The shape `sizes` asks for, for a tensor of `numel` elements: one -1 is inferred, other
/// negative sizes are refused; errors and their order are PyTorch's `infer_size`.
pub fn infer_size(sizes: &[i64], numel: usize) -> Result<Dims> {
    let mut infer = None;
    // The product of the given sizes; None once it no longer fits (PyTorch's int64 would wrap).
    let mut product = Some(1usize);
    let mut has_zero = false;
    for (i, &s) in sizes.iter().enumerate() {
        if s == -1 {
            if infer.is_some() {
                return Err(Error::invalid("only one dimension can be inferred"));
            }
            infer = Some(i);
        } else if s >= 0 {
            has_zero |= s == 0;
            product = product
                .and_then(|p| p.checked_mul(s as usize))
                .filter(|&p| p <= isize::MAX as usize);
        } else {
            return Err(Error::invalid(format_args!(
                "invalid shape dimension {s} at index {i} of shape {}",
                fmt_list(sizes)
            )));
        }
    }
    let product = if has_zero { Some(0) } else { product };
    let Some(newsize) = product else {
        // Sizes that overflow hold no tensor. PyTorch's wrapped product matches an empty
        // input's 0 and fails later on the result's element count: the same text here.
        return Err(if numel == 0 {
            Error::Overflow { what: "numel" }
        } else {
            Error::or_alloc(|| {
                Ok(Error::ViewSize {
                    sizes: try_to_vec(sizes)?,
                    numel,
                })
            })
        });
    };
    let mut shape: Dims = try_small_collect(sizes.iter().map(|&s| s.max(0) as usize))?;
    if numel == newsize || (infer.is_some() && newsize > 0 && numel % newsize == 0) {
        if let Some(i) = infer {
            if newsize == 0 {
                return Err(Error::or_alloc(|| {
                    Ok(Error::ViewAmbiguous {
                        sizes: try_to_vec(sizes)?,
                    })
                }));
            }
            shape[i] = numel / newsize;
        }
        return Ok(shape);
    }
    Err(Error::or_alloc(|| {
        Ok(Error::ViewSize {
            sizes: try_to_vec(sizes)?,
            numel,
        })
    }))
}

/// Strides that make `new` a view of a tensor of `shape` and `strides` (same element count), or
/// None when no strides can (a dimension of the new shape would span two runs of memory that are
/// not evenly spaced). PyTorch's `computeStride`, step by step, so the strides it picks for size-1
/// dimensions and for empty tensors are the same. Fails only when memory for more than 5
/// dimensions is refused.
pub fn view_strides(shape: &[usize], strides: &[isize], new: &[usize]) -> Result<Option<Strides>> {
    if shape.is_empty() {
        return Ok(Some(try_small_elem(1, new.len())?));
    }
    let numel: usize = if shape.contains(&0) {
        0
    } else {
        shape.iter().product()
    };
    if numel == 0 {
        if shape == new {
            return Ok(Some(try_small(strides)?));
        }
        // Any strides address nothing; PyTorch takes row-major ones (int64 arithmetic, which
        // wraps, as it does there, for sizes no real tensor has).
        let mut out: Strides = try_small_elem(1, new.len())?;
        for d in (0..new.len().saturating_sub(1)).rev() {
            out[d] = (new[d + 1].max(1) as isize).wrapping_mul(out[d + 1]);
        }
        return Ok(Some(out));
    }
    // Products below stay within the element count or the view's memory span, except
    // `tensor_numel * chunk_base_stride` in the chunk test, computed wide so it cannot wrap.
    let mut out: Strides = try_small_elem(0, new.len())?;
    let mut view_d = new.len() as isize - 1;
    let mut chunk_base_stride = *strides.last().expect("non-empty shape");
    let mut tensor_numel = 1usize;
    let mut view_numel = 1usize;
    for tensor_d in (0..shape.len()).rev() {
        tensor_numel *= shape[tensor_d];
        let chunk_ends = tensor_d == 0
            || (shape[tensor_d - 1] != 1
                && strides[tensor_d - 1] as i128
                    != tensor_numel as i128 * chunk_base_stride as i128);
        if chunk_ends {
            while view_d >= 0 && (view_numel < tensor_numel || new[view_d as usize] == 1) {
                out[view_d as usize] = (view_numel as isize).wrapping_mul(chunk_base_stride);
                view_numel *= new[view_d as usize];
                view_d -= 1;
            }
            if view_numel != tensor_numel {
                return Ok(None);
            }
            if tensor_d > 0 {
                chunk_base_stride = strides[tensor_d - 1];
                tensor_numel = 1;
                view_numel = 1;
            }
        }
    }
    Ok((view_d == -1).then_some(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn infer_size_texts_and_order() {
        assert_eq!(&infer_size(&[2, -1], 6).unwrap()[..], &[2, 3]);
        let e = infer_size(&[2, 5], 6).unwrap_err();
        assert_eq!(
            e.to_string(),
            "shape '[2, 5]' is invalid for input of size 6"
        );
        let e = infer_size(&[-1, -1], 6).unwrap_err();
        assert_eq!(e.to_string(), "only one dimension can be inferred");
        // The invalid size comes first when it stands before the second -1.
        let e = infer_size(&[-2, -1, -1], 6).unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid shape dimension -2 at index 0 of shape [-2, -1, -1]"
        );
        let e = infer_size(&[0, -1], 0).unwrap_err();
        assert!(e
            .to_string()
            .starts_with("cannot reshape tensor of 0 elements into shape [0, -1] because"));
        assert!(matches!(
            infer_size(&[1 << 62, 4], 6),
            Err(Error::ViewSize { .. })
        ));
        assert!(matches!(
            infer_size(&[1 << 62, 4], 0),
            Err(Error::Overflow { .. })
        ));
        assert_eq!(&infer_size(&[-1, 1 << 62], 0).unwrap()[..], &[0, 1 << 62]);
    }

    #[test]
    fn strides_of_views() {
        // Contiguous: any reshape is a view.
        assert_eq!(
            &view_strides(&[2, 3], &[3, 1], &[6]).unwrap().unwrap()[..],
            &[1]
        );
        // Transposed: flattening would mix the two runs.
        assert!(view_strides(&[3, 2], &[1, 3], &[6]).unwrap().is_none());
        // An expanded dimension stays expanded when it is split off whole.
        assert_eq!(
            &view_strides(&[4, 2, 3], &[0, 3, 1], &[4, 6])
                .unwrap()
                .unwrap()[..],
            &[0, 1]
        );
        assert!(view_strides(&[4, 2, 3], &[0, 3, 1], &[8, 3])
            .unwrap()
            .is_none());
        // 0-d: all ones.
        assert_eq!(
            &view_strides(&[], &[], &[1, 1]).unwrap().unwrap()[..],
            &[1, 1]
        );
        // Empty: the same shape keeps its strides, another gets row-major ones.
        assert_eq!(
            &view_strides(&[0, 3], &[7, 2], &[0, 3]).unwrap().unwrap()[..],
            &[7, 2]
        );
        assert_eq!(
            &view_strides(&[0, 3], &[7, 2], &[3, 0]).unwrap().unwrap()[..],
            &[1, 1]
        );
    }
}
