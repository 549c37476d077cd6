//! libbroadcast's side: the suite's cases (written once, in the test kit's `cases`, shared with
//! the criterion benches) timed through the C ABI (`bc_*`), a check of every case's values, and the
//! allocation check.
use broadcast::ffi::*;
use std::ptr;
pub use testkit::cases::*;
pub use testkit::model::{itemsize, BF16, BOOL, F16, F32, F64, I32};
pub use testkit::T;

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
