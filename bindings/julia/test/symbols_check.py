#!/usr/bin/env python3
"""The Julia package calls the C library only through `fn(:bc_...)`, which looks the symbol up in
the table `__init__` fills from `FUNCTIONS`: a symbol used but not listed there fails at run time
(a KeyError), and one listed but missing from the library fails at load. Julia is not needed: this
reads the package source and checks every `:bc_*` symbol it names against `FUNCTIONS` and against
the library's exports, and every `BC_*` constant it names against its generated codes.jl.

Usage: python3 symbols_check.py LibBroadcast.jl path/to/libbroadcast.so
"""
import ctypes
import re
import sys

src_path, lib_path = sys.argv[1], sys.argv[2]
src = open(src_path).read()
table = re.search(r"const FUNCTIONS = \((.*?)\n\)", src, re.S)
if not table:
    sys.exit(f"{src_path}: no `const FUNCTIONS = (...)` table")
listed = set(re.findall(r":(bc_\w+)", table.group(1)))
used = set(re.findall(r":(bc_\w+)", src[: table.start()] + src[table.end():]))
lib = ctypes.CDLL(lib_path)
problems = [f"{s}: used but not in FUNCTIONS" for s in sorted(used - listed)]
problems += [f"{s}: in FUNCTIONS but not exported by {lib_path}" for s in sorted(listed)
             if not hasattr(lib, s)]
# Every C constant the package names must be one its generated codes.jl defines (a misspelt name
# would fail only when Julia reaches it).
codes_path = src_path.rsplit("/", 1)[0] + "/codes.jl" if "/" in src_path else "codes.jl"
defined = set(re.findall(r"^const (BC_\w+) =", open(codes_path).read(), re.M))
named = {n for n in re.findall(r"\b(BC_[A-Z0-9_]+)\b", src) if not n.endswith("_")}  # not BC_OP_*
problems += [f"{s}: named but not defined in codes.jl" for s in sorted(named - defined)]
# A code is written by its name, never as a number that could drift from the library's.
problems += [f"a literal code {m}: name it (codes.jl)" for m in re.findall(r"Int32\(-?\d+\)", src)]
for p in problems:
    print(f"julia symbols: {p}")
print(f"julia symbols: {len(used)} used, {len(listed)} listed, {len(named)} constants named, "
      f"{len(problems)} problems")
sys.exit(1 if problems else 0)
