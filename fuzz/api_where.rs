//! `bc_where` and `bc_where_out` (docs/semantics.md, section 11): the checks in the library's
//! order, the result type (from `a` and `b` only), the three-way broadcast, the layout from
//! `cond`, `a`, `b` (a uint8 `cond` as its bool copy), the values, and the uint8 condition's
//! deprecation warning, given once per process.
use super::*;
use std::sync::atomic::AtomicBool;

/// Whether a `where` of this process has given the uint8 warning (the library's is as
/// process-wide; only this fuzzer calls `where` in its processes).
static WHERE_UINT8_WARNED: AtomicBool = AtomicBool::new(false);

/// (shape, result type, values row-major, and for a bool result the bytes copied: `where`
/// copies a bool element's byte as it is, a non-zero byte other than 1 included).
/// Records that a `where` made otherwise (an expression's step) gave the warning.
pub(super) fn note_warned() {
    WHERE_UINT8_WARNED.store(true, Ordering::SeqCst);
}

type WhereModel = (Vec<usize>, i32, Vec<Option<Num>>, Vec<Option<u8>>);

impl Runner<'_> {
    /// `where(cond, a, b)` on the model, into `out` when given.
    fn model_where(
        &self,
        c: &TM,
        a: &TM,
        b: &TM,
        out: Option<&TM>,
        new: bool,
    ) -> Result<Expect<WhereModel>, Skip> {
        let dtype = result_type(a.dtype, a.ndim() == 0, b.dtype, b.ndim() == 0);
        if let Some(o) = out {
            if o.dtype != dtype {
                return Ok(Err(BC_ERR_DTYPE));
            }
        }
        if !matches!(c.dtype, BOOL | U8) {
            return Ok(Err(BC_ERR_DTYPE));
        }
        if let Some(o) = out {
            if self.internal_overlap(o) || [c, a, b].iter().any(|i| self.partial_overlap(o, i)) {
                return Ok(Err(BC_ERR_OVERLAP));
            }
        }
        let Some(shape) = broadcast(&c.shape, &a.shape).and_then(|s| broadcast(&s, &b.shape))
        else {
            return Ok(Err(BC_ERR_SHAPE));
        };
        if let Some(o) = out {
            if o.shape != shape {
                return Ok(Err(BC_ERR_SHAPE));
            }
        }
        // The result, then (when there are elements) `a` and `b` converted to its type.
        let n = numel_of(&shape);
        let mut allocs = Vec::new();
        if new {
            allocs.push((n, itemsize(dtype)));
        }
        if n > 0 {
            for t in [a, b] {
                if t.dtype != dtype {
                    allocs.push((t.numel(), itemsize(dtype)));
                }
            }
        }
        if let Err(s) = predict_allocs(&allocs)? {
            return Ok(Err(s));
        }
        if n > MAX_CHECK_ELEMS {
            return Err(Skip);
        }
        let nd = shape.len();
        let pick = |t: &TM, idx: &[usize]| -> Vec<usize> {
            let lead = nd - t.ndim();
            (0..t.ndim())
                .map(|k| if t.shape[k] == 1 { 0 } else { idx[lead + k] })
                .collect()
        };
        let chosen: Vec<Option<(&TM, Vec<usize>)>> = indices(&shape)
            .iter()
            .map(|idx| {
                let take_a = self.read(c, &pick(c, idx))?.to_i64() != 0;
                let t = if take_a { a } else { b };
                Some((t, pick(t, idx)))
            })
            .collect();
        let values = chosen
            .iter()
            .map(|e| {
                e.as_ref()
                    .and_then(|(t, i)| self.read(t, i))
                    .map(|v| v.cast(dtype))
            })
            .collect();
        let bytes = match dtype {
            BOOL => chosen
                .iter()
                .map(|e| e.as_ref().and_then(|(t, i)| self.raw_byte(t, i)))
                .collect(),
            _ => Vec::new(),
        };
        Ok(Ok((shape, dtype, values, bytes)))
    }

    /// The byte of a one-byte element as memory holds it.
    pub(super) fn raw_byte(&self, t: &TM, idx: &[usize]) -> Option<u8> {
        let (sp, at) = self.addr(t, idx);
        let m = self.mem(sp);
        m.known[at as usize].then(|| m.bytes[at as usize])
    }

    /// Writes the byte of a one-byte element (None: unknown).
    pub(super) fn write_byte_at(&mut self, t: &TM, flat: usize, byte: Option<u8>) {
        let (sp, at) = self.addr(t, &unflatten(flat, &t.shape));
        let m = self.mem_mut(sp);
        match byte {
            Some(v) => {
                m.bytes[at as usize] = v;
                m.known[at as usize] = true;
            }
            None => m.known[at as usize] = false,
        }
    }

    /// The uint8 warning a successful call gives.
    fn where_warning(&mut self, cond_dtype: i32) {
        if cond_dtype == U8 && !WHERE_UINT8_WARNED.swap(true, Ordering::SeqCst) {
            self.expected_warnings[WARN_OTHER] += 1;
        }
    }

    /// `bc_where`: a new tensor.
    pub(super) fn op_where(&mut self) -> Result<Result<(), Skip>, String> {
        let (c, a, b) = (self.arg(), self.arg(), self.arg());
        let dst = self.inp.below(NSLOTS);
        let null_out = self.out_flag();
        let mut cond_dtype = BOOL;
        let expected: Expect<TM> = match (|| -> Result<Expect<_>, Skip> {
            if null_out {
                return Ok(Err(BC_ERR_NULL_ARG));
            }
            let mut ts = Vec::new();
            for x in [c, a, b] {
                match self.resolve(x) {
                    Ok(t) => ts.push(t),
                    Err(s) => return Ok(Err(s)),
                }
            }
            Ok(self
                .model_where(&ts[0], &ts[1], &ts[2], None, true)?
                .map(|m| (ts, m)))
        })() {
            Err(Skip) => return Ok(Err(Skip)),
            Ok(Err(s)) => Err(s),
            Ok(Ok((ts, (shape, dtype, values, _)))) => {
                cond_dtype = ts[0].dtype;
                let to = [BOOL, dtype, dtype];
                let inputs: Vec<(Vec<usize>, Vec<i64>, bool)> = ts
                    .iter()
                    .zip(to)
                    .map(|(t, to)| (t.shape.clone(), t.strides.clone(), t.dtype != to))
                    .collect();
                let strides = result_layout(&shape, &inputs);
                Ok(self.new_tensor_strided(dtype, &shape, strides, Some(values)))
            }
        };
        self.note(format!(
            "where({}, {}, {}) -> #{dst}",
            self.describe(c),
            self.describe(a),
            self.describe(b)
        ));
        let (hc, ha, hb) = (self.raw(c), self.raw(a), self.raw(b));
        let ok = expected.is_ok();
        // SAFETY: out NULL or valid.
        let r = self.call_new("where", null_out, dst, expected, |o| unsafe {
            bc_where(hc, ha, hb, o)
        });
        if ok && r.is_ok() {
            self.where_warning(cond_dtype);
        }
        r
    }

    /// `bc_where_out`.
    pub(super) fn op_where_out(&mut self) -> Result<Result<(), Skip>, String> {
        let (c, a, b, o) = (self.arg(), self.arg(), self.arg(), self.arg());
        let expected = match (|| -> Result<Expect<_>, Skip> {
            let mut ts = Vec::new();
            for x in [c, a, b, o] {
                match self.resolve(x) {
                    Ok(t) => ts.push(t),
                    Err(s) => return Ok(Err(s)),
                }
            }
            Ok(self
                .model_where(&ts[0], &ts[1], &ts[2], Some(&ts[3]), false)?
                .map(|m| (ts, m)))
        })() {
            Err(Skip) => return Ok(Err(Skip)),
            Ok(e) => e,
        };
        self.note(format!(
            "where_out({}, {}, {}, out {})",
            self.describe(c),
            self.describe(a),
            self.describe(b),
            self.describe(o)
        ));
        let st = bc_where_out(self.raw(c), self.raw(a), self.raw(b), self.raw(o));
        let exp_st = expected.as_ref().map_or_else(|&s| s, |_| BC_OK);
        self.check_status("where_out", st, exp_st)?;
        if let Ok((ts, (_, _, values, bytes))) = expected {
            self.where_warning(ts[0].dtype);
            for (i, v) in values.into_iter().enumerate() {
                self.write_at(&ts[3], i, v);
            }
            for (i, byte) in bytes.into_iter().enumerate() {
                self.write_byte_at(&ts[3], i, byte);
            }
        }
        Ok(Ok(()))
    }
}
