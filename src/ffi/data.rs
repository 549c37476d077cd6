//! Looking at a tensor: the address of its elements (`bc_tensor_data`) and its text
//! (`bc_tensor_format`).
use super::boundary::call;
use super::handle::{self, bc_tensor};
use super::status::FfiError;
use crate::engine::format::Text;
use std::ffi::{c_char, c_void};
use std::fmt;

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
#[must_use]
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
        let (ptr, extent, can_write) = (t.data_ptr(), t.extent_from_data(), t.is_writable()?);
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

/// Copies the text into a caller's buffer (keeping a byte for the NUL) and refuses what does
/// not fit, so that writing stops there.
struct Truncating<'a> {
    buf: &'a mut [u8],
    len: usize,
}

impl fmt::Write for Truncating<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let room = self.buf.len().saturating_sub(1) - self.len;
        let n = room.min(s.len());
        self.buf[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        if n < s.len() {
            return Err(fmt::Error);
        }
        Ok(())
    }
}

/// Writes `t` as text, exactly as PyTorch's `str(tensor)` with its default print options: for
/// example the two lines `tensor([[1, 2],` and `[3, 4]], dtype=torch.int32)`, the second indented
/// by 8 spaces. Floats get 4 decimals, or
/// scientific notation when their magnitudes call for it (`1.0000e-05`), integer-valued floats
/// end in "." (`tensor([1., 2.])`), `nan` and `inf` as Python writes them; rows wrap at 80
/// columns; over 1000 elements only 3 at each edge of every dimension are shown, around `...`.
/// The `dtype=` suffix is left out for float32, int64 and bool, as PyTorch does; empty tensors
/// show their size.
///
/// The text (ASCII) goes into `buf`, NUL-terminated, truncated to `len - 1` bytes when longer;
/// `*length` gets its full length without the NUL, whatever `len` is: call with `(NULL, 0)` to
/// size a buffer of `*length + 1` bytes, as with `bc_last_error_message`. Nothing is written
/// unless the call succeeds.
///
/// A text can be much longer than the tensor's memory, as a dimension of 6 or less is shown
/// whole: a broadcast view of 16 dimensions of 4 over one element prints 2^32 elements, about
/// 44 GB. The length is counted without writing the text, and writing stops when `buf` is full,
/// so a call takes time in proportion to the bytes it writes, plus the formatter's reading of
/// the elements shown (each once: a dimension of stride 0 is read once, as it repeats the same
/// element). That reading is limited to 2^20 (1,048,576) elements, about a second, whose text
/// would pass 3 MB; a tensor that needs more is refused with `BC_ERR_OVERFLOW` (a broadcast view
/// needs more only when its stored part does).
///
/// # Returns
/// `BC_OK` (also when the text was truncated: compare `*length` with `len`); `BC_ERR_OVERFLOW`
/// (the formatter would read more than 2^20 elements: `bc_error_info.size_a` says how many; or
/// the length does not fit in `size_t`); `BC_ERR_NULL_ARG` (`t` or `length` NULL, or `buf` NULL
/// with `len` > 0); `BC_ERR_INVALID_HANDLE`.
///
/// # Safety
/// `buf` must be valid for `len` writes (NULL allowed when `len` is 0); `length` for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_tensor_format(
    t: *const bc_tensor,
    buf: *mut c_char,
    len: usize,
    length: *mut usize,
) -> i32 {
    call(|| {
        if length.is_null() {
            return Err(FfiError::NullArg("length"));
        }
        // SAFETY: the caller's contract; (NULL, 0) is the empty buffer.
        let buf = unsafe { super::handle::slice_out(buf.cast::<u8>(), len, "buf")? };
        let t = handle::get(t, "t")?;
        // Planned first, so that a failure leaves the buffer untouched.
        let text = Text::new(&t)?;
        if let Some(last) = buf.len().checked_sub(1) {
            let mut out = Truncating { buf, len: 0 };
            // A refused write is the buffer filling up: the text stops there.
            let complete = text.write(&mut out).is_ok();
            debug_assert!(
                !complete || out.len == text.byte_len(),
                "the text's counted length"
            );
            out.buf[out.len.min(last)] = 0;
        }
        // SAFETY: not NULL; valid for one write by the caller's contract.
        unsafe { length.write(text.byte_len()) };
        Ok(())
    })
}
