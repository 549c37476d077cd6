//! Panics: none crosses the C boundary. `bc_debug_panic()` panics inside the library on
//! purpose; it must come back as `BC_ERR_INTERNAL` with a message, and the library must work
//! afterwards, on that thread and on others, also when many threads panic at once.
//!
//! Without the `catch_unwind` in the boundary these tests cannot pass: since Rust 1.81 a panic
//! that reaches an `extern "C"` function aborts the process, which kills this test binary.

use broadcast::ffi::*;
use std::panic::catch_unwind;
use std::sync::{Arc, Barrier};
use testkit::raw::*;

const PANIC_MESSAGE: &str = "internal error: bc_debug_panic: deliberate panic";

fn panic_once() {
    bc_last_error_clear();
    assert_eq!(bc_debug_panic(), BC_ERR_INTERNAL);
    assert_eq!(bc_last_error_status(), BC_ERR_INTERNAL);
    assert_eq!(last_message(), PANIC_MESSAGE);
    let info = last_info();
    assert_eq!(info.status, BC_ERR_INTERNAL);
    assert_eq!(info.kind, BC_ERROR_KIND_INTERNAL);
}

#[test]
fn a_panic_comes_back_as_a_status_and_the_library_still_works() {
    let _g = serial();
    let before = bc_tensor_live_count();
    let keep = f64_tensor(&[3], &[1.0, 2.0, 3.0]);
    panic_once();
    assert_library_works();
    // Tensors made before the panic are intact and usable.
    assert_eq!(values_f64(keep), vec![1.0, 2.0, 3.0]);
    let doubled = add(keep, keep);
    assert_eq!(values_f64(doubled), vec![2.0, 4.0, 6.0]);
    bc_tensor_free(doubled);
    bc_tensor_free(keep);
    assert_eq!(bc_tensor_live_count(), before, "the panic leaked a handle");
    // A later failure replaces the panic's record as usual.
    let mut out = std::ptr::null_mut();
    let bad = [-1i64];
    // SAFETY: valid pointers.
    let st = unsafe { bc_tensor_zeros(BC_DTYPE_FLOAT32, bad.as_ptr(), 1, &mut out) };
    assert_eq!(st, BC_ERR_INVALID_ARG);
    assert_eq!(bc_last_error_status(), BC_ERR_INVALID_ARG);
}

#[test]
fn repeated_panics_interleaved_with_work() {
    let _g = serial();
    let before = bc_tensor_live_count();
    for _ in 0..100 {
        panic_once();
        assert_library_works();
    }
    assert_eq!(bc_tensor_live_count(), before);
}

/// Many threads panicking at the same moment while others compute: every panic is reported to
/// its own thread, and every computation is right.
#[test]
fn panics_on_many_threads_at_once() {
    let _g = serial();
    let threads = 8;
    let rounds = 30;
    let barrier = Arc::new(Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|i| {
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                let mut failure = None;
                for _ in 0..rounds {
                    barrier.wait();
                    // A failed check must not leave the others waiting at the barrier forever.
                    let r = catch_unwind(|| {
                        if i % 2 == 0 {
                            panic_once();
                        } else {
                            bc_last_error_clear();
                            assert_library_works();
                            // A thread that did not panic sees no error from those that did.
                            assert_eq!(bc_last_error_status(), BC_OK);
                            assert_eq!(last_message(), "");
                        }
                    });
                    if let Err(e) = r {
                        failure.get_or_insert(e);
                    }
                }
                if let Some(e) = failure {
                    std::panic::resume_unwind(e);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().expect("a test thread failed");
    }
    assert_library_works();
}
