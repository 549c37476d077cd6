//! The layout of new results against PyTorch: every row of
//! `tests/data/pytorch/layout.jsonl` gives the strides PyTorch 2.15 gave the result of an
//! out-of-place row of `values.jsonl` or `ops_values.jsonl`. The operands are built from that row
//! (its types matter: a converted input takes part with its copy's layout), the operation runs
//! through the C ABI, and the result's shape and its strides on dimensions of size above 1 (the
//! only ones that address memory) must be PyTorch's. `layout_extra.jsonl` adds layouts those
//! files meet rarely (up to seven dimensions, odd strides on size-1 dimensions, channels-last,
//! converted operands, a tensor with a number), where the strides of every dimension must be
//! PyTorch's.

mod common;

use broadcast::ffi::*;
use common::*;
use serde_json::Value;

#[test]
fn results_are_laid_out_as_pytorch_lays_them_out() {
    let _g = settings_lock();
    let sources = [
        ("values", read_jsonl("values.jsonl")),
        ("ops_values", read_jsonl("ops_values.jsonl")),
    ];
    let rows = read_jsonl("layout.jsonl");
    let mut f = Failures::new("layout.jsonl");
    let mut exact = 0;
    for (i, row) in rows.iter().enumerate() {
        let source = row["source"].as_str().unwrap();
        let (_, lines) = sources
            .iter()
            .find(|(name, _)| *name == source)
            .unwrap_or_else(|| panic!("layout.jsonl:{}: unknown source {source}", i + 1));
        f.checked += 1;
        let src = &lines[row["line"].as_u64().unwrap() as usize];
        match check_row(row, src) {
            Ok(true) => exact += 1,
            Ok(false) => {}
            Err(e) => f.add(i + 1, row, e),
        }
    }
    println!(
        "layout.jsonl: {exact} of {} results have PyTorch's strides on every dimension",
        f.checked
    );
    assert_eq!(f.checked, rows.len());
    f.finish();
}

/// Checks one row against the call it describes; `Ok(true)` when the strides also agree on
/// dimensions of size 0 or 1.
fn check_row(row: &Value, src: &Value) -> Result<bool, String> {
    if src["op"] != row["op"] || src["inplace"] != false {
        return Err(format!(
            "source row is {} (inplace {})",
            src["op"], src["inplace"]
        ));
    }
    let mut a = Operand::from_json(&src["a"]);
    let mut b = Operand::from_json(&src["b"]);
    for (name, o) in [("a", &a), ("b", &b)] {
        let (shape, strides) = (
            json_shape(&row[name]["shape"]),
            json_shape(&row[name]["strides"]),
        );
        if (&o.shape, &o.strides) != (&shape, &strides) {
            return Err(format!("operand {name} differs from its source row"));
        }
    }
    let (ta, tb) = unsafe { (a.view(), b.view()) };
    let (ta, tb) = (
        ta.map_err(|e| e.to_string())?,
        tb.map_err(|e| e.to_string())?,
    );
    let out = binary(op_code(row["op"].as_str().unwrap()), &ta, &tb)
        .map_err(|e| format!("bc_binary failed: {e}"))?;
    let (shape, strides) = (out.shape(), out.strides());
    let (want_shape, want) = (json_shape(&row["shape"]), json_shape(&row["strides"]));
    if shape != want_shape {
        return Err(format!("shape {shape:?}, expected {want_shape:?}"));
    }
    let addressed = |d: &usize| shape[*d] > 1;
    if (0..shape.len())
        .filter(addressed)
        .any(|d| strides[d] != want[d])
    {
        return Err(format!("strides {strides:?}, expected {want:?}"));
    }
    Ok(strides == want)
}

#[test]
fn more_layouts_as_pytorch_lays_them_out() {
    let _g = settings_lock();
    let rows = read_jsonl("layout_extra.jsonl");
    let mut f = Failures::new("layout_extra.jsonl");
    for (i, row) in rows.iter().enumerate() {
        f.checked += 1;
        let op = op_code(row["op"].as_str().unwrap());
        let mut a = Zeros::new(&row["a"]);
        let ta = unsafe { a.view() };
        let got = match row.get("b") {
            Some(b) => {
                let mut b = Zeros::new(b);
                let tb = unsafe { b.view() };
                binary(op, &ta, &tb)
            }
            None => {
                let s = scalar_of(&row["scalar"]);
                let mut out = std::ptr::null_mut();
                let status = unsafe {
                    match row["order"] == "scalar_tensor" {
                        true => bc_binary_rscalar(op, s, ta.ptr(), &mut out),
                        false => bc_binary_scalar(op, ta.ptr(), s, &mut out),
                    }
                };
                check(status).map(|()| T(out))
            }
        };
        expect_layout(&mut f, i, row, "bc_binary", got);
    }
    assert!(f.checked >= 2100, "only {} rows checked", f.checked);
    f.finish();
}

/// `where_layout.jsonl`: the strides PyTorch gives `torch.where(cond, a, b)`, for operands of
/// many layouts and shapes that broadcast, a uint8 condition, and `a` or `b` of another type
/// than the result; every dimension's stride must be PyTorch's.
#[test]
fn where_results_are_laid_out_as_pytorch_lays_them_out() {
    let _g = settings_lock();
    let rows = read_jsonl("where_layout.jsonl");
    let mut f = Failures::new("where_layout.jsonl");
    for (i, row) in rows.iter().enumerate() {
        f.checked += 1;
        let mut operands = ["cond", "a", "b"].map(|name| Zeros::new(&row[name]));
        let [c, a, b] = operands.each_mut().map(|z| unsafe { z.view() });
        let mut out = std::ptr::null_mut();
        let got = check(unsafe { bc_where(c.ptr(), a.ptr(), b.ptr(), &mut out) }).map(|()| T(out));
        expect_layout(&mut f, i, row, "bc_where", got);
    }
    assert!(f.checked >= 1350, "only {} rows checked", f.checked);
    f.finish();
}

/// Records a failure of row `i` unless `got` has the row's result `dtype`, `shape` and `strides`.
fn expect_layout<E: std::fmt::Display>(
    f: &mut Failures,
    i: usize,
    row: &Value,
    call: &str,
    got: Result<T, E>,
) {
    let got = got.map(|out| (lib_dtype_name(out.dtype()), out.shape(), out.strides()));
    let want = (
        row["dtype"].as_str().unwrap().to_string(),
        json_shape(&row["shape"]),
        json_shape(&row["strides"]),
    );
    match got {
        Ok(got) if got == want => {}
        Ok(got) => f.add(i + 1, row, format!("got {got:?}, expected {want:?}")),
        Err(e) => f.add(i + 1, row, format!("{call} failed: {e}")),
    }
}

/// A view with a row's geometry of zeroed memory just large enough (the values do not matter).
struct Zeros {
    buf: Vec<u8>,
    dtype: i32,
    shape: Vec<i64>,
    strides: Vec<i64>,
}

impl Zeros {
    fn new(v: &Value) -> Zeros {
        let dtype = dtype_code(v["dtype"].as_str().unwrap());
        let (shape, strides) = (json_shape(&v["shape"]), json_shape(&v["strides"]));
        let span = if shape.contains(&0) {
            1
        } else {
            1 + shape
                .iter()
                .zip(&strides)
                .map(|(n, s)| (n - 1) * s)
                .sum::<i64>()
        };
        let buf = vec![0u8; span as usize * itemsize(dtype)];
        Zeros {
            buf,
            dtype,
            shape,
            strides,
        }
    }

    /// # Safety: the tensor must be dropped before `self`.
    unsafe fn view(&mut self) -> T {
        let n = self.buf.len();
        let p = self.buf.as_mut_ptr();
        T::wrap(self.dtype, p, n, &self.shape, Some(&self.strides), 0).expect("bc_tensor_wrap")
    }
}
