"""NumPy indexing, the array protocol, casts and bfloat16, with NumPy (and
ml_dtypes) as the oracle: random keys over every dtype and ranks 0-5."""

import random

import numpy as np
import pytest

import blobcore as bc

DTYPES = [np.float32, np.int32, np.float64, np.int64, np.uint8, np.int8, np.float16]


def random_key(rng, shape):
    """A random NumPy basic-indexing key for `shape`."""
    key = []
    axes = list(range(len(shape)))
    ellipsis = rng.random() < 0.3 and len(shape) > 0
    consumed = rng.randint(0, len(shape))
    for a in axes[:consumed]:
        n = shape[a]
        r = rng.random()
        if r < 0.3 and n > 0:
            key.append(rng.randint(-n, n - 1))
        else:
            start = rng.choice([None, rng.randint(-n - 2, n + 2)])
            stop = rng.choice([None, rng.randint(-n - 2, n + 2)])
            step = rng.choice([None, 1, 2, 3, -1, -2, 2**62, -(2**63)])
            key.append(slice(start, stop, step))
        if rng.random() < 0.15:
            key.append(None)
    if ellipsis:
        key.append(Ellipsis)  # after the entries, so they index the leading axes
    if rng.random() < 0.1:
        key.append(None)
    if ellipsis and rng.random() < 0.5:
        # `..., k`: k indexes the last axis instead
        k = key.index(Ellipsis)
        key = key[k:] + [0] * 0
        if shape and shape[-1] > 0 and len([e for e in key if e is not None and e is not Ellipsis]) < len(shape):
            key.append(rng.randint(-shape[-1], shape[-1] - 1))
    return tuple(key)


def make(dtype, shape, rng):
    a = (np.arange(int(np.prod(shape)), dtype=np.int64) % 100).astype(dtype).reshape(shape)
    return a, bc.Blob.from_numpy(a)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("rank", range(6))
def test_getitem_matches_numpy(dtype, rank):
    rng = random.Random(rank * 31 + DTYPES.index(dtype))
    for _ in range(40):
        shape = tuple(rng.randint(0, 4) for _ in range(rank))
        a, b = make(dtype, shape, rng)
        key = random_key(rng, shape)
        want = a[key]
        got = b[key]
        if isinstance(want, np.generic):
            assert type(got) is type(want) and got == want, key
            continue
        assert got.shape == want.shape, (shape, key)
        np.testing.assert_array_equal(np.asarray(got), want, err_msg=str(key))
        negative = any(isinstance(k, slice) and (k.step or 1) < 0 for k in key)
        if want.size and not negative:
            # a view: writing through it shows in the blob, as in NumPy
            assert np.shares_memory(np.asarray(got), np.asarray(b)), key
        # views of views compose
        if got.ndim:
            sub = random_key(rng, got.shape)
            np.testing.assert_array_equal(np.asarray(got[sub]) if not np.isscalar(got[sub]) else got[sub], want[sub])


@pytest.mark.parametrize("dtype", DTYPES)
def test_setitem_matches_numpy(dtype):
    rng = random.Random(7 + DTYPES.index(dtype))
    for _ in range(60):
        rank = rng.randint(1, 4)
        shape = tuple(rng.randint(1, 4) for _ in range(rank))
        a, b = make(dtype, shape, rng)
        a = a.copy()
        key = random_key(rng, shape)
        target = a[key]
        tshape = np.shape(target)
        value = rng.choice(["scalar", "array", "row"])
        if value == "scalar":
            v = 7
        elif value == "array":
            v = (np.arange(int(np.prod(tshape)) or 0) % 50).reshape(tshape).astype(dtype)
        else:
            v = (np.arange(tshape[-1]) % 50).astype(dtype) if tshape else 5
        a[key] = v
        b[key] = v
        np.testing.assert_array_equal(np.asarray(b), a, err_msg=str(key))


def test_advanced_indexing_copies():
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    b = bc.Blob.from_numpy(a)
    for key in [np.array([2, 0, 3]), (slice(None), [1, 1, 5]), a > 10, ([0, 3], [1, 2])]:
        got = b[key]
        np.testing.assert_array_equal(np.asarray(got), a[key])
        assert not np.shares_memory(np.asarray(got), np.asarray(b))
    c = a.copy()
    b[a > 20] = -1
    c[c > 20] = -1
    np.testing.assert_array_equal(np.asarray(b), c)


class Idx:
    """A user type with __index__, which NumPy accepts as an integer."""

    def __init__(self, v):
        self.v = v

    def __index__(self):
        return self.v


@pytest.mark.parametrize("key", [np.s_[::2**62], np.s_[::-2**63], np.s_[:, 1::-2**63], np.s_[-1::-2**62, ::2**63 - 1], np.s_[::2**63 - 1, 2]])
def test_steps_at_the_ends_of_int64_match_numpy(key):
    """A step past the dim selects one element; times the stride it
    passes int64 (and -2**63 has no int64 negation)."""
    a = np.arange(12, dtype=np.float64).reshape(3, 4)
    b = bc.Blob.from_numpy(a)
    for x in (b, b.T.T, b[::-1, ::-1][::-1, ::-1]):
        got = np.asarray(x[key])
        assert got.shape == a[key].shape and got.tolist() == a[key].tolist()


def test_integer_like_keys_match_numpy():
    a = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    b = bc.Blob.from_numpy(a)
    keys = [
        np.int64(-1), np.uint8(2), Idx(1), (Idx(-2), slice(Idx(1), None, np.int32(2))),
        slice(None, None, -(2**70)), slice(-(2**70), 2**70), (0, slice(2**63 - 1, None, -1)),
        np.array(1), True, (np.bool_(False), 0), [True, False, True],
    ]
    for key in keys:
        want = a[key]
        got = b[key]
        np.testing.assert_array_equal(np.asarray(got), want, err_msg=repr(key))
        assert np.asarray(got).shape == want.shape, repr(key)
    for key in [2**63, -(2**64), Idx(2**70)]:
        # NumPy raises OverflowError for some of these, IndexError for others;
        # blobcore raises IndexError ("does not fit a 64-bit integer") for all.
        with pytest.raises((IndexError, OverflowError)):
            a[key]
        with pytest.raises(IndexError, match="64-bit"):
            b[key]


def test_bad_keys_change_nothing():
    b = bc.Blob.from_numpy(np.arange(6.0).reshape(2, 3))
    before = np.asarray(b).copy()
    for key, exc in [(5, IndexError), ((0, 0, 0), IndexError), ("a", IndexError), (1.0, IndexError), (slice(None, None, 0), ValueError)]:
        with pytest.raises(exc):
            b[key]
        with pytest.raises(exc):
            b[key] = 1
    with pytest.raises(ValueError):
        b[0] = [1, 2]
    np.testing.assert_array_equal(np.asarray(b), before)


def test_array_protocol_iteration_and_transpose():
    a = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    b = bc.Blob.from_numpy(a)
    assert (b.shape, b.ndim, b.size, b.dtype, b.nbytes, len(b)) == (a.shape, a.ndim, a.size, a.dtype, a.nbytes, len(a))
    for got, want in zip(b, a):
        np.testing.assert_array_equal(np.asarray(got), want)
    assert [x for x in bc.Blob.from_numpy(np.arange(3.0))] == [0.0, 1.0, 2.0]
    np.testing.assert_array_equal(np.asarray(b.T), a.T)
    np.testing.assert_array_equal(np.asarray(b.transpose(1, 0, 2)), a.transpose(1, 0, 2))
    np.testing.assert_array_equal(np.asarray(b.transpose((2, 0, 1))), a.transpose((2, 0, 1)))
    assert np.shares_memory(np.asarray(b.T), np.asarray(b))
    assert np.array(b, dtype=np.float64).dtype == np.float64
    assert b.__array__(copy=True).base is None or not np.shares_memory(b.__array__(copy=True), np.asarray(b))
    assert np.shares_memory(b.__array__(copy=False), np.asarray(b))
    with pytest.raises(ValueError):
        b.__array__(np.float64, copy=False)
    view = b[::2, 1]
    assert np.asarray(view).shape == (1, 4)


@pytest.mark.parametrize("src", DTYPES)
@pytest.mark.parametrize("dst", DTYPES)
def test_astype_matches_numpy(src, dst):
    rng = np.random.default_rng(DTYPES.index(src) * 10 + DTYPES.index(dst))
    # In-range values of the narrower type (NumPy leaves out-of-range
    # float -> int conversions platform-defined).
    vals = rng.uniform(-100, 100, 200)
    if np.issubdtype(src, np.integer) or np.issubdtype(dst, np.integer):
        lo = max(np.iinfo(t).min for t in (src, dst) if np.issubdtype(t, np.integer))
        hi = min(np.iinfo(t).max for t in (src, dst) if np.issubdtype(t, np.integer))
        if np.float16 in (src, dst):
            lo, hi = max(lo, -60000), min(hi, 60000)  # float16's range
        vals = rng.uniform(lo, hi, 200)
    a = vals.astype(src)
    if np.issubdtype(src, np.integer) and np.issubdtype(dst, np.integer):
        a = rng.integers(np.iinfo(src).min, np.iinfo(src).max, 200, dtype=src, endpoint=True)  # wrap-around too
    got = bc.Blob.from_numpy(a).astype(dst)
    assert got.dtype == np.dtype(dst)
    np.testing.assert_array_equal(np.asarray(got), a.astype(dst))


def test_bfloat16_through_ml_dtypes():
    ml = pytest.importorskip("ml_dtypes")
    x = np.array([1.0, -2.5, 3.140625, 65280.0], dtype=ml.bfloat16)
    b = bc.Blob.from_numpy(x, copy=False)  # zero-copy through a uint16 view
    assert b.dtype == bc.bfloat16
    np.asarray(b)[0] = 7
    assert x[0] == 7
    np.testing.assert_array_equal(np.asarray(b), x)
    np.testing.assert_array_equal(b.numpy(), x)
    f = np.linspace(-3, 3, 101, dtype=np.float32)
    np.testing.assert_array_equal(np.asarray(bc.Blob.from_numpy(f).astype(bc.bfloat16)), f.astype(ml.bfloat16))
    np.testing.assert_array_equal(np.asarray(bc.Blob.from_numpy(f.astype(ml.bfloat16)).astype(np.float32)), f.astype(ml.bfloat16).astype(np.float32))
    c = b.clone(dtype=np.float32)
    c.copy_from(b.astype(np.float32))
    np.testing.assert_array_equal(np.asarray(c), x.astype(np.float32))
    assert b[1] == x[1]


def test_read_only_blobs_refuse_every_write():
    ro = np.arange(6.0).reshape(2, 3)
    ro.flags.writeable = False
    b = bc.Blob.from_numpy(ro, copy=False)
    assert not b.writeable and not b[0].writeable
    for write in [lambda: b.fill(1), lambda: b.scale(2), lambda: b.clear(), lambda: b.__setitem__(0, 1),
                  lambda: b[0].fill(1), lambda: b.copy_from(np.zeros((2, 3))), lambda: b.get_buffer(0, 2, False),
                  lambda: b.reshape([10])]:
        with pytest.raises(bc.ReadOnlyError, match="read-only"):
            write()
    with pytest.raises(ValueError):
        np.asarray(b)[0, 0] = 5
    assert ro[0, 0] == 0
    assert b.asum() == 15.0
    assert b.copy().writeable


def test_a_chain_of_a_million_views_is_freed():
    """`x = x[:]` a million times, then `del x`: each view keeps the one it
    was made from, and the chain is freed in a loop (freeing it by
    recursion overflowed the stack and killed the interpreter). Views of
    several kinds join the chain; a view kept from its middle still reads
    the data, and the NumPy array lent to it is let go once all are gone."""
    import gc
    import weakref

    base = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    gone = weakref.ref(base)
    x = bc.Blob.from_numpy(base, copy=False)
    want = np.asarray(x).copy()
    del base
    kept = None
    for i in range(1_000_000):
        x = (x[:], x.window(2), x.T.T, x[..., :])[i % 4]
        if i == 500_000:
            kept = x
    assert np.array_equal(np.asarray(x), want)
    assert x.owner.parent is None
    del x
    gc.collect()
    assert gone() is not None and np.array_equal(np.asarray(kept), want)
    del kept
    gc.collect()
    assert gone() is None
