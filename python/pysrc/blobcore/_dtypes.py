"""The dtypes blobcore supports, as NumPy dtype objects (``bc.float32 ==
numpy.float32``). NumPy has no bfloat16 or float8: ``bc.bfloat16``,
``bc.float8_e4m3fn``, ``bc.float8_e5m2`` and ``bc.float8_e8m0fnu`` are
ml_dtypes' dtypes when that package is installed, else marker objects that
blobcore accepts wherever a dtype is expected. They are looked up on first
use (PEP 562's module ``__getattr__``): importing ml_dtypes takes most of a
second (it registers its casts with NumPy), so ``import blobcore`` does not
import it until one of the four is asked for, or a blob of one of those
dtypes meets NumPy."""

from typing import TYPE_CHECKING, Any

import numpy as _np

float32 = _np.dtype("float32")
int32 = _np.dtype("int32")
float64 = _np.dtype("float64")
int64 = _np.dtype("int64")
uint8 = _np.dtype("uint8")
int8 = _np.dtype("int8")
float16 = _np.dtype("float16")
bool_ = _np.dtype("bool")
int16 = _np.dtype("int16")
uint16 = _np.dtype("uint16")
uint32 = _np.dtype("uint32")
uint64 = _np.dtype("uint64")


class _MlDType:
    """Marker for an ml_dtypes dtype when ml_dtypes is not installed."""

    def __init__(self, name: str, itemsize: int) -> None:
        self.name = name
        self.itemsize = itemsize

    def __repr__(self) -> str:
        return f"blobcore.{self.name}"

    def __eq__(self, other: object) -> bool:
        return other == self.name or getattr(other, "name", None) == self.name

    def __hash__(self) -> int:
        return hash(self.name)


def _ml_dtype(name: str, itemsize: int) -> Any:
    try:  # pragma: no cover - depends on the environment
        import ml_dtypes as _ml

        return _np.dtype(getattr(_ml, name))
    except (ImportError, AttributeError):
        return _MlDType(name, itemsize)


#: The dtypes that come from ml_dtypes, with their sizes in bytes.
_ML = {"bfloat16": 2, "float8_e4m3fn": 1, "float8_e5m2": 1, "float8_e8m0fnu": 1}

if TYPE_CHECKING:
    bfloat16: Any
    float8_e4m3fn: Any
    float8_e5m2: Any
    float8_e8m0fnu: Any


def __getattr__(name: str) -> Any:
    """``bfloat16`` and the float8 dtypes, made on first use and kept."""
    if name not in _ML:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = _ml_dtype(name, _ML[name])
    globals()[name] = value
    return value

__all__ = [
    "float32",
    "int32",
    "float64",
    "int64",
    "uint8",
    "int8",
    "float16",
    "bfloat16",
    "bool_",
    "int16",
    "uint16",
    "uint32",
    "uint64",
    "float8_e4m3fn",
    "float8_e5m2",
    "float8_e8m0fnu",
]
