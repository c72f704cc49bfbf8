//! The CUDA engine against the CPU engine as oracle, and DLPack `kDLCUDA`
//! exchange. The shared suites and `tests/gpu.rs` also run on it with
//! `BLOBCORE_ENGINE=cuda`. Without an NVIDIA GPU and driver the device
//! tests skip with a message (`BLOBCORE_REQUIRE_CUDA=1` makes that a
//! failure); the error paths below run everywhere.

use blobcore::dlpack::{DLDataType, DLDevice, DLManagedTensorVersioned, DLPackVersion, DLTensor, DL_CUDA};
use blobcore::{Blob, DType, Engine, Index};
use proptest::prelude::*;
use std::sync::atomic::{AtomicUsize, Ordering};

/// One CUDA engine for the whole suite (opening one compiles the kernels).
fn cuda() -> Option<Engine> {
    static ENGINE: std::sync::OnceLock<Option<Engine>> = std::sync::OnceLock::new();
    ENGINE
        .get_or_init(|| match Engine::cuda(0) {
            Ok(e) => Some(e),
            Err(e) => {
                assert!(std::env::var("BLOBCORE_REQUIRE_CUDA").is_err(), "BLOBCORE_REQUIRE_CUDA is set but: {e}");
                eprintln!("SKIPPED: no CUDA engine ({e})");
                None
            }
        })
        .clone()
}

#[test]
fn without_a_device_cuda_is_a_clear_device_error() {
    match Engine::cuda(0) {
        Ok(e) => {
            assert!(e.is_cuda() && e.is_gpu() && !e.is_software());
            let k = e.device().and_then(|g| g.cuda()).map(|c| c.kernel_source().clone());
            eprintln!("CUDA kernels: {k:?}");
            assert_eq!(e.name(), "cuda");
            // An ordinal past the last device is a Device error naming it.
            let err = Engine::cuda(4096).unwrap_err();
            assert_eq!(err.code(), 10, "{err}");
            assert!(err.to_string().contains("4096"), "{err}");
        }
        Err(err) => {
            assert_eq!(err.code(), 10, "{err}");
            assert!(err.to_string().contains("CUDA"), "{err}");
        }
    }
}

#[test]
fn a_cpu_blob_has_no_cuda_export() {
    let b = Blob::from_slice(&Engine::cpu(), &[3], &[1f32, 2., 3.]).unwrap();
    assert_eq!(b.dlpack_device(), (1, 0));
    assert_eq!(b.to_dlpack_cuda(None, None).unwrap_err().code(), 13);
    assert_eq!(b.export_cuda(true).unwrap_err().code(), 13);
}

static FOREIGN_DELETED: AtomicUsize = AtomicUsize::new(0);
unsafe extern "C" fn count_only(_m: *mut DLManagedTensorVersioned) {
    FOREIGN_DELETED.fetch_add(1, Ordering::SeqCst);
}

/// A managed tensor describing `data` on CUDA device `id` (nothing is
/// read through it unless an import succeeds).
fn cuda_tensor(data: u64, id: i32, shape: &mut [i64], strides: Option<&mut [i64]>, deleter: unsafe extern "C" fn(*mut DLManagedTensorVersioned)) -> DLManagedTensorVersioned {
    DLManagedTensorVersioned {
        version: DLPackVersion { major: 1, minor: 1 },
        manager_ctx: std::ptr::null_mut(),
        deleter: Some(deleter),
        flags: 0,
        dl_tensor: DLTensor {
            data: data as *mut std::ffi::c_void,
            device: DLDevice { device_type: DL_CUDA, device_id: id },
            ndim: shape.len() as i32,
            dtype: DLDataType { code: 2, bits: 32, lanes: 1 },
            shape: shape.as_mut_ptr(),
            strides: strides.map_or(std::ptr::null_mut(), |s| s.as_mut_ptr()),
            byte_offset: 0,
        },
    }
}

#[test]
fn a_cuda_tensor_needs_a_cuda_engine_and_is_left_to_its_owner_otherwise() {
    let before = FOREIGN_DELETED.load(Ordering::SeqCst);
    let mut shape = [4i64];
    let mut t = cuda_tensor(0x1000, 0, &mut shape, None, count_only);
    // SAFETY: the import fails before reading the (fake) memory.
    let err = unsafe { Blob::from_dlpack(&Engine::cpu(), &mut t, None) }.unwrap_err();
    assert_eq!(err.code(), 13, "{err}");
    assert!(err.to_string().contains("CUDA engine"), "{err}");
    assert_eq!(FOREIGN_DELETED.load(Ordering::SeqCst), before, "the deleter must not run on a failed import");
    if let Some(c) = cuda() {
        // Another device's tensor: refused, untouched.
        let mut t = cuda_tensor(0x1000, 7, &mut shape, None, count_only);
        // SAFETY: as above.
        let err = unsafe { Blob::from_dlpack(&c, &mut t, None) }.unwrap_err();
        assert_eq!(err.code(), 13, "{err}");
        assert!(err.to_string().contains("device 7"), "{err}");
        assert_eq!(FOREIGN_DELETED.load(Ordering::SeqCst), before);
    }
}

/// Raw device memory through the driver, as another library would hold it.
/// Each call first makes the engine's (primary) context current on the
/// calling thread, which any engine call does: tests run on many threads.
mod raw {
    use cudarc::driver::result as cu;
    fn enter() {
        super::cuda().unwrap().synchronize().unwrap();
    }
    pub fn alloc(bytes: usize) -> u64 {
        enter();
        // SAFETY: the engine's context is current on this thread.
        unsafe { cu::malloc_sync(bytes).unwrap() }
    }
    pub fn write(ptr: u64, data: &[f32]) {
        enter();
        // SAFETY: `ptr` addresses at least `data.len()` f32s on the device.
        unsafe { cu::memcpy_htod_sync(ptr, data).unwrap() }
    }
    pub fn read(ptr: u64, n: usize) -> Vec<f32> {
        enter();
        let mut v = vec![0f32; n];
        // SAFETY: as above.
        unsafe { cu::memcpy_dtoh_sync(&mut v, ptr).unwrap() };
        v
    }
    pub fn free(ptr: u64) {
        enter();
        // SAFETY: allocated by `alloc`, freed once.
        unsafe { cu::free_sync(ptr).unwrap() }
    }
}

static OWNED: std::sync::Mutex<Vec<u64>> = std::sync::Mutex::new(Vec::new());
static OWNED_DELETED: AtomicUsize = AtomicUsize::new(0);
unsafe extern "C" fn free_owned(m: *mut DLManagedTensorVersioned) {
    // SAFETY: the tensor is live until its deleter returns.
    let data = unsafe { (*m).dl_tensor.data } as u64;
    OWNED.lock().unwrap().retain(|&p| p != data);
    raw::free(data);
    OWNED_DELETED.fetch_add(1, Ordering::SeqCst);
}

#[test]
fn kdlcuda_exports_share_device_memory_both_ways() {
    let Some(c) = cuda() else { return };
    let b = Blob::tensor(&c, DType::F32, &[4, 5]).unwrap();
    b.fill(2.0).unwrap();
    assert_eq!(b.dlpack_device(), (DL_CUDA, 0));
    assert_eq!(b.to_dlpack_cuda(Some(0), None).unwrap_err().code(), 3, "stream 0 is ambiguous");
    let t = b.to_dlpack_cuda(Some(1), None).unwrap();
    // SAFETY: a live export.
    let tr = unsafe { t.as_ref() };
    assert_eq!((tr.dl_tensor.device.device_type, tr.dl_tensor.device.device_id), (DL_CUDA, 0));
    let ptr = tr.dl_tensor.data as u64;
    assert_eq!(raw::read(ptr, 20), vec![2f32; 20]);
    // The consumer writes the device memory: blobcore reads it.
    let v: Vec<f32> = (0..20).map(|i| i as f32).collect();
    raw::write(ptr, &v);
    assert_eq!(b.to_vec::<f32>().unwrap(), v);
    raw::write(ptr, &[9.0; 3]);
    assert_eq!(&b.to_vec::<f32>().unwrap()[..4], &[9.0, 9.0, 9.0, 3.0], "host reads fetch the device again while the export lives");
    // blobcore writes on the host: the consumer sees them on the device.
    b.copy_from_slice(&[5f32; 20]).unwrap();
    assert_eq!(raw::read(ptr, 20), vec![5f32; 20]);
    // ... and kernels write the device directly.
    b.scale(2.0).unwrap();
    c.synchronize().unwrap();
    assert_eq!(raw::read(ptr, 20), vec![10f32; 20]);
    // Importing blobcore's own export shares the storage.
    // SAFETY: our own live export, handed over once.
    let back = unsafe { Blob::from_dlpack(&c, t.as_ptr(), None) }.unwrap();
    back.fill(1.5).unwrap();
    assert_eq!(b.to_vec::<f32>().unwrap(), vec![1.5f32; 20]);
    // A copy export is a new device allocation.
    let t2 = b.to_dlpack_cuda(None, Some(true)).unwrap();
    // SAFETY: a live export.
    let p2 = unsafe { t2.as_ref() }.dl_tensor.data as u64;
    assert_ne!(p2, ptr);
    assert_eq!(raw::read(p2, 20), vec![1.5f32; 20]);
    // SAFETY: ours, freed once.
    unsafe { blobcore::dlpack::delete_tensor(t2.as_ptr()) };
}

#[test]
fn foreign_device_memory_is_shared_or_copied_and_freed_once() {
    let Some(c) = cuda() else { return };
    let before = OWNED_DELETED.load(Ordering::SeqCst);
    let v: Vec<f32> = (0..12).map(|i| i as f32 - 3.0).collect();
    // Shared: dense and aligned.
    let p = raw::alloc(48);
    OWNED.lock().unwrap().push(p);
    raw::write(p, &v);
    let mut shape = [3i64, 4];
    let mut t = cuda_tensor(p, 0, &mut shape, None, free_owned);
    // SAFETY: `p` holds 12 f32 until free_owned runs.
    let b = unsafe { Blob::from_dlpack(&c, &mut t, None) }.unwrap();
    assert_eq!(b.to_vec::<f32>().unwrap(), v);
    b.scale(2.0).unwrap();
    c.synchronize().unwrap();
    assert_eq!(raw::read(p, 12), v.iter().map(|x| x * 2.0).collect::<Vec<_>>(), "the blob's kernels write the tensor's memory");
    let view = b.index(&[Index::At(1)]).unwrap();
    drop(b);
    assert_eq!(OWNED_DELETED.load(Ordering::SeqCst), before, "a view keeps the memory");
    assert_eq!(view.to_vec::<f32>().unwrap(), vec![2.0, 4.0, 6.0, 8.0]);
    drop(view);
    assert_eq!(OWNED_DELETED.load(Ordering::SeqCst), before + 1, "freed once, after the last user");
    // Copied: transposed strides.
    let p = raw::alloc(48);
    OWNED.lock().unwrap().push(p);
    raw::write(p, &v);
    let mut shape = [4i64, 3];
    let mut strides = [1i64, 4];
    let mut t = cuda_tensor(p, 0, &mut shape, Some(&mut strides), free_owned);
    // SAFETY: as above.
    let b = unsafe { Blob::from_dlpack(&c, &mut t, None) }.unwrap();
    assert_eq!(OWNED_DELETED.load(Ordering::SeqCst), before + 2, "a copy frees the tensor at once");
    let want = Blob::from_slice(&Engine::cpu(), &[3, 4], &v).unwrap().permuted(&[1, 0]).unwrap().to_vec::<f32>().unwrap();
    assert_eq!(b.to_vec::<f32>().unwrap(), want);
    // copy=false refuses what needs a copy, and leaves the tensor alone.
    let p = raw::alloc(48);
    OWNED.lock().unwrap().push(p);
    let mut t = cuda_tensor(p, 0, &mut shape, Some(&mut strides), free_owned);
    // SAFETY: as above.
    let err = unsafe { Blob::from_dlpack(&c, &mut t, Some(false)) }.unwrap_err();
    assert_eq!(err.code(), 13, "{err}");
    assert_eq!(OWNED_DELETED.load(Ordering::SeqCst), before + 2);
    // SAFETY: still ours.
    unsafe { free_owned(&mut t) };
}

#[derive(Debug, Clone)]
enum Op {
    Fill(f64),
    Scale(f32),
    Add,
    Sub,
    CopyFrom,
    Permute(Vec<usize>),
    Reverse(usize),
    Step(usize, i64),
    Merge(usize),
    Asum,
    Sumsq,
}

fn case() -> impl Strategy<Value = (Vec<usize>, u8, Op)> {
    let dims = proptest::collection::vec(1usize..24, 1..5);
    (dims, 0u8..4).prop_flat_map(|(dims, dt)| {
        let rank = dims.len();
        let perm = Just((0..rank).collect::<Vec<usize>>()).prop_shuffle();
        let op = prop_oneof![
            (-1e3f64..1e3).prop_map(Op::Fill),
            (-4f32..4.0).prop_map(Op::Scale),
            Just(Op::Add),
            Just(Op::Sub),
            Just(Op::CopyFrom),
            perm.prop_map(Op::Permute),
            (0..rank).prop_map(Op::Reverse),
            (0..rank, 2i64..4).prop_map(|(a, s)| Op::Step(a, s)),
            (0..rank).prop_map(Op::Merge),
            Just(Op::Asum),
            Just(Op::Sumsq),
        ];
        (Just(dims), Just(dt), op)
    })
}

fn dtype(code: u8) -> DType {
    [DType::F32, DType::I32, DType::F64, DType::F16][code as usize % 4]
}

/// Values both engines hold exactly, of every dtype under test.
fn values(n: usize, seed: usize) -> Vec<f64> {
    (0..n).map(|i| (((i * 7 + seed * 13) % 61) as f64 - 30.0) * 0.5).collect()
}

fn blob(e: &Engine, dims: &[usize], dt: DType, v: &[f64]) -> Blob {
    let b = Blob::from_slice(&Engine::cpu(), dims, v).unwrap().cast(dt).unwrap();
    let out = Blob::new(e, dt, blobcore::Shape::new(dims).unwrap()).unwrap();
    out.copy_from(&b).unwrap();
    out
}

/// The values as f64 (exact for every dtype under test).
fn f64s(b: &Blob) -> Vec<f64> {
    b.cast(DType::F64).unwrap().to_vec::<f64>().unwrap()
}

/// One op on both engines: the results (values, or the reduction) agree.
fn run(c: &Engine, dims: &[usize], dt: DType, op: &Op) -> Result<(), TestCaseError> {
    let cpu = Engine::cpu();
    let n: usize = dims.iter().product();
    let (va, vb) = (values(n, 1), values(n, 2));
    let (ga, ca) = (blob(c, dims, dt, &va), blob(&cpu, dims, dt, &va));
    let (gb, cb) = (blob(c, dims, dt, &vb), blob(&cpu, dims, dt, &vb));
    let key = |axis: usize, k: Index| -> Vec<Index> { (0..dims.len()).map(|i| if i == axis { k } else { Index::Range { start: None, stop: None, step: None } }).collect() };
    let (g, h): (Blob, Blob) = match op {
        Op::Fill(v) => { ga.fill(*v).unwrap(); ca.fill(*v).unwrap(); (ga, ca) }
        Op::Scale(f) => {
            let (r1, r2) = (ga.scale(*f as f64), ca.scale(*f as f64));
            prop_assert_eq!(r1.is_ok(), r2.is_ok());
            (ga, ca)
        }
        Op::Add => {
            let (r1, r2) = (ga.add(&gb), ca.add(&cb));
            prop_assert_eq!(r1.is_ok(), r2.is_ok());
            (ga, ca)
        }
        Op::Sub => {
            // Caffe's update: data -= diff.
            ga.diff().unwrap().copy_from(&gb).unwrap();
            ca.diff().unwrap().copy_from(&cb).unwrap();
            let (r1, r2) = (ga.update(), ca.update());
            prop_assert_eq!(r1.is_ok(), r2.is_ok());
            (ga, ca)
        }
        Op::CopyFrom => { ga.copy_from(&gb).unwrap(); ca.copy_from(&cb).unwrap(); (ga, ca) }
        Op::Permute(p) => {
            let axes: Vec<isize> = p.iter().map(|&a| a as isize).collect();
            (ga.permuted(&axes).unwrap(), ca.permuted(&axes).unwrap())
        }
        Op::Reverse(a) => {
            let k = key(*a, Index::Range { start: None, stop: None, step: Some(-1) });
            (ga.index(&k).unwrap().copy().unwrap(), ca.index(&k).unwrap().copy().unwrap())
        }
        Op::Step(a, s) => {
            let k = key(*a, Index::Range { start: None, stop: None, step: Some(*s) });
            (ga.index(&k).unwrap().copy().unwrap(), ca.index(&k).unwrap().copy().unwrap())
        }
        Op::Merge(a) => {
            let mut md = dims.to_vec();
            md[*a] *= 2;
            let (gm, cm) = (Blob::new(c, dt, blobcore::Shape::new(&md).unwrap()).unwrap(), Blob::new(&cpu, dt, blobcore::Shape::new(&md).unwrap()).unwrap());
            Blob::merge(&[&ga, &gb], *a as isize, &gm).unwrap();
            Blob::merge(&[&ca, &cb], *a as isize, &cm).unwrap();
            // And back: split must give the parts again.
            let (gs, cs) = (blob(c, dims, dt, &vec![0.0; n]), blob(&cpu, dims, dt, &vec![0.0; n]));
            let (gs2, cs2) = (blob(c, dims, dt, &vec![0.0; n]), blob(&cpu, dims, dt, &vec![0.0; n]));
            Blob::split(&gm, *a as isize, &[&gs, &gs2]).unwrap();
            Blob::split(&cm, *a as isize, &[&cs, &cs2]).unwrap();
            prop_assert_eq!(f64s(&gs2), f64s(&cs2));
            (gm, cm)
        }
        Op::Asum | Op::Sumsq => {
            let (x, y) = if matches!(op, Op::Asum) { (ga.asum(), ca.asum()) } else { (ga.sumsq(), ca.sumsq()) };
            let (x, y) = (x.unwrap(), y.unwrap());
            prop_assert!((x - y).abs() <= 1e-5 * y.abs().max(1.0), "{x} vs {y}");
            return Ok(());
        }
    };
    prop_assert_eq!(g.dims(), h.dims());
    prop_assert_eq!(g.dtype(), h.dtype());
    // Bit-exact for every dtype: compare as f64 (exact for all of them).
    prop_assert_eq!(f64s(&g), f64s(&h));
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, rng_seed: proptest::test_runner::RngSeed::Fixed(33), failure_persistence: None, ..ProptestConfig::default() })]
    /// Every device operation on random shapes and dtypes equals the CPU
    /// engine's result (bit for bit; reductions within 1e-5).
    #[test]
    fn cuda_ops_equal_the_cpu_engine((dims, dt, op) in case()) {
        let Some(c) = cuda() else { return Ok(()) };
        run(&c, &dims, dtype(dt), &op)?;
    }
}
