// blob.hpp — a small header-only C++17 wrapper over blob.h.
// RAII handles (move-only), errors as blob::Error exceptions carrying the
// status code and message, and a LIFO-safe scope guard for buffers.
#ifndef BLOB_HPP
#define BLOB_HPP

#include <blob.h>

#include <cstdint>
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

/// A buffer held on a blob, released (with exchange) when the scope ends.
/// Nested Buffers release in reverse order, which is exactly the LIFO rule.
template <typename T>
class Buffer {
public:
    Buffer(::Blob *b, int64_t pos, int64_t size, bool exchange) : blob_(b), size_(size) {
        void *p = nullptr;
        check(blob_get_buffer(b, pos, size, exchange, &p));
        ptr_ = static_cast<T *>(p);
    }
    Buffer(const Buffer &) = delete;
    Buffer &operator=(const Buffer &) = delete;
    ~Buffer() { blob_release_buffer(blob_, ptr_, true); }
    T *data() noexcept { return ptr_; }
    int64_t size() const noexcept { return size_; }
    T &operator[](int64_t i) noexcept { return ptr_[i]; }
    T *begin() noexcept { return ptr_; }
    T *end() noexcept { return ptr_ + size_; }

private:
    ::Blob *blob_;
    T *ptr_ = nullptr;
    int64_t size_;
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

    static Blob tensor(int32_t dtype, const std::vector<int64_t> &dims, BlobEngine *e = nullptr) {
        ::Blob *h = nullptr;
        check(blob_create_tensor(e, dtype, dims.data(), dims.size(), &h));
        return Blob(h);
    }
    static Blob data(int32_t dtype, int64_t bl, int64_t bw, int64_t channels, BlobEngine *e = nullptr) {
        ::Blob *h = nullptr;
        check(blob_create_data(e, dtype, bl, bw, channels, &h));
        return Blob(h);
    }
    static Blob image2d(int32_t dtype, int64_t bl, int64_t bw, int64_t h, int64_t w, int64_t c, BlobEngine *e = nullptr) {
        ::Blob *out = nullptr;
        check(blob_create_image2d(e, dtype, bl, bw, h, w, c, &out));
        return Blob(out);
    }

    /// Loads a Caffe BlobProto / NeoML archive / .npy file.
    static Blob load_caffe(const std::string &path, BlobEngine *e = nullptr) {
        ::Blob *out = nullptr;
        check(blob_load_caffe(e, path.c_str(), &out));
        return Blob(out);
    }
    static Blob load_neoml(const std::string &path, BlobEngine *e = nullptr) {
        ::Blob *out = nullptr;
        check(blob_load_neoml(e, path.c_str(), &out));
        return Blob(out);
    }
    static Blob load_npy(const std::string &path, BlobEngine *e = nullptr) {
        ::Blob *out = nullptr;
        check(blob_load_npy(e, path.c_str(), &out));
        return Blob(out);
    }
    /// Decodes a serialized Caffe BlobProto.
    static Blob from_caffe_bytes(const std::vector<uint8_t> &bytes, BlobEngine *e = nullptr) {
        ::Blob *out = nullptr;
        check(blob_from_caffe_bytes(e, bytes.data(), bytes.size(), &out));
        return Blob(out);
    }
    void save_caffe(const std::string &path, bool write_diff = false) const {
        check(blob_save_caffe(h_, path.c_str(), write_diff));
    }
    void save_neoml(const std::string &path) const { check(blob_save_neoml(h_, path.c_str())); }
    void save_npy(const std::string &path) const { check(blob_save_npy(h_, path.c_str())); }
    /// The blob serialized as a Caffe BlobProto (copied out of libblob's buffer).
    std::vector<uint8_t> to_caffe_bytes(bool write_diff = false) const {
        uint8_t *p = nullptr;
        size_t n = 0;
        check(blob_to_caffe_bytes(h_, write_diff, &p, &n));
        std::vector<uint8_t> v(p, p + n);
        check(blob_bytes_free(p));
        return v;
    }

    ::Blob *get() const noexcept { return h_; }
    std::vector<int64_t> dims() const {
        size_t rank = 0;
        check(blob_rank(h_, &rank));
        std::vector<int64_t> d(rank);
        check(blob_dims(h_, d.data(), d.size()));
        return d;
    }
    int64_t size() const {
        int64_t n = 0;
        check(blob_data_size(h_, &n));
        return n;
    }
    Blob window(int64_t size = 1) const {
        ::Blob *w = nullptr;
        check(blob_create_window(h_, size, &w));
        return Blob(w);
    }
    void set_parent_pos(int64_t pos) { check(blob_set_parent_pos(h_, pos)); }
    void fill(double v) { check(blob_fill(h_, v)); }
    void scale(double v) { check(blob_scale(h_, v)); }
    void add(const Blob &o) { check(blob_add(h_, o.h_)); }
    double asum() const {
        double s = 0;
        check(blob_asum(h_, &s));
        return s;
    }
    Blob transposed(int32_t d1, int32_t d2) const {
        ::Blob *t = nullptr;
        check(blob_transposed(h_, d1, d2, &t));
        return Blob(t);
    }
    /// NeoML GetTransposed by named dims (BLOB_DIM_*), on the 7 padded dims.
    Blob transposed_dims(int32_t d1, int32_t d2) const {
        ::Blob *t = nullptr;
        check(blob_transposed_dims(h_, d1, d2, &t));
        return Blob(t);
    }
    /// NeoML TransposeFrom by named dims (BLOB_DIM_*).
    void transpose_from_dims(const Blob &src, int32_t d1, int32_t d2) {
        check(blob_transpose_from_dims(h_, src.h_, d1, d2));
    }
    /// NeoML HasEqualDimensions: the 7 padded named dims are equal.
    bool has_equal_dims(const Blob &o) const {
        bool eq = false;
        check(blob_has_equal_dims(h_, o.h_, &eq));
        return eq;
    }
    /// numpy.transpose(b, axes) as a new dense blob (negative axes count from the end).
    Blob permuted(const std::vector<int32_t> &axes) const {
        ::Blob *t = nullptr;
        check(blob_permute(h_, axes.data(), axes.size(), &t));
        return Blob(t);
    }
    /// Writes numpy.transpose(src, axes) into this blob (any layout).
    void permute_from(const Blob &src, const std::vector<int32_t> &axes) {
        check(blob_permute_from(h_, src.h_, axes.data(), axes.size()));
    }
    /// A casting copy to `dtype` (NumPy's astype rules).
    Blob cast(int32_t dtype) const {
        ::Blob *c = nullptr;
        check(blob_cast(h_, dtype, &c));
        return Blob(c);
    }
    /// False for blobs over memory lent read-only.
    bool is_writable() const {
        bool w = false;
        check(blob_is_writable(h_, &w));
        return w;
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
    /// Caffe's count(start): the product of dims from `start` to the end.
    int64_t count_from(int32_t start) const {
        int64_t n = 0;
        check(blob_count_from(h_, start, &n));
        return n;
    }
    /// Caffe's capacity: elements the memory holds without reallocating.
    int64_t capacity() const {
        int64_t n = 0;
        check(blob_capacity(h_, &n));
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
    /// Caffe's CopyFrom(source, copy_diff, reshape).
    void copy_from_caffe(const Blob &src, bool copy_diff = false, bool reshape = false) {
        check(blob_copy_from_blob(h_, src.h_, copy_diff, reshape));
    }
    /// Caffe's ShareData / ShareDiff.
    void share_data(const Blob &other) { check(blob_share_data(h_, other.h_)); }
    void share_diff(const Blob &other) { check(blob_share_diff(h_, other.h_)); }
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
    template <typename T>
    Buffer<T> buffer(int64_t pos, int64_t size, bool exchange = true) {
        return Buffer<T>(h_, pos, size, exchange);
    }

private:
    void reset() noexcept {
        if (h_) blob_free(h_);
        h_ = nullptr;
    }
    ::Blob *h_;
};

/// Merges `parts` into `to` along `axis` (numpy.concatenate).
inline void merge(const std::vector<const Blob *> &parts, int32_t axis, Blob &to) {
    std::vector<const ::Blob *> hs;
    for (const Blob *p : parts) hs.push_back(p->get());
    check(blob_merge(hs.data(), hs.size(), axis, to.get()));
}

/// Merges `parts` into `to` along a named dim (BLOB_DIM_*), every blob
/// padded to 7 named dims (NeoML MergeByDim).
inline void merge_dim(const std::vector<const Blob *> &parts, int32_t blob_dim, Blob &to) {
    std::vector<const ::Blob *> hs;
    for (const Blob *p : parts) hs.push_back(p->get());
    check(blob_merge_dim(hs.data(), hs.size(), blob_dim, to.get()));
}

/// Splits `from` into `parts` along a named dim (NeoML SplitByDim).
inline void split_dim(const Blob &from, int32_t blob_dim, const std::vector<Blob *> &parts) {
    std::vector< ::Blob *> hs;
    for (Blob *p : parts) hs.push_back(p->get());
    check(blob_split_dim(from.get(), blob_dim, hs.data(), hs.size()));
}

}  // namespace blob

#endif  // BLOB_HPP
