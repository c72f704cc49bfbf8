//! Register transposes: 8x8 (and 8x16) with AVX, 4x4 with SSE2.

use std::arch::x86_64::*;

/// The transpose of eight rows of eight, in registers.
#[target_feature(enable = "avx")]
#[inline]
pub(crate) fn t8(r: [__m256; 8]) -> [__m256; 8] {
    // Interleave pairs of rows, then pairs of pairs, then the halves.
    let (u0, u1) = (_mm256_unpacklo_ps(r[0], r[1]), _mm256_unpackhi_ps(r[0], r[1]));
    let (u2, u3) = (_mm256_unpacklo_ps(r[2], r[3]), _mm256_unpackhi_ps(r[2], r[3]));
    let (u4, u5) = (_mm256_unpacklo_ps(r[4], r[5]), _mm256_unpackhi_ps(r[4], r[5]));
    let (u6, u7) = (_mm256_unpacklo_ps(r[6], r[7]), _mm256_unpackhi_ps(r[6], r[7]));
    let q0 = _mm256_shuffle_ps::<0x44>(u0, u2);
    let q1 = _mm256_shuffle_ps::<0xEE>(u0, u2);
    let q2 = _mm256_shuffle_ps::<0x44>(u1, u3);
    let q3 = _mm256_shuffle_ps::<0xEE>(u1, u3);
    let q4 = _mm256_shuffle_ps::<0x44>(u4, u6);
    let q5 = _mm256_shuffle_ps::<0xEE>(u4, u6);
    let q6 = _mm256_shuffle_ps::<0x44>(u5, u7);
    let q7 = _mm256_shuffle_ps::<0xEE>(u5, u7);
    [
        _mm256_permute2f128_ps::<0x20>(q0, q4),
        _mm256_permute2f128_ps::<0x20>(q1, q5),
        _mm256_permute2f128_ps::<0x20>(q2, q6),
        _mm256_permute2f128_ps::<0x20>(q3, q7),
        _mm256_permute2f128_ps::<0x31>(q0, q4),
        _mm256_permute2f128_ps::<0x31>(q1, q5),
        _mm256_permute2f128_ps::<0x31>(q2, q6),
        _mm256_permute2f128_ps::<0x31>(q3, q7),
    ]
}

/// Sixteen source rows of eight (stride `ss`) to eight destination rows
/// of sixteen (stride `ds`): `d[r*ds + c] = s[c*ss + r]`, each
/// destination row written as one 64-byte piece (streamed when `NT`,
/// which needs `d` and `ds * 4` 64-byte aligned).
#[target_feature(enable = "avx")]
#[inline]
pub(crate) unsafe fn t8x16<const NT: bool>(d: *mut u32, ds: usize, s: *const u32, ss: usize) {
    // SAFETY: the caller vouched for 8 elements of each of the 16
    // source rows and 16 of each of the 8 destination rows.
    unsafe {
        let mut lo = [_mm256_setzero_ps(); 8];
        let mut hi = [_mm256_setzero_ps(); 8];
        for k in 0..8 {
            lo[k] = _mm256_loadu_ps(s.add(k * ss) as *const f32);
            hi[k] = _mm256_loadu_ps(s.add((k + 8) * ss) as *const f32);
        }
        let (lo, hi) = (t8(lo), t8(hi));
        for r in 0..8 {
            let row = d.add(r * ds) as *mut f32;
            if NT {
                _mm256_stream_ps(row, lo[r]);
                _mm256_stream_ps(row.add(8), hi[r]);
            } else {
                _mm256_storeu_ps(row, lo[r]);
                _mm256_storeu_ps(row.add(8), hi[r]);
            }
        }
    }
}

/// Eight source rows of eight to eight destination rows of eight
/// (streamed when `NT`, which needs `d` 32-byte aligned).
#[target_feature(enable = "avx")]
pub(crate) unsafe fn t8x8<const NT: bool>(d: *mut u32, ds: usize, s: *const u32, ss: usize) {
    // SAFETY: the caller vouched for 8 elements of each of the 8 rows.
    unsafe {
        let mut r = [_mm256_setzero_ps(); 8];
        for (k, v) in r.iter_mut().enumerate() {
            *v = _mm256_loadu_ps(s.add(k * ss) as *const f32);
        }
        for (k, v) in t8(r).into_iter().enumerate() {
            if NT {
                _mm256_stream_ps(d.add(k * ds) as *mut f32, v);
            } else {
                _mm256_storeu_ps(d.add(k * ds) as *mut f32, v);
            }
        }
    }
}

/// The 4x4 form of [`t8`] with SSE2 (no AVX).
pub(crate) unsafe fn t4x4(d: *mut u32, ds: usize, s: *const u32, ss: usize) {
    // SAFETY: the caller vouched for 4 elements from each of the 4 rows.
    unsafe {
        macro_rules! l {
            ($k:expr) => {
                _mm_loadu_ps(s.add($k * ss) as *const f32)
            };
        }
        let (r0, r1, r2, r3) = (l!(0), l!(1), l!(2), l!(3));
        let (u0, u1) = (_mm_unpacklo_ps(r0, r1), _mm_unpackhi_ps(r0, r1));
        let (u2, u3) = (_mm_unpacklo_ps(r2, r3), _mm_unpackhi_ps(r2, r3));
        macro_rules! st {
            ($k:expr, $v:expr) => {
                _mm_storeu_ps(d.add($k * ds) as *mut f32, $v)
            };
        }
        st!(0, _mm_movelh_ps(u0, u2));
        st!(1, _mm_movehl_ps(u2, u0));
        st!(2, _mm_movelh_ps(u1, u3));
        st!(3, _mm_movehl_ps(u3, u1));
    }
}
