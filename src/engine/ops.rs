//! Elementwise operations: the checks in PyTorch's order (operation defined for the types,
//! overlapping writes, shapes, result type, a kernel for the computation type, the values), the
//! two backwards-compatibility switches, then one plan run. Every check happens before the first
//! write, so a refused call changes nothing.
//!
//! What a call does is decided before it allocates, from its operands' types and geometry
//! ([`decide`], [`steps`], the result's layout, [`Walk`]): [`plan_binary`] runs those same
//! decisions on geometry alone, so the planner reports what the call would do.
use super::alloc::try_collect;
use super::binary_ops::{BinaryOp, Compute, Number, Rule};
use super::dtype::{can_cast, result_type, result_type_ranked, DType, Rank};
use super::error::{Error, ErrorKind, Result};
use super::kernels::{self, Tile};
use super::layout;
use super::parallel;
use super::plan::{broadcast_strides, Plan, SmallPlan};
use super::shape::{
    broadcast_shapes, broadcast_shapes_n, check_inplace, check_output_shape, checked_nbytes,
    checked_numel, contiguous_strides, is_contiguous, numel, Dims, Strides,
};
use super::tensor::{copy_into, Init, Scalar, Tensor};
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
    /// `var` or `std` (`std`) with at most 0 degrees of freedom left by the correction.
    DegreesOfFreedom { std: bool },
}

impl Warning {
    pub fn message(self) -> &'static str {
        match self {
            Warning::BroadcastChange => "self and other do not have the same shape, but are broadcastable, and have the same number of elements.  Changing behavior in a backwards incompatible manner to broadcasting rather than viewing as 1-dimensional.",
            Warning::Fallback => "self and other not broadcastable, but have the same number of elements.  Falling back to deprecated pointwise behavior.",
            Warning::FallbackInPlace => "other is not broadcastable to self, but they have the same number of elements.  Falling back to deprecated pointwise behavior.",
            Warning::DegreesOfFreedom { std: false } => "var(): degrees of freedom is <= 0. Correction should be strictly less than the reduction factor (input numel divided by output numel).",
            Warning::DegreesOfFreedom { std: true } => "std(): degrees of freedom is <= 0. Correction should be strictly less than the reduction factor (input numel divided by output numel).",
            Warning::WhereUint8Condition => "where received a uint8 condition tensor. This behavior is deprecated and will be removed in a future version of PyTorch. Use a boolean condition instead.",
        }
    }
}

/// An operand without its memory: its type and geometry (strides in elements). What the planner
/// is given, and all that the checks and decisions before a call's first allocation look at.
#[derive(Debug, Clone, Copy)]
pub struct Geometry<'a> {
    pub dtype: DType,
    pub shape: &'a [usize],
    pub strides: &'a [isize],
    /// A wrapped number (see [`Tensor::is_wrapped_number`]).
    pub wrapped: bool,
}

impl Geometry<'_> {
    fn numel(&self) -> usize {
        numel(self.shape)
    }

    /// How it takes part in type promotion.
    pub(crate) fn rank(&self) -> Rank {
        match self.wrapped {
            true => Rank::Wrapped,
            false => Rank::of_tensor(self.shape.len()),
        }
    }
}

/// What the checks of a call need of an operand: a tensor (the call itself), or its geometry
/// alone (the planner).
pub trait Operand {
    fn geometry(&self) -> Geometry<'_>;
    /// May this operand be written, given the call's inputs? It may not overlap itself, nor
    /// partly overlap an input (docs/semantics.md, section 8), and memory shared read-only is
    /// never written. A geometry has no memory, so only what its strides settle is checked
    /// (elements sharing a location).
    fn check_writable(&self, inputs: &[&Self]) -> Result<()>;
}

impl Operand for Tensor {
    fn geometry(&self) -> Geometry<'_> {
        Geometry {
            dtype: self.dtype(),
            shape: self.shape(),
            strides: self.strides(),
            wrapped: self.is_wrapped_number(),
        }
    }

    fn check_writable(&self, inputs: &[&Self]) -> Result<()> {
        if self.is_read_only() {
            return Err(Error::ReadOnly);
        }
        if super::overlap::has_internal_overlap(self)? {
            return Err(Error::InternalOverlap);
        }
        for input in inputs {
            if super::overlap::overlaps_partially(self, input)? {
                return Err(Error::PartialOverlap);
            }
        }
        Ok(())
    }
}

impl Operand for Geometry<'_> {
    fn geometry(&self) -> Geometry<'_> {
        *self
    }

    fn check_writable(&self, _inputs: &[&Self]) -> Result<()> {
        if super::overlap::overlaps_itself(self.shape, self.strides)? {
            return Err(Error::InternalOverlap);
        }
        Ok(())
    }
}

/// Where a call writes its result.
#[derive(Debug)]
pub enum Dest<'a, O> {
    /// A new tensor.
    New,
    /// Into the first operand (`a op= b`).
    InPlace,
    /// Into the caller's `out`, which must have the broadcast shape.
    Out(&'a O),
}

impl<O> Clone for Dest<'_, O> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<O> Copy for Dest<'_, O> {}

/// A call's decisions once every check has passed.
#[derive(Debug)]
struct Decision {
    /// The broadcast shape (in place, the written operand's).
    shape: Dims,
    types: Types,
    /// The legacy fallback applies: `b` is read as a row-major tensor of `a`'s shape.
    fallback: bool,
    warnings: Warnings,
}

/// The checks of `a op b` in PyTorch's order (the operation is defined for the types, the
/// written operand may be written, the shapes, the written operand's shape and type), with the
/// two switches applied. Decides on types and geometry only (and, for a tensor, on where its
/// memory is): the call and the planner run this same code.
fn decide<O: Operand>(
    op: BinaryOp,
    a: &O,
    b: &O,
    dest: Dest<'_, O>,
    opts: Options,
) -> Result<Decision> {
    decide_with(op, a, b, dest, opts, true)
}

/// [`decide`]; `kernel` false skips the check that the operation has a kernel for the computation
/// type (`pow` with an exponent of 0 or 1 given as a number runs none).
fn decide_with<O: Operand>(
    op: BinaryOp,
    a: &O,
    b: &O,
    dest: Dest<'_, O>,
    opts: Options,
    kernel: bool,
) -> Result<Decision> {
    let (ga, gb) = (a.geometry(), b.geometry());
    check_op_defined(op, ga.dtype, gb.dtype)?;
    let written = match dest {
        Dest::New => None,
        Dest::InPlace => {
            a.check_writable(&[b])?;
            Some(ga)
        }
        Dest::Out(out) => {
            out.check_writable(&[a, b])?;
            Some(out.geometry())
        }
    };
    let (shape, fallback, warnings) = match dest {
        Dest::InPlace => inplace_shape(ga, gb, opts)?,
        _ => out_of_place_shape(ga, gb, opts)?,
    };
    if let Dest::Out(out) = dest {
        check_output_shape(out.geometry().shape, &shape)?;
    }
    // Under the fallback `b` counts as a tensor of `a`'s shape.
    let b_rank = if fallback { ga.rank() } else { gb.rank() };
    let types = types_of(op, (ga.dtype, ga.rank()), (gb.dtype, b_rank));
    if let Some(w) = written {
        check_cast(types.result, w.dtype)?;
    }
    if kernel {
        check_kernel(op, types.compute)?;
    }
    Ok(Decision {
        shape,
        types,
        fallback,
        warnings,
    })
}

/// `a op b` into a new tensor.
pub fn binary(op: BinaryOp, a: &Tensor, b: &Tensor, opts: Options) -> Result<(Tensor, Warnings)> {
    let d = decide(op, a, b, Dest::New, opts)?;
    let reshaped = read_b(&d, a, b)?;
    let b = reshaped.as_ref().unwrap_or(b);
    let strides = result_layout(&d, a.geometry(), b.geometry())?;
    let out = Tensor::new_dense(d.types.result, &d.shape, strides, Init::Uninit)?;
    write_result(op, &out, a, b, d.types)?;
    Ok((out, d.warnings))
}

/// `t op s` for a number `s` (`number_first`: `s op t`), as PyTorch computes it for a Python
/// number: the number is a wrapped number (it promotes by category only; see
/// [`Tensor::wrapped_number`]), Python's reflection decides the order (`s * t` is `t * s`, `s < t`
/// is `t > s`), the operations that take no number refuse it as PyTorch does, and `pow` has its
/// rules for a number exponent or base (see [`pow_number`]).
pub fn binary_number(
    op: BinaryOp,
    t: &Tensor,
    s: Scalar,
    number_first: bool,
    opts: Options,
) -> Result<(Tensor, Warnings)> {
    let (op, number_first) = python_order(op, s, number_first, false)?;
    binary_wrapped(op, t, &Tensor::wrapped_number(s)?, s, number_first, opts)
}

/// [`binary_number`] after [`python_order`], with `n` the wrapped number of `s`.
pub(crate) fn binary_wrapped(
    op: BinaryOp,
    t: &Tensor,
    n: &Tensor,
    s: Scalar,
    number_first: bool,
    opts: Options,
) -> Result<(Tensor, Warnings)> {
    if op == BinaryOp::Pow {
        return pow_number(t, n, s, number_first, Dest::New, opts).map(|(r, w)| (r.unwrap(), w));
    }
    match number_first {
        true => binary(op, n, t, opts),
        false => binary(op, t, n, opts),
    }
}

/// `t op= s` for a number `s`, as [`binary_number`].
pub fn binary_number_inplace(
    op: BinaryOp,
    t: &Tensor,
    s: Scalar,
    opts: Options,
) -> Result<Warnings> {
    let (op, _) = python_order(op, s, false, true)?;
    binary_wrapped_inplace(op, t, &Tensor::wrapped_number(s)?, s, opts)
}

/// [`binary_number_inplace`] after [`python_order`], with `n` the wrapped number of `s`.
pub(crate) fn binary_wrapped_inplace(
    op: BinaryOp,
    t: &Tensor,
    n: &Tensor,
    s: Scalar,
    opts: Options,
) -> Result<Warnings> {
    if op == BinaryOp::Pow {
        return pow_number(t, n, s, false, Dest::InPlace, opts).map(|(_, w)| w);
    }
    binary_inplace(op, t, n, opts)
}

/// The operation and order PyTorch runs for `t op s` (`number_first`: `s op t`) with a Python
/// number `s`: Python hands `s op t` to the tensor, whose reflected method computes `t op s` for
/// the operations that commute and the mirrored comparison for the others that compare, and
/// `op(s, t)` for the rest; the table's `number` column says which. An operation without a number
/// form (or `fmod` with the number first) gives PyTorch's TypeError, in its words.
pub(crate) fn python_order(
    op: BinaryOp,
    s: Scalar,
    number_first: bool,
    inplace: bool,
) -> Result<(BinaryOp, bool)> {
    let kind = match s {
        Scalar::Bool(_) => "bool",
        Scalar::Int(_) => "int",
        Scalar::Float(_) => "float",
    };
    match (op.rule().number, number_first) {
        (Number::Second, true) => Err(Error::invalid(format_args!(
            "{}() received an invalid combination of arguments - got ({kind}, Tensor), but \
             expected one of:\n * (Tensor input, Tensor other, *, Tensor out = None)\n * (Tensor \
             input, Number other, *, Tensor out = None)\n",
            op.name()
        ))),
        (Number::Refused, _) => {
            // `maximum` and `minimum` have no in-place method: their `out=` form's text.
            let method = inplace && !matches!(op, BinaryOp::Maximum | BinaryOp::Minimum);
            let (name, arg) = match (number_first, method) {
                (true, _) => ("", "'input' (position 1)"),
                (false, true) => ("_", "'other' (position 1)"),
                (false, false) => ("", "'other' (position 2)"),
            };
            Err(Error::invalid(format_args!(
                "{}{name}(): argument {arg} must be Tensor, not {kind}",
                op.name()
            )))
        }
        (Number::Reflected(reflected), true) => Ok((reflected, false)),
        _ => Ok((op, number_first)),
    }
}

/// `pow` with a number (PyTorch's `pow(Tensor, Scalar)` and `pow(Scalar, Tensor)`):
/// - `t ** s`: an integer or bool tensor to a negative integer is refused; after the call's
///   checks, an exponent of 0 fills the result with 1 and an exponent of 1 copies `t` (no kernel
///   runs, so a bool tensor is fine); otherwise the exponent must fit the computation type when
///   that is float16, bfloat16 or an integer type (PyTorch reads it there with a checked
///   conversion; float32 and float64 read it as a double).
/// - `s ** t`: a base of 1 (an int or a float, not `True`) fills a row-major result with 1, with
///   no check at all; any other base is `pow(s, t)` into a row-major result (PyTorch computes it
///   through its `out=` form, which does not follow the operands' layout).
fn pow_number(
    t: &Tensor,
    n: &Tensor,
    s: Scalar,
    number_first: bool,
    dest: Dest<'_, Tensor>,
    opts: Options,
) -> Result<(Option<Tensor>, Warnings)> {
    let op = BinaryOp::Pow;
    let (d, run) = decide_pow_number(t, n, s, number_first, dest, opts)?;
    if number_first {
        let init = match run {
            Run::Fill => Init::Fill(1.0),
            _ => Init::Uninit,
        };
        let out = Tensor::new(d.types.result, &d.shape, init)?;
        if run == Run::Compute {
            write_result(op, &out, n, t, d.types)?;
        }
        return Ok((Some(out), d.warnings));
    }
    let out = match dest {
        Dest::New => {
            let strides = result_layout(&d, t.geometry(), n.geometry())?;
            Some(Tensor::new_dense(
                d.types.result,
                &d.shape,
                strides,
                Init::Uninit,
            )?)
        }
        _ => None,
    };
    let written = out.as_ref().unwrap_or(t);
    match run {
        Run::Copy => copy_into(written, t)?,
        Run::Fill => fill(written, 1.0)?,
        Run::Compute => write_result(op, written, t, n, d.types)?,
    }
    Ok((out, d.warnings))
}

/// How a call writes its result once its checks have passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Run {
    /// The operation's kernel (see [`steps`]).
    Compute,
    /// Every element set to 1 (`pow` to the exponent 0, or of the base 1).
    Fill,
    /// The tensor itself, cast to the written type (`pow` to the exponent 1).
    Copy,
}

/// The checks and decisions of [`pow_number`], in its order, before anything is allocated: the
/// call and the planner run this same code.
fn decide_pow_number<O: Operand>(
    t: &O,
    n: &O,
    s: Scalar,
    number_first: bool,
    dest: Dest<'_, O>,
    opts: Options,
) -> Result<(Decision, Run)> {
    let op = BinaryOp::Pow;
    if number_first {
        let one = matches!(s, Scalar::Int(1)) || s == Scalar::Float(1.0);
        let d = decide_with(op, n, t, Dest::New, opts, !one)?;
        return Ok((d, if one { Run::Fill } else { Run::Compute }));
    }
    let integral = |dtype: DType| !dtype.is_floating();
    if integral(t.geometry().dtype) && matches!(s, Scalar::Int(i) if i < 0) {
        return Err(Error::NegativeIntegerPower);
    }
    let trivial = match s {
        Scalar::Bool(b) => Some(b),
        Scalar::Int(i) => (i == 0 || i == 1).then_some(i == 1),
        Scalar::Float(f) => (f == 0.0 || f == 1.0).then_some(f == 1.0),
    };
    let d = decide_with(op, t, n, dest, opts, trivial.is_none())?;
    let checked = matches!(d.types.compute, DType::F16 | DType::BF16) || integral(d.types.compute);
    if trivial.is_none() && checked && !fits(s, d.types.compute) {
        return Err(Error::NumberOverflow {
            dtype: d.types.compute,
        });
    }
    let run = match trivial {
        Some(true) => Run::Copy,
        Some(false) => Run::Fill,
        None => Run::Compute,
    };
    Ok((d, run))
}

/// Whether a number fits `dtype` as PyTorch's checked conversion requires (c10's `overflows`): a
/// bool always; a float when it is an infinity or NaN and the type has them, or lies within the
/// type's finite range; an integer within the type's range, or for an unsigned type down to
/// minus its maximum (negative values wrap).
pub(crate) fn fits(s: Scalar, dtype: DType) -> bool {
    let (lowest, max) = dtype.range();
    match s {
        Scalar::Bool(_) => true,
        Scalar::Float(f) if dtype.is_floating() && !f.is_finite() => true,
        Scalar::Float(f) => f >= lowest && f <= max,
        Scalar::Int(_) if dtype == DType::I64 => true,
        Scalar::Int(i) if lowest == 0.0 => {
            (i as f64) <= max && (i >= 0 || i.unsigned_abs() as f64 <= max)
        }
        Scalar::Int(i) => (i as f64) >= lowest && (i as f64) <= max,
    }
}

/// Writes `value` into every element of `dest` (any layout), as its type holds it.
fn fill(dest: &Tensor, value: f64) -> Result<()> {
    if dest.numel() == 0 {
        return Ok(());
    }
    let dtype = dest.dtype();
    let walk = Walk::new(dest.shape(), [dest.geometry()])?;
    // SAFETY: the walk covers exactly dest's view, which lies within its storage.
    unsafe {
        walk.run([dest.data_ptr()], |p, s, n| {
            kernels::fill_run(dtype, value, p[0], s[0], n)
        })
    };
    Ok(())
}

/// `self op= other`.
pub fn binary_inplace(
    op: BinaryOp,
    self_: &Tensor,
    other: &Tensor,
    opts: Options,
) -> Result<Warnings> {
    let d = decide(op, self_, other, Dest::InPlace, opts)?;
    let reshaped = read_b(&d, self_, other)?;
    write_result(
        op,
        self_,
        self_,
        reshaped.as_ref().unwrap_or(other),
        d.types,
    )?;
    Ok(d.warnings)
}

/// `a op b` into the caller's `out`, which must have the broadcast shape.
pub fn binary_out(
    op: BinaryOp,
    a: &Tensor,
    b: &Tensor,
    out: &Tensor,
    opts: Options,
) -> Result<Warnings> {
    let d = decide(op, a, b, Dest::Out(out), opts)?;
    let reshaped = read_b(&d, a, b)?;
    write_result(op, out, a, reshaped.as_ref().unwrap_or(b), d.types)?;
    Ok(d.warnings)
}

/// `b` as the computation reads it: under the legacy fallback, its elements in row-major order
/// viewed with `a`'s shape (a view when `b` is contiguous, else a contiguous copy first).
fn read_b(d: &Decision, a: &Tensor, b: &Tensor) -> Result<Option<Tensor>> {
    if !d.fallback {
        return Ok(None);
    }
    let b = if b.is_contiguous() {
        b.try_clone()?
    } else {
        b.to_contiguous(b.dtype())?
    };
    let strides = super::shape::contiguous_strides(a.shape())?;
    Ok(Some(b.as_strided(a.shape(), &strides, b.offset())?))
}

/// The layout of a new result (see [`layout`]): an input of another type than the computation
/// type takes part as the converted copy PyTorch makes of it.
fn result_layout(d: &Decision, a: Geometry<'_>, b: Geometry<'_>) -> Result<Strides> {
    binary_layout(&d.shape, d.types.compute, [a, b])
}

/// The strides of a new result of `shape` computed in `compute` from operands `ab` (see
/// [`result_layout`]); also what a fused expression gives its result (`expr`).
pub(crate) fn binary_layout(
    shape: &[usize],
    compute: DType,
    ab: [Geometry<'_>; 2],
) -> Result<Strides> {
    let inputs = ab.map(|g| layout::Input {
        shape: g.shape,
        strides: g.strides,
        converted: g.dtype != compute,
    });
    layout::result_strides(shape, inputs)
}

/// The strides of a new `where` result of `shape` and type `dtype`: PyTorch converts a uint8
/// condition to bool, and an `a` or `b` of another type to `dtype`, before its TensorIterator lays
/// the result out from the three, in that order (see [`layout`]).
pub(crate) fn where_layout(
    shape: &[usize],
    dtype: DType,
    operands: [Geometry<'_>; 3],
) -> Result<Strides> {
    let to = [DType::Bool, dtype, dtype];
    let inputs: [layout::Input<'_>; 3] = std::array::from_fn(|k| layout::Input {
        shape: operands[k].shape,
        strides: operands[k].strides,
        converted: operands[k].dtype != to[k],
    });
    layout::result_strides(shape, inputs)
}

/// `where(cond, a, b)` into a new tensor: `a`'s element where `cond` is true, else `b`'s; the
/// three broadcast together (in that order), the type promotes `a` and `b` only. `cond` is bool,
/// or uint8 (non-zero is true) with PyTorch's deprecation warning.
pub fn where_(cond: &Tensor, a: &Tensor, b: &Tensor) -> Result<(Tensor, Warnings)> {
    let (dtype, shape) = decide_where(cond, a, b, None)?;
    let strides = where_layout(&shape, dtype, [cond, a, b].map(Tensor::geometry))?;
    let out = Tensor::new_dense(dtype, &shape, strides, Init::Uninit)?;
    compute_where(&out, cond, a, b)?;
    Ok((out, condition_warnings(cond.dtype(), true)))
}

/// [`where_`] into the caller's `out`, which must have the broadcast shape and exactly the
/// result type (PyTorch's rule for `where`).
pub fn where_out(cond: &Tensor, a: &Tensor, b: &Tensor, out: &Tensor) -> Result<Warnings> {
    decide_where(cond, a, b, Some(out))?;
    compute_where(out, cond, a, b)?;
    Ok(condition_warnings(cond.dtype(), true))
}

/// The checks of `where` (into `out` when given) in PyTorch's order, and the result's type and
/// shape: the call and the planner run this same code.
fn decide_where<O: Operand>(cond: &O, a: &O, b: &O, out: Option<&O>) -> Result<(DType, Dims)> {
    let (gc, ga, gb) = (cond.geometry(), a.geometry(), b.geometry());
    let dtype = result_type(ga.dtype, ga.shape.is_empty(), gb.dtype, gb.shape.is_empty());
    if let Some(out) = out {
        if out.geometry().dtype != dtype {
            return Err(Error::OutDtype {
                expected: dtype,
                got: out.geometry().dtype,
            });
        }
    }
    if !matches!(gc.dtype, DType::Bool | DType::U8) {
        return Err(Error::WhereCondition { dtype: gc.dtype });
    }
    if let Some(out) = out {
        out.check_writable(&[cond, a, b])?;
    }
    // `cond`, `a` and `b` broadcast in that order (an error names the shape so far "tensor a").
    let shape = broadcast_shapes(&broadcast_shapes(gc.shape, ga.shape)?, gb.shape)?;
    if let Some(out) = out {
        check_output_shape(out.geometry().shape, &shape)?;
    }
    Ok((dtype, shape))
}

/// Whether the deprecation warning for a uint8 condition was given (once per process).
static WHERE_UINT8_WARNED: AtomicBool = AtomicBool::new(false);

/// The deprecation warning for a uint8 condition, the first time in the process (as PyTorch's
/// `TORCH_WARN_ONCE`); given by calls that succeed (`give`), foreseen by the planner.
fn condition_warnings(cond: DType, give: bool) -> Warnings {
    let warned = match give {
        true => cond == DType::U8 && WHERE_UINT8_WARNED.swap(true, Ordering::Relaxed),
        false => WHERE_UINT8_WARNED.load(Ordering::Relaxed),
    };
    if cond == DType::U8 && !warned {
        smallvec![Warning::WhereUint8Condition]
    } else {
        Warnings::new()
    }
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
    let walk = Walk::new(out.shape(), [out, cond, a, b].map(Tensor::geometry))?;
    unsafe {
        walk.run([out, cond, a, b].map(Tensor::data_ptr), |p, s, n| {
            kernels::where_run(size, p, s, n)
        })
    };
    Ok(())
}

/// What an elementwise call would do, found from its operands' types and geometry alone.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// The result type (a new result's type; in place or into `out`, cast to the written
    /// tensor's type).
    pub dtype: DType,
    /// The type computed in.
    pub compute: DType,
    /// The call reads the divisor's elements: an integer division, remainder or fmod refuses a
    /// zero among them (`Error::ZeroDivision`), which only the call can see.
    pub checks_divisor: bool,
    /// The broadcast shape (in place, the written tensor's).
    pub shape: Dims,
    /// The strides of the written tensor: a new result's layout, else the written tensor's own.
    pub strides: Strides,
    pub warnings: Warnings,
    /// The sizes iterated after size-1 dimensions are dropped and mergeable ones merged,
    /// outermost first.
    pub loop_shape: Dims,
    pub loop_kind: LoopKind,
    /// Threads the work is shared among, the calling one included.
    pub threads: usize,
    /// Bytes of element memory the call allocates: the result and every temporary.
    pub alloc_bytes: usize,
}

/// The inner loop a computation runs, from the operands' strides along the innermost iterated
/// dimension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoopKind {
    /// Nothing to compute: the result has no elements.
    None,
    /// Every operand is contiguous (or a single element is computed).
    Contiguous,
    /// Contiguous, with an input repeated (one element for a whole run).
    Broadcast,
    /// An input is strided along the innermost dimension but contiguous along another: walked
    /// in 2-D tiles, so each cache line it brings in serves several runs.
    Tiled,
    /// Any other strides.
    Strided,
}

/// What `a op b` would do (into `dest`) for operands of these types and geometry: the checks and
/// decisions of [`binary`], [`binary_inplace`] and [`binary_out`] themselves, so an error is the
/// one the call would give. Checks that need memory are the call's alone: a read-only written
/// tensor, and one that partly overlaps an input (the planner knows no addresses).
pub fn plan_binary(
    op: BinaryOp,
    a: Geometry<'_>,
    b: Geometry<'_>,
    dest: Dest<'_, Geometry<'_>>,
    opts: Options,
) -> Result<Report> {
    let d = decide(op, &a, &b, dest, opts)?;
    report(op, d, a, b, dest, Run::Compute, false)
}

/// What `t op s` for a number `s` would do ([`binary_number`]; `number_first`: `s op t`;
/// `inplace`: [`binary_number_inplace`]), from `t`'s type and geometry: the checks and decisions
/// of those calls.
pub fn plan_binary_number(
    op: BinaryOp,
    t: Geometry<'_>,
    s: Scalar,
    number_first: bool,
    inplace: bool,
    opts: Options,
) -> Result<Report> {
    let (op, number_first) = python_order(op, s, number_first, inplace)?;
    let n = Geometry {
        dtype: s.dtype(),
        shape: &[],
        strides: &[],
        wrapped: true,
    };
    let dest = if inplace { Dest::InPlace } else { Dest::New };
    let mut r = match (op, number_first) {
        (BinaryOp::Pow, true) => {
            let (d, run) = decide_pow_number(&t, &n, s, true, Dest::New, opts)?;
            report(op, d, n, t, Dest::New, run, true)?
        }
        (BinaryOp::Pow, false) => {
            let (d, run) = decide_pow_number(&t, &n, s, false, dest, opts)?;
            report(op, d, t, n, dest, run, false)?
        }
        (_, true) => plan_binary(op, n, t, Dest::New, opts)?,
        (_, false) => plan_binary(op, t, n, dest, opts)?,
    };
    // The number itself, held in a 0-d tensor.
    r.alloc_bytes += n.dtype.size();
    Ok(r)
}

/// What `where(cond, a, b)` ([`where_`], or [`where_out`] into `out`) would do, from the operands'
/// types and geometry: the call's checks and decisions. The uint8 condition's warning is
/// foreseen as the call would give it now (only the first time in the process).
pub fn plan_where(
    cond: Geometry<'_>,
    a: Geometry<'_>,
    b: Geometry<'_>,
    out: Option<Geometry<'_>>,
) -> Result<Report> {
    let (dtype, shape) = decide_where(&cond, &a, &b, out.as_ref())?;
    // A broadcast shape's elements may not fit (the call refuses its result the same way).
    let elements = |g: Geometry<'_>| checked_nbytes(checked_numel(g.shape)?, dtype.size());
    let mut alloc_bytes = 0;
    let new_strides;
    let written = match out {
        Some(out) => out,
        None => {
            new_strides = where_layout(&shape, dtype, [cond, a, b])?;
            let g = Geometry {
                dtype,
                shape: &shape,
                strides: &new_strides,
                wrapped: false,
            };
            alloc_bytes += elements(g)?;
            g
        }
    };
    let (loop_shape, loop_kind, threads) = if numel(&shape) == 0 {
        (Dims::new(), LoopKind::None, 1)
    } else {
        // `a` and `b` of another type are read from row-major copies (see `compute_where`).
        let mut row_major: [Strides; 2] = Default::default();
        let inputs = [a, b];
        for k in (0..2).filter(|&k| inputs[k].dtype != dtype) {
            alloc_bytes += elements(inputs[k])?;
            row_major[k] = contiguous_strides(inputs[k].shape)?;
        }
        let [a, b] = std::array::from_fn(|k| match inputs[k].dtype == dtype {
            true => inputs[k],
            false => Geometry {
                dtype,
                strides: &row_major[k],
                ..inputs[k]
            },
        });
        Walk::new(&shape, [written, cond, a, b])?.describe()?
    };
    Ok(Report {
        dtype,
        compute: dtype,
        checks_divisor: false,
        shape: super::alloc::try_small(&shape)?,
        strides: super::alloc::try_small(written.strides)?,
        warnings: condition_warnings(cond.dtype, false),
        loop_shape,
        loop_kind,
        threads,
        alloc_bytes,
    })
}

/// The report of a call whose checks have passed with decision `d`, writing into `dest` as `run`
/// says; `row_major_result`: a new result is row-major instead of laid out after its operands.
fn report(
    op: BinaryOp,
    d: Decision,
    a: Geometry<'_>,
    b: Geometry<'_>,
    dest: Dest<'_, Geometry<'_>>,
    run: Run,
    row_major_result: bool,
) -> Result<Report> {
    // A broadcast shape's elements may not fit (the call refuses its result the same way).
    let elements =
        |g: Geometry<'_>, dtype: DType| checked_nbytes(checked_numel(g.shape)?, dtype.size());
    let mut alloc_bytes = 0;
    // `b` as the computation reads it (see `read_b`).
    let b_row_major;
    let b = match d.fallback {
        false => b,
        true => {
            if !is_contiguous(b.shape, b.strides) {
                alloc_bytes += elements(b, b.dtype)?;
            }
            b_row_major = contiguous_strides(a.shape)?;
            Geometry {
                shape: a.shape,
                strides: &b_row_major,
                ..b
            }
        }
    };
    let result_strides;
    let written = match dest {
        Dest::New => {
            result_strides = match row_major_result {
                true => contiguous_strides(&d.shape)?,
                false => result_layout(&d, a, b)?,
            };
            let g = Geometry {
                dtype: d.types.result,
                shape: &d.shape,
                strides: &result_strides,
                wrapped: false,
            };
            alloc_bytes += elements(g, d.types.result)?;
            g
        }
        Dest::InPlace => a,
        Dest::Out(out) => *out,
    };
    let mut checks_divisor = false;
    let (loop_shape, loop_kind, threads) = match run {
        _ if numel(&d.shape) == 0 => (Dims::new(), LoopKind::None, 1),
        Run::Fill => Walk::new(&d.shape, [written])?.describe()?,
        Run::Copy => Walk::new(&d.shape, [written, a])?.describe()?,
        Run::Compute => {
            // What `write_result` allocates (row-major temporaries), and the operands it walks.
            let steps = steps(op, written, a, b, d.types);
            checks_divisor = steps.divisor;
            let made = [steps.temp, steps.convert[0], steps.convert[1]];
            let given = [written, a, b];
            let mut row_major: [Strides; 3] = Default::default();
            // The temporary for the written tensor has the result type; converted inputs the
            // computation type.
            let made_type = |k: usize| {
                if k == 0 {
                    d.types.result
                } else {
                    d.types.compute
                }
            };
            for k in (0..3).filter(|&k| made[k]) {
                row_major[k] = contiguous_strides(given[k].shape)?;
                alloc_bytes += elements(given[k], made_type(k))?;
            }
            let walked: [Geometry<'_>; 3] = std::array::from_fn(|k| match made[k] {
                false => given[k],
                true => Geometry {
                    dtype: made_type(k),
                    shape: given[k].shape,
                    strides: &row_major[k],
                    wrapped: false,
                },
            });
            if steps.f32_scalar {
                Walk::new(&d.shape, [walked[0], walked[1]])?.describe()?
            } else {
                Walk::new(&d.shape, walked)?.describe()?
            }
        }
    };
    Ok(Report {
        dtype: d.types.result,
        compute: d.types.compute,
        checks_divisor,
        shape: super::alloc::try_small(&d.shape)?,
        strides: super::alloc::try_small(written.strides)?,
        warnings: d.warnings,
        loop_shape,
        loop_kind,
        threads,
        alloc_bytes,
    })
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

/// The types of `a op b` for operands given as (type, rank).
pub(crate) fn types_of(op: BinaryOp, a: (DType, Rank), b: (DType, Rank)) -> Types {
    let rule = op.rule();
    let t = result_type_ranked([a, b]);
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

/// The result shape of an out-of-place operation, with the switches applied: the shape, whether
/// the legacy fallback applies, and the warnings.
fn out_of_place_shape(
    a: Geometry<'_>,
    b: Geometry<'_>,
    opts: Options,
) -> Result<(Dims, bool, Warnings)> {
    match broadcast_shapes(a.shape, b.shape) {
        Ok(shape) => {
            let mut warnings = Warnings::new();
            if opts.broadcast_warning && a.shape != b.shape && a.numel() == b.numel() {
                warnings.push(Warning::BroadcastChange);
            }
            Ok((shape, false, warnings))
        }
        Err(e) if falls_back(&e, opts) && a.numel() == b.numel() => {
            let shape = super::alloc::try_small(a.shape)?;
            Ok((shape, true, smallvec![Warning::Fallback]))
        }
        Err(e) => Err(e),
    }
}

/// The shape of `self op= other` (`self`'s), with the switches applied, as
/// [`out_of_place_shape`].
fn inplace_shape(
    s: Geometry<'_>,
    other: Geometry<'_>,
    opts: Options,
) -> Result<(Dims, bool, Warnings)> {
    let mut warnings = Warnings::new();
    let fallback = match check_inplace(s.shape, other.shape) {
        Ok(()) => {
            if opts.broadcast_warning && s.shape != other.shape && s.numel() == other.numel() {
                warnings.push(Warning::BroadcastChange);
            }
            false
        }
        Err(e) if falls_back(&e, opts) && s.numel() == other.numel() => {
            warnings.push(Warning::FallbackInPlace);
            true
        }
        Err(e) => return Err(e),
    };
    Ok((super::alloc::try_small(s.shape)?, fallback, warnings))
}

/// How a computation into a written tensor runs: decided from types and geometry before anything
/// is allocated, by the call and by the planner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Steps {
    /// Computed into a temporary of the result type, then cast into the written tensor (so a
    /// cast never happens half-way through a failed call: the temporary comes first).
    temp: bool,
    /// The float16/bfloat16 rule for a one-element second operand of another type (see
    /// [`reads_scalar_in_f32`]): computed from `a` and that float32 alone.
    f32_scalar: bool,
    /// Inputs first converted to the computation type, into row-major temporaries of their own
    /// (un-broadcast) shape.
    convert: [bool; 2],
    /// The divisor's elements are read for a zero first (integer division, remainder, fmod).
    divisor: bool,
}

fn steps(
    op: BinaryOp,
    dest: Geometry<'_>,
    a: Geometry<'_>,
    b: Geometry<'_>,
    types: Types,
) -> Steps {
    let rule = op.rule();
    // With no elements nothing is computed, and no input needs converting.
    let empty = numel(dest.shape) == 0;
    let f32_scalar =
        !empty && reads_scalar_in_f32(rule, types.compute, a.dtype, b.dtype, b.numel());
    let convert = [a, b].map(|g| !empty && !f32_scalar && g.dtype != types.compute);
    Steps {
        temp: dest.dtype != types.result,
        f32_scalar,
        convert,
        divisor: !empty && rule.nonzero_divisor && !types.compute.is_floating(),
    }
}

/// Computes `a op b` into `dest` (which has the broadcast shape), following [`steps`].
fn write_result(op: BinaryOp, dest: &Tensor, a: &Tensor, b: &Tensor, types: Types) -> Result<()> {
    let steps = steps(op, dest.geometry(), a.geometry(), b.geometry(), types);
    let tmp = match steps.temp {
        true => Some(Tensor::new(types.result, dest.shape(), Init::Uninit)?),
        false => None,
    };
    let target = tmp.as_ref().unwrap_or(dest);
    if steps.f32_scalar {
        compute_with_f32_scalar(op, target, a, read_f32(b))?;
    } else if target.numel() > 0 {
        let dtype = types.compute;
        let convert = |t: &Tensor, yes: bool| yes.then(|| t.to_contiguous(dtype)).transpose();
        let (ca, cb) = (convert(a, steps.convert[0])?, convert(b, steps.convert[1])?);
        let (a, b) = (ca.as_ref().unwrap_or(a), cb.as_ref().unwrap_or(b));
        if steps.divisor {
            check_divisor(b)?;
        }
        compute_same_type(op, target, a, b, dtype)?;
    }
    match tmp {
        Some(tmp) => copy_into(dest, &tmp),
        None => Ok(()),
    }
}

/// PyTorch's CPU kernels for `mul`, `div` and `floor_divide` in float16 and bfloat16 take a
/// second operand of one element (a 0-d tensor, or any shape of one element) of another type as a
/// float32 read straight from its own type, not first rounded to the computation type as every
/// other operand is, compute in float32 and round once at the end: `float16([5.]) *
/// float64(1/3)` is 1.6669921875, not 1.666015625. Not for other operations, nor for a
/// one-element first operand, nor for a second operand expanded to more elements (PyTorch 2.15;
/// `tests/data/pytorch/reduced_scalar.jsonl`, `ops_values.jsonl`). The operations that do it say
/// so in their table row ([`Rule::float32_scalar`](super::binary_ops::Rule)).
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

/// The one element of `t`, read as a float32.
pub(crate) fn read_f32(t: &Tensor) -> f32 {
    let mut s = 0f32;
    // SAFETY: `t`'s one element is readable; `s` is one writable float32.
    unsafe {
        kernels::cast_run(
            t.dtype(),
            DType::F32,
            [(&mut s as *mut f32).cast(), t.data_ptr()],
            [0, 0],
            1,
        )
    };
    s
}

/// `out = a op s` where `out` and `a` have the computation type (float16 or bfloat16) and `s` is
/// the float32 of [`reads_scalar_in_f32`].
fn compute_with_f32_scalar(op: BinaryOp, out: &Tensor, a: &Tensor, s: f32) -> Result<()> {
    let dtype = out.dtype();
    let walk = Walk::new(out.shape(), [out.geometry(), a.geometry()])?;
    // SAFETY: the walk covers out's view and `a` broadcast to it, both within their storages;
    // out aliases `a` only exactly (checked by check_writable).
    unsafe {
        walk.run([out.data_ptr(), a.data_ptr()], |ptrs, strides, n| {
            kernels::f32_scalar_run(op, dtype, s, ptrs, strides, n)
        })
    };
    Ok(())
}

/// `t` converted to `dtype` (a row-major copy), or `None` when it has that type already.
pub(crate) fn converted(t: &Tensor, dtype: DType) -> Result<Option<Tensor>> {
    Ok(if t.dtype() == dtype {
        None
    } else {
        Some(t.to_contiguous(dtype)?)
    })
}

/// PyTorch's `ZeroDivisionError`: an integer division, remainder or fmod with a zero among the
/// divisor's elements (every one is read when the result is not empty). Checked before anything
/// is written, so the refused call changes nothing.
pub(crate) fn check_divisor(divisor: &Tensor) -> Result<()> {
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

/// [`write_result`]'s computation once both inputs have the computation type `dtype`; `out` has
/// the result type.
fn compute_same_type(
    op: BinaryOp,
    out: &Tensor,
    a: &Tensor,
    b: &Tensor,
    dtype: DType,
) -> Result<()> {
    // SAFETY: binary_run reads `dtype` inputs and writes the operation's result for them, which
    // is out's type; out aliases an input only exactly (checked by check_writable).
    unsafe { run_elementwise_rows([out, a, b], |tile| kernels::binary_run(op, dtype, tile)) }
}

/// Runs `kernel(ptrs, byte_strides, len)` over the elements of `operands[0]` (the written one)
/// and the others broadcast to its shape, walked as [`Walk`] decides.
///
/// # Safety
/// `kernel` must be sound for runs of these views at their types; the written operand may alias
/// an input only exactly.
pub(crate) unsafe fn run_elementwise<const N: usize>(
    operands: [&Tensor; N],
    kernel: impl Fn([*mut u8; N], [isize; N], usize) + Sync,
) -> Result<()> {
    let walk = Walk::new(operands[0].shape(), operands.map(Tensor::geometry))?;
    // SAFETY: the walk covers operand 0's view and the others broadcast to it, all within their
    // storages; the kernel is sound for them (this function's contract).
    unsafe { walk.run(operands.map(Tensor::data_ptr), kernel) };
    Ok(())
}

/// [`run_elementwise`], by tiles of several runs (see [`Tile`]).
///
/// # Safety
/// As [`run_elementwise`], for every run of every tile.
pub(crate) unsafe fn run_elementwise_rows<const N: usize>(
    operands: [&Tensor; N],
    tile: impl Fn(&Tile<N>) + Sync,
) -> Result<()> {
    let walk = Walk::new(operands[0].shape(), operands.map(Tensor::geometry))?;
    // SAFETY: as in `run_elementwise`.
    unsafe { walk.run_rows(operands.map(Tensor::data_ptr), tile) };
    Ok(())
}

/// The iterated sizes, inner loop and thread count of [`run_elementwise`] over operands of these
/// geometries (operand 0 the written one, of `shape`): what a fused expression's pass reports.
pub(crate) fn describe_elementwise(
    shape: &[usize],
    operands: &[Geometry<'_>],
) -> Result<(Dims, LoopKind, usize)> {
    macro_rules! with_n {
        ($($n:literal)*) => {
            match operands.len() {
                $($n => Walk::<$n>::new(shape, std::array::from_fn(|k| operands[k]))?.describe(),)*
                n => unreachable!("{n} operands: a pass takes at most 9"),
            }
        };
    }
    with_n!(1 2 3 4 5 6 7 8 9)
}

/// How the elements of a computation are walked: operand 0 is the written one, of the walk's
/// shape; the others broadcast to it. Decided from geometry alone.
enum Walk<const N: usize> {
    /// Small work: a stack-only plan, on the calling thread (building the full plan would cost
    /// more than the arithmetic).
    Small(SmallPlan<N>, [usize; N]),
    /// A full plan, run by [`parallel::run`].
    Full(Plan<N>, [usize; N]),
}

impl<const N: usize> Walk<N> {
    fn new(shape: &[usize], operands: [Geometry<'_>; N]) -> Result<Walk<N>> {
        let itemsize = operands.map(|g| g.dtype.size());
        if numel(shape) < parallel::SMALL_ELEMS {
            let small =
                std::array::from_fn(|k| (operands[k].shape, operands[k].strides, itemsize[k]));
            if let Some(plan) = SmallPlan::new(shape, small) {
                return Ok(Walk::Small(plan, itemsize));
            }
        }
        let mut strides: [Strides; N] = std::array::from_fn(|_| Strides::new());
        for (k, g) in operands.iter().enumerate().skip(1) {
            strides[k] = broadcast_strides(g.shape, g.strides, shape)?;
        }
        let views: [&[isize]; N] = std::array::from_fn(|k| {
            if k == 0 {
                operands[0].strides
            } else {
                &strides[k][..]
            }
        });
        Ok(Walk::Full(Plan::new(shape, views)?, itemsize))
    }

    /// The iterated sizes, the inner loop and the thread count.
    fn describe(&self) -> Result<(Dims, LoopKind, usize)> {
        // Inner strides in bytes, to compare with the element sizes.
        let (shape, inner, itemsize, tiled, threads) = match self {
            Walk::Small(plan, itemsize) => (plan.shape(), plan.inner_strides(), itemsize, false, 1),
            Walk::Full(plan, itemsize) => {
                let inner = std::array::from_fn(|k| {
                    plan.strides[k]
                        .last()
                        .map_or(0, |&s| s * itemsize[k] as isize)
                });
                let threads = parallel::threads_for(plan.numel);
                (
                    &plan.shape[..],
                    inner,
                    itemsize,
                    plan.tiling(*itemsize).is_some(),
                    threads,
                )
            }
        };
        let unit = |k: usize| inner[k] == itemsize[k] as isize;
        let kind = if tiled {
            LoopKind::Tiled
        } else if shape.is_empty() || (0..N).all(unit) {
            LoopKind::Contiguous
        } else if unit(0) && (1..N).all(|k| unit(k) || inner[k] == 0) {
            LoopKind::Broadcast
        } else {
            LoopKind::Strided
        };
        Ok((super::alloc::try_small(shape)?, kind, threads))
    }

    /// Runs `kernel(ptrs, byte_strides, len)` over every run.
    ///
    /// # Safety
    /// As [`Walk::run_rows`].
    unsafe fn run(
        &self,
        base: [*mut u8; N],
        kernel: impl Fn([*mut u8; N], [isize; N], usize) + Sync,
    ) {
        // SAFETY: forwarded.
        unsafe { self.run_rows(base, |tile| tile.for_each_run(&kernel)) }
    }

    /// Runs `tile` over every tile of runs (a small walk gives one run at a time).
    ///
    /// # Safety
    /// `base` holds each operand's first element, every element the walk reaches is valid for
    /// the kernel's accesses, and the written operand aliases an input only exactly.
    unsafe fn run_rows(&self, base: [*mut u8; N], tile: impl Fn(&Tile<N>) + Sync) {
        match self {
            // SAFETY: forwarded.
            Walk::Small(plan, _) => unsafe {
                plan.for_each_run(base, |p, s, n| tile(&Tile::run(p, s, n)))
            },
            Walk::Full(plan, itemsize) => parallel::run_rows(plan, base, *itemsize, tile),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g<'a>(dtype: DType, shape: &'a [usize], strides: &'a [isize]) -> Geometry<'a> {
        Geometry {
            dtype,
            shape,
            strides,
            wrapped: false,
        }
    }

    fn plan(a: Geometry<'_>, b: Geometry<'_>) -> Report {
        plan_binary(BinaryOp::Add, a, b, Dest::New, Options::default()).unwrap()
    }

    /// How the suite's cases would run: merged loops, the inner loop's kind, threads.
    #[test]
    fn plans_of_known_cases() {
        let _lock = parallel::tests::SETTINGS.lock().unwrap();
        parallel::set_num_threads(2);
        parallel::set_threshold(parallel::DEFAULT_THRESHOLD);
        let f = DType::F32;
        let (n, rm, t) = ([4096, 4096], [4096, 1], [1, 4096]);
        // S1: one contiguous loop, on both threads.
        let p = plan(g(f, &n, &rm), g(f, &n, &rm));
        assert_eq!(
            (&p.loop_shape[..], p.loop_kind, p.threads),
            (&[1 << 24][..], LoopKind::Contiguous, 2)
        );
        assert_eq!(p.alloc_bytes, 4 << 24);
        // S2: a row repeated down the rows, each contiguous; S3: a column, one value per row.
        let p = plan(g(f, &n, &rm), g(f, &[4096], &[1]));
        assert_eq!(
            (&p.loop_shape[..], p.loop_kind),
            (&n[..], LoopKind::Contiguous)
        );
        let p = plan(g(f, &n, &rm), g(f, &[4096, 1], &[1, 1]));
        assert_eq!(
            (&p.loop_shape[..], p.loop_kind),
            (&n[..], LoopKind::Broadcast)
        );
        // S8: a transposed operand is walked in tiles.
        assert_eq!(plan(g(f, &n, &t), g(f, &n, &rm)).loop_kind, LoopKind::Tiled);
        // The permuted case keeps x's layout, so both stream: (16384, 256), y's row repeated.
        let (xs, xt) = ([256, 64, 256], [1, 65536, 256]);
        let p = plan(g(f, &xs, &xt), g(f, &[256, 1, 1], &[1, 1, 1]));
        assert_eq!(&p.strides[..], &xt);
        assert_eq!(
            (&p.loop_shape[..], p.loop_kind),
            (&[16384, 256][..], LoopKind::Contiguous)
        );
        // L1: a small plan, on the calling thread.
        let p = plan(g(f, &[3, 1], &[1, 1]), g(f, &[1, 3], &[3, 1]));
        assert_eq!(
            (&p.loop_shape[..], p.loop_kind, p.threads),
            (&[3, 3][..], LoopKind::Broadcast, 1)
        );
        // int32 (3,) + float64 0-d computes in float64: the result (24 bytes) and a converted
        // copy of the int32 operand (24 bytes) are allocated.
        let p = plan(g(DType::I32, &[3], &[1]), g(DType::F64, &[], &[]));
        assert_eq!((p.dtype, p.alloc_bytes), (DType::F64, 48));
        // Nothing to compute.
        let p = plan(g(f, &[0, 3], &[3, 1]), g(f, &[3], &[1]));
        assert_eq!((p.loop_kind, p.alloc_bytes), (LoopKind::None, 0));
        parallel::set_num_threads(0);
    }

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
