//! The performance suite's cases, written once: the criterion benches (`benches/suite.rs`) and
//! bench-compare (`tools/bench-compare`) build, call and size them from here. S1-S12 are the
//! README's suite, P1 a permuted operand, L1/L2 the per-call latencies, S2.* the further
//! memory-bound operations on S2's shapes.
use crate::model::*;
use crate::{f32_to_bf16_bits, f32_to_f16_bits, NAMED_OPS, T};
use broadcast::ffi::*;
use std::ptr;

/// One case of the suite.
#[derive(Debug, Clone, Copy)]
pub struct Case {
    pub name: &'static str,
    pub dtype: i32,
    pub a: &'static [i64],
    pub b: &'static [i64],
    pub op: i32,
    pub kind: Kind,
    pub what: &'static str,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Plain,
    /// `a` is the transpose of a row-major tensor of shape `a` reversed.
    TransposeA,
    /// `a` is `permute(2, 0, 1)` of a row-major tensor of shape `a` (3-d); `out` likewise.
    PermuteA,
    /// `a op= b`.
    InPlace,
}

const N: i64 = 4096;
pub const CASES: [Case; 33] = [
    case(
        "S1",
        F32,
        &[N, N],
        &[N, N],
        BC_OP_ADD,
        Kind::Plain,
        "(4096,4096)+(4096,4096)",
    ),
    case(
        "S2",
        F32,
        &[N, N],
        &[N],
        BC_OP_ADD,
        Kind::Plain,
        "(4096,4096)+(4096,)",
    ),
    case(
        "S3",
        F32,
        &[N, N],
        &[N, 1],
        BC_OP_ADD,
        Kind::Plain,
        "(4096,4096)+(4096,1)",
    ),
    case(
        "S4",
        F32,
        &[N, 1],
        &[1, N],
        BC_OP_ADD,
        Kind::Plain,
        "(4096,1)+(1,4096)",
    ),
    case(
        "S5",
        F32,
        &[N, N],
        &[],
        BC_OP_ADD,
        Kind::Plain,
        "(4096,4096)+0-d",
    ),
    case(
        "S6",
        F32,
        &[32, 64, 56, 56],
        &[1, 64, 1, 1],
        BC_OP_ADD,
        Kind::Plain,
        "(32,64,56,56)+(1,64,1,1)",
    ),
    case(
        "S7",
        F32,
        &[512, 3, 1024, 1],
        &[3, 1, 1],
        BC_OP_ADD,
        Kind::Plain,
        "(512,3,1024,1)+(3,1,1)",
    ),
    case(
        "S8",
        F32,
        &[N, N],
        &[N, N],
        BC_OP_ADD,
        Kind::TransposeA,
        "T(4096,4096)+(4096,4096)",
    ),
    case(
        "S9",
        F32,
        &[N, N],
        &[N],
        BC_OP_ADD,
        Kind::InPlace,
        "a(4096,4096)+=(4096,)",
    ),
    case(
        "S10",
        F64,
        &[N, N],
        &[N],
        BC_OP_ADD,
        Kind::Plain,
        "S2 in float64",
    ),
    case(
        "S11",
        I32,
        &[N, N],
        &[N],
        BC_OP_ADD,
        Kind::Plain,
        "S2 in int32",
    ),
    case(
        "S12",
        F32,
        &[N, N],
        &[N],
        BC_OP_DIV,
        Kind::Plain,
        "S2 as a/b",
    ),
    case(
        "P1",
        F32,
        &[64, 256, 256],
        &[256, 1, 1],
        BC_OP_ADD,
        Kind::PermuteA,
        "x.permute(2,0,1)+(256,1,1), x (64,256,256)",
    ),
    case(
        "L1",
        F32,
        &[3, 1],
        &[1, 3],
        BC_OP_ADD,
        Kind::Plain,
        "(3,1)+(1,3)",
    ),
    case("L2", F32, &[4], &[4], BC_OP_ADD, Kind::Plain, "(4,)+(4,)"),
    // The further memory-bound operations on S2's shapes.
    s2("S2.eq", F32, BC_OP_EQ, "S2: a == b"),
    s2("S2.ne", F32, BC_OP_NE, "S2: a != b"),
    s2("S2.lt", F32, BC_OP_LT, "S2: a < b"),
    s2("S2.le", F32, BC_OP_LE, "S2: a <= b"),
    s2("S2.gt", F32, BC_OP_GT, "S2: a > b"),
    s2("S2.ge", F32, BC_OP_GE, "S2: a >= b"),
    s2("S2.max", F32, BC_OP_MAXIMUM, "S2: maximum"),
    s2("S2.min", F32, BC_OP_MINIMUM, "S2: minimum"),
    s2("S2.land", F32, BC_OP_LOGICAL_AND, "S2: a && b"),
    s2("S2.lor", F32, BC_OP_LOGICAL_OR, "S2: logical_or"),
    s2("S2.lxor", F32, BC_OP_LOGICAL_XOR, "S2: logical_xor"),
    s2("S2.and", I32, BC_OP_BITWISE_AND, "S2 int32: a & b"),
    s2("S2.or", I32, BC_OP_BITWISE_OR, "S2 int32: bitwise_or"),
    s2("S2.xor", I32, BC_OP_BITWISE_XOR, "S2 int32: a ^ b"),
    s2("S2.shl", I32, BC_OP_BITWISE_LEFT_SHIFT, "S2 int32: a << b"),
    s2("S2.shr", I32, BC_OP_BITWISE_RIGHT_SHIFT, "S2 int32: a >> b"),
    s2("S2.f16", F16, BC_OP_ADD, "S2 in float16"),
    s2("S2.bf16", BF16, BC_OP_ADD, "S2 in bfloat16"),
];

/// A case of S2's shapes, (4096,4096) op (4096,).
const fn s2(name: &'static str, dtype: i32, op: i32, what: &'static str) -> Case {
    case(name, dtype, &[N, N], &[N], op, Kind::Plain, what)
}

const fn case(
    name: &'static str,
    dtype: i32,
    a: &'static [i64],
    b: &'static [i64],
    op: i32,
    kind: Kind,
    what: &'static str,
) -> Case {
    Case {
        name,
        dtype,
        a,
        b,
        op,
        kind,
        what,
    }
}

pub fn find(name: &str) -> Option<Case> {
    CASES.iter().copied().find(|c| c.name == name)
}

/// The result's dtype: bool for comparisons and logical operations (the operation table's
/// `bool_result`), else the inputs'.
pub fn out_dtype(c: &Case) -> i32 {
    if NAMED_OPS[c.op as usize].bool_result {
        BOOL
    } else {
        c.dtype
    }
}

pub fn numel(shape: &[i64]) -> usize {
    shape.iter().product::<i64>() as usize
}

/// The shape of operand `a` as the operation sees it.
pub fn a_shape(c: &Case) -> Vec<i64> {
    match c.kind {
        Kind::PermuteA => vec![c.a[2], c.a[0], c.a[1]],
        _ => c.a.to_vec(),
    }
}

/// The result's shape.
pub fn case_shape(c: &Case) -> Vec<i64> {
    out_shape(&a_shape(c), c.b)
}

/// The broadcast shape of two shapes (they are known to broadcast).
pub fn out_shape(a: &[i64], b: &[i64]) -> Vec<i64> {
    broadcast_shapes(a, b).expect("a case's shapes broadcast")
}

/// Bytes per call, STREAM convention: each distinct input element once plus each output element
/// (in place: the target read and written, plus the other input).
pub fn case_bytes(c: &Case) -> f64 {
    let (na, nb) = (numel(c.a), numel(c.b));
    let no = numel(&case_shape(c));
    let n = if c.kind == Kind::InPlace {
        (2 * na + nb) * itemsize(c.dtype)
    } else {
        (na + nb) * itemsize(c.dtype) + no * itemsize(out_dtype(c))
    };
    n as f64
}

/// The values every peer gets: element i of an input with `seed`.
pub fn value(dtype: i32, i: usize, seed: usize) -> f64 {
    if dtype == I32 {
        ((i * 7 + seed) % 97 + 1) as f64
    } else {
        ((i * 7 + seed) % 97) as f64 * 0.25 + 1.0
    }
}

fn filled_bytes(dtype: i32, n: usize, seed: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(n * itemsize(dtype));
    for i in 0..n {
        let v = value(dtype, i, seed);
        match dtype {
            F64 => out.extend_from_slice(&v.to_le_bytes()),
            I32 => out.extend_from_slice(&(v as i32).to_le_bytes()),
            // The values are small multiples of 1/4: exact in float32 and in both 16-bit types.
            F16 => out.extend_from_slice(&f32_to_f16_bits(v as f32).to_le_bytes()),
            BF16 => out.extend_from_slice(&f32_to_bf16_bits(v as f32).to_le_bytes()),
            _ => out.extend_from_slice(&(v as f32).to_le_bytes()),
        }
    }
    out
}

/// Panics, with the library's message, unless `status` is `BC_OK`.
pub fn check(status: i32, what: &str) {
    if status != 0 {
        let mut buf = vec![0u8; 512];
        // SAFETY: buf is valid for its length.
        let n = unsafe { bc_last_error_message(buf.as_mut_ptr().cast(), buf.len()) };
        buf.truncate(n.min(511));
        panic!("{what}: status {status}: {}", String::from_utf8_lossy(&buf));
    }
}

pub fn from_data(dtype: i32, shape: &[i64], seed: usize) -> T {
    let bytes = filled_bytes(dtype, numel(shape), seed);
    let mut t = ptr::null_mut();
    // SAFETY: shape and bytes are valid for their lengths; t for one write.
    let s = unsafe {
        bc_tensor_from_data(
            dtype,
            shape.as_ptr(),
            shape.len(),
            bytes.as_ptr().cast(),
            bytes.len(),
            &mut t,
        )
    };
    check(s, "bc_tensor_from_data");
    T(t)
}

/// A tensor whose every element has been written (so its pages are touched).
pub fn touched(dtype: i32, shape: &[i64]) -> T {
    let mut t = ptr::null_mut();
    // SAFETY: shape is valid for its length; t for one write.
    let s = unsafe { bc_tensor_full(dtype, shape.as_ptr(), shape.len(), 0.0, &mut t) };
    check(s, "bc_tensor_full");
    T(t)
}

/// The inputs of a case, and an `out` tensor of the result's shape.
pub struct Inputs {
    pub case: Case,
    pub a: T,
    pub b: T,
    pub out: T,
    /// Keeps the bases of permuted operands alive.
    _base: [Option<T>; 2],
}

pub fn inputs(c: &Case) -> Inputs {
    let (a, base) = match c.kind {
        Kind::TransposeA => {
            let rev: Vec<i64> = c.a.iter().rev().copied().collect();
            let base = from_data(c.dtype, &rev, 1);
            (permuted(&base, &[1, 0]), Some(base))
        }
        Kind::PermuteA => {
            let base = from_data(c.dtype, c.a, 1);
            (permuted(&base, &[2, 0, 1]), Some(base))
        }
        _ => (from_data(c.dtype, c.a, 1), None),
    };
    let b = from_data(c.dtype, c.b, 2);
    // An `out` in the layout the operands share, as `empty_like` gives it.
    let (out, out_base) = match c.kind {
        Kind::PermuteA => {
            let base = touched(out_dtype(c), c.a);
            (permuted(&base, &[2, 0, 1]), Some(base))
        }
        _ => (touched(out_dtype(c), &case_shape(c)), None),
    };
    Inputs {
        case: *c,
        a,
        b,
        out,
        _base: [base, out_base],
    }
}

/// A permuted view of `t`.
fn permuted(t: &T, dims: &[i64]) -> T {
    let mut v = ptr::null_mut();
    // SAFETY: dims is valid for its length; v for one write.
    let s = unsafe { bc_tensor_permute(t.0, dims.as_ptr(), dims.len(), &mut v) };
    check(s, "bc_tensor_permute");
    T(v)
}

impl Inputs {
    /// One call of the case: a new result (freed again) for `alloc`, into `out` for `out`; in
    /// place for S9 either way.
    #[inline]
    pub fn call(&self, alloc: bool) {
        let c = &self.case;
        if c.kind == Kind::InPlace {
            check(
                bc_binary_inplace(c.op, self.a.0, self.b.0),
                "bc_binary_inplace",
            );
        } else if alloc {
            let mut r = ptr::null_mut();
            // SAFETY: r is valid for one write.
            check(
                unsafe { bc_binary(c.op, self.a.0, self.b.0, &mut r) },
                "bc_binary",
            );
            bc_tensor_free(r);
        } else {
            check(
                bc_binary_out(c.op, self.a.0, self.b.0, self.out.0),
                "bc_binary_out",
            );
        }
    }
}
