//! The handle registry behind `BC_ERR_INVALID_HANDLE`: what makes a handle "not live" however it
//! was obtained. That every export refuses a freed, twice-freed, forged or stale handle (and
//! NULL) in every handle position is the boundary contract test's (`cargo test --test c_suite
//! contract`, c_tests/contract.c, generated from the header); this file checks the registry
//! itself, through a few entry points: stale handles over thousands of reuses of one slot and
//! across the generation limits, many kinds of stray pointer and small integers, a freed base
//! whose views live on, and the handle limit.
//!
//! Each test here fails when the protection is taken away: without the registry a freed or stray
//! handle would be dereferenced (a crash or garbage, not the status); without the generation count
//! a stale handle would reach the tensor that now lives in its slot (`stale_handle_*`); without
//! the liveness check in `release`, a double free would free someone else's tensor.

use broadcast::ffi::*;
use std::ffi::c_void;
use std::ptr;
use testkit::raw::*;

/// Checks that `h` is not a live handle: `bc_tensor_is_live` says so, a call that reads it and
/// one that would make a tensor from it refuse it with `BC_ERR_INVALID_HANDLE` (naming it, out-
/// handle NULL), and freeing it records that status and frees nothing.
fn assert_refused(h: *mut bc_tensor) {
    assert!(!bc_tensor_is_live(h), "{h:p} is live");
    let live = bc_tensor_live_count();
    let mut n = 0usize;
    // SAFETY: valid out-pointer.
    assert_eq!(
        unsafe { bc_tensor_ndim(h, &mut n) },
        BC_ERR_INVALID_HANDLE,
        "{h:p}"
    );
    assert!(
        last_message().contains("argument `t` is not a live tensor handle"),
        "{}",
        last_message()
    );
    let mut out = 0x5a5a as *mut bc_tensor;
    // SAFETY: valid out-pointer.
    assert_eq!(
        unsafe { bc_tensor_clone(h, &mut out) },
        BC_ERR_INVALID_HANDLE
    );
    assert!(out.is_null(), "out-handle set on failure");
    bc_last_error_clear();
    bc_tensor_free(h);
    assert_eq!(bc_last_error_status(), BC_ERR_INVALID_HANDLE);
    assert_eq!(
        bc_tensor_live_count(),
        live,
        "a refused handle freed a tensor"
    );
}

/// The generation count: a handle whose slot now holds another tensor must not reach it. Checked
/// over many reuse cycles of the same slot, each old handle against each later tensor.
#[test]
fn stale_handle_never_reaches_the_tensor_in_its_reused_slot() {
    let _g = serial();
    let mut stale: Vec<*mut bc_tensor> = Vec::new();
    for round in 0..2000 {
        let t = full(BC_DTYPE_FLOAT64, &[1], round as f64);
        for &old in stale.iter().rev().take(50) {
            assert!(
                !bc_tensor_is_live(old),
                "round {round}: stale handle is live"
            );
            let mut n = 0usize;
            // SAFETY: valid out-pointer.
            let st = unsafe { bc_tensor_ndim(old, &mut n) };
            assert_eq!(
                st, BC_ERR_INVALID_HANDLE,
                "round {round}: stale handle used"
            );
        }
        assert_eq!(values_f64(t), vec![round as f64]);
        bc_tensor_free(t);
        stale.push(t);
    }
    // Old handles never compare equal to a live one, even after thousands of reuses.
    let t = full(BC_DTYPE_FLOAT64, &[1], -1.0);
    assert!(!stale.contains(&t));
    bc_tensor_free(t);
}

/// Pointers the library never handed out: real addresses of other objects (stack, heap, static,
/// code, a pointer to a handle variable, i.e. `&t` passed for `t`), and made-up numbers.
#[test]
fn stray_pointers_are_refused() {
    let _g = serial();
    let live = full(BC_DTYPE_FLOAT64, &[2], 1.0);
    let on_stack = [0u64; 16];
    let on_heap = Box::new([0xdead_beef_u64; 16]);
    static A_STATIC: [u8; 64] = [0; 64];
    let mut candidates: Vec<*mut bc_tensor> = vec![
        on_stack.as_ptr() as *mut bc_tensor,
        &*on_heap as *const _ as *mut bc_tensor,
        A_STATIC.as_ptr() as *mut bc_tensor,
        assert_refused as *const () as *mut bc_tensor,
        &live as *const _ as *mut bc_tensor, // `&t` instead of `t`
        usize::MAX as *mut bc_tensor,
        (usize::MAX - 7) as *mut bc_tensor,
        (1usize << 63) as *mut bc_tensor,
        0xdead_beef_0000 as *mut bc_tensor,
        0xffff_ffff as *mut bc_tensor, // index u32::MAX - 1, generation 0
        // The live handle's slot with every other generation bit pattern near it.
        (live as usize ^ (1usize << 32)) as *mut bc_tensor,
        (live as usize).wrapping_add(1usize << 32) as *mut bc_tensor,
        (live as usize).wrapping_sub(1usize << 32) as *mut bc_tensor,
        (live as usize | (0xffff_ffffusize << 32)) as *mut bc_tensor,
    ];
    // Real heap blocks of various sizes (what a C caller might pass by mistake).
    let blocks: Vec<Vec<u8>> = (0..8).map(|i| vec![0xab; 8 << i]).collect();
    candidates.extend(blocks.iter().map(|b| b.as_ptr() as *mut bc_tensor));
    for (i, &h) in candidates.iter().enumerate() {
        assert!(!bc_tensor_is_live(h), "candidate {i} ({h:p}) is live");
        assert_refused(h);
    }
    // Nothing in the stray memory was written.
    assert!(on_stack.iter().all(|&x| x == 0));
    assert!(on_heap.iter().all(|&x| x == 0xdead_beef));
    assert!(blocks.iter().all(|b| b.iter().all(|&x| x == 0xab)));
    assert_eq!(values_f64(live), vec![1.0, 1.0]);
    bc_tensor_free(live);
}

/// Views keep their storage alive: freeing the base handle first is fine, and the base handle is
/// then invalid while the view still reads the right data.
#[test]
fn freeing_a_base_leaves_its_views_valid() {
    let _g = serial();
    let before = bc_tensor_live_count();
    let base = f64_tensor(&[2, 2], &[1.0, 2.0, 3.0, 4.0]);
    let mut view = ptr::null_mut();
    // SAFETY: out valid for one write.
    assert_eq!(unsafe { bc_tensor_transpose(base, 0, 1, &mut view) }, BC_OK);
    bc_tensor_free(base);
    assert_refused(base);
    assert_eq!(values_f64(view), vec![1.0, 3.0, 2.0, 4.0]);
    bc_tensor_free(view);
    assert_eq!(bc_tensor_live_count(), before);
}

/// Regression (a weakness the reliability work found): a handle used to be `slot + 1` in the low
/// half and the generation in the high half, so the small integers 1, 2, 3... were the handles of
/// the first tensors of a process, and a caller that passed an `int` by mistake (a status code, a
/// count) reached a live tensor. Tokens are now XORed with a key. Run in a fresh child process so
/// the registry starts empty.
#[test]
fn small_integers_are_not_handles() {
    if !is_child("small_integers_are_not_handles") {
        run_in_child("small_integers_are_not_handles", None);
        return;
    }
    let ts: Vec<*mut bc_tensor> = (0..4).map(|_| full(BC_DTYPE_FLOAT64, &[1], 1.0)).collect();
    for n in 1usize..=4096 {
        assert!(
            !bc_tensor_is_live(n as *mut bc_tensor),
            "the number {n} is a live handle"
        );
    }
    assert_refused(std::ptr::without_provenance_mut::<bc_tensor>(1));
    for t in ts {
        assert_eq!(values_f64(t), vec![1.0]);
        bc_tensor_free(t);
    }
}

/// Counts the runs of [`count_release`] (the caller's memory released).
static RELEASED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

unsafe extern "C" fn count_release(_: *mut c_void) {
    RELEASED.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
}

fn released() -> usize {
    RELEASED.load(std::sync::atomic::Ordering::SeqCst)
}

/// With every handle in use, a call that would make one fails with
/// `BC_ERR_ALLOC` (a resource is exhausted, not an invalid argument), leaves its out-handles NULL,
/// and `bc_tensor_wrap` never runs the caller's release callback: the memory stays the caller's.
/// The limit is lowered (a hidden hook) so that this does not take 16.7 million handles.
#[test]
fn handle_limit_is_an_alloc_error_and_a_failed_wrap_keeps_the_callers_memory() {
    // In a child process: with the slot limit down, a thread of another test that is still
    // exiting (handing its cached free slots back to the shared list) would hand out a slot.
    const NAME: &str = "handle_limit_is_an_alloc_error_and_a_failed_wrap_keeps_the_callers_memory";
    if !is_child(NAME) {
        run_in_child(NAME, None);
        return;
    }
    let _g = serial();
    let base = full(BC_DTYPE_FLOAT32, &[2, 1], 1.0);
    /// Puts the limit back however the test ends, so a failure here does not fail the others.
    struct Restore(usize);
    impl Drop for Restore {
        fn drop(&mut self) {
            broadcast::ffi::handle::set_slot_limit_for_tests(self.0);
        }
    }
    // At least one slot made and free, whatever other tests left behind (their freed slots may
    // sit in the caches of threads that are gone): the end of this test frees one of `held`.
    bc_tensor_free(full(BC_DTYPE_FLOAT32, &[1], 0.0));
    let restore = Restore(broadcast::ffi::handle::set_slot_limit_for_tests(0));
    // Take every slot already made: then no handle is left.
    let mut held = Vec::new();
    loop {
        let mut t = ptr::null_mut();
        // SAFETY: valid pointers.
        let st = unsafe { bc_tensor_zeros(BC_DTYPE_FLOAT32, [1i64].as_ptr(), 1, &mut t) };
        if st != BC_OK {
            assert_eq!(st, BC_ERR_ALLOC, "{}", last_message());
            assert!(t.is_null());
            break;
        }
        held.push(t);
        assert!(held.len() < 1 << 22, "the limit never came");
    }
    assert!(!held.is_empty(), "the slot freed above was not reused");
    assert!(
        last_message().starts_with("too many live tensor handles"),
        "{}",
        last_message()
    );
    let info = last_info();
    assert_eq!((info.kind, info.size_a), (BC_ERROR_KIND_ALLOC, -1));

    let before = released();
    let mut data = [1.5f32; 4];
    let shape = [4i64];
    let wrap = |data: &mut [f32; 4], out: &mut *mut bc_tensor| {
        // SAFETY: `data` outlives every tensor over it (each is freed below).
        unsafe {
            bc_tensor_wrap(
                BC_DTYPE_FLOAT32,
                data.as_mut_ptr().cast(),
                16,
                shape.as_ptr(),
                ptr::null(),
                1,
                0,
                Some(count_release),
                ptr::null_mut(),
                out,
            )
        }
    };
    let mut out = 0x5a5a as *mut bc_tensor;
    assert_eq!(wrap(&mut data, &mut out), BC_ERR_ALLOC);
    assert!(out.is_null());
    assert_eq!(released(), before, "a failed wrap ran the release callback");

    // Every other way to make a handle fails the same way, with its outputs NULL.
    let sizes = [3i64, 2, 4];
    let mut outs = [0x5a5a as *mut bc_tensor; 2];
    let ins = [base as *const bc_tensor, base];
    // SAFETY (each call): valid pointers.
    unsafe {
        for (what, st, o) in [
            ("clone", bc_tensor_clone(base, &mut out), out),
            (
                "expand",
                bc_tensor_expand(base, sizes.as_ptr(), 3, &mut out),
                out,
            ),
            ("transpose", bc_tensor_transpose(base, 0, 1, &mut out), out),
            ("add", bc_add(base, base, &mut out), out),
            (
                "broadcast_tensors",
                bc_tensor_broadcast_tensors(ins.as_ptr(), 2, outs.as_mut_ptr()),
                outs[1],
            ),
        ] {
            assert_eq!(st, BC_ERR_ALLOC, "{what}: {}", last_message());
            assert!(o.is_null(), "{what}: out-handle set");
        }
        assert_eq!(outs, [ptr::null_mut(); 2]);
    }

    // One handle freed: the wrap goes through, and its callback runs once, when it is freed.
    bc_tensor_free(held.pop().unwrap());
    assert_eq!(wrap(&mut data, &mut out), BC_OK, "{}", last_message());
    bc_tensor_free(out);
    assert_eq!(released(), before + 1);

    drop(restore);
    for t in held {
        bc_tensor_free(t);
    }
    bc_tensor_free(base);
    assert_library_works();
}

/// A stale handle never names a live tensor again, however often its slot is
/// reused. The report's loop (free, make, free, ... on one thread, which reuses its own freed
/// slot every time) takes 2^32 cycles to reach the old wrap-around, so a hidden hook moves the
/// slot's generation close to it. Generations now have 40 bits, and a slot whose generation
/// reaches the last one is retired instead of reused.
#[test]
fn stale_handles_stay_dead_across_generation_limits() {
    use broadcast::ffi::handle::set_generation_for_tests as jump;
    let _g = serial();
    let slot_of = |h: *mut bc_tensor| h as usize & 0xFF_FFFF; // the token's index bits
    let cycle = |h: &mut *mut bc_tensor, seen: &mut Vec<*mut bc_tensor>, value: f64| {
        bc_tensor_free(*h);
        *h = full(BC_DTYPE_FLOAT64, &[1], value);
        assert!(!seen.contains(h), "a token came back at {value}");
        for &old in seen.iter() {
            assert!(!bc_tensor_is_live(old), "an old handle is live at {value}");
            let mut n = 0usize;
            // SAFETY: valid out-pointer.
            assert_eq!(
                unsafe { bc_tensor_ndim(old, &mut n) },
                BC_ERR_INVALID_HANDLE
            );
        }
        assert_eq!(values_f64(*h), vec![value]);
        seen.push(*h);
    };

    // A handle at generation BASE + 5 of a slot, freed: the stale handle of the report. BASE is
    // past any generation a slot reaches in these tests (other tests use slots too: a slot found
    // at generation 6 would hand the first new token back as `t`).
    const BASE: u64 = 1 << 24;
    let t = full(BC_DTYPE_FLOAT64, &[1], 0.0);
    let stale = jump(t, BASE + 5).expect("a live handle");
    let mut seen = vec![t, stale];
    let mut h = stale;
    cycle(&mut h, &mut seen, 1.0);
    assert_eq!(
        slot_of(h),
        slot_of(stale),
        "the thread did not reuse its slot"
    );
    // Past 2^32 + BASE + 5, where a 32-bit generation made the stale token again.
    h = jump(h, (1 << 32) + BASE + 2).unwrap();
    seen.push(h);
    for v in 2..8 {
        cycle(&mut h, &mut seen, v as f64);
    }
    assert_eq!(slot_of(h), slot_of(stale));

    // Up to the last generation a token holds (2^40 - 1): then the slot is retired.
    h = jump(h, (1 << 40) - 3).unwrap();
    seen.push(h);
    let retiring = slot_of(h);
    cycle(&mut h, &mut seen, 8.0); // 2^40 - 2
    cycle(&mut h, &mut seen, 9.0); // 2^40 - 1
    assert_eq!(slot_of(h), retiring);
    for v in 10..14 {
        cycle(&mut h, &mut seen, v as f64);
        assert_ne!(slot_of(h), retiring, "a retired slot was handed out again");
    }
    bc_tensor_free(h);
    for &old in &seen {
        bc_last_error_clear();
        bc_tensor_free(old);
        assert_eq!(bc_last_error_status(), BC_ERR_INVALID_HANDLE);
    }
    assert_library_works();
}
