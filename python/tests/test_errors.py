"""Bad input raises the documented exception class with the core's
message and leaves the blobs unchanged; nothing crashes the interpreter."""

import numpy as np
import pytest

import blobcore as bc


def test_exception_hierarchy():
    assert issubclass(bc.ShapeError, (bc.BlobError, ValueError))
    assert issubclass(bc.DTypeError, TypeError)
    assert issubclass(bc.OutOfRangeError, IndexError)
    assert issubclass(bc.BusyError, BufferError)
    assert issubclass(bc.FormatError, ValueError)
    for cls in [bc.LifoError, bc.DeviceError, bc.FormatError, bc.BusyError]:
        assert issubclass(cls, bc.BlobError)


# The table of bad calls is python/tests/test_bad_input.py.


def test_failed_operations_leave_data_unchanged():
    b = bc.Blob.from_numpy(np.arange(6, dtype=np.float32).reshape(2, 3))
    snapshot = np.asarray(b).copy()
    w = b.window(1)
    for bad in [
        lambda: w.set_parent_pos(2),
        lambda: w.shift_parent_pos(-1),
        lambda: b.reinterpret([4]),
        lambda: b.add(bc.Blob.tensor([3, 2])),
        lambda: bc.merge_into([b, b], bc.Blob.tensor([4, 4]), 0),
        lambda: bc.split_into(b, [bc.Blob.tensor([1, 3])], 0),
    ]:
        with pytest.raises(bc.BlobError):
            bad()
    assert w.parent_pos == 0 and b.shape == (2, 3)
    np.testing.assert_array_equal(np.asarray(b), snapshot)


def test_busy_reallocation_while_viewed():
    b = bc.Blob.vector(4)
    w = b.window(2)
    with pytest.raises(bc.BusyError):
        b.reshape([100])
    del w
    b.reshape([100])


def test_overlapping_merge_reads_its_parts_first_and_overlapping_split_targets_are_refused():
    b = bc.Blob.from_numpy(np.arange(8, dtype=np.float32).reshape(4, 2))
    w = b.window(2)
    want = np.concatenate([np.asarray(w), np.asarray(w)])
    bc.merge_into([w, w], b, 0)  # NumPy's rule: as if the parts were copied first
    assert np.array_equal(np.asarray(b), want)
    with pytest.raises(bc.InvalidArgumentError, match="destinations 0 and 1 share memory"):
        bc.split_into(b, [w, w], 0)


def test_len_of_scalar_and_wrong_argument_types():
    with pytest.raises(TypeError):
        len(bc.Blob.tensor([]))
    with pytest.raises(TypeError):
        bc.Blob.tensor("abc")
    with pytest.raises(TypeError):
        bc.Blob.tensor([2]).add(np.zeros(2))
