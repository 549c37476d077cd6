//! The further reductions: `var`, `std`, `all`, `any`, `argmax`, `argmin`, `logsumexp`, `nansum`
//! and `nanmean`, with PyTorch 2.15's result types, rules and error texts.
//!
//! Each is composed of the elementwise operations and the basic reductions ([`super::reduce`]),
//! so it inherits their checks, layouts and summation order; `argmax`/`argmin` scan rows of a
//! contiguous copy. `var`, `std` and `logsumexp` compute in float64 whatever the input's floating
//! type (two passes: the mean, then the sum of squared deviations), and round once to the
//! result type: the error is far inside the bounds PyTorch's own float64 accumulation meets.
use super::alloc::{try_small, try_small_collect, try_small_elem};
use super::binary_ops::BinaryOp;
use super::dtype::DType;
use super::elem::Elem;
use super::error::{Error, Result};
use super::ops::{self, Options, Warning, Warnings};
use super::reduce::{self, ReduceOp};
use super::shape::{checked_numel, Dims};
use super::tensor::{wrap_dim, Init, Scalar, Tensor};
use super::unary::unary;
use super::unary_ops::UnaryOp;
use smallvec::{smallvec, SmallVec};

/// The reduced dimensions (one flag per dimension) and the result shape, after PyTorch's checks
/// of `dims` (range, then repeats). An empty `dims` reduces every dimension.
fn reduced(t: &Tensor, dims: &[i64], keepdim: bool) -> Result<reduce::Reduction> {
    reduce::decide(ReduceOp::Sum, DType::F64, t.shape(), dims, keepdim)
}

/// PyTorch's reduction factor: the input's elements per output element (0 when there is no
/// output element).
fn reduction_factor(t: &Tensor, r: &reduce::Reduction) -> Result<usize> {
    // The result's elements are counted checked: a size 0 beside sizes whose product overflows
    // makes none, and a result of an empty input over its empty dimension can be larger than the
    // input, too large to count (refused as making the result would refuse it).
    Ok(t.numel().checked_div(checked_numel(&r.shape)?).unwrap_or(0))
}

fn binary(op: BinaryOp, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    Ok(ops::binary(op, a, b, Options::default())?.0)
}

fn number(op: BinaryOp, a: &Tensor, s: f64) -> Result<Tensor> {
    Ok(ops::binary_number(op, a, Scalar::Float(s), false, Options::default())?.0)
}

/// `t` in float64 (a row-major copy, or `t` itself).
fn in_f64(t: &Tensor) -> Result<Tensor> {
    match t.dtype() {
        DType::F64 => t.try_clone(),
        _ => t.to_contiguous(DType::F64),
    }
}

/// `t` (a row-major result of the right element count) with `shape`, in `dtype`.
fn finish(t: &Tensor, shape: &[usize], dtype: DType) -> Result<Tensor> {
    let sizes: SmallVec<[i64; 6]> = try_small_collect(shape.iter().map(|&s| s as i64))?;
    let (view, _) = t.reshape(&sizes)?;
    match view.dtype() == dtype {
        true => Ok(view),
        false => view.to_contiguous(dtype),
    }
}

/// PyTorch's `var(dim, correction, keepdim)` (or `std`, its square root): the sum of squared
/// deviations from the mean over `n - correction`, `n` the elements per output. Where that is at
/// most 0 the result is inf (or NaN: no deviation, or nothing reduced) and the call warns. An
/// input with no elements gives NaN whatever the correction, as PyTorch's trivial reduction.
pub fn var_std(
    t: &Tensor,
    dims: &[i64],
    correction: f64,
    keepdim: bool,
    std: bool,
) -> Result<(Tensor, Warnings)> {
    if !t.dtype().is_floating() {
        return Err(Error::VarDtype);
    }
    let r = reduced(t, dims, keepdim)?;
    let dof = reduction_factor(t, &r)? as f64 - correction;
    let warnings = match dof <= 0.0 {
        true => smallvec![Warning::DegreesOfFreedom { std }],
        false => Warnings::new(),
    };
    if t.numel() == 0 {
        // PyTorch's trivial reduction: NaN everywhere, whatever the correction (a negative one
        // leaves degrees of freedom, but there is no element).
        let nan = Tensor::new(t.dtype(), &r.shape, Init::Fill(f64::NAN))?;
        return Ok((nan, warnings));
    }
    let x = in_f64(t)?;
    let mean = reduce::reduce(ReduceOp::Mean, &x, dims, true)?;
    let dev = binary(BinaryOp::Sub, &x, &mean)?;
    let squares = binary(BinaryOp::Mul, &dev, &dev)?;
    let sum = reduce::reduce(ReduceOp::Sum, &squares, dims, keepdim)?;
    let mut result = number(BinaryOp::Div, &sum, dof.max(0.0))?;
    if std {
        result = unary(UnaryOp::Sqrt, &result)?;
    }
    Ok((finish(&result, &r.shape, t.dtype())?, warnings))
}

/// PyTorch's `all` / `any`: bool (uint8 for a uint8 input), NaN counts as true; an empty slice
/// gives true / false. `dims` `None` reduces every dimension; an empty list reduces none (each
/// element tested, the shape kept), unlike the other reductions.
pub fn all_any(t: &Tensor, dims: Option<&[i64]>, keepdim: bool, any: bool) -> Result<Tensor> {
    let result = match t.dtype() {
        DType::U8 => DType::U8,
        _ => DType::Bool,
    };
    let dims = match dims {
        Some([]) => {
            let zero = unary(UnaryOp::LogicalNot, t)?;
            return finish(&unary(UnaryOp::LogicalNot, &zero)?, t.shape(), result);
        }
        Some(dims) => dims,
        None => &[],
    };
    // The dimensions are checked before anything is computed: a refused list is refused
    // whatever the input's size (its element test may not fit in memory).
    let r = reduced(t, dims, keepdim)?;
    let zero = unary(UnaryOp::LogicalNot, t)?;
    // `all`: no zero element; `any`: some non-zero element.
    let (counted, test) = match any {
        true => (unary(UnaryOp::LogicalNot, &zero)?, BinaryOp::Gt),
        false => (zero, BinaryOp::Eq),
    };
    let count = reduce::reduce(ReduceOp::Sum, &counted, dims, keepdim)?;
    let truth = ops::binary_number(test, &count, Scalar::Int(0), false, Options::default())?.0;
    finish(&truth, &r.shape, result)
}

/// PyTorch's `argmax` / `argmin`: int64 indices of the first extreme element (NaN counts as the
/// extreme, the first NaN wins; 0.0 and -0.0 are equal), along `dim`, or in the row-major
/// flattened input when `dim` is `None` (with `keepdim`, every dimension 1).
pub fn arg_extreme(t: &Tensor, dim: Option<i64>, keepdim: bool, max: bool) -> Result<Tensor> {
    let op = if max { "argmax" } else { "argmin" };
    if t.dtype() == DType::Bool {
        return Err(Error::ArgBool { op });
    }
    let ndim = t.ndim();
    let (rows, shape) = match dim {
        None => {
            if t.numel() == 0 {
                return Err(Error::ArgEmpty { op, dim: None });
            }
            let shape = match keepdim {
                true => try_small_elem(1, ndim)?,
                false => Dims::new(),
            };
            // One row: the elements in row-major order.
            (t.to_contiguous(t.dtype())?, shape)
        }
        Some(d) => {
            let w = wrap_dim(d, ndim.max(1))?;
            if ndim > 0 && t.shape()[w] == 0 {
                return Err(Error::ArgEmpty { op, dim: Some(w) });
            }
            // The reduced dimension last, so each output's elements are one row.
            // Dimension k of the permuted view: the dimensions before `w`, those after it, `w`.
            let order: SmallVec<[i64; 6]> = try_small_collect((0..ndim).map(|k| {
                let d = if k + 1 == ndim {
                    w
                } else if k < w {
                    k
                } else {
                    k + 1
                };
                d as i64
            }))?;
            let moved = t.permute(&order)?;
            let mut shape: Dims = try_small(t.shape())?;
            if ndim > 0 {
                match keepdim {
                    true => shape[w] = 1,
                    false => {
                        shape.remove(w);
                    }
                }
            }
            (moved.to_contiguous(t.dtype())?, shape)
        }
    };
    let out = Tensor::new(DType::I64, &shape, Init::Uninit)?;
    let count = out.numel();
    let n = rows.numel().checked_div(count).unwrap_or(0);
    // SAFETY: `rows` is a row-major tensor of `count * n` elements of its type, `out` a new
    // row-major int64 tensor of `count` elements; they do not overlap.
    unsafe {
        crate::with_elem!(rows.dtype(), T => scan_rows::<T>(
            rows.data_ptr() as *const T,
            out.data_ptr() as *mut i64,
            count,
            n,
            max,
        ))
    };
    Ok(out)
}

/// Writes, for each of `count` rows of `n` elements, the index of its first extreme element.
///
/// # Safety
/// `rows` holds `count * n` readable elements, `out` `count` writable ones.
unsafe fn scan_rows<T: Elem>(rows: *const T, out: *mut i64, count: usize, n: usize, max: bool) {
    let floating = T::DTYPE.is_floating();
    // Integers compare as int64 (exact), floats as float64 (exact).
    let better = |a: T, b: T| -> bool {
        if floating {
            let (x, y) = (a.to_f64(), b.to_f64());
            if max {
                x > y
            } else {
                x < y
            }
        } else {
            let (x, y) = (a.to_i64(), b.to_i64());
            if max {
                x > y
            } else {
                x < y
            }
        }
    };
    for r in 0..count {
        // SAFETY: row `r` lies within the `count * n` elements.
        let row = unsafe { std::slice::from_raw_parts(rows.add(r * n), n) };
        let mut best = 0;
        for (i, &v) in row.iter().enumerate().skip(1) {
            let b = row[best];
            if floating && b.to_f64().is_nan() {
                break;
            }
            if (floating && v.to_f64().is_nan()) || better(v, b) {
                best = i;
            }
        }
        // SAFETY: `r < count`.
        unsafe { out.add(r).write(best as i64) };
    }
}

/// PyTorch's `logsumexp`: `max + log(sum(exp(x - max)))` per output, bool and integers giving
/// float32. An empty slice gives -inf; NaN gives NaN; +inf (without NaN) inf.
pub fn logsumexp(t: &Tensor, dims: &[i64], keepdim: bool) -> Result<Tensor> {
    let r = reduced(t, dims, keepdim)?;
    let dtype = match t.dtype().is_floating() {
        true => t.dtype(),
        false => DType::F32,
    };
    let x = in_f64(t)?;
    if reduction_factor(t, &r)? == 0 {
        // Row-major, as PyTorch's result (resized by `sum_out`), also when it is empty.
        return Tensor::new(dtype, &r.shape, Init::Fill(f64::NEG_INFINITY));
    }
    let top = reduce::reduce(ReduceOp::Amax, &x, dims, true)?;
    // An infinite maximum is not subtracted (inf - inf would be NaN).
    let infinite = unary(UnaryOp::Isinf, &top)?;
    let zero = Tensor::wrapped_number(Scalar::Float(0.0))?;
    let shift = ops::where_(&infinite, &zero, &top)?.0;
    let exps = unary(UnaryOp::Exp, &binary(BinaryOp::Sub, &x, &shift)?)?;
    let sums = reduce::reduce(ReduceOp::Sum, &exps, dims, true)?;
    let result = binary(BinaryOp::Add, &unary(UnaryOp::Log, &sums)?, &shift)?;
    finish(&result, &r.shape, dtype)
}

/// `t` with NaN read as 0.
fn nan_as_zero(t: &Tensor) -> Result<Tensor> {
    let nan = unary(UnaryOp::Isnan, t)?;
    // A 0-d zero of `t`'s own type, so that the result keeps it (even for a 0-d `t`).
    let zero = Tensor::new(t.dtype(), &[], Init::Zeros)?;
    Ok(ops::where_(&nan, &zero, t)?.0)
}

/// PyTorch's `nansum`: `sum` with NaN counted as 0 (bool and integers give int64).
pub fn nansum(t: &Tensor, dims: &[i64], keepdim: bool) -> Result<Tensor> {
    // The dimensions are checked before the NaN test, whose mask may not fit in memory.
    reduced(t, dims, keepdim)?;
    match t.dtype().is_floating() {
        true => reduce::reduce(ReduceOp::Sum, &nan_as_zero(t)?, dims, keepdim),
        false => reduce::reduce(ReduceOp::Sum, t, dims, keepdim),
    }
}

/// PyTorch's `nanmean`: the mean of the non-NaN elements (NaN when there are none); floating
/// types only. As PyTorch, `nansum` divided by the count of non-NaN elements.
pub fn nanmean(t: &Tensor, dims: &[i64], keepdim: bool) -> Result<Tensor> {
    if !t.dtype().is_floating() {
        return Err(Error::NanmeanDtype { dtype: t.dtype() });
    }
    let sum = nansum(t, dims, keepdim)?;
    let counted = unary(UnaryOp::LogicalNot, &unary(UnaryOp::Isnan, t)?)?;
    let count = reduce::reduce(ReduceOp::Sum, &counted, dims, keepdim)?;
    binary(BinaryOp::Div, &sum, &count)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `nansum` and `nanmean` of a float input too large to test for NaN (a broadcast view of
    /// 2^32 x 9 elements) refuse a repeated or out-of-range dimension instead of failing to
    /// allocate the NaN mask.
    #[test]
    fn nan_reductions_check_dims_before_testing_for_nan() {
        let one = Tensor::new(DType::F32, &[3, 3], Init::Fill(0.0)).unwrap();
        let huge = one.expand(&[2, 1 << 31, 3, 3]).unwrap();
        for mean in [false, true] {
            let call = |dims: &[i64]| match mean {
                true => nanmean(&huge, dims, true),
                false => nansum(&huge, dims, true),
            };
            let err = call(&[2, 2]).unwrap_err();
            assert!(matches!(err, Error::DimRepeated { dim: 2 }), "{err:?}");
            let err = call(&[4]).unwrap_err();
            assert!(
                matches!(err, Error::DimOutOfRange { dim: 4, ndim: 4 }),
                "{err:?}"
            );
        }
    }

    /// A dimension out of range is refused before the elements are tested, so an expanded input
    /// too large to test element by element gets the dimension's error, not an allocation's.
    #[test]
    fn all_any_check_dims_before_testing_elements() {
        let one = Tensor::new(DType::I64, &[1], Init::Fill(0.0)).unwrap();
        let huge = one.expand(&[i64::MAX]).unwrap();
        for any in [false, true] {
            let err = all_any(&huge, Some(&[64]), false, any).unwrap_err();
            assert!(
                matches!(err, Error::DimOutOfRange { dim: 64, ndim: 1 }),
                "{err:?}"
            );
        }
    }
}
