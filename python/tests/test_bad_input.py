"""The bad-input matrix of the Python API: every row is one bad call with
the exception class it must raise and words its message must contain; after
every row the fixture blobs are exactly as before (shape, dtype, data, held
buffers). The Rust (blobcore/tests/bad_input.rs) and C
(tests/c/bad_input.c) matrices do the same through their interfaces."""

import numpy as np
import pytest

import blobcore as bc


class Fx:
    """The blobs every row may touch."""

    def __init__(self):
        self.a = bc.Blob.from_numpy(np.arange(6, dtype=np.float32).reshape(2, 3))
        self.b = bc.Blob.from_numpy(np.arange(10, 16, dtype=np.int32).reshape(2, 3))
        self.c = bc.Blob.from_numpy(np.full((3, 2), 6, np.float32))
        self.v = bc.Blob.from_numpy(np.ones(10, np.float32))
        self.w = self.a.window(1)
        self.l = bc.Blob.from_numpy(np.full(4, 7, np.float32))
        self.held = self.l.get_buffer(0, 2, True)
        t = bc.TensorDesc(bc.float32, [1, 8, 2, 2], bc.BlockingDesc([1, 1, 2, 2, 8], [0, 1, 2, 3, 1]))
        self.blk = bc.Blob.with_desc(t)

    def digest(self):
        return [
            (x.shape, str(x.dtype), x.to_npy_bytes(), x.held_buffers)
            for x in [self.a, self.b, self.c, self.v, self.w, self.l, self.blk]
        ]


NUMPY_NPY = bc.Blob.from_numpy(np.arange(6, dtype=np.float32)).to_npy_bytes()
READ_ONLY = np.zeros(3, np.float32)
READ_ONLY.setflags(write=False)
HOSTILE_NPY = b"\x93NUMPY\x01\x00\x46\x00{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776,), }"

def npy_header(shape: str) -> bytes:
    """A .npy file of float32 with this shape and no data."""
    h = "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }" % shape
    h = h + " " * (118 - len(h)) + "\n"
    return b"\x93NUMPY\x01\x00" + len(h).to_bytes(2, "little") + h.encode()


READ_ONLY = np.arange(3, dtype=np.float32)
READ_ONLY.flags.writeable = False


def _exchange_entry(index, proto):
    import ctypes

    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    table = (ctypes.c_void_p * 7).from_address(get(bc.Blob.__dlpack_c_exchange_api__, b"dlpack_exchange_api"))
    return proto(table[index])


def exchange_from_py(obj):
    import ctypes

    f = _exchange_entry(3, ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.POINTER(ctypes.c_void_p)))
    return f(obj, ctypes.byref(ctypes.c_void_p()))


def exchange_to_py(tensor):
    import ctypes

    f = _exchange_entry(4, ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(ctypes.py_object)))
    return f(tensor, ctypes.byref(ctypes.py_object()))


def _with_memfd(f):
    """Calls f with an unsealed memory file of 64 bytes."""
    import os

    fd = os.memfd_create("bad")
    os.ftruncate(fd, 64)
    try:
        return f(fd)
    finally:
        os.close(fd)


def _with_shared(f):
    """Calls f with the descriptor of a shared float32 blob of 4 elements."""
    import os

    b = bc.Blob.tensor([4])
    b.share_memory()
    fd, _ = b.shared_fd()
    try:
        return f(fd)
    finally:
        os.close(fd)


def _lent(make, op):
    """Calls op on a blob over a NumPy array's memory (``make(a)``: asblob,
    from_dlpack) and checks, whatever op did, that the blob still writes
    that memory and has its dims."""
    a = np.arange(4, dtype=np.float32)
    b = make(a)
    try:
        return op(b)
    finally:
        assert b.shape == (4,) and not b.is_shared
        b.fill(9.0)
        assert (a == 9.0).all(), "the blob left the memory it shares"


def _with_overlapping_handle(f):
    """Calls f with a shared blob's descriptor and the layout bytes of its
    reversed view, edited so that every element is at one place (stride 0)."""
    import os

    b = bc.Blob.tensor([1000])
    b.share_memory()
    fd, layout = b[::-1]._shared_handle()
    layout = layout[:-24] + bytes(8) + layout[-16:-8] + bytes(8)
    try:
        return f(fd, layout)
    finally:
        os.close(fd)


ROWS = [
    # shapes and dtypes at creation
    (lambda f: bc.Blob.tensor([-1, 2]), bc.ShapeError, "negative"),
    (lambda f: bc.Blob.tensor([1] * 33), bc.ShapeError, "rank 33"),
    (lambda f: bc.Blob.tensor([1] * 40), bc.ShapeError, "rank 40"),
    (lambda f: bc.Blob.tensor([2**40, 2**40]), bc.ShapeError, "overflow"),
    (lambda f: bc.Blob.tensor([2**62], dtype=bc.float64), bc.ShapeError, ""),
    (lambda f: bc.Blob.tensor([2**64]), OverflowError, ""),
    (lambda f: bc.Blob.vector(-3), bc.ShapeError, "negative"),
    (lambda f: bc.Blob.matrix(2, -1), bc.ShapeError, "negative"),
    (lambda f: bc.Blob.data(1, -2, 3), bc.ShapeError, "negative"),
    (lambda f: bc.Blob.list(1, 1, -1, 3), bc.ShapeError, "negative"),
    (lambda f: bc.Blob.image2d(1, 1, -4, 4, 3), bc.ShapeError, "negative"),
    (lambda f: bc.Blob.image3d(1, 1, 2, 2, -2, 3), bc.ShapeError, "negative"),
    (lambda f: bc.Blob.tensor([2], dtype="complex64"), bc.DTypeError, "complex64"),
    (lambda f: bc.Blob.tensor([2], dtype="U4"), bc.DTypeError, ""),
    (lambda f: bc.Blob.tensor([2], dtype=object()), bc.DTypeError, "dtype"),
    (lambda f: bc.Blob.tensor("ab"), Exception, ""),
    (lambda f: bc.Blob.from_numpy(np.zeros(3, np.complex64)), bc.DTypeError, ""),
    (lambda f: bc.Blob.from_numpy(np.zeros(3, np.float128)), bc.DTypeError, ""),
    (lambda f: bc.Blob.from_numpy(np.zeros(3, "datetime64[s]")), bc.DTypeError, ""),
    # Arithmetic on the storage-only dtypes (bool, float8) names astype.
    (lambda f: (lambda x: x.add(x))(bc.Blob.full([3], 1, bc.bool_)), bc.DTypeError, "astype"),
    (lambda f: bc.Blob.full([3], 1.5, bc.float8_e4m3fn).scale(2.0), bc.DTypeError, "astype"),
    (lambda f: bc.Blob.full([3], 1.5, bc.float8_e5m2).update(), bc.DTypeError, "astype"),
    (lambda f: bc.Blob.full([3], 2.0, bc.float8_e8m0fnu).asum(), bc.DTypeError, "astype"),
    (lambda f: bc.Blob.full([3], 1, bc.bool_).sumsq(), bc.DTypeError, "astype"),
    (lambda f: bc.Blob.full([2], 1, bc.uint16).fill_object(5, 1), bc.OutOfRangeError, ""),
    # Values convert as NumPy's a.fill converts them, errors included.
    (lambda f: bc.Blob.full([2], 70000, bc.uint16), OverflowError, "uint16"),
    (lambda f: bc.Blob.full([2], -1, bc.uint64), OverflowError, "uint64"),
    (lambda f: f.b.fill(2**31), OverflowError, "int32"),
    (lambda f: f.b.fill(-(2**31) - 1), OverflowError, "int32"),
    (lambda f: f.b.fill(1e10), OverflowError, ""),
    # Integers into float dtypes round once from the integer itself; into
    # float64 one past its range is NumPy's OverflowError, nothing stored.
    (lambda f: bc.Blob.full([2], 2**1100, bc.float64), OverflowError, ""),
    (lambda f: bc.Blob.full([2], 1.0, bc.float64).fill(-(2**1100)), OverflowError, ""),
    (lambda f: f.b.fill(float("nan")), ValueError, "nan"),
    (lambda f: f.b.fill(float("-inf")), OverflowError, "infinity"),
    (lambda f: f.b.T.fill(2**40), OverflowError, "int32"),
    (lambda f: f.b.fill_object(0, 2**31), OverflowError, "int32"),
    (lambda f: f.b.fill_object(0, float("nan")), ValueError, "nan"),
    (lambda f: f.b.fill_object(6, 1), bc.OutOfRangeError, "object 6"),
    (lambda f: f.b.fill("x"), ValueError, "invalid literal"),
    (lambda f: f.a.fill("x"), ValueError, "could not convert"),
    (lambda f: f.a.fill([1, 2]), ValueError, "sequence"),
    (lambda f: f.a.fill(object()), TypeError, ""),
    (lambda f: f.blk.fill("x"), ValueError, ""),
    (lambda f: bc.Blob.full([2], 1, bc.uint8).fill(-1), OverflowError, "uint8"),
    (lambda f: bc.Blob.full([2], 1, bc.uint64).fill(2**64), OverflowError, ""),
    (lambda f: bc.Blob.full([2], 1, bc.int64).fill(np.uint64(2**64 - 1)), OverflowError, ""),
    (lambda f: bc.Blob.tensor([2], bc.float8_e5m2).save_npy("/tmp/never.npy"), bc.DTypeError, "float8_e5m2"),
    (lambda f: bc.Blob.tensor([2], bc.uint32).to_neoml_bytes(), bc.DTypeError, "float32 or int32"),
    (lambda f: bc.save_caffemodel("/tmp/never.caffemodel", {"m": [bc.Blob.tensor([2], bc.bool_)]}), bc.DTypeError, "float32 or float64"),
    (lambda f: bc.Blob.tensor([2], dtype="float8_e4m3fnuz"), bc.DTypeError, "float8_e4m3fnuz"),
    (lambda f: bc.Blob.tensor([2], dtype="int4"), bc.DTypeError, ""),
    (lambda f: bc.Blob.from_numpy(np.zeros((4, 4), np.float32)[:, ::2], copy=False), bc.InvalidArgumentError, "contiguous"),
    (lambda f: bc.Blob.from_numpy(READ_ONLY, copy=False).fill(1), bc.ReadOnlyError, "read-only"),
    (lambda f: bc.Blob.from_numpy(READ_ONLY, copy=False).__setitem__(0, 1), bc.ReadOnlyError, "read-only"),
    (lambda f: bc.Blob.from_numpy(READ_ONLY, copy=False).copy_from(np.ones(3, np.float32)), bc.ReadOnlyError, "read-only"),
    (lambda f: bc.Blob.from_numpy(READ_ONLY, copy=False)[1:].fill(1), bc.ReadOnlyError, "read-only"),
    # Assignment through keys inside blocks (a dense copy in the core):
    # NumPy's broadcast and conversion errors, nothing changed.
    (lambda f: f.blk.__setitem__((slice(None), slice(1, None)), np.zeros((5, 5), np.float32)), ValueError, "broadcast"),
    (lambda f: f.blk.__setitem__((slice(None), slice(1, None)), "x"), ValueError, ""),
    (lambda f: f.blk.__setitem__((slice(None), slice(1, None), 9), 1.0), IndexError, ""),
    # Writability is judged before the value, as NumPy judges it.
    (lambda f: bc.Blob.from_numpy(READ_ONLY, copy=False).fill("x"), bc.ReadOnlyError, "read-only"),
    (lambda f: bc.asblob(np.frombuffer(b"abcd", np.uint8)).fill(-1), bc.ReadOnlyError, "read-only"),
    (lambda f: bc.asblob(np.frombuffer(b"abcd", np.uint8)).fill_object(0, 2**70), bc.ReadOnlyError, "read-only"),
    (lambda f: bc.Blob.from_numpy(READ_ONLY, copy=False).fill_object(0, 2.0), bc.ReadOnlyError, "read-only"),
    # NumPy indexing: bad keys raise as NumPy does and change nothing
    (lambda f: f.a[2], IndexError, "out of bounds for axis 0 with size 2"),
    (lambda f: f.a[:, -4], IndexError, "out of bounds for axis 1 with size 3"),
    (lambda f: f.a[0, 0, 0], IndexError, "too many indices"),
    (lambda f: f.a[..., ...], IndexError, "single ellipsis"),
    (lambda f: f.a["x"], IndexError, "only integers, slices"),
    (lambda f: f.a[1.5], IndexError, "only integers, slices"),
    (lambda f: f.a[::0], ValueError, "step cannot be zero"),
    (lambda f: f.a[1:2:"a"], TypeError, "slice indices must be integers"),
    (lambda f: f.a[np.array([5])], IndexError, "out of bounds"),
    (lambda f: f.a.__setitem__(2, 1.0), IndexError, "out of bounds"),
    (lambda f: f.a.__setitem__((0, slice(None)), [1, 2, 3, 4]), ValueError, "broadcast"),
    (lambda f: f.blk[:, 1:], bc.UnsupportedError, "inside its blocks"),
    (lambda f: f.blk[:, ::-1], bc.UnsupportedError, "inside its blocks"),
    (lambda f: f.a.transpose(0, 0), bc.InvalidArgumentError, "permutation"),
    (lambda f: f.a.transpose(0, 2), bc.OutOfRangeError, "out of range"),
    (lambda f: f.a.astype("complex64"), bc.DTypeError, "complex64"),
    (lambda f: f.a.__array__(np.float64, copy=False), ValueError, "avoid copy"),
    (lambda f: bc.from_dlpack([1.0]), TypeError, "no __dlpack__"),
    (lambda f: bc.from_dlpack(f.a, device="cuda", engine=bc.Engine.cpu()), ValueError, "device"),
    (lambda f: f.blk.__dlpack__(copy=False), BufferError, "blocked"),
    (lambda f: f.blk.__dlpack__(max_version=(1, 1), copy=False), BufferError, "blocked"),
    (lambda f: bc.from_dlpack(np.arange(3, dtype=np.complex64)), bc.DTypeError, "no blobcore dtype"),
    (lambda f: bc.from_dlpack(np.arange(6.0).reshape(2, 3).T, copy=False), BufferError, "without a copy"),
    # axes, indices, named dims
    (lambda f: f.a.dim(2), bc.OutOfRangeError, "axis"),
    (lambda f: f.a.dim(-3), bc.OutOfRangeError, "axis"),
    (lambda f: f.a.canonical_axis(-3), bc.OutOfRangeError, "axis"),
    (lambda f: f.a.canonical_axis(5), bc.OutOfRangeError, "axis"),
    (lambda f: f.a.count(3), bc.OutOfRangeError, ""),
    (lambda f: f.a.count(2, 1), bc.OutOfRangeError, ""),
    (lambda f: f.a.offset([2]), bc.OutOfRangeError, ""),
    (lambda f: f.a.offset([-1]), bc.OutOfRangeError, "negative"),
    (lambda f: f.a.offset([0, 0, 0]), bc.OutOfRangeError, ""),
    (lambda f: bc.Blob.tensor([1] * 8).object_count, bc.ShapeError, "rank"),
    (lambda f: bc.Blob.tensor([1] * 5).num, bc.ShapeError, ""),
    # reshape and reinterpret
    (lambda f: f.a.reshape([-1]), bc.ShapeError, "negative"),
    (lambda f: f.a.reshape([1] * 33), bc.ShapeError, "rank 33"),
    (lambda f: f.a.reshape([2**40, 2**40]), bc.ShapeError, "overflow"),
    (lambda f: f.a.reshape([4, 4]), bc.BusyError, ""),
    (lambda f: f.l.reshape([100]), bc.BusyError, ""),
    (lambda f: f.a.reinterpret([5]), bc.ShapeError, "count"),
    (lambda f: f.a.reinterpret([7]), bc.ShapeError, ""),
    # copies and arithmetic
    (lambda f: f.a.copy_from(f.b), bc.DTypeError, "dtypes differ"),
    (lambda f: f.a.copy_from(f.c), bc.ShapeError, "dims differ"),
    (lambda f: f.a.copy_from(np.zeros(5)), bc.ShapeError, "flat sequence of 6"),
    (lambda f: f.a.copy_from([[1, 2], [3, 4], [5, 6]]), bc.ShapeError, "dims [3, 2]"),
    (lambda f: f.a.copy_from(np.zeros((1, 6))), bc.ShapeError, "the blob has [2, 3]"),
    (lambda f: f.a.copy_from(1.0), bc.ShapeError, "dims []"),
    (lambda f: f.a.copy_from(f.v), bc.ShapeError, "dims differ"),
    (lambda f: f.a.copy_from(f.b, reshape=True), bc.DTypeError, "dtypes differ"),
    (lambda f: f.a.copy_from([1, 2, 3, 4, 5, 6], copy_diff=True), TypeError, "blob source"),
    # memory-mapped .npy
    (lambda f: bc.load_npy("x.npy", mmap_mode="w"), bc.InvalidArgumentError, "mmap_mode"),
    (lambda f: bc.load_npy("/nonexistent/x.npy", mmap_mode="r"), bc.IoError, "nonexistent"),
    (lambda f: bc.load_npy("x.npy", mmap_mode=1), TypeError, ""),
    # weight files (safetensors, .caffemodel)
    (lambda f: bc.load_safetensors("/nonexistent/x.safetensors"), bc.IoError, "nonexistent"),
    (lambda f: bc.load_safetensors("/nonexistent/x.safetensors", mmap=False), bc.IoError, "nonexistent"),
    (lambda f: bc.load_safetensors(3), TypeError, ""),
    (lambda f: bc.safetensors_metadata("/nonexistent/x.safetensors"), bc.IoError, "nonexistent"),
    (lambda f: bc.save_safetensors("/tmp/never.safetensors", [f.a]), bc.InvalidArgumentError, "must be"),
    (lambda f: bc.save_safetensors("/tmp/never.safetensors", 3), bc.InvalidArgumentError, "mapping"),
    (lambda f: bc.save_safetensors("/tmp/never.safetensors", {1: f.a}), bc.InvalidArgumentError, "must be str"),
    (lambda f: bc.save_safetensors("/tmp/never.safetensors", {"a": object()}), bc.InvalidArgumentError, "not a blob"),
    (lambda f: bc.save_safetensors("/tmp/never.safetensors", {"__metadata__": f.a}), bc.InvalidArgumentError, "reserved"),
    (lambda f: bc.load_safetensors("/nonexistent/model.safetensors.index.json"), bc.IoError, "nonexistent"),
    (lambda f: bc.load_gguf("/nonexistent/x.gguf"), bc.IoError, "nonexistent"),
    (lambda f: bc.load_gguf("/nonexistent/x.gguf", mmap=False), bc.IoError, "nonexistent"),
    (lambda f: bc.gguf_metadata("/nonexistent/x.gguf"), bc.IoError, "nonexistent"),
    (lambda f: bc.gguf_tensor_info("/nonexistent/x.gguf"), bc.IoError, "nonexistent"),
    (lambda f: bc.save_gguf("/tmp/never.gguf", {"a": f.a}, metadata={"k": object()}), bc.InvalidArgumentError, "cannot store"),
    (lambda f: bc.save_gguf("/tmp/never.gguf", {1: f.a}), bc.InvalidArgumentError, "must be str"),
    (lambda f: bc.save_gguf("/tmp/never.gguf", 3), bc.InvalidArgumentError, "mapping"),
    (lambda f: bc.save_gguf("/nonexistent/dir/x.gguf", {"a": f.a}), bc.IoError, "nonexistent"),
    (lambda f: bc.safetensors_metadata("/nonexistent/model.safetensors.index.json"), bc.IoError, "nonexistent"),
    (lambda f: bc.save_safetensors("/tmp/never.index.json", {"a": f.a}, max_shard_size="5 parsecs"), bc.InvalidArgumentError, "5GB"),
    (lambda f: bc.save_safetensors("/tmp/never.index.json", {"a": f.a}, max_shard_size=-1), bc.InvalidArgumentError, "positive int"),
    (lambda f: bc.save_safetensors("/tmp/never.index.json", {"a": f.a}, max_shard_size=0), bc.InvalidArgumentError, "at least one byte"),
    (lambda f: bc.save_safetensors("/tmp/never.safetensors", {"a": f.a}, max_shard_size=8), bc.InvalidArgumentError, ".index.json"),
    (lambda f: bc.save_safetensors("/tmp/never.index.json", {"__metadata__": f.a}, max_shard_size=8), bc.InvalidArgumentError, "reserved"),
    (lambda f: bc.save_safetensors("/tmp/never.safetensors", {"a": f.a}, metadata={"k": 1}), bc.InvalidArgumentError, "must be str"),
    (lambda f: bc.save_safetensors("/nonexistent/dir/x.safetensors", {"a": f.a}), bc.IoError, ""),
    (lambda f: bc.load_caffemodel("/nonexistent/x.caffemodel"), bc.IoError, "nonexistent"),
    (lambda f: bc.load_caffemodel("/nonexistent/x.caffemodel", progress=print), bc.IoError, "nonexistent"),
    (lambda f: bc.load_safetensors("/nonexistent/x.safetensors", mmap=False, progress=print), bc.IoError, "nonexistent"),
    (lambda f: bc.load_gguf("/nonexistent/x.gguf", mmap=False, progress=print), bc.IoError, "nonexistent"),
    (lambda f: bc.load_gguf("/nonexistent/x.gguf", progress="x"), TypeError, "callable"),
    (lambda f: bc.save_caffemodel("/tmp/never.caffemodel", {"i": [f.b]}), bc.DTypeError, "float32 or float64"),
    (lambda f: bc.save_caffemodel("/tmp/never.caffemodel", {"i": 3}), bc.InvalidArgumentError, "list of blobs"),
    (lambda f: bc.save_caffemodel("/tmp/never.caffemodel", {"i": [f.a]}, types={"i": 4}), bc.InvalidArgumentError, "must be str"),
    # shared memory (issue 31)
    (lambda f: f.a.share_memory(), bc.BusyError, "view"),
    (lambda f: f.w.share_memory(), bc.BusyError, "view"),
    (lambda f: f.l.share_memory(), bc.BusyError, "buffer"),
    # writable memory shared with its owner stays the owner's
    (lambda f: _lent(bc.asblob, lambda b: b.share_memory()), bc.BusyError, "lent by its owner"),
    (lambda f: _lent(bc.from_dlpack, lambda b: b.share_memory()), bc.BusyError, "lent by its owner"),
    (lambda f: _lent(bc.asblob, lambda b: b.reshape([5])), bc.BusyError, "lent by its owner"),
    (lambda f: _lent(bc.from_dlpack, lambda b: b.reshape([2, 3])), bc.BusyError, "lent by its owner"),
    (lambda f: f.a.shared_fd(), bc.InvalidArgumentError, "share_memory"),
    (lambda f: f.a._shared_handle(), bc.InvalidArgumentError, "share_memory"),
    (lambda f: bc.from_shared_fd(-1, [4]), bc.InvalidArgumentError, "not an open file"),
    (lambda f: bc.from_shared_fd(10**6, [4]), bc.InvalidArgumentError, "not an open file"),
    (lambda f: bc.from_shared_fd(0, [-4]), bc.ShapeError, ""),
    (lambda f: bc.from_shared_fd(0, [4], dtype="complex64"), bc.DTypeError, ""),
    (lambda f: bc.from_shared_fd("3", [4]), TypeError, ""),
    (lambda f: bc.from_shared_fd(0, [4], offset=-1), OverflowError, ""),
    (lambda f: _with_memfd(lambda fd: bc.from_shared_fd(fd, [4])), bc.InvalidArgumentError, "F_SEAL_SHRINK"),
    (lambda f: _with_shared(lambda fd: bc.from_shared_fd(fd, [5])), bc.InvalidArgumentError, "holds 16 bytes"),
    (lambda f: _with_shared(lambda fd: bc.from_shared_fd(fd, [1], offset=3)), bc.InvalidArgumentError, "multiple"),
    (lambda f: _with_shared(lambda fd: bc.Blob._from_shared_handle(fd, b"")), bc.FormatError, "cut short"),
    (lambda f: _with_shared(lambda fd: bc.Blob._from_shared_handle(fd, b"BCSH\x09" + bytes(20))), bc.FormatError, "another version"),
    (lambda f: bc.Blob._from_shared_handle(-1, b""), bc.InvalidArgumentError, "not an open file"),
    (lambda f: _with_overlapping_handle(bc.Blob._from_shared_handle), bc.FormatError, "two elements in one place"),
    # engine counters
    (lambda f: bc.Engine.cpu().stats(1), TypeError, ""),
    (lambda f: bc.Engine.cpu().reset_stats(None), TypeError, ""),
    # NeoML archive forms
    (lambda f: f.a.to_neoml_bytes(form="pickle"), bc.InvalidArgumentError, "neither"),
    (lambda f: f.a.to_neoml_bytes(form=None), TypeError, ""),
    (lambda f: bc.Blob.tensor([2], bc.float64).to_neoml_bytes(form="serialize"), bc.DTypeError, "float32 or int32"),
    (lambda f: bc.from_neoml_bytes(b"\x02\xff"), bc.FormatError, "neither an isNull byte"),
    (lambda f: bc.from_neoml_bytes(b"\xff\xd0\x07"), bc.FormatError, "truncated"),
    # raw memory of layouts
    (lambda f: f.blk.get_buffer(0, 65, True), bc.OutOfRangeError, "exceeds"),
    (lambda f: f.blk.buffer(60, 5, "r").__enter__(), bc.OutOfRangeError, "exceeds"),
    (lambda f: f.a.T.raw(), bc.UnsupportedError, "contiguous span"),
    (lambda f: f.a[:, 1:].buffer(0, 1, "r").__enter__(), bc.UnsupportedError, "contiguous span"),
    (lambda f: f.a.region([0, 1], [2, 3]).raw_count, bc.UnsupportedError, "contiguous span"),
    # OpenVINO BlockingDesc(dims, layout)
    (lambda f: bc.BlockingDesc([2, 3], bc.Layout.NCHW), bc.ShapeError, "needs rank 4"),
    (lambda f: bc.BlockingDesc([2, 3], bc.Layout.NC, offset=2), bc.InvalidArgumentError, "takes no offset"),
    (lambda f: bc.BlockingDesc([-2, 3], bc.Layout.NC), bc.OutOfRangeError, "negative"),
    (lambda f: bc.BlockingDesc([1] * 16, [0] * 16, 0, [2**62] * 16, [2**62] * 16), bc.ShapeError, "overflows"),
    (lambda f: bc.BlockingDesc([2, 3], "NC"), TypeError, ""),
    # Serrano's construction
    (lambda f: bc.Blob.full([2], 256, bc.uint8), OverflowError, "out of bounds for uint8"),
    (lambda f: bc.Blob.full([2], float("nan"), bc.int32), ValueError, "nan"),
    (lambda f: bc.Blob.full([-2], 1.0), bc.ShapeError, ""),
    (lambda f: bc.Blob.full([2], "x"), ValueError, "could not convert"),
    (lambda f: bc.Blob.full([2], 1, "complex128"), bc.DTypeError, ""),
    (lambda f: bc.Blob.from_numpy([[1, 2], [3]], dtype=bc.int32), ValueError, ""),
    (lambda f: bc.Blob.from_numpy(np.zeros(2, np.int32), copy=False, dtype=bc.float32), bc.InvalidArgumentError, "cannot share"),
    (lambda f: bc.Blob.from_numpy([1, 2], dtype="complex64"), bc.DTypeError, ""),
    (lambda f: bc.asblob(f.a, shape=[4]), bc.ShapeError, ""),
    (lambda f: bc.asblob([1, 2, 3], shape=[-3]), bc.ShapeError, ""),
    (lambda f: bc.asblob([1, 2, 3], dtype="complex64"), bc.DTypeError, ""),
    (lambda f: bc.asblob(np.zeros(2, np.complex64)), bc.DTypeError, ""),
    (lambda f: f.a.same_shape(None), TypeError, ""),
    # Overlap queries, shapes, pickles and keys (issue 26).
    (lambda f: f.a.shares_memory(None), TypeError, ""),
    (lambda f: f.a.may_share_memory(np.zeros(2)), TypeError, ""),
    (lambda f: bc.Blob._from_state([2**40], "float32", b""), bc.FormatError, "bytes received"),
    (lambda f: bc.Blob._from_state([2], "float32", b"\0" * 7), bc.FormatError, "bytes received"),
    (lambda f: bc.Blob.tensor([2**62, 2**62, 0]), bc.ShapeError, "too large"),
    (lambda f: bc.Blob.tensor([0, 2**62, 2**62]), bc.ShapeError, "too large"),
    (lambda f: f.a[range(5)], IndexError, ""),
    (lambda f: f.a[0, (0, 7)], IndexError, ""),
    (lambda f: f.a["x"], IndexError, "only integers"),
    (lambda f: bc.from_npy_bytes(npy_header("(0, 9223372036854775807, 9223372036854775807)")), bc.FormatError, "bad shape"),
    (lambda f: bc.from_npy_bytes(npy_header("(4611686018427387904, 0)")), bc.FormatError, "too large"),
    # typed prefix copies (NeoML CopyTo)
    (lambda f: f.a.copy_to(np.zeros(2, np.int32)), bc.DTypeError, "holds float32"),
    (lambda f: f.a.copy_to(np.zeros(7, np.float32)), bc.InvalidArgumentError, "only 6"),
    (lambda f: f.a.copy_to(READ_ONLY), bc.ReadOnlyError, "writable destination"),
    (lambda f: f.a.copy_to(np.zeros((4, 4), np.float32)[:, 0]), bc.InvalidArgumentError, "C-contiguous"),
    (lambda f: f.a.copy_to(b"abcd"), bc.ReadOnlyError, "writable destination"),
    (lambda f: f.a.copy_to(None), TypeError, ""),
    (lambda f: f.blk.__array__(copy=False), ValueError, "blocked layout"),
    # NeoML named dims (bc.Dim) on the padded 7 dims
    (lambda f: bc.merge([f.a, f.v], bc.Dim.CHANNELS), bc.ShapeError, "differ only"),
    (lambda f: bc.merge_into([f.a], bc.Blob.tensor([2, 3, 1, 1, 1, 1, 2]), bc.Dim.CHANNELS), bc.ShapeError, "add up"),
    (lambda f: bc.merge_into([f.a, f.a], f.b, bc.Dim.CHANNELS), bc.DTypeError, ""),
    (lambda f: bc.split(f.a, 2, bc.Dim.BATCH_WIDTH), bc.ShapeError, "do not divide"),
    (lambda f: bc.split(f.a, [2], bc.Dim.CHANNELS), bc.ShapeError, "do not add up"),
    (lambda f: bc.split_into(f.a, [f.w, f.w], bc.Dim.BATCH_LENGTH), bc.InvalidArgumentError, "destinations 0 and 1 share memory"),
    (lambda f: f.a.transposed(bc.Dim.HEIGHT, 1), bc.InvalidArgumentError, "one of each"),
    (lambda f: f.a.transposed(bc.Dim.HEIGHT, "x"), bc.OutOfRangeError, "bc.Dim"),
    (lambda f: f.a.transpose_from(f.a, bc.Dim.BATCH_LENGTH, bc.Dim.BATCH_WIDTH), bc.ShapeError, "destination"),
    (lambda f: f.a.transpose_from(f.b, bc.Dim.HEIGHT, bc.Dim.WIDTH), bc.DTypeError, "dtypes differ"),
    (lambda f: f.blk.region([0, 1, 0, 0], [1, 3, 2, 2]), bc.UnsupportedError, "inside its blocks"),
    (lambda f: f.a.has_equal_dims(None), TypeError, ""),
    (lambda f: f.a.legacy_shape(4), bc.OutOfRangeError, ""),
    (lambda f: f.a.legacy_offset(0, 3), bc.OutOfRangeError, "legacy dim 3"),
    (lambda f: f.a.legacy_offset(-1), bc.OutOfRangeError, "negative"),
    (lambda f: f.a.data_at(0, 0, 1), bc.OutOfRangeError, "legacy dim 1"),
    (lambda f: f.a.diff_at(2), bc.OutOfRangeError, "legacy dim 2"),
    (lambda f: f.a.data_at("x"), TypeError, ""),
    (lambda f: f.a.data_at([0, 3]), bc.OutOfRangeError, ""),
    (lambda f: f.a.diff_at([2]), bc.OutOfRangeError, ""),
    (lambda f: f.a.data_at([-1]), bc.OutOfRangeError, "negative"),
    (lambda f: bc.Blob.tensor((3, 0)).data_at([0]), bc.OutOfRangeError, "no elements"),
    (lambda f: bc.Blob.tensor((0,)).data_at([]), bc.OutOfRangeError, "no elements"),
    (lambda f: bc.Blob.tensor((3, 0)).diff_at([1]), bc.OutOfRangeError, "no elements"),
    (lambda f: bc.Blob.tensor((3, 0)).T.data_at([]), bc.OutOfRangeError, "no elements"),
    (lambda f: f.a.shape_equals(b"\xff\xff"), bc.FormatError, "not a valid message"),
    (lambda f: f.a.shape_equals("text"), TypeError, ""),
    (lambda f: f.a.legacy_shape(-5), bc.OutOfRangeError, ""),
    (lambda f: f.a.share_data(f.b), bc.DTypeError, ""),
    (lambda f: f.a.share_data(f.v), bc.ShapeError, "equal counts"),
    (lambda f: f.a.share_diff(f.b), bc.DTypeError, ""),
    (lambda f: f.a.share_data(None), TypeError, ""),
    (lambda f: f.a.copy_from("text"), Exception, ""),
    (lambda f: f.a.add(f.b), bc.DTypeError, "dtypes differ"),
    (lambda f: f.a.add(f.c), bc.ShapeError, "dims differ"),
    (lambda f: f.a.add(np.zeros((2, 3))), TypeError, ""),
    (lambda f: f.a.transposed(0, 2), bc.OutOfRangeError, "axis"),
    (lambda f: f.a.transposed(-3, 0), bc.OutOfRangeError, "axis"),
    (lambda f: f.a.transpose_from(f.b, 0, 1), bc.DTypeError, "dtypes differ"),
    (lambda f: f.a.permuted([0, 2]), bc.OutOfRangeError, "axis"),
    (lambda f: f.a.permuted([1, -1]), bc.InvalidArgumentError, "permutation"),
    (lambda f: f.a.permuted([0]), bc.InvalidArgumentError, "permutation"),
    (lambda f: f.a.permuted("ab"), TypeError, ""),
    (lambda f: f.a.permute_from(f.b, [1, 0]), bc.DTypeError, "dtypes differ"),
    (lambda f: f.a.permute_from(f.a, [1, 0]), bc.ShapeError, "destination"),
    (lambda f: f.a.transpose_from(f.v, 0, 1), bc.OutOfRangeError, "axis"),
    (lambda f: f.a.fill_object(6, 1.0), bc.OutOfRangeError, "object"),
    (lambda f: f.a.clear_object(-1), bc.OutOfRangeError, ""),
    (lambda f: f.a.clone(dtype="complex128"), bc.DTypeError, ""),
    # merge and split
    (lambda f: bc.merge([], 0), bc.InvalidArgumentError, "no blobs"),
    (lambda f: bc.merge([f.a, f.b], 0), bc.DTypeError, ""),
    (lambda f: bc.merge([f.a, f.c], 0), bc.ShapeError, ""),
    (lambda f: bc.merge([f.a], 5), bc.OutOfRangeError, "axis"),
    (lambda f: bc.merge_into([f.c, f.c], f.c, 0), bc.ShapeError, "add up"),
    (lambda f: bc.merge_into([f.v], f.a, 0), bc.ShapeError, "rank"),
    (lambda f: bc.split(f.a, 4, 1), bc.ShapeError, ""),
    (lambda f: bc.split(f.a, [1, 1], 1), bc.ShapeError, ""),
    (lambda f: bc.split(f.a, 0, 0), bc.ShapeError, ""),
    (lambda f: bc.split_into(f.a, [], 0), bc.InvalidArgumentError, ""),
    (lambda f: bc.split_into(f.a, [f.w, f.w], 0), bc.InvalidArgumentError, "destinations 0 and 1 share memory"),
    (lambda f: bc.split_into(f.a, [f.b], 0), bc.DTypeError, ""),
    (lambda f: bc.merge_objects([f.v], f.a), bc.ShapeError, ""),
    (lambda f: bc.merge_objects([], f.a), bc.InvalidArgumentError, ""),
    (lambda f: bc.split_objects(f.a, [f.v]), bc.ShapeError, ""),
    # windows, slices, regions
    (lambda f: f.a.window(3), bc.OutOfRangeError, ""),
    (lambda f: f.a.window(-1), (bc.OutOfRangeError, OverflowError), ""),
    (lambda f: f.w.set_parent_pos(2), bc.OutOfRangeError, ""),
    (lambda f: f.w.set_parent_pos(-1), bc.OutOfRangeError, "negative"),
    (lambda f: f.w.shift_parent_pos(5), bc.OutOfRangeError, ""),
    (lambda f: f.w.shift_parent_pos(-(2**63)), bc.OutOfRangeError, ""),
    (lambda f: f.a.set_parent_pos(0), bc.InvalidArgumentError, "window"),
    (lambda f: f.a.slice([2]), bc.OutOfRangeError, ""),
    (lambda f: f.a.slice([0, 0, 0]), bc.OutOfRangeError, ""),
    (lambda f: f.a.region([0, 0], [3, 3]), bc.OutOfRangeError, ""),
    (lambda f: f.a.region([1, 0], [0, 3]), bc.OutOfRangeError, ""),
    (lambda f: f.a.region([0], [1]), bc.OutOfRangeError, "rank 2"),
    # buffers and LIFO
    (lambda f: f.a.get_buffer(-1, 1, False), bc.OutOfRangeError, "negative"),
    (lambda f: f.a.get_buffer(0, 7, False), bc.OutOfRangeError, "exceeds"),
    (lambda f: f.a.get_buffer(5, 2, True), bc.OutOfRangeError, "exceeds"),
    (lambda f: f.a.get_buffer(2**62, 2, True), bc.OutOfRangeError, ""),
    (lambda f: f.a.release_buffer(np.zeros(2, np.float32), False), bc.LifoError, ""),
    (lambda f: f.l.release_buffer(np.zeros(2, np.float32), True), bc.LifoError, "not a buffer"),
    (lambda f: f.v.release_buffer(f.held, True), bc.LifoError, ""),
    (lambda f: f.a.buffer(0, 7).__enter__(), bc.OutOfRangeError, ""),
    (lambda f: f.a.buffer(0, 2, mode="x"), (bc.InvalidArgumentError, ValueError), "mode"),
    # layouts
    (lambda f: bc.TensorDesc(bc.float32, [2, 3], bc.BlockingDesc([2, 3], [0, 2])), bc.ShapeError, "leaves out dim 1"),
    (lambda f: bc.BlockingDesc([1, 2], [0]), bc.ShapeError, ""),
    (lambda f: bc.TensorDesc(bc.float32, [1, 2, 3], bc.Layout.NCHW), bc.ShapeError, ""),
    (lambda f: f.blk.desc.offset([0, 8, 0, 0]), bc.OutOfRangeError, ""),
    (lambda f: memoryview(f.blk), bc.UnsupportedError, "blocked"),
    (lambda f: f.blk.window(2), bc.OutOfRangeError, "window size 2"),
    (lambda f: np.asarray(f.blk, copy=False), ValueError, "blocked layout"),
    (lambda f: f.a.reorder_from(f.c), bc.ShapeError, "dims differ"),
    (lambda f: f.a.reorder_from(f.b), bc.DTypeError, "dtypes differ"),
    # files
    (lambda f: bc.from_npy_bytes(b"not a numpy file"), bc.FormatError, "magic"),
    (lambda f: bc.from_npy_bytes(NUMPY_NPY[:-1]), bc.FormatError, "truncated"),
    (lambda f: bc.from_npy_bytes(NUMPY_NPY + b"\0"), bc.FormatError, "trailing"),
    (lambda f: bc.from_npy_bytes(HOSTILE_NPY), bc.FormatError, "truncated"),
    (lambda f: bc.from_caffe_bytes(b"\xff" * 16), bc.FormatError, ""),
    (lambda f: bc.from_neoml_bytes(b""), bc.FormatError, "truncated"),
    (lambda f: bc.from_neoml_bytes(b"\x01"), bc.FormatError, "null blob"),
    (lambda f: bc.from_caffe_bytes(3.5), bc.InvalidArgumentError, "bytes-like"),
    (lambda f: bc.load_npy("/nonexistent/x.npy"), bc.IoError, "/nonexistent/x.npy"),
    (lambda f: bc.load_caffe("/nonexistent/x.binaryproto"), bc.IoError, "cannot read"),
    (lambda f: bc.load_neoml(""), bc.IoError, ""),
    (lambda f: f.a.save_npy("/nonexistent/dir/x.npy"), bc.IoError, ""),
    (lambda f: bc.Blob.tensor([2], dtype=bc.bfloat16).save_npy("/tmp/never.npy"), bc.DTypeError, "bfloat16"),
    (lambda f: f.b.save_caffe("/tmp/never.binaryproto"), bc.DTypeError, ""),
    (lambda f: f.b.load_caffe_into("/nonexistent/x"), bc.DTypeError, "int32"),
    (lambda f: bc.Blob.tensor([1] * 8).to_neoml_bytes(), bc.ShapeError, ""),
    # one element at a time (issue 29): NumPy's conversions and errors
    (lambda f: f.a.__getitem__((2, 0)), IndexError, "out of bounds"),
    (lambda f: f.a.__getitem__((0, -4)), IndexError, "out of bounds"),
    (lambda f: f.a.__setitem__((0, 3), 1.0), IndexError, "out of bounds"),
    (lambda f: f.a.__setitem__((0, 0, 0), 1.0), IndexError, ""),
    (lambda f: f.b.__setitem__((0, 0), 2**40), OverflowError, "out of bounds for int32"),
    (lambda f: f.b.__setitem__((0, 0), float("nan")), ValueError, "nan"),
    (lambda f: f.b.__setitem__((0, slice(None)), float("inf")), OverflowError, ""),
    (lambda f: f.b.__setitem__((0, slice(None)), 2**64), OverflowError, ""),
    (lambda f: f.a.__setitem__(0, "x"), ValueError, ""),
    (lambda f: bc.asblob(np.zeros(3, np.float32)[::1].view()).__setitem__(3, 1.0), IndexError, ""),
    (lambda f: bc.asblob(READ_ONLY).__setitem__(0, 1.0), bc.ReadOnlyError, "read-only"),
    (lambda f: bc.asblob(READ_ONLY).__setitem__(slice(0, 2), 1.0), bc.ReadOnlyError, "read-only"),
    # a read-only blob refuses before the index or the value is judged
    (lambda f: bc.asblob(READ_ONLY).__setitem__(99, 1.0), bc.ReadOnlyError, "read-only"),
    (lambda f: bc.asblob(READ_ONLY).__setitem__(0, 10**400), bc.ReadOnlyError, "read-only"),
    (lambda f: bc.asblob(READ_ONLY).__setitem__(-99, 10**400), bc.ReadOnlyError, "read-only"),
    # NumPy scalars go through NumPy's own conversion; the index is checked first
    (lambda f: f.a.__setitem__((0, 0), np.void(b"ab")), ValueError, "sequence"),
    (lambda f: f.a.__setitem__((0, slice(None)), np.str_("x")), ValueError, "could not convert"),
    (lambda f: f.a.__setitem__((5, 0), np.void(b"ab")), IndexError, "out of bounds"),
    (lambda f: f.b.__setitem__((5, 0), float("nan")), IndexError, "out of bounds"),
    (lambda f: f.b.__setitem__((np.int64(5), 0), 2**40), IndexError, "out of bounds"),
    (lambda f: bc.asblob(READ_ONLY).__setitem__(0, np.float32(1)), bc.ReadOnlyError, "read-only"),
    # DLPack's C exchange API (the table's entries, called as C consumers do)
    (lambda f: exchange_from_py(np.zeros(3)), TypeError, "not a blobcore.Blob"),
    (lambda f: exchange_to_py(None), bc.BlobError, "null"),
    # memory that cannot be had, engines
    (lambda f: bc.Blob.vector(2**50, dtype=bc.uint8).fill(0), bc.OutOfMemoryError, ""),
    (lambda f: bc.Blob.vector(2**48).asum(), bc.OutOfMemoryError, ""),
    # Encoders into memory: refused memory is an error, not an abort.
    (lambda f: bc.Blob.vector(2**40).to_npy_bytes(), bc.OutOfMemoryError, "cannot allocate"),
    (lambda f: bc.save_caffemodel("/tmp/blobcore-never-written.caffemodel", {"x": [bc.Blob.vector(2**40)]}), bc.OutOfMemoryError, ""),
    (lambda f: bc.Engine.gpu("no adapter is called this"), bc.DeviceError, "no adapter is called this"),
    (lambda f: bc.Engine.cuda(-1), OverflowError, ""),
    (lambda f: bc.Engine.cuda(device=-1), OverflowError, ""),
    (lambda f: bc.Engine.cuda("0"), TypeError, ""),
    (lambda f: bc.Engine.cuda(4096), bc.DeviceError, "cuda"),
    # DLPack device exchange: a CPU blob has no CUDA memory; streams are ints
    (lambda f: bc.Blob.vector(3, engine=bc.Engine.cpu()).__dlpack__(dl_device=(2, 0)), BufferError, "cannot export"),
    (lambda f: f.a.__dlpack__(stream="x"), TypeError, "stream"),
    # __dlpack__ parses its own keywords (a vectorcall method)
    (lambda f: f.a.__dlpack__(1), TypeError, "0 positional arguments"),
    (lambda f: f.a.__dlpack__(versions=(1, 0)), TypeError, "unexpected keyword argument 'versions'"),
    (lambda f: f.a.__dlpack__(max_version="1.0"), TypeError, "max_version"),
    (lambda f: f.a.__dlpack__(max_version=(1, 0, 0)), TypeError, "max_version"),
    (lambda f: f.a.__dlpack__(dl_device=1), TypeError, "dl_device"),
    (lambda f: f.a.__dlpack__(copy=1), TypeError, "copy"),
    (lambda f: bc.Blob.__dlpack__(np.zeros(3)), TypeError, "doesn't apply"),
    (lambda f: bc.Blob.__dlpack__(), TypeError, "needs an argument"),
    (lambda f: bc.Blob.vector(3, engine=bc.Engine.cpu()).__dlpack__(stream=1), BufferError, "stream must be none"),
    (lambda f: bc.from_dlpack(np.zeros(3, np.float32), device="cuda", engine=bc.Engine.cpu()), ValueError, "not supported"),
    (lambda f: bc.from_dlpack(np.zeros(3, np.float32), device=(2, 0), engine=bc.Engine.cpu()), ValueError, "not supported"),
    (lambda f: bc.Engine.set_default("gpu"), TypeError, ""),
]


@pytest.fixture(scope="module")
def fx():
    return Fx()


@pytest.mark.parametrize("row", range(len(ROWS)))
def test_bad_call_fails_clearly_and_changes_nothing(fx, row):
    call, cls, words = ROWS[row]
    before = fx.digest()
    with pytest.raises(cls) as e:
        call(fx)
    if words:
        assert words.lower() in str(e.value).lower(), str(e.value)
    assert fx.digest() == before


def test_the_matrix_has_at_least_100_rows():
    assert len(ROWS) >= 100
