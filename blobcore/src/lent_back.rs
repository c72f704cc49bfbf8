//! Memory that comes back: a blob's own bytes, handed to another library
//! and then offered to blobcore again (NumPy's array over a blob's buffer
//! given to `from_numpy(copy=False)`, DLPack's re-export of blobcore's
//! export).
//!
//! Wrapped as foreign memory, such a blob would hold the lender (the
//! other library's object), which holds the blob it came from: every
//! round trip adds a link to a chain that is freed recursively, and a
//! few hundred thousand round trips overflow the stack when the chain
//! goes (NumPy alone does the same with `np.asarray(memoryview(a))`).
//! [`Blob::share_returned`] gives a blob on the original storage
//! instead, as a view shares it: nothing of the other library is held,
//! reallocation of the original stays `Busy` while it lives, and the
//! overlap checks see that both reach the same bytes.

use crate::blob::Blob;
use crate::dtype::DType;
use crate::engine::Engine;
use crate::export::Export;
use crate::shape::Shape;
use crate::storage::Storage;
use std::ptr::NonNull;
use std::sync::Arc;

/// The element offset (elements of `es` bytes) at which a blob on
/// `storage` may share `byte_len` bytes at `addr` (a host address, or a
/// CUDA one when `cuda`): `None` when it cannot (another GPU, a
/// read-only lender over a writable storage, bytes outside the storage
/// or off the element grid, memory not allocated).
pub(crate) fn offset_in(storage: &Storage, engine: &Engine, cuda: bool, addr: usize, byte_len: usize, es: usize, read_only: bool) -> Option<usize> {
    let same_gpu = match (storage.gpu(), engine.gpu_device()) {
        (None, None) => true,
        (Some(a), Some(b)) => Arc::ptr_eq(a, b),
        _ => false,
    };
    if !same_gpu || (read_only && storage.is_writable()) {
        return None;
    }
    let base = if cuda { storage.cuda_addr()? } else { storage.host_addr()? };
    let start = addr.checked_sub(base)?;
    (start.is_multiple_of(es) && start.checked_add(byte_len)? <= storage.len()).then_some(start / es)
}

/// A dense blob of `shape` on `storage` from element `offset`, sharing
/// it as a view does.
pub(crate) fn dense_on(storage: Arc<Storage>, engine: &Engine, dtype: DType, shape: Shape, offset: usize) -> Blob {
    let count = shape.count();
    Blob::dense_in_place(engine, dtype, shape, storage, offset, count, false)
}

/// [`dense_on`] at `offset` (from [`offset_in`]) when `shape` fits the
/// `byte_len` bytes lent.
fn share_at(storage: &Arc<Storage>, engine: &Engine, dtype: DType, shape: Shape, byte_len: usize, offset: usize) -> Option<Blob> {
    if shape.byte_size(dtype).ok()? > byte_len {
        return None;
    }
    Some(dense_on(Arc::clone(storage), engine, dtype, shape, offset))
}

impl Export {
    /// [`offset_in`] of the storage this export pins, with `addr` in the
    /// export's memory (CUDA memory for a CUDA export).
    pub(crate) fn shared_offset(&self, engine: &Engine, addr: usize, byte_len: usize, es: usize, read_only: bool) -> Option<usize> {
        offset_in(self.storage(), engine, self.device().0 == crate::export::DL_CUDA, addr, byte_len, es, read_only)
    }

    /// [`Blob::share_returned`] on the storage this export pins, with
    /// `ptr` in the export's memory (CUDA memory for a CUDA export): for
    /// memory lent through an object that holds the export rather than
    /// the blob (the holder of a bfloat16 buffer on its way to ml_dtypes,
    /// NumPy's array from `from_dlpack`, blobcore's own DLPack export
    /// coming back to its import).
    pub fn share_returned(&self, engine: &Engine, dtype: DType, shape: Shape, ptr: NonNull<u8>, byte_len: usize, read_only: bool) -> Option<Blob> {
        let offset = self.shared_offset(engine, ptr.as_ptr() as usize, byte_len, dtype.size(), read_only)?;
        share_at(self.storage(), engine, dtype, shape, byte_len, offset)
    }
}

impl Blob {
    /// A dense blob of `shape` and `dtype` over host memory at `ptr` that
    /// lies in this blob's storage, sharing the storage as a view does;
    /// `None` when the bytes are not all inside it, are off its element
    /// grid, hold fewer than `shape` needs, or are `read_only` where the
    /// storage is writable (the caller then wraps them as foreign
    /// memory). Safe: only bytes the storage owns are reached, whatever
    /// `ptr` is.
    ///
    /// For bindings that find, behind another library's object, the blob
    /// whose memory it lends (see the module docs).
    pub fn share_returned(&self, engine: &Engine, dtype: DType, shape: Shape, ptr: NonNull<u8>, byte_len: usize, read_only: bool) -> Option<Blob> {
        let storage = Arc::clone(&self.state().storage);
        let offset = offset_in(&storage, engine, false, ptr.as_ptr() as usize, byte_len, dtype.size(), read_only)?;
        share_at(&storage, engine, dtype, shape, byte_len, offset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::{Just, Strategy};

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 300, rng_seed: proptest::test_runner::RngSeed::Fixed(81), ..Default::default() })]
        /// `share_returned` against the rule written out from the bytes:
        /// a blob exactly when the range lies inside the lender's storage,
        /// on its element grid, holds the shape, and is not read-only over
        /// writable memory; it then reads the lender's elements at that
        /// offset and its writes land there. Ranges start anywhere from
        /// before the storage to past its end (half of them ending near
        /// it), on and off the grid.
        #[test]
        fn returned_memory_is_shared_exactly_when_it_lies_in_the_storage(
            (n, start, count) in (1usize..40).prop_flat_map(|n| (Just(n), -2i64..=n as i64 + 2, 0usize..=n + 2)),
            dtype in proptest::sample::select(vec![DType::U8, DType::I16, DType::F32, DType::F64]),
            near_end in proptest::option::of(-2i64..=2),
            slack in 0usize..3,
            read_only in proptest::bool::weighted(0.25),
            other in proptest::bool::weighted(0.25),
        ) {
            let e = Engine::cpu();
            let es = dtype.size();
            // Half the ranges end within two elements of the storage's end.
            let count = match near_end {
                Some(d) => (n as i64 - start + d).max(0) as usize,
                None => count,
            };
            // Bytes 1, 2, 3, ...: no element is 0 or 7.0's pattern.
            let ramp: Vec<u8> = (0..n * es).map(|i| (i % 97 + 1) as u8).collect();
            let x = Blob::from_bytes(&e, dtype, &[n], &ramp).unwrap();
            let read = |b: &Blob| {
                let mut v = vec![0u8; b.shape().count() * es];
                b.copy_to_bytes(&mut v).unwrap();
                v
            };
            let lender = if other { Blob::tensor(&e, dtype, &[n]).unwrap() } else { x.clone() };
            let base = x.export().unwrap().as_ptr() as usize;
            // Byte offsets: whole elements, or one byte off the grid.
            let off = start * es as i64 + if slack == 1 { 1 } else { 0 };
            let Some(addr) = base.checked_add_signed(off as isize) else { return Ok(()) };
            let Some(ptr) = NonNull::new(addr as *mut u8) else { return Ok(()) };
            let byte_len = count * es + if slack == 2 { es } else { 0 };
            let got = lender.share_returned(&e, dtype, Shape::new(&[count]).unwrap(), ptr, byte_len, read_only);
            let inside = !other && off >= 0 && (off as usize).is_multiple_of(es) && off as usize + byte_len <= n * es;
            proptest::prop_assert_eq!(got.is_some(), inside && !read_only);
            if let Some(y) = got {
                let first = off as usize;
                proptest::prop_assert_eq!(read(&y), ramp[first..first + count * es].to_vec());
                if count > 0 {
                    proptest::prop_assert!(y.shares_memory(&x));
                    y.fill(7.0).unwrap();
                    let seven = read(&Blob::full(&e, dtype, &[1], 7.0).unwrap());
                    let after = read(&x);
                    for (i, v) in after.iter().enumerate() {
                        let want = if (first..first + count * es).contains(&i) { seven[(i - first) % es] } else { ramp[i] };
                        proptest::prop_assert_eq!(*v, want);
                    }
                    proptest::prop_assert_eq!(x.reshape(&[n + 1]).unwrap_err().code(), 8); // Busy while y lives
                }
            }
        }
    }

    #[test]
    fn read_only_storage_is_shared_with_read_only_lenders() {
        let e = Engine::cpu();
        // SAFETY: a static array outlives every blob; nothing writes it.
        static DATA: [f32; 4] = [1.0, 2.0, 3.0, 4.0];
        let ptr = NonNull::new(DATA.as_ptr() as *mut u8).unwrap();
        let x = unsafe { Blob::wrap_lent(&e, DType::F32, Shape::new(&[4]).unwrap(), ptr, 16, None, true) }.unwrap();
        let p = NonNull::new(DATA[1..].as_ptr() as *mut u8).unwrap();
        let y = x.share_returned(&e, DType::F32, Shape::new(&[3]).unwrap(), p, 12, true).unwrap();
        assert_eq!(y.to_vec::<f32>().unwrap(), [2.0, 3.0, 4.0]);
        assert!(!y.is_writable());
        assert!(y.share_returned(&e, DType::F32, Shape::new(&[4]).unwrap(), p, 12, true).is_none()); // 16 bytes needed
    }
}
