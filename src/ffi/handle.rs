//! Tensor handles and every conversion of a caller's pointer. A `bc_tensor *` is never
//! dereferenced: it is a token (slot index + generation) into a registry of live tensors, so a
//! freed, twice-freed or made-up handle is recognised and refused instead of being followed.
use super::status::FfiError;
use crate::engine::shape::Dims;
use crate::engine::Tensor;
use std::cell::{RefCell, UnsafeCell};
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

/// An opaque tensor handle. Obtain one from a `bc_tensor_*` constructor, a view function or an
/// operation; release it with `bc_tensor_free`. Handles are tokens, not addresses: never
/// dereference one. Using a handle after freeing it yields `BC_ERR_INVALID_HANDLE`.
pub struct bc_tensor {
    _private: [u8; 0],
}

/// Largest number of dimensions a shape may have.
pub const BC_MAX_NDIM: usize = 64;

/// Slots live in fixed-size chunks that are allocated on first need and never move or go away,
/// so a lookup finds its slot without any registry-wide lock: it locks only that slot. Threads
/// working on different tensors therefore never contend. Creating and freeing handles take the
/// (short) allocator lock only when the thread's own cache of freed slots is empty or full.
const CHUNK_SLOTS: usize = 256;
const MAX_CHUNKS: usize = 1 << 16;

/// A lock for the registry's short critical sections. Taking it costs one atomic
/// read-modify-write and releasing it one plain store (a `std::sync::Mutex` pays a second
/// read-modify-write to release, about 10 ns on the machines we measure, and a small operation
/// takes three or four locks). A waiter spins briefly, then yields its time slice, so a holder
/// that was descheduled is not starved. Holders never take another slot lock out of index order
/// (see [`with`]) and never run caller code, so waits are short and cannot form a cycle.
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
        self.acquire();
        SpinGuard { lock: self }
    }

    fn acquire(&self) {
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
    }

    fn release(&self) {
        self.locked.store(false, Ordering::Release);
    }

    /// # Safety
    /// The caller holds the lock for as long as the reference lives.
    unsafe fn get_locked(&self) -> &T {
        // SAFETY: the lock excludes writers.
        unsafe { &*self.value.get() }
    }
}

/// Releases the lock when dropped, also while unwinding: every critical section leaves its data
/// consistent, so a panic inside one (only possible in the engine code run by [`with`]) leaves
/// nothing half-done behind.
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
        self.lock.release();
    }
}

struct Slot {
    /// (generation, tensor): the generation grows by one at every free of the slot.
    inner: SpinLock<(u32, Option<Tensor>)>,
}

impl Default for Slot {
    fn default() -> Slot {
        Slot {
            inner: SpinLock::new((0, None)),
        }
    }
}

struct Chunk {
    slots: [Slot; CHUNK_SLOTS],
}

static CHUNKS: [AtomicPtr<Chunk>; MAX_CHUNKS] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; MAX_CHUNKS];

/// Which slots exist (`next`) and which of them are free; the others hold live handles.
struct Allocator {
    next: usize,
    free: Vec<u32>,
}
static ALLOCATOR: SpinLock<Allocator> = SpinLock::new(Allocator {
    next: 0,
    free: Vec::new(),
});

/// Slots this thread freed, kept for its next registrations: a loop that makes and frees
/// handles then never takes the allocator lock. Handed back to the shared list when the thread
/// ends; beyond [`LOCAL_FREE_MAX`] freed slots go straight there.
struct LocalFree(Vec<u32>);

impl Drop for LocalFree {
    fn drop(&mut self) {
        if !self.0.is_empty() {
            ALLOCATOR.lock().free.append(&mut self.0);
        }
    }
}

const LOCAL_FREE_MAX: usize = 64;

thread_local! {
    static LOCAL_FREE: RefCell<LocalFree> = const { RefCell::new(LocalFree(Vec::new())) };
}

/// Low half of the token: slot index + 1 (so no token is NULL); high half: the generation.
const INDEX_BITS: u32 = usize::BITS / 2;
const INDEX_MASK: usize = (1 << INDEX_BITS) - 1;
const MAX_SLOTS: usize = if CHUNK_SLOTS * MAX_CHUNKS < INDEX_MASK {
    CHUNK_SLOTS * MAX_CHUNKS
} else {
    INDEX_MASK - 1
};

/// XORed into every token so that small integers and ordinary pointers do not decode to the
/// first slots at generation 0: a stray value then names a live handle only by chance. Its low
/// half is 0, so no token is NULL.
const KEY: usize = 0x9E37_79B9_7F4A_7C15_u64 as usize & !INDEX_MASK;

fn encode(index: usize, generation: u32) -> *mut bc_tensor {
    let gen = (generation as usize) & INDEX_MASK;
    (((gen << INDEX_BITS) | (index + 1)) ^ KEY) as *mut bc_tensor
}

fn decode(handle: *const bc_tensor) -> (usize, u32) {
    let raw = handle as usize ^ KEY;
    (
        (raw & INDEX_MASK).wrapping_sub(1),
        (raw >> INDEX_BITS) as u32,
    )
}

fn same_generation(a: u32, b: u32) -> bool {
    let mask = INDEX_MASK as u32;
    a & mask == b & mask
}

/// The slot at `index`, if its chunk exists.
fn slot(index: usize) -> Option<&'static Slot> {
    let chunk = CHUNKS.get(index / CHUNK_SLOTS)?.load(Ordering::Acquire);
    // SAFETY: a non-null chunk pointer comes from Box::into_raw in `register` and is never freed.
    let chunk = unsafe { chunk.as_ref()? };
    Some(&chunk.slots[index % CHUNK_SLOTS])
}

/// A new chunk of empty slots. Out of line: building the chunk takes a frame of tens of KiB,
/// which would otherwise be probed page by page on every registration.
#[cold]
#[inline(never)]
fn new_chunk() -> *mut Chunk {
    Box::into_raw(Box::new(Chunk {
        slots: std::array::from_fn(|_| Slot::default()),
    }))
}

/// Registers `t` and returns its new handle.
pub(crate) fn register(t: Tensor) -> Result<*mut bc_tensor, FfiError> {
    let cached = LOCAL_FREE
        .try_with(|l| l.borrow_mut().0.pop())
        .ok()
        .flatten();
    let index = if let Some(i) = cached {
        i as usize
    } else {
        let mut alloc = ALLOCATOR.lock();
        match alloc.free.pop() {
            Some(i) => i as usize,
            None => {
                let i = alloc.next;
                if i >= MAX_SLOTS {
                    return Err(FfiError::invalid("too many live tensor handles"));
                }
                if i % CHUNK_SLOTS == 0 {
                    CHUNKS[i / CHUNK_SLOTS].store(new_chunk(), Ordering::Release);
                }
                alloc.next = i + 1;
                i
            }
        }
    };
    // The slot is ours until it holds a tensor: it is on no free list, and stale handles to it
    // carry an older generation.
    let slot = slot(index).expect("allocated slots have a chunk");
    let mut inner = slot.inner.lock();
    inner.1 = Some(t);
    Ok(encode(index, inner.0))
}

/// The tensor behind a handle argument (a cheap clone: storage is shared).
pub(crate) fn get(handle: *const bc_tensor, name: &'static str) -> Result<Tensor, FfiError> {
    with([(handle, name)], |_| false, |[t]| t.clone())
}

/// Runs `f` on the tensor behind one handle, borrowed under its slot's lock: for reading
/// metadata and making views, which take no time. `f` must not register handles (see [`with`]).
pub(crate) fn borrow<R>(
    handle: *const bc_tensor,
    name: &'static str,
    f: impl FnOnce(&Tensor) -> R,
) -> Result<R, FfiError> {
    with([(handle, name)], |_| true, |[t]| f(t))
}

/// Runs `f` on the tensors behind `handles` (each given with its argument name, for errors).
/// When `inline` says the work is small, `f` borrows them while their slots stay locked, which
/// spares two atomic operations per handle (an `Arc` clone and drop) on calls that take well
/// under a microsecond; otherwise `f` gets clones, after the locks are released, so a long
/// computation never holds up another thread's use of the same handles.
///
/// Slots are locked in index order, each once (the same handle may be passed twice), so threads
/// locking several never wait on each other in a cycle. Errors name the first bad argument in
/// argument order: NULL gives `NullArg`, anything not live `InvalidHandle`. `f` must not register
/// a handle (that locks another slot, out of order) nor drop the last reference to a storage (a
/// caller's release hook must not run under the locks; the borrowed tensors keep theirs alive).
pub(crate) fn with<const K: usize, R>(
    handles: [(*const bc_tensor, &'static str); K],
    inline: impl FnOnce([&Tensor; K]) -> bool,
    f: impl FnOnce([&Tensor; K]) -> R,
) -> Result<R, FfiError> {
    let mut found: [(usize, u32, Option<&'static Slot>); K] = [(0, 0, None); K];
    for (i, &(h, name)) in handles.iter().enumerate() {
        if h.is_null() {
            // An earlier argument that is not live is the first error.
            for &(earlier, earlier_name) in &handles[..i] {
                get(earlier, earlier_name)?;
            }
            return Err(FfiError::NullArg(name));
        }
        let (index, generation) = decode(h);
        found[i] = (index, generation, slot(index));
    }
    // Lock order: by slot index (K is at most 3: an insertion sort of positions).
    let mut order: [usize; K] = std::array::from_fn(|i| i);
    for i in 1..K {
        let mut j = i;
        while j > 0 && found[order[j - 1]].0 > found[order[j]].0 {
            order.swap(j - 1, j);
            j -= 1;
        }
    }
    /// The slots locked so far, released on every way out (also unwinding out of `f`).
    struct Held<const K: usize>([Option<&'static Slot>; K]);
    impl<const K: usize> Drop for Held<K> {
        fn drop(&mut self) {
            for slot in self.0.iter().flatten() {
                slot.inner.release();
            }
        }
    }
    let mut held = Held([None; K]);
    let mut last = None;
    for (n, &i) in order.iter().enumerate() {
        let (index, _, slot) = found[i];
        if let Some(slot) = slot {
            if last != Some(index) {
                slot.inner.acquire();
                held.0[n] = Some(slot);
                last = Some(index);
            }
        }
    }
    for (i, &(_, generation, slot)) in found.iter().enumerate() {
        let live = slot.is_some_and(|slot| {
            // SAFETY: every slot in `found` is locked (once) in `held`.
            let inner = unsafe { slot.inner.get_locked() };
            inner.1.is_some() && same_generation(inner.0, generation)
        });
        if !live {
            return Err(FfiError::InvalidHandle(handles[i].1));
        }
    }
    let tensors: [&Tensor; K] = std::array::from_fn(|i| {
        let slot = found[i].2.expect("checked live above");
        // SAFETY: locked in `held`, which outlives every use of these references below.
        let inner = unsafe { slot.inner.get_locked() };
        inner.1.as_ref().expect("checked live above")
    });
    if inline(tensors) {
        return Ok(f(tensors));
    }
    let owned: [Tensor; K] = tensors.map(Tensor::clone);
    drop(held);
    Ok(f(owned.each_ref()))
}

/// Frees a handle. Returns false when it was not live. The tensor is dropped after the locks are
/// released, because dropping may run a caller's release callback, which may call back in.
pub(crate) fn release(handle: *mut bc_tensor) -> bool {
    let (index, generation) = decode(handle);
    let Some(slot) = slot(index) else {
        return false;
    };
    let taken = {
        let mut inner = slot.inner.lock();
        if !same_generation(inner.0, generation) || inner.1.is_none() {
            return false;
        }
        inner.0 = inner.0.wrapping_add(1);
        inner.1.take()
    };
    let kept = LOCAL_FREE
        .try_with(|l| {
            let mut l = l.borrow_mut();
            let fits = l.0.len() < LOCAL_FREE_MAX;
            if fits {
                l.0.push(index as u32);
            }
            fits
        })
        .unwrap_or(false);
    if !kept {
        ALLOCATOR.lock().free.push(index as u32);
    }
    drop(taken);
    true
}

/// Whether a handle is live right now.
pub(crate) fn is_live(handle: *const bc_tensor) -> bool {
    borrow(handle, "t", |_| ()).is_ok()
}

/// Number of live handles (for leak checks in tests): a count of the slots holding a tensor, in
/// time proportional to the most handles ever live at once.
pub(crate) fn live_count() -> usize {
    let next = ALLOCATOR.lock().next;
    (0..next)
        .filter(|&i| slot(i).is_some_and(|s| s.inner.lock().1.is_some()))
        .count()
}

/// Checks an out-pointer and clears it, so the caller sees NULL unless the call succeeds.
///
/// # Safety
/// `out`, when not NULL, must be valid for a write of one pointer.
pub(crate) unsafe fn out_handle<'a>(
    out: *mut *mut bc_tensor,
    name: &'static str,
) -> Result<&'a mut *mut bc_tensor, FfiError> {
    if out.is_null() {
        return Err(FfiError::NullArg(name));
    }
    // SAFETY: non-NULL and, by the caller's contract, valid for writes.
    let slot = unsafe { &mut *out };
    *slot = std::ptr::null_mut();
    Ok(slot)
}

/// Registers `t` and stores its handle in `slot`.
pub(crate) fn hand_out(slot: &mut *mut bc_tensor, t: Tensor) -> Result<(), FfiError> {
    *slot = register(t)?;
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
    check_ndim(ndim, name)?;
    // SAFETY: forwarded.
    let raw = unsafe { slice_in(ptr, ndim, name)? };
    raw.iter()
        .enumerate()
        .map(|(i, &d)| {
            usize::try_from(d).map_err(|_| {
                FfiError::invalid(format!("`{name}`: size {d} at index {i} is negative"))
            })
        })
        .collect()
}

pub(crate) fn check_ndim(ndim: usize, name: &'static str) -> Result<(), FfiError> {
    if ndim > BC_MAX_NDIM {
        return Err(FfiError::invalid(format!(
            "`{name}`: {ndim} dimensions, more than the {BC_MAX_NDIM} supported"
        )));
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
