#!/usr/bin/env python3
"""NumPy peer for bench-compare: the same cases, inputs and protocol as limit.c.

One command per line on stdin, one answer line on stdout:
  case  <S1..S12|S2.op|L1|L2> <alloc|out> <reps> [warm ms]  -> "ok <median ms> <variant>"
  sweep <elements> <alloc|out> <reps> [warm ms]       -> "ok <median ms> <variant>"
  quit
alloc = `f(a, b)` (a new array per call, f = np.add, ...); out = `f(a, b, out=o)` into a reused,
touched array;
S9 is `np.add(a, b, out=a)` for both. NumPy runs on one thread. Timing as limit.c: a sample is a
batch of K calls lasting >= min_batch_ms; the answer is the median per-call time of <reps>
samples after a warm-up of at least two samples and [warm ms].
"""
import statistics
import sys
import time
import timeit

import numpy as np

N = 4096
# name: dtype, a shape, b shape, op, kind
CASES = {
    "S1": ("f4", (N, N), (N, N), "add", "plain"),
    "S2": ("f4", (N, N), (N,), "add", "plain"),
    "S3": ("f4", (N, N), (N, 1), "add", "plain"),
    "S4": ("f4", (N, 1), (1, N), "add", "plain"),
    "S5": ("f4", (N, N), (), "add", "plain"),
    "S6": ("f4", (32, 64, 56, 56), (1, 64, 1, 1), "add", "plain"),
    "S7": ("f4", (512, 3, 1024, 1), (3, 1, 1), "add", "plain"),
    "S8": ("f4", (N, N), (N, N), "add", "transpose_a"),
    "S9": ("f4", (N, N), (N,), "add", "inplace"),
    "S10": ("f8", (N, N), (N,), "add", "plain"),
    "S11": ("i4", (N, N), (N,), "add", "plain"),
    "S12": ("f4", (N, N), (N,), "div", "plain"),
    "L1": ("f4", (3, 1), (1, 3), "add", "plain"),
    "L2": ("f4", (4,), (4,), "add", "plain"),
}
# The further memory-bound operations on S2's shapes (bool results for comparisons and logic).
for _name, _dt, _op in [
    ("eq", "f4", "equal"), ("ne", "f4", "not_equal"), ("lt", "f4", "less"),
    ("le", "f4", "less_equal"), ("gt", "f4", "greater"), ("ge", "f4", "greater_equal"),
    ("max", "f4", "maximum"), ("min", "f4", "minimum"), ("land", "f4", "logical_and"),
    ("lor", "f4", "logical_or"), ("lxor", "f4", "logical_xor"), ("and", "i4", "bitwise_and"),
    ("or", "i4", "bitwise_or"), ("xor", "i4", "bitwise_xor"), ("shl", "i4", "left_shift"),
    ("shr", "i4", "right_shift"),
]:
    CASES["S2." + _name] = (_dt, (N, N), (N,), _op, "plain")


def fill(shape, dt, seed):
    n = 1
    for d in shape:
        n *= d
    i = np.arange(n, dtype=np.int64)
    if dt == "i4":
        x = ((i * 7 + seed) % 97 + 1).astype(np.int32)
    else:
        x = (((i * 7 + seed) % 97) * 0.25 + 1.0).astype(dt)
    return x.reshape(shape)


def measure(stmt, ns, reps, min_batch_ms, warm_ms):
    t = timeit.Timer(stmt, globals=ns)
    k = 1
    while True:
        dt = t.timeit(k)
        if dt * 1e3 >= min_batch_ms or k >= 1 << 24:
            break
        k = min(k * 16, int(k * (min_batch_ms * 1e-3) / max(dt, 1e-9) * 1.2) + 1)
    w0, w = time.perf_counter(), 0
    while w < 2 or (time.perf_counter() - w0) * 1e3 < warm_ms:
        t.timeit(k)
        w += 1
    return statistics.median(t.timeit(k) / k * 1e3 for _ in range(reps))


state = {"key": None, "ns": None}


def setup(key, build):
    if state["key"] != key:
        state["ns"] = None
        state["ns"] = build()
        state["key"] = key
    return state["ns"]


def build_case(name):
    dt, ash, bsh, op, kind = CASES[name]
    if kind == "transpose_a":
        a = fill((ash[1], ash[0]), dt, 1).T  # a non-contiguous view, like the others get
    else:
        a = fill(ash, dt, 1)
    b = fill(bsh, dt, 2)
    ufunc = {"add": np.add, "div": np.divide}.get(op) or getattr(np, op)
    o = np.zeros(np.broadcast_shapes(a.shape, b.shape), dtype=ufunc(a.flat[:1], b.flat[:1]).dtype)
    o.fill(0)
    return {"np": np, "a": a, "b": b, "o": o, "f": ufunc, "kind": kind}


def build_sweep(elems):
    rows = max(1, elems // 1024)
    a = fill((rows, 1024), "f4", 1)
    b = fill((1024,), "f4", 2)
    o = np.zeros((rows, 1024), dtype="f4")
    o.fill(0)
    return {"np": np, "a": a, "b": b, "o": o, "f": np.add, "kind": "plain"}


def main():
    for line in sys.stdin:
        parts = line.split()
        if not parts or parts[0] == "quit":
            break
        try:
            cmd, name, variant, reps = parts[0], parts[1], parts[2], int(parts[3])
            warm_ms = float(parts[4]) if len(parts) > 4 else 0.0
            if cmd == "sweep":
                ns = setup(("sweep", name), lambda: build_sweep(int(name)))
                min_batch = 2.0
            else:
                ns = setup(("case", name), lambda: build_case(name))
                min_batch = 2.0 if cmd == "lat" or name in ("L1", "L2") else 1.0
            if ns["kind"] == "inplace":
                stmt, which = "f(a, b, out=a)", "inplace"
            elif variant == "out":
                stmt, which = "f(a, b, out=o)", "out"
            else:
                stmt, which = "f(a, b)", "alloc"
            ms = measure(stmt, ns, reps, min_batch, warm_ms)
            print(f"ok {ms:.6g} {which}", flush=True)
        except Exception as e:  # report and keep serving
            print(f"err {type(e).__name__}: {e}", flush=True)


if __name__ == "__main__":
    main()
