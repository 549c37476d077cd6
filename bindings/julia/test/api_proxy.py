#!/usr/bin/env python3
"""The rest of LibBroadcast's C calls, replayed where Julia cannot run (the sibling of
colmajor_proxy.py, whose helpers it uses: column-major strided views of a ctypes buffer, handed
to the library as LibBroadcast.wrap hands a Julia array, with the size and strides reversed).

Each case makes the C calls the package makes, in its order and with its argument mapping from
Julia's terms (reversed sizes and strides, Julia dimension d of n as row-major n - d, or as -d
where n is not known), and checks the result against Julia's rule computed here in plain Python
from the operands' elements, never from the library:

  - `Tensor(undef, T, dims...)`, `LibBroadcast.zeros/ones/fill` (bc_tensor_empty, _zeros,
    _ones, _full; an Int64 beyond 2^53 through the `.=` path) and `Tensor(A; copy = true)`
    (bc_tensor_from_data of the dense column-major copy: later writes to A do not show);
  - the views `broadcast_to`, `expand_as`, `swapdims` (bc_tensor_transpose), `unsqueeze`,
    `flatten`, `as_strided`, `reshape(...; copy = false)` (bc_tensor_view), `storage_offset`,
    `contiguous`, `permutedims` of a vector, and `isopen` (bc_tensor_is_live);
  - `broadcast_shapes` (bc_shape_broadcast for two sizes, bc_shape_broadcast_n otherwise) and
    `isbroadcastable`, against Julia's broadcast rule; a BroadcastError's fields (kind, Julia
    dimension, shapes) from bc_last_error_info and bc_last_error_shape;
  - `dtype_name`, `dtype_size` (the package's element-type codes against PyTorch's names and
    sizes) and `status_string`;
  - `to_dlpack` / `from_dlpack` / `free_dlpack` (versioned and not): the exported struct read
    field by field, a producer's struct made here with a deleter that counts its calls;
  - `@fused` (bc_expr_eval, _eval_out, bc_expr_reduce and the three plans) on random expression
    trees over up to three strided views, the program built as the package's Program builds it;
  - the settings' setters and getters.

Ends with `N passed, N failed`. Usage: api_proxy.py [path/to/libbroadcast.so]; BC_PROXY_SEED
sets the seed (printed), BC_PROXY_CASES the cases per kind (200).
"""
import ctypes
import math
import os
import random
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import colmajor_proxy as cp  # noqa: E402  (loads the library named on the command line)
from colmajor_proxy import (  # noqa: E402
    BC_OK, BC_ERR_SHAPE, BOOL, C, DTYPES, P, JuliaArray, apply, column_major_indices, ctype_of,
    element, indexed, julia_broadcast_size, julia_size_of, last_error, lib, random_pair,
    random_size, read_element, same_values, wrap_int,
)

I64 = ctypes.c_int64
I64P = ctypes.POINTER(I64)
SZ = ctypes.c_size_t
PP = ctypes.POINTER(P)


def sig(name, args, res=ctypes.c_int32):
    f = getattr(lib, name)
    f.argtypes, f.restype = args, res


for _n in ("bc_tensor_empty", "bc_tensor_zeros", "bc_tensor_ones"):
    sig(_n, [ctypes.c_int32, I64P, SZ, PP])
sig("bc_tensor_full", [ctypes.c_int32, I64P, SZ, ctypes.c_double, PP])
sig("bc_tensor_from_data", [ctypes.c_int32, I64P, SZ, P, SZ, PP])
sig("bc_tensor_is_live", [P], ctypes.c_bool)
sig("bc_tensor_contiguous", [P, PP])
sig("bc_tensor_offset", [P, I64P])
sig("bc_tensor_broadcast_to", [P, I64P, SZ, PP])
sig("bc_tensor_expand_as", [P, P, PP])
sig("bc_tensor_transpose", [P, I64, I64, PP])
sig("bc_tensor_as_strided", [P, I64P, I64P, SZ, I64, PP])
sig("bc_tensor_view", [P, I64P, SZ, PP])
sig("bc_tensor_unsqueeze", [P, I64, PP])
sig("bc_tensor_flatten", [P, I64, I64, ctypes.POINTER(ctypes.c_bool), PP])
sig("bc_dtype_size", [ctypes.c_int32], SZ)
sig("bc_dtype_name", [ctypes.c_int32], ctypes.c_char_p)
sig("bc_status_str", [ctypes.c_int32], ctypes.c_char_p)
sig("bc_shape_broadcast", [I64P, SZ, I64P, SZ, I64P, SZ, ctypes.POINTER(SZ)])
sig("bc_shape_broadcast_n", [ctypes.POINTER(I64P), ctypes.POINTER(SZ), SZ, I64P, SZ, ctypes.POINTER(SZ)])
sig("bc_shape_is_broadcastable", [I64P, SZ, I64P, SZ, ctypes.POINTER(ctypes.c_bool)])
for _n in ("bc_tensor_to_dlpack", "bc_tensor_to_dlpack_versioned", "bc_tensor_from_dlpack",
           "bc_tensor_from_dlpack_versioned", "bc_tensor_squeeze_all", "bc_tensor_clone"):
    sig(_n, [P, PP])
sig("bc_tensor_slice", [P, I64, I64, I64, I64, PP])
sig("bc_binary_inplace", [ctypes.c_int32, P, P])
sig("bc_last_error_info", [P])
sig("bc_last_error_shape", [ctypes.c_int32, I64P, SZ, I64P])
sig("bc_set_num_threads", [SZ])
sig("bc_get_num_threads", [], SZ)
sig("bc_set_broadcast_warning", [ctypes.c_bool])
sig("bc_get_broadcast_warning", [], ctypes.c_bool)
sig("bc_set_legacy_fallback", [ctypes.c_bool])
sig("bc_get_legacy_fallback", [], ctypes.c_bool)


class ExprStep(ctypes.Structure):
    """struct bc_expr_step, as the package's CExprStep mirrors it."""
    _fields_ = [("kind", ctypes.c_int32), ("arg", ctypes.c_int32), ("int_value", I64), ("float_value", ctypes.c_double)]


class Geometry(ctypes.Structure):
    """struct bc_geometry (the package's CGeometry)."""
    _fields_ = [("dtype", ctypes.c_int32), ("ndim", SZ), ("shape", I64P), ("strides", I64P)]


class Plan(ctypes.Structure):
    """struct bc_plan (the package's CPlan)."""
    _fields_ = [("dtype", ctypes.c_int32), ("compute_dtype", ctypes.c_int32), ("flags", ctypes.c_uint32),
                ("loop_kind", ctypes.c_int32), ("ndim", SZ), ("shape", I64 * C["BC_MAX_NDIM"]),
                ("strides", I64 * C["BC_MAX_NDIM"]), ("loop_ndim", SZ), ("loop_shape", I64 * C["BC_MAX_NDIM"]),
                ("threads", SZ), ("alloc_bytes", SZ)]


class ErrorInfo(ctypes.Structure):
    """struct bc_error_info (the package's ErrorInfo)."""
    _fields_ = [("status", ctypes.c_int32), ("kind", ctypes.c_int32), ("dim", I64), ("size_a", I64),
                ("size_b", I64), ("arg", I64), ("dtype_a", ctypes.c_int32), ("dtype_b", ctypes.c_int32),
                ("ndim_a", I64), ("ndim_b", I64)]


StepP, GeomP = ctypes.POINTER(ExprStep), ctypes.POINTER(Geometry)
sig("bc_expr_eval", [StepP, SZ, PP, SZ, PP])
sig("bc_expr_eval_out", [StepP, SZ, PP, SZ, P])
sig("bc_expr_reduce", [StepP, SZ, PP, SZ, ctypes.c_int32, I64P, SZ, ctypes.c_bool, PP])
sig("bc_plan_expr", [StepP, SZ, GeomP, SZ, ctypes.POINTER(Plan)])
sig("bc_plan_expr_out", [StepP, SZ, GeomP, SZ, GeomP, ctypes.POINTER(Plan)])
sig("bc_plan_expr_reduce", [StepP, SZ, GeomP, SZ, ctypes.c_int32, I64P, SZ, ctypes.c_bool, ctypes.POINTER(Plan)])


# DLPack's structs, laid out by ctypes from DLPack's definition (independently of the offsets
# the package's free_dlpack reads the deleter at).
class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", P), ("device", DLDevice), ("ndim", ctypes.c_int32), ("dtype", DLDataType),
                ("shape", I64P), ("strides", I64P), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensorVersioned(ctypes.Structure):
    pass


class DLManagedTensor(ctypes.Structure):
    pass


DELETER_V = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensorVersioned))
DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
DLManagedTensorVersioned._fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32), ("manager_ctx", P),
                                     ("deleter", DELETER_V), ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", P), ("deleter", DELETER)]
READ_ONLY = 1  # DLPACK_FLAG_BITMASK_READ_ONLY
# The package's free_dlpack reads the deleter at these byte offsets (src/dlpack.jl).
with open(os.path.join(cp.HERE, "..", "src", "dlpack.jl")) as _f:
    _m = re.search(r"DLPACK_DELETER_OFFSET = \(versioned = (\d+), unversioned = (\d+)\)", _f.read())
PACKAGE_DELETER_OFFSETS = (int(_m.group(1)), int(_m.group(2))) if _m else None

# The element types in the package's order (eltypes.jl): Julia's name, PyTorch's name, bytes.
with open(os.path.join(cp.HERE, "..", "src", "eltypes.jl")) as _f:
    ELTYPES = re.search(r"const ELTYPES = \((.*?)\)", _f.read()).group(1).replace(" ", "").split(",")
TORCH_NAMES = {"Bool": ("bool", 1), "UInt8": ("uint8", 1), "Int8": ("int8", 1), "Int16": ("int16", 2),
               "Int32": ("int32", 4), "Int64": ("int64", 8), "Float16": ("float16", 2),
               "BFloat16Bits": ("bfloat16", 2), "Float32": ("float32", 4), "Float64": ("float64", 8)}


def arr64(values):
    return (I64 * max(len(values), 1))(*values)


def rev(values):
    return arr64(list(reversed(values)))


def free(*ts):
    for t in ts:
        if t:
            lib.bc_tensor_free(t)


def numel(size):
    n = 1
    for s in size:
        n *= s
    return n


def julia_strides_of(t):
    nd = SZ()
    assert lib.bc_tensor_ndim(t, ctypes.byref(nd)) == BC_OK
    st = (I64 * max(nd.value, 1))()
    assert lib.bc_tensor_strides(t, st, nd.value) == BC_OK
    return tuple(reversed(st[: nd.value]))


def values_of(t, dtype, size):
    """t[i...] at every Julia index of `size`, in column-major order, read as the package's
    getindex reads them."""
    return [read_element(t, dtype, i) for i in column_major_indices(tuple(size))]


def dtype_code_of(t):
    r = ctypes.c_int32()
    assert lib.bc_tensor_dtype(t, ctypes.byref(r)) == BC_OK
    return r.value


ALL = dict(DTYPES, bool=BOOL)


# ------------------------------------------------------------------------------------------------
# New tensors
# ------------------------------------------------------------------------------------------------

def c_cast(dtype, v):
    """A double converted to dtype as a C cast (the library's bc_tensor_full rule)."""
    if dtype == "bool":
        return v != 0
    if dtype in ("float64",):
        return v
    if dtype == "float32":
        return ctypes.c_float(v).value
    return wrap_int(int(v), 32 if dtype == "int32" else 64)


def check_constructors(rng):
    """Tensor(undef, T, dims...), zeros, ones, fill: the Julia size reversed; fill of an Int64
    that a double cannot hold goes through bc_tensor_empty then `.=` (the 0-d value expanded to
    the size, times a 0-d true, bc_binary_out)."""
    kind = rng.choice(["empty", "zeros", "ones", "full", "full_big"])
    dtype = "int64" if kind == "full_big" else rng.choice(list(ALL))
    size = random_size(rng, rng.randint(0, 4))
    code = ALL[dtype][0]
    out = P()
    shape = rev(size)
    if kind == "full":
        v = rng.choice([0.0, 1.0, -3.0, 2.5, 7.75, -0.5, 300.0])
        st = lib.bc_tensor_full(code, shape, len(size), v, ctypes.byref(out))
        want = c_cast(dtype, v)
    elif kind == "full_big":
        v = (1 << 60) + rng.randint(1, 999) * rng.choice([1, -1])
        st = lib.bc_tensor_empty(code, shape, len(size), ctypes.byref(out))
        want = v
    else:
        st = getattr(lib, "bc_tensor_" + kind)(code, shape, len(size), ctypes.byref(out))
        want = None if kind == "empty" else c_cast(dtype, 1.0 if kind == "ones" else 0.0)
    extra = []
    try:
        if st != BC_OK:
            return f"{kind} {dtype} {tuple(size)}: the library failed: {last_error()}"
        if kind == "full_big":  # the package's assign!(t, x)
            zd, one = cp.ZeroDim("int64", v), cp.ZeroDim("bool", True)
            extra = [zd, one]
            s2, ex = cp.expand(zd.t, size)
            if s2 != BC_OK or lib.bc_binary_out(C["BC_OP_MUL"], ex, one.t, out) != BC_OK:
                free(ex)
                return f"fill of {v}: the .= path failed: {last_error()}"
            free(ex)
        if julia_size_of(out) != tuple(size) or dtype_code_of(out) != code:
            return f"{kind}: size {julia_size_of(out)} dtype {dtype_code_of(out)}, Julia's {tuple(size)} {code}"
        if want is not None:
            got = values_of(out, dtype, size)
            bad = [g for g in got if g != want]
            if bad:
                return f"{kind} {dtype} {tuple(size)}: an element is {bad[0]}, not {want}"
        return None
    finally:
        free(out)
        for z in extra:
            z.free()


def check_from_data(rng):
    """Tensor(A; copy = true): bc_tensor_from_data of A's dense column-major copy (the row-major
    bytes of the reversed size); the result holds A's elements and later writes to A do not
    show."""
    dtype = rng.choice(list(DTYPES))
    size = random_size(rng, rng.randint(0, 4))
    A = JuliaArray(rng, dtype, size)
    dense = indexed(A, size)  # convert(Array{T}, A): column-major
    ctype = DTYPES[dtype][1]
    buf = (ctype * max(len(dense), 1))(*dense)
    out = P()
    st = lib.bc_tensor_from_data(A.code, rev(size), len(size), buf, len(dense) * ctypes.sizeof(ctype), ctypes.byref(out))
    try:
        if st != BC_OK:
            return f"from_data {tuple(size)}: the library failed: {last_error()}"
        for k in range(len(dense)):
            buf[k] = 0
        got = values_of(out, dtype, size)
        if julia_size_of(out) != tuple(size) or not same_values(got, indexed(A, size)):
            return f"Tensor(A; copy = true) of {tuple(size)} {dtype}: elements differ from A's"
        return None
    finally:
        free(out)


# ------------------------------------------------------------------------------------------------
# Views
# ------------------------------------------------------------------------------------------------

def view_check(what, tv, dtype, want_size, want_at):
    """The view's Julia size is want_size and element i is want_at(i)."""
    if julia_size_of(tv) != tuple(want_size):
        return f"{what}: size {julia_size_of(tv)}, Julia's {tuple(want_size)}"
    for i in column_major_indices(tuple(want_size)):
        g, w = read_element(tv, dtype, i), want_at(i)
        if not same_values([g], [w]):
            return f"{what}: element {i} is {g}, Julia's {w}"
    return None


def check_views(rng):
    what = rng.choice(["broadcast_to", "expand_as", "swapdims", "unsqueeze", "flatten", "as_strided",
                       "view", "view_refused", "storage_offset", "contiguous", "permutedims_vector", "isopen"])
    dtype = rng.choice(list(DTYPES))
    size = [rng.choice([1, 1, 2, 3]) for _ in range(rng.randint(1 if what in ("swapdims",) else 0, 4))]
    n = len(size)
    A = JuliaArray(rng, dtype, size)
    ta, tv, other = A.tensor(), P(), P()
    try:
        if what in ("broadcast_to", "expand_as"):
            target = [s if s != 1 else rng.choice([1, 2, 3]) for s in size] + [rng.choice([1, 2]) for _ in range(rng.randint(0, 2))]
            if what == "broadcast_to":
                st = lib.bc_tensor_broadcast_to(ta, rev(target), len(target), ctypes.byref(tv))
            else:
                O = JuliaArray(rng, "float64", target)
                other = O.tensor()
                st = lib.bc_tensor_expand_as(ta, other, ctypes.byref(tv))
            if st != BC_OK:
                return f"{what} {tuple(size)} to {tuple(target)}: the library failed: {last_error()}"
            return view_check(f"{what} {tuple(size)} to {tuple(target)}", tv, dtype, target, lambda i: element(A, i[:n]))
        if what == "swapdims":
            i, j = rng.randrange(n) + 1, rng.randrange(n) + 1
            if lib.bc_tensor_transpose(ta, n - i, n - j, ctypes.byref(tv)) != BC_OK:
                return f"swapdims: the library failed: {last_error()}"
            want = list(size)
            want[i - 1], want[j - 1] = size[j - 1], size[i - 1]

            def at(idx):
                src = list(idx)
                src[i - 1], src[j - 1] = idx[j - 1], idx[i - 1]
                return element(A, src)
            return view_check(f"swapdims({tuple(size)}, {i}, {j})", tv, dtype, want, at)
        if what == "unsqueeze":
            d = rng.randint(1, n + 1)
            if lib.bc_tensor_unsqueeze(ta, n + 1 - d, ctypes.byref(tv)) != BC_OK:
                return f"unsqueeze: the library failed: {last_error()}"
            want = size[: d - 1] + [1] + size[d - 1:]
            return view_check(f"unsqueeze({tuple(size)}, {d})", tv, dtype, want, lambda idx: element(A, idx[: d - 1] + idx[d:]))
        if what == "permutedims_vector":
            B = JuliaArray(rng, dtype, [rng.randint(1, 5)])
            tb = B.tensor()
            st = lib.bc_tensor_unsqueeze(tb, 2 - 1, ctypes.byref(tv))  # unsqueeze(t, 1) of n = 1
            lib.bc_tensor_free(tb)
            if st != BC_OK:
                return f"permutedims of a vector: the library failed: {last_error()}"
            return view_check("permutedims of a vector", tv, dtype, [1, B.size[0]], lambda idx: element(B, idx[1:]))
        if what == "flatten":
            m = max(n, 1)
            first = rng.randint(1, m)
            last = rng.randint(first, m)
            lo, hi = (-1, -1) if n == 0 else (n - last, n - first)
            copied = ctypes.c_bool()
            if lib.bc_tensor_flatten(ta, lo, hi, ctypes.byref(copied), ctypes.byref(tv)) != BC_OK:
                return f"flatten: the library failed: {last_error()}"
            if n == 0:
                return view_check("flatten of a 0-d", tv, dtype, [1], lambda idx: element(A, ()))
            merged = size[first - 1: last]
            want = size[: first - 1] + [numel(merged)] + size[last:]

            def at(idx):
                k, sub = idx[first - 1], []
                for s in merged:  # the merged index, column-major
                    sub.append(k % s)
                    k //= s
                return element(A, list(idx[: first - 1]) + sub + list(idx[first:]))
            return view_check(f"flatten({tuple(size)}, {first}, {last})", tv, dtype, want, at)
        if what == "as_strided":
            span = 1 + sum((s - 1) * st for s, st in zip(A.size, A.strides)) if all(size) else 0
            if span == 0:
                return None
            nsz = [rng.randint(1, 3) for _ in range(rng.randint(0, 3))]
            nst = [rng.randint(0, 3) for _ in nsz]
            reach = sum((s - 1) * st for s, st in zip(nsz, nst))
            if reach >= span:
                nst = [0] * len(nsz)
                reach = 0
            off = rng.randint(0, span - 1 - reach)
            if lib.bc_tensor_as_strided(ta, rev(nsz), rev(nst), len(nsz), off, ctypes.byref(tv)) != BC_OK:
                return f"as_strided: the library failed: {last_error()}"
            return view_check(f"as_strided({tuple(nsz)}, {tuple(nst)}, offset {off})", tv, dtype, nsz,
                              lambda idx: A.buf[A.offset + off + sum(i * s for i, s in zip(idx, nst))])
        if what in ("view", "view_refused"):
            dense = JuliaArray.__new__(JuliaArray)
            total = numel(size)
            # A dense column-major array (Julia's Array) can always be viewed with any sizes of
            # its element count; a swapped 2-d view of one cannot be flattened.
            vals = [rng.randint(-50, 50) for _ in range(max(total, 1))]
            ctype = DTYPES[dtype][1]
            dense.buf, dense.size, dense.offset, dense.dtype = (ctype * max(total, 1))(*vals), tuple(size), 0, dtype
            acc, strides = 1, []
            for s in size:
                strides.append(acc)
                acc *= s
            dense.strides, dense.code, dense.itemsize = tuple(strides), A.code, ctypes.sizeof(ctype)
            td = dense.tensor()
            try:
                if what == "view_refused":
                    if len(size) < 2 or size[0] < 2 or size[1] < 2:
                        return None
                    sw = P()
                    assert lib.bc_tensor_transpose(td, n - 1, n - 2, ctypes.byref(sw)) == BC_OK
                    st = lib.bc_tensor_view(sw, arr64([-1]), 1, ctypes.byref(tv))
                    lib.bc_tensor_free(sw)
                    return None if st == BC_ERR_SHAPE and not tv else f"reshape(swapped; copy = false): status {st}, a view"
                new = [total] if total < 2 or rng.random() < 0.4 else None
                if new is None:
                    f = next((k for k in (2, 3, 5) if total % k == 0), total)
                    new = [f, total // f]
                jl = list(new)
                if rng.random() < 0.3 and total > 0:
                    jl[rng.randrange(len(jl))] = -1  # `:`
                if lib.bc_tensor_view(td, rev(jl), len(jl), ctypes.byref(tv)) != BC_OK:
                    return f"reshape({tuple(size)} to {tuple(jl)}; copy = false): the library failed: {last_error()}"
                flat = indexed(dense, size)

                def at(idx):
                    k, mul = 0, 1
                    for i, s in zip(idx, new):
                        k += i * mul
                        mul *= s
                    return flat[k]
                return view_check(f"reshape({tuple(size)}, {tuple(jl)}; copy = false)", tv, dtype, new, at)
            finally:
                lib.bc_tensor_free(td)
        if what == "storage_offset":
            if n == 0 or size[0] < 2:
                return None
            k = rng.randint(1, size[0] - 1)
            if lib.bc_tensor_slice(ta, n - 1, k, size[0], 1, ctypes.byref(tv)) != BC_OK:
                return f"slice: the library failed: {last_error()}"
            off = I64()
            if lib.bc_tensor_offset(tv, ctypes.byref(off)) != BC_OK:
                return f"storage_offset: the library failed: {last_error()}"
            return None if off.value == k * A.strides[0] else f"storage_offset of t[{k + 1}:end, ...] is {off.value}, not {k * A.strides[0]}"
        if what == "contiguous":
            if lib.bc_tensor_contiguous(ta, ctypes.byref(tv)) != BC_OK:
                return f"contiguous: the library failed: {last_error()}"
            acc, want = 1, []
            for s in size:
                want.append(acc)
                acc *= s
            got = julia_strides_of(tv)
            dense_ok = all(g == w for g, w, s in zip(got, want, size) if s != 1)
            if not dense_ok:
                return f"contiguous of {tuple(size)}: Julia strides {got}, column-major {tuple(want)}"
            return view_check("contiguous", tv, dtype, size, lambda i: element(A, i))
        # isopen: bc_tensor_is_live of a live handle, then of the same handle freed
        c = P()
        assert lib.bc_tensor_clone(ta, ctypes.byref(c)) == BC_OK
        live = lib.bc_tensor_is_live(c)
        lib.bc_tensor_free(c)
        dead = lib.bc_tensor_is_live(c)
        return None if live and not dead else f"isopen: live {live}, after close {dead}"
    finally:
        free(ta, tv, other)


# ------------------------------------------------------------------------------------------------
# Shapes and errors
# ------------------------------------------------------------------------------------------------

def check_shapes(rng):
    """broadcast_shapes of 0 to 4 Julia sizes (two: bc_shape_broadcast, else _n) and
    isbroadcastable of two, against Julia's rule."""
    k = rng.choice([0, 1, 2, 2, 3, 4])
    sizes = list(random_pair(rng))
    while len(sizes) < k:
        sizes.append(rng.choice(sizes)[: rng.randint(0, 3)])
    sizes = sizes[:k]
    want = ()
    for s in sizes:
        want = want if want is None else julia_broadcast_size(want, s)[0]
    rs = [rev(s) for s in sizes]
    cap = max([len(s) for s in sizes], default=0)
    out, nd = (I64 * max(cap, 1))(), SZ()
    if k == 2:
        st = lib.bc_shape_broadcast(rs[0], len(sizes[0]), rs[1], len(sizes[1]), out, cap, ctypes.byref(nd))
        yes = ctypes.c_bool()
        if lib.bc_shape_is_broadcastable(rs[0], len(sizes[0]), rs[1], len(sizes[1]), ctypes.byref(yes)) != BC_OK:
            return f"isbroadcastable: the library failed: {last_error()}"
        if yes.value != (want is not None):
            return f"isbroadcastable{tuple(map(tuple, sizes))}: {yes.value}, Julia's {want is not None}"
    else:
        ptrs = (I64P * max(k, 1))(*[ctypes.cast(r, I64P) for r in rs])
        lens = (SZ * max(k, 1))(*[len(s) for s in sizes])
        st = lib.bc_shape_broadcast_n(ptrs, lens, k, out, cap, ctypes.byref(nd))
    if want is None:
        return None if st == BC_ERR_SHAPE else f"broadcast_shapes{tuple(map(tuple, sizes))}: status {st}, Julia refuses"
    if st != BC_OK:
        return f"broadcast_shapes{tuple(map(tuple, sizes))}: the library failed: {last_error()}"
    got = tuple(reversed(out[: nd.value]))
    return None if got == tuple(want) else f"broadcast_shapes{tuple(map(tuple, sizes))}: {got}, Julia's {tuple(want)}"


def check_error_fields(rng):
    """A BroadcastError as the package builds it: bc_last_error_info and both shapes right after
    the failing call; the Julia dimension (max(n_a, n_b) - dim) is the first one where Julia's
    rule fails, and the shapes reversed are the Julia sizes."""
    while True:
        sa, sb = random_pair(rng)
        size, k = julia_broadcast_size(sa, sb)
        if size is None:
            break
    A, B = JuliaArray(rng, "float64", sa), JuliaArray(rng, "float64", sb)
    ta, tb, tr = A.tensor(), B.tensor(), P()
    try:
        st = lib.bc_binary(C["BC_OP_ADD"], ta, tb, ctypes.byref(tr))
        info = ErrorInfo()
        assert lib.bc_last_error_info(ctypes.byref(info)) == BC_OK
        shapes = []
        for which, nd in ((0, info.ndim_a), (1, info.ndim_b)):
            buf, got_nd = (I64 * max(nd, 1))(), I64()
            assert lib.bc_last_error_shape(which, buf, max(nd, 0), ctypes.byref(got_nd)) == BC_OK
            shapes.append(tuple(reversed(buf[: got_nd.value])))
        if st != BC_ERR_SHAPE or info.kind != C["BC_ERROR_KIND_NOT_BROADCASTABLE"]:
            return f"{tuple(sa)} .+ {tuple(sb)}: status {st}, kind {info.kind}"
        dim = max(len(sa), len(sb)) - info.dim
        if dim != k + 1 or shapes != [tuple(sa), tuple(sb)]:
            return f"{tuple(sa)} .+ {tuple(sb)}: Julia dimension {dim} (Julia's {k + 1}), shapes {shapes}"
        return None
    finally:
        free(ta, tb, tr)


def check_queries():
    """dtype_name(T) and dtype_size(T) for each of the package's element types (bc_dtype_name and
    bc_dtype_size of dtype_code(T), its index in ELTYPES) against PyTorch's names and sizes, and
    status_string (bc_status_str) of every status: distinct texts, 'unknown status' for another
    number."""
    problems = []
    for code, jl in enumerate(ELTYPES):
        name, size = TORCH_NAMES[jl]
        got = lib.bc_dtype_name(code).decode()
        if got != name or lib.bc_dtype_size(code) != size:
            problems.append(f"dtype_name/size({jl}): {got!r}, {lib.bc_dtype_size(code)}; PyTorch's {name!r}, {size}")
    codes = [v for k, v in C.items() if k == "BC_OK" or k.startswith("BC_ERR_")]
    texts = [lib.bc_status_str(c).decode() for c in codes]
    if len(set(texts)) != len(codes) or any(not t or t == "unknown status" for t in texts):
        problems.append(f"status_string: {texts}")
    if lib.bc_status_str(12345).decode() != "unknown status":
        problems.append("status_string(12345) is not 'unknown status'")
    return problems


def check_settings():
    """set_num_threads / num_threads, set_broadcast_warning / broadcast_warning,
    set_legacy_fallback / legacy_fallback: what is set is read back; the defaults restored."""
    problems = []
    threads = lib.bc_get_num_threads()
    if lib.bc_set_num_threads(3) != BC_OK or lib.bc_get_num_threads() != 3:
        problems.append(f"num_threads after set_num_threads(3): {lib.bc_get_num_threads()}")
    lib.bc_set_num_threads(threads)
    for s, g in (("bc_set_broadcast_warning", "bc_get_broadcast_warning"), ("bc_set_legacy_fallback", "bc_get_legacy_fallback")):
        before = getattr(lib, g)()
        for v in (True, False):
            if getattr(lib, s)(v) != BC_OK or getattr(lib, g)() != v:
                problems.append(f"{g} after {s}({v}): {getattr(lib, g)()}")
        getattr(lib, s)(before)
    return problems


# ------------------------------------------------------------------------------------------------
# DLPack
# ------------------------------------------------------------------------------------------------

DL_CODES = {"float64": (2, 64), "float32": (2, 32), "int32": (0, 32), "int64": (0, 64)}


def check_dlpack_export(rng):
    """to_dlpack(t; versioned) of a strided view, read field by field (Julia size and strides
    reversed, the first element's address, the type); from_dlpack of it gives A's elements in
    Julia's order after the first tensor is closed; free_dlpack's offsets are the struct's own.
    An expanded view: read-only when versioned, refused (BC_ERR_READ_ONLY) when not."""
    versioned = rng.random() < 0.6
    dtype = rng.choice(list(DL_CODES))
    size = random_size(rng, rng.randint(0, 4))
    A = JuliaArray(rng, dtype, size)
    ta, back, ex = A.tensor(), P(), P()
    m = P()
    try:
        expanded = rng.random() < 0.25
        if expanded:
            st, ex = cp.expand(ta, list(size) + [3])
            assert st == BC_OK
        src = ex if expanded else ta
        st = (lib.bc_tensor_to_dlpack_versioned if versioned else lib.bc_tensor_to_dlpack)(src, ctypes.byref(m))
        # An expanded view's elements share memory, unless it has none.
        read_only = expanded and numel(size) > 0
        if read_only and not versioned:
            return None if st == C["BC_ERR_READ_ONLY"] and not m else f"to_dlpack(expanded; versioned = false): status {st}"
        if st != BC_OK:
            return f"to_dlpack: the library failed: {last_error()}"
        if versioned:
            s = ctypes.cast(m, ctypes.POINTER(DLManagedTensorVersioned)).contents
            dl, offset = s.dl_tensor, DLManagedTensorVersioned.deleter.offset
            if s.major != 1 or bool(s.flags & READ_ONLY) != read_only:
                return f"to_dlpack: version {s.major}, flags {s.flags} (expanded {expanded})"
        else:
            s = ctypes.cast(m, ctypes.POINTER(DLManagedTensor)).contents
            dl, offset = s.dl_tensor, DLManagedTensor.deleter.offset
        if PACKAGE_DELETER_OFFSETS is None or PACKAGE_DELETER_OFFSETS[0 if versioned else 1] != offset:
            return f"free_dlpack reads the deleter at {PACKAGE_DELETER_OFFSETS}, the struct has it at {offset}"
        jsize = list(size) + ([3] if expanded else [])
        jstrides = list(A.strides) + ([0] if expanded else [])
        shape = tuple(reversed(dl.shape[: dl.ndim]))
        strides = tuple(reversed(dl.strides[: dl.ndim]))
        first = ctypes.addressof(A.buf) + A.offset * A.itemsize
        sizes_ok = shape == tuple(jsize) and all(a == b for a, b, n_ in zip(strides, jstrides, jsize) if n_ != 1)
        if not sizes_ok or (numel(jsize) and dl.data + dl.byte_offset != first):
            return f"to_dlpack of {tuple(jsize)}: shape {shape}, strides {strides} (Julia's {tuple(jstrides)})"
        if (dl.dtype.code, dl.dtype.bits, dl.dtype.lanes) != DL_CODES[dtype] + (1,) or dl.device.device_type != 1:
            return f"to_dlpack {dtype}: DLPack type {(dl.dtype.code, dl.dtype.bits, dl.dtype.lanes)}"
        free(ta, ex)
        ta = ex = None
        st = (lib.bc_tensor_from_dlpack_versioned if versioned else lib.bc_tensor_from_dlpack)(m, ctypes.byref(back))
        if st != BC_OK:
            return f"from_dlpack of the export: the library failed: {last_error()}"
        m = None  # the library owns it now
        return view_check("from_dlpack(to_dlpack(t))", back, dtype, jsize, lambda i: element(A, i[: len(size)]))
    finally:
        if m:  # free_dlpack
            (ctypes.cast(m, ctypes.POINTER(DLManagedTensorVersioned)).contents.deleter if versioned
             else ctypes.cast(m, ctypes.POINTER(DLManagedTensor)).contents.deleter)(
                ctypes.cast(m, ctypes.POINTER(DLManagedTensorVersioned if versioned else DLManagedTensor)))
        free(ta, ex, back)


DELETED = []


@DELETER_V
def _count_deleter_v(m):
    DELETED.append(ctypes.addressof(m.contents))


@DELETER
def _count_deleter(m):
    DELETED.append(ctypes.addressof(m.contents))


def check_dlpack_import(rng):
    """from_dlpack of a producer's row-major struct made here: the Julia size is the shape
    reversed and t[i, j, ...] the producer's element [..., j, i]; the deleter runs once, when the
    tensor is closed; a read-only versioned tensor refuses writes; a struct the library refuses
    (a GPU device) stays the caller's: no deleter call."""
    versioned = rng.random() < 0.6
    rshape = [rng.randint(1, 4) for _ in range(rng.randint(0, 3))]
    n = numel(rshape)
    data = (ctypes.c_double * max(n, 1))(*[rng.uniform(-9, 9) for _ in range(n)])
    shape = arr64(rshape)
    refuse = rng.random() < 0.2
    ro = versioned and rng.random() < 0.4
    dl = DLTensor(ctypes.cast(data, P), DLDevice(2 if refuse else 1, 0), len(rshape), DLDataType(2, 64, 1),
                  shape, None, 0)
    if versioned:
        s = DLManagedTensorVersioned(1, 0, None, _count_deleter_v, READ_ONLY if ro else 0, dl)
        f = lib.bc_tensor_from_dlpack_versioned
    else:
        s = DLManagedTensor(dl, None, _count_deleter)
        f = lib.bc_tensor_from_dlpack
    DELETED.clear()
    t = P()
    st = f(ctypes.addressof(s), ctypes.byref(t))
    try:
        if refuse:
            return None if st == C["BC_ERR_INVALID_ARG"] and not DELETED and not t else f"from_dlpack of a GPU tensor: status {st}, deleter calls {len(DELETED)}"
        if st != BC_OK:
            return f"from_dlpack: the library failed: {last_error()}"
        jsize = list(reversed(rshape))

        def at(i):  # row-major element [i_n, ..., i_1]
            k = 0
            for idx, s_ in zip(reversed(i), rshape):
                k = k * s_ + idx
            return data[k]
        problem = view_check(f"from_dlpack of row-major {tuple(rshape)}", t, "float64", jsize, at)
        if problem:
            return problem
        if ro:
            one = cp.ZeroDim("float64", 1.0)
            wst = lib.bc_binary_inplace(C["BC_OP_ADD"], t, one.t)
            one.free()
            if wst != C["BC_ERR_READ_ONLY"]:
                return f"a read-only import took a write: status {wst}"
        if DELETED:
            return "the deleter ran while the tensor lives"
        lib.bc_tensor_free(t)
        t = None
        return None if DELETED == [ctypes.addressof(s)] else f"deleter calls after close: {len(DELETED)}"
    finally:
        free(t)


# ------------------------------------------------------------------------------------------------
# Fused expressions
# ------------------------------------------------------------------------------------------------

EXPR = {k: C["BC_EXPR_" + k.upper()] for k in ("input", "const", "op", "where", "unary", "ternary")}
BINOPS = ["add", "sub", "mul", "maximum", "minimum"]


def random_tree(rng, nleaves, depth, dtype):
    """A random dotted expression: ('in', k), ('const', v), ('op', name, a, b), ('neg', a),
    ('abs', a), ('where', ('gt', a, b), x, y)."""
    r = rng.random()
    if depth == 0 or r < 0.2:
        if rng.random() < 0.2:
            return ("const", rng.choice([2, -3, 0, 1]) if dtype == "int64" else rng.choice([2.5, -0.5, 3.0]))
        return ("in", rng.randrange(nleaves))
    if r < 0.7:
        return ("op", rng.choice(BINOPS), random_tree(rng, nleaves, depth - 1, dtype), random_tree(rng, nleaves, depth - 1, dtype))
    if r < 0.85:
        return (rng.choice(["neg", "abs"]), random_tree(rng, nleaves, depth - 1, dtype))
    return ("where", ("gt", random_tree(rng, nleaves, 0, dtype), random_tree(rng, nleaves, 0, dtype)),
            random_tree(rng, nleaves, depth - 1, dtype), random_tree(rng, nleaves, depth - 1, dtype))


def program(tree, dtype, operands):
    """The package's Program: postfix steps, each input numbered by its first appearance."""
    steps = []

    def walk(t):
        kind = t[0]
        if kind == "in":
            if t[1] not in operands:
                operands.append(t[1])
            steps.append(ExprStep(EXPR["input"], operands.index(t[1]), 0, 0.0))
        elif kind == "const":
            code = DTYPES[dtype][0]
            steps.append(ExprStep(EXPR["const"], code, t[1], 0.0) if dtype == "int64" else ExprStep(EXPR["const"], code, 0, t[1]))
        elif kind in ("op", "gt"):
            a, b = (t[2], t[3]) if kind == "op" else (t[1], t[2])
            walk(a)
            walk(b)
            steps.append(ExprStep(EXPR["op"], C["BC_OP_" + (t[1] if kind == "op" else "gt").upper()], 0, 0.0))
        elif kind in ("neg", "abs"):
            walk(t[1])
            steps.append(ExprStep(EXPR["unary"], C["BC_UNARY_" + kind.upper()], 0, 0.0))
        else:
            walk(t[1])
            walk(t[2])
            walk(t[3])
            steps.append(ExprStep(EXPR["where"], 0, 0, 0.0))
    walk(tree)
    return steps


def value(tree, dtype, arrays, i):
    """The expression at Julia index i, as Julia's broadcast computes it in dtype."""
    kind = tree[0]
    if kind == "in":
        return element(arrays[tree[1]], i)
    if kind == "const":
        return tree[1]
    if kind == "op":
        return apply(tree[1], dtype, value(tree[2], dtype, arrays, i), value(tree[3], dtype, arrays, i))
    if kind == "gt":
        return value(tree[1], dtype, arrays, i) > value(tree[2], dtype, arrays, i)
    if kind in ("neg", "abs"):
        x = value(tree[1], dtype, arrays, i)
        r = -x if kind == "neg" or x < 0 else x
        return wrap_int(r, 64) if dtype == "int64" else r
    return value(tree[2], dtype, arrays, i) if value(tree[1], dtype, arrays, i) else value(tree[3], dtype, arrays, i)


def geometry(arr):
    shape, strides = rev(arr.size), rev(arr.strides)
    return Geometry(arr.code, len(arr.size), shape, strides), (shape, strides)


def check_fused(rng):
    """@fused expr (bc_expr_eval), @fused dest .= expr into a strided view or into one of the
    operands (bc_expr_eval_out), @fused sum(expr; dims) over Julia dims d passed as -d
    (bc_expr_reduce; int64, exact), and the three plans, against the expression computed element
    by element with Julia's broadcast."""
    dtype = rng.choice(["float64", "int64"])
    sa, sb, sc, size = cp.broadcast_three(rng)
    arrays = [JuliaArray(rng, dtype, s) for s in (sa, sb, sc)]
    tree = random_tree(rng, 3, 3, dtype)
    while tree[0] in ("in", "const"):
        tree = random_tree(rng, 3, 3, dtype)
    operands = []
    steps = program(tree, dtype, operands)
    used = [arrays[k] for k in operands]
    vsize = ()
    for arr in used:
        vsize = julia_broadcast_size(vsize, arr.size)[0]
    want = [value(tree, dtype, arrays, i) for i in column_major_indices(tuple(vsize))]
    form = rng.choice(["eval", "out", "out_operand", "reduce", "reduce_all"] if dtype == "int64" else ["eval", "out", "out_operand"])
    ts = [a.tensor() for a in used]
    hs = (P * max(len(ts), 1))(*ts)
    sarr = (ExprStep * len(steps))(*steps)
    tr, td = P(), P()
    geoms = [geometry(a) for a in used]
    garr = (Geometry * max(len(geoms), 1))(*[g for g, _ in geoms])
    plan = Plan()
    what = f"{form} {dtype} over {[tuple(a.size) for a in used]}: {tree}"
    try:
        if form == "eval":
            if lib.bc_plan_expr(sarr, len(steps), garr, len(geoms), ctypes.byref(plan)) != BC_OK:
                return f"plan_fused {what}: {last_error()}"
            if tuple(reversed(plan.shape[: plan.ndim])) != tuple(vsize) or plan.dtype != DTYPES[dtype][0]:
                return f"plan_fused {what}: size {tuple(reversed(plan.shape[: plan.ndim]))}, dtype {plan.dtype}"
            if lib.bc_expr_eval(sarr, len(steps), hs, len(ts), ctypes.byref(tr)) != BC_OK:
                return f"fused {what}: {last_error()}"
            at = dict(zip(column_major_indices(tuple(vsize)), want))
            return view_check(f"fused {what}", tr, dtype, vsize, lambda i: at[tuple(i)])
        if form in ("out", "out_operand"):
            if form == "out_operand":
                k = next((k for k, a in enumerate(used) if tuple(a.size) == tuple(vsize)), None)
                if k is None:
                    return None
                D = used[k]
                td_h = ts[k]
            else:
                D = JuliaArray(rng, dtype, vsize)
                td = D.tensor()
                td_h = td
            before = D.snapshot()
            gd, _keep = geometry(D)
            if lib.bc_plan_expr_out(sarr, len(steps), garr, len(geoms), ctypes.byref(gd), ctypes.byref(plan)) != BC_OK:
                return f"plan_fused! {what}: {last_error()}"
            wrong = Geometry(D.code, 1, arr64([numel(vsize) + 1]), None)
            if lib.bc_plan_expr_out(sarr, len(steps), garr, len(geoms), ctypes.byref(wrong), ctypes.byref(plan)) != BC_ERR_SHAPE:
                return f"plan_fused! {what}: a dest of the wrong size planned"
            if lib.bc_expr_eval_out(sarr, len(steps), hs, len(ts), td_h) != BC_OK:
                return f"fused! {what}: {last_error()}"
            got = indexed(D, vsize)
            if not same_values(got, want):
                return f"fused! {what}: values differ"
            rest = list(before)
            for i, g in zip(column_major_indices(tuple(vsize)), got):
                rest[D.offset + sum(i[k] * D.strides[k] for k in range(len(i)))] = g
            return None if same_values(D.snapshot(), rest) else f"fused! {what}: dest's parent changed outside the view"
        # reductions: sum over Julia dims (each -d), kept as size 1; or over everything (NULL)
        n = len(vsize)
        if form == "reduce" and n == 0:
            return None
        dims = sorted(rng.sample(range(1, n + 1), rng.randint(1, n))) if form == "reduce" else []
        keep = form == "reduce"
        d = arr64([-k for k in dims])
        # The package's plan passes its (empty) dims array for `:`, its call passes NULL.
        if lib.bc_plan_expr_reduce(sarr, len(steps), garr, len(geoms), C["BC_REDUCE_SUM"], d,
                                   len(dims), keep, ctypes.byref(plan)) != BC_OK:
            return f"plan_fused(sum) {what}: {last_error()}"
        if numel(vsize) and not plan.flags & C["BC_PLAN_FUSED"]:
            return f"plan_fused(sum) {what}: not one pass"
        rsize = [1 if k + 1 in dims else s for k, s in enumerate(vsize)] if keep else []
        if tuple(reversed(plan.shape[: plan.ndim])) != tuple(rsize):
            return f"plan_fused(sum; dims = {dims}) {what}: size {tuple(reversed(plan.shape[: plan.ndim]))}, Julia's {tuple(rsize)}"
        if lib.bc_expr_reduce(sarr, len(steps), hs, len(ts), C["BC_REDUCE_SUM"], d if keep else None, len(dims), keep,
                              ctypes.byref(tr)) != BC_OK:
            return f"fused(sum) {what}: {last_error()}"
        sums = {}
        for i, w in zip(column_major_indices(tuple(vsize)), want):
            key = tuple(0 if k + 1 in dims else i[k] for k in range(n)) if keep else ()
            sums[key] = sums.get(key, 0) + w
        return view_check(f"fused(sum; dims = {dims}) {what}", tr, "int64", rsize, lambda i: wrap_int(sums.get(tuple(i), 0), 64))
    finally:
        free(*ts, tr, td)


def check_fused_constant():
    """A number in a fused expression is a 0-d tensor of its own type: an Int32 array .+ 2.5
    (a Float64 constant) is Float64, as PyTorch's int32 tensor + torch.tensor(2.5) is."""
    A = JuliaArray(random.Random(7), "int32", [3, 2])
    ta, tr = A.tensor(), P()
    steps = (ExprStep * 3)(ExprStep(EXPR["input"], 0, 0, 0.0), ExprStep(EXPR["const"], DTYPES["float64"][0], 0, 2.5),
                           ExprStep(EXPR["op"], C["BC_OP_ADD"], 0, 0.0))
    try:
        if lib.bc_expr_eval(steps, 3, (P * 1)(ta), 1, ctypes.byref(tr)) != BC_OK:
            return [f"Int32 .+ 2.5 fused: {last_error()}"]
        if dtype_code_of(tr) != DTYPES["float64"][0]:
            return [f"Int32 .+ 2.5 fused: dtype {dtype_code_of(tr)}, not Float64"]
        p = view_check("Int32 .+ 2.5 fused", tr, "float64", [3, 2], lambda i: element(A, i) + 2.5)
        return [p] if p else []
    finally:
        free(ta, tr)


def main():
    seed = int(os.environ.get("BC_PROXY_SEED", random.randrange(1 << 32)))
    cases = int(os.environ.get("BC_PROXY_CASES", 200))
    rng = random.Random(seed)
    print(f"API proxy test of LibBroadcast's other C calls: seed {seed} (BC_PROXY_SEED), {cases} cases per kind, "
          f"library {os.path.abspath(cp.LIB_PATH)}")
    live = lib.bc_tensor_live_count()
    passed = failed = 0
    kinds = [("constructors", check_constructors), ("Tensor(A; copy = true)", check_from_data),
             ("views", check_views), ("broadcast_shapes", check_shapes), ("BroadcastError fields", check_error_fields),
             ("DLPack export", check_dlpack_export), ("DLPack import", check_dlpack_import), ("@fused", check_fused)]
    for what, check in kinds:
        for n in range(cases):
            problem = check(rng)
            if problem is None:
                passed += 1
            else:
                failed += 1
                if failed <= 15:
                    print(f"FAIL {what} {n}: {problem}")
        print(f"{cases} cases of {what} checked")
    for what, problems in (("dtype_name/dtype_size/status_string", check_queries()), ("settings", check_settings()),
                           ("fused constant", check_fused_constant())):
        for p in problems:
            failed += 1
            print(f"FAIL {what}: {p}")
        passed += not problems
    if lib.bc_tensor_live_count() != live:
        failed += 1
        print(f"FAIL: {lib.bc_tensor_live_count() - live} tensor handles leaked")
    print(f"api-proxy: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
