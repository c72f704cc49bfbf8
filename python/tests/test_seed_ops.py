"""Seed operations on the Python face, against NumPy: NeoML's typed CopyTo
(the first elements), ``tolist`` as NumPy's, Serrano's construction with a
dtype and a repeating value, shape equality with and without dtype, and the
raw memory of every dense layout."""

import numpy as np
import pytest

import blobcore as bc
from conftest import NUMPY_DTYPES, blob_of, random_array


@pytest.mark.parametrize("dtype", NUMPY_DTYPES)
def test_copy_to_takes_the_first_elements(dtype, rng):
    a = random_array(rng, (3, 4), dtype)
    b = blob_of(a)
    out = np.zeros(5, dtype)
    b.copy_to(out)
    np.testing.assert_array_equal(out, a.reshape(-1)[:5])
    whole = np.zeros((4, 3), dtype)  # any shape: elements in row-major order
    b.copy_to(whole)
    np.testing.assert_array_equal(whole.reshape(-1), a.reshape(-1))
    b.copy_to(np.zeros(0, dtype))


def test_copy_to_own_memory_and_views():
    b = bc.Blob.from_numpy(np.arange(6, dtype=np.int32))
    own = np.asarray(b)[1:]
    b.copy_to(own)  # a memmove: element i+1 = old element i
    np.testing.assert_array_equal(np.asarray(b), [0, 0, 1, 2, 3, 4])
    w = b.window(1)
    out = np.zeros(1, np.int32)
    bc.Blob.from_numpy(np.arange(12, dtype=np.int32).reshape(3, 4)).window(1).copy_to(out)
    assert out[0] == 0
    with pytest.raises(bc.DTypeError):
        w.copy_to(np.zeros(1, np.int64))


@pytest.mark.parametrize("shape", [(), (0,), (3,), (2, 3), (2, 1, 2)])
@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.uint8, np.float16])
def test_tolist_is_numpys(shape, dtype, rng):
    a = random_array(rng, shape, dtype)
    got = blob_of(a).tolist()
    want = a.tolist()
    assert got == want
    assert type(got) is type(want)
