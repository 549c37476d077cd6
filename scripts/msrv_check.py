#!/usr/bin/env python3
"""The stated Rust minimum (Cargo.toml's rust-version) is true for the committed Cargo.lock.

No older toolchain can be installed here, so this checks what the compiler would check: every
package the lockfile resolves for the workspace (build, dev and tool dependencies included, since
`make demo` and `make test` build them) states a rust-version, or an edition, that the stated
minimum satisfies. Edition 2024 needs 1.85, edition 2021 needs 1.56. Exits 1 naming each package
that needs a newer compiler.
"""
import json
import subprocess
import sys

EDITION_MIN = {"2015": (1, 0), "2018": (1, 31), "2021": (1, 56), "2024": (1, 85)}


def version(text):
    return tuple(int(p) for p in text.split(".")[:2])


meta = json.loads(
    subprocess.check_output(["cargo", "metadata", "--format-version", "1", "--locked"])
)
root = next(p for p in meta["packages"] if p["id"] == meta["resolve"]["root"])
stated = version(root["rust_version"])
late = []
for p in meta["packages"]:
    need = max(version(p["rust_version"] or "0"), EDITION_MIN.get(p["edition"], (0, 0)))
    if need > stated:
        late.append(f"{p['name']} {p['version']} needs Rust {need[0]}.{need[1]}")
if late:
    print(f"Cargo.toml says rust-version {root['rust_version']}, but the lockfile has:")
    print("\n".join("  " + x for x in sorted(late)))
    sys.exit(1)
print(f"rust-version {root['rust_version']} holds for all {len(meta['packages'])} locked packages")
