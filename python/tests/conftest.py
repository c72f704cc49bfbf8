"""Shared helpers: the dtypes NumPy can check, and random data for each."""

import numpy as np
import pytest

import blobcore as bc

# Every blobcore dtype NumPy has (bfloat16 is covered through DLPack and
# byte round trips in the other tests).
NUMPY_DTYPES = [bc.float32, bc.int32, bc.float64, bc.int64, bc.uint8, bc.int8, bc.float16, bc.int16, bc.uint16, bc.uint32, bc.uint64]


# The engine under test is the default one: BLOBCORE_ENGINE=gpu runs this
# whole suite on the GPU engine (`make test` runs it on both). GPU
# reductions add f32 partials and promise 1e-5 relative; the CPU's f64
# accumulation is exact to rounding.
# The GPU and CUDA engines add f32 partials on the device.
ON_GPU = bc.Engine.default().name in ("gpu", "cuda")
ON_CUDA = bc.Engine.default().name == "cuda"

# NumPy's from_dlpack as NumPy ships it (the shim below replaces it on CUDA).
NP_FROM_DLPACK = np.from_dlpack

if ON_CUDA:
    # A CUDA engine's blob is a device array to DLPack (`__dlpack_device__`
    # is (2, ordinal), as for a torch or CuPy CUDA tensor), and NumPy
    # refuses device arrays unless asked for a host copy by name:
    # `np.from_dlpack(b, device="cpu")`, which is what users write. The
    # suite's host round trips of blobs go that way when it runs on the
    # CUDA engine (test_cuda.py checks NumPy's refusal without it).
    def _from_dlpack(x, /, *, device=None, copy=None):
        if device is None and isinstance(x, bc.Blob) and x.__dlpack_device__()[0] == 2:
            device = "cpu"
        return NP_FROM_DLPACK(x, device=device, copy=copy)

    np.from_dlpack = _from_dlpack
REDUCE_REL = 1e-5 if ON_GPU else 1e-12


def random_array(rng: np.random.Generator, shape, dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return rng.uniform(-4, 4, size=shape).astype(dtype)
    info = np.iinfo(dtype)
    lo, hi = max(info.min, -1000), min(info.max, 1000)
    return rng.integers(lo, hi, size=shape, endpoint=True).astype(dtype)


def random_shape(rng: np.random.Generator, rank: int, low: int = 1, high: int = 5):
    return tuple(int(x) for x in rng.integers(low, high, size=rank))


def blob_of(a: np.ndarray) -> bc.Blob:
    return bc.Blob.from_numpy(a, copy=True)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20261121)


@pytest.fixture(scope="session")
def caffe_pb():
    """Caffe's messages built with the descriptor API from caffe.proto's
    field numbers (no protoc): BlobShape, BlobProto, BlobProtoVector, and
    for .caffemodel files NetParameter with LayerParameter (plus a few
    fields blobcore must skip: bottom, top, a ConvolutionParameter) and the
    legacy V1LayerParameter / V0LayerParameter."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    F = descriptor_pb2.FieldDescriptorProto
    fdp = descriptor_pb2.FileDescriptorProto(name="blobcore_test_caffe.proto", package="caffe", syntax="proto2")

    def msg(name, fields):
        m = fdp.message_type.add(name=name)
        for fname, number, ftype, label, packed, type_name in fields:
            f = m.field.add(name=fname, number=number, type=ftype, label=label)
            if type_name:
                f.type_name = type_name
            if packed:
                f.options.packed = True

    REP, OPT = F.LABEL_REPEATED, F.LABEL_OPTIONAL
    msg("BlobShape", [("dim", 1, F.TYPE_INT64, REP, True, None)])
    msg(
        "BlobProto",
        [
            ("shape", 7, F.TYPE_MESSAGE, OPT, False, ".caffe.BlobShape"),
            ("data", 5, F.TYPE_FLOAT, REP, True, None),
            ("diff", 6, F.TYPE_FLOAT, REP, True, None),
            ("double_data", 8, F.TYPE_DOUBLE, REP, True, None),
            ("double_diff", 9, F.TYPE_DOUBLE, REP, True, None),
            ("num", 1, F.TYPE_INT32, OPT, False, None),
            ("channels", 2, F.TYPE_INT32, OPT, False, None),
            ("height", 3, F.TYPE_INT32, OPT, False, None),
            ("width", 4, F.TYPE_INT32, OPT, False, None),
        ],
    )
    msg("BlobProtoVector", [("blobs", 1, F.TYPE_MESSAGE, REP, False, ".caffe.BlobProto")])
    # Unpacked variant: old Caffe writers emitted one key per value.
    msg("UnpackedBlobProto", [("data", 5, F.TYPE_FLOAT, REP, False, None), ("num", 1, F.TYPE_INT32, OPT, False, None),
                              ("channels", 2, F.TYPE_INT32, OPT, False, None), ("height", 3, F.TYPE_INT32, OPT, False, None),
                              ("width", 4, F.TYPE_INT32, OPT, False, None)])
    msg("ConvolutionParameter", [("num_output", 1, F.TYPE_UINT32, OPT, False, None),
                                 ("kernel_size", 4, F.TYPE_UINT32, REP, False, None)])
    msg("LayerParameter", [("name", 1, F.TYPE_STRING, OPT, False, None), ("type", 2, F.TYPE_STRING, OPT, False, None),
                           ("bottom", 3, F.TYPE_STRING, REP, False, None), ("top", 4, F.TYPE_STRING, REP, False, None),
                           ("loss_weight", 5, F.TYPE_FLOAT, REP, False, None),
                           ("blobs", 7, F.TYPE_MESSAGE, REP, False, ".caffe.BlobProto"),
                           ("convolution_param", 106, F.TYPE_MESSAGE, OPT, False, ".caffe.ConvolutionParameter")])
    msg("V0LayerParameter", [("name", 1, F.TYPE_STRING, OPT, False, None), ("type", 2, F.TYPE_STRING, OPT, False, None),
                             ("num_output", 3, F.TYPE_UINT32, OPT, False, None),
                             ("blobs", 50, F.TYPE_MESSAGE, REP, False, ".caffe.BlobProto")])
    msg("V1LayerParameter", [("bottom", 2, F.TYPE_STRING, REP, False, None), ("top", 3, F.TYPE_STRING, REP, False, None),
                             ("name", 4, F.TYPE_STRING, OPT, False, None), ("type", 5, F.TYPE_INT32, OPT, False, None),
                             ("blobs", 6, F.TYPE_MESSAGE, REP, False, ".caffe.BlobProto"),
                             ("blobs_lr", 7, F.TYPE_FLOAT, REP, False, None),
                             ("layer", 1, F.TYPE_MESSAGE, OPT, False, ".caffe.V0LayerParameter")])
    msg("NetParameter", [("name", 1, F.TYPE_STRING, OPT, False, None), ("input", 3, F.TYPE_STRING, REP, False, None),
                         ("layers", 2, F.TYPE_MESSAGE, REP, False, ".caffe.V1LayerParameter"),
                         ("layer", 100, F.TYPE_MESSAGE, REP, False, ".caffe.LayerParameter")])
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    get = lambda n: message_factory.GetMessageClass(pool.FindMessageTypeByName("caffe." + n))  # noqa: E731
    return {n: get(n) for n in ["BlobShape", "BlobProto", "BlobProtoVector", "UnpackedBlobProto", "NetParameter", "LayerParameter", "V1LayerParameter", "V0LayerParameter", "ConvolutionParameter"]}
