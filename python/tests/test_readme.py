"""The README's Python snippets are part of the product: they type-check
under ``mypy --strict`` against the shipped stubs, and the ones that need
no GPU run and do what their comments say."""

import os
import pathlib
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

import blobcore as bc

ROOT = pathlib.Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
CAFFE = ROOT.parent / "shared" / "data" / "caffe"


def snippets() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), re.S)


def test_readme_has_the_snippets_this_file_checks():
    found = snippets()
    assert len(found) >= 5
    assert any("pickle.dumps" in s for s in found)
    assert any("Engine.gpu" in s for s in found)


def test_readme_snippets_pass_mypy_strict(tmp_path):
    pytest.importorskip("mypy")
    # One module, in README order: later snippets use names earlier ones made.
    module = tmp_path / "readme_snippets.py"
    module.write_text("\n".join(snippets()))
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", os.devnull, str(module)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stdout + run.stderr


def test_readme_snippets_run(tmp_path, monkeypatch, capsys):
    # The file snippet opens imagenet_mean.binaryproto in the working directory.
    shutil.copy(CAFFE / "imagenet_mean.binaryproto", tmp_path)
    monkeypatch.chdir(tmp_path)
    scope: dict[str, object] = {}
    ran = 0
    for code in snippets():
        if "Engine.gpu" in code or "Engine.cuda" in code:
            continue  # test_gpu.py / test_cuda.py cover them; CI has no NVIDIA GPU
        exec(compile(code, "README.md", "exec"), scope)
        ran += 1
    assert ran >= 4
    # What the comments promise.
    out = capsys.readouterr().out.split("\n")
    assert out[0] == "56.0 3"
    assert "busy" in out[1].lower() or "shared" in out[1].lower(), out[1]
    x = np.asarray(scope["b"])
    expect = np.arange(24, dtype=np.float32).reshape(2, 4, 3)
    expect[:, 0] = 7
    np.testing.assert_array_equal(x, expect)
    np.testing.assert_array_equal(np.asarray(scope["v"]), expect[1, ::2, None])
    np.testing.assert_array_equal(np.asarray(scope["sel"]), expect[expect > 3])
    assert scope["s"] == expect[0, 0, 0]
    np.testing.assert_array_equal(np.asarray(scope["t2"]), expect.transpose(1, 0, 2))
    np.testing.assert_array_equal(np.asarray(scope["i8"]), expect.astype(np.int8))
    np.testing.assert_array_equal(np.asarray(scope["same"]), expect)
    assert len(scope["bufs"]) == 1  # type: ignore[arg-type]
    assert scope["t"].offset(1) == 8 and scope["t"].offset([0, 1, 0, 2]) == 17  # type: ignore[attr-defined]
    nchw = scope["nchw"]
    np.testing.assert_array_equal(np.asarray(scope["roi"]), nchw[0:1, 2:4, 3:5, 4:7])  # type: ignore[index]
    back = bc.Blob.tensor([1, 25, 20, 20])
    back.reorder_from(scope["b8"])  # type: ignore[arg-type]
    np.testing.assert_array_equal(np.asarray(back), nchw)
    assert scope["st_meta"] == {"format": "np"} and not scope["st_w"].writeable  # type: ignore[attr-defined]
    assert scope["st_fresh"]["layer0.weight"].writeable  # type: ignore[index]
    assert [b.shape for b in scope["net_params"]["ip1"]] == [(4, 3), (4,)]  # type: ignore[index]
    mean = np.asarray(scope["mean"])
    assert mean.shape == (1, 3, 256, 256)
    np.testing.assert_array_equal(np.load("imagenet_mean.npy"), mean)
    np.testing.assert_array_equal(np.asarray(scope["copy"]), mean)
    assert [np.asarray(p).shape for p in scope["pair"]] == [mean.shape] * 2  # type: ignore[attr-defined]
    np.testing.assert_array_equal(np.asarray(scope["again"]).reshape(mean.shape), mean)
