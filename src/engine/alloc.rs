//! Fallible allocation for everything on an API call's path.
//!
//! Rust's ordinary allocating operations (`Box::new`, `Arc::new`, `Vec` growth by `push` or
//! `collect`, `to_vec`, `format!`, a `SmallVec` spilling to the heap) call the allocation error
//! handler when the allocator refuses, and on stable Rust that handler aborts the process. The
//! library promises `BC_ERR_ALLOC` instead, so code that runs during a call allocates only through
//! these helpers (or `try_reserve` directly), each of which turns a refusal into
//! [`Error::Alloc`]:
//!
//! - a `Vec`: [`try_vec`] (reserved capacity, then push within it), [`try_push`], [`try_to_vec`],
//!   [`try_collect`] (an iterator of known length);
//! - a `SmallVec` (shapes, strides): [`try_small`] from a slice, [`try_small_elem`],
//!   [`try_small_collect`], [`try_small_with_capacity`] (then push within it);
//! - a `Box`: [`try_box`] (coerce it to `Box<dyn Trait>` afterwards as usual);
//! - a `String`: [`try_string`]`(format_args!(...))` instead of `format!`;
//! - a reference-counted value: [`Shared`] instead of `Arc` (`Shared::try_new`).
//!
//! An error that carries data (shapes) builds it with these too, and becomes `Error::Alloc` when
//! that fails. `tests/fault_injection.rs` fails every allocation of every exported function in
//! turn and checks that none of them aborts.
use super::error::{Error, Result};
use smallvec::{Array, SmallVec};
use std::alloc::{self, Layout};
use std::fmt::{self, Write as _};
use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::ops::Deref;
use std::ptr::NonNull;
use std::sync::atomic::{self as atomic, AtomicUsize, Ordering};

/// The error for `n` values of `T` that could not be allocated.
pub fn alloc_error<T>(n: usize) -> Error {
    Error::Alloc {
        bytes: n.saturating_mul(std::mem::size_of::<T>()),
    }
}

/// An empty `Vec` with room for `capacity` values (pushing up to that many never allocates).
pub fn try_vec<T>(capacity: usize) -> Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(capacity)
        .map_err(|_| alloc_error::<T>(capacity))?;
    Ok(v)
}

/// `v.push(x)`, growing fallibly.
pub fn try_push<T>(v: &mut Vec<T>, x: T) -> Result<()> {
    if v.len() == v.capacity() {
        v.try_reserve(1)
            .map_err(|_| alloc_error::<T>(v.len() + 1))?;
    }
    v.push(x);
    Ok(())
}

/// `s.to_vec()`, fallibly.
pub fn try_to_vec<T: Clone>(s: &[T]) -> Result<Vec<T>> {
    let mut v = try_vec(s.len())?;
    v.extend_from_slice(s);
    Ok(v)
}

/// `iter.collect::<Vec<_>>()` for an iterator that knows its length, fallibly.
pub fn try_collect<T>(iter: impl ExactSizeIterator<Item = T>) -> Result<Vec<T>> {
    let mut v = try_vec(iter.len())?;
    v.extend(iter);
    Ok(v)
}

/// An empty `SmallVec` with room for `n` values (pushing or inserting up to that many never
/// allocates).
pub fn try_small_with_capacity<A: Array>(n: usize) -> Result<SmallVec<A>> {
    let mut v = SmallVec::new();
    v.try_reserve_exact(n)
        .map_err(|_| alloc_error::<A::Item>(n))?;
    Ok(v)
}

/// A `SmallVec` copy of `s` (inline when it fits, else on the heap, fallibly). The inline case
/// is inlined into the caller: returning a `SmallVec` through a `Result` in memory made the
/// caller's wide reads of it wait for the callee's narrow writes (a failed store forwarding, the
/// largest single cost of making a small tensor).
#[inline(always)]
pub fn try_small<A: Array>(s: &[A::Item]) -> Result<SmallVec<A>>
where
    A::Item: Copy,
{
    if s.len() <= A::size() {
        Ok(SmallVec::from_slice(s)) // allocates nothing
    } else {
        try_small_spilled(s)
    }
}

fn try_small_spilled<A: Array>(s: &[A::Item]) -> Result<SmallVec<A>>
where
    A::Item: Copy,
{
    let mut v = try_small_with_capacity(s.len())?;
    v.extend_from_slice(s);
    Ok(v)
}

/// `n` copies of `x` in a `SmallVec` (the inline case inlined, as [`try_small`]). Inline, the
/// whole buffer is filled: a fixed number of stores, where `from_elem`'s `n` of them became a
/// call to `memset`.
#[inline(always)]
pub fn try_small_elem<A: Array>(x: A::Item, n: usize) -> Result<SmallVec<A>>
where
    A::Item: Copy,
{
    if n <= A::size() {
        let mut buf = MaybeUninit::<A>::uninit();
        let first = buf.as_mut_ptr().cast::<A::Item>();
        for i in 0..A::size() {
            // SAFETY: `A` is an array of `A::size()` items.
            unsafe { first.add(i).write(x) };
        }
        // SAFETY: every item was written above.
        Ok(SmallVec::from_buf_and_len(unsafe { buf.assume_init() }, n)) // allocates nothing
    } else {
        try_small_elem_spilled(x, n)
    }
}

fn try_small_elem_spilled<A: Array>(x: A::Item, n: usize) -> Result<SmallVec<A>>
where
    A::Item: Copy,
{
    let mut v = try_small_with_capacity(n)?;
    v.extend(std::iter::repeat_n(x, n));
    Ok(v)
}

/// `iter.collect::<SmallVec<_>>()` for an iterator that knows its length.
pub fn try_small_collect<A: Array>(
    iter: impl ExactSizeIterator<Item = A::Item>,
) -> Result<SmallVec<A>> {
    let mut v = try_small_with_capacity(iter.len())?;
    v.extend(iter);
    Ok(v)
}

/// `Box::new(x)`, fallibly (`x` is dropped when the allocation fails).
pub fn try_box<T>(x: T) -> Result<Box<T>> {
    let layout = Layout::new::<T>();
    if layout.size() == 0 {
        return Ok(Box::new(x)); // allocates nothing
    }
    // SAFETY: the layout has a non-zero size.
    let ptr = unsafe { alloc::alloc(layout) }.cast::<T>();
    let Some(ptr) = NonNull::new(ptr) else {
        return Err(Error::Alloc {
            bytes: layout.size(),
        });
    };
    // SAFETY: a fresh block of T's layout from the global allocator, which is what `Box` frees
    // it with; writing initialises it.
    unsafe {
        ptr.as_ptr().write(x);
        Ok(Box::from_raw(ptr.as_ptr()))
    }
}

/// The text of `args` in a new `String`, fallibly: its length is counted first, then exactly
/// that much is reserved and written (so the `Display` implementations it calls must not
/// allocate either: the shape lists of `shape::fmt_list` do not).
pub fn try_string(args: fmt::Arguments<'_>) -> Result<String> {
    if let Some(s) = args.as_str() {
        return try_to_vec(s.as_bytes()).map(|b| String::from_utf8(b).unwrap_or_default());
    }
    struct Count(usize);
    impl fmt::Write for Count {
        fn write_str(&mut self, s: &str) -> fmt::Result {
            self.0 += s.len();
            Ok(())
        }
    }
    let mut count = Count(0);
    // Formatting into a counter cannot fail unless a Display implementation reports an error.
    let _ = count.write_fmt(args);
    let mut s = String::new();
    s.try_reserve_exact(count.0)
        .map_err(|_| Error::Alloc { bytes: count.0 })?;
    let _ = s.write_fmt(args);
    Ok(s)
}

/// A reference-counted value, like `Arc<T>` (which aborts when it cannot allocate, and whose
/// fallible constructor is not stable): [`Shared::try_new`] reports the failure instead.
pub struct Shared<T> {
    ptr: NonNull<SharedBlock<T>>,
    _owns: PhantomData<SharedBlock<T>>,
}

struct SharedBlock<T> {
    count: AtomicUsize,
    value: T,
}

// SAFETY: as for `Arc<T>`: the value is shared between threads (Sync) and dropped by whichever
// thread drops the last reference (Send).
unsafe impl<T: Send + Sync> Send for Shared<T> {}
// SAFETY: as above.
unsafe impl<T: Send + Sync> Sync for Shared<T> {}

impl<T> Shared<T> {
    /// `value` in a new block with one reference.
    pub fn try_new(value: T) -> Result<Shared<T>> {
        Shared::try_new_with(|| value)
    }

    /// A new block holding what `make` returns. `make` runs only once the block is allocated, so
    /// a value with side effects on drop (a caller's release callback) is never built, and never
    /// dropped, when the allocation fails.
    pub fn try_new_with(make: impl FnOnce() -> T) -> Result<Shared<T>> {
        let layout = Layout::new::<SharedBlock<T>>();
        // SAFETY: the block has a non-zero size (it holds a counter).
        let raw = unsafe { alloc::alloc(layout) }.cast::<SharedBlock<T>>();
        // (Not `ok_or`: its error value, built eagerly, was dropped through the drop glue of
        // `Error` on every success.)
        let Some(ptr) = NonNull::new(raw) else {
            return Err(Error::Alloc {
                bytes: layout.size(),
            });
        };
        // SAFETY: a fresh, suitably aligned block of the right size.
        unsafe {
            ptr.as_ptr().write(SharedBlock {
                count: AtomicUsize::new(1),
                value: make(),
            })
        };
        Ok(Shared {
            ptr,
            _owns: PhantomData,
        })
    }

    /// The value, mutably, when this is its only reference (as `Arc::get_mut`).
    pub fn get_mut(this: &mut Shared<T>) -> Option<&mut T> {
        if this.block().count.load(Ordering::Acquire) != 1 {
            return None;
        }
        // SAFETY: the only reference, borrowed mutably: nothing else can reach the value.
        Some(unsafe { &mut this.ptr.as_mut().value })
    }

    fn block(&self) -> &SharedBlock<T> {
        // SAFETY: the block lives while any reference to it does, and this is one.
        unsafe { self.ptr.as_ref() }
    }
}

impl<T> Clone for Shared<T> {
    fn clone(&self) -> Shared<T> {
        // Relaxed, as in `Arc`: a new reference can only be made from an existing one.
        let old = self.block().count.fetch_add(1, Ordering::Relaxed);
        if old > isize::MAX as usize {
            // 2^63 references cannot exist honestly; refuse to let the count wrap (as `Arc`).
            std::process::abort();
        }
        Shared {
            ptr: self.ptr,
            _owns: PhantomData,
        }
    }
}

impl<T> Drop for Shared<T> {
    fn drop(&mut self) {
        // Release, then Acquire by the last owner: every use of the value through other
        // references happens before it is dropped (the same protocol as `Arc`). A sole owner
        // (the count read as 1: no other reference exists to make a new one) skips the
        // read-modify-write, which is most of what dropping a small result costs.
        if self.block().count.load(Ordering::Acquire) != 1 {
            if self.block().count.fetch_sub(1, Ordering::Release) != 1 {
                return;
            }
            atomic::fence(Ordering::Acquire);
        }
        // SAFETY: this was the last reference: nothing else can reach the block. It was
        // allocated in `try_new_with` with this layout.
        unsafe {
            std::ptr::drop_in_place(self.ptr.as_ptr());
            alloc::dealloc(self.ptr.as_ptr().cast(), Layout::new::<SharedBlock<T>>());
        }
    }
}

impl<T> Deref for Shared<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.block().value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_counts_references_and_drops_once() {
        static DROPPED: AtomicUsize = AtomicUsize::new(0);
        struct D(u32);
        impl Drop for D {
            fn drop(&mut self) {
                DROPPED.fetch_add(1, Ordering::SeqCst);
            }
        }
        let a = Shared::try_new(D(7)).unwrap();
        let b = a.clone();
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let c = b.clone();
                std::thread::spawn(move || {
                    let d = c.clone();
                    assert_eq!(d.0, 7);
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        drop(a);
        assert_eq!(DROPPED.load(Ordering::SeqCst), 0);
        assert_eq!(b.0, 7);
        drop(b);
        assert_eq!(DROPPED.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn helpers_build_what_their_infallible_forms_would() {
        let v = try_collect([1, 2, 3].into_iter()).unwrap();
        assert_eq!(v, vec![1, 2, 3]);
        let mut w = try_vec::<u8>(0).unwrap();
        for i in 0..100 {
            try_push(&mut w, i).unwrap();
        }
        assert_eq!(w.len(), 100);
        let s: SmallVec<[usize; 2]> = try_small(&[1, 2, 3, 4]).unwrap();
        assert_eq!(&s[..], &[1, 2, 3, 4]);
        let e: SmallVec<[usize; 2]> = try_small_elem(7, 3).unwrap();
        assert_eq!(&e[..], &[7, 7, 7]);
        let t = try_string(format_args!("{}-{:?}", 12, "x")).unwrap();
        assert_eq!((t.as_str(), t.capacity()), ("12-\"x\"", 6));
        assert_eq!(try_string(format_args!("plain")).unwrap(), "plain");
        assert_eq!(*try_box(5u64).unwrap(), 5);
        assert!(matches!(
            try_vec::<u64>(1 << 61),
            Err(Error::Alloc { bytes }) if bytes == usize::MAX
        ));
    }
}
