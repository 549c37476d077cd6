//! DLPack, the C ABI that NumPy, PyTorch, JAX, CuPy and DLPack.jl share tensors through without
//! copying: export (`bc_tensor_to_dlpack_versioned`, `bc_tensor_to_dlpack`) and import
//! (`bc_tensor_from_dlpack_versioned`, `bc_tensor_from_dlpack`), both the 1.x versioned struct and
//! the older unversioned one.
//!
//! The deleter contract, both ways: a producer's deleter runs exactly once, when the consumer is
//! done, on whatever thread that is. An export holds a reference to the tensor's memory until its
//! deleter runs; an import runs the producer's deleter when the last tensor over the memory is
//! freed, and never when the import fails (the caller still owns the struct then).
use super::boundary::{call, call_or};
use super::handle::{self, bc_tensor, out_handle, BC_MAX_NDIM};
use super::status::FfiError;
use crate::engine::alloc::{try_box, try_small_with_capacity};
use crate::engine::shape::{checked_nbytes, Dims, Strides};
use crate::engine::{DType, Error, Tensor};
use std::ffi::c_void;
use std::ptr::{addr_of, NonNull};
use std::sync::atomic::{AtomicBool, Ordering};

pub use abi::*;

/// The DLPack 1.0 ABI, written from its specification. The header emits these definitions only
/// when no official `dlpack.h` came first: cbindgen turns this cfg, which is never set, into
/// `#if !defined(BC_DLPACK_EXTERNAL)` (see `cbindgen.toml`), so a program may include both.
#[cfg(not(bc_dlpack_external))]
#[allow(non_upper_case_globals, non_camel_case_types)]
mod abi {
    use std::ffi::c_void;

    /// Bit of `DLManagedTensorVersioned::flags`: the consumer must not write to the tensor.
    pub const DLPACK_FLAG_BITMASK_READ_ONLY: u64 = 1;
    /// Bit of `DLManagedTensorVersioned::flags`: the producer copied the data for this export.
    pub const DLPACK_FLAG_BITMASK_IS_COPIED: u64 = 2;

    /// The DLPack version a `DLManagedTensorVersioned` follows.
    #[repr(C)]
    #[derive(Debug, Clone, Copy)]
    pub struct DLPackVersion {
        pub major: u32,
        pub minor: u32,
    }

    /// Where the memory is. libbroadcast reads and makes `kDLCPU` tensors only.
    /// cbindgen:rename-all=None
    #[repr(i32)]
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum DLDeviceType {
        kDLCPU = 1,
        kDLCUDA = 2,
        kDLCUDAHost = 3,
        kDLOpenCL = 4,
        kDLVulkan = 7,
        kDLMetal = 8,
        kDLVPI = 9,
        kDLROCM = 10,
        kDLROCMHost = 11,
        kDLExtDev = 12,
        kDLCUDAManaged = 13,
        kDLOneAPI = 14,
        kDLWebGPU = 15,
        kDLHexagon = 16,
    }

    /// A device: its type, and which one of that type (0 for the CPU).
    #[repr(C)]
    #[derive(Debug, Clone, Copy)]
    pub struct DLDevice {
        pub device_type: DLDeviceType,
        pub device_id: i32,
    }

    /// Values of `DLDataType::code`.
    /// cbindgen:rename-all=None
    #[repr(C)]
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum DLDataTypeCode {
        kDLInt = 0,
        kDLUInt = 1,
        kDLFloat = 2,
        kDLOpaqueHandle = 3,
        kDLBfloat = 4,
        kDLComplex = 5,
        kDLBool = 6,
    }

    /// An element type: a `DLDataTypeCode`, the bits of one lane, and the lanes (1 for scalars).
    /// libbroadcast's types are bool (kDLBool, 8), uint8 (kDLUInt, 8), int8 to int64 (kDLInt, 8 to
    /// 64), float16, float32, float64 (kDLFloat, 16, 32, 64) and bfloat16 (kDLBfloat, 16).
    #[repr(C)]
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct DLDataType {
        pub code: u8,
        pub bits: u8,
        pub lanes: u16,
    }

    /// A strided view of memory: element `(i0, i1, ...)` is at
    /// `data + byte_offset + (i0*strides[0] + i1*strides[1] + ...) * bits/8`.
    #[repr(C)]
    pub struct DLTensor {
        /// The memory (not necessarily the first element: add `byte_offset`).
        pub data: *mut c_void,
        pub device: DLDevice,
        /// Number of dimensions.
        pub ndim: i32,
        pub dtype: DLDataType,
        /// `ndim` sizes.
        pub shape: *mut i64,
        /// `ndim` strides, in elements; NULL means row-major.
        pub strides: *mut i64,
        /// Bytes from `data` to the first element.
        pub byte_offset: u64,
    }

    /// The older, unversioned form of a shared tensor: a `DLTensor` and how to release it. It
    /// has no read-only flag.
    #[repr(C)]
    pub struct DLManagedTensor {
        pub dl_tensor: DLTensor,
        pub manager_ctx: *mut c_void,
        pub deleter: Option<unsafe extern "C" fn(managed: *mut DLManagedTensor)>,
    }

    /// A shared tensor (DLPack 1.x): the producer's `version`, its context, the `deleter` the
    /// consumer calls exactly once when done (NULL: nothing to release), `flags`
    /// (`DLPACK_FLAG_BITMASK_*`), and the tensor.
    #[repr(C)]
    pub struct DLManagedTensorVersioned {
        pub version: DLPackVersion,
        /// The producer's own data, for its deleter.
        pub manager_ctx: *mut c_void,
        pub deleter: Option<unsafe extern "C" fn(managed: *mut DLManagedTensorVersioned)>,
        /// `DLPACK_FLAG_BITMASK_READ_ONLY`, `DLPACK_FLAG_BITMASK_IS_COPIED`; other bits are
        /// ignored.
        pub flags: u64,
        pub dl_tensor: DLTensor,
    }
}

/// The version this library writes into its exports and reads: 1.0. Imports of any 1.x are
/// accepted (minor versions only add to the format).
const VERSION: DLPackVersion = DLPackVersion { major: 1, minor: 0 };

/// DLPack's description of an element type (its code is a column of the element-type table).
fn dl_dtype(dtype: DType) -> DLDataType {
    DLDataType {
        code: dtype.dlpack_code(),
        bits: 8 * dtype.size() as u8,
        lanes: 1,
    }
}

fn dtype_of(t: DLDataType) -> Result<DType, FfiError> {
    DType::ALL
        .into_iter()
        .find(|&d| dl_dtype(d) == t)
        .ok_or_else(|| {
            FfiError::invalid(format_args!(
                "DLPack data type (code {}, bits {}, lanes {}) is not supported: libbroadcast takes \
                 bool, uint8, int8 to int64, float16, bfloat16, float32 and float64, one lane",
                t.code, t.bits, t.lanes
            ))
        })
}

// ---------------------------------------------------------------------------------------------
// Export

/// What an export owns: the managed struct handed out (first, so its address is the block's),
/// the tensor that keeps the memory alive, and the shape and strides the struct points to.
#[repr(C)]
struct Export<M> {
    managed: M,
    tensor: Tensor,
    dims: Vec<i64>,
}

/// The `DLTensor` of `t`, pointing into `dims` (shape then strides, reserved by the caller).
fn dl_tensor_of(t: &Tensor, dims: &mut Vec<i64>) -> DLTensor {
    let ndim = t.ndim();
    dims.extend(t.shape().iter().map(|&n| n as i64));
    dims.extend(t.strides().iter().map(|&s| s as i64));
    // Never NULL, even for a 0-d tensor: the block holds at least one entry.
    let base = dims.as_mut_ptr();
    DLTensor {
        data: t.data_ptr().cast(),
        device: DLDevice {
            device_type: DLDeviceType::kDLCPU,
            device_id: 0,
        },
        ndim: ndim as i32,
        dtype: dl_dtype(t.dtype()),
        shape: base,
        // SAFETY: `dims` holds 2 * ndim entries (or is a block of one for a 0-d tensor).
        strides: unsafe { base.add(ndim) },
        byte_offset: 0,
    }
}

/// Builds the export of the tensor behind `t` with `make(dl_tensor, writable)` and hands it out.
///
/// # Safety
/// `out` valid for one write.
unsafe fn export<M>(
    t: *const bc_tensor,
    out: *mut *mut M,
    make: impl FnOnce(DLTensor, bool) -> Result<M, FfiError>,
    set_ctx: impl FnOnce(&mut M, *mut c_void),
) -> i32 {
    call(|| {
        if out.is_null() {
            return Err(FfiError::NullArg("out"));
        }
        // SAFETY: not NULL; valid for one write by the caller's contract.
        unsafe { out.write(std::ptr::null_mut()) };
        let tensor = handle::get(t, "t")?;
        let mut dims = Vec::new();
        let entries = (2 * tensor.ndim()).max(1);
        dims.try_reserve_exact(entries).map_err(|_| Error::Alloc {
            bytes: entries * std::mem::size_of::<i64>(),
        })?;
        let dl = dl_tensor_of(&tensor, &mut dims);
        let managed = make(dl, tensor.is_writable()?)?;
        let block = Box::into_raw(try_box(Export {
            managed,
            tensor,
            dims,
        })?);
        // SAFETY: `block` is the live allocation just made; nothing else refers to it yet.
        unsafe {
            set_ctx(&mut (*block).managed, block.cast());
            out.write(block.cast());
        }
        Ok(())
    })
}

/// Frees an export: the deleter of both structs (the managed struct is the first field of the
/// block `manager_ctx` points to).
///
/// # Safety
/// `ctx` is the `manager_ctx` of a struct made by [`export`] with this `M`, not yet deleted.
unsafe fn free_export<M>(ctx: *mut c_void) {
    call_or((), || {
        if !ctx.is_null() {
            // SAFETY: the caller's contract: the block came from Box::into_raw in `export`.
            drop(unsafe { Box::from_raw(ctx.cast::<Export<M>>()) });
        }
    })
}

unsafe extern "C" fn delete_versioned(managed: *mut DLManagedTensorVersioned) {
    if !managed.is_null() {
        // SAFETY: DLPack's contract: the consumer passes back the struct we made, once.
        unsafe { free_export::<DLManagedTensorVersioned>((*managed).manager_ctx) }
    }
}

unsafe extern "C" fn delete_legacy(managed: *mut DLManagedTensor) {
    if !managed.is_null() {
        // SAFETY: as in `delete_versioned`.
        unsafe { free_export::<DLManagedTensor>((*managed).manager_ctx) }
    }
}

/// Shares `t` through DLPack 1.x, without copying: `*out` describes `t`'s memory (data = the
/// address of its first element, `byte_offset` 0, shape and strides never NULL, device CPU, the
/// version 1.0) and keeps it alive until the consumer calls `(*out)->deleter(*out)`, exactly
/// once, on any thread; `t` itself may be freed before that. The flag
/// `DLPACK_FLAG_BITMASK_READ_ONLY` is set when `t` must not be written: its memory was shared
/// read-only with this library, or its elements share memory (a broadcast view); the consumer
/// must then not write.
///
/// On success the caller (the consumer) owns `*out` and must call its deleter; on failure `*out`
/// is NULL.
///
/// # Returns
/// `BC_OK`; `BC_ERR_NULL_ARG`; `BC_ERR_INVALID_HANDLE`; `BC_ERR_ALLOC`.
///
/// # Safety
/// `out` must be valid for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_tensor_to_dlpack_versioned(
    t: *const bc_tensor,
    out: *mut *mut DLManagedTensorVersioned,
) -> i32 {
    // SAFETY: forwarded.
    unsafe {
        export(
            t,
            out,
            |dl_tensor, writable| {
                Ok(DLManagedTensorVersioned {
                    version: VERSION,
                    manager_ctx: std::ptr::null_mut(),
                    deleter: Some(delete_versioned),
                    flags: if writable {
                        0
                    } else {
                        DLPACK_FLAG_BITMASK_READ_ONLY
                    },
                    dl_tensor,
                })
            },
            |m, ctx| m.manager_ctx = ctx,
        )
    }
}

/// Shares `t` through the older, unversioned DLPack struct, as `bc_tensor_to_dlpack_versioned`
/// does. That struct cannot mark a tensor read-only, so a tensor that must not be written (memory
/// shared read-only, or a broadcast view) is refused: export it versioned, or export a copy
/// (`bc_tensor_contiguous`).
///
/// On success the caller (the consumer) owns `*out` and must call its deleter once; on failure
/// `*out` is NULL.
///
/// # Returns
/// `BC_OK`; `BC_ERR_READ_ONLY` (a tensor that must not be written); `BC_ERR_NULL_ARG`;
/// `BC_ERR_INVALID_HANDLE`; `BC_ERR_ALLOC`.
///
/// # Safety
/// `out` must be valid for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_tensor_to_dlpack(
    t: *const bc_tensor,
    out: *mut *mut DLManagedTensor,
) -> i32 {
    // SAFETY: forwarded.
    unsafe {
        export(
            t,
            out,
            |dl_tensor, writable| {
                if !writable {
                    return Err(Error::ReadOnlyLegacyExport.into());
                }
                Ok(DLManagedTensor {
                    dl_tensor,
                    manager_ctx: std::ptr::null_mut(),
                    deleter: Some(delete_legacy),
                })
            },
            |m, ctx| m.manager_ctx = ctx,
        )
    }
}

// ---------------------------------------------------------------------------------------------
// Import

/// Calls the producer's deleter when the last tensor over the imported memory is freed, once it
/// is armed: an import arms it only after its last fallible step, so a failed import never
/// deletes what the caller still owns.
struct Deleter<M> {
    deleter: unsafe extern "C" fn(*mut M),
    managed: *mut M,
    armed: AtomicBool,
}

// SAFETY: DLPack deleters may be called on any thread; the struct pointer is only passed back.
unsafe impl<M> Send for Deleter<M> {}
// SAFETY: as above; the flag is atomic.
unsafe impl<M> Sync for Deleter<M> {}

/// A tensor over the memory `dl` describes, read-only when `read_only`, whose release runs
/// `deleter(managed)` (when not NULL) once armed through the returned flag.
///
/// # Safety
/// `dl` must point to a valid `DLTensor` whose memory stays valid until the deleter runs;
/// `managed` is what the deleter takes.
unsafe fn import<M: 'static>(
    dl: *const DLTensor,
    read_only: bool,
    deleter: Option<unsafe extern "C" fn(*mut M)>,
    managed: *mut M,
) -> Result<(Tensor, Option<NonNull<AtomicBool>>), FfiError> {
    // Fields are read one by one through raw pointers: a producer's device type may be a value
    // this library's enum does not list, which a typed read of the struct must never see.
    // SAFETY (this block): `dl` is valid by the caller's contract.
    let (device_type, data, ndim, dl_dtype, shape, strides, byte_offset) = unsafe {
        (
            addr_of!((*dl).device.device_type).cast::<i32>().read(),
            (*dl).data,
            (*dl).ndim,
            (*dl).dtype,
            (*dl).shape,
            (*dl).strides,
            (*dl).byte_offset,
        )
    };
    if device_type != DLDeviceType::kDLCPU as i32 {
        return Err(FfiError::invalid(format_args!(
            "DLPack device type {device_type} is not supported: libbroadcast reads CPU memory \
             (kDLCPU = 1) only"
        )));
    }
    let dtype = dtype_of(dl_dtype)?;
    let ndim = usize::try_from(ndim)
        .ok()
        .filter(|&n| n <= BC_MAX_NDIM)
        .ok_or_else(|| {
            FfiError::invalid(format_args!(
                "DLPack ndim {ndim} is out of range (0 to {BC_MAX_NDIM})"
            ))
        })?;
    // SAFETY: DLPack's contract: shape holds ndim sizes, and strides, when not NULL, ndim.
    let shape: Dims = unsafe { super::handle::dims_in(shape, ndim, "dl_tensor.shape")? };
    let strides: Strides = if strides.is_null() {
        crate::engine::shape::contiguous_strides(&shape)?
    } else {
        let raw = unsafe { super::handle::slice_in(strides, ndim, "dl_tensor.strides")? };
        // A stride that addresses no element (of a dimension of size 1, or of a tensor with no
        // elements) may be anything, as in a PyTorch view whose stride wrapped past `i64::MAX`
        // or NumPy's reversed single element: a negative one is taken as 0.
        let empty = shape.contains(&0);
        let mut out: Strides = try_small_with_capacity(ndim)?;
        for (&s, &n) in raw.iter().zip(&shape) {
            let s = match isize::try_from(s) {
                Ok(s) if s < 0 && crate::engine::shape::addresses_nothing(n, empty) => 0,
                Ok(s) if s >= 0 => s,
                _ => {
                    return Err(FfiError::invalid(format_args!(
                        "DLPack stride {s} is not supported: strides must not be negative"
                    )))
                }
            };
            out.push(s);
        }
        out
    };
    // The memory the view spans, from its first element: DLPack gives no storage size.
    let numel = crate::engine::shape::checked_numel(&shape)?;
    let nbytes = if numel == 0 {
        0
    } else {
        let last = shape
            .iter()
            .zip(&strides)
            .try_fold(0usize, |acc, (&n, &s)| {
                (n - 1).checked_mul(s as usize)?.checked_add(acc)
            })
            .ok_or(Error::Overflow {
                what: "DLPack view extent",
            })?;
        checked_nbytes(
            last.checked_add(1).ok_or(Error::Overflow {
                what: "DLPack view extent",
            })?,
            dtype.size(),
        )?
    };
    let first = (data as usize)
        .checked_add(usize::try_from(byte_offset).unwrap_or(usize::MAX))
        .filter(|&a| a.checked_add(nbytes).is_some())
        .ok_or_else(|| FfiError::invalid("DLPack data + byte_offset overflows"))?;
    let first = match NonNull::new(first as *mut u8) {
        Some(p) => p,
        None if nbytes == 0 => NonNull::dangling(),
        None => return Err(FfiError::NullArg("dl_tensor.data")),
    };
    let hook = match deleter {
        Some(deleter) => Some(try_box(Deleter {
            deleter,
            managed,
            armed: AtomicBool::new(false),
        })?),
        None => None,
    };
    let armed = hook.as_ref().map(|h| NonNull::from(&h.armed));
    let release = match hook {
        Some(h) => Some(try_box(move || {
            if h.armed.load(Ordering::Acquire) {
                // SAFETY: the producer's deleter, with its own struct, once (FnOnce).
                unsafe { (h.deleter)(h.managed) }
            }
        })? as crate::engine::storage::ReleaseHook),
        None => None,
    };
    // SAFETY: the producer keeps the memory valid until its deleter runs.
    let t =
        unsafe { Tensor::from_foreign(dtype, first, nbytes, &shape, Some(&strides), 0, release)? };
    let t = if read_only { t.into_read_only()? } else { t };
    Ok((t, armed))
}

/// Registers an imported tensor as `*slot`, then arms its deleter.
fn hand_out_import(
    slot: super::handle::OutHandle<'_>,
    (t, armed): (Tensor, Option<NonNull<AtomicBool>>),
) -> Result<(), FfiError> {
    super::handle::hand_out(slot, t)?;
    if let Some(armed) = armed {
        // SAFETY: the flag lives in the release hook of the tensor just registered, which no
        // one else can free before this call returns its handle.
        unsafe { armed.as_ref() }.store(true, Ordering::Release);
    }
    Ok(())
}

/// A tensor over the memory a DLPack 1.x producer shares (NumPy's `__dlpack__(max_version=(1,
/// 0))`, PyTorch, JAX, ...), without copying. Element `(i0, ...)` is at
/// `data + byte_offset + (i0*strides[0] + ...) * itemsize`; NULL strides mean row-major. Taken:
/// CPU memory (`kDLCPU`); bool, uint8, int8 to int64, float16, bfloat16, float32, float64 with
/// one lane; strides not negative (but for a dimension of size 1 or a tensor with no elements,
/// where a negative stride addresses nothing and is taken as 0); the first element aligned to its
/// size; major version 1.
/// With `DLPACK_FLAG_BITMASK_READ_ONLY` in `flags`, the tensor and every view of it refuse
/// writes (`BC_ERR_READ_ONLY`).
///
/// On success this library owns `m`: it calls `m->deleter(m)` (when not NULL) exactly once, when
/// the last tensor over the memory (`*out` and every view of it) is freed, on the thread that
/// frees it; the caller owns `*out`. On failure `*out` is NULL, the deleter is not called and
/// the caller still owns `m`.
///
/// # Returns
/// `BC_OK`; `BC_ERR_NULL_ARG` (`m` or `out` NULL, `data` NULL with elements, `shape` NULL with
/// dimensions); `BC_ERR_INVALID_ARG` (another major version, device, data type or lane count,
/// negative strides or sizes, more than `BC_MAX_NDIM` dimensions, misaligned data);
/// `BC_ERR_OVERFLOW`; `BC_ERR_ALLOC`.
///
/// # Safety
/// `m`, when not NULL, must point to a valid struct as DLPack defines it, whose memory stays
/// valid until its deleter runs; `out` must be valid for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_tensor_from_dlpack_versioned(
    m: *mut DLManagedTensorVersioned,
    out: *mut *mut bc_tensor,
) -> i32 {
    call(|| {
        // SAFETY (this block): the caller's contract.
        let slot = unsafe { out_handle(out, "out")? };
        if m.is_null() {
            return Err(FfiError::NullArg("m"));
        }
        let (version, flags, deleter) = unsafe { ((*m).version, (*m).flags, (*m).deleter) };
        if version.major != VERSION.major {
            return Err(FfiError::invalid(format_args!(
                "DLPack version {}.{} is not supported: libbroadcast reads major version 1",
                version.major, version.minor
            )));
        }
        let read_only = flags & DLPACK_FLAG_BITMASK_READ_ONLY != 0;
        let made = unsafe { import(addr_of!((*m).dl_tensor), read_only, deleter, m)? };
        hand_out_import(slot, made)
    })
}

/// A tensor over the memory a producer shares through the older, unversioned DLPack struct
/// (NumPy's `__dlpack__()` without `max_version`), as `bc_tensor_from_dlpack_versioned` does;
/// that struct has no read-only flag, so the tensor is writable.
///
/// On success this library owns `m` and calls `m->deleter(m)` exactly once, when the last tensor
/// over the memory is freed; on failure the deleter is not called and the caller still owns `m`.
///
/// # Returns
/// As `bc_tensor_from_dlpack_versioned`, without the version check.
///
/// # Safety
/// As `bc_tensor_from_dlpack_versioned`.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_tensor_from_dlpack(
    m: *mut DLManagedTensor,
    out: *mut *mut bc_tensor,
) -> i32 {
    call(|| {
        // SAFETY (this block): the caller's contract.
        let slot = unsafe { out_handle(out, "out")? };
        if m.is_null() {
            return Err(FfiError::NullArg("m"));
        }
        let deleter = unsafe { (*m).deleter };
        let made = unsafe { import(addr_of!((*m).dl_tensor), false, deleter, m)? };
        hand_out_import(slot, made)
    })
}
