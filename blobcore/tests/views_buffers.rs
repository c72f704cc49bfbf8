//! Windows, slices, LIFO buffers, guards, the busy rule, diffs and sharing.

mod common;

use blobcore::{Blob, BlobDim, DType, Head};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

fn ramp(dims: &[usize]) -> Blob {
    let n: usize = dims.iter().product();
    let v: Vec<f32> = (0..n).map(|i| i as f32).collect();
    Blob::from_slice(&common::engine(), dims, &v).unwrap()
}

#[test]
fn neoml_constructors_fill_named_dims() {
    let e = common::engine();
    let d = Blob::data(&e, DType::F32, 2, 3, 4).unwrap();
    assert_eq!(d.dims(), [2, 3, 1, 1, 1, 1, 4]);
    let l = Blob::list(&e, DType::I32, 2, 3, 5, 4).unwrap();
    assert_eq!(l.dims(), [2, 3, 5, 1, 1, 1, 4]);
    let i2 = Blob::image2d(&e, DType::F32, 1, 2, 6, 7, 3).unwrap();
    assert_eq!(i2.dims(), [1, 2, 1, 6, 7, 1, 3]);
    assert_eq!(i2.geometrical_size().unwrap(), 42);
    assert_eq!(i2.object_size().unwrap(), 126);
    let i3 = Blob::image3d(&e, DType::F32, 1, 2, 6, 7, 8, 3).unwrap();
    assert_eq!(i3.dims(), [1, 2, 1, 6, 7, 8, 3]);
    assert_eq!(i3.named_dim(BlobDim::Depth).unwrap(), 8);
    let v = Blob::vector(&e, DType::F64, 9).unwrap();
    assert_eq!(v.named_dim(BlobDim::BatchLength).unwrap(), 9);
    assert_eq!(v.named_dim(BlobDim::Channels).unwrap(), 1);
    let m = Blob::matrix(&e, DType::U8, 4, 5).unwrap();
    assert_eq!(m.named_dim(BlobDim::BatchWidth).unwrap(), 5);
    let s = Blob::tensor(&e, DType::F32, &[]).unwrap();
    assert_eq!((s.rank(), s.count()), (0, 1));
    let empty = Blob::tensor(&e, DType::F32, &[0, 5]).unwrap();
    assert_eq!(empty.count(), 0);
    assert_eq!(empty.asum().unwrap(), 0.0);
    assert_eq!(Blob::tensor(&e, DType::F32, &[1; 33]).unwrap_err().code(), 4);
    assert_eq!(Blob::tensor(&e, DType::F64, &[1 << 61, 4]).unwrap_err().code(), 4);
    assert_eq!(Blob::tensor(&e, DType::F32, &[1; 9]).unwrap().object_count().unwrap_err().code(), 4);
}

#[test]
fn untouched_blob_reads_as_zeros_and_allocates_lazily() {
    let b = Blob::tensor(&common::engine(), DType::F32, &[1000, 1000]).unwrap();
    assert_eq!(b.head(), Head::Uninitialized);
    assert!(!b.is_allocated());
    let c = b.copy().unwrap(); // copying reads the source: it gets allocated (as zeros)
    assert_eq!(c.asum().unwrap(), 0.0);
    // On a GPU engine the kernel allocated the device side (Caffe's
    // gpu_data() of an uninitialized SyncedMemory: HEAD_AT_GPU).
    let side = if b.engine().is_gpu() { Head::HeadAtGpu } else { Head::HeadAtCpu };
    assert_eq!(b.head(), side);
}

#[test]
fn windows_follow_neoml_and_outlive_their_parent() {
    let p = ramp(&[5, 2, 3]);
    let w = p.window(2).unwrap();
    assert_eq!(w.dims(), [2, 2, 3]);
    assert!(w.parent().unwrap().ptr_eq(&p));
    assert!(w.owner().ptr_eq(&p));
    assert!(p.parent().is_none());
    assert!(p.owner().ptr_eq(&p));
    w.set_parent_pos(3).unwrap();
    assert_eq!(w.to_vec::<f32>().unwrap(), (18..30).map(|x| x as f32).collect::<Vec<_>>());
    assert_eq!(w.shift_parent_pos(1).unwrap_err().code(), 6);
    w.shift_parent_pos(-3).unwrap();
    assert_eq!(w.parent_pos().unwrap(), 0);
    assert_eq!(w.shift_parent_pos(i64::MIN).unwrap_err().code(), 6);
    assert_eq!(w.shift_parent_pos(-1).unwrap_err().code(), 6);
    // Window of a window: owner is the root.
    let ww = w.window(1).unwrap();
    assert!(ww.owner().ptr_eq(&p));
    assert!(ww.parent().unwrap().ptr_eq(&w));
    // Writing through the window lands in the parent.
    w.set_parent_pos(1).unwrap();
    w.fill(-1.0).unwrap();
    let v = p.to_vec::<f32>().unwrap();
    assert!(v[6..18].iter().all(|&x| x == -1.0));
    assert_eq!(v[5], 5.0);
    assert_eq!(v[18], 18.0);
    // The parent handle goes; the window keeps the memory.
    drop(p);
    assert_eq!(w.asum().unwrap(), 12.0);
    assert!(w.parent().is_some());
    // Bad windows.
    let q = ramp(&[3, 2]);
    assert_eq!(q.window(0).unwrap_err().code(), 6);
    assert_eq!(q.window(4).unwrap_err().code(), 6);
    assert_eq!(ramp(&[]).window(1).unwrap_err().code(), 4);
    assert_eq!(q.parent_pos().unwrap_err().code(), 3);
    assert_eq!(q.set_parent_pos(0).unwrap_err().code(), 3);
}

#[test]
fn slices_follow_serrano() {
    let t = ramp(&[3, 2, 2]);
    let s1 = t.slice(&[1]).unwrap();
    assert_eq!(s1.dims(), [2, 2]);
    assert_eq!(s1.to_vec::<f32>().unwrap(), [4.0, 5.0, 6.0, 7.0]);
    let s2 = t.slice(&[1, 1]).unwrap();
    assert_eq!(s2.to_vec::<f32>().unwrap(), [6.0, 7.0]);
    let s3 = s1.slice(&[0]).unwrap();
    assert_eq!(s3.to_vec::<f32>().unwrap(), [4.0, 5.0]);
    assert!(s3.owner().ptr_eq(&t));
    assert_eq!(s3.slice_index().unwrap(), [0]);
    let scalar = t.slice(&[2, 1, 0]).unwrap();
    assert_eq!((scalar.rank(), scalar.to_vec::<f32>().unwrap()), (0, vec![10.0]));
    assert_eq!(t.slice(&[3]).unwrap_err().code(), 6);
    assert_eq!(t.slice(&[0, 0, 0, 0]).unwrap_err().code(), 6);
    drop(t);
    s2.scale(2.0).unwrap();
    assert_eq!(s1.to_vec::<f32>().unwrap(), [4.0, 5.0, 12.0, 14.0]);
}

#[test]
fn lifo_buffers() {
    let b = ramp(&[10]);
    let p1 = b.get_buffer(0, 4, true).unwrap();
    let p2 = b.get_buffer(2, 8, true).unwrap();
    assert_eq!(b.held_buffers(), 2);
    // SAFETY: p2 points at 8 f32 elements of b, held until released below.
    unsafe { *(p2.as_ptr() as *mut f32) = 42.0 };
    let e = b.release_buffer(p1.as_ptr(), true).unwrap_err();
    assert_eq!(e.code(), 7);
    assert!(e.message().contains("not the most recent"));
    assert_eq!(b.held_buffers(), 2, "a LIFO violation changes nothing");
    b.release_buffer(p2.as_ptr(), true).unwrap();
    b.release_buffer(p1.as_ptr(), false).unwrap();
    assert_eq!(b.release_buffer(p1.as_ptr(), false).unwrap_err().code(), 7);
    assert_eq!(b.to_vec::<f32>().unwrap()[2], 42.0);
    assert_eq!(b.get_buffer(8, 3, true).unwrap_err().code(), 6);
    assert_eq!(b.get_buffer(-1, 3, true).unwrap_err().code(), 6);
    assert_eq!(b.get_buffer(0, -3, true).unwrap_err().code(), 6);
    assert_eq!(b.get_buffer(i64::MAX, i64::MAX, true).unwrap_err().code(), 6);
    let other = ramp(&[10]);
    let q = other.get_buffer(0, 1, false).unwrap();
    assert_eq!(b.release_buffer(q.as_ptr(), false).unwrap_err().code(), 7);
    other.release_buffer(q.as_ptr(), false).unwrap();
    assert_eq!(b.held_buffers(), 0);
}

#[test]
fn guards_forbid_aliasing_mutable_access_through_any_view() {
    let b = ramp(&[4, 3]);
    let w = b.window(2).unwrap();
    {
        let mut g = w.write::<f32>().unwrap();
        g[0] = 100.0;
        // The parent overlaps the window: no read, no write, no op.
        assert_eq!(b.read::<f32>().unwrap_err().code(), 8);
        assert_eq!(b.fill(0.0).unwrap_err().code(), 8);
        assert_eq!(b.asum().unwrap_err().code(), 8);
        // A disjoint part of the parent is fine.
        let s = b.slice(&[3]).unwrap();
        s.fill(7.0).unwrap();
        assert_eq!(s.read::<f32>().unwrap().to_vec(), [7.0; 3]);
        // The guard's array view is shaped like the window.
        assert_eq!(g.array_mut().shape(), &[2, 3]);
    }
    let r1 = b.read::<f32>().unwrap();
    let r2 = w.view::<f32>().unwrap();
    assert_eq!(r1[0], 100.0);
    assert_eq!(r2.array()[[0, 0]], 100.0);
    assert_eq!(w.view_mut::<f32>().unwrap_err().code(), 8);
    drop((r1, r2));
    assert_eq!(b.read::<i32>().unwrap_err().code(), 5);
    let r = b.buffer_read::<f32>(3, 3).unwrap();
    let wr = b.buffer_write::<f32>(6, 3).unwrap();
    assert_eq!(b.buffer_read_write::<f32>(5, 2).unwrap_err().code(), 8);
    assert_eq!(r.len(), 3);
    drop(r);
    drop(wr);
}

#[test]
fn busy_rule_for_reallocation() {
    let b = ramp(&[4]);
    // Shrinking and growing back within capacity keeps the data.
    b.reshape(&[2]).unwrap();
    b.reshape(&[2, 2]).unwrap();
    assert_eq!(b.to_vec::<f32>().unwrap(), [0.0, 1.0, 2.0, 3.0]);
    let w = b.window(1).unwrap();
    let e = b.reshape(&[10]).unwrap_err();
    assert_eq!(e.code(), 8);
    assert_eq!(b.dims(), [2, 2], "a refused reshape changes nothing");
    drop(w);
    let p = b.get_buffer(0, 1, false).unwrap();
    assert_eq!(b.reshape(&[10]).unwrap_err().code(), 8);
    b.release_buffer(p.as_ptr(), false).unwrap();
    let g = b.read::<f32>().unwrap();
    assert_eq!(b.reshape(&[10]).unwrap_err().code(), 8);
    drop(g);
    b.reshape(&[10]).unwrap();
    assert_eq!(b.capacity(), 10);
    assert_eq!(b.asum().unwrap(), 0.0, "new memory reads as zeros");
    // Views can only change dims at the same count.
    let v = b.slice(&[]).unwrap();
    v.reshape(&[2, 5]).unwrap();
    assert_eq!(v.reshape(&[4]).unwrap_err().code(), 3);
    assert_eq!(v.reinterpret(&[3, 3]).unwrap_err().code(), 4);
    v.reinterpret(&[5, 2]).unwrap();
}

#[test]
fn diff_follows_reshape_and_update_subtracts() {
    let b = ramp(&[2, 3]);
    assert!(b.diff_if_created().is_none());
    b.update().unwrap(); // no diff yet: nothing changes
    assert_eq!(b.asum().unwrap(), 15.0);
    let d = b.diff().unwrap();
    assert!(d.is_diff());
    assert_eq!(d.dims(), [2, 3]);
    d.fill(1.0).unwrap();
    b.update().unwrap();
    assert_eq!(b.to_vec::<f32>().unwrap(), [-1.0, 0.0, 1.0, 2.0, 3.0, 4.0]);
    b.reshape(&[3, 4]).unwrap();
    assert_eq!(d.dims(), [3, 4]);
    b.reinterpret(&[12]).unwrap();
    assert_eq!(d.dims(), [12]);
    assert_eq!(d.reshape(&[2]).unwrap_err().code(), 3);
    assert!(b.diff().unwrap().ptr_eq(&d));
}

#[test]
fn share_data_and_share_diff() {
    let a = ramp(&[2, 3]);
    let b = Blob::tensor(&common::engine(), DType::F32, &[3, 2]).unwrap();
    b.share_data(&a).unwrap();
    assert!(b.shares_memory(&a));
    a.fill(2.0).unwrap();
    assert_eq!(b.asum().unwrap(), 12.0);
    assert_eq!(a.reshape(&[10]).unwrap_err().code(), 8, "shared memory cannot be reallocated");
    let c = Blob::tensor(&common::engine(), DType::F32, &[7]).unwrap();
    assert_eq!(c.share_data(&a).unwrap_err().code(), 4);
    let i = Blob::tensor(&common::engine(), DType::I32, &[6]).unwrap();
    assert_eq!(i.share_data(&a).unwrap_err().code(), 5);
    b.share_diff(&a).unwrap();
    a.diff().unwrap().fill(1.0).unwrap();
    assert_eq!(b.diff().unwrap().asum().unwrap(), 6.0);
}

#[test]
fn copies_and_clones() {
    let a = ramp(&[2, 3]);
    let c = a.copy().unwrap();
    assert!(!c.shares_memory(&a));
    a.fill(0.0).unwrap();
    assert_eq!(c.asum().unwrap(), 15.0);
    let z = c.clone_zeroed().unwrap();
    assert_eq!((z.dims(), z.asum().unwrap()), (vec![2, 3], 0.0));
    let i = c.clone_as(DType::I8).unwrap();
    assert_eq!((i.dtype(), i.dims()), (DType::I8, vec![2, 3]));
    let mut out = [0f32; 6];
    c.copy_to_slice(&mut out).unwrap();
    assert_eq!(out, [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
    assert_eq!(c.copy_to_slice(&mut [0f32; 5]).unwrap_err().code(), 3);
    assert_eq!(c.copy_from_slice(&[0f32; 7]).unwrap_err().code(), 3);
    assert_eq!(c.copy_from_slice(&[0i32; 6]).unwrap_err().code(), 5);
    assert_eq!(c.copy_from_bytes(&[0u8; 23]).unwrap_err().code(), 3);
    let mut bytes = [0u8; 24];
    c.copy_to_bytes(&mut bytes).unwrap();
    assert_eq!(f32::from_ne_bytes(bytes[4..8].try_into().unwrap()), 1.0);
    assert_eq!(c.asum().unwrap(), 15.0, "failed copies changed nothing");
    // copy_from checks dims and dtype; self-copy is a no-op; overlapping
    // views copy as if the source were copied first (NumPy's rule).
    assert_eq!(a.copy_from(&ramp(&[3, 2])).unwrap_err().code(), 4);
    assert_eq!(a.copy_from(&i).unwrap_err().code(), 5);
    a.copy_from(&a).unwrap();
    let big = ramp(&[4, 2]);
    let w0 = big.window(2).unwrap();
    let w1 = big.window(2).unwrap();
    w1.set_parent_pos(1).unwrap();
    w0.copy_from(&w1).unwrap();
    assert_eq!(big.to_vec::<f32>().unwrap(), [2., 3., 4., 5., 4., 5., 6., 7.]);
    // Caffe CopyFrom with reshape.
    let r = Blob::tensor(&common::engine(), DType::F32, &[1]).unwrap();
    assert_eq!(r.copy_from_caffe(&c, false, false).unwrap_err().code(), 4);
    r.copy_from_caffe(&c, false, true).unwrap();
    assert_eq!(r.to_vec::<f32>().unwrap(), c.to_vec::<f32>().unwrap());
    c.diff().unwrap().fill(3.0).unwrap();
    r.copy_from_caffe(&c, true, false).unwrap();
    assert_eq!(r.diff().unwrap().asum().unwrap(), 18.0);
    // add of a blob to itself doubles it.
    c.add(&c).unwrap();
    assert_eq!(c.asum().unwrap(), 30.0);
}

#[test]
fn objects_fill_and_clear() {
    let b = Blob::list(&common::engine(), DType::I32, 1, 2, 2, 3).unwrap();
    b.fill(1.0).unwrap();
    b.fill_object(2, 5.0).unwrap();
    b.clear_object(0).unwrap();
    assert_eq!(b.to_vec::<i32>().unwrap(), [0, 0, 0, 1, 1, 1, 5, 5, 5, 1, 1, 1]);
    assert_eq!(b.fill_object(4, 1.0).unwrap_err().code(), 6);
    assert_eq!(b.clear_object(-1).unwrap_err().code(), 6);
}

#[test]
fn validation_errors_change_nothing() {
    let e = common::engine();
    let a = ramp(&[2, 3]);
    let b = ramp(&[2, 4]);
    let to = Blob::tensor(&e, DType::F32, &[4, 3]).unwrap();
    to.fill(9.0).unwrap();
    assert_eq!(Blob::merge(&[&a, &b], 0, &to).unwrap_err().code(), 4);
    assert_eq!(Blob::merge(&[&a, &a], 2, &to).unwrap_err().code(), 6);
    assert_eq!(Blob::merge(&[], 0, &to).unwrap_err().code(), 3);
    assert_eq!(Blob::merge(&[&a, &ramp(&[2, 3, 1])], 0, &to).unwrap_err().code(), 4);
    assert_eq!(Blob::merge(&[&a], 0, &to).unwrap_err().code(), 4);
    let ints = Blob::tensor(&e, DType::I32, &[2, 3]).unwrap();
    assert_eq!(Blob::merge(&[&a, &ints], 0, &to).unwrap_err().code(), 5);
    assert_eq!(to.asum().unwrap(), 108.0);
    let (p, q) = (a.clone_zeroed().unwrap(), a.clone_zeroed().unwrap());
    assert_eq!(Blob::split(&to, 0, &[&p, &p]).unwrap_err().code(), 3);
    Blob::split(&to, 0, &[&p, &q]).unwrap();
    assert_eq!(to.split_sizes(0, &[1, 2]).unwrap_err().code(), 4);
    assert_eq!(to.split_equal(0, 3).unwrap_err().code(), 4);
    assert_eq!(to.split_equal(0, 0).unwrap_err().code(), 4);
    // transposed checks axes and destination dims.
    assert_eq!(a.transposed(0, 2).unwrap_err().code(), 6);
    let bad = Blob::tensor(&e, DType::F32, &[2, 3]).unwrap();
    assert_eq!(bad.transpose_from(&a, 0, 1).unwrap_err().code(), 4);
    assert_eq!(a.transpose_from(&a, 0, 0).map(|_| ()), Ok(()));
    // merge_objects checks object positions and sizes.
    let o1 = Blob::data(&e, DType::F32, 1, 2, 3).unwrap();
    let o2 = Blob::data(&e, DType::F32, 1, 3, 3).unwrap();
    let oto = Blob::data(&e, DType::F32, 1, 2, 6).unwrap();
    assert_eq!(Blob::merge_objects(&[&o1, &o2], &oto).unwrap_err().code(), 4);
    assert_eq!(Blob::merge_objects(&[&o1, &o1, &o1], &oto).unwrap_err().code(), 4);
    Blob::merge_objects(&[&o1, &o1], &oto).unwrap();
    let deep = Blob::tensor(&e, DType::F32, &[1; 8]).unwrap();
    assert_eq!(Blob::merge_objects(&[&deep], &deep.clone_zeroed().unwrap()).unwrap_err().code(), 4);
}

#[test]
fn wrapped_memory_is_shared_and_released_once() {
    static RELEASED: AtomicUsize = AtomicUsize::new(0);
    let mut data: Vec<f32> = vec![1.0, 2.0, 3.0, 4.0];
    let ptr = std::ptr::NonNull::new(data.as_mut_ptr() as *mut u8).unwrap();
    let shape = blobcore::Shape::new(&[2, 2]).unwrap();
    // SAFETY: `data` outlives the blob and everything made from it below.
    let b = unsafe {
        Blob::wrap(&common::engine(), DType::F32, shape.clone(), ptr, 16, Some(Box::new(|| {
            RELEASED.fetch_add(1, Ordering::SeqCst);
        })))
    }
    .unwrap();
    let w = b.window(1).unwrap();
    b.scale(10.0).unwrap();
    drop(b);
    assert_eq!(RELEASED.load(Ordering::SeqCst), 0);
    assert_eq!(w.to_vec::<f32>().unwrap(), [10.0, 20.0]);
    drop(w);
    assert_eq!(RELEASED.load(Ordering::SeqCst), 1);
    assert_eq!(data, [10.0, 20.0, 30.0, 40.0]);
    // Too little memory or misalignment: an error, and the callback is not called.
    let calls = Arc::new(AtomicUsize::new(0));
    let c2 = Arc::clone(&calls);
    // SAFETY: rejected before the pointer is used.
    let e = unsafe {
        Blob::wrap(&common::engine(), DType::F32, shape.clone(), ptr, 15, Some(Box::new(move || {
            c2.fetch_add(1, Ordering::SeqCst);
        })))
    }
    .unwrap_err();
    assert_eq!(e.code(), 3);
    let odd = std::ptr::NonNull::new(unsafe { ptr.as_ptr().add(1) }).unwrap();
    // SAFETY: rejected before the pointer is used.
    let e = unsafe { Blob::wrap(&common::engine(), DType::F32, shape, odd, 15, None) }.unwrap_err();
    assert_eq!(e.code(), 3);
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

#[test]
fn threads_share_blobs_safely() {
    let b = Blob::tensor(&common::engine(), DType::I32, &[8, 1000]).unwrap();
    std::thread::scope(|s| {
        for t in 0..8 {
            let b = &b;
            s.spawn(move || {
                let w = b.window(1).unwrap();
                w.set_parent_pos(t).unwrap();
                for _ in 0..100 {
                    w.fill((t + 1) as f64).unwrap();
                }
            });
        }
    });
    assert_eq!(b.asum().unwrap(), (1..=8).map(|t| t as f64 * 1000.0).sum::<f64>());
}

#[test]
fn ndarray_round_trip() {
    let a = ndarray::Array::from_shape_fn((2, 3, 4), |(i, j, k)| (i * 100 + j * 10 + k) as i64).into_dyn();
    let b = Blob::from_array(a.clone()).unwrap();
    assert_eq!(b.dtype(), DType::I64);
    assert_eq!(b.to_array::<i64>().unwrap(), a);
    // Non-standard layouts are copied in logical order.
    let t = a.t().to_owned();
    let bt = Blob::from_array(a.t()).unwrap();
    assert_eq!(bt.to_array::<i64>().unwrap(), t);
    {
        let mut g = b.view_mut::<i64>().unwrap();
        g.array_mut()[[1, 2, 3]] = -1;
    }
    assert_eq!(b.view::<i64>().unwrap().array()[[1, 2, 3]], -1);
    assert_eq!(b.offset(&[1, 2, 3]).unwrap(), 23);
}

#[test]
fn busy_rule_holds_on_both_sides_of_the_small_blob_fast_path() {
    // Blobs up to 16 KiB are worked on under the storage lock, larger
    // ones through a registered borrow: both must respect live guards.
    for n in [8usize, 4096, 4097, 1 << 16] {
        let b = Blob::vector(&common::engine(), DType::F32, n).unwrap();
        assert_eq!(b.is_small(), n * 4 <= 16 << 10, "n = {n}");
        b.fill(1.0).unwrap();
        {
            let _g = b.buffer_write::<f32>(n as i64 - 1, 1).unwrap();
            assert_eq!(b.fill(2.0).unwrap_err().code(), 8, "n = {n}");
            assert_eq!(b.scale(2.0).unwrap_err().code(), 8, "n = {n}");
            assert_eq!(b.sumsq().unwrap_err().code(), 8, "n = {n}");
        }
        {
            let _r = b.buffer_read::<f32>(0, 1).unwrap();
            assert_eq!(b.fill(2.0).unwrap_err().code(), 8, "n = {n}");
            assert_eq!(b.asum().unwrap(), n as f64, "readers share with readers");
        }
        b.scale(3.0).unwrap();
        assert_eq!(b.asum().unwrap(), 3.0 * n as f64);
    }
}

/// A chain of a million views (`x = x[:]`, windows of windows, slices,
/// transposes: each view keeps the one it was made from) is freed in
/// constant stack: on a thread with a 256 KiB stack, where freeing the
/// chain recursively (about 150 bytes of stack per view) overflowed it.
/// Handles kept along the chain keep their part alive; the wrapped
/// memory is released once, after the last handle.
#[test]
fn a_chain_of_a_million_views_is_freed_without_recursion() {
    static RELEASED: AtomicUsize = AtomicUsize::new(0);
    let run = || {
        let e = common::engine();
        let mut data: Vec<f32> = (0..24).map(|i| i as f32).collect();
        let ptr = std::ptr::NonNull::new(data.as_mut_ptr() as *mut u8).unwrap();
        // SAFETY: `data` outlives every handle (all are dropped below,
        // before it), and the handles only read it.
        let root = unsafe {
            Blob::wrap(&e, DType::F32, blobcore::Shape::new(&[2, 3, 4]).unwrap(), ptr, 96, Some(Box::new(|| {
                RELEASED.fetch_add(1, Ordering::SeqCst);
            })))
        }
        .unwrap();
        let all = blobcore::Index::Range { start: None, stop: None, step: None };
        let mut x = root;
        let mut kept = Vec::new();
        for i in 0..1_000_000u32 {
            x = match i % 5 {
                0 | 1 => x.index(&[all]).unwrap(),
                2 => x.window(2).unwrap(),
                3 => x.slice(&[]).unwrap(),
                _ => x.permuted_view(&[0, 1, 2]).unwrap(),
            };
            if i % 250_000 == 7 {
                kept.push(x.clone());
            }
        }
        assert_eq!(x.to_vec::<f32>().unwrap(), data);
        let owner = x.owner();
        assert_eq!(owner.parent().map(|p| p.dims()), None);
        drop(owner);
        drop(x);
        // The kept handles still read the memory, and their own chains.
        for k in &kept {
            assert_eq!(k.to_vec::<f32>().unwrap(), data);
            assert!(k.parent().is_some());
        }
        assert_eq!(RELEASED.load(Ordering::SeqCst), 0, "the kept views hold the memory");
        drop(kept);
        assert_eq!(RELEASED.load(Ordering::SeqCst), 1, "the memory is released once, after the last handle");
        drop(data);
    };
    std::thread::Builder::new().stack_size(256 << 10).spawn(run).unwrap().join().expect("no overflow, no panic");
}
