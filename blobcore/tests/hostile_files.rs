//! Every decoder fed a corpus of mutated real files — truncations, bit
//! flips, huge size fields, trailing garbage — must return a Format (or
//! DType) error or a valid blob, never panic, and never allocate much more
//! than its input. A counting allocator measures the largest single
//! allocation each decode makes. This is the stable-toolchain companion of
//! the cargo-fuzz targets in `fuzz/`.

use blobcore::{Blob, DType, Engine, Error};
use std::alloc::{GlobalAlloc, Layout, System};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Tracks the largest single allocation request since the last reset.
struct Counting;
static LARGEST: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards every call to the system allocator unchanged; only
// records the requested size.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        LARGEST.fetch_max(l.size(), Ordering::Relaxed);
        // SAFETY: same layout contract as the caller's.
        unsafe { System.alloc(l) }
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        LARGEST.fetch_max(l.size(), Ordering::Relaxed);
        // SAFETY: same layout contract as the caller's.
        unsafe { System.alloc_zeroed(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: p was allocated by System with layout l.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        LARGEST.fetch_max(n, Ordering::Relaxed);
        // SAFETY: p was allocated by System with layout l.
        unsafe { System.realloc(p, l, n) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// The tests in this file share the allocation counter: each holds this
/// lock for its whole run.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

fn data(name: &str) -> Vec<u8> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/caffe").join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

type Decoder = fn(&Engine, &[u8]) -> blobcore::Result<Blob>;

/// xorshift: a deterministic corpus without a rand dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Truncations, bit flips (biased to the header), overwritten 4-byte
/// fields with huge values, and appended garbage.
fn mutations(seed: &[u8], rng: &mut Rng, header: usize) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let n = seed.len();
    let mut cuts: Vec<usize> = (0..header.min(n)).collect();
    cuts.extend((0..40).map(|_| rng.below(n)));
    cuts.push(n - 1);
    for c in cuts {
        out.push((format!("truncated to {c}"), seed[..c].to_vec()));
    }
    for i in 0..400 {
        let mut v = seed.to_vec();
        let pos = if i % 2 == 0 { rng.below(header.min(n)) } else { rng.below(n) };
        v[pos] ^= 1 << rng.below(8);
        out.push((format!("bit flip at {pos}"), v));
    }
    for pos in 0..header.min(n).saturating_sub(4) {
        for word in [0xFFFF_FFFFu32, 0x7FFF_FFFF, 0x8000_0000, 0x4000_0000] {
            let mut v = seed.to_vec();
            v[pos..pos + 4].copy_from_slice(&word.to_le_bytes());
            out.push((format!("{word:#x} written at {pos}"), v));
        }
    }
    for tail in [&[0u8][..], &[0xFF; 7], b"garbage"] {
        let mut v = seed.to_vec();
        v.extend_from_slice(tail);
        out.push((format!("{} trailing bytes", tail.len()), v));
    }
    out
}

/// Runs one decoder over the corpus; returns how many inputs it rejected.
fn survive(name: &str, decode: Decoder, seed: &[u8], header: usize, must_reject_truncation: bool) -> usize {
    let e = Engine::cpu();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut rejected = 0;
    for (what, input) in mutations(seed, &mut rng, header) {
        LARGEST.store(0, Ordering::Relaxed);
        let r = catch_unwind(AssertUnwindSafe(|| decode(&e, &input)));
        let largest = LARGEST.load(Ordering::Relaxed);
        let r = r.unwrap_or_else(|_| panic!("{name}: decoder panicked on input {what}"));
        // The data itself may need the input's size again (a blob), plus
        // a growing Vec's doubling: 3x the input bounds every decoder.
        assert!(
            largest <= 3 * input.len() + 4096,
            "{name}: {what}: allocated {largest} bytes for {} input bytes",
            input.len()
        );
        match r {
            Ok(b) => {
                assert!(b.byte_size() <= input.len(), "{name}: {what}: a blob larger than its file");
                if must_reject_truncation && what.starts_with("truncated") {
                    panic!("{name}: {what} was accepted");
                }
            }
            Err(Error::Format(m)) => {
                assert!(m.starts_with(name.split(' ').next().unwrap_or(name)) || m.contains(':'), "{m}");
                rejected += 1;
            }
            Err(Error::DType(_) | Error::Unsupported(_)) => rejected += 1,
            Err(other) => panic!("{name}: {what}: unexpected error {other:?}"),
        }
    }
    rejected
}

#[test]
fn caffe_decoder_survives_mutated_real_files() {
    let _g = serial();
    for file in ["cifar10_mean.binaryproto", "imagenet_mean.binaryproto"] {
        let seed = data(file);
        let rejected = survive("Caffe BlobProto", Blob::from_caffe_bytes, &seed, 24, false);
        assert!(rejected > 100, "{file}: only {rejected} mutations rejected");
    }
}

#[test]
fn npy_decoder_survives_mutated_real_files() {
    let _g = serial();
    let seed = data("ilsvrc_2012_mean.npy");
    let rejected = survive(".npy", Blob::from_npy_bytes, &seed, 128, true);
    assert!(rejected > 300, "only {rejected} rejected");
}

#[test]
fn neoml_decoder_survives_mutated_archives() {
    let _g = serial();
    let e = Engine::cpu();
    let mean = Blob::load_caffe(&e, PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/caffe/cifar10_mean.binaryproto"))
        .unwrap();
    let a = Blob::image2d(&e, DType::F32, 1, 1, 3, 32, 32).unwrap();
    a.copy_from_slice(&mean.to_vec::<f32>().unwrap()).unwrap();
    let seed = a.to_neoml_bytes().unwrap();
    let rejected = survive("NeoML archive", Blob::from_neoml_bytes, &seed, 46, true);
    assert!(rejected > 300, "only {rejected} rejected");
    // CDnnBlob::Serialize's form: the same without the isNull byte.
    let seed = a.to_neoml_bytes_as(blobcore::NeomlForm::Serialize).unwrap();
    let rejected = survive("NeoML archive (Serialize form)", Blob::from_neoml_bytes, &seed, 45, true);
    assert!(rejected > 300, "only {rejected} rejected");
}

/// A decoded map as one blob of its total byte size (what `survive` checks).
fn total_of(e: &Engine, m: blobcore::Result<blobcore::BlobMap>) -> blobcore::Result<Blob> {
    let m = m?;
    let total: usize = m.entries().iter().flat_map(|x| x.blobs()).map(Blob::byte_size).sum();
    Blob::tensor(e, DType::U8, &[total])
}

fn safetensors_total(e: &Engine, bytes: &[u8]) -> blobcore::Result<Blob> {
    total_of(e, blobcore::BlobMap::from_safetensors_bytes(e, bytes))
}

fn caffemodel_total(e: &Engine, bytes: &[u8]) -> blobcore::Result<Blob> {
    total_of(e, blobcore::BlobMap::from_caffemodel_bytes(e, bytes))
}

/// The CIFAR-10 mean as weights, with an int64 and a bfloat16 tensor.
fn weight_map(e: &Engine) -> blobcore::BlobMap {
    let mean = Blob::from_caffe_bytes(e, &data("cifar10_mean.binaryproto")).unwrap();
    let mut m = blobcore::BlobMap::new();
    m.insert_all("conv1", "Convolution", vec![mean, Blob::from_slice(e, &[3], &[0.5f32, 1.0, 2.0]).unwrap()]);
    m
}

#[test]
fn safetensors_decoder_survives_mutated_files() {
    let _g = serial();
    let e = Engine::cpu();
    let mut m = blobcore::BlobMap::new();
    let w = weight_map(&e);
    m.insert("mean", w.blobs("conv1").unwrap()[0].clone());
    m.insert("steps", Blob::from_slice(&e, &[4], &[1i64, 2, 3, 4]).unwrap());
    m.insert("half", Blob::from_slice(&e, &[2], &[half::bf16::from_f32(1.5); 2]).unwrap());
    m.set_metadata("format", "pt");
    let seed = m.to_safetensors_bytes().unwrap();
    let header = 8 + u64::from_le_bytes(seed[..8].try_into().unwrap()) as usize;
    let rejected = survive("safetensors", safetensors_total, &seed, header, true);
    assert!(rejected > 300, "only {rejected} rejected");
}

fn gguf_total(e: &Engine, bytes: &[u8]) -> blobcore::Result<Blob> {
    total_of(e, blobcore::BlobMap::from_gguf_bytes(e, bytes))
}

#[test]
fn gguf_decoder_survives_mutated_files() {
    use blobcore::io::gguf::{GgufArray, GgufValue};
    let _g = serial();
    let e = Engine::cpu();
    let mut m = blobcore::BlobMap::new();
    let w = weight_map(&e);
    m.insert("mean", w.blobs("conv1").unwrap()[0].clone());
    m.insert("steps", Blob::from_slice(&e, &[4], &[1i64, 2, 3, 4]).unwrap());
    m.insert("half", Blob::from_slice(&e, &[2], &[half::bf16::from_f32(1.5); 2]).unwrap());
    let meta = vec![
        ("general.architecture".to_string(), GgufValue::String("test".into())),
        ("tokens".to_string(), GgufValue::Array(GgufArray::String(vec!["a".into(), "bc".into(), String::new()]))),
        ("nested".to_string(), GgufValue::Array(GgufArray::Array(vec![GgufArray::U32(vec![1, 2]), GgufArray::F32(vec![0.5])]))),
        ("eps".to_string(), GgufValue::F32(1e-5)),
    ];
    let seed = m.to_gguf_bytes(&meta).unwrap();
    let h = blobcore::io::gguf::parse_header(&seed).unwrap();
    let rejected = survive("gguf", gguf_total, &seed, h.data_start as usize, false);
    assert!(rejected > 300, "only {rejected} rejected");
}

#[test]
fn caffemodel_decoder_survives_mutated_files() {
    let _g = serial();
    let e = Engine::cpu();
    let seed = weight_map(&e).to_caffemodel_bytes().unwrap();
    let rejected = survive("Caffe NetParameter", caffemodel_total, &seed, 48, false);
    assert!(rejected > 100, "only {rejected} rejected");
}

#[test]
fn a_header_claiming_2_pow_40_elements_allocates_nothing_large() {
    let _g = serial();
    let e = Engine::cpu();
    let npy = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': ({}, ), }}\n", 1u64 << 40);
    let mut v = b"\x93NUMPY\x01\x00".to_vec();
    v.extend_from_slice(&(npy.len() as u16).to_le_bytes());
    v.extend_from_slice(npy.as_bytes());
    // BlobShape dim = 2^40 with no data (varint of 2^40 is 6 bytes).
    let mut shape_msg = vec![0x0a];
    let mut varint = vec![];
    let mut x = 1u64 << 40;
    while x >= 0x80 {
        varint.push((x as u8) | 0x80);
        x >>= 7;
    }
    varint.push(x as u8);
    shape_msg.push(varint.len() as u8);
    shape_msg.extend_from_slice(&varint);
    let mut proto = vec![0x3a, shape_msg.len() as u8];
    proto.extend_from_slice(&shape_msg);
    let mut neoml = vec![0u8, 0xFF, 0xD0, 0x07, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0];
    for d in [1i32 << 20, 1 << 20, 1, 1, 1, 1, 1] {
        neoml.extend_from_slice(&d.to_le_bytes());
    }
    neoml.extend_from_slice(&u32::MAX.to_le_bytes());
    for (name, input, decode) in [
        (".npy", v, Blob::from_npy_bytes as Decoder),
        ("Caffe", proto, Blob::from_caffe_bytes as Decoder),
        ("NeoML", neoml, Blob::from_neoml_bytes as Decoder),
    ] {
        // The counter sees every thread's allocations, and the test
        // harness allocates on its own threads when another test ends
        // (its output, the result line): a decoder that allocates for the
        // header's size does so on every try, the harness not every time,
        // so the smallest of three tries is the decoder's.
        let mut largest = usize::MAX;
        for _ in 0..3 {
            LARGEST.store(0, Ordering::Relaxed);
            let r = decode(&e, &input);
            assert!(matches!(&r, Err(Error::Format(_))), "{name}: {r:?}");
            largest = largest.min(LARGEST.load(Ordering::Relaxed));
        }
        assert!(largest < 4096, "{name}: allocated {largest} bytes");
    }
}
