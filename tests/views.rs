//! Conformance of the shape-changing views (`bc_tensor_view`, `bc_tensor_reshape`,
//! `bc_tensor_unsqueeze`, `bc_tensor_squeeze`, `bc_tensor_squeeze_all`, `bc_tensor_flatten`)
//! against `tests/data/pytorch/views.jsonl`, through the C ABI only: for every row, the result's
//! shape, strides and offset, whether it is a view or a copy, and its elements (the input's, in
//! row-major order); or PyTorch's exact error text with the status of its kind.

use broadcast::ffi::*;
use serde_json::Value;
use std::ptr;
use testkit::*;

fn ints(v: &Value) -> Vec<i64> {
    v.as_array()
        .unwrap_or_else(|| panic!("not a list: {v}"))
        .iter()
        .map(|x| x.as_i64().unwrap_or_else(|| panic!("not an int64: {x}")))
        .collect()
}

fn nullable(v: &[i64]) -> *const i64 {
    if v.is_empty() {
        ptr::null()
    } else {
        v.as_ptr()
    }
}

/// Runs one row's call; returns the result and whether the library said it copied.
fn call(row: &Value, input: &T) -> Result<(T, bool), Err> {
    let mut out: *mut bc_tensor = std::ptr::dangling_mut();
    let mut copied = false;
    let status = unsafe {
        match row["op"].as_str().unwrap() {
            "view" => {
                let sizes = ints(&row["sizes"]);
                bc_tensor_view(input.ptr(), nullable(&sizes), sizes.len(), &mut out)
            }
            "reshape" => {
                let sizes = ints(&row["sizes"]);
                bc_tensor_reshape(
                    input.ptr(),
                    nullable(&sizes),
                    sizes.len(),
                    &mut copied,
                    &mut out,
                )
            }
            "unsqueeze" => bc_tensor_unsqueeze(input.ptr(), row["dim"].as_i64().unwrap(), &mut out),
            "squeeze" => match row["dim"].as_i64() {
                Some(d) => bc_tensor_squeeze(input.ptr(), d, &mut out),
                None => bc_tensor_squeeze_all(input.ptr(), &mut out),
            },
            "flatten" => bc_tensor_flatten(
                input.ptr(),
                row["start"].as_i64().unwrap(),
                row["end"].as_i64().unwrap(),
                &mut copied,
                &mut out,
            ),
            op => panic!("unknown op {op:?}"),
        }
    };
    if status == BC_OK {
        assert!(!out.is_null(), "BC_OK with *out NULL");
        Ok((T(out), copied))
    } else {
        assert!(out.is_null(), "a failed call left *out set");
        Err(Err {
            status,
            msg: last_error(),
        })
    }
}

fn kind_status(kind: &str) -> i32 {
    match kind {
        "shape" => BC_ERR_SHAPE,
        "dim" | "invalid" => BC_ERR_INVALID_ARG,
        "overflow" => BC_ERR_OVERFLOW,
        k => panic!("unknown error kind {k:?}"),
    }
}

fn check_row(row: &Value) -> Option<String> {
    let inp = &row["input"];
    let (shape, strides, offset) = (
        ints(&inp["shape"]),
        ints(&inp["strides"]),
        inp["offset"].as_i64().unwrap(),
    );
    // A float32 storage holding 0, 1, 2, ... that every element of the view lies in.
    let span = if shape.contains(&0) {
        0
    } else {
        shape.iter().zip(&strides).map(|(n, s)| (n - 1) * s).sum()
    };
    let base = T::arange_f32(&[offset + span + 1], 0.0);
    let input = base
        .as_strided(&shape, &strides, offset)
        .unwrap_or_else(|e| panic!("input view: {e}"));
    let got = call(row, &input);
    if let Some(msg) = row["error"].as_str() {
        let want = kind_status(row["kind"].as_str().unwrap());
        return match got {
            Ok((t, _)) => Some(format!("expected {msg:?}, got shape {:?}", t.shape())),
            Err(e) if e.status != want || e.msg != msg => {
                Some(format!("expected {} {msg:?}, got {e}", status_name(want)))
            }
            Err(_) => None,
        };
    }
    let want = &row["result"];
    let (t, copied) = match got {
        Ok(r) => r,
        Err(e) => return Some(format!("expected success, got {e}")),
    };
    let is_view = want["view"].as_bool().unwrap();
    let mut problems = Vec::new();
    for (what, got, want) in [
        ("shape", t.shape(), ints(&want["shape"])),
        ("strides", t.strides(), ints(&want["strides"])),
        (
            "offset",
            vec![t.offset()],
            vec![want["offset"].as_i64().unwrap()],
        ),
    ] {
        if got != want {
            problems.push(format!("{what} {got:?}, expected {want:?}"));
        }
    }
    if copied == is_view {
        problems.push(format!(
            "copied = {copied}, PyTorch's result is a view: {is_view}"
        ));
    }
    // The elements, in row-major order, are the input's. (Shapes here hold a few dozen at most.)
    if t.numel() > 0 && t.to_f64() != input.to_f64() {
        problems.push(format!(
            "elements {}, expected {}",
            fmt_vals(&t.values()),
            fmt_vals(&input.values())
        ));
    }
    (!problems.is_empty()).then(|| problems.join("; "))
}

#[test]
fn views_match_pytorch() {
    let rows = read_jsonl("views.jsonl");
    let mut failures = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        if let Some(problem) = check_row(row) {
            failures.push(format!("line {}: {row}\n    {problem}", i + 1));
        }
    }
    println!("views.jsonl: checked {} rows", rows.len());
    for f in failures.iter().take(20) {
        println!("{f}");
    }
    assert!(
        failures.is_empty(),
        "{} of {} rows failed",
        failures.len(),
        rows.len()
    );
    // A fixed file of thousands of rows: a truncated copy would check little.
    assert!(
        rows.len() > 5000,
        "views.jsonl has only {} rows",
        rows.len()
    );
}
