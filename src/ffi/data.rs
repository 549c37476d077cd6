//! Looking at a tensor's elements without copying them: their address (`bc_tensor_data`).
use super::boundary::call;
use super::handle::{self, bc_tensor};
use super::status::FfiError;
use std::ffi::c_void;

/// The address of `t`'s first element (element `(0, 0, ...)`, after the offset) in `*data`, the
/// bytes of memory from there to the end of `t`'s storage in `*nbytes`, and whether writing
/// through the address is allowed in `*writable`. Element `(i0, i1, ...)` lies at
/// `data + (i0*strides[0] + i1*strides[1] + ...) * itemsize` (`bc_tensor_strides`; strides are
/// never negative), always within `[data, data + nbytes)` when `t` has elements. For an empty
/// tensor `*data` must not be read or written.
///
/// `*writable` is false when the memory was shared read-only (DLPack's read-only flag) and when
/// elements of `t` share memory locations (a broadcast view: a dimension of stride 0 and size
/// above 1; or an `as_strided` view whose elements overlap, or may: views of more than 2^20
/// elements that no cheap test clears count as overlapping). Writing through a non-writable
/// address is not allowed.
///
/// The address stays valid, and the memory does not move, for as long as any tensor sharing it
/// is live: `t`, every view of it and every tensor it is a view of, and every DLPack export of
/// them that has not been deleted. The library never resizes or moves a tensor's memory. For
/// memory the caller wrapped (`bc_tensor_wrap`), `*data` points into the caller's buffer. Writes
/// through it are seen by every view; do not write while another thread runs an operation that
/// reads or writes the same memory.
///
/// `nbytes` and `writable` may be NULL when not wanted. Nothing is written unless the call
/// succeeds.
///
/// # Returns
/// `BC_OK`; `BC_ERR_NULL_ARG` (`t` or `data` NULL); `BC_ERR_INVALID_HANDLE`.
///
/// # Safety
/// `data` must be valid for one write; `nbytes` and `writable` NULL or valid for one write.
#[no_mangle]
pub unsafe extern "C" fn bc_tensor_data(
    t: *const bc_tensor,
    data: *mut *mut c_void,
    nbytes: *mut usize,
    writable: *mut bool,
) -> i32 {
    call(|| {
        if data.is_null() {
            return Err(FfiError::NullArg("data"));
        }
        // A clone, not a borrow under the slot lock: the overlap test of an odd view may
        // enumerate its elements.
        let t = handle::get(t, "t")?;
        let (ptr, extent, can_write) = (t.data_ptr(), t.extent_from_data(), t.is_writable());
        // SAFETY (this block): `data` is not NULL and the others are checked; all are valid for
        // one write by the caller's contract.
        unsafe {
            data.write(ptr.cast());
            if !nbytes.is_null() {
                nbytes.write(extent);
            }
            if !writable.is_null() {
                writable.write(can_write);
            }
        }
        Ok(())
    })
}
