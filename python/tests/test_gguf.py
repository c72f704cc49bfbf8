"""GGUF files (issue 30) against gguf-py, the reference reader and writer:
files written by `GGUFWriter` with every tensor type and every metadata
type load with blobs equal to `GGUFReader`'s `tensor.data`, metadata equal
to its fields' contents, and tensor infos equal to its types and shapes;
hostile headers are FormatErrors. Generated with fixed seeds."""

import struct

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import blobcore as bc

gguf = pytest.importorskip("gguf")
Q = gguf.GGMLQuantizationType
SIZES = gguf.GGML_QUANT_SIZES
PLAIN = {Q.F32: np.float32, Q.F16: np.float16, Q.F64: np.float64, Q.I8: np.int8, Q.I16: np.int16, Q.I32: np.int32, Q.I64: np.int64}
ALL_TYPES = list(SIZES)


def write(path, tensors, kv=(), alignment=None):
    """A GGUF file from gguf-py's writer: `tensors` are (name, type, logical
    shape, bytes-or-array) in order; `kv` (method, key, value) pairs."""
    w = gguf.GGUFWriter(str(path), arch="blobcore-test")
    if alignment is not None:
        w.add_custom_alignment(alignment)
    for method, key, value in kv:
        getattr(w, method)(key, value)
    for name, qtype, data in tensors:
        if qtype in PLAIN:
            w.add_tensor(name, data)
        else:
            w.add_tensor(name, data, raw_dtype=qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def tensor_data(rng, qtype, shape):
    """Data for a tensor of `qtype` and logical `shape` (NumPy order): a
    typed array for plain types, else the row's block bytes as uint8."""
    if qtype in PLAIN:
        dt = np.dtype(PLAIN[qtype])
        if dt.kind == "f":
            return rng.standard_normal(shape).astype(dt)
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=dt)
    return rng.integers(0, 256, size=gguf.quant_shape_to_byte_shape(shape, qtype), dtype=np.uint8)


@st.composite
def files(draw):
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    out = []
    for i in range(draw(st.integers(1, 6))):
        qtype = draw(st.sampled_from(ALL_TYPES))
        block = SIZES[qtype][0]
        rank = draw(st.integers(1, 4))
        shape = [draw(st.integers(1, 3)) for _ in range(rank - 1)] + [block * draw(st.integers(1, 3))]
        out.append((f"blk.{i}.{qtype.name.lower()}", qtype, tensor_data(rng, qtype, tuple(shape))))
    return out


@settings(max_examples=60, deadline=None, derandomize=True)
@given(tensors=files(), mmap=st.booleans(), alignment=st.sampled_from([None, 8, 64, 256]))
def test_every_tensor_type_loads_as_gguf_py_reads_it(tmp_path_factory, tensors, mmap, alignment):
    p = tmp_path_factory.mktemp("gguf") / "m.gguf"
    write(p, tensors, alignment=alignment)
    reader = gguf.GGUFReader(str(p))
    got = bc.load_gguf(p, mmap=mmap)
    info = bc.gguf_tensor_info(p)
    assert list(got) == [t.name for t in reader.tensors] == list(info)
    for t in reader.tensors:
        b = got[t.name]
        ref = np.asarray(t.data)
        assert info[t.name] == (t.tensor_type.name, tuple(int(d) for d in reversed(t.shape.tolist())))
        arr = np.asarray(b)
        if t.tensor_type == Q.BF16:
            # gguf-py gives BF16 as its bytes; blobcore as bfloat16.
            assert arr.dtype == bc.bfloat16 and arr.shape == ref.shape[:-1] + (ref.shape[-1] // 2,)
            arr = arr.view(np.uint8).reshape(ref.shape)
        assert arr.dtype == ref.dtype and arr.shape == ref.shape, t.name
        np.testing.assert_array_equal(arr, ref)
        assert b.writeable is (not mmap)


KV = [
    ("add_uint8", "k.u8", 200), ("add_int8", "k.i8", -100), ("add_uint16", "k.u16", 60000),
    ("add_int16", "k.i16", -30000), ("add_uint32", "k.u32", 4_000_000_000), ("add_int32", "k.i32", -2_000_000_000),
    ("add_float32", "k.f32", 1.5), ("add_bool", "k.bool", True), ("add_string", "k.str", "héllo"),
    ("add_uint64", "k.u64", 2**63 + 5), ("add_int64", "k.i64", -(2**62)), ("add_float64", "k.f64", 0.1),
    ("add_array", "k.arr.int", [1, 2, 3]), ("add_array", "k.arr.str", ["a", "", "ünï"]),
    ("add_array", "k.arr.float", [0.5, -2.0]), ("add_array", "k.arr.bool", [True, False]),
    ("add_array", "k.arr.empty", []), ("add_array", "k.arr.nested", [[1, 2], [3]]),
]


def test_every_metadata_type_reads_as_gguf_py_reads_it(tmp_path):
    p = tmp_path / "kv.gguf"
    write(p, [("t", Q.F32, np.ones((2, 3), np.float32))], kv=KV)
    reader = gguf.GGUFReader(str(p))
    md = bc.gguf_metadata(p)
    ref = {k: f.contents() for k, f in reader.fields.items() if not k.startswith("GGUF.")}
    assert list(md) == list(ref)
    for k, v in ref.items():
        if k == "k.arr.nested":
            # gguf-py's contents() flattens arrays of arrays; the file (and
            # blobcore) keeps the nesting the writer was given.
            assert [x for inner in md[k] for x in inner] == v
            continue
        assert md[k] == v, k
        assert type(md[k]) is type(v) or isinstance(v, (np.generic, list)), (k, type(md[k]), type(v))
    assert md["k.u64"] == 2**63 + 5 and md["k.str"] == "héllo" and md["k.arr.nested"] == [[1, 2], [3]]


DEQUANT = [Q.Q4_0, Q.Q4_1, Q.Q5_0, Q.Q5_1, Q.Q8_0, Q.Q2_K, Q.Q3_K, Q.Q4_K, Q.Q5_K, Q.Q6_K]


def blocks_for(rng, qtype, shape, quantize):
    """Block bytes: gguf-py's quantizer of real-looking weights where it
    has one (half the time), else random bytes — every bit pattern of a
    block is a valid block, so random bytes reach every code path — with
    the f16 scales kept finite so the comparison is of numbers."""
    if quantize:
        try:
            return gguf.quants.quantize((rng.standard_normal(shape) * 0.05).astype(np.float32), qtype)
        except NotImplementedError:
            pass
    raw = tensor_data(rng, qtype, shape)
    block, size = SIZES[qtype]
    b = raw.reshape(-1, size)
    # Clear the exponent's top bit of every f16 field so none is inf/NaN.
    f16_at = {Q.Q4_0: [0], Q.Q4_1: [0, 2], Q.Q5_0: [0], Q.Q5_1: [0, 2], Q.Q8_0: [0], Q.Q2_K: [80, 82],
              Q.Q3_K: [108], Q.Q4_K: [0, 2], Q.Q5_K: [0, 2], Q.Q6_K: [208]}[qtype]
    for off in f16_at:
        b[:, off + 1] &= 0xBF
    return raw


@settings(max_examples=60, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**32 - 1), qtype=st.sampled_from(DEQUANT), rows=st.integers(1, 4), blocks=st.integers(1, 3), quantize=st.booleans(), mmap=st.booleans())
def test_dequantized_tensors_equal_gguf_quants_dequantize_to_the_bit(tmp_path_factory, seed, qtype, rows, blocks, quantize, mmap):
    rng = np.random.default_rng(seed)
    shape = (rows, SIZES[qtype][0] * blocks)
    data = blocks_for(rng, qtype, shape, quantize)
    p = tmp_path_factory.mktemp("dq") / "q.gguf"
    write(p, [("q", qtype, data), ("f", Q.F16, np.ones((2, 2), np.float16))])
    reader = gguf.GGUFReader(str(p))
    want = gguf.quants.dequantize(reader.tensors[0].data, qtype)
    got = bc.load_gguf(p, mmap=mmap, dequantize=True)
    q = np.asarray(got["q"])
    assert q.dtype == np.float32 and q.shape == shape == want.shape
    np.testing.assert_array_equal(q.view(np.uint32), want.astype(np.float32).view(np.uint32))
    assert got["q"].writeable
    # Unquantized tensors keep their dtype.
    assert np.asarray(got["f"]).dtype == np.float16


def test_dequantizing_other_block_types_is_a_clear_unsupported_error(tmp_path):
    p = tmp_path / "iq.gguf"
    rng = np.random.default_rng(0)
    write(p, [("ok", Q.Q8_0, tensor_data(rng, Q.Q8_0, (1, 32))), ("iq", Q.IQ4_NL, tensor_data(rng, Q.IQ4_NL, (2, 32)))])
    with pytest.raises(bc.UnsupportedError, match="\"iq\" is IQ4_NL"):
        bc.load_gguf(p, dequantize=True)
    assert np.asarray(bc.load_gguf(p)["iq"]).dtype == np.uint8


def header(n_tensors=1, n_kv=0, version=3):
    return b"GGUF" + struct.pack("<IQQ", version, n_tensors, n_kv)


def gstr(s: bytes) -> bytes:
    return struct.pack("<Q", len(s)) + s


def tinfo(name=b"t", dims=(4,), qtype=0, offset=0, n_dims=None):
    return gstr(name) + struct.pack("<I", len(dims) if n_dims is None else n_dims) + b"".join(struct.pack("<Q", d) for d in dims) + struct.pack("<IQ", qtype, offset)


def padded(b: bytes, align=32) -> bytes:
    return b + b"\0" * (-len(b) % align)


HOSTILE = [
    ("magic", b"GGUX" + bytes(20), "does not start with GGUF"),
    ("version 1", header(version=1), "version 1"),
    ("big-endian", b"GGUF" + struct.pack(">IQQ", 3, 1, 0), "big-endian"),
    ("tensor count 2^60", header(n_tensors=2**60), "cannot fit"),
    ("kv count 2^60", header(n_tensors=0, n_kv=2**60), "cannot fit"),
    ("key length past the end", header(0, 1) + struct.pack("<Q", 2**40) + bytes(8), "a string of"),
    ("array count 2^60", header(0, 1) + gstr(b"k") + struct.pack("<IIQ", 9, 0, 2**60), "cannot fit"),
    ("unknown value type", header(0, 1) + gstr(b"k") + struct.pack("<I", 99) + bytes(8), "unknown value type"),
    ("n_dims 100", header() + tinfo(n_dims=100, dims=()) + bytes(64), "100 dims"),
    ("offset past the end", padded(header() + tinfo(offset=1 << 40)) + bytes(16), "starts at data offset 1099511627776"),
    ("overlapping tensors", padded(header(2) + tinfo() + tinfo(name=b"u", offset=0)) + bytes(64), "the tensors before it end at 32"),
    ("data past the end", padded(header() + tinfo(dims=(1000,))) + bytes(16), "needs 4000 bytes"),
    ("misaligned offset", padded(header() + tinfo(offset=4)) + bytes(64), "not a multiple of the alignment"),
    ("unknown ggml type", padded(header() + tinfo(qtype=4)) + bytes(64), "unknown ggml type 4"),
    ("partial block", padded(header() + tinfo(dims=(16,), qtype=2)) + bytes(64), "not whole Q4_0 blocks"),
    ("duplicate tensor", padded(header(2) + tinfo() + tinfo(offset=32)) + bytes(64), "appears twice"),
    ("bad alignment", header(0, 1) + gstr(b"general.alignment") + struct.pack("<II", 4, 3), "power of two"),
    ("truncated", header()[:10], "truncated"),
]


@pytest.mark.parametrize("case,data,says", HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_headers_are_format_errors(tmp_path, case, data, says):
    p = tmp_path / "bad.gguf"
    p.write_bytes(data)
    err = bc.UnsupportedError if case in ("version 1", "big-endian") else bc.FormatError
    for call in (lambda: bc.load_gguf(p), lambda: bc.load_gguf(p, mmap=False), lambda: bc.gguf_metadata(p), lambda: bc.gguf_tensor_info(p)):
        with pytest.raises(err, match=says):
            call()


SAVE_DTYPES = [np.float32, np.float16, np.float64, np.int8, np.int16, np.int32, np.int64]


@settings(max_examples=40, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(0, 5), alignment=st.sampled_from([None, 1, 16, 128]))
def test_saved_files_read_back_identically_in_gguf_py(tmp_path_factory, seed, n, alignment):
    rng = np.random.default_rng(seed)
    tensors = {}
    for i in range(n):
        shape = tuple(int(x) for x in rng.integers(1, 5, size=int(rng.integers(0, 4))))
        dt = SAVE_DTYPES[int(rng.integers(len(SAVE_DTYPES)))]
        tensors[f"t{i}"] = (rng.standard_normal(shape) * 100).astype(dt)
    tensors["bf"] = bc.Blob.from_numpy(rng.standard_normal((2, 3)).astype(np.float32)).astype(bc.bfloat16)
    md = {"general.architecture": "llama", "n": 7, "big": 2**40, "f": 0.5, "flag": True, "toks": ["a", "b"], "u": np.uint32(3)}
    if alignment is not None:
        md["general.alignment"] = alignment
    p = tmp_path_factory.mktemp("save") / "s.gguf"
    bc.save_gguf(p, tensors, metadata=md)
    reader = gguf.GGUFReader(str(p))
    assert reader.alignment == (alignment or 32)
    assert [t.name for t in reader.tensors] == list(tensors)
    for t in reader.tensors:
        want = np.asarray(tensors[t.name])
        got = np.asarray(t.data)
        if t.tensor_type == Q.BF16:
            got = got.view(bc.bfloat16).reshape(want.shape)
        assert got.dtype == want.dtype and got.shape == want.shape, t.name
        np.testing.assert_array_equal(got, want)
    fields = {k: f.contents() for k, f in reader.fields.items() if not k.startswith("GGUF.")}
    assert fields == {**md, **({"general.alignment": alignment} if alignment else {})}
    types = {k: f.types[0].name for k, f in reader.fields.items() if not k.startswith("GGUF.")}
    assert types["n"] == "INT32" and types["big"] == "INT64" and types["f"] == "FLOAT32" and types["u"] == "UINT32"
    # And blobcore reads its own file back.
    back = bc.load_gguf(p)
    for k, v in tensors.items():
        np.testing.assert_array_equal(np.asarray(back[k]), np.asarray(v))


def test_bad_saves(tmp_path):
    p = tmp_path / "x.gguf"
    with pytest.raises(bc.DTypeError, match="\"b\""):
        bc.save_gguf(p, {"b": np.zeros(2, np.uint32)})
    with pytest.raises(bc.InvalidArgumentError, match="power of two"):
        bc.save_gguf(p, {"a": np.zeros(2, np.float32)}, metadata={"general.alignment": 3})
    with pytest.raises(bc.InvalidArgumentError, match="one type"):
        bc.save_gguf(p, {}, metadata={"k": [1, "a"]})
    with pytest.raises(bc.InvalidArgumentError, match="cannot store"):
        bc.save_gguf(p, {}, metadata={"k": object()})
    with pytest.raises(bc.InvalidArgumentError, match="64 bits"):
        bc.save_gguf(p, {}, metadata={"k": 2**70})
    assert list(tmp_path.iterdir()) == []
