//! The elementwise binary operations: one table of what each one is (code, name, type rule) and
//! one scalar function each, written once per kind of element it is defined for. Everything else
//! (checks, promotion, broadcasting, the kernels' fast paths) is shared.
//!
//! A scalar function is a type implementing [`BinaryFn`] (its result element) and one or more of
//! [`IntFn`], [`FloatFn`], [`BoolFn`]; [`BinaryOp::visit`] binds an operation and a dtype to the
//! Rust element type and an [`ElemFn`], which is all a kernel sees.
use super::dtype::{Category, DType};
use super::elem::{Bool8, Elem, Float, Int};
use std::marker::PhantomData;

/// What an operation writes for inputs of element type `T`.
pub trait BinaryFn: 'static {
    /// The computation type itself, or [`Bool8`] (comparisons, logical operations).
    type Out<T: Elem>: Elem;
}

/// The operation on integers.
pub trait IntFn: BinaryFn {
    fn int<I: Int>(a: I, b: I) -> Self::Out<I>;
}

/// The operation on floating types.
pub trait FloatFn: BinaryFn {
    fn float<F: Float>(a: F, b: F) -> Self::Out<F>;
}

/// The operation on bools.
pub trait BoolFn: BinaryFn {
    fn bool(a: Bool8, b: Bool8) -> Self::Out<Bool8>;
}

/// A scalar function on elements of one type: what a kernel is instantiated with, and callable on
/// its own (`F::call(a, b)`) by anything that computes element by element.
pub trait ElemFn<T: Elem>: 'static {
    type Out: Elem;
    fn call(a: T, b: T) -> Self::Out;
}

/// `K` on integers, as an [`ElemFn`].
pub struct OnInt<K>(PhantomData<K>);
/// `K` on floating types, as an [`ElemFn`].
pub struct OnFloat<K>(PhantomData<K>);
/// `K` on bools, as an [`ElemFn`].
pub struct OnBool<K>(PhantomData<K>);

impl<K: IntFn, I: Int> ElemFn<I> for OnInt<K> {
    type Out = K::Out<I>;
    #[inline(always)]
    fn call(a: I, b: I) -> K::Out<I> {
        K::int(a, b)
    }
}

impl<K: FloatFn, F: Float> ElemFn<F> for OnFloat<K> {
    type Out = K::Out<F>;
    #[inline(always)]
    fn call(a: F, b: F) -> K::Out<F> {
        K::float(a, b)
    }
}

impl<K: BoolFn> ElemFn<Bool8> for OnBool<K> {
    type Out = K::Out<Bool8>;
    #[inline(always)]
    fn call(a: Bool8, b: Bool8) -> K::Out<Bool8> {
        K::bool(a, b)
    }
}

/// Something to do with an operation's scalar function for one element type (see
/// [`BinaryOp::visit`]).
pub trait Visit {
    type Output;
    fn visit<T: Elem, F: ElemFn<T>>(self) -> Self::Output;
}

/// How the type an operation computes in follows from its operands' promoted type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compute {
    /// The promoted type itself.
    Promoted,
    /// The promoted type when floating; integers and bool compute in float32.
    Floating,
}

/// An operation's type rule (the rest of its row in the table).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    pub compute: Compute,
    /// The result is bool (whatever the computation type), else the computation type.
    pub bool_result: bool,
    /// Integer divisors must all be non-zero (PyTorch's `ZeroDivisionError`).
    pub nonzero_divisor: bool,
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
}

/// The output type of a scalar function, as written in [`scalar_fn!`].
macro_rules! out_type {
    (Same, $T:ty) => {
        $T
    };
    (Bool, $T:ty) => {
        Bool8
    };
}

/// One scalar function: `Name -> Same|Bool { int<I>(a, b) => .., float<F>(a, b) => ..,
/// bool(a, b) => .. }`, each kind of element optional.
macro_rules! scalar_fn {
    ($(#[$m:meta])* $name:ident -> $out:ident {
        $(int<$I:ident>($ia:ident, $ib:ident) => $int:expr,)?
        $(float<$F:ident>($fa:ident, $fb:ident) => $float:expr,)?
        $(bool($ba:ident, $bb:ident) => $bool:expr,)?
    }) => {
        $(#[$m])*
        pub struct $name;
        impl BinaryFn for $name {
            type Out<T: Elem> = out_type!($out, T);
        }
        $(impl IntFn for $name {
            #[inline(always)]
            fn int<$I: Int>($ia: $I, $ib: $I) -> out_type!($out, $I) {
                $int
            }
        })?
        $(impl FloatFn for $name {
            #[inline(always)]
            fn float<$F: Float>($fa: $F, $fb: $F) -> out_type!($out, $F) {
                $float
            }
        })?
        $(impl BoolFn for $name {
            #[inline(always)]
            fn bool($ba: Bool8, $bb: Bool8) -> Bool8 {
                $bool
            }
        })?
    };
}

/// `Some($then)` when `$want` is among the kinds listed, else `None` (and `$then` is not
/// compiled: an operation has no scalar function for the kinds it leaves out).
macro_rules! if_kind {
    (int [int $($rest:ident)*] $then:expr) => { Some($then) };
    (float [float $($rest:ident)*] $then:expr) => { Some($then) };
    (bool [bool $($rest:ident)*] $then:expr) => { Some($then) };
    ($want:ident [$first:ident $($rest:ident)*] $then:expr) => { if_kind!($want [$($rest)*] $then) };
    ($want:ident [] $then:expr) => { None };
}

/// Whether `$want` is among the kinds listed.
macro_rules! has_kind {
    ($want:ident [$($kind:ident)*]) => {
        Option::<()>::is_some(&if_kind!($want [$($kind)*] ()))
    };
}

macro_rules! nonzero_divisor {
    (any) => {
        false
    };
    (nonzero) => {
        true
    };
}

/// The table: `Variant "name" ScalarFn [kinds with a kernel] compute divisor "kernel name";`.
/// Codes are positions, from 0 (the C API's `BC_OP_*`).
macro_rules! binary_ops {
    ($($(#[$m:meta])* $var:ident $name:literal $K:ident [$($kind:ident)+] $compute:ident
        $divisor:ident $kname:literal;)+) => {
        /// The elementwise binary operations, by their C code (`BC_OP_*`).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum BinaryOp {
            $($(#[$m])* $var,)+
        }

        impl BinaryOp {
            /// Every operation, in code order.
            pub const ALL: &'static [BinaryOp] = &[$(BinaryOp::$var),+];

            /// PyTorch's name of the operation (`"add"`, `"floor_divide"`, ...).
            pub fn name(self) -> &'static str {
                match self {
                    $(BinaryOp::$var => $name,)+
                }
            }

            pub fn rule(self) -> &'static Rule {
                const RULES: &[Rule] = &[$(Rule {
                    compute: Compute::$compute,
                    bool_result: <<$K as BinaryFn>::Out<u8> as Elem>::DTYPE as u8
                        == DType::Bool as u8,
                    nonzero_divisor: nonzero_divisor!($divisor),
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
            #[inline(always)]
            pub fn visit<V: Visit>(self, dtype: DType, v: V) -> Option<V::Output> {
                match self {
                    $(BinaryOp::$var => {
                        match dtype {
                            DType::Bool => if_kind!(bool [$($kind)+] v.visit::<Bool8, OnBool<$K>>()),
                            DType::U8 => if_kind!(int [$($kind)+] v.visit::<u8, OnInt<$K>>()),
                            DType::I8 => if_kind!(int [$($kind)+] v.visit::<i8, OnInt<$K>>()),
                            DType::I16 => if_kind!(int [$($kind)+] v.visit::<i16, OnInt<$K>>()),
                            DType::I32 => if_kind!(int [$($kind)+] v.visit::<i32, OnInt<$K>>()),
                            DType::I64 => if_kind!(int [$($kind)+] v.visit::<i64, OnInt<$K>>()),
                            DType::F16 => if_kind!(float [$($kind)+] v.visit::<half::f16, OnFloat<$K>>()),
                            DType::BF16 => if_kind!(float [$($kind)+] v.visit::<half::bf16, OnFloat<$K>>()),
                            DType::F32 => if_kind!(float [$($kind)+] v.visit::<f32, OnFloat<$K>>()),
                            DType::F64 => if_kind!(float [$($kind)+] v.visit::<f64, OnFloat<$K>>()),
                        }
                    })+
                }
            }
        }
    };
}

binary_ops! {
    // variant  name   scalar fn  kernels for           computes in  divisor  PyTorch kernel
    Add         "add"  Add        [int float bool]      Promoted     any      "add_cpu/sub_cpu";
    Sub         "sub"  Sub        [int float]           Promoted     any      "add_cpu/sub_cpu";
    Mul         "mul"  Mul        [int float bool]      Promoted     any      "mul_cpu";
    /// True division: integers and bool compute in float32.
    Div         "div"  Div        [float]               Floating     any      "div_true_cpu";
}

scalar_fn! {
    /// `a + b`; integers wrap, bools `or`.
    Add -> Same {
        int<I>(a, b) => a.wrapping_add(b),
        float<F>(a, b) => a.add(b),
        bool(a, b) => Bool8::of(a.get() | b.get()),
    }
}

scalar_fn! {
    /// `a - b`; integers wrap (bools are refused).
    Sub -> Same {
        int<I>(a, b) => a.wrapping_sub(b),
        float<F>(a, b) => a.sub(b),
    }
}

scalar_fn! {
    /// `a * b`; integers wrap, bools `and`.
    Mul -> Same {
        int<I>(a, b) => a.wrapping_mul(b),
        float<F>(a, b) => a.mul(b),
        bool(a, b) => Bool8::of(a.get() & b.get()),
    }
}

scalar_fn! {
    /// `a / b` (IEEE).
    Div -> Same {
        float<F>(a, b) => a.div(b),
    }
}
