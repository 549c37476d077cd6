//! The performance suite under criterion, through the C ABI: S1-S12 allocating the
//! result (`bc_binary` + `bc_tensor_free`) and into an existing `out` (`bc_binary_out`; S9 is in
//! place), the L1/L2 per-call latencies, and the (n,1024)+(1024,) size sweep.
//!
//! Run: `cargo bench --bench suite` (all), `cargo bench --bench suite -- S8` (a filter).
//! Threads: `BC_BENCH_THREADS` (default 2). For the comparison with the C limit and NumPy in one
//! run, use `cargo run --release --bin bench-compare` instead.
use broadcast::ffi::*;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::ptr;
use std::time::Duration;

const F32: i32 = 8;
const F64: i32 = 9;
const I32: i32 = 4;
const N: i64 = 4096;

struct Case {
    name: &'static str,
    dtype: i32,
    a: &'static [i64],
    b: &'static [i64],
    op: i32,
    transpose_a: bool,
    in_place: bool,
}

const fn case(name: &'static str, dtype: i32, a: &'static [i64], b: &'static [i64]) -> Case {
    Case {
        name,
        dtype,
        a,
        b,
        op: BC_OP_ADD,
        transpose_a: false,
        in_place: false,
    }
}

const CASES: [Case; 14] = [
    case("S1", F32, &[N, N], &[N, N]),
    case("S2", F32, &[N, N], &[N]),
    case("S3", F32, &[N, N], &[N, 1]),
    case("S4", F32, &[N, 1], &[1, N]),
    case("S5", F32, &[N, N], &[]),
    case("S6", F32, &[32, 64, 56, 56], &[1, 64, 1, 1]),
    case("S7", F32, &[512, 3, 1024, 1], &[3, 1, 1]),
    Case {
        transpose_a: true,
        ..case("S8", F32, &[N, N], &[N, N])
    },
    Case {
        in_place: true,
        ..case("S9", F32, &[N, N], &[N])
    },
    case("S10", F64, &[N, N], &[N]),
    case("S11", I32, &[N, N], &[N]),
    Case {
        op: BC_OP_DIV,
        ..case("S12", F32, &[N, N], &[N])
    },
    case("L1", F32, &[3, 1], &[1, 3]),
    case("L2", F32, &[4], &[4]),
];

struct T(*mut bc_tensor);
impl Drop for T {
    fn drop(&mut self) {
        bc_tensor_free(self.0);
    }
}

fn ok(status: i32) {
    assert_eq!(status, 0, "libbroadcast call failed");
}

fn full(dtype: i32, shape: &[i64], value: f64) -> T {
    let mut t = ptr::null_mut();
    // SAFETY: shape valid for its length, t for one write.
    ok(unsafe { bc_tensor_full(dtype, shape.as_ptr(), shape.len(), value, &mut t) });
    T(t)
}

fn out_shape(a: &[i64], b: &[i64]) -> Vec<i64> {
    let nd = a.len().max(b.len());
    (0..nd)
        .map(|i| {
            let get = |s: &[i64]| {
                if i + s.len() >= nd {
                    s[i + s.len() - nd]
                } else {
                    1
                }
            };
            get(a).max(get(b))
        })
        .collect()
}

/// Inputs (a, b, out, keep-alive base of a transposed a).
fn inputs(c: &Case) -> (T, T, T, Option<T>) {
    let (a, base) = if c.transpose_a {
        let base = full(c.dtype, c.a, 1.5);
        let mut t = ptr::null_mut();
        // SAFETY: t for one write.
        ok(unsafe { bc_tensor_transpose(base.0, 0, 1, &mut t) });
        (T(t), Some(base))
    } else {
        (full(c.dtype, c.a, 1.5), None)
    };
    let b = full(c.dtype, c.b, 2.0);
    let out = full(c.dtype, &out_shape(c.a, c.b), 0.0);
    (a, b, out, base)
}

fn bytes(c: &Case) -> u64 {
    let n = |s: &[i64]| s.iter().product::<i64>() as u64;
    let size = if c.dtype == F64 { 8 } else { 4 };
    let total = if c.in_place {
        2 * n(c.a) + n(c.b)
    } else {
        n(c.a) + n(c.b) + n(&out_shape(c.a, c.b))
    };
    total * size
}

fn suite(cr: &mut Criterion) {
    let threads = std::env::var("BC_BENCH_THREADS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2);
    assert_eq!(bc_set_num_threads(threads), BC_OK);
    for c in &CASES {
        let (a, b, out, _base) = inputs(c);
        let mut g = cr.benchmark_group(c.name);
        g.throughput(Throughput::Bytes(bytes(c)));
        if c.name.starts_with('S') {
            g.sample_size(20).warm_up_time(Duration::from_millis(500));
        }
        if c.in_place {
            g.bench_function("inplace", |bn| {
                bn.iter(|| ok(bc_binary_inplace(c.op, a.0, b.0)))
            });
        } else {
            g.bench_function("alloc", |bn| {
                bn.iter(|| {
                    let mut r = ptr::null_mut();
                    // SAFETY: r for one write.
                    ok(unsafe { bc_binary(c.op, a.0, b.0, &mut r) });
                    bc_tensor_free(r);
                })
            });
            g.bench_function("out", |bn| {
                bn.iter(|| ok(bc_binary_out(c.op, a.0, b.0, out.0)))
            });
        }
        g.finish();
    }
}

fn sweep(cr: &mut Criterion) {
    let mut g = cr.benchmark_group("sweep");
    g.sample_size(10).warm_up_time(Duration::from_millis(300));
    for target in [1e3, 3e3, 1e4, 3e4, 1e5, 3e5, 1e6, 3e6, 1e7, 3e7, 1e8] {
        let rows = ((target / 1024.0 + 0.5) as i64).max(1);
        let elems = rows * 1024;
        let a = full(F32, &[rows, 1024], 1.5);
        let b = full(F32, &[1024], 2.0);
        let out = full(F32, &[rows, 1024], 0.0);
        g.throughput(Throughput::Bytes(((2 * elems + 1024) * 4) as u64));
        g.bench_with_input(BenchmarkId::new("alloc", elems), &elems, |bn, _| {
            bn.iter(|| {
                let mut r = ptr::null_mut();
                // SAFETY: r for one write.
                ok(unsafe { bc_add(a.0, b.0, &mut r) });
                bc_tensor_free(r);
            })
        });
        g.bench_with_input(BenchmarkId::new("out", elems), &elems, |bn, _| {
            bn.iter(|| ok(bc_add_out(a.0, b.0, out.0)))
        });
    }
    g.finish();
}

criterion_group!(benches, suite, sweep);
criterion_main!(benches);
