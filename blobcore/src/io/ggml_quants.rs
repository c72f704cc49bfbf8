//! Dequantization of ggml's block-quantized types to f32, equal to the bit
//! to gguf-py's `gguf.quants.dequantize` (which follows ggml-quants.c):
//! every product and difference is one f32 operation in the same order
//! (no fused multiply-add), and half-precision scales widen exactly.
//!
//! Block layouts (facts from gguf-py and ggml; `d`, `m`, `dmin` are f16):
//! - Q4_0 (32 elements, 18 bytes): `d`, 16 bytes of nibbles; element `i`
//!   of the first 16 is the low nibble of byte `i`, the next 16 the high
//!   nibbles; value `d * (q - 8)`.
//! - Q4_1 (32, 20): `d`, `m`, nibbles as Q4_0; value `d * q + m`.
//! - Q5_0 (32, 22): `d`, a u32 of fifth bits (bit `i` for element `i`),
//!   nibbles as Q4_0; value `d * (q - 16)`.
//! - Q5_1 (32, 24): `d`, `m`, fifth bits, nibbles; value `d * q + m`.
//! - Q8_0 (32, 34): `d`, 32 i8; value `q * d`.
//! - Q2_K (256, 84): 16 scale bytes (low nibble scale, high nibble min),
//!   64 bytes of 2-bit values, `d`, `dmin`; value `d*sc * q - dmin*mn`.
//! - Q3_K (256, 110): 32 bytes of high-bit masks, 64 bytes of 2-bit
//!   values, 12 bytes of packed 6-bit scales, `d`; value `d*(sc-32) * q`
//!   with `q` in -4..=3.
//! - Q4_K (256, 144) and Q5_K (256, 176): `d`, `dmin`, 12 bytes of packed
//!   6-bit scales and mins for 8 groups of 32, (Q5_K: 32 bytes of fifth
//!   bits), 128 bytes of nibbles; value `d*sc * q - dmin*mn`.
//! - Q6_K (256, 210): 128 bytes of low nibbles, 64 of high 2-bit pairs, 16
//!   i8 scales, `d`; value `d*sc * (q - 32)`.

use crate::error::{err, Result};
use crate::io::gguf::GgmlType;
use half::f16;
use rayon::prelude::*;

/// The f16 at `b[0..2]`, widened (exactly).
fn h(b: &[u8]) -> f32 {
    f16::from_le_bytes([b[0], b[1]]).to_f32()
}

/// Nibble element `i` (0..32) of a 16-byte Q4/Q5 nibble array.
fn nibble(qs: &[u8], i: usize) -> u8 {
    if i < 16 {
        qs[i] & 0x0F
    } else {
        qs[i - 16] >> 4
    }
}

fn q4_0(b: &[u8], out: &mut [f32]) {
    let d = h(b);
    for (i, o) in out.iter_mut().enumerate() {
        *o = d * (nibble(&b[2..18], i) as i8 - 8) as f32;
    }
}

fn q4_1(b: &[u8], out: &mut [f32]) {
    let (d, m) = (h(b), h(&b[2..]));
    for (i, o) in out.iter_mut().enumerate() {
        *o = d * nibble(&b[4..20], i) as f32 + m;
    }
}

fn q5_0(b: &[u8], out: &mut [f32]) {
    let d = h(b);
    let qh = u32::from_le_bytes([b[2], b[3], b[4], b[5]]);
    for (i, o) in out.iter_mut().enumerate() {
        let q = nibble(&b[6..22], i) | ((((qh >> i) & 1) as u8) << 4);
        *o = d * (q as i8 - 16) as f32;
    }
}

fn q5_1(b: &[u8], out: &mut [f32]) {
    let (d, m) = (h(b), h(&b[2..]));
    let qh = u32::from_le_bytes([b[4], b[5], b[6], b[7]]);
    for (i, o) in out.iter_mut().enumerate() {
        let q = nibble(&b[8..24], i) | ((((qh >> i) & 1) as u8) << 4);
        *o = d * q as f32 + m;
    }
}

fn q8_0(b: &[u8], out: &mut [f32]) {
    let d = h(b);
    for (i, o) in out.iter_mut().enumerate() {
        *o = (b[2 + i] as i8) as f32 * d;
    }
}

/// The 2-bit value of element `e` (0..256) of a 64-byte K-quant array:
/// halves of 128 elements, each four shifts of the same 32 bytes.
fn crumb(qs: &[u8], e: usize) -> u8 {
    let (half, r) = (e / 128, e % 128);
    (qs[half * 32 + r % 32] >> (2 * (r / 32))) & 3
}

fn q2_k(b: &[u8], out: &mut [f32]) {
    let (scales, qs) = (&b[..16], &b[16..80]);
    let (d, dmin) = (h(&b[80..]), h(&b[82..]));
    for (e, o) in out.iter_mut().enumerate() {
        let s = scales[e / 16];
        let dl = d * (s & 0x0F) as f32;
        let ml = dmin * (s >> 4) as f32;
        *o = dl * crumb(qs, e) as f32 - ml;
    }
}

fn q3_k(b: &[u8], out: &mut [f32]) {
    let (hmask, qs, sc) = (&b[..32], &b[32..96], &b[96..108]);
    let d = h(&b[108..]);
    let mut scales = [0f32; 16];
    for (k, s) in scales.iter_mut().enumerate() {
        let low = if k < 8 { sc[k] & 0x0F } else { (sc[k - 8] >> 4) & 0x0F };
        let high = (sc[8 + k % 4] >> (2 * (k / 4))) & 3;
        *s = ((low | (high << 4)) as i8 - 32) as f32;
    }
    for (e, o) in out.iter_mut().enumerate() {
        let dl = d * scales[e / 16];
        let hbit = ((hmask[e % 32] >> (e / 32)) & 1) ^ 1;
        let q = crumb(qs, e) as i8 - (hbit << 2) as i8;
        *o = dl * q as f32;
    }
}

/// Q4_K/Q5_K's 8 scales and mins from their 12 packed bytes.
fn scale_min(s: &[u8]) -> ([u8; 8], [u8; 8]) {
    let (mut sc, mut mn) = ([0u8; 8], [0u8; 8]);
    for i in 0..4 {
        sc[i] = s[i] & 0x3F;
        sc[4 + i] = (s[8 + i] & 0x0F) | ((s[i] >> 2) & 0x30);
        mn[i] = s[4 + i] & 0x3F;
        mn[4 + i] = (s[8 + i] >> 4) | ((s[4 + i] >> 2) & 0x30);
    }
    (sc, mn)
}

/// The nibble of element `e` (0..256) of a 128-byte K-quant array: 4
/// chunks of 32 bytes, low nibbles then high.
fn k_nibble(qs: &[u8], e: usize) -> u8 {
    let (g, l) = (e / 32, e % 32);
    (qs[(g / 2) * 32 + l] >> (4 * (g % 2))) & 0x0F
}

fn q4_k(b: &[u8], out: &mut [f32]) {
    let (d, dmin) = (h(b), h(&b[2..]));
    let (sc, mn) = scale_min(&b[4..16]);
    let qs = &b[16..144];
    for (e, o) in out.iter_mut().enumerate() {
        let g = e / 32;
        *o = d * sc[g] as f32 * k_nibble(qs, e) as f32 - dmin * mn[g] as f32;
    }
}

fn q5_k(b: &[u8], out: &mut [f32]) {
    let (d, dmin) = (h(b), h(&b[2..]));
    let (sc, mn) = scale_min(&b[4..16]);
    let (qh, qs) = (&b[16..48], &b[48..176]);
    for (e, o) in out.iter_mut().enumerate() {
        let g = e / 32;
        let q = k_nibble(qs, e) | (((qh[e % 32] >> g) & 1) << 4);
        *o = d * sc[g] as f32 * q as f32 - dmin * mn[g] as f32;
    }
}

fn q6_k(b: &[u8], out: &mut [f32]) {
    let (ql, qh, scales) = (&b[..128], &b[128..192], &b[192..208]);
    let d = h(&b[208..]);
    for (e, o) in out.iter_mut().enumerate() {
        let (half, r) = (e / 128, e % 128);
        let low = (ql[half * 64 + r % 64] >> (4 * (r / 64))) & 0x0F;
        let high = (qh[half * 32 + r % 32] >> (2 * (r / 32))) & 3;
        let q = (low | (high << 4)) as i8 - 32;
        *o = d * (scales[e / 16] as i8) as f32 * q as f32;
    }
}

type Block = fn(&[u8], &mut [f32]);

/// The block decoder of `t`, or Unsupported naming it.
fn decoder(t: GgmlType) -> Result<Block> {
    Ok(match t.name {
        "Q4_0" => q4_0,
        "Q4_1" => q4_1,
        "Q5_0" => q5_0,
        "Q5_1" => q5_1,
        "Q8_0" => q8_0,
        "Q2_K" => q2_k,
        "Q3_K" => q3_k,
        "Q4_K" => q4_k,
        "Q5_K" => q5_k,
        "Q6_K" => q6_k,
        other => {
            return Err(err!(
                Unsupported,
                "gguf: dequantizing {other} is not supported (blobcore dequantizes Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 and Q2_K-Q6_K); load it with dequantize=false for its blocks"
            ))
        }
    })
}

/// Whether `t` can be dequantized.
pub fn can_dequantize(t: GgmlType) -> bool {
    decoder(t).is_ok()
}

/// Dequantizes `bytes` (whole blocks of `t`) into `out` (their elements),
/// on all cores when large.
pub fn dequantize(t: GgmlType, bytes: &[u8], out: &mut [f32]) -> Result<()> {
    let f = decoder(t)?;
    let (bs, ts) = (t.block as usize, t.type_size as usize);
    if !bytes.len().is_multiple_of(ts) || out.len() != bytes.len() / ts * bs {
        return Err(err!(InvalidArgument, "gguf: {} bytes of {} do not make the {} elements asked for", bytes.len(), t.name, out.len()));
    }
    // Tasks of about 64 KiB of output.
    let per = (16384 / bs).max(1);
    crate::engine::pool::install(|| {
        out.par_chunks_mut(per * bs).zip(bytes.par_chunks(per * ts)).for_each(|(o, b)| {
            for (ob, bb) in o.chunks_exact_mut(bs).zip(b.chunks_exact(ts)) {
                f(bb, ob);
            }
        })
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ty(name: &str) -> GgmlType {
        GgmlType::from_name(name).unwrap()
    }

    #[test]
    fn q8_0_and_q4_0_by_hand() {
        // d = 0.5; values -3, 0, 1, ...
        let mut b = vec![0u8; 34];
        b[..2].copy_from_slice(&f16::from_f32(0.5).to_le_bytes());
        for i in 0..32 {
            b[2 + i] = (i as i8 - 16) as u8;
        }
        let mut out = vec![0f32; 32];
        dequantize(ty("Q8_0"), &b, &mut out).unwrap();
        assert!(out.iter().enumerate().all(|(i, &v)| v == (i as f32 - 16.0) * 0.5));
        // Q4_0: low nibbles are elements 0..16, high nibbles 16..32.
        let mut b = vec![0u8; 18];
        b[..2].copy_from_slice(&f16::from_f32(2.0).to_le_bytes());
        b[2] = 0xF0; // element 0 = 0 - 8, element 16 = 15 - 8
        dequantize(ty("Q4_0"), &b, &mut out).unwrap();
        assert_eq!((out[0], out[16], out[1]), (-16.0, 14.0, -16.0));
    }

    #[test]
    fn wrong_sizes_and_types_are_errors() {
        let mut out = vec![0f32; 32];
        assert!(matches!(dequantize(ty("Q8_0"), &[0u8; 33], &mut out), Err(crate::Error::InvalidArgument(_))));
        assert!(matches!(dequantize(ty("Q8_0"), &[0u8; 68], &mut out), Err(crate::Error::InvalidArgument(_))));
        assert!(matches!(dequantize(ty("IQ4_NL"), &[0u8; 18], &mut out), Err(crate::Error::Unsupported(m)) if m.contains("IQ4_NL")));
        assert!(can_dequantize(ty("Q6_K")) && !can_dequantize(ty("TQ1_0")));
    }
}
