#!/usr/bin/env python3
"""NumPy and PyTorch peers for bench-compare: the same cases, inputs and protocol as limit.c.

`peer_py.py` is the NumPy peer (one thread); `peer_py.py torch <threads>` the PyTorch peer, with
`torch.set_num_threads(threads)`. Both answer every command (an "err" answer, e.g. NumPy asked for
bfloat16, leaves that cell empty).

One command per line on stdin, one answer line on stdout:
  case  <S1..S12|S2.op|P1|L1|L2> <alloc|out> <reps> [warm ms]        -> "ok <median ms> <variant>"
  sweep <elements> <alloc|out> <reps> [warm ms]                     -> "ok <median ms> <variant>"
  expr  <E1|E2|H1|H2> <alloc|out> <reps> [warm ms]                  -> "ok <median ms> <variant>"
  expr  H1 <alloc-fused|out-fused> <reps> [warm ms]                 -> PyTorch's one-pass form
  red   <R1|R2|F1|F2|M1..M6|H3|H4> alloc <reps> [warm ms]           -> "ok <median ms> <variant>"
  quit
alloc = `f(a, b)` (a new array per call, f = np.add, torch.add, ...); out = `f(a, b, out=o)` into
a reused, touched array; S9 is `f(a, b, out=a)` for both. The expressions, float32, (2048,2048)
with smaller operands: E1 `a * b + c` (PyTorch: `torch.addcmul(c, a, b)`, its one-pass form), E2
`maximum((x - m) / s * g + t, 0)`, five operations; `out` writes every step into `o`. The
reductions of a (4096,4096) float32 `a` with a (4096,) `b`: R1 `a.sum(1)`, R2 `a.sum(0)`, F1
`einsum('ij,j->j', a, b)` (each library's own way to do it without the product), F2
`(a * b).sum(0)` (PyTorch: `(a * b).sum_to_size(4096)`). The chains: H1 `a * b + c` (E1's
shapes) and H2 `(a * b + c) * s - d`, each operation its own call (PyTorch eager; H1 also as
`torch.addcmul`), H3 `((a - b) ** 2).mean(0)` and H4 `where(m, a, 0).sum()`. Timing as
limit.c: a sample is a batch of K calls lasting >= min_batch_ms; the answer is the median
per-call time of <reps> samples after a warm-up of at least two samples and [warm ms].
"""
import statistics
import sys
import time
import timeit

import numpy as np

TORCH = len(sys.argv) > 1 and sys.argv[1] == "torch"
if TORCH:
    import torch

    torch.set_num_threads(int(sys.argv[2]))

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
    "S2.f16": ("f2", (N, N), (N,), "add", "plain"),
    "S2.bf16": ("bf16", (N, N), (N,), "add", "plain"),
    "P1": ("f4", (64, 256, 256), (256, 1, 1), "add", "permute_a"),
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
# NumPy's ufunc names that PyTorch spells otherwise.
TORCH_NAMES = {
    "divide": "div", "equal": "eq", "not_equal": "ne", "less": "lt", "less_equal": "le",
    "greater": "gt", "greater_equal": "ge", "left_shift": "bitwise_left_shift",
    "right_shift": "bitwise_right_shift",
}

M = 2048
# name: input shapes, then the statements (NumPy alloc, NumPy out, PyTorch alloc, PyTorch out)
EXPRS = {
    "E1": (
        [(M, M), (M,), (M, 1)],
        "a * b + c",
        "np.multiply(a, b, out=o); np.add(o, c, out=o)",
        "torch.addcmul(c, a, b)",
        "torch.addcmul(c, a, b, out=o)",
    ),
    "E2": (
        [(M, M), (M, 1), (M, 1), (M,), (M,)],
        "np.maximum((a - b) / c * d + e, z)",
        "np.subtract(a, b, out=o); np.divide(o, c, out=o); np.multiply(o, d, out=o); "
        "np.add(o, e, out=o); np.maximum(o, z, out=o)",
        "torch.maximum((a - b) / c * d + e, z)",
        "torch.sub(a, b, out=o); torch.div(o, c, out=o); torch.mul(o, d, out=o); "
        "torch.add(o, e, out=o); torch.maximum(o, z, out=o)",
    ),
    # The chains: every operation its own call (PyTorch eager), and PyTorch's one-pass form where
    # it has one (asked as "alloc-fused" / "out-fused").
    "H1": (
        [(M, M), (M,), (M, 1)],
        "a * b + c",
        "np.multiply(a, b, out=o); np.add(o, c, out=o)",
        "a * b + c",
        "torch.mul(a, b, out=o); torch.add(o, c, out=o)",
        "torch.addcmul(c, a, b)",
        "torch.addcmul(c, a, b, out=o)",
    ),
    "H2": (  # s is the fifth input, here named e
        [(M, M), (M, 1), (M,), (1, M), ()],
        "(a * b + c) * e - d",
        "np.multiply(a, b, out=o); np.add(o, c, out=o); np.multiply(o, e, out=o); "
        "np.subtract(o, d, out=o)",
        "(a * b + c) * e - d",
        "torch.mul(a, b, out=o); torch.add(o, c, out=o); torch.mul(o, e, out=o); "
        "torch.sub(o, d, out=o)",
    ),
}


def fill(shape, dt, seed):
    n = 1
    for d in shape:
        n *= d
    i = np.arange(n, dtype=np.int64)
    if dt == "i4":
        x = ((i * 7 + seed) % 97 + 1).astype(np.int32)
    else:
        x = (((i * 7 + seed) % 97) * 0.25 + 1.0).astype("f4" if dt == "bf16" else dt)
    return x.reshape(shape)


def tensor(x, dt):
    """The peer's array for NumPy array `x` (same values; bfloat16 only in PyTorch)."""
    if TORCH:
        t = torch.from_numpy(np.ascontiguousarray(x))
        return t.to(torch.bfloat16) if dt == "bf16" else t
    if dt == "bf16":
        raise ValueError("NumPy has no bfloat16")
    return x


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


def namespace(**arrays):
    ns = {"np": np, "torch": torch if TORCH else None}
    ns.update(arrays)
    return ns


def build_case(name):
    dt, ash, bsh, op, kind = CASES[name]
    if kind == "transpose_a":
        # a non-contiguous view, like the others get
        a = tensor(fill((ash[1], ash[0]), dt, 1), dt).T
    elif kind == "permute_a":
        a = tensor(fill(ash, dt, 1), dt).permute(2, 0, 1) if TORCH else fill(ash, dt, 1).transpose(2, 0, 1)
    else:
        a = tensor(fill(ash, dt, 1), dt)
    b = tensor(fill(bsh, dt, 2), dt)
    op = "divide" if op == "div" else op
    f = getattr(torch, TORCH_NAMES.get(op, op)) if TORCH else getattr(np, op)
    # The result's type (bool for comparisons), from one element.
    one = f(a.reshape(-1)[:1], b.reshape(-1)[:1])
    if kind == "permute_a":
        # in a's layout, as the library's `out`
        o = torch.empty_like(a).zero_() if TORCH else np.zeros_like(a)
    else:
        shape = np.broadcast_shapes(ash, bsh)
        o = one.new_zeros(shape) if TORCH else np.zeros(shape, one.dtype)
    return namespace(a=a, b=b, o=o, f=f, kind=kind)


def build_expr(name):
    shapes = EXPRS[name][0]
    arrays = {k: tensor(fill(s, "f4", i + 1), "f4") for i, (k, s) in enumerate(zip("abcde", shapes))}
    return namespace(o=tensor(np.zeros((M, M), "f4"), "f4"), z=tensor(np.zeros((), "f4"), "f4"), **arrays)


REDUCTIONS = {
    "R1": ("a.sum(1)", "a.sum(1)"),
    "R2": ("a.sum(0)", "a.sum(0)"),
    "F1": ("np.einsum('ij,j->j', a, b)", "torch.einsum('ij,j->j', a, b)"),
    "F2": ("(a * b).sum(0)", "(a * b).sum_to_size(4096)"),
    "M1": ("np.exp(a)", "torch.exp(a)"),
    "M2": ("np.sqrt(a)", "torch.sqrt(a)"),
    "M3": ("np.abs(a)", "torch.abs(a)"),
    "M4": ("np.clip(a, lo, b)", "torch.clamp(a, lo, b)"),
    "M5": ("a + 0.3 * (e - a)", "torch.lerp(a, e, 0.3)"),
    "M6": ("a.var(0, ddof=1)", "a.var(0)"),
    # The reductions of the chains, each operation its own call (no library fuses them yet).
    "H3": ("((a - b) ** 2).mean(0)", "((a - b) ** 2).mean(0)"),
    "H4": ("np.where(m, a, z).sum()", "torch.where(m, a, 0).sum()"),
}


def build_reduction(name):
    a = tensor(fill((N, N), "f4", 1), "f4")
    if name == "H4":
        # The mask: true where input 3's value is at least 13 (about half), as the library's.
        m = tensor(fill((N, N), "f4", 3) >= 13.0, "bool")
        return namespace(a=a, m=m, z=tensor(np.zeros((), "f4"), "f4"), stmt=REDUCTIONS[name][TORCH])
    b = tensor(fill((N,), "f4", 2), "f4")
    lo, e = tensor(fill((N, 1), "f4", 3), "f4"), tensor(fill((N, N), "f4", 4), "f4")
    return namespace(a=a, b=b, lo=lo, e=e, stmt=REDUCTIONS[name][TORCH])


def build_sweep(elems):
    rows = max(1, elems // 1024)
    a = tensor(fill((rows, 1024), "f4", 1), "f4")
    b = tensor(fill((1024,), "f4", 2), "f4")
    o = tensor(np.zeros((rows, 1024), dtype="f4"), "f4")
    return namespace(a=a, b=b, o=o, f=torch.add if TORCH else np.add, kind="plain")


def main():
    for line in sys.stdin:
        parts = line.split()
        if not parts or parts[0] == "quit":
            break
        try:
            cmd, name, variant, reps = parts[0], parts[1], parts[2], int(parts[3])
            warm_ms = float(parts[4]) if len(parts) > 4 else 0.0
            if cmd == "expr":
                ns = setup(("expr", name), lambda: build_expr(name))
                fused = variant.endswith("-fused")
                if fused and not (TORCH and len(EXPRS[name]) > 5):
                    raise ValueError(f"no one-pass form of {name}")
                out = variant.startswith("out")
                stmt = EXPRS[name][5 + out if fused else 1 + 2 * TORCH + out]
                one_pass = (name == "E1" and TORCH) or fused
                which = ("addcmul" if one_pass else "eager") + ("-out" if out else "")
                print(f"ok {measure(stmt, ns, reps, 1.0, warm_ms):.6g} {which}", flush=True)
                continue
            if cmd == "red":
                ns = setup(("red", name), lambda: build_reduction(name))
                print(f"ok {measure(ns['stmt'], ns, reps, 1.0, warm_ms):.6g} alloc", flush=True)
                continue
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
