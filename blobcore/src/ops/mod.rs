//! Operations on blob data. Each file holds one family; all of them work
//! on `Region` snapshots with registered borrows,
//! so no operation can race a guard or another operation on overlapping
//! memory.

pub mod arith;
pub mod assign;
pub mod cast;
pub mod copy;
pub mod fill;
pub mod logical;
pub(crate) mod gpu;
pub mod merge;
pub mod reduce;
pub mod reorder;
pub(crate) mod strided;
pub mod transpose;

use crate::blob::{Blob, HostMut, HostRef, Region};
use crate::overlap::{Overlap, OP_WORK};
use crate::engine::cpu::PARALLEL_BYTES;
use crate::error::{err, Result};
use rayon::prelude::*;

/// Bytes per parallel task for streaming kernels.
pub(crate) const TASK_BYTES: usize = 256 << 10;

/// How far ahead of a streaming read its software prefetches run. The
/// hardware prefetchers alone leave this VM's reads short of the memory's
/// speed: a dense 1 GiB copy took 64-82 ms without and 57-72 ms with
/// them (2 KiB to 8 KiB ahead all alike; `asum` gained about 1.4x).
pub(crate) const PREFETCH_BYTES: usize = 4096;

/// How far ahead of its one read stream a kernel that writes several
/// streamed destinations at once (a channel split, the register
/// deinterleaves of nChw8c -> NCHW and NHWC -> NCHW) fetches its source
/// into L2 ([`prefetch_l2`]). Measured on session 45's VM (AVX-512, 48
/// KiB L1d), 1 GiB, against no hint: `nChw8c->NCHW` 0.68-0.70x of the
/// dense copy -> 0.85-0.90x at 2-3 KiB, 0.71-0.74x at 4 KiB, 0.78-0.82x
/// at 512 bytes; split Channels 0.84-0.85x -> 0.90-0.92x. Hints into L1
/// (`prefetcht0`) at any distance made both slower: they hold the
/// line-fill buffers that the streamed stores need.
pub(crate) const L2_AHEAD_BYTES: usize = 2048;

/// Asks the CPU to bring the cache lines of `[p, p + bytes)` into L2
/// (`prefetcht1`), not L1; a hint like [`prefetch`], so any address
/// will do.
#[inline(always)]
pub(crate) fn prefetch_l2(p: *const u8, bytes: usize) {
    prefetch_lines::<true>(p, bytes);
}

/// Asks the CPU to bring the cache lines of `[p, p + bytes)` in for
/// reading: a hint, which reads nothing a program can see and never
/// faults, so any address will do (past a slice's end included).
#[inline(always)]
pub(crate) fn prefetch(p: *const u8, bytes: usize) {
    prefetch_lines::<false>(p, bytes);
}

/// One hint per 64-byte line of `[p, p + bytes)`: into L2 only when
/// `L2`, else into L1 as well.
#[inline(always)]
fn prefetch_lines<const L2: bool>(p: *const u8, bytes: usize) {
    #[cfg(target_arch = "x86_64")]
    for off in (0..bytes).step_by(64) {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0, _MM_HINT_T1};
        let at = p.wrapping_add(off) as *const i8;
        // SAFETY: a prefetch has no architectural effect and cannot fault
        // (SSE, part of x86-64); the pointer is only computed, never read.
        unsafe {
            if L2 {
                _mm_prefetch::<_MM_HINT_T1>(at)
            } else {
                _mm_prefetch::<_MM_HINT_T0>(at)
            }
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (p, bytes);
}

/// How an operation reads a source that may share memory with its
/// destination (decided by address, [`crate::overlap`]).
pub(crate) enum Source {
    /// The very same elements in the same order: element-wise operations
    /// run in place, copies do nothing.
    Same,
    /// Memory apart from the destination: the source itself when the two
    /// share no byte, else a dense copy of it taken first (NumPy's rule:
    /// an operation reads its sources as they were before it writes).
    Apart(Blob),
}

/// The [`Source`] of `src` for an operation writing `dst`.
pub(crate) fn source_for(dst: &Blob, src: &Blob) -> Result<Source> {
    let (d, s) = (dst.footprint(), src.footprint());
    if d.same_elements(&s) {
        return Ok(Source::Same);
    }
    // Within one storage the operation borrows each side's whole span, so
    // interleaved views that share no element still clash there: their
    // bounds decide. Across storages (aliases) only shared bytes matter.
    let apart = if d.same_storage(&s) { !d.may_overlap(&s) } else { d.overlap(&s, OP_WORK) == Overlap::No };
    Ok(Source::Apart(if apart { src.clone() } else { src.copy()? }))
}

/// The Shape error of an element-wise operation or copy on different dims. Checked
/// again on every fresh look at the source: another thread may reshape it
/// between two looks.
pub(crate) fn same_shape(name: &str, dst: &Region, src: &Region) -> Result<()> {
    if dst.shape != src.shape {
        return Err(err!(Shape, "{name}: dims differ ({} and {})", dst.shape, src.shape));
    }
    Ok(())
}

/// Exclusive access to `dst` and shared access to `src`, which the caller
/// has made apart ([`source_for`]); a clash with a live guard is Busy.
pub(crate) fn dst_src(dst: &Region, src: &Region, op: &str) -> Result<(HostMut, HostRef)> {
    if !dst.apart(src) {
        return Err(err!(Internal, "{op}: source and destination share memory after the source was made apart"));
    }
    let r = src.read()?;
    let w = dst.write()?;
    Ok((w, r))
}

/// `dst.copy_from_slice(src)`, split across threads when large.
pub(crate) fn par_copy(dst: &mut [u8], src: &[u8]) {
    par_copy_piece(dst, src, strided::streams(dst.len()))
}

/// [`par_copy`] of one piece of an operation whose whole size decided
/// `stream` (see [`strided::streams`]).
pub(crate) fn par_copy_piece(dst: &mut [u8], src: &[u8], stream: bool) {
    if strided::copy_streamed_if(dst, src, stream) {
        return;
    }
    if dst.len() < PARALLEL_BYTES {
        dst.copy_from_slice(src);
    } else {
        crate::engine::pool::install(|| dst.par_chunks_mut(TASK_BYTES * 4).zip(src.par_chunks(TASK_BYTES * 4)).for_each(|(d, s)| d.copy_from_slice(s)));
    }
}

/// Copies every `(dst, src)` pair (equal lengths) in one parallel pass: the
/// pairs are cut into tasks of about [`TASK_BYTES`] and the tasks share
/// the threads, so an operation of many pieces of a few MiB (a merge along
/// axis 1: one piece per part and outer index) waits on the pool once, not
/// once per piece. `stream` as in [`par_copy_piece`].
pub(crate) fn par_copy_pieces(pairs: Vec<(&mut [u8], &[u8])>, stream: bool) {
    let mut tasks: Vec<(&mut [u8], &[u8])> = Vec::with_capacity(pairs.len());
    for (d, s) in pairs {
        let n = d.len().min(s.len());
        let (mut d, mut s) = (&mut d[..n], &s[..n]);
        while !d.is_empty() {
            // The first task of a piece also takes its unaligned head, so
            // that every later one starts 32-byte aligned.
            let take = (d.as_ptr().align_offset(32).min(d.len()) + TASK_BYTES).min(d.len());
            let (d0, d1) = std::mem::take(&mut d).split_at_mut(take);
            let (s0, s1) = s.split_at(take);
            tasks.push((d0, s0));
            (d, s) = (d1, s1);
        }
    }
    if tasks.iter().map(|(d, _)| d.len()).sum::<usize>() < PARALLEL_BYTES {
        tasks.into_iter().for_each(|(d, s)| strided::copy_task(d, s, stream));
    } else {
        crate::engine::pool::install(|| tasks.into_par_iter().for_each(|(d, s)| strided::copy_task(d, s, stream)));
    }
}

/// Applies `f` to chunks of `data` (in parallel when large); chunk sizes
/// are whole elements.
pub(crate) fn par_chunks_mut<T: Send>(data: &mut [T], f: impl Fn(&mut [T]) + Sync + Send) {
    let es = std::mem::size_of::<T>().max(1);
    if data.len() * es < PARALLEL_BYTES {
        f(data);
    } else {
        crate::engine::pool::install(|| data.par_chunks_mut((TASK_BYTES / es).max(1)).for_each(f));
    }
}

/// The pieces [`par_chunks_in_place`] hands its kernel, each after a hint
/// for the piece [`PREFETCH_BYTES`] ahead. Measured on session 78's
/// Emerald Rapids VM (1 GiB, two alternated rounds, ratios to the streamed
/// dense copy): f32 `scale` 1.01-1.05x with no hint, 1.10-1.14x with pieces
/// of 4 KiB, 1.17-1.18x of 2 KiB, 1.32-1.35x of 1 KiB, 1.33-1.39x of 512
/// bytes, 1.27-1.30x of 256; int64 `scale` 0.67x, 0.67-0.70x, 0.86-0.88x,
/// 0.98-1.01x, 1.07-1.09x, 0.98-1.05x. Larger pieces send their hints in
/// one burst, which the line-fill buffers cannot take.
const IN_PLACE_PIECE_BYTES: usize = 512;

/// [`par_chunks_mut`] for a kernel that reads every element before it
/// writes it back in place (`scale`, `x += x`). When large, each task goes
/// in pieces of [`IN_PLACE_PIECE_BYTES`], and before each piece the lines
/// [`PREFETCH_BYTES`] ahead are hinted in: the hardware prefetchers alone
/// leave such a pass short of the memory's speed.
pub(crate) fn par_chunks_in_place<T: Send>(data: &mut [T], f: impl Fn(&mut [T]) + Sync + Send) {
    let es = std::mem::size_of::<T>().max(1);
    if data.len() * es < PARALLEL_BYTES {
        f(data);
    } else {
        let piece = (IN_PLACE_PIECE_BYTES / es).max(1);
        crate::engine::pool::install(|| {
            data.par_chunks_mut((TASK_BYTES / es).max(1)).for_each(|task| {
                for p in task.chunks_mut(piece) {
                    // A hint only: past the task's (or the slice's) end is
                    // harmless, and the next task's lines are needed soon.
                    prefetch((p.as_ptr() as *const u8).wrapping_add(PREFETCH_BYTES), IN_PLACE_PIECE_BYTES);
                    f(p);
                }
            })
        });
    }
}

/// Applies `f` to matching chunks of `dst` and `src` (in parallel when
/// large), for a kernel that reads both and writes `dst` (`a += b`). When
/// large, in the pieces of [`par_chunks_in_place`], the lines of both
/// [`PREFETCH_BYTES`] ahead hinted in before each: `add (a += b)` of 1 GiB
/// took 75-77 ms without and 67-68 ms with them (session 78's VM).
pub(crate) fn par_zip_mut<T: Send + Sync>(dst: &mut [T], src: &[T], f: impl Fn(&mut [T], &[T]) + Sync + Send) {
    let es = std::mem::size_of::<T>().max(1);
    if dst.len() * es < PARALLEL_BYTES {
        f(dst, src);
    } else {
        let (n, piece) = ((TASK_BYTES / es).max(1), (IN_PLACE_PIECE_BYTES / es).max(1));
        crate::engine::pool::install(|| {
            dst.par_chunks_mut(n).zip(src.par_chunks(n)).for_each(|(d, s)| {
                for (p, q) in d.chunks_mut(piece).zip(s.chunks(piece)) {
                    // Hints only: past either slice's end is harmless.
                    prefetch((p.as_ptr() as *const u8).wrapping_add(PREFETCH_BYTES), IN_PLACE_PIECE_BYTES);
                    prefetch((q.as_ptr() as *const u8).wrapping_add(PREFETCH_BYTES), IN_PLACE_PIECE_BYTES);
                    f(p, q);
                }
            })
        });
    }
}

#[cfg(test)]
mod self_operand_tests {
    //! `x.op(x)` for every operation with two blob operands, on dense,
    //! windowed, strided and permuted blobs: each must take every lock once
    //! (the crate's test build panics on a second acquisition, see
    //! `blob::lock_check`) and give NumPy's result (sources read first).
    use crate::{Blob, BlobDim, DType, Engine, Index};

    fn ramp(dims: &[usize]) -> Blob {
        let n: usize = dims.iter().product();
        Blob::from_slice(&Engine::cpu(), dims, &(0..n).map(|i| i as f32).collect::<Vec<_>>()).unwrap()
    }

    #[test]
    #[allow(clippy::type_complexity)]
    fn every_two_operand_operation_on_one_blob() {
        let strided = |b: &Blob| b.index(&[Index::ALL, Index::Range { start: None, stop: None, step: Some(2) }]).unwrap();
        let kinds: Vec<(&str, Box<dyn Fn() -> Blob>)> = vec![
            ("dense", Box::new(|| ramp(&[4, 4]))),
            ("window", Box::new(|| ramp(&[6, 4]).window(4).unwrap())),
            ("strided", Box::new(move || strided(&ramp(&[4, 8])))),
            ("permuted", Box::new(|| ramp(&[4, 4]).permuted_view(&[1, 0]).unwrap())),
            ("reversed", Box::new(|| ramp(&[4, 4]).index(&[Index::Range { start: None, stop: None, step: Some(-1) }]).unwrap())),
            ("region", Box::new(|| ramp(&[6, 6]).region(&[1, 2], &[5, 6]).unwrap())),
        ];
        for (kind, make) in &kinds {
            let x = make();
            let before = x.copy().unwrap().to_vec::<f32>().unwrap();
            x.copy_from(&x).unwrap();
            x.reorder_from(&x).unwrap();
            x.copy_from_caffe(&x, false, true).unwrap();
            assert_eq!(x.copy().unwrap().to_vec::<f32>().unwrap(), before, "{kind}");
            x.permute_from(&x, &[1, 0]).unwrap();
            x.transpose_from(&x, 0, 1).unwrap();
            assert_eq!(x.copy().unwrap().to_vec::<f32>().unwrap(), before, "{kind}: transposed twice");
            x.transpose_from_dims(&x, BlobDim::BatchLength, BlobDim::BatchWidth).unwrap();
            x.transpose_from_dims(&x, BlobDim::BatchLength, BlobDim::BatchWidth).unwrap();
            assert_eq!(x.copy().unwrap().to_vec::<f32>().unwrap(), before, "{kind}: named transposes");
            assert!(x.shares_memory(&x) && x.may_share_memory(&x) && x.has_equal_dims(&x) && x.same_shape(&x, true));
            // Every layout (issue 27): x + x doubles, merges of x read it first.
            x.add(&x).unwrap();
            let doubled: Vec<f32> = before.iter().map(|v| 2.0 * v).collect();
            assert_eq!(x.to_vec::<f32>().unwrap(), doubled, "{kind}: x + x");
            let m2 = Blob::tensor(&Engine::cpu(), DType::F32, &[8, 4]).unwrap();
            Blob::merge(&[&x, &x], 0, &m2).unwrap();
            let half = m2.window(4).unwrap();
            Blob::split(&m2, 0, &[&half.copy().unwrap(), &x]).unwrap();
            assert_eq!(x.to_vec::<f32>().unwrap(), doubled, "{kind}: split back");
            if x.is_dense() {
                x.share_data(&x).unwrap();
                x.diff().unwrap().copy_from(&x).unwrap();
                x.update().unwrap();
                let m = Blob::tensor(&Engine::cpu(), DType::F32, &[8, 4]).unwrap();
                Blob::merge(&[&x, &x], 0, &m).unwrap();
                let w = m.window(4).unwrap();
                Blob::merge(&[&w, &w], 0, &m).unwrap(); // parts inside the destination: read first
                Blob::split(&m, 0, &[&w, &m.window(4).unwrap().tap_pos(1)]).unwrap_err();
            }
        }
    }

    trait TapPos {
        fn tap_pos(self, p: i64) -> Blob;
    }
    impl TapPos for Blob {
        fn tap_pos(self, p: i64) -> Blob {
            self.set_parent_pos(p).unwrap();
            self
        }
    }
}
