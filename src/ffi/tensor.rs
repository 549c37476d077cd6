//! Tensor handles: creation, release, queries, copies and views.
use super::boundary::{call, call_or};
use super::handle::{
    self, bc_tensor, dims_in, dims_out, hand_out, out_handle, slice_in, slice_out, write_out,
};
use super::status::FfiError;
use crate::engine::alloc::{try_box, try_collect, try_small_collect, try_vec};
use crate::engine::shape::{checked_nbytes, checked_numel, Strides};
use crate::engine::{ops, DType, Init, Tensor};
use std::ffi::{c_char, c_void};
use std::ptr::NonNull;

/// Element type codes (the `dtype` arguments). bool is one byte (0 or 1); float16 and bfloat16
/// are the 2-byte IEEE binary16 and bfloat16 bit patterns.
pub const BC_DTYPE_BOOL: i32 = 0;
pub const BC_DTYPE_UINT8: i32 = 1;
pub const BC_DTYPE_INT8: i32 = 2;
pub const BC_DTYPE_INT16: i32 = 3;
pub const BC_DTYPE_INT32: i32 = 4;
pub const BC_DTYPE_INT64: i32 = 5;
pub const BC_DTYPE_FLOAT16: i32 = 6;
pub const BC_DTYPE_BFLOAT16: i32 = 7;
pub const BC_DTYPE_FLOAT32: i32 = 8;
pub const BC_DTYPE_FLOAT64: i32 = 9;
/// How many element types there are (codes 0 to `BC_DTYPE_COUNT - 1`).
pub const BC_DTYPE_COUNT: i32 = 10;
// Each code is its element type's in the engine's table (`dtypes!`).
const _: () = {
    assert!(DType::ALL.len() == BC_DTYPE_COUNT as usize);
    assert!(BC_DTYPE_BOOL == DType::Bool as i32);
    assert!(BC_DTYPE_UINT8 == DType::U8 as i32);
    assert!(BC_DTYPE_INT8 == DType::I8 as i32);
    assert!(BC_DTYPE_INT16 == DType::I16 as i32);
    assert!(BC_DTYPE_INT32 == DType::I32 as i32);
    assert!(BC_DTYPE_INT64 == DType::I64 as i32);
    assert!(BC_DTYPE_FLOAT16 == DType::F16 as i32);
    assert!(BC_DTYPE_BFLOAT16 == DType::BF16 as i32);
    assert!(BC_DTYPE_FLOAT32 == DType::F32 as i32);
    assert!(BC_DTYPE_FLOAT64 == DType::F64 as i32);
};

/// Called once with its `user_data` when memory wrapped by `bc_tensor_wrap` is no longer used by
/// any tensor. It may run on any thread (the one that frees the last view).
pub type bc_release_fn = Option<unsafe extern "C" fn(user_data: *mut c_void)>;

pub(crate) fn dtype_in(code: i32) -> Result<DType, FfiError> {
    DType::from_code(code)
        .ok_or_else(|| FfiError::invalid(format_args!("unknown dtype code {code}")))
}

/// # Safety
/// `shape` valid for `ndim` reads; `out` for one write.
unsafe fn create(
    dtype: i32,
    shape: *const i64,
    ndim: usize,
    init: Init,
    out: *mut *mut bc_tensor,
) -> i32 {
    call(|| {
        // SAFETY (this block): the caller's contract.
        let slot = unsafe { out_handle(out, "out")? };
        let shape = unsafe { dims_in(shape, ndim, "shape")? };
        let t = Tensor::new(dtype_in(dtype)?, &shape, init)?;
        hand_out(slot, t)
    })
}

/// A new row-major tensor of `dtype` and `shape` whose elements are unspecified: do not rely on
/// their values. (They are in fact zero, so that reading them is never reading uninitialised
/// memory; fresh pages cost the same either way.)
///
/// On success the caller owns `*out` and frees it with `bc_tensor_free`; on failure `*out` is NULL.
///
/// # Returns
/// `BC_OK`; `BC_ERR_NULL_ARG`; `BC_ERR_INVALID_ARG` (unknown dtype, negative size, more than
/// `BC_MAX_NDIM` dimensions); `BC_ERR_OVERFLOW` (element or byte count overflows); `BC_ERR_ALLOC`.
///
/// # Safety
/// `shape` must be valid for `ndim` reads (NULL allowed when `ndim` is 0); `out` for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_tensor_empty(
    dtype: i32,
    shape: *const i64,
    ndim: usize,
    out: *mut *mut bc_tensor,
) -> i32 {
    // SAFETY: forwarded.
    unsafe { create(dtype, shape, ndim, Init::Zeros, out) }
}

/// Like `bc_tensor_empty`, with every element 0 (false for bool).
///
/// # Safety
/// As `bc_tensor_empty`.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_tensor_zeros(
    dtype: i32,
    shape: *const i64,
    ndim: usize,
    out: *mut *mut bc_tensor,
) -> i32 {
    // SAFETY: forwarded.
    unsafe { create(dtype, shape, ndim, Init::Zeros, out) }
}

/// Like `bc_tensor_empty`, with every element 1 (true for bool).
///
/// # Safety
/// As `bc_tensor_empty`.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_tensor_ones(
    dtype: i32,
    shape: *const i64,
    ndim: usize,
    out: *mut *mut bc_tensor,
) -> i32 {
    // SAFETY: forwarded.
    unsafe { create(dtype, shape, ndim, Init::Fill(1.0), out) }
}

/// Like `bc_tensor_empty`, with every element `value` converted to `dtype` as a C cast would
/// (for bool: `value != 0`).
///
/// # Safety
/// As `bc_tensor_empty`.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_tensor_full(
    dtype: i32,
    shape: *const i64,
    ndim: usize,
    value: f64,
    out: *mut *mut bc_tensor,
) -> i32 {
    // SAFETY: forwarded.
    unsafe { create(dtype, shape, ndim, Init::Fill(value), out) }
}

/// A new row-major tensor holding a copy of `data`: `numel * itemsize` bytes in row-major order
/// (`nbytes` must be exactly that). `data` may be NULL when `nbytes` is 0.
///
/// On success the caller owns `*out`; `data` is not retained.
///
/// # Returns
/// As `bc_tensor_empty`, and `BC_ERR_INVALID_ARG` when `nbytes` does not match the shape.
///
/// # Safety
/// `data` must be valid for `nbytes` reads; `shape` for `ndim` reads; `out` for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_tensor_from_data(
    dtype: i32,
    shape: *const i64,
    ndim: usize,
    data: *const c_void,
    nbytes: usize,
    out: *mut *mut bc_tensor,
) -> i32 {
    call(|| {
        // SAFETY (this block): the caller's contract.
        let slot = unsafe { out_handle(out, "out")? };
        let shape = unsafe { dims_in(shape, ndim, "shape")? };
        let bytes = unsafe { slice_in(data.cast::<u8>(), nbytes, "data")? };
        let t = Tensor::from_bytes(dtype_in(dtype)?, &shape, bytes)?;
        hand_out(slot, t)
    })
}

/// A tensor that views caller memory without copying: element `(i0, i1, ...)` is at
/// `data + (offset + i0*strides[0] + i1*strides[1] + ...) * itemsize`. Strides and offset count
/// elements and may not be negative; `strides` NULL means row-major. Every element must lie within
/// the `nbytes` bytes at `data`, and `data` must be aligned to the element size.
///
/// The library may read and (through in-place and `out` operations) write the memory.
/// `release(user_data)`, when `release` is not NULL, runs exactly once, when the last tensor
/// sharing this memory (this one and every view of it) is freed, on the thread that frees it.
/// Until then the memory must stay valid. When this call fails, for whatever reason (out of
/// memory and the handle limit included), `release` is not called and the caller keeps
/// ownership of the memory.
///
/// Go: memory from Go's heap may not be kept by C past the call (cgo pointer rules); wrap C memory
/// (C.malloc) or pinned memory only. Julia: keep the array rooted (a preserve block of Julia's
/// `GC` module, or a release callback that drops a reference) for as long as the tensor lives.
///
/// # Returns
/// `BC_OK`; `BC_ERR_NULL_ARG` (`out` NULL, `data` NULL with `nbytes` > 0, or `shape` NULL with
/// `ndim` > 0); `BC_ERR_INVALID_ARG` (an element out of bounds, a negative stride or offset,
/// misaligned `data`, an unknown dtype); `BC_ERR_OVERFLOW`; `BC_ERR_ALLOC` (out of memory, or
/// every handle in use).
///
/// # Safety
/// `data` must be valid for reads and writes of `nbytes` bytes until `release` runs; `shape` and
/// `strides` (when not NULL) for `ndim` reads; `out` for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_tensor_wrap(
    dtype: i32,
    data: *mut c_void,
    nbytes: usize,
    shape: *const i64,
    strides: *const i64,
    ndim: usize,
    offset: i64,
    release: bc_release_fn,
    user_data: *mut c_void,
    out: *mut *mut bc_tensor,
) -> i32 {
    struct Hook(unsafe extern "C" fn(*mut c_void), usize);
    call(|| {
        // SAFETY (this block): the caller's contract.
        let slot = unsafe { out_handle(out, "out")? };
        let dtype = dtype_in(dtype)?;
        let shape = unsafe { dims_in(shape, ndim, "shape")? };
        let strides: Option<Strides> = if strides.is_null() {
            None
        } else {
            Some(unsafe { strides_in(strides, ndim)? })
        };
        let offset = offset_in(offset)?;
        let data = match NonNull::new(data.cast::<u8>()) {
            Some(p) => p,
            None if nbytes == 0 => NonNull::dangling(),
            None => return Err(FfiError::NullArg("data")),
        };
        // The handle's slot first: once the tensor exists, dropping it would run `release`.
        let reserved = handle::reserve()?;
        let hook = match release {
            Some(f) => {
                let h = Hook(f, user_data as usize);
                let hook = try_box(move || {
                    let h = h;
                    // SAFETY: the caller gave this function and pointer for exactly this call.
                    unsafe { (h.0)(h.1 as *mut c_void) }
                })?;
                Some(hook as crate::engine::storage::ReleaseHook)
            }
            None => None,
        };
        // If this fails the hook is dropped unrun: a failed wrap leaves ownership with the caller.
        // Nothing can fail after it.
        let t = unsafe {
            Tensor::from_foreign(
                dtype,
                data,
                nbytes,
                &shape,
                strides.as_deref(),
                offset,
                hook,
            )?
        };
        slot.set(reserved.fill(t));
        Ok(())
    })
}

/// Strides in elements from a caller's array of `ndim` (at most `BC_MAX_NDIM`, checked with the
/// shape first).
///
/// # Safety
/// As `slice_in`.
pub(crate) unsafe fn strides_in(strides: *const i64, ndim: usize) -> Result<Strides, FfiError> {
    // SAFETY: forwarded.
    let raw = unsafe { slice_in(strides, ndim, "strides")? };
    Ok(try_small_collect(raw.iter().map(|&s| s as isize))?)
}

fn offset_in(offset: i64) -> Result<usize, FfiError> {
    usize::try_from(offset)
        .map_err(|_| FfiError::invalid(format_args!("offset {offset} is negative")))
}

/// Frees a handle. The elements are freed (or, for wrapped memory, released) when the last
/// handle sharing them is freed. NULL is a no-op. Safe on any thread. Freeing a handle that is
/// not live (already freed, or not from this library) does nothing and records
/// `BC_ERR_INVALID_HANDLE` as the thread's last error.
#[no_mangle]
pub extern "C" fn bc_tensor_free(t: *mut bc_tensor) {
    if t.is_null() {
        return;
    }
    call(|| {
        if handle::release(t) {
            Ok(())
        } else {
            Err(FfiError::InvalidHandle("t"))
        }
    });
}

/// Whether `t` is a live handle (not NULL, not freed, from this library).
#[no_mangle]
pub extern "C" fn bc_tensor_is_live(t: *const bc_tensor) -> bool {
    call_or(false, || handle::is_live(t))
}

/// The number of live handles in the process (for leak checks). Counts the registry, so it takes
/// time in proportion to the most handles ever live at once: not for hot loops.
#[no_mangle]
pub extern "C" fn bc_tensor_live_count() -> usize {
    call_or(0, handle::live_count)
}

/// Runs `f` on the tensor behind `t` and hands out the tensor it makes as `*out`.
///
/// # Safety
/// `out` valid for one write.
unsafe fn derive(
    t: *const bc_tensor,
    out: *mut *mut bc_tensor,
    f: impl FnOnce(&Tensor) -> Result<Tensor, FfiError>,
) -> i32 {
    call(|| {
        // SAFETY: the caller's contract.
        let slot = unsafe { out_handle(out, "out")? };
        // Borrowed under the slot lock unless `f` may copy many elements.
        let made = handle::with([(t, "t")], ops::is_small, |[t]| f(t))??;
        hand_out(slot, made)
    })
}

/// A deep copy of `t` in new row-major storage.
///
/// # Returns
/// `BC_OK`; `BC_ERR_NULL_ARG`; `BC_ERR_INVALID_HANDLE`; `BC_ERR_OVERFLOW` (the copy's byte count
/// does not fit, as for a huge expanded view); `BC_ERR_ALLOC`.
///
/// # Safety
/// `out` must be valid for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_tensor_clone(t: *const bc_tensor, out: *mut *mut bc_tensor) -> i32 {
    // SAFETY: forwarded.
    unsafe { derive(t, out, |t| Ok(t.to_contiguous(t.dtype())?)) }
}

/// A row-major copy of `t` (always a copy, in new storage, even when `t` is contiguous).
///
/// # Returns
/// `BC_OK`; `BC_ERR_NULL_ARG`; `BC_ERR_INVALID_HANDLE`; `BC_ERR_OVERFLOW`; `BC_ERR_ALLOC`.
///
/// # Safety
/// `out` must be valid for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_tensor_contiguous(
    t: *const bc_tensor,
    out: *mut *mut bc_tensor,
) -> i32 {
    // SAFETY: forwarded.
    unsafe { derive(t, out, |t| Ok(t.to_contiguous(t.dtype())?)) }
}

/// A row-major copy of `t` converted to `dtype` with C-style casts, as PyTorch converts:
/// floating to integer truncates; to bool is `!= 0`; to float16/bfloat16 rounds to nearest even
/// from float32, so float64 and int64 values are first rounded to float32 (two roundings, as in
/// PyTorch, whose 16-bit types are built from a float).
///
/// # Returns
/// `BC_OK`; `BC_ERR_NULL_ARG`; `BC_ERR_INVALID_HANDLE`; `BC_ERR_INVALID_ARG` (unknown dtype);
/// `BC_ERR_OVERFLOW`; `BC_ERR_ALLOC`.
///
/// # Safety
/// `out` must be valid for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_tensor_to_dtype(
    t: *const bc_tensor,
    dtype: i32,
    out: *mut *mut bc_tensor,
) -> i32 {
    // SAFETY: forwarded.
    unsafe { derive(t, out, |t| Ok(t.to_contiguous(dtype_in(dtype)?)?)) }
}

/// Reads one property of `t` into `*out`.
///
/// # Safety
/// `out` valid for one write.
unsafe fn query<T>(t: *const bc_tensor, out: *mut T, f: impl FnOnce(&Tensor) -> T) -> i32 {
    call(|| {
        if out.is_null() {
            return Err(FfiError::NullArg("out"));
        }
        let value = handle::borrow(t, "t", f)?;
        // SAFETY: checked non-NULL; valid by the caller's contract.
        unsafe { write_out(out, value, "out") }
    })
}

/// `*out` = the element type code of `t` (`BC_DTYPE_*`).
///
/// # Safety
/// `out` must be valid for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_tensor_dtype(t: *const bc_tensor, out: *mut i32) -> i32 {
    // SAFETY: forwarded.
    unsafe { query(t, out, |t| t.dtype().code()) }
}

/// `*out` = the number of dimensions of `t` (0 for a 0-d tensor).
///
/// # Safety
/// `out` must be valid for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_tensor_ndim(t: *const bc_tensor, out: *mut usize) -> i32 {
    // SAFETY: forwarded.
    unsafe { query(t, out, |t| t.ndim()) }
}

/// `*out` = the number of elements of `t` (1 for a 0-d tensor).
///
/// # Safety
/// `out` must be valid for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_tensor_numel(t: *const bc_tensor, out: *mut i64) -> i32 {
    // SAFETY: forwarded.
    unsafe { query(t, out, |t| t.numel() as i64) }
}

/// `*out` = the offset of `t`'s first element in its storage, in elements.
///
/// # Safety
/// `out` must be valid for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_tensor_offset(t: *const bc_tensor, out: *mut i64) -> i32 {
    // SAFETY: forwarded.
    unsafe { query(t, out, |t| t.offset() as i64) }
}

/// `*out` = whether `t` is row-major without gaps (size-1 dimensions may have any stride).
///
/// # Safety
/// `out` must be valid for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_tensor_is_contiguous(t: *const bc_tensor, out: *mut bool) -> i32 {
    // SAFETY: forwarded.
    unsafe { query(t, out, |t| t.is_contiguous()) }
}

/// Copies `t`'s sizes into `buf` (`cap` entries; at least `ndim` needed; NULL allowed when
/// `cap` is 0).
///
/// # Returns
/// `BC_OK`; `BC_ERR_BUFFER_TOO_SMALL` when `cap < ndim`; `BC_ERR_NULL_ARG`; `BC_ERR_INVALID_HANDLE`.
///
/// # Safety
/// `buf` must be valid for `cap` writes.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_tensor_shape(t: *const bc_tensor, buf: *mut i64, cap: usize) -> i32 {
    call(|| {
        // SAFETY: the caller's contract.
        handle::borrow(t, "t", |t| unsafe { dims_out(t.shape(), buf, cap, "buf") })?
    })
}

/// Copies `t`'s strides, in elements, into `buf` (as `bc_tensor_shape`). Broadcast dimensions
/// have stride 0.
///
/// # Safety
/// `buf` must be valid for `cap` writes.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_tensor_strides(t: *const bc_tensor, buf: *mut i64, cap: usize) -> i32 {
    call(|| {
        // SAFETY: the caller's contract.
        handle::borrow(t, "t", |t| unsafe {
            dims_out(t.strides(), buf, cap, "buf")
        })?
    })
}

/// Copies `t`'s elements in row-major order into `buf`, which holds `nbytes` bytes (at least
/// `numel * itemsize`; NULL allowed when that is 0).
///
/// # Returns
/// `BC_OK`; `BC_ERR_BUFFER_TOO_SMALL` (nothing written); `BC_ERR_NULL_ARG`; `BC_ERR_INVALID_HANDLE`;
/// `BC_ERR_OVERFLOW` (the byte count does not fit); `BC_ERR_ALLOC` (more than 5 dimensions, and no
/// memory for their plan).
///
/// # Safety
/// `buf` must be valid for `nbytes` writes and must not overlap `t`'s elements.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_tensor_copy_to(
    t: *const bc_tensor,
    buf: *mut c_void,
    nbytes: usize,
) -> i32 {
    call(|| {
        let t = handle::get(t, "t")?;
        let needed = checked_nbytes(checked_numel(t.shape())?, t.dtype().size())?;
        if nbytes < needed {
            return Err(crate::engine::Error::BufferTooSmall {
                needed,
                given: nbytes,
                unit: "bytes",
            }
            .into());
        }
        // SAFETY: the caller's contract; only `needed` bytes are written.
        let dst = unsafe { slice_out(buf.cast::<u8>(), needed, "buf")? };
        Ok(t.copy_to_bytes(dst)?)
    })
}

/// The size in bytes of one element of `dtype`, or 0 for an unknown code.
#[no_mangle]
pub extern "C" fn bc_dtype_size(dtype: i32) -> usize {
    DType::from_code(dtype).map_or(0, |d| d.size())
}

/// The name of `dtype` ("float32", "int64", ...), or "unknown": a static string.
#[no_mangle]
pub extern "C" fn bc_dtype_name(dtype: i32) -> *const c_char {
    let name: &'static std::ffi::CStr = match DType::from_code(dtype) {
        Some(DType::Bool) => c"bool",
        Some(DType::U8) => c"uint8",
        Some(DType::I8) => c"int8",
        Some(DType::I16) => c"int16",
        Some(DType::I32) => c"int32",
        Some(DType::I64) => c"int64",
        Some(DType::F16) => c"float16",
        Some(DType::BF16) => c"bfloat16",
        Some(DType::F32) => c"float32",
        Some(DType::F64) => c"float64",
        None => c"unknown",
    };
    name.as_ptr()
}

/// A view of `t` expanded to `sizes` (PyTorch's `expand`): dimensions of size 1 repeat with
/// stride 0, new leading dimensions may be added, -1 keeps a size (not allowed in a new leading
/// dimension). No data is copied; writes through views that repeat elements are refused.
///
/// # Returns
/// `BC_OK`; `BC_ERR_SHAPE` (message e.g. `The expanded size of the tensor (5) must match the
/// existing size (3) at non-singleton dimension 1.  Target sizes: [2, 5].  Tensor sizes: [3]`);
/// `BC_ERR_NULL_ARG`; `BC_ERR_INVALID_HANDLE`; `BC_ERR_INVALID_ARG`; `BC_ERR_OVERFLOW`;
/// `BC_ERR_ALLOC`.
///
/// # Safety
/// `sizes` valid for `ndim` reads; `out` for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_tensor_expand(
    t: *const bc_tensor,
    sizes: *const i64,
    ndim: usize,
    out: *mut *mut bc_tensor,
) -> i32 {
    // SAFETY: forwarded.
    unsafe {
        derive_sized(
            t,
            sizes,
            ndim,
            "sizes",
            out,
            |t, sizes| Ok(t.expand(sizes)?),
        )
    }
}

/// The same as `bc_tensor_expand` (NumPy's and PyTorch's `broadcast_to`).
///
/// # Safety
/// As `bc_tensor_expand`.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_tensor_broadcast_to(
    t: *const bc_tensor,
    shape: *const i64,
    ndim: usize,
    out: *mut *mut bc_tensor,
) -> i32 {
    // SAFETY: forwarded. (Not through bc_tensor_expand: errors name this function's `shape`.)
    unsafe {
        derive_sized(
            t,
            shape,
            ndim,
            "shape",
            out,
            |t, sizes| Ok(t.expand(sizes)?),
        )
    }
}

/// `t` expanded to the shape of `other` (a view).
///
/// # Returns
/// As `bc_tensor_expand`.
///
/// # Safety
/// `out` must be valid for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_tensor_expand_as(
    t: *const bc_tensor,
    other: *const bc_tensor,
    out: *mut *mut bc_tensor,
) -> i32 {
    call(|| {
        // SAFETY: the caller's contract.
        let slot = unsafe { out_handle(out, "out")? };
        let view = handle::with(
            [(t, "t"), (other, "other")],
            |_| true,
            |[t, other]| t.expand_to(other.shape()),
        )??;
        hand_out(slot, view)
    })
}

/// Views of the `n` tensors `ins[0..n]` expanded to their common broadcast shape, written to
/// `outs[0..n]`: all of them on success (the caller owns each), none on failure (all NULL).
/// `ins` and `outs` may be the same array: every input is read before any output is written.
///
/// # Returns
/// `BC_OK`; `BC_ERR_SHAPE` (PyTorch's `broadcast_shapes` message); `BC_ERR_NULL_ARG`;
/// `BC_ERR_INVALID_HANDLE`; `BC_ERR_OVERFLOW`; `BC_ERR_ALLOC`.
///
/// # Safety
/// `ins` valid for `n` reads and `outs` for `n` writes.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_tensor_broadcast_tensors(
    ins: *const *const bc_tensor,
    n: usize,
    outs: *mut *mut bc_tensor,
) -> i32 {
    call(|| {
        if n > 0 && outs.is_null() {
            return Err(FfiError::NullArg("outs"));
        }
        // `ins` and `outs` may be the same array: every input is read before any output is
        // written, and the outputs are written once, at the end: all NULL unless the call
        // succeeds.
        struct Outs(*mut *mut bc_tensor, usize, bool);
        impl Drop for Outs {
            fn drop(&mut self) {
                if !self.2 {
                    for i in 0..self.1 {
                        // SAFETY: `outs` is valid for `n` writes (the caller's contract).
                        unsafe { self.0.add(i).write(std::ptr::null_mut()) };
                    }
                }
            }
        }
        let mut written = Outs(outs, n, false);
        // SAFETY: the caller's contract.
        let ins = unsafe { slice_in(ins, n, "ins")? };
        let mut tensors: Vec<Tensor> = try_vec(n)?;
        for &h in ins {
            tensors.push(handle::get(h, "ins[i]")?);
        }
        let refs: Vec<&Tensor> = try_collect(tensors.iter())?;
        let views = ops::broadcast_tensors(&refs)?;
        // Every slot first: filling them cannot fail, so no handle is made and then undone.
        let mut slots = try_vec(n)?;
        for _ in 0..n {
            slots.push(handle::reserve()?);
        }
        for (i, (slot, view)) in slots.into_iter().zip(views).enumerate() {
            // SAFETY: `outs` is valid for `n` writes (the caller's contract).
            unsafe { outs.add(i).write(slot.fill(view)) };
        }
        written.2 = true;
        Ok(())
    })
}

/// A view with the dimensions of `t` reordered: dimension `i` of the result is dimension
/// `dims[i]` of `t` (negative entries count from the end). `ndim` must equal `t`'s.
///
/// # Returns
/// `BC_OK`; `BC_ERR_NULL_ARG`; `BC_ERR_INVALID_HANDLE`; `BC_ERR_INVALID_ARG` (`ndim` is not
/// `t`'s, a dimension out of range or repeated); `BC_ERR_ALLOC`.
///
/// # Safety
/// `dims` valid for `ndim` reads; `out` for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_tensor_permute(
    t: *const bc_tensor,
    dims: *const i64,
    ndim: usize,
    out: *mut *mut bc_tensor,
) -> i32 {
    call(|| {
        // SAFETY (this block): the caller's contract.
        let slot = unsafe { out_handle(out, "out")? };
        handle::check_ndim(ndim, "dims")?;
        let dims = unsafe { slice_in(dims, ndim, "dims")? };
        let view = handle::borrow(t, "t", |t| t.permute(dims))??;
        hand_out(slot, view)
    })
}

/// A view with dimensions `dim0` and `dim1` swapped (negative counts from the end).
///
/// # Returns
/// `BC_OK`; `BC_ERR_NULL_ARG`; `BC_ERR_INVALID_HANDLE`; `BC_ERR_INVALID_ARG` (a dimension out
/// of range); `BC_ERR_ALLOC`.
///
/// # Safety
/// `out` must be valid for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_tensor_transpose(
    t: *const bc_tensor,
    dim0: i64,
    dim1: i64,
    out: *mut *mut bc_tensor,
) -> i32 {
    // SAFETY: forwarded.
    unsafe { derive(t, out, |t| Ok(t.transpose(dim0, dim1)?)) }
}

/// A view of `t[..., start:stop:step, ...]` along `dim`, with Python's rules: negative `start` and
/// `stop` count from the end, both are clamped to the dimension; `step` must be at least 1.
///
/// # Returns
/// `BC_OK`; `BC_ERR_NULL_ARG`; `BC_ERR_INVALID_HANDLE`; `BC_ERR_INVALID_ARG` (`dim` out of
/// range, `step` below 1); `BC_ERR_OVERFLOW` (the view's offset or stride does not fit);
/// `BC_ERR_ALLOC`.
///
/// # Safety
/// `out` must be valid for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_tensor_slice(
    t: *const bc_tensor,
    dim: i64,
    start: i64,
    stop: i64,
    step: i64,
    out: *mut *mut bc_tensor,
) -> i32 {
    // SAFETY: forwarded.
    unsafe { derive(t, out, |t| Ok(t.slice(dim, start, stop, step)?)) }
}

/// Any view over `t`'s storage: `shape`, `strides` (elements, not negative) and an absolute
/// `offset` (elements from the start of the storage). Every element must lie inside the storage.
///
/// # Returns
/// `BC_OK`; `BC_ERR_NULL_ARG`; `BC_ERR_INVALID_HANDLE`; `BC_ERR_INVALID_ARG` (an element outside
/// the storage, a negative stride or offset, too many dimensions); `BC_ERR_OVERFLOW`;
/// `BC_ERR_ALLOC`.
///
/// # Safety
/// `shape` and `strides` valid for `ndim` reads; `out` for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_tensor_as_strided(
    t: *const bc_tensor,
    shape: *const i64,
    strides: *const i64,
    ndim: usize,
    offset: i64,
    out: *mut *mut bc_tensor,
) -> i32 {
    call(|| {
        // SAFETY (this block): the caller's contract.
        let slot = unsafe { out_handle(out, "out")? };
        let shape = unsafe { dims_in(shape, ndim, "shape")? };
        let strides = unsafe { strides_in(strides, ndim)? };
        let offset = offset_in(offset)?;
        let view = handle::borrow(t, "t", |t| t.as_strided(&shape, &strides, offset))??;
        hand_out(slot, view)
    })
}

/// Runs `f` on the tensor behind `t` and the caller's `sizes` (the argument `sizes_name`, for
/// errors), and hands out the tensor it makes.
///
/// # Safety
/// `sizes` valid for `ndim` reads; `out` for one write.
unsafe fn derive_sized(
    t: *const bc_tensor,
    sizes: *const i64,
    ndim: usize,
    sizes_name: &'static str,
    out: *mut *mut bc_tensor,
    f: impl FnOnce(&Tensor, &[i64]) -> Result<Tensor, FfiError>,
) -> i32 {
    call(|| {
        // SAFETY (this block): the caller's contract.
        let slot = unsafe { out_handle(out, "out")? };
        handle::check_ndim(ndim, sizes_name)?;
        let sizes = unsafe { slice_in(sizes, ndim, sizes_name)? };
        // Borrowed under the slot lock unless `f` may copy many elements.
        let made = handle::with([(t, "t")], ops::is_small, |[t]| f(t, sizes))??;
        hand_out(slot, made)
    })
}

/// After a reshape-like call: on success, whether it copied goes to `*copied` (when not NULL).
///
/// # Safety
/// `copied` NULL or valid for one write.
unsafe fn report_copied(status: i32, copied: *mut bool, was_copied: bool) -> i32 {
    if status == super::status::BC_OK && !copied.is_null() {
        // SAFETY: not NULL, so valid for one write by the caller's contract.
        unsafe { copied.write(was_copied) };
    }
    status
}

/// A view of `t` with the shape `sizes` (PyTorch's `view`): the same elements in row-major order,
/// no copy. One size may be -1: it is inferred from the element count. Whether a view is possible
/// depends on the strides (a transposed tensor cannot be flattened without a copy); when it is
/// not, use `bc_tensor_reshape`. The result's strides are PyTorch's, also on size-1 dimensions.
///
/// On success the caller owns `*out` (free it with `bc_tensor_free`); it shares `t`'s memory.
///
/// # Returns
/// `BC_OK`; `BC_ERR_SHAPE`: the sizes do not hold the elements (`shape '[2, 5]' is invalid for
/// input of size 6`), an ambiguous -1 for an empty tensor, or strides that do not allow a view
/// (`view size is not compatible with input tensor's size and stride (at least one dimension spans
/// across two contiguous subspaces). Use .reshape(...) instead.`); `BC_ERR_INVALID_ARG`: two -1
/// (`only one dimension can be inferred`), another negative size, more than `BC_MAX_NDIM`
/// sizes; `BC_ERR_OVERFLOW`; `BC_ERR_NULL_ARG`; `BC_ERR_INVALID_HANDLE`; `BC_ERR_ALLOC`.
///
/// # Safety
/// `sizes` must be valid for `ndim` reads (NULL allowed when `ndim` is 0: the 0-d shape); `out`
/// for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_tensor_view(
    t: *const bc_tensor,
    sizes: *const i64,
    ndim: usize,
    out: *mut *mut bc_tensor,
) -> i32 {
    // SAFETY: forwarded.
    unsafe {
        derive_sized(t, sizes, ndim, "sizes", out, |t, sizes| {
            Ok(t.view_sizes(sizes)?)
        })
    }
}

/// `t` with the shape `sizes` (PyTorch's `reshape`): a view, as `bc_tensor_view`, when the strides
/// allow one, else a row-major copy. `*copied`, when `copied` is not NULL, says which (true: a
/// copy, which no longer shares `t`'s memory).
///
/// On success the caller owns `*out`; on failure `*out` is NULL and `*copied` is not written.
///
/// # Returns
/// As `bc_tensor_view`, without the strides error.
///
/// # Safety
/// `sizes` must be valid for `ndim` reads (NULL allowed when `ndim` is 0); `copied` NULL or valid
/// for one write; `out` for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_tensor_reshape(
    t: *const bc_tensor,
    sizes: *const i64,
    ndim: usize,
    copied: *mut bool,
    out: *mut *mut bc_tensor,
) -> i32 {
    let mut was_copied = false;
    // SAFETY: forwarded.
    unsafe {
        let status = derive_sized(t, sizes, ndim, "sizes", out, |t, sizes| {
            let (made, c) = t.reshape(sizes)?;
            was_copied = c;
            Ok(made)
        });
        report_copied(status, copied, was_copied)
    }
}

/// A view of `t` with a dimension of size 1 inserted at `dim` (PyTorch's `unsqueeze`): `dim` runs
/// from `-(ndim + 1)` to `ndim`, negative counting from the end of the result.
///
/// On success the caller owns `*out`; it shares `t`'s memory.
///
/// # Returns
/// `BC_OK`; `BC_ERR_INVALID_ARG` (`dim` out of range: `Dimension out of range (expected to be in
/// range of [-3, 2], but got 3)`, or a result of more than `BC_MAX_NDIM` dimensions);
/// `BC_ERR_NULL_ARG`; `BC_ERR_INVALID_HANDLE`; `BC_ERR_ALLOC`.
///
/// # Safety
/// `out` must be valid for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_tensor_unsqueeze(
    t: *const bc_tensor,
    dim: i64,
    out: *mut *mut bc_tensor,
) -> i32 {
    // SAFETY: forwarded.
    unsafe {
        derive(t, out, |t| {
            let view = t.unsqueeze(dim)?;
            handle::check_ndim(view.ndim(), "result")?;
            Ok(view)
        })
    }
}

/// A view of `t` without dimension `dim` when its size is 1, else a view of `t` as it is
/// (PyTorch's `squeeze(dim)`). `dim` runs from `-ndim` to `ndim - 1`; a 0-d tensor accepts 0 and -1.
///
/// On success the caller owns `*out`; it shares `t`'s memory.
///
/// # Returns
/// `BC_OK`; `BC_ERR_INVALID_ARG` (`dim` out of range); `BC_ERR_NULL_ARG`; `BC_ERR_INVALID_HANDLE`;
/// `BC_ERR_ALLOC`.
///
/// # Safety
/// `out` must be valid for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_tensor_squeeze(
    t: *const bc_tensor,
    dim: i64,
    out: *mut *mut bc_tensor,
) -> i32 {
    // SAFETY: forwarded.
    unsafe { derive(t, out, |t| Ok(t.squeeze(Some(dim))?)) }
}

/// A view of `t` without any of its size-1 dimensions (PyTorch's `squeeze()`).
///
/// On success the caller owns `*out`; it shares `t`'s memory.
///
/// # Returns
/// `BC_OK`; `BC_ERR_NULL_ARG`; `BC_ERR_INVALID_HANDLE`; `BC_ERR_ALLOC`.
///
/// # Safety
/// `out` must be valid for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_tensor_squeeze_all(
    t: *const bc_tensor,
    out: *mut *mut bc_tensor,
) -> i32 {
    // SAFETY: forwarded.
    unsafe { derive(t, out, |t| Ok(t.squeeze(None)?)) }
}

/// `t` with dimensions `start` to `end` (both included, negative counting from the end) merged
/// into one (PyTorch's `flatten`): through `bc_tensor_reshape`, so a view when the strides allow
/// one, else a copy; `*copied`, when `copied` is not NULL, says which. A 0-d tensor becomes 1-d
/// (`start` and `end` 0 or -1); `start == end` gives a view of `t` as it is.
///
/// On success the caller owns `*out`; on failure `*out` is NULL and `*copied` is not written.
///
/// # Returns
/// `BC_OK`; `BC_ERR_INVALID_ARG` (a dimension out of range, or `start` after `end`:
/// `flatten() has invalid args: start_dim cannot come after end_dim`); `BC_ERR_OVERFLOW` (the
/// merged sizes multiply past `INT64_MAX`, possible beside a size 0 elsewhere, where PyTorch's
/// product wraps); `BC_ERR_NULL_ARG`; `BC_ERR_INVALID_HANDLE`; `BC_ERR_ALLOC`.
///
/// # Safety
/// `copied` NULL or valid for one write; `out` for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_tensor_flatten(
    t: *const bc_tensor,
    start: i64,
    end: i64,
    copied: *mut bool,
    out: *mut *mut bc_tensor,
) -> i32 {
    let mut was_copied = false;
    // SAFETY: forwarded.
    unsafe {
        let status = derive(t, out, |t| {
            let (made, c) = t.flatten(start, end)?;
            was_copied = c;
            Ok(made)
        });
        report_copied(status, copied, was_copied)
    }
}
