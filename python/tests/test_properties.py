"""Differential property tests (issue 26): blobcore against NumPy and
ml_dtypes on generated shapes, dtypes, keys and views, including views
that reach the same memory through NumPy, DLPack, pickle buffers and
`from_numpy(copy=False)`. Hypothesis runs derandomized (fixed seeds), so a
failure reproduces; every 16-bit pattern is checked exhaustively."""

import gc
import pickle
import warnings
import weakref
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

import blobcore as bc

SETTINGS = settings(derandomize=True, deadline=None, max_examples=300, suppress_health_check=list(HealthCheck))

DTYPES = [np.float32, np.float64, np.int32, np.int64, np.uint8, np.int8, np.float16, ml_dtypes.bfloat16]
BF16 = np.dtype(ml_dtypes.bfloat16)


# ---------------------------------------------------------------- oracles

def exact_round(x: float, dt) -> np.ndarray:
    """An exactly rounded binary float (ties to even) of the rational value
    of `x`, by exact arithmetic: the independent oracle where ml_dtypes and
    NumPy round twice (float64 and 32/64-bit integers into bfloat16)."""
    if x != x:
        return np.array([x], dtype=np.float64).astype(np.float32).astype(dt)
    if x in (float("inf"), float("-inf")) or x == 0:
        return np.array([x], dtype=dt)
    return exact_round_fraction(Fraction(x), dt)


def cast_oracle(a: np.ndarray, to) -> np.ndarray:
    """What blobcore's astype must give: NumPy/ml_dtypes, except where they
    round twice (exact rounding then) and where C leaves float -> int
    undefined (blobcore saturates, NaN -> 0)."""
    to = np.dtype(to)
    src = a.dtype
    if to.kind in "iu" and src.kind == "f" or (src == BF16 and to.kind in "iu"):
        f = a.astype(np.float64)
        info = np.iinfo(to)
        top, bottom = float(info.max) + 1.0, float(info.min)  # both powers of two: exact
        inside = (f < top) & (f >= bottom)  # False for NaN
        out = np.zeros(a.shape, dtype=to)
        out[inside] = np.trunc(f[inside]).astype(to)
        out[f >= top] = info.max
        out[f < bottom] = info.min
        return out
    if to == BF16 and (src == np.float64 or (src.kind in "iu" and src.itemsize >= 4)):
        one = (lambda v: exact_round(float(v), BF16)) if src.kind == "f" else (lambda v: exact_int_round(int(v), BF16))
        return np.concatenate([one(v) for v in a.ravel()]).reshape(a.shape) if a.size else a.astype(to)
    if to == np.float16 and src.kind in "iu" and src.itemsize == 8:
        return np.concatenate([exact_int_round(int(v), np.dtype(np.float16)) for v in a.ravel()]).reshape(a.shape) if a.size else a.astype(to)
    return a.astype(to)


def exact_int_round(v: int, dt) -> np.ndarray:
    if v == 0:
        return np.zeros(1, dt)
    r = exact_round_fraction(Fraction(v), dt)
    return r


def exact_round_fraction(v: Fraction, dt) -> np.ndarray:
    fi = ml_dtypes.finfo(dt) if dt == BF16 else np.finfo(dt)
    man, emin = int(fi.nmant), int(fi.minexp)
    neg, a = v < 0, abs(v)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    q = Fraction(2) ** (max(e, emin) - man)
    n, r = divmod(a, q)
    if r > q / 2 or (r == q / 2 and n % 2 == 1):
        n += 1
    val = n * q
    out = float("inf") if val > Fraction(float(fi.max)) else float(val)
    return np.array([-out if neg else out], dtype=np.float64).astype(dt)


def same_bits(got: np.ndarray, want: np.ndarray) -> bool:
    got, want = np.asarray(got), np.asarray(want)
    if got.dtype != want.dtype or got.shape != want.shape:
        return False
    if got.dtype.kind == "f" or got.dtype == BF16:
        with np.errstate(invalid="ignore"):
            g = got.astype(np.float64)
            w = want.astype(np.float64)
        nan = np.isnan(g) & np.isnan(w) & (np.signbit(g) == np.signbit(w))
        bits = got.view(f"u{got.dtype.itemsize}") == want.view(f"u{want.dtype.itemsize}")
        return bool(np.all(bits | nan))
    if got.dtype.kind == "V":  # ml_dtypes' float8: the patterns, NaNs included
        u = f"u{got.dtype.itemsize}"
        return bool(np.array_equal(got.view(u), want.view(u)))
    return bool(np.array_equal(got, want))


# ------------------------------------------------------------------ casts

def test_every_16_and_8_bit_pattern_to_every_dtype():
    sources = [
        np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16),
        np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(BF16),
        np.arange(256, dtype=np.uint16).astype(np.uint8),
        np.arange(256, dtype=np.uint16).astype(np.uint8).view(np.int8),
    ]
    for a in sources:
        b = bc.Blob.from_numpy(a)
        for to in DTYPES:
            got = b.astype(to).numpy()
            assert same_bits(got, cast_oracle(a, to)), (a.dtype, np.dtype(to))


FINITE_EDGES = [0.0, -0.0, 1.0, 65504.0, 65519.99, 65520.0, 6.1e-5, 5.96e-8, 2.98e-8, 3.4e38, 3.3895e38, 1e-45, 1e300, -1e-300]


@st.composite
def float64s(draw):
    kind = draw(st.integers(0, 3))
    if kind == 0:
        return draw(st.floats(allow_nan=True, allow_infinity=True, width=64))
    if kind == 1:
        return draw(st.sampled_from(FINITE_EDGES))
    # just around a halfway point of float16 or bfloat16 (the hard cases)
    dt = draw(st.sampled_from([np.float16, BF16]))
    bits = draw(st.integers(0, 0x7bff if dt == np.float16 else 0x7f7f))
    lo = float(np.array([bits], np.uint16).view(dt)[0])
    hi = float(np.array([bits + 1], np.uint16).view(dt)[0])
    mid = lo + (hi - lo) / 2
    nudge = draw(st.sampled_from([-1, 0, 1]))
    return float(np.nextafter(mid, np.inf if nudge > 0 else -np.inf)) if nudge else mid


@SETTINGS
@given(st.lists(float64s(), min_size=1, max_size=40))
def test_float64_casts_round_once(values):
    a = np.array(values, dtype=np.float64)
    b = bc.Blob.from_numpy(a)
    for to in [np.float16, BF16, np.float32]:
        want = np.concatenate([exact_round(float(v), np.dtype(to)) for v in a])
        if to in (np.float16, np.float32):
            assert same_bits(want, a.astype(to))  # NumPy rounds these once too
        assert same_bits(b.astype(to).numpy(), want), to
        # Every door a Python float or a float64 array comes in by rounds
        # once too (ml_dtypes before 0.7 rounds them through float32).
        f = bc.Blob.full([len(values)], 0.0, dtype=to)
        for i, v in enumerate(values):
            f[i] = v
        assert same_bits(f.numpy(), want), to
        assert same_bits(b.__array__(to), want), to
        assert same_bits(b[::-1].__array__(to)[::-1], want), to
        # np.asarray(b, dtype=to) reads the buffer and converts with
        # NumPy's own cast (ml_dtypes' for bfloat16), as for the ndarray.
        assert same_bits(np.asarray(b, dtype=to), a.astype(to)), to
        for door in range(4):
            g = bc.Blob.full([len(values)], 0.0, dtype=to)
            if door == 0:
                g[:] = values
            elif door == 1:
                g[:] = a
            elif door == 2:
                g.copy_from(a)
            else:
                g = bc.Blob.from_numpy(a, dtype=to)
            assert same_bits(g.numpy(), want), (to, door)
        for v in values[:3]:
            one = np.repeat(exact_round(v, np.dtype(to)), 2)
            assert same_bits(bc.Blob.full([2], v, dtype=to).numpy(), one)
            assert same_bits(bc.Blob.full([2], np.float64(v), dtype=to).numpy(), one)
            g = bc.Blob.full([4], 0.0, dtype=to)
            g[::2].fill(v)
            g[1::2] = v
            assert same_bits(g.numpy(), np.repeat(exact_round(v, np.dtype(to)), 4))


def integers_near_halfway():
    """Integers up to 2^130 in magnitude, a third of them within one of a
    halfway point between two neighbouring float32 / bfloat16 / float16 /
    float64 values (where a conversion through a double rounds twice)."""
    plain = st.integers(-(2**130), 2**130)
    def near(args):
        p, top, shift, nudge, sign = args
        mid = ((1 << (p - 1)) | top % (1 << (p - 1))) << shift | (1 << (shift - 1))
        return sign * (mid + nudge)
    half = st.tuples(st.sampled_from([8, 11, 24, 53]), st.integers(0, 2**60), st.integers(1, 75),
                     st.sampled_from([-1, 0, 1]), st.sampled_from([-1, 1])).map(near)
    return st.one_of(plain, half, half)


@SETTINGS
@given(st.lists(integers_near_halfway(), min_size=1, max_size=12), st.sampled_from([np.float16, BF16, np.float32, np.float64]))
def test_integers_round_once_into_floats(values, to):
    # The exactly rounded value of the integer itself. NumPy converts a
    # Python int through a double (twice rounded past 2^53), so it is no
    # oracle here; ints of 2^128 and more overflow every dtype but float64.
    to = np.dtype(to)
    want = np.concatenate([exact_round_fraction(Fraction(v), to) for v in values])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        f = bc.Blob.full([len(values)], 0.0, dtype=to)
        for i, v in enumerate(values):
            f[i] = v
        assert same_bits(f.numpy(), want), to
        for i, v in enumerate(values):
            one = np.repeat(want[i : i + 1], 3)
            assert same_bits(bc.Blob.full([3], v, dtype=to).numpy(), one), (v, to)
            g = bc.Blob.full([3], 0.0, dtype=to)
            g.fill(v)
            assert same_bits(g.numpy(), one), (v, to)
            g[1:] = 0.0
            g[1:] = v
            assert same_bits(g.numpy(), one), (v, to)
            if -(2**63) <= v < 2**63:
                g[1] = np.int64(v)
                g.fill_object(0, np.int64(v))
                assert same_bits(g.numpy(), one), (v, to)
            if 0 <= v < 2**64:
                g.fill(np.uint64(v))
                assert same_bits(g.numpy(), one), (v, to)
        small = [v for v in values if -(2**63) <= v < 2**63]
        if small:
            # A list of them is an int64 array first, then the core's cast.
            g = bc.Blob.full([len(small)], 0.0, dtype=to)
            g[:] = small
            assert same_bits(g.numpy(), np.concatenate([exact_round_fraction(Fraction(v), to) for v in small])), to


@SETTINGS
@given(st.lists(st.integers(-(2**63), 2**63 - 1), min_size=1, max_size=30), st.sampled_from([np.int64, np.int32]))
def test_integer_casts_round_once(values, it):
    info = np.iinfo(it)
    a = np.array([min(max(v, info.min), info.max) for v in values], dtype=it)
    b = bc.Blob.from_numpy(a)
    for to in [np.float16, BF16, np.float32, np.float64]:
        got = b.astype(to).numpy()
        want = np.concatenate([exact_round_fraction(Fraction(int(v)), np.dtype(to)) if v else np.zeros(1, to) for v in a])
        assert same_bits(got, want), (to, a)



@SETTINGS
@given(st.lists(st.floats(width=32, allow_nan=True, allow_infinity=True), min_size=1, max_size=64), st.sampled_from(DTYPES))
def test_float32_casts_match_numpy_and_ml_dtypes(values, to):
    a = np.array(values, dtype=np.float32)
    assert same_bits(bc.Blob.from_numpy(a).astype(to).numpy(), cast_oracle(a, to))


# --------------------------------------------------------------- indexing

@st.composite
def array_and_key(draw, for_set=False):
    rank = draw(st.integers(1, 4))
    dims = draw(st.lists(st.integers(0, 5), min_size=rank, max_size=rank))
    dt = draw(st.sampled_from([np.float32, np.int64, np.uint8, np.float16]))
    a = np.arange(int(np.prod(dims)), dtype=np.float64).reshape(dims).astype(dt)
    entries = []
    for d in dims:
        k = draw(st.integers(0, 5))
        if k == 0 and d > 0:
            entries.append(draw(st.integers(-d, d - 1)))
        elif k == 1:
            start = draw(st.one_of(st.none(), st.integers(-6, 6)))
            stop = draw(st.one_of(st.none(), st.integers(-6, 6)))
            # and steps past any dim, at int64's ends (one element each)
            step = draw(st.one_of(st.none(), st.sampled_from([-2, -1, 1, 2, 3, 2**62, 2**63 - 1, -(2**63)])))
            entries.append(slice(start, stop, step))
        elif k == 2:
            entries += [None, slice(None)]  # a new axis, then this dim whole
        elif k == 3 and d > 0 and not for_set and not any(isinstance(e, list) for e in entries):
            entries.append(draw(st.lists(st.integers(-d, d - 1), min_size=1, max_size=3)))
        else:
            entries.append(slice(None))
    if draw(st.booleans()) and entries:
        cut = draw(st.integers(0, len(entries)))
        entries = entries[:cut] + [Ellipsis]
    key = tuple(entries) if len(entries) != 1 or draw(st.booleans()) else entries[0]
    return a, key


@SETTINGS
@given(array_and_key())
def test_getitem_matches_numpy(ak):
    a, key = ak
    b = bc.Blob.from_numpy(a)
    want = a[key]
    got = b[key]
    got = np.asarray(got) if isinstance(got, bc.Blob) else got
    assert np.array_equal(np.asarray(got), want)
    assert np.asarray(got).shape == np.shape(want)


@SETTINGS
@given(array_and_key(for_set=True), st.integers(0, 100).map(float))
def test_setitem_matches_numpy(ak, value):
    a, key = ak
    b = bc.Blob.from_numpy(a)
    ref = a.copy()
    ref[key] = value
    b[key] = value
    assert np.array_equal(np.asarray(b), ref)


@SETTINGS
@given(array_and_key(for_set=True), st.sampled_from(["same", "other_dtype", "broadcast", "strided", "own_memory"]))
def test_setitem_of_arrays_matches_numpy(ak, kind):
    # Arrays assigned into a view: of the view's dtype and dims (copied as
    # they are), of another dtype, broadcast, strided, and reaching the
    # blob's own memory through NumPy (reversed, so the two overlap).
    a, key = ak
    b = bc.Blob.from_numpy(a)
    ref = a.copy()
    shape = ref[key].shape
    n = int(np.prod(shape))
    base = (np.arange(n, dtype=np.float64) % 50 + 1).reshape(shape)
    if kind == "own_memory" and shape:
        ref[key] = ref[key][::-1]
        b[key] = np.asarray(b)[key][::-1]
    else:
        if kind == "other_dtype":
            v = base.astype(np.float64 if a.dtype != np.float64 else np.int32)
        elif kind == "broadcast" and shape:
            v = (np.arange(shape[-1]) % 50 + 1).astype(a.dtype)
        elif kind == "strided":
            v = np.stack([base, base + 1], axis=-1).astype(a.dtype)[..., 1]
        else:
            v = base.astype(a.dtype)
        ref[key] = v
        b[key] = v
    assert np.array_equal(np.asarray(b), ref)


# ------------------------------------------------- merge, split, permutes

@st.composite
def arrays(draw, min_rank=1, max_rank=4):
    rank = draw(st.integers(min_rank, max_rank))
    dims = draw(st.lists(st.integers(0, 4), min_size=rank, max_size=rank))
    dt = draw(st.sampled_from(DTYPES))
    n = int(np.prod(dims))
    return (np.arange(n, dtype=np.float64) % 120).reshape(dims).astype(dt)


@SETTINGS
@given(arrays(), st.data())
def test_merge_and_split_match_concatenate_and_split(a, data):
    axis = data.draw(st.integers(-a.ndim, a.ndim - 1))
    n = a.shape[axis]
    cuts = sorted(data.draw(st.lists(st.integers(0, n), max_size=3)))
    want = np.split(a, cuts, axis=axis)
    sizes = [p.shape[axis] for p in want]
    parts = bc.Blob.from_numpy(a).split_sizes(axis, sizes) if hasattr(bc.Blob, "split_sizes") else bc.split(bc.Blob.from_numpy(a), sizes, axis)
    for p, w in zip(parts, want):
        assert np.array_equal(np.asarray(p), w)
    merged = bc.merge(parts, axis)
    assert np.array_equal(np.asarray(merged), a)


@SETTINGS
@given(arrays(), st.data())
def test_transposes_and_permutes_match_numpy(a, data):
    b = bc.Blob.from_numpy(a)
    axes = data.draw(st.permutations(range(a.ndim)))
    assert np.array_equal(np.asarray(b.permuted(list(axes))), np.transpose(a, axes))
    assert np.array_equal(np.asarray(b.transpose(*axes)), np.transpose(a, axes))
    i, j = data.draw(st.integers(0, a.ndim - 1)), data.draw(st.integers(0, a.ndim - 1))
    assert np.array_equal(np.asarray(b.transposed(i, j)), np.swapaxes(a, i, j))
    out = bc.Blob.tensor(list(np.transpose(a, axes).shape), dtype=a.dtype)
    out.permute_from(b, list(axes))
    assert np.array_equal(np.asarray(out), np.transpose(a, axes))


@SETTINGS
@given(arrays(min_rank=1), st.data())
def test_windows_match_slices(a, data):
    b = bc.Blob.from_numpy(a)
    n = a.shape[0]
    if n == 0:
        return
    size = data.draw(st.integers(1, n))
    w = b.window(size)
    pos = data.draw(st.integers(0, n - size))
    w.set_parent_pos(pos)
    assert np.array_equal(np.asarray(w), a[pos:pos + size])
    w.fill(7)
    ref = a.copy()
    ref[pos:pos + size] = 7
    assert np.array_equal(np.asarray(b), ref)


# ---------------------------------------------- aliases and overlapping copies

ALIASES = ["self", "numpy", "asblob", "dlpack", "pickle5"]


def alias(b: bc.Blob, kind: str) -> bc.Blob:
    """Another door to the same memory."""
    if kind == "self":
        return b
    if kind == "numpy":
        return bc.Blob.from_numpy(np.asarray(b), copy=False)
    if kind == "asblob":
        return bc.asblob(np.asarray(b))
    if kind == "dlpack":
        return bc.from_dlpack(b)
    bufs = []
    data = pickle.dumps(b, protocol=5, buffer_callback=bufs.append)
    return pickle.loads(data, buffers=bufs)


# The doors of ALIASES, and a strided view of a larger NumPy array.
DOORS_AND_VIEW = ALIASES + ["strided view"]


def through_door(big: np.ndarray, index: tuple, door: str) -> tuple[bc.Blob, np.ndarray]:
    """``big[index]`` as a blob reached through `door` (one of
    DOORS_AND_VIEW) and the array it must equal: for "strided view" a
    view of a blob over `big`'s own memory, else a dense copy reached
    through `alias`."""
    if door == "strided view":
        return bc.Blob.from_numpy(big, copy=False)[index], big[index]
    want = big[index].copy()
    return alias(bc.Blob.from_numpy(want.copy()), door), want


@st.composite
def view_key(draw, shape):
    """A basic-indexing key (a view of the memory), steps of either sign."""
    key = []
    for d in shape:
        step = draw(st.sampled_from([-2, -1, 1, 2]))
        start = draw(st.integers(0, d)) if step > 0 else draw(st.integers(0, d - 1))
        key.append(slice(start, None, step))
    return tuple(key)


def trimmed(key, shape):
    """`key` cut to give `shape` (None where the stop would wrap around)."""
    out = []
    for s, n in zip(key, shape):
        stop = s.start + n * s.step
        out.append(slice(s.start, stop if stop >= 0 else None, s.step))
    return tuple(out)



def float64_through(a: np.ndarray, door: str) -> bc.Blob:
    """The float64 values `a` as a blob reached through `door`: one of
    ALIASES, "pickle" (a copy by value), or "strided view" (every other
    element, backwards, of a blob over NumPy's memory)."""
    if door == "strided view":
        big = np.full(2 * len(a), -1.5)
        big[1::2] = a[::-1]
        return bc.Blob.from_numpy(big, copy=False)[::-2]
    if door == "pickle":
        return pickle.loads(pickle.dumps(bc.Blob.from_numpy(a)))
    return alias(bc.Blob.from_numpy(a), door)


@SETTINGS
@given(st.lists(float64s(), min_size=1, max_size=24), st.sampled_from(ALIASES + ["pickle", "strided view"]),
       st.sampled_from(["blob", "numpy", "dlpack", "reversed"]))
def test_float64_casts_round_once_through_every_door(values, door, into):
    """float64 into float16, bfloat16 and float32 rounds once whichever
    door the float64 memory came in by (NumPy's memory, asblob, DLPack,
    pickle buffers, a stepped reversed view) and whichever door the
    destination's memory did (NumPy's, DLPack's, a reversed view)."""
    a = np.array(values, dtype=np.float64)
    src = float64_through(a, door)
    assert same_bits(np.asarray(src), a)
    for to in [np.float16, BF16, np.float32]:
        want = np.concatenate([exact_round(float(v), np.dtype(to)) for v in a])
        assert same_bits(src.astype(to).numpy(), want), (to, door)
        assert same_bits(src.__array__(to), want), (to, door)
        if into == "numpy":
            mem = np.zeros(len(a), dtype=to)
            dst, read = bc.Blob.from_numpy(mem, copy=False), lambda: mem
        elif into == "dlpack":
            dst = bc.from_dlpack(bc.Blob.full([len(a)], 0.0, dtype=to))
            read = lambda: dst.numpy()
        elif into == "reversed":
            whole = bc.Blob.full([len(a)], 0.0, dtype=to)
            dst, read = whole[::-1], lambda: whole.numpy()[::-1]
        else:
            dst = bc.Blob.full([len(a)], 0.0, dtype=to)
            read = lambda: dst.numpy()
        dst[:] = src
        assert same_bits(read(), want), (to, door, into)
        dst[:] = 0.0
        dst.copy_from(src.astype(to))
        assert same_bits(read(), want), (to, door, into)

INTEGER_DTYPES = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]


@SETTINGS
@given(st.sampled_from(INTEGER_DTYPES), st.data(),
       st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([1.0, -1.0, 0.5, -0.5, 2.0, 1 / 3, 0.1, -0.0]),
                 st.builds(lambda n, k: n / 2**k, st.integers(-(2**31), 2**31), st.integers(0, 80))),
       st.booleans(), st.sampled_from(ALIASES))
def test_integer_scale_is_numpys_or_exact(dtype, data, factor, reversed_view, door):
    """``scale`` on integers: NumPy's float64 ``trunc(x * factor)`` where
    float64 holds ``x`` (|x| <= 2**53), the exact product (Python's
    ``Fraction``) beyond, truncated toward zero and saturated; scaled
    through another door to the same memory (NumPy, asblob, DLPack,
    pickle buffers) and read back through the first."""
    info = np.iinfo(dtype)
    near = st.integers(-4, 4).map(lambda d: 2**53 + d)
    ends = st.integers(0, 3).flatmap(lambda d: st.sampled_from([int(info.min) + d, int(info.max) - d]))
    values = data.draw(st.lists(st.one_of(st.integers(int(info.min), int(info.max)), near, near.map(lambda v: -v), ends),
                                min_size=1, max_size=16))
    values = [min(max(v, int(info.min)), int(info.max)) for v in values]
    a = np.array(values, dtype=dtype)
    b = bc.Blob.from_numpy(a)
    other = alias(b, door)
    (other[::-1] if reversed_view else other).scale(factor)

    def want(x: int) -> int:
        if factor != factor or factor in (float("inf"), float("-inf")) or abs(x) <= 2**53:
            with np.errstate(invalid="ignore", over="ignore"):
                p = np.trunc(np.float64(x) * factor)
            if p != p:
                return 0
            return int(info.max) if p >= float(info.max) else int(info.min) if p <= float(info.min) else int(p)
        return min(max(int(Fraction(x) * Fraction(factor)), int(info.min)), int(info.max))  # int() truncates

    got = [int(v) for v in b.numpy()]
    assert got == [want(int(v)) for v in a], (np.dtype(dtype), factor, door)

@SETTINGS
@given(st.lists(st.integers(1, 6), min_size=1, max_size=3), st.sampled_from(ALIASES), st.sampled_from(ALIASES), st.data())
def test_overlapping_copies_read_the_source_first(dims, ka, kb, data):
    base = bc.Blob.from_numpy((np.arange(int(np.prod(dims)), dtype=np.float32) + 1).reshape(dims))
    a, b = alias(base, ka), alias(base, kb)
    ref = np.asarray(base).copy()
    k1, k2 = data.draw(view_key(dims)), data.draw(view_key(dims))
    src_shape = ref[k1].shape
    # a destination of the source's shape: the same kind of key, trimmed
    k2 = trimmed(k2, src_shape)
    if ref[k2].shape != src_shape:
        return
    op = data.draw(st.sampled_from(["copy_from", "add", "permute_from", "array"]))
    src_arr = ref[k1].copy()
    if op == "copy_from":
        b[k2].copy_from(a[k1])
        ref[k2] = src_arr
    elif op == "array":
        b[k2].copy_from(np.asarray(a)[k1])
        ref[k2] = src_arr
    elif op == "add":
        b[k2].add(a[k1])  # any layout, reversed views included
        ref[k2] = ref[k2] + src_arr
    else:
        axes = list(range(len(dims)))[::-1]
        view = ref[k2]
        if view.shape != np.transpose(src_arr, axes).shape:
            return
        b[k2].permute_from(a[k1], axes)
        ref[k2] = np.transpose(src_arr, axes)
    np.testing.assert_array_equal(np.asarray(base), ref)
    assert a.shares_memory(b) and b.shares_memory(a)


@SETTINGS
@given(st.lists(st.integers(1, 6), min_size=1, max_size=3), st.sampled_from(ALIASES), st.data())
def test_shares_memory_is_exact(dims, kind, data):
    base = bc.Blob.tensor(dims)
    other = alias(base, kind)
    ref = np.asarray(base)
    k1, k2 = data.draw(view_key(dims)), data.draw(view_key(dims))
    want = np.shares_memory(ref[k1], ref[k2])
    v1, v2 = base[k1], other[k2]
    assert v1.shares_memory(v2) == want == v2.shares_memory(v1)
    if want:
        assert v1.may_share_memory(v2)
    assert not v1.shares_memory(bc.Blob.tensor(dims))


@SETTINGS
@given(st.lists(st.integers(1, 5), min_size=1, max_size=4), st.data())
def test_reversed_and_stepped_views_are_numpy_views(dims, data):
    """Views of views with steps of either sign, transposed between: the same elements as
    NumPy's, the same memory (through NumPy, DLPack, the buffer protocol),
    writes landing where NumPy's land, pickles carrying the values."""
    a = (np.arange(int(np.prod(dims)), dtype=np.float64) % 97).reshape(dims).astype(np.float32)
    b = bc.Blob.from_numpy(a.copy())
    mem = np.asarray(b)
    k1 = data.draw(view_key(dims))
    v1, n1 = b[k1], mem[k1]
    # A transpose between the two keys: permuted views of dense and of
    # strided (stepped, reversed) views.
    perm = data.draw(st.permutations(range(n1.ndim)))
    v1, n1 = v1.transpose(*perm), n1.transpose(perm)
    k2 = data.draw(view_key(n1.shape)) if n1.size else tuple(slice(None) for _ in n1.shape)
    v, n = v1[k2], n1[k2]
    np.testing.assert_array_equal(np.asarray(v), n)
    if n.size:
        assert np.shares_memory(np.asarray(v), n)
        assert np.shares_memory(np.from_dlpack(v), n)
        # DLPack's own shape and strides carry the values (either sign of
        # stride); copy=True hands over a copy of them, copy=False shares.
        np.testing.assert_array_equal(np.from_dlpack(v), n)
        c = np.from_dlpack(v, copy=True)
        np.testing.assert_array_equal(c, n)
        assert not np.shares_memory(c, n)
        assert np.shares_memory(np.from_dlpack(v, copy=False), n)
        assert np.shares_memory(np.asarray(memoryview(v)), n)
        m = memoryview(v)  # the buffer's own shape and strides, not only NumPy's reading of them
        assert (m.shape, m.ndim, m.itemsize) == (n.shape, n.ndim, 4)
        assert [s for s, d in zip(m.strides, n.shape) if d > 1] == [s for s, d in zip(n.strides, n.shape) if d > 1]
        m.release()
        # the same strides wherever they matter (axes longer than one)
        assert [s for s, d in zip(np.asarray(v).strides, n.shape) if d > 1] == [s for s, d in zip(n.strides, n.shape) if d > 1]
        assert v.shares_memory(b)
    for proto in (2, 5):
        np.testing.assert_array_equal(np.asarray(pickle.loads(pickle.dumps(v, protocol=proto))), n)
    # A write through the view lands in the parent where NumPy's does.
    ref = mem.copy()
    value = data.draw(st.integers(-50, 50))
    ref[k1].transpose(perm)[k2] = value
    v[...] = value
    np.testing.assert_array_equal(mem, ref)
    # Operations through the view: fill, scale, a copy of its reverse.
    op = data.draw(st.sampled_from(["fill", "scale", "reverse", "sum"]))
    ref = mem.copy()
    rv = ref[k1].transpose(perm)[k2]
    if op == "fill":
        v.fill(3)
        rv[...] = 3
    elif op == "scale":
        v.scale(2)
        rv *= 2
    elif op == "reverse" and n.ndim:
        v.copy_from(v[::-1])  # overlapping: read first, as NumPy
        rv[...] = rv[::-1].copy()
    elif op == "sum":
        assert v.asum() == float(np.abs(rv.astype(np.float64)).sum())
    np.testing.assert_array_equal(mem, ref)


def test_issue_examples():
    b = bc.Blob.from_numpy(np.arange(4, dtype=np.float32).reshape(2, 2))
    bc.from_dlpack(b).permute_from(b, [1, 0])
    assert np.asarray(b).tolist() == [[0, 2], [1, 3]]
    m = bc.Blob.from_numpy(np.arange(12, dtype=np.float32).reshape(3, 4))
    assert m[1].shares_memory(m[:, 0]) and not m[1].shares_memory(m[0])
    for door in ALIASES[1:]:
        assert alias(m, door).shares_memory(m), door
    n = 8 << 20
    v = bc.Blob.from_numpy(np.arange(n + 1, dtype=np.float32))
    ref = np.arange(n + 1, dtype=np.float32)
    ref[1:] = ref[:-1].copy()
    bc.asblob(np.asarray(v))[1:].copy_from(v[:-1])
    assert np.array_equal(np.asarray(v), ref)
    w = np.array([0x3F808001], np.uint32).view(np.float32)
    assert bc.Blob.from_numpy(w).astype(bc.bfloat16).numpy().view(np.uint16)[0] == 0x3F81
    d = np.array([1 + 2**-11 + 2**-40, 2049.0000001])
    assert np.array_equal(bc.Blob.from_numpy(d).astype(bc.float16).numpy().view(np.uint16), d.astype(np.float16).view(np.uint16))
    assert np.asarray(m[range(2)]).tolist() == np.arange(8).reshape(2, 4).tolist()
    assert np.asarray(m[0, (0, 1)]).tolist() == [0, 1]
    with pytest.raises(bc.DTypeError, match="astype"):
        m.copy_from(bc.Blob.tensor([3, 4], dtype=bc.int32))
    with pytest.raises(bc.FormatError):
        bc.Blob._from_state([2**40], "float32", b"")
    M = 2**63 - 1
    for dims in ([0, M, M], [M, M, 0]):
        with pytest.raises(bc.ShapeError):
            bc.Blob.tensor(dims)
    big = bc.Blob.tensor([2_000_000, 0])
    assert next(iter(big)).shape == (0,)
    g = bc.Blob.tensor([2, 3])
    arr = g.get_buffer(0, 6, True)
    arr[:] = 7
    g.release_buffer(arr, True)
    assert np.asarray(g).tolist() == [[7] * 3] * 2


# ------------------------------------------------- the cached b.shape tuple


@SETTINGS
@given(
    st.lists(
        st.tuples(st.sampled_from(["reshape", "reinterpret", "copy_from", "transpose_from", "read"]),
                  st.lists(st.integers(0, 4), min_size=1, max_size=4)),
        min_size=1, max_size=10),
)
def test_shape_follows_every_change(ops):
    """`b.shape` is reused while the core blob's generation holds; every
    change of the shape, through this object, another object for the same
    core blob (`b.diff` twice) or the diff companion, shows at once."""
    b = bc.Blob.tensor((2, 3))
    d1, d2 = b.diff, b.diff
    for op, dims in ops:
        try:
            if op == "reshape":
                b.reshape(dims)
            elif op == "reinterpret":
                b.reinterpret(dims)
            elif op == "copy_from":
                b.copy_from(bc.Blob.from_numpy(np.zeros(dims, np.float32)), reshape=True)
            elif op == "transpose_from":
                src = bc.Blob.from_numpy(np.zeros(dims, np.float32))
                b.reshape(list(reversed(dims)) if len(dims) == 2 else dims)
                b.transpose_from(src, 0, len(dims) - 1)
        except (bc.BlobError, ValueError):
            pass
        want = np.asarray(b).shape
        assert b.shape == want and b.shape == want, (op, dims)
        assert d1.shape == want and d2.shape == want and b.diff.shape == want, (op, dims)
        assert isinstance(b.shape, tuple) and all(type(v) is int for v in b.shape)


@settings(derandomize=True, deadline=None, max_examples=6, suppress_health_check=list(HealthCheck))
@given(
    widths=st.lists(st.integers(1, 40), min_size=2, max_size=4),
    dtype=st.sampled_from([np.uint8, np.float32, np.float64]),
    through_numpy=st.booleans(),
)
def test_streamed_merges_of_short_chunks_equal_numpy(widths, dtype, through_numpy):
    # Above the 32 MiB streaming threshold, merges gather part by part over
    # each task's rows: against np.concatenate, with parts made from NumPy
    # arrays (shared memory) or copied into blobs, and the split back.
    itemsize = np.dtype(dtype).itemsize
    outer = (33 << 20) // (sum(widths) * itemsize)
    arrays = [(np.arange(outer * w) % 251 + k).astype(dtype).reshape(outer, w) for k, w in enumerate(widths)]
    blobs = [bc.Blob.from_numpy(a, copy=False) if through_numpy else bc.Blob.from_numpy(a) for a in arrays]
    whole = bc.merge(blobs, 1)
    want = np.concatenate(arrays, axis=1)
    assert np.array_equal(np.asarray(whole), want)
    for got, a in zip(bc.split(whole, widths, 1), arrays):
        assert np.array_equal(np.asarray(got), a)


@settings(derandomize=True, deadline=None, max_examples=12, suppress_health_check=list(HealthCheck))
@given(
    tier=st.sampled_from([0, 1, 2]),
    extra=st.integers(0, 999),
    value=st.one_of(
        st.sampled_from([0.0, -0.0, 1.0, -1.0, 255.0, float(np.uint32(0x41414141).view(np.float32)), float("inf")]),
        st.floats(-1e6, 1e6),
    ),
    dtype=st.sampled_from(DTYPES),
    door=st.sampled_from(["blob", "numpy", "view"]),
)
def test_fills_equal_numpy_through_every_door(tier, extra, value, dtype, door):
    # Below the parallel threshold, above it, and above the 32 MiB
    # streaming one; values of one repeated byte (zeros, -1 as an integer,
    # 0x41414141 as float32) go through memset, -0.0 and the rest do not.
    # Against the cast oracle (NumPy / ml_dtypes, exact rounding where they
    # round twice), read through NumPy's view of the same memory.
    itemsize = np.dtype(dtype).itemsize
    n = max(1, ([4096, 1 << 20, 32 << 20][tier] + extra) // itemsize)
    want = np.full(n, 7, dtype)
    if np.dtype(dtype).kind in "iu":
        # NumPy's own a.fill: truncates toward zero, refuses what the
        # dtype cannot hold (OverflowError) — blobcore must too, and
        # change nothing (it saturated before).
        probe = np.zeros(1, dtype)
        try:
            probe.fill(value)
        except OverflowError:
            b = bc.Blob.from_numpy(want)
            target = b[1::2] if door == "view" else b
            with pytest.raises(OverflowError):
                target.fill(value)
            assert same_bits(np.asarray(b), want)
            return
        one = probe[0]
    else:
        one = cast_oracle(np.array([value], np.float64), dtype)[0]
    if door == "numpy":
        # A blob over the ndarray's own memory, filled; the ndarray sees it.
        a = want.copy()
        bc.Blob.from_numpy(a, copy=False).fill(value)
        want[:] = one
        assert same_bits(a, want)
        return
    b = bc.Blob.from_numpy(want)
    if door == "view":
        b[1::2].fill(value)
        want[1::2] = one
    else:
        b.fill(value)
        want[:] = one
    assert same_bits(np.asarray(b), want)
    if dtype != ml_dtypes.bfloat16:  # NumPy's DLPack has no bfloat16
        assert same_bits(np.from_dlpack(b), want)


@settings(derandomize=True, deadline=None, max_examples=300, suppress_health_check=list(HealthCheck))
@given(
    dtype=st.sampled_from([np.int64, np.uint64, np.int32, np.uint32, np.int16, np.uint8, np.int8, np.bool_]),
    value=st.one_of(
        st.integers(-(2**64), 2**65),
        st.sampled_from([2**53 + 1, 2**63 - 1, -(2**63), 2**64 - 1, 2**63, -1, 8587004344907571699]),
        st.floats(allow_nan=True, allow_infinity=True),
        # NumPy integer scalars (int -> int casts wrap, as NumPy's do)
        st.integers(-(2**63), 2**64 - 1).map(lambda v: np.int64(v) if v < 2**63 else np.uint64(v)),
    ),
    door=st.sampled_from(["fill", "view", "object", "full", "alias"]),
)
def test_integer_fills_are_numpy_fills_to_the_bit(dtype, value, door):
    # Python ints past 2**53 (int64 / uint64) go in exactly, floats
    # truncate, and what the dtype cannot hold raises NumPy's error and
    # changes nothing: ndarray.fill on the same value is the oracle.
    want = np.arange(6).astype(dtype).reshape(2, 3)
    probe = want.copy()
    try:
        if door == "view":
            probe[:, ::-2].fill(value)
        elif door == "object":
            probe.reshape(6)[4:5].fill(value)  # [2, 3]: six objects of one element
        else:
            probe.fill(value)
        error = None
    except (OverflowError, ValueError) as e:
        error = type(e)
    if door == "full":
        if error:
            with pytest.raises(error):
                bc.Blob.full([2, 3], value, dtype=dtype)
        else:
            assert same_bits(np.asarray(bc.Blob.full([2, 3], value, dtype=dtype)), probe)
        return
    a = want.copy()
    b = bc.Blob.from_numpy(a, copy=False) if door == "alias" else bc.Blob.from_numpy(want)
    act = {
        "fill": lambda: b.fill(value),
        "alias": lambda: b.fill(value),
        "view": lambda: b[:, ::-2].fill(value),
        "object": lambda: b.fill_object(4, value),
    }[door]
    if error:
        with pytest.raises(error):
            act()
        assert same_bits(np.asarray(b), want)
    else:
        act()
        assert same_bits(np.asarray(b), probe)
        if door == "alias":
            assert same_bits(a, probe)


EVERY_DTYPE = DTYPES + [np.int16, np.uint16, np.uint32, np.uint64, np.bool_,
                       ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2, ml_dtypes.float8_e8m0fnu]


class _Sub(np.ndarray):
    pass


@SETTINGS
@given(
    dims=st.lists(st.integers(0, 9), min_size=0, max_size=4),
    big=st.integers(0, 3),
    dtype=st.sampled_from(EVERY_DTYPE),
    layout=st.sampled_from(["c", "fortran", "strided", "reversed", "read-only", "subclass", "metadata", "big-endian", "unaligned", "blob-via-numpy", "blob-via-dlpack"]),
    seed=st.integers(0, 2**32 - 1),
)
def test_from_numpy_copies_hold_numpys_bytes_and_own_their_memory(dims, big, dtype, layout, seed):
    # Blob.from_numpy(a) of arrays on either side of the 16 KiB line (small
    # C-contiguous ones of blobcore's dtypes are read from the array's own
    # fields, the rest through its buffer or NumPy), every dtype, every
    # bit pattern: the bytes, dims and dtype NumPy holds, and memory of
    # its own.
    dims = dims + [1 + big * 700] if big else dims
    size = int(np.prod(dims)) if dims else 1
    raw = np.random.default_rng(seed).integers(0, 256, size * np.dtype(dtype).itemsize, dtype=np.uint8)
    a = raw.view(dtype).reshape(dims)
    if layout == "fortran":
        a = np.asfortranarray(a)
    elif layout == "strided":
        a = np.repeat(a[..., None], 2, axis=-1)[..., 0]
    elif layout == "reversed":
        a = a[::-1] if a.ndim else a
    elif layout == "read-only":
        a.flags.writeable = False
    elif layout == "subclass":
        a = a.view(_Sub)
    elif layout == "metadata":
        a = a.view(np.dtype(dtype, metadata={"k": 1}))
    elif layout == "unaligned":
        buf = np.zeros(a.nbytes + 1, np.uint8)
        a = np.frombuffer(buf.data, dtype=dtype, count=size, offset=1).reshape(dims)
        a[...] = raw.view(dtype).reshape(dims)
    elif layout == "blob-via-numpy":
        # A blob's own memory, reached through NumPy's buffer protocol.
        a = np.asarray(bc.Blob.from_numpy(a))
    elif layout == "blob-via-dlpack":
        # ... and through DLPack (NumPy's has no bfloat16 or float8).
        src = bc.Blob.from_numpy(a)
        a = np.from_dlpack(src) if np.dtype(dtype).kind in "biuf" and np.dtype(dtype).itemsize > 1 or dtype in (np.uint8, np.int8, np.bool_) else np.asarray(src)
    elif layout == "big-endian":
        if np.dtype(dtype).itemsize > 1 and np.dtype(dtype).kind in "iuf":
            with pytest.raises(bc.DTypeError):
                bc.Blob.from_numpy(a.astype(np.dtype(dtype).newbyteorder(">")))
            return
    b = bc.Blob.from_numpy(a)
    assert b.shape == a.shape and b.dtype == np.dtype(dtype)
    got = np.asarray(b)
    want = np.ascontiguousarray(a)
    assert got.tobytes() == want.tobytes()
    assert got.flags.writeable
    kept = want.copy()
    b.fill(1)
    assert a.tobytes() == kept.tobytes(), "writing the blob reached the array"
    if a.flags.writeable and a.size:
        a[...] = np.zeros((), dtype)
        assert np.asarray(b).tobytes() == np.full(dims, 1, dtype).tobytes(), "writing the array reached the blob"


@SETTINGS
@given(
    n=st.one_of(st.integers(1, 1024), st.integers(1024, 12_000)),
    dtype=st.sampled_from(DTYPES),
    row=st.integers(0, 2),
    door=st.sampled_from(["blob", "row", "strided", "reversed-T", "numpy", "dlpack", "pickle", "read-only"]),
    flip=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_copies_equal_numpy_and_own_their_memory(n, dtype, row, door, flip, seed):
    # b.copy() of blobs reached through every door (small ones take the
    # core's one-step copy, larger ones the general path): equal to
    # NumPy's copy to the bit, writable, and sharing nothing with the source.
    a = (np.random.default_rng(seed).standard_normal((3, n)) * 100).astype(dtype)
    base = bc.Blob.from_numpy(a)
    if door == "blob":
        src, want = base, a.copy()
    elif door == "row":
        src, want = base[row], a[row].copy()
    elif door == "strided":
        src, want = base[row, ::2], a[row, ::2].copy()
    elif door == "reversed-T":
        src, want = base[::-1, ::-(row + 1)].T, a[::-1, ::-(row + 1)].T.copy()
    elif door == "numpy":
        src, want = bc.Blob.from_numpy(a, copy=False), a.copy()
    elif door == "dlpack":
        if dtype == ml_dtypes.bfloat16:  # NumPy's DLPack has no bfloat16
            return
        src, want = bc.from_dlpack(a), a.copy()
    elif door == "pickle":
        src, want = pickle.loads(pickle.dumps(base, protocol=5)), a.copy()
    else:
        ro = a.copy()
        ro.flags.writeable = False
        src, want = bc.Blob.from_numpy(ro, copy=False), ro.copy()
    if flip:
        # The same memory, whichever door it came through, as a reversed
        # (and for 2-D, transposed) strided view: the strided copy paths.
        k = -(row + 1)
        src, want = (src[::-1, ::k].T, want[::-1, ::k].T.copy()) if want.ndim == 2 else (src[::k], want[::k].copy())
    c = src.copy()
    got = np.asarray(c)
    assert same_bits(got, want)
    assert got.flags.writeable and got.flags.c_contiguous
    before = np.asarray(src).copy()
    c.fill(1)
    assert same_bits(np.asarray(src), before), "writing the copy reached its source"
    if np.asarray(src).flags.writeable:
        src.fill(2)
        assert same_bits(np.asarray(c), np.full(want.shape, 1, dtype)), "writing the source reached its copy"


@SETTINGS
@given(
    n=st.integers(1, 3),
    c=st.sampled_from([2, 3, 4, 5, 8]),
    h=st.integers(1, 24),
    w=st.integers(1, 40),
    dtype=st.sampled_from([np.float32, np.int32, np.float64, np.uint8]),
    door=st.sampled_from(["copy", "numpy", "dlpack"]),
    seed=st.integers(0, 2**32 - 1),
)
def test_channel_reorders_equal_numpy_through_every_door(n, c, h, w, dtype, door, seed):
    # NCHW <-> NHWC and NCHW <-> nChw8c with few channels (4-byte elements
    # take the register interleaves for C = 2, 3, 4 and 8, the others the
    # element loops), the source reached as a copy, as NumPy's own memory
    # or through DLPack; against NumPy's transpose of the same array.
    a = (np.random.default_rng(seed).standard_normal((n, c, h, w)) * 50).astype(dtype)
    src = {"copy": lambda: bc.Blob.from_numpy(a), "numpy": lambda: bc.Blob.from_numpy(a, copy=False), "dlpack": lambda: bc.from_dlpack(a)}[door]()
    nhwc = bc.Blob.with_desc(bc.TensorDesc(dtype, [n, c, h, w], bc.Layout.NHWC))
    nhwc.reorder_from(src)
    view = np.asarray(nhwc)  # the logical NCHW view of NHWC memory
    assert same_bits(view, a)
    assert same_bits(np.ascontiguousarray(view.transpose(0, 2, 3, 1)), a.transpose(0, 2, 3, 1))
    assert view.transpose(0, 2, 3, 1).flags.c_contiguous  # the memory is NHWC
    b8 = bc.Blob.with_desc(bc.TensorDesc(dtype, [n, c, h, w], bc.BlockingDesc([n, -(-c // 8), h, w, 8], [0, 1, 2, 3, 1])))
    b8.reorder_from(src)
    for layout in (nhwc, b8):
        back = bc.Blob.tensor([n, c, h, w], dtype=dtype)
        back.reorder_from(layout)
        assert same_bits(np.asarray(back), a)


@settings(derandomize=True, deadline=None, max_examples=60, suppress_health_check=list(HealthCheck))
@given(
    n=st.integers(1, 2),
    c=st.integers(17, 80),
    h=st.integers(1, 24),
    w=st.integers(20, 130),
    dtype=st.sampled_from([np.float32, np.int32, np.float64, np.uint8, np.float16]),
    door=st.sampled_from(DOORS_AND_VIEW),
    seed=st.integers(0, 2**32 - 1),
)
def test_many_channel_reorders_equal_numpy_through_every_door(n, c, h, w, dtype, door, seed):
    # NCHW <-> NHWC with 17..80 channels over planes of 20..3120 elements:
    # the transpose tiles of 32 channels, and (planes a page and more
    # apart, longer than one tile) tiles that walk along 32 channel
    # planes before the next 32; the source reached through every door to
    # its memory and as a strided view of a larger array; against NumPy.
    a = (np.random.default_rng(seed).standard_normal((n, c, h + 1, w + 3)) * 50).astype(dtype)
    src, want = through_door(a, (slice(None), slice(None), slice(1, None), slice(2, -1)), door)
    nhwc = bc.Blob.with_desc(bc.TensorDesc(dtype, [n, c, h, w], bc.Layout.NHWC))
    nhwc.reorder_from(src)
    assert same_bits(np.asarray(nhwc), want)
    assert same_bits(np.ascontiguousarray(np.asarray(nhwc).transpose(0, 2, 3, 1)), want.transpose(0, 2, 3, 1))
    back = bc.Blob.tensor([n, c, h, w], dtype=dtype)
    back.reorder_from(nhwc)
    assert same_bits(np.asarray(back), want)


# No shrinking: each example holds about 250 MB, and a failing one is
# reported as it is (its arrays let go before the assert).
@settings(derandomize=True, deadline=None, max_examples=8, phases=[Phase.explicit, Phase.generate],
          suppress_health_check=list(HealthCheck))
@given(
    c=st.sampled_from([16, 24, 40, 56, 64, 96]),
    jitter=st.integers(0, 9),
    dtype=st.sampled_from([np.float32, np.int32]),
    door=st.sampled_from(DOORS_AND_VIEW),
    seed=st.integers(0, 2**32 - 1),
)
def test_streamed_channel_reorders_equal_numpy_through_every_door(c, jitter, dtype, door, seed):
    # NCHW -> NHWC of 32 MiB and more (streamed stores) with channel
    # counts that are multiples of 8: the grouped tiles (eight pixel rows
    # of C floats written line by line from the registers), and for
    # planes a power of two apart (C = 64 of 512 x 256 with no jitter)
    # tiles of 16 channels; the source through every door to its memory
    # and as a strided view of a larger array; against NumPy, both ways.
    # Every 4-byte dtype takes these kernels: random bit patterns (NaNs
    # with payloads among the floats) must arrive bit for bit.
    w = -(-(1 << 23) // (c * 512)) + jitter
    bits = np.random.default_rng(seed).integers(0, 2**32, size=(1, c, 513, w + 3), dtype=np.uint32)
    a = bits.view(dtype)
    src, want = through_door(a, (slice(None), slice(None), slice(1, None), slice(2, -1)), door)
    nhwc = bc.Blob.with_desc(bc.TensorDesc(dtype, [1, c, 512, w], bc.Layout.NHWC))
    nhwc.reorder_from(src)
    from_door = same_bits(np.asarray(nhwc), want)
    dense = bc.Blob.tensor([1, c, 512, w], dtype=dtype)
    dense.copy_from(src)
    nhwc.fill(0)
    nhwc.reorder_from(dense)
    from_dense = same_bits(np.asarray(nhwc), want)
    back = bc.Blob.tensor([1, c, 512, w], dtype=dtype)
    back.reorder_from(nhwc)
    round_trip = same_bits(np.asarray(back), want)
    del bits, a, src, want, nhwc, dense, back
    assert (from_door, from_dense, round_trip) == (True, True, True), f"C = {c}, W = {w}, {dtype.__name__}, {door}"


@settings(derandomize=True, deadline=None, max_examples=50, suppress_health_check=list(HealthCheck))
@given(
    outer=st.integers(1, 2),
    j=st.integers(9, 33),
    mid=st.integers(1, 4),
    row=st.integers(129, 512),
    dtype=st.sampled_from([np.float32, np.int32, np.float64, np.uint16]),
    door=st.sampled_from(DOORS_AND_VIEW),
    seed=st.integers(0, 2**32 - 1),
)
def test_split_row_permutes_equal_numpy_through_every_door(outer, j, mid, row, dtype, door, seed):
    # [outer, j, 3, mid, row] -> [row, outer, mid, 3, j] (the shape of
    # `permute [4, 2, 0, 3, 1]`): whole source rows of 129..512 elements
    # that would make a transpose tile of more than 32 KiB are split into
    # 512-byte pieces walked along the rows; the source reached through
    # every door to its memory and as a strided view of a larger array;
    # `permuted` and `permute_from` against NumPy's transpose.
    shape = (outer, j, 3, mid, row)
    perm = [4, 0, 3, 2, 1]
    big = (np.random.default_rng(seed).standard_normal((outer, j, 3, mid, row + 5)) * 50).astype(dtype)
    src, want = through_door(big, (Ellipsis, slice(2, -3)), door)
    expect = np.ascontiguousarray(want.transpose(perm))
    assert same_bits(np.asarray(src.permuted(perm)), expect)
    out = bc.Blob.tensor([shape[p] for p in perm], dtype=dtype)
    out.permute_from(src, perm)
    assert same_bits(np.asarray(out), expect)


@SETTINGS
@given(
    ak=array_and_key(for_set=True),
    big=st.booleans(),
    value=st.one_of(st.integers(-3, 300), st.floats(-1e3, 1e3, allow_nan=False), st.booleans()),
    scalar_type=st.sampled_from([None, None, np.float64, np.float32, np.float16, np.int64, np.uint8, np.int8, np.bool_, ml_dtypes.bfloat16]),
    door=st.sampled_from(["blob", "numpy", "dlpack", "pickle", "transposed", "read-only"]),
)
# Read-only memory and a value NumPy's writable copy refuses as out of range
# (found with other seeds): the read-only refusal comes first, as in NumPy.
@example(ak=(np.zeros(0, np.uint8), slice(None)), big=False, value=-1, scalar_type=None, door="read-only")
@example(ak=(np.zeros((2, 3), np.int8), (1, 2)), big=False, value=300, scalar_type=None, door="read-only")
def test_scalar_get_and_set_equal_numpy_through_every_door(ak, big, value, scalar_type, door):
    # b[key] and b[key] = a Python number or a NumPy scalar (packed once by
    # NumPy's conversion, then stored in the element or filled into the
    # view; views past 16 KiB are filled without the GIL) against NumPy's
    # a[key] and a[key] = value, the blob reached
    # as a copy, over NumPy's own memory (the write must land there), a
    # DLPack import, a pickle round trip, a transposed view or read-only
    # memory (ReadOnlyError, nothing changes).
    a, key = ak
    if scalar_type is not None:  # a NumPy scalar (NumPy's own wrapping and rounding)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                value = np.array(value).astype(scalar_type)[()]
            except (OverflowError, ValueError):
                return
    if big:  # the same key on a blob past the small-call threshold
        a = np.repeat(a[..., None], 20000 // max(1, a.size) + 1, axis=-1) if a.size else a
        key = key if isinstance(key, tuple) else (key,)
    mem = a.copy()
    if door == "blob":
        b, want = bc.Blob.from_numpy(mem), mem.copy()
    elif door == "numpy":
        b, want = bc.Blob.from_numpy(mem, copy=False), mem
    elif door == "dlpack":
        b, want = bc.from_dlpack(mem), mem
    elif door == "pickle":
        b, want = pickle.loads(pickle.dumps(bc.Blob.from_numpy(mem), protocol=5)), mem.copy()
    elif door == "transposed":
        b, want = bc.Blob.from_numpy(np.ascontiguousarray(mem.T)).T, mem.copy()
    else:
        mem.flags.writeable = False
        b, want = bc.Blob.from_numpy(mem, copy=False), mem
    try:
        ref = want[key]
    except IndexError:
        with pytest.raises(IndexError):
            b[key]
        return
    got = b[key]
    if isinstance(got, bc.Blob):
        assert not np.isscalar(ref) and np.array_equal(np.asarray(got), ref) and np.asarray(got).shape == ref.shape
    else:
        assert type(got) is type(ref) and got == ref
    if door == "read-only":
        # Refused before the value is looked at, as NumPy refuses a
        # read-only destination before an out-of-range Python int.
        with pytest.raises(bc.ReadOnlyError):
            b[key] = value
        assert np.array_equal(np.asarray(b), a)
        return
    expect = want.copy()
    try:
        expect[key] = value
    except (OverflowError, ValueError) as e:
        with pytest.raises(type(e)):
            b[key] = value
        assert np.array_equal(np.asarray(b), want)
        return
    b[key] = value
    assert np.array_equal(np.asarray(b), expect)
    if door in ("numpy", "dlpack"):
        assert np.array_equal(mem, expect), "the write did not reach NumPy's memory"


# ------------------------------------------------ data_at / diff_at by index

@SETTINGS
@given(
    dims=st.lists(st.integers(0, 4), min_size=0, max_size=5),
    index=st.lists(st.integers(0, 4), min_size=0, max_size=6),
    kind=st.sampled_from(["dense", "T", "reversed", "nhwc", "dlpack"]),
    dtype=st.sampled_from([np.float32, np.int32, np.float16, np.uint8]),
    diff=st.booleans(),
)
@example(dims=[3, 0], index=[0], kind="dense", dtype=np.float32, diff=False)
@example(dims=[0], index=[], kind="T", dtype=np.float32, diff=True)
def test_data_at_and_diff_at_by_index_are_numpys_element(dims, index, kind, dtype, diff):
    """``data_at(index)`` / ``diff_at(index)`` read NumPy's
    ``a[index + (0,) * rest]`` on every kind of blob, empty ones included;
    where NumPy has no such element (an index out of range, too many
    indices, an axis of size 0) they raise OutOfRangeError."""
    a = (np.arange(int(np.prod(dims)), dtype=np.float64) % 97).astype(dtype).reshape(dims)
    if kind == "dense":
        b = bc.Blob.from_numpy(a)
    elif kind == "T":
        b = bc.Blob.from_numpy(a.T.copy()).T
    elif kind == "reversed":
        b = bc.Blob.from_numpy(a[::-1].copy())[::-1] if a.ndim else bc.Blob.from_numpy(a)
    elif kind == "nhwc" and a.ndim == 4:
        b = bc.Blob.with_desc(bc.TensorDesc(bc.Blob.from_numpy(a).dtype, list(dims), bc.Layout.NHWC))
        b.copy_from(a)
    else:
        b = bc.from_dlpack(a)
    d = (np.arange(a.size, dtype=np.float64) % 5).astype(dtype).reshape(dims)
    if diff:
        b.diff.copy_from(d)
    key = tuple(index) + (0,) * max(0, a.ndim - len(index))
    try:
        want = a[key] if len(index) <= a.ndim else None
        want_diff = d[key] if diff else 0
    except IndexError:
        want = None
    if want is None:
        with pytest.raises(bc.OutOfRangeError):
            b.data_at(index)
        with pytest.raises(bc.OutOfRangeError):
            b.diff_at(index)
    else:
        assert b.data_at(index) == float(want)
        assert b.diff_at(index) == float(want_diff)


@SETTINGS
@given(
    dims=st.lists(st.integers(1, 6), min_size=1, max_size=4),
    dtype=st.sampled_from(EVERY_DTYPE),
    cut=st.tuples(st.integers(0, 6), st.integers(0, 6)),
    how=st.sampled_from(["asarray", "view-of-view", "read-only", "reshaped", "other-blob"]),
    out=st.sampled_from(["asarray", "numpy", "np.from_dlpack"]),
    back=st.sampled_from(["from_numpy", "from_dlpack"]),
    seed=st.integers(0, 2**32 - 1),
)
def test_a_blobs_memory_coming_back_through_numpy_is_its_storage(dims, dtype, cut, how, out, back, seed):
    # A blob's memory handed to NumPy (`np.asarray`, `x.numpy()`,
    # `np.from_dlpack`), cut by NumPy (leading-axis slices, views of
    # views, reshapes, read-only, another blob's memory) and given back
    # (`from_numpy(copy=False)`, `bc.from_dlpack`): the blob reads NumPy's
    # values to the bit, shares its memory both ways with the blob it
    # came from (and none with another's), and holds NumPy's array only
    # where it cannot be put on the lending blob's storage (a read-only
    # array over writable memory).
    if out == "np.from_dlpack" and np.dtype(dtype).type.__module__ == "ml_dtypes":
        out = "asarray"  # NumPy's DLPack has no ml_dtypes
    raw = np.random.default_rng(seed).integers(0, 256, int(np.prod(dims)) * np.dtype(dtype).itemsize, dtype=np.uint8)
    x = bc.Blob.from_numpy(raw.view(dtype).reshape(dims))
    lo, hi = sorted((min(cut[0], dims[0]), min(cut[1], dims[0])))
    give = {"asarray": np.asarray, "numpy": lambda b: b.numpy(), "np.from_dlpack": np.from_dlpack}[out]
    a = give(x)
    assert same_bits(a, raw.view(dtype).reshape(dims))
    if how == "view-of-view":
        a = a[lo:][: hi - lo]
    elif how == "reshaped":
        a = a.reshape(-1)[lo : hi + 1]
    elif how == "other-blob":
        a = give(bc.Blob.from_numpy(a))  # a copy's memory: not x's
    else:
        a = a[lo:hi]
    if how == "read-only":
        a.flags.writeable = False
    want = a.copy()
    root = a  # the array NumPy made over the blob's memory, under its views
    while isinstance(root.base, np.ndarray):
        root = root.base
    gone = weakref.ref(root)
    try:
        y = bc.Blob.from_numpy(a, copy=False) if back == "from_numpy" else bc.from_dlpack(a)
    except BufferError:
        # A read-only array goes through NumPy's own DLPack export, which
        # has no ml_dtypes in some NumPy versions.
        assert back == "from_dlpack" and how == "read-only" and np.dtype(dtype).type.__module__ == "ml_dtypes"
        return
    assert same_bits(np.asarray(y), want) and y.shape == want.shape
    del a, root
    gc.collect()
    # Only a read-only array is wrapped and held (DLPack's import copies an empty one).
    wrapped = how == "read-only" and (back == "from_numpy" or want.size > 0)
    assert (gone() is not None) == wrapped
    assert y.writeable == (not wrapped)
    assert x.may_share_memory(y) == (how != "other-blob" and want.size > 0)
    if how not in ("read-only", "other-blob") and want.size:
        y.fill(1)
        ones = np.ones_like(want)
        assert same_bits(np.asarray(y), ones)
        back = np.asarray(x)
        got = back[lo:hi] if how in ("asarray", "view-of-view") else back.reshape(-1)[lo : hi + 1]
        assert same_bits(got, ones)
