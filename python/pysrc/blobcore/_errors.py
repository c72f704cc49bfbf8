"""Exception classes of blobcore. Every error the core reports is raised as
one of these, with the core's message; all derive from :class:`BlobError`
and from the builtin exception a Python user would expect."""


class BlobError(Exception):
    """Base class of every blobcore error."""


class InvalidArgumentError(BlobError, ValueError):
    """An argument is invalid (e.g. overlapping source and destination)."""


class ShapeError(BlobError, ValueError):
    """Dims are negative, too many, overflowing or do not match."""


class DTypeError(BlobError, TypeError):
    """A dtype is unknown or does not match."""


class OutOfRangeError(BlobError, IndexError):
    """An axis, index, position or range is out of bounds."""


class LifoError(BlobError):
    """A buffer was released out of LIFO order (nothing changed)."""


class BusyError(BlobError, BufferError):
    """Memory cannot be reallocated or accessed while something shares it
    (a view, a held buffer, an exported array or memoryview)."""


class OutOfMemoryError(BlobError, MemoryError):
    """An allocation failed."""


class DeviceError(BlobError):
    """No usable device (e.g. no GPU adapter)."""


class IoError(BlobError, OSError):
    """Reading or writing a file failed."""


class FormatError(BlobError, ValueError):
    """A file or byte string is malformed, truncated or hostile."""


class UnsupportedError(BlobError, NotImplementedError):
    """The operation is not supported (yet) for these arguments."""


class ReadOnlyError(BlobError, ValueError):
    """A write to a read-only blob (memory lent read-only, as a read-only
    NumPy array); NumPy raises ValueError for the same mistake."""


__all__ = [
    "BlobError",
    "InvalidArgumentError",
    "ShapeError",
    "DTypeError",
    "OutOfRangeError",
    "LifoError",
    "BusyError",
    "OutOfMemoryError",
    "DeviceError",
    "IoError",
    "FormatError",
    "UnsupportedError",
    "ReadOnlyError",
]
