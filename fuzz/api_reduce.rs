//! Reductions: `bc_reduce` over every `BC_REDUCE_*` code (and codes that are none) with lists of
//! dimensions and `keepdim`, and `bc_all` / `bc_any` (docs/semantics.md, section 14; the
//! header). Statuses in the library's order, the result type and shape (a new row-major tensor),
//! and the values: bool and integer results exactly, `amax`/`amin` exactly (a zero of either
//! sign where zeros tie, NaN wins), float sums and means within the header's bound
//! `gamma(h) * sum(|x|)` of a compensated float64 sum (plus two units in the last place of the
//! result type for its rounding), float products only NaN when an element is. The library's
//! elements, once checked, become the model's.
use super::unary::step;
use super::*;

/// What the model expects of one reduced element.
#[derive(Clone, Copy, Debug)]
pub(super) enum RVal {
    Exact(Num),
    /// The largest or smallest element: exact, but a zero may carry either sign.
    Extreme(Num),
    Nan,
    /// Within `bound` of `reference`.
    Near(f64, f64),
    /// Not checked (an unknown element, or a float product).
    Any,
    /// Within `[lo, hi]` (each end widened by two units in the last place of the result type).
    Between(f64, f64),
    /// NaN or +inf (a variance with no degrees of freedom: NaN only where nothing deviates,
    /// which rounding in the mean may or may not leave exactly).
    NanOrInf,
}

/// The spacing of `dtype`'s values around `v`.
pub(super) fn ulp(dtype: i32, v: f64) -> f64 {
    let r = match dtype {
        F16 => Num::H(f16::from_f64(v)),
        BF16 => Num::BH(bf16::from_f64(v)),
        F32 => Num::F(v as f32),
        _ => Num::D(v),
    };
    let (lo, hi) = (step(r, false).to_f64(), step(r, true).to_f64());
    (hi - r.to_f64()).abs().max((r.to_f64() - lo).abs())
}

pub(super) fn largest(dtype: i32) -> f64 {
    match dtype {
        F16 => f16::MAX.to_f64(),
        BF16 => bf16::MAX.to_f64(),
        F32 => f32::MAX as f64,
        _ => f64::MAX,
    }
}

pub(super) fn reduce_ok(dtype: i32, want: RVal, got: Num) -> bool {
    let got_f = got.to_f64();
    match want {
        RVal::Exact(n) => same_bits(dtype, &n.cast(dtype).encode(), &got.encode()),
        RVal::Extreme(n) => {
            same_bits(dtype, &n.cast(dtype).encode(), &got.encode())
                || (n.to_f64() == 0.0 && got_f == 0.0)
        }
        RVal::Nan => got.is_nan(),
        RVal::Near(r, bound) => {
            !got_f.is_nan()
                && ((got_f - r).abs() <= bound + 2.0 * ulp(dtype, r)
                    || (got_f.is_infinite()
                        && got_f.signum() == r.signum()
                        && r.abs() + bound >= largest(dtype)))
        }
        RVal::Any => true,
        RVal::Between(lo, hi) => {
            !got_f.is_nan()
                && got_f >= lo - 2.0 * ulp(dtype, lo)
                && got_f <= hi + 2.0 * ulp(dtype, hi)
        }
        RVal::NanOrInf => got.is_nan() || got_f == f64::INFINITY,
    }
}

/// Sum of `xs` in float64 with Neumaier's compensation (near exact for these counts).
pub(super) fn compensated_sum(xs: &[f64]) -> f64 {
    let (mut s, mut c) = (0.0f64, 0.0f64);
    for &x in xs {
        let t = s + x;
        c += if s.abs() >= x.abs() {
            (s - t) + x
        } else {
            (x - t) + s
        };
        s = t;
    }
    s + c
}

/// One output of a float sum (`mean`: divided by the count) of `xs`, input type `dtype`.
pub(super) fn float_sum(xs: &[f64], dtype: i32, mean: bool) -> RVal {
    let n = xs.len();
    if mean && n == 0 {
        return RVal::Nan;
    }
    if xs.iter().any(|x| x.is_nan())
        || (xs.contains(&f64::INFINITY) && xs.contains(&f64::NEG_INFINITY))
    {
        return RVal::Nan;
    }
    if let Some(&inf) = xs.iter().find(|x| x.is_infinite()) {
        return RVal::Exact(Num::from_f64(dtype, inf));
    }
    let wide = dtype == F64;
    let total: f64 = xs.iter().map(|x| x.abs()).sum();
    // A sum whose partial sums may leave the accumulator's range is not bounded by the header.
    if total
        >= if wide {
            f64::MAX / 4.0
        } else {
            f32::MAX as f64 / 4.0
        }
    {
        return RVal::Any;
    }
    let u = if wide { 2f64.powi(-53) } else { 2f64.powi(-24) };
    let h = 106.0 + (n as f64 / 16384.0).max(1.0).log2().ceil();
    let bound = h * u / (1.0 - h * u) * total;
    let s = compensated_sum(xs);
    if mean {
        RVal::Near(s / n as f64, bound / n as f64)
    } else {
        RVal::Near(s, bound)
    }
}

impl Runner<'_> {
    /// A dimension argument: mostly in or near range, rarely extreme.
    fn dim_arg(&mut self) -> i64 {
        let b = self.inp.u8();
        if b < 240 {
            (b % 11) as i64 - 5
        } else {
            [i64::MIN, i64::MAX, 64, -65, 100, -100, 6, -7][(b as usize - 240) % 8]
        }
    }

    /// A list of dimensions (`None`: a NULL pointer) for `count` of them.
    pub(super) fn dims_arg(&mut self) -> (Option<Vec<i64>>, usize) {
        let count = [0, 0, 1, 1, 1, 1, 2, 2, 2, 3, 4, BC_MAX_NDIM + 1][self.inp.below(12)];
        let null = self.inp.u8() >= if count == 0 { 128 } else { 250 };
        let dims = (0..count.min(BC_MAX_NDIM + 1))
            .map(|_| self.dim_arg())
            .collect();
        (if null { None } else { Some(dims) }, count)
    }

    /// The reduced dimensions and result shape, as `bc_reduce` decides them (`all_when_empty`: an
    /// empty list reduces everything); `extremum` refuses reducing an empty dimension.
    pub(super) fn reduce_shape(
        t: &TM,
        dims: &[i64],
        keepdim: bool,
        all_when_empty: bool,
        extremum: bool,
    ) -> Expect<(Vec<bool>, Vec<usize>)> {
        let nd = t.ndim();
        let mut wrapped = Vec::new();
        for &d in dims {
            // A 0-d tensor takes dimension 0 or -1.
            let w = Self::wrap_dim(d, nd.max(1))?;
            if extremum && t.shape.get(w) == Some(&0) {
                return Err(BC_ERR_SHAPE);
            }
            wrapped.push(w);
        }
        if extremum && dims.is_empty() && t.numel() == 0 {
            return Err(BC_ERR_SHAPE);
        }
        let mut reduced = vec![dims.is_empty() && all_when_empty; nd + 1];
        let mut seen = vec![false; nd + 1];
        for w in wrapped {
            if std::mem::replace(&mut seen[w], true) {
                return Err(BC_ERR_INVALID_ARG);
            }
            reduced[w] = true;
        }
        reduced.truncate(nd);
        let shape = (0..nd)
            .filter(|&d| keepdim || !reduced[d])
            .map(|d| if reduced[d] { 1 } else { t.shape[d] })
            .collect();
        Ok((reduced, shape))
    }

    /// The input's elements gathered per output element (row-major), None when one is unknown;
    /// `Skip` when there are too many to check (the input's count matters only when something is
    /// read).
    pub(super) fn reduce_groups(
        &self,
        t: &TM,
        reduced: &[bool],
        out_shape: &[usize],
    ) -> Result<Vec<Option<Vec<Num>>>, Skip> {
        let nothing = (0..t.ndim()).any(|d| reduced[d] && t.shape[d] == 0);
        if numel_of(out_shape) > MAX_CHECK_ELEMS || (!nothing && t.numel() > MAX_CHECK_ELEMS) {
            return Err(Skip);
        }
        let kept: Vec<usize> = (0..t.ndim()).filter(|&d| !reduced[d]).collect();
        let kept_shape: Vec<usize> = kept.iter().map(|&d| t.shape[d]).collect();
        let mut groups: Vec<Option<Vec<Num>>> =
            vec![Some(Vec::new()); numel_of(out_shape) as usize];
        for idx in indices(&t.shape) {
            let key: Vec<usize> = kept.iter().map(|&d| idx[d]).collect();
            let mut flat = 0;
            for (k, &i) in key.iter().enumerate() {
                flat = flat * kept_shape[k] + i;
            }
            let v = self.read(t, &idx);
            let g = &mut groups[flat];
            match (g.as_mut(), v) {
                (Some(list), Some(v)) => list.push(v),
                _ => *g = None,
            }
        }
        Ok(groups)
    }

    /// Finishes a reduction call that makes a new tensor of `shape` and `dtype`, row-major (or,
    /// `any_dense`, dense in an order the documentation does not state): checks the status, each
    /// element against `want`, then installs the library's elements.
    pub(super) fn finish_reduction(
        &mut self,
        what: &str,
        st: i32,
        out: *mut bc_tensor,
        expected: Expect<(i32, Vec<usize>, Vec<RVal>)>,
        dst: usize,
        any_dense: bool,
    ) -> Result<Result<(), Skip>, String> {
        let (dtype, shape, want) = match expected {
            Err(s) => return self.finish_new(what, st, out, Err(s), dst).map(Ok),
            Ok(e) => e,
        };
        self.check_status(what, st, BC_OK)?;
        if out.is_null() {
            return Err(format!("{what}: BC_OK but *out is NULL"));
        }
        let got = unary::library_values(out, dtype, want.len())?;
        for (i, (&w, &g)) in want.iter().zip(&got).enumerate() {
            if !reduce_ok(dtype, w, g) {
                return Err(format!("{what}: element {i} is {g:?}, model {w:?}"));
            }
        }
        let mut strides = contiguous_strides(&shape);
        if any_dense {
            let mut lib = vec![0i64; shape.len()];
            // SAFETY: lib holds ndim entries.
            let st = unsafe { bc_tensor_strides(out, lib.as_mut_ptr(), lib.len()) };
            if st != BC_OK || !dense_layout(&shape, &lib) {
                return Err(format!(
                    "{what}: strides {lib:?} are not dense for {shape:?}"
                ));
            }
            strides = lib;
        }
        let values = got.into_iter().map(Some).collect();
        let t = self.new_tensor_strided(dtype, &shape, strides, Some(values));
        self.install(dst, out, t).map(Ok)
    }

    /// `bc_reduce`.
    pub(super) fn op_reduce(&mut self) -> Result<Result<(), Skip>, String> {
        let b = self.inp.u8();
        // The named form (`bc_sum`, ...) for some bytes of a valid code.
        let named = b < 250 && (b as i32 / BC_REDUCE_COUNT) % 2 == 1;
        let op = if b < 250 {
            b as i32 % BC_REDUCE_COUNT
        } else {
            [
                BC_REDUCE_COUNT,
                -1,
                100,
                i32::MIN,
                i32::MAX,
                BC_REDUCE_COUNT + 1,
            ][(b - 250) as usize]
        };
        let a = self.arg();
        let (dims, count) = self.dims_arg();
        let keepdim = self.inp.flag();
        let dst = self.inp.below(NSLOTS);
        let null_out = self.out_flag();
        let model = (|| -> Result<Expect<(i32, Vec<usize>, Vec<RVal>)>, Skip> {
            if null_out {
                return Ok(Err(BC_ERR_NULL_ARG));
            }
            if !(0..BC_REDUCE_COUNT).contains(&op) || count > BC_MAX_NDIM {
                return Ok(Err(BC_ERR_INVALID_ARG));
            }
            let empty = Vec::new();
            let dims = match dims.as_ref() {
                Some(d) => d,
                None if count == 0 => &empty,
                None => return Ok(Err(BC_ERR_NULL_ARG)),
            };
            let t = match self.resolve(a) {
                Ok(t) => t,
                Err(s) => return Ok(Err(s)),
            };
            let float = is_float(t.dtype);
            let dtype = match op {
                BC_REDUCE_MEAN if !float => return Ok(Err(BC_ERR_DTYPE)),
                BC_REDUCE_SUM | BC_REDUCE_PROD if !float => I64,
                _ => t.dtype,
            };
            let extremum = matches!(op, BC_REDUCE_AMAX | BC_REDUCE_AMIN);
            let (reduced, shape) = match Self::reduce_shape(&t, dims, keepdim, true, extremum) {
                Ok(r) => r,
                Err(s) => return Ok(Err(s)),
            };
            if let Err(s) = predict_allocs(&[(numel_of(&shape), itemsize(dtype))])? {
                return Ok(Err(s));
            }
            let want = self
                .reduce_groups(&t, &reduced, &shape)?
                .into_iter()
                .map(|g| match g {
                    None => RVal::Any,
                    Some(xs) if !float => {
                        let v: Vec<i64> = xs.iter().map(|x| x.to_i64()).collect();
                        RVal::Exact(match op {
                            BC_REDUCE_SUM => {
                                Num::I64(v.iter().fold(0i64, |s, &x| s.wrapping_add(x)))
                            }
                            BC_REDUCE_PROD => {
                                Num::I64(v.iter().fold(1i64, |s, &x| s.wrapping_mul(x)))
                            }
                            BC_REDUCE_AMAX => Num::from_i64(dtype, *v.iter().max().unwrap()),
                            _ => Num::from_i64(dtype, *v.iter().min().unwrap()),
                        })
                    }
                    Some(xs) => {
                        let v: Vec<f64> = xs.iter().map(|x| x.to_f64()).collect();
                        match op {
                            BC_REDUCE_SUM => float_sum(&v, dtype, false),
                            BC_REDUCE_MEAN => float_sum(&v, dtype, true),
                            _ if v.iter().any(|x| x.is_nan()) => RVal::Nan,
                            BC_REDUCE_PROD if v.is_empty() => {
                                RVal::Exact(Num::from_f64(dtype, 1.0))
                            }
                            BC_REDUCE_PROD => RVal::Any,
                            BC_REDUCE_AMAX => RVal::Extreme(Num::from_f64(
                                dtype,
                                v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                            )),
                            _ => RVal::Extreme(Num::from_f64(
                                dtype,
                                v.iter().copied().fold(f64::INFINITY, f64::min),
                            )),
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
        self.note(format!(
            "reduce(op {op}, {}, dims {dims:?} (count {count}), keepdim {keepdim}) -> #{dst}",
            self.describe(a)
        ));
        let h = self.raw(a);
        let dims_ptr = dims.as_ref().map_or(ptr::null(), |d| d.as_ptr());
        let mut out: *mut bc_tensor = 0x55 as *mut bc_tensor;
        let out_arg = if null_out {
            ptr::null_mut()
        } else {
            &mut out as *mut _
        };
        // SAFETY: dims valid for `count` reads (or NULL); out_arg NULL or valid.
        let st = unsafe {
            match named {
                true => {
                    super::named::NAMED_REDUCE[op as usize](h, dims_ptr, count, keepdim, out_arg)
                }
                false => bc_reduce(op, h, dims_ptr, count, keepdim, out_arg),
            }
        };
        if null_out {
            return self.check_status("reduce", st, BC_ERR_NULL_ARG).map(Ok);
        }
        self.finish_reduction("reduce", st, out, expected, dst, false)
    }

    /// `bc_all` or `bc_any`: a NULL list reduces every dimension, an empty one none.
    pub(super) fn op_all_any(&mut self) -> Result<Result<(), Skip>, String> {
        let any = self.inp.flag();
        let a = self.arg();
        let (dims, count) = self.dims_arg();
        let keepdim = self.inp.flag();
        let dst = self.inp.below(NSLOTS);
        let null_out = self.out_flag();
        // A NULL list is passed with no count (its meaning for a count is not stated).
        let count = if dims.is_none() { 0 } else { count };
        let model = (|| -> Result<Expect<(i32, Vec<usize>, Vec<RVal>)>, Skip> {
            if null_out {
                return Ok(Err(BC_ERR_NULL_ARG));
            }
            if count > BC_MAX_NDIM {
                return Ok(Err(BC_ERR_INVALID_ARG));
            }
            let t = match self.resolve(a) {
                Ok(t) => t,
                Err(s) => return Ok(Err(s)),
            };
            let dtype = if t.dtype == U8 { U8 } else { BOOL };
            let decided = match &dims {
                None => Self::reduce_shape(&t, &[], keepdim, true, false),
                Some(d) => Self::reduce_shape(&t, d, keepdim, false, false),
            };
            let (reduced, shape) = match decided {
                Ok(r) => r,
                Err(s) => return Ok(Err(s)),
            };
            // The library tests every element into a bool tensor of `t`'s size, counts them per
            // output element in int64 (when it reduces), then compares.
            let counts = match &dims {
                Some(d) if d.is_empty() => 0,
                _ => numel_of(&shape),
            };
            let allocs = [
                (t.numel(), 1),
                (counts, 8),
                (numel_of(&shape), itemsize(dtype)),
            ];
            if let Err(s) = predict_allocs(&allocs)? {
                return Ok(Err(s));
            }
            let want = self
                .reduce_groups(&t, &reduced, &shape)?
                .into_iter()
                .map(|g| match g {
                    None => RVal::Any,
                    Some(xs) => {
                        // NaN is non-zero.
                        let nonzero = |x: &Num| x.is_nan() || x.to_f64() != 0.0;
                        let r = if any {
                            xs.iter().any(nonzero)
                        } else {
                            xs.iter().all(nonzero)
                        };
                        RVal::Exact(Num::from_i64(dtype, r as i64))
                    }
                })
                .collect();
            Ok(Ok((dtype, shape, want)))
        })();
        let expected = match model {
            Err(Skip) => return Ok(Err(Skip)),
            Ok(e) => e,
        };
        let what = if any { "any" } else { "all" };
        self.note(format!(
            "{what}({}, dims {dims:?} (count {count}), keepdim {keepdim}) -> #{dst}",
            self.describe(a)
        ));
        let h = self.raw(a);
        let dims_ptr = dims.as_ref().map_or(ptr::null(), |d| d.as_ptr());
        let mut out: *mut bc_tensor = 0x55 as *mut bc_tensor;
        let out_arg = if null_out {
            ptr::null_mut()
        } else {
            &mut out as *mut _
        };
        // SAFETY: dims valid for `count` reads (or NULL with 0); out_arg NULL or valid.
        let st = unsafe {
            if any {
                bc_any(h, dims_ptr, count, keepdim, out_arg)
            } else {
                bc_all(h, dims_ptr, count, keepdim, out_arg)
            }
        };
        if null_out {
            return self.check_status(what, st, BC_ERR_NULL_ARG).map(Ok);
        }
        // The header states no layout for these results (an empty list keeps one of `t`'s, and
        // an empty result may carry any strides): only density is checked.
        self.finish_reduction(what, st, out, expected, dst, true)
    }
}
