#!/usr/bin/env python3
"""The C ABI only grows: every function, constant and type of an earlier header is still there,
unchanged, and every earlier function is exported by the built library.

Usage: scripts/abi_check.py path/to/libbroadcast.so

The earlier headers are abi/broadcast-*.h.txt, kept as they were: 0.1.0 (the previous release)
and 0.2.0-dev (the API as it stood on 2026-11-28, before generating exports from the tables). A function's prototype is compared with
whitespace, comments, `BC_MUST_USE` and the `struct` keyword folded (none of them changes the
ABI); a constant by its value (the BC_VERSION_* macros excepted); a type by its whole
definition. Exits 1 naming every difference.
"""
import glob
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_api_doc import items  # noqa: E402  (the same reading of the header as docs/api.md)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def norm(decl):
    decl = re.sub(r"/\*.*?\*/|//[^\n]*", " ", decl, flags=re.S)  # comments are not the ABI
    decl = decl.replace("BC_MUST_USE", "")
    decl = re.sub(r"\bstruct\s+(?=\w+\s*\*)", "", decl)
    return " ".join(decl.replace("(", " ( ").replace(")", " ) ").replace(",", " , ").split())


def surface(path):
    with open(path) as f:
        entries = items(f.read())
    out = {}
    for kind, name, decl, _ in entries:
        if name.startswith("BC_VERSION_"):
            continue  # the version grows by design
        key = (kind, name)
        # A type may be declared twice (C and C++ forms of one enum); keep every form.
        out.setdefault(key, set()).add(norm(decl))
    return out


def exported(lib):
    text = subprocess.run(
        ["nm", "-D", "--defined-only", lib], capture_output=True, text=True, check=True
    ).stdout
    return {line.split()[-1] for line in text.splitlines() if line.split()[-1].startswith("bc_")}


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    now = surface(os.path.join(ROOT, "include", "broadcast.h"))
    symbols = exported(sys.argv[1])
    problems = []
    bases = sorted(glob.glob(os.path.join(ROOT, "abi", "broadcast-*.h.txt")))
    if not bases:
        problems.append("no earlier header in abi/")
    for base in bases:
        label = os.path.basename(base)
        for (kind, name), forms in surface(base).items():
            if (kind, name) not in now:
                problems.append(f"{label}: {kind} {name} is gone")
            elif not forms <= now[(kind, name)]:
                problems.append(
                    f"{label}: {kind} {name} changed:\n    was {sorted(forms)}\n    now "
                    f"{sorted(now[(kind, name)])}"
                )
            if kind == "function" and name not in symbols:
                problems.append(f"{label}: function {name} is not exported by {sys.argv[1]}")
    for p in problems:
        print(f"abi: {p}")
    counts = {k: sum(1 for key in now if key[0] == k) for k in ("function", "define", "type")}
    print(
        f"abi: {len(bases)} earlier headers checked against {counts['function']} functions, "
        f"{counts['define']} constants and {counts['type']} types; {len(problems)} problems"
    )
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
