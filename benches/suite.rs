//! The performance suite under criterion, through the C ABI: every case of the suite's one table
//! (`testkit/src/cases.rs`, which bench-compare times too): S1-S12, P1, the S2.* operations
//! allocating the result (`bc_binary` + `bc_tensor_free`) and into an existing `out`
//! (`bc_binary_out`; S9 is in place), the L1/L2 per-call latencies, and the (n,1024)+(1024,) size
//! sweep.
//!
//! Run: `cargo bench --bench suite` (all), `cargo bench --bench suite -- S8` (a filter).
//! Threads: `BC_BENCH_THREADS` (default 2). For the comparison with the C limit and NumPy in one
//! run, use `cargo run --release -p bench-compare` instead.
use broadcast::ffi::*;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::time::Duration;
use testkit::cases::{case_bytes, check, inputs, Kind, CASES};
use testkit::{F32, T};

fn suite(cr: &mut Criterion) {
    let threads = std::env::var("BC_BENCH_THREADS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2);
    assert_eq!(bc_set_num_threads(threads), BC_OK);
    for c in &CASES {
        let inp = inputs(c);
        let mut g = cr.benchmark_group(c.name);
        g.throughput(Throughput::Bytes(case_bytes(c) as u64));
        if !c.name.starts_with('L') {
            g.sample_size(20).warm_up_time(Duration::from_millis(500));
        }
        if c.kind == Kind::InPlace {
            g.bench_function("inplace", |bn| bn.iter(|| inp.call(false)));
        } else {
            g.bench_function("alloc", |bn| bn.iter(|| inp.call(true)));
            g.bench_function("out", |bn| bn.iter(|| inp.call(false)));
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
        let full = |shape: &[i64], v: f64| T::full(F32, shape, v).expect("bc_tensor_full");
        let (a, b, out) = (
            full(&[rows, 1024], 1.5),
            full(&[1024], 2.0),
            full(&[rows, 1024], 0.0),
        );
        g.throughput(Throughput::Bytes(((2 * elems + 1024) * 4) as u64));
        g.bench_with_input(BenchmarkId::new("alloc", elems), &elems, |bn, _| {
            bn.iter(|| {
                let mut r = std::ptr::null_mut();
                // SAFETY: r for one write.
                check(unsafe { bc_add(a.0, b.0, &mut r) }, "bc_add");
                bc_tensor_free(r);
            })
        });
        g.bench_with_input(BenchmarkId::new("out", elems), &elems, |bn, _| {
            bn.iter(|| check(bc_add_out(a.0, b.0, out.0), "bc_add_out"))
        });
    }
    g.finish();
}

criterion_group!(benches, suite, sweep);
criterion_main!(benches);
