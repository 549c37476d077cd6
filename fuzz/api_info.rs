//! The informational calls: `bc_status_str` (every status, and codes that are none), `bc_dtype_size`
//! and `bc_dtype_name` (every type, and codes that are none), `bc_version`, `bc_get_num_threads`,
//! the `bc_scalar_*` constructors, and the last failure as data (`bc_last_error_info`,
//! `bc_last_error_shape`) after whatever call came before: its refusals (NULL arguments, an
//! unknown `which`, a buffer too small) are not recorded, so the status and message read before
//! and after are the same; the shape lengths agree with the info's `ndim_a` / `ndim_b`.
use super::*;

/// Every status, in code order.
const STATUSES: [i32; 13] = [
    BC_OK,
    BC_ERR_NULL_ARG,
    BC_ERR_INVALID_ARG,
    BC_ERR_SHAPE,
    BC_ERR_DTYPE,
    BC_ERR_OVERLAP,
    BC_ERR_OVERFLOW,
    BC_ERR_ALLOC,
    BC_ERR_BUFFER_TOO_SMALL,
    BC_ERR_INTERNAL,
    BC_ERR_INVALID_HANDLE,
    BC_ERR_VALUE,
    BC_ERR_READ_ONLY,
];

/// A static C string as text.
fn text(p: *const c_char) -> Result<String, String> {
    if p.is_null() {
        return Err("NULL string".into());
    }
    // SAFETY: the library's static NUL-terminated strings.
    let s = unsafe { CStr::from_ptr(p) }
        .to_str()
        .map_err(|e| e.to_string())?;
    if !s.is_ascii() {
        return Err(format!("not ASCII: {s:?}"));
    }
    Ok(s.to_string())
}

impl Runner<'_> {
    /// Counts a call that is checked here (its failures are not recorded as the last error).
    fn count(&mut self, got: i32) {
        self.stats.calls += 1;
        self.stats.coverage.insert((self.family, got));
        let family = self
            .stats
            .families
            .entry(FAMILIES[self.family as usize])
            .or_default();
        family.0 += 1;
        if got == BC_OK {
            self.stats.ok_calls += 1;
            family.1 += 1;
        }
    }

    pub(super) fn op_info(&mut self) -> Result<Result<(), Skip>, String> {
        let kind = self.inp.below(6);
        let code = self.inp.dtype();
        let status = match self.inp.u8() {
            b @ 0..=249 => STATUSES[b as usize % STATUSES.len()],
            b => [-1, 13, 100, i32::MIN, i32::MAX, 14][(b - 250) as usize],
        };
        let (which, cap) = (self.inp.below(3) as i32, self.inp.below(6));
        let null = self.inp.u8() == 255;
        self.note(format!(
            "info(kind {kind}, dtype {code}, status {status}, which {which}, cap {cap})"
        ));
        match kind {
            0 => {
                let s = text(bc_status_str(status))?;
                let known = STATUSES.contains(&status);
                if (s == "unknown status") == known || s.is_empty() {
                    return Err(format!("bc_status_str({status}) is {s:?}"));
                }
                // Distinct for distinct statuses.
                if known {
                    for &other in &STATUSES {
                        if other != status && text(bc_status_str(other))? == s {
                            return Err(format!("statuses {status} and {other} both read {s:?}"));
                        }
                    }
                }
                self.count(BC_OK);
            }
            1 => {
                let (size, name) = (bc_dtype_size(code), text(bc_dtype_name(code))?);
                let (want_size, want_name) = match valid_dtype(code) {
                    true => (itemsize(code), testkit::dtype_str(code)),
                    false => (0, "unknown"),
                };
                if (size, name.as_str()) != (want_size, want_name) {
                    return Err(format!(
                        "dtype {code}: size {size}, name {name:?}; model {want_size}, {want_name:?}"
                    ));
                }
                self.count(BC_OK);
            }
            2 => {
                let v = text(bc_version())?;
                let parts: Vec<&str> = v.split('.').collect();
                if parts.len() != 3 || parts.iter().any(|p| p.parse::<u32>().is_err()) {
                    return Err(format!("bc_version is {v:?}"));
                }
                let n = bc_get_num_threads();
                if !(1..=BC_MAX_THREADS).contains(&n) {
                    return Err(format!("bc_get_num_threads is {n}"));
                }
                self.count(BC_OK);
            }
            3 => {
                let (i, f) = (self.inp.int(), self.inp.value());
                let sb = bc_scalar_bool(null);
                let si = bc_scalar_int(i);
                let sf = bc_scalar_float(f);
                if (sb.kind, sb.b) != (BC_SCALAR_BOOL, null)
                    || (si.kind, si.i) != (BC_SCALAR_INT, i)
                    || sf.kind != BC_SCALAR_FLOAT
                    || sf.f.to_bits() != f.to_bits()
                {
                    return Err(format!("bc_scalar_*: {sb:?} {si:?} {sf:?}"));
                }
                self.count(BC_OK);
            }
            _ => {
                // The last failure, read as data: its refusals leave the record as it was.
                let before = (bc_last_error_status(), last_message());
                // SAFETY: a zeroed info is a valid value of the plain C struct.
                let mut info: bc_error_info = unsafe { std::mem::zeroed() };
                // SAFETY: NULL or a valid out-pointer.
                let st =
                    unsafe { bc_last_error_info(if null { ptr::null_mut() } else { &mut info }) };
                let want = if null { BC_ERR_NULL_ARG } else { BC_OK };
                if st != want {
                    return Err(format!("bc_last_error_info: {st}, model {want}"));
                }
                self.count(st);
                let mut buf = [0i64; BC_MAX_NDIM];
                let mut ndim: i64 = -2;
                let null_buf = kind == 5 && null && cap > 0;
                // SAFETY: buf valid for `cap` writes (or NULL), ndim valid.
                let st = unsafe {
                    bc_last_error_shape(
                        which,
                        if null_buf {
                            ptr::null_mut()
                        } else {
                            buf.as_mut_ptr()
                        },
                        cap,
                        &mut ndim,
                    )
                };
                self.count(st);
                // Every pointer is checked before the values, as everywhere in the library.
                let want = if null_buf {
                    BC_ERR_NULL_ARG
                } else if which > 1 {
                    BC_ERR_INVALID_ARG
                } else if !null {
                    let n = if which == 0 { info.ndim_a } else { info.ndim_b };
                    if ndim != n {
                        return Err(format!(
                            "bc_last_error_shape({which}): ndim {ndim}, the info's {n}"
                        ));
                    }
                    if n > cap as i64 {
                        BC_ERR_BUFFER_TOO_SMALL
                    } else {
                        BC_OK
                    }
                } else {
                    st
                };
                if st != want {
                    return Err(format!(
                        "bc_last_error_shape({which}, cap {cap}): {st}, model {want}"
                    ));
                }
                let after = (bc_last_error_status(), last_message());
                if after != before {
                    return Err(format!(
                        "reading the last failure changed it: {before:?} -> {after:?}"
                    ));
                }
            }
        }
        Ok(Ok(()))
    }
}
