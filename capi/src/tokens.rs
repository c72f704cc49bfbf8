//! Handle tokens: the values C callers hold as `Blob *` and `BlobEngine *`.
//!
//! A token is never dereferenced, only looked up, so it need not be an
//! address; it must be unique for the life of the process (a freed handle
//! never names a later blob) and hard to hit by accident: a garbage value
//! in a C program (an uninitialised variable, a small integer, a handle
//! from another run, a pointer off by 16) must not name a live blob.
//!
//! Token `n` is `P(n) << 4`, where `n` counts issues from 1 and `P` is a
//! permutation of the 60-bit integers (28-bit on 32-bit targets) keyed by
//! OS randomness once per process: a four-round Feistel network whose round
//! function is SipHash with a random key (`std`'s `RandomState`). Because
//! `P` is a bijection, distinct counts give distinct tokens; because it is
//! keyed, the tokens of a process are spread over the whole space, so any
//! one forged value is live with probability about (live handles) / 2^60.
//! Tokens are 16-aligned and never below [`MIN_TOKEN`] (counts whose token
//! would be are skipped), so they look like heap pointers.

use blobcore::first_use::FirstUse;
use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicU64, Ordering};

/// Low bits that are always zero, so tokens are aligned like `malloc`'s pointers.
const ALIGN_BITS: u32 = 4;
/// Bits of the permuted count: 60 on 64-bit targets.
const BITS: u32 = usize::BITS - ALIGN_BITS;
const HALF: u32 = BITS / 2;
const HALF_MASK: u64 = (1 << HALF) - 1;
/// No token lies in the first 64 KiB (NULL's neighbourhood, small integers).
const MIN_TOKEN: usize = 1 << 16;

static COUNT: AtomicU64 = AtomicU64::new(1);
/// The permutation's key, drawn on first use (never waited for: a fork
/// while another thread draws it leaves the child drawing its own).
static KEY: FirstUse<RandomState> = FirstUse::new();

/// The keyed permutation of `BITS`-bit integers.
fn permute(key: &RandomState, n: u64) -> u64 {
    let (mut left, mut right) = ((n >> HALF) & HALF_MASK, n & HALF_MASK);
    for round in 0u8..4 {
        let f = key.hash_one((round, right)) & HALF_MASK;
        (left, right) = (right, left ^ f);
    }
    (left << HALF) | right
}

/// A fresh token: unique, 16-aligned, at least [`MIN_TOKEN`].
///
/// The count space has 2^60 values (2^28 on 32-bit targets); a process
/// would need centuries of issuing at a billion handles a second to use it
/// up, after which counts (and so tokens) would repeat.
pub fn issue() -> usize {
    loop {
        let n = COUNT.fetch_add(1, Ordering::Relaxed) & ((1 << BITS) - 1);
        // `BITS + ALIGN_BITS` is the pointer width, so the value fits a usize.
        let t = (permute(KEY.get_or_make(RandomState::new), n) as usize) << ALIGN_BITS;
        if t >= MIN_TOKEN {
            return t;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn permutation_is_a_bijection_on_a_sample() {
        let key = RandomState::new();
        let outs: HashSet<u64> = (0..200_000u64).map(|n| permute(&key, n)).collect();
        assert_eq!(outs.len(), 200_000);
        assert!(outs.iter().all(|&v| v < 1 << BITS));
    }

    #[test]
    fn tokens_are_spread_and_never_match_forged_patterns() {
        const N: usize = 1_000_000;
        let tokens: Vec<usize> = (0..N).map(|_| issue()).collect();
        let set: HashSet<usize> = tokens.iter().copied().collect();
        assert_eq!(set.len(), N, "tokens repeat");
        assert!(tokens.iter().all(|&t| t >= MIN_TOKEN && t % 16 == 0), "a token is misaligned or in the first 64 KiB");
        // Small integers and the old counter's values (16 * i) are never issued.
        for v in (0..(1usize << 20)).step_by(16) {
            assert!(!set.contains(&v), "{v:#x} was issued");
        }
        // Neighbours of issued tokens (± 16 * k), the off-by-some pointers of
        // C programs, are never issued.
        for &t in &tokens {
            for k in 1..=16usize {
                assert!(!set.contains(&t.wrapping_add(16 * k)) && !set.contains(&t.wrapping_sub(16 * k)));
            }
        }
        // Spread: the top bits of a million tokens take most of their values.
        let top: HashSet<usize> = tokens.iter().map(|t| t >> (usize::BITS - 8)).collect();
        assert!(top.len() > 250, "tokens cluster: {} of 256 top bytes", top.len());
    }
}
