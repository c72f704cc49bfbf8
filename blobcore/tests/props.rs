//! Property tests: every operation against ndarray (an independent
//! implementation of the same semantics) or a naive loop, for every dtype,
//! on random shapes including zero dims; plus fixed large cases that take
//! the multi-threaded paths.

mod common;

use blobcore::{Arith, Blob, Bool, DType, Element, F8E4M3Fn, F8E5M2, F8E8M0Fnu};
use half::{bf16, f16};
use ndarray::{concatenate, ArrayD, Axis, IxDyn, Slice};
use proptest::prelude::*;

fn make<T: Element>(dims: &[usize], seed: u64) -> (Blob, ArrayD<T>) {
    let n: usize = dims.iter().product();
    // Small integers are exact in every dtype but float8 (bf16 holds
    // integers up to 256), which rounds them; float8_e8m0fnu holds
    // positive values only (0 and below are NaN, which equals nothing).
    let signed = !matches!(T::DTYPE, DType::U8 | DType::U16 | DType::U32 | DType::U64 | DType::F8E8M0Fnu);
    let vals: Vec<T> = (0..n as u64)
        .map(|i| {
            let v = ((i.wrapping_mul(2654435761).wrapping_add(seed * 97)) % 100) as f64;
            T::round_from_f64(if signed { v - 50.0 } else { v + 1.0 })
        })
        .collect();
    let a = ArrayD::from_shape_vec(IxDyn(dims), vals).unwrap();
    let b = Blob::from_array(a.clone()).unwrap();
    (b, a)
}

fn check<T: Element>(b: &Blob, want: &ArrayD<T>) {
    assert_eq!(b.dims(), want.shape());
    let got = b.to_array::<T>().unwrap();
    assert!(same(&got, want), "{:?}: {got:?} != {want:?}", T::DTYPE);
}

fn shape_strategy() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(0usize..5, 1..5)
}

macro_rules! for_each_arith_dtype {
    ($f:ident ( $($arg:expr),* )) => {{
        $f::<f32>($($arg),*);
        $f::<i32>($($arg),*);
        $f::<f64>($($arg),*);
        $f::<i64>($($arg),*);
        $f::<u8>($($arg),*);
        $f::<i8>($($arg),*);
        $f::<f16>($($arg),*);
        $f::<bf16>($($arg),*);
        $f::<i16>($($arg),*);
        $f::<u16>($($arg),*);
        $f::<u32>($($arg),*);
        $f::<u64>($($arg),*);
    }};
}

/// Every dtype: the arithmetic ones, bool and the three float8 types.
macro_rules! for_each_dtype {
    ($f:ident ( $($arg:expr),* )) => {{
        for_each_arith_dtype!($f($($arg),*));
        $f::<Bool>($($arg),*);
        $f::<F8E4M3Fn>($($arg),*);
        $f::<F8E5M2>($($arg),*);
        $f::<F8E8M0Fnu>($($arg),*);
    }};
}

/// The element's arithmetic where it has one (None for bool and float8,
/// whose blobs refuse arithmetic with a DType error).
trait MaybeArith: Element {
    fn scale_opt(x: Self, f: f64) -> Option<Self>;
    fn add_opt(a: Self, b: Self) -> Option<Self>;
}

macro_rules! maybe_arith {
    (yes: $($t:ty),*; no: $($u:ty),*) => {
        $(impl MaybeArith for $t {
            fn scale_opt(x: Self, f: f64) -> Option<Self> { Some(<$t as Arith>::scale(x, f)) }
            fn add_opt(a: Self, b: Self) -> Option<Self> { Some(<$t as Arith>::add(a, b)) }
        })*
        $(impl MaybeArith for $u {
            fn scale_opt(_: Self, _: f64) -> Option<Self> { None }
            fn add_opt(_: Self, _: Self) -> Option<Self> { None }
        })*
    };
}
maybe_arith!(yes: f32, i32, f64, i64, u8, i8, f16, bf16, i16, u16, u32, u64; no: Bool, F8E4M3Fn, F8E5M2, F8E8M0Fnu);

/// True when `x` and `y` hold the same values (bit patterns for floats,
/// so NaNs compare equal to themselves).
fn same<T: Element>(x: &ArrayD<T>, y: &ArrayD<T>) -> bool {
    x.shape() == y.shape() && x.iter().zip(y).all(|(p, q)| p == q || (p.to_f64().is_nan() && q.to_f64().is_nan()))
}

fn merge_split_case<T: Element>(dims: Vec<usize>, axis: usize, extra: Vec<usize>) {
    let axis = axis % dims.len();
    let mut parts = Vec::new();
    let mut arrays = Vec::new();
    for (i, &x) in extra.iter().enumerate() {
        let mut d = dims.clone();
        d[axis] = x;
        let (b, a) = make::<T>(&d, i as u64);
        parts.push(b);
        arrays.push(a);
    }
    let refs: Vec<&Blob> = parts.iter().collect();
    let views: Vec<_> = arrays.iter().map(|a| a.view()).collect();
    let want = concatenate(Axis(axis), &views).unwrap();
    let merged = Blob::merged(&refs, axis as isize).unwrap();
    check(&merged, &want);
    let back = merged.split_sizes(axis as isize, &extra).unwrap();
    for (b, a) in back.iter().zip(&arrays) {
        check(b, a);
    }
}

fn transpose_case<T: Element>(dims: Vec<usize>, d1: usize, d2: usize) {
    let (d1, d2) = (d1 % dims.len(), d2 % dims.len());
    let (b, a) = make::<T>(&dims, 3);
    let mut v = a.view();
    v.swap_axes(d1, d2);
    let want = v.as_standard_layout().into_owned();
    check(&b.transposed(d1 as isize, d2 as isize).unwrap(), &want);
    let dst = Blob::tensor(&common::engine(), T::DTYPE, want.shape()).unwrap();
    dst.transpose_from(&b, d1 as isize - dims.len() as isize, d2 as isize).unwrap();
    check(&dst, &want);
}

fn arith_case<T: Arith>(dims: Vec<usize>, value: i8, factor: i8) {
    let (a, x) = make::<T>(&dims, 1);
    let (b, y) = make::<T>(&dims, 2);
    a.add(&b).unwrap();
    let sum = ndarray::Zip::from(&x).and(&y).map_collect(|&p, &q| T::add(p, q));
    check(&a, &sum);
    a.scale(factor as f64).unwrap();
    let scaled = sum.mapv(|p| T::scale(p, factor as f64));
    check(&a, &scaled);
    let asum: f64 = scaled.iter().map(|v| v.to_f64().abs()).sum();
    let sumsq: f64 = scaled.iter().map(|v| v.to_f64() * v.to_f64()).sum();
    assert!((a.asum().unwrap() - asum).abs() <= 1e-12 * asum.max(1.0));
    assert!((a.sumsq().unwrap() - sumsq).abs() <= 1e-12 * sumsq.max(1.0));
    if fits(T::DTYPE, value as f64) {
        a.fill(value as f64).unwrap();
    } else {
        // Out of an unsigned dtype's range: refused, nothing changed; the
        // wrapped pattern goes in exactly through `fill_element`.
        assert_eq!(a.fill(value as f64).unwrap_err().code(), 6);
        check(&a, &scaled);
        a.fill_element(&blobcore::Scalar::of(T::round_from_f64(value as f64))).unwrap();
    }
    check(&a, &ArrayD::from_elem(IxDyn(&dims), T::round_from_f64(value as f64)));
    // update: data -= diff
    let d = a.diff().unwrap();
    d.copy_from(&b).unwrap();
    a.update().unwrap();
    let upd = ndarray::Zip::from(&ArrayD::from_elem(IxDyn(&dims), T::round_from_f64(value as f64)))
        .and(&y)
        .map_collect(|&p, &q| T::sub(p, q));
    check(&a, &upd);
    a.clear().unwrap();
    assert_eq!(a.asum().unwrap(), 0.0);
}

fn view_case<T: Element>(dims: Vec<usize>, size: usize, pos: usize, idx: Vec<usize>) {
    let (b, a) = make::<T>(&dims, 5);
    let d0 = dims[0];
    if d0 > 0 {
        let size = 1 + size % d0;
        let pos = pos % (d0 - size + 1);
        let w = b.window(size).unwrap();
        w.set_parent_pos(pos as i64).unwrap();
        assert_eq!(w.parent_pos().unwrap(), pos);
        let want = a.slice_axis(Axis(0), Slice::from(pos..pos + size)).to_owned();
        check(&w, &want);
        // Out-of-range positions fail and leave the window where it was.
        assert_eq!(w.set_parent_pos((d0 - size + 1) as i64).unwrap_err().code(), 6);
        assert_eq!(w.set_parent_pos(-1).unwrap_err().code(), 6);
        assert_eq!(w.parent_pos().unwrap(), pos);
        check(&w, &want);
    }
    let k = idx.len().min(dims.len());
    let index: Vec<usize> = idx[..k].iter().zip(&dims).map(|(&i, &d)| if d == 0 { 0 } else { i % d }).collect();
    if dims[..k].iter().all(|&d| d > 0) {
        let s = b.slice(&index).unwrap();
        let mut view = a.view();
        for &i in &index {
            view = view.index_axis_move(Axis(0), i);
        }
        check(&s, &view.to_owned());
    } else if k > 0 {
        assert_eq!(b.slice(&index).unwrap_err().code(), 6);
    }
}

fn reshape_case<T: Element>(dims: Vec<usize>, new_dims: Vec<usize>) {
    let (b, a) = make::<T>(&dims, 7);
    let old: Vec<T> = a.iter().copied().collect();
    let n_new: usize = new_dims.iter().product();
    let cap = b.capacity();
    // The diff follows the shape; both ranks are read without the lock.
    let diff = n_new.is_multiple_of(2).then(|| b.diff().unwrap());
    assert_eq!(b.rank(), dims.len());
    let g = b.generation();
    let _ = (b.dims(), b.to_vec::<T>().unwrap(), b.capacity());
    assert_eq!(b.generation(), g, "reads leave the generation alone");
    b.reshape(&new_dims).unwrap();
    assert_ne!(b.generation(), g, "a reshape moves the generation");
    assert_eq!(b.dims(), new_dims);
    assert_eq!((b.rank(), b.dims().len()), (new_dims.len(), new_dims.len()));
    if let Some(d) = &diff {
        assert_eq!((d.rank(), d.dims()), (new_dims.len(), new_dims.clone()));
    }
    // Reinterpreting as one flat axis (same count) moves the rank too.
    b.reinterpret(&[n_new]).unwrap();
    assert_eq!(b.rank(), 1);
    if let Some(d) = &diff {
        assert_eq!((d.rank(), d.dims()), (1, vec![n_new]));
    }
    b.reinterpret(&new_dims).unwrap();
    assert_eq!(b.rank(), new_dims.len());
    let got = b.to_vec::<T>().unwrap();
    if n_new <= cap {
        // Caffe: the memory and its contents are kept.
        assert_eq!(&got[..], &old[..n_new]);
        assert_eq!(b.capacity(), cap);
    } else {
        assert!(got.iter().all(|v| *v == T::default()));
        assert_eq!(b.capacity(), n_new);
    }
}

/// Another door to `b`'s memory: a blob wrapping it (as NumPy, DLPack or
/// C's blob_wrap would), keeping an export of `b` alive until released.
fn wrapped_alias(b: &Blob) -> Blob {
    let e = b.export_for(true).unwrap();
    let (ptr, len) = (std::ptr::NonNull::new(e.as_ptr()).unwrap(), e.byte_len());
    // SAFETY: the export keeps `len` writable bytes at `ptr` alive until
    // the release callback drops it.
    unsafe { Blob::wrap(&common::engine(), b.dtype(), b.shape(), ptr, len, Some(Box::new(move || drop(e)))) }.unwrap()
}

/// Two views of one blob (through the same handle or through a wrapped
/// alias) overlapping in any way: copy_from, permute_from and add must give
/// what NumPy gives (the source read before anything is written).
fn overlap_case<T: Element + std::ops::Add<Output = T>>(dims: Vec<usize>, k1: Vec<(usize, usize)>, k2: Vec<(usize, usize)>, op: u8, through_alias: bool) {
    use blobcore::Index;
    use ndarray::SliceInfoElem;
    let (base, mut a) = make::<T>(&dims, 7);
    let other = if through_alias { wrapped_alias(&base) } else { base.clone() };
    let fit = |k: &[(usize, usize)]| -> Vec<(usize, usize, usize)> {
        k.iter().zip(&dims).map(|(&(s, st), &d)| (s % d, st, (d - s % d).div_ceil(st))).collect()
    };
    let (v1, v2) = (fit(&k1), fit(&k2));
    // The destination takes the source's extent along every axis.
    if v1.iter().zip(&v2).any(|(a, b)| a.2 > b.2) {
        return;
    }
    let key = |v: &[(usize, usize, usize)], n: &[(usize, usize, usize)]| -> Vec<Index> {
        v.iter().zip(n).map(|(&(s, st, _), &(_, _, len))| Index::Range { start: Some(s as i64), stop: Some((s + (len - 1) * st + 1) as i64), step: Some(st as i64) }).collect()
    };
    let nd = |v: &[(usize, usize, usize)], n: &[(usize, usize, usize)]| -> Vec<SliceInfoElem> {
        v.iter().zip(n).map(|(&(s, st, _), &(_, _, len))| SliceInfoElem::Slice { start: s as isize, end: Some((s + (len - 1) * st + 1) as isize), step: st as isize }).collect()
    };
    let src_view = base.index(&key(&v1, &v1)).unwrap();
    let dst_view = other.index(&key(&v2, &v1)).unwrap();
    let src_arr = a.slice(nd(&v1, &v1).as_slice()).to_owned();
    let rank = dims.len();
    match op % 3 {
        0 => {
            dst_view.copy_from(&src_view).unwrap();
            a.slice_mut(nd(&v2, &v1).as_slice()).assign(&src_arr);
        }
        1 => {
            let axes: Vec<isize> = (0..rank as isize).rev().collect();
            let t = src_arr.clone().reversed_axes();
            if t.shape() != dst_view.dims().as_slice() {
                return;
            }
            dst_view.permute_from(&src_view, &axes).unwrap();
            a.slice_mut(nd(&v2, &v1).as_slice()).assign(&t);
        }
        _ => {
            dst_view.add(&src_view).unwrap(); // any layout (issue 27)
            let sum = &a.slice(nd(&v2, &v1).as_slice()).to_owned() + &src_arr;
            a.slice_mut(nd(&v2, &v1).as_slice()).assign(&sum);
        }
    }
    check(&base, &a);
    assert!(src_view.shares_memory(&other) && other.shares_memory(&base));
}

/// Views with steps of either sign along every axis (NumPy's `a[::-2]`,
/// ndarray's `s![..;-2]`, which select the same elements), and every kind
/// of operation through them, against ndarray on the same slices.
fn reversed_case<T: MaybeArith>(dims: Vec<usize>, steps: Vec<i8>, op: u8) {
    use blobcore::Index;
    use ndarray::SliceInfoElem;
    let (base, mut a) = make::<T>(&dims, 3);
    // 4 and -4 stand for steps at i64's ends: past any dim, they select
    // one element, the first or the last, as a step of the dim's size does.
    let steps: Vec<i64> = steps.iter().map(|&s| match s { 0 => -1, 4 => i64::MAX, -4 => i64::MIN, s => s as i64 }).collect();
    let key: Vec<Index> = steps.iter().map(|&st| Index::Range { start: None, stop: None, step: Some(st) }).collect();
    let nd_step = |st: i64, d: usize| if st.unsigned_abs() > 3 { st.signum() as isize * d.max(1) as isize } else { st as isize };
    let nd: Vec<SliceInfoElem> = steps.iter().zip(&dims).map(|(&st, &d)| SliceInfoElem::Slice { start: 0, end: None, step: nd_step(st, d) }).collect();
    let v = base.index(&key).unwrap();
    let want = a.slice(nd.as_slice()).to_owned();
    check(&v, &want);
    if !want.is_empty() {
        assert!(v.shares_memory(&base));
    }
    // A view of the view: every axis reversed again.
    let back: Vec<Index> = dims.iter().map(|_| Index::Range { start: None, stop: None, step: Some(-1) }).collect();
    let back_nd: Vec<SliceInfoElem> = dims.iter().map(|_| SliceInfoElem::Slice { start: 0, end: None, step: -1 }).collect();
    check(&v.index(&back).unwrap(), &want.slice(back_nd.as_slice()).to_owned());
    // Savers write the logical array (.npy has no bfloat16 or float8).
    if !matches!(T::DTYPE, DType::BF16 | DType::F8E4M3Fn | DType::F8E5M2 | DType::F8E8M0Fnu) {
        let npy = v.to_npy_bytes().unwrap();
        check(&Blob::from_npy_bytes(&common::engine(), &npy).unwrap(), &want);
    }
    match op % 5 {
        0 => {
            v.fill(7.0).unwrap();
            a.slice_mut(nd.as_slice()).fill(T::round_from_f64(7.0));
        }
        1 if T::scale_opt(T::default(), 1.0).is_none() => assert_eq!(v.scale(2.0).unwrap_err().code(), 5),
        1 => {
            v.scale(2.0).unwrap();
            a.slice_mut(nd.as_slice()).mapv_inplace(|x| T::scale_opt(x, 2.0).unwrap_or(x));
        }
        2 => {
            // Overlapping: the view takes its own reverse (read first).
            v.copy_from(&v.index(&back).unwrap()).unwrap();
            let rev = want.slice(back_nd.as_slice()).to_owned();
            a.slice_mut(nd.as_slice()).assign(&rev);
        }
        3 if T::scale_opt(T::default(), 1.0).is_none() => assert_eq!(v.asum().unwrap_err().code(), 5),
        3 => {
            let sum: f64 = want.iter().map(|x| x.to_f64().abs()).sum();
            assert_eq!(v.asum().unwrap(), sum);
        }
        _ if T::add_opt(T::default(), T::default()).is_none() => assert_eq!(v.add(&v).unwrap_err().code(), 5),
        _ => {
            v.add(&v).unwrap();
            a.slice_mut(nd.as_slice()).mapv_inplace(|x| T::add_opt(x, x).unwrap_or(x));
        }
    }
    check(&base, &a);
}

/// `get_element` / `set_element` / `fill_element` on a reversed, stepped
/// (and optionally transposed) view against ndarray's indexing of the same
/// slice; writes land in the parent where ndarray's do.
fn element_case<T: Element>(dims: Vec<usize>, steps: Vec<i8>, at: Vec<i64>, transpose: bool) {
    use blobcore::{Index, Scalar};
    use ndarray::SliceInfoElem;
    let (base, mut a) = make::<T>(&dims, 5);
    let steps: Vec<i64> = steps.iter().map(|&s| if s == 0 { -1 } else { s as i64 }).collect();
    let key: Vec<Index> = steps.iter().map(|&st| Index::Range { start: None, stop: None, step: Some(st) }).collect();
    let nd: Vec<SliceInfoElem> = steps.iter().map(|&st| SliceInfoElem::Slice { start: 0, end: None, step: st as isize }).collect();
    let mut v = base.index(&key).unwrap();
    let mut want = a.slice(nd.as_slice()).to_owned();
    let axes: Vec<usize> = if transpose { (0..dims.len()).rev().collect() } else { (0..dims.len()).collect() };
    if transpose {
        v = v.permuted_view(&axes).unwrap();
        want = want.permuted_axes(IxDyn(&axes));
    }
    // One index per axis, wrapped into range (negative ones from the end).
    let shape = want.shape().to_vec();
    if shape.contains(&0) {
        assert_eq!(v.get_element(&vec![0; shape.len()]).unwrap_err().code(), 6);
        return;
    }
    let idx: Vec<i64> = shape.iter().zip(&at).map(|(&n, &i)| i.rem_euclid(2 * n as i64) - n as i64).collect();
    let pos: Vec<usize> = shape.iter().zip(&idx).map(|(&n, &i)| if i < 0 { (i + n as i64) as usize } else { i as usize }).collect();
    let got = v.get_element(&idx).unwrap();
    assert_eq!(got, Scalar::of(want[IxDyn(&pos)]), "{:?} at {idx:?}", T::DTYPE);
    // Write one element, then fill the whole view, checking the parent.
    let value = T::round_from_f64(3.0);
    v.set_element(&idx, &Scalar::of(value)).unwrap();
    let mut parent_pos: Vec<usize> = vec![0; dims.len()];
    for (k, &p) in pos.iter().enumerate() {
        let axis = axes[k];
        let st = steps[axis];
        parent_pos[axis] = if st > 0 { p * st as usize } else { dims[axis] - 1 - p * (-st) as usize };
    }
    a[IxDyn(&parent_pos)] = value;
    check(&base, &a);
    v.fill_element(&Scalar::of(T::round_from_f64(1.0))).unwrap();
    a.slice_mut(nd.as_slice()).fill(T::round_from_f64(1.0));
    check(&base, &a);
    assert_eq!(v.get_element(&vec![0; dims.len() + 1]).unwrap_err().code(), 6);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, rng_seed: proptest::test_runner::RngSeed::Fixed(29), ..ProptestConfig::default() })]

    #[test]
    fn element_access_like_ndarray(
        dims in shape_strategy(),
        steps in prop::collection::vec(-3i8..4, 4),
        at in prop::collection::vec(-20i64..20, 4),
        transpose in any::<bool>(),
    ) {
        let steps = steps[..dims.len()].to_vec();
        for_each_dtype!(element_case(dims.clone(), steps.clone(), at.clone(), transpose));
    }

    #[test]
    fn dlpack_allocator_like_new(dims in prop::collection::vec(0i64..5, 0..5), code in 1i32..17) {
        use blobcore::dlpack::{delete_tensor, dl_dtype, DLDevice, DLTensor};
        let dtype = DType::from_code(code).unwrap();
        let mut d = dims.clone();
        let proto = DLTensor {
            data: std::ptr::null_mut(), device: DLDevice { device_type: 1, device_id: 0 }, ndim: d.len() as i32,
            dtype: dl_dtype(dtype), shape: d.as_mut_ptr(), strides: std::ptr::null_mut(), byte_offset: 0,
        };
        // SAFETY: the prototype's shape holds ndim entries; the result is
        // imported (which takes it) and then dropped.
        let b = unsafe {
            let t = Blob::dlpack_allocate(&proto).unwrap();
            let b = Blob::from_dlpack(&common::engine(), t.as_ptr(), Some(false));
            if b.is_err() { delete_tensor(t.as_ptr()); }
            b.unwrap()
        };
        let want: Vec<usize> = dims.iter().map(|&x| x as usize).collect();
        prop_assert_eq!(b.dims(), want);
        prop_assert_eq!(b.dtype(), dtype);
        let mut bytes = vec![1u8; b.byte_size()];
        b.copy_to_bytes(&mut bytes).unwrap();
        prop_assert!(bytes.iter().all(|&x| x == 0));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, rng_seed: proptest::test_runner::RngSeed::Fixed(27), ..ProptestConfig::default() })]

    #[test]
    fn reversed_and_stepped_views_like_ndarray(dims in shape_strategy(), steps in prop::collection::vec(-4i8..5, 4), op in any::<u8>()) {
        let steps = steps[..dims.len()].to_vec();
        for_each_dtype!(reversed_case(dims.clone(), steps.clone(), op));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, rng_seed: proptest::test_runner::RngSeed::Fixed(26), ..ProptestConfig::default() })]

    #[test]
    fn overlapping_operations_read_their_sources_first(
        dims in prop::collection::vec(1usize..7, 1..4),
        k1 in prop::collection::vec((0usize..6, 1usize..3), 3),
        k2 in prop::collection::vec((0usize..6, 1usize..3), 3),
        op in any::<u8>(),
        through_alias in any::<bool>(),
    ) {
        let (k1, k2) = (k1[..dims.len()].to_vec(), k2[..dims.len()].to_vec());
        overlap_case::<f32>(dims.clone(), k1.clone(), k2.clone(), op, through_alias);
        overlap_case::<u8>(dims.clone(), k1.clone(), k2.clone(), op, through_alias);
        overlap_case::<f64>(dims, k1, k2, op, through_alias);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, rng_seed: proptest::test_runner::RngSeed::Fixed(16), ..ProptestConfig::default() })]

    #[test]
    fn merge_split_like_concatenate(dims in shape_strategy(), axis in 0usize..4, extra in prop::collection::vec(0usize..4, 1..4)) {
        for_each_dtype!(merge_split_case(dims.clone(), axis, extra.clone()));
    }

    #[test]
    fn transposed_like_swapaxes(dims in shape_strategy(), d1 in 0usize..4, d2 in 0usize..4) {
        for_each_dtype!(transpose_case(dims.clone(), d1, d2));
    }

    #[test]
    fn arithmetic_like_naive(dims in shape_strategy(), value in any::<i8>(), factor in -3i8..4) {
        for_each_arith_dtype!(arith_case(dims.clone(), value, factor));
    }

    #[test]
    fn windows_and_slices_like_ndarray(dims in shape_strategy(), size in 0usize..8, pos in 0usize..8, idx in prop::collection::vec(0usize..5, 0..4)) {
        for_each_dtype!(view_case(dims.clone(), size, pos, idx.clone()));
    }

    #[test]
    fn reshape_follows_caffe_capacity(dims in shape_strategy(), new_dims in shape_strategy()) {
        for_each_dtype!(reshape_case(dims.clone(), new_dims.clone()));
    }
}

/// Sizes past the parallel threshold take the multi-threaded kernels.
#[test]
fn large_blobs_take_parallel_paths_correctly() {
    // Many small rows (channel merge), few huge rows (axis 0), and a middle axis.
    for (dims, axis) in [(vec![300usize, 700, 3], 2usize), (vec![2, 300_000], 0), (vec![4, 500, 300], 1)] {
        merge_split_case::<f32>(dims.clone(), axis, vec![dims[axis], 1, dims[axis] + 2]);
        merge_split_case::<u8>(dims.clone(), axis, vec![dims[axis], 3]);
    }
    // Savers on large views: many 4 MiB pieces gathered on a helper thread
    // while the previous one is written; a sink error mid-way stops it.
    for (dims, perm) in [(vec![1500usize, 2100], vec![1usize, 0]), (vec![40, 300, 500], vec![2, 0, 1])] {
        let (b, a) = make::<f32>(&dims, 11);
        let t = b.permuted_view(&perm).unwrap();
        let want = a.clone().permuted_axes(perm.clone()).as_standard_layout().to_owned();
        check(&Blob::from_npy_bytes(&common::engine(), &t.to_npy_bytes().unwrap()).unwrap(), &want);
        let r = t.index(&[blobcore::Index::Range { start: None, stop: None, step: Some(-1) }]).unwrap();
        let mut got = Vec::new();
        r.for_each_chunk(|p| { got.extend_from_slice(p); Ok(()) }).unwrap();
        let rev = want.slice_axis(Axis(0), Slice::new(0, None, -1)).as_standard_layout().to_owned();
        let rev_bytes: Vec<u8> = rev.iter().flat_map(|v| v.to_ne_bytes()).collect();
        assert_eq!(got, rev_bytes);
        let mut calls = 0;
        let e = t.for_each_chunk(|_| {
            calls += 1;
            if calls == 2 { Err(blobcore::Error::InvalidArgument("stop".into())) } else { Ok(()) }
        });
        assert_eq!((e.unwrap_err().code(), calls), (3, 2));
    }
    // Innermost axis involved (tiled), batch of planes, and wide inner chunks.
    transpose_case::<f32>(vec![700, 900], 0, 1);
    transpose_case::<f64>(vec![3, 300, 5, 200], 1, 3);
    transpose_case::<f16>(vec![64, 40, 50, 7], 0, 2);
    transpose_case::<i8>(vec![2000, 1200], 1, 0);
    arith_case::<f32>(vec![1000, 700], 3, 2);
    arith_case::<i32>(vec![3, 500_000], -4, -2);
}

/// DLPack export then import within blobcore (what `bc.from_dlpack(blob)`
/// and the C exchange API do): the import shares the exported storage, so
/// values, writes, overlap checks and `Busy` behave as for a view, with
/// either struct, and a read-only export stays read-only.
fn dlpack_own_case<T: Element>(dims: Vec<usize>, lead: usize, legacy: bool, read_only: bool) {
    let (b, a) = make::<T>(&dims, 5);
    let part = dims[0] > 0 && lead % 2 == 1;
    let (src, want) = if part {
        let i = lead % dims[0];
        (b.index(&[blobcore::Index::At(i as i64)]).unwrap(), a.index_axis(Axis(0), i).to_owned())
    } else {
        (b.clone(), a.clone())
    };
    let engine = common::engine();
    // SAFETY: each tensor is live and handed straight to the import, which
    // takes it on success (and the test unwraps that success).
    let imp = unsafe {
        if legacy {
            Blob::from_dlpack_legacy(&engine, src.to_dlpack_legacy().unwrap().as_ptr(), None).unwrap()
        } else {
            let flags = if read_only { blobcore::dlpack::DLPACK_FLAG_BITMASK_READ_ONLY } else { 0 };
            Blob::from_dlpack(&engine, src.to_dlpack(flags).unwrap().as_ptr(), None).unwrap()
        }
    };
    check(&imp, &want);
    let n = want.len();
    assert_eq!(imp.shares_memory(&src), n > 0);
    // (An empty tensor is imported as a new, empty blob.)
    if n > 0 {
        assert_eq!(imp.is_writable(), legacy || !read_only);
    }
    if imp.is_writable() && n > 0 {
        let (other, new) = make::<T>(want.shape(), 9);
        imp.copy_from(&other).unwrap();
        check(&src, &new);
    }
    drop(src);
    let grown: Vec<usize> = dims.iter().map(|&d| d + 1).collect();
    if n > 0 {
        assert_eq!(b.reshape(&grown).unwrap_err().code(), 8, "the import shares the storage");
    }
    drop(imp);
    b.reshape(&grown).unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, rng_seed: proptest::test_runner::RngSeed::Fixed(30), ..ProptestConfig::default() })]

    #[test]
    fn dlpack_round_trip_shares_the_storage(dims in shape_strategy(), lead in 0usize..8, legacy in any::<bool>(), read_only in any::<bool>()) {
        for_each_dtype!(dlpack_own_case(dims.clone(), lead, legacy, read_only));
    }
}

/// DLPack round trips where the consumer edits blobcore's own tensor
/// before handing it back (DLPack lets it: the tensor is the consumer's
/// until the import takes it): flattened, described transposed, moved on
/// by `byte_offset` or by `data` (within it, or to another row of a row
/// view's parent, shape kept), a row of it, strides left out, another
/// dtype of the same size, flagged read-only. The import must read what
/// the edited tensor says (the oracle walks its shape and strides over the
/// source's row-major values), whether it takes the fast path for intact
/// tensors or the general one, and free the export exactly once.
fn dlpack_edited_case(dims: Vec<usize>, lead: usize, edit: u8, k: usize) {
    let (b, a) = make::<f32>(&dims, 7);
    // The parent's values in memory order: the oracle reads them at the
    // edited tensor's element offsets (`base` = its first element).
    let pflat: Vec<f32> = a.iter().copied().collect();
    let row: usize = dims[1..].iter().product();
    let part = dims[0] > 0 && lead % 2 == 1;
    let i = if part { lead % dims[0] } else { 0 };
    let (src, want) = if part {
        (b.index(&[blobcore::Index::At(i as i64)]).unwrap(), a.index_axis(Axis(0), i).to_owned())
    } else {
        (b.clone(), a.clone())
    };
    let n = want.len();
    let rank = want.ndim();
    let mut shape: Vec<i64> = want.shape().iter().map(|&d| d as i64).collect();
    let mut strides = vec![0i64; rank];
    let mut step = 1i64;
    for j in (0..rank).rev() {
        strides[j] = step;
        step *= shape[j].max(1);
    }
    let t = src.to_dlpack(0).unwrap();
    // SAFETY: a live export this test owns until the import takes it.
    let m = unsafe { &mut *t.as_ptr() };
    let (mut base, mut null_strides, mut as_i32) = (i * row, false, false);
    // Another row of the parent, for the edits that move a row view's
    // pointer and keep its shape.
    let other = if !part { None } else if i > 0 { Some(i - 1) } else if i + 1 < dims[0] { Some(i + 1) } else { None };
    match edit {
        1 => (shape, strides) = (vec![n as i64], vec![1]),
        9 if other.is_some() && row > 0 => {
            let j = other.unwrap_or(i);
            base = j * row;
            // SAFETY: row j lies inside the parent's storage.
            m.dl_tensor.data = unsafe { (m.dl_tensor.data as *mut f32).offset((j as isize - i as isize) * row as isize) } as *mut std::ffi::c_void;
        }
        10 if other.is_some() && row > 0 => {
            if i + 1 < dims[0] {
                // `data` kept, `byte_offset` to the next row.
                base = (i + 1) * row;
                m.dl_tensor.byte_offset = (4 * row) as u64;
            } else {
                // `data` at the parent's first element, `byte_offset` at
                // the row before.
                base = (i - 1) * row;
                // SAFETY: the parent's first element, inside its storage.
                m.dl_tensor.data = unsafe { (m.dl_tensor.data as *mut f32).sub(i * row) } as *mut std::ffi::c_void;
                m.dl_tensor.byte_offset = (4 * base) as u64;
            }
        }
        2 if rank >= 2 => {
            shape.swap(0, rank - 1);
            strides.swap(0, rank - 1);
        }
        3 | 4 if n > 0 => {
            let skip = k % n;
            base += skip;
            (shape, strides) = (vec![(n - skip) as i64], vec![1]);
            if edit == 3 {
                m.dl_tensor.byte_offset = 4 * skip as u64;
            } else {
                // SAFETY: `skip` < n elements of the export.
                m.dl_tensor.data = unsafe { (m.dl_tensor.data as *mut f32).add(skip) } as *mut std::ffi::c_void;
            }
        }
        5 => as_i32 = true,
        6 if rank >= 1 && shape[0] > 0 => {
            shape.remove(0);
            strides.remove(0);
        }
        7 => null_strides = true,
        8 => m.flags |= blobcore::dlpack::DLPACK_FLAG_BITMASK_READ_ONLY,
        _ => {}
    }
    if as_i32 {
        m.dl_tensor.dtype = blobcore::dlpack::dl_dtype(DType::I32);
    }
    m.dl_tensor.ndim = shape.len() as i32;
    m.dl_tensor.shape = shape.as_mut_ptr();
    m.dl_tensor.strides = if null_strides { std::ptr::null_mut() } else { strides.as_mut_ptr() };
    let engine = common::engine();
    // SAFETY: the tensor is live, its shape and strides arrays outlive the
    // call, and every element they address lies inside the export.
    let imp = unsafe { Blob::from_dlpack(&engine, t.as_ptr(), None) }.unwrap();
    let dims_now: Vec<usize> = shape.iter().map(|&d| d as usize).collect();
    assert_eq!(imp.dims(), &dims_now[..], "edit {edit}");
    let count: usize = dims_now.iter().product();
    let expect: Vec<f32> = (0..count)
        .map(|mut i| {
            let mut at = base as i64;
            for j in (0..dims_now.len()).rev() {
                at += (i % dims_now[j]) as i64 * strides[j];
                i /= dims_now[j];
            }
            pflat[at as usize]
        })
        .collect();
    if as_i32 {
        let bits: Vec<i32> = expect.iter().map(|v| v.to_bits() as i32).collect();
        assert_eq!(imp.to_vec::<i32>().unwrap(), bits, "edit {edit}");
    } else {
        assert_eq!(imp.to_vec::<f32>().unwrap(), expect, "edit {edit}");
    }
    if edit == 8 && count > 0 {
        assert!(!imp.is_writable(), "a tensor flagged read-only gives a read-only blob");
    }
    drop(src);
    drop(imp);
    // The export was freed (its pin is gone): the source may grow again.
    let grown: Vec<usize> = dims.iter().map(|&d| d + 1).collect();
    b.reshape(&grown).unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, rng_seed: proptest::test_runner::RngSeed::Fixed(39), ..ProptestConfig::default() })]

    #[test]
    fn dlpack_edited_own_tensor_reads_what_it_says(dims in shape_strategy(), lead in 0usize..8, edit in 0u8..11, k in 0usize..64) {
        dlpack_edited_case(dims, lead, edit, k);
    }
}

/// `b[i, j, ...]` (keys of integers only, which have a fast path for
/// dense blobs) against ndarray's `index_axis`, on blobs and on dense
/// views at an offset, with indices in and out of range; writes through
/// the view land in the parent.
fn leading_index_case<T: Element>(dims: Vec<usize>, is: Vec<i64>, k: usize, nested: bool) {
    let (b, a) = make::<T>(&dims, 3);
    let (src, want) = if nested && dims.len() > 1 && dims[0] > 0 {
        let j = dims[0] - 1;
        (b.index(&[blobcore::Index::At(j as i64)]).unwrap(), a.index_axis(Axis(0), j).to_owned())
    } else {
        (b.clone(), a.clone())
    };
    let k = k.min(want.ndim()).max(1);
    let key: Vec<blobcore::Index> = is[..k].iter().map(|&i| blobcore::Index::At(i)).collect();
    let got = src.index(&key);
    let mut rows = Vec::new();
    for (&i, &n) in is[..k].iter().zip(want.shape()) {
        let n = n as i64;
        if i < -n || i >= n {
            assert_eq!(got.unwrap_err().code(), 6, "{is:?} of {:?}", want.shape());
            return;
        }
        rows.push(if i < 0 { i + n } else { i } as usize);
    }
    let got = got.unwrap();
    let mut part = want.view();
    for &r in &rows {
        part = part.index_axis_move(Axis(0), r);
    }
    check(&got, &part.to_owned());
    if got.count() > 0 {
        let (other, new) = make::<T>(got.dims().as_slice(), 8);
        got.copy_from(&other).unwrap();
        let mut whole = want.clone();
        let mut dst = whole.view_mut();
        for &r in &rows {
            dst = dst.index_axis_move(Axis(0), r);
        }
        dst.assign(&new);
        check(&src, &whole);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, rng_seed: proptest::test_runner::RngSeed::Fixed(31), ..ProptestConfig::default() })]

    #[test]
    fn leading_index_like_ndarray(dims in shape_strategy(), is in prop::collection::vec(-6i64..6, 4), k in 1usize..5, nested in any::<bool>()) {
        for_each_dtype!(leading_index_case(dims.clone(), is.clone(), k, nested));
    }
}

/// Same value to the bit (signed zeros apart, NaNs alike), through f64.
fn same_value<T: Element>(x: T, y: T) -> bool {
    let (a, b) = (x.to_f64(), y.to_f64());
    (a.is_nan() && b.is_nan()) || a.to_bits() == b.to_bits()
}

/// Whether `value` fits `dtype` as NumPy's `a.fill(value)` stores it
/// without overflow (the test's own table, independent of the core's
/// check): floats and bool take any value; an integer dtype a finite
/// value whose integer part (truncated toward zero) lies in its range.
fn fits(dtype: DType, value: f64) -> bool {
    let p = |e: i32| 2f64.powi(e);
    let (lo, above) = match dtype {
        DType::U8 => (0.0, p(8)),
        DType::I8 => (-p(7), p(7)),
        DType::U16 => (0.0, p(16)),
        DType::I16 => (-p(15), p(15)),
        DType::U32 => (0.0, p(32)),
        DType::I32 => (-p(31), p(31)),
        DType::U64 => (0.0, p(64)),
        DType::I64 => (-p(63), p(63)),
        _ => return true,
    };
    value.is_finite() && value.trunc() >= lo && value.trunc() < above
}

/// `fill` of `n` elements (below the parallel threshold, above it, or
/// above the streaming one) with `value`: through the blob itself, a
/// strided view (every other element from `off`), or a wrapped alias of
/// its memory; every element it should reach holds the converted value
/// (values of one repeated byte go through memset, others are streamed or
/// stored), and no other changes.
fn fill_case<T: Element>(n: usize, value: f64, off: usize, door: u8) {
    use blobcore::Index;
    let sentinel = T::round_from_f64(7.0);
    let b = Blob::from_slice(&common::engine(), &[n], &vec![sentinel; n]).unwrap();
    let want = T::round_from_f64(value);
    let off = off % n;
    let done = match door {
        0 => b.fill(value),
        1 => b.index(&[Index::Range { start: Some(off as i64), stop: None, step: Some(2) }]).unwrap().fill(value),
        _ => wrapped_alias(&b).fill(value),
    };
    // A value the dtype cannot hold is refused and changes nothing.
    let fitted = fits(T::DTYPE, value);
    match &done {
        Ok(()) => assert!(fitted, "{:?} fill({value}) was taken", T::DTYPE),
        Err(e) => assert!(!fitted && e.code() == 6, "{:?} fill({value}): {e}", T::DTYPE),
    }
    let got = b.to_vec::<T>().unwrap();
    for (i, &g) in got.iter().enumerate() {
        let reached = fitted && (door != 1 || (i >= off && (i - off).is_multiple_of(2)));
        let expect = if reached { want } else { sentinel };
        assert!(same_value(g, expect), "{:?} fill({value}) of {n} through door {door}: element {i} is {g:?}, not {expect:?}", T::DTYPE);
    }
}

proptest! {
    // Some cases move 32 MiB or more: few cases, a fixed seed.
    #![proptest_config(ProptestConfig { cases: 24, rng_seed: proptest::test_runner::RngSeed::Fixed(25), ..ProptestConfig::default() })]

    /// Fills of every size class and many values, zeros, -0.0 and other
    /// values whose bytes repeat (0x41414141 as f32, -1 as an integer)
    /// among them, through the blob, a view and an alias.
    #[test]
    fn fills_put_the_converted_value_everywhere_they_reach(
        tier in 0usize..3,
        extra in 0usize..5000,
        pick in 0usize..14,
        random in -1.0e6f64..1.0e6,
        off in 0usize..100,
        door in 0u8..3,
        dtype in 0usize..8,
    ) {
        let values = [0.0, -0.0, 1.0, -1.0, 255.0, 3.0, f32::from_bits(0x4141_4141) as f64, f64::INFINITY, f64::NAN, random, 256.0, -0.99, 2f64.powi(31), -2f64.powi(63)];
        let value = values[pick];
        // Bytes: under 1 MiB (one thread), over it (parallel), over 32 MiB (streamed).
        let bytes = [4096 + extra, (1 << 20) + extra, (32 << 20) + extra][tier];
        macro_rules! case { ($t:ty) => { fill_case::<$t>((bytes / std::mem::size_of::<$t>()).max(1), value, off, door) } }
        match dtype {
            0 => case!(f32),
            1 => case!(f64),
            2 => case!(half::f16),
            3 => case!(half::bf16),
            4 => case!(u8),
            5 => case!(i32),
            6 => case!(i64),
            _ => case!(F8E4M3Fn),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, rng_seed: proptest::test_runner::RngSeed::Fixed(29), ..ProptestConfig::default() })]

    /// `fill_element`, `fill_object_element` and `full_element` store the
    /// scalar's exact bits for any pattern of every dtype of 4 or 8 bytes
    /// (the GPU fill's words) and of 1 and 2 bytes (64-bit integers past
    /// 2^53, which a double cannot carry, and NaN payloads among them),
    /// through the blob, a strided view and an alias of its memory.
    #[test]
    fn exact_fills_store_every_bit_pattern(bits in any::<u64>(), dtype in 0usize..8, n in 1usize..40, door in 0u8..4) {
        let d = [DType::I64, DType::U64, DType::F64, DType::I32, DType::F32, DType::F16, DType::U8, DType::BF16][dtype];
        let size = d.size();
        let bytes = bits.to_le_bytes();
        let s = blobcore::Scalar::from_bytes(d, &bytes[..size]).unwrap();
        let e = common::engine();
        let b = Blob::full_element(&e, &[2, n], &blobcore::Scalar::from_bytes(d, &[0x5a; 8][..size]).unwrap()).unwrap();
        // Which elements the fill reaches (row-major over [2, n]).
        let reached: Vec<bool> = match door {
            0 => { b.fill_element(&s).unwrap(); vec![true; 2 * n] }
            1 => {
                b.index(&[blobcore::Index::ALL, blobcore::Index::Range { start: None, stop: None, step: Some(-2) }]).unwrap().fill_element(&s).unwrap();
                (0..2 * n).map(|i| (n - 1 - i % n).is_multiple_of(2)).collect()
            }
            2 => { wrapped_alias(&b).fill_element(&s).unwrap(); vec![true; 2 * n] }
            _ => {
                // Object 1 of the [2, n] blob (objects are its n-wide rows
                // only when n is its channel count: take what the blob says).
                let size = b.object_size().unwrap();
                b.fill_object_element(1, &s).unwrap();
                (0..2 * n).map(|i| i / size == 1).collect()
            }
        };
        let mut got = vec![0u8; b.byte_size()];
        b.copy_to_bytes(&mut got).unwrap();
        for (i, (el, &r)) in got.chunks(size).zip(&reached).enumerate() {
            let want = if r { &bytes[..size] } else { &[0x5a; 8][..size] };
            prop_assert_eq!(el, want, "{:?} element {} (door {})", d, i, door);
        }
        if door == 0 {
            let f = Blob::full_element(&e, &[n], &s).unwrap();
            let mut all = vec![0u8; f.byte_size()];
            f.copy_to_bytes(&mut all).unwrap();
            prop_assert!(all.chunks(size).all(|c| c == &bytes[..size]));
        }
    }
}

/// `copy()` of `n` elements (the row at `row` of a 3-row blob, or the
/// whole blob, a strided view of it, a read-only alias of its memory, or
/// a blob never written): equal to the source to the bit, its own memory
/// (writing either side afterwards leaves the other), writable, dense.
fn copy_case<T: Element>(n: usize, row: usize, door: u8) {
    use blobcore::Index;
    let vals: Vec<T> = (0..3 * n).map(|i| T::round_from_f64(((i * 37) % 251) as f64 - 125.0)).collect();
    let b = Blob::from_slice(&common::engine(), &[3, n], &vals).unwrap();
    let (src, want): (Blob, Vec<T>) = match door {
        // A leading index: a dense view at an offset (the one-step copy).
        0 => (b.index(&[Index::At(row as i64 % 3)]).unwrap(), vals[(row % 3) * n..(row % 3 + 1) * n].to_vec()),
        // Every other column: a strided view (the general path).
        1 => {
            let v = b.index(&[Index::At(row as i64 % 3), Index::Range { start: None, stop: None, step: Some(2) }]).unwrap();
            (v, vals[(row % 3) * n..(row % 3 + 1) * n].iter().copied().step_by(2).collect())
        }
        // Rows reversed, every k-th column from the last, transposed
        // (`b[::-1, ::-k].T`): a strided view whose axes all differ from
        // the copy's (the one-step gather when small, the planar reorder
        // when not).
        4 => {
            let k = row as i64 % 3 + 1;
            let r = |step| Index::Range { start: None, stop: None, step: Some(step) };
            let v = b.index(&[r(-1), r(-k)]).unwrap().reversed_view().unwrap();
            let cols: Vec<usize> = (0..n).rev().step_by(k as usize).collect();
            (v, cols.iter().flat_map(|&j| (0..3).rev().map(move |i| (i, j))).map(|(i, j)| vals[i * n + j]).collect())
        }
        // Read-only wrapped memory: the copy is the caller's, writable.
        2 => {
            let e = b.export_for(false).unwrap();
            let (ptr, len) = (std::ptr::NonNull::new(e.as_ptr()).unwrap(), e.byte_len());
            // SAFETY: the export keeps `len` bytes at `ptr` alive until the
            // release callback drops it; the alias only reads them.
            let alias = unsafe { Blob::wrap_read_only(&common::engine(), b.dtype(), b.shape(), ptr, len, Some(Box::new(move || drop(e)))) }.unwrap();
            (alias, vals.clone())
        }
        // Never written: reads as zeros, and so does its copy.
        _ => (Blob::new(&common::engine(), T::DTYPE, blobcore::Shape::new(&[n]).unwrap()).unwrap(), vec![T::default(); n]),
    };
    let c = src.copy().unwrap();
    assert_eq!(c.dims(), src.dims());
    assert!(c.is_dense() && c.is_writable());
    let same = |got: &[T], want: &[T]| got.len() == want.len() && got.iter().zip(want).all(|(&g, &w)| same_value(g, w));
    assert!(same(&c.to_vec::<T>().unwrap(), &want), "{:?} copy of {n} through door {door} differs from its source", T::DTYPE);
    // Independent: overwrite the copy, then the source; neither sees the other.
    c.fill(1.0).unwrap();
    assert!(same(&src.to_vec::<T>().unwrap(), &want), "writing the copy reached its source");
    if src.is_writable() {
        src.fill(2.0).unwrap();
        assert!(c.to_vec::<T>().unwrap().iter().all(|&x| same_value(x, T::round_from_f64(1.0))), "writing the source reached its copy");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, rng_seed: proptest::test_runner::RngSeed::Fixed(26), ..ProptestConfig::default() })]

    /// Copies of small blobs (the one-step path, heap and page-sized
    /// memory) and of larger ones (the general path), through a view, a
    /// strided view, a reversed and transposed one, a read-only alias and
    /// untouched memory.
    #[test]
    fn copies_equal_their_source_and_own_their_memory(
        bytes in prop_oneof![0usize..4096, 4096usize..(16 << 10), (16usize << 10)..(40 << 10)],
        row in 0usize..3,
        door in 0u8..5,
        dtype in 0usize..5,
    ) {
        macro_rules! case { ($t:ty) => { copy_case::<$t>((bytes / std::mem::size_of::<$t>()).max(1), row, door) } }
        match dtype {
            0 => case!(f32),
            1 => case!(f64),
            2 => case!(half::bf16),
            3 => case!(u8),
            _ => case!(i64),
        }
    }

    /// `Blob::from_bytes` (what the bindings build a small array's copy
    /// with): the blob holds exactly the bytes given (every bit pattern,
    /// NaNs included), with the dims and dtype given, dense and writable,
    /// on either side of the one-step size, at zero bytes and, a quarter of
    /// the cases, at the sizes a storage keeps inside its record (up to 64
    /// bytes; the storage's own test covers each of them); writing it
    /// leaves the caller's bytes alone.
    #[test]
    fn blobs_from_bytes_hold_exactly_those_bytes(
        len in prop_oneof![0usize..=65, 0usize..4096, 4096usize..(16 << 10), (16usize << 10)..(40 << 10)],
        rows in 1usize..5,
        dtype in 0usize..5,
        seed in any::<u64>(),
    ) {
        let dtype = [DType::F32, DType::F64, DType::BF16, DType::U8, DType::I64][dtype];
        let n = len / dtype.size();
        let dims = if n.is_multiple_of(rows) { vec![rows, n / rows] } else { vec![n] };
        let mut x = seed | 1;
        let bytes: Vec<u8> = (0..n * dtype.size()).map(|_| { x ^= x << 13; x ^= x >> 7; x ^= x << 17; (x >> 24) as u8 }).collect();
        let kept = bytes.clone();
        let b = Blob::from_bytes(&common::engine(), dtype, &dims, &bytes).unwrap();
        prop_assert_eq!(b.dims(), dims.clone());
        prop_assert_eq!(b.dtype(), dtype);
        prop_assert!(b.is_dense() && b.is_writable());
        let mut got = vec![0u8; bytes.len()];
        b.copy_to_bytes(&mut got).unwrap();
        prop_assert!(got == bytes, "{:?} {:?}: the blob's bytes differ from those given", dtype, dims);
        b.fill(1.0).unwrap();
        prop_assert!(bytes == kept, "writing the blob reached the bytes it was made from");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, rng_seed: proptest::test_runner::RngSeed::Fixed(68), ..ProptestConfig::default() })]

    /// `fill_index` / `copy_index_from` on a channel-blocked blob (keys
    /// inside the blocks included: through a dense copy) leave exactly
    /// what the same assignment leaves on a dense blob of the same values.
    #[test]
    fn indexed_assignment_on_blocked_blobs_is_the_dense_ones(
        n in 1usize..3, c in 1usize..20, hw in 1usize..4, block in prop::sample::select(vec![4usize, 8, 16]),
        start in 0i64..20, step in prop::sample::select(vec![1i64, 2, 3, -1, -2]), by_copy in any::<bool>(),
    ) {
        use blobcore::{BlockingDesc, Index, Scalar, TensorDesc};
        let e = common::engine();
        let dims = [n, c, hw, hw];
        let count = n * c * hw * hw;
        let dense = Blob::from_slice(&e, &dims, &(0..count).map(|i| i as f32).collect::<Vec<_>>()).unwrap();
        let blk = BlockingDesc::new(&[n, c.div_ceil(block), hw, hw, block], &[0, 1, 2, 3, 1]).unwrap();
        let b = Blob::with_desc(&e, &TensorDesc::with_blocking(DType::F32, &dims, blk).unwrap()).unwrap();
        b.reorder_from(&dense).unwrap();
        let key = [Index::ALL, Index::Range { start: Some(start % c as i64), stop: None, step: Some(step) }];
        let vd = dense.index(&key).unwrap();
        prop_assert_eq!(b.index_dims(&key).unwrap(), vd.dims().to_vec());
        if by_copy {
            let k = vd.count();
            let src = Blob::from_slice(&e, &vd.dims(), &(0..k).map(|i| -(i as f32) - 1.0).collect::<Vec<_>>()).unwrap();
            b.copy_index_from(&key, &src).unwrap();
            vd.copy_from(&src).unwrap();
        } else {
            b.fill_index(&key, &Scalar::of(-7f32)).unwrap();
            vd.fill_element(&Scalar::of(-7f32)).unwrap();
        }
        prop_assert_eq!(b.copy().unwrap().to_vec::<f32>().unwrap(), dense.to_vec::<f32>().unwrap());
    }
}

/// The finite, non-negative, integer-valued values of a 1- or 2-byte
/// float dtype with their patterns, in increasing order (every pattern
/// read back through `Scalar::to_f64`, exact for these dtypes).
fn integer_values(dtype: DType) -> Vec<(u128, u16)> {
    let mut out: Vec<(u128, u16)> = (0..1u32 << (8 * dtype.size()))
        .filter_map(|bits| {
            let bytes = (bits as u16).to_le_bytes();
            let v = blobcore::Scalar::from_bytes(dtype, &bytes[..dtype.size()]).unwrap().to_f64();
            (v.is_finite() && v >= 0.0 && !v.is_sign_negative() && v.fract() == 0.0).then_some((v as u128, bits as u16))
        })
        .collect();
    out.sort();
    out.dedup_by_key(|e| e.0);
    out
}

/// The pattern nearest to the integer `m` among `values` (ties to the even
/// pattern, or up for float8_e8m0fnu as ml_dtypes rounds it), by exact
/// integer arithmetic; None in the band from the largest finite value to
/// twice it, which this oracle leaves to the Python suite's.
fn nearest_pattern(dtype: DType, values: &[(u128, u16)], m: u128) -> Option<u16> {
    let max = values.last()?.0;
    if m >= max {
        return None;
    }
    let hi = values.partition_point(|e| e.0 <= m);
    let (lo, hi) = (values[hi - 1], values[hi]);
    if lo.0 == m {
        return Some(lo.1);
    }
    let (dl, dh) = (m - lo.0, hi.0 - m);
    Some(match dl.cmp(&dh) {
        std::cmp::Ordering::Less => lo.1,
        std::cmp::Ordering::Greater => hi.1,
        std::cmp::Ordering::Equal if dtype == DType::F8E8M0Fnu => hi.1,
        std::cmp::Ordering::Equal => if lo.1 & 1 == 0 { lo.1 } else { hi.1 },
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, rng_seed: proptest::test_runner::RngSeed::Fixed(69), ..ProptestConfig::default() })]

    /// `Scalar::from_integer` rounds an integer of up to 128 bits once to
    /// every float dtype: float32 and float64 as Rust's `as` casts from
    /// u128 (compiler-rt's conversion), the 1- and 2-byte floats as the
    /// nearest of their enumerated values; integers just around a halfway
    /// point between two neighbours (where going through a double rounds
    /// twice) are a third of the cases. Values past twice the largest
    /// finite one are its overflow (the conversion of an infinity);
    /// integer dtypes take what fits and refuse the rest.
    #[test]
    fn integers_round_once_into_every_dtype(
        dtype in prop::sample::select(vec![DType::F32, DType::F64, DType::F16, DType::BF16, DType::F8E4M3Fn, DType::F8E5M2, DType::F8E8M0Fnu, DType::I8, DType::U16, DType::I64, DType::U64]),
        bits in 0u32..=128, raw in any::<u128>(), mant in any::<u64>(), shift in 1u32..=100, nudge in -1i32..=1, kind in 0u8..3, neg in any::<bool>(),
    ) {
        use blobcore::Scalar;
        let m: u128 = match (kind, dtype) {
            // Around a halfway point of float32 / float64 / the narrow formats.
            (0, DType::F32) => ((mant as u128 >> 40 | 1 << 23) << shift) + (1u128 << (shift - 1)),
            (0, DType::F64) => ((mant as u128 >> 11 | 1 << 52) << shift.min(75)) + (1u128 << (shift.min(75) - 1)),
            (0, d) if d.is_float() => {
                let values = integer_values(d);
                let i = (mant as usize) % (values.len() - 1);
                (values[i].0 + values[i + 1].0) / 2
            }
            _ => if bits == 0 { 0 } else { raw >> (128 - bits) },
        };
        let m = (m as i128 + if kind == 0 { nudge as i128 } else { 0 }) as u128;
        let neg = neg && dtype != DType::F8E8M0Fnu && m != 0; // an integer has no -0
        let got = Scalar::from_integer(dtype, neg, m);
        let sign = |v: f64| if neg { -v } else { v };
        match dtype {
            DType::F32 => prop_assert_eq!(got.unwrap().bytes().to_vec(), (if neg { -(m as f32) } else { m as f32 }).to_le_bytes().to_vec()),
            DType::F64 => prop_assert_eq!(got.unwrap().bytes().to_vec(), (if neg { -(m as f64) } else { m as f64 }).to_le_bytes().to_vec()),
            d if d.is_float() => {
                let values = integer_values(d);
                let max = values.last().unwrap().0;
                let got = got.unwrap();
                if m.checked_sub(max).is_some_and(|over| over > max) {
                    prop_assert_eq!(got, Scalar::from_f64(d, sign(f64::INFINITY)).unwrap());
                } else if m == 0 && d == DType::F8E8M0Fnu {
                    // No zero: left to the Python suite's comparison with ml_dtypes.
                } else if let Some(p) = nearest_pattern(d, &values, m) {
                    let v = Scalar::from_bytes(d, &p.to_le_bytes()[..d.size()]).unwrap().to_f64();
                    prop_assert_eq!(got, Scalar::from_f64(d, sign(v)).unwrap(), "{} {}", if neg { "-" } else { "+" }, m);
                }
            }
            d => {
                // What std's checked conversions say fits, and its bytes.
                let v = i128::try_from(m).ok().map(|m| if neg { -m } else { m });
                let want: Option<Vec<u8>> = v.and_then(|v| match d {
                    DType::I8 => i8::try_from(v).ok().map(|x| x.to_le_bytes().to_vec()),
                    DType::U16 => u16::try_from(v).ok().map(|x| x.to_le_bytes().to_vec()),
                    DType::I64 => i64::try_from(v).ok().map(|x| x.to_le_bytes().to_vec()),
                    _ => u64::try_from(v).ok().map(|x| x.to_le_bytes().to_vec()),
                });
                match (got, want) {
                    (Ok(s), Some(w)) => prop_assert_eq!(s.bytes(), &w[..]),
                    (Err(e), None) => prop_assert_eq!(e.code(), blobcore::Error::OutOfRange(String::new()).code()),
                    (got, want) => prop_assert!(false, "{m} into {d:?}: {got:?}, want {want:?}"),
                }
            }
        }
    }
}

/// A float format's fields, for the bit-level oracle below (written from
/// the formats' definitions, not from blobcore's conversion code).
struct Format {
    dtype: DType,
    ebits: u32,
    mbits: u32,
    /// IEEE-style: the all-ones exponent holds the infinities and NaNs;
    /// otherwise (float8_e4m3fn) only the all-ones pattern is NaN and
    /// there is no infinity.
    ieee: bool,
}

const NARROW: [Format; 4] = [
    Format { dtype: DType::F16, ebits: 5, mbits: 10, ieee: true },
    Format { dtype: DType::BF16, ebits: 8, mbits: 7, ieee: true },
    Format { dtype: DType::F8E5M2, ebits: 5, mbits: 2, ieee: true },
    Format { dtype: DType::F8E4M3Fn, ebits: 4, mbits: 3, ieee: false },
];

impl Format {
    fn sign_bit(&self) -> u16 {
        1 << (self.ebits + self.mbits)
    }

    /// The value of a non-negative pattern (None for NaN and infinity).
    fn value(&self, p: u16) -> Option<f64> {
        let (emask, mmask) = ((1u16 << self.ebits) - 1, (1u16 << self.mbits) - 1);
        let (e, m) = ((p >> self.mbits) & emask, p & mmask);
        let bias = (1i32 << (self.ebits - 1)) - 1;
        if e == emask && (self.ieee || m == mmask) {
            return None;
        }
        // Powers of two times a small integer: exact in f64.
        let (int, exp) = if e == 0 { (m as f64, 1 - bias) } else { ((m | (mmask + 1)) as f64, e as i32 - bias) };
        Some(int * 2f64.powi(exp - self.mbits as i32))
    }

    /// Every finite non-negative value with its pattern, increasing.
    fn values(&self) -> Vec<(f64, u16)> {
        (0..self.sign_bit()).filter_map(|p| self.value(p).map(|v| (v, p))).collect()
    }
}

/// What a cast of `x` must give, by exact comparison with the midpoints
/// of neighbouring values (each exact in f64: at most 12 significant
/// bits): the nearest value, ties to the even pattern; past the largest
/// finite value (rounding towards a value one step above it) infinity, or
/// NaN where the format has none; the sign kept, NaN kept NaN. `Err(neg)`
/// is a NaN of that sign.
fn exactly_rounded(f: &Format, values: &[(f64, u16)], x: f64) -> Result<u16, bool> {
    let sign = if x.is_sign_negative() { f.sign_bit() } else { 0 };
    if x.is_nan() {
        return Err(sign != 0);
    }
    let a = x.abs();
    let (max, max_p) = values[values.len() - 1];
    // One step past the largest value, in its binade: where overflow lies.
    let over = (max + (max - values[values.len() - 2].0), max_p + 1);
    let i = values.partition_point(|v| v.0 <= a);
    let (lo, hi) = (values[i - 1], values.get(i).copied().unwrap_or(over));
    let p = if a == lo.0 {
        lo.1
    } else if a >= over.0 {
        over.1
    } else {
        let mid = lo.0 + (hi.0 - lo.0) / 2.0;
        if a < mid || (a == mid && lo.1 % 2 == 0) { lo.1 } else { hi.1 }
    };
    if p == over.1 {
        return if f.ieee { Ok(sign | ((1 << f.ebits) - 1) << f.mbits) } else { Err(sign != 0) };
    }
    Ok(sign | p)
}

/// The values a float64 blob holds for the cast test: any bit pattern, the
/// formats' edges, and values at or one float64 step from a midpoint
/// between two neighbours of the target format (where going through
/// float32 rounds twice).
fn float64_for(f: &'static Format) -> impl Strategy<Value = f64> {
    let values = f.values();
    let n = values.len();
    prop_oneof![
        any::<u64>().prop_map(f64::from_bits),
        prop::sample::select(vec![0.0, -0.0, 1.0, 65504.0, 65520.0, 448.0, 464.0, 57344.0, 61440.0, 3.3895e38, 3.4e38, 5.96e-8, 1e-45, f64::MAX, f64::MIN_POSITIVE, f64::INFINITY]),
        (0..n - 1, -1i64..=1, any::<bool>()).prop_map(move |(i, nudge, neg)| {
            let mid = values[i].0 + (values[i + 1].0 - values[i].0) / 2.0;
            let v = if mid == 0.0 { mid } else { f64::from_bits((mid.to_bits() as i64 + nudge) as u64) };
            if neg { -v } else { v }
        }),
    ]
}

/// A DLPack tensor of another producer over `data` (kept in the box with
/// it): `step` elements apart, from the first one (a negative step walks
/// backwards from the last); freed by its deleter.
fn foreign_tensor(data: Vec<f64>, step: i64) -> *mut blobcore::dlpack::DLManagedTensorVersioned {
    use blobcore::dlpack::*;
    #[repr(C)]
    struct Foreign {
        managed: DLManagedTensorVersioned,
        data: Vec<f64>,
        shape: [i64; 1],
        strides: [i64; 1],
    }
    unsafe extern "C" fn free(m: *mut DLManagedTensorVersioned) {
        // SAFETY: `m` is the first field of a leaked `Foreign` box.
        drop(unsafe { Box::from_raw(m as *mut Foreign) });
    }
    let len = data.len() as i64;
    let n = (len + step.abs() - 1) / step.abs();
    let dl_tensor = DLTensor {
        data: std::ptr::null_mut(),
        device: DLDevice { device_type: 1, device_id: 0 },
        ndim: 1,
        dtype: dl_dtype(DType::F64),
        shape: std::ptr::null_mut(),
        strides: std::ptr::null_mut(),
        byte_offset: 0,
    };
    let managed = DLManagedTensorVersioned { version: DLPackVersion { major: 1, minor: 0 }, manager_ctx: std::ptr::null_mut(), deleter: Some(free), flags: 0, dl_tensor };
    let raw = Box::into_raw(Box::new(Foreign { managed, data, shape: [n], strides: [step] }));
    // SAFETY: the live box just leaked; its fields do not move.
    let f = unsafe { &mut *raw };
    f.managed.dl_tensor.data = f.data.as_mut_ptr() as *mut std::ffi::c_void;
    f.managed.dl_tensor.byte_offset = if step < 0 { 8 * (len - 1) as u64 } else { 0 };
    (f.managed.dl_tensor.shape, f.managed.dl_tensor.strides) = (f.shape.as_mut_ptr(), f.strides.as_mut_ptr());
    raw as *mut DLManagedTensorVersioned
}

/// The bit pattern of every element of a 1-D blob of a 1- or 2-byte dtype.
fn patterns(b: &Blob) -> Vec<u16> {
    (0..b.dims()[0]).map(|i| {
        let s = b.get_element(&[i as i64]).unwrap();
        s.bytes().iter().rev().fold(0u16, |acc, &x| acc << 8 | x as u16)
    }).collect()
}

fn float64_cast_case(f: &'static Format, values: Vec<f64>, door: u8) {
    let e = common::engine();
    let n = values.len();
    // `values` as a float64 blob reached through `door`, every way the
    // same memory can arrive: blobcore's own blob, blob_wrap's door (a
    // blob over memory lent by someone else), a DLPack tensor of another
    // producer (dense: shared; every other element, backwards: copied),
    // a reversed stepped view of a larger blob, and its DLPack round trip.
    let src = match door {
        0 => Blob::from_slice(&e, &[n], &values).unwrap(),
        1 => wrapped_alias(&Blob::from_slice(&e, &[n], &values).unwrap()),
        2 | 3 => {
            let step: i64 = if door == 2 { 1 } else { -2 };
            let mut data = vec![f64::NAN; n * step.unsigned_abs() as usize];
            for (i, &v) in values.iter().enumerate() {
                let at = if step > 0 { i } else { data.len() - 1 - 2 * i };
                data[at] = v;
            }
            // SAFETY: a live tensor over its own boxed data, handed over.
            unsafe { Blob::from_dlpack(&e, foreign_tensor(data, step), None) }.unwrap()
        }
        _ => {
            // values[i] at 2 * (n - 1 - i) + 1 of a blob of 2n: [::-2] of it
            // from the end reads them in order.
            let mut big = vec![-1.5f64; 2 * n];
            for (i, &v) in values.iter().enumerate() {
                big[2 * (n - 1 - i) + 1] = v;
            }
            let whole = Blob::from_slice(&e, &[2 * n], &big).unwrap();
            let r = blobcore::Index::Range { start: None, stop: None, step: Some(-2) };
            let view = whole.index(&[r]).unwrap();
            if door == 4 { view } else {
                let t = view.to_dlpack(0).unwrap();
                // SAFETY: blobcore's own live export, handed over once.
                unsafe { Blob::from_dlpack(&e, t.as_ptr(), None) }.unwrap()
            }
        }
    };
    assert_eq!(src.to_vec::<f64>().unwrap().iter().map(|v| v.to_bits()).collect::<Vec<_>>(), values.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
    let table = f.values();
    let want: Vec<Result<u16, bool>> = values.iter().map(|&x| exactly_rounded(f, &table, x)).collect();
    let nan = |p: u16| f.value(p & !f.sign_bit()).is_none() && (!f.ieee || p & ((1 << f.mbits) - 1) != 0);
    let is = |g: u16, w: Result<u16, bool>| match w {
        Ok(p) => g == p,
        Err(neg) => nan(g) && (g & f.sign_bit() != 0) == neg,
    };
    let agrees = |got: &[u16]| got.len() == want.len() && got.iter().zip(&want).all(|(&g, &w)| is(g, w));
    let cast = patterns(&src.cast(f.dtype).unwrap());
    assert!(agrees(&cast), "{:?} door {door}: {values:?} -> {cast:x?}, want {want:x?}", f.dtype);
    // One element at a time through a scalar, and a fill of a reversed view.
    let one: Vec<u16> = values.iter().map(|&x| {
        let s = blobcore::Scalar::from_f64(f.dtype, x).unwrap();
        s.bytes().iter().rev().fold(0u16, |acc, &b| acc << 8 | b as u16)
    }).collect();
    assert!(agrees(&one), "{:?} scalars: {values:?} -> {one:x?}", f.dtype);
    let dst = Blob::tensor(&e, f.dtype, &[2]).unwrap();
    dst.reversed_view().unwrap().fill(values[0]).unwrap();
    let filled = patterns(&dst);
    assert!(filled.iter().all(|&g| is(g, want[0])), "{:?} fill {}: {filled:x?}, want {:x?}", f.dtype, values[0], want[0]);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, rng_seed: proptest::test_runner::RngSeed::Fixed(71), ..ProptestConfig::default() })]

    /// float64 into float16, bfloat16 and the two signed float8 types
    /// rounds once, to the exactly rounded value (a bit-level oracle over
    /// the formats' definitions), whichever door the float64 memory came
    /// in by (see `float64_cast_case`), for `cast`, scalars and fills.
    #[test]
    fn float64_casts_round_once_through_every_door(
        (k, values) in (0usize..4).prop_flat_map(|k| (Just(k), prop::collection::vec(float64_for(&NARROW[k]), 1..24))),
        door in 0u8..6,
    ) {
        float64_cast_case(&NARROW[k], values, door);
    }
}

/// What `scale` must give for the integer `x`: NumPy's float64
/// `trunc(x * factor)`, clamped to `[min, max]`, while float64 holds `x`
/// (|x| <= 2^53); beyond, `trunc(x · factor)` exactly, by another route
/// than the core's shifts: the factor doubled until it is an integer `num`
/// (`factor = num / 2^k`), then an i128 product and division (which
/// truncates toward zero). A non-finite factor gives the float64
/// product's saturation (NaN: 0).
fn scaled_by_division(x: i128, factor: f64, min: i128, max: i128) -> i128 {
    let clamp = |v: i128| v.clamp(min, max);
    let saturated = |positive: bool| if positive { max } else { min };
    if !factor.is_finite() || x.unsigned_abs() <= 1 << 53 {
        let p = (x as f64 * factor).trunc();
        return if p.is_nan() { 0 } else if p >= max as f64 { max } else if p <= min as f64 { min } else { p as i128 };
    }
    if factor == 0.0 {
        return 0;
    }
    let positive = (x > 0) == (factor > 0.0);
    if factor.abs() >= 2f64.powi(64) {
        return saturated(positive);
    }
    let (mut f, mut k) = (factor, 0u32);
    while f.fract() != 0.0 {
        f *= 2.0;
        k += 1;
    }
    let Some(product) = x.checked_mul(f as i128) else { return saturated(positive) };
    clamp(if k >= 127 { 0 } else { product / (1i128 << k) })
}

fn integer_scale_case<T: Element + Bounds + Into<i128> + TryFrom<i128>>(raw: &[u64], factor: f64, reversed: bool) {
    let (min, max) = (T::MIN_I128, T::MAX_I128);
    let span = (max - min) as u128 + 1;
    // Values spread over the whole range, some next to its ends and to 2^53.
    let vals: Vec<T> = raw
        .iter()
        .map(|&r| {
            let v = match r % 4 {
                0 => min + (r as u128 % span.min(1 << 64)) as i128,
                1 => max - (r >> 2) as i128 % 4,
                2 => ((1i128 << 53) + (r >> 2) as i128 % 5 - 2).clamp(min, max),
                _ => (min + (r >> 2) as i128 % 4).min(max),
            };
            T::try_from(v.clamp(min, max)).ok().unwrap()
        })
        .collect();
    let b = Blob::from_slice(&common::engine(), &[vals.len()], &vals).unwrap();
    let target = if reversed { b.reversed_view().unwrap() } else { b.clone() };
    target.scale(factor).unwrap();
    let got = b.to_vec::<T>().unwrap();
    for (v, g) in vals.iter().zip(&got) {
        let (v, g): (i128, i128) = ((*v).into(), (*g).into());
        assert_eq!(g, scaled_by_division(v, factor, min, max), "{:?}: {v} x {factor:e}", T::DTYPE);
    }
}

/// The integer dtypes' bounds, for the scale test.
trait Bounds {
    const MIN_I128: i128;
    const MAX_I128: i128;
}
macro_rules! bounds {
    ($($t:ty),*) => {$(impl Bounds for $t { const MIN_I128: i128 = <$t>::MIN as i128; const MAX_I128: i128 = <$t>::MAX as i128; })*};
}
bounds!(i8, u8, i16, u16, i32, u32, i64, u64);

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, rng_seed: proptest::test_runner::RngSeed::Fixed(71), ..ProptestConfig::default() })]

    /// `scale` on every integer dtype is NumPy's float64 product where
    /// float64 holds the value, and the exact product past 2^53 (int64 and
    /// uint64 keep their low bits), truncated toward zero and saturated,
    /// against an i128 division oracle; on a reversed view too.
    #[test]
    fn integer_scale_is_the_exact_truncated_product(
        raw in prop::collection::vec(any::<u64>(), 1..20),
        factor in prop_oneof![
            any::<u64>().prop_map(f64::from_bits),
            prop::sample::select(vec![1.0, -1.0, 0.5, -0.5, 2.0, -3.25, 0.1, 1.0 / 3.0, 2.0 / 3.0, 1e-300, 1e300, 0.0, -0.0, f64::INFINITY, f64::NAN, 9007199254740993.0]),
            (any::<i32>(), 0i32..80).prop_map(|(n, k)| n as f64 / 2f64.powi(k)),
            (1u64..1 << 53, -1i64..=1).prop_map(|(d, nudge)| f64::from_bits(((1.0 / d as f64).to_bits() as i64 + nudge) as u64)),
        ],
        dtype in 0u8..8,
        reversed in any::<bool>(),
    ) {
        match dtype {
            0 => integer_scale_case::<i8>(&raw, factor, reversed),
            1 => integer_scale_case::<u8>(&raw, factor, reversed),
            2 => integer_scale_case::<i16>(&raw, factor, reversed),
            3 => integer_scale_case::<u16>(&raw, factor, reversed),
            4 => integer_scale_case::<i32>(&raw, factor, reversed),
            5 => integer_scale_case::<u32>(&raw, factor, reversed),
            6 => integer_scale_case::<i64>(&raw, factor, reversed),
            _ => integer_scale_case::<u64>(&raw, factor, reversed),
        }
    }
}

/// `scale` of every int8 and uint8 value (the whole domain) by factors
/// around the tricky cases, through blob_wrap's door (a blob over lent
/// memory) and a reversed view of it, against the division oracle.
#[test]
fn integer_scale_of_every_8_bit_value() {
    fn all<T: Element + Bounds + Into<i128> + TryFrom<i128>>() {
        let vals: Vec<T> = (T::MIN_I128..=T::MAX_I128).map(|v| T::try_from(v).ok().unwrap()).collect();
        let third = 1.0f64 / 3.0;
        for factor in [1.0, -1.0, 0.5, -0.5, third, -third, f64::from_bits(third.to_bits() + 1), 0.1, 1.5, 255.0, 1e-300, f64::INFINITY, f64::NAN, -0.0] {
            for reversed in [false, true] {
                let wrapped = wrapped_alias(&Blob::from_slice(&common::engine(), &[vals.len()], &vals).unwrap());
                let target = if reversed { wrapped.reversed_view().unwrap() } else { wrapped.clone() };
                target.scale(factor).unwrap();
                for (v, g) in vals.iter().zip(wrapped.to_vec::<T>().unwrap()) {
                    let (v, g): (i128, i128) = ((*v).into(), g.into());
                    assert_eq!(g, scaled_by_division(v, factor, T::MIN_I128, T::MAX_I128), "{:?}: {v} x {factor:e}", T::DTYPE);
                }
            }
        }
    }
    all::<i8>();
    all::<u8>();
}

/// A splitmix64 stream: the bulk values of the large in-place tests, drawn
/// from one proptest seed (a vector of a million elements would be slow to
/// generate and to shrink).
fn splitmix(seed: u64, n: usize) -> Vec<u64> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE5_E9B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        })
        .collect()
}

/// A dense view of `vals` starting `skip` elements into its blob, so that
/// the threads' tasks and the prefetched pieces start off any alignment.
fn skewed<T: Element>(vals: &[T], skip: usize) -> (Blob, Blob) {
    let mut all = vec![vals[0]; skip];
    all.extend_from_slice(vals);
    let b = Blob::from_slice(&common::engine(), &[all.len()], &all).unwrap();
    let key = [blobcore::Index::Range { start: Some(skip as i64), stop: None, step: None }];
    let v = b.index(&key).unwrap();
    assert!(v.is_dense());
    (b, v)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 10, rng_seed: proptest::test_runner::RngSeed::Fixed(78), ..ProptestConfig::default() })]

    /// In-place `scale`, `a += a` and `a += b` on blobs past the parallel
    /// threshold (the path that splits them into tasks and prefetched
    /// pieces), starting at any element: every element is the scalar rule
    /// (the division oracle for int64, IEEE arithmetic for f32), and the
    /// elements before the view are untouched. int64 values come in runs
    /// of random length that float64 holds or does not, so the vector
    /// path and its element-by-element fallback meet inside pieces.
    #[test]
    fn large_in_place_ops_match_the_scalar_rule(
        seed in any::<u64>(),
        len in (1usize << 17)..(3 << 17),
        skip in 0usize..9,
        factor in prop::sample::select(vec![1.0, -1.0, 0.5, 3.0, -0.75, 1.0 / 3.0, 1e-3]),
    ) {
        let bits = splitmix(seed, len);
        // int64: runs of 1 to 300 elements, small or past 2^53.
        let mut big = false;
        let mut left = 0u64;
        let vals: Vec<i64> = bits
            .iter()
            .map(|&r| {
                if left == 0 {
                    big = r & 1 == 1;
                    left = 1 + (r >> 1) % 300;
                }
                left -= 1;
                if big { r as i64 } else { (r as i64) >> 14 }
            })
            .collect();
        let (b, v) = skewed(&vals, skip);
        v.scale(factor).unwrap();
        let got = b.to_vec::<i64>().unwrap();
        prop_assert!(got[..skip].iter().all(|&g| g == vals[0]));
        for (x, g) in vals.iter().zip(&got[skip..]) {
            prop_assert_eq!(*g as i128, scaled_by_division(*x as i128, factor, i64::MIN as i128, i64::MAX as i128), "{} x {:e}", x, factor);
        }
        // f32: any finite value of moderate size.
        let xs: Vec<f32> = bits.iter().map(|&r| ((r >> 40) as f32 - (1u64 << 23) as f32) / 1024.0).collect();
        let ys: Vec<f32> = bits.iter().map(|&r| (r as u32 >> 8) as f32 / 7.0).collect();
        let (b, v) = skewed(&xs, skip);
        v.scale(factor).unwrap();
        let got = b.to_vec::<f32>().unwrap();
        for (x, g) in xs.iter().zip(&got[skip..]) {
            prop_assert_eq!(g.to_bits(), (x * factor as f32).to_bits());
        }
        let (b, v) = skewed(&xs, skip);
        v.add(&v).unwrap();
        let got = b.to_vec::<f32>().unwrap();
        for (x, g) in xs.iter().zip(&got[skip..]) {
            prop_assert_eq!(g.to_bits(), (x + x).to_bits());
        }
        let (b, v) = skewed(&xs, skip);
        let (_, w) = skewed(&ys, (skip * 5) % 9);
        v.add(&w).unwrap();
        let got = b.to_vec::<f32>().unwrap();
        prop_assert!(got[..skip].iter().all(|&g| g == xs[0]));
        for ((x, y), g) in xs.iter().zip(&ys).zip(&got[skip..]) {
            prop_assert_eq!(g.to_bits(), (x + y).to_bits());
        }
    }
}
