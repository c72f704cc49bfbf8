"""A DataLoader-style pool: 4 worker processes fill preallocated batch blobs
in shared memory, and the main process consumes them without a copy.

The batch blobs go to the workers once, at their start, as descriptors of
their memory (blobcore's multiprocessing reducer); after that only slot
numbers travel through the queues. Every batch is checked against the
values its worker was asked to write.
"""

import multiprocessing as mp
import time

import numpy as np

import blobcore as bc

WORKERS, SLOTS, BATCHES = 4, 8, 64
SHAPE = [32, 3, 64, 64]  # one batch: 32 images of 3 x 64 x 64 (1.5 MiB)


def expected(batch):
    """What batch number `batch` holds: image i is filled with batch + i / 100."""
    return (batch + np.arange(SHAPE[0], dtype=np.float32) / 100).reshape(-1, 1, 1, 1)


def worker(slots, todo, done):
    while True:
        job = todo.get()
        if job is None:
            return
        slot, batch = job
        a = np.asarray(slots[slot])  # the shared batch memory, zero-copy
        a[...] = expected(batch)  # "decode and augment" into it
        done.put((slot, batch))


def main():
    ctx = mp.get_context("spawn")
    slots = [bc.Blob.tensor(SHAPE).share_memory() for _ in range(SLOTS)]
    todo, done = ctx.Queue(), ctx.Queue()
    procs = [ctx.Process(target=worker, args=(slots, todo, done)) for _ in range(WORKERS)]
    for p in procs:
        p.start()
    start = time.perf_counter()
    for batch in range(SLOTS):
        todo.put((batch, batch))
    seen = set()
    for _ in range(BATCHES):
        slot, batch = done.get(timeout=60)
        x = np.asarray(slots[slot])  # consumed in place: no copy, no unpickling
        assert np.array_equal(x, np.broadcast_to(expected(batch), x.shape)), f"batch {batch} is wrong"
        seen.add(batch)
        nxt = batch + SLOTS
        if nxt < BATCHES:
            todo.put((slot, nxt))  # the slot is free again
    secs = time.perf_counter() - start
    for _ in procs:
        todo.put(None)
    for p in procs:
        p.join(30)
        assert p.exitcode == 0
    assert seen == set(range(BATCHES))
    mib = BATCHES * slots[0].nbytes / 2**20
    print(f"{BATCHES} batches ({mib:.0f} MiB) from {WORKERS} workers through {SLOTS} shared slots in {secs:.2f} s; "
          f"all values checked; shared: {all(s.is_shared for s in slots)}")


if __name__ == "__main__":
    main()
