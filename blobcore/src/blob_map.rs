//! [`BlobMap`]: an ordered collection of named blobs, as weight files hold
//! them — one blob per name in a safetensors file, a list of blobs (weights,
//! bias) per layer in a Caffe `.caffemodel` — plus the file's string
//! metadata.
//!
//! Entries keep the order they were inserted in (for a loaded file: the
//! file's order). Names are unique; inserting a name again replaces its
//! blobs in place.

use crate::blob::Blob;
use crate::error::{err, Result};
use std::collections::HashMap;

/// One named entry: a tensor of a safetensors file (one blob) or a layer
/// of a Caffe net (its blobs in order, and the layer's type).
#[derive(Clone, Debug)]
pub struct Entry {
    name: String,
    kind: String,
    blobs: Vec<Blob>,
}

impl Entry {
    /// The entry's name (tensor or layer name).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The layer type for Caffe layers (`"Convolution"`, ...); empty when
    /// unknown or not a layer.
    pub fn kind(&self) -> &str {
        &self.kind
    }

    /// The entry's blobs, in order.
    pub fn blobs(&self) -> &[Blob] {
        &self.blobs
    }
}

/// Named blobs in order, with string metadata (see the module docs).
#[derive(Clone, Debug, Default)]
pub struct BlobMap {
    entries: Vec<Entry>,
    index: HashMap<String, usize>,
    metadata: Vec<(String, String)>,
}

impl BlobMap {
    /// An empty map.
    pub fn new() -> BlobMap {
        BlobMap::default()
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when there are no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entries in order.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The entry at position `i`.
    pub fn entry(&self, i: usize) -> Option<&Entry> {
        self.entries.get(i)
    }

    /// The names in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|e| e.name.as_str())
    }

    /// The position of the entry named `name`.
    pub fn position(&self, name: &str) -> Option<usize> {
        self.index.get(name).copied()
    }

    /// The blobs of the entry named `name`.
    pub fn blobs(&self, name: &str) -> Option<&[Blob]> {
        self.position(name).map(|i| self.entries[i].blobs.as_slice())
    }

    /// The single blob named `name` (a safetensors tensor). A missing name
    /// is an InvalidArgument error naming it; an entry with several blobs (a Caffe
    /// layer) is InvalidArgument.
    pub fn get(&self, name: &str) -> Result<&Blob> {
        let blobs = self.blobs(name).ok_or_else(|| err!(InvalidArgument, "no entry named {name:?}"))?;
        match blobs {
            [b] => Ok(b),
            other => Err(err!(InvalidArgument, "{name:?} holds {} blobs, not one; ask for them by index", other.len())),
        }
    }

    /// Sets `name` to the single blob `blob` (replacing its blobs in place
    /// when the name exists, else appending it).
    pub fn insert(&mut self, name: impl Into<String>, blob: Blob) {
        self.insert_all(name, "", vec![blob]);
    }

    /// Sets `name` to `blobs` with layer type `kind` (replacing in place
    /// when the name exists, else appending).
    pub fn insert_all(&mut self, name: impl Into<String>, kind: impl Into<String>, blobs: Vec<Blob>) {
        let name = name.into();
        let kind = kind.into();
        match self.index.get(&name) {
            Some(&i) => {
                self.entries[i].blobs = blobs;
                self.entries[i].kind = kind;
            }
            None => {
                self.index.insert(name.clone(), self.entries.len());
                self.entries.push(Entry { name, kind, blobs });
            }
        }
    }

    /// Appends `blob` to the blobs of `name` (creating the entry).
    pub fn push(&mut self, name: &str, blob: Blob) {
        match self.index.get(name) {
            Some(&i) => self.entries[i].blobs.push(blob),
            None => self.insert(name, blob),
        }
    }

    /// Sets the layer type of the entry named `name` (InvalidArgument when
    /// there is none).
    pub fn set_kind(&mut self, name: &str, kind: impl Into<String>) -> Result<()> {
        let i = self.position(name).ok_or_else(|| err!(InvalidArgument, "no entry named {name:?}"))?;
        self.entries[i].kind = kind.into();
        Ok(())
    }

    /// The string metadata (safetensors `__metadata__`), in insertion order.
    pub fn metadata(&self) -> &[(String, String)] {
        &self.metadata
    }

    /// The metadata value for `key`.
    pub fn metadata_value(&self, key: &str) -> Option<&str> {
        self.metadata.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// Sets a metadata entry (replacing the value of an existing key).
    pub fn set_metadata(&mut self, key: impl Into<String>, value: impl Into<String>) {
        let (key, value) = (key.into(), value.into());
        match self.metadata.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = value,
            None => self.metadata.push((key, value)),
        }
    }

    /// Consumes the map into its entries' names and blobs, in order.
    pub fn into_entries(self) -> impl Iterator<Item = (String, String, Vec<Blob>)> {
        self.entries.into_iter().map(|e| (e.name, e.kind, e.blobs))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Engine;

    #[test]
    fn order_replacement_and_lookup() {
        let e = Engine::cpu();
        let one = |v: f32| Blob::from_slice(&e, &[1], &[v]).unwrap();
        let mut m = BlobMap::new();
        m.insert("b", one(1.0));
        m.insert("a", one(2.0));
        m.insert("b", one(3.0));
        assert_eq!(m.names().collect::<Vec<_>>(), ["b", "a"]);
        assert_eq!(m.get("b").unwrap().to_vec::<f32>().unwrap(), [3.0]);
        assert!(matches!(m.get("zz"), Err(crate::Error::InvalidArgument(m)) if m.contains("\"zz\"")));
        m.push("a", one(4.0));
        assert_eq!(m.blobs("a").unwrap().len(), 2);
        assert!(matches!(m.get("a"), Err(crate::Error::InvalidArgument(_))));
        m.set_metadata("k", "v");
        m.set_metadata("k", "w");
        assert_eq!(m.metadata(), [("k".to_string(), "w".to_string())]);
    }
}
