"""Layouts: OpenVINO's TensorDesc/BlockingDesc, regions and reorder,
checked against the seed's examples and NumPy's strides."""

import itertools

import numpy as np
import pytest

import blobcore as bc
from conftest import NUMPY_DTYPES, random_array


def test_seed_blocked_offsets():
    # ../shared/seeds/openvino-memory-primitives.md, example 4
    blk = bc.BlockingDesc([1, 4, 20, 20, 8], [0, 1, 2, 3, 1])
    t = bc.TensorDesc(bc.float32, [1, 25, 20, 20], blk)
    assert [t.offset(0), t.offset(1), t.offset([0, 0, 0, 2]), t.offset([0, 1, 0, 2])] == [0, 8, 16, 17]
    assert t.layout == bc.Layout.BLOCKED and t.blocking == blk
    assert blk.strides == [12800, 3200, 160, 8, 1] and blk.offset_padding == 0 and blk.dim_offsets == [0] * 5


def test_seed_nhwc_and_layout_by_dims():
    a = bc.TensorDesc(bc.float32, [1, 25, 20, 20], bc.BlockingDesc([1, 20, 20, 25], [0, 2, 3, 1]))
    b = bc.TensorDesc(bc.float32, [1, 25, 20, 20], bc.Layout.NHWC)
    assert a == b and a.layout == bc.Layout.NHWC
    # The seed's second spelling: BlockingDesc(dims, layout).
    c = bc.BlockingDesc([1, 25, 20, 20], bc.Layout.NHWC)
    assert c == bc.BlockingDesc([1, 20, 20, 25], [0, 2, 3, 1])
    assert c.strides == [10000, 500, 25, 1]
    assert bc.TensorDesc(bc.float32, [1, 25, 20, 20], c) == b
    with pytest.raises(bc.ShapeError):
        bc.BlockingDesc([2, 3], bc.Layout.NCHW)
    assert [bc.layout_by_dims(r) for r in range(7)] == [
        bc.Layout.SCALAR, bc.Layout.C, bc.Layout.NC, bc.Layout.CHW, bc.Layout.NCHW, bc.Layout.NCDHW, bc.Layout.BLOCKED,
    ]
    assert int(bc.Layout.GOIDHW) == 67 and int(bc.Layout.CN) == 194


def test_offsets_agree_with_numpy_strides_for_planar_layouts():
    rng = np.random.default_rng(3)
    for rank in range(1, 6):
        for _ in range(10):
            dims = [int(x) for x in rng.integers(1, 6, size=rank)]
            order = [int(x) for x in rng.permutation(rank)]
            blk = [dims[d] for d in order]
            t = bc.TensorDesc(bc.float32, dims, bc.BlockingDesc(blk, order))
            # memory is an array of shape blk; logical index v lives at v[order]
            for v in itertools.islice(np.ndindex(*dims), 50):
                want = np.ravel_multi_index(tuple(v[d] for d in order), blk)
                assert t.offset(list(v)) == want
            assert t.offset(0) == 0


def test_region_offsets_and_numpy_views():
    rng = np.random.default_rng(4)
    for dtype in NUMPY_DTYPES:
        a = random_array(rng, (4, 5, 6), dtype)
        b = bc.Blob.from_numpy(a)
        begin, end = [1, 0, 2], [3, 4, 6]
        r = b.region(begin, end)
        view = np.asarray(r)
        np.testing.assert_array_equal(view, a[1:3, 0:4, 2:6])
        assert view.strides == a.strides and np.shares_memory(view, np.asarray(b))
        for v in np.ndindex(*r.shape):
            parent = [i + s for i, s in zip(v, begin)]
            assert r.desc.offset(list(v)) == np.ravel_multi_index(parent, a.shape)
        # a region of a region starts at the sum of the starts (counted once)
        rr = r.region([1, 1, 1], [2, 3, 3])
        np.testing.assert_array_equal(np.asarray(rr), a[2:3, 1:3, 3:5])
        r.fill(0)  # any layout: the region's elements, and only those
        want = a.copy()
        want[1:3, 0:4, 2:6] = 0
        np.testing.assert_array_equal(np.asarray(b), want)
        with pytest.raises(bc.OutOfRangeError):
            b.region([0, 0, 0], [5, 1, 1])


@pytest.mark.parametrize("dtype", NUMPY_DTYPES, ids=str)
def test_reorder_round_trips_are_the_identity(dtype):
    rng = np.random.default_rng(5)
    for _ in range(12):
        n, c, h, w = (int(x) for x in rng.integers(1, 12, size=4))
        a = random_array(rng, (n, c, h, w), dtype)
        src = bc.Blob.from_numpy(a)
        descs = [
            bc.TensorDesc(dtype, [n, c, h, w], bc.Layout.NHWC),
            bc.TensorDesc(dtype, [n, c, h, w], bc.BlockingDesc([n, -(-c // 8), h, w, 8], [0, 1, 2, 3, 1])),
            bc.TensorDesc(dtype, [n, c, h, w], bc.BlockingDesc([n, h, -(-c // 4), w, 4], [0, 2, 1, 3, 1])),
            bc.TensorDesc(dtype, [n, c, h, w], bc.BlockingDesc([w, n, c, h], [3, 0, 1, 2])),
            bc.TensorDesc(dtype, [n, c, h, w], bc.BlockingDesc([n, c, h, w], [0, 1, 2, 3], offset=3, strides=[c * h * (w + 2) * 2, h * (w + 2) * 2, (w + 2) * 2, 2])),
        ]
        for d1 in descs:
            b1 = bc.Blob.with_desc(d1)
            b1.reorder_from(src)
            for d2 in descs:
                b2 = bc.Blob.with_desc(d2)
                b2.reorder_from(b1)
                back = bc.Blob.tensor([n, c, h, w], dtype=dtype)
                back.reorder_from(b2)
                np.testing.assert_array_equal(np.asarray(back), a)
            if d1.blocking.order == [0, 2, 3, 1]:
                # planar layouts export as strided NumPy views of the same data
                np.testing.assert_array_equal(np.asarray(b1), a)


def test_reorder_into_a_region_touches_only_the_region():
    a = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    b = bc.Blob.from_numpy(a.copy())
    r = b.region([1, 1, 1], [3, 3, 4])
    r.reorder_from(bc.Blob.from_numpy(np.full((2, 2, 3), -1, np.float32)))
    want = a.copy()
    want[1:3, 1:3, 1:4] = -1
    np.testing.assert_array_equal(np.asarray(b), want)
    c = bc.Blob.tensor([2, 2, 3])
    c.copy_from(r)  # copy_from accepts any layout too
    assert c.asum() == 12


def test_blocked_blobs_take_every_operation_on_their_logical_values():
    t = bc.TensorDesc(bc.float32, [1, 5, 2, 2], bc.BlockingDesc([1, 1, 2, 2, 8], [0, 1, 2, 3, 1]))
    b = bc.Blob.with_desc(t)
    assert b.layout == bc.Layout.BLOCKED and not b.is_dense and b.desc == t
    a = np.arange(20, dtype=np.float32).reshape(1, 5, 2, 2)
    b.copy_from(a)
    np.testing.assert_array_equal(np.asarray(b), a)  # a copy of the logical values
    assert b.asum() == a.sum() and b.tolist() == a.tolist()
    np.testing.assert_array_equal(np.asarray(b.transposed(1, 2)), np.swapaxes(a, 1, 2))
    np.testing.assert_array_equal(np.asarray(bc.merge([b, b], 0)), np.concatenate([a, a], 0))
    np.testing.assert_array_equal(np.asarray(b[0, 3]), a[0, 3])
    np.testing.assert_array_equal(np.asarray(b.T), a.T)
    b[0, 1] = -1  # a view of a blocked layout writes through
    a[0, 1] = -1
    np.testing.assert_array_equal(np.asarray(b), a)
    b.fill(2)
    np.testing.assert_array_equal(np.asarray(b), np.full_like(a, 2))
    assert np.asarray(b.raw()).reshape(2, 2, 8)[..., 5:].sum() == 0  # padding untouched
    # What no blocking can describe is refused, saying why.
    with pytest.raises(bc.UnsupportedError, match="inside its blocks"):
        b.region([0, 0, 0, 0], [1, 2, 1, 1])
    with pytest.raises(bc.UnsupportedError, match="reorder"):
        b.reshape([20])
    with pytest.raises(bc.ShapeError):
        b.reorder_from(bc.Blob.tensor([1, 5, 2, 3]))
    with pytest.raises(bc.DTypeError):
        b.reorder_from(bc.Blob.tensor([1, 5, 2, 2], dtype=bc.int32))


def test_desc_validation_and_edits():
    with pytest.raises(bc.ShapeError):
        bc.BlockingDesc([2, 3], [0, 1], strides=[2, 1])  # not at least dense
    with pytest.raises(bc.ShapeError):
        bc.TensorDesc(bc.float32, [1, 25], bc.BlockingDesc([1, 3, 8], [0, 1, 1]))  # 24 < 25
    with pytest.raises(bc.ShapeError):
        bc.TensorDesc(bc.float32, [2, 3], bc.Layout.NCHW)
    t = bc.TensorDesc(bc.float32, [2, 3, 4, 5], bc.Layout.NCHW)
    assert t.reshape([6, 20]).layout == bc.Layout.NC
    t.set_layout(bc.Layout.NHWC)
    assert t.blocking.blk_dims == [2, 4, 5, 3] and t.layout == bc.Layout.NHWC
    with pytest.raises(bc.ShapeError):
        t.set_layout(bc.Layout.CHW)
    assert t.layout == bc.Layout.NHWC
    padded = bc.TensorDesc(bc.float32, [2, 3], bc.BlockingDesc([2, 3], [0, 1], offset=4))
    with pytest.raises(bc.ShapeError, match="reorder"):
        padded.reshape([6])
    assert bc.Blob.tensor([2, 3]).desc == bc.TensorDesc(bc.float32, [2, 3], bc.Layout.NC)
