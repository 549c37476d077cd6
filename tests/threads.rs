//! Threads: many threads using the library at once give the same results as one
//! thread; handles made on one thread are used and freed on others (as Go and Julia finalizers
//! do); a release callback runs exactly once, on whichever thread frees the last view; racing
//! frees of one handle free it exactly once; the per-thread last error never mixes.
//!
//! A fixed number of rounds: `BC_STRESS_ROUNDS` (default 50, about 2 s in a debug build);
//! `scripts/stress.sh` runs more, in release, and optionally under ThreadSanitizer.

use broadcast::ffi::*;
use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Barrier};
use testkit::raw::*;

const THREADS: usize = 8;

fn rounds() -> usize {
    std::env::var("BC_STRESS_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50)
}

/// A handle sent to another thread (the registry makes that legal; raw pointers are not `Send`).
#[derive(Clone, Copy)]
struct H(usize);
impl H {
    fn new(t: *mut bc_tensor) -> H {
        H(t as usize)
    }
    fn get(self) -> *mut bc_tensor {
        self.0 as *mut bc_tensor
    }
}

fn ok(st: i32, what: &str) {
    assert_eq!(st, BC_OK, "{what}: {}", last_message());
}

/// Raw bytes of `t` converted to float64 (NaN-exact comparisons via bits).
fn bits(t: *const bc_tensor) -> Vec<u64> {
    values_f64(t).into_iter().map(f64::to_bits).collect()
}

/// The shared read-only inputs: different dtypes, broadcastable shapes, a strided view.
struct Inputs {
    a: H, // float32 [16, 1, 9]
    b: H, // int32 [5, 9]
    c: H, // float16 [9]
    d: H, // a transposed view of a float64 [9, 5]
    s: H, // 0-d int64
}

fn make_inputs() -> Inputs {
    let seq = |n: usize, k: f64| -> Vec<f64> { (0..n).map(|i| (i as f64 - 7.0) * k).collect() };
    let conv = |t: *mut bc_tensor, dtype: i32| {
        let mut o = ptr::null_mut();
        // SAFETY: valid out-pointer.
        ok(unsafe { bc_tensor_to_dtype(t, dtype, &mut o) }, "to_dtype");
        bc_tensor_free(t);
        o
    };
    let a = conv(f64_tensor(&[16, 1, 9], &seq(144, 0.37)), BC_DTYPE_FLOAT32);
    let b = conv(f64_tensor(&[5, 9], &seq(45, 3.0)), BC_DTYPE_INT32);
    let c = conv(f64_tensor(&[9], &seq(9, 1.5)), BC_DTYPE_FLOAT16);
    let base = f64_tensor(&[9, 5], &seq(45, -0.25));
    let mut d = ptr::null_mut();
    // SAFETY: valid out-pointer.
    ok(
        unsafe { bc_tensor_transpose(base, 0, 1, &mut d) },
        "transpose",
    );
    bc_tensor_free(base);
    let s = conv(f64_tensor(&[], &[3.0]), BC_DTYPE_INT64);
    Inputs {
        a: H::new(a),
        b: H::new(b),
        c: H::new(c),
        d: H::new(d),
        s: H::new(s),
    }
}

/// One round of work on the shared inputs (read only) into this thread's own outputs; returns
/// every result's bits. Also exercises in-place and `out=` on tensors this thread owns.
fn work(inp: &Inputs) -> Vec<Vec<u64>> {
    let (a, b, c, d, s) = (
        inp.a.get(),
        inp.b.get(),
        inp.c.get(),
        inp.d.get(),
        inp.s.get(),
    );
    let mut results = Vec::new();
    let mut owned = Vec::new();
    let mut bin = |op: i32, x: *const bc_tensor, y: *const bc_tensor| {
        let mut o = ptr::null_mut();
        // SAFETY: valid out-pointer.
        ok(unsafe { bc_binary(op, x, y, &mut o) }, "binary");
        results.push(bits(o));
        owned.push(o);
        o
    };
    let ab = bin(BC_OP_ADD, a, b); // float32 [16, 5, 9]
    bin(BC_OP_MUL, b, c); // float16 [5, 9]
    bin(BC_OP_DIV, b, s); // float32 [5, 9]
    bin(BC_OP_SUB, d, a); // float64 [16, 5, 9]
    bin(BC_OP_SUB, c, s); // float16 [9]
    let own = bin(BC_OP_MUL, ab, d); // float64 [16, 5, 9]
                                     // In place and out= into this thread's own tensors.
    ok(bc_add_inplace(own, c), "add_inplace");
    ok(bc_mul_inplace(own, s), "mul_inplace");
    ok(bc_sub_out(a, d, own), "sub_out");
    results.push(bits(own));
    ok(bc_div_inplace(ab, b), "div_inplace");
    results.push(bits(ab));
    for o in owned {
        bc_tensor_free(o);
    }
    results
}

/// Many threads computing on the same inputs at once get exactly the single-thread results, also
/// with the engine's own worker threads in play (a low parallel threshold).
#[test]
fn concurrent_results_equal_single_thread_results() {
    let _g = serial();
    let inputs = Arc::new(make_inputs());
    for threshold in [0usize, 64] {
        assert_eq!(bc_set_parallel_threshold(threshold), BC_OK); // 0: the default (no inner threads at these sizes)
        let expected = Arc::new(work(&inputs));
        let barrier = Arc::new(Barrier::new(THREADS));
        let joins: Vec<_> = (0..THREADS)
            .map(|_| {
                let (inputs, expected, barrier) = (
                    Arc::clone(&inputs),
                    Arc::clone(&expected),
                    Arc::clone(&barrier),
                );
                std::thread::spawn(move || {
                    barrier.wait();
                    for round in 0..rounds() {
                        let got = work(&inputs);
                        assert!(got == *expected, "round {round}: results differ");
                    }
                })
            })
            .collect();
        for j in joins {
            j.join().expect("worker thread failed");
        }
    }
    assert_eq!(bc_set_parallel_threshold(0), BC_OK);
    for h in [inputs.a, inputs.b, inputs.c, inputs.d, inputs.s] {
        bc_tensor_free(h.get());
    }
}

static RELEASED: [AtomicUsize; 64] = [const { AtomicUsize::new(0) }; 64];

unsafe extern "C" fn on_release(user_data: *mut c_void) {
    RELEASED[user_data as usize].fetch_add(1, Ordering::SeqCst);
}

/// Producers create tensors (owned and wrapped caller memory with release callbacks, plus views of
/// them); consumers on other threads read them and free them, in any order. Every handle is
/// freed exactly once, every release callback runs exactly once, and only after the last view.
#[test]
fn handles_cross_threads_and_are_freed_by_others() {
    let _g = serial();
    let before = bc_tensor_live_count();
    for r in RELEASED.iter() {
        r.store(0, Ordering::SeqCst);
    }
    let producers = THREADS / 2;
    let per_producer = 64 / producers; // one release slot per wrapped buffer
    let (tx, rx) = mpsc::channel::<(usize, Vec<H>, f64)>();
    let rx = Arc::new(std::sync::Mutex::new(rx));
    // Caller memory for the wrapped tensors; outlives every tensor (joined below).
    let buffers: Arc<Vec<Vec<f64>>> = Arc::new((0..64).map(|i| vec![i as f64; 12]).collect());
    let mut joins = Vec::new();
    for p in 0..producers {
        let (tx, buffers) = (tx.clone(), Arc::clone(&buffers));
        joins.push(std::thread::spawn(move || {
            for k in 0..per_producer {
                let id = p * per_producer + k;
                let mut w = ptr::null_mut();
                let shape = [3i64, 4];
                // SAFETY: the buffer holds 12 float64 and lives until the test ends.
                let st = unsafe {
                    bc_tensor_wrap(
                        BC_DTYPE_FLOAT64,
                        buffers[id].as_ptr() as *mut c_void,
                        12 * 8,
                        shape.as_ptr(),
                        ptr::null(),
                        2,
                        0,
                        Some(on_release),
                        id as *mut c_void,
                        &mut w,
                    )
                };
                ok(st, "wrap");
                let (mut v1, mut v2) = (ptr::null_mut(), ptr::null_mut());
                // SAFETY: valid out-pointers.
                unsafe {
                    ok(bc_tensor_transpose(w, 0, 1, &mut v1), "transpose");
                    ok(bc_tensor_slice(w, 1, 1, 4, 2, &mut v2), "slice");
                }
                let owned = full(BC_DTYPE_FLOAT32, &[4, 3], id as f64);
                tx.send((
                    id,
                    vec![H::new(w), H::new(v1), H::new(v2), H::new(owned)],
                    id as f64,
                ))
                .expect("send");
            }
        }));
    }
    drop(tx);
    let consumed = Arc::new(AtomicUsize::new(0));
    for _ in producers..THREADS {
        let (rx, consumed) = (Arc::clone(&rx), Arc::clone(&consumed));
        joins.push(std::thread::spawn(move || loop {
            let msg = rx.lock().expect("rx").recv();
            let Ok((id, hs, value)) = msg else { break };
            // Use them: each view reads the wrapped buffer, the owned tensor its fill value.
            let sum = add(hs[1].get(), hs[3].get());
            assert!(values_f64(sum).iter().all(|&x| x == 2.0 * value), "id {id}");
            bc_tensor_free(sum);
            assert_eq!(values_f64(hs[2].get()), vec![value; 6]);
            // Free in a scrambled order: the release must wait for the last view.
            let order: [usize; 4] = match id % 3 {
                0 => [0, 1, 2, 3],
                1 => [2, 3, 0, 1],
                _ => [1, 0, 3, 2],
            };
            // hs[0..3] view the wrapped buffer; hs[3] is an unrelated owned tensor.
            let mut views_left = 3;
            for (n, &i) in order.iter().enumerate() {
                bc_last_error_clear();
                bc_tensor_free(hs[i].get());
                assert_eq!(bc_last_error_status(), BC_OK, "id {id}: free {n}");
                if i < 3 {
                    views_left -= 1;
                }
                let expected = usize::from(views_left == 0);
                assert_eq!(
                    RELEASED[id].load(Ordering::SeqCst),
                    expected,
                    "id {id}: release count with {views_left} views left"
                );
            }
            assert_eq!(
                RELEASED[id].load(Ordering::SeqCst),
                1,
                "id {id}: release count"
            );
            consumed.fetch_add(1, Ordering::SeqCst);
        }));
    }
    for j in joins {
        j.join().expect("thread failed");
    }
    assert_eq!(consumed.load(Ordering::SeqCst), producers * per_producer);
    for (id, r) in RELEASED.iter().enumerate().take(producers * per_producer) {
        assert_eq!(r.load(Ordering::SeqCst), 1, "buffer {id}");
    }
    assert_eq!(bc_tensor_live_count(), before, "handles leaked");
}

/// Several threads free the same handle at the same moment: exactly one free succeeds, the others
/// get `BC_ERR_INVALID_HANDLE`, and the wrapped memory is released exactly once. Meanwhile other
/// threads use the handle: each call either works (with the right values) or reports the
/// invalid handle.
#[test]
fn racing_frees_of_one_handle() {
    let _g = serial();
    let before = bc_tensor_live_count();
    let rounds = rounds() * 10;
    let barrier = Arc::new(Barrier::new(THREADS + 1));
    let current = Arc::new(AtomicUsize::new(0));
    let succeeded = Arc::new(AtomicUsize::new(0));
    let joins: Vec<_> = (0..THREADS)
        .map(|i| {
            let (barrier, current, succeeded) = (
                Arc::clone(&barrier),
                Arc::clone(&current),
                Arc::clone(&succeeded),
            );
            std::thread::spawn(move || {
                let mut failure = None;
                for _ in 0..rounds {
                    barrier.wait();
                    let h = current.load(Ordering::SeqCst) as *mut bc_tensor;
                    // A failed check must not leave the others waiting at the barrier forever.
                    let r = catch_unwind(AssertUnwindSafe(|| {
                        if i % 2 == 0 {
                            bc_last_error_clear();
                            bc_tensor_free(h);
                            match bc_last_error_status() {
                                BC_OK => {
                                    succeeded.fetch_add(1, Ordering::SeqCst);
                                }
                                BC_ERR_INVALID_HANDLE => {}
                                s => panic!("free: status {s}"),
                            }
                        } else {
                            let mut o = ptr::null_mut();
                            // SAFETY: valid out-pointer.
                            match unsafe { bc_add(h, h, &mut o) } {
                                BC_OK => {
                                    assert_eq!(values_f64(o), vec![4.0; 4]);
                                    bc_tensor_free(o);
                                }
                                BC_ERR_INVALID_HANDLE => assert!(o.is_null()),
                                s => panic!("add: status {s} {}", last_message()),
                            }
                        }
                    }));
                    if let Err(e) = r {
                        failure.get_or_insert(e);
                    }
                    barrier.wait();
                }
                if let Some(e) = failure {
                    std::panic::resume_unwind(e);
                }
            })
        })
        .collect();
    let mut bad_round: Option<String> = None;
    for round in 0..rounds {
        let h = full(BC_DTYPE_FLOAT64, &[4], 2.0);
        current.store(h as usize, Ordering::SeqCst);
        succeeded.store(0, Ordering::SeqCst);
        barrier.wait(); // go
        barrier.wait(); // done
        let freed = succeeded.load(Ordering::SeqCst);
        let live = bc_tensor_is_live(h);
        if freed != 1 || live {
            bad_round.get_or_insert(format!(
                "round {round}: freed {freed} times (expected exactly once), still live: {live}"
            ));
        }
    }
    for j in joins {
        j.join().expect("thread failed");
    }
    assert!(bad_round.is_none(), "{}", bad_round.unwrap_or_default());
    assert_eq!(bc_tensor_live_count(), before);
}

/// Threads that create and free in tight loops share registry slots; every handle must always
/// reach its own tensor (its value tags the thread and the iteration), never a neighbour's.
#[test]
fn slot_reuse_under_contention_never_mixes_tensors() {
    let _g = serial();
    let before = bc_tensor_live_count();
    let iterations = rounds() * 25;
    let joins: Vec<_> = (0..THREADS)
        .map(|t| {
            std::thread::spawn(move || {
                let mut stale = Vec::new();
                for i in 0..iterations {
                    let tag = (t * 1_000_000 + i) as f64;
                    let h = full(BC_DTYPE_FLOAT64, &[2], tag);
                    let mut v = [0f64; 2];
                    // SAFETY: 16 bytes.
                    let st = unsafe { bc_tensor_copy_to(h, v.as_mut_ptr().cast(), 16) };
                    ok(st, "copy_to");
                    assert_eq!(v, [tag, tag], "thread {t} iteration {i}: another tensor");
                    bc_tensor_free(h);
                    stale.push(H::new(h));
                    // Old handles of this thread stay dead whatever the others allocate.
                    if let Some(old) = stale.get(i / 2) {
                        let mut n = 0usize;
                        // SAFETY: valid out-pointer.
                        let st = unsafe { bc_tensor_ndim(old.get(), &mut n) };
                        assert_eq!(st, BC_ERR_INVALID_HANDLE, "thread {t}: stale handle live");
                    }
                }
            })
        })
        .collect();
    for j in joins {
        j.join().expect("thread failed");
    }
    assert_eq!(bc_tensor_live_count(), before);
}

/// The per-thread last error: each thread fails with errors only it could have (its own sizes,
/// its own status codes), yields, then reads its record back: message, status, structured info
/// and shapes are always its own, whatever the other threads did in between.
#[test]
fn last_error_never_mixes_between_threads() {
    let _g = serial();
    let iterations = rounds() * 50;
    let barrier = Arc::new(Barrier::new(THREADS));
    let joins: Vec<_> = (0..THREADS)
        .map(|t| {
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                barrier.wait();
                for i in 0..iterations {
                    // Sizes unique to (thread, iteration): a = [2 + t], b = [1000 + i].
                    let a = [2 + t as i64];
                    let b = [1000 + i as i64];
                    let mut out = [0i64; 1];
                    let mut nd = 0usize;
                    // Panics are slow to report (the panic hook prints): one call in ten.
                    let kind = if (i + t) % 10 == 0 { 2 } else { (i + t) % 2 };
                    // SAFETY: every pointer is valid for its length.
                    let st = unsafe {
                        match kind {
                            0 => bc_shape_broadcast(
                                a.as_ptr(),
                                1,
                                b.as_ptr(),
                                1,
                                out.as_mut_ptr(),
                                1,
                                &mut nd,
                            ),
                            1 => bc_tensor_ndim(
                                (0xbad0_0000_0000 + t) as *const bc_tensor,
                                &mut nd,
                            ),
                            _ => bc_debug_panic(),
                        }
                    };
                    // Give the other threads every chance to overwrite a shared record.
                    std::thread::yield_now();
                    // A successful call in between must not clear the record either.
                    let mut ok_out = false;
                    // SAFETY: valid pointers.
                    let st_ok = unsafe {
                        bc_shape_is_broadcastable(a.as_ptr(), 1, a.as_ptr(), 1, &mut ok_out)
                    };
                    assert_eq!(st_ok, BC_OK);
                    std::thread::yield_now();
                    let msg = last_message();
                    let info = last_info();
                    match kind {
                        0 => {
                            assert_eq!(st, BC_ERR_SHAPE);
                            assert_eq!(
                                msg,
                                format!(
                                    "The size of tensor a ({}) must match the size of tensor b ({}) at non-singleton dimension 0",
                                    a[0], b[0]
                                ),
                                "thread {t} iteration {i}"
                            );
                            assert_eq!(info.kind, BC_ERROR_KIND_NOT_BROADCASTABLE);
                            assert_eq!((info.size_a, info.size_b), (a[0], b[0]));
                            let (mut sa, mut na) = ([0i64; 4], 0i64);
                            // SAFETY: valid pointers.
                            let s = unsafe { bc_last_error_shape(1, sa.as_mut_ptr(), 4, &mut na) };
                            assert_eq!((s, na, sa[0]), (BC_OK, 1, b[0]), "thread {t}: shape b");
                        }
                        1 => {
                            assert_eq!(st, BC_ERR_INVALID_HANDLE);
                            assert_eq!(info.kind, BC_ERROR_KIND_INVALID_HANDLE);
                            assert!(msg.starts_with("argument `t` is not a live"), "{msg}");
                        }
                        _ => {
                            assert_eq!(st, BC_ERR_INTERNAL);
                            assert_eq!(info.kind, BC_ERROR_KIND_INTERNAL);
                            assert_eq!(msg, "internal error: bc_debug_panic: deliberate panic");
                        }
                    }
                    assert_eq!(bc_last_error_status(), st, "thread {t}: status");
                }
                bc_last_error_clear();
                assert_eq!(last_message(), "");
            })
        })
        .collect();
    for j in joins {
        j.join().expect("thread failed");
    }
}

/// Small operations lock their operands' registry slots for the whole call. Threads passing the
/// same handles in opposite orders (and one handle twice) must never wait on each other in a
/// cycle, while another thread keeps creating and freeing handles around them. A deadlock shows
/// as the watchdog's failure instead of a hung test run.
#[test]
fn operands_in_opposite_orders_never_deadlock() {
    let _g = serial();
    let before = bc_tensor_live_count();
    let iterations = rounds() * 200;
    let a = H::new(full(BC_DTYPE_FLOAT32, &[3, 1], 1.0));
    let b = H::new(full(BC_DTYPE_FLOAT32, &[1, 3], 2.0));
    let (done_tx, done_rx) = mpsc::channel();
    for t in 0..4 {
        let done_tx = done_tx.clone();
        std::thread::spawn(move || {
            let result = catch_unwind(AssertUnwindSafe(|| {
                let out = full(BC_DTYPE_FLOAT32, &[3, 3], 0.0);
                let acc = full(BC_DTYPE_FLOAT32, &[3, 1], 0.0);
                for i in 0..iterations {
                    let (x, y) = if (t + i) % 2 == 0 { (a, b) } else { (b, a) };
                    ok(bc_add_out(x.get(), y.get(), out), "add_out");
                    ok(
                        bc_mul_out(out, out, out),
                        "mul_out (one handle three times)",
                    );
                    if t == 3 {
                        // Churn: new slots below and above the operands' indices.
                        let tmp = full(BC_DTYPE_FLOAT32, &[1], 0.0);
                        ok(bc_add_inplace(acc, tmp), "add_inplace");
                        bc_tensor_free(tmp);
                    }
                }
                assert_eq!(values_f64(out), vec![9.0; 9]);
                bc_tensor_free(out);
                bc_tensor_free(acc);
            }));
            let _ = done_tx.send(result.is_ok());
        });
    }
    drop(done_tx);
    let deadline = std::time::Duration::from_secs(120);
    for _ in 0..4 {
        match done_rx.recv_timeout(deadline) {
            Ok(passed) => assert!(passed, "a worker thread failed"),
            Err(_) => panic!("workers still blocked after {deadline:?}: a lock-order deadlock"),
        }
    }
    bc_tensor_free(a.get());
    bc_tensor_free(b.get());
    assert_eq!(bc_tensor_live_count(), before);
}

/// Handing slots back: a thread keeps the slots it freed for its next
/// handles, and hands them back when it exits, from a thread-exit hook. Without that, every
/// short-lived thread would strand its cache and the registry would grow with the number of
/// threads ever started (400 threads x 40 slots here: 62 chunks).
#[test]
fn exiting_threads_hand_their_cached_slots_back() {
    let _g = serial();
    let chunks = broadcast::ffi::handle::registry_chunks();
    for _ in 0..400 {
        std::thread::spawn(|| {
            let held: Vec<*mut bc_tensor> =
                (0..40).map(|_| full(BC_DTYPE_UINT8, &[1], 1.0)).collect();
            for t in held {
                bc_tensor_free(t);
            }
        })
        .join()
        .unwrap();
    }
    let grown = broadcast::ffi::handle::registry_chunks() - chunks;
    assert!(grown <= 1, "the registry grew by {grown} chunks");
}

/// What one installed warning handler was given as `user_data`.
struct HandlerData {
    /// Set once `bc_set_warning_handler` has returned from replacing this handler: from then on
    /// the caller may free this data, so no call may see it.
    retired: std::sync::atomic::AtomicBool,
    calls: AtomicUsize,
}

static LATE_CALLS: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn counting_handler(user_data: *mut c_void, _message: *const std::ffi::c_char) {
    // SAFETY: the test passes a HandlerData that outlives every handler call.
    let data = unsafe { &*(user_data as *const HandlerData) };
    if data.retired.load(Ordering::SeqCst) {
        LATE_CALLS.fetch_add(1, Ordering::SeqCst);
    }
    // Stay a little, so that swaps often happen while a handler runs.
    for _ in 0..200 {
        std::hint::spin_loop();
    }
    if data.retired.load(Ordering::SeqCst) {
        LATE_CALLS.fetch_add(1, Ordering::SeqCst);
    }
    data.calls.fetch_add(1, Ordering::SeqCst);
}

/// When `bc_set_warning_handler` returns, no thread is in the old handler and
/// none will enter it, so the old `user_data` may be freed. Two threads emit warnings without
/// pause while this thread swaps handlers 2,000 times and retires each old one as the setter
/// returns; no call may see a retired one. (Before the contract, 147-814 calls per 2,000 swaps
/// did.)
#[test]
fn a_replaced_warning_handler_is_never_called_again() {
    let _g = serial();
    LATE_CALLS.store(0, Ordering::SeqCst);
    let datas: Vec<HandlerData> = (0..2000)
        .map(|_| HandlerData {
            retired: false.into(),
            calls: AtomicUsize::new(0),
        })
        .collect();
    ok(bc_set_broadcast_warning(true), "warning on");
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let emitters: Vec<_> = (0..2)
        .map(|_| {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                // Different shapes, broadcastable, same number of elements: each call warns.
                let a = full(BC_DTYPE_FLOAT32, &[1, 3], 1.0);
                let b = full(BC_DTYPE_FLOAT32, &[3, 1], 2.0);
                let mut n = 0usize;
                while !stop.load(Ordering::SeqCst) {
                    bc_tensor_free(add(a, b));
                    n += 1;
                }
                bc_tensor_free(a);
                bc_tensor_free(b);
                n
            })
        })
        .collect();
    let mut previous: Option<&HandlerData> = None;
    for data in &datas {
        let st = bc_set_warning_handler(
            Some(counting_handler),
            data as *const HandlerData as *mut c_void,
        );
        ok(st, "bc_set_warning_handler");
        if let Some(p) = previous {
            p.retired.store(true, Ordering::SeqCst);
        }
        previous = Some(data);
        // Let the emitters use this handler before the next swap.
        while data.calls.load(Ordering::SeqCst) == 0 {
            std::thread::yield_now();
        }
    }
    ok(
        bc_set_warning_handler(None, ptr::null_mut()),
        "default handler",
    );
    previous.unwrap().retired.store(true, Ordering::SeqCst);
    stop.store(true, Ordering::SeqCst);
    let emitted: usize = emitters.into_iter().map(|t| t.join().unwrap()).sum();
    ok(bc_set_broadcast_warning(false), "warning off");
    let handled: usize = datas.iter().map(|d| d.calls.load(Ordering::SeqCst)).sum();
    assert!(
        handled >= datas.len(),
        "{handled} calls for {emitted} warnings"
    );
    assert_eq!(
        LATE_CALLS.load(Ordering::SeqCst),
        0,
        "calls saw a handler after it was replaced"
    );
}

static SETTER_STATUS: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(-1);

unsafe extern "C" fn handler_that_swaps(_: *mut c_void, _: *const std::ffi::c_char) {
    // It would wait for this very call to return: refused, not a deadlock.
    let st = bc_set_warning_handler(None, ptr::null_mut());
    SETTER_STATUS.store(st, Ordering::SeqCst);
}

/// The setter called from inside a handler fails (and changes nothing)
/// instead of waiting for itself.
#[test]
fn setting_the_warning_handler_from_inside_one_is_refused() {
    let _g = serial();
    ok(bc_set_broadcast_warning(true), "warning on");
    ok(
        bc_set_warning_handler(Some(handler_that_swaps), ptr::null_mut()),
        "install",
    );
    let a = full(BC_DTYPE_FLOAT32, &[1, 3], 1.0);
    let b = full(BC_DTYPE_FLOAT32, &[3, 1], 2.0);
    for _ in 0..2 {
        SETTER_STATUS.store(-1, Ordering::SeqCst);
        bc_tensor_free(add(a, b));
        assert_eq!(SETTER_STATUS.load(Ordering::SeqCst), BC_ERR_INVALID_ARG);
        assert!(
            last_message().contains("from inside a warning handler"),
            "{}",
            last_message()
        );
    }
    ok(
        bc_set_warning_handler(None, ptr::null_mut()),
        "default handler",
    );
    ok(bc_set_broadcast_warning(false), "warning off");
    bc_tensor_free(a);
    bc_tensor_free(b);
}

/// `bc_set_num_threads(SIZE_MAX)` is capped at `BC_MAX_THREADS`, and however
/// many threads are asked for, the pool never has more than `BC_MAX_THREADS - 1` workers.
#[test]
fn the_thread_count_is_capped() {
    let _g = serial();
    ok(bc_set_num_threads(usize::MAX), "set threads");
    assert_eq!(bc_get_num_threads(), BC_MAX_THREADS);
    ok(bc_set_num_threads(BC_MAX_THREADS + 1), "set threads");
    assert_eq!(bc_get_num_threads(), BC_MAX_THREADS);
    ok(bc_set_parallel_threshold(1), "threshold");
    let a = full(BC_DTYPE_FLOAT32, &[1 << 16], 1.0);
    for _ in 0..3 {
        bc_tensor_free(add(a, a));
    }
    bc_tensor_free(a);
    ok(bc_set_num_threads(0), "restore threads");
    ok(bc_set_parallel_threshold(0), "restore threshold");
    let workers = std::fs::read_dir("/proc/self/task")
        .expect("/proc/self/task (Linux)")
        .filter(|e| {
            let comm = e.as_ref().unwrap().path().join("comm");
            std::fs::read_to_string(comm).is_ok_and(|n| n.starts_with("bc-worker"))
        })
        .count();
    assert!(
        workers >= 1,
        "no worker ran: the test did not exercise the pool"
    );
    assert!(
        workers < BC_MAX_THREADS,
        "{workers} workers for at most {BC_MAX_THREADS} threads"
    );
}
