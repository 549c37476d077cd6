//! The layout of new results against PyTorch: every row of
//! `tests/data/pytorch/layout.jsonl` gives the strides PyTorch 2.15 gave the result of an
//! out-of-place row of `values.jsonl` or `ops_values.jsonl`. The operands are built from that row
//! (its types matter: a converted input takes part with its copy's layout), the operation runs
//! through the C ABI, and the result's shape and its strides on dimensions of size above 1 (the
//! only ones that address memory) must be PyTorch's. `layout_extra.jsonl` adds layouts those
//! files meet rarely (up to seven dimensions, odd strides on size-1 dimensions, channels-last,
//! converted operands, a tensor with a number), where the strides of every dimension must be
//! PyTorch's.

use broadcast::ffi::*;
use serde_json::Value;
use testkit::*;

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
        Zeros::of(dtype, &json_shape(&v["shape"]), &json_shape(&v["strides"]))
    }

    fn of(dtype: i32, shape: &[i64], strides: &[i64]) -> Zeros {
        let (shape, strides) = (shape.to_vec(), strides.to_vec());
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

// =============================================================================================
// Empty results, and the reference for the result's layout: the test kit's one model
// (`testkit::model::result_layout`, shared with the fuzzer), written from PyTorch's source rather
// than from the engine: `.to(dtype)` (`_to_copy`: a tensor with c10's non-overlapping-and-dense
// flag keeps its strides, any other gets `infer_dense_strides`), c10's contiguity flags (a tensor
// with no elements is contiguous, so it has the flag too), and TensorIterator's fast set-up,
// `compute_strides`, `reorder_dimensions` and output allocation. It is first checked against
// every row of `layout_extra.jsonl` and `where_layout.jsonl`.
// =============================================================================================

/// An input as the iterator sees it: `converted` when its type is not the computation type.
struct RefInput {
    shape: Vec<i64>,
    strides: Vec<i64>,
    converted: bool,
}

impl RefInput {
    fn new(shape: &[i64], strides: &[i64], converted: bool) -> RefInput {
        RefInput {
            shape: shape.to_vec(),
            strides: strides.to_vec(),
            converted,
        }
    }
}

/// The strides PyTorch gives a new result of `shape` computed from `inputs` (in operand order):
/// the model's rule.
fn ref_result_strides(shape: &[i64], inputs: &[RefInput]) -> Vec<i64> {
    let sizes = |s: &[i64]| s.iter().map(|&n| n as usize).collect::<Vec<_>>();
    let inputs: Vec<_> = inputs
        .iter()
        .map(|i| (sizes(&i.shape), i.strides.clone(), i.converted))
        .collect();
    result_layout(&sizes(shape), &inputs)
}

/// The computation type of `op` on operands of types `a` and `b` (0-d when `a0`/`b0`).
fn ref_compute(op: i32, a: i32, a0: bool, b: i32, b0: bool) -> i32 {
    compute_type(op, result_type(a, a0, b, b0))
}

/// The type a number of `kind` stands for in promotion (it counts as a 0-d operand).
fn number_dtype(kind: i32) -> i32 {
    match kind {
        BC_SCALAR_BOOL => BOOL,
        BC_SCALAR_INT => I64,
        _ => F32,
    }
}

fn json_i64s(v: &Value) -> Vec<i64> {
    json_shape(v)
}

#[test]
fn the_reference_layout_rule_gives_every_row_of_pytorchs_data() {
    let mut checked = 0;
    for row in read_jsonl("layout_extra.jsonl") {
        let op = op_code(row["op"].as_str().unwrap());
        let side = |v: &Value| {
            let dtype = dtype_code(v["dtype"].as_str().unwrap());
            (dtype, json_i64s(&v["shape"]), json_i64s(&v["strides"]))
        };
        let (da, sa, ta) = side(&row["a"]);
        let inputs = match row.get("b") {
            Some(b) => {
                let (db, sb, tb) = side(b);
                let c = ref_compute(op, da, sa.is_empty(), db, sb.is_empty());
                vec![
                    RefInput::new(&sa, &ta, da != c),
                    RefInput::new(&sb, &tb, db != c),
                ]
            }
            None => {
                let n = number_dtype(scalar_of(&row["scalar"]).kind);
                let c = ref_compute(op, da, sa.is_empty(), n, true);
                let (t, s) = (
                    RefInput::new(&sa, &ta, da != c),
                    RefInput::new(&[], &[], false),
                );
                match row["order"] == "scalar_tensor" {
                    true => vec![s, t],
                    false => vec![t, s],
                }
            }
        };
        let want = json_i64s(&row["strides"]);
        assert_eq!(
            ref_result_strides(&json_i64s(&row["shape"]), &inputs),
            want,
            "{row}"
        );
        checked += 1;
    }
    for row in read_jsonl("where_layout.jsonl") {
        let dtype = dtype_code(row["dtype"].as_str().unwrap());
        let inputs: Vec<RefInput> = [("cond", BOOL), ("a", dtype), ("b", dtype)]
            .iter()
            .map(|(name, to)| {
                let v = &row[*name];
                let own = dtype_code(v["dtype"].as_str().unwrap());
                RefInput::new(
                    &json_i64s(&v["shape"]),
                    &json_i64s(&v["strides"]),
                    own != *to,
                )
            })
            .collect();
        let want = json_i64s(&row["strides"]);
        assert_eq!(
            ref_result_strides(&json_i64s(&row["shape"]), &inputs),
            want,
            "{row}"
        );
        checked += 1;
    }
    assert_eq!(checked, 2100 + 1350);
}

/// The cases as PyTorch reports them: `torch.add(torch.empty_strided((2, 0, 1), (0, 0, 0),
/// dtype=torch.int16), torch.ones(1, dtype=torch.int64)).stride()` is `(1, 1, 1)`, as without
/// the cast; int32 `(2, 0, 0)` strides `(6, 1, 3)` plus int64 `(1,)` is `(0, 1, 0)`; int32
/// `(2, 0, 1)` strides `(0, 0, 0)` plus 2.5 is `(1, 1, 1)`. The converted copy of an empty
/// tensor keeps its strides, whatever they are.
#[test]
fn an_empty_converted_input_keeps_its_strides() {
    let _g = settings_lock();
    let one = |dtype| Zeros::of(dtype, &[1], &[1]);
    let cases = [
        (I16, [2, 0, 1], [0, 0, 0], [1, 1, 1]),
        (I64, [2, 0, 1], [0, 0, 0], [1, 1, 1]),
        (I32, [2, 0, 0], [6, 1, 3], [0, 1, 0]),
    ];
    for (dtype, shape, strides, want) in cases {
        let (mut a, mut b) = (Zeros::of(dtype, &shape, &strides), one(I64));
        let (ta, tb) = unsafe { (a.view(), b.view()) };
        let out = binary(op_code("add"), &ta, &tb).expect("add");
        assert_eq!(
            out.strides(),
            want,
            "{} {shape:?} {strides:?}",
            dtype_str(dtype)
        );
    }
    let mut a = Zeros::of(I32, &[2, 0, 1], &[0, 0, 0]);
    let ta = unsafe { a.view() };
    let mut out = std::ptr::null_mut();
    let s = bc_scalar_float(2.5);
    check(unsafe { bc_binary_scalar(op_code("add"), ta.ptr(), s, &mut out) }).expect("add 2.5");
    let out = T(out);
    assert_eq!((out.dtype(), out.strides()), (F32, vec![1, 1, 1]));
}

/// A shape and its strides.
type Geometry = (Vec<i64>, Vec<i64>);

/// Empty geometries (some with strides no non-empty tensor could have) and, for each, operands
/// that broadcast with it: a 0-d one, a (1,), its shape with 1 for 0 (row-major and
/// column-major-like), its shape row-major, and its shape with its strides reversed.
fn empty_cases() -> Vec<(Vec<i64>, Vec<i64>, Vec<Geometry>)> {
    let empties: [(&[i64], &[i64]); 10] = [
        (&[2, 0, 1], &[0, 0, 0]),
        (&[2, 0, 0], &[6, 1, 3]),
        (&[0], &[1]),
        (&[0], &[5]),
        (&[3, 0], &[1, 3]),
        (&[3, 0], &[0, 1]),
        (&[0, 3, 2], &[1, 1, 3]),
        (&[2, 3, 0, 4], &[1, 2, 6, 24]),
        (&[1, 0, 2], &[7, 7, 0]),
        (&[4, 0, 3, 2], &[0, 6, 2, 1]),
    ];
    let row_major = |shape: &[i64]| {
        let mut out = vec![0; shape.len()];
        let mut z = 1;
        for d in (0..shape.len()).rev() {
            out[d] = z;
            z *= shape[d].max(1);
        }
        out
    };
    empties
        .iter()
        .map(|&(shape, strides)| {
            let ones: Vec<i64> = shape.iter().map(|&n| n.max(1)).collect();
            let mut stepped = row_major(&ones);
            stepped.reverse();
            let stepped: Vec<i64> = stepped.iter().map(|s| 2 * s + 1).collect();
            let reversed: Vec<i64> = strides.iter().rev().copied().collect();
            let partners = vec![
                (vec![], vec![]),
                (vec![1], vec![1]),
                (ones.clone(), row_major(&ones)),
                (ones.clone(), stepped),
                (shape.to_vec(), row_major(shape)),
                (shape.to_vec(), reversed),
            ];
            (shape.to_vec(), strides.to_vec(), partners)
        })
        .collect()
}

/// Every operation family (elementwise binary, binary with a number, `where`) over every pair of
/// types, with an empty result: the result's strides are the reference rule's.
#[test]
fn empty_results_have_pytorchs_strides_for_every_family_and_type_pair() {
    let _g = settings_lock();
    let dtypes: Vec<i32> = DTYPES.iter().map(|(_, c)| *c).collect();
    let cases = empty_cases();
    let mut failures = Vec::new();
    let mut checked = 0;
    let mut expect = |what: String, got: Result<T, Err>, dtype: i32, want: Vec<i64>| {
        checked += 1;
        match got {
            Ok(out) if (out.dtype(), out.strides()) == (dtype, want.clone()) => {}
            Ok(out) => failures.push(format!(
                "{what}: got {} {:?}, expected {} {want:?}",
                dtype_str(out.dtype()),
                out.strides(),
                dtype_str(dtype)
            )),
            Err(e) => failures.push(format!("{what}: {e}")),
        }
    };
    for (shape, strides, partners) in &cases {
        for (pshape, pstrides) in partners {
            let geo = [(shape, strides), (pshape, pstrides)];
            for op in ["add", "div", "eq"].map(op_code) {
                for &d0 in &dtypes {
                    for &d1 in &dtypes {
                        for (x, y) in [(0, 1), (1, 0)] {
                            let (dx, dy) = ([d0, d1][x], [d0, d1][y]);
                            let ((sx, tx), (sy, ty)) = (geo[x], geo[y]);
                            let c = ref_compute(op, dx, sx.is_empty(), dy, sy.is_empty());
                            let want = ref_result_strides(
                                shape,
                                &[
                                    RefInput::new(sx, tx, dx != c),
                                    RefInput::new(sy, ty, dy != c),
                                ],
                            );
                            let dtype = if op == op_code("eq") { BOOL } else { c };
                            let (mut a, mut b) = (Zeros::of(dx, sx, tx), Zeros::of(dy, sy, ty));
                            let (ta, tb) = unsafe { (a.view(), b.view()) };
                            let what = format!(
                                "{}({} {sx:?} {tx:?}, {} {sy:?} {ty:?})",
                                op_name(op),
                                dtype_str(dx),
                                dtype_str(dy)
                            );
                            expect(what, binary(op, &ta, &tb), dtype, want);
                        }
                    }
                }
            }
        }
        let numbers = [bc_scalar_bool(true), bc_scalar_int(2), bc_scalar_float(2.5)];
        for op in ["add", "mul", "div"].map(op_code) {
            for &d in &dtypes {
                for s in numbers {
                    let c = ref_compute(op, d, false, number_dtype(s.kind), true);
                    // The number takes part as a 0-d operand (it only ever ties).
                    let (t, n) = (
                        RefInput::new(shape, strides, d != c),
                        RefInput::new(&[], &[], false),
                    );
                    let want = ref_result_strides(shape, &[t, n]);
                    let mut a = Zeros::of(d, shape, strides);
                    let ta = unsafe { a.view() };
                    for rev in [false, true] {
                        let mut out = std::ptr::null_mut();
                        let status = unsafe {
                            match rev {
                                false => bc_binary_scalar(op, ta.ptr(), s, &mut out),
                                true => bc_binary_rscalar(op, s, ta.ptr(), &mut out),
                            }
                        };
                        let what = format!(
                            "{}({} {shape:?} {strides:?}, number kind {}, reversed {rev})",
                            op_name(op),
                            dtype_str(d),
                            s.kind
                        );
                        expect(what, check(status).map(|()| T(out)), c, want.clone());
                    }
                }
            }
        }
        for (pshape, pstrides) in partners {
            for cond in [BOOL, U8] {
                for &da in &dtypes {
                    for &db in &dtypes {
                        // The empty operand as cond, a or b in turn; the others the partner.
                        for empty_at in 0..3 {
                            let geo: [(&Vec<i64>, &Vec<i64>); 3] =
                                std::array::from_fn(|k| match k == empty_at {
                                    true => (shape, strides),
                                    false => (pshape, pstrides),
                                });
                            let types = [cond, da, db];
                            let (sa, sb) = (geo[1].0, geo[2].0);
                            let dtype = result_type(da, sa.is_empty(), db, sb.is_empty());
                            let to = [BOOL, dtype, dtype];
                            let inputs: Vec<RefInput> = (0..3)
                                .map(|k| RefInput::new(geo[k].0, geo[k].1, types[k] != to[k]))
                                .collect();
                            let want = ref_result_strides(shape, &inputs);
                            let mut z: [Zeros; 3] =
                                std::array::from_fn(|k| Zeros::of(types[k], geo[k].0, geo[k].1));
                            let [tc, ta, tb] = z.each_mut().map(|z| unsafe { z.view() });
                            let what = format!(
                                "where({} {:?} {:?}, {} {:?} {:?}, {} {:?} {:?})",
                                dtype_str(cond),
                                geo[0].0,
                                geo[0].1,
                                dtype_str(da),
                                geo[1].0,
                                geo[1].1,
                                dtype_str(db),
                                geo[2].0,
                                geo[2].1
                            );
                            expect(what, where_new(&tc, &ta, &tb), dtype, want);
                        }
                    }
                }
            }
        }
    }
    println!("empty results: checked {checked} calls");
    assert!(checked >= 70_000, "only {checked} calls checked");
    assert!(
        failures.is_empty(),
        "{} of {checked} failed, the first:\n{}",
        failures.len(),
        failures[..failures.len().min(12)].join("\n")
    );
}
