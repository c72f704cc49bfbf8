//! Random sequences of C API calls over a few blobs: creations with any
//! dims, dtype codes and layouts, wraps of caller memory (read-only ones
//! too), frees (double frees included), windows moved, regions, slices,
//! transposes and raw spans, reshapes and reinterprets, merges and splits
//! (by axis, object and named dim), copies of every kind (host, typed,
//! blob to blob, casts, clones, reorders, permutes), buffers held and
//! released in any order, writes through held buffers, Caffe diffs and
//! shared data, DLPack round trips, shared memory files, maps, queries,
//! engines (the default one set and reset) and serialization, files of
//! every format included (whole-model ones too, with progress callbacks
//! that cancel): 160 of the 162 C functions (not `blob_engine_gpu` and
//! `blob_engine_cuda`, which open devices).
//!
//! Whatever the sequence:
//! - every call returns a documented status: never BLOB_ERR_INTERNAL,
//!   never a crash (and, under the fuzzer's ASan, no bad memory access);
//! - bytes written with `blob_copy_from_host` read back unchanged;
//! - `blob_shares_memory` is symmetric, and a blob it says does not share
//!   memory with the one written keeps its bytes (the overlap oracle);
//! - every wrapped buffer's release callback runs exactly once, after the
//!   last blob using it is freed.
//!
//! `run` is also the body of the cargo-fuzz target `capi_ops` (fuzz/).

use blob::*;
use std::cell::Cell;
use std::ffi::c_void;

const SLOTS: usize = 6;

/// A held buffer: the blob handle it came from, its pointer and byte
/// length, and whether it may be written (a read-only blob's may not: its
/// memory may be mapped read-only).
struct Held {
    owner: *mut Blob,
    ptr: *mut c_void,
    len: usize,
    writable: bool,
}

struct Bytes<'a>(&'a [u8], usize);

impl Bytes<'_> {
    fn u8(&mut self) -> u8 {
        let v = self.0.get(self.1).copied().unwrap_or(0);
        self.1 += 1;
        v
    }
    /// Any small value, -8..=8 (axes, shifts, fill values, bad input).
    fn small(&mut self) -> i64 {
        (self.u8() as i8 as i64) % 9
    }
    /// A dim: 1-4 mostly, else any small value (0 and negatives too).
    fn dim(&mut self) -> i64 {
        match self.u8() {
            v @ 0..=223 => 1 + (v % 4) as i64,
            v => (v as i8 as i64) % 9,
        }
    }
    /// An index or position: 0-2 mostly, else any small value.
    fn idx(&mut self) -> i64 {
        match self.u8() {
            v @ 0..=191 => (v % 3) as i64,
            v => (v as i8 as i64) % 9,
        }
    }
    /// Up to `max` dims.
    fn dims(&mut self, max: u8) -> Vec<i64> {
        let n = self.u8() % (max + 1);
        (0..n).map(|_| self.dim()).collect()
    }
    fn slot(&mut self) -> usize {
        self.u8() as usize % SLOTS
    }
    fn bit(&mut self) -> bool {
        self.u8() & 1 == 1
    }
    /// Up to `max` indices.
    fn list(&mut self, max: u8) -> Vec<i64> {
        let n = self.u8() % (max + 1);
        (0..n).map(|_| self.idx()).collect()
    }
    /// A dtype code: float32 half the time, else any valid one (1-16) or
    /// an invalid one.
    fn dtype(&mut self) -> i32 {
        match self.u8() {
            0..=127 => BLOB_F32,
            v => (v % 18) as i32,
        }
    }
    fn done(&self) -> bool {
        self.1 >= self.0.len()
    }
}

fn check(status: i32, what: &str) {
    // 0-13 and 15 (BLOB_ERR_READ_ONLY) are documented; 14 is INTERNAL.
    assert!((0..=13).contains(&status) || status == BLOB_ERR_READ_ONLY, "{what} returned {status}: {}", unsafe {
        std::ffi::CStr::from_ptr(blob_last_error()).to_string_lossy()
    });
}

fn dtype_size(d: i32) -> usize {
    match d {
        3 | 4 | 13 => 8,
        1 | 2 | 12 => 4,
        7 | 8 | 10 | 11 => 2,
        _ => 1,
    }
}

fn element_size(b: *const Blob) -> usize {
    let mut d = 0i32;
    if blob_dtype(b, &mut d) != BLOB_OK {
        return 0;
    }
    dtype_size(d)
}

fn dtype_of(b: *const Blob) -> i32 {
    let mut d = 0i32;
    check(blob_dtype(b, &mut d), "dtype");
    d
}

/// The blob's dims (None for a freed or NULL handle).
fn dims_of(b: *const Blob) -> Option<Vec<i64>> {
    let (mut rank, mut dims) = (0usize, [0i64; 8]);
    if blob_rank(b, &mut rank) != BLOB_OK || rank > 8 || blob_dims(b, dims.as_mut_ptr(), 8) != BLOB_OK {
        return None;
    }
    Some(dims[..rank].to_vec())
}

/// The blob's elements as bytes in logical order, or None when it cannot
/// be read (a freed handle, an element count too large for this test).
fn read(b: *const Blob) -> Option<Vec<u8>> {
    let mut n = 0i64;
    if blob_data_size(b, &mut n) != BLOB_OK {
        return None;
    }
    let len = usize::try_from(n).ok()?.checked_mul(element_size(b))?;
    if len > 1 << 20 {
        return None;
    }
    let mut out = vec![0u8; len];
    let st = blob_copy_to_host(b, out.as_mut_ptr().cast(), len);
    check(st, "copy_to_host");
    (st == BLOB_OK).then_some(out)
}

/// A scratch file of this process and thread, one per format.
fn scratch_file(kind: u8) -> std::ffi::CString {
    scratch_path(&format!("{kind}.bin"))
}

/// This process's scratch directory.
fn scratch_dir() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("blobcore-op-sequences-{}", std::process::id()))
}

/// What this thread's scratch file names start with.
fn scratch_prefix() -> String {
    format!("{:?}-", std::thread::current().id()).replace(|c: char| !c.is_ascii_alphanumeric() && c != '-', "_")
}

/// A scratch path of this process and thread ending in `suffix`.
fn scratch_path(suffix: &str) -> std::ffi::CString {
    let dir = scratch_dir();
    std::fs::create_dir_all(&dir).expect("the temporary directory is writable");
    let name = scratch_prefix() + &suffix.replace(|c: char| !c.is_ascii_alphanumeric() && c != '.' && c != '-', "_");
    std::ffi::CString::new(dir.join(name).into_os_string().into_encoded_bytes()).expect("a path without NUL")
}

/// Removes this thread's scratch files (other tests' threads may still
/// use theirs), and the directory once it is empty.
fn remove_scratch() {
    let prefix = scratch_prefix();
    for entry in std::fs::read_dir(scratch_dir()).into_iter().flatten().flatten() {
        if entry.file_name().to_string_lossy().starts_with(&prefix) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
    let _ = std::fs::remove_dir(scratch_dir());
}

/// A load's progress callback: `user` is a countdown of calls before it
/// cancels (0: never); every call must have `done <= total`.
unsafe extern "C" fn progress(done: u64, total: u64, user: *mut c_void) -> bool {
    assert!(done <= total, "progress {done} of {total}");
    // SAFETY: `user` is the `&mut u32` `load_with_progress` passes, alive
    // for the load's duration and touched by nothing else meanwhile.
    let left = unsafe { &mut *(user as *mut u32) };
    match *left {
        0 => true,
        1 => false,
        n => {
            *left = n - 1;
            true
        }
    }
}

/// The first blob of a loaded map, and the map freed. A failed load must
/// have made nothing.
fn first_of(st: i32, map: *mut BlobMap, out: &mut *mut Blob) -> i32 {
    check(st, "load map");
    if st != BLOB_OK {
        assert!(map.is_null(), "a failed load returned a map");
        return st;
    }
    let (mut len, mut keys) = (0usize, 0usize);
    check(blob_map_len(map, &mut len), "map_len");
    check(blob_map_metadata_len(map, &mut keys), "map_metadata_len");
    for i in 0..keys + 1 {
        let (mut k, mut v) = (std::ptr::null(), std::ptr::null());
        let st = blob_map_metadata_at(map, i, &mut k, &mut v);
        check(st, "map_metadata_at");
        assert_eq!(st == BLOB_OK, i < keys, "map_metadata_at({i}) of {keys} keys");
    }
    let st = if len > 0 { blob_map_at(map, 0, 0, out) } else { BLOB_ERR_OUT_OF_RANGE };
    check(blob_map_free(map), "map_free");
    st
}

thread_local! {
    /// Wrapped buffers made and released by this thread's sequence.
    static WRAPPED: Cell<(usize, usize)> = const { Cell::new((0, 0)) };
}

/// `blob_wrap`'s release callback: frees the buffer and counts it.
unsafe extern "C" fn release_wrapped(ctx: *mut c_void) {
    // SAFETY: ctx is the Box<Vec<u64>> leaked by `wrap`, released once
    // (the count at the end of `run` checks "once").
    drop(unsafe { Box::from_raw(ctx as *mut Vec<u64>) });
    WRAPPED.with(|w| w.set((w.get().0, w.get().1 + 1)));
}

/// Wraps a fresh buffer of `words` u64 (zeroed) as a blob.
fn wrap(dtype: i32, dims: &[i64], words: usize, read_only: bool) -> (i32, *mut Blob) {
    let mut buf = Box::new(vec![0u64; words]);
    let (data, len) = (buf.as_mut_ptr() as *mut c_void, words * 8);
    let ctx = Box::into_raw(buf) as *mut c_void;
    let mut out = std::ptr::null_mut();
    let st = if read_only {
        blob_wrap_read_only(std::ptr::null(), dtype, dims.as_ptr(), dims.len(), data, len, Some(release_wrapped), ctx, &mut out)
    } else {
        blob_wrap(std::ptr::null(), dtype, dims.as_ptr(), dims.len(), data, len, Some(release_wrapped), ctx, &mut out)
    };
    if st == BLOB_OK {
        WRAPPED.with(|w| w.set((w.get().0 + 1, w.get().1)));
    } else {
        // On error nothing is taken: the buffer is still ours.
        // SAFETY: ctx was leaked above and not taken by the failed wrap.
        drop(unsafe { Box::from_raw(ctx as *mut Vec<u64>) });
    }
    (st, out)
}

/// Puts a new handle in a slot, freeing the one it replaces (a freed
/// handle's free is `BLOB_ERR_INVALID_HANDLE`) and forgetting that one's
/// held buffers, so that no sequence leaks a blob.
fn replace(blobs: &mut [*mut Blob; SLOTS], held: &mut Vec<Held>, slot: usize, new: *mut Blob) {
    let old = blobs[slot];
    if !old.is_null() {
        let st = blob_free(old);
        check(st, "free replaced");
        if st == BLOB_OK {
            held.retain(|h| h.owner != old);
        }
    }
    blobs[slot] = new;
}

/// A call that makes a new handle: checked, and kept in a slot on success.
fn keep(blobs: &mut [*mut Blob; SLOTS], held: &mut Vec<Held>, slot: usize, st: i32, out: *mut Blob, what: &str) {
    check(st, what);
    if st == BLOB_OK {
        replace(blobs, held, slot, out);
    }
}

/// Writes a pattern into `b` through `blob_copy_from_host` and checks it
/// against every slot: the bytes read back are the bytes written, and a
/// blob `blob_shares_memory` says does not share memory with `b` keeps
/// its bytes.
fn write_and_check(blobs: &[*mut Blob; SLOTS], w: usize, seed: u8, wrong_len: bool) {
    let b = blobs[w];
    let Some(before) = read(b) else { return };
    let others: Vec<Option<Vec<u8>>> = blobs.iter().map(|&o| read(o)).collect();
    let d = dtype_of(b);
    // Booleans read back as 0 or 1: write those only.
    let pattern: Vec<u8> = (0..before.len()).map(|i| if d == BLOB_BOOL { (i as u8 ^ seed) & 1 } else { (i as u8).wrapping_mul(31) ^ seed }).collect();
    if wrong_len {
        // One byte short: refused, nothing written.
        if !pattern.is_empty() {
            let st = blob_copy_from_host(b, pattern.as_ptr().cast(), pattern.len() - 1);
            assert_ne!(st, BLOB_OK, "copy_from_host of too few bytes");
            check(st, "copy_from_host short");
            assert_eq!(read(b).as_ref(), Some(&before), "a refused copy_from_host changed the blob");
        }
        return;
    }
    let st = blob_copy_from_host(b, pattern.as_ptr().cast(), pattern.len());
    check(st, "copy_from_host");
    if st != BLOB_OK {
        return;
    }
    assert_eq!(read(b).as_ref(), Some(&pattern), "bytes written with copy_from_host read back changed");
    for (o, old) in blobs.iter().zip(others) {
        let Some(old) = old else { continue };
        let (mut ab, mut ba) = (false, false);
        let (s1, s2) = (blob_shares_memory(b, *o, &mut ab), blob_shares_memory(*o, b, &mut ba));
        check(s1, "shares_memory");
        check(s2, "shares_memory");
        if s1 == BLOB_OK && s2 == BLOB_OK {
            assert_eq!(ab, ba, "shares_memory is not symmetric");
            if !ab {
                assert_eq!(read(*o).as_ref(), Some(&old), "a write changed a blob that shares_memory says it does not share memory with");
            }
        }
    }
}

/// Interprets `data` as a sequence of API calls.
pub fn run(data: &[u8]) {
    WRAPPED.with(|w| w.set((0, 0)));
    let mut r = Bytes(data, 0);
    let mut blobs: [*mut Blob; SLOTS] = [std::ptr::null_mut(); SLOTS];
    let mut held: Vec<Held> = Vec::new();
    let mut steps = 0;
    let null = std::ptr::null();
    // Every slot starts with a blob (most calls then reach past the
    // handle checks); the ops make, replace and free them from there.
    for slot in &mut blobs {
        let (dtype, dims) = (r.dtype(), r.dims(4));
        let st = blob_create_tensor(null, dtype, dims.as_ptr(), dims.len(), slot);
        check(st, "create");
    }
    while !r.done() && steps < 256 {
        steps += 1;
        let op = r.u8() % 52;
        let s = r.slot();
        let b = blobs[s];
        let mut out = std::ptr::null_mut();
        match op {
            0 => {
                let dtype = r.dtype();
                let rank = (r.u8() % 5) as usize;
                let dims: Vec<i64> = (0..rank).map(|_| r.dim()).collect();
                let st = blob_create_tensor(null, dtype, dims.as_ptr(), rank, &mut out);
                keep(&mut blobs, &mut held, s, st, out, "create");
            }
            1 => {
                // Freeing a blob ends its buffers; the handle stays in its
                // slot, so later calls see a freed handle.
                let st = blob_free(b);
                check(st, "free");
                if st == BLOB_OK {
                    held.retain(|h| h.owner != b);
                }
            }
            2 => check(blob_fill(b, r.small() as f64), "fill"),
            3 => {
                let st = blob_create_window(b, r.idx(), &mut out);
                let to = r.slot();
                keep(&mut blobs, &mut held, to, st, out, "window");
            }
            4 => check(blob_set_parent_pos(b, r.idx()), "set_parent_pos"),
            5 => {
                let (p, q, axis) = (r.slot(), r.slot(), r.small() as i32);
                let parts = [blobs[p] as *const Blob, blobs[q] as *const Blob];
                if r.bit() {
                    // A destination made to fit (or one element off): the
                    // parts' dims with their sizes along `axis` added up.
                    if let (Some(mut dims), Some(other)) = (dims_of(blobs[p]), dims_of(blobs[q])) {
                        if let Some(a) = usize::try_from(axis).ok().filter(|&a| a < dims.len() && a < other.len()) {
                            dims[a] += other[a] + i64::from(r.u8() % 8 == 0);
                            let st = blob_create_tensor(null, dtype_of(blobs[p]), dims.as_ptr(), dims.len(), &mut out);
                            keep(&mut blobs, &mut held, s, st, out, "create merged");
                        }
                    }
                }
                check(blob_merge(parts.as_ptr(), 2, axis, blobs[s]), "merge");
            }
            6 => {
                let (p, q, axis) = (r.slot(), r.slot(), r.small() as i32);
                if r.bit() && p != q && p != s && q != s {
                    // Parts made to fit: `b`'s dims cut in two along `axis`.
                    if let Some(dims) = dims_of(b) {
                        if let Some(a) = usize::try_from(axis).ok().filter(|&a| a < dims.len()) {
                            let cut = r.idx().min(dims[a]);
                            for (slot, size) in [(p, cut), (q, dims[a] - cut)] {
                                let mut d = dims.clone();
                                d[a] = size;
                                let st = blob_create_tensor(null, dtype_of(b), d.as_ptr(), d.len(), &mut out);
                                keep(&mut blobs, &mut held, slot, st, out, "create part");
                            }
                        }
                    }
                }
                let parts = [blobs[p], blobs[q]];
                check(blob_split(blobs[s], axis, parts.as_ptr(), 2), "split");
            }
            7 => {
                let (pos, size, exchange) = (r.idx(), r.dim(), r.bit());
                let mut p = std::ptr::null_mut();
                let st = blob_get_buffer(b, pos, size, exchange, &mut p);
                check(st, "get_buffer");
                if st == BLOB_OK {
                    let mut writable = false;
                    check(blob_is_writable(b, &mut writable), "is_writable");
                    assert!(writable || exchange, "a read-only blob gave a buffer to overwrite");
                    held.push(Held { owner: b, ptr: p, len: size.max(0) as usize * element_size(b), writable });
                }
            }
            8 => {
                // Release some held buffer: the newest, or any (a LIFO error).
                if !held.is_empty() {
                    let i = r.u8() as usize % held.len();
                    let h = &held[i];
                    let st = blob_release_buffer(h.owner, h.ptr, r.bit());
                    check(st, "release_buffer");
                    if st == BLOB_OK {
                        held.remove(i);
                    }
                }
            }
            9 => {
                // Write through a writable held buffer, within its length.
                if let Some(h) = held.iter().rev().find(|h| h.writable) {
                    let v = r.u8();
                    // SAFETY: the buffer is held (its memory pinned) and
                    // `len` bytes long.
                    unsafe { std::ptr::write_bytes(h.ptr as *mut u8, v, h.len) };
                }
            }
            10 => {
                let dims = r.dims(3);
                check(blob_reshape(b, dims.as_ptr(), dims.len()), "reshape");
            }
            11 => check(blob_copy_from(b, blobs[r.slot()]), "copy_from"),
            12 => check(blob_add(b, blobs[r.slot()]), "add"),
            13 => {
                let st = blob_transposed(b, r.idx() as i32, r.idx() as i32, &mut out);
                let to = r.slot();
                keep(&mut blobs, &mut held, to, st, out, "transposed");
            }
            14 => {
                let (mut sum, mut sq) = (0.0, 0.0);
                check(blob_asum(b, &mut sum), "asum");
                check(blob_sumsq(b, &mut sq), "sumsq");
                check(blob_scale(b, 0.5), "scale");
            }
            15 => {
                let idx = r.list(3);
                let st = blob_slice(b, idx.as_ptr(), idx.len(), &mut out);
                let to = r.slot();
                keep(&mut blobs, &mut held, to, st, out, "slice");
            }
            16 => {
                let (mut p, mut n) = (std::ptr::null_mut(), 0usize);
                let kind = r.u8() % 3;
                let st = match kind {
                    0 => blob_to_npy_bytes(b, &mut p, &mut n),
                    1 => blob_to_caffe_bytes(b, r.bit(), &mut p, &mut n),
                    _ if r.bit() => blob_to_neoml_bytes(b, &mut p, &mut n),
                    _ => blob_to_neoml_bytes_form(b, r.small() as i32, &mut p, &mut n),
                };
                check(st, "to_bytes");
                if st == BLOB_OK {
                    // Cut short or flipped sometimes: a clear error.
                    let mut bytes = unsafe { std::slice::from_raw_parts(p, n) }.to_vec();
                    match r.u8() % 4 {
                        0 => bytes.truncate(r.u8() as usize % (n + 1)),
                        1 if n > 0 => {
                            let i = r.u8() as usize * 7 % n;
                            bytes[i] ^= r.u8() | 1;
                        }
                        _ => {}
                    }
                    let st = match kind {
                        0 => blob_from_npy_bytes(null, bytes.as_ptr(), bytes.len(), &mut out),
                        1 => blob_from_caffe_bytes(null, bytes.as_ptr(), bytes.len(), &mut out),
                        _ => blob_from_neoml_bytes(null, bytes.as_ptr(), bytes.len(), &mut out),
                    };
                    let to = r.slot();
                    keep(&mut blobs, &mut held, to, st, out, "from_bytes");
                    check(blob_bytes_free(p), "bytes_free");
                }
            }
            17 => check(blob_clear(b), "clear"),
            18 => {
                let n = (r.u8() % 5) as usize;
                let (begin, end): (Vec<i64>, Vec<i64>) = (0..n).map(|_| (r.idx(), r.idx() + 1)).unzip();
                let st = blob_region(b, begin.as_ptr(), end.as_ptr(), n, &mut out);
                let to = r.slot();
                keep(&mut blobs, &mut held, to, st, out, "region");
            }
            19 => {
                let axes: Vec<i32> = r.list(4).into_iter().map(|a| a as i32).collect();
                if r.bit() {
                    let st = blob_permute(b, axes.as_ptr(), axes.len(), &mut out);
                    let to = r.slot();
                    keep(&mut blobs, &mut held, to, st, out, "permute");
                } else {
                    check(blob_permute_from(b, blobs[r.slot()], axes.as_ptr(), axes.len()), "permute_from");
                }
            }
            20 => {
                let st = blob_transposed_dims(b, r.small().rem_euclid(8) as i32, r.small().rem_euclid(8) as i32, &mut out);
                let to = r.slot();
                keep(&mut blobs, &mut held, to, st, out, "transposed_dims");
            }
            21 => {
                let dims = r.dims(4);
                check(blob_reinterpret(b, dims.as_ptr(), dims.len()), "reinterpret");
            }
            22 => check(blob_shift_parent_pos(b, r.idx() - 1), "shift_parent_pos"),
            23 => {
                let (dim, n) = (r.small() as i32, (r.u8() % 3) as usize);
                let ins: Vec<*const Blob> = (0..n).map(|_| blobs[r.slot()] as *const Blob).collect();
                let outs: Vec<*mut Blob> = (0..n).map(|_| blobs[r.slot()]).collect();
                match r.u8() % 4 {
                    0 => check(blob_merge_dim(ins.as_ptr(), n, dim, b), "merge_dim"),
                    1 => check(blob_split_dim(b, dim, outs.as_ptr(), n), "split_dim"),
                    2 => check(blob_merge_objects(ins.as_ptr(), n, b), "merge_objects"),
                    _ => check(blob_split_objects(b, outs.as_ptr(), n), "split_objects"),
                }
            }
            24 | 25 => write_and_check(&blobs, s, r.u8(), op == 25 && r.bit()),
            26 => {
                // Typed copies out and in, with any count up to the
                // buffer's length (and a NULL pointer once in a while).
                let (dtype, mut count) = (r.dtype(), r.u8() as usize % 64);
                let mut n = 0i64;
                if r.bit() && blob_data_size(b, &mut n) == BLOB_OK {
                    // The blob's own count (the usual call), if small.
                    count = usize::try_from(n).unwrap_or(0).min(4096);
                }
                let mut buf = vec![0u8; count * dtype_size(dtype)];
                let p = if r.u8() % 16 == 0 { std::ptr::null_mut() } else { buf.as_mut_ptr() as *mut c_void };
                if r.bit() {
                    check(blob_copy_to(b, dtype, p, count), "copy_to");
                } else {
                    check(blob_copy_from_typed(b, dtype, p, count), "copy_from_typed");
                }
            }
            27 => check(blob_copy_from_blob(b, blobs[r.slot()], r.bit(), r.bit()), "copy_from_blob"),
            28 => {
                let d = r.dtype();
                let st = match r.u8() % 3 {
                    0 => blob_cast(b, d, &mut out),
                    1 => blob_clone(b, &mut out),
                    _ => blob_clone_as(b, d, &mut out),
                };
                let to = r.slot();
                keep(&mut blobs, &mut held, to, st, out, "cast/clone");
            }
            29 => {
                const LAYOUTS: [i32; 8] = [BLOB_LAYOUT_ANY, BLOB_LAYOUT_NCHW, BLOB_LAYOUT_NHWC, BLOB_LAYOUT_NDHWC, BLOB_LAYOUT_CHW, BLOB_LAYOUT_HWC, BLOB_LAYOUT_CN, BLOB_LAYOUT_BLOCKED];
                let (dtype, layout) = (r.dtype(), LAYOUTS[r.u8() as usize % LAYOUTS.len()]);
                let dims = r.dims(5);
                let st = blob_create_layout(null, dtype, dims.as_ptr(), dims.len(), layout, &mut out);
                keep(&mut blobs, &mut held, s, st, out, "create_layout");
            }
            30 => {
                // A blocked desc (channels blocked by 4 or 8, say) from
                // random blocking dims and order.
                let dtype = r.dtype();
                let dims = r.dims(4);
                let n = (r.u8() % 6) as usize;
                let blk: Vec<i64> = (0..n).map(|_| r.dim() * 2).collect();
                let order: Vec<i64> = (0..n).map(|_| r.small().rem_euclid(5)).collect();
                let st = if r.bit() {
                    blob_create_desc(null, dtype, dims.as_ptr(), dims.len(), blk.as_ptr(), order.as_ptr(), n, &mut out)
                } else {
                    // With padding, dim offsets and strides (any, even
                    // overlapping or out of order: checked or refused).
                    let offsets: Vec<i64> = (0..n).map(|_| r.idx()).collect();
                    let strides: Vec<i64> = (0..n).map(|_| r.dim() * r.dim()).collect();
                    blob_create_desc_strided(null, dtype, dims.as_ptr(), dims.len(), blk.as_ptr(), order.as_ptr(), n, r.idx(), offsets.as_ptr(), strides.as_ptr(), &mut out)
                };
                keep(&mut blobs, &mut held, s, st, out, "create_desc");
            }
            31 => check(blob_reorder(b, blobs[r.slot()]), "reorder"),
            32 => {
                // A DLPack round trip (export, maybe read-only; import, or
                // the deleter alone).
                let mut t = std::ptr::null_mut();
                let st = blob_to_dlpack(b, (r.u8() % 3) as u32, &mut t);
                check(st, "to_dlpack");
                if st == BLOB_OK {
                    if r.u8() % 4 == 0 {
                        // SAFETY: a live export of ours, deleted once.
                        unsafe { ((*t).deleter.expect("blobcore's exports have a deleter"))(t) };
                        let mut t = std::ptr::null_mut();
                        let st = blob_to_dlpack_legacy(b, &mut t);
                        check(st, "to_dlpack_legacy");
                        if st == BLOB_OK {
                            let st = blob_from_dlpack_legacy(null, t, &mut out);
                            let to = r.slot();
                            keep(&mut blobs, &mut held, to, st, out, "from_dlpack_legacy");
                        }
                    } else if r.bit() {
                        let st = blob_from_dlpack(null, t, &mut out);
                        let to = r.slot();
                        keep(&mut blobs, &mut held, to, st, out, "from_dlpack");
                    } else {
                        // SAFETY: a live export of ours, deleted once.
                        unsafe { ((*t).deleter.expect("blobcore's exports have a deleter"))(t) };
                    }
                }
            }
            33 => {
                let dtype = r.dtype();
                let dims = r.dims(3);
                let words = r.u8() as usize % 80;
                let (st, out) = wrap(dtype, &dims, words, r.bit());
                keep(&mut blobs, &mut held, s, st, out, "wrap");
            }
            34 => {
                let o = blobs[r.slot()];
                if r.bit() {
                    check(blob_share_data(b, o), "share_data");
                } else {
                    check(blob_share_diff(b, o), "share_diff");
                }
            }
            35 => {
                let mut v = 0.0;
                let (n, c, h, w) = (r.idx(), r.idx(), r.idx(), r.idx());
                match r.u8() % 4 {
                    0 => check(blob_update(b), "update"),
                    1 => check(blob_data_at(b, n, c, h, w, &mut v), "data_at"),
                    2 => check(blob_diff_at(b, n, c, h, w, &mut v), "diff_at"),
                    _ => {
                        let st = blob_diff(b, &mut out);
                        let to = r.slot();
                        keep(&mut blobs, &mut held, to, st, out, "diff");
                    }
                }
            }
            36 => {
                // Queries: each writes what it documents or refuses.
                let (mut i, mut k, mut flag) = (0i64, 0i32, false);
                let mut dims = [0i64; 8];
                let idx = r.list(4);
                let a = r.small() as i32;
                check(blob_dims(b, dims.as_mut_ptr(), r.u8() as usize % 9), "dims");
                let mut rank = 0usize;
                check(blob_rank(b, &mut rank), "rank");
                check(blob_layout(b, &mut k), "layout");
                check(blob_head(b, &mut k), "head");
                check(blob_offset(b, idx.as_ptr(), idx.len(), &mut i), "offset");
                check(blob_desc_offset(b, idx.as_ptr(), idx.len(), &mut i), "desc_offset");
                check(blob_named_dim(b, a, &mut i), "named_dim");
                check(blob_count_range(b, a, r.small() as i32, &mut i), "count_range");
                check(blob_legacy_shape(b, a, &mut i), "legacy_shape");
                check(blob_parent_pos(b, &mut i), "parent_pos");
                check(blob_raw_count(b, &mut i), "raw_count");
                check(blob_object_count(b, &mut i), "object_count");
                check(blob_is_writable(b, &mut flag), "is_writable");
                check(blob_is_shared(b, &mut flag), "is_shared");
                check(blob_capacity(b, &mut i), "capacity");
                check(blob_dim(b, a, &mut i), "dim");
                check(blob_object_size(b, &mut i), "object_size");
                check(blob_geometrical_size(b, &mut i), "geometrical_size");
                check(blob_canonical_axis(b, a, &mut k), "canonical_axis");
                check(blob_desc_offset_linear(b, r.small(), &mut i), "desc_offset_linear");
                check(blob_has_equal_dims(b, blobs[r.slot()], &mut flag), "has_equal_dims");
                let mut text = [0 as std::ffi::c_char; 24];
                let mut len = 0usize;
                check(blob_shape_string(b, text.as_mut_ptr(), r.u8() as usize % 25, &mut len), "shape_string");
                let (mut nb, mut pad) = (0usize, 0i64);
                let mut arrays = [[0i64; 8]; 4];
                let [bd, bo, bs, bf] = &mut arrays;
                check(blob_desc_blocking(b, r.u8() as usize % 9, bd.as_mut_ptr(), bo.as_mut_ptr(), bs.as_mut_ptr(), bf.as_mut_ptr(), &mut nb, &mut pad), "desc_blocking");
            }
            37 => {
                // Handles to the parent, the owner and the raw span.
                let st = match r.u8() % 3 {
                    0 => blob_parent(b, &mut out),
                    1 => blob_owner(b, &mut out),
                    _ => blob_raw(b, &mut out),
                };
                check(st, "parent/owner/raw");
                if st == BLOB_OK && !out.is_null() {
                    let to = r.slot();
                    replace(&mut blobs, &mut held, to, out);
                }
            }
            38 if !cfg!(miri) => {
                // Shared memory: moved into a memfd, and mapped again
                // from its descriptor (another address, the same bytes).
                if r.bit() {
                    check(blob_share_memory(b), "share_memory");
                }
                let (mut fd, mut offset) = (-1, 0u64);
                let st = blob_shared_fd(b, &mut fd, &mut offset);
                check(st, "shared_fd");
                if st == BLOB_OK {
                    let d = dtype_of(b);
                    let dims = if r.bit() { r.dims(3) } else { dims_of(b).unwrap_or_default() };
                    let st = blob_from_shared_fd(null, d, dims.as_ptr(), dims.len(), fd, offset, &mut out);
                    let to = r.slot();
                    keep(&mut blobs, &mut held, to, st, out, "from_shared_fd");
                    // SAFETY: the descriptor blob_shared_fd gave us, closed once.
                    unsafe { libc_close(fd) };
                }
            }
            39 => {
                let o = blobs[r.slot()];
                let (mut x, mut y) = (false, false);
                check(blob_shares_memory(b, o, &mut x), "shares_memory");
                check(blob_may_share_memory(b, o, &mut y), "may_share_memory");
                assert!(!x || y, "shares_memory true but may_share_memory false");
            }
            40 => {
                let n = r.idx();
                // The low bit keeps the older sequences' meaning (fill or
                // clear); the next one picks the exact fills instead.
                let pick = r.u8();
                // One element's bytes, of the blob's dtype or any code.
                let mut elem = || {
                    let dtype = if r.bit() { r.dtype() } else { dtype_of(b) };
                    (dtype, std::array::from_fn::<u8, 8, _>(|_| r.u8()))
                };
                match pick & 3 {
                    1 => check(blob_fill_object(b, n, r.small() as f64), "fill_object"),
                    0 => check(blob_clear_object(b, n), "clear_object"),
                    3 => {
                        let (dtype, v) = elem();
                        check(blob_fill_object_element(b, n, dtype, v.as_ptr().cast()), "fill_object_element");
                    }
                    _ => {
                        let (dtype, v) = elem();
                        check(blob_fill_element(b, dtype, v.as_ptr().cast()), "fill_element");
                    }
                }
            }
            41 => {
                let (src, d1, d2) = (blobs[r.slot()], r.idx() as i32, r.idx() as i32);
                if r.bit() {
                    check(blob_transpose_from(b, src, d1, d2), "transpose_from");
                } else {
                    check(blob_transpose_from_dims(b, src, d1 + 4, d2 + 4), "transpose_from_dims");
                }
            }
            42 => {
                // A map shares its blobs: filled, read back, freed.
                let mut m = std::ptr::null_mut();
                check(blob_map_create(&mut m), "map_create");
                for name in [c"a", c"b", c"a"] {
                    check(blob_map_insert(m, name.as_ptr(), blobs[r.slot()]), "map_insert");
                }
                check(blob_map_push(m, c"b".as_ptr(), b), "map_push");
                check(blob_map_set_kind(m, c"b".as_ptr(), c"Convolution".as_ptr()), "map_set_kind");
                check(blob_map_set_metadata(m, c"k".as_ptr(), c"v".as_ptr()), "map_set_metadata");
                let mut len = 0usize;
                check(blob_map_len(m, &mut len), "map_len");
                let (i, j) = (r.idx() as usize, r.idx() as usize);
                let (mut name, mut kind, mut count) = (std::ptr::null(), std::ptr::null(), 0usize);
                check(blob_map_name(m, i, &mut name), "map_name");
                check(blob_map_kind(m, i, &mut kind), "map_kind");
                check(blob_map_count(m, i, &mut count), "map_count");
                check(blob_map_metadata_get(m, c"k".as_ptr(), &mut name), "map_metadata_get");
                let mut at = std::ptr::null_mut();
                let st = blob_map_at(m, i, j, &mut at);
                check(st, "map_at");
                if st == BLOB_OK {
                    check(blob_free(at), "free map_at");
                }
                let st = blob_map_get(m, c"a".as_ptr(), &mut out);
                check(blob_map_free(m), "map_free");
                let to = r.slot();
                keep(&mut blobs, &mut held, to, st, out, "map_get");
            }
            43 => {
                let (mut x, mut y) = (0i64, 0.0);
                let (n, c, h, w) = (r.idx(), r.idx(), r.idx(), r.idx());
                check(blob_legacy_offset(b, n, c, h, w, &mut x), "legacy_offset");
                check(blob_count_from(b, r.small() as i32, &mut x), "count_from");
                let mut same = false;
                check(blob_same_shape(b, blobs[r.slot()], r.bit(), &mut same), "same_shape");
                // A BlobShape message, maybe cut short or garbled.
                let proto: Vec<u8> = (0..r.u8() % 12).map(|_| r.u8()).collect();
                check(blob_shape_equals(b, proto.as_ptr(), proto.len(), &mut same), "shape_equals");
                check(blob_asum(b, &mut y), "asum");
            }
            44 => {
                let dtype = r.dtype();
                let st = match r.u8() % 8 {
                    0 => blob_create_vector(null, dtype, r.dim(), &mut out),
                    1 => blob_create_matrix(null, dtype, r.dim(), r.dim(), &mut out),
                    2 => {
                        let dims = r.dims(4);
                        blob_create_full(null, dtype, dims.as_ptr(), dims.len(), r.small() as f64, &mut out)
                    }
                    3 => blob_create_data(null, dtype, r.dim(), r.dim(), r.dim(), &mut out),
                    4 => blob_create_list(null, dtype, r.dim(), r.dim(), r.dim(), r.dim(), &mut out),
                    5 => blob_create_image2d(null, dtype, r.dim(), r.dim(), r.dim(), r.dim(), r.dim(), &mut out),
                    6 => blob_create_image3d(null, dtype, r.dim(), r.dim(), r.dim(), r.dim(), r.dim(), r.dim(), &mut out),
                    _ => blob_copy(b, &mut out),
                };
                keep(&mut blobs, &mut held, s, st, out, "create_*");
            }
            45 => {
                // A freed or NULL handle where a live one is expected.
                let o = if r.bit() { std::ptr::null_mut() } else { b };
                check(blob_copy_from(o, blobs[r.slot()]), "copy_from");
                check(blob_fill(o, 1.0), "fill");
            }
            46 => {
                // The newest held buffer released at once (LIFO order kept).
                if let Some(h) = held.pop() {
                    let st = blob_release_buffer(h.owner, h.ptr, r.bit());
                    check(st, "release_buffer");
                    if st != BLOB_OK {
                        held.push(h);
                    }
                }
            }
            47 => {
                let (mut t, mut id) = (0i32, 0i32);
                check(blob_dlpack_device(b, &mut t, &mut id), "dlpack_device");
            }
            48 if !cfg!(miri) => {
                // Files: saved and loaded back in every format (memory
                // mapped too: read-only, shared or copy-on-write), or a
                // file of the sequence's bytes loaded.
                let kind = r.u8() % 6;
                let path = scratch_file(kind);
                let p = path.as_ptr();
                let mut m = std::ptr::null_mut();
                let st = match kind {
                    0 => {
                        check(blob_save_npy(b, p), "save_npy");
                        const MODES: [&std::ffi::CStr; 4] = [c"r", c"r+", c"c", c"w"];
                        match r.u8() % 5 {
                            4 => blob_load_npy(null, p, &mut out),
                            i => blob_load_npy_mapped(null, p, MODES[i as usize].as_ptr(), &mut out),
                        }
                    }
                    1 => {
                        check(blob_save_caffe(b, p, r.bit()), "save_caffe");
                        if r.bit() {
                            blob_load_caffe(null, p, &mut out)
                        } else {
                            check(blob_load_caffe_into(blobs[r.slot()], p, r.bit()), "load_caffe_into");
                            BLOB_ERR_IO
                        }
                    }
                    2 => {
                        check(blob_save_neoml(b, p), "save_neoml");
                        blob_load_neoml(null, p, &mut out)
                    }
                    3 | 4 => {
                        check(blob_map_create(&mut m), "map_create");
                        check(blob_map_insert(m, c"t".as_ptr(), b), "map_insert");
                        let st = if kind == 3 { blob_save_safetensors(m, p) } else { blob_save_gguf(m, p) };
                        check(st, "save_safetensors/gguf");
                        check(blob_map_free(m), "map_free");
                        let mut loaded = std::ptr::null_mut();
                        let st = if kind == 3 { blob_load_safetensors(null, p, r.bit(), &mut loaded) } else { blob_load_gguf(null, p, r.bit(), r.bit(), &mut loaded) };
                        check(st, "load_safetensors/gguf");
                        if st == BLOB_OK {
                            let st = blob_map_get(loaded, c"t".as_ptr(), &mut out);
                            check(blob_map_free(loaded), "map_free");
                            st
                        } else {
                            st
                        }
                    }
                    _ => {
                        // Hostile bytes, from the sequence itself.
                        let bytes: Vec<u8> = (0..r.u8() as usize * 2).map(|_| r.u8()).collect();
                        std::fs::write(path.to_str().expect("a UTF-8 temporary path"), &bytes).expect("the scratch file is writable");
                        match r.u8() % 4 {
                            0 => blob_load_npy(null, p, &mut out),
                            1 => blob_load_npy_mapped(null, p, c"r+".as_ptr(), &mut out),
                            2 => blob_load_caffe(null, p, &mut out),
                            _ => blob_load_neoml(null, p, &mut out),
                        }
                    }
                };
                let to = r.slot();
                keep(&mut blobs, &mut held, to, st, out, "load");
            }
            49 if !cfg!(miri) => {
                // Whole-model files: caffemodels, sharded safetensors, GGUF
                // headers, Caffe blob vectors and NeoML archive forms, with
                // progress callbacks that may cancel the load.
                let mut m = std::ptr::null_mut();
                let mut loaded: *mut BlobMap = std::ptr::null_mut();
                let mut cancel_after = (r.u8() % 4) as u32;
                let user = (&mut cancel_after as *mut u32).cast::<c_void>();
                let with_progress = r.bit();
                let st = match r.u8() % 5 {
                    kind @ 0..=2 => {
                        check(blob_map_create(&mut m), "map_create");
                        check(blob_map_insert(m, c"t".as_ptr(), b), "map_insert");
                        check(blob_map_insert(m, c"u".as_ptr(), blobs[r.slot()]), "map_insert");
                        check(blob_map_set_metadata(m, c"k".as_ptr(), c"v".as_ptr()), "map_set_metadata");
                        let st = match kind {
                            0 => {
                                let path = scratch_path("model.caffemodel");
                                check(blob_save_caffemodel(m, path.as_ptr()), "save_caffemodel");
                                if with_progress {
                                    blob_load_caffemodel_progress(null, path.as_ptr(), Some(progress), user, &mut loaded)
                                } else {
                                    blob_load_caffemodel(null, path.as_ptr(), &mut loaded)
                                }
                            }
                            1 => {
                                let path = scratch_path("model.safetensors.index.json");
                                let shard = 1 + r.u8() as u64 * 8;
                                check(blob_save_safetensors_sharded(m, path.as_ptr(), shard), "save_safetensors_sharded");
                                let mmap = r.bit();
                                if with_progress {
                                    blob_load_safetensors_progress(null, path.as_ptr(), mmap, Some(progress), user, &mut loaded)
                                } else {
                                    blob_load_safetensors(null, path.as_ptr(), mmap, &mut loaded)
                                }
                            }
                            _ => {
                                let path = scratch_path("model.gguf");
                                check(blob_save_gguf(m, path.as_ptr()), "save_gguf");
                                let (mut json, mut len) = (std::ptr::null_mut(), 0usize);
                                let st = blob_gguf_header_json(path.as_ptr(), &mut json, &mut len);
                                check(st, "gguf_header_json");
                                if st == BLOB_OK {
                                    check(blob_bytes_free(json), "bytes_free");
                                }
                                let (mmap, deq) = (r.bit(), r.bit());
                                if with_progress {
                                    blob_load_gguf_progress(null, path.as_ptr(), mmap, deq, Some(progress), user, &mut loaded)
                                } else {
                                    blob_load_gguf(null, path.as_ptr(), mmap, deq, &mut loaded)
                                }
                            }
                        };
                        check(blob_map_free(m), "map_free");
                        first_of(st, loaded, &mut out)
                    }
                    3 => {
                        // A BlobProtoVector of up to 3 slots, read back into
                        // room for 0-3 handles.
                        let parts: Vec<*const Blob> = (0..r.u8() % 4).map(|_| blobs[r.slot()] as *const Blob).collect();
                        let path = scratch_path("vector.binaryproto");
                        check(blob_save_caffe_vector(parts.as_ptr(), parts.len(), path.as_ptr(), r.bit()), "save_caffe_vector");
                        let mut got = [std::ptr::null_mut(); 3];
                        let (capacity, mut count) = ((r.u8() % 4) as usize, 0usize);
                        let st = blob_load_caffe_vector(null, path.as_ptr(), got.as_mut_ptr(), capacity, &mut count);
                        check(st, "load_caffe_vector");
                        if st == BLOB_OK {
                            assert!(count <= capacity, "load_caffe_vector: {count} blobs into room for {capacity}");
                            for g in &got[1..count.max(1)] {
                                check(blob_free(*g), "free vector blob");
                            }
                            out = got[0];
                            if count == 0 { BLOB_ERR_OUT_OF_RANGE } else { BLOB_OK }
                        } else {
                            assert!(got.iter().all(|g| g.is_null()), "a failed load_caffe_vector made handles");
                            st
                        }
                    }
                    _ => {
                        let path = scratch_path("archive.neoml");
                        check(blob_save_neoml_form(b, path.as_ptr(), (r.u8() % 3) as i32), "save_neoml_form");
                        blob_load_neoml(null, path.as_ptr(), &mut out)
                    }
                };
                let to = r.slot();
                keep(&mut blobs, &mut held, to, st, out, "model file");
            }
            50 => {
                // The engine behind a blob, its queries, and the default
                // engine set to it for a creation, then back.
                let mut e = std::ptr::null_mut();
                let st = blob_engine(b, &mut e);
                check(st, "engine");
                if st == BLOB_OK {
                    let (mut gpu, mut soft) = (false, false);
                    check(blob_engine_is_gpu(e, &mut gpu), "engine_is_gpu");
                    check(blob_engine_is_software(e, &mut soft), "engine_is_software");
                    check(blob_engine_reset_stats(e), "engine_reset_stats");
                    check(blob_engine_synchronize(e), "engine_synchronize");
                    check(blob_set_default_engine(e), "set_default_engine");
                    let dims = r.dims(3);
                    let st = blob_create_tensor(null, r.dtype(), dims.as_ptr(), dims.len(), &mut out);
                    check(blob_set_default_engine(null), "set_default_engine NULL");
                    check(blob_engine_free(e), "engine_free");
                    keep(&mut blobs, &mut held, s, st, out, "create on the default engine");
                }
                let mut layout = 0i32;
                check(blob_layout_by_dims(r.u8() as usize % 10, &mut layout), "layout_by_dims");
                // Any status has a name (unknown ones too), and so has the library.
                assert!(!blob_status_str(r.small() as i32 * 3).is_null() && !blob_version().is_null(), "a NULL string");
                // A CUDA export of a host blob: refused without a CUDA engine.
                let mut t = std::ptr::null_mut();
                let st = blob_to_dlpack_cuda(b, r.small(), r.small() as i32, &mut t);
                check(st, "to_dlpack_cuda");
                if st == BLOB_OK {
                    // SAFETY: a tensor just exported; its deleter runs once.
                    unsafe {
                        if let Some(d) = (*t).deleter {
                            d(t);
                        }
                    }
                }
            }
            _ => {
                // An engine handle freed while blobs made on it live on.
                let mut e = std::ptr::null_mut();
                check(blob_engine_cpu(&mut e), "engine_cpu");
                let dims = r.dims(3);
                let st = blob_create_tensor(e, r.dtype(), dims.as_ptr(), dims.len(), &mut out);
                let mut stats = BlobEngineStats { bytes_uploaded: 0, bytes_downloaded: 0, uploads: 0, downloads: 0, kernels: 0 };
                check(blob_engine_stats(e, &mut stats), "engine_stats");
                check(blob_engine_free(e), "engine_free");
                check(blob_engine_free(e), "engine_free twice");
                keep(&mut blobs, &mut held, s, st, out, "create on an engine");
            }
        }
    }
    // Buffers still held are released newest first; every slot is freed.
    while let Some(h) = held.pop() {
        check(blob_release_buffer(h.owner, h.ptr, false), "final release");
    }
    for b in blobs {
        check(blob_free(b), "final free");
    }
    let (made, released) = WRAPPED.with(|w| w.get());
    assert_eq!(made, released, "wrapped buffers: {made} wrapped, {released} released once every blob was freed");
}

extern "C" {
    #[link_name = "close"]
    fn libc_close(fd: std::ffi::c_int) -> std::ffi::c_int;
}

#[test]
fn random_call_sequences_never_fail_internally() {
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    // Interpreted under Miri (make miri), 60 sequences took four minutes
    // of CI's hour: it runs the first 32 (the stable run takes all).
    let sequences = if cfg!(miri) { 32 } else { 10_000 };
    for _ in 0..sequences {
        let len = 8 + (x % 400) as usize;
        let data: Vec<u8> = (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        run(&data);
    }
    remove_scratch();
}

/// The fuzz seeds run here on stable too: `fuzz/seeds/capi_ops` is a
/// corpus of `cargo fuzz run capi_ops` minimized by `cargo fuzz cmin`
/// (`-use_counters=0`): 829 sequences, each reaching a coverage edge of
/// this interpreter that the others do not.
#[cfg_attr(miri, ignore = "hundreds of sequences: minutes under Miri")]
#[test]
fn the_fuzz_seeds_run_cleanly() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/seeds/capi_ops");
    let mut seeds: Vec<_> = std::fs::read_dir(&dir).expect("fuzz/seeds/capi_ops").map(|e| e.expect("a seed").path()).collect();
    seeds.sort();
    assert!(seeds.len() >= 800, "{} seeds in {}", seeds.len(), dir.display());
    for seed in seeds {
        run(&std::fs::read(&seed).expect("a seed's bytes"));
    }
    remove_scratch();
}
