"""DLPack with a real producer and consumer: NumPy.

Loads libbroadcast with ctypes (path in BC_LIB, default target/debug/libbroadcast.so) and checks,
for every dtype NumPy has:

- export: `np.from_dlpack` on a libbroadcast tensor (through a small object with `__dlpack__` and
  `__dlpack_device__`, the versioned and the legacy struct): the values, the same address (no
  copy), strides, the deleter called exactly once, broadcast views read-only in NumPy;
- import: `ndarray.__dlpack__(max_version=(1, 0))` and `ndarray.__dlpack__()` read by
  `bc_tensor_from_dlpack_versioned` / `bc_tensor_from_dlpack`: the values, the same address,
  writes reaching NumPy's memory, a read-only array refusing writes, the deleter called exactly
  once, and refused imports (unsupported dtype, negative strides) leaving the capsule to NumPy.

Run: python -m unittest discover -s tests/python -v  (NumPy needed; `make test-python` does it).
"""
import ctypes
import gc
import os
import unittest

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIB = ctypes.CDLL(os.environ.get("BC_LIB", os.path.join(ROOT, "target", "debug", "libbroadcast.so")))

# --------------------------------------------------------------------------------------------
# The C ABI (include/broadcast.h)

BC_OK, BC_ERR_INVALID_ARG, BC_ERR_READ_ONLY = 0, 2, 12
BC_DTYPE = {"bool": 0, "uint8": 1, "int8": 2, "int16": 3, "int32": 4, "int64": 5,
            "float16": 6, "bfloat16": 7, "float32": 8, "float64": 9}
# Every NumPy dtype libbroadcast has (NumPy has no bfloat16).
SHARED_DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"]
READ_ONLY_FLAG = 1


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    pass


class DLManagedTensor(ctypes.Structure):
    pass


VERSIONED_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensorVersioned))
LEGACY_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
DLManagedTensorVersioned._fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p),
                                     ("deleter", VERSIONED_DELETER), ("flags", ctypes.c_uint64),
                                     ("dl_tensor", DLTensor)]
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                            ("deleter", LEGACY_DELETER)]

H = ctypes.c_void_p  # a bc_tensor handle
for name, args in {
    "bc_tensor_from_data": [ctypes.c_int32, ctypes.POINTER(ctypes.c_int64), ctypes.c_size_t,
                            ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(H)],
    "bc_tensor_expand": [H, ctypes.POINTER(ctypes.c_int64), ctypes.c_size_t, ctypes.POINTER(H)],
    "bc_tensor_transpose": [H, ctypes.c_int64, ctypes.c_int64, ctypes.POINTER(H)],
    "bc_tensor_copy_to": [H, ctypes.c_void_p, ctypes.c_size_t],
    "bc_tensor_data": [H, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_size_t),
                       ctypes.POINTER(ctypes.c_bool)],
    "bc_tensor_to_dlpack_versioned": [H, ctypes.POINTER(ctypes.POINTER(DLManagedTensorVersioned))],
    "bc_tensor_to_dlpack": [H, ctypes.POINTER(ctypes.POINTER(DLManagedTensor))],
    "bc_tensor_from_dlpack_versioned": [ctypes.c_void_p, ctypes.POINTER(H)],
    "bc_tensor_from_dlpack": [ctypes.c_void_p, ctypes.POINTER(H)],
    "bc_tensor_full": [ctypes.c_int32, ctypes.POINTER(ctypes.c_int64), ctypes.c_size_t,
                       ctypes.c_double, ctypes.POINTER(H)],
    "bc_add_inplace": [H, H],
    "bc_last_error_message": [ctypes.c_char_p, ctypes.c_size_t],
}.items():
    getattr(LIB, name).argtypes = args
    getattr(LIB, name).restype = ctypes.c_size_t if name == "bc_last_error_message" else ctypes.c_int32
LIB.bc_tensor_free.argtypes = [H]
LIB.bc_tensor_free.restype = None
LIB.bc_tensor_live_count.restype = ctypes.c_size_t

PyCapsule_New = ctypes.pythonapi.PyCapsule_New
PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
PyCapsule_New.restype = ctypes.py_object
PyCapsule_IsValid = ctypes.pythonapi.PyCapsule_IsValid
PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
PyCapsule_IsValid.restype = ctypes.c_int
PyCapsule_GetPointer = ctypes.pythonapi.PyCapsule_GetPointer
PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
PyCapsule_GetPointer.restype = ctypes.c_void_p
PyCapsule_SetName = ctypes.pythonapi.PyCapsule_SetName
PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
PyCapsule_SetName.restype = ctypes.c_int

# Names must outlive the capsules that carry them.
NAMES = {True: b"dltensor_versioned", False: b"dltensor"}
USED = {True: b"used_dltensor_versioned", False: b"used_dltensor"}


def last_error():
    buf = ctypes.create_string_buffer(4096)
    LIB.bc_last_error_message(buf, len(buf))
    return buf.value.decode()


def check(status):
    if status != BC_OK:
        raise RuntimeError(f"status {status}: {last_error()}")


def shape_arg(shape):
    return (ctypes.c_int64 * max(len(shape), 1))(*shape), len(shape)


def tensor_from(arr):
    """A libbroadcast tensor holding a copy of the NumPy array (row-major)."""
    arr = np.ascontiguousarray(arr)
    h = H()
    dims, n = shape_arg(arr.shape)
    check(LIB.bc_tensor_from_data(BC_DTYPE[arr.dtype.name], dims, n,
                                  arr.ctypes.data_as(ctypes.c_void_p), arr.nbytes, ctypes.byref(h)))
    return h


def data_of(h):
    p, nbytes, writable = ctypes.c_void_p(), ctypes.c_size_t(), ctypes.c_bool()
    check(LIB.bc_tensor_data(h, ctypes.byref(p), ctypes.byref(nbytes), ctypes.byref(writable)))
    return p.value or 0, writable.value


def values_of(h, dtype, shape):
    out = np.empty(shape, dtype=dtype)
    check(LIB.bc_tensor_copy_to(h, out.ctypes.data_as(ctypes.c_void_p), out.nbytes))
    return out


class Counter:
    """Replaces a managed struct's deleter with one that counts its calls, then calls the original
    (so the original producer's cleanup still runs)."""
    keep = []  # callbacks C may still call

    def __init__(self, managed_ptr, versioned):
        self.calls = 0
        struct = DLManagedTensorVersioned if versioned else DLManagedTensor
        managed = ctypes.cast(managed_ptr, ctypes.POINTER(struct))
        kind = VERSIONED_DELETER if versioned else LEGACY_DELETER
        # A copy of the address: the field object itself would read the replacement later.
        original = kind(ctypes.cast(managed.contents.deleter, ctypes.c_void_p).value)

        def counting(m):
            self.calls += 1
            original(m)

        self.callback = kind(counting)
        Counter.keep.append(self.callback)
        managed.contents.deleter = self.callback


# --------------------------------------------------------------------------------------------
# A libbroadcast tensor as a DLPack producer for NumPy


class Exported:
    """Owns a bc_tensor handle; `__dlpack__` shares it (versioned when the consumer can take it,
    or legacy when `legacy` is set) and counts deleter calls.

    The capsules have no destructor (one written in Python cannot run safely while the consumer
    is raising an error); instead this object keeps them, and `release_unconsumed` deletes the
    tensor of any capsule no consumer took, as a destructor would."""

    def __init__(self, handle, legacy=False):
        self.handle = handle
        self.legacy = legacy
        self.counters = []
        self.capsules = []

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU, device 0

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        if copy:
            raise BufferError("libbroadcast shares without copying")
        versioned = not self.legacy and max_version is not None and max_version[0] >= 1
        if versioned:
            m = ctypes.POINTER(DLManagedTensorVersioned)()
            status = LIB.bc_tensor_to_dlpack_versioned(self.handle, ctypes.byref(m))
        else:
            m = ctypes.POINTER(DLManagedTensor)()
            status = LIB.bc_tensor_to_dlpack(self.handle, ctypes.byref(m))
        if status != BC_OK:
            raise BufferError(f"status {status}: {last_error()}")
        address = ctypes.cast(m, ctypes.c_void_p).value
        self.counters.append(Counter(address, versioned))
        capsule = PyCapsule_New(address, NAMES[versioned], None)
        self.capsules.append((capsule, versioned, m))
        return capsule

    def release_unconsumed(self):
        """Per the DLPack Python specification, a capsule still named "dltensor..." (a consumer
        renames it "used_dltensor...") owns its tensor: delete it. Returns how many."""
        n = 0
        for capsule, versioned, m in self.capsules:
            if PyCapsule_IsValid(capsule, NAMES[versioned]):
                m.contents.deleter(m)
                PyCapsule_SetName(capsule, USED[versioned])
                n += 1
        return n

    def deleter_calls(self):
        return [c.calls for c in self.counters]

    def close(self):
        LIB.bc_tensor_free(self.handle)
        self.handle = None


def sample(dtype, shape=(2, 3)):
    n = int(np.prod(shape))
    if dtype == "bool":
        return (np.arange(n) % 3 == 0).reshape(shape)
    vals = np.arange(n) - 2 if not dtype.startswith("uint") else np.arange(n) * 40
    if dtype.startswith("float"):
        vals = vals * 0.5
    return vals.astype(dtype).reshape(shape)


class ExportToNumPy(unittest.TestCase):
    def setUp(self):
        self.live = LIB.bc_tensor_live_count()

    def tearDown(self):
        gc.collect()
        self.assertEqual(LIB.bc_tensor_live_count(), self.live, "handles leaked")

    def roundtrip(self, dtype, legacy):
        want = sample(dtype)
        src = Exported(tensor_from(want), legacy=legacy)
        arr = np.from_dlpack(src)
        self.assertEqual(arr.dtype, want.dtype)
        self.assertEqual(arr.shape, want.shape)
        np.testing.assert_array_equal(arr, want)
        address, writable = data_of(src.handle)
        self.assertTrue(writable)
        self.assertEqual(arr.__array_interface__["data"][0], address, "NumPy copied")
        # NumPy makes arrays from the legacy struct read-only (it cannot know); versioned ones
        # are writable unless flagged.
        self.assertEqual(arr.flags.writeable, not legacy)
        self.assertEqual(src.release_unconsumed(), 0, "NumPy did not take the capsule")
        # Freeing the handle first: the export keeps the memory until NumPy lets it go.
        src.close()
        np.testing.assert_array_equal(arr, want)
        self.assertEqual(src.deleter_calls(), [0])
        del arr
        gc.collect()
        self.assertEqual(src.deleter_calls(), [1])

    def test_every_dtype_versioned(self):
        for dtype in SHARED_DTYPES:
            with self.subTest(dtype=dtype):
                self.roundtrip(dtype, legacy=False)

    def test_every_dtype_legacy(self):
        for dtype in SHARED_DTYPES:
            with self.subTest(dtype=dtype):
                self.roundtrip(dtype, legacy=True)

    def test_strides_and_writes_through_numpy(self):
        h = tensor_from(np.arange(6, dtype=np.float32).reshape(2, 3))
        t = H()
        check(LIB.bc_tensor_transpose(h, 0, 1, ctypes.byref(t)))
        src = Exported(t)
        arr = np.from_dlpack(src)
        self.assertEqual(arr.shape, (3, 2))
        self.assertEqual(arr.strides, (4, 12))
        arr[2, 1] = 100.0  # element (1, 2) of the original
        np.testing.assert_array_equal(values_of(h, np.float32, (2, 3)), [[0, 1, 2], [3, 4, 100]])
        del arr
        gc.collect()
        self.assertEqual(src.deleter_calls(), [1])
        src.close()
        LIB.bc_tensor_free(h)

    def test_broadcast_view_is_read_only_in_numpy(self):
        h = tensor_from(np.array([[1], [2], [3]], dtype=np.int32))
        e = H()
        dims, n = shape_arg((3, 4))
        check(LIB.bc_tensor_expand(h, dims, n, ctypes.byref(e)))
        src = Exported(e)
        arr = np.from_dlpack(src)
        self.assertFalse(arr.flags.writeable)
        self.assertEqual(arr.strides, (4, 0))
        np.testing.assert_array_equal(arr, [[1] * 4, [2] * 4, [3] * 4])
        with self.assertRaises(ValueError):
            arr[0, 0] = 5
        # The legacy struct cannot say read-only: the export refuses.
        with self.assertRaises(BufferError) as caught:
            np.from_dlpack(Exported(e, legacy=True))
        self.assertIn(f"status {BC_ERR_READ_ONLY}", str(caught.exception))
        del arr
        gc.collect()
        self.assertEqual(src.deleter_calls(), [1])
        src.close()
        LIB.bc_tensor_free(h)

    def test_bfloat16_refused_by_numpy_still_deleted_once(self):
        full = H()
        dims, n = shape_arg((2,))
        check(LIB.bc_tensor_full(BC_DTYPE["bfloat16"], dims, n, 1.5, ctypes.byref(full)))
        src = Exported(full)
        with self.assertRaises((BufferError, TypeError, ValueError, RuntimeError)):
            np.from_dlpack(src)
        gc.collect()
        self.assertEqual(src.deleter_calls(), [0])
        self.assertEqual(src.release_unconsumed(), 1, "NumPy took a capsule it refused")
        self.assertEqual(src.deleter_calls(), [1])
        src.close()


class ImportFromNumPy(unittest.TestCase):
    def setUp(self):
        self.live = LIB.bc_tensor_live_count()

    def tearDown(self):
        gc.collect()
        self.assertEqual(LIB.bc_tensor_live_count(), self.live, "handles leaked")

    def take(self, arr, versioned=True, max_version=(1, 0)):
        """Imports arr's DLPack capsule; returns (status, handle, counter, capsule)."""
        cap = arr.__dlpack__(max_version=max_version) if versioned else arr.__dlpack__()
        ptr = PyCapsule_GetPointer(cap, NAMES[versioned])
        counter = Counter(ptr, versioned)
        h = H()
        fn = LIB.bc_tensor_from_dlpack_versioned if versioned else LIB.bc_tensor_from_dlpack
        status = fn(ptr, ctypes.byref(h))
        if status == BC_OK:
            # The consumer's side of the protocol: the capsule no longer owns the tensor.
            PyCapsule_SetName(cap, USED[versioned])
        else:
            self.assertIsNone(h.value, "a failed import must leave *out NULL")
        return status, h, counter, cap

    def check_import(self, arr, versioned):
        status, h, counter, cap = self.take(arr, versioned)
        self.assertEqual(status, BC_OK, last_error())
        address, writable = data_of(h)
        self.assertEqual(address, arr.__array_interface__["data"][0], "libbroadcast copied")
        self.assertTrue(writable)
        np.testing.assert_array_equal(values_of(h, arr.dtype, arr.shape), arr)
        del cap
        gc.collect()
        self.assertEqual(counter.calls, 0, "deleted while libbroadcast still uses it")
        LIB.bc_tensor_free(h)
        self.assertEqual(counter.calls, 1)

    def test_every_dtype_versioned(self):
        for dtype in SHARED_DTYPES:
            with self.subTest(dtype=dtype):
                self.check_import(sample(dtype, (3, 4)), versioned=True)

    def test_every_dtype_legacy(self):
        for dtype in SHARED_DTYPES:
            with self.subTest(dtype=dtype):
                self.check_import(sample(dtype, (3, 4)), versioned=False)

    def test_strided_views_and_0d(self):
        base = np.arange(60, dtype=np.float64).reshape(6, 10)
        for arr in (base[::2, 1:7:3], base.T, base[3], np.array(7.0), base[:0]):
            with self.subTest(shape=arr.shape, strides=arr.strides):
                self.check_import(arr, versioned=True)

    def test_writes_reach_numpy(self):
        arr = np.zeros((2, 3), dtype=np.float32)
        status, h, counter, cap = self.take(arr)
        self.assertEqual(status, BC_OK)
        one = tensor_from(np.ones((3,), dtype=np.float32))
        check(LIB.bc_add_inplace(h, one))
        np.testing.assert_array_equal(arr, np.ones((2, 3)))
        LIB.bc_tensor_free(one)
        LIB.bc_tensor_free(h)
        self.assertEqual(counter.calls, 1)

    def test_read_only_array_refuses_writes(self):
        arr = np.arange(4, dtype=np.int64)
        arr.flags.writeable = False
        status, h, counter, cap = self.take(arr)
        self.assertEqual(status, BC_OK, last_error())
        flags = ctypes.cast(PyCapsule_GetPointer(cap, USED[True]),
                            ctypes.POINTER(DLManagedTensorVersioned)).contents.flags
        self.assertTrue(flags & READ_ONLY_FLAG, "NumPy did not mark its read-only array")
        self.assertFalse(data_of(h)[1])
        one = tensor_from(np.ones((4,), dtype=np.int64))
        self.assertEqual(LIB.bc_add_inplace(h, one), BC_ERR_READ_ONLY)
        self.assertIn("read-only", last_error())
        np.testing.assert_array_equal(arr, [0, 1, 2, 3])
        LIB.bc_tensor_free(one)
        LIB.bc_tensor_free(h)
        self.assertEqual(counter.calls, 1)

    def test_refused_imports_leave_the_capsule_its_tensor(self):
        cases = [np.ones(3, dtype=np.complex64), np.ones(3, dtype=np.uint16),
                 np.ones(3, dtype=np.uint64), np.arange(4.0)[::-1]]
        for arr in cases:
            with self.subTest(dtype=arr.dtype.name, strides=arr.strides):
                status, h, counter, cap = self.take(arr)
                self.assertEqual(status, BC_ERR_INVALID_ARG)
                self.assertEqual(counter.calls, 0, "a failed import called the deleter")
                del cap  # NumPy's capsule, still the owner, deletes it
                gc.collect()
                self.assertEqual(counter.calls, 1)


if __name__ == "__main__":
    unittest.main()
