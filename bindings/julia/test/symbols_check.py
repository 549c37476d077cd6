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
    "bc_last_error_status": "check(st) has the status as the failing call's return value and "
                            "reads the rest (message, bc_error_info, shapes) right after it",
    "bc_last_error_clear": "the record is read only right after a call failed, so a stale one is "
                           "never mistaken for a new failure",
    "bc_status_str": "a BroadcastError carries the library's own message for the failure, which "
                     "says more than the status's generic text",
    "bc_tensor_to_dlpack": "DLPack exchange belongs in a package extension for DLPack.jl; Julia "
                           "arrays are shared without it (Tensor(A) views their memory)",
    "bc_tensor_to_dlpack_versioned": "as bc_tensor_to_dlpack",
    "bc_tensor_from_dlpack": "as bc_tensor_to_dlpack",
    "bc_tensor_from_dlpack_versioned": "as bc_tensor_to_dlpack",
    "bc_expr_eval": "a dotted expression is computed one library call per dotted function, so "
                    "that numbers keep the promotion of Python numbers; bc_expr's constants are "
                    "0-dimensional tensors, which promote differently (an Int32 tensor .+ 2.5 "
                    "would be Float64, not Float32)",
    "bc_expr_eval_out": "as bc_expr_eval",
    "bc_plan_expr": "as bc_expr_eval: the package has no fused expressions to plan",
    "bc_plan_expr_out": "as bc_plan_expr",
    "bc_expr_reduce": "as bc_expr_eval: a dotted expression reduced by sum/mean/maximum is the "
                      "expression's calls then the reduction's, so numbers keep Julia's promotion",
    "bc_plan_expr_reduce": "as bc_plan_expr",
    "bc_scalar_bool": "the package builds struct bc_scalar itself (CScalar, cscalar)",
    "bc_scalar_int": "as bc_scalar_bool",
    "bc_scalar_float": "as bc_scalar_bool",
    "bc_shape_broadcast": "Julia's own Base.Broadcast.broadcast_shape gives the same size in "
                          "Julia's order; plan(f, a, b) gives the library's answer with the rest",
    "bc_shape_broadcast_n": "as bc_shape_broadcast",
    "bc_shape_is_broadcastable": "as bc_shape_broadcast",
    "bc_tensor_empty": "a Julia array becomes a Tensor (Tensor(zeros(Float32, 3))), so the "
                       "library's constructors are not needed",
    "bc_tensor_zeros": "as bc_tensor_empty",
    "bc_tensor_ones": "as bc_tensor_empty",
    "bc_tensor_full": "as bc_tensor_empty",
    "bc_tensor_from_data": "Tensor(A) views A's memory, or a Julia copy of it (collect) when it "
                           "cannot be viewed",
    "bc_tensor_is_live": "a Tensor's handle is swapped to C_NULL when closed, so a live Tensor "
                         "never holds a freed handle (isopen)",
    "bc_tensor_contiguous": "Array(t) is the contiguous copy Julia code uses",
    "bc_tensor_offset": "the package reads elements through bc_tensor_data, which includes the "
                        "offset",
    "bc_dtype_size": "sizeof(eltype(t)) in Julia",
    "bc_dtype_name": "eltype(t) names the Julia type",
    "bc_tensor_broadcast_to": "expand(t, sizes...) is the view (PyTorch's expand and "
                              "broadcast_to differ only in accepting -1)",
    "bc_tensor_expand_as": "expand(t, size(other)...)",
    "bc_tensor_transpose": "permutedims(t, perm) is the view, for any two dimensions",
    "bc_tensor_as_strided": "an unchecked view (the caller vouches for sizes and strides): "
                            "Julia code makes such views with Base's strided views of its array "
                            "(view, reshape, PermutedDimsArray), which Tensor(A) wraps",
    "bc_tensor_view": "reshape(t, dims...) is bc_tensor_reshape, a view whenever the strides "
                      "allow one, as Julia's reshape is",
    "bc_tensor_unsqueeze": "reshape(t, dims...) with a size 1 added",
    "bc_tensor_flatten": "vec(t) is reshape(t, :), which is the flattening in Julia's order",

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
    # The operation tables are generated into ops.jl, which the package includes.
    ops_path = os.path.join(os.path.dirname(src_path), "ops.jl")
    src += "\n" + open(ops_path).read()
    table = re.search(r"const FUNCTIONS = \((.*?)\n\)", src, re.S)
    if not table:
        sys.exit(f"{src_path}: no `const FUNCTIONS = (...)` table")
    listed = set(re.findall(r":(bc_\w+)", table.group(1)))
    used = set(re.findall(r":(bc_\w+)", src[: table.start()] + src[table.end():]))
    lib = ctypes.CDLL(lib_path)
    problems = [f"{s}: used but not in FUNCTIONS" for s in sorted(used - listed)]
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
