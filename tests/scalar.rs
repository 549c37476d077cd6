//! A tensor with a number (issue 14): every row of `tests/data/pytorch/scalar.jsonl` through the C
//! ABI (`bc_binary_scalar`, `bc_binary_rscalar`, `bc_binary_scalar_inplace`, and the named forms
//! on alternate rows): the result's type, shape and values, or PyTorch's status and exact message;
//! in place, the whole storage afterwards; out of place, the operand unchanged. (The layout of
//! such results is checked in `tests/layout.rs`.)

mod common;

use broadcast::ffi::*;
use common::*;
use serde_json::Value;
use std::ptr;

fn take(status: i32, out: *mut bc_tensor) -> Result<T, Err> {
    check(status).map(|()| T(out))
}

/// `t op s` (`reversed`: `s op t`) in a new tensor; `named` through `bc_add_scalar` and the like
/// where there is one.
fn new_result(op: i32, t: &T, s: bc_scalar, reversed: bool, named: bool) -> Result<T, Err> {
    let mut out = ptr::null_mut();
    let status = unsafe {
        match (named, reversed, op) {
            (true, false, BC_OP_ADD) => bc_add_scalar(t.ptr(), s, &mut out),
            (true, false, BC_OP_SUB) => bc_sub_scalar(t.ptr(), s, &mut out),
            (true, false, BC_OP_MUL) => bc_mul_scalar(t.ptr(), s, &mut out),
            (true, false, BC_OP_DIV) => bc_div_scalar(t.ptr(), s, &mut out),
            (true, true, BC_OP_SUB) => bc_rsub_scalar(s, t.ptr(), &mut out),
            (true, true, BC_OP_DIV) => bc_rdiv_scalar(s, t.ptr(), &mut out),
            (_, false, _) => bc_binary_scalar(op, t.ptr(), s, &mut out),
            (_, true, _) => bc_binary_rscalar(op, s, t.ptr(), &mut out),
        }
    };
    take(status, out)
}

fn in_place(op: i32, t: &T, s: bc_scalar, named: bool) -> Result<(), Err> {
    check(match (named, op) {
        (true, BC_OP_ADD) => bc_add_scalar_inplace(t.mut_ptr(), s),
        (true, BC_OP_SUB) => bc_sub_scalar_inplace(t.mut_ptr(), s),
        (true, BC_OP_MUL) => bc_mul_scalar_inplace(t.mut_ptr(), s),
        (true, BC_OP_DIV) => bc_div_scalar_inplace(t.mut_ptr(), s),
        _ => bc_binary_scalar_inplace(op, t.mut_ptr(), s),
    })
}

#[test]
fn scalar_rows() {
    let _g = settings_lock();
    let rows = read_jsonl("scalar.jsonl");
    let mut f = Failures::new("scalar.jsonl");
    for (i, row) in rows.iter().enumerate() {
        let line = i + 1;
        let name = row["op"].as_str().unwrap();
        // The further operations' rules for numbers come in the next step.
        if !["add", "sub", "mul", "div"].contains(&name) {
            continue;
        }
        f.checked += 1;
        if let Some(p) = check_row(row, op_code(name), line % 2 == 0) {
            f.add(line, row, p);
        }
    }
    assert!(f.checked >= 4 * 55, "only {} rows checked", f.checked);
    f.finish();
}

/// Checks one row; `named` calls the named function where there is one.
fn check_row(row: &Value, op: i32, named: bool) -> Option<String> {
    let s = scalar_of(&row["scalar"]);
    let mut t = Operand::from_json(&row["t"]);
    let before = t.buf.clone();
    let inplace = row["inplace"].as_bool().unwrap();
    let reversed = row["order"] == "scalar_tensor";
    let view = unsafe { t.view() }.expect("bc_tensor_wrap");
    let got = match inplace {
        true => in_place(op, &view, s, named).map(|()| None),
        false => new_result(op, &view, s, reversed, named).map(Some),
    };
    let ulps = if op == BC_OP_DIV { 1 } else { 0 };
    let problem = match (row.get("error"), got) {
        (Some(err), got) => expect_error(
            got,
            row["kind"].as_str().unwrap(),
            err.as_str().unwrap(),
            true,
        ),
        (None, Err(e)) => Some(format!("expected success, got {e}")),
        (None, Ok(result)) => {
            let want = &row["result"];
            let dtype = dtype_code(want["dtype"].as_str().unwrap());
            let r = result.as_ref().unwrap_or(&view);
            if r.dtype() != dtype || r.shape() != json_shape(&want["shape"]) {
                Some(format!(
                    "result {} {:?}, expected {} {:?}",
                    dtype_str(r.dtype()),
                    r.shape(),
                    dtype_str(dtype),
                    json_shape(&want["shape"])
                ))
            } else {
                compare_values(dtype, &r.values(), &json_values(dtype, &want["data"]), ulps)
            }
        }
    };
    drop(view);
    if problem.is_some() {
        return problem;
    }
    match (
        inplace && row.get("error").is_none(),
        &row["result"]["storage_after"],
    ) {
        (true, after) => compare_values(t.dtype, &t.storage(), &json_values(t.dtype, after), ulps)
            .map(|p| format!("storage after: {p}")),
        (false, _) => (t.buf != before).then(|| "the tensor's storage changed".to_string()),
    }
}
