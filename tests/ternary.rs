//! `lerp`, `addcmul`, `addcdiv` and `clamp` against PyTorch 2.15
//! (`tests/data/pytorch/ternary_values.jsonl`), through the C ABI: three-way broadcasting and
//! promotion, result type, shape and exact values, the written storage after an in-place call or
//! a call into `out`, inputs left untouched, and PyTorch's error texts.

use broadcast::ffi::*;
use serde_json::Value;
use std::ptr;
use testkit::*;

/// An operand of a row: a tensor (a view of its own storage), a number, or absent.
enum Arg {
    Tensor(Operand),
    Number(bc_scalar),
    None,
}

fn arg(v: &Value) -> Arg {
    if v.is_null() {
        Arg::None
    } else if v.get("type").is_some() {
        Arg::Number(scalar_of(v))
    } else {
        Arg::Tensor(Operand::from_json(v))
    }
}

/// The row's call; `None` for the handles of absent bounds.
fn call(
    row: &Value,
    x: &T,
    b: Option<&T>,
    c: Option<&T>,
    bn: Option<bc_scalar>,
    cn: Option<bc_scalar>,
    out: Option<&T>,
) -> Result<Option<T>, Err> {
    let op = row["op"].as_str().unwrap();
    let variant = row["variant"].as_str().unwrap();
    let h = |t: Option<&T>| t.map_or(ptr::null(), T::ptr);
    let (xp, xm) = (x.ptr(), x.mut_ptr());
    let (bp, cp) = (h(b), h(c));
    let value = row.get("value").map(scalar_of).unwrap_or(bc_scalar_int(1));
    let mut made: *mut bc_tensor = ptr::null_mut();
    let om = out.map_or(ptr::null_mut(), T::mut_ptr);
    let bound = |s: &Option<bc_scalar>| s.as_ref().map_or(ptr::null(), |s| s as *const bc_scalar);
    // SAFETY: valid handles, pointers and lengths.
    let status = unsafe {
        match (op, variant) {
            ("lerp", v) if cn.is_some() => {
                let w = cn.unwrap();
                match v {
                    "function" => bc_lerp_scalar(xp, bp, w, &mut made),
                    "inplace" => bc_lerp_scalar_inplace(xm, bp, w),
                    _ => bc_lerp_scalar_out(xp, bp, w, om),
                }
            }
            ("lerp", "function") => bc_lerp(xp, bp, cp, &mut made),
            ("lerp", "inplace") => bc_lerp_inplace(xm, bp, cp),
            ("lerp", _) => bc_lerp_out(xp, bp, cp, om),
            ("addcmul", "function") => bc_addcmul(xp, bp, cp, value, &mut made),
            ("addcmul", "inplace") => bc_addcmul_inplace(xm, bp, cp, value),
            ("addcmul", _) => bc_addcmul_out(xp, bp, cp, value, om),
            ("addcdiv", "function") => bc_addcdiv(xp, bp, cp, value, &mut made),
            ("addcdiv", "inplace") => bc_addcdiv_inplace(xm, bp, cp, value),
            ("addcdiv", _) => bc_addcdiv_out(xp, bp, cp, value, om),
            ("clamp", v) if bn.is_some() || cn.is_some() || (b.is_none() && c.is_none()) => {
                let (lo, hi) = (bound(&bn), bound(&cn));
                match v {
                    "function" => bc_clamp_scalar(xp, lo, hi, &mut made),
                    "inplace" => bc_clamp_scalar_inplace(xm, lo, hi),
                    _ => bc_clamp_scalar_out(xp, lo, hi, om),
                }
            }
            ("clamp", "function") => bc_clamp(xp, bp, cp, &mut made),
            ("clamp", "inplace") => bc_clamp_inplace(xm, bp, cp),
            ("clamp", _) => bc_clamp_out(xp, bp, cp, om),
            (op, v) => panic!("unknown call {op} {v}"),
        }
    };
    match status {
        BC_OK => Ok((!made.is_null()).then(|| T(made))),
        status => {
            assert!(made.is_null(), "a failed call set *out");
            Err(Err {
                status,
                msg: last_error(),
            })
        }
    }
}

#[test]
fn ternary_values() {
    let rows = read_jsonl("ternary_values.jsonl");
    let mut f = Failures::new("ternary_values.jsonl");
    for (i, row) in rows.iter().enumerate() {
        let line = i + 1;
        f.checked += 1;
        let op = row["op"].as_str().unwrap();
        let variant = row["variant"].as_str().unwrap();
        let (bk, ck) = match op {
            "lerp" => ("end", "weight"),
            "clamp" => ("min", "max"),
            _ => ("tensor1", "tensor2"),
        };
        let mut x = Operand::from_json(&row["input"]);
        let mut b = arg(&row[bk]);
        let mut c = arg(&row[ck]);
        let mut out = row.get("out").map(Operand::from_json);
        let before: Vec<Vec<u8>> = [Some(&x), tensor(&b), tensor(&c), out.as_ref()]
            .into_iter()
            .map(|o| o.map_or(Vec::new(), |o| o.buf.clone()))
            .collect();
        let problem = {
            // SAFETY: the views are dropped at the end of this block, before the buffers.
            let tx = unsafe { x.view() }.expect("wrap input");
            let tb = view(&mut b);
            let tc = view(&mut c);
            let tout = out.as_mut().map(|o| unsafe { o.view() }.expect("wrap out"));
            let got = call(
                row,
                &tx,
                tb.as_ref(),
                tc.as_ref(),
                number(&b),
                number(&c),
                tout.as_ref(),
            );
            let written = match variant {
                "inplace" => Some(&tx),
                "out" => tout.as_ref(),
                _ => None,
            };
            match (row.get("error"), got) {
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
                    |d, g, w| compare_values(d, g, w, 0),
                ),
            }
        };
        if let Some(p) = problem {
            f.add(line, row, format!("{op} ({variant}): {p}"));
        }
        let ok = row.get("error").is_none();
        let after = &row["result"]["storage_after"];
        let operands = [Some(&x), tensor(&b), tensor(&c), out.as_ref()];
        for (k, o) in operands.into_iter().enumerate() {
            let Some(o) = o else { continue };
            let written = ok && ((k == 0 && variant == "inplace") || (k == 3 && variant == "out"));
            let p = match written {
                true => compare_values(o.dtype, &o.storage(), &json_values(o.dtype, after), 0),
                false => (o.buf != before[k]).then(|| "modified".to_string()),
            };
            if let Some(p) = p {
                f.add(
                    line,
                    row,
                    format!("operand {k}'s storage after the call: {p}"),
                );
            }
        }
    }
    f.finish();
}

fn tensor(a: &Arg) -> Option<&Operand> {
    match a {
        Arg::Tensor(o) => Some(o),
        _ => None,
    }
}

fn view(a: &mut Arg) -> Option<T> {
    match a {
        // SAFETY: the view is dropped before the operand (the test's block).
        Arg::Tensor(o) => Some(unsafe { o.view() }.expect("wrap operand")),
        _ => None,
    }
}

fn number(a: &Arg) -> Option<bc_scalar> {
    match a {
        Arg::Number(s) => Some(*s),
        _ => None,
    }
}
