"""Sharded safetensors checkpoints (issue 30) against the real clients:
huggingface_hub's split (shard membership, names, total_size) and the
safetensors package (each shard's contents), over generated state dicts
with fixed seeds; checkpoints written the way transformers writes them
load through their index and directory."""

import json

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import blobcore as bc
from conftest import NUMPY_DTYPES, random_array

st_numpy = pytest.importorskip("safetensors.numpy")
hub_serialization = pytest.importorskip("huggingface_hub.serialization")

DTYPES = [np.dtype(d) for d in NUMPY_DTYPES]


@st.composite
def state_dicts(draw):
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n = draw(st.integers(0, 9))
    out = {}
    for i in range(n):
        shape = tuple(draw(st.lists(st.integers(0, 6), min_size=0, max_size=3)))
        out[f"model.layers.{i}.{draw(st.sampled_from(['weight', 'bias']))}"] = random_array(rng, shape, draw(st.sampled_from(DTYPES)))
    return out


@settings(max_examples=40, deadline=None, derandomize=True)
@given(sd=state_dicts(), max_shard=st.integers(1, 400), mmap=st.booleans())
def test_sharded_saves_split_and_name_as_huggingface_hub(tmp_path_factory, sd, max_shard, mmap):
    d = tmp_path_factory.mktemp("shards")
    index = d / "model.safetensors.index.json"
    bc.save_safetensors(index, {k: bc.Blob.from_numpy(v, copy=True) for k, v in sd.items()}, metadata={"format": "pt"}, max_shard_size=max_shard)
    # The generic splitter that huggingface_hub's torch/tf splitters call,
    # sizing tensors by their bytes (as the torch one does).
    split = hub_serialization.split_state_dict_into_shards_factory(
        sd, get_storage_size=lambda a: a.nbytes, filename_pattern="model{suffix}.safetensors", max_shard_size=max_shard)
    written = json.loads(index.read_text())
    assert written["weight_map"] == split.tensor_to_filename
    assert list(written["weight_map"]) == list(sd)  # the map's order
    assert written["metadata"] == {"total_size": split.metadata["total_size"]}
    on_disk = sorted(p.name for p in d.iterdir() if p.name != index.name)
    assert on_disk == sorted(split.filename_to_tensors)
    for shard, names in split.filename_to_tensors.items():
        ref = st_numpy.load_file(str(d / shard))
        assert set(ref) == set(names)
        for k in names:
            assert ref[k].dtype == sd[k].dtype and ref[k].shape == sd[k].shape
            np.testing.assert_array_equal(ref[k], sd[k])
    back = bc.load_safetensors(index, mmap=mmap)
    assert list(back) == list(sd)
    for k, v in sd.items():
        np.testing.assert_array_equal(np.asarray(back[k]), v)
        assert back[k].writeable is (not mmap)


def transformers_style(d, sd, shards):
    """A checkpoint written the way transformers writes one: the safetensors
    package's save_file per shard, then the index with sorted keys."""
    weight_map = {}
    n = len(shards)
    for i, names in enumerate(shards):
        name = f"model-{i + 1:05d}-of-{n:05d}.safetensors"
        st_numpy.save_file({k: sd[k] for k in names}, str(d / name), metadata={"format": "pt"})
        weight_map.update({k: name for k in names})
    total = sum(v.nbytes for v in sd.values())
    index = {"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}
    (d / "model.safetensors.index.json").write_text(json.dumps(index, indent=2, sort_keys=True) + "\n")
    return total


def test_transformers_checkpoints_load_through_index_and_directory(tmp_path, rng):
    sd = {f"h.{i}.{w}": random_array(rng, (3, i + 1), DTYPES[i % len(DTYPES)]) for i in range(7) for w in ("a", "b")}
    names = list(sd)
    total = transformers_style(tmp_path, sd, [names[:5], names[5:9], names[9:]])
    for path in (tmp_path / "model.safetensors.index.json", tmp_path, str(tmp_path)):
        for mmap in (True, False):
            back = bc.load_safetensors(path, mmap=mmap)
            assert list(back) == sorted(sd)  # the index's order
            for k, v in sd.items():
                np.testing.assert_array_equal(np.asarray(back[k]), v)
    md = bc.safetensors_metadata(tmp_path / "model.safetensors.index.json")
    assert md == {"total_size": str(total), "format": "pt"}
    # Saved back as shards, the safetensors package reads every one.
    out = tmp_path / "out"
    out.mkdir()
    bc.save_safetensors(out, back, max_shard_size=100)
    for shard in sorted(out.glob("model-*.safetensors")):
        for k, v in st_numpy.load_file(str(shard)).items():
            np.testing.assert_array_equal(v, sd[k])
    assert sorted(bc.load_safetensors(out)) == sorted(sd)


def test_directory_saves_follow_transformers(tmp_path):
    sd = {"a": np.ones(100, np.float32), "b": np.zeros(100, np.float32)}
    bc.save_safetensors(tmp_path, sd, max_shard_size="0.4KB")
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors", "model.safetensors.index.json"]
    # One shard: model.safetensors alone; the earlier shards and index go.
    bc.save_safetensors(tmp_path, sd)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.safetensors"]
    np.testing.assert_array_equal(np.asarray(bc.load_safetensors(tmp_path)["b"]), sd["b"])


def test_bad_sharded_saves_and_indexes(tmp_path):
    sd = {"a": np.ones(4, np.float32)}
    for bad in ("5XB", "", "GB", "-1MB", "0"):
        with pytest.raises(bc.InvalidArgumentError):
            bc.save_safetensors(tmp_path / "m.safetensors.index.json", sd, max_shard_size=bad)
    for bad in (0, -3, 1.5, [1]):
        with pytest.raises(bc.InvalidArgumentError):
            bc.save_safetensors(tmp_path / "m.safetensors.index.json", sd, max_shard_size=bad)
    with pytest.raises(bc.InvalidArgumentError, match="ending in .index.json"):
        bc.save_safetensors(tmp_path / "m.safetensors", sd, max_shard_size=10)
    assert list(tmp_path.iterdir()) == []
    bc.save_safetensors(tmp_path / "m.safetensors.index.json", sd, max_shard_size=8)
    index = tmp_path / "m.safetensors.index.json"
    good = json.loads(index.read_text())
    for change, says in [
        (lambda j: j["weight_map"].update(a="gone.safetensors"), "does not exist"),
        (lambda j: j["weight_map"].update(a="../m.safetensors"), "not a file name"),
        (lambda j: j["weight_map"].update(ghost="m.safetensors"), "is not in shard"),
        (lambda j: j["metadata"].update(total_size=17), "total_size says 17"),
        (lambda j: j.pop("weight_map"), "no \"weight_map\""),
    ]:
        j = json.loads(json.dumps(good))
        change(j)
        index.write_text(json.dumps(j))
        with pytest.raises(bc.FormatError, match=says):
            bc.load_safetensors(index)
        with pytest.raises(bc.FormatError, match=says):
            bc.safetensors_metadata(index)
    with pytest.raises(bc.IoError, match="nope.index.json"):
        bc.load_safetensors(tmp_path / "nope.index.json")
