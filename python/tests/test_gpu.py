"""The GPU engine from Python: SyncedMemory heads, blobs created on it,
and NumPy / DLPack never seeing stale data. Skips without an adapter (CI
installs lavapipe, so there it runs)."""

import io

import numpy as np
import pytest

import blobcore as bc


@pytest.fixture(scope="module")
def gpu():
    try:
        return bc.Engine.gpu()
    except bc.DeviceError as e:
        pytest.skip(f"no GPU adapter: {e}")


def test_engine_and_heads(gpu):
    assert gpu.name == "gpu" and gpu.adapter
    b = bc.Blob.tensor([4, 5], engine=gpu)
    assert b.engine == gpu
    assert b.head == "uninitialized"
    b.copy_from(np.arange(20, dtype=np.float32).reshape(4, 5))  # CPU write
    assert b.head == "cpu"
    assert b.asum() == 190.0  # GPU read
    assert b.head == "synced"
    b.scale(2.0)  # GPU write
    assert b.head == "gpu"
    saved = np.load(io.BytesIO(b.to_npy_bytes()))  # a CPU read
    np.testing.assert_array_equal(saved, 2 * np.arange(20, dtype=np.float32).reshape(4, 5))
    assert b.head == "synced"
    np.asarray(b)  # an export may be written: the head moves to the CPU
    assert b.head == "cpu"


def test_numpy_views_and_dlpack_are_never_stale(gpu):
    b = bc.Blob.tensor([3, 4], engine=gpu)
    b.fill(1.0)
    assert b.head == "gpu"
    a = np.asarray(b)  # syncs, then shares the host copy
    assert (a == 1).all()
    b.fill(2.0)  # kernels write through to a live view ...
    assert (a == 2).all()
    a[0, 0] = 10.0  # ... and read what NumPy wrote
    assert b.asum() == 2.0 * 11 + 10.0
    del a
    b.scale(0.5)
    assert b.head == "gpu"
    d = np.from_dlpack(b)  # DLPack syncs too
    want = np.full((3, 4), 1.0, np.float32)
    want[0, 0] = 5.0
    np.testing.assert_array_equal(d, want)


def test_ops_match_numpy_on_gpu(gpu, rng):
    a = rng.uniform(-3, 3, size=(6, 5, 4)).astype(np.float32)
    c = rng.uniform(-3, 3, size=(6, 5, 4)).astype(np.float32)
    x = bc.Blob.from_numpy(a, engine=gpu)
    y = bc.Blob.from_numpy(c, engine=gpu)
    x.add(y)
    np.testing.assert_array_equal(np.asarray(x), a + c)
    np.testing.assert_array_equal(np.asarray(x.transposed(0, 2)), np.swapaxes(a + c, 0, 2))
    m = bc.merge([x, y], 1)
    assert m.engine == gpu
    np.testing.assert_array_equal(np.asarray(m), np.concatenate([a + c, c], 1))
    p, q = bc.split(m, [5, 5], 1)
    np.testing.assert_array_equal(np.asarray(q), c)
    assert x.sumsq() == pytest.approx(float(((a + c).astype(np.float64) ** 2).sum()), rel=1e-5)


def test_set_default_engine(gpu):
    try:
        bc.Engine.set_default(gpu)
        assert bc.Blob.vector(3).engine == gpu
    finally:
        bc.Engine.set_default(bc.Engine.cpu())
    assert bc.Blob.vector(3).engine == bc.Engine.cpu()
