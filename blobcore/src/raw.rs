//! Raw memory of any layout: the contiguous span of storage a blob owns,
//! in memory order (OpenVINO's `buffer()` / `rmap()`). For a dense blob
//! the span is its elements; for a blob created with a layout (NHWC,
//! blocked, padded) it is every element of memory the layout reaches,
//! padding and offset padding included. Strided views of another blob
//! (regions, NumPy-indexed or transposed views) own no span and refuse.

use crate::placement::Placement;
use crate::blob::{Blob, State, View, ViewKind};
use crate::error::{err, Result};
use crate::shape::Shape;
use std::sync::Arc;

/// The span `[offset, offset + len)` (in elements of the storage) that
/// the blob in state `st` owns, or why it owns none.
pub(crate) fn span_of(st: &State) -> Result<(usize, usize)> {
    match st.desc() {
        None => Ok((st.offset, st.shape.count())),
        Some(d) => {
            if let Some(v) = &st.view {
                let what = match v.kind {
                    ViewKind::Region { .. } => "a region (ROI) view",
                    _ => "a strided view",
                };
                return Err(err!(
                    Unsupported,
                    "{what} reaches its parent's memory with gaps and owns no contiguous span of raw memory; copy it (copy()) or use the parent's"
                ));
            }
            Ok((st.offset, d.span()?))
        }
    }
}

impl Blob {
    /// Elements in the blob's raw memory span: the element count for a
    /// dense blob; for a blob with a layout, every element its memory
    /// reaches (padding and offset padding included). `Unsupported` for
    /// strided views of another blob.
    pub fn raw_count(&self) -> Result<usize> {
        Ok(span_of(&self.state())?.1)
    }

    /// The raw memory span as a 1-D dense view (sharing memory) of
    /// [`Blob::raw_count`] elements in memory order: how a blocked or
    /// padded blob's memory reaches NumPy or a file unchanged. The logical
    /// view of such a blob still refuses export.
    pub fn raw(&self) -> Result<Blob> {
        let st = self.state();
        let (offset, len) = span_of(&st)?;
        if (offset + len) * self.dtype().size() > st.storage.len() {
            return Err(err!(Internal, "raw span exceeds the storage"));
        }
        let state = State {
            capacity: len,
            shape: Shape::new(&[len])?,
            storage: Arc::clone(&st.storage),
            offset,
            view: Some(View { parent: Some(self.clone()), kind: ViewKind::Indexed }),
            placement: Placement::Dense,
        };
        Ok(self.derived(state))
    }
}

#[cfg(test)]
mod tests {
    use crate::{Blob, BlockingDesc, DType, Engine, Layout, TensorDesc};

    fn ramp(dims: &[usize]) -> Blob {
        let n: usize = dims.iter().product();
        Blob::from_slice(&Engine::cpu(), dims, &(0..n).map(|i| i as f32).collect::<Vec<_>>()).unwrap()
    }

    #[test]
    fn nhwc_raw_memory_is_channels_last() {
        let src = ramp(&[1, 3, 2, 2]);
        let b = Blob::with_desc(&Engine::cpu(), &TensorDesc::new(DType::F32, &[1, 3, 2, 2], Layout::Nhwc).unwrap()).unwrap();
        b.reorder_from(&src).unwrap();
        assert_eq!(b.raw_count().unwrap(), 12);
        // memory[(h*W + w)*C + c] = src[c, h, w] = c*4 + h*2 + w
        assert_eq!(b.raw().unwrap().to_vec::<f32>().unwrap(), [0., 4., 8., 1., 5., 9., 2., 6., 10., 3., 7., 11.]);
        let p = b.get_buffer(3, 3, true).unwrap();
        // SAFETY: the held buffer covers 3 f32s until released.
        let got = unsafe { std::slice::from_raw_parts(p.as_ptr() as *const f32, 3) };
        assert_eq!(got, [1., 5., 9.]);
        b.release_buffer(p.as_ptr(), false).unwrap();
        assert_eq!(b.buffer_read::<f32>(9, 3).unwrap().to_vec(), [3., 7., 11.]);
        assert_eq!(b.get_buffer(10, 3, true).unwrap_err().code(), 6);
    }

    #[test]
    fn padded_spans_and_views_without_one() {
        let blk = BlockingDesc::with_strides(&[2, 3], &[0, 1], 3, &[], &[32, 1]).unwrap();
        let b = Blob::with_desc(&Engine::cpu(), &TensorDesc::with_blocking(DType::F32, &[2, 3], blk).unwrap()).unwrap();
        assert_eq!(b.raw_count().unwrap(), 38);
        b.reorder_from(&ramp(&[2, 3])).unwrap();
        let raw = b.raw().unwrap().to_vec::<f32>().unwrap();
        assert_eq!(raw[3..6], [0., 1., 2.]);
        assert_eq!(raw[35..38], [3., 4., 5.]);
        let d = ramp(&[3, 4]);
        let roi = d.region(&[0, 1], &[2, 3]).unwrap();
        assert_eq!(roi.raw().unwrap_err().code(), 13);
        assert_eq!(roi.get_buffer(0, 1, true).unwrap_err().code(), 13);
        assert_eq!(d.permuted_view(&[1, 0]).unwrap().raw_count().unwrap_err().code(), 13);
        // A window owns its rows.
        assert_eq!(d.window(1).unwrap().raw().unwrap().to_vec::<f32>().unwrap(), [0., 1., 2., 3.]);
    }
}
