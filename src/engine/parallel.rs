//! Splitting a plan's elements across threads. Work below a threshold stays on the calling
//! thread; above it, each thread takes one contiguous range of the plan's row-major order, so the
//! result is the same whatever the thread count (each element is computed by the same kernel).
use super::plan::Plan;
use std::sync::atomic::{AtomicUsize, Ordering};

/// 0 means "all available cores".
static NUM_THREADS: AtomicUsize = AtomicUsize::new(0);
/// Below this many elements, work stays on the calling thread.
pub const DEFAULT_THRESHOLD: usize = 1 << 18;
static THRESHOLD: AtomicUsize = AtomicUsize::new(DEFAULT_THRESHOLD);

pub fn set_num_threads(n: usize) {
    NUM_THREADS.store(n, Ordering::Relaxed);
}

/// The thread count in force (never 0).
pub fn num_threads() -> usize {
    match NUM_THREADS.load(Ordering::Relaxed) {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    }
}

pub fn set_threshold(elements: usize) {
    THRESHOLD.store(elements, Ordering::Relaxed);
}

pub fn threshold() -> usize {
    THRESHOLD.load(Ordering::Relaxed)
}

/// Raw pointers that may cross to worker threads: each thread writes a disjoint range.
#[derive(Clone, Copy)]
struct SendPtrs<const N: usize>([*mut u8; N]);
// SAFETY: the ranges given to the threads are disjoint, and the plan's validity contract (the
// caller's) covers every element; the pointers are only used inside the scope.
unsafe impl<const N: usize> Send for SendPtrs<N> {}
// SAFETY: as above.
unsafe impl<const N: usize> Sync for SendPtrs<N> {}

/// Runs `kernel` over every run of the plan, on one or more threads.
///
/// `kernel(ptrs, byte_strides, len)` must be sound for every run of the plan from `base`.
pub fn run<const N: usize>(
    plan: &Plan<N>,
    base: [*mut u8; N],
    itemsize: [usize; N],
    kernel: impl Fn([*mut u8; N], [isize; N], usize) + Sync,
) {
    let numel = plan.numel;
    let threads = num_threads().min(numel / threshold().max(1)).max(1);
    let base = SendPtrs(base);
    if threads == 1 {
        // SAFETY: the caller's contract: every element of the plan is addressable from base.
        unsafe { plan.for_each_run(base.0, itemsize, 0, numel, &mut |p, s, n| kernel(p, s, n)) };
        return;
    }
    let chunk = numel.div_ceil(threads);
    std::thread::scope(|scope| {
        for t in 1..threads {
            let kernel = &kernel;
            scope.spawn(move || {
                let (start, end) = (t * chunk, ((t + 1) * chunk).min(numel));
                let base = base;
                // SAFETY: as above; the ranges of the threads are disjoint.
                unsafe {
                    plan.for_each_run(base.0, itemsize, start, end, &mut |p, s, n| kernel(p, s, n))
                };
            });
        }
        // SAFETY: as above.
        unsafe {
            plan.for_each_run(base.0, itemsize, 0, chunk.min(numel), &mut |p, s, n| {
                kernel(p, s, n)
            })
        };
    });
}
