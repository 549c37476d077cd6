//! Tensor handles and every conversion of a caller's pointer. A `bc_tensor *` is never
//! dereferenced: it is a token (slot index + generation) into a registry of live tensors, so a
//! freed, twice-freed or made-up handle is recognised and refused instead of being followed.
use super::status::FfiError;
use crate::engine::shape::Dims;
use crate::engine::Tensor;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

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
/// working on different tensors therefore never contend; only creating and freeing handles take
/// the (short) allocator lock.
const CHUNK_SLOTS: usize = 256;
const MAX_CHUNKS: usize = 1 << 16;

#[derive(Default)]
struct Slot {
    /// (generation, tensor): the generation grows by one at every free of the slot.
    inner: Mutex<(u32, Option<Tensor>)>,
}

struct Chunk {
    slots: [Slot; CHUNK_SLOTS],
}

static CHUNKS: [AtomicPtr<Chunk>; MAX_CHUNKS] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; MAX_CHUNKS];

/// Which slots exist (`next`) and which of them are free.
struct Allocator {
    next: usize,
    free: Vec<u32>,
}
static ALLOCATOR: Mutex<Allocator> = Mutex::new(Allocator {
    next: 0,
    free: Vec::new(),
});
static LIVE: AtomicUsize = AtomicUsize::new(0);

// Every critical section leaves its data consistent, so a poisoned lock is still usable.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
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

/// Registers `t` and returns its new handle.
pub(crate) fn register(t: Tensor) -> Result<*mut bc_tensor, FfiError> {
    let index = {
        let mut alloc = lock(&ALLOCATOR);
        match alloc.free.pop() {
            Some(i) => i as usize,
            None => {
                let i = alloc.next;
                if i >= MAX_SLOTS {
                    return Err(FfiError::invalid("too many live tensor handles"));
                }
                if i % CHUNK_SLOTS == 0 {
                    let chunk = Box::new(Chunk {
                        slots: std::array::from_fn(|_| Slot::default()),
                    });
                    CHUNKS[i / CHUNK_SLOTS].store(Box::into_raw(chunk), Ordering::Release);
                }
                alloc.next = i + 1;
                i
            }
        }
    };
    // The slot is ours until it holds a tensor: it is on no free list, and stale handles to it
    // carry an older generation.
    let slot = slot(index).expect("allocated slots have a chunk");
    let mut inner = lock(&slot.inner);
    inner.1 = Some(t);
    LIVE.fetch_add(1, Ordering::Relaxed);
    Ok(encode(index, inner.0))
}

/// The tensor behind a handle argument (a cheap clone: storage is shared).
pub(crate) fn get(handle: *const bc_tensor, name: &'static str) -> Result<Tensor, FfiError> {
    if handle.is_null() {
        return Err(FfiError::NullArg(name));
    }
    let (index, generation) = decode(handle);
    let slot = slot(index).ok_or(FfiError::InvalidHandle(name))?;
    let inner = lock(&slot.inner);
    match &inner.1 {
        Some(t) if same_generation(inner.0, generation) => Ok(t.clone()),
        _ => Err(FfiError::InvalidHandle(name)),
    }
}

/// Frees a handle. Returns false when it was not live. The tensor is dropped after the locks are
/// released, because dropping may run a caller's release callback, which may call back in.
pub(crate) fn release(handle: *mut bc_tensor) -> bool {
    let (index, generation) = decode(handle);
    let Some(slot) = slot(index) else {
        return false;
    };
    let taken = {
        let mut inner = lock(&slot.inner);
        if !same_generation(inner.0, generation) || inner.1.is_none() {
            return false;
        }
        inner.0 = inner.0.wrapping_add(1);
        inner.1.take()
    };
    lock(&ALLOCATOR).free.push(index as u32);
    LIVE.fetch_sub(1, Ordering::Relaxed);
    drop(taken);
    true
}

/// Whether a handle is live right now.
pub(crate) fn is_live(handle: *const bc_tensor) -> bool {
    get(handle, "t").is_ok()
}

/// Number of live handles (for leak checks in tests).
pub(crate) fn live_count() -> usize {
    LIVE.load(Ordering::Relaxed)
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
