#!/usr/bin/env python3
"""Writes tests/data/pytorch/where_layout.jsonl: the strides PyTorch gives the new result of
`torch.where(cond, a, b)` for operands of many layouts (permuted, reversed, stepped, expanded,
odd strides on size-1 dimensions, channels-last), shapes that broadcast, a uint8 condition (which
PyTorch converts to bool first) and `a`/`b` of another type than the result (converted first too).
Run with a Python that has PyTorch (the data was generated with PyTorch 2.15 CPU):

    python scripts/gen_where_layout.py > tests/data/pytorch/where_layout.jsonl

then update tests/data/pytorch/SHA256SUMS. The cases come from a fixed seed, so a rerun with the
same PyTorch gives the same file.

Each row: `cond`, `a` and `b` (`dtype`, `shape`, `strides` in elements), then the result's
`dtype`, `shape` and `strides`.
"""
import json
import random
import sys
import warnings

import torch

from gen_layout_extra import DTYPES, dense, geometry, result, view


def three_shapes(rng):
    """Three shapes that broadcast together: equal ones, or the full shape with some sizes set
    to 1 and some leading dimensions dropped."""
    nd = rng.choice([0, 1, 2, 2, 3, 3, 3, 4, 4, 5])
    full = [rng.choice([0, 1, 2, 3, 4]) if rng.random() < 0.1 else rng.choice([1, 2, 3, 4])
            for _ in range(nd)]
    if rng.random() < 0.35:
        return [list(full) for _ in range(3)]

    def part():
        s = [1 if rng.random() < 0.4 else n for n in full]
        return s[rng.randrange(len(s) + 1):] if rng.random() < 0.4 else s

    shapes = [list(full), part(), part()]
    rng.shuffle(shapes)
    return shapes


def operand(dtype, shape, strides):
    return {"dtype": dtype, "shape": shape, "strides": strides}


def row(cond, a, b):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the uint8 condition's deprecation warning
        r = torch.where(view(*cond), view(*a), view(*b))
    return {"cond": operand(*cond), "a": operand(*a), "b": operand(*b), **result(r)}


def random_rows(rng, n):
    rows = []
    for _ in range(n):
        sc, sa, sb = three_shapes(rng)
        dc = "uint8" if rng.random() < 0.15 else "bool"
        da = rng.choice(list(DTYPES))
        db = da if rng.random() < 0.6 else rng.choice(list(DTYPES))
        rows.append(row((dc, sc, geometry(rng, sc)), (da, sa, geometry(rng, sa)),
                        (db, sb, geometry(rng, sb))))
    return rows


def channels_last_rows(rng, n):
    """4-d operands of one shape, each channels-last or row-major."""
    rows = []
    for _ in range(n):
        shape = [rng.choice([1, 2, 3]) for _ in range(4)]
        pick = lambda: rng.choice([dense(shape, [1, 3, 2, 0]), dense(shape, [3, 2, 1, 0])])
        dt = rng.choice(list(DTYPES))
        rows.append(row(("bool", shape, pick()), (dt, shape, pick()), (dt, shape, pick())))
    return rows


def main():
    rng = random.Random(11)
    for r in random_rows(rng, 1200) + channels_last_rows(rng, 150):
        sys.stdout.write(json.dumps(r, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
