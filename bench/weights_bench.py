"""Weight-file benchmark (issues 19 and 30).

- open a 4 GiB safetensors file and a 4 GiB GGUF file mapped: time (median
  of 20) and resident-memory growth;
- eager loads of every tensor into fresh memory, at 64 MiB (cache-sized),
  1 GiB and 4 GiB: blobcore's safetensors, GGUF and .caffemodel loaders
  with mmap=False (parallel preads into fresh blobs), the `safetensors`
  package (safetensors.numpy.load_file, and safe_open + get_tensor),
  fastsafetensors where it installs (CPU mode), blobcore mapped + a copy of
  every tensor; as ratios to baselines measured in the same run: `cat file
  > /dev/null`, NumPy reading the file into fresh memory (np.fromfile), and
  an all-core copy of a warm in-memory blob of the same size (the memory
  limit). Best of 3 each; each load's memory is freed outside the timing.

The file is read from the page cache (this VM cannot drop caches), so the
ratios compare memory paths, not the disk. `BLOBCORE_BENCH_SIZES` (MiB,
comma-separated; default 64,1024,4096) picks the eager-load sizes.

    .venv/bin/python bench/weights_bench.py
"""

import gc
import os
import statistics
import subprocess
import tempfile
import time

import numpy as np

import blobcore as bc

try:
    import safetensors.numpy as st_numpy
    from safetensors import safe_open
except ImportError:
    st_numpy = safe_open = None
try:
    import fastsafetensors

    # fastsafetensors hands out PyTorch or Paddle tensors: whichever is here.
    try:
        import torch  # noqa: F401

        FST_FRAMEWORK = "pt"
    except ImportError:
        import paddle  # noqa: F401

        FST_FRAMEWORK = "paddle"
except ImportError:
    fastsafetensors = None


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def best(f, runs=3):
    """Best time of `runs` calls of `f`; what it returns is freed untimed."""
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        out = f()
        times.append(time.perf_counter() - t)
        del out
        gc.collect()
    return min(times)


def tensors(nbytes, layers):
    per = nbytes // layers // 4
    rng = np.random.default_rng(0)
    chunk = rng.standard_normal(max(per // 64, 1), dtype=np.float32)
    return {f"w{i:02d}": np.resize(chunk + i, per) for i in range(layers)}


def open_mapped(label, path, load):
    opens = []
    for _ in range(20):
        t = time.perf_counter()
        d = load(path)
        opens.append(time.perf_counter() - t)
        del d
    r0 = rss()
    d = load(path)
    grew = rss() - r0
    del d
    print(f"| open {label} mapped | {statistics.median(opens) * 1e3:.3f} ms | +{grew / (1 << 20):.2f} MiB | < 1 ms, < 1 MiB |")


tmpdir = os.environ.get("BLOBCORE_BENCH_DIR")
sizes = [int(s) for s in os.environ.get("BLOBCORE_BENCH_SIZES", "64,1024,4096").split(",")]
print(f"weights_bench: {os.cpu_count()} cores; fastsafetensors {'with ' + FST_FRAMEWORK if fastsafetensors else 'not installed (it needs PyTorch or Paddle)'}")
with tempfile.TemporaryDirectory(dir=tmpdir) as tmp:
    print("\n| open | median time | resident growth | target |\n|---|---|---|---|")
    p = os.path.join(tmp, "open.safetensors")
    bc.save_safetensors(p, tensors(4 << 30, 32))
    open_mapped("4 GiB safetensors", p, bc.load_safetensors)
    os.remove(p)
    p = os.path.join(tmp, "open.gguf")
    bc.save_gguf(p, tensors(4 << 30, 32))
    open_mapped("4 GiB GGUF", p, bc.load_gguf)
    os.remove(p)

    for mib in sizes:
        nbytes = mib << 20
        label = f"{mib} MiB" if mib < 1024 else f"{mib >> 10} GiB"
        data = tensors(nbytes, 16)
        st_path, gg_path, cm_path = (os.path.join(tmp, f"read.{x}") for x in ("safetensors", "gguf", "caffemodel"))
        bc.save_safetensors(st_path, data)
        bc.save_gguf(gg_path, data)
        # Caffe's own reader stops at 2 GiB (protobuf's message limit).
        if nbytes < (2 << 30):
            bc.save_caffemodel(cm_path, {k: [v] for k, v in data.items()})
        del data
        size = os.path.getsize(st_path)
        warm = bc.Blob.tensor([size], bc.uint8)
        warm.fill(1)
        base = {
            "cat": best(lambda: subprocess.run(f"cat {st_path} > /dev/null", shell=True, check=True)),
            "np.fromfile": best(lambda: np.fromfile(st_path, dtype=np.uint8)),
            "all-core copy": best(lambda: warm.copy()),
        }
        del warm
        print(f"\n{label} file; baselines: " + ", ".join(f"{k} {size / t / 1e9:.2f} GB/s" for k, t in base.items()))
        print("\n| load into fresh memory | GB/s | / cat | / np.fromfile | / all-core copy |\n|---|---|---|---|---|")

        def mapped_copy():
            return [b.copy() for b in bc.load_safetensors(st_path).values()]

        rows = [
            ("blobcore safetensors mmap=False", st_path, lambda: bc.load_safetensors(st_path, mmap=False)),
            ("blobcore GGUF mmap=False", gg_path, lambda: bc.load_gguf(gg_path, mmap=False)),
        ]
        if os.path.exists(cm_path):
            rows.append(("blobcore .caffemodel", cm_path, lambda: bc.load_caffemodel(cm_path)))
        rows.append(("blobcore safetensors mmap + b.copy() of each", st_path, mapped_copy))
        if st_numpy is not None:
            rows.append(("safetensors package load_file (numpy)", st_path, lambda: st_numpy.load_file(st_path)))

            def st_get():
                with safe_open(st_path, framework="numpy") as f:
                    return [f.get_tensor(k) for k in f.keys()]

            rows.append(("safetensors package safe_open + get_tensor", st_path, st_get))
        if fastsafetensors is not None:

            def fst():
                with fastsafetensors.fastsafe_open(st_path, framework=FST_FRAMEWORK, device="cpu", nogds=True) as f:
                    return [f.get_tensor(k) for k in f.keys()]

            rows.append((f"fastsafetensors {fastsafetensors.__version__} (cpu, nogds, {FST_FRAMEWORK})", st_path, fst))
        for name, path, f in rows:
            subprocess.run(f"cat {path} > /dev/null", shell=True, check=True)  # warm this file
            t = best(f)
            fsize = os.path.getsize(path)
            ratios = " | ".join(f"{fsize / t / (size / base[k]):.2f}x" for k in base)
            print(f"| {name} | {fsize / t / 1e9:.2f} | {ratios} |")
        print("(target: blobcore eager loads >= 0.9x cat, above the safetensors package and fastsafetensors)")
        for p in (st_path, gg_path, cm_path):
            if os.path.exists(p):
                os.remove(p)
