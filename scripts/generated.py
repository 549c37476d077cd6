"""What the generators share: write their files, or with --check say which differ."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def write_or_check(outputs, script):
    """Writes each text of `outputs` (path -> text) where it differs from the file; with --check
    on the command line writes nothing, exits 1 naming the stale files, and returns True when
    every file matches (for the caller's message)."""
    check = sys.argv[1:] == ["--check"]
    stale = []
    for path, text in outputs.items():
        old = open(path).read() if os.path.exists(path) else None
        if old == text:
            continue
        if check:
            stale.append(os.path.relpath(path, ROOT))
        else:
            with open(path, "w") as f:
                f.write(text)
    if stale:
        sys.exit(f"out of date: {', '.join(stale)}: run python3 scripts/{script} and commit")
    return check
