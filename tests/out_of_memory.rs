//! Memory: a tensor too large to allocate gives `BC_ERR_ALLOC`, not an abort; size and
//! byte-count products that overflow give `BC_ERR_OVERFLOW`; the process keeps working afterwards.
//!
//! The 2^40-element tests run in a child process whose address space is limited (`RLIMIT_AS`), so
//! the allocation fails the same way on every machine whatever its overcommit policy (with
//! `vm.overcommit_memory=1` an 8 TiB request could otherwise succeed and then be touched). A child
//! that aborts (Rust's `handle_alloc_error`, or a crash) is reported as killed by a signal.
//! The in-process tests use requests of 2^62 bytes, which no x86-64 or aarch64 address space can
//! satisfy, so they fail everywhere without a limit.

use broadcast::ffi::*;
use std::ptr;
use testkit::raw::*;

/// Address-space limit for the child processes: far more than the tests need, far less than
/// 2^40 float64 elements (8 TiB).
const CHILD_AS_LIMIT: u64 = 4 << 30;

const TERA_ELEMS: i64 = 1 << 40;

type Ctor = unsafe extern "C" fn(i32, *const i64, usize, *mut *mut bc_tensor) -> i32;

unsafe extern "C" fn full_pi(
    dtype: i32,
    shape: *const i64,
    ndim: usize,
    out: *mut *mut bc_tensor,
) -> i32 {
    // SAFETY: forwarded.
    unsafe { bc_tensor_full(dtype, shape, ndim, 3.25, out) }
}

const CTORS: [(&str, Ctor); 4] = [
    ("empty", bc_tensor_empty),
    ("zeros", bc_tensor_zeros),
    ("ones", bc_tensor_ones),
    ("full", full_pi),
];

/// Checks that `f` fails with `expected`, sets its out-handle to NULL, and records the failure.
fn expect_failure(what: &str, expected: i32, f: impl FnOnce(&mut *mut bc_tensor) -> i32) {
    bc_last_error_clear();
    let mut out = 0x1234 as *mut bc_tensor;
    let st = f(&mut out);
    assert_eq!(
        st,
        expected,
        "{what}: status {st} ({}), expected {expected}",
        last_message()
    );
    assert!(out.is_null(), "{what}: out-handle not NULL after failure");
    assert_eq!(bc_last_error_status(), expected, "{what}: last error");
    assert!(!last_message().is_empty(), "{what}: no message");
}

fn expect_alloc(what: &str, bytes: u64, f: impl FnOnce(&mut *mut bc_tensor) -> i32) {
    expect_failure(what, BC_ERR_ALLOC, f);
    let info = last_info();
    assert_eq!(info.kind, BC_ERROR_KIND_ALLOC, "{what}");
    assert_eq!(info.size_a as u64, bytes, "{what}: bytes requested");
    assert!(
        last_message().contains(&bytes.to_string()),
        "{what}: {}",
        last_message()
    );
}

/// A 1-element float64 tensor expanded (a view, no allocation) to `shape`.
fn expanded(shape: &[i64]) -> *mut bc_tensor {
    let one = f64_tensor(&[1], &[2.0]);
    let mut view = ptr::null_mut();
    // SAFETY: valid pointers.
    let st = unsafe { bc_tensor_expand(one, shape.as_ptr(), shape.len(), &mut view) };
    assert_eq!(st, BC_OK, "expand: {}", last_message());
    bc_tensor_free(one);
    view
}

#[test]
fn tera_element_tensor_is_an_alloc_error_not_an_abort() {
    const NAME: &str = "tera_element_tensor_is_an_alloc_error_not_an_abort";
    if !is_child(NAME) {
        run_in_child(NAME, Some(CHILD_AS_LIMIT));
        return;
    }
    let shape = [TERA_ELEMS];
    let bytes = (TERA_ELEMS as u64) * 8;
    for (name, ctor) in CTORS {
        // SAFETY: valid pointers.
        expect_alloc(name, bytes, |o| unsafe {
            ctor(BC_DTYPE_FLOAT64, shape.as_ptr(), 1, o)
        });
        assert_library_works();
    }
    // Same request in other shapes: [2^20, 2^20], [2^10, 2^10, 2^20].
    let shape2 = [1i64 << 20, 1 << 20];
    // SAFETY: valid pointers.
    expect_alloc("zeros 2-d", bytes, |o| unsafe {
        bc_tensor_zeros(BC_DTYPE_FLOAT64, shape2.as_ptr(), 2, o)
    });
    let shape3 = [1i64 << 10, 1 << 10, 1 << 20];
    // SAFETY: valid pointers.
    expect_alloc("ones 3-d", bytes, |o| unsafe {
        bc_tensor_ones(BC_DTYPE_FLOAT64, shape3.as_ptr(), 3, o)
    });

    // Operations whose result is that large: a 2^40-element expanded view is fine (no memory),
    // materialising it or computing with it is an allocation failure.
    let big = expanded(&[TERA_ELEMS]);
    let mut n = 0i64;
    // SAFETY: valid out-pointer.
    assert_eq!(unsafe { bc_tensor_numel(big, &mut n) }, BC_OK);
    assert_eq!(n, TERA_ELEMS);
    let scalar = f64_tensor(&[], &[1.0]);
    // SAFETY (each call): valid out-pointers.
    unsafe {
        expect_alloc("clone", bytes, |o| bc_tensor_clone(big, o));
        expect_alloc("contiguous", bytes, |o| bc_tensor_contiguous(big, o));
        expect_alloc("to_dtype", bytes, |o| {
            bc_tensor_to_dtype(big, BC_DTYPE_INT64, o)
        });
        expect_alloc("to_dtype float32", bytes / 2, |o| {
            bc_tensor_to_dtype(big, BC_DTYPE_FLOAT32, o)
        });
        for op in [BC_OP_ADD, BC_OP_SUB, BC_OP_MUL, BC_OP_DIV] {
            expect_alloc("binary", bytes, |o| bc_binary(op, big, scalar, o));
            expect_alloc("binary reversed", bytes, |o| bc_binary(op, scalar, big, o));
        }
    }
    // An in-place operation whose other operand needs a converted copy of a huge input cannot be
    // built (the target must exist), so the out-of-place forms above are the allocating paths.
    bc_tensor_free(big);
    bc_tensor_free(scalar);
    assert_library_works();
}

/// Allocate until memory runs out, then free everything: the failure is a status, and afterwards
/// the same allocations succeed again.
#[test]
fn exhausting_memory_then_recovering() {
    const NAME: &str = "exhausting_memory_then_recovering";
    if !is_child(NAME) {
        run_in_child(NAME, Some(CHILD_AS_LIMIT));
        return;
    }
    let chunk = [32i64 << 20]; // 256 MiB of float64 each
    let mut held = Vec::new();
    let mut failed = false;
    for _ in 0..64 {
        let mut t = ptr::null_mut();
        // SAFETY: valid pointers.
        let st = unsafe { bc_tensor_empty(BC_DTYPE_FLOAT64, chunk.as_ptr(), 1, &mut t) };
        if st == BC_ERR_ALLOC {
            assert!(t.is_null());
            failed = true;
            break;
        }
        assert_eq!(st, BC_OK, "{}", last_message());
        held.push(t);
    }
    assert!(failed, "64 x 256 MiB fitted under a 4 GiB limit?");
    assert!(!held.is_empty(), "not even one 256 MiB tensor fitted");
    let n = held.len();
    for t in held.drain(..) {
        bc_tensor_free(t);
    }
    assert_library_works();
    // The memory really came back: as many chunks fit again.
    for _ in 0..n {
        let mut t = ptr::null_mut();
        // SAFETY: valid pointers.
        let st = unsafe { bc_tensor_empty(BC_DTYPE_FLOAT64, chunk.as_ptr(), 1, &mut t) };
        assert_eq!(st, BC_OK, "after freeing: {}", last_message());
        held.push(t);
    }
    for t in held {
        bc_tensor_free(t);
    }
    println!("{n} chunks of 256 MiB fitted before BC_ERR_ALLOC");
}

/// Requests beyond any address space (2^62 bytes) fail as allocation errors in this process too.
#[test]
fn impossible_allocations_in_process() {
    let _g = serial();
    let shape = [1i64 << 29, 1 << 30]; // 2^59 float64 = 2^62 bytes, below isize::MAX
    for (name, ctor) in CTORS {
        // SAFETY: valid pointers.
        expect_alloc(name, 1 << 62, |o| unsafe {
            ctor(BC_DTYPE_FLOAT64, shape.as_ptr(), 2, o)
        });
    }
    let big = expanded(&[1 << 59]);
    // SAFETY: valid out-pointer.
    expect_alloc("clone", 1 << 62, |o| unsafe { bc_tensor_clone(big, o) });
    bc_tensor_free(big);
    assert_library_works();
}

#[test]
fn overflowing_sizes_are_overflow_errors() {
    let _g = serial();
    let cases: &[(&str, i32, &[i64])] = &[
        ("numel wraps u64", BC_DTYPE_UINT8, &[1 << 32, 1 << 32]),
        ("numel > isize::MAX", BC_DTYPE_UINT8, &[1 << 31, 1 << 31, 2]),
        ("numel i64::MAX * 2", BC_DTYPE_BOOL, &[i64::MAX, 2]),
        (
            "three huge dims",
            BC_DTYPE_INT8,
            &[i64::MAX, i64::MAX, i64::MAX],
        ),
        ("bytes wrap u64", BC_DTYPE_FLOAT64, &[1 << 61]),
        ("bytes > isize::MAX", BC_DTYPE_FLOAT64, &[1 << 60]),
        ("bytes > isize::MAX, int16", BC_DTYPE_INT16, &[1 << 62]),
        ("bytes at isize::MAX", BC_DTYPE_UINT8, &[i64::MAX]),
    ];
    for &(what, dtype, shape) in cases {
        for (name, ctor) in CTORS {
            // SAFETY: valid pointers.
            expect_failure(&format!("{name} {what}"), BC_ERR_OVERFLOW, |o| unsafe {
                ctor(dtype, shape.as_ptr(), shape.len(), o)
            });
            assert_eq!(last_info().kind, BC_ERROR_KIND_OVERFLOW);
        }
        if shape == [i64::MAX] {
            continue; // a valid byte count (isize::MAX): only the 64-byte aligned layout overflows
        }
        let data = [0u8; 8];
        // SAFETY: valid pointers; the byte count is checked against the shape first.
        expect_failure(&format!("from_data {what}"), BC_ERR_OVERFLOW, |o| unsafe {
            bc_tensor_from_data(
                dtype,
                shape.as_ptr(),
                shape.len(),
                data.as_ptr().cast(),
                8,
                o,
            )
        });
    }

    // Views whose element count overflows.
    let one = f64_tensor(&[1, 1], &[1.0]);
    let sizes = [1i64 << 62, 4];
    // SAFETY (each call): valid pointers.
    unsafe {
        expect_failure("expand numel", BC_ERR_OVERFLOW, |o| {
            bc_tensor_expand(one, sizes.as_ptr(), 2, o)
        });
        let sizes3 = [1i64 << 40, 1 << 40, 1 << 40];
        expect_failure("expand 3 dims", BC_ERR_OVERFLOW, |o| {
            bc_tensor_expand(one, sizes3.as_ptr(), 3, o)
        });
    }
    // Two views each fine alone whose broadcast is too big.
    let row = expanded(&[1, 1 << 40]);
    let col = expanded(&[1 << 40, 1]);
    let mut outs = [ptr::null_mut(); 2];
    let ins = [row as *const bc_tensor, col as *const bc_tensor];
    // SAFETY (each call): valid pointers.
    unsafe {
        expect_failure("binary result numel", BC_ERR_OVERFLOW, |o| {
            bc_add(row, col, o)
        });
        expect_failure("broadcast_tensors", BC_ERR_OVERFLOW, |o| {
            *o = ptr::null_mut(); // no single out-handle: `outs` is checked below
            bc_tensor_broadcast_tensors(ins.as_ptr(), 2, outs.as_mut_ptr())
        });
        assert_eq!(outs, [ptr::null_mut(); 2]);
    }
    // A view whose byte count overflows although its element count does not.
    let wide = expanded(&[1 << 61]);
    let mut buf = [0u8; 16];
    // SAFETY (each call): valid pointers; buf holds 16 bytes.
    unsafe {
        expect_failure("contiguous bytes", BC_ERR_OVERFLOW, |o| {
            bc_tensor_contiguous(wide, o)
        });
        expect_failure("add bytes", BC_ERR_OVERFLOW, |o| bc_add(wide, wide, o));
        expect_failure("copy_to bytes", BC_ERR_OVERFLOW, |o| {
            *o = ptr::null_mut(); // no out-handle
            bc_tensor_copy_to(wide, buf.as_mut_ptr().cast(), buf.len())
        });
    }
    // Strided views and wrapped memory whose extent overflows.
    let base = f64_tensor(&[4], &[1.0, 2.0, 3.0, 4.0]);
    let shape = [2i64, 2];
    let mut storage = [0f64; 4];
    for (what, strides, offset) in [
        ("stride i64::MAX", [i64::MAX, 1], 0i64),
        ("stride 2^62", [1 << 62, 1], 0),
        ("offset i64::MAX", [1, 1], i64::MAX),
        ("offset + extent", [1 << 61, 1], 1 << 62),
    ] {
        // SAFETY (each call): valid pointers; `storage` outlives the failed wrap.
        unsafe {
            let st = bc_tensor_as_strided(
                base,
                shape.as_ptr(),
                strides.as_ptr(),
                2,
                offset,
                &mut ptr::null_mut(),
            );
            assert!(
                st == BC_ERR_OVERFLOW || st == BC_ERR_INVALID_ARG,
                "as_strided {what}: {st} {}",
                last_message()
            );
            expect_failure(&format!("wrap {what}"), st, |o| {
                bc_tensor_wrap(
                    BC_DTYPE_FLOAT64,
                    storage.as_mut_ptr().cast(),
                    32,
                    shape.as_ptr(),
                    strides.as_ptr(),
                    2,
                    offset,
                    None,
                    ptr::null_mut(),
                    o,
                )
            });
        }
    }
    for t in [one, row, col, wide, base] {
        bc_tensor_free(t);
    }
    storage[0] = 1.0;
    assert_eq!(storage[0], 1.0);
    assert_library_works();
}

/// Reproducers of memory exhaustion: memory filled with `bc_tensor_empty` until
/// `BC_ERR_ALLOC` (then with ever smaller tensors, down to one element, so the heap is
/// exhausted), in a child process with a limited address space. Each call the report saw abort
/// must now succeed or return `BC_ERR_ALLOC`; afterwards everything is freed and the library
/// works. (`tests/fault_injection.rs` fails every allocation of every export one at a time.)
#[test]
fn exhausting_memory_the_reported_calls_return_statuses() {
    const NAME: &str = "exhausting_memory_the_reported_calls_return_statuses";
    if !is_child(NAME) {
        let out = run_in_child(NAME, Some(CHILD_AS_LIMIT));
        let line = out.lines().find(|l| l.contains("reported calls"));
        println!("{}", line.unwrap_or("the child printed no summary"));
        return;
    }
    let n = 1i64 << 20;
    let base = full(BC_DTYPE_FLOAT32, &[n], 1.0);
    let view = |shape: &[i64], strides: &[i64], offset: i64| {
        let mut v = ptr::null_mut();
        // SAFETY: valid pointers.
        let st = unsafe {
            bc_tensor_as_strided(
                base,
                shape.as_ptr(),
                strides.as_ptr(),
                shape.len(),
                offset,
                &mut v,
            )
        };
        assert_eq!(st, BC_OK, "{}", last_message());
        v
    };
    let even = view(&[n / 2], &[2], 0);
    let odd = view(&[n / 2], &[2], 1);
    let target = view(&[n / 2 - 1, 2], &[2, 3], 0);
    let src = full(BC_DTYPE_FLOAT32, &[n / 2 - 1, 2], 2.0);
    let small = f64_tensor(&[3], &[1.0, 2.0, 3.0]);
    let other = f64_tensor(&[2], &[1.0, 2.0]);

    // Fill memory: tensors of 256 MiB, then ever smaller, down to one element. (The test's own
    // lists have their room reserved first: growing them then would abort the test.)
    let mut held = Vec::with_capacity(1 << 20);
    let mut made = Vec::with_capacity(1024);
    let mut elems = 32i64 << 20;
    while elems >= 1 {
        loop {
            let mut t = ptr::null_mut();
            // SAFETY: valid pointers.
            let st = unsafe { bc_tensor_empty(BC_DTYPE_FLOAT64, [elems].as_ptr(), 1, &mut t) };
            if st != BC_OK {
                assert_eq!(st, BC_ERR_ALLOC);
                break;
            }
            held.push(t);
            assert!(held.len() < held.capacity());
        }
        elems /= 2;
    }
    let ok_or_alloc = |what: &str, st: i32| {
        assert!(st == BC_OK || st == BC_ERR_ALLOC, "{what}: status {st}");
        (st == BC_ERR_ALLOC) as usize
    };
    let mut refused = 0;
    refused += ok_or_alloc("add_inplace(even, odd)", bc_add_inplace(even, odd));
    refused += ok_or_alloc(
        "add_out into as_strided [2^19-1, 2]",
        bc_add_out(src, src, target),
    );
    for _ in 0..1024 {
        // New handles (views allocate nothing else) until a registry chunk is needed.
        let mut v = ptr::null_mut();
        // SAFETY: valid pointers.
        let st = unsafe { bc_tensor_expand(small, [2i64, 3].as_ptr(), 2, &mut v) };
        if st == BC_OK {
            made.push(v);
        } else {
            refused += ok_or_alloc("a new handle", st);
            break;
        }
    }
    let mut out = ptr::null_mut();
    // SAFETY (each call): valid pointers.
    unsafe {
        refused += ok_or_alloc("3-element add", bc_add(small, small, &mut out));
        bc_tensor_free(out);
        refused += ok_or_alloc("clone", bc_tensor_clone(small, &mut out));
        bc_tensor_free(out);
        let st = bc_add(small, other, &mut out);
        assert!(
            st == BC_ERR_SHAPE || st == BC_ERR_ALLOC,
            "failing add: {st}"
        );
        assert_eq!(bc_last_error_status(), st);
        let st = bc_tensor_to_dtype(small, 99, &mut out);
        assert!(
            st == BC_ERR_INVALID_ARG || st == BC_ERR_ALLOC,
            "bad dtype: {st}"
        );
    }
    for t in held.into_iter().chain(made) {
        bc_tensor_free(t);
    }
    for t in [base, even, odd, target, src, small, other] {
        bc_tensor_free(t);
    }
    assert_library_works();
    println!("{refused} of the reported calls got BC_ERR_ALLOC (the others had memory enough)");
}
