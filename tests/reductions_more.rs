//! `var`, `std`, `all`, `any`, `argmax`, `argmin`, `logsumexp`, `nansum` and `nanmean` against
//! PyTorch 2.15 (`tests/data/pytorch/reductions_more.jsonl`), through the C ABI: result type and
//! shape, exact values for bool, integer and index results, floating values within the error
//! bound the data's README states, the warnings, and the exact error texts.

use broadcast::ffi::*;
use serde_json::Value;
use std::ptr;
use testkit::*;

/// The call a row describes.
fn call(row: &Value, t: &T) -> Result<T, Err> {
    let op = row["op"].as_str().unwrap();
    let keepdim = row["keepdim"].as_bool().unwrap();
    let dims: Option<Vec<i64>> = row["dim"]
        .as_array()
        .map(|d| d.iter().map(|x| x.as_i64().unwrap()).collect());
    let (p, n) = match &dims {
        None => (ptr::null(), 0),
        // A non-NULL pointer even for an empty list (`all`/`any` tell the two apart).
        Some(d) => (
            if d.is_empty() {
                [0i64].as_ptr()
            } else {
                d.as_ptr()
            },
            d.len(),
        ),
    };
    let mut out: *mut bc_tensor = ptr::null_mut();
    let correction = row.get("correction").and_then(Value::as_f64).unwrap_or(1.0);
    // SAFETY: valid pointers and lengths.
    let status = unsafe {
        match op {
            "var" => bc_var(t.ptr(), p, n, correction, keepdim, &mut out),
            "std" => bc_std(t.ptr(), p, n, correction, keepdim, &mut out),
            "all" => bc_all(t.ptr(), p, n, keepdim, &mut out),
            "any" => bc_any(t.ptr(), p, n, keepdim, &mut out),
            "argmax" | "argmin" => {
                let dim = dims.as_ref().and_then(|d| d.first());
                let dim = dim.map_or(ptr::null(), |d| d as *const i64);
                match op {
                    "argmax" => bc_argmax(t.ptr(), dim, keepdim, &mut out),
                    _ => bc_argmin(t.ptr(), dim, keepdim, &mut out),
                }
            }
            "logsumexp" => bc_logsumexp(t.ptr(), p, n, keepdim, &mut out),
            "nansum" => bc_nansum(t.ptr(), p, n, keepdim, &mut out),
            "nanmean" => bc_nanmean(t.ptr(), p, n, keepdim, &mut out),
            op => panic!("unknown op {op}"),
        }
    };
    match status {
        BC_OK => Ok(T(out)),
        status => {
            assert!(out.is_null(), "{op}: failed but set *out");
            Err(Err {
                status,
                msg: last_error(),
            })
        }
    }
}

/// The unit roundoff the README's bound uses for `op` on an input of `input` type.
fn roundoff(op: &str, input: i32) -> f64 {
    match (op, input) {
        (_, F64) => 2f64.powi(-53),
        ("var" | "std", _) => 2f64.powi(-24),
        (_, F16) => 2f64.powi(-11),
        (_, BF16) => 2f64.powi(-8),
        _ => 2f64.powi(-24),
    }
}

/// The README's check of one floating result `r` against the exact `f` (`a` the row's
/// `abs_f64`, when it has one) for `n` elements per output.
fn within(op: &str, input: i32, dtype: i32, r: f64, f: f64, a: f64, n: f64) -> bool {
    if f.is_nan() {
        return r.is_nan();
    }
    if r.is_infinite() {
        return r == f || (f.abs() > max_finite(dtype) && r.signum() == f.signum());
    }
    if f.is_infinite() || r.is_nan() {
        return false;
    }
    let e = roundoff(op, input);
    let gamma = |m: f64| m * e / (1.0 - m * e);
    let (eps, tiny) = eps_tiny(dtype);
    let ulp = r.abs().max(tiny) * eps;
    let bound = match op {
        "var" => gamma(2.0 * n + 4.0) * a + 2.0 * ulp,
        "std" => gamma(2.0 * n + 4.0).sqrt() * a + 2.0 * ulp,
        "nansum" | "nanmean" => gamma(n + 2.0) * a + ulp,
        "logsumexp" => (n + 4.0) * e + 2.0 * ulp,
        op => panic!("no bound for {op}"),
    };
    (r - f).abs() <= bound
}

fn check_result(row: &Value, input: i32, t: &T) -> Option<String> {
    let op = row["op"].as_str().unwrap();
    let res = &row["result"];
    let rd = dtype_code(res["dtype"].as_str().unwrap());
    if t.dtype() != rd {
        return Some(format!(
            "dtype {}, expected {}",
            lib_dtype_name(t.dtype()),
            dtype_str(rd)
        ));
    }
    let shape = json_shape(&res["shape"]);
    if t.shape() != shape {
        return Some(format!("shape {:?}, expected {shape:?}", t.shape()));
    }
    let got = t.values();
    let Some(exact) = row.get("f64") else {
        return compare_values(rd, &got, &json_values(rd, &res["data"]), 0);
    };
    let exact = json_values(F64, exact);
    let abs = row.get("abs_f64").map(|a| json_values(F64, a));
    let n = numel(&json_shape(&row["input"]["shape"])) as f64 / (numel(&shape).max(1) as f64);
    for (k, g) in got.iter().enumerate() {
        let (V::F(r), V::F(f)) = (*g, exact[k]) else {
            return Some(format!("element {k}: {g} against {}", exact[k]));
        };
        let a = abs.as_ref().map_or(0.0, |a| match a[k] {
            V::F(x) => x,
            _ => 0.0,
        });
        if !within(op, input, rd, r, f, a, n) {
            return Some(format!(
                "element {k}: {r:?} is not within the bound of the exact {f:?} (abs_f64 {a:?}, n {n})"
            ));
        }
    }
    None
}

#[test]
fn reductions_more() {
    let _g = settings_lock();
    install_warning_collector();
    let rows = read_jsonl("reductions_more.jsonl");
    let mut f = Failures::new("reductions_more.jsonl");
    for (i, row) in rows.iter().enumerate() {
        let line = i + 1;
        f.checked += 1;
        let mut input = Operand::from_json(&row["input"]);
        let before = input.buf.clone();
        take_warnings();
        {
            // SAFETY: the view is dropped before the buffer.
            let t = unsafe { input.view() }.expect("bc_tensor_wrap");
            let got = call(row, &t);
            let problem = match (row.get("error"), got) {
                (Some(err), got) => expect_error(
                    got,
                    row["kind"].as_str().unwrap(),
                    err.as_str().unwrap(),
                    true,
                ),
                (None, Err(e)) => Some(format!("expected success, got {e}")),
                (None, Ok(r)) => check_result(row, input.dtype, &r),
            };
            if let Some(p) = problem {
                f.add(line, row, p);
            }
        }
        let want: Vec<String> = row
            .get("warning")
            .and_then(Value::as_str)
            .map(String::from)
            .into_iter()
            .collect();
        let warnings = take_warnings();
        if warnings != want {
            f.add(
                line,
                row,
                format!("warnings {warnings:?}, expected {want:?}"),
            );
        }
        if input.buf != before {
            f.add(line, row, "the input's storage was modified".into());
        }
    }
    f.finish();
}
