"""The CUDA engine from Python: DLPack kDLCUDA exchange with PyTorch,
CuPy and JAX on the device (no trip through the host), checked against
NumPy, and the engine's errors on machines without CUDA. Skips without an
NVIDIA GPU and driver (BLOBCORE_REQUIRE_CUDA=1 makes that a failure)."""

import os

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import blobcore as bc


def _cuda():
    try:
        return bc.Engine.cuda()
    except bc.DeviceError as e:
        return e


CUDA = _cuda()
needs_cuda = pytest.mark.skipif(
    isinstance(CUDA, Exception) and not os.environ.get("BLOBCORE_REQUIRE_CUDA"),
    reason=f"no CUDA engine: {CUDA}",
)


def test_without_cuda_the_engine_is_a_device_error_and_cpu_blobs_stay_on_the_host():
    if isinstance(CUDA, Exception):
        assert "CUDA" in str(CUDA)
    else:
        assert CUDA.name == "cuda" and not CUDA.is_software and CUDA.adapter_kind == "discrete"
        assert repr(CUDA) == "blobcore.Engine.cuda(0)"
    b = bc.Blob.from_numpy(np.arange(6, dtype=np.float32), engine=bc.Engine.cpu())
    assert b.__dlpack_device__() == (1, 0)
    for a in bc.Engine.adapters():
        assert len(a) == 4 and a[1] in ("discrete", "integrated", "virtual", "other", "software")


def _torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    return torch


@needs_cuda
def test_blobs_reach_torch_on_the_device_and_share_memory():
    torch = _torch()
    b = bc.Blob.tensor([3, 4], engine=CUDA)
    b.fill(2.0)
    assert b.__dlpack_device__() == (2, 0)
    # NumPy takes host arrays only: it asks for the host copy by name.
    from conftest import NP_FROM_DLPACK

    with pytest.raises(BufferError):
        NP_FROM_DLPACK(b)
    np.testing.assert_array_equal(NP_FROM_DLPACK(b, device="cpu"), np.full((3, 4), 2, np.float32))
    t = torch.from_dlpack(b)
    assert t.is_cuda and t.shape == (3, 4)
    assert bool((t == 2).all())
    t.mul_(3)  # torch writes the device memory ...
    torch.cuda.synchronize()
    np.testing.assert_array_equal(np.asarray(b), np.full((3, 4), 6, np.float32))  # ... blobcore reads it
    b.scale(0.5)  # blobcore's kernel writes it
    CUDA.synchronize()
    assert bool((t == 3).all())


@needs_cuda
def test_torch_tensors_become_blobs_on_the_device():
    torch = _torch()
    t = torch.arange(12, dtype=torch.float32, device="cuda").reshape(3, 4)
    b = bc.from_dlpack(t, engine=CUDA)
    assert b.engine == CUDA and b.head == "gpu"
    np.testing.assert_array_equal(np.asarray(b), np.arange(12, dtype=np.float32).reshape(3, 4))
    b.fill(1.0)
    CUDA.synchronize()
    assert bool((t == 1).all()), "shared, not copied"
    # Strided (transposed) tensors are copied; copy=False refuses them.
    tt = t.T
    c = bc.from_dlpack(tt, engine=CUDA)
    np.testing.assert_array_equal(np.asarray(c), tt.cpu().numpy())
    with pytest.raises(BufferError):
        bc.from_dlpack(tt, engine=CUDA, copy=False)
    # A CPU engine does not take device memory.
    with pytest.raises(bc.UnsupportedError, match="CUDA engine"):
        bc.from_dlpack(t, engine=bc.Engine.cpu())


@needs_cuda
def test_cupy_and_jax_consume_blobs():
    b = bc.Blob.from_numpy(np.arange(8, dtype=np.float32))
    g = bc.Blob.tensor([8], engine=CUDA)
    g.copy_from(b)
    try:
        import cupy as cp
    except ImportError:
        cp = None
    if cp is not None:
        c = cp.from_dlpack(g)
        np.testing.assert_array_equal(cp.asnumpy(c), np.arange(8, dtype=np.float32))
        back = bc.from_dlpack(c, engine=CUDA)
        np.testing.assert_array_equal(np.asarray(back), np.arange(8, dtype=np.float32))
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        jax = None
    if jax is not None and any(d.platform == "gpu" for d in jax.devices()):
        j = jnp.from_dlpack(g)
        np.testing.assert_array_equal(np.asarray(j), np.arange(8, dtype=np.float32))
        back = bc.from_dlpack(j, engine=CUDA)
        np.testing.assert_array_equal(np.asarray(back), np.arange(8, dtype=np.float32))


DTYPES = [np.float32, np.float64, np.int32, np.int64, np.float16, np.uint8, np.int8]


@needs_cuda
@settings(max_examples=150, deadline=None, derandomize=True)
@given(
    shape=st.lists(st.integers(1, 9), min_size=1, max_size=4),
    dtype=st.sampled_from(DTYPES),
    transpose=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_round_trips_through_torch_equal_numpy(shape, dtype, transpose, seed):
    torch = _torch()
    a = np.random.default_rng(seed).integers(-100, 100, size=shape).astype(dtype)
    t = torch.from_numpy(a).cuda()
    want = a
    if transpose and a.ndim > 1:
        t, want = t.transpose(0, a.ndim - 1), a.transpose([a.ndim - 1] + list(range(1, a.ndim - 1)) + [0])
    b = bc.from_dlpack(t, engine=CUDA)
    np.testing.assert_array_equal(np.asarray(b), want)
    # ... and back to torch on the device, then to NumPy through the host.
    t2 = torch.from_dlpack(b)
    assert t2.is_cuda
    np.testing.assert_array_equal(t2.cpu().numpy(), want)
