//! Process-wide settings: the two backwards-compatibility switches, the warning handler, the
//! thread count, the (per-thread) streaming policy, and the version.
use super::boundary::{call, call_or};
use super::status::FfiError;
use crate::engine::{parallel, stream, Options, Warning};
use std::cell::Cell;
use std::ffi::{c_char, c_void};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};

/// Receives each warning: `message` is NUL-terminated and valid only during the call (copy it to
/// keep it); it carries no "UserWarning: " prefix. Called on the thread of the operation that
/// warns, before that operation returns.
pub type bc_warning_fn =
    Option<unsafe extern "C" fn(user_data: *mut c_void, message: *const c_char)>;

static BROADCAST_WARNING: AtomicBool = AtomicBool::new(false);
static LEGACY_FALLBACK: AtomicBool = AtomicBool::new(false);

#[derive(Clone, Copy)]
struct Handler {
    func: unsafe extern "C" fn(*mut c_void, *const c_char),
    user_data: usize,
}

/// The installed handler, and how many deliveries are running, counted by the parity of the
/// epoch (the number of swaps so far) they started in.
struct Handlers {
    handler: Option<Handler>,
    epoch: usize,
    running: [usize; 2],
}
static HANDLERS: Mutex<Handlers> = Mutex::new(Handlers {
    handler: None,
    epoch: 0,
    running: [0; 2],
});
/// Signalled when the deliveries of an epoch have all returned.
static DELIVERED: Condvar = Condvar::new();
/// One swap at a time: while a setter waits for the deliveries of the epoch it closed, the new
/// epoch's deliveries count on the other parity, so it never waits for them.
static SWAPPING: Mutex<()> = Mutex::new(());

thread_local! {
    /// Whether this thread is inside a warning handler (a setter there would wait for itself).
    static IN_HANDLER: Cell<bool> = const { Cell::new(false) };
}

fn handlers() -> MutexGuard<'static, Handlers> {
    // The counts stay consistent between statements: a poisoned lock is still usable.
    HANDLERS.lock().unwrap_or_else(|e| e.into_inner())
}

pub(crate) fn options() -> Options {
    Options {
        broadcast_warning: BROADCAST_WARNING.load(Ordering::Relaxed),
        legacy_fallback: LEGACY_FALLBACK.load(Ordering::Relaxed),
    }
}

/// Delivers warnings to the installed handler, or to standard error. Each delivery is counted
/// while it runs, so that `bc_set_warning_handler` can wait for the ones using the handler it
/// replaces. (Inlined: most calls have none to deliver.)
#[inline]
pub(crate) fn emit(warnings: &[Warning]) {
    if !warnings.is_empty() {
        deliver(warnings);
    }
}

fn deliver(warnings: &[Warning]) {
    for w in warnings {
        let (handler, parity) = {
            let mut h = handlers();
            let parity = h.epoch % 2;
            h.running[parity] += 1;
            (h.handler, parity)
        };
        /// Ends the count of one delivery, however it ends.
        struct Running(usize);
        impl Drop for Running {
            fn drop(&mut self) {
                let mut h = handlers();
                h.running[self.0] -= 1;
                if h.running[self.0] == 0 {
                    DELIVERED.notify_all();
                }
            }
        }
        let _running = Running(parity);
        // The text on the stack, NUL-terminated for a handler, as one line for standard error:
        // delivering allocates nothing.
        const PREFIX: &[u8] = b"UserWarning: ";
        let mut line = [0u8; 512];
        let msg = w.message().as_bytes();
        let n = msg.len().min(line.len() - PREFIX.len() - 1);
        line[..PREFIX.len()].copy_from_slice(PREFIX);
        line[PREFIX.len()..][..n].copy_from_slice(&msg[..n]);
        match handler {
            Some(Handler { func, user_data }) => {
                let was = IN_HANDLER.replace(true);
                // SAFETY: the caller installed this function for exactly this call shape; the
                // text is NUL-terminated (the buffer is zeroed past it).
                unsafe {
                    func(
                        user_data as *mut c_void,
                        line[PREFIX.len()..].as_ptr().cast(),
                    )
                };
                IN_HANDLER.set(was);
            }
            None => {
                line[PREFIX.len() + n] = b'\n';
                // One write of the whole line, straight to the stream (a failure to print a
                // warning is not the call's failure).
                let _ = std::io::Write::write_all(
                    &mut std::io::stderr().lock(),
                    &line[..PREFIX.len() + n + 1],
                );
            }
        }
    }
}

/// Turns the broadcast warning on or off (docs/semantics.md, section 5; PyTorch's
/// `torch.utils.backcompat.broadcast_warning.enabled`). When on, an operation whose operands have
/// different shapes, are broadcastable and have the same number of elements warns. Off by default.
///
/// # Returns
/// `BC_OK`.
#[must_use]
#[no_mangle]
pub extern "C" fn bc_set_broadcast_warning(enabled: bool) -> i32 {
    BROADCAST_WARNING.store(enabled, Ordering::Relaxed);
    super::status::BC_OK
}

/// Whether the broadcast warning is on.
#[no_mangle]
pub extern "C" fn bc_get_broadcast_warning() -> bool {
    BROADCAST_WARNING.load(Ordering::Relaxed)
}

/// Turns the legacy 1-D pointwise fallback on or off (docs/semantics.md, section 5). When on,
/// operands that are not broadcastable but have the same number of elements are computed element
/// by element in row-major order, the result takes the first operand's shape, and a warning is
/// emitted. Off by default (such operands are a `BC_ERR_SHAPE` error).
///
/// # Returns
/// `BC_OK`.
#[must_use]
#[no_mangle]
pub extern "C" fn bc_set_legacy_fallback(enabled: bool) -> i32 {
    LEGACY_FALLBACK.store(enabled, Ordering::Relaxed);
    super::status::BC_OK
}

/// Whether the legacy 1-D fallback is on.
#[no_mangle]
pub extern "C" fn bc_get_legacy_fallback() -> bool {
    LEGACY_FALLBACK.load(Ordering::Relaxed)
}

/// Installs the handler that receives warnings, with a pointer passed back to it unchanged.
/// `handler` NULL restores the default: each warning is printed to standard error as one line,
/// `UserWarning: <message>`. Warnings never change the status of the call that emits them, and are
/// emitted only by calls that succeed.
///
/// When this returns, no thread is running the previous handler and none will call it again, so
/// the previous `user_data` may be freed: deliveries that began before the swap are waited for.
/// A handler must therefore not wait for a thread that is inside this function. Called from
/// inside a warning handler it would wait for itself: it then fails and changes nothing.
///
/// # Returns
/// `BC_OK`; `BC_ERR_INVALID_ARG` when called from inside a warning handler.
#[must_use]
#[no_mangle]
pub extern "C" fn bc_set_warning_handler(handler: bc_warning_fn, user_data: *mut c_void) -> i32 {
    call(|| {
        if IN_HANDLER.get() {
            return Err(FfiError::Refused(
                "bc_set_warning_handler was called from inside a warning handler, where it would wait for that handler to return",
            ));
        }
        let _one_swap = SWAPPING.lock().unwrap_or_else(|e| e.into_inner());
        let mut h = handlers();
        h.handler = handler.map(|func| Handler {
            func,
            user_data: user_data as usize,
        });
        let closed = h.epoch % 2;
        h.epoch = h.epoch.wrapping_add(1);
        while h.running[closed] > 0 {
            h = DELIVERED.wait(h).unwrap_or_else(|e| e.into_inner());
        }
        Ok(())
    })
}

/// Most threads an operation uses, the calling one included.
pub const BC_MAX_THREADS: usize = 64;
const _: () = assert!(BC_MAX_THREADS == parallel::MAX_THREADS);

/// Sets how many threads large operations use; 0 means all available cores (the default), at
/// most `BC_MAX_THREADS` of them. A larger count is lowered to `BC_MAX_THREADS` (which
/// `bc_get_num_threads` then reports). The library starts its worker threads (the count less
/// one) on the first operation that needs them; they live until the process ends. Results are
/// identical for every thread count.
///
/// # Returns
/// `BC_OK`.
#[must_use]
#[no_mangle]
pub extern "C" fn bc_set_num_threads(threads: usize) -> i32 {
    parallel::set_num_threads(threads);
    super::status::BC_OK
}

/// The number of threads large operations use (between 1 and `BC_MAX_THREADS`).
#[no_mangle]
pub extern "C" fn bc_get_num_threads() -> usize {
    call_or(1, parallel::num_threads)
}

/// Sets the number of result elements below which an operation stays on the calling thread.
/// 0 restores the default.
///
/// # Returns
/// `BC_OK`.
#[must_use]
#[no_mangle]
pub extern "C" fn bc_set_parallel_threshold(elements: usize) -> i32 {
    parallel::set_threshold(if elements == 0 {
        parallel::DEFAULT_THRESHOLD
    } else {
        elements
    });
    super::status::BC_OK
}

/// Streaming policy: a result of 2 MiB or more is written with streaming stores unless its
/// destination was just read by a previous call (a chain's temporary) and, on a CPU where
/// ordinary stores into cached lines are as fast as streaming ones (measured once, at the first
/// large call), unless the work can stay in the cache (its result and inputs within the cache
/// measured then). The default.
pub const BC_STREAMING_AUTO: i32 = 0;
/// Streaming policy: every result of work large enough to be shared between threads is written
/// with streaming stores (never in place), for a caller that does not read the result again soon.
pub const BC_STREAMING_ALWAYS: i32 = 1;
/// Streaming policy: results are never written with streaming stores, for a caller that reads
/// each result again soon (a chain of calls) whatever its size.
pub const BC_STREAMING_NEVER: i32 = 2;

/// Sets the streaming policy of the calling thread's operations: `BC_STREAMING_AUTO` (the
/// default), `BC_STREAMING_ALWAYS` or `BC_STREAMING_NEVER`. Streaming (non-temporal) stores write
/// a result to memory without reading its lines first, which saves memory traffic when the result
/// is not read again before the cache would evict it, and costs a read from memory when it is.
/// Results are identical under every policy; only their speed changes. Other threads keep their
/// own policy (each starts with `BC_STREAMING_AUTO`).
///
/// # Returns
/// `BC_OK`; `BC_ERR_INVALID_ARG` for another `mode` (the policy is then unchanged).
#[must_use]
#[no_mangle]
pub extern "C" fn bc_set_streaming(mode: i32) -> i32 {
    call(|| {
        let mode = match mode {
            BC_STREAMING_AUTO => stream::Streaming::Auto,
            BC_STREAMING_ALWAYS => stream::Streaming::Always,
            BC_STREAMING_NEVER => stream::Streaming::Never,
            _ => {
                return Err(FfiError::Refused(
                    "mode must be BC_STREAMING_AUTO, BC_STREAMING_ALWAYS or BC_STREAMING_NEVER",
                ))
            }
        };
        stream::set_streaming(mode);
        Ok(())
    })
}

/// The calling thread's streaming policy (`BC_STREAMING_AUTO`, `_ALWAYS` or `_NEVER`).
#[no_mangle]
pub extern "C" fn bc_get_streaming() -> i32 {
    call_or(BC_STREAMING_AUTO, || match stream::streaming() {
        stream::Streaming::Auto => BC_STREAMING_AUTO,
        stream::Streaming::Always => BC_STREAMING_ALWAYS,
        stream::Streaming::Never => BC_STREAMING_NEVER,
    })
}

/// The library's version, `"MAJOR.MINOR.PATCH"`: a static string, equal to `BC_VERSION_STRING`
/// of the header the library was built with.
#[no_mangle]
pub extern "C" fn bc_version() -> *const c_char {
    const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), "\0");
    VERSION.as_ptr().cast()
}
