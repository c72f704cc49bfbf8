"""Every operation on every kind of blob, against NumPy on ``np.asarray``.

The audit of issue 27: for every dtype, ranks 0-5 and every kind of blob
(dense, stepped and reversed views, transposes, regions, windows, NHWC and
other planar layouts, channel-blocked nChw8c/16c and padded layouts), each
operation's result is compared with NumPy's on ``np.asarray`` of the same
view, and errors with the result on a dense blob of the same values. An
``UnsupportedError`` is a failure unless ``(operation, kind)`` is in
``REFUSALS`` — and README's "What blobcore refuses, and why" lists exactly
those.
"""

import io
import pathlib
import pickle
import re

import ml_dtypes
import numpy as np
import pytest

import blobcore as bc

DTYPES = [
    np.float32, np.float64, np.float16, ml_dtypes.bfloat16, np.int8, np.uint8, np.int32, np.int64,
    np.bool_, np.int16, np.uint16, np.uint32, np.uint64, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2, ml_dtypes.float8_e8m0fnu,
]
# ml_dtypes' types: NumPy has no DLPack or PEP 3118 code for them.
ML = {np.dtype(d) for d in (ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2, ml_dtypes.float8_e8m0fnu)}

# (operation, kind) pairs that are refused, with words of the reason. Every
# entry must be hit by the audit, and README's list must match.
REFUSALS = {
    ("memoryview", "blocked8"): "cannot be exported as a strided array",
    ("memoryview", "blocked16"): "cannot be exported as a strided array",
    ("dlpack_no_copy", "blocked8"): "cannot be exported as a strided array",
    ("dlpack_no_copy", "blocked16"): "cannot be exported as a strided array",
    ("asarray_no_copy", "blocked8"): "no strides NumPy could view",
    ("asarray_no_copy", "blocked16"): "no strides NumPy could view",
    ("partial_channels", "blocked8"): "inside its blocks",
    ("partial_channels", "blocked16"): "inside its blocks",
}
# Kinds whose in-place reshape (Caffe's Reshape changes the blob itself)
# cannot be expressed: a strided or laid-out blob's memory is not its
# row-major values. NumPy's reshape would copy; `b.copy().reshape()` does.
RESHAPE_REFUSED = {"T", "step", "neg", "region", "nhwc", "blocked8", "blocked16", "padded", "hwc", "cn", "ndhwc"}
for _k in RESHAPE_REFUSED:
    REFUSALS[("reshape", _k)] = "reorder it into a dense blob first"


def contiguous(x):
    """A C-order copy that keeps rank 0 (np.ascontiguousarray makes it 1-d)."""
    return np.array(x, order="C", copy=True)


def values(rng, shape, dtype):
    if np.dtype(dtype) == np.bool_:
        return np.asarray(rng.integers(0, 2, size=shape)).astype(bool)
    if np.dtype(dtype) == np.dtype(ml_dtypes.float8_e8m0fnu):  # positive: no NaN
        return np.asarray(np.abs(rng.standard_normal(shape)) * 4 + 0.01).astype(dtype)
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        return np.asarray(rng.integers(max(info.min, -100), min(info.max, 100), size=shape, endpoint=True)).astype(dtype)
    return np.asarray(rng.standard_normal(shape) * 4).astype(dtype)


def kinds(rng, rank, dtype):
    """(name, blob, oracle) for every kind of blob of this rank; the oracle
    is the same view taken by NumPy on an independent array."""
    shape = tuple(int(x) for x in rng.integers(1, 5, size=rank))
    a = values(rng, shape, dtype)
    yield "dense", bc.Blob.from_numpy(a.copy()), a
    if rank == 0:
        return
    big = values(rng, tuple(2 * d + 1 for d in shape), dtype)
    yield "step", bc.Blob.from_numpy(big.copy())[tuple(slice(None, None, 2) for _ in shape)], big[tuple(slice(None, None, 2) for _ in shape)]
    key = tuple(slice(None, None, -1 if i % 2 == 0 else -2) for i in range(rank))
    yield "neg", bc.Blob.from_numpy(big.copy())[key], big[key]
    yield "T", bc.Blob.from_numpy(a.copy()).T, a.T
    begin = [1] * rank
    end = [d + 1 for d in shape]
    yield "region", bc.Blob.from_numpy(big.copy()).region(begin, end), big[tuple(slice(1, d + 1) for d in shape)]
    w = bc.Blob.from_numpy(a.copy()).window(1)
    yield "window", w, a[0:1]
    layouts = {2: [("cn", bc.Layout.CN)], 3: [("hwc", bc.Layout.HWC)], 4: [("nhwc", bc.Layout.NHWC)], 5: [("ndhwc", bc.Layout.NDHWC)]}
    for name, layout in layouts.get(rank, []):
        b = bc.Blob.with_desc(bc.TensorDesc(bc.Blob.tensor([1], dtype=dtype).dtype, list(shape), layout))
        b.copy_from(a)
        yield name, b, a
    if rank == 4:
        n, c, h, w_ = shape
        c = c + 7  # channels that do not fill the last block
        a4 = values(rng, (n, c, h, w_), dtype)
        for blk in (8, 16):
            desc = bc.TensorDesc(bc.Blob.tensor([1], dtype=dtype).dtype, [n, c, h, w_], bc.BlockingDesc([n, -(-c // blk), h, w_, blk], [0, 1, 2, 3, 1]))
            b = bc.Blob.with_desc(desc)
            b.copy_from(a4)
            yield f"blocked{blk}", b, a4
        # padded: an offset before the data and gaps between rows
        st = [c * h * (w_ + 3), h * (w_ + 3), w_ + 3, 1]
        desc = bc.TensorDesc(bc.Blob.tensor([1], dtype=dtype).dtype, [n, c, h, w_], bc.BlockingDesc([n, c, h, w_], [0, 1, 2, 3], 5, None, st))
        b = bc.Blob.with_desc(desc)
        b.copy_from(a4)
        yield "padded", b, a4


def same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert str(got.dtype) == str(want.dtype), (got.dtype, want.dtype)
    np.testing.assert_array_equal(got.view(np.uint8) if got.dtype.itemsize == 1 else got, want.view(np.uint8) if want.dtype.itemsize == 1 else want)


def roundtrip_npy(b, a, tmp):
    same(np.load(io.BytesIO(b.to_npy_bytes())), a)
    b.save_npy(tmp / "x.npy")
    same(np.load(tmp / "x.npy"), a)
    same(bc.load_npy(tmp / "x.npy"), a)


def roundtrip_safetensors(b, a, tmp):
    bc.save_safetensors(tmp / "x.st", {"x": b})
    same(bc.load_safetensors(tmp / "x.st", mmap=False)["x"], a)


def roundtrip_caffe(b, a, tmp):
    same(bc.from_caffe_bytes(b.to_caffe_bytes()), np.asarray(a).reshape(b.shape))
    b.save_caffe(tmp / "x.pb")
    same(bc.load_caffe(tmp / "x.pb"), a)
    bc.save_caffe_vector(tmp / "x.pbv", [b, b])
    for got in bc.load_caffe_vector(tmp / "x.pbv"):
        same(got, a)
    bc.save_caffemodel(tmp / "x.cm", {"ip": [b]})
    same(bc.load_caffemodel(tmp / "x.cm")["ip"][0], a)


def roundtrip_neoml(b, a, tmp):
    got = bc.from_neoml_bytes(b.to_neoml_bytes())
    same(np.asarray(got).reshape(a.shape), a)
    b.save_neoml(tmp / "x.neoml")
    same(np.asarray(bc.load_neoml(tmp / "x.neoml")).reshape(a.shape), a)


def ops():
    """(name, run(blob, oracle, tmp)) — each checks its result itself."""
    def asarray(b, a, tmp):
        same(np.asarray(b), a)
        same(b.numpy(), a)

    def tolist(b, a, tmp):
        assert b.tolist() == a.tolist() or np.array_equal(np.array(b.tolist(), dtype=a.dtype), a)

    def iterate(b, a, tmp):
        if a.ndim:
            rows = list(b)
            assert len(rows) == len(a)
            for r, ra in zip(rows, a):
                same(r, ra)

    def copy(b, a, tmp):
        c = b.copy()
        assert c.is_dense
        same(c, a)

    def astype(b, a, tmp):
        same(b.astype(np.float64), a.astype(np.float64))
        same(b.astype(np.int32), a.astype(np.float64).astype(np.int32) if a.dtype.kind == "f" or a.dtype in ML else a.astype(np.int32))

    def fill(b, a, tmp):
        b.fill(3)
        same(b, np.full(a.shape, 3, a.dtype))

    def clear(b, a, tmp):
        b.clear()
        same(b, np.zeros(a.shape, a.dtype))

    def scale(b, a, tmp):
        if a.dtype.kind != "f" or a.dtype == np.float16 or a.dtype == ml_dtypes.bfloat16:
            before = b.copy()
            b.scale(2)
            before.scale(2)  # the dense kernel is the reference
            same(b, before)
        else:
            b.scale(2)
            same(b, a * a.dtype.type(2))

    def add(b, a, tmp):
        before = b.copy()
        b.add(before)
        before.add(before.copy())
        same(b, before)

    def add_self(b, a, tmp):
        b.add(b)  # the same view on both sides
        want = bc.Blob.from_numpy(contiguous(a))
        want.add(want.copy())
        same(b, want)

    def reductions(b, a, tmp):
        d = bc.Blob.from_numpy(contiguous(a))
        assert b.asum() == d.asum() and b.sumsq() == d.sumsq()

    def copy_from_array(b, a, tmp):
        src = np.flip(contiguous(a), axis=None) if a.ndim else a
        b.copy_from(contiguous(src))
        same(b, src)

    def copy_from_blob(b, a, tmp):
        src = a[..., ::-1] if a.ndim else a
        b.copy_from(bc.Blob.from_numpy(contiguous(src))[...])
        same(b, src)

    def copy_from_reversed_view(b, a, tmp):
        if not a.ndim:
            return
        src = bc.Blob.from_numpy(contiguous(a))[::-1]
        b.copy_from(src)
        same(b, a[::-1])

    def getitem(b, a, tmp):
        if a.ndim:
            same(b[-1], a[-1])
            same(b[..., ::-1], a[..., ::-1])
            same(b[None, ..., 0], a[None, ..., 0])

    def setitem(b, a, tmp):
        want = a.copy()
        if a.ndim:
            b[0] = 7
            want[0] = 7
            b[..., -1] = 5
            want[..., -1] = 5
        else:
            b[()] = 4
            want[()] = 4
        same(b, want)

    def pickles(b, a, tmp):
        for proto in (2, 5):
            same(pickle.loads(pickle.dumps(b, protocol=proto)), a)

    def dlpack(b, a, tmp):
        if a.dtype in ML:
            got = bc.from_dlpack(b)
        else:
            got = np.from_dlpack(b)
        same(got, a)

    def dlpack_no_copy(b, a, tmp):
        cap = b.__dlpack__(max_version=(1, 1), copy=False)
        same(bc.from_dlpack(cap), a)

    def asarray_no_copy(b, a, tmp):
        v = np.asarray(b, copy=False) if a.dtype not in ML else b.__array__(copy=False)
        same(v, a)

    def memview(b, a, tmp):
        if a.dtype in ML:
            return  # no PEP 3118 code for bfloat16 or float8 (README)
        same(np.asarray(memoryview(b)), a)

    def merge_split(b, a, tmp):
        if not a.ndim:
            return
        m = bc.merge([b, b], 0)
        same(m, np.concatenate([a, a], 0))
        parts = bc.split(m, 2, 0)
        for p in parts:
            same(p, a)

    def partial_channels(b, a, tmp):
        if a.ndim == 4:
            same(b[:, 1:], a[:, 1:])
            same(b.region([0, 1, 0, 0], list(a.shape)), a[:, 1:])

    def setitem_partial_channels(b, a, tmp):
        # Assignment through keys no layout describes as a view (inside
        # the blocks of a blocked dim) goes through a dense copy: every
        # layout takes it.
        if a.ndim == 4:
            want = a.copy()
            b[:, 1:] = 3
            want[:, 1:] = 3
            vals = np.arange(want[:, ::3].size).reshape(want[:, ::3].shape).astype(a.dtype)
            b[:, ::3] = vals
            want[:, ::3] = vals
            src = bc.Blob.from_numpy(want[:1, :2, 0].copy())
            b[1:, -2:, 0] = src
            want[1:, -2:, 0] = want[:1, :2, 0]
            same(b, want)

    def transposes(b, a, tmp):
        if a.ndim >= 2:
            same(b.transpose(), a.T)
            same(b.transposed(0, a.ndim - 1), np.swapaxes(a, 0, a.ndim - 1))
            same(b.permuted(list(range(a.ndim))[::-1]), a.T)

    def data_at(b, a, tmp):
        if a.ndim:
            idx = [d - 1 for d in a.shape]
            assert b.data_at(idx) == float(a[tuple(idx)]) or np.isnan(float(a[tuple(idx)]))

    def reshape(b, a, tmp):
        b.reshape([a.size])
        same(b, a.reshape(-1))

    def windows(b, a, tmp):
        if a.ndim and a.shape[0] >= 1:
            w = b.window(1)
            same(w, a[0:1])
            if a.shape[0] > 1:
                w.set_parent_pos(a.shape[0] - 1)
                same(w, a[-1:])

    return [
        ("asarray", asarray), ("tolist", tolist), ("iter", iterate), ("copy", copy), ("astype", astype),
        ("fill", fill), ("clear", clear), ("scale", scale), ("add", add), ("add_self", add_self),
        ("reductions", reductions), ("copy_from_array", copy_from_array), ("copy_from_blob", copy_from_blob),
        ("copy_from_reversed_view", copy_from_reversed_view), ("getitem", getitem), ("setitem", setitem),
        ("pickle", pickles), ("dlpack", dlpack), ("dlpack_no_copy", dlpack_no_copy), ("asarray_no_copy", asarray_no_copy),
        ("memoryview", memview), ("merge_split", merge_split), ("partial_channels", partial_channels),
        ("setitem_partial_channels", setitem_partial_channels),
        ("transposes", transposes), ("data_at", data_at), ("windows", windows), ("reshape", reshape),
        ("npy", roundtrip_npy), ("safetensors", roundtrip_safetensors), ("caffe", roundtrip_caffe), ("neoml", roundtrip_neoml),
    ]


def dense_error(run, a, tmp):
    """The error (class) the operation gives on a dense blob of the values."""
    try:
        run(bc.Blob.from_numpy(contiguous(a).copy()), contiguous(a).copy(), tmp)
    except Exception as e:  # noqa: BLE001 - compared by class below
        return type(e)
    return None


HIT = {}  # (rank, dtype index) -> the listed refusals that audit reached


def audit(dtype, rank, tmp_path):
    hit = set()
    rng = np.random.default_rng(1000 * rank + DTYPES.index(dtype))
    seen = set()
    for name, run in ops():
        for kind, blob, oracle in kinds(rng, rank, dtype):
            seen.add(kind)
            want_err = dense_error(run, oracle, tmp_path)
            try:
                run(blob, oracle.copy(), tmp_path)
            except Exception as e:  # noqa: BLE001 - sorted out below
                reason = REFUSALS.get((name, kind))
                if reason is not None and reason in str(e):
                    hit.add((name, kind))  # a listed refusal (its type is the protocol's)
                    continue
                assert not isinstance(e, bc.UnsupportedError), f"{name} on {kind} ({rank}-d {np.dtype(dtype).name}) refused: {e}"
                assert want_err is type(e), f"{name} on {kind} ({rank}-d {np.dtype(dtype).name}): {type(e).__name__}: {e}"
                continue
            assert want_err is None, f"{name} on {kind}: succeeded where the dense blob raised {want_err}"
    HIT[(rank, DTYPES.index(dtype))] = hit
    if rank == 4:
        assert {"dense", "T", "step", "neg", "region", "window", "nhwc", "blocked8", "blocked16", "padded"} <= seen


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("rank", range(6))
def test_every_operation_on_every_kind_matches_numpy(dtype, rank, tmp_path):
    audit(dtype, rank, tmp_path)


def test_every_refusal_is_reached_and_listed_in_the_readme(tmp_path):
    # Every allowed refusal is reached by the audit (run here for whatever
    # the audit tests above did not cover in this process).
    for rank in range(6):
        for i, dtype in enumerate(DTYPES):
            if (rank, i) not in HIT:
                audit(dtype, rank, tmp_path)
    hit = set().union(*HIT.values())
    assert hit == set(REFUSALS), sorted(set(REFUSALS) - hit)
    readme = (pathlib.Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme.split("### What blobcore refuses, and why", 1)[1].split("\n### ", 1)[0].split("\n## ", 1)[0]
    listed = set(re.findall(r"^- `([a-z_]+)` on `([A-Za-z0-9_, ]+)`", section, re.M))
    pairs = {(op, k.strip()) for op, ks in listed for k in ks.split(",")}
    assert pairs == set(REFUSALS), (sorted(pairs - set(REFUSALS)), sorted(set(REFUSALS) - pairs))
