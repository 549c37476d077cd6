//! A tensor with a number: every row of `tests/data/pytorch/scalar.jsonl` through the C
//! ABI (`bc_binary_scalar`, `bc_binary_rscalar`, `bc_binary_scalar_inplace`, and the named forms
//! on alternate rows): the result's type, shape and values, or PyTorch's status and exact message;
//! in place, the whole storage afterwards; out of place, the operand unchanged. (The layout of
//! such results is checked in `tests/layout.rs`.)

use broadcast::ffi::*;
use serde_json::Value;
use std::ptr;
use testkit::*;

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
        f.checked += 1;
        if let Some(p) = check_row(row, op_code(name), line % 2 == 0) {
            f.add(line, row, p);
        }
    }
    assert_eq!(f.checked, rows.len());
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

/// The operations PyTorch gives no number form (and `fmod` with the number first) refuse the
/// number with PyTorch's TypeError text (PyTorch 2.15: `torch.maximum(t, 2)`, `torch.atan2(2.5,
/// t)`, `t.hypot_(True)`, `torch.maximum(t, 2, out=t)` for `maximum`, which has no in-place
/// method, `torch.fmod(2, t)`), and leave an in-place target unchanged.
#[test]
fn numbers_refused() {
    let _g = settings_lock();
    let fmod_first = "fmod() received an invalid combination of arguments - got (int, Tensor), \
                      but expected one of:\n * (Tensor input, Tensor other, *, Tensor out = None)\n \
                      * (Tensor input, Number other, *, Tensor out = None)\n";
    let (int, float, bool_) = (bc_scalar_int(2), bc_scalar_float(2.5), bc_scalar_bool(true));
    // (operation, number, number first, in place, PyTorch's text)
    let cases = [
        (
            "maximum",
            int,
            false,
            false,
            "maximum(): argument 'other' (position 2) must be Tensor, not int",
        ),
        (
            "minimum",
            float,
            true,
            false,
            "minimum(): argument 'input' (position 1) must be Tensor, not float",
        ),
        (
            "maximum",
            int,
            false,
            true,
            "maximum(): argument 'other' (position 2) must be Tensor, not int",
        ),
        (
            "atan2",
            float,
            true,
            false,
            "atan2(): argument 'input' (position 1) must be Tensor, not float",
        ),
        (
            "atan2",
            int,
            false,
            true,
            "atan2_(): argument 'other' (position 1) must be Tensor, not int",
        ),
        (
            "hypot",
            bool_,
            false,
            true,
            "hypot_(): argument 'other' (position 1) must be Tensor, not bool",
        ),
        (
            "hypot",
            bool_,
            false,
            false,
            "hypot(): argument 'other' (position 2) must be Tensor, not bool",
        ),
        (
            "logical_and",
            int,
            false,
            false,
            "logical_and(): argument 'other' (position 2) must be Tensor, not int",
        ),
        (
            "logical_or",
            float,
            true,
            false,
            "logical_or(): argument 'input' (position 1) must be Tensor, not float",
        ),
        (
            "logical_xor",
            bool_,
            false,
            true,
            "logical_xor_(): argument 'other' (position 1) must be Tensor, not bool",
        ),
        ("fmod", int, true, false, fmod_first),
    ];
    for (name, s, first, inplace, text) in cases {
        let t = T::full(F32, &[2, 3], 1.5).unwrap();
        let got = match inplace {
            true => in_place(op_code(name), &t, s, false).map(|()| None),
            false => new_result(op_code(name), &t, s, first, false).map(Some),
        };
        match got {
            Ok(_) => panic!("{name}: expected PyTorch's TypeError, got success"),
            Err(e) => {
                assert_eq!(e.status, BC_ERR_INVALID_ARG, "{name}: {e}");
                assert_eq!(e.msg, text, "{name}");
            }
        }
        assert!(
            t.to_f64().iter().all(|&v| v == 1.5),
            "{name}: the tensor changed"
        );
    }
}
