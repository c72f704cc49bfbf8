//! The bad-input matrix of the Rust API: every row is one bad call with the
//! error code it must return and words its message must contain; after
//! every row, the fixture blobs must be exactly as before (dims, dtype,
//! bytes, held buffers). The C (tests/c/bad_input.c) and Python
//! (python/tests/test_bad_input.py) matrices do the same through their
//! interfaces.

mod common;

use blobcore::io::npy;
use blobcore::{Blob, BlobDim, BlockingDesc, DType, Engine, Error, Index, Layout, Result, Scalar, Shape, TensorDesc};
use std::ptr::NonNull;

/// A memory file of `len` bytes, sealed against shrinking or not.
fn memfd(len: i64, sealed: bool) -> std::fs::File {
    use std::os::fd::FromRawFd;
    let flags = libc::MFD_CLOEXEC | if sealed { libc::MFD_ALLOW_SEALING } else { 0 };
    // SAFETY: a literal name; the result is checked.
    let fd = unsafe { libc::memfd_create(c"t".as_ptr(), flags) };
    assert!(fd >= 0);
    // SAFETY: just opened, owned by nothing else.
    let f = unsafe { std::fs::File::from_raw_fd(fd) };
    f.set_len(len as u64).unwrap();
    if sealed {
        // SAFETY: adds a seal to a descriptor we own.
        assert_eq!(unsafe { libc::fcntl(fd, libc::F_ADD_SEALS, libc::F_SEAL_SHRINK) }, 0);
    }
    f
}

fn from_fd(e: &Engine, f: &std::fs::File, dims: &[usize], offset: u64) -> Result<Blob> {
    use std::os::fd::AsFd;
    Blob::from_shared_fd(e, DType::F32, Shape::new(dims)?, f.as_fd(), offset)
}

fn io(e: std::io::Error) -> Error {
    Error::Io(e.to_string())
}

const NULL_POINTER: i32 = 1;
const INVALID_ARGUMENT: i32 = 3;
const SHAPE: i32 = 4;
const DTYPE: i32 = 5;
const OUT_OF_RANGE: i32 = 6;
const LIFO: i32 = 7;
const BUSY: i32 = 8;
const OUT_OF_MEMORY: i32 = 9;
const DEVICE: i32 = 10;
const IO: i32 = 11;
const FORMAT: i32 = 12;
const UNSUPPORTED: i32 = 13;
const READ_ONLY: i32 = 15;

/// The blobs every row may touch.
struct Fx {
    e: Engine,
    /// f32 [2, 3] = 0..6
    a: Blob,
    /// i32 [2, 3] = 10..16
    b: Blob,
    /// f32 [3, 2]
    c: Blob,
    /// f32 [10]
    v: Blob,
    /// a window of `a` (one row)
    w: Blob,
    /// f32 [4] with a buffer held on elements [0, 2)
    l: Blob,
    held: usize,
    /// f32 [1, 8, 2, 2] laid out as channels blocked by 8 (not dense)
    blocked: Blob,
}

fn fixtures() -> Fx {
    let e = common::engine();
    let a = Blob::from_slice(&e, &[2, 3], &[0f32, 1., 2., 3., 4., 5.]).unwrap();
    let b = Blob::from_slice(&e, &[2, 3], &[10i32, 11, 12, 13, 14, 15]).unwrap();
    let c = Blob::from_slice(&e, &[3, 2], &[6f32; 6]).unwrap();
    let v = Blob::from_slice(&e, &[10], &[1f32; 10]).unwrap();
    let w = a.window(1).unwrap();
    let l = Blob::from_slice(&e, &[4], &[7f32; 4]).unwrap();
    let held = l.get_buffer(0, 2, true).unwrap().as_ptr() as usize;
    let desc = TensorDesc::with_blocking(DType::F32, &[1, 8, 2, 2], BlockingDesc::new(&[1, 1, 2, 2, 8], &[0, 1, 2, 3, 1]).unwrap())
        .unwrap();
    let blocked = Blob::with_desc(&e, &desc).unwrap();
    Fx { e, a, b, c, v, w, l, held, blocked }
}

/// Everything observable about the fixtures.
fn digest(f: &Fx) -> Vec<(Vec<usize>, DType, Vec<u8>, usize)> {
    [&f.a, &f.b, &f.c, &f.v, &f.w, &f.l]
        .iter()
        .map(|x| {
            let mut bytes = vec![0u8; x.byte_size()];
            x.copy_to_bytes(&mut bytes).unwrap();
            (x.dims(), x.dtype(), bytes, x.held_buffers())
        })
        .collect()
}

type Call = Box<dyn Fn(&Fx) -> Result<()>>;

fn ok<T>(r: Result<T>) -> Result<()> {
    r.map(|_| ())
}

/// Runs `op` on `x` and checks that `x`'s bytes are as before.
fn unchanged(x: &Blob, op: impl Fn(&Blob) -> Result<()>) -> Result<()> {
    let mut before = vec![0u8; x.byte_size()];
    x.copy_to_bytes(&mut before)?;
    let r = op(x);
    let mut after = vec![0u8; x.byte_size()];
    x.copy_to_bytes(&mut after)?;
    assert_eq!(before, after, "a refused operation changed its blob");
    r
}

/// Runs `op` on a blob over wrapped memory and checks that the blob still
/// writes that memory afterwards (whatever `op` returned).
fn lent(e: &Engine, op: impl Fn(&Blob) -> Result<()>) -> Result<()> {
    let mut mem = [1f32, 2.0, 3.0, 4.0];
    let p = std::ptr::NonNull::new(mem.as_mut_ptr() as *mut u8).ok_or_else(|| Error::NullPointer("".into()))?;
    // SAFETY: `mem` outlives the blob, which is dropped in this function.
    let x = unsafe { Blob::wrap(e, DType::F32, Shape::new(&[4])?, p, 16, None) }?;
    let r = unchanged(&x, op);
    assert!(!x.is_shared() && x.dims() == [4], "a refused operation changed its blob");
    x.fill(9.0)?;
    drop(x);
    assert_eq!(mem, [9.0; 4], "the blob left the memory it wraps");
    r
}

/// A read-only blob over static memory (as a read-only NumPy array is).
fn read_only(e: &Engine) -> Blob {
    static MEM: [f32; 4] = [1.0, 2.0, 3.0, 4.0];
    // SAFETY: a static lives forever and the blob only reads it.
    unsafe { Blob::wrap_read_only(e, DType::F32, Shape::new(&[4]).unwrap(), std::ptr::NonNull::from(&MEM).cast(), 16, None) }.unwrap()
}

/// `read_only`'s memory seen as 16 `u8` elements.
fn read_only_u8(e: &Engine) -> Blob {
    static MEM: [u8; 16] = [1; 16];
    // SAFETY: a static lives forever and the blob only reads it.
    unsafe { Blob::wrap_read_only(e, DType::U8, Shape::new(&[16]).unwrap(), std::ptr::NonNull::from(&MEM).cast(), 16, None) }.unwrap()
}

macro_rules! rows {
    ($( $code:expr, $words:expr, |$f:ident| $call:expr; )*) => {
        vec![$( (stringify!($call), $code, $words, Box::new(move |#[allow(unused_variables)] $f: &Fx| ok($call)) as Call) ),*]
    };
}

#[test]
fn every_bad_call_fails_clearly_and_changes_nothing() {
    let table = rows![
        // Shapes and dtypes.
        SHAPE, "negative", |f| Shape::from_i64(&[-1]);
        SHAPE, "negative", |f| Shape::from_i64(&[2, -3]);
        SHAPE, "rank 33", |f| Shape::new(&[1; 33]);
        SHAPE, "rank 40", |f| Shape::from_i64(&[1; 40]);
        SHAPE, "overflow", |f| Shape::new(&[1 << 40, 1 << 40]);
        SHAPE, "overflow", |f| Shape::new(&[usize::MAX, 2]);
        SHAPE, "", |f| Blob::tensor(&f.e, DType::F64, &[1 << 61, 4]);
        SHAPE, "rank 33", |f| Blob::tensor(&f.e, DType::F32, &[1; 33]);
        DTYPE, "code 0", |f| DType::from_code(0);
        DTYPE, "code 17", |f| DType::from_code(17);
        DTYPE, "1..=16", |f| DType::from_code(i32::MAX);
        // Arithmetic on the storage-only dtypes names the way out.
        DTYPE, "astype", |f| { let x = Blob::full(&f.e, DType::Bool, &[3], 1.0)?; x.add(&x) };
        DTYPE, "astype", |f| { let x = Blob::full(&f.e, DType::F8E4M3Fn, &[3], 1.5)?; unchanged(&x, |x| x.scale(2.0)) };
        DTYPE, "astype", |f| { let x = Blob::full(&f.e, DType::F8E5M2, &[3], 1.5)?; x.diff()?.fill(1.0)?; unchanged(&x, |x| x.update()) };
        DTYPE, "astype", |f| Blob::full(&f.e, DType::F8E8M0Fnu, &[3], 2.0)?.asum();
        DTYPE, "astype", |f| Blob::full(&f.e, DType::Bool, &[3], 1.0)?.sumsq();
        DTYPE, "astype", |f| { let x = Blob::full(&f.e, DType::Bool, &[2, 3], 1.0)?; let v = x.transposed(0, 1)?; unchanged(&x, |_| v.add(&v)) };
        // Formats that cannot hold a dtype say which they hold.
        DTYPE, "float8_e4m3fn", |f| Blob::tensor(&f.e, DType::F8E4M3Fn, &[2])?.to_npy_bytes();
        DTYPE, "float32 or int32", |f| Blob::tensor(&f.e, DType::U16, &[2])?.to_neoml_bytes();
        DTYPE, "float32 or float64", |f| Blob::tensor(&f.e, DType::Bool, &[2])?.to_caffe_bytes(false);
        DTYPE, "code -1", |f| DType::from_code(-1);
        OUT_OF_RANGE, "7", |f| BlobDim::from_index(7);
        OUT_OF_RANGE, "-1", |f| BlobDim::from_index(-1);
        // Axes, indices and named dims.
        OUT_OF_RANGE, "axis", |f| f.a.dim(2);
        OUT_OF_RANGE, "axis", |f| f.a.dim(-3);
        OUT_OF_RANGE, "axis", |f| f.a.canonical_axis(5);
        OUT_OF_RANGE, "", |f| f.a.count_range(2, 1);
        OUT_OF_RANGE, "", |f| f.a.count_range(0, 3);
        OUT_OF_RANGE, "", |f| f.a.offset(&[2, 0]);
        OUT_OF_RANGE, "", |f| f.a.offset(&[0, 3]);
        OUT_OF_RANGE, "", |f| f.a.offset(&[0, 0, 0]);
        OUT_OF_RANGE, "", |f| f.a.legacy_shape(4);
        OUT_OF_RANGE, "", |f| f.a.legacy_shape(-5);
        SHAPE, "", |f| Blob::tensor(&f.e, DType::F32, &[1; 5]).unwrap().legacy_shape(0);
        SHAPE, "", |f| Blob::tensor(&f.e, DType::F32, &[1; 8]).unwrap().named_dim(BlobDim::Channels);
        SHAPE, "", |f| Blob::tensor(&f.e, DType::F32, &[1; 8]).unwrap().object_count();
        // Reshape and reinterpret.
        SHAPE, "rank 33", |f| f.a.reshape(&[1; 33]);
        SHAPE, "overflow", |f| f.a.reshape(&[1 << 40, 1 << 40]);
        SHAPE, "", |f| f.a.reinterpret(&[4, 2]);
        SHAPE, "", |f| f.a.reinterpret(&[7]);
        BUSY, "", |f| f.a.reshape(&[4, 4]);
        BUSY, "", |f| f.l.reshape(&[100]);
        // Copies and arithmetic: dtypes, dims, lengths.
        DTYPE, "dtypes differ", |f| f.a.copy_from(&f.b);
        SHAPE, "dims differ", |f| f.a.copy_from(&f.c);
        DTYPE, "dtypes differ", |f| f.a.add(&f.b);
        SHAPE, "dims differ", |f| f.a.add(&f.c);
        INVALID_ARGUMENT, "5 elements", |f| f.a.copy_from_slice(&[1f32; 5]);
        INVALID_ARGUMENT, "5 elements", |f| Blob::from_slice(&f.e, &[2, 3], &[1f32; 5]);
        INVALID_ARGUMENT, "7 elements", |f| Blob::from_slice(&f.e, &[2, 3], &[1u8; 7]);
        SHAPE, "too large", |f| Blob::from_slice(&f.e, &[usize::MAX / 2, 4], &[1f32; 1]);
        DTYPE, "", |f| f.a.copy_from_slice(&[1i32; 6]);
        INVALID_ARGUMENT, "", |f| f.a.copy_to_slice(&mut [0f32; 5]);
        INVALID_ARGUMENT, "23 bytes", |f| f.a.copy_from_bytes(&[0u8; 23]);
        INVALID_ARGUMENT, "", |f| f.a.copy_to_bytes(&mut [0u8; 25]);
        INVALID_ARGUMENT, "23 bytes given", |f| Blob::from_bytes(&f.e, DType::F32, &[2, 3], &[0u8; 23]);
        INVALID_ARGUMENT, "25 bytes given", |f| Blob::from_bytes(&f.e, DType::F32, &[2, 3], &[0u8; 25]);
        INVALID_ARGUMENT, "8 bytes given", |f| Blob::from_bytes(&f.e, DType::F64, &[0], &[0u8; 8]);
        SHAPE, "overflow", |f| Blob::from_bytes(&f.e, DType::F32, &[1 << 40, 1 << 40], &[]);
        SHAPE, "rank 33", |f| Blob::from_bytes(&f.e, DType::F32, &[1; 33], &[0u8; 4]);
        DTYPE, "", |f| f.a.to_vec::<i32>();
        DTYPE, "", |f| f.b.to_vec::<f64>();
        DTYPE, "dtypes differ", |f| f.a.copy_from_caffe(&f.b, false, true);
        OUT_OF_RANGE, "", |f| f.a.count_from(3);
        FORMAT, "not a valid message", |f| f.a.shape_equals_caffe(&[0xff, 0xff]);
        OUT_OF_RANGE, "legacy dim 3", |f| f.a.legacy_offset(0, 3, 0, 0);
        OUT_OF_RANGE, "legacy dim 1", |f| f.a.data_at(0, 0, 1, 0);
        OUT_OF_RANGE, "legacy dim 2", |f| f.a.diff_at(2, 0, 0, 0);
        OUT_OF_RANGE, "", |f| f.a.data_at_index(&[0, 3]);
        OUT_OF_RANGE, "", |f| f.a.diff_at_index(&[2]);
        OUT_OF_RANGE, "no elements", |f| Blob::tensor(&f.e, DType::F32, &[3, 0]).unwrap().data_at_index(&[0]);
        OUT_OF_RANGE, "no elements", |f| Blob::tensor(&f.e, DType::F32, &[0]).unwrap().data_at_index(&[]);
        OUT_OF_RANGE, "no elements", |f| Blob::tensor(&f.e, DType::F32, &[3, 0]).unwrap().diff_at_index(&[1]);
        OUT_OF_RANGE, "no elements", |f| Blob::tensor(&f.e, DType::F32, &[3, 0]).unwrap().permuted_view(&[1, 0]).unwrap().data_at_index(&[]);
        OUT_OF_RANGE, "no elements", |_f| Shape::new(&[3, 0]).unwrap().element_offset(&[1]);
        OUT_OF_RANGE, "dim 3", |_f| Shape::new(&[2, 3]).unwrap().element_offset(&[1, 3]);
        SHAPE, "flat sequence of 6", |f| f.a.check_source_dims(&[3, 2]);
        SHAPE, "dims [5]", |f| f.a.check_source_dims(&[5]);
        SHAPE, "dims []", |f| f.a.check_source_dims(&[]);
        SHAPE, "reshape is false", |f| f.a.copy_from_caffe(&f.c, false, false);
        // Raw memory of layouts: spans checked, views without one refused.
        OUT_OF_RANGE, "elements of raw memory", |f| f.blocked.get_buffer(0, 65, true).map(|_| ());
        OUT_OF_RANGE, "elements of raw memory", |f| f.blocked.buffer_read::<f32>(60, 5).map(|_| ());
        UNSUPPORTED, "contiguous span", |f| f.a.region(&[0, 1], &[2, 3])?.raw();
        UNSUPPORTED, "contiguous span", |f| f.a.permuted_view(&[1, 0])?.get_buffer(0, 1, true).map(|_| ());
        UNSUPPORTED, "contiguous span", |f| f.a.permuted_view(&[1, 0])?.export_range(0, 1).map(|_| ());
        OUT_OF_RANGE, "exceeds", |f| f.blocked.export_range(64, 1).map(|_| ());
        // Memory-mapped files.
        INVALID_ARGUMENT, "mmap_mode", |f| blobcore::mapped::MapMode::from_name("w");
        IO, "nonexistent", |f| Blob::load_npy_mapped(&f.e, "/nonexistent/x.npy", blobcore::mapped::MapMode::ReadOnly);
        // Weight files (safetensors, .caffemodel) and BlobMap.
        IO, "nonexistent", |f| blobcore::BlobMap::load_safetensors(&f.e, "/nonexistent/x.safetensors", true).map(|_| ());
        IO, "nonexistent", |f| blobcore::BlobMap::load_safetensors(&f.e, "/nonexistent/x.safetensors", false).map(|_| ());
        FORMAT, "too short", |f| blobcore::BlobMap::from_safetensors_bytes(&f.e, &[1, 2]).map(|_| ());
        FORMAT, "header claims", |f| blobcore::BlobMap::from_safetensors_bytes(&f.e, &[255; 16]).map(|_| ());
        IO, "nonexistent", |f| blobcore::BlobMap::load_safetensors(&f.e, "/nonexistent/model.safetensors.index.json", true).map(|_| ());
        INVALID_ARGUMENT, "directory or a path ending in .index.json", |f| { let mut m = blobcore::BlobMap::new(); m.insert("x", f.a.clone()); m.save_safetensors_sharded("/nonexistent/x.safetensors", 8) };
        INVALID_ARGUMENT, "at least one byte", |f| { let mut m = blobcore::BlobMap::new(); m.insert("x", f.a.clone()); m.save_safetensors_sharded("/nonexistent/m.index.json", 0) };
        INVALID_ARGUMENT, "holds 2 blobs", |f| { let mut m = blobcore::BlobMap::new(); m.push("x", f.a.clone()); m.push("x", f.a.clone()); m.save_safetensors_sharded("/nonexistent/m.index.json", 8) };
        INVALID_ARGUMENT, "such as \"5GB\"", |f| blobcore::io::safetensors_index::parse_shard_size("5 parsecs").map(|_| ());
        IO, "nonexistent", |f| blobcore::BlobMap::load_gguf(&f.e, "/nonexistent/x.gguf", true, false).map(|_| ());
        IO, "nonexistent", |f| blobcore::io::gguf::read_header("/nonexistent/x.gguf").map(|_| ());
        FORMAT, "does not start with GGUF", |f| blobcore::BlobMap::from_gguf_bytes(&f.e, b"GGML\x03\0\0\0").map(|_| ());
        UNSUPPORTED, "version 1", |f| blobcore::BlobMap::from_gguf_bytes(&f.e, b"GGUF\x01\0\0\0").map(|_| ());
        DTYPE, "GGUF stores", |f| { let mut m = blobcore::BlobMap::new(); m.insert("b", Blob::tensor(&f.e, DType::Bool, &[2])?); m.to_gguf_bytes(&[]).map(|_| ()) };
        INVALID_ARGUMENT, "holds 2 blobs", |f| { let mut m = blobcore::BlobMap::new(); m.push("x", f.a.clone()); m.push("x", f.a.clone()); m.save_gguf("/nonexistent/x.gguf", &[]) };
        IO, "nonexistent", |f| { let mut m = blobcore::BlobMap::new(); m.insert("x", f.a.clone()); m.save_gguf("/nonexistent/dir/x.gguf", &[]) };
        IO, "nonexistent", |f| blobcore::BlobMap::load_caffemodel(&f.e, "/nonexistent/x.caffemodel").map(|_| ());
        IO, "nonexistent", |f| blobcore::BlobMap::load_safetensors_with_progress(&f.e, "/nonexistent/x.safetensors", false, Some(&mut |_, _| true)).map(|_| ());
        IO, "nonexistent", |f| blobcore::BlobMap::load_gguf_with_progress(&f.e, "/nonexistent/x.gguf", false, false, Some(&mut |_, _| true)).map(|_| ());
        IO, "nonexistent", |f| blobcore::BlobMap::load_caffemodel_with_progress(&f.e, "/nonexistent/x.caffemodel", None).map(|_| ());
        FORMAT, "not a valid message", |f| blobcore::BlobMap::from_caffemodel_bytes(&f.e, &[0xff, 0xff]).map(|_| ());
        INVALID_ARGUMENT, "no entry named", |f| blobcore::BlobMap::new().get("x").map(|_| ());
        INVALID_ARGUMENT, "no entry named", |f| blobcore::BlobMap::new().set_kind("x", "ReLU");
        INVALID_ARGUMENT, "holds 2 blobs", |f| { let mut m = blobcore::BlobMap::new(); m.push("x", f.a.clone()); m.push("x", f.a.clone()); m.to_safetensors_bytes().map(|_| ()) };
        INVALID_ARGUMENT, "reserved", |f| { let mut m = blobcore::BlobMap::new(); m.insert("__metadata__", f.a.clone()); m.to_safetensors_bytes().map(|_| ()) };
        DTYPE, "float32 or float64", |f| { let mut m = blobcore::BlobMap::new(); m.insert("i", Blob::tensor(&f.e, DType::I32, &[2])?); m.to_caffemodel_bytes().map(|_| ()) };
        // DLPack.
        INVALID_ARGUMENT, "other than READ_ONLY", |f| f.a.to_dlpack(4).map(|_| ());
        UNSUPPORTED, "blocked", |f| f.blocked.to_dlpack(0).map(|_| ());
        UNSUPPORTED, "blocked", |f| f.blocked.to_dlpack_legacy().map(|_| ());
        UNSUPPORTED, "blocked", |f| f.blocked.to_dlpack_copy(Some(false)).map(|_| ());
        UNSUPPORTED, "blocked", |f| f.blocked.to_dlpack_legacy_copy(Some(false)).map(|_| ());
        READ_ONLY, "legacy", |f| read_only(&f.e).to_dlpack_legacy_copy(None).map(|_| ());
        NULL_POINTER, "NULL", |f| unsafe { Blob::from_dlpack(&f.e, std::ptr::null_mut(), None) };
        NULL_POINTER, "NULL", |f| unsafe { Blob::from_dlpack_legacy(&f.e, std::ptr::null_mut(), None) };
        // NeoML archive forms.
        INVALID_ARGUMENT, "neither", |f| blobcore::NeomlForm::from_name("pickle");
        INVALID_ARGUMENT, "neither 0 (blob) nor 1", |f| blobcore::NeomlForm::from_code(2);
        DTYPE, "float32 or int32", |f| Blob::tensor(&f.e, DType::F64, &[2])?.to_neoml_bytes_as(blobcore::NeomlForm::Serialize);
        FORMAT, "neither an isNull byte", |f| Blob::from_neoml_bytes(&f.e, &[0x02, 0xFF]);
        FORMAT, "truncated", |f| Blob::from_neoml_bytes(&f.e, &[0xFF, 0xD0, 0x07]);
        // OpenVINO BlockingDesc(dims, layout).
        SHAPE, "needs rank 4", |f| BlockingDesc::from_layout(&[2, 3], Layout::Nchw);
        SHAPE, "rank", |f| BlockingDesc::from_layout(&[1; 33], Layout::Blocked);
        // Serrano: numpy.full.
        OUT_OF_RANGE, "does not fit in uint8", |f| Blob::full(&f.e, DType::U8, &[2], -1.0);
        OUT_OF_RANGE, "does not fit in int64", |f| Blob::full(&f.e, DType::I64, &[2], f64::INFINITY);
        OUT_OF_RANGE, "does not fit in int8", |f| Blob::full(&f.e, DType::I8, &[2], 200.0);
        SHAPE, "", |f| Blob::full(&f.e, DType::F32, &[1; 33], 1.0);
        // Typed prefix copies (NeoML CopyTo / CopyFrom).
        DTYPE, "holds float32", |f| f.a.copy_to_prefix(&mut [0i32; 2]);
        INVALID_ARGUMENT, "only 6", |f| f.a.copy_to_prefix(&mut [0f32; 7]);
        INVALID_ARGUMENT, "whole float32", |f| f.a.copy_to_prefix_bytes(DType::F32, &mut [0u8; 5]);
        DTYPE, "float64 was given", |f| f.a.copy_to_prefix_bytes(DType::F64, &mut [0u8; 8]);
        DTYPE, "holds int32", |f| f.b.copy_from_prefix(&[0f32; 2]);
        INVALID_ARGUMENT, "only 6", |f| f.b.copy_from_prefix(&[0i32; 7]);
        INVALID_ARGUMENT, "whole int32", |f| f.b.copy_from_prefix_bytes(DType::I32, &[0u8; 3]);
        INVALID_ARGUMENT, "only 32", |f| f.blocked.copy_to_prefix(&mut [0f32; 33]);
        // NeoML named dims on the padded 7 dims.
        SHAPE, "differ only at axis 6", |f| Blob::merge_dim(&[&f.a, &f.v], BlobDim::Channels, &f.c);
        SHAPE, "add up", |f| Blob::merge_dim(&[&f.a], BlobDim::Channels, &Blob::tensor(&f.e, DType::F32, &[2, 3, 1, 1, 1, 1, 2])?);
        DTYPE, "", |f| Blob::merge_dim(&[&f.a, &f.a], BlobDim::Channels, &f.b);
        INVALID_ARGUMENT, "empty", |f| Blob::merged_dim(&[], BlobDim::Channels);
        SHAPE, "differ only", |f| Blob::merged_dim(&[&f.a, &f.c], BlobDim::Channels);
        SHAPE, "add up", |f| Blob::split_dim(&f.a, BlobDim::BatchWidth, &[&Blob::tensor(&f.e, DType::F32, &[2, 2])?]);
        INVALID_ARGUMENT, "destinations 0 and 1 share memory", |f| Blob::split_dim(&f.a, BlobDim::BatchLength, &[&f.w, &f.w]);
        SHAPE, "do not add up", |f| f.a.split_sizes_dim(BlobDim::Channels, &[2]);
        SHAPE, "do not divide", |f| f.a.split_equal_dim(BlobDim::BatchWidth, 2);
        SHAPE, "rank 8", |f| Blob::tensor(&f.e, DType::F32, &[1; 8])?.transposed_dims(BlobDim::Height, BlobDim::Width);
        SHAPE, "but the destination", |f| f.a.transpose_from_dims(&f.a, BlobDim::BatchLength, BlobDim::BatchWidth);
        DTYPE, "dtypes differ", |f| f.a.transpose_from_dims(&f.b, BlobDim::Height, BlobDim::Width);
        UNSUPPORTED, "inside its blocks", |f| f.blocked.region(&[0, 1, 0, 0], &[1, 3, 2, 2]);
        // NumPy indexing, casts and read-only blobs.
        OUT_OF_RANGE, "out of bounds for axis 0", |f| f.a.index(&[Index::At(2)]);
        OUT_OF_RANGE, "out of bounds for axis 1", |f| f.a.index(&[Index::ALL, Index::At(-4)]);
        OUT_OF_RANGE, "too many indices", |f| f.a.index(&[Index::At(0), Index::At(0), Index::At(0)]);
        OUT_OF_RANGE, "single ellipsis", |f| f.a.index(&[Index::Ellipsis, Index::Ellipsis]);
        INVALID_ARGUMENT, "step cannot be zero", |f| f.a.index(&[Index::Range { start: None, stop: None, step: Some(0) }]);
        UNSUPPORTED, "inside its blocks", |f| f.blocked.index(&[Index::ALL, Index::Range { start: Some(1), stop: None, step: None }]);
        INVALID_ARGUMENT, "permutation", |f| f.a.permuted_view(&[0, 0]);
        INVALID_ARGUMENT, "permutation", |f| f.a.permuted_view(&[0]);
        READ_ONLY, "read-only", |f| read_only(&f.e).fill(0.0);
        READ_ONLY, "read-only", |f| read_only(&f.e).window(1).unwrap().fill(0.0);
        READ_ONLY, "read-only", |f| read_only(&f.e).index(&[Index::At(1)]).unwrap().scale(2.0);
        READ_ONLY, "read-only", |f| read_only(&f.e).copy_from_slice(&[0f32; 4]);
        READ_ONLY, "read-only", |f| read_only(&f.e).view_mut::<f32>();
        READ_ONLY, "read-only", |f| read_only(&f.e).get_buffer(0, 1, false);
        READ_ONLY, "read-only", |f| read_only(&f.e).reshape(&[8]);
        // Overlap-aware copies from foreign memory, NumPy's shape rule (issue 26).
        INVALID_ARGUMENT, "bytes given", |f| unsafe { f.a.copy_from_host_ptr([0u8; 4].as_ptr(), 4) };
        INVALID_ARGUMENT, "bytes given", |f| f.a.copy_from_bytes(&[0u8; 25]);
        SHAPE, "too large", |f| Blob::tensor(&f.e, DType::F32, &[usize::MAX / 4, 8, 0]);
        SHAPE, "too large", |f| Blob::tensor(&f.e, DType::F32, &[0, usize::MAX / 4, 8]);
        OUT_OF_RANGE, "exceeds", |f| f.a.export_buffer(0, 7, true).map(|_| ());
        // Transposes.
        OUT_OF_RANGE, "axis", |f| f.a.transposed(0, 2);
        OUT_OF_RANGE, "axis", |f| f.a.transposed(-3, 0);
        DTYPE, "dtypes differ", |f| f.a.transpose_from(&f.b, 0, 1);
        OUT_OF_RANGE, "axis", |f| f.a.transpose_from(&f.v, 0, 1);
        SHAPE, "destination", |f| f.c.transpose_from(&f.v.window(3).unwrap(), 0, 0);
        OUT_OF_RANGE, "axis", |f| f.a.permuted(&[0, 2]);
        INVALID_ARGUMENT, "permutation", |f| f.a.permuted(&[1, -1]);
        INVALID_ARGUMENT, "permutation", |f| f.a.permuted(&[0]);
        UNSUPPORTED, "inside its blocks", |f| f.blocked.index(&[Index::ALL, Index::Range { start: None, stop: None, step: Some(-1) }]);
        DTYPE, "dtypes differ", |f| f.c.permute_from(&f.b, &[1, 0]);
        SHAPE, "destination", |f| f.a.permute_from(&f.a, &[1, 0]);
        SHAPE, "destination", |f| f.a.permute_from(&f.c, &[0, 1]);
        // Merge and split.
        INVALID_ARGUMENT, "empty", |f| Blob::merge(&[], 0, &f.a);
        DTYPE, "", |f| Blob::merge(&[&f.a, &f.b], 0, &f.v);
        SHAPE, "", |f| Blob::merge(&[&f.a, &f.c], 0, &f.v);
        SHAPE, "add up", |f| Blob::merge(&[&f.c, &f.c], 0, &f.c);
        OUT_OF_RANGE, "axis", |f| Blob::merge(&[&f.a], 5, &f.a);
        SHAPE, "rank", |f| Blob::merge(&[&f.v], 0, &f.a);
        INVALID_ARGUMENT, "empty", |f| Blob::split(&f.a, 0, &[]);
        DTYPE, "", |f| Blob::split(&f.a, 0, &[&f.b]);
        SHAPE, "differ only at axis", |f| Blob::split(&f.a, 1, &[&f.c]);
        INVALID_ARGUMENT, "destinations 0 and 1 share memory", |f| Blob::split(&f.a, 0, &[&f.w, &f.w]);
        INVALID_ARGUMENT, "empty", |f| Blob::merge_objects(&[], &f.a);
        SHAPE, "", |f| Blob::merge_objects(&[&f.v], &f.a);
        SHAPE, "", |f| Blob::merge_objects(&[&f.c], &f.a);
        SHAPE, "", |f| Blob::split_objects(&f.a, &[&f.v]);
        SHAPE, "", |f| f.a.split_sizes(0, &[1]);
        SHAPE, "", |f| f.a.split_equal(1, 2);
        SHAPE, "0 equal parts", |f| f.a.split_equal(0, 0);
        INVALID_ARGUMENT, "empty", |f| Blob::merged(&[], 0);
        // Windows, slices and regions.
        OUT_OF_RANGE, "", |f| f.a.window(3);
        OUT_OF_RANGE, "", |f| f.w.set_parent_pos(2);
        OUT_OF_RANGE, "negative", |f| f.w.set_parent_pos(-1);
        OUT_OF_RANGE, "", |f| f.w.shift_parent_pos(5);
        OUT_OF_RANGE, "", |f| f.w.shift_parent_pos(i64::MIN);
        INVALID_ARGUMENT, "window", |f| f.a.set_parent_pos(0);
        OUT_OF_RANGE, "", |f| f.a.slice(&[2]);
        OUT_OF_RANGE, "", |f| f.a.slice(&[0, 0, 0]);
        OUT_OF_RANGE, "", |f| f.a.region(&[0, 0], &[3, 3]);
        OUT_OF_RANGE, "", |f| f.a.region(&[1, 0], &[0, 3]);
        OUT_OF_RANGE, "for rank 2", |f| f.a.region(&[0], &[1]);
        // Buffers and the LIFO rule.
        OUT_OF_RANGE, "negative", |f| f.a.get_buffer(-1, 1, false);
        OUT_OF_RANGE, "exceeds", |f| f.a.get_buffer(0, 7, false);
        OUT_OF_RANGE, "exceeds", |f| f.a.get_buffer(5, 2, false);
        OUT_OF_RANGE, "", |f| f.a.get_buffer(i64::MAX, 2, false);
        OUT_OF_RANGE, "negative", |f| f.a.get_buffer(0, -2, true);
        LIFO, "no buffer", |f| f.a.release_buffer(std::ptr::null(), false);
        LIFO, "not a buffer", |f| f.l.release_buffer(8 as *const u8, false);
        LIFO, "not a buffer", |f| f.l.release_buffer((f.held + 4) as *const u8, true);
        DTYPE, "", |f| f.a.buffer_read::<i32>(0, 1);
        OUT_OF_RANGE, "", |f| f.a.buffer_read::<f32>(0, 7);
        OUT_OF_RANGE, "", |f| f.a.buffer_write::<f32>(6, 1);
        BUSY, "", |f| f.l.share_data(&Blob::from_slice(&f.e, &[4], &[0f32; 4])?);
        // Guards: a live write guard makes overlapping access Busy.
        BUSY, "", |f| { let _g = f.v.write::<f32>()?; f.v.fill(0.0) };
        BUSY, "", |f| { let _g = f.v.write::<f32>()?; f.v.read::<f32>().map(|_| ()) };
        BUSY, "", |f| { let _g = f.v.read::<f32>()?; f.v.scale(2.0) };
        BUSY, "", |f| { let _g = f.v.read::<f32>()?; f.v.reshape(&[20]) };
        // Diff companions and sharing.
        INVALID_ARGUMENT, "", |f| f.a.diff()?.share_data(&f.c);
        DTYPE, "", |f| f.a.share_data(&f.b);
        // Layouts.
        SHAPE, "", |f| TensorDesc::new(DType::F32, &[1, 2, 3], Layout::Nchw);
        SHAPE, "", |f| BlockingDesc::new(&[1, 2], &[0]);
        SHAPE, "leaves out dim 1", |f| TensorDesc::with_blocking(DType::F32, &[1, 2], BlockingDesc::new(&[1, 2], &[0, 2])?);
        SHAPE, "", |f| BlockingDesc::with_strides(&[2, 3], &[0, 1], 0, &[0, 0], &[2, 1]);
        SHAPE, "overflows", |f| BlockingDesc::with_strides(&[1; 16], &[0; 16], 0, &[1 << 62; 16], &[1 << 62; 16]);
        INVALID_ARGUMENT, "", |f| Layout::from_code(9999);
        OUT_OF_RANGE, "", |f| f.blocked.desc().offset_index(&[0, 8, 0, 0]);
        OUT_OF_RANGE, "window size 2", |f| f.blocked.window(2);
        INVALID_ARGUMENT, "sink refused", |f| f.blocked.for_each_chunk(|_| Err(Error::InvalidArgument("sink refused".into())));
        INVALID_ARGUMENT, "sink refused", |f| f.a.permuted_view(&[1, 0]).and_then(|t| t.for_each_chunk(|_| Err(Error::InvalidArgument("sink refused".into()))));
        READ_ONLY, "read-only", |f| read_only(&f.e).index(&[Index::Range { start: None, stop: None, step: Some(-1) }]).unwrap().fill(0.0);
        UNSUPPORTED, "reorder", |f| f.blocked.reshape(&[32]);
        UNSUPPORTED, "reorder", |f| f.blocked.export();
        SHAPE, "dims differ", |f| f.a.reorder_from(&f.c);
        DTYPE, "dtypes differ", |f| f.a.reorder_from(&f.b);
        // Files.
        FORMAT, "magic", |f| Blob::from_npy_bytes(&f.e, b"not a numpy file");
        FORMAT, "truncated", |f| Blob::from_npy_bytes(&f.e, &f.a.to_npy_bytes().unwrap()[..100]);
        FORMAT, "trailing", |f| Blob::from_npy_bytes(&f.e, &[f.a.to_npy_bytes().unwrap(), vec![0]].concat());
        FORMAT, "", |f| Blob::from_caffe_bytes(&f.e, &f.a.to_caffe_bytes(false).unwrap()[..10]);
        FORMAT, "truncated", |f| Blob::from_neoml_bytes(&f.e, &[]);
        FORMAT, "null blob", |f| Blob::from_neoml_bytes(&f.e, &[1]);
        FORMAT, "truncated", |f| npy::header(b"\x93NUMPY\x02\x00\xff\xff\xff\xff");
        IO, "/nonexistent/x.npy", |f| Blob::load_npy(&f.e, "/nonexistent/x.npy");
        IO, "/nonexistent/x.binaryproto", |f| Blob::load_caffe(&f.e, "/nonexistent/x.binaryproto");
        IO, "", |f| f.a.save_npy("/nonexistent/dir/x.npy");
        DTYPE, "bfloat16", |f| Blob::tensor(&f.e, DType::BF16, &[2]).unwrap().save_npy("/tmp/never-written.npy");
        DTYPE, "", |f| f.b.to_caffe_bytes(false);
        DTYPE, "", |f| Blob::tensor(&f.e, DType::F64, &[2]).unwrap().to_neoml_bytes();
        SHAPE, "", |f| Blob::tensor(&f.e, DType::F32, &[1; 8]).unwrap().to_neoml_bytes();
        DTYPE, "", |f| f.b.copy_from_caffe_bytes(&f.a.to_caffe_bytes(false).unwrap(), true);
        SHAPE, "reshape is false", |f| f.c.copy_from_caffe_bytes(&f.a.to_caffe_bytes(false).unwrap(), false);
        // One element at a time (issue 29): bounds, rank, dtype, writability.
        OUT_OF_RANGE, "out of bounds for axis 0", |f| f.a.get_element(&[2, 0]);
        OUT_OF_RANGE, "out of bounds for axis 1", |f| f.a.get_element(&[0, -4]);
        OUT_OF_RANGE, "2 indices given for a blob of rank 1", |f| f.v.get_element(&[0, 0]);
        OUT_OF_RANGE, "out of bounds", |f| f.a.get_element(&[i64::MIN, 0]);
        OUT_OF_RANGE, "out of bounds", |f| f.a.set_element(&[0, 3], &Scalar::of(1f32));
        OUT_OF_RANGE, "1 indices given", |f| f.a.set_element(&[0], &Scalar::of(1f32));
        DTYPE, "without a cast", |f| f.a.set_element(&[0, 0], &Scalar::of(1i32));
        DTYPE, "without a cast", |f| f.b.fill_element(&Scalar::of(1f32));
        READ_ONLY, "read-only", |f| read_only(&f.e).set_element(&[0], &Scalar::of(9f32));
        // Read-only is judged before the index (one lock for the check and the store).
        READ_ONLY, "read-only", |f| read_only(&f.e).set_element(&[99], &Scalar::of(9f32));
        READ_ONLY, "read-only", |f| read_only(&f.e).set_element(&[0, 0], &Scalar::of(9f32));
        READ_ONLY, "read-only", |f| read_only(&f.e).check_writable();
        READ_ONLY, "read-only", |f| read_only(&f.e).fill_element(&Scalar::of(9f32));
        BUSY, "being written", |f| { let x = Blob::from_slice(&f.e, &[2], &[1f32, 2.0])?; let _g = x.write::<f32>()?; x.set_element(&[1], &Scalar::of(9f32)) };
        BUSY, "being written", |f| { let x = Blob::from_slice(&f.e, &[2], &[1f32, 2.0])?; let _g = x.write::<f32>()?; x.get_element(&[1]) };
        BUSY, "being read", |f| { let x = Blob::from_slice(&f.e, &[2], &[1f32, 2.0])?; let _g = x.read::<f32>()?; x.fill_element(&Scalar::of(9f32)) };
        INVALID_ARGUMENT, "3 bytes given", |f| Scalar::from_bytes(DType::F32, &[0; 3]);
        // Fills refuse a double an integer dtype cannot hold (they
        // saturated before): out of range, infinite, NaN.
        OUT_OF_RANGE, "does not fit in int32", |f| unchanged(&f.b, |x| x.fill(2147483648.0));
        OUT_OF_RANGE, "-1 does not fit in uint8", |f| unchanged(&Blob::full(&f.e, DType::U8, &[3], 7.0)?, |x| x.fill(-1.0));
        OUT_OF_RANGE, "NaN does not fit in int32", |f| unchanged(&f.b, |x| x.fill(f64::NAN));
        OUT_OF_RANGE, "inf does not fit in int32", |f| unchanged(&f.b, |x| x.fill_object(0, f64::INFINITY));
        OUT_OF_RANGE, "does not fit in int64", |f| Blob::full(&f.e, DType::I64, &[2], 2f64.powi(63));
        OUT_OF_RANGE, "does not fit in uint64", |f| Scalar::from_f64(DType::U64, 2f64.powi(64));
        OUT_OF_RANGE, "-1 does not fit in uint8", |f| Scalar::from_integer(DType::U8, true, 1);
        OUT_OF_RANGE, "18446744073709551616 does not fit in uint64", |f| Scalar::from_integer(DType::U64, false, 1 << 64);
        OUT_OF_RANGE, "-170141183460469231731687303715884105728 does not fit in int64", |f| Scalar::from_integer(DType::I64, true, 1 << 127);
        OUT_OF_RANGE, "does not fit in int32", |f| unchanged(&f.b.permuted_view(&[1, 0])?, |x| x.fill(1e10));
        DTYPE, "without a cast", |f| unchanged(&f.b, |x| x.fill_object_element(0, &Scalar::of(1i64)));
        DTYPE, "without a cast", |f| Blob::tensor(&f.e, DType::I64, &[2])?.fill_element(&Scalar::of(1u64));
        OUT_OF_RANGE, "object 6 is not below the object count 6", |f| unchanged(&f.b, |x| x.fill_object_element(6, &Scalar::of(1i32)));
        READ_ONLY, "read-only", |f| read_only(&f.e).fill_object_element(0, &Scalar::of(9f32));
        // Read-only is judged before the value.
        // Indexed assignment on any layout (keys inside blocks included).
        OUT_OF_RANGE, "out of bounds", |f| f.a.index_dims(&[Index::At(5)]).map(|_| ());
        OUT_OF_RANGE, "out of bounds", |f| unchanged(&f.blocked, |x| x.fill_index(&[Index::ALL, Index::At(8)], &Scalar::of(1f32)));
        DTYPE, "without a cast", |f| unchanged(&f.blocked, |x| x.fill_index(&[Index::ALL, Index::Range { start: Some(1), stop: None, step: None }], &Scalar::of(1i32)));
        SHAPE, "", |f| unchanged(&f.blocked, |x| x.copy_index_from(&[Index::ALL, Index::Range { start: Some(1), stop: None, step: None }], &Blob::tensor(&f.e, DType::F32, &[1, 6, 2, 2])?));
        DTYPE, "", |f| unchanged(&f.blocked, |x| x.copy_index_from(&[Index::ALL, Index::Range { start: Some(1), stop: None, step: None }], &Blob::tensor(&f.e, DType::F64, &[1, 7, 2, 2])?));
        READ_ONLY, "read-only", |f| read_only(&f.e).fill_index(&[Index::ALL], &Scalar::of(1f32));
        READ_ONLY, "read-only", |f| read_only_u8(&f.e).fill(-1.0);
        READ_ONLY, "read-only", |f| read_only_u8(&f.e).fill_object(0, 300.0);
        // DLPack's exchange-API allocator refuses what it cannot make.
        NULL_POINTER, "NULL", |f| {
            // SAFETY: NULL is the documented refusal; nothing is read.
            unsafe { Blob::dlpack_allocate(std::ptr::null()) }
        };
        // Memory that cannot be had.
        OUT_OF_MEMORY, "", |f| Blob::tensor(&f.e, DType::U8, &[1 << 50]).unwrap().fill(0.0);
        OUT_OF_MEMORY, "", |f| Blob::tensor(&f.e, DType::F32, &[1 << 48]).unwrap().to_vec::<f32>();
        // Encoders into memory size their output before the blob's memory
        // exists: memory the system refuses is an error, not an abort
        // (the .npy bytes and .caffemodel writers aborted, found by the
        // capi_ops fuzzer).
        OUT_OF_MEMORY, "cannot allocate", |f| Blob::tensor(&f.e, DType::F32, &[1 << 40])?.to_npy_bytes();
        OUT_OF_MEMORY, "", |f| { let mut m = blobcore::BlobMap::new(); m.insert("x", Blob::tensor(&f.e, DType::F32, &[1 << 40])?); m.to_caffemodel_bytes() };
        OUT_OF_MEMORY, "", |f| { let mut m = blobcore::BlobMap::new(); m.insert("x", Blob::tensor(&f.e, DType::F64, &[1 << 20, 1 << 20])?); m.save_caffemodel("/tmp/never-written.caffemodel") };
        OUT_OF_MEMORY, "", |f| { let mut m = blobcore::BlobMap::new(); m.insert("x", Blob::tensor(&f.e, DType::F32, &[1 << 40])?); m.to_safetensors_bytes() };
        OUT_OF_MEMORY, "", |f| Blob::tensor(&f.e, DType::F32, &[1 << 40])?.to_caffe_bytes(false);
        // Engines and wrapped memory.
        DEVICE, "no adapter is called this", |f| Engine::gpu(Some("no adapter is called this"));
        INVALID_ARGUMENT, "aligned", |f| {
            let mut mem = [0u64; 4];
            let p = NonNull::new(mem.as_mut_ptr() as *mut u8).map(|p| unsafe { NonNull::new_unchecked(p.as_ptr().add(1)) });
            // SAFETY: never dereferenced: the call fails on alignment.
            unsafe { Blob::wrap(&f.e, DType::F32, Shape::new(&[2])?, p.ok_or_else(|| Error::NullPointer("".into()))?, 16, None) }
        };
        INVALID_ARGUMENT, "", |f| {
            let mut mem = [0f32; 4];
            let p = NonNull::new(mem.as_mut_ptr() as *mut u8).ok_or_else(|| Error::NullPointer("".into()))?;
            // SAFETY: the call fails: 16 bytes do not hold 8 floats.
            unsafe { Blob::wrap(&f.e, DType::F32, Shape::new(&[8])?, p, 16, None) }
        };
        // Shared memory: busy memory, blobs not shared, hostile descriptors and handles.
        BUSY, "view", |f| f.a.share_memory();
        BUSY, "view", |f| f.w.share_memory();
        BUSY, "buffer", |f| f.l.share_memory();
        INVALID_ARGUMENT, "share_memory", |f| f.a.shared_handle();
        INVALID_ARGUMENT, "share_memory", |f| f.a.shared_fd();
        UNSUPPORTED, "dense", |f| { let x = Blob::tensor(&f.e, DType::F32, &[2, 3])?; x.share_memory()?; x.permuted_view(&[1, 0])?.shared_fd() };
        BUSY, "shared memory", |f| { let x = Blob::tensor(&f.e, DType::F32, &[2, 3])?; x.share_memory()?; x.reshape(&[7]) };
        // Writable memory the blob does not own stays with its owner: not
        // moved into a file, not reallocated (the owner would stop seeing
        // the blob's writes).
        BUSY, "lent by its owner", |f| lent(&f.e, |x| x.share_memory());
        BUSY, "lent by its owner", |f| lent(&f.e, |x| x.reshape(&[5]));
        INVALID_ARGUMENT, "not a regular file", |f| from_fd(&f.e, &std::fs::File::open(std::env::temp_dir()).map_err(io)?, &[1], 0);
        INVALID_ARGUMENT, "not a shared memory file", |f| from_fd(&f.e, &std::fs::File::open(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml")).map_err(io)?, &[1], 0);
        INVALID_ARGUMENT, "F_SEAL_SHRINK", |f| from_fd(&f.e, &memfd(64, false), &[4], 0);
        INVALID_ARGUMENT, "holds 64 bytes", |f| from_fd(&f.e, &memfd(64, true), &[17], 0);
        INVALID_ARGUMENT, "holds 64 bytes", |f| from_fd(&f.e, &memfd(64, true), &[4], 52);
        INVALID_ARGUMENT, "holds 64 bytes", |f| from_fd(&f.e, &memfd(64, true), &[1], u64::MAX - 3);
        INVALID_ARGUMENT, "multiple", |f| from_fd(&f.e, &memfd(64, true), &[1], 2);
        FORMAT, "cut short", |f| blobcore::SharedHandle::from_layout_bytes(memfd(64, true).into(), b"BCSH\x01\x00");
        FORMAT, "not a blobcore handle", |f| blobcore::SharedHandle::from_layout_bytes(memfd(64, true).into(), b"pickle!!");
        FORMAT, "past its end", |f| {
            let x = Blob::tensor(&f.e, DType::F32, &[2])?;
            x.share_memory()?;
            let h = x.shared_handle()?;
            let mut bytes = h.layout_bytes();
            bytes.push(0);
            blobcore::SharedHandle::from_layout_bytes(h.fd, &bytes)
        };
        FORMAT, "two elements in one place", |f| {
            // A hostile handle: stride 0 on a writable blob of 1000 elements.
            let x = Blob::tensor(&f.e, DType::F32, &[1000])?;
            x.share_memory()?;
            let v = x.index(&[Index::Range { start: None, stop: None, step: Some(-1) }])?;
            let h = v.shared_handle()?;
            let mut bytes = h.layout_bytes();
            let n = bytes.len();
            bytes[n - 24..n - 16].copy_from_slice(&0u64.to_le_bytes());
            bytes[n - 8..].copy_from_slice(&0u64.to_le_bytes());
            blobcore::SharedHandle::from_layout_bytes(h.fd, &bytes)
        };
        FORMAT, "overflow an element offset", |f| {
            // A hostile handle: offsets of 2^40 at strides +-2^40, terms of
            // +-2^80 that cancel (the padding, 2^41, keeps every element
            // above the base): the span fits, the kernels' sums would not.
            let x = Blob::tensor(&f.e, DType::F32, &[2, 3])?;
            x.share_memory()?;
            let h = x.permuted_view(&[1, 0])?.shared_handle()?;
            let mut bytes = h.layout_bytes();
            let n = bytes.len();
            let big = 1i64 << 40;
            // The padding, 2 offsets and 2 strides are the last 40 bytes.
            for (k, w) in [2 * big, big, big, big, -big].iter().enumerate() {
                bytes[n - 40 + 8 * k..n - 32 + 8 * k].copy_from_slice(&w.to_le_bytes());
            }
            blobcore::SharedHandle::from_layout_bytes(h.fd, &bytes)
        };
        FORMAT, "below its base", |f| {
            // A hostile handle: a stride that reaches below the file's start.
            let x = Blob::tensor(&f.e, DType::F32, &[2, 3])?;
            x.share_memory()?;
            let v = x.index(&[Index::Range { start: None, stop: None, step: Some(-1) }])?;
            let h = v.shared_handle()?;
            let mut bytes = h.layout_bytes();
            let at = bytes.len() - 2 * 16 - 8; // the padding word, before 2 offsets and 2 strides
            bytes[at..at + 8].copy_from_slice(&0u64.to_le_bytes());
            blobcore::SharedHandle::from_layout_bytes(h.fd, &bytes)
        };
    ];
    assert!(table.len() >= 100, "the matrix has {} rows", table.len());
    let f = fixtures();
    let before = digest(&f);
    let mut failures = Vec::new();
    // BLOBCORE_TEST_TRACE=1 prints each row and its time (to find a slow
    // or stuck row on a machine without a debugger).
    let trace = std::env::var_os("BLOBCORE_TEST_TRACE").is_some();
    for (line, code, words, call) in &table {
        let t0 = std::time::Instant::now();
        if trace {
            eprintln!("row: {line}");
        }
        let result = call(&f);
        if trace {
            eprintln!("  {:?}", t0.elapsed());
        }
        match result {
            Ok(()) => failures.push(format!("{line}: succeeded, expected code {code}")),
            Err(e) => {
                let msg = e.to_string();
                if e.code() != *code {
                    failures.push(format!("{line}: code {} ({msg}), expected {code}", e.code()));
                } else if !msg.contains(words) {
                    failures.push(format!("{line}: message {msg:?} does not name {words:?}"));
                }
            }
        }
        if digest(&f) != before {
            failures.push(format!("{line}: the fixtures changed"));
        }
    }
    assert!(failures.is_empty(), "{} of {} rows failed:\n{}", failures.len(), table.len(), failures.join("\n"));
    let _ = NULL_POINTER;
}
