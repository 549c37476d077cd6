//! Fused expressions: `bc_expr_eval` against the same expression as separate
//! calls, the C limit's one-pass loop, NumPy and PyTorch. Inputs are filled as every peer fills
//! them (input k with seed k + 1).
use crate::lib_side::{check, from_data, measure, touched, F32, T};
use broadcast::ffi::*;
use std::ptr;

#[derive(Debug, Clone, Copy)]
pub struct ECase {
    pub name: &'static str,
    pub what: &'static str,
    /// The inputs' shapes (float32).
    pub shapes: &'static [&'static [i64]],
    /// The program, postfix: `Some(i)` input `i`, `None` the float32 constant 0.
    pub program: &'static [Token],
    /// What the peers run.
    pub peers: &'static str,
    /// The target against PyTorch's form (lib ÷ PyTorch at most 1), if any.
    pub beat_torch: bool,
}

#[derive(Debug, Clone, Copy)]
pub enum Token {
    Input(i32),
    Zero,
    Op(i32),
}

use Token::{Input as I, Op, Zero};

const M: i64 = 2048;
pub const CASES: [ECase; 2] = [
    ECase {
        name: "E1",
        what: "a*b + c: a (2048,2048), b (2048,), c (2048,1)",
        shapes: &[&[M, M], &[M], &[M, 1]],
        program: &[I(0), I(1), Op(BC_OP_MUL), I(2), Op(BC_OP_ADD)],
        peers: "C: one loop, `o[i][j] = a[i][j] * b[j] + c[i]`; NumPy: `a * b + c` (out: `multiply`, then `add` into `o`); \
                PyTorch: `torch.addcmul(c, a, b)`, its one-pass form (and `out=o`)",
        beat_torch: true,
    },
    ECase {
        name: "E2",
        what: "maximum((x - m) / s * g + t, 0): x (2048,2048), m, s (2048,1), g, t (2048,)",
        shapes: &[&[M, M], &[M, 1], &[M, 1], &[M], &[M]],
        program: &[
            I(0),
            I(1),
            Op(BC_OP_SUB),
            I(2),
            Op(BC_OP_DIV),
            I(3),
            Op(BC_OP_MUL),
            I(4),
            Op(BC_OP_ADD),
            Zero,
            Op(BC_OP_MAXIMUM),
        ],
        peers: "C: one loop; NumPy and PyTorch: the five operations (out: each into `o`)",
        beat_torch: false,
    },
];

pub fn find(name: &str) -> Option<ECase> {
    CASES.iter().copied().find(|c| c.name == name)
}

fn steps(c: &ECase) -> Vec<bc_expr_step> {
    c.program
        .iter()
        .map(|t| {
            let (kind, arg) = match *t {
                I(i) => (BC_EXPR_INPUT, i),
                Zero => (BC_EXPR_CONST, F32),
                Op(op) => (BC_EXPR_OP, op),
            };
            bc_expr_step {
                kind,
                arg,
                int_value: 0,
                float_value: 0.0,
            }
        })
        .collect()
}

/// Bytes per call, as for the suite: every input element once, every output element once.
pub fn bytes(c: &ECase) -> f64 {
    let n: i64 = c.shapes.iter().map(|s| s.iter().product::<i64>()).sum();
    ((n + M * M) * 4) as f64
}

pub struct Inputs {
    tensors: Vec<T>,
    zero: T,
    pub out: T,
    steps: Vec<bc_expr_step>,
    program: &'static [Token],
}

pub fn inputs(c: &ECase) -> Inputs {
    Inputs {
        tensors: c
            .shapes
            .iter()
            .enumerate()
            .map(|(k, s)| from_data(F32, s, k + 1))
            .collect(),
        zero: touched(F32, &[]),
        out: touched(F32, &[M, M]),
        steps: steps(c),
        program: c.program,
    }
}

impl Inputs {
    /// One fused call: a new result (freed) or into `out`.
    pub fn fused(&self, alloc: bool) {
        let h: Vec<*const bc_tensor> = self.tensors.iter().map(|t| t.0 as *const _).collect();
        let (s, n) = (self.steps.as_ptr(), self.steps.len());
        if alloc {
            let mut r = ptr::null_mut();
            // SAFETY: the arrays hold their lengths; r is valid for one write.
            check(
                unsafe { bc_expr_eval(s, n, h.as_ptr(), h.len(), &mut r) },
                "bc_expr_eval",
            );
            bc_tensor_free(r);
        } else {
            // SAFETY: as above.
            check(
                unsafe { bc_expr_eval_out(s, n, h.as_ptr(), h.len(), self.out.0) },
                "bc_expr_eval_out",
            );
        }
    }

    /// The same expression as separate calls: each operation a new tensor (freed when used), or
    /// each written into `out` (the programs here are chains: every operation after the first
    /// takes the previous result as its left operand).
    pub fn calls(&self, alloc: bool) {
        let mut stack: Vec<*mut bc_tensor> = Vec::new();
        let mut made: Vec<*mut bc_tensor> = Vec::new();
        for t in self.program {
            match *t {
                I(i) => stack.push(self.tensors[i as usize].0),
                Zero => stack.push(self.zero.0),
                Op(op) => {
                    let (b, a) = (stack.pop().unwrap(), stack.pop().unwrap());
                    let r = if alloc {
                        let mut r = ptr::null_mut();
                        // SAFETY: r is valid for one write.
                        check(unsafe { bc_binary(op, a, b, &mut r) }, "bc_binary");
                        made.push(r);
                        r
                    } else {
                        check(bc_binary_out(op, a, b, self.out.0), "bc_binary_out");
                        self.out.0
                    };
                    stack.push(r);
                    // An intermediate is freed once the next operation has used it.
                    while made.len() > 1 {
                        bc_tensor_free(made.remove(0));
                    }
                }
            }
        }
        for r in made {
            bc_tensor_free(r);
        }
    }
}

/// Median ms per call of the fused call or of the separate calls.
pub fn time(inp: &Inputs, fused: bool, alloc: bool, reps: usize, warm_ms: f64) -> f64 {
    if fused {
        measure(|| inp.fused(alloc), 2, warm_ms, reps, 1.0)
    } else {
        measure(|| inp.calls(alloc), 2, warm_ms, reps, 1.0)
    }
}

fn values(t: &T) -> Vec<f32> {
    let mut buf = vec![0f32; (M * M) as usize];
    // SAFETY: buf holds M*M float32.
    check(
        unsafe { bc_tensor_copy_to(t.0, buf.as_mut_ptr().cast(), buf.len() * 4) },
        "bc_tensor_copy_to",
    );
    buf
}

/// The fused results (new and into `out`) against a direct computation in float32, operation by
/// operation, and against the separate calls, bit for bit.
pub fn verify(c: &ECase) -> Result<(), String> {
    let inp = inputs(c);
    let v = |k: usize, i: usize| crate::lib_side::value(F32, i, k + 1) as f32;
    let m = M as usize;
    let expect = |i: usize| -> f32 {
        let (r, col) = (i / m, i % m);
        match c.name {
            "E1" | "H1" => v(0, i) * v(1, col) + v(2, r),
            "H2" => (v(0, i) * v(1, r) + v(2, col)) * v(4, 0) - v(3, col),
            _ => {
                let x = (v(0, i) - v(1, r)) / v(2, r) * v(3, col) + v(4, col);
                if x.is_nan() {
                    x
                } else if x < 0.0 {
                    0.0
                } else {
                    x
                }
            }
        }
    };
    let h: Vec<*const bc_tensor> = inp.tensors.iter().map(|t| t.0 as *const _).collect();
    let mut r = ptr::null_mut();
    // SAFETY: arrays hold their lengths; r valid for one write.
    check(
        unsafe {
            bc_expr_eval(
                inp.steps.as_ptr(),
                inp.steps.len(),
                h.as_ptr(),
                h.len(),
                &mut r,
            )
        },
        "bc_expr_eval",
    );
    let fused_new = values(&T(r));
    inp.fused(false);
    let fused_out = values(&inp.out);
    inp.calls(false);
    let calls = values(&inp.out);
    for (what, got) in [
        ("alloc", &fused_new),
        ("out", &fused_out),
        ("calls", &calls),
    ] {
        for (i, g) in got.iter().enumerate() {
            if g.to_bits() != expect(i).to_bits() {
                return Err(format!(
                    "{} {what}: element {i} is {g}, expected {}",
                    c.name,
                    expect(i)
                ));
            }
        }
    }
    Ok(())
}
