// cpp_example: blob.hpp's RAII handles, exceptions and LIFO-safe buffers.
#include <blob.hpp>

#include <cstdio>

int main() {
    try {
        auto seq = blob::Blob::data(BLOB_F32, 3, 2, 4);
        seq.fill(1.0);
        {
            auto outer = seq.buffer<float>(0, 8);
            auto inner = seq.buffer<float>(8, 8);  // released first: LIFO by construction
            for (float &x : inner) x = 2.0f;
            outer[0] = 5.0f;
        }
        auto w = seq.window();  // NeoML's default: one entry of axis 0
        if (w.dims()[0] != 1) return 1;
        w.set_parent_pos(1);
        std::printf("window asum %.1f, blob asum %.1f\n", w.asum(), seq.asum());
        if (w.asum() != 16.0 || seq.asum() != 36.0) return 1;
        auto t = seq.transposed(0, 1);
        std::printf("transposed dims: %lld x %lld\n", (long long)t.dims()[0], (long long)t.dims()[1]);
        // numpy.transpose with any permutation, Caffe's shape_string/count, casts.
        // seq is NeoML's 7-D data blob [3, 2, 1, 1, 1, 1, 4]: move the
        // channels first.
        auto p = seq.permuted({6, 0, 1, 2, 3, 4, 5});
        std::printf("permuted: %s, count(1) = %lld\n", p.shape_string().c_str(), (long long)p.count_from(1));
        if (p.shape_string() != "4 3 2 1 1 1 1 (24)" || p.count_from(1) != 6 || p.asum() != seq.asum()) return 1;
        auto again = blob::Blob::data(BLOB_F32, 3, 2, 4);
        again.permute_from(p, {-6, -5, -4, -3, -2, -1, 0});
        if (again.to_vector<float>() != seq.to_vector<float>()) return 1;
        auto as_int = seq.cast(BLOB_I32);
        if (!as_int.is_writable() || as_int.to_vector<int32_t>()[0] != 5 || as_int.capacity() != 24) return 1;
        auto m = blob::Blob::tensor(BLOB_F32, {3, 5});
        m.assign(std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14});
        if (m.legacy_offset(2, 4) != 14 || m.data_at(1, 3) != 8.0 || m.diff_at(1, 3) != 0.0) return 1;
        // NeoML's named dims on a matrix: BatchLength 3 x BatchWidth 5,
        // padded to 7 dims. Two matrices merge along Channels.
        auto mc = blob::Blob::tensor(BLOB_F32, {3, 5, 1, 1, 1, 1, 2});
        blob::merge_dim({&m, &m}, BLOB_DIM_CHANNELS, mc);
        if (mc.to_vector<float>()[3] != 1.0f || !m.has_equal_dims(blob::Blob::tensor(BLOB_F32, {3, 5, 1}))) return 1;
        auto mt = m.transposed_dims(BLOB_DIM_BATCH_WIDTH, BLOB_DIM_CHANNELS);
        if (mt.shape_string() != "3 1 1 1 1 1 5 (15)") return 1;
        try {
            w.set_parent_pos(3);
            return 1;
        } catch (const blob::Error &e) {
            std::printf("caught: status %d: %s\n", e.status(), e.what());
            if (e.status() != BLOB_ERR_OUT_OF_RANGE) return 1;
        }
        // Serialize as a Caffe BlobProto and back.
        auto back = blob::Blob::from_caffe_bytes(seq.to_caffe_bytes());
        std::printf("BlobProto round trip: asum %.1f\n", back.asum());
        if (back.asum() != seq.asum()) return 1;
        if (!back.shape_equals(seq.to_caffe_bytes()) || seq.permuted({6, 0, 1, 2, 3, 4, 5}).shape_equals(seq.to_caffe_bytes())) return 1;
        try {
            blob::Blob::from_caffe_bytes({0xff, 0xff});
            return 1;
        } catch (const blob::Error &e) {
            if (e.status() != BLOB_ERR_FORMAT) return 1;
        }
    } catch (const blob::Error &e) {
        std::fprintf(stderr, "unexpected: %s\n", e.what());
        return 1;
    }
    return 0;
}
