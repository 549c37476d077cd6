//! Conformance against the PyTorch-generated data in `tests/data/pytorch/*.jsonl`.
//!
//! One test per file. Every test drives the library only through the exported C functions
//! (`broadcast::ffi::bc_*`), checks every row, prints `<file>: checked N rows`, prints the first
//! failing rows with expected and actual results, and panics with the number of failures.
//! The oracle folder missing is a failure, not a skip.
//!
//! All tests take the process-wide settings lock: the legacy/warning switches are global, and a
//! test running with them on would change what the others see.

use broadcast::ffi::*;
use serde_json::Value;
use testkit::*;

fn shape_of(row: &Value, key: &str) -> Vec<i64> {
    json_shape(&row[key])
}

// =============================================================================================
// binary_shapes.jsonl
// =============================================================================================

#[test]
fn binary_shapes() {
    let _g = settings_lock();
    let rows = read_jsonl("binary_shapes.jsonl");
    let mut f = Failures::new("binary_shapes.jsonl");
    for (i, row) in rows.iter().enumerate() {
        let line = i + 1;
        f.checked += 1;
        let a = shape_of(row, "a");
        let b = shape_of(row, "b");
        let ta = T::zeros(F32, &a).expect("zeros a");
        let tb = T::ones(F32, &b).expect("ones b");
        let got = add(&ta, &tb);
        let sb = shape_broadcast(&a, &b);
        let isb = shape_is_broadcastable(&a, &b);
        if let Some(err) = row.get("error") {
            let msg = err.as_str().unwrap();
            let kind = row["kind"].as_str().unwrap();
            if let Some(p) = expect_error(got, kind, msg, true) {
                f.add(line, row, format!("bc_add: {p}"));
            }
            if let Some(p) = expect_error(sb, kind, msg, true) {
                f.add(line, row, format!("bc_shape_broadcast: {p}"));
            }
            if isb != Ok(false) {
                f.add(
                    line,
                    row,
                    format!("bc_shape_is_broadcastable: expected Ok(false), got {isb:?}"),
                );
            }
        } else {
            let want = shape_of(row, "shape");
            match got {
                Err(e) => f.add(
                    line,
                    row,
                    format!("bc_add: expected shape {want:?}, got {e}"),
                ),
                Ok(t) => {
                    let s = t.shape();
                    if s != want {
                        f.add(
                            line,
                            row,
                            format!("bc_add: expected shape {want:?}, got {s:?}"),
                        );
                    } else if t.dtype() != F32 {
                        f.add(
                            line,
                            row,
                            format!("bc_add: result dtype {} (want float32)", t.dtype()),
                        );
                    } else {
                        let v = t.to_f64();
                        if v.len() as i64 != numel(&want) || v.iter().any(|&x| x != 1.0) {
                            f.add(line, row, format!("bc_add: 0 + 1 gave values {v:?}"));
                        }
                    }
                }
            }
            match sb {
                Ok(s) if s == want => {}
                other => f.add(
                    line,
                    row,
                    format!("bc_shape_broadcast: expected {want:?}, got {other:?}"),
                ),
            }
            if isb != Ok(true) {
                f.add(
                    line,
                    row,
                    format!("bc_shape_is_broadcastable: expected Ok(true), got {isb:?}"),
                );
            }
        }
    }
    f.finish();
}

// =============================================================================================
// inplace_shapes.jsonl
// =============================================================================================

#[test]
fn inplace_shapes() {
    let _g = settings_lock();
    let rows = read_jsonl("inplace_shapes.jsonl");
    let mut f = Failures::new("inplace_shapes.jsonl");
    for (i, row) in rows.iter().enumerate() {
        let line = i + 1;
        f.checked += 1;
        let s = shape_of(row, "self");
        let o = shape_of(row, "other");
        let this = T::arange_f32(&s, 0.0);
        let before = this.to_f64();
        let other = T::ones(F32, &o).expect("ones other");
        let got = add_inplace(&this, &other);
        let after = this.to_f64();
        if this.shape() != s {
            f.add(
                line,
                row,
                format!("self changed shape: {:?} -> {:?}", s, this.shape()),
            );
        }
        if let Some(err) = row.get("error") {
            let msg = err.as_str().unwrap();
            if let Some(p) = expect_error(got, row["kind"].as_str().unwrap(), msg, true) {
                f.add(line, row, format!("bc_add_inplace: {p}"));
            }
            if after != before {
                f.add(
                    line,
                    row,
                    format!("refused in-place add modified self: {before:?} -> {after:?}"),
                );
            }
        } else {
            let want = shape_of(row, "shape");
            assert_eq!(want, s, "oracle: in-place result shape differs from self");
            match got {
                Err(e) => f.add(
                    line,
                    row,
                    format!("bc_add_inplace: expected success, got {e}"),
                ),
                Ok(()) => {
                    let exp: Vec<f64> = before.iter().map(|x| x + 1.0).collect();
                    if after != exp {
                        f.add(
                            line,
                            row,
                            format!("self += 1 gave {after:?}, expected {exp:?}"),
                        );
                    }
                }
            }
        }
    }
    f.finish();
}

// =============================================================================================
// nary_shapes.jsonl
// =============================================================================================

#[test]
fn nary_shapes() {
    let _g = settings_lock();
    let rows = read_jsonl("nary_shapes.jsonl");
    let mut f = Failures::new("nary_shapes.jsonl");
    for (i, row) in rows.iter().enumerate() {
        let line = i + 1;
        f.checked += 1;
        let shapes: Vec<Vec<i64>> = row["shapes"]
            .as_array()
            .unwrap()
            .iter()
            .map(json_shape)
            .collect();
        let got = shape_broadcast_n(&shapes);
        let tensors: Vec<T> = shapes
            .iter()
            .enumerate()
            .map(|(k, s)| T::arange_f32(s, 10.0 * k as f64))
            .collect();
        let refs: Vec<&T> = tensors.iter().collect();
        let gt = broadcast_tensors(&refs);
        if let Some(err) = row.get("error") {
            let msg = err.as_str().unwrap();
            let kind = row["kind"].as_str().unwrap();
            if let Some(p) = expect_error(got, kind, msg, true) {
                f.add(line, row, format!("bc_shape_broadcast_n: {p}"));
            }
            if let Some(p) = expect_error(gt, kind, msg, true) {
                f.add(line, row, format!("bc_tensor_broadcast_tensors: {p}"));
            }
        } else {
            let want = shape_of(row, "shape");
            match got {
                Ok(s) if s == want => {}
                other => f.add(
                    line,
                    row,
                    format!("bc_shape_broadcast_n: expected {want:?}, got {other:?}"),
                ),
            }
            match gt {
                Err(e) => f.add(
                    line,
                    row,
                    format!("bc_tensor_broadcast_tensors: expected {want:?}, got {e}"),
                ),
                Ok(outs) => {
                    if outs.len() != shapes.len() {
                        f.add(
                            line,
                            row,
                            "broadcast_tensors: wrong number of outputs".into(),
                        );
                    }
                    for (k, t) in outs.iter().enumerate() {
                        let s = t.shape();
                        if s != want {
                            f.add(line, row, format!("bc_tensor_broadcast_tensors: output {k} has shape {s:?}, expected {want:?}"));
                            continue;
                        }
                        // each output is a view: check its values against the plain broadcast rule
                        let src = &shapes[k];
                        let v = t.to_f64();
                        let exp: Vec<f64> = (0..numel(&want))
                            .map(|flat| {
                                let idx = unravel(flat, &want);
                                10.0 * k as f64 + flat_of(&broadcast_index(&idx, src), src) as f64
                            })
                            .collect();
                        if v != exp {
                            f.add(line, row, format!("bc_tensor_broadcast_tensors: output {k} values {v:?}, expected {exp:?}"));
                        }
                    }
                }
            }
        }
    }
    f.finish();
}

/// Negative sizes given to `bc_shape_broadcast_n`. The first three rows are PyTorch's own
/// `torch.broadcast_shapes` error cases; the others follow its `_broadcast_shapes` loop (shape by
/// shape, each from its last size: an equal size passes, a common 1 takes the size unless it is
/// negative, a 1 passes, anything else is a mismatch), written out by hand.
#[test]
fn nary_shapes_negative_sizes() {
    const NEG: &str = "Attempting to broadcast a dimension with negative length!";
    let mismatch = |size: i64, at: i64, arg: usize, had: &str, common: &str| {
        format!("Attempting to broadcast a dimension of length {size} at {at}! Mismatching argument at index {arg} had {had}; but expected shape should be broadcastable to {common}")
    };
    let cases: Vec<(Vec<Vec<i64>>, i32, String)> = vec![
        (vec![vec![-1]], BC_ERR_INVALID_ARG, NEG.into()),
        (vec![vec![2, -1]], BC_ERR_INVALID_ARG, NEG.into()),
        (
            vec![vec![2], vec![-1]],
            BC_ERR_SHAPE,
            mismatch(-1, -1, 1, "(-1,)", "[2]"),
        ),
        (
            vec![vec![1], vec![1], vec![-12]],
            BC_ERR_INVALID_ARG,
            NEG.into(),
        ),
        (vec![vec![-1], vec![2]], BC_ERR_INVALID_ARG, NEG.into()),
        (vec![vec![-1, 3], vec![2]], BC_ERR_INVALID_ARG, NEG.into()),
        // The last size is checked first: its mismatch comes before the negative size.
        (
            vec![vec![2], vec![-1, 3]],
            BC_ERR_SHAPE,
            mismatch(3, -1, 1, "(-1, 3)", "[1, 2]"),
        ),
        (
            vec![vec![4], vec![4, -2]],
            BC_ERR_SHAPE,
            mismatch(-2, -1, 1, "(4, -2)", "[1, 4]"),
        ),
        (vec![vec![5], vec![-3, 1]], BC_ERR_INVALID_ARG, NEG.into()),
        (
            vec![vec![5], vec![1, -3]],
            BC_ERR_SHAPE,
            mismatch(-3, -1, 1, "(1, -3)", "[1, 5]"),
        ),
        // An earlier shape's mismatch comes before a later shape's negative size.
        (
            vec![vec![3], vec![2], vec![-1]],
            BC_ERR_SHAPE,
            mismatch(2, -1, 1, "(2,)", "[3]"),
        ),
        (
            vec![vec![3, 1], vec![-5], vec![2, 2]],
            BC_ERR_INVALID_ARG,
            NEG.into(),
        ),
        (
            vec![vec![3, 4], vec![-5], vec![2, 2]],
            BC_ERR_SHAPE,
            mismatch(-5, -1, 1, "(-5,)", "[3, 4]"),
        ),
        (vec![vec![i64::MIN]], BC_ERR_INVALID_ARG, NEG.into()),
    ];
    let _g = settings_lock();
    for (shapes, status, msg) in &cases {
        match shape_broadcast_n(shapes) {
            Err(e) => {
                assert_eq!((e.status, &e.msg), (*status, msg), "{shapes:?}");
                assert_eq!(bc_last_error_status(), *status, "{shapes:?}");
            }
            Ok(s) => panic!("{shapes:?}: expected {msg:?}, got {s:?}"),
        }
    }
    // The mismatch's data names the negative size and the shape as given.
    assert!(shape_broadcast_n(&[vec![2], vec![7, -1]]).is_err());
    let mut info = std::mem::MaybeUninit::<bc_error_info>::uninit();
    assert_eq!(unsafe { bc_last_error_info(info.as_mut_ptr()) }, BC_OK);
    let info = unsafe { info.assume_init() };
    assert_eq!((info.arg, info.dim, info.size_a), (1, -1, -1));
    let (mut buf, mut nd) = ([0i64; 4], 0i64);
    assert_eq!(
        unsafe { bc_last_error_shape(0, buf.as_mut_ptr(), 4, &mut nd) },
        BC_OK
    );
    assert_eq!(&buf[..nd as usize], &[7, -1]);
}

// =============================================================================================
// expand.jsonl
// =============================================================================================

#[test]
fn expand() {
    let _g = settings_lock();
    let rows = read_jsonl("expand.jsonl");
    let mut f = Failures::new("expand.jsonl");
    for (i, row) in rows.iter().enumerate() {
        let line = i + 1;
        f.checked += 1;
        let shape = shape_of(row, "shape");
        let sizes = shape_of(row, "sizes");
        let src = T::arange_f32(&shape, 0.0);
        for (name, got) in [
            ("bc_tensor_expand", src.expand(&sizes)),
            ("bc_tensor_broadcast_to", src.broadcast_to(&sizes)),
        ] {
            if let Some(err) = row.get("error") {
                let exact = row["exact"].as_bool().unwrap_or(true);
                if let Some(p) = expect_error(
                    got,
                    row["kind"].as_str().unwrap(),
                    err.as_str().unwrap(),
                    exact,
                ) {
                    f.add(line, row, format!("{name}: {p}"));
                }
                continue;
            }
            let want = shape_of(row, "result");
            let zero: Vec<usize> = row["zero_stride_dims"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_u64().unwrap() as usize)
                .collect();
            let t = match got {
                Err(e) => {
                    f.add(
                        line,
                        row,
                        format!("{name}: expected shape {want:?}, got {e}"),
                    );
                    continue;
                }
                Ok(t) => t,
            };
            let s = t.shape();
            if s != want {
                f.add(
                    line,
                    row,
                    format!("{name}: expected shape {want:?}, got {s:?}"),
                );
                continue;
            }
            let st = t.strides();
            for d in 0..want.len() {
                if zero.contains(&d) && st[d] != 0 {
                    f.add(
                        line,
                        row,
                        format!(
                            "{name}: strides {st:?}: dim {d} (size {}) should have stride 0",
                            want[d]
                        ),
                    );
                }
                // A size-1 dimension's stride is never used to address anything, and the oracle
                // lists only broadcast dimensions (size != 1): PyTorch's own inferExpandGeometry
                // gives a new leading size-1 dimension the stride next_size * next_stride, which
                // is 0 after a broadcast dimension, as here. Every other dimension must be
                // nonzero exactly when unlisted.
                if zero.contains(&d) && want[d] == 1 {
                    f.add(
                        line,
                        row,
                        format!("{name}: oracle lists size-1 dim {d} as broadcast"),
                    );
                }
                if !zero.contains(&d) && st[d] == 0 && want[d] != 1 {
                    f.add(
                        line,
                        row,
                        format!("{name}: strides {st:?}: dim {d} (size {}) has stride 0 but is not a broadcast dim", want[d]),
                    );
                }
            }
            if t.offset() != src.offset() {
                f.add(
                    line,
                    row,
                    format!(
                        "{name}: offset {} != source offset {}",
                        t.offset(),
                        src.offset()
                    ),
                );
            }
            // data: the view must read the source through the broadcast rule
            let v = t.to_f64();
            let exp: Vec<f64> = (0..numel(&want))
                .map(|flat| flat_of(&broadcast_index(&unravel(flat, &want), &shape), &shape) as f64)
                .collect();
            if v != exp {
                f.add(line, row, format!("{name}: values {v:?}, expected {exp:?}"));
            }
        }
    }
    f.finish();
}

// =============================================================================================
// values.jsonl
// =============================================================================================

#[test]
fn values() {
    // Floating `div` may be one unit in the last place off (the data's README).
    check_values_file("values.jsonl", |op, _| if op == BC_OP_DIV { 1 } else { 0 });
}

/// float16 and bfloat16 with a one-element operand of another type, in both orders, out of place
/// and in place: PyTorch's mul and div read a one-element second operand in
/// float32. Compared exactly, division included.
#[test]
fn reduced_float_with_a_one_element_operand() {
    check_values_file("reduced_scalar.jsonl", |_, _| 0);
}

#[test]
fn ops_values() {
    // Within the operation table's accuracy (`pow`, `atan2` and `hypot`: one unit in the last place).
    check_values_file("ops_values.jsonl", |op, _| NAMED_OPS[op as usize].ulps);
}

/// Every row of a value file through `bc_binary` / `bc_binary_inplace` on zero-copy views of the
/// rows' storages: result dtype, shape and values (within `ulps(op, row)` for floats, a zero of
/// either sign where the row says `signed_zero_ties`), error status and text, the written
/// storage after an in-place call, and inputs left untouched.
fn check_values_file(file: &str, ulps: impl Fn(i32, &Value) -> i64) {
    let _g = settings_lock();
    let rows = read_jsonl(file);
    let mut f = Failures::new(file);
    for (i, row) in rows.iter().enumerate() {
        let line = i + 1;
        f.checked += 1;
        let op = op_code(row["op"].as_str().unwrap());
        let inplace = row["inplace"].as_bool().unwrap();
        let mut a = Operand::from_json(&row["a"]);
        let mut b = Operand::from_json(&row["b"]);
        let a_before = a.buf.clone();
        let b_before = b.buf.clone();
        let ulps = ulps(op, row);
        let ties = row.get("signed_zero_ties").and_then(Value::as_bool) == Some(true);
        {
            let ta = match unsafe { a.view() } {
                Ok(t) => t,
                Err(e) => {
                    f.add(line, row, format!("bc_tensor_wrap(a) failed: {e}"));
                    continue;
                }
            };
            let tb = match unsafe { b.view() } {
                Ok(t) => t,
                Err(e) => {
                    f.add(line, row, format!("bc_tensor_wrap(b) failed: {e}"));
                    continue;
                }
            };
            let call = if inplace {
                "bc_binary_inplace"
            } else {
                "bc_binary"
            };
            let got: Result<Option<T>, Err> = if inplace {
                binary_inplace(op, &ta, &tb).map(|_| None)
            } else {
                binary(op, &ta, &tb).map(Some)
            };
            let problem = check_outcome(got, row, |out| {
                check_result(out.as_ref().unwrap_or(&ta), &row["result"], ulps, ties)
            });
            if let Some(p) = problem {
                f.add(line, row, format!("{call}: {p}"));
            }
            drop(tb);
            drop(ta);
        }
        // the buffers, after every tensor over them is gone
        if b.buf != b_before {
            f.add(line, row, "the input b's storage was modified".into());
        }
        let expected_a: Option<Vec<V>> = if inplace && row.get("error").is_none() {
            Some(json_values(a.dtype, &row["result"]["storage_after"]))
        } else {
            None
        };
        match expected_a {
            None => {
                if a.buf != a_before {
                    f.add(
                        line,
                        row,
                        format!(
                            "a's storage was modified: {} -> {}",
                            fmt_vals(&decode(a.dtype, &a_before)),
                            fmt_vals(&a.storage())
                        ),
                    );
                }
            }
            Some(want) => {
                if let Some(p) = compare_values_ties(a.dtype, &a.storage(), &want, ulps, ties) {
                    f.add(
                        line,
                        row,
                        format!("storage of a after the in-place op: {p}"),
                    );
                }
            }
        }
    }
    f.finish();
}

/// A call's outcome against a row: the row's `error` (the status of its `kind`, the exact text),
/// or success, then checked by `ok`.
fn check_outcome<X>(
    got: Result<X, Err>,
    row: &Value,
    ok: impl FnOnce(X) -> Option<String>,
) -> Option<String> {
    match row.get("error") {
        Some(err) => expect_error(
            got,
            row["kind"].as_str().unwrap(),
            err.as_str().unwrap(),
            true,
        ),
        None => match got {
            Err(e) => Some(format!("expected success, got {e}")),
            Ok(x) => ok(x),
        },
    }
}

/// A result tensor against a row's `result`, values within `ulps` (a zero of either sign where
/// `ties`).
fn check_result(t: &T, res: &Value, ulps: i64, ties: bool) -> Option<String> {
    check_result_with(t, res, |d, got, want| {
        compare_values_ties(d, got, want, ulps, ties)
    })
}

// =============================================================================================
// promotion.jsonl
// =============================================================================================

/// What `1 op 1` gives, written in `dtype`.
fn one_op_one(op: i32, dtype: i32) -> V {
    let x = match op_name(op) {
        "add" | "bitwise_left_shift" => 2.0,
        "sub"
        | "ne"
        | "lt"
        | "gt"
        | "remainder"
        | "fmod"
        | "logical_xor"
        | "bitwise_xor"
        | "bitwise_right_shift" => 0.0,
        "atan2" => std::f64::consts::FRAC_PI_4,
        "hypot" => std::f64::consts::SQRT_2,
        _ => 1.0,
    };
    match dtype {
        BOOL => V::B(x != 0.0),
        U8 | I8 | I16 | I32 | I64 => V::I(x as i64),
        _ => V::F(round_to(dtype, x)),
    }
}

/// `1 op 1` is within the operation table's accuracy (exact but for `pow`, `atan2` and `hypot`).
fn one_op_one_ulps(op: i32) -> i64 {
    NAMED_OPS[op as usize].ulps
}

#[test]
fn promotion() {
    check_promotion_file("promotion.jsonl");
}

#[test]
fn ops_promotion() {
    check_promotion_file("ops_promotion.jsonl");
}

/// Every row of a promotion file: `1 op 1` on ones of shape `[2]` (or `[]` where 0-d) out of
/// place, into an `out` of the expected type, and in place: result type and value, or the error.
fn check_promotion_file(file: &str) {
    let _g = settings_lock();
    let rows = read_jsonl(file);
    let mut f = Failures::new(file);
    for (i, row) in rows.iter().enumerate() {
        let line = i + 1;
        f.checked += 1;
        let da = dtype_code(row["a"].as_str().unwrap());
        let db = dtype_code(row["b"].as_str().unwrap());
        let a0 = row["a_0d"].as_bool().unwrap();
        let b0 = row["b_0d"].as_bool().unwrap();
        let op = op_code(row["op"].as_str().unwrap());
        let sa: Vec<i64> = if a0 { vec![] } else { vec![2] };
        let sb: Vec<i64> = if b0 { vec![] } else { vec![2] };
        let rs: Vec<i64> = if a0 && b0 { vec![] } else { vec![2] };
        let ta = T::ones(da, &sa).expect("ones a");
        let tb = T::ones(db, &sb).expect("ones b");

        // out of place
        let got = binary(op, &ta, &tb);
        let out_dtype;
        if let Some(err) = row.get("error") {
            if let Some(p) = expect_error(
                got,
                row["kind"].as_str().unwrap(),
                err.as_str().unwrap(),
                true,
            ) {
                f.add(line, row, format!("bc_binary: {p}"));
            }
            out_dtype = F32;
        } else {
            let rd = dtype_code(row["result"].as_str().unwrap());
            out_dtype = rd;
            match got {
                Err(e) => f.add(
                    line,
                    row,
                    format!("bc_binary: expected result {}, got {e}", dtype_str(rd)),
                ),
                Ok(t) => {
                    let d = t.dtype();
                    if d != rd {
                        f.add(
                            line,
                            row,
                            format!(
                                "bc_binary: result dtype {} (code {d}), expected {}",
                                lib_dtype_name(d),
                                dtype_str(rd)
                            ),
                        );
                    } else if t.shape() != rs {
                        f.add(
                            line,
                            row,
                            format!("bc_binary: result shape {:?}, expected {rs:?}", t.shape()),
                        );
                    } else {
                        let want = vec![one_op_one(op, rd); rs.iter().product::<i64>() as usize];
                        if let Some(p) = compare_values(rd, &t.values(), &want, one_op_one_ulps(op))
                        {
                            f.add(line, row, format!("bc_binary: 1 op 1: {p}"));
                        }
                    }
                }
            }
        }

        // out= with an out tensor of the expected result dtype
        let out = T::full(out_dtype, &rs, 7.0).expect("out tensor");
        let before = out.bytes();
        let got = binary_out(op, &ta, &tb, &out);
        if let Some(err) = row.get("error") {
            if let Some(p) = expect_error(
                got,
                row["kind"].as_str().unwrap(),
                err.as_str().unwrap(),
                true,
            ) {
                f.add(line, row, format!("bc_binary_out: {p}"));
            }
            if out.bytes() != before {
                f.add(line, row, "bc_binary_out: refused call modified out".into());
            }
        } else {
            match got {
                Err(e) => f.add(
                    line,
                    row,
                    format!(
                        "bc_binary_out (out dtype {}): expected success, got {e}",
                        dtype_str(out_dtype)
                    ),
                ),
                Ok(()) => {
                    let want = vec![one_op_one(op, out_dtype); rs.iter().product::<i64>() as usize];
                    let ulps = one_op_one_ulps(op);
                    if out.dtype() != out_dtype || out.shape() != rs {
                        f.add(
                            line,
                            row,
                            "bc_binary_out changed out's dtype or shape".into(),
                        );
                    } else if let Some(p) = compare_values(out_dtype, &out.values(), &want, ulps) {
                        f.add(line, row, format!("bc_binary_out: 1 op 1: {p}"));
                    }
                }
            }
        }

        // in place (rows that say what happens)
        if row.get("inplace_result").is_some() || row.get("inplace_error").is_some() {
            let this = T::ones(da, &sa).expect("ones self");
            let before = this.bytes();
            let got = binary_inplace(op, &this, &tb);
            if this.dtype() != da || this.shape() != sa {
                f.add(
                    line,
                    row,
                    "bc_binary_inplace changed self's dtype or shape".into(),
                );
            }
            if let Some(err) = row.get("inplace_error") {
                if let Some(p) = expect_error(
                    got,
                    row["inplace_kind"].as_str().unwrap(),
                    err.as_str().unwrap(),
                    true,
                ) {
                    f.add(line, row, format!("bc_binary_inplace: {p}"));
                }
                if this.bytes() != before {
                    f.add(
                        line,
                        row,
                        "bc_binary_inplace: refused call modified self".into(),
                    );
                }
            } else {
                let rd = dtype_code(row["inplace_result"].as_str().unwrap());
                assert_eq!(rd, da, "oracle: in-place result dtype differs from self's");
                match got {
                    Err(e) => f.add(
                        line,
                        row,
                        format!("bc_binary_inplace: expected success, got {e}"),
                    ),
                    Ok(()) => {
                        let want = vec![one_op_one(op, da); sa.iter().product::<i64>() as usize];
                        let ulps = one_op_one_ulps(op);
                        if let Some(p) = compare_values(da, &this.values(), &want, ulps) {
                            f.add(line, row, format!("bc_binary_inplace: 1 op= 1: {p}"));
                        }
                    }
                }
            }
        }
    }
    f.finish();
}

// =============================================================================================
// where.jsonl
// =============================================================================================

/// Every row through `bc_where` on zero-copy views (result, or error status and text), and the
/// successful ones again through `bc_where_out` into a fresh `out`; inputs left untouched. The
/// uint8 deprecation warning comes once per process: this is the only test of this binary that
/// calls `where`, so it must see it exactly once, on the first uint8 row that succeeds.
#[test]
fn where_() {
    let _g = settings_lock();
    install_warning_collector();
    let rows = read_jsonl("where.jsonl");
    let mut f = Failures::new("where.jsonl");
    let mut warned = false;
    for (i, row) in rows.iter().enumerate() {
        let line = i + 1;
        f.checked += 1;
        let mut ops = ["cond", "a", "b"].map(|k| Operand::from_json(&row[k]));
        let before = ops.each_ref().map(|o| o.buf.clone());
        {
            let [c, a, b] = &mut ops;
            let views = unsafe { [c.view(), a.view(), b.view()] };
            let [Ok(tc), Ok(ta), Ok(tb)] = views else {
                f.add(line, row, "bc_tensor_wrap of an operand failed".into());
                continue;
            };
            take_warnings();
            let got = where_new(&tc, &ta, &tb);
            let warnings = take_warnings();
            let problem = check_outcome(got, row, |t| {
                if let Some(p) = check_result(&t, &row["result"], 0, false) {
                    return Some(p);
                }
                let out = T::zeros(t.dtype(), &t.shape()).expect("out");
                match where_out(&tc, &ta, &tb, &out) {
                    Err(e) => Some(format!("then bc_where_out: {e}")),
                    Ok(()) => check_result(&out, &row["result"], 0, false)
                        .map(|p| format!("then bc_where_out: {p}")),
                }
            });
            if let Some(p) = problem {
                f.add(line, row, format!("bc_where: {p}"));
            }
            let want_warning = row.get("warning").and_then(Value::as_str);
            let expect: Vec<&str> = match want_warning {
                Some(w) if !warned => vec![w],
                _ => vec![],
            };
            warned |= want_warning.is_some();
            let extra = take_warnings(); // from bc_where_out: never (once per process)
            if warnings != expect || !extra.is_empty() {
                f.add(
                    line,
                    row,
                    format!("warnings {warnings:?} then {extra:?}, expected {expect:?}"),
                );
            }
        }
        for (k, o) in ops.iter().enumerate() {
            if o.buf != before[k] {
                f.add(line, row, format!("input {k}'s storage was modified"));
            }
        }
    }
    assert!(warned, "where.jsonl has no uint8 row that succeeds");
    f.finish();
}

// =============================================================================================
// overlap.jsonl
// =============================================================================================

#[test]
fn overlap() {
    let _g = settings_lock();
    let rows = read_jsonl("overlap.jsonl");
    let mut f = Failures::new("overlap.jsonl");
    for (i, row) in rows.iter().enumerate() {
        let line = i + 1;
        f.checked += 1;
        let case = row["case"].as_str().unwrap();
        let one = T::full(F32, &[], 1.0).expect("0-d one");
        if case == "expanded_self" {
            let s = &row["self"];
            let base_len = s["base_len"].as_i64().unwrap();
            let shape = json_shape(&s["shape"]);
            let strides = json_shape(&s["strides"]);
            let offset = s["offset"].as_i64().unwrap();
            let msg = row["error"].as_str().unwrap();
            let kind = row["error_kind"].as_str().unwrap();
            let base: Vec<V> = (0..base_len).map(|k| V::F(k as f64)).collect();
            let mut buf = encode(F32, &base);
            let orig = buf.clone();
            {
                // (1) bc_tensor_wrap with the strides directly
                let n = buf.len();
                match unsafe { T::wrap(F32, buf.as_mut_ptr(), n, &shape, Some(&strides), offset) } {
                    Err(e) => f.add(
                        line,
                        row,
                        format!("bc_tensor_wrap of the expanded view failed: {e}"),
                    ),
                    Ok(this) => {
                        if let Some(p) = expect_error(add_inplace(&this, &one), kind, msg, true) {
                            f.add(
                                line,
                                row,
                                format!("bc_add_inplace on a wrapped expanded view: {p}"),
                            );
                        }
                    }
                }
                // (2) bc_tensor_as_strided over a wrapped 1-d base
                match unsafe { T::wrap(F32, buf.as_mut_ptr(), n, &[base_len], None, 0) } {
                    Err(e) => f.add(line, row, format!("bc_tensor_wrap of the base failed: {e}")),
                    Ok(bt) => match bt.as_strided(&shape, &strides, offset) {
                        Err(e) => f.add(line, row, format!("bc_tensor_as_strided failed: {e}")),
                        Ok(this) => {
                            if let Some(p) = expect_error(add_inplace(&this, &one), kind, msg, true)
                            {
                                f.add(
                                    line,
                                    row,
                                    format!("bc_add_inplace on an as_strided expanded view: {p}"),
                                );
                            }
                            // the same view through expand of a 1-row view
                        }
                    },
                }
            }
            if buf != orig {
                f.add(
                    line,
                    row,
                    format!(
                        "refused in-place add modified the base: {}",
                        fmt_vals(&decode(F32, &buf))
                    ),
                );
            }
            continue;
        }

        let base = json_values(F32, &row["base"]);
        let (oo, ol) = (
            row["out"]["offset"].as_i64().unwrap(),
            row["out"]["len"].as_i64().unwrap(),
        );
        let (io, il) = (
            row["input"]["offset"].as_i64().unwrap(),
            row["input"]["len"].as_i64().unwrap(),
        );
        let expected: Option<Vec<V>> = if row.get("ok").and_then(|v| v.as_bool()) == Some(true) {
            Some(json_values(F32, &row["base_after"]))
        } else {
            None
        };
        // Two ways of making the views: slices of one wrapped base tensor, and two separate
        // wraps of the same memory (overlap is about memory, not about handles).
        for variant in [
            "bc_tensor_slice of one base",
            "two bc_tensor_wrap of the same memory",
        ] {
            let mut buf = encode(F32, &base);
            let orig = buf.clone();
            let n = buf.len();
            let res = {
                let p = buf.as_mut_ptr();
                let (out_t, in_t) = if variant.starts_with("bc_tensor_slice") {
                    let bt = unsafe { T::wrap(F32, p, n, &[base.len() as i64], None, 0) }
                        .expect("wrap base");
                    (
                        bt.slice(0, oo, oo + ol, 1).expect("slice out"),
                        bt.slice(0, io, io + il, 1).expect("slice input"),
                    )
                } else {
                    (
                        unsafe { T::wrap(F32, p, n, &[ol], Some(&[1]), oo) }.expect("wrap out"),
                        unsafe { T::wrap(F32, p, n, &[il], Some(&[1]), io) }.expect("wrap input"),
                    )
                };
                add_out(&in_t, &one, &out_t)
            };
            let after = decode(F32, &buf);
            match &expected {
                Some(want) => match res {
                    Err(e) => f.add(
                        line,
                        row,
                        format!("[{variant}] bc_add_out: expected success, got {e}"),
                    ),
                    Ok(()) => {
                        if let Some(p) = compare_values(F32, &after, want, 0) {
                            f.add(line, row, format!("[{variant}] base after bc_add_out: {p}"));
                        }
                    }
                },
                None => {
                    if let Some(p) = expect_error(
                        res,
                        row["error_kind"].as_str().unwrap(),
                        row["error"].as_str().unwrap(),
                        true,
                    ) {
                        f.add(line, row, format!("[{variant}] bc_add_out: {p}"));
                    }
                    if buf != orig {
                        f.add(
                            line,
                            row,
                            format!(
                                "[{variant}] refused bc_add_out modified the base: {}",
                                fmt_vals(&after)
                            ),
                        );
                    }
                }
            }
        }
    }
    f.finish();
}

// =============================================================================================
// legacy.jsonl
// =============================================================================================

#[test]
fn legacy() {
    let _g = settings_lock();
    install_warning_collector();
    let rows = read_jsonl("legacy.jsonl");
    let mut f = Failures::new("legacy.jsonl");
    for (i, row) in rows.iter().enumerate() {
        let line = i + 1;
        f.checked += 1;
        let a = shape_of(row, "a");
        let b = shape_of(row, "b");
        let inplace = row["inplace"].as_bool().unwrap();
        let fallback = row["fallback"].as_bool().unwrap();
        let warn = row["warn"].as_bool().unwrap();
        set_switches(fallback, warn);
        let ta = T::arange_f32(&a, 0.0);
        let tb = T::arange_f32(&b, 100.0);
        let a_vals = ta.to_f64();
        let b_vals = tb.to_f64();
        take_warnings();
        let got: Result<Option<T>, Err> = if inplace {
            add_inplace(&ta, &tb).map(|_| None)
        } else {
            add(&ta, &tb).map(Some)
        };
        let warnings = take_warnings();
        let want_w: Vec<String> = row["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w.as_str().unwrap().to_string())
            .collect();
        if warnings != want_w {
            f.add(
                line,
                row,
                format!("warnings:\n      expected {want_w:?}\n      got      {warnings:?}"),
            );
        }
        if let Some(err) = row.get("error") {
            let exact = row.get("exact").and_then(|v| v.as_bool()).unwrap_or(true);
            if let Some(p) = expect_error(
                got,
                row["kind"].as_str().unwrap(),
                err.as_str().unwrap(),
                exact,
            ) {
                f.add(
                    line,
                    row,
                    format!("{}: {p}", if inplace { "bc_add_inplace" } else { "bc_add" }),
                );
            }
            if inplace && ta.to_f64() != a_vals {
                f.add(line, row, "refused in-place add modified self".into());
            }
            continue;
        }
        let want = shape_of(row, "shape");
        let pointwise = row
            .get("pointwise_1d")
            .and_then(|v| v.as_bool())
            .unwrap_or(false);
        let t = match got {
            Err(e) => {
                f.add(line, row, format!("expected shape {want:?}, got {e}"));
                continue;
            }
            Ok(Some(t)) => t,
            Ok(None) => ta,
        };
        if t.shape() != want {
            f.add(
                line,
                row,
                format!("result shape {:?}, expected {want:?}", t.shape()),
            );
            continue;
        }
        let got_v = t.to_f64();
        let exp: Vec<f64> = if pointwise {
            assert_eq!(
                a_vals.len(),
                b_vals.len(),
                "oracle: pointwise_1d row with different numels"
            );
            (0..a_vals.len()).map(|k| a_vals[k] + b_vals[k]).collect()
        } else {
            (0..numel(&want))
                .map(|flat| {
                    let idx = unravel(flat, &want);
                    a_vals[flat_of(&broadcast_index(&idx, &a), &a) as usize]
                        + b_vals[flat_of(&broadcast_index(&idx, &b), &b) as usize]
                })
                .collect()
        };
        if got_v != exp {
            f.add(
                line,
                row,
                format!(
                    "values ({}):\n      expected {exp:?}\n      got      {got_v:?}",
                    if pointwise {
                        "pointwise 1-d"
                    } else {
                        "broadcast"
                    }
                ),
            );
        }
    }
    f.finish();
}

// =============================================================================================
// the oracle folder itself
// =============================================================================================

#[test]
fn oracle_folder_is_complete() {
    let dir = oracle_dir();
    for name in [
        "binary_shapes.jsonl",
        "inplace_shapes.jsonl",
        "nary_shapes.jsonl",
        "expand.jsonl",
        "values.jsonl",
        "reduced_scalar.jsonl",
        "promotion.jsonl",
        "overlap.jsonl",
        "legacy.jsonl",
        "ops_values.jsonl",
        "ops_promotion.jsonl",
        "where.jsonl",
        "scalar.jsonl",
        "reductions.jsonl",
        "reductions_more.jsonl",
        "unary_values.jsonl",
        "unary_promotion.jsonl",
        "ternary_values.jsonl",
        "sum_to_size.jsonl",
        "repr.jsonl",
        "layout.jsonl",
        "layout_extra.jsonl",
    ] {
        assert!(
            dir.join(name).is_file(),
            "oracle file {name} is missing from {}",
            dir.display()
        );
    }
}

#[test]
fn dtype_names_and_sizes() {
    for (name, code) in DTYPES {
        assert_eq!(lib_dtype_name(code), name, "bc_dtype_name({code})");
        assert_eq!(bc_dtype_size(code), itemsize(code), "bc_dtype_size({code})");
    }
    assert_eq!(lib_dtype_name(10), "unknown");
    assert_eq!(lib_dtype_name(-1), "unknown");
    assert_eq!(bc_dtype_size(10), 0);
}
