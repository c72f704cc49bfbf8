"""The C ABI's DLPack functions against NumPy as the independent consumer
and producer: libblob.so is loaded with ctypes, blob_to_dlpack's tensor is
wrapped in a "dltensor_versioned" capsule that numpy.from_dlpack consumes
(values, strides, shared memory, the deleter run once), and a capsule
NumPy produced is handed to blob_from_dlpack (shared memory, read-only
flags, NumPy's deleter run once when the blob is freed)."""

import ctypes
import gc
import os
import pathlib
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BLOB_F32, BLOB_I32 = 1, 2
OK, BUSY, READ_ONLY_ERR = 0, 8, 15


def libblob():
    for p in [os.environ.get("BLOBCORE_LIBBLOB"), ROOT / "build" / "stage" / "lib" / "libblob.so", ROOT / "target" / "release" / "libblob.so"]:
        if p and pathlib.Path(p).exists():
            lib = ctypes.CDLL(str(p))
            vp, i32, i64p = ctypes.c_void_p, ctypes.c_int32, ctypes.POINTER(ctypes.c_int64)
            sig = {
                "blob_create_tensor": [vp, i32, i64p, ctypes.c_size_t, ctypes.POINTER(vp)],
                "blob_copy_from_host": [vp, vp, ctypes.c_size_t],
                "blob_copy_to_host": [vp, vp, ctypes.c_size_t],
                "blob_to_dlpack": [vp, ctypes.c_uint32, ctypes.POINTER(vp)],
                "blob_from_dlpack": [vp, vp, ctypes.POINTER(vp)],
                "blob_region": [vp, i64p, i64p, ctypes.c_size_t, ctypes.POINTER(vp)],
                "blob_reshape": [vp, i64p, ctypes.c_size_t],
                "blob_fill": [vp, ctypes.c_double],
                "blob_free": [vp],
            }
            for name, args in sig.items():
                f = getattr(lib, name)
                f.argtypes, f.restype = args, i32
            return lib
    pytest.skip("libblob.so not built (make stage)")


def dims(*d):
    return (ctypes.c_int64 * len(d))(*d)


capsule_new = ctypes.pythonapi.PyCapsule_New
capsule_new.restype, capsule_new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
capsule_ptr = ctypes.pythonapi.PyCapsule_GetPointer
capsule_ptr.restype, capsule_ptr.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
capsule_rename = ctypes.pythonapi.PyCapsule_SetName
capsule_rename.restype, capsule_rename.argtypes = ctypes.c_int, [ctypes.py_object, ctypes.c_char_p]


class Producer:
    """What numpy.from_dlpack wants: __dlpack__ and __dlpack_device__."""

    def __init__(self, tensor):
        self.tensor = tensor

    def __dlpack__(self, **_):
        # No destructor: the consumer (NumPy) calls the tensor's deleter.
        return capsule_new(self.tensor, b"dltensor_versioned", None)

    def __dlpack_device__(self):
        return (1, 0)


def c_blob(lib, values):
    b = ctypes.c_void_p()
    assert lib.blob_create_tensor(None, BLOB_F32, dims(*values.shape), values.ndim, ctypes.byref(b)) == OK
    assert lib.blob_copy_from_host(b, values.ctypes.data, values.nbytes) == OK
    return b


def test_numpy_consumes_blob_to_dlpack():
    lib = libblob()
    values = np.arange(12, dtype=np.float32).reshape(3, 4)
    b = c_blob(lib, values)
    t = ctypes.c_void_p()
    assert lib.blob_to_dlpack(b, 0, ctypes.byref(t)) == OK
    a = np.from_dlpack(Producer(t.value))
    np.testing.assert_array_equal(a, values)
    assert a.flags.writeable and a.strides == (16, 4)
    a[1, 2] = -1.0  # shared memory
    back = np.zeros_like(values)
    assert lib.blob_copy_to_host(b, back.ctypes.data, back.nbytes) == OK
    assert back[1, 2] == -1.0
    # The export pins the memory until NumPy calls the deleter, once.
    assert lib.blob_reshape(b, dims(1000), 1) == BUSY
    del a
    gc.collect()
    assert lib.blob_reshape(b, dims(1000), 1) == OK
    assert lib.blob_free(b) == OK


def test_numpy_consumes_strided_and_read_only_exports():
    lib = libblob()
    values = np.arange(20, dtype=np.float32).reshape(4, 5)
    b = c_blob(lib, values)
    roi = ctypes.c_void_p()
    assert lib.blob_region(b, dims(1, 1), dims(3, 4), 2, ctypes.byref(roi)) == OK
    t = ctypes.c_void_p()
    assert lib.blob_to_dlpack(roi, 1, ctypes.byref(t)) == OK  # DLPACK_FLAG_BITMASK_READ_ONLY
    a = np.from_dlpack(Producer(t.value))
    np.testing.assert_array_equal(a, values[1:3, 1:4])
    assert a.strides == (20, 4) and not a.flags.writeable
    assert lib.blob_free(roi) == OK and lib.blob_free(b) == OK
    np.testing.assert_array_equal(a, values[1:3, 1:4])  # the memory outlives both blobs
    del a
    gc.collect()


def test_blob_from_dlpack_takes_a_numpy_capsule():
    lib = libblob()
    base = np.arange(6, dtype=np.float32).reshape(2, 3)
    refs = sys.getrefcount(base)
    cap = base.__dlpack__(max_version=(1, 1))
    ptr = capsule_ptr(cap, b"dltensor_versioned")
    out = ctypes.c_void_p()
    assert lib.blob_from_dlpack(None, ptr, ctypes.byref(out)) == OK
    assert capsule_rename(cap, b"used_dltensor_versioned") == 0  # ours now
    del cap
    assert sys.getrefcount(base) == refs + 1  # NumPy's tensor holds the array
    assert lib.blob_fill(out, 5.0) == OK
    assert (base == 5.0).all()  # zero-copy
    assert lib.blob_free(out) == OK
    assert sys.getrefcount(base) == refs  # NumPy's deleter ran, once


def test_read_only_numpy_arrays_give_read_only_blobs():
    lib = libblob()
    base = np.arange(4, dtype=np.float32)
    base.flags.writeable = False
    cap = base.__dlpack__(max_version=(1, 1))
    out = ctypes.c_void_p()
    assert lib.blob_from_dlpack(None, capsule_ptr(cap, b"dltensor_versioned"), ctypes.byref(out)) == OK
    capsule_rename(cap, b"used_dltensor_versioned")
    assert lib.blob_fill(out, 1.0) == READ_ONLY_ERR
    got = np.zeros(4, np.float32)
    assert lib.blob_copy_to_host(out, got.ctypes.data, got.nbytes) == OK
    np.testing.assert_array_equal(got, base)
    assert lib.blob_free(out) == OK


def test_refused_imports_leave_the_capsule_to_numpy():
    lib = libblob()
    base = np.arange(4, dtype=np.complex64)
    refs = sys.getrefcount(base)
    cap = base.__dlpack__(max_version=(1, 1))
    out = ctypes.c_void_p(12345)
    assert lib.blob_from_dlpack(None, capsule_ptr(cap, b"dltensor_versioned"), ctypes.byref(out)) == 5  # BLOB_ERR_DTYPE
    assert out.value == 12345
    del cap  # NumPy's capsule destructor frees the tensor: not us
    gc.collect()
    assert sys.getrefcount(base) == refs
