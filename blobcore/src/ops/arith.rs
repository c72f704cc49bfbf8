//! add, scale, update (data -= diff).

use crate::blob::Blob;
use crate::dtype::{dispatch_arith, Arith};
use crate::error::{err, Result};
use crate::ops::{dst_src, gpu, par_chunks_in_place, par_zip_mut, same_shape, source_for, Source};

#[derive(Clone, Copy)]
enum BinOp {
    Add,
    Sub,
}

impl BinOp {
    fn name(self) -> &'static str {
        match self {
            BinOp::Add => "add",
            BinOp::Sub => "update",
        }
    }

    #[inline]
    fn apply<T: Arith>(self, dst: &mut [T], src: &[T]) {
        match self {
            BinOp::Add => dst.iter_mut().zip(src).for_each(|(a, &b)| *a = T::add(*a, b)),
            BinOp::Sub => dst.iter_mut().zip(src).for_each(|(a, &b)| *a = T::sub(*a, b)),
        }
    }

    /// `x = x op x`, for a source that is the destination itself.
    #[inline]
    fn apply_self<T: Arith>(self, dst: &mut [T]) {
        match self {
            BinOp::Add => dst.iter_mut().for_each(|a| *a = T::add(*a, *a)),
            BinOp::Sub => dst.iter_mut().for_each(|a| *a = T::sub(*a, *a)),
        }
    }
}

impl Blob {
    /// Element-wise `self += other` (NeoML `Add`). Dims and dtypes must be
    /// equal; integers wrap around. `other` may be this very blob (doubling
    /// it) or any view that overlaps it: the result is NumPy's
    /// `a += b.copy()` (a source that meets the destination is copied
    /// first).
    pub fn add(&self, other: &Blob) -> Result<()> {
        self.binary(other, BinOp::Add)
    }

    /// Caffe `Update`: `data -= diff`. Does nothing if no diff was ever
    /// created (it would read as zeros).
    pub fn update(&self) -> Result<()> {
        self.dtype().check_arithmetic("update")?;
        match self.diff_if_created() {
            Some(diff) => self.binary(&diff, BinOp::Sub),
            None => Ok(()),
        }
    }

    fn binary(&self, other: &Blob, op: BinOp) -> Result<()> {
        let name = op.name();
        self.dtype().check_arithmetic(name)?;
        if self.dtype() != other.dtype() {
            return Err(err!(DType, "{name}: dtypes differ ({} and {}); convert with astype (cast) first", self.dtype(), other.dtype()));
        }
        let dst = self.snapshot();
        let mut src = other.snapshot();
        same_shape(name, &dst, &src)?;
        if !dst.dense || !src.dense {
            // Any layout: the dense kernel on the logical values (the
            // source read first, so `x.add(x)` doubles x).
            drop((dst, src));
            let src = other.to_dense()?;
            return self.through_dense(false, |d| d.binary(&src, op));
        }
        // Element-wise: the same bytes run in place; any other overlap
        // (however the memory is reached) reads a copy. Dense regions are
        // compared by address directly; other layouts by their footprints.
        let mut same = false;
        let copied;
        let other = if dst.dense && src.dense {
            same = dst.same_memory(&src);
            if same || dst.apart(&src) {
                other
            } else {
                copied = other.copy()?;
                src = copied.snapshot();
                same_shape(name, &dst, &src)?;
                &copied
            }
        } else {
            match source_for(self, other)? {
                Source::Same => {
                    same = true;
                    other
                }
                Source::Apart(s) if s.ptr_eq(other) => other,
                Source::Apart(s) => {
                    copied = s;
                    src = copied.snapshot();
                    same_shape(name, &dst, &src)?;
                    &copied
                }
            }
        };
        if let Some(g) = gpu::common_gpu(&[self, other]) {
            if gpu::binary(&g, dst.clone(), src.clone(), matches!(op, BinOp::Sub))? {
                return Ok(());
            }
        }
        if same {
            let mut w = dst.write()?;
            dispatch_arith!(self.dtype(), T => par_chunks_in_place(w.typed_mut::<T>(), |c| op.apply_self(c)), else => ());
            return Ok(());
        }
        let (mut w, r) = dst_src(&dst, &src, name)?;
        dispatch_arith!(self.dtype(), T => par_zip_mut(w.typed_mut::<T>(), r.typed::<T>(), |d, s| op.apply(d, s)), else => ());
        Ok(())
    }

    /// Multiplies every element by `factor` (Caffe `scale_data`). Floats
    /// multiply in their own precision; integers in f64 where f64 holds
    /// them (|x| <= 2^53: NumPy's `trunc(x * factor)`) and exactly beyond
    /// (int64 and uint64 keep their low bits), then truncate toward zero
    /// and saturate (see [`Arith::scale`]).
    pub fn scale(&self, factor: f64) -> Result<()> {
        self.dtype().check_arithmetic("scale")?;
        if !self.is_dense() {
            return self.through_dense(false, |d| d.scale(factor));
        }
        if let Some(g) = gpu::common_gpu(&[self]) {
            if gpu::scale(&g, self.snapshot(), factor)? {
                return Ok(());
            }
        }
        self.with_write(|w| {
            dispatch_arith!(self.dtype(), T => {
                par_chunks_in_place(w.typed_mut::<T>(), |c| T::scale_slice(c, factor));
            }, else => ())
        })
    }
}

