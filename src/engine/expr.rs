//! Fused elementwise expressions: a short postfix program of inputs, constants and the library's
//! elementwise operations (every binary and unary operation, `where`, and the three-operand
//! `lerp`, `addcmul`, `addcdiv` and `clamp`), evaluated with exactly the
//! semantics of the separate calls it stands for (the same checks in the same order, the same
//! promotion, broadcasting, overlap and switch rules, the same roundings at the same types) but
//! in one pass over memory.
//!
//! How: the program is first checked as metadata only, step by step, with the separate calls'
//! own rules (`ops`). When every step is a plain elementwise step (no error, no warning, no
//! legacy fallback, no integer divisor to scan), the operations run over blocks of a few hundred
//! elements that stay in L1: each block of the inputs goes through every operation (the same
//! kernels the separate calls run, on the same types, converting where they convert) before the
//! next is read, and only the result reaches memory. Anything else (an error, a warning, a
//! program with more operands than one pass takes) is evaluated call by call, which gives the
//! separate calls' errors, warnings and results by construction.
//!
//! An operation whose result is smaller than the whole result (it is broadcast further, say
//! `(m * s) + x` with `m` and `s` columns) is computed first on its own, so that every element of
//! every intermediate is computed once, as with separate calls, and the pass reads it as an input.
use super::alloc::{alloc_error, try_collect, try_small, try_vec};
use super::binary_ops::BinaryOp;
use super::dtype::{can_cast, result_type, DType, Rank};
use super::elem::Elem;
use super::error::{Error, ErrorKind, Result};
use super::kernels;
use super::ops::{self, Dest, Geometry, Options, Report, Warning, Warnings};
use super::shape::{broadcast_shapes, checked_nbytes, checked_numel, numel, Dims, Strides};
use super::tensor::{Init, Scalar, Tensor};
use super::ternary::{self, plan_ternary, Arg, TernaryKernel, TernaryOp};
use super::unary::{self, plan_unary};
use super::unary_ops::UnaryOp;
use crate::with_elem;
use smallvec::SmallVec;
use std::mem::MaybeUninit;

/// Longest program, in steps.
pub const MAX_STEPS: usize = 64;
/// Most values a program may have waiting on its stack at once.
pub const MAX_DEPTH: usize = 16;
/// Most tensors one fused pass reads (inputs, and operations computed first because their
/// result is broadcast further); an expression with more is evaluated call by call.
pub const MAX_FUSED_OPERANDS: usize = 8;

/// One step of a program.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Step {
    /// Push input number `i`.
    Input(usize),
    /// Push a constant (a 0-d tensor).
    Const(Constant),
    /// Pop `b`, then `a`; push `a op b` (as `ops::binary`).
    Binary(BinaryOp),
    /// Pop `b`, `a`, then `cond`; push `where(cond, a, b)` (as `ops::where_`).
    Where,
    /// Pop `x`; push `op(x)` (as `unary::unary`).
    Unary(UnaryOp),
    /// Pop `c`, `b`, then `input`; push `op(input, b, c)` with the number `value` (read by
    /// `addcmul` and `addcdiv`), as `ternary::ternary` with two tensors: `lerp(input, end,
    /// weight)`, `addcmul(input, tensor1, tensor2, value)`, `clamp(input, min, max)`.
    Ternary(TernaryOp, Scalar),
}

/// A constant of a program: a 0-d tensor of its type, made as `bc_tensor_full` makes one, so it
/// takes part in type promotion as a 0-d tensor does (`int32 * float64 0-d` is float64).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Constant {
    dtype: DType,
    /// The element, in its type's bytes at the start (a `u64`: aligned for every element type).
    value: u64,
}

impl Constant {
    /// A constant of `dtype`: floating types take `float_value` (rounded to the type), bool and
    /// integers take `int_value` (converted as a C cast: wrapping, and non-zero is true).
    pub fn new(dtype: DType, int_value: i64, float_value: f64) -> Constant {
        let mut value = 0u64;
        with_elem!(dtype, T => {
            let v = if dtype.is_floating() {
                T::from_f64(float_value)
            } else {
                T::from_i64(int_value)
            };
            // SAFETY: every element type fits in, and is aligned by, a u64.
            unsafe { (&mut value as *mut u64 as *mut T).write(v) };
        });
        Constant { dtype, value }
    }

    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// A ternary operation's number `value` as its call reads it (a 0-d tensor of the
    /// computation type `compute`).
    fn number(value: Scalar, compute: DType) -> Constant {
        let mut out = Constant {
            dtype: compute,
            value: 0,
        };
        // SAFETY: one element of the type, in an aligned u64.
        unsafe {
            ternary::write_number(value, compute, false, &mut out.value as *mut u64 as *mut u8)
        };
        out
    }

    /// The element, for kernels that read it (they take `*mut`, and only read inputs).
    fn ptr(&self) -> *mut u8 {
        &self.value as *const u64 as *mut u8
    }

    /// The constant converted to `dtype` as an input of another type is converted.
    fn cast(&self, dtype: DType) -> Constant {
        let mut out = Constant { dtype, value: 0 };
        let dst = &mut out.value as *mut u64 as *mut u8;
        // SAFETY: one element of each type, each in its own aligned u64.
        unsafe { kernels::cast_run(self.dtype, dtype, [dst, self.ptr()], [0, 0], 1) };
        out
    }

    /// The constant as a 0-d tensor.
    fn tensor(&self) -> Result<Tensor> {
        Tensor::from_bytes(
            self.dtype,
            &[],
            &self.value.to_ne_bytes()[..self.dtype.size()],
        )
    }
}

/// Checks a program's structure against `ninputs` inputs: at most [`MAX_STEPS`] steps, at least
/// one operation, inputs in range, every operation finding its operands, at most [`MAX_DEPTH`]
/// values waiting, exactly one value left at the end.
pub fn check_program(steps: &[Step], ninputs: usize) -> Result<()> {
    if steps.len() > MAX_STEPS {
        return Err(Error::invalid(format_args!(
            "an expression has at most {MAX_STEPS} steps; this one has {}",
            steps.len()
        )));
    }
    let mut depth = 0usize;
    let mut operations = 0usize;
    for (k, step) in steps.iter().enumerate() {
        let (pops, name) = match step {
            Step::Input(i) if *i >= ninputs => {
                return Err(Error::invalid(format_args!(
                    "step {k} reads input {i}, but {ninputs} input(s) were given"
                )))
            }
            Step::Input(_) | Step::Const(_) => (0, ""),
            Step::Binary(op) => (2, op.name()),
            Step::Where => (3, "where"),
            Step::Unary(op) => (1, op.name()),
            Step::Ternary(op, _) => (3, op.name()),
        };
        if depth < pops {
            return Err(Error::invalid(format_args!(
                "step {k} ({name}) needs {pops} operands, but {depth} are waiting"
            )));
        }
        if pops > 0 {
            operations += 1;
        }
        depth = depth - pops + 1;
        if depth > MAX_DEPTH {
            return Err(Error::invalid(format_args!(
                "step {k} leaves {depth} values waiting; an expression may have at most {MAX_DEPTH}"
            )));
        }
    }
    if operations == 0 {
        return Err(Error::invalid("an expression needs at least one operation"));
    }
    if depth != 1 {
        return Err(Error::invalid(format_args!(
            "the expression leaves {depth} values; it must leave exactly one"
        )));
    }
    Ok(())
}

/// Evaluates a checked program (see [`check_program`]) into a new tensor, as the separate calls
/// would (`ops::binary`, `ops::where_`). Warnings come as they would from those calls: `warn`
/// gets each step's as the step completes, except the last step's, which are returned with its
/// result (so a caller gives them only when the whole call succeeds, as for one operation).
pub fn eval(
    steps: &[Step],
    inputs: &[&Tensor],
    opts: Options,
    warn: &mut dyn FnMut(&[Warning]),
) -> Result<(Tensor, Warnings)> {
    debug_assert!(check_program(steps, inputs.len()).is_ok());
    if let Some(pass) = plan(steps, inputs, None, opts)? {
        let strides = try_small(&pass.strides)?;
        let out = Tensor::new_dense(pass.dtype, &pass.shape, strides, Init::Uninit)?;
        pass.run(steps, inputs, &out, opts)?;
        return Ok((out, Warnings::new()));
    }
    let (out, warnings) = call_by_call(steps, inputs, None, opts, warn)?;
    Ok((
        out.expect("without `out` the last step makes a tensor"),
        warnings,
    ))
}

/// Evaluates a checked program into `out`, as the separate calls would, the last one being
/// `ops::binary_out` (or `ops::where_out`) into `out`; warnings as [`eval`].
pub fn eval_out(
    steps: &[Step],
    inputs: &[&Tensor],
    out: &Tensor,
    opts: Options,
    warn: &mut dyn FnMut(&[Warning]),
) -> Result<Warnings> {
    debug_assert!(check_program(steps, inputs.len()).is_ok());
    match plan(steps, inputs, Some(out), opts)? {
        Some(pass) => {
            pass.run(steps, inputs, out, opts)?;
            Ok(Warnings::new())
        }
        None => Ok(call_by_call(steps, inputs, Some(out), opts, warn)?.1),
    }
}

/// What [`eval`] (or [`eval_out`] into `out`) would do for a checked program over inputs of these
/// types and geometries, from the same decisions the evaluation takes: each step is planned as
/// its call (`ops::plan_binary`, `ops::plan_where`, a 0-d tensor for a constant), so the first
/// error is the one the evaluation gives; the analysis that picks the fused pass is the
/// evaluation's own. The report is the last call's (its type, computation type, shape and the
/// written tensor's strides), with every step's warnings, and:
/// - fused: the pass's loop and threads; the bytes of the result and of the operations computed
///   first (every step of their sub-expressions, as their calls allocate them);
/// - call by call: the last call's loop and threads; the bytes every call allocates (each
///   intermediate, each constant's 0-d tensor, each conversion).
///
/// As for every planner form, what needs memory is the evaluation's alone to see: a written
/// tensor that is read-only or partly overlaps an input, a zero integer divisor.
pub fn plan_expr(
    steps: &[Step],
    inputs: &[Geometry<'_>],
    out: Option<Geometry<'_>>,
    opts: Options,
) -> Result<Report> {
    debug_assert!(check_program(steps, inputs.len()).is_ok());
    /// A value a step makes, as metadata.
    struct Made {
        dtype: DType,
        shape: Dims,
        strides: Strides,
    }
    // Each step's value (`None`: the input it pushed), the bytes its call allocates.
    let mut made: Vec<Option<Made>> = try_vec(steps.len())?;
    let mut spent: Vec<usize> = try_vec(steps.len())?;
    let mut stack: SmallVec<[usize; MAX_DEPTH]> = SmallVec::new();
    let mut warnings = Warnings::new();
    let mut checks_divisor = false;
    let mut last = None;
    for (k, step) in steps.iter().enumerate() {
        let into = if k + 1 == steps.len() { out } else { None };
        let geometry = |n: usize| match (&made[n], steps[n]) {
            (Some(m), _) => Geometry {
                dtype: m.dtype,
                shape: &m.shape,
                strides: &m.strides,
                wrapped: false,
            },
            (None, Step::Input(i)) => inputs[i],
            (None, _) => unreachable!("only an input step makes no value"),
        };
        let report = match *step {
            Step::Input(_) => {
                made.push(None);
                spent.push(0);
                stack.push(k);
                continue;
            }
            Step::Const(c) => {
                made.push(Some(Made {
                    dtype: c.dtype,
                    shape: Dims::new(),
                    strides: Strides::new(),
                }));
                // Made as a 0-d tensor.
                spent.push(c.dtype.size());
                stack.push(k);
                continue;
            }
            Step::Binary(op) => {
                let (b, a) = (pop_node(&mut stack), pop_node(&mut stack));
                let dest = match &into {
                    Some(out) => Dest::Out(out),
                    None => Dest::New,
                };
                ops::plan_binary(op, geometry(a), geometry(b), dest, opts)?
            }
            Step::Where => {
                let (b, a, c) = (
                    pop_node(&mut stack),
                    pop_node(&mut stack),
                    pop_node(&mut stack),
                );
                ops::plan_where(geometry(c), geometry(a), geometry(b), into)?
            }
            Step::Unary(op) => {
                let x = pop_node(&mut stack);
                let dest = match &into {
                    Some(out) => Dest::Out(out),
                    None => Dest::New,
                };
                plan_unary(op, geometry(x), dest)?
            }
            Step::Ternary(op, value) => {
                let (c, b, x) = (
                    pop_node(&mut stack),
                    pop_node(&mut stack),
                    pop_node(&mut stack),
                );
                let (b, c) = (geometry(b), geometry(c));
                let dest = match &into {
                    Some(out) => Dest::Out(out),
                    None => Dest::New,
                };
                let args = [Arg::Tensor(&b), Arg::Tensor(&c)];
                plan_ternary(op, geometry(x), args, value, dest)?
            }
        };
        warnings
            .try_reserve(report.warnings.len())
            .map_err(|_| alloc_error::<Warning>(report.warnings.len()))?;
        for &w in &report.warnings {
            if !warnings.contains(&w) {
                warnings.push(w);
            }
        }
        checks_divisor |= report.checks_divisor;
        made.push(Some(Made {
            dtype: report.dtype,
            shape: try_small(&report.shape)?,
            strides: try_small(&report.strides)?,
        }));
        spent.push(report.alloc_bytes);
        stack.push(k);
        last = Some(report);
    }
    let mut report = last.expect("a checked program ends with an operation");
    report.warnings = warnings;
    report.checks_divisor = checks_divisor;
    report.alloc_bytes = spent.iter().fold(0, |n, &b| n.saturating_add(b));

    let refs: Vec<&Geometry<'_>> = try_collect(inputs.iter())?;
    if let Some(pass) = plan(steps, &refs, out.as_ref(), opts)? {
        let result = Geometry {
            dtype: pass.dtype,
            shape: &pass.shape,
            strides: &pass.strides,
            wrapped: false,
        };
        let mut alloc_bytes = match out {
            Some(_) => 0,
            None => checked_nbytes(numel(&pass.shape), pass.dtype.size())?,
        };
        let mut operands: SmallVec<[Geometry<'_>; MAX_FUSED_OPERANDS + 1]> = SmallVec::new();
        operands.push(out.unwrap_or(result));
        for leaf in &pass.leaves {
            operands.push(match *leaf {
                Leaf::Input(i) => inputs[i],
                Leaf::Made(n) => {
                    let node = &pass.nodes[n];
                    let sub = &spent[node.start..=n];
                    alloc_bytes = sub.iter().fold(alloc_bytes, |t, &b| t.saturating_add(b));
                    geometry(node)
                }
            });
        }
        (report.loop_shape, report.loop_kind, report.threads) =
            ops::describe_elementwise(&pass.shape, &operands)?;
        report.alloc_bytes = alloc_bytes;
    }
    Ok(report)
}

// ---------------------------------------------------------------------------------------------
// Call by call: the reference semantics.

/// A value on the stack: an input, or a tensor this evaluation made.
enum Value<'a> {
    Input(&'a Tensor),
    Made(Tensor),
}

impl Value<'_> {
    fn get(&self) -> &Tensor {
        match self {
            Value::Input(t) => t,
            Value::Made(t) => t,
        }
    }
}

/// Runs `steps` (one whole expression) as separate calls; the last one writes into `out` when
/// given, else its new tensor is returned. `warn` gets the warnings of every step but the last,
/// whose are returned.
fn call_by_call(
    steps: &[Step],
    inputs: &[&Tensor],
    out: Option<&Tensor>,
    opts: Options,
    warn: &mut dyn FnMut(&[Warning]),
) -> Result<(Option<Tensor>, Warnings)> {
    // Never spills: a checked program has at most MAX_DEPTH values waiting.
    let mut stack: SmallVec<[Value; MAX_DEPTH]> = SmallVec::new();
    for (k, step) in steps.iter().enumerate() {
        let last = k + 1 == steps.len();
        let into = if last { out } else { None };
        let (made, warnings) = match *step {
            Step::Input(i) => (Value::Input(inputs[i]), Warnings::new()),
            Step::Const(c) => (Value::Made(c.tensor()?), Warnings::new()),
            Step::Binary(op) => {
                let (b, a) = (pop(&mut stack), pop(&mut stack));
                match into {
                    Some(out) => {
                        return Ok((None, ops::binary_out(op, a.get(), b.get(), out, opts)?))
                    }
                    None => {
                        let (t, w) = ops::binary(op, a.get(), b.get(), opts)?;
                        (Value::Made(t), w)
                    }
                }
            }
            Step::Where => {
                let (b, a, cond) = (pop(&mut stack), pop(&mut stack), pop(&mut stack));
                match into {
                    Some(out) => {
                        return Ok((None, ops::where_out(cond.get(), a.get(), b.get(), out)?))
                    }
                    None => {
                        let (t, w) = ops::where_(cond.get(), a.get(), b.get())?;
                        (Value::Made(t), w)
                    }
                }
            }
            Step::Unary(op) => {
                let x = pop(&mut stack);
                match into {
                    Some(out) => {
                        unary::unary_out(op, x.get(), out)?;
                        return Ok((None, Warnings::new()));
                    }
                    None => (Value::Made(unary::unary(op, x.get())?), Warnings::new()),
                }
            }
            Step::Ternary(op, value) => {
                let (c, b, x) = (pop(&mut stack), pop(&mut stack), pop(&mut stack));
                let args = [Arg::Tensor(b.get()), Arg::Tensor(c.get())];
                match into {
                    Some(out) => {
                        ternary::ternary_out(op, x.get(), args, value, out)?;
                        return Ok((None, Warnings::new()));
                    }
                    None => (
                        Value::Made(ternary::ternary(op, x.get(), args, value)?),
                        Warnings::new(),
                    ),
                }
            }
        };
        if last {
            let Value::Made(t) = made else {
                unreachable!("a checked program ends with an operation")
            };
            return Ok((Some(t), warnings));
        }
        if !warnings.is_empty() {
            warn(&warnings);
        }
        stack.push(made);
    }
    unreachable!("a checked program has steps")
}

fn pop<'a>(stack: &mut SmallVec<[Value<'a>; MAX_DEPTH]>) -> Value<'a> {
    stack.pop().expect("a checked program has its operands")
}

// ---------------------------------------------------------------------------------------------
// Analysis: the program as metadata, checked with the separate calls' rules.

/// One step's value, as metadata.
struct Node {
    dtype: DType,
    shape: Dims,
    /// The layout the separate call gives this value (an input's own).
    strides: Strides,
    numel: usize,
    /// The first step of this value's sub-expression (its steps are `start..=` its own).
    start: usize,
    kind: NodeKind,
}

#[derive(Clone, Copy)]
enum NodeKind {
    Input(usize),
    Const(Constant),
    /// Operands converted to `kernel` and the operation's kernel run in it: the computation type,
    /// or float32 under PyTorch's float32-scalar rule (`ops::reads_scalar_in_f32`; the result is
    /// then rounded to the computation type).
    Binary {
        op: BinaryOp,
        kernel: DType,
        a: usize,
        b: usize,
    },
    Where {
        cond: usize,
        a: usize,
        b: usize,
    },
    /// The operand converted to `compute` and the operation's kernel run in it.
    Unary {
        op: UnaryOp,
        compute: DType,
        x: usize,
    },
    /// The three operands converted to the result type `result` and the call's formula run on
    /// them, with `value` in the computation type (as `ternary::compute` runs it).
    Ternary {
        op: TernaryOp,
        result: DType,
        value: Constant,
        args: [usize; 3],
    },
}

/// The program as metadata, when every step can be fused (see the module documentation); `None`
/// when it must go call by call. Errors only when memory runs out.
fn analyse<O: ops::Operand>(
    steps: &[Step],
    inputs: &[&O],
    out: Option<&O>,
    opts: Options,
) -> Result<Option<Vec<Node>>> {
    let mut nodes: Vec<Node> = try_vec(steps.len())?;
    let mut stack: SmallVec<[usize; MAX_DEPTH]> = SmallVec::new();
    // A shape error makes the evaluation go call by call (which gives it); running out of memory
    // is reported as it is.
    macro_rules! or_calls {
        ($r:expr) => {
            match $r {
                Ok(v) => v,
                Err(e) if e.kind() == ErrorKind::Alloc => return Err(e),
                Err(_) => return Ok(None),
            }
        };
    }
    for (k, step) in steps.iter().enumerate() {
        let last = k + 1 == steps.len();
        let into = if last { out } else { None };
        let node = match *step {
            Step::Input(i) => {
                let t = inputs[i].geometry();
                Node {
                    dtype: t.dtype,
                    shape: try_small(t.shape)?,
                    strides: try_small(t.strides)?,
                    numel: numel(t.shape),
                    start: k,
                    kind: NodeKind::Input(i),
                }
            }
            Step::Const(c) => Node {
                dtype: c.dtype,
                shape: Dims::new(),
                strides: Strides::new(),
                numel: 1,
                start: k,
                kind: NodeKind::Const(c),
            },
            Step::Binary(op) => {
                let (b, a) = (pop_node(&mut stack), pop_node(&mut stack));
                let (x, y) = (&nodes[a], &nodes[b]);
                if ops::check_op_defined(op, x.dtype, y.dtype).is_err() {
                    return Ok(None);
                }
                let shape = or_calls!(broadcast_shapes(&x.shape, &y.shape));
                if opts.broadcast_warning && x.shape != y.shape && x.numel == y.numel {
                    return Ok(None); // the call warns: the warning comes from the call itself
                }
                let types = ops::types_of(
                    op,
                    (x.dtype, Rank::of_tensor(x.shape.len())),
                    (y.dtype, Rank::of_tensor(y.shape.len())),
                );
                if ops::check_kernel(op, types.compute).is_err() {
                    return Ok(None);
                }
                let rule = op.rule();
                if rule.nonzero_divisor && !types.compute.is_floating() {
                    return Ok(None); // the divisor's values are checked first, call by call
                }
                let kernel =
                    if ops::reads_scalar_in_f32(rule, types.compute, x.dtype, y.dtype, y.numel) {
                        DType::F32
                    } else {
                        types.compute
                    };
                if let Some(out) = into {
                    let direct = leaf_tensors(&nodes, inputs, [a, b]);
                    if out.check_writable(&direct).is_err()
                        || out.geometry().shape != &shape[..]
                        || !can_cast(types.result, out.geometry().dtype)
                    {
                        return Ok(None);
                    }
                }
                let start = nodes[a].start;
                let strides = ops::binary_layout(&shape, types.compute, [x, y].map(geometry))?;
                Node {
                    dtype: types.result,
                    numel: or_calls!(checked_numel(&shape)),
                    strides,
                    shape,
                    start,
                    kind: NodeKind::Binary { op, kernel, a, b },
                }
            }
            Step::Unary(op) => {
                let a = pop_node(&mut stack);
                let x = &nodes[a];
                let Some((compute, result, strides)) = unary::fused_types(op, geometry(x))? else {
                    return Ok(None);
                };
                if let Some(out) = into {
                    // Into an `out` of the result's own type only (the call's conversion into
                    // another type goes call by call).
                    let direct = leaf_tensors(&nodes, inputs, [a]);
                    if out.geometry().dtype != result
                        || out.check_writable(&direct).is_err()
                        || out.geometry().shape != &x.shape[..]
                    {
                        return Ok(None);
                    }
                }
                Node {
                    dtype: result,
                    numel: x.numel,
                    strides,
                    shape: try_small(&x.shape)?,
                    start: x.start,
                    kind: NodeKind::Unary { op, compute, x: a },
                }
            }
            Step::Ternary(op, value) => {
                let (c, b, x) = (
                    pop_node(&mut stack),
                    pop_node(&mut stack),
                    pop_node(&mut stack),
                );
                let operands = [x, b, c].map(|n| geometry(&nodes[n]));
                let Some((result, shape, strides)) = ternary::fused_types(op, operands, value)?
                else {
                    return Ok(None);
                };
                if let Some(out) = into {
                    // Into an `out` of the result's own type only (the call's conversion into
                    // another type goes call by call).
                    let direct = leaf_tensors(&nodes, inputs, [x, b, c]);
                    if out.geometry().dtype != result
                        || out.check_writable(&direct).is_err()
                        || out.geometry().shape != &shape[..]
                    {
                        return Ok(None);
                    }
                }
                Node {
                    dtype: result,
                    numel: or_calls!(checked_numel(&shape)),
                    strides,
                    shape,
                    start: nodes[x].start,
                    kind: NodeKind::Ternary {
                        op,
                        result,
                        value: Constant::number(value, ternary::compute_type(result)),
                        args: [x, b, c],
                    },
                }
            }
            Step::Where => {
                let (b, a, cond) = (
                    pop_node(&mut stack),
                    pop_node(&mut stack),
                    pop_node(&mut stack),
                );
                let (c, x, y) = (&nodes[cond], &nodes[a], &nodes[b]);
                // A uint8 condition warns (once per process): call by call.
                if c.dtype != DType::Bool {
                    return Ok(None);
                }
                let dtype = result_type(x.dtype, x.shape.is_empty(), y.dtype, y.shape.is_empty());
                let shape = or_calls!(broadcast_shapes(&c.shape, &x.shape));
                let shape = or_calls!(broadcast_shapes(&shape, &y.shape));
                if let Some(out) = into {
                    let direct = leaf_tensors(&nodes, inputs, [cond, a, b]);
                    if out.geometry().dtype != dtype
                        || out.check_writable(&direct).is_err()
                        || out.geometry().shape != &shape[..]
                    {
                        return Ok(None);
                    }
                }
                let start = nodes[cond].start;
                let strides = ops::where_layout(&shape, dtype, [c, x, y].map(geometry))?;
                Node {
                    dtype,
                    numel: or_calls!(checked_numel(&shape)),
                    strides,
                    shape,
                    start,
                    kind: NodeKind::Where { cond, a, b },
                }
            }
        };
        nodes.push(node);
        stack.push(k);
    }
    let root = &nodes[steps.len() - 1];
    if root.numel == 0 {
        return Ok(None); // nothing to compute: the calls cost nothing
    }
    // Writing `out` while reading the inputs block by block: an input may be `out` itself (read
    // before written, element by element), nothing else that shares its memory (the last step
    // checked that `out` may be written at all; a geometry has no memory to overlap).
    if let Some(out) = out {
        or_calls!(out.check_writable(inputs));
    }
    Ok(Some(nodes))
}

/// A node as the call that makes a value from it sees it.
fn geometry(node: &Node) -> ops::Geometry<'_> {
    ops::Geometry {
        dtype: node.dtype,
        shape: &node.shape,
        strides: &node.strides,
        wrapped: false,
    }
}

fn pop_node(stack: &mut SmallVec<[usize; MAX_DEPTH]>) -> usize {
    stack.pop().expect("a checked program has its operands")
}

/// The tensors among `nodes[which]` that the separate call would get as they are (inputs; the
/// results of earlier calls are new tensors, which overlap nothing).
fn leaf_tensors<'a, O, const K: usize>(
    nodes: &[Node],
    inputs: &[&'a O],
    which: [usize; K],
) -> SmallVec<[&'a O; 3]> {
    which
        .iter()
        .filter_map(|&n| match nodes[n].kind {
            NodeKind::Input(i) => Some(inputs[i]),
            _ => None,
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// The fused pass.

/// Bytes of one block buffer: a block is this many bytes of the widest value kept in a buffer.
const BUF_BYTES: usize = 4096;
/// Most block buffers live at once: every waiting value, an operation's converted operands and
/// its result.
const MAX_BUFS: usize = MAX_DEPTH + 4;

#[repr(C, align(64))]
struct Buf([u8; BUF_BYTES]);

/// Where an instruction reads a value.
#[derive(Debug, Clone, Copy)]
enum Src {
    /// Operand `k` of the pass (1.. ; 0 is the result), at its stride.
    Operand(usize),
    /// A constant, read at stride 0.
    Const(usize),
    /// A block buffer holding elements of `size` bytes.
    Buf { index: usize, size: usize },
}

/// Where an instruction writes.
#[derive(Debug, Clone, Copy)]
enum Dst {
    Buf {
        index: usize,
        size: usize,
    },
    /// The result (operand 0).
    Out,
}

#[derive(Debug, Clone, Copy)]
enum Instr {
    Cast {
        from: DType,
        to: DType,
        src: Src,
        dst: Dst,
    },
    Binary {
        kernel: kernels::BinaryKernel,
        a: Src,
        b: Src,
        dst: Dst,
    },
    Where {
        size: usize,
        cond: Src,
        a: Src,
        b: Src,
        dst: Dst,
    },
    Unary {
        kernel: unary::UnaryKernel,
        a: Src,
        dst: Dst,
    },
    Ternary {
        kernel: TernaryKernel,
        /// The input and the two other operands, then `value`.
        args: [Src; 4],
        dst: Dst,
    },
}

/// The pass, as straight-line instructions run on every block.
struct Tape {
    instrs: SmallVec<[Instr; 16]>,
    consts: SmallVec<[Constant; 4]>,
    /// Elements per block.
    block: usize,
    /// Block buffers the instructions use.
    bufs: usize,
}

/// A fused evaluation, ready to run.
struct Pass {
    nodes: Vec<Node>,
    /// The result's shape, and its type and layout when allocated (the last call's).
    shape: Dims,
    dtype: DType,
    strides: Strides,
    tape: Tape,
    /// The pass's operands after the result (operand 0), in the tape's numbering.
    leaves: SmallVec<[Leaf; MAX_FUSED_OPERANDS]>,
}

/// An operand of the pass: an input, or a node computed first.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Leaf {
    Input(usize),
    Made(usize),
}

/// The fused pass for a program, when it has one (`None`: call by call).
fn plan<O: ops::Operand>(
    steps: &[Step],
    inputs: &[&O],
    out: Option<&O>,
    opts: Options,
) -> Result<Option<Pass>> {
    let Some(nodes) = analyse(steps, inputs, out, opts)? else {
        return Ok(None);
    };
    let root = nodes.len() - 1;
    let dtype = nodes[root].dtype;
    let out_dtype = out.map_or(dtype, |o| o.geometry().dtype);
    // Room for every instruction and constant the builder can make (it then never allocates): an
    // operation converts each operand and its result at most once, and a constant once.
    let (mut instrs, mut consts) = (SmallVec::new(), SmallVec::new());
    instrs
        .try_reserve(4 * steps.len() + 1)
        .map_err(|_| alloc_error::<Instr>(4 * steps.len() + 1))?;
    consts
        .try_reserve(2 * steps.len())
        .map_err(|_| alloc_error::<Constant>(2 * steps.len()))?;
    let mut b = Builder {
        nodes: &nodes,
        total: nodes[root].numel,
        instrs,
        consts,
        leaves: SmallVec::new(),
        free: (0..MAX_BUFS).rev().collect(),
        widest: 1,
        bufs: 0,
        too_many: false,
    };
    let value = b.value(root, (out_dtype == dtype).then_some(Dst::Out));
    if !matches!(value.0, Src::Operand(0)) {
        // The result's type is not `out`'s: converted on the way out, as the call's copy into
        // `out` converts it.
        b.convert_to(value, out_dtype, Some(Dst::Out));
    }
    if b.too_many {
        return Ok(None);
    }
    let tape = Tape {
        block: BUF_BYTES / b.widest,
        bufs: b.bufs,
        instrs: b.instrs,
        consts: b.consts,
    };
    let leaves = b.leaves;
    let mut nodes = nodes;
    // (Taken, not cloned: a clone of a long shape would allocate infallibly.)
    let shape = std::mem::take(&mut nodes[root].shape);
    let strides = std::mem::take(&mut nodes[root].strides);
    Ok(Some(Pass {
        nodes,
        shape,
        dtype,
        strides,
        tape,
        leaves,
    }))
}

impl Pass {
    /// Computes the program into `out` (the result's shape, and a type the result converts to).
    fn run(&self, steps: &[Step], inputs: &[&Tensor], out: &Tensor, opts: Options) -> Result<()> {
        // Operations broadcast further are computed first, call by call (no warnings: the
        // analysis found none).
        let mut made: SmallVec<[Tensor; 2]> = SmallVec::new();
        made.try_reserve(self.leaves.len())
            .map_err(|_| alloc_error::<Tensor>(self.leaves.len()))?;
        for leaf in &self.leaves {
            if let Leaf::Made(n) = *leaf {
                let sub = &steps[self.nodes[n].start..=n];
                let (t, _) = call_by_call(sub, inputs, None, opts, &mut |_| {})?;
                made.push(t.expect("a sub-expression makes a tensor"));
            }
        }
        let mut tensors: SmallVec<[&Tensor; MAX_FUSED_OPERANDS + 1]> = SmallVec::new();
        tensors.push(out);
        let mut next = made.iter();
        for leaf in &self.leaves {
            tensors.push(match *leaf {
                Leaf::Input(i) => inputs[i],
                Leaf::Made(_) => next.next().expect("made above"),
            });
        }
        run_pass(&tensors, &self.tape)
    }
}

/// Turns the analysed nodes into the instructions of a [`Tape`].
struct Builder<'a> {
    nodes: &'a [Node],
    /// Elements of the result.
    total: usize,
    instrs: SmallVec<[Instr; 16]>,
    consts: SmallVec<[Constant; 4]>,
    leaves: SmallVec<[Leaf; MAX_FUSED_OPERANDS]>,
    /// Free block buffers.
    free: SmallVec<[usize; MAX_BUFS]>,
    /// Widest element kept in a buffer.
    widest: usize,
    /// Buffers used (the highest index plus one).
    bufs: usize,
    /// More operands than one pass takes.
    too_many: bool,
}

impl Builder<'_> {
    /// Emits the instructions that compute node `n`; returns where its value is, and its type.
    /// With `dst` the value is written there when it has the node's type (the root writes the
    /// result).
    fn value(&mut self, n: usize, dst: Option<Dst>) -> (Src, DType) {
        let node = &self.nodes[n];
        let dtype = node.dtype;
        match node.kind {
            NodeKind::Input(i) => (self.operand(Leaf::Input(i)), dtype),
            NodeKind::Const(c) => (self.constant(c), dtype),
            // Broadcast further: computed first, read as an operand.
            _ if node.numel < self.total => (self.operand(Leaf::Made(n)), dtype),
            NodeKind::Binary { op, kernel, a, b } => {
                let x = self.value(a, None);
                let y = self.value(b, None);
                let x = self.convert(x, kernel);
                let y = self.convert(y, kernel);
                // What the kernel writes: bool, or the type it computes in, which under the
                // float32-scalar rule is rounded to the result type afterwards.
                let made = if op.rule().bool_result {
                    DType::Bool
                } else {
                    kernel
                };
                let to = self.destination(if made == dtype { dst } else { None }, made);
                self.instrs.push(Instr::Binary {
                    kernel: kernels::binary_kernel(op, kernel)
                        .expect("the analysis checked that the operation has a kernel"),
                    a: x.0,
                    b: y.0,
                    dst: to,
                });
                self.release(x.0);
                self.release(y.0);
                let v = (src_of(to), made);
                if made == dtype {
                    v
                } else {
                    self.convert_to(v, dtype, dst)
                }
            }
            NodeKind::Where { cond, a, b } => {
                let c = self.value(cond, None);
                let x = self.value(a, None);
                let y = self.value(b, None);
                let x = self.convert(x, dtype);
                let y = self.convert(y, dtype);
                let to = self.destination(dst, dtype);
                self.instrs.push(Instr::Where {
                    size: dtype.size(),
                    cond: c.0,
                    a: x.0,
                    b: y.0,
                    dst: to,
                });
                for v in [c.0, x.0, y.0] {
                    self.release(v);
                }
                (src_of(to), dtype)
            }
            NodeKind::Unary { op, compute, x } => {
                let v = self.value(x, None);
                let v = self.convert(v, compute);
                let to = self.destination(dst, dtype);
                self.instrs.push(Instr::Unary {
                    kernel: unary::UnaryKernel::new(op, compute)
                        .expect("the analysis checked that the operation has a kernel"),
                    a: v.0,
                    dst: to,
                });
                self.release(v.0);
                (src_of(to), dtype)
            }
            NodeKind::Ternary {
                op,
                result,
                value,
                args,
            } => {
                // Each operand converted as soon as it is computed: one conversion waits at once.
                let mut srcs = [Src::Const(0); 4];
                for (s, n) in srcs.iter_mut().zip(args) {
                    let v = self.value(n, None);
                    *s = self.convert(v, result).0;
                }
                srcs[3] = self.constant(value);
                let to = self.destination(dst, result);
                self.instrs.push(Instr::Ternary {
                    kernel: TernaryKernel::new(op, result),
                    args: srcs,
                    dst: to,
                });
                for v in srcs {
                    self.release(v);
                }
                (src_of(to), result)
            }
        }
    }

    /// Operand `leaf` of the pass (each leaf once).
    fn operand(&mut self, leaf: Leaf) -> Src {
        if let Some(k) = self.leaves.iter().position(|&l| l == leaf) {
            return Src::Operand(k + 1);
        }
        if self.leaves.len() == MAX_FUSED_OPERANDS {
            self.too_many = true;
            return Src::Operand(1); // never run
        }
        self.leaves.push(leaf);
        Src::Operand(self.leaves.len())
    }

    fn constant(&mut self, c: Constant) -> Src {
        self.consts.push(c);
        Src::Const(self.consts.len() - 1)
    }

    /// `dst` if given, else a free buffer for values of `dtype`.
    fn destination(&mut self, dst: Option<Dst>, dtype: DType) -> Dst {
        if let Some(d) = dst {
            return d;
        }
        let index = self.free.pop().expect("MAX_BUFS covers every live value");
        self.widest = self.widest.max(dtype.size());
        self.bufs = self.bufs.max(index + 1);
        Dst::Buf {
            index,
            size: dtype.size(),
        }
    }

    fn release(&mut self, v: Src) {
        if let Src::Buf { index, .. } = v {
            self.free.push(index);
        }
    }

    /// `v` in type `to`: as it is, a constant converted once, or a conversion per block.
    fn convert(&mut self, v: (Src, DType), to: DType) -> (Src, DType) {
        if v.1 == to {
            return v;
        }
        if let Src::Const(c) = v.0 {
            let converted = self.consts[c].cast(to);
            return (self.constant(converted), to);
        }
        self.convert_to(v, to, None)
    }

    /// A conversion of `v` to `to`, written to `dst` if given (else a buffer).
    fn convert_to(&mut self, v: (Src, DType), to: DType, dst: Option<Dst>) -> (Src, DType) {
        let d = self.destination(dst, to);
        self.instrs.push(Instr::Cast {
            from: v.1,
            to,
            src: v.0,
            dst: d,
        });
        self.release(v.0);
        (src_of(d), to)
    }
}

fn src_of(d: Dst) -> Src {
    match d {
        Dst::Buf { index, size } => Src::Buf { index, size },
        Dst::Out => Src::Operand(0),
    }
}

/// Runs `tape` over `tensors[0]` (the result) and the operands broadcast to its shape.
fn run_pass(tensors: &[&Tensor], tape: &Tape) -> Result<()> {
    macro_rules! with_n {
        ($($n:literal)*) => {
            match tensors.len() {
                $($n => run_n::<$n>(tensors, tape),)*
                n => unreachable!("{n} operands (at most {} with the result)", MAX_FUSED_OPERANDS + 1),
            }
        };
    }
    with_n!(1 2 3 4 5 6 7 8 9)
}

fn run_n<const N: usize>(tensors: &[&Tensor], tape: &Tape) -> Result<()> {
    let operands: [&Tensor; N] = std::array::from_fn(|k| tensors[k]);
    // SAFETY: the tape reads each operand with its own type at its stride and writes operand 0
    // with its type; operand 0 shares memory with another only as the very same view (checked
    // in `analyse`), and each block is read whole before its result is written.
    unsafe {
        ops::run_elementwise_rows(operands, |t| {
            tape.run(&t.ptrs, &t.strides, &t.row_strides, t.rows, t.len, t.stream)
        })
    }
}

impl Tape {
    /// `rows` runs of `n` elements: `p[k]`, `s[k]` are operand `k`'s first element and byte
    /// stride, `rs[k]` the bytes from one run to the next; `stream`: the result's stores bypass
    /// the cache.
    fn run(&self, p: &[*mut u8], s: &[isize], rs: &[isize], rows: usize, n: usize, stream: bool) {
        // Only the buffers used go on the stack: a frame is probed page by page on every call,
        // so a call takes a tile of runs, not one.
        match self.bufs {
            0..=2 => self.run_in::<2>(p, s, rs, rows, n, stream),
            3..=4 => self.run_in::<4>(p, s, rs, rows, n, stream),
            _ => self.run_in::<MAX_BUFS>(p, s, rs, rows, n, stream),
        }
    }

    fn run_in<const B: usize>(
        &self,
        p0: &[*mut u8],
        s: &[isize],
        rs: &[isize],
        rows: usize,
        n: usize,
        stream: bool,
    ) {
        // (Binary kernels are called through `BinaryKernel`, one run at a time, streaming only
        // the result's blocks when the computation streams.)
        let mut bufs = MaybeUninit::<[Buf; B]>::uninit();
        let base = bufs.as_mut_ptr() as *mut u8;
        let consts = |c: usize| self.consts[c].ptr();
        let mut ptrs = [std::ptr::null_mut(); MAX_FUSED_OPERANDS + 1];
        let p = &mut ptrs[..p0.len()];
        p.copy_from_slice(p0);
        for row in 0..rows {
            if row > 0 {
                for (q, r) in p.iter_mut().zip(rs) {
                    *q = q.wrapping_offset(*r);
                }
            }
            self.run_blocks(p, s, n, base, stream, &consts);
        }
    }

    /// One run of `n` elements, block by block through the buffers at `base`.
    #[inline(always)]
    fn run_blocks(
        &self,
        p: &[*mut u8],
        s: &[isize],
        n: usize,
        base: *mut u8,
        stream: bool,
        consts: &impl Fn(usize) -> *mut u8,
    ) {
        let mut i = 0;
        while i < n {
            let len = self.block.min(n - i);
            let src = |x: Src| -> (*mut u8, isize) {
                match x {
                    Src::Operand(k) => (p[k].wrapping_offset(i as isize * s[k]), s[k]),
                    Src::Const(c) => (consts(c), 0),
                    Src::Buf { index, size } => {
                        (base.wrapping_add(index * BUF_BYTES), size as isize)
                    }
                }
            };
            let dst = |d: Dst| -> (*mut u8, isize, bool) {
                match d {
                    Dst::Out => (p[0].wrapping_offset(i as isize * s[0]), s[0], true),
                    Dst::Buf { index, size } => {
                        (base.wrapping_add(index * BUF_BYTES), size as isize, false)
                    }
                }
            };
            for ins in &self.instrs {
                // SAFETY: operands are valid for the run at their strides (the executor's
                // contract), buffers hold `block` elements of their type, constants one element
                // read at stride 0; every kernel reads values of the types it is given.
                unsafe {
                    match *ins {
                        Instr::Cast {
                            from,
                            to,
                            src: a,
                            dst: d,
                        } => {
                            let ((pa, sa), (pd, sd, _)) = (src(a), dst(d));
                            kernels::cast_run(from, to, [pd, pa], [sd, sa], len);
                        }
                        Instr::Binary {
                            kernel,
                            a,
                            b,
                            dst: d,
                        } => {
                            let ((pa, sa), (pb, sb), (pd, sd, out)) = (src(a), src(b), dst(d));
                            kernel.run([pd, pa, pb], [sd, sa, sb], len, out && stream);
                        }
                        Instr::Where {
                            size,
                            cond,
                            a,
                            b,
                            dst: d,
                        } => {
                            let ((pc, sc), (pa, sa), (pb, sb), (pd, sd, _)) =
                                (src(cond), src(a), src(b), dst(d));
                            kernels::where_run(size, [pd, pc, pa, pb], [sd, sc, sa, sb], len);
                        }
                        Instr::Unary { kernel, a, dst: d } => {
                            let ((pa, sa), (pd, sd, _)) = (src(a), dst(d));
                            kernel.run([pd, pa], [sd, sa], len);
                        }
                        Instr::Ternary {
                            kernel,
                            args: [x, b, c, v],
                            dst: d,
                        } => {
                            let [(px, sx), (pb, sb), (pc, sc), (pv, sv)] = [x, b, c, v].map(src);
                            let (pd, sd, _) = dst(d);
                            kernel.run([pd, px, pb, pc, pv], [sd, sx, sb, sc, sv], len);
                        }
                    }
                }
            }
            i += len;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The result handed out run by run: for a reduction fused with the expression.

/// A program's fused pass, when it has one, before anything is computed: the result's type,
/// shape and layout are [`eval`]'s. `None` when [`eval`] goes call by call (an error, a warning,
/// an integer divisor, more operands than one pass takes, an empty result).
pub(crate) fn fused_pass(
    steps: &[Step],
    inputs: &[&Tensor],
    opts: Options,
) -> Result<Option<FusedPass>> {
    debug_assert!(check_program(steps, inputs.len()).is_ok());
    Ok(plan(steps, inputs, None, opts)?.map(FusedPass))
}

/// Whether [`eval`] over inputs of these geometries runs one fused pass (see [`fused_pass`]).
pub(crate) fn fuses(steps: &[Step], inputs: &[Geometry<'_>], opts: Options) -> Result<bool> {
    let refs: Vec<&Geometry<'_>> = try_collect(inputs.iter())?;
    Ok(plan(steps, &refs, None, opts)?.is_some())
}

/// See [`fused_pass`].
pub(crate) struct FusedPass(Pass);

impl FusedPass {
    pub(crate) fn dtype(&self) -> DType {
        self.0.dtype
    }

    pub(crate) fn shape(&self) -> &[usize] {
        &self.0.shape
    }

    /// Computes what must be computed first (operations broadcast further, as [`eval`] does) and
    /// readies the pass to compute any run of the result's elements.
    pub(crate) fn ready<'a>(
        self,
        steps: &[Step],
        inputs: &[&'a Tensor],
        opts: Options,
    ) -> Result<Runs<'a>> {
        let pass = self.0;
        let mut made: SmallVec<[Tensor; 2]> = SmallVec::new();
        made.try_reserve(pass.leaves.len())
            .map_err(|_| alloc_error::<Tensor>(pass.leaves.len()))?;
        for leaf in &pass.leaves {
            if let Leaf::Made(n) = *leaf {
                let sub = &steps[pass.nodes[n].start..=n];
                let (t, _) = call_by_call(sub, inputs, None, opts, &mut |_| {})?;
                made.push(t.expect("a sub-expression makes a tensor"));
            }
        }
        let mut base: SmallVec<[*mut u8; MAX_FUSED_OPERANDS]> = SmallVec::new();
        let mut st: SmallVec<[Strides; MAX_FUSED_OPERANDS]> = SmallVec::new();
        let mut next = made.iter();
        for leaf in &pass.leaves {
            let t: &Tensor = match *leaf {
                Leaf::Input(i) => inputs[i],
                Leaf::Made(_) => next.next().expect("made above"),
            };
            let g = ops::Operand::geometry(t);
            let mut s = crate::engine::iter::broadcast_strides(g.shape, g.strides, &pass.shape)?;
            for x in &mut s {
                *x *= g.dtype.size() as isize;
            }
            base.push(t.data_ptr());
            st.push(s);
        }
        // The result's dimensions of more than one element, innermost first.
        let mut order: SmallVec<[usize; 6]> = SmallVec::new();
        order
            .try_reserve(pass.shape.len())
            .map_err(|_| alloc_error::<usize>(pass.shape.len()))?;
        order.extend((0..pass.shape.len()).filter(|&d| pass.shape[d] > 1));
        order.sort_unstable_by_key(|&d| (pass.strides[d], d));
        Ok(Runs {
            pass,
            _made: made,
            base,
            st,
            order,
            tail: None,
            _inputs: std::marker::PhantomData,
        })
    }
}

/// A fused pass ready to compute runs of its result (see [`FusedPass::ready`]); its result's layout is [`Runs::strides`].
pub(crate) struct Runs<'a> {
    pass: Pass,
    /// The operations computed first (read through `base`).
    _made: SmallVec<[Tensor; 2]>,
    /// The pass's operands after the result: first element, byte strides broadcast to the
    /// result's shape.
    base: SmallVec<[*mut u8; MAX_FUSED_OPERANDS]>,
    st: SmallVec<[Strides; MAX_FUSED_OPERANDS]>,
    /// The result's dimensions of more than one element, by stride, innermost first.
    order: SmallVec<[usize; 6]>,
    /// The last operation, when the reader computes it (see [`Runs::take_tail`]); the tape then
    /// computes only its staged operand.
    tail: Option<Tail>,
    _inputs: std::marker::PhantomData<&'a Tensor>,
}

/// The last operation of a pass, computed by the reader of the result as it reads the
/// operation's operands (see [`Runs::take_tail`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum TailOp {
    /// `where(cond, a, b)`: the condition (one byte: bool or uint8), then `a` and `b` in the
    /// result type.
    Where,
    /// `square(x)` of float32 (only while a tail is sought: see [`Runs::take_tail`]).
    Square,
    /// `square(x - y)` of float32, the difference computed in float32: the two kernels'
    /// formulas, `(x - y) * (x - y)`.
    SquareOf(BinaryOp),
}

/// Where an operand of the tail is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum TailArg {
    /// The pass's operand `k` (an input, or an operation computed first) or a constant:
    /// located by [`Runs::locate`].
    Direct,
    /// The value the tape computes (see [`Runs::compute`]), of `size`-byte elements.
    Staged { size: usize },
}

/// See [`Runs::take_tail`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Tail {
    pub(crate) op: TailOp,
    /// The operation's operands, in its order ([`TailOp`]); `Src` for [`Runs::locate`].
    pub(crate) args: [TailArg; 3],
    srcs: [Src; 3],
}

impl Tail {
    /// The staged operand's element size and position, if one is.
    pub(crate) fn staged(&self) -> Option<(usize, usize)> {
        self.args.iter().enumerate().find_map(|(k, a)| match *a {
            TailArg::Staged { size } => Some((size, k)),
            TailArg::Direct => None,
        })
    }
}

// SAFETY: the operands are only read (the inputs outlive `'a`, the made tensors are owned), and
// the tape runs on each caller's own stack buffers.
unsafe impl Sync for Runs<'_> {}

impl Runs<'_> {
    pub(crate) fn shape(&self) -> &[usize] {
        &self.pass.shape
    }

    /// The layout [`eval`] gives the result (element strides, dense, not negative).
    pub(crate) fn strides(&self) -> &[isize] {
        &self.pass.strides
    }

    /// Computes the result's elements at element offsets `v, v + st, ..., v + (n - 1) st` of its
    /// layout ([`Runs::strides`]) into `dst` (`n` contiguous elements of the result type),
    /// the same bits as [`eval`] writes there: the same tape on the same operands, in pieces along
    /// one dimension at a time. After [`Runs::take_tail`], the tail's staged operand instead.
    ///
    /// # Safety
    /// The offsets must lie within the result; `dst` valid for `n` element writes.
    pub(crate) unsafe fn compute(&self, mut v: usize, st: usize, n: usize, dst: *mut u8) {
        let (shape, strides) = (&self.pass.shape, &self.pass.strides);
        // With a tail, the tape computes its staged operand.
        let size = match self.tail.as_ref().and_then(Tail::staged) {
            Some((size, _)) => size as isize,
            None => self.pass.dtype.size() as isize,
        };
        let along = self
            .order
            .iter()
            .copied()
            .find(|&d| strides[d] as usize == st);
        let k = self.base.len() + 1;
        let mut p = [std::ptr::null_mut::<u8>(); MAX_FUSED_OPERANDS + 1];
        let mut s = [0isize; MAX_FUSED_OPERANDS + 1];
        let rs = [0isize; MAX_FUSED_OPERANDS + 1];
        let mut idx = [0usize; crate::engine::shape::MAX_NDIM + 1];
        let mut done = 0;
        while done < n {
            // The position of element `v`, outermost dimension first.
            let mut rest = v;
            for &d in self.order.iter().rev() {
                idx[d] = rest / strides[d] as usize;
                rest %= strides[d] as usize;
            }
            let piece = match along {
                Some(a) if st > 0 => (n - done).min(shape[a] - idx[a]),
                _ => 1,
            };
            p[0] = dst.wrapping_offset(done as isize * size);
            s[0] = size;
            for (j, (b, sj)) in self.base.iter().zip(&self.st).enumerate() {
                let off: isize = self.order.iter().map(|&d| idx[d] as isize * sj[d]).sum();
                p[j + 1] = b.wrapping_offset(off);
                s[j + 1] = match along {
                    Some(a) if piece > 1 => sj[a],
                    _ => 0,
                };
            }
            self.pass
                .tape
                .run(&p[..k], &s[..k], &rs[..k], 1, piece, false);
            done += piece;
            v += piece * st;
        }
    }

    /// Leaves the pass's last operation to the reader, when it is `where` and at most one of its
    /// operands is computed by the pass (the others are the pass's own operands, or constants),
    /// or the square of a float32 difference of the pass's own operands: the tape then computes
    /// only that one operand, if any (into what [`Runs::compute`] is given), and the reader
    /// applies the operation to the operands as it reads them ([`Runs::tail`],
    /// [`Runs::locate`]). Whether it did.
    pub(crate) fn take_tail(&mut self) -> bool {
        let root = &self.pass.nodes[self.pass.nodes.len() - 1];
        let tape = &self.pass.tape;
        let Some(&last) = tape.instrs.last() else {
            return false;
        };
        let (op, srcs, n) = match (last, root.kind) {
            (
                Instr::Where {
                    cond,
                    a,
                    b,
                    dst: Dst::Out,
                    ..
                },
                NodeKind::Where { .. },
            ) => (TailOp::Where, [cond, a, b], 3),
            (
                Instr::Unary {
                    a, dst: Dst::Out, ..
                },
                NodeKind::Unary { op, compute, .. },
            ) if op == UnaryOp::Square && compute == root.dtype && compute == DType::F32 => {
                (TailOp::Square, [a, a, a], 1)
            }
            _ => return false,
        };
        let mut args = [TailArg::Direct; 3];
        let mut staged = None;
        for (arg, src) in args.iter_mut().zip(&srcs).take(n) {
            if let Src::Buf { index, size } = *src {
                if staged.is_some_and(|i| i != index) {
                    return false;
                }
                staged = Some(index);
                *arg = TailArg::Staged { size };
            }
        }
        let head = tape.instrs.len() - 1;
        match staged {
            // Nothing else to compute (the tape's instructions all feed the last).
            None if head > 0 => return false,
            None => {}
            // The staged operand is the last value the tape computes before the operation.
            Some(index) => match tape.instrs[..head].last() {
                Some(
                    Instr::Cast { dst, .. }
                    | Instr::Binary { dst, .. }
                    | Instr::Where { dst, .. }
                    | Instr::Unary { dst, .. }
                    | Instr::Ternary { dst, .. },
                ) if matches!(*dst, Dst::Buf { index: i, .. } if i == index) => {}
                _ => return false,
            },
        }
        // A square is taken only of a difference of operands the pass reads, when that is all
        // the tape computes: `square(x - y)` in one loop over x and y.
        if op == TailOp::Square {
            let operand = |s: &Src| matches!(s, Src::Operand(_) | Src::Const(_));
            let (&[Instr::Binary { a, b, .. }, _], NodeKind::Unary { x, .. }) =
                (&tape.instrs[..], root.kind)
            else {
                return false;
            };
            let NodeKind::Binary {
                op: bop, kernel, ..
            } = self.pass.nodes[x].kind
            else {
                return false;
            };
            if bop != BinaryOp::Sub || kernel != root.dtype || !operand(&a) || !operand(&b) {
                return false;
            }
            self.pass.tape.instrs.clear();
            self.tail = Some(Tail {
                op: TailOp::SquareOf(bop),
                args: [TailArg::Direct; 3],
                srcs: [a, b, b],
            });
            return true;
        }
        let instrs = &mut self.pass.tape.instrs;
        instrs.pop();
        if let Some(
            Instr::Cast { dst, .. }
            | Instr::Binary { dst, .. }
            | Instr::Where { dst, .. }
            | Instr::Unary { dst, .. }
            | Instr::Ternary { dst, .. },
        ) = instrs.last_mut()
        {
            *dst = Dst::Out;
        }
        self.tail = Some(Tail { op, args, srcs });
        true
    }

    /// The last operation, when the reader computes it ([`Runs::take_tail`]).
    pub(crate) fn tail(&self) -> Option<&Tail> {
        self.tail.as_ref()
    }

    /// The tail's [`TailArg::Direct`] operands at the result's elements `v, v + st, ...` (element
    /// offsets in its layout): their first elements into `p` and byte strides into `s` (those
    /// of staged operands are left as they are). Returns how many of the `n` elements from `v`
    /// they describe (at least one: the elements along one dimension).
    pub(crate) fn locate<const K: usize>(
        &self,
        v: usize,
        st: usize,
        n: usize,
        p: &mut [*const u8; K],
        s: &mut [isize; K],
    ) -> usize {
        let Some(tail) = &self.tail else {
            return n;
        };
        if tail.args[..K].iter().all(|a| *a != TailArg::Direct) {
            return n;
        }
        let (shape, strides) = (&self.pass.shape, &self.pass.strides);
        let along = self
            .order
            .iter()
            .copied()
            .find(|&d| st > 0 && strides[d] as usize == st);
        let mut idx = [0usize; crate::engine::shape::MAX_NDIM + 1];
        let mut rest = v;
        for &d in self.order.iter().rev() {
            idx[d] = rest / strides[d] as usize;
            rest %= strides[d] as usize;
        }
        let piece = match along {
            Some(a) => n.min(shape[a] - idx[a]),
            None => 1,
        };
        for k in 0..K {
            match (tail.args[k], tail.srcs[k]) {
                (TailArg::Direct, Src::Operand(j)) => {
                    let sj = &self.st[j - 1];
                    let off: isize = self.order.iter().map(|&d| idx[d] as isize * sj[d]).sum();
                    p[k] = self.base[j - 1].wrapping_offset(off) as *const u8;
                    s[k] = along.map_or(0, |a| sj[a]);
                }
                (TailArg::Direct, Src::Const(c)) => {
                    p[k] = self.pass.tape.consts[c].ptr() as *const u8;
                    s[k] = 0;
                }
                _ => {}
            }
        }
        piece
    }
}
