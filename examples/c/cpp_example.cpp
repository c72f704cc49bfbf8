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
