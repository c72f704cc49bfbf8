// blobcore's GPU kernels. Every kernel sees blob memory as 32-bit words
// (f32 and i32 elements are one word, f64 and i64 two), runs 256 threads
// per workgroup and loops with a grid stride, so any element count works
// with at most 65535 workgroups.
//
// Bindings shared by all kernels:
//   0: the destination (read-write), 1: the source (read-only),
//   2: the parameters (u32 words, layout per kernel below).

@group(0) @binding(0) var<storage, read_write> dst: array<u32>;
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read> p: array<u32>;

const WG: u32 = 256u;

// p = [op, n, dst_off, src_off, v0, v1]
//   op 0: dst[i] = v0                      (fill, one word per element)
//   op 1: dst[i] = i even ? v0 : v1        (fill, two words per element)
//   op 2: dst[i] = f32(dst[i]) * f32(v0)   (scale)
//   op 3: dst[i] = f32 dst[i] + src[i]     (add)
//   op 4: dst[i] = f32 dst[i] - src[i]     (update)
//   op 5: dst[i] = i32 dst[i] + src[i]     (add, wrapping)
//   op 6: dst[i] = i32 dst[i] - src[i]     (update, wrapping)
@compute @workgroup_size(256)
fn elementwise(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let op = p[0];
    let n = p[1];
    let d0 = p[2];
    let s0 = p[3];
    let stride = nwg.x * WG;
    for (var i = gid.x; i < n; i += stride) {
        let d = d0 + i;
        switch op {
            case 0u: { dst[d] = p[4]; }
            case 1u: { dst[d] = select(p[4], p[5], (i & 1u) == 1u); }
            case 2u: { dst[d] = bitcast<u32>(bitcast<f32>(dst[d]) * bitcast<f32>(p[4])); }
            case 3u: { dst[d] = bitcast<u32>(bitcast<f32>(dst[d]) + bitcast<f32>(src[s0 + i])); }
            case 4u: { dst[d] = bitcast<u32>(bitcast<f32>(dst[d]) - bitcast<f32>(src[s0 + i])); }
            case 5u: { dst[d] = dst[d] + src[s0 + i]; }
            case 6u: { dst[d] = dst[d] - src[s0 + i]; }
            default: {}
        }
    }
}

// A strided N-d copy of words: for every index of `dims` (row-major, the
// linear index unravelled innermost first),
//   dst[dst_off + sum(idx * dst_strides)] = src[src_off + sum(idx * src_strides)].
// p = [n, rank, dst_off, src_off, dims[rank], dst_strides[rank], src_strides[rank]]
// Transposes, merges, splits and layout reorders are all this kernel.
@compute @workgroup_size(256)
fn strided_copy(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let n = p[0];
    let rank = p[1];
    let stride = nwg.x * WG;
    for (var i = gid.x; i < n; i += stride) {
        var rem = i;
        var d = p[2];
        var s = p[3];
        for (var k = rank; k > 0u; k -= 1u) {
            let size = p[3u + k];
            let idx = rem % size;
            rem = rem / size;
            d += idx * p[3u + rank + k];
            s += idx * p[3u + 2u * rank + k];
        }
        dst[d] = src[s];
    }
}

// One partial sum per workgroup: Kahan-compensated in each thread over a
// grid-stride run, then a tree over the workgroup. The host adds the
// partials in f64.
// p = [op, n, src_off]: op 0 asum f32, 1 sumsq f32, 2 asum i32, 3 sumsq i32.
var<workgroup> partial: array<f32, 256>;

@compute @workgroup_size(256)
fn reduce(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
          @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let op = p[0];
    let n = p[1];
    let s0 = p[2];
    let stride = nwg.x * WG;
    var sum = 0.0;
    var c = 0.0;
    for (var i = gid.x; i < n; i += stride) {
        let w = src[s0 + i];
        var x: f32;
        if (op < 2u) { x = bitcast<f32>(w); } else { x = f32(bitcast<i32>(w)); }
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
