//! The panic boundary and the per-thread record of the last failure. Every export runs its body
//! through [`call`], which turns `Ok` into `BC_OK`, an error into its status plus a stored
//! message, and a panic into `BC_ERR_INTERNAL`: nothing unwinds into the caller.
//!
//! The record is plain data of a fixed size (the message text, the error as `bc_error_info`,
//! its two shapes), kept in a thread-local without a destructor. Recording a failure therefore
//! never allocates (it works when memory is exhausted) and never finds the thread-local gone (it
//! works in a thread-exit destructor, where Go and Julia finalizers and C++ destructors run).
use super::error::{bc_error_info, describe};
use super::handle::BC_MAX_NDIM;
use super::status::{FfiError, BC_ERR_INTERNAL, BC_OK};
use std::any::Any;
use std::cell::{Cell, RefCell};
use std::fmt::Write as _;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

/// Longest message kept, in bytes (a longer one is cut at a character boundary). The longest
/// the library makes, two 64-dimension shapes of 20-digit sizes and their sentence, is under
/// 3 KiB.
pub(crate) const MESSAGE_CAP: usize = 4096;

/// What the last failed call on this thread left behind. All zeros is "no failure".
pub(crate) struct LastError {
    pub status: i32,
    /// `info` and `shapes` are meaningful when `status` is not `BC_OK`.
    pub info: bc_error_info,
    /// Shapes a and b of the failure (`info.ndim_a` / `ndim_b` entries of each).
    pub shapes: [[i64; BC_MAX_NDIM]; 2],
    len: usize,
    text: [u8; MESSAGE_CAP],
}

impl LastError {
    pub(crate) fn message(&self) -> &[u8] {
        &self.text[..self.len]
    }

    /// Forgets the failure.
    pub(crate) fn clear(&mut self) {
        self.status = BC_OK;
        self.len = 0;
    }

    /// Replaces the message with the text of `args`, cut to [`MESSAGE_CAP`] bytes.
    fn set_message(&mut self, args: std::fmt::Arguments<'_>) {
        self.len = 0;
        let _ = self.write_fmt(args); // a full buffer cuts the text; that is not an error here
    }
}

impl std::fmt::Write for LastError {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let room = MESSAGE_CAP - self.len;
        let mut n = s.len().min(room);
        while !s.is_char_boundary(n) {
            n -= 1;
        }
        self.text[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        if n < s.len() {
            return Err(std::fmt::Error);
        }
        Ok(())
    }
}

/// The record before any failure: all zeros, so the thread-local needs no initial image (each
/// new thread gets it zero-filled rather than copied).
const EMPTY_INFO: bc_error_info = bc_error_info {
    status: BC_OK,
    kind: 0,
    dim: 0,
    size_a: 0,
    size_b: 0,
    arg: 0,
    dtype_a: 0,
    dtype_b: 0,
    ndim_a: 0,
    ndim_b: 0,
};

thread_local! {
    /// Constant-initialised and without a destructor: never allocated on first use, never torn
    /// down while the thread exits.
    pub(crate) static LAST_ERROR: RefCell<LastError> = const {
        RefCell::new(LastError {
            status: BC_OK,
            info: EMPTY_INFO,
            shapes: [[0; BC_MAX_NDIM]; 2],
            len: 0,
            text: [0; MESSAGE_CAP],
        })
    };
}

// Without a destructor, a thread-local is never torn down: using it in a thread-exit destructor
// is as safe as anywhere (the reason every thread-local of the library is plain data).
const _: () = assert!(!std::mem::needs_drop::<RefCell<LastError>>());

/// Runs `f` on this thread's record. The record is always there (see [`LAST_ERROR`]);
/// `fallback` only answers a re-entrant use, which the library never makes.
pub(crate) fn with_last_error<R>(fallback: R, f: impl FnOnce(&mut LastError) -> R) -> R {
    LAST_ERROR
        .try_with(|slot| slot.try_borrow_mut().ok().map(|mut last| f(&mut last)))
        .ok()
        .flatten()
        .unwrap_or(fallback)
}

fn record(e: FfiError) -> i32 {
    let status = e.status();
    with_last_error((), |last| {
        last.status = status;
        last.info = describe(status, e.engine(), &mut last.shapes);
        last.set_message(format_args!("{e}"));
    });
    status
}

/// Records a caught panic: `BC_ERR_INTERNAL`, with the panic's text when it has one.
fn record_panic(payload: &(dyn Any + Send)) -> i32 {
    let text = payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("panic with a non-string payload");
    with_last_error((), |last| {
        last.status = BC_ERR_INTERNAL;
        last.info = describe(BC_ERR_INTERNAL, None, &mut last.shapes);
        last.set_message(format_args!("internal error: {text}"));
    });
    BC_ERR_INTERNAL
}

thread_local! {
    /// Depth of boundary calls on this thread: panics inside them are reported as statuses, so
    /// the panic hook stays quiet for them.
    static INSIDE: Cell<u32> = const { Cell::new(0) };
}

type PanicHook = Box<dyn Fn(&std::panic::PanicHookInfo<'_>) + Sync + Send + 'static>;

/// Installs, once, a panic hook that stays silent for panics caught by the boundary (they become
/// a status and a message) and hands every other panic to the hook that was there before. The
/// new hook captures nothing (the previous one waits in a static), so installing it allocates
/// nothing.
#[inline]
fn quiet_panics_inside_boundary() {
    if !INSTALLED.load(Ordering::Acquire) {
        install_quiet_hook();
    }
}

/// Whether [`install_quiet_hook`] has run.
static INSTALLED: AtomicBool = AtomicBool::new(false);

#[cold]
fn install_quiet_hook() {
    static PREVIOUS: OnceLock<PanicHook> = OnceLock::new();
    static INSTALLING: Mutex<()> = Mutex::new(());
    let _guard = INSTALLING.lock().unwrap_or_else(|e| e.into_inner());
    if INSTALLED.load(Ordering::Relaxed) {
        return;
    }
    let _ = PREVIOUS.set(std::panic::take_hook());
    std::panic::set_hook(Box::new(|info| {
        if INSIDE.with(|d| d.get()) == 0 {
            if let Some(previous) = PREVIOUS.get() {
                previous(info);
            }
        }
    }));
    INSTALLED.store(true, Ordering::Release);
}

/// Runs `body` under `catch_unwind`, marking the thread as inside the boundary.
#[inline(always)]
fn guarded<T>(body: impl FnOnce() -> T) -> std::thread::Result<T> {
    quiet_panics_inside_boundary();
    INSIDE.with(|d| d.set(d.get() + 1));
    let result = catch_unwind(AssertUnwindSafe(body));
    INSIDE.with(|d| d.set(d.get() - 1));
    result
}

/// Runs an export's body: the status it returns is `BC_OK` or the failure's code.
///
/// Always inlined, so that each export is one function whatever the compiler's partitioning
/// of the crate: left to it, a change elsewhere can turn the exports' bodies into out-of-line
/// copies of this function (240 KB more, and a call more per export).
#[inline(always)]
pub(crate) fn call(body: impl FnOnce() -> Result<(), FfiError>) -> i32 {
    match guarded(body) {
        Ok(Ok(())) => BC_OK,
        Ok(Err(e)) => record(e),
        Err(payload) => record_panic(&*payload),
    }
}

/// For exports that cannot report a status: the body's value, or `fallback` on a panic.
#[inline(always)]
pub(crate) fn call_or<T>(fallback: T, body: impl FnOnce() -> T) -> T {
    guarded(body).unwrap_or(fallback)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_messages_are_cut_at_a_character_boundary() {
        with_last_error((), |last| {
            let long = "é".repeat(MESSAGE_CAP); // 2 bytes each
            last.set_message(format_args!("x{long}"));
            assert_eq!(last.message().len(), MESSAGE_CAP - 1);
            assert!(std::str::from_utf8(last.message()).is_ok());
            last.clear();
        });
    }
}
