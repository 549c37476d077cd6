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
    /// Whether the integer kernels get the AVX2 and AVX-512 clones (see [`ElemFn::CLONES`]).
    const INT_CLONES: bool;
    /// Whether the float32 and float64 kernels get them (float16 and bfloat16 always do).
    const FLOAT_CLONES: bool;
}

/// The operation on integers.
pub trait IntFn: BinaryFn {
    fn int<I: Int>(a: I, b: I) -> Self::Out<I>;
}

/// The operation on floating types.
pub trait FloatFn: BinaryFn {
    fn float<F: Float>(a: F, b: F) -> Self::Out<F>;
    /// Whether `float` rounds once: on float16/bfloat16 it is then exactly its float32 form on
    /// the widened operands, rounded to the type at the end (see [`ElemFn::WIDENS`]). False for
    /// functions written as several operations, each rounded.
    const ROUNDS_ONCE: bool;
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
    /// The same operation on float32.
    type F32: ElemFn<f32>;
    /// Whether, for `T` float16 or bfloat16, `call(a, b)` is exactly `F32::call` on `a` and `b`
    /// widened to float32, rounded to `T` (or the same bool): the kernels then compute blocks in
    /// float32 between vectorised conversions. Tested for every operation that says so.
    const WIDENS: bool;
    /// Whether the kernel on `T` exists as AVX2 and AVX-512 clones besides the baseline one.
    /// Not for a function that no vector instruction computes (integer division and remainder,
    /// integer powers, the `pow` and `fmod` calls): there a clone took 0.86-1.29x the baseline's
    /// time by type and layout (median 1.00; integer floor division 1.3-1.9x at 8 and 16 bits,
    /// `examples/kernel_paths.rs`), and the clones were a tenth of the library. float16 and
    /// bfloat16 keep theirs: with F16C converting around each call they take 0.3-0.8x the time.
    const CLONES: bool;
}

/// The [`ElemFn::F32`] of functions that have no float32 form (never called: their
/// [`ElemFn::WIDENS`] is false).
pub struct NoF32;

impl ElemFn<f32> for NoF32 {
    type Out = f32;
    fn call(a: f32, _: f32) -> f32 {
        a
    }
    type F32 = NoF32;
    const WIDENS: bool = false;
    const CLONES: bool = true;
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
    type F32 = NoF32;
    const WIDENS: bool = false;
    const CLONES: bool = K::INT_CLONES;
}

impl<K: FloatFn, F: Float> ElemFn<F> for OnFloat<K> {
    type Out = K::Out<F>;
    #[inline(always)]
    fn call(a: F, b: F) -> K::Out<F> {
        K::float(a, b)
    }
    type F32 = OnFloat<K>;
    const WIDENS: bool = K::ROUNDS_ONCE;
    const CLONES: bool = K::FLOAT_CLONES || matches!(F::DTYPE, DType::F16 | DType::BF16);
}

impl<K: BoolFn> ElemFn<Bool8> for OnBool<K> {
    type Out = K::Out<Bool8>;
    #[inline(always)]
    fn call(a: Bool8, b: Bool8) -> K::Out<Bool8> {
        K::bool(a, b)
    }
    type F32 = NoF32;
    const WIDENS: bool = false;
    const CLONES: bool = true;
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

/// How an operation takes a Python number `s` beside a tensor `t` (PyTorch's Tensor methods and
/// their reflected forms, which Python calls for `s op t`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Number {
    /// Either order; `s op t` is computed as `t op' s` with this operation (the operation itself
    /// when it commutes, the mirrored comparison for the others that compare).
    Reflected(BinaryOp),
    /// Either order, each computed as written: `op(s, t)`.
    Ordered,
    /// Only `t op s`: the number as the first operand is refused (`fmod`).
    Second,
    /// No number form at all.
    Refused,
}

/// An operation's type rule (the rest of its row in the table).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    pub compute: Compute,
    /// The result is bool (whatever the computation type), else the computation type.
    pub bool_result: bool,
    /// Integer divisors must all be non-zero (PyTorch's `ZeroDivisionError`).
    pub nonzero_divisor: bool,
    /// Computing in float16/bfloat16 with a second operand of one element and another type,
    /// PyTorch reads that element in float32 (its "opmath" type) and computes in float32,
    /// rounding once, instead of rounding the element to the computation type first.
    pub float32_scalar: bool,
    /// Whether and how a Python number may be an operand.
    pub number: Number,
    /// How many units in the last place a floating result may differ from PyTorch's (whose own
    /// vectorised and scalar loops differ by as much); 0 for an exact operation.
    pub ulps: u8,
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
/// bool(a, b) => .. }`, each kind of element optional. A float function written as several
/// rounded operations says so: `float<F>(a, b) [rounds several times] => ..`. A function that
/// vector instructions do not compute says on which kinds: `Name -> Same [scalar only: int] {`
/// (its kernels there have no SIMD clones, see [`ElemFn::CLONES`]).
macro_rules! scalar_fn {
    ($(#[$m:meta])* $name:ident -> $out:ident $([scalar only: $($scalar:ident)+])? {
        $(int<$I:ident>($ia:ident, $ib:ident) => $int:expr,)?
        $(float<$F:ident>($fa:ident, $fb:ident) $([rounds $several:ident times])? => $float:expr,)?
        $(bool($ba:ident, $bb:ident) => $bool:expr,)?
    }) => {
        $(#[$m])*
        pub struct $name;
        impl BinaryFn for $name {
            type Out<T: Elem> = out_type!($out, T);
            const INT_CLONES: bool = !has_kind!(int [$($($scalar)+)?]);
            const FLOAT_CLONES: bool = !has_kind!(float [$($($scalar)+)?]);
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
            const ROUNDS_ONCE: bool = rounds_once!($($several)?);
        })?
        $(impl BoolFn for $name {
            #[inline(always)]
            fn bool($ba: Bool8, $bb: Bool8) -> Bool8 {
                $bool
            }
        })?
    };
}

macro_rules! rounds_once {
    () => {
        true
    };
    (several) => {
        false
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

// The unary table is written with the same helpers.
pub(crate) use {has_kind, if_kind, out_type};

/// The table's `number` column: `commutes`, a mirrored operation's variant, `ordered`, `second`
/// or `none`.
macro_rules! number {
    (commutes, $var:ident) => {
        Number::Reflected(BinaryOp::$var)
    };
    (ordered, $var:ident) => {
        Number::Ordered
    };
    (second, $var:ident) => {
        Number::Second
    };
    (none, $var:ident) => {
        Number::Refused
    };
    ($mirror:ident, $var:ident) => {
        Number::Reflected(BinaryOp::$mirror)
    };
}

macro_rules! flag {
    (any) => {
        false
    };
    (nonzero) => {
        true
    };
    (cast) => {
        false
    };
    (float32) => {
        true
    };
}

/// The table: `Variant "name" ScalarFn [kinds with a kernel] compute divisor scalar-b number ulps
/// "kernel name";` (see [`Rule`]). Codes are positions, from 0 (the C API's `BC_OP_*`).
macro_rules! binary_ops {
    ($($(#[$m:meta])* $var:ident $name:literal $K:ident [$($kind:ident)+] $compute:ident
        $divisor:ident $scalar:ident $number:ident $ulps:literal $jname:ident $jfn:tt
        $kname:literal;)+) => {
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
                    nonzero_divisor: flag!($divisor),
                    float32_scalar: flag!($scalar),
                    number: number!($number, $var),
                    ulps: $ulps,
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
    // One row per operation, in `BC_OP_*` code order; a row's doc comment is its `BC_OP_*`
    // constant's documentation (scripts/gen_ops.py writes the C API's codes and named exports from
    // this table). `Julia name, function`: the Julia package's name for the operation, and the
    // Base function whose broadcast on Tensors it is (`_` for none).
    // variant         name                   scalar fn    kernels for       computes in  divisor  scalar b  number    ulps  Julia name, function    PyTorch kernel
    /// `a + b` (bools: or).
    Add                "add"                  Add          [int float bool]  Promoted     any      cast      commutes  0     add                 +     "add_cpu/sub_cpu";
    /// `a - b` (not bool).
    Sub                "sub"                  Sub          [int float]       Promoted     any      cast      ordered   0     sub                 -     "add_cpu/sub_cpu";
    /// `a * b` (bools: and).
    Mul                "mul"                  Mul          [int float bool]  Promoted     any      float32   commutes  0     mul                 *     "mul_cpu";
    /// `a / b`, true division: integer and bool operands give float32.
    Div                "div"                  Div          [float]           Floating     any      float32   ordered   0     divide              /     "div_true_cpu";
    /// `a == b` (bool result).
    Eq                 "eq"                   Eq           [int float bool]  Promoted     any      cast      commutes  0     eq                  ==    "eq_cpu";
    /// `a != b` (bool result; true where either is NaN).
    Ne                 "ne"                   Ne           [int float bool]  Promoted     any      cast      commutes  0     ne                  !=    "ne_cpu";
    /// `a < b` (bool result).
    Lt                 "lt"                   Lt           [int float bool]  Promoted     any      cast      Gt        0     lt                  <     "lt_cpu";
    /// `a <= b` (bool result).
    Le                 "le"                   Le           [int float bool]  Promoted     any      cast      Ge        0     le                  <=    "le_cpu";
    /// `a > b` (bool result).
    Gt                 "gt"                   Gt           [int float bool]  Promoted     any      cast      Lt        0     gt                  >     "gt_cpu";
    /// `a >= b` (bool result).
    Ge                 "ge"                   Ge           [int float bool]  Promoted     any      cast      Le        0     ge                  >=    "ge_cpu";
    /// `maximum(a, b)`: the larger element; NaN where either is NaN; bools: or.
    Maximum            "maximum"              Maximum      [int float bool]  Promoted     any      cast      none      0     maximum             max   "maximum_cpu";
    /// `minimum(a, b)`: the smaller element; NaN where either is NaN; bools: and.
    Minimum            "minimum"              Minimum      [int float bool]  Promoted     any      cast      none      0     minimum             min   "minimum_cpu";
    /// `a ** b`, `a` to the power `b` (not bool). Integers: repeated squaring, wrapping; a negative
    /// exponent gives 1 for a base of 1, +-1 for -1, else 0.
    Pow                "pow"                  Pow          [int float]       Promoted     any      cast      ordered   1     pow                 ^     "pow";
    /// Python's `a % b`: the sign of `b` (not bool). An integer zero divisor is `BC_ERR_VALUE`.
    Remainder          "remainder"            Remainder    [int float]       Promoted     nonzero  cast      ordered   0     remainder           mod   "remainder_cpu";
    /// C's `fmod(a, b)`: the sign of `a` (not bool). An integer zero divisor is `BC_ERR_VALUE`.
    Fmod               "fmod"                 Fmod         [int float]       Promoted     nonzero  cast      second    0     fmod                rem   "fmod_cpu";
    /// Python's `a // b`, rounded down (not bool). An integer zero divisor is `BC_ERR_VALUE`.
    FloorDivide        "floor_divide"         FloorDivide  [int float]       Promoted     nonzero  float32   ordered   0     floor_divide        fld   "div_floor_cpu";
    /// `a && b`: both non-zero (bool result; NaN is true).
    LogicalAnd         "logical_and"          LogicalAnd   [int float bool]  Promoted     any      cast      none      0     logical_and         _     "logical_and_cpu";
    /// `a || b`: either non-zero (bool result).
    LogicalOr          "logical_or"           LogicalOr    [int float bool]  Promoted     any      cast      none      0     logical_or          _     "logical_or_cpu";
    /// `logical_xor(a, b)`: exactly one non-zero (bool result).
    LogicalXor         "logical_xor"          LogicalXor   [int float bool]  Promoted     any      cast      none      0     logical_xor         _     "logical_xor_cpu";
    /// `a & b`, integers and bool only.
    BitwiseAnd         "bitwise_and"          BitwiseAnd   [int bool]        Promoted     any      cast      commutes  0     bitwise_and         &     "bitwise_and_cpu";
    /// `a | b`, integers and bool only.
    BitwiseOr          "bitwise_or"           BitwiseOr    [int bool]        Promoted     any      cast      commutes  0     bitwise_or          |     "bitwise_or_cpu";
    /// `a ^ b`, integers and bool only.
    BitwiseXor         "bitwise_xor"          BitwiseXor   [int bool]        Promoted     any      cast      commutes  0     bitwise_xor         xor   "bitwise_xor_cpu";
    /// `a << b`, integers only; 0 when `b` is negative or at least the bit width.
    BitwiseLeftShift   "bitwise_left_shift"   LeftShift    [int]             Promoted     any      cast      ordered   0     bitwise_left_shift  <<    "lshift_cpu";
    /// `a >> b` (arithmetic when signed), integers only; a shift by a negative amount or at least
    /// the bit width leaves the sign (or 0).
    BitwiseRightShift  "bitwise_right_shift"  RightShift   [int]             Promoted     any      cast      ordered   0     bitwise_right_shift >>    "rshift_cpu";
    /// `atan2(a, b)`; integers and bool compute in float32.
    Atan2              "atan2"                Atan2        [float]           Floating     any      cast      none      1     atan2               atan  "atan2_cpu";
    /// `hypot(a, b)`, floating types only.
    Hypot              "hypot"                Hypot        [float]           Promoted     any      cast      none      1     hypot               hypot "hypot_cpu";
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

/// A predicate (bool result) written once for every kind of element, on the elements as
/// `values` (compared as they are; bools as 0 < 1) or as `truths` (non-zero, NaN included, is
/// true).
macro_rules! predicate {
    ($(#[$m:meta])* $name:ident on $view:ident, $a:ident, $b:ident => $e:expr) => {
        scalar_fn! {
            $(#[$m])*
            $name -> Bool {
                int<I>(x, y) => {
                    let ($a, $b) = (view!($view, x), view!($view, y));
                    Bool8::of($e)
                },
                float<F>(x, y) => {
                    let ($a, $b) = (view!($view, x), view!($view, y));
                    Bool8::of($e)
                },
                bool(x, y) => {
                    let ($a, $b) = (view!($view, x.get() as u8), view!($view, y.get() as u8));
                    Bool8::of($e)
                },
            }
        }
    };
}

macro_rules! view {
    (values, $x:expr) => {
        $x
    };
    (truths, $x:expr) => {
        $x.is_true()
    };
}

predicate!(
    /// `a == b`.
    Eq on values, a, b => a == b
);
predicate!(
    /// `a != b` (true when either is NaN).
    Ne on values, a, b => a != b
);
predicate!(
    /// `a < b`.
    Lt on values, a, b => a < b
);
predicate!(
    /// `a <= b`.
    Le on values, a, b => a <= b
);
predicate!(
    /// `a > b`.
    Gt on values, a, b => a > b
);
predicate!(
    /// `a >= b`.
    Ge on values, a, b => a >= b
);
predicate!(
    /// Both true.
    LogicalAnd on truths, a, b => a & b
);
predicate!(
    /// Either true.
    LogicalOr on truths, a, b => a | b
);
predicate!(
    /// Exactly one true.
    LogicalXor on truths, a, b => a ^ b
);

scalar_fn! {
    /// The larger of `a` and `b`: NaN when either is NaN; between equal values (`0.0` and
    /// `-0.0`) the first. Bools: `or`.
    Maximum -> Same {
        int<I>(a, b) => if a < b { b } else { a },
        float<F>(a, b) => if a.is_nan() || b.is_nan() {
            F::NAN
        } else if a < b {
            b
        } else {
            a
        },
        bool(a, b) => Bool8::of(a.get() | b.get()),
    }
}

scalar_fn! {
    /// The smaller of `a` and `b`: NaN when either is NaN; between equal values the first.
    /// Bools: `and`.
    Minimum -> Same {
        int<I>(a, b) => if b < a { b } else { a },
        float<F>(a, b) => if a.is_nan() || b.is_nan() {
            F::NAN
        } else if b < a {
            b
        } else {
            a
        },
        bool(a, b) => Bool8::of(a.get() & b.get()),
    }
}

scalar_fn! {
    /// `a` to the power `b`: C's `pow` for floats; for integers repeated squaring (wrapping),
    /// and for a negative exponent 1 when `a` is 1, +-1 when `a` is -1 (by the exponent's
    /// parity), else 0, without error (PyTorch, between tensors).
    Pow -> Same [scalar only: int float] {
        int<I>(a, b) => int_pow(a, b),
        float<F>(a, b) => a.pow(b),
    }
}

fn int_pow<I: Int>(mut a: I, mut b: I) -> I {
    let minus_one = I::ZERO.wrapping_sub(I::ONE);
    if b < I::ZERO {
        return if a == I::ONE {
            I::ONE
        } else if a == minus_one {
            if b & I::ONE == I::ZERO {
                I::ONE
            } else {
                minus_one
            }
        } else {
            I::ZERO
        };
    }
    let mut result = I::ONE;
    while b != I::ZERO {
        if b & I::ONE != I::ZERO {
            result = result.wrapping_mul(a);
        }
        b = b.shr(1);
        a = a.wrapping_mul(a);
    }
    result
}

scalar_fn! {
    /// Python's `a % b`: the remainder with the sign of `b` (integers: the divisor is never 0
    /// here, calls with one are refused). In floats it rounds once: `fmod` is exact, so only
    /// `r + b` rounds.
    Remainder -> Same [scalar only: int] {
        int<I>(a, b) => {
            let r = a.wrapping_rem(b);
            if r != I::ZERO && (r < I::ZERO) != (b < I::ZERO) {
                r.wrapping_add(b)
            } else {
                r
            }
        },
        float<F>(a, b) => {
            let r = a.fmod(b);
            if r != F::ZERO && (r < F::ZERO) != (b < F::ZERO) {
                r.add(b)
            } else {
                r
            }
        },
    }
}

scalar_fn! {
    /// C's `fmod` / `%`: the remainder with the sign of `a`.
    Fmod -> Same [scalar only: int float] {
        int<I>(a, b) => a.wrapping_rem(b),
        float<F>(a, b) => a.fmod(b),
    }
}

scalar_fn! {
    /// Python's `a // b`: the quotient rounded down. Floats follow PyTorch's `div_floor`: the
    /// exact quotient `(a - fmod(a, b)) / b`, one less when the remainder's sign differs from
    /// `b`'s, rounded to the nearest integer; IEEE `a / b` when `b` is 0.
    FloorDivide -> Same [scalar only: int] {
        int<I>(a, b) => {
            let q = a.wrapping_div(b);
            if (a < I::ZERO) != (b < I::ZERO) && a.wrapping_rem(b) != I::ZERO {
                q.wrapping_sub(I::ONE)
            } else {
                q
            }
        },
        float<F>(a, b) [rounds several times] => float_floor_divide(a, b),
    }
}

fn float_floor_divide<F: Float>(a: F, b: F) -> F {
    if b == F::ZERO {
        return a.div(b);
    }
    let r = a.fmod(b);
    let mut q = a.sub(r).div(b);
    if r != F::ZERO && (b < F::ZERO) != (r < F::ZERO) {
        q = q.sub(F::ONE);
    }
    if q == F::ZERO {
        return F::ZERO.copysign(a.div(b));
    }
    let floor = q.floor();
    if q.sub(floor) > F::HALF {
        floor.add(F::ONE)
    } else {
        floor
    }
}

scalar_fn! {
    /// `a & b`.
    BitwiseAnd -> Same {
        int<I>(a, b) => a & b,
        bool(a, b) => Bool8::of(a.get() & b.get()),
    }
}

scalar_fn! {
    /// `a | b`.
    BitwiseOr -> Same {
        int<I>(a, b) => a | b,
        bool(a, b) => Bool8::of(a.get() | b.get()),
    }
}

scalar_fn! {
    /// `a ^ b`.
    BitwiseXor -> Same {
        int<I>(a, b) => a ^ b,
        bool(a, b) => Bool8::of(a.get() ^ b.get()),
    }
}

scalar_fn! {
    /// `a << b` on the bit pattern; 0 when `b` is negative or at least the bit width.
    LeftShift -> Same {
        int<I>(a, b) => match shift_amount(b) {
            Some(n) => a.shl(n),
            None => I::ZERO,
        },
    }
}

scalar_fn! {
    /// `a >> b`, arithmetic for signed types; when `b` is negative or at least the bit width,
    /// what the widest shift leaves (the sign, or 0).
    RightShift -> Same {
        int<I>(a, b) => match shift_amount(b) {
            Some(n) => a.shr(n),
            None if I::SIGNED => a.shr(I::BITS - 1),
            None => I::ZERO,
        },
    }
}

/// `b` as a shift amount, when it is one (0 up to the bit width, excluded).
#[inline(always)]
fn shift_amount<I: Int>(b: I) -> Option<u32> {
    let n = b.to_i64();
    (0..I::BITS as i64).contains(&n).then_some(n as u32)
}

scalar_fn! {
    /// C's `atan2(a, b)`.
    Atan2 -> Same {
        float<F>(a, b) => a.atan2(b),
    }
}

scalar_fn! {
    /// C's `hypot(a, b)`.
    Hypot -> Same {
        float<F>(a, b) => a.hypot(b),
    }
}
