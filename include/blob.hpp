// blob.hpp — the header-only C++17 wrapper of blob.h: every C function
// reachable through RAII types.
//
//  - blob::Blob    an owning, move-only blob handle (freed by its destructor)
//  - blob::Engine  an owning engine handle (CPU or GPU)
//  - blob::Buffer  a held buffer, released with its exchange flag when the
//                  scope ends (nested Buffers release in LIFO order)
//  - blob::DLPackTensor / blob::DLPackLegacyTensor
//                  owning DLPack exports: the destructor calls the deleter
//                  unless release() handed the tensor to a consumer
//  - blob::Error   every failed call, carrying the BLOB_ERR_* status and
//                  blob_last_error()'s message
//
// Nothing leaks when an exception is thrown: every handle is owned by an
// object before the next call that can throw.
//
// DLPack's structs: this header includes blob_dlpack.h, which adds
// nothing when an official dlpack.h was included first. With a DLPack
// 0.x dlpack.h included first only the legacy tensor is available.
#ifndef BLOB_HPP
#define BLOB_HPP

#include <blob.h>
#include <blob_dlpack.h>

#include <cstdint>
#include <exception>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace blob {

/// A failed call: the BLOB_ERR_* status and blob_last_error()'s message.
class Error : public std::runtime_error {
public:
    Error(int32_t status, const std::string &msg) : std::runtime_error(msg), status_(status) {}
    int32_t status() const noexcept { return status_; }

private:
    int32_t status_;
};

/// Throws blob::Error unless `status` is BLOB_OK.
inline void check(int32_t status) {
    if (status != BLOB_OK) {
        throw Error(status, std::string(blob_status_str(status)) + ": " + blob_last_error());
    }
}

/// The dtype codes of blob.h (BLOB_F32 ...), named for C++ code; every
/// function taking `int32_t dtype` takes these (`int32_t(blob::DType::U64)`)
/// or the BLOB_* macros alike.
enum class DType : int32_t {
    F32 = BLOB_F32,
    I32 = BLOB_I32,
    F64 = BLOB_F64,
    I64 = BLOB_I64,
    U8 = BLOB_U8,
    I8 = BLOB_I8,
    F16 = BLOB_F16,
    BF16 = BLOB_BF16,
    Bool = BLOB_BOOL,
    I16 = BLOB_I16,
    U16 = BLOB_U16,
    U32 = BLOB_U32,
    U64 = BLOB_U64,
    F8_E4M3FN = BLOB_F8_E4M3FN,
    F8_E5M2 = BLOB_F8_E5M2,
    F8_E8M0FNU = BLOB_F8_E8M0FNU,
};

/// The library's version ("0.1.0").
inline std::string version() { return blob_version(); }

/// OpenVINO getLayoutByDims: the default layout (BLOB_LAYOUT_*) for a rank.
inline int32_t layout_by_dims(size_t rank) {
    int32_t l = 0;
    check(blob_layout_by_dims(rank, &l));
    return l;
}

/// An owning, move-only engine handle.
class Engine {
public:
    explicit Engine(::BlobEngine *h) noexcept : h_(h) {}
    Engine(Engine &&o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
    Engine &operator=(Engine &&o) noexcept {
        if (this != &o) {
            reset();
            h_ = std::exchange(o.h_, nullptr);
        }
        return *this;
    }
    Engine(const Engine &) = delete;
    Engine &operator=(const Engine &) = delete;
    ~Engine() { reset(); }

    /// The CPU engine.
    static Engine cpu() {
        ::BlobEngine *e = nullptr;
        check(blob_engine_cpu(&e));
        return Engine(e);
    }
    /// A GPU engine (wgpu) on the adapter whose name contains `hint` ("" for any).
    static Engine gpu(const std::string &hint = "") {
        ::BlobEngine *e = nullptr;
        check(blob_engine_gpu(hint.empty() ? nullptr : hint.c_str(), &e));
        return Engine(e);
    }
    /// A CUDA engine on NVIDIA GPU `ordinal` (throws BLOB_ERR_DEVICE
    /// without a CUDA driver or that GPU).
    static Engine cuda(int32_t ordinal = 0) {
        ::BlobEngine *e = nullptr;
        check(blob_engine_cuda(ordinal, &e));
        return Engine(e);
    }
    /// True for a GPU or CUDA engine (one with device memory).
    bool is_gpu() const {
        bool g = false;
        check(blob_engine_is_gpu(h_, &g));
        return g;
    }
    /// True for a GPU engine on a software adapter (lavapipe and the like).
    bool is_software() const {
        bool s = false;
        check(blob_engine_is_software(h_, &s));
        return s;
    }
    /// Transfer and kernel counters (all zero for the CPU engine).
    BlobEngineStats stats() const {
        BlobEngineStats st{};
        check(blob_engine_stats(h_, &st));
        return st;
    }
    void reset_stats() const { check(blob_engine_reset_stats(h_)); }
    /// Waits for every kernel and transfer queued on this engine (before
    /// another library reads shared device memory, and before a fork whose
    /// children open GPUs of their own).
    void synchronize() const { check(blob_engine_synchronize(h_)); }
    /// Makes this engine the one a NULL engine means.
    void set_default() const { check(blob_set_default_engine(h_)); }
    ::BlobEngine *get() const noexcept { return h_; }

private:
    void reset() noexcept {
        if (h_) blob_engine_free(h_);
        h_ = nullptr;
    }
    ::BlobEngine *h_;
};

/// A buffer held on a blob (NeoML GetBuffer): `exchange` on creation means
/// the buffer holds current data; `release_exchange` means what was written
/// lands when the scope ends (ReleaseBuffer's exchange). Positions count
/// memory elements (a blob with a layout: its raw span).
template <typename T>
class Buffer {
public:
    Buffer(::Blob *b, int64_t pos, int64_t size, bool exchange, bool release_exchange = true)
        : blob_(b), size_(size), release_exchange_(release_exchange) {
        void *p = nullptr;
        check(blob_get_buffer(b, pos, size, exchange, &p));
        ptr_ = static_cast<T *>(p);
    }
    Buffer(const Buffer &) = delete;
    Buffer &operator=(const Buffer &) = delete;
    Buffer(Buffer &&o) noexcept
        : blob_(o.blob_), ptr_(std::exchange(o.ptr_, nullptr)), size_(o.size_), release_exchange_(o.release_exchange_) {}
    Buffer &operator=(Buffer &&) = delete;
    ~Buffer() {
        if (ptr_) blob_release_buffer(blob_, ptr_, release_exchange_);
    }
    T *data() noexcept { return ptr_; }
    int64_t size() const noexcept { return size_; }
    T &operator[](int64_t i) noexcept { return ptr_[i]; }
    T *begin() noexcept { return ptr_; }
    T *end() noexcept { return ptr_ + size_; }

private:
    ::Blob *blob_;
    T *ptr_ = nullptr;
    int64_t size_;
    bool release_exchange_;
};

/// Bytes handed out by libblob (blob_to_*_bytes), copied into a vector.
inline std::vector<uint8_t> take_bytes(uint8_t *p, size_t n) {
    std::vector<uint8_t> v;
    try {
        v.assign(p, p + n);
    } catch (...) {
        blob_bytes_free(p);
        throw;
    }
    check(blob_bytes_free(p));
    return v;
}

/// An owning DLPack 0.x export: the destructor calls the deleter unless
/// release() gave the tensor to a consumer (who then calls it).
class DLPackLegacyTensor {
public:
    explicit DLPackLegacyTensor(DLManagedTensor *t) noexcept : t_(t) {}
    DLPackLegacyTensor(DLPackLegacyTensor &&o) noexcept : t_(std::exchange(o.t_, nullptr)) {}
    DLPackLegacyTensor &operator=(DLPackLegacyTensor &&o) noexcept {
        if (this != &o) {
            reset();
            t_ = std::exchange(o.t_, nullptr);
        }
        return *this;
    }
    DLPackLegacyTensor(const DLPackLegacyTensor &) = delete;
    DLPackLegacyTensor &operator=(const DLPackLegacyTensor &) = delete;
    ~DLPackLegacyTensor() { reset(); }
    DLManagedTensor *get() const noexcept { return t_; }
    const DLTensor &tensor() const noexcept { return t_->dl_tensor; }
    /// Hands the tensor over (e.g. to at::fromDLPack); this object forgets it.
    DLManagedTensor *release() noexcept { return std::exchange(t_, nullptr); }

private:
    void reset() noexcept {
        if (t_ && t_->deleter) t_->deleter(t_);
        t_ = nullptr;
    }
    DLManagedTensor *t_;
};

#ifdef DLPACK_MAJOR_VERSION
/// An owning DLPack 1.x export (see DLPackLegacyTensor).
class DLPackTensor {
public:
    explicit DLPackTensor(DLManagedTensorVersioned *t) noexcept : t_(t) {}
    DLPackTensor(DLPackTensor &&o) noexcept : t_(std::exchange(o.t_, nullptr)) {}
    DLPackTensor &operator=(DLPackTensor &&o) noexcept {
        if (this != &o) {
            reset();
            t_ = std::exchange(o.t_, nullptr);
        }
        return *this;
    }
    DLPackTensor(const DLPackTensor &) = delete;
    DLPackTensor &operator=(const DLPackTensor &) = delete;
    ~DLPackTensor() { reset(); }
    DLManagedTensorVersioned *get() const noexcept { return t_; }
    const DLTensor &tensor() const noexcept { return t_->dl_tensor; }
    bool read_only() const noexcept { return (t_->flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0; }
    /// Hands the tensor over to a consumer; this object forgets it.
    DLManagedTensorVersioned *release() noexcept { return std::exchange(t_, nullptr); }

private:
    void reset() noexcept {
        if (t_ && t_->deleter) t_->deleter(t_);
        t_ = nullptr;
    }
    DLManagedTensorVersioned *t_;
};
#endif

/// OpenVINO's BlockingDesc of a blob, read back (blob_desc_blocking).
struct Blocking {
    std::vector<int64_t> blk_dims, order, strides, dim_offsets;
    int64_t offset_padding = 0;
};

/// An owning, move-only blob handle.
class Blob {
public:
    /// Takes ownership of a handle from the C API.
    explicit Blob(::Blob *h) noexcept : h_(h) {}
    Blob(Blob &&o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
    Blob &operator=(Blob &&o) noexcept {
        if (this != &o) {
            reset();
            h_ = std::exchange(o.h_, nullptr);
        }
        return *this;
    }
    Blob(const Blob &) = delete;
    Blob &operator=(const Blob &) = delete;
    ~Blob() { reset(); }

    // ------------------------------------------------------------ creation
    static Blob tensor(int32_t dtype, const std::vector<int64_t> &dims, const Engine *e = nullptr) {
        return make([&](::Blob **o) { return blob_create_tensor(eng(e), dtype, dims.data(), dims.size(), o); });
    }
    static Blob vector(int32_t dtype, int64_t n, const Engine *e = nullptr) {
        return make([&](::Blob **o) { return blob_create_vector(eng(e), dtype, n, o); });
    }
    static Blob matrix(int32_t dtype, int64_t height, int64_t width, const Engine *e = nullptr) {
        return make([&](::Blob **o) { return blob_create_matrix(eng(e), dtype, height, width, o); });
    }
    /// NeoML CreateDataBlob: rank 7 (BatchLength, BatchWidth, Channels).
    static Blob data(int32_t dtype, int64_t bl, int64_t bw, int64_t channels, const Engine *e = nullptr) {
        return make([&](::Blob **o) { return blob_create_data(eng(e), dtype, bl, bw, channels, o); });
    }
    static Blob list(int32_t dtype, int64_t bl, int64_t bw, int64_t list_size, int64_t channels, const Engine *e = nullptr) {
        return make([&](::Blob **o) { return blob_create_list(eng(e), dtype, bl, bw, list_size, channels, o); });
    }
    static Blob image2d(int32_t dtype, int64_t bl, int64_t bw, int64_t h, int64_t w, int64_t c, const Engine *e = nullptr) {
        return make([&](::Blob **o) { return blob_create_image2d(eng(e), dtype, bl, bw, h, w, c, o); });
    }
    static Blob image3d(int32_t dtype, int64_t bl, int64_t bw, int64_t h, int64_t w, int64_t d, int64_t c,
                        const Engine *e = nullptr) {
        return make([&](::Blob **o) { return blob_create_image3d(eng(e), dtype, bl, bw, h, w, d, c, o); });
    }
    /// A dense blob over the shared memory file `fd` (duplicated: close
    /// yours when done), `offset` bytes in: what shared_fd() gave another
    /// process. Writes on either side are seen on the other.
    static Blob from_shared_fd(int32_t dtype, const std::vector<int64_t> &dims, int fd, uint64_t offset,
                               const Engine *e = nullptr) {
        return make([&](::Blob **o) { return blob_from_shared_fd(eng(e), dtype, dims.data(), dims.size(), fd, offset, o); });
    }
    /// Serrano's repeating value / numpy.full.
    static Blob full(int32_t dtype, const std::vector<int64_t> &dims, double value, const Engine *e = nullptr) {
        return make([&](::Blob **o) { return blob_create_full(eng(e), dtype, dims.data(), dims.size(), value, o); });
    }
    /// A blob in a named layout (BLOB_LAYOUT_*, e.g. NHWC).
    static Blob with_layout(int32_t dtype, const std::vector<int64_t> &dims, int32_t layout, const Engine *e = nullptr) {
        return make([&](::Blob **o) { return blob_create_layout(eng(e), dtype, dims.data(), dims.size(), layout, o); });
    }
    /// A blob with OpenVINO's blocking (blocked dims in `order`), optionally
    /// with offset padding, per-dim offsets and explicit strides (empty: none).
    static Blob with_blocking(int32_t dtype, const std::vector<int64_t> &dims, const std::vector<int64_t> &blk_dims,
                              const std::vector<int64_t> &order, int64_t offset_padding = 0,
                              const std::vector<int64_t> &dim_offsets = {}, const std::vector<int64_t> &strides = {},
                              const Engine *e = nullptr) {
        return make([&](::Blob **o) {
            return blob_create_desc_strided(eng(e), dtype, dims.data(), dims.size(), blk_dims.data(), order.data(),
                                            blk_dims.size(), offset_padding,
                                            dim_offsets.empty() ? nullptr : dim_offsets.data(),
                                            strides.empty() ? nullptr : strides.data(), o);
        });
    }
    /// Shares caller memory (see blob_wrap): `release(ctx)` runs once at the last user.
    static Blob wrap(int32_t dtype, const std::vector<int64_t> &dims, void *data, size_t byte_len,
                     void (*release)(void *) = nullptr, void *ctx = nullptr, const Engine *e = nullptr) {
        return make([&](::Blob **o) { return blob_wrap(eng(e), dtype, dims.data(), dims.size(), data, byte_len, release, ctx, o); });
    }
    /// Shares caller memory the blob may only read (see blob_wrap_read_only).
    static Blob wrap_read_only(int32_t dtype, const std::vector<int64_t> &dims, const void *data, size_t byte_len,
                               void (*release)(void *) = nullptr, void *ctx = nullptr, const Engine *e = nullptr) {
        return make([&](::Blob **o) {
            return blob_wrap_read_only(eng(e), dtype, dims.data(), dims.size(), data, byte_len, release, ctx, o);
        });
    }

    // --------------------------------------------------------------- files
    static Blob load_caffe(const std::string &path, const Engine *e = nullptr) {
        return make([&](::Blob **o) { return blob_load_caffe(eng(e), path.c_str(), o); });
    }
    static Blob load_neoml(const std::string &path, const Engine *e = nullptr) {
        return make([&](::Blob **o) { return blob_load_neoml(eng(e), path.c_str(), o); });
    }
    static Blob load_npy(const std::string &path, const Engine *e = nullptr) {
        return make([&](::Blob **o) { return blob_load_npy(eng(e), path.c_str(), o); });
    }
    /// numpy.load(path, mmap_mode): "r" (read-only), "r+" (shared), "c" (copy-on-write).
    static Blob load_npy_mapped(const std::string &path, const std::string &mode, const Engine *e = nullptr) {
        return make([&](::Blob **o) { return blob_load_npy_mapped(eng(e), path.c_str(), mode.c_str(), o); });
    }
    static Blob from_caffe_bytes(const std::vector<uint8_t> &bytes, const Engine *e = nullptr) {
        return make([&](::Blob **o) { return blob_from_caffe_bytes(eng(e), bytes.data(), bytes.size(), o); });
    }
    static Blob from_neoml_bytes(const std::vector<uint8_t> &bytes, const Engine *e = nullptr) {
        return make([&](::Blob **o) { return blob_from_neoml_bytes(eng(e), bytes.data(), bytes.size(), o); });
    }
    static Blob from_npy_bytes(const std::vector<uint8_t> &bytes, const Engine *e = nullptr) {
        return make([&](::Blob **o) { return blob_from_npy_bytes(eng(e), bytes.data(), bytes.size(), o); });
    }
    /// Caffe FromProto into this blob (reshape, or require equal shapes).
    void load_caffe_into(const std::string &path, bool reshape = true) const {
        check(blob_load_caffe_into(h_, path.c_str(), reshape));
    }
    void save_caffe(const std::string &path, bool write_diff = false) const {
        check(blob_save_caffe(h_, path.c_str(), write_diff));
    }
    /// form: BLOB_NEOML_BLOB (SerializeBlob) or BLOB_NEOML_SERIALIZE (neoml.Blob.load's).
    void save_neoml(const std::string &path, int32_t form = BLOB_NEOML_BLOB) const {
        check(blob_save_neoml_form(h_, path.c_str(), form));
    }
    void save_npy(const std::string &path) const { check(blob_save_npy(h_, path.c_str())); }
    std::vector<uint8_t> to_caffe_bytes(bool write_diff = false) const {
        uint8_t *p = nullptr;
        size_t n = 0;
        check(blob_to_caffe_bytes(h_, write_diff, &p, &n));
        return take_bytes(p, n);
    }
    std::vector<uint8_t> to_neoml_bytes(int32_t form = BLOB_NEOML_BLOB) const {
        uint8_t *p = nullptr;
        size_t n = 0;
        check(blob_to_neoml_bytes_form(h_, form, &p, &n));
        return take_bytes(p, n);
    }
    std::vector<uint8_t> to_npy_bytes() const {
        uint8_t *p = nullptr;
        size_t n = 0;
        check(blob_to_npy_bytes(h_, &p, &n));
        return take_bytes(p, n);
    }

    // -------------------------------------------------------------- DLPack
#ifdef DLPACK_MAJOR_VERSION
    /// A DLPack 1.x export sharing the memory; `flags` 0 or DLPACK_FLAG_BITMASK_READ_ONLY.
    DLPackTensor to_dlpack(uint32_t flags = 0) const {
        DLManagedTensorVersioned *t = nullptr;
        check(blob_to_dlpack(h_, flags, &t));
        return DLPackTensor(t);
    }
    /// Imports a DLPack 1.x tensor: on success the blob owns it (its
    /// deleter runs once, at the last user); on error (thrown) the caller
    /// still owns it.
    static Blob from_dlpack(DLManagedTensorVersioned *t, const Engine *e = nullptr) {
        return make([&](::Blob **o) { return blob_from_dlpack(eng(e), t, o); });
    }
    /// Imports an owning export, taking it over only on success.
    static Blob from_dlpack(DLPackTensor &&t, const Engine *e = nullptr) {
        Blob b = from_dlpack(t.get(), e);
        t.release();
        return b;
    }
#endif
    /// A legacy (DLPack 0.x) export sharing the memory.
    DLPackLegacyTensor to_dlpack_legacy() const {
        DLManagedTensor *t = nullptr;
        check(blob_to_dlpack_legacy(h_, &t));
        return DLPackLegacyTensor(t);
    }
    /// Imports a legacy tensor (ownership as from_dlpack).
    static Blob from_dlpack_legacy(DLManagedTensor *t, const Engine *e = nullptr) {
        return make([&](::Blob **o) { return blob_from_dlpack_legacy(eng(e), t, o); });
    }
    static Blob from_dlpack_legacy(DLPackLegacyTensor &&t, const Engine *e = nullptr) {
        Blob b = from_dlpack_legacy(t.get(), e);
        t.release();
        return b;
    }

    // ------------------------------------------------------------- queries
    ::Blob *get() const noexcept { return h_; }
    int32_t dtype() const { return query<int32_t>(blob_dtype); }
    size_t rank() const { return query<size_t>(blob_rank); }
    std::vector<int64_t> dims() const {
        std::vector<int64_t> d(rank());
        check(blob_dims(h_, d.data(), d.size()));
        return d;
    }
    int64_t dim(int32_t axis) const {
        int64_t n = 0;
        check(blob_dim(h_, axis, &n));
        return n;
    }
    /// A NeoML named dim (BLOB_DIM_*): 1 beyond the rank.
    int64_t named_dim(int32_t blob_dim) const {
        int64_t n = 0;
        check(blob_named_dim(h_, blob_dim, &n));
        return n;
    }
    int64_t size() const { return query<int64_t>(blob_data_size); }
    int64_t object_count() const { return query<int64_t>(blob_object_count); }
    int64_t object_size() const { return query<int64_t>(blob_object_size); }
    int64_t geometrical_size() const { return query<int64_t>(blob_geometrical_size); }
    int64_t capacity() const { return query<int64_t>(blob_capacity); }
    int64_t raw_count() const { return query<int64_t>(blob_raw_count); }
    int32_t layout() const { return query<int32_t>(blob_layout); }
    /// BLOB_HEAD_*: where the current data lives (Caffe's SyncedMemory head).
    int32_t head() const { return query<int32_t>(blob_head); }
    bool is_writable() const { return query<bool>(blob_is_writable); }
    /// Whether the memory is a shared memory file other processes can map.
    bool is_shared() const { return query<bool>(blob_is_shared); }
    /// Moves the memory into shared memory in place (torch's share_memory_()).
    void share_memory() { check(blob_share_memory(h_)); }
    /// A new descriptor of a dense shared blob's memory file (yours to
    /// close) and the byte offset of its element 0, for from_shared_fd.
    std::pair<int, uint64_t> shared_fd() const {
        int fd = -1;
        uint64_t offset = 0;
        check(blob_shared_fd(h_, &fd, &offset));
        return {fd, offset};
    }
    /// NeoML HasEqualDimensions: the 7 padded named dims are equal.
    bool has_equal_dims(const Blob &o) const {
        bool eq = false;
        check(blob_has_equal_dims(h_, o.h_, &eq));
        return eq;
    }
    /// Serrano's shape equality (exact dims), with or without the dtype.
    bool same_shape(const Blob &o, bool with_dtype = true) const {
        bool eq = false;
        check(blob_same_shape(h_, o.h_, with_dtype, &eq));
        return eq;
    }
    /// numpy.shares_memory: some byte is an element of both, however each
    /// reaches it (views, or memory wrapped with blob_wrap). Exact.
    bool shares_memory(const Blob &o) const {
        bool s = false;
        check(blob_shares_memory(h_, o.h_, &s));
        return s;
    }
    /// numpy.may_share_memory: the bounds of the two blobs' memory meet.
    bool may_share_memory(const Blob &o) const {
        bool s = false;
        check(blob_may_share_memory(h_, o.h_, &s));
        return s;
    }
    /// Caffe count(start, end) and count(start).
    int64_t count_range(int32_t start, int32_t end) const {
        int64_t n = 0;
        check(blob_count_range(h_, start, end, &n));
        return n;
    }
    int64_t count_from(int32_t start) const {
        int64_t n = 0;
        check(blob_count_from(h_, start, &n));
        return n;
    }
    int32_t canonical_axis(int32_t axis) const {
        int32_t a = 0;
        check(blob_canonical_axis(h_, axis, &a));
        return a;
    }
    /// Caffe offset(indices) (row-major, in elements).
    int64_t offset(const std::vector<int64_t> &idx) const {
        int64_t o = 0;
        check(blob_offset(h_, idx.data(), idx.size(), &o));
        return o;
    }
    int64_t legacy_shape(int32_t i) const {
        int64_t n = 0;
        check(blob_legacy_shape(h_, i, &n));
        return n;
    }
    /// Caffe's offset(n, c, h, w) and data_at / diff_at on the legacy shape.
    int64_t legacy_offset(int64_t n, int64_t c = 0, int64_t h = 0, int64_t w = 0) const {
        int64_t o = 0;
        check(blob_legacy_offset(h_, n, c, h, w, &o));
        return o;
    }
    double data_at(int64_t n, int64_t c = 0, int64_t h = 0, int64_t w = 0) const {
        double v = 0;
        check(blob_data_at(h_, n, c, h, w, &v));
        return v;
    }
    double diff_at(int64_t n, int64_t c = 0, int64_t h = 0, int64_t w = 0) const {
        double v = 0;
        check(blob_diff_at(h_, n, c, h, w, &v));
        return v;
    }
    /// Caffe's ShapeEquals for serialized BlobProto bytes.
    bool shape_equals(const std::vector<uint8_t> &proto) const {
        bool eq = false;
        check(blob_shape_equals(h_, proto.data(), proto.size(), &eq));
        return eq;
    }
    /// Caffe's shape_string(): "64 3 28 28 (150528)".
    std::string shape_string() const {
        size_t n = 0;
        check(blob_shape_string(h_, nullptr, 0, &n));
        std::string s(n + 1, '\0');
        check(blob_shape_string(h_, s.data(), s.size(), &n));
        s.resize(n);
        return s;
    }
    /// OpenVINO offset(v) / offset(l) through the blob's layout.
    int64_t desc_offset(const std::vector<int64_t> &idx) const {
        int64_t o = 0;
        check(blob_desc_offset(h_, idx.data(), idx.size(), &o));
        return o;
    }
    int64_t desc_offset_linear(int64_t l) const {
        int64_t o = 0;
        check(blob_desc_offset_linear(h_, l, &o));
        return o;
    }
    /// The blob's BlockingDesc.
    Blocking blocking() const {
        size_t n = 0;
        check(blob_desc_blocking(h_, 0, nullptr, nullptr, nullptr, nullptr, &n, nullptr));
        Blocking b;
        b.blk_dims.resize(n);
        b.order.resize(n);
        b.strides.resize(n);
        b.dim_offsets.resize(n);
        check(blob_desc_blocking(h_, n, b.blk_dims.data(), b.order.data(), b.strides.data(), b.dim_offsets.data(), &n,
                                 &b.offset_padding));
        return b;
    }
    /// The blob's engine.
    Engine engine() const {
        ::BlobEngine *e = nullptr;
        check(blob_engine(h_, &e));
        return Engine(e);
    }

    // ----------------------------------------------------- shape and copies
    void reshape(const std::vector<int64_t> &dims) { check(blob_reshape(h_, dims.data(), dims.size())); }
    void reinterpret(const std::vector<int64_t> &dims) { check(blob_reinterpret(h_, dims.data(), dims.size())); }
    /// NeoML CopyFrom(Blob): same dims and dtype, any layouts.
    void copy_from(const Blob &src) { check(blob_copy_from(h_, src.h_)); }
    /// Caffe's CopyFrom(source, copy_diff, reshape).
    void copy_from_caffe(const Blob &src, bool copy_diff = false, bool reshape = false) {
        check(blob_copy_from_blob(h_, src.h_, copy_diff, reshape));
    }
    /// Caffe's ShareData / ShareDiff.
    void share_data(const Blob &other) { check(blob_share_data(h_, other.h_)); }
    void share_diff(const Blob &other) { check(blob_share_diff(h_, other.h_)); }
    /// Converts between layouts (OpenVINO reorder): same dims and dtype.
    void reorder_from(const Blob &src) { check(blob_reorder(h_, src.h_)); }
    void transpose_from(const Blob &src, int32_t d1, int32_t d2) { check(blob_transpose_from(h_, src.h_, d1, d2)); }
    /// NeoML TransposeFrom by named dims (BLOB_DIM_*).
    void transpose_from_dims(const Blob &src, int32_t d1, int32_t d2) {
        check(blob_transpose_from_dims(h_, src.h_, d1, d2));
    }
    /// Writes numpy.transpose(src, axes) into this blob (any layout).
    void permute_from(const Blob &src, const std::vector<int32_t> &axes) {
        check(blob_permute_from(h_, src.h_, axes.data(), axes.size()));
    }
    Blob copy() const { return derive(blob_copy); }
    /// NeoML GetClone: same dims, reading as zeros (optionally another dtype).
    Blob clone() const { return derive(blob_clone); }
    Blob clone_as(int32_t dtype) const {
        return make([&](::Blob **o) { return blob_clone_as(h_, dtype, o); });
    }
    Blob transposed(int32_t d1, int32_t d2) const {
        return make([&](::Blob **o) { return blob_transposed(h_, d1, d2, o); });
    }
    /// NeoML GetTransposed by named dims (BLOB_DIM_*), on the 7 padded dims.
    Blob transposed_dims(int32_t d1, int32_t d2) const {
        return make([&](::Blob **o) { return blob_transposed_dims(h_, d1, d2, o); });
    }
    /// numpy.transpose(b, axes) as a new dense blob (negative axes count from the end).
    Blob permuted(const std::vector<int32_t> &axes) const {
        return make([&](::Blob **o) { return blob_permute(h_, axes.data(), axes.size(), o); });
    }
    /// A casting copy to `dtype` (NumPy's astype rules).
    Blob cast(int32_t dtype) const {
        return make([&](::Blob **o) { return blob_cast(h_, dtype, o); });
    }
    /// Caffe's diff companion (created on first use).
    Blob diff() const { return derive(blob_diff); }
    template <typename T>
    std::vector<T> to_vector() const {
        std::vector<T> v(static_cast<size_t>(size()));
        check(blob_copy_to_host(h_, v.data(), v.size() * sizeof(T)));
        return v;
    }
    template <typename T>
    void assign(const std::vector<T> &v) {
        check(blob_copy_from_host(h_, v.data(), v.size() * sizeof(T)));
    }
    /// NeoML CopyTo(dst, size): the first `count` elements, dtype-checked.
    template <typename T>
    void copy_to(int32_t dtype, T *dst, size_t count) const {
        check(blob_copy_to(h_, dtype, dst, count));
    }
    /// The first `count` elements from `src`, dtype-checked.
    template <typename T>
    void copy_from_typed(int32_t dtype, const T *src, size_t count) {
        check(blob_copy_from_typed(h_, dtype, src, count));
    }

    // ---------------------------------------------------------- operations
    void add(const Blob &o) { check(blob_add(h_, o.h_)); }
    void clear() { check(blob_clear(h_)); }
    void clear_object(int64_t n) { check(blob_clear_object(h_, n)); }
    void fill(double v) { check(blob_fill(h_, v)); }
    void fill_object(int64_t n, double v) { check(blob_fill_object(h_, n, v)); }
    /// Every element set to `*value`'s bits (one element of `dtype`, the
    /// blob's: int64/uint64 past 2^53 exactly).
    template <typename T>
    void fill_element(int32_t dtype, const T &value) { check(blob_fill_element(h_, dtype, &value)); }
    template <typename T>
    void fill_object_element(int64_t n, int32_t dtype, const T &value) {
        check(blob_fill_object_element(h_, n, dtype, &value));
    }
    void scale(double v) { check(blob_scale(h_, v)); }
    /// Caffe Update: data -= diff.
    void update() { check(blob_update(h_)); }
    double asum() const { return query<double>(blob_asum); }
    double sumsq() const { return query<double>(blob_sumsq); }

    // --------------------------------------------------------------- views
    /// NeoML CreateWindowBlob (default size 1).
    Blob window(int64_t size = 1) const {
        return make([&](::Blob **o) { return blob_create_window(h_, size, o); });
    }
    /// Serrano's slice by leading indices.
    Blob slice(const std::vector<int64_t> &idx) const {
        return make([&](::Blob **o) { return blob_slice(h_, idx.data(), idx.size(), o); });
    }
    /// OpenVINO's region (ROI) view of [begin, end).
    Blob region(const std::vector<int64_t> &begin, const std::vector<int64_t> &end) const {
        if (begin.size() != end.size()) throw Error(BLOB_ERR_INVALID_ARGUMENT, "region: begin and end differ in length");
        return make([&](::Blob **o) { return blob_region(h_, begin.data(), end.data(), begin.size(), o); });
    }
    /// The raw memory span as a 1-D blob (OpenVINO buffer()).
    Blob raw() const { return derive(blob_raw); }
    Blob parent() const { return derive(blob_parent); }
    Blob owner() const { return derive(blob_owner); }
    int64_t parent_pos() const { return query<int64_t>(blob_parent_pos); }
    void set_parent_pos(int64_t pos) { check(blob_set_parent_pos(h_, pos)); }
    void shift_parent_pos(int64_t shift) { check(blob_shift_parent_pos(h_, shift)); }
    /// A held buffer (NeoML GetBuffer/ReleaseBuffer with both exchange flags).
    template <typename T>
    Buffer<T> buffer(int64_t pos, int64_t size, bool exchange = true, bool release_exchange = true) {
        return Buffer<T>(h_, pos, size, exchange, release_exchange);
    }

private:
    static const ::BlobEngine *eng(const Engine *e) noexcept { return e ? e->get() : nullptr; }
    template <typename F>
    static Blob make(F f) {
        ::Blob *h = nullptr;
        check(f(&h));
        return Blob(h);
    }
    Blob derive(int32_t (*f)(const ::Blob *, ::Blob **)) const {
        ::Blob *h = nullptr;
        check(f(h_, &h));
        return Blob(h);
    }
    template <typename T, typename F>
    T query(F f) const {
        T v{};
        check(f(h_, &v));
        return v;
    }
    void reset() noexcept {
        if (h_) blob_free(h_);
        h_ = nullptr;
    }
    ::Blob *h_;
};

namespace detail {
inline std::vector<const ::Blob *> handles(const std::vector<const Blob *> &v) {
    std::vector<const ::Blob *> hs;
    for (const Blob *p : v) hs.push_back(p->get());
    return hs;
}
inline std::vector< ::Blob *> handles(const std::vector<Blob *> &v) {
    std::vector< ::Blob *> hs;
    for (Blob *p : v) hs.push_back(p->get());
    return hs;
}

/// A load's progress callback behind the C one: an exception it throws is
/// kept (so it never crosses the library), cancels the load, and is
/// rethrown once the load has returned.
struct Progress {
    const std::function<bool(uint64_t, uint64_t)> &f;
    std::exception_ptr error;
    static bool call(uint64_t done, uint64_t total, void *user) noexcept {
        auto *p = static_cast<Progress *>(user);
        try {
            return p->f(done, total);
        } catch (...) {
            p->error = std::current_exception();
            return false;
        }
    }
    BlobProgressFn fn() const { return f ? &Progress::call : nullptr; }
    void finish(int32_t status) const {
        if (error) std::rethrow_exception(error);
        check(status);
    }
};
}  // namespace detail

/// Merges `parts` into `to` along `axis` (numpy.concatenate).
inline void merge(const std::vector<const Blob *> &parts, int32_t axis, Blob &to) {
    auto hs = detail::handles(parts);
    check(blob_merge(hs.data(), hs.size(), axis, to.get()));
}
/// Splits `from` into `parts` along `axis`.
inline void split(const Blob &from, int32_t axis, const std::vector<Blob *> &parts) {
    auto hs = detail::handles(parts);
    check(blob_split(from.get(), axis, hs.data(), hs.size()));
}
/// Merges `parts` into `to` along a named dim (BLOB_DIM_*), every blob
/// padded to 7 named dims (NeoML MergeByDim).
inline void merge_dim(const std::vector<const Blob *> &parts, int32_t blob_dim, Blob &to) {
    auto hs = detail::handles(parts);
    check(blob_merge_dim(hs.data(), hs.size(), blob_dim, to.get()));
}
/// Splits `from` into `parts` along a named dim (NeoML SplitByDim).
inline void split_dim(const Blob &from, int32_t blob_dim, const std::vector<Blob *> &parts) {
    auto hs = detail::handles(parts);
    check(blob_split_dim(from.get(), blob_dim, hs.data(), hs.size()));
}
/// NeoML MergeByObject / SplitByObject.
inline void merge_objects(const std::vector<const Blob *> &parts, Blob &to) {
    auto hs = detail::handles(parts);
    check(blob_merge_objects(hs.data(), hs.size(), to.get()));
}
inline void split_objects(const Blob &from, const std::vector<Blob *> &parts) {
    auto hs = detail::handles(parts);
    check(blob_split_objects(from.get(), hs.data(), hs.size()));
}
/// Caffe BlobProtoVector files.
inline void save_caffe_vector(const std::vector<const Blob *> &blobs, const std::string &path, bool write_diff = false) {
    auto hs = detail::handles(blobs);
    check(blob_save_caffe_vector(hs.data(), hs.size(), path.c_str(), write_diff));
}
inline std::vector<Blob> load_caffe_vector(const std::string &path, const Engine *e = nullptr) {
    size_t n = 0;
    const ::BlobEngine *eh = e ? e->get() : nullptr;
    // Asking with no room gives the count (BLOB_ERR_OUT_OF_RANGE when > 0).
    int32_t st = blob_load_caffe_vector(eh, path.c_str(), nullptr, 0, &n);
    if (st != BLOB_ERR_OUT_OF_RANGE) check(st);
    std::vector< ::Blob *> hs(n, nullptr);
    std::vector<Blob> out;
    out.reserve(n);  // nothing below throws once the handles exist
    check(blob_load_caffe_vector(eh, path.c_str(), hs.data(), hs.size(), &n));
    for (::Blob *h : hs) out.emplace_back(h);
    return out;
}

/// An ordered map of names to blobs with string metadata: a safetensors
/// file (one blob per tensor) or a Caffe .caffemodel (a layer's weights,
/// bias, ...). Owns a BlobMap handle. Strings it returns are copies.
class BlobMap {
public:
    /// An empty map.
    BlobMap() { check(blob_map_create(&h_)); }
    /// Takes ownership of a handle from the C API.
    explicit BlobMap(::BlobMap *h) noexcept : h_(h) {}
    BlobMap(BlobMap &&o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
    BlobMap &operator=(BlobMap &&o) noexcept {
        if (this != &o) {
            reset();
            h_ = std::exchange(o.h_, nullptr);
        }
        return *this;
    }
    BlobMap(const BlobMap &) = delete;
    BlobMap &operator=(const BlobMap &) = delete;
    ~BlobMap() { reset(); }

    /// Loads a safetensors file: memory-mapped read-only views (`mmap`) or
    /// fresh writable blobs.
    static BlobMap load_safetensors(const std::string &path, bool mmap = true, const Engine *e = nullptr) {
        ::BlobMap *h = nullptr;
        check(blob_load_safetensors(e ? e->get() : nullptr, path.c_str(), mmap, &h));
        return BlobMap(h);
    }
    /// Loads a GGUF file's tensors (block-quantized ones as uint8 blocks).
    static BlobMap load_gguf(const std::string &path, bool mmap = true, bool dequantize = false, const Engine *e = nullptr) {
        ::BlobMap *h = nullptr;
        check(blob_load_gguf(e ? e->get() : nullptr, path.c_str(), mmap, dequantize, &h));
        return BlobMap(h);
    }
    /// Loads the learned blobs of a Caffe .caffemodel (layer -> blobs).
    static BlobMap load_caffemodel(const std::string &path, const Engine *e = nullptr) {
        ::BlobMap *h = nullptr;
        check(blob_load_caffemodel(e ? e->get() : nullptr, path.c_str(), &h));
        return BlobMap(h);
    }
    /// The loads above telling `progress(done, total)` the bytes read (on
    /// the calling thread; returning false cancels with blob::Error, an
    /// exception it throws is rethrown after the load stops).
    static BlobMap load_safetensors(const std::string &path, bool mmap, const std::function<bool(uint64_t, uint64_t)> &progress, const Engine *e = nullptr) {
        ::BlobMap *h = nullptr;
        detail::Progress p{progress, nullptr};
        p.finish(blob_load_safetensors_progress(e ? e->get() : nullptr, path.c_str(), mmap, p.fn(), &p, &h));
        return BlobMap(h);
    }
    static BlobMap load_gguf(const std::string &path, bool mmap, bool dequantize, const std::function<bool(uint64_t, uint64_t)> &progress, const Engine *e = nullptr) {
        ::BlobMap *h = nullptr;
        detail::Progress p{progress, nullptr};
        p.finish(blob_load_gguf_progress(e ? e->get() : nullptr, path.c_str(), mmap, dequantize, p.fn(), &p, &h));
        return BlobMap(h);
    }
    static BlobMap load_caffemodel(const std::string &path, const std::function<bool(uint64_t, uint64_t)> &progress, const Engine *e = nullptr) {
        ::BlobMap *h = nullptr;
        detail::Progress p{progress, nullptr};
        p.finish(blob_load_caffemodel_progress(e ? e->get() : nullptr, path.c_str(), p.fn(), &p, &h));
        return BlobMap(h);
    }
    void save_safetensors(const std::string &path) const { check(blob_save_safetensors(h_, path.c_str())); }
    /// Saves shards of at most `max_shard_size` bytes plus the index
    /// (`path` ends in `.index.json` or names a directory).
    void save_safetensors_sharded(const std::string &path, uint64_t max_shard_size) const {
        check(blob_save_safetensors_sharded(h_, path.c_str(), max_shard_size));
    }
    void save_caffemodel(const std::string &path) const { check(blob_save_caffemodel(h_, path.c_str())); }
    void save_gguf(const std::string &path) const { check(blob_save_gguf(h_, path.c_str())); }

    size_t size() const { return q<size_t>([&](size_t *o) { return blob_map_len(h_, o); }); }
    std::string name(size_t i) const { return q<const char *>([&](const char **o) { return blob_map_name(h_, i, o); }); }
    std::string kind(size_t i) const { return q<const char *>([&](const char **o) { return blob_map_kind(h_, i, o); }); }
    size_t count(size_t i) const { return q<size_t>([&](size_t *o) { return blob_map_count(h_, i, o); }); }
    /// Blob `j` of entry `i`.
    Blob at(size_t i, size_t j = 0) const {
        ::Blob *b = nullptr;
        check(blob_map_at(h_, i, j, &b));
        return Blob(b);
    }
    /// The single blob named `name`.
    Blob get(const std::string &name) const {
        ::Blob *b = nullptr;
        check(blob_map_get(h_, name.c_str(), &b));
        return Blob(b);
    }
    void insert(const std::string &name, const Blob &b) { check(blob_map_insert(h_, name.c_str(), b.get())); }
    void push(const std::string &name, const Blob &b) { check(blob_map_push(h_, name.c_str(), b.get())); }
    void set_kind(const std::string &name, const std::string &kind) { check(blob_map_set_kind(h_, name.c_str(), kind.c_str())); }
    size_t metadata_size() const { return q<size_t>([&](size_t *o) { return blob_map_metadata_len(h_, o); }); }
    std::pair<std::string, std::string> metadata_at(size_t i) const {
        const char *k = nullptr, *v = nullptr;
        check(blob_map_metadata_at(h_, i, &k, &v));
        return {k, v};
    }
    std::string metadata(const std::string &key) const {
        return q<const char *>([&](const char **o) { return blob_map_metadata_get(h_, key.c_str(), o); });
    }
    void set_metadata(const std::string &key, const std::string &value) {
        check(blob_map_set_metadata(h_, key.c_str(), value.c_str()));
    }
    ::BlobMap *get() const noexcept { return h_; }

private:
    template <typename T, typename F>
    T q(F f) const {
        T v{};
        check(f(&v));
        return v;
    }
    void reset() noexcept {
        if (h_) blob_map_free(h_);
        h_ = nullptr;
    }
    ::BlobMap *h_ = nullptr;
};

}  // namespace blob

#endif  // BLOB_HPP
