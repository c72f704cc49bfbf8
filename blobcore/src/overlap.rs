//! Whether two views touch the same memory, decided from the bytes they
//! reach — whoever owns the memory.
//!
//! The same bytes can arrive through different doors: a view of a blob, a
//! blob wrapping that blob's memory through NumPy, DLPack, a pickle buffer
//! or C's `blob_wrap`. Each door is its own [`Storage`], so storage
//! identity says nothing; host addresses do. A view's [`Footprint`] is the
//! set of byte ranges `start + sum(x_k * stride_k) + [0, elem)` for `x_k`
//! in `0..=max_k`, positioned by the storage's host address (or, before
//! the storage has host memory, by the storage itself: nothing else can
//! reach memory that does not exist yet).
//!
//! Two checks, as NumPy's `may_share_memory` and `shares_memory`:
//! [`Footprint::may_overlap`] compares the bounds (constant time), and
//! [`Footprint::overlap`] solves the bounded linear Diophantine problem
//! exactly, with a work limit past which it answers "unknown".

use crate::blob::{Blob, State};
use smallvec::SmallVec;
use std::sync::Arc;

/// Where a footprint's offsets count from.
#[derive(Clone)]
enum Base {
    /// The storage's host memory starts at this canonical address
    /// ([`crate::file_alias::canonical`]: a file's offset for maps of it).
    Addr(u128),
    /// The storage has no host memory yet.
    Unallocated,
}

/// The bytes a view reaches (see the module docs).
#[derive(Clone)]
pub(crate) struct Footprint {
    /// The storage's identity (its address; compared, never dereferenced:
    /// footprints live only while the caller holds the blobs).
    storage: usize,
    base: Base,
    /// Byte offset of the first element from the storage's start.
    start: u128,
    /// (stride in bytes, largest index) per axis that moves: axes of one
    /// element and zero strides are left out.
    terms: SmallVec<[(u128, u128); 8]>,
    /// Element size in bytes.
    elem: u128,
    /// No element at all (a zero dim).
    empty: bool,
    /// Which byte each logical element is: (dim, stride in bytes) per
    /// logical axis for planar layouts; for blocked ones the blocking
    /// itself (blocked dims, order, strides). Two footprints with equal
    /// starts and equal maps put every logical element at the same place.
    map: SmallVec<[(u128, u128); 8]>,
}

/// What an exact check found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Overlap {
    /// The views share no byte.
    No,
    /// They share at least one byte.
    Yes,
    /// The work limit was reached first.
    Unknown,
}

impl Footprint {
    /// The footprint of a blob in state `st`.
    pub(crate) fn of(blob: &Blob, st: &State) -> Footprint {
        let es = blob.dtype().size() as u128;
        let mut terms: SmallVec<[(u128, u128); 8]> = SmallVec::new();
        let mut map: SmallVec<[(u128, u128); 8]> = SmallVec::new();
        let mut start = st.offset as u128 * es;
        let empty = st.shape.count() == 0;
        match st.desc() {
            None => {
                let n = st.shape.count() as u128;
                if n > 1 {
                    terms.push((es, n - 1));
                }
                map.push((n, 1));
            }
            Some(d) => {
                match d.planar_strides() {
                    Some((s, _)) => map.extend(d.dims().iter().zip(&s).map(|(&n, &s)| (n as u128, if n > 1 { s as i128 as u128 } else { 0 }))),
                    None => {
                        let b = d.blocking();
                        map.extend(b.blk_dims().iter().zip(b.strides()).map(|(&n, &s)| (n as u128, s as i128 as u128)));
                        map.extend(b.order().iter().map(|&o| (o as u128, u128::MAX)));
                    }
                }
                // Every blocked dim as an axis: a superset of the elements
                // of blocked layouts whose last block is partial (the
                // padding), exact for planar and strided views. A negative
                // stride walks down from element 0: the footprint starts at
                // the lowest element and steps up.
                let b = d.blocking();
                let mut first = d.origin() as i128;
                for (&n, &s) in b.blk_dims().iter().zip(b.strides()) {
                    if n > 1 && s != 0 {
                        terms.push((s.unsigned_abs() as u128 * es, n as u128 - 1));
                        if s < 0 {
                            first -= (n as i128 - 1) * s.unsigned_abs() as i128;
                        }
                    }
                }
                start += first.max(0) as u128 * es;
            }
        }
        let base = match st.storage.host_addr() {
            Some(a) => Base::Addr(crate::file_alias::canonical(a)),
            None => Base::Unallocated,
        };
        Footprint { storage: Arc::as_ptr(&st.storage) as usize, base, start, terms, elem: es, empty, map }
    }

    /// A footprint of foreign memory: elements of `elem` bytes at
    /// `addr + sum(i_k * strides_k) * elem` for `i_k < dims_k` (strides in
    /// elements, negative allowed).
    pub(crate) fn foreign(addr: usize, elem: usize, dims: &[usize], strides: &[isize]) -> Footprint {
        let empty = dims.contains(&0);
        let mut terms = SmallVec::new();
        let mut low: i128 = 0;
        for (&n, &s) in dims.iter().zip(strides) {
            if n > 1 && s != 0 {
                let step = s.unsigned_abs() as u128 * elem as u128;
                terms.push((step, n as u128 - 1));
                if s < 0 {
                    low -= (step * (n as u128 - 1)) as i128;
                }
            }
        }
        // No storage of ours (identity 0): only the address is compared.
        let start = crate::file_alias::canonical((addr as i128 + low).max(0) as usize);
        let map = dims.iter().zip(strides).map(|(&n, &s)| (n as u128, s as u128)).collect();
        Footprint { storage: 0, base: Base::Addr(0), start, terms, elem: elem as u128, empty, map }
    }

    /// The two footprints' starts on one axis, or None when they cannot
    /// be compared (different storages, one without host memory: nothing
    /// can alias memory that does not exist).
    fn starts(&self, other: &Footprint) -> Option<(u128, u128)> {
        if self.storage != 0 && self.storage == other.storage {
            return Some((self.start, other.start));
        }
        match (&self.base, &other.base) {
            (Base::Addr(a), Base::Addr(b)) => Some((*a + self.start, *b + other.start)),
            _ => None,
        }
    }

    /// True when both footprints are of the very same storage.
    pub(crate) fn same_storage(&self, other: &Footprint) -> bool {
        self.storage != 0 && self.storage == other.storage
    }

    fn extent(&self) -> u128 {
        self.terms.iter().map(|&(s, n)| s * n).sum::<u128>() + self.elem
    }

    /// NumPy's `may_share_memory`: the bounds of the two footprints meet.
    pub(crate) fn may_overlap(&self, other: &Footprint) -> bool {
        if self.empty || other.empty {
            return false;
        }
        match self.starts(other) {
            None => false,
            Some((a, b)) => a < b + other.extent() && b < a + self.extent(),
        }
    }

    /// True when both reach exactly the same bytes in the same order, so
    /// that an element-wise operation between them may run in place.
    pub(crate) fn same_elements(&self, other: &Footprint) -> bool {
        match self.starts(other) {
            Some((a, b)) => a == b && self.elem == other.elem && self.map == other.map && self.empty == other.empty,
            None => false,
        }
    }

    /// NumPy's `shares_memory`: whether some byte is reached by both,
    /// solved exactly within `max_work` search steps.
    pub(crate) fn overlap(&self, other: &Footprint, max_work: u64) -> Overlap {
        if !self.may_overlap(other) {
            return Overlap::No;
        }
        let Some((a0, b0)) = self.starts(other) else { return Overlap::No };
        // An element of `self` at p = a0 + sum(a_i x_i) and one of `other`
        // at q = b0 + sum(b_j y_j) share a byte iff
        // -(ea - 1) <= p - q <= eb - 1. With y'_j = max_j - y_j and
        // z = (eb - 1) - (p - q) in [0, ea + eb - 2]:
        // sum(a_i x_i) + sum(b_j y'_j) + z = b0 - a0 + sum(b_j max_j) + eb - 1.
        let target = b0 as i128 - a0 as i128 + other.terms.iter().map(|&(s, n)| (s * n) as i128).sum::<i128>() + other.elem as i128 - 1;
        if target < 0 {
            return Overlap::No;
        }
        let mut terms: Vec<(u128, u128)> = self.terms.iter().chain(other.terms.iter()).copied().collect();
        let unit = self.elem + other.elem - 2;
        if unit > 0 {
            terms.push((1, unit));
        }
        match solve(&mut terms, target as u128, max_work) {
            Some(true) => Overlap::Yes,
            Some(false) => Overlap::No,
            None => Overlap::Unknown,
        }
    }
}

fn gcd(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// The inverse of `a` modulo `m` (a and m coprime, m > 1).
fn inverse(a: u128, m: u128) -> u128 {
    let (mut r0, mut r1) = (m as i128, (a % m) as i128);
    let (mut t0, mut t1) = (0i128, 1i128);
    while r1 != 0 {
        let q = r0 / r1;
        (r0, r1) = (r1, r0 - q * r1);
        (t0, t1) = (t1, t0 - q * t1);
    }
    t0.rem_euclid(m as i128) as u128
}

/// Whether `sum(c_k x_k) = target` has a solution with `0 <= x_k <= u_k`
/// (every `c_k > 0`); None when more than `max_work` steps were needed.
/// Depth-first over the terms by decreasing coefficient: each level's
/// `x_k` is limited to the values that the remaining terms can complete
/// (their bounded sum) and to the residue class their gcd allows.
fn solve(terms: &mut [(u128, u128)], target: u128, max_work: u64) -> Option<bool> {
    terms.sort_unstable_by_key(|t| std::cmp::Reverse(t.0));
    let n = terms.len();
    // rest[k]: the largest sum of the terms after k; g[k]: their gcd.
    let mut rest = vec![0u128; n + 1];
    let mut g = vec![0u128; n + 1];
    for k in (0..n).rev() {
        rest[k] = rest[k + 1] + terms[k].0 * terms[k].1;
        g[k] = gcd(g[k + 1], terms[k].0);
    }
    let mut work = 0u64;
    fn go(k: usize, t: u128, terms: &[(u128, u128)], rest: &[u128], g: &[u128], work: &mut u64, max: u64) -> Option<bool> {
        *work += 1;
        if *work > max {
            return None;
        }
        if k == terms.len() {
            return Some(t == 0);
        }
        if t > rest[k] || (g[k] > 0 && !t.is_multiple_of(g[k])) {
            return Some(false);
        }
        let (c, u) = terms[k];
        let lo = t.saturating_sub(rest[k + 1]).div_ceil(c);
        let hi = (t / c).min(u);
        if lo > hi {
            return Some(false);
        }
        // c x = t (mod gr), gr the gcd of the later terms.
        let gr = g[k + 1];
        let (first, step) = if gr > 1 {
            let h = gcd(c, gr);
            if !t.is_multiple_of(h) {
                return Some(false);
            }
            let m = gr / h;
            let x0 = if m == 1 { 0 } else { ((t / h) % m) * inverse((c / h) % m, m) % m };
            // The first x >= lo with x = x0 (mod m).
            let first = lo + (x0 + m - lo % m) % m;
            (first, m)
        } else {
            (lo, 1)
        };
        let mut x = first;
        while x <= hi {
            if go(k + 1, t - c * x, terms, rest, g, work, max)? {
                return Some(true);
            }
            x += step;
        }
        Some(false)
    }
    go(0, target, terms, &rest, &g, &mut work, max_work)
}

impl Blob {
    /// The bytes this blob's elements reach (see [`Footprint`]).
    pub(crate) fn footprint(&self) -> Footprint {
        Footprint::of(self, &self.state())
    }

    /// `numpy.shares_memory`: true when some byte of memory is an element
    /// of both blobs, however each reaches it (a view, or memory wrapped
    /// through NumPy, DLPack, a pickle buffer or `blob_wrap`). Exact for
    /// strided views (`b[1]` and `b[:, 0]` share one element); for
    /// blocked layouts the padding of a partial last block counts as the
    /// blob's.
    pub fn shares_memory(&self, other: &Blob) -> bool {
        self.footprint().overlap(&other.footprint(), u64::MAX) == Overlap::Yes
    }

    /// `numpy.may_share_memory`: true when the two blobs' memory bounds
    /// meet (a quick check that can say true for interleaved views that
    /// share nothing; [`Blob::shares_memory`] is exact).
    pub fn may_share_memory(&self, other: &Blob) -> bool {
        self.footprint().may_overlap(&other.footprint())
    }
}

/// Search steps an operation spends on deciding whether its source and
/// destination overlap before it assumes they do (and copies the source).
pub(crate) const OP_WORK: u64 = 4096;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::Storage;
    use proptest::prelude::*;

    /// The oracle: every byte each footprint reaches, enumerated.
    fn bytes(start: u128, terms: &[(u128, u128)], elem: u128) -> std::collections::BTreeSet<u128> {
        let mut out = std::collections::BTreeSet::new();
        let mut idx = vec![0u128; terms.len()];
        loop {
            let p = start + terms.iter().zip(&idx).map(|(&(s, _), &i)| s * i).sum::<u128>();
            out.extend(p..p + elem);
            let mut k = 0;
            loop {
                if k == terms.len() {
                    return out;
                }
                idx[k] += 1;
                if idx[k] <= terms[k].1 {
                    break;
                }
                idx[k] = 0;
                k += 1;
            }
        }
    }

    fn fp(start: u128, terms: &[(u128, u128)], elem: u128, storage: &Arc<Storage>) -> Footprint {
        Footprint { storage: Arc::as_ptr(storage) as usize, base: Base::Unallocated, start, terms: terms.iter().copied().collect(), elem, empty: false, map: SmallVec::new() }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 3000, rng_seed: proptest::test_runner::RngSeed::Fixed(26), ..ProptestConfig::default() })]
        #[test]
        fn exact_overlap_matches_enumeration(
            sa in 0u128..64, sb in 0u128..64,
            ta in proptest::collection::vec((1u128..24, 1u128..5), 0..4),
            tb in proptest::collection::vec((1u128..24, 1u128..5), 0..4),
            ea in prop::sample::select(vec![1u128, 2, 4, 8]),
            eb in prop::sample::select(vec![1u128, 2, 4, 8]),
        ) {
            let s = Storage::lazy(0);
            let (a, b) = (fp(sa, &ta, ea, &s), fp(sb, &tb, eb, &s));
            let want = !bytes(sa, &ta, ea).is_disjoint(&bytes(sb, &tb, eb));
            prop_assert_eq!(a.overlap(&b, u64::MAX) == Overlap::Yes, want);
            prop_assert_eq!(b.overlap(&a, u64::MAX) == Overlap::Yes, want);
            if want {
                prop_assert!(a.may_overlap(&b));
            }
        }
    }

    #[test]
    fn different_storages_compare_by_address() {
        let (s1, s2) = (Storage::lazy(0), Storage::lazy(0));
        let mut a = fp(0, &[(4, 9)], 4, &s1);
        let mut b = fp(0, &[(4, 9)], 4, &s2);
        assert!(!a.may_overlap(&b), "unallocated storages alias nothing");
        a.base = Base::Addr(1000);
        b.base = Base::Addr(1036);
        assert!(a.may_overlap(&b) && a.overlap(&b, 100) == Overlap::Yes);
        b.base = Base::Addr(1040);
        assert!(!a.may_overlap(&b));
        b.base = Base::Addr(1002);
        b.terms[0] = (8, 3);
        assert_eq!(a.overlap(&b, 100), Overlap::Yes, "misaligned elements share bytes");
    }

    #[test]
    fn work_limit_answers_unknown() {
        let s = Storage::lazy(0);
        // Interleaved strides with a large search space and no solution.
        let a = fp(0, &[(1_000_003, 1000), (999_983, 1000)], 1, &s);
        let b = fp(1, &[(2_000_006, 1000), (1_999_966, 1000)], 1, &s);
        assert_eq!(a.overlap(&b, 10), Overlap::Unknown);
    }
}
