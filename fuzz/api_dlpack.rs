//! DLPack round trips within one step: `bc_tensor_to_dlpack_versioned` / `bc_tensor_to_dlpack`
//! of a live tensor, the struct checked against the model (CPU, version 1.0 for the versioned
//! one, the type's code, bits and one lane, shape and strides never NULL and equal to the
//! tensor's, `byte_offset` 0, `data` the address of the first element as `bc_tensor_data` gives
//! it, the read-only flag exactly when the tensor's elements share memory, which the
//! unversioned export refuses with `BC_ERR_READ_ONLY`); then either the deleter called directly,
//! or the struct imported back (`bc_tensor_from_dlpack_versioned` / `bc_tensor_from_dlpack`): the
//! import has the same type, shape and strides (but a negative stride that addresses nothing, on
//! a dimension of size 1 or of an empty tensor, is 0; any other negative one is refused), offset
//! 0, the same data address and the same elements, and freeing it calls the deleter exactly once (the fuzzer puts a counting deleter
//! in front of the library's). Nothing is left behind, so the model is unchanged by the step.
use super::*;

/// The library's deleters of the exports in flight (one at a time: programs run exclusively),
/// and how many times the counting deleter ran.
static DELETER_V: Mutex<Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>> =
    Mutex::new(None);
static DELETER_U: Mutex<Option<unsafe extern "C" fn(*mut DLManagedTensor)>> = Mutex::new(None);
static DELETED: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn counting_v(m: *mut DLManagedTensorVersioned) {
    DELETED.fetch_add(1, Ordering::SeqCst);
    let d = DELETER_V
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .expect("a deleter");
    // SAFETY: the library's own deleter of this export.
    unsafe { d(m) }
}

unsafe extern "C" fn counting_u(m: *mut DLManagedTensor) {
    DELETED.fetch_add(1, Ordering::SeqCst);
    let d = DELETER_U
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .expect("a deleter");
    // SAFETY: the library's own deleter of this export.
    unsafe { d(m) }
}

fn type_of(dt: i32) -> (u8, u8) {
    let code = match dt {
        BOOL => 6,
        U8 => 1,
        F16 | F32 | F64 => 2,
        BF16 => 4,
        _ => 0,
    };
    (code, (itemsize(dt) * 8) as u8)
}

/// The strides an import of `t`'s export has: `t`'s, but a negative stride that addresses
/// nothing (of a dimension of size 1, or of a tensor with no elements) taken as 0.
fn imported_strides(t: &TM) -> Vec<i64> {
    let empty = t.numel() == 0;
    t.shape
        .iter()
        .zip(&t.strides)
        .map(|(&n, &s)| if s < 0 && (n == 1 || empty) { 0 } else { s })
        .collect()
}

/// What importing `t`'s export gives: refused when a stride that addresses elements is negative.
fn import_status(t: &TM) -> i32 {
    if imported_strides(t).iter().any(|&s| s < 0) {
        BC_ERR_INVALID_ARG
    } else {
        BC_OK
    }
}

impl Runner<'_> {
    /// The address `bc_tensor_data` gives for `t`.
    fn data_address(h: *const bc_tensor) -> Result<usize, String> {
        let mut p: *mut c_void = ptr::null_mut();
        // SAFETY: valid out-pointer; the other two NULL.
        let st = unsafe { bc_tensor_data(h, &mut p, ptr::null_mut(), ptr::null_mut()) };
        if st != BC_OK {
            return Err(format!("bc_tensor_data failed: {st} {}", last_message()));
        }
        Ok(p as usize)
    }

    /// The exported `DLTensor` against the model's `t`.
    fn check_dl(&self, what: &str, dl: &DLTensor, t: &TM, data: usize) -> Result<(), String> {
        let (code, bits) = type_of(t.dtype);
        let nd = t.ndim();
        let bad = |m: String| Err(format!("{what}: {m}"));
        if dl.device.device_type != DLDeviceType::kDLCPU || dl.device.device_id != 0 {
            return bad(format!("device {:?}", dl.device));
        }
        if (dl.dtype.code, dl.dtype.bits, dl.dtype.lanes) != (code, bits, 1) {
            return bad(format!("dtype {:?} for {}", dl.dtype, t.dtype));
        }
        if dl.ndim as usize != nd || dl.shape.is_null() || dl.strides.is_null() {
            return bad(format!(
                "ndim {} (model {nd}), shape {:p}, strides {:p}",
                dl.ndim, dl.shape, dl.strides
            ));
        }
        // SAFETY: non-NULL arrays of `ndim` entries, as DLPack defines them.
        let (shape, strides) = unsafe {
            (
                std::slice::from_raw_parts(dl.shape, nd),
                std::slice::from_raw_parts(dl.strides, nd),
            )
        };
        let want: Vec<i64> = t.shape.iter().map(|&s| s as i64).collect();
        if shape != want.as_slice() || strides != t.strides.as_slice() {
            return bad(format!("shape {shape:?} strides {strides:?}"));
        }
        if dl.byte_offset != 0 {
            return bad(format!("byte_offset {}", dl.byte_offset));
        }
        if t.numel() > 0 && dl.data as usize != data {
            return bad(format!("data {:p}, bc_tensor_data {data:#x}", dl.data));
        }
        Ok(())
    }

    /// The imported tensor against `t`: same geometry at offset 0, same address, same elements.
    fn check_import(
        &self,
        what: &str,
        h: *mut bc_tensor,
        t: &TM,
        data: usize,
    ) -> Result<(), String> {
        let view = TM {
            offset: 0,
            ..t.clone()
        };
        let (mut dt, mut nd, mut off) = (0i32, 0usize, 0i64);
        let mut shape = [0i64; BC_MAX_NDIM];
        let mut strides = [0i64; BC_MAX_NDIM];
        // SAFETY: valid out-pointers and buffers of BC_MAX_NDIM entries.
        let sts = unsafe {
            [
                bc_tensor_dtype(h, &mut dt),
                bc_tensor_ndim(h, &mut nd),
                bc_tensor_offset(h, &mut off),
                bc_tensor_shape(h, shape.as_mut_ptr(), BC_MAX_NDIM),
                bc_tensor_strides(h, strides.as_mut_ptr(), BC_MAX_NDIM),
            ]
        };
        if sts.iter().any(|&s| s != BC_OK) {
            return Err(format!("{what}: queries of the import failed {sts:?}"));
        }
        let want: Vec<i64> = t.shape.iter().map(|&s| s as i64).collect();
        if dt != t.dtype
            || nd != t.ndim()
            || shape[..nd] != want[..]
            || strides[..nd] != imported_strides(t)[..]
            || off != 0
        {
            return Err(format!(
                "{what}: import is dtype {dt} shape {:?} strides {:?} offset {off}",
                &shape[..nd],
                &strides[..nd]
            ));
        }
        if t.numel() > 0 && Self::data_address(h)? != data {
            return Err(format!("{what}: the import's data is not the tensor's"));
        }
        if t.numel() <= MAX_CHECK_ELEMS {
            // The elements read through the original's model.
            let _ = view;
            self.check_values(h, t)
                .map_err(|e| format!("{what}: import: {e}"))?;
        }
        Ok(())
    }

    /// One round trip (or export and delete).
    pub(super) fn op_dlpack(&mut self) -> Result<Result<(), Skip>, String> {
        let versioned = self.inp.u8() % 4 != 0;
        let import = self.inp.u8() % 3 != 0;
        let a = self.arg();
        let null_out = self.out_flag();
        let t = self.resolve(a);
        let what = if versioned {
            "to_dlpack_versioned"
        } else {
            "to_dlpack"
        };
        self.note(format!(
            "{what}({}){}",
            self.describe(a),
            if import { " and back" } else { ", deleted" }
        ));
        let h = self.raw(a);
        let expected = match (&t, null_out) {
            (_, true) => Err(BC_ERR_NULL_ARG),
            (Err(s), _) => Err(*s),
            (Ok(t), _) if !versioned && self.internal_overlap(t) => Err(BC_ERR_READ_ONLY),
            (Ok(_), _) => Ok(()),
        };
        let exp_st = expected.map_or_else(|s| s, |_| BC_OK);
        DELETED.store(0, Ordering::SeqCst);
        if versioned {
            let mut m: *mut DLManagedTensorVersioned = 0x55 as *mut _;
            let out = if null_out {
                ptr::null_mut()
            } else {
                &mut m as *mut _
            };
            // SAFETY: out NULL or valid.
            let st = unsafe { bc_tensor_to_dlpack_versioned(h, out) };
            self.check_status(what, st, exp_st)?;
            if st != BC_OK {
                if !null_out && !m.is_null() {
                    return Err(format!("{what}: failed but *out = {m:p}"));
                }
                return Ok(Ok(()));
            }
            let t = t.expect("a live tensor");
            let data = Self::data_address(h)?;
            // SAFETY: a successful export: a valid struct until its deleter runs.
            let mref = unsafe { &mut *m };
            if (mref.version.major, mref.version.minor) != (1, 0) {
                return Err(format!("{what}: version {:?}", mref.version));
            }
            let ro = self.internal_overlap(&t);
            if (mref.flags & DLPACK_FLAG_BITMASK_READ_ONLY != 0) != ro {
                return Err(format!(
                    "{what}: flags {:#x}, model read-only {ro}",
                    mref.flags
                ));
            }
            self.check_dl(what, &mref.dl_tensor, &t, data)?;
            let Some(lib) = mref.deleter else {
                return Err(format!("{what}: no deleter"));
            };
            *DELETER_V.lock().unwrap_or_else(|e| e.into_inner()) = Some(lib);
            mref.deleter = Some(counting_v);
            if import {
                let mut u: *mut bc_tensor = ptr::null_mut();
                // SAFETY: a valid struct whose memory lives until its deleter runs.
                let st = unsafe { bc_tensor_from_dlpack_versioned(m, &mut u) };
                self.check_status("from_dlpack_versioned", st, import_status(&t))?;
                if st != BC_OK {
                    if !u.is_null() || DELETED.load(Ordering::SeqCst) != 0 {
                        return Err(
                            "from_dlpack_versioned: a refused import left a tensor or freed".into(),
                        );
                    }
                    // SAFETY: a refused import leaves the struct to the consumer.
                    unsafe { counting_v(m) };
                    return Self::deleted_once(what);
                }
                let checked = self.check_import("from_dlpack_versioned", u, &t, data);
                if DELETED.load(Ordering::SeqCst) != 0 {
                    return Err("from_dlpack_versioned: the deleter ran before the free".into());
                }
                bc_tensor_free(u);
                checked?;
            } else {
                // SAFETY: the consumer's one call.
                unsafe { counting_v(m) };
            }
        } else {
            let mut m: *mut DLManagedTensor = 0x55 as *mut _;
            let out = if null_out {
                ptr::null_mut()
            } else {
                &mut m as *mut _
            };
            // SAFETY: out NULL or valid.
            let st = unsafe { bc_tensor_to_dlpack(h, out) };
            self.check_status(what, st, exp_st)?;
            if st != BC_OK {
                if !null_out && !m.is_null() {
                    return Err(format!("{what}: failed but *out = {m:p}"));
                }
                return Ok(Ok(()));
            }
            let t = t.expect("a live tensor");
            let data = Self::data_address(h)?;
            // SAFETY: a successful export: a valid struct until its deleter runs.
            let mref = unsafe { &mut *m };
            self.check_dl(what, &mref.dl_tensor, &t, data)?;
            let Some(lib) = mref.deleter else {
                return Err(format!("{what}: no deleter"));
            };
            *DELETER_U.lock().unwrap_or_else(|e| e.into_inner()) = Some(lib);
            mref.deleter = Some(counting_u);
            if import {
                let mut u: *mut bc_tensor = ptr::null_mut();
                // SAFETY: a valid struct whose memory lives until its deleter runs.
                let st = unsafe { bc_tensor_from_dlpack(m, &mut u) };
                self.check_status("from_dlpack", st, import_status(&t))?;
                if st != BC_OK {
                    if !u.is_null() || DELETED.load(Ordering::SeqCst) != 0 {
                        return Err("from_dlpack: a refused import left a tensor or freed".into());
                    }
                    // SAFETY: a refused import leaves the struct to the consumer.
                    unsafe { counting_u(m) };
                    return Self::deleted_once(what);
                }
                let checked = self.check_import("from_dlpack", u, &t, data);
                if DELETED.load(Ordering::SeqCst) != 0 {
                    return Err("from_dlpack: the deleter ran before the free".into());
                }
                bc_tensor_free(u);
                checked?;
            } else {
                // SAFETY: the consumer's one call.
                unsafe { counting_u(m) };
            }
        }
        Self::deleted_once(what)
    }

    /// The step's end: the export's deleter ran exactly once.
    fn deleted_once(what: &str) -> Result<Result<(), Skip>, String> {
        let n = DELETED.load(Ordering::SeqCst);
        if n != 1 {
            return Err(format!("{what}: the deleter ran {n} times"));
        }
        Ok(Ok(()))
    }
}
