//! The panic boundary and the per-thread record of the last failure. Every export runs its body
//! through [`call`], which turns `Ok` into `BC_OK`, an error into its status plus a stored
//! message, and a panic into `BC_ERR_INTERNAL`: nothing unwinds into the caller.
use super::status::{FfiError, BC_OK};
use crate::engine::Error;
use std::cell::RefCell;
use std::panic::{catch_unwind, AssertUnwindSafe};

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

/// Runs an export's body: the status it returns is `BC_OK` or the failure's code.
pub(crate) fn call(body: impl FnOnce() -> Result<(), FfiError>) -> i32 {
    match catch_unwind(AssertUnwindSafe(body)) {
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
    catch_unwind(AssertUnwindSafe(body)).unwrap_or(fallback)
}
