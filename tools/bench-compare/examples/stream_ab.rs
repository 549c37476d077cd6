//! Streaming stores on or off, side by side: each case timed with the library's streaming
//! threshold at A and at B bytes, alternating (A, B, B, A, ...), medians of rounds and of the
//! same-round ratios B ÷ A. `cargo run --release -p bench-compare --example stream_ab -- A_MIB B_MIB [rounds]`
//! (a threshold of 0 MiB means "never stream"; a fourth argument picks cases by name prefix,
//! e.g. "E1,SW 16"). `STREAM_AB_THREADS=1` runs the library on one thread and times in that
//! thread's CPU time, which a loaded machine disturbs less.
use broadcast::engine::{parallel, stream};
use broadcast::ffi::*;
use std::ptr;
use std::time::Instant;

struct T(*mut bc_tensor);
impl Drop for T {
    fn drop(&mut self) {
        bc_tensor_free(self.0);
    }
}

fn ok(s: i32) {
    assert_eq!(s, BC_OK, "status {s}");
}

fn filled(shape: &[i64], seed: usize) -> T {
    let n: i64 = shape.iter().product();
    let v: Vec<f32> = (0..n as usize)
        .map(|i| ((i * 7 + seed) % 97) as f32 * 0.25 + 1.0)
        .collect();
    let mut t = ptr::null_mut();
    // SAFETY: shape and v valid for their lengths; t for one write.
    ok(unsafe {
        bc_tensor_from_data(
            BC_DTYPE_FLOAT32,
            shape.as_ptr(),
            shape.len(),
            v.as_ptr().cast(),
            v.len() * 4,
            &mut t,
        )
    });
    T(t)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Seconds of this thread's CPU time (with `STREAM_AB_THREADS=1`, timing in CPU time leaves out
/// the time the thread waits for a core on a loaded machine).
fn cpu_seconds() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is valid for one write.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// Median ms per call of 7 batches of `k` calls after a warm-up of ~150 ms (in CPU time with one
/// thread).
fn time(f: &mut dyn FnMut()) -> f64 {
    if std::env::var("STREAM_AB_THREADS").as_deref() == Ok("1") {
        let t0 = cpu_seconds();
        f();
        let k = ((2e-3 / (cpu_seconds() - t0).max(1e-9)) as usize).clamp(1, 1 << 20);
        let w = cpu_seconds();
        while cpu_seconds() - w < 0.15 {
            f();
        }
        let mut s: Vec<f64> = (0..7)
            .map(|_| {
                let t = cpu_seconds();
                for _ in 0..k {
                    f();
                }
                (cpu_seconds() - t) * 1e3 / k as f64
            })
            .collect();
        return median(&mut s);
    }
    let t0 = Instant::now();
    f();
    let once = t0.elapsed().as_secs_f64() * 1e3;
    let k = ((2.0 / once.max(1e-6)) as usize).clamp(1, 1 << 20);
    let w = Instant::now();
    while w.elapsed().as_secs_f64() < 0.15 {
        f();
    }
    let mut s: Vec<f64> = (0..7)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..k {
                f();
            }
            t.elapsed().as_secs_f64() * 1e3 / k as f64
        })
        .collect();
    median(&mut s)
}

/// A streaming policy to compare: `auto` (the library's default), `never`, `always`, or a number
/// of MiB: every result of at least that size streams, whatever the cache (the former rule).
#[derive(Clone, Copy, PartialEq)]
enum Policy {
    Auto,
    Never,
    Always,
    Threshold(usize),
}

impl Policy {
    fn parse(s: &str) -> Policy {
        match s {
            "auto" => Policy::Auto,
            "never" => Policy::Never,
            "always" => Policy::Always,
            _ => match s.parse::<f64>().expect("auto, never, always or MiB") {
                x if x <= 0.0 => Policy::Never,
                x => Policy::Threshold((x * (1 << 20) as f64) as usize),
            },
        }
    }

    fn set(self, cache: usize) {
        let (mode, threshold, cache) = match self {
            Policy::Auto => (stream::Streaming::Auto, 0, cache),
            Policy::Never => (stream::Streaming::Never, 0, cache),
            Policy::Always => (stream::Streaming::Always, 0, cache),
            Policy::Threshold(t) => (stream::Streaming::Auto, t, 1),
        };
        stream::set_streaming(mode);
        parallel::set_stream_threshold(threshold);
        stream::set_effective_cache(cache);
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let t0 = Instant::now();
    let cache = stream::effective_cache();
    println!(
        "effective cache {} MiB (measured in {:.1} ms)",
        cache >> 20,
        t0.elapsed().as_secs_f64() * 1e3
    );
    let (a_thr, b_thr) = (Policy::parse(&args[0]), Policy::parse(&args[1]));
    let rounds: usize = args.get(2).map_or(5, |r| r.parse().unwrap());
    let filter: Option<Vec<String>> = args
        .get(3)
        .map(|s| s.split(',').map(String::from).collect());
    let threads = std::env::var("STREAM_AB_THREADS").map_or(2, |t| t.parse().unwrap_or(2));
    ok(bc_set_num_threads(threads));

    const M: i64 = 2048;
    let steps = |prog: &[(i32, i32)]| -> Vec<bc_expr_step> {
        prog.iter()
            .map(|&(kind, arg)| bc_expr_step {
                kind,
                arg,
                int_value: 0,
                float_value: 0.0,
            })
            .collect()
    };
    let e1 = steps(&[
        (BC_EXPR_INPUT, 0),
        (BC_EXPR_INPUT, 1),
        (BC_EXPR_OP, BC_OP_MUL),
        (BC_EXPR_INPUT, 2),
        (BC_EXPR_OP, BC_OP_ADD),
    ]);
    // H2: (a*b + c) * s - d, inputs a, b (M,1), c (M,), d (1,M), s 0-d.
    let h2 = steps(&[
        (BC_EXPR_INPUT, 0),
        (BC_EXPR_INPUT, 1),
        (BC_EXPR_OP, BC_OP_MUL),
        (BC_EXPR_INPUT, 2),
        (BC_EXPR_OP, BC_OP_ADD),
        (BC_EXPR_INPUT, 4),
        (BC_EXPR_OP, BC_OP_MUL),
        (BC_EXPR_INPUT, 3),
        (BC_EXPR_OP, BC_OP_SUB),
    ]);
    let (h2b, h2c, h2d, h2s) = (
        filled(&[M, 1], 2),
        filled(&[M], 3),
        filled(&[1, M], 4),
        filled(&[], 5),
    );
    let (a, b, c) = (filled(&[M, M], 1), filled(&[M], 2), filled(&[M, 1], 3));
    let o = filled(&[M, M], 4);
    let s4a = filled(&[4096, 1], 1);
    let s4b = filled(&[1, 4096], 2);
    let s4o = filled(&[4096, 4096], 3);
    let s9a = filled(&[4096, 4096], 1);
    let s9b = filled(&[4096], 2);
    let s1a = filled(&[4096, 4096], 1);
    let s1b = filled(&[4096, 4096], 2);
    let sweeps: Vec<(usize, T, T, T)> = [2048usize, 3072, 4096, 5120, 6144, 10240]
        .iter()
        .map(|&rows| {
            (
                rows,
                filled(&[rows as i64, 1024], 1),
                filled(&[1024], 2),
                filled(&[rows as i64, 1024], 3),
            )
        })
        .collect();

    let suite: Vec<_> = ["S2", "S4", "S7", "S9", "P1", "S2.lt", "S3"]
        .iter()
        .map(|n| testkit::cases::inputs(&testkit::cases::find(n).expect("a suite case")))
        .collect();
    let ins = [a.0 as *const bc_tensor, b.0, c.0];
    let mut cases: Vec<(String, Box<dyn FnMut() + '_>)> = vec![
        (
            "E1 out (fused)".into(),
            Box::new(|| {
                // SAFETY: arrays valid for their lengths.
                ok(unsafe { bc_expr_eval_out(e1.as_ptr(), e1.len(), ins.as_ptr(), 3, o.0) })
            }),
        ),
        (
            "E1 alloc (fused)".into(),
            Box::new(|| {
                let mut r = ptr::null_mut();
                // SAFETY: as above; r for one write.
                ok(unsafe { bc_expr_eval(e1.as_ptr(), e1.len(), ins.as_ptr(), 3, &mut r) });
                bc_tensor_free(r);
            }),
        ),
        (
            "E1 out calls".into(),
            Box::new(|| {
                ok(bc_binary_out(BC_OP_MUL, a.0, b.0, o.0));
                ok(bc_binary_out(BC_OP_ADD, o.0, c.0, o.0));
            }),
        ),
        (
            "H2 out (fused)".into(),
            Box::new(|| {
                let ins = [a.0 as *const bc_tensor, h2b.0, h2c.0, h2d.0, h2s.0];
                // SAFETY: arrays valid for their lengths.
                ok(unsafe { bc_expr_eval_out(h2.as_ptr(), h2.len(), ins.as_ptr(), 5, o.0) })
            }),
        ),
        (
            "H2 out calls".into(),
            Box::new(|| {
                ok(bc_binary_out(BC_OP_MUL, a.0, h2b.0, o.0));
                ok(bc_binary_out(BC_OP_ADD, o.0, h2c.0, o.0));
                ok(bc_binary_out(BC_OP_MUL, o.0, h2s.0, o.0));
                ok(bc_binary_out(BC_OP_SUB, o.0, h2d.0, o.0));
            }),
        ),
        (
            "S4 out".into(),
            Box::new(|| ok(bc_binary_out(BC_OP_ADD, s4a.0, s4b.0, s4o.0))),
        ),
        (
            "S1 out".into(),
            Box::new(|| ok(bc_binary_out(BC_OP_ADD, s1a.0, s1b.0, s4o.0))),
        ),
        (
            "S9 a += b".into(),
            Box::new(|| ok(bc_binary_inplace(BC_OP_ADD, s9a.0, s9b.0))),
        ),
    ];
    for inp in &suite {
        let in_place = inp.case.kind == testkit::cases::Kind::InPlace;
        cases.push((
            format!(
                "{} {}",
                inp.case.name,
                if in_place { "in place" } else { "out" }
            ),
            Box::new(move || inp.call(false)),
        ));
        if !in_place {
            cases.push((
                format!("{} alloc", inp.case.name),
                Box::new(move || inp.call(true)),
            ));
        }
    }
    for (rows, sa, sb, so) in &sweeps {
        let (sa, sb, so) = (sa.0, sb.0, so.0);
        cases.push((
            format!("SW {} MiB out", rows * 4 / 1024),
            Box::new(move || ok(bc_binary_out(BC_OP_ADD, sa, sb, so))),
        ));
        cases.push((
            format!("SW {} MiB alloc", rows * 4 / 1024),
            Box::new(move || {
                let mut r = ptr::null_mut();
                // SAFETY: r for one write.
                ok(unsafe { bc_binary(BC_OP_ADD, sa, sb, &mut r) });
                bc_tensor_free(r);
            }),
        ));
    }
    if let Some(f) = &filter {
        cases.retain(|(n, _)| f.iter().any(|x| n.starts_with(x.as_str())));
    }
    // The element storages each E1 form makes per call (the fused call into `out` should make
    // none: no temporary), and whether 16 MiB streams at the library's own threshold.
    {
        use broadcast::engine::storage;
        let count = |f: &mut dyn FnMut()| {
            f();
            let before = storage::stats();
            f();
            storage::stats().since(before).allocs
        };
        let e = e1.as_ptr();
        println!(
            "E1 element storages per call: eval_out {}, eval {}, calls into out {}; \
             stream threshold {} MiB, effective cache {} MiB",
            count(&mut || {
                // SAFETY: arrays valid for their lengths.
                ok(unsafe { bc_expr_eval_out(e, 5, ins.as_ptr(), 3, o.0) })
            }),
            count(&mut || {
                let mut r = ptr::null_mut();
                // SAFETY: as above; r for one write.
                ok(unsafe { bc_expr_eval(e, 5, ins.as_ptr(), 3, &mut r) });
                bc_tensor_free(r);
            }),
            count(&mut || {
                ok(bc_binary_out(BC_OP_MUL, a.0, b.0, o.0));
                ok(bc_binary_out(BC_OP_ADD, o.0, c.0, o.0));
            }),
            parallel::stream_threshold() >> 20,
            stream::effective_cache() >> 20
        );
    }
    println!(
        "threshold A {} B {}; {rounds} rounds; load {}",
        args[0],
        args[1],
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
    for (name, f) in cases.iter_mut() {
        let (mut ta, mut tb, mut r) = (Vec::new(), Vec::new(), Vec::new());
        for round in 0..rounds {
            let order = if round % 2 == 0 {
                [a_thr, b_thr]
            } else {
                [b_thr, a_thr]
            };
            let mut got = [0.0; 2];
            for (i, thr) in order.into_iter().enumerate() {
                thr.set(cache);
                got[(round % 2) ^ i] = time(&mut **f);
            }
            ta.push(got[0]);
            tb.push(got[1]);
            r.push(got[1] / got[0]);
        }
        let (lo, hi) = r
            .iter()
            .fold((f64::MAX, 0f64), |(l, h), &x| (l.min(x), h.max(x)));
        let min = |v: &[f64]| v.iter().copied().fold(f64::MAX, f64::min);
        let (ma, mb) = (min(&ta), min(&tb));
        println!(
            "{name:<22} A {:.4} ms  B {:.4} ms  B/A {:.3} [{lo:.3}-{hi:.3}]  min A {ma:.4} B {mb:.4} B/A {:.3}",
            median(&mut ta),
            median(&mut tb),
            median(&mut r),
            mb / ma
        );
    }
}
