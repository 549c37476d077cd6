#!/usr/bin/env python3
"""The Julia package calls the C library only through `fn(:bc_...)`, which looks the symbol up in
the table `__init__` fills from `FUNCTIONS`: a symbol used but not listed there fails at run time
(a KeyError), and one listed but missing from the library fails at load. Julia is not needed: this
reads the package source and checks every `:bc_*` symbol it names against `FUNCTIONS` and against
the library's exports, and every `BC_*` constant it names against its generated codes.jl.

It also checks coverage, as the Go package's coverage test does: every function of the C API
(include/broadcast.h) is wrapped (in `FUNCTIONS` and called) or listed in NOT_WRAPPED below with
the reason, so that a new export is either wrapped or given a reason.

Usage: python3 symbols_check.py LibBroadcast.jl path/to/libbroadcast.so [path/to/broadcast.h]
(the header defaults to include/broadcast.h of this repository)
"""
import ctypes
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

NOT_WRAPPED = {
    "bc_set_streaming": "a per-thread setting, and Julia tasks move between threads from one "
                        "call to the next; the default policy needs no setting",
    "bc_get_streaming": "as bc_set_streaming",
    "bc_debug_panic": "a test hook of the C library (it panics on purpose to show that no panic "
                      "crosses the boundary); the C tests call it",
    "bc_last_error_status": "the record is per OS thread, and a Julia task may move to another "
                            "thread at any yield: check(st) has the status as the failing call's "
                            "return value and reads the rest right after it, so the package never "
                            "offers the record itself",
    "bc_last_error_clear": "as bc_last_error_status: the record is read only right after a call "
                           "failed, so a stale one is never mistaken for a new failure",
    "bc_scalar_bool": "a C convenience for filling struct bc_scalar, which has no literal in C; "
                      "the package fills its mirror of the struct itself (CScalar, cscalar)",
    "bc_scalar_int": "as bc_scalar_bool",
    "bc_scalar_float": "as bc_scalar_bool",
}
# A number operand goes through the generic calls with the operation's code (binary(op, t, s)),
# for every operation, rather than the four named ones.
for _op in ("add", "sub", "mul", "div"):
    NOT_WRAPPED[f"bc_{_op}_scalar"] = "bc_binary_scalar with this operation's code"
    NOT_WRAPPED[f"bc_{_op}_scalar_inplace"] = "bc_binary_scalar_inplace with this operation's code"
for _op in ("sub", "div"):
    NOT_WRAPPED[f"bc_r{_op}_scalar"] = "bc_binary_rscalar with this operation's code"


def table_names(src, start, prefix):
    """The BC_<prefix>_* codes in the Julia table `const <start> = (...)`."""
    m = re.search(r"const " + start + r" = \((.*?)\n\)", src, re.S)
    return [c.lower() for c in re.findall(r"\bBC_" + prefix + r"_([A-Z0-9_]+)\b", m.group(1))] if m else []


def per_operation_functions(src, api):
    """The named C functions of each operation in the package's OPS and UNARY_OPS tables and of
    each reduction it names, which are the generic calls with that code: {name: reason}."""
    out = {}
    for op in table_names(src, "OPS", "OP"):
        out[f"bc_{op}"] = "bc_binary with this operation's code (binary, OPS)"
        out[f"bc_{op}_inplace"] = "bc_binary_inplace with this operation's code (binary!, OPS)"
        out[f"bc_{op}_out"] = "bc_binary_out with this operation's code (binary!, OPS)"
    for op in table_names(src, "UNARY_OPS", "UNARY"):
        out[f"bc_{op}"] = "bc_unary with this operation's code (unary, UNARY_OPS)"
        out[f"bc_{op}_inplace"] = "bc_unary_inplace with this operation's code (unary!, UNARY_OPS)"
        out[f"bc_{op}_out"] = "bc_unary_out with this operation's code (unary!, UNARY_OPS)"
    for r in set(re.findall(r"\bBC_REDUCE_([A-Z0-9_]+)\b", src)) - {"COUNT"}:
        out[f"bc_{r.lower()}"] = "bc_reduce with this reduction's code (reduction)"
    return {k: v for k, v in out.items() if k in api}


def main():
    src_path, lib_path = sys.argv[1], sys.argv[2]
    header = sys.argv[3] if len(sys.argv) > 3 else os.path.join(HERE, "..", "..", "..", "include", "broadcast.h")
    src = open(src_path).read()
    # The files the package includes: the generated tables (ops.jl, codes.jl is read below) and
    # the wrappers kept in files of their own.
    src_dir = os.path.dirname(src_path)
    for name in sorted(os.listdir(src_dir)):
        if name.endswith(".jl") and name not in (os.path.basename(src_path), "codes.jl"):
            src += "\n" + open(os.path.join(src_dir, name)).read()
    included = set(re.findall(r'^include\("([^"]+)"\)', open(src_path).read(), re.M))
    unincluded = [n for n in sorted(os.listdir(src_dir))
                  if n.endswith(".jl") and n != os.path.basename(src_path) and n not in included]
    table = re.search(r"const FUNCTIONS = \((.*?)\n\)", src, re.S)
    if not table:
        sys.exit(f"{src_path}: no `const FUNCTIONS = (...)` table")
    listed = set(re.findall(r":(bc_\w+)", table.group(1)))
    used = set(re.findall(r":(bc_\w+)", src[: table.start()] + src[table.end():]))
    lib = ctypes.CDLL(lib_path)
    problems = [f"src/{n}: not included by {os.path.basename(src_path)}" for n in unincluded]
    problems += [f"{s}: used but not in FUNCTIONS" for s in sorted(used - listed)]
    problems += [f"{s}: in FUNCTIONS but never called" for s in sorted(listed - used)]
    problems += [f"{s}: in FUNCTIONS but not exported by {lib_path}" for s in sorted(listed)
                 if not hasattr(lib, s)]
    # Every C constant the package names must be one its generated codes.jl defines (a misspelt
    # name would fail only when Julia reaches it).
    codes_path = os.path.join(os.path.dirname(src_path), "codes.jl")
    defined = set(re.findall(r"^const (BC_\w+) =", open(codes_path).read(), re.M))
    named = {n for n in re.findall(r"\b(BC_[A-Z0-9_]+)\b", src) if not n.endswith("_")}  # not BC_OP_*
    problems += [f"{s}: named but not defined in codes.jl" for s in sorted(named - defined)]
    # A code is written by its name, never as a number that could drift from the library's.
    problems += [f"a literal code {m}: name it (codes.jl)" for m in re.findall(r"Int32\(-?\d+\)", src)]

    # Coverage of the C API.
    decl = re.compile(r"(?m)^(?:BC_MUST_USE )?(?:const )?(?:struct [a-z_A-Z]+ |[a-z_0-9]+ )\**(bc_[a-z0-9_]+)\(")
    api = set(decl.findall(open(header).read()))
    if len(api) < 150:
        sys.exit(f"julia coverage: only {len(api)} functions read from {header}")
    wrapped = api & listed & used
    reasons = dict(NOT_WRAPPED)
    reasons.update(per_operation_functions(src, api))
    problems += [f"{f}: in {os.path.basename(header)} but neither wrapped (FUNCTIONS and called) nor "
                 f"listed in symbols_check.py's NOT_WRAPPED with a reason" for f in sorted(api - wrapped - reasons.keys())]
    problems += [f"{f}: wrapped, but also listed as not wrapped" for f in sorted(wrapped & reasons.keys())]
    problems += [f"{f}: listed as not wrapped, but {os.path.basename(header)} has no such function"
                 for f in sorted(NOT_WRAPPED.keys() - api)]
    for p in problems:
        print(f"julia symbols: {p}")
    print(f"julia symbols: {len(used)} used, {len(listed)} listed, {len(named)} constants named; "
          f"coverage of the C API: {len(wrapped)} wrapped, "
          f"{len(api & reasons.keys())} listed with a reason "
          f"({len(api & reasons.keys() & NOT_WRAPPED.keys())} by name, "
          f"{len(api & reasons.keys() - NOT_WRAPPED.keys())} per-operation forms of generic calls), "
          f"{len(api)} in {os.path.basename(header)}; {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
