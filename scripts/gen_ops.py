#!/usr/bin/env python3
"""Writes what the C API and the C++ header say about each elementwise operation from the
tables that define them, `binary_ops!` in src/engine/binary_ops.rs and `unary_ops!` in
src/engine/unary_ops.rs (a row per operation, in code order, its doc comment the operation's C
documentation):

  src/ffi/ops_named.rs      the BC_OP_* codes, BC_OP_COUNT, and each operation's three named
                            exports (bc_<name>, bc_<name>_inplace, bc_<name>_out)
  src/ffi/unary_named.rs    the same for the unary operations (BC_UNARY_*; no bc_<name>_inplace
                            for the operations PyTorch has no in-place form of)
  include/broadcast.hpp     the BC_HPP_OPERATIONS, BC_HPP_UNARY_OPERATIONS and BC_HPP_UNARY_INPLACE
                            lists the C++ forms are made from
  bindings/go/binary_ops.go the Go package's Op and UnaryOp constants and names (and, for its
  bindings/go/unary_ops.go  tests, bindings/go/binary_consts_test.go and unary_consts_test.go)
  testkit/src/ops_table.rs every operation's code, name, named exports and the kinds of element
                            it takes (binary and unary), for tests that cover every operation
                            without listing them

  bindings/julia/src/ops.jl the Julia package's OPS and UNARY_OPS tables: each operation's Julia
                            name, code, and the Base function whose broadcast it is (the tables'
                            Julia columns)

and, from the element-type table (`dtypes!` in src/engine/dtype.rs), the Go package's DType
constants (bindings/go/dtypes.go) and the Julia package's element types by code
(bindings/julia/src/eltypes.jl).

It reads the table as text (it does not build the library), so it runs even when the library
would not compile for want of the files it writes.

Usage: scripts/gen_ops.py           write the files
       scripts/gen_ops.py --check   exit 1 if a file differs from what it would write
"""
import os
import re
import subprocess
import sys

from generated import write_or_check

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TABLE = os.path.join(ROOT, "src", "engine", "binary_ops.rs")
FFI = os.path.join(ROOT, "src", "ffi", "ops_named.rs")
HPP = os.path.join(ROOT, "include", "broadcast.hpp")
TESTS = os.path.join(ROOT, "testkit", "src", "ops_table.rs")
UNARY_TABLE = os.path.join(ROOT, "src", "engine", "unary_ops.rs")
UNARY_FFI = os.path.join(ROOT, "src", "ffi", "unary_named.rs")
GO_BINARY = os.path.join(ROOT, "bindings", "go", "binary_ops.go")
GO_BINARY_TEST = os.path.join(ROOT, "bindings", "go", "binary_consts_test.go")
GO_UNARY = os.path.join(ROOT, "bindings", "go", "unary_ops.go")
GO_UNARY_TEST = os.path.join(ROOT, "bindings", "go", "unary_consts_test.go")
DTYPE_TABLE = os.path.join(ROOT, "src", "engine", "dtype.rs")
GO_DTYPES = os.path.join(ROOT, "bindings", "go", "dtypes.go")
JULIA_ELTYPES = os.path.join(ROOT, "bindings", "julia", "src", "eltypes.jl")
JULIA_OPS = os.path.join(ROOT, "bindings", "julia", "src", "ops.jl")
WIDTH = 100


def table(path=None, macro="binary_ops"):
    """[(name, doc lines, kinds, the rest of the row's words)] in code order."""
    src = open(path or TABLE).read()
    start = src.index(f"{macro}! {{\n")
    body = src[start : src.index("\n}\n", start)]
    rows, doc = [], []
    for line in body.split("\n")[1:]:
        line = line.strip()
        if line.startswith("///"):
            doc.append(line[3:].strip())
        elif re.match(r'[A-Z]\w*\s+"\w+"', line):
            m = re.match(r'[A-Z]\w*\s+"(\w+)"\s+\w+\s+\[([a-z ]+)\]\s+(.*);$', line)
            name, kinds, rest = m.group(1), m.group(2).split(), m.group(3).split()
            if not doc:
                sys.exit(f"gen_ops: the row of {name} has no doc comment")
            rows.append((name, doc, kinds, rest))
            doc = []
    return rows


def wrap(text, indent):
    """`text` as `///` lines of at most WIDTH columns."""
    lines, line = [], ""
    for word in text.split():
        if line and len(indent) + 4 + len(line) + 1 + len(word) > WIDTH:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    lines.append(line)
    return "".join(f"{indent}/// {x}\n" for x in lines)


def forms(name, doc):
    """The new-result, in-place and into-`out` phrases of an operation's exports."""
    text = " ".join(doc)
    expr = re.search(r"`([^`]+)`", text).group(1)
    boolean = "bool result" in text
    infix = re.fullmatch(r"a (\S+) b", expr)
    func = re.fullmatch(r"(\w+)\(a, b\)", expr)
    if infix:
        op = infix.group(1)
        inplace = f"target = (target {op} other)" if boolean else f"target {op}= other"
    else:
        f = func.group(1) if func else name
        expr = f"{f}(a, b)"
        inplace = f"target = {f}(target, other)"
    tail = ", 0 or 1 in `target`'s type" if boolean else " in place"
    return expr, f"`{inplace}`{tail}"


def ffi(rows):
    out = [
        "//! The `BC_OP_*` codes and each operation's named exports. Generated by scripts/gen_ops.py",
        "//! from the operation table in src/engine/binary_ops.rs: do not edit by hand.",
        "use super::handle::bc_tensor;",
        "use super::ops::{bc_binary, bc_binary_inplace, bc_binary_out};",
        "use crate::engine::BinaryOp;",
        "",
    ]
    for code, (name, doc, _, _) in enumerate(rows):
        const = f"BC_OP_{name.upper()}"
        text = "".join(wrap(d, "") if d else "///\n" for d in doc)
        if code == 0:
            text += "///\n" + wrap(
                "The `BC_OP_*` codes name the operations of `bc_binary*`, with PyTorch's semantics "
                "(`torch.<name>`; docs/semantics.md, section 11): integer arithmetic wraps; "
                "float16 and bfloat16 compute in float32 and round each operation.",
                "",
            )
        out.append(f"{text}pub const {const}: i32 = {code};")
    out += [
        wrap(
            "How many operations there are: the codes are 0 to `BC_OP_COUNT - 1`, and a code "
            "outside that range is `BC_ERR_INVALID_ARG`. Later versions add codes at the end, so "
            "use this to loop over every operation rather than the last code.",
            "",
        )
        + f"pub const BC_OP_COUNT: i32 = {len(rows)};",
        "const _: () = assert!(BinaryOp::ALL.len() == BC_OP_COUNT as usize);",
    ]
    for name, doc, _, _ in rows:
        const = f"BC_OP_{name.upper()}"
        expr, inplace = forms(name, doc)
        out += [
            "",
            wrap(f"`*out = {expr}` in a new tensor: `bc_binary` with `{const}`.", "").rstrip("\n"),
            "///",
            "/// # Safety",
            "/// `out` must be valid for one write.",
            "#[must_use]",
            "#[no_mangle]",
            f"pub unsafe extern \"C\" fn bc_{name}(",
            "    a: *const bc_tensor,",
            "    b: *const bc_tensor,",
            "    out: *mut *mut bc_tensor,",
            ") -> i32 {",
            "    // SAFETY: forwarded.",
            f"    unsafe {{ bc_binary({const}, a, b, out) }}",
            "}",
            "",
            wrap(f"{inplace}: `bc_binary_inplace` with `{const}`.", "").rstrip("\n"),
            "#[must_use]",
            "#[no_mangle]",
        ]
        sig = f"pub extern \"C\" fn bc_{name}_inplace(target: *mut bc_tensor, other: *const bc_tensor) -> i32 {{"
        out.append(sig)
        out += [f"    bc_binary_inplace({const}, target, other)", "}", ""]
        out.append(
            wrap(f"`out = {expr}` into the caller's `out`: `bc_binary_out` with `{const}`.", "").rstrip("\n")
        )
        out += ["#[must_use]", "#[no_mangle]"]
        sig = f"pub extern \"C\" fn bc_{name}_out(a: *const bc_tensor, b: *const bc_tensor, out: *mut bc_tensor) -> i32 {{"
        out.append(sig)
        out += [f"    bc_binary_out({const}, a, b, out)", "}"]
    return "\n".join(out) + "\n"


def define(text, name, items):
    """`text` with the X-list macro `name` holding `items` (one per line)."""
    start = text.index(f"#define {name}(X)")
    end = text.index("\n\n", start)
    lines = [f"#define {name}(X)"] + [f"    X({item})" for item in items]
    body = "\n".join(
        (line.ljust(WIDTH - 1) + "\\") if i < len(lines) - 1 else line
        for i, line in enumerate(lines)
    )
    return text[:start] + body + text[end:]


def bool_results(path=None):
    """The names of the binary operations whose result is bool: their row's scalar function is
    declared `Name -> Bool` (directly, or through the `predicate!` macro)."""
    src = open(path or TABLE).read()
    fns = set(re.findall(r"^\s*(\w+) -> Bool\b", src, re.M))
    fns |= set(re.findall(r"predicate!\(\s*(?:///[^\n]*\n\s*)*(\w+) on ", src))
    start = src.index("binary_ops! {\n")
    body = src[start : src.index("\n}\n", start)]
    names = {
        m.group(1)
        for m in re.finditer(r'^\s*[A-Z]\w*\s+"(\w+)"\s+(\w+)\s+\[', body, re.M)
        if m.group(2) in fns
    }
    if "eq" not in names or "add" in names:
        sys.exit("gen_ops: could not tell which operations give bool (eq should, add should not)")
    return names


def takes_number(rest):
    """Whether a binary row's `number` column gives it a number form."""
    return rest[3] != "none"


def hpp(rows, unary, text):
    text = define(text, "BC_HPP_OPERATIONS", [f"{n}, BC_OP_{n.upper()}" for n, _, _, _ in rows])
    text = define(
        text,
        "BC_HPP_NUMBER_OPERATIONS",
        [f"{n}, BC_OP_{n.upper()}" for n, _, _, rest in rows if takes_number(rest)],
    )
    text = define(
        text, "BC_HPP_UNARY_OPERATIONS", [f"{n}, BC_UNARY_{n.upper()}" for n, _, _, _ in unary]
    )
    return define(
        text, "BC_HPP_UNARY_INPLACE", [n for n, _, _, rest in unary if "inplace" in rest]
    )


def tests(rows):
    bools = bool_results()
    out = [
        "//! Every elementwise operation with its named exports and the kinds of element it takes.",
        "//! Generated by scripts/gen_ops.py from the operation table in src/engine/binary_ops.rs:",
        "//! do not edit by hand.",
        "use broadcast::ffi::*;",
        "",
        "/// One operation of the table.",
        "#[allow(dead_code)] // each test binary uses some of the fields",
        "pub struct NamedOp {",
        "    pub code: i32,",
        "    pub name: &'static str,",
        "    /// The names of `new`, `inplace` and `out`.",
        "    pub exports: [&'static str; 3],",
        "    pub new: unsafe extern \"C\" fn(*const bc_tensor, *const bc_tensor, *mut *mut bc_tensor) -> i32,",
        "    pub inplace: extern \"C\" fn(*mut bc_tensor, *const bc_tensor) -> i32,",
        "    pub out: extern \"C\" fn(*const bc_tensor, *const bc_tensor, *mut bc_tensor) -> i32,",
        "    /// Whether it has a kernel for floating types (else integers, and maybe bool).",
        "    pub float: bool,",
        "    pub int: bool,",
        "    pub bool: bool,",
        "    /// Whether a number may be an operand (in at least one order).",
        "    pub number: bool,",
        "    /// Whether the result is bool whatever the operands' type (comparisons, logical operations).",
        "    pub bool_result: bool,",
        "    /// Whether it computes in a floating type (integer and bool operands give float32).",
        "    pub computes_floating: bool,",
        "    /// How many units in the last place a floating result may differ from PyTorch's.",
        "    pub ulps: i64,",
        "}",
        "",
        "#[allow(dead_code)]",
        "pub const NAMED_OPS: &[NamedOp] = &[",
    ]
    for name, _, kinds, rest in rows:
        out += [
            "    NamedOp {",
            f"        code: BC_OP_{name.upper()},",
            f"        name: \"{name}\",",
            f"        exports: [\"bc_{name}\", \"bc_{name}_inplace\", \"bc_{name}_out\"],",
            f"        new: bc_{name},",
            f"        inplace: bc_{name}_inplace,",
            f"        out: bc_{name}_out,",
            f"        float: {'true' if 'float' in kinds else 'false'},",
            f"        int: {'true' if 'int' in kinds else 'false'},",
            f"        bool: {'true' if 'bool' in kinds else 'false'},",
            f"        number: {'true' if takes_number(rest) else 'false'},",
            f"        bool_result: {'true' if name in bools else 'false'},",
            f"        computes_floating: {'true' if rest[0] == 'Floating' else 'false'},",
            f"        ulps: {rest[4]},",
            "    },",
        ]
    out.append("];")
    return "\n".join(out) + "\n"


def unary_ffi(rows):
    """The BC_UNARY_* codes and each unary operation's named exports."""
    out = [
        "//! The `BC_UNARY_*` codes and each unary operation's named exports. Generated by",
        "//! scripts/gen_ops.py from the operation table in src/engine/unary_ops.rs: do not edit by",
        "//! hand.",
        "use super::handle::bc_tensor;",
        "use super::unary::{bc_unary, bc_unary_inplace, bc_unary_out};",
        "use crate::engine::UnaryOp;",
        "",
    ]
    for code, (name, doc, _, _) in enumerate(rows):
        text = "".join(wrap(d, "") if d else "///\n" for d in doc)
        if code == 0:
            text += "///\n" + wrap(
                "The `BC_UNARY_*` codes name the operations of `bc_unary*`, with PyTorch's "
                "semantics (`torch.<name>(x)`; `bc_unary` gives the result types).",
                "",
            )
        out.append(f"{text}pub const BC_UNARY_{name.upper()}: i32 = {code};")
    out += [
        wrap(
            "How many unary operations there are: the codes are 0 to `BC_UNARY_COUNT - 1`, and a "
            "code outside that range is `BC_ERR_INVALID_ARG`. Later versions add codes at the end.",
            "",
        )
        + f"pub const BC_UNARY_COUNT: i32 = {len(rows)};",
        "const _: () = assert!(UnaryOp::ALL.len() == BC_UNARY_COUNT as usize);",
    ]
    for name, doc, _, rest in rows:
        const = f"BC_UNARY_{name.upper()}"
        out += [
            "",
            wrap(f"`*out = {name}(x)` in a new tensor: `bc_unary` with `{const}`.", "").rstrip("\n"),
            "///",
            "/// # Safety",
            "/// `out` must be valid for one write.",
            "#[must_use]",
            "#[no_mangle]",
            f"pub unsafe extern \"C\" fn bc_{name}(x: *const bc_tensor, out: *mut *mut bc_tensor) -> i32 {{",
            "    // SAFETY: forwarded.",
            f"    unsafe {{ bc_unary({const}, x, out) }}",
            "}",
        ]
        if "inplace" in rest:
            out += [
                "",
                wrap(f"`x = {name}(x)` in place: `bc_unary_inplace` with `{const}`.", "").rstrip("\n"),
                "#[must_use]",
                "#[no_mangle]",
                f"pub extern \"C\" fn bc_{name}_inplace(x: *mut bc_tensor) -> i32 {{",
                f"    bc_unary_inplace({const}, x)",
                "}",
            ]
        out += [
            "",
            wrap(f"`out = {name}(x)` into the caller's `out`: `bc_unary_out` with `{const}`.", "").rstrip("\n"),
            "#[must_use]",
            "#[no_mangle]",
            f"pub extern \"C\" fn bc_{name}_out(x: *const bc_tensor, out: *mut bc_tensor) -> i32 {{",
            f"    bc_unary_out({const}, x, out)",
            "}",
        ]
    return "\n".join(out) + "\n"


def unary_tests(rows):
    """The tests' table of unary operations, appended to testkit/src/ops_table.rs."""
    out = [
        "",
        "/// One unary operation of the table.",
        "#[allow(dead_code)] // each test binary uses some of the fields",
        "pub struct NamedUnary {",
        "    pub code: i32,",
        "    pub name: &'static str,",
        "    /// The names of `new` and `out`.",
        "    pub exports: [&'static str; 2],",
        "    pub new: unsafe extern \"C\" fn(*const bc_tensor, *mut *mut bc_tensor) -> i32,",
        "    /// `bc_<name>_inplace`, when the operation has an in-place form.",
        "    pub inplace: Option<(&'static str, extern \"C\" fn(*mut bc_tensor) -> i32)>,",
        "    pub out: extern \"C\" fn(*const bc_tensor, *mut bc_tensor) -> i32,",
        "    pub float: bool,",
        "    pub int: bool,",
        "    pub bool: bool,",
        "}",
        "",
        "#[allow(dead_code)]",
        "pub const NAMED_UNARY: &[NamedUnary] = &[",
    ]
    for name, _, kinds, rest in rows:
        inplace = f'Some(("bc_{name}_inplace", bc_{name}_inplace))' if "inplace" in rest else "None"
        out += [
            "    NamedUnary {",
            f"        code: BC_UNARY_{name.upper()},",
            f"        name: \"{name}\",",
            f"        exports: [\"bc_{name}\", \"bc_{name}_out\"],",
            f"        new: bc_{name},",
            f"        inplace: {inplace},",
            f"        out: bc_{name}_out,",
            f"        float: {'true' if 'float' in kinds else 'false'},",
            f"        int: {'true' if 'int' in kinds else 'false'},",
            f"        bool: {'true' if 'bool' in kinds else 'false'},",
            "    },",
        ]
    out.append("];")
    return "\n".join(out) + "\n"


def go_name(name):
    return "".join(w.capitalize() for w in name.split("_"))


def go_consts(rows, kind):
    """The Go package's constants of one operation table (binary `Op` or `UnaryOp`), their names
    and, for unary operations, which have an in-place form."""
    typ, source, what, arity = {
        "binary": ("Op", "binary_ops.rs", "binary elementwise", "(a, b)"),
        "unary": ("UnaryOp", "unary_ops.rs", "unary", "(x)"),
    }[kind]
    names = "opNames" if kind == "binary" else "unaryNames"
    out = [
        f"// Code generated by scripts/gen_ops.py from src/engine/{source}. DO NOT EDIT.",
        "",
        "package broadcast",
        "",
        f"// The {what} operations, with PyTorch's semantics (torch.<name>{arity}).",
        "// Their values are the library's own codes.",
        "const (",
    ]
    for code, (name, doc, _, _) in enumerate(rows):
        out.append(f"\t// {go_name(name)}: {' '.join(doc)}")
        out.append(f"\t{go_name(name)} {typ} = {code}")
    out += [")", "", f"// {names} are PyTorch's names of the {what} operations, indexed by code.",
            f"var {names} = [...]string{{"]
    out += [f'\t"{name}",' for name, _, _, _ in rows]
    out.append("}")
    if kind == "unary":
        out += ["", "// unaryInPlace says which unary operations have an in-place form, indexed by code.",
                "var unaryInPlace = [...]bool{"]
        out += [f"\t{'true' if 'inplace' in rest else 'false'}, // {name}" for name, _, _, rest in rows]
        out.append("}")
    return "\n".join(out) + "\n"


def go_consts_test(rows, kind):
    """For the Go tests: every constant of one table paired with its C constant and name."""
    source, prefix, var = {
        "binary": ("binary_ops.rs", "BC_OP_", "opConsts"),
        "unary": ("unary_ops.rs", "BC_UNARY_", "unaryConsts"),
    }[kind]
    out = [
        f"// Code generated by scripts/gen_ops.py from src/engine/{source}. DO NOT EDIT.",
        "",
        "package broadcast_test",
        "",
        'import bc "libbroadcast/broadcast"',
        "",
        f"// {var} pairs every {'Op' if kind == 'binary' else 'UnaryOp'} constant with its C constant.",
        f"var {var} = []goConst{{",
    ]
    for name, _, _, _ in rows:
        g = go_name(name)
        out.append(f'\t{{"{prefix}{name.upper()}", int64(bc.{g}), bc.{g}.String()}},')
    out.append("}")
    if kind == "binary":
        out += ["", "// opUlps is, by code, how many units in the last place an operation's floating result",
                "// may differ from PyTorch's (whose vectorised and scalar loops differ by as much).",
                "var opUlps = [...]int{"]
        out += [f"\t{rest[4]}, // {name}" for name, _, _, rest in rows]
        out.append("}")
    return "\n".join(out) + "\n"


def gofmt(text):
    """`text` as gofmt writes it, so that the generated Go stays as committed."""
    try:
        run = subprocess.run(["gofmt"], input=text, capture_output=True, text=True)
    except FileNotFoundError:
        sys.exit("gen_ops: gofmt is not installed (Debian package golang-go): it formats the Go files")
    if run.returncode != 0:
        sys.exit(f"gen_ops: gofmt refused the generated code:\n{run.stderr}")
    return run.stdout


def rustfmt(text):
    """`text` as `cargo fmt` writes it, so that the generated Rust stays as committed."""
    run = subprocess.run(
        ["rustfmt", "--edition", "2021", "--emit", "stdout", "--quiet"],
        input=text, capture_output=True, text=True, cwd=ROOT,
    )
    if run.returncode != 0:
        sys.exit(f"gen_ops: rustfmt refused the generated code:\n{run.stderr}")
    return run.stdout


def dtypes():
    """The element-type table's rows in code order: (code, name, Go constant, Go element type,
    Julia element type)."""
    src = open(DTYPE_TABLE).read()
    body = src[src.index("dtypes! {"):]
    body = body[: body.index("\n}\n")]
    rows = re.findall(
        r'^\s+\w+ = (\d+)\s+"(\w+)".*\)\s+"(\w+)"\s+"(\w+)"\s+"(\w+)";$', body, re.M
    )
    assert rows and [int(r[0]) for r in rows] == list(range(len(rows))), "dtypes! rows"
    return [(int(c), name, go, go_elem, julia) for c, name, go, go_elem, julia in rows]


def go_dtypes(rows):
    out = [
        "// Code generated by scripts/gen_ops.py from src/engine/dtype.rs. DO NOT EDIT.",
        "",
        "package broadcast",
        "",
        f"// The {len(rows)} element types, each with the Go type of its elements (see Elem). Their",
        "// values are the library's own codes.",
        "const (",
    ]
    for code, name, go, go_elem, _ in rows:
        held = "" if go_elem == name or go_elem == "bool" else f", held in Go as {go_elem}"
        out.append(f"\t{go} DType = {code} // {name}{held}")
    return "\n".join(out + [")"]) + "\n"


def julia_eltypes(rows):
    return (
        "# Generated by scripts/gen_ops.py from src/engine/dtype.rs. Do not edit.\n"
        f"# The {len(rows)} element types, by code: ELTYPES[code + 1].\n"
        f"const ELTYPES = ({', '.join(r[4] for r in rows)})\n"
    )


def julia_symbol(word):
    """A Julia function name from the tables' Julia column as a quoted symbol, or nothing."""
    if word == "_":
        return "nothing"
    return f":{word}" if re.fullmatch(r"\w+", word) else f":({word})"


def julia_ops(rows, unary):
    out = [
        "# Generated by scripts/gen_ops.py from src/engine/binary_ops.rs and unary_ops.rs. Do not edit.",
        "",
        "# (name, in-place name, BC_OP_* code, the Julia function whose broadcast it is on Tensors, or",
        "# nothing). The names are the C API's (div is divide: Base.div is integer division); the values",
        "# are the library's (PyTorch's), which differ from Julia's in places (a shift by a negative",
        "# amount gives 0 or -1, an integer zero divisor is a BroadcastError with status BC_ERR_VALUE,",
        "# comparisons give Bool).",
        "const OPS = (",
    ]
    for name, _, _, rest in rows:
        jname, jfn = rest[5], rest[6]
        out.append(f"    (:{jname}, :{jname}!, BC_OP_{name.upper()}, {julia_symbol(jfn)}),")
    out += [
        ")",
        "",
        "# (name, in-place name or nothing, BC_UNARY_* code, the Julia function whose broadcast it is",
        "# on a Tensor, or nothing): `sqrt.(t)` runs the library's sqrt. Result types are PyTorch's",
        "# (integers give Float32 for the floating functions).",
        "const UNARY_OPS = (",
    ]
    for name, _, _, rest in unary:
        inplace = f":{name}!" if "inplace" in rest else "nothing"
        out.append(f"    (:{name}, {inplace}, BC_UNARY_{name.upper()}, {julia_symbol(rest[-2])}),")
    return "\n".join(out + [")"]) + "\n"


def main():
    rows = table()
    unary = table(UNARY_TABLE, "unary_ops")
    types = dtypes()
    outputs = {
        FFI: rustfmt(ffi(rows)),
        UNARY_FFI: rustfmt(unary_ffi(unary)),
        HPP: hpp(rows, unary, open(HPP).read()),
        TESTS: rustfmt(tests(rows) + unary_tests(unary)),
        GO_BINARY: gofmt(go_consts(rows, "binary")),
        GO_BINARY_TEST: gofmt(go_consts_test(rows, "binary")),
        GO_UNARY: gofmt(go_consts(unary, "unary")),
        GO_UNARY_TEST: gofmt(go_consts_test(unary, "unary")),
        GO_DTYPES: gofmt(go_dtypes(types)),
        JULIA_ELTYPES: julia_eltypes(types),
        JULIA_OPS: julia_ops(rows, unary),
    }
    if write_or_check(outputs, "gen_ops.py"):
        print(
            f"the operation tables' {len(rows)} binary and {len(unary)} unary rows and the "
            f"{len(types)} element types match the files generated from them"
        )


if __name__ == "__main__":
    main()
