//! What a reduction computes: the reducers (sum, product, max, min), their accumulator types and
//! arithmetic.

use crate::engine::elem::{Bool8, Elem, Float};
use half::{bf16, f16};
use std::marker::PhantomData;

/// How one reduction combines elements: the accumulator, its identity, how an element enters it,
/// how two accumulators combine, and the result.
pub(crate) trait Reducer: Copy + Send + Sync + 'static {
    type In: Elem;
    type Acc: Elem;
    type Out: Elem;
    fn identity() -> Self::Acc;
    fn combine(a: Self::Acc, b: Self::Acc) -> Self::Acc;

    #[inline(always)]
    fn lift(x: Self::In) -> Self::Acc {
        x.cast()
    }

    /// The result of a reduction of `n` elements (`mean` only for sums).
    #[inline]
    fn finish(a: Self::Acc, _n: usize, _mean: bool) -> Self::Out {
        a.cast()
    }
}

/// Accumulator arithmetic: int64 wraps; floats round to their type (IEEE).
pub(crate) trait Accum: Elem {
    fn add(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    fn div(self, o: Self) -> Self;
}

impl Accum for i64 {
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        self.wrapping_add(o)
    }
    #[inline(always)]
    fn mul(self, o: Self) -> Self {
        self.wrapping_mul(o)
    }
    #[inline(always)]
    fn div(self, o: Self) -> Self {
        self.checked_div(o).unwrap_or(0)
    }
}

macro_rules! float_accum {
    ($($t:ty),*) => {$(
        impl Accum for $t {
            #[inline(always)]
            fn add(self, o: Self) -> Self {
                Float::add(self, o)
            }
            #[inline(always)]
            fn mul(self, o: Self) -> Self {
                Float::mul(self, o)
            }
            #[inline(always)]
            fn div(self, o: Self) -> Self {
                Float::div(self, o)
            }
        }
    )*};
}
float_accum!(f16, bf16, f32, f64);

/// The element types' reduction types: sums accumulate in float32 for the 16-bit floats, and
/// sums and products of bools and integers in (wrapping) int64.
pub(crate) trait ReduceElem: Elem {
    type SumAcc: Accum;
    type SumOut: Elem;
    type ProdAcc: Accum;
    const LOWEST: Self;
    const HIGHEST: Self;
    fn max2(a: Self, b: Self) -> Self;
    fn min2(a: Self, b: Self) -> Self;
}

macro_rules! int_reduce {
    ($($t:ty),*) => {$(
        impl ReduceElem for $t {
            type SumAcc = i64;
            type SumOut = i64;
            type ProdAcc = i64;
            const LOWEST: Self = <$t>::MIN;
            const HIGHEST: Self = <$t>::MAX;
            #[inline(always)]
            fn max2(a: Self, b: Self) -> Self {
                if a > b { a } else { b }
            }
            #[inline(always)]
            fn min2(a: Self, b: Self) -> Self {
                if a < b { a } else { b }
            }
        }
    )*};
}
int_reduce!(u8, i8, i16, i32, i64);

// NaN wins (`a != a` is the NaN test that every float type here has): PyTorch's max/min
// propagate NaN.
macro_rules! float_reduce {
    ($($t:ty => $acc:ty),*) => {$(
        impl ReduceElem for $t {
            type SumAcc = $acc;
            type SumOut = $t;
            type ProdAcc = $t;
            const LOWEST: Self = <$t>::NEG_INFINITY;
            const HIGHEST: Self = <$t>::INFINITY;
            #[inline(always)]
            #[allow(clippy::eq_op)]
            fn max2(a: Self, b: Self) -> Self {
                if a != a || a > b { a } else { b }
            }
            #[inline(always)]
            #[allow(clippy::eq_op)]
            fn min2(a: Self, b: Self) -> Self {
                if a != a || a < b { a } else { b }
            }
        }
    )*};
}
float_reduce!(f16 => f32, bf16 => f32, f32 => f32, f64 => f64);

impl ReduceElem for Bool8 {
    type SumAcc = i64;
    type SumOut = i64;
    type ProdAcc = i64;
    const LOWEST: Self = Bool8(0);
    const HIGHEST: Self = Bool8(1);
    // Any non-zero byte is true; the result is 0 or 1.
    #[inline(always)]
    fn max2(a: Self, b: Self) -> Self {
        Bool8((a.0 != 0 || b.0 != 0) as u8)
    }
    #[inline(always)]
    fn min2(a: Self, b: Self) -> Self {
        Bool8((a.0 != 0 && b.0 != 0) as u8)
    }
}

#[derive(Clone, Copy)]
pub(super) struct SumR<T>(PhantomData<T>);
impl<T: ReduceElem> Reducer for SumR<T> {
    type In = T;
    type Acc = T::SumAcc;
    type Out = T::SumOut;
    #[inline(always)]
    fn identity() -> Self::Acc {
        Self::Acc::from_i64(0)
    }
    #[inline(always)]
    fn combine(a: Self::Acc, b: Self::Acc) -> Self::Acc {
        a.add(b)
    }

    /// `mean` divides the sum by `n` (in the accumulator's type, as PyTorch's
    /// `sum(...).div_(n)`).
    #[inline]
    fn finish(a: Self::Acc, n: usize, mean: bool) -> Self::Out {
        if mean {
            a.div(Self::Acc::from_i64(n as i64)).cast()
        } else {
            a.cast()
        }
    }
}

#[derive(Clone, Copy)]
pub(super) struct ProdR<T>(PhantomData<T>);
impl<T: ReduceElem> Reducer for ProdR<T> {
    type In = T;
    type Acc = T::ProdAcc;
    type Out = T::ProdAcc;
    #[inline(always)]
    fn identity() -> Self::Acc {
        Self::Acc::from_i64(1)
    }
    #[inline(always)]
    fn combine(a: Self::Acc, b: Self::Acc) -> Self::Acc {
        a.mul(b)
    }
}

/// `amax` (`MAX`) or `amin`, in the input's type.
#[derive(Clone, Copy)]
pub(super) struct ExtremeR<T, const MAX: bool>(PhantomData<T>);
impl<T: ReduceElem, const MAX: bool> Reducer for ExtremeR<T, MAX> {
    type In = T;
    type Acc = T;
    type Out = T;
    #[inline(always)]
    fn identity() -> T {
        if MAX {
            T::LOWEST
        } else {
            T::HIGHEST
        }
    }
    #[inline(always)]
    fn combine(a: T, b: T) -> T {
        if MAX {
            T::max2(a, b)
        } else {
            T::min2(a, b)
        }
    }
    #[inline(always)]
    fn lift(x: T) -> T {
        x
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::dtype::DType;
    use crate::engine::reduce::ReduceOp;
    use crate::with_elem;

    /// The planner's accumulator types are those the reducers run with.
    #[test]
    fn accumulators_are_the_reducers() {
        for dtype in DType::ALL {
            let acc: [DType; 4] = with_elem!(dtype, T => [
                <SumR<T> as Reducer>::Acc::DTYPE,
                <ProdR<T> as Reducer>::Acc::DTYPE,
                <ExtremeR<T, true> as Reducer>::Acc::DTYPE,
                <ExtremeR<T, false> as Reducer>::Acc::DTYPE,
            ]);
            let ops = [
                ReduceOp::Sum,
                ReduceOp::Prod,
                ReduceOp::Amax,
                ReduceOp::Amin,
            ];
            for (op, acc) in ops.into_iter().zip(acc) {
                assert_eq!(op.accumulator(dtype), acc, "{op:?} of {dtype:?}");
            }
            assert_eq!(ReduceOp::Mean.accumulator(dtype), acc[0]);
        }
        assert_eq!(ReduceOp::Sum.accumulator(DType::BF16), DType::F32);
        assert_eq!(ReduceOp::Prod.accumulator(DType::F16), DType::F16);
        assert_eq!(ReduceOp::Sum.accumulator(DType::Bool), DType::I64);
    }
}
