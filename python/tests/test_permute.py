"""The transposition engine against NumPy's transpose: every permutation of
ranks 0-6 (random dims, 0 and 1 included) for every dtype, the NeoML
transposes against numpy.swapaxes, sources in other layouts, and sizes that
take the parallel, SIMD and streaming paths."""

import itertools

import numpy as np
import pytest

import blobcore as bc
from conftest import NUMPY_DTYPES, blob_of, random_array

@pytest.mark.parametrize("rank", range(7))
@pytest.mark.parametrize("dtype", NUMPY_DTYPES)
def test_every_permutation_matches_numpy(rank, dtype, rng):
    for trial in range(2):
        # Small dims with zeros and ones among them; the second trial has no zero.
        low = 0 if trial == 0 else 1
        shape = tuple(int(x) for x in rng.integers(low, 4, size=rank))
        a = random_array(rng, shape, dtype)
        b = blob_of(a)
        for perm in itertools.permutations(range(rank)):
            want = np.transpose(a, perm)
            got = b.permuted(list(perm))
            assert got.shape == want.shape
            np.testing.assert_array_equal(np.asarray(got), want, err_msg=f"{shape} {perm}")
    # negative axes, as NumPy takes them
    if rank >= 2:
        perm = [-1] + list(range(rank - 1))
        np.testing.assert_array_equal(np.asarray(b.permuted(perm)), np.transpose(a, perm))


@pytest.mark.parametrize("dtype", NUMPY_DTYPES)
def test_transposes_match_swapaxes(dtype, rng):
    a = random_array(rng, (3, 5, 1, 7, 2), dtype)
    b = blob_of(a)
    for d1, d2 in itertools.product(range(-5, 5), repeat=2):
        np.testing.assert_array_equal(np.asarray(b.transposed(d1, d2)), np.swapaxes(a, d1, d2), err_msg=f"{d1},{d2}")
        out = bc.Blob.tensor(list(np.swapaxes(a, d1, d2).shape), dtype=dtype)
        out.transpose_from(b, d1, d2)
        np.testing.assert_array_equal(np.asarray(out), np.swapaxes(a, d1, d2))


@pytest.mark.parametrize(
    "shape, perm",
    [
        ((67, 130, 33), (2, 0, 1)),  # edges on every side of the 8x16 kernel, parallel
        ((512, 300), (1, 0)),  # one 2-D transpose over several tiles
        ((4, 37, 1, 71), (3, 1, 0, 2)),
        ((16, 64, 8, 16), (0, 2, 1, 3)),  # short runs tiled as a transpose of runs
        ((2, 3, 5, 7, 11, 13), (5, 3, 1, 4, 2, 0)),
        ((9, 1 << 16, 16), (1, 0, 2)),  # 36 MiB of f32: the streaming path
        ((1 << 10, 9, 1 << 10), (2, 1, 0)),
    ],
)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8, np.float16])
def test_large_permutations(shape, perm, dtype, rng):
    if np.dtype(dtype).itemsize * np.prod(shape) > (64 << 20):
        pytest.skip("kept under 64 MiB per array")
    a = random_array(rng, shape, dtype)
    b = blob_of(a)
    np.testing.assert_array_equal(np.asarray(b.permuted(list(perm))), np.transpose(a, perm))


def test_bfloat16_permutes_as_its_bits(rng):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    bits = rng.integers(0, 1 << 16, size=(5, 6, 7), dtype=np.uint16)
    b = bc.Blob.from_numpy(bits.view(ml_dtypes.bfloat16))
    assert b.dtype == bc.bfloat16
    got = np.asarray(b.permuted([2, 0, 1])).view(np.uint16)
    np.testing.assert_array_equal(got, np.transpose(bits, (2, 0, 1)))


def test_sources_and_destinations_in_other_layouts(rng):
    a = random_array(rng, (2, 6, 5, 7), np.float32)
    b = blob_of(a)
    # A strided view and an NHWC blob as sources; an NHWC destination.
    view = b[:, 1::2, ::2]
    np.testing.assert_array_equal(np.asarray(view.permuted([3, 1, 0, 2])), np.transpose(a[:, 1::2, ::2], (3, 1, 0, 2)))
    nhwc = bc.Blob.with_desc(bc.TensorDesc(bc.float32, [2, 6, 5, 7], bc.Layout.NHWC))
    nhwc.reorder_from(b)
    np.testing.assert_array_equal(np.asarray(nhwc.permuted([0, 2, 3, 1])), np.transpose(a, (0, 2, 3, 1)))
    dst = bc.Blob.with_desc(bc.TensorDesc(bc.float32, [2, 7, 6, 5], bc.Layout.NHWC))
    dst.permute_from(b, [0, 3, 1, 2])
    np.testing.assert_array_equal(np.asarray(dst), np.transpose(a, (0, 3, 1, 2)))


def test_permute_from_into_a_view_leaves_the_rest(rng):
    a = random_array(rng, (4, 3), np.float32)
    big = bc.Blob.tensor([2, 3, 4])
    big.fill(9.0)
    big[1].permute_from(blob_of(a), [1, 0])
    want = np.full((2, 3, 4), 9.0, np.float32)
    want[1] = a.T
    np.testing.assert_array_equal(np.asarray(big), want)
