#!/usr/bin/env python3
"""Runs the README's quick-start build lines exactly as written, against this checkout and against
an installed prefix, and checks that each program runs and prints the quick start's first line.

Usage: scripts/quickstart_check.py PREFIX   (PREFIX: where `make install` put the library)

Each block follows a `<!-- quickstart: LANG -->` marker and holds two parts, headed by the comment
lines `# in the checkout` and `# against an installed prefix`. C and C++ parts run in the
repository's root; Go parts run in a new folder holding the Go quick start as `main.go`. Every part
runs in `bash -eu` with PREFIX and LIBBROADCAST (this checkout) set, LD_LIBRARY_PATH unset and
PKG_CONFIG_PATH cleared, so a line that leaves out what makes the program load fails here.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PARTS = ("# in the checkout", "# against an installed prefix")
EXPECT = "(4,1) + (4,) ->"


def blocks(readme):
    found = re.findall(r"<!-- quickstart: (\w+) -->\n```sh\n(.*?)```\n", readme, re.S)
    for lang, body in found:
        lines = body.splitlines()
        heads = [i for i, line in enumerate(lines) if line in PARTS]
        if [lines[i] for i in heads] != list(PARTS):
            sys.exit(f"quick start '{lang}': expected the parts {PARTS}, found {heads}")
        yield lang, "checkout", "\n".join(lines[heads[0] + 1 : heads[1]])
        yield lang, "prefix", "\n".join(lines[heads[1] + 1 :])


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    prefix = os.path.abspath(sys.argv[1])
    with open(os.path.join(ROOT, "README.md")) as f:
        readme = f.read()
    env = dict(os.environ, PREFIX=prefix, LIBBROADCAST=ROOT, PKG_CONFIG_PATH="")
    env.pop("LD_LIBRARY_PATH", None)
    # The Go tool may not reach a module proxy; the quick start needs only the local module.
    env.update(GOFLAGS="-mod=mod", GOPROXY="off")
    ran = set()
    failed = 0
    for lang, where, script in blocks(readme):
        with tempfile.TemporaryDirectory() as tmp:
            cwd = ROOT
            if lang == "go":
                cwd = tmp
                shutil.copy(
                    os.path.join(ROOT, "bindings/go/examples/quickstart/main.go"), tmp
                )
            run = subprocess.run(
                ["bash", "-euc", script],
                cwd=cwd,
                env=env,
                capture_output=True,
                text=True,
            )
        said = run.stdout + run.stderr
        printed = [line for line in run.stdout.splitlines() if line.startswith(EXPECT)]
        ok = run.returncode == 0 and len(printed) == 1
        print(f"quick start {lang}, {where}: {'ran as written' if ok else 'FAILED'}")
        if not ok:
            failed += 1
            print(f"--- script:\n{script}\n--- exit {run.returncode}, output:\n{said}")
        ran.add(lang)
    if ran != {"c", "cpp", "go"}:
        print(f"quick starts found: {sorted(ran)}; expected c, cpp and go")
        failed += 1
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
