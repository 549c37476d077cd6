//! Running a reduction: each unit of work accumulates its range of rows on some thread, and the
//! ranges' totals combine pairwise into the outputs.

use super::cut::{row_strides, work, Cut, Work};
use super::lanes::{fold_lanes, Lanes, LEAF};
use super::reducer::Reducer;
use super::scratch::Scratch;
use super::source::{Source, StreamSink, TileSink};
use crate::engine::alloc::{try_small_elem, try_vec};
use crate::engine::error::Result;
use crate::engine::iter::Iter;
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

/// Where one group's outputs are: the first one's index (row-major over the kept dimensions,
/// which is its place in `out`), how many there are, and their stride in `out` (columns only).
struct Place {
    first: usize,
    w: usize,
    out_stride: isize,
}

fn place(kept: &[usize], cut: &Cut, out_st: &[isize], group: usize) -> Place {
    match cut.col {
        None => Place {
            first: group,
            w: 1,
            out_stride: 0,
        },
        Some(col) => {
            // `group` counts column blocks within the other kept dimensions, row-major.
            let blocks = kept[col].div_ceil(cut.w);
            let (mut outer, c0) = (group / blocks, group % blocks * cut.w);
            let mut first = 0;
            for d in (0..kept.len()).rev() {
                let i = if d == col {
                    c0
                } else {
                    let i = outer % kept[d];
                    outer /= kept[d];
                    i
                };
                first += i * out_st[d] as usize;
            }
            Place {
                first,
                w: cut.w.min(kept[col] - c0),
                out_stride: out_st[col],
            }
        }
    }
}

/// Runs the reduction iterated by `it` ([`Iter::with_reduced`]) over `src` into `out` (row-major,
/// the kept shape).
pub(super) fn execute<R: Reducer, const N: usize>(
    it: &Iter<N>,
    src: &impl Source<N, T = R::In>,
    out: &Tensor,
    mean: bool,
) -> Result<()> {
    let Work {
        cut,
        units,
        work,
        threads,
    } = work(it, size_of::<R::Acc>());
    let kept = it.kept_shape();
    // Totals of each range when a group has several, combined afterwards in range order.
    let mut partial: Vec<R::Acc> = Vec::new();
    if cut.ranges > 1 {
        let len = cut.groups * cut.ranges * cut.w;
        partial = try_vec(len)?;
        partial.resize(len, R::identity());
    }
    // Row-major strides of the kept dimensions in `out`, in elements.
    let mut out_st: Strides = try_small_elem(1, kept.len())?;
    for d in (0..kept.len().saturating_sub(1)).rev() {
        out_st[d] = out_st[d + 1] * kept[d + 1] as isize;
    }
    let outputs = |at: &Place, total: &mut [R::Acc], out: *mut R::Out| {
        let finish = |a| R::finish(a, cut.n, mean);
        let first = at.first as isize;
        // SAFETY (both): the group's outputs lie within `out`.
        match cut.col {
            None => unsafe { out.offset(first).write(finish(fold_lanes::<R>(total))) },
            Some(_) => {
                for (j, &t) in total[..at.w].iter().enumerate() {
                    unsafe {
                        out.offset(first + j as isize * at.out_stride)
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
    let stage_len = src
        .stage_bytes(row_strides(it, &cut, src.itemsize()))
        .div_ceil(8);
    let scratch = Scratch::<R::Acc>::new(threads, lanes_len, stage_len)?;
    let body = |lo: usize, hi: usize| {
        let mut slot = scratch.claim();
        // The accumulators: on the stack when they fit, else in the slot.
        let mut stack = [MaybeUninit::<R::Acc>::uninit(); 3 * STACK_LANES];
        let (heap, stage) = slot.parts();
        let space: &mut [MaybeUninit<R::Acc>] = if lanes_len == 0 { &mut stack } else { heap };
        for unit in lo..hi {
            let (group, range) = (unit / cut.ranges, unit % cut.ranges);
            let at = place(kept, &cut, &out_st, group);
            let mut lanes = Lanes::<R>::new(space, cut.w);
            let r0 = range * cut.range_rows;
            let r1 = (r0 + cut.range_rows).min(cut.rows);
            // SAFETY: the iterator covers exactly the operands' elements.
            unsafe { accumulate_on(simd, it, &cut, src, &at, r0..r1, &mut lanes, stage) };
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
                &place(kept, &cut, &out_st, group),
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
unsafe fn accumulate_on<R: Reducer, S: Source<N, T = R::In>, const N: usize>(
    level: kernels::SimdLevel,
    it: &Iter<N>,
    cut: &Cut,
    src: &S,
    at: &Place,
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
            it: &Iter<N>,
            cut: &Cut,
            src: &impl Source<N, T = R::In>,
            at: &Place,
            rows: std::ops::Range<usize>,
            lanes: &mut Lanes<R>,
            stage: &mut [MaybeUninit<u64>],
        ) {
            // SAFETY: the caller's contract.
            unsafe { accumulate(it, cut, src, at, rows, lanes, stage) }
        }
        if level == kernels::SimdLevel::Avx2 {
            // SAFETY: the CPU has AVX2 (the caller's contract); the rest is forwarded.
            return unsafe { avx2(it, cut, src, at, rows, lanes, stage) };
        }
    }
    let _ = level;
    assert!(!S::AVX2_ONLY, "a source read only with AVX2");
    // SAFETY: forwarded.
    unsafe { accumulate(it, cut, src, at, rows, lanes, stage) }
}

/// Feeds rows `rows` of one group into `lanes`.
///
/// # Safety
/// `it` must iterate the operands of `src` (every offset it forms addresses an element).
#[inline(always)]
unsafe fn accumulate<R: Reducer, const N: usize>(
    it: &Iter<N>,
    cut: &Cut,
    src: &impl Source<N, T = R::In>,
    at: &Place,
    rows: std::ops::Range<usize>,
    lanes: &mut Lanes<R>,
    stage: &mut [MaybeUninit<u64>],
) {
    // The iterator walked from null pointers: its pointers are the operands' byte offsets. The
    // walk hands out its runs to this loop (no closure), so that the lanes' loops are compiled
    // into it, for this clone's instructions.
    let (from, itemsize) = ([std::ptr::null_mut::<u8>(); N], [src.itemsize(); N]);
    // The group's first output's elements start here in row-major order over the iterator.
    let first = at.first * cut.n;
    match cut.col {
        None => {
            // Stream elements [p0, p1) of one output, in runs along the innermost dimension.
            let (p0, p1) = (rows.start * cut.w, (rows.end * cut.w).min(cut.n));
            let mut walk = it.run_walk(from, itemsize, first + p0, first + p1);
            let mut sink = StreamSink { lanes, lane: 0 };
            while let Some((p, st, len)) = walk.next_run() {
                // SAFETY: the caller's contract.
                unsafe { src.tile(&[offsets(p)], st, len, stage, &mut sink) };
            }
        }
        Some(col) => {
            // Rows are the group's columns at one reduced index (each element of the first
            // column's stream starts one), taken a leaf at a time.
            let st = std::array::from_fn(|k| it.stride(k, col) * itemsize[k] as isize);
            let mut walk = it.run_walk(from, itemsize, first + rows.start, first + rows.end);
            // The next row's offsets, the step to the one after, and rows left in this run.
            let (mut next, mut step, mut left) = ([0isize; N], [0isize; N], 0);
            let mut offs = [[0isize; N]; LEAF];
            let mut r = rows.start;
            while r < rows.end {
                let k = (LEAF - lanes.rows).min(rows.end - r);
                for off in &mut offs[..k] {
                    if left == 0 {
                        let (p, s, len) = walk.next_run().expect("a run for every row");
                        (next, step, left) = (offsets(p), s, len);
                    }
                    *off = next;
                    next = std::array::from_fn(|q| next[q] + step[q]);
                    left -= 1;
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

/// The byte offsets a walk from null pointers stands at.
#[inline(always)]
fn offsets<const N: usize>(p: [*mut u8; N]) -> [isize; N] {
    std::array::from_fn(|k| p[k] as isize)
}
