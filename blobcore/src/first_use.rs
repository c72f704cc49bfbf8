//! Values made on first use without anyone waiting: safe across `fork`.
//!
//! `std`'s `OnceLock` and `LazyLock` make a value once and make every other
//! thread that wants it meanwhile wait for the maker. A process forked
//! while another thread is making one has no maker: the copy of the lock
//! says "being made" for ever, and the child's first use of the value waits
//! for ever. [`FirstUse`] never waits: each thread that finds the value
//! missing makes one, the first to publish it wins, and the others drop
//! theirs and use the winner's. A child forked at any moment finds either
//! the parent's value or none, and then makes its own.
//!
//! So the value must be cheap to make, or rarely raced for, and any one of
//! the values made must do (a key drawn at random, a detected tuning, the
//! engine `BLOBCORE_ENGINE` names).

use std::marker::PhantomData;
use std::sync::atomic::{AtomicPtr, Ordering};

/// A value of type `T` made on the first call of [`FirstUse::get_or_make`]
/// and kept until the `FirstUse` is dropped (for a `static`, for the life
/// of the process). No call ever waits for another thread (see the
/// module's docs).
pub struct FirstUse<T> {
    /// Null until a value is published; then a pointer from
    /// `Box::into_raw`, never changed again and freed only in `Drop`.
    value: AtomicPtr<T>,
    /// Owns a `T` (for drop check); `*const` so that `Send` and `Sync`
    /// come only from the impls below.
    _owns: PhantomData<*const T>,
}

// SAFETY: the value is made on one thread and read (`&T`) from any other
// holding `&FirstUse`, and dropped wherever the `FirstUse` is: sharing a
// `FirstUse` shares a `T`, which needs `T: Send + Sync`.
unsafe impl<T: Send + Sync> Sync for FirstUse<T> {}
// SAFETY: moving a `FirstUse` moves the `T` it owns.
unsafe impl<T: Send> Send for FirstUse<T> {}

impl<T> FirstUse<T> {
    /// No value yet.
    pub const fn new() -> Self {
        FirstUse { value: AtomicPtr::new(std::ptr::null_mut()), _owns: PhantomData }
    }

    /// The value, if one was published.
    pub fn get(&self) -> Option<&T> {
        let p = self.value.load(Ordering::Acquire);
        // SAFETY: a non-null pointer was published by `get_or_make` from
        // `Box::into_raw` (Acquire pairs with its release), is never
        // replaced, and is freed only by `Drop`, which `&self` excludes.
        unsafe { p.as_ref() }
    }

    /// The value, made by `make` if none was published yet. Threads that
    /// race here may each call `make`; one result is kept and returned to
    /// all of them, and the others are dropped. A panic in `make`
    /// publishes nothing.
    pub fn get_or_make(&self, make: impl FnOnce() -> T) -> &T {
        match self.get_or_try_make(|| Ok::<T, std::convert::Infallible>(make())) {
            Ok(v) => v,
            Err(never) => match never {},
        }
    }

    /// [`FirstUse::get_or_make`] with a `make` that may fail: an error is
    /// returned and publishes nothing (a later call tries again).
    pub fn get_or_try_make<E>(&self, make: impl FnOnce() -> Result<T, E>) -> Result<&T, E> {
        if let Some(v) = self.get() {
            return Ok(v);
        }
        let fresh = Box::into_raw(Box::new(make()?));
        Ok(match self.value.compare_exchange(std::ptr::null_mut(), fresh, Ordering::AcqRel, Ordering::Acquire) {
            // SAFETY: `fresh` is published now, for as long as `self` lives
            // (see `get`).
            Ok(_) => unsafe { &*fresh },
            Err(won) => {
                // SAFETY: `fresh` was never published; this call owns it.
                drop(unsafe { Box::from_raw(fresh) });
                // SAFETY: `won` is the published value (see `get`).
                unsafe { &*won }
            }
        })
    }
}

impl<T> Default for FirstUse<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// A copy of the value if one was published; none if not.
impl<T: Clone> Clone for FirstUse<T> {
    fn clone(&self) -> Self {
        let copy = FirstUse::new();
        if let Some(v) = self.get() {
            copy.get_or_make(|| v.clone());
        }
        copy
    }
}

impl<T> Drop for FirstUse<T> {
    fn drop(&mut self) {
        let p = *self.value.get_mut();
        if !p.is_null() {
            // SAFETY: published pointers come from `Box::into_raw` and are
            // freed only here; `&mut self` means no reference is left.
            drop(unsafe { Box::from_raw(p) });
        }
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for FirstUse<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.get() {
            Some(v) => f.debug_tuple("FirstUse").field(v).finish(),
            None => f.write_str("FirstUse(<not made>)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::{Arc, Barrier};

    #[test]
    fn racing_threads_all_get_the_one_published_value() {
        for _ in 0..if cfg!(miri) { 3 } else { 50 } {
            let cell = Arc::new(FirstUse::<(usize, Vec<u8>)>::new());
            let made = Arc::new(AtomicUsize::new(0));
            let start = Arc::new(Barrier::new(8));
            let got: Vec<(usize, usize)> = (0..8)
                .map(|t| {
                    let (cell, made, start) = (cell.clone(), made.clone(), start.clone());
                    std::thread::spawn(move || {
                        start.wait();
                        let v = cell.get_or_make(|| {
                            made.fetch_add(1, Ordering::Relaxed);
                            (t, vec![t as u8; 64])
                        });
                        (v.0, v as *const _ as usize)
                    })
                })
                .collect::<Vec<_>>()
                .into_iter()
                .map(|h| h.join().unwrap())
                .collect();
            let made = made.load(Ordering::Relaxed);
            assert!((1..=8).contains(&made));
            assert!(got.iter().all(|g| *g == got[0]), "threads saw different values: {got:?}");
            let v = cell.get().expect("published");
            assert_eq!(v.0, got[0].0);
            assert_eq!(v.1, vec![got[0].0 as u8; 64]);
            // A later call makes nothing.
            assert_eq!(cell.get_or_make(|| unreachable!()).0, got[0].0);
        }
    }

    #[test]
    fn a_panic_in_make_publishes_nothing() {
        let cell = FirstUse::<String>::new();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            cell.get_or_make(|| panic!("no value"));
        }));
        assert!(r.is_err());
        assert!(cell.get().is_none());
        assert_eq!(cell.get_or_make(|| "made".to_string()), "made");
        assert_eq!(format!("{cell:?}"), "FirstUse(\"made\")");
    }

    #[test]
    fn an_error_in_make_publishes_nothing() {
        let cell = FirstUse::<u8>::new();
        assert_eq!(cell.get_or_try_make(|| Err("not yet")), Err("not yet"));
        assert!(cell.get().is_none());
        assert_eq!(cell.get_or_try_make(|| Ok::<u8, &str>(7)), Ok(&7));
        assert_eq!(cell.get_or_try_make(|| Err("ignored")), Ok(&7));
    }

    #[test]
    fn a_clone_copies_a_published_value() {
        let cell = FirstUse::<Vec<u32>>::new();
        assert!(cell.clone().get().is_none());
        cell.get_or_make(|| vec![1, 2, 3]);
        let copy = cell.clone();
        assert_eq!(copy.get(), Some(&vec![1, 2, 3]));
        assert!(!std::ptr::eq(copy.get().unwrap(), cell.get().unwrap()));
    }

    #[test]
    fn the_value_is_dropped_with_the_cell() {
        let value = Arc::new(());
        let cell = FirstUse::new();
        cell.get_or_make(|| value.clone());
        assert_eq!(Arc::strong_count(&value), 2);
        drop(cell);
        assert_eq!(Arc::strong_count(&value), 1);
    }

    /// A child forked while another thread is still making the value makes
    /// its own (with `OnceLock` in place of `FirstUse` it waits for ever:
    /// checked, the watchdog kills it).
    #[cfg_attr(miri, ignore = "Miri runs no fork")]
    #[cfg(unix)]
    #[test]
    fn a_child_forked_mid_make_makes_its_own() {
        use std::time::Duration;
        static CELL: FirstUse<u32> = FirstUse::new();
        let started = Arc::new(Barrier::new(2));
        let maker = {
            let started = started.clone();
            std::thread::spawn(move || {
                *CELL.get_or_make(|| {
                    started.wait();
                    std::thread::sleep(Duration::from_millis(300));
                    1
                })
            })
        };
        started.wait();
        let child = crate::fork_child::in_child(10, || if *CELL.get_or_make(|| 2) == 2 { 0 } else { 1 });
        assert_ne!(child, None, "the forked child waited for a maker it does not have");
        assert_eq!(child, Some(0), "the child did not make its own value");
        assert_eq!(maker.join().unwrap(), 1);
        assert_eq!(CELL.get(), Some(&1));
    }
}
