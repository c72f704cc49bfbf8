"""Weight-file benchmark (issue 19).

- open a 4 GiB safetensors file with mmap: time (median of 20) and
  resident-memory growth;
- read every tensor of a 64 MiB (cache-sized) and a 1 GiB file: blobcore
  with mmap=False (into fresh blobs), blobcore mapped + a copy of each
  tensor, the `safetensors` package (safe_open(framework="numpy") +
  get_tensor), as ratios to three baselines measured in the same run:
  `cat file > /dev/null`, NumPy reading the file into fresh memory
  (np.fromfile), and an all-core copy of a warm in-memory blob of the same
  size (the memory limit). Best of 3 each.

The file is read from the page cache (this VM cannot drop caches), so the
ratios compare memory paths, not the disk.

    .venv/bin/python bench/weights_bench.py
"""

import os
import statistics
import subprocess
import tempfile
import time

import numpy as np

import blobcore as bc

try:
    from safetensors import safe_open
except ImportError:
    safe_open = None


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


def write(path, nbytes, layers):
    per = nbytes // layers // 4
    rng = np.random.default_rng(0)
    chunk = rng.standard_normal(max(per // 64, 1), dtype=np.float32)
    bc.save_safetensors(path, {f"w{i:02d}": np.resize(chunk + i, per) for i in range(layers)})


tmpdir = os.environ.get("BLOBCORE_BENCH_DIR")
with tempfile.TemporaryDirectory(dir=tmpdir) as tmp:
    path = os.path.join(tmp, "open.safetensors")
    write(path, 4 << 30, 32)
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
    print(f"open 4 GiB (mmap): median {statistics.median(opens) * 1e3:.3f} ms, resident +{grew / (1 << 20):.2f} MiB "
          f"(targets: < 1 ms, < 1 MiB)")
    os.remove(path)

    for label, nbytes in (("64 MiB", 64 << 20), ("1 GiB", 1 << 30)):
        path = os.path.join(tmp, "read.safetensors")
        write(path, nbytes, 16)
        size = os.path.getsize(path)
        warm = bc.Blob.tensor([size], bc.uint8)
        warm.fill(1)
        base = {
            "cat": best(lambda: subprocess.run(f"cat {path} > /dev/null", shell=True, check=True)),
            "np.fromfile": best(lambda: np.fromfile(path, dtype=np.uint8)),
            "all-core copy": best(lambda: warm.copy()),
        }
        del warm
        print(f"\n{label} file; baselines: " + ", ".join(f"{k} {size / t / 1e9:.2f} GB/s" for k, t in base.items()))

        def bc_read():
            bc.load_safetensors(path, mmap=False)

        def bc_copy():
            for b in bc.load_safetensors(path).values():
                b.copy()

        rows = [("blobcore mmap=False (into fresh blobs)", bc_read), ("blobcore mmap + b.copy() of every tensor", bc_copy)]
        if safe_open is not None:

            def st_read():
                with safe_open(path, framework="numpy") as f:
                    for k in f.keys():
                        f.get_tensor(k)

            rows.append(("safetensors safe_open numpy get_tensor", st_read))
        for name, f in rows:
            t = best(f)
            ratios = ", ".join(f"{base[k] / t:.2f}x {k}" for k in base)
            print(f"  {name}: {size / t / 1e9:.2f} GB/s = {ratios} (target >= 0.8x cat)")
        os.remove(path)
