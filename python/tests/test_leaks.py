"""No leak over 100k create/free cycles of every constructor and view
(RSS and the Python heap stay bounded)."""

import gc
import tracemalloc

import numpy as np

import blobcore as bc
from conftest import ON_GPU


def rss_kib() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


DESC = bc.TensorDesc(bc.float32, [1, 8, 2, 2], bc.BlockingDesc([1, 1, 2, 2, 8], [0, 1, 2, 3, 1]))
NPY = bc.Blob.vector(4).to_npy_bytes()


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
    held = b.get_buffer(4, 2, True)
    b.release_buffer(held, True)
    others = [
        bc.Blob.vector(3),
        bc.Blob.matrix(2, 2, dtype=bc.int32),
        bc.Blob.data(1, 2, 3),
        bc.Blob.list(1, 1, 2, 2),
        bc.Blob.image3d(1, 1, 2, 2, 2, 1),
        bc.Blob.with_desc(DESC),
        bc.Blob.from_numpy(a),
        b.region([0, 0], [2, 4]),
        b.copy(),
        b.clone(dtype=bc.float64),
        b.transposed(0, 1),
        bc.merge([w, w], 0),
        *bc.split(b, 2, 0),
        bc.from_npy_bytes(NPY),
        b.diff,
    ]
    del b, w, s, a, d, f, g, held, others


# 100k cycles on the CPU engine; the GPU pass (BLOBCORE_ENGINE=gpu, every
# operation a kernel on lavapipe) runs 5k to stay within minutes.
CYCLES = 5_000 if ON_GPU else 100_000


def test_no_leak_over_100k_cycles():
    for i in range(2000):  # warm up allocator and caches
        cycle(i)
    gc.collect()
    tracemalloc.start()
    base_rss = rss_kib()
    snap0 = tracemalloc.take_snapshot()
    for i in range(CYCLES):
        cycle(i)
    gc.collect()
    snap1 = tracemalloc.take_snapshot()
    tracemalloc.stop()
    grown_py = sum(s.size_diff for s in snap1.compare_to(snap0, "filename"))
    grown_rss = rss_kib() - base_rss
    assert grown_py < 256 * 1024, f"Python heap grew by {grown_py} bytes"
    assert grown_rss < 16 * 1024, f"RSS grew by {grown_rss} KiB over {CYCLES} cycles"
