//! What the handle registry costs per call.
//!
//! Handles are tokens looked up in a registry (a table of slots, each with its own spin lock and
//! generation count) instead of raw pointers to boxed tensors. This bench measures one cheap
//! query, `bc_tensor_ndim`, three ways, so the difference is the registry and nothing else:
//!
//! * `registry`: the real export: panic boundary + slot lock + generation check + the answer,
//!   read from the tensor in place (queries borrow it under the lock, no clone).
//! * `boxed_pointer`: the same boundary plus a tensor clone (what the registry did before it
//!   borrowed), but the handle is a `Box<Tensor>` pointer that is simply dereferenced (what a
//!   pointer-based API does, with none of the protection: a freed or stray pointer would be
//!   undefined behaviour).
//! * `boxed_pointer_no_clone`: dereference and read only (the least any design must do).
//!
//! Then the same under contention (another thread hammering the library meanwhile), a stale
//! handle (the refusal path, which also records the error message), and a whole small
//! operation (`bc_add` on one-element tensors and freeing the result: two lookups, one
//! registration, one release) against the engine call it wraps.
//!
//! Run: `cargo bench --bench handles` (about a minute). `cargo test --bench handles` runs each
//! case once, as a smoke test.
use broadcast::engine::{ops, BinaryOp, DType, Init, Options, Tensor};
use broadcast::ffi::*;
use criterion::{black_box, criterion_group, criterion_main, Criterion};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn f32_tensor(shape: &[i64]) -> *mut bc_tensor {
    let mut out = ptr::null_mut();
    // SAFETY: valid pointers.
    let st = unsafe { bc_tensor_ones(BC_DTYPE_FLOAT32, shape.as_ptr(), shape.len(), &mut out) };
    assert_eq!(st, BC_OK);
    out
}

thread_local! {
    /// The same per-call bookkeeping as the library's boundary (a thread-local depth counter).
    static INSIDE: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// The library's boundary without the registry: depth counter + `catch_unwind`.
#[inline(always)]
fn boundary<T>(body: impl FnOnce() -> T) -> std::thread::Result<T> {
    INSIDE.with(|d| d.set(d.get() + 1));
    let r = catch_unwind(AssertUnwindSafe(body));
    INSIDE.with(|d| d.set(d.get() - 1));
    r
}

/// The pointer-based design this registry replaces: a boundary, a dereference, the same clone.
#[inline(never)]
unsafe extern "C" fn boxed_ndim(t: *const Tensor, out: *mut usize) -> i32 {
    match boundary(|| {
        if t.is_null() || out.is_null() {
            return BC_ERR_NULL_ARG;
        }
        // SAFETY: the bench passes a live Box<Tensor>.
        let Ok(t) = unsafe { &*t }.try_clone() else {
            return BC_ERR_INTERNAL;
        };
        // SAFETY: valid out-pointer.
        unsafe { out.write(t.ndim()) };
        BC_OK
    }) {
        Ok(s) => s,
        Err(_) => BC_ERR_INTERNAL,
    }
}

#[inline(never)]
unsafe extern "C" fn boxed_ndim_no_clone(t: *const Tensor, out: *mut usize) -> i32 {
    match boundary(|| {
        if t.is_null() || out.is_null() {
            return BC_ERR_NULL_ARG;
        }
        // SAFETY: the bench passes a live Box<Tensor>; valid out-pointer.
        unsafe { out.write((*t).ndim()) };
        BC_OK
    }) {
        Ok(s) => s,
        Err(_) => BC_ERR_INTERNAL,
    }
}

fn lookup(c: &mut Criterion) {
    // Some other live tensors, so the registry is not trivially small.
    let others: Vec<_> = (0..1000).map(|_| f32_tensor(&[1])).collect();
    let h = f32_tensor(&[2, 3]);
    let boxed = Box::into_raw(Box::new(
        Tensor::new(DType::F32, &[2, 3], Init::Zeros).expect("tensor"),
    ));
    let stale = f32_tensor(&[2, 3]);
    bc_tensor_free(stale);

    let mut g = c.benchmark_group("ndim");
    let mut n = 0usize;
    g.bench_function("registry", |b| {
        // SAFETY: valid out-pointer.
        b.iter(|| unsafe { bc_tensor_ndim(black_box(h), &mut n) })
    });
    g.bench_function("boxed_pointer", |b| {
        // SAFETY: a live Box<Tensor>.
        b.iter(|| unsafe { boxed_ndim(black_box(boxed), &mut n) })
    });
    g.bench_function("boxed_pointer_no_clone", |b| {
        // SAFETY: a live Box<Tensor>.
        b.iter(|| unsafe { boxed_ndim_no_clone(black_box(boxed), &mut n) })
    });
    g.bench_function("registry_stale_handle", |b| {
        // SAFETY: valid out-pointer; the handle is refused.
        b.iter(|| unsafe { bc_tensor_ndim(black_box(stale), &mut n) })
    });
    g.finish();

    // Contention: another thread queries a different tensor all the time. The registry shares
    // one lock word between them; the boxed design shares nothing.
    let mut g = c.benchmark_group("ndim_contended");
    let stop = Arc::new(AtomicBool::new(false));
    let other = others[0] as usize;
    let other_boxed = Box::into_raw(Box::new(
        Tensor::new(DType::F32, &[2, 3], Init::Zeros).expect("tensor"),
    )) as usize;
    let background = |use_registry: bool| {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            let mut n = 0usize;
            while !stop.load(Ordering::Relaxed) {
                // SAFETY: live handle / live Box.
                unsafe {
                    if use_registry {
                        black_box(bc_tensor_ndim(other as *const bc_tensor, &mut n));
                    } else {
                        black_box(boxed_ndim(other_boxed as *const Tensor, &mut n));
                    }
                }
            }
        })
    };
    for use_registry in [true, false] {
        stop.store(false, Ordering::Relaxed);
        let t = background(use_registry);
        let name = if use_registry {
            "registry"
        } else {
            "boxed_pointer"
        };
        g.bench_function(name, |b| {
            // SAFETY: live handle / live Box; valid out-pointer.
            b.iter(|| unsafe {
                if use_registry {
                    bc_tensor_ndim(black_box(h), &mut n)
                } else {
                    boxed_ndim(black_box(boxed), &mut n)
                }
            })
        });
        stop.store(true, Ordering::Relaxed);
        t.join().expect("background thread");
    }
    g.finish();

    // A whole small operation: bc_add + bc_tensor_free vs the engine call it wraps.
    let mut g = c.benchmark_group("add_1_element");
    let (a, b1) = (f32_tensor(&[1]), f32_tensor(&[1]));
    let ea = Tensor::new(DType::F32, &[1], Init::Fill(1.0)).expect("tensor");
    let eb = Tensor::new(DType::F32, &[1], Init::Fill(1.0)).expect("tensor");
    g.bench_function("c_api", |b| {
        b.iter(|| {
            let mut out = ptr::null_mut();
            // SAFETY: valid pointers.
            let st = unsafe { bc_add(black_box(a), black_box(b1), &mut out) };
            bc_tensor_free(out);
            st
        })
    });
    g.bench_function("engine", |b| {
        b.iter(|| {
            let r = ops::binary(
                BinaryOp::Add,
                black_box(&ea),
                black_box(&eb),
                Options::default(),
            );
            drop(black_box(r))
        })
    });
    g.finish();

    for t in others.into_iter().chain([h, a, b1]) {
        bc_tensor_free(t);
    }
    // SAFETY: made with Box::into_raw above and not freed since.
    unsafe {
        drop(Box::from_raw(boxed));
        drop(Box::from_raw(other_boxed as *mut Tensor));
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(50);
    targets = lookup
}
criterion_main!(benches);
