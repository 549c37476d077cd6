//! Reading registry slots without locks, and freeing them safely meanwhile (hazard records).
//!
//! A call that reads tensors announces, in its thread's record, the slots it is about to read
//! (its hazards), then checks each slot's state (live, at the handle's generation) and reads the
//! tensor in place. A free first marks the slot dead with one atomic compare-and-swap, then waits
//! until no record announces that slot in a read still under way, and only then drops the
//! tensor. The reader's sequentially consistent start (a store after its announcement) and the
//! freer's sequentially consistent mark and loads make the two meet: either the reader sees the
//! slot dead and refuses the handle, or the freer sees the start and the announcement and waits
//! for the read to end (the argument is at [`wait_for_readers`]). So a read costs a few plain
//! stores and one locked store, and touches nothing
//! another thread writes (two threads reading the same handles never move a cache line between
//! them), and a free is still complete when `bc_tensor_free` returns (memory returned, release
//! callback run), as before.
//!
//! Records are static (a fixed table, never allocated, so a first call cannot fail for lack of
//! memory), one per thread that uses the library, taken on its first read and given back when it
//! exits. Threads that find none free (more than [`RECORDS`] - 1 at once), or read after their
//! exit hook ran, share record 0, one at a time.
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};

/// Slots one read covers at most (`cond`, `a`, `b` and `out` of `bc_where_out`).
pub(super) const MAX_HAZARDS: usize = 4;

/// Records in the table: 127 threads at once have their own.
const RECORDS: usize = 128;

/// One thread's announcements. Own cache lines (128 bytes: the adjacent-line prefetcher pairs
/// lines): written at every read by its owner, read only by frees.
#[repr(align(128))]
struct Record {
    /// Odd while its owner is reading; each read adds 1 at its start and 1 at its end. Written
    /// only by the owner.
    active: AtomicU64,
    /// The slots (index + 1; 0 for none) of the read under way, or of the last one.
    hazards: [AtomicU32; MAX_HAZARDS],
    /// Taken by a thread (record 0: held by the thread reading through it).
    taken: AtomicBool,
}

static TABLE: [Record; RECORDS] = [const {
    Record {
        active: AtomicU64::new(0),
        hazards: [const { AtomicU32::new(0) }; MAX_HAZARDS],
        taken: AtomicBool::new(false),
    }
}; RECORDS];

/// One more than the highest record ever taken: frees look at the records below it.
static HIGH: AtomicUsize = AtomicUsize::new(1);

/// A thread's record: [`Own::NONE`] while it has none of its own (it then shares record 0).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) struct Own(u32);

impl Own {
    pub(super) const NONE: Own = Own(0);
}

/// Takes a free record for this thread, or [`Own::NONE`] when every record is taken.
pub(super) fn take_record() -> Own {
    for (i, r) in TABLE.iter().enumerate().skip(1) {
        if !r.taken.load(Ordering::Relaxed)
            && r.taken
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
        {
            HIGH.fetch_max(i + 1, Ordering::SeqCst);
            return Own(i as u32);
        }
    }
    Own::NONE
}

/// Gives this thread's record back (the thread is exiting, and reads nothing any more).
pub(super) fn give_back(own: Own) {
    if own != Own::NONE {
        TABLE[own.0 as usize].taken.store(false, Ordering::Release);
    }
}

/// A read under way: the slots it covers cannot be dropped until it ends (when this is dropped,
/// also while unwinding).
pub(super) struct Reading {
    record: &'static Record,
    end: u64,
    shared: bool,
}

impl Reading {
    /// Announces a read of `slots` (index + 1 each, 0 for none) through this thread's record
    /// `own`. The slots' states must be checked after this, not before.
    #[inline]
    pub(super) fn begin(own: Own, slots: [u32; MAX_HAZARDS]) -> Reading {
        let shared = own == Own::NONE;
        let record = &TABLE[own.0 as usize];
        if shared {
            lock_shared();
        }
        let start = record.active.load(Ordering::Relaxed);
        // A read inside a read would end the outer one's protection early (and a free inside
        // one could wait for itself): the library never does either.
        assert!(start & 1 == 0, "handle reads do not nest");
        let start = start + 1;
        for (h, &s) in record.hazards.iter().zip(&slots) {
            h.store(s, Ordering::Relaxed);
        }
        // Sequentially consistent: the slot states read after this (also `SeqCst`) see a free
        // marked before it, or that free sees this start, and through it these hazards (see
        // `wait_for_readers`). On x86-64 one locked exchange, where a fence was a plain store
        // and a locked instruction.
        record.active.store(start, Ordering::SeqCst);
        Reading {
            record,
            end: start + 1,
            shared,
        }
    }
}

impl Drop for Reading {
    #[inline]
    fn drop(&mut self) {
        // Release: every read of the slots' tensors happens before a waiting free sees the end.
        self.record.active.store(self.end, Ordering::Release);
        if self.shared {
            TABLE[0].taken.store(false, Ordering::Release);
        }
    }
}

fn lock_shared() {
    let mut spins = 0u32;
    while TABLE[0]
        .taken
        .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        backoff(&mut spins);
    }
}

fn backoff(spins: &mut u32) {
    if *spins < 100 {
        *spins += 1;
        std::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
}

/// Waits until no read that may have seen slot `index` live is under way. Called after the
/// slot was marked dead by a `SeqCst` read-modify-write M, by a thread (with record `own`) that
/// is not reading: reads that start later see the slot dead and refuse the handle.
///
/// Why a reader that this scan passes over cannot have seen the slot live: the reader's start
/// A (a `SeqCst` store of an odd `active`, after its hazards) precedes its `SeqCst` loads of
/// the slot states. Suppose this scan's `SeqCst` load L of the record's `active` read a value
/// older than A. Then L precedes A in the single order S of `SeqCst` operations, M precedes L
/// (program order), so M precedes the reader's state load in S, which therefore sees the slot
/// dead. Otherwise L read A or later: if that is an even value the read has ended (and its
/// ending store, `Release`, orders its uses of the tensor before the drop); if odd, the
/// hazards written before that start are visible (A is a release, L an acquire), and a match
/// waits for that read to end. Records taken after the load of `HIGH` (`SeqCst`, as the
/// taker's `fetch_max`) start their reads after it in S, so they too see the slot dead.
///
/// The reader pays one locked instruction (its start), the freer none: on x86-64 `SeqCst`
/// loads are plain loads.
///
/// Inlined into the free (its one caller), and each record's hazards compared without a branch
/// each: a free scans them all on every call.
#[inline(always)]
pub(super) fn wait_for_readers(own: Own, index: usize) {
    if own != Own::NONE {
        let active = TABLE[own.0 as usize].active.load(Ordering::Relaxed);
        assert!(active & 1 == 0, "a handle is freed during a read");
    }
    let tag = index as u32 + 1;
    for record in &TABLE[..HIGH.load(Ordering::SeqCst)] {
        let active = record.active.load(Ordering::SeqCst);
        if active & 1 == 0
            || !record
                .hazards
                .iter()
                .fold(false, |hit, h| hit | (h.load(Ordering::Relaxed) == tag))
        {
            continue;
        }
        // The read under way has announced this slot: wait while it lasts (a later read of the
        // slot sees it dead).
        let mut spins = 0u32;
        while record.active.load(Ordering::Acquire) == active {
            backoff(&mut spins);
        }
    }
}
