//! More views and the text form: `bc_tensor_unsqueeze`, `bc_tensor_squeeze`,
//! `bc_tensor_squeeze_all` (views: the model's own storage, shape and strides, PyTorch's rules),
//! and `bc_tensor_format` (the sizing call's length is the written length, a short buffer keeps a
//! NUL-terminated prefix of the text, nothing is written on failure).
use super::*;

impl Runner<'_> {
    /// `unsqueeze`, `squeeze(dim)` or `squeeze()`.
    pub(super) fn op_squeeze(&mut self) -> Result<Result<(), Skip>, String> {
        let kind = self.inp.below(3);
        let a = self.arg();
        let dim = self.inp.int();
        let dst = self.inp.below(NSLOTS);
        let null_out = self.out_flag();
        let expected: Expect<TM> = (|| {
            if null_out {
                return Err(BC_ERR_NULL_ARG);
            }
            let t = self.resolve(a)?;
            let nd = t.ndim();
            let (mut shape, mut strides) = (t.shape.clone(), t.strides.clone());
            match kind {
                0 => {
                    // `dim` counts from the end of the result, which has one dimension more.
                    let d = Self::wrap_dim(dim, nd + 1)?;
                    if nd + 1 > BC_MAX_NDIM {
                        return Err(BC_ERR_INVALID_ARG);
                    }
                    let stride = if d >= nd {
                        1
                    } else {
                        (t.shape[d] as i64).wrapping_mul(t.strides[d])
                    };
                    shape.insert(d, 1);
                    strides.insert(d, stride);
                }
                1 => {
                    let d = Self::wrap_dim(dim, nd.max(1))?;
                    if nd > 0 && t.shape[d] == 1 {
                        shape.remove(d);
                        strides.remove(d);
                    }
                }
                _ => {
                    let keep: Vec<usize> = (0..nd).filter(|&d| t.shape[d] != 1).collect();
                    shape = keep.iter().map(|&d| t.shape[d]).collect();
                    strides = keep.iter().map(|&d| t.strides[d]).collect();
                }
            }
            Ok(TM {
                shape,
                strides,
                ..t
            })
        })();
        let names = ["unsqueeze", "squeeze", "squeeze_all"];
        self.note(format!(
            "{}({}, {dim}) -> #{dst}",
            names[kind],
            self.describe(a)
        ));
        let h = self.raw(a);
        // SAFETY: out NULL or valid.
        self.call_new(names[kind], null_out, dst, expected, |o| unsafe {
            match kind {
                0 => bc_tensor_unsqueeze(h, dim, o),
                1 => bc_tensor_squeeze(h, dim, o),
                _ => bc_tensor_squeeze_all(h, o),
            }
        })
    }

    /// `bc_tensor_format`: sizing, the whole text, a truncated text.
    pub(super) fn op_format(&mut self) -> Result<Result<(), Skip>, String> {
        let a = self.arg();
        let cut = self.inp.u8() as usize;
        let null_length = self.inp.u8() == 255;
        let t = self.resolve(a);
        self.note(format!("format({}, cut {cut})", self.describe(a)));
        let h = self.raw(a);
        if null_length {
            // SAFETY: NULL length is refused before anything is written.
            let st = unsafe { bc_tensor_format(h, ptr::null_mut(), 0, ptr::null_mut()) };
            // Which refusal comes first, the NULL length or a bad handle, is not stated.
            let want = match &t {
                Err(s) if st == *s => *s,
                _ => BC_ERR_NULL_ARG,
            };
            return self.check_status("format(NULL length)", st, want).map(Ok);
        }
        let mut length = usize::MAX;
        // SAFETY: (NULL, 0) asks for the length only.
        let st = unsafe { bc_tensor_format(h, ptr::null_mut(), 0, &mut length) };
        let t = match t {
            Err(s) => return self.check_status("format", st, s).map(Ok),
            Ok(t) => t,
        };
        // Reading more than 2^20 elements is refused; a view of up to 7 dimensions shows at
        // most 6 elements of each when summarised (6^7 < 2^20), or all of at most 1000.
        if st == BC_ERR_OVERFLOW && t.ndim() > 7 {
            return self.check_status("format", st, BC_ERR_OVERFLOW).map(Ok);
        }
        self.check_status("format (sizing)", st, BC_OK)?;
        if length > 1 << 20 {
            return Ok(Err(Skip));
        }
        let mut full = vec![0xEEu8; length + 2];
        let mut written = 0usize;
        // SAFETY: full holds length + 2 bytes.
        let st = unsafe { bc_tensor_format(h, full.as_mut_ptr().cast(), length + 1, &mut written) };
        self.check_status("format", st, BC_OK)?;
        if written != length || full[length] != 0 || full[length + 1] != 0xEE {
            return Err(format!(
                "format: sized {length}, wrote length {written}, NUL {} past it {:#x}",
                full[length],
                full[length + 1]
            ));
        }
        if full[..length].iter().any(|&b| b == 0 || !b.is_ascii()) {
            return Err("format: the text has a NUL or a non-ASCII byte".into());
        }
        let text = String::from_utf8_lossy(&full[..length]).into_owned();
        if !text.starts_with("tensor(") {
            return Err(format!("format: {text:?} does not start with tensor("));
        }
        // A short buffer: the text's prefix, NUL-terminated, the full length reported.
        let k = 1 + cut % (length + 1);
        let mut part = vec![0xEEu8; k + 1];
        let mut reported = 0usize;
        // SAFETY: part holds k + 1 bytes.
        let st = unsafe { bc_tensor_format(h, part.as_mut_ptr().cast(), k, &mut reported) };
        self.check_status("format (short)", st, BC_OK)?;
        let keep = k - 1;
        if reported != length || part[..keep] != full[..keep] || part[keep] != 0 || part[k] != 0xEE
        {
            return Err(format!(
                "format into {k} bytes: length {reported} (full {length}), {:?}",
                String::from_utf8_lossy(&part[..keep])
            ));
        }
        Ok(Ok(()))
    }
}
