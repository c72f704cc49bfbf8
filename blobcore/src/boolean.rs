//! [`Bool`]: the boolean element type, one byte as NumPy stores `bool`.

use std::fmt;

/// A boolean element: one byte, 0 (false) or 1 (true), as NumPy's `bool`
/// and DLPack's `kDLBool` store it. blobcore only ever writes 0 or 1;
/// memory written by others (a wrapped buffer, a file) may hold other
/// bytes, and every nonzero byte reads as true (so a cast to `uint8`
/// gives 1), as C reads `_Bool` it did not write.
#[derive(Clone, Copy, Default)]
#[repr(transparent)]
pub struct Bool(u8);

impl Bool {
    /// False (byte 0).
    pub const FALSE: Bool = Bool(0);
    /// True (byte 1).
    pub const TRUE: Bool = Bool(1);

    /// The element of this truth value.
    pub const fn new(v: bool) -> Self {
        Bool(v as u8)
    }

    /// The truth value (any nonzero byte is true).
    pub const fn get(self) -> bool {
        self.0 != 0
    }

    /// The stored byte.
    pub const fn to_bits(self) -> u8 {
        self.0
    }

    /// The element with this stored byte (kept as it is).
    pub const fn from_bits(bits: u8) -> Self {
        Bool(bits)
    }
}

impl From<bool> for Bool {
    fn from(v: bool) -> Self {
        Bool::new(v)
    }
}

impl From<Bool> for bool {
    fn from(v: Bool) -> Self {
        v.get()
    }
}

/// Compares truth values (bytes 1 and 2 are both true, so equal).
impl PartialEq for Bool {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
}

impl Eq for Bool {}

/// Orders false before true.
impl PartialOrd for Bool {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Bool {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.get().cmp(&other.get())
    }
}

impl std::hash::Hash for Bool {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.get().hash(state)
    }
}

impl fmt::Debug for Bool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.get(), f)
    }
}

impl fmt::Display for Bool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.get(), f)
    }
}
