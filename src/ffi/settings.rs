//! Process-wide settings: the two backwards-compatibility switches, the warning handler, the
//! thread count, and the version.
use super::boundary::{call, call_or};
use super::status::FfiError;
use crate::engine::{parallel, Options, Warning};
use std::ffi::{c_char, c_void, CString};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// Receives each warning: `message` is NUL-terminated and valid only during the call (copy it to
/// keep it); it carries no "UserWarning: " prefix. Called on the thread of the operation that
/// warns, before that operation returns.
pub type bc_warning_fn =
    Option<unsafe extern "C" fn(user_data: *mut c_void, message: *const c_char)>;

static BROADCAST_WARNING: AtomicBool = AtomicBool::new(false);
static LEGACY_FALLBACK: AtomicBool = AtomicBool::new(false);

struct Handler {
    func: unsafe extern "C" fn(*mut c_void, *const c_char),
    user_data: usize,
}
static HANDLER: Mutex<Option<Handler>> = Mutex::new(None);

pub(crate) fn options() -> Options {
    Options {
        broadcast_warning: BROADCAST_WARNING.load(Ordering::Relaxed),
        legacy_fallback: LEGACY_FALLBACK.load(Ordering::Relaxed),
    }
}

/// Delivers warnings to the installed handler, or to standard error.
pub(crate) fn emit(warnings: &[Warning]) {
    for w in warnings {
        let handler = HANDLER
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .map(|h| (h.func, h.user_data));
        match handler {
            Some((func, user_data)) => {
                let text = CString::new(w.message()).expect("warning texts hold no NUL");
                // SAFETY: the caller installed this function for exactly this call shape.
                unsafe { func(user_data as *mut c_void, text.as_ptr()) };
            }
            None => eprintln!("UserWarning: {}", w.message()),
        }
    }
}

/// Turns the broadcast warning on or off (spec section 5; PyTorch's
/// `torch.utils.backcompat.broadcast_warning.enabled`). When on, an operation whose operands have
/// different shapes, are broadcastable and have the same number of elements warns. Off by default.
///
/// # Returns
/// `BC_OK`.
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

/// Turns the legacy 1-D pointwise fallback on or off (spec section 5). When on, operands that are
/// not broadcastable but have the same number of elements are computed element by element in
/// row-major order, the result takes the first operand's shape, and a warning is emitted. Off by
/// default (such operands are a `BC_ERR_SHAPE` error).
///
/// # Returns
/// `BC_OK`.
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
/// # Returns
/// `BC_OK`.
#[no_mangle]
pub extern "C" fn bc_set_warning_handler(handler: bc_warning_fn, user_data: *mut c_void) -> i32 {
    call(|| {
        let mut slot = HANDLER.lock().unwrap_or_else(|e| e.into_inner());
        *slot = handler.map(|func| Handler {
            func,
            user_data: user_data as usize,
        });
        Ok::<(), FfiError>(())
    })
}

/// Sets how many threads large operations use; 0 means all available cores (the default).
/// Results are identical for every thread count.
///
/// # Returns
/// `BC_OK`.
#[no_mangle]
pub extern "C" fn bc_set_num_threads(threads: usize) -> i32 {
    parallel::set_num_threads(threads);
    super::status::BC_OK
}

/// The number of threads large operations use (never 0).
#[no_mangle]
pub extern "C" fn bc_get_num_threads() -> usize {
    call_or(1, parallel::num_threads)
}

/// Sets the number of result elements below which an operation stays on the calling thread.
/// 0 restores the default.
///
/// # Returns
/// `BC_OK`.
#[no_mangle]
pub extern "C" fn bc_set_parallel_threshold(elements: usize) -> i32 {
    parallel::set_threshold(if elements == 0 {
        parallel::DEFAULT_THRESHOLD
    } else {
        elements
    });
    super::status::BC_OK
}

/// The library's version, `"MAJOR.MINOR.PATCH"`: a static string, equal to `BC_VERSION_STRING`
/// of the header the library was built with.
#[no_mangle]
pub extern "C" fn bc_version() -> *const c_char {
    const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), "\0");
    VERSION.as_ptr().cast()
}
