//! Property tests of arbitrary OpenVINO blockings: dims split into blocks
//! in any order, blocked dims padded past the data, offsets to the data,
//! offset padding and strides with gaps (everything
//! `BlockingDesc::with_strides` accepts), in every dtype. Each blob is
//! written by `reorder_from` and read by `copy` and by another blocking's
//! `reorder_from` (through a planar copy where the two split a dim into
//! blocks of which neither divides the other, which is `Unsupported`);
//! the oracle is the desc's own element formula
//! (`TensorDesc::offset_index`) applied to the blob's raw memory, which
//! also shows that nothing but the elements was written.

use blobcore::{Blob, BlockingDesc, DType, Engine, TensorDesc};
use proptest::prelude::*;

/// What a blocking is drawn from: per logical dim, a block size when it
/// is split; a permutation key per blocked dim; per blocked dim, padding
/// past the data, an offset to the data and a gap added to its stride;
/// the offset padding.
#[derive(Debug, Clone)]
struct Draw {
    split: Vec<Option<usize>>,
    keys: Vec<u32>,
    pads: Vec<usize>,
    offsets: Vec<usize>,
    gaps: Vec<usize>,
    offset_padding: usize,
}

fn draw(rank: usize) -> impl Strategy<Value = Draw> {
    let slots = 2 * rank;
    (
        prop::collection::vec(prop::option::weighted(0.5, 1usize..5), rank),
        prop::collection::vec(any::<u32>(), slots),
        prop::collection::vec(prop_oneof![4 => Just(0usize), 1 => 1usize..3], slots),
        prop::collection::vec(prop_oneof![4 => Just(0usize), 1 => Just(1usize)], slots),
        prop::collection::vec(prop_oneof![3 => Just(0usize), 1 => 1usize..3], slots),
        0usize..4,
    )
        .prop_map(|(split, keys, pads, offsets, gaps, offset_padding)| Draw { split, keys, pads, offsets, gaps, offset_padding })
}

/// The desc a draw gives `dims`: split dims take two blocked dims (the one
/// placed first holds the blocks, the later one the block), in the order
/// the keys sort them.
fn desc(dtype: DType, dims: &[usize], d: &Draw) -> TensorDesc {
    let mut slots: Vec<usize> = Vec::new();
    for (k, s) in d.split.iter().enumerate() {
        slots.push(k);
        if s.is_some() {
            slots.push(k);
        }
    }
    let mut order: Vec<(u32, usize, usize)> = slots.iter().enumerate().map(|(i, &k)| (d.keys[i], i, k)).collect();
    order.sort();
    let order: Vec<usize> = order.into_iter().map(|(_, _, k)| k).collect();
    let n = order.len();
    let mut blk = vec![0usize; n];
    let mut seen = vec![false; dims.len()];
    for (i, &k) in order.iter().enumerate() {
        blk[i] = match d.split[k] {
            None => dims[k],
            // The dim's first blocked dim holds ceil(d / b) blocks; its second, blocks of b.
            Some(b) if !seen[k] => dims[k].div_ceil(b),
            Some(b) => b.min(dims[k].max(1)),
        };
        seen[k] = true;
        if dims[k] > 0 {
            blk[i] += d.pads[i];
        }
    }
    let mut strides = vec![0usize; n];
    for i in (0..n).rev() {
        strides[i] = if i + 1 == n { 1 } else { strides[i + 1] * blk[i + 1].max(1) } + d.gaps[i];
    }
    let b = BlockingDesc::with_strides(&blk, &order, d.offset_padding, &d.offsets[..n], &strides).expect("an at-least-dense blocking");
    TensorDesc::with_blocking(dtype, dims, b).expect("the blocked dims cover the dims")
}

/// Every logical index of `dims`, row-major.
fn indices(dims: &[usize]) -> Vec<Vec<usize>> {
    let mut all = vec![vec![]];
    for &d in dims {
        all = all.into_iter().flat_map(|p: Vec<usize>| (0..d).map(move |i| [p.clone(), vec![i]].concat())).collect();
    }
    all
}

fn bytes_of(b: &Blob) -> Vec<u8> {
    let mut v = vec![0u8; b.byte_size()];
    b.copy_to_bytes(&mut v).expect("dense");
    v
}

/// Checks that `b` (laid out as `d`) holds `want` (dense bytes) at the
/// places `d` gives, and zeros everywhere else in its raw memory.
fn holds(b: &Blob, d: &TensorDesc, want: &[u8]) -> Result<(), TestCaseError> {
    let es = d.dtype().size();
    let raw = bytes_of(&b.raw().expect("a blob of its own layout owns its span"));
    prop_assert_eq!(raw.len(), d.span().unwrap() * es);
    let mut touched = vec![false; raw.len()];
    for (k, idx) in indices(d.dims()).iter().enumerate() {
        let at = d.offset_index(idx).unwrap() * es;
        prop_assert_eq!(&raw[at..at + es], &want[k * es..(k + 1) * es], "element {:?} of {:?}", idx, d);
        touched[at..at + es].iter_mut().for_each(|t| *t = true);
    }
    prop_assert!(raw.iter().zip(&touched).all(|(&x, &t)| t || x == 0), "bytes outside the elements were written: {:?}", d);
    prop_assert_eq!(bytes_of(&b.copy().unwrap()), want);
    Ok(())
}

/// Rank, dims (zero dims included), dtype and two draws.
fn case() -> impl Strategy<Value = (Vec<usize>, DType, Draw, Draw)> {
    (1usize..5).prop_flat_map(|rank| {
        (
            prop::collection::vec(prop_oneof![1 => Just(0usize), 12 => 1usize..6], rank),
            prop::sample::select(DType::ALL.to_vec()),
            draw(rank),
            draw(rank),
        )
    })
}

/// As [`case`], with blobs of up to 200,000 elements: large enough for
/// the cache-blocked and multi-threaded paths.
fn large_case() -> impl Strategy<Value = (Vec<usize>, DType, Draw, Draw)> {
    (3usize..5).prop_flat_map(|rank| {
        (
            prop::collection::vec(8usize..22, rank),
            prop::sample::select(vec![DType::F32, DType::U8, DType::F16, DType::F64]),
            draw(rank),
            draw(rank),
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, rng_seed: proptest::test_runner::RngSeed::Fixed(59), ..ProptestConfig::default() })]
    /// `reorder_from` writes each element where the desc says and nothing
    /// else; `copy` reads them back; a second blocking's `reorder_from`
    /// of the first gives the same elements at its own places.
    #[test]
    fn any_blocking_holds_each_element_at_its_place((dims, dtype, a, b) in case()) {
        check(&dims, dtype, &a, &b)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, rng_seed: proptest::test_runner::RngSeed::Fixed(60), ..ProptestConfig::default() })]
    /// The same on blobs large enough for the tiled, parallel paths.
    #[test]
    fn any_large_blocking_holds_each_element_at_its_place((dims, dtype, a, b) in large_case()) {
        check(&dims, dtype, &a, &b)?;
    }
}

fn check(dims: &[usize], dtype: DType, a: &Draw, b: &Draw) -> Result<(), TestCaseError> {
    {
        let e = Engine::cpu();
        let es = dtype.size();
        let count: usize = dims.iter().product();
        // Bytes made from each element's position (0 or 1 for bool).
        let want: Vec<u8> = (0..count)
            .flat_map(|k| (0..es).map(move |j| if dtype == DType::Bool { (k % 2) as u8 } else { (k * 29 + j * 11 + 1) as u8 }))
            .collect();
        let src = Blob::from_bytes(&e, dtype, dims, &want).unwrap();
        let (da, db) = (desc(dtype, dims, a), desc(dtype, dims, b));
        let x = Blob::with_desc(&e, &da).unwrap();
        x.reorder_from(&src).unwrap();
        holds(&x, &da, &want)?;
        let y = Blob::with_desc(&e, &db).unwrap();
        match y.reorder_from(&x) {
            Ok(()) => {}
            // Blocks of sizes where neither divides the other: refused,
            // unchanged, and done through a planar layout as the error says.
            Err(err) => {
                prop_assert_eq!(err.code(), 13, "{}", err);
                prop_assert!(err.to_string().contains("neither divides the other"), "{}", err);
                prop_assert!(bytes_of(&y.raw().unwrap()).iter().all(|&v| v == 0));
                y.reorder_from(&x.copy().unwrap()).unwrap();
            }
        }
        holds(&y, &db, &want)?;
    }
    Ok(())
}
