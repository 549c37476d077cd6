#!/usr/bin/env python3
"""Every function of the C API is used by the C++ header include/broadcast.hpp, or listed below
with the reason it is not; fails naming each function that is neither (a new export that the
C++ API forgot), each listed one the header does use after all, and each listed one the C header
no longer has.

broadcast.hpp builds many calls by token pasting (`bc_##name`, `bc_##name##_out` in the
BC_HPP_OPERATIONS and BC_HPP_UNARY_OPERATIONS lists), so its text does not name them: the header
is run through the C++ preprocessor, and the functions counted are the `bc_*` names in the lines
that came from broadcast.hpp itself (the line markers tell them from broadcast.h's declarations).

Usage: python3 scripts/cpp_coverage.py   (CXX names the compiler, c++ by default)
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from gen_api_doc import items  # noqa: E402  (the same reading of the header as docs/api.md)

NOT_USED = {
    "bc_status_str": "bc::Error carries the library's own message for the failure (read by "
                     "detail::check), which says more than the status's generic text",
    "bc_last_error_status": "detail::check has the status as the failing call's return value and "
                            "reads the rest (message, bc_error_info, shapes) right after it",
    "bc_last_error_clear": "the record is read only right after a call failed, so a stale one is "
                           "never mistaken for a new failure",
    "bc_debug_panic": "a test hook of the C library (it panics on purpose to show that no panic "
                      "crosses the boundary); the C tests call it",
    "bc_binary": "the operations call each operation's own function (bc_add, ...), which the "
                 "BC_HPP_OPERATIONS list names",
    "bc_binary_inplace": "the operators call each operation's own bc_<name>_inplace",
    "bc_binary_out": "the out forms call each operation's own bc_<name>_out",
    "bc_unary": "the unary functions call each operation's own function (bc_sqrt, ...), which the "
                "BC_HPP_UNARY_OPERATIONS list names",
    "bc_unary_inplace": "the in-place forms call each operation's own bc_<name>_inplace",
    "bc_unary_out": "the out forms call each operation's own bc_<name>_out",
    "bc_tensor_is_live": "a bc::Tensor owns its handle, so it never holds a freed one; a caller "
                         "holding raw handles can call the C function",
}
# A number operand: the generic calls with the operation's code (BC_HPP_NUMBER), for every
# operation, rather than the four named ones.
for op in ("add", "sub", "mul", "div"):
    NOT_USED[f"bc_{op}_scalar"] = "bc::" + op + "(t, n) calls bc_binary_scalar with the operation's code"
    NOT_USED[f"bc_{op}_scalar_inplace"] = ("bc::" + op + "_inplace(t, n) calls bc_binary_scalar_inplace "
                                           "with the operation's code")
for op in ("sub", "div"):
    NOT_USED[f"bc_r{op}_scalar"] = "bc::" + op + "(n, t) calls bc_binary_rscalar with the operation's code"


def header_functions():
    with open(os.path.join(ROOT, "include", "broadcast.h")) as f:
        return {name for kind, name, _, _ in items(f.read()) if kind == "function"}


def used_by_cpp_header():
    """The bc_* names in the preprocessed lines that come from broadcast.hpp."""
    cxx = os.environ.get("CXX", "c++")
    pre = subprocess.run([cxx, "-std=c++17", "-E", "-I", os.path.join(ROOT, "include"), "-x", "c++", "-"],
                         input='#include "broadcast.hpp"\n', capture_output=True, text=True)
    if pre.returncode != 0:
        sys.exit(f"cpp coverage: {cxx} -E failed:\n{pre.stderr}")
    used, current = set(), None
    for line in pre.stdout.splitlines():
        marker = re.match(r'#\s*\d+\s+"([^"]*)"', line)
        if marker:
            current = marker.group(1)
        elif current is not None and os.path.basename(current) == "broadcast.hpp":
            used.update(re.findall(r"\b(bc_[a-z0-9_]+)\b", line))
    return used


def main():
    api = header_functions()
    if len(api) < 150:
        sys.exit(f"cpp coverage: only {len(api)} functions read from include/broadcast.h")
    used = used_by_cpp_header() & api
    problems = [f"{f}: neither used by include/broadcast.hpp nor listed in scripts/cpp_coverage.py with a reason"
                for f in sorted(api - used - NOT_USED.keys())]
    problems += [f"{f}: listed as not used, but include/broadcast.hpp uses it" for f in sorted(used & NOT_USED.keys())]
    problems += [f"{f}: listed, but include/broadcast.h has no such function" for f in sorted(NOT_USED.keys() - api)]
    for p in problems:
        print(f"cpp coverage: {p}")
    print(f"cpp coverage: {len(used)} used by broadcast.hpp, {len(NOT_USED)} listed with a reason, "
          f"{len(api)} in broadcast.h; {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
