//! libbroadcast's side: the suite's cases built and timed through the C ABI (`bc_*`), a check of
//! every case's values, and the allocation check.
use broadcast::ffi::*;
use std::ptr;

pub const F32: i32 = 8;
pub const F64: i32 = 9;
pub const I32: i32 = 4;
pub const BOOL: i32 = 0;
pub const F16: i32 = 6;
pub const BF16: i32 = 7;

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

pub fn itemsize(dtype: i32) -> usize {
    match dtype {
        F64 => 8,
        BOOL => 1,
        F16 | BF16 => 2,
        _ => 4,
    }
}

/// The result's dtype: bool for comparisons and logical operations, else the inputs'.
pub fn out_dtype(c: &Case) -> i32 {
    match c.op {
        BC_OP_EQ..=BC_OP_GE | BC_OP_LOGICAL_AND..=BC_OP_LOGICAL_XOR => BOOL,
        _ => c.dtype,
    }
}

fn numel(shape: &[i64]) -> usize {
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
    let nd = a.len().max(b.len());
    (0..nd)
        .map(|i| {
            let da = if i + a.len() >= nd {
                a[i + a.len() - nd]
            } else {
                1
            };
            let db = if i + b.len() >= nd {
                b[i + b.len() - nd]
            } else {
                1
            };
            da.max(db)
        })
        .collect()
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
            F16 => out.extend_from_slice(&half::f16::from_f64(v).to_le_bytes()),
            BF16 => out.extend_from_slice(&half::bf16::from_f64(v).to_le_bytes()),
            _ => out.extend_from_slice(&(v as f32).to_le_bytes()),
        }
    }
    out
}

/// An owned tensor handle, freed on drop.
pub struct T(pub *mut bc_tensor);

impl Drop for T {
    fn drop(&mut self) {
        bc_tensor_free(self.0);
    }
}

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

/// Median per-call milliseconds of `reps` samples; a sample is a batch of K calls lasting at least
/// `min_batch_ms` (K = 1 for slow calls), after at least `warm` warm-up samples lasting at least
/// `warm_ms` in all (as limit.c and NumPy).
pub fn measure(
    mut f: impl FnMut(),
    warm: usize,
    warm_ms: f64,
    reps: usize,
    min_batch_ms: f64,
) -> f64 {
    use std::time::Instant;
    let mut k: u64 = 1;
    loop {
        let t0 = Instant::now();
        for _ in 0..k {
            f();
        }
        let dt = t0.elapsed().as_secs_f64() * 1e3;
        if dt >= min_batch_ms || k >= 1 << 30 {
            break;
        }
        let nk = if dt <= 0.0 {
            k * 16
        } else {
            ((k as f64 * (min_batch_ms / dt) * 1.2) as u64 + 1).min(k * 16)
        };
        k = nk.max(k + 1);
    }
    let w0 = Instant::now();
    let mut w = 0;
    while w < warm || w0.elapsed().as_secs_f64() * 1e3 < warm_ms {
        for _ in 0..k {
            f();
        }
        w += 1;
    }
    let mut s: Vec<f64> = (0..reps)
        .map(|_| {
            let t0 = Instant::now();
            for _ in 0..k {
                f();
            }
            t0.elapsed().as_secs_f64() * 1e3 / k as f64
        })
        .collect();
    median(&mut s)
}

pub fn median(s: &mut [f64]) -> f64 {
    s.sort_by(|x, y| x.total_cmp(y));
    let n = s.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        s[n / 2]
    } else {
        0.5 * (s[n / 2 - 1] + s[n / 2])
    }
}

/// Times one case: median ms per call.
pub fn time_case(inp: &Inputs, alloc: bool, reps: usize, warm_ms: f64) -> f64 {
    let min_batch = if numel(&case_shape(&inp.case)) < 100 {
        2.0
    } else {
        1.0
    };
    measure(|| inp.call(alloc), 2, warm_ms, reps, min_batch)
}

/// The sweep's inputs: (rows, 1024) + (1024,).
pub fn sweep_inputs(elems: usize) -> Inputs {
    let rows = (elems / 1024).max(1) as i64;
    let c = Case {
        name: "SW",
        dtype: F32,
        a: Box::leak(Box::new([rows, 1024])),
        b: &[1024],
        op: BC_OP_ADD,
        kind: Kind::Plain,
        what: "(n,1024)+(1024,)",
    };
    inputs(&c)
}

pub fn time_sweep(inp: &Inputs, alloc: bool, reps: usize, warm_ms: f64) -> f64 {
    measure(|| inp.call(alloc), 2, warm_ms, reps, 2.0)
}

/// The concurrent-callers case: each caller thread computes this into its own `out`.
pub const CONCURRENT: Case = Case {
    name: "CC",
    dtype: F32,
    a: &[100, 1000],
    b: &[1000],
    op: BC_OP_ADD,
    kind: Kind::Plain,
    what: "(100,1000)+(1000,) into out",
};

/// `callers` threads each calling [`CONCURRENT`] at once, the pool set to `pool` threads (then
/// back to `threads`): milliseconds per call over all callers (the median of `reps` windows of
/// 20 ms, every caller warmed up for `warm_ms` first).
pub fn time_concurrent(
    callers: usize,
    pool: usize,
    threads: usize,
    reps: usize,
    warm_ms: f64,
) -> f64 {
    use std::sync::Barrier;
    use std::time::{Duration, Instant};
    const WINDOW: Duration = Duration::from_millis(20);
    check(bc_set_num_threads(pool), "bc_set_num_threads");
    let start = Barrier::new(callers);
    let counts: Vec<Vec<u64>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..callers)
            .map(|_| {
                scope.spawn(|| {
                    let inp = inputs(&CONCURRENT);
                    let warm = Instant::now();
                    while warm.elapsed().as_secs_f64() * 1e3 < warm_ms {
                        inp.call(false);
                    }
                    (0..reps)
                        .map(|_| {
                            start.wait();
                            let t0 = Instant::now();
                            let mut n = 0;
                            while t0.elapsed() < WINDOW {
                                inp.call(false);
                                n += 1;
                            }
                            n
                        })
                        .collect()
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    check(bc_set_num_threads(threads), "bc_set_num_threads");
    let mut per_call: Vec<f64> = (0..reps)
        .map(|r| {
            WINDOW.as_secs_f64() * 1e3 / counts.iter().map(|c| c[r]).sum::<u64>().max(1) as f64
        })
        .collect();
    per_call.sort_by(f64::total_cmp);
    per_call[reps / 2]
}

/// Reads a tensor's elements as f64.
fn values(t: &T, dtype: i32, n: usize) -> Vec<f64> {
    let mut buf = vec![0u8; n * itemsize(dtype)];
    // SAFETY: buf is valid for its length.
    check(
        unsafe { bc_tensor_copy_to(t.0, buf.as_mut_ptr().cast(), buf.len()) },
        "bc_tensor_copy_to",
    );
    buf.chunks_exact(itemsize(dtype))
        .map(|b| match dtype {
            F64 => f64::from_le_bytes(b.try_into().unwrap()),
            I32 => i32::from_le_bytes(b.try_into().unwrap()) as f64,
            BOOL => b[0] as f64,
            F16 => half::f16::from_le_bytes(b.try_into().unwrap()).to_f64(),
            BF16 => half::bf16::from_le_bytes(b.try_into().unwrap()).to_f64(),
            _ => f32::from_le_bytes(b.try_into().unwrap()) as f64,
        })
        .collect()
}

/// Checks the library's result of a case (alloc and out) against a direct computation; returns
/// an error text on the first wrong element.
pub fn verify(c: &Case) -> Result<(), String> {
    let inp = inputs(c);
    let shape = case_shape(c);
    let n = numel(&shape);
    let nd = shape.len();
    // Row-major index -> the elements of a and b it reads.
    let index = |k: usize, of: &[i64]| -> usize {
        let mut rem = k;
        let mut off = 0usize;
        let mut stride = 1usize;
        for d in (0..nd).rev() {
            let i = rem % shape[d] as usize;
            rem /= shape[d] as usize;
            let od = d as isize - (nd as isize - of.len() as isize);
            if od >= 0 {
                let size = of[od as usize] as usize;
                if size != 1 {
                    off += i * stride;
                }
                stride *= size;
            }
        }
        off
    };
    let a_at = |k: usize| -> f64 {
        match c.kind {
            Kind::TransposeA => {
                let (i, j) = (k / c.a[1] as usize, k % c.a[1] as usize);
                value(c.dtype, j * c.a[0] as usize + i, 1)
            }
            Kind::PermuteA => {
                // Element (i, j, l) of the view is element (j, l, i) of the base.
                let [d0, d1, d2] = [c.a[0], c.a[1], c.a[2]].map(|d| d as usize);
                let (i, j, l) = (k / (d0 * d1), k / d1 % d0, k % d1);
                value(c.dtype, (j * d1 + l) * d2 + i, 1)
            }
            _ => value(c.dtype, index(k, c.a), 1),
        }
    };
    let expect = |k: usize| -> f64 {
        let (x, y) = (a_at(k), value(c.dtype, index(k, c.b), 2));
        let (xi, yi) = (x as i32, y as i32);
        let truth = |t: bool| t as u8 as f64;
        match (c.dtype, c.op) {
            (F64, _) => x + y,
            (I32, BC_OP_BITWISE_AND) => (xi & yi) as f64,
            (I32, BC_OP_BITWISE_OR) => (xi | yi) as f64,
            (I32, BC_OP_BITWISE_XOR) => (xi ^ yi) as f64,
            (I32, BC_OP_BITWISE_LEFT_SHIFT) if (0..32).contains(&yi) => (xi << yi) as f64,
            (I32, BC_OP_BITWISE_LEFT_SHIFT) => 0.0,
            (I32, BC_OP_BITWISE_RIGHT_SHIFT) if (0..32).contains(&yi) => (xi >> yi) as f64,
            (I32, BC_OP_BITWISE_RIGHT_SHIFT) => (xi >> 31) as f64,
            (I32, _) => xi.wrapping_add(yi) as f64,
            // In float32, rounded once (x and y are exact in both 16-bit types).
            (F16, _) => half::f16::from_f32(x as f32 + y as f32).to_f64(),
            (BF16, _) => half::bf16::from_f32(x as f32 + y as f32).to_f64(),
            (_, BC_OP_DIV) => (x as f32 / y as f32) as f64,
            (_, BC_OP_EQ) => truth(x == y),
            (_, BC_OP_NE) => truth(x != y),
            (_, BC_OP_LT) => truth(x < y),
            (_, BC_OP_LE) => truth(x <= y),
            (_, BC_OP_GT) => truth(x > y),
            (_, BC_OP_GE) => truth(x >= y),
            (_, BC_OP_MAXIMUM) => x.max(y),
            (_, BC_OP_MINIMUM) => x.min(y),
            (_, BC_OP_LOGICAL_AND) => truth(x != 0.0 && y != 0.0),
            (_, BC_OP_LOGICAL_OR) => truth(x != 0.0 || y != 0.0),
            (_, BC_OP_LOGICAL_XOR) => truth((x != 0.0) != (y != 0.0)),
            _ => (x as f32 + y as f32) as f64,
        }
    };
    let mut results = Vec::new();
    let od = out_dtype(c);
    if c.kind == Kind::InPlace {
        inp.call(true);
        results.push(("in place", values(&inp.a, c.dtype, n)));
    } else {
        let mut r = ptr::null_mut();
        // SAFETY: r is valid for one write.
        check(
            unsafe { bc_binary(c.op, inp.a.0, inp.b.0, &mut r) },
            "bc_binary",
        );
        let r = T(r);
        results.push(("alloc", values(&r, od, n)));
        inp.call(false);
        results.push(("out", values(&inp.out, od, n)));
    }
    for (what, got) in results {
        for (k, &g) in got.iter().enumerate() {
            let e = expect(k);
            if g.to_bits() != e.to_bits() {
                return Err(format!(
                    "{} {what}: element {k} is {g}, expected {e}",
                    c.name
                ));
            }
        }
    }
    Ok(())
}
