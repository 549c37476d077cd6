//! The three-operand family, so far `bc_clamp` and `bc_clamp_inplace` with tensor bounds (either
//! NULL for none): docs/semantics.md, "Three-operand operations". The three promote together (a
//! 0-d tensor raises only the category), broadcast in order, the result is laid out from the
//! three (a converted one as its row-major copy), and `clamp` is `min(max(input, min), max)` in
//! the result type: NaN in any gives NaN, `min > max` gives `max`, bools take `|` and `&`.
use super::*;

/// PyTorch's `result_type` of several tensors (the model's rule).
fn result_type_n(ts: &[&TM]) -> i32 {
    let ts: Vec<(i32, bool)> = ts.iter().map(|t| (t.dtype, t.ndim() == 0)).collect();
    testkit::model::result_type_n(&ts, &[])
}

/// One element of `clamp` in the result type.
pub(super) fn clamp_value(x: Num, lo: Option<Num>, hi: Option<Num>) -> Num {
    let dt = x.dtype();
    if dt == BOOL {
        let mut v = x.to_i64() != 0;
        if let Some(lo) = lo {
            v |= lo.to_i64() != 0;
        }
        if let Some(hi) = hi {
            v &= hi.to_i64() != 0;
        }
        return Num::B(v);
    }
    if !is_float(dt) {
        let mut v = x.to_i64();
        if let Some(lo) = lo {
            v = v.max(lo.to_i64());
        }
        if let Some(hi) = hi {
            v = v.min(hi.to_i64());
        }
        return Num::from_i64(dt, v);
    }
    // `v < lo ? lo : v`, then `hi < v ? hi : v`: a tied zero keeps the input's sign.
    let mut v = x.to_f64();
    for (bound, below) in [(lo, true), (hi, false)] {
        if let Some(b) = bound {
            let b = b.to_f64();
            v = if v.is_nan() || b.is_nan() {
                f64::NAN
            } else if (below && v < b) || (!below && b < v) {
                b
            } else {
                v
            };
        }
    }
    // Exact: every value is one of the operands, already of the result type.
    Num::from_f64(dt, v)
}

type ClampModel = (Vec<usize>, i32, Vec<Option<Num>>);

impl Runner<'_> {
    /// A bound: a handle, or (sometimes, and whenever the handle drawn is NULL) none.
    pub(super) fn bound_arg(&mut self) -> Option<Arg> {
        match self.inp.u8() % 3 {
            0 => None,
            _ => match self.arg() {
                Arg::Null => None,
                other => Some(other),
            },
        }
    }

    /// `clamp(input, lo, hi)` on the model (`inplace`: into `input`), checks in the library's
    /// order.
    fn model_clamp(
        &self,
        x: &TM,
        lo: Option<&TM>,
        hi: Option<&TM>,
        inplace: bool,
    ) -> Result<Expect<ClampModel>, Skip> {
        if lo.is_none() && hi.is_none() {
            return Ok(Err(BC_ERR_INVALID_ARG));
        }
        let bounds: Vec<&TM> = [lo, hi].into_iter().flatten().collect();
        let mut all = vec![x];
        all.extend(bounds.iter().copied());
        let result = result_type_n(&all);
        let mut shape = x.shape.clone();
        for b in &bounds {
            match broadcast(&shape, &b.shape) {
                Some(s) => shape = s,
                None => return Ok(Err(BC_ERR_SHAPE)),
            }
        }
        if inplace {
            if x.shape != shape {
                return Ok(Err(BC_ERR_SHAPE));
            }
            if self.internal_overlap(x) || bounds.iter().any(|b| self.partial_overlap(x, b)) {
                return Ok(Err(BC_ERR_OVERLAP));
            }
            if !can_cast(result, x.dtype) {
                return Ok(Err(BC_ERR_DTYPE));
            }
        }
        if result == BOOL && bounds.len() == 2 {
            return Ok(Err(BC_ERR_DTYPE));
        }
        // The result (a new tensor), then, with elements, every tensor of another type converted,
        // and a temporary when the written type is not the result type.
        let n = numel_of(&shape);
        let mut allocs = Vec::new();
        if !inplace {
            allocs.push((n, itemsize(result)));
        }
        if n > 0 {
            for t in &all {
                if t.dtype != result {
                    allocs.push((t.numel(), itemsize(result)));
                }
            }
            if inplace && x.dtype != result {
                allocs.push((n, itemsize(result)));
            }
        }
        if let Err(s) = predict_allocs(&allocs)? {
            return Ok(Err(s));
        }
        if n > MAX_CHECK_ELEMS {
            return Err(Skip);
        }
        let nd = shape.len();
        let at = |t: &TM, idx: &[usize]| -> Option<Num> {
            let lead = nd - t.ndim();
            let i: Vec<usize> = (0..t.ndim())
                .map(|k| if t.shape[k] == 1 { 0 } else { idx[lead + k] })
                .collect();
            self.read(t, &i).map(|v| v.cast(result))
        };
        let values = indices(&shape)
            .iter()
            .map(|idx| {
                let v = at(x, idx)?;
                let l = match lo {
                    Some(t) => Some(at(t, idx)?),
                    None => None,
                };
                let h = match hi {
                    Some(t) => Some(at(t, idx)?),
                    None => None,
                };
                Some(clamp_value(v, l, h))
            })
            .collect();
        Ok(Ok((shape, result, values)))
    }

    /// Resolves the input and the bounds that are not NULL, in the library's order.
    fn clamp_operands(
        &self,
        a: Arg,
        lo: Option<Arg>,
        hi: Option<Arg>,
    ) -> Expect<(TM, Option<TM>, Option<TM>)> {
        let x = self.resolve(a)?;
        let lo = lo.map(|b| self.resolve(b)).transpose()?;
        let hi = hi.map(|b| self.resolve(b)).transpose()?;
        Ok((x, lo, hi))
    }

    fn describe_bound(&self, b: Option<Arg>) -> String {
        b.map_or("none".into(), |b| self.describe(b))
    }

    /// `bc_clamp`: a new tensor.
    pub(super) fn op_clamp(&mut self) -> Result<Result<(), Skip>, String> {
        let a = self.arg();
        let (lo, hi) = (self.bound_arg(), self.bound_arg());
        let dst = self.inp.below(NSLOTS);
        let null_out = self.out_flag();
        let expected: Expect<TM> = match (|| -> Result<Expect<_>, Skip> {
            if null_out {
                return Ok(Err(BC_ERR_NULL_ARG));
            }
            let (x, l, h) = match self.clamp_operands(a, lo, hi) {
                Ok(t) => t,
                Err(s) => return Ok(Err(s)),
            };
            Ok(self
                .model_clamp(&x, l.as_ref(), h.as_ref(), false)?
                .map(|m| ([Some(x), l, h], m)))
        })() {
            Err(Skip) => return Ok(Err(Skip)),
            Ok(Err(s)) => Err(s),
            Ok(Ok((ts, (shape, result, values)))) => {
                let inputs: Vec<(Vec<usize>, Vec<i64>, bool)> = ts
                    .iter()
                    .flatten()
                    .map(|t| (t.shape.clone(), t.strides.clone(), t.dtype != result))
                    .collect();
                let strides = result_layout(&shape, &inputs);
                Ok(self.new_tensor_strided(result, &shape, strides, Some(values)))
            }
        };
        self.note(format!(
            "clamp({}, {}, {}) -> #{dst}",
            self.describe(a),
            self.describe_bound(lo),
            self.describe_bound(hi)
        ));
        let h = self.raw(a);
        let raw_bound = |b: Option<Arg>| b.map_or(ptr::null_mut(), |b| self.raw(b));
        let (hl, hh) = (raw_bound(lo), raw_bound(hi));
        // SAFETY: out NULL or valid.
        self.call_new("clamp", null_out, dst, expected, |o| unsafe {
            bc_clamp(h, hl, hh, o)
        })
    }

    /// `bc_clamp_inplace`.
    pub(super) fn op_clamp_inplace(&mut self) -> Result<Result<(), Skip>, String> {
        let a = self.arg();
        let (lo, hi) = (self.bound_arg(), self.bound_arg());
        let expected = match (|| -> Result<Expect<_>, Skip> {
            let (x, l, h) = match self.clamp_operands(a, lo, hi) {
                Ok(t) => t,
                Err(s) => return Ok(Err(s)),
            };
            Ok(self
                .model_clamp(&x, l.as_ref(), h.as_ref(), true)?
                .map(|m| (x, m)))
        })() {
            Err(Skip) => return Ok(Err(Skip)),
            Ok(e) => e,
        };
        self.note(format!(
            "clamp_inplace({}, {}, {})",
            self.describe(a),
            self.describe_bound(lo),
            self.describe_bound(hi)
        ));
        let raw_bound = |b: Option<Arg>| b.map_or(ptr::null_mut(), |b| self.raw(b));
        let st = bc_clamp_inplace(self.raw(a), raw_bound(lo), raw_bound(hi));
        let exp_st = expected.as_ref().map_or_else(|&s| s, |_| BC_OK);
        self.check_status("clamp_inplace", st, exp_st)?;
        if let Ok((x, (_, _, values))) = expected {
            for (i, v) in values.into_iter().enumerate() {
                self.write_at(&x, i, v);
            }
        }
        Ok(Ok(()))
    }
}
