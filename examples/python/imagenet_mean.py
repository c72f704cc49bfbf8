"""Load the ImageNet mean that Caffe's tools wrote (a legacy 1x3x256x256
BlobProto), print its shape and per-channel means, and save it as .npy.

    python imagenet_mean.py [imagenet_mean.binaryproto] [out.npy]
"""

import pathlib
import sys

import numpy as np

import blobcore as bc

ROOT = pathlib.Path(__file__).resolve().parents[2]
src = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT.parent / "shared/data/caffe/imagenet_mean.binaryproto"
out = pathlib.Path(sys.argv[2]) if len(sys.argv) > 2 else ROOT / "build/imagenet_mean.npy"

mean = bc.load_caffe(src)
print(f"{src.name}: shape {mean.shape}, {mean.dtype}")
for c, m in enumerate(np.asarray(mean).mean(axis=(0, 2, 3))):
    print(f"channel {c} mean: {m:.3f}")

out.parent.mkdir(parents=True, exist_ok=True)
mean.save_npy(out)
back = np.load(out)  # NumPy reads what blobcore wrote
assert back.shape == mean.shape and np.array_equal(back, np.asarray(mean))
print(f"saved {out} ({back.nbytes} bytes of data, read back by numpy.load)")
