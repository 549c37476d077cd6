//! Shape-changing calls: `bc_tensor_view`, `bc_tensor_reshape`, `bc_tensor_flatten` and
//! `bc_tensor_sum_to_size` (header; docs/semantics.md, section 14 for `sum_to_size`).
//!
//! * `view`/`reshape`: PyTorch's `infer_size` (one -1 inferred; two -1 or another negative size
//!   refused as invalid; sizes that do not hold the elements, an ambiguous -1 for an empty
//!   tensor, refused as shape errors; a product beyond `isize` an overflow for an empty tensor,
//!   a shape error otherwise) and `computeStride` (stated here from PyTorch's algorithm): a view
//!   shares the storage with those strides; where no strides allow a view, `view` is refused and
//!   `reshape` makes a row-major copy (`*copied` says which; not written on failure).
//! * `flatten(start, end)`: dimensions wrapped (a 0-d tensor as 1-d), `start > end` refused, a
//!   0-d tensor becomes `[1]`, `start == end` a view as it is, else `reshape` to the merged size.
//! * `sum_to_size`: `shape` must be one `t` broadcasts from (a negative size never is); nothing
//!   to sum gives a view of `t` (but an empty `shape` always sums, as PyTorch's `sum_to`), else a new row-major tensor of the sum's type (bool and
//!   integers give int64) with the values as `bc_reduce`'s sum (integers exactly, floats within
//!   the header's bound).
use super::reduce::{float_sum, RVal};
use super::*;

/// PyTorch's `computeStride`: the strides that make `new` a view of (`shape`, `strides`), if any.
fn compute_stride(shape: &[usize], strides: &[i64], new: &[usize]) -> Option<Vec<i64>> {
    if shape.is_empty() {
        return Some(vec![1; new.len()]);
    }
    let numel: u128 = numel_of(shape);
    if numel == 0 {
        if shape == new {
            return Some(strides.to_vec());
        }
        let mut out = vec![1i64; new.len()];
        for d in (0..new.len().saturating_sub(1)).rev() {
            out[d] = (new[d + 1].max(1) as i64).wrapping_mul(out[d + 1]);
        }
        return Some(out);
    }
    let mut out = vec![0i64; new.len()];
    let mut view_d = new.len() as i64 - 1;
    let mut chunk_base_stride = *strides.last().unwrap() as i128;
    let mut tensor_numel: i128 = 1;
    let mut view_numel: i128 = 1;
    for tensor_d in (0..shape.len()).rev() {
        tensor_numel *= shape[tensor_d] as i128;
        if tensor_d == 0
            || (shape[tensor_d - 1] != 1
                && strides[tensor_d - 1] as i128 != tensor_numel * chunk_base_stride)
        {
            while view_d >= 0 && (view_numel < tensor_numel || new[view_d as usize] == 1) {
                out[view_d as usize] = (view_numel as i64).wrapping_mul(chunk_base_stride as i64);
                view_numel *= new[view_d as usize] as i128;
                view_d -= 1;
            }
            if view_numel != tensor_numel {
                return None;
            }
            if tensor_d > 0 {
                chunk_base_stride = strides[tensor_d - 1] as i128;
                tensor_numel = 1;
                view_numel = 1;
            }
        }
    }
    (view_d == -1).then_some(out)
}

/// PyTorch's `infer_size` for a tensor of `numel` elements.
fn infer_size(sizes: &[i64], numel: u128) -> Expect<Vec<usize>> {
    let mut infer = None;
    let mut product: Option<u128> = Some(1);
    let mut zero = false;
    for (i, &s) in sizes.iter().enumerate() {
        if s == -1 {
            if infer.is_some() {
                return Err(BC_ERR_INVALID_ARG);
            }
            infer = Some(i);
        } else if s >= 0 {
            zero |= s == 0;
            product = product
                .and_then(|p| p.checked_mul(s as u128))
                .filter(|&p| p <= isize::MAX as u128);
        } else {
            return Err(BC_ERR_INVALID_ARG);
        }
    }
    let product = if zero { Some(0) } else { product };
    let Some(newsize) = product else {
        return Err(if numel == 0 {
            BC_ERR_OVERFLOW
        } else {
            BC_ERR_SHAPE
        });
    };
    let mut shape: Vec<usize> = sizes.iter().map(|&s| s.max(0) as usize).collect();
    if numel == newsize || (infer.is_some() && newsize > 0 && numel % newsize == 0) {
        if let Some(i) = infer {
            if newsize == 0 {
                return Err(BC_ERR_SHAPE);
            }
            shape[i] = (numel / newsize) as usize;
        }
        return Ok(shape);
    }
    Err(BC_ERR_SHAPE)
}

/// What a reshape-like call makes: a view (new shape and strides on the same storage) or a
/// row-major copy of that shape.
enum Made {
    View(Vec<usize>, Vec<i64>),
    Copy(Vec<usize>),
}

impl Runner<'_> {
    /// A size for `view`/`reshape`: mostly small, sometimes -1, rarely other negatives or huge.
    fn reshape_size(&mut self) -> i64 {
        let b = self.inp.u8();
        match b {
            0..=39 => -1,
            40..=229 => [1, 2, 3, 4, 6, 0, 1, 2, 8, 12][(b % 10) as usize],
            _ => [
                -2,
                i64::MIN,
                1 << 40,
                1 << 62,
                i64::MAX,
                24,
                16,
                5,
                7,
                9,
                10,
                1 << 31,
                -1,
                0,
                1,
                2,
                3,
                4,
                6,
                8,
                36,
                48,
                64,
                1 << 20,
                18,
                100,
            ][(b - 230) as usize],
        }
    }

    /// `reshape` of `t` to `sizes` (`view_only`: refuse instead of copying).
    fn model_reshape(t: &TM, sizes: &[i64], view_only: bool) -> Expect<Made> {
        let shape = infer_size(sizes, t.numel())?;
        match compute_stride(&t.shape, &t.strides, &shape) {
            Some(strides) => Ok(Made::View(shape, strides)),
            None if view_only => Err(BC_ERR_SHAPE),
            None => Ok(Made::Copy(shape)),
        }
    }

    /// `view`, `reshape` or `flatten`.
    pub(super) fn op_reshape(&mut self) -> Result<Result<(), Skip>, String> {
        let kind = self.inp.below(3);
        let a = self.arg();
        let n = [0, 1, 1, 2, 2, 2, 3, 3, 4, 5, 6, BC_MAX_NDIM + 1][self.inp.below(12)];
        let mut sizes: Vec<i64> = (0..n).map(|_| self.reshape_size()).collect();
        // Often sizes made from the tensor's own, so that they hold its elements.
        let (mode, at) = (self.inp.below(6), self.inp.u8() as usize);
        if let (Ok(t), true) = (self.resolve(a), mode > 1) {
            let own: Vec<i64> = t.shape.iter().map(|&s| s as i64).collect();
            let nd = own.len();
            sizes = match mode {
                2 => vec![-1],
                3 if nd > 0 => {
                    let mut v = own;
                    v[at % nd] = -1;
                    v
                }
                4 => own.into_iter().rev().collect(),
                _ if nd > 1 => {
                    // Two neighbours merged.
                    let k = at % (nd - 1);
                    let mut v = own[..k].to_vec();
                    v.push(own[k].saturating_mul(own[k + 1]));
                    v.extend(&own[k + 2..]);
                    v
                }
                _ => own,
            };
        }
        let n = sizes.len();
        let null_sizes = n > 0 && self.inp.u8() == 255;
        let (start, end) = (self.inp.int(), self.inp.int());
        let want_copied = self.inp.u8() % 4 != 0;
        let dst = self.inp.below(NSLOTS);
        let null_out = self.out_flag();
        let model = (|| -> Result<Expect<(TM, Made)>, Skip> {
            if null_out {
                return Ok(Err(BC_ERR_NULL_ARG));
            }
            if kind < 2 {
                if n > BC_MAX_NDIM {
                    return Ok(Err(BC_ERR_INVALID_ARG));
                }
                if null_sizes {
                    return Ok(Err(BC_ERR_NULL_ARG));
                }
            }
            let t = match self.resolve(a) {
                Ok(t) => t,
                Err(s) => return Ok(Err(s)),
            };
            let made = match kind {
                0 => Self::model_reshape(&t, &sizes, true),
                1 => Self::model_reshape(&t, &sizes, false),
                _ => (|| {
                    let nd = t.ndim().max(1);
                    let (s, e) = (Self::wrap_dim(start, nd)?, Self::wrap_dim(end, nd)?);
                    if s > e {
                        return Err(BC_ERR_INVALID_ARG);
                    }
                    if t.ndim() == 0 {
                        return Self::model_reshape(&t, &[1], false);
                    }
                    if s == e {
                        return Ok(Made::View(t.shape.clone(), t.strides.clone()));
                    }
                    let merged = checked_numel(&t.shape[s..=e])?;
                    let sizes: Vec<i64> = t.shape[..s]
                        .iter()
                        .chain(std::iter::once(&merged))
                        .chain(&t.shape[e + 1..])
                        .map(|&x| x as i64)
                        .collect();
                    Self::model_reshape(&t, &sizes, false)
                })(),
            };
            let made = match made {
                Ok(m) => m,
                Err(s) => return Ok(Err(s)),
            };
            if let Made::Copy(shape) = &made {
                if let Err(s) = predict_allocs(&[(numel_of(shape), itemsize(t.dtype))])? {
                    return Ok(Err(s));
                }
                if numel_of(shape) > MAX_CHECK_ELEMS {
                    return Err(Skip);
                }
            }
            Ok(Ok((t, made)))
        })();
        let expected = match model {
            Err(Skip) => return Ok(Err(Skip)),
            Ok(e) => e,
        };
        let names = ["view", "reshape", "flatten"];
        let what = names[kind];
        if kind < 2 {
            self.note(format!(
                "{what}({}, {sizes:?}{}) -> #{dst}",
                self.describe(a),
                if null_sizes { " NULL" } else { "" }
            ));
        } else {
            self.note(format!(
                "flatten({}, {start}, {end}) -> #{dst}",
                self.describe(a)
            ));
        }
        let h = self.raw(a);
        let sizes_ptr = if null_sizes {
            ptr::null()
        } else {
            sizes.as_ptr()
        };
        let mut copied: u8 = 0x55;
        let copied_ptr = if want_copied {
            &mut copied as *mut u8 as *mut bool
        } else {
            ptr::null_mut()
        };
        let mut out: *mut bc_tensor = 0x55 as *mut bc_tensor;
        let out_arg = if null_out {
            ptr::null_mut()
        } else {
            &mut out as *mut _
        };
        // SAFETY: sizes valid for `n` reads (or NULL), copied NULL or valid, out NULL or valid.
        let st = unsafe {
            match kind {
                0 => bc_tensor_view(h, sizes_ptr, n, out_arg),
                1 => bc_tensor_reshape(h, sizes_ptr, n, copied_ptr, out_arg),
                _ => bc_tensor_flatten(h, start, end, copied_ptr, out_arg),
            }
        };
        if null_out {
            return self.check_status(what, st, BC_ERR_NULL_ARG).map(Ok);
        }
        let (tm, was_copied) = match expected {
            Err(s) => (Err(s), None),
            Ok((t, Made::View(shape, strides))) => (
                Ok(TM {
                    shape,
                    strides,
                    ..t
                }),
                Some(false),
            ),
            Ok((t, Made::Copy(shape))) => {
                let values = self.values(&t);
                (
                    Ok(self.new_tensor(t.dtype, &shape, Some(values))),
                    Some(true),
                )
            }
        };
        self.finish_new(what, st, out, tm, dst)?;
        if want_copied && kind > 0 {
            let want = was_copied.map_or(0x55, |c| c as u8);
            if copied != want {
                return Err(format!(
                    "{what}: *copied is {copied:#x}, model expects {want:#x}"
                ));
            }
        }
        Ok(Ok(()))
    }

    /// `bc_tensor_sum_to_size`.
    pub(super) fn op_sum_to_size(&mut self) -> Result<Result<(), Skip>, String> {
        let a = self.arg();
        // Mostly a shape `t` broadcasts from: `t`'s own trailing sizes, some made 1.
        let derive = self.inp.u8() % 4 != 0;
        let n = [0, 1, 1, 2, 2, 3, 3, 4, 5, BC_MAX_NDIM + 1][self.inp.below(10)];
        let mut shape: Vec<i64> = (0..n).map(|_| self.inp.size()).collect();
        if derive {
            if let Ok(t) = self.resolve(a) {
                let keep = n.min(t.ndim());
                shape = t.shape[t.ndim() - keep..]
                    .iter()
                    .zip(&shape)
                    .map(|(&s, &r)| if r == 1 { 1 } else { s as i64 })
                    .collect();
            }
        }
        let n = shape.len();
        let null_shape = n > 0 && self.inp.u8() == 255;
        let dst = self.inp.below(NSLOTS);
        let null_out = self.out_flag();
        let model = (|| -> Result<Expect<(TM, Option<(i32, Vec<RVal>)>, Vec<usize>)>, Skip> {
            if null_out {
                return Ok(Err(BC_ERR_NULL_ARG));
            }
            if n > BC_MAX_NDIM {
                return Ok(Err(BC_ERR_INVALID_ARG));
            }
            if null_shape {
                return Ok(Err(BC_ERR_NULL_ARG));
            }
            let t = match self.resolve(a) {
                Ok(t) => t,
                Err(s) => return Ok(Err(s)),
            };
            // `shape` broadcasts to `t`'s shape.
            let nd = t.ndim();
            if n > nd || shape.iter().any(|&s| s < 0) {
                return Ok(Err(BC_ERR_SHAPE));
            }
            let lead = nd - n;
            let target: Vec<usize> = shape.iter().map(|&s| s as usize).collect();
            if (0..n).any(|i| target[i] != t.shape[lead + i] && target[i] != 1) {
                return Ok(Err(BC_ERR_SHAPE));
            }
            let reduced: Vec<bool> = (0..nd)
                .map(|d| d < lead || (target[d - lead] == 1 && t.shape[d] != 1))
                .collect();
            // An empty `shape` always sums (PyTorch's `sum_to` returns `t.sum()` for it, a 0-d
            // `t` included); otherwise nothing to sum gives `t` itself.
            if n > 0 && !reduced.contains(&true) {
                return Ok(Ok((t, None, target)));
            }
            let float = is_float(t.dtype);
            let dtype = if float { t.dtype } else { I64 };
            if let Err(s) = predict_allocs(&[(numel_of(&target), itemsize(dtype))])? {
                return Ok(Err(s));
            }
            let want = self
                .reduce_groups(&t, &reduced, &target)?
                .into_iter()
                .map(|g| match g {
                    None => RVal::Any,
                    Some(xs) if !float => RVal::Exact(Num::I64(
                        xs.iter().fold(0i64, |s, x| s.wrapping_add(x.to_i64())),
                    )),
                    Some(xs) => {
                        let v: Vec<f64> = xs.iter().map(|x| x.to_f64()).collect();
                        float_sum(&v, dtype, false)
                    }
                })
                .collect();
            Ok(Ok((t, Some((dtype, want)), target)))
        })();
        let expected = match model {
            Err(Skip) => return Ok(Err(Skip)),
            Ok(e) => e,
        };
        self.note(format!(
            "sum_to_size({}, {shape:?}{}) -> #{dst}",
            self.describe(a),
            if null_shape { " NULL" } else { "" }
        ));
        let h = self.raw(a);
        let shape_ptr = if null_shape {
            ptr::null()
        } else {
            shape.as_ptr()
        };
        let mut out: *mut bc_tensor = 0x55 as *mut bc_tensor;
        let out_arg = if null_out {
            ptr::null_mut()
        } else {
            &mut out as *mut _
        };
        // SAFETY: shape valid for `n` reads (or NULL); out NULL or valid.
        let st = unsafe { bc_tensor_sum_to_size(h, shape_ptr, n, out_arg) };
        if null_out {
            return self
                .check_status("sum_to_size", st, BC_ERR_NULL_ARG)
                .map(Ok);
        }
        match expected {
            Err(s) => self.finish_new("sum_to_size", st, out, Err(s), dst).map(Ok),
            Ok((t, None, _)) => self.finish_new("sum_to_size", st, out, Ok(t), dst).map(Ok),
            Ok((_, Some((dtype, want)), target)) => self.finish_reduction(
                "sum_to_size",
                st,
                out,
                Ok((dtype, target, want)),
                dst,
                false,
            ),
        }
    }
}
