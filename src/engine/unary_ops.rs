//! The elementwise unary operations: one table of what each one is (code, name, type rules) and
//! one scalar function each, written once per kind of element it is defined for. The checks and
//! the execution are shared ([`super::unary`]).
//!
//! A scalar function is written for integers, for float32/float64 (through [`Real`]) and for
//! bools, each optional. float16 and bfloat16 compute in float32 and round once, as PyTorch's CPU
//! kernels do; integers and bools given to a floating function are first converted to float32
//! (the table's `floating` rule).
use super::binary_ops::{has_kind, if_kind, out_type};
use super::dtype::{Category, DType};
use super::elem::{Bool8, Elem, Float, Int};
use std::marker::PhantomData;

/// float32 and float64: the functions the unary operations are made of. float32's
/// transcendental functions are evaluated in float64 and rounded once, so they are correctly
/// rounded but for rare double-rounding cases (PyTorch's own are within the stated ulp of that).
pub trait Real: Float {
    fn abs(self) -> Self;
    fn neg(self) -> Self;
    fn sqrt(self) -> Self;
    fn ceil(self) -> Self;
    fn trunc(self) -> Self;
    /// Rounds half to even.
    fn round_even(self) -> Self;
    fn is_infinite(self) -> bool;
    fn is_sign_negative(self) -> bool;
    /// `f(self)` with `f` a float64 function (float32 evaluates in float64 and rounds once).
    fn via_f64(self, f: fn(f64) -> f64) -> Self;
    /// `W`'s function: float32 through its float64 form without a library call (which
    /// vectorizes), float64 through libm.
    fn wide<W: Wide>(self) -> Self;
    /// `W`'s function through libm (float32 evaluated in float64 and rounded once).
    fn wide_exact<W: Wide>(self) -> Self;
    /// Whether [`Real::wide`] holds for this argument (always for float64).
    fn in_wide_domain<W: Wide>(self) -> bool;
}

/// A function with a float64 form for float32 arguments, made of arithmetic alone so that a
/// loop of it vectorizes, and libm's for float64 arguments.
pub trait Wide {
    /// For a float32 argument, widened; rounded to float32 after. Holds for `|x| <= LIMIT`.
    fn for_f32(x: f64) -> f64;
    fn for_f64(x: f64) -> f64;
    /// The largest float32 argument `for_f32` holds for (infinite: every one, NaN included).
    const LIMIT: f64;
}

macro_rules! real {
    ($t:ident) => {
        impl Real for $t {
            #[inline(always)]
            fn abs(self) -> Self {
                <$t>::abs(self)
            }
            #[inline(always)]
            fn neg(self) -> Self {
                -self
            }
            #[inline(always)]
            fn sqrt(self) -> Self {
                <$t>::sqrt(self)
            }
            #[inline(always)]
            fn ceil(self) -> Self {
                <$t>::ceil(self)
            }
            #[inline(always)]
            fn trunc(self) -> Self {
                <$t>::trunc(self)
            }
            #[inline(always)]
            fn round_even(self) -> Self {
                <$t>::round_ties_even(self)
            }
            #[inline(always)]
            fn is_infinite(self) -> bool {
                <$t>::is_infinite(self)
            }
            #[inline(always)]
            fn is_sign_negative(self) -> bool {
                <$t>::is_sign_negative(self)
            }
            #[inline(always)]
            fn via_f64(self, f: fn(f64) -> f64) -> Self {
                f(self as f64) as $t
            }
            #[inline(always)]
            fn wide<W: Wide>(self) -> Self {
                real!(@wide $t, self, W)
            }
            #[inline(always)]
            fn wide_exact<W: Wide>(self) -> Self {
                W::for_f64(self as f64) as $t
            }
            #[inline(always)]
            fn in_wide_domain<W: Wide>(self) -> bool {
                real!(@domain $t, self, W)
            }
        }
    };
    (@wide f32, $x:expr, $w:ident) => {
        $w::for_f32($x as f64) as f32
    };
    (@wide f64, $x:expr, $w:ident) => {
        $w::for_f64($x)
    };
    (@domain f32, $x:expr, $w:ident) => {
        $w::LIMIT == f64::INFINITY || ($x as f64).abs() <= $w::LIMIT
    };
    (@domain f64, $x:expr, $w:ident) => {
        true
    };
}
real!(f32);
real!(f64);

/// `e^x` for `x` a float32 widened, in float64 arithmetic without a library call or a branch, so
/// a loop of it vectorizes. `x = k ln 2 + r` with `|r| <= ln 2 / 2` (Cody and Waite's two-part
/// `ln 2`, exact products for these `k`), `e^r` by its Taylor polynomial to degree 13 (truncation
/// below 2^-57), scaled by `2^k` built in the exponent bits. The relative error is a few float64
/// ulps, so rounding to float32 gives the correctly rounded value except when `e^x` lies within
/// about 2^-50 of a float32 rounding boundary (then at most 1 ulp off). Arguments beyond the
/// float32 range of the result are clamped first (the result still overflows or underflows when
/// rounded); NaN stays NaN.
#[inline(always)]
fn exp_wide(x: f64) -> f64 {
    // ln 2 = LN2_HI + LN2_LO, LN2_HI with 21 low zero bits (fdlibm's split).
    const LN2_HI: f64 = f64::from_bits(0x3fe6_2e42_fee0_0000);
    const LN2_LO: f64 = f64::from_bits(0x3dea_39ef_3579_3c76);
    let xc = x.clamp(-160.0, 100.0);
    let (k, kf) = nearest_int(xc * std::f64::consts::LOG2_E);
    let r = (xc - kf * LN2_HI) - kf * LN2_LO;
    select_nan(x, exp_reduced(r) * pow2(k))
}

/// `2^x` for `x` a float32 widened, as [`exp_wide`]: `x = k + f`, `2^f = e^(f ln 2)`.
#[inline(always)]
fn exp2_wide(x: f64) -> f64 {
    let xc = x.clamp(-160.0, 160.0);
    let (k, kf) = nearest_int(xc);
    select_nan(x, exp_reduced((xc - kf) * std::f64::consts::LN_2) * pow2(k))
}

/// `x` rounded to the nearest integer (ties to even), as an integer and a float, for `|x| <
/// 2^51`: adding 1.5 * 2^52 leaves the integer in the low bits.
#[inline(always)]
fn nearest_int(x: f64) -> (i64, f64) {
    const SHIFT: f64 = 6_755_399_441_055_744.0;
    let t = x + SHIFT;
    (t.to_bits() as i64 - SHIFT.to_bits() as i64, t - SHIFT)
}

/// `2^k` for `|k| < 1022`.
#[inline(always)]
fn pow2(k: i64) -> f64 {
    f64::from_bits(((k + 1023) as u64) << 52)
}

/// `1/n!` for `n` in `0..14`: the Taylor coefficients of `e^r`.
const C_EXP: [f64; 14] = [
    1.0,
    1.0,
    1.0 / 2.0,
    1.0 / 6.0,
    1.0 / 24.0,
    1.0 / 120.0,
    1.0 / 720.0,
    1.0 / 5_040.0,
    1.0 / 40_320.0,
    1.0 / 362_880.0,
    1.0 / 3_628_800.0,
    1.0 / 39_916_800.0,
    1.0 / 479_001_600.0,
    1.0 / 6_227_020_800.0,
];

/// `e^r` for `|r| <= ln 2 / 2`: Taylor's polynomial to degree 13 in Horner's form.
#[inline(always)]
fn exp_reduced(r: f64) -> f64 {
    let mut p = C_EXP[13];
    for &c in C_EXP[..13].iter().rev() {
        p = p * r + c;
    }
    p
}

/// `ln x` for `x` a float32 widened (so positive values are normal float64s), as [`exp_wide`]:
/// `x = m 2^e` with `m` in `[sqrt(1/2), sqrt(2))`, `ln m = 2 atanh(s)`, `s = (m-1)/(m+1)`, by its
/// series to `s^23` (truncation below 2^-60 for `|s| <= 0.1716`); the result is `e ln 2 + ln m`.
/// Zero gives -inf, a negative argument NaN, +inf and NaN themselves.
#[inline(always)]
fn ln_wide(x: f64) -> f64 {
    let (e, lm) = log_parts(x);
    log_special(x, e * std::f64::consts::LN_2 + lm)
}

/// `log2 x`, as [`ln_wide`]: `e + ln m / ln 2`, exact for powers of two.
#[inline(always)]
fn log2_wide(x: f64) -> f64 {
    let (e, lm) = log_parts(x);
    log_special(x, e + lm * std::f64::consts::LOG2_E)
}

/// `log10 x`, as [`ln_wide`].
#[inline(always)]
fn log10_wide(x: f64) -> f64 {
    let (e, lm) = log_parts(x);
    log_special(
        x,
        e * std::f64::consts::LOG10_2 + lm * std::f64::consts::LOG10_E,
    )
}

/// `(e, ln m)` with `x = m 2^e`, `m` in `[sqrt(1/2), sqrt(2))`, for a positive normal `x`
/// (garbage otherwise: [`log_special`] replaces it).
#[inline(always)]
fn log_parts(x: f64) -> (f64, f64) {
    const MANTISSA: u64 = (1 << 52) - 1;
    let bits = x.to_bits();
    // The exponent counted from sqrt(1/2): adding the bits of 2 - sqrt(2) moves mantissas at or
    // above sqrt(2) into the next binade.
    let shifted = bits.wrapping_add(0x0009_5f61_9980_c433);
    let e = ((shifted >> 52) as i64 - 1023) as f64;
    let m = f64::from_bits((shifted & MANTISSA).wrapping_add(0x3fe6_a09e_667f_3bcd));
    let s = (m - 1.0) / (m + 1.0);
    let s2 = s * s;
    let mut p = 1.0 / 23.0;
    for n in (0..11).rev() {
        p = p * s2 + 1.0 / (2 * n + 1) as f64;
    }
    (e, 2.0 * s * p)
}

/// The special values of a logarithm: -inf at ±0, NaN below 0 and at NaN (its payload kept),
/// +inf at +inf; else `y`.
#[inline(always)]
fn log_special(x: f64, y: f64) -> f64 {
    if x.is_nan() {
        x
    } else if x < 0.0 {
        f64::NAN
    } else if x == 0.0 {
        f64::NEG_INFINITY
    } else if x == f64::INFINITY {
        x
    } else {
        y
    }
}

/// `e^x - 1`, as [`exp_wide`]: below `ln 2 / 2` in magnitude the Taylor polynomial without its
/// constant term (no cancellation; the sign of zero kept), else `e^x - 1` (cancellation there
/// costs at most a factor 3.5 of a float64 ulp).
#[inline(always)]
fn expm1_wide(x: f64) -> f64 {
    let big = exp_wide(x) - 1.0;
    let mut p = C_EXP[13];
    for &c in C_EXP[2..13].iter().rev() {
        p = p * x + c;
    }
    let small = x * (p * x + 1.0);
    if x.abs() < std::f64::consts::LN_2 / 2.0 {
        small
    } else {
        big
    }
}

/// `ln(1 + x)`, as [`ln_wide`]: `u = 1 + x` is exact unless `|x|` is below about 2^-29, and
/// `ln(u) * x / (u - 1)` corrects the rounding when it is not (Goldberg's form); `u == 1` gives
/// `x` (the sign of zero kept), +inf itself.
#[inline(always)]
fn log1p_wide(x: f64) -> f64 {
    let u = 1.0 + x;
    let corrected = ln_wide(u) * (x / (u - 1.0));
    if u == 1.0 || x == f64::INFINITY {
        x
    } else {
        corrected
    }
}

/// `sinh x`, as [`exp_wide`]: from `e = e^|x| - 1`, `(e + e / (e + 1)) / 2` with `x`'s sign (no
/// cancellation at either end).
#[inline(always)]
fn sinh_wide(x: f64) -> f64 {
    let e = expm1_wide(x.abs());
    ((e + e / (e + 1.0)) * 0.5).copysign(x)
}

/// `cosh x`, as [`exp_wide`]: `(t + 1/t) / 2` with `t = e^|x|`.
#[inline(always)]
fn cosh_wide(x: f64) -> f64 {
    let t = exp_wide(x.abs());
    (t + 1.0 / t) * 0.5
}

/// `tanh x`, as [`exp_wide`]: `e / (e + 2)` with `e = e^(2|x|) - 1` and `x`'s sign; past 20 in
/// magnitude (where float32's tanh is ±1) the argument is clamped, so `e` stays finite (`clamp`
/// keeps a NaN, where `min` would not).
#[inline(always)]
fn tanh_wide(x: f64) -> f64 {
    let e = expm1_wide(2.0 * x.abs().clamp(0.0, 20.0));
    (e / (e + 2.0)).copysign(x)
}

/// The largest argument [`reduce_pio2`] holds for: its first three products stay exact while
/// `k < 2^20`.
const PIO2_LIMIT: f64 = 1e6;

/// `(k mod 4, r)` with `x = k pi/2 + r`, `|r| <= pi/4` (and a rounding), for `|x| <=`
/// [`PIO2_LIMIT`]: Cody and Waite's reduction with `pi/2` in four parts (fdlibm's; the first
/// three of 33 bits, so `k` times each is exact), `r` within a few float64 ulps of its value.
#[inline(always)]
fn reduce_pio2(x: f64) -> (i64, f64) {
    const P1: f64 = f64::from_bits(0x3ff9_21fb_5440_0000);
    const P2: f64 = f64::from_bits(0x3dd0_b461_1a60_0000);
    const P3: f64 = f64::from_bits(0x3ba3_198a_2e00_0000);
    const P3T: f64 = f64::from_bits(0x397b_839a_2520_49c1);
    let (k, kf) = nearest_int(x * std::f64::consts::FRAC_2_PI);
    (k & 3, (((x - kf * P1) - kf * P2) - kf * P3) - kf * P3T)
}

/// `(sin r, cos r)` for `|r| <= pi/4`: Taylor's polynomials to degree 17 and 18 (truncation
/// below 2^-62).
#[inline(always)]
fn sin_cos_reduced(r: f64) -> (f64, f64) {
    const S: [f64; 9] = [
        1.0,
        -1.0 / 6.0,
        1.0 / 120.0,
        -1.0 / 5_040.0,
        1.0 / 362_880.0,
        -1.0 / 39_916_800.0,
        1.0 / 6_227_020_800.0,
        -1.0 / 1_307_674_368_000.0,
        1.0 / 355_687_428_096_000.0,
    ];
    const C: [f64; 10] = [
        1.0,
        -1.0 / 2.0,
        1.0 / 24.0,
        -1.0 / 720.0,
        1.0 / 40_320.0,
        -1.0 / 3_628_800.0,
        1.0 / 479_001_600.0,
        -1.0 / 87_178_291_200.0,
        1.0 / 20_922_789_888_000.0,
        -1.0 / 6_402_373_705_728_000.0,
    ];
    let r2 = r * r;
    let (mut s, mut c) = (S[8], C[9]);
    for &k in S[..8].iter().rev() {
        s = s * r2 + k;
    }
    for &k in C[..9].iter().rev() {
        c = c * r2 + k;
    }
    (r * s, c)
}

/// `sin x` for `|x| <=` [`PIO2_LIMIT`], as [`exp_wide`] (the kernel sends larger arguments,
/// infinities and NaN to libm): by the quadrant, `sin r`, `cos r`, `-sin r` or `-cos r`.
#[inline(always)]
fn sin_wide(x: f64) -> f64 {
    let (q, r) = reduce_pio2(x);
    let (s, c) = sin_cos_reduced(r);
    let v = if q & 1 == 0 { s } else { c };
    if q & 2 == 0 {
        v
    } else {
        -v
    }
}

/// `cos x`, as [`sin_wide`]: `cos r`, `-sin r`, `-cos r` or `sin r`.
#[inline(always)]
fn cos_wide(x: f64) -> f64 {
    let (q, r) = reduce_pio2(x);
    let (s, c) = sin_cos_reduced(r);
    let v = if q & 1 == 0 { c } else { s };
    if (q + 1) & 2 == 0 {
        v
    } else {
        -v
    }
}

/// `tan x`, as [`sin_wide`]: `sin r / cos r`, or `-cos r / sin r` in the odd quadrants.
#[inline(always)]
fn tan_wide(x: f64) -> f64 {
    let (q, r) = reduce_pio2(x);
    let (s, c) = sin_cos_reduced(r);
    if q & 1 == 0 {
        s / c
    } else {
        -c / s
    }
}

/// `x` itself when it is NaN (keeping its payload, as the library call did), else `y`.
#[inline(always)]
fn select_nan(x: f64, y: f64) -> f64 {
    if x.is_nan() {
        x
    } else {
        y
    }
}

/// What an operation writes for inputs of element type `T`.
pub trait UnaryFn: 'static {
    /// The computation type itself, or [`Bool8`] (the predicates).
    type Out<T: Elem>: Elem;
    /// Whether vector instructions compute it (then its kernel has an AVX2 clone): not for the
    /// functions evaluated through a float64 library call.
    const VECTOR: bool;
}

/// The operation on integers.
pub trait IntFn: UnaryFn {
    fn int<I: Int>(x: I) -> Self::Out<I>;
}

/// The operation on float32 and float64.
pub trait RealFn: UnaryFn {
    fn real<F: Real>(x: F) -> Self::Out<F>;
    /// [`RealFn::real`] without the branch to its exact form, for arguments in
    /// [`RealFn::fast_domain`] (see [`ElemFn::CHECKED`]).
    #[inline(always)]
    fn real_fast<F: Real>(x: F) -> Self::Out<F> {
        Self::real(x)
    }
    #[inline(always)]
    fn fast_domain<F: Real>(_x: F) -> bool {
        true
    }
    const CHECKED: bool = false;
}

/// The operation on bools.
pub trait BoolFn: UnaryFn {
    fn bool(x: Bool8) -> Self::Out<Bool8>;
}

/// A scalar function on elements of one type: what the kernel is instantiated with.
pub trait ElemFn<T: Elem>: 'static {
    type Out: Elem;
    fn call(x: T) -> Self::Out;
    /// See [`UnaryFn::VECTOR`].
    const VECTOR: bool;
    /// Whether [`ElemFn::call`] branches between a vectorizing form, for arguments in
    /// [`ElemFn::fast_domain`], and an exact one for the rest (`sin` of a large argument): then a
    /// contiguous loop checks a block first and runs [`ElemFn::call_fast`] on it when it can.
    const CHECKED: bool = false;
    #[inline(always)]
    fn call_fast(x: T) -> Self::Out {
        Self::call(x)
    }
    #[inline(always)]
    fn fast_domain(_x: T) -> bool {
        true
    }
}

/// `K` on integers, as an [`ElemFn`].
pub struct OnInt<K>(PhantomData<K>);
/// `K` on float32 and float64, as an [`ElemFn`].
pub struct OnReal<K>(PhantomData<K>);
/// `K` on float16 or bfloat16: computed in float32, rounded once.
pub struct OnHalf<K>(PhantomData<K>);
/// `K` on bools, as an [`ElemFn`].
pub struct OnBool<K>(PhantomData<K>);

impl<K: IntFn, I: Int> ElemFn<I> for OnInt<K> {
    type Out = K::Out<I>;
    #[inline(always)]
    fn call(x: I) -> K::Out<I> {
        K::int(x)
    }
    const VECTOR: bool = K::VECTOR;
}

impl<K: RealFn, F: Real> ElemFn<F> for OnReal<K> {
    type Out = K::Out<F>;
    #[inline(always)]
    fn call(x: F) -> K::Out<F> {
        K::real(x)
    }
    const VECTOR: bool = K::VECTOR;
    const CHECKED: bool = K::CHECKED;
    #[inline(always)]
    fn call_fast(x: F) -> K::Out<F> {
        K::real_fast(x)
    }
    #[inline(always)]
    fn fast_domain(x: F) -> bool {
        K::fast_domain(x)
    }
}

impl<K: RealFn, H: Float> ElemFn<H> for OnHalf<K> {
    type Out = K::Out<H>;
    #[inline(always)]
    fn call(x: H) -> K::Out<H> {
        // The float32 result, rounded once to `H` (or the same bool).
        real_f32::<K>(x.to_f64() as f32).cast()
    }
    // Converting each 16-bit element gains nothing from the clones.
    const VECTOR: bool = false;
}

/// `K` on a float32, one copy shared by float16's and bfloat16's loops (they convert each element
/// and do not vectorize, so inlining it into every loop only adds size).
#[inline(never)]
fn real_f32<K: RealFn>(x: f32) -> K::Out<f32> {
    K::real(x)
}

impl<K: BoolFn> ElemFn<Bool8> for OnBool<K> {
    type Out = K::Out<Bool8>;
    #[inline(always)]
    fn call(x: Bool8) -> K::Out<Bool8> {
        K::bool(x)
    }
    const VECTOR: bool = K::VECTOR;
}

/// Something to do with an operation's scalar function for one element type (see
/// [`UnaryOp::visit`]).
pub trait Visit {
    type Output;
    fn visit<T: Elem, F: ElemFn<T>>(self) -> Self::Output;
}

/// How the type an operation computes in follows from its input's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compute {
    /// The input's type.
    Same,
    /// Floating types as they are; integers and bool in float32.
    Floating,
    /// The input's type; bool in int64 (`square`, which PyTorch computes as `pow(x, 2)`).
    BoolToLong,
}

/// Which `out` types a call into `out` accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutRule {
    /// Any type the result type can be cast to.
    Cast,
    /// Exactly the result type (`Found dtype Double but expected Float`).
    Exact,
    /// Bool only (`signbit does not support non-boolean outputs.`).
    Bool,
}

/// An operation's type rules (the rest of its row in the table).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    pub compute: Compute,
    /// The result is bool (whatever the computation type), else the computation type.
    pub bool_result: bool,
    pub out: OutRule,
    /// PyTorch has an in-place form (`x.<name>_()`).
    pub inplace: bool,
    /// PyTorch's kernel name, as its refusal of a computation type names it.
    pub kernel_name: &'static str,
    on_int: bool,
    on_float: bool,
    on_bool: bool,
}

impl Rule {
    /// Whether the operation has a kernel for this computation type.
    pub fn accepts(&self, dtype: DType) -> bool {
        match dtype.category() {
            Category::Bool => self.on_bool,
            Category::Integer => self.on_int,
            Category::Floating => self.on_float,
        }
    }

    /// The type the operation computes in for an input of type `input`.
    pub fn compute_type(&self, input: DType) -> DType {
        match (self.compute, input.category()) {
            (Compute::Floating, Category::Bool | Category::Integer) => DType::F32,
            (Compute::BoolToLong, Category::Bool) => DType::I64,
            _ => input,
        }
    }

    /// The result type for an input of type `input`.
    pub fn result_type(&self, input: DType) -> DType {
        match self.bool_result {
            true => DType::Bool,
            false => self.compute_type(input),
        }
    }
}

/// One scalar function: `Name -> Same|Bool { int<I>(x) => .., real<F>(x) => .., bool(x) =>
/// .. }`, each kind of element optional; `Name -> Same [calls] {` for a function made of library
/// calls (no vector instructions compute it).
macro_rules! scalar_fn {
    ($(#[$m:meta])* $name:ident -> $out:ident $([$calls:ident])? {
        $(int<$I:ident>($ix:ident) => $int:expr,)?
        $(real<$F:ident>($fx:ident) => $real:expr,)?
        $(bool($bx:ident) => $bool:expr,)?
    }) => {
        $(#[$m])*
        pub struct $name;
        impl UnaryFn for $name {
            type Out<T: Elem> = out_type!($out, T);
            const VECTOR: bool = vector!($($calls)?);
        }
        $(impl IntFn for $name {
            #[inline(always)]
            fn int<$I: Int>($ix: $I) -> out_type!($out, $I) {
                $int
            }
        })?
        $(impl RealFn for $name {
            #[inline(always)]
            fn real<$F: Real>($fx: $F) -> out_type!($out, $F) {
                $real
            }
        })?
        $(impl BoolFn for $name {
            #[inline(always)]
            fn bool($bx: Bool8) -> out_type!($out, Bool8) {
                $bool
            }
        })?
    };
}

macro_rules! vector {
    () => {
        true
    };
    (calls) => {
        false
    };
}

macro_rules! compute {
    (same) => {
        Compute::Same
    };
    (floating) => {
        Compute::Floating
    };
    (bool_to_long) => {
        Compute::BoolToLong
    };
}

macro_rules! out_rule {
    (cast) => {
        OutRule::Cast
    };
    (exact) => {
        OutRule::Exact
    };
    (bool) => {
        OutRule::Bool
    };
}

macro_rules! inplace {
    (inplace) => {
        true
    };
    (no_inplace) => {
        false
    };
}

/// The table: `Variant "name" ScalarFn [kinds with a kernel] compute out-rule in-place
/// "kernel name";` (see [`Rule`]). Codes are positions, from 0 (the C API's `BC_UNARY_*`).
macro_rules! unary_ops {
    ($($(#[$m:meta])* $var:ident $name:literal $K:ident [$($kind:ident)+] $compute:ident
        $out:ident $inplace:ident $jfn:tt $kname:literal;)+) => {
        /// The elementwise unary operations, by their C code (`BC_UNARY_*`).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum UnaryOp {
            $($(#[$m])* $var,)+
        }

        impl UnaryOp {
            /// Every operation, in code order.
            pub const ALL: &'static [UnaryOp] = &[$(UnaryOp::$var),+];

            /// PyTorch's name of the operation (`"abs"`, `"sqrt"`, ...).
            pub fn name(self) -> &'static str {
                match self {
                    $(UnaryOp::$var => $name,)+
                }
            }

            pub fn rule(self) -> &'static Rule {
                const RULES: &[Rule] = &[$(Rule {
                    compute: compute!($compute),
                    bool_result: <<$K as UnaryFn>::Out<u8> as Elem>::DTYPE as u8
                        == DType::Bool as u8,
                    out: out_rule!($out),
                    inplace: inplace!($inplace),
                    kernel_name: $kname,
                    on_int: has_kind!(int [$($kind)+]),
                    on_float: has_kind!(float [$($kind)+]),
                    on_bool: has_kind!(bool [$($kind)+]),
                }),+];
                &RULES[self as usize]
            }

            /// Calls `v.visit::<T, F>()` with `T` the element type of `dtype` and `F` this
            /// operation's scalar function on it; `None` when the operation has no kernel for
            /// `dtype` (see [`Rule::accepts`]).
            pub fn visit<V: Visit>(self, dtype: DType, v: V) -> Option<V::Output> {
                match self {
                    $(UnaryOp::$var => {
                        match dtype {
                            DType::Bool => if_kind!(bool [$($kind)+] v.visit::<Bool8, OnBool<$K>>()),
                            DType::U8 => if_kind!(int [$($kind)+] v.visit::<u8, OnInt<$K>>()),
                            DType::I8 => if_kind!(int [$($kind)+] v.visit::<i8, OnInt<$K>>()),
                            DType::I16 => if_kind!(int [$($kind)+] v.visit::<i16, OnInt<$K>>()),
                            DType::I32 => if_kind!(int [$($kind)+] v.visit::<i32, OnInt<$K>>()),
                            DType::I64 => if_kind!(int [$($kind)+] v.visit::<i64, OnInt<$K>>()),
                            DType::F16 => if_kind!(float [$($kind)+] v.visit::<half::f16, OnHalf<$K>>()),
                            DType::BF16 => if_kind!(float [$($kind)+] v.visit::<half::bf16, OnHalf<$K>>()),
                            DType::F32 => if_kind!(float [$($kind)+] v.visit::<f32, OnReal<$K>>()),
                            DType::F64 => if_kind!(float [$($kind)+] v.visit::<f64, OnReal<$K>>()),
                        }
                    })+
                }
            }
        }
    };
}

unary_ops! {
    // One row per operation, in `BC_UNARY_*` code order; a row's doc comment is its `BC_UNARY_*`
    // constant's documentation (scripts/gen_ops.py writes the C API's codes and named exports
    // from this table). `floating`: integers and bool compute in float32. `out`: which types
    // a call into `out` accepts (see [`OutRule`]). `Julia`: the Base function whose broadcast on a
    // Tensor the operation is in the Julia package (`_` for none).
    // variant    name          scalar fn   kernels for       computes in   out    in place Julia    PyTorch kernel
    /// `abs(x)`: the magnitude (integers wrap: the minimum stays the minimum; not bool).
    Abs          "abs"          Abs         [int float]       same          exact  inplace  abs       "abs_cpu";
    /// `neg(x)`, `-x` (integers wrap; not bool).
    Neg          "neg"          Neg         [int float]       same          exact  inplace  -         "neg_cpu";
    /// `sign(x)`: -1, 0 or 1 in the input's type (0 for NaN; bools as they are).
    Sign         "sign"         Sign        [int float bool]  same          exact  inplace  sign      "sign_cpu";
    /// `reciprocal(x)`, `1 / x`.
    Reciprocal   "reciprocal"   Reciprocal  [float]           floating      cast   inplace  inv       "reciprocal_cpu";
    /// `sqrt(x)`, the square root.
    Sqrt         "sqrt"         Sqrt        [float]           floating      cast   inplace  sqrt      "sqrt_cpu";
    /// `rsqrt(x)`, `1 / sqrt(x)`.
    Rsqrt        "rsqrt"        Rsqrt       [float]           floating      cast   inplace  _         "rsqrt_cpu";
    /// `square(x)`, `x * x` (integers wrap; bool gives int64).
    Square       "square"       Square      [int float]       bool_to_long  cast   inplace  _         "square_cpu";
    /// `exp(x)`, e to the power `x`.
    Exp          "exp"          Exp         [float]           floating      cast   inplace  exp       "exp_cpu";
    /// `exp2(x)`, 2 to the power `x`.
    Exp2         "exp2"         Exp2        [float]           floating      cast   inplace  exp2      "exp2_cpu";
    /// `expm1(x)`, `exp(x) - 1` without cancellation near 0.
    Expm1        "expm1"        Expm1       [float]           floating      cast   inplace  expm1     "expm1_cpu";
    /// `log(x)`, the natural logarithm.
    Log          "log"          Log         [float]           floating      cast   inplace  log       "log_cpu";
    /// `log2(x)`, the base-2 logarithm.
    Log2         "log2"         Log2        [float]           floating      cast   inplace  log2      "log2_cpu";
    /// `log10(x)`, the base-10 logarithm.
    Log10        "log10"        Log10       [float]           floating      cast   inplace  log10     "log10_cpu";
    /// `log1p(x)`, `log(1 + x)` without cancellation near 0.
    Log1p        "log1p"        Log1p       [float]           floating      cast   inplace  log1p     "log1p_cpu";
    /// `sin(x)`.
    Sin          "sin"          Sin         [float]           floating      cast   inplace  sin       "sin_cpu";
    /// `cos(x)`.
    Cos          "cos"          Cos         [float]           floating      cast   inplace  cos       "cos_cpu";
    /// `tan(x)`.
    Tan          "tan"          Tan         [float]           floating      cast   inplace  tan       "tan_cpu";
    /// `asin(x)`, the arcsine.
    Asin         "asin"         Asin        [float]           floating      cast   inplace  asin      "asin_cpu";
    /// `acos(x)`, the arccosine.
    Acos         "acos"         Acos        [float]           floating      cast   inplace  acos      "acos_cpu";
    /// `atan(x)`, the arctangent.
    Atan         "atan"         Atan        [float]           floating      cast   inplace  atan      "atan_cpu";
    /// `sinh(x)`.
    Sinh         "sinh"         Sinh        [float]           floating      cast   inplace  sinh      "sinh_cpu";
    /// `cosh(x)`.
    Cosh         "cosh"         Cosh        [float]           floating      cast   inplace  cosh      "cosh_cpu";
    /// `tanh(x)`.
    Tanh         "tanh"         Tanh        [float]           floating      cast   inplace  tanh      "tanh_cpu";
    /// `asinh(x)`.
    Asinh        "asinh"        Asinh       [float]           floating      cast   inplace  asinh     "asinh_cpu";
    /// `acosh(x)`.
    Acosh        "acosh"        Acosh       [float]           floating      cast   inplace  acosh     "acosh_cpu";
    /// `atanh(x)`.
    Atanh        "atanh"        Atanh       [float]           floating      cast   inplace  atanh     "atanh_cpu";
    /// `sigmoid(x)`, `1 / (1 + exp(-x))`.
    Sigmoid      "sigmoid"      Sigmoid     [float]           floating      cast   inplace  _         "sigmoid_cpu";
    /// `erf(x)`, the error function.
    Erf          "erf"          Erf         [float]           floating      cast   inplace  _         "erf_cpu";
    /// `erfc(x)`, `1 - erf(x)` without cancellation.
    Erfc         "erfc"         Erfc        [float]           floating      cast   inplace  _         "erfc_cpu";
    /// `floor(x)`, rounded down (integers as they are; not bool).
    Floor        "floor"        Floor       [int float]       same          exact  inplace  floor     "floor_vml_cpu";
    /// `ceil(x)`, rounded up (integers as they are; not bool).
    Ceil         "ceil"         Ceil        [int float]       same          exact  inplace  ceil      "ceil_vml_cpu";
    /// `round(x)`, to the nearest integer, halves to even (integers as they are; not bool).
    Round        "round"        Round       [int float]       same          exact  inplace  round     "round_vml_cpu";
    /// `trunc(x)`, rounded toward zero (integers as they are; not bool).
    Trunc        "trunc"        Trunc       [int float]       same          exact  inplace  trunc     "trunc_vml_cpu";
    /// `frac(x)`, `x - trunc(x)` (floating types only).
    Frac         "frac"         Frac        [float]           same          exact  inplace  _         "frac_cpu";
    /// `isnan(x)` (bool result).
    Isnan        "isnan"        Isnan       [int float bool]  same          bool   no_inplace  isnan     "isnan_cpu";
    /// `isinf(x)` (bool result).
    Isinf        "isinf"        Isinf       [int float bool]  same          bool   no_inplace  isinf     "isinf_cpu";
    /// `isfinite(x)` (bool result).
    Isfinite     "isfinite"     Isfinite    [int float bool]  same          bool   no_inplace  isfinite  "isfinite_cpu";
    /// `signbit(x)`: whether the sign bit is set, `-0.0` and negative NaN included (bool result).
    Signbit      "signbit"      Signbit     [int float bool]  same          bool   no_inplace  signbit   "signbit_cpu";
    /// `logical_not(x)`: whether `x` is zero (bool result; NaN is not zero).
    LogicalNot   "logical_not"  LogicalNot  [int float bool]  same          cast   inplace  !         "logical_not_cpu";
    /// `bitwise_not(x)`, `~x`, integers and bool only.
    BitwiseNot   "bitwise_not"  BitwiseNot  [int bool]        same          exact  inplace  ~         "bitwise_not_cpu";
}

scalar_fn! {
    /// The magnitude; integers wrap.
    Abs -> Same {
        int<I>(x) => if x < I::ZERO { I::ZERO.wrapping_sub(x) } else { x },
        real<F>(x) => x.abs(),
    }
}

scalar_fn! {
    /// `-x`; integers wrap.
    Neg -> Same {
        int<I>(x) => I::ZERO.wrapping_sub(x),
        real<F>(x) => x.neg(),
    }
}

scalar_fn! {
    /// -1, 0 or 1; NaN and both zeros give +0.
    Sign -> Same {
        int<I>(x) => if x > I::ZERO {
            I::ONE
        } else if x < I::ZERO {
            I::ZERO.wrapping_sub(I::ONE)
        } else {
            I::ZERO
        },
        real<F>(x) => if x > F::ZERO {
            F::ONE
        } else if x < F::ZERO {
            F::ONE.neg()
        } else {
            F::ZERO
        },
        bool(x) => x,
    }
}

scalar_fn! {
    Reciprocal -> Same {
        real<F>(x) => F::ONE.div(x),
    }
}

scalar_fn! {
    Sqrt -> Same {
        real<F>(x) => x.sqrt(),
    }
}

scalar_fn! {
    Rsqrt -> Same {
        real<F>(x) => F::ONE.div(x.sqrt()),
    }
}

scalar_fn! {
    /// `x * x`; integers wrap.
    Square -> Same {
        int<I>(x) => x.wrapping_mul(x),
        real<F>(x) => x.mul(x),
    }
}

/// A function evaluated through its float64 form (see [`Real::via_f64`]).
macro_rules! via_f64 {
    ($($(#[$m:meta])* $name:ident => $f:expr;)+) => {
        $(scalar_fn! {
            $(#[$m])*
            $name -> Same [calls] {
                real<F>(x) => x.via_f64($f),
            }
        })+
    };
}

/// Functions with a vectorizing float32 form (see [`Wide`]): `Name => float32 form, libm's;`.
/// `W` at `x` through its vectorizing form where it holds, else through libm: the element-by-element
/// form of a function with a limit, one copy shared by the loops that call it.
#[inline(never)]
fn wide_checked<W: Wide, F: Real>(x: F) -> F {
    if x.in_wide_domain::<W>() {
        x.wide::<W>()
    } else {
        x.wide_exact::<W>()
    }
}

/// A limit after the forms (`Sin => sin_wide, f64::sin, 1e6;`) bounds the float32 form's
/// arguments; the others go to libm, and the kernel checks a block's arguments first.
macro_rules! wide {
    ($($(#[$m:meta])* $name:ident => $f32:ident, $f64:path $(, $limit:expr)?;)+) => {
        $($(#[$m])*
        pub struct $name;
        impl UnaryFn for $name {
            type Out<T: Elem> = T;
            const VECTOR: bool = true;
        }
        impl RealFn for $name {
            #[inline(always)]
            fn real<F: Real>(x: F) -> F {
                match <Self as Wide>::LIMIT == f64::INFINITY {
                    true => x.wide::<Self>(),
                    false => wide_checked::<Self, F>(x),
                }
            }
            #[inline(always)]
            fn real_fast<F: Real>(x: F) -> F {
                x.wide::<Self>()
            }
            #[inline(always)]
            fn fast_domain<F: Real>(x: F) -> bool {
                x.in_wide_domain::<Self>()
            }
            const CHECKED: bool = <Self as Wide>::LIMIT != f64::INFINITY;
        }
        impl Wide for $name {
            #[inline(always)]
            fn for_f32(x: f64) -> f64 {
                $f32(x)
            }
            #[inline(always)]
            fn for_f64(x: f64) -> f64 {
                $f64(x)
            }
            const LIMIT: f64 = wide!(@limit $($limit)?);
        })+
    };
    (@limit) => { f64::INFINITY };
    (@limit $limit:expr) => { $limit };
}

wide! {
    Exp => exp_wide, f64::exp;
    Exp2 => exp2_wide, f64::exp2;
    Expm1 => expm1_wide, f64::exp_m1;
    Log => ln_wide, f64::ln;
    Log2 => log2_wide, f64::log2;
    Log10 => log10_wide, f64::log10;
    Log1p => log1p_wide, f64::ln_1p;
    Sinh => sinh_wide, f64::sinh;
    Cosh => cosh_wide, f64::cosh;
    Tanh => tanh_wide, f64::tanh;
    Sin => sin_wide, f64::sin, PIO2_LIMIT;
    Cos => cos_wide, f64::cos, PIO2_LIMIT;
    Tan => tan_wide, f64::tan, PIO2_LIMIT;
}

via_f64! {
    Asin => f64::asin;
    Acos => f64::acos;
    Atan => f64::atan;
    Asinh => libm::asinh;
    Acosh => acosh;
    Atanh => libm::atanh;
    Erf => libm::erf;
    Erfc => libm::erfc;
}

/// `acosh`, NaN below 1: libm's (musl's) formula leaves some arguments at or below -2 with a
/// finite value (`log` of a difference that rounds positive) instead of the domain error.
fn acosh(x: f64) -> f64 {
    if x < 1.0 {
        f64::NAN
    } else {
        libm::acosh(x)
    }
}

scalar_fn! {
    /// `1 / (1 + exp(-x))` in the computation type: 0 once `exp(-x)` overflows, as PyTorch.
    Sigmoid -> Same {
        real<F>(x) => F::ONE.div(F::ONE.add(x.neg().wide::<Exp>())),
    }
}

scalar_fn! {
    Floor -> Same {
        int<I>(x) => x,
        real<F>(x) => x.floor(),
    }
}

scalar_fn! {
    Ceil -> Same {
        int<I>(x) => x,
        real<F>(x) => x.ceil(),
    }
}

scalar_fn! {
    Round -> Same {
        int<I>(x) => x,
        real<F>(x) => x.round_even(),
    }
}

scalar_fn! {
    Trunc -> Same {
        int<I>(x) => x,
        real<F>(x) => x.trunc(),
    }
}

scalar_fn! {
    Frac -> Same {
        real<F>(x) => x.sub(x.trunc()),
    }
}

scalar_fn! {
    Isnan -> Bool {
        int<I>(_x) => Bool8::of(false),
        real<F>(x) => Bool8::of(x.is_nan()),
        bool(_x) => Bool8::of(false),
    }
}

scalar_fn! {
    Isinf -> Bool {
        int<I>(_x) => Bool8::of(false),
        real<F>(x) => Bool8::of(x.is_infinite()),
        bool(_x) => Bool8::of(false),
    }
}

scalar_fn! {
    Isfinite -> Bool {
        int<I>(_x) => Bool8::of(true),
        real<F>(x) => Bool8::of(!x.is_nan() && !x.is_infinite()),
        bool(_x) => Bool8::of(true),
    }
}

scalar_fn! {
    Signbit -> Bool {
        int<I>(x) => Bool8::of(x < I::ZERO),
        real<F>(x) => Bool8::of(x.is_sign_negative()),
        bool(_x) => Bool8::of(false),
    }
}

scalar_fn! {
    LogicalNot -> Bool {
        int<I>(x) => Bool8::of(!x.is_true()),
        real<F>(x) => Bool8::of(!x.is_true()),
        bool(x) => Bool8::of(!x.get()),
    }
}

scalar_fn! {
    /// Every bit flipped.
    BitwiseNot -> Same {
        int<I>(x) => x ^ I::ZERO.wrapping_sub(I::ONE),
        bool(x) => Bool8::of(!x.get()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// float32 `exp`, `exp2` (and so `sigmoid`), `log`, `log2`, `log10` through their `_wide`
    /// forms against float64 libm
    /// rounded once (the correctly rounded value, but for double rounding): over every float32
    /// bit pattern at a stride (every one with BC_EXHAUSTIVE=1, in a release build), at most
    /// 1 ulp apart and equal on nearly all; equal on every value a float16 or bfloat16 holds.
    #[test]
    fn wide_functions_are_libm_rounded() {
        let step = match std::env::var("BC_EXHAUSTIVE").as_deref() {
            Ok("1") => 1,
            _ => 4093,
        };
        let ulps = |a: f32, b: f32| (a.to_bits() as i64 - b.to_bits() as i64).unsigned_abs();
        type F32 = fn(f32) -> f32;
        type F64 = fn(f64) -> f64;
        let functions: [(&str, F32, F64); 13] = [
            ("exp", Exp::real::<f32>, f64::exp),
            ("exp2", Exp2::real::<f32>, f64::exp2),
            ("expm1", Expm1::real::<f32>, f64::exp_m1),
            ("log", Log::real::<f32>, f64::ln),
            ("log2", Log2::real::<f32>, f64::log2),
            ("log10", Log10::real::<f32>, f64::log10),
            ("log1p", Log1p::real::<f32>, f64::ln_1p),
            ("sinh", Sinh::real::<f32>, f64::sinh),
            ("cosh", Cosh::real::<f32>, f64::cosh),
            ("tanh", Tanh::real::<f32>, f64::tanh),
            ("sin", Sin::real::<f32>, f64::sin),
            ("cos", Cos::real::<f32>, f64::cos),
            ("tan", Tan::real::<f32>, f64::tan),
        ];
        for (name, wide, libm) in functions {
            let (mut seen, mut differ) = (0u64, 0u64);
            for bits in (0..=u32::MAX).step_by(step) {
                let x = f32::from_bits(bits);
                let (got, want) = (wide(x), libm(x as f64) as f32);
                seen += 1;
                if got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()) {
                    continue;
                }
                differ += 1;
                assert!(
                    ulps(got, want) <= 1,
                    "{name}({x:e}) = {got:e}, libm {want:e}"
                );
            }
            // A few float64 ulps of error meet a float32 rounding boundary about once in 2^20.
            assert!(
                differ * (1 << 20) <= seen,
                "{name}: {differ} of {seen} differ"
            );
            for h in 0..=u16::MAX {
                for x in [
                    half::f16::from_bits(h).to_f32(),
                    half::bf16::from_bits(h).to_f32(),
                ] {
                    let (got, want) = (wide(x), libm(x as f64) as f32);
                    assert!(
                        got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                        "{name}({x:e}) = {got:e}, libm {want:e}"
                    );
                }
            }
            eprintln!("{name}: {differ} of {seen} float32 values differ from libm by 1 ulp");
        }
    }

    /// Every argument below 1 is outside acosh's domain; libm's formula alone gives some of them
    /// (int16 values at or below -2, as the C-API fuzzer found) a finite value.
    #[test]
    fn acosh_is_nan_below_one() {
        let below = (i16::MIN..1)
            .map(f64::from)
            .chain([0.5, 0.999, -0.5, -1.5, -1e300]);
        for x in below {
            assert!(acosh(x).is_nan(), "acosh({x}) = {}", acosh(x));
        }
        assert_eq!(acosh(1.0), 0.0);
        assert!((acosh(2.0) - 1.3169578969248166).abs() < 1e-15);
    }
}
