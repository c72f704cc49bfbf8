//! Eager loading at the speed of the disk (or of the page cache).
//!
//! A load without `mmap` reads every tensor's bytes into fresh blob memory.
//! Read one buffer at a time through one thread, that reaches about half of
//! what `cat file > /dev/null` does on a warm cache: the copy out of the
//! page cache and the first touch of every fresh page (the kernel zeroes it,
//! a 2 MiB transparent huge page at a time for blob memory) run in one
//! thread, back to back. A `ReadPlan` instead collects every read of a
//! load first — (file, offset) into a blob's memory, from any number of
//! files — and then runs them as `pread`s of [`CHUNK`] bytes spread over
//! the worker pool's threads and the calling thread, so both the faults
//! and the copies run in parallel. The
//! destinations are fresh blobs that nothing else can reach yet, held under
//! their exclusive borrows until the reads end.
//!
//! Progress: the calling thread takes chunks like the others and, after
//! each, tells a [`Progress`] callback the bytes done so far and the total;
//! the callback returning `false` stops the load (an Io error saying it was
//! cancelled). It is last called with `(total, total)` once everything is
//! in. The callback runs on the calling thread only, while no blobcore lock
//! is held (the workers hold only the borrows of the unpublished blobs).

use crate::blob::{Blob, HostMut};
use crate::error::{err, Error, Result};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

/// Bytes per `pread`: large enough that the call's cost vanishes, small
/// enough that every core gets work and progress is reported often.
pub const CHUNK: usize = 8 << 20;

/// The most threads a load uses (reads from the page cache stop scaling
/// well before this on every machine measured).
const MAX_THREADS: usize = 16;

/// A progress callback: `(bytes done, bytes in all)`; returning `false`
/// cancels the load.
pub type Progress<'a> = &'a mut dyn FnMut(u64, u64) -> bool;

/// One destination: a fresh blob's bytes, filled from pieces of a file.
struct Dest {
    file: usize,
    dst: HostMut,
    /// (file offset, start in `dst`, length), not overlapping in `dst`.
    pieces: Vec<(u64, usize, usize)>,
    /// Element size whose byte order is swapped after reading (big-endian
    /// hosts reading little-endian files); 1 for none.
    swap: usize,
}

/// Every read of one eager load, run at once by [`ReadPlan::run`].
#[derive(Default)]
pub(crate) struct ReadPlan {
    files: Vec<(PathBuf, File, u64)>,
    dests: Vec<Dest>,
    total: u64,
}

impl ReadPlan {
    /// An empty plan.
    pub(crate) fn new() -> ReadPlan {
        ReadPlan::default()
    }

    /// Opens `path` for the plan's reads; returns its number and length.
    pub(crate) fn open(&mut self, path: &Path) -> Result<(usize, u64)> {
        let io = |e: std::io::Error| err!(Io, "cannot read {}: {e}", path.display());
        let f = File::open(path).map_err(io)?;
        let len = f.metadata().map_err(io)?.len();
        self.files.push((path.to_path_buf(), f, len));
        Ok((self.files.len() - 1, len))
    }

    /// Plans reading all of dense `blob`'s bytes from `offset` of `file`.
    pub(crate) fn read_blob(&mut self, file: usize, offset: u64, blob: &Blob) -> Result<()> {
        let dst = blob.snapshot().into_write()?;
        let len = dst.len();
        self.read_pieces(file, dst, vec![(offset, 0, len)], 1)
    }

    /// Plans reading `pieces` — (file offset, start in `dst`, length) — of
    /// `file` into `dst`, then swapping the byte order of `swap`-byte
    /// elements when the host is big-endian (`swap` > 1). Every piece must
    /// lie inside the file and inside `dst`, without overlaps in `dst`.
    pub(crate) fn read_pieces(&mut self, file: usize, dst: HostMut, mut pieces: Vec<(u64, usize, usize)>, swap: usize) -> Result<()> {
        let (path, _, flen) = self.files.get(file).ok_or_else(|| err!(Internal, "read plan: no file {file}"))?;
        pieces.sort_by_key(|p| p.1);
        let mut end = 0usize;
        for &(off, start, len) in &pieces {
            let fits_file = off.checked_add(len as u64).is_some_and(|e| e <= *flen);
            let fits_dst = start >= end && start.checked_add(len).is_some_and(|e| e <= dst.len());
            if !fits_file || !fits_dst {
                return Err(err!(Format, "{}: {len} bytes at offset {off} do not fit the file ({flen} bytes) or their tensor", path.display()));
            }
            end = start + len;
            self.total += len as u64;
        }
        let swap = if cfg!(target_endian = "big") { swap.max(1) } else { 1 };
        self.dests.push(Dest { file, dst, pieces, swap });
        Ok(())
    }

    /// Runs every planned read (see the module docs). On error or
    /// cancellation the destinations are left partly filled; the caller
    /// drops the blobs.
    pub(crate) fn run(mut self, mut progress: Option<Progress<'_>>) -> Result<()> {
        let total = self.total;
        let mut reported: Option<u64> = None;
        let mut cancel = false;
        {
            // Every chunk: (file, offset, destination bytes), in plan order.
            let mut chunks: Vec<(usize, u64, &mut [u8])> = Vec::new();
            for d in &mut self.dests {
                let mut rest: &mut [u8] = d.dst.bytes_mut();
                let mut at = 0usize;
                for &(off, start, len) in &d.pieces {
                    let (_, tail) = std::mem::take(&mut rest).split_at_mut(start - at);
                    let (piece, tail) = tail.split_at_mut(len);
                    rest = tail;
                    at = start + len;
                    for (i, c) in piece.chunks_mut(CHUNK).enumerate() {
                        chunks.push((d.file, off + (i * CHUNK) as u64, c));
                    }
                }
            }
            let threads = crate::engine::pool::threads().min(MAX_THREADS).min(chunks.len()).max(1);
            let done = AtomicU64::new(0);
            let stop = AtomicBool::new(false);
            let failure: Mutex<Option<Error>> = Mutex::new(None);
            let files = &self.files;
            let queue = Mutex::new(chunks.into_iter());
            // Reads the next chunk: the bytes done so far after it, or None
            // when there is nothing left or the load stopped.
            let one = || -> Option<u64> {
                if stop.load(Ordering::Relaxed) {
                    return None;
                }
                let (f, off, buf) = queue.lock().unwrap_or_else(|e| e.into_inner()).next()?;
                let (path, file, _) = &files[f];
                if let Err(e) = file.read_exact_at(buf, off) {
                    let e = match e.kind() {
                        std::io::ErrorKind::UnexpectedEof => err!(Io, "{}: the file ended early (was it truncated while loading?)", path.display()),
                        _ => err!(Io, "cannot read {}: {e}", path.display()),
                    };
                    failure.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(e);
                    stop.store(true, Ordering::Relaxed);
                    return None;
                }
                Some(done.fetch_add(buf.len() as u64, Ordering::Relaxed) + buf.len() as u64)
            };
            // The pool's workers take chunks while the calling thread does.
            let one = &one;
            crate::engine::pool::in_place_scope(|s| {
                for _ in 1..threads {
                    s.spawn(move |_| while one().is_some() {});
                }
                while let Some(d) = one() {
                    if let Some(p) = progress.as_mut() {
                        reported = Some(d);
                        if !p(d, total) {
                            cancel = true;
                            stop.store(true, Ordering::Relaxed);
                        }
                    }
                }
            });
            if let Some(e) = failure.into_inner().unwrap_or_else(|e| e.into_inner()) {
                return Err(e);
            }
            if cancel || done.load(Ordering::Relaxed) != total {
                return Err(cancelled());
            }
        }
        for d in &mut self.dests {
            if d.swap > 1 {
                for e in d.dst.bytes_mut().chunks_exact_mut(d.swap) {
                    e.reverse();
                }
            }
        }
        if reported != Some(total) {
            report_done(progress, total)?;
        }
        Ok(())
    }
}

fn cancelled() -> Error {
    err!(Io, "the load was cancelled by its progress callback")
}

/// Calls `progress` with `(total, total)` (loads that read nothing, or map
/// instead of reading); `false` is a cancellation as in [`ReadPlan::run`].
pub(crate) fn report_done(progress: Option<Progress<'_>>, total: u64) -> Result<()> {
    match progress {
        Some(p) => match p(total, total) {
            true => Ok(()),
            false => Err(cancelled()),
        },
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DType, Engine, Shape};

    /// A file of `n` bytes whose byte i is a hash of i.
    fn file(n: usize) -> (tempfile::NamedTempFile, Vec<u8>) {
        let bytes: Vec<u8> = (0..n).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
        let mut f = tempfile::NamedTempFile::new().unwrap();
        std::io::Write::write_all(&mut f, &bytes).unwrap();
        (f, bytes)
    }

    fn blob(n: usize) -> Blob {
        Blob::new(&Engine::cpu(), DType::U8, Shape::new(&[n]).unwrap()).unwrap()
    }

    #[test]
    fn pieces_land_where_planned_across_chunks_and_files() {
        let (f, bytes) = file(3 * CHUNK + 12345);
        let (g, other) = file(1000);
        let mut plan = ReadPlan::new();
        let (a, _) = plan.open(f.path()).unwrap();
        let (b, _) = plan.open(g.path()).unwrap();
        let whole = blob(bytes.len() - 7);
        plan.read_blob(a, 7, &whole).unwrap();
        // Pieces out of order, with a gap left zero.
        let parts = blob(CHUNK + 300);
        let pieces = vec![(5u64, CHUNK + 100, 200), (CHUNK as u64 + 1, 0, CHUNK)];
        plan.read_pieces(a, parts.snapshot().into_write().unwrap(), pieces, 1).unwrap();
        let small = blob(10);
        plan.read_blob(b, 990, &small).unwrap();
        let mut seen = Vec::new();
        plan.run(Some(&mut |d, t| {
            seen.push((d, t));
            true
        }))
        .unwrap();
        assert_eq!(whole.to_vec::<u8>().unwrap(), bytes[7..]);
        let p = parts.to_vec::<u8>().unwrap();
        assert_eq!(p[..CHUNK], bytes[CHUNK + 1..2 * CHUNK + 1]);
        assert!(p[CHUNK..CHUNK + 100].iter().all(|&x| x == 0));
        assert_eq!(p[CHUNK + 100..], bytes[5..205]);
        assert_eq!(small.to_vec::<u8>().unwrap(), other[990..]);
        let total = (bytes.len() - 7 + CHUNK + 200 + 10) as u64;
        assert!(seen.windows(2).all(|w| w[0].0 < w[1].0), "{seen:?}");
        assert!(seen.iter().all(|&(_, t)| t == total));
        assert_eq!(seen.last(), Some(&(total, total)));
    }

    #[test]
    fn bad_plans_and_short_files_are_errors() {
        let (f, _) = file(100);
        let mut plan = ReadPlan::new();
        let (a, _) = plan.open(f.path()).unwrap();
        assert!(matches!(plan.read_blob(a, 1, &blob(100)), Err(Error::Format(_))));
        assert!(matches!(plan.read_blob(a, u64::MAX, &blob(1)), Err(Error::Format(_))));
        let b = blob(10);
        let overlapping = vec![(0u64, 0, 6), (0, 5, 5)];
        assert!(matches!(plan.read_pieces(a, b.snapshot().into_write().unwrap(), overlapping, 1), Err(Error::Format(_))));
        assert!(matches!(plan.open(Path::new("/nonexistent/x")), Err(Error::Io(_))));
        // The file shrinks after planning.
        let c = blob(100);
        plan.read_blob(a, 0, &c).unwrap();
        f.as_file().set_len(50).unwrap();
        assert!(matches!(plan.run(None), Err(Error::Io(m)) if m.contains("ended early")));
    }

    #[test]
    fn a_progress_callback_can_cancel() {
        let (f, _) = file(4 * CHUNK);
        let mut plan = ReadPlan::new();
        let (a, _) = plan.open(f.path()).unwrap();
        plan.read_blob(a, 0, &blob(4 * CHUNK)).unwrap();
        let mut calls = 0;
        let r = plan.run(Some(&mut |_, _| {
            calls += 1;
            false
        }));
        assert!(matches!(r, Err(Error::Io(m)) if m.contains("cancelled")));
        assert_eq!(calls, 1);
        assert!(matches!(report_done(Some(&mut |_, _| false), 0), Err(Error::Io(_))));
        report_done(None, 0).unwrap();
    }
}
