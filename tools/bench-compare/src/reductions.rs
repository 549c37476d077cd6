//! The reduction cases: sums of a (4096,4096) float32 tensor over either dimension, and
//! `sum_to_size(a * b, (4096,))` for `b` of shape (4096,), fused (`bc_binary_sum_to`) and as two
//! calls (`bc_mul`, then `bc_tensor_sum_to_size`). Each is timed through the C ABI, and checked
//! before timing.
use crate::lib_side::{check, from_data, measure, value, F32, T};
use broadcast::ffi::*;
use std::ptr;

/// One reduction case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RCase {
    pub name: &'static str,
    pub what: &'static str,
    /// What the peers run for it (the same command name).
    pub peers: &'static str,
}

const N: i64 = 4096;

pub const CASES: [RCase; 4] = [
    RCase {
        name: "R1",
        what: "sum (4096,4096) over dim 1",
        peers: "C: a loop per row, 32 accumulators; NumPy `a.sum(1)`; PyTorch `a.sum(1)`",
    },
    RCase {
        name: "R2",
        what: "sum (4096,4096) over dim 0",
        peers: "C: rows split between threads, a row of accumulators each, then added; NumPy `a.sum(0)`; PyTorch `a.sum(0)`",
    },
    RCase {
        name: "F1",
        what: "fused: sum_to_size((4096,4096) * (4096,), (4096,))",
        peers: "C: as R2 with `a[r][c] * b[c]`; NumPy `einsum('ij,j->j')`; PyTorch `einsum('ij,j->j')`",
    },
    RCase {
        name: "F2",
        what: "the same as two calls: a * b, then sum_to_size",
        peers: "C: `o = a * b`, then as R2; NumPy `(a * b).sum(0)`; PyTorch `(a * b).sum_to_size(4096)`",
    },
];

pub fn find(name: &str) -> Option<RCase> {
    CASES.iter().copied().find(|c| c.name == name)
}

/// Bytes per call, STREAM convention: inputs read once plus the results written (the two calls
/// also write and read back their (4096,4096) intermediate).
pub fn bytes(c: &RCase) -> f64 {
    let (nn, n) = ((N * N) as f64, N as f64);
    4.0 * match c.name {
        "R1" | "R2" => nn + n,
        "F1" => nn + 2.0 * n,
        _ => 3.0 * nn + 2.0 * n,
    }
}

pub struct Inputs {
    case: RCase,
    a: T,
    b: T,
}

pub fn inputs(c: &RCase) -> Inputs {
    Inputs {
        case: *c,
        a: from_data(F32, &[N, N], 1),
        b: from_data(F32, &[N], 2),
    }
}

impl Inputs {
    /// One call, its result freed.
    pub fn once(&self) {
        drop(self.call());
    }

    /// One call; returns the result (the caller frees it).
    fn call(&self) -> T {
        let mut r = ptr::null_mut();
        let (dim0, dim1, size) = ([0i64], [1i64], [N]);
        // SAFETY (every call): the arrays are valid for their lengths; r for one write.
        let s = match self.case.name {
            "R1" => unsafe { bc_sum(self.a.0, dim1.as_ptr(), 1, false, &mut r) },
            "R2" => unsafe { bc_sum(self.a.0, dim0.as_ptr(), 1, false, &mut r) },
            "F1" => unsafe {
                bc_binary_sum_to(BC_OP_MUL, self.a.0, self.b.0, size.as_ptr(), 1, &mut r)
            },
            _ => {
                let mut c = ptr::null_mut();
                check(unsafe { bc_mul(self.a.0, self.b.0, &mut c) }, "bc_mul");
                let c = T(c);
                unsafe { bc_tensor_sum_to_size(c.0, size.as_ptr(), 1, &mut r) }
            }
        };
        check(s, self.case.name);
        T(r)
    }
}

/// Median ms per call (the result freed each time).
pub fn time(inp: &Inputs, reps: usize, warm_ms: f64) -> f64 {
    measure(|| inp.once(), 2, warm_ms, reps, 1.0)
}

/// The results checked: R1 and R2 exactly (every sum of these quarter values is exact in float32,
/// whatever the order), F1 and F2 bit-identical to each other and within float32 rounding of the
/// float64 sums.
pub fn verify(c: &RCase) -> Result<(), String> {
    let inp = inputs(c);
    let got = values(&inp.call());
    let a = |r: usize, k: usize| value(F32, r * N as usize + k, 1);
    let b = |k: usize| value(F32, k, 2);
    let n = N as usize;
    let want: Vec<f64> = match c.name {
        "R1" => (0..n).map(|r| (0..n).map(|k| a(r, k)).sum()).collect(),
        "R2" => (0..n).map(|k| (0..n).map(|r| a(r, k)).sum()).collect(),
        _ => (0..n)
            .map(|k| (0..n).map(|r| a(r, k) * b(k)).sum())
            .collect(),
    };
    let tolerance = if c.name.starts_with('F') { 1e-5 } else { 0.0 };
    for (k, (&g, &w)) in got.iter().zip(&want).enumerate() {
        if (g - w).abs() > tolerance * w.abs() {
            return Err(format!("{} element {k} is {g}, expected {w}", c.name));
        }
    }
    if c.name == "F1" {
        let two = values(&inputs(&find("F2").expect("F2")).call());
        if two
            .iter()
            .zip(&got)
            .any(|(x, y)| x.to_bits() != y.to_bits())
        {
            return Err("F1 (fused) and F2 (two calls) differ".into());
        }
    }
    Ok(())
}

fn values(t: &T) -> Vec<f64> {
    let mut buf = vec![0f32; N as usize];
    // SAFETY: buf is valid for its length in bytes.
    check(
        unsafe { bc_tensor_copy_to(t.0, buf.as_mut_ptr().cast(), buf.len() * 4) },
        "bc_tensor_copy_to",
    );
    buf.into_iter().map(f64::from).collect()
}
