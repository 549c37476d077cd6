//! Elementwise unary operations: the checks in PyTorch's order, then one walk over the elements
//! with the operation's scalar function ([`super::unary_ops`]). Every check happens before the
//! first write, so a refused call changes nothing.
use super::alloc::try_small;
use super::dtype::{can_cast, DType};
use super::elem::Elem;
use super::error::{Error, Result};
use super::kernels::{self, SimdLevel};
use super::layout;
use super::ops::{
    describe_elementwise, run_elementwise, Dest, Geometry, LoopKind, Operand, Report, Warnings,
};
use super::shape::{check_output_shape, checked_nbytes, contiguous_strides, numel, Dims, Strides};
use super::tensor::{copy_into, Init, Tensor};
use super::unary_ops::{ElemFn, OutRule, UnaryOp, Visit};

/// The types of a call: what it computes in (the input is converted to that) and what it gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Types {
    compute: DType,
    result: DType,
}

/// The checks of `op(x)` in PyTorch's order: the operation is defined for the input (bool
/// negation, the in-place form exists), `out`'s type, the written tensor may be written, a
/// kernel for the computation type, the cast into the written type; then `out`'s shape.
fn decide<O: Operand>(op: UnaryOp, x: &O, dest: Dest<'_, O>) -> Result<Types> {
    let rule = op.rule();
    let gx = x.geometry();
    let dtype = gx.dtype;
    if op == UnaryOp::Neg && dtype == DType::Bool {
        return Err(Error::BoolNegation);
    }
    let types = Types {
        compute: rule.compute_type(dtype),
        result: rule.result_type(dtype),
    };
    match dest {
        Dest::New => {}
        Dest::InPlace => {
            if !rule.inplace {
                return Err(Error::NoInplaceForm { op: op.name() });
            }
            x.check_writable(&[])?;
        }
        Dest::Out(out) => {
            let found = out.geometry().dtype;
            match rule.out {
                OutRule::Exact if found != types.result => {
                    return Err(Error::OutDtypeExact {
                        found,
                        expected: types.result,
                    })
                }
                OutRule::Bool if found != DType::Bool => {
                    return Err(Error::BoolOutput { op: op.name() })
                }
                _ => {}
            }
            out.check_writable(&[x])?;
        }
    }
    if !rule.accepts(types.compute) {
        return Err(Error::NotImplemented {
            kernel: rule.kernel_name,
            dtype: types.compute,
        });
    }
    let written = match dest {
        Dest::New => None,
        Dest::InPlace => Some(dtype),
        Dest::Out(out) => Some(out.geometry().dtype),
    };
    if let Some(to) = written {
        if !can_cast(types.result, to) {
            return Err(Error::CastRefused {
                from: types.result,
                to,
            });
        }
    }
    // Where PyTorch would resize an `out` of another shape, this library refuses it, last.
    if let Dest::Out(out) = dest {
        check_output_shape(out.geometry().shape, gx.shape)?;
    }
    Ok(types)
}

/// The layout of a new result: `x`'s (as its converted copy's, when it is converted).
fn result_layout(x: Geometry<'_>, types: Types) -> Result<Strides> {
    let input = layout::Input {
        shape: x.shape,
        strides: x.strides,
        converted: x.dtype != types.compute,
    };
    layout::result_strides(x.shape, [input])
}

/// For a fused pass: the computation type, the result type and a new result's layout of
/// `op(x)`; `None` when the call refuses `x` (evaluated call by call, it gives the error).
pub(crate) fn fused_types(op: UnaryOp, x: Geometry<'_>) -> Result<Option<(DType, DType, Strides)>> {
    let Ok(types) = decide(op, &x, Dest::New) else {
        return Ok(None);
    };
    Ok(Some((
        types.compute,
        types.result,
        result_layout(x, types)?,
    )))
}

/// The kernel of one operation on one computation type, chosen once (for a fused pass that runs
/// it over many blocks): `run(ptrs, byte_strides, len)` with `ptrs` [result, input].
#[derive(Debug, Clone, Copy)]
pub(crate) struct UnaryKernel(unsafe fn([*mut u8; 2], [isize; 2], usize));

impl UnaryKernel {
    /// The kernel of `op` on `compute`; `None` when the operation has none for it.
    pub(crate) fn new(op: UnaryOp, compute: DType) -> Option<UnaryKernel> {
        struct Choose;
        impl Visit for Choose {
            type Output = UnaryKernel;
            fn visit<T: Elem, F: ElemFn<T>>(self) -> UnaryKernel {
                #[cfg(target_arch = "x86_64")]
                if F::VECTOR && kernels::simd_level() == SimdLevel::Avx2 {
                    return UnaryKernel(run_avx2::<T, F>);
                }
                UnaryKernel(run_loop_call::<T, F>)
            }
        }
        op.visit(compute, Choose)
    }

    /// One run of `n` elements.
    ///
    /// # Safety
    /// As [`run_loop`], for the operation and type the kernel was chosen for.
    #[inline]
    pub(crate) unsafe fn run(self, p: [*mut u8; 2], s: [isize; 2], n: usize) {
        // SAFETY: the caller's contract.
        unsafe { (self.0)(p, s, n) }
    }
}

/// [`run_loop`] as a function to point to.
///
/// # Safety
/// As [`run_loop`].
unsafe fn run_loop_call<T: Elem, F: ElemFn<T>>(p: [*mut u8; 2], s: [isize; 2], n: usize) {
    // SAFETY: forwarded.
    unsafe { run_loop::<T, F>(p, s, n) }
}

/// `op(x)` in a new tensor, laid out as `x` (as its converted copy, when it is converted).
pub fn unary(op: UnaryOp, x: &Tensor) -> Result<Tensor> {
    let types = decide(op, x, Dest::New)?;
    let strides = result_layout(x.geometry(), types)?;
    let out = Tensor::new_dense(types.result, x.shape(), strides, Init::Uninit)?;
    compute(op, &out, x, types)?;
    Ok(out)
}

/// `x = op(x)` (PyTorch's `x.<op>_()`): the result cast back to `x`'s type, which it must be
/// castable to.
pub fn unary_inplace(op: UnaryOp, x: &Tensor) -> Result<()> {
    let types = decide(op, x, Dest::InPlace)?;
    compute(op, x, x, types)
}

/// `op(x)` into the caller's `out`, of `x`'s shape and a type the operation's out rule accepts.
pub fn unary_out(op: UnaryOp, x: &Tensor, out: &Tensor) -> Result<()> {
    let types = decide(op, x, Dest::Out(out))?;
    compute(op, out, x, types)
}

/// What `op(x)` would do (into `dest`), from the call's own decisions on geometry alone: the
/// temporaries [`compute`] makes (a converted input, a result of another type than the written
/// tensor's) and the walk over the written tensor and the input it reads.
pub fn plan_unary(op: UnaryOp, x: Geometry<'_>, dest: Dest<'_, Geometry<'_>>) -> Result<Report> {
    let types = decide(op, &x, dest)?;
    let new_strides;
    let written = match dest {
        Dest::New => {
            new_strides = result_layout(x, types)?;
            Geometry {
                dtype: types.result,
                strides: &new_strides,
                ..x
            }
        }
        Dest::InPlace => x,
        Dest::Out(out) => *out,
    };
    let mut alloc_bytes = match dest {
        Dest::New => checked_nbytes(numel(x.shape), types.result.size())?,
        _ => 0,
    };
    let row_major = contiguous_strides(x.shape)?;
    let (loop_shape, loop_kind, threads) = if numel(x.shape) == 0 {
        (Dims::new(), LoopKind::None, 1)
    } else {
        let mut read = x;
        if x.dtype != types.compute {
            alloc_bytes += checked_nbytes(numel(x.shape), types.compute.size())?;
            read = Geometry {
                dtype: types.compute,
                strides: &row_major,
                ..x
            };
        }
        let mut target = written;
        if written.dtype != types.result {
            alloc_bytes += checked_nbytes(numel(x.shape), types.result.size())?;
            target = Geometry {
                dtype: types.result,
                strides: &row_major,
                ..x
            };
        }
        describe_elementwise(x.shape, &[target, read])?
    };
    Ok(Report {
        dtype: written.dtype,
        compute: types.compute,
        checks_divisor: false,
        shape: try_small(x.shape)?,
        strides: try_small(written.strides)?,
        warnings: Warnings::new(),
        loop_shape,
        loop_kind,
        threads,
        alloc_bytes,
    })
}

/// Computes `op(x)` into `dest` (of `x`'s shape): the input converted to the computation type
/// first when it has another, the result through a temporary when `dest` has another type than
/// the result (so nothing is written before the computation succeeded).
fn compute(op: UnaryOp, dest: &Tensor, x: &Tensor, types: Types) -> Result<()> {
    if dest.numel() == 0 {
        return Ok(());
    }
    let converted = match x.dtype() == types.compute {
        true => None,
        false => Some(x.to_contiguous(types.compute)?),
    };
    let x = converted.as_ref().unwrap_or(x);
    let tmp = match dest.dtype() == types.result {
        true => None,
        false => Some(Tensor::new(types.result, dest.shape(), Init::Uninit)?),
    };
    let target = tmp.as_ref().unwrap_or(dest);
    // SAFETY: `Run` reads `compute`-typed elements and writes the operation's result for them,
    // which is target's type; target aliases `x` only exactly (checked by check_writable, or a
    // fresh tensor).
    unsafe {
        run_elementwise([target, x], |p, s, n| {
            op.visit(types.compute, Run(p, s, n))
                .expect("the operation has a kernel for its computation type (checked)")
        })?
    };
    match tmp {
        Some(tmp) => copy_into(dest, &tmp),
        None => Ok(()),
    }
}

/// One run of `n` elements: `ptrs` [result, input] at byte strides `strides`.
struct Run([*mut u8; 2], [isize; 2], usize);

impl Visit for Run {
    type Output = ();
    #[inline(always)]
    fn visit<T: Elem, F: ElemFn<T>>(self) {
        let Run(p, s, n) = self;
        // SAFETY: `compute`'s contract (runs of `n` elements of these types at these strides,
        // within their storages; the result aliases the input only exactly).
        unsafe {
            #[cfg(target_arch = "x86_64")]
            if F::VECTOR && kernels::simd_level() == SimdLevel::Avx2 {
                return run_avx2::<T, F>(p, s, n);
            }
            run_loop::<T, F>(p, s, n)
        }
    }
}

/// [`run_loop`] compiled for AVX2: rounding, square roots and comparisons in 256-bit vectors
/// (the baseline has no vector rounding instruction: `floor` is a library call per element).
///
/// # Safety
/// As [`run_loop`], on a CPU with AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn run_avx2<T: Elem, F: ElemFn<T>>(p: [*mut u8; 2], s: [isize; 2], n: usize) {
    // SAFETY: forwarded.
    unsafe { run_loop::<T, F>(p, s, n) }
}

/// One run of `n` elements: `p` [result, input] at byte strides `s`.
///
/// # Safety
/// `n` elements of these types at these strides lie within the operands' storages; the result
/// aliases the input only exactly, and each element is read before it is written.
#[inline(always)]
unsafe fn run_loop<T: Elem, F: ElemFn<T>>(p: [*mut u8; 2], s: [isize; 2], n: usize) {
    let ([out, x], [so, sx]) = (p, s);
    let (out_size, in_size) = (
        std::mem::size_of::<F::Out>() as isize,
        std::mem::size_of::<T>() as isize,
    );
    // SAFETY: this function's contract.
    unsafe {
        if so == out_size && sx == in_size && F::CHECKED {
            // Blocks whose arguments are all in the vectorizing form's domain take it; a block
            // with one outside (`sin` of 1e7, NaN) goes element by element.
            let (out, x) = (out as *mut F::Out, x as *const T);
            const BLOCK: usize = 256;
            for start in (0..n).step_by(BLOCK) {
                let (out, x, m) = (out.add(start), x.add(start), BLOCK.min(n - start));
                let mut fast = true;
                for i in 0..m {
                    fast &= F::fast_domain(x.add(i).read());
                }
                if fast {
                    for i in 0..m {
                        out.add(i).write(F::call_fast(x.add(i).read()));
                    }
                } else {
                    for i in 0..m {
                        out.add(i).write(F::call(x.add(i).read()));
                    }
                }
            }
        } else if so == out_size && sx == in_size {
            let (out, x) = (out as *mut F::Out, x as *const T);
            for i in 0..n {
                out.add(i).write(F::call(x.add(i).read()));
            }
        } else {
            for i in 0..n as isize {
                let v = (x.offset(i * sx) as *const T).read();
                (out.offset(i * so) as *mut F::Out).write(F::call(v));
            }
        }
    }
}
