"""The dtypes blobcore supports, as NumPy dtype objects (``bc.float32 ==
numpy.float32``). NumPy has no bfloat16: ``bc.bfloat16`` is ml_dtypes'
bfloat16 dtype when that package is installed, else a marker object that
blobcore accepts wherever a dtype is expected."""

import numpy as _np

float32 = _np.dtype("float32")
int32 = _np.dtype("int32")
float64 = _np.dtype("float64")
int64 = _np.dtype("int64")
uint8 = _np.dtype("uint8")
int8 = _np.dtype("int8")
float16 = _np.dtype("float16")


class _BFloat16:
    """Marker for the bfloat16 dtype when ml_dtypes is not installed."""

    name = "bfloat16"
    itemsize = 2

    def __repr__(self) -> str:
        return "blobcore.bfloat16"

    def __eq__(self, other: object) -> bool:
        return other == "bfloat16" or getattr(other, "name", None) == "bfloat16"

    def __hash__(self) -> int:
        return hash("bfloat16")


try:  # pragma: no cover - depends on the environment
    import ml_dtypes as _ml

    bfloat16 = _np.dtype(_ml.bfloat16)
except ImportError:
    bfloat16 = _BFloat16()

__all__ = ["float32", "int32", "float64", "int64", "uint8", "int8", "float16", "bfloat16"]
