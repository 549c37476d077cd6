//! Reductions: `sum`, `mean`, `prod`, `amax` and `amin` over any set of dimensions, PyTorch's
//! `sum_to_size`, and `sum_to_size(a op b, shape)` computed without materialising `a op b`.
//!
//! # Types (PyTorch 2.x)
//! Sums and products of bool and integer tensors are int64; `mean` of them is refused; `amax` and
//! `amin` keep the type. Sums and means of float16, bfloat16 and float32 accumulate in float32
//! and round once at the end, of float64 in float64; products multiply in the input's own type
//! (float16 and bfloat16 round after every step, as PyTorch's kernels do); integers wrap.
//!
//! # Order of evaluation, accuracy and threads
//! Every output element reduces its `n` elements in an order fixed by the shapes, strides and
//! dtype alone, never by the thread count or the CPU's vector width: results are bit-identical
//! for any number of threads and on every code path. The elements are taken in rows of lanes:
//! when a kept dimension is innermost in memory, a row is up to 16 KiB of output columns at one
//! reduced index (each column its own lane); otherwise a row is 32 consecutive elements of one
//! output's stream (32 lanes, combined pairwise at the end). Each lane accumulates [`LEAF`] (16)
//! rows into a leaf, leaves go [`BLOCK`] (16) at a time into a block, blocks at most
//! [`MAX_BLOCKS`] (64) at a time into a total; the totals of consecutive ranges of rows
//! (computed independently, possibly on other threads; up to 16 ranges when there are few
//! outputs, else ranges of 64 blocks) are combined pairwise. The longest chain of additions an
//! element goes through is therefore `h <= 16 + 16 + 64 + 2 + ceil(log2(ranges)) + 5`, which is
//! at most `106 + ceil(log2(max(1, n / 16384)))` (and never more than `n - 1`), and a floating
//! sum satisfies the standard bound for summation trees,
//! `|computed - exact| <= gamma(h) * sum(|x|)` with `gamma(h) = h u / (1 - h u)` and `u` the
//! accumulator's unit roundoff (2^-24 for float32, 2^-53 for float64); left-to-right summation
//! has `h = n - 1`. A mean divides that sum once; a float16 or bfloat16 result rounds it once.
//!
//! # Speed
//! Each range of rows is one unit of parallel work. Rows of contiguous elements go through the
//! lanes a leaf at a time in registers (32 lanes for a stream; 32 columns x 16 rows for column
//! reductions, so the leaf is read and written once per 16 rows), with an AVX2 clone of the loops
//! chosen at run time. The fused form applies the operation's scalar function to operands that
//! are contiguous or repeated along a row as it reads them; operands of other layouts are first
//! computed into a small stage by the elementwise kernel (which serves any operation).
use super::alloc::{
    try_small, try_small_collect, try_small_elem, try_small_with_capacity, try_to_vec, try_vec,
};
use super::binary_ops::{BinaryOp, ElemFn, Visit};
use super::dtype::DType;
use super::elem::{Bool8, Elem, Float};
use super::error::{Error, Result};
use super::kernels;
use super::ops::{self, LoopKind, Operand as _, Report};
use super::parallel;
use super::plan::broadcast_strides;
use super::shape::{
    broadcast_shapes, checked_nbytes, checked_numel, contiguous_strides, numel, Dims, Strides,
};
use super::tensor::{wrap_dim, Init, Tensor};
use crate::with_elem;
use half::{bf16, f16};
use smallvec::SmallVec;
use std::marker::PhantomData;
use std::mem::{size_of, MaybeUninit};
use std::sync::atomic::{AtomicU64, Ordering};

/// The five reductions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReduceOp {
    Sum,
    Mean,
    Prod,
    Amax,
    Amin,
}

impl ReduceOp {
    pub const ALL: [ReduceOp; 5] = [
        ReduceOp::Sum,
        ReduceOp::Mean,
        ReduceOp::Prod,
        ReduceOp::Amax,
        ReduceOp::Amin,
    ];

    /// PyTorch's name, as its messages give it.
    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Mean => "mean",
            ReduceOp::Prod => "prod",
            ReduceOp::Amax => "amax",
            ReduceOp::Amin => "amin",
        }
    }

    /// The result type for an input of `dtype`.
    pub fn result_type(self, dtype: DType) -> Result<DType> {
        match self {
            ReduceOp::Sum | ReduceOp::Prod if !dtype.is_floating() => Ok(DType::I64),
            ReduceOp::Mean if !dtype.is_floating() => Err(Error::ReduceDtype {
                op: self.name(),
                dtype,
            }),
            _ => Ok(dtype),
        }
    }

    /// The type elements of `dtype` are accumulated in (the accumulator of the reducers below):
    /// float32 for sums and means of 16-bit floats, int64 for sums and products of bools and
    /// integers, else `dtype` itself.
    pub fn accumulator(self, dtype: DType) -> DType {
        match self {
            ReduceOp::Sum | ReduceOp::Mean | ReduceOp::Prod if !dtype.is_floating() => DType::I64,
            ReduceOp::Sum | ReduceOp::Mean if dtype != DType::F64 => DType::F32,
            _ => dtype,
        }
    }
}

/// A reduction's checks passed: the result's type and shape, and which of the input's
/// dimensions are reduced.
pub(crate) struct Reduction {
    dtype: DType,
    /// Whether each dimension is reduced.
    pub(crate) reduced: SmallVec<[bool; 6]>,
    /// The result's shape.
    pub(crate) shape: Dims,
}

/// `op` of `t` over `dims` (every dimension when `dims` is empty, as PyTorch's `dim=None` and
/// `dim=()`), keeping reduced dimensions as size 1 when `keepdim`. The checks come in PyTorch's
/// order: the type (mean); each dimension in turn, its range and, for `amax`/`amin`, its size;
/// an empty input without dimensions (`amax`/`amin`); then repeated dimensions.
pub fn reduce(op: ReduceOp, t: &Tensor, dims: &[i64], keepdim: bool) -> Result<Tensor> {
    let r = decide(op, t.dtype(), t.shape(), dims, keepdim)?;
    reduce_into(op, t, &r.reduced, r.dtype, &r.shape)
}

/// The checks and decisions of [`reduce`], from the input's type and shape alone: the call and
/// the planner ([`plan_reduce`]) run this same code.
pub(crate) fn decide(
    op: ReduceOp,
    dtype: DType,
    shape: &[usize],
    dims: &[i64],
    keepdim: bool,
) -> Result<Reduction> {
    let dtype = op.result_type(dtype)?;
    let ndim = shape.len();
    let extremum = matches!(op, ReduceOp::Amax | ReduceOp::Amin);
    let mut wrapped: SmallVec<[usize; 6]> = try_small_with_capacity(dims.len())?;
    for &d in dims {
        // A 0-d tensor takes dimension 0 (or -1), as PyTorch's scalar wrapping allows.
        let w = wrap_dim(d, ndim.max(1))?;
        if extremum && shape.get(w) == Some(&0) {
            return Err(Error::EmptyReduction {
                op: op.name(),
                dim: Some((d, w)),
            });
        }
        wrapped.push(w);
    }
    if extremum && dims.is_empty() && numel(shape) == 0 {
        return Err(Error::EmptyReduction {
            op: op.name(),
            dim: None,
        });
    }
    // One slot more than dimensions: a 0-d tensor's dimension 0.
    let mut reduced: SmallVec<[bool; 6]> = try_small_elem(dims.is_empty(), ndim + 1)?;
    let mut seen: SmallVec<[bool; 6]> = try_small_elem(false, ndim + 1)?;
    for &d in &wrapped {
        if std::mem::replace(&mut seen[d], true) {
            return Err(Error::DimRepeated { dim: d });
        }
        reduced[d] = true;
    }
    let mut out_shape: Dims = try_small_with_capacity(ndim)?;
    for d in (0..ndim).filter(|&d| keepdim || !reduced[d]) {
        out_shape.push(if reduced[d] { 1 } else { shape[d] });
    }
    reduced.truncate(ndim);
    Ok(Reduction {
        dtype,
        reduced,
        shape: out_shape,
    })
}

/// PyTorch's `t.sum_to_size(size)`: sums the leading dimensions `size` lacks and those where
/// `size` has 1 and `t` has not, giving shape `size`; `size` `[]` always sums (even a 0-d `t`).
/// When nothing is summed the result is `t` itself (a view sharing its elements), with its type;
/// otherwise a new tensor of the sum's type.
pub fn sum_to_size(t: &Tensor, size: &[i64]) -> Result<Tensor> {
    match decide_sum_to_size(t.dtype(), t.shape(), size)? {
        None => t.try_clone(),
        Some(r) => reduce_into(ReduceOp::Sum, t, &r.reduced, r.dtype, &r.shape),
    }
}

/// The checks and decisions of [`sum_to_size`] from the input's type and shape (`None`: nothing
/// is summed, the result is the input): the call and the planner run this same code.
fn decide_sum_to_size(dtype: DType, shape: &[usize], size: &[i64]) -> Result<Option<Reduction>> {
    let Some(reduced) = summed_dims(size, shape)? else {
        return Ok(None);
    };
    Ok(Some(Reduction {
        dtype: ReduceOp::Sum.result_type(dtype)?,
        reduced,
        shape: as_sizes(size)?,
    }))
}

/// `sum_to_size(a op b, size)` without materialising `a op b`, for every operation of the
/// elementwise table: each element of the broadcast result is computed (by the scalar function
/// `bc_binary`'s kernel applies, at the same computation type) and summed at once, so the inputs
/// are read once and only the result of shape `size` is written. The types, errors (those of
/// `a op b` first, in `bc_binary`'s order, integer zero divisors included) and values are those of
/// the two calls, with the summation order of [`sum_to_size`] on `a op b` in the layout
/// `bc_binary` gives it; a bool result (comparisons, logical operations) sums to int64. When
/// nothing is summed, this is `a op b`.
pub fn binary_sum_to(op: BinaryOp, a: &Tensor, b: &Tensor, size: &[i64]) -> Result<Tensor> {
    let (ga, gb) = (a.geometry(), b.geometry());
    let d = decide_fused(op, ga, gb, size)?;
    let reduced = match d.reduced {
        // As `bc_binary` computes it (through the fast path where it applies).
        Ok(None) => return super::fast::binary(op, a, b, ops::Options::default()).map(|(t, _)| t),
        Ok(Some(reduced)) => Ok(reduced),
        Err(e) => Err(e),
    };
    let (shape, types) = (&d.shape, d.types);
    // The layout `bc_binary` gives `a op b`, whose order `sum_to_size` then follows.
    let order = ops::binary_layout(shape, types.compute, [ga, gb])?;
    let scalar = d.scalar.then(|| ops::read_f32(b));
    let ca = match d.convert[0] {
        true => ops::converted(a, types.compute)?,
        false => None,
    };
    let cb = match d.convert[1] {
        true => ops::converted(b, types.compute)?,
        false => None,
    };
    let (a, b) = (ca.as_ref().unwrap_or(a), cb.as_ref().unwrap_or(b));
    if d.checks_divisor {
        ops::check_divisor(b)?;
    }
    let reduced = reduced?;
    let out = Tensor::new(d.dtype, &as_sizes(size)?, Init::Zeros)?;
    if out.numel() == 0 || d.empty {
        return Ok(out); // nothing to write, or every sum is empty (0)
    }
    let geo = fused_geometry(
        shape,
        [a.geometry(), b.geometry()],
        &order,
        &reduced,
        types.compute,
    )?;
    let (base, simd) = ([a.data_ptr(), b.data_ptr()], kernels::simd_level());
    with_elem!(types.result, T => {
        let src = Fused::<T> {
            base,
            op,
            compute: types.compute,
            scalar,
            simd,
            elem: PhantomData,
        };
        execute::<SumR<T>, 2>(&geo, &src, &out, false)
    })?;
    Ok(out)
}

/// What [`decide_fused`] finds.
struct FusedSum {
    /// The broadcast shape of `a op b`.
    shape: Dims,
    types: ops::Types,
    /// The result's type (the sum's).
    dtype: DType,
    /// The dimensions of `shape` summed (`None`: none, the call is `a op b`), or `sum_to_size`'s
    /// refusal, which the call gives after anything `a op b` refuses (a zero divisor included).
    reduced: Result<Option<SmallVec<[bool; 6]>>>,
    /// `a op b` has no elements (every sum is empty).
    empty: bool,
    /// `b` has one element read in float32 (see [`ops::reads_scalar_in_f32`]).
    scalar: bool,
    /// The operands converted to the computation type first (row-major copies).
    convert: [bool; 2],
    /// `b`'s elements are read to refuse a zero integer divisor.
    checks_divisor: bool,
}

/// The checks and decisions of [`binary_sum_to`], from the operands' types and geometry, in its
/// order: the call and the planner ([`plan_binary_sum_to`]) run this same code.
fn decide_fused(
    op: BinaryOp,
    ga: ops::Geometry<'_>,
    gb: ops::Geometry<'_>,
    size: &[i64],
) -> Result<FusedSum> {
    ops::check_op_defined(op, ga.dtype, gb.dtype)?;
    let shape = broadcast_shapes(ga.shape, gb.shape)?;
    let types = ops::types_of(op, (ga.dtype, ga.rank()), (gb.dtype, gb.rank()));
    ops::check_kernel(op, types.compute)?;
    // Refused like the two calls, whose `a op b` could not exist.
    checked_numel(&shape)?;
    let reduced = summed_dims(size, &shape);
    let empty = shape.contains(&0);
    let rule = op.rule();
    // A one-element second operand of another type that `bc_binary` reads in float32.
    let scalar = !empty
        && ops::reads_scalar_in_f32(rule, types.compute, ga.dtype, gb.dtype, numel(gb.shape));
    // Other inputs of another type are converted first, at their own size, as `bc_binary` does
    // (when there is anything to compute).
    let convert = [
        !empty && ga.dtype != types.compute,
        !empty && !scalar && gb.dtype != types.compute,
    ];
    Ok(FusedSum {
        dtype: ReduceOp::Sum.result_type(types.result)?,
        checks_divisor: !empty && rule.nonzero_divisor && !types.compute.is_floating(),
        shape,
        types,
        reduced,
        empty,
        scalar,
        convert,
    })
}

/// The fused form's iteration over `a op b` of `shape` (`order`: the strides of its layout),
/// summing the dimensions marked in `reduced`, from the operands as they are read (of the
/// computation type `compute`).
fn fused_geometry(
    shape: &[usize],
    ab: [ops::Geometry<'_>; 2],
    order: &[isize],
    reduced: &[bool],
    compute: DType,
) -> Result<Geometry<2>> {
    let sa = broadcast_strides(ab[0].shape, ab[0].strides, shape)?;
    let sb = broadcast_strides(ab[1].shape, ab[1].strides, shape)?;
    Geometry::new(shape, [&sa, &sb], order, reduced, compute.size())
}

/// Which dimensions of `shape` `sum_to_size(size)` sums, or `None` when it sums nothing (PyTorch
/// then returns the tensor itself); refuses a `size` that `shape` cannot be broadcast from.
fn summed_dims(size: &[i64], shape: &[usize]) -> Result<Option<SmallVec<[bool; 6]>>> {
    let lead = shape.len().checked_sub(size.len());
    let fits = lead.is_some_and(|lead| {
        size.iter()
            .zip(&shape[lead..])
            .all(|(&s, &d)| s == d as i64 || s == 1)
    });
    let Some(lead) = lead.filter(|_| fits) else {
        return Err(Error::or_alloc(|| {
            Ok(Error::NotExpandable {
                size: try_to_vec(size)?,
                shape: try_to_vec(shape)?,
            })
        }));
    };
    let reduced: SmallVec<[bool; 6]> = try_small_collect(
        (0..shape.len()).map(|d| d < lead || size[d - lead] == 1 && shape[d] != 1),
    )?;
    // An empty `size` is a full sum, even of nothing but size-1 dimensions (PyTorch's `sum_to`).
    Ok((size.is_empty() || reduced.contains(&true)).then_some(reduced))
}

/// Sizes already checked to be those of a shape.
fn as_sizes(size: &[i64]) -> Result<Dims> {
    try_small_collect(size.iter().map(|&s| s as usize))
}

/// Reduces `t` over the dimensions marked in `reduced` into a new row-major tensor of `dtype`
/// and shape `out_shape` (the kept dimensions, in order, with any size-1 dimensions).
fn reduce_into(
    op: ReduceOp,
    t: &Tensor,
    reduced: &[bool],
    dtype: DType,
    out_shape: &[usize],
) -> Result<Tensor> {
    if reduces_nothing(t.shape(), reduced) {
        // Every output reduces nothing: the identity (0, 1), or 0/0 for a mean.
        let value = match op {
            ReduceOp::Sum => 0.0,
            ReduceOp::Prod => 1.0,
            _ => f64::NAN,
        };
        return Tensor::new(dtype, out_shape, Init::Fill(value));
    }
    let out = Tensor::new(dtype, out_shape, Init::Uninit)?;
    if out.numel() == 0 {
        return Ok(out);
    }
    let geo = view_geometry(t.geometry(), reduced)?;
    let (base, mean) = (t.data_ptr(), op == ReduceOp::Mean);
    with_elem!(t.dtype(), T => {
        let src = View::<T> { base, elem: PhantomData };
        match op {
            ReduceOp::Sum | ReduceOp::Mean => execute::<SumR<T>, 1>(&geo, &src, &out, mean),
            ReduceOp::Prod => execute::<ProdR<T>, 1>(&geo, &src, &out, false),
            ReduceOp::Amax => execute::<ExtremeR<T, true>, 1>(&geo, &src, &out, false),
            ReduceOp::Amin => execute::<ExtremeR<T, false>, 1>(&geo, &src, &out, false),
        }
    })?;
    Ok(out)
}

/// Whether a dimension marked in `reduced` is empty: every output then reduces nothing.
fn reduces_nothing(shape: &[usize], reduced: &[bool]) -> bool {
    // (Products of an empty view's sizes may overflow: none is formed.)
    (0..shape.len()).any(|d| reduced[d] && shape[d] == 0)
}

/// The iteration of a reduction of `t` over the dimensions marked in `reduced`, when it has
/// outputs and none reduces nothing (so `t` has elements, and their count fits).
fn view_geometry(t: ops::Geometry<'_>, reduced: &[bool]) -> Result<Geometry<1>> {
    Geometry::new(t.shape, [t.strides], t.strides, reduced, t.dtype.size())
}

// ---------------------------------------------------------------------------------------------
// The planner: what a call would do, from its operands' types and geometry alone

/// What `reduce(op, t, dims, keepdim)` ([`reduce`]) would do for an input of this type and
/// geometry: the call's checks and decisions, so an error is the one it would give. The report's
/// computation type is the accumulator's; its loop shape is the number of outputs and the
/// elements each reduces.
pub fn plan_reduce(
    op: ReduceOp,
    t: ops::Geometry<'_>,
    dims: &[i64],
    keepdim: bool,
) -> Result<Report> {
    let r = decide(op, t.dtype, t.shape, dims, keepdim)?;
    plan_view(op, t, r)
}

/// What `sum_to_size(t, size)` ([`sum_to_size`]) would do, as [`plan_reduce`]; when nothing is
/// summed the result is `t` itself: no memory, no loop, `t`'s strides.
pub fn plan_sum_to_size(t: ops::Geometry<'_>, size: &[i64]) -> Result<Report> {
    match decide_sum_to_size(t.dtype, t.shape, size)? {
        Some(r) => plan_view(ReduceOp::Sum, t, r),
        None => Ok(Report {
            dtype: t.dtype,
            compute: t.dtype,
            checks_divisor: false,
            shape: try_small(t.shape)?,
            strides: try_small(t.strides)?,
            warnings: ops::Warnings::new(),
            loop_shape: Dims::new(),
            loop_kind: LoopKind::None,
            threads: 1,
            alloc_bytes: 0,
        }),
    }
}

/// What `binary_sum_to(op, a, b, size)` ([`binary_sum_to`]) would do, as [`plan_reduce`] (the
/// computation type is the operation's, as [`ops::plan_binary`] reports it); when nothing is
/// summed, [`ops::plan_binary`]'s report. A refusal of `size` is reported, where the call
/// refuses a zero integer divisor first (`checks_divisor` is not known then).
pub fn plan_binary_sum_to(
    op: BinaryOp,
    a: ops::Geometry<'_>,
    b: ops::Geometry<'_>,
    size: &[i64],
) -> Result<Report> {
    let d = decide_fused(op, a, b, size)?;
    let Some(reduced) = d.reduced? else {
        return ops::plan_binary(op, a, b, ops::Dest::New, ops::Options::default());
    };
    let (compute, out_shape) = (d.types.compute, as_sizes(size)?);
    // Converted operands are read from row-major copies.
    let given = [a, b];
    let mut row_major: [Strides; 2] = Default::default();
    let mut alloc_bytes = 0;
    for k in (0..2).filter(|&k| d.convert[k]) {
        row_major[k] = contiguous_strides(given[k].shape)?;
        alloc_bytes += checked_nbytes(numel(given[k].shape), compute.size())?;
    }
    let inputs = std::array::from_fn(|k| match d.convert[k] {
        true => ops::Geometry {
            dtype: compute,
            strides: &row_major[k],
            ..given[k]
        },
        false => given[k],
    });
    let geo = match d.empty || numel(&out_shape) == 0 {
        true => None,
        false => {
            let order = ops::binary_layout(&d.shape, compute, [a, b])?;
            Some(fused_geometry(&d.shape, inputs, &order, &reduced, compute)?)
        }
    };
    let acc = ReduceOp::Sum.accumulator(d.types.result);
    let mut r = report(
        d.dtype,
        compute,
        acc,
        out_shape,
        geo.as_ref(),
        compute.size(),
    )?;
    r.alloc_bytes += alloc_bytes;
    r.checks_divisor = d.checks_divisor;
    Ok(r)
}

/// The report of reducing the view `t` as `r` decides.
fn plan_view(op: ReduceOp, t: ops::Geometry<'_>, r: Reduction) -> Result<Report> {
    let geo = match reduces_nothing(t.shape, &r.reduced) || numel(&r.shape) == 0 {
        true => None,
        false => Some(view_geometry(t, &r.reduced)?),
    };
    let acc = op.accumulator(t.dtype);
    report(r.dtype, acc, acc, r.shape, geo.as_ref(), t.dtype.size())
}

/// The report of a reduction into a new row-major result of `dtype` and `shape`, accumulating in
/// `acc` over `geo` (elements of `itemsize` bytes; `None`: every output reduces nothing and
/// takes the identity, written in one contiguous loop).
fn report<const N: usize>(
    dtype: DType,
    compute: DType,
    acc: DType,
    shape: Dims,
    geo: Option<&Geometry<N>>,
    itemsize: usize,
) -> Result<Report> {
    let outputs = numel(&shape);
    let (loop_shape, loop_kind, threads) = match geo {
        _ if outputs == 0 => (Dims::new(), LoopKind::None, 1),
        None => (try_small(&[outputs, 0])?, LoopKind::Contiguous, 1),
        Some(g) => {
            let w = g.work(acc.size());
            let kind = match Mode::of_size(itemsize, g.row_strides(&w.cut)) {
                Some(Mode(mask)) if mask == (1 << N) - 1 => LoopKind::Contiguous,
                Some(_) => LoopKind::Broadcast,
                None => LoopKind::Strided,
            };
            (try_small(&[g.m, g.n])?, kind, w.threads)
        }
    };
    Ok(Report {
        dtype,
        compute,
        checks_divisor: false,
        alloc_bytes: checked_nbytes(outputs, dtype.size())?,
        strides: contiguous_strides(&shape)?,
        shape,
        warnings: ops::Warnings::new(),
        loop_shape,
        loop_kind,
        threads,
    })
}

// ---------------------------------------------------------------------------------------------
// What a reduction computes

/// How one reduction combines elements: the accumulator, its identity, how an element enters it,
/// how two accumulators combine, and the result.
pub(crate) trait Reducer: Copy + Send + Sync + 'static {
    type In: Elem;
    type Acc: Elem;
    type Out: Elem;
    fn identity() -> Self::Acc;
    fn combine(a: Self::Acc, b: Self::Acc) -> Self::Acc;

    #[inline(always)]
    fn lift(x: Self::In) -> Self::Acc {
        x.cast()
    }

    /// The result of a reduction of `n` elements (`mean` only for sums).
    #[inline]
    fn finish(a: Self::Acc, _n: usize, _mean: bool) -> Self::Out {
        a.cast()
    }
}

/// Accumulator arithmetic: int64 wraps; floats round to their type (IEEE).
pub(crate) trait Accum: Elem {
    fn add(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    fn div(self, o: Self) -> Self;
}

impl Accum for i64 {
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        self.wrapping_add(o)
    }
    #[inline(always)]
    fn mul(self, o: Self) -> Self {
        self.wrapping_mul(o)
    }
    #[inline(always)]
    fn div(self, o: Self) -> Self {
        self.checked_div(o).unwrap_or(0)
    }
}

macro_rules! float_accum {
    ($($t:ty),*) => {$(
        impl Accum for $t {
            #[inline(always)]
            fn add(self, o: Self) -> Self {
                Float::add(self, o)
            }
            #[inline(always)]
            fn mul(self, o: Self) -> Self {
                Float::mul(self, o)
            }
            #[inline(always)]
            fn div(self, o: Self) -> Self {
                Float::div(self, o)
            }
        }
    )*};
}
float_accum!(f16, bf16, f32, f64);

/// The element types' reduction types: sums accumulate in float32 for the 16-bit floats, and
/// sums and products of bools and integers in (wrapping) int64.
pub(crate) trait ReduceElem: Elem {
    type SumAcc: Accum;
    type SumOut: Elem;
    type ProdAcc: Accum;
    const LOWEST: Self;
    const HIGHEST: Self;
    fn max2(a: Self, b: Self) -> Self;
    fn min2(a: Self, b: Self) -> Self;
}

macro_rules! int_reduce {
    ($($t:ty),*) => {$(
        impl ReduceElem for $t {
            type SumAcc = i64;
            type SumOut = i64;
            type ProdAcc = i64;
            const LOWEST: Self = <$t>::MIN;
            const HIGHEST: Self = <$t>::MAX;
            #[inline(always)]
            fn max2(a: Self, b: Self) -> Self {
                if a > b { a } else { b }
            }
            #[inline(always)]
            fn min2(a: Self, b: Self) -> Self {
                if a < b { a } else { b }
            }
        }
    )*};
}
int_reduce!(u8, i8, i16, i32, i64);

// NaN wins (`a != a` is the NaN test that every float type here has): PyTorch's max/min
// propagate NaN.
macro_rules! float_reduce {
    ($($t:ty => $acc:ty),*) => {$(
        impl ReduceElem for $t {
            type SumAcc = $acc;
            type SumOut = $t;
            type ProdAcc = $t;
            const LOWEST: Self = <$t>::NEG_INFINITY;
            const HIGHEST: Self = <$t>::INFINITY;
            #[inline(always)]
            #[allow(clippy::eq_op)]
            fn max2(a: Self, b: Self) -> Self {
                if a != a || a > b { a } else { b }
            }
            #[inline(always)]
            #[allow(clippy::eq_op)]
            fn min2(a: Self, b: Self) -> Self {
                if a != a || a < b { a } else { b }
            }
        }
    )*};
}
float_reduce!(f16 => f32, bf16 => f32, f32 => f32, f64 => f64);

impl ReduceElem for Bool8 {
    type SumAcc = i64;
    type SumOut = i64;
    type ProdAcc = i64;
    const LOWEST: Self = Bool8(0);
    const HIGHEST: Self = Bool8(1);
    // Any non-zero byte is true; the result is 0 or 1.
    #[inline(always)]
    fn max2(a: Self, b: Self) -> Self {
        Bool8((a.0 != 0 || b.0 != 0) as u8)
    }
    #[inline(always)]
    fn min2(a: Self, b: Self) -> Self {
        Bool8((a.0 != 0 && b.0 != 0) as u8)
    }
}

#[derive(Clone, Copy)]
struct SumR<T>(PhantomData<T>);
impl<T: ReduceElem> Reducer for SumR<T> {
    type In = T;
    type Acc = T::SumAcc;
    type Out = T::SumOut;
    #[inline(always)]
    fn identity() -> Self::Acc {
        Self::Acc::from_i64(0)
    }
    #[inline(always)]
    fn combine(a: Self::Acc, b: Self::Acc) -> Self::Acc {
        a.add(b)
    }

    /// `mean` divides the sum by `n` (in the accumulator's type, as PyTorch's
    /// `sum(...).div_(n)`).
    #[inline]
    fn finish(a: Self::Acc, n: usize, mean: bool) -> Self::Out {
        if mean {
            a.div(Self::Acc::from_i64(n as i64)).cast()
        } else {
            a.cast()
        }
    }
}

#[derive(Clone, Copy)]
struct ProdR<T>(PhantomData<T>);
impl<T: ReduceElem> Reducer for ProdR<T> {
    type In = T;
    type Acc = T::ProdAcc;
    type Out = T::ProdAcc;
    #[inline(always)]
    fn identity() -> Self::Acc {
        Self::Acc::from_i64(1)
    }
    #[inline(always)]
    fn combine(a: Self::Acc, b: Self::Acc) -> Self::Acc {
        a.mul(b)
    }
}

/// `amax` (`MAX`) or `amin`, in the input's type.
#[derive(Clone, Copy)]
struct ExtremeR<T, const MAX: bool>(PhantomData<T>);
impl<T: ReduceElem, const MAX: bool> Reducer for ExtremeR<T, MAX> {
    type In = T;
    type Acc = T;
    type Out = T;
    #[inline(always)]
    fn identity() -> T {
        if MAX {
            T::LOWEST
        } else {
            T::HIGHEST
        }
    }
    #[inline(always)]
    fn combine(a: T, b: T) -> T {
        if MAX {
            T::max2(a, b)
        } else {
            T::min2(a, b)
        }
    }
    #[inline(always)]
    fn lift(x: T) -> T {
        x
    }
}

// ---------------------------------------------------------------------------------------------
// Geometry: which elements each output reduces, from metadata alone

/// Rows per leaf, leaves per block, and most blocks in one range of rows (see the module docs).
pub const LEAF: usize = 16;
pub const BLOCK: usize = 16;
pub const MAX_BLOCKS: usize = 64;
/// Below this many elements per output, an output's stream is too short for lanes to pay: the
/// kept dimension is taken as the lanes instead (when there is one).
const MIN_STREAM: usize = 64;
/// Split the rows of each group into ranges until there are about this many work units, so that
/// a few large outputs still spread over the threads. A function of the shapes only.
const TARGET_UNITS: usize = 16;
/// Lanes of one output's stream.
const STREAM_LANES: usize = 32;
/// Lanes whose accumulators live on the stack (those of streams, and of narrow column groups);
/// wider groups take theirs from the heap, once per chunk of work.
const STACK_LANES: usize = 128;
/// Most bytes of one accumulator row when a kept dimension gives the lanes: a whole contiguous
/// row of the input, as wide as fits the first-level cache, so the input is read in long runs.
const COLUMN_BYTES: usize = 16384;

/// Most output columns handled together when the kept dimension supplies the lanes, for
/// accumulators of `acc_size` bytes.
const fn column_lanes(acc_size: usize) -> usize {
    COLUMN_BYTES / acc_size
}

/// The reduction's iteration space for `N` operands (strides in bytes, 0 where broadcast): the
/// kept dimensions in logical order (row-major in the output) and the reduced dimensions,
/// outermost first, each merged where every operand allows, size-1 dimensions dropped. Which
/// dimension is "outer" and which kept one gives the lanes follows a separate set of `order`
/// strides (with each merged dimension's weight that of its innermost part): the input's own for
/// a reduction of a view, those of the result's layout (as `bc_binary` makes it) for the fused
/// form, so that it sums in the order the two calls would.
#[derive(Debug, Clone, PartialEq)]
struct Geometry<const N: usize> {
    kept: Dims,
    kept_st: [Strides; N],
    kept_order: Strides,
    red: Dims,
    red_st: [Strides; N],
    red_order: Strides,
    /// Elements per output.
    n: usize,
    /// Number of outputs.
    m: usize,
}

impl<const N: usize> Geometry<N> {
    /// The geometry of `shape`, reducing the dimensions marked in `reduced`; operand `k` has
    /// element strides `strides[k]`. Every vector is reserved whole first (pushing within
    /// the capacity never allocates).
    fn new(
        shape: &[usize],
        strides: [&[isize]; N],
        order: &[isize],
        reduced: &[bool],
        itemsize: usize,
    ) -> Result<Self> {
        // At most one dimension more than the shape has (the stream of a plain copy).
        let cap = shape.len() + 1;
        let strides_cap = || -> Result<[Strides; N]> {
            let mut st: [Strides; N] = std::array::from_fn(|_| Strides::new());
            for s in &mut st {
                *s = try_small_with_capacity(cap)?;
            }
            Ok(st)
        };
        let mut g = Geometry {
            kept: try_small_with_capacity(cap)?,
            kept_st: strides_cap()?,
            kept_order: try_small_with_capacity(cap)?,
            red: try_small_with_capacity(cap)?,
            red_st: strides_cap()?,
            red_order: try_small_with_capacity(cap)?,
            n: 1,
            m: 1,
        };
        let mut red_dims: SmallVec<[usize; 6]> = try_small_with_capacity(shape.len())?;
        for d in (0..shape.len()).filter(|&d| shape[d] != 1) {
            if reduced[d] {
                red_dims.push(d);
            } else {
                let st = |k: usize| strides[k][d] * itemsize as isize;
                push_merged(&mut g.kept, &mut g.kept_st, shape[d], st);
                g.kept_order.truncate(g.kept.len() - 1);
                g.kept_order.push(order[d].abs());
            }
        }
        // Outermost first; dimensions of equal weight keep their logical order (an unstable
        // sort on a key that includes the position, which, unlike a stable sort, never
        // allocates).
        red_dims.sort_unstable_by_key(|&d| (std::cmp::Reverse(order[d].unsigned_abs()), d));
        for &d in &red_dims {
            let st = |k: usize| strides[k][d] * itemsize as isize;
            push_merged(&mut g.red, &mut g.red_st, shape[d], st);
            g.red_order.truncate(g.red.len() - 1);
            g.red_order.push(order[d].abs());
        }
        if g.red.is_empty() {
            // One element per output: a stream of length 1.
            push_merged(&mut g.red, &mut g.red_st, 1, |_| 0);
            g.red_order.push(0);
        }
        debug_assert!(g.kept.len() + g.red.len() <= MAX_DIMS);
        g.n = g.red.iter().product();
        g.m = g.kept.iter().product();
        Ok(g)
    }

    /// The kept dimension that supplies the lanes (the innermost by order), or `None` when each
    /// output's own stream does.
    fn column(&self) -> Option<usize> {
        // The last of equally light dimensions: the innermost in logical order.
        let col = (0..self.kept.len())
            .rev()
            .min_by_key(|&d| self.kept_order[d])?;
        let stream_inner = self.red_order[self.red.len() - 1] < self.kept_order[col];
        (self.n < MIN_STREAM || !stream_inner).then_some(col)
    }

    /// How the work is cut and shared among threads, for accumulators of `acc_size` bytes.
    fn work(&self, acc_size: usize) -> Work {
        let cut = Cut::new(self, STREAM_LANES, column_lanes(acc_size));
        let (units, work) = (cut.groups * cut.ranges, self.m.saturating_mul(self.n));
        Work {
            cut,
            units,
            work,
            threads: parallel::unit_threads(units, work),
        }
    }

    /// The operands' byte strides along the rows every tile has: the kept dimension's that
    /// gives the lanes, or the stream's.
    fn row_strides(&self, cut: &Cut) -> [isize; N] {
        std::array::from_fn(|k| match cut.col {
            Some(col) => self.kept_st[k][col],
            None => self.red_st[k][self.red.len() - 1],
        })
    }
}

/// How a reduction's work is cut: `units` units of work (of `work` elements in all), shared
/// among `threads` threads.
struct Work {
    cut: Cut,
    units: usize,
    work: usize,
    threads: usize,
}

/// Appends a dimension of `size` (operand `k`'s stride `stride(k)`), merged into the last one
/// when that one steps exactly `size` times as far for every operand.
fn push_merged<const N: usize>(
    sizes: &mut Dims,
    st: &mut [Strides; N],
    size: usize,
    stride: impl Fn(usize) -> isize,
) {
    let mergeable = !sizes.is_empty()
        && (0..N).all(|k| *st[k].last().unwrap() == stride(k).wrapping_mul(size as isize));
    if mergeable {
        *sizes.last_mut().unwrap() *= size;
        for (k, s) in st.iter_mut().enumerate() {
            *s.last_mut().unwrap() = stride(k);
        }
    } else {
        sizes.push(size);
        for (k, s) in st.iter_mut().enumerate() {
            s.push(stride(k));
        }
    }
}

/// Most dimensions a [`Geometry`] has: its dimensions all have sizes of 2 or more and their
/// product fits in `isize`, so there are at most 63.
const MAX_DIMS: usize = 64;

/// A position in row-major order over some dimensions, with each operand's byte offset there.
struct Cursor<const N: usize> {
    idx: [usize; MAX_DIMS],
    off: [isize; N],
}

impl<const N: usize> Cursor<N> {
    /// The position of element `pos`.
    fn at(shape: &[usize], st: &[Strides; N], mut pos: usize) -> Self {
        let mut c = Cursor {
            idx: [0; MAX_DIMS],
            off: [0; N],
        };
        for d in (0..shape.len()).rev() {
            c.idx[d] = pos % shape[d];
            pos /= shape[d];
            for (o, s) in c.off.iter_mut().zip(st) {
                *o += c.idx[d] as isize * s[d];
            }
        }
        c
    }

    /// Moves `k` elements along the innermost dimension (at most to its end), carrying outward.
    fn advance(&mut self, shape: &[usize], st: &[Strides; N], k: usize) {
        let Some(mut d) = shape.len().checked_sub(1) else {
            return;
        };
        self.idx[d] += k;
        for (o, s) in self.off.iter_mut().zip(st) {
            *o += k as isize * s[d];
        }
        while self.idx[d] == shape[d] && d > 0 {
            for (o, s) in self.off.iter_mut().zip(st) {
                *o += s[d - 1] - shape[d] as isize * s[d];
            }
            self.idx[d] = 0;
            self.idx[d - 1] += 1;
            d -= 1;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Where the elements come from

/// Receives what a [`Source`] hands out: rows of `K` operands, an element of a row being
/// `f([operand elements])`.
trait Sink {
    type In: Elem;
    /// The next `n` columns of each row of `rows` (row `r`'s operand `k` at `rows[r][k]`, byte
    /// stride `es[k]`), combined by `f`.
    ///
    /// # Safety
    /// The elements must be readable.
    unsafe fn take<X: Elem, const K: usize>(
        &mut self,
        rows: &[[*const u8; K]],
        es: [isize; K],
        n: usize,
        f: impl Fn([X; K]) -> Self::In + Copy,
    );
}

/// The elements of a reduction: read from a view, or computed on the way.
trait Source<const N: usize>: Sync {
    type T: Elem;

    /// Bytes of staging space the source needs for rows of byte strides `st` (none when it
    /// hands out its operands' own elements).
    fn stage_bytes(&self, st: [isize; N]) -> usize;

    /// Hands `sink` the `n` elements of each of up to [`LEAF`] rows, row `r` at byte offsets
    /// `offs[r]` (one per operand) with byte strides `st`, in one or more consecutive pieces of
    /// columns; `stage` has [`Source::stage_bytes`] bytes.
    ///
    /// # Safety
    /// The elements must lie within the operands.
    unsafe fn tile(
        &self,
        offs: &[[isize; N]],
        st: [isize; N],
        n: usize,
        stage: &mut [MaybeUninit<u64>],
        sink: &mut impl Sink<In = Self::T>,
    );
}

/// The rows' pointers: `base[k] + offs[r][k]`.
#[inline(always)]
fn row_pointers<const N: usize>(base: [*mut u8; N], offs: &[[isize; N]]) -> [[*const u8; N]; LEAF] {
    let mut rows = [[std::ptr::null::<u8>(); N]; LEAF];
    for (row, off) in rows.iter_mut().zip(offs) {
        *row = std::array::from_fn(|k| base[k].wrapping_offset(off[k]) as *const u8);
    }
    rows
}

struct View<T> {
    base: *mut u8,
    elem: PhantomData<T>,
}

// SAFETY: the view is only read, and its tensor outlives the reduction.
unsafe impl<T> Sync for View<T> {}

impl<T: Elem> Source<1> for View<T> {
    type T = T;

    fn stage_bytes(&self, _st: [isize; 1]) -> usize {
        0
    }

    #[inline(always)]
    unsafe fn tile(
        &self,
        offs: &[[isize; 1]],
        st: [isize; 1],
        n: usize,
        _stage: &mut [MaybeUninit<u64>],
        sink: &mut impl Sink<In = T>,
    ) {
        let rows = row_pointers([self.base], offs);
        // SAFETY: the caller's contract.
        unsafe { sink.take(&rows[..offs.len()], st, n, |[x]| x) }
    }
}

/// `a op b`, summed as elements of the result type `T`, from operands of the computation type.
/// Operands that are contiguous or repeated along the rows are combined as they are read, with
/// the scalar function the elementwise kernel applies to each element (so the elements are the
/// same bits as `bc_binary`'s); others, and a second operand read in float32, are first computed
/// into the stage, a piece of rows at a time, by the elementwise kernel itself (on the same code
/// path).
struct Fused<T> {
    base: [*mut u8; 2],
    op: BinaryOp,
    /// The operands' type (the operation's computation type).
    compute: DType,
    /// The second operand as `bc_binary` reads it in float32 (a one-element operand of another
    /// type with a float16 or bfloat16 result), when it does: then the first operand is widened,
    /// the operation done in float32, and the result rounded once.
    scalar: Option<f32>,
    /// The elementwise kernel's code path, chosen once (as `binary_run` does per call).
    simd: kernels::SimdLevel,
    elem: PhantomData<T>,
}

// SAFETY: the inputs are only read, and their tensors outlive the reduction.
unsafe impl<T> Sync for Fused<T> {}

/// Elements of the fused form's stage: a leaf of rows of 256 columns, or fewer rows of more
/// columns. Pieces this long make the elementwise kernel's per-call cost small, and the stage
/// stays in the first-level cache for the additions that read it back.
const STAGE_ELEMS: usize = LEAF * 256;

impl<T> Fused<T> {
    /// Whether rows of these strides are combined as they are read (no stage).
    fn direct(&self, st: [isize; 2]) -> bool {
        self.scalar.is_none() && Mode::of_size(self.compute.size(), st).is_some()
    }
}

impl<T: Elem> Source<2> for Fused<T> {
    type T = T;

    fn stage_bytes(&self, st: [isize; 2]) -> usize {
        if self.direct(st) {
            0
        } else {
            STAGE_ELEMS * size_of::<T>()
        }
    }

    #[inline(always)]
    unsafe fn tile(
        &self,
        offs: &[[isize; 2]],
        st: [isize; 2],
        n: usize,
        stage: &mut [MaybeUninit<u64>],
        sink: &mut impl Sink<In = T>,
    ) {
        let k = offs.len();
        if self.direct(st) {
            let rows = row_pointers(self.base, offs);
            let direct = Direct {
                rows: &rows[..k],
                st,
                n,
                sink,
            };
            let done = self.op.visit(self.compute, direct);
            debug_assert!(done.is_some(), "checked by check_kernel");
            return;
        }
        let (size, cols) = (size_of::<T>(), STAGE_ELEMS / k);
        let base = stage.as_mut_ptr() as *mut u8;
        let mut rows = [[std::ptr::null::<u8>(); 1]; LEAF];
        for (r, p) in rows.iter_mut().enumerate() {
            p[0] = base.wrapping_add(r * cols * size);
        }
        let mut done = 0;
        while done < n {
            let len = cols.min(n - done);
            for (r, off) in offs.iter().enumerate() {
                let at = |j: usize| self.base[j].wrapping_offset(off[j] + done as isize * st[j]);
                // SAFETY: row r of the stage holds `cols` elements of the result type; the
                // inputs' elements are the caller's.
                unsafe {
                    let out = rows[r][0] as *mut u8;
                    match self.scalar {
                        Some(s) => kernels::f32_scalar_run(
                            self.op,
                            self.compute,
                            s,
                            [out, at(0)],
                            [size as isize, st[0]],
                            len,
                        ),
                        None => kernels::binary_run_with(
                            self.simd,
                            false,
                            self.op,
                            self.compute,
                            [out, at(0), at(1)],
                            [size as isize, st[0], st[1]],
                            len,
                        ),
                    }
                };
            }
            // SAFETY: just written.
            unsafe { sink.take(&rows[..k], [size as isize], len, |[x]: [T; 1]| x) };
            done += len;
        }
    }
}

/// One tile of [`Fused`]'s direct path, for [`BinaryOp::visit`]: the operation's scalar function
/// on the computation type, given to the sink as the rows are read. Built only by
/// [`Fused::tile`], whose caller guarantees the rows.
struct Direct<'a, S> {
    rows: &'a [[*const u8; 2]],
    st: [isize; 2],
    n: usize,
    sink: &'a mut S,
}

impl<S: Sink> Visit for Direct<'_, S> {
    type Output = ();

    // Not inlined: each operation's loops keep a frame of their own (inlined into one function
    // with every other operation's, unoptimised builds overflow the stack).
    #[inline(never)]
    fn visit<C: Elem, F: ElemFn<C>>(self) {
        // Only where the function gives the sink's type (always, as the result type comes from
        // the same table): other pairs are never compiled, since the condition is a constant.
        if SameElem::<F::Out, S::In>::YES {
            // SAFETY: a `Direct` is only built from `Fused::tile`'s contract.
            unsafe {
                self.sink
                    .take(self.rows, self.st, self.n, |[x, y]: [C; 2]| {
                        same::<F::Out, S::In>(F::call(x, y))
                    })
            }
        }
    }
}

/// Whether two element types are the same type (one Rust type per dtype).
struct SameElem<A, B>(PhantomData<(A, B)>);

impl<A: Elem, B: Elem> SameElem<A, B> {
    const YES: bool = A::DTYPE as u8 == B::DTYPE as u8;
}

/// `a` as the element type `B`, which is `A` itself.
#[inline(always)]
fn same<A: Elem, B: Elem>(a: A) -> B {
    assert!(SameElem::<A, B>::YES, "the same element type");
    // SAFETY: each dtype has exactly one Rust element type, so `A` and `B` are one type.
    unsafe { std::mem::transmute_copy(&a) }
}

/// Feeds one output's stream.
struct StreamSink<'l, 's, R: Reducer> {
    lanes: &'l mut Lanes<'s, R>,
    /// The lane the next element goes to.
    lane: usize,
}

impl<R: Reducer> Sink for StreamSink<'_, '_, R> {
    type In = R::In;

    #[inline(always)]
    unsafe fn take<X: Elem, const K: usize>(
        &mut self,
        rows: &[[*const u8; K]],
        es: [isize; K],
        n: usize,
        f: impl Fn([X; K]) -> R::In + Copy,
    ) {
        // SAFETY: the caller's contract.
        unsafe { self.lanes.feed(&mut self.lane, rows[0], es, n, f) }
    }
}

/// Adds a leaf's worth of rows across a group's columns.
struct TileSink<'l, 's, R: Reducer> {
    lanes: &'l mut Lanes<'s, R>,
    /// The column the next piece starts at.
    j: usize,
}

impl<R: Reducer> Sink for TileSink<'_, '_, R> {
    type In = R::In;

    #[inline(always)]
    unsafe fn take<X: Elem, const K: usize>(
        &mut self,
        rows: &[[*const u8; K]],
        es: [isize; K],
        n: usize,
        f: impl Fn([X; K]) -> R::In + Copy,
    ) {
        // SAFETY: the caller's contract.
        unsafe { self.lanes.add_tile(self.j, rows, es, n, f) };
        self.j += n;
    }
}

// ---------------------------------------------------------------------------------------------
// Accumulating

/// How a row's operands are laid out along it: each contiguous or one element repeated (bit `k`
/// of the mask set when operand `k` is contiguous). Rows of other strides have no mode.
#[derive(Clone, Copy)]
struct Mode(u8);

impl Mode {
    fn of<T, const K: usize>(es: [isize; K]) -> Option<Mode> {
        Mode::of_size(size_of::<T>(), es)
    }

    /// [`Mode::of`] for elements of `size` bytes.
    fn of_size<const K: usize>(size: usize, es: [isize; K]) -> Option<Mode> {
        let size = size as isize;
        let mut mask = 0;
        for (k, &s) in es.iter().enumerate() {
            match s {
                0 => {}
                s if s == size => mask |= 1 << k,
                _ => return None,
            }
        }
        Some(Mode(mask))
    }
}

/// Calls `$call` with the const `M` of a [`Mode`] (operands: at most two).
macro_rules! with_mode {
    ($mode:expr, $M:ident => $call:expr) => {
        match $mode.0 {
            0 => {
                const $M: u8 = 0;
                $call
            }
            1 => {
                const $M: u8 = 1;
                $call
            }
            2 => {
                const $M: u8 = 2;
                $call
            }
            _ => {
                const $M: u8 = 3;
                $call
            }
        }
    };
}

/// Element `i` of a row of mode `M`, combined by `f`.
///
/// # Safety
/// The element must be readable.
#[inline(always)]
unsafe fn read<X: Elem, T: Elem, const K: usize, const M: u8>(
    p: &[*const u8; K],
    i: usize,
    f: impl Fn([X; K]) -> T,
) -> T {
    // SAFETY: the caller's contract.
    f(std::array::from_fn(|k| unsafe {
        let p = p[k] as *const X;
        if M & (1 << k) != 0 {
            p.add(i).read()
        } else {
            p.read()
        }
    }))
}

/// Element `i` of a row of any strides, combined by `f`.
///
/// # Safety
/// The element must be readable.
#[inline(always)]
unsafe fn read_strided<X: Elem, T: Elem, const K: usize>(
    p: &[*const u8; K],
    es: [isize; K],
    i: usize,
    f: impl Fn([X; K]) -> T,
) -> T {
    // SAFETY: the caller's contract.
    f(std::array::from_fn(|k| unsafe {
        (p[k].offset(i as isize * es[k]) as *const X).read()
    }))
}

/// Three rows of `w` lanes: leaf, block and total (see the module docs).
struct Lanes<'s, R: Reducer> {
    leaf: &'s mut [R::Acc],
    block: &'s mut [R::Acc],
    total: &'s mut [R::Acc],
    rows: usize,
    leaves: usize,
}

impl<'s, R: Reducer> Lanes<'s, R> {
    /// Lanes of width `w` in `space` (at least `3 * w` slots), all set to the identity.
    fn new(space: &'s mut [MaybeUninit<R::Acc>], w: usize) -> Self {
        let space = &mut space[..3 * w];
        for slot in space.iter_mut() {
            slot.write(R::identity());
        }
        // SAFETY: every slot was just initialised.
        let space = unsafe { &mut *(space as *mut [MaybeUninit<R::Acc>] as *mut [R::Acc]) };
        let (leaf, rest) = space.split_at_mut(w);
        let (block, total) = rest.split_at_mut(w);
        Lanes {
            leaf,
            block,
            total,
            rows: 0,
            leaves: 0,
        }
    }

    /// Lanes `[j0, j0 + n)` of the current row take the `n` elements of the row `p` (byte
    /// strides `es`). One loop for every layout: rows with a [`Mode`] come here only for their
    /// last columns (fewer than [`STREAM_LANES`]), where loops per mode, inlined at every call
    /// site for every reduction, operation and type, cost a third of the reductions' code and
    /// gained nothing measurable.
    ///
    /// # Safety
    /// The elements must be readable.
    #[inline(always)]
    unsafe fn add<X: Elem, const K: usize>(
        &mut self,
        j0: usize,
        p: [*const u8; K],
        es: [isize; K],
        n: usize,
        f: impl Fn([X; K]) -> R::In + Copy,
    ) {
        let leaf = &mut self.leaf[j0..j0 + n];
        for (j, a) in leaf.iter_mut().enumerate() {
            // SAFETY: the caller's contract.
            *a = R::combine(*a, R::lift(unsafe { read_strided(&p, es, j, f) }));
        }
    }

    /// The current row is complete.
    #[inline(always)]
    fn end_row(&mut self) {
        self.end_rows(1);
    }

    /// `k` rows are complete (they did not cross a leaf's end).
    #[inline(always)]
    fn end_rows(&mut self, k: usize) {
        self.rows += k;
        if self.rows == LEAF {
            self.flush_leaf();
        }
    }

    /// Lanes `[j0, j0 + n)` take the elements of each row of `rows` in turn, which belong to the
    /// current leaf. Rows with a [`Mode`] go [`STREAM_LANES`] columns at a time through
    /// registers, all rows at once: the same additions in the same order as row after row, with
    /// the leaf read and written once.
    ///
    /// # Safety
    /// As [`Lanes::add`].
    #[inline(always)]
    unsafe fn add_tile<X: Elem, const K: usize>(
        &mut self,
        j0: usize,
        rows: &[[*const u8; K]],
        es: [isize; K],
        n: usize,
        f: impl Fn([X; K]) -> R::In + Copy,
    ) {
        let mut j = 0;
        if let Some(mode) = Mode::of::<X, K>(es) {
            with_mode!(mode, M => {
                while j + STREAM_LANES <= n {
                    let lanes: &mut [R::Acc; STREAM_LANES] = (&mut self.leaf[j0 + j..]
                        [..STREAM_LANES])
                        .try_into()
                        .expect("a chunk of lanes");
                    let mut acc = *lanes;
                    for row in rows {
                        let p = advance::<K, M>(row, es, j);
                        for (i, a) in acc.iter_mut().enumerate() {
                            // SAFETY: the caller's contract.
                            *a = R::combine(*a, R::lift(unsafe { read::<X, _, K, M>(&p, i, f) }));
                        }
                    }
                    *lanes = acc;
                    j += STREAM_LANES;
                }
            })
        }
        if j < n {
            for row in rows {
                let p = std::array::from_fn(|k| row[k].wrapping_offset(j as isize * es[k]));
                // SAFETY: the caller's contract.
                unsafe { self.add(j0 + j, p, es, n - j, f) };
            }
        }
    }

    #[inline(always)]
    fn flush_leaf(&mut self) {
        let id = R::identity();
        for (b, l) in self.block.iter_mut().zip(self.leaf.iter_mut()) {
            *b = R::combine(*b, std::mem::replace(l, id));
        }
        self.rows = 0;
        self.leaves += 1;
        if self.leaves == BLOCK {
            for (t, b) in self.total.iter_mut().zip(self.block.iter_mut()) {
                *t = R::combine(*t, std::mem::replace(b, id));
            }
            self.leaves = 0;
        }
    }

    /// Feeds `n` consecutive elements of one output's stream, the next one going to lane `*lane`.
    ///
    /// # Safety
    /// As [`Lanes::add`].
    #[inline(always)]
    unsafe fn feed<X: Elem, const K: usize>(
        &mut self,
        lane: &mut usize,
        mut p: [*const u8; K],
        es: [isize; K],
        mut n: usize,
        f: impl Fn([X; K]) -> R::In + Copy,
    ) {
        let w = self.leaf.len();
        if let Some(mode) = Mode::of::<X, K>(es).filter(|_| *lane == 0 && w == STREAM_LANES) {
            let rows = n / w;
            // SAFETY: the caller's contract.
            with_mode!(mode, M => unsafe { self.add_rows::<X, K, M>(p, rows, f) });
            p = advance::<K, 0b11>(&p, es, rows * w);
            n -= rows * w;
        }
        while n > 0 {
            let take = n.min(w - *lane);
            // SAFETY: the caller's contract.
            unsafe { self.add(*lane, p, es, take, f) };
            p = advance::<K, 0b11>(&p, es, take);
            n -= take;
            *lane += take;
            if *lane == w {
                self.end_row();
                *lane = 0;
            }
        }
    }

    /// `rows` whole rows of elements at `p` (mode `M`), the leaf held in registers between
    /// flushes (a fixed-size copy the compiler can keep out of memory).
    ///
    /// # Safety
    /// As [`Lanes::add`]; the lanes are [`STREAM_LANES`] wide.
    #[inline(always)]
    unsafe fn add_rows<X: Elem, const K: usize, const M: u8>(
        &mut self,
        mut p: [*const u8; K],
        mut rows: usize,
        f: impl Fn([X; K]) -> R::In + Copy,
    ) {
        let size = size_of::<X>() as isize;
        while rows > 0 {
            let take = rows.min(LEAF - self.rows);
            let leaf: &mut [R::Acc; STREAM_LANES] =
                (&mut self.leaf[..]).try_into().expect("stream lanes");
            let mut acc = *leaf;
            for _ in 0..take {
                for (j, a) in acc.iter_mut().enumerate() {
                    // SAFETY: the caller's contract.
                    *a = R::combine(*a, R::lift(unsafe { read::<X, _, K, M>(&p, j, f) }));
                }
                p = advance::<K, M>(&p, [size; K], STREAM_LANES);
            }
            *leaf = acc;
            rows -= take;
            self.rows += take;
            if self.rows == LEAF {
                self.flush_leaf();
            }
        }
    }

    /// The total of every row fed.
    fn finish(self) -> &'s mut [R::Acc] {
        for ((t, b), l) in self
            .total
            .iter_mut()
            .zip(self.block.iter())
            .zip(self.leaf.iter())
        {
            *t = R::combine(*t, R::combine(*b, *l));
        }
        self.total
    }
}

/// The operands `i` elements further along their row: contiguous ones (bit set in `M`) move,
/// repeated ones stay. With `M` all ones, every operand moves by its stride.
#[inline(always)]
fn advance<const K: usize, const M: u8>(
    p: &[*const u8; K],
    es: [isize; K],
    i: usize,
) -> [*const u8; K] {
    std::array::from_fn(|k| {
        if M & (1 << k) != 0 {
            p[k].wrapping_offset(i as isize * es[k])
        } else {
            p[k]
        }
    })
}

/// Combines `lanes` pairwise into `lanes[0]` (the length is a power of two).
fn fold_lanes<R: Reducer>(lanes: &mut [R::Acc]) -> R::Acc {
    let mut w = lanes.len();
    while w > 1 {
        w /= 2;
        for j in 0..w {
            lanes[j] = R::combine(lanes[j], lanes[j + w]);
        }
    }
    lanes[0]
}

// ---------------------------------------------------------------------------------------------
// Executing

/// How the work is cut: `groups` sets of outputs computed together (one output and its stream's
/// lanes, or a block of columns), each with `rows` rows cut into `ranges` ranges of `range_rows`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Cut {
    /// The kept dimension giving the lanes, if any.
    col: Option<usize>,
    /// Lanes per group.
    w: usize,
    groups: usize,
    rows: usize,
    range_rows: usize,
    ranges: usize,
}

impl Cut {
    fn new<const N: usize>(g: &Geometry<N>, stream_w: usize, column_w: usize) -> Cut {
        let col = g.column();
        let (w, groups, rows) = match col {
            None => (stream_w, g.m, g.n.div_ceil(stream_w)),
            Some(c) => {
                let w = g.kept[c].min(column_w);
                (w, g.m / g.kept[c] * g.kept[c].div_ceil(w), g.n)
            }
        };
        let block = LEAF * BLOCK;
        let blocks = rows.div_ceil(block);
        // From the outputs' count only (not from how the kept dimensions merged), so that the
        // fused form cuts its rows as the two calls do.
        let outputs = if col.is_some() {
            g.m.div_ceil(column_w)
        } else {
            g.m
        };
        let want = TARGET_UNITS.div_ceil(outputs);
        let per_range = blocks.div_ceil(want).clamp(1, MAX_BLOCKS);
        let range_rows = per_range * block;
        Cut {
            col,
            w,
            groups,
            rows,
            range_rows,
            ranges: rows.div_ceil(range_rows),
        }
    }
}

/// Raw pointers that cross to the worker threads; each unit writes its own elements.
#[derive(Clone, Copy)]
struct Shared<T>(*mut T);
// SAFETY: units write disjoint elements, and the memory outlives the parallel run.
unsafe impl<T> Send for Shared<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for Shared<T> {}

impl<T> Shared<T> {
    fn get(&self) -> *mut T {
        self.0
    }
}

/// Scratch space (wide accumulators, a stage) for each thread that may run part of a reduction,
/// made before the work starts; each chunk of work claims a free slot and gives it back when
/// done, so the threads never allocate.
struct Scratch<A> {
    lanes: Vec<MaybeUninit<A>>,
    stage: Vec<MaybeUninit<u64>>,
    /// Pointers to the vectors' elements, taken once from the owner (writes go through them).
    lanes_ptr: *mut MaybeUninit<A>,
    stage_ptr: *mut MaybeUninit<u64>,
    lanes_len: usize,
    stage_len: usize,
    /// Bit `i` is set while slot `i` is free.
    free: AtomicU64,
}

// SAFETY: a slot's memory is used only by the thread that claimed it, until it gives it back.
unsafe impl<A: Send> Sync for Scratch<A> {}

impl<A> Scratch<A> {
    /// `slots` slots (at most 64) of `lanes_len` accumulators and `stage_len` words each.
    fn new(slots: usize, lanes_len: usize, stage_len: usize) -> Result<Self> {
        assert!((1..=64).contains(&slots), "{slots} scratch slots");
        let mut lanes = try_vec(slots * lanes_len)?;
        lanes.resize_with(slots * lanes_len, MaybeUninit::uninit);
        let mut stage = try_vec(slots * stage_len)?;
        stage.resize_with(slots * stage_len, MaybeUninit::uninit);
        Ok(Scratch {
            lanes_ptr: lanes.as_mut_ptr(),
            stage_ptr: stage.as_mut_ptr(),
            lanes,
            stage,
            lanes_len,
            stage_len,
            free: AtomicU64::new(u64::MAX >> (64 - slots)),
        })
    }

    /// A free slot, until the returned guard is dropped.
    fn claim(&self) -> Slot<'_, A> {
        let mut free = self.free.load(Ordering::Acquire);
        loop {
            // Never more threads at once than slots (the caller caps them).
            assert!(free != 0, "no free scratch slot");
            let i = free.trailing_zeros() as usize;
            match self.free.compare_exchange_weak(
                free,
                free & !(1 << i),
                Ordering::Acquire,
                Ordering::Acquire,
            ) {
                Ok(_) => return Slot { scratch: self, i },
                Err(now) => free = now,
            }
        }
    }
}

/// A claimed slot of [`Scratch`].
struct Slot<'s, A> {
    scratch: &'s Scratch<A>,
    i: usize,
}

impl<A> Slot<'_, A> {
    /// The slot's accumulators and stage.
    fn parts(&mut self) -> (&mut [MaybeUninit<A>], &mut [MaybeUninit<u64>]) {
        let s = self.scratch;
        debug_assert!(s.lanes.len() >= (self.i + 1) * s.lanes_len);
        debug_assert!(s.stage.len() >= (self.i + 1) * s.stage_len);
        // SAFETY: slot i's ranges lie within the vectors, and this guard holds them exclusively.
        unsafe {
            (
                std::slice::from_raw_parts_mut(s.lanes_ptr.add(self.i * s.lanes_len), s.lanes_len),
                std::slice::from_raw_parts_mut(s.stage_ptr.add(self.i * s.stage_len), s.stage_len),
            )
        }
    }
}

impl<A> Drop for Slot<'_, A> {
    fn drop(&mut self) {
        self.scratch.free.fetch_or(1 << self.i, Ordering::Release);
    }
}

/// Where one group's outputs are: their first element in each operand (byte offsets), in `out`
/// (elements), how many there are, and their stride in `out` (columns only).
struct Place<const N: usize> {
    base: [isize; N],
    out_at: isize,
    w: usize,
    out_stride: isize,
}

fn place<const N: usize>(g: &Geometry<N>, cut: &Cut, out_st: &[isize], group: usize) -> Place<N> {
    match cut.col {
        None => Place {
            base: Cursor::at(&g.kept, &g.kept_st, group).off,
            out_at: group as isize,
            w: 1,
            out_stride: 0,
        },
        Some(col) => {
            // `group` counts column blocks within the other kept dimensions, row-major.
            let blocks = g.kept[col].div_ceil(cut.w);
            let (mut outer, c0) = (group / blocks, group % blocks * cut.w);
            let (mut base, mut out_at) = ([0isize; N], 0isize);
            for d in (0..g.kept.len()).rev() {
                let i = if d == col {
                    c0
                } else {
                    let i = outer % g.kept[d];
                    outer /= g.kept[d];
                    i
                };
                for (b, s) in base.iter_mut().zip(&g.kept_st) {
                    *b += i as isize * s[d];
                }
                out_at += i as isize * out_st[d];
            }
            Place {
                base,
                out_at,
                w: cut.w.min(g.kept[col] - c0),
                out_stride: out_st[col],
            }
        }
    }
}

/// Runs the reduction described by `g` over `src` into `out` (row-major, the kept shape).
fn execute<R: Reducer, const N: usize>(
    g: &Geometry<N>,
    src: &impl Source<N, T = R::In>,
    out: &Tensor,
    mean: bool,
) -> Result<()> {
    let Work {
        cut,
        units,
        work,
        threads,
    } = g.work(size_of::<R::Acc>());
    // Totals of each range when a group has several, combined afterwards in range order.
    let mut partial: Vec<R::Acc> = Vec::new();
    if cut.ranges > 1 {
        let len = cut.groups * cut.ranges * cut.w;
        partial = try_vec(len)?;
        partial.resize(len, R::identity());
    }
    // Row-major strides of the kept dimensions in `out`, in elements.
    let mut out_st: Strides = try_small_elem(1, g.kept.len())?;
    for d in (0..g.kept.len().saturating_sub(1)).rev() {
        out_st[d] = out_st[d + 1] * g.kept[d + 1] as isize;
    }
    let outputs = |at: &Place<N>, total: &mut [R::Acc], out: *mut R::Out| {
        let finish = |a| R::finish(a, g.n, mean);
        // SAFETY (both): the group's outputs lie within `out`.
        match cut.col {
            None => unsafe { out.offset(at.out_at).write(finish(fold_lanes::<R>(total))) },
            Some(_) => {
                for (j, &t) in total[..at.w].iter().enumerate() {
                    unsafe {
                        out.offset(at.out_at + j as isize * at.out_stride)
                            .write(finish(t))
                    };
                }
            }
        }
    };
    let (outp, partp) = (
        Shared(out.data_ptr() as *mut R::Out),
        Shared(partial.as_mut_ptr()),
    );
    let simd = kernels::simd_level();
    // Scratch space for each thread that may run chunks, made here (on the calling thread,
    // fallibly) so that the work itself never allocates.
    let lanes_len = if cut.w <= STACK_LANES { 0 } else { 3 * cut.w };
    let stage_len = src.stage_bytes(g.row_strides(&cut)).div_ceil(8);
    let scratch = Scratch::<R::Acc>::new(threads, lanes_len, stage_len)?;
    let body = |lo: usize, hi: usize| {
        let mut slot = scratch.claim();
        // The accumulators: on the stack when they fit, else in the slot.
        let mut stack = [MaybeUninit::<R::Acc>::uninit(); 3 * STACK_LANES];
        let (heap, stage) = slot.parts();
        let space: &mut [MaybeUninit<R::Acc>] = if lanes_len == 0 { &mut stack } else { heap };
        for unit in lo..hi {
            let (group, range) = (unit / cut.ranges, unit % cut.ranges);
            let at = place(g, &cut, &out_st, group);
            let mut lanes = Lanes::<R>::new(space, cut.w);
            let r0 = range * cut.range_rows;
            let r1 = (r0 + cut.range_rows).min(cut.rows);
            // SAFETY: the geometry covers exactly the operands' elements.
            unsafe { accumulate_on(simd, g, &cut, src, &at, r0..r1, &mut lanes, stage) };
            let total = lanes.finish();
            if cut.ranges > 1 {
                // SAFETY: each unit has its own `cut.w` slots of `partial`.
                unsafe {
                    let slot = partp.get().add(unit * cut.w);
                    std::ptr::copy_nonoverlapping(total.as_ptr(), slot, cut.w);
                }
            } else {
                outputs(&at, total, outp.get());
            }
        }
    };
    parallel::run_units(units, work, threads, &body);
    if cut.ranges > 1 {
        for (group, slots) in partial.chunks_exact_mut(cut.ranges * cut.w).enumerate() {
            // Pairwise over the ranges, into the first.
            let mut step = 1;
            while step < cut.ranges {
                for r in (0..cut.ranges - step).step_by(2 * step) {
                    let (lo, hi) = slots.split_at_mut((r + step) * cut.w);
                    for (a, &b) in lo[r * cut.w..][..cut.w].iter_mut().zip(&hi[..cut.w]) {
                        *a = R::combine(*a, b);
                    }
                }
                step *= 2;
            }
            outputs(
                &place(g, &cut, &out_st, group),
                &mut slots[..cut.w],
                outp.get(),
            );
        }
    }
    Ok(())
}

/// [`accumulate`] compiled for the widest vector instructions this CPU has (`level`, from
/// [`kernels::simd_level`]). Every clone adds the same lanes in the same order: the bits are the
/// same whichever runs.
///
/// # Safety
/// As [`accumulate`]; `level` must be supported by this CPU.
#[allow(clippy::too_many_arguments)]
unsafe fn accumulate_on<R: Reducer, const N: usize>(
    level: kernels::SimdLevel,
    g: &Geometry<N>,
    cut: &Cut,
    src: &impl Source<N, T = R::In>,
    at: &Place<N>,
    rows: std::ops::Range<usize>,
    lanes: &mut Lanes<R>,
    stage: &mut [MaybeUninit<u64>],
) {
    #[cfg(target_arch = "x86_64")]
    {
        /// The AVX2 clone.
        #[target_feature(enable = "avx2")]
        #[allow(clippy::too_many_arguments)]
        unsafe fn avx2<R: Reducer, const N: usize>(
            g: &Geometry<N>,
            cut: &Cut,
            src: &impl Source<N, T = R::In>,
            at: &Place<N>,
            rows: std::ops::Range<usize>,
            lanes: &mut Lanes<R>,
            stage: &mut [MaybeUninit<u64>],
        ) {
            // SAFETY: the caller's contract.
            unsafe { accumulate(g, cut, src, at, rows, lanes, stage) }
        }
        if level == kernels::SimdLevel::Avx2 {
            // SAFETY: the CPU has AVX2 (the caller's contract); the rest is forwarded.
            return unsafe { avx2(g, cut, src, at, rows, lanes, stage) };
        }
    }
    let _ = level;
    // SAFETY: forwarded.
    unsafe { accumulate(g, cut, src, at, rows, lanes, stage) }
}

/// Feeds rows `rows` of one group into `lanes`.
///
/// # Safety
/// `g` must describe the operands of `src` (every offset it forms addresses an element).
#[inline(always)]
unsafe fn accumulate<R: Reducer, const N: usize>(
    g: &Geometry<N>,
    cut: &Cut,
    src: &impl Source<N, T = R::In>,
    at: &Place<N>,
    rows: std::ops::Range<usize>,
    lanes: &mut Lanes<R>,
    stage: &mut [MaybeUninit<u64>],
) {
    let here = |c: &Cursor<N>| std::array::from_fn(|k| at.base[k] + c.off[k]);
    match cut.col {
        None => {
            // Stream elements [p0, p1) of one output, in runs along the innermost dimension.
            let inner = g.red.len() - 1;
            let (len, st) = (g.red[inner], std::array::from_fn(|k| g.red_st[k][inner]));
            let (p0, p1) = (rows.start * cut.w, (rows.end * cut.w).min(g.n));
            let mut c = Cursor::at(&g.red, &g.red_st, p0);
            let mut pos = p0;
            let mut sink = StreamSink { lanes, lane: 0 };
            while pos < p1 {
                let run = (len - c.idx[inner]).min(p1 - pos);
                // SAFETY: the caller's contract.
                unsafe { src.tile(&[here(&c)], st, run, stage, &mut sink) };
                pos += run;
                c.advance(&g.red, &g.red_st, run);
            }
        }
        Some(col) => {
            // Rows are the group's columns at one reduced index, taken a leaf at a time.
            let st = std::array::from_fn(|k| g.kept_st[k][col]);
            let mut c = Cursor::at(&g.red, &g.red_st, rows.start);
            let mut offs = [[0isize; N]; LEAF];
            let mut r = rows.start;
            while r < rows.end {
                let k = (LEAF - lanes.rows).min(rows.end - r);
                for off in &mut offs[..k] {
                    *off = here(&c);
                    c.advance(&g.red, &g.red_st, 1);
                }
                let mut sink = TileSink {
                    lanes: &mut *lanes,
                    j: 0,
                };
                // SAFETY: the caller's contract.
                unsafe { src.tile(&offs[..k], st, at.w, stage, &mut sink) };
                lanes.end_rows(k);
                r += k;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::shape::contiguous_strides;

    fn geometry(shape: &[usize], strides: &[isize], reduced: &[bool]) -> Geometry<1> {
        Geometry::new(shape, [strides], strides, reduced, 4).unwrap()
    }

    fn cut(g: &Geometry<1>) -> Cut {
        Cut::new(g, STREAM_LANES, column_lanes(4))
    }

    /// The planner's accumulator types are those the reducers run with.
    #[test]
    fn accumulators_are_the_reducers() {
        for dtype in DType::ALL {
            let acc: [DType; 4] = with_elem!(dtype, T => [
                <SumR<T> as Reducer>::Acc::DTYPE,
                <ProdR<T> as Reducer>::Acc::DTYPE,
                <ExtremeR<T, true> as Reducer>::Acc::DTYPE,
                <ExtremeR<T, false> as Reducer>::Acc::DTYPE,
            ]);
            let ops = [
                ReduceOp::Sum,
                ReduceOp::Prod,
                ReduceOp::Amax,
                ReduceOp::Amin,
            ];
            for (op, acc) in ops.into_iter().zip(acc) {
                assert_eq!(op.accumulator(dtype), acc, "{op:?} of {dtype:?}");
            }
            assert_eq!(ReduceOp::Mean.accumulator(dtype), acc[0]);
        }
        assert_eq!(ReduceOp::Sum.accumulator(DType::BF16), DType::F32);
        assert_eq!(ReduceOp::Prod.accumulator(DType::F16), DType::F16);
        assert_eq!(ReduceOp::Sum.accumulator(DType::Bool), DType::I64);
    }

    #[test]
    fn rows_and_columns_of_a_matrix() {
        let st = contiguous_strides(&[4096, 4096]).unwrap();
        // Over dim 1: one stream per output, each output a unit of work.
        let c = cut(&geometry(&[4096, 4096], &st, &[false, true]));
        assert_eq!((c.col, c.w, c.groups, c.ranges), (None, 32, 4096, 1));
        // Over dim 0: all 4096 columns as lanes, the rows cut into 16 ranges for the threads.
        let c = cut(&geometry(&[4096, 4096], &st, &[true, false]));
        assert_eq!((c.col, c.w, c.groups, c.ranges), (Some(0), 4096, 1, 16));
        assert_eq!(c.range_rows, 256);
        // Everything: one stream, cut into ranges of at most 64 blocks.
        let c = cut(&geometry(&[4096, 4096], &st, &[true, true]));
        assert_eq!((c.col, c.groups, c.ranges), (None, 1, 32));
        // A short stream takes its lanes from the kept dimension instead.
        let st = contiguous_strides(&[1000, 3]).unwrap();
        let c = cut(&geometry(&[1000, 3], &st, &[false, true]));
        assert_eq!((c.col, c.w, c.groups), (Some(0), 1000, 1));
    }

    #[test]
    fn dimensions_merge_and_order_by_stride() {
        // (4,5,6) permuted so that dim 0 is innermost in memory: strides (1, 24, 4).
        let g = geometry(&[4, 5, 6], &[1, 24, 4], &[true, true, false]);
        assert_eq!(&g.red[..], &[5, 4]);
        assert_eq!(&g.red_st[0][..], &[96, 4]);
        assert_eq!((g.m, g.n), (6, 20));
        // Contiguous reduced dimensions merge; size-1 dimensions vanish.
        let st = contiguous_strides(&[3, 1, 4, 5]).unwrap();
        let g = geometry(&[3, 1, 4, 5], &st, &[false, true, true, true]);
        assert_eq!((&g.red[..], &g.kept[..]), (&[20][..], &[3][..]));
    }

    /// The fused form orders by a row-major result, whatever its inputs' strides, and cuts its
    /// rows from the number of outputs alone, so it sums in the two calls' order.
    #[test]
    fn fused_order_follows_the_row_major_result() {
        let shape = [2usize, 3, 5];
        let reduced = [true, true, false];
        let a = broadcast_strides(&[2, 1, 1], &[1, 1, 1], &shape).unwrap();
        let b = broadcast_strides(&[3, 5], &[5, 1], &shape).unwrap();
        let order = contiguous_strides(&shape).unwrap();
        // The row-major result as a third operand, to read the order the elements come in.
        let fused =
            Geometry::new(&shape, [&a[..], &b[..], &order[..]], &order, &reduced, 4).unwrap();
        let two = geometry(&shape, &order, &reduced);
        let sequence = |red: &[usize], st: &[Strides; 1]| {
            let mut c = Cursor::at(red, st, 0);
            (0..red.iter().product::<usize>())
                .map(|_| {
                    let off = c.off[0];
                    c.advance(red, st, 1);
                    off
                })
                .collect::<Vec<_>>()
        };
        let fused_red = [fused.red_st[2].clone()];
        assert_eq!(
            sequence(&fused.red, &fused_red),
            sequence(&two.red, &two.red_st)
        );
        let cf = Cut::new(&fused, STREAM_LANES, column_lanes(4));
        let c2 = cut(&two);
        assert_eq!(
            (cf.col, cf.rows, cf.range_rows),
            (c2.col, c2.rows, c2.range_rows)
        );
    }

    /// The height bound stated in the module docs holds for the cut the code makes.
    #[test]
    fn stated_height_bound_holds() {
        for n in [
            1usize,
            3,
            64,
            1000,
            4096,
            1 << 14,
            100_000,
            1 << 20,
            1 << 24,
            3 << 26,
        ] {
            for m in [1usize, 2, 7, 4096] {
                for column in [false, true] {
                    let (shape, reduced) = if column {
                        ([n, m], [true, false])
                    } else {
                        ([m, n], [false, true])
                    };
                    let g = geometry(&shape, &contiguous_strides(&shape).unwrap(), &reduced);
                    let c = cut(&g);
                    let blocks_per_range = c.range_rows / (LEAF * BLOCK);
                    assert!(blocks_per_range <= MAX_BLOCKS);
                    let lanes = if c.col.is_none() { 5 } else { 0 };
                    let h = LEAF + BLOCK + blocks_per_range + 2 + lanes;
                    let h = h + c.ranges.next_power_of_two().trailing_zeros() as usize;
                    let stated = 106.0 + (n as f64 / 16384.0).max(1.0).log2().ceil();
                    assert!(h as f64 <= stated, "n {n} m {m} column {column}: h {h}");
                }
            }
        }
    }
}
