//! Reductions, `sum_to_size` and the fused `sum_to_size(a op b)`, through the C ABI.
//!
//! * Conformance: every row of `reductions.jsonl` and `sum_to_size.jsonl` (PyTorch 2.15), each
//!   through `bc_reduce` and the named function (`bc_sum`, ...), with the README's error bound for
//!   floating sums, means and products; every `sum_to_size` row also through
//!   `bc_binary_sum_to(BC_OP_MUL, input, 1)`, which must give exactly the same.
//! * Properties against a plain reference written here (exact integers, float64 sums with the
//!   stated bound), the fused form against the two calls bit for bit, results independent of the
//!   thread count, and the accuracy of long sums.
//!
//! Tests that change the thread count or the parallel threshold hold the settings lock.

use broadcast::ffi::*;
use serde_json::Value;
use std::ptr;
use testkit::*;

/// A view of the row's operand, or `None` with the failure recorded.
fn view_or_record(input: &mut Operand, f: &mut Failures, line: usize, row: &Value) -> Option<T> {
    // SAFETY: every caller drops the view before the operand.
    unsafe { input.view() }
        .map_err(|e| f.add(line, row, format!("bc_tensor_wrap failed: {e}")))
        .ok()
}

// ---------------------------------------------------------------------------------------------
// reductions.jsonl

#[test]
fn reductions_conformance() {
    let rows = read_jsonl("reductions.jsonl");
    let mut f = Failures::new("reductions.jsonl");
    for (i, row) in rows.iter().enumerate() {
        let line = i + 1;
        f.checked += 1;
        let name = row["op"].as_str().unwrap();
        let op = reduce_code(name);
        let dims: Option<Vec<i64>> = (!row["dim"].is_null()).then(|| json_shape(&row["dim"]));
        let keepdim = row["keepdim"].as_bool().unwrap();
        let mut input = Operand::from_json(&row["input"]);
        let before = input.buf.clone();
        {
            let Some(t) = view_or_record(&mut input, &mut f, line, row) else {
                continue;
            };
            let got = reduce(op, &t, dims.as_deref(), keepdim);
            let named = reduce_named(op, &t, dims.as_deref(), keepdim);
            match (&got, &named) {
                (Ok(x), Ok(y)) if x.bytes() == y.bytes() && x.shape() == y.shape() => {}
                (Err(x), Err(y)) if x == y => {}
                _ => f.add(line, row, "bc_reduce and the named function differ".into()),
            }
            if let Some(err) = row.get("error") {
                let exact = row.get("exact").and_then(Value::as_bool).unwrap_or(true);
                let kind = row["kind"].as_str().unwrap();
                if let Some(p) = expect_error(got, kind, err.as_str().unwrap(), exact) {
                    f.add(line, row, format!("bc_reduce: {p}"));
                }
            } else {
                match got {
                    Err(e) => f.add(line, row, format!("bc_reduce: expected success, got {e}")),
                    Ok(r) => {
                        if let Some(p) =
                            check_reduction(row, name, &r, numel(&input.shape) as usize)
                        {
                            f.add(line, row, format!("bc_reduce: {p}"));
                        }
                    }
                }
            }
        }
        if input.buf != before {
            f.add(line, row, "the input's storage was modified".into());
        }
    }
    f.finish();
}

/// A successful row: dtype, shape, then values (exact, zero signs free where the row allows, or
/// within the bound for floating sum, mean and prod).
fn check_reduction(row: &Value, op: &str, r: &T, in_numel: usize) -> Option<String> {
    let res = &row["result"];
    let rd = dtype_code(res["dtype"].as_str().unwrap());
    let rshape = json_shape(&res["shape"]);
    if r.dtype() != rd {
        return Some(format!(
            "dtype {}, expected {}",
            dtype_str(r.dtype()),
            dtype_str(rd)
        ));
    }
    if r.shape() != rshape {
        return Some(format!("shape {:?}, expected {rshape:?}", r.shape()));
    }
    let got = r.values();
    if rd == BOOL && !bool_bytes_ok(&r.bytes()) {
        return Some("a bool result holds bytes other than 0/1".into());
    }
    let want = json_values(rd, &res["data"]);
    if !is_float(rd) || op == "amax" || op == "amin" {
        let ties = row.get("signed_zero_ties").and_then(Value::as_bool) == Some(true);
        // Where the row allows it, a zero may have either sign.
        let equal = |k: usize| {
            same_value(got[k], want[k]) || ties && got[k].as_f64() == 0.0 && want[k].as_f64() == 0.0
        };
        let bad = (0..want.len().min(got.len())).find(|&k| !equal(k));
        return match (got.len() == want.len(), bad) {
            (true, None) => None,
            _ => compare_values(rd, &got, &want, 0),
        };
    }
    if got.is_empty() {
        return None;
    }
    let n = in_numel / got.len();
    let exact = json_values(F64, &row["f64"]);
    let abs = row.get("abs_f64").map(|v| json_values(F64, v));
    for (k, g) in got.iter().enumerate() {
        let fx = exact[k].as_f64();
        let a = abs.as_ref().map_or(fx.abs(), |v| v[k].as_f64());
        if let Some(p) = within_bound(op, rd, g.as_f64(), fx, a, n) {
            return Some(format!("element {k}: {p}"));
        }
    }
    None
}

// ---------------------------------------------------------------------------------------------
// sum_to_size.jsonl

#[test]
fn sum_to_size_conformance() {
    let rows = read_jsonl("sum_to_size.jsonl");
    let mut f = Failures::new("sum_to_size.jsonl");
    for (i, row) in rows.iter().enumerate() {
        let line = i + 1;
        f.checked += 1;
        let size = json_shape(&row["size"]);
        let mut input = Operand::from_json(&row["input"]);
        let before = input.buf.clone();
        {
            let Some(t) = view_or_record(&mut input, &mut f, line, row) else {
                continue;
            };
            // The fused form with `* 1` must give the same, error or values.
            let one = T::ones(input.dtype, &[]).expect("ones");
            let calls = [
                ("bc_tensor_sum_to_size", sum_to_size(&t, &size)),
                (
                    "bc_binary_sum_to(mul, t, 1)",
                    binary_sum_to(BC_OP_MUL, &t, &one, &size),
                ),
            ];
            for (call, got) in calls {
                if let Some(err) = row.get("error") {
                    let kind = row["kind"].as_str().unwrap();
                    if let Some(p) = expect_error(got, kind, err.as_str().unwrap(), true) {
                        f.add(line, row, format!("{call}: {p}"));
                    }
                    continue;
                }
                let res = &row["result"];
                let rd = dtype_code(res["dtype"].as_str().unwrap());
                let rshape = json_shape(&res["shape"]);
                let want = json_values(rd, &res["data"]);
                match got {
                    Err(e) => f.add(line, row, format!("{call}: expected success, got {e}")),
                    Ok(r) if r.dtype() != rd => f.add(
                        line,
                        row,
                        format!(
                            "{call}: dtype {}, expected {}",
                            dtype_str(r.dtype()),
                            dtype_str(rd)
                        ),
                    ),
                    Ok(r) if r.shape() != rshape => f.add(
                        line,
                        row,
                        format!("{call}: shape {:?}, expected {rshape:?}", r.shape()),
                    ),
                    Ok(r) => {
                        if let Some(p) = compare_values(rd, &r.values(), &want, 0) {
                            f.add(line, row, format!("{call}: {p}"));
                        }
                    }
                }
            }
        }
        if input.buf != before {
            f.add(line, row, "the input's storage was modified".into());
        }
    }
    f.finish();
}

// ---------------------------------------------------------------------------------------------
// properties of the implementation

/// float32 values `(i * 7919 % 1000 - 500) / 64`: exact in float32, signs mixed.
fn mixed_f32(n: usize) -> Vec<V> {
    (0..n)
        .map(|i| V::F(((i * 7919 % 1000) as f64 - 500.0) / 64.0))
        .collect()
}

/// The same bits whatever the thread count and the parallel threshold: full sums, row and
/// column reductions large enough to be cut into several ranges, a transposed input, and the
/// fused form.
#[test]
fn results_do_not_depend_on_the_thread_count() {
    let _restore = ThreadingGuard;
    let big = T::from_values(F32, &[1536, 1024], &mixed_f32(1536 * 1024)).unwrap();
    let tall = T::from_values(F64, &[40000, 3], &mixed_f32(120000)).unwrap();
    let wide_t = big.as_strided(&[1024, 1536], &[1, 1024], 0).unwrap();
    let row = T::from_values(F32, &[1024], &mixed_f32(1024)).unwrap();
    type Call<'a> = Box<dyn Fn() -> T + 'a>;
    let cases: Vec<(&str, Call)> = vec![
        (
            "sum all",
            Box::new(|| reduce(0, &big, None, false).unwrap()),
        ),
        (
            "sum dim 0",
            Box::new(|| reduce(0, &big, Some(&[0]), false).unwrap()),
        ),
        (
            "mean dim 1",
            Box::new(|| reduce(1, &big, Some(&[1]), true).unwrap()),
        ),
        (
            "prod dim 0 of (40000,3)",
            Box::new(|| reduce(2, &tall, Some(&[0]), false).unwrap()),
        ),
        (
            "sum dim 0 of (40000,3)",
            Box::new(|| reduce(0, &tall, Some(&[0]), false).unwrap()),
        ),
        (
            "amax transposed",
            Box::new(|| reduce(3, &wide_t, Some(&[1]), false).unwrap()),
        ),
        (
            "sum transposed",
            Box::new(|| reduce(0, &wide_t, Some(&[-1]), false).unwrap()),
        ),
        (
            "fused",
            Box::new(|| binary_sum_to(BC_OP_MUL, &big, &row, &[1024]).unwrap()),
        ),
        (
            "fused to rows",
            Box::new(|| binary_sum_to(BC_OP_SUB, &big, &row, &[1536, 1]).unwrap()),
        ),
    ];
    for (name, f) in &cases {
        let mut seen: Option<Vec<u8>> = None;
        for (threads, threshold) in [(1, 0), (2, 2), (3, 1000), (2, 0), (4, 7)] {
            assert_eq!(bc_set_num_threads(threads), BC_OK);
            assert_eq!(bc_set_parallel_threshold(threshold), BC_OK);
            let bytes = f().bytes();
            match &seen {
                None => seen = Some(bytes),
                Some(s) => assert!(
                    *s == bytes,
                    "{name}: {threads} threads (threshold {threshold}) give other bits"
                ),
            }
        }
    }
}

/// A long float32 sum is within the stated bound, gamma(h) * sum |x| with
/// h = 106 + ceil(log2(n / 2^14)), and far closer than summing left to right in float32.
#[test]
fn long_sums_are_accurate() {
    let n = 1usize << 22;
    let x = 0.1f32 as f64;
    let t = T::full(F32, &[n as i64], x).unwrap();
    let got = reduce(0, &t, None, false).unwrap().to_f64()[0];
    let exact = x * n as f64;
    let h = 106.0 + (n as f64 / (1u64 << 14) as f64).log2().ceil();
    let u = 2f64.powi(-24);
    let bound = h * u / (1.0 - h * u) * exact;
    assert!(
        (got - exact).abs() <= bound,
        "sum of {n} x 0.1f: {got}, exact {exact}, bound {bound}"
    );
    let naive = (0..n).fold(0f32, |s, _| s + x as f32) as f64;
    assert!(
        (naive - exact).abs() > 100.0 * (got - exact).abs(),
        "left to right: {naive}, pairwise {got}, exact {exact}"
    );
    // Mixed signs, mean of float16 (accumulated in float32).
    let vals = mixed_f32(1 << 20);
    let exact: f64 = vals.iter().map(|v| v.as_f64()).sum::<f64>() / (1 << 20) as f64;
    let t = T::from_values(F16, &[1 << 20], &vals).unwrap();
    let got = reduce(1, &t, None, false).unwrap().to_f64()[0];
    assert!((got - exact).abs() <= 2f64.powi(-10) * exact.abs().max(2f64.powi(-14)) * 2.0);
}

/// Failures as data: the `BC_ERROR_KIND_*` of each reduction error, with its fields.
#[test]
fn reduction_errors_as_data() {
    let info = || {
        let mut i = std::mem::MaybeUninit::<bc_error_info>::uninit();
        assert_eq!(unsafe { bc_last_error_info(i.as_mut_ptr()) }, BC_OK);
        unsafe { i.assume_init() }
    };
    let t = T::zeros(I32, &[2, 0, 3]).unwrap();
    let e = reduce(0, &t, Some(&[1, -4]), false).unwrap_err();
    assert_eq!(e.status, BC_ERR_INVALID_ARG);
    let i = info();
    assert_eq!(
        (i.kind, i.dim, i.size_a),
        (BC_ERROR_KIND_DIM_OUT_OF_RANGE, -4, 3)
    );
    reduce(0, &t, Some(&[2, -1]), false).unwrap_err();
    let i = info();
    assert_eq!((i.kind, i.dim), (BC_ERROR_KIND_DIM_REPEATED, 2));
    let e = reduce(3, &t, Some(&[0, -2]), false).unwrap_err();
    assert_eq!(
        e.msg,
        "amax(): Expected reduction dim -2 to have non-zero size."
    );
    let i = info();
    assert_eq!(
        (i.status, i.kind, i.dim),
        (BC_ERR_SHAPE, BC_ERROR_KIND_EMPTY_REDUCTION, 1)
    );
    reduce(4, &t, None, false).unwrap_err();
    assert_eq!(
        (info().kind, info().dim),
        (BC_ERROR_KIND_EMPTY_REDUCTION, -1)
    );
    let e = reduce(1, &t, None, false).unwrap_err();
    assert_eq!(e.status, BC_ERR_DTYPE);
    let i = info();
    assert_eq!((i.kind, i.dtype_a), (BC_ERROR_KIND_REDUCE_DTYPE, I32));
    let e = sum_to_size(&t, &[-1, 3]).unwrap_err();
    assert_eq!(
        e.msg,
        "size {[-1, 3]} is not expandable to size {[2, 0, 3]}."
    );
    assert_eq!(info().kind, BC_ERROR_KIND_NOT_EXPANDABLE);
    let shape = |which: i32| {
        let mut buf = [0i64; 4];
        let mut nd = 0i64;
        assert_eq!(
            unsafe { bc_last_error_shape(which, buf.as_mut_ptr(), 4, &mut nd) },
            BC_OK
        );
        buf[..nd as usize].to_vec()
    };
    assert_eq!((shape(0), shape(1)), (vec![-1, 3], vec![2, 0, 3]));
    // Bad codes, NULL arguments and dead handles.
    let mut out: *mut bc_tensor = std::ptr::dangling_mut();
    assert_eq!(
        unsafe { bc_reduce(5, t.ptr(), ptr::null(), 0, false, &mut out) },
        BC_ERR_INVALID_ARG
    );
    assert!(out.is_null());
    assert_eq!(last_error(), "unknown reduction code 5");
    assert_eq!(
        unsafe { bc_reduce(BC_REDUCE_SUM, t.ptr(), ptr::null(), 1, false, &mut out) },
        BC_ERR_NULL_ARG
    );
    assert_eq!(
        unsafe { bc_sum(ptr::null(), ptr::null(), 0, false, &mut out) },
        BC_ERR_NULL_ARG
    );
    assert_eq!(
        unsafe { bc_sum(t.ptr(), ptr::null(), 0, false, ptr::null_mut()) },
        BC_ERR_NULL_ARG
    );
    assert_eq!(
        unsafe { bc_tensor_sum_to_size(t.ptr(), ptr::null(), 2, &mut out) },
        BC_ERR_NULL_ARG
    );
    assert_eq!(
        unsafe { bc_binary_sum_to(BC_OP_COUNT, t.ptr(), t.ptr(), ptr::null(), 0, &mut out) },
        BC_ERR_INVALID_ARG
    );
    let dead = T::zeros(F32, &[2]).unwrap();
    let handle = dead.ptr();
    drop(dead);
    assert_eq!(
        unsafe { bc_amin(handle, ptr::null(), 0, false, &mut out) },
        BC_ERR_INVALID_HANDLE
    );
    assert_eq!(
        unsafe { bc_binary_sum_to(BC_OP_ADD, t.ptr(), handle, ptr::null(), 0, &mut out) },
        BC_ERR_INVALID_HANDLE
    );
    assert!(out.is_null());
}

/// `bc_binary_sum_to` against `bc_binary` then `bc_tensor_sum_to_size`, bit for bit with NaNs
/// of both signs and infinities among the operands, except that a NaN may be any NaN: which NaN a
/// result is (sign, payload) depends on the order operands meet in (the header states the rule).
#[test]
fn fused_sums_are_the_separate_calls_any_nan() {
    let same = |got: &T, want: &T, what: &dyn Fn() -> String| {
        same_bits_any_nan(got, want).unwrap_or_else(|e| panic!("{}: {e}", what()));
    };
    // The case reported: float32 (445,) - (2, 417, 1) summed to (), a NaN of each sign.
    let mut a = vec![0u8; 445 * 4];
    let mut b = vec![0u8; 834 * 4];
    for (i, x) in a.chunks_mut(4).enumerate() {
        x.copy_from_slice(&(i as f32 * 0.5).to_le_bytes());
    }
    for (i, x) in b.chunks_mut(4).enumerate() {
        x.copy_from_slice(&(i as f32 * 0.25).to_le_bytes());
    }
    a[51 * 4..52 * 4].copy_from_slice(&0xFFC0_0000u32.to_le_bytes());
    b[424 * 4..425 * 4].copy_from_slice(&0x7FC0_0000u32.to_le_bytes());
    let ta = T::from_bytes(F32, &[445], &a).unwrap();
    let tb = T::from_bytes(F32, &[2, 417, 1], &b).unwrap();
    let want = sum_to_size(&binary(BC_OP_SUB, &ta, &tb).unwrap(), &[]).unwrap();
    same(
        &binary_sum_to(BC_OP_SUB, &ta, &tb, &[]).unwrap(),
        &want,
        &|| "(445,) - (2, 417, 1)".into(),
    );

    let ops = NAN_MAKING_OPS;
    let bases: [&[i64]; 4] = [&[2, 41, 445], &[3, 40, 33], &[16, 1030], &[5, 3, 7, 9]];
    let mut seed = 0x0DDB_1A5E_5BAD_5EEDu64;
    let pick = |n: usize, seed: &mut u64| {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        (*seed % n as u64) as usize
    };
    let (mut checked, mut with_nan) = (0, 0);
    for case in 0..600 {
        let base = bases[case % bases.len()];
        let dtype = [F32, F64, F16, BF16][pick(4, &mut seed)];
        let op = ops[pick(ops.len(), &mut seed)];
        // Each operand keeps a dimension or has 1 there; leading ones may be missing.
        let operand = |seed: &mut u64| {
            let drop = pick(base.len(), seed);
            base[drop..]
                .iter()
                .map(|&n| if pick(3, seed) == 0 { 1 } else { n })
                .collect::<Vec<i64>>()
        };
        let (sa, sb) = (operand(&mut seed), operand(&mut seed));
        let full = shape_broadcast(&sa, &sb).unwrap();
        let size: Vec<i64> = full[pick(full.len() + 1, &mut seed)..]
            .iter()
            .map(|&n| if pick(2, &mut seed) == 0 { 1 } else { n })
            .collect();
        let count = |s: &[i64]| s.iter().product::<i64>() as usize;
        let special = [20, 200, 5000][pick(3, &mut seed)];
        let ta = T::from_bytes(
            dtype,
            &sa,
            &nan_rich_floats(&mut seed, dtype, count(&sa), special),
        )
        .unwrap();
        let tb = T::from_bytes(
            dtype,
            &sb,
            &nan_rich_floats(&mut seed, dtype, count(&sb), special),
        )
        .unwrap();
        let want = sum_to_size(&binary(op, &ta, &tb).unwrap(), &size).unwrap();
        let got = binary_sum_to(op, &ta, &tb, &size).unwrap();
        let what = || {
            format!(
                "case {case}: {} {} {sa:?} {sb:?} to {size:?}",
                op_name(op),
                dtype_str(dtype)
            )
        };
        same(&got, &want, &what);
        checked += 1;
        with_nan += want
            .values()
            .iter()
            .any(|v| matches!(v, V::F(x) if x.is_nan())) as usize;
    }
    assert!(
        checked == 600 && with_nan > 200,
        "{with_nan} of {checked} results hold a NaN"
    );
}
