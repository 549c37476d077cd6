//! Times each binary operation's kernel on each type on its code paths (baseline and AVX2), for
//! runs that stay in the first-level cache, to tell which clones and loops pay for themselves.
//! One line per operation and type: nanoseconds per element for contiguous operands, a
//! broadcast second operand and a strided result (the kernels' general loop), on each path,
//! and the AVX2 path's time as a fraction of the baseline's. Medians of alternating samples.
//!
//! `cargo run --release --example kernel_paths [OP ...]`, pinned to one CPU (`taskset -c 0`).
use broadcast::engine::kernels::{binary_run_with, simd_level, SimdLevel};
use broadcast::engine::{BinaryOp, DType};
use std::time::Instant;

const N: usize = 2048;
const SAMPLES: usize = 11;

/// Element bytes of `dtype` for `n` values, small and non-zero (valid divisors and exponents).
fn values(dtype: DType, n: usize, seed: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(n * dtype.size());
    let mut x = seed.wrapping_mul(2_654_435_761) | 1;
    for _ in 0..n {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        let v = 1.0 + (x % 5) as f64 + (x % 1000) as f64 / 1000.0;
        let i = 1 + (x % 5) as i64;
        match dtype {
            DType::Bool => out.push((x & 1) as u8),
            DType::U8 => out.push(i as u8),
            DType::I8 => out.push(i as i8 as u8),
            DType::I16 => out.extend((i as i16).to_le_bytes()),
            DType::I32 => out.extend((i as i32).to_le_bytes()),
            DType::I64 => out.extend(i.to_le_bytes()),
            DType::F16 => out.extend(half::f16::from_f64(v).to_le_bytes()),
            DType::BF16 => out.extend(half::bf16::from_f64(v).to_le_bytes()),
            DType::F32 => out.extend((v as f32).to_le_bytes()),
            DType::F64 => out.extend(v.to_le_bytes()),
        }
    }
    out
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    let only: Vec<String> = std::env::args().skip(1).collect();
    let levels: &[SimdLevel] = match simd_level() {
        SimdLevel::Avx2 => &[SimdLevel::Baseline, SimdLevel::Avx2],
        SimdLevel::Baseline => &[SimdLevel::Baseline],
    };
    println!(
        "{:<20} {:<9} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}  avx2/base: contig bcast strided",
        "op", "dtype", "b.cont", "b.bcast", "b.strd", "a.cont", "a.bcast", "a.strd"
    );
    for &op in BinaryOp::ALL {
        if !only.is_empty() && !only.iter().any(|o| o == op.name()) {
            continue;
        }
        for dtype in DType::ALL {
            if !op.rule().accepts(dtype) {
                continue;
            }
            let size = dtype.size() as isize;
            let osize = if op.rule().bool_result { 1 } else { size };
            let a = values(dtype, N, 1);
            let b = values(dtype, N, 2);
            let mut out = vec![0u8; 2 * N * osize as usize];
            // (strides of out, a, b): contiguous, b broadcast, the result strided (general loop).
            let layouts = [
                [osize, size, size],
                [osize, size, 0],
                [2 * osize, size, size],
            ];
            let mut ns = vec![vec![Vec::new(); layouts.len()]; levels.len()];
            let reps = 20;
            for _ in 0..SAMPLES {
                for (li, strides) in layouts.iter().enumerate() {
                    for (vi, &level) in levels.iter().enumerate() {
                        let ptrs = [
                            out.as_mut_ptr(),
                            a.as_ptr() as *mut u8,
                            b.as_ptr() as *mut u8,
                        ];
                        let t = Instant::now();
                        for _ in 0..reps {
                            // SAFETY: every buffer holds N elements at these strides; the CPU
                            // runs `level` (simd_level).
                            unsafe { binary_run_with(level, false, op, dtype, ptrs, *strides, N) };
                        }
                        ns[vi][li].push(t.elapsed().as_nanos() as f64 / (reps * N) as f64);
                    }
                }
            }
            let m: Vec<Vec<f64>> = ns
                .into_iter()
                .map(|l| l.into_iter().map(median).collect())
                .collect();
            let mut line = format!("{:<20} {:<9}", op.name(), dtype.name());
            for l in &m {
                for v in l {
                    line += &format!(" {v:>8.3}");
                }
            }
            if let [base, wide] = &m[..] {
                line += "  ";
                for (w, b) in wide.iter().zip(base) {
                    line += &format!(" {:.2}", w / b);
                }
            }
            println!("{line}");
        }
    }
}
