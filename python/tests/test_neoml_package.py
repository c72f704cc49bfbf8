"""NeoML's two archive forms against the real ``neoml`` package (2.0.210):
files ``neoml.Blob.store`` writes (``CDnnBlob::Serialize``'s form, starting
``FF D0 07 00 00``) load here with the values NeoML itself reports, and
files written here with ``form="serialize"`` load in ``neoml.Blob.load``
with our values. The package needs NumPy 1.x, so it runs in its own
environment (``.venv-neoml``, made by ``make test``; another interpreter can
be named by ``BLOBCORE_NEOML_PYTHON``) through a subprocess."""

import json
import os
import pathlib
import subprocess

import numpy as np
import pytest

import blobcore as bc

ROOT = pathlib.Path(__file__).resolve().parents[2]

# Runs under the neoml environment's interpreter. argv: mode, directory.
# "store": writes blobs with neoml.Blob.store and, as the independent
# record of their values, NeoML's own asarray() of them as .npy files.
# "load": loads every case.bin with neoml.Blob.load and saves what NeoML
# reads as .npy, with its shape in a JSON file.
SCRIPT = r"""
import json, pathlib, sys
import numpy as np
import neoml

mode, d = sys.argv[1], pathlib.Path(sys.argv[2])
me = neoml.MathEngine.CpuMathEngine()
if mode == "store":
    cases = json.loads((d / "cases.json").read_text())
    for name, c in cases.items():
        a = (np.arange(int(np.prod(c["shape"]))) * c["step"] + c["start"]).astype(c["dtype"])
        b = neoml.Blob.asblob(me, a.reshape(c["shape"]), c["shape"], copy=True)
        neoml.Blob.store(b, str(d / (name + ".bin")))
        np.save(d / (name + ".npy"), b.asarray(copy=True))
else:
    shapes = {}
    for f in sorted(d.glob("*.bin")):
        b = neoml.Blob.load(me, str(f))
        shapes[f.stem] = list(b.shape)
        np.save(d / (f.stem + ".npy"), b.asarray(copy=True))
    (d / "shapes.json").write_text(json.dumps(shapes))
"""


def neoml_python():
    exe = os.environ.get("BLOBCORE_NEOML_PYTHON") or str(ROOT / ".venv-neoml" / "bin" / "python")
    ok = pathlib.Path(exe).exists() and subprocess.run([exe, "-c", "import neoml"], capture_output=True).returncode == 0
    if not ok:
        if os.environ.get("BLOBCORE_REQUIRE_NEOML"):
            pytest.fail(f"BLOBCORE_REQUIRE_NEOML is set but {exe} cannot import neoml (make test builds .venv-neoml)")
        pytest.skip(f"the neoml package is not available at {exe} (make test builds .venv-neoml)")
    return exe


def run_neoml(mode, d):
    r = subprocess.run([neoml_python(), "-c", SCRIPT, mode, str(d)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


CASES = {
    "f32_vector": {"shape": [1, 1, 1, 1, 1, 1, 7], "dtype": "float32", "start": -3.5, "step": 0.25},
    "f32_image": {"shape": [2, 3, 1, 4, 5, 1, 3], "dtype": "float32", "start": 0.0, "step": 1.5},
    "i32_list": {"shape": [2, 1, 3, 1, 1, 1, 4], "dtype": "int32", "start": -12, "step": 1},
}


def test_files_neoml_stores_load_here(tmp_path):
    (tmp_path / "cases.json").write_text(json.dumps(CASES))
    run_neoml("store", tmp_path)
    for name, c in CASES.items():
        raw = (tmp_path / f"{name}.bin").read_bytes()
        assert raw[:5] == bytes.fromhex("ffd0070000"), name  # CDnnBlob::Serialize's form
        want = np.load(tmp_path / f"{name}.npy")
        b = bc.load_neoml(tmp_path / f"{name}.bin")
        assert b.shape == tuple(c["shape"]) and np.dtype(b.dtype) == np.dtype(c["dtype"])
        np.testing.assert_array_equal(np.asarray(b).reshape(-1), want.reshape(-1))
        # Written back in the same form, the bytes are NeoML's exactly.
        assert b.to_neoml_bytes(form="serialize") == raw
        # And SerializeBlob's form is the isNull byte followed by them.
        assert b.to_neoml_bytes(form="blob") == b"\x00" + raw


def test_neoml_loads_what_we_write_in_its_form(tmp_path, rng):
    blobs = {
        "a_f32": bc.Blob.from_numpy(rng.standard_normal((2, 3, 4)).astype(np.float32)),
        "b_i32": bc.Blob.from_numpy(rng.integers(-1000, 1000, size=(3, 1, 1, 1, 1, 1, 5)).astype(np.int32)),
        "c_vector": bc.Blob.from_numpy(np.linspace(-1, 1, 9, dtype=np.float32)),
    }
    for name, b in blobs.items():
        b.save_neoml(tmp_path / f"{name}.bin", form="serialize")
    run_neoml("load", tmp_path)
    shapes = json.loads((tmp_path / "shapes.json").read_text())
    for name, b in blobs.items():
        padded = tuple(b.shape) + (1,) * (7 - b.ndim)
        assert tuple(shapes[name]) == padded, name
        got = np.load(tmp_path / f"{name}.npy")
        np.testing.assert_array_equal(got.reshape(-1), np.asarray(b).reshape(-1))


def test_both_forms_round_trip_here(tmp_path):
    b = bc.Blob.from_numpy(np.arange(12, dtype=np.int32).reshape(3, 4))
    for form in ["blob", "serialize"]:
        b.save_neoml(tmp_path / f"{form}.bin", form=form)
        back = bc.load_neoml(tmp_path / f"{form}.bin")
        assert back.shape == (3, 4, 1, 1, 1, 1, 1)
        np.testing.assert_array_equal(np.asarray(back).reshape(3, 4), np.asarray(b))
    assert (tmp_path / "serialize.bin").read_bytes()[:5] == bytes.fromhex("ffd0070000")
    assert (tmp_path / "blob.bin").read_bytes()[:6] == bytes.fromhex("00ffd0070000")
    with pytest.raises(bc.InvalidArgumentError, match="neither"):
        b.save_neoml(tmp_path / "x.bin", form="pickle")
