//! Sharded safetensors checkpoints: save as shards + index, load through
//! the index or its directory, and hostile indexes as Format errors that
//! name what is wrong.

mod common;

use blobcore::{Blob, BlobMap, Error};
use proptest::prelude::*;
use std::path::{Path, PathBuf};

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("blobcore-sharded-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn sample(sizes: &[usize]) -> BlobMap {
    let e = common::engine();
    let mut m = BlobMap::new();
    for (i, &n) in sizes.iter().enumerate() {
        let v: Vec<f32> = (0..n).map(|k| (i * 1000 + k) as f32).collect();
        m.insert(format!("layer.{i}.weight"), Blob::from_slice(&e, &[n], &v).unwrap());
    }
    m.set_metadata("format", "pt");
    m
}

fn same(a: &BlobMap, b: &BlobMap) {
    assert_eq!(a.names().collect::<Vec<_>>(), b.names().collect::<Vec<_>>());
    for n in a.names() {
        assert_eq!(a.get(n).unwrap().to_vec::<f32>().unwrap(), b.get(n).unwrap().to_vec::<f32>().unwrap(), "{n}");
    }
}

fn files(d: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(d).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    v.sort();
    v
}

#[test]
fn shards_round_trip_through_the_index_and_the_directory() {
    let d = tmp("roundtrip");
    let m = sample(&[10, 30, 5, 40, 1]);
    let index = d.join("model.safetensors.index.json");
    // 80 bytes per shard of 40, 120, 20, 160 and 4 bytes: the two over
    // the limit get shards of their own when met, the rest share the last.
    m.save_safetensors_sharded(&index, 80).unwrap();
    assert_eq!(
        files(&d),
        ["model-00001-of-00003.safetensors", "model-00002-of-00003.safetensors", "model-00003-of-00003.safetensors", "model.safetensors.index.json"]
    );
    let first = BlobMap::load_safetensors(&common::engine(), d.join("model-00001-of-00003.safetensors"), true).unwrap();
    assert_eq!(first.names().collect::<Vec<_>>(), ["layer.1.weight"]);
    let last = BlobMap::load_safetensors(&common::engine(), d.join("model-00003-of-00003.safetensors"), true).unwrap();
    assert_eq!(last.len(), 3);
    for mmap in [true, false] {
        let back = BlobMap::load_safetensors(&common::engine(), &index, mmap).unwrap();
        same(&m, &back);
        assert_eq!(back.metadata_value("total_size"), Some("344"));
        assert_eq!(back.metadata_value("format"), Some("pt"));
        let back = BlobMap::load_safetensors(&common::engine(), &d, mmap).unwrap();
        same(&m, &back);
    }
    // A directory save of one shard is model.safetensors alone, and
    // removes the earlier save's shards and index.
    m.save_safetensors_sharded(&d, 1 << 20).unwrap();
    assert_eq!(files(&d), ["model.safetensors"]);
    same(&m, &BlobMap::load_safetensors(&common::engine(), &d, true).unwrap());
    // save_safetensors to a directory shards at the default size.
    let d2 = tmp("default");
    m.save_safetensors(&d2).unwrap();
    assert_eq!(files(&d2), ["model.safetensors"]);
    std::fs::remove_dir_all(&d).unwrap();
    std::fs::remove_dir_all(&d2).unwrap();
}

#[test]
fn bad_sharded_saves_write_nothing() {
    let d = tmp("badsave");
    let m = sample(&[4, 4]);
    assert!(matches!(m.save_safetensors_sharded(d.join("x.safetensors"), 8), Err(Error::InvalidArgument(_))));
    assert!(matches!(m.save_safetensors_sharded(d.join("m.index.json"), 0), Err(Error::InvalidArgument(_))));
    assert!(matches!(m.save_safetensors_sharded(d.join(".safetensors.index.json"), 8), Err(Error::InvalidArgument(_))));
    let mut two = sample(&[4]);
    two.push("layer.0.weight", Blob::from_slice(&common::engine(), &[1], &[0f32]).unwrap());
    assert!(matches!(two.save_safetensors_sharded(d.join("m.index.json"), 8), Err(Error::InvalidArgument(_))));
    assert!(files(&d).is_empty(), "{:?}", files(&d));
    std::fs::remove_dir_all(&d).unwrap();
}

/// Writes `index` (JSON text) next to shards saved from `sample(&[2, 3])`
/// as model-00001-of-00002 (layer.1: 12 bytes, over the limit of 8, has a
/// shard of its own first) and model-00002-of-00002 (layer.0).
fn hostile(case: &str, index: &str) -> Error {
    let d = tmp(case);
    sample(&[2, 3]).save_safetensors_sharded(d.join("model.safetensors.index.json"), 8).unwrap();
    let p = d.join("model.safetensors.index.json");
    std::fs::write(&p, index).unwrap();
    let r = BlobMap::load_safetensors(&common::engine(), &p, true);
    std::fs::remove_dir_all(&d).unwrap();
    r.err().unwrap_or_else(|| panic!("{case}: the index loaded"))
}

#[test]
fn hostile_indexes_are_format_errors_naming_the_problem() {
    let a = "model-00002-of-00002.safetensors"; // layer.0
    let b = "model-00001-of-00002.safetensors"; // layer.1
    let cases: Vec<(&str, String, &str)> = vec![
        ("notjson", "{".into(), "not JSON"),
        ("array", "[]".into(), "not a JSON object"),
        ("nomap", r#"{"metadata": {}}"#.into(), "no \"weight_map\""),
        ("mapnum", r#"{"weight_map": 3}"#.into(), "not an object"),
        ("shardnum", r#"{"weight_map": {"layer.0.weight": 1}}"#.into(), "not a shard file name"),
        ("missing", format!(r#"{{"weight_map": {{"layer.0.weight": "{a}", "layer.1.weight": "nope.safetensors"}}}}"#), "does not exist"),
        ("traversal", r#"{"weight_map": {"layer.0.weight": "../etc/passwd"}}"#.into(), "not a file name"),
        ("absent", format!(r#"{{"weight_map": {{"layer.0.weight": "{a}", "layer.1.weight": "{b}", "ghost": "{a}"}}}}"#), "\"ghost\" is not in shard"),
        ("wrongshard", format!(r#"{{"weight_map": {{"layer.0.weight": "{b}", "layer.1.weight": "{a}"}}}}"#), "but the weight map puts it in"),
        ("total", format!(r#"{{"metadata": {{"total_size": 21}}, "weight_map": {{"layer.0.weight": "{a}", "layer.1.weight": "{b}"}}}}"#), "total_size says 21 bytes but the tensors hold 20"),
        ("totalstr", format!(r#"{{"metadata": {{"total_size": "20"}}, "weight_map": {{"layer.0.weight": "{a}", "layer.1.weight": "{b}"}}}}"#), "not a whole number"),
    ];
    for (case, index, says) in cases {
        let e = hostile(case, &index);
        assert!(matches!(e, Error::Format(_)), "{case}: {e:?}");
        assert!(e.message().contains(says), "{case}: {e}");
    }
    // A shard holding a tensor the weight map does not list.
    let d = tmp("unlisted");
    let p = d.join("model.safetensors.index.json");
    sample(&[2, 3]).save_safetensors_sharded(&p, 100).unwrap();
    std::fs::write(&p, r#"{"weight_map": {"layer.0.weight": "model.safetensors"}}"#).unwrap();
    let e = BlobMap::load_safetensors(&common::engine(), &p, true).unwrap_err();
    assert!(matches!(e, Error::Format(ref m) if m.contains("\"layer.1.weight\", which the weight map does not list")), "{e:?}");
    std::fs::remove_dir_all(&d).unwrap();
    // A tensor in two shards: a third shard holding layer.0 again.
    let d = tmp("twice");
    sample(&[2, 3]).save_safetensors_sharded(d.join("model.safetensors.index.json"), 8).unwrap();
    sample(&[2]).save_safetensors(d.join("extra.safetensors")).unwrap();
    let p = d.join("model.safetensors.index.json");
    std::fs::write(&p, format!(r#"{{"weight_map": {{"layer.0.weight": "{a}", "layer.1.weight": "{b}", "x": "extra.safetensors"}}}}"#)).unwrap();
    let e = BlobMap::load_safetensors(&common::engine(), &p, false).unwrap_err();
    assert!(matches!(e, Error::Format(ref m) if m.contains("in two shards")), "{e:?}");
    std::fs::remove_dir_all(&d).unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, rng_seed: proptest::test_runner::RngSeed::Fixed(29), failure_persistence: None, ..ProptestConfig::default() })]

    /// Any sizes and limit: every tensor comes back equal and in order,
    /// each shard holds at most the limit unless it holds one tensor, and
    /// the shards are numbered 1..=n.
    #[test]
    fn any_split_round_trips(sizes in prop::collection::vec(0usize..64, 0..12), max in 1u64..300) {
        let d = tmp("prop");
        let m = sample(&sizes);
        let index = d.join("w.safetensors.index.json");
        m.save_safetensors_sharded(&index, max).unwrap();
        let back = BlobMap::load_safetensors(&common::engine(), &index, true).unwrap();
        same(&m, &back);
        let shards: Vec<String> = files(&d).into_iter().filter(|f| f != "w.safetensors.index.json").collect();
        let n = shards.len();
        for (i, s) in shards.iter().enumerate() {
            if n > 1 {
                prop_assert_eq!(s, &format!("w-{:05}-of-{:05}.safetensors", i + 1, n));
            }
            let one = BlobMap::load_safetensors(&common::engine(), d.join(s), true).unwrap();
            let bytes: usize = one.entries().iter().map(|e| e.blobs()[0].count() * 4).sum();
            prop_assert!(bytes as u64 <= max || one.len() == 1, "{} holds {} bytes in {} tensors", s, bytes, one.len());
        }
        std::fs::remove_dir_all(&d).unwrap();
    }
}
