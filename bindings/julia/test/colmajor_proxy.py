#!/usr/bin/env python3
"""The idea of LibBroadcast (bindings/julia), tested where Julia cannot run.

LibBroadcast hands a Julia array to libbroadcast as its memory with the size and strides
reversed: the same bytes, seen row-major. The library's trailing-aligned broadcasting then acts as
Julia's leading-aligned broadcasting. This script does exactly what LibBroadcast.wrap does, through
the C API (ctypes, no NumPy), on column-major strided views of random sizes (Julia's
`view(parent, r1, r2, ...)` with steps and offsets), and checks each result against a reference of
Julia's own rule written here from Julia's documentation, independently of the library:

  - sizes are aligned on the first dimension, a missing trailing dimension counts as 1;
  - each dimension's sizes must be equal or one of them 1 (0 meets only 0 or 1), else
    DimensionMismatch at the first such dimension;
  - element (i1, ..., in) of the result reads element (j1, ...) of each operand, jk = ik, or 1
    where the operand's size is 1; arrays are stored column-major, the first index fastest.

Out of place and in place (`A .+= B`, allowed when the broadcast size is A's own), for float64,
float32, int32 and int64 and the four operations plus maximum and minimum (division on floating
types: the library's integer division gives Float32 where Julia's gives Float64); then
`LibBroadcast.select(C, A, B)` (bc_where) against `ifelse.(C, A, B)` on a third as many triples;
then the reductions as LibBroadcast calls them: `sum(A; dims)` over Julia dimensions d passed as row-major n - d with keepdim, and
`sum_to_size(A, sz...)` with the sizes reversed, on int32 and int64 arrays (exact, wrapping sums),
against Julia's `sum(A; dims)`; then `abs.(A)` and `.-A` (`LibBroadcast.abs`, `neg`: bc_unary on
the reversed view) against Julia's elementwise forms; then the paths of Julia's conventions:
`t[i...]` (bc_tensor_data and the reversed strides, on views, slices and expanded views),
`dest .= x` (x expanded to dest's size, times a 0-dimensional true, bc_binary_out into dest; x
an array or a number), `dest .= a .op b` (bc_binary_out into a strided view), `dest .= f.(a)`
(bc_unary_out), `ifelse.(c, 0f0, A)` (a 0-dimensional operand of bc_where), `clamp.(A, lo, hi)`
(bc_clamp_scalar), `sum(A)`, `maximum(A)`, `all(A; dims)`, ... (bc_reduce, bc_all and bc_any:
no dims gives a 0-dimensional result read as the value), `length` (bc_tensor_numel) and `show`
(bc_tensor_format: row-major text), `reshape(A, dims...)` (bc_tensor_reshape of the reversed
sizes: Julia's column-major order, no copy of a dense array); then the later wrappers:
`lerp`, `addcmul`, `addcdiv` (new, in place, into a strided view; a number weight is
bc_lerp_scalar), `clamp!` and `dest .= clamp.(t, lo, hi)` (number and array bounds), `nansum`,
`nanmean`, `logsumexp` (reversed dims), `argmax`/`argmin` (the flat row-major index of the
reversed sizes read as Julia's linear index; one dimension as n - d), `squeeze`,
`broadcast_tensors`, `iscontiguous`, `cast` (bc_tensor_to_dtype) and `set_parallel_threshold`.
Ends with `N passed, N failed`.

Usage: colmajor_proxy.py [path/to/libbroadcast.so] (default: target/release of this repository).
BC_PROXY_SEED and BC_PROXY_PAIRS override the seed (printed) and the number of pairs (1500).
"""
import ctypes
import os
import random
import re
import math
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
LIB_PATH = (sys.argv[1] if len(sys.argv) > 1
            else os.path.join(HERE, "..", "..", "..", "target", "release", "libbroadcast.so"))
lib = ctypes.CDLL(LIB_PATH)

P = ctypes.c_void_p
I64P = ctypes.POINTER(ctypes.c_int64)
lib.bc_tensor_wrap.argtypes = [ctypes.c_int32, P, ctypes.c_size_t, I64P, I64P, ctypes.c_size_t,
                               ctypes.c_int64, P, P, ctypes.POINTER(P)]
lib.bc_tensor_wrap.restype = ctypes.c_int32
lib.bc_binary.argtypes = [ctypes.c_int32, P, P, ctypes.POINTER(P)]
lib.bc_binary.restype = ctypes.c_int32
lib.bc_binary_inplace.argtypes = [ctypes.c_int32, P, P]
lib.bc_binary_inplace.restype = ctypes.c_int32
lib.bc_where.argtypes = [P, P, P, ctypes.POINTER(P)]
lib.bc_where.restype = ctypes.c_int32
lib.bc_tensor_ndim.argtypes = [P, ctypes.POINTER(ctypes.c_size_t)]
lib.bc_tensor_ndim.restype = ctypes.c_int32
lib.bc_tensor_shape.argtypes = [P, I64P, ctypes.c_size_t]
lib.bc_tensor_shape.restype = ctypes.c_int32
lib.bc_tensor_dtype.argtypes = [P, ctypes.POINTER(ctypes.c_int32)]
lib.bc_tensor_dtype.restype = ctypes.c_int32
lib.bc_tensor_copy_to.argtypes = [P, P, ctypes.c_size_t]
lib.bc_tensor_copy_to.restype = ctypes.c_int32
lib.bc_tensor_free.argtypes = [P]
lib.bc_tensor_free.restype = None
lib.bc_tensor_live_count.argtypes = []
lib.bc_tensor_live_count.restype = ctypes.c_size_t
lib.bc_sum.argtypes = [P, I64P, ctypes.c_size_t, ctypes.c_bool, ctypes.POINTER(P)]
lib.bc_sum.restype = ctypes.c_int32
lib.bc_unary.argtypes = [ctypes.c_int32, P, ctypes.POINTER(P)]
lib.bc_unary.restype = ctypes.c_int32
lib.bc_tensor_sum_to_size.argtypes = [P, I64P, ctypes.c_size_t, ctypes.POINTER(P)]
lib.bc_tensor_sum_to_size.restype = ctypes.c_int32
lib.bc_last_error_message.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
lib.bc_last_error_message.restype = ctypes.c_size_t
lib.bc_tensor_data.argtypes = [P, ctypes.POINTER(P), ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(ctypes.c_bool)]
lib.bc_tensor_data.restype = ctypes.c_int32
lib.bc_tensor_strides.argtypes = [P, I64P, ctypes.c_size_t]
lib.bc_tensor_strides.restype = ctypes.c_int32
lib.bc_tensor_expand.argtypes = [P, I64P, ctypes.c_size_t, ctypes.POINTER(P)]
lib.bc_tensor_expand.restype = ctypes.c_int32
lib.bc_tensor_slice.argtypes = [P, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.POINTER(P)]
lib.bc_tensor_slice.restype = ctypes.c_int32
lib.bc_binary_out.argtypes = [ctypes.c_int32, P, P, P]
lib.bc_binary_out.restype = ctypes.c_int32
lib.bc_unary_out.argtypes = [ctypes.c_int32, P, P]
lib.bc_unary_out.restype = ctypes.c_int32
lib.bc_reduce.argtypes = [ctypes.c_int32, P, I64P, ctypes.c_size_t, ctypes.c_bool, ctypes.POINTER(P)]
lib.bc_reduce.restype = ctypes.c_int32
for _name in ("bc_all", "bc_any"):
    getattr(lib, _name).argtypes = [P, I64P, ctypes.c_size_t, ctypes.c_bool, ctypes.POINTER(P)]
    getattr(lib, _name).restype = ctypes.c_int32
lib.bc_tensor_reshape.argtypes = [P, I64P, ctypes.c_size_t, ctypes.POINTER(ctypes.c_bool), ctypes.POINTER(P)]
lib.bc_tensor_reshape.restype = ctypes.c_int32
lib.bc_tensor_numel.argtypes = [P, ctypes.POINTER(ctypes.c_int64)]
lib.bc_tensor_numel.restype = ctypes.c_int32
lib.bc_tensor_format.argtypes = [P, ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t)]
lib.bc_tensor_format.restype = ctypes.c_int32


class CScalar(ctypes.Structure):
    """struct bc_scalar, as the package's CScalar mirrors it."""
    _fields_ = [("kind", ctypes.c_int32), ("b", ctypes.c_bool), ("i", ctypes.c_int64), ("f", ctypes.c_double)]


lib.bc_clamp_scalar.argtypes = [P, ctypes.POINTER(CScalar), ctypes.POINTER(CScalar), ctypes.POINTER(P)]
lib.bc_clamp_scalar.restype = ctypes.c_int32

# The paths of the package's later wrappers: PyTorch's ternary operations, clamp in place and
# into out, the NaN-aware reductions and logsumexp, argmax/argmin, squeeze, broadcast_tensors,
# iscontiguous, cast (bc_tensor_to_dtype) and set_parallel_threshold.
for _name in ("bc_lerp", "bc_clamp"):
    getattr(lib, _name).argtypes = [P, P, P, ctypes.POINTER(P)]
    getattr(lib, _name).restype = ctypes.c_int32
for _name in ("bc_lerp_inplace", "bc_clamp_inplace"):
    getattr(lib, _name).argtypes = [P, P, P]
    getattr(lib, _name).restype = ctypes.c_int32
for _name in ("bc_lerp_out", "bc_clamp_out"):
    getattr(lib, _name).argtypes = [P, P, P, P]
    getattr(lib, _name).restype = ctypes.c_int32
lib.bc_lerp_scalar.argtypes = [P, P, CScalar, ctypes.POINTER(P)]
lib.bc_lerp_scalar_inplace.argtypes = [P, P, CScalar]
lib.bc_lerp_scalar_out.argtypes = [P, P, CScalar, P]
for _name in ("addcmul", "addcdiv"):
    getattr(lib, f"bc_{_name}").argtypes = [P, P, P, CScalar, ctypes.POINTER(P)]
    getattr(lib, f"bc_{_name}_inplace").argtypes = [P, P, P, CScalar]
    getattr(lib, f"bc_{_name}_out").argtypes = [P, P, P, CScalar, P]
lib.bc_clamp_scalar_inplace.argtypes = [P, ctypes.POINTER(CScalar), ctypes.POINTER(CScalar)]
lib.bc_clamp_scalar_out.argtypes = [P, ctypes.POINTER(CScalar), ctypes.POINTER(CScalar), P]
for _name in ("bc_nansum", "bc_nanmean", "bc_logsumexp"):
    getattr(lib, _name).argtypes = [P, I64P, ctypes.c_size_t, ctypes.c_bool, ctypes.POINTER(P)]
for _name in ("bc_argmax", "bc_argmin"):
    getattr(lib, _name).argtypes = [P, I64P, ctypes.c_bool, ctypes.POINTER(P)]
lib.bc_tensor_squeeze.argtypes = [P, ctypes.c_int64, ctypes.POINTER(P)]
lib.bc_tensor_squeeze_all.argtypes = [P, ctypes.POINTER(P)]
lib.bc_tensor_broadcast_tensors.argtypes = [ctypes.POINTER(P), ctypes.c_size_t, ctypes.POINTER(P)]
lib.bc_tensor_is_contiguous.argtypes = [P, ctypes.POINTER(ctypes.c_bool)]
lib.bc_tensor_to_dtype.argtypes = [P, ctypes.c_int32, ctypes.POINTER(P)]
lib.bc_set_parallel_threshold.argtypes = [ctypes.c_size_t]
for _name in ("bc_lerp_scalar", "bc_lerp_scalar_inplace", "bc_lerp_scalar_out", "bc_addcmul", "bc_addcmul_inplace",
              "bc_addcmul_out", "bc_addcdiv", "bc_addcdiv_inplace", "bc_addcdiv_out", "bc_clamp_scalar_inplace",
              "bc_clamp_scalar_out", "bc_nansum", "bc_nanmean", "bc_logsumexp", "bc_argmax", "bc_argmin",
              "bc_tensor_squeeze", "bc_tensor_squeeze_all", "bc_tensor_broadcast_tensors", "bc_tensor_is_contiguous",
              "bc_tensor_to_dtype", "bc_set_parallel_threshold"):
    getattr(lib, _name).restype = ctypes.c_int32

# The codes as the package has them: its generated codes.jl (from include/broadcast.h).
with open(os.path.join(HERE, "..", "src", "codes.jl")) as f:
    C = {k: int(v) for k, v in re.findall(r"^const (BC_\w+) = (?:Int32\()?(-?\d+)", f.read(), re.M)}
BC_OK, BC_ERR_SHAPE = C["BC_OK"], C["BC_ERR_SHAPE"]
# name: (BC_DTYPE_* code, ctypes type, floating)
DTYPES = {
    "float64": (C["BC_DTYPE_FLOAT64"], ctypes.c_double, True),
    "float32": (C["BC_DTYPE_FLOAT32"], ctypes.c_float, True),
    "int32": (C["BC_DTYPE_INT32"], ctypes.c_int32, False),
    "int64": (C["BC_DTYPE_INT64"], ctypes.c_int64, False),
}
# The condition of where (LibBroadcast.select): Bool.
BOOL = (C["BC_DTYPE_BOOL"], ctypes.c_bool, False)
OPS = {name: C["BC_OP_" + name.upper()] for name in ("add", "sub", "mul", "div", "maximum", "minimum")}


def last_error():
    buf = ctypes.create_string_buffer(1024)
    lib.bc_last_error_message(buf, len(buf))
    return buf.value.decode()


# ------------------------------------------------------------------------------------------------
# Julia's rules (the reference)
# ------------------------------------------------------------------------------------------------

def julia_broadcast_size(sa, sb):
    """(size, None), or (None, k) with k the first mismatching dimension (0-based)."""
    out = []
    for k in range(max(len(sa), len(sb))):
        a = sa[k] if k < len(sa) else 1
        b = sb[k] if k < len(sb) else 1
        if a == b or b == 1:
            out.append(a)
        elif a == 1:
            out.append(b)
        else:
            return None, k
    return tuple(out), None


def column_major_indices(size):
    """Every index tuple of an array of this size, first index fastest."""
    total = 1
    for s in size:
        total *= s
    for flat in range(total):
        idx = []
        for s in size:
            idx.append(flat % s)
            flat //= s
        yield tuple(idx)


def wrap_int(v, bits):
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def ieee_div(x, y):
    if y != 0:
        return x / y
    if x == 0 or math.isnan(x):
        return math.nan
    return math.copysign(math.inf, x) * math.copysign(1.0, y)


def apply(op, dtype, x, y):
    """x op y in dtype, as both Julia and the library compute it for these types."""
    if op == "div":
        r = ieee_div(x, y)
    elif op in ("maximum", "minimum"):  # Julia's max.(A, B) / min.(A, B); no NaN in the values
        return max(x, y) if op == "maximum" else min(x, y)
    else:
        r = x + y if op == "add" else x - y if op == "sub" else x * y
    if dtype == "float64":
        return r
    if dtype == "float32":
        # float32 arithmetic is the exact result rounded once; rounding the double result
        # (itself rounded from the exact one) gives the same float32 for + - * /, since double
        # has more than twice float32's precision. ctypes' cast gives inf past float32's range.
        return ctypes.c_float(r).value
    return wrap_int(r, 32 if dtype == "int32" else 64)


def same_values(got, want):
    """Equal element by element, NaN matching NaN."""
    return len(got) == len(want) and all(
        g == w or (isinstance(g, float) and math.isnan(g) and math.isnan(w))
        for g, w in zip(got, want))


def element(arr, idx):
    """arr[idx...] of a strided view (Julia's broadcast: a size-1 dimension repeats)."""
    at = arr.offset
    for k, (s, st) in enumerate(zip(arr.size, arr.strides)):
        at += (idx[k] if s != 1 else 0) * st
    return arr.buf[at]


# ------------------------------------------------------------------------------------------------
# Column-major strided views of a parent buffer, and what LibBroadcast passes to the library
# ------------------------------------------------------------------------------------------------

class JuliaArray:
    """view(parent, o1+1:st1:..., o2+1:st2:..., ...) of a column-major parent: size, strides and
    offset in elements, over a flat ctypes buffer."""

    def __init__(self, rng, dtype, size):
        self.dtype, self.size = dtype, tuple(size)
        steps = [rng.choice([1, 1, 1, 2, 3]) for _ in size]
        offs = [rng.choice([0, 0, 1, 2]) for _ in size]
        parent = [o + max(s, 1) * st + rng.choice([0, 1]) for s, st, o in zip(size, steps, offs)]
        pstrides, acc = [], 1
        for p in parent:
            pstrides.append(acc)
            acc *= p
        self.strides = tuple(st * ps for st, ps in zip(steps, pstrides))
        self.offset = sum(o * ps for o, ps in zip(offs, pstrides))
        code, ctype, floating = BOOL if dtype == "bool" else DTYPES[dtype]
        n = acc
        if dtype == "bool":
            vals = [rng.random() < 0.5 for _ in range(n)]
        elif floating:
            vals = [rng.choice([-3.5, -1, -0.25, 0.0, 0.5, 1.0, 2.0, 7.75, 1e10, -1e-3])
                    * rng.randint(1, 9) for _ in range(n)]
            if dtype == "float32":
                vals = [ctypes.c_float(v).value for v in vals]
        else:
            bits = 32 if dtype == "int32" else 64
            vals = [rng.choice([rng.randint(-9, 9), wrap_int(rng.getrandbits(bits), bits)])
                    for _ in range(n)]
        self.buf = (ctype * max(n, 1))(*vals)
        self.code, self.itemsize = code, ctypes.sizeof(ctype)

    def snapshot(self):
        return list(self.buf)

    def tensor(self):
        """What LibBroadcast.wrap does: pointer(A) (the view's first element), the span of its
        elements in bytes, the size and the strides reversed, offset 0, no release callback."""
        if any(s == 0 for s in self.size):
            span = 0
        else:
            span = 1 + sum((s - 1) * st for s, st in zip(self.size, self.strides))
        shape = (ctypes.c_int64 * max(len(self.size), 1))(*reversed(self.size))
        strides = (ctypes.c_int64 * max(len(self.size), 1))(*reversed(self.strides))
        ptr = ctypes.addressof(self.buf) + self.offset * self.itemsize
        out = P()
        st = lib.bc_tensor_wrap(self.code, ptr, span * self.itemsize, shape, strides,
                                len(self.size), 0, None, None, ctypes.byref(out))
        if st != BC_OK:
            raise RuntimeError(f"bc_tensor_wrap failed ({st}): {last_error()}")
        return out


def julia_size_of(t):
    """The Julia size of a library tensor: its row-major shape reversed."""
    nd = ctypes.c_size_t()
    assert lib.bc_tensor_ndim(t, ctypes.byref(nd)) == BC_OK
    shape = (ctypes.c_int64 * max(nd.value, 1))()
    assert lib.bc_tensor_shape(t, shape, nd.value) == BC_OK
    return tuple(reversed(shape[: nd.value]))


def julia_array_of(t, dtype, size):
    """Array(t): the row-major bytes read as a column-major array of the reversed shape."""
    ctype = DTYPES[dtype][1]
    n = 1
    for s in size:
        n *= s
    buf = (ctype * max(n, 1))()
    assert lib.bc_tensor_copy_to(t, buf, n * ctypes.sizeof(ctype)) == BC_OK
    return list(buf[:n])


# ------------------------------------------------------------------------------------------------
# The cases
# ------------------------------------------------------------------------------------------------

def random_size(rng, nd):
    return [rng.choice([0, 1, 1, 2, 3, 4]) if rng.random() < 0.1 else rng.choice([1, 2, 3, 4, 5])
            for _ in range(nd)]


def random_pair(rng):
    """Two Julia sizes that broadcast most of the time: b takes a's leading dimensions, each
    kept, set to 1, or (sometimes) changed, and may be longer or shorter."""
    a = random_size(rng, rng.randint(0, 5))
    b = []
    for k in range(rng.randint(0, 5)):
        if k < len(a):
            r = rng.random()
            b.append(a[k] if r < 0.55 else 1 if r < 0.93 else rng.randint(0, 5))
        else:
            b.append(rng.choice([1, 2, 3]))
    if rng.random() < 0.5:
        a, b = b, a
    return a, b


def check_pair(rng, sa, sb, dtype, op, inplace):
    """One case; returns a description of what went wrong, or None."""
    A, B = JuliaArray(rng, dtype, sa), JuliaArray(rng, dtype, sb)
    a_before, b_before = A.snapshot(), B.snapshot()
    size, bad_dim = julia_broadcast_size(A.size, B.size)
    if inplace and size is not None and size != A.size:
        size, bad_dim = None, "inplace"  # A .+= B must keep A's size
    ta, tb = A.tensor(), B.tensor()
    try:
        if inplace:
            st, tr = lib.bc_binary_inplace(OPS[op], ta, tb), None
        else:
            tr = P()
            st = lib.bc_binary(OPS[op], ta, tb, ctypes.byref(tr))
        if size is None:
            if st != BC_ERR_SHAPE:
                return f"Julia refuses this, the library returned status {st}"
            # Julia's first mismatching dimension k is the library's last: row-major index
            # n-1-k of the reversed shapes, and the sizes there are the two arrays'.
            want = None
            if not inplace:
                n, k = max(len(sa), len(sb)), bad_dim
                x = sa[k] if k < len(sa) else 1
                y = sb[k] if k < len(sb) else 1
                want = (f"The size of tensor a ({x}) must match the size of tensor b ({y}) "
                        f"at non-singleton dimension {n - 1 - k}")
            elif len(sb) <= len(sa):
                # In place, the documented text: the first dimension where B's size is neither
                # 1 nor A's, A's size named first, counted in A's row-major dimensions.
                k = next(k for k in range(len(sb)) if sb[k] not in (1, sa[k]))
                want = (f"The expanded size of the tensor ({sa[k]}) must match the existing "
                        f"size ({sb[k]}) at non-singleton dimension {len(sa) - 1 - k}.")
            if want is not None and last_error() != want:
                return f"message {last_error()!r}, expected {want!r}"
            if A.snapshot() != a_before:
                return "a refused in-place operation changed A"
            return None
        if st != BC_OK:
            return f"Julia broadcasts this to {size}, the library failed: {last_error()}"
        result = ta if inplace else tr
        got_size = julia_size_of(result)
        if got_size != size:
            return f"result size {got_size}, Julia's is {size}"
        if inplace:
            # Reference: A's elements after A .op= B, the rest of A's parent unchanged.
            want_buf = list(a_before)
            for i in column_major_indices(size):
                at = A.offset + sum(i[k] * A.strides[k] for k in range(len(size)))
                want_buf[at] = apply(op, dtype, a_before[at], element(B, i))
            if not same_values(A.snapshot(), want_buf):
                return "A's memory after the in-place operation differs from Julia's .op="
        else:
            got = julia_array_of(result, dtype, size)
            want = [apply(op, dtype, element(A, i), element(B, i))
                    for i in column_major_indices(size)]
            if not same_values(got, want):
                return f"values differ:\n      got      {got}\n      expected {want}"
            if A.snapshot() != a_before:
                return "an out-of-place operation changed A"
        if B.snapshot() != b_before:
            return "the operation changed B"
        return None
    finally:
        if tr:
            lib.bc_tensor_free(tr)
        lib.bc_tensor_free(ta)
        lib.bc_tensor_free(tb)


def check_select(rng, sc, sa, sb, dtype):
    """LibBroadcast.select(C, A, B) against ifelse.(C, A, B): three operands, sizes and strides
    reversed; a description of what went wrong, or None."""
    C, A, B = JuliaArray(rng, "bool", sc), JuliaArray(rng, dtype, sa), JuliaArray(rng, dtype, sb)
    size = julia_broadcast_size(sc, sa)[0]
    if size is not None:
        size = julia_broadcast_size(size, sb)[0]
    tc, ta, tb, tr = C.tensor(), A.tensor(), B.tensor(), P()
    try:
        st = lib.bc_where(tc, ta, tb, ctypes.byref(tr))
        if size is None:
            return None if st == BC_ERR_SHAPE else f"Julia refuses this, the library returned {st}"
        if st != BC_OK:
            return f"Julia broadcasts this to {size}, the library failed: {last_error()}"
        if julia_size_of(tr) != size:
            return f"result size {julia_size_of(tr)}, Julia's is {size}"
        want = [element(A, i) if element(C, i) else element(B, i) for i in column_major_indices(size)]
        got = julia_array_of(tr, dtype, size)
        return None if same_values(got, want) else f"values differ:\n      got      {got}\n      expected {want}"
    finally:
        for t in (tr, tc, ta, tb):
            if t:
                lib.bc_tensor_free(t)


def random_triple(rng):
    """Three Julia sizes for select: a pair, and a condition made from one of them with sizes set
    to 1 and trailing dimensions dropped (so that most triples broadcast)."""
    sa, sb = random_pair(rng)
    sc = [s if rng.random() < 0.7 else 1 for s in rng.choice([sa, sb])]
    return sc[: rng.randint(0, len(sc))], sa, sb
def check_reduction(rng, dtype, to_size):
    """sum(A; dims) (to_size False) or sum_to_size(A, sz...) (True) as LibBroadcast calls the
    library, against Julia's sum(A; dims) written here; returns what went wrong, or None."""
    size = random_size(rng, rng.randint(1, 4))
    A = JuliaArray(rng, dtype, size)
    n = len(size)
    if to_size:
        # A size A can be broadcast from: each dimension kept or 1, trailing ones maybe dropped.
        target = [s if rng.random() < 0.5 else 1 for s in size][: rng.randint(0, n)]
        dims = [d for d in range(n) if d >= len(target) or (target[d] == 1 and size[d] != 1)]
        args = list(reversed(target))
    else:
        dims = sorted(rng.sample(range(n), rng.randint(1, n)))
        target = [1 if d in dims else s for d, s in enumerate(size)]
        args = [n - (d + 1) for d in dims]  # Julia dimension d + 1 is row-major n - (d + 1)
    ta, tr = A.tensor(), P()
    arr = (ctypes.c_int64 * max(len(args), 1))(*args)
    try:
        if to_size:
            st = lib.bc_tensor_sum_to_size(ta, arr, len(args), ctypes.byref(tr))
        else:
            st = lib.bc_sum(ta, arr, len(args), True, ctypes.byref(tr))
        if st != BC_OK:
            return f"the library failed: {last_error()}"
        if julia_size_of(tr) != tuple(target):
            return f"result size {julia_size_of(tr)}, Julia's is {tuple(target)}"
        summed = bool(dims) or not to_size  # else a view of A, of A's type
        want = {}
        for i in column_major_indices(tuple(size)):
            key = tuple(0 if d in dims else i[d] for d in range(len(target)))
            want[key] = wrap_int(want.get(key, 0) + element(A, i), 64)
        got = julia_array_of(tr, "int64" if summed else dtype, target)
        keys = list(column_major_indices(tuple(target)))
        if got != [want.get(k, 0) for k in keys]:
            return f"values {got}, Julia's {[want.get(k, 0) for k in keys]}"
        return None
    finally:
        if tr:
            lib.bc_tensor_free(tr)
        lib.bc_tensor_free(ta)


def check_unary(rng, dtype):
    """abs.(A) and .-A (LibBroadcast.abs, neg: bc_unary on the reversed view) against Julia's
    elementwise abs and negation, wrapping for integers; returns what went wrong, or None."""
    size = tuple(random_size(rng, rng.randint(0, 4)))
    A = JuliaArray(rng, dtype, size)
    name = rng.choice(["abs", "neg"])
    code = C["BC_UNARY_" + name.upper()]
    ta, tr = A.tensor(), P()
    try:
        st = lib.bc_unary(code, ta, ctypes.byref(tr))
        if st != BC_OK:
            return f"{name}: the library failed: {last_error()}"
        if julia_size_of(tr) != size:
            return f"{name}: result size {julia_size_of(tr)}, Julia's is {size}"
        bits = {"int32": 32, "int64": 64}.get(dtype)
        def f(x):
            y = abs(x) if name == "abs" else -x
            return wrap_int(y, bits) if bits else y
        want = [f(element(A, i)) for i in column_major_indices(size)]
        got = julia_array_of(tr, dtype, size)
        return None if same_values(got, want) else f"{name}: values {got}, Julia's {want}"
    finally:
        if tr:
            lib.bc_tensor_free(tr)
        lib.bc_tensor_free(ta)


# ------------------------------------------------------------------------------------------------
# Julia's conventions: reads, .=, out forms, numbers as 0-dimensional tensors, reductions to a value
# ------------------------------------------------------------------------------------------------

def ctype_of(dtype):
    return (BOOL if dtype == "bool" else DTYPES[dtype])[1]


class ZeroDim:
    """zero_dim(x) of the package, Tensor(fill(x)): a 0-dimensional wrap of one element."""

    def __init__(self, dtype, value):
        code, ctype, _ = BOOL if dtype == "bool" else DTYPES[dtype]
        self.buf = (ctype * 1)(value)
        self.t = P()
        st = lib.bc_tensor_wrap(code, ctypes.addressof(self.buf), ctypes.sizeof(ctype), None, None, 0, 0,
                                None, None, ctypes.byref(self.t))
        if st != BC_OK:
            raise RuntimeError(f"bc_tensor_wrap of a 0-d {dtype} failed ({st}): {last_error()}")

    def free(self):
        lib.bc_tensor_free(self.t)


def expand(t, julia_size):
    """LibBroadcast.expand(t, sz...): the sizes reversed; (status, view)."""
    s = (ctypes.c_int64 * max(len(julia_size), 1))(*reversed(julia_size))
    out = P()
    return lib.bc_tensor_expand(t, s, len(julia_size), ctypes.byref(out)), out


def read_element(t, dtype, idx):
    """t[i1, i2, ...] as the package reads it (indices from 0 here): bc_tensor_data's address plus
    the index times Julia's strides (the library's reversed)."""
    data = P()
    assert lib.bc_tensor_data(t, ctypes.byref(data), None, None) == BC_OK
    nd = ctypes.c_size_t()
    assert lib.bc_tensor_ndim(t, ctypes.byref(nd)) == BC_OK
    st = (ctypes.c_int64 * max(nd.value, 1))()
    assert lib.bc_tensor_strides(t, st, nd.value) == BC_OK
    jstrides = list(reversed(st[: nd.value]))
    at = sum(i * s for i, s in zip(idx, jstrides))
    ctype = ctype_of(dtype)
    return ctype.from_address(data.value + at * ctypes.sizeof(ctype)).value


def check_getindex(rng, dtype):
    """t[i...] on a wrapped view, a slice of it or an expanded view, against Julia's A[i...]; and
    length(t) (bc_tensor_numel)."""
    size = random_size(rng, rng.randint(0, 4))
    A = JuliaArray(rng, dtype, size)
    t, v = A.tensor(), P()
    kind = rng.choice(["view", "slice", "expand"])
    try:
        ref = lambda i: element(A, i)  # noqa: E731
        vsize = tuple(size)
        d = rng.randrange(len(size)) if size else None  # Julia dimension d + 1
        if kind == "slice" and size and size[d] > 0:
            first = rng.randint(1, size[d])
            step = rng.randint(1, 3)
            last = rng.randint(first - 1, size[d])  # may be empty
            count = max(0, (last - first) // step + 1)
            # slice(t, d + 1, first:step:last): bc_tensor_slice(t, n - (d + 1), first - 1, stop, step)
            stop = first - 1 + (count - 1) * step + 1 if count else first - 1
            st = lib.bc_tensor_slice(t, len(size) - (d + 1), first - 1, stop, step, ctypes.byref(v))
            if st != BC_OK:
                return f"slice: the library failed: {last_error()}"
            vsize = tuple(count if k == d else s for k, s in enumerate(size))
            ref = lambda i: element(A, tuple(first - 1 + i[d] * step if k == d else i[k]  # noqa: E731
                                              for k in range(len(i))))
        elif kind == "expand":
            vsize = tuple(rng.randint(1, 3) if s == 1 else s for s in size) + tuple(
                rng.randint(1, 3) for _ in range(rng.randint(0, 1)))
            st, v = expand(t, vsize)
            if st != BC_OK:
                return f"expand to {vsize}: the library failed: {last_error()}"
        target = v if v else t
        n = ctypes.c_int64()
        assert lib.bc_tensor_numel(target, ctypes.byref(n)) == BC_OK
        if n.value != math.prod(vsize):
            return f"{kind}: length {n.value}, Julia's {math.prod(vsize)}"
        for i in column_major_indices(vsize):
            got, want = read_element(target, dtype, i), ref(i)
            if not same_values([got], [want]):
                return f"{kind} {vsize}: t[{tuple(k + 1 for k in i)}] is {got}, Julia's {want}"
        return None
    finally:
        if v:
            lib.bc_tensor_free(v)
        lib.bc_tensor_free(t)


def check_assign(rng, dtype):
    """dest .= x as the package writes it (expand x to dest's size, times a 0-d true, out into
    dest), x an array (sometimes of float64 into float32) or a number; against Julia's dest .= x."""
    dsize = random_size(rng, rng.randint(0, 4))
    D = JuliaArray(rng, dtype, dsize)
    before = D.snapshot()
    src_dtype = "float64" if dtype == "float32" and rng.random() < 0.3 else dtype
    number = rng.random() < 0.3
    fits = True
    if number:
        S = None
        value = JuliaArray(rng, src_dtype, [1]).buf[0]
        zs = ZeroDim(src_dtype, value)
        ts = zs.t
        src = lambda i: value  # noqa: E731
    else:
        ssize = [s if rng.random() < 0.6 else 1 for s in dsize][: rng.randint(0, len(dsize))]
        if ssize and rng.random() < 0.1:  # a size changed: it fits only where it meets dest's or 1
            k = rng.randrange(len(ssize))
            ssize[k] += 1
            fits = ssize[k] in (dsize[k], 1)
        S = JuliaArray(rng, src_dtype, ssize)
        zs, ts = None, S.tensor()
        src = lambda i: element(S, i)  # noqa: E731
    td = D.tensor()
    one = ZeroDim("bool", True)
    e = P()
    try:
        st, e = expand(ts, D.size)
        if st == BC_OK:
            st = lib.bc_binary_out(OPS["mul"], e, one.t, td)
        if not fits:
            if st == BC_OK:
                return f"source {tuple(S.size)} does not broadcast to {tuple(dsize)}, the library wrote"
            return None if D.snapshot() == before else "a refused .= changed dest"
        if st != BC_OK:
            return f"the library failed: {last_error()}"
        want = list(before)
        for i in column_major_indices(D.size):
            at = D.offset + sum(i[k] * D.strides[k] for k in range(len(i)))
            x = src(i)
            want[at] = ctypes.c_float(x).value if dtype == "float32" else x
        if not same_values(D.snapshot(), want):
            return f"dest {tuple(dsize)} after .= {'a number' if number else tuple(S.size)} ({src_dtype}) differs from Julia's"
        return None
    finally:
        for x in (e, td):
            if x:
                lib.bc_tensor_free(x)
        one.free()
        if zs:
            zs.free()
        elif ts:
            lib.bc_tensor_free(ts)


def check_out(rng, dtype):
    """dest .= a .op b (bc_binary_out) and dest .= abs.(a) / .-a (bc_unary_out) into a strided
    view of the broadcast size; the rest of dest's parent unchanged."""
    while True:
        sa, sb = random_pair(rng)
        size = julia_broadcast_size(sa, sb)[0]
        if size is not None:
            break
    unary = rng.random() < 0.3
    if unary:
        size = tuple(sa)
    A, B, D = JuliaArray(rng, dtype, sa), JuliaArray(rng, dtype, sb), JuliaArray(rng, dtype, size)
    before = D.snapshot()
    ta, tb, td = A.tensor(), B.tensor(), D.tensor()
    try:
        if unary:
            name = rng.choice(["abs", "neg"])
            st = lib.bc_unary_out(C["BC_UNARY_" + name.upper()], ta, td)
            bits = {"int32": 32, "int64": 64}.get(dtype)

            def f(i):
                y = abs(element(A, i)) if name == "abs" else -element(A, i)
                return wrap_int(y, bits) if bits else y
        else:
            op = rng.choice([o for o in OPS if o != "div" or DTYPES[dtype][2]])
            name = op
            st = lib.bc_binary_out(OPS[op], ta, tb, td)

            def f(i):
                return apply(op, dtype, element(A, i), element(B, i))
        if st != BC_OK:
            return f"{name}: the library failed: {last_error()}"
        want = list(before)
        for i in column_major_indices(size):
            want[D.offset + sum(i[k] * D.strides[k] for k in range(len(i)))] = f(i)
        return None if same_values(D.snapshot(), want) else f"{name} into a view of {size}: dest differs from Julia's"
    finally:
        for t in (ta, tb, td):
            lib.bc_tensor_free(t)


def check_number_operands(rng, dtype):
    """ifelse.(C, x, A) (x a 0-dimensional operand of bc_where) and clamp.(A, lo, hi)
    (bc_clamp_scalar with two numbers), against Julia's elementwise forms."""
    size = random_size(rng, rng.randint(0, 4))
    A = JuliaArray(rng, dtype, size)
    ta, tr = A.tensor(), P()
    floating = DTYPES[dtype][2]
    try:
        if rng.random() < 0.5:
            sc = [s if rng.random() < 0.7 else 1 for s in size][: rng.randint(0, len(size))]
            Cnd = JuliaArray(rng, "bool", sc)
            x = JuliaArray(rng, dtype, [1]).buf[0]
            zx, tc = ZeroDim(dtype, x), Cnd.tensor()
            try:
                st = lib.bc_where(tc, zx.t, ta, ctypes.byref(tr))
            finally:
                zx.free()
                lib.bc_tensor_free(tc)
            what = "ifelse"
            want = [x if element(Cnd, i) else element(A, i) for i in column_major_indices(tuple(size))]
        else:
            lo, hi = sorted([rng.randint(-9, 9), rng.randint(-9, 9)])
            if floating:
                lo, hi = lo / 4, hi / 4
                kind = C["BC_SCALAR_FLOAT"]
                clo, chi = CScalar(kind, False, 0, lo), CScalar(kind, False, 0, hi)
            else:
                kind = C["BC_SCALAR_INT"]
                clo, chi = CScalar(kind, False, lo, 0.0), CScalar(kind, False, hi, 0.0)
            st = lib.bc_clamp_scalar(ta, ctypes.byref(clo), ctypes.byref(chi), ctypes.byref(tr))
            what = "clamp"
            want = [min(max(element(A, i), lo), hi) for i in column_major_indices(tuple(size))]
            if dtype == "float32":
                want = [ctypes.c_float(w).value for w in want]
        if st != BC_OK:
            return f"{what}: the library failed: {last_error()}"
        if julia_size_of(tr) != tuple(size):
            return f"{what}: result size {julia_size_of(tr)}, Julia's {tuple(size)}"
        got = julia_array_of(tr, dtype, size)
        return None if same_values(got, want) else f"{what}: values {got}, Julia's {want}"
    finally:
        if tr:
            lib.bc_tensor_free(tr)
        lib.bc_tensor_free(ta)


def check_reduce_value(rng):
    """sum(A), prod(A), maximum(A), minimum(A) (bc_reduce over no listed dimension, without
    keepdim: a 0-dimensional result, read as the value) and maximum(A; dims) (bc_reduce, dims
    reversed, keepdim) on int64; all(A; dims) and any(A) (bc_all, bc_any) on Bool."""
    size = [rng.randint(1, 4) for _ in range(rng.randint(1, 4))]
    n = len(size)
    boolean = rng.random() < 0.4
    A = JuliaArray(rng, "bool" if boolean else "int64", size)
    ta, tr = A.tensor(), P()
    values = [element(A, i) for i in column_major_indices(tuple(size))]
    with_dims = rng.random() < 0.5
    dims = sorted(rng.sample(range(n), rng.randint(1, n))) if with_dims else []
    # No dims (Julia's `:`) is (NULL, 0), as the package passes it: an empty non-NULL list is no
    # dimension to bc_all and bc_any.
    args = (ctypes.c_int64 * len(dims))(*[n - (d + 1) for d in dims]) if with_dims else None
    try:
        if boolean:
            name = rng.choice(["all", "any"])
            st = getattr(lib, "bc_" + name)(ta, args, len(dims), with_dims, ctypes.byref(tr))
            fold, out_dtype = (all if name == "all" else any), "bool"
        else:
            name = rng.choice(["sum", "prod", "amax", "amin"])
            st = lib.bc_reduce(C["BC_REDUCE_" + name.upper()], ta, args, len(dims), with_dims, ctypes.byref(tr))
            fold = {"sum": lambda v: wrap_int(sum(v), 64), "prod": lambda v: wrap_int(math.prod(v), 64),
                    "amax": max, "amin": min}[name]
            out_dtype = "int64"
        if st != BC_OK:
            return f"{name}: the library failed: {last_error()}"
        target = tuple(1 if d in dims else s for d, s in enumerate(size)) if with_dims else ()
        if julia_size_of(tr) != target:
            return f"{name}: result size {julia_size_of(tr)}, Julia's {target}"
        groups = {}
        for i in column_major_indices(tuple(size)):
            key = tuple(0 if d in dims else i[d] for d in range(n)) if with_dims else ()
            groups.setdefault(key, []).append(element(A, i))
        for key in column_major_indices(target):
            got, want = read_element(tr, out_dtype, key), fold(groups[key])
            if got != want:
                return f"{name} over {dims if with_dims else ':'} of {tuple(size)}: {got} at {key}, Julia's {want}"
        return None
    finally:
        if tr:
            lib.bc_tensor_free(tr)
        lib.bc_tensor_free(ta)


def check_reshape(rng, dtype):
    """reshape(A, dims...) as the package asks for it (the Julia sizes reversed, `:` as -1)
    against Julia's: the same elements in column-major order; a dense array is never copied."""
    size = [rng.randint(1, 4) for _ in range(rng.randint(0, 4))]
    A = JuliaArray(rng, dtype, size)
    factors = []
    for s in size:  # the element count as a product of other sizes
        factors += [2, s // 2] if s % 2 == 0 and s > 2 and rng.random() < 0.5 else [s]
    rng.shuffle(factors)
    if rng.random() < 0.3:
        factors.append(1)
    dims = list(factors)
    if dims and rng.random() < 0.3:
        dims[rng.randrange(len(dims))] = -1  # Julia's `:`
    arr = (ctypes.c_int64 * max(len(dims), 1))(*reversed(dims))
    ta, tr, copied = A.tensor(), P(), ctypes.c_bool()
    try:
        st = lib.bc_tensor_reshape(ta, arr, len(dims), ctypes.byref(copied), ctypes.byref(tr))
        if st != BC_OK:
            return f"reshape {tuple(size)} to {tuple(dims)}: the library failed: {last_error()}"
        if julia_size_of(tr) != tuple(factors):
            return f"reshape {tuple(size)} to {tuple(dims)}: size {julia_size_of(tr)}, Julia's {tuple(factors)}"
        want = [element(A, i) for i in column_major_indices(tuple(size))]
        got = julia_array_of(tr, dtype, factors)
        if not same_values(got, want):
            return f"reshape {tuple(size)} to {tuple(dims)}: values differ from Julia's"
        dense = all(s == math.prod(size[:k]) for k, s in enumerate(A.strides))
        if dense and copied.value:
            return f"reshape of a dense {tuple(size)} copied, where Julia's shares the memory"
        return None
    finally:
        if tr:
            lib.bc_tensor_free(tr)
        lib.bc_tensor_free(ta)


def check_format():
    """show(t): the library's text of the reversed view is row-major, Julia's 2x3 Float32[1 2 3;
    4 5 6] printing as 3 rows of 2 (the text is PyTorch's repr of that row-major tensor)."""
    problems = []
    for dtype, size, values, want in [
            ("float32", (2, 3), [1, 4, 2, 5, 3, 6], "tensor([[1., 4.],\n        [2., 5.],\n        [3., 6.]])"),
            ("int32", (3,), [1, 2, 3], "tensor([1, 2, 3], dtype=torch.int32)"),
            ("int64", (3,), [1, 2, 3], "tensor([1, 2, 3])")]:
        code, ctype, _ = DTYPES[dtype]
        buf = (ctype * len(values))(*values)
        jstrides = [1]
        for s in size[:-1]:
            jstrides.append(jstrides[-1] * s)
        shape = (ctypes.c_int64 * len(size))(*reversed(size))
        strides = (ctypes.c_int64 * len(size))(*reversed(jstrides))
        t = P()
        assert lib.bc_tensor_wrap(code, ctypes.addressof(buf), ctypes.sizeof(buf), shape, strides, len(size), 0,
                                  None, None, ctypes.byref(t)) == BC_OK
        n = ctypes.c_size_t()
        assert lib.bc_tensor_format(t, None, 0, ctypes.byref(n)) == BC_OK
        text = ctypes.create_string_buffer(n.value + 1)
        assert lib.bc_tensor_format(t, text, n.value + 1, ctypes.byref(n)) == BC_OK
        lib.bc_tensor_free(t)
        if text.value.decode() != want:
            problems.append(f"show of a {size} {dtype}: {text.value.decode()!r}, expected {want!r}")
    return problems


# ------------------------------------------------------------------------------------------------
# The later wrappers: lerp, addcmul, addcdiv, clamp!, nansum, nanmean, logsumexp, argmax, argmin,
# squeeze, broadcast_tensors, iscontiguous, cast
# ------------------------------------------------------------------------------------------------

def fscalar(x):
    return CScalar(C["BC_SCALAR_FLOAT"], False, 0, float(x))


def number(dtype, x):
    """The CScalar the package's cscalar makes of a Julia number of this element type."""
    return fscalar(x) if DTYPES[dtype][2] else CScalar(C["BC_SCALAR_INT"], False, int(x), 0.0)


def near(got, want, scale):
    """Equal to rounding: the library's formulas (PyTorch's) round differently from the plain ones
    written here; NaN matches NaN and infinities must be equal."""
    if isinstance(want, float) and (math.isnan(want) or math.isinf(want)):
        return got == want or (math.isnan(got) and math.isnan(want))
    return abs(got - want) <= 1e-12 * scale + 1e-300


def broadcast_three(rng):
    """Three Julia sizes that broadcast together, and their broadcast size."""
    while True:
        s3, s1, s2 = random_triple(rng)
        size = julia_broadcast_size(s1, s2)[0]
        size = size and julia_broadcast_size(size, s3)[0]
        if size is not None:
            return s1, s2, s3, size


def indexed(arr, size):
    """The Julia elements of arr (any size broadcasting to `size`) at every index of `size`."""
    return [element(arr, i) for i in column_major_indices(tuple(size))]


def check_ternary(rng):
    """LibBroadcast.lerp(a, b, w) (bc_lerp; a number w: bc_lerp_scalar), addcmul(a, b, c; value)
    and addcdiv (bc_addcmul, bc_addcdiv), each new, in place into a (lerp!, addcmul!, addcdiv!:
    a has the broadcast size) and into a strided view (their 4-argument forms: the out forms), on
    float64 views of three Julia sizes, against Julia's a + w*(b - a), a + v*b*c, a + v*b/c."""
    name = rng.choice(["lerp", "lerp_scalar", "addcmul", "addcdiv"])
    form = rng.choice(["new", "inplace", "out"])
    sa, sb, sc, size = broadcast_three(rng)
    if form == "inplace":
        sa = size
    A, B = JuliaArray(rng, "float64", sa), JuliaArray(rng, "float64", sb)
    W = JuliaArray(rng, "float64", sc)
    v = rng.choice([0.25, 0.5, 0.75, -2.0, 3.0, 1.0])
    a, b, w = indexed(A, size), indexed(B, size), indexed(W, size)
    if name == "lerp_scalar":
        w = [v] * len(a)
    if name.startswith("lerp"):
        want = [x + k * (y - x) for x, y, k in zip(a, b, w)]
        scale = [(abs(x) + abs(y)) * (1 + abs(k)) for x, y, k in zip(a, b, w)]
    elif name == "addcmul":
        want = [x + v * y * z for x, y, z in zip(a, b, w)]
        scale = [abs(x) + abs(v * y * z) for x, y, z in zip(a, b, w)]
    else:
        want = [x + ieee_div(v * y, z) for x, y, z in zip(a, b, w)]
        scale = [abs(x) + abs(ieee_div(v * y, z)) for x, y, z in zip(a, b, w)]
    D = JuliaArray(rng, "float64", size) if form == "out" else None
    d_before = D.snapshot() if D else None
    ta, tb, tw = A.tensor(), B.tensor(), W.tensor()
    td, tr = (D.tensor() if D else None), P()
    base = "bc_" + name.replace("_scalar", "")
    scalar = name == "lerp_scalar"
    try:
        if form == "new":
            f = getattr(lib, base + ("_scalar" if scalar else ""))
            st = (f(ta, tb, fscalar(v), ctypes.byref(tr)) if scalar else
                  f(ta, tb, tw, ctypes.byref(tr)) if name == "lerp" else f(ta, tb, tw, fscalar(v), ctypes.byref(tr)))
        else:
            f = getattr(lib, base + ("_scalar" if scalar else "") + ("_inplace" if form == "inplace" else "_out"))
            extra = (td,) if form == "out" else ()
            st = (f(ta, tb, fscalar(v), *extra) if scalar else
                  f(ta, tb, tw, *extra) if name == "lerp" else f(ta, tb, tw, fscalar(v), *extra))
        if st != BC_OK:
            return f"{name} {form}: the library failed: {last_error()}"
        if form == "new":
            if julia_size_of(tr) != tuple(size):
                return f"{name}: result size {julia_size_of(tr)}, Julia's {tuple(size)}"
            got = julia_array_of(tr, "float64", size)
        elif form == "inplace":
            got = indexed(A, size)
        else:
            got = indexed(D, size)
            rest = list(d_before)
            for i, g in zip(column_major_indices(tuple(size)), got):
                rest[D.offset + sum(i[k] * D.strides[k] for k in range(len(i)))] = g
            if not same_values(D.snapshot(), rest):
                return f"{name} into a view: dest's parent changed outside the view"
        bad = [k for k, (g, x, sc_) in enumerate(zip(got, want, scale)) if not near(g, x, sc_)]
        return f"{name} {form} of {tuple(sa)}, {tuple(sb)}, {tuple(sc)}: element {bad[0]} is {got[bad[0]]}, Julia's {want[bad[0]]}" if bad else None
    finally:
        for t in (ta, tb, tw, td, tr):
            if t:
                lib.bc_tensor_free(t)


def check_clamp_forms(rng):
    """clamp!(t, lo, hi) (bc_clamp_scalar_inplace with numbers, bc_clamp_inplace with arrays as
    bounds) and dest .= clamp.(t, lo, hi) (bc_clamp_scalar_out, bc_clamp_out into a strided view),
    the bounds broadcast in Julia's order, against Julia's min(max(x, lo), hi)."""
    dtype = rng.choice(["float64", "int64"])
    size = random_size(rng, rng.randint(0, 4))
    A = JuliaArray(rng, dtype, size)
    tensors = rng.random() < 0.5
    form = rng.choice(["inplace", "out"])
    x = indexed(A, size)
    ta, td, tlo, thi = A.tensor(), None, None, None
    D = JuliaArray(rng, dtype, size) if form == "out" else None
    try:
        if tensors:
            bsize = lambda: [s if rng.random() < 0.6 else 1 for s in size][: rng.randint(0, len(size))]  # noqa: E731
            Lo, Hi = JuliaArray(rng, dtype, bsize()), JuliaArray(rng, dtype, bsize())
            lo, hi = indexed(Lo, size), indexed(Hi, size)
            tlo, thi = Lo.tensor(), Hi.tensor()
        else:
            l, h = sorted([rng.randint(-9, 9), rng.randint(-9, 9)])
            if dtype == "float64":
                l, h = l / 4, h / 4
            lo, hi = [l] * len(x), [h] * len(x)
            clo, chi = number(dtype, l), number(dtype, h)
        want = [min(max(v, a), b) for v, a, b in zip(x, lo, hi)]
        if form == "out":
            td = D.tensor()
            st = (lib.bc_clamp_out(ta, tlo, thi, td) if tensors else
                  lib.bc_clamp_scalar_out(ta, ctypes.byref(clo), ctypes.byref(chi), td))
            got = indexed(D, size)
        else:
            st = (lib.bc_clamp_inplace(ta, tlo, thi) if tensors else
                  lib.bc_clamp_scalar_inplace(ta, ctypes.byref(clo), ctypes.byref(chi)))
            got = indexed(A, size)
        what = f"clamp {form}, {'array' if tensors else 'number'} bounds, {dtype} {tuple(size)}"
        if st != BC_OK:
            return f"{what}: the library failed: {last_error()}"
        return None if got == want else f"{what}: values {got}, Julia's {want}"
    finally:
        for t in (ta, td, tlo, thi):
            if t:
                lib.bc_tensor_free(t)


def check_nan_reductions(rng):
    """nansum, nanmean and logsumexp (bc_nansum, bc_nanmean, bc_logsumexp) over Julia's dims
    (reversed, keepdim) or over everything ((NULL, 0): a 0-dimensional result, read as the value),
    on float64 views with NaNs, against the definitions written here."""
    size = [rng.randint(1, 4) for _ in range(rng.randint(1, 4))]
    n = len(size)
    A = JuliaArray(rng, "float64", size)
    for k in range(len(A.buf)):
        if rng.random() < 0.2:
            A.buf[k] = math.nan
        else:
            A.buf[k] = A.buf[k] / 1e9  # logsumexp of values near 1e10 is their maximum: keep some spread
    name = rng.choice(["nansum", "nanmean", "logsumexp"])
    with_dims = rng.random() < 0.6
    dims = sorted(rng.sample(range(n), rng.randint(1, n))) if with_dims else []
    args = (ctypes.c_int64 * len(dims))(*[n - (d + 1) for d in dims]) if with_dims else None
    ta, tr = A.tensor(), P()
    try:
        st = getattr(lib, "bc_" + name)(ta, args, len(dims), with_dims, ctypes.byref(tr))
        if st != BC_OK:
            return f"{name}: the library failed: {last_error()}"
        target = tuple(1 if d in dims else s for d, s in enumerate(size)) if with_dims else ()
        if julia_size_of(tr) != target:
            return f"{name}: result size {julia_size_of(tr)}, Julia's {target}"
        groups = {}
        for i in column_major_indices(tuple(size)):
            key = tuple(0 if d in dims else i[d] for d in range(n)) if with_dims else ()
            groups.setdefault(key, []).append(element(A, i))
        for key in column_major_indices(target):
            vals = groups[key]
            real = [v for v in vals if not math.isnan(v)]
            if name == "nansum":
                want, scale = math.fsum(real), sum(abs(v) for v in real)
            elif name == "nanmean":
                want = math.fsum(real) / len(real) if real else math.nan
                scale = sum(abs(v) for v in real) / max(len(real), 1)
            else:
                m = max(vals) if not any(math.isnan(v) for v in vals) else math.nan
                want = m if math.isnan(m) else m + math.log(math.fsum(math.exp(v - m) for v in vals))
                scale = abs(m) + 1 if not math.isnan(m) else 1
            got = read_element(tr, "float64", key)
            if not near(got, want, scale * 1e3):
                return f"{name} over {dims if with_dims else ':'} of {tuple(size)}: {got} at {key}, expected {want}"
        return None
    finally:
        if tr:
            lib.bc_tensor_free(tr)
        lib.bc_tensor_free(ta)


def check_arg_extreme(rng):
    """argmax(A) and argmin(A) (bc_argmax, bc_argmin with no dim: the flat row-major index of the
    reversed sizes, which the package reads as Julia's linear index) and argmax(A; dims = d) (the
    row-major dimension n - d, keepdim: the index along d), against Julia's first extreme element
    in column-major order."""
    size = [rng.randint(1, 4) for _ in range(rng.randint(1, 4))]
    n = len(size)
    dtype = rng.choice(["int64", "float64", "int32"])
    A = JuliaArray(rng, dtype, size)
    if dtype != "float64" and rng.random() < 0.7:
        for k in range(len(A.buf)):
            A.buf[k] = rng.randint(-2, 2)  # ties
    name = rng.choice(["argmax", "argmin"])
    better = (lambda x, y: x > y) if name == "argmax" else (lambda x, y: x < y)
    with_dim = rng.random() < 0.5
    d = rng.randrange(n)
    arg = ctypes.c_int64(n - (d + 1))
    ta, tr = A.tensor(), P()
    try:
        st = getattr(lib, "bc_" + name)(ta, ctypes.byref(arg) if with_dim else None, with_dim, ctypes.byref(tr))
        if st != BC_OK:
            return f"{name}: the library failed: {last_error()}"
        if not with_dim:
            best = None
            for lin, i in enumerate(column_major_indices(tuple(size))):
                if best is None or better(element(A, i), best[1]):
                    best = (lin, element(A, i))
            got = read_element(tr, "int64", ())
            return None if got == best[0] else f"{name} of {tuple(size)} {dtype}: linear index {got}, Julia's {best[0]}"
        target = tuple(1 if k == d else s for k, s in enumerate(size))
        if julia_size_of(tr) != target:
            return f"{name} over {d + 1}: result size {julia_size_of(tr)}, Julia's {target}"
        best = {}
        for i in column_major_indices(tuple(size)):
            key = tuple(0 if k == d else i[k] for k in range(n))
            if key not in best or better(element(A, i), best[key][1]):
                best[key] = (i[d], element(A, i))
        for key in column_major_indices(target):
            got = read_element(tr, "int64", key)
            if got != best[key][0]:
                return f"{name} over dimension {d + 1} of {tuple(size)} {dtype}: {got} at {key}, Julia's {best[key][0]}"
        return None
    finally:
        if tr:
            lib.bc_tensor_free(tr)
        lib.bc_tensor_free(ta)


def check_views_more(rng):
    """squeeze(t) (bc_tensor_squeeze_all), squeeze(t, d) (bc_tensor_squeeze of row-major n - d),
    broadcast_tensors(a, b, c) (bc_tensor_broadcast_tensors: views of Julia's broadcast size) and
    iscontiguous(t) (bc_tensor_is_contiguous: dense in Julia's column-major order)."""
    what = rng.choice(["squeeze", "squeeze_dim", "broadcast_tensors", "iscontiguous"])
    dtype = rng.choice(list(DTYPES))
    if what == "broadcast_tensors":
        sa, sb, sc, size = broadcast_three(rng)
        if rng.random() < 0.2:
            sc = list(sc) + [7]  # may not broadcast: then the library's error, nothing made
            size = julia_broadcast_size(size, sc)[0]
        arrs = [JuliaArray(rng, dtype, s) for s in (sa, sb, sc)]
        ins = (P * 3)(*[a.tensor() for a in arrs])
        outs = (P * 3)()
        try:
            st = lib.bc_tensor_broadcast_tensors(ins, 3, outs)
            if size is None:
                return None if st == BC_ERR_SHAPE and not any(outs) else f"broadcast_tensors: status {st} for sizes Julia refuses"
            if st != BC_OK:
                return f"broadcast_tensors: the library failed: {last_error()}"
            for arr, o in zip(arrs, outs):
                if julia_size_of(o) != tuple(size):
                    return f"broadcast_tensors: size {julia_size_of(o)}, Julia's {tuple(size)}"
                if julia_array_of(o, dtype, size) != indexed(arr, size) and not same_values(julia_array_of(o, dtype, size), indexed(arr, size)):
                    return f"broadcast_tensors of {tuple(arr.size)} to {tuple(size)}: values differ from Julia's"
            return None
        finally:
            for t in list(ins) + list(outs):
                if t:
                    lib.bc_tensor_free(t)
    size = [rng.choice([1, 1, 2, 3]) for _ in range(rng.randint(0, 4))]
    A = JuliaArray(rng, dtype, size)
    ta, tv = A.tensor(), P()
    try:
        if what == "iscontiguous":
            flag = ctypes.c_bool()
            if lib.bc_tensor_is_contiguous(ta, ctypes.byref(flag)) != BC_OK:
                return f"iscontiguous: the library failed: {last_error()}"
            want, expected = True, 1
            for s, st in zip(A.size, A.strides):
                if s != 1:
                    want = want and st == expected
                    expected *= s
            return None if flag.value == want else f"iscontiguous of a view {tuple(size)}, strides {A.strides}: {flag.value}"
        if what == "squeeze" or not size:
            st = lib.bc_tensor_squeeze_all(ta, ctypes.byref(tv))
            newsize = tuple(s for s in size if s != 1)
        else:
            d = rng.randrange(len(size))
            st = lib.bc_tensor_squeeze(ta, len(size) - (d + 1), ctypes.byref(tv))
            newsize = tuple(s for k, s in enumerate(size) if k != d or s != 1)
        if st != BC_OK:
            return f"{what}: the library failed: {last_error()}"
        if julia_size_of(tv) != newsize:
            return f"{what} of {tuple(size)}: size {julia_size_of(tv)}, Julia's {newsize}"
        got, want = julia_array_of(tv, dtype, newsize), indexed(A, size)
        return None if same_values(got, want) else f"{what} of {tuple(size)}: values differ"
    finally:
        if tv:
            lib.bc_tensor_free(tv)
        lib.bc_tensor_free(ta)


def check_cast(rng):
    """cast(T, t) (bc_tensor_to_dtype) of a strided view: the elements in Julia's order, converted
    as C casts them (int64 to Int32 wraps, float64 to Float32 rounds, to Bool is != 0)."""
    src, dst = rng.choice([("int64", "int32"), ("float64", "float32"), ("int32", "float64"), ("float64", "bool")])
    size = random_size(rng, rng.randint(0, 4))
    A = JuliaArray(rng, src, size)
    conv = {"int32": lambda v: wrap_int(int(v), 32), "float32": lambda v: ctypes.c_float(v).value,
            "float64": float, "bool": lambda v: v != 0}[dst]
    ta, tr = A.tensor(), P()
    code = BOOL[0] if dst == "bool" else DTYPES[dst][0]
    try:
        if lib.bc_tensor_to_dtype(ta, code, ctypes.byref(tr)) != BC_OK:
            return f"cast: the library failed: {last_error()}"
        if julia_size_of(tr) != tuple(size):
            return f"cast: size {julia_size_of(tr)}, Julia's {tuple(size)}"
        for i in column_major_indices(tuple(size)):
            got, want = read_element(tr, dst, i), conv(element(A, i))
            if got != want:
                return f"cast {src} to {dst} of {tuple(size)}: {got} at {i}, expected {want}"
        return None
    finally:
        if tr:
            lib.bc_tensor_free(tr)
        lib.bc_tensor_free(ta)


def main():
    seed = int(os.environ.get("BC_PROXY_SEED", random.randrange(1 << 32)))
    pairs = int(os.environ.get("BC_PROXY_PAIRS", 1500))
    rng = random.Random(seed)
    print(f"column-major proxy test of LibBroadcast's reversed sizes and strides: seed {seed} "
          f"(BC_PROXY_SEED), {pairs} random size pairs, library {os.path.abspath(LIB_PATH)}")
    live = lib.bc_tensor_live_count()
    passed = failed = refused = 0
    for n in range(pairs):
        sa, sb = random_pair(rng)
        dtype = rng.choice(list(DTYPES))
        op = rng.choice([o for o in OPS if o != "div" or DTYPES[dtype][2]])
        inplace = rng.random() < 0.25
        problem = check_pair(rng, sa, sb, dtype, op, inplace)
        if julia_broadcast_size(sa, sb)[0] is None:
            refused += 1
        if problem is None:
            passed += 1
        else:
            failed += 1
            if failed <= 10:
                kind = "in place" if inplace else "out of place"
                print(f"FAIL pair {n}: A {tuple(sa)} {op} B {tuple(sb)}, {dtype}, {kind}: {problem}")
    for n in range(pairs // 3):
        sc, sa, sb = random_triple(rng)
        dtype = rng.choice(list(DTYPES))
        problem = check_select(rng, sc, sa, sb, dtype)
        if problem is None:
            passed += 1
        else:
            failed += 1
            if failed <= 10:
                print(f"FAIL select {n}: C {tuple(sc)}, A {tuple(sa)}, B {tuple(sb)}, {dtype}: {problem}")
    reductions = pairs // 3
    for n in range(reductions):
        dtype, to_size = rng.choice(["int32", "int64"]), rng.random() < 0.5
        problem = check_reduction(rng, dtype, to_size)
        if problem is None:
            passed += 1
        else:
            failed += 1
            if failed <= 10:
                what = "sum_to_size" if to_size else "sum(A; dims)"
                print(f"FAIL reduction {n}, {what}, {dtype}: {problem}")
    print(f"{reductions} reductions checked")
    unaries = pairs // 3
    for n in range(unaries):
        dtype = rng.choice(list(DTYPES))
        problem = check_unary(rng, dtype)
        if problem is None:
            passed += 1
        else:
            failed += 1
            if failed <= 10:
                print(f"FAIL unary {n}, {dtype}: {problem}")
    print(f"{unaries} unary operations checked")
    conventions = [("getindex", lambda: check_getindex(rng, rng.choice(list(DTYPES)))),
                   (".=", lambda: check_assign(rng, rng.choice(list(DTYPES)))),
                   ("out form", lambda: check_out(rng, rng.choice(list(DTYPES)))),
                   ("ifelse/clamp with numbers", lambda: check_number_operands(rng, rng.choice(list(DTYPES)))),
                   ("reduction to a value", lambda: check_reduce_value(rng)),
                   ("reshape", lambda: check_reshape(rng, rng.choice(list(DTYPES)))),
                   ("lerp/addcmul/addcdiv", lambda: check_ternary(rng)),
                   ("clamp! and clamp into dest", lambda: check_clamp_forms(rng)),
                   ("nansum/nanmean/logsumexp", lambda: check_nan_reductions(rng)),
                   ("argmax/argmin", lambda: check_arg_extreme(rng)),
                   ("squeeze/broadcast_tensors/iscontiguous", lambda: check_views_more(rng)),
                   ("cast", lambda: check_cast(rng))]
    for what, check in conventions:
        count = pairs // 5
        for n in range(count):
            problem = check()
            if problem is None:
                passed += 1
            else:
                failed += 1
                if failed <= 10:
                    print(f"FAIL {what} {n}: {problem}")
        print(f"{count} cases of {what} checked")
    # set_parallel_threshold(n): BC_OK, and the package's operations still right with every
    # operation on the pool (threshold 1), then the default again (0).
    if lib.bc_set_parallel_threshold(1) != BC_OK:
        failed += 1
        print("FAIL set_parallel_threshold(1)")
    problem = check_pair(rng, [64, 33], [64, 1], "float64", "add", False)
    if lib.bc_set_parallel_threshold(0) != BC_OK or problem is not None:
        failed += 1
        print(f"FAIL set_parallel_threshold: {problem}")
    else:
        passed += 1
    format_problems = check_format()
    for problem in format_problems:
        failed += 1
        print(f"FAIL show: {problem}")
    passed += 3 - len(format_problems)  # the three texts of check_format
    if lib.bc_tensor_live_count() != live:
        failed += 1
        print(f"FAIL: {lib.bc_tensor_live_count() - live} tensor handles leaked")
    print(f"{refused} of the pairs do not broadcast in Julia (checked as errors)")
    print(f"colmajor-proxy: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
