//! Element memory: owned (allocated here, 64-byte aligned) or foreign (caller memory with a
//! release hook). Shared by every view through `Arc<Storage>`; freed when the last view goes.
use super::error::{Error, Result};
use std::alloc::{self, Layout};
use std::ptr::NonNull;

/// Runs once when foreign memory is no longer used by any tensor.
pub type ReleaseHook = Box<dyn FnOnce() + Send + Sync>;

enum Owner {
    Owned(Layout),
    Foreign(Option<ReleaseHook>),
}

pub struct Storage {
    ptr: NonNull<u8>,
    nbytes: usize,
    owner: Owner,
}

// SAFETY: the storage is a plain block of bytes; the engine never hands out Rust references
// into it, only raw pointers, and callers are told not to write one tensor from two threads.
unsafe impl Send for Storage {}
// SAFETY: as above; concurrent reads of plain bytes are sound.
unsafe impl Sync for Storage {}

/// Alignment of owned storage: a cache line, which also suits every SIMD width we use.
const ALIGN: usize = 64;

impl Storage {
    /// New owned storage of `nbytes`, zero-filled when `zeroed` (calloc-like: pages stay lazy).
    pub fn alloc(nbytes: usize, zeroed: bool) -> Result<Storage> {
        if nbytes == 0 {
            return Ok(Storage {
                ptr: NonNull::dangling(),
                nbytes: 0,
                owner: Owner::Owned(Layout::new::<()>()),
            });
        }
        let layout = Layout::from_size_align(nbytes, ALIGN)
            .map_err(|_| Error::Overflow { what: "nbytes" })?;
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe {
            if zeroed {
                alloc::alloc_zeroed(layout)
            } else {
                alloc::alloc(layout)
            }
        };
        let ptr = NonNull::new(raw).ok_or(Error::Alloc { bytes: nbytes })?;
        Ok(Storage {
            ptr,
            nbytes,
            owner: Owner::Owned(layout),
        })
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
        Storage {
            ptr,
            nbytes,
            owner: Owner::Foreign(release),
        }
    }

    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    pub fn nbytes(&self) -> usize {
        self.nbytes
    }
}

impl Drop for Storage {
    fn drop(&mut self) {
        match &mut self.owner {
            Owner::Owned(layout) => {
                if self.nbytes != 0 {
                    // SAFETY: allocated in `alloc` with exactly this layout.
                    unsafe { alloc::dealloc(self.ptr.as_ptr(), *layout) }
                }
            }
            Owner::Foreign(hook) => {
                if let Some(hook) = hook.take() {
                    hook();
                }
            }
        }
    }
}
