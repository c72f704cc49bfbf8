"""Zero-copy round trips: NumPy -> blobcore -> NumPy, and DLPack."""

import numpy as np

import blobcore as bc

a = np.arange(12, dtype=np.float32).reshape(3, 4)

# Share the array's memory (C-contiguous, writable): no copy either way.
b = bc.Blob.from_numpy(a, copy=False)
b.scale(10)
assert a[2, 3] == 110.0
print("shared through the buffer protocol:", a[2])

# DLPack: numpy.from_dlpack reads blobcore blobs, bc.from_dlpack reads anything.
c = np.from_dlpack(b)
c[0, 0] = -1
assert a[0, 0] == -1
d = bc.from_dlpack(np.linspace(0, 1, 5))
print("from DLPack:", d, np.asarray(d))

# Transpose in the core, view the result in NumPy.
t = b.transposed(0, 1)
assert np.array_equal(np.asarray(t), a.T)
print("transposed:", t.shape)

# Pickle round trip.
import pickle

p = pickle.loads(pickle.dumps(t))
assert np.array_equal(np.asarray(p), a.T)
print("pickled and back:", p)
