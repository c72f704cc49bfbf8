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


BAD_CALLS = [
    (lambda: bc.Blob.tensor([-1, 2]), bc.ShapeError, "negative"),
    (lambda: bc.Blob.tensor([1] * 33), bc.ShapeError, "rank 33"),
    (lambda: bc.Blob.tensor([2**40, 2**40]), bc.ShapeError, "overflow"),
    (lambda: bc.Blob.vector(-3), bc.ShapeError, "negative"),
    (lambda: bc.Blob.data(1, -2, 3), bc.ShapeError, "negative"),
    (lambda: bc.Blob.tensor([2], dtype="complex64"), bc.DTypeError, "complex64"),
    (lambda: bc.Blob.tensor([2], dtype=object()), bc.DTypeError, "dtype"),
    (lambda: bc.Blob.tensor([2, 3]).dim(2), bc.OutOfRangeError, "axis"),
    (lambda: bc.Blob.tensor([2, 3]).dim(-3), bc.OutOfRangeError, "axis"),
    (lambda: bc.Blob.tensor([1] * 8).object_count, bc.ShapeError, "rank"),
    (lambda: bc.Blob.tensor([2, 3]).count(3), bc.OutOfRangeError, ""),
    (lambda: bc.Blob.tensor([2, 3]).offset([2]), bc.OutOfRangeError, ""),
    (lambda: bc.Blob.tensor([2, 3]).offset([-1]), bc.OutOfRangeError, "negative"),
    (lambda: bc.Blob.tensor([2, 3]).window(3), bc.OutOfRangeError, ""),
    (lambda: bc.Blob.tensor([2, 3]).slice([2]), bc.OutOfRangeError, ""),
    (lambda: bc.Blob.tensor([2, 3]).slice([0, 0, 0]), bc.OutOfRangeError, ""),
    (lambda: bc.Blob.tensor([2, 3]).reinterpret([5]), bc.ShapeError, "count"),
    (lambda: bc.Blob.tensor([2, 3]).fill_object(6, 1.0), bc.OutOfRangeError, "object"),
    (lambda: bc.Blob.tensor([2, 3]).transposed(0, 2), bc.OutOfRangeError, ""),
    (lambda: bc.merge([bc.Blob.tensor([2, 3]), bc.Blob.tensor([2, 4])], 0), bc.ShapeError, ""),
    (lambda: bc.merge([bc.Blob.tensor([2]), bc.Blob.tensor([2], dtype=bc.int32)], 0), bc.DTypeError, ""),
    (lambda: bc.merge([], 0), bc.InvalidArgumentError, "no blobs"),
    (lambda: bc.split(bc.Blob.tensor([5]), 2, 0), bc.ShapeError, ""),
    (lambda: bc.split(bc.Blob.tensor([5]), [2, 2], 0), bc.ShapeError, ""),
    (lambda: bc.Blob.tensor([2]).add(bc.Blob.tensor([3])), bc.ShapeError, "dims"),
    (lambda: bc.Blob.tensor([2]).add(bc.Blob.tensor([2], dtype=bc.int8)), bc.DTypeError, "dtypes"),
    (lambda: bc.Blob.tensor([2]).copy_from(bc.Blob.tensor([3])), bc.ShapeError, ""),
    (lambda: bc.Blob.tensor([2]).copy_from(np.zeros(3)), bc.ShapeError, "3 elements"),
    (lambda: bc.Engine.gpu("no adapter is called this"), bc.DeviceError, "no adapter is called this"),
    (lambda: bc.load_caffe("x.binaryproto"), bc.IoError, "cannot read x.binaryproto"),
]


@pytest.mark.parametrize("call,cls,words", BAD_CALLS, ids=[str(i) for i in range(len(BAD_CALLS))])
def test_bad_input_raises_the_documented_class(call, cls, words):
    with pytest.raises(cls) as e:
        call()
    assert str(e.value)
    assert words.lower() in str(e.value).lower()


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


def test_overlapping_merge_is_refused():
    b = bc.Blob.tensor([4, 2])
    w = b.window(2)
    with pytest.raises(bc.InvalidArgumentError, match="shares memory"):
        bc.merge_into([w, w], b, 0)


def test_len_of_scalar_and_wrong_argument_types():
    with pytest.raises(TypeError):
        len(bc.Blob.tensor([]))
    with pytest.raises(TypeError):
        bc.Blob.tensor("abc")
    with pytest.raises(TypeError):
        bc.Blob.tensor([2]).add(np.zeros(2))
