"""`b[i, j]`, `b[i, j] = v` and `b[small view] = v` take the element path
(`Blob.get_element` / `set_element` / `fill_element` in the core, NumPy's
own PyArray_Scalar / PyArray_Pack for the conversion). Proved against
NumPy and ml_dtypes over generated inputs: every dtype, random shapes and
indices (negative ones, out of range), values (NaN, infinities, huge and
negative ints, bools), and blobs that reach an ndarray's memory, strided
and reversed views, blocked layouts and DLPack imports."""

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import blobcore as bc

SETTINGS = settings(derandomize=True, deadline=None, max_examples=150, suppress_health_check=list(HealthCheck))
DTYPES = [np.dtype(d) for d in (np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64,
                                np.float16, np.float32, np.float64, ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn,
                                ml_dtypes.float8_e5m2, ml_dtypes.float8_e8m0fnu)]
VALUES = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-(2**70), 2**70),
    st.integers(-300, 300),
    st.booleans(),
    st.sampled_from([0.5, -0.0, 1e-40, 65504.0, 65520.0, 448.0, 464.0, 2.0**-127, 3.0e38]),
)


def outcome(fn):
    """The value (as bits, with its type) or the exception type."""
    try:
        r = fn()
    except Exception as e:  # noqa: BLE001 - the oracle's exception type is the expectation
        return ("raises", type(e))
    return ("ok", r)


def scalar_bits(s):
    return (type(s), np.asarray(s).tobytes())


def array_for(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    raw = rng.integers(0, 256, size=int(np.prod(shape)) * dtype.itemsize, dtype=np.uint8)
    if dtype == np.bool_:
        raw = raw % 2  # NumPy's bools are 0/1 bytes
    return raw.view(dtype).reshape(shape).copy()


@st.composite
def cases(draw):
    dtype = draw(st.sampled_from(DTYPES))
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=4)))
    index = tuple(draw(st.integers(-n - 1, n)) for n in shape)
    return dtype, shape, index, draw(st.integers(0, 2**32))


@SETTINGS
@given(cases())
def test_get_element_matches_numpy(case):
    dtype, shape, index, seed = case
    a = array_for(dtype, shape, seed)
    b = bc.Blob.from_numpy(a)
    want = outcome(lambda: scalar_bits(a[index]))
    got = outcome(lambda: scalar_bits(b[index]))
    if want[0] == "raises":
        assert got[0] == "raises" and issubclass(got[1], IndexError), (index, got)
    else:
        assert got == want, (dtype, index)


@SETTINGS
@given(cases(), VALUES)
def test_set_element_matches_numpy(case, value):
    dtype, shape, index, seed = case
    a = array_for(dtype, shape, seed)
    b = bc.Blob.from_numpy(a.copy())
    with np.errstate(all="ignore"):
        want = outcome(lambda: a.__setitem__(index, value))
        got = outcome(lambda: b.__setitem__(index, value))
    assert got[0] == want[0], (dtype, index, value, got, want)
    if want[0] == "raises" and not issubclass(want[1], IndexError):
        assert got[1] is want[1], (dtype, index, value)
    # Nothing changes on error; the same bits otherwise.
    assert np.asarray(b).tobytes() == a.tobytes(), (dtype, index, value)


@SETTINGS
@given(st.sampled_from(DTYPES), st.integers(1, 5), st.integers(1, 6), st.integers(-7, 7), st.integers(1, 3), VALUES, st.integers(0, 2**32))
def test_small_view_fill_matches_numpy(dtype, rows, cols, start, step, value, seed):
    a = array_for(dtype, (rows, cols), seed)
    b = bc.Blob.from_numpy(a.copy())
    key = (slice(None, None, -1), slice(start, None, step))
    with np.errstate(all="ignore"):
        want = outcome(lambda: a.__setitem__(key, value))
        got = outcome(lambda: b.__setitem__(key, value))
    assert got[0] == want[0] and (got[0] == "ok" or got[1] is want[1]), (dtype, key, value, got, want)
    assert np.asarray(b).tobytes() == a.tobytes()


def test_same_memory_through_other_doors():
    # An ndarray lent to a blob: writes through either side show in the other.
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    b = bc.asblob(a)
    b[1, 2, 3] = -1.5
    assert a[1, 2, 3] == -1.5
    a[0, 1, 2] = 9.0
    assert b[0, 1, 2] == np.float32(9.0) and type(b[0, 1, 2]) is np.float32
    # A reversed, strided view of the blob.
    v = b[::-1, ::2, 1::2]
    assert v[0, 1, 1] == a[::-1, ::2, 1::2][0, 1, 1]
    v[1, 0, 0] = 100.0
    assert a[0, 0, 1] == 100.0
    # A DLPack import of NumPy's memory.
    c = bc.from_dlpack(a)
    c[0, 0, 0] = 7
    assert a[0, 0, 0] == 7.0
    # A blocked layout reads and writes the logical element.
    desc = bc.TensorDesc(bc.float32, [1, 16, 2, 2], bc.BlockingDesc([1, 2, 2, 2, 8], [0, 1, 2, 3, 1]))
    blocked = bc.Blob.with_desc(desc)
    ramp = np.arange(64, dtype=np.float32).reshape(1, 16, 2, 2)
    blocked.reorder_from(bc.Blob.from_numpy(ramp))
    for i in [(0, 9, 1, 0), (0, 15, 1, 1), (0, -1, 0, -1)]:
        assert blocked[i] == ramp[i]
    blocked[0, 9, 1, 0] = -3.0
    blocked[0, :, 1] = 8.0
    ramp[0, 9, 1, 0] = -3.0
    ramp[0, :, 1] = 8.0
    np.testing.assert_array_equal(np.asarray(blocked.copy()), ramp)


def test_read_only_and_bad_keys_change_nothing():
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    a.flags.writeable = False
    b = bc.asblob(a)
    with pytest.raises(bc.ReadOnlyError):
        b[0, 0] = 5
    with pytest.raises(bc.ReadOnlyError):
        b[0, :2] = 5
    w = bc.Blob.from_numpy(np.arange(6, dtype=np.int32).reshape(2, 3))
    for key in [(2, 0), (0, -4), (0, 0, 0)]:
        with pytest.raises(IndexError):
            w[key] = 1
        with pytest.raises(IndexError):
            w[key]
    with pytest.raises(OverflowError):
        w[0, 0] = 2**40
    with pytest.raises(ValueError):
        w[0, 1] = float("nan")
    assert np.asarray(w).tolist() == [[0, 1, 2], [3, 4, 5]]


@pytest.mark.parametrize("dtype", [d for d in DTYPES if d.itemsize <= 2], ids=str)
def test_every_8_and_16_bit_pattern_reads_and_writes_back(dtype):
    # The whole domain: every bit pattern of each 1- and 2-byte dtype read
    # as NumPy's scalar (type and bits), and that scalar's value written
    # back through `b[i] = float(...)` / `int(...)` lands on the same bits
    # NumPy's own `a[i] = v` gives.
    n = 1 << (8 * dtype.itemsize)
    raw = np.arange(n, dtype=np.uint8 if dtype.itemsize == 1 else np.uint16)
    if dtype == np.bool_:
        raw = raw[:2]
    a = raw.view(dtype)
    b = bc.Blob.from_numpy(a)
    for i in range(len(a)):
        assert scalar_bits(b[i]) == scalar_bits(a[i]), (dtype, i)
    values = [bool(v) if dtype == np.bool_ else int(v) if dtype.kind in "iu" else float(v) for v in a]
    want, got = np.zeros_like(a), bc.Blob.from_numpy(np.zeros_like(a))
    for i, v in enumerate(values):
        want[i] = v
        got[i] = v
    assert np.asarray(got).tobytes() == want.tobytes(), dtype
