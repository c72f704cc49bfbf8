"""Shared helpers: the dtypes NumPy can check, and random data for each."""

import numpy as np
import pytest

import blobcore as bc

# Every blobcore dtype NumPy has (bfloat16 is covered through DLPack and
# byte round trips in the other tests).
NUMPY_DTYPES = [bc.float32, bc.int32, bc.float64, bc.int64, bc.uint8, bc.int8, bc.float16]


# The engine under test is the default one: BLOBCORE_ENGINE=gpu runs this
# whole suite on the GPU engine (`make test` runs it on both). GPU
# reductions add f32 partials and promise 1e-5 relative; the CPU's f64
# accumulation is exact to rounding.
ON_GPU = bc.Engine.default().name == "gpu"
REDUCE_REL = 1e-5 if ON_GPU else 1e-12


def random_array(rng: np.random.Generator, shape, dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return rng.uniform(-4, 4, size=shape).astype(dtype)
    info = np.iinfo(dtype)
    lo, hi = max(info.min, -1000), min(info.max, 1000)
    return rng.integers(lo, hi, size=shape, endpoint=True).astype(dtype)


def random_shape(rng: np.random.Generator, rank: int, low: int = 1, high: int = 5):
    return tuple(int(x) for x in rng.integers(low, high, size=rank))


def blob_of(a: np.ndarray) -> bc.Blob:
    return bc.Blob.from_numpy(a, copy=True)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20261121)
