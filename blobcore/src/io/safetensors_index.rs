//! Sharded safetensors checkpoints, as the Hugging Face hub ships models
//! over 5 GB: shards `model-00001-of-0000N.safetensors` plus an index
//! `model.safetensors.index.json` holding
//! `{"metadata": {"total_size": …}, "weight_map": {tensor: shard}}`.
//!
//! Loading an index maps (or reads) every shard it names, once each, and
//! gives one [`BlobMap`] of every tensor in the weight map's order. The
//! index is checked against the shards before anything is returned:
//!
//! - a shard name must be a plain file name in the index's directory (no
//!   `/`, no `..`), and the file must exist;
//! - every tensor of the weight map must be in the shard it names, no
//!   tensor may be in two shards, and every tensor of a shard must be in
//!   the weight map (nothing is dropped silently);
//! - `metadata.total_size`, when present, must be a whole number equal to
//!   the tensors' bytes (elements times element size, as huggingface_hub
//!   counts it).
//!
//! Each is a Format error naming the index and the tensor or shard. The
//! map's metadata is the index's (strings as they are, other JSON values
//! as their JSON text, so `total_size` reads `"1234"`), then every shard's
//! `__metadata__` keys the index does not have (the first shard's value
//! wins).
//!
//! Saving splits the map as huggingface_hub's
//! `split_state_dict_into_shards_factory` does (tensors in map order; one
//! larger than the limit gets a shard of its own, placed when met; the
//! current shard closes when the next tensor would pass the limit), names
//! shards `{stem}-{i:05}-of-{n:05}.safetensors` (`stem` is the index's
//! name without `.safetensors.index.json`), writes every shard and the
//! index to temporary files first and renames them into place only when
//! all are written (the index last).

use crate::blob_map::BlobMap;
use crate::engine::Engine;
use crate::error::{err, Result};
use crate::io::eager::{report_done, Progress, ReadPlan};
use crate::io::{read_file, TempFile};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

const FORMAT: &str = "safetensors index";
/// The largest index file read (the index of a model with a million
/// tensors is about 80 MB).
const MAX_INDEX: u64 = 256 << 20;
/// The index file name in a directory, as transformers writes it.
pub const INDEX_NAME: &str = "model.safetensors.index.json";
/// The single-file checkpoint name in a directory.
pub const SINGLE_NAME: &str = "model.safetensors";

/// What a load path names.
pub(crate) enum Source {
    /// An index file.
    Index(PathBuf),
    /// One safetensors file.
    File(PathBuf),
}

/// Decides what `path` names: a file ending in `.json` is an index; a
/// directory holds [`INDEX_NAME`] or else [`SINGLE_NAME`]; any other path
/// is one safetensors file.
pub(crate) fn resolve(path: &Path) -> Result<Source> {
    if path.is_dir() {
        let index = path.join(INDEX_NAME);
        if index.is_file() {
            return Ok(Source::Index(index));
        }
        let single = path.join(SINGLE_NAME);
        if single.is_file() {
            return Ok(Source::File(single));
        }
        return Err(err!(Io, "{}: the directory holds neither {INDEX_NAME} nor {SINGLE_NAME}", path.display()));
    }
    if path.extension().is_some_and(|e| e == "json") {
        return Ok(Source::Index(path.to_path_buf()));
    }
    Ok(Source::File(path.to_path_buf()))
}

/// Whether a save to `path` is a sharded save: a path ending in
/// `.index.json` or an existing directory.
pub(crate) fn is_sharded_target(path: &Path) -> bool {
    path.is_dir() || path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.ends_with(".index.json"))
}

/// A parsed index: its metadata and weight map, in file order.
struct Index {
    metadata: Vec<(String, Value)>,
    weight_map: Vec<(String, String)>,
}

/// A Format error about the index at `path`.
fn bad(path: &Path, what: impl std::fmt::Display) -> crate::error::Error {
    err!(Format, "{FORMAT} {}: {what}", path.display())
}

/// Parses an index file's bytes, checking its structure and shard names.
fn parse(path: &Path, bytes: &[u8]) -> Result<Index> {
    let v: Value = serde_json::from_slice(bytes).map_err(|e| bad(path, format!("not JSON: {e}")))?;
    let Value::Object(mut top) = v else {
        return Err(bad(path, "the index is not a JSON object"));
    };
    let metadata = match top.remove("metadata") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Object(m)) => m.into_iter().collect(),
        Some(other) => return Err(bad(path, format!("\"metadata\" is {other}, not an object"))),
    };
    let weight_map = match top.remove("weight_map") {
        Some(Value::Object(m)) => m,
        Some(other) => return Err(bad(path, format!("\"weight_map\" is {}, not an object", kind(&other)))),
        None => return Err(bad(path, "there is no \"weight_map\"")),
    };
    let mut map = Vec::with_capacity(weight_map.len());
    for (tensor, shard) in weight_map {
        let Value::String(shard) = shard else {
            return Err(bad(path, format!("tensor {tensor:?} maps to {}, not a shard file name", kind(&shard))));
        };
        check_shard_name(path, &tensor, &shard)?;
        map.push((tensor, shard));
    }
    Ok(Index { metadata, weight_map: map })
}

/// A JSON value's kind, for messages.
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A shard must be a plain file name next to the index.
fn check_shard_name(path: &Path, tensor: &str, shard: &str) -> Result<()> {
    let plain = !shard.is_empty() && shard != "." && shard != ".." && !shard.contains(['/', '\\', '\0']);
    if !plain {
        return Err(bad(path, format!("tensor {tensor:?} maps to {shard:?}, which is not a file name in the index's directory")));
    }
    Ok(())
}

/// Reads and parses the index at `path` (its size checked first).
fn read_index(path: &Path) -> Result<Index> {
    let len = std::fs::metadata(path).map_err(|e| err!(Io, "cannot read {}: {e}", path.display()))?.len();
    if len > MAX_INDEX {
        return Err(bad(path, format!("the index holds {len} bytes (the limit is {MAX_INDEX})")));
    }
    parse(path, &read_file(path)?)
}

/// Loads every tensor the index at `path` names (see the module docs).
pub(crate) fn load(engine: &Engine, path: &Path, mmap: bool, progress: Option<Progress<'_>>) -> Result<BlobMap> {
    let index = read_index(path)?;
    let dir = path.parent().unwrap_or(Path::new("."));
    // The shards, once each, in order of first mention.
    let mut shards: Vec<&str> = Vec::new();
    for (_, s) in &index.weight_map {
        if !shards.contains(&s.as_str()) {
            shards.push(s);
        }
    }
    let mut found: HashMap<String, (usize, crate::blob::Blob)> = HashMap::new();
    let mut shard_meta: Vec<(String, String)> = Vec::new();
    // Eager loads read every shard's tensors together, once all is checked.
    let mut plan = ReadPlan::new();
    for (i, shard) in shards.iter().enumerate() {
        let file = dir.join(shard);
        if !file.is_file() {
            return Err(bad(path, format!("shard {shard:?} does not exist (looked for {})", file.display())));
        }
        let m = if mmap { BlobMap::map_safetensors_file(engine, &file)? } else { BlobMap::plan_safetensors_file(engine, &file, &mut plan)? };
        for (k, v) in m.metadata() {
            if !shard_meta.iter().any(|(q, _)| q == k) {
                shard_meta.push((k.clone(), v.clone()));
            }
        }
        for (name, _, mut blobs) in m.into_entries() {
            let Some(b) = blobs.pop() else { continue };
            if let Some((j, _)) = found.get(&name) {
                return Err(bad(path, format!("tensor {name:?} is in two shards, {:?} and {shard:?}", shards[*j])));
            }
            found.insert(name, (i, b));
        }
    }
    let mut out = BlobMap::new();
    let mut total: u128 = 0;
    for (name, shard) in &index.weight_map {
        let Some((i, b)) = found.remove(name) else {
            return Err(bad(path, format!("tensor {name:?} is not in shard {shard:?}, where the weight map puts it")));
        };
        if shards[i] != shard {
            return Err(bad(path, format!("tensor {name:?} is in shard {:?}, but the weight map puts it in {shard:?}", shards[i])));
        }
        total += (b.count() as u128) * (b.dtype().size() as u128);
        out.insert(name.clone(), b);
    }
    if let Some((name, (i, _))) = found.iter().next() {
        return Err(bad(path, format!("shard {:?} holds tensor {name:?}, which the weight map does not list", shards[*i])));
    }
    for (k, v) in &index.metadata {
        if k == "total_size" {
            let n = v.as_u64().ok_or_else(|| bad(path, format!("metadata.total_size is {v}, not a whole number of bytes")))?;
            if n as u128 != total {
                return Err(bad(path, format!("metadata.total_size says {n} bytes but the tensors hold {total}")));
            }
        }
        out.set_metadata(k.clone(), match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        });
    }
    for (k, v) in shard_meta {
        if out.metadata_value(&k).is_none() {
            out.set_metadata(k, v);
        }
    }
    if mmap {
        report_done(progress, total as u64)?;
    } else {
        plan.run(progress)?;
    }
    Ok(out)
}

/// Parses a shard size as huggingface_hub's `parse_size_to_int` does: a
/// number (digits, optionally a fraction) followed by `KB`, `MB`, `GB` or
/// `TB` (decimal, any case), or plain digits (bytes). Zero is refused.
pub fn parse_shard_size(text: &str) -> Result<u64> {
    let t = text.trim();
    let bad = || err!(InvalidArgument, "shard size {text:?}: expected bytes or a number with KB, MB, GB or TB (decimal), such as \"5GB\"");
    let (num, mult) = match t.len().checked_sub(2).and_then(|i| t.get(i..)).map(str::to_ascii_uppercase) {
        Some(u) if ["KB", "MB", "GB", "TB"].contains(&u.as_str()) => {
            let m = match u.as_str() {
                "KB" => 1e3,
                "MB" => 1e6,
                "GB" => 1e9,
                _ => 1e12,
            };
            (t[..t.len() - 2].trim(), m)
        }
        _ => (t, 1.0),
    };
    if num.is_empty() || !num.chars().all(|c| c.is_ascii_digit() || c == '.') || num.matches('.').count() > 1 {
        return Err(bad());
    }
    let bytes = if mult == 1.0 {
        num.parse::<u64>().map_err(|_| bad())?
    } else {
        let v: f64 = num.parse().map_err(|_| bad())?;
        let b = v * mult;
        if b.is_nan() || b >= 1.8e19 {
            return Err(bad());
        }
        b as u64
    };
    if bytes == 0 {
        return Err(err!(InvalidArgument, "shard size {text:?}: must be at least one byte"));
    }
    Ok(bytes)
}

/// The index path and shard stem of a sharded save to `path`, and whether
/// it is a directory save (which follows transformers: one shard is
/// written as [`SINGLE_NAME`] with no index).
fn targets(path: &Path) -> Result<(PathBuf, String, bool)> {
    if path.is_dir() {
        return Ok((path.join(INDEX_NAME), "model".into(), true));
    }
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let Some(base) = name.strip_suffix(".index.json") else {
        return Err(err!(InvalidArgument, "{}: a sharded save takes a directory or a path ending in .index.json", path.display()));
    };
    let stem = base.strip_suffix(".safetensors").unwrap_or(base);
    if stem.is_empty() {
        return Err(err!(InvalidArgument, "{}: the index name has no stem to name its shards after", path.display()));
    }
    Ok((path.to_path_buf(), stem.to_string(), false))
}

/// Shards of the names in `sizes` (name, bytes), split as
/// huggingface_hub splits a state dict.
fn split(sizes: &[(&str, u64)], max: u64) -> Vec<Vec<usize>> {
    let mut shards: Vec<Vec<usize>> = Vec::new();
    let (mut current, mut used) = (Vec::new(), 0u64);
    for (i, &(_, n)) in sizes.iter().enumerate() {
        if n > max {
            shards.push(vec![i]);
            continue;
        }
        if used + n > max {
            shards.push(std::mem::take(&mut current));
            used = 0;
        }
        current.push(i);
        used += n;
    }
    if !current.is_empty() {
        shards.push(current);
    }
    shards
}

impl BlobMap {
    /// Saves the map as a sharded safetensors checkpoint of shards of at
    /// most `max_shard_size` bytes of tensor data (a tensor larger than
    /// that gets a shard of its own). `path` ends in `.index.json` (the
    /// shards are named after it: `x.safetensors.index.json` gives
    /// `x-00001-of-00002.safetensors`, ...) or names a directory (shards
    /// `model-…` and `model.safetensors.index.json`; a single shard is
    /// `model.safetensors` with no index, as transformers saves it). Every
    /// shard carries the map's metadata as `__metadata__`; the index's
    /// metadata is `total_size`. Nothing is replaced until every file is
    /// written; a directory save then removes shards of an earlier save
    /// with the same stem that the new index does not name.
    pub fn save_safetensors_sharded(&self, path: impl AsRef<Path>, max_shard_size: u64) -> Result<()> {
        let path = path.as_ref();
        if max_shard_size == 0 {
            return Err(err!(InvalidArgument, "max_shard_size must be at least one byte"));
        }
        self.check_safetensors_entries()?;
        let (index_path, stem, dir_save) = targets(path)?;
        let dir = index_path.parent().unwrap_or(Path::new(".")).to_path_buf();
        let sizes: Vec<(&str, u64)> = self
            .entries()
            .iter()
            .map(|e| (e.name(), e.blobs().first().map_or(0, |b| (b.count() * b.dtype().size()) as u64)))
            .collect();
        let shards = split(&sizes, max_shard_size);
        let n = shards.len();
        let names: Vec<String> = if n == 1 {
            vec![format!("{stem}.safetensors")]
        } else {
            (1..=n).map(|i| format!("{stem}-{i:05}-of-{n:05}.safetensors")).collect()
        };
        let mut temps: Vec<TempFile> = Vec::with_capacity(n + 1);
        let mut weight_map = Map::new();
        for (shard, name) in shards.iter().zip(&names) {
            let mut part = BlobMap::new();
            for (k, v) in self.metadata() {
                part.set_metadata(k.clone(), v.clone());
            }
            for &i in shard {
                let e = &self.entries()[i];
                if let Some(b) = e.blobs().first() {
                    part.insert(e.name(), b.clone());
                }
            }
            temps.push(part.write_safetensors_temp(&dir.join(name))?);
        }
        // The weight map in the map's order.
        let mut owner = vec![0usize; sizes.len()];
        for (s, shard) in shards.iter().enumerate() {
            for &i in shard {
                owner[i] = s;
            }
        }
        for (i, (name, _)) in sizes.iter().enumerate() {
            weight_map.insert((*name).to_string(), Value::String(names[owner[i]].clone()));
        }
        let total: u64 = sizes.iter().map(|s| s.1).sum();
        let single_dir = dir_save && n == 1;
        if !single_dir {
            let mut meta = Map::new();
            meta.insert("total_size".into(), Value::from(total));
            let mut top = Map::new();
            top.insert("metadata".into(), Value::Object(meta));
            top.insert("weight_map".into(), Value::Object(weight_map));
            let mut json = serde_json::to_vec_pretty(&Value::Object(top)).map_err(|e| err!(Internal, "{FORMAT}: {e}"))?;
            json.push(b'\n');
            temps.push(crate::io::write_temp(&index_path, |w| w.write_all(&json).map_err(crate::io::io_err))?);
        }
        for t in temps {
            t.commit()?;
        }
        if dir_save {
            remove_stale(&dir, &stem, &names, single_dir);
        }
        Ok(())
    }
}

/// After a directory save: removes `{stem}-NNNNN-of-MMMMM.safetensors`
/// files the new save did not write, and the index when the save wrote a
/// single file (best effort; what cannot be removed stays).
fn remove_stale(dir: &Path, stem: &str, written: &[String], single: bool) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        if written.iter().any(|w| w == name) {
            continue;
        }
        if is_shard_name(name, stem) || (single && name == INDEX_NAME) {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// Whether `name` is `{stem}-NNNNN-of-MMMMM.safetensors`.
fn is_shard_name(name: &str, stem: &str) -> bool {
    let Some(rest) = name.strip_prefix(stem).and_then(|r| r.strip_prefix('-')).and_then(|r| r.strip_suffix(".safetensors")) else {
        return false;
    };
    let b = rest.as_bytes();
    b.len() == 14 && b[..5].iter().all(u8::is_ascii_digit) && &b[5..9] == b"-of-" && b[9..].iter().all(u8::is_ascii_digit)
}


#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_as_huggingface_hub() {
        // The docstring's example: [6, 6, 2, 6, 2, 2] GB at 10 GB.
        let s: Vec<(&str, u64)> = [6, 6, 2, 6, 2, 2].iter().map(|&n| ("t", n)).collect();
        assert_eq!(split(&s, 10), vec![vec![0], vec![1, 2], vec![3, 4, 5]]);
        // A tensor over the limit gets its own shard, placed when met.
        let s: Vec<(&str, u64)> = [1, 20, 1].iter().map(|&n| ("t", n)).collect();
        assert_eq!(split(&s, 10), vec![vec![1], vec![0, 2]]);
        assert_eq!(split(&[], 10), Vec::<Vec<usize>>::new());
    }

    #[test]
    fn sizes_parse_as_huggingface_hub() {
        assert_eq!(parse_shard_size("5GB").unwrap(), 5_000_000_000);
        assert_eq!(parse_shard_size(" 1.5 mb ").unwrap(), 1_500_000);
        assert_eq!(parse_shard_size("123").unwrap(), 123);
        for bad in ["", "GB", "5XB", "-1GB", "1.2.3MB", "0", "0KB", "1e3MB", "99999999999TB"] {
            assert!(parse_shard_size(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn shard_names_are_recognised_exactly() {
        assert!(is_shard_name("model-00001-of-00003.safetensors", "model"));
        assert!(!is_shard_name("model-1-of-3.safetensors", "model"));
        assert!(!is_shard_name("other-00001-of-00003.safetensors", "model"));
        assert!(!is_shard_name("model-00001-of-00003.safetensors.bak", "model"));
    }
}
