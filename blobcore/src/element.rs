//! One element at a time: `b[1, 2, 3]` read and written without building a
//! view blob, and a fill with one element's exact bit pattern.
//!
//! A [`Scalar`] is one element's bytes as stored (little-endian, the
//! dtype's size). Bindings convert their language's values into a
//! `Scalar` with the semantics their users expect (NumPy's `a[i] = v` in
//! Python) and hand it over; the core locates the element in any layout
//! (dense, strided view, blocked), checks bounds and writability, and
//! moves the bytes under the storage lock (GPU-resident data is brought
//! to the host first, as for every host read).

use crate::blob::{Blob, State};
use crate::dtype::{dispatch, DType};
use crate::error::{err, Result};
use crate::Element;

/// The widest element (u64, i64, f64), in bytes.
const WIDEST: usize = 8;

/// One element's bytes, as stored, with its dtype.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scalar {
    dtype: DType,
    bytes: [u8; WIDEST],
}

impl Scalar {
    /// A scalar of `dtype` from its stored bytes (exactly the dtype's size).
    pub fn from_bytes(dtype: DType, bytes: &[u8]) -> Result<Scalar> {
        if bytes.len() != dtype.size() {
            return Err(err!(InvalidArgument, "{} bytes given for one {} element ({} bytes)", bytes.len(), dtype.name(), dtype.size()));
        }
        let mut b = [0u8; WIDEST];
        b[..bytes.len()].copy_from_slice(bytes);
        Ok(Scalar { dtype, bytes: b })
    }

    /// A scalar holding `value` (any element type).
    pub fn of<T: Element>(value: T) -> Scalar {
        let mut b = [0u8; WIDEST];
        // SAFETY: every Element is plain data of at most WIDEST bytes with
        // no padding (the trait's contract), so its bytes may be read.
        let src = unsafe { std::slice::from_raw_parts(&value as *const T as *const u8, std::mem::size_of::<T>()) };
        b[..src.len()].copy_from_slice(src);
        Scalar { dtype: T::DTYPE, bytes: b }
    }

    /// The dtype.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// The stored bytes (the dtype's size).
    pub fn bytes(&self) -> &[u8] {
        &self.bytes[..self.dtype.size()]
    }

    /// The value widened to a double (exact but for 64-bit integers beyond 2^53).
    pub fn to_f64(&self) -> f64 {
        dispatch!(self.dtype, T => self.get::<T>().to_f64())
    }

    /// `value` as one `dtype` element, converted as
    /// [`Element::round_from_f64`] converts it (floats round to nearest
    /// even, integers truncate toward zero, bool is `value != 0`), after
    /// [`DType::check_value`]: a value an integer dtype cannot hold (out
    /// of its range, infinite, NaN) is `OutOfRange`. Every value of a
    /// float dtype fits (large ones round to infinity).
    pub fn from_f64(dtype: DType, value: f64) -> Result<Scalar> {
        dtype.check_value(value)?;
        Ok(dispatch!(dtype, T => Scalar::of(T::round_from_f64(value))))
    }

    /// The integer `-magnitude` (when `negative`) or `magnitude` as one
    /// `dtype` element, exactly: a float dtype gets the nearest value
    /// (ties to even; past the largest finite value, infinity, or NaN in
    /// float8_e4m3fn, as [`Scalar::from_f64`] rounds), rounded once from
    /// the integer itself rather than through a double, which rounds a
    /// second time past 2^53. An integer dtype gets the value, or
    /// `OutOfRange` when it cannot hold it; bool is `magnitude != 0`.
    pub fn from_integer(dtype: DType, negative: bool, magnitude: u128) -> Result<Scalar> {
        use crate::convert::{u128_to_format, BF16, F16, F32, F8E4M3FN, F8E5M2, F8E8M0FNU};
        let neg = negative && magnitude != 0;
        let float = |fmt| u128_to_format(neg, magnitude, fmt);
        let bits: u64 = match dtype {
            DType::F64 => {
                // Rust's integer-to-float `as` rounds to nearest, ties to even.
                let v = magnitude as f64;
                (if neg { -v } else { v }).to_bits()
            }
            DType::F32 => float(F32),
            DType::F16 => float(F16),
            DType::BF16 => float(BF16),
            DType::F8E4M3Fn => float(F8E4M3FN),
            DType::F8E5M2 => float(F8E5M2),
            DType::F8E8M0Fnu => float(F8E8M0FNU),
            DType::Bool => (magnitude != 0) as u64,
            _ => {
                let v = i128::try_from(magnitude).ok().map(|m| if neg { -m } else { m });
                let range = dtype.integer_range();
                match v.filter(|v| range.is_some_and(|(lo, hi)| (lo..=hi).contains(v))) {
                    // Two's complement: the low bytes of an in-range value.
                    Some(v) => v as u64,
                    None => {
                        let sign = if neg { "-" } else { "" };
                        return Err(err!(OutOfRange, "{sign}{magnitude} does not fit in {}", dtype.name()));
                    }
                }
            }
        };
        Scalar::from_bytes(dtype, &bits.to_le_bytes()[..dtype.size()])
    }

    pub(crate) fn get<T: Element>(&self) -> T {
        // SAFETY: `bytes` holds size_of::<T>() initialized bytes of a T
        // (callers dispatch on `self.dtype`, whose element type is T), and
        // read_unaligned allows the byte array's alignment.
        unsafe { std::ptr::read_unaligned(self.bytes.as_ptr() as *const T) }
    }
}

impl Blob {
    /// The storage element offset of the element at `at` (one integer per
    /// axis; negative counts from the end, as in NumPy).
    fn element_offset(&self, st: &State, at: &[i64]) -> Result<usize> {
        let dims = st.shape.dims();
        if at.len() != dims.len() {
            return Err(err!(OutOfRange, "{} indices given for a blob of rank {}", at.len(), dims.len()));
        }
        let mut index = [0usize; crate::shape::MAX_RANK];
        for (a, (&i, &n)) in at.iter().zip(dims).enumerate() {
            index[a] = crate::index::position(i, a, n)?;
        }
        let index = &index[..dims.len()];
        let element = match st.desc() {
            None => st.shape.offset(index)?,
            Some(d) => d.offset_index(index)?,
        };
        Ok(st.offset + element)
    }

    /// The element at storage element offset `element` of `st`'s storage,
    /// read under the storage lock (a shared read: a live writer is Busy).
    pub(crate) fn read_stored(&self, st: &State, element: usize) -> Result<Scalar> {
        let size = self.dtype().size();
        let start = element * size;
        st.storage.with_locked(start, start + size, false, |base| {
            // SAFETY: with_locked checked start + size <= the storage's
            // length and holds its lock, so no writer runs while we copy.
            let src = unsafe { std::slice::from_raw_parts(base.as_ptr().add(start), size) };
            Scalar::from_bytes(self.dtype(), src)
        })?
    }

    /// The element at `at` (NumPy `b[i, j, k]` with one integer per axis;
    /// negative indices count from the end). Out-of-bounds indices are
    /// `OutOfRange`.
    pub fn get_element(&self, at: &[i64]) -> Result<Scalar> {
        let st = self.state();
        let element = self.element_offset(&st, at)?;
        self.read_stored(&st, element)
    }

    /// Stores `value` into the element at `at`. The scalar's dtype must
    /// be the blob's (convert first: the binding does, with its
    /// language's rules); read-only blobs are `ReadOnly`. Nothing changes
    /// on error.
    pub fn set_element(&self, at: &[i64], value: &Scalar) -> Result<()> {
        self.check_scalar_dtype(value)?;
        let st = self.state();
        // Read-only before out-of-range, as `check_scalar` orders them,
        // read from the state already locked (one lock, not two: this is
        // Python's `b[i, j] = v`).
        st.storage.check_writable(true)?;
        let start = self.element_offset(&st, at)? * self.dtype().size();
        let bytes = value.bytes();
        st.storage.with_locked(start, start + bytes.len(), true, |base| {
            // SAFETY: with_locked checked the range lies in the storage,
            // that it is writable and that no live borrow overlaps it, and
            // holds the lock while we copy.
            unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), base.as_ptr().add(start), bytes.len()) }
        })
    }

    pub(crate) fn check_scalar_dtype(&self, value: &Scalar) -> Result<()> {
        if value.dtype() != self.dtype() {
            return Err(err!(DType, "a {} scalar cannot be stored in a {} blob without a cast", value.dtype().name(), self.dtype().name()));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BlockingDesc, Engine, Index, TensorDesc};

    fn ramp(dims: &[usize]) -> Blob {
        let n: usize = dims.iter().product();
        Blob::from_slice(&Engine::cpu(), dims, &(0..n).map(|i| i as f32).collect::<Vec<_>>()).unwrap()
    }

    #[test]
    fn reads_and_writes_through_every_layout() {
        let b = ramp(&[3, 4, 5]);
        assert_eq!(b.get_element(&[1, 2, 3]).unwrap().to_f64(), 33.0);
        assert_eq!(b.get_element(&[-1, -1, -1]).unwrap().to_f64(), 59.0);
        // A reversed, strided view reads the parent's elements.
        let v = b.index(&[Index::Range { start: None, stop: None, step: Some(-2) }, Index::At(1)]).unwrap();
        assert_eq!(v.get_element(&[0, 4]).unwrap().to_f64(), 49.0);
        v.set_element(&[1, 0], &Scalar::of(-7f32)).unwrap();
        assert_eq!(b.get_element(&[0, 1, 0]).unwrap().to_f64(), -7.0);
        // A blocked layout.
        let blk = BlockingDesc::new(&[1, 2, 2, 2, 8], &[0, 1, 2, 3, 1]).unwrap();
        let c = Blob::with_desc(&Engine::cpu(), &TensorDesc::with_blocking(crate::DType::F32, &[1, 16, 2, 2], blk).unwrap()).unwrap();
        c.reorder_from(&ramp(&[1, 16, 2, 2])).unwrap();
        assert_eq!(c.get_element(&[0, 9, 1, 0]).unwrap().to_f64(), 38.0);
        c.fill_element(&Scalar::of(2f32)).unwrap();
        assert_eq!(c.get_element(&[0, 15, 1, 1]).unwrap().to_f64(), 2.0);
    }

    #[test]
    fn bad_input_changes_nothing() {
        let b = ramp(&[2, 3]);
        assert_eq!(b.get_element(&[2, 0]).unwrap_err().code(), crate::Error::OutOfRange(String::new()).code());
        assert_eq!(b.get_element(&[0, -4]).unwrap_err().code(), crate::Error::OutOfRange(String::new()).code());
        assert_eq!(b.get_element(&[0]).unwrap_err().code(), crate::Error::OutOfRange(String::new()).code());
        assert_eq!(b.get_element(&[i64::MIN, 0]).unwrap_err().code(), crate::Error::OutOfRange(String::new()).code());
        assert!(b.set_element(&[0, 0], &Scalar::of(1f64)).is_err());
        assert!(b.fill_element(&Scalar::of(1u8)).is_err());
        assert!(Scalar::from_bytes(crate::DType::F32, &[0; 3]).is_err());
        assert_eq!(b.to_vec::<f32>().unwrap(), [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
        let data = [1f32, 2.0];
        // SAFETY: `data` outlives the blob, which is dropped in this scope.
        let ro = unsafe {
            Blob::wrap_read_only(&Engine::cpu(), crate::DType::F32, crate::Shape::new(&[2]).unwrap(), std::ptr::NonNull::from(&data).cast(), 8, None)
        }
        .unwrap();
        assert_eq!(ro.set_element(&[0], &Scalar::of(5f32)).unwrap_err().code(), crate::Error::ReadOnly(String::new()).code());
        assert_eq!(ro.fill_element(&Scalar::of(5f32)).unwrap_err().code(), crate::Error::ReadOnly(String::new()).code());
        assert_eq!(data, [1.0, 2.0]);
    }
}
