//! Elementwise operations: the checks in PyTorch's order (operation defined for the types,
//! overlapping writes, shapes, result type, a kernel for the computation type, the values), the
//! two backwards-compatibility switches, then one plan run. Every check happens before the first
//! write, so a refused call changes nothing.
use super::alloc::{try_box, try_collect, try_to_vec};
use super::binary_ops::{BinaryOp, Compute, Rule};
use super::dtype::{can_cast, result_type, DType};
use super::error::{Error, ErrorKind, Result};
use super::kernels;
use super::layout;
use super::parallel;
use super::plan::{broadcast_strides, Plan, SmallPlan};
use super::shape::{broadcast_shapes, broadcast_shapes_n, check_inplace, Dims, Strides};
use super::tensor::{copy_into, Init, Tensor};
use smallvec::{smallvec, SmallVec};
use std::sync::atomic::{AtomicBool, Ordering};

/// The backwards-compatibility switches of docs/semantics.md, section 5.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Options {
    pub broadcast_warning: bool,
    pub legacy_fallback: bool,
}

/// The warnings of one call (at most one; inline, so collecting them never allocates).
pub type Warnings = SmallVec<[Warning; 2]>;

/// A warning that a successful call emits (docs/semantics.md, section 5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Warning {
    /// Different shapes, broadcastable, same number of elements.
    BroadcastChange,
    /// Out of place: not broadcastable, same number of elements, computed as 1-D.
    Fallback,
    /// In place: `other` does not broadcast to `self`, same number of elements, computed as 1-D.
    FallbackInPlace,
    /// `where` with a uint8 condition (deprecated; once per process, as PyTorch warns).
    WhereUint8Condition,
}

impl Warning {
    pub fn message(self) -> &'static str {
        match self {
            Warning::BroadcastChange => "self and other do not have the same shape, but are broadcastable, and have the same number of elements.  Changing behavior in a backwards incompatible manner to broadcasting rather than viewing as 1-dimensional.",
            Warning::Fallback => "self and other not broadcastable, but have the same number of elements.  Falling back to deprecated pointwise behavior.",
            Warning::FallbackInPlace => "other is not broadcastable to self, but they have the same number of elements.  Falling back to deprecated pointwise behavior.",
            Warning::WhereUint8Condition => "where received a uint8 condition tensor. This behavior is deprecated and will be removed in a future version of PyTorch. Use a boolean condition instead.",
        }
    }
}

/// `a op b` into a new tensor.
pub fn binary(op: BinaryOp, a: &Tensor, b: &Tensor, opts: Options) -> Result<(Tensor, Warnings)> {
    check_op_defined(op, a.dtype(), b.dtype())?;
    let (shape, reshaped, warnings) = out_of_place_shape(a, b, opts)?;
    let b = reshaped.as_deref().unwrap_or(b);
    let types = op_types(op, a, b);
    check_kernel(op, types.compute)?;
    let out = new_result(types.result, &shape, types.compute, [a, b])?;
    compute(op, &out, a, b, types.compute)?;
    Ok((out, warnings))
}

/// A new result of `shape` and `dtype` for an operation computing in `compute` from `inputs`,
/// laid out as PyTorch lays it out (see [`layout`]): an input of another type takes part as the
/// converted copy PyTorch makes of it.
fn new_result<const N: usize>(
    dtype: DType,
    shape: &[usize],
    compute: DType,
    inputs: [&Tensor; N],
) -> Result<Tensor> {
    let inputs = inputs.map(|t| layout::Input {
        shape: t.shape(),
        strides: t.strides(),
        converted: t.dtype() != compute,
    });
    let strides = layout::result_strides(shape, inputs)?;
    Tensor::new_dense(dtype, shape, strides, Init::Uninit)
}

/// `self op= other`.
pub fn binary_inplace(
    op: BinaryOp,
    self_: &Tensor,
    other: &Tensor,
    opts: Options,
) -> Result<Warnings> {
    check_op_defined(op, self_.dtype(), other.dtype())?;
    check_writable(self_, &[other])?;
    let mut warnings = Warnings::new();
    let reshaped: Reshaped = match check_inplace(self_.shape(), other.shape()) {
        Ok(()) => {
            if opts.broadcast_warning
                && self_.shape() != other.shape()
                && self_.numel() == other.numel()
            {
                warnings.push(Warning::BroadcastChange);
            }
            None
        }
        Err(e) if falls_back(&e, opts) && self_.numel() == other.numel() => {
            warnings.push(Warning::FallbackInPlace);
            Some(try_box(reshape_row_major(other, self_.shape())?)?)
        }
        Err(e) => return Err(e),
    };
    let other = reshaped.as_deref().unwrap_or(other);
    let types = op_types(op, self_, other);
    check_cast(types.result, self_.dtype())?;
    check_kernel(op, types.compute)?;
    write_result(op, self_, self_, other, types)?;
    Ok(warnings)
}

/// `a op b` into the caller's `out`, which must have the broadcast shape.
pub fn binary_out(
    op: BinaryOp,
    a: &Tensor,
    b: &Tensor,
    out: &Tensor,
    opts: Options,
) -> Result<Warnings> {
    check_op_defined(op, a.dtype(), b.dtype())?;
    check_writable(out, &[a, b])?;
    let (shape, reshaped, warnings) = out_of_place_shape(a, b, opts)?;
    let b = reshaped.as_deref().unwrap_or(b);
    if out.shape() != &shape[..] {
        return Err(Error::or_alloc(|| {
            Ok(Error::OutputShape {
                output: try_to_vec(out.shape())?,
                broadcast: try_to_vec(&shape)?,
            })
        }));
    }
    let types = op_types(op, a, b);
    check_cast(types.result, out.dtype())?;
    check_kernel(op, types.compute)?;
    write_result(op, out, a, b, types)?;
    Ok(warnings)
}

/// `where(cond, a, b)` into a new tensor: `a`'s element where `cond` is true, else `b`'s; the
/// three broadcast together (in that order), the type promotes `a` and `b` only. `cond` is bool,
/// or uint8 (non-zero is true) with PyTorch's deprecation warning.
pub fn where_(cond: &Tensor, a: &Tensor, b: &Tensor) -> Result<(Tensor, Warnings)> {
    let dtype = result_type(a.dtype(), a.ndim() == 0, b.dtype(), b.ndim() == 0);
    check_condition(cond)?;
    let shape = where_shape(cond, a, b)?;
    let out = Tensor::new(dtype, &shape, Init::Uninit)?;
    compute_where(&out, cond, a, b)?;
    Ok((out, condition_warnings(cond)))
}

/// [`where_`] into the caller's `out`, which must have the broadcast shape and exactly the
/// result type (PyTorch's rule for `where`).
pub fn where_out(cond: &Tensor, a: &Tensor, b: &Tensor, out: &Tensor) -> Result<Warnings> {
    let dtype = result_type(a.dtype(), a.ndim() == 0, b.dtype(), b.ndim() == 0);
    if out.dtype() != dtype {
        return Err(Error::OutDtype {
            expected: dtype,
            got: out.dtype(),
        });
    }
    check_condition(cond)?;
    check_writable(out, &[cond, a, b])?;
    let shape = where_shape(cond, a, b)?;
    if out.shape() != &shape[..] {
        return Err(Error::or_alloc(|| {
            Ok(Error::OutputShape {
                output: try_to_vec(out.shape())?,
                broadcast: try_to_vec(&shape)?,
            })
        }));
    }
    compute_where(out, cond, a, b)?;
    Ok(condition_warnings(cond))
}

fn check_condition(cond: &Tensor) -> Result<()> {
    match cond.dtype() {
        DType::Bool | DType::U8 => Ok(()),
        dtype => Err(Error::WhereCondition { dtype }),
    }
}

/// The deprecation warning for a uint8 condition, the first time in the process (as PyTorch's
/// `TORCH_WARN_ONCE`); given by calls that succeed.
fn condition_warnings(cond: &Tensor) -> Warnings {
    static WARNED: AtomicBool = AtomicBool::new(false);
    if cond.dtype() == DType::U8 && !WARNED.swap(true, Ordering::Relaxed) {
        smallvec![Warning::WhereUint8Condition]
    } else {
        Warnings::new()
    }
}

/// The shape of `where`: `cond`, `a` and `b` broadcast in that order (an error names the shape
/// so far as "tensor a").
fn where_shape(cond: &Tensor, a: &Tensor, b: &Tensor) -> Result<Dims> {
    broadcast_shapes(&broadcast_shapes(cond.shape(), a.shape())?, b.shape())
}

/// `out = where(cond, a, b)`, `out` of the result type and the broadcast shape; `a` and `b` of
/// another type are first converted into temporaries of their own shape. A bool or uint8
/// condition is read as it is (a non-zero byte is true).
fn compute_where(out: &Tensor, cond: &Tensor, a: &Tensor, b: &Tensor) -> Result<()> {
    if out.numel() == 0 {
        return Ok(());
    }
    let dtype = out.dtype();
    let (ca, cb) = (converted(a, dtype)?, converted(b, dtype)?);
    let (a, b) = (ca.as_ref().unwrap_or(a), cb.as_ref().unwrap_or(b));
    let size = dtype.size();
    // SAFETY: where_run reads a bool/uint8 condition and writes `size`-byte elements, which the
    // operands have; out aliases an input only exactly (check_writable), and is fresh or checked.
    unsafe {
        run_elementwise([out, cond, a, b], |p, s, n| {
            kernels::where_run(size, p, s, n)
        })
    }
}

/// Views of every input expanded to their common shape.
pub fn broadcast_tensors(inputs: &[&Tensor]) -> Result<Vec<Tensor>> {
    let shapes: Vec<&[usize]> = try_collect(inputs.iter().map(|t| t.shape()))?;
    let shape = broadcast_shapes_n(&shapes)?;
    let mut views = super::alloc::try_vec(inputs.len())?;
    for t in inputs {
        views.push(t.expand_to(&shape)?);
    }
    Ok(views)
}

/// Whether work on these tensors is sure to be short (below the parallel threshold, so it stays
/// on the calling thread): the product over dimensions (right-aligned) of their largest size,
/// which bounds the elements of any result broadcast from them, and of the legacy 1-D fallback
/// (as many elements as one operand), is below the threshold. Given only the written tensor when
/// there is one (its elements are the work). Callers decide from it whether to hold locks
/// meanwhile.
pub fn is_small<const K: usize>(tensors: [&Tensor; K]) -> bool {
    work_bound(tensors.map(Tensor::shape)) < parallel::threshold()
}

/// See [`is_small`].
fn work_bound<const K: usize>(shapes: [&[usize]; K]) -> usize {
    let ndim = shapes.iter().map(|s| s.len()).max().unwrap_or(0);
    (1..=ndim).fold(1usize, |n, i| {
        let largest = shapes
            .iter()
            .map(|s| s.len().checked_sub(i).map_or(1, |d| s[d]))
            .max()
            .unwrap_or(1);
        n.saturating_mul(largest)
    })
}

pub(crate) fn check_op_defined(op: BinaryOp, a: DType, b: DType) -> Result<()> {
    match (op, a == DType::Bool, b == DType::Bool) {
        (BinaryOp::Sub, true, true) => Err(Error::BoolSubtraction { both: true }),
        (BinaryOp::Sub, true, false) | (BinaryOp::Sub, false, true) => {
            Err(Error::BoolSubtraction { both: false })
        }
        _ => Ok(()),
    }
}

/// Whether a broadcasting failure lets the legacy fallback apply: a shape mismatch with the switch
/// on (never an allocation failure, which says nothing about the shapes).
fn falls_back(e: &Error, opts: Options) -> bool {
    opts.legacy_fallback && e.kind() == ErrorKind::Shape
}

/// The types of `a op b`: what it computes in (its inputs are converted to that), and what it
/// gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Types {
    pub compute: DType,
    pub result: DType,
}

fn op_types(op: BinaryOp, a: &Tensor, b: &Tensor) -> Types {
    types_of(op, (a.dtype(), a.ndim() == 0), (b.dtype(), b.ndim() == 0))
}

/// [`op_types`] from what promotion looks at: each operand's type, and whether it is 0-d.
pub(crate) fn types_of(op: BinaryOp, a: (DType, bool), b: (DType, bool)) -> Types {
    let rule = op.rule();
    let t = result_type(a.0, a.1, b.0, b.1);
    // Operations such as true division compute integers and bools in the default floating type.
    let compute = if rule.compute == Compute::Floating && !t.is_floating() {
        DType::F32
    } else {
        t
    };
    let result = if rule.bool_result {
        DType::Bool
    } else {
        compute
    };
    Types { compute, result }
}

/// PyTorch's refusal of a computation type the operation has no kernel for.
pub(crate) fn check_kernel(op: BinaryOp, compute: DType) -> Result<()> {
    let rule = op.rule();
    if rule.accepts(compute) {
        Ok(())
    } else {
        Err(Error::NotImplemented {
            kernel: rule.kernel_name,
            dtype: compute,
        })
    }
}

fn check_cast(from: DType, to: DType) -> Result<()> {
    if can_cast(from, to) {
        Ok(())
    } else {
        Err(Error::CastRefused { from, to })
    }
}

/// `b` as the legacy fallback reads it, when it applies (boxed: it is rare, and the common
/// result stays small to move).
type Reshaped = Option<Box<Tensor>>;

/// The result shape of an out-of-place operation, with the switches applied: returns the shape,
/// `b` reshaped row-major when the fallback applies, and the warnings.
fn out_of_place_shape(a: &Tensor, b: &Tensor, opts: Options) -> Result<(Dims, Reshaped, Warnings)> {
    match broadcast_shapes(a.shape(), b.shape()) {
        Ok(shape) => {
            let mut warnings = Warnings::new();
            if opts.broadcast_warning && a.shape() != b.shape() && a.numel() == b.numel() {
                warnings.push(Warning::BroadcastChange);
            }
            Ok((shape, None, warnings))
        }
        Err(e) if falls_back(&e, opts) && a.numel() == b.numel() => {
            let b = try_box(reshape_row_major(b, a.shape())?)?;
            let shape = super::alloc::try_small(a.shape())?;
            Ok((shape, Some(b), smallvec![Warning::Fallback]))
        }
        Err(e) => Err(e),
    }
}

/// `t`'s elements in row-major order, viewed with `shape` (same number of elements): a view when
/// `t` is contiguous, else a contiguous copy first. Only the legacy fallback needs this.
fn reshape_row_major(t: &Tensor, shape: &[usize]) -> Result<Tensor> {
    let t = if t.is_contiguous() {
        t.try_clone()?
    } else {
        t.to_contiguous(t.dtype())?
    };
    let strides = super::shape::contiguous_strides(shape)?;
    t.as_strided(shape, &strides, t.offset())
}

/// Computes into `dest`: directly when it has the result type, else through a temporary (so a
/// cast never happens half-way through a failed call: the temporary is allocated first).
fn write_result(op: BinaryOp, dest: &Tensor, a: &Tensor, b: &Tensor, types: Types) -> Result<()> {
    if dest.dtype() == types.result {
        return compute(op, dest, a, b, types.compute);
    }
    let tmp = Tensor::new(types.result, dest.shape(), Init::Uninit)?;
    compute(op, &tmp, a, b, types.compute)?;
    copy_into(dest, &tmp)
}

/// `out = a op b` where `out` has the broadcast shape and the result type, computed in `dtype`.
/// Inputs of another type are first converted into temporaries of their own (un-broadcast)
/// shape.
fn compute(op: BinaryOp, out: &Tensor, a: &Tensor, b: &Tensor, dtype: DType) -> Result<()> {
    if out.numel() == 0 {
        return Ok(()); // nothing to compute, and no input needs converting
    }
    let rule = op.rule();
    let divides = rule.nonzero_divisor && !dtype.is_floating();
    if a.dtype() == dtype && b.dtype() == dtype {
        if divides {
            check_divisor(b)?;
        }
        return compute_same_type(op, out, a, b, dtype);
    }
    if let Some(s) = scalar_read_in_f32(rule, dtype, a, b) {
        return compute_with_f32_scalar(op, out, a, s);
    }
    let (ca, cb) = (converted(a, dtype)?, converted(b, dtype)?);
    let (a, b) = (ca.as_ref().unwrap_or(a), cb.as_ref().unwrap_or(b));
    if divides {
        check_divisor(b)?;
    }
    compute_same_type(op, out, a, b, dtype)
}

/// PyTorch's CPU kernels for `mul`, `div` and `floor_divide` in float16 and bfloat16 take a
/// second operand of one element (a 0-d tensor, or any shape of one element) of another type as a
/// float32 read straight from its own type, not first rounded to the computation type as every
/// other operand is, compute in float32 and round once at the end: `float16([5.]) *
/// float64(1/3)` is 1.6669921875, not 1.666015625. Not for other operations, nor for a
/// one-element first operand, nor for a second operand expanded to more elements (PyTorch 2.15;
/// `tests/data/pytorch/reduced_scalar.jsonl`, `ops_values.jsonl`). The operations that do it say
/// so in their table row ([`Rule::float32_scalar`](super::binary_ops::Rule)). Returns that
/// float32 when the rule applies.
fn scalar_read_in_f32(rule: &Rule, dtype: DType, a: &Tensor, b: &Tensor) -> Option<f32> {
    if !reads_scalar_in_f32(rule, dtype, a.dtype(), b.dtype(), b.numel()) {
        return None;
    }
    let mut s = 0f32;
    // SAFETY: `b`'s one element is readable; `s` is one writable float32.
    unsafe {
        kernels::cast_run(
            b.dtype(),
            DType::F32,
            [(&mut s as *mut f32).cast(), b.data_ptr()],
            [0, 0],
            1,
        )
    };
    Some(s)
}

/// Whether [`scalar_read_in_f32`] applies to operands of types `a` and `b`, `b` of `b_numel`
/// elements, computed in `dtype`.
pub(crate) fn reads_scalar_in_f32(
    rule: &Rule,
    dtype: DType,
    a: DType,
    b: DType,
    b_numel: usize,
) -> bool {
    rule.float32_scalar
        && matches!(dtype, DType::F16 | DType::BF16)
        && a == dtype
        && b != dtype
        && b_numel == 1
}

/// `out = a op s` where `out` and `a` have the computation type (float16 or bfloat16) and `s` is
/// the float32 of [`scalar_read_in_f32`].
fn compute_with_f32_scalar(op: BinaryOp, out: &Tensor, a: &Tensor, s: f32) -> Result<()> {
    let dtype = out.dtype();
    let sa = broadcast_strides(a.shape(), a.strides(), out.shape())?;
    let plan = Plan::new(out.shape(), [out.strides(), &sa])?;
    // SAFETY: the plan covers out's view and `a` broadcast to it, both within their storages;
    // out aliases `a` only exactly (checked by check_writable).
    parallel::run(
        &plan,
        [out.data_ptr(), a.data_ptr()],
        [dtype.size(); 2],
        |ptrs, strides, n| unsafe { kernels::f32_scalar_run(op, dtype, s, ptrs, strides, n) },
    );
    Ok(())
}

/// `t` converted to `dtype` (a row-major copy), or `None` when it has that type already.
fn converted(t: &Tensor, dtype: DType) -> Result<Option<Tensor>> {
    Ok(if t.dtype() == dtype {
        None
    } else {
        Some(t.to_contiguous(dtype)?)
    })
}

/// PyTorch's `ZeroDivisionError`: an integer division, remainder or fmod with a zero among the
/// divisor's elements (every one is read when the result is not empty). Checked before anything
/// is written, so the refused call changes nothing.
fn check_divisor(divisor: &Tensor) -> Result<()> {
    let dtype = divisor.dtype();
    let plan = Plan::new(divisor.shape(), [divisor.strides()])?;
    let mut zero = false;
    // SAFETY: the plan covers exactly the divisor's view, which lies within its storage.
    unsafe {
        plan.for_each_run(
            [divisor.data_ptr()],
            [dtype.size()],
            0,
            plan.numel,
            &mut |p, s, n| zero = zero || kernels::any_zero_run(dtype, p[0], s[0], n),
        )
    };
    if zero {
        Err(Error::ZeroDivision)
    } else {
        Ok(())
    }
}

/// [`compute`] once both inputs have the computation type.
fn compute_same_type(
    op: BinaryOp,
    out: &Tensor,
    a: &Tensor,
    b: &Tensor,
    dtype: DType,
) -> Result<()> {
    // SAFETY: binary_run reads `dtype` inputs and writes the operation's result for them, which
    // is out's type; out aliases an input only exactly (checked by check_writable), and then has
    // its element size.
    unsafe {
        run_elementwise([out, a, b], |p, s, n| {
            kernels::binary_run(op, dtype, p, s, n)
        })
    }
}

/// Runs `kernel(ptrs, byte_strides, len)` over the elements of `operands[0]` (the written one)
/// and the others broadcast to its shape. Small work takes a [`SmallPlan`] on this thread:
/// building the full plan would cost more than the arithmetic.
///
/// # Safety
/// `kernel` must be sound for runs of these views at their types; the written operand may alias
/// an input only exactly.
pub(crate) unsafe fn run_elementwise<const N: usize>(
    operands: [&Tensor; N],
    kernel: impl Fn([*mut u8; N], [isize; N], usize) + Sync,
) -> Result<()> {
    let out = operands[0];
    let shape = out.shape();
    let ptrs = operands.map(Tensor::data_ptr);
    let sizes = operands.map(|t| t.dtype().size());
    // SAFETY (both runs): the plan covers out's view and the inputs broadcast to its shape, all
    // within their storages; the kernel is sound for them (this function's contract).
    if out.numel() < parallel::SMALL_ELEMS {
        let small = std::array::from_fn(|k| (operands[k].shape(), operands[k].strides(), sizes[k]));
        if let Some(plan) = SmallPlan::new(shape, small) {
            unsafe { plan.for_each_run(ptrs, kernel) };
            return Ok(());
        }
    }
    let mut strides: [Strides; N] = std::array::from_fn(|_| Strides::new());
    for k in 1..N {
        strides[k] = broadcast_strides(operands[k].shape(), operands[k].strides(), shape)?;
    }
    let plan = Plan::new(
        shape,
        std::array::from_fn(|k| match k {
            0 => out.strides(),
            _ => &strides[k][..],
        }),
    )?;
    parallel::run(&plan, ptrs, sizes, kernel);
    Ok(())
}

/// A written-to tensor may not overlap itself, nor partly overlap an input (docs/semantics.md,
/// section 8); and memory shared read-only is never written.
pub(crate) fn check_writable(dest: &Tensor, inputs: &[&Tensor]) -> Result<()> {
    if dest.is_read_only() {
        return Err(Error::ReadOnly);
    }
    if super::overlap::has_internal_overlap(dest)? {
        return Err(Error::InternalOverlap);
    }
    for input in inputs {
        if super::overlap::overlaps_partially(dest, input)? {
            return Err(Error::PartialOverlap);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bound that decides whether an operation holds its operands' locks while it runs
    /// covers every result broadcast from the operands (and the legacy fallback's), and is exact
    /// when one shape contains the other.
    #[test]
    fn work_bound_covers_every_result() {
        assert_eq!(work_bound([&[1, 1024][..], &[1024][..]]), 1024);
        assert_eq!(work_bound([&[29, 1024][..], &[1024][..]]), 29 * 1024);
        assert_eq!(work_bound([&[4096, 1][..], &[1, 4096][..]]), 4096 * 4096);
        assert_eq!(work_bound([&[][..], &[][..]]), 1);
        let shapes: [&[usize]; 9] = [
            &[],
            &[0],
            &[3],
            &[1, 3],
            &[2, 1],
            &[2, 3],
            &[3, 2],
            &[4, 0, 3],
            &[5, 1, 1, 1],
        ];
        for a in shapes {
            for b in shapes {
                let bound = work_bound([a, b]);
                if let Ok(s) = broadcast_shapes(a, b) {
                    assert!(bound >= s.iter().product::<usize>(), "{a:?} {b:?}");
                }
                let (na, nb) = (a.iter().product::<usize>(), b.iter().product::<usize>());
                assert!(bound >= na && bound >= nb, "{a:?} {b:?}");
            }
        }
    }
}
