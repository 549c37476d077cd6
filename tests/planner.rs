//! The planner against the calls it plans: for every row of the conformance data, the
//! operands' geometry goes to `bc_plan_binary` (or `_inplace`, `_out`; with a number,
//! `bc_plan_binary_scalar`, `_rscalar`, `_scalar_inplace`; `bc_plan_where`, `_where_out`;
//! `bc_plan_reduce`, `bc_plan_sum_to_size`, `bc_plan_binary_sum_to`) and the tensors to the call
//! itself, through the C ABI, and the two must agree: the same status,
//! message and error data on failure; on success the result's type, shape and strides (a new
//! result's layout, or the written tensor's), the warnings given, and the bytes of element memory
//! allocated (the engine's own per-thread count, the one thing read from outside the C ABI).
//!
//! The differences allowed are the documented ones: a call may refuse what needs memory to see (a
//! written tensor that partly overlaps an input, or is read-only) where the planner, which knows
//! no addresses, plans it; and an integer division, remainder or fmod may find a zero divisor
//! where the plan says the call reads the divisor (`BC_PLAN_CHECKS_DIVISOR`).

use broadcast::engine::storage;
use broadcast::ffi::*;
use serde_json::Value;
use std::ptr;
use testkit::*;

/// A tensor's geometry as the planner takes it (the arrays live here).
struct Geo {
    dtype: i32,
    shape: Vec<i64>,
    strides: Vec<i64>,
}

impl Geo {
    fn of(t: &T) -> Geo {
        Geo {
            dtype: t.dtype(),
            shape: t.shape(),
            strides: t.strides(),
        }
    }

    fn raw(&self) -> bc_geometry {
        bc_geometry {
            dtype: self.dtype,
            ndim: self.shape.len(),
            shape: self.shape.as_ptr(),
            strides: self.strides.as_ptr(),
        }
    }
}

#[derive(Clone, Copy)]
enum Form<'a> {
    New,
    InPlace,
    Out(&'a T),
}

/// A failure as data: status, message and the error information record.
#[derive(Debug, PartialEq)]
struct Failure {
    status: i32,
    msg: String,
    info: [i64; 10],
}

fn failure(status: i32) -> Failure {
    let mut i = std::mem::MaybeUninit::<bc_error_info>::uninit();
    let s = unsafe { bc_last_error_info(i.as_mut_ptr()) };
    assert_eq!(s, BC_OK, "bc_last_error_info");
    let i = unsafe { i.assume_init() };
    Failure {
        status,
        msg: last_error(),
        info: [
            i.status as i64,
            i.kind as i64,
            i.dim,
            i.size_a,
            i.size_b,
            i.arg,
            i.dtype_a as i64,
            i.dtype_b as i64,
            i.ndim_a,
            i.ndim_b,
        ],
    }
}

/// Counts of what the rows exercised.
#[derive(Default, Debug)]
struct Tally {
    ok: usize,
    refused: usize,
    memory_only: usize,
    /// Refused for a zero divisor, which the plan said the call would look for.
    values_only: usize,
}

/// Plans and runs `op` on `a` and `b` in `form`; `Err` describes the first disagreement.
fn agree(op: i32, a: &T, b: &T, form: Form<'_>, tally: &mut Tally) -> Result<(), String> {
    let (ga, gb) = (Geo::of(a), Geo::of(b));
    let out_geo = match form {
        Form::Out(o) => Some(Geo::of(o)),
        _ => None,
    };
    let (ra, rb) = (ga.raw(), gb.raw());
    let plan = |p| unsafe {
        match (form, &out_geo) {
            (Form::New, _) => bc_plan_binary(op, &ra, &rb, p),
            (Form::InPlace, _) => bc_plan_binary_inplace(op, &ra, &rb, p),
            (Form::Out(_), Some(g)) => bc_plan_binary_out(op, &ra, &rb, &g.raw(), p),
            (Form::Out(_), None) => unreachable!(),
        }
    };
    let run = |result: &mut *mut bc_tensor| unsafe {
        match form {
            Form::New => bc_binary(op, a.ptr(), b.ptr(), result),
            Form::InPlace => bc_binary_inplace(op, a.mut_ptr(), b.ptr()),
            Form::Out(o) => bc_binary_out(op, a.ptr(), b.ptr(), o.mut_ptr()),
        }
    };
    let written = match form {
        Form::New => None,
        Form::InPlace => Some(a),
        Form::Out(o) => Some(o),
    };
    agree_with(plan, run, written, tally)
}

/// Runs a planner form (`plan` writes its plan through the pointer) and then the call it plans
/// (`run` gives its status, and sets its new result if it makes one), and compares them.
/// `written`: the tensor the call writes in place or into (`None`: a new result).
fn agree_with(
    plan: impl FnOnce(*mut bc_plan) -> i32,
    run: impl FnOnce(&mut *mut bc_tensor) -> i32,
    written: Option<&T>,
    tally: &mut Tally,
) -> Result<(), String> {
    agree_on(plan, run, written, tally).map(drop)
}

/// [`agree_with`], giving the plan when both succeeded (for further checks).
fn agree_on(
    plan: impl FnOnce(*mut bc_plan) -> i32,
    run: impl FnOnce(&mut *mut bc_tensor) -> i32,
    written: Option<&T>,
    tally: &mut Tally,
) -> Result<Option<bc_plan>, String> {
    let mut planned = std::mem::MaybeUninit::<bc_plan>::uninit();
    let planned = match plan(planned.as_mut_ptr()) {
        BC_OK => Ok(unsafe { planned.assume_init() }),
        s => Err(failure(s)),
    };

    take_warnings();
    let before = storage::stats();
    let mut result = ptr::null_mut();
    let status = run(&mut result);
    let allocated = storage::stats().since(before).bytes as usize;
    let warnings = take_warnings();
    let result = (!result.is_null()).then(|| T(result));
    let done = match status {
        BC_OK => Ok(()),
        s => Err(failure(s)),
    };

    match (planned, done) {
        (Err(p), Err(d)) if p == d => {
            tally.refused += 1;
            Ok(None)
        }
        (Ok(_), Err(d)) if memory_only(&d) => {
            tally.memory_only += 1;
            Ok(None)
        }
        (Ok(p), Err(d)) if d.status == BC_ERR_VALUE && p.flags & BC_PLAN_CHECKS_DIVISOR != 0 => {
            tally.values_only += 1;
            Ok(None)
        }
        (Err(p), Err(d)) => Err(format!("planner {p:?}\n      call    {d:?}")),
        (Ok(_), Err(d)) => Err(format!("planner succeeded, call {d:?}")),
        (Err(p), Ok(())) => Err(format!("planner {p:?}, call succeeded")),
        (Ok(plan), Ok(())) => {
            tally.ok += 1;
            let new = written.is_none();
            let written = written.unwrap_or_else(|| result.as_ref().expect("a new result"));
            let nd = plan.ndim;
            let got = (plan.shape[..nd].to_vec(), plan.strides[..nd].to_vec());
            let want = (written.shape(), written.strides());
            if got != want {
                return Err(format!("planned shape, strides {got:?}, call {want:?}"));
            }
            if new && plan.dtype != written.dtype() {
                return Err(format!(
                    "planned dtype {}, result {}",
                    plan.dtype,
                    written.dtype()
                ));
            }
            let bits = warnings.iter().fold(0, |bits, w| bits | warning_bit(w));
            let planned = plan.flags
                & (BC_PLAN_WARNING_BROADCAST
                    | BC_PLAN_WARNING_FALLBACK
                    | BC_PLAN_WARNING_WHERE_UINT8);
            if planned != bits {
                return Err(format!(
                    "planned warnings {planned}, call gave {warnings:?}"
                ));
            }
            if plan.alloc_bytes != allocated {
                return Err(format!(
                    "planned {} bytes of element memory, the call allocated {allocated}",
                    plan.alloc_bytes
                ));
            }
            // Nothing to run: no elements, or a new result that is a view (no memory).
            let elements = plan.shape[..nd].iter().product::<i64>();
            let view = new && plan.alloc_bytes == 0;
            if (plan.loop_kind == BC_LOOP_NONE) != (elements == 0 || view) {
                return Err(format!(
                    "loop kind {} for {elements} elements",
                    plan.loop_kind
                ));
            }
            Ok(Some(plan))
        }
    }
}

/// A refusal that needs the operands' memory: partial overlap with an input, or read-only.
fn memory_only(f: &Failure) -> bool {
    f.status == BC_ERR_READ_ONLY
        || (f.status == BC_ERR_OVERLAP && f.info[1] == BC_ERROR_KIND_PARTIAL_OVERLAP as i64)
}

fn warning_bit(message: &str) -> u32 {
    if message.starts_with("self and other do not have the same shape") {
        BC_PLAN_WARNING_BROADCAST
    } else if message.contains("Falling back to deprecated pointwise behavior") {
        BC_PLAN_WARNING_FALLBACK
    } else if message.starts_with("where received a uint8 condition") {
        BC_PLAN_WARNING_WHERE_UINT8
    } else {
        panic!("unknown warning {message:?}")
    }
}

/// Runs `check` on every row of `file` and fails with the disagreements.
fn each_row(file: &str, mut check: impl FnMut(&Value, &mut Tally) -> Result<(), String>) {
    let _g = settings_lock();
    install_warning_collector();
    let rows = read_jsonl(file);
    let mut f = Failures::new(file);
    let mut tally = Tally::default();
    for (i, row) in rows.iter().enumerate() {
        f.checked += 1;
        if let Err(e) = check(row, &mut tally) {
            f.add(i + 1, row, e);
        }
    }
    println!("{file}: {tally:?}");
    assert!(tally.ok > 0 && tally.refused > 0, "{file}: {tally:?}");
    f.finish();
}

fn shape(row: &Value, key: &str) -> Vec<i64> {
    json_shape(&row[key])
}

#[test]
fn binary_shapes() {
    each_row("binary_shapes.jsonl", |row, tally| {
        let (a, b) = (shape(row, "a"), shape(row, "b"));
        let ta = T::zeros(F32, &a).unwrap();
        let tb = T::ones(I32, &b).unwrap();
        agree(0, &ta, &tb, Form::New, tally)?;
        // Into an `out` of `a`'s shape: the right one or not.
        let out = T::zeros(F32, &a).unwrap();
        agree(2, &ta, &tb, Form::Out(&out), tally)
    });
}

#[test]
fn inplace_shapes() {
    each_row("inplace_shapes.jsonl", |row, tally| {
        let (s, o) = (shape(row, "self"), shape(row, "other"));
        let ts = T::zeros(F32, &s).unwrap();
        let to = T::ones(F64, &o).unwrap();
        agree(1, &ts, &to, Form::InPlace, tally)
    });
}

#[test]
fn promotion() {
    promotion_rows("promotion.jsonl");
}

#[test]
fn ops_promotion() {
    promotion_rows("ops_promotion.jsonl");
}

/// Operand `k` ("a" or "b") of a promotion row: ones of its type, 0-d or of shape (2,).
fn promotion_operand(row: &Value, k: &str) -> T {
    let dtype = dtype_code(row[k].as_str().unwrap());
    let shape: &[i64] = if row[format!("{k}_0d")].as_bool().unwrap() {
        &[]
    } else {
        &[2]
    };
    T::ones(dtype, shape).unwrap()
}

fn promotion_rows(file: &str) {
    each_row(file, |row, tally| {
        let op = op_code(row["op"].as_str().unwrap());
        let operand = |k: &str| promotion_operand(row, k);
        agree(op, &operand("a"), &operand("b"), Form::New, tally)?;
        agree(op, &operand("a"), &operand("b"), Form::InPlace, tally)
    });
}

#[test]
fn values() {
    value_rows("values.jsonl");
}

#[test]
fn ops_values() {
    value_rows("ops_values.jsonl");
}

fn value_rows(file: &str) {
    each_row(file, |row, tally| {
        let op = op_code(row["op"].as_str().unwrap());
        let mut a = Operand::from_json(&row["a"]);
        let mut b = Operand::from_json(&row["b"]);
        let (ta, tb) = unsafe { (a.view().unwrap(), b.view().unwrap()) };
        let form = match row["inplace"].as_bool().unwrap() {
            true => Form::InPlace,
            false => Form::New,
        };
        agree(op, &ta, &tb, form, tally)
    });
}

/// The two switches: warnings and the legacy fallback (whose copy of `b` counts as allocated).
#[test]
fn legacy() {
    each_row("legacy.jsonl", |row, tally| {
        let flag = |k: &str| row[k].as_bool().unwrap();
        set_switches(flag("fallback"), flag("warn"));
        let ta = T::arange_f32(&shape(row, "a"), 0.0);
        // Transposed when it can be, so that the fallback copies it.
        let tb = T::arange_f32(&shape(row, "b"), 100.0);
        let tb = match tb.ndim() {
            2 => transpose(&T::arange_f32(
                &shape(row, "b").into_iter().rev().collect::<Vec<_>>(),
                1.0,
            )),
            _ => tb,
        };
        let form = if flag("inplace") {
            Form::InPlace
        } else {
            Form::New
        };
        agree(0, &ta, &tb, form, tally)
    });
}

/// Writes that overlap: the planner sees a written view whose elements share memory, but not
/// one that partly overlaps an input (counted apart as refused on memory alone).
#[test]
fn overlap() {
    each_row("overlap.jsonl", |row, tally| {
        let len = row["base"].as_array().map_or(0, |b| b.len() as i64);
        let t = T::arange_f32(&[len], 0.0);
        let view = |k: &str| {
            let (off, len) = (
                row[k]["offset"].as_i64().unwrap(),
                row[k]["len"].as_i64().unwrap(),
            );
            t.as_strided(&[len], &[1], off).unwrap()
        };
        let one = T::ones(F32, &[]).unwrap();
        if row["case"] == "expanded_self" {
            let s = &row["self"];
            let base = T::arange_f32(&[s["base_len"].as_i64().unwrap()], 0.0);
            let this = base
                .as_strided(
                    &json_shape(&s["shape"]),
                    &json_shape(&s["strides"]),
                    s["offset"].as_i64().unwrap(),
                )
                .unwrap();
            agree(0, &this, &one, Form::InPlace, tally)
        } else {
            agree(0, &view("input"), &one, Form::Out(&view("out")), tally)
        }
    });
}

fn transpose(t: &T) -> T {
    let mut out = ptr::null_mut();
    check(unsafe { bc_tensor_transpose(t.ptr(), 0, 1, &mut out) }).unwrap();
    T(out)
}

/// Numbers as operands: every row of scalar.jsonl (both orders, in place), planned with
/// `bc_plan_binary_scalar`, `_rscalar` and `_scalar_inplace`.
#[test]
fn numbers() {
    each_row("scalar.jsonl", |row, tally| {
        let op = op_code(row["op"].as_str().unwrap());
        let s = scalar_of(&row["scalar"]);
        let mut t = Operand::from_json(&row["t"]);
        let t = unsafe { t.view() }.expect("bc_tensor_wrap");
        let g = Geo::of(&t);
        let rg = g.raw();
        let inplace = row["inplace"].as_bool().unwrap();
        let reversed = row["order"] == "scalar_tensor";
        match (inplace, reversed) {
            (true, _) => agree_with(
                |p| unsafe { bc_plan_binary_scalar_inplace(op, &rg, s, p) },
                |_| bc_binary_scalar_inplace(op, t.mut_ptr(), s),
                Some(&t),
                tally,
            ),
            (false, true) => agree_with(
                |p| unsafe { bc_plan_binary_rscalar(op, s, &rg, p) },
                |r| unsafe { bc_binary_rscalar(op, s, t.ptr(), r) },
                None,
                tally,
            ),
            (false, false) => agree_with(
                |p| unsafe { bc_plan_binary_scalar(op, &rg, s, p) },
                |r| unsafe { bc_binary_scalar(op, t.ptr(), s, r) },
                None,
                tally,
            ),
        }
    });
}

/// `where`: every row of where.jsonl planned with `bc_plan_where`, and into an `out` with
/// `bc_plan_where_out`: one of the row's result type and shape, and one of another type
/// (refused). The uint8 condition's warning, once per process, is planned as the call gives it:
/// no other test of this binary calls `where`.
#[test]
fn where_() {
    each_row("where.jsonl", |row, tally| {
        let mut ops = ["cond", "a", "b"].map(|k| Operand::from_json(&row[k]));
        let [c, a, b] = &mut ops;
        let [Ok(c), Ok(a), Ok(b)] = (unsafe { [c.view(), a.view(), b.view()] }) else {
            return Err("bc_tensor_wrap of an operand failed".into());
        };
        let geos = [&c, &a, &b].map(Geo::of);
        let [rc, ra, rb] = geos.each_ref().map(Geo::raw);
        agree_with(
            |p| unsafe { bc_plan_where(&rc, &ra, &rb, p) },
            |r| unsafe { bc_where(c.ptr(), a.ptr(), b.ptr(), r) },
            None,
            tally,
        )?;
        let Some(want) = row.get("result") else {
            return Ok(());
        };
        let dtype = dtype_code(want["dtype"].as_str().unwrap());
        let other = if dtype == F64 { F32 } else { F64 };
        for dtype in [dtype, other] {
            let out = T::zeros(dtype, &json_shape(&want["shape"])).unwrap();
            let go = Geo::of(&out);
            agree_with(
                |p| unsafe { bc_plan_where_out(&rc, &ra, &rb, &go.raw(), p) },
                |_| bc_where_out(c.ptr(), a.ptr(), b.ptr(), out.mut_ptr()),
                Some(&out),
                tally,
            )?;
        }
        Ok(())
    });
}

/// The type a reduction accumulates in, as the engine's documentation states it: float32 for
/// sums and means of the 16-bit floats and float32, int64 for sums and products of bools and
/// integers, else the input's type.
fn accumulator(op: i32, dtype: i32) -> i32 {
    match (op, dtype) {
        (BC_REDUCE_SUM | BC_REDUCE_MEAN | BC_REDUCE_PROD, d) if !is_float(d) => I64,
        (BC_REDUCE_SUM | BC_REDUCE_MEAN, F16 | BF16 | F32) => F32,
        (_, d) => d,
    }
}

/// A reduction's loop: its outputs, and the elements of `input` each reduces.
fn check_reduction_loop(plan: &bc_plan, input: i64) -> Result<(), String> {
    let outputs = plan.shape[..plan.ndim].iter().product::<i64>();
    let want = match outputs {
        0 => vec![],
        m => vec![m, input / m],
    };
    let got = &plan.loop_shape[..plan.loop_ndim];
    match got == want {
        true => Ok(()),
        false => Err(format!("loop shape {got:?}, expected {want:?}")),
    }
}

/// Every row of reductions.jsonl, planned with `bc_plan_reduce` (`dim` null as `(NULL, 0)`).
#[test]
fn reductions() {
    each_row("reductions.jsonl", |row, tally| {
        let op = reduce_code(row["op"].as_str().unwrap());
        let dims: Option<Vec<i64>> = (!row["dim"].is_null()).then(|| json_shape(&row["dim"]));
        let (dp, dn) = dims
            .as_ref()
            .map_or((ptr::null(), 0), |d| (d.as_ptr(), d.len()));
        let keepdim = row["keepdim"].as_bool().unwrap();
        let mut input = Operand::from_json(&row["input"]);
        let t = unsafe { input.view() }.expect("bc_tensor_wrap");
        let g = Geo::of(&t);
        let plan = agree_on(
            |p| unsafe { bc_plan_reduce(op, &g.raw(), dp, dn, keepdim, p) },
            |r| unsafe { bc_reduce(op, t.ptr(), dp, dn, keepdim, r) },
            None,
            tally,
        )?;
        let Some(plan) = plan else { return Ok(()) };
        if plan.compute_dtype != accumulator(op, t.dtype()) {
            return Err(format!("accumulates in {}", plan.compute_dtype));
        }
        check_reduction_loop(&plan, t.numel())
    });
}

/// Every row of sum_to_size.jsonl, planned with `bc_plan_sum_to_size`; and the row's input with
/// other operands through `bc_plan_binary_sum_to`: a 0-d number of its type (`* 1`, as
/// tests/reductions.rs), a float64 one (`+`, converting the input to the computation type), a
/// row of int32 along the last dimension (`floor_divide`, which reads its divisor; refused for
/// bools), and the input itself (`-`, refused for bools).
#[test]
fn sums_to_size() {
    each_row("sum_to_size.jsonl", |row, tally| {
        let size = json_shape(&row["size"]);
        let mut input = Operand::from_json(&row["input"]);
        let t = unsafe { input.view() }.expect("bc_tensor_wrap");
        let g = Geo::of(&t);
        let (sp, sn) = (size.as_ptr(), size.len());
        let plan = agree_on(
            |p| unsafe { bc_plan_sum_to_size(&g.raw(), sp, sn, p) },
            |r| unsafe { bc_tensor_sum_to_size(t.ptr(), sp, sn, r) },
            None,
            tally,
        )?;
        if let Some(plan) = plan.filter(|p| p.alloc_bytes > 0) {
            check_reduction_loop(&plan, t.numel())?;
            if plan.compute_dtype != accumulator(BC_REDUCE_SUM, t.dtype()) {
                return Err(format!("accumulates in {}", plan.compute_dtype));
            }
        }
        let last = t.shape().last().map_or(vec![], |&n| vec![n]);
        let others = [
            (BC_OP_MUL, T::ones(t.dtype(), &[]).unwrap()),
            (BC_OP_ADD, T::ones(F64, &[]).unwrap()),
            (BC_OP_FLOOR_DIVIDE, T::full(I32, &last, 2.0).unwrap()),
        ];
        for (op, b) in others
            .iter()
            .map(|(op, b)| (*op, b))
            .chain([(BC_OP_SUB, &t)])
        {
            let gb = Geo::of(b);
            agree_with(
                |p| unsafe { bc_plan_binary_sum_to(op, &g.raw(), &gb.raw(), sp, sn, p) },
                |r| unsafe { bc_binary_sum_to(op, t.ptr(), b.ptr(), sp, sn, r) },
                None,
                tally,
            )
            .map_err(|e| format!("op {op}: {e}"))?;
        }
        Ok(())
    });
}

// ---------------------------------------------------------------------------------------------
// Expressions: `bc_plan_expr` and `_out` against `bc_expr_eval` and `_out`.

fn step(kind: i32, arg: i32) -> bc_expr_step {
    bc_expr_step {
        kind,
        arg,
        int_value: 0,
        float_value: 0.0,
    }
}

fn input(i: i32) -> bc_expr_step {
    step(BC_EXPR_INPUT, i)
}

fn op(name: &str) -> bc_expr_step {
    step(BC_EXPR_OP, op_code(name))
}

/// A ternary step with an integer `value`.
fn ternary(code: i32, value: i64) -> bc_expr_step {
    bc_expr_step {
        int_value: value,
        ..step(BC_EXPR_TERNARY, code)
    }
}

fn constant(dtype: i32, int_value: i64, float_value: f64) -> bc_expr_step {
    bc_expr_step {
        int_value,
        float_value,
        ..step(BC_EXPR_CONST, dtype)
    }
}

/// Plans and evaluates `steps` over `inputs` (into `out` when given) and compares them.
fn agree_expr(
    steps: &[bc_expr_step],
    inputs: &[&T],
    out: Option<&T>,
    tally: &mut Tally,
) -> Result<(), String> {
    let geos: Vec<Geo> = inputs.iter().map(|t| Geo::of(t)).collect();
    let raw: Vec<bc_geometry> = geos.iter().map(Geo::raw).collect();
    let handles: Vec<*const bc_tensor> = inputs.iter().map(|t| t.ptr()).collect();
    let (s, n) = (steps.as_ptr(), steps.len());
    let (g, h, k) = (raw.as_ptr(), handles.as_ptr(), inputs.len());
    let r = match out {
        None => agree_with(
            |p| unsafe { bc_plan_expr(s, n, g, k, p) },
            |r| unsafe { bc_expr_eval(s, n, h, k, r) },
            None,
            tally,
        ),
        Some(o) => {
            let go = Geo::of(o);
            agree_with(
                |p| unsafe { bc_plan_expr_out(s, n, g, k, &go.raw(), p) },
                |_| unsafe { bc_expr_eval_out(s, n, h, k, o.mut_ptr()) },
                Some(o),
                tally,
            )
        }
    };
    r.map_err(|e| format!("program {steps:?}: {e}"))
}

/// Programs over two inputs `a` and `b`: fused or call by call, with constants, a comparison
/// feeding `where`, and an operation broadcast further (computed first).
fn programs() -> Vec<Vec<bc_expr_step>> {
    let (a, b) = (input(0), input(1));
    vec![
        vec![a, b, op("add")],
        vec![a, b, op("mul"), a, op("add")],
        vec![b, b, op("mul"), a, op("add")],
        vec![a, b, op("gt"), a, b, step(BC_EXPR_WHERE, 0)],
        vec![a, constant(F64, 0, 2.5), op("sub"), b, op("mul")],
        vec![b, constant(BOOL, 1, 0.0), op("sub")],
        vec![a, b, op("div"), constant(I64, 3, 0.0), op("floor_divide")],
        // Ternary steps: the calls' temporaries (converted tensors, 0-d numbers) and refusals.
        vec![a, b, a, ternary(BC_TERNARY_CLAMP, 0)],
        vec![a, a, b, ternary(BC_TERNARY_ADDCMUL, 2)],
        vec![
            a,
            constant(F64, 0, 0.5),
            op("mul"),
            a,
            b,
            ternary(BC_TERNARY_ADDCDIV, -1),
        ],
        vec![a, a, constant(F64, 0, 0.25), ternary(BC_TERNARY_LERP, 0)],
        vec![b, b, b, ternary(BC_TERNARY_ADDCDIV, 1)],
        vec![a, b, constant(F32, 0, 0.5), ternary(BC_TERNARY_LERP, 0)],
        vec![b, b, b, ternary(BC_TERNARY_ADDCMUL, 1 << 40)],
    ]
}

#[test]
fn expr_shapes() {
    each_row("binary_shapes.jsonl", |row, tally| {
        let (a, b) = (shape(row, "a"), shape(row, "b"));
        let ta = T::zeros(F32, &a).unwrap();
        let tb = T::ones(I32, &b).unwrap();
        for p in programs() {
            agree_expr(&p, &[&ta, &tb], None, tally)?;
        }
        // Into an `out` of `a`'s shape: the right one or not.
        let out = T::zeros(F64, &a).unwrap();
        for p in &programs()[..3] {
            agree_expr(p, &[&ta, &tb], Some(&out), tally)?;
        }
        // A ternary step last, into `out`s of the result's type and of another.
        for dtype in [F32, F64] {
            let out = T::zeros(dtype, &a).unwrap();
            for p in &programs()[7..11] {
                agree_expr(p, &[&ta, &tb], Some(&out), tally)?;
            }
        }
        Ok(())
    });
}

#[test]
fn expr_promotion() {
    each_row("ops_promotion.jsonl", |row, tally| {
        let code = op_code(row["op"].as_str().unwrap());
        let operand = |k: &str| promotion_operand(row, k);
        let (ta, tb) = (operand("a"), operand("b"));
        let (a, b, o) = (input(0), input(1), step(BC_EXPR_OP, code));
        for p in [
            vec![a, b, o],
            vec![a, b, o, a, o],
            vec![a, b, o, constant(F32, 0, 0.5), op("mul")],
            vec![a, b, op("eq"), a, b, step(BC_EXPR_WHERE, 0), b, o],
        ] {
            agree_expr(&p, &[&ta, &tb], None, tally)?;
        }
        Ok(())
    });
}

/// The switches: warnings of every step, the legacy fallback, call by call.
#[test]
fn expr_legacy() {
    each_row("legacy.jsonl", |row, tally| {
        let flag = |k: &str| row[k].as_bool().unwrap();
        set_switches(flag("fallback"), flag("warn"));
        let ta = T::arange_f32(&shape(row, "a"), 0.0);
        let tb = T::arange_f32(&shape(row, "b"), 100.0);
        for p in &programs()[..3] {
            agree_expr(p, &[&ta, &tb], None, tally)?;
        }
        Ok(())
    });
}

/// Malformed programs: the planner refuses them with the call's status and message.
#[test]
fn expr_malformed() {
    let _g = settings_lock();
    let (a, b) = (input(0), input(1));
    let ta = T::ones(F32, &[2]).unwrap();
    let cases: Vec<Vec<bc_expr_step>> = vec![
        vec![a, b, step(7, 0)],
        vec![a, input(2), op("add")],
        vec![a, input(-1), op("add")],
        vec![a, op("add")],
        vec![a, a, step(BC_EXPR_WHERE, 0)],
        vec![a],
        vec![a, a, a, op("add")],
        vec![a, constant(99, 0, 0.0), op("add")],
        vec![a, a, step(BC_EXPR_OP, 999)],
        vec![a; 65],
        vec![],
    ];
    let geo = Geo::of(&ta);
    let g = geo.raw();
    let mut tally = Tally::default();
    for p in &cases {
        agree_expr(p, &[&ta, &ta], None, &mut tally).unwrap();
        agree_expr(p, &[&ta, &ta], Some(&ta), &mut tally).unwrap();
        let s = unsafe { bc_plan_expr(p.as_ptr(), p.len(), &g, 1, &mut bc_plan_zeroed()) };
        assert_eq!(s, BC_ERR_INVALID_ARG, "{p:?}");
    }
    assert_eq!(tally.refused, 22, "{tally:?}");
    // NULL arrays: checked as the call checks them.
    let p = [a, a, op("add")];
    let mut plan = bc_plan_zeroed();
    let s = unsafe { bc_plan_expr(ptr::null(), 3, ptr::null(), 0, &mut plan) };
    assert_eq!((s, last_error()), (BC_ERR_NULL_ARG, null_message("steps")));
    let s = unsafe { bc_plan_expr(p.as_ptr(), 3, ptr::null(), 1, &mut plan) };
    assert_eq!((s, last_error()), (BC_ERR_NULL_ARG, null_message("inputs")));
    let s = unsafe { bc_plan_expr(p.as_ptr(), 3, &g, 1, ptr::null_mut()) };
    assert_eq!(s, BC_ERR_NULL_ARG);
    let s = unsafe { bc_plan_expr_out(p.as_ptr(), 3, &g, 1, ptr::null(), &mut plan) };
    assert_eq!((s, last_error()), (BC_ERR_NULL_ARG, null_message("out")));
}

fn bc_plan_zeroed() -> bc_plan {
    // SAFETY: a plan is integers and arrays of integers.
    unsafe { std::mem::zeroed() }
}

/// The message of a NULL argument, as the call gives it.
fn null_message(name: &str) -> String {
    let ta = T::ones(F32, &[2]).unwrap();
    let p = [input(0), input(0), op("add")];
    let h = [ta.ptr()];
    let mut r = ptr::null_mut();
    let s = match name {
        "steps" => unsafe { bc_expr_eval(ptr::null(), 3, h.as_ptr(), 1, &mut r) },
        "inputs" => unsafe { bc_expr_eval(p.as_ptr(), 3, ptr::null(), 1, &mut r) },
        _ => unsafe { bc_expr_eval_out(p.as_ptr(), 3, h.as_ptr(), 1, ptr::null_mut()) },
    };
    assert_eq!(s, BC_ERR_NULL_ARG);
    last_error()
}

/// A broadcast result whose element count does not fit (a `[1, 2, 6, 1]` bfloat16 with an
/// int64 expanded to `i64::MAX` elements): the planner refuses it as the call does, for every
/// operation, instead of overflowing its own count of the result's elements.
#[test]
fn result_too_large_to_count() {
    let a = T::zeros(BC_DTYPE_BFLOAT16, &[1, 2, 6, 1]).unwrap();
    let b = T::zeros(BC_DTYPE_INT64, &[1])
        .unwrap()
        .expand(&[i64::MAX])
        .unwrap();
    let mut tally = Tally::default();
    for op in 0..BC_OP_COUNT {
        agree(op, &a, &b, Form::New, &mut tally).unwrap_or_else(|e| panic!("op {op}: {e}"));
    }
    assert_eq!(tally.ok, 0, "{tally:?}");
}

/// A converted copy too large to exist is refused before anything is allocated, by the call as
/// by its plan: uint8 broadcast to 2^61 elements against a float32 0-d computes in float32, so
/// the converted copy would need 2^63 bytes. The result (2^61 bytes) used to be allocated first
/// and fail for want of memory, where the plan, counting every allocation first, said overflow.
#[test]
fn a_converted_copy_too_large_is_refused_before_any_allocation() {
    let huge = T::zeros(U8, &[]).unwrap().broadcast_to(&[1 << 61]).unwrap();
    let one = T::zeros(F32, &[]).unwrap();
    let mut tally = Tally::default();
    for (a, b) in [(&huge, &one), (&one, &huge)] {
        for op in [BC_OP_LOGICAL_XOR, BC_OP_ADD] {
            agree(op, a, b, Form::New, &mut tally).unwrap();
        }
    }
    assert_eq!(tally.refused, 4, "{tally:?}");
    let mut out = ptr::null_mut();
    let st = unsafe { bc_binary(BC_OP_LOGICAL_XOR, huge.ptr(), one.ptr(), &mut out) };
    assert_eq!(st, BC_ERR_OVERFLOW, "{}", last_error());
    assert!(out.is_null());
}

/// A `sum_to_size` target whose elements cannot be counted is refused by the plan as by the call,
/// with the same message: the call makes its result first, so its element count is checked
/// before anything else (the plan used to multiply the count by the item size first and name
/// `nbytes`, where the call names `numel`).
#[test]
fn a_sum_to_size_target_too_large_to_count_is_refused_alike() {
    let t = T::zeros(BF16, &[0, 1 << 61, 7]).unwrap();
    let g = Geo::of(&t);
    let size = [1i64 << 61, 7];
    let (sp, sn) = (size.as_ptr(), size.len());
    let mut tally = Tally::default();
    agree_with(
        |p| unsafe { bc_plan_sum_to_size(&g.raw(), sp, sn, p) },
        |r| unsafe { bc_tensor_sum_to_size(t.ptr(), sp, sn, r) },
        None,
        &mut tally,
    )
    .unwrap();
    assert_eq!(tally.refused, 1, "{tally:?}");
}

/// A view of an empty tensor can hold a negative stride, where it addresses nothing: PyTorch's
/// `unsqueeze` stride for a new dimension before one of 2^61 elements of stride 5 wraps past
/// `i64::MAX`. The planner takes the geometry of every tensor the library makes, and agrees with
/// the call (it refused that stride as it refuses one that addresses elements).
#[test]
fn a_negative_stride_that_addresses_nothing_is_planned() {
    let t = T::zeros(I8, &[0, 1 << 61, 2, 3]).unwrap();
    let t = t.as_strided(&[0, 1 << 61, 2, 3], &[3, 5, 2, 2], 0).unwrap();
    let mut u = ptr::null_mut();
    check(unsafe { bc_tensor_unsqueeze(t.ptr(), 1, &mut u) }).unwrap();
    let u = T(u);
    assert!(u.strides()[1] < 0, "{:?}", u.strides());
    let one = T::zeros(F32, &[]).unwrap();
    let mut tally = Tally::default();
    for (a, b) in [(&u, &one), (&one, &u), (&u, &u)] {
        for op in [BC_OP_ADD, BC_OP_LT] {
            agree(op, a, b, Form::New, &mut tally).unwrap();
        }
    }
    assert_eq!(tally.ok, 6, "{tally:?}");
    // Where the stride addresses elements, it is still refused.
    let mut g = Geo::of(&T::zeros(F32, &[2, 3]).unwrap());
    g.strides[0] = -3;
    let g1 = Geo::of(&one);
    let mut plan = bc_plan_zeroed();
    let st = unsafe { bc_plan_binary(BC_OP_ADD, &g.raw(), &g1.raw(), &mut plan) };
    assert_eq!(st, BC_ERR_INVALID_ARG, "{}", last_error());
}
