"""Every public method of Blob, and the module's functions, from 8 threads
at once on shared blobs with `sys.setswitchinterval(1e-6)`, under a
watchdog, 20 runs (issue 26). A call may fail with a blobcore error (a
buffer held by another thread is Busy, another thread's reshape makes dims
differ); it may not hang, crash, or fail any other way."""

import subprocess
import sys

import blobcore as bc

# Names of Blob's public attributes that the child's table exercises; the
# completeness test below keeps this in step with the class.
EXERCISED = {
    "T", "add", "astype", "asum", "buffer", "canonical_axis", "capacity", "channels", "clear", "clear_object",
    "clone", "copy", "copy_from", "copy_to", "count", "data", "data_at", "desc", "diff", "diff_at", "dim", "dtype",
    "engine", "fill", "fill_object", "from_numpy", "full", "geometrical_size", "get_buffer", "has_equal_dims", "head",
    "height", "held_buffers", "image2d", "image3d", "is_dense", "is_view", "layout", "legacy_offset", "legacy_shape",
    "list", "load_caffe_into", "matrix", "may_share_memory", "nbytes", "ndim", "num", "numpy", "object_count",
    "object_size", "offset", "owner", "parent", "parent_pos", "permute_from", "permuted", "raw", "raw_count", "region",
    "reinterpret", "release_buffer", "reorder_from", "reshape", "same_shape", "save_caffe", "save_neoml", "save_npy",
    "scale", "set_parent_pos", "shape", "shape_equals", "shape_string", "share_data", "share_diff", "shares_memory",
    "share_memory", "is_shared", "shared_fd",
    "shift_parent_pos", "size", "slice", "sumsq", "tensor", "to_caffe_bytes", "to_neoml_bytes", "to_npy_bytes",
    "tolist", "transpose", "transpose_from", "transposed", "update", "vector", "width", "window", "with_desc", "writeable",
}

CHILD = r'''
import faulthandler, os, random, sys, tempfile, threading, time
import numpy as np, blobcore as bc
faulthandler.dump_traceback_later(100, exit=True)
sys.setswitchinterval(1e-6)
tmp = tempfile.mkdtemp()
A = bc.Blob.tensor([64, 256]); A.fill(1.0)          # 64 KiB: large ops release the GIL
W = A.window(4)
V = A[:, ::2]                                         # strided view
N = bc.asblob(np.asarray(A))                          # the same memory through NumPy
D = bc.from_dlpack(A)                                 # ... and through DLPack
S = bc.Blob.tensor([4, 8]); S.fill(2.0)
R = bc.Blob.tensor([8, 8])
G = [bc.Blob.from_numpy(np.zeros(8, np.float32), copy=False)]   # grows: its NumPy memory is released
X, Y = bc.Blob.tensor([4, 8]), bc.Blob.tensor([4, 8])
caffe = os.path.join(tmp, "a.caffe"); S.save_caffe(caffe)
desc = bc.TensorDesc(bc.float32, [1, 16, 2, 2], bc.Layout.NHWC)
H = bc.Blob.tensor([16, 16])                          # moved into shared memory by one thread, used by all
from multiprocessing.reduction import ForkingPickler

def shared_round_trip(t):
    fd, off = H.shared_fd()
    try:
        bc.from_shared_fd(fd, [16, 16], offset=off).fill(t)
    finally:
        os.close(fd)

def buf_cycle(b):
    arr = b.get_buffer(0, 4, True)
    arr[0] = arr[0]
    for _ in range(100000):
        try:
            b.release_buffer(arr, True)
            return
        except bc.LifoError:
            time.sleep(0)
    raise AssertionError("buffer never became the top of the stack")

def grow():
    g = bc.Blob.from_numpy(np.zeros(8, np.float32), copy=False)
    G[0] = g
    g.copy_from(A, reshape=True)

import ctypes
_get = ctypes.pythonapi.PyCapsule_GetPointer
_get.restype, _get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
_table = (ctypes.c_void_p * 7).from_address(_get(bc.Blob.__dlpack_c_exchange_api__, b"dlpack_exchange_api"))
_from = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.POINTER(ctypes.c_void_p))(_table[3])
_to = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(ctypes.py_object))(_table[4])

def exchange_round_trip(b):
    """DLPack's C exchange API: export then import, as a C consumer calls it."""
    p, o = ctypes.c_void_p(), ctypes.py_object()
    assert _from(b, ctypes.byref(p)) == 0 and _to(p, ctypes.byref(o)) == 0
    return o.value.shape

def with_buffer(b):
    with b.buffer(0, 4, "r") as arr:
        float(arr[0])

OPS = {
    "T": lambda t: A.T, "add": lambda t: random.choice([lambda: A.add(A), lambda: A.add(N), lambda: V.add(V)])(),
    "astype": lambda t: V.astype(bc.bfloat16), "asum": lambda t: A.asum(), "buffer": lambda t: with_buffer(A),
    "canonical_axis": lambda t: A.canonical_axis(-1), "capacity": lambda t: A.capacity, "channels": lambda t: S.channels,
    "clear": lambda t: R.clear(), "clear_object": lambda t: R.clear_object(0), "clone": lambda t: A.clone(),
    "copy": lambda t: V.copy(),
    "copy_from": lambda t: random.choice([lambda: A.copy_from(N), lambda: V.copy_from(V), lambda: W.copy_from(np.ones((4, 256), np.float32)), lambda: N[1:].copy_from(A[:-1]), grow])(),
    "copy_to": lambda t: A.copy_to(np.empty(16, np.float32)), "count": lambda t: A.count(1), "data": lambda t: bc.Blob.data(2, 2, 3),
    "data_at": lambda t: S.data_at(0), "desc": lambda t: V.desc, "diff": lambda t: S.diff, "diff_at": lambda t: S.diff_at(0),
    "dim": lambda t: A.dim(0), "dtype": lambda t: A.dtype, "engine": lambda t: A.engine,
    "fill": lambda t: random.choice([A, V, W, N, D]).fill(t),
    "fill_object": lambda t: R.fill_object(1, t), "from_numpy": lambda t: bc.Blob.from_numpy(np.asarray(A), copy=False),
    "full": lambda t: bc.Blob.full([3], t), "geometrical_size": lambda t: S.geometrical_size, "get_buffer": lambda t: buf_cycle(S),
    "has_equal_dims": lambda t: A.has_equal_dims(N), "head": lambda t: A.head, "height": lambda t: S.height,
    "held_buffers": lambda t: S.held_buffers, "image2d": lambda t: bc.Blob.image2d(1, 1, 2, 2, 3),
    "image3d": lambda t: bc.Blob.image3d(1, 1, 2, 2, 2, 3), "is_dense": lambda t: V.is_dense, "is_view": lambda t: W.is_view,
    "layout": lambda t: A.layout, "legacy_offset": lambda t: S.legacy_offset(1), "legacy_shape": lambda t: S.legacy_shape(0),
    "list": lambda t: bc.Blob.list(1, 1, 2, 3), "load_caffe_into": lambda t: X.load_caffe_into(caffe),
    "matrix": lambda t: bc.Blob.matrix(2, 2), "may_share_memory": lambda t: V.may_share_memory(W), "nbytes": lambda t: A.nbytes,
    "ndim": lambda t: A.ndim, "num": lambda t: S.num, "numpy": lambda t: float(A.numpy()[0, 0]), "object_count": lambda t: S.object_count,
    "object_size": lambda t: S.object_size, "offset": lambda t: S.offset([1, 1]), "owner": lambda t: W.owner, "parent": lambda t: W.parent,
    "parent_pos": lambda t: W.parent_pos,
    "permute_from": lambda t: random.choice([lambda: R.permute_from(R, [1, 0]), lambda: A.permute_from(N, [0, 1])])(),
    "permuted": lambda t: A.permuted([1, 0]), "raw": lambda t: A.raw(), "raw_count": lambda t: A.raw_count,
    "region": lambda t: A.region([1, 1], [3, 5]), "reinterpret": lambda t: R.reinterpret([8, 8]),
    "release_buffer": lambda t: buf_cycle(X),
    "reorder_from": lambda t: random.choice([lambda: V.reorder_from(V), lambda: A.reorder_from(D)])(),
    "reshape": lambda t: random.choice([lambda: A.reshape([64, 256]), lambda: Y.reshape([4, 8])])(),
    "same_shape": lambda t: A.same_shape(N), "save_caffe": lambda t: S.save_caffe(os.path.join(tmp, f"s{t}.caffe")),
    "save_neoml": lambda t: S.save_neoml(os.path.join(tmp, f"s{t}.neoml")), "save_npy": lambda t: A.save_npy(os.path.join(tmp, f"a{t}.npy")),
    "scale": lambda t: random.choice([A, V, N]).scale(1.0), "set_parent_pos": lambda t: W.set_parent_pos(t % 8),
    "shape": lambda t: A.shape, "shape_equals": lambda t: S.shape_equals(S.to_caffe_bytes()), "shape_string": lambda t: A.shape_string(),
    "share_data": lambda t: X.share_data(Y), "share_diff": lambda t: X.share_diff(Y), "shares_memory": lambda t: V.shares_memory(N),
    "shift_parent_pos": lambda t: W.shift_parent_pos(random.choice([-1, 1])), "size": lambda t: A.size, "slice": lambda t: A.slice([2]),
    "sumsq": lambda t: V.sumsq(), "tensor": lambda t: bc.Blob.tensor([2, 2]), "to_caffe_bytes": lambda t: V.copy().to_caffe_bytes(),
    "to_neoml_bytes": lambda t: S.to_neoml_bytes(), "to_npy_bytes": lambda t: A.to_npy_bytes(), "tolist": lambda t: S.tolist(),
    "transpose": lambda t: A.transpose(), "transpose_from": lambda t: R.transpose_from(R, 0, 1), "transposed": lambda t: A.transposed(0, 1),
    "update": lambda t: S.update(), "vector": lambda t: bc.Blob.vector(3), "width": lambda t: S.width,
    "window": lambda t: A.window(2), "with_desc": lambda t: bc.Blob.with_desc(desc), "writeable": lambda t: A.writeable,
    # module functions and protocols
    "merge": lambda t: bc.merge([W, W], 0), "split": lambda t: bc.split(A, [32, 32], 0),
    "merge_into": lambda t: bc.merge_into([R[:4], R[4:]], R, 0), "getitem": lambda t: A[1, ::3],
    "setitem": lambda t: A.__setitem__((slice(0, 2), 0), t),
    "iter": lambda t: next(iter(A)), "dlpack": lambda t: np.from_dlpack(V, device="cpu") if V.__dlpack_device__()[0] == 2 else np.from_dlpack(V), "asarray": lambda t: np.asarray(N).sum(),
    # one element at a time (issue 29), on the same memory through other doors
    "getelement": lambda t: random.choice([A, N, D])[t % 64, -1], "getelement_view": lambda t: V[1, t % 128],
    "setelement": lambda t: random.choice([A, N, D, V]).__setitem__((t % 64, 3), float(t)),
    "fillsmall": lambda t: random.choice([A, V]).__setitem__((t % 64, slice(0, 4)), t),
    "exchange": lambda t: exchange_round_trip(random.choice([A, V, W])),
    # shared memory (issue 31): moving, descriptors, and the multiprocessing reducer in one process
    "share_memory": lambda t: random.choice([H, H[::2], A]).share_memory(), "is_shared": lambda t: H.is_shared,
    "shared_fd": shared_round_trip, "mp_pickle": lambda t: ForkingPickler.loads(ForkingPickler.dumps(H[t % 16])).fill(t),
}
names = sorted(OPS)
errors = []

def worker(t, rounds):
    rng = random.Random(t)
    name = ""
    try:
        for _ in range(rounds):
            name = rng.choice(names)
            try:
                OPS[name](t)
            except bc.BlobError:
                pass
    except Exception as e:
        errors.append(f"{name}: {type(e).__name__}: {e}")

for run in range(int(sys.argv[1])):
    threads = [threading.Thread(target=worker, args=(t + 8 * run, 500)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(60)
        assert not th.is_alive(), f"run {run}: a thread hung"
    assert not errors, errors[:5]
print("OK", len(OPS))
'''


def test_every_public_name_is_exercised():
    public = {n for n in dir(bc.Blob) if not n.startswith("_")}
    assert public == EXERCISED, (public - EXERCISED, EXERCISED - public)
    table = CHILD.split("OPS = {", 1)[1].split("\n}\n", 1)[0]
    keys = {line.split('"')[i] for line in table.splitlines() for i in range(1, len(line.split('"')), 2)}
    assert EXERCISED <= keys, EXERCISED - keys


def test_eight_threads_every_method_twenty_runs():
    r = subprocess.run([sys.executable, "-c", CHILD, "20"], capture_output=True, text=True, timeout=110)
    assert r.returncode == 0 and r.stdout.startswith("OK"), r.stdout + r.stderr[-4000:]
