//! Why a result a chained call reads at once is written with ordinary stores:
//! `(n,1024)+(1024,)` into `out`, alone and then followed by that result `+ (1024,)` into a
//! second `out`, with results streamed (`Streaming::Always`), kept in the cache
//! (`Streaming::Never`) or as the library's default decides (`Streaming::Auto`), for results of
//! 4, 6 and 12 MB (the sweep's 1e6, S7's size, the sweep's 3e6).
//!
//! On a 2-CPU Xeon virtual machine whose sysfs reports a 300 MiB L3 (2026-11-28, criterion
//! medians): one call alone takes 0.75-0.77x the time streamed, which is why the C limit's best
//! variant streams; the chained pair takes 1.26x (4 MB), 1.10x (6 MB) and 1.08x (12 MB) the
//! time streamed.
//!
//! Run: `cargo bench --bench chain` (about a minute).
use broadcast::engine::stream::{self, Streaming};
use broadcast::ffi::*;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use std::ptr;
use std::time::Duration;

fn filled(shape: &[i64]) -> *mut bc_tensor {
    let mut out = ptr::null_mut();
    // SAFETY: valid pointers.
    let st =
        unsafe { bc_tensor_full(BC_DTYPE_FLOAT32, shape.as_ptr(), shape.len(), 1.5, &mut out) };
    assert_eq!(st, BC_OK);
    out
}

fn chain(c: &mut Criterion) {
    let mut g = c.benchmark_group("chain");
    g.measurement_time(Duration::from_secs(2))
        .warm_up_time(Duration::from_millis(500));
    for rows in [1000i64, 1536, 3000] {
        let (a, b) = (filled(&[rows, 1024]), filled(&[1024]));
        let (o, o2) = (filled(&[rows, 1024]), filled(&[rows, 1024]));
        for (stores, mode) in [
            ("cached", Streaming::Never),
            ("streamed", Streaming::Always),
            ("auto", Streaming::Auto),
        ] {
            stream::set_streaming(mode);
            let mb = rows * 4096 / 1_000_000;
            g.bench_function(
                BenchmarkId::new(format!("one call, {stores}"), mb),
                |bench| bench.iter(|| assert_eq!(bc_binary_out(BC_OP_ADD, a, b, o), BC_OK)),
            );
            g.bench_function(
                BenchmarkId::new(format!("two calls, {stores}"), mb),
                |bench| {
                    bench.iter(|| {
                        assert_eq!(bc_binary_out(BC_OP_ADD, a, b, o), BC_OK);
                        assert_eq!(bc_binary_out(BC_OP_ADD, o, b, o2), BC_OK);
                    })
                },
            );
        }
        stream::set_streaming(Streaming::Auto);
        for t in [a, b, o, o2] {
            bc_tensor_free(t);
        }
    }
    g.finish();
}

criterion_group!(benches, chain);
criterion_main!(benches);
