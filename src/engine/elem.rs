//! Element types as Rust types: conversions (C-style casts, as PyTorch does them) and the four
//! arithmetic operations for each of the ten dtypes.
use super::dtype::DType;
use half::{bf16, f16};

/// A bool element: one byte, 0 or 1 when written by the library. Any non-zero byte reads as true,
/// so caller memory with other values is still sound to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[repr(transparent)]
pub struct Bool8(pub u8);

impl Bool8 {
    fn get(self) -> bool {
        self.0 != 0
    }
}

pub trait Elem: Copy + Send + Sync + 'static {
    const DTYPE: DType;
    fn to_f64(self) -> f64;
    /// Integral value (truncated for floats); only used when `Self` is bool or an integer.
    fn to_i64(self) -> i64;
    fn from_f64(v: f64) -> Self;
    fn from_i64(v: i64) -> Self;
    fn add(self, o: Self) -> Self;
    fn sub(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    fn div(self, o: Self) -> Self;

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
    // bool + bool is logical or and bool * bool logical and, as in PyTorch. Subtraction of bools
    // and division in bool are refused or promoted before any kernel runs; these keep the
    // algebra closed all the same.
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        Bool8((self.get() | o.get()) as u8)
    }
    #[inline(always)]
    fn sub(self, o: Self) -> Self {
        Bool8((self.get() ^ o.get()) as u8)
    }
    #[inline(always)]
    fn mul(self, o: Self) -> Self {
        Bool8((self.get() & o.get()) as u8)
    }
    #[inline(always)]
    fn div(self, o: Self) -> Self {
        Bool8((self.get() & o.get()) as u8)
    }
}

macro_rules! int_elem {
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
                v as i64 as $t
            }
            fn from_i64(v: i64) -> Self {
                v as $t
            }
            // Integers wrap on overflow, as PyTorch's kernels do on every platform it supports.
            #[inline(always)]
            fn add(self, o: Self) -> Self {
                self.wrapping_add(o)
            }
            #[inline(always)]
            fn sub(self, o: Self) -> Self {
                self.wrapping_sub(o)
            }
            #[inline(always)]
            fn mul(self, o: Self) -> Self {
                self.wrapping_mul(o)
            }
            // True division promotes integers to float32 before any kernel runs; this is floor-free
            // truncating division kept total (x / 0 = 0) so the trait has no panicking path.
            #[inline(always)]
            fn div(self, o: Self) -> Self {
                self.checked_div(o).unwrap_or(0)
            }
        }
    };
}
int_elem!(u8, DType::U8);
int_elem!(i8, DType::I8);
int_elem!(i16, DType::I16);
int_elem!(i32, DType::I32);
int_elem!(i64, DType::I64);

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
        }
    };
}
float_elem!(f32, DType::F32);
float_elem!(f64, DType::F64);

// The 16-bit floats compute in float32 and round once, as PyTorch's CPU kernels do; conversions
// from wider types go through float32 too (c10::Half and c10::BFloat16 are built from a float).
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
