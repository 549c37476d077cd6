//! The planner: what an elementwise call would do, from its operands' types and geometry alone,
//! with no tensor and no memory. The engine decides it with the checks and decisions the call
//! itself runs, so the planner and the call agree by construction.
use super::boundary::call;
use super::expr::{bc_expr_step, program_in};
use super::handle::{check_ndim, dims_in, slice_in, write_out, BC_MAX_NDIM};
use super::ops::op_in;
use super::reduce::reduce_op_in;
use super::scalar::{bc_scalar, number};
use super::settings::options;
use super::status::FfiError;
use super::tensor::{dtype_in, strides_in};
use crate::engine::alloc::{try_collect, try_vec};
use crate::engine::expr;
use crate::engine::ops::{self, Dest, Geometry, LoopKind, Report};
use crate::engine::shape::{contiguous_strides, Dims, Strides};
use crate::engine::tensor::check_geometry;
use crate::engine::{reduce, DType, Warning};

/// An operand described without memory, for the planner: what a tensor of this type, shape and
/// strides would be.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct bc_geometry {
    /// A `BC_DTYPE_*` code.
    pub dtype: i32,
    /// Number of dimensions, at most `BC_MAX_NDIM`.
    pub ndim: usize,
    /// `ndim` sizes (NULL when `ndim` is 0).
    pub shape: *const i64,
    /// `ndim` strides in elements, not negative (but where a stride addresses nothing: on a
    /// dimension of size 1, or when a size is 0, as a view of an empty tensor can have); NULL
    /// for row-major.
    pub strides: *const i64,
}

/// What a call would do, as `bc_plan_binary` and its forms report it. Only the first `ndim`
/// entries of `shape` and `strides`, and the first `loop_ndim` of `loop_shape`, are meaningful
/// (the rest are 0). The struct has no padding: every byte is written.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct bc_plan {
    /// The result type (`BC_DTYPE_*`): a new result's type; in place or into `out`, the type
    /// cast to the written tensor's type.
    pub dtype: i32,
    /// The type the operation computes in (`BC_DTYPE_*`); inputs of another type are converted
    /// to it first. For a reduction, the type it accumulates in.
    pub compute_dtype: i32,
    /// `BC_PLAN_WARNING_*` bits: the warnings the call would give under the current switches;
    /// and `BC_PLAN_CHECKS_DIVISOR`.
    pub flags: u32,
    /// The inner loop the call would run: a `BC_LOOP_*` code. For a reduction, the layout along
    /// the rows it reads (an output's elements, or outputs side by side): `BC_LOOP_CONTIGUOUS`,
    /// `BC_LOOP_BROADCAST` (an input repeated along them), else `BC_LOOP_STRIDED`; when every
    /// output reduces nothing, `BC_LOOP_CONTIGUOUS` (the result is filled).
    pub loop_kind: i32,
    /// The result's number of dimensions.
    pub ndim: usize,
    /// The result's shape (in place, the target's).
    pub shape: [i64; BC_MAX_NDIM],
    /// The written tensor's strides in elements: a new result's layout (PyTorch's, see
    /// `bc_binary`), else the target's or `out`'s own.
    pub strides: [i64; BC_MAX_NDIM],
    /// The number of dimensions iterated, once size-1 dimensions are dropped and dimensions
    /// that every operand steps through evenly are merged. For a reduction 2 (0 when the result
    /// has no elements or is a view).
    pub loop_ndim: usize,
    /// The sizes iterated, outermost first. For a reduction: the number of outputs, and the
    /// elements each reduces.
    pub loop_shape: [i64; BC_MAX_NDIM],
    /// The threads the work would be shared among, the calling one included (1: it stays on
    /// the calling thread). Under concurrent calls fewer may take part.
    pub threads: usize,
    /// The bytes of element memory the call would allocate: a new result and every temporary
    /// (inputs converted to the computation type, a result computed before its cast into the
    /// written tensor, the legacy fallback's copy). A reduction's accumulators (per thread, and
    /// the partial sums of a reduction split among threads) are working memory, not counted.
    pub alloc_bytes: usize,
}

/// `bc_plan.flags`: operands of different shapes broadcast with the same number of elements
/// (a warning when `bc_set_broadcast_warning` is on).
pub const BC_PLAN_WARNING_BROADCAST: u32 = 1;
/// `bc_plan.flags`: the legacy 1-D fallback applies (`bc_set_legacy_fallback` is on), with its
/// warning.
pub const BC_PLAN_WARNING_FALLBACK: u32 = 2;
/// `bc_plan.flags`: `where` with a uint8 condition gives its deprecation warning (only the first
/// such call in the process does).
pub const BC_PLAN_WARNING_WHERE_UINT8: u32 = 4;
/// `bc_plan.flags`: the call reads the divisor's elements and refuses a zero among them
/// (`BC_ERR_VALUE`, PyTorch's `ZeroDivisionError`: integer division, remainder, fmod), which only
/// the call can see.
pub const BC_PLAN_CHECKS_DIVISOR: u32 = 256;
/// `bc_plan.flags` (`bc_plan_expr_reduce` only): the expression and the reduction run as one
/// pass, the expression's value never made; without it the value is evaluated whole, then
/// reduced.
pub const BC_PLAN_FUSED: u32 = 512;

/// `bc_plan.loop_kind`: nothing to compute (the result has no elements).
pub const BC_LOOP_NONE: i32 = 0;
/// `bc_plan.loop_kind`: every operand contiguous along the inner loop (or one element).
pub const BC_LOOP_CONTIGUOUS: i32 = 1;
/// `bc_plan.loop_kind`: contiguous, with an input repeated along the inner loop (a row or a
/// scalar broadcast).
pub const BC_LOOP_BROADCAST: i32 = 2;
/// `bc_plan.loop_kind`: an input strided along the inner loop but closer to contiguous along
/// another (a transposed operand): walked in 2-D tiles.
pub const BC_LOOP_TILED: i32 = 3;
/// `bc_plan.loop_kind`: other strides.
pub const BC_LOOP_STRIDED: i32 = 4;

/// Plans `*out = a op b` (`bc_binary`) from the operands' types and geometry, without tensors
/// or memory: the result's type, shape and layout, the warnings, and how the call would run.
///
/// The checks and decisions are the call's own, in its order, under the current switches and
/// thread settings, so when the planner succeeds the call succeeds with this result, and when it
/// fails the call fails with the same status and message (`bc_last_error_message`,
/// `bc_last_error_info`). Only what needs memory is not known here: `BC_ERR_ALLOC` when memory
/// runs out.
///
/// # Returns
/// `BC_OK` (`*plan` written); the statuses of `bc_binary` for these operands (`BC_ERR_SHAPE`,
/// `BC_ERR_DTYPE`, `BC_ERR_OVERFLOW` with their messages); `BC_ERR_INVALID_ARG` (unknown op or
/// dtype code, a negative size or stride, more than `BC_MAX_NDIM` dimensions); `BC_ERR_OVERFLOW`
/// (an operand's elements or extent do not fit, as no tensor's can); `BC_ERR_NULL_ARG`;
/// `BC_ERR_ALLOC`. On failure `*plan` is not written.
///
/// # Safety
/// `a` and `b` must each be NULL or point to a `bc_geometry` whose arrays are valid for `ndim`
/// reads; `plan` must be valid for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_plan_binary(
    op: i32,
    a: *const bc_geometry,
    b: *const bc_geometry,
    plan: *mut bc_plan,
) -> i32 {
    // SAFETY: the caller's contract.
    unsafe { plan_call(op, [(a, "a"), (b, "b")], Form::New, plan) }
}

/// Plans `target op= other` (`bc_binary_inplace`) from the operands' types and geometry, as
/// `bc_plan_binary` does. The written tensor's memory is not known here: the call alone refuses
/// a read-only target (`BC_ERR_READ_ONLY`) and one that partly overlaps `other`
/// (`BC_ERR_OVERLAP`); a target whose own elements share memory (an expanded view) is refused
/// by both.
///
/// # Returns
/// As `bc_plan_binary`, with the statuses of `bc_binary_inplace`.
///
/// # Safety
/// As `bc_plan_binary`.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_plan_binary_inplace(
    op: i32,
    target: *const bc_geometry,
    other: *const bc_geometry,
    plan: *mut bc_plan,
) -> i32 {
    // SAFETY: the caller's contract.
    unsafe {
        plan_call(
            op,
            [(target, "target"), (other, "other")],
            Form::InPlace,
            plan,
        )
    }
}

/// Plans `a op b` into `out` (`bc_binary_out`) from the operands' types and geometry, as
/// `bc_plan_binary_inplace` does for its target.
///
/// # Returns
/// As `bc_plan_binary`, with the statuses of `bc_binary_out`.
///
/// # Safety
/// As `bc_plan_binary`; `out` too.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_plan_binary_out(
    op: i32,
    a: *const bc_geometry,
    b: *const bc_geometry,
    out: *const bc_geometry,
    plan: *mut bc_plan,
) -> i32 {
    // SAFETY: the caller's contract.
    unsafe { plan_call(op, [(a, "a"), (b, "b")], Form::Out(out), plan) }
}

/// Plans `*out = t op s` (`bc_binary_scalar`) for a number `s`, from `t`'s type and geometry,
/// as `bc_plan_binary` does: the checks and decisions of the call, in its order. The bytes
/// counted include the 8 or fewer that hold the number during the call.
///
/// # Returns
/// `BC_OK` (`*plan` written); the statuses of `bc_binary_scalar` for this operand and number
/// (`BC_ERR_DTYPE`, `BC_ERR_INVALID_ARG` for an operation that takes no number or an unknown
/// `s.kind`, `BC_ERR_VALUE` for `BC_OP_POW`'s refusals, with their messages);
/// `BC_ERR_INVALID_ARG` (unknown op or dtype code, a negative size or stride, more than
/// `BC_MAX_NDIM` dimensions); `BC_ERR_OVERFLOW`; `BC_ERR_NULL_ARG`; `BC_ERR_ALLOC`. On failure
/// `*plan` is not written.
///
/// # Safety
/// `t` must be NULL or point to a `bc_geometry` whose arrays are valid for `ndim` reads; `plan`
/// must be valid for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_plan_binary_scalar(
    op: i32,
    t: *const bc_geometry,
    s: bc_scalar,
    plan: *mut bc_plan,
) -> i32 {
    // SAFETY: the caller's contract.
    unsafe { plan_number(op, (t, "t"), s, false, false, plan) }
}

/// Plans `*out = s op t` (`bc_binary_rscalar`) for a number `s`, as `bc_plan_binary_scalar`.
///
/// # Returns
/// As `bc_plan_binary_scalar`, with the statuses of `bc_binary_rscalar`.
///
/// # Safety
/// As `bc_plan_binary_scalar`.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_plan_binary_rscalar(
    op: i32,
    s: bc_scalar,
    t: *const bc_geometry,
    plan: *mut bc_plan,
) -> i32 {
    // SAFETY: the caller's contract.
    unsafe { plan_number(op, (t, "t"), s, true, false, plan) }
}

/// Plans `target op= s` (`bc_binary_scalar_inplace`) for a number `s`, as
/// `bc_plan_binary_scalar`; the target's memory is not known here: the call alone refuses a
/// read-only target (`BC_ERR_READ_ONLY`).
///
/// # Returns
/// As `bc_plan_binary_scalar`, with the statuses of `bc_binary_scalar_inplace`.
///
/// # Safety
/// As `bc_plan_binary_scalar`, `target` for `t`.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_plan_binary_scalar_inplace(
    op: i32,
    target: *const bc_geometry,
    s: bc_scalar,
    plan: *mut bc_plan,
) -> i32 {
    // SAFETY: the caller's contract.
    unsafe { plan_number(op, (target, "target"), s, false, true, plan) }
}

/// Plans `*out = where(cond, a, b)` (`bc_where`) from the operands' types and geometry, as
/// `bc_plan_binary` does. `BC_PLAN_WARNING_WHERE_UINT8` is set when the call would warn now
/// (a uint8 condition, and no `where` has warned yet in this process).
///
/// # Returns
/// `BC_OK` (`*plan` written); the statuses of `bc_where` for these operands (`BC_ERR_DTYPE` for
/// a condition neither bool nor uint8, `BC_ERR_SHAPE`, with their messages);
/// `BC_ERR_INVALID_ARG`; `BC_ERR_OVERFLOW`; `BC_ERR_NULL_ARG`; `BC_ERR_ALLOC`. On failure
/// `*plan` is not written.
///
/// # Safety
/// `cond`, `a` and `b` must each be NULL or point to a `bc_geometry` whose arrays are valid for
/// `ndim` reads; `plan` must be valid for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_plan_where(
    cond: *const bc_geometry,
    a: *const bc_geometry,
    b: *const bc_geometry,
    plan: *mut bc_plan,
) -> i32 {
    // SAFETY: the caller's contract.
    unsafe { plan_where(cond, a, b, None, plan) }
}

/// Plans `where(cond, a, b)` into `out` (`bc_where_out`), as `bc_plan_where`. The call alone
/// refuses an `out` that is read-only or partly overlaps an input; one whose own elements share
/// memory is refused by both.
///
/// # Returns
/// As `bc_plan_where`, with the statuses of `bc_where_out` (`BC_ERR_DTYPE` for an `out` not
/// exactly of the result type, `BC_ERR_SHAPE` for one not of the broadcast shape,
/// `BC_ERR_OVERLAP`).
///
/// # Safety
/// As `bc_plan_where`; `out` too.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_plan_where_out(
    cond: *const bc_geometry,
    a: *const bc_geometry,
    b: *const bc_geometry,
    out: *const bc_geometry,
    plan: *mut bc_plan,
) -> i32 {
    // SAFETY: the caller's contract.
    unsafe { plan_where(cond, a, b, Some(out), plan) }
}

/// Plans `*out = ` the reduction `op` of `t` over `dims[0..ndims]` (`bc_reduce`, and so
/// `bc_sum`, `bc_mean`, `bc_prod`, `bc_amax`, `bc_amin`) from `t`'s type and geometry, as
/// `bc_plan_binary` does: the checks and decisions of the call, in its order. The plan's
/// `compute_dtype` is the type elements are accumulated in (float32 for sums and means of
/// float16, bfloat16 and float32; int64 for sums and products of bools and integers); its loop is
/// described as for every reduction (see `bc_plan.loop_shape`); its bytes are the result's.
///
/// # Returns
/// `BC_OK` (`*plan` written); the statuses of `bc_reduce` for this operand and these dims
/// (`BC_ERR_INVALID_ARG` for a dim out of range or repeated, `BC_ERR_DTYPE`, `BC_ERR_SHAPE`, with
/// their messages); `BC_ERR_INVALID_ARG` (unknown code, more than `BC_MAX_NDIM` dims, a bad
/// geometry); `BC_ERR_OVERFLOW`; `BC_ERR_NULL_ARG` (`t`, `plan`, or `dims` NULL with `ndims` >
/// 0); `BC_ERR_ALLOC`. On failure `*plan` is not written.
///
/// # Safety
/// `t` must be NULL or point to a `bc_geometry` whose arrays are valid for `ndim` reads; `dims`
/// must be valid for `ndims` reads; `plan` for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_plan_reduce(
    op: i32,
    t: *const bc_geometry,
    dims: *const i64,
    ndims: usize,
    keepdim: bool,
    plan: *mut bc_plan,
) -> i32 {
    let body = || {
        let op = reduce_op_in(op)?;
        check_ndim(ndims, "dims")?;
        // SAFETY (both): the caller's contract.
        let dims = unsafe { slice_in(dims, ndims, "dims")? };
        let t = unsafe { geometry_in(t, "t")? };
        Ok(reduce::plan_reduce(op, t.view(), dims, keepdim)?)
    };
    // SAFETY: `plan` as the caller's contract says.
    unsafe { planned(plan, body) }
}

/// Plans `*out = t` summed to `shape[0..ndim]` (`bc_tensor_sum_to_size`) from `t`'s type and
/// geometry, as `bc_plan_reduce`. When nothing is summed the call gives a view of `t`: the plan
/// has `t`'s type, shape and strides, `BC_LOOP_NONE`, no loop and no bytes.
///
/// # Returns
/// `BC_OK` (`*plan` written); the statuses of `bc_tensor_sum_to_size` (`BC_ERR_SHAPE` with its
/// message); `BC_ERR_INVALID_ARG` (more than `BC_MAX_NDIM` sizes, a bad geometry);
/// `BC_ERR_OVERFLOW`; `BC_ERR_NULL_ARG` (`t`, `plan`, or `shape` NULL with `ndim` > 0);
/// `BC_ERR_ALLOC`. On failure `*plan` is not written.
///
/// # Safety
/// `t` must be NULL or point to a `bc_geometry` whose arrays are valid for `ndim` reads; `shape`
/// must be valid for `ndim` reads; `plan` for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_plan_sum_to_size(
    t: *const bc_geometry,
    shape: *const i64,
    ndim: usize,
    plan: *mut bc_plan,
) -> i32 {
    let body = || {
        check_ndim(ndim, "shape")?;
        // SAFETY (both): the caller's contract.
        let shape = unsafe { slice_in(shape, ndim, "shape")? };
        let t = unsafe { geometry_in(t, "t")? };
        Ok(reduce::plan_sum_to_size(t.view(), shape)?)
    };
    // SAFETY: `plan` as the caller's contract says.
    unsafe { planned(plan, body) }
}

/// Plans `*out = sum_to_size(a op b, shape[0..ndim])` (`bc_binary_sum_to`) from the operands'
/// types and geometry, as `bc_plan_reduce`; `compute_dtype` is the operation's computation type
/// (as `bc_plan_binary` reports it), the bytes count the inputs converted to it. When nothing is
/// summed the plan is `bc_plan_binary`'s (without the compatibility switches, which
/// `bc_binary_sum_to` ignores). `BC_PLAN_CHECKS_DIVISOR` says the call reads `b` for a zero
/// integer divisor, as for `bc_plan_binary`; the call also refuses one before a `shape` that
/// the planner refuses.
///
/// # Returns
/// `BC_OK` (`*plan` written); the statuses of `bc_binary_sum_to` for these operands
/// (`BC_ERR_SHAPE`, `BC_ERR_DTYPE`, `BC_ERR_OVERFLOW`, with their messages);
/// `BC_ERR_INVALID_ARG` (unknown op, more than `BC_MAX_NDIM` sizes, a bad geometry);
/// `BC_ERR_NULL_ARG`; `BC_ERR_ALLOC`. On failure `*plan` is not written.
///
/// # Safety
/// `a` and `b` must each be NULL or point to a `bc_geometry` whose arrays are valid for `ndim`
/// reads; `shape` must be valid for `ndim` reads; `plan` for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_plan_binary_sum_to(
    op: i32,
    a: *const bc_geometry,
    b: *const bc_geometry,
    shape: *const i64,
    ndim: usize,
    plan: *mut bc_plan,
) -> i32 {
    let body = || {
        let op = op_in(op)?;
        check_ndim(ndim, "shape")?;
        // SAFETY (this block): the caller's contract.
        let shape = unsafe { slice_in(shape, ndim, "shape")? };
        let a = unsafe { geometry_in(a, "a")? };
        let b = unsafe { geometry_in(b, "b")? };
        Ok(reduce::plan_binary_sum_to(op, a.view(), b.view(), shape)?)
    };
    // SAFETY: `plan` as the caller's contract says.
    unsafe { planned(plan, body) }
}

/// Plans `*out` = the expression `steps[0..nsteps]` over inputs of these types and geometries
/// (`bc_expr_eval`), as `bc_plan_binary` does: the program is checked as the call checks it (the
/// same statuses and messages for a malformed program), then each step as its call, so the first
/// failing step's status and message are the call's. `dtype`, `compute_dtype`, `shape` and
/// `strides` are those of the last operation's result; the warning bits gather every step's; the
/// loop, threads and bytes are those of how the call would run it:
/// - in one pass: the pass's loop and threads; `alloc_bytes` counts the result and the operations
///   computed first because their result is broadcast further (every call of their
///   sub-expressions);
/// - call by call (an error-free program the single pass does not take): the last call's loop and
///   threads; `alloc_bytes` counts every call's (each intermediate, each constant's 0-d tensor,
///   each conversion, a ternary call's 0-d `value`, the result).
///
/// Arguments are checked in order: `plan` (NULL), `steps` (NULL, then the program), `inputs`
/// (NULL, then each geometry); then the steps are planned.
///
/// # Returns
/// `BC_OK` (`*plan` written); the statuses of `bc_expr_eval` for these operands, with their
/// messages (`BC_ERR_INVALID_ARG` for a malformed program; `BC_ERR_SHAPE`, `BC_ERR_DTYPE`,
/// `BC_ERR_OVERFLOW`, `BC_ERR_VALUE` for a ternary step's `value` that its integer result type
/// cannot hold, from the first step that fails); `BC_ERR_INVALID_ARG` (unknown dtype code,
/// a negative size or stride, more than `BC_MAX_NDIM` dimensions); `BC_ERR_NULL_ARG`;
/// `BC_ERR_ALLOC`. On failure `*plan` is not written. As for `bc_plan_binary`,
/// `BC_PLAN_CHECKS_DIVISOR` says a step reads its divisor's values.
///
/// # Safety
/// `steps` valid for `nsteps` reads, `inputs` for `ninputs` reads (`(NULL, 0)` is an empty array),
/// each with arrays valid for its `ndim` reads; `plan` valid for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_plan_expr(
    steps: *const bc_expr_step,
    nsteps: usize,
    inputs: *const bc_geometry,
    ninputs: usize,
    plan: *mut bc_plan,
) -> i32 {
    // SAFETY: the caller's contract.
    unsafe { plan_expr(steps, nsteps, inputs, ninputs, None, plan) }
}

/// Plans the expression `steps[0..nsteps]` written into an `out` of this type and geometry
/// (`bc_expr_eval_out`), as `bc_plan_expr`; the last operation writes `out` as `bc_plan_binary_out`
/// (or `bc_plan_where_out`) plans it. The call alone refuses an `out` that is read-only or partly
/// overlaps an input; one whose own elements share memory is refused by both. `alloc_bytes`
/// counts no result.
///
/// Arguments are checked as by `bc_plan_expr`, the `out` geometry after the inputs.
///
/// # Returns
/// As `bc_plan_expr`, with the statuses of `bc_expr_eval_out`.
///
/// # Safety
/// As `bc_plan_expr`; `out` NULL or valid for one read, its arrays for `ndim` reads.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_plan_expr_out(
    steps: *const bc_expr_step,
    nsteps: usize,
    inputs: *const bc_geometry,
    ninputs: usize,
    out: *const bc_geometry,
    plan: *mut bc_plan,
) -> i32 {
    // SAFETY: the caller's contract.
    unsafe { plan_expr(steps, nsteps, inputs, ninputs, Some(out), plan) }
}

/// # Safety
/// As `bc_plan_expr_out` (`out` None for `bc_plan_expr`).
unsafe fn plan_expr(
    steps: *const bc_expr_step,
    nsteps: usize,
    inputs: *const bc_geometry,
    ninputs: usize,
    out: Option<*const bc_geometry>,
    plan: *mut bc_plan,
) -> i32 {
    let body = || {
        // SAFETY (this block): the caller's contract on the program and each geometry.
        let program = unsafe { program_in(steps, nsteps, ninputs)? };
        let given = unsafe { slice_in(inputs, ninputs, "inputs")? };
        let mut owned: Vec<Owned> = try_vec(ninputs)?;
        for g in given {
            owned.push(unsafe { geometry_in(g, "inputs[i]")? });
        }
        let out = out
            .map(|out| unsafe { geometry_in(out, "out") })
            .transpose()?;
        let views: Vec<Geometry<'_>> = try_collect(owned.iter().map(Owned::view))?;
        let out = out.as_ref().map(Owned::view);
        Ok(expr::plan_expr(&program, &views, out, options())?)
    };
    // SAFETY: `plan` as the caller's contract says.
    unsafe { planned(plan, body) }
}

/// Plans `*out = ` the reduction `op` over `dims[0..ndims]` of the expression `steps[0..nsteps]`
/// (`bc_expr_reduce`) over inputs of these geometries, as `bc_plan_expr` and `bc_plan_reduce`:
/// the expression's checks, then the reduction's, in the call's order. The plan is the
/// reduction's (`bc_plan_reduce`'s for the expression's value as `bc_expr_eval` lays it out),
/// with the expression's warning and divisor flags, and `BC_PLAN_FUSED` when the call runs as one
/// pass. Its bytes: the result's, and fused, those of the operations computed first (an
/// operation broadcast further); else also everything `bc_expr_eval` would allocate.
///
/// Arguments are checked as by `bc_expr_reduce` (`plan` first).
///
/// # Returns
/// `BC_OK` (`*plan` written); the statuses of `bc_plan_expr`, then of `bc_plan_reduce`. On
/// failure `*plan` is not written.
///
/// # Safety
/// `steps` valid for `nsteps` reads; `inputs` for `ninputs` reads, each geometry's arrays for
/// `ndim` reads; `dims` for `ndims` reads; `plan` for one write.
#[must_use]
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn bc_plan_expr_reduce(
    steps: *const bc_expr_step,
    nsteps: usize,
    inputs: *const bc_geometry,
    ninputs: usize,
    op: i32,
    dims: *const i64,
    ndims: usize,
    keepdim: bool,
    plan: *mut bc_plan,
) -> i32 {
    call(|| {
        if plan.is_null() {
            return Err(FfiError::NullArg("plan"));
        }
        // SAFETY (this block): the caller's contract on the program, each geometry and dims.
        let program = unsafe { program_in(steps, nsteps, ninputs)? };
        let given = unsafe { slice_in(inputs, ninputs, "inputs")? };
        let mut owned: Vec<Owned> = try_vec(ninputs)?;
        for g in given {
            owned.push(unsafe { geometry_in(g, "inputs[i]")? });
        }
        let op = reduce_op_in(op)?;
        check_ndim(ndims, "dims")?;
        let dims = unsafe { slice_in(dims, ndims, "dims")? };
        let views: Vec<Geometry<'_>> = try_collect(owned.iter().map(Owned::view))?;
        let (report, fused) =
            reduce::plan_expr_reduce(op, &program, &views, dims, keepdim, options())?;
        let mut p = plan_of(&report);
        if fused {
            p.flags |= BC_PLAN_FUSED;
        }
        // SAFETY: checked non-NULL; valid for one write by the caller's contract.
        unsafe { write_out(plan, p, "plan") }
    })
}

/// # Safety
/// As `bc_plan_binary_scalar`.
unsafe fn plan_number(
    op: i32,
    t: (*const bc_geometry, &'static str),
    s: bc_scalar,
    number_first: bool,
    inplace: bool,
    plan: *mut bc_plan,
) -> i32 {
    let body = || {
        let op = op_in(op)?;
        // SAFETY: the caller's contract on the geometry.
        let t = unsafe { geometry_in(t.0, t.1)? };
        let s = number(s)?;
        Ok(ops::plan_binary_number(
            op,
            t.view(),
            s,
            number_first,
            inplace,
            options(),
        )?)
    };
    // SAFETY: `plan` as the caller's contract says.
    unsafe { planned(plan, body) }
}

/// # Safety
/// As `bc_plan_where_out` (`out` None for `bc_plan_where`).
unsafe fn plan_where(
    cond: *const bc_geometry,
    a: *const bc_geometry,
    b: *const bc_geometry,
    out: Option<*const bc_geometry>,
    plan: *mut bc_plan,
) -> i32 {
    let body = || {
        // SAFETY (this block): the caller's contract on each geometry.
        let cond = unsafe { geometry_in(cond, "cond")? };
        let a = unsafe { geometry_in(a, "a")? };
        let b = unsafe { geometry_in(b, "b")? };
        let out = out
            .map(|out| unsafe { geometry_in(out, "out") })
            .transpose()?;
        let out = out.as_ref().map(Owned::view);
        Ok(ops::plan_where(cond.view(), a.view(), b.view(), out)?)
    };
    // SAFETY: `plan` as the caller's contract says.
    unsafe { planned(plan, body) }
}

/// Where the planned call writes.
#[derive(Clone, Copy)]
enum Form {
    New,
    InPlace,
    Out(*const bc_geometry),
}

/// # Safety
/// As `bc_plan_binary_out`.
unsafe fn plan_call(
    op: i32,
    inputs: [(*const bc_geometry, &'static str); 2],
    form: Form,
    plan: *mut bc_plan,
) -> i32 {
    let body = || {
        let op = op_in(op)?;
        // SAFETY (this block): the caller's contract on each geometry.
        let a = unsafe { geometry_in(inputs[0].0, inputs[0].1)? };
        let b = unsafe { geometry_in(inputs[1].0, inputs[1].1)? };
        let out = match form {
            Form::Out(out) => Some(unsafe { geometry_in(out, "out")? }),
            _ => None,
        };
        let out = out.as_ref().map(Owned::view);
        let dest = match (form, &out) {
            (Form::InPlace, _) => Dest::InPlace,
            (Form::Out(_), Some(out)) => Dest::Out(out),
            _ => Dest::New,
        };
        Ok(ops::plan_binary(op, a.view(), b.view(), dest, options())?)
    };
    // SAFETY: `plan` as the caller's contract says.
    unsafe { planned(plan, body) }
}

/// Runs a planner form's body under the boundary and writes the plan it reports to `*plan`
/// (untouched on failure).
///
/// # Safety
/// `plan` must be NULL or valid for one write.
unsafe fn planned(plan: *mut bc_plan, body: impl FnOnce() -> Result<Report, FfiError>) -> i32 {
    call(|| {
        if plan.is_null() {
            return Err(FfiError::NullArg("plan"));
        }
        let report = body()?;
        // SAFETY: checked non-NULL; valid for one write by the caller's contract.
        unsafe { write_out(plan, plan_of(&report), "plan") }
    })
}

/// A caller's geometry, read and checked.
struct Owned {
    dtype: DType,
    shape: Dims,
    strides: Strides,
}

impl Owned {
    fn view(&self) -> Geometry<'_> {
        Geometry {
            dtype: self.dtype,
            shape: &self.shape,
            strides: &self.strides,
            wrapped: false,
        }
    }
}

/// # Safety
/// `g` NULL or valid for one read, its arrays valid for `ndim` reads.
unsafe fn geometry_in(g: *const bc_geometry, name: &'static str) -> Result<Owned, FfiError> {
    // SAFETY: the caller's contract.
    let g = unsafe { g.as_ref() }.ok_or(FfiError::NullArg(name))?;
    let dtype = dtype_in(g.dtype)?;
    // SAFETY (both): the caller's contract on the arrays.
    let shape = unsafe { dims_in(g.shape, g.ndim, name)? };
    let strides = match g.strides.is_null() {
        true => contiguous_strides(&shape)?,
        false => unsafe { strides_in(g.strides, g.ndim)? },
    };
    check_geometry(dtype, &shape, &strides)?;
    Ok(Owned {
        dtype,
        shape,
        strides,
    })
}

fn plan_of(r: &Report) -> bc_plan {
    let warnings = r.warnings.iter().fold(0, |bits, w| {
        bits | match w {
            Warning::BroadcastChange => BC_PLAN_WARNING_BROADCAST,
            Warning::Fallback | Warning::FallbackInPlace => BC_PLAN_WARNING_FALLBACK,
            Warning::WhereUint8Condition => BC_PLAN_WARNING_WHERE_UINT8,
            // Not an elementwise call's warning: no plan reports it.
            Warning::DegreesOfFreedom { .. } => 0,
        }
    });
    let checks = if r.checks_divisor {
        BC_PLAN_CHECKS_DIVISOR
    } else {
        0
    };
    bc_plan {
        dtype: r.dtype.code(),
        compute_dtype: r.compute.code(),
        flags: warnings | checks,
        loop_kind: match r.loop_kind {
            LoopKind::None => BC_LOOP_NONE,
            LoopKind::Contiguous => BC_LOOP_CONTIGUOUS,
            LoopKind::Broadcast => BC_LOOP_BROADCAST,
            LoopKind::Tiled => BC_LOOP_TILED,
            LoopKind::Strided => BC_LOOP_STRIDED,
        },
        ndim: r.shape.len(),
        shape: array(&r.shape),
        strides: array(&r.strides),
        loop_ndim: r.loop_shape.len(),
        loop_shape: array(&r.loop_shape),
        threads: r.threads,
        alloc_bytes: r.alloc_bytes,
    }
}

/// Sizes or strides (at most `BC_MAX_NDIM`) in a C array, zeros after them.
fn array<T: Copy + TryInto<i64>>(values: &[T]) -> [i64; BC_MAX_NDIM] {
    let mut out = [0i64; BC_MAX_NDIM];
    for (o, &v) in out.iter_mut().zip(values) {
        // Sizes and strides of a valid geometry fit: they are checked below isize::MAX.
        *o = v.try_into().unwrap_or(i64::MAX);
    }
    out
}

// Every byte of a plan is a field's (the caller's copy holds nothing left over from the stack).
const _: () = assert!(
    std::mem::size_of::<bc_plan>() == 4 * 4 + 8 * (4 + 3 * BC_MAX_NDIM),
    "bc_plan has padding"
);
