//! The GPU engine beyond what the shared suites check (they run on it with
//! `BLOBCORE_ENGINE=gpu`): SyncedMemory head transitions as Caffe's tests
//! check them, no stale data through exports and buffers, dispatches
//! larger than one grid, reduction precision, host fallbacks, cross-engine
//! copies and reorders. Skips with a message when no adapter exists; CI
//! installs lavapipe, so there it always runs.

use blobcore::{Blob, BlockingDesc, DType, Engine, EngineStats, Head, TensorDesc};

/// The GPU engine under test: wgpu's, or the CUDA engine when
/// `BLOBCORE_ENGINE` names it (`cuda`, `cuda:<ordinal>`), so that this
/// suite checks both device backends.
fn gpu() -> Option<Engine> {
    // A fresh engine per test (as Engine::gpu gives): the counter checks
    // must not see other tests' transfers.
    let cuda = std::env::var("BLOBCORE_ENGINE").ok().filter(|v| v.starts_with("cuda"));
    let opened = match cuda {
        Some(v) => Engine::cuda(v.strip_prefix("cuda:").and_then(|o| o.parse().ok()).unwrap_or(0)),
        None => Engine::gpu(None),
    };
    match opened {
        Ok(e) => Some(e),
        Err(e) => {
            eprintln!("SKIPPED: no GPU adapter ({e})");
            None
        }
    }
}

fn ramp(e: &Engine, n: usize) -> Blob {
    let v: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 - 500.0).collect();
    Blob::from_slice(e, &[n], &v).unwrap()
}

#[test]
fn a_missing_adapter_is_a_device_error() {
    let e = Engine::gpu(Some("no adapter is called this")).unwrap_err();
    assert_eq!(e.code(), 10);
    assert!(e.to_string().contains("no adapter is called this"), "{e}");
}

#[test]
fn heads_follow_synced_memory() {
    let Some(g) = gpu() else { return };
    assert!(g.is_gpu());
    let b = Blob::tensor(&g, DType::F32, &[4, 5]).unwrap();
    assert_eq!(b.head(), Head::Uninitialized);
    // CPU write -> GPU read -> Synced.
    b.copy_from_slice(&[1f32; 20]).unwrap();
    assert_eq!(b.head(), Head::HeadAtCpu);
    assert_eq!(b.asum().unwrap(), 20.0);
    assert_eq!(b.head(), Head::Synced);
    // GPU write -> CPU read -> Synced.
    b.fill(2.0).unwrap();
    assert_eq!(b.head(), Head::HeadAtGpu);
    assert_eq!(b.to_vec::<f32>().unwrap(), [2f32; 20]);
    assert_eq!(b.head(), Head::Synced);
    // A GPU read of synced data moves nothing.
    assert_eq!(b.sumsq().unwrap(), 80.0);
    assert_eq!(b.head(), Head::Synced);
    // An uninitialized blob read by a kernel is at the GPU (zeros).
    let z = Blob::tensor(&g, DType::F32, &[3]).unwrap();
    assert_eq!(z.asum().unwrap(), 0.0);
    assert_eq!(z.head(), Head::HeadAtGpu);
    assert_eq!(z.to_vec::<f32>().unwrap(), [0.0; 3]);
}

/// The counters' change since `before`: (uploads, downloads).
fn moved(g: &Engine, before: EngineStats) -> (u64, u64) {
    let now = g.stats();
    (now.uploads - before.uploads, now.downloads - before.downloads)
}

#[test]
fn every_head_transition_moves_exactly_what_caffe_moves() {
    let Some(g) = gpu() else { return };
    let n = 1000;
    let b = Blob::tensor(&g, DType::F32, &[n]).unwrap();
    g.reset_stats();
    let s = g.stats();
    // fill on the GPU (nothing to upload: uninitialized), read on the host
    // (one download), asum on the GPU (synced: nothing moves).
    b.fill(1.0).unwrap();
    assert_eq!((b.head(), moved(&g, s)), (Head::HeadAtGpu, (0, 0)));
    assert_eq!(b.to_vec::<f32>().unwrap()[0], 1.0);
    assert_eq!((b.head(), moved(&g, s)), (Head::Synced, (0, 1)));
    assert_eq!(g.stats().bytes_downloaded - s.bytes_downloaded, 4 * n as u64);
    assert_eq!(b.asum().unwrap(), n as f64);
    assert_eq!((b.head(), moved(&g, s)), (Head::Synced, (0, 1)));
    assert!(g.stats().kernels >= s.kernels + 2);
    // A host write moves the head; the next kernel uploads once.
    let s = g.stats();
    b.copy_from_slice(&vec![2f32; n]).unwrap();
    assert_eq!((b.head(), moved(&g, s)), (Head::HeadAtCpu, (0, 0)));
    assert_eq!(b.sumsq().unwrap(), 4.0 * n as f64);
    assert_eq!((b.head(), moved(&g, s)), (Head::Synced, (1, 0)));
    // Read-only host access (guards, buffers taken with exchange and
    // released without, read-only exports, copies out, file saves) keeps
    // Synced: the next kernel moves nothing.
    let s = g.stats();
    b.fill(3.0).unwrap(); // head at the GPU
    {
        let r = b.buffer_read::<f32>(0, 10).unwrap();
        assert_eq!(r[0], 3.0);
    }
    assert_eq!((b.head(), moved(&g, s)), (Head::Synced, (0, 1)));
    let p = b.get_buffer(0, n as i64, true).unwrap();
    b.release_buffer(p.as_ptr(), false).unwrap();
    let e = b.export_for(false).unwrap();
    assert_eq!(b.asum().unwrap(), 3.0 * n as f64); // with a reader: no upload
    drop(e);
    let mut out = vec![0f32; n];
    b.copy_to_slice(&mut out).unwrap();
    b.save_npy(std::env::temp_dir().join(format!("blobcore-heads-{}.npy", std::process::id()))).unwrap();
    assert_eq!(b.asum().unwrap(), 3.0 * n as f64);
    assert_eq!((b.head(), moved(&g, s)), (Head::Synced, (0, 1)));
    // A kernel writing under a reader: its bytes are copied back at once
    // and both sides agree (Synced).
    let s = g.stats();
    let e = b.export_for(false).unwrap();
    b.fill(4.0).unwrap();
    // SAFETY: the export is live and covers n f32s.
    assert_eq!(unsafe { *(e.as_ptr() as *const f32) }, 4.0);
    assert_eq!((b.head(), moved(&g, s)), (Head::Synced, (0, 1)));
    drop(e);
    // A buffer released with exchange, or a writable export, is a host
    // write: the head moves, and the next kernel uploads once.
    let s = g.stats();
    let p = b.get_buffer(0, 1, true).unwrap();
    b.release_buffer(p.as_ptr(), true).unwrap();
    assert_eq!(b.head(), Head::HeadAtCpu);
    assert_eq!(b.asum().unwrap(), 4.0 * n as f64);
    assert_eq!((b.head(), moved(&g, s)), (Head::Synced, (1, 0)));
    let w = b.export().unwrap();
    assert_eq!(b.head(), Head::HeadAtCpu);
    assert_eq!(b.asum().unwrap(), 4.0 * n as f64);
    assert_eq!(moved(&g, s), (2, 0)); // writers: uploaded again, head stays at the host
    assert_eq!(b.head(), Head::HeadAtCpu);
    drop(w);
    // The CPU engine counts nothing.
    assert_eq!(Engine::cpu().stats(), EngineStats::default());
}

#[test]
fn integer_reductions_are_exact_and_equal_the_host() {
    let Some(g) = gpu() else { return };
    let cpu = Engine::cpu();
    // The case: ten 0x01010101 sum to 168430090 (f32 gave 168430080).
    let ten = vec![0x0101_0101i32; 10];
    let b = Blob::from_slice(&g, &[10], &ten).unwrap();
    assert_eq!(b.asum().unwrap(), 168_430_090.0);
    // Extremes, many workgroups, sums up to 2^53: bit-equal to the host.
    let mut v: Vec<i32> = (0..300_000).map(|i: i32| i.wrapping_mul(2_654_435_761u32 as i32)).collect();
    v[0] = i32::MIN;
    v[1] = i32::MAX;
    v[2] = -1;
    let (gb, cb) = (Blob::from_slice(&g, &[v.len()], &v).unwrap(), Blob::from_slice(&cpu, &[v.len()], &v).unwrap());
    let exact_asum: u128 = v.iter().map(|&x| u128::from(x.unsigned_abs())).sum();
    assert_eq!(gb.asum().unwrap(), exact_asum as f64);
    assert_eq!(gb.asum().unwrap().to_bits(), cb.asum().unwrap().to_bits());
    // sumsq: exact below 2^53 (values below 2^20 over 4096 elements).
    let small: Vec<i32> = (0..4096).map(|i| (i * 257) % (1 << 20) - (1 << 19)).collect();
    let (gs, cs) = (Blob::from_slice(&g, &[4096], &small).unwrap(), Blob::from_slice(&cpu, &[4096], &small).unwrap());
    let exact_sq: u128 = small.iter().map(|&x| (x as i128 * x as i128) as u128).sum();
    assert!(exact_sq < 1 << 53);
    assert_eq!(gs.sumsq().unwrap(), exact_sq as f64);
    assert_eq!(gs.sumsq().unwrap().to_bits(), cs.sumsq().unwrap().to_bits());
    // Squares of the extremes are exact as integers on the device.
    let ext = Blob::from_slice(&g, &[2], &[i32::MIN, i32::MAX]).unwrap();
    assert_eq!(ext.sumsq().unwrap(), ((1u128 << 62) + (i32::MAX as u128).pow(2)) as f64);
    // Sums of squares past 2^64 (four squares of -2^31 are 2^64): a
    // workgroup's 64-bit sum wrapped (a 3.6e18 result for 1.1e20, found
    // from outside); the device sums in 96 (wgpu) or 128 (CUDA) bits, so
    // the result is the exact sum rounded once, whatever threads and
    // workgroups the elements fall in.
    for n in [4usize, 5, 7, 300, 70_000] {
        let big: Vec<i32> = (0..n).map(|i| if i % 3 == 1 { i32::MAX - i as i32 } else { i32::MIN + i as i32 }).collect();
        let exact: u128 = big.iter().map(|&x| (x as i128 * x as i128) as u128).sum();
        let gb = Blob::from_slice(&g, &[n], &big).unwrap();
        assert_eq!(gb.sumsq().unwrap(), exact as f64, "{n} squares");
        let cb = Blob::from_slice(&cpu, &[n], &big).unwrap();
        let host = cb.sumsq().unwrap();
        assert!((host - exact as f64).abs() <= 1e-12 * exact as f64, "{n}: host {host}");
    }
}

/// f32 sums the device's f32 cannot hold (squares past 1.8e19, sums past
/// 3.4e38) are the host's f64 sums, not infinity; inf and NaN in the data
/// still give inf and NaN.
#[test]
fn f32_reductions_past_f32_range_are_the_hosts() {
    let Some(g) = gpu() else { return };
    let cpu = Engine::cpu();
    for v in [vec![2e19f32; 3], vec![3e38f32, 3e38, -3e38, 1.0], vec![1e20f32; 1024], vec![f32::INFINITY, 1.0], vec![f32::NAN, 2.0, 1e30]] {
        let (gb, cb) = (Blob::from_slice(&g, &[v.len()], &v).unwrap(), Blob::from_slice(&cpu, &[v.len()], &v).unwrap());
        for squares in [false, true] {
            let (d, h) = if squares { (gb.sumsq().unwrap(), cb.sumsq().unwrap()) } else { (gb.asum().unwrap(), cb.asum().unwrap()) };
            let want: f64 = v.iter().map(|&x| if squares { x as f64 * x as f64 } else { (x as f64).abs() }).sum();
            // Finite, inf or NaN as the host's f64 sum is, and within the
            // device's documented 1e-5 of it.
            assert_eq!((d.is_finite(), d.is_nan()), (h.is_finite(), h.is_nan()), "{v:?} squares={squares}: device {d}, host {h}");
            assert!(d == want || (d.is_nan() && want.is_nan()) || (d - want).abs() <= 1e-5 * want.abs(), "{v:?} squares={squares}: {d} vs {want}");
            if want > f32::MAX as f64 {
                assert_eq!(d.to_bits(), h.to_bits(), "{v:?} squares={squares}: past f32's range the host decides");
            }
        }
    }
}

#[test]
fn exports_and_buffers_never_see_stale_data() {
    let Some(g) = gpu() else { return };
    let b = ramp(&g, 64);
    b.scale(2.0).unwrap();
    assert_eq!(b.head(), Head::HeadAtGpu);
    // An export syncs to the host first ...
    let x = b.export().unwrap();
    // SAFETY: the export is live and holds 64 f32s.
    let host = unsafe { std::slice::from_raw_parts_mut(x.as_ptr() as *mut f32, 64) };
    assert_eq!(host[1], -998.0);
    // ... kernels write through to it while it lives ...
    b.fill(3.0).unwrap();
    assert_eq!(host[7], 3.0);
    assert_eq!(b.head(), Head::HeadAtCpu);
    // ... and see what the host wrote.
    host[0] = 103.0;
    assert_eq!(b.asum().unwrap(), 3.0 * 63.0 + 103.0);
    drop(x);
    // Buffers: exchange on get reads back, exchange on release writes.
    b.fill(5.0).unwrap();
    assert_eq!(b.head(), Head::HeadAtGpu);
    let p = b.get_buffer(8, 4, true).unwrap().as_ptr() as *mut f32;
    // SAFETY: the buffer holds 4 f32s until released.
    unsafe {
        assert_eq!(*p, 5.0);
        *p = -1.0;
    }
    // While the buffer is held the host copy stays authoritative: a kernel
    // elsewhere keeps what the buffer wrote, and a kernel on the buffer's
    // elements is visible through it at once (raw buffers, as on the CPU,
    // are not locked against operations).
    let w = b.window(1).unwrap();
    w.fill(0.0).unwrap();
    w.set_parent_pos(9).unwrap();
    w.fill(7.0).unwrap();
    // SAFETY: the buffer still holds 4 f32s.
    assert_eq!(unsafe { *p.add(1) }, 7.0);
    b.release_buffer(p as *const u8, true).unwrap();
    let v = b.to_vec::<f32>().unwrap();
    assert_eq!((v[0], v[8], v[9], v[10]), (0.0, -1.0, 7.0, 5.0));
    assert_eq!(b.asum().unwrap(), 5.0 * 61.0 + 1.0 + 7.0);
}

#[test]
fn more_elements_than_one_grid_dispatches() {
    let Some(g) = gpu() else { return };
    let n = 65535 * 256 + 1000;
    let b = Blob::tensor(&g, DType::F32, &[n]).unwrap();
    b.fill(1.0).unwrap();
    assert_eq!(b.asum().unwrap(), n as f64);
    let v = b.to_vec::<f32>().unwrap();
    assert!(v.iter().all(|&x| x == 1.0));
    let c = Blob::tensor(&g, DType::F32, &[n]).unwrap();
    c.copy_from(&b).unwrap();
    c.add(&b).unwrap();
    assert_eq!(c.to_vec::<f32>().unwrap()[n - 1], 2.0);
}

#[test]
fn reductions_are_within_1e_5_of_the_f64_sum() {
    let Some(g) = gpu() else { return };
    let n = 3_000_017;
    let v: Vec<f32> = (0..n).map(|i| ((i as f64 * 0.618).sin() * 100.0) as f32).collect();
    let b = Blob::from_slice(&g, &[n], &v).unwrap();
    let asum: f64 = v.iter().map(|&x| (x as f64).abs()).sum();
    let sumsq: f64 = v.iter().map(|&x| (x as f64) * (x as f64)).sum();
    assert!((b.asum().unwrap() - asum).abs() <= 1e-5 * asum);
    assert!((b.sumsq().unwrap() - sumsq).abs() <= 1e-5 * sumsq);
    let i: Vec<i32> = (0..n as i32).map(|x| x % 2001 - 1000).collect();
    let bi = Blob::from_slice(&g, &[n], &i).unwrap();
    let iasum: f64 = i.iter().map(|&x| (x as f64).abs()).sum();
    assert!((bi.asum().unwrap() - iasum).abs() <= 1e-5 * iasum);
}

#[test]
fn integer_and_f64_ops_match_the_cpu() {
    let Some(g) = gpu() else { return };
    let c = Engine::cpu();
    for dtype in DType::ALL {
        let mk = |e: &Engine| {
            let b = Blob::tensor(e, dtype, &[3, 7]).unwrap();
            let bytes: Vec<u8> = (0..b.byte_size()).map(|i| (i * 7 % 61) as u8).collect();
            b.copy_from_bytes(&bytes).unwrap();
            b
        };
        let (a, b) = (mk(&g), mk(&c));
        let run = |x: &Blob| -> Vec<u8> {
            x.fill_object(1, 3.0).unwrap();
            if dtype.has_arithmetic() {
                x.add(&x.copy().unwrap()).unwrap();
                x.scale(-2.0).unwrap();
            } else {
                assert_eq!(x.add(&x.copy().unwrap()).unwrap_err().code(), 5);
                assert_eq!(x.scale(-2.0).unwrap_err().code(), 5);
            }
            let t = x.transposed(0, 1).unwrap();
            let mut v = vec![0u8; t.byte_size()];
            t.copy_to_bytes(&mut v).unwrap();
            v
        };
        assert_eq!(run(&a), run(&b), "{dtype}");
    }
}

#[test]
fn copies_across_engines_and_reorders() {
    let Some(g) = gpu() else { return };
    let c = Engine::cpu();
    let dims = [2, 20, 5, 6];
    let host = ramp(&c, 1200);
    host.reshape(&dims).unwrap();
    let dev = Blob::tensor(&g, DType::F32, &dims).unwrap();
    dev.copy_from(&host).unwrap(); // CPU -> GPU
    dev.scale(0.5).unwrap();
    let back = Blob::tensor(&c, DType::F32, &dims).unwrap();
    back.copy_from(&dev).unwrap(); // GPU -> CPU
    let want: Vec<f32> = host.to_vec::<f32>().unwrap().iter().map(|x| x * 0.5).collect();
    assert_eq!(back.to_vec::<f32>().unwrap(), want);
    // Memory is shared only within an engine.
    assert_eq!(back.share_data(&dev).unwrap_err().code(), 3);
    // NCHW -> nChw8c -> NHWC -> NCHW on the GPU is the identity.
    let blocked = TensorDesc::with_blocking(DType::F32, &dims, BlockingDesc::new(&[2, 3, 5, 6, 8], &[0, 1, 2, 3, 1]).unwrap()).unwrap();
    let nhwc = TensorDesc::with_blocking(DType::F32, &dims, BlockingDesc::new(&[2, 5, 6, 20], &[0, 2, 3, 1]).unwrap()).unwrap();
    let (b8, bh) = (Blob::with_desc(&g, &blocked).unwrap(), Blob::with_desc(&g, &nhwc).unwrap());
    b8.reorder_from(&dev).unwrap();
    bh.reorder_from(&b8).unwrap();
    let out = Blob::tensor(&g, DType::F32, &dims).unwrap();
    out.reorder_from(&bh).unwrap();
    assert_eq!(out.head(), Head::HeadAtGpu);
    assert_eq!(out.to_vec::<f32>().unwrap(), want);
}

#[test]
fn row_copies_and_tiled_transposes_equal_the_host() {
    let Some(g) = gpu() else { return };
    let cpu = Engine::cpu();
    let data = |n: usize| (0..n).map(|i| (i as f32) * 0.5 - 7.0).collect::<Vec<f32>>();
    // Plain 2-D and batched transposes of sizes that are not tile multiples.
    for (dims, axes) in [
        (vec![37usize, 45], vec![1isize, 0]),
        (vec![3, 40, 50], vec![0, 2, 1]),
        (vec![33, 9, 64], vec![1, 0, 2]),  // outer transpose: row copies
        (vec![64, 100, 256], vec![1, 0, 2]), // long aligned runs: four words per thread
        (vec![2, 3, 5], vec![2, 1, 0]),     // small: the strided kernel
        (vec![20, 9, 40], vec![2, 1, 0]),   // the batch dim between the swapped ones
        (vec![4, 3, 50], vec![0, 2, 1]),    // NCHW -> NHWC at C = 3: a short side
        (vec![4, 50, 3], vec![0, 2, 1]),    // NHWC -> NCHW at C = 3
        (vec![6, 5, 7, 16], vec![2, 1, 0, 3]), // contiguous runs under three outer dims
        (vec![6, 5, 7, 16], vec![3, 1, 2, 0]), // the inner and outer axes swap
    ] {
        let n: usize = dims.iter().product();
        let v = data(n);
        let (gb, cb) = (Blob::from_slice(&g, &dims, &v).unwrap(), Blob::from_slice(&cpu, &dims, &v).unwrap());
        let (gt, ct) = (gb.permuted(&axes).unwrap(), cb.permuted(&axes).unwrap());
        assert_eq!(gt.dims(), ct.dims());
        assert_eq!(gt.to_vec::<f32>().unwrap(), ct.to_vec::<f32>().unwrap(), "{dims:?} {axes:?}");
    }
    // A transpose into a window (offsets) and of i32.
    let v: Vec<i32> = (0..2 * 40 * 48).collect();
    let src = Blob::from_slice(&g, &[2, 40, 48], &v).unwrap();
    let dst = Blob::tensor(&g, DType::I32, &[3, 48, 40]).unwrap();
    let w = dst.window(2).unwrap();
    w.set_parent_pos(1).unwrap();
    w.permute_from(&src, &[0, 2, 1]).unwrap();
    let want = Blob::from_slice(&cpu, &[2, 40, 48], &v).unwrap().permuted(&[0, 2, 1]).unwrap().to_vec::<i32>().unwrap();
    let got = dst.to_vec::<i32>().unwrap();
    assert_eq!(&got[48 * 40..], &want[..]);
    assert!(got[..48 * 40].iter().all(|&x| x == 0));
}

/// A child forked from the process that opened the GPU: every device
/// operation is `Error::Device` naming the fork (the driver is not called:
/// CUDA refuses a forked child, and a Vulkan driver's threads do not exist
/// there, so a submission could wait for ever); a blob whose host copy is
/// current still reads; dropping GPU blobs and the engine leaves the
/// parent's device alone. The parent goes on using the engine. The child
/// runs under a watchdog: a hang fails the test instead of stalling it.
#[cfg(unix)]
#[test]
fn a_forked_child_gets_device_errors_and_the_parent_goes_on() {
    let Some(g) = gpu() else { return };
    let on_device = ramp(&g, 4096);
    on_device.fill(3.0).unwrap();
    assert_eq!(on_device.head(), Head::HeadAtGpu);
    let on_host = Blob::from_slice(&g, &[4], &[1f32, 2.0, 3.0, 4.0]).unwrap();
    assert_eq!(on_host.head(), Head::HeadAtCpu);
    // SAFETY: the child runs blobcore calls on this thread only and leaves
    // through `_exit` (no test-harness code, no atexit handlers).
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let forked = |e: &blobcore::Error| e.code() == 10 && e.to_string().contains("fork");
        let code = if !on_device.to_vec::<f32>().is_err_and(|e| forked(&e)) {
            11
        } else if !g.synchronize().is_err_and(|e| forked(&e)) {
            12
        } else if !on_host.asum().is_err_and(|e| forked(&e)) {
            13
        } else if on_host.to_vec::<f32>().ok() != Some(vec![1.0, 2.0, 3.0, 4.0]) {
            14
        } else if !Blob::tensor(&g, DType::F32, &[64]).and_then(|b| b.fill(1.0)).is_err_and(|e| forked(&e)) {
            15
        } else {
            drop((on_device, on_host, g));
            0
        };
        // SAFETY: ends the child without unwinding into the harness.
        unsafe { libc::_exit(code) };
    }
    let mut status = 0;
    let started = std::time::Instant::now();
    loop {
        // SAFETY: waits for our own child without blocking.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if r == pid {
            break;
        }
        if started.elapsed() > std::time::Duration::from_secs(60) {
            // SAFETY: our own child.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("the forked child hung on a GPU call");
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(libc::WIFEXITED(status), "the forked child died (status {status:#x})");
    assert_eq!(libc::WEXITSTATUS(status), 0, "check {} failed in the forked child", libc::WEXITSTATUS(status));
    assert_eq!(on_device.to_vec::<f32>().unwrap(), vec![3f32; 4096]);
    assert_eq!(on_host.asum().unwrap(), 10.0);
}
