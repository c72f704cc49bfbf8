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


# -- Serrano's construction ---------------------------------------------------

@pytest.mark.parametrize("dtype", NUMPY_DTYPES)
def test_from_numpy_of_nested_lists_with_a_dtype(dtype):
    nested = [[1, 2, 3], [4, 5, 6]]
    b = bc.Blob.from_numpy(nested, dtype=dtype)
    want = np.asarray(nested, dtype=dtype)
    assert b.shape == want.shape and np.dtype(b.dtype) == want.dtype
    np.testing.assert_array_equal(np.asarray(b), want)
    # Floats to ints truncate as NumPy's conversion does.
    np.testing.assert_array_equal(np.asarray(bc.Blob.from_numpy([1.7, 2.7], dtype=dtype)), np.asarray([1.7, 2.7], dtype=dtype))


def test_from_numpy_dtype_and_copy():
    a = np.arange(4, dtype=np.int32)
    shared = bc.Blob.from_numpy(a, copy=False, dtype=np.int32)
    a[0] = 9
    assert np.asarray(shared)[0] == 9
    with pytest.raises(bc.InvalidArgumentError, match="cannot share"):
        bc.Blob.from_numpy(a, copy=False, dtype=np.float32)
    # A blob source converts as a cast.
    c = bc.Blob.from_numpy(shared, dtype=np.float64)
    assert np.dtype(c.dtype) == np.float64 and not c.shares_memory(shared)


@pytest.mark.parametrize("dtype", NUMPY_DTYPES)
@pytest.mark.parametrize("value", [0, 1, -3, 2.75, 100])
def test_full_is_numpy_full(dtype, value):
    if np.dtype(dtype).kind == "u" and value < 0:
        with pytest.raises(OverflowError, match="out of bounds"):
            np.full((2, 3), value, dtype)
        with pytest.raises(OverflowError, match="out of bounds"):
            bc.Blob.full([2, 3], value, dtype)
        return
    want = np.full((2, 3), value).astype(dtype)
    got = bc.Blob.full([2, 3], value, dtype)
    assert got.shape == (2, 3) and np.dtype(got.dtype) == want.dtype
    np.testing.assert_array_equal(np.asarray(got), want)


def test_full_refuses_values_the_dtype_cannot_hold():
    # NumPy's errors, as ndarray.fill raises them (OverflowError; NaN into
    # an integer: ValueError).
    for value, dtype, error in [(300, np.uint8, OverflowError), (-129, np.int8, OverflowError),
                                (2**31, np.int32, OverflowError), (float("nan"), np.int64, ValueError),
                                (float("inf"), np.int32, OverflowError), (2.0**63, np.int64, OverflowError),
                                (2**64, np.uint64, OverflowError)]:
        with pytest.raises(error):
            np.zeros(2, dtype).fill(value)
        with pytest.raises(error):
            bc.Blob.full([2], value, dtype)
    assert np.asarray(bc.Blob.full([1], -(2.0**63), np.int64))[0] == np.iinfo(np.int64).min
    # Python ints past 2**53 go in exactly (they went through a double before).
    assert np.asarray(bc.Blob.full([1], 2**63 - 1, np.int64))[0] == 2**63 - 1
    assert np.asarray(bc.Blob.full([1], 2**64 - 1, np.uint64))[0] == 2**64 - 1
    assert np.asarray(bc.Blob.full([1], 2**53 + 1, np.int64))[0] == 2**53 + 1
    assert np.isinf(np.asarray(bc.Blob.full([1], float("inf"), np.float32))[0])
    assert bc.Blob.full([], 5, np.int32).tolist() == 5


def test_asblob_shares_when_it_can():
    a = np.arange(6, dtype=np.float32)
    b = bc.asblob(a)
    a[1] = 7
    assert np.asarray(b)[1] == 7  # zero-copy
    assert bc.asblob(b) is b
    assert bc.asblob(b, dtype=np.float32, shape=[6]) is b
    r = bc.asblob(b, shape=[2, 3])  # same memory, another shape
    assert r.shape == (2, 3) and np.shares_memory(np.asarray(r), np.asarray(b))
    np.testing.assert_array_equal(np.asarray(r), a.reshape(2, 3))
    t = bc.asblob(a.reshape(2, 3).T)  # strided: copied
    np.testing.assert_array_equal(np.asarray(t), a.reshape(2, 3).T)
    ro = a.copy()
    ro.setflags(write=False)
    assert not bc.asblob(ro).writeable


def test_asblob_converts_like_numpy_asarray():
    nested = [[1, 2, 3], [4, 5, 6]]
    for dtype in [None, np.int64, np.float16, np.uint8]:
        got = bc.asblob(nested, dtype=dtype)
        want = np.asarray(nested, dtype=dtype)
        assert got.shape == want.shape and np.dtype(got.dtype) == want.dtype
        np.testing.assert_array_equal(np.asarray(got), want)
    flat = bc.asblob([1, 2, 3, 4, 5, 6], dtype=np.int32, shape=[3, 2])
    np.testing.assert_array_equal(np.asarray(flat), np.arange(1, 7, dtype=np.int32).reshape(3, 2))
    with pytest.raises(bc.ShapeError):
        bc.asblob(nested, shape=[4, 2])
    with pytest.raises(bc.ShapeError):
        bc.asblob(bc.Blob.vector(6), shape=[5])
    assert bc.asblob(3.5).shape == ()


def test_copy_from_nested_checks_the_shape():
    b = bc.Blob.tensor([3, 2])
    with pytest.raises(bc.ShapeError):
        b.copy_from([[1, 2, 3], [4, 5, 6]])
    b.copy_from([[1, 2], [3, 4], [5, 6]])
    b.copy_from([1, 2, 3, 4, 5, 6])  # NeoML's flat CopyFrom(const T*)
    np.testing.assert_array_equal(np.asarray(b), np.arange(1, 7).reshape(3, 2))


def test_same_shape_with_and_without_dtype():
    a = bc.Blob.tensor([2, 3], bc.float32)
    assert a.same_shape(bc.Blob.tensor([2, 3], bc.float32))
    assert not a.same_shape(bc.Blob.tensor([2, 3], bc.int32))
    assert a.same_shape(bc.Blob.tensor([2, 3], bc.int32), dtype=False)
    assert not a.same_shape(bc.Blob.tensor([2, 3, 1]), dtype=False)  # NumPy's shape equality
    assert a.has_equal_dims(bc.Blob.tensor([2, 3, 1]))  # NeoML's padded one


# -- raw memory of every layout (OpenVINO buffer()) ----------------------------

def nhwc_blob(a):
    b = bc.Blob.with_desc(bc.TensorDesc(bc.float32, list(a.shape), bc.Layout.NHWC))
    b.reorder_from(blob_of(a))
    return b


def test_buffers_of_an_nhwc_blob_are_its_memory_in_memory_order(rng):
    a = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    b = nhwc_blob(a)
    memory = np.transpose(a, (0, 2, 3, 1)).reshape(-1)  # the oracle: NHWC order
    assert b.raw_count == a.size
    with b.buffer(0, a.size, "r") as m:
        np.testing.assert_array_equal(m, memory)
    with b.buffer() as m:  # the whole span, 1-D
        assert m.shape == (a.size,)
        m[0] = 100.0  # element (0, 0, 0, 0)
    assert np.asarray(b)[0, 0, 0, 0] == 100.0
    with b.buffer(3, 2, "r") as m:
        np.testing.assert_array_equal(m, memory[3:5])
    buf = b.get_buffer(3, 3, True)
    np.testing.assert_array_equal(buf, memory[3:6])
    b.release_buffer(buf, False)
    np.testing.assert_array_equal(np.asarray(b.raw()), np.concatenate([[100.0], memory[1:]]).astype(np.float32))


def test_blocked_blobs_reach_numpy_through_raw():
    # The OpenVINO seed: dims {1, 25, 20, 20} with channels blocked by 8.
    t = bc.TensorDesc(bc.float32, [1, 25, 20, 20], bc.BlockingDesc([1, 4, 20, 20, 8], [0, 1, 2, 3, 1]))
    b = bc.Blob.with_desc(t)
    a = np.arange(25 * 400, dtype=np.float32).reshape(1, 25, 20, 20)
    b.reorder_from(blob_of(a))
    np.testing.assert_array_equal(np.asarray(b), a)  # the logical values, copied
    raw = np.asarray(b.raw())
    assert raw.shape == (4 * 20 * 20 * 8,) and b.raw_count == raw.size
    # offset(v) of every logical element holds it.
    for idx in [(0, 0, 0, 0), (0, 0, 0, 1), (0, 1, 0, 2), (0, 24, 19, 19), (0, 9, 3, 7)]:
        assert raw[t.offset(list(idx))] == a[idx]
    # The padding channels (25..31) read as zeros and are part of the span.
    np.testing.assert_array_equal(raw.reshape(4, 20, 20, 8)[3, :, :, 1:], 0)
    # Writing the raw memory writes the blob.
    raw[t.offset([0, 1, 0, 2])] = -1
    out = bc.Blob.tensor([1, 25, 20, 20])
    out.reorder_from(b)
    assert np.asarray(out)[0, 1, 0, 2] == -1
    with b.buffer(8, 8, "r") as m:  # (0, 0, 0, 1) in all 8 channels of block 0
        np.testing.assert_array_equal(m, a[0, :8, 0, 1])


def test_padded_spans_include_the_padding():
    blk = bc.BlockingDesc([2, 3], [0, 1], offset=3, strides=[32, 1])
    b = bc.Blob.with_desc(bc.TensorDesc(bc.float32, [2, 3], blk))
    assert b.raw_count == 3 + 32 + 3
    b.reorder_from(bc.Blob.from_numpy(np.arange(1, 7, dtype=np.float32).reshape(2, 3)))
    raw = np.asarray(b.raw())
    np.testing.assert_array_equal(raw[3:6], [1, 2, 3])
    np.testing.assert_array_equal(raw[35:38], [4, 5, 6])
    assert raw[:3].sum() == 0 and raw[6:35].sum() == 0


def test_views_without_a_span_refuse_with_the_reason():
    b = bc.Blob.from_numpy(np.arange(12, dtype=np.float32).reshape(3, 4))
    for view in [b[:, 1:3], b.T, b.region([0, 1], [2, 3])]:
        with pytest.raises(bc.UnsupportedError, match="contiguous span"):
            view.raw()
        with pytest.raises(bc.UnsupportedError, match="contiguous span"):
            with view.buffer(0, 1, "r"):
                pass
    # Dense views own their span: a window's raw memory is its rows.
    np.testing.assert_array_equal(np.asarray(b.window(1).raw()), [0, 1, 2, 3])
    np.testing.assert_array_equal(np.asarray(b[1].raw()), [4, 5, 6, 7])
