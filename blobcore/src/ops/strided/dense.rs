//! Streamed dense copies, fills, row copies and merges: the kernels the
//! copy, fill and merge operations call directly, with non-temporal
//! stores above [`STREAM_BYTES`] where the CPU has AVX.

#[cfg(target_arch = "x86_64")]
use super::simd;
use super::{STREAM_BYTES, TASK_BYTES};
use rayon::prelude::*;

/// Fills `data` with `v` using non-temporal stores when it is at least
/// [`STREAM_BYTES`] and the CPU has AVX (a fill that large would not stay
/// in cache, and streaming skips the read for ownership). False when it
/// did nothing (the caller fills normally).
pub(crate) fn fill_streamed<T: Copy + Send + Sync>(data: &mut [T], v: T) -> bool {
    let es = std::mem::size_of::<T>();
    #[cfg(target_arch = "x86_64")]
    if std::mem::size_of_val(data) >= STREAM_BYTES && es > 0 && 32 % es == 0 && simd::has_avx() {
        crate::engine::pool::install(|| data.par_chunks_mut((TASK_BYTES / es).max(1)).for_each(|c| {
            // Head until 32-byte alignment, streamed body, tail.
            let head = c.as_ptr().align_offset(32).min(c.len());
            let (h, rest) = c.split_at_mut(head);
            h.fill(v);
            let body = rest.len() / (32 / es) * (32 / es);
            let (b, t) = rest.split_at_mut(body);
            t.fill(v);
            let pattern = [v; 32];
            // SAFETY: AVX is present; `b` is 32-byte aligned, a whole number
            // of 32-byte pieces, and `pattern` holds at least 32 bytes of
            // `v` repeated (the element size divides 32).
            unsafe { simd::stream_fill(b.as_mut_ptr() as *mut u8, std::mem::size_of_val(b), pattern.as_ptr() as *const u8) };
        }));
        return true;
    }
    let _ = (data, v, es);
    false
}

/// Copies `src` to `dst` (equal lengths) with non-temporal stores on all
/// cores when `stream` (decided by the caller from its whole operation's
/// size, see [`streams`]), the piece is at least a few tasks long and the
/// CPU has AVX. False when it did nothing (the caller copies normally).
pub(crate) fn copy_streamed_if(dst: &mut [u8], src: &[u8], stream: bool) -> bool {
    #[cfg(target_arch = "x86_64")]
    if stream && dst.len() >= 4 * TASK_BYTES && dst.len() == src.len() && simd::has_avx() {
        let head = dst.as_ptr().align_offset(32).min(dst.len());
        let (dh, db) = dst.split_at_mut(head);
        let (sh, sb) = src.split_at(head);
        dh.copy_from_slice(sh);
        // Chunks of TASK_BYTES from an aligned start: each task streams
        // all but its last few bytes (see copy_task).
        crate::engine::pool::install(|| db.par_chunks_mut(TASK_BYTES).zip(sb.par_chunks(TASK_BYTES)).for_each(|(d, s)| copy_task(d, s, true)));
        return true;
    }
    let _ = (dst, src);
    false
}

/// One task's copy (equal lengths): with `stream` and AVX, the part of
/// `dst` from its first 32-byte boundary on is written with non-temporal
/// stores and fenced; the head and tail before and after it normally.
pub(crate) fn copy_task(dst: &mut [u8], src: &[u8], stream: bool) {
    let n = dst.len().min(src.len());
    let (dst, src) = (&mut dst[..n], &src[..n]);
    #[cfg(target_arch = "x86_64")]
    if stream && n >= 64 && simd::has_avx() {
        let head = dst.as_ptr().align_offset(32).min(n);
        let body = (n - head) / 32 * 32;
        let (dh, rest) = dst.split_at_mut(head);
        let (db, dt) = rest.split_at_mut(body);
        let (sh, rest) = src.split_at(head);
        let (sb, st) = rest.split_at(body);
        dh.copy_from_slice(sh);
        dt.copy_from_slice(st);
        if body > 0 {
            // SAFETY: AVX present; db starts 32-byte aligned and holds
            // `body` bytes, a multiple of 32, as does sb; they do not
            // overlap (db is borrowed mutably).
            unsafe { simd::stream_copy(db.as_mut_ptr(), sb.as_ptr(), body) };
        }
        simd::fence();
        return;
    }
    let _ = stream;
    dst.copy_from_slice(src);
}

/// True when a copy or fill writing `bytes` should stream its stores.
pub(crate) fn streams(bytes: usize) -> bool {
    bytes >= STREAM_BYTES
}

/// `rows` runs of `bytes`: run `r` from `src[r * ss..]` to `dst[r * ds..]`
/// (a 2-D copy, as merges and splits along an inner axis make). With
/// `stream`, and when every run is whole aligned 32-byte pieces, the runs
/// go out with non-temporal stores from one loop: the chunks of a channel
/// merge are a few hundred bytes, and a call per chunk cost as much as the
/// copy itself. Returns false, copying nothing, when a run would leave
/// either slice.
pub(crate) fn copy_rows(dst: &mut [u8], ds: usize, src: &[u8], ss: usize, bytes: usize, rows: usize, stream: bool) -> bool {
    if rows == 0 || bytes == 0 {
        return true;
    }
    let end = |stride: usize| (rows - 1).checked_mul(stride).and_then(|x| x.checked_add(bytes));
    match (end(ds), end(ss)) {
        (Some(de), Some(se)) if de <= dst.len() && se <= src.len() => {}
        _ => return false,
    }
    #[cfg(target_arch = "x86_64")]
    if stream && bytes >= 64 && bytes.is_multiple_of(32) && ds.is_multiple_of(32) && (dst.as_ptr() as usize).is_multiple_of(32) && simd::has_avx() {
        // SAFETY: AVX present; every run r is inside both slices (checked
        // above) and starts 32-byte aligned in dst (aligned start, stride a
        // multiple of 32); the slices cannot overlap (one is borrowed
        // mutably).
        unsafe { simd::stream_rows(dst.as_mut_ptr(), ds, src.as_ptr(), ss, bytes, rows) };
        return true;
    }
    for r in 0..rows {
        copy_chunk(&mut dst[r * ds..r * ds + bytes], &src[r * ss..r * ss + bytes]);
    }
    true
}

/// Copies `src` into `dst` (equal lengths) with constant-size copies for
/// the small chunk sizes that channel merges produce.
#[inline(always)]
pub(crate) fn copy_chunk(dst: &mut [u8], src: &[u8]) {
    match dst.len() {
        4 => dst.copy_from_slice(&src[..4]),
        8 => dst.copy_from_slice(&src[..8]),
        12 => dst.copy_from_slice(&src[..12]),
        16 => dst.copy_from_slice(&src[..16]),
        32 => dst.copy_from_slice(&src[..32]),
        64 => dst.copy_from_slice(&src[..64]),
        _ => dst.copy_from_slice(src),
    }
}

/// The conditions [`merge_rows`] and [`split_rows`] share: one chunk
/// per part, each of 64 B to 1 KiB in whole 32-byte pieces, at most
/// [`simd::MERGE_PARTS`] parts, AVX, and `rows` rows inside the whole
/// (`whole` bytes) and inside every part (`parts[i]` bytes).
#[cfg(target_arch = "x86_64")]
fn rows_fit(whole: usize, parts: impl ExactSizeIterator<Item = usize>, chunks: &[usize], rows: usize) -> bool {
    let row: usize = chunks.iter().sum();
    parts.len() == chunks.len()
        && chunks.len() <= simd::MERGE_PARTS
        && rows.checked_mul(row).is_some_and(|n| n <= whole)
        && parts.zip(chunks).all(|(p, &c)| (64..=1024).contains(&c) && c.is_multiple_of(32) && rows.checked_mul(c).is_some_and(|n| n <= p))
        && simd::has_avx()
}

/// Gathers `rows` rows of `whole` from the parts, writing `whole` in
/// order with non-temporal stores: row `r` is chunk `r` of each part
/// (`chunks[i]` bytes from `parts[i][r * chunks[i]..]`) side by side.
/// Only for short chunks of whole aligned 32-byte pieces (64 B to 1 KiB,
/// a channel merge) on AVX and at most 16 parts; returns false, copying
/// nothing, otherwise or when a row would leave a slice.
pub(crate) fn merge_rows(whole: &mut [u8], parts: &[&[u8]], chunks: &[usize], rows: usize) -> bool {
    #[cfg(target_arch = "x86_64")]
    if rows_fit(whole.len(), parts.iter().map(|p| p.len()), chunks, rows) && (whole.as_ptr() as usize).is_multiple_of(32) {
        let mut from = [(std::ptr::null(), 0usize); simd::MERGE_PARTS];
        for (f, (p, &c)) in from.iter_mut().zip(parts.iter().zip(chunks)) {
            *f = (p.as_ptr(), c);
        }
        // SAFETY: AVX present; rows * row bytes of whole and rows * c of
        // each part lie inside their slices (checked above); whole starts
        // 32-byte aligned and every chunk is whole 32-byte pieces, so each
        // store is aligned; whole is borrowed mutably, so nothing overlaps.
        unsafe { simd::stream_merge(whole.as_mut_ptr(), &from[..parts.len()], rows, super::tuning::merge_ahead_bytes()) };
        return true;
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (whole, parts, chunks, rows);
    false
}

/// Scatters `rows` rows of `whole` into the parts, reading `whole` in
/// order and writing each part with non-temporal stores: the inverse of
/// [`merge_rows`], under the same conditions (chunks of 64 B to 1 KiB in
/// whole 32-byte pieces, every part 32-byte aligned, AVX, at most 16
/// parts); returns false, copying nothing, otherwise or when a row would
/// leave a slice.
pub(crate) fn split_rows(whole: &[u8], parts: &mut [&mut [u8]], chunks: &[usize], rows: usize) -> bool {
    #[cfg(target_arch = "x86_64")]
    if rows_fit(whole.len(), parts.iter().map(|p| p.len()), chunks, rows) && parts.iter().all(|p| (p.as_ptr() as usize).is_multiple_of(32)) {
        let mut to = [(std::ptr::null_mut(), 0usize); simd::MERGE_PARTS];
        for (t, (p, &c)) in to.iter_mut().zip(parts.iter_mut().zip(chunks)) {
            *t = (p.as_mut_ptr(), c);
        }
        // SAFETY: AVX present; rows * row bytes of whole and rows * c of
        // each part lie inside their slices (checked above); every part
        // starts 32-byte aligned and every chunk is whole 32-byte pieces,
        // so each store is aligned; the parts are borrowed mutably, so
        // none overlaps another or whole.
        unsafe { simd::stream_split(whole.as_ptr(), &to[..parts.len()], rows) };
        return true;
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (whole, parts, chunks, rows);
    false
}

/// Orders the non-temporal stores made so far before what follows.
pub(crate) fn store_fence() {
    #[cfg(target_arch = "x86_64")]
    simd::fence();
}
