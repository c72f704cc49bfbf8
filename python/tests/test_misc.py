"""Pickle, repr, len, identity equality, dtypes, engines, heads."""

import pickle

import numpy as np
import pytest

import blobcore as bc

ALL = [bc.float32, bc.int32, bc.float64, bc.int64, bc.uint8, bc.int8, bc.float16, bc.bfloat16]


@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_pickle_round_trip(dtype):
    b = bc.Blob.tensor([2, 3, 2], dtype=dtype)
    b.fill(3)
    c = pickle.loads(pickle.dumps(b))
    assert c.shape == b.shape and c.dtype == b.dtype and c.asum() == b.asum() == 36
    assert c is not b and not c.shares_memory(b)


def test_dtypes_are_numpy_dtypes():
    assert bc.Blob.vector(1).dtype == np.float32
    for name in ["float32", "int32", "float64", "int64", "uint8", "int8", "float16"]:
        b = bc.Blob.vector(1, dtype=name)
        assert b.dtype == np.dtype(name) == getattr(bc, name)
        assert bc.Blob.vector(1, dtype=getattr(np, name)).dtype == b.dtype
        assert np.asarray(b).dtype == b.dtype
    assert bc.Blob.vector(1, dtype="f8").dtype == np.float64
    assert bc.Blob.vector(1, dtype=bc.bfloat16).dtype == bc.bfloat16


def test_repr_len_and_identity_equality():
    b = bc.Blob.tensor([3, 4], dtype=bc.int8)
    assert repr(b) == f"blobcore.Blob(dtype=int8, shape=(3, 4), engine={bc.Engine.default().name})"
    assert "window" in repr(b.window(1))
    assert len(b) == 3
    c = bc.Blob.tensor([3, 4], dtype=bc.int8)
    assert b == b and b != c  # identity; compare data through NumPy


def test_engines_and_heads():
    e = bc.Engine.cpu()
    assert e == bc.Engine.cpu() and e.name == "cpu"
    b = bc.Blob.vector(4, engine=e)
    assert b.engine == e
    assert b.head == "uninitialized"
    b.asum()
    assert b.head == "cpu"
    with pytest.raises(bc.DeviceError):
        bc.Engine.gpu("no such adapter")


def test_version():
    assert bc.__version__.count(".") == 2
