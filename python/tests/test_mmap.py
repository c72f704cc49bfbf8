"""Memory-mapped .npy files against numpy.load(mmap_mode=...): the three
modes (read-only, shared, copy-on-write) behave as NumPy's, the map
outlives the blob while views and exports use it, growing a mapped blob
is refused, and files NumPy maps can be read while it maps them."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import blobcore as bc


@pytest.fixture
def npy(tmp_path, rng):
    a = rng.standard_normal((64, 33)).astype(np.float32)
    p = tmp_path / "a.npy"
    np.save(p, a)
    return p, a


def test_read_only_map(npy):
    p, a = npy
    b = bc.load_npy(p, mmap_mode="r")
    ref = np.load(p, mmap_mode="r")
    assert not b.writeable and not ref.flags.writeable
    np.testing.assert_array_equal(np.asarray(b), ref)
    with pytest.raises(bc.ReadOnlyError):
        b.fill(0)
    c = b.copy()
    c.fill(0)  # a copy is writable
    np.testing.assert_array_equal(np.asarray(b), a)


def test_shared_map_writes_the_file(npy):
    p, a = npy
    b = bc.load_npy(p, mmap_mode="r+")
    b.fill(3.0)
    view = b.window(2)
    arr = np.asarray(b)
    del b
    assert view.shape == (2, 33) and float(arr[5, 5]) == 3.0  # the map outlives the blob
    del view, arr
    np.testing.assert_array_equal(np.load(p), np.full(a.shape, 3.0, np.float32))


def test_copy_on_write_stays_private(npy):
    p, a = npy
    b = bc.load_npy(p, mmap_mode="c")
    ref = np.load(p, mmap_mode="c")
    assert b.writeable and ref.flags.writeable
    b.fill(-1.0)
    ref[...] = -1.0
    np.testing.assert_array_equal(np.load(p), a)  # neither wrote the file
    with pytest.raises(bc.BusyError, match="memory-mapped"):
        b.reshape([1000, 1000])


def test_fortran_and_big_endian_files_are_converted(tmp_path):
    f = np.asfortranarray(np.arange(12, dtype=np.int32).reshape(3, 4))
    np.save(tmp_path / "f.npy", f)
    b = bc.load_npy(tmp_path / "f.npy", mmap_mode="r")
    np.testing.assert_array_equal(np.asarray(b), f)
    be = np.arange(5, dtype=">f8")
    np.save(tmp_path / "be.npy", be)
    np.testing.assert_array_equal(np.asarray(bc.load_npy(tmp_path / "be.npy", mmap_mode="r")), be)


def test_bad_maps(tmp_path):
    with pytest.raises(bc.InvalidArgumentError, match="mmap_mode"):
        bc.load_npy(tmp_path / "x.npy", mmap_mode="w")
    with pytest.raises(bc.IoError):
        bc.load_npy(tmp_path / "missing.npy", mmap_mode="r")
    p = tmp_path / "short.npy"
    np.save(p, np.zeros(10, np.float32))
    p.write_bytes(p.read_bytes()[:-3])
    with pytest.raises(bc.FormatError):
        bc.load_npy(p, mmap_mode="r")


@settings(max_examples=150, deadline=None, database=None, derandomize=True)
@given(
    n=st.integers(1, 300),
    mode=st.sampled_from(["r+", "r", "c"]),
    keys=st.tuples(*[st.tuples(st.integers(-310, 310), st.integers(-310, 310), st.sampled_from([1, 2, 3, -1, -2]))] * 2),
)
def test_two_maps_of_one_file_are_one_memory(tmp_path_factory, n, mode, keys):
    # A file mapped twice (r+ and r+, r or c) is one memory: shares_memory
    # answers as NumPy's for two slices of one array, and x[s1] = y[s2]
    # through the two maps writes what a[s1] = a[s2] writes in NumPy (the
    # source as it was), also where the slices overlap.
    p = tmp_path_factory.mktemp("twice") / "a.npy"
    a = np.arange(n, dtype=np.float32)
    np.save(p, a)
    x = bc.load_npy(p, mmap_mode="r+")
    y = bc.load_npy(p, mmap_mode=mode)
    s1, s2 = (slice(*k) for k in keys)
    assert x[s1].shares_memory(y[s2]) == np.shares_memory(a[s1], a[s2])
    assert y[s2].shares_memory(x[s1]) == np.shares_memory(a[s1], a[s2])
    if len(a[s1]) == len(a[s2]):
        x[s1] = y[s2]
        a[s1] = a[s2]
        np.testing.assert_array_equal(np.asarray(x), a)
        if mode != "c":
            np.testing.assert_array_equal(np.asarray(y), a)
    del x, y
    np.testing.assert_array_equal(np.load(p), a)
