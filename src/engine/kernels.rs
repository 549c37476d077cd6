//! Inner loops. A kernel sees only pointers, strides and a count, never shapes: the plan has
//! already reduced the work to runs along one dimension. Contiguous runs, and runs where one
//! input is a repeated scalar (stride 0), get loops the compiler vectorizes.
use super::dtype::DType;
use super::elem::Elem;
use crate::with_elem;

/// The four elementwise operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
}

impl BinaryOp {
    pub const ALL: [BinaryOp; 4] = [BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div];

    #[inline(always)]
    fn apply<T: Elem>(self, a: T, b: T) -> T {
        match self {
            BinaryOp::Add => a.add(b),
            BinaryOp::Sub => a.sub(b),
            BinaryOp::Mul => a.mul(b),
            BinaryOp::Div => a.div(b),
        }
    }
}

/// `out[i] = a[i] op b[i]` for `n` elements; strides in bytes.
///
/// # Safety
/// Each pointer must be valid for `n` elements of `dtype` at its stride. `out` may equal `a` or
/// `b` exactly (same pointer and stride); any other overlap must have been refused.
pub unsafe fn binary_run(
    op: BinaryOp,
    dtype: DType,
    ptrs: [*mut u8; 3],
    strides: [isize; 3],
    n: usize,
) {
    // SAFETY: forwarded from this function's contract.
    with_elem!(dtype, T => unsafe {
        match op {
            BinaryOp::Add => binary_typed::<T>(BinaryOp::Add, ptrs, strides, n),
            BinaryOp::Sub => binary_typed::<T>(BinaryOp::Sub, ptrs, strides, n),
            BinaryOp::Mul => binary_typed::<T>(BinaryOp::Mul, ptrs, strides, n),
            BinaryOp::Div => binary_typed::<T>(BinaryOp::Div, ptrs, strides, n),
        }
    })
}

#[inline(always)]
unsafe fn binary_typed<T: Elem>(op: BinaryOp, ptrs: [*mut u8; 3], strides: [isize; 3], n: usize) {
    let size = std::mem::size_of::<T>() as isize;
    let (out, a, b) = (ptrs[0] as *mut T, ptrs[1] as *const T, ptrs[2] as *const T);
    let [so, sa, sb] = strides;
    // SAFETY (all branches): the caller guarantees n elements at these strides; reads happen
    // before the write of the same index, so exact aliasing of out with an input is fine.
    unsafe {
        if so == size && sa == size && sb == size {
            for i in 0..n {
                out.add(i).write(op.apply(a.add(i).read(), b.add(i).read()));
            }
        } else if so == size && sa == size && sb == 0 {
            let bv = b.read();
            for i in 0..n {
                out.add(i).write(op.apply(a.add(i).read(), bv));
            }
        } else if so == size && sa == 0 && sb == size {
            let av = a.read();
            for i in 0..n {
                out.add(i).write(op.apply(av, b.add(i).read()));
            }
        } else {
            let (o, a, b) = (out as *mut u8, a as *const u8, b as *const u8);
            for i in 0..n as isize {
                let x = (a.offset(i * sa) as *const T).read();
                let y = (b.offset(i * sb) as *const T).read();
                (o.offset(i * so) as *mut T).write(op.apply(x, y));
            }
        }
    }
}

/// `out[i] = cast(src[i])` for `n` elements; strides in bytes.
///
/// # Safety
/// `out` valid for `n` writes of `to`, `src` for `n` reads of `from`, at their strides; the two
/// do not overlap unless they are the same memory with the same type.
pub unsafe fn cast_run(from: DType, to: DType, ptrs: [*mut u8; 2], strides: [isize; 2], n: usize) {
    // SAFETY: forwarded from this function's contract.
    with_elem!(from, S => with_elem!(to, D => unsafe { cast_typed::<S, D>(ptrs, strides, n) }))
}

#[inline(always)]
unsafe fn cast_typed<S: Elem, D: Elem>(ptrs: [*mut u8; 2], strides: [isize; 2], n: usize) {
    let (out, src) = (ptrs[0], ptrs[1] as *const u8);
    let [so, ss] = strides;
    // SAFETY: the caller guarantees n elements at these strides.
    unsafe {
        if so == std::mem::size_of::<D>() as isize && ss == std::mem::size_of::<S>() as isize {
            let (out, src) = (out as *mut D, src as *const S);
            for i in 0..n {
                out.add(i).write(src.add(i).read().cast::<D>());
            }
        } else {
            for i in 0..n as isize {
                let v = (src.offset(i * ss) as *const S).read();
                (out.offset(i * so) as *mut D).write(v.cast::<D>());
            }
        }
    }
}

/// Fills `n` elements at `out` (stride in bytes) with `value` converted to `dtype`.
///
/// # Safety
/// `out` must be valid for `n` writes of `dtype` at the stride.
pub unsafe fn fill_run(dtype: DType, value: f64, out: *mut u8, stride: isize, n: usize) {
    with_elem!(dtype, T => {
        let v = T::from_f64(value);
        for i in 0..n as isize {
            // SAFETY: from this function's contract.
            unsafe { (out.offset(i * stride) as *mut T).write(v) }
        }
    })
}
