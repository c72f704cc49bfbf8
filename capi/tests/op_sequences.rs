//! Random sequences of C API calls over a few blobs: creations with any
//! dims and dtype codes, frees (double frees included), windows, merges,
//! splits, reshapes, copies, buffers held and released in any order, writes
//! through held buffers, serialization. Whatever the sequence, every call
//! returns a documented status — never BLOB_ERR_INTERNAL, never a crash.
//! `run` is also the body of the cargo-fuzz target `capi_ops` (fuzz/).

use blob::*;
use std::ffi::c_void;

const SLOTS: usize = 6;

/// A held buffer: the blob handle it came from, its pointer and byte length.
struct Held {
    owner: *mut Blob,
    ptr: *mut c_void,
    len: usize,
}

struct Bytes<'a>(&'a [u8], usize);

impl Bytes<'_> {
    fn u8(&mut self) -> u8 {
        let v = self.0.get(self.1).copied().unwrap_or(0);
        self.1 += 1;
        v
    }
    fn small(&mut self) -> i64 {
        (self.u8() as i8 as i64) % 9
    }
    fn slot(&mut self) -> usize {
        self.u8() as usize % SLOTS
    }
    fn done(&self) -> bool {
        self.1 >= self.0.len()
    }
}

fn check(status: i32, what: &str) {
    assert!((0..=13).contains(&status), "{what} returned {status}: {}", unsafe {
        std::ffi::CStr::from_ptr(blob_last_error()).to_string_lossy()
    });
}

fn element_size(b: *const Blob) -> usize {
    let mut d = 0i32;
    if blob_dtype(b, &mut d) != BLOB_OK {
        return 0;
    }
    match d {
        3 | 4 => 8,
        1 | 2 => 4,
        7 | 8 => 2,
        _ => 1,
    }
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

/// Interprets `data` as a sequence of API calls.
pub fn run(data: &[u8]) {
    let mut r = Bytes(data, 0);
    let mut blobs: [*mut Blob; SLOTS] = [std::ptr::null_mut(); SLOTS];
    let mut held: Vec<Held> = Vec::new();
    let mut steps = 0;
    while !r.done() && steps < 256 {
        steps += 1;
        let op = r.u8() % 18;
        let s = r.slot();
        let b = blobs[s];
        match op {
            0 => {
                let dtype = (r.u8() % 10) as i32;
                let rank = (r.u8() % 5) as usize;
                let dims: Vec<i64> = (0..rank).map(|_| r.small()).collect();
                let mut out = std::ptr::null_mut();
                let st = blob_create_tensor(std::ptr::null(), dtype, dims.as_ptr(), rank, &mut out);
                check(st, "create");
                if st == BLOB_OK {
                    replace(&mut blobs, &mut held, s, out);
                }
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
                let mut out = std::ptr::null_mut();
                let st = blob_create_window(b, r.small(), &mut out);
                check(st, "window");
                if st == BLOB_OK {
                    let to = r.slot();
                    replace(&mut blobs, &mut held, to, out);
                }
            }
            4 => check(blob_set_parent_pos(b, r.small()), "set_parent_pos"),
            5 => {
                let parts = [blobs[r.slot()] as *const Blob, blobs[r.slot()] as *const Blob];
                check(blob_merge(parts.as_ptr(), 2, r.small() as i32, b), "merge");
            }
            6 => {
                let parts = [blobs[r.slot()], blobs[r.slot()]];
                check(blob_split(b, r.small() as i32, parts.as_ptr(), 2), "split");
            }
            7 => {
                let (pos, size, exchange) = (r.small(), r.small(), r.u8() & 1 == 1);
                let mut p = std::ptr::null_mut();
                let st = blob_get_buffer(b, pos, size, exchange, &mut p);
                check(st, "get_buffer");
                if st == BLOB_OK {
                    held.push(Held { owner: b, ptr: p, len: size.max(0) as usize * element_size(b) });
                }
            }
            8 => {
                // Release some held buffer: the newest, or any (a LIFO error).
                if !held.is_empty() {
                    let i = r.u8() as usize % held.len();
                    let h = &held[i];
                    let st = blob_release_buffer(h.owner, h.ptr, r.u8() & 1 == 1);
                    check(st, "release_buffer");
                    if st == BLOB_OK {
                        held.remove(i);
                    }
                }
            }
            9 => {
                // Write through a held buffer, within its length.
                if let Some(h) = held.last() {
                    let v = r.u8();
                    // SAFETY: the buffer is held (its memory pinned) and
                    // `len` bytes long.
                    unsafe { std::ptr::write_bytes(h.ptr as *mut u8, v, h.len) };
                }
            }
            10 => {
                let rank = (r.u8() % 4) as usize;
                let dims: Vec<i64> = (0..rank).map(|_| r.small()).collect();
                check(blob_reshape(b, dims.as_ptr(), rank), "reshape");
            }
            11 => check(blob_copy_from(b, blobs[r.slot()]), "copy_from"),
            12 => check(blob_add(b, blobs[r.slot()]), "add"),
            13 => {
                let mut out = std::ptr::null_mut();
                let st = blob_transposed(b, r.small() as i32, r.small() as i32, &mut out);
                check(st, "transposed");
                if st == BLOB_OK {
                    check(blob_free(out), "free transposed");
                }
            }
            14 => {
                let mut sum = 0.0;
                check(blob_asum(b, &mut sum), "asum");
                check(blob_scale(b, 0.5), "scale");
            }
            15 => {
                let idx = [r.small()];
                let mut out = std::ptr::null_mut();
                let st = blob_slice(b, idx.as_ptr(), 1, &mut out);
                check(st, "slice");
                if st == BLOB_OK {
                    let to = r.slot();
                    replace(&mut blobs, &mut held, to, out);
                }
            }
            16 => {
                let (mut p, mut n) = (std::ptr::null_mut(), 0usize);
                let st = blob_to_npy_bytes(b, &mut p, &mut n);
                check(st, "to_npy_bytes");
                if st == BLOB_OK {
                    let mut out = std::ptr::null_mut();
                    check(blob_from_npy_bytes(std::ptr::null(), p, n, &mut out), "from_npy_bytes");
                    check(blob_free(out), "free loaded");
                    check(blob_bytes_free(p), "bytes_free");
                }
            }
            _ => check(blob_clear(b), "clear"),
        }
    }
    // Buffers still held are released newest first; every slot is freed.
    while let Some(h) = held.pop() {
        check(blob_release_buffer(h.owner, h.ptr, false), "final release");
    }
    for b in blobs {
        check(blob_free(b), "final free");
    }
}

#[test]
fn random_call_sequences_never_fail_internally() {
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    // Interpreted under Miri (make miri), a few sequences take minutes.
    let sequences = if cfg!(miri) { 60 } else { 3000 };
    for _ in 0..sequences {
        let len = 8 + (x % 200) as usize;
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
}
