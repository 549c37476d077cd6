//! Regression tests for every failure the reliability work found, one readable test
//! per bug; the fuzzer inputs that found them are kept in `fuzz/corpus/api/` as well.
//!
//! Fixed:
//! * slice with a huge step: `(stop - start + step - 1)` overflowed. Debug builds panicked
//!   (`BC_ERR_INTERNAL`); release builds made a view of `usize::MAX` elements over 4, and an
//!   in-place operation on it with 3 worker threads wrote wild memory (SIGBUS).
//! * `bc_tensor_wrap` of no bytes (`nbytes` 0, data NULL or unaligned) was refused as misaligned.
//! * tensors with no elements skip every size check, so their shapes, strides and offsets may
//!   make products that overflow; later arithmetic on them (`Plan::new`'s stride * size,
//!   `Tensor::data_ptr`'s offset * itemsize, `Tensor::numel`, slice offsets) panicked in debug
//!   builds (`BC_ERR_INTERNAL` for a perfectly valid empty tensor) and wrapped in release builds.
//!   Empty results and copies now return before any geometry is computed, `data_ptr` wraps,
//!   the overlap check saturates, and a slice offset above `i64::MAX` is `BC_ERR_OVERFLOW`.
//! * the element-count check multiplied left to right: `[2^62, 2^62, 0]` was refused as an
//!   overflow while `[0, 2^62, 2^62]` was accepted, so a permuted valid empty tensor could not be
//!   cloned (debug and release). A 0 anywhere now makes 0.
//! * a binary operation whose result is empty still converted its inputs at their full size
//!   (`BC_ERR_ALLOC`/`BC_ERR_OVERFLOW` for a broadcast input, or gigabytes of needless work).
//! * an empty written-to tensor with a stride-0 dimension (an expanded `[0, 2]` view) was refused
//!   as internally overlapping, although it has no elements to share a location
//!   (docs/semantics.md, section 8; PyTorch counts an empty tensor as contiguous). It is now
//!   checked like any other target.
//! * a 0-d tensor refused `transpose(0, -1)` with a contradictory message ("expected to be in
//!   range of [-1, 0], but got 0"); PyTorch takes dims 0 and -1 for a 0-d tensor and returns it
//!   unchanged. `slice` on a 0-d tensor now gives PyTorch's own refusal.
//! * the three-operand exports with a number (`bc_lerp_scalar`, `bc_addcmul`, `bc_addcdiv`,
//!   `bc_clamp_scalar`) read the number before the out-pointer: an unknown `kind` returned
//!   `BC_ERR_INVALID_ARG` without writing NULL to `*out` (the header promises NULL on failure),
//!   and a NULL `out` with such a number gave `BC_ERR_INVALID_ARG` where every other export
//!   checks `out` first (`BC_ERR_NULL_ARG`). Found by the fuzzer's three-operand families.
//! * `bc_logsumexp` with nothing to reduce made its -inf result as `zeros - inf`, whose layout for
//!   an empty result is the elementwise rule's (`[1, 0]` for `[0, 1]`), where PyTorch's result,
//!   resized by `sum_out`, is row-major (`[1, 1]`). Found by the fuzzer's reductions family.
//! * `bc_var`/`bc_std` of an input with no elements and a negative correction (degrees of
//!   freedom left, but nothing to reduce) gave 0 (an empty sum over `n - correction`); PyTorch's
//!   trivial reduction fills NaN whenever the input is empty. Found by the fuzzer's reductions
//!   family.
//! * handles were `slot + 1` in the low half, so small integers named the first live tensors
//!   (tested in `handle_registry.rs`, `small_integers_are_not_handles`).

use broadcast::ffi::*;
use std::ffi::c_void;
use std::ptr;
use testkit::raw::*;

#[test]
fn slice_with_a_huge_step_keeps_one_element() {
    let _g = serial();
    let t = f64_tensor(&[4], &[1.0, 2.0, 3.0, 4.0]);
    let one = f64_tensor(&[], &[1.0]);
    for threads in [1usize, 3] {
        assert_eq!(bc_set_num_threads(threads), BC_OK);
        assert_eq!(bc_set_parallel_threshold(1), BC_OK);
        for step in [i64::MAX, i64::MAX - 1, 1 << 62, 5] {
            let mut v = ptr::null_mut();
            // SAFETY: valid out-pointer.
            let st = unsafe { bc_tensor_slice(t, 0, 0, 2, step, &mut v) };
            assert_eq!(st, BC_OK, "step {step}: {}", last_message());
            assert_eq!(shape_of(v), vec![1], "step {step}");
            // The in-place operation that wrote wild memory in release builds.
            assert_eq!(bc_add_inplace(v, one), BC_OK, "{}", last_message());
            bc_tensor_free(v);
        }
    }
    assert_eq!(bc_set_num_threads(0), BC_OK);
    assert_eq!(bc_set_parallel_threshold(0), BC_OK);
    // Only element 0 was touched, 8 times.
    assert_eq!(values_f64(t), vec![9.0, 2.0, 3.0, 4.0]);
    bc_tensor_free(t);
    bc_tensor_free(one);
}

#[test]
fn slice_whose_new_stride_overflows_is_an_overflow_error() {
    let _g = serial();
    let t = f64_tensor(&[4], &[1.0, 2.0, 3.0, 4.0]);
    // A view whose only dimension has 2 elements at stride 3: step 2^62 keeps one element (no
    // stride needed), but a stride of 2^62 * 3 for two elements can never be made.
    let mut v = ptr::null_mut();
    let (shape, strides) = ([2i64], [3i64]);
    // SAFETY: valid pointers.
    let st = unsafe { bc_tensor_as_strided(t, shape.as_ptr(), strides.as_ptr(), 1, 0, &mut v) };
    assert_eq!(st, BC_OK, "{}", last_message());
    let mut w = ptr::null_mut();
    // SAFETY: valid out-pointer.
    let st = unsafe { bc_tensor_slice(v, 0, 0, 2, 1 << 62, &mut w) };
    assert_eq!(st, BC_OK);
    assert_eq!(values_f64(w), vec![1.0]);
    bc_tensor_free(w);
    bc_tensor_free(v);
    bc_tensor_free(t);
}

#[test]
fn wrapping_no_bytes_needs_no_alignment() {
    let _g = serial();
    let mut backing = [0u64; 4];
    let odd = (backing.as_mut_ptr() as *mut u8).wrapping_add(1) as *mut c_void;
    let shape = [0i64, 3];
    for dtype in 0..BC_DTYPE_COUNT {
        for data in [ptr::null_mut(), odd] {
            let mut out = ptr::null_mut();
            // SAFETY: no bytes are ever read through `data`.
            let st = unsafe {
                bc_tensor_wrap(
                    dtype,
                    data,
                    0,
                    shape.as_ptr(),
                    ptr::null(),
                    2,
                    0,
                    None,
                    ptr::null_mut(),
                    &mut out,
                )
            };
            assert_eq!(
                st,
                BC_OK,
                "dtype {dtype}, data {data:p}: {}",
                last_message()
            );
            assert_eq!(shape_of(out), vec![0, 3]);
            bc_tensor_free(out);
        }
    }
    // With bytes to read, misalignment is still refused.
    let mut out = ptr::null_mut();
    let one = [1i64];
    // SAFETY: 8 valid bytes at `odd`.
    let st = unsafe {
        bc_tensor_wrap(
            BC_DTYPE_INT32,
            odd,
            8,
            one.as_ptr(),
            ptr::null(),
            1,
            0,
            None,
            ptr::null_mut(),
            &mut out,
        )
    };
    assert_eq!(st, BC_ERR_INVALID_ARG);
    assert!(out.is_null());
}

/// Every call that reads or copies an empty tensor must succeed, whatever its other sizes.
fn empty_tensor_is_usable(t: *mut bc_tensor) {
    let mut buf = [0u8; 8];
    // SAFETY (each call): valid pointers.
    unsafe {
        assert_eq!(
            bc_tensor_copy_to(t, buf.as_mut_ptr().cast(), 8),
            BC_OK,
            "copy_to: {}",
            last_message()
        );
        let mut c = ptr::null_mut();
        assert_eq!(
            bc_tensor_clone(t, &mut c),
            BC_OK,
            "clone: {}",
            last_message()
        );
        bc_tensor_free(c);
        let mut s = ptr::null_mut();
        assert_eq!(bc_add(t, t, &mut s), BC_OK, "add: {}", last_message());
        bc_tensor_free(s);
    }
}

#[test]
fn empty_tensor_with_huge_sizes_is_usable() {
    let _g = serial();
    let shape = [0i64, i64::MAX - 1, 2];
    let mut t = ptr::null_mut();
    // SAFETY: valid pointers.
    let st = unsafe { bc_tensor_zeros(BC_DTYPE_UINT8, shape.as_ptr(), 3, &mut t) };
    assert_eq!(st, BC_OK);
    empty_tensor_is_usable(t);
    bc_tensor_free(t);
}

#[test]
fn empty_view_with_a_huge_offset_is_usable() {
    let _g = serial();
    let base = f64_tensor(&[4], &[1.0, 2.0, 3.0, 4.0]);
    let (shape, strides) = ([3i64, 0, 1], [3i64, 0, 7]);
    let mut v = ptr::null_mut();
    // SAFETY: valid pointers.
    let st = unsafe {
        bc_tensor_as_strided(base, shape.as_ptr(), strides.as_ptr(), 3, i64::MAX, &mut v)
    };
    assert_eq!(st, BC_OK, "{}", last_message());
    empty_tensor_is_usable(v);
    bc_tensor_free(v);
    bc_tensor_free(base);
}

#[test]
fn empty_result_needs_no_conversion_of_inputs() {
    let _g = serial();
    let (s01, s1, big) = ([0i64, 1], [1i64], [1i64, 1 << 61]);
    let (mut a, mut one, mut b, mut o) = (
        ptr::null_mut(),
        ptr::null_mut(),
        ptr::null_mut(),
        ptr::null_mut(),
    );
    // SAFETY (each call): valid pointers.
    unsafe {
        assert_eq!(
            bc_tensor_zeros(BC_DTYPE_FLOAT64, s01.as_ptr(), 2, &mut a),
            BC_OK
        );
        assert_eq!(
            bc_tensor_ones(BC_DTYPE_FLOAT32, s1.as_ptr(), 1, &mut one),
            BC_OK
        );
        assert_eq!(bc_tensor_expand(one, big.as_ptr(), 2, &mut b), BC_OK);
        // [0, 1] + [1, 2^61] is an empty [0, 2^61] float64 tensor: nothing to convert.
        let st = bc_add(a, b, &mut o);
        assert_eq!(st, BC_OK, "{}", last_message());
        assert_eq!(shape_of(o), vec![0, 1 << 61]);
    }
    for t in [a, one, b, o] {
        bc_tensor_free(t);
    }
}

#[test]
fn element_count_check_does_not_depend_on_order() {
    let _g = serial();
    let z = [0i64, 1 << 62, 1 << 62];
    let (mut t, mut p, mut c, mut u) = (
        ptr::null_mut(),
        ptr::null_mut(),
        ptr::null_mut(),
        ptr::null_mut(),
    );
    let perm = [1i64, 2, 0];
    let z_last = [1i64 << 62, 1 << 62, 0];
    // SAFETY (each call): valid pointers.
    unsafe {
        assert_eq!(
            bc_tensor_zeros(BC_DTYPE_UINT8, z.as_ptr(), 3, &mut t),
            BC_OK
        );
        assert_eq!(bc_tensor_permute(t, perm.as_ptr(), 3, &mut p), BC_OK);
        assert_eq!(
            bc_tensor_clone(p, &mut c),
            BC_OK,
            "clone: {}",
            last_message()
        );
        let st = bc_tensor_zeros(BC_DTYPE_UINT8, z_last.as_ptr(), 3, &mut u);
        assert_eq!(st, BC_OK, "zeros [2^62, 2^62, 0]: {}", last_message());
    }
    for h in [t, p, c, u] {
        bc_tensor_free(h);
    }
}

#[test]
fn empty_expanded_target_does_not_overlap_itself() {
    let _g = serial();
    let one = full(BC_DTYPE_FLOAT32, &[1, 1], 1.0);
    let empty = full(BC_DTYPE_FLOAT32, &[0, 2], 1.0);
    let bigger = full(BC_DTYPE_FLOAT32, &[3, 2], 1.0);
    let mut target = ptr::null_mut();
    // SAFETY (each call): valid pointers.
    unsafe {
        // [0, 2] with stride 0 on both dimensions: no elements, so nothing overlaps.
        assert_eq!(
            bc_tensor_expand(one, [0i64, 2].as_ptr(), 2, &mut target),
            BC_OK
        );
        assert_eq!(bc_add_inplace(target, empty), BC_OK, "{}", last_message());
        assert_eq!(
            bc_add_out(empty, empty, target),
            BC_OK,
            "{}",
            last_message()
        );
        // A shape mismatch is then reported as such, not as an overlap.
        assert_eq!(
            bc_add_inplace(target, bigger),
            BC_ERR_SHAPE,
            "{}",
            last_message()
        );
    }
    for t in [one, empty, target, bigger] {
        bc_tensor_free(t);
    }
}

#[test]
fn zero_d_tensors_take_dims_0_and_minus_1_like_pytorch() {
    let _g = serial();
    let t = f64_tensor(&[], &[5.0]);
    for (d0, d1) in [(0, 0), (0, -1), (-1, 0), (-1, -1)] {
        let mut v = ptr::null_mut();
        // SAFETY: valid out-pointer.
        let st = unsafe { bc_tensor_transpose(t, d0, d1, &mut v) };
        assert_eq!(st, BC_OK, "transpose({d0}, {d1}): {}", last_message());
        assert_eq!(shape_of(v), Vec::<i64>::new());
        assert_eq!(values_f64(v), vec![5.0]);
        bc_tensor_free(v);
    }
    let mut v = ptr::null_mut();
    // SAFETY: valid out-pointer.
    let st = unsafe { bc_tensor_transpose(t, 1, 0, &mut v) };
    assert_eq!(st, BC_ERR_INVALID_ARG);
    assert_eq!(
        last_message(),
        "Dimension out of range (expected to be in range of [-1, 0], but got 1)"
    );
    for dim in [0, -1] {
        // SAFETY: valid out-pointer.
        let st = unsafe { bc_tensor_slice(t, dim, 0, 1, 1, &mut v) };
        assert_eq!(st, BC_ERR_INVALID_ARG);
        assert!(v.is_null());
        assert_eq!(
            last_message(),
            "slice() cannot be applied to a 0-dim tensor."
        );
    }
    bc_tensor_free(t);
}

#[test]
fn ternary_number_refusals_write_null_to_out_and_check_out_first() {
    let _g = serial();
    let x = f64_tensor(&[2], &[1.0, 2.0]);
    let bad = bc_scalar {
        kind: 7,
        b: false,
        i: 0,
        f: 0.5,
    };
    let sentinel = 0x55 as *mut bc_tensor;
    type Call = fn(*mut bc_tensor, bc_scalar, *mut *mut bc_tensor) -> i32;
    let calls: [(&str, Call); 4] = [
        // SAFETY (each): live handles; `o` NULL or valid for one write; the bounds live numbers.
        ("lerp_scalar", |x, s, o| unsafe {
            bc_lerp_scalar(x, x, s, o)
        }),
        ("addcmul", |x, s, o| unsafe { bc_addcmul(x, x, x, s, o) }),
        ("addcdiv", |x, s, o| unsafe { bc_addcdiv(x, x, x, s, o) }),
        ("clamp_scalar", |x, s, o| unsafe {
            bc_clamp_scalar(x, &s, ptr::null(), o)
        }),
    ];
    for (name, f) in calls {
        let mut out = sentinel;
        assert_eq!(f(x, bad, &mut out), BC_ERR_INVALID_ARG, "{name}");
        assert!(out.is_null(), "{name}: *out left as {out:p}");
        assert_eq!(
            f(x, bad, ptr::null_mut()),
            BC_ERR_NULL_ARG,
            "{name} with NULL out"
        );
    }
    bc_tensor_free(x);
}

#[test]
fn logsumexp_of_nothing_is_row_major() {
    let _g = serial();
    let strides = |t: *const bc_tensor| {
        let mut s = [0i64; 2];
        // SAFETY: a live tensor of two dimensions; a buffer of two entries.
        assert_eq!(unsafe { bc_tensor_strides(t, s.as_mut_ptr(), 2) }, BC_OK);
        s
    };
    for (shape, want_shape) in [([0i64, 2], vec![0i64, 1]), ([3, 0], vec![3, 1])] {
        let t = full(BC_DTYPE_INT16, &shape, 0.0);
        let mut r = ptr::null_mut();
        // SAFETY: dims valid for one read; out valid.
        let st = unsafe { bc_logsumexp(t, [1i64].as_ptr(), 1, true, &mut r) };
        assert_eq!(st, BC_OK, "{}", last_message());
        assert_eq!(shape_of(r), want_shape);
        assert_eq!(strides(r), [1, 1], "{shape:?}");
        assert!(values_f64(r).iter().all(|&v| v == f64::NEG_INFINITY));
        bc_tensor_free(r);
        bc_tensor_free(t);
    }
}

#[test]
fn var_of_nothing_is_nan_whatever_the_correction() {
    let _g = serial();
    for (shape, dims) in [(vec![2i64, 0, 2], vec![]), (vec![3, 0], vec![1i64])] {
        let t = full(BC_DTYPE_FLOAT64, &shape, 1.0);
        for correction in [-1.0, -0.5, 0.0, 1.0] {
            for std in [false, true] {
                let mut r = ptr::null_mut();
                // SAFETY: dims valid for their length; out valid.
                let st = unsafe {
                    match std {
                        false => bc_var(t, dims.as_ptr(), dims.len(), correction, false, &mut r),
                        true => bc_std(t, dims.as_ptr(), dims.len(), correction, false, &mut r),
                    }
                };
                assert_eq!(st, BC_OK, "{}", last_message());
                let v = values_f64(r);
                assert!(
                    !v.is_empty() && v.iter().all(|x| x.is_nan()),
                    "{shape:?} {correction} {std}: {v:?}"
                );
                bc_tensor_free(r);
            }
        }
        bc_tensor_free(t);
    }
}

/// `var` and `std` of an empty tensor whose other sizes multiply past `usize`: the reduction
/// factor counted the result's elements with a plain product, which overflowed (a panic, reported
/// as `BC_ERR_INTERNAL`) before the 0 among them was seen. The result is empty, as PyTorch's.
#[test]
fn var_and_std_of_an_empty_tensor_with_huge_sizes() {
    let _g = serial();
    let shape = [i64::MAX - 1, 3, 3, 0];
    let mut t = ptr::null_mut();
    // SAFETY: valid pointers.
    let st = unsafe { bc_tensor_zeros(BC_DTYPE_FLOAT16, shape.as_ptr(), 4, &mut t) };
    assert_eq!(st, BC_OK, "{}", last_message());
    let dims = [2i64];
    for f in [bc_var, bc_std] {
        let mut r = ptr::null_mut();
        // SAFETY: valid pointers.
        let st = unsafe { f(t, dims.as_ptr(), 1, 2.0, false, &mut r) };
        assert_eq!(st, BC_OK, "{}", last_message());
        let (mut nd, mut sizes) = (0usize, [0i64; 4]);
        // SAFETY: a live result; a buffer of 4 sizes.
        unsafe {
            assert_eq!(bc_tensor_ndim(r, &mut nd), BC_OK);
            assert_eq!(bc_tensor_shape(r, sizes.as_mut_ptr(), 4), BC_OK);
        }
        assert_eq!(&sizes[..nd], &[i64::MAX - 1, 3, 0]);
        bc_tensor_free(r);
    }
    bc_tensor_free(t);
}

/// A reduction of an empty tensor over its empty dimension can have more elements than the input
/// (none): here 2 x 2^62 x 2, too many to count. `logsumexp`, `var` and `std` counted them with a
/// plain product (a panic, `BC_ERR_INTERNAL`); they refuse the result as making it refuses it.
#[test]
fn a_reduction_over_an_empty_dimension_with_a_result_too_large_to_count() {
    let _g = serial();
    let shape = [2i64, 0, 1 << 62, 2, 1];
    let mut t = ptr::null_mut();
    // SAFETY: valid pointers.
    let st = unsafe { bc_tensor_zeros(BC_DTYPE_FLOAT32, shape.as_ptr(), 5, &mut t) };
    assert_eq!(st, BC_OK, "{}", last_message());
    let dims = [-1i64, -4];
    let mut r = ptr::null_mut();
    // SAFETY (each call): valid pointers.
    let st = unsafe { bc_logsumexp(t, dims.as_ptr(), 2, false, &mut r) };
    assert_eq!(st, BC_ERR_OVERFLOW, "logsumexp: {}", last_message());
    assert!(r.is_null());
    for f in [bc_var, bc_std] {
        let st = unsafe { f(t, dims.as_ptr(), 2, 1.0, false, &mut r) };
        assert_eq!(st, BC_ERR_OVERFLOW, "{}", last_message());
        assert!(r.is_null());
    }
    bc_tensor_free(t);
}
