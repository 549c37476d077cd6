//! Per-thread scratch space, made before a reduction's work starts and claimed by each chunk of
//! work, so that the threads never allocate.

use crate::engine::alloc::try_vec;
use crate::engine::error::Result;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicU64, Ordering};

/// Scratch space (wide accumulators, a stage) for each thread that may run part of a reduction,
/// made before the work starts; each chunk of work claims a free slot and gives it back when
/// done, so the threads never allocate.
pub(super) struct Scratch<A> {
    lanes: Vec<MaybeUninit<A>>,
    stage: Vec<MaybeUninit<u64>>,
    /// Pointers to the vectors' elements, taken once from the owner (writes go through them).
    lanes_ptr: *mut MaybeUninit<A>,
    stage_ptr: *mut MaybeUninit<u64>,
    lanes_len: usize,
    stage_len: usize,
    /// Bit `i` is set while slot `i` is free.
    free: AtomicU64,
}

// SAFETY: a slot's memory is used only by the thread that claimed it, until it gives it back.
unsafe impl<A: Send> Sync for Scratch<A> {}

impl<A> Scratch<A> {
    /// `slots` slots (at most 64) of `lanes_len` accumulators and `stage_len` words each.
    pub(super) fn new(slots: usize, lanes_len: usize, stage_len: usize) -> Result<Self> {
        assert!((1..=64).contains(&slots), "{slots} scratch slots");
        let mut lanes = try_vec(slots * lanes_len)?;
        lanes.resize_with(slots * lanes_len, MaybeUninit::uninit);
        let mut stage = try_vec(slots * stage_len)?;
        stage.resize_with(slots * stage_len, MaybeUninit::uninit);
        Ok(Scratch {
            lanes_ptr: lanes.as_mut_ptr(),
            stage_ptr: stage.as_mut_ptr(),
            lanes,
            stage,
            lanes_len,
            stage_len,
            free: AtomicU64::new(u64::MAX >> (64 - slots)),
        })
    }

    /// A free slot, until the returned guard is dropped.
    pub(super) fn claim(&self) -> ScratchSlot<'_, A> {
        let mut free = self.free.load(Ordering::Acquire);
        loop {
            // Never more threads at once than slots (the caller caps them).
            assert!(free != 0, "no free scratch slot");
            let i = free.trailing_zeros() as usize;
            match self.free.compare_exchange_weak(
                free,
                free & !(1 << i),
                Ordering::Acquire,
                Ordering::Acquire,
            ) {
                Ok(_) => return ScratchSlot { scratch: self, i },
                Err(now) => free = now,
            }
        }
    }
}

/// A claimed slot of [`Scratch`].
pub(super) struct ScratchSlot<'s, A> {
    scratch: &'s Scratch<A>,
    i: usize,
}

impl<A> ScratchSlot<'_, A> {
    /// The slot's accumulators and stage.
    pub(super) fn parts(&mut self) -> (&mut [MaybeUninit<A>], &mut [MaybeUninit<u64>]) {
        let s = self.scratch;
        debug_assert!(s.lanes.len() >= (self.i + 1) * s.lanes_len);
        debug_assert!(s.stage.len() >= (self.i + 1) * s.stage_len);
        // SAFETY: slot i's ranges lie within the vectors, and this guard holds them exclusively.
        unsafe {
            (
                std::slice::from_raw_parts_mut(s.lanes_ptr.add(self.i * s.lanes_len), s.lanes_len),
                std::slice::from_raw_parts_mut(s.stage_ptr.add(self.i * s.stage_len), s.stage_len),
            )
        }
    }
}

impl<A> Drop for ScratchSlot<'_, A> {
    fn drop(&mut self) {
        self.scratch.free.fetch_or(1 << self.i, Ordering::Release);
    }
}
