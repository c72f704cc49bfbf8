"""File formats against independent oracles: NumPy (np.load / np.save) and
the official protobuf runtime, whose Caffe message classes are built here
from the field numbers of caffe.proto with the descriptor API (no protoc).
Real files come from ../shared/data/caffe."""

import os
import pathlib

import numpy as np
import pytest

import blobcore as bc
from conftest import NUMPY_DTYPES, random_array

DATA = pathlib.Path(__file__).resolve().parents[3] / "shared" / "data" / "caffe"
IMAGENET = DATA / "imagenet_mean.binaryproto"
CIFAR = DATA / "cifar10_mean.binaryproto"
MEAN_NPY = DATA / "ilsvrc_2012_mean.npy"


def test_imagenet_mean_equals_the_npy_cast_to_float32():
    proto = bc.load_caffe(IMAGENET)
    assert proto.shape == (1, 3, 256, 256) and proto.dtype == np.float32
    ref = np.load(MEAN_NPY)
    np.testing.assert_array_equal(np.asarray(proto)[0], ref.astype(np.float32))
    np.testing.assert_allclose(np.asarray(proto).mean(axis=(0, 2, 3)), [104.007, 116.669, 122.679], atol=5e-4)
    npy = bc.load_npy(str(MEAN_NPY))
    assert npy.dtype == np.float64
    np.testing.assert_array_equal(np.asarray(npy), ref)


def test_official_protobuf_reads_the_real_files_as_blobcore_does(caffe_pb):
    for path, dims in [(IMAGENET, (1, 3, 256, 256)), (CIFAR, (1, 3, 32, 32))]:
        m = caffe_pb["BlobProto"].FromString(path.read_bytes())
        assert (m.num, m.channels, m.height, m.width) == dims
        b = bc.load_caffe(path)
        assert b.shape == dims
        np.testing.assert_array_equal(np.asarray(b).ravel(), np.array(m.data, dtype=np.float32))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_protobuf_reads_what_blobcore_writes(caffe_pb, dtype, rng):
    a = random_array(rng, (2, 3, 4), dtype)
    b = bc.Blob.from_numpy(a)
    d = random_array(rng, a.shape, dtype)
    b.diff.copy_from(d)
    m = caffe_pb["BlobProto"].FromString(b.to_caffe_bytes(write_diff=True))
    assert list(m.shape.dim) == [2, 3, 4]
    assert not m.HasField("num")
    if dtype == np.float32:
        assert len(m.double_data) == 0
        np.testing.assert_array_equal(np.array(m.data, np.float32), a.ravel())
        np.testing.assert_array_equal(np.array(m.diff, np.float32), d.ravel())
    else:
        assert len(m.data) == 0
        np.testing.assert_array_equal(np.array(m.double_data), a.ravel())
        np.testing.assert_array_equal(np.array(m.double_diff), d.ravel())
    assert b.to_caffe_bytes() == b.to_caffe_bytes(write_diff=False)
    assert len(caffe_pb["BlobProto"].FromString(b.to_caffe_bytes()).diff) == 0


def test_blobcore_reads_what_protobuf_writes(caffe_pb, rng):
    a = random_array(rng, (2, 5), np.float32)
    m = caffe_pb["BlobProto"](data=a.ravel().tolist())
    m.shape.dim.extend([2, 5])
    b = bc.from_caffe_bytes(m.SerializeToString())
    np.testing.assert_array_equal(np.asarray(b), a)
    assert b.shape == (2, 5)
    # double_data wins over data; diff goes to the diff.
    m2 = caffe_pb["BlobProto"](double_data=[1.5, 2.5], data=[9, 9], double_diff=[0.25, -1])
    m2.shape.dim.extend([2])
    b2 = bc.from_caffe_bytes(bytearray(m2.SerializeToString()))
    assert b2.dtype == np.float64
    np.testing.assert_array_equal(np.asarray(b2), [1.5, 2.5])
    np.testing.assert_array_equal(np.asarray(b2.diff), [0.25, -1])
    # Unpacked legacy fields, as old Caffe wrote them.
    u = caffe_pb["UnpackedBlobProto"](num=1, channels=2, height=1, width=3, data=a.ravel()[:6].tolist())
    bu = bc.from_caffe_bytes(memoryview(u.SerializeToString()))
    assert bu.shape == (1, 2, 1, 3)
    np.testing.assert_array_equal(np.asarray(bu).ravel(), a.ravel()[:6])


def test_caffe_vectors_round_trip_through_protobuf(caffe_pb, tmp_path, rng):
    x = bc.Blob.from_numpy(random_array(rng, (3,), np.float32))
    y = bc.Blob.from_numpy(random_array(rng, (2, 2), np.float64))
    p = tmp_path / "two.binaryproto"
    bc.save_caffe_vector(p, [x, y])
    v = caffe_pb["BlobProtoVector"].FromString(p.read_bytes())
    assert [list(b.shape.dim) for b in v.blobs] == [[3], [2, 2]]
    got = bc.load_caffe_vector(p)
    assert len(got) == 2
    np.testing.assert_array_equal(np.asarray(got[0]), np.asarray(x))
    np.testing.assert_array_equal(np.asarray(got[1]), np.asarray(y))


def test_caffe_file_round_trip_is_exact(tmp_path):
    a = bc.load_caffe(IMAGENET)
    p = tmp_path / "mean.binaryproto"
    a.save_caffe(p)
    b = bc.load_caffe(p)
    assert b.shape == a.shape
    np.testing.assert_array_equal(np.asarray(b), np.asarray(a))


@pytest.mark.parametrize("dtype", NUMPY_DTYPES)
def test_numpy_reads_what_blobcore_writes(dtype, tmp_path, rng):
    for shape in [(2, 3, 4), (5,), (), (0, 3)]:
        a = random_array(rng, shape, dtype)
        p = tmp_path / f"x{len(shape)}.npy"
        bc.Blob.from_numpy(a).save_npy(p)
        got = np.load(p)
        assert got.dtype == a.dtype and got.shape == a.shape
        np.testing.assert_array_equal(got, a)
        assert np.load(__import__("io").BytesIO(bc.Blob.from_numpy(a).to_npy_bytes())).tobytes() == a.tobytes()


@pytest.mark.parametrize("dtype", NUMPY_DTYPES)
def test_blobcore_reads_what_numpy_writes(dtype, tmp_path, rng):
    a = random_array(rng, (3, 4, 5), dtype)
    for variant, arr in [
        ("c", a),
        ("fortran", np.asfortranarray(a)),
        ("swapped", a.astype(a.dtype.newbyteorder(">"))),
        ("fortran_swapped", np.asfortranarray(a.astype(a.dtype.newbyteorder(">")))),
        ("scalar", a[0, 0, :1].reshape(())),
    ]:
        p = tmp_path / f"{variant}.npy"
        np.save(p, arr)
        b = bc.load_npy(p)
        assert b.shape == arr.shape, variant
        assert b.dtype == a.dtype, variant
        np.testing.assert_array_equal(np.asarray(b), arr, err_msg=variant)


def test_npy_file_round_trip_is_exact(tmp_path):
    a = bc.load_npy(MEAN_NPY)
    p = tmp_path / "mean.npy"
    a.save_npy(os.fspath(p))
    np.testing.assert_array_equal(np.load(p), np.load(MEAN_NPY))
    np.testing.assert_array_equal(np.asarray(bc.load_npy(p)), np.asarray(a))


def test_neoml_round_trip(tmp_path, rng):
    a = random_array(rng, (1, 2, 1, 3, 4, 1, 2), np.float32)
    p = tmp_path / "x.neoml"
    bc.Blob.from_numpy(a).save_neoml(p)
    raw = p.read_bytes()
    assert raw[:6] == bytes([0, 0xFF, 0xD0, 0x07, 0, 0])
    assert np.frombuffer(raw, "<i4", 7, 14).tolist() == [1, 2, 1, 3, 4, 1, 2]
    np.testing.assert_array_equal(np.frombuffer(raw, "<f4", offset=46).reshape(a.shape), a)
    b = bc.load_neoml(p)
    np.testing.assert_array_equal(np.asarray(b), a)
    i = bc.Blob.from_numpy(np.arange(6, dtype=np.int32).reshape(2, 3))
    j = bc.from_neoml_bytes(i.to_neoml_bytes())
    assert j.shape == (2, 3, 1, 1, 1, 1, 1)
    np.testing.assert_array_equal(np.asarray(j).reshape(2, 3), np.arange(6).reshape(2, 3))


def test_load_caffe_into_follows_from_proto(tmp_path):
    ref = np.asarray(bc.load_caffe(CIFAR))
    b = bc.Blob.tensor([3, 32, 32], dtype=np.float64)
    b.load_caffe_into(CIFAR, reshape=False)
    np.testing.assert_array_equal(np.asarray(b), ref[0].astype(np.float64))
    c = bc.Blob.tensor([2, 2])
    c.fill(7)
    with pytest.raises(bc.ShapeError):
        c.load_caffe_into(CIFAR, reshape=False)
    np.testing.assert_array_equal(np.asarray(c), np.full((2, 2), 7, np.float32))
    c.load_caffe_into(CIFAR)
    assert c.shape == (1, 3, 32, 32)


def test_bad_input_raises_and_changes_nothing(tmp_path):
    good = bc.load_caffe(CIFAR).to_caffe_bytes()
    with pytest.raises(bc.FormatError, match="Caffe"):
        bc.from_caffe_bytes(good[:-1])
    with pytest.raises(bc.FormatError):
        bc.from_npy_bytes(good)
    with pytest.raises(bc.FormatError, match="truncated"):
        bc.from_npy_bytes(b"\x93NUMPY\x01\x00" + b"\xff\xff")
    with pytest.raises(bc.FormatError, match="null blob"):
        bc.from_neoml_bytes(b"\x01")
    with pytest.raises(bc.InvalidArgumentError):
        bc.from_caffe_bytes(12)
    with pytest.raises(bc.IoError, match="missing.npy") as e:
        bc.load_npy(tmp_path / "missing.npy")
    assert isinstance(e.value, OSError)
    p = tmp_path / "keep.npy"
    np.save(p, np.arange(3))
    before = p.read_bytes()
    bf = bc.Blob.tensor([2], dtype=bc.bfloat16)
    with pytest.raises(bc.DTypeError, match="bfloat16"):
        bf.save_npy(p)
    with pytest.raises(bc.DTypeError):
        bc.Blob.tensor([2], dtype=np.int64).save_caffe(p)
    with pytest.raises(bc.DTypeError):
        bc.Blob.tensor([2], dtype=np.float64).save_neoml(p)
    assert p.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["keep.npy"], "no temporary files left behind"


def test_caffe_blob_api_as_caffe_documents_it():
    """shape_string, count(start), legacy_shape, capacity, CopyFrom with
    reshape/copy_diff, ShareData/ShareDiff (Caffe's blob.hpp)."""
    b = bc.Blob.tensor([64, 3, 28, 28])
    assert b.shape_string() == "64 3 28 28 (150528)"
    assert bc.Blob.tensor([]).shape_string() == "(1)"
    assert b.count(1) == 3 * 28 * 28 and b.count(4) == 1
    m = bc.Blob.tensor([3, 5])
    # LegacyShape pads on the left for negative indices, the right for positive.
    assert [m.legacy_shape(i) for i in range(-4, 4)] == [1, 1, 3, 5, 3, 5, 1, 1]
    with pytest.raises(bc.OutOfRangeError):
        m.legacy_shape(4)
    b.reshape([2, 3])
    assert b.capacity == 150528
    src = bc.Blob.from_numpy(np.arange(6, dtype=np.float32).reshape(3, 2))
    dst = bc.Blob.tensor([6])
    with pytest.raises(bc.ShapeError, match="reshape"):
        dst.copy_from(src, reshape=False, copy_diff=True)
    dst.copy_from(src, reshape=True)
    assert dst.shape == (3, 2)
    np.testing.assert_array_equal(np.asarray(dst), np.asarray(src))
    np.asarray(src.diff)[...] = 4.0
    dst.copy_from(src, copy_diff=True)
    np.testing.assert_array_equal(np.asarray(dst.diff), np.full((3, 2), 4.0, np.float32))
    with pytest.raises(TypeError, match="blob source"):
        dst.copy_from([1, 2, 3, 4, 5, 6], reshape=True)
    shared = bc.Blob.tensor([3, 2])
    shared.share_data(src)
    src.fill(9.0)
    assert np.asarray(shared).sum() == 54
    shared.share_diff(src)
    np.testing.assert_array_equal(np.asarray(shared.diff), np.asarray(src.diff))


def test_caffe_legacy_offset_and_data_at():
    a = np.arange(120, dtype=np.float32).reshape(2, 3, 4, 5)
    b = bc.Blob.from_numpy(a)
    assert b.legacy_offset(1, 2, 3, 4) == np.ravel_multi_index((1, 2, 3, 4), a.shape)
    assert b.data_at(1, 2, 3, 4) == a[1, 2, 3, 4]
    assert b.diff_at(1, 2, 3, 4) == 0.0
    m = bc.Blob.from_numpy(np.arange(15, dtype=np.int32).reshape(3, 5))
    assert m.legacy_offset(2) == 10 and m.legacy_offset(2, 4) == 14  # c, h, w default to 0
    assert m.data_at(1, 3) == 8.0
    with pytest.raises(bc.OutOfRangeError, match="legacy dim 1"):
        m.data_at(0, 0, 1)
    # data_at(index): leading indices, missing trailing ones read as 0.
    assert b.data_at([1, 2, 3, 4]) == a[1, 2, 3, 4] and b.data_at([1, 2]) == a[1, 2, 0, 0]
    assert b.diff_at([1, 2, 3, 4]) == 0.0
    with pytest.raises(bc.OutOfRangeError):
        b.data_at([0, 3])


def test_caffe_shape_equals_with_the_real_legacy_file():
    legacy = CIFAR.read_bytes()  # legacy fields 1 x 3 x 32 x 32
    assert bc.Blob.tensor([1, 3, 32, 32]).shape_equals(legacy)
    assert bc.Blob.tensor([3, 32, 32]).shape_equals(legacy)  # padded with 1s on the left
    assert not bc.Blob.tensor([3, 32, 33]).shape_equals(legacy)
    shaped = bc.Blob.tensor([2, 3]).to_caffe_bytes()
    assert bc.Blob.tensor([2, 3]).shape_equals(shaped)
    assert not bc.Blob.tensor([1, 2, 3]).shape_equals(shaped)  # the shape form compares dims exactly
    with pytest.raises(bc.FormatError):
        bc.Blob.tensor([1]).shape_equals(b"\xff\xff")
