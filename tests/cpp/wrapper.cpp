// The C++ wrapper (include/blob.hpp) end to end: every group of blob.h
// through RAII types, errors as blob::Error with the C status, DLPack
// exports and imports as owning objects, no leaks when exceptions fly
// (this program also runs under valgrind).
//
//   wrapper <scratch dir>
#include <blob.hpp>

#include <cstdio>
#include <cstring>
#include <unistd.h>
#include <stdexcept>
#include <string>

static int failures = 0;
#define CHECK(cond)                                                             \
    do {                                                                        \
        if (!(cond)) {                                                          \
            std::fprintf(stderr, "%s:%d: %s is false\n", __FILE__, __LINE__, #cond); \
            failures++;                                                         \
        }                                                                       \
    } while (0)

template <typename F>
static int32_t status_of(F f) {
    try {
        f();
    } catch (const blob::Error &e) {
        return e.status();
    }
    return BLOB_OK;
}

static int released = 0;
static void on_release(void *) { released++; }

int main(int argc, char **argv) {
    const std::string dir = argc > 1 ? argv[1] : ".";
    try {
        auto cpu = blob::Engine::cpu();
        CHECK(!cpu.is_gpu() && !cpu.is_software());
        // The CUDA engine: a device error where there is no NVIDIA driver,
        // else an engine with device memory on hardware.
        {
            int32_t st = status_of([] {
                auto c = blob::Engine::cuda(0);
                CHECK(c.is_gpu() && !c.is_software());
            });
            CHECK(st == BLOB_OK || st == BLOB_ERR_DEVICE);
            CHECK(status_of([] { blob::Engine::cuda(-1); }) == BLOB_ERR_INVALID_ARGUMENT);
        }
        cpu.reset_stats();
        cpu.synchronize(); // nothing queued on the CPU engine: returns at once
        CHECK(cpu.stats().uploads == 0 && cpu.stats().kernels == 0);
        CHECK(!blob::version().empty());
        CHECK(blob::layout_by_dims(4) == BLOB_LAYOUT_NCHW);

        // Creation and queries (NeoML's named dims, Caffe's helpers).
        auto img = blob::Blob::image2d(BLOB_F32, 2, 1, 3, 4, 5, &cpu);
        CHECK(img.rank() == 7 && img.named_dim(BLOB_DIM_CHANNELS) == 5 && img.object_count() == 2);
        CHECK(img.object_size() == 60 && img.geometrical_size() == 12 && img.dim(-1) == 5);
        CHECK(img.dtype() == BLOB_F32 && img.is_writable() && img.head() == BLOB_HEAD_UNINITIALIZED);
        auto v = blob::Blob::vector(BLOB_I32, 6);
        auto m = blob::Blob::matrix(BLOB_F32, 2, 3);
        auto l = blob::Blob::list(BLOB_F32, 1, 2, 3, 4);
        auto i3 = blob::Blob::image3d(BLOB_F32, 1, 1, 2, 2, 2, 3);
        CHECK(l.named_dim(BLOB_DIM_LIST_SIZE) == 3 && i3.named_dim(BLOB_DIM_DEPTH) == 2);
        auto f = blob::Blob::full(BLOB_F32, {2, 3}, 1.5);
        CHECK(f.asum() == 9.0 && f.sumsq() == 13.5);
        CHECK(m.same_shape(f) && !v.same_shape(f, false) && m.has_equal_dims(blob::Blob::tensor(BLOB_F32, {2, 3, 1})));
        CHECK(m.shares_memory(m) && m.may_share_memory(m) && !m.shares_memory(f) && !m.may_share_memory(f));
        CHECK(f.shape_string() == "2 3 (6)" && f.count_from(1) == 3 && f.count_range(0, 1) == 2);
        CHECK(f.canonical_axis(-1) == 1 && f.offset({1, 2}) == 5 && f.legacy_shape(0) == 2 && f.legacy_offset(1, 1) == 4);
        CHECK(f.capacity() == 6 && f.data_at(1, 2) == 1.5 && f.diff_at(0) == 0.0);

        // Copies, typed prefixes, casts, transposes, shape changes.
        f.assign(std::vector<float>{0, 1, 2, 3, 4, 5});
        float first[2] = {0, 0};
        f.copy_to(BLOB_F32, first, 2);
        CHECK(first[1] == 1.0f);
        CHECK(status_of([&] { f.copy_to(BLOB_I32, first, 2); }) == BLOB_ERR_DTYPE);
        const float two[2] = {9, 8};
        auto g = f.copy();
        g.copy_from_typed(BLOB_F32, two, 2);
        CHECK(g.to_vector<float>()[1] == 8.0f && f.to_vector<float>()[1] == 1.0f);
        CHECK(f.transposed(0, 1).to_vector<float>()[1] == 3.0f && f.permuted({1, 0}).dims()[0] == 3);
        CHECK(f.transposed_dims(BLOB_DIM_BATCH_LENGTH, BLOB_DIM_CHANNELS).rank() == 7);
        CHECK(f.cast(BLOB_I32).dtype() == BLOB_I32 && f.clone().asum() == 0.0 && f.clone_as(BLOB_F64).dtype() == BLOB_F64);
        // The new dtypes by their C++ names: float8 holds 1.5 exactly,
        // bool stores 1, and arithmetic on them throws BLOB_ERR_DTYPE.
        auto e4 = blob::Blob::full(int32_t(blob::DType::F8_E4M3FN), {2}, 1.5);
        CHECK(e4.dtype() == BLOB_F8_E4M3FN && e4.cast(BLOB_F32).to_vector<float>()[1] == 1.5f);
        auto flags = blob::Blob::full(int32_t(blob::DType::Bool), {3}, 2.5);
        CHECK(flags.to_vector<uint8_t>() == std::vector<uint8_t>({1, 1, 1}));
        CHECK(blob::Blob::full(int32_t(blob::DType::U64), {1}, 1e19).to_vector<uint64_t>()[0] == 10000000000000000000ull);
        try {
            e4.scale(2.0);
            CHECK(false);
        } catch (const blob::Error &err) {
            CHECK(err.status() == BLOB_ERR_DTYPE && std::string(err.what()).find("astype") != std::string::npos);
        }
        auto t = blob::Blob::tensor(BLOB_F32, {3, 2});
        t.transpose_from(f, 0, 1);
        auto p = blob::Blob::tensor(BLOB_F32, {3, 2});
        p.permute_from(f, {1, 0});
        CHECK(t.to_vector<float>() == p.to_vector<float>());
        auto t7 = blob::Blob::tensor(BLOB_F32, {1, 3, 1, 1, 1, 1, 2});
        t7.transpose_from_dims(f, BLOB_DIM_BATCH_LENGTH, BLOB_DIM_CHANNELS);
        g.copy_from(f);
        g.copy_from_caffe(t, false, true);
        CHECK(g.dims() == t.dims());
        g.reinterpret({6});
        g.reshape({2, 3});
        g.share_data(f);
        f.fill(2.0);
        CHECK(g.asum() == 12.0);
        g.share_diff(f);
        f.diff().fill(1.0);
        f.update();  // data -= diff
        CHECK(f.asum() == 6.0 && g.diff().asum() == 6.0);
        f.scale(2.0);
        f.add(g);  // g shares f's data: doubles it
        CHECK(f.asum() == 24.0);
        f.clear_object(0);
        CHECK(f.asum() == 24.0 - 4.0);  // object 0 is element 0 (objects of a 2x3 matrix are elements)
        {
            // Exact fills: int64 past 2^53, one object; a wrong dtype throws.
            auto x = blob::Blob::tensor(BLOB_I64, {2, 3});
            const int64_t big = INT64_C(8587004344907571699);
            x.fill_element(BLOB_I64, big);
            for (int64_t v : x.to_vector<int64_t>()) CHECK(v == big);
            x.fill_object_element(1, BLOB_I64, int64_t{-1});
            CHECK(x.to_vector<int64_t>()[1] == -1 && x.to_vector<int64_t>()[2] == big);
            bool threw = false;
            try {
                x.fill_element(BLOB_I32, int32_t{1});
            } catch (const blob::Error &) {
                threw = true;
            }
            CHECK(threw && x.to_vector<int64_t>()[0] == big);
        }
        f.clear();
        f.fill_object(1, 1.0);
        CHECK(f.asum() == 1.0);
        f.clear();
        CHECK(f.asum() == 0.0);

        // Views, windows, buffers with both exchange flags.
        auto seq = blob::Blob::data(BLOB_F32, 3, 1, 2);
        seq.assign(std::vector<float>{1, 2, 3, 4, 5, 6});
        auto w = seq.window();
        w.shift_parent_pos(1);
        CHECK(w.parent_pos() == 1 && w.to_vector<float>()[0] == 3.0f && w.parent().size() == 6 && w.owner().size() == 6);
        w.set_parent_pos(2);
        CHECK(w.asum() == 11.0);
        CHECK(seq.slice({1}).rank() == 6);
        auto grid = blob::Blob::tensor(BLOB_F32, {3, 4});
        grid.assign(std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
        auto roi = grid.region({1, 1}, {3, 3});
        auto dense = blob::Blob::tensor(BLOB_F32, {2, 2});
        dense.reorder_from(roi);
        CHECK(dense.to_vector<float>()[3] == 10.0f);
        CHECK(status_of([&] { roi.raw(); }) == BLOB_ERR_UNSUPPORTED);
        {
            auto outer = seq.buffer<float>(0, 2, true);
            auto inner = seq.buffer<float>(2, 2, true, false);
            outer[0] = 100.0f;
            CHECK(inner[0] == 3.0f && outer.size() == 2);
        }  // released inner, then outer: LIFO
        CHECK(seq.to_vector<float>()[0] == 100.0f);

        // Layouts and descs.
        auto nhwc = blob::Blob::with_layout(BLOB_F32, {1, 3, 2, 2}, BLOB_LAYOUT_NHWC);
        CHECK(nhwc.layout() == BLOB_LAYOUT_NHWC && nhwc.blocking().order == (std::vector<int64_t>{0, 2, 3, 1}));
        auto b8 = blob::Blob::with_blocking(BLOB_F32, {1, 25, 20, 20}, {1, 4, 20, 20, 8}, {0, 1, 2, 3, 1});
        CHECK(b8.desc_offset({0, 1, 0, 2}) == 17 && b8.desc_offset_linear(1) == 8 && b8.raw_count() == 12800);
        auto padded = blob::Blob::with_blocking(BLOB_F32, {2, 3}, {2, 3}, {0, 1}, 3, {}, {32, 1});
        CHECK(padded.blocking().offset_padding == 3 && padded.raw().size() == 38);

        // Merge and split by axis, named dim and object.
        auto a5 = blob::Blob::full(BLOB_F32, {5}, 1.0), b5 = blob::Blob::full(BLOB_F32, {5}, 2.0);
        auto pairs = blob::Blob::tensor(BLOB_F32, {5, 1, 1, 1, 1, 1, 2});
        blob::merge_dim({&a5, &b5}, BLOB_DIM_CHANNELS, pairs);
        CHECK(pairs.to_vector<float>()[1] == 2.0f);
        auto x5 = blob::Blob::vector(BLOB_F32, 5), y5 = blob::Blob::vector(BLOB_F32, 5);
        blob::split_dim(pairs, BLOB_DIM_CHANNELS, {&x5, &y5});
        CHECK(y5.asum() == 10.0);
        auto ten = blob::Blob::vector(BLOB_F32, 10);
        blob::merge({&a5, &b5}, 0, ten);
        blob::split(ten, 0, {&x5, &y5});
        auto objs = blob::Blob::tensor(BLOB_F32, {5, 1, 1, 2});
        blob::merge_objects({&a5, &b5}, objs);
        blob::split_objects(objs, {&x5, &y5});
        CHECK(x5.asum() == 5.0 && y5.asum() == 10.0);

        // Files and bytes.
        f.fill(0.5);
        f.save_caffe(dir + "/wrapper.binaryproto");
        f.save_npy(dir + "/wrapper.npy");
        f.save_neoml(dir + "/wrapper.neoml", BLOB_NEOML_SERIALIZE);
        CHECK(blob::Blob::load_caffe(dir + "/wrapper.binaryproto").asum() == 3.0);
        CHECK(blob::Blob::load_npy(dir + "/wrapper.npy").asum() == 3.0);
        {
            auto mapped = blob::Blob::load_npy_mapped(dir + "/wrapper.npy", "r");
            CHECK(!mapped.is_writable() && mapped.asum() == 3.0);
            CHECK(status_of([&] { blob::Blob::load_npy_mapped(dir + "/wrapper.npy", "w"); }) == BLOB_ERR_INVALID_ARGUMENT);
        }
        {
            // Weight files through BlobMap: safetensors and .caffemodel.
            blob::BlobMap m;
            m.insert("w", f);
            m.set_metadata("format", "cpp");
            m.save_safetensors(dir + "/wrapper.safetensors");
            auto back = blob::BlobMap::load_safetensors(dir + "/wrapper.safetensors");
            CHECK(back.size() == 1 && back.name(0) == "w" && back.count(0) == 1 && back.metadata("format") == "cpp");
            CHECK(back.metadata_size() == 1 && back.metadata_at(0).second == "cpp");
            auto w = back.get("w");
            CHECK(!w.is_writable() && w.asum() == 3.0);
            CHECK(blob::BlobMap::load_safetensors(dir + "/wrapper.safetensors", false).at(0).is_writable());
            blob::BlobMap net;
            net.push("ip", f);
            net.push("ip", f);
            net.set_kind("ip", "InnerProduct");
            net.save_caffemodel(dir + "/wrapper.caffemodel");
            auto loaded = blob::BlobMap::load_caffemodel(dir + "/wrapper.caffemodel");
            CHECK(loaded.count(0) == 2 && loaded.kind(0) == "InnerProduct" && loaded.at(0, 1).asum() == 3.0);
            CHECK(status_of([&] { loaded.get("ip"); }) == BLOB_ERR_INVALID_ARGUMENT);
            CHECK(status_of([&] { blob::BlobMap::load_caffemodel(dir + "/wrapper.safetensors"); }) == BLOB_ERR_FORMAT);
            // Progress: told (done, total) bytes; false cancels; an
            // exception thrown in it comes out of the load unchanged.
            uint64_t last = 0, total = 0;
            auto told = blob::BlobMap::load_safetensors(dir + "/wrapper.safetensors", false, [&](uint64_t d, uint64_t t) {
                last = d;
                total = t;
                return true;
            });
            CHECK(told.size() == 1 && last == total && total == (uint64_t)f.object_count() * 4);
            CHECK(blob::BlobMap::load_caffemodel(dir + "/wrapper.caffemodel", [&](uint64_t d, uint64_t) { return d > 0; }).count(0) == 2);
            CHECK(status_of([&] { blob::BlobMap::load_gguf(dir + "/wrapper.safetensors", false, false, [](uint64_t, uint64_t) { return true; }); }) == BLOB_ERR_FORMAT);
            CHECK(status_of([&] { blob::BlobMap::load_safetensors(dir + "/wrapper.safetensors", false, [](uint64_t, uint64_t) { return false; }); }) == BLOB_ERR_IO);
            bool thrown = false;
            try {
                blob::BlobMap::load_caffemodel(dir + "/wrapper.caffemodel", [](uint64_t, uint64_t) -> bool { throw std::runtime_error("stop"); });
            } catch (const std::runtime_error &e) {
                thrown = std::string(e.what()) == "stop";
            }
            CHECK(thrown);
        }
        CHECK(blob::Blob::load_neoml(dir + "/wrapper.neoml").rank() == 7);
        CHECK(blob::Blob::from_caffe_bytes(f.to_caffe_bytes()).asum() == 3.0);
        CHECK(blob::Blob::from_npy_bytes(f.to_npy_bytes()).asum() == 3.0);
        CHECK(f.to_neoml_bytes(BLOB_NEOML_SERIALIZE)[0] == 0xFF && blob::Blob::from_neoml_bytes(f.to_neoml_bytes()).asum() == 3.0);
        CHECK(f.shape_equals(f.to_caffe_bytes()));
        auto into = blob::Blob::vector(BLOB_F32, 1);
        into.load_caffe_into(dir + "/wrapper.binaryproto", true);
        CHECK(into.dims() == f.dims());
        blob::save_caffe_vector({&f, &into}, dir + "/wrapper.vector");
        CHECK(blob::load_caffe_vector(dir + "/wrapper.vector").size() == 2);

        // Wrapped memory: released once, at the last user.
        {
            static float mem[4] = {1, 2, 3, 4};
            {
                auto wrapped = blob::Blob::wrap(BLOB_F32, {4}, mem, sizeof mem, on_release, nullptr);
                auto view = wrapped.window(2);
                wrapped = blob::Blob::vector(BLOB_F32, 1);  // the first handle goes
                CHECK(released == 0 && view.asum() == 3.0);
            }
            CHECK(released == 1);
            auto ro = blob::Blob::wrap_read_only(BLOB_F32, {4}, mem, sizeof mem);
            CHECK(!ro.is_writable() && status_of([&] { ro.fill(0); }) == BLOB_ERR_READ_ONLY);
        }

        // Shared memory: a blob rebuilt from the descriptor reaches the same bytes.
        {
            auto src = blob::Blob::tensor(BLOB_F32, {2, 3});
            src.assign(std::vector<float>{1, 2, 3, 4, 5, 6});
            CHECK(!src.is_shared() && status_of([&] { src.shared_fd(); }) == BLOB_ERR_INVALID_ARGUMENT);
            src.share_memory();
            CHECK(src.is_shared());
            auto fd_off = src.shared_fd();
            auto other = blob::Blob::from_shared_fd(BLOB_F32, {3, 2}, fd_off.first, fd_off.second);
            ::close(fd_off.first);
            other.fill(2.0);
            CHECK(other.is_shared() && src.asum() == 12.0);
            CHECK(status_of([&] { blob::Blob::from_shared_fd(BLOB_F32, {7}, -1, 0); }) == BLOB_ERR_INVALID_ARGUMENT);
        }

        // DLPack: an owning export handed to an importer and back.
        {
            auto src = blob::Blob::tensor(BLOB_F32, {2, 3});
            src.assign(std::vector<float>{1, 2, 3, 4, 5, 6});
            auto dl = src.to_dlpack();
            CHECK(dl.tensor().ndim == 2 && dl.tensor().shape[1] == 3 && !dl.read_only());
            auto back = blob::Blob::from_dlpack(std::move(dl));  // takes it over
            CHECK(dl.get() == nullptr);
            back.fill(7.0);
            CHECK(src.asum() == 42.0);  // the same memory
            auto ro = src.to_dlpack(DLPACK_FLAG_BITMASK_READ_ONLY);
            CHECK(ro.read_only());
            auto leg = src.to_dlpack_legacy();
            CHECK(static_cast<float *>(leg.tensor().data)[0] == 7.0f);
            auto legacy_back = blob::Blob::from_dlpack_legacy(std::move(leg));
            CHECK(legacy_back.asum() == 42.0);
            // A refused import throws and leaves the export with its owner.
            auto keep = src.to_dlpack();
            keep.get()->version.major = 2;
            CHECK(status_of([&] { blob::Blob::from_dlpack(std::move(keep)); }) == BLOB_ERR_UNSUPPORTED);
            CHECK(keep.get() != nullptr);  // still owned here: its destructor frees it
            keep.get()->version.major = 1;
            CHECK(blob::Blob::tensor(BLOB_F32, {1}, &cpu).engine().is_gpu() == false);
        }

        // Errors carry the status and message; nothing leaks on the way out.
        try {
            blob::Blob::tensor(BLOB_F32, {-1});
            CHECK(false);
        } catch (const blob::Error &e) {
            CHECK(e.status() == BLOB_ERR_SHAPE && std::strstr(e.what(), "BLOB_ERR_SHAPE") != nullptr);
        }
        CHECK(status_of([&] { img.window(9); }) == BLOB_ERR_OUT_OF_RANGE);
        CHECK(status_of([&] { blob::Blob::load_npy(dir + "/missing.npy"); }) == BLOB_ERR_IO);
        CHECK(status_of([&] { blob::merge({&a5, &f}, 0, ten); }) == BLOB_ERR_SHAPE);
    } catch (const blob::Error &e) {
        std::fprintf(stderr, "unexpected blob::Error %d: %s\n", e.status(), e.what());
        return 1;
    }
    if (failures) std::fprintf(stderr, "%d checks failed\n", failures);
    else std::printf("wrapper: all checks passed\n");
    return failures != 0;
}
