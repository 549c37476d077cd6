//! The panic boundary and the per-thread record of the last failure. Every export runs its body
//! through [`call`], which turns `Ok` into `BC_OK`, an error into its status plus a stored
//! message, and a panic into `BC_ERR_INTERNAL`: nothing unwinds into the caller.
use super::status::{FfiError, BC_OK};
use crate::engine::Error;
use std::cell::{Cell, RefCell};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Once;

/// What the last failed call on this thread left behind.
#[derive(Default)]
pub(crate) struct LastError {
    pub status: i32,
    pub message: String,
    /// The engine error itself, for callers that read errors as data.
    pub error: Option<Error>,
}

thread_local! {
    pub(crate) static LAST_ERROR: RefCell<LastError> = RefCell::new(LastError::default());
}

fn record(e: FfiError) -> i32 {
    let status = e.status();
    let message = e.message();
    let error = match e {
        FfiError::Engine(err) => Some(err),
        _ => None,
    };
    LAST_ERROR.with(|slot| {
        *slot.borrow_mut() = LastError {
            status,
            message,
            error,
        }
    });
    status
}

thread_local! {
    /// Depth of boundary calls on this thread: panics inside them are reported as statuses, so
    /// the panic hook stays quiet for them.
    static INSIDE: Cell<u32> = const { Cell::new(0) };
}

/// Installs, once, a panic hook that stays silent for panics caught by the boundary (they become
/// a status and a message) and hands every other panic to the hook that was there before.
fn quiet_panics_inside_boundary() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if INSIDE.with(|d| d.get()) == 0 {
                previous(info);
            }
        }));
    });
}

/// Runs `body` under `catch_unwind`, marking the thread as inside the boundary.
fn guarded<T>(body: impl FnOnce() -> T) -> std::thread::Result<T> {
    quiet_panics_inside_boundary();
    INSIDE.with(|d| d.set(d.get() + 1));
    let result = catch_unwind(AssertUnwindSafe(body));
    INSIDE.with(|d| d.set(d.get() - 1));
    result
}

/// Runs an export's body: the status it returns is `BC_OK` or the failure's code.
pub(crate) fn call(body: impl FnOnce() -> Result<(), FfiError>) -> i32 {
    match guarded(body) {
        Ok(Ok(())) => BC_OK,
        Ok(Err(e)) => record(e),
        Err(payload) => {
            let text = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "panic with a non-string payload".to_string());
            record(FfiError::Panic(text))
        }
    }
}

/// For exports that cannot report a status: the body's value, or `fallback` on a panic.
pub(crate) fn call_or<T>(fallback: T, body: impl FnOnce() -> T) -> T {
    guarded(body).unwrap_or(fallback)
}
