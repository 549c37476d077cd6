//! Where the elements come from: a view's own, or `a op b` computed as it is read; handed to the
//! lanes a tile of rows at a time.

use super::lanes::{Lanes, Mode, Pack, Pair, Select, LEAF};
use super::reducer::Reducer;
use crate::engine::binary_ops::{BinaryOp, ElemFn, Visit};
use crate::engine::dtype::DType;
use crate::engine::elem::{Elem, Float};
use crate::engine::expr::{Runs, Tail, TailOp};
use crate::engine::kernels;
use std::marker::PhantomData;
use std::mem::{size_of, MaybeUninit};

/// Receives what a [`Source`] hands out: rows of `K` operands, an element of a row being
/// `f([operand elements])`.
pub(super) trait Sink {
    type In: Elem;
    /// The next `n` columns of each row of `rows` (row `r`'s operand `k` at `rows[r][k]`, byte
    /// stride `es[k]`, read as `P` says), combined by `f`.
    ///
    /// # Safety
    /// The elements must be readable.
    unsafe fn take<P: Pack<K>, const K: usize>(
        &mut self,
        rows: &[[*const u8; K]],
        es: [isize; K],
        n: usize,
        f: impl Fn(P) -> Self::In + Copy,
    );
}

/// The elements of a reduction: read from a view, or computed on the way.
pub(super) trait Source<const N: usize>: Sync {
    type T: Elem;

    /// Bytes of each operand's elements as they are read (the iterator's strides are in them).
    fn itemsize(&self) -> usize;

    /// Whether the source is only read through the AVX2 clone of the reductions' loops (no
    /// other clone is compiled for it; its user checks the CPU first).
    const AVX2_ONLY: bool = false;

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

/// A view's own elements; or, with `runs`, an expression's result computed as it is read: each
/// piece of rows is computed into the stage by the expression's own fused pass (the same bits as
/// `bc_expr_eval` writes) and handed out as the view of the stage, so the summation order is that
/// of reducing the result as `bc_expr_eval` lays it out (offsets and strides are then in the
/// result's layout, from 0). One source type for both, so that the reductions' loops are compiled
/// once for both.
pub(super) struct View<'r, T> {
    pub(super) base: *mut u8,
    pub(super) runs: Option<&'r Runs<'r>>,
    pub(super) elem: PhantomData<T>,
}

// SAFETY: the view is only read, and its tensor (or the expression's inputs) outlive the
// reduction.
unsafe impl<T> Sync for View<'_, T> {}

/// Bytes of the stage an expression's result is computed into: pieces this long make the
/// per-piece cost of the expression's pass (its kernels' calls) small; the stage stays within
/// the second-level cache.
const EXPR_STAGE_BYTES: usize = 64 * 1024;

impl<T: Elem> Source<1> for View<'_, T> {
    type T = T;

    fn itemsize(&self) -> usize {
        size_of::<T>()
    }

    fn stage_bytes(&self, _st: [isize; 1]) -> usize {
        match self.runs {
            Some(_) => EXPR_STAGE_BYTES,
            None => 0,
        }
    }

    #[inline(always)]
    unsafe fn tile(
        &self,
        offs: &[[isize; 1]],
        st: [isize; 1],
        n: usize,
        stage: &mut [MaybeUninit<u64>],
        sink: &mut impl Sink<In = T>,
    ) {
        let (k, size) = (offs.len(), size_of::<T>());
        let cols = EXPR_STAGE_BYTES / size / k;
        let base = stage.as_mut_ptr() as *mut u8;
        let mut done = 0;
        // One call of the sink (for a view, the only one): its loops are inlined once.
        loop {
            let (rows, es, len) = match self.runs {
                None => (row_pointers([self.base], offs), st, n),
                Some(runs) => {
                    let len = cols.min(n - done);
                    // Offsets and strides in the result's layout, in elements (never negative:
                    // the layout is dense).
                    let step = st[0] as usize / size;
                    let mut rows = [[std::ptr::null::<u8>(); 1]; LEAF];
                    for (r, off) in offs.iter().enumerate() {
                        let v = off[0] as usize / size + done * step;
                        let dst = base.wrapping_add(r * cols * size);
                        // SAFETY: row r of the stage holds `cols` elements; the positions are
                        // the caller's.
                        unsafe { runs.compute(v, step, len, dst) };
                        rows[r][0] = dst;
                    }
                    (rows, [size as isize], len)
                }
            };
            // SAFETY: the caller's contract (or just written).
            unsafe { sink.take(&rows[..k], es, len, |[x]: [T; 1]| x) };
            done += len;
            if done >= n {
                break;
            }
        }
    }
}

/// An expression's result whose last operation the reduction computes as it reads the
/// operation's operands ([`Runs::take_tail`]): the operands the pass reads (inputs, operations
/// computed first, constants) straight from memory, and at most one computed by the pass into
/// the stage a piece of rows at a time. The elements are those [`View`] would hand out (the
/// operation's own formula on the same operands), in the same order, so the sums are the same
/// bits but for a NaN's sign and payload (the loops are compiled apart from the kernels').
pub(super) struct Tailed<'r, T> {
    pub(super) runs: &'r Runs<'r>,
    pub(super) elem: PhantomData<T>,
}

// SAFETY: as for `View`.
unsafe impl<T> Sync for Tailed<'_, T> {}

impl<T: Float> Tailed<'_, T> {
    fn tail(&self) -> Tail {
        *self.runs.tail().expect("a tail taken")
    }

    /// [`Source::tile`] for a tail of `K` operands read as `P` and combined by `f`.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn tile_with<P: Pack<K>, const K: usize>(
        &self,
        offs: &[[isize; 1]],
        st: [isize; 1],
        n: usize,
        stage: &mut [MaybeUninit<u64>],
        sink: &mut impl Sink<In = T>,
        f: impl Fn(P) -> T + Copy,
    ) {
        let (k, size) = (offs.len(), size_of::<T>());
        let staged = self.tail().staged();
        let cols = staged.map_or(n, |(ss, _)| EXPR_STAGE_BYTES / ss / k);
        let base = stage.as_mut_ptr() as *mut u8;
        // Offsets and strides in the result's layout, in elements (never negative).
        let step = st[0] as usize / size;
        let at = |r: usize, i: usize| offs[r][0] as usize / size + i * step;
        let mut done = 0;
        while done < n {
            let len = cols.min(n - done);
            if let Some((ss, _)) = staged {
                for r in 0..k {
                    // SAFETY: row r of the stage holds `cols` elements of `ss` bytes; the
                    // positions are the caller's.
                    unsafe {
                        self.runs
                            .compute(at(r, done), step, len, base.wrapping_add(r * cols * ss))
                    };
                }
            }
            // In pieces along which every row's operands have one stride.
            let mut j = 0;
            while j < len {
                let mut m = len - j;
                let mut rows = [[std::ptr::null::<u8>(); K]; LEAF];
                let mut es = [0isize; K];
                for (r, row) in rows.iter_mut().enumerate().take(k) {
                    m = self.runs.locate(at(r, done + j), step, m, row, &mut es);
                    if let Some((ss, pos)) = staged {
                        row[pos] = base.wrapping_add((r * cols + j) * ss);
                        es[pos] = ss as isize;
                    }
                }
                // SAFETY: within the operands (located) or the stage (just written).
                unsafe { sink.take(&rows[..k], es, m, f) };
                j += m;
            }
            done += len;
        }
    }
}

impl<T: Float> Source<1> for Tailed<'_, T> {
    type T = T;
    // (For the size budget.)
    const AVX2_ONLY: bool = true;

    fn itemsize(&self) -> usize {
        // Positions in the expression's result layout, as `View` of the same runs reads them.
        size_of::<T>()
    }

    fn stage_bytes(&self, _st: [isize; 1]) -> usize {
        match self.tail().staged() {
            Some(_) => EXPR_STAGE_BYTES,
            None => 0,
        }
    }

    #[inline(always)]
    unsafe fn tile(
        &self,
        offs: &[[isize; 1]],
        st: [isize; 1],
        n: usize,
        stage: &mut [MaybeUninit<u64>],
        sink: &mut impl Sink<In = T>,
    ) {
        // SAFETY (both): forwarded.
        match self.tail().op {
            TailOp::Where => unsafe {
                self.tile_with(
                    offs,
                    st,
                    n,
                    stage,
                    sink,
                    |Select(c, x, y): Select<T>| {
                        if c != 0 {
                            x
                        } else {
                            y
                        }
                    },
                )
            },
            // (Only a square of a difference, never a square alone: each tail is a set of
            // loops per type and reduction, within the library's size budget.)
            TailOp::Square | TailOp::SquareOf(_) => unsafe {
                self.tile_with(offs, st, n, stage, sink, |Pair(x, y): Pair<T>| {
                    let d = x.sub(y);
                    d.mul(d)
                })
            },
        }
    }
}

/// `a op b`, summed as elements of the result type `T`, from operands of the computation type.
/// Operands that are contiguous or repeated along the rows are combined as they are read, with
/// the scalar function the elementwise kernel applies to each element (so the elements are the
/// same bits as `bc_binary`'s); others, and a second operand read in float32, are first computed
/// into the stage, a piece of rows at a time, by the elementwise kernel itself (on the same code
/// path).
pub(super) struct Fused<T> {
    pub(super) base: [*mut u8; 2],
    pub(super) op: BinaryOp,
    /// The operands' type (the operation's computation type).
    pub(super) compute: DType,
    /// The second operand as `bc_binary` reads it in float32 (a one-element operand of another
    /// type with a float16 or bfloat16 result), when it does: then the first operand is widened,
    /// the operation done in float32, and the result rounded once.
    pub(super) scalar: Option<f32>,
    /// The elementwise kernel's code path, chosen once (as `binary_run` does per call).
    pub(super) simd: kernels::SimdLevel,
    pub(super) elem: PhantomData<T>,
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

    fn itemsize(&self) -> usize {
        self.compute.size()
    }

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

    // Inlined, so that the pairs whose result is not the sink's type leave no function behind
    // (thousands of empty ones, each a symbol); the work itself is `Direct::take`'s.
    #[inline(always)]
    fn visit<C: Elem, F: ElemFn<C>>(self) {
        // Only where the function gives the sink's type (always, as the result type comes from
        // the same table): other pairs are never compiled, since the condition is a constant.
        if SameElem::<F::Out, S::In>::YES {
            self.take::<C, F>();
        }
    }
}

impl<S: Sink> Direct<'_, S> {
    // Not inlined: each operation's loops keep a frame of their own (inlined into one function
    // with every other operation's, unoptimised builds overflow the stack).
    #[inline(never)]
    fn take<C: Elem, F: ElemFn<C>>(self) {
        // SAFETY: a `Direct` is only built from `Fused::tile`'s contract.
        unsafe {
            self.sink
                .take(self.rows, self.st, self.n, |[x, y]: [C; 2]| {
                    same::<F::Out, S::In>(F::call(x, y))
                })
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
pub(super) struct StreamSink<'l, 's, R: Reducer> {
    pub(super) lanes: &'l mut Lanes<'s, R>,
    /// The lane the next element goes to.
    pub(super) lane: usize,
}

impl<R: Reducer> Sink for StreamSink<'_, '_, R> {
    type In = R::In;

    #[inline(always)]
    unsafe fn take<P: Pack<K>, const K: usize>(
        &mut self,
        rows: &[[*const u8; K]],
        es: [isize; K],
        n: usize,
        f: impl Fn(P) -> R::In + Copy,
    ) {
        // SAFETY: the caller's contract.
        unsafe { self.lanes.feed(&mut self.lane, rows[0], es, n, f) }
    }
}

/// Adds a leaf's worth of rows across a group's columns.
pub(super) struct TileSink<'l, 's, R: Reducer> {
    pub(super) lanes: &'l mut Lanes<'s, R>,
    /// The column the next piece starts at.
    pub(super) j: usize,
}

impl<R: Reducer> Sink for TileSink<'_, '_, R> {
    type In = R::In;

    #[inline(always)]
    unsafe fn take<P: Pack<K>, const K: usize>(
        &mut self,
        rows: &[[*const u8; K]],
        es: [isize; K],
        n: usize,
        f: impl Fn(P) -> R::In + Copy,
    ) {
        // SAFETY: the caller's contract.
        unsafe { self.lanes.add_tile(self.j, rows, es, n, f) };
        self.j += n;
    }
}
