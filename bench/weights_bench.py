"""Weight-file benchmark (issue 19): a 4 GiB safetensors file.

- open with mmap: time (median of 20) and resident-memory growth;
- read every tensor: blobcore with mmap=False (copied into fresh blobs),
  blobcore mapped + a copy of each tensor, blobcore mapped + one touch per
  page (maps the page cache, copies nothing), the `safetensors` package
  (safe_open(framework="numpy") + get_tensor), all as ratios to
  `cat file > /dev/null` measured in the same run (best of 3 each).

The file is read from the page cache after the first pass (this VM cannot
drop caches), so the ratios compare memory paths, not the disk.

    BLOBCORE_BENCH_GIB=4 .venv/bin/python bench/weights_bench.py
"""

import os
import statistics
import subprocess
import tempfile
import time

import numpy as np

import blobcore as bc


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def best(f, runs=3):
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return min(times)


gib = float(os.environ.get("BLOBCORE_BENCH_GIB", "4"))
layers = 32
per = int(gib * (1 << 30)) // layers // 4
with tempfile.TemporaryDirectory(dir=os.environ.get("BLOBCORE_BENCH_DIR")) as tmp:
    path = os.path.join(tmp, "bench.safetensors")
    rng = np.random.default_rng(0)
    chunk = rng.standard_normal(per // 64, dtype=np.float32)
    bc.save_safetensors(path, {f"w{i:02d}": np.tile(chunk + i, 64) for i in range(layers)})
    size = os.path.getsize(path)
    print(f"file: {size / (1 << 30):.2f} GiB, {layers} float32 tensors")

    # Open: O(1) time and resident memory.
    opens = []
    for _ in range(20):
        t = time.perf_counter()
        d = bc.load_safetensors(path)
        opens.append(time.perf_counter() - t)
        del d
    r0 = rss()
    d = bc.load_safetensors(path)
    grew = rss() - r0
    del d
    print(f"open (mmap): median {statistics.median(opens) * 1e3:.3f} ms, resident +{grew / (1 << 20):.2f} MiB "
          f"(targets: < 1 ms, < 1 MiB)")

    cat = best(lambda: subprocess.run(f"cat {path} > /dev/null", shell=True, check=True))
    bw = size / cat / 1e9
    print(f"cat > /dev/null: {bw:.2f} GB/s (baseline)")

    def bc_read():
        d = bc.load_safetensors(path, mmap=False)
        assert len(d) == layers

    def bc_touch():
        d = bc.load_safetensors(path)
        for b in d.values():
            int(np.asarray(b).view(np.uint8)[::4096].sum())

    def bc_copy():
        d = bc.load_safetensors(path)
        for b in d.values():
            b.copy()

    rows = [
        ("blobcore mmap=False (read into fresh blobs)", bc_read),
        ("blobcore mmap + b.copy() of every tensor", bc_copy),
        ("blobcore mmap + fault in every page (no copy)", bc_touch),
    ]
    try:
        from safetensors import safe_open

        def st_read():
            with safe_open(path, framework="numpy") as f:
                for k in f.keys():
                    f.get_tensor(k)

        rows.append(("safetensors safe_open numpy get_tensor", st_read))
    except ImportError:
        print("safetensors package not installed: its row is skipped")
    for name, f in rows:
        t = best(f)
        print(f"{name}: {size / t / 1e9:.2f} GB/s = {cat / t:.2f}x cat (target >= 0.8x)")
