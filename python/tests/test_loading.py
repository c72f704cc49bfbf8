"""Eager loads read with all cores, and their progress callbacks (issue 30).

Against the real readers, with fixed seeds: safetensors files (single and
sharded) compared with the `safetensors` package, GGUF files written by
gguf-py's `GGUFWriter` compared with `GGUFReader`, `.caffemodel` files built
by the official protobuf runtime (including packed values split over
several chunks, which protobuf merges). Tensor sizes straddle the 8 MiB
read chunk. The callback's reports are checked exactly: strictly rising,
ending at (total, total), total the bytes of every tensor; an exception in
it cancels the load and comes out unchanged."""

import json
import struct
import threading

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import blobcore as bc

st_numpy = pytest.importorskip("safetensors.numpy")
gguf = pytest.importorskip("gguf")

CHUNK = 8 << 20
# Element counts around the chunk size (for 1-byte elements; wider dtypes
# cross it sooner).
COUNTS = [0, 1, 7, 1000, CHUNK // 4 - 3, CHUNK // 4 + 5, CHUNK - 1, CHUNK + 9]
DTYPES = [np.uint8, np.int16, np.float32, np.float64, np.int64]


def check_reports(calls, total):
    assert calls, "progress was never called"
    assert calls[-1] == (total, total)
    assert all(t == total for _, t in calls)
    dones = [d for d, _ in calls]
    assert all(a < b for a, b in zip(dones, dones[1:])), dones
    assert 0 < dones[0] or total == 0


@st.composite
def arrays(draw, max_tensors=5):
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    out = {}
    for i in range(draw(st.integers(1, max_tensors))):
        dt = np.dtype(draw(st.sampled_from(DTYPES)))
        n = draw(st.sampled_from(COUNTS)) // dt.itemsize
        out[f"t{i}"] = rng.integers(0, 255, size=n * dt.itemsize, dtype=np.uint8).view(dt)
    return out


@settings(max_examples=25, deadline=None, derandomize=True)
@given(tensors=arrays(), mmap=st.booleans())
def test_safetensors_loads_equal_the_package(tmp_path_factory, tensors, mmap):
    p = tmp_path_factory.mktemp("st") / "m.safetensors"
    st_numpy.save_file(tensors, str(p))
    calls = []
    got = bc.load_safetensors(p, mmap=mmap, progress=lambda d, t: calls.append((d, t)))
    ref = st_numpy.load_file(str(p))
    # File order, read from the header here: by offset, then (empty tensors
    # share offsets) end and name — the same on every load.
    head = json.loads(p.read_bytes()[8 : 8 + struct.unpack("<Q", p.read_bytes()[:8])[0]])
    head.pop("__metadata__", None)
    assert list(got) == sorted(head, key=lambda k: (head[k]["data_offsets"], k))
    assert sorted(got) == sorted(ref)
    for k, v in ref.items():
        a = np.asarray(got[k])
        assert a.dtype == v.dtype and a.shape == v.shape
        np.testing.assert_array_equal(a, v)
        assert got[k].writeable == (not mmap)
    check_reports(calls, sum(v.nbytes for v in ref.values()))
    if mmap:
        assert len(calls) == 1


@settings(max_examples=10, deadline=None, derandomize=True)
@given(tensors=arrays(max_tensors=6), shard=st.sampled_from([1, 1 << 20, 12 << 20]))
def test_sharded_eager_loads_read_every_shard_together(tmp_path_factory, tensors, shard):
    d = tmp_path_factory.mktemp("sh")
    bc.save_safetensors(d, tensors, max_shard_size=shard)
    calls = []
    got = bc.load_safetensors(d, mmap=False, progress=lambda a, b: calls.append((a, b)))
    # In the index's order when there is one (a single shard is a plain
    # model.safetensors, in file order).
    index = d / "model.safetensors.index.json"
    assert list(got) == list(tensors) if index.exists() else sorted(got) == sorted(tensors)
    for k, v in tensors.items():
        np.testing.assert_array_equal(np.asarray(got[k]), v)
    check_reports(calls, sum(v.nbytes for v in tensors.values()))


@settings(max_examples=15, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 4), mmap=st.booleans(), alignment=st.sampled_from([None, 64, 4096]))
def test_gguf_loads_equal_gguf_py(tmp_path_factory, seed, n, mmap, alignment):
    rng = np.random.default_rng(seed)
    p = tmp_path_factory.mktemp("gg") / "m.gguf"
    w = gguf.GGUFWriter(str(p), arch="blobcore-test")
    if alignment:
        w.add_custom_alignment(alignment)
    for i in range(n):
        rows = int(rng.choice([1, 3, 1025, 4099, 8200]))
        w.add_tensor(f"w{i}", rng.standard_normal((rows, 512)).astype(np.float32 if i % 2 else np.float16))
        # A quantized tensor as raw blocks (uint8), read as bytes.
        q = gguf.GGMLQuantizationType.Q8_0
        w.add_tensor(f"q{i}", rng.integers(0, 256, gguf.quant_shape_to_byte_shape((rows, 64), q), dtype=np.uint8), raw_dtype=q)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    calls = []
    got = bc.load_gguf(p, mmap=mmap, progress=lambda a, b: calls.append((a, b)))
    reader = gguf.GGUFReader(str(p))
    assert list(got) == [t.name for t in reader.tensors]
    for t in reader.tensors:
        np.testing.assert_array_equal(np.asarray(got[t.name]), np.asarray(t.data))
    check_reports(calls, sum(int(t.n_bytes) for t in reader.tensors))


def caffemodel(caffe_pb, layers):
    """A NetParameter whose layers' blobs carry `arrays`; a blob given as a
    list of parts is written as one message per part, which protobuf
    merges into one blob with its packed values in several chunks."""
    out = b""
    for name, blobs in layers.items():
        layer = caffe_pb["LayerParameter"](name=name, type="InnerProduct")
        raw = b""
        for arr in blobs:
            parts = arr if isinstance(arr, list) else [arr]
            whole = np.concatenate([p.ravel() for p in parts])
            msg = b""
            for i, part in enumerate(parts):
                m = caffe_pb["BlobProto"]()
                if i == 0:
                    m.shape.dim.extend([whole.size])
                (m.double_data if part.dtype == np.float64 else m.data).extend(part.ravel().tolist())
                msg += m.SerializeToString()
            # Field 7 (blobs), length-delimited.
            raw += b"\x3a" + _varint(len(msg)) + msg
        # NetParameter field 100 (layer), length-delimited, written by hand
        # so that the blobs keep their parts (re-serializing would merge them).
        body = layer.SerializeToString() + raw
        out += _varint(100 << 3 | 2) + _varint(len(body)) + body
    return out


def _varint(n):
    b = bytearray()
    while True:
        x = n & 0x7F
        n >>= 7
        b.append(x | (0x80 if n else 0))
        if not n:
            return bytes(b)


@settings(max_examples=8, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**32 - 1), split=st.integers(1, 3))
def test_caffemodel_loads_equal_protobuf(tmp_path_factory, caffe_pb, seed, split):
    rng = np.random.default_rng(seed)
    sizes = [int(rng.choice([1, 100, CHUNK // 4 + 3, 300_001])) for _ in range(3)]
    w = rng.standard_normal(sizes[0]).astype(np.float32)
    b = rng.standard_normal(sizes[1]).astype(np.float64)
    v = rng.standard_normal(sizes[2]).astype(np.float32)
    layers = {"fc1": [np.array_split(w, split), b], "fc2": [np.array_split(v, split)]}
    p = tmp_path_factory.mktemp("cm") / "m.caffemodel"
    p.write_bytes(caffemodel(caffe_pb, layers))
    ref = caffe_pb["NetParameter"].FromString(p.read_bytes())
    calls = []
    got = bc.load_caffemodel(p, progress=lambda a, t: calls.append((a, t)))
    assert list(got) == [l.name for l in ref.layer] == ["fc1", "fc2"]
    for l in ref.layer:
        for blob, m in zip(got[l.name], l.blobs):
            vals = np.array(m.double_data, np.float64) if len(m.double_data) else np.array(m.data, np.float32)
            np.testing.assert_array_equal(np.asarray(blob), vals)
    check_reports(calls, w.nbytes + b.nbytes + v.nbytes)


def test_an_exception_in_progress_cancels_and_propagates(tmp_path, caffe_pb):
    big = {"a": np.arange(3 * CHUNK // 4, dtype=np.float32), "b": np.ones(10, np.int8)}
    p = tmp_path / "m.safetensors"
    st_numpy.save_file(big, str(p))

    class Stop(Exception):
        pass

    seen = []

    def stop(done, total):
        seen.append(done)
        raise Stop(done)

    for mmap in (False, True):
        seen.clear()
        with pytest.raises(Stop):
            bc.load_safetensors(p, mmap=mmap, progress=stop)
        assert len(seen) == 1
    with pytest.raises(TypeError, match="callable"):
        bc.load_safetensors(p, mmap=False, progress=3)
    # None is no callback; the return value is ignored.
    assert bc.load_safetensors(p, mmap=False, progress=None)["b"].shape == (10,)
    assert bc.load_safetensors(p, mmap=False, progress=lambda d, t: False)["b"].shape == (10,)
    g = tmp_path / "m.gguf"
    bc.save_gguf(g, {"w": np.ones((CHUNK // 4 + 1,), np.float32)})
    with pytest.raises(Stop):
        bc.load_gguf(g, mmap=False, progress=stop)
    c = tmp_path / "m.caffemodel"
    c.write_bytes(caffemodel(caffe_pb, {"fc": [np.ones(CHUNK // 4 + 1, np.float32)]}))
    with pytest.raises(Stop):
        bc.load_caffemodel(c, progress=stop)


def test_progress_may_use_blobcore_and_other_threads_keep_going(tmp_path):
    """The callback runs with no blobcore lock held: it may call blobcore,
    and loads in other threads proceed meanwhile (watchdog: join timeout)."""
    arrays = {f"t{i}": np.full(CHUNK // 2, i, np.float32) for i in range(4)}
    p = tmp_path / "m.safetensors"
    st_numpy.save_file(arrays, str(p))
    side = bc.Blob.vector(4)
    errors = []

    def load():
        try:
            def tick(done, total):
                side.fill(float(done))
                bc.load_safetensors(p, mmap=True)["t1"].copy()

            d = bc.load_safetensors(p, mmap=False, progress=tick)
            assert float(np.asarray(d["t3"])[0]) == 3.0
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=load) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
        assert not t.is_alive(), "a load hung"
    assert not errors, errors
