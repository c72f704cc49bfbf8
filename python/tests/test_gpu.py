"""The GPU engine from Python: SyncedMemory heads, blobs created on it,
and NumPy / DLPack never seeing stale data. Skips without an adapter (CI
installs lavapipe, so there it runs)."""

import io

import numpy as np
import pytest

import blobcore as bc


@pytest.fixture(scope="module")
def gpu():
    try:
        return bc.Engine.gpu()
    except bc.DeviceError as e:
        pytest.skip(f"no GPU adapter: {e}")


# Runs in this process and in scripts of their own (as their first lines).
STAMPS_DURING = r"""
import threading, time

def stamps_during(call):
    # Calls call() while another thread stamps the time in a loop; returns
    # how many stamps fell in the middle half of the call (none can while
    # the call holds the GIL), its milliseconds and its result.
    stamps, stop = [], threading.Event()

    def stamp():
        while not stop.is_set():
            stamps.append(time.perf_counter())

    t = threading.Thread(target=stamp)
    t.start()
    try:
        while not stamps:
            time.sleep(0.001)
        t0 = time.perf_counter()
        out = call()
        t1 = time.perf_counter()
    finally:
        stop.set()
        t.join()
    lo, hi = t0 + (t1 - t0) / 4, t1 - (t1 - t0) / 4
    return sum(lo < s < hi for s in stamps), round(1e3 * (t1 - t0)), out
"""


def test_opening_a_gpu_releases_the_gil(gpu):
    # Another Python thread runs while Engine.gpu() opens a device (tens to
    # hundreds of milliseconds).
    ns = {}
    exec(STAMPS_DURING, ns)
    inside, ms, _ = ns["stamps_during"](bc.Engine.gpu)
    assert inside, f"no other thread ran during the {ms} ms open"


def test_engine_and_heads(gpu):
    assert gpu.name == "gpu" and gpu.adapter
    b = bc.Blob.tensor([4, 5], engine=gpu)
    assert b.engine == gpu
    assert b.head == "uninitialized"
    b.copy_from(np.arange(20, dtype=np.float32).reshape(4, 5))  # CPU write
    assert b.head == "cpu"
    assert b.asum() == 190.0  # GPU read
    assert b.head == "synced"
    b.scale(2.0)  # GPU write
    assert b.head == "gpu"
    saved = np.load(io.BytesIO(b.to_npy_bytes()))  # a CPU read
    np.testing.assert_array_equal(saved, 2 * np.arange(20, dtype=np.float32).reshape(4, 5))
    assert b.head == "synced"
    np.asarray(b)  # an export may be written: the head moves to the CPU
    assert b.head == "cpu"


def test_numpy_views_and_dlpack_are_never_stale(gpu):
    b = bc.Blob.tensor([3, 4], engine=gpu)
    b.fill(1.0)
    assert b.head == "gpu"
    a = np.asarray(b)  # syncs, then shares the host copy
    assert (a == 1).all()
    b.fill(2.0)  # kernels write through to a live view ...
    assert (a == 2).all()
    a[0, 0] = 10.0  # ... and read what NumPy wrote
    assert b.asum() == 2.0 * 11 + 10.0
    del a
    b.scale(0.5)
    assert b.head == "gpu"
    d = np.from_dlpack(b)  # DLPack syncs too
    want = np.full((3, 4), 1.0, np.float32)
    want[0, 0] = 5.0
    np.testing.assert_array_equal(d, want)


def test_ops_match_numpy_on_gpu(gpu, rng):
    a = rng.uniform(-3, 3, size=(6, 5, 4)).astype(np.float32)
    c = rng.uniform(-3, 3, size=(6, 5, 4)).astype(np.float32)
    x = bc.Blob.from_numpy(a, engine=gpu)
    y = bc.Blob.from_numpy(c, engine=gpu)
    x.add(y)
    np.testing.assert_array_equal(np.asarray(x), a + c)
    np.testing.assert_array_equal(np.asarray(x.transposed(0, 2)), np.swapaxes(a + c, 0, 2))
    m = bc.merge([x, y], 1)
    assert m.engine == gpu
    np.testing.assert_array_equal(np.asarray(m), np.concatenate([a + c, c], 1))
    p, q = bc.split(m, [5, 5], 1)
    np.testing.assert_array_equal(np.asarray(q), c)
    assert x.sumsq() == pytest.approx(float(((a + c).astype(np.float64) ** 2).sum()), rel=1e-5)


def test_set_default_engine(gpu):
    try:
        bc.Engine.set_default(gpu)
        assert bc.Blob.vector(3).engine == gpu
    finally:
        bc.Engine.set_default(bc.Engine.cpu())
    assert bc.Blob.vector(3).engine == bc.Engine.cpu()


def test_transfers_follow_caffe_heads_exactly(gpu):
    """Caffe's test_syncedmem, counted: reads sync, writes move the head,
    and nothing moves unless a head transition demands it."""
    b = bc.Blob.tensor([1000], engine=gpu)
    gpu.reset_stats()

    def moved(before):
        now = gpu.stats()
        return now.uploads - before.uploads, now.downloads - before.downloads

    s = gpu.stats()
    b.fill(1.0)  # GPU write
    assert b.head == "gpu" and moved(s) == (0, 0)
    with b.buffer(0, 1000, "r") as m:  # a read: one download, Synced
        assert m[0] == 1.0
    assert b.head == "synced" and moved(s) == (0, 1)
    assert b.asum() == 1000.0  # the kernel needs no upload
    buf = b.get_buffer(0, 1000, True)  # exchange on get: a read
    b.release_buffer(buf, False)
    assert b.sumsq() == 1000.0
    np.testing.assert_array_equal(b.numpy(copy=True)[:3], [1.0, 1.0, 1.0])
    b.to_npy_bytes()  # a file save reads
    assert b.asum() == 1000.0
    assert b.head == "synced" and moved(s) == (0, 1)
    assert gpu.stats().bytes_downloaded - s.bytes_downloaded == 4000
    # Writes move the head; the next kernel uploads exactly once.
    with b.buffer(0, 10, "rw") as m:
        m[:] = 2.0
    del m  # a live writable view would keep the host authoritative
    assert b.head == "cpu"
    assert b.asum() == 1010.0
    assert b.head == "synced" and moved(s) == (1, 1)
    a = np.asarray(b)  # a writable export counts as a write
    assert b.head == "cpu"
    del a
    st = gpu.stats()
    assert st.kernels > 0 and "EngineStats(" in repr(st)
    assert bc.Engine.cpu().stats().uploads == 0


def test_integer_reductions_are_exact(gpu, rng):
    ten = bc.Blob.from_numpy(np.full(10, 0x01010101, np.int32), engine=gpu)
    assert ten.asum() == 168430090.0  # through f32 it was 168430080
    a = rng.integers(-(2**31), 2**31, size=200_000, dtype=np.int64).astype(np.int32)
    a[:2] = [np.iinfo(np.int32).min, np.iinfo(np.int32).max]
    g = bc.Blob.from_numpy(a, engine=gpu)
    assert g.asum() == float(np.abs(a.astype(np.int64)).sum())
    assert g.asum() == bc.Blob.from_numpy(a, engine=bc.Engine.cpu()).asum()
    small = (a % 4096).astype(np.int32)
    s = bc.Blob.from_numpy(small, engine=gpu)
    assert s.sumsq() == float((small.astype(np.int64) ** 2).sum())
    # Sums of squares past 2^64 (a workgroup's 64-bit sum wrapped): the
    # exact integer sum (Python ints) rounded once.
    assert g.sumsq() == float(sum(int(v) * int(v) for v in a.tolist()))
    extremes = bc.Blob.from_numpy(np.array([-(2**31)] * 5 + [2**31 - 1] * 3, np.int32), engine=gpu)
    assert extremes.sumsq() == float(5 * 2**62 + 3 * (2**31 - 1) ** 2)


def test_f32_sums_past_f32_range_are_finite(gpu):
    # Squares past 1.8e19 overflow the device's f32; the host's f64 sum
    # decides then (inf and NaN in the data still give inf and NaN).
    for values in ([2e19] * 3, [3e38, 3e38, -3e38], [np.inf, 1.0], [np.nan, 1e30]):
        a = np.array(values, np.float32)
        b = bc.Blob.from_numpy(a, engine=gpu)
        host = bc.Blob.from_numpy(a, engine=bc.Engine.cpu())
        for got, want in ((b.sumsq(), host.sumsq()), (b.asum(), host.asum())):
            assert np.isfinite(got) == np.isfinite(want) and np.isnan(got) == np.isnan(want), (values, got, want)
            assert np.isnan(want) or got == want or abs(got - want) <= 1e-5 * abs(want), (values, got, want)


def test_f32_sums_keep_their_documented_bound(gpu, rng):
    import math

    x = rng.standard_normal(1 << 20).astype(np.float32)
    b = bc.Blob.from_numpy(x, engine=gpu)
    exact = math.fsum(abs(float(v)) for v in x)
    assert abs(b.asum() - exact) <= 1e-5 * exact
    exact_sq = math.fsum(float(v) * float(v) for v in x)
    assert abs(b.sumsq() - exact_sq) <= 1e-5 * exact_sq


FORKED_GPU = r"""
import faulthandler, multiprocessing as mp, os, sys
faulthandler.dump_traceback_later(100, exit=True)
import numpy as np
import blobcore as bc

def child(on_device, on_host, q):
    out = []
    for name, f in [("read", lambda: on_device.to_npy_bytes()), ("sync", lambda: on_device.engine.synchronize()),
                    ("op", lambda: on_host.asum())]:
        try:
            f()
            out.append((name, "ran"))
        except bc.DeviceError as e:
            out.append((name, "fork" in str(e)))
    out.append(("host", np.asarray(on_host).tolist()))
    del on_device, on_host
    q.put(out)

if __name__ == "__main__":
    g = bc.Engine.gpu()
    on_device = bc.Blob.tensor([4096], engine=g)
    on_device.fill(3.0)
    assert on_device.head == "gpu"
    on_host = bc.Blob.tensor([4], engine=g)
    on_host.copy_from(np.arange(1, 5, dtype=np.float32))
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=child, args=(on_device, on_host, q))
    p.start()
    out = q.get(timeout=90)
    p.join(90)
    print(out, p.exitcode)
    assert out == [("read", True), ("sync", True), ("op", True), ("host", [1.0, 2.0, 3.0, 4.0])], out
    assert p.exitcode == 0
    np.testing.assert_array_equal(np.asarray(on_device), np.full(4096, 3.0, np.float32))
    print("OK")
"""


def test_a_forked_worker_gets_device_errors_not_a_hang(gpu, tmp_path):
    # A GPU cannot be used across fork (CUDA refuses it; a Vulkan driver's
    # threads are gone, so a submission could wait for ever): in the child
    # every device operation raises DeviceError naming the fork, host
    # copies that are current still read, and the parent goes on.
    import subprocess
    import sys

    script = tmp_path / "forked_gpu.py"
    script.write_text(FORKED_GPU)
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=180)
    assert r.returncode == 0 and "OK" in r.stdout, (r.stdout, r.stderr)


FORK_MID_OPEN = r"""
import os, sys, threading, time, warnings
warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads, on purpose
import blobcore as bc

t0 = time.perf_counter(); bc.Engine.gpu(); took = time.perf_counter() - t0
answers = []
for frac in (0.1, 0.25, 0.5, 0.75):
    opener = threading.Thread(target=bc.Engine.gpu)
    opener.start()
    time.sleep(took * frac)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        out = []
        for name, call in (("adapters", bc.Engine.adapters), ("gpu", bc.Engine.gpu)):
            try:
                call()
                out.append("ok")
            except bc.DeviceError as e:
                out.append("refused" if "forked" in str(e) else "error: " + str(e))
        os.write(w, ",".join(out).encode())
        os._exit(0)
    os.close(w)
    deadline = time.time() + 60
    while os.waitpid(pid, os.WNOHANG) == (0, 0):
        if time.time() > deadline:
            os.kill(pid, 9); os.waitpid(pid, 0)
            break
        time.sleep(0.005)
    answers.append(os.read(r, 4096).decode() or "hung")
    opener.join()
print(answers)
"""


def test_a_child_forked_mid_open_gets_answers(gpu, tmp_path):
    # Forks at four points of another thread's Engine.gpu(): every child
    # answers (a hang or a crash used to be possible), listing adapters
    # and opening a GPU both refused naming the fork when it fell inside
    # the open (at least one of the four does), both working after it.
    import subprocess
    import sys

    script = tmp_path / "fork_mid_open.py"
    script.write_text(FORK_MID_OPEN)
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    answers = eval(r.stdout.strip().splitlines()[-1])
    assert set(answers) <= {"refused,refused", "ok,ok"}, answers
    assert "refused,refused" in answers, answers


FIRST_DEFAULT_OPEN = STAMPS_DURING + r"""
import blobcore as bc

# engine=None: opens the GPU BLOBCORE_ENGINE names
inside, ms, b = stamps_during(lambda: bc.Blob.tensor([4]))
assert b.engine.name == "gpu", b.engine.name
print(inside, ms)
"""


def test_the_first_default_gpu_opens_with_the_gil_released(gpu, tmp_path):
    # With BLOBCORE_ENGINE=gpu the first engine=None call opens the GPU
    # (tens of milliseconds): another thread's time stamps fall in the
    # middle half of that call, which none could with the GIL held.
    import os
    import subprocess
    import sys

    script = tmp_path / "first_default.py"
    script.write_text(FIRST_DEFAULT_OPEN)
    env = dict(os.environ, BLOBCORE_ENGINE="gpu")
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    inside, ms = map(int, r.stdout.split())
    assert inside > 0, f"no other thread ran during the {ms} ms first default open"
