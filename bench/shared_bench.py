"""Issue 31's benchmark: a blob sent to a worker process and back through
multiprocessing.Queue, per trip, at 64 MiB, 256 MiB and 1 GiB:

- a blob in shared memory (blobcore's reducer passes a descriptor);
- the same blob not shared (today's pickle: the data goes through the pipe);
- a NumPy array in multiprocessing.shared_memory (its name travels; the
  worker attaches to it and makes an ndarray over it each time);

plus how much the parent's resident memory grows over the shared trips
(it must not grow by the blob's size). One run, best of `REPEAT` rounds of
`TRIPS` trips after a warm-up; the spawn start method.

    python bench/shared_bench.py       # BLOBCORE_BENCH_SIZES=64,256 to pick sizes (MiB)
"""

import multiprocessing as mp
import os
import platform
import time
from multiprocessing import shared_memory

import numpy as np

import blobcore as bc

TRIPS, REPEAT = 20, 3


def rss_mib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def echo(qin, qout):
    """Sends back whatever arrives (a NumPy shared-memory job is attached,
    viewed and answered by name, as a worker using it would)."""
    while True:
        x = qin.get()
        if x is None:
            return
        if isinstance(x, tuple):
            name, shape = x
            shm = shared_memory.SharedMemory(name=name)
            a = np.ndarray(shape, np.float32, buffer=shm.buf)
            float(a[0])
            del a
            shm.close()
        qout.put(x)


def trips(qin, qout, obj, n):
    best = float("inf")
    for _ in range(REPEAT):
        t = time.perf_counter()
        for _ in range(n):
            qin.put(obj)
            qout.get()
        best = min(best, (time.perf_counter() - t) / n)
    return best * 1e3


def main():
    sizes = [int(s) for s in os.environ.get("BLOBCORE_BENCH_SIZES", "64,256,1024").split(",")]
    ctx = mp.get_context("spawn")
    qin, qout = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=echo, args=(qin, qout))
    p.start()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores; Python {platform.python_version()}; spawn; best of {REPEAT} x {TRIPS} trips")
    print(f"{'size':>8} {'shared blob':>12} {'pickled blob':>13} {'numpy shm':>10} {'parent RSS +':>13}")
    for mib in sizes:
        n = (mib << 20) // 4
        b = bc.Blob.tensor([n])
        b.fill(1.0)
        shared = b.copy().share_memory()
        shared_rss0 = None
        trips(qin, qout, shared, 2)
        shared_rss0 = rss_mib()
        t_shared = trips(qin, qout, shared, TRIPS)
        grow = rss_mib() - shared_rss0
        t_pickled = trips(qin, qout, b, max(2, TRIPS // max(1, mib // 64)))
        shm = shared_memory.SharedMemory(create=True, size=n * 4)
        a = np.ndarray((n,), np.float32, buffer=shm.buf)
        a[:] = 1.0
        job = (shm.name, (n,))
        trips(qin, qout, job, 2)
        t_np = trips(qin, qout, job, TRIPS)
        del a
        shm.close()
        shm.unlink()
        print(f"{mib:>5} MiB {t_shared:>9.3f} ms {t_pickled:>10.1f} ms {t_np:>7.3f} ms {grow:>9.2f} MiB")
        del b, shared
    qin.put(None)
    p.join(60)


if __name__ == "__main__":
    main()
