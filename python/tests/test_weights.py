"""Weight files (issue 19) against their reference implementations.

safetensors: round trips both ways with the `safetensors` Python package
(safetensors.numpy / safe_open) and torch-free checks of the bytes
(header JSON, offsets, alignment, little-endian data); the map's O(1)
open, read-only views and lifetimes. Caffe .caffemodel: NetParameter files
built with the official protobuf runtime (the `caffe_pb` message classes
of conftest), new `layer` and legacy V1/V0 `layers`, read back by it after
blobcore writes them; a file of a few hundred MB loads holding about one
copy of the weights."""

import gc
import json
import os
import struct
import subprocess
import sys
import textwrap

import ml_dtypes
import numpy as np
import pytest

import blobcore as bc
from conftest import NUMPY_DTYPES, random_array

st_numpy = pytest.importorskip("safetensors.numpy")
safe_open = pytest.importorskip("safetensors").safe_open


def header_of(path):
    """The JSON header and data start of a safetensors file, parsed here."""
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    return json.loads(raw[8 : 8 + n]), 8 + n, raw


# ---------------------------------------------------------------- safetensors


def test_blobcore_writes_what_safetensors_reads(tmp_path, rng):
    arrays = {f"t.{np.dtype(d).name}": random_array(rng, (3, 5), d) for d in NUMPY_DTYPES}
    arrays["scalar"] = np.array(2.5, np.float32)
    arrays["empty"] = np.zeros((0, 4), np.int64)
    p = tmp_path / "bc.safetensors"
    bc.save_safetensors(p, {k: bc.Blob.from_numpy(v, copy=True) for k, v in arrays.items()}, metadata={"format": "np"})
    ref = st_numpy.load_file(str(p))
    assert ref.keys() == arrays.keys()
    for k, v in arrays.items():
        assert ref[k].dtype == v.dtype and ref[k].shape == v.shape, k
        np.testing.assert_array_equal(ref[k], v)
    with safe_open(str(p), framework="numpy") as f:
        assert f.metadata() == {"format": "np"}
    plain = tmp_path / "plain"
    plain.write_bytes(b"")
    assert p.stat().st_mode & 0o777 == plain.stat().st_mode & 0o777  # the usual permissions
    # The bytes, without any safetensors code: header offsets tile the
    # data, 8-byte-aligned header, little-endian row-major data.
    head, start, raw = header_of(p)
    assert start % 8 == 0 and head["__metadata__"] == {"format": "np"}
    end = 0
    for name, info in sorted(((k, v) for k, v in head.items() if k != "__metadata__"), key=lambda kv: kv[1]["data_offsets"]):
        s, e = info["data_offsets"]
        assert s == end
        end = e
        assert raw[start + s : start + e] == arrays[name].astype(arrays[name].dtype.newbyteorder("<")).tobytes(), name
        assert info["shape"] == list(arrays[name].shape)
    assert start + end == len(raw)


def test_safetensors_writes_what_blobcore_reads(tmp_path, rng):
    arrays = {f"w{i}": random_array(rng, (4, i + 1), d) for i, d in enumerate(NUMPY_DTYPES)}
    p = tmp_path / "ref.safetensors"
    st_numpy.save_file(arrays, str(p), metadata={"k": "v"})
    head, _, _ = header_of(p)
    file_order = sorted(arrays, key=lambda k: head[k]["data_offsets"])
    for mmap in (True, False):
        d = bc.load_safetensors(p, mmap=mmap)
        assert type(d) is dict and list(d) == file_order  # a plain dict in file order
        for k, v in arrays.items():
            assert d[k].dtype == v.dtype and d[k].shape == v.shape
            np.testing.assert_array_equal(np.asarray(d[k]), v)
            assert d[k].writeable is (not mmap)
    assert bc.safetensors_metadata(p) == {"k": "v"}


def test_bfloat16_bytes_both_ways(tmp_path, rng):
    """safetensors.numpy has no bfloat16: check the bytes with ml_dtypes."""
    a = rng.standard_normal((6, 7)).astype(ml_dtypes.bfloat16)
    p = tmp_path / "bf16.safetensors"
    bc.save_safetensors(p, {"x": bc.Blob.from_numpy(a, copy=True)})
    head, start, raw = header_of(p)
    assert head["x"] == {"dtype": "BF16", "shape": [6, 7], "data_offsets": [0, a.nbytes]}
    assert raw[start:] == a.tobytes()
    b = bc.load_safetensors(p)["x"]
    assert b.dtype == bc.bfloat16
    np.testing.assert_array_equal(np.asarray(b.raw()).view(np.uint16).ravel(), a.view(np.uint16).ravel())


@pytest.mark.parametrize("st_dtype,n,nbytes", [("C64", 2, 16), ("F8_E4M3FNUZ", 2, 2), ("F8_E5M2FNUZ", 2, 2), ("F4", 2, 1), ("F6_E2M3", 4, 3)])
def test_dtypes_blobcore_lacks_name_the_tensor(tmp_path, st_dtype, n, nbytes):
    p = tmp_path / "x.safetensors"
    head = {"fine": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}, "odd.one": {"dtype": st_dtype, "shape": [n], "data_offsets": [8, 8 + nbytes]}}
    js = json.dumps(head).encode()
    js += b" " * (-len(js) % 8)
    p.write_bytes(struct.pack("<Q", len(js)) + js + bytes(8 + nbytes))
    for mmap in (True, False):
        with pytest.raises(bc.DTypeError, match=r'"odd\.one"'):
            bc.load_safetensors(p, mmap=mmap)


def test_mapped_blobs_are_read_only_views(tmp_path):
    p = tmp_path / "m.safetensors"
    st_numpy.save_file({"a": np.arange(12, dtype=np.float32).reshape(3, 4)}, str(p))
    b = bc.load_safetensors(p)["a"]
    assert not b.writeable
    with pytest.raises(bc.ReadOnlyError):
        b.fill(0)
    with pytest.raises(bc.ReadOnlyError):
        b[0, 0] = 1
    arr = np.asarray(b)
    assert not arr.flags.writeable
    with pytest.raises(ValueError):
        arr[0, 0] = 1
    c = b.copy()
    c.fill(1)
    assert c.writeable and float(np.asarray(b)[2, 3]) == 11.0


def test_mapped_lifetimes(tmp_path):
    """The map lives while any blob, view, export or DLPack tensor uses it;
    a file replaced underneath (by rename, as every safetensors writer
    does) leaves the old contents mapped."""
    p = tmp_path / "life.safetensors"
    st_numpy.save_file({"a": np.arange(8, dtype=np.float32), "b": np.full(4, 7, np.int32)}, str(p))
    d = bc.load_safetensors(p)
    a = d["a"]
    del d
    gc.collect()
    view = a.window(1)  # a window of the leading dim: a view
    arr = np.asarray(a)
    dl = np.from_dlpack(a)
    del a
    gc.collect()
    np.testing.assert_array_equal(arr, np.arange(8, dtype=np.float32))  # export outlives the blob
    np.testing.assert_array_equal(dl, np.arange(8, dtype=np.float32))
    assert view.shape == (1,)
    # Replace the file (by bc and by the reference writer): old views keep the old bytes.
    bc.save_safetensors(p, {"a": bc.Blob.from_numpy(np.zeros(8, np.float32), copy=True)})
    np.testing.assert_array_equal(arr, np.arange(8, dtype=np.float32))
    st_numpy.save_file({"a": np.ones(8, np.float32)}, str(p))
    np.testing.assert_array_equal(dl, np.arange(8, dtype=np.float32))
    np.testing.assert_array_equal(np.asarray(bc.load_safetensors(p)["a"]), np.ones(8, np.float32))


def test_opening_a_large_file_is_o1_in_resident_memory(tmp_path):
    """Maps 512 MiB of tensors: opening must not read them (RSS grows by
    far less than the file), reading one tensor touches only its pages."""
    p = tmp_path / "big.safetensors"
    bc.save_safetensors(p, {f"layer{i}": bc.Blob.tensor([64, 1024, 1024], bc.uint8) for i in range(8)})
    assert os.path.getsize(p) > 512 << 20
    script = textwrap.dedent(
        f"""
        import blobcore as bc, numpy as np
        def rss():
            return int(open("/proc/self/statm").read().split()[1]) * 4096
        # Start the engine first (the GPU engine loads its driver on first use).
        _w = bc.Blob.tensor([4]); _w.fill(1.0); float(np.asarray(_w).sum())
        r0 = rss()
        d = bc.load_safetensors({str(p)!r})
        r1 = rss()
        s = int(np.asarray(d["layer3"]).sum(dtype=np.int64))
        r2 = rss()
        print(len(d), s, r1 - r0, r2 - r1)
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout.split()
    n, s, opened, read_one = map(int, out)
    assert (n, s) == (8, 0)
    assert opened < 4 << 20, f"opening grew RSS by {opened} bytes"
    assert read_one < (64 << 20) + (8 << 20), f"reading one 64 MiB tensor grew RSS by {read_one} bytes"


def test_failed_save_leaves_the_old_file(tmp_path):
    p = tmp_path / "keep.safetensors"
    st_numpy.save_file({"a": np.ones(3, np.float32)}, str(p))
    before = p.read_bytes()
    with pytest.raises(bc.InvalidArgumentError, match="__metadata__"):
        bc.save_safetensors(p, {"__metadata__": bc.Blob.tensor([1])})
    with pytest.raises(bc.InvalidArgumentError):
        bc.save_safetensors(p, {"a": object()})
    with pytest.raises(bc.InvalidArgumentError, match="str"):
        bc.save_safetensors(p, {"a": bc.Blob.tensor([1])}, metadata={"k": 1})
    assert p.read_bytes() == before


def test_arrays_and_views_are_saved(tmp_path, rng):
    a = rng.standard_normal((4, 6)).astype(np.float32)
    b = bc.Blob.from_numpy(a, copy=True)
    p = tmp_path / "v.safetensors"
    bc.save_safetensors(p, {"t": b.transposed(0, 1), "np": a[:, ::2]})
    ref = st_numpy.load_file(str(p))
    np.testing.assert_array_equal(ref["t"], a.T)
    np.testing.assert_array_equal(ref["np"], a[:, ::2])


def st_file(header, data):
    """A safetensors file from a header dict and data bytes, laid out here."""
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + data


def test_hostile_safetensors_files(tmp_path):
    ok = {"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}
    raw = st_file(ok, bytes(16))
    cases = {
        "short": raw[:5],
        "truncated": raw[:-1],
        "trailing": raw + b"\0",
        "huge_header": struct.pack("<Q", 1 << 62) + raw[8:],
        "header_past_end": struct.pack("<Q", len(raw)) + raw[8:],
        "not_json": struct.pack("<Q", 4) + b"{{{{",
        "not_utf8": struct.pack("<Q", 2) + b"\xff\xfe",
        "bad_offsets": st_file({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 99]}}, bytes(16)),
        "gap": st_file({"a": {"dtype": "F32", "shape": [4], "data_offsets": [4, 20]}}, bytes(20)),
        "overlap": st_file({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},
                            "b": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}, bytes(16)),
        "shape_overflow": st_file({"a": {"dtype": "F32", "shape": [1 << 62, 1 << 62], "data_offsets": [0, 16]}}, bytes(16)),
        "negative_dim": st_file({"a": {"dtype": "F32", "shape": [-4], "data_offsets": [0, 16]}}, bytes(16)),
        "rank_40": st_file({"a": {"dtype": "U8", "shape": [1] * 40, "data_offsets": [0, 1]}}, bytes(1)),
        "unknown_dtype": st_file({"a": {"dtype": "F128", "shape": [1], "data_offsets": [0, 16]}}, bytes(16)),
    }
    assert bc.load_safetensors(tmp_path / "ok.safetensors" if (tmp_path / "ok.safetensors").write_bytes(raw) else None)
    for name, data in cases.items():
        p = tmp_path / f"{name}.safetensors"
        p.write_bytes(data)
        for mmap in (True, False):
            with pytest.raises(bc.FormatError):
                bc.load_safetensors(p, mmap=mmap)
    with pytest.raises(bc.IoError):
        bc.load_safetensors(tmp_path / "missing.safetensors")


# ---------------------------------------------------------------- Caffe .caffemodel


def blob_msg(caffe_pb, arr, legacy=False):
    m = caffe_pb["BlobProto"]()
    if legacy:
        n, c, h, w = arr.shape
        m.num, m.channels, m.height, m.width = n, c, h, w
    else:
        m.shape.dim.extend(arr.shape)
    if arr.dtype == np.float64:
        m.double_data.extend(arr.ravel().tolist())
    else:
        m.data.extend(arr.ravel().tolist())
    return m


def test_caffemodel_layers_against_protobuf(tmp_path, caffe_pb, rng):
    net = caffe_pb["NetParameter"](name="tiny", input=["data"])
    w1 = rng.standard_normal((8, 3, 3, 3)).astype(np.float32)
    b1 = rng.standard_normal(8).astype(np.float32)
    w2 = rng.standard_normal((10, 8)).astype(np.float64)
    net.layer.add(name="data", type="Input", top=["data"])
    l1 = net.layer.add(name="conv1", type="Convolution", bottom=["data"], top=["conv1"], loss_weight=[0.0])
    l1.convolution_param.num_output = 8
    l1.convolution_param.kernel_size.append(3)
    l1.blobs.extend([blob_msg(caffe_pb, w1), blob_msg(caffe_pb, b1)])
    net.layer.add(name="relu", type="ReLU", bottom=["conv1"], top=["conv1"])
    net.layer.add(name="fc", type="InnerProduct").blobs.append(blob_msg(caffe_pb, w2))
    p = tmp_path / "tiny.caffemodel"
    p.write_bytes(net.SerializeToString())
    d = bc.load_caffemodel(p)
    assert type(d) is dict and list(d) == ["conv1", "fc"]  # layers without blobs left out
    assert [b.shape for b in d["conv1"]] == [w1.shape, b1.shape]
    np.testing.assert_array_equal(np.asarray(d["conv1"][0]), w1)
    np.testing.assert_array_equal(np.asarray(d["conv1"][1]), b1)
    assert d["fc"][0].dtype == np.float64
    np.testing.assert_array_equal(np.asarray(d["fc"][0]), w2)
    # Written back, the official runtime reads names, types and blobs.
    out = tmp_path / "back.caffemodel"
    bc.save_caffemodel(out, d, types={"conv1": "Convolution", "fc": "InnerProduct"})
    back = caffe_pb["NetParameter"].FromString(out.read_bytes())
    assert [(l.name, l.type, len(l.blobs)) for l in back.layer] == [("conv1", "Convolution", 2), ("fc", "InnerProduct", 1)]
    assert list(back.layer[0].blobs[0].shape.dim) == list(w1.shape)
    np.testing.assert_array_equal(np.array(back.layer[0].blobs[0].data, np.float32).reshape(w1.shape), w1)
    np.testing.assert_array_equal(np.array(back.layer[1].blobs[0].double_data), w2.ravel())
    assert not back.layers


def test_legacy_v1_and_v0_caffemodels(tmp_path, caffe_pb, rng):
    net = caffe_pb["NetParameter"](name="old")
    w = rng.standard_normal((4, 2, 3, 3)).astype(np.float32)
    b = rng.standard_normal((1, 1, 1, 4)).astype(np.float32)
    v1 = net.layers.add(name="conv1", type=4, bottom=["data"], top=["conv1"], blobs_lr=[1.0, 2.0])  # CONVOLUTION
    v1.blobs.extend([blob_msg(caffe_pb, w, legacy=True), blob_msg(caffe_pb, b, legacy=True)])
    net.layers.add(name="relu1", type=18)
    v0 = net.layers.add()
    v0.layer.name, v0.layer.type, v0.layer.num_output = "fc_v0", "innerproduct", 4
    v0.layer.blobs.append(blob_msg(caffe_pb, np.ones((1, 1, 4, 8), np.float32), legacy=True))
    p = tmp_path / "v1.caffemodel"
    p.write_bytes(net.SerializeToString())
    d = bc.load_caffemodel(p)
    assert list(d) == ["conv1", "fc_v0"]
    assert d["conv1"][1].shape == (1, 1, 1, 4)  # legacy blobs are 4-D
    np.testing.assert_array_equal(np.asarray(d["conv1"][0]), w)
    np.testing.assert_array_equal(np.asarray(d["fc_v0"][0]), np.ones((1, 1, 4, 8), np.float32))
    # Unpacked values (one key per value) load too.
    old = caffe_pb["NetParameter"]()
    lay = old.layer.add(name="u")
    unpacked = caffe_pb["UnpackedBlobProto"](num=1, channels=1, height=1, width=3, data=[1.0, 2.0, 3.0])
    lay.blobs.add().MergeFromString(unpacked.SerializeToString())
    p.write_bytes(old.SerializeToString())
    np.testing.assert_array_equal(np.asarray(bc.load_caffemodel(p)["u"][0]), [[[[1.0, 2.0, 3.0]]]])


def test_caffemodel_errors(tmp_path, caffe_pb):
    net = caffe_pb["NetParameter"]()
    net.layer.add(name="a").blobs.append(blob_msg(caffe_pb, np.ones(3, np.float32)))
    good = net.SerializeToString()
    p = tmp_path / "bad.caffemodel"
    for data in (good[:-3], good + b"\xff", b"\x0a\xff\xff\xff\xff\x0f"):
        p.write_bytes(data)
        with pytest.raises(bc.FormatError):
            bc.load_caffemodel(p)
    bad = caffe_pb["NetParameter"]()
    blob = bad.layer.add(name="short").blobs.add()
    blob.shape.dim.extend([1 << 40])
    blob.data.extend([1.0])
    p.write_bytes(bad.SerializeToString())
    with pytest.raises(bc.FormatError, match='layer "short", blob 0'):
        bc.load_caffemodel(p)
    with pytest.raises(bc.DTypeError, match='"i"'):
        bc.save_caffemodel(tmp_path / "x.caffemodel", {"i": [bc.Blob.tensor([2], bc.int32)]})
    with pytest.raises(bc.InvalidArgumentError):
        bc.save_caffemodel(tmp_path / "x.caffemodel", {"i": 3})
    assert not (tmp_path / "x.caffemodel").exists()


def test_a_few_hundred_mb_caffemodel_loads_holding_one_copy(tmp_path, caffe_pb):
    """A 320 MB .caffemodel written by the official runtime (one serialized
    NetParameter per layer, concatenated: protobuf's merge of repeated
    fields) loads with peak resident memory well under two copies."""
    p = tmp_path / "big.caffemodel"
    n = 10_000_000  # floats per layer: 40 MB
    layers = 8
    with open(p, "wb") as f:
        for i in range(layers):
            net = caffe_pb["NetParameter"]()
            lay = net.layer.add(name=f"fc{i}", type="InnerProduct", bottom=["x"], top=["y"])
            lay.blobs.append(blob_msg(caffe_pb, np.arange(n, dtype=np.float32).reshape(1000, n // 1000) + i))
            f.write(net.SerializeToString())
            del net, lay
    size = os.path.getsize(p)
    assert size > 300e6
    script = textwrap.dedent(
        f"""
        import numpy as np, blobcore as bc
        def hwm():  # this process's peak RSS (ru_maxrss would count the forking parent's)
            return next(int(l.split()[1]) * 1024 for l in open("/proc/self/status") if l.startswith("VmHWM"))
        # Start the engine first (the GPU engine loads its driver on first use).
        _w = bc.Blob.tensor([4]); _w.fill(1.0); float(np.asarray(_w).sum())
        r0 = hwm()
        d = bc.load_caffemodel({str(p)!r})
        peak = hwm()
        ok = all(float(np.asarray(d[f"fc{{i}}"][0])[999, -1]) == {n - 1} + i for i in range({layers}))
        print(len(d), ok, peak - r0)
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout.split()
    assert out[:2] == [str(layers), "True"], out
    grew = int(out[2])
    assert grew < 1.25 * size, f"loading {size} bytes grew peak RSS by {grew} bytes (two copies would be {2 * size})"
