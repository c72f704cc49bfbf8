"""No leak over 100k create/free cycles of every constructor and view."""

import gc
import tracemalloc

import numpy as np

import blobcore as bc


def rss_kib() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def cycle(i: int) -> None:
    b = bc.Blob.tensor([4, 8])
    b.fill(i)
    w = b.window(2)
    s = b.slice([1])
    a = np.asarray(w)
    d = bc.Blob.image2d(1, 2, 2, 2, 3)
    f = bc.Blob.from_numpy(a, copy=False)
    g = bc.from_dlpack(s)
    with b.buffer(0, 4) as arr:
        arr[0] = 1
    del b, w, s, a, d, f, g


def test_no_leak_over_100k_cycles():
    for i in range(2000):  # warm up allocator and caches
        cycle(i)
    gc.collect()
    tracemalloc.start()
    base_rss = rss_kib()
    snap0 = tracemalloc.take_snapshot()
    for i in range(100_000):
        cycle(i)
    gc.collect()
    snap1 = tracemalloc.take_snapshot()
    tracemalloc.stop()
    grown_py = sum(s.size_diff for s in snap1.compare_to(snap0, "filename"))
    grown_rss = rss_kib() - base_rss
    assert grown_py < 256 * 1024, f"Python heap grew by {grown_py} bytes"
    assert grown_rss < 16 * 1024, f"RSS grew by {grown_rss} KiB over 100k cycles"
