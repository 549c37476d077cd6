//! The performance suite's cases are written once, in the test kit (`testkit/src/cases.rs`), for
//! the criterion benches and bench-compare; bench-compare's peers in other languages need them too
//! and carry copies: the NumPy/PyTorch peer (`tools/bench-compare/src/peer_py.py`, its `CASES`
//! table) and the hand-written C limit (`tools/bench-compare/src/limit.c`, one kernel per case).
//! This test holds the copies to the table: every case of the kit is in the Python table with the
//! same element type, shapes, operation and kind, and the Python table has no other case; the C
//! limit's table of binary cases has a row for every case, and no other.
use regex::Regex;
use testkit::cases::{Kind, CASES};
use testkit::{op_name, repo_root, BF16, F16, F32, F64, I32};

fn read(path: &str) -> String {
    std::fs::read_to_string(repo_root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// NumPy's type code as the peer writes it.
fn numpy_type(dtype: i32) -> &'static str {
    match dtype {
        F32 => "f4",
        F64 => "f8",
        I32 => "i4",
        F16 => "f2",
        BF16 => "bf16",
        _ => panic!("a case of type {dtype} the peer has no name for"),
    }
}

/// A shape as Python writes it: `(N, N)`, `(N,)`, `()`, `(32, 64, 56, 56)`.
fn python_shape(shape: &[i64]) -> String {
    let dims: Vec<String> = shape
        .iter()
        .map(|&d| if d == 4096 { "N".into() } else { d.to_string() })
        .collect();
    match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    }
}

#[test]
fn the_peers_cases_are_the_kits() {
    let py = read("tools/bench-compare/src/peer_py.py");
    // NumPy's names of the operations the peer spells otherwise than the library.
    let start = py.find("TORCH_NAMES = {").expect("TORCH_NAMES");
    let table = &py[start..start + py[start..].find('}').unwrap()];
    let torch_names: Vec<(String, String)> = Regex::new(r#""(\w+)": "(\w+)""#)
        .unwrap()
        .captures_iter(table)
        .map(|c| (c[1].to_string(), c[2].to_string()))
        .collect();
    let library_name = |numpy: &str| {
        let torch = torch_names
            .iter()
            .find(|(n, _)| n == numpy)
            .map_or(numpy, |(_, t)| t.as_str());
        torch.to_string()
    };
    let mut python = std::collections::BTreeMap::new();
    let row =
        Regex::new(r#"^\s*"([\w.]+)": \("(\w+)", (\([^)]*\)), (\([^)]*\)), "(\w+)", "(\w+)"\),$"#)
            .unwrap();
    for line in py.lines() {
        if let Some(c) = row.captures(line) {
            python.insert(
                c[1].to_string(),
                (
                    c[2].to_string(),
                    c[3].to_string(),
                    c[4].to_string(),
                    library_name(&c[5]),
                    c[6].to_string(),
                ),
            );
        }
    }
    // The S2.* rows the peer writes in a loop over (name, type, NumPy operation).
    let s2 = Regex::new(r#"\("(\w+)", "(\w+)", "(\w+)"\)"#).unwrap();
    let loop_start = py.find("for _name, _dt, _op in [").expect("the S2.* loop");
    let loop_text = &py[loop_start..loop_start + py[loop_start..].find("]:").unwrap()];
    for c in s2.captures_iter(loop_text) {
        python.insert(
            format!("S2.{}", &c[1]),
            (
                c[2].to_string(),
                "(N, N)".into(),
                "(N,)".into(),
                library_name(&c[3]),
                "plain".into(),
            ),
        );
    }
    assert!(
        python.len() > 20,
        "the peer's table was not read: {python:?}"
    );
    let mut wrong = Vec::new();
    for c in &CASES {
        let kind = match c.kind {
            Kind::Plain => "plain",
            Kind::TransposeA => "transpose_a",
            Kind::PermuteA => "permute_a",
            Kind::InPlace => "inplace",
        };
        let want = (
            numpy_type(c.dtype).to_string(),
            python_shape(c.a),
            python_shape(c.b),
            op_name(c.op).to_string(),
            kind.to_string(),
        );
        match python.remove(c.name) {
            Some(got) if got == want => {}
            got => wrong.push(format!(
                "{}: the kit has {want:?}, peer_py.py {got:?}",
                c.name
            )),
        }
    }
    wrong.extend(python.keys().map(|n| format!("{n}: in peer_py.py only")));

    let limit = read("tools/bench-compare/src/limit.c");
    // The binary cases' table: from S1's row to the end of the array.
    let start = limit.find("{\"S1\", ").expect("limit.c's row of S1");
    let table = &limit[start..start + limit[start..].find("};").unwrap()];
    let mut c_rows: Vec<String> = Regex::new(r#"\{"([\w.]+)", \d"#)
        .unwrap()
        .captures_iter(table)
        .map(|c| c[1].to_string())
        .collect();
    for c in &CASES {
        match c_rows.iter().position(|n| n == c.name) {
            Some(i) => {
                c_rows.remove(i);
            }
            None => wrong.push(format!("{}: no row in limit.c", c.name)),
        }
    }
    wrong.extend(c_rows.iter().map(|n| format!("{n}: in limit.c only")));
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
