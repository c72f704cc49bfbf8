"""Pickle protocol 5 (out-of-band, zero-copy) and blobs travelling to other
processes: multiprocessing (spawn), ProcessPoolExecutor and a Dask
LocalCluster. Loopback only, bounded in time."""

import concurrent.futures
import copy
import multiprocessing
import pickle

import numpy as np
import pytest

import blobcore as bc


def blob_sum(b):
    """Runs in a worker process: the blob arrives by pickle."""
    return float(np.asarray(b, dtype=np.float64).sum()), b.shape, str(b.dtype)


def make(n=1 << 16, dtype=np.float32):
    return bc.Blob.from_numpy(np.arange(n, dtype=dtype) % 97)


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.uint8, np.float16, np.float64])
def test_pickle5_is_out_of_band_and_zero_copy(dtype):
    b = make(4096, dtype)
    bufs = []
    data = pickle.dumps(b, protocol=5, buffer_callback=bufs.append)
    assert len(bufs) == 1 and len(data) < 300  # the payload went out of band
    assert bufs[0].raw().nbytes == b.nbytes
    back = pickle.loads(data, buffers=bufs)
    np.testing.assert_array_equal(np.asarray(back), np.asarray(b))
    assert back.dtype == b.dtype and back.shape == b.shape
    assert np.shares_memory(np.asarray(back), np.asarray(b))  # in-process: the same memory


@pytest.mark.parametrize("protocol", [2, 3, 4, 5])
def test_pickle_in_band_copies(protocol):
    b = make(1000)
    back = pickle.loads(pickle.dumps(b, protocol=protocol))
    np.testing.assert_array_equal(np.asarray(back), np.asarray(b))
    assert not np.shares_memory(np.asarray(back), np.asarray(b))
    back.fill(1)  # writable
    assert b.asum() != back.asum()


def test_pickle_read_only_buffer_gives_read_only_blob():
    b = make(64)
    bufs = []
    data = pickle.dumps(b, protocol=5, buffer_callback=bufs.append)
    ro = [memoryview(bytes(bufs[0].raw()))]  # what a receiver of bytes holds
    back = pickle.loads(data, buffers=ro)
    assert not back.writeable
    np.testing.assert_array_equal(np.asarray(back), np.asarray(b))


def test_any_layout_pickles_as_dense_logical_data():
    a = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
    b = bc.Blob.from_numpy(a)
    views = {
        "region": (b.region([0, 1, 1, 0], [2, 3, 3, 5]), a[:, 1:3, 1:3, :]),
        "strided": (b[:, ::2, 1], a[:, ::2, 1]),
        "transposed": (b.T, a.T),
    }
    nhwc = bc.Blob.with_desc(bc.TensorDesc(bc.float32, [2, 3, 4, 5], bc.Layout.NHWC))
    nhwc.reorder_from(b)
    views["nhwc"] = (nhwc, a)
    blk = bc.Blob.with_desc(bc.TensorDesc(bc.float32, [2, 3, 4, 5], bc.BlockingDesc([2, 1, 4, 5, 8], [0, 1, 2, 3, 1])))
    blk.reorder_from(b)
    views["blocked"] = (blk, a)
    for name, (v, want) in views.items():
        for protocol in (4, 5):
            back = pickle.loads(pickle.dumps(v, protocol=protocol))
            assert back.is_dense, name
            np.testing.assert_array_equal(np.asarray(back), want, err_msg=name)


def test_copy_and_deepcopy_are_independent():
    b = make(10)
    for c in (copy.copy(b), copy.deepcopy(b)):
        c.fill(0)
        assert b.asum() > 0


def test_multiprocessing_spawn_round_trip():
    ctx = multiprocessing.get_context("spawn")
    b = make()
    with ctx.Pool(2) as pool:
        results = pool.map(blob_sum, [b, b[::2], b.astype(np.int32)], chunksize=1)
    want = float(np.asarray(b, dtype=np.float64).sum())
    assert results[0] == (want, b.shape, "float32")
    assert results[1][0] == float(np.asarray(b)[::2].astype(np.float64).sum())
    assert results[2][2] == "int32"


def test_process_pool_executor_round_trip():
    b = make()
    with concurrent.futures.ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as ex:
        got = list(ex.map(blob_sum, [b, b.T]))
    assert got[0][0] == float(np.asarray(b, dtype=np.float64).sum())


def test_dask_array_from_blob():
    da = pytest.importorskip("dask.array")
    a = np.arange(60, dtype=np.float32).reshape(6, 10)
    b = bc.Blob.from_numpy(a)
    x = da.from_array(b, chunks=(2, 5))
    assert float(x.sum().compute()) == float(a.sum())
    np.testing.assert_array_equal(x[1:5, ::3].compute(), a[1:5, ::3])
    assert float(da.asarray(b).mean().compute()) == float(a.mean())


def test_dask_distributed_scatter_and_sum():
    distributed = pytest.importorskip("distributed")
    from distributed.protocol import serialize

    b = make(1 << 18)
    header, frames = serialize(b)
    # pickle 5 out of band: the data is its own frame, not inside the pickle
    assert any(memoryview(f).nbytes == b.nbytes for f in frames)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  host="127.0.0.1") as cluster, distributed.Client(cluster) as client:
        futures = client.scatter([b, b[1::3]])
        sums = client.gather(client.map(blob_sum, futures))
    assert sums[0][0] == float(np.asarray(b, dtype=np.float64).sum())
    assert sums[1][0] == float(np.asarray(b)[1::3].astype(np.float64).sum())


def test_ray_put_get_when_installed():
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=1, include_dashboard=False, ignore_reinit_error=True)
    try:
        b = make()
        ref = ray.put(b)
        back = ray.get(ref)
        np.testing.assert_array_equal(np.asarray(back), np.asarray(b))
        # Zero-copy: the blob wraps the object store's read-only buffer.
        assert not back.writeable
        again = ray.get(ref)
        assert np.shares_memory(np.asarray(again), np.asarray(back))
    finally:
        ray.shutdown()
