"""Regenerates numpy_ops.txt: expectations computed by NumPy, read by the
Rust tests (blobcore/tests/numpy_vectors.rs). Run: python gen_numpy.py > numpy_ops.txt

Each line: name | dims (comma-separated) | values (space-separated, row-major).
"""
import numpy as np

def emit(name, a):
    a = np.ascontiguousarray(a)
    dims = ",".join(str(d) for d in a.shape)
    vals = " ".join(repr(float(v)) if a.dtype.kind == "f" else str(int(v)) for v in a.ravel())
    print(f"{name}|{dims}|{vals}")

# DESIGN/issue example: two [1,2,1,2,2,2,1] blobs holding 1..16 and 17..32,
# merged along each named dim.
a = np.arange(1, 17, dtype=np.float32).reshape(1, 2, 1, 2, 2, 2, 1)
b = np.arange(17, 33, dtype=np.float32).reshape(1, 2, 1, 2, 2, 2, 1)
for axis in range(7):
    emit(f"merge_neoml_axis{axis}", np.concatenate([a, b], axis=axis))

# Uneven parts along the middle axis of a rank-4 blob.
x = np.arange(2 * 3 * 4 * 5).reshape(2, 3, 4, 5).astype(np.float32)
emit("x_2345", x)
for axis in range(4):
    emit(f"merge3_axis{axis}", np.concatenate([x, x * 2, x * 3], axis=axis))

# swapaxes (GetTransposed) for every pair, adjacent or not.
for d1 in range(4):
    for d2 in range(4):
        emit(f"swap_{d1}{d2}", np.swapaxes(x, d1, d2))

# Merge by objects on rank-7 blobs: objects of sizes 6 and 4, 3 objects.
p = np.arange(3 * 6, dtype=np.float32).reshape(1, 3, 1, 1, 2, 1, 3)
q = 100 + np.arange(3 * 4, dtype=np.float32).reshape(1, 3, 1, 2, 1, 2, 1)
emit("merge_objects", np.concatenate([p.reshape(3, 6), q.reshape(3, 4)], axis=1))

# Reductions in float64 of a float32 ramp with negatives.
r = (np.arange(1000, dtype=np.float32) - 500.0) / 7.0
emit("ramp", r)
emit("ramp_asum", np.array([np.abs(r.astype(np.float64)).sum()]))
emit("ramp_sumsq", np.array([(r.astype(np.float64) ** 2).sum()]))
