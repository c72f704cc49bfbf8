"""Eight Python threads at once (large operations release the GIL):
creating, viewing, merging, filling, holding buffers and dropping the same
and different blobs. Bounded in iterations and by join timeouts; the shared
blob ends exactly as a serial run leaves it."""

import threading
import time

import numpy as np

import blobcore as bc

THREADS = 8
ITERS = 40
ROW = 4096  # large enough that fills and merges run without the GIL


def retry(f):
    """Another thread's whole-blob read may hold the memory: Busy is an
    answer, not a failure."""
    for _ in range(100_000):
        try:
            return f()
        except bc.BusyError:
            time.sleep(0)
    raise AssertionError("still busy")


def work(shared, t, errors):
    try:
        row = shared.window(1)
        row.set_parent_pos(t)
        for i in range(ITERS):
            a = bc.Blob.tensor([2, ROW // 2])
            b = bc.Blob.tensor([2, ROW // 2])
            a.fill(t * 1000 + i)
            b.fill(1.0)
            m = bc.merge([a, b], 1)
            _, q = bc.split(m, [ROW // 2, ROW // 2], 1)
            assert q.asum() == ROW
            del a, b, m, q
            retry(lambda: row.fill(i))
            retry(lambda: row.scale(2.0))
            retry(lambda: row.fill_object(0, t))  # a [1, ROW] row: object 0 is element 0
            # Buffers are plain memory shared with NumPy: read, never
            # written here while other threads read the blob.
            with retry(lambda: row.buffer(4, 2, "r")) as buf:
                assert buf[0] == 2 * i
            try:
                shared.asum()
            except bc.BusyError:
                pass
    except Exception as e:  # reported by the main thread
        errors.append(e)


def test_eight_threads_end_as_a_serial_run():
    shared = bc.Blob.tensor([THREADS, ROW])
    errors = []
    threads = [threading.Thread(target=work, args=(shared, t, errors)) for t in range(THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=120)
        assert not th.is_alive(), "deadlock: a thread did not finish"
    assert errors == []
    serial = bc.Blob.tensor([THREADS, ROW])
    for t in range(THREADS):
        work(serial, t, errors)
    assert errors == []
    np.testing.assert_array_equal(np.asarray(shared), np.asarray(serial))


def test_threads_dropping_views_of_one_blob():
    root = bc.Blob.tensor([64, 1024], dtype=bc.int32)
    root.fill(3)
    views = []
    for i in range(64):
        w = root.window(1)
        w.set_parent_pos(i)
        views.append(w)
    del root
    lock = threading.Lock()
    sums = []

    def drain():
        total = 0.0
        while True:
            with lock:
                if not views:
                    break
                v = views.pop()
            total += v.asum()
            v.scale(2)
            del v
        sums.append(total)

    threads = [threading.Thread(target=drain) for _ in range(THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=60)
        assert not th.is_alive()
    assert sum(sums) == 64 * 1024 * 3
