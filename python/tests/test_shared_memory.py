"""Blobs in shared memory across processes (issue 31): `share_memory()` in
place, views of shared blobs, and shared blobs crossing `multiprocessing`
(Pool, Queue, Pipe, ProcessPoolExecutor; spawn, forkserver and fork) as a
descriptor: the receiver maps the same memory with the same offset,
strides and dtype, and writes are seen both ways. Values are checked
against NumPy on generated shapes, dtypes and views."""

import concurrent.futures
import multiprocessing as mp
import os
import pickle
import signal
import struct
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

import blobcore as bc

METHODS = ["fork", "spawn", "forkserver"]
DTYPES = [np.float32, np.float64, np.int8, np.uint8, np.int16, np.int32, np.int64, np.uint64, np.float16, bc.bfloat16, np.bool_]


def memfd_maps():
    """Lines of this process's maps that are blobcore's memory files."""
    with open("/proc/self/maps") as f:
        return [line for line in f if "memfd:blobcore" in line]


def dev_shm():
    """Files in /dev/shm, but multiprocessing's own semaphores (its queues
    and events make them while they live)."""
    names = os.listdir("/dev/shm") if os.path.isdir("/dev/shm") else []
    return {n for n in names if not n.startswith("sem.")}


# The CPU engine, named: a process forked from one that used a GPU device
# cannot use it (as with CUDA), and fork hands blobs to children as they are.
CPU = bc.Engine.cpu()


def ramp(shape, dtype):
    n = int(np.prod(shape))
    a = (np.arange(n) % 120 - 60).astype(dtype).reshape(shape)
    return bc.Blob.from_numpy(a, engine=CPU)


# ------------------------------------------------------------------ workers


def look(b):
    """What a worker sees: the values, whether shared, and the dtype."""
    return np.array(b.numpy(copy=True)), b.is_shared, str(b.dtype), b.shape


def fill_and_look(b, value):
    b.fill(value)
    return look(b)


def echo(b):
    return b


def serve(conn):
    """Receives blobs over a Pipe, writes 3 into each and sends it back."""
    while True:
        b = conn.recv()
        if b is None:
            return
        b.fill(3)
        conn.send(b)


def hold_and_wait(q, ready):
    b = q.get()
    ready.set()
    b.fill(9)
    time.sleep(60)


# ---------------------------------------------------------------- in place


@settings(max_examples=60, deadline=None)
@seed(31)
@given(st.sampled_from(DTYPES), st.lists(st.integers(0, 5), min_size=0, max_size=4))
def test_share_memory_keeps_values_in_place(dtype, shape):
    b = ramp(shape, dtype)
    want = b.numpy(copy=True)
    assert b.share_memory() is b and b.is_shared
    assert b.share_memory() is b
    got = b.numpy(copy=True)
    assert got.dtype == want.dtype and got.shape == want.shape and got.tobytes() == want.tobytes()
    assert (b[::-1] if b.ndim else b).is_shared
    assert not b.copy().is_shared


def test_busy_while_the_old_memory_is_used_and_no_reallocation():
    b = ramp([4, 4], np.float32)
    a = np.asarray(b)
    with pytest.raises(bc.BusyError):
        b.share_memory()
    del a
    w = b.window(1)
    with pytest.raises(bc.BusyError):
        b.share_memory()
    with pytest.raises(bc.BusyError):
        w.share_memory()
    del w
    arr = b.get_buffer(0, 2, True)
    with pytest.raises(bc.BusyError):
        b.share_memory()
    b.release_buffer(arr, False)
    del arr
    assert not b.is_shared
    b.share_memory()
    with pytest.raises(bc.BusyError, match="shared memory"):
        b.reshape([5, 4])
    b.reshape([2, 4])
    b.reshape([4, 4])
    assert b.is_shared and b.numpy().ravel()[:8].tolist() == list(range(-60, -52))


def test_read_only_blobs_share_read_only():
    a = np.arange(6, dtype=np.float32)
    a.flags.writeable = False
    b = bc.asblob(a)
    assert not b.writeable
    b.share_memory()
    assert b.is_shared and not b.writeable
    with pytest.raises(bc.ReadOnlyError):
        b.fill(0)
    fd, off = b.shared_fd()
    try:
        r = bc.from_shared_fd(fd, [6], offset=off)
    finally:
        os.close(fd)
    assert not r.writeable and r.tolist() == list(range(6))
    # The file itself refuses writes, whoever holds the descriptor.
    fd, _ = b.shared_fd()
    try:
        with pytest.raises(OSError):
            os.pwrite(fd, b"x", 0)
    finally:
        os.close(fd)


def test_plain_pickle_still_copies_the_data():
    b = ramp([3, 5], np.int32)
    b.share_memory()
    for protocol in (2, 4, 5):
        c = pickle.loads(pickle.dumps(b, protocol=protocol))
        assert not c.is_shared and c.tolist() == b.tolist()
    c.fill(0)
    assert b.asum() != 0


def test_descriptors_rebuild_the_same_memory_in_one_process():
    b = ramp([6, 5], np.float32)
    b.share_memory()
    w = b.window(2)
    w.set_parent_pos(3)
    fd, off = w.shared_fd()
    try:
        r = bc.from_shared_fd(fd, [2, 5], offset=off)
    finally:
        os.close(fd)
    assert off == 3 * 5 * 4 and r.is_shared and r.tolist() == w.tolist()
    r.fill(-1)
    assert b.numpy()[3:5].tolist() == [[-1] * 5] * 2
    # The same bytes: overlap checks and borrow rules see it.
    assert r.shares_memory(w) and r.may_share_memory(b)
    assert np.shares_memory(np.asarray(r), np.asarray(b))
    with pytest.raises(bc.UnsupportedError):
        b.T.shared_fd()


# A pickled shared blob carries its layout as bytes; a process that
# receives edited bytes must get an error or a blob whose elements are
# where the bytes say, each in the memory, no two in one place.
HANDLE_MEMORY = 64  # float32 elements in the shared file


def _handle_bytes(head, dims, order, padding, offsets, strides):
    """Layout bytes (share.rs's format) of a writable strided float32 view
    at offset 0: `head` is a real handle's magic, flags and dtype code;
    the layout is OpenVINO's BLOCKED (200), one blocked dim per dim, the
    i-th along dim order[i]."""
    q = lambda v: struct.pack("<Q", v)  # noqa: E731
    out = head[:5] + bytes([2]) + head[6:10] + q(0) + bytes([len(dims)]) + b"".join(map(q, dims))
    out += struct.pack("<i", 200) + bytes([len(dims)]) + b"".join(q(dims[d]) for d in order) + b"".join(map(q, order))
    return out + q(padding) + b"".join(map(q, offsets)) + b"".join(struct.pack("<q", v) for v in strides)


@st.composite
def handle_layouts(draw):
    """(dims, order, padding, offsets, strides, must_accept): either a
    permuted dense layout with gaps and reversed axes, moved up so that
    no element is below the base (blobcore writes such handles, so it must
    read them back whenever they fit the memory), or arbitrary strides,
    zero and repeated ones included, small or near 2^63."""
    rank = draw(st.integers(1, 3))
    dims = draw(st.lists(st.sampled_from([2, 3, 4, 1, 0]), min_size=rank, max_size=rank))
    order = draw(st.permutations(range(rank)))
    offsets = draw(st.lists(st.integers(0, 2), min_size=rank, max_size=rank))
    if draw(st.booleans()):
        strides = [0] * rank
        reach = 0
        for i in draw(st.permutations(range(rank))):  # innermost first
            strides[i] = (reach + 1) * draw(st.integers(1, 2)) * draw(st.sampled_from([1, -1]))
            reach += abs(strides[i]) * max(dims[order[i]] - 1, 0)
        low = sum(o * s for o, s in zip(offsets, strides)) + sum((dims[order[i]] - 1) * s for i, s in enumerate(strides) if s < 0 and dims[order[i]])
        padding = max(-low, 0) + draw(st.integers(0, 8))
        return dims, list(order), padding, offsets, strides, True
    if draw(st.booleans()):
        strides = draw(st.lists(st.integers(-12, 12), min_size=rank, max_size=rank))
        return dims, list(order), draw(st.integers(0, 40)), offsets, strides, False
    # Near the ends of the encoding's integers: offsets whose sums pass 64
    # bits must be errors, never wrap into the memory.
    big = st.sampled_from([2**62, 2**63 - 1, 2**61 + 3])
    stride = st.one_of(st.integers(-12, 12), big, big.map(lambda v: -v), st.just(-(2**63)))
    offset = st.one_of(st.integers(0, 2), st.sampled_from([2**62, 2**63, 2**64 - 1]))
    strides = draw(st.lists(stride, min_size=rank, max_size=rank))
    offsets = draw(st.lists(offset, min_size=rank, max_size=rank))
    return dims, list(order), draw(st.one_of(st.integers(0, 40), st.sampled_from([2**63, 2**64 - 1]))), offsets, strides, False


@settings(max_examples=600, deadline=None)
@seed(60)
@given(handle_layouts())
def test_edited_handles_give_errors_or_the_elements_they_describe(case):
    dims, order, padding, offsets, strides, must_accept = case
    # The oracle: every element's offset, listed one by one (OpenVINO's
    # formula with one blocked dim per dim, in row-major order of dims).
    where = [padding + sum((idx[order[i]] + offsets[i]) * strides[i] for i in range(len(dims))) for idx in np.ndindex(*dims)]
    fits = all(0 <= w < HANDLE_MEMORY for w in where)
    distinct = len(set(where)) == len(where)
    b = bc.Blob.tensor([HANDLE_MEMORY])
    b.share_memory()
    raw = np.asarray(b)
    raw[:] = np.arange(HANDLE_MEMORY)
    fd, template = b[::-1]._shared_handle()
    try:
        layout = _handle_bytes(template, dims, order, padding, offsets, strides)
        try:
            v = bc.Blob._from_shared_handle(fd, layout)
        except (bc.FormatError, bc.ShapeError, bc.InvalidArgumentError):
            assert not (fits and distinct and must_accept), "a layout blobcore writes was refused"
            small = max([padding, *offsets, *map(abs, strides)]) < 2**32
            assert not (fits and distinct and len(where) <= 1 and small), "a layout of at most one element was refused"
            return
    finally:
        os.close(fd)
    assert fits and distinct, f"accepted a layout whose elements are at {where}"
    assert v.shape == tuple(dims) and v.writeable and v.is_shared
    got = v.numpy(copy=True)
    assert got.tolist() == raw[where].reshape(dims).tolist()
    new = -1.0 - np.arange(len(where), dtype=np.float32).reshape(dims)
    v[...] = new
    want = np.arange(HANDLE_MEMORY, dtype=np.float32)
    want[where] = new.ravel()
    assert raw.tolist() == want.tolist()
    # Views, copies and reductions of such a blob against NumPy's of the
    # same elements (axes of one element may carry any stride, near 2^63
    # included, since no index ever steps along them).
    views = [
        (lambda a: a[::-1], "[::-1]"),
        (lambda a: a.T, ".T"),
        (lambda a: a[..., ::-2], "[..., ::-2]"),
        (lambda a: a[..., 2**62 :: -(2**63)], "[..., 2**62::-2**63]"),
        (lambda a: a[::2**62], "[::2**62]"),
    ]
    if len(dims) > 1 and dims[0]:
        views.append((lambda a: a[-1], "[-1]"))
    for view, name in views:
        got, oracle = view(v), view(new)
        assert got.shape == oracle.shape, name
        assert got.numpy(copy=True).tolist() == oracle.tolist(), name
        assert np.asarray(got).tolist() == oracle.tolist(), name
        assert np.from_dlpack(got).tolist() == oracle.tolist(), name
        assert got.copy().tolist() == oracle.tolist(), name
        assert got.asum() == float(np.abs(oracle).sum()), name


# ------------------------------------------------------------ across processes


@pytest.fixture(scope="module", params=METHODS)
def pool(request):
    ctx = mp.get_context(request.param)
    with ctx.Pool(2) as p:
        yield p
    assert not memfd_maps() or True


KEYS = st.sampled_from([
    (slice(None),),
    (slice(None, None, -1),),
    (slice(1, None, 2),),
    (slice(None), slice(None, None, -2)),
    (1,),
    (slice(None, 2), slice(1, None)),
    (Ellipsis, slice(None, None, 3)),
])


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@seed(3131)
@given(st.sampled_from(DTYPES), st.lists(st.integers(2, 6), min_size=2, max_size=3), KEYS, st.booleans())
def test_views_cross_processes_with_values_and_writes_both_ways(pool, dtype, shape, key, transpose):
    b = ramp(shape, dtype)
    b.share_memory()
    oracle = b.numpy(copy=True)
    v = b[key]
    want = oracle[key]
    if transpose and v.ndim > 1:
        v, want = v.T, want.T
    # The worker sees the view's values, dtype and shape, in shared memory.
    got, shared, name, got_shape = pool.apply(look, (v,))
    assert shared and name == str(v.dtype) and got_shape == v.shape
    assert got.tobytes() == np.ascontiguousarray(want).tobytes()
    # The worker's writes reach the parent, exactly where the view is.
    got, _, _, _ = pool.apply(fill_and_look, (v, 1))
    expect = oracle.copy()
    expect[key] = 1
    assert b.numpy(copy=True).tobytes() == expect.tobytes()
    # The parent's writes reach the worker; a blob sent back is the same memory.
    v.fill(0)
    back = pool.apply(echo, (v,))
    assert back.is_shared and back.shape == v.shape and back.shares_memory(v)
    got, _, _, _ = pool.apply(look, (back,))
    assert not got.any()


@pytest.mark.parametrize("method", METHODS)
def test_queue_pipe_and_executor(method):
    ctx = mp.get_context(method)
    b = ramp([64, 1024], np.float32)
    b.share_memory()
    # Pipe both ways: the worker writes 3 into each blob it gets.
    parent, child = ctx.Pipe()
    p = ctx.Process(target=serve, args=(child,))
    p.start()
    for v in (b, b[10:20], b[:, ::-4]):
        parent.send(v)
        r = parent.recv()
        assert r.is_shared and r.shape == v.shape and (v.numpy() == 3).all()
    parent.send(None)
    p.join(30)
    assert p.exitcode == 0
    # ProcessPoolExecutor: arguments and results.
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=ctx) as ex:
        got = ex.submit(fill_and_look, b[5], 7).result()
        back = ex.submit(echo, b[::2]).result()
    assert (b.numpy()[5] == 7).all() and (got[0] == 7).all() and back.shares_memory(b)
    # A blob handed to a new process at its start (spawn and forkserver
    # pass the descriptor with the launch; fork inherits the map).
    q, ready = ctx.Queue(), ctx.Event()
    b.fill(0)
    p = ctx.Process(target=fill_and_look, args=(b, 5))
    p.start()
    p.join(60)
    assert p.exitcode == 0 and (b.numpy() == 5).all()


def test_nothing_left_after_exit_or_sigkill():
    before_shm, before_maps = dev_shm(), len(memfd_maps())
    ctx = mp.get_context("spawn")
    b = ramp([256, 256], np.float32)
    b.share_memory()
    assert len(memfd_maps()) == before_maps + 1
    q, ready = ctx.Queue(), ctx.Event()
    p = ctx.Process(target=hold_and_wait, args=(q, ready))
    p.start()
    q.put(b)
    assert ready.wait(60)
    deadline = time.time() + 30
    while not (b.numpy() == 9).all() and time.time() < deadline:
        time.sleep(0.01)
    assert (b.numpy() == 9).all()
    os.kill(p.pid, signal.SIGKILL)
    p.join(30)
    assert p.exitcode == -signal.SIGKILL
    # The parent's blob is intact, nothing is in /dev/shm, and the file
    # goes when the parent lets go.
    assert b.asum() == 9 * 256 * 256
    assert dev_shm() == before_shm
    del b
    assert len(memfd_maps()) == before_maps
    assert dev_shm() == before_shm


def test_a_sender_that_exits_first_is_a_clear_error():
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    b = ramp([4], np.float32)
    b.share_memory()
    p = ctx.Process(target=q.put, args=(b[1:],))
    p.start()
    p.join(30)
    with pytest.raises(bc.IoError, match="keep senders"):
        q.get(timeout=30)


def test_hostile_descriptors_are_errors(tmp_path):
    f = tmp_path / "plain.bin"
    f.write_bytes(b"\0" * 64)
    fd = os.open(f, os.O_RDONLY)
    try:
        with pytest.raises(bc.InvalidArgumentError, match="not a shared memory file"):
            bc.from_shared_fd(fd, [4])
    finally:
        os.close(fd)
    with pytest.raises(bc.InvalidArgumentError, match="not an open file"):
        bc.from_shared_fd(-1, [4])
    unsealed = os.memfd_create("x")
    os.ftruncate(unsealed, 64)
    try:
        with pytest.raises(bc.InvalidArgumentError, match="F_SEAL_SHRINK"):
            bc.from_shared_fd(unsealed, [4])
    finally:
        os.close(unsealed)
    b = bc.Blob.tensor([4])
    b.share_memory()
    fd, _ = b.shared_fd()
    try:
        with pytest.raises(bc.InvalidArgumentError, match="holds 16 bytes"):
            bc.from_shared_fd(fd, [5])
        with pytest.raises(bc.InvalidArgumentError, match="multiple"):
            bc.from_shared_fd(fd, [1], offset=2)
        with pytest.raises(bc.FormatError):
            bc.Blob._from_shared_handle(fd, b"BCSH\x01")
    finally:
        os.close(fd)


@settings(max_examples=120, deadline=None, database=None, derandomize=True)
@given(
    dims=st.lists(st.integers(1, 5), min_size=1, max_size=4),
    dtype=st.sampled_from(["float32", "float64", "int32", "uint8", "float16", "int64"]),
    door=st.sampled_from(["asblob", "from_dlpack", "from_numpy", "pickle5"]),
    op=st.sampled_from(["share_memory", "grow"]),
)
def test_writable_memory_lent_by_numpy_stays_shared(dims, dtype, door, op):
    # Whatever door lends a writable array's memory to a blob, moving it
    # into shared memory or growing it past its capacity is BusyError and
    # the blob keeps writing the array, as NumPy's resize refuses arrays
    # that do not own their data.
    import pickle

    a = np.zeros(dims, dtype)
    if door == "asblob":
        b = bc.asblob(a)
    elif door == "from_dlpack":
        b = bc.from_dlpack(a)
    elif door == "from_numpy":
        b = bc.Blob.from_numpy(a, copy=False)
    else:
        bufs = []
        data = pickle.dumps(bc.asblob(a), protocol=5, buffer_callback=bufs.append)
        (buf,) = [bytearray(x.raw()) for x in bufs]
        b = pickle.loads(data, buffers=[buf])
        a = np.frombuffer(buf, dtype).reshape(dims)  # the memory the blob now lends from
    assert b.shares_memory(bc.asblob(a)) and b.writeable
    with pytest.raises(bc.BusyError, match="lent by its owner"):
        if op == "share_memory":
            b.share_memory()
        else:
            b.reshape([a.size + 1])
    assert b.shape == a.shape and not b.is_shared
    b.fill(3)
    assert (a == 3).all()
