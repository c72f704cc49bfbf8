"""NeoML's named dims on blobs of any rank <= 7: a ``bc.Dim`` argument sees
the blob as its shape padded with trailing 1s (as NeoML's CDnnBlob does),
an int stays a NumPy axis. The oracle is NumPy on explicitly padded
arrays; results keep the blob's rank while the padding stays 1, else have
rank 7."""

import itertools

import numpy as np
import pytest

import blobcore as bc
from conftest import blob_of


def pad7(a):
    return a.reshape(a.shape + (1,) * (7 - a.ndim))


def unpad(a, rank):
    """The rank rule: keep `rank` dims when the rest are 1, else 7."""
    return a.reshape(a.shape[:rank]) if all(d == 1 for d in a.shape[rank:]) else a


def test_vectors_merge_along_channels_as_neoml_does():
    a, b = np.arange(5, dtype=np.float32), np.arange(10, 15, dtype=np.float32)
    m = bc.merge([blob_of(a), blob_of(b)], bc.Dim.CHANNELS)
    assert m.shape == (5, 1, 1, 1, 1, 1, 2)
    np.testing.assert_array_equal(np.asarray(m), np.concatenate([pad7(a), pad7(b)], axis=6))
    # An int is NumPy's axis: two vectors concatenate along axis 0 only.
    with pytest.raises(bc.OutOfRangeError):
        bc.merge([blob_of(a), blob_of(b)], 6)
    x, y = bc.Blob.vector(5), bc.Blob.vector(5)
    bc.split_into(m, [x, y], bc.Dim.CHANNELS)
    np.testing.assert_array_equal(np.asarray(x), a)
    np.testing.assert_array_equal(np.asarray(y), b)


@pytest.mark.parametrize("shape", [(), (4,), (2, 3), (2, 3, 4), (1, 2, 1, 3), (2, 1, 2, 1, 2, 1, 2)])
def test_every_named_dim_matches_padded_numpy(shape, rng):
    a = rng.standard_normal(shape).astype(np.float32)
    b = blob_of(a)
    rank = a.ndim
    for d in bc.Dim:
        want = unpad(np.concatenate([pad7(a), pad7(a), pad7(a)], axis=int(d)), rank)
        got = bc.merge([b, b, b], d)
        assert got.shape == want.shape, (shape, d)
        np.testing.assert_array_equal(np.asarray(got), want)
        parts = bc.split(got, 3, d)
        assert [p.shape for p in parts] == [unpad(pad7(a), got.ndim).shape] * 3
        for p in parts:
            np.testing.assert_array_equal(np.asarray(p).reshape(a.shape), a)
        into = bc.Blob.tensor(list(want.shape))
        bc.merge_into([b, b, b], into, d)
        np.testing.assert_array_equal(np.asarray(into), want)
    for d1, d2 in itertools.product(bc.Dim, repeat=2):
        want = unpad(np.swapaxes(pad7(a), int(d1), int(d2)), rank)
        got = b.transposed(d1, d2)
        assert got.shape == want.shape, (shape, d1, d2)
        np.testing.assert_array_equal(np.asarray(got), want)
        dst = bc.Blob.tensor(list(want.shape))
        dst.transpose_from(b, d1, d2)
        np.testing.assert_array_equal(np.asarray(dst), want)


def test_has_equal_dims_compares_padded_dims():
    t = lambda *d: bc.Blob.tensor(list(d))  # noqa: E731
    assert t(2, 3).has_equal_dims(t(2, 3, 1))
    assert t(5).has_equal_dims(t(5, 1, 1, 1, 1, 1, 1))
    assert not t(2, 3).has_equal_dims(t(3, 2))
    assert not t(2, 3).has_equal_dims(t(1, 2, 3))
    assert not t(*[1] * 8).has_equal_dims(t(*[1] * 7))
    assert t(2, 3).shape != t(2, 3, 1).shape


def test_named_dims_refuse_what_they_cannot_do():
    a = bc.Blob.vector(5)
    with pytest.raises(bc.InvalidArgumentError):
        a.transposed(bc.Dim.CHANNELS, 0)
    with pytest.raises(bc.ShapeError):
        bc.merge([bc.Blob.vector(5), bc.Blob.vector(4)], bc.Dim.CHANNELS)
    with pytest.raises(bc.ShapeError):
        bc.Blob.tensor([1] * 8).transposed(bc.Dim.HEIGHT, bc.Dim.WIDTH)
    to = bc.Blob.vector(5)
    with pytest.raises(bc.ShapeError):
        bc.merge_into([a, a], to, bc.Dim.CHANNELS)
