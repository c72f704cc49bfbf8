//! Indexed assignment (`b[key] = value`) on any layout, including keys no
//! layout can describe as a view (a range starting or stepping inside the
//! blocks of a blocked dim, `b[:, 1:]` of nChw8c).

use crate::blob::Blob;
use crate::element::Scalar;
use crate::error::{Error, Result};
use crate::index::{plan, Index};

impl Blob {
    /// The dims `self.index(key)` has, worked out from the logical dims
    /// alone, so also where no layout describes that view. Errors as
    /// [`Blob::index`] for a bad key (out of range, a zero step).
    pub fn index_dims(&self, key: &[Index]) -> Result<Vec<usize>> {
        let dims = self.dims();
        Ok(plan(&dims, &crate::layout::row_major_strides(&dims, 1), key)?.dims.to_vec())
    }

    /// `self[key] = value` with one element's bits: every element `key`
    /// selects (NumPy basic indexing) set to `value` (its dtype must be
    /// the blob's). Where no layout describes the view `key` selects, the
    /// fill goes through a dense copy of the values, the memory held for
    /// this thread meanwhile (as every element-wise operation on such a
    /// blob). Nothing changes on error.
    pub fn fill_index(&self, key: &[Index], value: &Scalar) -> Result<()> {
        match self.index(key) {
            Ok(view) => view.fill_element(value),
            Err(Error::Unsupported(_)) if !self.is_dense() => self.through_dense(false, |d| d.index(key)?.fill_element(value)),
            Err(e) => Err(e),
        }
    }

    /// `self[key] = src`: `src` (dims [`Blob::index_dims`]`(key)`, the
    /// blob's dtype) copied into the elements `key` selects, on any layout
    /// (through a dense copy where no layout describes that view, as
    /// [`Blob::fill_index`]). Nothing changes on error.
    pub fn copy_index_from(&self, key: &[Index], src: &Blob) -> Result<()> {
        match self.index(key) {
            Ok(view) => view.copy_from(src),
            Err(Error::Unsupported(_)) if !self.is_dense() => {
                // The source is read first: it may be this blob's memory.
                let src = src.copy()?;
                self.through_dense(false, |d| d.index(key)?.copy_from(&src))
            }
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BlockingDesc, DType, Engine, TensorDesc};

    fn values(b: &Blob) -> Vec<f32> {
        b.copy().unwrap().to_vec().unwrap()
    }

    /// `b[:, 1:] = v` of nChw8c (a view no blocking describes) writes the
    /// selected elements and nothing else, as on the dense blob; the dims
    /// of such a key are known without the view.
    #[test]
    fn keys_inside_blocks_are_assigned_through_a_dense_copy() {
        let e = Engine::cpu();
        let dims = [2usize, 12, 3, 2];
        let n: usize = dims.iter().product();
        let ramp: Vec<f32> = (0..n).map(|i| i as f32).collect();
        let dense = Blob::from_slice(&e, &dims, &ramp).unwrap();
        let blk = BlockingDesc::new(&[2, 2, 3, 2, 8], &[0, 1, 2, 3, 1]).unwrap();
        let b = Blob::with_desc(&e, &TensorDesc::with_blocking(DType::F32, &dims, blk).unwrap()).unwrap();
        b.reorder_from(&dense).unwrap();
        let key = [Index::ALL, Index::Range { start: Some(1), stop: None, step: Some(2) }];
        assert!(matches!(b.index(&key), Err(Error::Unsupported(_))));
        assert_eq!(b.index_dims(&key).unwrap(), vec![2, 6, 3, 2]);
        b.fill_index(&key, &Scalar::of(-1f32)).unwrap();
        dense.index(&key).unwrap().fill_element(&Scalar::of(-1f32)).unwrap();
        assert_eq!(values(&b), values(&dense));
        let src = Blob::from_slice(&e, &[2, 6, 3, 2], &(0..72).map(|i| 1000.0 + i as f32).collect::<Vec<_>>()).unwrap();
        b.copy_index_from(&key, &src).unwrap();
        dense.index(&key).unwrap().copy_from(&src).unwrap();
        assert_eq!(values(&b), values(&dense));
        // A wrong source shape or dtype changes nothing.
        let before = values(&b);
        assert!(b.copy_index_from(&key, &Blob::tensor(&e, DType::F32, &[2, 5, 3, 2]).unwrap()).is_err());
        assert!(b.fill_index(&key, &Scalar::of(1i32)).is_err());
        assert!(b.fill_index(&[Index::At(5)], &Scalar::of(1f32)).is_err());
        assert_eq!(values(&b), before);
    }
}
