//! Executing an iterator's walk: on the calling thread, or split across a persistent pool of
//! worker threads.
//!
//! Work below a threshold stays on the calling thread. Above it, the walk's work is cut into
//! chunks (ranges of row-major elements, or of tile rows for a tiled walk) that the calling thread
//! and the workers claim one by one; every element is computed by the same kernel whichever thread
//! takes it, so the result is the same whatever the thread count.
//!
//! The workers are started once, on first need, and wait between jobs: first spinning for a short
//! while (so that back-to-back operations start in well under a microsecond), then asleep on a
//! condition variable. A job never waits for a sleeping worker: the calling thread starts on the
//! chunks at once and a late worker takes only what is left.
//!
//! Whether a result is written with streaming (non-temporal) stores is [`super::stream`]'s
//! decision, made here once per call from what the call touches; never in place.
use super::iter::Iter;
use super::kernels::{self, Tile};
use super::stream;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// Most threads an operation runs on (the calling one included). More never pays for memory-bound
/// work, and each one is a persistent worker: the count a caller asks for is lowered to this.
pub const MAX_THREADS: usize = 64;

/// 0 means "all available cores".
static NUM_THREADS: AtomicUsize = AtomicUsize::new(0);
/// The machine's core count, read once (0 until then): asking the OS costs microseconds.
static AVAILABLE: AtomicUsize = AtomicUsize::new(0);
/// Below twice this many elements, work stays on the calling thread (each thread gets at least
/// this many).
pub const DEFAULT_THRESHOLD: usize = 1 << 15;
static THRESHOLD: AtomicUsize = AtomicUsize::new(DEFAULT_THRESHOLD);
/// Results below this many bytes are never streamed; see [`stream_threshold`].
static STREAM_BYTES: AtomicUsize = AtomicUsize::new(DEFAULT_STREAM_BYTES);
/// Below this a result is written as fast with ordinary stores, wherever it then goes: it fits
/// in the private caches the stores fill first.
const DEFAULT_STREAM_BYTES: usize = 2 << 20;

/// Sets the thread count (0: every available core); above [`MAX_THREADS`] it is lowered to that.
pub fn set_num_threads(n: usize) {
    NUM_THREADS.store(n.min(MAX_THREADS), Ordering::Relaxed);
}

/// The thread count in force (never 0, never above [`MAX_THREADS`]).
#[inline]
pub fn num_threads() -> usize {
    match NUM_THREADS.load(Ordering::Relaxed) {
        0 => available(),
        n => n,
    }
}

fn available() -> usize {
    match AVAILABLE.load(Ordering::Relaxed) {
        0 => {
            let n = cpu_count().clamp(1, MAX_THREADS);
            AVAILABLE.store(n, Ordering::Relaxed);
            n
        }
        n => n,
    }
}

/// The CPUs this process may run on, asked without allocating (std's `available_parallelism`
/// reads cgroup files into heap buffers, which would abort on the first large operation under
/// memory exhaustion). Like OpenMP runtimes, this counts the affinity mask and does not scale
/// down for a cgroup CPU quota.
#[cfg(target_os = "linux")]
fn cpu_count() -> usize {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; sched_getaffinity writes at most its size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0 {
            return libc::CPU_COUNT(&set).max(1) as usize;
        }
        // More CPUs than a cpu_set_t holds (1024): count the online ones.
        libc::sysconf(libc::_SC_NPROCESSORS_ONLN).max(1) as usize
    }
}

#[cfg(not(target_os = "linux"))]
fn cpu_count() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

pub fn set_threshold(elements: usize) {
    THRESHOLD.store(elements, Ordering::Relaxed);
}

#[inline]
pub fn threshold() -> usize {
    THRESHOLD.load(Ordering::Relaxed)
}

/// Whether work of `numel` elements runs on the calling thread alone (as [`threads_for`] says,
/// without its division).
#[inline]
pub fn is_serial(numel: usize) -> bool {
    numel < threshold().max(1).saturating_mul(2) || num_threads() == 1
}

/// Results below this many bytes are never streamed (2 MiB unless set): above it,
/// [`super::stream`] decides from what the call touches against the effective cache.
#[inline]
pub fn stream_threshold() -> usize {
    STREAM_BYTES.load(Ordering::Relaxed)
}

/// The size of the largest data (or unified) cache the calling CPU reports, 0 when unknown.
/// Linux: sysfs, read into stack buffers (this runs on a call's path and must not allocate).
#[cfg(target_os = "linux")]
pub(crate) fn last_level_cache_bytes() -> usize {
    let mut best = (0, 0); // (level, bytes)
    for index in 0..10u8 {
        let mut path = *b"/sys/devices/system/cpu/cpu0/cache/index0/\0\0\0\0\0\0";
        path[40] = b'0' + index;
        let read = |name: &[u8], buf: &mut [u8; 32]| -> Option<usize> {
            let mut p = path;
            p[42..42 + name.len()].copy_from_slice(name);
            read_small_file(&p, buf)
        };
        let mut buf = [0u8; 32];
        let Some(n) = read(b"type", &mut buf) else {
            break;
        };
        if buf[..n].starts_with(b"Instruction") {
            continue;
        }
        let level = read(b"level", &mut buf).and_then(|n| parse_cache_size(&buf[..n]));
        let size = read(b"size", &mut buf).and_then(|n| parse_cache_size(&buf[..n]));
        if let (Some(level), Some(size)) = (level, size) {
            if level >= best.0 {
                best = (level, size);
            }
        }
    }
    best.1
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn last_level_cache_bytes() -> usize {
    0
}

/// Reads at most `buf.len()` bytes of the file at the NUL-terminated `path`; `None` on any error.
#[cfg(target_os = "linux")]
fn read_small_file(path: &[u8], buf: &mut [u8; 32]) -> Option<usize> {
    // SAFETY: `path` is NUL-terminated; `read` writes at most `buf.len()` bytes into `buf`.
    unsafe {
        let fd = libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return None;
        }
        let n = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
        libc::close(fd);
        usize::try_from(n).ok()
    }
}

/// Parses sysfs cache text: a number with an optional `K`/`M`/`G` suffix and a trailing newline
/// ("32768K", "2M", "3"); `None` for anything else.
fn parse_cache_size(text: &[u8]) -> Option<usize> {
    let text = text.strip_suffix(b"\n").unwrap_or(text);
    let (digits, unit) = match text.last()? {
        b'K' => (&text[..text.len() - 1], 1 << 10),
        b'M' => (&text[..text.len() - 1], 1 << 20),
        b'G' => (&text[..text.len() - 1], 1 << 30),
        _ => (text, 1),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n = std::str::from_utf8(digits).ok()?.parse::<usize>().ok()?;
    n.checked_mul(unit)
}

/// Sets [`stream_threshold`] (`usize::MAX` turns streaming off; 0 restores the default).
pub fn set_stream_threshold(bytes: usize) {
    let bytes = if bytes == 0 {
        DEFAULT_STREAM_BYTES
    } else {
        bytes
    };
    STREAM_BYTES.store(bytes, Ordering::Relaxed);
}

/// How many threads (the calling one included) work on `numel` elements: each gets at least the
/// threshold's worth, up to the thread count in force.
pub fn threads_for(numel: usize) -> usize {
    num_threads().min(numel / threshold().max(1)).max(1)
}

/// Runs `kernel` over every run of the walk, on one or more threads.
///
/// `kernel(ptrs, byte_strides, len)` must be sound for every run of the walk from `base`.
/// Operand 0 is the written one.
pub fn run<const N: usize>(
    iter: &Iter<N>,
    base: [*mut u8; N],
    itemsize: [usize; N],
    kernel: impl Fn([*mut u8; N], [isize; N], usize) + Sync,
) {
    run_rows(iter, base, itemsize, |tile| tile.for_each_run(&kernel));
}

/// [`run`], giving `tile` a [`Tile`] of several runs at a time (a kernel with per-call setup,
/// such as a fused expression's stack buffers, then pays it once per tile rather than once per
/// run; the binary kernels transpose a transposed input in registers) and saying whether the
/// result streams past the cache.
pub(crate) fn run_rows<const N: usize>(
    iter: &Iter<N>,
    base: [*mut u8; N],
    itemsize: [usize; N],
    tile: impl Fn(&Tile<N>) + Sync,
) {
    let numel = iter.numel();
    if iter.is_small() {
        // Small work: run by run on this thread, never tiled, shared or streamed.
        // SAFETY: the caller's contract: every element of the walk is addressable from base.
        unsafe {
            iter.for_each_run(base, itemsize, 0, numel, &mut |p, s, n| {
                tile(&Tile::run(p, s, n))
            })
        };
        return;
    }
    if numel == 0 {
        return;
    }
    let in_place = (1..N).any(|k| base[k] == base[0]);
    let stream = decide_stream(iter, base, itemsize, in_place);
    // Work worth several threads counts this caller as computing meanwhile, and takes only the
    // threads that other callers computing at the same time leave free.
    let mut threads = threads_for(numel);
    let _caller = (threads > 1).then(|| {
        let caller;
        (caller, threads) = Caller::take(threads);
        caller
    });
    let tiling = iter.tiling(itemsize);
    let base = SendPtrs(base);
    // Work units: tile rows for a tiled walk, else elements in row-major order.
    let (units, align) = match &tiling {
        Some(t) => (t.units, 1),
        None => {
            let inner = iter.shape().last().copied().unwrap_or(1);
            (numel, inner)
        }
    };
    let body = |lo: usize, hi: usize| {
        let each = &mut |ptrs, strides, row_strides, rows, len| {
            tile(&Tile {
                ptrs,
                strides,
                row_strides,
                rows,
                len,
                stream,
            })
        };
        // SAFETY: the caller's contract: every element of the walk is addressable from base;
        // the ranges given to different threads are disjoint.
        unsafe {
            match &tiling {
                Some(t) => iter.for_each_tile(base.get(), itemsize, t, lo, hi, each),
                None => iter.for_each_block(base.get(), itemsize, lo, hi, each),
            }
        }
        if stream {
            // The streamed stores are visible before the range is reported done.
            kernels::store_fence();
        }
    };
    if threads == 1 {
        if numel < SMALL_ELEMS && tiling.is_none() {
            // Small work: run by run, without blocks of rows (their setup costs more than the few
            // per-run calls it would save), never streamed at this size.
            // SAFETY: the caller's contract: every element of the walk is addressable from base.
            unsafe {
                iter.for_each_run(base.get(), itemsize, 0, numel, &mut |p, s, n| {
                    tile(&Tile::run(p, s, n))
                })
            };
        } else {
            body(0, units);
        }
        return;
    }
    let grain = match &tiling {
        Some(_) => 1,
        None if align <= units / threads => align,
        None => 1024.min(units),
    };
    let min_chunk = MIN_CHUNK_ELEMS.div_ceil((numel / units).max(1));
    pool::execute(split(units, grain, min_chunk, threads), &body);
}

/// [`stream::decide`] for a walk from `base`: the destination's range and bytes, and each
/// input's range and distinct bytes (those along the dimensions where it is not broadcast).
fn decide_stream<const N: usize>(
    iter: &Iter<N>,
    base: [*mut u8; N],
    itemsize: [usize; N],
    in_place: bool,
) -> bool {
    let shape = iter.shape();
    let mut ranges = [(0usize, 0usize); N];
    let mut read = 0usize;
    for k in 0..N {
        let (mut lo, mut hi, mut distinct) = (0isize, 0isize, itemsize[k]);
        for (&n, s) in shape.iter().zip(iter.strides(k)) {
            let reach = (n.saturating_sub(1) as isize).saturating_mul(s);
            if reach < 0 {
                lo = lo.saturating_add(reach);
            } else {
                hi = hi.saturating_add(reach);
            }
            if s != 0 {
                distinct = distinct.saturating_mul(n);
            }
        }
        let size = itemsize[k] as isize;
        let at = base[k] as usize;
        ranges[k] = (
            at.wrapping_add_signed(lo.saturating_mul(size)),
            at.wrapping_add_signed(hi.saturating_mul(size).saturating_add(size)),
        );
        if k > 0 {
            read = read.saturating_add(distinct);
        }
    }
    let footprint = stream::Footprint {
        dest: ranges[0],
        write: iter.numel().saturating_mul(itemsize[0]),
        read,
    };
    stream::decide(&footprint, &ranges[1..], in_place)
}

/// How many threads [`run_units`] uses for `units` units of `work` elements in all: those of
/// [`threads_for`], at most one per unit.
pub fn unit_threads(units: usize, work: usize) -> usize {
    threads_for(work).min(units).max(1)
}

/// Runs `body(lo, hi)` over chunks of the units `[0, units)` on at most `threads` threads at
/// once, the caller's included (from [`unit_threads`]; a caller that gives each thread its own
/// scratch space makes that many). Each unit is computed whole by one thread, so a caller that
/// combines the units' results in unit order gets the same result for any thread count.
pub fn run_units(units: usize, work: usize, threads: usize, body: &(dyn Fn(usize, usize) + Sync)) {
    if threads <= 1 {
        body(0, units);
        return;
    }
    // Counted as a caller, so that others take fewer cores meanwhile (the thread count is the
    // caller's: it sized its scratch space for it).
    let _caller = Caller::enter();
    let min_chunk = MIN_CHUNK_ELEMS.div_ceil((work / units).max(1));
    pool::execute(split(units, 1, min_chunk, threads), body);
}

/// Callers computing work worth several threads right now (in [`run`] and [`run_units`], or on
/// their own thread in the fast path: [`serial_caller`]), the pool's job included. Two callers
/// that each take every core would run three or more threads on them, and lose to one thread
/// each: a caller takes the cores the others leave, a worker leaves a job that other callers'
/// work has made too wide, and idle workers stop spinning while the callers alone keep every
/// core busy.
static CALLERS: AtomicUsize = AtomicUsize::new(0);

/// One caller counted in [`CALLERS`] while alive (also while unwinding).
pub struct Caller;

/// Counts a caller about to compute `numel` elements, work worth several threads, when the
/// other callers computing now leave it one thread (as [`run`] would find): it then computes on
/// its own thread, counted while the guard lives. `None` (nothing counted) when it would take
/// more threads.
pub fn serial_caller(numel: usize) -> Option<Caller> {
    let (caller, threads) = Caller::take(threads_for(numel));
    (threads == 1).then_some(caller)
}

/// Entries into [`Caller::enter`] still to count one other caller after one was last seen
/// computing (see there).
static RECENTLY_SHARED: AtomicUsize = AtomicUsize::new(0);

/// How many entries [`RECENTLY_SHARED`] lasts: callers that overlap do so call after call.
const SHARED_MEMORY: usize = 32;

impl Caller {
    /// Counts this caller, and returns the threads it takes of the `threads` it could use: those
    /// the callers computing now leave free, at least its own.
    fn take(threads: usize) -> (Caller, usize) {
        let (caller, others) = Caller::enter();
        (
            caller,
            threads.min(num_threads().saturating_sub(others)).max(1),
        )
    }

    /// Counts this caller; also returns how many others are computing, or 1 if none is but one
    /// was a moment ago. Two threads calling in loops overlap most of the time but not always;
    /// the caller that finds itself alone would take every core, wake workers, then see them
    /// leave as the other caller comes back, and lose more than its own thread would.
    fn enter() -> (Caller, usize) {
        let others = CALLERS.fetch_add(1, Ordering::Relaxed);
        if others > 0 {
            // (Read first: overlapping callers then do not write the line at every call.)
            if RECENTLY_SHARED.load(Ordering::Relaxed) != SHARED_MEMORY {
                RECENTLY_SHARED.store(SHARED_MEMORY, Ordering::Relaxed);
            }
            return (Caller, others);
        }
        let recent = RECENTLY_SHARED.load(Ordering::Relaxed);
        if recent > 0 {
            // (Racing callers may count down together: the memory is approximate.)
            RECENTLY_SHARED.store(recent - 1, Ordering::Relaxed);
            return (Caller, 1);
        }
        (Caller, 0)
    }
}

impl Drop for Caller {
    fn drop(&mut self) {
        CALLERS.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Whether worker `seat` (1, 2, ...) is one too many: with the callers computing now, the
/// threads in force are taken without it.
fn crowded(seat: usize) -> bool {
    seat + CALLERS.load(Ordering::Relaxed) > num_threads()
}

/// Below this many elements a computation runs run by run on the calling thread, without blocks
/// (see `run`), and its iterator keeps the logical order (see [`Iter::is_small`]).
pub const SMALL_ELEMS: usize = 1 << 12;

/// No chunk of a parallel job is smaller than this many elements.
const MIN_CHUNK_ELEMS: usize = 1 << 14;

/// How a parallel job's `units` are shared among threads: `nparts` contiguous parts of
/// `part_len` units (the last may be shorter), one per thread as an OpenMP static schedule would
/// give (so each thread finds its data where it left it last time), each cut into chunks of
/// `chunk` units that another thread may take over when the owner is late. Edges fall on
/// multiples of `grain` (whole inner runs, or at least whole cache lines).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Split {
    units: usize,
    nparts: usize,
    part_len: usize,
    chunk: usize,
}

fn split(units: usize, grain: usize, min_chunk: usize, threads: usize) -> Split {
    let grain = grain.max(1);
    let round = |n: usize| n.div_ceil(grain) * grain;
    let nparts = threads.min(units.div_ceil(grain)).max(1);
    let part_len = round(units.div_ceil(nparts));
    // About eight chunks per part, none under `min_chunk` units.
    let chunk = round(part_len.div_ceil(8).max(min_chunk)).min(part_len);
    Split {
        units,
        nparts: units.div_ceil(part_len),
        part_len,
        chunk,
    }
}

/// Raw pointers that may cross to worker threads: each thread writes a disjoint range.
#[derive(Clone, Copy)]
struct SendPtrs<const N: usize>([*mut u8; N]);
// SAFETY: the ranges given to the threads are disjoint, and the plan's validity contract (the
// caller's) covers every element; the pointers are only used while the job runs.
unsafe impl<const N: usize> Send for SendPtrs<N> {}
// SAFETY: as above.
unsafe impl<const N: usize> Sync for SendPtrs<N> {}

impl<const N: usize> SendPtrs<N> {
    /// The pointers (a method, so closures capture the `Sync` wrapper, not the raw pointers).
    fn get(&self) -> [*mut u8; N] {
        self.0
    }
}

/// The persistent worker pool.
mod pool {
    use super::*;

    /// How long an idle worker spins before it goes to sleep.
    const SPIN: Duration = Duration::from_micros(500);

    /// At most this many parts per job (threads beyond it share parts).
    const MAX_PARTS: usize = 8;

    /// Keeps what one thread writes off the cache lines others read (128 bytes: the adjacent-line
    /// prefetcher pairs lines).
    #[repr(align(128))]
    struct Padded<T>(T);

    impl<T> std::ops::Deref for Padded<T> {
        type Target = T;
        fn deref(&self) -> &T {
            &self.0
        }
    }

    /// The posted job and its count.
    struct Posted {
        /// The posted job, or null. Type-erased: only dereferenced while counted in `active`.
        job: AtomicPtr<()>,
        /// Bumped for every posted job.
        epoch: AtomicUsize,
    }

    /// A contiguous share of a job's chunks: its owner takes them in order; a thread that has
    /// finished its own part takes what is left of the others.
    struct Part {
        /// The chunks not yet claimed, `[front, back)`, packed as `back << 32 | front`: the
        /// owner takes from the front, helpers from the back, so a helper takes the chunks the
        /// owner would reach last (and the same ones call after call), and the rest of the
        /// part's data stays in the owner's cache.
        range: AtomicU64,
        /// Chunks of this part finished.
        done: AtomicUsize,
        chunks: usize,
        /// The part's units.
        start: usize,
        end: usize,
    }

    impl Part {
        fn new(start: usize, end: usize, chunk: usize) -> Part {
            let chunks = (end - start).div_ceil(chunk);
            Part {
                range: AtomicU64::new((chunks as u64) << 32),
                done: AtomicUsize::new(0),
                chunks,
                start,
                end,
            }
        }

        /// Claims a chunk from the front (the owner) or the back (a helper).
        fn claim(&self, from_back: bool) -> Option<usize> {
            let mut v = self.range.load(Ordering::Relaxed);
            loop {
                let (front, back) = (v & 0xffff_ffff, v >> 32);
                if front >= back {
                    return None;
                }
                let (next, chunk) = if from_back {
                    ((back - 1) << 32 | front, back - 1)
                } else {
                    (back << 32 | (front + 1), front)
                };
                match self.range.compare_exchange_weak(
                    v,
                    next,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => return Some(chunk as usize),
                    Err(now) => v = now,
                }
            }
        }

        /// No more claims.
        fn close(&self) {
            self.range.store(0, Ordering::Relaxed);
        }
    }

    /// One parallel computation, on the stack of the thread that posted it.
    struct Job<'a> {
        body: &'a (dyn Fn(usize, usize) + Sync),
        chunk: usize,
        parts: [Padded<Part>; MAX_PARTS],
        nparts: usize,
        /// Workers that may join (the thread count in force, less the poster).
        seats: usize,
        /// Workers that have joined so far.
        joined: Padded<AtomicUsize>,
        panicked: AtomicBool,
    }

    impl Job<'_> {
        /// Runs chunks, its own part's from the front and then any left in the others from the
        /// back, until none is left; returns whether the body panicked.
        fn work(&self, seat: usize) -> bool {
            for k in 0..self.nparts {
                let part = &self.parts[(seat + k) % self.nparts];
                // A worker leaves (between chunks) once other callers need its core: the
                // poster and whoever stays take what is left.
                while let Some(c) = (seat == 0 || !crowded(seat))
                    .then(|| part.claim(k != 0))
                    .flatten()
                {
                    let lo = part.start + c * self.chunk;
                    let hi = (lo + self.chunk).min(part.end);
                    let ok = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        (self.body)(lo, hi)
                    }))
                    .is_ok();
                    // Release: the chunk's stores happen before the poster sees it done.
                    part.done.fetch_add(1, Ordering::Release);
                    if !ok {
                        self.panicked.store(true, Ordering::Relaxed);
                        return true;
                    }
                }
            }
            false
        }

        fn finished(&self) -> bool {
            self.parts[..self.nparts]
                .iter()
                .all(|p| p.done.load(Ordering::Acquire) >= p.chunks)
        }
    }

    struct Pool {
        /// Written once per job by the poster, read by spinning workers.
        posted: Padded<Posted>,
        /// Workers currently holding a pointer to the posted job.
        active: Padded<AtomicUsize>,
        /// Workers asleep (or about to be) on `wake`.
        sleepers: Padded<AtomicUsize>,
        /// Set while a thread has a job posted: one job at a time; other callers run serially.
        busy: Padded<AtomicBool>,
        /// Workers started so far.
        started: AtomicUsize,
        lock: Mutex<()>,
        wake: Condvar,
        /// Serialises starting workers.
        spawn: Mutex<()>,
    }

    static POOL: Pool = Pool {
        posted: Padded(Posted {
            job: AtomicPtr::new(std::ptr::null_mut()),
            epoch: AtomicUsize::new(0),
        }),
        active: Padded(AtomicUsize::new(0)),
        sleepers: Padded(AtomicUsize::new(0)),
        busy: Padded(AtomicBool::new(false)),
        started: AtomicUsize::new(0),
        lock: Mutex::new(()),
        wake: Condvar::new(),
        spawn: Mutex::new(()),
    };

    /// Runs `body` over `[0, units)` in chunks of `chunk` units on up to `threads` threads (this
    /// one included); returns when every chunk is done. Runs serially when the pool is in use by
    /// another thread (or by this one, re-entrantly) or no worker can be started.
    pub(super) fn execute(split: Split, body: &(dyn Fn(usize, usize) + Sync)) {
        let units = split.units;
        let threads = split.nparts;
        if threads < 2 {
            body(0, units);
            return;
        }
        let busy = &POOL.busy;
        if busy
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            body(0, units);
            return;
        }
        if !ensure_workers(threads - 1) {
            busy.store(false, Ordering::Release);
            body(0, units);
            return;
        }
        let nparts = split.nparts.min(MAX_PARTS);
        // With more threads than parts, parts grow to cover everything.
        let part_len = split.part_len * split.nparts.div_ceil(nparts);
        let job = Job {
            body,
            chunk: split.chunk,
            parts: std::array::from_fn(|p| {
                let start = (p * part_len).min(units);
                let end = (start + part_len).min(units);
                Padded(Part::new(start, end, split.chunk))
            }),
            nparts,
            seats: threads - 1,
            joined: Padded(AtomicUsize::new(0)),
            panicked: AtomicBool::new(false),
        };
        // Closes the job however this function is left (a panicking body included): no worker
        // may touch `job` after it is gone.
        struct Close<'a, 'b>(&'a Job<'b>);
        impl Drop for Close<'_, '_> {
            fn drop(&mut self) {
                // No more claims, then withdraw the job and wait for workers still holding it.
                for p in &self.0.parts {
                    p.close();
                }
                POOL.posted
                    .job
                    .store(std::ptr::null_mut(), Ordering::SeqCst);
                let mut spins = 0u32;
                while POOL.active.load(Ordering::SeqCst) != 0 {
                    backoff(&mut spins);
                }
                POOL.busy.store(false, Ordering::Release);
            }
        }
        let close = Close(&job);
        POOL.posted
            .job
            .store(&job as *const Job as *mut Job as *mut (), Ordering::SeqCst);
        POOL.posted.epoch.fetch_add(1, Ordering::SeqCst);
        if POOL.sleepers.load(Ordering::SeqCst) != 0 {
            let _guard = POOL.lock.lock().unwrap_or_else(|e| e.into_inner());
            POOL.wake.notify_all();
        }
        let mine_panicked = job.work(0);
        let mut spins = 0u32;
        while !job.finished() && !mine_panicked && !job.panicked.load(Ordering::Relaxed) {
            backoff(&mut spins);
        }
        drop(close);
        if mine_panicked || job.panicked.load(Ordering::Relaxed) {
            panic!("a kernel panicked during a parallel computation");
        }
    }

    fn backoff(spins: &mut u32) {
        *spins += 1;
        if *spins < 1 << 12 {
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }

    /// Starts workers until there are `n`; false when none can be started at all.
    fn ensure_workers(n: usize) -> bool {
        if POOL.started.load(Ordering::Acquire) >= n {
            return true;
        }
        let _guard = POOL.spawn.lock().unwrap_or_else(|e| e.into_inner());
        while POOL.started.load(Ordering::Acquire) < n {
            let id = POOL.started.load(Ordering::Relaxed);
            if !spawn_worker(id + 1) {
                break;
            }
            POOL.started.fetch_add(1, Ordering::Release);
        }
        POOL.started.load(Ordering::Acquire) > 0
    }

    /// Stack of a worker: kernels and walkers use a few KiB.
    const WORKER_STACK: usize = 2 << 20;

    /// Starts worker number `id` as a POSIX thread directly: `std::thread` allocates its
    /// bookkeeping (and the name) with allocations that abort when refused, while
    /// `pthread_create` reports a refusal, and the first large operation under memory
    /// exhaustion then runs on the calling thread alone.
    #[cfg(unix)]
    fn spawn_worker(id: usize) -> bool {
        extern "C" fn start(id: *mut libc::c_void) -> *mut libc::c_void {
            name_this_thread(id as usize);
            worker(id as usize);
            std::ptr::null_mut()
        }
        // SAFETY: attr is initialised before use and destroyed after; the thread runs `start`,
        // which takes no pointer (the id travels as an integer) and never returns.
        unsafe {
            let mut attr: libc::pthread_attr_t = std::mem::zeroed();
            if libc::pthread_attr_init(&mut attr) != 0 {
                return false;
            }
            libc::pthread_attr_setstacksize(&mut attr, WORKER_STACK);
            libc::pthread_attr_setdetachstate(&mut attr, libc::PTHREAD_CREATE_DETACHED);
            let mut thread: libc::pthread_t = std::mem::zeroed();
            let rc = libc::pthread_create(&mut thread, &attr, start, id as *mut libc::c_void);
            libc::pthread_attr_destroy(&mut attr);
            rc == 0
        }
    }

    #[cfg(not(unix))]
    fn spawn_worker(id: usize) -> bool {
        std::thread::Builder::new()
            .name(format!("bc-worker-{id}"))
            .stack_size(WORKER_STACK)
            .spawn(move || worker(id))
            .is_ok()
    }

    /// `bc-worker-<id>`, as debuggers and `top -H` show threads (Linux; from a stack buffer).
    #[cfg(unix)]
    fn name_this_thread(id: usize) {
        #[cfg(target_os = "linux")]
        {
            let mut name = [0u8; 16]; // the kernel's limit, NUL included
            let mut w = &mut name[..15];
            let _ = std::io::Write::write_fmt(&mut w, format_args!("bc-worker-{id}"));
            // SAFETY: a NUL-terminated name of at most 15 bytes, for the calling thread.
            unsafe { libc::pthread_setname_np(libc::pthread_self(), name.as_ptr().cast()) };
        }
        #[cfg(not(target_os = "linux"))]
        let _ = id;
    }

    /// Worker number `id` (1, 2, ...).
    fn worker(id: usize) {
        // A worker starts as if a job had just been posted: the job its start was for was
        // posted while it started, so it looks at the posted job at once (none is fine: it
        // then waits for the next) instead of missing that job.
        let mut seen = POOL.posted.epoch.load(Ordering::SeqCst).wrapping_sub(1);
        loop {
            wait_for_job(id, &mut seen);
            POOL.active.fetch_add(1, Ordering::SeqCst);
            let p = POOL.posted.job.load(Ordering::SeqCst) as *const Job;
            if !p.is_null() {
                // SAFETY: the poster keeps the job alive until `active` is back to 0, and it
                // withdraws the pointer before waiting for that, so a non-null pointer read while
                // counted in `active` is valid until the decrement below.
                let job = unsafe { &*p };
                let seat = job.joined.fetch_add(1, Ordering::Relaxed) + 1;
                if seat <= job.seats {
                    job.work(seat);
                }
            }
            POOL.active.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Returns once `epoch` differs from `seen` (and updates `seen`): spins for [`SPIN`], then
    /// sleeps until a poster wakes it. Worker `id` sleeps at once while callers computing keep
    /// the cores busy without it (its spinning would only take time from them).
    fn wait_for_job(id: usize, seen: &mut usize) {
        let start = Instant::now();
        let mut spins = 0u32;
        loop {
            let e = POOL.posted.epoch.load(Ordering::Acquire);
            if e != *seen {
                *seen = e;
                return;
            }
            std::hint::spin_loop();
            spins = spins.wrapping_add(1);
            if spins % 128 == 0 && (crowded(id) || start.elapsed() > SPIN) {
                break;
            }
        }
        let mut guard = POOL.lock.lock().unwrap_or_else(|e| e.into_inner());
        POOL.sleepers.fetch_add(1, Ordering::SeqCst);
        loop {
            let e = POOL.posted.epoch.load(Ordering::SeqCst);
            if e != *seen {
                *seen = e;
                break;
            }
            guard = POOL.wake.wait(guard).unwrap_or_else(|e| e.into_inner());
        }
        POOL.sleepers.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::sync::atomic::AtomicU32;

    /// sysfs cache text, as Linux writes it, and what is not.
    #[test]
    fn cache_sizes_parse_as_sysfs_writes_them() {
        assert_eq!(parse_cache_size(b"32768K\n"), Some(32 << 20));
        assert_eq!(parse_cache_size(b"2048K"), Some(2 << 20));
        assert_eq!(parse_cache_size(b"32M\n"), Some(32 << 20));
        assert_eq!(parse_cache_size(b"1G\n"), Some(1 << 30));
        assert_eq!(parse_cache_size(b"3\n"), Some(3));
        for bad in [
            &b""[..],
            b"K",
            b"\n",
            b"12KB",
            b"-1K",
            b" 12K",
            b"99999999999999999999G",
        ] {
            assert_eq!(parse_cache_size(bad), None, "{:?}", bad);
        }
    }

    /// Where sysfs reports caches (Linux), the last-level one is at least as large as L1.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_last_level_cache_is_the_largest() {
        let llc = last_level_cache_bytes();
        let l1 = std::fs::read_to_string("/sys/devices/system/cpu/cpu0/cache/index0/size");
        if let Ok(l1) = l1 {
            assert!(llc >= parse_cache_size(l1.as_bytes()).unwrap(), "{llc}");
        } else {
            assert_eq!(llc, 0);
        }
    }

    /// Every element of a parallel run is visited exactly once, for plain and tiled plans.
    #[test]
    fn parallel_runs_cover_every_element_once() {
        let _settings = TwoThreads::new();
        for (shape, a) in [
            (vec![300usize, 1000], vec![1000isize, 1]),
            (vec![300, 1000], vec![1, 300]), // transposed: tiled
            (vec![7, 50, 999], vec![50 * 999, 999, 1]),
        ] {
            let out = crate::engine::shape::contiguous_strides(&shape).unwrap();
            let p = Iter::new(&shape, [&out[..], &a[..]]).unwrap();
            let numel = p.numel();
            let seen: Vec<AtomicU32> = (0..numel).map(|_| AtomicU32::new(0)).collect();
            run(&p, [std::ptr::null_mut(); 2], [1, 1], |ptrs, s, n| {
                for i in 0..n {
                    let o = ptrs[0] as usize as isize + i as isize * s[0];
                    seen[o as usize].fetch_add(1, Ordering::Relaxed);
                }
            });
            assert!(seen.iter().all(|c| c.load(Ordering::Relaxed) == 1));
        }
    }

    /// A kernel that panics in a parallel run, on whichever thread and in whichever chunk, makes
    /// the run panic once every chunk under way is finished, and leaves the pool usable: the next
    /// run covers every element once.
    #[test]
    fn a_panicking_kernel_fails_the_run_and_the_pool_recovers() {
        let _settings = TwoThreads::new();
        let (n, p) = line();
        for bad in [0, n / 2 - 1, n / 2, n - 1] {
            let r = std::panic::catch_unwind(|| {
                run(&p, [std::ptr::null_mut(); 2], [1, 1], |ptrs, _s, len| {
                    let lo = ptrs[0] as usize;
                    assert!(!(lo..lo + len).contains(&bad), "planned failure");
                })
            });
            assert!(r.is_err(), "a panic at element {bad} went unnoticed");
            for _ in 0..20 {
                let seen: Vec<AtomicU32> = (0..n).map(|_| AtomicU32::new(0)).collect();
                run(&p, [std::ptr::null_mut(); 2], [1, 1], |ptrs, _s, len| {
                    for i in 0..len {
                        seen[ptrs[0] as usize + i].fetch_add(1, Ordering::Relaxed);
                    }
                });
                assert!(seen.iter().all(|c| c.load(Ordering::Relaxed) == 1));
            }
        }
    }

    /// Threads that post jobs at the same time all get correct results (one uses the pool, the
    /// others run serially).
    #[test]
    fn concurrent_callers() {
        let handles: Vec<_> = (0..4)
            .map(|t| {
                std::thread::spawn(move || {
                    for _ in 0..50 {
                        let n = 200_000 + t;
                        let p = Iter::new(&[n], [&[1isize][..], &[1isize][..]]).unwrap();
                        let seen: Vec<AtomicU32> = (0..n).map(|_| AtomicU32::new(0)).collect();
                        run(&p, [std::ptr::null_mut(); 2], [1, 1], |ptrs, _s, len| {
                            for i in 0..len {
                                seen[ptrs[0] as usize + i].fetch_add(1, Ordering::Relaxed);
                            }
                        });
                        assert!(seen.iter().all(|c| c.load(Ordering::Relaxed) == 1));
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
    }

    /// While another caller computes work worth several threads, a run that would take both
    /// threads of a two-thread pool takes only its own (no oversubscription), and still covers
    /// every element once.
    #[test]
    fn a_caller_takes_only_the_threads_others_leave() {
        let _settings = TwoThreads::new();
        let (n, p) = line();
        let me = std::thread::current().id();
        let (other, _) = Caller::enter();
        let seen: Vec<AtomicU32> = (0..n).map(|_| AtomicU32::new(0)).collect();
        let elsewhere = AtomicU32::new(0);
        run(&p, [std::ptr::null_mut(); 2], [1, 1], |ptrs, _s, len| {
            if std::thread::current().id() != me {
                elsewhere.fetch_add(1, Ordering::Relaxed);
            }
            for i in 0..len {
                seen[ptrs[0] as usize + i].fetch_add(1, Ordering::Relaxed);
            }
        });
        assert_eq!(
            elsewhere.load(Ordering::Relaxed),
            0,
            "a pool thread joined in"
        );
        assert!(seen.iter().all(|c| c.load(Ordering::Relaxed) == 1));
        drop(other);
    }

    /// Right after another caller was seen computing, a caller alone still takes only its own
    /// thread (the two are likely to overlap again at once).
    #[test]
    fn a_caller_alone_right_after_another_takes_only_its_thread() {
        let _settings = TwoThreads::new();
        let (_, p) = line();
        let me = std::thread::current().id();
        let count = |elsewhere: &AtomicU32| {
            run(&p, [std::ptr::null_mut(); 2], [1, 1], |_, _, len| {
                if std::thread::current().id() != me {
                    elsewhere.fetch_add(len as u32, Ordering::Relaxed);
                }
                // Slow chunks: a pool thread that is let in has time to join.
                std::thread::sleep(std::time::Duration::from_micros(500));
            })
        };
        // The pool's workers exist (one started for a job waits for the next), and no caller
        // was seen a moment ago.
        for _ in 0..=SHARED_MEMORY {
            count(&AtomicU32::new(0));
        }
        let other = Caller::enter();
        count(&AtomicU32::new(0)); // sees the other caller
        drop(other);
        let elsewhere = AtomicU32::new(0);
        count(&elsewhere);
        assert_eq!(
            elsewhere.load(Ordering::Relaxed),
            0,
            "a pool thread joined in"
        );
    }

    pub(crate) static SETTINGS: Mutex<()> = Mutex::new(());

    /// A caller counted as computing, as another thread's would be, until dropped.
    pub(crate) fn other_caller() -> Caller {
        Caller::enter().0
    }

    /// Two threads from 1000 elements on, with [`SETTINGS`] held; the defaults again when dropped
    /// (a failing test included).
    struct TwoThreads {
        _lock: std::sync::MutexGuard<'static, ()>,
    }

    impl TwoThreads {
        fn new() -> TwoThreads {
            let lock = SETTINGS.lock().unwrap_or_else(|e| e.into_inner());
            set_num_threads(2);
            set_threshold(1000);
            TwoThreads { _lock: lock }
        }
    }

    impl Drop for TwoThreads {
        fn drop(&mut self) {
            set_num_threads(0);
            set_threshold(DEFAULT_THRESHOLD);
        }
    }

    /// A run of 2^18 contiguous elements (two operands), and its length.
    fn line() -> (usize, Iter<2>) {
        let n = 1usize << 18;
        (n, Iter::new(&[n], [&[1isize][..], &[1isize][..]]).unwrap())
    }

    #[test]
    fn splits_are_even_and_aligned() {
        // S1 coalesced: 16M elements, edges on 1024-element boundaries, eight chunks a part.
        let s = split(1 << 24, 1024, 1 << 14, 2);
        assert_eq!((s.nparts, s.part_len, s.chunk), (2, 1 << 23, 1 << 20));
        // Rows of 1024: 98 rows for two threads, 49 each; chunks of at least 16K elements.
        let s = split(100_352, 1024, 1 << 14, 2);
        assert_eq!((s.nparts, s.part_len, s.chunk), (2, 50_176, 16_384));
        // Tiles (grain 1): 256 tile rows, 2 threads.
        let s = split(256, 1, 1, 2);
        assert_eq!((s.nparts, s.part_len, s.chunk), (2, 128, 16));
        // Fewer units than threads.
        let s = split(3, 1, 1, 8);
        assert_eq!((s.nparts, s.part_len, s.chunk), (3, 1, 1));
        for (units, grain, min, threads) in [(1000usize, 7usize, 3usize, 3usize), (99, 10, 1, 4)] {
            let s = split(units, grain, min, threads);
            assert!(s.nparts * s.part_len >= units && (s.nparts - 1) * s.part_len < units);
            assert_eq!(s.part_len % grain, 0);
            assert!(s.chunk <= s.part_len && (s.chunk % grain == 0 || s.chunk == s.part_len));
        }
    }

    /// Through the whole engine: transposed operands (tiled, transposing kernels, several
    /// threads) give exactly the results of their contiguous copies.
    #[test]
    fn transposed_operands_through_the_engine() {
        use crate::engine::{ops, BinaryOp, DType, Init, Options, Tensor};
        let _lock = SETTINGS.lock().unwrap();
        set_threshold(1000);
        for dtype in [DType::F32, DType::F64, DType::I32, DType::F16] {
            for (rows, cols) in [(300usize, 200usize), (64, 64), (37, 1000)] {
                let base = Tensor::new(dtype, &[cols, rows], Init::Uninit).unwrap();
                let n = rows * cols;
                let bytes: Vec<u8> = (0..n * dtype.size())
                    .map(|i| (i * 7 % 251) as u8 & 0x3f)
                    .collect();
                let base = Tensor::from_bytes(dtype, base.shape(), &bytes).unwrap();
                let a = base.transpose(0, 1).unwrap();
                let a_copy = a.to_contiguous(dtype).unwrap();
                let b = Tensor::new(dtype, &[rows, cols], Init::Fill(3.0)).unwrap();
                for threads in [1, 2] {
                    set_num_threads(threads);
                    for op in [BinaryOp::Add, BinaryOp::Sub] {
                        for (x, y, xc, yc) in [(&a, &b, &a_copy, &b), (&b, &a, &b, &a_copy)] {
                            let (got, _) = ops::binary(op, x, y, Options::default()).unwrap();
                            let (want, _) = ops::binary(op, xc, yc, Options::default()).unwrap();
                            let mut g = vec![0u8; n * dtype.size()];
                            let mut w = vec![0u8; n * dtype.size()];
                            got.copy_to_bytes(&mut g).unwrap();
                            want.copy_to_bytes(&mut w).unwrap();
                            assert_eq!(g, w, "{dtype:?} {op:?} {rows}x{cols} threads={threads}");
                        }
                    }
                }
            }
        }
        set_num_threads(0);
        set_threshold(DEFAULT_THRESHOLD);
    }
}
