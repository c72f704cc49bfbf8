//! File formats: Caffe `BlobProto` ([`caffe`]) and `.caffemodel` weights
//! ([`caffemodel`]), NeoML blob archives ([`neoml`]), NumPy `.npy`
//! ([`npy`]), GGUF ([`gguf`]), safetensors ([`safetensors`]) and sharded safetensors
//! checkpoints ([`safetensors_index`]).
//!
//! Every decoder treats its input as hostile: a size field is checked
//! against the bytes actually present before anything is allocated, so a
//! header claiming 2^40 elements is a [`Error::Format`]
//! at once; truncated input and trailing bytes are Format errors; nothing
//! panics. A decoder never allocates more than about twice its input.
//!
//! Saving to a path writes a temporary file next to the target and renames
//! it into place, so a failed save leaves an existing file untouched.

pub mod caffe;
pub mod caffemodel;
pub mod eager;
pub mod ggml_quants;
pub mod gguf;
pub mod neoml;
pub mod npy;
pub mod safetensors;
pub mod safetensors_index;

use crate::error::{err, Error, Result};
use crate::shape::Shape;
use std::fs::File;
use std::io::{Read, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// Reads a whole file, reporting a missing or unreadable file as an Io
/// error naming the path, and a file too large for memory as OutOfMemory
/// (instead of aborting).
pub(crate) fn read_file(path: &Path) -> Result<Vec<u8>> {
    let io = |e: std::io::Error| err!(Io, "cannot read {}: {e}", path.display());
    let mut f = File::open(path).map_err(io)?;
    let len = f.metadata().map_err(io)?.len();
    let len = usize::try_from(len).map_err(|_| err!(OutOfMemory, "{} is too large ({len} bytes)", path.display()))?;
    let mut v = Vec::new();
    v.try_reserve_exact(len)
        .map_err(|_| err!(OutOfMemory, "cannot allocate {len} bytes to read {}", path.display()))?;
    f.read_to_end(&mut v).map_err(io)?;
    Ok(v)
}

/// Writes a file through `write`, atomically: the bytes go to a temporary
/// file in the same directory, which replaces `path` only when everything
/// was written. On error the temporary file is removed and `path` is
/// unchanged.
pub(crate) fn write_file(path: &Path, write: impl FnOnce(&mut dyn Write) -> Result<()>) -> Result<()> {
    write_temp(path, write)?.commit()
}

/// A fully written and synced temporary file next to its target: renamed
/// onto the target by [`TempFile::commit`], removed when dropped
/// uncommitted (so a save of several files can write them all before it
/// replaces any).
pub(crate) struct TempFile {
    tmp: std::path::PathBuf,
    path: std::path::PathBuf,
    done: bool,
}

impl TempFile {
    /// Renames the temporary file onto its target.
    pub(crate) fn commit(mut self) -> Result<()> {
        std::fs::rename(&self.tmp, &self.path).map_err(|e| err!(Io, "cannot write {}: {e}", self.path.display()))?;
        self.done = true;
        Ok(())
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if !self.done {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// The first phase of [`write_file`]: `path`'s bytes written and synced
/// to a temporary file in the same directory, not yet in place.
pub(crate) fn write_temp(path: &Path, write: impl FnOnce(&mut dyn Write) -> Result<()>) -> Result<TempFile> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let name = path
        .file_name()
        .ok_or_else(|| err!(InvalidArgument, "{} does not name a file", path.display()))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".{}-{}.tmp", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed)));
    let io = |e: std::io::Error| err!(Io, "cannot write {}: {e}", path.display());
    let f = File::create(path.with_file_name(&tmp_name)).map_err(io)?;
    // From here on the guard removes the temporary file on any error.
    let t = TempFile { tmp: path.with_file_name(tmp_name), path: path.to_path_buf(), done: false };
    let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
    write(&mut w)?;
    let f = w.into_inner().map_err(|e| io(e.into_error()))?;
    f.sync_all().map_err(io)?;
    Ok(t)
}

/// What a file writer writes, collected in memory (the `to_*_bytes` twin
/// of a `save_*` that goes through [`write_file`]). Memory the system
/// refuses is an `OutOfMemory` error, not an abort.
pub(crate) fn to_vec(write: impl FnOnce(&mut dyn Write) -> Result<()>) -> Result<Vec<u8>> {
    to_vec_sized(0, write)
}

/// [`to_vec`] with room for `hint` bytes reserved first (the encoded size
/// when it is known: one allocation).
pub(crate) fn to_vec_sized(hint: usize, write: impl FnOnce(&mut dyn Write) -> Result<()>) -> Result<Vec<u8>> {
    let mut g = Growing { v: room(hint, "the encoded bytes")?, refused: None, limit: None };
    let r = write(&mut g);
    if let Some(n) = g.refused {
        return Err(err!(OutOfMemory, "cannot allocate {n} bytes for the encoded bytes"));
    }
    r.map(|()| g.v)
}

/// An empty vector with room for `len` bytes, or `OutOfMemory` naming
/// `what` when the system refuses them (`Vec::with_capacity` and `vec!`
/// abort the process instead).
pub(crate) fn room(len: usize, what: &str) -> Result<Vec<u8>> {
    let refused = || err!(OutOfMemory, "cannot allocate {len} bytes for {what}");
    // More than the machine's memory and swap together can never be
    // filled: refused before the allocator is asked (which sanitizers and
    // fuzzers report as a failure of their own).
    if crate::machine_memory::exceeded_by(len) {
        return Err(refused());
    }
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| refused())?;
    Ok(v)
}

/// A protobuf message encoded into one vector sized first (prost's
/// `encode_to_vec` aborts where the system refuses the memory).
pub(crate) fn encoded(m: &impl prost::Message) -> Result<Vec<u8>> {
    let mut v = room(m.encoded_len(), "the encoded message")?;
    m.encode(&mut v).map_err(|e| err!(Internal, "protobuf encoding: {e}"))?;
    Ok(v)
}

/// An in-memory sink whose growth is fallible: a refused growth fails the
/// write (and is remembered, so [`to_vec_sized`] reports it as
/// `OutOfMemory` whatever the writer made of the io error).
struct Growing {
    v: Vec<u8>,
    refused: Option<usize>,
    /// A limit standing for the machine's memory and swap (tests); None
    /// asks the machine, for writes that take the vector past 1 GiB.
    limit: Option<u64>,
}

impl Write for Growing {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let len = self.v.len().saturating_add(buf.len());
        let over = match self.limit {
            Some(_) => crate::machine_memory::beyond(len, self.limit),
            None => crate::machine_memory::exceeded_by(len),
        };
        if over || self.v.try_reserve(buf.len()).is_err() {
            self.refused = Some(self.v.len().saturating_add(buf.len()));
            return Err(std::io::ErrorKind::OutOfMemory.into());
        }
        self.v.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A decoding error of the file at `path`, prefixed with the path: Io and
/// OutOfMemory errors pass through (they name the path already), DType
/// and Unsupported errors keep their kind, anything else is a Format error.
pub(crate) fn in_file(e: Error, path: &Path) -> Error {
    let m = format!("{}: {}", path.display(), e.message());
    match e {
        Error::Io(_) | Error::OutOfMemory(_) => e,
        Error::DType(_) => Error::DType(m),
        Error::Unsupported(_) => Error::Unsupported(m),
        _ => Error::Format(m),
    }
}

/// Maps a writer's failure to an Io error.
pub(crate) fn io_err(e: std::io::Error) -> Error {
    err!(Io, "write failed: {e}")
}

/// A shape read from a file: any problem (negative dims, rank over 32, an
/// element count that overflows) is a Format error naming the format.
pub(crate) fn file_shape(format: &str, dims: &[i64]) -> Result<Shape> {
    Shape::from_i64(dims).map_err(|e| err!(Format, "{format}: bad shape {dims:?}: {}", e.message()))
}

/// `data` with the bytes of every `es`-byte element reversed when `swap`
/// (a file's byte order differs from the host's), else `data` itself.
pub(crate) fn byte_order(data: &[u8], es: usize, swap: bool) -> std::borrow::Cow<'_, [u8]> {
    if swap && es > 1 {
        data.chunks_exact(es).flat_map(|e| e.iter().rev().copied()).collect::<Vec<u8>>().into()
    } else {
        data.into()
    }
}

/// A cursor over untrusted bytes: every read checks what is left first.
pub(crate) struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
    format: &'static str,
    /// Length of the whole input, of which `bytes` may be a prefix.
    total: usize,
    /// Past a failed read of the prefix: how many bytes it needed.
    needed: usize,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(bytes: &'a [u8], format: &'static str) -> Cursor<'a> {
        Cursor { bytes, pos: 0, format, total: bytes.len(), needed: 0 }
    }

    /// A cursor over the first bytes of an input of `total` bytes (a
    /// header read from a file without touching the rest): size checks
    /// count the whole input; a read past the prefix (but inside the
    /// input) fails and records how much prefix it needed ([`Cursor::needed`]).
    pub(crate) fn prefix(bytes: &'a [u8], total: usize, format: &'static str) -> Cursor<'a> {
        Cursor { bytes, pos: 0, format, total: total.max(bytes.len()), needed: 0 }
    }

    /// Length of the whole input.
    pub(crate) fn total(&self) -> usize {
        self.total
    }

    /// After an error: the prefix length the failed read needed (0 when
    /// the error was not a read past the prefix).
    pub(crate) fn needed(&self) -> usize {
        self.needed
    }

    /// Bytes read so far.
    pub(crate) fn position(&self) -> usize {
        self.pos
    }

    /// Bytes not read yet (of the whole input).
    pub(crate) fn remaining(&self) -> usize {
        self.total - self.pos
    }

    /// The next `n` bytes, or a Format error saying the input ends early.
    pub(crate) fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8]> {
        if n > self.remaining() {
            return Err(err!(
                Format,
                "{}: truncated input: {what} needs {n} bytes at offset {} but only {} remain",
                self.format,
                self.pos,
                self.remaining()
            ));
        }
        let Some(s) = self.bytes.get(self.pos..self.pos + n) else {
            self.needed = self.pos + n;
            return Err(err!(Format, "{}: {what} lies past the {} bytes read of the header", self.format, self.bytes.len()));
        };
        self.pos += n;
        Ok(s)
    }

    pub(crate) fn u8(&mut self, what: &str) -> Result<u8> {
        Ok(self.take(1, what)?[0])
    }

    /// The next byte without consuming it.
    pub(crate) fn peek_u8(&self, what: &str) -> Result<u8> {
        let mut probe = Cursor { bytes: self.bytes, pos: self.pos, format: self.format, total: self.total, needed: 0 };
        probe.u8(what)
    }

    pub(crate) fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N]> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N, what)?);
        Ok(a)
    }

    pub(crate) fn i32_le(&mut self, what: &str) -> Result<i32> {
        Ok(i32::from_le_bytes(self.array(what)?))
    }

    pub(crate) fn u32_le(&mut self, what: &str) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    pub(crate) fn u16_le(&mut self, what: &str) -> Result<u16> {
        Ok(u16::from_le_bytes(self.array(what)?))
    }

    /// Succeeds only when every byte was consumed.
    pub(crate) fn finish(&self) -> Result<()> {
        match self.remaining() {
            0 => Ok(()),
            n => Err(err!(Format, "{}: {n} unexpected trailing bytes after the data", self.format)),
        }
    }
}

/// Reads a header from the start of the file at `path` without mapping it
/// (a mapped header page may bring a whole 2 MiB folio of the page cache
/// into the process): `parse` gets a cursor over a prefix of the file,
/// grown (from 256 KiB, fourfold, or to what a failed read needed) while
/// it fails reading past it. Returns the file's length with the result.
pub(crate) fn read_prefix_header<T>(path: &Path, format: &'static str, parse: impl Fn(&mut Cursor<'_>) -> Result<T>) -> Result<(T, u64)> {
    use std::os::unix::fs::FileExt;
    let io = |e: std::io::Error| err!(Io, "cannot read {}: {e}", path.display());
    let f = File::open(path).map_err(io)?;
    let len = f.metadata().map_err(io)?.len();
    let total = usize::try_from(len).map_err(|_| err!(OutOfMemory, "{} is too large ({len} bytes)", path.display()))?;
    let mut n = total.min(256 << 10);
    loop {
        let mut buf = Vec::new();
        buf.try_reserve_exact(n).map_err(|_| err!(OutOfMemory, "cannot allocate {n} bytes to read the header of {}", path.display()))?;
        buf.resize(n, 0);
        f.read_exact_at(&mut buf, 0).map_err(io)?;
        let mut c = Cursor::prefix(&buf, total, format);
        match parse(&mut c) {
            Err(_) if c.needed() > n && c.needed() <= total => n = c.needed().max(n.saturating_mul(4)).min(total),
            r => return Ok((r.map_err(|e| in_file(e, path))?, len)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursor_checks_bounds_and_trailing_bytes() {
        let mut c = Cursor::new(&[1, 0, 0, 0, 9], "test");
        assert_eq!(c.i32_le("x").unwrap(), 1);
        assert!(matches!(c.finish(), Err(Error::Format(m)) if m.contains("1 unexpected trailing")));
        assert!(matches!(c.u32_le("y"), Err(Error::Format(m)) if m.contains("truncated") && m.contains("y needs 4")));
        assert_eq!(c.u8("z").unwrap(), 9);
        c.finish().unwrap();
    }

    #[test]
    fn failed_write_leaves_the_old_file() {
        let dir = std::env::temp_dir().join(format!("blobcore-io-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("keep.bin");
        std::fs::write(&p, b"old").unwrap();
        let r = write_file(&p, |w| {
            w.write_all(b"partial").map_err(io_err)?;
            Err(err!(DType, "refused"))
        });
        assert!(matches!(r, Err(Error::DType(_))));
        assert_eq!(std::fs::read(&p).unwrap(), b"old");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1, "temporary file removed");
        write_file(&p, |w| w.write_all(b"new").map_err(io_err)).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"new");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn missing_file_is_an_io_error_naming_it() {
        let r = read_file(Path::new("/nonexistent/blobcore.npy"));
        assert!(matches!(r, Err(Error::Io(m)) if m.contains("/nonexistent/blobcore.npy")));
    }

    /// An encoding larger than the machine's memory and swap is refused
    /// before anything is copied, also where the allocator would grant the
    /// address space (here a limit just past 1 GiB stands for the machine;
    /// the write's source is an untouched anonymous map, so copying it
    /// would cost a GiB of memory and fail the test).
    #[test]
    #[cfg_attr(miri, ignore = "a GiB map")]
    fn growing_refuses_more_than_the_machine_holds() {
        let src = memmap2::MmapMut::map_anon((1 << 30) + (1 << 20)).unwrap();
        let mut g = Growing { v: Vec::new(), refused: None, limit: Some((1 << 30) + 4096) };
        g.write_all(b"header").unwrap();
        assert!(g.write_all(&src).is_err());
        assert_eq!(g.refused, Some((1 << 30) + (1 << 20) + 6));
        assert_eq!(g.v.len(), 6);
        assert!(g.v.capacity() < 1 << 20, "nothing was reserved for the refused write");
    }
}
