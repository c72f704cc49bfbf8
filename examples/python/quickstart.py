"""blobcore quick start: create, fill, view, merge, and share with NumPy."""

import numpy as np

import blobcore as bc

# A batch of 2 images, 4x4, 3 channels: NeoML's named dims.
images = bc.Blob.image2d(2, 1, 4, 4, 3)
print(images, "objects:", images.object_count, "channels:", images.dim(bc.Dim.CHANNELS))

images.fill(0.5)
arr = np.asarray(images)  # zero-copy: arr is the blob's memory
arr[0, ..., 0] = 1.0  # write through NumPy ...
print("asum:", images.asum())  # ... and the blob sees it

# A window over the first image, sharing memory.
first = images.window(1)
first.scale(2.0)
print("first image mean:", np.asarray(first).mean())

# Merge along channels, split back.
extra = bc.Blob.image2d(2, 1, 4, 4, 1)
extra.fill(7)
merged = bc.merge([images, extra], bc.Dim.CHANNELS)
print("merged:", merged.shape)
a, b = bc.split(merged, [3, 1], bc.Dim.CHANNELS)
assert np.array_equal(np.asarray(b), np.asarray(extra))

# LIFO buffers.
with merged.buffer(0, 8, "rw") as buf:
    buf[:] = -1
print("after buffer:", np.asarray(merged).reshape(-1)[:10])

# Errors are exceptions with the core's message.
try:
    images.reshape([1000, 1000])  # `arr` still shares the memory
except bc.BusyError as e:
    print("BusyError:", e)
