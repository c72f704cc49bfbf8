//! Few rows interleaved into one run and back (NCHW <-> NHWC with C =
//! 2..8), through registers for C = 2, 3, 4 and 8.

use super::registers::t8;
use super::stream::{run, stream_elements};
use std::arch::x86_64::*;

/// `dst[a*C + b] = src[a + b*sj]` for `a < n`, `b < C`: C source rows
/// interleaved into one run, element by element, in pieces through a
/// small buffer streamed out when `stream`: the path of C = 5, 6 and
/// 7 (2, 3, 4 and 8, the common ones, take [`interleave_regs`], about
/// 1.3x faster at 1 GiB: this loop is compute-bound).
///
/// # Safety
/// AVX2 present; n elements readable from each of the C rows, n * C
/// writable at `dst`.
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn interleave<const C: usize>(n: usize, dst: *mut u32, src: *const u32, sj: usize, stream: bool) {
    const PIECE: usize = 256;
    let mut piece = [0u32; PIECE * 8];
    let mut a0 = 0;
    while a0 < n {
        let m = (n - a0).min(PIECE);
        let out = if stream { piece.as_mut_ptr() } else { dst.wrapping_add(a0 * C) };
        // SAFETY: a0 + a < n; out holds m * C elements (the piece has
        // PIECE * 8 >= m * C, or the destination's run).
        unsafe {
            for a in 0..m {
                for b in 0..C {
                    *out.add(a * C + b) = *src.add(a0 + a + b * sj);
                }
            }
            if stream {
                run(dst.add(a0 * C) as *mut u8, piece.as_ptr() as *const u8, m * C * 4, true);
            }
        }
        a0 += m;
    }
}

/// Eight elements of each of C rows as the C vectors of their
/// interleave (`out[e]` = row `e % C`, element `e / C`), in registers.
pub(crate) trait Shuffle<const C: usize> {
    /// The interleave of `rows`.
    ///
    /// # Safety
    /// AVX2 present.
    unsafe fn join(rows: [__m256; C]) -> [__m256; C];
    /// The inverse: the rows of an interleave.
    ///
    /// # Safety
    /// AVX2 present.
    unsafe fn split(run: [__m256; C]) -> [__m256; C];
}

/// The register shuffles of C rows (C = 2, 3, 4 and 8).
pub(crate) struct Rows;

impl Shuffle<2> for Rows {
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn join(r: [__m256; 2]) -> [__m256; 2] {
        // [a0 b0 a1 b1 | a4 b4 a5 b5], [a2 b2 a3 b3 | a6 b6 a7 b7].
        let (lo, hi) = (_mm256_unpacklo_ps(r[0], r[1]), _mm256_unpackhi_ps(r[0], r[1]));
        [_mm256_permute2f128_ps::<0x20>(lo, hi), _mm256_permute2f128_ps::<0x31>(lo, hi)]
    }
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn split(v: [__m256; 2]) -> [__m256; 2] {
        // [a0 b0 a1 b1 | a4 b4 a5 b5], [a2 b2 a3 b3 | a6 b6 a7 b7]: even and odd lanes.
        let (t0, t1) = (_mm256_permute2f128_ps::<0x20>(v[0], v[1]), _mm256_permute2f128_ps::<0x31>(v[0], v[1]));
        [_mm256_shuffle_ps::<0x88>(t0, t1), _mm256_shuffle_ps::<0xDD>(t0, t1)]
    }
}

impl Shuffle<3> for Rows {
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn join(r: [__m256; 3]) -> [__m256; 3] {
        // Output vector v, lane p is element e = 8v + p: row e % 3,
        // element e / 3. One permutation per output vector serves the
        // three rows; two blends pick each lane's row.
        let idx = [_mm256_setr_epi32(0, 0, 0, 1, 1, 1, 2, 2), _mm256_setr_epi32(2, 3, 3, 3, 4, 4, 4, 5), _mm256_setr_epi32(5, 5, 6, 6, 6, 7, 7, 7)];
        let p = |x: __m256, v: usize| _mm256_permutevar8x32_ps(x, idx[v]);
        [
            _mm256_blend_ps::<0x24>(_mm256_blend_ps::<0x92>(p(r[0], 0), p(r[1], 0)), p(r[2], 0)),
            _mm256_blend_ps::<0x49>(_mm256_blend_ps::<0x24>(p(r[0], 1), p(r[1], 1)), p(r[2], 1)),
            _mm256_blend_ps::<0x92>(_mm256_blend_ps::<0x49>(p(r[0], 2), p(r[1], 2)), p(r[2], 2)),
        ]
    }
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn split(v: [__m256; 3]) -> [__m256; 3] {
        // Row r, element i is run element 3i + r: vector (3i + r) / 8,
        // lane (3i + r) % 8. One permutation per row serves the three
        // vectors; two blends pick each lane's vector.
        let idx = [_mm256_setr_epi32(0, 3, 6, 1, 4, 7, 2, 5), _mm256_setr_epi32(1, 4, 7, 2, 5, 0, 3, 6), _mm256_setr_epi32(2, 5, 0, 3, 6, 1, 4, 7)];
        let p = |x: __m256, r: usize| _mm256_permutevar8x32_ps(x, idx[r]);
        [
            _mm256_blend_ps::<0xC0>(_mm256_blend_ps::<0x38>(p(v[0], 0), p(v[1], 0)), p(v[2], 0)),
            _mm256_blend_ps::<0xE0>(_mm256_blend_ps::<0x18>(p(v[0], 1), p(v[1], 1)), p(v[2], 1)),
            _mm256_blend_ps::<0xE0>(_mm256_blend_ps::<0x1C>(p(v[0], 2), p(v[1], 2)), p(v[2], 2)),
        ]
    }
}

impl Shuffle<4> for Rows {
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn join(r: [__m256; 4]) -> [__m256; 4] {
        // The first two steps of an 8x8 transpose: [a0 b0 c0 d0 | a4 b4 c4 d4] ...
        let (u0, u1) = (_mm256_unpacklo_ps(r[0], r[1]), _mm256_unpackhi_ps(r[0], r[1]));
        let (u2, u3) = (_mm256_unpacklo_ps(r[2], r[3]), _mm256_unpackhi_ps(r[2], r[3]));
        let (q0, q1) = (_mm256_shuffle_ps::<0x44>(u0, u2), _mm256_shuffle_ps::<0xEE>(u0, u2));
        let (q2, q3) = (_mm256_shuffle_ps::<0x44>(u1, u3), _mm256_shuffle_ps::<0xEE>(u1, u3));
        [
            _mm256_permute2f128_ps::<0x20>(q0, q1),
            _mm256_permute2f128_ps::<0x20>(q2, q3),
            _mm256_permute2f128_ps::<0x31>(q0, q1),
            _mm256_permute2f128_ps::<0x31>(q2, q3),
        ]
    }
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn split(v: [__m256; 4]) -> [__m256; 4] {
        // Elements 0-3 and 4-7 side by side in each lane, then a 4x4
        // transpose per lane.
        let (q0, q1) = (_mm256_permute2f128_ps::<0x20>(v[0], v[2]), _mm256_permute2f128_ps::<0x31>(v[0], v[2]));
        let (q2, q3) = (_mm256_permute2f128_ps::<0x20>(v[1], v[3]), _mm256_permute2f128_ps::<0x31>(v[1], v[3]));
        let (t0, t1) = (_mm256_unpacklo_ps(q0, q1), _mm256_unpackhi_ps(q0, q1));
        let (t2, t3) = (_mm256_unpacklo_ps(q2, q3), _mm256_unpackhi_ps(q2, q3));
        [
            _mm256_shuffle_ps::<0x44>(t0, t2),
            _mm256_shuffle_ps::<0xEE>(t0, t2),
            _mm256_shuffle_ps::<0x44>(t1, t3),
            _mm256_shuffle_ps::<0xEE>(t1, t3),
        ]
    }
}

impl Shuffle<8> for Rows {
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn join(r: [__m256; 8]) -> [__m256; 8] {
        t8(r)
    }
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn split(v: [__m256; 8]) -> [__m256; 8] {
        t8(v)
    }
}

/// [`interleave`] in registers for C = 2, 3, 4 and 8 (NCHW -> NHWC of
/// images with few channels, NCHW -> nChw8c): eight elements of each
/// row become C vectors of the run ([`Shuffle::join`]), stored straight
/// to the destination, non-temporal when `stream` and aligned; scalar
/// edges.
///
/// # Safety
/// AVX2 present; n elements readable from each of the C rows `sj`
/// apart, n * C writable at `dst`.
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn interleave_regs<const C: usize>(n: usize, dst: *mut u32, src: *const u32, sj: usize, stream: bool)
where
    Rows: Shuffle<C>,
{
    let scalar = |a: usize| {
        for k in 0..C {
            // SAFETY: a < n (the callers' loops); the contract.
            unsafe { *dst.add(C * a + k) = *src.add(k * sj + a) };
        }
    };
    // SAFETY: every element read is below n in its row and every
    // element written below C * n (the contract); streamed stores only
    // where `dst + C * a` is 32-byte aligned (steps of 8 keep it so).
    unsafe {
        // Scalar elements until the destination is 32-byte aligned
        // (within 8 when it can be: C * a covers the residues it needs).
        let mut a = 0;
        while a < n && a < 8 && !(dst.add(C * a) as usize).is_multiple_of(32) {
            scalar(a);
            a += 1;
        }
        let aligned = (dst.add(C * a) as usize).is_multiple_of(32);
        while a + 8 <= n {
            let r: [__m256; C] = std::array::from_fn(|k| _mm256_loadu_ps(src.add(k * sj + a) as *const f32));
            let o = dst.add(C * a) as *mut f32;
            for (k, v) in <Rows as Shuffle<C>>::join(r).into_iter().enumerate() {
                if stream && aligned {
                    _mm256_stream_ps(o.add(8 * k), v);
                } else {
                    _mm256_storeu_ps(o.add(8 * k), v);
                }
            }
            a += 8;
        }
        while a < n {
            scalar(a);
            a += 1;
        }
    }
}

/// `dst[a*di + b] = src[b*C + a]` for `a < C`, `b < n`: one run split
/// into C destination rows, element by element, in pieces through a
/// small buffer streamed out when `stream`: the path of C = 5, 6 and
/// 7 (the others take [`deinterleave_regs`]).
///
/// # Safety
/// AVX2 present; n * C elements readable at `src`, n writable in each
/// of the C rows.
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn deinterleave<const C: usize>(n: usize, dst: *mut u32, di: usize, src: *const u32, stream: bool) {
    const PIECE: usize = 256;
    let mut piece = [[0u32; PIECE]; C];
    let mut b0 = 0;
    while b0 < n {
        let m = (n - b0).min(PIECE);
        // SAFETY: b0 + b < n; the piece's rows hold PIECE >= m.
        unsafe {
            if stream {
                for b in 0..m {
                    for (a, row) in piece.iter_mut().enumerate() {
                        row[b] = *src.add((b0 + b) * C + a);
                    }
                }
                for (a, row) in piece.iter().enumerate() {
                    run(dst.add(a * di + b0) as *mut u8, row.as_ptr() as *const u8, m * 4, true);
                }
            } else {
                for b in 0..m {
                    for a in 0..C {
                        *dst.add(a * di + b0 + b) = *src.add((b0 + b) * C + a);
                    }
                }
            }
        }
        b0 += m;
    }
}

/// [`deinterleave`] in registers for C = 2, 3, 4 and 8 (NHWC -> NCHW
/// of images with few channels, nChw8c -> NCHW): C vectors of the run
/// become eight elements of each row ([`Shuffle::split`]), sixteen per
/// row at a time so that each row gets whole 64-byte lines, stored
/// non-temporal when `stream` and the rows are aligned; scalar edges.
/// With `stream` and `bursts` (the plan's `Tuning::rows_in_bursts`, a
/// hint), each row gets [`BURST`] elements at a time instead, through
/// [`deinterleave_bursts`].
///
/// # Safety
/// AVX2 present; n * C elements readable at `src`, n writable in each
/// of the C rows `di` apart.
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn deinterleave_regs<const C: usize>(n: usize, dst: *mut u32, di: usize, src: *const u32, stream: bool, bursts: bool)
where
    Rows: Shuffle<C>,
{
    if stream && bursts {
        // SAFETY: forwarded.
        unsafe { deinterleave_bursts::<C>(n, dst, di, src) };
        return;
    }
    let scalar = |b: usize| {
        for k in 0..C {
            // SAFETY: b < n (the callers' loops); the contract.
            unsafe { *dst.add(k * di + b) = *src.add(C * b + k) };
        }
    };
    // SAFETY: every element read is below C * n and every element
    // written below n in its row (the contract); streamed stores only
    // where all C rows are 32-byte aligned at `b` (steps of 16 keep
    // them so).
    unsafe {
        let mut b = 0;
        while b < n && b < 8 && !(dst.add(b) as usize).is_multiple_of(32) {
            scalar(b);
            b += 1;
        }
        let aligned = (0..C).all(|k| (dst.add(k * di + b) as usize).is_multiple_of(32));
        while b + 16 <= n {
            let s = src.add(C * b) as *const f32;
            if stream {
                // The one read stream into L2 ahead, out of cache
                // (crate::ops::L2_AHEAD_BYTES; the hint may point past
                // the run, which prefetching tolerates).
                crate::ops::prefetch_l2((s as *const u8).wrapping_add(crate::ops::L2_AHEAD_BYTES), 64 * C);
            }
            let lo = <Rows as Shuffle<C>>::split(std::array::from_fn(|k| _mm256_loadu_ps(s.add(8 * k))));
            let hi = <Rows as Shuffle<C>>::split(std::array::from_fn(|k| _mm256_loadu_ps(s.add(8 * C + 8 * k))));
            for k in 0..C {
                let o = dst.add(k * di + b) as *mut f32;
                if stream && aligned {
                    _mm256_stream_ps(o, lo[k]);
                    _mm256_stream_ps(o.add(8), hi[k]);
                } else {
                    _mm256_storeu_ps(o, lo[k]);
                    _mm256_storeu_ps(o.add(8), hi[k]);
                }
            }
            b += 16;
        }
        while b < n {
            scalar(b);
            b += 1;
        }
    }
}

/// Elements of each destination row that [`deinterleave_bursts`] (and
/// `tiles.rs`'s unpacked tiles) write at most in one burst: 512 bytes.
/// On the Zen 3 VM (session 73), nChw8c -> NCHW at 1 GiB, the sizes
/// alternated in one process, the best of 6-8 rounds, four sets: 64
/// bytes to each row in turn 57-70 ms, bursts of 256 bytes 59-64 ms,
/// 384 bytes 45-53 ms, 512 bytes 42-51 ms, 768 bytes 48-55 ms, 1 KiB
/// 48-57 ms, 2 KiB 53-60 ms, 4 KiB 56-66 ms.
pub(crate) const BURST: usize = 128;

/// [`deinterleave_regs`], streamed, with each destination row written
/// [`BURST`] elements at a time: a piece of the run is split in
/// registers into a scratch of C rows (in L1), and each row's piece is
/// then streamed out whole, instead of 64 bytes to each row in turn
/// (see `Tuning::rows_in_bursts`).
///
/// # Safety
/// As [`deinterleave_regs`].
#[target_feature(enable = "avx2")]
unsafe fn deinterleave_bursts<const C: usize>(n: usize, dst: *mut u32, di: usize, src: *const u32)
where
    Rows: Shuffle<C>,
{
    // The scratch: C rows of BURST, 64-byte aligned, never read before
    // it is written (so left uninitialised: it is filled anew for each
    // piece, C * 512 bytes).
    #[repr(C, align(64))]
    struct Piece<const C: usize>([[f32; BURST]; C]);
    let mut piece = std::mem::MaybeUninit::<Piece<C>>::uninit();
    let rows = piece.as_mut_ptr() as *mut f32;
    let mut b0 = 0;
    while b0 < n {
        let m = (n - b0).min(BURST);
        let whole = m / 16 * 16;
        // SAFETY: every element read is below C * n (C * (b0 + b) + k with
        // b < m, k < C) and every one written below n in its row (b0 + b);
        // the scratch's row k holds BURST >= m elements from rows + k *
        // BURST (32-byte aligned at every multiple of 8), and only those
        // written in this piece are read back.
        unsafe {
            let s = src.add(C * b0) as *const f32;
            for b in (0..whole).step_by(16) {
                crate::ops::prefetch_l2((s.add(C * b) as *const u8).wrapping_add(crate::ops::L2_AHEAD_BYTES), 64 * C);
                let lo = <Rows as Shuffle<C>>::split(std::array::from_fn(|k| _mm256_loadu_ps(s.add(C * b + 8 * k))));
                let hi = <Rows as Shuffle<C>>::split(std::array::from_fn(|k| _mm256_loadu_ps(s.add(C * b + 8 * C + 8 * k))));
                for k in 0..C {
                    _mm256_store_ps(rows.add(k * BURST + b), lo[k]);
                    _mm256_store_ps(rows.add(k * BURST + b + 8), hi[k]);
                }
            }
            for b in whole..m {
                for k in 0..C {
                    *rows.add(k * BURST + b) = *s.add(C * b + k);
                }
            }
            for k in 0..C {
                stream_elements(dst.add(k * di + b0), rows.add(k * BURST) as *const u32, m);
            }
        }
        b0 += m;
    }
}
