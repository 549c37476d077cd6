#!/usr/bin/env python3
"""Writes tests/data/pytorch/layout_extra.jsonl: the strides PyTorch gives the new result of an
elementwise operation, for operand layouts that layout.jsonl (which follows the value files)
meets rarely or never: up to seven dimensions, sizes 0 and 1 with odd strides, expanded and
stepped operands, channels-last pairs, operands of another type than the computation type (which
PyTorch converts first), and a tensor with a Python number on either side. Run with a Python that
has PyTorch (the data was generated with PyTorch 2.15 CPU):

    python scripts/gen_layout_extra.py > tests/data/pytorch/layout_extra.jsonl

then update tests/data/pytorch/SHA256SUMS. The cases come from a fixed seed, so a rerun with the
same PyTorch gives the same file.

Each row: `op` (add, sub, mul, div), `a` and `b` (`dtype`, `shape`, `strides` in elements) or, for
a number, `scalar` (`type` int, float or bool, and `value`) with `order` (tensor_scalar or
scalar_tensor) in place of `b`, then the result's `dtype`, `shape` and `strides`.
"""
import json
import random
import sys

import torch

DTYPES = {
    "bool": torch.bool,
    "uint8": torch.uint8,
    "int32": torch.int32,
    "int64": torch.int64,
    "float16": torch.float16,
    "float32": torch.float32,
    "float64": torch.float64,
}
OPS = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div}


def view(dtype, shape, strides):
    """A view with this geometry of a zero storage just large enough."""
    span = 1 + sum((n - 1) * s for n, s in zip(shape, strides)) if all(shape) else 1
    return torch.zeros(span, dtype=DTYPES[dtype]).as_strided(shape, strides)


def dense(shape, order):
    """Dense strides with the dimensions of `order` fastest first."""
    strides, step = [0] * len(shape), 1
    for d in order:
        strides[d] = step
        step *= max(shape[d], 1)
    return strides


def geometry(rng, shape):
    """Strides for `shape`: dense in some order, then perhaps stepped, perhaps expanded, with odd
    strides on some size-1 dimensions."""
    order = list(range(len(shape)))[::-1]
    kind = rng.choice(["row", "perm", "perm", "rev", "step", "expand"])
    if kind in ("perm", "step", "expand"):
        rng.shuffle(order)
    elif kind == "rev":
        order.reverse()
    strides = dense(shape, order)
    if kind == "step":
        strides = [s * rng.choice([1, 2, 3]) for s in strides]
    if kind == "expand":
        strides = [0 if n > 1 and rng.random() < 0.4 else s for n, s in zip(shape, strides)]
    return [rng.choice([s, 7, 1]) if n == 1 else s for n, s in zip(shape, strides)]


def shapes(rng):
    """Two broadcastable shapes, or equal ones."""
    nd = rng.choice([0, 1, 2, 2, 3, 3, 4, 4, 5, 6, 7])
    full = [rng.choice([0, 1, 2, 2, 3, 4]) if rng.random() < 0.1 else rng.choice([1, 2, 3, 4])
            for _ in range(nd)]
    if rng.random() < 0.35:
        return full, list(full)
    other = [1 if rng.random() < 0.4 else n for n in full]
    other = other[rng.randrange(len(other) + 1):] if rng.random() < 0.5 else other
    return (full, other) if rng.random() < 0.5 else (other, full)


def dtype_pair(rng):
    if rng.random() < 0.5:
        d = rng.choice(list(DTYPES))
        return d, d
    return rng.choice(list(DTYPES)), rng.choice(list(DTYPES))


def tensor_rows(rng, n):
    rows = []
    while len(rows) < n:
        op = rng.choice(list(OPS))
        sa, sb = shapes(rng)
        da, db = dtype_pair(rng)
        if op == "sub" and "bool" in (da, db):
            continue
        rows.append(tensor_row(op, (da, sa, geometry(rng, sa)), (db, sb, geometry(rng, sb))))
    return rows


def tensor_row(op, a, b):
    """The row of `a op b` for operands given as (dtype, shape, strides)."""
    r = OPS[op](view(*a), view(*b))
    operand = lambda o: {"dtype": o[0], "shape": o[1], "strides": o[2]}
    return {"op": op, "a": operand(a), "b": operand(b), **result(r)}


def result(r):
    return {"dtype": str(r.dtype).replace("torch.", ""), "shape": list(r.shape),
            "strides": list(r.stride())}


def channels_last_rows(rng, n):
    """4-d pairs of one shape, both channels-last or one of them row-major."""
    rows = []
    for _ in range(n):
        shape = [rng.choice([1, 2, 3]) for _ in range(4)]
        cl = dense(shape, [1, 3, 2, 0])
        gb = rng.choice([cl, dense(shape, [3, 2, 1, 0])])
        ga = [rng.choice([s, 5]) if n == 1 else s for n, s in zip(shape, cl)]
        da, db = dtype_pair(rng)
        op = "add" if "bool" in (da, db) else rng.choice(list(OPS))
        rows.append(tensor_row(op, (da, shape, ga), (db, shape, gb)))
    return rows


def scalar_rows(rng, n):
    rows = []
    while len(rows) < n:
        op = rng.choice(list(OPS))
        shape, _ = shapes(rng)
        dt = rng.choice(list(DTYPES))
        kind = rng.choice(["int", "float", "bool"])
        value = {"int": 3, "float": 2.5, "bool": True}[kind]
        if op == "sub" and (dt == "bool" or kind == "bool"):
            continue
        g = geometry(rng, shape)
        t = view(dt, shape, g)
        order = rng.choice(["tensor_scalar", "scalar_tensor"])
        r = OPS[op](t, value) if order == "tensor_scalar" else OPS[op](value, t)
        rows.append({
            "op": op,
            "order": order,
            "a": {"dtype": dt, "shape": shape, "strides": g},
            "scalar": {"type": kind, "value": value},
            **result(r),
        })
    return rows


def main():
    rng = random.Random(15)
    rows = tensor_rows(rng, 1500) + channels_last_rows(rng, 200) + scalar_rows(rng, 400)
    for row in rows:
        sys.stdout.write(json.dumps(row, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
