#!/usr/bin/env python3
"""Writes tests/data/pytorch/views.jsonl: what PyTorch does for view, reshape, unsqueeze, squeeze
and flatten on strided inputs (result shape, strides, offset, and whether it shares the input's
memory), or its exact error text. Run with a Python that has PyTorch (the data was generated with
PyTorch 2.15 CPU):

    python scripts/gen_views_data.py > tests/data/pytorch/views.jsonl

then update tests/data/pytorch/SHA256SUMS. The cases are fixed (no randomness), so a rerun with the
same PyTorch gives the same file.
"""
import json
import sys

import torch


def operand(shape, strides, offset):
    """A float32 view of an arange storage with the given geometry."""
    span = 1 + offset + sum((n - 1) * s for n, s in zip(shape, strides)) if all(shape) else 1 + offset
    base = torch.arange(max(span, 1), dtype=torch.float32)
    return base.as_strided(shape, strides, offset)


def inputs():
    """(shape, strides, offset) of the inputs: contiguous, permuted, stepped, expanded, with
    size-0 and size-1 dimensions (odd strides on size-1 dimensions too), 0-d."""
    return [
        ([], [], 0),
        ([], [], 3),
        ([1], [1], 0),
        ([6], [1], 0),
        ([6], [2], 1),
        ([6], [0], 2),
        ([2, 3], [3, 1], 0),
        ([2, 3], [1, 2], 0),
        ([3, 2], [1, 3], 0),
        ([2, 3], [6, 2], 1),
        ([2, 3], [0, 1], 0),
        ([2, 3], [3, 0], 0),
        ([4, 1], [1, 7], 2),
        ([1, 4], [9, 1], 0),
        ([2, 1, 3], [3, 3, 1], 0),
        ([2, 1, 3], [3, 5, 1], 0),
        ([2, 3, 4], [12, 4, 1], 0),
        ([2, 3, 4], [1, 2, 6], 0),
        ([2, 3, 4], [12, 1, 3], 0),
        ([2, 3, 4], [24, 4, 1], 5),
        ([2, 3, 4], [0, 4, 1], 0),
        ([2, 3, 4], [12, 0, 1], 0),
        ([2, 3, 4], [4, 0, 1], 0),
        ([4, 3, 2], [1, 4, 12], 0),
        ([2, 2, 2, 2], [8, 4, 2, 1], 0),
        ([2, 2, 2, 2], [8, 2, 4, 1], 0),
        ([3, 1, 1, 2], [2, 1, 1, 1], 0),
        ([0], [1], 0),
        ([0, 3], [3, 1], 0),
        ([3, 0], [1, 3], 0),
        ([2, 0, 3], [0, 3, 1], 0),
        ([1, 0], [5, 1], 0),
    ]


def view_sizes(shape):
    """Sizes to ask for: every factorisation-like reshuffle of the element count, with -1 in
    each position, and some that cannot work."""
    numel = 1
    for n in shape:
        numel *= n
    out = [[], [-1], [numel], [1, numel], [numel, 1], [-1, 1], [1, -1, 1]]
    for a in range(1, 7):
        if numel % a == 0:
            out += [[a, numel // a], [a, -1], [-1, a], [a, 1, numel // a]]
            b_all = numel // a
            for b in range(1, 5):
                if b_all % b == 0:
                    out += [[a, b, b_all // b], [a, b, -1]]
    out += [list(shape), list(reversed(shape)), [numel + 1], [-1, -1], [-2, numel], [2, -3],
            [0, -1], [-1, 0], [0], [0, 3], [5, -1], [2 ** 62, 4], [-1, 2 ** 62]]
    seen, uniq = set(), []
    for s in out:
        if tuple(s) not in seen:
            seen.add(tuple(s))
            uniq.append(s)
    return uniq


def classify(e):
    msg = str(e)
    if isinstance(e, IndexError):
        return "dim"
    if "integer multiplication overflow" in msg:
        return "overflow"
    if msg.startswith(("shape '", "view size", "cannot reshape")):
        return "shape"
    return "invalid"


def run(x, f):
    try:
        r = f(x)
    except (RuntimeError, IndexError) as e:
        return {"error": str(e), "kind": classify(e)}
    shares = r.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    return {"result": {"shape": list(r.shape), "strides": list(r.stride()),
                       "offset": r.storage_offset() if shares else 0, "view": shares}}


def main():
    rows = []
    for shape, strides, offset in inputs():
        x = operand(shape, strides, offset)
        inp = {"shape": shape, "strides": strides, "offset": offset}
        nd = len(shape)
        for op in ("view", "reshape"):
            for sizes in view_sizes(shape):
                rows.append({"op": op, "input": inp, "sizes": sizes,
                             **run(x, lambda t: getattr(t, op)(sizes))})
        for d in range(-nd - 2, nd + 2):
            rows.append({"op": "unsqueeze", "input": inp, "dim": d, **run(x, lambda t: t.unsqueeze(d))})
        rows.append({"op": "squeeze", "input": inp, "dim": None, **run(x, lambda t: t.squeeze())})
        for d in range(-nd - 2, nd + 2):
            rows.append({"op": "squeeze", "input": inp, "dim": d, **run(x, lambda t: t.squeeze(d))})
        for s in range(-nd - 2, nd + 1):
            for e in range(-nd - 1, nd + 2):
                rows.append({"op": "flatten", "input": inp, "start": s, "end": e,
                             **run(x, lambda t: t.flatten(s, e))})
    for row in rows:
        sys.stdout.write(json.dumps(row, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
