//! Whether a computation writes its result with streaming (non-temporal) stores.
//!
//! Streaming skips the read-for-ownership of every destination line (a third of the memory
//! traffic of `c = a + b`) but leaves the result in memory, not in the cache. That pays only when
//! the result would be evicted before anything reads it, and a result a later call reads (the
//! next call of a chain) is read back from memory when streamed. So the default,
//! [`Streaming::Auto`], streams a result of at least [`super::parallel::stream_threshold`] bytes
//! unless a later call is likely to read it: a destination that one of the last few large calls
//! read as an input (a chain's temporary, about to be read again, likely still in the cache) is
//! not streamed, up to [`PROBE_MAX`] bytes (where streaming pays, below: while the call fits in
//! the effective cache). Whether a result that nothing reads back streams
//! depends on the machine, measured once on this CPU ([`effective_cache`]): where rewriting
//! lines that are in the cache is slower than streaming them to memory (as on a virtual machine
//! whose large shared cache each core reaches slowly), it streams; elsewhere only work that
//! cannot stay in the cache streams, a call whose bytes (its result plus the distinct bytes of
//! its inputs) exceed the effective cache.
//!
//! A caller that knows better sets [`Streaming::Always`] or [`Streaming::Never`] for its thread.
//! In-place results (the destination also an input) are never streamed: their lines are already
//! in the cache.
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// The streaming policy of a thread's calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Streaming {
    /// Stream work that does not fit in the cache (the module's rule); the default.
    Auto,
    /// Stream every result of work large enough to be shared between threads (not in place).
    Always,
    /// Never stream.
    Never,
}

thread_local! {
    static MODE: Cell<Streaming> = const { Cell::new(Streaming::Auto) };
    static STREAMED: Cell<u64> = const { Cell::new(0) };
}

/// How many computations the calling thread has decided to stream (for tests and benchmarks: a
/// decision is only visible in the time it takes).
pub fn streamed_count() -> u64 {
    STREAMED.with(|c| c.get())
}

/// Sets the calling thread's streaming policy.
pub fn set_streaming(mode: Streaming) {
    MODE.with(|m| m.set(mode));
}

/// The calling thread's streaming policy.
pub fn streaming() -> Streaming {
    MODE.with(|m| m.get())
}

/// Bytes of data this process can keep in the cache between calls; see [`effective_cache`]. 0
/// until measured.
static CACHE_BYTES: AtomicUsize = AtomicUsize::new(0);

/// Whether streaming stores write faster than ordinary stores over lines already in the cache
/// (see [`probe::streaming_pays`]), measured with [`CACHE_BYTES`].
static STREAMING_PAYS: AtomicBool = AtomicBool::new(false);

/// The largest working set the probe tries: S4's 64 MiB result (PyTorch keeps it, and so does a
/// machine with a large enough cache) is the largest single-buffer case worth keeping, and each
/// doubling costs the probe as much again.
const PROBE_MAX: usize = 64 << 20;
/// The smallest working set the probe tries, its reference (twice a typical private L2: read from
/// the last-level cache).
const PROBE_MIN: usize = 4 << 20;

/// Bytes of data that stay in the cache from one call to the next on this machine: the largest
/// working set (a power of two up to [`PROBE_MAX`]) that reads back about as fast per byte as
/// 4 MiB does, measured once on first need (a few passes over at most 64 MiB: tens of
/// milliseconds, once), and at most the last-level cache sysfs reports. A virtual machine's
/// sysfs reports the host's cache, shared with every other tenant: the measurement is what this
/// process gets.
pub fn effective_cache() -> usize {
    match CACHE_BYTES.load(Ordering::Relaxed) {
        0 => first_effective_cache(),
        n => n,
    }
}

/// Sets [`effective_cache`], for benchmarks: `usize::MAX` never streams by size, 1 streams every
/// result of at least [`super::parallel::stream_threshold`] bytes (the former rule). 0 measures
/// again on next need (with [`streaming_pays`]).
pub fn set_effective_cache(bytes: usize) {
    CACHE_BYTES.store(bytes, Ordering::Relaxed);
}

/// Whether this machine writes a result faster with streaming stores than with ordinary ones
/// into lines that are already in the cache, measured with [`effective_cache`] (and `false`
/// until then): when it does, [`Streaming::Auto`] streams every large result that no later call
/// is likely to read, not only those that do not fit in the cache.
pub fn streaming_pays() -> bool {
    STREAMING_PAYS.load(Ordering::Relaxed)
}

#[cold]
fn first_effective_cache() -> usize {
    let reported = super::parallel::last_level_cache_bytes();
    let measured = probe::measure(if reported == 0 {
        PROBE_MAX
    } else {
        reported.min(PROBE_MAX)
    });
    let bytes = match (measured, reported) {
        (Some(m), 0) => m,
        (Some(m), r) => m.min(r),
        // No probe here: half the reported cache, as a shared one is not all this process's.
        (None, 0) => 8 << 20,
        (None, r) => r / 2,
    }
    .max(1);
    let pays = probe::streaming_pays().unwrap_or(false);
    STREAMING_PAYS.store(pays, Ordering::Relaxed);
    CACHE_BYTES.store(bytes, Ordering::Relaxed);
    bytes
}

/// Recently read large inputs, as address ranges `[start, end)` (a ring; racy by design: a lost
/// or stale entry only changes a guess).
const RECENT: usize = 8;
static RECENT_LO: [AtomicUsize; RECENT] = [const { AtomicUsize::new(0) }; RECENT];
static RECENT_HI: [AtomicUsize; RECENT] = [const { AtomicUsize::new(0) }; RECENT];
static RECENT_NEXT: AtomicUsize = AtomicUsize::new(0);

/// What a computation touches, for [`decide`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Footprint {
    /// The destination's address range.
    pub dest: (usize, usize),
    /// Bytes the result has.
    pub write: usize,
    /// Distinct bytes of the inputs.
    pub read: usize,
}

/// Whether a computation with this footprint streams its result, by the calling thread's policy
/// (never in place: the destination's lines are then in the cache already). Remembers the inputs
/// it is told of (`inputs`, an in-place destination among them), for the next calls' decisions.
pub(crate) fn decide(f: &Footprint, inputs: &[(usize, usize)], in_place: bool) -> bool {
    let stream = !in_place
        && match streaming() {
            Streaming::Never => false,
            Streaming::Always => true,
            // The threshold first: the cache is measured only when a result could stream.
            Streaming::Auto => {
                let threshold = super::parallel::stream_threshold();
                f.write >= threshold && auto(f, effective_cache(), threshold, streaming_pays())
            }
        };
    let min = super::parallel::stream_threshold();
    for &(lo, hi) in inputs {
        if hi.wrapping_sub(lo) >= min {
            let i = RECENT_NEXT.fetch_add(1, Ordering::Relaxed) % RECENT;
            RECENT_LO[i].store(lo, Ordering::Relaxed);
            RECENT_HI[i].store(hi, Ordering::Relaxed);
        }
    }
    if stream {
        STREAMED.with(|c| c.set(c.get() + 1));
    }
    stream
}

/// [`Streaming::Auto`]'s rule, with the cache size, the threshold and [`streaming_pays`] given.
fn auto(f: &Footprint, cache: usize, threshold: usize, pays: bool) -> bool {
    if f.write < threshold || (!pays && f.write.saturating_add(f.read) <= cache) {
        return false;
    }
    // A destination that one of the last calls read is a chain's temporary, read again soon:
    // its lines are likely in the cache still (a streaming store must evict each first), and the
    // next call reads it sooner from there than from memory. Beyond what the probe can see,
    // memory traffic decides; where streaming pays, beyond what fits in the cache (a freed
    // input's buffer taken back for a result that does not fit, kept, wrote 64 MiB 2.8x slower).
    let may_be_cached = if pays {
        f.write.saturating_add(f.read) <= cache
    } else {
        f.write <= cache.max(PROBE_MAX)
    };
    !(may_be_cached && recently_read(f.dest))
}

fn recently_read((lo, hi): (usize, usize)) -> bool {
    (0..RECENT).any(|i| {
        let (l, h) = (
            RECENT_LO[i].load(Ordering::Relaxed),
            RECENT_HI[i].load(Ordering::Relaxed),
        );
        l < hi && lo < h
    })
}

/// Forgets the recently read inputs (tests).
#[cfg(test)]
pub(crate) fn forget_recent() {
    for i in 0..RECENT {
        RECENT_LO[i].store(0, Ordering::Relaxed);
        RECENT_HI[i].store(0, Ordering::Relaxed);
    }
}

mod probe {
    use super::{PROBE_MAX, PROBE_MIN};

    /// How much slower per byte than at [`PROBE_MIN`] a working set may read and still count as
    /// cached. Measured on a loaded 2-CPU virtual machine whose sysfs reports 480 MiB (one
    /// thread, best of four passes, per byte against 4 MiB): 1.4-2.3x at 8 and 16 MiB, 2.2-6.3x
    /// at 32 MiB (partly evicted), 5-14x from 64 MiB (memory).
    const SLOWER: f64 = 2.5;

    /// The largest working set, a power of two from [`PROBE_MIN`] up to `max` bytes, that reads
    /// back at most [`SLOWER`] times slower per byte than [`PROBE_MIN`] does; `None` where there
    /// is no probe (or no memory for it).
    #[cfg(target_os = "linux")]
    pub(super) fn measure(max: usize) -> Option<usize> {
        use std::time::Instant;
        let max = max.clamp(PROBE_MIN, PROBE_MAX);
        let mapping = Mapping::new(max)?;
        let base = mapping.0;
        let words = base as *mut u64;
        let (mut best, mut reference, mut touched) = (PROBE_MIN, 0.0, 0);
        let mut size = PROBE_MIN;
        while size <= max {
            // SAFETY: the new part of the working set lies in the mapping; written once, so that
            // the passes read memory that is there (faulted in), not the shared zero page.
            unsafe { std::ptr::write_bytes(base.add(touched), 1, size - touched) };
            touched = size;
            let per_byte = (0..4)
                .map(|_| {
                    let t = Instant::now();
                    // SAFETY: `size / 8` words of the mapping, all written above.
                    std::hint::black_box(unsafe { sum(words, size / 8) });
                    t.elapsed().as_secs_f64()
                })
                .fold(f64::MAX, f64::min)
                / size as f64;
            if reference == 0.0 {
                reference = per_byte;
            } else if per_byte > reference * SLOWER {
                break;
            }
            best = size;
            size *= 2;
        }
        Some(best)
    }

    /// A working set of this many bytes, mapped as the library's own large buffers are
    /// ([`crate::engine::storage::map_fresh`]) and unmapped when dropped. Not the allocator: a
    /// probe runs on a call's path, where running out of memory must fail the probe, not abort.
    #[cfg(target_os = "linux")]
    struct Mapping(*mut u8, usize);

    #[cfg(target_os = "linux")]
    impl Mapping {
        fn new(len: usize) -> Option<Mapping> {
            crate::engine::storage::map_fresh(len).map(|p| Mapping(p.as_ptr(), len))
        }
    }

    #[cfg(target_os = "linux")]
    impl Drop for Mapping {
        fn drop(&mut self) {
            // The mapping made in `new`, no longer used.
            crate::engine::storage::unmap(self.0 as usize, self.1);
        }
    }

    #[cfg(not(target_os = "linux"))]
    pub(super) fn measure(_max: usize) -> Option<usize> {
        None
    }

    /// Bytes the store probe works on: a source and a destination of 8 MiB each, past a core's
    /// private caches (2 MiB here), within any last-level cache worth keeping results in.
    const STORE_BYTES: usize = 4 * PROBE_MIN;

    /// How much less time than ordinary stores streaming stores must take, rewriting a
    /// destination that is in the cache from a source that is too, for streaming to pay. On a
    /// 2-CPU virtual machine that reports a 260 MiB L3 (one thread, best of four passes each)
    /// streaming took 0.74-0.86 of the time; the operations themselves, on two threads, took
    /// 0.72-0.85 of the time streamed (a 16 MiB result from a 16 MiB input, a 25 MiB one). A
    /// cache that a core reaches fast takes ordinary stores at several times memory's speed,
    /// and answers no.
    const STREAM_FASTER: f64 = 0.9;

    /// Whether computing `dst = src + v` over [`STORE_BYTES`] that stay in the cache, again and
    /// again (as a call repeated into one `out` does), is faster with streaming stores than with
    /// ordinary ones by [`STREAM_FASTER`]: a few passes over 16 MiB, milliseconds, once. `None`
    /// where there is no probe (or no memory for it).
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    pub(super) fn streaming_pays() -> Option<bool> {
        use std::arch::x86_64::{
            __m128i, _mm_add_epi32, _mm_load_si128, _mm_set1_epi32, _mm_sfence, _mm_store_si128,
            _mm_stream_si128,
        };
        use std::time::Instant;
        let mapping = Mapping::new(STORE_BYTES)?;
        // SAFETY: the mapping is written once, so that the passes read and rewrite memory that
        // is there.
        unsafe { std::ptr::write_bytes(mapping.0, 1, STORE_BYTES) };
        let n = STORE_BYTES / 32;
        let dst = mapping.0 as *mut __m128i;
        // SAFETY: the second half of the mapping.
        let src = unsafe { dst.add(n) } as *const __m128i;
        // The best of four passes each way, after a first ordinary one (the destination then in
        // the cache, as a repeated call finds it); all the ordinary passes first, since a
        // streamed pass leaves the destination in memory.
        let mut best = [f64::MAX; 2];
        for pass in 0..9 {
            let streamed = pass >= 5;
            // SAFETY: SSE2 is part of x86-64; `dst.add(j)` and `src.add(j)` for `j < n` are
            // 16-byte aligned parts of the two halves of the (page-aligned) mapping.
            let t = Instant::now();
            unsafe {
                let v = _mm_set1_epi32(pass);
                if streamed {
                    for j in 0..n {
                        _mm_stream_si128(dst.add(j), _mm_add_epi32(v, _mm_load_si128(src.add(j))));
                    }
                    _mm_sfence();
                } else {
                    for j in 0..n {
                        _mm_store_si128(dst.add(j), _mm_add_epi32(v, _mm_load_si128(src.add(j))));
                    }
                }
            }
            let took = t.elapsed().as_secs_f64();
            if pass > 0 {
                best[streamed as usize] = best[streamed as usize].min(took);
            }
        }
        Some(best[1] < best[0] * STREAM_FASTER)
    }

    #[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
    pub(super) fn streaming_pays() -> Option<bool> {
        None
    }

    /// The wrapping sum of `n` words (a multiple of 8), eight independent lanes, so that the
    /// loop is bound by reading.
    ///
    /// # Safety
    /// `p` valid for `n` reads.
    #[cfg(target_os = "linux")]
    unsafe fn sum(p: *const u64, n: usize) -> u64 {
        // SAFETY: the caller's contract.
        let words = unsafe { std::slice::from_raw_parts(p, n) };
        let mut acc = [0u64; 8];
        for chunk in words.chunks_exact(8) {
            for (a, &w) in acc.iter_mut().zip(chunk) {
                *a = a.wrapping_add(w);
            }
        }
        acc.iter().fold(0, |s, &a| s.wrapping_add(a))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(dest: usize, write: usize, read: usize) -> Footprint {
        Footprint {
            dest: (dest, dest + write),
            write,
            read,
        }
    }

    const MIB: usize = 1 << 20;

    /// Work that fits in the cache stays there; work that does not streams; a result below the
    /// threshold never streams.
    #[test]
    fn auto_streams_only_what_cannot_stay_in_the_cache() {
        // A destination no test records as read.
        let d = 1 << 40;
        // 32 MiB touched: kept with 64 MiB of cache, streamed with 16.
        assert!(!auto(&at(d, 16 * MIB, 16 * MIB), 64 * MIB, 4 * MIB, false));
        assert!(auto(&at(d, 16 * MIB, 16 * MIB), 16 * MIB, 4 * MIB, false));
        // Exactly the cache: fits.
        assert!(!auto(&at(d, 8 * MIB, 8 * MIB), 16 * MIB, 4 * MIB, false));
        // Below the threshold, however large the inputs.
        assert!(!auto(&at(d, 2 * MIB, 100 * MIB), 16 * MIB, 4 * MIB, false));
    }

    /// A destination a recent call read (in place too) is kept, up to the largest size the probe
    /// measures.
    #[test]
    fn a_destination_just_read_is_kept() {
        let _lock = crate::engine::parallel::tests::SETTINGS
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        forget_recent();
        let d = 1 << 41;
        let f = at(d, 16 * MIB, 16 * MIB);
        assert!(auto(&f, 8 * MIB, 4 * MIB, false));
        // A call that reads part of the destination.
        decide(&at(1 << 42, 16 * MIB, 0), &[(d + MIB, d + 9 * MIB)], false);
        assert!(!auto(&f, 8 * MIB, 4 * MIB, false));
        let huge = at(d, 2 * PROBE_MAX, 0);
        assert!(
            auto(&huge, 8 * MIB, 4 * MIB, false),
            "beyond the probe's sizes"
        );
        // In place: the destination counts as read.
        forget_recent();
        decide(&at(d, 16 * MIB, 0), &[(d, d + 16 * MIB)], true);
        assert!(!auto(&f, 8 * MIB, 4 * MIB, false));
        // Ranges that only touch do not overlap; small inputs are not remembered.
        forget_recent();
        decide(
            &at(1 << 42, 16 * MIB, 0),
            &[(d + 16 * MIB, d + 32 * MIB)],
            false,
        );
        decide(&at(1 << 42, 16 * MIB, 0), &[(d, d + MIB)], false);
        assert!(auto(&f, 8 * MIB, 4 * MIB, false));
        forget_recent();
    }

    /// Where streaming pays, a result that fits in the cache streams too, unless a recent call
    /// read its destination; below the threshold nothing streams.
    #[test]
    fn where_streaming_pays_only_a_destination_just_read_is_kept() {
        let _lock = crate::engine::parallel::tests::SETTINGS
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        forget_recent();
        let d = 1 << 44;
        let f = at(d, 16 * MIB, 16 * MIB);
        assert!(auto(&f, 64 * MIB, 4 * MIB, true));
        assert!(!auto(&f, 64 * MIB, 4 * MIB, false));
        assert!(!auto(&at(d, 2 * MIB, 0), 64 * MIB, 4 * MIB, true));
        decide(&at(1 << 42, 16 * MIB, 0), &[(d, d + 16 * MIB)], false);
        assert!(!auto(&f, 64 * MIB, 4 * MIB, true));
        // Not when the call does not fit in the cache.
        assert!(auto(&f, 16 * MIB, 4 * MIB, true));
        forget_recent();
    }

    /// The policy is the calling thread's: another thread keeps the default.
    #[test]
    fn the_mode_is_per_thread() {
        set_streaming(Streaming::Never);
        assert_eq!(streaming(), Streaming::Never);
        let other = std::thread::spawn(streaming).join().unwrap();
        assert_eq!(other, Streaming::Auto);
        let f = at(1 << 43, usize::MAX / 4, usize::MAX / 4);
        assert!(!decide(&f, &[], false));
        set_streaming(Streaming::Always);
        assert!(decide(&at(1 << 43, 1, 0), &[], false));
        assert!(!decide(&at(1 << 43, 1, 0), &[], true), "in place");
        set_streaming(Streaming::Auto);
    }

    /// The store probe answers on x86-64 Linux.
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    #[test]
    fn the_store_probe_answers() {
        assert!(probe::streaming_pays().is_some());
    }

    /// The probe answers a working set between its smallest and its largest, a power of two.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_probe_answers_a_size_it_tried() {
        let got = probe::measure(16 * MIB).unwrap();
        assert!(
            got.is_power_of_two() && (PROBE_MIN..=16 * MIB).contains(&got),
            "{got}"
        );
    }
}
