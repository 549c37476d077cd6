//! Fused expressions: a short postfix program over input tensors, constants and the elementwise
//! operations, evaluated in one pass over memory (see `engine::expr`).
use super::boundary::call;
use super::handle::{self, bc_tensor, check_ndim, hand_out, out_handle, slice_in};
use super::ops::op_in;
use super::reduce::reduce_op_in;
use super::settings::{emit, options};
use super::status::FfiError;
use super::tensor::dtype_in;
use super::ternary::op_in as ternary_op_in;
use super::unary::op_in as unary_op_in;
use crate::engine::alloc::{try_collect, try_small_with_capacity, try_vec};
use crate::engine::expr::{self, Constant, Step};
use crate::engine::tensor::Scalar;
use crate::engine::{reduce, Tensor};
use smallvec::SmallVec;

/// A step that pushes input number `arg` (an index into the `inputs` array).
pub const BC_EXPR_INPUT: i32 = 0;
/// A step that pushes a constant: a 0-d tensor of dtype `arg` (a `BC_DTYPE_*` code), holding
/// `float_value` (rounded to the dtype) for the floating dtypes and `int_value` (converted as a C
/// cast: wrapping; non-zero is true) for bool and the integers. It promotes as a 0-d tensor
/// does: `int32 tensor * float64 constant` is float64, `float16 tensor * float64 constant` is
/// float16.
pub const BC_EXPR_CONST: i32 = 1;
/// A step that pops `b`, then `a`, and pushes `a op b`, for `arg` a `BC_OP_*` code (as
/// `bc_binary`).
pub const BC_EXPR_OP: i32 = 2;
/// A step that pops `b`, `a`, then `cond`, and pushes `where(cond, a, b)` (as `bc_where`; `arg`
/// is not read).
pub const BC_EXPR_WHERE: i32 = 3;
/// A step that pops `x` and pushes `op(x)`, for `arg` a `BC_UNARY_*` code (as `bc_unary`; the
/// last step: as `bc_unary_out`), in the same single pass as the binary steps (into an `out` of
/// the result's own type; into another type, call by call): the same results, errors and types.
pub const BC_EXPR_UNARY: i32 = 4;
/// A step that pops `c`, `b`, then `input`, and pushes `op(input, b, c)` for `arg` a
/// `BC_TERNARY_*` code, as the call with three tensors (the last step: its `_out` form):
/// `BC_TERNARY_LERP` is `bc_lerp(input, end, weight)`, `BC_TERNARY_ADDCMUL` and
/// `BC_TERNARY_ADDCDIV` are `bc_addcmul` / `bc_addcdiv(input, tensor1, tensor2, value)`,
/// `BC_TERNARY_CLAMP` is `bc_clamp(input, min, max)` with both bounds. Their `value` is the
/// step's number: `float_value` as a float, except that `float_value` `+0.0` (all bits zero)
/// gives `int_value` as an integer (`bc_scalar_int`: give an integer `value` in `int_value` with
/// `float_value` 0; a zero-filled step has `value` 0); the other operations do not read it. A
/// number weight or bound is a `BC_EXPR_CONST` step, which is a 0-d tensor: it takes part as
/// `bc_lerp`'s 0-d weight tensor or `bc_clamp`'s 0-d bound tensors do (PyTorch's
/// `torch.lerp(a, b, torch.tensor(w))`), not as `bc_lerp_scalar`'s or `bc_clamp_scalar`'s
/// numbers: a float64 0-d weight with float16 tensors gives float16 read rounded to float16
/// (a number weight is read in float32), and an int32 tensor clamped by float64 0-d bounds gives
/// float64 (by number bounds, float32). Run in the same single pass as the other steps (into an
/// `out` of the result's own type; into another type, call by call): the same results, errors
/// and types.
pub const BC_EXPR_TERNARY: i32 = 5;
/// Most steps a program may have.
pub const BC_EXPR_MAX_STEPS: usize = 64;
/// Most values a program may have waiting at once.
pub const BC_EXPR_MAX_DEPTH: usize = 16;
const _: () = assert!(BC_EXPR_MAX_STEPS == expr::MAX_STEPS && BC_EXPR_MAX_DEPTH == expr::MAX_DEPTH);

/// One step of an expression program, for `bc_expr_eval` and `bc_expr_eval_out`: a postfix
/// (reverse Polish) program such as `{INPUT 0, INPUT 1, OP BC_OP_MUL, INPUT 2, OP BC_OP_ADD}`
/// for `a * b + c`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct bc_expr_step {
    /// `BC_EXPR_INPUT`, `BC_EXPR_CONST`, `BC_EXPR_OP`, `BC_EXPR_WHERE`, `BC_EXPR_UNARY` or
    /// `BC_EXPR_TERNARY`.
    pub kind: i32,
    /// The input's index, the constant's dtype, or the operation's `BC_OP_*` (`BC_UNARY_*`,
    /// `BC_TERNARY_*`) code.
    pub arg: i32,
    /// A `BC_EXPR_CONST` of bool or an integer dtype: its value; a `BC_EXPR_TERNARY` step's
    /// integer `value` (see `BC_EXPR_TERNARY`).
    pub int_value: i64,
    /// A `BC_EXPR_CONST` of a floating dtype: its value; a `BC_EXPR_TERNARY` step's float `value`.
    pub float_value: f64,
}

/// The engine's form of `steps`, checked against `ninputs` inputs.
///
/// # Safety
/// `steps` valid for `nsteps` reads.
pub(super) unsafe fn program_in(
    steps: *const bc_expr_step,
    nsteps: usize,
    ninputs: usize,
) -> Result<SmallVec<[Step; 16]>, FfiError> {
    if nsteps > BC_EXPR_MAX_STEPS {
        return Err(FfiError::invalid(format_args!(
            "an expression has at most {BC_EXPR_MAX_STEPS} steps; this one has {nsteps}"
        )));
    }
    // SAFETY: the caller's contract.
    let raw = unsafe { slice_in(steps, nsteps, "steps")? };
    let mut program = try_small_with_capacity(nsteps)?;
    for (k, s) in raw.iter().enumerate() {
        let step = match s.kind {
            BC_EXPR_INPUT => Step::Input(usize::try_from(s.arg).map_err(|_| {
                FfiError::invalid(format_args!("step {k}: input index {} is negative", s.arg))
            })?),
            BC_EXPR_CONST => Step::Const(Constant::new(
                dtype_in(s.arg).map_err(|_| {
                    FfiError::invalid(format_args!("step {k}: unknown dtype code {}", s.arg))
                })?,
                s.int_value,
                s.float_value,
            )),
            BC_EXPR_OP => Step::Binary(op_in(s.arg).map_err(|_| {
                FfiError::invalid(format_args!("step {k}: unknown op code {}", s.arg))
            })?),
            BC_EXPR_WHERE => Step::Where,
            BC_EXPR_UNARY => Step::Unary(unary_op_in(s.arg).map_err(|_| {
                FfiError::invalid(format_args!("step {k}: unknown unary op code {}", s.arg))
            })?),
            BC_EXPR_TERNARY => {
                let op = ternary_op_in(s.arg).ok_or_else(|| {
                    FfiError::invalid(format_args!("step {k}: unknown ternary op code {}", s.arg))
                })?;
                Step::Ternary(op, ternary_value(s))
            }
            other => {
                return Err(FfiError::invalid(format_args!(
                    "step {k}: unknown step kind {other}"
                )))
            }
        };
        program.push(step);
    }
    expr::check_program(&program, ninputs)?;
    Ok(program)
}

/// A `BC_EXPR_TERNARY` step's `value` (see there): `+0.0` in `float_value` leaves the integer.
fn ternary_value(s: &bc_expr_step) -> Scalar {
    match s.float_value.to_bits() {
        0 => Scalar::Int(s.int_value),
        _ => Scalar::Float(s.float_value),
    }
}

/// The tensors behind `inputs[0..n]` (cheap clones: storage is shared).
///
/// # Safety
/// `inputs` valid for `n` reads.
unsafe fn inputs_in(inputs: *const *const bc_tensor, n: usize) -> Result<Vec<Tensor>, FfiError> {
    // SAFETY: the caller's contract.
    let handles = unsafe { slice_in(inputs, n, "inputs")? };
    let mut tensors = try_vec(n)?;
    for &h in handles {
        tensors.push(handle::get(h, "inputs[i]")?);
    }
    Ok(tensors)
}

/// `*out` = the value of the expression `steps[0..nsteps]` over `inputs[0..ninputs]`, in a new
/// tensor, computed in one pass over memory.
///
/// The program is postfix (see `bc_expr_step`): inputs and constants are pushed, each operation
/// pops its operands and pushes its result, and one value must be left. The result is exactly
/// what the separate calls give (bit for bit, except that a NaN may be any NaN: its sign and
/// payload depend on the order operands meet in a loop), step by step (`bc_binary` for each `BC_EXPR_OP`, `bc_where` for
/// each `BC_EXPR_WHERE`, `bc_unary` for each `BC_EXPR_UNARY`, `bc_lerp`, `bc_addcmul`,
/// `bc_addcdiv` or `bc_clamp` for each `BC_EXPR_TERNARY`, a 0-d tensor for each constant): the same promotion, broadcasting and
/// rounding at each step's type, the same errors with the same texts, the same warnings under
/// `bc_set_broadcast_warning` / `bc_set_legacy_fallback` (given as each step completes, so the
/// steps before a failing one give theirs). Only the intermediate results never go
/// through memory: the operations run over blocks of a few hundred elements that stay in the
/// cache (an operation whose result is broadcast further, such as a product of two columns added
/// to a matrix, is computed once on its own first). Expressions the single pass does not take (more
/// than 8 distinct tensors, an integer divisor, a warning, an error) are evaluated call by call,
/// with the same results. Every input may be used any number of times.
/// On success the caller owns `*out` (free it with `bc_tensor_free`); on failure `*out` is NULL.
///
/// Arguments are checked in order: `out` (NULL), `steps` (NULL, then the program), `inputs`
/// (NULL, then each handle); then the steps run.
///
/// # Returns
/// `BC_OK`; `BC_ERR_INVALID_ARG` (a malformed program: more than `BC_EXPR_MAX_STEPS` steps, an
/// unknown step kind, dtype or op code, an input index out of range, an operation without its
/// operands, more than `BC_EXPR_MAX_DEPTH` values waiting, no operation, or not exactly one
/// value left; the message names the step); `BC_ERR_NULL_ARG`; `BC_ERR_INVALID_HANDLE`; and
/// whatever the separate calls return (`BC_ERR_SHAPE`, `BC_ERR_DTYPE`, `BC_ERR_VALUE`,
/// `BC_ERR_OVERFLOW`, `BC_ERR_ALLOC`), from the first step that fails.
///
/// # Safety
/// `steps` valid for `nsteps` reads, `inputs` for `ninputs` reads (`(NULL, 0)` is an empty
/// array), `out` for one write.
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn bc_expr_eval(
    steps: *const bc_expr_step,
    nsteps: usize,
    inputs: *const *const bc_tensor,
    ninputs: usize,
    out: *mut *mut bc_tensor,
) -> i32 {
    call(|| {
        // SAFETY (all three): the caller's contract.
        let slot = unsafe { out_handle(out, "out")? };
        let program = unsafe { program_in(steps, nsteps, ninputs)? };
        let tensors = unsafe { inputs_in(inputs, ninputs)? };
        let refs: Vec<&Tensor> = try_collect(tensors.iter())?;
        let (result, warnings) = expr::eval(&program, &refs, options(), &mut |w| emit(w))?;
        hand_out(slot, result)?;
        emit(&warnings);
        Ok(())
    })
}

/// The value of the expression `steps[0..nsteps]` over `inputs[0..ninputs]` written into the
/// caller's `out`, as `bc_expr_eval` computes it: the last operation is the one that writes, as
/// `bc_binary_out` (or the last step's own `_out` form, such as `bc_where_out`) would, so `out` must have exactly the result's shape and a
/// type the last operation's result can be cast to (for `where`, exactly its type), may not have
/// elements sharing memory, nor partly overlap that operation's operands. `out` may be one of the
/// inputs (`x = x * a + b`): each element is read before it is written. When the call fails,
/// `out` is unchanged.
///
/// Arguments are checked as by `bc_expr_eval`, the `out` handle after the inputs.
///
/// # Returns
/// As `bc_expr_eval`, and as `bc_binary_out` for `out` (`BC_ERR_SHAPE`, `BC_ERR_DTYPE`,
/// `BC_ERR_OVERLAP`, `BC_ERR_READ_ONLY`).
///
/// # Safety
/// `steps` valid for `nsteps` reads, `inputs` for `ninputs` reads (`(NULL, 0)` is an empty
/// array).
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn bc_expr_eval_out(
    steps: *const bc_expr_step,
    nsteps: usize,
    inputs: *const *const bc_tensor,
    ninputs: usize,
    out: *mut bc_tensor,
) -> i32 {
    call(|| {
        if out.is_null() {
            return Err(FfiError::NullArg("out"));
        }
        // SAFETY (both): the caller's contract.
        let program = unsafe { program_in(steps, nsteps, ninputs)? };
        let tensors = unsafe { inputs_in(inputs, ninputs)? };
        let out = handle::get(out, "out")?;
        let refs: Vec<&Tensor> = try_collect(tensors.iter())?;
        let warnings = expr::eval_out(&program, &refs, &out, options(), &mut |w| emit(w))?;
        emit(&warnings);
        Ok(())
    })
}

/// `*out` = the reduction `op` (a `BC_REDUCE_*` code) over `dims[0..ndims]` of the value of the
/// expression `steps[0..nsteps]` over `inputs[0..ninputs]`: `bc_expr_eval` followed by
/// `bc_reduce`, in one call that, when the expression runs as one pass, never makes the
/// expression's value. For example `((a - b)**2).mean(0)` is `{INPUT 0, INPUT 1, OP BC_OP_SUB,
/// UNARY BC_UNARY_SQUARE}` with `BC_REDUCE_MEAN` over `{0}`, and a masked sum
/// `where(m, a, 0).sum()` is `{INPUT m, INPUT a, CONST 0, WHERE}` with `BC_REDUCE_SUM` and no
/// dims.
///
/// The result equals `bc_expr_eval` then `bc_reduce(op, value, dims, ndims, keepdim)` bit for bit,
/// under the rule of every fused call: a NaN may be any NaN (its sign and payload depend on the
/// order operands meet in a loop, which the compiler may choose differently in each): the
/// reduction's types (a sum or product of bools and integers is int64; a mean of them is refused),
/// dims (`(NULL, 0)` reduces every dimension, negative ones count from the end, a 0-d value takes 0
/// or -1), `keepdim`, and its summation order, which follows the layout `bc_expr_eval` gives the
/// value. How: the reduction asks for its elements a tile at a time, in its own order; the
/// expression's pass computes each tile (a few thousand elements) into a stage that stays in the
/// cache, which the reduction then reads as it would read the value. So only the result is written,
/// and the inputs are read once (a column reduction of a row-major value reads each row as one
/// piece). A sum or mean of a float32 value whose last step is `where` (at most one of its
/// operands computed), or `square` of a difference of inputs, goes further: the reduction
/// applies that step itself as it reads its operands (inputs and constants where they are, a
/// computed one from the stage), so a masked sum or a mean squared difference of inputs is one
/// loop over them. Expressions the single pass does not take (see `bc_expr_eval`: an error, a
/// warning, an integer divisor, more than 8 distinct tensors, an empty value) are evaluated
/// whole and then reduced, with the same results; `bc_plan_expr_reduce` says which way a call
/// runs. The accuracy contract is `bc_reduce`'s. The one difference from the two calls: the
/// value is never allocated, so a value too large for memory does not fail with
/// `BC_ERR_ALLOC` on the fused path.
/// On success the caller owns `*out` (free it with `bc_tensor_free`); on failure `*out` is NULL.
///
/// Arguments are checked in order: `out` (NULL), `steps` (NULL, then the program), `inputs`
/// (NULL, then each handle), `op`, `ndims`, `dims` (NULL); then the expression's errors, as
/// `bc_expr_eval` gives them, then the reduction's, as `bc_reduce` gives them (warnings too: the
/// expression's before the reduction's checks).
///
/// # Returns
/// `BC_OK`; the statuses of `bc_expr_eval`, then those of `bc_reduce` (`BC_ERR_INVALID_ARG`
/// for an unknown code, a dim out of range or repeated, more than `BC_MAX_NDIM` dims;
/// `BC_ERR_DTYPE` for a mean of a non-floating value; `BC_ERR_SHAPE` for amax/amin of nothing).
///
/// # Safety
/// `steps` valid for `nsteps` reads, `inputs` for `ninputs` reads (`(NULL, 0)` is an empty
/// array), `dims` for `ndims` reads, `out` for one write.
#[no_mangle]
#[must_use]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn bc_expr_reduce(
    steps: *const bc_expr_step,
    nsteps: usize,
    inputs: *const *const bc_tensor,
    ninputs: usize,
    op: i32,
    dims: *const i64,
    ndims: usize,
    keepdim: bool,
    out: *mut *mut bc_tensor,
) -> i32 {
    call(|| {
        // SAFETY (this block): the caller's contract.
        let slot = unsafe { out_handle(out, "out")? };
        let program = unsafe { program_in(steps, nsteps, ninputs)? };
        let tensors = unsafe { inputs_in(inputs, ninputs)? };
        let op = reduce_op_in(op)?;
        check_ndim(ndims, "dims")?;
        let dims = unsafe { slice_in(dims, ndims, "dims")? };
        let refs: Vec<&Tensor> = try_collect(tensors.iter())?;
        let result =
            reduce::expr_reduce(op, &program, &refs, dims, keepdim, options(), &mut |w| {
                emit(w)
            })?;
        hand_out(slot, result)
    })
}
