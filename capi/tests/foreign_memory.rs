//! The C API's calls that share memory with the caller, driven from Rust
//! the way C drives them: through raw pointers only. Caller memory
//! wrapped with `blob_wrap` and read and written from both sides, the
//! release callback, held buffers, DLPack tensors exported and imported
//! in both directions (the caller's own tensor with its deleter), byte
//! buffers, and the C strings the API hands out. Every value is checked.
//!
//! Its purpose beyond the C tests (which valgrind runs): `make miri` runs
//! this file under Miri, which checks the Rust side of each call for
//! undefined behaviour — aliasing (Stacked Borrows), dangling and
//! out-of-bounds accesses, leaks — that valgrind cannot see.

use blob::*;
use blobcore::dlpack::{DLDataType, DLDevice, DLManagedTensor, DLManagedTensorVersioned, DLPackVersion, DLTensor};
use std::ffi::{c_char, c_void, CStr};
use std::ptr::{null, null_mut};
use std::sync::atomic::{AtomicUsize, Ordering};

fn ok(status: i32, what: &str) {
    assert_eq!(status, BLOB_OK, "{what}: {}", unsafe { CStr::from_ptr(blob_last_error()).to_string_lossy() });
}

fn read_f32(b: *const Blob, n: usize) -> Vec<f32> {
    let mut v = vec![0f32; n];
    ok(blob_copy_to_host(b, v.as_mut_ptr().cast(), n * 4), "copy_to_host");
    v
}

fn tensor_f32(dims: &[i64], values: &[f32]) -> *mut Blob {
    let mut b = null_mut();
    ok(blob_create_tensor(null(), BLOB_F32, dims.as_ptr(), dims.len(), &mut b), "create");
    ok(blob_copy_from_host(b, values.as_ptr().cast(), values.len() * 4), "copy_from_host");
    b
}

/// The caller's memory behind a `blob_wrap`: the release callback frees
/// it and counts.
struct Owner {
    data: *mut f32,
    len: usize,
    released: AtomicUsize,
}

extern "C" fn release_owner(ctx: *mut c_void) {
    // SAFETY: ctx is the &Owner passed to blob_wrap, alive for the whole test.
    let o = unsafe { &*(ctx as *const Owner) };
    o.released.fetch_add(1, Ordering::SeqCst);
    // SAFETY: `data` came from Box::into_raw of a boxed slice of `len`, freed once.
    drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(o.data, o.len)) });
}

#[test]
fn wrapped_memory_is_shared_both_ways_and_released_once() {
    let values: Box<[f32]> = (0..24).map(|i| i as f32).collect();
    let len = values.len();
    let owner = Owner { data: Box::into_raw(values).cast(), len, released: AtomicUsize::new(0) };
    let raw = owner.data;
    let dims = [4i64, 6];
    let ctx = &owner as *const Owner as *mut c_void;
    let mut b = null_mut();
    ok(blob_wrap(null(), BLOB_F32, dims.as_ptr(), 2, raw.cast(), 96, Some(release_owner), ctx, &mut b), "wrap");
    let mut s = 0.0;
    ok(blob_asum(b, &mut s), "asum");
    assert_eq!(s, 276.0);
    // SAFETY (these raw accesses): `raw` points at 24 live f32 until release.
    unsafe { *raw = 1000.0 }; // the caller writes, the blob sees
    assert_eq!(read_f32(b, 24)[0], 1000.0);
    ok(blob_fill(b, 2.0), "fill"); // the blob writes, the caller sees
    assert_eq!(unsafe { *raw.add(23) }, 2.0);

    let (mut win, mut slice, mut copy) = (null_mut(), null_mut(), null_mut());
    ok(blob_create_window(b, 2, &mut win), "window");
    ok(blob_slice(b, [1i64].as_ptr(), 1, &mut slice), "slice");
    ok(blob_copy(b, &mut copy), "copy");
    ok(blob_free(b), "free");
    assert_eq!(owner.released.load(Ordering::SeqCst), 0);
    let mut buf: *mut c_void = null_mut();
    ok(blob_get_buffer(slice, 0, 6, true, &mut buf), "get_buffer");
    assert_eq!(buf as usize, raw as usize + 6 * 4, "no copy: the caller's own bytes");
    // SAFETY: the held buffer is 6 writable f32 of the caller's memory.
    unsafe { *(buf as *mut f32).add(5) = 7.0 };
    assert_eq!(unsafe { *raw.add(11) }, 7.0);
    ok(blob_free(win), "free window");
    ok(blob_release_buffer(slice, buf, true), "release_buffer");
    assert_eq!(read_f32(slice, 6), [2.0, 2.0, 2.0, 2.0, 2.0, 7.0]);
    assert_eq!(owner.released.load(Ordering::SeqCst), 0);
    ok(blob_free(slice), "free slice");
    assert_eq!(owner.released.load(Ordering::SeqCst), 1, "released at the last user");
    assert_eq!(blob_free(slice), BLOB_ERR_INVALID_HANDLE);
    ok(blob_asum(copy, &mut s), "asum copy");
    assert_eq!(s, 48.0, "the copy outlives the memory");
    ok(blob_free(copy), "free copy");
    assert_eq!(owner.released.load(Ordering::SeqCst), 1);
}

#[test]
fn read_only_wrap_refuses_writes_and_keeps_the_bytes() {
    let mine = [1.5f32, -2.0, 3.25, 4.0];
    let mut b = null_mut();
    ok(blob_wrap_read_only(null(), BLOB_F32, [2i64, 2].as_ptr(), 2, mine.as_ptr().cast(), 16, None, null_mut(), &mut b), "wrap");
    assert_eq!(blob_fill(b, 9.0), BLOB_ERR_READ_ONLY);
    // A buffer to fill (no exchange) is refused; one to read is the memory.
    let mut buf: *mut c_void = null_mut();
    assert_eq!(blob_get_buffer(b, 0, 4, false, &mut buf), BLOB_ERR_READ_ONLY);
    assert!(buf.is_null());
    ok(blob_get_buffer(b, 1, 2, true, &mut buf), "read buffer");
    assert_eq!(buf as usize, mine.as_ptr() as usize + 4);
    // SAFETY: a held buffer of 2 readable f32.
    assert_eq!(unsafe { *(buf as *const f32).add(1) }, 3.25);
    ok(blob_release_buffer(b, buf, false), "release read buffer");
    let mut t = null_mut();
    assert_eq!(blob_to_dlpack_legacy(b, &mut t), BLOB_ERR_READ_ONLY);
    let mut v: *mut DLManagedTensorVersioned = null_mut();
    ok(blob_to_dlpack(b, 0, &mut v), "to_dlpack");
    // SAFETY: a live export until its deleter runs.
    unsafe {
        assert_eq!((*v).flags & blobcore::dlpack::DLPACK_FLAG_BITMASK_READ_ONLY, 1);
        assert_eq!(*((*v).dl_tensor.data as *const f32).add(2), 3.25);
        ((*v).deleter.expect("a deleter"))(v);
    }
    assert_eq!(read_f32(b, 4), mine);
    ok(blob_free(b), "free");
}

#[test]
fn held_buffers_of_views_and_layouts_land_on_release() {
    let b = tensor_f32(&[2, 3], &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
    // A dense blob's buffer is its own memory; two held at once, LIFO.
    let (mut p1, mut p2): (*mut c_void, *mut c_void) = (null_mut(), null_mut());
    ok(blob_get_buffer(b, 1, 2, true, &mut p1), "buffer 1");
    ok(blob_get_buffer(b, 4, 2, true, &mut p2), "buffer 2");
    // SAFETY: each held buffer is 2 writable f32.
    unsafe {
        assert_eq!(*(p1 as *const f32), 1.0);
        *(p1 as *mut f32) = 10.0;
        *(p2 as *mut f32).add(1) = 50.0;
    }
    assert_eq!(blob_release_buffer(b, p1, true), BLOB_ERR_LIFO);
    ok(blob_release_buffer(b, p2, true), "release 2");
    ok(blob_release_buffer(b, p1, true), "release 1");
    assert_eq!(read_f32(b, 6), [0.0, 10.0, 2.0, 3.0, 4.0, 50.0]);

    // A blob with a layout: positions in its raw span (NHWC memory order).
    let mut nhwc = null_mut();
    ok(blob_create_layout(null(), BLOB_F32, [1i64, 2, 1, 3].as_ptr(), 4, BLOB_LAYOUT_NHWC, &mut nhwc), "layout");
    ok(blob_copy_from_host(nhwc, [0f32, 1.0, 2.0, 3.0, 4.0, 5.0].as_ptr().cast(), 24), "fill nhwc");
    let mut p: *mut c_void = null_mut();
    ok(blob_get_buffer(nhwc, 0, 6, true, &mut p), "nhwc buffer");
    // SAFETY: 6 f32 in memory order (w, c): c fastest.
    let mem: Vec<f32> = (0..6).map(|i| unsafe { *(p as *const f32).add(i) }).collect();
    assert_eq!(mem, [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
    unsafe { *(p as *mut f32).add(1) = -3.0 }; // element (0, 1, 0, 0)
    ok(blob_release_buffer(nhwc, p, true), "release nhwc");
    assert_eq!(read_f32(nhwc, 6), [0.0, 1.0, 2.0, -3.0, 4.0, 5.0]);
    ok(blob_free(nhwc), "free nhwc");
    ok(blob_free(b), "free");
}

/// Reads a DLPack tensor's elements (f32, any strides) through its own
/// pointers, as a consumer does.
///
/// # Safety
/// `t` is a live f32 CPU tensor.
unsafe fn dl_values(t: &DLTensor) -> Vec<f32> {
    let shape = std::slice::from_raw_parts(t.shape, t.ndim as usize);
    let strides: Vec<i64> = if t.strides.is_null() {
        let mut s = vec![1i64; shape.len()];
        for i in (0..shape.len().saturating_sub(1)).rev() {
            s[i] = s[i + 1] * shape[i + 1];
        }
        s
    } else {
        std::slice::from_raw_parts(t.strides, shape.len()).to_vec()
    };
    let base = (t.data as *const u8).add(t.byte_offset as usize) as *const f32;
    let n: i64 = shape.iter().product();
    (0..n)
        .map(|mut i| {
            let mut off = 0;
            for d in (0..shape.len()).rev() {
                off += (i % shape[d]) * strides[d];
                i /= shape[d];
            }
            *base.offset(off as isize)
        })
        .collect()
}

#[test]
fn dlpack_exports_are_read_and_written_through_their_pointers() {
    let b = tensor_f32(&[2, 3], &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
    // A region view (columns 1..3) exports with its strides.
    let mut r = null_mut();
    ok(blob_region(b, [0i64, 1].as_ptr(), [2i64, 3].as_ptr(), 2, &mut r), "region");
    let mut v: *mut DLManagedTensorVersioned = null_mut();
    ok(blob_to_dlpack(r, 0, &mut v), "to_dlpack");
    ok(blob_free(r), "free view"); // the export keeps the memory
    // SAFETY: a live export until its deleter runs.
    unsafe {
        let dl = &(*v).dl_tensor;
        assert_eq!((dl.ndim, *dl.shape, *dl.shape.add(1)), (2, 2, 2));
        assert_eq!((*dl.strides, *dl.strides.add(1)), (3, 1));
        assert_eq!(dl_values(dl), [1.0, 2.0, 4.0, 5.0]);
        let first = (dl.data as *mut u8).add(dl.byte_offset as usize) as *mut f32;
        *first.add(3) = 40.0; // element (1, 0) of the view, (1, 1) of the parent
    }
    assert_eq!(read_f32(b, 6)[4], 40.0);
    // Handed back to blobcore: copied (not row-major), the deleter runs at once.
    let mut back = null_mut();
    ok(blob_from_dlpack(null(), v, &mut back), "from_dlpack");
    assert_eq!(read_f32(back, 4), [1.0, 2.0, 40.0, 5.0]);
    ok(blob_free(back), "free back");

    // Legacy: a dense export, imported zero-copy, shared with the source.
    let mut l: *mut DLManagedTensor = null_mut();
    ok(blob_to_dlpack_legacy(b, &mut l), "to_dlpack_legacy");
    // SAFETY: a live export until its deleter runs.
    unsafe { assert_eq!(dl_values(&(*l).dl_tensor), [0.0, 1.0, 2.0, 3.0, 40.0, 5.0]) };
    let mut shared = null_mut();
    ok(blob_from_dlpack_legacy(null(), l, &mut shared), "from_dlpack_legacy");
    ok(blob_fill(shared, 6.0), "fill shared");
    assert_eq!(read_f32(b, 6), [6.0; 6]);
    let mut reshape_status = blob_reshape(b, [4i64, 4].as_ptr(), 2);
    assert_eq!(reshape_status, BLOB_ERR_BUSY, "the import still uses the memory");
    ok(blob_free(shared), "free shared");
    reshape_status = blob_reshape(b, [4i64, 4].as_ptr(), 2);
    ok(reshape_status, "reshape once the export is gone");
    ok(blob_free(b), "free");
}

/// The caller's own DLPack tensor: everything it points at is in one box,
/// which its deleter frees and counts.
struct Producer {
    managed: DLManagedTensorVersioned,
    shape: [i64; 2],
    strides: [i64; 2],
    data: [f64; 6],
    deleted: *const AtomicUsize,
}

unsafe extern "C" fn delete_producer(m: *mut DLManagedTensorVersioned) {
    // SAFETY: manager_ctx is the Box<Producer> leaked by `produce`, freed once.
    let p = Box::from_raw((*m).manager_ctx as *mut Producer);
    (*p.deleted).fetch_add(1, Ordering::SeqCst);
}

fn produce(strides: [i64; 2], flags: u64, deleted: &AtomicUsize) -> *mut DLManagedTensorVersioned {
    let p = Box::into_raw(Box::new(Producer {
        managed: DLManagedTensorVersioned {
            version: DLPackVersion { major: 1, minor: 1 },
            manager_ctx: null_mut(),
            deleter: Some(delete_producer),
            flags,
            dl_tensor: DLTensor {
                data: null_mut(),
                device: DLDevice { device_type: 1, device_id: 0 },
                ndim: 2,
                dtype: DLDataType { code: 2, bits: 64, lanes: 1 },
                shape: null_mut(),
                strides: null_mut(),
                byte_offset: 0,
            },
        },
        shape: [2, 3],
        strides,
        data: [0.5, 1.5, 2.5, 3.5, 4.5, 5.5],
        deleted,
    }));
    // SAFETY: `p` is a fresh, leaked box; every pointer is derived from it.
    unsafe {
        (*p).managed.manager_ctx = p.cast();
        (*p).managed.dl_tensor.data = std::ptr::addr_of_mut!((*p).data).cast();
        (*p).managed.dl_tensor.shape = std::ptr::addr_of_mut!((*p).shape).cast();
        (*p).managed.dl_tensor.strides = std::ptr::addr_of_mut!((*p).strides).cast();
        std::ptr::addr_of_mut!((*p).managed)
    }
}

fn read_f64(b: *const Blob, n: usize) -> Vec<f64> {
    let mut v = vec![0f64; n];
    ok(blob_copy_to_host(b, v.as_mut_ptr().cast(), n * 8), "copy_to_host");
    v
}

#[test]
fn callers_dlpack_tensors_are_imported_and_deleted_once() {
    let deleted = AtomicUsize::new(0);
    // Row-major: zero copy, deleted when the last user lets go.
    let m = produce([3, 1], 0, &deleted);
    let mut b = null_mut();
    ok(blob_from_dlpack(null(), m, &mut b), "import");
    assert_eq!(read_f64(b, 6), [0.5, 1.5, 2.5, 3.5, 4.5, 5.5]);
    let mut row = null_mut();
    ok(blob_slice(b, [1i64].as_ptr(), 1, &mut row), "slice");
    ok(blob_fill(row, -1.0), "fill the producer's memory");
    // SAFETY: the producer's memory is alive until its deleter runs.
    unsafe { assert_eq!(*((*m).dl_tensor.data as *const f64).add(5), -1.0) };
    ok(blob_free(b), "free");
    assert_eq!(deleted.load(Ordering::SeqCst), 0);
    assert_eq!(read_f64(row, 3), [-1.0; 3]);
    ok(blob_free(row), "free row");
    assert_eq!(deleted.load(Ordering::SeqCst), 1);

    // Column-major: copied, and the deleter runs at once.
    let m = produce([1, 2], 0, &deleted);
    ok(blob_from_dlpack(null(), m, &mut b), "import strided");
    assert_eq!(deleted.load(Ordering::SeqCst), 2);
    assert_eq!(read_f64(b, 6), [0.5, 2.5, 4.5, 1.5, 3.5, 5.5]);
    ok(blob_free(b), "free strided");

    // Read-only: the blob refuses writes; refused imports take nothing.
    let m = produce([3, 1], blobcore::dlpack::DLPACK_FLAG_BITMASK_READ_ONLY, &deleted);
    ok(blob_from_dlpack(null(), m, &mut b), "import read-only");
    assert_eq!(blob_fill(b, 0.0), BLOB_ERR_READ_ONLY);
    ok(blob_free(b), "free read-only");
    assert_eq!(deleted.load(Ordering::SeqCst), 3);
    let m = produce([3, 1], 0, &deleted);
    // SAFETY: the tensor is the caller's until an import succeeds.
    unsafe { *(*m).dl_tensor.shape = -2 };
    let mut untouched = 0x10 as *mut Blob;
    assert_eq!(blob_from_dlpack(null(), m, &mut untouched), BLOB_ERR_SHAPE);
    assert_eq!(untouched as usize, 0x10);
    assert_eq!(deleted.load(Ordering::SeqCst), 3);
    // SAFETY: refused, so still the caller's to delete.
    unsafe { delete_producer(m) };
    assert_eq!(deleted.load(Ordering::SeqCst), 4);
}

#[test]
fn byte_buffers_round_trip_and_free_once() {
    let b = tensor_f32(&[2, 3], &[0.0, -1.0, 2.5, 3.0, 4.0, 1e-3]);
    type To = extern "C" fn(*const Blob, *mut *mut u8, *mut usize) -> i32;
    type From = extern "C" fn(*const BlobEngine, *const u8, usize, *mut *mut Blob) -> i32;
    extern "C" fn to_caffe(b: *const Blob, out: *mut *mut u8, len: *mut usize) -> i32 {
        blob_to_caffe_bytes(b, false, out, len)
    }
    let formats: [(&str, To, From); 3] = [
        ("npy", blob_to_npy_bytes, blob_from_npy_bytes),
        ("neoml", blob_to_neoml_bytes, blob_from_neoml_bytes),
        ("caffe", to_caffe, blob_from_caffe_bytes),
    ];
    for (name, to, from) in formats {
        let (mut p, mut n) = (null_mut(), 0usize);
        ok(to(b, &mut p, &mut n), name);
        assert!(n > 24, "{name}: {n} bytes");
        let mut back = null_mut();
        ok(from(null(), p, n, &mut back), name);
        assert_eq!(read_f32(back, 6), [0.0, -1.0, 2.5, 3.0, 4.0, 1e-3], "{name}");
        ok(blob_bytes_free(p), name);
        assert_eq!(blob_bytes_free(p), BLOB_ERR_INVALID_HANDLE, "{name}: a second free");
        ok(blob_free(back), name);
    }
    ok(blob_free(b), "free");
}

fn c_string(p: *const c_char) -> String {
    assert!(!p.is_null());
    // SAFETY: the API returned a NUL-terminated string that is still valid.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

#[test]
fn strings_handed_to_c_stay_valid_while_documented() {
    let b = tensor_f32(&[2, 3], &[0.0; 6]);
    let mut len = 0usize;
    ok(blob_shape_string(b, null_mut(), 0, &mut len), "size query");
    let mut buf = vec![0 as c_char; len + 1];
    ok(blob_shape_string(b, buf.as_mut_ptr(), buf.len(), &mut len), "shape_string");
    assert_eq!(c_string(buf.as_ptr()), "2 3 (6)");
    assert_eq!(blob_shape_string(b, buf.as_mut_ptr(), len, &mut len), BLOB_ERR_INVALID_ARGUMENT);
    assert!(c_string(blob_last_error()).contains("the shape string needs 8"), "{}", c_string(blob_last_error()));
    assert_eq!(c_string(buf.as_ptr()), "2 3 (6)", "a refused call writes nothing");
    assert_eq!(c_string(blob_status_str(BLOB_ERR_LIFO)), "BLOB_ERR_LIFO");
    assert_eq!(c_string(blob_version()), env!("CARGO_PKG_VERSION"));

    // Map names and metadata belong to the map: valid until it changes,
    // even while other maps come and go around it.
    let mut map = null_mut();
    ok(blob_map_create(&mut map), "map");
    let name = c"weights";
    ok(blob_map_insert(map, name.as_ptr(), b), "insert");
    ok(blob_map_set_metadata(map, c"format".as_ptr(), c"pt".as_ptr()), "metadata");
    let (mut n, mut k, mut v): (*const c_char, *const c_char, *const c_char) = (null(), null(), null());
    ok(blob_map_name(map, 0, &mut n), "name");
    ok(blob_map_metadata_at(map, 0, &mut k, &mut v), "metadata_at");
    let mut others = Vec::new();
    for _ in 0..40 {
        let mut o = null_mut();
        ok(blob_map_create(&mut o), "other map");
        others.push(o);
    }
    for o in others.drain(..20) {
        ok(blob_map_free(o), "free other");
    }
    assert_eq!((c_string(n), c_string(k), c_string(v)), ("weights".into(), "format".into(), "pt".into()));
    let mut got = null_mut();
    ok(blob_map_get(map, n, &mut got), "get by the map's own name");
    ok(blob_fill(got, 1.0), "fill");
    assert_eq!(read_f32(b, 6), [1.0; 6], "the map shares the blob");
    for o in others {
        ok(blob_map_free(o), "free other");
    }
    ok(blob_free(got), "free got");
    ok(blob_map_free(map), "free map");
    ok(blob_free(b), "free");
}
