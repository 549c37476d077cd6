//! The unary family: `bc_unary`, `bc_unary_inplace` and `bc_unary_out` with every code below
//! `BC_UNARY_COUNT` (and codes that are none), checked against the type rules and refusals of
//! docs/semantics.md ("Unary operations") on the model. Values: exactly for the exact operations
//! (IEEE arithmetic in the computation type, 16-bit types through float32); for the functions the
//! header bounds by one unit in the last place, within that bound of a float64 reference computed
//! here (two units for float64 results, whose reference is itself rounded), the library's element
//! then kept as the model's.
use super::*;

/// Which `out` types a call into `out` accepts.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum OutRule {
    /// Any type the result type can be cast to.
    Cast,
    /// Exactly the result type.
    Exact,
    /// Bool only.
    Bool,
}

pub(super) struct UnaryRule {
    /// Integers and bool compute in float32.
    floating: bool,
    bool_result: bool,
    pub(super) out: OutRule,
    inplace: bool,
    /// Whether a kernel exists for the computation type's category (bool, integer, floating).
    kernels: [bool; 3],
}

/// The operation's row of the contract (docs/semantics.md, "Unary operations").
pub(super) fn unary_rule(op: i32) -> UnaryRule {
    use OutRule::*;
    let (floating, bool_result, out, inplace, kernels) = match op {
        BC_UNARY_ABS | BC_UNARY_NEG => (false, false, Exact, true, [false, true, true]),
        BC_UNARY_SIGN => (false, false, Exact, true, [true, true, true]),
        // bool computes in int64 (see `unary_types`).
        BC_UNARY_SQUARE => (false, false, Cast, true, [false, true, true]),
        BC_UNARY_FLOOR | BC_UNARY_CEIL | BC_UNARY_ROUND | BC_UNARY_TRUNC => {
            (false, false, Exact, true, [false, true, true])
        }
        BC_UNARY_FRAC => (false, false, Exact, true, [false, false, true]),
        BC_UNARY_ISNAN | BC_UNARY_ISINF | BC_UNARY_ISFINITE | BC_UNARY_SIGNBIT => {
            (false, true, Bool, false, [true, true, true])
        }
        BC_UNARY_LOGICAL_NOT => (false, true, Cast, true, [true, true, true]),
        BC_UNARY_BITWISE_NOT => (false, false, Exact, true, [true, true, false]),
        // The floating functions, `reciprocal` to `erfc`.
        _ => (true, false, Cast, true, [false, false, true]),
    };
    UnaryRule {
        floating,
        bool_result,
        out,
        inplace,
        kernels,
    }
}

/// (computation type, result type) of `op` on an input of type `dt`.
fn unary_types(op: i32, dt: i32) -> (i32, i32) {
    let rule = unary_rule(op);
    let compute = if rule.floating && !is_float(dt) {
        F32
    } else if op == BC_UNARY_SQUARE && dt == BOOL {
        I64
    } else {
        dt
    };
    (compute, if rule.bool_result { BOOL } else { compute })
}

/// What the model knows of one result element.
#[derive(Clone, Copy, Debug)]
enum UVal {
    /// The exact value, in the result type.
    Exact(Num),
    /// A float64 reference: the library's element must be within the bound of it.
    Near(f64),
}

/// `op(x)` for `x` already in the computation type.
fn unary_value(op: i32, x: Num, result: i32) -> UVal {
    let dt = x.dtype();
    if !is_float(dt) {
        let v = x.to_i64();
        if dt == BOOL && op == BC_UNARY_BITWISE_NOT {
            return UVal::Exact(Num::B(v == 0));
        }
        let r = match op {
            BC_UNARY_ABS => v.wrapping_abs(),
            BC_UNARY_NEG => v.wrapping_neg(),
            BC_UNARY_SIGN => v.signum(),
            BC_UNARY_SQUARE => v.wrapping_mul(v),
            BC_UNARY_ISNAN | BC_UNARY_ISINF => 0,
            BC_UNARY_ISFINITE => 1,
            BC_UNARY_SIGNBIT => (v < 0) as i64,
            BC_UNARY_LOGICAL_NOT => (v == 0) as i64,
            BC_UNARY_BITWISE_NOT => !v,
            _ => v, // floor, ceil, round, trunc leave integers as they are
        };
        // Wrapping to the result type is the integer arithmetic's wrapping.
        return UVal::Exact(Num::from_i64(result, r));
    }
    let wide = dt == F64;
    let xf = x.to_f64();
    macro_rules! exact_in {
        ($t:ty) => {{
            let x = xf as $t; // exact: `x` has the computation type
            let one: $t = 1.0;
            let r: Option<$t> = match op {
                BC_UNARY_ABS => Some(x.abs()),
                BC_UNARY_NEG => Some(-x),
                BC_UNARY_SIGN => Some(if x > 0.0 {
                    1.0
                } else if x < 0.0 {
                    -1.0
                } else {
                    0.0
                }),
                BC_UNARY_RECIPROCAL => Some(one / x),
                BC_UNARY_SQRT => Some(x.sqrt()),
                BC_UNARY_SQUARE => Some(x * x),
                BC_UNARY_FLOOR => Some(x.floor()),
                BC_UNARY_CEIL => Some(x.ceil()),
                BC_UNARY_ROUND => Some(x.round_ties_even()),
                BC_UNARY_TRUNC => Some(x.trunc()),
                BC_UNARY_FRAC => Some(x - x.trunc()),
                _ => None,
            };
            let b: Option<bool> = match op {
                BC_UNARY_ISNAN => Some(x.is_nan()),
                BC_UNARY_ISINF => Some(x.is_infinite()),
                BC_UNARY_ISFINITE => Some(x.is_finite()),
                BC_UNARY_SIGNBIT => Some(x.is_sign_negative()),
                BC_UNARY_LOGICAL_NOT => Some(x == 0.0),
                _ => None,
            };
            // sigmoid is defined as its formula in the computation type, `exp` through float64.
            let sigmoid = one / (one + ((-x) as f64).exp() as $t);
            (r.map(|v| v as f64), b, sigmoid as f64)
        }};
    }
    let (exact, predicate, sigmoid) = if wide { exact_in!(f64) } else { exact_in!(f32) };
    if let Some(b) = predicate {
        return UVal::Exact(Num::B(b));
    }
    if let Some(v) = exact {
        // Representable in the working type, so converting rounds once.
        return UVal::Exact(Num::from_f64(result, v));
    }
    UVal::Near(match op {
        BC_UNARY_RSQRT => 1.0 / xf.sqrt(),
        BC_UNARY_EXP => xf.exp(),
        BC_UNARY_EXP2 => xf.exp2(),
        BC_UNARY_EXPM1 => xf.exp_m1(),
        BC_UNARY_LOG => xf.ln(),
        BC_UNARY_LOG2 => xf.log2(),
        BC_UNARY_LOG10 => xf.log10(),
        BC_UNARY_LOG1P => xf.ln_1p(),
        BC_UNARY_SIN => xf.sin(),
        BC_UNARY_COS => xf.cos(),
        BC_UNARY_TAN => xf.tan(),
        BC_UNARY_ASIN => xf.asin(),
        BC_UNARY_ACOS => xf.acos(),
        BC_UNARY_ATAN => xf.atan(),
        BC_UNARY_SINH => xf.sinh(),
        BC_UNARY_COSH => xf.cosh(),
        BC_UNARY_TANH => xf.tanh(),
        // The inverse hyperbolics from libm (musl's, within an ulp): std's acosh is the formula
        // ln(x + sqrt(x^2 - 1)), which loses about 50 ulps just above 1. libm's acosh reads only
        // the exponent of x, so its domain (x >= 1) is checked here.
        BC_UNARY_ASINH => libm::asinh(xf),
        BC_UNARY_ACOSH if xf < 1.0 => f64::NAN,
        BC_UNARY_ACOSH => libm::acosh(xf),
        BC_UNARY_ATANH => libm::atanh(xf),
        BC_UNARY_SIGMOID => sigmoid,
        BC_UNARY_ERF => libm::erf(xf),
        BC_UNARY_ERFC => libm::erfc(xf),
        _ => panic!("model: unary code {op} has no value"),
    })
}

/// The next representable value of `n`'s floating type up or down; NaN, and an infinity moving
/// outward, stay.
pub(super) fn step(n: Num, up: bool) -> Num {
    let (bits, width) = match n {
        Num::H(v) => (v.to_bits() as u64, 16),
        Num::BH(v) => (v.to_bits() as u64, 16),
        Num::F(v) => (v.to_bits() as u64, 32),
        Num::D(v) => (v.to_bits(), 64),
        other => return other,
    };
    let f = n.to_f64();
    let sign = 1u64 << (width - 1);
    let negative = bits & sign != 0;
    let new = if f.is_nan() {
        bits
    } else if bits & !sign == 0 {
        // From either zero, both ways leave through the smallest subnormal.
        if up {
            1
        } else {
            sign | 1
        }
    } else if up != negative {
        if f.is_infinite() {
            bits
        } else {
            bits + 1
        }
    } else {
        bits - 1
    };
    match n {
        Num::H(_) => Num::H(f16::from_bits(new as u16)),
        Num::BH(_) => Num::BH(bf16::from_bits(new as u16)),
        Num::F(_) => Num::F(f32::from_bits(new as u32)),
        _ => Num::D(f64::from_bits(new)),
    }
}

/// Whether `got` (in `dest`'s type) is the result type's rounding of `reference`, or within the
/// bound of it, converted to `dest` as the library converts a result.
fn near(dest: i32, result: i32, reference: f64, got: Num) -> bool {
    let rounded = match result {
        F16 => Num::H(f16::from_f64(reference)),
        BF16 => Num::BH(bf16::from_f64(reference)),
        F32 => Num::F(reference as f32),
        _ => Num::D(reference),
    };
    let steps = if result == F64 { 2 } else { 1 };
    let (mut lo, mut hi) = (rounded, rounded);
    let mut candidates = vec![rounded];
    for _ in 0..steps {
        lo = step(lo, false);
        hi = step(hi, true);
        candidates.extend([lo, hi]);
    }
    let got = got.encode();
    candidates
        .iter()
        .any(|c| same_bits(dest, &c.cast(dest).encode(), &got))
}

/// The elements of a live handle, row-major, as `bc_tensor_copy_to` gives them.
pub(super) fn library_values(
    h: *const bc_tensor,
    dtype: i32,
    n: usize,
) -> Result<Vec<Num>, String> {
    let size = itemsize(dtype);
    let mut buf = vec![0u8; n * size + 8];
    // SAFETY: buf holds n * size bytes (and more).
    let st = unsafe { bc_tensor_copy_to(h, buf.as_mut_ptr().cast(), n * size) };
    if st != BC_OK {
        return Err(format!(
            "copy_to of a result failed: {st} {}",
            last_message()
        ));
    }
    Ok(buf[..n * size]
        .chunks_exact(size)
        .map(|c| Num::decode(dtype, c))
        .collect())
}

/// The model's values of a result written as `dest`: exact ones converted, near ones checked
/// against the library's elements `got` and then taken from them.
fn settle(
    what: &str,
    dest: i32,
    result: i32,
    values: &[Option<UVal>],
    got: &[Num],
) -> Result<Vec<Option<Num>>, String> {
    values
        .iter()
        .enumerate()
        .map(|(i, v)| match *v {
            None => Ok(None),
            Some(UVal::Exact(n)) => Ok(Some(n.cast(dest))),
            Some(UVal::Near(r)) if near(dest, result, r, got[i]) => Ok(Some(got[i])),
            Some(UVal::Near(r)) => Err(format!(
                "{what}: element {i} is {:?}, not within the bound of the reference {r:e}",
                got[i]
            )),
        })
        .collect()
}

type UnaryModel = (i32, i32, Vec<Option<UVal>>);

impl Runner<'_> {
    /// A code drawn from `BC_UNARY_COUNT`, or (rarely) one that names no operation.
    pub(super) fn unary_code(&mut self) -> i32 {
        self.unary_code_named().0
    }

    /// `unary_code`, and whether to make the call through the operation's named form (decided
    /// by the same byte, so that programs decode as before).
    pub(super) fn unary_code_named(&mut self) -> (i32, bool) {
        let b = self.inp.u8();
        let named = b < 250 && (b as i32 / BC_UNARY_COUNT) % 2 == 1;
        (Self::unary_code_of(b), named)
    }

    fn unary_code_of(b: u8) -> i32 {
        if b < 250 {
            b as i32 % BC_UNARY_COUNT
        } else {
            [
                BC_UNARY_COUNT,
                -1,
                100,
                i32::MIN,
                i32::MAX,
                BC_UNARY_COUNT + 1,
            ][(b - 250) as usize]
        }
    }

    /// `op(x)` on the model into `dest` (None: a new tensor; `Some((t, true))`: in place), the
    /// checks in the library's order: (computation type, result type, values row-major).
    fn model_unary(
        &self,
        op: i32,
        x: &TM,
        dest: Option<(&TM, bool)>,
    ) -> Result<Expect<UnaryModel>, Skip> {
        let rule = unary_rule(op);
        if op == BC_UNARY_NEG && x.dtype == BOOL {
            return Ok(Err(BC_ERR_DTYPE));
        }
        let (compute, result) = unary_types(op, x.dtype);
        match dest {
            None => {}
            Some((_, true)) => {
                if !rule.inplace {
                    return Ok(Err(BC_ERR_INVALID_ARG));
                }
                if self.internal_overlap(x) {
                    return Ok(Err(BC_ERR_OVERLAP));
                }
            }
            Some((o, false)) => {
                let refused = match rule.out {
                    OutRule::Cast => false,
                    OutRule::Exact => o.dtype != result,
                    OutRule::Bool => o.dtype != BOOL,
                };
                if refused {
                    return Ok(Err(BC_ERR_DTYPE));
                }
                if self.internal_overlap(o) || self.partial_overlap(o, x) {
                    return Ok(Err(BC_ERR_OVERLAP));
                }
            }
        }
        if !rule.kernels[category(compute) as usize] {
            return Ok(Err(BC_ERR_DTYPE));
        }
        if let Some((d, _)) = dest {
            if !can_cast(result, d.dtype) {
                return Ok(Err(BC_ERR_DTYPE));
            }
        }
        if let Some((o, false)) = dest {
            if o.shape != x.shape {
                return Ok(Err(BC_ERR_SHAPE));
            }
        }
        // The result (a new tensor), then, when there are elements, the input converted to the
        // computation type and a temporary when the written type is not the result type.
        let n = x.numel();
        let mut allocs = Vec::new();
        if dest.is_none() {
            allocs.push((n, itemsize(result)));
        }
        if n > 0 {
            if x.dtype != compute {
                allocs.push((n, itemsize(compute)));
            }
            if let Some((d, _)) = dest {
                if d.dtype != result {
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
        let values = indices(&x.shape)
            .iter()
            .map(|idx| {
                self.read(x, idx)
                    .map(|v| unary_value(op, v.cast(compute), result))
            })
            .collect();
        Ok(Ok((compute, result, values)))
    }

    /// `bc_unary`: a new tensor, laid out as the (converted) input.
    pub(super) fn op_unary(&mut self) -> Result<Result<(), Skip>, String> {
        let (op, named) = self.unary_code_named();
        let a = self.arg();
        let dst = self.inp.below(NSLOTS);
        let null_out = self.out_flag();
        let model = (|| -> Result<Expect<(TM, UnaryModel)>, Skip> {
            if null_out {
                return Ok(Err(BC_ERR_NULL_ARG));
            }
            if !(0..BC_UNARY_COUNT).contains(&op) {
                return Ok(Err(BC_ERR_INVALID_ARG));
            }
            let x = match self.resolve(a) {
                Ok(t) => t,
                Err(s) => return Ok(Err(s)),
            };
            Ok(self.model_unary(op, &x, None)?.map(|m| (x, m)))
        })();
        let expected = match model {
            Err(Skip) => return Ok(Err(Skip)),
            Ok(e) => e,
        };
        self.note(format!("unary(op {op}, {}) -> #{dst}", self.describe(a)));
        let h = self.raw(a);
        let mut out: *mut bc_tensor = 0x55 as *mut bc_tensor;
        let out_arg = if null_out {
            ptr::null_mut()
        } else {
            &mut out as *mut _
        };
        // SAFETY: out_arg is NULL or valid for one write.
        let st = unsafe {
            match named {
                true => super::named::named_unary(op).0(h, out_arg),
                false => bc_unary(op, h, out_arg),
            }
        };
        if null_out {
            return self.check_status("unary", st, BC_ERR_NULL_ARG).map(Ok);
        }
        let (x, (compute, result, values)) = match expected {
            Err(s) => return self.finish_new("unary", st, out, Err(s), dst).map(Ok),
            Ok(e) => e,
        };
        self.check_status("unary", st, BC_OK)?;
        if out.is_null() {
            return Err("unary: BC_OK but *out is NULL".into());
        }
        let got = library_values(out, result, values.len())?;
        let values = settle("unary", result, result, &values, &got)?;
        let strides = result_layout(
            &x.shape,
            &[(x.shape.clone(), x.strides.clone(), x.dtype != compute)],
        );
        let t = self.new_tensor_strided(result, &x.shape, strides, Some(values));
        self.install(dst, out, t).map(Ok)
    }

    /// `bc_unary_inplace`.
    pub(super) fn op_unary_inplace(&mut self) -> Result<Result<(), Skip>, String> {
        let (op, named) = self.unary_code_named();
        let a = self.arg();
        self.unary_write(op, a, None, named)
    }

    /// `bc_unary_out`.
    pub(super) fn op_unary_out(&mut self) -> Result<Result<(), Skip>, String> {
        let (op, named) = self.unary_code_named();
        let a = self.arg();
        let out = self.arg();
        self.unary_write(op, a, Some(out), named)
    }

    /// In place (`out` None) or into `out`.
    fn unary_write(
        &mut self,
        op: i32,
        a: Arg,
        out: Option<Arg>,
        named: bool,
    ) -> Result<Result<(), Skip>, String> {
        let model = (|| -> Result<Expect<(TM, UnaryModel)>, Skip> {
            if !(0..BC_UNARY_COUNT).contains(&op) {
                return Ok(Err(BC_ERR_INVALID_ARG));
            }
            let x = match self.resolve(a) {
                Ok(t) => t,
                Err(s) => return Ok(Err(s)),
            };
            let d = match out {
                None => x.clone(),
                Some(o) => match self.resolve(o) {
                    Ok(t) => t,
                    Err(s) => return Ok(Err(s)),
                },
            };
            Ok(self
                .model_unary(op, &x, Some((&d, out.is_none())))?
                .map(|m| (d, m)))
        })();
        let expected = match model {
            Err(Skip) => return Ok(Err(Skip)),
            Ok(e) => e,
        };
        let what = if out.is_some() {
            "unary_out"
        } else {
            "unary_inplace"
        };
        self.note(format!(
            "{what}(op {op}, {}{})",
            self.describe(a),
            out.map_or(String::new(), |o| format!(", out {}", self.describe(o)))
        ));
        let h = self.raw(a);
        // The named in-place form where there is one (the predicates have none).
        let forms = named.then(|| super::named::named_unary(op));
        let st = match (out, forms) {
            (None, Some((_, Some(inplace), _))) => inplace(h),
            (None, _) => bc_unary_inplace(op, h),
            (Some(o), Some((_, _, into))) => into(h, self.raw(o)),
            (Some(o), None) => bc_unary_out(op, h, self.raw(o)),
        };
        let exp_st = expected.as_ref().map_or_else(|&s| s, |_| BC_OK);
        self.check_status(what, st, exp_st)?;
        if let Ok((d, (_, result, values))) = expected {
            let hd = match out {
                None => h,
                Some(o) => self.raw(o),
            };
            let got = library_values(hd, d.dtype, values.len())?;
            let values = settle(what, d.dtype, result, &values, &got)?;
            // `sign` of a bool is the element itself: its byte is copied as it is (a non-zero
            // byte other than 1 included), so the model copies the bytes, taken before writing.
            let x = self.resolve(a).expect("resolved above");
            let bytes: Vec<Option<u8>> = match op == BC_UNARY_SIGN && x.dtype == BOOL {
                true => indices(&x.shape)
                    .iter()
                    .map(|i| self.raw_byte(&x, i))
                    .collect(),
                false => Vec::new(),
            };
            for (i, v) in values.into_iter().enumerate() {
                self.write_at(&d, i, v);
            }
            for (i, byte) in bytes.into_iter().enumerate() {
                self.write_byte_at(&d, i, byte);
            }
        }
        Ok(Ok(()))
    }
}
