// blobcore's GPU kernels. Every kernel sees blob memory as 32-bit words
// (f32 and i32 elements are one word, f64 and i64 two), runs 256 threads
// per workgroup and loops with a grid stride, so any element count works
// with at most 65535 workgroups per dimension.
//
// Bindings shared by all kernels:
//   0: the destination (read-write), 1: the source (read-only),
//   2: the parameters: a uniform block of up to 128 u32 words, read with
//      p(i); the layout per kernel is given below.

@group(0) @binding(0) var<storage, read_write> dst: array<u32>;
@group(0) @binding(1) var<storage, read> src: array<u32>;

struct Params { w: array<vec4<u32>, 32> }
@group(0) @binding(2) var<uniform> params: Params;

fn p(i: u32) -> u32 {
    return params.w[i / 4u][i % 4u];
}

const WG: u32 = 256u;

// The element-wise operation, fixed when the pipeline is created (one
// pipeline per OP, so no thread switches on it):
//   0: dst[i] = v0                      (fill, one word per element)
//   1: dst[i] = i even ? v0 : v1        (fill, two words per element)
//   2: dst[i] = f32(dst[i]) * f32(v0)   (scale)
//   3: dst[i] = f32 dst[i] + src[i]     (add)
//   4: dst[i] = f32 dst[i] - src[i]     (update)
//   5: dst[i] = i32 dst[i] + src[i]     (add, wrapping)
//   6: dst[i] = i32 dst[i] - src[i]     (update, wrapping)
override OP: u32 = 0u;

// p = [n, dst_off, src_off, v0, v1]
@compute @workgroup_size(256)
fn elementwise(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let n = p(0u);
    let d0 = p(1u);
    let s0 = p(2u);
    let v0 = p(3u);
    let v1 = p(4u);
    let stride = nwg.x * WG;
    for (var i = gid.x; i < n; i += stride) {
        let d = d0 + i;
        if (OP == 0u) { dst[d] = v0; }
        else if (OP == 1u) { dst[d] = select(v0, v1, (i & 1u) == 1u); }
        else if (OP == 2u) { dst[d] = bitcast<u32>(bitcast<f32>(dst[d]) * bitcast<f32>(v0)); }
        else if (OP == 3u) { dst[d] = bitcast<u32>(bitcast<f32>(dst[d]) + bitcast<f32>(src[s0 + i])); }
        else if (OP == 4u) { dst[d] = bitcast<u32>(bitcast<f32>(dst[d]) - bitcast<f32>(src[s0 + i])); }
        else if (OP == 5u) { dst[d] = dst[d] + src[s0 + i]; }
        else { dst[d] = dst[d] - src[s0 + i]; }
    }
}

// The same blob memory seen as vec4 words, for the vector variants below
// (an entry point uses either these or the scalar views, never both).
@group(0) @binding(0) var<storage, read_write> dst4: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read> src4: array<vec4<u32>>;

// `elementwise` four words at a time, for 16-byte aligned offsets (the
// host runs the scalar kernel on the tail).
// p = [n4, dst_off4, src_off4, v0, v1]
@compute @workgroup_size(256)
fn elementwise4(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let n = p(0u);
    let d0 = p(1u);
    let s0 = p(2u);
    let v0 = p(3u);
    let v1 = p(4u);
    let stride = nwg.x * WG;
    for (var i = gid.x; i < n; i += stride) {
        let d = d0 + i;
        if (OP == 0u) { dst4[d] = vec4<u32>(v0); }
        else if (OP == 1u) { dst4[d] = vec4<u32>(v0, v1, v0, v1); }
        else if (OP == 2u) { dst4[d] = bitcast<vec4<u32>>(bitcast<vec4<f32>>(dst4[d]) * bitcast<f32>(v0)); }
        else if (OP == 3u) { dst4[d] = bitcast<vec4<u32>>(bitcast<vec4<f32>>(dst4[d]) + bitcast<vec4<f32>>(src4[s0 + i])); }
        else if (OP == 4u) { dst4[d] = bitcast<vec4<u32>>(bitcast<vec4<f32>>(dst4[d]) - bitcast<vec4<f32>>(src4[s0 + i])); }
        else if (OP == 5u) { dst4[d] = dst4[d] + src4[s0 + i]; }
        else { dst4[d] = dst4[d] - src4[s0 + i]; }
    }
}

// Rows of contiguous words, in planes: row r (y of the grid) of plane q
// (z) copies `run` words from src[src_off + q * src_plane + r * src_row ..]
// to dst[dst_off + q * dst_plane + r * dst_row ..]; x walks the run. No
// division per element: merges, splits, outer transposes and the copies
// whose inner dim is contiguous on both sides are this kernel.
// p = [rows, run, dst_off, dst_row, src_off, src_row, planes, dst_plane, src_plane]
@compute @workgroup_size(256)
fn copy_rows(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
      @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let rows = p(0u);
    let run = p(1u);
    let planes = p(6u);
    // Runs shorter than a workgroup: each workgroup takes `per` rows at a
    // time, thread lid.x on element lid.x % run of row lid.x / run (one
    // division per thread, none per element).
    let per = max(1u, WG / run);
    let sub = select(0u, lid.x / run, run < WG);
    let i0 = select(gid.x, lid.x % run, run < WG);
    let xs = select(nwg.x * WG, WG, run < WG);
    for (var q = wid.z; q < planes; q += nwg.z) {
        if (run < WG && sub >= per) { continue; }
        for (var r = wid.y * per + sub; r < rows; r += nwg.y * per) {
            let d = p(2u) + q * p(7u) + r * p(3u);
            let s = p(4u) + q * p(8u) + r * p(5u);
            for (var i = i0; i < run; i += xs) {
                dst[d + i] = src[s + i];
            }
        }
    }
}

// `copy_rows` four words at a time: every offset, stride and the run are
// multiples of 4 words (given here in vec4s).
@compute @workgroup_size(256)
fn copy_rows4(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
      @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let rows = p(0u);
    let run = p(1u);
    let planes = p(6u);
    // Runs shorter than a workgroup: each workgroup takes `per` rows at a
    // time, thread lid.x on element lid.x % run of row lid.x / run (one
    // division per thread, none per element).
    let per = max(1u, WG / run);
    let sub = select(0u, lid.x / run, run < WG);
    let i0 = select(gid.x, lid.x % run, run < WG);
    let xs = select(nwg.x * WG, WG, run < WG);
    for (var q = wid.z; q < planes; q += nwg.z) {
        if (run < WG && sub >= per) { continue; }
        for (var r = wid.y * per + sub; r < rows; r += nwg.y * per) {
            let d = p(2u) + q * p(7u) + r * p(3u);
            let s = p(4u) + q * p(8u) + r * p(5u);
            for (var i = i0; i < run; i += xs) {
                dst4[d + i] = src4[s + i];
            }
        }
    }
}

// A 2-D transpose through workgroup memory, in 32 x 32 tiles of words:
// dst[d0 + j * dst_row + i] = src[s0 + i * src_row + j] for i < cols, j < rows
// (the source's rows become the destination's columns), batched over
// planes (z). Reads and writes both walk rows, as the host engine's tiles do.
// p = [rows, cols, dst_off, dst_row, src_off, src_row, planes, dst_plane, src_plane]
var<workgroup> tile: array<u32, 1056>;

@compute @workgroup_size(32, 8)
fn transpose_tiles(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
                   @builtin(num_workgroups) nwg: vec3<u32>) {
    let rows = p(0u);
    let cols = p(1u);
    let planes = p(6u);
    let tiles_x = (cols + 31u) / 32u;
    let tiles_y = (rows + 31u) / 32u;
    for (var q = wid.z; q < planes; q += nwg.z) {
        for (var t = wid.x + wid.y * nwg.x; t < tiles_x * tiles_y; t += nwg.x * nwg.y) {
            let tx = (t % tiles_x) * 32u;
            let ty = (t / tiles_x) * 32u;
            // Read: source row ty + k, columns tx + lid.x.
            for (var k = lid.y; k < 32u; k += 8u) {
                let r = ty + k;
                let c = tx + lid.x;
                if (r < rows && c < cols) {
                    tile[k * 33u + lid.x] = src[p(4u) + q * p(8u) + r * p(5u) + c];
                }
            }
            workgroupBarrier();
            // Write: destination row tx + k (a source column), columns ty + lid.x.
            for (var k = lid.y; k < 32u; k += 8u) {
                let c = tx + k;
                let r = ty + lid.x;
                if (r < rows && c < cols) {
                    dst[p(2u) + q * p(7u) + c * p(3u) + r] = tile[lid.x * 33u + k];
                }
            }
            workgroupBarrier();
        }
    }
}

// A strided N-d copy of words: for every index of `dims` (row-major, the
// linear index unravelled innermost first),
//   dst[dst_off + sum(idx * dst_strides)] = src[src_off + sum(idx * src_strides)].
// p = [n, rank, dst_off, src_off, dims[rank], dst_strides[rank], src_strides[rank]]
// Dims are fused on the host first; what still has no contiguous inner
// run (transposes, reorders, reversed views) is this kernel. A negative
// stride comes as its two's complement: u32 arithmetic wraps in WGSL, so
// the sums are exact whenever the element they name exists.
@compute @workgroup_size(256)
fn strided_copy(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let n = p(0u);
    let rank = p(1u);
    let stride = nwg.x * WG;
    for (var i = gid.x; i < n; i += stride) {
        var rem = i;
        var d = p(2u);
        var s = p(3u);
        for (var k = rank; k > 0u; k -= 1u) {
            let size = p(3u + k);
            let idx = rem % size;
            rem = rem / size;
            d += idx * p(3u + rank + k);
            s += idx * p(3u + 2u * rank + k);
        }
        dst[d] = src[s];
    }
}

// One partial sum per workgroup: Kahan-compensated in each thread over a
// grid-stride run, then a tree over the workgroup. The host adds the
// partials in f64.
// p = [op, n, src_off]: op 0 asum f32, 1 sumsq f32 (i32 goes to reduce_i32).
var<workgroup> partial: array<f32, 256>;

@compute @workgroup_size(256)
fn reduce(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
          @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let op = p(0u);
    let n = p(1u);
    let s0 = p(2u);
    let stride = nwg.x * WG;
    var sum = 0.0;
    var c = 0.0;
    for (var i = gid.x; i < n; i += stride) {
        let w = src[s0 + i];
        var x: f32;
        x = bitcast<f32>(w);
        var v: f32;
        if ((op & 1u) == 0u) { v = abs(x); } else { v = x * x; }
        let y = v - c;
        let t = sum + y;
        c = (t - sum) - y;
        sum = t;
    }
    partial[lid.x] = sum;
    workgroupBarrier();
    for (var half = WG / 2u; half > 0u; half /= 2u) {
        if (lid.x < half) {
            partial[lid.x] += partial[lid.x + half];
        }
        workgroupBarrier();
    }
    if (lid.x == 0u) {
        dst[wid.x] = bitcast<u32>(partial[0]);
    }
}

// Exact integer reductions of i32 words: every thread accumulates |x| (op
// 2) or x*x (op 3) in a 96-bit integer emulated with three u32 words, the
// workgroup adds its threads' sums the same way, and each workgroup
// writes its (lo, mid, hi) words; the host adds them as integers. Exact
// for any element count below 2^32: each square is below 2^63, so every
// sum stays below 2^95 (two words wrapped past 2^64 with four squares of
// -2^31).
// p = [op, n, src_off]
var<workgroup> part_lo: array<u32, 256>;
var<workgroup> part_mid: array<u32, 256>;
var<workgroup> part_hi: array<u32, 256>;

fn add96(a: vec3<u32>, b: vec3<u32>) -> vec3<u32> {
    let lo = a.x + b.x;
    let c0 = select(0u, 1u, lo < a.x);
    let mid1 = a.y + b.y;
    let c1 = select(0u, 1u, mid1 < a.y);
    let mid = mid1 + c0;
    let c2 = select(0u, 1u, mid < mid1);
    return vec3<u32>(lo, mid, a.z + b.z + c1 + c2);
}

// a * a for a < 2^32, as (lo, mid, 0): a = ah * 2^16 + al, so
// a^2 = ah^2 * 2^32 + 2 * (ah * al) * 2^16 + al^2.
fn square96(a: u32) -> vec3<u32> {
    let al = a & 0xFFFFu;
    let ah = a >> 16u;
    let mid = ah * al;
    let shifted = vec3<u32>(mid << 16u, mid >> 16u, 0u);
    return add96(add96(vec3<u32>(al * al, ah * ah, 0u), shifted), shifted);
}

@compute @workgroup_size(256)
fn reduce_i32(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
              @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let squares = p(0u) == 3u;
    let n = p(1u);
    let s0 = p(2u);
    let stride = nwg.x * WG;
    var acc = vec3<u32>(0u, 0u, 0u);
    for (var i = gid.x; i < n; i += stride) {
        let w = src[s0 + i];
        // |x| as u32: exact for every i32, 2^31 included.
        let a = select(w, 0u - w, (w & 0x80000000u) != 0u);
        if (squares) {
            acc = add96(acc, square96(a));
        } else {
            acc = add96(acc, vec3<u32>(a, 0u, 0u));
        }
    }
    part_lo[lid.x] = acc.x;
    part_mid[lid.x] = acc.y;
    part_hi[lid.x] = acc.z;
    workgroupBarrier();
    for (var half = WG / 2u; half > 0u; half /= 2u) {
        if (lid.x < half) {
            let r = add96(vec3<u32>(part_lo[lid.x], part_mid[lid.x], part_hi[lid.x]),
                          vec3<u32>(part_lo[lid.x + half], part_mid[lid.x + half], part_hi[lid.x + half]));
            part_lo[lid.x] = r.x;
            part_mid[lid.x] = r.y;
            part_hi[lid.x] = r.z;
        }
        workgroupBarrier();
    }
    if (lid.x == 0u) {
        dst[3u * wid.x] = part_lo[0];
        dst[3u * wid.x + 1u] = part_mid[0];
        dst[3u * wid.x + 2u] = part_hi[0];
    }
}

// `reduce` for f32 reading four words at a time (16-byte aligned offset,
// a multiple of 4 words): each thread's Kahan sum takes the four terms of
// a vec4 at once.
// p = [op, n4, src_off4]
@compute @workgroup_size(256)
fn reduce4(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
           @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let op = p(0u);
    let n = p(1u);
    let s0 = p(2u);
    let stride = nwg.x * WG;
    var sum = 0.0;
    var c = 0.0;
    for (var i = gid.x; i < n; i += stride) {
        let x = bitcast<vec4<f32>>(src4[s0 + i]);
        var t4: vec4<f32>;
        if ((op & 1u) == 0u) { t4 = abs(x); } else { t4 = x * x; }
        let v = (t4.x + t4.y) + (t4.z + t4.w);
        let y = v - c;
        let t = sum + y;
        c = (t - sum) - y;
        sum = t;
    }
    partial[lid.x] = sum;
    workgroupBarrier();
    for (var half = WG / 2u; half > 0u; half /= 2u) {
        if (lid.x < half) {
            partial[lid.x] += partial[lid.x + half];
        }
        workgroupBarrier();
    }
    if (lid.x == 0u) {
        dst[wid.x] = bitcast<u32>(partial[0]);
    }
}
