"""blobcore: tensor storage for neural networks, shared with NumPy.

>>> import numpy as np, blobcore as bc
>>> b = bc.Blob.tensor([2, 3])
>>> b.fill(1.5)
>>> np.asarray(b).sum()          # zero-copy view of the blob's memory
np.float32(9.0)

Every semantic lives in the Rust crate ``blobcore``; this package is its
binding (module ``blobcore._blobcore``) plus the exception classes, the
dtypes and :class:`Dim`.

Threads: large operations release the GIL, so threads working on different
blobs (or disjoint windows of one) run in parallel; an operation that would
write memory another thread is using raises :class:`BusyError` instead of
racing. NumPy views of a blob are plain shared memory, as NumPy arrays are.
"""

from typing import TYPE_CHECKING, Any

from ._dtypes import (
    bool_,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
    uint16,
    uint32,
    uint64,
)
from ._enums import Dim, Layout
from . import _dtypes, _errors
from ._errors import *  # noqa: F403 - the exception classes, listed in _errors.__all__
from ._blobcore import (
    Blob,
    BlockingDesc,
    Engine,
    EngineStats,
    TensorDesc,
    __version__,
    asblob,
    from_caffe_bytes,
    from_dlpack,
    from_shared_fd,
    from_neoml_bytes,
    from_npy_bytes,
    layout_by_dims,
    load_caffe,
    load_caffe_vector,
    load_neoml,
    load_npy,
    load_safetensors,
    safetensors_metadata,
    save_safetensors,
    load_caffemodel,
    save_caffemodel,
    load_gguf,
    gguf_metadata,
    gguf_tensor_info,
    save_gguf,
    merge,
    merge_into,
    merge_objects,
    save_caffe_vector,
    split,
    split_into,
    split_objects,
)

__all__ = [
    "Blob",
    "Engine",
    "EngineStats",
    "Dim",
    "Layout",
    "BlockingDesc",
    "TensorDesc",
    "layout_by_dims",
    "__version__",
    "asblob",
    "from_dlpack",
    "from_shared_fd",
    "merge",
    "merge_into",
    "split",
    "split_into",
    "merge_objects",
    "split_objects",
    "save_caffe_vector",
    "load_caffe",
    "load_caffe_vector",
    "from_caffe_bytes",
    "load_neoml",
    "from_neoml_bytes",
    "load_npy",
    "from_npy_bytes",
    "load_safetensors",
    "safetensors_metadata",
    "save_safetensors",
    "load_caffemodel",
    "save_caffemodel",
    "load_gguf",
    "gguf_metadata",
    "gguf_tensor_info",
    "save_gguf",
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
from . import _multiprocessing  # noqa: E402,F401 - registers the reducer of shared blobs

# bfloat16 and the float8 dtypes are ml_dtypes' and made on first use (see
# _dtypes): importing ml_dtypes takes most of a second.
if TYPE_CHECKING:
    from ._dtypes import bfloat16, float8_e4m3fn, float8_e5m2, float8_e8m0fnu
else:

    def __getattr__(name: str) -> Any:
        if name in _dtypes._ML:
            value = getattr(_dtypes, name)
            globals()[name] = value
            return value
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

    def __dir__() -> list:
        return sorted(set(globals()) | set(_dtypes._ML))

# The form type checkers understand as re-exporting the exception classes.
__all__ += _errors.__all__
