//! Randomized comparison of the library (through its C ABI only) against a deliberately plain
//! reference implementation: element by element, multi-indices spelled out, values held as
//! i128/f64 with explicit casting rules (written here), and the test kit's one reference model of
//! promotion, `can_cast` and broadcasting (`testkit/src/model.rs`, shared with the fuzzer).
//!
//! Seed: env `BC_PROPTEST_SEED` (default fixed), number of cases: `BC_PROPTEST_CASES` (default
//! 3000); one case alone: `BC_PROPTEST_CASE=k`. Failures print the seed, the case number and the
//! whole case.
//!
//! Semantics of the reference (docs/semantics.md, sections 1-8):
//! * result shape: NumPy broadcasting; in place: `other` must broadcast to `self`'s shape.
//! * result dtype: PyTorch `result_type` (a 0-d operand only raises the category
//!   bool < integer < floating); true division of integers/bools gives float32; comparisons and
//!   logical operations give bool (0/1 in the written tensor's type in place).
//! * operations: add, sub, mul, div, and (half of the cases) the comparisons, maximum/minimum
//!   (NaN wins), logical and bitwise operations (bitwise ones refuse floating types).
//! * each input is cast to the computation (result) dtype, the operation is done in that dtype
//!   (integers wrap; bool add = or, mul = and; float16/bfloat16 are computed in float32 and rounded
//!   once), then the value is cast to the written-to tensor's dtype (in place / out=).
//! * in place and out= refuse a result dtype of a higher category than the written-to tensor's
//!   (PyTorch's `can_cast`); bool subtraction is refused; a written-to tensor with internal
//!   overlap, or sharing some (not all) memory locations with an input, is refused. Full aliasing
//!   (`x += x`, out= being exactly an input's view) is allowed. A refused call changes nothing.
//! * float64 -> float16/bfloat16 and int -> float16/bfloat16 casts go through float32 (as
//!   `c10::Half(float)` does). Where the contract leaves open whether a narrowed operand is rounded
//!   before or after it is read (a 0-d float64 beside a float16 tensor), the generator only uses
//!   values that the narrower type holds exactly.
//!
//! Tests: `binary_ops_match_reference` (out of place / in place / out=),
//! `binary_ops_match_reference_multithreaded` (the same with `bc_set_parallel_threshold(2)` and
//! four threads), `shape_functions_match_reference`, `views_match_reference` (wrap, expand,
//! contiguous, to_dtype), `reductions_match_reference` (sum, mean, prod, amax, amin over random
//! dims), `binary_sum_to_matches_two_calls` (`bc_binary_sum_to` against `bc_binary` then
//! `bc_tensor_sum_to_size`), and two self-checks of the reference against the oracle files
//! (`reference_promotion_agrees_with_oracle`: the kit's model against `promotion.jsonl`;
//! `reference_half_conversions`).

// Plain index loops are the point of the reference implementation.
#![allow(clippy::needless_range_loop)]

use broadcast::ffi::*;
use std::fmt::Write as _;
use testkit::*;

// =============================================================================================
// PRNG (splitmix64)
// =============================================================================================

struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// uniform in 0..n
    fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0);
        self.next() % n
    }
    /// uniform in lo..=hi
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + self.below((hi - lo + 1) as u64) as i64
    }
    /// true with probability num/den
    fn chance(&mut self, num: u64, den: u64) -> bool {
        self.below(den) < num
    }
    fn pick<X: Copy>(&mut self, xs: &[X]) -> X {
        xs[self.below(xs.len() as u64) as usize]
    }
}

fn seed_from_env() -> u64 {
    match std::env::var("BC_PROPTEST_SEED") {
        Ok(s) => {
            let s = s.trim();
            let parsed = if let Some(h) = s.strip_prefix("0x") {
                u64::from_str_radix(h, 16)
            } else {
                s.parse()
            };
            parsed.unwrap_or_else(|_| panic!("BC_PROPTEST_SEED={s:?} is not a number"))
        }
        Err(_) => 0x5EED_B0AD_CA57_2024,
    }
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .map(|s| {
            s.trim()
                .parse()
                .unwrap_or_else(|_| panic!("{name} is not a number"))
        })
        .unwrap_or(default)
}

/// The cases to run: (index, per-case rng). Each case has its own generator so one can be re-run.
fn cases(test: &str, salt: u64) -> (u64, Vec<(usize, Rng)>) {
    let seed = seed_from_env();
    let n = env_usize("BC_PROPTEST_CASES", 3000);
    println!("{test}: BC_PROPTEST_SEED={seed} ({n} cases)");
    let one = std::env::var("BC_PROPTEST_CASE")
        .ok()
        .map(|s| s.trim().parse::<usize>().expect("BC_PROPTEST_CASE"));
    let mk = |k: usize| {
        let mut r = Rng::new(seed ^ salt.wrapping_mul(0xD6E8_FEB8_6659_FD93));
        for _ in 0..3 {
            r.next();
        }
        let s = r.next() ^ (k as u64).wrapping_mul(0xA076_1D64_78BD_642F);
        (k, Rng::new(s))
    };
    match one {
        Some(k) => (seed, vec![mk(k)]),
        None => (seed, (0..n).map(mk).collect()),
    }
}

struct Report {
    test: String,
    seed: u64,
    fails: Vec<String>,
    checked: usize,
}

impl Report {
    fn new(test: &str, seed: u64) -> Report {
        Report {
            test: test.into(),
            seed,
            fails: vec![],
            checked: 0,
        }
    }
    fn fail(&mut self, case: usize, text: String) {
        self.fails.push(format!(
            "case {case} (rerun: BC_PROPTEST_SEED={} BC_PROPTEST_CASE={case} cargo test --test property {}):\n{text}",
            self.seed, self.test
        ));
    }
    fn finish(self) {
        println!(
            "{}: checked {} cases (seed {})",
            self.test, self.checked, self.seed
        );
        if !self.fails.is_empty() {
            for f in self.fails.iter().take(20) {
                println!("FAIL {f}\n");
            }
            panic!(
                "{}: {} of {} cases failed with BC_PROPTEST_SEED={} (first ones printed above)",
                self.test,
                self.fails.len(),
                self.checked,
                self.seed
            );
        }
    }
}

// =============================================================================================
// reference: dtypes, promotion, casts, arithmetic
// =============================================================================================

const ADD: i32 = BC_OP_ADD;
const SUB: i32 = BC_OP_SUB;
const MUL: i32 = BC_OP_MUL;
const DIV: i32 = BC_OP_DIV;
/// The further operations the reference computes (the others are checked against the PyTorch
/// data only): comparisons, maximum/minimum, logical and bitwise operations.
const MORE_OPS: [i32; 14] = [
    BC_OP_EQ,
    BC_OP_NE,
    BC_OP_LT,
    BC_OP_LE,
    BC_OP_GT,
    BC_OP_GE,
    BC_OP_MAXIMUM,
    BC_OP_MINIMUM,
    BC_OP_LOGICAL_AND,
    BC_OP_LOGICAL_OR,
    BC_OP_LOGICAL_XOR,
    BC_OP_BITWISE_AND,
    BC_OP_BITWISE_OR,
    BC_OP_BITWISE_XOR,
];

/// Comparisons and logical operations give bool (the operation table's `bool_result`).
fn bool_result(op: i32) -> bool {
    NAMED_OPS[op as usize].bool_result
}

fn bitwise(op: i32) -> bool {
    matches!(op, BC_OP_BITWISE_AND | BC_OP_BITWISE_OR | BC_OP_BITWISE_XOR)
}

/// PyTorch's names in "result type X can't be cast to the desired output type Y".
fn torch_name(d: i32) -> &'static str {
    match d {
        BOOL => "Bool",
        U8 => "Byte",
        I8 => "Char",
        I16 => "Short",
        I32 => "Int",
        I64 => "Long",
        F16 => "Half",
        BF16 => "BFloat16",
        F32 => "Float",
        F64 => "Double",
        _ => "?",
    }
}

fn wrap_int(i: i128, d: i32) -> i64 {
    match d {
        U8 => i as u8 as i64,
        I8 => i as i8 as i64,
        I16 => i as i16 as i64,
        I32 => i as i32 as i64,
        I64 => i as i64,
        _ => panic!("wrap_int on {d}"),
    }
}

/// C-style cast of one value to dtype `to`.
fn cast(v: V, to: i32) -> V {
    match to {
        BOOL => V::B(match v {
            V::B(b) => b,
            V::I(i) => i != 0,
            V::F(f) => f != 0.0, // NaN is true
        }),
        U8 | I8 | I16 | I32 | I64 => {
            let i: i128 = match v {
                V::B(b) => b as i128,
                V::I(i) => i as i128,
                V::F(f) => f.trunc() as i128, // only used for in-range values
            };
            V::I(wrap_int(i, to))
        }
        F64 => V::F(match v {
            V::B(b) => b as i64 as f64,
            V::I(i) => i as f64,
            V::F(f) => f,
        }),
        F32 => V::F(match v {
            V::B(b) => b as i64 as f32 as f64,
            V::I(i) => i as f32 as f64,
            V::F(f) => f as f32 as f64,
        }),
        F16 | BF16 => {
            let x = match cast(v, F32) {
                V::F(x) => x,
                _ => unreachable!(),
            };
            V::F(round_to(to, x))
        }
        _ => panic!("cast to {to}"),
    }
}

/// `a op b`, both already of dtype `ct` (the computation dtype).
fn compute(op: i32, a: V, b: V, ct: i32) -> V {
    if MORE_OPS.contains(&op) {
        return compute_more(op, a, b);
    }
    match ct {
        BOOL => {
            let (x, y) = match (a, b) {
                (V::B(x), V::B(y)) => (x, y),
                _ => panic!("bool compute on {a:?} {b:?}"),
            };
            match op {
                ADD => V::B(x || y),
                MUL => V::B(x && y),
                _ => panic!("bool op {op} has no value"),
            }
        }
        U8 | I8 | I16 | I32 | I64 => {
            let (x, y) = match (a, b) {
                (V::I(x), V::I(y)) => (x as i128, y as i128),
                _ => panic!("int compute on {a:?} {b:?}"),
            };
            let r = match op {
                ADD => x + y,
                SUB => x - y,
                MUL => x * y,
                _ => panic!("integer division is never computed in an integer type"),
            };
            V::I(wrap_int(r, ct))
        }
        F64 => {
            let (x, y) = (a.as_f64(), b.as_f64());
            V::F(match op {
                ADD => x + y,
                SUB => x - y,
                MUL => x * y,
                _ => x / y,
            })
        }
        F32 | F16 | BF16 => {
            let (x, y) = (a.as_f64() as f32, b.as_f64() as f32);
            let r = match op {
                ADD => x + y,
                SUB => x - y,
                MUL => x * y,
                _ => x / y,
            };
            V::F(if ct == F32 {
                r as f64
            } else {
                round_to(ct, r as f64)
            })
        }
        _ => panic!("compute in {ct}"),
    }
}

/// The operations of `MORE_OPS` on two values of one dtype: compared exactly (integers as
/// integers, floats as their f64 values; NaN unordered), truth is "non-zero" (NaN is true).
fn compute_more(op: i32, a: V, b: V) -> V {
    use std::cmp::Ordering::*;
    let order = match (a, b) {
        (V::B(x), V::B(y)) => Some(x.cmp(&y)),
        (V::I(x), V::I(y)) => Some(x.cmp(&y)),
        (V::F(x), V::F(y)) => x.partial_cmp(&y),
        _ => panic!("compute on mixed values {a:?} {b:?}"),
    };
    let truth = |v: V| match v {
        V::B(x) => x,
        V::I(x) => x != 0,
        V::F(x) => x != 0.0,
    };
    let bits = |f: fn(i64, i64) -> i64| match (a, b) {
        (V::B(x), V::B(y)) => V::B(f(x as i64, y as i64) != 0),
        (V::I(x), V::I(y)) => V::I(f(x, y)), // bitwise results stay in the type
        _ => panic!("bitwise operation on {a:?} {b:?}"),
    };
    let nan = matches!(a, V::F(x) if x.is_nan()) || matches!(b, V::F(y) if y.is_nan());
    match op {
        BC_OP_EQ => V::B(order == Some(Equal)),
        BC_OP_NE => V::B(order != Some(Equal)),
        BC_OP_LT => V::B(order == Some(Less)),
        BC_OP_LE => V::B(matches!(order, Some(Less | Equal))),
        BC_OP_GT => V::B(order == Some(Greater)),
        BC_OP_GE => V::B(matches!(order, Some(Greater | Equal))),
        BC_OP_MAXIMUM | BC_OP_MINIMUM if nan => V::F(f64::NAN),
        // Between equal values (0.0 and -0.0) the first.
        BC_OP_MAXIMUM => {
            if order == Some(Less) {
                b
            } else {
                a
            }
        }
        BC_OP_MINIMUM => {
            if order == Some(Greater) {
                b
            } else {
                a
            }
        }
        BC_OP_LOGICAL_AND => V::B(truth(a) && truth(b)),
        BC_OP_LOGICAL_OR => V::B(truth(a) || truth(b)),
        BC_OP_LOGICAL_XOR => V::B(truth(a) != truth(b)),
        BC_OP_BITWISE_AND => bits(|x, y| x & y),
        BC_OP_BITWISE_OR => bits(|x, y| x | y),
        BC_OP_BITWISE_XOR => bits(|x, y| x ^ y),
        _ => panic!("compute_more: op {op}"),
    }
}

// ---- shapes ---------------------------------------------------------------------------------

const MSG_INTERNAL_OVERLAP: &str = "unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.";

fn bool_sub_msg(da: i32, db: i32) -> String {
    if da == BOOL && db == BOOL {
        "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` operator instead.".into()
    } else {
        "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.".into()
    }
}

// =============================================================================================
// operands: a view over a random storage
// =============================================================================================

#[derive(Clone)]
struct Opnd {
    dtype: i32,
    shape: Vec<i64>,
    strides: Vec<i64>,
    offset: i64,
    storage: Vec<V>,
    layout: String,
}

impl Opnd {
    fn addr(&self, idx: &[i64]) -> usize {
        let mut a = self.offset;
        for d in 0..idx.len() {
            a += idx[d] * self.strides[d];
        }
        a as usize
    }

    /// Value at the multi-index `idx` of the view.
    fn at(&self, idx: &[i64]) -> V {
        self.storage[self.addr(idx)]
    }

    /// Two elements of the view share a location (a stride-0 dim of size > 1, and elements).
    fn internal_overlap(&self) -> bool {
        numel(&self.shape) > 0
            && self
                .shape
                .iter()
                .zip(&self.strides)
                .any(|(&s, &st)| st == 0 && s > 1)
    }

    fn describe(&self, name: &str) -> String {
        format!(
            "  {name}: dtype {} shape {:?} strides {:?} offset {} ({}), storage ({}) {}",
            dtype_str(self.dtype),
            self.shape,
            self.strides,
            self.offset,
            self.layout,
            self.storage.len(),
            fmt_vals(&self.storage)
        )
    }
}

/// One random value of `dtype`. `wide` draws from the whole range (wrapping, rounding); otherwise
/// small values that every dtype holds exactly.
fn gen_value(r: &mut Rng, dtype: i32, wide: bool, specials: bool) -> V {
    match dtype {
        BOOL => V::B(r.chance(1, 2)),
        U8 => V::I(if wide {
            r.below(256) as i64
        } else {
            r.range(0, 12)
        }),
        I8 | I16 | I32 | I64 => {
            if !wide {
                return V::I(r.range(-9, 9));
            }
            let x = r.next();
            V::I(match dtype {
                I8 => x as i8 as i64,
                I16 => x as i16 as i64,
                I32 => x as i32 as i64,
                _ => {
                    if r.chance(1, 4) {
                        r.pick(&[i64::MIN, i64::MAX, i64::MIN + 1, i64::MAX - 1, -1, 1 << 62])
                    } else {
                        x as i64
                    }
                }
            })
        }
        _ => {
            if specials && r.chance(1, 25) {
                return V::F(round_to(
                    dtype,
                    r.pick(&[f64::INFINITY, f64::NEG_INFINITY, f64::NAN, -0.0, 0.0]),
                ));
            }
            if !wide {
                return V::F(r.range(-40, 40) as f64 / 4.0);
            }
            let x = match dtype {
                F64 => {
                    let m = (r.next() >> 12) as f64 / (1u64 << 52) as f64 + 1.0;
                    m * 2f64.powi(r.range(-30, 30) as i32)
                }
                F32 => {
                    let m = (r.next() >> 41) as f32 / (1u64 << 23) as f32 + 1.0;
                    (m * 2f32.powi(r.range(-20, 20) as i32)) as f64
                }
                F16 => {
                    // any finite half bit pattern (subnormals included)
                    let bits = (r.below(0x7c00) as u16) | if r.chance(1, 2) { 0x8000 } else { 0 };
                    f16_bits_to_f32(bits) as f64
                }
                _ => {
                    let e = r.range(127 - 20, 127 + 20) as u16;
                    let bits = (e << 7) | (r.below(128) as u16);
                    bf16_bits_to_f32(bits) as f64
                }
            };
            V::F(if r.chance(1, 2) { -x } else { x })
        }
    }
}

/// A random strided layout for a view of `shape`: permuted dim order, steps, an offset, and (for
/// read-only operands) stride-0 dims. `zero_ok`: stride 0 allowed on dims of any size (else only
/// on size-1 dims, which share nothing).
fn gen_layout(r: &mut Rng, shape: &[i64], zero_ok: bool) -> (Vec<i64>, i64, usize, String) {
    let n = shape.len();
    let mut desc = vec![];
    // physical order of the dims, outermost first
    let mut perm: Vec<usize> = (0..n).collect();
    if n > 1 && r.chance(1, 3) {
        for i in (1..n).rev() {
            let j = r.below(i as u64 + 1) as usize;
            perm.swap(i, j);
        }
        desc.push(format!("permuted {perm:?}"));
    }
    let stepped = r.chance(1, 3);
    if stepped {
        desc.push("stepped".to_string());
    }
    let mut strides = vec![0i64; n];
    let mut acc = 1i64;
    for &d in perm.iter().rev() {
        let step = if stepped { r.range(1, 3) } else { 1 };
        strides[d] = acc * step;
        acc = strides[d] * shape[d].max(1);
    }
    if n > 0 && r.chance(1, 3) {
        let mut any = false;
        for d in 0..n {
            if (zero_ok || shape[d] == 1) && r.chance(1, 2) {
                strides[d] = 0;
                any = true;
            }
        }
        if any {
            desc.push("expanded".to_string());
        }
    }
    let offset = if r.chance(1, 3) { r.range(1, 5) } else { 0 };
    if offset > 0 {
        desc.push("offset".to_string());
    }
    let extent: i64 = if numel(shape) == 0 {
        0
    } else {
        shape
            .iter()
            .zip(&strides)
            .map(|(&s, &st)| (s - 1) * st)
            .sum()
    };
    let slack = if r.chance(1, 3) { r.range(1, 3) } else { 0 };
    let len = (offset + extent + 1 + slack) as usize;
    if desc.is_empty() {
        desc.push("contiguous".to_string());
    }
    (strides, offset, len, desc.join("+"))
}

fn gen_operand(r: &mut Rng, dtype: i32, shape: &[i64], zero_ok: bool, wide: bool) -> Opnd {
    let (strides, offset, len, layout) = gen_layout(r, shape, zero_ok);
    let storage = (0..len).map(|_| gen_value(r, dtype, wide, true)).collect();
    Opnd {
        dtype,
        shape: shape.to_vec(),
        strides,
        offset,
        storage,
        layout,
    }
}

/// A random result shape: 0-4 dims, sizes 0-5 (1 often, 0 rarely).
fn gen_shape(r: &mut Rng) -> Vec<i64> {
    let n = r.below(5) as usize;
    (0..n)
        .map(|_| {
            let k = r.below(14);
            match k {
                0 => 0,
                1..=4 => 1,
                _ => r.range(2, 5),
            }
        })
        .collect()
}

/// A shape that broadcasts to `full`: a suffix of it with some sizes replaced by 1.
fn derive_shape(r: &mut Rng, full: &[i64]) -> Vec<i64> {
    let keep = if r.chance(1, 2) {
        full.len()
    } else {
        r.below(full.len() as u64 + 1) as usize
    };
    full[full.len() - keep..]
        .iter()
        .map(|&s| if r.chance(1, 4) { 1 } else { s })
        .collect()
}

/// Occasionally make a shape incompatible (change one size to another non-1 size).
fn corrupt_shape(r: &mut Rng, s: &mut Vec<i64>) {
    if s.is_empty() {
        s.push(r.range(2, 4));
        return;
    }
    let d = r.below(s.len() as u64) as usize;
    s[d] = match s[d] {
        0 => r.range(2, 3),
        1 => r.range(2, 3),
        x => {
            if x == 5 {
                r.range(2, 4)
            } else {
                x + 1
            }
        }
    };
}

/// Replace values that would not survive a cast into `target` unchanged by small ones: where an
/// operand is narrowed (a 0-d float64 beside a float16 tensor, a big integer feeding a float
/// result), whether the library rounds before or after reading is not specified.
fn fit_into(r: &mut Rng, o: &mut Opnd, target: i32) {
    if o.dtype == target || category(target) == 0 {
        return;
    }
    if category(target) == 1 && category(o.dtype) != 1 {
        return; // bool into int is exact
    }
    for k in 0..o.storage.len() {
        let v = o.storage[k];
        let c = cast(v, target);
        let same = match (v, c) {
            (V::F(x), V::F(y)) => x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()),
            (V::I(x), V::I(y)) => x == y,
            (V::I(x), V::F(y)) => {
                x as f64 == y && (x as f64) as i64 == x && x.unsigned_abs() < (1 << 53)
            }
            (V::B(_), _) => true,
            _ => false,
        };
        if !same {
            o.storage[k] = gen_value(r, o.dtype, false, false);
        }
    }
}

// =============================================================================================
// running a view through the C API
// =============================================================================================

/// A Rust-owned buffer with an operand's storage bytes.
struct Buf {
    bytes: Vec<u8>,
}

impl Buf {
    fn of(o: &Opnd) -> Buf {
        Buf {
            bytes: encode(o.dtype, &o.storage),
        }
    }
    /// # Safety: the returned tensor must be dropped before `self`.
    unsafe fn view(&mut self, o: &Opnd) -> Result<T, Err> {
        let n = self.bytes.len();
        T::wrap(
            o.dtype,
            self.bytes.as_mut_ptr(),
            n,
            &o.shape,
            Some(&o.strides),
            o.offset,
        )
    }
}

fn compare(dtype: i32, got: &[V], want: &[V], ulps: i64) -> Option<String> {
    if got.len() != want.len() {
        return Some(format!("{} elements, expected {}", got.len(), want.len()));
    }
    let bad: Vec<usize> = (0..got.len())
        .filter(|&k| !close_value(dtype, got[k], want[k], ulps))
        .collect();
    if bad.is_empty() {
        return None;
    }
    let mut s = format!("{} of {} elements differ:", bad.len(), got.len());
    for &k in bad.iter().take(6) {
        let _ = write!(s, " [{k}] got {} expected {};", got[k], want[k]);
    }
    let _ = write!(
        s,
        "\n    got      {}\n    expected {}",
        fmt_vals(got),
        fmt_vals(want)
    );
    Some(s)
}

/// Match a failure against the set of acceptable errors.
fn match_error(e: &Err, allowed: &[(i32, String)]) -> Option<String> {
    if allowed.iter().any(|(s, m)| *s == e.status && *m == e.msg) {
        None
    } else {
        Some(format!(
            "got {e}, expected one of:\n{}",
            allowed
                .iter()
                .map(|(s, m)| format!("    {} {m:?}", status_name(*s)))
                .collect::<Vec<_>>()
                .join("\n")
        ))
    }
}

/// An out-of-place result read back: shape, dtype, row-major values.
type ResultTensor = (Vec<i64>, i32, Vec<V>);

#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    OutOfPlace,
    InPlace,
    Out,
}

// =============================================================================================
// the main property: binary operations
// =============================================================================================

#[test]
fn binary_ops_match_reference() {
    assert!(
        !bc_get_legacy_fallback(),
        "legacy fallback must be off by default"
    );
    assert!(
        !bc_get_broadcast_warning(),
        "broadcast warning must be off by default"
    );
    run_binary_cases("binary_ops_match_reference", 1, 1);
}

/// The same property with the work split across threads even for tiny tensors
/// (`bc_set_parallel_threshold`), so the multi-threaded paths meet strided, broadcast,
/// overlapping and wrapping cases too. Results must not depend on the thread count.
#[test]
fn binary_ops_match_reference_multithreaded() {
    let _restore = ThreadingGuard;
    assert_eq!(bc_set_num_threads(4), BC_OK);
    assert_eq!(bc_set_parallel_threshold(2), BC_OK);
    run_binary_cases("binary_ops_match_reference_multithreaded", 4, 2);
}

fn run_binary_cases(test: &str, salt: u64, divide: usize) {
    let (seed, list) = cases(test, salt);
    let mut rep = Report::new(test, seed);
    let mut stats = [0usize; 4]; // out-of-place ok, refused, in place ok, out= ok
    let mut shared = [0usize; 4];
    for (k, mut r) in list {
        if divide > 1 && k % divide != 0 && std::env::var("BC_PROPTEST_CASE").is_err() {
            continue;
        }
        rep.checked += 1;
        let (desc, result) = run_case(&mut r);
        match result {
            Ok(kind) => {
                stats[kind] += 1;
                if desc.contains("lives in") {
                    shared[kind] += 1;
                }
            }
            Err(why) => rep.fail(k, format!("{desc}  => {why}")),
        }
    }
    println!(
        "{test}: {} out-of-place ok, {} refused as expected, {} in place ok, {} out= ok; \
         views sharing memory: {} refused, {} in place ok, {} out= ok",
        stats[0], stats[1], stats[2], stats[3], shared[1], shared[2], shared[3]
    );
    rep.finish();
}

/// Dtypes to draw: the eight the brief asks for most often, all ten sometimes.
fn gen_dtype(r: &mut Rng) -> i32 {
    if r.chance(1, 5) {
        r.pick(&ALL_DTYPES)
    } else {
        r.pick(&[I8, U8, I32, I64, F32, F64, BOOL, F16])
    }
}

/// The memory locations (storage indices) a view addresses, in row-major order.
fn locations(o: &Opnd) -> Vec<usize> {
    (0..numel(&o.shape))
        .map(|f| o.addr(&unravel(f, &o.shape)))
        .collect()
}

/// A view of `shape` placed somewhere in (or just past) `host`'s storage, which is extended with
/// random values when the view reaches beyond it. Both then hold the same, whole storage.
fn gen_operand_in(r: &mut Rng, host: &mut Opnd, shape: &[i64], zero_ok: bool) -> Opnd {
    let (strides, _, _, layout) = gen_layout(r, shape, zero_ok);
    let extent: i64 = if numel(shape) == 0 {
        0
    } else {
        shape
            .iter()
            .zip(&strides)
            .map(|(&s, &st)| (s - 1) * st)
            .sum()
    };
    let hostlen = host.storage.len() as i64;
    let offset = if r.chance(1, 2) {
        (host.offset + r.range(-2, 2)).max(0)
    } else {
        r.range(0, hostlen + 2)
    };
    let need = (offset + extent + 1) as usize;
    while host.storage.len() < need {
        let v = gen_value(r, host.dtype, false, true);
        host.storage.push(v);
    }
    Opnd {
        dtype: host.dtype,
        shape: shape.to_vec(),
        strides,
        offset,
        storage: host.storage.clone(),
        layout: format!("{layout}, inside a's storage"),
    }
}

const MSG_PARTIAL_OVERLAP: &str = "unsupported operation: some elements of the input tensor and the written-to tensor refer to a single memory location. Please clone() the tensor before performing the operation.";

fn same_view(x: &Opnd, y: &Opnd) -> bool {
    x.dtype == y.dtype && x.shape == y.shape && x.strides == y.strides && x.offset == y.offset
}

fn run_case(r: &mut Rng) -> (String, Result<usize, String>) {
    let op = if r.chance(1, 2) {
        r.below(4) as i32
    } else {
        r.pick(&MORE_OPS)
    };
    let mode = r.pick(&[Mode::OutOfPlace, Mode::InPlace, Mode::Out]);
    let da = gen_dtype(r);
    let mut db = if r.chance(1, 2) { da } else { gen_dtype(r) };
    let wide = r.chance(1, 3);

    // shapes
    let full = gen_shape(r);
    let mut sa = if mode == Mode::InPlace && r.chance(4, 5) {
        full.clone()
    } else {
        derive_shape(r, &full)
    };
    let mut sb = derive_shape(r, &full);
    if r.chance(1, 12) {
        if r.chance(1, 2) {
            corrupt_shape(r, &mut sb)
        } else {
            corrupt_shape(r, &mut sa)
        }
    }
    if mode == Mode::OutOfPlace && r.chance(1, 20) {
        // 0-d against anything
        sa = vec![];
    }

    // operands: self (in place) has no shared elements unless we test that refusal on purpose
    let self_overlap_try = mode == Mode::InPlace && r.chance(1, 25);
    let mut a = gen_operand(r, da, &sa, mode != Mode::InPlace || self_overlap_try, wide);
    // x op= x: other is exactly self's view (the same handle, or a second wrap of the memory)
    let alias = mode == Mode::InPlace && da == db && !self_overlap_try && r.chance(1, 20);
    // other is some other view inside self's memory (overlapping it or not)
    let share_b = mode == Mode::InPlace && !alias && !self_overlap_try && r.chance(1, 12);
    if alias {
        sb = sa.clone();
    }
    if share_b {
        db = da;
    }
    let mut b = if alias {
        a.clone()
    } else if share_b {
        gen_operand_in(r, &mut a, &sb, true)
    } else {
        gen_operand(r, db, &sb, true, wide)
    };
    let alias_same_handle = alias && r.chance(1, 2);

    let rt = result_type(da, sa.is_empty(), db, sb.is_empty());
    let ct = compute_type(op, rt);
    // what the operation gives (bool, or the computation type)
    let res = if bool_result(op) { BOOL } else { ct };
    if !alias {
        fit_into(r, &mut a, ct);
        if share_b {
            b.storage = a.storage.clone();
        } else {
            fit_into(r, &mut b, ct);
        }
    }
    // the written-to dtype
    // (out=: usually the result dtype; sometimes another one, which PyTorch accepts when the
    // result's category is not higher, computing in the result dtype and casting)
    let wd = match mode {
        Mode::OutOfPlace => res,
        Mode::InPlace => da,
        Mode::Out => {
            if r.chance(1, 4) {
                gen_dtype(r)
            } else {
                res
            }
        }
    };
    let bshape = broadcast_shapes(&sa, &sb);
    // out= tensor: the broadcast shape (or a's when there is none), a random layout without
    // shared elements, pre-filled with random values; sometimes inside a's memory (then of a's
    // dtype), sometimes exactly a's view
    let out_shape = bshape.clone().unwrap_or_else(|_| sa.clone());
    let share_out = mode == Mode::Out && wd == da && r.chance(1, 8);
    let out = if mode != Mode::Out {
        None
    } else if share_out {
        if out_shape == sa && !a.internal_overlap() && r.chance(1, 3) {
            Some(a.clone())
        } else {
            let o = gen_operand_in(r, &mut a, &out_shape, false);
            Some(o)
        }
    } else {
        Some(gen_operand(r, wd, &out_shape, false, wide))
    };
    if let (true, Some(o)) = (share_out, &out) {
        // gen_operand_in may have extended a's storage after a was described to b
        a.storage = o.storage.clone();
    }

    // ---- description (for failures) ----
    let mut desc = format!(
        "  op {} ({}), mode {:?}{}{}, promoted dtype {} computed in {} written as {}\n",
        op_name(op),
        op,
        mode,
        if alias {
            if alias_same_handle {
                " (other = the same handle as self)"
            } else {
                " (other = a second wrap of self's memory)"
            }
        } else if share_b {
            " (other lives in self's memory)"
        } else {
            ""
        },
        if share_out {
            " (out lives in a's memory)"
        } else {
            ""
        },
        dtype_str(rt),
        dtype_str(ct),
        dtype_str(wd)
    );
    desc += &a.describe("a/self");
    desc += "\n";
    desc += &b.describe("b/other");
    desc += "\n";
    if let Some(o) = &out {
        desc += &o.describe("out");
        desc += "\n";
    }

    // ---- expected errors ----
    let mut errs: Vec<(i32, String)> = vec![];
    if op == SUB && (da == BOOL || db == BOOL) {
        errs.push((BC_ERR_DTYPE, bool_sub_msg(da, db)));
    }
    match mode {
        Mode::OutOfPlace | Mode::Out => {
            if let Err(m) = &bshape {
                errs.push((BC_ERR_SHAPE, m.clone()));
            }
            if !can_cast(res, wd) {
                errs.push((
                    BC_ERR_DTYPE,
                    format!(
                        "result type {} can't be cast to the desired output type {}",
                        torch_name(res),
                        torch_name(wd)
                    ),
                ));
            }
        }
        Mode::InPlace => {
            if let Err(m) = inplace_shape(&sa, &sb) {
                errs.push((BC_ERR_SHAPE, m));
            }
            if !can_cast(res, da) {
                errs.push((
                    BC_ERR_DTYPE,
                    format!(
                        "result type {} can't be cast to the desired output type {}",
                        torch_name(res),
                        torch_name(da)
                    ),
                ));
            }
            if a.internal_overlap() {
                errs.push((BC_ERR_OVERLAP, MSG_INTERNAL_OVERLAP.to_string()));
            }
        }
    }
    if bitwise(op) && category(ct) == 2 {
        errs.push((
            BC_ERR_DTYPE,
            format!(
                "\"{}_cpu\" not implemented for '{}'",
                op_name(op),
                torch_name(ct)
            ),
        ));
    }
    let mut optional: Vec<(i32, String)> = vec![];
    // self with a stride-0 dim of size > 1 but no elements: refusing is as right as accepting
    // (the same for an out= tensor that is such a view of a)
    let written: Option<&Opnd> = match mode {
        Mode::InPlace => Some(&a),
        Mode::Out => out.as_ref(),
        Mode::OutOfPlace => None,
    };
    let empty_overlap = written.is_some_and(|w| {
        numel(&w.shape) == 0
            && w.shape
                .iter()
                .zip(&w.strides)
                .any(|(&s, &st)| st == 0 && s > 1)
    });
    if empty_overlap {
        optional.push((BC_ERR_OVERLAP, MSG_INTERNAL_OVERLAP.to_string()));
    }
    // a written-to view and an input view in one memory
    let shared_pair: Option<(&Opnd, &Opnd)> = if share_b {
        Some((&a, &b))
    } else if share_out {
        Some((out.as_ref().unwrap(), &a))
    } else {
        None
    };
    if let Some((w, i)) = shared_pair {
        if !same_view(w, i) {
            let lw = locations(w);
            let li = locations(i);
            if lw.iter().any(|x| li.contains(x)) {
                errs.push((BC_ERR_OVERLAP, MSG_PARTIAL_OVERLAP.to_string()));
            } else if !lw.is_empty() && !li.is_empty() {
                // no shared location, but interleaved address ranges (PyTorch compares ranges)
                let (w0, w1) = (*lw.iter().min().unwrap(), *lw.iter().max().unwrap());
                let (i0, i1) = (*li.iter().min().unwrap(), *li.iter().max().unwrap());
                if w0 <= i1 && i0 <= w1 {
                    optional.push((BC_ERR_OVERLAP, MSG_PARTIAL_OVERLAP.to_string()));
                }
            }
        }
    }
    let mut acceptable = errs.clone();
    acceptable.extend(optional.iter().cloned());

    // ---- expected values ----
    let ulps = if op == DIV { 1 } else { 0 };
    let eval = |idx_a: &[i64], idx_b: &[i64]| -> V {
        let x = cast(a.at(idx_a), ct);
        let y = cast(b.at(idx_b), ct);
        cast(compute(op, x, y, ct), wd)
    };

    // ---- run ----
    let mut abuf = Buf::of(&a);
    let mut bbuf = Buf::of(&b);
    let mut obuf = out.as_ref().map(Buf::of);
    let a0 = abuf.bytes.clone();
    let b0 = bbuf.bytes.clone();
    let o0 = obuf.as_ref().map(|o| o.bytes.clone());

    let outcome: Result<Option<ResultTensor>, Err>;
    {
        let ta = match unsafe { abuf.view(&a) } {
            Ok(t) => t,
            Err(e) => return (desc, Err(format!("bc_tensor_wrap(a) failed: {e}"))),
        };
        let tb_own;
        let tb: &T = if alias && alias_same_handle {
            &ta
        } else if alias || share_b {
            // a second handle over self's memory
            let n = abuf.bytes.len();
            tb_own = match unsafe {
                T::wrap(
                    b.dtype,
                    abuf.bytes.as_mut_ptr(),
                    n,
                    &b.shape,
                    Some(&b.strides),
                    b.offset,
                )
            } {
                Ok(t) => t,
                Err(e) => {
                    return (
                        desc,
                        Err(format!(
                            "bc_tensor_wrap(other in self's memory) failed: {e}"
                        )),
                    )
                }
            };
            &tb_own
        } else {
            tb_own = match unsafe { bbuf.view(&b) } {
                Ok(t) => t,
                Err(e) => return (desc, Err(format!("bc_tensor_wrap(b) failed: {e}"))),
            };
            &tb_own
        };
        outcome = match mode {
            Mode::OutOfPlace => {
                binary(op, &ta, tb).map(|t| Some((t.shape(), t.dtype(), t.values())))
            }
            Mode::InPlace => binary_inplace(op, &ta, tb).map(|_| None),
            Mode::Out => {
                let oo = out.as_ref().unwrap();
                let to = if share_out {
                    let n = abuf.bytes.len();
                    unsafe {
                        T::wrap(
                            oo.dtype,
                            abuf.bytes.as_mut_ptr(),
                            n,
                            &oo.shape,
                            Some(&oo.strides),
                            oo.offset,
                        )
                    }
                } else {
                    unsafe { obuf.as_mut().unwrap().view(oo) }
                };
                let to = match to {
                    Ok(t) => t,
                    Err(e) => return (desc, Err(format!("bc_tensor_wrap(out) failed: {e}"))),
                };
                binary_out(op, &ta, tb, &to).map(|_| None)
            }
        };
    }

    // ---- judge ----
    let unchanged = |what: &str, now: &[u8], before: &[u8], dt: i32| -> Result<(), String> {
        if now != before {
            Err(format!(
                "{what} storage changed: {} -> {}",
                fmt_vals(&decode(dt, before)),
                fmt_vals(&decode(dt, now))
            ))
        } else {
            Ok(())
        }
    };
    let res = (|| -> Result<usize, String> {
        match outcome {
            Err(e) => {
                if acceptable.is_empty() {
                    return Err(format!("expected success, got {e}"));
                }
                if let Some(p) = match_error(&e, &acceptable) {
                    return Err(p);
                }
                unchanged("a/self", &abuf.bytes, &a0, a.dtype)?;
                unchanged("b/other", &bbuf.bytes, &b0, b.dtype)?;
                if let (Some(ob), Some(o0)) = (&obuf, &o0) {
                    unchanged("out", &ob.bytes, o0, wd)?;
                }
                Ok(1)
            }
            Ok(got) => {
                if !errs.is_empty() {
                    return Err(format!(
                        "expected an error, one of:\n{}\n  but the call succeeded",
                        errs.iter()
                            .map(|(s, m)| format!("    {} {m:?}", status_name(*s)))
                            .collect::<Vec<_>>()
                            .join("\n")
                    ));
                }
                match mode {
                    Mode::OutOfPlace => {
                        let (shape, dtype, vals) = got.unwrap();
                        let want_shape = bshape.clone().unwrap();
                        if shape != want_shape {
                            return Err(format!("result shape {shape:?}, expected {want_shape:?}"));
                        }
                        if dtype != res {
                            return Err(format!(
                                "result dtype {}, expected {}",
                                lib_dtype_name(dtype),
                                dtype_str(res)
                            ));
                        }
                        let want: Vec<V> = (0..numel(&want_shape))
                            .map(|f| {
                                let idx = unravel(f, &want_shape);
                                eval(&broadcast_index(&idx, &sa), &broadcast_index(&idx, &sb))
                            })
                            .collect();
                        if let Some(p) = compare(res, &vals, &want, ulps) {
                            return Err(format!("result values: {p}"));
                        }
                        unchanged("a", &abuf.bytes, &a0, a.dtype)?;
                        unchanged("b", &bbuf.bytes, &b0, b.dtype)?;
                        Ok(0)
                    }
                    Mode::InPlace => {
                        // reads see the storage as it was before the call (no location is both
                        // read by one element and written by another: identical views or none)
                        let mut want = a.storage.clone();
                        for f in 0..numel(&sa) {
                            let idx = unravel(f, &sa);
                            want[a.addr(&idx)] = eval(&idx, &broadcast_index(&idx, &sb));
                        }
                        let got_storage = decode(da, &abuf.bytes);
                        if let Some(p) = compare(da, &got_storage, &want, ulps) {
                            return Err(format!("self's storage after the in-place op: {p}"));
                        }
                        if da == BOOL && !bool_bytes_ok(&abuf.bytes) {
                            return Err("bool self holds bytes other than 0/1".into());
                        }
                        if !alias && !share_b {
                            unchanged("other", &bbuf.bytes, &b0, b.dtype)?;
                        }
                        Ok(2)
                    }
                    Mode::Out => {
                        let oo = out.as_ref().unwrap();
                        let rs = bshape.clone().unwrap();
                        let mut want = oo.storage.clone();
                        for f in 0..numel(&rs) {
                            let idx = unravel(f, &rs);
                            want[oo.addr(&idx)] =
                                eval(&broadcast_index(&idx, &sa), &broadcast_index(&idx, &sb));
                        }
                        let bytes = if share_out {
                            &abuf.bytes
                        } else {
                            &obuf.as_ref().unwrap().bytes
                        };
                        let got_storage = decode(wd, bytes);
                        if let Some(p) = compare(wd, &got_storage, &want, ulps) {
                            return Err(format!("out's storage after the call: {p}"));
                        }
                        if !share_out {
                            unchanged("a", &abuf.bytes, &a0, a.dtype)?;
                        }
                        unchanged("b", &bbuf.bytes, &b0, b.dtype)?;
                        Ok(3)
                    }
                }
            }
        }
    })();
    (desc, res)
}

// =============================================================================================
// shapes without tensors
// =============================================================================================

#[test]
fn shape_functions_match_reference() {
    let (seed, list) = cases("shape_functions_match_reference", 2);
    let mut rep = Report::new("shape_functions_match_reference", seed);
    for (k, mut r) in list {
        rep.checked += 1;
        let full = gen_shape(&mut r);
        let mut a = derive_shape(&mut r, &full);
        let mut b = derive_shape(&mut r, &full);
        if r.chance(1, 2) {
            std::mem::swap(&mut a, &mut b);
        }
        if r.chance(1, 4) {
            corrupt_shape(&mut r, &mut b);
        }
        let want = broadcast_shapes(&a, &b);
        let got = shape_broadcast(&a, &b);
        let ok = match (&want, &got) {
            (Ok(w), Ok(g)) => w == g,
            (Err(w), Err(g)) => g.status == BC_ERR_SHAPE && *w == g.msg,
            _ => false,
        };
        if !ok {
            rep.fail(
                k,
                format!("  bc_shape_broadcast({a:?}, {b:?}): got {got:?}, expected {want:?}"),
            );
        }
        let isb = shape_is_broadcastable(&a, &b);
        if isb != Ok(want.is_ok()) {
            rep.fail(
                k,
                format!(
                    "  bc_shape_is_broadcastable({a:?}, {b:?}): got {isb:?}, expected {}",
                    want.is_ok()
                ),
            );
        }
        // n-ary agrees with folding the binary rule (shape only; the text is PyTorch's own)
        let c = derive_shape(&mut r, &full);
        let want3 = want.clone().and_then(|ab| broadcast_shapes(&ab, &c));
        let got3 = shape_broadcast_n(&[a.clone(), b.clone(), c.clone()]);
        let ok3 = match (&want3, &got3) {
            (Ok(w), Ok(g)) => w == g,
            (Err(_), Err(g)) => g.status == BC_ERR_SHAPE,
            _ => false,
        };
        if !ok3 {
            rep.fail(k, format!("  bc_shape_broadcast_n([{a:?}, {b:?}, {c:?}]): got {got3:?}, expected {want3:?}"));
        }
    }
    rep.finish();
}

// =============================================================================================
// views: expand / contiguous / to_dtype over random strided layouts
// =============================================================================================

#[test]
fn views_match_reference() {
    let (seed, list) = cases("views_match_reference", 3);
    let mut rep = Report::new("views_match_reference", seed);
    for (k, mut r) in list {
        rep.checked += 1;
        let dtype = gen_dtype(&mut r);
        let full = gen_shape(&mut r);
        let src_shape = derive_shape(&mut r, &full);
        let wide = r.chance(1, 2);
        let o = gen_operand(&mut r, dtype, &src_shape, true, wide);
        let mut buf = Buf::of(&o);
        let before = buf.bytes.clone();
        let desc = o.describe("source");
        let res = (|| -> Result<(), String> {
            let t = unsafe { buf.view(&o) }.map_err(|e| format!("bc_tensor_wrap: {e}"))?;
            // the view reads what the reference reads
            let want_src: Vec<V> = (0..numel(&src_shape))
                .map(|f| o.at(&unravel(f, &src_shape)))
                .collect();
            if let Some(p) = compare(dtype, &decode(dtype, &t.bytes()), &want_src, 0) {
                return Err(format!("bc_tensor_copy_to of the wrapped view: {p}"));
            }
            // expand to the full shape, with -1 for some kept sizes
            let lead = full.len() - src_shape.len();
            let sizes: Vec<i64> = (0..full.len())
                .map(|d| {
                    if d >= lead && src_shape[d - lead] == full[d] && r.chance(1, 3) {
                        -1
                    } else {
                        full[d]
                    }
                })
                .collect();
            let e = t
                .expand(&sizes)
                .map_err(|e| format!("bc_tensor_expand({sizes:?}): {e}"))?;
            if e.shape() != full {
                return Err(format!(
                    "expand({sizes:?}) shape {:?}, expected {full:?}",
                    e.shape()
                ));
            }
            let st = e.strides();
            for d in 0..full.len() {
                let broadcast_dim = d < lead || (src_shape[d - lead] == 1 && full[d] != 1);
                if broadcast_dim && full[d] != 1 && st[d] != 0 {
                    return Err(format!("expand({sizes:?}) strides {st:?}: dim {d} is broadcast but has stride != 0"));
                }
                if d >= lead && !broadcast_dim && st[d] != o.strides[d - lead] && full[d] > 1 {
                    return Err(format!(
                        "expand({sizes:?}) strides {st:?}: dim {d} should keep stride {}",
                        o.strides[d - lead]
                    ));
                }
            }
            let want: Vec<V> = (0..numel(&full))
                .map(|f| o.at(&broadcast_index(&unravel(f, &full), &src_shape)))
                .collect();
            if let Some(p) = compare(dtype, &decode(dtype, &e.bytes()), &want, 0) {
                return Err(format!("expand({sizes:?}) values: {p}"));
            }
            // contiguous copy of the expanded view
            let mut out: *mut bc_tensor = std::ptr::null_mut();
            check(unsafe { bc_tensor_contiguous(e.ptr(), &mut out) })
                .map_err(|e| format!("bc_tensor_contiguous: {e}"))?;
            let c = T(out);
            let mut contig = false;
            check(unsafe { bc_tensor_is_contiguous(c.ptr(), &mut contig) })
                .map_err(|e| format!("bc_tensor_is_contiguous: {e}"))?;
            if !contig || c.shape() != full {
                return Err(format!(
                    "bc_tensor_contiguous: is_contiguous={contig}, shape {:?}",
                    c.shape()
                ));
            }
            if let Some(p) = compare(dtype, &decode(dtype, &c.bytes()), &want, 0) {
                return Err(format!("bc_tensor_contiguous values: {p}"));
            }
            // a cast of the view to another dtype (values that every target holds: skip
            // float -> integer casts of values out of range, which C leaves undefined)
            let to = gen_dtype(&mut r);
            let castable = |v: V| match (v, category(to)) {
                (V::F(f), 1) => f.is_finite() && f.trunc().abs() < 100.0 && (to != U8 || f >= 0.0),
                _ => true,
            };
            if want_src.iter().all(|&v| castable(v)) {
                let ct = t
                    .to_dtype(to)
                    .map_err(|e| format!("bc_tensor_to_dtype({}): {e}", dtype_str(to)))?;
                let wantc: Vec<V> = want_src.iter().map(|&v| cast(v, to)).collect();
                if ct.dtype() != to || ct.shape() != src_shape {
                    return Err(format!(
                        "bc_tensor_to_dtype({}): dtype {} shape {:?}",
                        dtype_str(to),
                        ct.dtype(),
                        ct.shape()
                    ));
                }
                if let Some(p) = compare(to, &decode(to, &ct.bytes()), &wantc, 0) {
                    return Err(format!("bc_tensor_to_dtype({}) values: {p}", dtype_str(to)));
                }
            }
            Ok(())
        })();
        if let Err(why) = res {
            rep.fail(k, format!("{desc}\n  => {why}"));
        }
        if buf.bytes != before {
            rep.fail(
                k,
                format!("{desc}\n  => reading views modified the storage"),
            );
        }
    }
    rep.finish();
}

// =============================================================================================
// self-checks of the reference (so a wrong table fails here, not as a library bug)
// =============================================================================================

#[test]
fn reference_promotion_agrees_with_oracle() {
    let rows = read_jsonl("promotion.jsonl");
    let mut bad = vec![];
    for row in &rows {
        let da = dtype_code(row["a"].as_str().unwrap());
        let db = dtype_code(row["b"].as_str().unwrap());
        let op = op_code(row["op"].as_str().unwrap());
        let rt = compute_type(
            op,
            result_type(
                da,
                row["a_0d"].as_bool().unwrap(),
                db,
                row["b_0d"].as_bool().unwrap(),
            ),
        );
        if let Some(want) = row.get("result") {
            if dtype_str(rt) != want.as_str().unwrap() {
                bad.push(format!("{row}: reference says {}", dtype_str(rt)));
            }
        } else if !(op == SUB && (da == BOOL || db == BOOL)) {
            bad.push(format!("{row}: reference has no error"));
        }
        if let Some(e) = row.get("inplace_error") {
            if row["inplace_kind"] == "dtype" {
                let m = format!(
                    "result type {} can't be cast to the desired output type {}",
                    torch_name(rt),
                    torch_name(da)
                );
                if e.as_str().unwrap() != m {
                    bad.push(format!("{row}: reference says {m:?}"));
                }
            } else if e.as_str().unwrap() != bool_sub_msg(da, db) {
                bad.push(format!("{row}: reference sub message differs"));
            }
        }
    }
    for l in bad.iter().take(10) {
        println!("{l}");
    }
    assert!(
        bad.is_empty(),
        "the reference promotion table disagrees with promotion.jsonl in {} rows",
        bad.len()
    );
    // and the shape rules with the shape files
    for row in read_jsonl("binary_shapes.jsonl") {
        let got = broadcast_shapes(&json_shape(&row["a"]), &json_shape(&row["b"]));
        match row.get("error") {
            Some(e) => assert_eq!(got, Err(e.as_str().unwrap().to_string()), "{row}"),
            None => assert_eq!(got, Ok(json_shape(&row["shape"])), "{row}"),
        }
    }
    for row in read_jsonl("inplace_shapes.jsonl") {
        let got = inplace_shape(&json_shape(&row["self"]), &json_shape(&row["other"]));
        match row.get("error") {
            Some(e) => assert_eq!(got, Err(e.as_str().unwrap().to_string()), "{row}"),
            None => assert_eq!(got, Ok(()), "{row}"),
        }
    }
}

#[test]
fn reference_half_conversions() {
    // every half / bfloat16 bit pattern survives f16 -> f32 -> f16
    for h in 0..=u16::MAX {
        let f = f16_bits_to_f32(h);
        if f.is_nan() {
            assert!(f16_bits_to_f32(f32_to_f16_bits(f)).is_nan());
        } else {
            assert_eq!(f32_to_f16_bits(f), h, "f16 {h:#06x}");
        }
        let g = bf16_bits_to_f32(h);
        if g.is_nan() {
            assert!(bf16_bits_to_f32(f32_to_bf16_bits(g)).is_nan());
        } else {
            assert_eq!(f32_to_bf16_bits(g), h, "bf16 {h:#06x}");
        }
    }
    // ties go to even
    assert_eq!(f32_to_f16_bits(1.0 + 2f32.powi(-11)), 0x3c00);
    assert_eq!(f32_to_f16_bits(1.0 + 3.0 * 2f32.powi(-11)), 0x3c02);
    assert_eq!(f32_to_f16_bits(65520.0), 0x7c00);
    assert_eq!(f32_to_f16_bits(65519.0), 0x7bff);
    assert_eq!(f32_to_f16_bits(2f32.powi(-25)), 0x0000);
    assert_eq!(f32_to_f16_bits(2f32.powi(-25) * 1.5), 0x0001);
    assert_eq!(f32_to_bf16_bits(1.0 + 2f32.powi(-8)), 0x3f80);
    assert_eq!(f32_to_bf16_bits(1.0 + 3.0 * 2f32.powi(-8)), 0x3f82);
}

// =============================================================================================
// reductions against a plain reference; the fused sum_to against the two calls
// =============================================================================================

/// What one output of a reduction should be: exactly a value (zeros of either sign when `any_zero`),
/// or a floating result within the README's bound of the exact `f` (`a`: the sum of |x|, or |f|
/// for products), or anything (a product some order of which leaves the type's range).
enum Expect {
    Exact(V, bool),
    Bound(f64, f64),
    Unchecked,
}

/// A reduction's expected result (dtype, shape, each output), or its status and message.
type Reduced = Result<(i32, Vec<i64>, Vec<Expect>), (i32, String)>;

/// The reference reduction: PyTorch's checks in its order (error status and text), else the
/// result dtype, shape, and each output element's expectation.
fn ref_reduce(op: &str, o: &Opnd, dims: Option<&[i64]>, keepdim: bool) -> Reduced {
    let (nd, float) = (o.shape.len(), category(o.dtype) == 2);
    if op == "mean" && !float {
        return Err((
            BC_ERR_DTYPE,
            format!("mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: {}", torch_name(o.dtype)),
        ));
    }
    let extremum = op == "amax" || op == "amin";
    let dims = dims.unwrap_or(&[]);
    let n1 = nd.max(1) as i64;
    let mut wrapped = vec![];
    for &d in dims {
        if d < -n1 || d >= n1 {
            return Err((
                BC_ERR_INVALID_ARG,
                format!(
                    "Dimension out of range (expected to be in range of [{}, {}], but got {d})",
                    -n1,
                    n1 - 1
                ),
            ));
        }
        let w = if d < 0 { d + n1 } else { d } as usize;
        if extremum && w < nd && o.shape[w] == 0 {
            return Err((
                BC_ERR_SHAPE,
                format!("{op}(): Expected reduction dim {d} to have non-zero size."),
            ));
        }
        wrapped.push(w);
    }
    if extremum && dims.is_empty() && numel(&o.shape) == 0 {
        return Err((BC_ERR_SHAPE, format!("{op}(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument.")));
    }
    for (i, &w) in wrapped.iter().enumerate() {
        if wrapped[..i].contains(&w) {
            return Err((
                BC_ERR_INVALID_ARG,
                format!("dim {w} appears multiple times in the list of dims"),
            ));
        }
    }
    let reduced: Vec<bool> = (0..nd)
        .map(|d| dims.is_empty() || wrapped.contains(&d))
        .collect();
    let out_shape: Vec<i64> = (0..nd)
        .filter(|&d| keepdim || !reduced[d])
        .map(|d| if reduced[d] { 1 } else { o.shape[d] })
        .collect();
    let kept: Vec<i64> = (0..nd)
        .map(|d| if reduced[d] { 1 } else { o.shape[d] })
        .collect();
    let dtype = if (op == "sum" || op == "prod") && !float {
        I64
    } else {
        o.dtype
    };
    let m = numel(&kept) as usize;
    let mut groups: Vec<Vec<V>> = vec![vec![]; m];
    for k in 0..numel(&o.shape) {
        let idx = unravel(k, &o.shape);
        let at: Vec<i64> = (0..nd)
            .map(|d| if reduced[d] { 0 } else { idx[d] })
            .collect();
        groups[flat_of(&at, &kept) as usize].push(o.at(&idx));
    }
    let expect = groups
        .iter()
        .map(|xs| ref_reduce_one(op, o.dtype, xs))
        .collect();
    Ok((dtype, out_shape, expect))
}

fn ref_reduce_one(op: &str, dtype: i32, xs: &[V]) -> Expect {
    let int = |v: V| match v {
        V::B(b) => b as i64,
        V::I(i) => i,
        V::F(_) => unreachable!("a float among integers"),
    };
    if category(dtype) != 2 {
        let it = xs.iter().map(|&v| int(v));
        let value = match op {
            "sum" => V::I(it.fold(0i64, i64::wrapping_add)),
            "prod" => V::I(it.fold(1i64, i64::wrapping_mul)),
            _ if dtype == BOOL => {
                let any = xs.iter().any(|&v| int(v) != 0);
                let all = xs.iter().all(|&v| int(v) != 0);
                V::B(if op == "amax" { any } else { all })
            }
            "amax" => V::I(it.max().expect("not empty")),
            _ => V::I(it.min().expect("not empty")),
        };
        return Expect::Exact(value, false);
    }
    let fs: Vec<f64> = xs.iter().map(|v| v.as_f64()).collect();
    let n = fs.len() as f64;
    match op {
        "amax" | "amin" => {
            let pick = |a: f64, b: f64| {
                if a.is_nan() || b.is_nan() {
                    f64::NAN
                } else if (op == "amax") == (b > a) {
                    b
                } else {
                    a
                }
            };
            let v = fs.iter().copied().reduce(pick).expect("not empty");
            Expect::Exact(V::F(v), true)
        }
        "prod" => {
            let big: f64 = fs
                .iter()
                .filter(|x| x.abs() > 1.0)
                .map(|x| x.abs())
                .product();
            let small: f64 = fs
                .iter()
                .filter(|x| x.abs() < 1.0 && **x != 0.0)
                .map(|x| x.abs())
                .product();
            let (_, tiny) = eps_tiny(dtype);
            if big > max_finite(dtype) || small < tiny {
                Expect::Unchecked
            } else {
                let p: f64 = fs.iter().product();
                Expect::Bound(p, p.abs())
            }
        }
        _ => {
            let s: f64 = fs.iter().sum();
            let a: f64 = fs.iter().map(|x| x.abs()).sum();
            if op == "mean" {
                Expect::Bound(s / n, a / n)
            } else {
                Expect::Bound(s, a)
            }
        }
    }
}

/// Dims to reduce over: none given, `()`, or some of the dimensions (either sign, any order),
/// sometimes with one out of range or repeated.
fn gen_dims(r: &mut Rng, nd: usize) -> Option<Vec<i64>> {
    if r.chance(1, 6) {
        return None;
    }
    if r.chance(1, 10) {
        return Some(vec![]);
    }
    let n1 = nd.max(1) as i64;
    let mut dims = vec![];
    for d in 0..n1 {
        if r.chance(1, 2) {
            dims.push(if r.chance(1, 2) { d - n1 } else { d });
        }
    }
    for i in (1..dims.len()).rev() {
        let j = r.below(i as u64 + 1) as usize;
        dims.swap(i, j);
    }
    if r.chance(1, 15) {
        let at = r.below(dims.len() as u64 + 1) as usize;
        dims.insert(
            at,
            if r.chance(1, 2) {
                n1 + r.range(0, 2)
            } else {
                -n1 - 1
            },
        );
    } else if !dims.is_empty() && r.chance(1, 15) {
        let d = r.pick(&dims);
        dims.push(if r.chance(1, 2) {
            d
        } else if d < 0 {
            d + n1
        } else {
            d - n1
        });
    }
    Some(dims)
}

#[test]
fn reductions_match_reference() {
    let (seed, list) = cases("reductions_match_reference", 21);
    let mut rep = Report::new("reductions_match_reference", seed);
    for (k, mut r) in list {
        rep.checked += 1;
        let dtype = gen_dtype(&mut r);
        let op = r.pick(&["sum", "mean", "prod", "amax", "amin"]);
        let shape = gen_shape(&mut r);
        // Floating sums of small quarter values are exact in float64; integers may wrap.
        let wide = category(dtype) == 1 && r.chance(1, 3);
        let o = gen_operand(&mut r, dtype, &shape, true, wide);
        let dims = gen_dims(&mut r, shape.len());
        let keepdim = r.chance(1, 2);
        let desc = format!(
            "{op} dims {dims:?} keepdim {keepdim}\n{}",
            o.describe("input")
        );
        let mut buf = Buf::of(&o);
        let t = unsafe { buf.view(&o) }.expect("wrap");
        let got = reduce(reduce_code(op), &t, dims.as_deref(), keepdim);
        if let Some(why) =
            check_reduce_case(op, &o, &got, ref_reduce(op, &o, dims.as_deref(), keepdim))
        {
            rep.fail(k, format!("{desc}\n  => {why}"));
        }
    }
    rep.finish();
}

fn check_reduce_case(op: &str, o: &Opnd, got: &Result<T, Err>, want: Reduced) -> Option<String> {
    let (dtype, shape, expect) = match (got, want) {
        (Err(e), Err((status, msg))) => {
            return (e.status != status || e.msg != msg)
                .then(|| format!("got {e}, expected status {status} {msg:?}"));
        }
        (Ok(_), Err((_, msg))) => return Some(format!("succeeded, expected {msg:?}")),
        (Err(e), Ok(_)) => return Some(format!("failed: {e}")),
        (Ok(_), Ok(w)) => w,
    };
    let t = got.as_ref().expect("checked");
    if t.dtype() != dtype || t.shape() != shape {
        return Some(format!(
            "{} {:?}, expected {} {shape:?}",
            dtype_str(t.dtype()),
            t.shape(),
            dtype_str(dtype)
        ));
    }
    let values = t.values();
    let n = if expect.is_empty() {
        0
    } else {
        numel(&o.shape) as usize / expect.len()
    };
    for (i, (v, e)) in values.iter().zip(&expect).enumerate() {
        let bad = match *e {
            Expect::Exact(w, any_zero) => {
                let zeros = any_zero && v.as_f64() == 0.0 && w.as_f64() == 0.0;
                (!same_value(*v, w) && !zeros).then(|| format!("{v}, expected {w}"))
            }
            Expect::Bound(f, a) => within_bound(op, dtype, v.as_f64(), f, a, n),
            Expect::Unchecked => None,
        };
        if let Some(b) = bad {
            return Some(format!("element {i}: {b}"));
        }
    }
    None
}

/// `bc_binary_sum_to` gives exactly what `bc_binary` then `bc_tensor_sum_to_size` give: the same
/// status and message, or the same dtype, shape and bits (any NaN for a NaN), on any layouts,
/// for every operation of the elementwise table in turn (each must sum something somewhere).
#[test]
fn binary_sum_to_matches_two_calls() {
    let (seed, list) = cases("binary_sum_to_matches_two_calls", 22);
    let mut rep = Report::new("binary_sum_to_matches_two_calls", seed);
    let ops = BC_OP_COUNT as usize;
    let whole_run = list.len() >= 20 * ops;
    let mut summed = vec![0usize; ops];
    for (k, mut r) in list {
        rep.checked += 1;
        let full = gen_shape(&mut r);
        let (mut sa, mut sb) = (derive_shape(&mut r, &full), derive_shape(&mut r, &full));
        if r.chance(1, 20) {
            let which = if r.chance(1, 2) { &mut sa } else { &mut sb };
            corrupt_shape(&mut r, which);
        }
        let (da, db) = (gen_dtype(&mut r), gen_dtype(&mut r));
        let op = (k % ops) as i32;
        let wide = r.chance(1, 3);
        let (a, b) = (
            gen_operand(&mut r, da, &sa, true, wide),
            gen_operand(&mut r, db, &sb, true, wide),
        );
        let target = broadcast_shapes(&sa, &sb).unwrap_or(full.clone());
        let mut size = derive_shape(&mut r, &target);
        if r.chance(1, 20) {
            corrupt_shape(&mut r, &mut size);
        } else if !size.is_empty() && r.chance(1, 40) {
            size[0] = -1;
        }
        let desc = format!(
            "op {op} to size {size:?}\n{}\n{}",
            a.describe("a"),
            b.describe("b")
        );
        let (mut ba, mut bb) = (Buf::of(&a), Buf::of(&b));
        let ta = unsafe { ba.view(&a) }.expect("wrap a");
        let tb = unsafe { bb.view(&b) }.expect("wrap b");
        let fused = binary_sum_to(op, &ta, &tb, &size);
        let two = binary(op, &ta, &tb).and_then(|c| sum_to_size(&c, &size));
        let why = match (&fused, &two) {
            (Err(x), Err(y)) => (x != y).then(|| format!("fused {x}, two calls {y}")),
            (Ok(x), Ok(y)) => {
                summed[op as usize] += (x.shape() != numel_shape(&ta, &tb)) as usize;
                if x.dtype() != y.dtype() || x.shape() != y.shape() {
                    Some(format!(
                        "fused {} {:?}, two calls {} {:?}",
                        dtype_str(x.dtype()),
                        x.shape(),
                        dtype_str(y.dtype()),
                        y.shape()
                    ))
                } else {
                    compare(x.dtype(), &x.values(), &y.values(), 0)
                }
            }
            (Ok(_), Err(y)) => Some(format!("fused succeeded, two calls {y}")),
            (Err(x), Ok(_)) => Some(format!("fused {x}, two calls succeeded")),
        };
        if let Some(why) = why {
            rep.fail(k, format!("{desc}\n  => {why}"));
        }
    }
    println!(
        "binary_sum_to_matches_two_calls: cases that summed something, by BC_OP_* code: {summed:?}"
    );
    if whole_run {
        for (op, &n) in summed.iter().enumerate() {
            if n == 0 {
                rep.fail(op, format!("BC_OP_* {op}: no case summed anything"));
            }
        }
    }
    rep.finish();
}

/// The broadcast shape of two tensors' shapes (for counting cases that sum).
fn numel_shape(a: &T, b: &T) -> Vec<i64> {
    broadcast_shapes(&a.shape(), &b.shape()).unwrap_or_default()
}
