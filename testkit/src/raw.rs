//! Raw-handle helpers for the tests of the handle registry, memory exhaustion, panics, threads
//! and regressions, which work with `*mut bc_tensor` as a C caller does (the rest of the kit
//! owns its handles in `T`): thin wrappers over the C ABI, a per-binary lock for tests that count
//! live handles, and a way to run one test in a child process under an address-space limit.

// Handles are tokens the library checks (a stale or foreign one is refused with an error, not
// dereferenced), so these take them as a C caller does, without `unsafe`.
#![allow(clippy::not_unsafe_ptr_arg_deref)]

use broadcast::ffi::*;
use std::ffi::c_char;
use std::process::Command;
use std::ptr;
use std::sync::{Mutex, MutexGuard};

/// Tests in one binary that read `bc_tensor_live_count` (a process-wide number) take this lock,
/// so no other test of the same binary creates or frees handles meanwhile.
pub fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// The calling thread's last error message.
pub fn last_message() -> String {
    // SAFETY: (NULL, 0) asks for the length; then a buffer of exactly that size + 1.
    unsafe {
        let n = bc_last_error_message(ptr::null_mut(), 0);
        let mut buf = vec![0u8; n + 1];
        bc_last_error_message(buf.as_mut_ptr() as *mut c_char, buf.len());
        String::from_utf8_lossy(&buf[..n]).into_owned()
    }
}

pub fn last_info() -> bc_error_info {
    let mut info = std::mem::MaybeUninit::<bc_error_info>::uninit();
    // SAFETY: valid for one write.
    let st = unsafe { bc_last_error_info(info.as_mut_ptr()) };
    assert_eq!(st, BC_OK);
    // SAFETY: written by the call above.
    unsafe { info.assume_init() }
}

/// A float64 tensor with `values` in row-major order.
pub fn f64_tensor(shape: &[i64], values: &[f64]) -> *mut bc_tensor {
    let mut out = ptr::null_mut();
    // SAFETY: every array is valid for its length.
    let st = unsafe {
        bc_tensor_from_data(
            BC_DTYPE_FLOAT64,
            shape.as_ptr(),
            shape.len(),
            values.as_ptr().cast(),
            std::mem::size_of_val(values),
            &mut out,
        )
    };
    assert_eq!(st, BC_OK, "bc_tensor_from_data: {}", last_message());
    out
}

/// A tensor of `dtype` and `shape` with every element `value`.
pub fn full(dtype: i32, shape: &[i64], value: f64) -> *mut bc_tensor {
    let mut out = ptr::null_mut();
    // SAFETY: shape valid for its length, out for one write.
    let st = unsafe { bc_tensor_full(dtype, shape.as_ptr(), shape.len(), value, &mut out) };
    assert_eq!(st, BC_OK, "bc_tensor_full: {}", last_message());
    out
}

pub fn shape_of(t: *const bc_tensor) -> Vec<i64> {
    let mut buf = [0i64; BC_MAX_NDIM];
    let mut ndim = 0usize;
    // SAFETY: valid out-pointers.
    unsafe {
        assert_eq!(bc_tensor_ndim(t, &mut ndim), BC_OK, "{}", last_message());
        assert_eq!(bc_tensor_shape(t, buf.as_mut_ptr(), buf.len()), BC_OK);
    }
    buf[..ndim].to_vec()
}

/// The elements of `t` converted to float64, row-major.
pub fn values_f64(t: *const bc_tensor) -> Vec<f64> {
    let mut conv = ptr::null_mut();
    // SAFETY: out valid for one write.
    let st = unsafe { bc_tensor_to_dtype(t, BC_DTYPE_FLOAT64, &mut conv) };
    assert_eq!(st, BC_OK, "bc_tensor_to_dtype: {}", last_message());
    let mut n = 0i64;
    // SAFETY: out valid for one write.
    unsafe { assert_eq!(bc_tensor_numel(conv, &mut n), BC_OK) };
    let mut v = vec![0f64; n as usize];
    // SAFETY: buf valid for that many bytes.
    let st = unsafe { bc_tensor_copy_to(conv, v.as_mut_ptr().cast(), n as usize * 8) };
    assert_eq!(st, BC_OK, "bc_tensor_copy_to: {}", last_message());
    bc_tensor_free(conv);
    v
}

/// `a + b` as a new tensor (asserting success).
pub fn add(a: *const bc_tensor, b: *const bc_tensor) -> *mut bc_tensor {
    let mut out = ptr::null_mut();
    // SAFETY: out valid for one write.
    let st = unsafe { bc_add(a, b, &mut out) };
    assert_eq!(st, BC_OK, "bc_add: {}", last_message());
    out
}

/// Proves the library still works: a fresh computation gives the right numbers.
pub fn assert_library_works() {
    let a = f64_tensor(&[2, 1], &[1.0, 2.0]);
    let b = f64_tensor(&[3], &[10.0, 20.0, 30.0]);
    let c = add(a, b);
    assert_eq!(shape_of(c), vec![2, 3]);
    assert_eq!(values_f64(c), vec![11.0, 21.0, 31.0, 12.0, 22.0, 32.0]);
    for t in [a, b, c] {
        bc_tensor_free(t);
    }
}

/// Env var that marks a child process started by [`run_in_child`].
pub const CHILD_ENV: &str = "BC_TEST_CHILD";

/// Whether this process is a child started by [`run_in_child`] for `test`.
pub fn is_child(test: &str) -> bool {
    std::env::var(CHILD_ENV).is_ok_and(|v| v == test)
}

/// Re-runs the test named `test` (its full path inside this binary) in a child process of this
/// test binary, with the address space limited to `as_limit` bytes (`RLIMIT_AS`), and panics with
/// the child's output unless it passed. A child killed by a signal (an abort, a segfault) shows as
/// exactly that. Returns the child's combined output.
pub fn run_in_child(test: &str, as_limit: Option<u64>) -> String {
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    let exe = std::env::current_exe().expect("current_exe");
    let mut cmd = Command::new(exe);
    cmd.args([
        test,
        "--exact",
        "--nocapture",
        "--test-threads=1",
        "--include-ignored",
    ])
    .env(CHILD_ENV, test);
    if let Some(limit) = as_limit {
        // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                let lim = libc::rlimit {
                    rlim_cur: limit,
                    rlim_max: limit,
                };
                if libc::setrlimit(libc::RLIMIT_AS, &lim) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    let out = cmd.output().expect("start the child test process");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if let Some(sig) = out.status.signal() {
        panic!("child `{test}` was killed by signal {sig} (abort/crash instead of a status code); output:\n{text}");
    }
    assert!(
        out.status.success(),
        "child `{test}` failed ({}); output:\n{text}",
        out.status
    );
    assert!(
        text.contains("1 passed"),
        "child `{test}` ran no test; output:\n{text}"
    );
    text
}
