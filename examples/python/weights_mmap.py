"""Weights larger than you want in RAM: write a safetensors file of a GiB
or more made of untouched blobs, then memory-map it. Opening costs O(1)
time and almost no resident memory; pages are read only when a tensor is
used.

    python examples/python/weights_mmap.py          # 1 GiB
    BLOBCORE_DEMO_GIB=8 python examples/python/weights_mmap.py

The file goes to the temporary directory; when it would take more than
half of that directory's free space, the demo says so and writes a
smaller one.
"""

import os
import shutil
import tempfile
import time

import numpy as np

import blobcore as bc


def rss() -> int:
    """Resident memory of this process, in bytes (Linux)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


gib = float(os.environ.get("BLOBCORE_DEMO_GIB", "1"))
layers = 16
rows = 4096
with tempfile.TemporaryDirectory() as tmp:
    free_gib = shutil.disk_usage(tmp).free / (1 << 30)
    if gib > free_gib / 2:
        smaller = max(free_gib / 2, 1 / 16)
        print(f"{tmp} has {free_gib:.2f} GiB free: writing {smaller:.2f} GiB instead of {gib:.2f}")
        gib = smaller
    per_layer = max(int(gib * (1 << 30)) // layers // 4 // rows, 1) * rows  # float32 elements
    path = os.path.join(tmp, "model.safetensors")
    # Untouched blobs: their memory is never written, so saving reads zero pages.
    blobs = {f"layer{i:02d}.weight": bc.Blob.tensor([rows, per_layer // rows]) for i in range(layers)}
    t = time.perf_counter()
    bc.save_safetensors(path, blobs, metadata={"demo": "weights_mmap"})
    written = time.perf_counter() - t
    del blobs
    size = os.path.getsize(path)
    print(f"wrote {size / (1 << 30):.2f} GiB in {written:.1f} s ({size / written / 1e9:.2f} GB/s)")

    r0 = rss()
    t = time.perf_counter()
    weights = bc.load_safetensors(path)  # mmap=True: read-only views of the file
    opened = time.perf_counter() - t
    r1 = rss()
    print(f"opened {len(weights)} tensors in {opened * 1e3:.3f} ms; resident memory grew by {(r1 - r0) / (1 << 20):.2f} MiB")

    w = weights["layer07.weight"]
    t = time.perf_counter()
    total = float(np.asarray(w).sum(dtype=np.float64))
    read = time.perf_counter() - t
    print(f"read one tensor ({w.nbytes / (1 << 20):.0f} MiB) in {read * 1e3:.0f} ms: sum {total}, "
          f"writeable {w.writeable}; resident grew by {(rss() - r1) / (1 << 20):.0f} MiB")
    assert total == 0.0 and not w.writeable
    del weights, w
