//! Eight threads on shared and private blobs at once: windows, fills,
//! merges, splits, buffers, guards and drops. Bounded in iterations (and
//! by a watchdog in time); no crash, no deadlock, and the shared blob ends
//! exactly as a serial run leaves it. Conflicting access between threads
//! must be `Busy`, never a race. `make tsan` runs this under
//! ThreadSanitizer where a nightly toolchain with rust-src exists.

mod common;

use blobcore::{Blob, DType, Engine};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

const THREADS: usize = 8;
const ITERS: usize = 40;
const ROW: usize = 4096;

/// Runs `f` until it is not Busy: another thread's whole-blob read may
/// hold the memory for a moment, which is an answer, not a failure.
fn retry<T>(mut f: impl FnMut() -> blobcore::Result<T>) -> T {
    let t0 = Instant::now();
    for attempt in 0u64.. {
        match f() {
            // A whole-blob operation on a GPU engine or a debug build can
            // hold the memory for a while: yield, then sleep, for a minute.
            Err(e) if e.code() == 8 && t0.elapsed() < Duration::from_secs(60) => {
                if attempt < 10_000 {
                    std::thread::yield_now()
                } else {
                    std::thread::sleep(Duration::from_micros(100))
                }
            }
            r => return r.unwrap(),
        }
    }
    unreachable!()
}

/// One thread's work on row `t` of `shared` and on blobs of its own.
/// Returns the number of Busy answers it got from contended reads.
fn work(e: &Engine, shared: &Blob, t: usize) -> usize {
    let mut busy = 0;
    let row = shared.window(1).unwrap();
    row.set_parent_pos(t as i64).unwrap();
    for i in 0..ITERS {
        // Private blobs: create, merge, split, free.
        let a = Blob::tensor(e, DType::F32, &[2, ROW / 2]).unwrap();
        let b = Blob::tensor(e, DType::F32, &[2, ROW / 2]).unwrap();
        a.fill((t * 1000 + i) as f64).unwrap();
        b.fill(1.0).unwrap();
        let m = Blob::merged(&[&a, &b], 1).unwrap();
        let parts = m.split_sizes(1, &[ROW / 2, ROW / 2]).unwrap();
        assert_eq!(parts[1].asum().unwrap(), ROW as f64);
        drop((a, b, parts));
        // The shared blob: this thread's row only.
        retry(|| row.fill(i as f64));
        retry(|| row.scale(2.0));
        {
            let mut g = retry(|| row.buffer_write::<f32>(0, 4));
            g[0] = t as f32;
        }
        {
            let mut g = retry(|| row.buffer_write::<f32>(5, 1));
            g[0] = -(t as f32);
        }
        // A raw buffer is held and released (LIFO) but not written: raw
        // buffers are plain memory, outside the borrow table, so writing
        // one while other threads read the blob would be the caller's race.
        let p = retry(|| row.get_buffer(4, 2, true));
        row.release_buffer(p.as_ptr(), false).unwrap();
        // Contended reads of the whole shared blob: a result or Busy.
        match shared.asum() {
            Ok(_) => {}
            Err(err) if err.code() == 8 => busy += 1,
            Err(err) => panic!("thread {t}: {err}"),
        }
        let _ = shared.dims();
        let v = row.window(1);
        drop(v);
    }
    busy
}

/// What every row holds at the end, computed serially.
fn serial_rows(e: &Engine) -> Vec<f32> {
    let shared = Blob::tensor(e, DType::F32, &[THREADS, ROW]).unwrap();
    for t in 0..THREADS {
        work(e, &shared, t);
    }
    shared.to_vec::<f32>().unwrap()
}

#[test]
fn eight_threads_end_as_a_serial_run() {
    let e = common::engine();
    let shared = Blob::tensor(&e, DType::F32, &[THREADS, ROW]).unwrap();
    let start = Arc::new(Barrier::new(THREADS));
    let done = Arc::new(AtomicUsize::new(0));
    let t0 = Instant::now();
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let (e, shared, start, done) = (e.clone(), shared.clone(), Arc::clone(&start), Arc::clone(&done));
            std::thread::spawn(move || {
                start.wait();
                let busy = work(&e, &shared, t);
                done.fetch_add(1, Ordering::SeqCst);
                busy
            })
        })
        .collect();
    // Watchdog: a deadlock fails the test instead of hanging it.
    while done.load(Ordering::SeqCst) < THREADS {
        assert!(t0.elapsed() < Duration::from_secs(120), "deadlock: only {} of {THREADS} threads finished", done.load(Ordering::SeqCst));
        std::thread::sleep(Duration::from_millis(5));
    }
    let busy: usize = handles.into_iter().map(|h| h.join().expect("no thread panicked")).sum();
    assert_eq!(shared.to_vec::<f32>().unwrap(), serial_rows(&e));
    eprintln!("concurrency: {busy} contended reads answered Busy");
}

#[test]
fn dropping_views_and_blobs_from_many_threads_frees_once() {
    let e = common::engine();
    let root = Blob::tensor(&e, DType::I32, &[THREADS * 4, 16]).unwrap();
    root.fill(3.0).unwrap();
    let views: Vec<Blob> = (0..THREADS * 4)
        .map(|i| {
            let w = root.window(1).unwrap();
            w.set_parent_pos(i as i64).unwrap();
            w
        })
        .collect();
    let views = Arc::new(std::sync::Mutex::new(views));
    drop(root); // the views keep the memory alive
    let handles: Vec<_> = (0..THREADS)
        .map(|_| {
            let views = Arc::clone(&views);
            std::thread::spawn(move || {
                let mut sum = 0.0;
                loop {
                    let Some(v) = views.lock().unwrap().pop() else { return sum };
                    sum += v.asum().unwrap();
                    v.scale(2.0).unwrap();
                    drop(v);
                }
            })
        })
        .collect();
    let total: f64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
    assert_eq!(total, (THREADS * 4 * 16 * 3) as f64);
}

/// The last handle of a blob record frees it, and only it (a handle
/// that finds itself alone frees the record without a locked decrement):
/// clones of one record, views (indexed, windows, slices), views of views
/// and clones of those, dropped from eight threads at once in a
/// fixed-seed shuffled order, over 200 rounds. The wrapped memory's
/// release runs exactly once per round, only after the last handle,
/// whichever thread drops it.
#[test]
fn the_last_handle_of_each_record_frees_it_once_from_any_thread() {
    static RELEASED: AtomicUsize = AtomicUsize::new(0);
    let e = common::engine();
    let mut seed = 0x5eed_0079_u64;
    let mut next = move || {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (seed >> 33) as usize
    };
    for round in 0..200 {
        let mut data = vec![round as f32; 64];
        let ptr = std::ptr::NonNull::new(data.as_mut_ptr() as *mut u8).unwrap();
        // SAFETY: `data` outlives every handle below (all are dropped
        // before the round ends), and it is only read through them.
        let root = unsafe {
            Blob::wrap(&e, DType::F32, blobcore::Shape::new(&[4, 4, 4]).unwrap(), ptr, 256, Some(Box::new(|| {
                RELEASED.fetch_add(1, Ordering::SeqCst);
            })))
        }
        .unwrap();
        let mut handles = vec![root.clone(), root.clone()];
        for k in 0..(4 + next() % 12) {
            let from = &handles[next() % handles.len()];
            let made = match k % 6 {
                0 => from.clone(),
                1 => from.index(&[blobcore::Index::At(0)]).or_else(|_| Ok::<_, blobcore::Error>(from.clone())).unwrap(),
                2 => from.reversed_view().unwrap(),
                3 => from.window(1).or_else(|_| Ok::<_, blobcore::Error>(from.clone())).unwrap(),
                4 => from.slice(&[]).unwrap(),
                _ => from.permuted_view(&(0..from.rank()).rev().collect::<Vec<_>>()).unwrap(),
            };
            handles.push(made);
        }
        handles.push(root);
        for i in (1..handles.len()).rev() {
            handles.swap(i, next() % (i + 1));
        }
        let before = RELEASED.load(Ordering::SeqCst);
        let share = handles.len().div_ceil(THREADS);
        let start = Arc::new(Barrier::new(THREADS));
        let mut parts = Vec::new();
        while !handles.is_empty() {
            let rest = handles.split_off(share.min(handles.len()));
            parts.push(std::mem::replace(&mut handles, rest));
        }
        parts.resize_with(THREADS, Vec::new);
        let threads: Vec<_> = parts
            .into_iter()
            .map(|part| {
                let start = Arc::clone(&start);
                std::thread::spawn(move || {
                    start.wait();
                    for h in part {
                        assert_eq!(h.get_element(&vec![0; h.rank()]).unwrap().bytes(), (round as f32).to_ne_bytes());
                        drop(h);
                    }
                })
            })
            .collect();
        join_under_watchdog(threads);
        assert_eq!(RELEASED.load(Ordering::SeqCst), before + 1, "round {round}: the memory is released once, after the last handle");
        drop(data);
    }
}

/// Issue 27's any-layout paths from many threads on one blob: reversed and
/// transposed views saved (a helper thread gathering under a shared
/// borrow), filled, scaled, added to themselves and reduced, while other
/// threads fill the parent. Every call ends (watchdog), each either
/// succeeds or is Busy, and no thread panics.
#[test]
fn any_layout_operations_from_many_threads() {
    use blobcore::Index;
    let e = common::engine();
    let parent = Blob::tensor(&e, DType::F32, &[1024, 1536]).unwrap(); // 6 MiB: pipelined saves
    let start = Arc::new(Barrier::new(THREADS));
    let done = Arc::new(AtomicUsize::new(0));
    let t0 = Instant::now();
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let (parent, start, done) = (parent.clone(), Arc::clone(&start), Arc::clone(&done));
            std::thread::spawn(move || {
                start.wait();
                let rev = parent.index(&[Index::Range { start: None, stop: None, step: Some(-1) }]).unwrap();
                let tr = parent.permuted_view(&[1, 0]).unwrap();
                let region = parent.region(&[t, 0], &[t + 512, 1536]).unwrap();
                for i in 0..6 {
                    let r: blobcore::Result<()> = match (t + i) % 6 {
                        0 => tr.to_npy_bytes().map(|_| ()),
                        1 => rev.fill(t as f64),
                        2 => region.scale(1.0),
                        3 => rev.add(&tr.index(&[Index::ALL]).unwrap().permuted_view(&[1, 0]).unwrap()),
                        4 => tr.asum().map(|_| ()),
                        _ => parent.fill(1.0),
                    };
                    if let Err(err) = r {
                        assert_eq!(err.code(), 8, "only Busy may refuse: {err}");
                    }
                }
                done.fetch_add(1, Ordering::SeqCst);
            })
        })
        .collect();
    while done.load(Ordering::SeqCst) < THREADS {
        assert!(t0.elapsed() < Duration::from_secs(120), "deadlock: only {} of {THREADS} threads finished", done.load(Ordering::SeqCst));
        std::thread::sleep(Duration::from_millis(5));
    }
    for h in handles {
        h.join().expect("no thread panicked");
    }
}

/// A strided view builds its desc on first use: many threads asking a
/// fresh view for it at once (desc, layout, export, a dense copy, an
/// element, a view of the view) all see the one desc an eager build gives
/// and the same values, under a watchdog, many fresh views in a row.
#[test]
fn a_strided_views_desc_is_built_once_from_many_threads() {
    use blobcore::{Index, TensorDesc};
    let e = Engine::cpu();
    let dims = [3usize, 4, 5];
    let values: Vec<f32> = (0..60).map(|i| i as f32).collect();
    let parent = Blob::from_slice(&e, &dims, &values).unwrap();
    let t0 = Instant::now();
    for round in 0..50 {
        let step = Index::Range { start: None, stop: None, step: Some(-2) };
        let view = match round % 2 {
            0 => parent.permuted_view(&[2, 0, 1]).unwrap(),
            _ => parent.index(&[step, Index::ALL, Index::At(1)]).unwrap(),
        };
        // Row-major element 1 of the view.
        let second: Vec<i64> = (1..view.rank()).map(|_| 0).chain([1]).collect();
        let start = Arc::new(Barrier::new(THREADS));
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let (view, start, second) = (view.clone(), Arc::clone(&start), second.clone());
                std::thread::spawn(move || {
                    start.wait();
                    let seen: (TensorDesc, Vec<f32>, f64) = match t % 4 {
                        0 => (view.desc(), retry(|| view.to_dense()).to_vec().unwrap(), view.get_element(&second).unwrap().to_f64()),
                        1 => {
                            let l = view.layout();
                            let d = view.desc();
                            assert_eq!(d.layout(), l);
                            (d, retry(|| view.copy()).to_vec().unwrap(), view.get_element(&second).unwrap().to_f64())
                        }
                        2 => {
                            let x = retry(|| view.export());
                            drop(x);
                            (view.desc(), retry(|| view.to_dense()).to_vec().unwrap(), view.get_element(&second).unwrap().to_f64())
                        }
                        _ => {
                            let w = view.index(&[Index::ALL]).unwrap();
                            (view.desc(), retry(|| w.to_dense()).to_vec().unwrap(), w.get_element(&second).unwrap().to_f64())
                        }
                    };
                    seen
                })
            })
            .collect();
        while !handles.iter().all(|h| h.is_finished()) {
            assert!(t0.elapsed() < Duration::from_secs(120), "deadlock: a thread did not finish");
            std::thread::sleep(Duration::from_millis(1));
        }
        let seen: Vec<_> = handles.into_iter().map(|h| h.join().expect("no thread panicked")).collect();
        // The oracle: the values by their index arithmetic, the desc rebuilt
        // from the same strides by the general constructor.
        let want: Vec<f32> = match round % 2 {
            0 => (0..5).flat_map(|k| (0..3).flat_map(move |i| (0..4).map(move |j| (i * 20 + j * 5 + k) as f32))).collect(),
            _ => [2usize, 0].iter().flat_map(|&i| (0..4).map(move |j| (i * 20 + j * 5 + 1) as f32)).collect(),
        };
        for (d, v, x) in &seen {
            assert_eq!(d, &seen[0].0);
            assert_eq!(d.dims(), view.dims());
            assert_eq!(v, &want, "round {round}");
            assert_eq!(*x as f32, want[1]);
        }
    }
}

/// Shared memory from many threads (issue 31): one thread's
/// `share_memory` races the others' views, fills, handles and rebuilt
/// blobs of the same blob. Only Busy (memory in use) or InvalidArgument
/// (not shared yet) may refuse; the values end as a serial run leaves them.
#[cfg(unix)]
#[test]
fn shared_memory_from_many_threads() {
    let e = Engine::cpu();
    let b = Blob::tensor(&e, DType::F32, &[THREADS, ROW]).unwrap();
    let (start, end) = (Arc::new(Barrier::new(THREADS)), Arc::new(Barrier::new(THREADS)));
    let done = Arc::new(AtomicUsize::new(0));
    let t0 = Instant::now();
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let (b, e, start, end, done) = (b.clone(), e.clone(), Arc::clone(&start), Arc::clone(&end), Arc::clone(&done));
            std::thread::spawn(move || {
                start.wait();
                for i in 0..ITERS {
                    let r: blobcore::Result<()> = match (t + i) % 5 {
                        0 => b.share_memory(),
                        1 => b.shared_handle().and_then(|h| Blob::from_shared_handle(&e, &h)).and_then(|r| r.fill(0.5)),
                        2 => b.window(1).and_then(|w| { w.set_parent_pos(t as i64)?; w.fill(t as f64) }),
                        3 => b.asum().map(|_| ()),
                        _ => { let _ = b.is_shared(); Ok(()) }
                    };
                    if let Err(err) = r {
                        assert!(matches!(err.code(), 3 | 8), "only Busy or not-shared-yet may refuse: {err}");
                    }
                }
                // The last word on this thread's row, once no thread fills the whole blob any more.
                end.wait();
                let w = retry(|| b.window(1));
                retry(|| w.set_parent_pos(t as i64));
                retry(|| w.fill(t as f64));
                done.fetch_add(1, Ordering::SeqCst);
            })
        })
        .collect();
    while done.load(Ordering::SeqCst) < THREADS {
        assert!(t0.elapsed() < Duration::from_secs(120), "deadlock: only {} of {THREADS} threads finished", done.load(Ordering::SeqCst));
        std::thread::sleep(Duration::from_millis(5));
    }
    for h in handles {
        h.join().expect("no thread panicked");
    }
    retry(|| b.share_memory());
    assert!(b.is_shared());
    let v = b.to_vec::<f32>().unwrap();
    for t in 0..THREADS {
        assert!(v[t * ROW..(t + 1) * ROW].iter().all(|&x| x == t as f32), "row {t}");
    }
}

/// A blob's rank is read without its state lock (it is stored with every
/// shape change). One thread reshapes and reinterprets a blob and its diff
/// through ranks 1 to 4 and reads back the rank it set; the others read
/// the rank, the dims and the diff's, index by the rank they read and take
/// views, under a watchdog. Every rank read is one the blob had, an index
/// of the rank read either answers element 0 or refuses with a clear
/// error, and at rest the rank, the dims and the diff agree.
#[test]
fn the_rank_read_without_the_lock_follows_reshapes_from_many_threads() {
    const SHAPES: [&[usize]; 4] = [&[24], &[4, 6], &[2, 3, 4], &[1, 2, 3, 4]];
    let e = Engine::cpu();
    let values: Vec<f32> = (0..24).map(|i| i as f32).collect();
    let b = Blob::from_slice(&e, &[2, 3, 4], &values).unwrap();
    b.diff().unwrap();
    let start = Arc::new(Barrier::new(THREADS));
    let done = Arc::new(AtomicUsize::new(0));
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let (b, start, done) = (b.clone(), Arc::clone(&start), Arc::clone(&done));
            std::thread::spawn(move || {
                start.wait();
                if t == 0 {
                    // Readers stop when the writer ends, by a panic too.
                    struct Done(Arc<AtomicUsize>);
                    impl Drop for Done {
                        fn drop(&mut self) {
                            self.0.store(1, Ordering::Release);
                        }
                    }
                    let _done = Done(Arc::clone(&done));
                    for i in 0..4000 {
                        let dims = SHAPES[i % 4];
                        if i % 2 == 0 { b.reshape(dims).unwrap() } else { b.reinterpret(dims).unwrap() }
                        // The only writer: its own store is what it reads.
                        assert_eq!(b.rank(), dims.len());
                        assert_eq!(b.diff().unwrap().rank(), dims.len());
                    }
                    return;
                }
                let mut reads = 0usize;
                while done.load(Ordering::Acquire) == 0 || reads < 1000 {
                    reads += 1;
                    let r = b.rank();
                    assert!((1..=4).contains(&r), "rank {r} was never set");
                    let dims = b.dims();
                    assert!((1..=4).contains(&dims.len()) && dims.iter().product::<usize>() == 24, "dims {dims:?}");
                    let d = b.diff().unwrap().rank();
                    assert!((1..=4).contains(&d), "diff rank {d} was never set");
                    match b.get_element(&vec![0i64; r]) {
                        Ok(v) => assert_eq!(v.to_f64(), 0.0),
                        Err(e) => assert!(e.code() != 0 && !e.to_string().is_empty()),
                    }
                    match b.slice(&vec![0usize; r.min(2)]) {
                        Ok(v) => assert_eq!(v.get_element(&vec![0i64; v.rank()]).unwrap().to_f64(), 0.0),
                        Err(e) => assert!(!e.to_string().is_empty()),
                    }
                }
            })
        })
        .collect();
    join_under_watchdog(handles);
    assert_eq!(b.rank(), b.dims().len());
    assert_eq!(b.diff().unwrap().dims(), b.dims());
    assert_eq!(b.to_vec::<f32>().unwrap(), values);
}

/// The diff follows every reshape even when it is created by another
/// thread at the same moment: a reshape racing the first `diff()` leaves
/// the blob and its diff with the same dims, on every blob. The two
/// threads meet at a spinning barrier before each blob, so their calls
/// start within nanoseconds of each other.
#[test]
fn a_diff_created_while_another_thread_reshapes_follows_the_reshape() {
    const N: usize = 20_000;
    let e = Engine::cpu();
    let blobs: Arc<Vec<Blob>> = Arc::new((0..N).map(|_| Blob::tensor(&e, DType::F32, &[2, 3, 4]).unwrap()).collect());
    let arrived = Arc::new([AtomicUsize::new(0), AtomicUsize::new(0)]);
    let meet = |arrived: &[AtomicUsize; 2], me: usize, i: usize| {
        arrived[me].store(i + 1, Ordering::Release);
        let t0 = Instant::now();
        while arrived[1 - me].load(Ordering::Acquire) < i + 1 {
            assert!(t0.elapsed() < Duration::from_secs(60), "deadlock: the other thread did not arrive");
            std::hint::spin_loop();
        }
    };
    let (bs, ar) = (Arc::clone(&blobs), Arc::clone(&arrived));
    let h = std::thread::spawn(move || {
        for (i, b) in bs.iter().enumerate() {
            meet(&ar, 1, i);
            b.diff().unwrap();
        }
    });
    for (i, b) in blobs.iter().enumerate() {
        meet(&arrived, 0, i);
        if i % 2 == 0 { b.reshape(&[4, 6]).unwrap() } else { b.reinterpret(&[24]).unwrap() }
    }
    h.join().expect("no thread panicked");
    let apart = blobs.iter().filter(|b| b.diff().unwrap().dims() != b.dims()).count();
    assert_eq!(apart, 0, "{apart} of {N} diffs did not follow the reshape");
}


/// Every operation on a blob whose dims another thread keeps changing
/// (reinterpret, and reshape to fewer elements and back within its
/// capacity: the memory and the first elements stay), as source, as
/// destination and as a part: each call either refuses with a clear error
/// or gives what the dims of one moment give, never a panic, a hang or a
/// mix of two moments' dims. (A reorder and a merge used dims read at one
/// moment with a layout read at another: a panic, and out-of-bounds
/// offsets for some pairs of shapes.)
#[test]
fn operations_on_a_blob_whose_dims_change_meanwhile_err_or_are_right() {
    use blobcore::{Index, Layout, Scalar, TensorDesc};
    const OPS: usize = 30;
    let e = Engine::cpu();
    let values: Vec<f32> = (0..24).map(|i| i as f32).collect();
    // `b` keeps its values (only read); `w` is written.
    let b = Blob::from_slice(&e, &[2, 3, 4], &values).unwrap();
    let w = Blob::from_slice(&e, &[2, 3, 4], &values).unwrap();
    let done = Arc::new(AtomicUsize::new(0));
    // Readers count themselves done on the way out, by a panic too.
    struct Done(Arc<AtomicUsize>);
    impl Drop for Done {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::AcqRel);
        }
    }
    // The transpose (0, 1) of [2, 3, 4], and the first 4 of the values.
    let t_want: Vec<f32> = (0..3).flat_map(|j| (0..2).flat_map(move |i| (0..4).map(move |k| (i * 12 + j * 4 + k) as f32))).collect();
    let handles: Vec<_> = (0..=OPS)
        .map(|t| {
            let (b, w, done, values, t_want) = (b.clone(), w.clone(), Arc::clone(&done), values.clone(), t_want.clone());
            std::thread::spawn(move || {
                let e = Engine::cpu();
                if t == 0 {
                    let shapes: [&[usize]; 6] = [&[4, 6], &[2, 3, 4], &[24], &[2, 2], &[3, 2, 4], &[2, 3, 4]];
                    let mut i = 0usize;
                    while done.load(Ordering::Acquire) < OPS {
                        let d = shapes[i % 6];
                        for x in [&b, &w] {
                            let _ = if d.iter().product::<usize>() == 24 && i.is_multiple_of(2) { x.reinterpret(d) } else { x.reshape(d) };
                        }
                        i += 1;
                    }
                    return;
                }
                let _done = Done(done);
                let src = Blob::from_slice(&e, &[2, 3, 4], &values).unwrap();
                let o = Blob::tensor(&e, DType::F32, &[2, 3, 4]).unwrap();
                let o3 = Blob::tensor(&e, DType::F32, &[3, 2, 4]).unwrap();
                let half = Blob::tensor(&e, DType::F32, &[1, 3, 4]).unwrap();
                let two = Blob::tensor(&e, DType::F32, &[4, 3, 4]).unwrap();
                let nhwc = Blob::with_desc(&e, &TensorDesc::new(DType::F32, &[1, 2, 3, 4], Layout::Nhwc).unwrap()).unwrap();
                let ok = |v: Vec<f32>| v == values || v == values[..4];
                let mut map = blobcore::BlobMap::new();
                map.insert("b", b.clone());
                for _ in 0..3000 {
                    match t - 1 {
                        0 => if o.reorder_from(&b).is_ok() { assert_eq!(o.to_vec::<f32>().unwrap(), values) },
                        1 => if o3.transpose_from(&b, 0, 1).is_ok() { assert_eq!(o3.to_vec::<f32>().unwrap(), t_want) },
                        2 => if o.copy_from(&b).is_ok() { assert_eq!(o.to_vec::<f32>().unwrap(), values) },
                        3 => { let _ = w.reorder_from(&src); }
                        4 => { let _ = w.copy_from(&src); }
                        5 => { let _ = w.copy_from(&b); }
                        6 => { let _ = b.copy_from(&b); }
                        7 => { let _ = Blob::merge(&[&half, &half], 0, &w); }
                        8 => if Blob::merge(&[&b, &b], 0, &two).is_ok() {
                            let v = two.to_vec::<f32>().unwrap();
                            assert_eq!(&v[..24], &values[..]);
                            assert_eq!(&v[24..], &values[..]);
                        },
                        9 => if Blob::split(&b, 0, &[&half, &half]).is_ok() {
                            assert_eq!(half.to_vec::<f32>().unwrap(), values[12..]);
                        },
                        10 => { let _ = w.transpose_from(&b, 0, 1); }
                        11 => { let _ = w.add(&b); }
                        12 => if let Ok(c) = b.cast(DType::F64) { assert!(ok(c.to_vec::<f64>().unwrap().into_iter().map(|x| x as f32).collect())) },
                        13 => if let Ok(s) = b.asum() { assert!(s == 276.0 || s == 6.0, "{s}") },
                        14 => { let _ = w.fill(1.0); }
                        15 => { let _ = b.index(&[Index::At(1), Index::ALL]).and_then(|v| v.copy()); }
                        16 => { let _ = b.slice(&[1]).and_then(|v| v.to_vec::<f32>()); }
                        17 => { let _ = b.window(1).and_then(|v| v.copy()); }
                        18 => if let Ok(x) = b.export() { drop(x) },
                        19 => if let Ok(v) = b.to_npy_bytes() { assert!(ok(Blob::from_npy_bytes(&e, &v).unwrap().to_vec::<f32>().unwrap())) },
                        20 => if nhwc.reorder_from(&b).is_ok() { assert_eq!(nhwc.to_dense().unwrap().to_vec::<f32>().unwrap(), values) },
                        21 => { let _ = w.reorder_from(&nhwc); }
                        22 => if let Ok(x) = b.get_element(&[1, 2, 3]) { assert_eq!(x.to_f64(), 23.0) },
                        23 => { let _ = w.set_element(&[1, 2, 3], &Scalar::of(5.0f32)); }
                        24 => if let Ok(p) = b.permuted(&[1, 0, 2]) { if p.dims() == [3, 2, 4] { assert_eq!(p.to_vec::<f32>().unwrap(), t_want) } },
                        25 => if let Ok(c) = b.copy() { assert!(ok(c.to_vec::<f32>().unwrap())) },
                        26 => if let Ok(v) = b.to_caffe_bytes(true) { assert!(ok(Blob::from_caffe_bytes(&e, &v).unwrap().to_vec::<f32>().unwrap())) },
                        27 => if let Ok(v) = map.to_safetensors_bytes() {
                            assert!(ok(blobcore::BlobMap::from_safetensors_bytes(&e, &v).unwrap().get("b").unwrap().to_vec::<f32>().unwrap()))
                        },
                        28 => if let Ok(v) = map.to_gguf_bytes(&[]) {
                            assert!(ok(blobcore::BlobMap::from_gguf_bytes(&e, &v).unwrap().get("b").unwrap().to_vec::<f32>().unwrap()))
                        },
                        _ => if let Ok(v) = b.to_neoml_bytes() { assert!(ok(Blob::from_neoml_bytes(&e, &v).unwrap().to_vec::<f32>().unwrap())) },
                    }
                }
            })
        })
        .collect();
    join_under_watchdog(handles);
    assert!(b.to_vec::<f32>().map(ok_prefix(&values)).unwrap());
}

/// `copy_from` and the element-wise ops read an overlapping source (the
/// same memory wrapped twice, one element apart) through a copy, and
/// check the dims again on that copy: another thread that reshapes the
/// source in between (to fewer elements, or to other dims of as many)
/// makes the operation a `Shape` error that changes nothing, never a
/// copy of eight elements from a source of four. Every result is checked
/// against the memory as it was before the operation.
#[test]
fn an_aliased_source_reshaped_by_another_thread_errs_or_is_read_first() {
    const ROUNDS: usize = 20_000;
    let e = Engine::cpu();
    let start: Vec<f32> = (0..9).map(|i| i as f32).collect();
    let mut memory = start.clone();
    let base = std::ptr::NonNull::new(memory.as_mut_ptr().cast::<u8>()).unwrap();
    // SAFETY: `memory` outlives every blob below (all are dropped before
    // it, after the threads are joined), and no release callback runs.
    let wrap = |at: usize, n: usize| unsafe {
        Blob::wrap(&e, DType::F32, blobcore::Shape::new(&[n]).unwrap(), base.add(at * 4), n * 4, None).unwrap()
    };
    // `all` sees the nine elements; `dst` the first eight, `src` the last eight.
    let (all, dst, src) = (wrap(0, 9), wrap(0, 8), wrap(1, 8));
    let done = Arc::new(AtomicUsize::new(0));
    let reshaper = {
        let (src, done) = (src.clone(), Arc::clone(&done));
        std::thread::spawn(move || {
            let shapes: [&[usize]; 4] = [&[8], &[4], &[2, 4], &[8]];
            let mut i = 0usize;
            while done.load(Ordering::Acquire) == 0 {
                let _ = src.reshape(shapes[i % 4]);
                i += 1;
            }
        })
    };
    let worker = {
        let (all, dst, src, done, start) = (all.clone(), dst.clone(), src.clone(), Arc::clone(&done), start.clone());
        std::thread::spawn(move || {
            struct Done(Arc<AtomicUsize>);
            impl Drop for Done {
                fn drop(&mut self) {
                    self.0.store(1, Ordering::Release);
                }
            }
            let _done = Done(done);
            let (mut copied, mut added, mut refused) = (0, 0, 0);
            // The copy shifts the nine elements left by one; the sum adds
            // each element's right neighbour; the last element stays.
            let shifted: Vec<f32> = (0..9).map(|i| start[(i + 1).min(8)]).collect();
            let summed: Vec<f32> = (0..9).map(|i| if i < 8 { start[i] + start[i + 1] } else { start[8] }).collect();
            // At least ROUNDS rounds, then on until each outcome has been
            // seen (a loaded machine may keep the reshaper off the CPU for
            // all of the first rounds: CI once saw 20,000 refusals, and a
            // local run under load none), yielding so that it runs; the
            // deadline stays well inside the watchdog's two minutes.
            let deadline = Instant::now() + Duration::from_secs(60);
            let mut round = 0usize;
            while round < ROUNDS || !(copied > 0 && added > 0 && refused > 0) {
                if round >= ROUNDS {
                    if Instant::now() > deadline {
                        break;
                    }
                    std::thread::yield_now();
                }
                round += 1;
                all.copy_from_slice(&start).unwrap();
                let add = round % 2 == 1;
                let result = if add { dst.add(&src) } else { dst.copy_from(&src) };
                let now = all.to_vec::<f32>().unwrap();
                match result {
                    Ok(()) if add => {
                        assert_eq!(now, summed, "add read the source after writing, or past it");
                        added += 1;
                    }
                    Ok(()) => {
                        assert_eq!(now, shifted, "copy_from read the source after writing, or past it");
                        copied += 1;
                    }
                    Err(err) => {
                        assert_eq!(err.code(), 4, "only a Shape error may refuse: {err}");
                        assert_eq!(now, start, "a refused operation changed the memory");
                        refused += 1;
                    }
                }
            }
            assert!(copied > 0 && added > 0 && refused > 0, "copied {copied}, added {added}, refused {refused}");
        })
    };
    join_under_watchdog(vec![reshaper, worker]);
    drop((all, dst, src));
    drop(memory);
}

fn ok_prefix(values: &[f32]) -> impl Fn(Vec<f32>) -> bool + '_ {
    move |v| v == values || v == values[..4]
}

/// Waits for every thread under a two-minute watchdog (a deadlock fails
/// the test instead of hanging it), then joins them: none may panic.
fn join_under_watchdog(handles: Vec<std::thread::JoinHandle<()>>) {
    let t0 = Instant::now();
    while !handles.iter().all(|h| h.is_finished()) {
        assert!(t0.elapsed() < Duration::from_secs(120), "deadlock: a thread did not finish");
        std::thread::sleep(Duration::from_millis(1));
    }
    for h in handles {
        h.join().expect("no thread panicked");
    }
}

/// A write that lands while another thread works on a copy of a blob
/// that is not dense must not be overwritten by that copy coming back:
/// such operations (`scale`, `add`, `fill_object` of a strided or blocked
/// blob) copy its values out, work on the copy and copy it back, and a
/// `fill_object` from another thread in between succeeded and was then
/// lost. Now the memory is held from the copy out to the copy back, so
/// the fill is Busy meanwhile (retried here) and lands before or after:
/// it is kept either way.
#[test]
fn a_write_during_another_threads_copy_of_a_strided_blob_is_kept() {
    use blobcore::Index;
    let e = common::engine();
    let t0 = Instant::now();
    for round in 0..16 {
        // 32 MiB: 8 objects of 1 MiB elements, reversed along the height.
        let p = Blob::tensor(&e, DType::F32, &[1, 8, 1, 256, 256, 1, 16]).unwrap();
        let rev = Index::Range { start: None, stop: None, step: Some(-1) };
        let v = p.index(&[Index::ALL, Index::ALL, Index::ALL, rev]).unwrap();
        assert!(!v.is_dense());
        let start = Arc::new(Barrier::new(2));
        let (a, s) = (v.clone(), Arc::clone(&start));
        // Busy while the other thread holds the memory, for as long as
        // that takes (a debug build scales 32 MiB slowly): retried.
        let patiently = move |f: &dyn Fn() -> blobcore::Result<()>| loop {
            match f() {
                Err(e) if e.code() == 8 && t0.elapsed() < Duration::from_secs(120) => std::thread::sleep(Duration::from_micros(200)),
                r => break r.unwrap(),
            }
        };
        let scaler = std::thread::spawn(move || {
            s.wait();
            patiently(&|| a.scale(1.0));
        });
        start.wait();
        // Land somewhere inside the other thread's scale.
        std::thread::sleep(Duration::from_millis(1 + (round as u64 * 5) % 30));
        patiently(&|| v.fill_object(3, 7.0));
        scaler.join().expect("no thread panicked");
        assert!(t0.elapsed() < Duration::from_secs(120), "no progress");
        let got = p.to_vec::<f32>().unwrap();
        let size = got.len() / 8;
        assert!(got[3 * size..4 * size].iter().all(|&x| x == 7.0), "round {round}: the fill was overwritten by the scale's copy");
        assert!(got[..3 * size].iter().all(|&x| x == 0.0));
    }
}

/// Threads filling different objects of one blob that is not dense (a
/// reversed view, a blocked layout) each keep what they wrote: such a fill
/// works on a dense copy and writes the whole copy back, and another
/// thread's fill that landed in between was overwritten by that copy (a
/// lost update, in about one round of 200 with two threads). The copy in
/// and back now hold the memory, so a fill in between is Busy (retried
/// here) instead. Every object ends with its thread's value.
#[test]
fn fills_of_different_objects_of_a_strided_or_blocked_blob_are_all_kept() {
    use blobcore::{BlockingDesc, Index, TensorDesc};
    const OBJECTS: usize = 4;
    let e = common::engine();
    let t0 = Instant::now();
    for round in 0..60 {
        // The 7 named dims with OBJECTS objects along BatchWidth, each
        // 16 x 16 x 16 (height, width, channels): a view reversed along
        // the height, or channels blocked by 8.
        let dims = [1, OBJECTS, 1, 16, 16, 1, 16];
        let (parent, target) = if round % 2 == 0 {
            let p = Blob::tensor(&e, DType::F32, &dims).unwrap();
            let rev = Index::Range { start: None, stop: None, step: Some(-1) };
            let v = p.index(&[Index::ALL, Index::ALL, Index::ALL, rev]).unwrap();
            (p, v)
        } else {
            let blk = BlockingDesc::new(&[1, OBJECTS, 1, 16, 16, 1, 2, 8], &[0, 1, 2, 3, 4, 5, 6, 6]).unwrap();
            let b = Blob::with_desc(&e, &TensorDesc::with_blocking(DType::F32, &dims, blk).unwrap()).unwrap();
            (b.clone(), b)
        };
        assert!(!target.is_dense());
        assert_eq!(target.object_count().unwrap(), OBJECTS);
        let start = Arc::new(Barrier::new(OBJECTS));
        let handles: Vec<_> = (0..OBJECTS)
            .map(|n| {
                let (t, start) = (target.clone(), Arc::clone(&start));
                std::thread::spawn(move || {
                    start.wait();
                    for _ in 0..25 {
                        retry(|| t.fill_object(n as i64, n as f64 + 1.0));
                        assert!(t0.elapsed() < Duration::from_secs(120), "no progress");
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().expect("no thread panicked");
        }
        let got = target.copy().unwrap().to_vec::<f32>().unwrap();
        let size = got.len() / OBJECTS;
        for n in 0..OBJECTS {
            assert!(got[n * size..(n + 1) * size].iter().all(|&x| x == n as f32 + 1.0), "round {round}: object {n} lost its fill");
        }
        drop(parent);
    }
}
