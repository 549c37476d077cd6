#!/usr/bin/env python3
"""Generates tests/data/pytorch/reduced_scalar.jsonl from PyTorch (2.15, CPU).

float16 / bfloat16 tensors with a one-element operand of another type, for add, sub, mul and
div, in both operand orders, out of place and in place: PyTorch's CPU mul and div kernels read a
one-element second operand in float32 from its own type. Rows have the format
of values.jsonl. Run with the PyTorch environment's python:

    /work/torchenv/bin/python scripts/gen_reduced_scalar.py > tests/data/pytorch/reduced_scalar.jsonl
"""
import json
import random

import torch

random.seed(20260710)
torch.manual_seed(20260710)

HALF = [torch.float16, torch.bfloat16]
OTHER = [torch.float32, torch.float64, torch.int64, torch.int32, torch.int16, torch.int8,
         torch.uint8, torch.bool, torch.float16, torch.bfloat16]
OPS = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div}
NAME = {torch.bool: "bool", torch.uint8: "uint8", torch.int8: "int8", torch.int16: "int16",
        torch.int32: "int32", torch.int64: "int64", torch.float16: "float16",
        torch.bfloat16: "bfloat16", torch.float32: "float32", torch.float64: "float64"}


def values(t):
    """Exact JSON values: floats of the 16-bit types as the float32 they widen to."""
    flat = t.reshape(-1)
    if t.dtype == torch.bool:
        return [bool(x) for x in flat.tolist()]
    if t.dtype.is_floating_point:
        return [float(x) for x in flat.to(torch.float64).tolist()]
    return [int(x) for x in flat.tolist()]


def operand(t, storage, layout):
    return {"dtype": NAME[t.dtype], "shape": list(t.shape), "strides": list(t.stride()),
            "offset": t.storage_offset(), "storage": values(storage), "layout": layout}


def half_tensor(dtype):
    shape = random.choice([(3,), (2, 3), (), (1,), (4, 1)])
    base = torch.randn(12, dtype=torch.float64) * random.choice([1, 4, 25])
    base = base.to(dtype)
    n = 1
    for d in shape:
        n *= d
    if len(shape) == 2 and random.random() < 0.5:  # a transposed view
        t = base[: n].reshape(shape[::-1]).t()
        return t, base[: n], "permuted"
    t = base[: n].reshape(shape)
    return t, base[: n], "contiguous"


def one_element(dtype, op):
    if dtype == torch.bool:
        v = torch.tensor([True])
    elif dtype.is_floating_point:
        mag = random.choice([1 / 3, 0.1, 2049.0, 3.0000001, 1e-2, 7.77, 1000.3])
        v = torch.tensor([mag * random.choice([1, -1]) * random.uniform(0.5, 2.0)], dtype=torch.float64)
        v = v.to(dtype)
    else:
        hi = {torch.uint8: 255, torch.int8: 127}.get(dtype, 2049)
        lo = 1 if dtype == torch.uint8 else -hi
        x = 0
        while x == 0:
            x = random.randint(lo, hi)
        v = torch.tensor([x], dtype=dtype)
    form = random.choice(["0d", "0d", "1", "11", "expanded"])
    if form == "0d":
        return v.reshape(()), v, "contiguous"
    if form == "1":
        return v, v, "contiguous"
    if form == "11":
        return v.reshape(1, 1), v, "contiguous"
    return v.expand(3), v, "expanded"


rows = []
for trial in range(1700):
    hd = random.choice(HALF)
    sd = random.choice(OTHER + OTHER[:5])
    op = random.choice(["add", "sub", "mul", "mul", "mul", "div", "div", "div"])
    if op == "sub" and sd == torch.bool:
        continue
    a, a_storage, a_layout = half_tensor(hd)
    s, s_storage, s_layout = one_element(sd, op)
    order = random.choice(["ts", "ts", "ts", "st"])
    x, y = (a, s) if order == "ts" else (s, a)
    xo = operand(*((a, a_storage, a_layout) if order == "ts" else (s, s_storage, s_layout)))
    yo = operand(*((s, s_storage, s_layout) if order == "ts" else (a, a_storage, a_layout)))
    try:
        r = OPS[op](x, y)
    except RuntimeError:
        continue
    if not r.dtype in HALF or not torch.isfinite(r.to(torch.float32)).all():
        continue
    rows.append({"op": op, "inplace": False, "a": xo, "b": yo,
                 "result": {"dtype": NAME[r.dtype], "shape": list(r.shape), "data": values(r)}})
    if order == "ts" and r.shape == a.shape and random.random() < 0.4:
        storage = a_storage.clone()
        target = torch.as_strided(storage, a.shape, a.stride(), a.storage_offset())
        getattr(target, op + "_")(s)
        rows.append({"op": op, "inplace": True, "a": xo, "b": yo,
                     "result": {"dtype": NAME[target.dtype], "shape": list(target.shape),
                                "data": values(target), "storage_after": values(storage)}})

for row in rows:
    print(json.dumps(row, separators=(",", ":")))
