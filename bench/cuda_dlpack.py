"""DLPack kDLCUDA exchange between blobcore's CUDA engine and PyTorch /
CuPy, per call, beside PyTorch's own tensor -> tensor exchange measured
in the same run. Needs an NVIDIA GPU, torch with CUDA (cupy optional).
`python bench/cuda_dlpack.py`"""

import time

import blobcore as bc


def per_call(f, n=20000):
    for _ in range(200):
        f()
    t = time.perf_counter()
    for _ in range(n):
        f()
    return (time.perf_counter() - t) / n * 1e9


def main():
    import torch

    cuda = bc.Engine.cuda()
    print(f"engine: {cuda!r} on {cuda.adapter}; torch {torch.__version__}")
    for shape in [(8,), (1 << 28,)]:  # 32 B and 1 GiB of f32: zero-copy either way
        b = bc.Blob.tensor(list(shape), engine=cuda)
        b.fill(1.0)
        t = torch.ones(shape, device="cuda")
        n = 20000 if shape[0] < 1000 else 2000
        rows = [
            ("torch.from_dlpack(torch tensor)", lambda: torch.from_dlpack(t)),
            ("torch.from_dlpack(blob)", lambda: torch.from_dlpack(b)),
            ("bc.from_dlpack(torch tensor)", lambda: bc.from_dlpack(t, engine=cuda)),
            ("blob -> torch -> blob", lambda: bc.from_dlpack(torch.from_dlpack(b), engine=cuda)),
        ]
        try:
            import cupy as cp

            c = cp.ones(shape, dtype=cp.float32)
            rows += [
                ("cupy.from_dlpack(cupy array)", lambda: cp.from_dlpack(c)),
                ("cupy.from_dlpack(blob)", lambda: cp.from_dlpack(b)),
                ("bc.from_dlpack(cupy array)", lambda: bc.from_dlpack(c, engine=cuda)),
            ]
        except ImportError:
            pass
        nbytes = 4 * shape[0]
        print(f"\n{nbytes} bytes of float32 on the device:")
        for name, f in rows:
            print(f"  {name:<34} {per_call(f, n):9.0f} ns per call")
        # Zero-copy: the consumer sees the blob's memory.
        tt = torch.from_dlpack(b)
        assert tt.data_ptr() == torch.from_dlpack(b).data_ptr()


if __name__ == "__main__":
    main()
