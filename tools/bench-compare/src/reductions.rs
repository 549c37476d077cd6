//! The reduction cases: sums of a (4096,4096) float32 tensor over either dimension, and
//! `sum_to_size(a * b, (4096,))` for `b` of shape (4096,), fused (`bc_binary_sum_to`) and as two
//! calls (`bc_mul`, then `bc_tensor_sum_to_size`); and the math cases on the same tensor: unary
//! functions, three-operand operations and the variance. Each is timed through the C ABI, and
//! checked before timing.
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

pub const CASES: [RCase; 10] = [
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
    RCase {
        name: "M1",
        what: "exp of (4096,4096)",
        peers: "C: `expf` per element; NumPy `np.exp(a)`; PyTorch `torch.exp(a)`",
    },
    RCase {
        name: "M2",
        what: "sqrt of (4096,4096)",
        peers: "C: `sqrtf` per element; NumPy `np.sqrt(a)`; PyTorch `torch.sqrt(a)`",
    },
    RCase {
        name: "M3",
        what: "abs of (4096,4096)",
        peers: "C: `fabsf` per element; NumPy `np.abs(a)`; PyTorch `torch.abs(a)`",
    },
    RCase {
        name: "M4",
        what: "clamp (4096,4096) between tensors (4096,1) and (4096,)",
        peers: "C: `v = a < lo[r] ? lo[r] : a; v > hi[c] ? hi[c] : v`; NumPy `np.clip(a, lo, hi)`; PyTorch `torch.clamp(a, lo, hi)`",
    },
    RCase {
        name: "M5",
        what: "lerp((4096,4096), (4096,4096), 0.3)",
        peers: "C: `a + 0.3f * (e - a)`; NumPy `a + 0.3 * (e - a)`; PyTorch `torch.lerp(a, e, 0.3)`",
    },
    RCase {
        name: "M6",
        what: "var of (4096,4096) over dim 0 (correction 1)",
        peers: "C: the column means, then the squared deviations summed by rows, in float32; NumPy `a.var(0, ddof=1)`; PyTorch `a.var(0)`",
    },
];

/// The lib ÷ limit target of a case: R1 and R2 1.5; the memory-bound math cases 1.25.
pub fn target(c: &RCase) -> Option<f64> {
    match c.name {
        "R1" | "R2" => Some(1.5),
        "M3" | "M4" | "M5" => Some(1.25),
        _ => None,
    }
}

pub fn find(name: &str) -> Option<RCase> {
    CASES.iter().copied().find(|c| c.name == name)
}

/// Bytes per call, STREAM convention: inputs read once plus the results written (the two calls
/// also write and read back their (4096,4096) intermediate).
pub fn bytes(c: &RCase) -> f64 {
    let (nn, n) = ((N * N) as f64, N as f64);
    4.0 * match c.name {
        "R1" | "R2" | "M6" => nn + n,
        "F1" => nn + 2.0 * n,
        "M1" | "M2" | "M3" => 2.0 * nn,
        "M4" => 2.0 * nn + 2.0 * n,
        "M5" => 3.0 * nn,
        _ => 3.0 * nn + 2.0 * n,
    }
}

/// The bytes of a case's result.
pub fn result_bytes(c: &RCase) -> usize {
    match c.name {
        "M1" | "M2" | "M3" | "M4" | "M5" => (N * N * 4) as usize,
        _ => (N * 4) as usize,
    }
}

pub struct Inputs {
    case: RCase,
    a: T,
    b: T,
    /// M4's lower bound (4096,1) and M5's end (4096,4096), for those cases.
    lo: Option<T>,
    e: Option<T>,
}

pub fn inputs(c: &RCase) -> Inputs {
    Inputs {
        case: *c,
        a: from_data(F32, &[N, N], 1),
        b: from_data(F32, &[N], 2),
        lo: (c.name == "M4").then(|| from_data(F32, &[N, 1], 3)),
        e: (c.name == "M5").then(|| from_data(F32, &[N, N], 4)),
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
            "M1" => unsafe { bc_exp(self.a.0, &mut r) },
            "M2" => unsafe { bc_sqrt(self.a.0, &mut r) },
            "M3" => unsafe { bc_abs(self.a.0, &mut r) },
            "M4" => unsafe { bc_clamp(self.a.0, self.lo.as_ref().unwrap().0, self.b.0, &mut r) },
            "M5" => unsafe {
                bc_lerp_scalar(
                    self.a.0,
                    self.e.as_ref().unwrap().0,
                    bc_scalar_float(0.3),
                    &mut r,
                )
            },
            "M6" => unsafe { bc_var(self.a.0, dim0.as_ptr(), 1, 1.0, false, &mut r) },
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
/// float64 sums; the math cases against float64 arithmetic (within float32 rounding; `exp`
/// within one part in 10^6, the variance in 10^5).
pub fn verify(c: &RCase) -> Result<(), String> {
    let inp = inputs(c);
    let a = |r: usize, k: usize| value(F32, r * N as usize + k, 1);
    let b = |k: usize| value(F32, k, 2);
    let n = N as usize;
    if c.name.starts_with('M') && c.name != "M6" {
        let got = values(&inp.call(), n * n);
        let lo = |r: usize| value(F32, r, 3);
        let e = |r: usize, k: usize| value(F32, r * n + k, 4);
        for r in (0..n).step_by(61) {
            for k in 0..n {
                let x = a(r, k);
                let (want, tol) = match c.name {
                    "M1" => (x.exp(), 1e-6),
                    "M2" => (x.sqrt(), 1e-7),
                    "M3" => (x.abs(), 0.0),
                    "M4" => (x.max(lo(r)).min(b(k)), 0.0),
                    _ => (x + 0.3 * (e(r, k) - x), 1e-6),
                };
                let g = got[r * n + k];
                if (g - want).abs() > tol * want.abs() {
                    return Err(format!(
                        "{} element ({r}, {k}) is {g}, expected {want}",
                        c.name
                    ));
                }
            }
        }
        return Ok(());
    }
    let got = values(&inp.call(), n);
    let want: Vec<f64> = match c.name {
        "R1" => (0..n).map(|r| (0..n).map(|k| a(r, k)).sum()).collect(),
        "R2" => (0..n).map(|k| (0..n).map(|r| a(r, k)).sum()).collect(),
        "M6" => (0..n)
            .map(|k| {
                let mean = (0..n).map(|r| a(r, k)).sum::<f64>() / n as f64;
                (0..n).map(|r| (a(r, k) - mean).powi(2)).sum::<f64>() / (n - 1) as f64
            })
            .collect(),
        _ => (0..n)
            .map(|k| (0..n).map(|r| a(r, k) * b(k)).sum())
            .collect(),
    };
    let tolerance = match c.name {
        "M6" => 1e-5,
        n if n.starts_with('F') => 1e-5,
        _ => 0.0,
    };
    for (k, (&g, &w)) in got.iter().zip(&want).enumerate() {
        if (g - w).abs() > tolerance * w.abs() {
            return Err(format!("{} element {k} is {g}, expected {w}", c.name));
        }
    }
    if c.name == "F1" {
        let two = values(&inputs(&find("F2").expect("F2")).call(), n);
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

fn values(t: &T, n: usize) -> Vec<f64> {
    let mut buf = vec![0f32; n];
    // SAFETY: buf is valid for its length in bytes.
    check(
        unsafe { bc_tensor_copy_to(t.0, buf.as_mut_ptr().cast(), buf.len() * 4) },
        "bc_tensor_copy_to",
    );
    buf.into_iter().map(f64::from).collect()
}
