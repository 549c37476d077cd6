//! The unary operations against PyTorch 2.15 (`tests/data/pytorch/unary_values.jsonl` and
//! `unary_promotion.jsonl`), through the C ABI: every row's result type, shape and values within
//! the row's tolerance, its error status and exact text, the written storage after an in-place
//! call or a call into `out`, and inputs left untouched.

use broadcast::ffi::*;
use testkit::ops_table::NAMED_UNARY;
use testkit::*;

use serde_json::Value;

fn unary_code(name: &str) -> i32 {
    NAMED_UNARY
        .iter()
        .find(|op| op.name == name)
        .unwrap_or_else(|| panic!("no unary operation {name:?} in the table"))
        .code
}

/// A row's tolerance: `ulp` representable values (counted in `ulp_dtype` when given), or an
/// absolute difference up to `abs_tol`; NaN only where NaN is expected.
struct Tolerance {
    ulp: i64,
    ulp_dtype: Option<i32>,
    abs_tol: Option<f64>,
}

impl Tolerance {
    fn of(row: &Value) -> Tolerance {
        Tolerance {
            ulp: row.get("ulp").and_then(Value::as_i64).unwrap_or(0),
            ulp_dtype: row.get("ulp_dtype").and_then(Value::as_str).map(dtype_code),
            abs_tol: row.get("abs_tol").and_then(Value::as_f64),
        }
    }

    fn close(&self, dtype: i32, got: V, want: V) -> bool {
        if same_value(got, want) {
            return true;
        }
        let (V::F(g), V::F(w)) = (got, want) else {
            return false;
        };
        if self.ulp == 0 || g.is_nan() || w.is_nan() {
            return false;
        }
        if self.abs_tol.is_some_and(|t| (g - w).abs() <= t) {
            return true;
        }
        ulp_distance(self.ulp_dtype.unwrap_or(dtype), g, w) <= self.ulp
    }

    fn compare(&self, dtype: i32, got: &[V], want: &[V]) -> Option<String> {
        if got.len() != want.len() {
            return Some(format!(
                "got {} elements, expected {}",
                got.len(),
                want.len()
            ));
        }
        let bad: Vec<usize> = (0..got.len())
            .filter(|&k| !self.close(dtype, got[k], want[k]))
            .collect();
        let k = *bad.first()?;
        Some(format!(
            "{} of {} elements differ (first at {k}: got {}, expected {}; ulp {})\n      got      {}\n      expected {}",
            bad.len(),
            got.len(),
            got[k],
            want[k],
            self.ulp,
            fmt_vals(got),
            fmt_vals(want)
        ))
    }
}

#[test]
fn unary_values() {
    let rows = read_jsonl("unary_values.jsonl");
    let mut f = Failures::new("unary_values.jsonl");
    for (i, row) in rows.iter().enumerate() {
        let line = i + 1;
        f.checked += 1;
        let op = unary_code(row["op"].as_str().unwrap());
        let variant = row["variant"].as_str().unwrap();
        let tol = Tolerance::of(row);
        let mut x = Operand::from_json(&row["x"]);
        let mut out = row.get("out").map(Operand::from_json);
        let x_before = x.buf.clone();
        let out_before = out.as_ref().map(|o| o.buf.clone());
        let problem = {
            // SAFETY: the views are dropped at the end of this block, before the buffers.
            let tx = unsafe { x.view() }.expect("bc_tensor_wrap(x)");
            let tout = out
                .as_mut()
                .map(|o| unsafe { o.view() }.expect("bc_tensor_wrap(out)"));
            let (call, got): (&str, Result<Option<T>, Err>) = match variant {
                "function" => ("bc_unary", unary(op, &tx).map(Some)),
                "inplace" => ("bc_unary_inplace", unary_inplace(op, &tx).map(|_| None)),
                "out" => (
                    "bc_unary_out",
                    unary_out(op, &tx, tout.as_ref().unwrap()).map(|_| None),
                ),
                v => panic!("unknown variant {v}"),
            };
            let written = match variant {
                "inplace" => Some(&tx),
                "out" => tout.as_ref(),
                _ => None,
            };
            let p = match (row.get("error"), got) {
                (Some(err), got) => expect_error(
                    got,
                    row["kind"].as_str().unwrap(),
                    err.as_str().unwrap(),
                    true,
                ),
                (None, Err(e)) => Some(format!("expected success, got {e}")),
                (None, Ok(t)) => check_result_with(
                    t.as_ref().or(written).unwrap(),
                    &row["result"],
                    |d, g, w| tol.compare(d, g, w),
                ),
            };
            p.map(|p| format!("{call}: {p}"))
        };
        if let Some(p) = problem {
            f.add(line, row, p);
        }
        // The written storage after the call (the whole of it: elements outside the view too),
        // and every other storage as before.
        let ok = row.get("error").is_none();
        let after = &row["result"]["storage_after"];
        let x_after = (variant == "inplace" && ok).then_some(after);
        if let Some(p) = check_storage(&x, &x_before, x_after, &tol) {
            f.add(line, row, format!("x: {p}"));
        }
        if let (Some(o), Some(before)) = (&out, &out_before) {
            if let Some(p) = check_storage(o, before, ok.then_some(after), &tol) {
                f.add(line, row, format!("out: {p}"));
            }
        }
    }
    f.finish();
}

/// An operand's storage after a call: `after` when the call wrote it, else as `before`.
fn check_storage(
    o: &Operand,
    before: &[u8],
    after: Option<&Value>,
    tol: &Tolerance,
) -> Option<String> {
    match after {
        Some(after) => tol
            .compare(o.dtype, &o.storage(), &json_values(o.dtype, after))
            .map(|p| format!("storage after the call: {p}")),
        None => (o.buf != before).then(|| "storage modified".to_string()),
    }
}

/// The result type of every operation for every element type, 0-d and not, out of place and in
/// place; the operations PyTorch has no in-place form of are refused in place.
#[test]
fn unary_promotion() {
    let rows = read_jsonl("unary_promotion.jsonl");
    let mut f = Failures::new("unary_promotion.jsonl");
    for (i, row) in rows.iter().enumerate() {
        let line = i + 1;
        f.checked += 1;
        let op = unary_code(row["op"].as_str().unwrap());
        let dtype = dtype_code(row["dtype"].as_str().unwrap());
        let shape: &[i64] = if row["zero_d"].as_bool().unwrap() {
            &[]
        } else {
            &[2]
        };
        let x = T::ones(dtype, shape).unwrap();
        let got = unary(op, &x);
        let problem = match (row.get("error"), got) {
            (Some(err), got) => expect_error(
                got,
                row["kind"].as_str().unwrap(),
                err.as_str().unwrap(),
                true,
            ),
            (None, Err(e)) => Some(format!("expected success, got {e}")),
            (None, Ok(t)) => {
                let want = dtype_code(row["result"].as_str().unwrap());
                (t.dtype() != want).then(|| {
                    format!(
                        "result dtype {}, expected {}",
                        lib_dtype_name(t.dtype()),
                        dtype_str(want)
                    )
                })
            }
        };
        if let Some(p) = problem {
            f.add(line, row, format!("bc_unary: {p}"));
        }
        let x = T::ones(dtype, shape).unwrap();
        let got = unary_inplace(op, &x);
        let problem = match (row.get("inplace_error"), row.get("inplace_result"), got) {
            (Some(err), _, got) => expect_error(
                got,
                row["inplace_kind"].as_str().unwrap(),
                err.as_str().unwrap(),
                true,
            ),
            (None, Some(_), Err(e)) => Some(format!("expected success, got {e}")),
            (None, Some(_), Ok(())) => None,
            // No in-place form in PyTorch: the library refuses the call.
            (None, None, Err(e)) if e.status == BC_ERR_INVALID_ARG => None,
            (None, None, got) => Some(format!(
                "no in-place form: expected BC_ERR_INVALID_ARG, got {got:?}"
            )),
        };
        if let Some(p) = problem {
            f.add(line, row, format!("bc_unary_inplace: {p}"));
        }
    }
    f.finish();
}

/// The vectorized float32 `sin`, `cos` and `tan` hold for arguments up to 1e6; a contiguous block
/// holding a larger one (or an infinity, a NaN) goes to libm element by element. Arguments on
/// both sides of the limit, in several blocks, in place and not, against float64 libm rounded
/// once (the library's accuracy statement allows 1 ulp; these are equal).
#[test]
fn sin_cos_tan_of_large_arguments() {
    let mut xs: Vec<f32> = (0..1000).map(|i| i as f32 * 0.37 - 100.0).collect();
    for (i, v) in [
        (5, 1.0e7),
        (300, -3.0e30),
        (511, f32::INFINITY),
        (700, f32::NAN),
        (999, 1_000_001.0),
        (998, 999_999.94),
        (12, f32::MAX),
    ] {
        xs[i] = v;
    }
    let vals: Vec<V> = xs.iter().map(|&v| V::F(v as f64)).collect();
    for (name, f) in [
        ("sin", f64::sin as fn(f64) -> f64),
        ("cos", f64::cos),
        ("tan", f64::tan),
    ] {
        let op = unary_code(name);
        let x = T::from_values(BC_DTYPE_FLOAT32, &[1000], &vals).unwrap();
        let results = [unary(op, &x).unwrap().to_f64(), {
            unary_inplace(op, &x).unwrap();
            x.to_f64()
        }];
        for got in results {
            for (i, (&g, &a)) in got.iter().zip(&xs).enumerate() {
                let want = f(a as f64) as f32;
                let g = g as f32;
                assert!(
                    g.to_bits() == want.to_bits() || (g.is_nan() && want.is_nan()),
                    "{name}({a:e}) at {i}: {g:e}, libm {want:e}"
                );
            }
        }
    }
}
