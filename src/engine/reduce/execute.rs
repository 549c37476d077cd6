//! Running a reduction: each unit of work accumulates its range of rows on some thread, and the
//! ranges' totals combine pairwise into the outputs.

use super::cut::{Cut, Work};
use super::geometry::{ReduceCursor, ReduceGeometry};
use super::lanes::{fold_lanes, Lanes, LEAF};
use super::reducer::Reducer;
use super::scratch::Scratch;
use super::source::{Source, StreamSink, TileSink};
use crate::engine::alloc::{try_small_elem, try_vec};
use crate::engine::error::Result;
use crate::engine::kernels;
use crate::engine::parallel;
use crate::engine::shape::Strides;
use crate::engine::tensor::Tensor;
use std::mem::{size_of, MaybeUninit};

/// Lanes whose accumulators live on the stack (those of streams, and of narrow column groups);
/// wider groups take theirs from the heap, once per chunk of work.
const STACK_LANES: usize = 128;

/// Raw pointers that cross to the worker threads; each unit writes its own elements.
#[derive(Clone, Copy)]
struct DisjointPtr<T>(*mut T);
// SAFETY: units write disjoint elements, and the memory outlives the parallel run.
unsafe impl<T> Send for DisjointPtr<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for DisjointPtr<T> {}

impl<T> DisjointPtr<T> {
    fn get(&self) -> *mut T {
        self.0
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

fn place<const N: usize>(
    g: &ReduceGeometry<N>,
    cut: &Cut,
    out_st: &[isize],
    group: usize,
) -> Place<N> {
    match cut.col {
        None => Place {
            base: ReduceCursor::at(&g.kept, &g.kept_st, group).off,
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
pub(super) fn execute<R: Reducer, const N: usize>(
    g: &ReduceGeometry<N>,
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
        DisjointPtr(out.data_ptr() as *mut R::Out),
        DisjointPtr(partial.as_mut_ptr()),
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
#[inline]
unsafe fn accumulate_on<R: Reducer, const N: usize>(
    level: kernels::SimdLevel,
    g: &ReduceGeometry<N>,
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
            g: &ReduceGeometry<N>,
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
    g: &ReduceGeometry<N>,
    cut: &Cut,
    src: &impl Source<N, T = R::In>,
    at: &Place<N>,
    rows: std::ops::Range<usize>,
    lanes: &mut Lanes<R>,
    stage: &mut [MaybeUninit<u64>],
) {
    let here = |c: &ReduceCursor<N>| std::array::from_fn(|k| at.base[k] + c.off[k]);
    match cut.col {
        None => {
            // Stream elements [p0, p1) of one output, in runs along the innermost dimension.
            let inner = g.red.len() - 1;
            let (len, st) = (g.red[inner], std::array::from_fn(|k| g.red_st[k][inner]));
            let (p0, p1) = (rows.start * cut.w, (rows.end * cut.w).min(g.n));
            let mut c = ReduceCursor::at(&g.red, &g.red_st, p0);
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
            let mut c = ReduceCursor::at(&g.red, &g.red_st, rows.start);
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
