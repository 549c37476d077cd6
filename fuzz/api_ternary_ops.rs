//! The rest of the three-operand family: `bc_lerp*` (tensor and number weight), `bc_addcmul*`,
//! `bc_addcdiv*` (with `value`), `bc_clamp_scalar*` (number bounds) and `bc_clamp_out` (tensor
//! bounds into `out`), each out of place, in place and into `out` (header, "lerp" to
//! "clamp_scalar_out"; docs/semantics.md, "Three-operand operations").
//!
//! The model: the checks in the library's documented order, PyTorch's promotion over tensors by
//! rank (dimensions, then 0-d tensors, then numbers, each later kind raising only the category, a
//! floating number counting as float32), the three-way broadcast, the layout from the tensors
//! (numbers take no part), and the values. Every tensor is first cast to the result type; the
//! computation runs in float32 for float16/bfloat16/float32 results and float64 for float64, as
//! PyTorch's kernels do, with its formulas: `lerp` is `|w| < 0.5 ? fma(w, e - x, x) :
//! fma(-(e - x), 1 - w, e)`, `addcmul` is `fma(value * t1, t2, x)`, `addcdiv` is
//! `x + (value * t1) / t2` rounded at each step; integers wrap. These are exact IEEE operations
//! (Rust's `mul_add` is the correctly rounded fused multiply-add), so values compare bit for bit
//! (any NaN for a NaN).
use super::ternary::clamp_value;
use super::*;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum TOp {
    Lerp,
    Addcmul,
    Addcdiv,
    Clamp,
}

/// The second or third operand as the model sees it.
#[derive(Clone)]
enum Opnd {
    T(TM),
    /// A number: `Num::B`, `Num::I64` or `Num::D`, its exact value.
    N(Num),
    None,
}

impl Opnd {
    fn tensor(&self) -> Option<&TM> {
        match self {
            Opnd::T(t) => Some(t),
            _ => None,
        }
    }
    fn is_none(&self) -> bool {
        matches!(self, Opnd::None)
    }
}

/// Where the call writes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum To {
    New,
    InPlace,
    Out,
}

/// PyTorch's result type over tensors and numbers (the model's rule).
fn result_type_ranked(tensors: &[&TM], numbers: &[Num]) -> i32 {
    let ts: Vec<(i32, bool)> = tensors.iter().map(|t| (t.dtype, t.ndim() == 0)).collect();
    let ns: Vec<i32> = numbers.iter().map(|n| n.dtype()).collect();
    result_type_n(&ts, &ns)
}

/// c10's `overflows` as the library states it (`fits` in the header's `BC_ERR_VALUE` rules): a
/// bool always fits; a float when it is infinite or NaN and the type floating, or within the
/// type's finite range; an integer within the range (an unsigned type also down to minus its
/// maximum: negative values wrap).
fn fits(n: Num, dt: i32) -> bool {
    let (lo, hi) = range(dt);
    match n {
        Num::B(_) => true,
        Num::D(f) if is_float(dt) && !f.is_finite() => true,
        Num::D(f) => f >= lo && f <= hi,
        Num::I64(_) if dt == I64 => true,
        Num::I64(i) if lo == 0.0 => (i as f64) <= hi && (i >= 0 || i.unsigned_abs() as f64 <= hi),
        Num::I64(i) => (i as f64) >= lo && (i as f64) <= hi,
        _ => unreachable!("numbers are bool, int64 or float64"),
    }
}

/// The checked conversion of `value` (or a floating `clamp` bound): NaN for an integer type, or
/// a number that does not fit.
fn number_ok(n: Num, dt: i32) -> bool {
    match n {
        Num::D(f) if f.is_nan() => is_float(dt),
        _ => fits(n, dt),
    }
}

/// The finite range of a type (bool as int64, as the library holds bool bounds).
fn range(dt: i32) -> (f64, f64) {
    match dt {
        U8 => (0.0, 255.0),
        I8 => (-128.0, 127.0),
        I16 => (-32768.0, 32767.0),
        I32 => (i32::MIN as f64, i32::MAX as f64),
        BOOL | I64 => (i64::MIN as f64, i64::MAX as f64),
        F16 => (-65504.0, 65504.0),
        BF16 => (-3.3895313892515355e38, 3.3895313892515355e38),
        F32 => (f32::MIN as f64, f32::MAX as f64),
        _ => (f64::MIN, f64::MAX),
    }
}

fn num_f64(n: Num) -> f64 {
    match n {
        Num::B(b) => b as i64 as f64,
        Num::I64(i) => i as f64,
        other => other.to_f64(),
    }
}

/// One element of a floating result, computed in `$k` (`f32` or `f64`); `b`, `c` are absent for
/// `clamp`'s missing bounds.
macro_rules! real_op {
    ($name:ident, $k:ty) => {
        fn $name(op: TOp, x: $k, b: Option<$k>, c: Option<$k>, v: $k) -> $k {
            match op {
                TOp::Lerp => {
                    let (e, w) = (b.unwrap(), c.unwrap());
                    let diff = e - x;
                    if w.abs() < 0.5 {
                        w.mul_add(diff, x)
                    } else {
                        (-diff).mul_add(1.0 - w, e)
                    }
                }
                TOp::Addcmul => (v * b.unwrap()).mul_add(c.unwrap(), x),
                TOp::Addcdiv => x + (v * b.unwrap()) / c.unwrap(),
                TOp::Clamp => {
                    let mut r = x;
                    if let Some(lo) = b {
                        r = if r.is_nan() || lo.is_nan() {
                            <$k>::NAN
                        } else if r < lo {
                            lo
                        } else {
                            r
                        };
                    }
                    if let Some(hi) = c {
                        r = if r.is_nan() || hi.is_nan() {
                            <$k>::NAN
                        } else if hi < r {
                            hi
                        } else {
                            r
                        };
                    }
                    r
                }
            }
        }
    };
}
real_op!(real32, f32);
real_op!(real64, f64);

/// A number as an integer computation type holds it: a float truncated toward zero after the
/// range check (held to the range), an integer wrapping, a bool 0 or 1.
fn int_number(n: Num, dt: i32) -> i64 {
    match n {
        Num::D(f) => {
            let (lo, hi) = range(dt);
            f.clamp(lo, hi) as i64
        }
        other => other.to_i64(),
    }
}

impl Runner<'_> {
    /// The whole call on the model: `Ok(Err(status))` for a refusal, else the broadcast shape,
    /// the result type and the result's elements (row-major, of the result type).
    fn model_ternary(
        &self,
        op: TOp,
        x: &TM,
        b: &Opnd,
        c: &Opnd,
        value: Num,
        to: To,
        out: Option<&TM>,
    ) -> Result<Expect<(Vec<usize>, i32, Vec<Option<Num>>)>, Skip> {
        let tensors: Vec<&TM> = [Some(x), b.tensor(), c.tensor()]
            .into_iter()
            .flatten()
            .collect();
        let numbers: Vec<Num> = [b, c]
            .into_iter()
            .filter_map(|o| match o {
                Opnd::N(n) => Some(*n),
                _ => None,
            })
            .collect();
        let number_bounds = op == TOp::Clamp && !numbers.is_empty();
        // The operation's own type rules.
        let result = match op {
            TOp::Lerp => {
                let end = b.tensor().expect("lerp's end");
                if end.dtype != x.dtype {
                    return Ok(Err(BC_ERR_DTYPE));
                }
                if let Some(w) = c.tensor() {
                    if w.ndim() > 0 && w.dtype != x.dtype {
                        return Ok(Err(BC_ERR_DTYPE));
                    }
                }
                // A number weight does not promote.
                match c {
                    Opnd::N(_) => x.dtype,
                    _ => result_type_ranked(&tensors, &[]),
                }
            }
            TOp::Addcdiv => {
                let (t1, t2) = (b.tensor().unwrap(), c.tensor().unwrap());
                if !is_float(t1.dtype) && !is_float(t2.dtype) {
                    return Ok(Err(BC_ERR_DTYPE));
                }
                result_type_ranked(&tensors, &numbers)
            }
            TOp::Addcmul => result_type_ranked(&tensors, &numbers),
            TOp::Clamp => {
                if b.is_none() && c.is_none() {
                    return Ok(Err(BC_ERR_INVALID_ARG));
                }
                result_type_ranked(&tensors, &numbers)
            }
        };
        // `out` must have exactly the result type for number bounds and for a weight tensor
        // with dimensions.
        let exact = match op {
            TOp::Clamp => number_bounds,
            TOp::Lerp => c.tensor().is_some_and(|w| w.ndim() > 0),
            _ => false,
        };
        if let (To::Out, Some(o)) = (to, out) {
            if exact && o.dtype != result {
                return Ok(Err(BC_ERR_DTYPE));
            }
        }
        let mut shape = x.shape.clone();
        for t in &tensors[1..] {
            match broadcast(&shape, &t.shape) {
                Some(s) => shape = s,
                None => return Ok(Err(BC_ERR_SHAPE)),
            }
        }
        if to == To::InPlace && x.shape != shape {
            return Ok(Err(BC_ERR_SHAPE));
        }
        let written = match to {
            To::New => None,
            To::InPlace => Some(x),
            To::Out => out,
        };
        if let Some(w) = written {
            if self.internal_overlap(w) || tensors.iter().any(|t| self.partial_overlap(w, t)) {
                return Ok(Err(BC_ERR_OVERLAP));
            }
            if !can_cast(result, w.dtype) {
                return Ok(Err(BC_ERR_DTYPE));
            }
        }
        let no_kernel = match op {
            TOp::Lerp => !is_float(result),
            TOp::Addcmul => result == BOOL,
            TOp::Clamp => result == BOOL && !b.is_none() && !c.is_none(),
            TOp::Addcdiv => false,
        };
        if no_kernel {
            return Ok(Err(BC_ERR_DTYPE));
        }
        let compute = match result {
            F16 | BF16 => F32,
            t => t,
        };
        match op {
            TOp::Addcmul | TOp::Addcdiv if !number_ok(value, compute) => {
                return Ok(Err(BC_ERR_VALUE));
            }
            TOp::Clamp if number_bounds => {
                for (o, is_min) in [(b, true), (c, false)] {
                    let Opnd::N(n) = o else { continue };
                    let refused = if is_float(result) {
                        !number_ok(*n, result)
                    } else if result != BOOL {
                        let (lo, hi) = range(result);
                        let v = num_f64(*n);
                        if is_min {
                            v > hi
                        } else {
                            v < lo
                        }
                    } else {
                        false
                    };
                    if refused {
                        return Ok(Err(BC_ERR_VALUE));
                    }
                }
            }
            _ => {}
        }
        if let (To::Out, Some(o)) = (to, out) {
            if o.shape != shape {
                return Ok(Err(BC_ERR_SHAPE));
            }
        }
        // Allocations: the result (a new tensor); with elements, every tensor of another type
        // converted, and a temporary when the written type is not the result type.
        let n = numel_of(&shape);
        let mut allocs = Vec::new();
        if to == To::New {
            allocs.push((n, itemsize(result)));
        }
        if n > 0 {
            for t in &tensors {
                if t.dtype != result {
                    allocs.push((t.numel(), itemsize(result)));
                }
            }
            if let Some(w) = written {
                if w.dtype != result {
                    allocs.push((n, itemsize(result)));
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
        let at = |t: &TM, idx: &[usize]| -> Option<Num> {
            let lead = nd - t.ndim();
            let i: Vec<usize> = (0..t.ndim())
                .map(|k| if t.shape[k] == 1 { 0 } else { idx[lead + k] })
                .collect();
            self.read(t, &i).map(|v| v.cast(result))
        };
        let get = |o: &Opnd, idx: &[usize]| -> Option<Option<Num>> {
            match o {
                Opnd::T(t) => Some(Some(at(t, idx)?)),
                Opnd::N(n) => Some(Some(*n)),
                Opnd::None => Some(None),
            }
        };
        let values = indices(&shape)
            .iter()
            .map(|idx| {
                let xv = at(x, idx)?;
                let (bv, cv) = (get(b, idx)?, get(c, idx)?);
                Some(self.ternary_value(op, result, xv, bv, cv, value, b, c))
            })
            .collect();
        Ok(Ok((shape, result, values)))
    }

    /// One element: tensors' elements already of the result type, numbers exact.
    fn ternary_value(
        &self,
        op: TOp,
        result: i32,
        x: Num,
        b: Option<Num>,
        c: Option<Num>,
        value: Num,
        ob: &Opnd,
        oc: &Opnd,
    ) -> Num {
        let is_number = |o: &Opnd| matches!(o, Opnd::N(_));
        if is_float(result) {
            if result == F64 {
                let r = real64(
                    op,
                    x.to_f64(),
                    b.map(num_f64),
                    c.map(num_f64),
                    num_f64(value),
                );
                return Num::D(r);
            }
            // A number is read straight into float32 (from its double value); a tensor element
            // of the result type converts exactly.
            let k = |n: Num, number: bool| -> f32 {
                if number {
                    num_f64(n) as f32
                } else {
                    n.to_f64() as f32
                }
            };
            let r = real32(
                op,
                k(x, false),
                b.map(|n| k(n, is_number(ob))),
                c.map(|n| k(n, is_number(oc))),
                num_f64(value) as f32,
            );
            return Num::from_f64(result, r as f64);
        }
        match op {
            TOp::Clamp if !is_number(ob) && !is_number(oc) => clamp_value(x, b, c),
            TOp::Clamp if result == BOOL => {
                let mut v = x.to_i64() != 0;
                if let Some(lo) = b {
                    v |= lo.to_i64() != 0;
                }
                if let Some(hi) = c {
                    v &= hi.to_i64() != 0;
                }
                Num::B(v)
            }
            TOp::Clamp => {
                // Integer bounds compare as integers: one beyond the type's range has no effect
                // (the range checks refused the ones that would leave nothing).
                let mut v = x.to_i64();
                if let Some(lo) = b {
                    v = v.max(lo.to_i64());
                }
                if let Some(hi) = c {
                    v = v.min(hi.to_i64());
                }
                Num::from_i64(result, v)
            }
            TOp::Addcmul => {
                let v = int_number(value, result);
                let r = x.to_i64().wrapping_add(
                    v.wrapping_mul(b.unwrap().to_i64())
                        .wrapping_mul(c.unwrap().to_i64()),
                );
                Num::from_i64(result, r)
            }
            TOp::Lerp | TOp::Addcdiv => unreachable!("refused: no integer result"),
        }
    }

    /// A number operand as the model holds it (its exact value).
    fn number_num(s: &bc_scalar) -> Num {
        match s.kind {
            BC_SCALAR_BOOL => Num::B(s.b),
            BC_SCALAR_INT => Num::I64(s.i),
            _ => Num::D(s.f),
        }
    }

    fn valid_kind(s: &bc_scalar) -> bool {
        matches!(s.kind, BC_SCALAR_BOOL | BC_SCALAR_INT | BC_SCALAR_FLOAT)
    }

    /// Runs one call: `numbers_first` is the status of reading the numbers (an unknown kind),
    /// `args` the handles the library resolves in order (NULL among `required` ones refused
    /// first), then the model.
    fn ternary_call(
        &mut self,
        what: &'static str,
        op: TOp,
        to: To,
        a: Arg,
        b: Option<Arg>,
        c: Option<Arg>,
        nb: Option<Num>,
        nc: Option<Num>,
        value: Num,
        out: Option<Arg>,
        null_out: bool,
        kinds_ok: bool,
        call: impl FnOnce(&Self, *mut *mut bc_tensor) -> i32,
    ) -> Result<Result<(), Skip>, String> {
        let dst = self.inp.below(NSLOTS);
        let model = (|| -> Result<Expect<_>, Skip> {
            // A new-tensor call checks its out-pointer first, then the numbers' kinds.
            if to == To::New && null_out {
                return Ok(Err(BC_ERR_NULL_ARG));
            }
            if !kinds_ok {
                return Ok(Err(BC_ERR_INVALID_ARG));
            }
            // A NULL required operand (every tensor but clamp's bounds) is refused before any
            // handle is looked at.
            if op != TOp::Clamp && [b, c].iter().any(|x| matches!(x, Some(Arg::Null))) {
                return Ok(Err(BC_ERR_NULL_ARG));
            }
            let x = match self.resolve(a) {
                Ok(t) => t,
                Err(s) => return Ok(Err(s)),
            };
            let mut ops = [Opnd::None, Opnd::None];
            for (k, (h, n)) in [(b, nb), (c, nc)].into_iter().enumerate() {
                ops[k] = match (h, n) {
                    (Some(Arg::Null), _) => Opnd::None,
                    (Some(h), _) => match self.resolve(h) {
                        Ok(t) => Opnd::T(t),
                        Err(s) => return Ok(Err(s)),
                    },
                    (None, Some(n)) => Opnd::N(n),
                    (None, None) => Opnd::None,
                };
            }
            let o = match out {
                Some(o) => match self.resolve(o) {
                    Ok(t) => Some(t),
                    Err(s) => return Ok(Err(s)),
                },
                None => None,
            };
            let [ob, oc] = ops;
            Ok(self
                .model_ternary(op, &x, &ob, &oc, value, to, o.as_ref())?
                .map(|m| (x, ob, oc, o, m)))
        })();
        let expected = match model {
            Err(Skip) => return Ok(Err(Skip)),
            Ok(e) => e,
        };
        let show = |r: &Self, h: Option<Arg>, n: Option<Num>| match (h, n) {
            (Some(h), _) => r.describe(h),
            (None, Some(n)) => format!("{n:?}"),
            (None, None) => "none".into(),
        };
        self.note(format!(
            "{what}({}, {}, {}, value {value:?}{}{})",
            self.describe(a),
            show(self, b, nb),
            show(self, c, nc),
            out.map_or(String::new(), |o| format!(", out {}", self.describe(o))),
            if to == To::New {
                format!(" -> #{dst}")
            } else {
                String::new()
            }
        ));
        let mut made: *mut bc_tensor = 0x55 as *mut bc_tensor;
        let st = call(self, if null_out { ptr::null_mut() } else { &mut made });
        let exp_st = expected.as_ref().map_or_else(|&s| s, |_| BC_OK);
        self.check_status(what, st, exp_st)?;
        match to {
            To::New if null_out => {}
            To::New => {
                let tm = match expected {
                    Ok((x, ob, oc, _, (shape, result, values))) => {
                        let inputs: Vec<(Vec<usize>, Vec<i64>, bool)> =
                            [Some(&x), ob.tensor(), oc.tensor()]
                                .into_iter()
                                .flatten()
                                .map(|t| (t.shape.clone(), t.strides.clone(), t.dtype != result))
                                .collect();
                        let strides = result_layout(&shape, &inputs);
                        Ok(self.new_tensor_strided(result, &shape, strides, Some(values)))
                    }
                    Err(s) => Err(s),
                };
                self.finish_new(what, st, made, tm, dst)?;
            }
            To::InPlace | To::Out => {
                if let Ok((x, _, _, o, (_, _, values))) = expected {
                    let w = if to == To::InPlace { x } else { o.unwrap() };
                    for (i, v) in values.into_iter().enumerate() {
                        self.write_at(&w, i, v);
                    }
                }
            }
        }
        Ok(Ok(()))
    }

    fn draw_to(&mut self) -> To {
        [To::New, To::InPlace, To::Out][self.inp.below(3)]
    }

    /// A second operand: usually any handle, sometimes the first one itself (so that types
    /// agree often enough for `lerp` to run).
    fn same_or_arg(&mut self, a: Arg) -> Arg {
        if self.inp.below(4) == 0 {
            a
        } else {
            self.arg()
        }
    }

    /// `bc_lerp`, `bc_lerp_inplace`, `bc_lerp_out` and their `_scalar` forms.
    pub(super) fn op_lerp(&mut self) -> Result<Result<(), Skip>, String> {
        let to = self.draw_to();
        let number = self.inp.flag();
        let a = self.arg();
        let e = self.same_or_arg(a);
        let (w, s) = if number {
            (None, Some(self.number()))
        } else {
            (Some(self.same_or_arg(a)), None)
        };
        let out = (to == To::Out).then(|| self.same_or_arg(a));
        let null_out = to == To::New && self.out_flag();
        let kinds_ok = s.as_ref().is_none_or(Self::valid_kind);
        let nw = s.as_ref().map(Self::number_num);
        let what = match (number, to) {
            (false, To::New) => "lerp",
            (false, To::InPlace) => "lerp_inplace",
            (false, To::Out) => "lerp_out",
            (true, To::New) => "lerp_scalar",
            (true, To::InPlace) => "lerp_scalar_inplace",
            (true, To::Out) => "lerp_scalar_out",
        };
        let one = Num::I64(1);
        self.ternary_call(
            what,
            TOp::Lerp,
            to,
            a,
            Some(e),
            w,
            None,
            nw,
            one,
            out,
            null_out,
            kinds_ok,
            |r, o| {
                let (ha, he) = (r.raw(a), r.raw(e));
                let ho = out.map_or(ptr::null_mut(), |x| r.raw(x));
                match (s, to) {
                    // SAFETY: `o` is NULL or valid for one write.
                    (None, To::New) => unsafe { bc_lerp(ha, he, r.raw(w.unwrap()), o) },
                    (None, To::InPlace) => bc_lerp_inplace(ha, he, r.raw(w.unwrap())),
                    (None, To::Out) => bc_lerp_out(ha, he, r.raw(w.unwrap()), ho),
                    // SAFETY: as above.
                    (Some(s), To::New) => unsafe { bc_lerp_scalar(ha, he, s, o) },
                    (Some(s), To::InPlace) => bc_lerp_scalar_inplace(ha, he, s),
                    (Some(s), To::Out) => bc_lerp_scalar_out(ha, he, s, ho),
                }
            },
        )
    }

    /// `bc_addcmul*` (`div` false) and `bc_addcdiv*`.
    pub(super) fn op_addc(&mut self, div: bool) -> Result<Result<(), Skip>, String> {
        let to = self.draw_to();
        let a = self.arg();
        let t1 = self.same_or_arg(a);
        let t2 = self.same_or_arg(a);
        let s = self.number();
        let out = (to == To::Out).then(|| self.same_or_arg(a));
        let null_out = to == To::New && self.out_flag();
        let kinds_ok = Self::valid_kind(&s);
        let value = if kinds_ok {
            Self::number_num(&s)
        } else {
            Num::I64(0)
        };
        let (op, what) = match (div, to) {
            (false, To::New) => (TOp::Addcmul, "addcmul"),
            (false, To::InPlace) => (TOp::Addcmul, "addcmul_inplace"),
            (false, To::Out) => (TOp::Addcmul, "addcmul_out"),
            (true, To::New) => (TOp::Addcdiv, "addcdiv"),
            (true, To::InPlace) => (TOp::Addcdiv, "addcdiv_inplace"),
            (true, To::Out) => (TOp::Addcdiv, "addcdiv_out"),
        };
        self.ternary_call(
            what,
            op,
            to,
            a,
            Some(t1),
            Some(t2),
            None,
            None,
            value,
            out,
            null_out,
            kinds_ok,
            |r, o| {
                let (ha, h1, h2) = (r.raw(a), r.raw(t1), r.raw(t2));
                let ho = out.map_or(ptr::null_mut(), |x| r.raw(x));
                match (div, to) {
                    // SAFETY: `o` is NULL or valid for one write.
                    (false, To::New) => unsafe { bc_addcmul(ha, h1, h2, s, o) },
                    (false, To::InPlace) => bc_addcmul_inplace(ha, h1, h2, s),
                    (false, To::Out) => bc_addcmul_out(ha, h1, h2, s, ho),
                    // SAFETY: as above.
                    (true, To::New) => unsafe { bc_addcdiv(ha, h1, h2, s, o) },
                    (true, To::InPlace) => bc_addcdiv_inplace(ha, h1, h2, s),
                    (true, To::Out) => bc_addcdiv_out(ha, h1, h2, s, ho),
                }
            },
        )
    }

    /// `bc_clamp_scalar*` (number bounds, either or both absent) and `bc_clamp_out` (tensor
    /// bounds into `out`).
    pub(super) fn op_clamp_more(&mut self) -> Result<Result<(), Skip>, String> {
        let tensor_bounds = self.inp.below(4) == 0;
        let to = if tensor_bounds {
            To::Out
        } else {
            self.draw_to()
        };
        let a = self.arg();
        let one = Num::I64(1);
        if tensor_bounds {
            let lo = self.bound_arg().unwrap_or(Arg::Null);
            let hi = self.bound_arg().unwrap_or(Arg::Null);
            let out = self.same_or_arg(a);
            return self.ternary_call(
                "clamp_out",
                TOp::Clamp,
                To::Out,
                a,
                Some(lo),
                Some(hi),
                None,
                None,
                one,
                Some(out),
                false,
                true,
                |r, _| bc_clamp_out(r.raw(a), r.raw(lo), r.raw(hi), r.raw(out)),
            );
        }
        let bound = |r: &mut Self| (r.inp.below(3) != 0).then(|| r.number());
        let (lo, hi) = (bound(self), bound(self));
        let out = (to == To::Out).then(|| self.same_or_arg(a));
        let null_out = to == To::New && self.out_flag();
        let kinds_ok = [lo, hi].iter().flatten().all(Self::valid_kind);
        let as_num = |s: &Option<bc_scalar>| {
            s.as_ref()
                .filter(|s| Self::valid_kind(s))
                .map(Self::number_num)
        };
        let (nlo, nhi) = (as_num(&lo), as_num(&hi));
        let what = match to {
            To::New => "clamp_scalar",
            To::InPlace => "clamp_scalar_inplace",
            To::Out => "clamp_scalar_out",
        };
        self.ternary_call(
            what,
            TOp::Clamp,
            to,
            a,
            None,
            None,
            nlo,
            nhi,
            one,
            out,
            null_out,
            kinds_ok,
            |r, o| {
                let p = |s: &Option<bc_scalar>| {
                    s.as_ref().map_or(ptr::null(), |s| s as *const bc_scalar)
                };
                let (pl, ph) = (p(&lo), p(&hi));
                let ha = r.raw(a);
                // SAFETY: the bounds are NULL or point to live numbers; `o` NULL or valid.
                unsafe {
                    match to {
                        To::New => bc_clamp_scalar(ha, pl, ph, o),
                        To::InPlace => bc_clamp_scalar_inplace(ha, pl, ph),
                        To::Out => bc_clamp_scalar_out(ha, pl, ph, r.raw(out.unwrap())),
                    }
                }
            },
        )
    }
}
