//! Element types as Rust types: conversions (C-style casts, as PyTorch does them), and the
//! arithmetic that the operations' scalar functions (see [`super::binary_ops`]) are written with,
//! per kind of element: [`Int`] for the five integer types, [`Float`] for the four floating ones,
//! and [`Bool8`] for bool.
use super::dtype::DType;
use half::{bf16, f16};
use std::ops::{BitAnd, BitOr, BitXor};

/// A bool element: one byte, 0 or 1 when written by the library. Any non-zero byte reads as true,
/// so caller memory with other values is still sound to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[repr(transparent)]
pub struct Bool8(pub u8);

impl Bool8 {
    #[inline(always)]
    pub fn get(self) -> bool {
        self.0 != 0
    }
    #[inline(always)]
    pub fn of(b: bool) -> Bool8 {
        Bool8(b as u8)
    }
}

pub trait Elem: Copy + Send + Sync + 'static {
    const DTYPE: DType;
    fn to_f64(self) -> f64;
    /// Integral value (truncated for floats); only used when `Self` is bool or an integer.
    fn to_i64(self) -> i64;
    fn from_f64(v: f64) -> Self;
    fn from_i64(v: i64) -> Self;
    /// C++'s conversion to bool: any non-zero value, NaN included, is true.
    fn is_true(self) -> bool;

    /// Converts like a C cast (PyTorch's `static_cast`): floats go through the float path,
    /// bools and integers through the integer path, so no precision is lost on the way.
    #[inline(always)]
    fn cast<D: Elem>(self) -> D {
        if Self::DTYPE.is_floating() {
            D::from_f64(self.to_f64())
        } else {
            D::from_i64(self.to_i64())
        }
    }
}

impl Elem for Bool8 {
    const DTYPE: DType = DType::Bool;
    fn to_f64(self) -> f64 {
        self.get() as u8 as f64
    }
    fn to_i64(self) -> i64 {
        self.get() as i64
    }
    fn from_f64(v: f64) -> Self {
        Bool8((v != 0.0) as u8)
    }
    fn from_i64(v: i64) -> Self {
        Bool8((v != 0) as u8)
    }
    #[inline(always)]
    fn is_true(self) -> bool {
        self.get()
    }
}

/// The integer element types, with C++'s integer semantics as PyTorch's CPU kernels have them:
/// arithmetic wraps (C++ promotes narrow types to `int` and truncates the result back).
pub trait Int:
    Elem + Ord + BitAnd<Output = Self> + BitOr<Output = Self> + BitXor<Output = Self>
{
    const ZERO: Self;
    const ONE: Self;
    const BITS: u32;
    const SIGNED: bool;
    fn wrapping_add(self, o: Self) -> Self;
    fn wrapping_sub(self, o: Self) -> Self;
    fn wrapping_mul(self, o: Self) -> Self;
    /// Truncating division; `MIN / -1` wraps to `MIN`. Total: `x / 0` is 0 (operations that
    /// divide refuse zero divisors before any kernel runs).
    fn wrapping_div(self, o: Self) -> Self;
    /// The remainder of [`Int::wrapping_div`] (sign of `self`); `MIN % -1` is 0, `x % 0` is 0.
    fn wrapping_rem(self, o: Self) -> Self;
    /// `self << n` on the bit pattern, for `n < BITS`.
    fn shl(self, n: u32) -> Self;
    /// `self >> n`, arithmetic for signed types, for `n < BITS`.
    fn shr(self, n: u32) -> Self;
}

macro_rules! int_elem {
    ($t:ty, $dt:expr, $signed:expr) => {
        impl Elem for $t {
            const DTYPE: DType = $dt;
            fn to_f64(self) -> f64 {
                self as f64
            }
            fn to_i64(self) -> i64 {
                self as i64
            }
            fn from_f64(v: f64) -> Self {
                v as i64 as $t
            }
            fn from_i64(v: i64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn is_true(self) -> bool {
                self != 0
            }
        }
        impl Int for $t {
            const ZERO: Self = 0;
            const ONE: Self = 1;
            const BITS: u32 = <$t>::BITS;
            const SIGNED: bool = $signed;
            #[inline(always)]
            fn wrapping_add(self, o: Self) -> Self {
                <$t>::wrapping_add(self, o)
            }
            #[inline(always)]
            fn wrapping_sub(self, o: Self) -> Self {
                <$t>::wrapping_sub(self, o)
            }
            #[inline(always)]
            fn wrapping_mul(self, o: Self) -> Self {
                <$t>::wrapping_mul(self, o)
            }
            #[inline(always)]
            fn wrapping_div(self, o: Self) -> Self {
                if o == 0 {
                    0
                } else {
                    <$t>::wrapping_div(self, o)
                }
            }
            #[inline(always)]
            fn wrapping_rem(self, o: Self) -> Self {
                if o == 0 {
                    0
                } else {
                    <$t>::wrapping_rem(self, o)
                }
            }
            #[inline(always)]
            fn shl(self, n: u32) -> Self {
                <$t>::wrapping_shl(self, n)
            }
            #[inline(always)]
            fn shr(self, n: u32) -> Self {
                <$t>::wrapping_shr(self, n)
            }
        }
    };
}
int_elem!(u8, DType::U8, false);
int_elem!(i8, DType::I8, true);
int_elem!(i16, DType::I16, true);
int_elem!(i32, DType::I32, true);
int_elem!(i64, DType::I64, true);

/// The floating element types. Each operation rounds to the type, as C++ arithmetic on
/// PyTorch's `float`/`double` and on `c10::Half`/`c10::BFloat16` does: the 16-bit types compute
/// each operation in float32 and round once.
pub trait Float: Elem + PartialOrd {
    const ZERO: Self;
    const ONE: Self;
    const HALF: Self;
    const NAN: Self;
    fn add(self, o: Self) -> Self;
    fn sub(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    fn div(self, o: Self) -> Self;
    fn is_nan(self) -> bool;
    /// C's `fmod`: the remainder of truncating division, with the sign of `self` (exact).
    fn fmod(self, o: Self) -> Self;
    fn floor(self) -> Self;
    /// The magnitude of `self` with the sign of `sign`.
    fn copysign(self, sign: Self) -> Self;
    /// C's `pow`.
    fn pow(self, o: Self) -> Self;
    /// C's `atan2(self, o)`.
    fn atan2(self, o: Self) -> Self;
    /// C's `hypot`.
    fn hypot(self, o: Self) -> Self;
}

macro_rules! float_elem {
    ($t:ty, $dt:expr) => {
        impl Elem for $t {
            const DTYPE: DType = $dt;
            fn to_f64(self) -> f64 {
                self as f64
            }
            fn to_i64(self) -> i64 {
                self as i64
            }
            fn from_f64(v: f64) -> Self {
                v as $t
            }
            fn from_i64(v: i64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn is_true(self) -> bool {
                self != 0.0
            }
        }
        impl Float for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            const HALF: Self = 0.5;
            const NAN: Self = <$t>::NAN;
            #[inline(always)]
            fn add(self, o: Self) -> Self {
                self + o
            }
            #[inline(always)]
            fn sub(self, o: Self) -> Self {
                self - o
            }
            #[inline(always)]
            fn mul(self, o: Self) -> Self {
                self * o
            }
            #[inline(always)]
            fn div(self, o: Self) -> Self {
                self / o
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
            #[inline(always)]
            fn fmod(self, o: Self) -> Self {
                self % o
            }
            #[inline(always)]
            fn floor(self) -> Self {
                <$t>::floor(self)
            }
            #[inline(always)]
            fn copysign(self, sign: Self) -> Self {
                <$t>::copysign(self, sign)
            }
            #[inline(always)]
            fn pow(self, o: Self) -> Self {
                <$t>::powf(self, o)
            }
            #[inline(always)]
            fn atan2(self, o: Self) -> Self {
                <$t>::atan2(self, o)
            }
            #[inline(always)]
            fn hypot(self, o: Self) -> Self {
                <$t>::hypot(self, o)
            }
        }
    };
}
float_elem!(f32, DType::F32);
float_elem!(f64, DType::F64);

// The 16-bit floats compute in float32 and round once per operation, as PyTorch's CPU kernels
// do; conversions from wider types go through float32 too (c10::Half and c10::BFloat16 are built
// from a float).
macro_rules! half_elem {
    ($t:ty, $dt:expr) => {
        impl Elem for $t {
            const DTYPE: DType = $dt;
            fn to_f64(self) -> f64 {
                self.to_f64()
            }
            fn to_i64(self) -> i64 {
                self.to_f32() as i64
            }
            fn from_f64(v: f64) -> Self {
                <$t>::from_f32(v as f32)
            }
            fn from_i64(v: i64) -> Self {
                <$t>::from_f32(v as f32)
            }
            #[inline(always)]
            fn is_true(self) -> bool {
                self.to_f32() != 0.0
            }
        }
        impl Float for $t {
            const ZERO: Self = <$t>::ZERO;
            const ONE: Self = <$t>::ONE;
            const HALF: Self = <$t>::from_f32_const(0.5);
            const NAN: Self = <$t>::NAN;
            #[inline(always)]
            fn add(self, o: Self) -> Self {
                <$t>::from_f32(self.to_f32() + o.to_f32())
            }
            #[inline(always)]
            fn sub(self, o: Self) -> Self {
                <$t>::from_f32(self.to_f32() - o.to_f32())
            }
            #[inline(always)]
            fn mul(self, o: Self) -> Self {
                <$t>::from_f32(self.to_f32() * o.to_f32())
            }
            #[inline(always)]
            fn div(self, o: Self) -> Self {
                <$t>::from_f32(self.to_f32() / o.to_f32())
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
            #[inline(always)]
            fn fmod(self, o: Self) -> Self {
                <$t>::from_f32(self.to_f32() % o.to_f32())
            }
            #[inline(always)]
            fn floor(self) -> Self {
                <$t>::from_f32(self.to_f32().floor())
            }
            #[inline(always)]
            fn copysign(self, sign: Self) -> Self {
                <$t>::copysign(self, sign)
            }
            #[inline(always)]
            fn pow(self, o: Self) -> Self {
                <$t>::from_f32(self.to_f32().powf(o.to_f32()))
            }
            #[inline(always)]
            fn atan2(self, o: Self) -> Self {
                <$t>::from_f32(self.to_f32().atan2(o.to_f32()))
            }
            #[inline(always)]
            fn hypot(self, o: Self) -> Self {
                <$t>::from_f32(self.to_f32().hypot(o.to_f32()))
            }
        }
    };
}
half_elem!(f16, DType::F16);
half_elem!(bf16, DType::BF16);

/// Calls `$body` with `$T` bound to the Rust type of `$dtype`.
#[macro_export]
#[doc(hidden)]
macro_rules! with_elem {
    ($dtype:expr, $T:ident => $body:expr) => {{
        use $crate::engine::dtype::DType;
        match $dtype {
            DType::Bool => {
                type $T = $crate::engine::elem::Bool8;
                $body
            }
            DType::U8 => {
                type $T = u8;
                $body
            }
            DType::I8 => {
                type $T = i8;
                $body
            }
            DType::I16 => {
                type $T = i16;
                $body
            }
            DType::I32 => {
                type $T = i32;
                $body
            }
            DType::I64 => {
                type $T = i64;
                $body
            }
            DType::F16 => {
                type $T = half::f16;
                $body
            }
            DType::BF16 => {
                type $T = half::bf16;
                $body
            }
            DType::F32 => {
                type $T = f32;
                $body
            }
            DType::F64 => {
                type $T = f64;
                $body
            }
        }
    }};
}
