//! Three-operand broadcasting operations (PyTorch 2.15's `lerp`, `addcmul`, `addcdiv`, `clamp`):
//! the checks in PyTorch's order, the n-ary broadcasting rule, promotion over every operand,
//! then one walk over the elements. Every check happens before the first write.
//!
//! Values follow PyTorch's CPU kernels exactly: every tensor operand is first cast to the result
//! type; the computation runs in the computation type (float32 for float16 and bfloat16 results,
//! else the result type; numbers are converted straight to it), each step rounded there, a fused
//! multiply-add rounded once; integers wrap.
use super::alloc::try_small;
use super::dtype::{can_cast, result_type_ranked, DType, Rank};
use super::elem::{Elem, Int};
use super::error::{Error, Result};
use super::layout;
use super::ops::{
    describe_elementwise, run_elementwise, Dest, Geometry, LoopKind, Operand, Report, Warnings,
};
use super::shape::{
    broadcast_shapes, check_output_shape, checked_nbytes, contiguous_strides, numel, Dims, Strides,
};
use super::tensor::{copy_into, Init, Scalar, Tensor};
use super::unary_ops::Real;

/// The operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TernaryOp {
    /// `input + weight * (end - input)`, as PyTorch's two-branch formula.
    Lerp,
    /// `input + value * tensor1 * tensor2`.
    Addcmul,
    /// `input + value * tensor1 / tensor2`.
    Addcdiv,
    /// `min(max(input, min), max)`, either bound absent.
    Clamp,
}

impl TernaryOp {
    /// Every operation, in the order of the C API's `BC_TERNARY_*` codes (a code is an index).
    pub const ALL: [TernaryOp; 4] = [
        TernaryOp::Lerp,
        TernaryOp::Addcmul,
        TernaryOp::Addcdiv,
        TernaryOp::Clamp,
    ];

    pub fn name(self) -> &'static str {
        match self {
            TernaryOp::Lerp => "lerp",
            TernaryOp::Addcmul => "addcmul",
            TernaryOp::Addcdiv => "addcdiv",
            TernaryOp::Clamp => "clamp",
        }
    }
}

/// The second or third operand: a tensor, a number, or absent (`clamp`'s bounds). (Over
/// geometries for the planner.)
pub enum Arg<'a, O = Tensor> {
    Tensor(&'a O),
    Number(Scalar),
    None,
}

// (Not derived: a derive would ask `O` itself to be `Copy`.)
impl<O> Clone for Arg<'_, O> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<O> Copy for Arg<'_, O> {}

impl<'a, O> Arg<'a, O> {
    fn tensor(self) -> Option<&'a O> {
        match self {
            Arg::Tensor(t) => Some(t),
            _ => None,
        }
    }
}

/// A call's decisions.
struct Decision {
    result: DType,
    shape: Dims,
}

/// The operand types as PyTorch promotes them: tensors by rank, numbers as wrapped numbers.
fn promoted<O: Operand>(input: &O, args: [Arg<'_, O>; 2]) -> DType {
    let rank = |t: &O| (dt(t), Rank::of_tensor(t.geometry().shape.len()));
    let of = |a: Arg<'_, O>| match a {
        Arg::Tensor(t) => Some(rank(t)),
        Arg::Number(s) => Some((s.dtype(), Rank::Wrapped)),
        Arg::None => None,
    };
    let [b, c] = args.map(of);
    match (b, c) {
        (Some(b), Some(c)) => result_type_ranked([rank(input), b, c]),
        (Some(b), None) | (None, Some(b)) => result_type_ranked([rank(input), b]),
        (None, None) => dt(input),
    }
}

fn dt<O: Operand>(t: &O) -> DType {
    t.geometry().dtype
}

fn ndim<O: Operand>(t: &O) -> usize {
    t.geometry().shape.len()
}

/// The checks of a call in PyTorch's order, and its result type and shape.
fn decide<O: Operand>(
    op: TernaryOp,
    input: &O,
    args: [Arg<'_, O>; 2],
    value: Scalar,
    dest: Dest<'_, O>,
) -> Result<Decision> {
    let [b, c] = args;
    let number_bounds = matches!(b, Arg::Number(_)) || matches!(c, Arg::Number(_));
    let result = match op {
        TernaryOp::Lerp => {
            let end = b.tensor().expect("lerp's end is a tensor");
            if dt(end) != dt(input) {
                return Err(Error::LerpDtype {
                    what: "end",
                    expected: dt(input).typeid_name(),
                    got: dt(end).typeid_name(),
                });
            }
            if let Some(w) = c.tensor() {
                if ndim(w) > 0 && dt(w) != dt(input) {
                    return Err(Error::LerpDtype {
                        what: "weight",
                        expected: dt(input).typeid_name(),
                        got: dt(w).typeid_name(),
                    });
                }
            }
            // A number weight does not promote; a 0-d weight tensor does.
            match c {
                Arg::Number(_) => dt(input),
                _ => promoted(input, args),
            }
        }
        TernaryOp::Addcdiv => {
            let (t1, t2) = (b.tensor().unwrap(), c.tensor().unwrap());
            if !dt(t1).is_floating() && !dt(t2).is_floating() {
                return Err(Error::AddcdivInteger);
            }
            promoted(input, args)
        }
        TernaryOp::Addcmul => promoted(input, args),
        TernaryOp::Clamp => {
            if matches!((b, c), (Arg::None, Arg::None)) {
                return Err(Error::ClampNoBound);
            }
            promoted(input, args)
        }
    };
    // `clamp` with number bounds, and `lerp` with a weight tensor of dimensions, need exactly the
    // result type in `out`.
    let exact = match op {
        TernaryOp::Clamp => number_bounds,
        TernaryOp::Lerp => c.tensor().is_some_and(|w| ndim(w) > 0),
        _ => false,
    };
    if let Dest::Out(out) = dest {
        if exact && dt(out) != result {
            return Err(Error::OutDtypeExact {
                found: dt(out),
                expected: result,
            });
        }
    }
    // The shape: the three broadcast in order (in place, `input`'s must be the broadcast one).
    let mut shape: Dims = try_small(input.geometry().shape)?;
    for t in [b, c].into_iter().filter_map(Arg::tensor) {
        shape = broadcast_shapes(&shape, t.geometry().shape)?;
    }
    if let Dest::InPlace = dest {
        check_output_shape(input.geometry().shape, &shape)?;
    }
    let written = match dest {
        Dest::New => None,
        Dest::InPlace => Some(input),
        Dest::Out(out) => Some(out),
    };
    if let Some(w) = written {
        // The written tensor against each tensor it reads (in place, `input` is itself).
        for t in [Some(input), b.tensor(), c.tensor()].into_iter().flatten() {
            match std::ptr::eq(t, w) {
                true => w.check_writable(&[])?,
                false => w.check_writable(&[t])?,
            }
        }
        if !can_cast(result, dt(w)) {
            return Err(match (op, number_bounds, dest) {
                (TernaryOp::Clamp, true, Dest::InPlace) => Error::CastRefusedCpp {
                    from: result,
                    to: dt(w).typeid_name(),
                },
                _ => Error::CastRefused {
                    from: result,
                    to: dt(w),
                },
            });
        }
    }
    // A kernel for the type.
    let kernel = match op {
        TernaryOp::Lerp if !result.is_floating() => Some(match c {
            Arg::Number(_) => "lerp_kernel_scalar",
            _ => "lerp_kernel_tensor",
        }),
        TernaryOp::Addcmul if result == DType::Bool => Some("addcmul_cpu_out"),
        TernaryOp::Clamp
            if result == DType::Bool && !matches!(b, Arg::None) && !matches!(c, Arg::None) =>
        {
            Some("clamp_cpu")
        }
        _ => None,
    };
    if let Some(kernel) = kernel {
        return Err(Error::NotImplemented {
            kernel,
            dtype: result,
        });
    }
    // The numbers, as the kernel converts them.
    let compute = compute_type(result);
    match op {
        TernaryOp::Addcmul | TernaryOp::Addcdiv => check_number(value, compute)?,
        TernaryOp::Clamp if number_bounds => {
            if !result.is_floating() && result != DType::Bool {
                for (arg, is_min) in [(b, true), (c, false)] {
                    if let Arg::Number(s) = arg {
                        if outside(s, result, is_min) {
                            return Err(Error::ClampRange {
                                min: is_min,
                                value: s,
                                dtype: result,
                            });
                        }
                    }
                }
            } else if result.is_floating() {
                for arg in [b, c] {
                    if let Arg::Number(s) = arg {
                        check_number(s, result)?;
                    }
                }
            }
        }
        _ => {}
    }
    if let Dest::Out(out) = dest {
        check_output_shape(out.geometry().shape, &shape)?;
    }
    Ok(Decision { result, shape })
}

/// float32 for the 16-bit floats, else the type itself.
pub(crate) fn compute_type(result: DType) -> DType {
    match result {
        DType::F16 | DType::BF16 => DType::F32,
        t => t,
    }
}

/// PyTorch's checked conversion of a number to `dtype` (`value cannot be converted to type int
/// without overflow`): out of the type's range, or NaN for an integer type.
fn check_number(s: Scalar, dtype: DType) -> Result<()> {
    let bad = match s {
        Scalar::Float(f) if f.is_nan() => !dtype.is_floating(),
        _ => !super::ops::fits(s, dtype),
    };
    match bad {
        true => Err(Error::NumberOverflow { dtype }),
        false => Ok(()),
    }
}

/// Whether a `clamp` bound on an integer type leaves nothing: a minimum above the type's
/// largest value, or a maximum below its smallest.
fn outside(s: Scalar, dtype: DType, is_min: bool) -> bool {
    let v = match s {
        Scalar::Bool(b) => b as i64 as f64,
        Scalar::Int(i) => i as f64,
        Scalar::Float(f) => f,
    };
    let (lo, hi) = int_range(dtype);
    match is_min {
        true => v > hi,
        false => v < lo,
    }
}

/// The range an integer number is held to for `dtype`: the type's own (a bool's is not held, as
/// the conversion to bool reads any non-zero value as true).
fn int_range(dtype: DType) -> (f64, f64) {
    match dtype {
        DType::Bool => DType::I64.range(),
        t => t.range(),
    }
}

/// `op(input, b, c)` (`value` for `addcmul`/`addcdiv`) into a new tensor.
pub fn ternary(op: TernaryOp, input: &Tensor, args: [Arg<'_>; 2], value: Scalar) -> Result<Tensor> {
    let d = decide(op, input, args, value, Dest::New)?;
    let strides = new_layout(&d, input, args)?;
    let out = Tensor::new_dense(d.result, &d.shape, strides, Init::Uninit)?;
    compute(op, &out, input, args, value, d.result)?;
    Ok(out)
}

/// A new result's layout: the tensors take part as PyTorch's iterator sees them (a converted one
/// as its row-major copy).
fn new_layout<O: Operand>(d: &Decision, input: &O, args: [Arg<'_, O>; 2]) -> Result<Strides> {
    let given = |t| layout_input(t, d.result);
    let x = given(input);
    match args.map(Arg::tensor) {
        [Some(b), Some(c)] => layout::result_strides(&d.shape, [x, given(b), given(c)]),
        [Some(b), None] | [None, Some(b)] => layout::result_strides(&d.shape, [x, given(b)]),
        [None, None] => layout::result_strides(&d.shape, [x]),
    }
}

fn layout_input<O: Operand>(t: &O, result: DType) -> layout::Input<'_> {
    let g = t.geometry();
    layout::Input {
        shape: g.shape,
        strides: g.strides,
        converted: g.dtype != result,
    }
}

/// For a fused pass: the result type, shape and a new result's layout of `op(input, b, c)` over
/// three tensors; `None` when the call refuses them (evaluated call by call, it gives the error).
pub(crate) fn fused_types(
    op: TernaryOp,
    [x, b, c]: [Geometry<'_>; 3],
    value: Scalar,
) -> Result<Option<(DType, Dims, Strides)>> {
    let args = [Arg::Tensor(&b), Arg::Tensor(&c)];
    let Ok(d) = decide(op, &x, args, value, Dest::New) else {
        return Ok(None);
    };
    let strides = new_layout(&d, &x, args)?;
    Ok(Some((d.result, d.shape, strides)))
}

/// What `op(input, b, c)` would do (into `dest`), from the call's own decisions on geometry
/// alone: the temporaries [`compute`] makes (each tensor of another type than the result
/// converted, a 0-d tensor for each number, absent bound and `value`, a result of another type
/// than the written tensor's) and the walk over the written tensor and what it reads.
pub fn plan_ternary(
    op: TernaryOp,
    input: Geometry<'_>,
    args: [Arg<'_, Geometry<'_>>; 2],
    value: Scalar,
    dest: Dest<'_, Geometry<'_>>,
) -> Result<Report> {
    let d = decide(op, &input, args, value, dest)?;
    let ctype = compute_type(d.result);
    let new_strides;
    let written = match dest {
        Dest::New => {
            new_strides = new_layout(&d, &input, args)?;
            Geometry {
                dtype: d.result,
                shape: &d.shape,
                strides: &new_strides,
                wrapped: false,
            }
        }
        Dest::InPlace => input,
        Dest::Out(out) => *out,
    };
    let n = numel(&d.shape);
    let mut alloc_bytes = match dest {
        Dest::New => checked_nbytes(n, d.result.size())?,
        _ => 0,
    };
    let (loop_shape, loop_kind, threads) = if n == 0 {
        (Dims::new(), LoopKind::None, 1)
    } else {
        // Row-major strides for every converted tensor (each of its own shape), kept here so
        // that the geometries below may borrow them.
        let shapes = [
            Some(input),
            args[0].tensor().copied(),
            args[1].tensor().copied(),
        ];
        let mut row_major: [Strides; 3] = Default::default();
        for (k, t) in shapes.iter().enumerate() {
            if let Some(t) = t {
                if t.dtype != d.result {
                    alloc_bytes += checked_nbytes(numel(t.shape), d.result.size())?;
                    row_major[k] = contiguous_strides(t.shape)?;
                }
            }
        }
        let number = Geometry {
            dtype: ctype,
            shape: &[],
            strides: &[],
            wrapped: false,
        };
        let mut operands: [Geometry<'_>; 5] = [number; 5];
        let target_strides;
        operands[0] = written;
        if written.dtype != d.result {
            alloc_bytes += checked_nbytes(n, d.result.size())?;
            target_strides = contiguous_strides(&d.shape)?;
            operands[0] = Geometry {
                dtype: d.result,
                shape: &d.shape,
                strides: &target_strides,
                wrapped: false,
            };
        }
        for (k, t) in shapes.iter().enumerate() {
            operands[1 + k] = match t {
                Some(t) if t.dtype != d.result => Geometry {
                    dtype: d.result,
                    strides: &row_major[k],
                    ..*t
                },
                Some(t) => *t,
                // A number or an absent bound: a 0-d tensor of the computation type.
                None => {
                    alloc_bytes += ctype.size();
                    number
                }
            };
        }
        // `value`'s 0-d tensor.
        alloc_bytes += ctype.size();
        describe_elementwise(&d.shape, &operands)?
    };
    Ok(Report {
        dtype: written.dtype,
        compute: ctype,
        checks_divisor: false,
        shape: try_small(&d.shape)?,
        strides: try_small(written.strides)?,
        warnings: Warnings::new(),
        loop_shape,
        loop_kind,
        threads,
        alloc_bytes,
    })
}

/// `input = op(input, b, c)` (PyTorch's `input.<op>_(..)`).
pub fn ternary_inplace(
    op: TernaryOp,
    input: &Tensor,
    args: [Arg<'_>; 2],
    value: Scalar,
) -> Result<()> {
    let d = decide(op, input, args, value, Dest::InPlace)?;
    compute(op, input, input, args, value, d.result)
}

/// `op(input, b, c)` into the caller's `out`, of the broadcast shape.
pub fn ternary_out(
    op: TernaryOp,
    input: &Tensor,
    args: [Arg<'_>; 2],
    value: Scalar,
    out: &Tensor,
) -> Result<()> {
    let d = decide(op, input, args, value, Dest::Out(out))?;
    compute(op, out, input, args, value, d.result)
}

/// A number as the computation type reads it: a 0-d tensor of that type (float32 for the 16-bit
/// results). For an integer type, a float is truncated toward zero; an integer wraps (as C++'s
/// conversion, after PyTorch's range check), or with `saturate` (a clamp bound, which may lie
/// beyond the type's range) is held to the range.
fn number_tensor(s: Scalar, compute: DType, saturate: bool) -> Result<Tensor> {
    let t = Tensor::new(compute, &[], Init::Uninit)?;
    // SAFETY: a new 0-d tensor of the type holds one element.
    unsafe { write_number(s, compute, saturate, t.data_ptr()) };
    Ok(t)
}

/// Writes the element [`number_tensor`] holds at `dst`.
///
/// # Safety
/// `dst` valid for writing one element of `compute`, aligned for it.
pub(crate) unsafe fn write_number(s: Scalar, compute: DType, saturate: bool, dst: *mut u8) {
    let v = match s {
        Scalar::Bool(b) => b as i64 as f64,
        Scalar::Int(i) => i as f64,
        Scalar::Float(f) => f,
    };
    crate::with_elem!(compute, T => {
        let x = match (compute.is_floating(), s) {
            (true, _) => T::from_f64(v),
            (false, Scalar::Int(i)) if saturate => {
                let (lo, hi) = int_range(compute);
                T::from_i64(i.clamp(lo as i64, hi as i64))
            }
            (false, Scalar::Int(i)) => T::from_i64(i),
            (false, _) => {
                let (lo, hi) = int_range(compute);
                T::from_i64(v.clamp(lo, hi) as i64)
            }
        };
        // SAFETY: the caller's contract.
        unsafe { (dst as *mut T).write(x) };
    });
}

fn compute(
    op: TernaryOp,
    dest: &Tensor,
    input: &Tensor,
    args: [Arg<'_>; 2],
    value: Scalar,
    result: DType,
) -> Result<()> {
    if dest.numel() == 0 {
        return Ok(());
    }
    let ctype = compute_type(result);
    let cast = |t: &Tensor| -> Result<Option<Tensor>> {
        Ok(match t.dtype() == result {
            true => None,
            false => Some(t.to_contiguous(result)?),
        })
    };
    let ci = cast(input)?;
    let input_r = ci.as_ref().unwrap_or(input);
    // Each of `b`, `c`: a tensor of the result type, a number of the computation type, or absent
    // (a 0-d stand-in never read).
    let mut made: [Option<Tensor>; 2] = [None, None];
    let mut kinds = [Kind::Absent; 2];
    for k in 0..2 {
        match args[k] {
            Arg::Tensor(t) => {
                made[k] = cast(t)?;
                kinds[k] = Kind::Tensor;
            }
            Arg::Number(s) => {
                made[k] = Some(number_tensor(s, ctype, op == TernaryOp::Clamp)?);
                kinds[k] = Kind::Number;
            }
            Arg::None => {
                made[k] = Some(Tensor::new(ctype, &[], Init::Zeros)?);
            }
        }
    }
    let b = made[0].as_ref().or(args[0].tensor()).unwrap();
    let c = made[1].as_ref().or(args[1].tensor()).unwrap();
    let v = number_tensor(value, ctype, false)?;
    let tmp = match dest.dtype() == result {
        true => None,
        false => Some(Tensor::new(result, dest.shape(), Init::Uninit)?),
    };
    let target = tmp.as_ref().unwrap_or(dest);
    let f = Formula { op, kinds };
    // SAFETY: every operand has the type the kernel reads it as (tensors the result type,
    // numbers and stand-ins the computation type); the written tensor aliases an input only
    // exactly (checked), and each element is read before it is written.
    unsafe {
        run_elementwise(
            [target, input_r, b, c, &v],
            |p, s, n| crate::with_elem!(result, T => f.run::<T>(p, s, n)),
        )?
    };
    match tmp {
        Some(tmp) => copy_into(dest, &tmp),
        None => Ok(()),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Tensor,
    Number,
    Absent,
}

#[derive(Debug, Clone, Copy)]
struct Formula {
    op: TernaryOp,
    kinds: [Kind; 2],
}

/// The computation of one operation over three tensors of one result type, chosen once (for a
/// fused pass that runs it over many blocks): `run(ptrs, byte_strides, len)` with `ptrs`
/// [result, input, b, c, value], the tensors already of the result type and `value` one element
/// of the computation type (as [`compute`] hands them to the same formula).
#[derive(Debug, Clone, Copy)]
pub(crate) struct TernaryKernel {
    formula: Formula,
    result: DType,
}

impl TernaryKernel {
    pub(crate) fn new(op: TernaryOp, result: DType) -> TernaryKernel {
        TernaryKernel {
            formula: Formula {
                op,
                kinds: [Kind::Tensor; 2],
            },
            result,
        }
    }

    /// One run of `n` elements.
    ///
    /// # Safety
    /// Every pointer valid for `n` elements at its stride, of the types above; the result shares
    /// memory with an operand only element for element.
    #[inline]
    pub(crate) unsafe fn run(self, p: [*mut u8; 5], s: [isize; 5], n: usize) {
        let f = self.formula;
        // SAFETY: the caller's contract.
        crate::with_elem!(self.result, T => unsafe { f.run::<T>(p, s, n) })
    }
}

impl Formula {
    /// One run: `p` = [result, input, b, c, value] at byte strides `s`.
    unsafe fn run<T: Elem>(&self, p: [*mut u8; 5], s: [isize; 5], n: usize) {
        // SAFETY (this function): the caller's contract.
        unsafe {
            #[cfg(target_arch = "x86_64")]
            if fma() {
                match T::DTYPE {
                    DType::F16 | DType::BF16 | DType::F32 => {
                        return self.run_real_fma::<T, f32>(p, s, n)
                    }
                    DType::F64 => return self.run_real_fma::<T, f64>(p, s, n),
                    _ => {}
                }
            }
            match T::DTYPE {
                DType::F16 | DType::BF16 | DType::F32 => self.run_real::<T, f32>(p, s, n),
                DType::F64 => self.run_real::<T, f64>(p, s, n),
                DType::Bool => self.run_bool(p, s, n),
                DType::U8 => self.run_int::<u8>(p, s, n),
                DType::I8 => self.run_int::<i8>(p, s, n),
                DType::I16 => self.run_int::<i16>(p, s, n),
                DType::I32 => self.run_int::<i32>(p, s, n),
                DType::I64 => self.run_int::<i64>(p, s, n),
            }
        }
    }

    /// [`Formula::run_real`] compiled with the FMA instructions (`mul_add` is otherwise a library
    /// call) and AVX2.
    ///
    /// # Safety
    /// As [`Formula::run`], on a CPU with AVX2 and FMA.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn run_real_fma<T: Elem, K: Real + Fma>(
        &self,
        p: [*mut u8; 5],
        s: [isize; 5],
        n: usize,
    ) {
        // SAFETY: forwarded.
        unsafe { self.run_real::<T, K>(p, s, n) }
    }

    /// The operation on one element in the computation type.
    #[inline(always)]
    fn real<K: Real + Fma>(&self, x: K, b: K, c: K, value: K) -> K {
        match self.op {
            TernaryOp::Lerp => lerp(x, b, c),
            TernaryOp::Addcmul => value.mul(b).fma(c, x),
            TernaryOp::Addcdiv => x.add(value.mul(b).div(c)),
            TernaryOp::Clamp => {
                let mut v = x;
                if self.kinds[0] != Kind::Absent {
                    v = clamp_min(v, b);
                }
                if self.kinds[1] != Kind::Absent {
                    v = clamp_max(v, c);
                }
                v
            }
        }
    }

    /// Runs where the result and `input` are contiguous and `b`, `c` each contiguous or one value
    /// (a number, an absent bound, a tensor broadcast along the run), with `T` the computation
    /// type: the operation chosen once, a loop per operand layout that the compiler vectorizes.
    /// False (nothing done) for other runs.
    #[inline(always)]
    unsafe fn run_dense<K: Real + Fma>(&self, p: [*mut u8; 5], s: [isize; 5], n: usize) -> bool {
        let size = std::mem::size_of::<K>() as isize;
        let along = |k: usize| match s[k] {
            0 => Some(false),
            x if x == size => Some(true),
            _ => None,
        };
        let (Some(bt), Some(ct)) = (along(2), along(3)) else {
            return false;
        };
        if s[0] != size || s[1] != size {
            return false;
        }
        // SAFETY: the caller's contract (every operand holds `K`s here).
        let value = unsafe { (p[4] as *const K).read() };
        // SAFETY (below): the caller's contract.
        unsafe {
            match (self.op, self.kinds) {
                (TernaryOp::Lerp, _) => dense(p, n, bt, ct, lerp::<K>),
                (TernaryOp::Addcmul, _) => {
                    dense(p, n, bt, ct, move |x, b, c| value.mul(b).fma(c, x))
                }
                (TernaryOp::Addcdiv, _) => dense(p, n, bt, ct, move |x: K, b: K, c: K| {
                    x.add(value.mul(b).div(c))
                }),
                (TernaryOp::Clamp, [Kind::Absent, _]) => {
                    dense(p, n, bt, ct, |x: K, _: K, c: K| clamp_max(x, c))
                }
                (TernaryOp::Clamp, [_, Kind::Absent]) => {
                    dense(p, n, bt, ct, |x: K, b: K, _: K| clamp_min(x, b))
                }
                (TernaryOp::Clamp, _) => dense(p, n, bt, ct, |x: K, b: K, c: K| {
                    clamp_max(clamp_min(x, b), c)
                }),
            }
        }
        true
    }

    #[inline(always)]
    unsafe fn run_real<T: Elem, K: Real + Fma>(&self, p: [*mut u8; 5], s: [isize; 5], n: usize) {
        let load_t = |ptr: *mut u8, i: isize, st: isize| -> K {
            // SAFETY: the caller's contract.
            K::from_f64(unsafe { (ptr.offset(i * st) as *const T).read() }.to_f64())
        };
        let load_k = |ptr: *mut u8, i: isize, st: isize| -> K {
            // SAFETY: the caller's contract.
            unsafe { (ptr.offset(i * st) as *const K).read() }
        };
        let arg = |k: usize, i: isize| -> K {
            match self.kinds[k] {
                Kind::Tensor => load_t(p[2 + k], i, s[2 + k]),
                _ => load_k(p[2 + k], i, s[2 + k]),
            }
        };
        if T::DTYPE.size() == std::mem::size_of::<K>() && unsafe { self.run_dense::<K>(p, s, n) } {
            return;
        }
        let size = std::mem::size_of::<T>() as isize;
        let numbers = self.kinds.iter().all(|&k| k != Kind::Tensor);
        if numbers && s[0] == size && s[1] == size {
            // Numbers only besides `input` (`clamp(x, 0, 1)`, `lerp` with a number weight is not
            // this: `end` is a tensor): a contiguous loop the compiler vectorizes.
            let (b, c, value) = (arg(0, 0), arg(1, 0), load_k(p[4], 0, s[4]));
            let (out, x) = (p[0] as *mut T, p[1] as *const T);
            for i in 0..n {
                // SAFETY: the caller's contract (contiguous runs of `n` elements).
                unsafe {
                    let v = K::from_f64(x.add(i).read().to_f64());
                    out.add(i)
                        .write(T::from_f64(self.real(v, b, c, value).to_f64()));
                }
            }
            return;
        }
        for i in 0..n as isize {
            let x = load_t(p[1], i, s[1]);
            let r = self.real(x, arg(0, i), arg(1, i), load_k(p[4], i, s[4]));
            // SAFETY: the caller's contract.
            unsafe { (p[0].offset(i * s[0]) as *mut T).write(T::from_f64(r.to_f64())) };
        }
    }

    unsafe fn run_int<I: Int>(&self, p: [*mut u8; 5], s: [isize; 5], n: usize) {
        let load = |k: usize, i: isize| -> I {
            // SAFETY: the caller's contract (every operand is of type I here).
            unsafe { (p[k].offset(i * s[k]) as *const I).read() }
        };
        for i in 0..n as isize {
            let (x, b, c, value) = (load(1, i), load(2, i), load(3, i), load(4, i));
            let r = match self.op {
                TernaryOp::Addcmul => x.wrapping_add(value.wrapping_mul(b).wrapping_mul(c)),
                TernaryOp::Clamp => {
                    let mut v = x;
                    if self.kinds[0] != Kind::Absent && v < b {
                        v = b;
                    }
                    if self.kinds[1] != Kind::Absent && c < v {
                        v = c;
                    }
                    v
                }
                // Refused before: lerp takes floating types, addcdiv no two integer divisors.
                TernaryOp::Lerp | TernaryOp::Addcdiv => x,
            };
            // SAFETY: the caller's contract.
            unsafe { (p[0].offset(i * s[0]) as *mut I).write(r) };
        }
    }

    /// `clamp` with one bound on bools (two are refused): `max`/`min` on 0 < 1.
    unsafe fn run_bool(&self, p: [*mut u8; 5], s: [isize; 5], n: usize) {
        for i in 0..n as isize {
            // SAFETY: the caller's contract (bools are single bytes).
            let load = |k: usize| unsafe { p[k].offset(i * s[k]).read() != 0 };
            let mut v = load(1);
            if self.kinds[0] != Kind::Absent {
                v |= load(2);
            }
            if self.kinds[1] != Kind::Absent {
                v &= load(3);
            }
            // SAFETY: as above.
            unsafe { p[0].offset(i * s[0]).write(v as u8) };
        }
    }
}

/// `lerp` as PyTorch's two-branch formula (exact at both ends).
#[inline(always)]
fn lerp<K: Real + Fma>(x: K, end: K, weight: K) -> K {
    let diff = end.sub(x);
    if weight.abs() < K::HALF {
        weight.fma(diff, x)
    } else {
        diff.neg().fma(K::ONE.sub(weight), end)
    }
}

/// `max(v, min)`, NaN if either is.
#[inline(always)]
fn clamp_min<K: Real>(v: K, min: K) -> K {
    if v.is_nan() || min.is_nan() {
        K::NAN
    } else if v < min {
        min
    } else {
        v
    }
}

/// `min(v, max)`, NaN if either is.
#[inline(always)]
fn clamp_max<K: Real>(v: K, max: K) -> K {
    if v.is_nan() || max.is_nan() {
        K::NAN
    } else if max < v {
        max
    } else {
        v
    }
}

/// One contiguous run of `f(input, b, c)` into the result, `b` and `c` read along the run when
/// `bt`/`ct`, else once: one loop per layout, so each is a plain loop the compiler vectorizes.
///
/// # Safety
/// `p` = [result, input, b, c, ..] hold `K`s: `n` contiguous for the result and input, `n`
/// contiguous or one for `b` and `c`.
#[inline(always)]
unsafe fn dense<K: Copy>(p: [*mut u8; 5], n: usize, bt: bool, ct: bool, f: impl Fn(K, K, K) -> K) {
    #[inline(always)]
    unsafe fn go<K: Copy, const BT: bool, const CT: bool>(
        p: [*mut u8; 5],
        n: usize,
        f: impl Fn(K, K, K) -> K,
    ) {
        let (out, x, b, c) = (
            p[0] as *mut K,
            p[1] as *const K,
            p[2] as *const K,
            p[3] as *const K,
        );
        // SAFETY: the caller's contract; the values read once are read before any write (the
        // result may alias `input` only exactly).
        unsafe {
            let (b0, c0) = (b.read(), c.read());
            for i in 0..n {
                let bi = if BT { b.add(i).read() } else { b0 };
                let ci = if CT { c.add(i).read() } else { c0 };
                out.add(i).write(f(x.add(i).read(), bi, ci));
            }
        }
    }
    // SAFETY: forwarded.
    unsafe {
        match (bt, ct) {
            (true, true) => go::<K, true, true>(p, n, f),
            (true, false) => go::<K, true, false>(p, n, f),
            (false, true) => go::<K, false, true>(p, n, f),
            (false, false) => go::<K, false, false>(p, n, f),
        }
    }
}

/// Whether the FMA clones run here (decided once).
#[cfg(target_arch = "x86_64")]
fn fma() -> bool {
    use std::sync::OnceLock;
    static FMA: OnceLock<bool> = OnceLock::new();
    *FMA.get_or_init(|| {
        std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma")
    })
}

/// A fused multiply-add, rounded once.
pub trait Fma {
    fn fma(self, b: Self, c: Self) -> Self;
}

impl Fma for f32 {
    #[inline(always)]
    fn fma(self, b: f32, c: f32) -> f32 {
        self.mul_add(b, c)
    }
}

impl Fma for f64 {
    #[inline(always)]
    fn fma(self, b: f64, c: f64) -> f64 {
        self.mul_add(b, c)
    }
}
