//! `bc_tensor_format` against `tests/data/pytorch/repr.jsonl` (PyTorch 2.15's `str(tensor)` under
//! its default print options), through the C ABI: every row's text exactly; and the buffer
//! protocol (sizing with `(NULL, 0)`, truncation, the NUL, argument checks).

use broadcast::ffi::*;
use serde_json::Value;
use std::ffi::c_char;
use std::ptr;
use testkit::*;

fn value(dtype: i32, v: &Value) -> V {
    match v.as_str() {
        Some("nan") => V::F(f64::NAN),
        Some("inf") => V::F(f64::INFINITY),
        Some("-inf") => V::F(f64::NEG_INFINITY),
        Some(s) => panic!("unexpected string {s:?}"),
        None => json_value(dtype, v),
    }
}

/// The text of `t`, through the sizing call and a second call with a buffer of that size.
fn format(t: &T) -> Result<String, Err> {
    let mut n = usize::MAX;
    check(unsafe { bc_tensor_format(t.ptr(), ptr::null_mut(), 0, &mut n) })?;
    let mut buf = vec![0xAAu8; n + 1];
    let mut m = 0usize;
    check(unsafe {
        bc_tensor_format(t.ptr(), buf.as_mut_ptr() as *mut c_char, buf.len(), &mut m)
    })?;
    assert_eq!(m, n, "the two calls gave different lengths");
    assert_eq!(buf[n], 0, "not NUL-terminated");
    Ok(String::from_utf8(buf[..n].to_vec()).expect("ASCII text"))
}

#[test]
fn repr_matches_pytorch() {
    let rows = read_jsonl("repr.jsonl");
    let mut failures = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        let dtype = dtype_code(row["dtype"].as_str().unwrap());
        let shape = json_shape(&row["shape"]);
        let vals: Vec<V> = row["values"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| value(dtype, v))
            .collect();
        let t =
            T::from_values(dtype, &shape, &vals).unwrap_or_else(|e| panic!("line {}: {e}", i + 1));
        let want = row["text"].as_str().unwrap();
        match format(&t) {
            Ok(got) if got == want => {}
            Ok(got) => failures.push(format!(
                "line {} ({} {:?}):\n--- expected\n{want}\n--- got\n{got}",
                i + 1,
                row["dtype"],
                shape
            )),
            Err(e) => failures.push(format!("line {}: {e}", i + 1)),
        }
    }
    println!("repr.jsonl: checked {} rows", rows.len());
    for f in failures.iter().take(10) {
        println!("{f}\n");
    }
    assert!(
        failures.is_empty(),
        "{} of {} rows failed",
        failures.len(),
        rows.len()
    );
}

/// Views print their own elements (strides and offset followed), not their storage's.
#[test]
fn views_print_their_elements() {
    let base = T::arange_f32(&[2, 3], 0.0);
    let mut tt: *mut bc_tensor = ptr::null_mut();
    check(unsafe { bc_tensor_transpose(base.ptr(), 0, 1, &mut tt) }).unwrap();
    let tt = T(tt);
    assert_eq!(
        format(&tt).unwrap(),
        "tensor([[0., 3.],\n        [1., 4.],\n        [2., 5.]])"
    );
    let row = base.slice(0, 1, 2, 1).unwrap();
    let e = row.expand(&[2, 1, 3]).unwrap();
    assert_eq!(
        format(&e).unwrap(),
        "tensor([[[3., 4., 5.]],\n\n        [[3., 4., 5.]]])"
    );
}

#[test]
fn buffer_protocol() {
    let t = T::from_values(I32, &[3], &[V::I(1), V::I(-20), V::I(300)]).unwrap();
    let full = "tensor([  1, -20, 300], dtype=torch.int32)";
    assert_eq!(format(&t).unwrap(), full);
    // Truncated: len - 1 bytes and a NUL, the full length still reported, BC_OK.
    let mut buf = [0x55u8; 10];
    let mut n = 0usize;
    let s =
        unsafe { bc_tensor_format(t.ptr(), buf.as_mut_ptr() as *mut c_char, buf.len(), &mut n) };
    assert_eq!(s, BC_OK);
    assert_eq!(n, full.len());
    assert_eq!(&buf[..9], &full.as_bytes()[..9]);
    assert_eq!(buf[9], 0);
    // A one-byte buffer holds the NUL alone.
    let mut one = [0x55u8; 1];
    let s = unsafe { bc_tensor_format(t.ptr(), one.as_mut_ptr() as *mut c_char, 1, &mut n) };
    assert_eq!((s, one[0], n), (BC_OK, 0, full.len()));
    // Argument checks: nothing written.
    let mut untouched = [0x55u8; 4];
    n = 7;
    let p = untouched.as_mut_ptr() as *mut c_char;
    assert_eq!(
        unsafe { bc_tensor_format(t.ptr(), p, 4, ptr::null_mut()) },
        BC_ERR_NULL_ARG
    );
    assert_eq!(
        unsafe { bc_tensor_format(ptr::null(), p, 4, &mut n) },
        BC_ERR_NULL_ARG
    );
    assert_eq!(
        unsafe { bc_tensor_format(t.ptr(), ptr::null_mut(), 4, &mut n) },
        BC_ERR_NULL_ARG
    );
    let dead = T::zeros(F32, &[1]).unwrap();
    let raw = dead.mut_ptr();
    drop(dead);
    assert_eq!(
        unsafe { bc_tensor_format(raw, p, 4, &mut n) },
        BC_ERR_INVALID_HANDLE
    );
    assert_eq!((untouched, n), ([0x55u8; 4], 7));
}

/// `(length, text)` from a buffer of `cap` bytes: the status must be `BC_OK` and the text
/// NUL-terminated at `min(length, cap - 1)`.
fn format_into(t: &T, cap: usize) -> (usize, Vec<u8>) {
    let mut buf = vec![0xAAu8; cap];
    let mut n = usize::MAX;
    let s = unsafe { bc_tensor_format(t.ptr(), buf.as_mut_ptr() as *mut c_char, cap, &mut n) };
    assert_eq!(s, BC_OK, "bc_tensor_format: {}", last_error());
    let end = n.min(cap - 1);
    assert_eq!(buf[end], 0, "not NUL-terminated at {end}");
    buf.truncate(end);
    (n, buf)
}

/// The length of PyTorch's text of a float32 tensor of `ndim` dimensions of `n` (at most 6, so
/// every element is shown) whose elements all print in `w` characters, from `_tensor_str`: a
/// row joins its elements with ", ", `(80 - indent) / (w + 2)` to a line, lines joined by ",\n"
/// and the indent plus one; a dimension above joins its parts with "," then one line break per
/// dimension below it, then the indent plus one; `tensor(` and `)` around (no suffix for
/// float32). The indent is 7 (`tensor(`) plus one per dimension.
fn pytorch_len(ndim: u32, n: u128, w: u128) -> u128 {
    let last_indent = 7 + ndim as u128 - 1;
    let per_line = ((80 - last_indent) / (w + 2)).max(1);
    let breaks = n.div_ceil(per_line) - 1;
    let mut len = 2 + n * w + 2 * (n - 1) + breaks * (last_indent + 1);
    for d in (0..ndim - 1).rev() {
        let (rest, indent) = ((ndim - d) as u128, 7 + d as u128);
        len = 2 + n * len + (n - 1) * (1 + (rest - 1) + indent + 1);
    }
    7 + len + 1
}

/// A broadcast view of 2^32 elements over one element of storage: its length is counted, not
/// written (the call used to run for hours), and a small buffer gets the text's first bytes.
#[test]
#[cfg(target_pointer_width = "64")]
fn a_broadcast_view_of_2_pow_32_elements_is_counted_not_written() {
    let one = T::full(F32, &[1], 1.0).unwrap();
    let view = one.expand(&[4; 16]).unwrap();
    let want = pytorch_len(16, 4, 2);
    assert!(want > 1 << 35, "about 44 GB: {want}");
    let (n, text) = format_into(&view, 64);
    assert_eq!(n as u128, want);
    // "tensor(", 16 brackets, a row of four "1.", then the next row's bracket under the 16th.
    let row = "1., 1., 1., 1.]";
    let prefix = format!("tensor({}{row},\n{}[{row}", "[".repeat(16), " ".repeat(22));
    assert_eq!(String::from_utf8(text).unwrap(), prefix[..63]);
    // The sizing call gives the same length and writes nothing.
    let mut m = 0usize;
    check(unsafe { bc_tensor_format(view.ptr(), ptr::null_mut(), 0, &mut m) }).unwrap();
    assert_eq!(m, n);
    // 2^62 elements of four bytes or more: a length past size_t is refused, not wrapped.
    let huge = one.expand(&[4; 31]).unwrap();
    let s = unsafe { bc_tensor_format(huge.ptr(), ptr::null_mut(), 0, &mut m) };
    assert_eq!((s, m), (BC_ERR_OVERFLOW, n));
}

/// Smaller texts are checked whole: the counted length is the written text's, for a view and
/// for its row-major copy (whose text is the same: PyTorch prints values, not layout), and a
/// truncated text is the full text's prefix. Shapes and values are random, with broadcast
/// dimensions, summarised ones (over 1000 elements, more than 6 along a dimension) and
/// nan, inf, -inf and -0.0 among the values.
#[test]
fn counted_lengths_are_the_written_texts_lengths() {
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = |below: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % below
    };
    let specials = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -0.0, 0.0];
    for case in 0..400 {
        let dtype = [F32, F64, F16, BF16, I32, I64, U8, BOOL][next(8) as usize];
        let ndim = 1 + next(5) as usize;
        let shape: Vec<i64> = (0..ndim)
            .map(|_| [1, 2, 3, 5, 7, 12][next(6) as usize])
            .collect();
        // The stored tensor has size 1 where the view broadcasts.
        let base_shape: Vec<i64> = shape
            .iter()
            .map(|&n| if next(3) == 0 { 1 } else { n })
            .collect();
        let count: i64 = base_shape.iter().product();
        let scale = [1.0, 1e-6, 1e9, 0.25][next(4) as usize];
        let vals: Vec<V> = (0..count)
            .map(|_| match dtype {
                BOOL => V::B(next(2) == 1),
                I32 | I64 => V::I(next(2001) as i64 - 1000),
                U8 => V::I(next(256) as i64),
                _ if next(6) == 0 => V::F(specials[next(5) as usize]),
                _ => V::F((next(2001) as f64 - 1000.0) * scale),
            })
            .collect();
        let base = T::from_values(dtype, &base_shape, &vals).unwrap();
        let view = base.expand(&shape).unwrap();
        let mut copy = ptr::null_mut();
        check(unsafe { bc_tensor_contiguous(view.ptr(), &mut copy) }).unwrap();
        let copy = T(copy);
        // `format` checks that the text written into a buffer of the counted length plus one
        // ends there.
        let text = format(&view).unwrap();
        assert_eq!(
            format(&copy).unwrap(),
            text,
            "case {case}: the copy's text differs"
        );
        let n = text.len();
        let cut = next(n as u64) as usize + 1;
        let (k, prefix) = format_into(&view, cut);
        assert_eq!(
            (k, &prefix[..]),
            (n, &text.as_bytes()[..cut - 1]),
            "case {case}: {cut}"
        );
    }
}

/// A view whose elements overlap (strides 1 over a small buffer) and that shows more elements
/// than the formatter may read is refused, and the buffer left as it was.
#[test]
fn a_text_needing_too_many_reads_is_refused() {
    let base = T::arange_f32(&[64], 0.0);
    let view = base.as_strided(&[4; 13], &[1; 13], 0).unwrap();
    let mut buf = [0x55u8; 8];
    let mut n = 7usize;
    let s = unsafe { bc_tensor_format(view.ptr(), buf.as_mut_ptr() as *mut c_char, 8, &mut n) };
    assert_eq!((s, n, buf), (BC_ERR_OVERFLOW, 7, [0x55u8; 8]));
    let mut info = std::mem::MaybeUninit::<bc_error_info>::uninit();
    assert_eq!(unsafe { bc_last_error_info(info.as_mut_ptr()) }, BC_OK);
    assert_eq!(unsafe { info.assume_init() }.size_a, 1 << 26);
    // Three dimensions fewer read 2^20 elements: allowed.
    let fewer = base.as_strided(&[4; 10], &[1; 10], 0).unwrap();
    let mut m = 0usize;
    check(unsafe { bc_tensor_format(fewer.ptr(), ptr::null_mut(), 0, &mut m) }).unwrap();
    assert!(m > 3 << 20, "{m}");
}
