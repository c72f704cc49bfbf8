// blobcore's CUDA kernels: the same operations as kernels.wgsl, on blob
// memory seen as 32-bit words (f32 and i32 elements are one word, f64 and
// i64 two). Every kernel loops with a grid stride, so any element count
// works with any grid; offsets, counts and strides are 64-bit.
//
// Compiled at engine creation by NVRTC where libnvrtc is present, else
// the precompiled kernels.ptx next to this file (regenerated from this
// file by `make cuda-ptx`; CI checks that it matches). No CUDA headers:
// NVRTC compiles this file on its own.

typedef unsigned int u32;
typedef unsigned long long u64;
typedef long long i64;

#define MAX_RANK 32

// Element-wise operations (`Elementwise` in cuda.rs, the OP of
// kernels.wgsl):
//   0: dst[i] = v0                       (fill, one word per element)
//   1: dst[i] = i even ? v0 : v1         (fill, two words per element)
//   2: dst[i] = f32 dst[i] * f32 v0      (scale)
//   3: dst[i] = f32 dst[i] + src[i]      (add)
//   4: dst[i] = f32 dst[i] - src[i]      (update)
//   5: dst[i] = i32 dst[i] + src[i]      (add, wrapping)
//   6: dst[i] = i32 dst[i] - src[i]      (update, wrapping)
extern "C" __global__ void elementwise(u32 op, u32* dst, const u32* src, u64 n, u32 v0, u32 v1) {
    u64 stride = (u64)gridDim.x * blockDim.x;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        switch (op) {
        case 0: dst[i] = v0; break;
        case 1: dst[i] = (i & 1) ? v1 : v0; break;
        case 2: dst[i] = __float_as_uint(__uint_as_float(dst[i]) * __uint_as_float(v0)); break;
        case 3: dst[i] = __float_as_uint(__uint_as_float(dst[i]) + __uint_as_float(src[i])); break;
        case 4: dst[i] = __float_as_uint(__uint_as_float(dst[i]) - __uint_as_float(src[i])); break;
        case 5: dst[i] = dst[i] + src[i]; break;
        default: dst[i] = dst[i] - src[i]; break;
        }
    }
}

// `elementwise` four words at a time: dst and src 16-byte aligned, n in
// uint4s (the host runs the scalar kernel on the tail).
extern "C" __global__ void elementwise4(u32 op, uint4* dst, const uint4* src, u64 n, u32 v0, u32 v1) {
    u64 stride = (u64)gridDim.x * blockDim.x;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        uint4 d;
        if (op == 0) {
            d = make_uint4(v0, v0, v0, v0);
        } else if (op == 1) {
            d = make_uint4(v0, v1, v0, v1);
        } else if (op == 2) {
            d = dst[i];
            float f = __uint_as_float(v0);
            d.x = __float_as_uint(__uint_as_float(d.x) * f);
            d.y = __float_as_uint(__uint_as_float(d.y) * f);
            d.z = __float_as_uint(__uint_as_float(d.z) * f);
            d.w = __float_as_uint(__uint_as_float(d.w) * f);
        } else {
            d = dst[i];
            uint4 s = src[i];
            if (op == 3) {
                d.x = __float_as_uint(__uint_as_float(d.x) + __uint_as_float(s.x));
                d.y = __float_as_uint(__uint_as_float(d.y) + __uint_as_float(s.y));
                d.z = __float_as_uint(__uint_as_float(d.z) + __uint_as_float(s.z));
                d.w = __float_as_uint(__uint_as_float(d.w) + __uint_as_float(s.w));
            } else if (op == 4) {
                d.x = __float_as_uint(__uint_as_float(d.x) - __uint_as_float(s.x));
                d.y = __float_as_uint(__uint_as_float(d.y) - __uint_as_float(s.y));
                d.z = __float_as_uint(__uint_as_float(d.z) - __uint_as_float(s.z));
                d.w = __float_as_uint(__uint_as_float(d.w) - __uint_as_float(s.w));
            } else if (op == 5) {
                d.x += s.x; d.y += s.y; d.z += s.z; d.w += s.w;
            } else {
                d.x -= s.x; d.y -= s.y; d.z -= s.z; d.w -= s.w;
            }
        }
        dst[i] = d;
    }
}

// Rows of contiguous elements (u32 words, or uint4 when every offset,
// stride and the run are multiples of 4 words), in planes: for q < planes,
// r < rows, i < run,
//   dst[d0 + q * dplane + r * drow + i] = src[s0 + q * splane + r * srow + i].
// x of the grid walks the planes x rows runs; runs shorter than a block
// are packed `per` to a block (thread t on element t % run of run t / run:
// one division per thread, not per element); y walks chunks of long runs.
template <typename T>
__device__ void rows_impl(T* dst, const T* src, u64 planes, u64 rows, u64 run,
                          u64 d0, u64 drow, u64 dplane, u64 s0, u64 srow, u64 splane) {
    u64 total = planes * rows;
    bool packed = run < blockDim.x;
    u32 per = packed ? blockDim.x / (u32)run : 1;
    u32 sub = packed ? threadIdx.x / (u32)run : 0;
    if (sub >= per) return;
    u64 first = packed ? threadIdx.x % (u32)run : (u64)blockIdx.y * blockDim.x + threadIdx.x;
    u64 step = packed ? run : (u64)gridDim.y * blockDim.x;
    for (u64 k = (u64)blockIdx.x * per + sub; k < total; k += (u64)gridDim.x * per) {
        u64 q, r;
        if (rows < 4294967296ULL && k < 4294967296ULL) {
            q = (u32)k / (u32)rows;
            r = (u32)k - (u32)q * (u32)rows;
        } else {
            q = k / rows;
            r = k - q * rows;
        }
        T* d = dst + d0 + q * dplane + r * drow;
        const T* s = src + s0 + q * splane + r * srow;
        for (u64 i = first; i < run; i += step) {
            d[i] = s[i];
        }
    }
}

extern "C" __global__ void copy_rows(u32* dst, const u32* src, u64 planes, u64 rows, u64 run,
                                     u64 d0, u64 drow, u64 dplane, u64 s0, u64 srow, u64 splane) {
    rows_impl<u32>(dst, src, planes, rows, run, d0, drow, dplane, s0, srow, splane);
}

// `copy_rows` in uint4s: pointers 16-byte aligned, the rest in uint4 units.
extern "C" __global__ void copy_rows4(uint4* dst, const uint4* src, u64 planes, u64 rows, u64 run,
                                      u64 d0, u64 drow, u64 dplane, u64 s0, u64 srow, u64 splane) {
    rows_impl<uint4>(dst, src, planes, rows, run, d0, drow, dplane, s0, srow, splane);
}

// A 2-D transpose through shared memory in 32 x 32 tiles, batched over
// planes (z): dst[d0 + q*dplane + c*drow + r] = src[s0 + q*splane + r*srow + c]
// for r < rows, c < cols. Blocks are 32 x 8 threads; x and y of the grid
// walk the tile columns and rows (no division).
extern "C" __global__ void transpose_tiles(u32* dst, const u32* src, u64 planes, u64 rows, u64 cols,
                                           u64 d0, u64 drow, u64 dplane, u64 s0, u64 srow, u64 splane) {
    __shared__ u32 tile[32][33];
    for (u64 q = blockIdx.z; q < planes; q += gridDim.z) {
        for (u64 ty = (u64)blockIdx.y * 32; ty < rows; ty += (u64)gridDim.y * 32) {
            for (u64 tx = (u64)blockIdx.x * 32; tx < cols; tx += (u64)gridDim.x * 32) {
                for (u32 k = threadIdx.y; k < 32; k += 8) {
                    u64 r = ty + k, c = tx + threadIdx.x;
                    if (r < rows && c < cols) {
                        tile[k][threadIdx.x] = src[s0 + q * splane + r * srow + c];
                    }
                }
                __syncthreads();
                for (u32 k = threadIdx.y; k < 32; k += 8) {
                    u64 c = tx + k, r = ty + threadIdx.x;
                    if (r < rows && c < cols) {
                        dst[d0 + q * dplane + c * drow + r] = tile[threadIdx.x][k];
                    }
                }
                __syncthreads();
            }
        }
    }
}

// Transposes with a short side, where 32 x 32 tiles would be mostly
// empty (NCHW <-> NHWC at C = 3): the same index map as transpose_tiles,
// dst[d0 + q*dplane + c*drow + r] = src[s0 + q*splane + r*srow + c].
// `transpose_short_rows` (rows < 8): one thread per (q, c) walks r, so a
// warp reads `rows` runs of 32 words and writes 32 runs of `rows` words
// that abut. `transpose_short_cols` (cols < 8): one thread per (q, r)
// walks c, the mirror image.
extern "C" __global__ void transpose_short_rows(u32* dst, const u32* src, u64 planes, u64 rows, u64 cols,
                                                u64 d0, u64 drow, u64 dplane, u64 s0, u64 srow, u64 splane) {
    u64 n = planes * cols;
    u64 stride = (u64)gridDim.x * blockDim.x;
    for (u64 k = (u64)blockIdx.x * blockDim.x + threadIdx.x; k < n; k += stride) {
        u64 q = k / cols, c = k - q * cols;
        const u32* s = src + s0 + q * splane + c;
        u32* d = dst + d0 + q * dplane + c * drow;
        for (u64 r = 0; r < rows; r++) {
            d[r] = s[r * srow];
        }
    }
}

extern "C" __global__ void transpose_short_cols(u32* dst, const u32* src, u64 planes, u64 rows, u64 cols,
                                                u64 d0, u64 drow, u64 dplane, u64 s0, u64 srow, u64 splane) {
    u64 n = planes * rows;
    u64 stride = (u64)gridDim.x * blockDim.x;
    for (u64 k = (u64)blockIdx.x * blockDim.x + threadIdx.x; k < n; k += stride) {
        u64 q = k / rows, r = k - q * rows;
        const u32* s = src + s0 + q * splane + r * srow;
        u32* d = dst + d0 + q * dplane + r;
        for (u64 c = 0; c < cols; c++) {
            d[c * drow] = s[c];
        }
    }
}

// The shape of a strided copy, passed by value (kernel parameters may be
// up to 4 KiB).
struct StridedShape {
    u64 rank;
    u64 dims[MAX_RANK];
    i64 dst_strides[MAX_RANK];
    i64 src_strides[MAX_RANK];
};

// A strided N-d copy of words: for every index of dims (row-major, the
// linear index unravelled innermost first),
//   dst[d0 + sum(idx * dst_strides)] = src[s0 + sum(idx * src_strides)].
// Strides may be negative (reversed views).
extern "C" __global__ void strided_copy(u32* dst, const u32* src, u64 n, u64 d0, u64 s0, StridedShape shape) {
    u64 stride = (u64)gridDim.x * blockDim.x;
    if (n < 4294967296ULL) {
        // 32-bit division: every dim and linear index fits.
        for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
            u32 rem = (u32)i;
            i64 d = (i64)d0, s = (i64)s0;
            for (u64 k = shape.rank; k > 0; k--) {
                u32 size = (u32)shape.dims[k - 1];
                u32 idx = rem % size;
                rem /= size;
                d += (i64)idx * shape.dst_strides[k - 1];
                s += (i64)idx * shape.src_strides[k - 1];
            }
            dst[d] = src[s];
        }
        return;
    }
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        u64 rem = i;
        i64 d = (i64)d0, s = (i64)s0;
        for (u64 k = shape.rank; k > 0; k--) {
            u64 size = shape.dims[k - 1];
            u64 idx = rem % size;
            rem /= size;
            d += (i64)idx * shape.dst_strides[k - 1];
            s += (i64)idx * shape.src_strides[k - 1];
        }
        dst[d] = src[s];
    }
}

// A strided copy whose innermost dim is contiguous on both sides (runs of
// `run` elements, u32 or uint4), the outer dims in `shape` (strides in the
// same units): each warp takes `chunk` consecutive runs, finds the first
// one's offsets with divisions and steps to the next ones as an odometer
// (no division per run), its lanes copying the run.
template <typename T>
__device__ void strided_rows_impl(T* dst, const T* src, u64 runs, u64 run, u64 chunk, u64 d0, u64 s0, const StridedShape& shape) {
    u64 warp = ((u64)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    u32 lane = threadIdx.x % 32;
    u64 k0 = warp * chunk;
    if (k0 >= runs) return;
    u64 k1 = k0 + chunk < runs ? k0 + chunk : runs;
    u64 idx[MAX_RANK];
    i64 d = (i64)d0, s = (i64)s0;
    u64 rem = k0;
    for (u64 j = shape.rank; j > 0; j--) {
        u64 size = shape.dims[j - 1];
        idx[j - 1] = rem % size;
        rem /= size;
        d += (i64)idx[j - 1] * shape.dst_strides[j - 1];
        s += (i64)idx[j - 1] * shape.src_strides[j - 1];
    }
    for (u64 k = k0; k < k1; k++) {
        for (u64 i = lane; i < run; i += 32) {
            dst[d + i] = src[s + i];
        }
        for (u64 j = shape.rank; j > 0; j--) {
            idx[j - 1]++;
            d += shape.dst_strides[j - 1];
            s += shape.src_strides[j - 1];
            if (idx[j - 1] < shape.dims[j - 1]) break;
            d -= (i64)shape.dims[j - 1] * shape.dst_strides[j - 1];
            s -= (i64)shape.dims[j - 1] * shape.src_strides[j - 1];
            idx[j - 1] = 0;
        }
    }
}

extern "C" __global__ void strided_rows(u32* dst, const u32* src, u64 runs, u64 run, u64 chunk, u64 d0, u64 s0, StridedShape shape) {
    strided_rows_impl<u32>(dst, src, runs, run, chunk, d0, s0, shape);
}

extern "C" __global__ void strided_rows4(uint4* dst, const uint4* src, u64 runs, u64 run, u64 chunk, u64 d0, u64 s0, StridedShape shape) {
    strided_rows_impl<uint4>(dst, src, runs, run, chunk, d0, s0, shape);
}

// Writes the sum of the block's 256 threads' `v` to partials[blockIdx.x],
// through a tree in `part` (256 entries of shared memory).
template <typename T>
__device__ void block_total(T v, T* part, T* partials) {
    part[threadIdx.x] = v;
    __syncthreads();
    for (u32 h = 128; h > 0; h >>= 1) {
        if (threadIdx.x < h) {
            part[threadIdx.x] += part[threadIdx.x + h];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        partials[blockIdx.x] = part[0];
    }
}

// Adds `v` to the compensated (Kahan) sum `sum` with its error term `c`.
__device__ void kahan_add(float& sum, float& c, float v) {
    float y = v - c;
    float t = sum + y;
    c = (t - sum) - y;
    sum = t;
}

// One partial sum per block of 256 threads: op 0 sum |x|, op 1 sum x^2
// over f32 words, Kahan-compensated per thread, then a tree in shared
// memory. The host adds the partials in f64.
extern "C" __global__ void reduce_f32(u32 op, float* partials, const u32* src, u64 n) {
    __shared__ float part[256];
    u64 stride = (u64)gridDim.x * blockDim.x;
    float sum = 0.0f, c = 0.0f;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float x = __uint_as_float(src[i]);
        float v = (op & 1) ? x * x : fabsf(x);
        kahan_add(sum, c, v);
    }
    block_total(sum, part, partials);
}

// `reduce_f32` reading uint4s (src 16-byte aligned, n in uint4s): each
// thread's Kahan sum takes the four terms of a uint4 at once.
extern "C" __global__ void reduce_f32x4(u32 op, float* partials, const uint4* src, u64 n) {
    __shared__ float part[256];
    u64 stride = (u64)gridDim.x * blockDim.x;
    float sum = 0.0f, c = 0.0f;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        uint4 w = src[i];
        float a = __uint_as_float(w.x), b = __uint_as_float(w.y), e = __uint_as_float(w.z), f = __uint_as_float(w.w);
        float v = (op & 1) ? (a * a + b * b) + (e * e + f * f) : (fabsf(a) + fabsf(b)) + (fabsf(e) + fabsf(f));
        kahan_add(sum, c, v);
    }
    block_total(sum, part, partials);
}

// Exact integer reductions of i32 words: op 2 sum |x|, op 3 sum x^2, in
// 128-bit integers (two u64 words) per thread and per block: exact for
// any count (each square is below 2^63; one u64 wrapped past 2^64 with
// four squares of -2^31). The host adds the (lo, hi) pairs as integers.
extern "C" __global__ void reduce_i32(u32 op, u64* partials, const u32* src, u64 n) {
    __shared__ u64 lo[256];
    __shared__ u64 hi[256];
    u64 stride = (u64)gridDim.x * blockDim.x;
    u64 acc_lo = 0, acc_hi = 0;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        u32 w = src[i];
        u64 a = (w & 0x80000000u) ? (u64)(0u - w) : (u64)w;
        u64 v = (op == 3) ? a * a : a;
        acc_lo += v;
        acc_hi += (acc_lo < v) ? 1 : 0;
    }
    lo[threadIdx.x] = acc_lo;
    hi[threadIdx.x] = acc_hi;
    __syncthreads();
    for (u32 h = 128; h > 0; h >>= 1) {
        if (threadIdx.x < h) {
            u64 l = lo[threadIdx.x] + lo[threadIdx.x + h];
            hi[threadIdx.x] += hi[threadIdx.x + h] + ((l < lo[threadIdx.x]) ? 1 : 0);
            lo[threadIdx.x] = l;
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        partials[2 * blockIdx.x] = lo[0];
        partials[2 * blockIdx.x + 1] = hi[0];
    }
}
