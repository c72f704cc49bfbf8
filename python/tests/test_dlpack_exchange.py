"""DLPack 1.3's C exchange API (`bc.Blob.__dlpack_c_exchange_api__`),
driven as a C consumer drives it: the table read through ctypes and its
entries called with the GIL held (PYFUNCTYPE), and apache-tvm-ffi, which
looks the capsule up on the type and converts through it. NumPy is the
oracle for values and shared memory."""

import ctypes
import gc

import numpy as np
import pytest

import blobcore as bc


class Version(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class Header(ctypes.Structure):
    _fields_ = [("version", Version), ("prev_api", ctypes.c_void_p)]


class Api(ctypes.Structure):
    _fields_ = [("header", Header), ("allocator", ctypes.c_void_p), ("from_py", ctypes.c_void_p), ("to_py", ctypes.c_void_p),
                ("dltensor_from_py", ctypes.c_void_p), ("stream", ctypes.c_void_p)]


class Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", Device), ("ndim", ctypes.c_int32), ("dtype", DataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class Managed(ctypes.Structure):
    _fields_ = [("version", Version), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p), ("flags", ctypes.c_uint64),
                ("dl_tensor", DLTensor)]


get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
get_pointer.restype, get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
FROM_PY = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.POINTER(ctypes.c_void_p))
TO_PY = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(ctypes.py_object))
SET_ERROR = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p)
ALLOC = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.POINTER(DLTensor), ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p, SET_ERROR)
STREAM = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_int32, ctypes.c_int32, ctypes.POINTER(ctypes.c_void_p))
DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


def api():
    cap = type(bc.Blob.vector(1)).__dlpack_c_exchange_api__
    table = Api.from_address(get_pointer(cap, b"dlpack_exchange_api"))
    return table


def export(x):
    out = ctypes.c_void_p()
    assert FROM_PY(api().from_py)(x, ctypes.byref(out)) == 0
    return out.value


def import_(tensor):
    out = ctypes.py_object()
    assert TO_PY(api().to_py)(tensor, ctypes.byref(out)) == 0
    return out.value


def test_table_layout_and_version():
    t = api()
    assert (t.header.version.major, t.header.version.minor) == (1, 3)
    assert not t.header.prev_api
    assert t.allocator and t.from_py and t.to_py and t.stream
    assert t.dltensor_from_py is None  # optional in DLPack; documented
    out = ctypes.c_void_p(1)
    assert STREAM(t.stream)(1, 0, ctypes.byref(out)) == 0 and out.value is None


@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.uint64, np.float16, np.bool_])
def test_export_import_round_trip_shares_memory(dtype):
    a = (np.arange(24) % 2 == 0 if dtype == np.bool_ else np.arange(24)).astype(dtype).reshape(2, 3, 4)
    x = bc.Blob.from_numpy(a)
    t = export(x)
    m = Managed.from_address(t)
    assert m.version.major == 1 and m.flags == 0
    assert [m.dl_tensor.shape[i] for i in range(3)] == [2, 3, 4]
    y = import_(t)
    assert isinstance(y, bc.Blob)
    np.testing.assert_array_equal(np.asarray(y), a)
    y[1, 2, 3] = 0
    assert x[1, 2, 3] == 0  # the same memory


def test_views_read_only_and_blocked_blobs():
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    x = bc.Blob.from_numpy(a)[::-1, 1::2]
    np.testing.assert_array_equal(np.asarray(import_(export(x))), a[::-1, 1::2])
    ro = a.copy()
    ro.flags.writeable = False
    t = export(bc.asblob(ro))
    assert Managed.from_address(t).flags & 1  # READ_ONLY
    y = import_(t)
    assert not y.writeable
    desc = bc.TensorDesc(bc.float32, [1, 16, 2, 2], bc.BlockingDesc([1, 2, 2, 2, 8], [0, 1, 2, 3, 1]))
    blocked = bc.Blob.with_desc(desc)
    blocked.fill(2.0)
    t = export(blocked)
    assert Managed.from_address(t).flags & 2  # IS_COPIED: a blocked layout has no strides
    np.testing.assert_array_equal(np.asarray(import_(t)), np.full((1, 16, 2, 2), 2.0, np.float32))


def test_bad_input_is_a_python_error():
    out = ctypes.c_void_p()
    with pytest.raises(TypeError, match="not a blobcore.Blob"):
        FROM_PY(api().from_py)(np.zeros(3), ctypes.byref(out))
    with pytest.raises(bc.BlobError):
        TO_PY(api().to_py)(None, ctypes.byref(ctypes.py_object()))
    # A tensor of another major version is refused and, its ownership
    # handed over, deleted exactly once.
    x = bc.Blob.vector(3)
    t = export(x)
    Managed.from_address(t).version.major = 2
    with pytest.raises(bc.UnsupportedError):
        TO_PY(api().to_py)(t, ctypes.byref(ctypes.py_object()))
    gc.collect()
    x.fill(1.0)  # the deleted export left nothing behind
    assert np.asarray(x).tolist() == [1.0, 1.0, 1.0]


def test_allocator():
    errors = []
    set_error = SET_ERROR(lambda ctx, kind, msg: errors.append((kind.decode(), msg.decode())))
    alloc = ALLOC(api().allocator)
    dims = (ctypes.c_int64 * 2)(3, 5)
    proto = DLTensor(None, Device(1, 0), 2, DataType(2, 32, 1), dims, None, 0)
    out = ctypes.c_void_p()
    assert alloc(ctypes.byref(proto), ctypes.byref(out), None, set_error) == 0 and not errors
    y = import_(out.value)
    assert y.shape == (3, 5) and y.dtype == np.float32 and np.all(np.asarray(y) == 0)
    y[2, 4] = 1.0
    assert float(np.asarray(y).sum()) == 1.0
    for bad in [DLTensor(None, Device(2, 0), 2, DataType(2, 32, 1), dims, None, 0),   # a CUDA prototype
                DLTensor(None, Device(1, 0), 2, DataType(2, 32, 4), dims, None, 0),   # 4 lanes
                DLTensor(None, Device(1, 0), -1, DataType(2, 32, 1), dims, None, 0),  # negative ndim
                DLTensor(None, Device(1, 0), 2, DataType(2, 32, 1), None, None, 0)]:  # NULL shape
        errors.clear()
        assert alloc(ctypes.byref(bad), ctypes.byref(out), None, set_error) == -1
        assert len(errors) == 1 and errors[0][0] in ("ValueError", "MemoryError") and errors[0][1]
    neg = (ctypes.c_int64 * 2)(3, -5)
    errors.clear()
    assert alloc(ctypes.byref(DLTensor(None, Device(1, 0), 2, DataType(2, 32, 1), neg, None, 0)), ctypes.byref(out), None, set_error) == -1
    assert len(errors) == 1


def test_tvm_ffi_converts_through_the_table():
    tvm_ffi = pytest.importorskip("tvm_ffi")
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = bc.Blob.from_numpy(a)
    t = tvm_ffi.from_dlpack(x)
    assert tuple(t.shape) == (3, 4)
    back = np.from_dlpack(t)
    np.testing.assert_array_equal(back, a)
    back[0, 0] = -1.0
    assert x[0, 0] == -1.0  # zero-copy both ways
    echo = tvm_ffi.get_global_func("testing.echo")
    e = echo(x)  # a blob argument converted at the C level
    np.testing.assert_array_equal(np.from_dlpack(e), np.asarray(x))


from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

NUMPY_DTYPES = [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64, np.float16, np.float32, np.float64]


@settings(derandomize=True, deadline=None, max_examples=120, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(NUMPY_DTYPES), st.lists(st.integers(1, 5), min_size=0, max_size=4), st.integers(0, 2**32),
       st.sampled_from(["blob", "asblob", "dlpack", "pickle", "reversed", "strided", "transposed"]))
def test_exchange_round_trip_matches_numpy(dtype, shape, seed, door):
    # Random dtypes, shapes and views, reached through NumPy, DLPack and
    # pickle: what comes back through the table reads as NumPy says and
    # shares the memory it was exported from.
    import pickle

    rng = np.random.default_rng(seed)
    a = rng.integers(0, 100, size=shape).astype(dtype)
    base = bc.Blob.from_numpy(a)
    x = {
        "blob": lambda: base,
        "asblob": lambda: bc.asblob(a),
        "dlpack": lambda: bc.from_dlpack(a),
        "pickle": lambda: pickle.loads(pickle.dumps(base)),
        "reversed": lambda: base[(slice(None, None, -1),) * len(shape) + (Ellipsis,)],
        "strided": lambda: base[(slice(None, None, 2),) * len(shape) + (Ellipsis,)],
        "transposed": lambda: base.T,
    }[door]()
    want = np.asarray(x).copy()
    y = import_(export(x))
    assert y.shape == want.shape and y.dtype == want.dtype
    assert np.asarray(y).tobytes() == want.tobytes()
    # The import shares what it can (as bc.from_dlpack does): always a
    # row-major export; strided ones come back as a copy.
    shared = np.shares_memory(np.asarray(y), np.asarray(x))
    assert shared or not np.asarray(x).flags.c_contiguous or want.size == 0
    if want.size:
        index = tuple(int(rng.integers(0, n)) for n in want.shape)
        y[index] = 1
        assert (np.asarray(x)[index] == 1) == (shared or want[index] == 1)
