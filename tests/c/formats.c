/* File formats through the C API: the real Caffe and NumPy ImageNet means
 * agree element by element; every format round-trips; in-memory buffers
 * are freed exactly once; bad input is an error that changes nothing.
 *
 *   formats <dir with the Caffe files> <scratch dir>
 */
#include "check.h"
#include <stdlib.h>
#include <string.h>

#define N (3 * 256 * 256)

static char paths[8][1024];

static const char *join(int slot, const char *dir, const char *name) {
    snprintf(paths[slot], sizeof paths[slot], "%s/%s", dir, name);
    return paths[slot];
}

static long file_size(const char *path) {
    FILE *f = fopen(path, "rb");
    long n;
    if (!f) return -1;
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fclose(f);
    return n;
}

/* What a progress callback was told. */
struct progress_log {
    int calls;
    uint64_t last_done, last_total;
    bool rising, cancel;
};

static bool record_progress(uint64_t done, uint64_t total, void *user) {
    struct progress_log *log = user;
    log->rising = log->calls == 0 ? true : log->rising && done > log->last_done && total == log->last_total;
    log->calls++;
    log->last_done = done;
    log->last_total = total;
    return !log->cancel;
}

int main(int argc, char **argv) {
    static float f32[N], g32[N];
    static double f64[N];
    const char *data = argc > 1 ? argv[1] : ".", *scratch = argc > 2 ? argv[2] : ".";
    const char *proto = join(0, data, "imagenet_mean.binaryproto");
    const char *npy = join(1, data, "ilsvrc_2012_mean.npy");
    Blob *mean = NULL, *ref = NULL, *back = NULL, *sentinel = (Blob *)&failures, *out = NULL;
    int64_t dims[4] = {0};
    int32_t dtype = 0;
    size_t len = 0, i, count = 0;
    uint8_t *bytes = NULL;

    /* The legacy BlobProto equals the float64 .npy cast to float32. */
    CHECK(blob_load_caffe(NULL, proto, &mean) == BLOB_OK);
    CHECK(blob_dims(mean, dims, 4) == BLOB_OK && dims[0] == 1 && dims[1] == 3 && dims[2] == 256 && dims[3] == 256);
    CHECK(blob_dtype(mean, &dtype) == BLOB_OK && dtype == BLOB_F32);
    CHECK(blob_load_npy(NULL, npy, &ref) == BLOB_OK);
    CHECK(blob_dtype(ref, &dtype) == BLOB_OK && dtype == BLOB_F64);
    CHECK(blob_copy_to_host(mean, f32, sizeof f32) == BLOB_OK);
    CHECK(blob_copy_to_host(ref, f64, sizeof f64) == BLOB_OK);
    for (i = 0; i < N; i++) {
        if (f32[i] != (float)f64[i]) {
            CHECK(f32[i] == (float)f64[i]);
            break;
        }
    }

    /* In memory: to bytes and back is exact; the buffer frees once. */
    CHECK(blob_to_caffe_bytes(mean, false, &bytes, &len) == BLOB_OK && len > 4 * N);
    CHECK(blob_from_caffe_bytes(NULL, bytes, len, &back) == BLOB_OK);
    CHECK(blob_copy_to_host(back, g32, sizeof g32) == BLOB_OK && memcmp(f32, g32, sizeof f32) == 0);
    blob_free(back);
    back = NULL;
    out = sentinel;
    CHECK(blob_from_caffe_bytes(NULL, bytes, len - 1, &out) == BLOB_ERR_FORMAT && out == sentinel);
    CHECK(blob_from_caffe_bytes(NULL, NULL, 5, &out) == BLOB_ERR_NULL_POINTER && out == sentinel);
    CHECK(blob_from_npy_bytes(NULL, bytes, len, &out) == BLOB_ERR_FORMAT && out == sentinel);
    CHECK(blob_from_neoml_bytes(NULL, bytes, len, &out) == BLOB_ERR_FORMAT && out == sentinel);
    CHECK(blob_bytes_free(bytes) == BLOB_OK);
    CHECK(blob_bytes_free(bytes) == BLOB_ERR_INVALID_HANDLE);
    CHECK(blob_bytes_free((uint8_t *)f32) == BLOB_ERR_INVALID_HANDLE);
    CHECK(blob_bytes_free(NULL) == BLOB_OK);

    /* .npy and NeoML buffers round-trip too. */
    CHECK(blob_to_npy_bytes(ref, &bytes, &len) == BLOB_OK);
    CHECK(blob_from_npy_bytes(NULL, bytes, len, &back) == BLOB_OK);
    CHECK(blob_has_equal_dims(ref, back, &(bool){false}) == BLOB_OK);
    blob_free(back);
    CHECK(blob_bytes_free(bytes) == BLOB_OK);
    CHECK(blob_to_neoml_bytes(ref, &bytes, &len) == BLOB_ERR_DTYPE); /* NeoML has no float64 */
    CHECK(blob_to_neoml_bytes(mean, &bytes, &len) == BLOB_OK && len == 46 + 4 * (size_t)N);
    CHECK(blob_from_neoml_bytes(NULL, bytes, len, &back) == BLOB_OK);
    CHECK(blob_copy_to_host(back, g32, sizeof g32) == BLOB_OK && memcmp(f32, g32, sizeof f32) == 0);
    blob_free(back);
    CHECK(blob_bytes_free(bytes) == BLOB_OK);

    /* Files: save and load each format. */
    CHECK(blob_save_caffe(mean, join(2, scratch, "mean.binaryproto"), true) == BLOB_OK);
    CHECK(blob_load_caffe(NULL, paths[2], &back) == BLOB_OK);
    CHECK(blob_copy_to_host(back, g32, sizeof g32) == BLOB_OK && memcmp(f32, g32, sizeof f32) == 0);
    {
        Blob *d = NULL;
        double s = -1;
        CHECK(blob_diff(back, &d) == BLOB_OK && blob_asum(d, &s) == BLOB_OK && s == 0.0);
        blob_free(d);
    }
    blob_free(back);
    CHECK(blob_save_npy(mean, join(3, scratch, "mean.npy")) == BLOB_OK);
    CHECK(blob_load_npy(NULL, paths[3], &back) == BLOB_OK);
    CHECK(blob_copy_to_host(back, g32, sizeof g32) == BLOB_OK && memcmp(f32, g32, sizeof f32) == 0);
    blob_free(back);
    CHECK(blob_save_neoml(mean, join(4, scratch, "mean.neoml")) == BLOB_OK);
    CHECK(blob_load_neoml(NULL, paths[4], &back) == BLOB_OK);
    CHECK(blob_copy_to_host(back, g32, sizeof g32) == BLOB_OK && memcmp(f32, g32, sizeof f32) == 0);
    blob_free(back);

    /* BlobProtoVector: ask for the count, then load. */
    {
        const Blob *two[2];
        Blob *got[2] = {NULL, NULL};
        two[0] = mean;
        two[1] = ref;
        CHECK(blob_save_caffe_vector(two, 2, join(5, scratch, "two.binaryproto"), false) == BLOB_OK);
        CHECK(blob_load_caffe_vector(NULL, paths[5], NULL, 0, &count) == BLOB_ERR_OUT_OF_RANGE && count == 2);
        CHECK(blob_load_caffe_vector(NULL, paths[5], got, 2, &count) == BLOB_OK && count == 2);
        CHECK(blob_dtype(got[1], &dtype) == BLOB_OK && dtype == BLOB_F64);
        blob_free(got[0]);
        blob_free(got[1]);
        two[1] = NULL;
        CHECK(blob_save_caffe_vector(two, 2, paths[5], false) == BLOB_ERR_NULL_POINTER);
    }

    /* FromProto into an existing blob: shape check or reshape. */
    {
        const int64_t chw[3] = {3, 256, 256}, small[2] = {2, 2};
        Blob *d = NULL, *s = NULL;
        double sum = 0;
        CHECK(blob_create_tensor(NULL, BLOB_F64, chw, 3, &d) == BLOB_OK);
        CHECK(blob_load_caffe_into(d, proto, false) == BLOB_OK);
        CHECK(blob_asum(d, &sum) == BLOB_OK && sum > 0);
        CHECK(blob_create_tensor(NULL, BLOB_F32, small, 2, &s) == BLOB_OK);
        CHECK(blob_fill(s, 7) == BLOB_OK);
        CHECK(blob_load_caffe_into(s, proto, false) == BLOB_ERR_SHAPE);
        CHECK(blob_asum(s, &sum) == BLOB_OK && sum == 28.0);
        CHECK(blob_load_caffe_into(s, proto, true) == BLOB_OK);
        CHECK(blob_dims(s, dims, 4) == BLOB_OK && dims[1] == 3 && dims[3] == 256);
        blob_free(d);
        blob_free(s);
    }

    /* Errors change nothing: a refused save keeps the file, bad paths. */
    {
        const int64_t two[1] = {2};
        Blob *bf = NULL;
        long before = file_size(paths[3]);
        CHECK(blob_create_tensor(NULL, BLOB_BF16, two, 1, &bf) == BLOB_OK);
        CHECK(blob_save_npy(bf, paths[3]) == BLOB_ERR_DTYPE);
        CHECK(strstr(blob_last_error(), "bfloat16") != NULL);
        CHECK(blob_save_caffe(bf, paths[3], false) == BLOB_ERR_DTYPE);
        CHECK(file_size(paths[3]) == before);
        blob_free(bf);
    }
    out = sentinel;
    CHECK(blob_load_npy(NULL, join(6, scratch, "missing.npy"), &out) == BLOB_ERR_IO && out == sentinel);
    CHECK(strstr(blob_last_error(), "missing.npy") != NULL);
    CHECK(blob_load_caffe(NULL, "", &out) == BLOB_ERR_INVALID_ARGUMENT && out == sentinel);
    CHECK(blob_load_neoml(NULL, NULL, &out) == BLOB_ERR_NULL_POINTER && out == sentinel);
    CHECK(blob_load_neoml(NULL, proto, &out) == BLOB_ERR_FORMAT && out == sentinel);
    CHECK(blob_load_npy(NULL, proto, NULL) == BLOB_ERR_NULL_POINTER);
    CHECK(blob_save_npy(mean, join(7, scratch, "no/such/dir/x.npy")) == BLOB_ERR_IO);

    /* .npy memory-mapped: shared writes reach the file; read-only maps refuse writes. */
    {
        static const float four[4] = {1, 2, 3, 4};
        float back4[4] = {0};
        const int64_t d4[1] = {4};
        Blob *v4 = NULL, *m = NULL, *r = NULL;
        bool w = true;
        CHECK(blob_create_tensor(NULL, BLOB_F32, d4, 1, &v4) == BLOB_OK && blob_copy_from_host(v4, four, sizeof four) == BLOB_OK);
        CHECK(blob_save_npy(v4, join(6, scratch, "mapped.npy")) == BLOB_OK);
        CHECK(blob_load_npy_mapped(NULL, paths[6], "r+", &m) == BLOB_OK);
        CHECK(blob_fill(m, 8.0) == BLOB_OK);
        blob_free(m);
        CHECK(blob_load_npy_mapped(NULL, paths[6], "r", &r) == BLOB_OK);
        CHECK(blob_is_writable(r, &w) == BLOB_OK && !w && blob_fill(r, 0.0) == BLOB_ERR_READ_ONLY);
        CHECK(blob_copy_to_host(r, back4, sizeof back4) == BLOB_OK && back4[3] == 8.0f);
        blob_free(r);
        blob_free(v4);
    }

    /* Weight files: a BlobMap saved as safetensors and .caffemodel, loaded
     * back (mapped read-only or read into fresh memory), walked by index and
     * by name; the mapped blob outlives the map handle. */
    {
        static const float six[6] = {1, 2, 3, 4, 5, 6};
        static const double two[2] = {0.5, -1.0};
        float back6[6] = {0};
        double back2[2] = {0};
        const int64_t d23[2] = {2, 3}, d2[1] = {2};
        BlobMap *m = NULL, *l = NULL, *c = NULL, *keep_sentinel = (BlobMap *)&failures;
        Blob *w = NULL, *b = NULL, *got = NULL, *kept = NULL;
        const char *name = NULL, *key = NULL, *value = NULL, *kind = NULL;
        size_t n = 0;
        bool writable = true;
        CHECK(blob_create_tensor(NULL, BLOB_F32, d23, 2, &w) == BLOB_OK && blob_copy_from_host(w, six, sizeof six) == BLOB_OK);
        CHECK(blob_create_tensor(NULL, BLOB_F64, d2, 1, &b) == BLOB_OK && blob_copy_from_host(b, two, sizeof two) == BLOB_OK);
        CHECK(blob_map_create(&m) == BLOB_OK);
        CHECK(blob_map_insert(m, "weight", w) == BLOB_OK && blob_map_insert(m, "bias", b) == BLOB_OK);
        CHECK(blob_map_set_metadata(m, "format", "c") == BLOB_OK);
        CHECK(blob_save_safetensors(m, join(7, scratch, "w.safetensors")) == BLOB_OK);
        /* Mapped: read-only views, in file order (the writer puts 8-byte dtypes first). */
        CHECK(blob_load_safetensors(NULL, paths[7], true, &l) == BLOB_OK);
        CHECK(blob_map_len(l, &n) == BLOB_OK && n == 2);
        CHECK(blob_map_name(l, 0, &name) == BLOB_OK && strcmp(name, "bias") == 0);
        CHECK(blob_map_name(l, 2, &name) == BLOB_ERR_OUT_OF_RANGE && strcmp(name, "bias") == 0);
        CHECK(blob_map_count(l, 1, &n) == BLOB_OK && n == 1);
        CHECK(blob_map_metadata_get(l, "format", &value) == BLOB_OK && strcmp(value, "c") == 0);
        CHECK(blob_map_metadata_len(l, &n) == BLOB_OK && n == 1);
        CHECK(blob_map_metadata_at(l, 0, &key, &value) == BLOB_OK && strcmp(key, "format") == 0);
        CHECK(blob_map_metadata_get(l, "nope", &value) == BLOB_ERR_INVALID_ARGUMENT);
        CHECK(blob_map_get(l, "weight", &kept) == BLOB_OK);
        CHECK(blob_map_get(l, "missing", &got) == BLOB_ERR_INVALID_ARGUMENT && got == NULL);
        CHECK(blob_map_free(l) == BLOB_OK && blob_map_free(l) == BLOB_ERR_INVALID_HANDLE);
        CHECK(blob_is_writable(kept, &writable) == BLOB_OK && !writable && blob_fill(kept, 0.0) == BLOB_ERR_READ_ONLY);
        CHECK(blob_copy_to_host(kept, back6, sizeof back6) == BLOB_OK && memcmp(back6, six, sizeof six) == 0);
        blob_free(kept);
        /* Read into fresh memory: writable. */
        CHECK(blob_load_safetensors(NULL, paths[7], false, &l) == BLOB_OK);
        CHECK(blob_map_at(l, 0, 0, &got) == BLOB_OK && blob_is_writable(got, &writable) == BLOB_OK && writable);
        CHECK(blob_copy_to_host(got, back2, sizeof back2) == BLOB_OK && memcmp(back2, two, sizeof two) == 0);
        CHECK(blob_map_at(l, 0, 1, &kept) == BLOB_ERR_OUT_OF_RANGE);
        blob_free(got);
        blob_map_free(l);
        /* With a progress callback: told (done, total) bytes, ending at
         * (40, 40); returning false cancels (BLOB_ERR_IO, nothing out). */
        {
            struct progress_log log = {0};
            CHECK(blob_load_safetensors_progress(NULL, paths[7], false, record_progress, &log, &l) == BLOB_OK);
            CHECK(log.calls >= 1 && log.last_done == 40 && log.last_total == 40 && log.rising);
            blob_map_free(l);
            log = (struct progress_log){0};
            CHECK(blob_load_safetensors_progress(NULL, paths[7], true, record_progress, &log, &l) == BLOB_OK);
            CHECK(log.calls == 1 && log.last_done == 40);
            blob_map_free(l);
            log = (struct progress_log){.cancel = true};
            CHECK(blob_load_safetensors_progress(NULL, paths[7], false, record_progress, &log, &keep_sentinel) == BLOB_ERR_IO);
            CHECK(keep_sentinel == (BlobMap *)&failures && log.calls == 1);
            CHECK(blob_load_safetensors_progress(NULL, paths[7], false, NULL, NULL, &l) == BLOB_OK);
            blob_map_free(l);
        }
        /* Sharded: 8-byte shards put each tensor in a shard of its own; the
         * index loads them back in the map's order. */
        CHECK(blob_save_safetensors_sharded(m, join(7, scratch, "w.safetensors.index.json"), 8) == BLOB_OK);
        CHECK(blob_load_safetensors(NULL, paths[7], true, &l) == BLOB_OK);
        CHECK(blob_map_len(l, &n) == BLOB_OK && n == 2);
        CHECK(blob_map_name(l, 0, &name) == BLOB_OK && strcmp(name, "weight") == 0);
        CHECK(blob_map_metadata_get(l, "total_size", &value) == BLOB_OK && strcmp(value, "40") == 0);
        CHECK(blob_map_get(l, "bias", &got) == BLOB_OK);
        CHECK(blob_copy_to_host(got, back2, sizeof back2) == BLOB_OK && memcmp(back2, two, sizeof two) == 0);
        blob_free(got);
        blob_map_free(l);
        CHECK(blob_load_safetensors(NULL, join(7, scratch, "w-00002-of-00002.safetensors"), false, &l) == BLOB_OK);
        CHECK(blob_map_len(l, &n) == BLOB_OK && n == 1);
        blob_map_free(l);
        CHECK(blob_save_safetensors_sharded(m, join(7, scratch, "w.safetensors"), 8) == BLOB_ERR_INVALID_ARGUMENT);
        /* GGUF: written and read back, mapped and eager. */
        CHECK(blob_save_gguf(m, join(7, scratch, "w.gguf")) == BLOB_OK);
        CHECK(blob_load_gguf(NULL, paths[7], true, false, &l) == BLOB_OK);
        CHECK(blob_map_len(l, &n) == BLOB_OK && n == 2);
        CHECK(blob_map_get(l, "weight", &got) == BLOB_OK);
        CHECK(blob_copy_to_host(got, back6, sizeof back6) == BLOB_OK && memcmp(back6, six, sizeof six) == 0);
        blob_free(got);
        blob_map_free(l);
        CHECK(blob_load_gguf(NULL, paths[7], false, true, &l) == BLOB_OK);
        CHECK(blob_map_get(l, "bias", &got) == BLOB_OK && blob_copy_to_host(got, back2, sizeof back2) == BLOB_OK && memcmp(back2, two, sizeof two) == 0);
        blob_free(got);
        blob_map_free(l);
        CHECK(blob_load_gguf(NULL, proto, true, false, &keep_sentinel) == BLOB_ERR_FORMAT && keep_sentinel == (BlobMap *)&failures);
        {
            /* The header as JSON: typed metadata in file order, tensors
             * with ggml type names and row-major shapes. */
            uint8_t *json = NULL;
            size_t jlen = 0;
            CHECK(blob_gguf_header_json(paths[7], &json, &jlen) == BLOB_OK && json && json[jlen] == 0 && strlen((char *)json) == jlen);
            CHECK(strstr((char *)json, "{\"key\":\"format\",\"type\":\"STRING\",\"value\":\"c\"}") != NULL);
            CHECK(strstr((char *)json, "{\"name\":\"weight\",\"type\":\"F32\",\"shape\":[2,3],") != NULL);
            CHECK(strstr((char *)json, "\"version\":3") != NULL);
            CHECK(blob_bytes_free(json) == BLOB_OK);
            json = (uint8_t *)&failures;
            CHECK(blob_gguf_header_json(proto, &json, &jlen) == BLOB_ERR_FORMAT && json == (uint8_t *)&failures);
        }
        {
            struct progress_log log = {0};
            CHECK(blob_load_gguf_progress(NULL, paths[7], false, false, record_progress, &log, &l) == BLOB_OK);
            CHECK(log.last_done == 40 && log.last_total == 40 && log.rising);
            blob_map_free(l);
        }
        /* .caffemodel: one layer with weights and bias. */
        CHECK(blob_map_create(&c) == BLOB_OK);
        CHECK(blob_map_push(c, "ip1", w) == BLOB_OK && blob_map_push(c, "ip1", b) == BLOB_OK);
        CHECK(blob_map_set_kind(c, "ip1", "InnerProduct") == BLOB_OK);
        CHECK(blob_map_set_kind(c, "ip2", "InnerProduct") == BLOB_ERR_INVALID_ARGUMENT);
        CHECK(blob_map_get(c, "ip1", &got) == BLOB_ERR_INVALID_ARGUMENT);
        CHECK(blob_save_safetensors(c, join(7, scratch, "two.safetensors")) == BLOB_ERR_INVALID_ARGUMENT);
        CHECK(blob_save_caffemodel(c, join(7, scratch, "w.caffemodel")) == BLOB_OK);
        CHECK(blob_load_caffemodel(NULL, paths[7], &l) == BLOB_OK);
        CHECK(blob_map_count(l, 0, &n) == BLOB_OK && n == 2);
        CHECK(blob_map_kind(l, 0, &kind) == BLOB_OK && strcmp(kind, "InnerProduct") == 0);
        CHECK(blob_map_at(l, 0, 1, &got) == BLOB_OK && blob_dtype(got, &dtype) == BLOB_OK && dtype == BLOB_F64);
        blob_free(got);
        blob_map_free(l);
        {
            struct progress_log log = {0};
            CHECK(blob_load_caffemodel_progress(NULL, paths[7], record_progress, &log, &l) == BLOB_OK);
            CHECK(log.last_done == 40 && log.last_total == 40 && log.rising);
            CHECK(blob_map_at(l, 0, 0, &got) == BLOB_OK && blob_copy_to_host(got, back6, sizeof back6) == BLOB_OK && memcmp(back6, six, sizeof six) == 0);
            blob_free(got);
            blob_map_free(l);
        }
        /* Bad input changes nothing. */
        CHECK(blob_load_safetensors(NULL, proto, true, &keep_sentinel) == BLOB_ERR_FORMAT && keep_sentinel == (BlobMap *)&failures);
        CHECK(blob_load_caffemodel(NULL, proto, &keep_sentinel) == BLOB_ERR_FORMAT && keep_sentinel == (BlobMap *)&failures);
        CHECK(blob_map_insert(c, "x", NULL) == BLOB_ERR_NULL_POINTER);
        CHECK(blob_map_len(c, &n) == BLOB_OK && n == 1);
        blob_map_free(c);
        blob_map_free(m);
        blob_free(w);
        blob_free(b);
    }

    /* NeoML's two archive forms: SerializeBlob's (isNull byte first) and
     * CDnnBlob::Serialize's (what neoml.Blob.store writes: FF D0 07 00 00). */
    {
        static const float three[3] = {1.5f, -2.0f, 0.25f};
        float back3[3] = {0};
        const int64_t d3[1] = {3};
        uint8_t *p1 = NULL, *p2 = NULL;
        size_t n1 = 0, n2 = 0;
        Blob *v3 = NULL, *r = NULL;
        CHECK(blob_create_tensor(NULL, BLOB_F32, d3, 1, &v3) == BLOB_OK && blob_copy_from_host(v3, three, sizeof three) == BLOB_OK);
        CHECK(blob_to_neoml_bytes_form(v3, BLOB_NEOML_BLOB, &p1, &n1) == BLOB_OK && p1[0] == 0 && p1[1] == 0xFF);
        CHECK(blob_to_neoml_bytes_form(v3, BLOB_NEOML_SERIALIZE, &p2, &n2) == BLOB_OK && n2 + 1 == n1);
        CHECK(p2[0] == 0xFF && p2[1] == 0xD0 && p2[2] == 0x07 && p2[3] == 0 && p2[4] == 0 && memcmp(p1 + 1, p2, n2) == 0);
        CHECK(blob_from_neoml_bytes(NULL, p2, n2, &r) == BLOB_OK);
        CHECK(blob_copy_to_host(r, back3, sizeof back3) == BLOB_OK && memcmp(back3, three, sizeof three) == 0);
        blob_free(r);
        CHECK(blob_save_neoml_form(v3, join(5, scratch, "serialize.neoml"), BLOB_NEOML_SERIALIZE) == BLOB_OK);
        CHECK(file_size(paths[5]) == (long)n2);
        CHECK(blob_load_neoml(NULL, paths[5], &r) == BLOB_OK);
        CHECK(blob_copy_to_host(r, back3, sizeof back3) == BLOB_OK && memcmp(back3, three, sizeof three) == 0);
        CHECK(blob_save_neoml_form(v3, paths[5], 2) == BLOB_ERR_INVALID_ARGUMENT);
        blob_bytes_free(p1);
        blob_bytes_free(p2);
        blob_free(r);
        blob_free(v3);
    }

    /* Caffe's Blob API: shape_string, count(start), capacity, CopyFrom with
     * reshape and copy_diff, ShareData / ShareDiff. */
    {
        const int64_t mnist[4] = {64, 3, 28, 28}, small[2] = {2, 3};
        static const float six[6] = {1, 2, 3, 4, 5, 6};
        float got[6];
        char text[32];
        size_t len = 0;
        int64_t n = 0;
        Blob *a = NULL, *c = NULL, *d = NULL;
        CHECK(blob_create_tensor(NULL, BLOB_F32, mnist, 4, &a) == BLOB_OK);
        CHECK(blob_shape_string(a, NULL, 0, &len) == BLOB_OK && len == 19);
        CHECK(blob_shape_string(a, text, sizeof text, &len) == BLOB_OK && strcmp(text, "64 3 28 28 (150528)") == 0);
        CHECK(blob_shape_string(a, text, 19, &len) == BLOB_ERR_INVALID_ARGUMENT);
        CHECK(blob_count_from(a, 1, &n) == BLOB_OK && n == 3 * 28 * 28);
        CHECK(blob_count_from(a, 4, &n) == BLOB_OK && n == 1);
        CHECK(blob_count_from(a, 5, &n) == BLOB_ERR_OUT_OF_RANGE && n == 1);
        CHECK(blob_reshape(a, small, 2) == BLOB_OK);
        CHECK(blob_capacity(a, &n) == BLOB_OK && n == 150528);
        CHECK(blob_create_tensor(NULL, BLOB_F32, mnist, 4, &c) == BLOB_OK);
        CHECK(blob_copy_from_host(a, six, sizeof six) == BLOB_OK);
        CHECK(blob_copy_from_blob(c, a, false, false) == BLOB_ERR_SHAPE);
        CHECK(blob_copy_from_blob(c, a, false, true) == BLOB_OK);
        CHECK(blob_copy_to_host(c, got, sizeof got) == BLOB_OK && memcmp(got, six, sizeof six) == 0);
        CHECK(blob_create_tensor(NULL, BLOB_F32, small, 2, &d) == BLOB_OK);
        CHECK(blob_share_data(d, a) == BLOB_OK);
        CHECK(blob_fill(a, 7.0) == BLOB_OK && blob_copy_to_host(d, got, sizeof got) == BLOB_OK && got[5] == 7.0f);
        CHECK(blob_share_diff(d, a) == BLOB_OK);
        /* ShapeEquals: d's own BlobProto matches d, not the 1x3x256x256 mean. */
        {
            uint8_t *pb = NULL;
            size_t pn = 0;
            bool eq = false;
            CHECK(blob_to_caffe_bytes(d, false, &pb, &pn) == BLOB_OK);
            CHECK(blob_shape_equals(d, pb, pn, &eq) == BLOB_OK && eq);
            CHECK(blob_shape_equals(mean, pb, pn, &eq) == BLOB_OK && !eq);
            CHECK(blob_bytes_free(pb) == BLOB_OK);
        }
        /* offset(n, c, h, w) and data_at on the legacy shape: d is [2, 3]. */
        CHECK(blob_legacy_offset(d, 1, 2, 0, 0, &n) == BLOB_OK && n == 5);
        {
            double at = 0;
            CHECK(blob_copy_from_host(d, six, sizeof six) == BLOB_OK);
            CHECK(blob_data_at(d, 1, 0, 0, 0, &at) == BLOB_OK && at == 4.0);
            CHECK(blob_diff_at(d, 1, 0, 0, 0, &at) == BLOB_OK && at == 0.0);
        }
        blob_free(a);
        blob_free(c);
        blob_free(d);
    }

    blob_free(mean);
    blob_free(ref);
    if (failures) fprintf(stderr, "%d checks failed\n", failures);
    else printf("formats: all checks passed\n");
    return failures != 0;
}
