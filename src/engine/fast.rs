//! The fast path of small elementwise operations: the common case of an operation that runs on
//! the calling thread, checked and planned in one pass over its dimensions, on the stack, then
//! computed.
//!
//! The general path (`ops`) checks in PyTorch's order, one rule at a time, each with its exact
//! message, and plans for any layout and thread count: for a tiny operation that costs several
//! times the arithmetic. Here every rule is reduced to a test that passes in the common case:
//! operands of one type that the operation computes in (its table row accepts the type, and it
//! computes in it rather than in float32; integer division, which must scan its divisor, is
//! left out), each row-major on every dimension, size-1 ones included (a flag the tensor keeps;
//! a new result then takes PyTorch's layout, row-major), shapes that broadcast to at most
//! [`FAST_NDIM`] dimensions, an `out` of that shape, row-major too and in separate memory (or
//! exactly one of the inputs), no warning switch on, and work for one thread
//! (small enough, or other callers computing meanwhile leave it one).
//!
//! The operations of `ops` come here first ([`binary`], or [`binary_in`] to build the result
//! where the caller keeps it; [`binary_out`], [`binary_inplace`]). Every operation of the table
//! ([`BinaryOp`]) is handled through its row and its scalar function ([`BinaryOp::visit`]). When
//! every test passes the result is the general path's: the same values (the operation's scalar
//! function, or its kernel), type, shape and row-major layout (PyTorch's too, for such
//! operands), and no warning. When one fails nothing has been written, and the caller takes the
//! general path, which gives the exact error or handles the rare case.
//!
//! The plan is fixed-size: row-major operands need no strides of their own, only which of them
//! is broadcast along each dimension, so dimensions with the same pattern merge into one group
//! as they are read, innermost first. (1024,)+(1024,) is one group, (3,1)+(1,3) two, and
//! (n,1024)+(1024,) two whatever n.
use super::binary_ops::{BinaryOp, Compute, ElemFn, Visit};
use super::dtype::{result_type_ranked, DType, Rank};
use super::elem::Elem;
use super::kernels;
use super::ops::{self, Options, Warnings};
use super::parallel;
use super::tensor::{Init, Scalar, Tensor};
use super::Result;
use std::mem::MaybeUninit;

/// Most dimensions of a result taken by the fast path.
pub const FAST_NDIM: usize = 8;

/// Most elements counted while checking: every element stride times any element size stays
/// far below `isize::MAX`, so the strides are computed without overflow checks.
const MAX_NUMEL: usize = isize::MAX as usize >> 8;

/// Results up to this many elements are computed element by element in one loop, rather than
/// run by run through the kernels (whose setup per run costs more than a few elements).
const ELEMENTWISE_MAX: usize = 64;

/// A checked small operation: its types, broadcast shape, and plan.
struct Small {
    /// The operands' type, which the operation computes in.
    dtype: DType,
    /// The result's type: `dtype`, or bool for comparisons and logical operations.
    out_dtype: DType,
    ndim: usize,
    shape: [usize; FAST_NDIM],
    numel: usize,
    /// Groups of merged dimensions, innermost first: their extents and the byte strides of
    /// `out`, `a` and `b` along them (0 where an input is broadcast).
    groups: usize,
    extent: [usize; FAST_NDIM],
    strides: [[isize; 3]; FAST_NDIM],
    /// For work worth several threads that other callers, computing at the same time, leave
    /// one thread for: this caller counted among them until it has computed.
    _caller: Option<parallel::Caller>,
}

impl Small {
    /// Before [`check`].
    fn new() -> Small {
        Small {
            dtype: DType::Bool,
            out_dtype: DType::Bool,
            ndim: 0,
            shape: [1; FAST_NDIM],
            numel: 1,
            groups: 0,
            extent: [0; FAST_NDIM],
            strides: [[0; 3]; FAST_NDIM],
            _caller: None,
        }
    }

    fn shape(&self) -> &[usize] {
        &self.shape[..self.ndim]
    }
}

/// What [`check`] reads of an input: a tensor, or a number to be cast to the tensor's type.
trait Input {
    fn dtype(&self) -> DType;
    fn shape(&self) -> &[usize];
    fn is_row_major(&self) -> bool;
}

impl Input for Tensor {
    #[inline(always)]
    fn dtype(&self) -> DType {
        Tensor::dtype(self)
    }
    #[inline(always)]
    fn shape(&self) -> &[usize] {
        Tensor::shape(self)
    }
    #[inline(always)]
    fn is_row_major(&self) -> bool {
        Tensor::is_row_major(self)
    }
}

/// A number as a 0-d input of this type, before it is made.
struct Number(DType);

impl Input for Number {
    fn dtype(&self) -> DType {
        self.0
    }
    fn shape(&self) -> &[usize] {
        &[]
    }
    fn is_row_major(&self) -> bool {
        true
    }
}

/// The fast path's tests on `a op b` (and `out`, when given), and the plan; `None` when one
/// fails. Inlined into each caller, so that the plan is built where it is used, not copied.
#[inline(always)]
fn check(
    small: &mut Small,
    op: BinaryOp,
    a: &impl Input,
    b: &impl Input,
    out: Option<&Tensor>,
    opts: Options,
) -> Option<()> {
    // The warning switch may warn about these shapes; the legacy switch only changes shapes
    // that do not broadcast, which are refused below.
    if opts.broadcast_warning {
        return None;
    }
    let dtype = a.dtype();
    // One type in, computed in that type: a type without a kernel (bool subtraction, bitwise
    // operations on floats, ...) is an error, a true division of integers computes in float32,
    // and an integer division scans its divisor first, all on the general path.
    let rule = op.rule();
    if b.dtype() != dtype
        || !rule.accepts(dtype)
        || (rule.compute == Compute::Floating || rule.nonzero_divisor) && !dtype.is_floating()
    {
        return None;
    }
    let out_dtype = if rule.bool_result { DType::Bool } else { dtype };
    // Every operand row-major, size-1 dimensions included (a flag each): then an operand's
    // stride along a dimension is the product of its sizes inside it, so only shapes need
    // reading, and a new result takes PyTorch's layout, which is then row-major. (An operand
    // contiguous only up to the strides of its size-1 dimensions takes the general path.)
    if !a.is_row_major() || !b.is_row_major() {
        return None;
    }
    let (sa, sb) = (a.shape(), b.shape());
    let ndim = sa.len().max(sb.len());
    let so = match out {
        Some(out) if out.dtype() != out_dtype || out.ndim() != ndim || !out.is_row_major() => {
            return None
        }
        Some(out) => Some(out.shape()),
        None => None,
    };
    if ndim > FAST_NDIM {
        return None;
    }
    small.dtype = dtype;
    small.out_dtype = out_dtype;
    small.ndim = ndim;
    // Each operand's row-major stride, in bytes, at the dimension being read.
    let mut next = [out_dtype.size(), dtype.size(), dtype.size()].map(|s| s as isize);
    let mut last_pattern = u8::MAX;
    for i in 1..=ndim {
        let da = sa.len().checked_sub(i).map_or(1, |d| sa[d]);
        let db = sb.len().checked_sub(i).map_or(1, |d| sb[d]);
        let d = if da == db || db == 1 {
            da
        } else if da == 1 {
            db
        } else {
            return None;
        };
        if so.is_some_and(|so| so[ndim - i] != d) {
            return None;
        }
        small.shape[ndim - i] = d;
        if d == 1 {
            continue;
        }
        if d == 0 {
            return None; // empty: rare, and sizes may then overflow together
        }
        small.numel = small.numel.checked_mul(d)?;
        if small.numel > MAX_NUMEL {
            return None; // an empty result with huge sizes, or work far beyond one thread's
        }
        // Bit k set: input k is broadcast along this dimension (stride 0).
        let pattern = (da == 1) as u8 | ((db == 1) as u8) << 1;
        if pattern == last_pattern {
            // Continues the group inside it: the strides follow on.
            small.extent[small.groups - 1] *= d;
        } else {
            small.extent[small.groups] = d;
            // Element by element: an array built apart and copied in whole would be read with
            // wide loads straight after its narrow stores (a failed store forwarding).
            let s = &mut small.strides[small.groups];
            s[0] = next[0];
            s[1] = if da == 1 { 0 } else { next[1] };
            s[2] = if db == 1 { 0 } else { next[2] };
            small.groups += 1;
            last_pattern = pattern;
        }
        next[0] *= d as isize;
        next[1] *= da as isize;
        next[2] *= db as isize;
    }
    let nbytes = small.numel.checked_mul(out_dtype.size())?;
    if nbytes >= parallel::stream_threshold() {
        return None;
    }
    if !parallel::is_serial(small.numel) {
        // Work for several threads runs here only when other callers leave this one a single
        // thread: the general path would find the same, after a plan.
        small._caller = Some(parallel::serial_caller(small.numel)?);
    }
    Some(())
}

/// Whether writing `out` cannot disturb reading `input`: separate memory, or exactly the same
/// view (as PyTorch counts it: strides of size-1 dimensions included).
#[inline(always)]
fn apart(out: &Tensor, input: &Tensor) -> bool {
    let ((o0, o1), (i0, i1)) = (out.storage_range(), input.storage_range());
    o1 <= i0
        || i1 <= o0
        || (out.data_ptr() == input.data_ptr()
            && out.shape() == input.shape()
            && out.strides() == input.strides())
}

/// Calls `run(ptrs, byte_strides, len)` for every run along the innermost group, in row-major
/// order (once with length 1 when every dimension has size 1).
#[inline(always)]
fn walk(small: &Small, base: [*mut u8; 3], mut run: impl FnMut([*mut u8; 3], [isize; 3], usize)) {
    // One or two groups ((4,)+(4,), (3,1)+(1,3), (n,1024)+(1024,)) without the odometer.
    match small.groups {
        0 => return run(base, [0; 3], 1),
        1 => return run(base, small.strides[0], small.extent[0]),
        2 => {
            let mut ptrs = base;
            for _ in 0..small.extent[1] {
                run(ptrs, small.strides[0], small.extent[0]);
                for (p, s) in ptrs.iter_mut().zip(small.strides[1]) {
                    *p = p.wrapping_offset(s);
                }
            }
            return;
        }
        _ => {}
    }
    let mut index = [0usize; FAST_NDIM];
    let mut ptrs = base;
    loop {
        run(ptrs, small.strides[0], small.extent[0]);
        let mut g = 1;
        loop {
            if g == small.groups {
                return;
            }
            index[g] += 1;
            let back = if index[g] < small.extent[g] {
                1
            } else {
                index[g] = 0;
                1 - small.extent[g] as isize
            };
            for (p, s) in ptrs.iter_mut().zip(small.strides[g]) {
                *p = p.wrapping_offset(back * s);
            }
            if index[g] != 0 {
                break;
            }
            g += 1;
        }
    }
}

/// Computes the plan from `out`'s, `a`'s and `b`'s first elements.
///
/// # Safety
/// `small` was checked for these tensors (or, for a new `out`, for `a` and `b`, `out` being
/// row-major of the broadcast shape), and `out` is apart from both inputs.
#[inline]
unsafe fn compute(op: BinaryOp, small: &Small, out: &Tensor, a: &Tensor, b: &Tensor) {
    let base = [out.data_ptr(), a.data_ptr(), b.data_ptr()];
    if small.numel <= ELEMENTWISE_MAX {
        // `check` found a kernel for the type, so `visit` calls back.
        op.visit(small.dtype, Elementwise(small, base));
        return;
    }
    // `check` found a kernel for the type.
    let Some(kernel) = kernels::binary_kernel(op, small.dtype) else {
        return;
    };
    walk(small, base, |p, s, n| {
        // SAFETY: each run lies within the operands (the caller's contract).
        unsafe { kernel.run(p, s, n, false) }
    });
}

/// Every element of the plan with the operation's scalar function, for [`BinaryOp::visit`]:
/// built only by [`compute`], whose caller guarantees the pointers.
struct Elementwise<'a>(&'a Small, [*mut u8; 3]);

impl Visit for Elementwise<'_> {
    type Output = ();
    #[inline(always)]
    fn visit<T: Elem, F: ElemFn<T>>(self) {
        // SAFETY: an `Elementwise` is only built from compute's contract.
        unsafe { elementwise::<T, F>(self.0, self.1) }
    }
}

/// Every element of the plan with `F`, the operation's scalar function on `T`.
///
/// # Safety
/// As [`compute`], for inputs of type `T` and an `out` of type `F::Out`.
#[inline(never)]
unsafe fn elementwise<T: Elem, F: ElemFn<T>>(small: &Small, base: [*mut u8; 3]) {
    walk(small, base, |[mut o, mut a, mut b], [so, sa, sb], n| {
        for _ in 0..n {
            // SAFETY: an element of a run of the plan, within each operand (the caller's
            // contract); `out` is written only where it is not read, or read first.
            unsafe {
                let value = F::call(a.cast::<T>().read(), b.cast::<T>().read());
                o.cast::<F::Out>().write(value);
            }
            (o, a, b) = (
                o.wrapping_offset(so),
                a.wrapping_offset(sa),
                b.wrapping_offset(sb),
            );
        }
    });
}

/// `a op b` into `out`, when the fast path applies: `None` (nothing written) when it does not.
#[inline]
fn try_binary_out(op: BinaryOp, a: &Tensor, b: &Tensor, out: &Tensor, opts: Options) -> Option<()> {
    let mut small = Small::new();
    check(&mut small, op, a, b, Some(out), opts)?;
    if out.is_read_only() || !apart(out, a) || !apart(out, b) {
        return None;
    }
    // SAFETY: checked for these three tensors; `out` is apart from both inputs.
    unsafe { compute(op, &small, out, a, b) };
    Some(())
}

/// `a op b` in a new tensor, when the fast path applies: `None` when it does not, else the
/// result or the failure to allocate it.
#[inline]
fn try_binary(op: BinaryOp, a: &Tensor, b: &Tensor, opts: Options) -> Option<Result<Tensor>> {
    let mut place = MaybeUninit::uninit();
    let built = binary_in(&mut place, op, a, b, opts)?;
    // SAFETY: `binary_in` succeeded, so it initialised `place`.
    Some(built.map(|()| unsafe { place.assume_init() }))
}

/// `a op b` in a new tensor built in `place`, when the fast path applies: `None` when it does
/// not, else whether the result could be allocated. `place` is initialised exactly when this
/// returns `Some(Ok(()))`; a caller that keeps the tensor there (a registry slot) copies
/// nothing. Always inlined: whether the compiler inlined it by itself depended on which
/// codegen unit the caller's module fell into (about 45 more instructions per tiny call when not).
#[inline(always)]
pub fn binary_in(
    place: &mut MaybeUninit<Tensor>,
    op: BinaryOp,
    a: &Tensor,
    b: &Tensor,
    opts: Options,
) -> Option<Result<()>> {
    let mut small = Small::new();
    check(&mut small, op, a, b, None, opts)?;
    let out = match Tensor::new_in(place, small.out_dtype, small.shape(), Init::Uninit) {
        Ok(out) => out,
        Err(e) => return Some(Err(e)),
    };
    // SAFETY: checked for `a` and `b`; `out` is new, row-major of the broadcast shape.
    unsafe { compute(op, &small, out, a, b) };
    Some(Ok(()))
}

/// [`ops::binary`], through the fast path when it applies. Inlined, so that a fast result is
/// handed to the caller in registers rather than through memory.
#[inline]
pub fn binary(op: BinaryOp, a: &Tensor, b: &Tensor, opts: Options) -> Result<(Tensor, Warnings)> {
    match try_binary(op, a, b, opts) {
        Some(out) => Ok((out?, Warnings::new())),
        None => ops::binary(op, a, b, opts),
    }
}

/// [`ops::binary_out`], through the fast path when it applies.
#[inline]
pub fn binary_out(
    op: BinaryOp,
    a: &Tensor,
    b: &Tensor,
    out: &Tensor,
    opts: Options,
) -> Result<Warnings> {
    match try_binary_out(op, a, b, out, opts) {
        Some(()) => Ok(Warnings::new()),
        None => ops::binary_out(op, a, b, out, opts),
    }
}

/// [`ops::binary_inplace`], through the fast path when it applies (`self_ op= other` is
/// `self_ op other` into `self_`: the shape test then also says that `other` broadcasts to
/// `self_`).
#[inline]
pub fn binary_inplace(
    op: BinaryOp,
    self_: &Tensor,
    other: &Tensor,
    opts: Options,
) -> Result<Warnings> {
    match try_binary_out(op, self_, other, self_, opts) {
        Some(()) => Ok(Warnings::new()),
        None => ops::binary_inplace(op, self_, other, opts),
    }
}

/// The number `s` as an input of `t`'s type, when PyTorch computes `t op s` in that type (a
/// number promotes by category only: `float32 + 2.5` stays float32), so that the general path
/// would cast the number to it; `None` when the type changes, for float16 and bfloat16 (whose
/// operations take a number at float32's precision), for `pow` (its own rules), and when the
/// operation refuses a bool number as itself.
fn number_input(op: BinaryOp, t: &Tensor, s: Scalar) -> Option<Number> {
    let dtype = t.dtype();
    let ranks = [
        (dtype, Rank::of_tensor(t.ndim())),
        (s.dtype(), Rank::Wrapped),
    ];
    let keeps = !matches!(dtype, DType::F16 | DType::BF16)
        && op != BinaryOp::Pow
        && result_type_ranked(ranks) == dtype
        && ops::check_op_defined(op, dtype, s.dtype()).is_ok();
    keeps.then_some(Number(dtype))
}

/// `wrapped` (the wrapped number of a call) cast to `dtype` as the general path casts it, in a
/// tensor of its own unless it has that type already (so the call's element memory is the
/// general path's, which `ops::plan_binary_number` counts).
fn cast_number(wrapped: &Tensor, dtype: DType) -> Result<Option<Tensor>> {
    if wrapped.dtype() == dtype {
        return Ok(None);
    }
    let n = Tensor::new(dtype, &[], Init::Uninit)?;
    // SAFETY: one element of each type, in each 0-d tensor.
    unsafe {
        kernels::cast_run(
            wrapped.dtype(),
            dtype,
            [n.data_ptr(), wrapped.data_ptr()],
            [0, 0],
            1,
        )
    };
    Ok(Some(n))
}

/// `t op s` (`number_first`: `s op t`; the operation and order Python gives) in a new tensor,
/// `wrapped` being `s`'s wrapped number, when the fast path applies.
fn try_binary_number(
    op: BinaryOp,
    t: &Tensor,
    s: Scalar,
    wrapped: &Tensor,
    number_first: bool,
    opts: Options,
) -> Option<Result<Tensor>> {
    let number = number_input(op, t, s)?;
    let mut small = Small::new();
    match number_first {
        true => check(&mut small, op, &number, t, None, opts)?,
        false => check(&mut small, op, t, &number, None, opts)?,
    }
    let n = match cast_number(wrapped, t.dtype()) {
        Ok(n) => n,
        Err(e) => return Some(Err(e)),
    };
    let n = n.as_ref().unwrap_or(wrapped);
    let out = match Tensor::new(small.out_dtype, small.shape(), Init::Uninit) {
        Ok(out) => out,
        Err(e) => return Some(Err(e)),
    };
    let (a, b) = if number_first { (n, t) } else { (t, n) };
    // SAFETY: checked for `t` and a 0-d input of `n`'s type; `out` is new, row-major of the
    // broadcast shape.
    unsafe { compute(op, &small, &out, a, b) };
    Some(Ok(out))
}

/// [`ops::binary_number`], through the fast path when it applies (about a third of the general
/// path's time for a tiny tensor).
pub fn binary_number(
    op: BinaryOp,
    t: &Tensor,
    s: Scalar,
    number_first: bool,
    opts: Options,
) -> Result<(Tensor, Warnings)> {
    let (op, number_first) = ops::python_order(op, s, number_first, false)?;
    let wrapped = Tensor::wrapped_number(s)?;
    match try_binary_number(op, t, s, &wrapped, number_first, opts) {
        Some(out) => Ok((out?, Warnings::new())),
        None => ops::binary_wrapped(op, t, &wrapped, s, number_first, opts),
    }
}

/// `t op= s` for a number, as [`try_binary_number`].
fn try_binary_number_inplace(
    op: BinaryOp,
    t: &Tensor,
    s: Scalar,
    wrapped: &Tensor,
    opts: Options,
) -> Option<Result<()>> {
    let number = number_input(op, t, s)?;
    let mut small = Small::new();
    check(&mut small, op, t, &number, Some(t), opts)?;
    if t.is_read_only() {
        return None;
    }
    let n = match cast_number(wrapped, t.dtype()) {
        Ok(n) => n,
        Err(e) => return Some(Err(e)),
    };
    // SAFETY: checked for `t` into itself and a 0-d input of `n`'s type, which is apart from it.
    unsafe { compute(op, &small, t, t, n.as_ref().unwrap_or(wrapped)) };
    Some(Ok(()))
}

/// [`ops::binary_number_inplace`], through the fast path when it applies.
pub fn binary_number_inplace(
    op: BinaryOp,
    t: &Tensor,
    s: Scalar,
    opts: Options,
) -> Result<Warnings> {
    let (op, _) = ops::python_order(op, s, false, true)?;
    let wrapped = Tensor::wrapped_number(s)?;
    match try_binary_number_inplace(op, t, s, &wrapped, opts) {
        Some(done) => done.map(|()| Warnings::new()),
        None => ops::binary_wrapped_inplace(op, t, &wrapped, s, opts),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `shape` filled with small values of `dtype` (from float64: `seed` varies them; bools
    /// alternate), none zero, so that every operation of every type has ordinary inputs.
    fn values(dtype: DType, shape: &[usize], seed: usize) -> Tensor {
        let n: usize = shape.iter().product();
        let bytes: Vec<u8> = (0..n)
            .flat_map(|i| {
                let v = ((i * 5 + seed) % 11) as f64 - 5.0;
                (if v == 0.0 { 3.5 } else { v * 0.75 }).to_ne_bytes()
            })
            .collect();
        let wide = Tensor::from_bytes(DType::F64, shape, &bytes).unwrap();
        if dtype == DType::Bool {
            let bits: Vec<u8> = (0..n).map(|i| ((i + seed) % 2) as u8).collect();
            return Tensor::from_bytes(DType::Bool, shape, &bits).unwrap();
        }
        wide.to_contiguous(dtype).unwrap()
    }

    type Seen = (DType, Vec<usize>, Vec<isize>, Vec<u8>);

    fn bytes(t: &Tensor) -> Seen {
        let mut b = vec![0u8; t.numel() * t.dtype().size()];
        t.copy_to_bytes(&mut b).unwrap();
        (t.dtype(), t.shape().to_vec(), t.strides().to_vec(), b)
    }

    fn outcome<T>(r: &Result<T>, f: impl Fn(&T) -> Seen) -> String {
        match r {
            Ok(t) => format!("{:?}", f(t)),
            Err(e) => format!("error {e}"),
        }
    }

    /// Every operation of the table, for every type and shapes on both sides of the
    /// element-by-element limit: the fast path's results (new, into `out`, in place) are those of
    /// the general path, bit for bit, strides and errors included (also for an operand whose
    /// size-1 dimension has a stride of its own); and it is taken wherever its tests say it
    /// applies (so that this compares something).
    #[test]
    fn every_operation_and_type_as_the_general_path() {
        let opts = Options::default();
        let shapes: [(&[usize], &[usize]); 6] = [
            (&[4], &[4]),
            (&[3, 1], &[1, 3]),
            (&[2, 3, 4], &[4]),
            (&[], &[5]),
            (&[65], &[65]),
            (&[3, 40], &[3, 1]),
        ];
        let mut fast_taken = 0;
        for &op in BinaryOp::ALL {
            let rule = op.rule();
            for dtype in DType::ALL {
                let computes_in_type = rule.accepts(dtype)
                    && (dtype.is_floating()
                        || rule.compute == Compute::Promoted && !rule.nonzero_divisor);
                for (seed, &(sa, sb)) in shapes.iter().enumerate() {
                    let what = format!("{op:?} {dtype:?} {sa:?} {sb:?}");
                    let (mut a, b) = (values(dtype, sa, seed), values(dtype, sb, seed + 3));
                    let row_major = sa != [3, 1];
                    if !row_major {
                        // (1,3) with strides (1,1): contiguous, not row-major, so a new result
                        // takes the general path (which gives PyTorch's layout).
                        a = a.transpose(0, 1).unwrap();
                    }
                    let taken = try_binary(op, &a, &b, opts).is_some();
                    assert_eq!(
                        taken,
                        computes_in_type && row_major,
                        "fast path taken: {what}"
                    );
                    fast_taken += taken as usize;
                    let want = ops::binary(op, &a, &b, opts);
                    let got = binary(op, &a, &b, opts);
                    let key = |r: &(Tensor, Warnings)| bytes(&r.0);
                    assert_eq!(outcome(&got, key), outcome(&want, key), "new: {what}");
                    let Ok((result, _)) = want else { continue };
                    let fill = |v| Tensor::new(result.dtype(), result.shape(), Init::Fill(v));
                    let (out_fast, out_general) = (fill(7.0).unwrap(), fill(7.0).unwrap());
                    let got = binary_out(op, &a, &b, &out_fast, opts).map(|_| out_fast);
                    let want = ops::binary_out(op, &a, &b, &out_general, opts).map(|_| out_general);
                    assert_eq!(outcome(&got, bytes), outcome(&want, bytes), "out: {what}");
                    let (self_fast, self_general) =
                        (a.to_contiguous(dtype), a.to_contiguous(dtype));
                    let (self_fast, self_general) = (self_fast.unwrap(), self_general.unwrap());
                    let got = binary_inplace(op, &self_fast, &b, opts).map(|_| self_fast);
                    let want =
                        ops::binary_inplace(op, &self_general, &b, opts).map(|_| self_general);
                    assert_eq!(
                        outcome(&got, bytes),
                        outcome(&want, bytes),
                        "in place: {what}"
                    );
                }
            }
        }
        assert!(
            fast_taken > 100,
            "the fast path was taken {fast_taken} times"
        );
    }

    /// Work for two threads, while another caller computes and so leaves this one a single
    /// thread, takes the fast path (new and into `out`) with the general path's results.
    #[test]
    fn work_for_two_threads_beside_another_caller() {
        let _lock = parallel::tests::SETTINGS
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        parallel::set_num_threads(2);
        let (opts, op) = (Options::default(), BinaryOp::Add);
        let (a, b) = (
            values(DType::F32, &[100, 1000], 1),
            values(DType::F32, &[1000], 2),
        );
        assert!(!parallel::is_serial(a.numel()));
        let other = parallel::tests::other_caller();
        let new_taken = try_binary(op, &a, &b, opts).map(|r| bytes(&r.unwrap()));
        let out = Tensor::new(DType::F32, a.shape(), Init::Fill(7.0)).unwrap();
        let out_taken = try_binary_out(op, &a, &b, &out, opts).is_some();
        drop(other);
        parallel::set_num_threads(0);
        let want = bytes(&ops::binary(op, &a, &b, opts).unwrap().0);
        assert_eq!(new_taken.as_ref(), Some(&want), "new");
        assert!(out_taken, "into out: the fast path was not taken");
        assert_eq!(bytes(&out), want, "into out");
    }

    /// Every operation of the table with a number, for every type, number and order: the fast
    /// path's results (new and in place) are the general path's, bit for bit, errors included;
    /// and it is taken (so that this compares something).
    #[test]
    fn numbers_as_the_general_path() {
        let opts = Options::default();
        let numbers = [
            Scalar::Bool(true),
            Scalar::Bool(false),
            Scalar::Int(2),
            Scalar::Int(-1),
            Scalar::Int(300),
            Scalar::Int(1 << 40),
            Scalar::Int(i64::MIN),
            Scalar::Float(0.1),
            Scalar::Float(-2.5),
            Scalar::Float(-0.0),
            Scalar::Float(1e300),
            Scalar::Float(f64::NAN),
        ];
        let (mut new_taken, mut inplace_taken) = (0, 0);
        for &op in BinaryOp::ALL {
            for dtype in DType::ALL {
                for (seed, shape) in [&[2usize, 3][..], &[]].into_iter().enumerate() {
                    let t = values(dtype, shape, seed);
                    for s in numbers {
                        let wrapped = Tensor::wrapped_number(s).unwrap();
                        for first in [false, true] {
                            let what = format!("{op:?} {dtype:?} {shape:?} {s:?} first {first}");
                            if let Ok((op, first)) = ops::python_order(op, s, first, false) {
                                let taken = try_binary_number(op, &t, s, &wrapped, first, opts);
                                new_taken += taken.is_some() as usize;
                            }
                            let key = |r: &(Tensor, Warnings)| bytes(&r.0);
                            let got = binary_number(op, &t, s, first, opts);
                            let want = ops::binary_number(op, &t, s, first, opts);
                            assert_eq!(outcome(&got, key), outcome(&want, key), "new: {what}");
                        }
                        let what = format!("in place: {op:?} {dtype:?} {shape:?} {s:?}");
                        if let Ok((op, _)) = ops::python_order(op, s, false, true) {
                            let probe = t.to_contiguous(dtype).unwrap();
                            let taken = try_binary_number_inplace(op, &probe, s, &wrapped, opts);
                            inplace_taken += taken.is_some() as usize;
                        }
                        let (fast, general) = (t.to_contiguous(dtype), t.to_contiguous(dtype));
                        let (fast, general) = (fast.unwrap(), general.unwrap());
                        let got = binary_number_inplace(op, &fast, s, opts).map(|_| fast);
                        let want =
                            ops::binary_number_inplace(op, &general, s, opts).map(|_| general);
                        assert_eq!(outcome(&got, bytes), outcome(&want, bytes), "{what}");
                    }
                }
            }
        }
        assert!(
            new_taken > 200,
            "new: the fast path was taken {new_taken} times"
        );
        assert!(
            inplace_taken > 100,
            "in place: the fast path was taken {inplace_taken} times"
        );
    }
}
