//! `bc_tensor_format` against `tests/data/pytorch/repr.jsonl` (PyTorch 2.15's `str(tensor)` under
//! its default print options), through the C ABI: every row's text exactly; and the buffer
//! protocol (sizing with `(NULL, 0)`, truncation, the NUL, argument checks).

mod common;

use broadcast::ffi::*;
use common::*;
use serde_json::Value;
use std::ffi::c_char;
use std::ptr;

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
