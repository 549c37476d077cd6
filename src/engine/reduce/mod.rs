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
//! rows into a leaf, leaves go [`BLOCK_LEAVES`] (16) at a time into a block, blocks at most
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
//! computed into a small stage by the elementwise kernel (which serves any operation). A fused
//! expression's sum or mean of float32 applies a last `where`, or square of a difference, itself
//! in the same loops (`source::Tailed`), its operands read in place.

mod cut;
mod execute;
mod lanes;
mod reducer;
mod report;
mod scratch;
mod source;
mod sum_to;

pub use lanes::{BLOCK_LEAVES, LEAF, MAX_BLOCKS};
pub use report::{plan_binary_sum_to, plan_expr_reduce, plan_reduce, plan_sum_to_size};
pub use sum_to::{binary_sum_to, sum_to_size};

use super::alloc::{try_small_elem, try_small_with_capacity};
use super::dtype::DType;
use super::error::{Error, Result};
use super::expr::{self, Step};
use super::iter::Iter;
use super::kernels;
use super::ops::{self, Operand as _};
use super::shape::{numel, Dims};
use super::tensor::{wrap_dim, Init, Tensor};
use crate::with_elem;
use execute::execute;
use reducer::{ExtremeR, ProdR, SumR};
use smallvec::SmallVec;
use source::{Tailed, View};
use std::marker::PhantomData;

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

/// Reduces `t` over the dimensions marked in `reduced` into a new row-major tensor of `dtype`
/// and shape `out_shape` (the kept dimensions, in order, with any size-1 dimensions).
fn reduce_into(
    op: ReduceOp,
    t: &Tensor,
    reduced: &[bool],
    dtype: DType,
    out_shape: &[usize],
) -> Result<Tensor> {
    let (out, pending) = result_for(op, dtype, out_shape, t.shape(), reduced)?;
    if pending {
        let it = view_iter(t.geometry(), reduced)?;
        execute_view(op, t.dtype(), &it, t.data_ptr(), None, &out)?;
    }
    Ok(out)
}

/// The new result of a reduction of a value of shape `shape`, and whether its elements are
/// still to be computed: when a reduced dimension is empty every output reduces nothing and is
/// the identity (0, 1), or 0/0 for a mean; an empty result needs nothing.
fn result_for(
    op: ReduceOp,
    dtype: DType,
    out_shape: &[usize],
    shape: &[usize],
    reduced: &[bool],
) -> Result<(Tensor, bool)> {
    if reduces_nothing(shape, reduced) {
        let identity = match op {
            ReduceOp::Sum => 0.0,
            ReduceOp::Prod => 1.0,
            _ => f64::NAN,
        };
        return Ok((Tensor::new(dtype, out_shape, Init::Fill(identity))?, false));
    }
    let out = Tensor::new(dtype, out_shape, Init::Uninit)?;
    let pending = out.numel() != 0;
    Ok((out, pending))
}

/// Runs `op` over `it` into `out`, reading elements of type `item` from memory at `base` or, with
/// `runs`, from an expression's fused pass.
fn execute_view(
    op: ReduceOp,
    item: DType,
    it: &Iter<1>,
    base: *mut u8,
    runs: Option<&expr::Runs<'_>>,
    out: &Tensor,
) -> Result<()> {
    let mean = op == ReduceOp::Mean;
    with_elem!(item, T => {
        let src = View::<T> { base, runs, elem: PhantomData };
        match op {
            ReduceOp::Sum | ReduceOp::Mean => execute::<SumR<T>, 1>(it, &src, out, mean),
            ReduceOp::Prod => execute::<ProdR<T>, 1>(it, &src, out, false),
            ReduceOp::Amax => execute::<ExtremeR<T, true>, 1>(it, &src, out, false),
            ReduceOp::Amin => execute::<ExtremeR<T, false>, 1>(it, &src, out, false),
        }
    })
}

/// `op` over `dims` (as [`reduce`]) of the value of the expression `steps` over `inputs` (as
/// [`expr::eval`]), without making that value when the expression runs as one fused pass: each
/// piece of the elements the reduction reads next is computed by the pass into a small stage,
/// in the order the reduction of the evaluated result (laid out as [`expr::eval`] lays it out)
/// reads them, so the result is the two calls' bit for bit. Errors come in the two calls' order
/// (the expression's, then the reduction's). An expression [`expr::eval`] evaluates call by call
/// (an error, a warning, an integer divisor, too many operands, an empty result) is evaluated
/// whole and then reduced: `warn` gets every warning as the two calls give them (the last
/// step's once the expression is complete, before the reduction's checks).
pub fn expr_reduce(
    op: ReduceOp,
    steps: &[Step],
    inputs: &[&Tensor],
    dims: &[i64],
    keepdim: bool,
    opts: ops::Options,
    warn: &mut dyn FnMut(&[ops::Warning]),
) -> Result<Tensor> {
    let Some(pass) = expr::fused_pass(steps, inputs, opts)? else {
        let (t, warnings) = expr::eval(steps, inputs, opts, warn)?;
        if !warnings.is_empty() {
            warn(&warnings);
        }
        return reduce(op, &t, dims, keepdim);
    };
    let r = decide(op, pass.dtype(), pass.shape(), dims, keepdim)?;
    let (out, pending) = result_for(op, r.dtype, &r.shape, pass.shape(), &r.reduced)?;
    if pending {
        let item = pass.dtype();
        let mut runs = pass.ready(steps, inputs, opts)?;
        let it = Iter::with_reduced(runs.shape(), [runs.strides()], runs.strides(), &r.reduced)?;
        // Sums and means of float32 compute a last `where` or square of a difference themselves
        // (other reductions and types: each would be loops of its own, over the size budget).
        let mean = op == ReduceOp::Mean;
        // (Only on CPUs with AVX2: the loops are compiled for it alone.)
        let tailed = matches!(op, ReduceOp::Sum | ReduceOp::Mean)
            && item == DType::F32
            && kernels::simd_level() == kernels::SimdLevel::Avx2
            && runs.take_tail();
        match item {
            DType::F32 if tailed => {
                let src = Tailed::<f32> {
                    runs: &runs,
                    elem: PhantomData,
                };
                execute::<SumR<f32>, 1>(&it, &src, &out, mean)?;
            }
            _ => execute_view(op, item, &it, std::ptr::null_mut(), Some(&runs), &out)?,
        }
    }
    Ok(out)
}

/// Whether a dimension marked in `reduced` is empty: every output then reduces nothing.
fn reduces_nothing(shape: &[usize], reduced: &[bool]) -> bool {
    // (Products of an empty view's sizes may overflow: none is formed.)
    (0..shape.len()).any(|d| reduced[d] && shape[d] == 0)
}

/// The iterator of a reduction of `t` over the dimensions marked in `reduced`, in the order of
/// `t`'s own strides, when it has outputs and none reduces nothing (so `t` has elements, and
/// their count fits).
fn view_iter(t: ops::Geometry<'_>, reduced: &[bool]) -> Result<Iter<1>> {
    Iter::with_reduced(t.shape, [t.strides], t.strides, reduced)
}
