//! Per-axis values (dims, strides, orders) inline up to eight axes: the
//! small vectors shapes, views and exports build on every call.

use smallvec::SmallVec;

/// Per-axis values of a view, inline up to eight axes (NeoML's seven
/// named dims fit), so that creating a view allocates only the blob.
pub(crate) type Axes<T> = SmallVec<[T; 8]>;

/// `n` values written by `fill` in place, inline up to eight: the slice
/// is a stack array that becomes the inline buffer whole. Building a
/// SmallVec zero-filled and then writing through it costs a memset call
/// and makes the length's reload wait on the fill's stores (profiles of
/// views and DLPack imports showed those waits as their hottest lines).
#[inline(always)]
pub(crate) fn axes_filled<T: Copy + Default>(n: usize, fill: impl FnOnce(&mut [T])) -> Axes<T> {
    if n <= 8 {
        let mut buf = [T::default(); 8];
        fill(&mut buf[..n]);
        return SmallVec::from_buf_and_len(buf, n);
    }
    let mut v: Axes<T> = smallvec::smallvec![T::default(); n];
    fill(&mut v);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes_filled_holds_what_fill_wrote_inline_and_spilled() {
        for n in 0..=12usize {
            let v: Axes<i64> = axes_filled(n, |s| {
                assert_eq!(s.len(), n);
                for (i, x) in s.iter_mut().enumerate() {
                    *x = 3 * i as i64 - 7;
                }
            });
            assert_eq!(v.len(), n);
            assert_eq!(v.spilled(), n > 8);
            assert_eq!(v.to_vec(), (0..n as i64).map(|i| 3 * i - 7).collect::<Vec<_>>());
        }
    }
}
