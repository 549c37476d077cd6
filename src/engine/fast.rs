//! The shortcut of small elementwise operations: once the call's one decision
//! ([`ops::decide_in`]) has passed, a computation that needs no step of the general path's
//! (no conversion, no temporary, no divisor scan, no float32 number) over row-major operands,
//! for one thread, runs here from a fixed-size plan on the stack, without the general path's
//! layout, iterator and tiles. This decides nothing: every refusal, shape, type and overlap is
//! the decision's, and the general path, when it runs, continues from the same decision.
//!
//! The plan is built in the decision's own pass over the dimensions (it is the decision's
//! [`DimSink`]): row-major operands need no strides of their own, only which of them is
//! broadcast along each dimension, so dimensions with the same pattern merge into one group as
//! they are read, innermost first. (1024,)+(1024,) is one group, (3,1)+(1,3) two, and
//! (n,1024)+(1024,) two whatever n. The shortcut applies when, besides the decision's steps
//! being none: every operand is row-major, size-1 dimensions included (a flag each tensor
//! keeps; a new result then takes PyTorch's layout, row-major), the dimensions form at most
//! [`FAST_NDIM`] groups, none is empty, and the work is one thread's (small enough, or other
//! callers computing meanwhile leave it one). Its result is the general path's: the same
//! values (the operation's scalar function, or its kernel), type, shape and layout.
//!
//! The entries of the C API come here ([`binary`], or [`binary_in`] to build the result where
//! the caller keeps it; [`binary_out`], [`binary_inplace`], [`binary_number`],
//! [`binary_number_inplace`]): each decides once, then runs the shortcut or the general path's
//! rest ([`ops::binary_decided`] and its kin). Every operation of the table ([`BinaryOp`]) is
//! handled through its row and its scalar function ([`BinaryOp::visit`]).
use super::binary_ops::{BinaryOp, ElemFn, Visit};
use super::dtype::DType;
use super::elem::Elem;
use super::kernels;
use super::ops::{self, BinaryDecision, Dest, DimSink, Options, Warnings};
use super::parallel;
use super::tensor::{Init, Scalar, Tensor};
use super::Result;
use std::mem::MaybeUninit;
use std::ptr::addr_of_mut;

/// Most groups of merged dimensions in the shortcut's plan.
pub const FAST_NDIM: usize = 8;

/// Most elements the shortcut takes: every element stride times any element size stays far
/// below `isize::MAX`, so the strides are computed without overflow checks.
const MAX_NUMEL: usize = isize::MAX as usize >> 8;

/// Results up to this many elements are computed element by element in one loop, rather than
/// run by run through the kernels (whose setup per run costs more than a few elements).
const ELEMENTWISE_MAX: usize = 64;

/// The plan's groups of merged dimensions, innermost first: their extents and the byte strides
/// of `out`, `a` and `b` along them (0 where an input is broadcast). A local of the call, left
/// uninitialised (only the plan's first `groups` are written): a plan made by value with its
/// arrays inside was copied whole into place, the arrays filled with all-ones (17 instructions
/// per call).
struct Runs {
    extent: [usize; FAST_NDIM],
    strides: [[isize; 3]; FAST_NDIM],
}

/// The shortcut's plan, built by the decision's pass over the dimensions ([`DimSink`]): its
/// counts stay in registers during the pass (the plan is never handed out by reference), the
/// groups go to [`Runs`]; [`Plan::walk`] hands the result to [`compute`].
struct Plan<'r> {
    runs: &'r mut MaybeUninit<Runs>,
    /// The pass reached every dimension ([`DimSink::done`]): the plan covers the decided shape.
    complete: bool,
    /// Elements, saturated at `usize::MAX` on overflow or when the groups do not fit.
    numel: usize,
    /// Groups written to `runs`.
    groups: usize,
    /// Each operand's row-major stride, in bytes, at the next dimension.
    next: [isize; 3],
    /// The broadcast pattern of the innermost group so far (bit k: input k is broadcast).
    last_pattern: u8,
    /// The type the operation computes in (that of the inputs), once the shortcut applies.
    dtype: DType,
    /// For work worth several threads that other callers, computing at the same time, leave
    /// one thread for: this caller counted among them until it has computed.
    _caller: Option<parallel::Caller>,
}

/// A plan that runs, as [`compute`] walks it.
struct Walk<'r> {
    runs: &'r MaybeUninit<Runs>,
    groups: usize,
    numel: usize,
    dtype: DType,
}

impl<'r> Plan<'r> {
    /// Before the decision, for element sizes `sizes` of `out`, `a` and `b`, with its groups
    /// to go in `runs`.
    #[inline(always)]
    fn new(sizes: [usize; 3], runs: &'r mut MaybeUninit<Runs>) -> Plan<'r> {
        Plan {
            runs,
            complete: false,
            numel: 1,
            groups: 0,
            next: sizes.map(|s| s as isize),
            last_pattern: u8::MAX,
            dtype: DType::Bool,
            _caller: None,
        }
    }

    /// Whether the shortcut runs decision `d` (whose result type is the written tensor's, or
    /// that of a new result): the plan covers the decided shape and fits, `inputs` (the
    /// operands' tests: both of the computation type, row-major) hold, no divisor is scanned,
    /// and the work is one thread's.
    #[inline(always)]
    fn runs(&mut self, op: BinaryOp, d: &BinaryDecision<'_>, inputs: bool) -> bool {
        let t = d.types;
        let divisor_scanned = op.rule().nonzero_divisor && !t.compute.is_floating();
        let fits = inputs
            && self.complete
            && !d.fallback
            && self.numel.wrapping_sub(1) < MAX_NUMEL
            && !divisor_scanned
            && self.numel * t.result.size() < parallel::stream_threshold();
        if !fits {
            return false;
        }
        if !parallel::is_serial(self.numel) {
            // Work for several threads runs here only when other callers leave this one a
            // single thread: the general path would find the same, after a plan.
            match parallel::serial_caller(self.numel) {
                Some(caller) => self._caller = Some(caller),
                None => return false,
            }
        }
        self.dtype = t.compute;
        true
    }

    /// The plan as [`compute`] walks it, once [`Plan::runs`] said yes.
    #[inline(always)]
    fn walk(&self) -> Walk<'_> {
        Walk {
            runs: self.runs,
            groups: self.groups,
            numel: self.numel,
            dtype: self.dtype,
        }
    }
}

impl Walk<'_> {
    /// The extent of group `g`.
    ///
    /// # Safety
    /// `g < self.groups`.
    #[inline(always)]
    unsafe fn extent(&self, g: usize) -> usize {
        // SAFETY: every group below `groups` was written before it was counted.
        unsafe { (*self.runs.as_ptr()).extent[g] }
    }

    /// The byte strides of `out`, `a` and `b` along group `g`.
    ///
    /// # Safety
    /// `g < self.groups`.
    #[inline(always)]
    unsafe fn strides(&self, g: usize) -> [isize; 3] {
        // SAFETY: as for `extent`.
        unsafe { (*self.runs.as_ptr()).strides[g] }
    }
}

impl DimSink for Plan<'_> {
    #[inline(always)]
    fn dim(&mut self, d: usize, da: usize, db: usize) {
        if d == 1 {
            return;
        }
        // An empty dimension leaves 0 (refused: rare, and sizes may then overflow together).
        self.numel = self.numel.saturating_mul(d);
        // Bit k set: input k is broadcast along this dimension (stride 0).
        let pattern = (da == 1) as u8 | ((db == 1) as u8) << 1;
        let runs = self.runs.as_mut_ptr();
        if pattern == self.last_pattern {
            // Continues the group inside it (there is one: the pattern is a group's): the
            // strides follow on.
            let g = self.groups - 1;
            // SAFETY: g < groups <= FAST_NDIM, and group g was written.
            unsafe {
                let e = addr_of_mut!((*runs).extent).cast::<usize>().add(g);
                e.write(e.read().wrapping_mul(d));
            }
        } else if self.groups < FAST_NDIM {
            let g = self.groups;
            // Element by element: an array built apart and copied in whole would be read with
            // wide loads straight after its narrow stores (a failed store forwarding).
            // SAFETY: g < FAST_NDIM: the group's extent and its three strides.
            unsafe {
                addr_of_mut!((*runs).extent).cast::<usize>().add(g).write(d);
                let s = addr_of_mut!((*runs).strides).cast::<isize>().add(3 * g);
                s.write(self.next[0]);
                s.add(1).write(if da == 1 { 0 } else { self.next[1] });
                s.add(2).write(if db == 1 { 0 } else { self.next[2] });
            }
            self.groups += 1;
            self.last_pattern = pattern;
        } else {
            self.numel = usize::MAX; // more groups than the plan holds
        }
        self.next[0] = self.next[0].wrapping_mul(d as isize);
        self.next[1] = self.next[1].wrapping_mul(da as isize);
        self.next[2] = self.next[2].wrapping_mul(db as isize);
    }

    #[inline(always)]
    fn done(&mut self) {
        self.complete = true;
    }
}

/// Calls `run(ptrs, byte_strides, len)` for every run along the innermost group, in row-major
/// order (once with length 1 when every dimension has size 1).
#[inline(always)]
fn walk(plan: &Walk<'_>, base: [*mut u8; 3], mut run: impl FnMut([*mut u8; 3], [isize; 3], usize)) {
    // SAFETY (every `extent` and `strides` below): of a group below `groups`.
    // One or two groups ((4,)+(4,), (3,1)+(1,3), (n,1024)+(1024,)) without the odometer.
    let (extent, strides) = match plan.groups {
        0 => return run(base, [0; 3], 1),
        _ => unsafe { (plan.extent(0), plan.strides(0)) },
    };
    match plan.groups {
        1 => return run(base, strides, extent),
        2 => {
            let mut ptrs = base;
            let (outer, step) = unsafe { (plan.extent(1), plan.strides(1)) };
            for _ in 0..outer {
                run(ptrs, strides, extent);
                for (p, s) in ptrs.iter_mut().zip(step) {
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
        run(ptrs, strides, extent);
        let mut g = 1;
        loop {
            if g == plan.groups {
                return;
            }
            index[g] += 1;
            let n = unsafe { plan.extent(g) };
            let back = if index[g] < n {
                1
            } else {
                index[g] = 0;
                1 - n as isize
            };
            for (p, s) in ptrs.iter_mut().zip(unsafe { plan.strides(g) }) {
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
/// [`Plan::runs`] said yes for these tensors' decision (or, for a new `out`, for `a` and `b`,
/// `out` being row-major of the decided shape); `a` and `b` have the plan's type (a number
/// input cast to it), and `out` the result type.
#[inline]
unsafe fn compute(op: BinaryOp, plan: &Walk<'_>, out: &Tensor, a: &Tensor, b: &Tensor) {
    let base = [out.data_ptr(), a.data_ptr(), b.data_ptr()];
    if plan.numel <= ELEMENTWISE_MAX {
        // The decision found a kernel for the type, so `visit` calls back.
        op.visit(plan.dtype, Elementwise(plan, base));
        return;
    }
    // The decision found a kernel for the type.
    let Some(kernel) = kernels::binary_kernel(op, plan.dtype) else {
        return;
    };
    walk(plan, base, |p, s, n| {
        // SAFETY: each run lies within the operands (the caller's contract).
        unsafe { kernel.run(p, s, n, false) }
    });
}

/// Every element of the plan with the operation's scalar function, for [`BinaryOp::visit`]:
/// built only by [`compute`], whose caller guarantees the pointers.
struct Elementwise<'a>(&'a Walk<'a>, [*mut u8; 3]);

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
unsafe fn elementwise<T: Elem, F: ElemFn<T>>(plan: &Walk<'_>, base: [*mut u8; 3]) {
    walk(plan, base, |[mut o, mut a, mut b], [so, sa, sb], n| {
        for _ in 0..n {
            // SAFETY: an element of a run of the plan, within each operand (the caller's
            // contract); `out` overlaps an input only exactly (the decision's overlap rule), so
            // it is written only where it is read first.
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

/// Whether the shortcut can take tensors `a` and `b` as they are: both of the computation type
/// (so none is converted, and no float32 number is read) and row-major.
#[inline(always)]
fn inputs_as_they_are(d: &BinaryDecision<'_>, a: &Tensor, b: &Tensor) -> bool {
    let compute = d.types.compute;
    a.dtype() == compute && b.dtype() == compute && a.is_row_major() && b.is_row_major()
}

/// The element sizes a plan for `a op b` strides by, for a result of the inputs' type or bool
/// (the only results the shortcut writes: inputs of the computation type).
#[inline(always)]
fn new_sizes(op: BinaryOp, input: DType, b: DType) -> [usize; 3] {
    let result = if op.rule().bool_result {
        DType::Bool
    } else {
        input
    };
    [result.size(), input.size(), b.size()]
}

/// The decision on `a op b` into `dest` with a plan built in its pass, the plan running it
/// when [`Plan::runs`] says so and `written` (the written tensor's tests: of the result type,
/// row-major) holds. `Err` is the decision's refusal.
#[inline(always)]
fn decide_and_plan<'a>(
    d: &mut BinaryDecision<'a>,
    plan: &mut Plan<'_>,
    op: BinaryOp,
    a: &'a Tensor,
    b: &'a Tensor,
    dest: Dest<'a, Tensor>,
    opts: Options,
) -> Result<bool> {
    ops::decide_in(d, op, a, b, dest, opts, true, plan)?;
    // Under the warning switch the general path runs (the shortcut's callers return no warnings).
    let written = !opts.broadcast_warning
        && match dest {
            Dest::New => true,
            Dest::InPlace => a.dtype() == d.types.result,
            Dest::Out(out) => out.dtype() == d.types.result && out.is_row_major(),
        };
    Ok(plan.runs(op, d, written && inputs_as_they_are(d, a, b)))
}

/// `a op b` in a new tensor built in `place`: `Ok(true)` when the shortcut ran (`place` is
/// then initialised), `Ok(false)` when the general path is to run decision `d`. Always
/// inlined: whether the compiler inlined it by itself depended on which codegen unit the
/// caller's module fell into (about 45 more instructions per tiny call when not).
#[inline(always)]
fn new_in<'a>(
    place: &mut MaybeUninit<Tensor>,
    d: &mut BinaryDecision<'a>,
    op: BinaryOp,
    a: &'a Tensor,
    b: &'a Tensor,
    opts: Options,
) -> Result<bool> {
    let mut runs = MaybeUninit::uninit();
    let mut plan = Plan::new(new_sizes(op, a.dtype(), b.dtype()), &mut runs);
    if !decide_and_plan(d, &mut plan, op, a, b, Dest::New, opts)? {
        return Ok(false);
    }
    let out = Tensor::new_in(place, d.types.result, &d.shape, Init::Uninit)?;
    // SAFETY: the plan runs this decision; `out` is new, row-major of the decided shape.
    unsafe { compute(op, &plan.walk(), out, a, b) };
    Ok(true)
}

/// `a op b` in a new tensor built in `place`: `place` is initialised exactly when this returns
/// `Some(Ok(()))`, so a caller that keeps the tensor there (a registry slot) copies nothing;
/// `None` when the general path is to make the result ([`binary`] then decides again: the
/// caller's slot was only for this case). Always inlined (see [`new_in`]).
#[inline(always)]
pub fn binary_in(
    place: &mut MaybeUninit<Tensor>,
    op: BinaryOp,
    a: &Tensor,
    b: &Tensor,
    opts: Options,
) -> Option<Result<()>> {
    // The caller keeps no warnings of a result built here: the warning switch's call takes
    // the general path.
    if opts.broadcast_warning {
        return None;
    }
    let mut d = BinaryDecision::new();
    match new_in(place, &mut d, op, a, b, opts) {
        Ok(true) => Some(Ok(())),
        Ok(false) => None,
        Err(e) => Some(Err(e)),
    }
}

/// `a op b` in a new tensor: the decision, then the shortcut or the general path. Inlined, so
/// that a result is handed to the caller in registers rather than through memory.
#[inline]
pub fn binary(op: BinaryOp, a: &Tensor, b: &Tensor, opts: Options) -> Result<(Tensor, Warnings)> {
    let mut place = MaybeUninit::uninit();
    let mut d = BinaryDecision::new();
    if new_in(&mut place, &mut d, op, a, b, opts)? {
        // SAFETY: `new_in` ran the shortcut, so it initialised `place`.
        return Ok((unsafe { place.assume_init() }, Warnings::new()));
    }
    ops::binary_decided(op, a, b, d)
}

/// The decision on `a op b` into `out` (`dest`: `Dest::Out(out)`, or `Dest::InPlace` with
/// `out` being `a`), then the shortcut when it runs it (`Ok(true)`).
#[inline(always)]
fn written_in<'a>(
    d: &mut BinaryDecision<'a>,
    op: BinaryOp,
    a: &'a Tensor,
    b: &'a Tensor,
    out: &'a Tensor,
    dest: Dest<'a, Tensor>,
    opts: Options,
) -> Result<bool> {
    let mut runs = MaybeUninit::uninit();
    let mut plan = Plan::new(
        [out.dtype().size(), a.dtype().size(), b.dtype().size()],
        &mut runs,
    );
    if !decide_and_plan(d, &mut plan, op, a, b, dest, opts)? {
        return Ok(false);
    }
    // SAFETY: the plan runs this decision for these tensors.
    unsafe { compute(op, &plan.walk(), out, a, b) };
    Ok(true)
}

/// `a op b` into `out`: the decision, then the shortcut or the general path.
#[inline]
pub fn binary_out(
    op: BinaryOp,
    a: &Tensor,
    b: &Tensor,
    out: &Tensor,
    opts: Options,
) -> Result<Warnings> {
    let mut d = BinaryDecision::new();
    if written_in(&mut d, op, a, b, out, Dest::Out(out), opts)? {
        return Ok(Warnings::new());
    }
    ops::binary_out_decided(op, a, b, out, d)
}

/// `self_ op= other`: the decision, then the shortcut or the general path.
#[inline]
pub fn binary_inplace(
    op: BinaryOp,
    self_: &Tensor,
    other: &Tensor,
    opts: Options,
) -> Result<Warnings> {
    let mut d = BinaryDecision::new();
    if written_in(&mut d, op, self_, other, self_, Dest::InPlace, opts)? {
        return Ok(Warnings::new());
    }
    ops::binary_inplace_decided(op, self_, other, d)
}

/// The decision on `a op b` into `dest`, one of them `t` and the other `wrapped` (a wrapped
/// number), with a plan built in its pass, the plan running it when [`Plan::runs`] says so and
/// the shortcut can take the operands as the general path would run them: `t` of the
/// computation type and row-major (and, in place, of the result type), the number cast to that
/// type first when it has another, but not under the float16/bfloat16 rule that reads a number
/// second at float32's precision ([`ops::reads_scalar_in_f32`]). `Err` is the decision's refusal.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn decide_and_plan_number<'a>(
    d: &mut BinaryDecision<'a>,
    plan: &mut Plan<'_>,
    op: BinaryOp,
    t: &Tensor,
    a: &'a Tensor,
    b: &'a Tensor,
    dest: Dest<'a, Tensor>,
    opts: Options,
) -> Result<bool> {
    ops::decide_in(d, op, a, b, dest, opts, true, plan)?;
    let compute = d.types.compute;
    // Under the warning switch the general path runs (the shortcut's callers return no warnings).
    let written = !opts.broadcast_warning
        && match dest {
            Dest::InPlace => t.dtype() == d.types.result,
            _ => true,
        };
    let inputs = written
        && t.dtype() == compute
        && t.is_row_major()
        && !ops::reads_scalar_in_f32(op.rule(), compute, a.dtype(), b.dtype(), b.numel());
    Ok(plan.runs(op, d, inputs))
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
/// `wrapped` being `s`'s wrapped number: the decision, then the shortcut or the general path.
/// `pow` has its own rules for a number ([`ops::binary_wrapped`]).
fn binary_wrapped(
    op: BinaryOp,
    t: &Tensor,
    s: Scalar,
    wrapped: &Tensor,
    number_first: bool,
    opts: Options,
) -> Result<(Tensor, Warnings)> {
    if op == BinaryOp::Pow {
        return ops::binary_wrapped(op, t, wrapped, s, number_first, opts);
    }
    let (a, b) = if number_first {
        (wrapped, t)
    } else {
        (t, wrapped)
    };
    let mut d = BinaryDecision::new();
    let mut runs = MaybeUninit::uninit();
    let mut plan = Plan::new(new_sizes(op, t.dtype(), t.dtype()), &mut runs);
    if !decide_and_plan_number(&mut d, &mut plan, op, t, a, b, Dest::New, opts)? {
        return ops::binary_decided(op, a, b, d);
    }
    let n = cast_number(wrapped, t.dtype())?;
    let n = n.as_ref().unwrap_or(wrapped);
    let out = Tensor::new(d.types.result, &d.shape, Init::Uninit)?;
    let (a, b) = if number_first { (n, t) } else { (t, n) };
    // SAFETY: the plan runs this decision, for `t` and the number cast to its type; `out` is
    // new, row-major of the decided shape.
    unsafe { compute(op, &plan.walk(), &out, a, b) };
    Ok((out, Warnings::new()))
}

/// [`ops::binary_number`], deciding once and taking the shortcut when it applies.
pub fn binary_number(
    op: BinaryOp,
    t: &Tensor,
    s: Scalar,
    number_first: bool,
    opts: Options,
) -> Result<(Tensor, Warnings)> {
    let (op, number_first) = ops::python_order(op, s, number_first, false)?;
    let wrapped = Tensor::wrapped_number(s)?;
    binary_wrapped(op, t, s, &wrapped, number_first, opts)
}

/// `t op= s` for a number, as [`binary_wrapped`].
fn binary_wrapped_inplace(
    op: BinaryOp,
    t: &Tensor,
    s: Scalar,
    wrapped: &Tensor,
    opts: Options,
) -> Result<Warnings> {
    if op == BinaryOp::Pow {
        return ops::binary_wrapped_inplace(op, t, wrapped, s, opts);
    }
    let mut d = BinaryDecision::new();
    let mut runs = MaybeUninit::uninit();
    let mut plan = Plan::new([t.dtype().size(); 3], &mut runs);
    let dest = Dest::InPlace;
    if !decide_and_plan_number(&mut d, &mut plan, op, t, t, wrapped, dest, opts)? {
        return ops::binary_inplace_decided(op, t, wrapped, d);
    }
    let n = cast_number(wrapped, t.dtype())?;
    // SAFETY: the plan runs this decision for `t` into itself and the number cast to its type,
    // which is apart from it.
    unsafe { compute(op, &plan.walk(), t, t, n.as_ref().unwrap_or(wrapped)) };
    Ok(Warnings::new())
}

/// [`ops::binary_number_inplace`], deciding once and taking the shortcut when it applies.
pub fn binary_number_inplace(
    op: BinaryOp,
    t: &Tensor,
    s: Scalar,
    opts: Options,
) -> Result<Warnings> {
    let (op, _) = ops::python_order(op, s, false, true)?;
    let wrapped = Tensor::wrapped_number(s)?;
    binary_wrapped_inplace(op, t, s, &wrapped, opts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::binary_ops::Compute;

    /// `a op b` in a new tensor when the shortcut runs it, as [`binary`] runs it.
    fn try_binary(op: BinaryOp, a: &Tensor, b: &Tensor, opts: Options) -> Option<Result<Tensor>> {
        let mut place = MaybeUninit::uninit();
        let mut d = BinaryDecision::new();
        match new_in(&mut place, &mut d, op, a, b, opts) {
            // SAFETY: the shortcut ran, so `place` is initialised.
            Ok(true) => Some(Ok(unsafe { place.assume_init() })),
            _ => None,
        }
    }

    /// `a op b` into `out` when the shortcut runs it, as [`binary_out`] runs it.
    fn try_binary_out(
        op: BinaryOp,
        a: &Tensor,
        b: &Tensor,
        out: &Tensor,
        opts: Options,
    ) -> Option<()> {
        let mut d = BinaryDecision::new();
        let ran = written_in(&mut d, op, a, b, out, Dest::Out(out), opts);
        ran.ok()?.then_some(())
    }

    /// Whether the shortcut runs `t op s` (`number_first`: `s op t`) in a new tensor, or in
    /// place (`inplace`), as [`binary_number`] and [`binary_number_inplace`] decide it.
    fn number_taken(
        op: BinaryOp,
        t: &Tensor,
        wrapped: &Tensor,
        number_first: bool,
        inplace: bool,
        opts: Options,
    ) -> bool {
        if op == BinaryOp::Pow {
            return false;
        }
        let (a, b) = if number_first {
            (wrapped, t)
        } else {
            (t, wrapped)
        };
        let mut runs = MaybeUninit::uninit();
        let (mut d, mut plan) = (
            BinaryDecision::new(),
            Plan::new([t.dtype().size(); 3], &mut runs),
        );
        let dest = if inplace { Dest::InPlace } else { Dest::New };
        decide_and_plan_number(&mut d, &mut plan, op, t, a, b, dest, opts) == Ok(true)
    }

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
                                let taken = number_taken(op, &t, &wrapped, first, false, opts);
                                new_taken += taken as usize;
                            }
                            let key = |r: &(Tensor, Warnings)| bytes(&r.0);
                            let got = binary_number(op, &t, s, first, opts);
                            let want = ops::binary_number(op, &t, s, first, opts);
                            assert_eq!(outcome(&got, key), outcome(&want, key), "new: {what}");
                        }
                        let what = format!("in place: {op:?} {dtype:?} {shape:?} {s:?}");
                        if let Ok((op, _)) = ops::python_order(op, s, false, true) {
                            let probe = t.to_contiguous(dtype).unwrap();
                            let taken = number_taken(op, &probe, &wrapped, false, true, opts);
                            inplace_taken += taken as usize;
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
