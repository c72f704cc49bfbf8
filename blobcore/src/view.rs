//! Views: NeoML windows over axis 0 and Serrano slices by leading indices.
//!
//! A view shares its parent's memory and keeps it alive: dropping the
//! parent handle never invalidates a view (unlike NeoML). Positions are
//! bounds-checked, negative ones included.

use crate::placement::Placement;
use crate::blob::{non_negative, Blob, State, View, ViewKind};
use crate::layout::TensorDesc;
use crate::error::{err, Result};
use crate::shape::Shape;
use std::sync::Arc;

impl Blob {
    /// NeoML `CreateWindowBlob(parent, 1)`: [`Blob::window`] with NeoML's
    /// default size of one entry.
    pub fn window1(&self) -> Result<Blob> {
        self.window(1)
    }

    /// NeoML `CreateWindowBlob`: a view of `size` consecutive entries of
    /// axis 0 (BatchLength), starting at position 0. Its other dims are the
    /// parent's.
    pub fn window(&self, size: usize) -> Result<Blob> {
        let st = self.state();
        if st.shape.rank() == 0 {
            return Err(err!(Shape, "a window needs an axis 0, but this blob is a scalar"));
        }
        let dim0 = st.shape.dims()[0];
        if size == 0 || size > dim0 {
            return Err(err!(
                OutOfRange,
                "window size {size} must be in 1..={dim0} (the parent's axis 0)"
            ));
        }
        let row = st.shape.count() / dim0;
        if !st.is_dense() {
            // Any layout: the view b[0:size], moved by set_parent_pos.
            drop(st);
            return self.window_view(0, size, row);
        }
        let shape = st.shape.with_dim(0, size)?;
        let state = State {
            capacity: shape.count(),
            shape,
            storage: Arc::clone(&st.storage),
            offset: st.offset,
            view: Some(View { parent: Some(self.clone()), kind: ViewKind::Window { pos: 0, rows: size, row } }),
            placement: Placement::Dense,
        };
        drop(st);
        Ok(self.derived(state))
    }

    /// The window view of rows `[pos, pos + rows)` of a blob with a
    /// layout: NumPy's `b[pos:pos + rows]`, marked as a window.
    fn window_view(&self, pos: usize, rows: usize, row: usize) -> Result<Blob> {
        let key = [crate::index::Index::Range { start: Some(pos as i64), stop: Some((pos + rows) as i64), step: None }];
        let v = self.index(&key)?;
        if let Some(view) = &mut v.state_mut().view {
            view.kind = ViewKind::Window { pos, rows, row };
        }
        Ok(v)
    }

    /// Serrano `slice(index)`: the sub-tensor at these leading indices, of
    /// shape `dims[k..]`, sharing memory. `k` may be 0 (the whole blob) up
    /// to the rank (a scalar view).
    pub fn slice(&self, index: &[usize]) -> Result<Blob> {
        let st = self.state();
        if !st.is_dense() {
            // Any layout: the view of NumPy's b[i, j, ...].
            drop(st);
            if index.len() > self.rank() {
                return Err(err!(OutOfRange, "{} slice indices given for a blob of rank {}", index.len(), self.rank()));
            }
            let key: Vec<crate::index::Index> = index.iter().map(|&i| crate::index::Index::At(i.min(i64::MAX as usize) as i64)).collect();
            return self.index(&key);
        }
        let dims = st.shape.dims();
        if index.len() > dims.len() {
            return Err(err!(
                OutOfRange,
                "{} slice indices given for a blob of rank {}",
                index.len(),
                dims.len()
            ));
        }
        let offset = st.shape.offset(index)?;
        let shape = Shape::new(&dims[index.len()..])?;
        let state = State {
            capacity: shape.count(),
            shape,
            storage: Arc::clone(&st.storage),
            offset: st.offset + offset,
            view: Some(View { parent: Some(self.clone()), kind: ViewKind::Slice { index: index.to_vec() } }),
            placement: Placement::Dense,
        };
        drop(st);
        Ok(self.derived(state))
    }

    /// OpenVINO region (ROI): a view of elements `[begin, end)` along every
    /// dim, sharing memory and keeping the original strides. Works on any
    /// planar layout, and on blocked layouts where the region keeps every
    /// dim that is split into blocks whole (else `Unsupported`: it would
    /// start inside a block). Every operation takes the result.
    pub fn region(&self, begin: &[usize], end: &[usize]) -> Result<Blob> {
        let st = self.state();
        let desc = match st.desc() {
            Some(d) => d.clone(),
            None => TensorDesc::dense(self.dtype(), st.shape.dims())?,
        };
        if !desc.is_planar() {
            let rank = desc.dims().len();
            if begin.len() != rank || end.len() != rank {
                return Err(err!(OutOfRange, "region bounds of {} and {} entries for rank {rank}", begin.len(), end.len()));
            }
            for a in 0..rank {
                if begin[a] > end[a] || end[a] > desc.dims()[a] {
                    return Err(err!(OutOfRange, "region [{}, {}) is out of range for dim {a} of size {}", begin[a], end[a], desc.dims()[a]));
                }
            }
            let key: Vec<crate::index::Index> = (0..rank)
                .map(|a| crate::index::Index::Range { start: Some(begin[a] as i64), stop: Some(end[a] as i64), step: None })
                .collect();
            return self.blocked_view(&st, &desc, &key, None, ViewKind::Region { begin: begin.to_vec() });
        }
        let r = desc.region(begin, end)?;
        let shape = Shape::new(r.dims())?;
        let state = State {
            capacity: shape.count(),
            shape,
            storage: Arc::clone(&st.storage),
            offset: st.offset,
            view: Some(View { parent: Some(self.clone()), kind: ViewKind::Region { begin: begin.to_vec() } }),
            placement: if r.is_dense() { Placement::Dense } else { Placement::Desc(Box::new(r)) },
        };
        drop(st);
        Ok(self.derived(state))
    }

    /// A region's start in its parent (`None` for other blobs).
    pub fn region_begin(&self) -> Option<Vec<usize>> {
        match &self.state().view {
            Some(View { kind: ViewKind::Region { begin }, .. }) => Some(begin.clone()),
            _ => None,
        }
    }

    /// The blob this view was made from (NeoML `GetParent`); `None` for a
    /// blob that is not a view.
    pub fn parent(&self) -> Option<Blob> {
        self.state().view.as_ref().and_then(|v| v.parent.clone())
    }

    /// The blob at the root of the view chain (NeoML `GetOwner`): the blob
    /// itself when it is not a view.
    pub fn owner(&self) -> Blob {
        let mut cur = self.clone();
        while let Some(p) = cur.parent() {
            cur = p;
        }
        cur
    }

    /// True for windows and slices.
    pub fn is_view(&self) -> bool {
        self.state().view.is_some()
    }

    /// True for windows.
    pub fn is_window(&self) -> bool {
        matches!(self.state().view, Some(View { kind: ViewKind::Window { .. }, .. }))
    }

    /// The leading indices of a slice; `None` for anything else.
    pub fn slice_index(&self) -> Option<Vec<usize>> {
        match &self.state().view {
            Some(View { kind: ViewKind::Slice { index }, .. }) => Some(index.clone()),
            _ => None,
        }
    }

    /// A window's position on its parent's axis 0 (NeoML `GetParentPos`).
    /// InvalidArgument for anything but a window.
    pub fn parent_pos(&self) -> Result<usize> {
        match &self.state().view {
            Some(View { kind: ViewKind::Window { pos, .. }, .. }) => Ok(*pos),
            _ => Err(err!(InvalidArgument, "parent_pos: this blob is not a window")),
        }
    }

    /// Moves a window to position `pos` of its parent's axis 0 (NeoML
    /// `SetParentPos`). OutOfRange unless `0 <= pos` and
    /// `pos + size <= parent axis 0`; nothing changes on error.
    pub fn set_parent_pos(&self, pos: i64) -> Result<()> {
        let mut st = self.state_mut();
        let (parent, rows, row) = match &st.view {
            Some(View { parent: Some(parent), kind: ViewKind::Window { rows, row, .. } }) => (parent.clone(), *rows, *row),
            _ => return Err(err!(InvalidArgument, "set_parent_pos: this blob is not a window")),
        };
        let pos = non_negative(pos, "window position")?;
        let pst = parent.state();
        let pdims = pst.shape.dims();
        let pdim0 = pdims.first().copied().unwrap_or(0);
        if pos.checked_add(rows).is_none_or(|end| end > pdim0) {
            return Err(err!(
                OutOfRange,
                "window of size {rows} at position {pos} does not fit the parent's axis 0 of {pdim0}"
            ));
        }
        if pst.shape.count() / pdim0.max(1) != row {
            return Err(err!(
                Shape,
                "the parent was reshaped to {} since the window was made; make a new window",
                pst.shape
            ));
        }
        if !pst.is_dense() {
            // A window of a strided or laid-out parent: rebuilt as the
            // view of rows [pos, pos + rows).
            drop(pst);
            let v = parent.window_view(pos, rows, row)?;
            let vs = v.state();
            let old = std::mem::replace(&mut st.storage, Arc::clone(&vs.storage));
            st.offset = vs.offset;
            st.placement = vs.placement.clone();
            if let Some(View { kind: ViewKind::Window { pos: p, .. }, .. }) = &mut st.view {
                *p = pos;
            }
            drop((st, vs));
            drop(old);
            return Ok(());
        }
        let offset = pst.offset + pos * row;
        let es = self.dtype().size();
        if (offset + rows * row) * es > pst.storage.len() {
            return Err(err!(Internal, "window region exceeds the parent's memory"));
        }
        let old = std::mem::replace(&mut st.storage, Arc::clone(&pst.storage));
        st.offset = offset;
        if let Some(View { kind: ViewKind::Window { pos: p, .. }, .. }) = &mut st.view {
            *p = pos;
        }
        // Memory is let go only after the locks (a release may run foreign code).
        drop((st, pst));
        drop(old);
        Ok(())
    }

    /// Moves a window by `shift` positions (NeoML `ShiftParentPos`),
    /// checked as [`Blob::set_parent_pos`].
    pub fn shift_parent_pos(&self, shift: i64) -> Result<()> {
        let pos = self.parent_pos()? as i64;
        let new = pos
            .checked_add(shift)
            .ok_or_else(|| err!(OutOfRange, "window position {pos} + {shift} overflows"))?;
        self.set_parent_pos(new)
    }
}

#[cfg(test)]
mod tests {
    use crate::{Blob, DType, Engine};

    /// The drop loop of a view chain (`Drop for Blob`), under Miri too:
    /// views of every kind on views, some handles kept and cloned, let go
    /// in an order that frees part of the chain from the middle; every
    /// record is freed once and the memory stays readable through the
    /// handles left.
    #[test]
    fn chains_of_views_are_freed_in_any_order() {
        use crate::Index;
        let b = Blob::from_slice(&Engine::cpu(), &[2, 3], &[0f32, 1., 2., 3., 4., 5.]).unwrap();
        let mut chain = vec![b];
        for i in 0..40 {
            let x = chain.last().unwrap();
            let v = match i % 4 {
                0 => x.index(&[Index::ALL]).unwrap(),
                1 => x.window(2).unwrap(),
                2 => x.slice(&[]).unwrap(),
                _ => x.permuted_view(&[0, 1]).unwrap(),
            };
            chain.push(v);
        }
        let kept: Vec<Blob> = chain.iter().step_by(7).cloned().collect();
        // The even links from the root up, then the odd ones, then the
        // kept ones from the top down.
        let mut odd: Vec<Blob> = Vec::new();
        for (i, v) in chain.into_iter().enumerate() {
            if i % 2 == 1 {
                odd.push(v);
            }
        }
        drop(odd);
        for k in kept.iter().rev() {
            assert_eq!(k.to_vec::<f32>().unwrap(), [0., 1., 2., 3., 4., 5.]);
        }
        drop(kept);
    }

    #[test]
    fn window1_is_neomls_default_window_of_one() {
        let b = Blob::tensor(&Engine::cpu(), DType::F32, &[3, 2]).unwrap();
        let w = b.window1().unwrap();
        assert_eq!(w.dims(), [1, 2]);
        assert!(w.shares_memory(&b));
    }
}
