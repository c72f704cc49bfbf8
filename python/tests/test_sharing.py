"""Zero-copy exchange with NumPy and DLPack: memory shared both ways, the
busy rule while exports live, and lifetimes."""

import gc
import pickle
import sys
import weakref

import numpy as np
import pytest

import blobcore as bc


def test_asarray_and_memoryview_share_memory_both_ways():
    b = bc.Blob.tensor([2, 3])
    a = np.asarray(b)
    m = memoryview(b)
    assert a.shape == (2, 3) and a.dtype == np.float32 and m.format == "f" and m.shape == (2, 3)
    a[1, 2] = 5.0
    assert b.asum() == 5.0 and m[1, 2] == 5.0
    b.fill(2.0)
    assert (a == 2.0).all() and m[0, 0] == 2.0
    m[0, 1] = -1.0
    assert a[0, 1] == -1.0
    assert np.shares_memory(a, np.asarray(b))
    assert b.numpy().ctypes.data == a.ctypes.data
    assert b.numpy(copy=True).ctypes.data != a.ctypes.data


def test_export_while_resize_raises_busy_like_bytearray():
    b = bc.Blob.vector(4)
    a = np.asarray(b)
    with pytest.raises(bc.BusyError) as e:
        b.reshape([100])
    assert isinstance(e.value, BufferError) and "shared" in str(e.value)
    assert b.shape == (4,)
    b.reshape([2, 2])  # within capacity: same memory, allowed
    del a
    m = memoryview(b)
    with pytest.raises(BufferError):
        b.reshape([100])
    m.release()
    b.reshape([100])
    assert b.shape == (100,)


def test_from_numpy_copy_false_shares_and_keeps_the_array_alive():
    a = np.arange(12, dtype=np.float64).reshape(3, 4)

    class Tracked(np.ndarray):
        pass

    t = a.view(Tracked)
    ref = weakref.ref(t)
    b = bc.Blob.from_numpy(t, copy=False)
    del t
    gc.collect()
    assert ref() is not None  # the blob keeps the array alive
    b.fill(1.0)
    assert (a == 1.0).all()
    a[0, 0] = 42
    assert b.asum() == 11 + 42
    del b
    gc.collect()
    assert ref() is None  # released exactly when the blob goes


def test_a_blobs_own_memory_coming_back_shares_its_storage():
    """`from_numpy(np.asarray(x), copy=False)` (or `bc.from_dlpack` of it,
    or of `np.from_dlpack(x)`): NumPy's array is a view of x's memory, so
    the new blob is put on x's storage, as a view is, and
    holds nothing of NumPy's. Writes are seen both ways, x cannot be
    reallocated while it lives, and a chain of such round trips is no
    chain at all (300,000 of them crashed the interpreter when freed, as
    `a = np.asarray(memoryview(a))` does in NumPy alone)."""
    x = bc.Blob.from_numpy(np.arange(24, dtype=np.float32).reshape(4, 6))
    a = np.asarray(x)[1:3]
    gone = weakref.ref(a)
    y = bc.Blob.from_numpy(a, copy=False)
    del a
    gc.collect()
    assert gone() is None  # NumPy's array is not held
    assert y.shape == (2, 6) and y.tolist() == np.arange(6, 18, dtype=np.float32).reshape(2, 6).tolist()
    assert x.shares_memory(y) and y.shares_memory(x)
    y.fill(-1.0)
    assert np.asarray(x)[1:3].tolist() == [[-1.0] * 6] * 2 and np.asarray(x)[0, 0] == 0.0
    with pytest.raises(bc.BusyError):
        x.reshape([100])
    del y
    gc.collect()
    x.reshape([100])
    # A read-only array over writable memory stays a read-only wrap.
    x = bc.Blob.from_numpy(np.arange(6, dtype=np.float64))
    r = np.asarray(x)
    r.flags.writeable = False
    gone = weakref.ref(r)
    z = bc.Blob.from_numpy(r, copy=False)
    del r
    gc.collect()
    assert gone() is not None and not z.writeable
    del z
    gc.collect()
    assert gone() is None
    # Round trips, 300,000 of each, then freed at once.
    for trip in (lambda x: bc.Blob.from_numpy(np.asarray(x), copy=False),
                 lambda x: bc.from_dlpack(np.from_dlpack(x)),
                 lambda x: bc.from_dlpack(np.asarray(x))):
        x = bc.Blob.from_numpy(np.arange(5, dtype=np.int32))
        for _ in range(300_000):
            x = trip(x)
        assert x.tolist() == [0, 1, 2, 3, 4]
        del x
        gc.collect()


def test_from_numpy_copy_true_is_independent_and_accepts_any_layout():
    a = np.arange(24, dtype=np.int32).reshape(4, 6)[:, ::2]  # not contiguous
    b = bc.Blob.from_numpy(a)
    np.testing.assert_array_equal(np.asarray(b), a)
    b.fill(0)
    assert a.any()
    with pytest.raises(bc.InvalidArgumentError, match="C-contiguous"):
        bc.Blob.from_numpy(a, copy=False)
    ro = np.arange(3.0)
    ro.flags.writeable = False
    r = bc.Blob.from_numpy(ro, copy=False)  # shared, read-only
    assert not r.writeable and r.shares_memory(r)
    with pytest.raises(bc.ReadOnlyError):
        r.fill(1)
    assert not np.asarray(r).flags.writeable
    assert np.shares_memory(np.asarray(r), ro)
    with pytest.raises(bc.DTypeError):
        bc.Blob.from_numpy(np.zeros(3, np.complex64))
    with pytest.raises(bc.DTypeError):
        bc.Blob.from_numpy(np.zeros(3, np.longdouble))


def test_view_and_exported_array_outlive_their_blob():
    b = bc.Blob.tensor([4, 3])
    b.fill(3.0)
    w = b.window(2)
    s = b.slice([3])
    a = np.asarray(b)
    del b
    gc.collect()
    assert w.asum() == 18.0 and s.asum() == 9.0
    a[3, 0] = 100
    assert s.asum() == 106.0
    del w, s
    gc.collect()
    assert a.sum() == 3 * 11 + 100


@pytest.mark.parametrize("versioned", [True, False])
def test_dlpack_export_to_numpy(versioned):
    b = bc.Blob.tensor([2, 3], dtype=bc.int64, engine=bc.Engine.cpu())
    b.fill(7)
    assert b.__dlpack_device__() == (1, 0)
    cap = b.__dlpack__(max_version=(1, 1) if versioned else None)
    assert ("dltensor_versioned" if versioned else "dltensor") in repr(cap)
    a = np.from_dlpack(b)
    assert a.shape == (2, 3) and a.dtype == np.int64 and (a == 7).all()
    a[0, 0] = 1
    assert b.asum() == 36  # shared
    c = np.from_dlpack(b, copy=True)
    c[:] = 0
    assert b.asum() == 36  # a copy


@pytest.mark.parametrize("max_version", [(1, 0), None])
def test_unused_capsule_is_freed_and_pins_memory(max_version):
    # Versioned and legacy capsules: the destructor frees the tensor of
    # a capsule nobody took (the pin goes), and only that one.
    b = bc.Blob.vector(8)
    cap = b.__dlpack__(max_version=max_version)
    assert ('"dltensor_versioned"' if max_version else '"dltensor"') in repr(cap)
    with pytest.raises(bc.BusyError):
        b.reshape([1000])
    del cap
    gc.collect()
    b.reshape([1000])
    # A capsule NumPy took (renamed "used_..."): its array holds the pin
    # until it goes, and the capsule's destructor leaves the tensor alone.
    a = np.from_dlpack(b)
    with pytest.raises(bc.BusyError):
        b.reshape([5000])
    a[0] = 5.0
    assert b[0] == 5.0
    del a
    gc.collect()
    b.reshape([5000])


def test_dlpack_rejects_other_devices_and_streams():
    b = bc.Blob.vector(2, engine=bc.Engine.cpu())
    with pytest.raises(BufferError):
        b.__dlpack__(dl_device=(2, 0))
    with pytest.raises(BufferError):
        b.__dlpack__(stream=1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.uint8, np.int8, np.float16])
def test_from_dlpack_shares_numpy_memory(dtype):
    a = np.arange(6).astype(dtype).reshape(2, 3)
    b = bc.from_dlpack(a)
    assert b.dtype == dtype and b.shape == (2, 3)
    b.fill(1)
    assert (a == 1).all()
    # round trip through both protocols
    np.testing.assert_array_equal(np.from_dlpack(b), a)


def test_from_dlpack_copies_strided_and_read_only_tensors():
    a = np.arange(20.0).reshape(4, 5)
    v = a[::2, 1::2]
    b = bc.from_dlpack(v)
    np.testing.assert_array_equal(np.asarray(b), v)
    b.fill(0)
    assert a[0, 1] == 1.0  # copied
    ro = np.arange(4.0)
    ro.flags.writeable = False
    r = bc.from_dlpack(ro)  # NumPy flags it READ_ONLY: shared, read-only
    assert not r.writeable
    with pytest.raises(bc.ReadOnlyError):
        r.fill(9)
    assert ro[3] == 3.0
    assert np.shares_memory(np.asarray(r), ro)
    c = bc.from_dlpack(ro, copy=True)
    c.fill(9)
    assert c.writeable and ro[3] == 3.0
    with pytest.raises(BufferError, match="copy"):
        bc.from_dlpack(v, copy=False)


def test_from_dlpack_capsule_is_consumed_once():
    cap = np.arange(3.0).__dlpack__()
    b = bc.from_dlpack(cap)
    assert b.shape == (3,)
    with pytest.raises(bc.InvalidArgumentError, match="capsule"):
        bc.from_dlpack(cap)
    with pytest.raises(TypeError, match="no __dlpack__"):
        bc.from_dlpack(object())
    with pytest.raises(TypeError, match="no __dlpack__"):
        bc.from_dlpack([1.0])


def test_bfloat16_travels_through_dlpack_and_bytes():
    b = bc.Blob.vector(3, dtype=bc.bfloat16)
    b.fill(1.5)
    back = bc.from_dlpack(b)
    assert back.dtype == bc.bfloat16 and back.asum() == 4.5
    assert pickle.loads(pickle.dumps(b)).asum() == 4.5
    with pytest.raises(BufferError, match="bfloat16"):
        memoryview(b)


def test_torch_interop_if_installed():
    torch = pytest.importorskip("torch")
    b = bc.Blob.tensor([2, 2])
    t = torch.from_dlpack(b)
    t += 1
    assert b.asum() == 4.0
    back = bc.from_dlpack(torch.arange(4, dtype=torch.float32))
    assert back.asum() == 6.0


def test_rank0_and_empty_blobs_export():
    s = bc.Blob.tensor([])
    a = np.asarray(s)
    assert a.shape == () and a == 0
    e = bc.Blob.tensor([0, 3])
    assert np.asarray(e).shape == (0, 3)
    assert np.from_dlpack(e).shape == (0, 3)
    assert bc.from_dlpack(np.zeros((0, 2))).shape == (0, 2)


def test_refcounts_do_not_leak_through_exports():
    b = bc.Blob.vector(10)
    before = sys.getrefcount(b)
    for _ in range(100):
        np.asarray(b).sum()
        memoryview(b).release()
        np.from_dlpack(b)
    gc.collect()
    assert sys.getrefcount(b) == before
    b.reshape([10000])  # no export survived
