//! Tensor handles and every conversion of a caller's pointer. A `bc_tensor *` is never
//! dereferenced: it is a token (slot index + generation) into a registry of live tensors, so a
//! freed, twice-freed or made-up handle is recognised and refused instead of being followed.
//!
//! # Reading without locks
//!
//! Each slot holds its tensor in place and one atomic word of state: the slot's generation and
//! whether it is live. A call reads its operands without taking any lock and without writing to
//! the slots: it announces the slots in its thread's record, checks each state against the
//! handle's generation, and borrows the tensors where they lie ([`readers`]). A free marks the
//! slot dead (one compare-and-swap, so of two racing frees exactly one wins), waits for reads
//! announced on that slot to end, then drops the tensor. So a freed, stale or forged handle is
//! refused, a free racing a read is safe, and reading costs a few plain stores, one locked store
//! and one load per handle (freeing, one compare-and-swap and no fence); two threads using the
//! same handles never write a common cache line.
//!
//! Nothing here allocates except a new chunk of slots, which is allocated fallibly: the registry
//! keeps its free slots in lists threaded through the slots themselves, so freeing a handle never
//! needs memory, and reaching the handle limit or failing to grow is `BC_ERR_ALLOC`.
use super::status::FfiError;
use crate::engine::shape::Dims;
use crate::engine::Tensor;
use readers::{Own, Reading, MAX_HAZARDS};
use std::cell::{Cell, UnsafeCell};
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};

mod readers;

/// An opaque tensor handle. Obtain one from a `bc_tensor_*` constructor, a view function or an
/// operation; release it with `bc_tensor_free`. Handles are tokens, not addresses: never
/// dereference one. Using a handle after freeing it yields `BC_ERR_INVALID_HANDLE`.
pub struct bc_tensor {
    _private: [u8; 0],
}

/// Largest number of dimensions a shape may have.
pub const BC_MAX_NDIM: usize = 64;
const _: () = assert!(BC_MAX_NDIM == crate::engine::shape::MAX_NDIM);

/// Slots live in fixed-size chunks that are allocated on first need and never move or go away,
/// so a lookup finds its slot without any registry-wide lock, and a slot's memory stays valid
/// for a reader whatever happens to its handle. Creating and freeing handles take the (short)
/// allocator lock only when the thread's own cache of freed slots is empty or full.
const CHUNK_SLOTS: usize = 256;
const MAX_CHUNKS: usize = 1 << 16;

/// A lock for the registry's short critical sections (the shared free list). Taking it costs one
/// atomic read-modify-write and releasing it one plain store. A waiter spins briefly, then
/// yields its time slice, so a holder that was descheduled is not starved.
struct SpinLock<T> {
    locked: AtomicBool,
    value: UnsafeCell<T>,
}

// SAFETY: the value is only reached through a guard, and at most one guard exists at a time.
unsafe impl<T: Send> Sync for SpinLock<T> {}

impl<T> SpinLock<T> {
    const fn new(value: T) -> SpinLock<T> {
        SpinLock {
            locked: AtomicBool::new(false),
            value: UnsafeCell::new(value),
        }
    }

    fn lock(&self) -> SpinGuard<'_, T> {
        let mut spins = 0u32;
        while self
            .locked
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            while self.locked.load(Ordering::Relaxed) {
                if spins < 100 {
                    spins += 1;
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            }
        }
        SpinGuard { lock: self }
    }
}

/// Releases the lock when dropped, also while unwinding.
struct SpinGuard<'a, T> {
    lock: &'a SpinLock<T>,
}

impl<T> std::ops::Deref for SpinGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: this guard holds the lock.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> std::ops::DerefMut for SpinGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: this guard holds the lock, and `&mut self` makes this the only reference.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T> Drop for SpinGuard<'_, T> {
    fn drop(&mut self) {
        self.lock.locked.store(false, Ordering::Release);
    }
}

struct Slot {
    /// `generation << 1 | live`. The generation grows by one at every free, and a token names
    /// the slot only at the generation it was made at. Changed only by the slot's owner: the
    /// thread filling a reserved slot, or the free that won the compare-and-swap.
    state: AtomicU64,
    /// The tensor, initialised exactly while the slot is live and until its free has waited out
    /// the reads (see the module doc). Never written while live.
    tensor: UnsafeCell<MaybeUninit<Tensor>>,
    /// While the slot is free: the next slot of the free list it is on ([`NONE`] at the end).
    /// Written only by the thread that owns the list (under the allocator lock for the shared
    /// list).
    next: AtomicU32,
}

// SAFETY: the tensor is written only by the slot's owner while no reader can reach it (not live,
// or live but not yet published), read by any thread only while live and announced, and taken
// out by the one free that marked it dead, once every announced read has ended.
unsafe impl Sync for Slot {}

fn live(generation: u64) -> u64 {
    generation << 1 | 1
}

impl Slot {
    /// The tensor of a slot whose state was seen live in a read still under way.
    ///
    /// # Safety
    /// The caller's [`Reading`] announced this slot before seeing its state live, and outlives
    /// the reference.
    unsafe fn tensor(&self) -> &Tensor {
        // SAFETY: live means initialised, and the announced read keeps it from being dropped.
        unsafe { (*self.tensor.get()).assume_init_ref() }
    }
}

/// No slot: the end of a free list.
const NONE: u32 = u32::MAX;

struct Chunk {
    slots: [Slot; CHUNK_SLOTS],
}

static CHUNKS: [AtomicPtr<Chunk>; MAX_CHUNKS] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; MAX_CHUNKS];

/// Which slots exist (`next`) and the shared list of free ones; the others hold live handles or
/// sit in a thread's cache.
struct Allocator {
    next: usize,
    free: u32,
}
static ALLOCATOR: SpinLock<Allocator> = SpinLock::new(Allocator {
    next: 0,
    free: NONE,
});

/// Token layout: the low `INDEX_BITS` hold the slot index + 1 (so no token is NULL), the high
/// bits the slot's generation. On 64-bit targets that is 24 bits of index (the handle limit,
/// 16,777,215 live handles) and 40 of generation: a slot is reused 2^40 - 1 times (at 200 ns per
/// make-and-free, 2.5 days of doing nothing else) and then retired for good, never reused, so a
/// token can never come back (see [`release`]).
const INDEX_BITS: u32 = if usize::BITS >= 64 { 24 } else { 16 };
const INDEX_MASK: usize = (1 << INDEX_BITS) - 1;
/// Generations `0..=LAST_GENERATION` fit a token.
const LAST_GENERATION: u64 = (1u64 << (usize::BITS - INDEX_BITS)) - 1;
/// Most slots: every index + 1 fits the index bits.
const MAX_SLOTS: usize = if CHUNK_SLOTS * MAX_CHUNKS < INDEX_MASK {
    CHUNK_SLOTS * MAX_CHUNKS
} else {
    INDEX_MASK
};
/// The handle limit, for messages.
pub(crate) const MAX_HANDLES: usize = MAX_SLOTS;
/// The slot limit in force: [`MAX_SLOTS`], or less for tests ([`set_slot_limit_for_tests`]).
static SLOT_LIMIT: AtomicUsize = AtomicUsize::new(MAX_SLOTS);

/// XORed into every token so that small integers and ordinary pointers do not decode to the
/// first slots at generation 0: a stray value then names a live handle only by chance. Its low
/// bits are 0, so no token is NULL.
const KEY: usize = 0x9E37_79B9_7F4A_7C15_u64 as usize & !INDEX_MASK;

fn encode(index: usize, generation: u64) -> *mut bc_tensor {
    let token = ((generation as usize) << INDEX_BITS) | (index + 1);
    (token ^ KEY) as *mut bc_tensor
}

fn decode(handle: *const bc_tensor) -> (usize, u64) {
    let raw = handle as usize ^ KEY;
    (
        (raw & INDEX_MASK).wrapping_sub(1),
        (raw >> INDEX_BITS) as u64,
    )
}

/// The slot at `index`, if its chunk exists.
#[inline]
fn slot(index: usize) -> Option<&'static Slot> {
    let chunk = CHUNKS.get(index / CHUNK_SLOTS)?.load(Ordering::Acquire);
    // SAFETY: a non-null chunk pointer comes from `new_chunk` and is never freed.
    let chunk = unsafe { chunk.as_ref()? };
    Some(&chunk.slots[index % CHUNK_SLOTS])
}

/// A new chunk of empty slots, or `None` when the memory is refused. Built in place, slot by
/// slot: a chunk is tens of KiB, too large to build on the stack and move.
#[cold]
#[inline(never)]
fn new_chunk() -> Option<*mut Chunk> {
    let layout = std::alloc::Layout::new::<Chunk>();
    // SAFETY: the layout has a non-zero size.
    let chunk = unsafe { std::alloc::alloc(layout) }.cast::<Chunk>();
    if chunk.is_null() {
        return None;
    }
    for i in 0..CHUNK_SLOTS {
        // SAFETY: slot i of the fresh block, written once before anything reads it.
        unsafe {
            std::ptr::addr_of_mut!((*chunk).slots[i]).write(Slot {
                state: AtomicU64::new(0),
                tensor: UnsafeCell::new(MaybeUninit::uninit()),
                next: AtomicU32::new(NONE),
            })
        };
    }
    Some(chunk)
}

/// Number of chunks allocated so far (tests account for them: they are never freed).
#[doc(hidden)]
pub fn registry_chunks() -> usize {
    ALLOCATOR.lock().next.div_ceil(CHUNK_SLOTS)
}

/// Bytes of one chunk of slots.
#[doc(hidden)]
pub const CHUNK_BYTES: usize = std::mem::size_of::<Chunk>();

/// Lowers the number of slots the registry may ever create (`MAX_SLOTS` at most), so tests can
/// reach the handle limit without millions of handles; returns the previous limit. Not exported
/// from the shared library.
#[doc(hidden)]
pub fn set_slot_limit_for_tests(limit: usize) -> usize {
    SLOT_LIMIT.swap(limit.min(MAX_SLOTS), Ordering::SeqCst)
}

/// Moves the slot of the live handle `h` to `generation` (at most the last one a token can
/// hold), as if it had been freed and reused that often, and returns the handle's new token (`h`
/// itself then reads as stale). For tests of generation exhaustion, which cannot run 2^40
/// cycles. Not exported from the shared library.
#[doc(hidden)]
pub fn set_generation_for_tests(h: *mut bc_tensor, generation: u64) -> Option<*mut bc_tensor> {
    let (index, old) = decode(h);
    if generation > LAST_GENERATION {
        return None;
    }
    slot(index)?
        .state
        .compare_exchange(
            live(old),
            live(generation),
            Ordering::AcqRel,
            Ordering::Relaxed,
        )
        .ok()?;
    Some(encode(index, generation))
}

// ---------------------------------------------------------------------------------------------
// Per thread: the cache of freed slots and the reader record.

/// This thread's freed slots, kept for its next registrations (a loop that makes and frees
/// handles then never takes the allocator lock), and its reader record. A list threaded through
/// the slots (`Slot::next`), so the thread-local is plain data: it is never destroyed (usable
/// while the thread exits) and caching never allocates. One cell per field: each is read at the
/// width it was written (copying the whole struct in and out of one cell made loads wait for
/// narrower stores to drain).
struct Local {
    head: Cell<u32>,
    len: Cell<u32>,
    state: Cell<HookState>,
    record: Cell<Own>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum HookState {
    /// No thread-exit hook yet: slots freed here go to the shared list, and reads share
    /// record 0.
    Off,
    /// The thread-exit hook is registered: it hands the cache and the record back.
    On,
    /// The thread is exiting (the hook ran), or no hook can be registered: no more caching, no
    /// record of its own.
    Closed,
}

const LOCAL_FREE_MAX: u32 = 64;
// Plain data: the thread-local has no destructor, so it is usable while the thread exits.
const _: () = assert!(!std::mem::needs_drop::<Local>());

thread_local! {
    static LOCAL: Local = const {
        Local {
            head: Cell::new(NONE),
            len: Cell::new(0),
            state: Cell::new(HookState::Off),
            record: Cell::new(Own::NONE),
        }
    };
}

/// Registers the thread-exit hook on first need, and takes a reader record along: both are
/// given back by the hook, so neither is taken without it. Returns the state.
#[cold]
fn arm(local: &Local) -> HookState {
    if local.state.get() == HookState::Off {
        if thread_exit::register() {
            local.record.set(readers::take_record());
            local.state.set(HookState::On);
        } else {
            local.state.set(HookState::Closed);
        }
    }
    local.state.get()
}

/// The slot at a free-list index (every index on a list names an existing slot).
fn listed(index: u32) -> &'static Slot {
    slot(index as usize).expect("listed slots exist")
}

/// Pops a slot from this thread's cache.
#[inline(always)]
fn pop_local() -> Option<usize> {
    // The thread-local's address only, so that the access is inlined wherever this is (with
    // the pop inside it, the access was a call of its own in the allocating call).
    let local = LOCAL.with(|local| local as *const Local);
    // SAFETY: this thread's local, plain data without a destructor (usable while the thread
    // exits), read on this thread within this call.
    let local = unsafe { &*local };
    let index = local.head.get();
    if index == NONE {
        return None;
    }
    local.head.set(listed(index).next.load(Ordering::Relaxed));
    local.len.set(local.len.get() - 1);
    Some(index as usize)
}

/// Pushes a freed slot on this thread's cache; false when the cache is full or off (the caller
/// then puts the slot on the shared list).
#[inline(always)]
fn push_local(index: usize) -> bool {
    LOCAL.with(|local| {
        let state = match local.state.get() {
            HookState::On => HookState::On,
            _ => arm(local),
        };
        if local.len.get() >= LOCAL_FREE_MAX || state != HookState::On {
            return false;
        }
        listed(index as u32)
            .next
            .store(local.head.get(), Ordering::Relaxed);
        local.head.set(index as u32);
        local.len.set(local.len.get() + 1);
        true
    })
}

/// This thread's reader record ([`Own::NONE`]: it shares record 0).
#[inline]
fn own_record() -> Own {
    LOCAL.with(|local| match local.state.get() {
        HookState::On => local.record.get(),
        HookState::Off if arm(local) == HookState::On => local.record.get(),
        _ => Own::NONE,
    })
}

/// Hands this thread's cached slots and its record back, and stops caching: the thread is
/// exiting.
fn close_local() {
    let (head, len, record) = LOCAL.with(|local| {
        local.state.set(HookState::Closed);
        (
            local.head.replace(NONE),
            local.len.replace(0),
            local.record.replace(Own::NONE),
        )
    });
    readers::give_back(record);
    if len == 0 {
        return;
    }
    let mut tail = head;
    for _ in 1..len {
        tail = listed(tail).next.load(Ordering::Relaxed);
    }
    let mut alloc = ALLOCATOR.lock();
    listed(tail).next.store(alloc.free, Ordering::Relaxed);
    alloc.free = head;
}

/// A thread-exit hook that runs [`close_local`], registered per thread through a POSIX key
/// (`pthread_setspecific` reports a refusal, where a Rust thread-local with a destructor would
/// abort when glibc cannot allocate its record). Without it a thread caches nothing and has no
/// reader record of its own.
#[cfg(unix)]
mod thread_exit {
    use std::sync::OnceLock;

    static KEY: OnceLock<Option<libc::pthread_key_t>> = OnceLock::new();

    unsafe extern "C" fn on_exit(_: *mut libc::c_void) {
        super::close_local();
    }

    /// Arms the hook for this thread; false when that is not possible.
    pub(super) fn register() -> bool {
        let key = KEY.get_or_init(|| {
            let mut key = 0;
            // SAFETY: `key` is valid for a write; `on_exit` has the signature the key expects.
            (unsafe { libc::pthread_key_create(&mut key, Some(on_exit)) } == 0).then_some(key)
        });
        // Any non-NULL value makes the key's destructor run at thread exit.
        key.is_some_and(|key| {
            // SAFETY: a key created above.
            unsafe {
                libc::pthread_setspecific(key, std::ptr::NonNull::<u8>::dangling().as_ptr().cast())
                    == 0
            }
        })
    }

    /// Unloading the library: threads that exit later must not call into unmapped code.
    #[cfg(target_os = "linux")]
    #[used]
    #[link_section = ".fini_array"]
    static ON_UNLOAD: extern "C" fn() = {
        extern "C" fn delete_key() {
            if let Some(Some(key)) = KEY.get() {
                // SAFETY: a key created by `register`; deleting it only stops its destructor.
                unsafe { libc::pthread_key_delete(*key) };
            }
        }
        delete_key
    };
}

#[cfg(not(unix))]
mod thread_exit {
    /// No portable fallible thread-exit hook here: every freed slot goes to the shared list.
    pub(super) fn register() -> bool {
        false
    }
}

// ---------------------------------------------------------------------------------------------
// Making and freeing handles.

/// A slot taken for a handle about to be made. Dropping it unused puts it back, so a call can
/// take its slot before it builds anything it could not undo (a wrapped tensor's release
/// callback must not run when the call fails).
pub(crate) struct Reserved {
    index: usize,
}

impl Reserved {
    /// Puts `t` in the slot and returns its handle. Cannot fail.
    pub(crate) fn fill(mut self, t: Tensor) -> *mut bc_tensor {
        self.place().write(t);
        // SAFETY: written just above.
        unsafe { self.publish() }
    }

    /// Lets `build` make the tensor in the slot itself, so that it is not copied there, and
    /// returns its handle; `None` or an error from `build` puts the slot back.
    ///
    /// # Safety
    /// `build` initialises the place it is given exactly when it returns `Some(Ok(()))`.
    pub(crate) unsafe fn build<E>(
        mut self,
        build: impl FnOnce(&mut MaybeUninit<Tensor>) -> Option<Result<(), E>>,
    ) -> Option<Result<*mut bc_tensor, E>> {
        match build(self.place())? {
            // SAFETY: initialised, by the caller's contract.
            Ok(()) => Some(Ok(unsafe { self.publish() })),
            Err(e) => Some(Err(e)),
        }
    }

    /// Where the slot's tensor goes. The slot is ours until it is live: it is on no free list,
    /// and its state is not live, so no reader reaches the place before [`Reserved::publish`].
    fn place(&mut self) -> &mut MaybeUninit<Tensor> {
        // SAFETY: as above; the slot's previous tensor, if any, was taken out by its free.
        unsafe { &mut *listed(self.index as u32).tensor.get() }
    }

    /// Makes the slot live and returns its handle.
    ///
    /// # Safety
    /// The slot's place holds a tensor.
    unsafe fn publish(self) -> *mut bc_tensor {
        let index = self.index;
        std::mem::forget(self);
        let slot = listed(index as u32);
        let generation = slot.state.load(Ordering::Relaxed) >> 1;
        slot.state.store(live(generation), Ordering::Release);
        encode(index, generation)
    }
}

impl Drop for Reserved {
    fn drop(&mut self) {
        free_slot(self.index);
    }
}

/// Takes a free slot: from this thread's cache, else the shared list, else a new one (a new
/// chunk every [`CHUNK_SLOTS`]). The cache's pop is inlined into the caller (which reads this
/// thread's locals already: one look-up of them, not two), the rest is a call.
#[inline(always)]
pub(crate) fn reserve() -> Result<Reserved, FfiError> {
    match pop_local() {
        Some(index) => Ok(Reserved { index }),
        None => reserve_shared(),
    }
}

/// [`reserve`] from the shared list, or a new slot.
#[inline(never)]
fn reserve_shared() -> Result<Reserved, FfiError> {
    let mut alloc = ALLOCATOR.lock();
    if alloc.free != NONE {
        let index = alloc.free;
        alloc.free = listed(index).next.load(Ordering::Relaxed);
        return Ok(Reserved {
            index: index as usize,
        });
    }
    let index = alloc.next;
    if index >= SLOT_LIMIT.load(Ordering::Relaxed) {
        return Err(FfiError::HandleLimit);
    }
    if index % CHUNK_SLOTS == 0 {
        let chunk = new_chunk().ok_or(crate::engine::Error::Alloc { bytes: CHUNK_BYTES })?;
        CHUNKS[index / CHUNK_SLOTS].store(chunk, Ordering::Release);
    }
    alloc.next = index + 1;
    Ok(Reserved { index })
}

/// Registers `t` and returns its new handle (`t` is dropped when there is no slot for it).
pub(crate) fn register(t: Tensor) -> Result<*mut bc_tensor, FfiError> {
    Ok(reserve()?.fill(t))
}

/// Puts an empty slot on a free list: this thread's cache, or the shared list. Inlined, as
/// [`reserve`]'s pop.
#[inline(always)]
fn free_slot(index: usize) {
    if !push_local(index) {
        free_slot_shared(index);
    }
}

/// [`free_slot`] on the shared list.
#[inline(never)]
fn free_slot_shared(index: usize) {
    let mut alloc = ALLOCATOR.lock();
    listed(index as u32)
        .next
        .store(alloc.free, Ordering::Relaxed);
    alloc.free = index as u32;
}

/// Frees a handle. Returns false when it was not live. The tensor is dropped once the slot is
/// dead and no read of it is under way, and with no lock held, because dropping may run a
/// caller's release callback, which may call back in.
///
/// A slot at the last generation a token can hold is retired instead of reused: its next handle
/// would repeat a token that was handed out before, and a stale copy of that token would then
/// name someone else's tensor. A retired slot costs its 0.01% share of a chunk, once per 2^40
/// frees of it.
pub(crate) fn release(handle: *mut bc_tensor) -> bool {
    let (index, generation) = decode(handle);
    let Some(slot) = slot(index) else {
        return false;
    };
    let retired = generation == LAST_GENERATION;
    let dead = if retired { generation } else { generation + 1 } << 1;
    // Of racing frees of one handle, exactly one gets past this. `SeqCst`: the mark is what
    // `wait_for_readers` orders against the readers' starts.
    if slot
        .state
        .compare_exchange(live(generation), dead, Ordering::SeqCst, Ordering::Relaxed)
        .is_err()
    {
        return false;
    }
    readers::wait_for_readers(own_record(), index);
    // SAFETY: the slot was live (so its tensor is initialised) and is now dead and ours: no read
    // of it is under way, no later one gets past its state, and it is on no free list yet (so a
    // release callback run by the drop, calling back in, cannot reuse it).
    unsafe { (*slot.tensor.get()).assume_init_drop() };
    if !retired {
        free_slot(index);
    }
    true
}

// ---------------------------------------------------------------------------------------------
// Reading handles.

/// The tensor behind a handle argument (a cheap clone: storage is shared).
pub(crate) fn get(handle: *const bc_tensor, name: &'static str) -> Result<Tensor, FfiError> {
    Ok(with([(handle, name)], |_| true, |[t]| t.try_clone())??)
}

/// Runs `f` on the tensor behind one handle, borrowed where it lies: for reading metadata and
/// making views, which take no time. `f` must not register or free handles (see [`with`]).
pub(crate) fn borrow<R>(
    handle: *const bc_tensor,
    name: &'static str,
    f: impl FnOnce(&Tensor) -> R,
) -> Result<R, FfiError> {
    with([(handle, name)], |_| true, |[t]| f(t))
}

/// Runs `f` on the tensors behind `handles` (each given with its argument name, for errors;
/// the same handle may come more than once). When `inline` says the work is small, `f` borrows
/// them in their slots, read without locks (see the module doc); otherwise `f` gets clones, made
/// before the read ends, so a long computation never holds up a free of the same handles.
///
/// Errors name the first bad argument in argument order: NULL gives `NullArg`, anything not live
/// `InvalidHandle`. `f` must not read or free a handle (reads do not nest, and a free would wait
/// for this read), nor drop the last reference to a storage with a release hook (a caller's hook
/// must not run inside a read; the borrowed tensors keep theirs alive). It may register a tensor
/// it made: registering touches no other slot and no reader record.
#[inline]
pub(crate) fn with<const K: usize, R>(
    handles: [(*const bc_tensor, &'static str); K],
    inline: impl FnOnce([&Tensor; K]) -> bool,
    f: impl FnOnce([&Tensor; K]) -> R,
) -> Result<R, FfiError> {
    const { assert!(K <= MAX_HAZARDS) };
    if let Some(i) = handles.iter().position(|(h, _)| h.is_null()) {
        // An earlier argument that is not live is the first error.
        if let Some(&(_, name)) = handles[..i].iter().find(|(h, _)| !is_live(*h)) {
            return Err(FfiError::InvalidHandle(name));
        }
        return Err(FfiError::NullArg(handles[i].1));
    }
    let mut hazards = [0u32; MAX_HAZARDS];
    let found: [(u64, Option<&'static Slot>); K] = std::array::from_fn(|i| {
        let (index, generation) = decode(handles[i].0);
        hazards[i] = index.wrapping_add(1) as u32;
        (generation, slot(index))
    });
    let reading = Reading::begin(own_record(), hazards);
    for (i, &(generation, slot)) in found.iter().enumerate() {
        // `SeqCst`, after the read's start: see `readers::wait_for_readers`.
        if slot.is_none_or(|s| s.state.load(Ordering::SeqCst) != live(generation)) {
            return Err(FfiError::InvalidHandle(handles[i].1));
        }
    }
    // SAFETY: every slot was announced by `reading` and then seen live; `reading` outlives every
    // use of the references (it ends when this function returns, or after the clones below).
    let tensors: [&Tensor; K] =
        std::array::from_fn(|i| unsafe { found[i].1.expect("seen live").tensor() });
    // `f` is called in one place, so that the compiler may inline it (a closure called from
    // two was a call of its own, for every tiny call): with the borrowed tensors, the read
    // still under way, or with clones, the read ended.
    // (The clones are made only on that path: an array of them set to `None` up front was
    // cleared and dropped on every call.)
    let mut reading = Some(reading);
    let owned: [Option<Tensor>; K];
    let args = if inline(tensors) {
        tensors
    } else {
        let mut clones: [Option<Tensor>; K] = [const { None }; K];
        for (o, t) in clones.iter_mut().zip(tensors) {
            *o = Some(t.try_clone()?);
        }
        reading = None;
        owned = clones;
        owned.each_ref().map(|t| t.as_ref().expect("cloned above"))
    };
    let result = f(args);
    drop(reading);
    Ok(result)
}

/// Whether a handle is live right now.
pub(crate) fn is_live(handle: *const bc_tensor) -> bool {
    let (index, generation) = decode(handle);
    slot(index).is_some_and(|s| s.state.load(Ordering::Acquire) == live(generation))
}

/// Number of live handles (for leak checks in tests): a count of the live slots, in time
/// proportional to the most handles ever live at once.
pub(crate) fn live_count() -> usize {
    let next = ALLOCATOR.lock().next;
    (0..next)
        .filter(|&i| slot(i).is_some_and(|s| s.state.load(Ordering::Acquire) & 1 == 1))
        .count()
}

/// A caller's `bc_tensor **out`, written once, when the call ends: the new handle on success
/// ([`OutHandle::set`]), NULL on any failure (when dropped unset, also while unwinding). Writing
/// last means an out-pointer may alias anything the call reads.
pub(crate) struct OutHandle<'a> {
    out: &'a mut *mut bc_tensor,
    set: bool,
}

impl OutHandle<'_> {
    pub(crate) fn set(mut self, handle: *mut bc_tensor) {
        *self.out = handle;
        self.set = true;
    }
}

impl Drop for OutHandle<'_> {
    fn drop(&mut self) {
        if !self.set {
            *self.out = std::ptr::null_mut();
        }
    }
}

/// Checks an out-pointer; the caller sees NULL there unless the call succeeds.
///
/// # Safety
/// `out`, when not NULL, must be valid for a write of one pointer.
pub(crate) unsafe fn out_handle<'a>(
    out: *mut *mut bc_tensor,
    name: &'static str,
) -> Result<OutHandle<'a>, FfiError> {
    if out.is_null() {
        return Err(FfiError::NullArg(name));
    }
    // SAFETY: non-NULL and, by the caller's contract, valid for writes.
    let out = unsafe { &mut *out };
    Ok(OutHandle { out, set: false })
}

/// Registers `t` and stores its handle in `slot`.
pub(crate) fn hand_out(slot: OutHandle<'_>, t: Tensor) -> Result<(), FfiError> {
    slot.set(register(t)?);
    Ok(())
}

/// A caller's array of `n` values; (NULL, 0) is the empty array.
///
/// # Safety
/// `ptr`, when `n > 0`, must be valid for reads of `n` values.
pub(crate) unsafe fn slice_in<'a, T>(
    ptr: *const T,
    n: usize,
    name: &'static str,
) -> Result<&'a [T], FfiError> {
    if n == 0 {
        return Ok(&[]);
    }
    if ptr.is_null() {
        return Err(FfiError::NullArg(name));
    }
    // SAFETY: non-NULL and valid for n reads by the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(ptr, n) })
}

/// A caller's writable array of `n` values; (NULL, 0) is the empty array.
///
/// # Safety
/// `ptr`, when `n > 0`, must be valid for writes of `n` values.
pub(crate) unsafe fn slice_out<'a, T>(
    ptr: *mut T,
    n: usize,
    name: &'static str,
) -> Result<&'a mut [T], FfiError> {
    if n == 0 {
        return Ok(&mut []);
    }
    if ptr.is_null() {
        return Err(FfiError::NullArg(name));
    }
    // SAFETY: non-NULL and valid for n writes by the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts_mut(ptr, n) })
}

/// A shape argument: at most `BC_MAX_NDIM` non-negative sizes.
///
/// # Safety
/// As [`slice_in`].
pub(crate) unsafe fn dims_in(
    ptr: *const i64,
    ndim: usize,
    name: &'static str,
) -> Result<Dims, FfiError> {
    // SAFETY: forwarded.
    unsafe { dims_in_at(ptr, ndim, name, None) }
}

/// [`dims_in`] for element `index` of an array of shapes named `name` (errors name it as
/// `name[index]`).
///
/// # Safety
/// As [`slice_in`].
pub(crate) unsafe fn dims_in_at(
    ptr: *const i64,
    ndim: usize,
    name: &'static str,
    index: Option<usize>,
) -> Result<Dims, FfiError> {
    let arg = ArgName(name, index);
    if ndim > BC_MAX_NDIM {
        return Err(too_many_dims(arg, ndim));
    }
    // SAFETY: forwarded.
    let raw = unsafe { slice_in(ptr, ndim, name)? };
    let mut dims: Dims = crate::engine::alloc::try_small_elem(0, ndim)?;
    for (i, (&d, out)) in raw.iter().zip(dims.iter_mut()).enumerate() {
        *out = usize::try_from(d).map_err(|_| {
            FfiError::invalid(format_args!("`{arg}`: size {d} at index {i} is negative"))
        })?;
    }
    Ok(dims)
}

/// Element `index` of an array of shapes named `name`, read as given (sizes may be negative):
/// at most `BC_MAX_NDIM` of them.
///
/// # Safety
/// As [`slice_in`].
pub(crate) unsafe fn sizes_in_at<'a>(
    ptr: *const i64,
    ndim: usize,
    name: &'static str,
    index: usize,
) -> Result<&'a [i64], FfiError> {
    if ndim > BC_MAX_NDIM {
        return Err(too_many_dims(ArgName(name, Some(index)), ndim));
    }
    // SAFETY: forwarded.
    unsafe { slice_in(ptr, ndim, name) }
}

/// An argument's name in a message: `shape`, or `shapes[2]` for one entry of an array.
#[derive(Clone, Copy)]
struct ArgName(&'static str, Option<usize>);

impl std::fmt::Display for ArgName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.1 {
            Some(i) => write!(f, "{}[{i}]", self.0),
            None => f.write_str(self.0),
        }
    }
}

fn too_many_dims(arg: ArgName, ndim: usize) -> FfiError {
    FfiError::invalid(format_args!(
        "`{arg}`: {ndim} dimensions, more than the {BC_MAX_NDIM} supported"
    ))
}

pub(crate) fn check_ndim(ndim: usize, name: &'static str) -> Result<(), FfiError> {
    if ndim > BC_MAX_NDIM {
        return Err(too_many_dims(ArgName(name, None), ndim));
    }
    Ok(())
}

/// Writes one value through an out-pointer.
///
/// # Safety
/// `ptr`, when not NULL, must be valid for a write of `T`.
pub(crate) unsafe fn write_out<T>(
    ptr: *mut T,
    value: T,
    name: &'static str,
) -> Result<(), FfiError> {
    if ptr.is_null() {
        return Err(FfiError::NullArg(name));
    }
    // SAFETY: non-NULL and valid by the caller's contract.
    unsafe { ptr.write(value) };
    Ok(())
}

/// Copies sizes into a caller's buffer of `cap` entries.
///
/// # Safety
/// `buf`, when `cap > 0`, must be valid for `cap` writes.
pub(crate) unsafe fn dims_out<T: Copy + TryInto<i64>>(
    values: &[T],
    buf: *mut i64,
    cap: usize,
    name: &'static str,
) -> Result<(), FfiError> {
    if cap < values.len() {
        return Err(crate::engine::Error::BufferTooSmall {
            needed: values.len(),
            given: cap,
            unit: "entries",
        }
        .into());
    }
    // SAFETY: forwarded; only `values.len()` entries are written.
    let out = unsafe { slice_out(buf, values.len(), name)? };
    for (o, &v) in out.iter_mut().zip(values) {
        *o = v.try_into().unwrap_or(i64::MAX);
    }
    Ok(())
}
