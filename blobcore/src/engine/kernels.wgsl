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
// p = [op, n, src_off]: op 0 asum f32, 1 sumsq f32 (i32 goes to reduce_i32).
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

// Exact integer reductions of i32 words: every thread accumulates |x| (op
// 2) or x*x (op 3) in a 64-bit integer emulated with two u32 words, the
// workgroup adds its threads' sums the same way, and each workgroup
// writes its (lo, hi) pair; the host adds the pairs as integers. Exact
// while a workgroup's sum stays below 2^64 (so every result below 2^53
// equals the host's bit for bit).
// p = [op, n, src_off]
var<workgroup> part_lo: array<u32, 256>;
var<workgroup> part_hi: array<u32, 256>;

fn add64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let lo = a.x + b.x;
    return vec2<u32>(lo, a.y + b.y + select(0u, 1u, lo < a.x));
}

// a * a for a < 2^32, as (lo, hi): a = ah * 2^16 + al, so
// a^2 = ah^2 * 2^32 + 2 * (ah * al) * 2^16 + al^2.
fn square64(a: u32) -> vec2<u32> {
    let al = a & 0xFFFFu;
    let ah = a >> 16u;
    let mid = ah * al;
    let shifted = vec2<u32>(mid << 16u, mid >> 16u);
    return add64(add64(vec2<u32>(al * al, ah * ah), shifted), shifted);
}

@compute @workgroup_size(256)
fn reduce_i32(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
              @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let squares = p[0] == 3u;
    let n = p[1];
    let s0 = p[2];
    let stride = nwg.x * WG;
    var acc = vec2<u32>(0u, 0u);
    for (var i = gid.x; i < n; i += stride) {
        let w = src[s0 + i];
        // |x| as u32: exact for every i32, 2^31 included.
        let a = select(w, 0u - w, (w & 0x80000000u) != 0u);
        if (squares) {
            acc = add64(acc, square64(a));
        } else {
            acc = add64(acc, vec2<u32>(a, 0u));
        }
    }
    part_lo[lid.x] = acc.x;
    part_hi[lid.x] = acc.y;
    workgroupBarrier();
    for (var half = WG / 2u; half > 0u; half /= 2u) {
        if (lid.x < half) {
            let r = add64(vec2<u32>(part_lo[lid.x], part_hi[lid.x]), vec2<u32>(part_lo[lid.x + half], part_hi[lid.x + half]));
            part_lo[lid.x] = r.x;
            part_hi[lid.x] = r.y;
        }
        workgroupBarrier();
    }
    if (lid.x == 0u) {
        dst[2u * wid.x] = part_lo[0];
        dst[2u * wid.x + 1u] = part_hi[0];
    }
}
