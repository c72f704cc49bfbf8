"""Buffers: context managers per mode, LIFO nesting, the explicit pair."""

import numpy as np
import pytest

import blobcore as bc


def test_modes_give_read_only_or_writable_views():
    b = bc.Blob.from_numpy(np.arange(6, dtype=np.float32))
    with b.buffer(1, 3, "r") as r:
        assert not r.flags.writeable
        np.testing.assert_array_equal(r, [1, 2, 3])
        with pytest.raises(ValueError):
            r[0] = 9
    with b.buffer(0, 2, "w") as w:
        w[:] = [10, 11]
    with b.buffer(mode="rw") as whole:
        assert whole.shape == (6,)
        whole[-1] = 50
    np.testing.assert_array_equal(np.asarray(b), [10, 11, 2, 3, 4, 50])
    assert b.held_buffers == 0


def test_whole_blob_buffer_is_shaped_like_the_blob():
    b = bc.Blob.tensor([2, 3, 4])
    with b.buffer() as arr:
        assert arr.shape == (2, 3, 4)
    with b.buffer(4, 8) as arr:
        assert arr.shape == (8,)


def test_nested_contexts_release_in_lifo_order():
    b = bc.Blob.vector(10)
    with b.buffer(0, 5) as a:
        with b.buffer(5, 5) as c:
            assert b.held_buffers == 2
            a[:] = 1
            c[:] = 2
        assert b.held_buffers == 1
    assert b.held_buffers == 0 and b.asum() == 15


def test_out_of_order_release_raises_lifo_and_changes_nothing():
    b = bc.Blob.vector(10)
    x = b.get_buffer(0, 4, True)
    y = b.get_buffer(4, 4, True)
    with pytest.raises(bc.LifoError, match="most recent"):
        b.release_buffer(x, True)
    assert b.held_buffers == 2
    with pytest.raises(bc.BusyError):
        b.reshape([100])  # held buffers pin the memory
    b.release_buffer(y, True)
    b.release_buffer(x, True)
    assert b.held_buffers == 0
    with pytest.raises(bc.LifoError):
        b.release_buffer(x, True)
    with pytest.raises(bc.BusyError):
        b.reshape([100])  # the arrays themselves are exports
    del x, y
    b.reshape([100])


def test_context_exit_out_of_order_reports_lifo():
    b = bc.Blob.vector(4)
    ctx = b.buffer(0, 2)
    ctx.__enter__()
    inner = b.get_buffer(2, 2, True)
    with pytest.raises(bc.LifoError):
        ctx.__exit__(None, None, None)
    b.release_buffer(inner, True)
    ctx.__exit__(None, None, None)
    assert b.held_buffers == 0


def test_buffer_out_of_range_and_bad_mode():
    b = bc.Blob.vector(4)
    with pytest.raises(bc.OutOfRangeError):
        b.get_buffer(3, 2, True)
    with pytest.raises(bc.OutOfRangeError):
        with b.buffer(-1, 2):
            pass
    with pytest.raises(bc.InvalidArgumentError):
        b.buffer(0, 1, "x")
    assert b.held_buffers == 0


def test_buffer_array_stays_valid_after_release_and_blob_death():
    b = bc.Blob.vector(4)
    b.fill(3.0)
    with b.buffer() as arr:
        pass
    del b
    assert arr.sum() == 12.0
