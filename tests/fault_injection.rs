//! Fault injection: under memory exhaustion every call either succeeds or
//! returns `BC_ERR_ALLOC`, changes nothing the caller owns when it fails, leaks nothing, and the
//! library keeps working afterwards.
//!
//! This binary's global allocator refuses, when armed on the current thread, the k-th allocation
//! (counted per thread: the pool's workers, which never allocate, are not armed). Every scenario
//! of [`scenarios`] (at least one per exported function, checked against `include/broadcast.h`)
//! is run for k = 1, 2, ... until the call makes fewer than k allocations. For each k:
//! - the status is the scenario's own or `BC_ERR_ALLOC` (then with kind `BC_ERROR_KIND_ALLOC`
//!   and an out-of-memory message; another failure keeps its exact message);
//! - on failure, out-handles are NULL and every input tensor, caller buffer and the count of
//!   release callbacks run are as before; on success, everything equals an unarmed run;
//! - after freeing what the call made, the bytes this thread holds and the live handles are
//!   back to their baseline (registry chunks, which are never freed, are accounted for; the
//!   buffer cache is off);
//! - the same call, unarmed, then succeeds (gives the scenario's own status and results).
//!
//! The scenarios run in a fresh thread of a process that has not used the library before, so
//! one-time work (per process and per thread) is swept where a scenario first reaches it.
//!
//! To add a scenario (say for a new export), add one entry to [`scenarios`]: a name, a status,
//! and a setup that makes the inputs with the `Ctx` helpers and returns the call.
use broadcast::ffi::*;
use ops_table::{NAMED_OPS, NAMED_UNARY};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::ffi::{c_char, c_void};
use std::ptr;
use std::sync::atomic::{AtomicUsize, Ordering};
use testkit::header;
use testkit::ops_table;

// ---------------------------------------------------------------------------------------------
// The allocator

struct Injector;

thread_local! {
    /// The k of the armed call (0: not armed).
    static FAIL_AT: Cell<u64> = const { Cell::new(0) };
    /// Allocations requested while armed (and their bytes), and how many were refused.
    static SEEN: Cell<u64> = const { Cell::new(0) };
    static SEEN_BYTES: Cell<u64> = const { Cell::new(0) };
    static REFUSED: Cell<u64> = const { Cell::new(0) };
    /// Bytes allocated minus bytes freed on this thread, armed or not.
    static NET: Cell<i64> = const { Cell::new(0) };
}

/// Whether to refuse the allocation of `bytes` being requested now.
fn refuse(bytes: usize) -> bool {
    let k = FAIL_AT.get();
    if k == 0 {
        return false;
    }
    let n = SEEN.get() + 1;
    SEEN.set(n);
    SEEN_BYTES.set(SEEN_BYTES.get() + bytes as u64);
    if n == k {
        REFUSED.set(REFUSED.get() + 1);
        return true;
    }
    false
}

fn count(bytes: i64) {
    NET.set(NET.get() + bytes);
}

// SAFETY: every request is forwarded to System unchanged, or refused with NULL (which the
// GlobalAlloc contract allows); the counters are plain thread-locals without destructors.
unsafe impl GlobalAlloc for Injector {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if refuse(layout.size()) {
            return ptr::null_mut();
        }
        // SAFETY: forwarded.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            count(layout.size() as i64);
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if refuse(layout.size()) {
            return ptr::null_mut();
        }
        // SAFETY: forwarded.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            count(layout.size() as i64);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        count(-(layout.size() as i64));
        // SAFETY: forwarded.
        unsafe { System.dealloc(p, layout) }
    }
    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if refuse(new_size) {
            return ptr::null_mut();
        }
        // SAFETY: forwarded.
        let q = unsafe { System.realloc(p, layout, new_size) };
        if !q.is_null() {
            count(new_size as i64 - layout.size() as i64);
        }
        q
    }
}

#[global_allocator]
static ALLOCATOR: Injector = Injector;

/// Runs `f` with the k-th allocation of this thread refused; returns its value and how many
/// allocations it asked for and had refused.
fn armed<R>(k: u64, f: impl FnOnce() -> R) -> (R, u64, u64) {
    SEEN.set(0);
    SEEN_BYTES.set(0);
    REFUSED.set(0);
    FAIL_AT.set(k);
    let r = f();
    FAIL_AT.set(0);
    (r, SEEN.get(), REFUSED.get())
}

// ---------------------------------------------------------------------------------------------
// Scenarios

const F32: i32 = BC_DTYPE_FLOAT32;
const F64: i32 = BC_DTYPE_FLOAT64;
const I32: i32 = BC_DTYPE_INT32;
const I64: i32 = BC_DTYPE_INT64;
const I16_T: i32 = BC_DTYPE_INT16;
const BOOL: i32 = BC_DTYPE_BOOL;
/// Shapes of 7 dimensions: past the 5 kept inline, so shapes, strides and plans go to the heap.
const A7: [i64; 7] = [2, 1, 3, 1, 2, 1, 2];
const B7: [i64; 7] = [1, 2, 1, 3, 1, 2, 1];
const C7: [i64; 7] = [2, 2, 3, 3, 2, 2, 2];
const SENTINEL: *mut bc_tensor = 0x5a5a as *mut bc_tensor;

/// Release callbacks run so far (wrapped memory handed back).
static RELEASES: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn on_release(_: *mut c_void) {
    RELEASES.fetch_add(1, Ordering::SeqCst);
}

/// Warnings delivered to [`on_warning`].
static WARNINGS: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn on_warning(_: *mut c_void, _: *const c_char) {
    WARNINGS.fetch_add(1, Ordering::SeqCst);
}

type Call = Box<dyn FnMut(&mut Ctx) -> i32>;

struct Scenario {
    /// The exported function the call exercises.
    name: &'static str,
    what: &'static str,
    /// Its status without fault injection.
    expect: i32,
    setup: Box<dyn Fn(&mut Ctx) -> Call>,
}

fn sc(
    name: &'static str,
    what: &'static str,
    expect: i32,
    setup: impl Fn(&mut Ctx) -> Call + 'static,
) -> Scenario {
    Scenario {
        name,
        what,
        expect,
        setup: Box::new(setup),
    }
}

/// One run's inputs: tensors (freed afterwards), out-handle slots, caller memory, and settings
/// to put back.
struct Ctx {
    /// Release callbacks run before this run began.
    releases: usize,
    inputs: Vec<*mut bc_tensor>,
    outs: [*mut bc_tensor; 3],
    mem: Vec<Vec<u8>>,
    restore: Vec<fn()>,
    /// Run when the run ends, after its outputs are freed (a DLPack struct the library did not
    /// take over goes back to its producer).
    finally: Vec<Box<dyn FnOnce()>>,
}

impl Ctx {
    fn new() -> Ctx {
        Ctx {
            releases: RELEASES.load(Ordering::SeqCst),
            inputs: Vec::new(),
            outs: [SENTINEL; 3],
            mem: Vec::new(),
            restore: Vec::new(),
            finally: Vec::new(),
        }
    }

    fn keep(&mut self, st: i32, t: *mut bc_tensor, what: &str) -> *mut bc_tensor {
        assert_eq!(st, BC_OK, "setup: {what}: {}", message());
        self.inputs.push(t);
        t
    }

    /// A row-major tensor of `dtype` holding (i % 11) - 3 (converted).
    fn t(&mut self, dtype: i32, shape: &[i64]) -> *mut bc_tensor {
        let n: i64 = shape.iter().product();
        let v: Vec<f64> = (0..n).map(|i| (i % 11) as f64 - 3.0).collect();
        let (mut f, mut t) = (ptr::null_mut(), ptr::null_mut());
        // SAFETY: valid pointers and lengths.
        unsafe {
            let st = bc_tensor_from_data(
                F64,
                shape.as_ptr(),
                shape.len(),
                v.as_ptr().cast(),
                n as usize * 8,
                &mut f,
            );
            assert_eq!(st, BC_OK, "setup: from_data: {}", message());
            let st = bc_tensor_to_dtype(f, dtype, &mut t);
            bc_tensor_free(f);
            self.keep(st, t, "to_dtype")
        }
    }

    /// A view of `t` with its dimensions reversed (not contiguous).
    fn reversed(&mut self, t: *mut bc_tensor) -> *mut bc_tensor {
        let mut nd = 0usize;
        // SAFETY: valid pointers.
        let _ = unsafe { bc_tensor_ndim(t, &mut nd) };
        let dims: Vec<i64> = (0..nd as i64).rev().collect();
        let mut v = ptr::null_mut();
        // SAFETY: valid pointers.
        let st = unsafe { bc_tensor_permute(t, dims.as_ptr(), nd, &mut v) };
        self.keep(st, v, "permute")
    }

    fn strided(
        &mut self,
        t: *mut bc_tensor,
        shape: &[i64],
        strides: &[i64],
        offset: i64,
    ) -> *mut bc_tensor {
        let mut v = ptr::null_mut();
        // SAFETY: valid pointers.
        let st = unsafe {
            bc_tensor_as_strided(
                t,
                shape.as_ptr(),
                strides.as_ptr(),
                shape.len(),
                offset,
                &mut v,
            )
        };
        self.keep(st, v, "as_strided")
    }

    /// Caller memory of `n` bytes (filled with a pattern), alive until the run ends.
    fn mem(&mut self, n: usize) -> *mut u8 {
        self.mem.push((0..n).map(|i| (i * 7 % 251) as u8).collect());
        self.mem.last_mut().unwrap().as_mut_ptr()
    }

    /// The `*out_ndim` of `bc_shape_broadcast*`, already holding `ndim`: those functions write
    /// it as soon as the shapes are read, whatever happens next (their documented contract), so
    /// a failure later leaves it as the caller will find it anyway.
    fn ndim_out(&mut self, ndim: usize) -> *mut u8 {
        self.mem.push(ndim.to_ne_bytes().to_vec());
        self.mem.last_mut().unwrap().as_mut_ptr()
    }

    /// Runs the call on the thread pool (threshold 1, 4 threads), and puts the settings back.
    fn on_pool(&mut self) {
        let _ = bc_set_parallel_threshold(1);
        let _ = bc_set_num_threads(4);
        self.restore.push(|| {
            let _ = bc_set_parallel_threshold(0);
            let _ = bc_set_num_threads(0);
        });
    }

    fn out(&mut self, i: usize) -> *mut *mut bc_tensor {
        &mut self.outs[i]
    }

    /// A failure recorded as the thread's last error (for the last-error readers).
    fn fail(&mut self) {
        let (a, b) = (self.t(F32, &[2, 3]), self.t(F32, &C7));
        let mut o = ptr::null_mut();
        // SAFETY: valid pointers.
        assert_eq!(unsafe { bc_add(a, b, &mut o) }, BC_ERR_SHAPE);
    }
}

/// An expression step without a constant.
fn ex(kind: i32, arg: i32) -> bc_expr_step {
    bc_expr_step {
        kind,
        arg,
        int_value: 0,
        float_value: 0.0,
    }
}

fn message() -> String {
    // SAFETY: (NULL, 0) sizes the message; then a buffer of that size + 1.
    unsafe {
        let n = bc_last_error_message(ptr::null_mut(), 0);
        let mut buf = vec![0u8; n + 1];
        bc_last_error_message(buf.as_mut_ptr().cast(), buf.len());
        String::from_utf8_lossy(&buf[..n]).into_owned()
    }
}

/// Status of a function that returns none: the last error it recorded, or `BC_OK`.
fn recorded(f: impl FnOnce()) -> i32 {
    bc_last_error_clear();
    f();
    bc_last_error_status()
}

macro_rules! call {
    (|$c:ident| $body:expr) => {
        Box::new(move |$c: &mut Ctx| {
            #[allow(unused_unsafe)]
            // SAFETY: every pointer comes from the setup and is valid for the call.
            unsafe {
                $body
            }
        })
    };
}

fn scenarios() -> Vec<Scenario> {
    let mut v = vec![
        // ---- errors and version
        sc("bc_status_str", "a static text", BC_OK, |_| {
            call!(|_c| {
                assert!(!bc_status_str(BC_ERR_SHAPE).is_null());
                BC_OK
            })
        }),
        sc(
            "bc_last_error_message",
            "copy the last message",
            BC_OK,
            |c| {
                c.fail();
                let buf = c.mem(64);
                call!(|_c| {
                    bc_last_error_message(buf.cast(), 64);
                    BC_OK
                })
            },
        ),
        sc("bc_last_error_status", "", BC_OK, |c| {
            c.fail();
            call!(|_c| if bc_last_error_status() == BC_ERR_SHAPE {
                BC_OK
            } else {
                -1
            })
        }),
        sc("bc_last_error_clear", "", BC_OK, |c| {
            c.fail();
            call!(|_c| recorded(|| bc_last_error_clear()))
        }),
        sc("bc_last_error_info", "", BC_OK, |c| {
            c.fail();
            let info = c.mem(std::mem::size_of::<bc_error_info>());
            call!(|_c| bc_last_error_info(info.cast()))
        }),
        sc("bc_last_error_shape", "7-d shape b", BC_OK, |c| {
            c.fail();
            let (buf, nd) = (c.mem(8 * 8), c.mem(8));
            call!(|_c| bc_last_error_shape(1, buf.cast(), 8, nd.cast()))
        }),
        sc("bc_version", "", BC_OK, |_| {
            call!(|_c| {
                assert!(!bc_version().is_null());
                BC_OK
            })
        }),
        sc("bc_dtype_size", "", BC_OK, |_| {
            call!(|_c| if bc_dtype_size(F64) == 8 { BC_OK } else { -1 })
        }),
        sc("bc_dtype_name", "", BC_OK, |_| {
            call!(|_c| {
                assert!(!bc_dtype_name(F64).is_null());
                BC_OK
            })
        }),
        // ---- settings
        sc("bc_set_broadcast_warning", "", BC_OK, |c| {
            c.restore.push(|| {
                let _ = bc_set_broadcast_warning(false);
            });
            call!(|_c| bc_set_broadcast_warning(true))
        }),
        sc("bc_get_broadcast_warning", "", BC_OK, |_| {
            call!(|_c| if bc_get_broadcast_warning() {
                -1
            } else {
                BC_OK
            })
        }),
        sc("bc_set_legacy_fallback", "", BC_OK, |c| {
            c.restore.push(|| {
                let _ = bc_set_legacy_fallback(false);
            });
            call!(|_c| bc_set_legacy_fallback(true))
        }),
        sc("bc_get_legacy_fallback", "", BC_OK, |_| {
            call!(|_c| if bc_get_legacy_fallback() { -1 } else { BC_OK })
        }),
        sc("bc_set_warning_handler", "", BC_OK, |c| {
            c.restore.push(|| {
                let _ = bc_set_warning_handler(None, ptr::null_mut());
            });
            call!(|_c| bc_set_warning_handler(Some(on_warning), ptr::null_mut()))
        }),
        sc("bc_set_num_threads", "", BC_OK, |c| {
            c.restore.push(|| {
                let _ = bc_set_num_threads(0);
            });
            call!(|_c| bc_set_num_threads(usize::MAX))
        }),
        sc("bc_get_num_threads", "", BC_OK, |_| {
            call!(|_c| if bc_get_num_threads() >= 1 { BC_OK } else { -1 })
        }),
        sc("bc_set_streaming", "", BC_OK, |c| {
            c.restore.push(|| {
                let _ = bc_set_streaming(BC_STREAMING_AUTO);
            });
            call!(|_c| bc_set_streaming(BC_STREAMING_NEVER))
        }),
        sc("bc_get_streaming", "", BC_OK, |_| {
            call!(|_c| if bc_get_streaming() == BC_STREAMING_AUTO {
                BC_OK
            } else {
                -1
            })
        }),
        sc("bc_set_parallel_threshold", "", BC_OK, |c| {
            c.restore.push(|| {
                let _ = bc_set_parallel_threshold(0);
            });
            call!(|_c| bc_set_parallel_threshold(7))
        }),
        // ---- shapes
        sc("bc_shape_broadcast", "two 7-d shapes", BC_OK, |c| {
            let (out, nd) = (c.mem(8 * 8), c.ndim_out(7));
            call!(|_c| bc_shape_broadcast(A7.as_ptr(), 7, B7.as_ptr(), 7, out.cast(), 8, nd.cast()))
        }),
        sc(
            "bc_shape_broadcast",
            "not broadcastable (the error holds both shapes)",
            BC_ERR_SHAPE,
            |c| {
                let (out, nd) = (c.mem(8 * 8), c.ndim_out(7));
                call!(|_c| bc_shape_broadcast(
                    [2i64, 3].as_ptr(),
                    2,
                    C7.as_ptr(),
                    7,
                    out.cast(),
                    8,
                    nd.cast()
                ))
            },
        ),
        sc("bc_shape_broadcast_n", "three 7-d shapes", BC_OK, |c| {
            let (out, nd) = (c.mem(8 * 8), c.ndim_out(7));
            call!(|_c| {
                let shapes = [A7.as_ptr(), B7.as_ptr(), C7.as_ptr()];
                bc_shape_broadcast_n(
                    shapes.as_ptr(),
                    [7usize; 3].as_ptr(),
                    3,
                    out.cast(),
                    8,
                    nd.cast(),
                )
            })
        }),
        sc(
            "bc_shape_broadcast_n",
            "a negative size where the common size is 1 (a message)",
            BC_ERR_INVALID_ARG,
            |c| {
                let (out, nd) = (c.mem(8 * 8), c.ndim_out(7));
                call!(|_c| {
                    let bad = [-12i64, 1];
                    let shapes = [A7.as_ptr(), bad.as_ptr()];
                    bc_shape_broadcast_n(
                        shapes.as_ptr(),
                        [7usize, 2].as_ptr(),
                        2,
                        out.cast(),
                        8,
                        nd.cast(),
                    )
                })
            },
        ),
        sc(
            "bc_shape_broadcast_n",
            "not broadcastable",
            BC_ERR_SHAPE,
            |c| {
                let (out, nd) = (c.mem(8 * 8), c.ndim_out(7));
                call!(|_c| {
                    let shapes = [C7.as_ptr(), [5i64].as_ptr()];
                    bc_shape_broadcast_n(
                        shapes.as_ptr(),
                        [7usize, 1].as_ptr(),
                        2,
                        out.cast(),
                        8,
                        nd.cast(),
                    )
                })
            },
        ),
        sc("bc_shape_is_broadcastable", "7-d: yes", BC_OK, |c| {
            let yes = c.mem(1);
            call!(|_c| bc_shape_is_broadcastable(A7.as_ptr(), 7, B7.as_ptr(), 7, yes.cast()))
        }),
        sc(
            "bc_shape_is_broadcastable",
            "7-d: no (never a \"no\" for lack of memory)",
            BC_OK,
            |c| {
                let yes = c.mem(1);
                call!(|_c| bc_shape_is_broadcastable(
                    [2i64, 3].as_ptr(),
                    2,
                    C7.as_ptr(),
                    7,
                    yes.cast()
                ))
            },
        ),
        // ---- creation
        sc("bc_tensor_empty", "7-d float32", BC_OK, |_| {
            call!(|c| bc_tensor_empty(F32, C7.as_ptr(), 7, c.out(0)))
        }),
        sc(
            "bc_tensor_empty",
            "unknown dtype (a formatted message)",
            BC_ERR_INVALID_ARG,
            |_| call!(|c| bc_tensor_empty(99, C7.as_ptr(), 7, c.out(0))),
        ),
        sc(
            "bc_tensor_zeros",
            "7-d, 160 KiB (an owned block)",
            BC_OK,
            |_| call!(|c| bc_tensor_zeros(F32, [2i64, 3, 4, 5, 6, 7, 8].as_ptr(), 7, c.out(0))),
        ),
        sc("bc_tensor_zeros", "6 KiB (a padded block)", BC_OK, |_| {
            call!(|c| bc_tensor_zeros(F64, [750i64].as_ptr(), 1, c.out(0)))
        }),
        sc("bc_tensor_ones", "7-d int32", BC_OK, |_| {
            call!(|c| bc_tensor_ones(I32, C7.as_ptr(), 7, c.out(0)))
        }),
        sc(
            "bc_tensor_full",
            "3 elements (inline storage)",
            BC_OK,
            |_| call!(|c| bc_tensor_full(F64, [3i64].as_ptr(), 1, 2.5, c.out(0))),
        ),
        sc("bc_tensor_from_data", "7-d", BC_OK, |c| {
            let data = c.mem(288 * 8);
            call!(|c| bc_tensor_from_data(F64, C7.as_ptr(), 7, data.cast(), 288 * 8, c.out(0)))
        }),
        sc(
            "bc_tensor_from_data",
            "a wrong byte count",
            BC_ERR_INVALID_ARG,
            |c| {
                let data = c.mem(16);
                call!(|c| bc_tensor_from_data(F64, C7.as_ptr(), 7, data.cast(), 16, c.out(0)))
            },
        ),
        sc(
            "bc_tensor_wrap",
            "7-d strided, with a release callback",
            BC_OK,
            |c| {
                let data = c.mem(288 * 4);
                call!(|c| {
                    let strides = [144i64, 72, 24, 8, 4, 2, 1];
                    bc_tensor_wrap(
                        F32,
                        data.cast(),
                        288 * 4,
                        C7.as_ptr(),
                        strides.as_ptr(),
                        7,
                        0,
                        Some(on_release),
                        ptr::null_mut(),
                        c.out(0),
                    )
                })
            },
        ),
        sc(
            "bc_tensor_wrap",
            "out of bounds, with a release callback",
            BC_ERR_INVALID_ARG,
            |c| {
                let data = c.mem(64);
                call!(|c| bc_tensor_wrap(
                    F32,
                    data.cast(),
                    64,
                    C7.as_ptr(),
                    ptr::null(),
                    7,
                    0,
                    Some(on_release),
                    ptr::null_mut(),
                    c.out(0)
                ))
            },
        ),
        // ---- lifetime
        sc("bc_tensor_free", "a tensor", BC_OK, |c| {
            let t = c.t(F32, &C7);
            call!(|_c| recorded(|| bc_tensor_free(t)))
        }),
        sc(
            "bc_tensor_free",
            "the last view of wrapped memory (its callback runs)",
            BC_OK,
            |c| {
                let data = c.mem(64);
                let mut t = ptr::null_mut();
                // SAFETY: `data` lives until the run ends.
                let st = unsafe {
                    bc_tensor_wrap(
                        F32,
                        data.cast(),
                        64,
                        [16i64].as_ptr(),
                        ptr::null(),
                        1,
                        0,
                        Some(on_release),
                        ptr::null_mut(),
                        &mut t,
                    )
                };
                let t = c.keep(st, t, "wrap");
                call!(|_c| recorded(|| bc_tensor_free(t)))
            },
        ),
        sc("bc_tensor_clone", "7-d reversed view", BC_OK, |c| {
            let t = c.t(F32, &C7);
            let r = c.reversed(t);
            call!(|c| bc_tensor_clone(r, c.out(0)))
        }),
        sc("bc_tensor_contiguous", "7-d reversed view", BC_OK, |c| {
            let t = c.t(F64, &C7);
            let r = c.reversed(t);
            call!(|c| bc_tensor_contiguous(r, c.out(0)))
        }),
        sc("bc_tensor_to_dtype", "7-d float32 to float16", BC_OK, |c| {
            let t = c.t(F32, &C7);
            let r = c.reversed(t);
            call!(|c| bc_tensor_to_dtype(r, BC_DTYPE_FLOAT16, c.out(0)))
        }),
        sc("bc_tensor_is_live", "", BC_OK, |c| {
            let t = c.t(F32, &C7);
            call!(|_c| if bc_tensor_is_live(t) { BC_OK } else { -1 })
        }),
        sc("bc_tensor_live_count", "", BC_OK, |_| {
            call!(|_c| if bc_tensor_live_count() < usize::MAX {
                BC_OK
            } else {
                -1
            })
        }),
        // ---- queries
        sc("bc_tensor_dtype", "", BC_OK, |c| {
            let (t, o) = (c.t(F32, &C7), c.mem(4));
            call!(|_c| bc_tensor_dtype(t, o.cast()))
        }),
        sc("bc_tensor_ndim", "", BC_OK, |c| {
            let (t, o) = (c.t(F32, &C7), c.mem(8));
            call!(|_c| bc_tensor_ndim(t, o.cast()))
        }),
        sc("bc_tensor_numel", "", BC_OK, |c| {
            let (t, o) = (c.t(F32, &C7), c.mem(8));
            call!(|_c| bc_tensor_numel(t, o.cast()))
        }),
        sc("bc_tensor_offset", "", BC_OK, |c| {
            let (t, o) = (c.t(F32, &C7), c.mem(8));
            call!(|_c| bc_tensor_offset(t, o.cast()))
        }),
        sc("bc_tensor_is_contiguous", "", BC_OK, |c| {
            let t = c.t(F32, &C7);
            let (r, o) = (c.reversed(t), c.mem(1));
            call!(|_c| bc_tensor_is_contiguous(r, o.cast()))
        }),
        sc("bc_tensor_shape", "7-d", BC_OK, |c| {
            let (t, o) = (c.t(F32, &C7), c.mem(8 * 8));
            call!(|_c| bc_tensor_shape(t, o.cast(), 8))
        }),
        sc(
            "bc_tensor_shape",
            "buffer too small",
            BC_ERR_BUFFER_TOO_SMALL,
            |c| {
                let (t, o) = (c.t(F32, &C7), c.mem(8 * 8));
                call!(|_c| bc_tensor_shape(t, o.cast(), 3))
            },
        ),
        sc("bc_tensor_strides", "7-d", BC_OK, |c| {
            let t = c.t(F32, &C7);
            let (r, o) = (c.reversed(t), c.mem(8 * 8));
            call!(|_c| bc_tensor_strides(r, o.cast(), 8))
        }),
        sc("bc_tensor_copy_to", "7-d reversed view", BC_OK, |c| {
            let t = c.t(F32, &C7);
            let (r, o) = (c.reversed(t), c.mem(288 * 4));
            call!(|_c| bc_tensor_copy_to(r, o.cast(), 288 * 4))
        }),
        // ---- views
        sc("bc_tensor_expand", "to 7-d", BC_OK, |c| {
            let t = c.t(F32, &[3, 1]);
            call!(|c| bc_tensor_expand(t, [2i64, 2, 3, 3, 2, -1, 2].as_ptr(), 7, c.out(0)))
        }),
        sc(
            "bc_tensor_expand",
            "a mismatch (the error holds both shapes)",
            BC_ERR_SHAPE,
            |c| {
                let t = c.t(F32, &C7);
                call!(|c| bc_tensor_expand(t, [2i64, 2, 3, 3, 2, 2, 5].as_ptr(), 7, c.out(0)))
            },
        ),
        sc("bc_tensor_broadcast_to", "to 7-d", BC_OK, |c| {
            let t = c.t(F32, &A7);
            call!(|c| bc_tensor_broadcast_to(t, C7.as_ptr(), 7, c.out(0)))
        }),
        sc("bc_tensor_expand_as", "to 7-d", BC_OK, |c| {
            let (t, o) = (c.t(F32, &B7), c.t(I32, &C7));
            call!(|c| bc_tensor_expand_as(t, o, c.out(0)))
        }),
        sc(
            "bc_tensor_broadcast_tensors",
            "three 7-d, in place in their array",
            BC_OK,
            |c| {
                let (a, b, d) = (c.t(F32, &A7), c.t(F64, &B7), c.t(I32, &[2]));
                call!(|c| {
                    c.outs = [a, b, d];
                    let arr = c.outs.as_mut_ptr();
                    bc_tensor_broadcast_tensors(arr as *const *const bc_tensor, 3, arr)
                })
            },
        ),
        sc(
            "bc_tensor_broadcast_tensors",
            "not broadcastable",
            BC_ERR_SHAPE,
            |c| {
                let (a, b) = (c.t(F32, &C7), c.t(F64, &[5]));
                call!(|c| {
                    let ins = [a as *const bc_tensor, b];
                    bc_tensor_broadcast_tensors(ins.as_ptr(), 2, c.out(0))
                })
            },
        ),
        sc("bc_tensor_permute", "7-d", BC_OK, |c| {
            let t = c.t(F32, &C7);
            call!(|c| bc_tensor_permute(t, [6i64, 5, 4, 3, 2, 1, 0].as_ptr(), 7, c.out(0)))
        }),
        sc(
            "bc_tensor_permute",
            "a repeated dimension",
            BC_ERR_INVALID_ARG,
            |c| {
                let t = c.t(F32, &C7);
                call!(|c| bc_tensor_permute(t, [6i64, 5, 4, 3, 2, 1, 6].as_ptr(), 7, c.out(0)))
            },
        ),
        sc("bc_tensor_transpose", "7-d", BC_OK, |c| {
            let t = c.t(F32, &C7);
            call!(|c| bc_tensor_transpose(t, 0, -1, c.out(0)))
        }),
        sc("bc_tensor_slice", "7-d", BC_OK, |c| {
            let t = c.t(F32, &C7);
            call!(|c| bc_tensor_slice(t, 2, 0, 3, 2, c.out(0)))
        }),
        sc("bc_tensor_as_strided", "7-d", BC_OK, |c| {
            let t = c.t(F32, &C7);
            call!(|c| bc_tensor_as_strided(
                t,
                C7.as_ptr(),
                [144i64, 72, 24, 8, 4, 2, 1].as_ptr(),
                7,
                0,
                c.out(0)
            ))
        }),
        sc(
            "bc_tensor_as_strided",
            "out of bounds",
            BC_ERR_INVALID_ARG,
            |c| {
                let t = c.t(F32, &[4]);
                call!(|c| bc_tensor_as_strided(
                    t,
                    C7.as_ptr(),
                    [144i64, 72, 24, 8, 4, 2, 1].as_ptr(),
                    7,
                    0,
                    c.out(0)
                ))
            },
        ),
    ];
    v.extend(arithmetic());
    v.extend(unary());
    v.extend(views_and_interop());
    v.extend(reductions());
    v.extend(further_reductions());
    v.extend(ternary());
    v
}

/// The named forms of every unary operation of the table and the three `bc_unary*` forms, over
/// 7-d operands: integers converted for a floating function, and into `out` of a wider type
/// through a temporary.
fn unary() -> Vec<Scenario> {
    let mut v = Vec::new();
    for op in NAMED_UNARY {
        let dtype = if op.float { F32 } else { I32 };
        let (new, out) = (op.new, op.out);
        v.push(sc(op.exports[0], "7-d", BC_OK, move |c| {
            let x = c.t(dtype, &C7);
            call!(|c| new(x, c.out(0)))
        }));
        if let Some((name, inplace)) = op.inplace {
            v.push(sc(name, "7-d reversed view", BC_OK, move |c| {
                let x = c.t(dtype, &C7);
                let x = c.reversed(x);
                call!(|_c| inplace(x))
            }));
        }
        v.push(sc(
            op.exports[1],
            "7-d into its result type",
            BC_OK,
            move |c| {
                let x = c.t(dtype, &C7);
                let o = c.t(result_type(new, x), &C7);
                call!(|_c| out(x, o))
            },
        ));
    }
    v.extend([
        sc(
            "bc_unary",
            "7-d int32 sqrt (converted to float32)",
            BC_OK,
            |c| {
                let x = c.t(I32, &C7);
                call!(|c| bc_unary(BC_UNARY_SQRT, x, c.out(0)))
            },
        ),
        sc("bc_unary", "bool negation (refused)", BC_ERR_DTYPE, |c| {
            let x = c.t(BC_DTYPE_BOOL, &C7);
            call!(|c| bc_unary(BC_UNARY_NEG, x, c.out(0)))
        }),
        sc(
            "bc_unary_inplace",
            "7-d float16 exp (in float32)",
            BC_OK,
            |c| {
                let x = c.t(BC_DTYPE_FLOAT16, &C7);
                call!(|_c| bc_unary_inplace(BC_UNARY_EXP, x))
            },
        ),
        sc(
            "bc_unary_inplace",
            "int32 sin (the cast back refused)",
            BC_ERR_DTYPE,
            |c| {
                let x = c.t(I32, &C7);
                call!(|_c| bc_unary_inplace(BC_UNARY_SIN, x))
            },
        ),
        sc(
            "bc_unary_out",
            "7-d float32 sqrt into float64 (a temporary)",
            BC_OK,
            |c| {
                let (x, o) = (c.t(F32, &C7), c.t(F64, &C7));
                call!(|_c| bc_unary_out(BC_UNARY_SQRT, x, o))
            },
        ),
        sc(
            "bc_unary_out",
            "an out of another shape (the error holds both)",
            BC_ERR_SHAPE,
            |c| {
                let (x, o) = (c.t(F32, &C7), c.t(F32, &A7));
                call!(|_c| bc_unary_out(BC_UNARY_ABS, x, o))
            },
        ),
    ]);
    v
}

/// The type `new` gives for `x` (found by an unarmed call during setup).
fn result_type(
    new: unsafe extern "C" fn(*const bc_tensor, *mut *mut bc_tensor) -> i32,
    x: *mut bc_tensor,
) -> i32 {
    let (mut r, mut dtype) = (ptr::null_mut(), -1);
    // SAFETY: valid pointers.
    unsafe {
        assert_eq!(new(x, &mut r), BC_OK, "setup: {}", message());
        assert_eq!(bc_tensor_dtype(r, &mut dtype), BC_OK);
    }
    bc_tensor_free(r);
    dtype
}

/// The named forms of every operation of the table and the three `bc_binary*` forms, each over
/// 7-d operands of two types, plus the paths that allocate for other reasons: refusals carrying
/// shapes, overlap checks that list addresses, the legacy fallback, warnings, the thread pool.
fn arithmetic() -> Vec<Scenario> {
    // The three forms of an operation, with a narrow and a wide type of one kind (float32 and
    // float64 unless given): mixed types, and out= through a temporary.
    // The three named forms of every operation of the table, each with a narrow and a wide type
    // of a kind it takes (floating when it has a floating kernel, else integer).
    let mut v = Vec::new();
    for op in NAMED_OPS {
        let (lo, hi) = if op.float { (F32, F64) } else { (I32, I64) };
        let (new, inplace, out) = (op.new, op.inplace, op.out);
        v.push(sc(
            op.exports[0],
            "7-d narrow type with 7-d wide type",
            BC_OK,
            move |c| {
                let (a, b) = (c.t(lo, &A7), c.t(hi, &B7));
                call!(|c| new(a, b, c.out(0)))
            },
        ));
        v.push(sc(
            op.exports[1],
            "7-d wide target, narrow operand",
            BC_OK,
            move |c| {
                let (a, b) = (c.t(hi, &C7), c.t(lo, &B7));
                call!(|_c| inplace(a, b))
            },
        ));
        v.push(sc(
            op.exports[2],
            "7-d into the wide type from the narrow one (a temporary)",
            BC_OK,
            move |c| {
                let (a, b, o) = (c.t(lo, &A7), c.t(lo, &B7), c.t(hi, &C7));
                call!(|_c| out(a, b, o))
            },
        ));
    }
    v.extend([
        sc(
            "bc_binary",
            "7-d int32 / float32 (true division)",
            BC_OK,
            |c| {
                let (a, b) = (c.t(I32, &A7), c.t(F32, &B7));
                call!(|c| bc_binary(BC_OP_DIV, a, b, c.out(0)))
            },
        ),
        sc("bc_binary", "7-d float16 times a 0-d float64 (read in float32)", BC_OK, |c| {
            let (a, b) = (c.t(BC_DTYPE_FLOAT16, &C7), c.t(F64, &[]));
            call!(|c| bc_binary(BC_OP_MUL, a, b, c.out(0)))
        }),
        sc("bc_binary", "7-d bfloat16 floor-divided by a 0-d float64 (in float32)", BC_OK, |c| {
            let (a, b) = (c.t(BC_DTYPE_BFLOAT16, &C7), c.t(F64, &[]));
            call!(|c| bc_binary(BC_OP_FLOOR_DIVIDE, a, b, c.out(0)))
        }),
        sc(
            "bc_binary",
            "an int32 remainder by a zero divisor (refused before writing)",
            BC_ERR_VALUE,
            |c| {
                let (a, b) = (c.t(I32, &C7), c.t(I32, &B7));
                call!(|c| bc_binary(BC_OP_REMAINDER, a, b, c.out(0)))
            },
        ),
        sc(
            "bc_binary",
            "bitwise and of floats (no kernel for the type)",
            BC_ERR_DTYPE,
            |c| {
                let (a, b) = (c.t(F32, &C7), c.t(F32, &B7));
                call!(|c| bc_binary(BC_OP_BITWISE_AND, a, b, c.out(0)))
            },
        ),
        sc(
            "bc_where",
            "7-d bool condition, float32 and a 0-d float64",
            BC_OK,
            |c| {
                let (cond, a, b) = (c.t(BOOL, &A7), c.t(F32, &B7), c.t(F64, &[]));
                call!(|c| bc_where(cond, a, b, c.out(0)))
            },
        ),
        sc(
            "bc_where",
            "a uint8 condition (its warning, to a handler, once per process)",
            BC_OK,
            |c| {
                let _ = bc_set_warning_handler(Some(on_warning), ptr::null_mut());
                c.restore.push(|| {
                    let _ = bc_set_warning_handler(None, ptr::null_mut());
                });
                let (cond, a, b) = (c.t(BC_DTYPE_UINT8, &A7), c.t(F32, &B7), c.t(F32, &C7));
                call!(|c| bc_where(cond, a, b, c.out(0)))
            },
        ),
        sc(
            "bc_where",
            "a float condition (refused)",
            BC_ERR_DTYPE,
            |c| {
                let (cond, a) = (c.t(F32, &A7), c.t(F32, &B7));
                call!(|c| bc_where(cond, a, a, c.out(0)))
            },
        ),
        sc(
            "bc_expr_eval",
            "7-d (a * b + c) * 0.5 in one pass, a float16 operand and a float64 constant",
            BC_OK,
            |c| {
                let (a, b, d) = (c.t(F32, &C7), c.t(BC_DTYPE_FLOAT16, &B7), c.t(F32, &A7));
                let steps = [
                    ex(BC_EXPR_INPUT, 0),
                    ex(BC_EXPR_INPUT, 1),
                    ex(BC_EXPR_OP, BC_OP_MUL),
                    ex(BC_EXPR_INPUT, 2),
                    ex(BC_EXPR_OP, BC_OP_ADD),
                    bc_expr_step {
                        kind: BC_EXPR_CONST,
                        arg: F64,
                        int_value: 0,
                        float_value: 0.5,
                    },
                    ex(BC_EXPR_OP, BC_OP_MUL),
                ];
                let ins = [a as *const bc_tensor, b, d];
                call!(|c| bc_expr_eval(steps.as_ptr(), steps.len(), ins.as_ptr(), 3, c.out(0)))
            },
        ),
        sc(
            "bc_expr_eval",
            "20 steps, an operation broadcast further (computed first) and an int32 remainder (call by call)",
            BC_OK,
            |c| {
                let (a, b, d) = (c.t(I32, &A7), c.t(I32, &[3, 1, 2, 1]), c.t(I32, &C7));
                let mut steps = vec![ex(BC_EXPR_INPUT, 2), ex(BC_EXPR_INPUT, 0), ex(BC_EXPR_INPUT, 1)];
                steps.extend([ex(BC_EXPR_OP, BC_OP_MUL), ex(BC_EXPR_OP, BC_OP_SUB)]);
                for _ in 0..5 {
                    steps.extend([ex(BC_EXPR_INPUT, 0), ex(BC_EXPR_OP, BC_OP_ADD)]);
                }
                steps.extend([ex(BC_EXPR_INPUT, 2), ex(BC_EXPR_OP, BC_OP_MAXIMUM)]);
                steps.push(bc_expr_step {
                    kind: BC_EXPR_CONST,
                    arg: I32,
                    int_value: 7,
                    float_value: 0.0,
                });
                steps.push(ex(BC_EXPR_OP, BC_OP_REMAINDER));
                let ins = [a as *const bc_tensor, b, d];
                call!(|c| bc_expr_eval(steps.as_ptr(), steps.len(), ins.as_ptr(), 3, c.out(0)))
            },
        ),
        sc(
            "bc_expr_eval",
            "shapes that do not broadcast at the second operation",
            BC_ERR_SHAPE,
            |c| {
                let (a, b) = (c.t(F32, &C7), c.t(F32, &[2, 3]));
                let steps = [
                    ex(BC_EXPR_INPUT, 0),
                    ex(BC_EXPR_INPUT, 0),
                    ex(BC_EXPR_OP, BC_OP_ADD),
                    ex(BC_EXPR_INPUT, 1),
                    ex(BC_EXPR_OP, BC_OP_ADD),
                ];
                let ins = [a as *const bc_tensor, b];
                call!(|c| bc_expr_eval(steps.as_ptr(), steps.len(), ins.as_ptr(), 2, c.out(0)))
            },
        ),
        sc(
            "bc_expr_reduce",
            "7-d ((a - b)**2).mean over dims 0 and -1, keepdim, in one pass on the thread pool",
            BC_OK,
            |c| {
                c.on_pool();
                let (a, b) = (c.t(F32, &C7), c.t(F32, &B7));
                let steps = [
                    ex(BC_EXPR_INPUT, 0),
                    ex(BC_EXPR_INPUT, 1),
                    ex(BC_EXPR_OP, BC_OP_SUB),
                    ex(BC_EXPR_UNARY, BC_UNARY_SQUARE),
                ];
                let ins = [a as *const bc_tensor, b];
                let dims = [0i64, -1];
                call!(|c| bc_expr_reduce(
                    steps.as_ptr(),
                    steps.len(),
                    ins.as_ptr(),
                    2,
                    BC_REDUCE_MEAN,
                    dims.as_ptr(),
                    2,
                    true,
                    c.out(0)
                ))
            },
        ),
        sc(
            "bc_expr_reduce",
            "a sum of an expression that does not broadcast (evaluated call by call)",
            BC_ERR_SHAPE,
            |c| {
                let (a, b) = (c.t(F32, &C7), c.t(F32, &[2, 3]));
                let steps = [
                    ex(BC_EXPR_INPUT, 0),
                    ex(BC_EXPR_INPUT, 1),
                    ex(BC_EXPR_OP, BC_OP_ADD),
                ];
                let ins = [a as *const bc_tensor, b];
                call!(|c| bc_expr_reduce(
                    steps.as_ptr(),
                    steps.len(),
                    ins.as_ptr(),
                    2,
                    BC_REDUCE_SUM,
                    std::ptr::null(),
                    0,
                    false,
                    c.out(0)
                ))
            },
        ),
        sc(
            "bc_expr_eval_out",
            "7-d where(a < b, a * b, 1) into float64 on the thread pool (threshold 1, 4 threads)",
            BC_OK,
            |c| {
                c.on_pool();
                let (a, b) = (c.t(F64, &C7), c.t(F64, &B7));
                let o = c.t(F64, &C7);
                let steps = [
                    ex(BC_EXPR_INPUT, 0),
                    ex(BC_EXPR_INPUT, 1),
                    ex(BC_EXPR_OP, BC_OP_LT),
                    ex(BC_EXPR_INPUT, 0),
                    ex(BC_EXPR_INPUT, 1),
                    ex(BC_EXPR_OP, BC_OP_MUL),
                    bc_expr_step {
                        kind: BC_EXPR_CONST,
                        arg: F64,
                        int_value: 0,
                        float_value: 1.0,
                    },
                    bc_expr_step {
                        kind: BC_EXPR_WHERE,
                        arg: 0,
                        int_value: 0,
                        float_value: 0.0,
                    },
                ];
                let ins = [a as *const bc_tensor, b];
                call!(|_c| bc_expr_eval_out(steps.as_ptr(), steps.len(), ins.as_ptr(), 2, o))
            },
        ),
        sc(
            "bc_expr_eval_out",
            "x = x * a + x in place",
            BC_OK,
            |c| {
                let (x, a) = (c.t(F32, &C7), c.t(F32, &B7));
                let steps = [
                    ex(BC_EXPR_INPUT, 0),
                    ex(BC_EXPR_INPUT, 1),
                    ex(BC_EXPR_OP, BC_OP_MUL),
                    ex(BC_EXPR_INPUT, 0),
                    ex(BC_EXPR_OP, BC_OP_ADD),
                ];
                let ins = [x as *const bc_tensor, a];
                call!(|_c| bc_expr_eval_out(steps.as_ptr(), steps.len(), ins.as_ptr(), 2, x))
            },
        ),
        sc(
            "bc_expr_eval",
            "7-d clamp(a * 1.5, lo, hi) in one pass on the thread pool (threshold 1, 4 threads)",
            BC_OK,
            |c| {
                c.on_pool();
                let (a, lo, hi) = (c.t(F32, &C7), c.t(F32, &A7), c.t(F32, &B7));
                let steps = [
                    ex(BC_EXPR_INPUT, 0),
                    bc_expr_step {
                        kind: BC_EXPR_CONST,
                        arg: F32,
                        int_value: 0,
                        float_value: 1.5,
                    },
                    ex(BC_EXPR_OP, BC_OP_MUL),
                    ex(BC_EXPR_INPUT, 1),
                    ex(BC_EXPR_INPUT, 2),
                    ex(BC_EXPR_TERNARY, BC_TERNARY_CLAMP),
                ];
                let ins = [a as *const bc_tensor, lo, hi];
                call!(|c| bc_expr_eval(steps.as_ptr(), steps.len(), ins.as_ptr(), 3, c.out(0)))
            },
        ),
        sc(
            "bc_expr_eval_out",
            "7-d addcmul(a, b, a * b, 2) into float64 (call by call: out of another type)",
            BC_OK,
            |c| {
                let (a, b, o) = (c.t(F32, &A7), c.t(BC_DTYPE_FLOAT16, &B7), c.t(F64, &C7));
                let steps = [
                    ex(BC_EXPR_INPUT, 0),
                    ex(BC_EXPR_INPUT, 1),
                    ex(BC_EXPR_INPUT, 0),
                    ex(BC_EXPR_INPUT, 1),
                    ex(BC_EXPR_OP, BC_OP_MUL),
                    bc_expr_step {
                        int_value: 2,
                        ..ex(BC_EXPR_TERNARY, BC_TERNARY_ADDCMUL)
                    },
                ];
                let ins = [a as *const bc_tensor, b];
                call!(|_c| bc_expr_eval_out(steps.as_ptr(), steps.len(), ins.as_ptr(), 2, o))
            },
        ),
        sc(
            "bc_where_out",
            "7-d into float64 (on the thread pool: threshold 1, 4 threads)",
            BC_OK,
            |c| {
                c.on_pool();
                let (cond, a, b) = (c.t(BOOL, &A7), c.t(F64, &B7), c.t(F32, &C7));
                let o = c.t(F64, &C7);
                call!(|_c| bc_where_out(cond, a, b, o))
            },
        ),
        sc(
            "bc_where_out",
            "out of another type than the result (refused)",
            BC_ERR_DTYPE,
            |c| {
                let (cond, a, b, o) = (c.t(BOOL, &A7), c.t(F64, &B7), c.t(F32, &C7), c.t(F32, &C7));
                call!(|_c| bc_where_out(cond, a, b, o))
            },
        ),
        sc(
            "bc_binary",
            "not broadcastable (the error holds both shapes)",
            BC_ERR_SHAPE,
            |c| {
                let (a, b) = (c.t(F32, &C7), c.t(F32, &[5]));
                call!(|c| bc_binary(BC_OP_ADD, a, b, c.out(0)))
            },
        ),
        sc(
            "bc_binary",
            "an unknown op (a formatted message)",
            BC_ERR_INVALID_ARG,
            |c| {
                let (a, b) = (c.t(F32, &C7), c.t(F32, &[2]));
                call!(|c| bc_binary(77, a, b, c.out(0)))
            },
        ),
        sc(
            "bc_binary",
            "legacy fallback, a reversed operand, a warning to a handler",
            BC_OK,
            |c| {
                let _ = bc_set_legacy_fallback(true);
                let _ = bc_set_warning_handler(Some(on_warning), ptr::null_mut());
                c.restore.push(|| {
                    let _ = bc_set_legacy_fallback(false);
                    let _ = bc_set_warning_handler(None, ptr::null_mut());
                });
                let a = c.t(F32, &[2, 3, 2, 1, 2, 1, 3]);
                let b = c.t(F32, &[3, 1, 2, 2, 3, 1, 2]);
                let rb = c.reversed(b);
                call!(|c| bc_binary(BC_OP_MUL, a, rb, c.out(0)))
            },
        ),
        sc(
            "bc_binary",
            "the broadcast warning, to standard error",
            BC_OK,
            |c| {
                let _ = bc_set_broadcast_warning(true);
                c.restore.push(|| {
                    let _ = bc_set_broadcast_warning(false);
                });
                let (a, b) = (c.t(F32, &[1, 3]), c.t(F32, &[3, 1]));
                call!(|c| bc_binary(BC_OP_SUB, a, b, c.out(0)))
            },
        ),
        sc(
            "bc_binary",
            "on the thread pool (threshold 1, 4 threads)",
            BC_OK,
            |c| {
                c.on_pool();
                let (a, b) = (
                    c.t(F32, &[2, 3, 4, 5, 6, 7, 8]),
                    c.t(F64, &[3, 1, 5, 1, 7, 8]),
                );
                call!(|c| bc_binary(BC_OP_ADD, a, b, c.out(0)))
            },
        ),
        sc(
            "bc_binary_inplace",
            "the target overlaps itself (addresses listed)",
            BC_ERR_OVERLAP,
            |c| {
                let base = c.t(F32, &[10]);
                let t = c.strided(base, &[3, 3], &[2, 1], 0);
                let one = c.t(F32, &[]);
                call!(|_c| bc_binary_inplace(BC_OP_ADD, t, one))
            },
        ),
        sc(
            "bc_binary_inplace",
            "step-2 slices of one tensor (the issue's partial-overlap case, at 2^14 elements)",
            BC_OK,
            |c| {
                let base = c.t(F32, &[1 << 14]);
                let even = c.strided(base, &[1 << 13], &[2], 0);
                let odd = c.strided(base, &[1 << 13], &[2], 1);
                call!(|_c| bc_binary_inplace(BC_OP_ADD, even, odd))
            },
        ),
        sc(
            "bc_binary_inplace",
            "other does not expand to the target",
            BC_ERR_SHAPE,
            |c| {
                let (a, b) = (c.t(F32, &A7), c.t(F32, &C7));
                call!(|_c| bc_binary_inplace(BC_OP_ADD, a, b))
            },
        ),
        sc(
            "bc_binary_out",
            "an as_strided target [2^13-1, 2] strides [2, 3] (the issue's exact overlap check, smaller)",
            BC_OK,
            |c| {
                let base = c.t(F32, &[1 << 14]);
                let o = c.strided(base, &[(1 << 13) - 1, 2], &[2, 3], 0);
                let (a, one) = (c.t(F32, &[(1 << 13) - 1, 2]), c.t(F32, &[]));
                call!(|_c| bc_binary_out(BC_OP_ADD, a, one, o))
            },
        ),
        sc(
            "bc_binary_out",
            "out has the wrong shape (the error holds both)",
            BC_ERR_SHAPE,
            |c| {
                let (a, b, o) = (c.t(F32, &A7), c.t(F32, &B7), c.t(F32, &A7));
                call!(|_c| bc_binary_out(BC_OP_ADD, a, b, o))
            },
        ),
    ]);
    v.extend(planner());
    v.extend(with_numbers());
    v
}

/// Operations with a number, on a 7-d tensor (shapes and plans on the heap).
fn with_numbers() -> Vec<Scenario> {
    vec![
        sc("bc_scalar_bool", "", BC_OK, |_| {
            call!(|_c| if bc_scalar_bool(true).b { BC_OK } else { -1 })
        }),
        sc("bc_scalar_int", "", BC_OK, |_| {
            call!(|_c| if bc_scalar_int(-3).i == -3 { BC_OK } else { -1 })
        }),
        sc("bc_scalar_float", "", BC_OK, |_| {
            call!(|_c| if bc_scalar_float(0.5).f == 0.5 {
                BC_OK
            } else {
                -1
            })
        }),
        sc(
            "bc_binary_scalar",
            "int32 7-d tensor + 2.5 (float32)",
            BC_OK,
            |c| {
                let t = c.t(I32, &C7);
                call!(|c| bc_binary_scalar(BC_OP_ADD, t, bc_scalar_float(2.5), c.out(0)))
            },
        ),
        sc(
            "bc_binary_rscalar",
            "300 - a reversed 7-d uint8 tensor",
            BC_OK,
            |c| {
                let t = c.t(BC_DTYPE_UINT8, &C7);
                let r = c.reversed(t);
                call!(|c| bc_binary_rscalar(BC_OP_SUB, bc_scalar_int(300), r, c.out(0)))
            },
        ),
        sc(
            "bc_binary_scalar_inplace",
            "int32 7-d tensor *= 2.5 (refused: the error names both types)",
            BC_ERR_DTYPE,
            |c| {
                let t = c.t(I32, &C7);
                call!(|_c| bc_binary_scalar_inplace(BC_OP_MUL, t, bc_scalar_float(2.5)))
            },
        ),
        sc(
            "bc_binary_scalar",
            "int32 7-d tensor ** 3 (the exponent checked against int32)",
            BC_OK,
            |c| {
                let t = c.t(I32, &C7);
                call!(|c| bc_binary_scalar(BC_OP_POW, t, bc_scalar_int(3), c.out(0)))
            },
        ),
        sc(
            "bc_binary_rscalar",
            "1 ** a reversed 7-d tensor (filled with 1, no kernel)",
            BC_OK,
            |c| {
                let t = c.t(F32, &C7);
                let r = c.reversed(t);
                call!(|c| bc_binary_rscalar(BC_OP_POW, bc_scalar_int(1), r, c.out(0)))
            },
        ),
        sc(
            "bc_binary_scalar_inplace",
            "float64 7-d tensor **= 1 (copied, no kernel)",
            BC_OK,
            |c| {
                let t = c.t(F64, &C7);
                call!(|_c| bc_binary_scalar_inplace(BC_OP_POW, t, bc_scalar_float(1.0)))
            },
        ),
        sc(
            "bc_binary_scalar_inplace",
            "float32 7-d tensor **= 0 (filled with 1)",
            BC_OK,
            |c| {
                let t = c.t(F32, &C7);
                call!(|_c| bc_binary_scalar_inplace(BC_OP_POW, t, bc_scalar_int(0)))
            },
        ),
        sc(
            "bc_binary_scalar",
            "bfloat16 ** 1e39 (the number does not fit: error data)",
            BC_ERR_VALUE,
            |c| {
                let t = c.t(BC_DTYPE_BFLOAT16, &C7);
                call!(|c| bc_binary_scalar(BC_OP_POW, t, bc_scalar_float(1e39), c.out(0)))
            },
        ),
        sc(
            "bc_binary_rscalar",
            "fmod(2, t) (PyTorch's TypeError text)",
            BC_ERR_INVALID_ARG,
            |c| {
                let t = c.t(F32, &C7);
                call!(|c| bc_binary_rscalar(BC_OP_FMOD, bc_scalar_int(2), t, c.out(0)))
            },
        ),
        sc("bc_add_scalar", "", BC_OK, |c| {
            let t = c.t(F32, &C7);
            call!(|c| bc_add_scalar(t, bc_scalar_bool(true), c.out(0)))
        }),
        sc("bc_sub_scalar", "", BC_OK, |c| {
            let t = c.t(F64, &C7);
            call!(|c| bc_sub_scalar(t, bc_scalar_int(1), c.out(0)))
        }),
        sc(
            "bc_mul_scalar",
            "float16 (the number read in float32)",
            BC_OK,
            |c| {
                let t = c.t(BC_DTYPE_FLOAT16, &C7);
                call!(|c| bc_mul_scalar(t, bc_scalar_float(1.0 / 3.0), c.out(0)))
            },
        ),
        sc("bc_div_scalar", "int32 / 2 (float32)", BC_OK, |c| {
            let t = c.t(I32, &C7);
            call!(|c| bc_div_scalar(t, bc_scalar_int(2), c.out(0)))
        }),
        sc("bc_rsub_scalar", "", BC_OK, |c| {
            let t = c.t(F32, &C7);
            call!(|c| bc_rsub_scalar(bc_scalar_float(1.0), t, c.out(0)))
        }),
        sc("bc_rdiv_scalar", "", BC_OK, |c| {
            let t = c.t(F32, &C7);
            call!(|c| bc_rdiv_scalar(bc_scalar_int(6), t, c.out(0)))
        }),
        sc("bc_add_scalar_inplace", "", BC_OK, |c| {
            let t = c.t(F32, &C7);
            call!(|_c| bc_add_scalar_inplace(t, bc_scalar_int(1)))
        }),
        sc("bc_sub_scalar_inplace", "", BC_OK, |c| {
            let t = c.t(I32, &C7);
            call!(|_c| bc_sub_scalar_inplace(t, bc_scalar_int(1)))
        }),
        sc("bc_mul_scalar_inplace", "", BC_OK, |c| {
            let t = c.t(F64, &C7);
            call!(|_c| bc_mul_scalar_inplace(t, bc_scalar_float(0.5)))
        }),
        sc("bc_div_scalar_inplace", "", BC_OK, |c| {
            let t = c.t(F32, &C7);
            call!(|_c| bc_div_scalar_inplace(t, bc_scalar_int(4)))
        }),
    ]
}

/// The planner on geometry of seven dimensions (shapes, strides and plans on the heap).
fn planner() -> Vec<Scenario> {
    /// A 7-d geometry; `strides` NULL for row-major.
    fn geo(
        dtype: i32,
        shape: &'static [i64; 7],
        strides: Option<&'static [i64; 7]>,
    ) -> bc_geometry {
        bc_geometry {
            dtype,
            ndim: 7,
            shape: shape.as_ptr(),
            strides: strides.map_or(ptr::null(), |s| s.as_ptr()),
        }
    }
    /// C7 with its dimensions in reverse memory order.
    static C7_REVERSED: [i64; 7] = [1, 2, 4, 12, 36, 72, 144];
    /// A 7-d view whose elements overlap (the check lists their offsets).
    static OVERLAPPING: [i64; 7] = [1, 1, 1, 1, 1, 1, 1];
    vec![
        sc(
            "bc_plan_binary",
            "a reversed 7-d operand with a float64 one",
            BC_OK,
            |c| {
                let plan = c.mem(std::mem::size_of::<bc_plan>());
                call!(|_c| bc_plan_binary(
                    BC_OP_MUL,
                    &geo(F32, &C7, Some(&C7_REVERSED)),
                    &geo(F64, &B7, None),
                    plan.cast()
                ))
            },
        ),
        sc(
            "bc_plan_binary",
            "not broadcastable (the error holds both shapes)",
            BC_ERR_SHAPE,
            |c| {
                let plan = c.mem(std::mem::size_of::<bc_plan>());
                call!(|_c| bc_plan_binary(
                    BC_OP_ADD,
                    &geo(F32, &A7, None),
                    &geo(F32, &[3, 1, 1, 1, 1, 1, 1], None),
                    plan.cast()
                ))
            },
        ),
        sc(
            "bc_plan_binary_inplace",
            "a target whose elements overlap (their offsets listed)",
            BC_ERR_OVERLAP,
            |c| {
                let plan = c.mem(std::mem::size_of::<bc_plan>());
                call!(|_c| bc_plan_binary_inplace(
                    BC_OP_ADD,
                    &geo(F32, &C7, Some(&OVERLAPPING)),
                    &geo(F32, &B7, None),
                    plan.cast()
                ))
            },
        ),
        sc(
            "bc_plan_binary_inplace",
            "float64 target, int32 other",
            BC_OK,
            |c| {
                let plan = c.mem(std::mem::size_of::<bc_plan>());
                call!(|_c| bc_plan_binary_inplace(
                    BC_OP_ADD,
                    &geo(F64, &C7, None),
                    &geo(I32, &B7, None),
                    plan.cast()
                ))
            },
        ),
        sc(
            "bc_plan_binary_out",
            "out has the wrong shape (the error holds both)",
            BC_ERR_SHAPE,
            |c| {
                let plan = c.mem(std::mem::size_of::<bc_plan>());
                call!(|_c| bc_plan_binary_out(
                    BC_OP_ADD,
                    &geo(F32, &A7, None),
                    &geo(F32, &B7, None),
                    &geo(F32, &A7, None),
                    plan.cast()
                ))
            },
        ),
        sc(
            "bc_plan_binary_scalar",
            "a reversed 7-d int32 operand + 2.5",
            BC_OK,
            |c| {
                let plan = c.mem(std::mem::size_of::<bc_plan>());
                call!(|_c| bc_plan_binary_scalar(
                    BC_OP_ADD,
                    &geo(I32, &C7, Some(&C7_REVERSED)),
                    bc_scalar_float(2.5),
                    plan.cast()
                ))
            },
        ),
        sc(
            "bc_plan_binary_rscalar",
            "2 ** a 7-d float32 operand (a row-major result)",
            BC_OK,
            |c| {
                let plan = c.mem(std::mem::size_of::<bc_plan>());
                call!(|_c| bc_plan_binary_rscalar(
                    BC_OP_POW,
                    bc_scalar_int(2),
                    &geo(F32, &C7, Some(&C7_REVERSED)),
                    plan.cast()
                ))
            },
        ),
        sc(
            "bc_plan_binary_scalar_inplace",
            "int32 7-d target += 2.5 (the result type does not cast)",
            BC_ERR_DTYPE,
            |c| {
                let plan = c.mem(std::mem::size_of::<bc_plan>());
                call!(|_c| bc_plan_binary_scalar_inplace(
                    BC_OP_ADD,
                    &geo(I32, &C7, None),
                    bc_scalar_float(2.5),
                    plan.cast()
                ))
            },
        ),
        sc(
            "bc_plan_where",
            "7-d uint8 condition, float32 and float64 operands (one converted)",
            BC_OK,
            |c| {
                let plan = c.mem(std::mem::size_of::<bc_plan>());
                call!(|_c| bc_plan_where(
                    &geo(BC_DTYPE_UINT8, &C7, Some(&C7_REVERSED)),
                    &geo(F32, &A7, None),
                    &geo(F64, &B7, None),
                    plan.cast()
                ))
            },
        ),
        sc(
            "bc_plan_where_out",
            "out has the wrong shape (the error holds both)",
            BC_ERR_SHAPE,
            |c| {
                let plan = c.mem(std::mem::size_of::<bc_plan>());
                call!(|_c| bc_plan_where_out(
                    &geo(BC_DTYPE_BOOL, &B7, None),
                    &geo(F32, &A7, None),
                    &geo(F32, &B7, None),
                    &geo(F32, &A7, None),
                    plan.cast()
                ))
            },
        ),
        sc(
            "bc_plan_expr",
            "(a * a) + c, 7-d, a computed first (broadcast further), c reversed",
            BC_OK,
            |c| {
                let plan = c.mem(std::mem::size_of::<bc_plan>());
                call!(|_c| bc_plan_expr(
                    [
                        ex(BC_EXPR_INPUT, 0),
                        ex(BC_EXPR_INPUT, 0),
                        ex(BC_EXPR_OP, BC_OP_MUL),
                        ex(BC_EXPR_INPUT, 1),
                        ex(BC_EXPR_OP, BC_OP_ADD),
                    ]
                    .as_ptr(),
                    5,
                    [geo(F32, &A7, None), geo(F64, &C7, Some(&C7_REVERSED))].as_ptr(),
                    2,
                    plan.cast()
                ))
            },
        ),
        sc(
            "bc_plan_expr_reduce",
            "7-d (a * a) + c summed over dim 1, a computed first, c reversed",
            BC_OK,
            |c| {
                let plan = c.mem(std::mem::size_of::<bc_plan>());
                call!(|_c| bc_plan_expr_reduce(
                    [
                        ex(BC_EXPR_INPUT, 0),
                        ex(BC_EXPR_INPUT, 0),
                        ex(BC_EXPR_OP, BC_OP_MUL),
                        ex(BC_EXPR_INPUT, 1),
                        ex(BC_EXPR_OP, BC_OP_ADD),
                    ]
                    .as_ptr(),
                    5,
                    [geo(F32, &A7, None), geo(F64, &C7, Some(&C7_REVERSED))].as_ptr(),
                    2,
                    BC_REDUCE_SUM,
                    [1i64].as_ptr(),
                    1,
                    false,
                    plan.cast()
                ))
            },
        ),
        sc(
            "bc_plan_expr_out",
            "out has the wrong shape (the error holds both)",
            BC_ERR_SHAPE,
            |c| {
                let plan = c.mem(std::mem::size_of::<bc_plan>());
                call!(|_c| bc_plan_expr_out(
                    [
                        ex(BC_EXPR_INPUT, 0),
                        ex(BC_EXPR_INPUT, 1),
                        ex(BC_EXPR_OP, BC_OP_MUL),
                    ]
                    .as_ptr(),
                    3,
                    [geo(F32, &A7, None), geo(F32, &B7, None)].as_ptr(),
                    2,
                    &geo(F32, &A7, None),
                    plan.cast()
                ))
            },
        ),
        sc(
            "bc_plan_reduce",
            "sum of a reversed 7-d float16 over two dimensions, keepdim",
            BC_OK,
            |c| {
                let plan = c.mem(std::mem::size_of::<bc_plan>());
                call!(|_c| bc_plan_reduce(
                    BC_REDUCE_SUM,
                    &geo(BC_DTYPE_FLOAT16, &C7, Some(&C7_REVERSED)),
                    [0i64, -1].as_ptr(),
                    2,
                    true,
                    plan.cast()
                ))
            },
        ),
        sc(
            "bc_plan_reduce",
            "a dimension twice",
            BC_ERR_INVALID_ARG,
            |c| {
                let plan = c.mem(std::mem::size_of::<bc_plan>());
                call!(|_c| bc_plan_reduce(
                    BC_REDUCE_PROD,
                    &geo(F32, &C7, None),
                    [1i64, -6].as_ptr(),
                    2,
                    false,
                    plan.cast()
                ))
            },
        ),
        sc(
            "bc_plan_sum_to_size",
            "7-d to a 7-d size with 1s",
            BC_OK,
            |c| {
                let plan = c.mem(std::mem::size_of::<bc_plan>());
                call!(|_c| bc_plan_sum_to_size(&geo(I32, &C7, None), A7.as_ptr(), 7, plan.cast()))
            },
        ),
        sc(
            "bc_plan_binary_sum_to",
            "float32 7-d * float64 7-d summed to a size that cannot be reached",
            BC_ERR_SHAPE,
            |c| {
                let plan = c.mem(std::mem::size_of::<bc_plan>());
                call!(|_c| bc_plan_binary_sum_to(
                    BC_OP_MUL,
                    &geo(F32, &A7, None),
                    &geo(F64, &B7, None),
                    [4i64].as_ptr(),
                    1,
                    plan.cast()
                ))
            },
        ),
    ]
}

/// Reductions, sum_to_size and the fused sum_to: over 7-d shapes (which spill inline storage),
/// wide column groups and ranges of rows (scratch space and range totals), the thread pool, the
/// fused form's direct, staged and float32-scalar paths, and refusals that carry shapes.
/// `lerp`, `addcmul`, `addcdiv` and `clamp` in their three forms (tensor and number operands),
/// over 7-d operands of mixed types (each converted first), and refusals that carry shapes.
fn ternary() -> Vec<Scenario> {
    let one = bc_scalar_float(0.5);
    vec![
        sc(
            "bc_lerp",
            "7-d float32, a float32 weight tensor",
            BC_OK,
            |c| {
                let (a, b, w) = (c.t(F32, &A7), c.t(F32, &B7), c.t(F32, &C7));
                call!(|c| bc_lerp(a, b, w, c.out(0)))
            },
        ),
        sc("bc_lerp_inplace", "7-d float64 target", BC_OK, |c| {
            let (a, b, w) = (c.t(F64, &C7), c.t(F64, &B7), c.t(F64, &[]));
            call!(|_c| bc_lerp_inplace(a, b, w))
        }),
        sc(
            "bc_lerp_out",
            "7-d into float64 (a temporary)",
            BC_OK,
            |c| {
                let (a, b, w, o) = (c.t(F32, &A7), c.t(F32, &B7), c.t(F32, &[]), c.t(F64, &C7));
                call!(|_c| bc_lerp_out(a, b, w, o))
            },
        ),
        sc("bc_lerp_scalar", "7-d bfloat16", BC_OK, move |c| {
            let (a, b) = (c.t(BC_DTYPE_BFLOAT16, &A7), c.t(BC_DTYPE_BFLOAT16, &B7));
            call!(|c| bc_lerp_scalar(a, b, one, c.out(0)))
        }),
        sc("bc_lerp_scalar_inplace", "7-d float32", BC_OK, move |c| {
            let (a, b) = (c.t(F32, &C7), c.t(F32, &A7));
            call!(|_c| bc_lerp_scalar_inplace(a, b, one))
        }),
        sc("bc_lerp_scalar_out", "7-d float32", BC_OK, move |c| {
            let (a, b, o) = (c.t(F32, &A7), c.t(F32, &B7), c.t(F32, &C7));
            call!(|_c| bc_lerp_scalar_out(a, b, one, o))
        }),
        sc(
            "bc_addcmul",
            "7-d int32, float32, float64 (promoted, converted)",
            BC_OK,
            move |c| {
                let (a, b, d) = (c.t(I32, &A7), c.t(F32, &B7), c.t(F64, &[3, 1, 1, 1, 1]));
                call!(|c| bc_addcmul(a, b, d, one, c.out(0)))
            },
        ),
        sc("bc_addcmul_inplace", "7-d int64 target", BC_OK, |c| {
            let (a, b, d) = (c.t(I64, &C7), c.t(I64, &B7), c.t(I32, &A7));
            call!(|_c| bc_addcmul_inplace(a, b, d, bc_scalar_int(3)))
        }),
        sc(
            "bc_addcmul_out",
            "shapes that do not broadcast",
            BC_ERR_SHAPE,
            move |c| {
                let (a, b, d, o) = (c.t(F32, &A7), c.t(F32, &[5]), c.t(F32, &B7), c.t(F32, &C7));
                call!(|_c| bc_addcmul_out(a, b, d, one, o))
            },
        ),
        sc("bc_addcdiv", "7-d float16 and float32", BC_OK, move |c| {
            let (a, b, d) = (c.t(BC_DTYPE_FLOAT16, &A7), c.t(F32, &B7), c.t(F32, &C7));
            call!(|c| bc_addcdiv(a, b, d, one, c.out(0)))
        }),
        sc(
            "bc_addcdiv_inplace",
            "a target of another shape",
            BC_ERR_SHAPE,
            move |c| {
                let (a, b, d) = (c.t(F32, &A7), c.t(F32, &B7), c.t(F32, &C7));
                call!(|_c| bc_addcdiv_inplace(a, b, d, one))
            },
        ),
        sc("bc_addcdiv_out", "7-d float64", BC_OK, move |c| {
            let (a, b, d, o) = (c.t(F64, &A7), c.t(F64, &B7), c.t(F64, &C7), c.t(F64, &C7));
            call!(|_c| bc_addcdiv_out(a, b, d, one, o))
        }),
        sc(
            "bc_clamp",
            "7-d int32 between float32 and int64 bounds",
            BC_OK,
            |c| {
                let (a, lo, hi) = (c.t(I32, &A7), c.t(F32, &B7), c.t(I64, &C7));
                call!(|c| bc_clamp(a, lo, hi, c.out(0)))
            },
        ),
        sc(
            "bc_clamp_inplace",
            "7-d float32, a minimum only",
            BC_OK,
            |c| {
                let (a, lo) = (c.t(F32, &C7), c.t(F32, &A7));
                call!(|_c| bc_clamp_inplace(a, lo, ptr::null()))
            },
        ),
        sc("bc_clamp_out", "7-d into float64", BC_OK, |c| {
            let (a, hi, o) = (c.t(F32, &A7), c.t(F32, &B7), c.t(F64, &C7));
            call!(|_c| bc_clamp_out(a, ptr::null(), hi, o))
        }),
        sc(
            "bc_clamp_scalar",
            "7-d uint8 between -5 and 2.5 (float32)",
            BC_OK,
            |c| {
                let a = c.t(BC_DTYPE_UINT8, &C7);
                let (lo, hi) = (bc_scalar_int(-5), bc_scalar_float(2.5));
                call!(|c| bc_clamp_scalar(a, &lo, &hi, c.out(0)))
            },
        ),
        sc("bc_clamp_scalar_inplace", "7-d int16 above 1", BC_OK, |c| {
            let a = c.t(I16_T, &C7);
            let lo = bc_scalar_int(1);
            call!(|_c| bc_clamp_scalar_inplace(a, &lo, ptr::null()))
        }),
        sc(
            "bc_clamp_scalar_out",
            "no bound (refused)",
            BC_ERR_INVALID_ARG,
            |c| {
                let (a, o) = (c.t(F32, &C7), c.t(F32, &C7));
                call!(|_c| bc_clamp_scalar_out(a, ptr::null(), ptr::null(), o))
            },
        ),
    ]
}

/// `var`, `std`, `all`, `any`, `argmax`, `argmin`, `logsumexp`, `nansum` and `nanmean`, each
/// over a 7-d operand (made of the elementwise operations and the basic reductions, they allocate
/// at many places), and the warning of `var` without degrees of freedom.
fn further_reductions() -> Vec<Scenario> {
    vec![
        sc(
            "bc_var",
            "7-d float32 over dims 1 and -1, keepdim",
            BC_OK,
            |c| {
                let t = c.t(F32, &C7);
                call!(|c| bc_var(t, [1i64, -1].as_ptr(), 2, 1.0, true, c.out(0)))
            },
        ),
        sc(
            "bc_var",
            "no degrees of freedom (a warning, to a handler)",
            BC_OK,
            |c| {
                let _ = bc_set_warning_handler(Some(on_warning), ptr::null_mut());
                c.restore.push(|| {
                    let _ = bc_set_warning_handler(None, ptr::null_mut());
                });
                let t = c.t(BC_DTYPE_FLOAT16, &C7);
                call!(|c| bc_var(t, [0i64].as_ptr(), 1, 2.0, false, c.out(0)))
            },
        ),
        sc("bc_std", "7-d float64, all", BC_OK, |c| {
            let t = c.t(F64, &C7);
            call!(|c| bc_std(t, ptr::null(), 0, 0.0, false, c.out(0)))
        }),
        sc("bc_all", "7-d int32 over dim 2", BC_OK, |c| {
            let t = c.t(I32, &C7);
            call!(|c| bc_all(t, [2i64].as_ptr(), 1, false, c.out(0)))
        }),
        sc(
            "bc_any",
            "7-d uint8, each element (an empty list)",
            BC_OK,
            |c| {
                let t = c.t(BC_DTYPE_UINT8, &C7);
                call!(|c| bc_any(t, [0i64].as_ptr(), 0, true, c.out(0)))
            },
        ),
        sc("bc_argmax", "7-d float32 along dim 3", BC_OK, |c| {
            let t = c.t(F32, &C7);
            let t = c.reversed(t);
            call!(|c| bc_argmax(t, &3i64, true, c.out(0)))
        }),
        sc("bc_argmin", "7-d int64, flattened", BC_OK, |c| {
            let t = c.t(I64, &C7);
            call!(|c| bc_argmin(t, ptr::null(), false, c.out(0)))
        }),
        sc(
            "bc_logsumexp",
            "7-d bfloat16 over dims 0 and 4",
            BC_OK,
            |c| {
                let t = c.t(BC_DTYPE_BFLOAT16, &C7);
                call!(|c| bc_logsumexp(t, [0i64, 4].as_ptr(), 2, false, c.out(0)))
            },
        ),
        sc("bc_nansum", "7-d float32 over dim 1", BC_OK, |c| {
            let t = c.t(F32, &C7);
            call!(|c| bc_nansum(t, [1i64].as_ptr(), 1, false, c.out(0)))
        }),
        sc("bc_nanmean", "7-d float64, all", BC_OK, |c| {
            let t = c.t(F64, &C7);
            call!(|c| bc_nanmean(t, ptr::null(), 0, true, c.out(0)))
        }),
        sc("bc_nanmean", "int32 (refused)", BC_ERR_DTYPE, |c| {
            let t = c.t(I32, &C7);
            call!(|c| bc_nanmean(t, ptr::null(), 0, true, c.out(0)))
        }),
    ]
}

fn reductions() -> Vec<Scenario> {
    vec![
        sc(
            "bc_sum",
            "7-d float32 over dims 1 and -1, keepdim",
            BC_OK,
            |c| {
                let t = c.t(F32, &C7);
                call!(|c| bc_sum(t, [1i64, -1].as_ptr(), 2, true, c.out(0)))
            },
        ),
        sc(
            "bc_sum",
            "(300,200) float32 over dim 0 (wide column lanes, two ranges of rows)",
            BC_OK,
            |c| {
                let t = c.t(F32, &[300, 200]);
                call!(|c| bc_sum(t, [0i64].as_ptr(), 1, false, c.out(0)))
            },
        ),
        sc(
            "bc_sum",
            "20000 float64, all (ranges combined)",
            BC_OK,
            |c| {
                let t = c.t(F64, &[20000]);
                call!(|c| bc_sum(t, ptr::null(), 0, false, c.out(0)))
            },
        ),
        sc("bc_mean", "7-d float16, all", BC_OK, |c| {
            let t = c.t(BC_DTYPE_FLOAT16, &C7);
            call!(|c| bc_mean(t, ptr::null(), 0, true, c.out(0)))
        }),
        sc(
            "bc_prod",
            "7-d int32 over dims 0, 2, 4 (int64)",
            BC_OK,
            |c| {
                let t = c.t(I32, &C7);
                call!(|c| bc_prod(t, [0i64, 2, 4].as_ptr(), 3, false, c.out(0)))
            },
        ),
        sc("bc_amax", "7-d reversed view over dim -1", BC_OK, |c| {
            let t = c.t(F32, &C7);
            let r = c.reversed(t);
            call!(|c| bc_amax(r, [-1i64].as_ptr(), 1, false, c.out(0)))
        }),
        sc("bc_amax", "an empty dimension", BC_ERR_SHAPE, |c| {
            let t = c.t(F32, &[2, 0, 3]);
            call!(|c| bc_amax(t, [1i64].as_ptr(), 1, false, c.out(0)))
        }),
        sc("bc_amin", "7-d int32 over dims 3 and 5", BC_OK, |c| {
            let t = c.t(I32, &C7);
            call!(|c| bc_amin(t, [3i64, 5].as_ptr(), 2, true, c.out(0)))
        }),
        sc("bc_reduce", "sum of 7-d float64, all", BC_OK, |c| {
            let t = c.t(F64, &C7);
            call!(|c| bc_reduce(BC_REDUCE_SUM, t, ptr::null(), 0, false, c.out(0)))
        }),
        sc(
            "bc_reduce",
            "a dimension out of range",
            BC_ERR_INVALID_ARG,
            |c| {
                let t = c.t(F32, &C7);
                call!(|c| bc_reduce(BC_REDUCE_SUM, t, [7i64].as_ptr(), 1, false, c.out(0)))
            },
        ),
        sc("bc_reduce", "a dimension twice", BC_ERR_INVALID_ARG, |c| {
            let t = c.t(F32, &C7);
            call!(|c| bc_reduce(BC_REDUCE_PROD, t, [1i64, -6].as_ptr(), 2, false, c.out(0)))
        }),
        sc("bc_reduce", "mean of int32", BC_ERR_DTYPE, |c| {
            let t = c.t(I32, &C7);
            call!(|c| bc_reduce(BC_REDUCE_MEAN, t, ptr::null(), 0, false, c.out(0)))
        }),
        sc(
            "bc_reduce",
            "on the thread pool (threshold 1, 4 threads), wide columns",
            BC_OK,
            |c| {
                let _ = bc_set_parallel_threshold(1);
                let _ = bc_set_num_threads(4);
                c.restore.push(|| {
                    let _ = bc_set_parallel_threshold(0);
                    let _ = bc_set_num_threads(0);
                });
                let t = c.t(F32, &[64, 300]);
                call!(|c| bc_reduce(BC_REDUCE_SUM, t, [0i64].as_ptr(), 1, false, c.out(0)))
            },
        ),
        sc(
            "bc_tensor_sum_to_size",
            "7-d to a 7-d size with 1s",
            BC_OK,
            |c| {
                let t = c.t(F32, &C7);
                call!(|c| bc_tensor_sum_to_size(t, A7.as_ptr(), 7, c.out(0)))
            },
        ),
        sc(
            "bc_tensor_sum_to_size",
            "nothing to sum (a view)",
            BC_OK,
            |c| {
                let t = c.t(F32, &C7);
                call!(|c| bc_tensor_sum_to_size(t, C7.as_ptr(), 7, c.out(0)))
            },
        ),
        sc(
            "bc_tensor_sum_to_size",
            "a size that cannot be reached (the error holds both)",
            BC_ERR_SHAPE,
            |c| {
                let t = c.t(F32, &C7);
                let size = [2i64, 2, 3, 3, 2, 2, 5];
                call!(|c| bc_tensor_sum_to_size(t, size.as_ptr(), 7, c.out(0)))
            },
        ),
        sc(
            "bc_binary_sum_to",
            "7-d float32 times 7-d float64, to a 7-d size",
            BC_OK,
            |c| {
                let (a, b) = (c.t(F32, &C7), c.t(F64, &B7));
                call!(|c| bc_binary_sum_to(BC_OP_MUL, a, b, B7.as_ptr(), 7, c.out(0)))
            },
        ),
        sc(
            "bc_binary_sum_to",
            "a reversed view (through the stage)",
            BC_OK,
            |c| {
                let t = c.t(F32, &C7);
                let (a, b) = (c.reversed(t), c.t(F32, &[2]));
                call!(|c| bc_binary_sum_to(BC_OP_SUB, a, b, [2i64].as_ptr(), 1, c.out(0)))
            },
        ),
        sc(
            "bc_binary_sum_to",
            "7-d float16 divided by a 0-d float64 (read in float32)",
            BC_OK,
            |c| {
                let (a, b) = (c.t(BC_DTYPE_FLOAT16, &C7), c.t(F64, &[]));
                call!(|c| bc_binary_sum_to(BC_OP_DIV, a, b, ptr::null(), 0, c.out(0)))
            },
        ),
        sc(
            "bc_binary_sum_to",
            "7-d int32 remainder by an int64 holding 0 (converted, then refused)",
            BC_ERR_VALUE,
            |c| {
                let (a, b) = (c.t(I32, &C7), c.t(I64, &B7));
                call!(|c| bc_binary_sum_to(BC_OP_REMAINDER, a, b, B7.as_ptr(), 7, c.out(0)))
            },
        ),
        sc(
            "bc_binary_sum_to",
            "7-d float32 compared with a reversed view (bools, through the stage)",
            BC_OK,
            |c| {
                let t = c.t(F32, &C7);
                let (a, b) = (c.reversed(t), c.t(F32, &[2]));
                call!(|c| bc_binary_sum_to(BC_OP_LT, a, b, [2i64].as_ptr(), 1, c.out(0)))
            },
        ),
        sc("bc_binary_sum_to", "nothing to sum (a op b)", BC_OK, |c| {
            let (a, b) = (c.t(F32, &A7), c.t(F32, &B7));
            call!(|c| bc_binary_sum_to(BC_OP_ADD, a, b, C7.as_ptr(), 7, c.out(0)))
        }),
        sc(
            "bc_binary_sum_to",
            "operands that do not broadcast (the error holds both)",
            BC_ERR_SHAPE,
            |c| {
                let (a, b) = (c.t(F32, &C7), c.t(F32, &[5]));
                call!(|c| bc_binary_sum_to(BC_OP_ADD, a, b, ptr::null(), 0, c.out(0)))
            },
        ),
        sc(
            "bc_binary_sum_to",
            "a size that cannot be reached (the error holds both)",
            BC_ERR_SHAPE,
            |c| {
                let (a, b) = (c.t(F32, &A7), c.t(F32, &B7));
                call!(|c| bc_binary_sum_to(BC_OP_ADD, a, b, [5i64].as_ptr(), 1, c.out(0)))
            },
        ),
    ]
}

/// Shape-changing views, data access, printing and DLPack.
fn views_and_interop() -> Vec<Scenario> {
    /// A status for "a failed call left its out-pointer set" (not a library status).
    const OUT_SET: i32 = -2;
    vec![
        sc("bc_tensor_view", "7-d to 6-d", BC_OK, |c| {
            let t = c.t(F32, &C7);
            call!(|c| bc_tensor_view(t, [2i64, 2, 3, 3, 4, 2].as_ptr(), 6, c.out(0)))
        }),
        sc(
            "bc_tensor_view",
            "strides that allow no view (the error holds both shapes)",
            BC_ERR_SHAPE,
            |c| {
                let t = c.t(F32, &C7);
                let r = c.reversed(t);
                call!(|c| bc_tensor_view(r, [288i64].as_ptr(), 1, c.out(0)))
            },
        ),
        sc(
            "bc_tensor_view",
            "a size that cannot be (a formatted message)",
            BC_ERR_INVALID_ARG,
            |c| {
                let t = c.t(F32, &C7);
                call!(|c| bc_tensor_view(t, [2i64, -7, 72].as_ptr(), 3, c.out(0)))
            },
        ),
        sc(
            "bc_tensor_reshape",
            "a 7-d reversed view (a copy)",
            BC_OK,
            |c| {
                let t = c.t(F32, &C7);
                let (r, copied) = (c.reversed(t), c.mem(1));
                call!(|c| bc_tensor_reshape(
                    r,
                    [4i64, 2, 3, 3, 2, 2].as_ptr(),
                    6,
                    copied.cast(),
                    c.out(0)
                ))
            },
        ),
        sc(
            "bc_tensor_unsqueeze",
            "5-d to 6-d (past the inline shape)",
            BC_OK,
            |c| {
                let t = c.t(F32, &[2, 3, 1, 2, 2]);
                call!(|c| bc_tensor_unsqueeze(t, 0, c.out(0)))
            },
        ),
        sc("bc_tensor_squeeze", "7-d to 6-d", BC_OK, |c| {
            let t = c.t(F32, &A7);
            call!(|c| bc_tensor_squeeze(t, 1, c.out(0)))
        }),
        sc("bc_tensor_squeeze_all", "7-d", BC_OK, |c| {
            let t = c.t(F32, &[2, 1, 3, 1, 2, 1, 2, 2]);
            call!(|c| bc_tensor_squeeze_all(t, c.out(0)))
        }),
        sc(
            "bc_tensor_flatten",
            "a 7-d reversed view (a copy)",
            BC_OK,
            |c| {
                let t = c.t(F32, &C7);
                let (r, copied) = (c.reversed(t), c.mem(1));
                call!(|c| bc_tensor_flatten(r, 1, 3, copied.cast(), c.out(0)))
            },
        ),
        sc(
            "bc_tensor_data",
            "an odd 7-d view (its overlap check lists addresses)",
            BC_OK,
            |c| {
                let base = c.t(F32, &[40]);
                let v = c.strided(base, &C7, &[1, 1, 1, 1, 1, 1, 1], 0);
                let (data, nbytes, writable) = (c.mem(8), c.mem(8), c.mem(1));
                // Addresses differ from run to run: the result is kept relative to the base's.
                let mut first = ptr::null_mut();
                // SAFETY: valid pointers.
                let st =
                    unsafe { bc_tensor_data(base, &mut first, ptr::null_mut(), ptr::null_mut()) };
                assert_eq!(st, BC_OK);
                let first = first as usize;
                call!(|_c| {
                    let st = bc_tensor_data(v, data.cast(), nbytes.cast(), writable.cast());
                    if st == BC_OK {
                        *data.cast::<usize>() -= first;
                    }
                    st
                })
            },
        ),
        sc("bc_tensor_format", "7-d", BC_OK, |c| {
            let t = c.t(F64, &C7);
            let (buf, length) = (c.mem(8192), c.mem(8));
            call!(|_c| bc_tensor_format(t, buf.cast(), 8192, length.cast()))
        }),
        sc(
            "bc_tensor_to_dlpack_versioned",
            "a 7-d view, then its deleter",
            BC_OK,
            |c| {
                let t = c.t(F32, &C7);
                let r = c.reversed(t);
                call!(|_c| {
                    let mut m: *mut DLManagedTensorVersioned = SENTINEL.cast();
                    let st = bc_tensor_to_dlpack_versioned(r, &mut m);
                    if st != BC_OK {
                        return if m.is_null() { st } else { OUT_SET };
                    }
                    ((*m).deleter.expect("a deleter"))(m);
                    st
                })
            },
        ),
        sc(
            "bc_tensor_to_dlpack",
            "a 7-d view, then its deleter",
            BC_OK,
            |c| {
                let t = c.t(F32, &C7);
                let r = c.reversed(t);
                call!(|_c| {
                    let mut m: *mut DLManagedTensor = SENTINEL.cast();
                    let st = bc_tensor_to_dlpack(r, &mut m);
                    if st != BC_OK {
                        return if m.is_null() { st } else { OUT_SET };
                    }
                    ((*m).deleter.expect("a deleter"))(m);
                    st
                })
            },
        ),
        sc(
            "bc_tensor_to_dlpack",
            "a broadcast view (refused: no read-only flag)",
            BC_ERR_READ_ONLY,
            |c| {
                let t = c.t(F32, &[3, 1]);
                let mut e = ptr::null_mut();
                // SAFETY: valid pointers.
                let st = unsafe { bc_tensor_expand(t, [3i64, 4].as_ptr(), 2, &mut e) };
                let e = c.keep(st, e, "expand");
                call!(|_c| {
                    let mut m: *mut DLManagedTensor = SENTINEL.cast();
                    let st = bc_tensor_to_dlpack(e, &mut m);
                    if m.is_null() {
                        st
                    } else {
                        OUT_SET
                    }
                })
            },
        ),
        sc(
            "bc_tensor_from_dlpack_versioned",
            "our own 7-d export",
            BC_OK,
            |c| {
                let t = c.t(F64, &C7);
                let mut m = ptr::null_mut();
                // SAFETY: valid pointers.
                assert_eq!(unsafe { bc_tensor_to_dlpack_versioned(t, &mut m) }, BC_OK);
                dlpack_import(c, m, |m, out| unsafe {
                    bc_tensor_from_dlpack_versioned(m, out)
                })
            },
        ),
        sc("bc_tensor_from_dlpack", "our own 7-d export", BC_OK, |c| {
            let t = c.t(I32, &C7);
            let mut m = ptr::null_mut();
            // SAFETY: valid pointers.
            assert_eq!(unsafe { bc_tensor_to_dlpack(t, &mut m) }, BC_OK);
            dlpack_import(c, m, |m, out| unsafe { bc_tensor_from_dlpack(m, out) })
        }),
    ]
}

/// The call importing `m` (a DLPack struct with a deleter); when no run of it succeeds, the
/// struct goes back to its producer when the run ends. The library takes it over only on
/// success: a failed import must not call the deleter (a second call, here, would be a double
/// free).
fn dlpack_import<M: DlpackManaged + 'static>(
    c: &mut Ctx,
    m: *mut M,
    import: fn(*mut M, *mut *mut bc_tensor) -> i32,
) -> Call {
    let taken = std::rc::Rc::new(Cell::new(false));
    let flag = std::rc::Rc::clone(&taken);
    c.finally.push(Box::new(move || {
        if !flag.get() {
            // SAFETY: the producer's struct, never handed over: its deleter, once.
            unsafe { M::delete(m) };
        }
    }));
    Box::new(move |c: &mut Ctx| {
        let st = import(m, c.out(0));
        if st == BC_OK {
            taken.set(true);
        }
        st
    })
}

/// The two DLPack structs' deleters.
trait DlpackManaged {
    /// # Safety
    /// `m` is a live struct from an export, deleted once.
    unsafe fn delete(m: *mut Self);
}

impl DlpackManaged for DLManagedTensorVersioned {
    unsafe fn delete(m: *mut Self) {
        // SAFETY: forwarded.
        unsafe { ((*m).deleter.expect("a deleter"))(m) }
    }
}

impl DlpackManaged for DLManagedTensor {
    unsafe fn delete(m: *mut Self) {
        // SAFETY: forwarded.
        unsafe { ((*m).deleter.expect("a deleter"))(m) }
    }
}

// ---------------------------------------------------------------------------------------------
// The runner

/// What the caller can see: every live input's bytes, every buffer, and each out-handle's
/// shape and bytes (or that it is NULL, or untouched).
fn state(c: &Ctx) -> Vec<Vec<u8>> {
    let bytes = |t: *mut bc_tensor| -> Vec<u8> {
        let (mut n, mut dt) = (0i64, 0i32);
        let mut shape = [0i64; BC_MAX_NDIM];
        let mut nd = 0usize;
        // SAFETY: valid pointers; the buffer holds the tensor's bytes.
        unsafe {
            let _ = bc_tensor_numel(t, &mut n);
            let _ = bc_tensor_dtype(t, &mut dt);
            let _ = bc_tensor_ndim(t, &mut nd);
            let _ = bc_tensor_shape(t, shape.as_mut_ptr(), BC_MAX_NDIM);
            let mut b = vec![0u8; n as usize * bc_dtype_size(dt)];
            assert_eq!(bc_tensor_copy_to(t, b.as_mut_ptr().cast(), b.len()), BC_OK);
            b.extend(shape[..nd].iter().flat_map(|d| d.to_le_bytes()));
            b.push(dt as u8);
            b
        }
    };
    let mut s: Vec<Vec<u8>> = c
        .inputs
        .iter()
        .map(|&t| {
            if bc_tensor_is_live(t) {
                bytes(t)
            } else {
                b"freed".to_vec()
            }
        })
        .collect();
    s.extend(c.mem.iter().cloned());
    s.extend(c.outs.iter().map(|&o| match o {
        o if o == SENTINEL => b"untouched".to_vec(),
        o if o.is_null() => b"NULL".to_vec(),
        o if c.inputs.contains(&o) => b"an input".to_vec(),
        o => bytes(o),
    }));
    let releases = RELEASES.load(Ordering::SeqCst) - c.releases;
    s.push(releases.to_le_bytes().to_vec());
    s
}

/// Frees what the call made (its out-handles that are new handles).
fn free_outputs(c: &mut Ctx) {
    for o in &mut c.outs {
        if *o != SENTINEL && !o.is_null() && !c.inputs.contains(o) {
            bc_tensor_free(*o);
        }
        *o = SENTINEL;
    }
}

fn cleanup(mut c: Ctx) {
    free_outputs(&mut c);
    for f in c.finally.drain(..) {
        f();
    }
    for &t in &c.inputs {
        if bc_tensor_is_live(t) {
            bc_tensor_free(t);
        }
    }
    for r in c.restore.drain(..) {
        r();
    }
}

/// What the process holds: this thread's heap bytes (less registry chunks, kept for good), and
/// live handles.
fn held() -> (i64, usize) {
    let chunks = broadcast::ffi::handle::registry_chunks() as i64;
    (
        NET.get() - chunks * broadcast::ffi::handle::CHUNK_BYTES as i64 - KEPT.get(),
        bc_tensor_live_count(),
    )
}

thread_local! {
    /// Bytes of the failure reports kept so far (the test's own, not the library's).
    static KEPT: Cell<i64> = const { Cell::new(0) };
}

#[derive(Default)]
struct Figures {
    scenarios: usize,
    sites: u64,
    leaks: usize,
    failures: Vec<String>,
}

fn sweep(s: &Scenario, fig: &mut Figures) {
    let tag = format!("{} ({})", s.name, s.what);
    let fail = |fig: &mut Figures, text: String| {
        let report = format!("{tag}: {text}");
        KEPT.set(KEPT.get() + report.capacity() as i64);
        fig.failures.push(report); // room reserved: no allocation
    };
    // The unarmed reference run.
    let mut c = Ctx::new();
    let mut call = (s.setup)(&mut c);
    let st = call(&mut c);
    let (ref_status, ref_message) = (st, message());
    let reference = state(&c);
    drop(call);
    cleanup(c);
    if st != s.expect {
        fail(
            fig,
            format!(
                "status {st} without faults, expected {} ({ref_message})",
                s.expect
            ),
        );
        return;
    }
    fig.scenarios += 1;
    // Heap bytes are compared where everything the test itself allocated since the baseline
    // has been dropped again: the difference is then the library's.
    for k in 1u64.. {
        let start = held();
        let mut c = Ctx::new();
        let mut call = (s.setup)(&mut c);
        let before = state(&c);
        let base = held();
        let (st, _seen, refused) = armed(k, || call(&mut c));
        if refused == 0 {
            // The call made fewer than k allocations: the sweep is complete.
            if st != ref_status || state(&c) != reference {
                fail(
                    fig,
                    format!("k={k}: an unrefused run differs from the reference"),
                );
            }
            drop((call, before));
            cleanup(c);
            break;
        }
        fig.sites += 1;
        let failed = st != BC_OK && s.expect == BC_OK || st == BC_ERR_ALLOC;
        if let Some(problem) = check_outcome(s, &c, st, failed, &before, &reference, &ref_message) {
            fail(fig, format!("k={k}: {problem}"));
        }
        free_outputs(&mut c);
        if held() != base {
            fig.leaks += 1;
            let now = held();
            fail(
                fig,
                format!(
                    "k={k}: (heap bytes, live handles) {now:?} after the call, {base:?} before"
                ),
            );
        }
        if failed {
            // The same call, unarmed, now succeeds with the reference results.
            let st = call(&mut c);
            if st != s.expect || state(&c) != reference {
                fail(
                    fig,
                    format!(
                        "k={k}: the call did not work afterwards (status {st}, {})",
                        message()
                    ),
                );
            }
        }
        drop((call, before));
        cleanup(c);
        if held() != start {
            fig.leaks += 1;
            let now = held();
            fail(
                fig,
                format!(
                    "k={k}: (heap bytes, live handles) {now:?} after the run, {start:?} before"
                ),
            );
        }
        assert!(k < 10_000, "{tag}: more than 10,000 allocations?");
    }
}

/// What is wrong with the outcome of an armed call, if anything (see the module doc).
fn check_outcome(
    s: &Scenario,
    c: &Ctx,
    st: i32,
    failed: bool,
    before: &[Vec<u8>],
    reference: &[Vec<u8>],
    ref_message: &str,
) -> Option<String> {
    if st == BC_ERR_ALLOC {
        let mut info = std::mem::MaybeUninit::<bc_error_info>::uninit();
        // SAFETY: valid for one write.
        let kind = unsafe {
            let _ = bc_last_error_info(info.as_mut_ptr());
            info.assume_init().kind
        };
        let m = message();
        if bc_last_error_status() != BC_ERR_ALLOC
            || kind != BC_ERROR_KIND_ALLOC
            || !m.starts_with("out of memory")
        {
            return Some(format!(
                "BC_ERR_ALLOC recorded as status {}, kind {kind}, {m:?}",
                bc_last_error_status()
            ));
        }
    } else if st != s.expect {
        return Some(format!(
            "status {st} ({}), expected {} or BC_ERR_ALLOC",
            message(),
            s.expect
        ));
    } else if st != BC_OK && message() != ref_message {
        return Some(format!("message {:?}, expected {ref_message:?}", message()));
    }
    let after = state(c);
    if failed {
        // Nothing the caller owns changed; out-handles are NULL (or were never touched).
        let same = before
            .iter()
            .zip(&after)
            .all(|(b, a)| a == b || (a == b"NULL" && b == b"untouched"));
        if !same {
            return Some(
                "the failed call changed the caller's data or left an out-handle set".into(),
            );
        }
    } else if after != reference {
        return Some(
            "succeeded despite a refused allocation, but not with the reference results".into(),
        );
    }
    None
}

/// Exported functions, from the header (a new export appears there with its declaration).
fn exported() -> Vec<String> {
    header::exported_functions()
}

/// Not swept, with the reason (checked to be exports, and run once unarmed).
const NOT_SWEPT: &[(&str, &str)] = &[(
    "bc_debug_panic",
    "it panics on purpose, and Rust's panic runtime boxes the payload and the exception object with allocations that abort when refused",
)];

#[test]
fn every_export_has_a_scenario() {
    let names = exported();
    assert!(names.len() > 50, "suspiciously few exports: {names:?}");
    let covered: Vec<&str> = scenarios()
        .iter()
        .map(|s| s.name)
        .chain(NOT_SWEPT.iter().map(|n| n.0))
        .collect();
    let missing: Vec<&String> = names
        .iter()
        .filter(|n| !covered.contains(&n.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "exports without a fault-injection scenario: {missing:?} (add them to `scenarios`)"
    );
    let stale: Vec<&&str> = covered
        .iter()
        .filter(|c| !names.iter().any(|n| n == *c))
        .collect();
    assert!(
        stale.is_empty(),
        "scenarios for functions the header does not declare: {stale:?}"
    );
}

#[test]
fn every_allocation_of_every_export_may_fail() {
    let time = std::time::Instant::now();
    // No cached buffers: every freed byte goes back at once, so leaks show.
    broadcast::engine::storage::set_buffer_cache_limit(0);
    // No warm-up: the first scenario to reach a one-time setup (the panic hook, the thread-exit
    // key, the CPU count, the pool's workers, standard error) sweeps it too.
    let mut fig = Figures {
        failures: Vec::with_capacity(100_000),
        ..Figures::default()
    };
    // BC_FAULT_ONLY=<text>: only the scenarios whose function or description contains it.
    let only = std::env::var("BC_FAULT_ONLY").unwrap_or_default();
    let all: Vec<Scenario> = scenarios()
        .into_iter()
        .filter(|s| s.name.contains(&only) || s.what.contains(&only))
        .collect();
    for s in &all {
        let t = std::time::Instant::now();
        let sites = fig.sites;
        sweep(s, &mut fig);
        if std::env::var_os("BC_FAULT_VERBOSE").is_some() {
            println!(
                "{:>6.2} s {:>3} sites  {} ({})",
                t.elapsed().as_secs_f64(),
                fig.sites - sites,
                s.name,
                s.what
            );
        }
    }
    // bc_debug_panic, unarmed: what its panic needs.
    let (st, seen, _) = armed(u64::MAX, || bc_debug_panic());
    assert_eq!(st, BC_ERR_INTERNAL);
    let functions = {
        let mut n: Vec<&str> = all.iter().map(|s| s.name).collect();
        n.sort_unstable();
        n.dedup();
        n.len()
    };
    println!(
        "fault injection: {functions} of {} exported functions swept in {} scenarios; {} allocation sites failed; 0 aborts; {} leaks; {:.1} s",
        exported().len(),
        fig.scenarios,
        fig.sites,
        fig.leaks,
        time.elapsed().as_secs_f64()
    );
    println!(
        "not swept: bc_debug_panic ({seen} allocations, {} bytes, by the panic runtime, unarmed): {}",
        SEEN_BYTES.get(),
        NOT_SWEPT[0].1
    );
    assert!(
        fig.failures.is_empty(),
        "{} failures:\n{}",
        fig.failures.len(),
        fig.failures.join("\n")
    );
}
