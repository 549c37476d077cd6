//! The engine's one error type. Each variant carries the data a caller may want to act on
//! (shapes, dimension, sizes); `Display` gives the exact texts of docs/semantics.md and PyTorch.
use super::dtype::DType;
use super::shape::{fmt_list, fmt_tuple};
use super::tensor::Scalar;

/// Broad class of an error: what a status code distinguishes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// Shapes that do not broadcast, a bad expand, or an in-place shape change.
    Shape,
    /// A result type that cannot be cast to the written-to tensor, or an op undefined for a type.
    Dtype,
    /// A write whose destination overlaps itself or an input.
    Overlap,
    /// A size or byte-count product that does not fit.
    Overflow,
    /// Memory could not be allocated.
    Alloc,
    /// An argument out of its domain.
    InvalidArgument,
    /// A caller's buffer is smaller than the data.
    BufferTooSmall,
    /// A write to memory that was shared read-only.
    ReadOnly,
    /// Types and shapes are fine but values are refused (an integer division by zero).
    Value,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Two shapes are not broadcastable; `dim` counts from the left of the result.
    #[error("The size of tensor a ({size_a}) must match the size of tensor b ({size_b}) at non-singleton dimension {dim}")]
    NotBroadcastable {
        a: Vec<usize>,
        b: Vec<usize>,
        dim: usize,
        size_a: usize,
        size_b: usize,
    },
    /// Several shapes are not broadcastable (PyTorch's `broadcast_shapes` text). `index` is negative,
    /// counted from the right; `expected` is the common shape built so far. `size` and `shape` are
    /// signed: a negative size met against a size other than 1 is reported here, as PyTorch does.
    #[error("Attempting to broadcast a dimension of length {size} at {index}! Mismatching argument at index {arg} had {}; but expected shape should be broadcastable to {}", fmt_tuple(shape), fmt_list(expected))]
    NaryNotBroadcastable {
        arg: usize,
        index: isize,
        size: i64,
        shape: Vec<i64>,
        expected: Vec<usize>,
    },
    /// In place: `other` does not expand to `self`'s shape (docs/semantics.md, section 4).
    #[error("The expanded size of the tensor ({self_size}) must match the existing size ({other_size}) at non-singleton dimension {dim}.")]
    InplaceMismatch {
        self_shape: Vec<usize>,
        other_shape: Vec<usize>,
        dim: usize,
        self_size: usize,
        other_size: usize,
    },
    /// A written-to tensor whose shape is not the broadcast shape.
    #[error(
        "output with shape {} doesn't match the broadcast shape {}",
        fmt_list(output),
        fmt_list(broadcast)
    )]
    OutputShape {
        output: Vec<usize>,
        broadcast: Vec<usize>,
    },
    /// `expand`: a size that differs from a non-1 existing size.
    #[error("The expanded size of the tensor ({target}) must match the existing size ({size}) at non-singleton dimension {dim}.  Target sizes: {}.  Tensor sizes: {}", fmt_list(sizes), fmt_list(shape))]
    ExpandMismatch {
        sizes: Vec<i64>,
        shape: Vec<usize>,
        dim: usize,
        target: i64,
        size: usize,
    },
    /// `expand`: -1 where the tensor has no dimension to keep.
    #[error("The expanded size of the tensor (-1) isn't allowed in a leading, non-existing dimension {dim}")]
    ExpandLeadingMinusOne {
        sizes: Vec<i64>,
        shape: Vec<usize>,
        dim: usize,
    },
    /// `expand`: fewer sizes than the tensor has dimensions.
    #[error("expand: the number of sizes provided ({given}) must be greater or equal to the number of dimensions in the tensor ({ndim})")]
    ExpandTooFewSizes { given: usize, ndim: usize },
    /// `expand`: a negative size other than -1 in a position that would create it.
    #[error("expand: the expanded size of the tensor ({target}) at dimension {dim} is negative")]
    ExpandNegative { dim: usize, target: i64 },
    /// The result type of an operation cannot be cast to the written-to tensor's type.
    #[error("result type {} can't be cast to the desired output type {}", from.torch_name(), to.torch_name())]
    CastRefused { from: DType, to: DType },
    /// An operation with no kernel for its computation type (PyTorch's dispatch refusal, which
    /// names the kernel).
    #[error("\"{kernel}\" not implemented for '{}'", dtype.torch_name())]
    NotImplemented { kernel: &'static str, dtype: DType },
    /// An integer division, remainder or fmod with a zero divisor among the elements read.
    #[error("ZeroDivisionError")]
    ZeroDivision,
    /// An integer or bool tensor to a negative integer power given as a number (PyTorch's check;
    /// a tensor of exponents is computed instead).
    #[error("Integers to negative integer powers are not allowed.")]
    NegativeIntegerPower,
    /// A number that `pow` reads in the computation type does not fit it (PyTorch's checked
    /// conversion of the exponent, which names the C++ type).
    #[error("value cannot be converted to type {} without overflow", dtype.checked_cpp_name())]
    NumberOverflow { dtype: DType },
    /// `where`: a condition that is neither bool nor uint8.
    #[error("where expected condition to be a boolean tensor, but got a tensor with dtype {}", dtype.torch_name())]
    WhereCondition { dtype: DType },
    /// A written-to tensor whose type must be the result type exactly, and is not.
    #[error("Expected out type to be {} but got {}", expected.torch_name(), got.torch_name())]
    OutDtype { expected: DType, got: DType },
    /// Subtraction with bool operands.
    /// `lerp`'s `end` (or a weight tensor of dimensions) of another type than `input`.
    #[error("expected dtype {expected} for `{what}` but got dtype {got}")]
    LerpDtype {
        what: &'static str,
        expected: &'static str,
        got: &'static str,
    },

    #[error("Integer division with addcdiv is no longer supported, and in a future  release addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv behavior can be implemented as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as (input + value * tensor1 / tensor2) for float inputs. The future addcdiv behavior is just the latter implementation: (input + value * tensor1 / tensor2), for all dtypes.")]
    AddcdivInteger,

    #[error("torch.clamp: At least one of 'min' or 'max' must not be None")]
    ClampNoBound,

    /// A `clamp` bound that leaves no value of an integer type.
    #[error("Clamp {} value {} is outside the representable range of {}", if *min { "min" } else { "max" }, match value { Scalar::Bool(b) => (*b as i64).to_string(), Scalar::Int(i) => i.to_string(), Scalar::Float(f) => f.to_string() }, dtype.torch_name())]
    ClampRange {
        min: bool,
        value: Scalar,
        dtype: DType,
    },

    /// The cast check of `clamp_` with number bounds, which names the C++ type.
    #[error("result type {} can't be cast to the desired output type {to}", from.torch_name())]
    CastRefusedCpp { from: DType, to: &'static str },

    #[error("std and var only support floating point and complex dtypes")]
    VarDtype,

    #[error("nanmean(): expected input to have floating point or complex dtype but got {}", dtype.torch_name())]
    NanmeanDtype { dtype: DType },

    #[error("{op}(): does not support bool input")]
    ArgBool { op: &'static str },

    /// `argmax`/`argmin` with nothing to choose from (`dim` the wrapped dimension, or none).
    #[error("{op}(): {}", match dim { Some(d) => format!("Expected reduction dim {d} to have non-zero size."), None => "Expected reduction dim to be specified for input.numel() == 0.".to_string() })]
    ArgEmpty {
        op: &'static str,
        dim: Option<usize>,
    },

    /// A call into `out` whose operation needs exactly its result type there.
    #[error("Found dtype {} but expected {}", found.torch_name(), expected.torch_name())]
    OutDtypeExact { found: DType, expected: DType },

    /// A predicate into an `out` that is not bool.
    #[error("{op} does not support non-boolean outputs.")]
    BoolOutput { op: &'static str },

    #[error("Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.")]
    BoolNegation,

    /// An in-place call of an operation PyTorch has no in-place form of (its result is bool).
    #[error("{op} has no in-place form: its result is bool (PyTorch has no `{op}_`); write it into a bool tensor with the `out` form")]
    NoInplaceForm { op: &'static str },

    #[error("{}", if *both { "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` operator instead." } else { "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead." })]
    BoolSubtraction { both: bool },
    /// Two elements of the written-to tensor share a memory location.
    #[error("unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.")]
    InternalOverlap,
    /// The written-to tensor partly overlaps an input.
    #[error("unsupported operation: some elements of the input tensor and the written-to tensor refer to a single memory location. Please clone() the tensor before performing the operation.")]
    PartialOverlap,
    /// `bc_tensor_format`: choosing the elements' width would read more elements than it may.
    #[error("the text of this tensor is too large to format: its formatter would read {reads} elements (a dimension of stride 0 read once), more than the {} allowed", super::format::SCAN_LIMIT)]
    FormatTooLarge { reads: usize },
    /// A product of sizes (or of elements and item size) does not fit in `isize`.
    #[error("{what}: integer multiplication overflow")]
    Overflow { what: &'static str },
    /// The allocator refused.
    #[error("out of memory: could not allocate {bytes} bytes")]
    Alloc { bytes: usize },
    /// An argument outside its domain; the text says which and why.
    #[error("{0}")]
    InvalidArgument(String),
    /// A dimension outside `[-ndim, ndim - 1]` (a 0-d tensor counts as one dimension). `dim` is as
    /// given.
    #[error("Dimension out of range (expected to be in range of [{}, {}], but got {dim})", -(*ndim.max(&1) as i64), *ndim.max(&1) as i64 - 1)]
    DimOutOfRange { dim: i64, ndim: usize },
    /// A reduction names dimension `dim` (wrapped) more than once.
    #[error("dim {dim} appears multiple times in the list of dims")]
    DimRepeated { dim: usize },
    /// `amax`/`amin` with nothing to reduce: `dim` is the empty dimension (as given, and wrapped),
    /// or `None` when no dimension was given and the input has no elements.
    #[error("{op}(): {}", EmptyText(*dim))]
    EmptyReduction {
        op: &'static str,
        dim: Option<(i64, usize)>,
    },
    /// A reduction whose result type cannot be inferred from the input's (`mean` of integers).
    #[error("{op}(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: {}", dtype.torch_name())]
    ReduceDtype { op: &'static str, dtype: DType },
    /// `sum_to_size`: `size` is not a shape `shape` could be broadcast from.
    #[error(
        "size {{{}}} is not expandable to size {{{}}}.",
        fmt_list(size),
        fmt_list(shape)
    )]
    NotExpandable { size: Vec<i64>, shape: Vec<usize> },
    /// A caller's buffer is too small.
    #[error("buffer too small: {needed} {unit} needed, {given} given")]
    BufferTooSmall {
        needed: usize,
        given: usize,
        unit: &'static str,
    },
    /// A write to a tensor whose memory was shared read-only (imported through DLPack with the
    /// read-only flag).
    #[error("cannot write to a read-only tensor: its memory was shared read-only (DLPack read-only flag). Write to a copy (contiguous or clone) instead.")]
    ReadOnly,
    /// A tensor that must not be written, given to the legacy DLPack export, whose struct has no
    /// way to say so.
    #[error("this tensor must not be written (its memory was shared read-only, or it is a broadcast view whose elements share memory) and the legacy DLManagedTensor cannot mark it read-only: export it as a DLManagedTensorVersioned, or export a copy")]
    ReadOnlyLegacyExport,
    /// `view`/`reshape`: the requested sizes do not hold the tensor's elements (PyTorch's text).
    #[error("shape '{}' is invalid for input of size {numel}", fmt_list(sizes))]
    ViewSize { sizes: Vec<i64>, numel: usize },
    /// `view`/`reshape` of an empty tensor with -1 next to a 0: the -1 could be anything.
    #[error("cannot reshape tensor of 0 elements into shape {} because the unspecified dimension size -1 can be any value and is ambiguous", fmt_list(sizes))]
    ViewAmbiguous { sizes: Vec<i64> },
    /// `view`: the strides do not allow the new shape without a copy (`reshape` copies instead).
    #[error("view size is not compatible with input tensor's size and stride (at least one dimension spans across two contiguous subspaces). Use .reshape(...) instead.")]
    ViewStrides {
        shape: Vec<usize>,
        sizes: Vec<usize>,
    },
}

impl Error {
    pub fn kind(&self) -> ErrorKind {
        use Error::*;
        match self {
            NotBroadcastable { .. }
            | NaryNotBroadcastable { .. }
            | InplaceMismatch { .. }
            | OutputShape { .. }
            | ExpandMismatch { .. }
            | ExpandLeadingMinusOne { .. }
            | ExpandTooFewSizes { .. }
            | ExpandNegative { .. }
            | ViewSize { .. }
            | ViewAmbiguous { .. }
            | ViewStrides { .. }
            | EmptyReduction { .. }
            | ArgEmpty { .. }
            | NotExpandable { .. } => ErrorKind::Shape,
            CastRefused { .. }
            | BoolSubtraction { .. }
            | NotImplemented { .. }
            | WhereCondition { .. }
            | OutDtype { .. }
            | OutDtypeExact { .. }
            | VarDtype
            | LerpDtype { .. }
            | AddcdivInteger
            | CastRefusedCpp { .. }
            | NanmeanDtype { .. }
            | ArgBool { .. }
            | BoolOutput { .. }
            | BoolNegation
            | ReduceDtype { .. } => ErrorKind::Dtype,
            ZeroDivision | NegativeIntegerPower | NumberOverflow { .. } | ClampRange { .. } => {
                ErrorKind::Value
            }
            InternalOverlap | PartialOverlap => ErrorKind::Overlap,
            Overflow { .. } | FormatTooLarge { .. } => ErrorKind::Overflow,
            Alloc { .. } => ErrorKind::Alloc,
            InvalidArgument(_)
            | ClampNoBound
            | NoInplaceForm { .. }
            | DimOutOfRange { .. }
            | DimRepeated { .. } => ErrorKind::InvalidArgument,
            BufferTooSmall { .. } => ErrorKind::BufferTooSmall,
            ReadOnly | ReadOnlyLegacyExport => ErrorKind::ReadOnly,
        }
    }

    /// An `InvalidArgument` with the text of `msg` (give `format_args!(..)` for a formatted
    /// one), or `Alloc` when even that text cannot be allocated.
    pub(crate) fn invalid(msg: impl std::fmt::Display) -> Error {
        match super::alloc::try_string(format_args!("{msg}")) {
            Ok(text) => Error::InvalidArgument(text),
            Err(e) => e,
        }
    }

    /// The error `build` makes, or `Alloc` when the data it carries (shapes) cannot be
    /// allocated: `Error::or_alloc(|| Ok(Error::X { shape: try_to_vec(s)?, .. }))`.
    pub(crate) fn or_alloc(build: impl FnOnce() -> Result<Error>) -> Error {
        build().unwrap_or_else(|e| e)
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// The text of [`Error::EmptyReduction`] after the operation's name, written without allocating
/// (failures are recorded into a fixed buffer).
struct EmptyText(Option<(i64, usize)>);

impl std::fmt::Display for EmptyText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some((given, _)) => write!(f, "Expected reduction dim {given} to have non-zero size."),
            None => f.write_str("Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument."),
        }
    }
}
