//! Element memory: owned (allocated here) or foreign (caller memory with a release hook). Shared by
//! every view through `Arc<Storage>`; freed when the last view goes.
//!
//! Owned memory comes from one of three places:
//! - up to 64 bytes (`INLINE_BYTES`), the storage's own bytes, inside the `Arc` block;
//! - below [`LARGE_BYTES`], the global allocator (64-byte aligned from 4 KiB, by hand below
//!   [`CACHE_MIN`]; else 16);
//! - from [`LARGE_BYTES`] up, anonymous mappings aligned to 2 MiB and advised for transparent huge
//!   pages (`MADV_HUGEPAGE`, Linux), so that touching a new result costs one fault per 2 MiB
//!   instead of one per 4 KiB.
//!
//! Freed buffers of [`CACHE_MIN`] bytes and more go to a small cache (a few buffers,
//! [`buffer_cache_limit`] bytes in all) and the next allocation of about the same size takes one
//! back already faulted in: a loop of `c = a + b` then no longer pays the kernel for zeroing fresh
//! pages on every call, which costs more than the arithmetic. Requests for zeroed memory never
//! take a cached buffer.
//!
//! Every owned allocation is counted, per thread ([`stats`]), so tests and benchmarks can check
//! that views allocate no element memory and an operation allocates only its result.
//!
//! Nothing here aborts when memory runs out: element memory is requested fallibly, and freeing
//! never needs memory (the cache's list has room for every entry it may hold, reserved fallibly
//! the first time; a buffer that finds no room is simply freed).
use super::alloc::Shared;
use super::error::{Error, Result};
use smallvec::SmallVec;
use std::alloc::{self, Layout};
use std::cell::{Cell, UnsafeCell};
use std::mem::MaybeUninit;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Runs once when foreign memory is no longer used by any tensor.
pub type ReleaseHook = Box<dyn FnOnce() + Send + Sync>;

enum Owner {
    /// From the global allocator with this layout.
    Owned(Layout),
    /// From the global allocator with this layout at `raw`; the storage starts at the first
    /// cache line boundary in it.
    Padded {
        layout: Layout,
        raw: NonNull<u8>,
    },
    /// An anonymous mapping of `len` bytes (a multiple of [`HUGE_PAGE`]) at `ptr`.
    Mapped {
        len: usize,
    },
    Foreign(Option<ReleaseHook>),
    /// In the storage's own `inline` bytes (at most [`INLINE_BYTES`]).
    Inline,
}

pub struct Storage {
    /// Unused (dangling) for [`Owner::Inline`]: the bytes move with the storage until it settles
    /// in its `Arc`, so their address is taken only when asked for.
    ptr: NonNull<u8>,
    nbytes: usize,
    owner: Owner,
    /// Shared read-only by its owner (DLPack's read-only flag): every write is refused.
    read_only: bool,
    inline: InlineBytes,
}

/// Results up to this size live inside the storage itself, so creating one costs one allocation
/// (the `Arc`'s) instead of two: for a tiny result, the second allocation and its free cost more
/// than the arithmetic.
const INLINE_BYTES: usize = 64;

/// Aligned as the allocator's small blocks are, which suits every element type. Left
/// uninitialised unless zeroes are asked for: every other owner writes its elements before they
/// are read (and storages of other kinds never use these bytes).
#[repr(C, align(16))]
struct InlineBytes(UnsafeCell<MaybeUninit<[u8; INLINE_BYTES]>>);

impl InlineBytes {
    const fn new(zeroed: bool) -> InlineBytes {
        InlineBytes(UnsafeCell::new(if zeroed {
            MaybeUninit::zeroed()
        } else {
            MaybeUninit::uninit()
        }))
    }
}

// SAFETY: the storage is a plain block of bytes; the engine never hands out Rust references
// into it, only raw pointers, and callers are told not to write one tensor from two threads.
unsafe impl Send for Storage {}
// SAFETY: as above; concurrent reads of plain bytes are sound.
unsafe impl Sync for Storage {}

/// Alignment of owned storage from the global allocator: a cache line, which also suits every
/// SIMD width we use. Mapped storage is aligned to [`HUGE_PAGE`]. Below [`SMALL_BYTES`] the
/// allocator's natural 16 bytes do: an over-aligned request takes glibc's slower memalign path,
/// which costs more than such a small computation.
const ALIGN: usize = 64;
const SMALL_ALIGN: usize = 16;
const SMALL_BYTES: usize = 4096;

/// Allocations of at least this many bytes are mapped (huge-page advised) and cached when freed.
/// NumPy advises huge pages from 4 MiB; below that glibc's heap keeps reusing freed memory anyway.
pub const LARGE_BYTES: usize = 4 << 20;

/// The transparent huge page size on x86-64.
pub const HUGE_PAGE: usize = 2 << 20;

/// Freed buffers of at least this many bytes are cached. glibc serves requests from 128 KiB up
/// with fresh mappings (until its threshold adapts), so without the cache each such result
/// would be faulted in page by page again.
pub const CACHE_MIN: usize = 128 << 10;

/// At most this many freed buffers wait in the cache.
const CACHE_ENTRIES: usize = 16;

thread_local! {
    /// This thread's owned element allocations (counted here rather than in shared atomics: a
    /// thread-local increment costs nothing next to the allocation, and a test or benchmark sees
    /// exactly its own calls).
    static COUNTS: Cell<AllocStats> = const {
        Cell::new(AllocStats {
            allocs: 0,
            bytes: 0,
            cache_hits: 0,
        })
    };
}

/// Element-memory allocation counters (owned storage only; foreign memory is never counted).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AllocStats {
    /// Owned storages created with a non-zero size.
    pub allocs: u64,
    /// Their total requested bytes.
    pub bytes: u64,
    /// How many of them reused a cached buffer.
    pub cache_hits: u64,
}

impl AllocStats {
    /// The counts accumulated since `earlier`.
    pub fn since(self, earlier: AllocStats) -> AllocStats {
        AllocStats {
            allocs: self.allocs - earlier.allocs,
            bytes: self.bytes - earlier.bytes,
            cache_hits: self.cache_hits - earlier.cache_hits,
        }
    }
}

/// The element allocations made on this thread so far.
pub fn stats() -> AllocStats {
    COUNTS.with(|c| c.get())
}

fn count(bytes: usize, cache_hit: bool) {
    COUNTS.with(|c| {
        let mut s = c.get();
        s.allocs += 1;
        s.bytes += bytes as u64;
        s.cache_hits += cache_hit as u64;
        c.set(s);
    });
}

impl Storage {
    /// New owned storage of `nbytes`, zero-filled when `zeroed` (calloc-like: pages stay lazy).
    /// When the system refuses, the cache of freed buffers is given back first and the request
    /// tried once more, so cached memory never turns into an allocation failure.
    pub fn alloc(nbytes: usize, zeroed: bool) -> Result<Storage> {
        Storage::alloc_once(nbytes, zeroed).or_else(|e| match e {
            Error::Alloc { .. } => {
                release_cached_buffers();
                Storage::alloc_once(nbytes, zeroed)
            }
            e => Err(e),
        })
    }

    /// [`Storage::alloc`], shared: a storage of up to [`INLINE_BYTES`] is built directly in the
    /// block of its reference count (its one allocation), rather than built, then moved there.
    #[inline]
    pub fn alloc_shared(nbytes: usize, zeroed: bool) -> Result<Shared<Storage>> {
        if nbytes <= INLINE_BYTES {
            let shared = Shared::try_new_with(|| Storage::inline(nbytes, zeroed))?;
            if nbytes > 0 {
                count(nbytes, false);
            }
            return Ok(shared);
        }
        Shared::try_new(Storage::alloc(nbytes, zeroed)?)
    }

    /// Storage in its own inline bytes (empty storages too, uncounted: they allocate nothing).
    #[inline(always)]
    fn inline(nbytes: usize, zeroed: bool) -> Storage {
        Storage {
            ptr: NonNull::dangling(),
            nbytes,
            owner: Owner::Inline,
            read_only: false,
            inline: InlineBytes::new(zeroed),
        }
    }

    fn alloc_once(nbytes: usize, zeroed: bool) -> Result<Storage> {
        if nbytes <= INLINE_BYTES {
            if nbytes > 0 {
                count(nbytes, false);
            }
            return Ok(Storage::inline(nbytes, zeroed));
        }
        if nbytes >= LARGE_BYTES {
            if let Some((ptr, len, hit)) = map_large(nbytes, zeroed) {
                count(nbytes, hit);
                return Ok(Storage::new(ptr, nbytes, Owner::Mapped { len }));
            }
            // No mapping (not Linux, or the kernel refused): the global allocator may still cope.
        }
        if nbytes >= CACHE_MIN && !zeroed {
            if let Some((ptr, _, Kind::Heap(layout))) = take_cached(nbytes, false) {
                count(nbytes, true);
                return Ok(Storage::new(ptr, nbytes, Owner::Owned(layout)));
            }
        }
        // Between SMALL_BYTES and CACHE_MIN the cache line alignment is made by hand, from a
        // block a little larger: glibc serves an over-aligned request through memalign, which
        // splits the block it finds and frees the pieces around it, and costs several times a
        // plain malloc (which matters for results of a few KiB made call after call).
        let padded = (SMALL_BYTES..CACHE_MIN).contains(&nbytes);
        let layout = match nbytes {
            _ if padded => Layout::from_size_align(nbytes + (ALIGN - SMALL_ALIGN), SMALL_ALIGN),
            n if n < SMALL_BYTES => Layout::from_size_align(n, SMALL_ALIGN),
            n => Layout::from_size_align(n, ALIGN),
        }
        .map_err(|_| Error::Overflow { what: "nbytes" })?;
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe {
            if zeroed {
                alloc::alloc_zeroed(layout)
            } else {
                alloc::alloc(layout)
            }
        };
        let raw = NonNull::new(raw).ok_or(Error::Alloc { bytes: nbytes })?;
        count(nbytes, false);
        if padded {
            // SAFETY: a block aligned to SMALL_ALIGN reaches the next ALIGN boundary within its
            // padding of ALIGN - SMALL_ALIGN bytes, so the storage's nbytes lie inside it.
            let ptr = unsafe { raw.add(raw.as_ptr().align_offset(ALIGN)) };
            let owner = Owner::Padded { layout, raw };
            return Ok(Storage::new(ptr, nbytes, owner));
        }
        Ok(Storage::new(raw, nbytes, Owner::Owned(layout)))
    }

    /// Wraps caller memory without copying.
    ///
    /// # Safety
    /// `ptr` must be valid for reads and writes of `nbytes` bytes until `release` runs (or, when
    /// there is no hook, for as long as any tensor over it lives).
    pub unsafe fn foreign(
        ptr: NonNull<u8>,
        nbytes: usize,
        release: Option<ReleaseHook>,
    ) -> Storage {
        Storage::new(ptr, nbytes, Owner::Foreign(release))
    }

    /// Refuses every write from now on.
    pub fn set_read_only(&mut self) {
        self.read_only = true;
    }

    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    fn new(ptr: NonNull<u8>, nbytes: usize, owner: Owner) -> Storage {
        Storage {
            ptr,
            nbytes,
            owner,
            read_only: false,
            inline: InlineBytes::new(false),
        }
    }

    /// The first byte. Stable once the storage is in its `Arc` (inline bytes move with it).
    pub fn as_ptr(&self) -> *mut u8 {
        match self.owner {
            Owner::Inline => self.inline.0.get().cast(),
            _ => self.ptr.as_ptr(),
        }
    }

    pub fn nbytes(&self) -> usize {
        self.nbytes
    }
}

impl Drop for Storage {
    fn drop(&mut self) {
        match &mut self.owner {
            Owner::Owned(layout) => {
                if layout.size() >= CACHE_MIN {
                    release(self.ptr, layout.size(), Kind::Heap(*layout));
                } else {
                    // SAFETY: allocated in `alloc` with exactly this layout.
                    unsafe { alloc::dealloc(self.ptr.as_ptr(), *layout) }
                }
            }
            // SAFETY: allocated in `alloc` at `raw` with exactly this layout.
            Owner::Padded { layout, raw } => unsafe { alloc::dealloc(raw.as_ptr(), *layout) },
            Owner::Mapped { len } => release(self.ptr, *len, Kind::Mapped),
            Owner::Foreign(hook) => {
                if let Some(hook) = hook.take() {
                    hook();
                }
            }
            Owner::Inline => {}
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Large buffers: huge-page mappings and the cache of freed ones.

/// Cache size limit in bytes; `usize::MAX` until first read (then the default or the
/// `BC_BUFFER_CACHE_MB` environment variable).
static CACHE_LIMIT: AtomicUsize = AtomicUsize::new(usize::MAX);

/// Where a cached buffer came from, so it goes back there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// The global allocator, with this layout.
    Heap(Layout),
    /// `map_fresh`.
    Mapped,
}

struct CacheEntry {
    ptr: usize,
    len: usize,
    kind: Kind,
}

impl CacheEntry {
    fn free(self) {
        match self.kind {
            // SAFETY: the buffer came from the global allocator with this layout and nothing
            // refers to it any more.
            Kind::Heap(layout) => unsafe { alloc::dealloc(self.ptr as *mut u8, layout) },
            Kind::Mapped => unmap(self.ptr, self.len),
        }
    }
}

struct Cache {
    entries: Vec<CacheEntry>,
    bytes: usize,
    /// Entries evicted so far (tests tell from it whether another thread emptied the cache).
    evictions: u64,
}

/// Entries taken out of the cache, to free after its lock is released (inline: at most every
/// entry the cache holds, and one being added).
type Evicted = SmallVec<[CacheEntry; CACHE_ENTRIES + 1]>;

impl Cache {
    /// Takes out the oldest entries until at most `bytes` and `entries` remain; the caller frees
    /// them after releasing the lock.
    fn evict_beyond(&mut self, bytes: usize, entries: usize) -> Evicted {
        let mut out = Evicted::new();
        while self.bytes > bytes || self.entries.len() > entries {
            let e = self.entries.remove(0);
            self.bytes -= e.len;
            self.evictions += 1;
            out.push(e);
        }
        out
    }
}

static CACHE: Mutex<Cache> = Mutex::new(Cache {
    entries: Vec::new(),
    bytes: 0,
    evictions: 0,
});

fn cache() -> std::sync::MutexGuard<'static, Cache> {
    // The cache's invariants hold between statements, so a poisoned lock is still usable.
    CACHE.lock().unwrap_or_else(|e| e.into_inner())
}

/// The most bytes of freed large buffers kept for reuse: 1 GiB or 1/16 of physical memory,
/// whichever is less, unless `BC_BUFFER_CACHE_MB` or [`set_buffer_cache_limit`] says otherwise.
pub fn buffer_cache_limit() -> usize {
    let v = CACHE_LIMIT.load(Ordering::Relaxed);
    if v != usize::MAX {
        return v;
    }
    let v = match env_number(c"BC_BUFFER_CACHE_MB") {
        Some(mb) => mb.saturating_mul(1 << 20),
        None => default_cache_limit(),
    };
    CACHE_LIMIT.store(v, Ordering::Relaxed);
    v
}

/// Sets the cache limit in bytes (0 disables caching) and releases what no longer fits.
pub fn set_buffer_cache_limit(bytes: usize) {
    CACHE_LIMIT.store(bytes.min(usize::MAX - 1), Ordering::Relaxed);
    let evicted = cache().evict_beyond(bytes, usize::MAX);
    for e in evicted {
        e.free();
    }
}

/// Returns every cached buffer to the system.
pub fn release_cached_buffers() {
    let limit = buffer_cache_limit();
    set_buffer_cache_limit(0);
    CACHE_LIMIT.store(limit, Ordering::Relaxed);
}

/// A number from the environment, read without allocating (`std::env::var` copies the value to
/// the heap). Like every reader of the environment, this assumes it is not being changed by
/// another thread meanwhile (set such variables before starting threads).
fn env_number(name: &std::ffi::CStr) -> Option<usize> {
    // SAFETY: getenv with a NUL-terminated name; the value, when there is one, is a
    // NUL-terminated string that stays valid while the environment is not modified.
    let value = unsafe {
        let p = libc::getenv(name.as_ptr());
        if p.is_null() {
            return None;
        }
        std::ffi::CStr::from_ptr(p)
    };
    value.to_str().ok()?.trim().parse().ok()
}

fn default_cache_limit() -> usize {
    const GIB: usize = 1 << 30;
    #[cfg(target_os = "linux")]
    {
        // SAFETY: sysconf has no preconditions.
        let (pages, page) = unsafe {
            (
                libc::sysconf(libc::_SC_PHYS_PAGES),
                libc::sysconf(libc::_SC_PAGESIZE),
            )
        };
        if pages > 0 && page > 0 {
            return ((pages as usize).saturating_mul(page as usize) / 16).min(GIB);
        }
    }
    GIB
}

/// A mapping of at least `nbytes` (rounded up to whole huge pages): a cached one when it fits and
/// zeroing is not asked for, else a fresh one (whose pages the kernel zeroes lazily). Also says
/// whether it was a cached one.
fn map_large(nbytes: usize, zeroed: bool) -> Option<(NonNull<u8>, usize, bool)> {
    let len = nbytes.checked_add(HUGE_PAGE - 1)? / HUGE_PAGE * HUGE_PAGE;
    if !zeroed {
        if let Some((p, len, _)) = take_cached(len, true) {
            return Some((p, len, true));
        }
    }
    map_fresh(len).map(|p| (p, len, false))
}

/// The smallest cached buffer of the kind asked for with at least `len` bytes and at most a
/// quarter more.
fn take_cached(len: usize, mapped: bool) -> Option<(NonNull<u8>, usize, Kind)> {
    let mut c = cache();
    let best = c
        .entries
        .iter()
        .enumerate()
        .filter(|(_, e)| (e.kind == Kind::Mapped) == mapped)
        .filter(|(_, e)| e.len >= len && e.len - len <= len / 4)
        .min_by_key(|(_, e)| e.len)
        .map(|(i, _)| i)?;
    let e = c.entries.remove(best);
    c.bytes -= e.len;
    Some((NonNull::new(e.ptr as *mut u8)?, e.len, e.kind))
}

/// Puts a freed buffer in the cache (evicting the oldest beyond the limits), or frees it.
fn release(ptr: NonNull<u8>, len: usize, kind: Kind) {
    let entry = CacheEntry {
        ptr: ptr.as_ptr() as usize,
        len,
        kind,
    };
    let limit = buffer_cache_limit();
    if len > limit {
        entry.free();
        return;
    }
    let evicted = {
        let mut c = cache();
        // Room for every entry the cache may hold, reserved once; without it, no caching.
        if c.entries.capacity() < CACHE_ENTRIES + 1
            && c.entries.try_reserve_exact(CACHE_ENTRIES + 1).is_err()
        {
            drop(c);
            entry.free();
            return;
        }
        c.entries.push(entry);
        c.bytes += len;
        // Oldest first out, until both limits hold again.
        c.evict_beyond(limit, CACHE_ENTRIES)
    };
    for e in evicted {
        e.free();
    }
}

/// A fresh anonymous mapping of `len` bytes, 2 MiB aligned with huge pages advised (also the
/// streaming probes' working sets).
#[cfg(target_os = "linux")]
pub(super) fn map_fresh(len: usize) -> Option<NonNull<u8>> {
    // Map one huge page more than needed, then trim both ends so the start is 2 MiB aligned.
    // No MAP_NORESERVE: an impossible request must fail here (BC_ERR_ALLOC) as it does with the
    // global allocator, not succeed and bring the OOM killer later.
    let span = len.checked_add(HUGE_PAGE)?;
    // SAFETY: an anonymous private mapping at an address of the kernel's choosing; no existing
    // memory is affected.
    let raw = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            span,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if raw == libc::MAP_FAILED {
        return None;
    }
    let start = raw as usize;
    let aligned = (start + HUGE_PAGE - 1) & !(HUGE_PAGE - 1);
    let head = aligned - start;
    let tail = span - head - len;
    // SAFETY: both trimmed pieces lie inside the mapping just made and nothing refers to them;
    // madvise only changes how the kernel backs the kept part (failure is harmless).
    unsafe {
        if head > 0 {
            libc::munmap(raw, head);
        }
        if tail > 0 {
            libc::munmap((aligned + len) as *mut libc::c_void, tail);
        }
        libc::madvise(aligned as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
    }
    NonNull::new(aligned as *mut u8)
}

#[cfg(not(target_os = "linux"))]
pub(super) fn map_fresh(_len: usize) -> Option<NonNull<u8>> {
    None
}

#[cfg(target_os = "linux")]
pub(super) fn unmap(ptr: usize, len: usize) {
    // SAFETY: `ptr..ptr+len` is a mapping made by `map_fresh` that no storage refers to any more.
    unsafe {
        libc::munmap(ptr as *mut libc::c_void, len);
    }
}

#[cfg(not(target_os = "linux"))]
pub(super) fn unmap(_ptr: usize, _len: usize) {
    unreachable!("no mappings are made on this platform")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_storage_is_huge_page_aligned_and_reused() {
        let n = LARGE_BYTES + 12345;
        let s = Storage::alloc(n, false).unwrap();
        let p = s.as_ptr() as usize;
        if matches!(s.owner, Owner::Mapped { .. }) {
            assert_eq!(p % HUGE_PAGE, 0);
            // SAFETY: the storage holds n bytes.
            unsafe { std::ptr::write_bytes(s.as_ptr(), 7, n) };
            drop(s);
            // Another test may take it first, so only check that a same-size request works and
            // that a zeroed request never sees old bytes.
            let z = Storage::alloc(n, true).unwrap();
            // SAFETY: the storage holds n bytes.
            let bytes = unsafe { std::slice::from_raw_parts(z.as_ptr(), n) };
            assert!(bytes.iter().all(|&b| b == 0));
        }
    }

    #[test]
    fn tiny_storages_live_inline_zeroed_and_aligned() {
        for n in [1, 17, INLINE_BYTES] {
            let s = Storage::alloc_shared(n, true).unwrap();
            assert!(matches!(s.owner, Owner::Inline));
            let p = s.as_ptr();
            assert_eq!(p as usize % SMALL_ALIGN, 0);
            // SAFETY: the storage holds n bytes.
            assert!(unsafe { std::slice::from_raw_parts(p, n) }
                .iter()
                .all(|&b| b == 0));
            // SAFETY: as above; the bytes stay put while the Arc lives.
            unsafe { std::ptr::write_bytes(p, 5, n) };
            let view = s.clone();
            assert_eq!(view.as_ptr(), p);
            assert!(unsafe { std::slice::from_raw_parts(view.as_ptr(), n) }
                .iter()
                .all(|&b| b == 5));
        }
        let s = Storage::alloc(INLINE_BYTES + 1, false).unwrap();
        assert!(matches!(s.owner, Owner::Owned(_)));
    }

    #[test]
    fn mid_size_storages_are_cache_line_aligned_without_memalign() {
        for n in [SMALL_BYTES, SMALL_BYTES + 1, 12_345, CACHE_MIN - 1] {
            for zeroed in [false, true] {
                let s = Storage::alloc(n, zeroed).unwrap();
                assert!(matches!(s.owner, Owner::Padded { .. }), "{n}");
                assert_eq!(s.as_ptr() as usize % ALIGN, 0, "{n}");
                // SAFETY: the storage holds n bytes.
                let bytes = unsafe { std::slice::from_raw_parts_mut(s.as_ptr(), n) };
                if zeroed {
                    assert!(bytes.iter().all(|&b| b == 0));
                }
                bytes.fill(3);
            }
        }
        let below = Storage::alloc(SMALL_BYTES - 1, false).unwrap();
        assert!(matches!(below.owner, Owner::Owned(l) if l.align() == SMALL_ALIGN));
    }

    #[test]
    fn counters_see_owned_allocations_only() {
        let before = stats();
        let _a = Storage::alloc(100, false).unwrap();
        let mut x = [0u8; 8];
        // SAFETY: x outlives the storage.
        let _f = unsafe { Storage::foreign(NonNull::new(x.as_mut_ptr()).unwrap(), 8, None) };
        let d = stats().since(before);
        assert_eq!((d.allocs, d.bytes), (1, 100));
    }

    #[test]
    fn cache_respects_its_limit() {
        // Use sizes no other test allocates, so their buffers cannot interfere.
        let n = 9 * HUGE_PAGE;
        let limit = buffer_cache_limit();
        let a = Storage::alloc(n, false).unwrap();
        drop(a);
        {
            let c = cache();
            assert!(c.bytes <= limit.max(n));
            assert!(c.entries.len() <= CACHE_ENTRIES);
        }
    }

    #[test]
    fn mid_size_buffers_are_reused_and_zeroed_requests_are_not() {
        // The cache is shared with the other tests' threads: each attempt starts from an empty
        // cache (a buffer another test left, rounded to the same length, would be taken first),
        // and an attempt that another thread disturbed (it emptied the cache, or cached a buffer
        // of a near size meanwhile) is run again.
        let n = 1_700_003;
        for _ in 0..20 {
            release_cached_buffers();
            let evictions = cache().evictions;
            let a = Storage::alloc(n, false).unwrap();
            let p = a.as_ptr();
            // SAFETY: the storage holds n bytes.
            unsafe { std::ptr::write_bytes(p, 9, n) };
            drop(a);
            let before = stats();
            let z = Storage::alloc(n, true).unwrap();
            // SAFETY: the storage holds n bytes.
            assert!(unsafe { std::slice::from_raw_parts(z.as_ptr(), n) }
                .iter()
                .all(|&b| b == 0));
            let b = Storage::alloc(n - 1000, false).unwrap();
            let d = stats().since(before);
            // Disturbed: the cache was emptied, or served another thread's buffer of a near size.
            if cache().evictions != evictions || b.as_ptr() != p {
                continue;
            }
            assert_eq!((d.allocs, d.cache_hits), (2, 1));
            return;
        }
        panic!("the freed buffer was never reused (20 attempts)");
    }

    /// Views allocate no element memory; an operation allocates exactly its result (one storage
    /// of the result's bytes), or nothing when it writes into `out` or in place.
    #[test]
    fn views_never_copy_and_operations_allocate_only_their_result() {
        use crate::engine::{ops, BinaryOp, DType, Init, Options, Tensor};
        let opts = Options::default();
        for rows in [3usize, 1100] {
            // 1100 x 1024 float32 is over LARGE_BYTES: the mapped path.
            let a = Tensor::new(DType::F32, &[rows, 1024], Init::Fill(1.0)).unwrap();
            let b = Tensor::new(DType::F32, &[1024], Init::Fill(2.0)).unwrap();
            let col = Tensor::new(DType::F32, &[rows, 1], Init::Fill(3.0)).unwrap();
            let out = Tensor::new(DType::F32, &[rows, 1024], Init::Zeros).unwrap();
            let before = stats();
            let e = b.expand_to(&[rows, 1024]).unwrap();
            let t = a.transpose(0, 1).unwrap();
            let p = a.permute(&[1, 0]).unwrap();
            let s = a.slice(1, 0, 512, 2).unwrap();
            let v = ops::broadcast_tensors(&[&a, &b, &col]).unwrap();
            assert_eq!(stats().since(before).allocs, 0, "views allocated");
            drop((e, t, p, s, v));
            let result_bytes = (rows * 1024 * 4) as u64;
            for (x, y) in [(&a, &b), (&a, &col), (&col, &b), (&b, &a)] {
                let before = stats();
                let (r, _) = ops::binary(BinaryOp::Add, x, y, opts).unwrap();
                let d = stats().since(before);
                assert_eq!((d.allocs, d.bytes), (1, result_bytes));
                drop(r);
            }
            let before = stats();
            ops::binary_out(BinaryOp::Mul, &a, &col, &out, opts).unwrap();
            ops::binary_inplace(BinaryOp::Sub, &out, &b, opts).unwrap();
            // An expanded (stride-0) operand is read in place, not materialised.
            ops::binary_out(
                BinaryOp::Div,
                &a,
                &b.expand_to(&[rows, 1024]).unwrap(),
                &out,
                opts,
            )
            .unwrap();
            assert_eq!(stats().since(before).allocs, 0, "out= / in-place allocated");
        }
    }
}
