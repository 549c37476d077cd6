//! The reductions besides `bc_reduce`, `bc_all` and `bc_any` (header, "bc_var" to
//! "bc_nanmean"; docs/semantics.md, section 14): `bc_var` and `bc_std` with a correction,
//! `bc_argmax` and `bc_argmin` along one dimension or the flattened input, `bc_logsumexp`,
//! `bc_nansum` and `bc_nanmean`, over lists of dimensions (in and out of range, repeated, NULL,
//! too many) with `keepdim`. Statuses in the library's order, result type, shape and (row-major)
//! strides exactly, the degrees-of-freedom warning, and values:
//!
//! * `argmax`/`argmin` exactly: the first extreme element, the first NaN when there is one
//!   (0.0 and -0.0 tie).
//! * `nansum` as `bc_reduce`'s sum of the non-NaN elements (integers exactly, floats within the
//!   header's `gamma(h) * sum(|x|)` of a compensated float64 sum, plus two units in the last
//!   place of the result type); `nanmean` that divided by the count of non-NaN elements, plus
//!   the rounding of the sum to the input's type (the library divides the rounded sum).
//! * `var` (the header: float64, two pairwise passes, rounded once) within
//!   `(h + 3) * u * sum((x - m)^2) + n * e^2` over `n - correction`, `u = 2^-53`,
//!   `e = h * u * sum(|x|) / n` the bound on the computed mean's error (a mean off by `e` adds
//!   `n * e^2` to the sum of squares, the cross term vanishing), plus two units in the last
//!   place of the result; `std` the square roots of that interval's ends. With no degrees of
//!   freedom: NaN or +inf (NaN for one element, +inf where the elements differ by more than
//!   the mean's error), and a warning.
//! * `logsumexp` (float64, rounded once) within `(h + 4) * u * (1 + |log s| + |m|)` of
//!   `m + log(s)`, `m` the maximum and `s` the compensated sum of `exp(x - m)`: each `exp` and
//!   the pairwise sum err by relative `(h + 2) * u`, the log and the addition by one rounding
//!   each; plus two units in the last place of the result type. An empty slice is -inf, NaN
//!   gives NaN, +inf inf, all -inf -inf.
//!
//! Inputs whose float64 copy would be too large to make in a fuzz run are skipped unless the
//! model refuses the call before anything is allocated.
use super::reduce::{compensated_sum, float_sum, ulp, RVal};
use super::*;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Stat {
    Var,
    Std,
    ArgMax,
    ArgMin,
    LogSumExp,
    NanSum,
    NanMean,
}

const STATS: [Stat; 7] = [
    Stat::Var,
    Stat::Std,
    Stat::ArgMax,
    Stat::ArgMin,
    Stat::LogSumExp,
    Stat::NanSum,
    Stat::NanMean,
];

fn name(s: Stat) -> &'static str {
    match s {
        Stat::Var => "var",
        Stat::Std => "std",
        Stat::ArgMax => "argmax",
        Stat::ArgMin => "argmin",
        Stat::LogSumExp => "logsumexp",
        Stat::NanSum => "nansum",
        Stat::NanMean => "nanmean",
    }
}

const U64: f64 = 1.0 / 9007199254740992.0; // 2^-53

/// The header's pairwise-summation factor `h` for `n` terms.
fn h_of(n: usize) -> f64 {
    106.0 + (n as f64 / 16384.0).max(1.0).log2().ceil()
}

/// The variance of one slice (`std`: its square root), as an interval.
fn var_value(xs: &[f64], correction: f64, std: bool, dtype: i32) -> RVal {
    let n = xs.len();
    let dof = n as f64 - correction;
    if n == 0 || xs.iter().any(|x| !x.is_finite()) {
        return RVal::Nan;
    }
    let total: f64 = xs.iter().map(|x| x.abs()).sum();
    // Squares of deviations must stay far inside float64's range for the bound to hold.
    if xs.iter().any(|x| x.abs() > 1e150) {
        return RVal::Any;
    }
    let h = h_of(n);
    let m = compensated_sum(xs) / n as f64;
    let e = h * U64 * total / n as f64 + U64 * m.abs();
    let devs: Vec<f64> = xs.iter().map(|x| (x - m) * (x - m)).collect();
    let ss = compensated_sum(&devs);
    let spread: f64 = xs.iter().map(|x| (x.abs() + m.abs() + e).powi(2)).sum();
    let err = (h + 3.0) * U64 * spread + n as f64 * e * e;
    if dof <= 0.0 {
        return if n == 1 {
            RVal::Nan
        } else if ss > err {
            RVal::Exact(Num::D(f64::INFINITY))
        } else {
            RVal::NanOrInf
        };
    }
    let (lo, hi) = ((ss - err).max(0.0) / dof, (ss + err) / dof);
    // A result near the top of the type's range may round to inf.
    if (if std { hi.sqrt() } else { hi }) >= super::reduce::largest(dtype) / 2.0 {
        return RVal::Any;
    }
    if std {
        RVal::Between(lo.sqrt(), hi.sqrt())
    } else {
        RVal::Between(lo, hi)
    }
}

/// `logsumexp` of one slice.
fn logsumexp_value(xs: &[f64]) -> RVal {
    if xs.is_empty() {
        return RVal::Exact(Num::D(f64::NEG_INFINITY));
    }
    if xs.iter().any(|x| x.is_nan()) {
        return RVal::Nan;
    }
    if xs.contains(&f64::INFINITY) {
        return RVal::Exact(Num::D(f64::INFINITY));
    }
    let m = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if m == f64::NEG_INFINITY {
        return RVal::Exact(Num::D(f64::NEG_INFINITY));
    }
    let terms: Vec<f64> = xs.iter().map(|x| (x - m).exp()).collect();
    let s = compensated_sum(&terms);
    let ls = s.ln();
    let bound = (h_of(xs.len()) + 4.0) * U64 * (1.0 + ls.abs() + m.abs());
    RVal::Near(m + ls, bound)
}

/// The index of the first extreme element (NaN counting as the extreme).
fn arg_value(xs: &[Num], max: bool) -> i64 {
    let mut best = 0;
    for (i, v) in xs.iter().enumerate().skip(1) {
        let b = xs[best];
        if b.is_nan() {
            break;
        }
        let better = if is_float(v.dtype()) {
            let (x, y) = (v.to_f64(), b.to_f64());
            v.is_nan() || if max { x > y } else { x < y }
        } else {
            let (x, y) = (v.to_i64(), b.to_i64());
            if max {
                x > y
            } else {
                x < y
            }
        };
        if better {
            best = i;
        }
    }
    best as i64
}

/// A correction: the usual ones, fractional, negative, larger than any count here.
fn correction_arg(b: u8) -> f64 {
    [1.0, 0.0, 1.0, 2.0, 0.5, -1.0, 3.0, 1e6][b as usize % 8]
}

impl Runner<'_> {
    /// One of the reductions of this family, drawn from `STATS`.
    pub(super) fn op_stats(&mut self) -> Result<Result<(), Skip>, String> {
        let stat = STATS[self.inp.below(STATS.len())];
        let a = self.arg();
        let (dims, count) = self.dims_arg();
        let keepdim = self.inp.flag();
        let correction = correction_arg(self.inp.u8());
        let dst = self.inp.below(NSLOTS);
        let null_out = self.out_flag();
        let arg = matches!(stat, Stat::ArgMax | Stat::ArgMin);
        // argmax/argmin take one dimension or NULL.
        let dim: Option<i64> = if arg {
            dims.as_ref().and_then(|d| d.first().copied())
        } else {
            None
        };
        let count = if arg { 0 } else { count };
        let mut warned = false;
        let model = (|| -> Result<Expect<(i32, Vec<usize>, Vec<RVal>)>, Skip> {
            if null_out {
                return Ok(Err(BC_ERR_NULL_ARG));
            }
            let empty = Vec::new();
            let dims = if arg {
                &empty
            } else {
                if count > BC_MAX_NDIM {
                    return Ok(Err(BC_ERR_INVALID_ARG));
                }
                match dims.as_ref() {
                    Some(d) => d,
                    None if count == 0 => &empty,
                    None => return Ok(Err(BC_ERR_NULL_ARG)),
                }
            };
            let t = match self.resolve(a) {
                Ok(t) => t,
                Err(s) => return Ok(Err(s)),
            };
            let float = is_float(t.dtype);
            // Too large to copy in float64 here: only the refusals made before any allocation
            // are checked.
            let big = t.numel().saturating_mul(8) > MAX_ALLOC_BYTES;
            let (dtype, reduced, shape) = match stat {
                Stat::ArgMax | Stat::ArgMin => {
                    if t.dtype == BOOL {
                        return Ok(Err(BC_ERR_DTYPE));
                    }
                    let nd = t.ndim();
                    match dim {
                        None => {
                            if t.numel() == 0 {
                                return Ok(Err(BC_ERR_SHAPE));
                            }
                            let shape = if keepdim { vec![1; nd] } else { vec![] };
                            (I64, vec![true; nd], shape)
                        }
                        Some(d) => {
                            let w = match Self::wrap_dim(d, nd.max(1)) {
                                Ok(w) => w,
                                Err(s) => return Ok(Err(s)),
                            };
                            if nd > 0 && t.shape[w] == 0 {
                                return Ok(Err(BC_ERR_SHAPE));
                            }
                            let mut shape = t.shape.clone();
                            let mut reduced = vec![false; nd];
                            if nd > 0 {
                                reduced[w] = true;
                                if keepdim {
                                    shape[w] = 1;
                                } else {
                                    shape.remove(w);
                                }
                            }
                            (I64, reduced, shape)
                        }
                    }
                }
                _ => {
                    if matches!(stat, Stat::Var | Stat::Std) && !float {
                        return Ok(Err(BC_ERR_DTYPE));
                    }
                    if stat == Stat::NanMean && !float {
                        return Ok(Err(BC_ERR_DTYPE));
                    }
                    let (reduced, shape) = match Self::reduce_shape(&t, dims, keepdim, true, false)
                    {
                        Ok(r) => r,
                        Err(s) => return Ok(Err(s)),
                    };
                    let dtype = match stat {
                        Stat::NanSum if !float => I64,
                        Stat::LogSumExp if !float => F32,
                        _ => t.dtype,
                    };
                    (dtype, reduced, shape)
                }
            };
            if big {
                return Err(Skip);
            }
            if let Err(s) = predict_allocs(&[(numel_of(&shape), itemsize(dtype))])? {
                return Ok(Err(s));
            }
            let groups = self.reduce_groups(&t, &reduced, &shape)?;
            let n_in = t.numel() as usize;
            let factor = n_in.checked_div(numel_of(&shape) as usize).unwrap_or(0);
            if matches!(stat, Stat::Var | Stat::Std) && (factor as f64 - correction) <= 0.0 {
                warned = true;
            }
            let want = groups
                .into_iter()
                .map(|g| {
                    let Some(xs) = g else { return RVal::Any };
                    let f: Vec<f64> = xs.iter().map(|x| x.to_f64()).collect();
                    match stat {
                        Stat::ArgMax | Stat::ArgMin => {
                            RVal::Exact(Num::I64(arg_value(&xs, stat == Stat::ArgMax)))
                        }
                        Stat::Var | Stat::Std => {
                            var_value(&f, correction, stat == Stat::Std, dtype)
                        }
                        Stat::LogSumExp => logsumexp_value(&f),
                        Stat::NanSum if !float => RVal::Exact(Num::I64(
                            xs.iter().fold(0i64, |s, x| s.wrapping_add(x.to_i64())),
                        )),
                        Stat::NanSum | Stat::NanMean => {
                            let kept: Vec<f64> = f.into_iter().filter(|x| !x.is_nan()).collect();
                            let sum = float_sum(&kept, dtype, false);
                            if stat == Stat::NanSum {
                                return sum;
                            }
                            let c = kept.len() as f64;
                            match sum {
                                _ if kept.is_empty() => RVal::Nan,
                                RVal::Near(s, b) => {
                                    // The sum is rounded to the input's type before the division.
                                    let rounded = Num::from_f64(dtype, s).to_f64();
                                    if rounded.is_infinite()
                                        || (s.abs() + b) >= super::reduce::largest(dtype)
                                    {
                                        RVal::Any
                                    } else {
                                        RVal::Near(s / c, (b + ulp(dtype, s)) / c)
                                    }
                                }
                                RVal::Exact(inf) => RVal::Exact(inf),
                                other => other,
                            }
                        }
                    }
                })
                .collect();
            Ok(Ok((dtype, shape, want)))
        })();
        let expected = match model {
            Err(Skip) => return Ok(Err(Skip)),
            Ok(e) => e,
        };
        let what = name(stat);
        if arg {
            self.note(format!(
                "{what}({}, dim {dim:?}, keepdim {keepdim}) -> #{dst}",
                self.describe(a)
            ));
        } else {
            self.note(format!(
                "{what}({}, dims {dims:?} (count {count}), correction {correction}, keepdim {keepdim}) -> #{dst}",
                self.describe(a)
            ));
        }
        let h = self.raw(a);
        let dims_ptr = dims.as_ref().map_or(ptr::null(), |d| d.as_ptr());
        let dim_ptr = dim.as_ref().map_or(ptr::null(), |d| d as *const i64);
        let mut out: *mut bc_tensor = 0x55 as *mut bc_tensor;
        let out_arg = if null_out {
            ptr::null_mut()
        } else {
            &mut out as *mut _
        };
        // SAFETY: dims valid for `count` reads (or NULL), dim NULL or valid; out_arg NULL or
        // valid.
        let st = unsafe {
            match stat {
                Stat::Var => bc_var(h, dims_ptr, count, correction, keepdim, out_arg),
                Stat::Std => bc_std(h, dims_ptr, count, correction, keepdim, out_arg),
                Stat::ArgMax => bc_argmax(h, dim_ptr, keepdim, out_arg),
                Stat::ArgMin => bc_argmin(h, dim_ptr, keepdim, out_arg),
                Stat::LogSumExp => bc_logsumexp(h, dims_ptr, count, keepdim, out_arg),
                Stat::NanSum => bc_nansum(h, dims_ptr, count, keepdim, out_arg),
                Stat::NanMean => bc_nanmean(h, dims_ptr, count, keepdim, out_arg),
            }
        };
        if null_out {
            return self.check_status(what, st, BC_ERR_NULL_ARG).map(Ok);
        }
        if warned && st == BC_OK {
            self.expected_warnings[WARN_OTHER] += 1;
        }
        self.finish_reduction(what, st, out, expected, dst, false)
    }
}
