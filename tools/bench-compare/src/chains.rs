//! The chains: short programs a user writes as several calls, timed call by call and (where the
//! library has one) as one fused call, against NumPy and PyTorch in their usual spelling.
//!
//! - H1 `a*b + c` and H2 `(a*b + c) * s - d`: the separate `bc_binary` calls (each result new, or
//!   each written into `out`) and `bc_expr_eval` / `bc_expr_eval_out`; PyTorch eager (and for H1
//!   also `torch.addcmul`, its one-pass form), NumPy's expression or its `out=` calls.
//! - H3 `((a-b)**2).mean(0)` and H4 `where(m, a, 0).sum()`: the library's fused reduction
//!   (`bc_expr_reduce`, one call, the elementwise value never made) against its calls (`bc_sub`,
//!   `bc_unary` square and `bc_mean`; `bc_where` and `bc_sum`; every intermediate freed; the
//!   fused form's target is at most 0.6 of their time), the C limit's single pass, NumPy and
//!   PyTorch eager.
use crate::exprs::{self, ECase, Token};
use crate::lib_side::{check, from_data, measure, value, F32, T};
use crate::peers::Peer;
use crate::{fmt_ms, Measurement, Results};
use broadcast::ffi::*;
use std::fmt::Write as _;
use std::ptr;

use Token::{Input as I, Op};

const M: i64 = 2048;
const N: i64 = 4096;

/// What a chain case runs in the library.
#[derive(Debug, Clone, Copy)]
pub enum Form {
    /// An expression: the separate calls and the fused call, new or into `out`.
    Expr(ECase),
    /// A reduction of an elementwise result: `bc_expr_reduce`, and call by call (a new tensor
    /// each).
    Reduce,
}

#[derive(Debug, Clone, Copy)]
pub struct HCase {
    pub name: &'static str,
    pub form: Form,
    /// PyTorch has a one-pass form of it (asked as `alloc-fused` / `out-fused`).
    pub torch_one_pass: bool,
}

impl HCase {
    pub fn what(&self) -> &'static str {
        match self.form {
            Form::Expr(e) => e.what,
            Form::Reduce => match self.name {
                "H3" => "((a - b)**2).mean(0): a (4096,4096), b (4096,)",
                _ => "where(m, a, 0).sum(): a (4096,4096), m (4096,4096) bool (about half true)",
            },
        }
    }

    pub fn peers(&self) -> &'static str {
        match self.form {
            Form::Expr(e) => e.peers,
            Form::Reduce => match self.name {
                "H3" => "library: `bc_expr_reduce({a, b, SUB, UNARY SQUARE}, BC_REDUCE_MEAN, {0})`, against \
                         `bc_sub`, `bc_unary(BC_UNARY_SQUARE)`, `bc_mean` over dim 0 (each result new, \
                         freed after use); C: one pass, a row of accumulators per thread; NumPy: \
                         `((a - b) ** 2).mean(0)`; PyTorch: `((a - b) ** 2).mean(0)`",
                _ => "library: `bc_expr_reduce({m, a, zero, WHERE}, BC_REDUCE_SUM)` with a 0-d float32 zero, \
                      against `bc_where(m, a, zero)` then `bc_sum` over every dimension; C: one pass, 32 accumulators per thread; NumPy: `np.where(m, a, z).sum()` (z a 0-d \
                      float32); PyTorch: `torch.where(m, a, 0).sum()`",
            },
        }
    }
}

pub const CASES: [HCase; 4] = [
    HCase {
        name: "H1",
        form: Form::Expr(ECase {
            name: "H1",
            what: "a*b + c: a (2048,2048), b (2048,), c (2048,1)",
            shapes: &[&[M, M], &[M], &[M, 1]],
            program: &[I(0), I(1), Op(BC_OP_MUL), I(2), Op(BC_OP_ADD)],
            peers: "library: two `bc_binary` calls (or `bc_binary_out` into `o` twice) against one \
                    `bc_expr_eval` (`bc_expr_eval_out`); C: one loop, as E1; NumPy: `a * b + c` \
                    (out: `np.multiply(a, b, out=o); np.add(o, c, out=o)`); PyTorch eager: `a * b + c` \
                    (out: `torch.mul(a, b, out=o); torch.add(o, c, out=o)`), and its one-pass \
                    `torch.addcmul(c, a, b)` (out: `torch.addcmul(c, a, b, out=o)`)",
            beat_torch: false,
        }),
        torch_one_pass: true,
    },
    HCase {
        name: "H2",
        form: Form::Expr(ECase {
            name: "H2",
            what: "(a*b + c) * s - d: a (2048,2048), b (2048,1), c (2048,), d (1,2048), s 0-d",
            shapes: &[&[M, M], &[M, 1], &[M], &[1, M], &[]],
            program: &[
                I(0),
                I(1),
                Op(BC_OP_MUL),
                I(2),
                Op(BC_OP_ADD),
                I(4),
                Op(BC_OP_MUL),
                I(3),
                Op(BC_OP_SUB),
            ],
            peers: "library: four `bc_binary` calls (or `bc_binary_out` into `o` four times) against \
                    one `bc_expr_eval` (`bc_expr_eval_out`); C: one loop; NumPy: `(a * b + c) * s - d` \
                    (out: `multiply`, `add`, `multiply`, `subtract`, each into `o`); PyTorch eager: \
                    `(a * b + c) * s - d` (out: `torch.mul`, `add`, `mul`, `sub`, each into `o`)",
            beat_torch: false,
        }),
        torch_one_pass: false,
    },
    HCase {
        name: "H3",
        form: Form::Reduce,
        torch_one_pass: false,
    },
    HCase {
        name: "H4",
        form: Form::Reduce,
        torch_one_pass: false,
    },
];

pub fn find(name: &str) -> Option<HCase> {
    CASES.iter().copied().find(|c| c.name == name)
}

/// Bytes per call: every input element once and the result once (the intermediates not counted).
pub fn bytes(c: &HCase) -> f64 {
    match c.form {
        Form::Expr(e) => exprs::bytes(&e),
        Form::Reduce if c.name == "H3" => ((N * N + 2 * N) * 4) as f64,
        Form::Reduce => (N * N * 5 + 4) as f64,
    }
}

/// The bytes of the result.
pub fn result_bytes(c: &HCase) -> usize {
    match c.form {
        Form::Expr(_) => (M * M * 4) as usize,
        Form::Reduce if c.name == "H3" => (N * 4) as usize,
        Form::Reduce => 4,
    }
}

/// H4's mask: element `i` true when input 3's value there is at least 13 (about half of them).
fn mask_value(i: usize) -> bool {
    value(F32, i, 3) >= 13.0
}

pub enum Inputs {
    Expr(exprs::Inputs),
    Reduce {
        name: &'static str,
        a: T,
        /// H3's b, or H4's mask.
        b: T,
        zero: T,
    },
}

pub fn inputs(c: &HCase) -> Inputs {
    match c.form {
        Form::Expr(e) => Inputs::Expr(exprs::inputs(&e)),
        Form::Reduce => {
            let a = from_data(F32, &[N, N], 1);
            let b = if c.name == "H3" {
                from_data(F32, &[N], 2)
            } else {
                let bytes: Vec<u8> = (0..(N * N) as usize).map(|i| mask_value(i) as u8).collect();
                let mut t = ptr::null_mut();
                // SAFETY: the shape and bytes are valid for their lengths; t for one write.
                check(
                    unsafe {
                        bc_tensor_from_data(
                            BC_DTYPE_BOOL,
                            [N, N].as_ptr(),
                            2,
                            bytes.as_ptr().cast(),
                            bytes.len(),
                            &mut t,
                        )
                    },
                    "bc_tensor_from_data",
                );
                T(t)
            };
            let mut zero = ptr::null_mut();
            // SAFETY: a 0-d shape; zero for one write.
            check(
                unsafe { bc_tensor_full(F32, ptr::null(), 0, 0.0, &mut zero) },
                "bc_tensor_full",
            );
            Inputs::Reduce {
                name: c.name,
                a,
                b,
                zero: T(zero),
            }
        }
    }
}

impl Inputs {
    /// The reduction as one `bc_expr_reduce` call.
    fn fused_reduce(&self) -> T {
        let Inputs::Reduce { name, a, b, zero } = self else {
            unreachable!("a reduction case")
        };
        let step = |kind, arg| bc_expr_step {
            kind,
            arg,
            int_value: 0,
            float_value: 0.0,
        };
        let mut r = ptr::null_mut();
        let (steps, inputs, op, dims): (Vec<bc_expr_step>, Vec<*const bc_tensor>, i32, &[i64]) =
            if *name == "H3" {
                (
                    vec![
                        step(BC_EXPR_INPUT, 0),
                        step(BC_EXPR_INPUT, 1),
                        step(BC_EXPR_OP, BC_OP_SUB),
                        step(BC_EXPR_UNARY, BC_UNARY_SQUARE),
                    ],
                    vec![a.0, b.0],
                    BC_REDUCE_MEAN,
                    &[0],
                )
            } else {
                (
                    vec![
                        step(BC_EXPR_INPUT, 0),
                        step(BC_EXPR_INPUT, 1),
                        step(BC_EXPR_INPUT, 2),
                        step(BC_EXPR_WHERE, 0),
                    ],
                    vec![b.0, a.0, zero.0],
                    BC_REDUCE_SUM,
                    &[],
                )
            };
        // SAFETY: each array holds its length; r is valid for one write.
        check(
            unsafe {
                bc_expr_reduce(
                    steps.as_ptr(),
                    steps.len(),
                    inputs.as_ptr(),
                    inputs.len(),
                    op,
                    dims.as_ptr(),
                    dims.len(),
                    false,
                    &mut r,
                )
            },
            "bc_expr_reduce",
        );
        T(r)
    }

    /// The reduction's calls; returns the result (the intermediates freed).
    fn reduce(&self) -> T {
        let Inputs::Reduce { name, a, b, zero } = self else {
            unreachable!("a reduction case")
        };
        let mut r = ptr::null_mut();
        if *name == "H3" {
            let (mut d, mut sq) = (ptr::null_mut(), ptr::null_mut());
            // SAFETY (each call): d, sq and r are valid for one write; dims for one read.
            check(unsafe { bc_sub(a.0, b.0, &mut d) }, "bc_sub");
            let d = T(d);
            check(
                unsafe { bc_unary(BC_UNARY_SQUARE, d.0, &mut sq) },
                "bc_unary",
            );
            drop(d);
            let sq = T(sq);
            check(
                unsafe { bc_mean(sq.0, [0i64].as_ptr(), 1, false, &mut r) },
                "bc_mean",
            );
        } else {
            let mut w = ptr::null_mut();
            // SAFETY: w and r are valid for one write; no dims.
            check(unsafe { bc_where(b.0, a.0, zero.0, &mut w) }, "bc_where");
            let w = T(w);
            check(
                unsafe { bc_sum(w.0, ptr::null(), 0, false, &mut r) },
                "bc_sum",
            );
        }
        T(r)
    }
}

/// Median ms per call: the fused or the separate calls (new results or into `out`) of an
/// expression; the calls of a reduction.
fn time(inp: &Inputs, fused: bool, alloc: bool, reps: usize, warm_ms: f64) -> f64 {
    match inp {
        Inputs::Expr(e) => exprs::time(e, fused, alloc, reps, warm_ms),
        Inputs::Reduce { .. } if fused => {
            measure(|| drop(inp.fused_reduce()), 2, warm_ms, reps, 1.0)
        }
        Inputs::Reduce { .. } => measure(|| drop(inp.reduce()), 2, warm_ms, reps, 1.0),
    }
}

/// One call of a case, its results freed (for the allocation check): the fused call where there
/// is one.
pub fn once(inp: &Inputs, fused: bool) {
    match inp {
        Inputs::Expr(e) if fused => e.fused(true),
        Inputs::Expr(e) => e.calls(true),
        Inputs::Reduce { .. } if fused => drop(inp.fused_reduce()),
        Inputs::Reduce { .. } => drop(inp.reduce()),
    }
}

/// The library's results: the expressions as `exprs::verify` checks them (fused, into `out`, and
/// call by call, bit for bit against float32 operation by operation); H3 within float32 rounding
/// of the float64 means; H4 within 1e-6 of the float64 sum.
pub fn verify(c: &HCase) -> Result<(), String> {
    if let Form::Expr(e) = c.form {
        return exprs::verify(&e);
    }
    let inp = inputs(c);
    let n = N as usize;
    let a = |i: usize| value(F32, i, 1);
    let want: Vec<f64> = if c.name == "H3" {
        (0..n)
            .map(|k| {
                let b = value(F32, k, 2);
                (0..n).map(|r| (a(r * n + k) - b).powi(2)).sum::<f64>() / n as f64
            })
            .collect()
    } else {
        vec![(0..n * n).filter(|&i| mask_value(i)).map(a).sum()]
    };
    let read = |r: &T| {
        let mut got = vec![0f32; want.len()];
        // SAFETY: got holds want.len() float32.
        check(
            unsafe { bc_tensor_copy_to(r.0, got.as_mut_ptr().cast(), got.len() * 4) },
            "bc_tensor_copy_to",
        );
        got
    };
    let (calls, fused) = (read(&inp.reduce()), read(&inp.fused_reduce()));
    let tolerance = if c.name == "H3" { 1e-5 } else { 1e-6 };
    for (k, (&g, &w)) in calls.iter().zip(&want).enumerate() {
        if (g as f64 - w).abs() > tolerance * w.abs() {
            return Err(format!("{} element {k} is {g}, expected {w}", c.name));
        }
    }
    // The fused call is the calls' bits.
    if let Some(k) = (0..calls.len()).find(|&k| calls[k].to_bits() != fused[k].to_bits()) {
        return Err(format!(
            "{} fused element {k} is {}, the calls give {}",
            c.name, fused[k], calls[k]
        ));
    }
    Ok(())
}

/// The keys of a case's rows.
fn variants(c: &HCase) -> &'static [&'static str] {
    match c.form {
        Form::Expr(_) => &["alloc", "out"],
        Form::Reduce => &["alloc"],
    }
}

/// One round of a case: the library against the peers; for an expression also the separate
/// calls (the library alone) and PyTorch's one-pass form where it has one (the library's fused
/// call timed again beside it).
pub fn run_round(
    c: &HCase,
    res: &mut Results,
    round: usize,
    peers: &mut [(&'static str, &mut Option<Peer>)],
    o: &crate::Options,
) {
    let inp = inputs(c);
    let (reps, warm_ms) = (o.reps, o.warm_ms);
    let bytes = bytes(c);
    for &v in variants(c) {
        let alloc = v == "alloc";
        let key = format!("{} {v}", c.name);
        let kind = if matches!(c.form, Form::Expr(_)) {
            "expr"
        } else {
            "red"
        };
        let cmd = format!("{kind} {} {v} {reps} {warm_ms}", c.name);
        let m = Measurement {
            key: &key,
            variant: v,
            bytes,
            cmd: &cmd,
            one_cpu: false,
            quiet: o.smoke,
        };
        // The fused call against the peers, then the separate calls (the library alone).
        m.run(res, round, peers, || time(&inp, true, alloc, reps, warm_ms));
        let key = format!("{key} calls");
        let m = Measurement { key: &key, ..m };
        m.run(res, round, &mut [], || {
            time(&inp, false, alloc, reps, warm_ms)
        });
        if c.torch_one_pass {
            let key = format!("{} {v} one-pass", c.name);
            let cmd = format!("expr {} {v}-fused {reps} {warm_ms}", c.name);
            let mut torch: Vec<(&'static str, &mut Option<Peer>)> = peers
                .iter_mut()
                .filter(|(name, _)| *name == "torch")
                .map(|(name, p)| (*name, &mut **p))
                .collect();
            let m = Measurement {
                key: &key,
                variant: v,
                bytes,
                cmd: &cmd,
                one_cpu: false,
                quiet: o.smoke,
            };
            m.run(res, round, &mut torch, || {
                time(&inp, true, alloc, reps, warm_ms)
            });
        }
    }
}

/// The chains' tables: the expressions (one pass against the calls and the peers), then the
/// reductions' call-by-call baseline and the time a fused form is to reach.
pub fn report(s: &mut String, cases: &[HCase], res: &Results) {
    let ratio = |key: &str, peer: &str| {
        res.ratio(key, peer).map_or("–".to_string(), |(r, lo, hi)| {
            format!("**{r:.2}** [{lo:.2}–{hi:.2}]")
        })
    };
    let exprs: Vec<&HCase> = cases
        .iter()
        .filter(|c| matches!(c.form, Form::Expr(_)))
        .collect();
    if !exprs.is_empty() {
        let _ = writeln!(
            s,
            "\n### Chains, float32: the library's one pass (`bc_expr_eval`) and its separate calls against the peers; median ms per call; ratios lib one pass ÷ peer, medians of same-round ratios [min–max]\n"
        );
        let _ = writeln!(
            s,
            "| case | variant | lib one pass | GB/s | lib calls | calls ÷ one pass | C limit | lib ÷ limit | NumPy | lib ÷ NumPy | PyTorch eager | lib ÷ PyTorch eager | PyTorch one pass | lib ÷ PyTorch one pass |"
        );
        let _ = writeln!(
            s,
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
        );
        for c in &exprs {
            for v in variants(c) {
                let key = format!("{} {v}", c.name);
                let one = format!("{key} one-pass");
                let lib = res.median(&key, "lib");
                let calls = res.median(&format!("{key} calls"), "lib");
                let _ = writeln!(
                    s,
                    "| {} | {v} | {} | {} | {} | {} | {} ({}) | {} | {} | {} | {} ({}) | {} | {} | {} |",
                    c.name,
                    fmt_ms(lib),
                    lib.map_or(String::new(), |ms| format!("{:.1}", bytes(c) / (ms * 1e6))),
                    fmt_ms(calls),
                    match (lib, calls) {
                        (Some(l), Some(k)) => format!("{:.2}×", k / l),
                        _ => "–".to_string(),
                    },
                    fmt_ms(res.median(&key, "limit")),
                    res.variant(&key, "limit"),
                    ratio(&key, "limit"),
                    fmt_ms(res.median(&key, "numpy")),
                    ratio(&key, "numpy"),
                    fmt_ms(res.median(&key, "torch")),
                    res.variant(&key, "torch"),
                    ratio(&key, "torch"),
                    if c.torch_one_pass {
                        format!(
                            "{} ({})",
                            fmt_ms(res.median(&one, "torch")),
                            res.variant(&one, "torch")
                        )
                    } else {
                        "–".to_string()
                    },
                    if c.torch_one_pass {
                        ratio(&one, "torch")
                    } else {
                        "–".to_string()
                    },
                );
            }
        }
    }
    let reds: Vec<&HCase> = cases
        .iter()
        .filter(|c| matches!(c.form, Form::Reduce))
        .collect();
    if !reds.is_empty() {
        let _ = writeln!(
            s,
            "\n### Fused reductions, float32: the library's fused call (`bc_expr_reduce`) and its separate calls against the C limit's one pass and the peers; median ms per call; the fused call is to take at most 0.6 of the calls' time; ratios lib fused ÷ peer, medians of same-round ratios [min–max]\n"
        );
        let _ = writeln!(
            s,
            "| case | what | lib fused | GB/s | lib calls | fused ÷ calls (target ≤ 0.6) | C limit, one pass | lib fused ÷ limit | NumPy | lib ÷ NumPy | PyTorch eager | lib ÷ PyTorch |"
        );
        let _ = writeln!(s, "|---|---|---|---|---|---|---|---|---|---|---|---|");
        for c in &reds {
            let key = format!("{} alloc", c.name);
            let lib = res.median(&key, "lib");
            let calls = res.median(&format!("{key} calls"), "lib");
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                c.name,
                c.what(),
                fmt_ms(lib),
                lib.map_or(String::new(), |ms| format!("{:.1}", bytes(c) / (ms * 1e6))),
                fmt_ms(calls),
                match (lib, calls) {
                    (Some(l), Some(k)) => format!("**{:.2}**", l / k),
                    _ => "–".to_string(),
                },
                fmt_ms(res.median(&key, "limit")),
                ratio(&key, "limit"),
                fmt_ms(res.median(&key, "numpy")),
                ratio(&key, "numpy"),
                fmt_ms(res.median(&key, "torch")),
                ratio(&key, "torch"),
            );
        }
    }
    let _ = writeln!(s, "\nWhat the chains compute, and what each side runs:\n");
    for c in cases {
        let _ = writeln!(s, "- {}: {}. {}", c.name, c.what(), c.peers());
    }
}
