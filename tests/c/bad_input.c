/* The bad-input matrix of the C API: one row per bad call, each with the
 * status it must return and words its message must contain. After every
 * row the fixture blobs must be exactly as before (dims, dtype, data, held
 * buffers) and out-pointers untouched. The Rust and Python matrices do the
 * same through their interfaces.
 *
 *   bad_input <scratch dir>
 */
#define _GNU_SOURCE /* memfd_create, F_ADD_SEALS */
#include "check.h"
#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

static Blob *a, *b, *c, *v, *w, *l, *blk;
/* Storage-only dtypes: bool [3] = 1 and float8_e4m3fn [3] = 1.5. */
static Blob *flags, *f8;
static void *held;
static int rows = 0;
static unsigned char before[4096], now[4096];

/* Element sizes by dtype code (BLOB_F32 = 1 .. BLOB_F8_E8M0FNU = 16). */
static size_t elem_size(int32_t dtype) {
    static const size_t sizes[17] = {0, 4, 4, 8, 8, 1, 1, 2, 2, 1, 2, 2, 4, 8, 1, 1, 1};
    return dtype > 0 && dtype <= 16 ? sizes[dtype] : 0;
}

/* Every fixture's dims, dtype and bytes, back to back. */
static size_t digest(unsigned char *out) {
    Blob *const all[] = {a, b, c, v, w, l, flags, f8};
    size_t at = 0, k;
    for (k = 0; k < sizeof all / sizeof all[0]; k++) {
        int64_t dims[8] = {0}, n = 0;
        int32_t dtype = 0;
        size_t rank = 0;
        blob_rank(all[k], &rank);
        blob_dims(all[k], dims, 8);
        blob_dtype(all[k], &dtype);
        blob_data_size(all[k], &n);
        memcpy(out + at, dims, sizeof dims);
        at += sizeof dims;
        memcpy(out + at, &dtype, sizeof dtype);
        at += sizeof dtype;
        blob_copy_to_host(all[k], out + at, (size_t)n * elem_size(dtype));
        at += (size_t)n * elem_size(dtype);
    }
    return at;
}

static void row(int line, const char *call, int32_t got, int32_t want, const char *words) {
    size_t n;
    rows++;
    if (got != want) {
        fprintf(stderr, "line %d: %s returned %s, expected %s (%s)\n", line, call, blob_status_str(got),
                blob_status_str(want), blob_last_error());
        failures++;
    } else if (strstr(blob_last_error(), words) == NULL) {
        fprintf(stderr, "line %d: %s: message \"%s\" does not name \"%s\"\n", line, call, blob_last_error(), words);
        failures++;
    }
    n = digest(now);
    if (memcmp(before, now, n) != 0) {
        fprintf(stderr, "line %d: %s changed the fixtures\n", line, call);
        failures++;
    }
}

#define BAD(code, words, call) row(__LINE__, #call, (call), code, words)

static void never(void *ctx) {
    (void)ctx;
    fprintf(stderr, "a release callback ran for a failed blob_wrap\n");
    failures++;
}

int main(int argc, char **argv) {
    const char *scratch = argc > 1 ? argv[1] : ".";
    Blob *out = (Blob *)&rows, *const sentinel = (Blob *)&rows, *freed = NULL;
    Blob *fake = (Blob *)(uintptr_t)0xdead0;
    BlobEngine *eng_out = (BlobEngine *)&rows;
    const int64_t d23[2] = {2, 3}, d32[2] = {3, 2}, neg[2] = {2, -3}, huge[2] = {INT64_C(1) << 40, INT64_C(1) << 40};
    const int64_t one_neg[1] = {-1}, big[1] = {INT64_C(1) << 62}, d3[1] = {3}, d4[1] = {4}, d100[1] = {100}, d7[1] = {7};
    int64_t ones[40], got64 = 777, idx3[3] = {0, 0, 0}, idx_bad[2] = {2, 0}, idx_neg[2] = {0, -1};
    int32_t got32 = 777;
    double sum = -1;
    size_t rank = 777, count = 777, len = 777;
    bool flag = false;
    void *ptr = (void *)&rows;
    uint8_t *bytes = (uint8_t *)&rows, junk[64];
    float host[8];
    char path[1024];
    const Blob *pair[2];
    Blob *outs[2];
    int i;
    static const float init[6] = {0, 1, 2, 3, 4, 5};
    static const int32_t initi[6] = {10, 11, 12, 13, 14, 15};
    static const float sevens[4] = {7, 7, 7, 7};
    static const unsigned char not_npy[] = "not a numpy file";
    uint64_t wrap_mem[8];

    for (i = 0; i < 40; i++) ones[i] = 1;
    memset(junk, 0xff, sizeof junk);
    CHECK(blob_create_tensor(NULL, BLOB_F32, d23, 2, &a) == BLOB_OK && blob_copy_from_host(a, init, sizeof init) == BLOB_OK);
    CHECK(blob_create_tensor(NULL, BLOB_I32, d23, 2, &b) == BLOB_OK && blob_copy_from_host(b, initi, sizeof initi) == BLOB_OK);
    CHECK(blob_create_tensor(NULL, BLOB_F32, d32, 2, &c) == BLOB_OK && blob_fill(c, 6.0) == BLOB_OK);
    CHECK(blob_create_vector(NULL, BLOB_F32, 10, &v) == BLOB_OK && blob_fill(v, 1.0) == BLOB_OK);
    CHECK(blob_create_window(a, 1, &w) == BLOB_OK);
    CHECK(blob_create_tensor(NULL, BLOB_F32, d4, 1, &l) == BLOB_OK && blob_copy_from_host(l, sevens, sizeof sevens) == BLOB_OK);
    CHECK(blob_get_buffer(l, 0, 2, true, &held) == BLOB_OK);
    {
        const int64_t dims[4] = {1, 8, 2, 2}, blkd[5] = {1, 1, 2, 2, 8}, order[5] = {0, 1, 2, 3, 1};
        CHECK(blob_create_desc(NULL, BLOB_F32, dims, 4, blkd, order, 5, &blk) == BLOB_OK);
    }
    CHECK(blob_create_vector(NULL, BLOB_F32, 3, &freed) == BLOB_OK && blob_free(freed) == BLOB_OK);
    CHECK(blob_create_full(NULL, BLOB_BOOL, d3, 1, 1.0, &flags) == BLOB_OK);
    CHECK(blob_create_full(NULL, BLOB_F8_E4M3FN, d3, 1, 1.5, &f8) == BLOB_OK);
    digest(before);

    /* NULL handles and NULL out-pointers */
    BAD(BLOB_ERR_NULL_POINTER, "", blob_fill(NULL, 1.0));
    BAD(BLOB_ERR_NULL_POINTER, "", blob_scale(NULL, 2.0));
    BAD(BLOB_ERR_NULL_POINTER, "", blob_clear(NULL));
    BAD(BLOB_ERR_NULL_POINTER, "", blob_asum(NULL, &sum));
    BAD(BLOB_ERR_NULL_POINTER, "", blob_asum(a, NULL));
    BAD(BLOB_ERR_NULL_POINTER, "", blob_sumsq(a, NULL));
    BAD(BLOB_ERR_NULL_POINTER, "", blob_dtype(a, NULL));
    BAD(BLOB_ERR_NULL_POINTER, "", blob_rank(NULL, &rank));
    BAD(BLOB_ERR_NULL_POINTER, "", blob_dims(a, NULL, 2));
    BAD(BLOB_ERR_NULL_POINTER, "", blob_dim(a, 0, NULL));
    BAD(BLOB_ERR_NULL_POINTER, "", blob_head(a, NULL));
    BAD(BLOB_ERR_NULL_POINTER, "", blob_copy(a, NULL));
    BAD(BLOB_ERR_NULL_POINTER, "", blob_copy_from(a, NULL));
    BAD(BLOB_ERR_NULL_POINTER, "", blob_copy_from(NULL, a));
    BAD(BLOB_ERR_NULL_POINTER, "", blob_add(a, NULL));
    BAD(BLOB_ERR_NULL_POINTER, "", blob_create_tensor(NULL, BLOB_F32, d23, 2, NULL));
    BAD(BLOB_ERR_NULL_POINTER, "", blob_create_tensor(NULL, BLOB_F32, NULL, 2, &out));
    BAD(BLOB_ERR_NULL_POINTER, "", blob_copy_from_host(a, NULL, 24));
    BAD(BLOB_ERR_NULL_POINTER, "", blob_copy_to_host(a, NULL, 24));
    BAD(BLOB_ERR_NULL_POINTER, "", blob_get_buffer(a, 0, 1, true, NULL));
    BAD(BLOB_ERR_NULL_POINTER, "", blob_create_window(NULL, 1, &out));
    BAD(BLOB_ERR_NULL_POINTER, "", blob_merge(NULL, 2, 0, a));
    BAD(BLOB_ERR_NULL_POINTER, "", blob_load_npy(NULL, NULL, &out));
    BAD(BLOB_ERR_NULL_POINTER, "", blob_to_npy_bytes(a, NULL, &len));
    BAD(BLOB_ERR_NULL_POINTER, "", blob_from_caffe_bytes(NULL, NULL, 5, &out));
    BAD(BLOB_ERR_NULL_POINTER, "", blob_engine(a, NULL));
    BAD(BLOB_ERR_NULL_POINTER, "", blob_engine_is_gpu(NULL, NULL));
    CHECK(out == sentinel);

    /* freed and foreign handles */
    BAD(BLOB_ERR_INVALID_HANDLE, "", blob_fill(freed, 1.0));
    BAD(BLOB_ERR_INVALID_HANDLE, "", blob_asum(freed, &sum));
    BAD(BLOB_ERR_INVALID_HANDLE, "", blob_free(freed));
    BAD(BLOB_ERR_INVALID_HANDLE, "", blob_fill(fake, 1.0));
    BAD(BLOB_ERR_INVALID_HANDLE, "", blob_free(fake));
    BAD(BLOB_ERR_INVALID_HANDLE, "", blob_copy_from(a, fake));
    BAD(BLOB_ERR_INVALID_HANDLE, "", blob_create_window(fake, 1, &out));
    BAD(BLOB_ERR_INVALID_HANDLE, "", blob_create_tensor((BlobEngine *)fake, BLOB_F32, d23, 2, &out));
    BAD(BLOB_ERR_INVALID_HANDLE, "", blob_engine_free((BlobEngine *)fake));
    BAD(BLOB_ERR_INVALID_HANDLE, "", blob_bytes_free((uint8_t *)fake));
    BAD(BLOB_ERR_INVALID_HANDLE, "", blob_bytes_free(junk));
    pair[0] = a;
    pair[1] = freed;
    BAD(BLOB_ERR_INVALID_HANDLE, "from[1]", blob_merge(pair, 2, 0, v));
    CHECK(out == sentinel);

    /* dims: negative, overflowing, rank over 32, bad dtype codes */
    BAD(BLOB_ERR_SHAPE, "negative", blob_create_tensor(NULL, BLOB_F32, neg, 2, &out));
    BAD(BLOB_ERR_SHAPE, "negative", blob_create_vector(NULL, BLOB_F32, -1, &out));
    BAD(BLOB_ERR_SHAPE, "negative", blob_create_matrix(NULL, BLOB_F32, 2, -1, &out));
    BAD(BLOB_ERR_SHAPE, "negative", blob_create_image2d(NULL, BLOB_F32, 1, 1, -4, 4, 3, &out));
    BAD(BLOB_ERR_SHAPE, "overflow", blob_create_tensor(NULL, BLOB_F32, huge, 2, &out));
    BAD(BLOB_ERR_SHAPE, "", blob_create_tensor(NULL, BLOB_F64, big, 1, &out));
    BAD(BLOB_ERR_SHAPE, "rank 33", blob_create_tensor(NULL, BLOB_F32, ones, 33, &out));
    BAD(BLOB_ERR_SHAPE, "rank 40", blob_create_tensor(NULL, BLOB_F32, ones, 40, &out));
    BAD(BLOB_ERR_DTYPE, "code 0", blob_create_vector(NULL, 0, 3, &out));
    BAD(BLOB_ERR_DTYPE, "code 17", blob_create_vector(NULL, 17, 3, &out));
    BAD(BLOB_ERR_DTYPE, "1..=16", blob_create_tensor(NULL, INT32_MAX, d23, 2, &out));
    BAD(BLOB_ERR_DTYPE, "code 17", blob_cast(a, 17, &out));
    /* arithmetic on bool and float8 is refused, naming astype */
    BAD(BLOB_ERR_DTYPE, "astype", blob_add(flags, flags));
    BAD(BLOB_ERR_DTYPE, "astype", blob_scale(f8, 2.0));
    BAD(BLOB_ERR_DTYPE, "astype", blob_update(f8));
    BAD(BLOB_ERR_DTYPE, "astype", blob_asum(flags, &sum));
    BAD(BLOB_ERR_DTYPE, "astype", blob_sumsq(f8, &sum));
    /* formats that cannot hold a dtype say which they hold */
    BAD(BLOB_ERR_DTYPE, "float8_e4m3fn", blob_to_npy_bytes(f8, &bytes, &len));
    BAD(BLOB_ERR_DTYPE, "float32 or float64", blob_to_caffe_bytes(flags, false, &bytes, &len));
    BAD(BLOB_ERR_DTYPE, "code -7", blob_clone_as(a, -7, &out));
    BAD(BLOB_ERR_SHAPE, "negative", blob_reshape(a, one_neg, 1));
    BAD(BLOB_ERR_SHAPE, "rank 33", blob_reshape(a, ones, 33));
    BAD(BLOB_ERR_SHAPE, "overflow", blob_reshape(a, huge, 2));
    BAD(BLOB_ERR_SHAPE, "", blob_reinterpret(a, d7, 1));
    BAD(BLOB_ERR_SHAPE, "", blob_reinterpret(a, d4, 1));
    CHECK(out == sentinel);

    /* axes and indices out of range */
    BAD(BLOB_ERR_OUT_OF_RANGE, "axis", blob_dim(a, 2, &got64));
    BAD(BLOB_ERR_OUT_OF_RANGE, "axis", blob_dim(a, -3, &got64));
    BAD(BLOB_ERR_OUT_OF_RANGE, "axis", blob_canonical_axis(a, 9, &got32));
    BAD(BLOB_ERR_OUT_OF_RANGE, "", blob_count_range(a, 2, 1, &got64));
    BAD(BLOB_ERR_OUT_OF_RANGE, "", blob_offset(a, idx_bad, 2, &got64));
    BAD(BLOB_ERR_OUT_OF_RANGE, "", blob_offset(a, idx_neg, 2, &got64));
    BAD(BLOB_ERR_OUT_OF_RANGE, "", blob_offset(a, idx3, 3, &got64));
    BAD(BLOB_ERR_OUT_OF_RANGE, "", blob_legacy_shape(a, 4, &got64));
    BAD(BLOB_ERR_OUT_OF_RANGE, "", blob_named_dim(a, 7, &got64));
    BAD(BLOB_ERR_OUT_OF_RANGE, "", blob_named_dim(a, -1, &got64));
    BAD(BLOB_ERR_OUT_OF_RANGE, "axis", blob_transposed(a, 0, 2, &out));
    BAD(BLOB_ERR_OUT_OF_RANGE, "", blob_count_from(a, 3, &got64));
    BAD(BLOB_ERR_OUT_OF_RANGE, "legacy dim 3", blob_legacy_offset(a, 0, 3, 0, 0, &got64));
    BAD(BLOB_ERR_OUT_OF_RANGE, "negative", blob_legacy_offset(a, -1, 0, 0, 0, &got64));
    BAD(BLOB_ERR_NULL_POINTER, "out", blob_legacy_offset(a, 0, 0, 0, 0, NULL));
    BAD(BLOB_ERR_OUT_OF_RANGE, "legacy dim 1", blob_data_at(a, 0, 0, 1, 0, &sum));
    BAD(BLOB_ERR_INVALID_HANDLE, "", blob_data_at(fake, 0, 0, 0, 0, &sum));
    BAD(BLOB_ERR_OUT_OF_RANGE, "legacy dim 2", blob_diff_at(a, 2, 0, 0, 0, &sum));
    CHECK(sum == -1);
    {
        static const uint8_t garbage[2] = {0xff, 0xff};
        flag = false;
        BAD(BLOB_ERR_FORMAT, "not a valid message", blob_shape_equals(a, garbage, 2, &flag));
        BAD(BLOB_ERR_NULL_POINTER, "proto", blob_shape_equals(a, NULL, 2, &flag));
        BAD(BLOB_ERR_NULL_POINTER, "out", blob_shape_equals(a, garbage, 2, NULL));
        BAD(BLOB_ERR_INVALID_HANDLE, "", blob_shape_equals(fake, garbage, 2, &flag));
        CHECK(flag == false);
    }
    BAD(BLOB_ERR_OUT_OF_RANGE, "", blob_count_from(a, -1, &got64));
    BAD(BLOB_ERR_NULL_POINTER, "out", blob_count_from(a, 0, NULL));
    BAD(BLOB_ERR_INVALID_HANDLE, "", blob_capacity(fake, &got64));
    BAD(BLOB_ERR_NULL_POINTER, "out", blob_capacity(a, NULL));
    {
        char text[4] = "abc";
        BAD(BLOB_ERR_INVALID_ARGUMENT, "needs 8", blob_shape_string(a, text, sizeof text, &len));
        BAD(BLOB_ERR_NULL_POINTER, "buf", blob_shape_string(a, NULL, 8, &len));
        BAD(BLOB_ERR_NULL_POINTER, "len", blob_shape_string(a, text, sizeof text, NULL));
        BAD(BLOB_ERR_INVALID_HANDLE, "", blob_shape_string(fake, text, sizeof text, &len));
        CHECK(strcmp(text, "abc") == 0);
    }
    /* NeoML named dims (BLOB_DIM_*) on the padded 7 dims. */
    {
        const Blob *av[2];
        Blob *vv[2];
        av[0] = a;
        av[1] = v;
        vv[0] = w;
        vv[1] = w;
        BAD(BLOB_ERR_SHAPE, "differ only at axis 6", blob_merge_dim(av, 2, BLOB_DIM_CHANNELS, c));
        BAD(BLOB_ERR_OUT_OF_RANGE, "named dim 7", blob_merge_dim(av, 2, 7, c));
        BAD(BLOB_ERR_NULL_POINTER, "from", blob_merge_dim(NULL, 2, BLOB_DIM_CHANNELS, c));
        BAD(BLOB_ERR_INVALID_HANDLE, "", blob_merge_dim(av, 2, BLOB_DIM_CHANNELS, fake));
        BAD(BLOB_ERR_INVALID_ARGUMENT, "destinations 0 and 1 share memory", blob_split_dim(a, BLOB_DIM_BATCH_LENGTH, vv, 2));
        BAD(BLOB_ERR_OUT_OF_RANGE, "named dim -1", blob_split_dim(c, -1, vv, 2));
        BAD(BLOB_ERR_NULL_POINTER, "to", blob_split_dim(c, BLOB_DIM_CHANNELS, NULL, 2));
        BAD(BLOB_ERR_OUT_OF_RANGE, "named dim 9", blob_transposed_dims(a, 9, 0, &out));
        BAD(BLOB_ERR_NULL_POINTER, "out", blob_transposed_dims(a, 0, 1, NULL));
        BAD(BLOB_ERR_INVALID_HANDLE, "", blob_transposed_dims(fake, 0, 1, &out));
        BAD(BLOB_ERR_SHAPE, "destination", blob_transpose_from_dims(a, a, BLOB_DIM_BATCH_LENGTH, BLOB_DIM_BATCH_WIDTH));
        BAD(BLOB_ERR_DTYPE, "dtypes differ", blob_transpose_from_dims(a, b, BLOB_DIM_HEIGHT, BLOB_DIM_WIDTH));
        BAD(BLOB_ERR_OUT_OF_RANGE, "named dim 7", blob_transpose_from_dims(a, c, 7, 0));
        CHECK(out == sentinel);
    }
    /* Raw memory: spans of layouts checked, views without one refused. */
    {
        void *p = (void *)&rows;
        int64_t cnt = -5;
        const int64_t rb[2] = {0, 1}, re[2] = {2, 3};
        Blob *roi = NULL;
        CHECK(blob_region(a, rb, re, 2, &roi) == BLOB_OK);
        BAD(BLOB_ERR_UNSUPPORTED, "contiguous span", blob_raw(roi, &out));
        BAD(BLOB_ERR_UNSUPPORTED, "contiguous span", blob_raw_count(roi, &cnt));
        BAD(BLOB_ERR_UNSUPPORTED, "contiguous span", blob_get_buffer(roi, 0, 1, true, &p));
        BAD(BLOB_ERR_OUT_OF_RANGE, "raw memory", blob_get_buffer(blk, 0, 65, true, &p));
        BAD(BLOB_ERR_NULL_POINTER, "out", blob_raw_count(blk, NULL));
        BAD(BLOB_ERR_INVALID_HANDLE, "", blob_raw_count(fake, &cnt));
        BAD(BLOB_ERR_NULL_POINTER, "out", blob_raw(blk, NULL));
        BAD(BLOB_ERR_INVALID_HANDLE, "", blob_raw(fake, &out));
        CHECK(p == (void *)&rows && cnt == -5 && out == sentinel);
        blob_free(roi);
    }
    /* OpenVINO descs: named layouts, strides, offset(l), introspection. */
    {
        const int64_t d2[2] = {2, 3}, b2[2] = {2, 3}, o2[2] = {0, 1}, thin[2] = {2, 1}, neg[2] = {-1, 0};
        int64_t room[2] = {-7, -7};
        size_t n = 99;
        int32_t lay = -1;
        BAD(BLOB_ERR_SHAPE, "needs rank 4", blob_create_layout(NULL, BLOB_F32, d2, 2, BLOB_LAYOUT_NCHW, &out));
        BAD(BLOB_ERR_INVALID_ARGUMENT, "not a layout code", blob_create_layout(NULL, BLOB_F32, d2, 2, 7, &out));
        BAD(BLOB_ERR_DTYPE, "", blob_create_layout(NULL, 77, d2, 2, BLOB_LAYOUT_NC, &out));
        BAD(BLOB_ERR_NULL_POINTER, "out", blob_create_layout(NULL, BLOB_F32, d2, 2, BLOB_LAYOUT_NC, NULL));
        BAD(BLOB_ERR_SHAPE, "at least dense", blob_create_desc_strided(NULL, BLOB_F32, d2, 2, b2, o2, 2, 0, NULL, thin, &out));
        BAD(BLOB_ERR_OUT_OF_RANGE, "negative", blob_create_desc_strided(NULL, BLOB_F32, d2, 2, b2, o2, 2, -1, NULL, NULL, &out));
        BAD(BLOB_ERR_OUT_OF_RANGE, "negative", blob_create_desc_strided(NULL, BLOB_F32, d2, 2, b2, o2, 2, 0, neg, NULL, &out));
        BAD(BLOB_ERR_NULL_POINTER, "blk_dims", blob_create_desc_strided(NULL, BLOB_F32, d2, 2, NULL, o2, 2, 0, NULL, NULL, &out));
        BAD(BLOB_ERR_SHAPE, "fewer", blob_create_desc_strided(NULL, BLOB_F32, d2, 2, thin, o2, 2, 0, NULL, NULL, &out));
        {
            /* 16 terms of 2^62 * 2^62: their sum wraps 128 bits. */
            const int64_t one[1] = {1};
            int64_t b16[16], o16[16], big16[16];
            for (int k = 0; k < 16; k++) {
                b16[k] = 1;
                o16[k] = 0;
                big16[k] = (int64_t)1 << 62;
            }
            BAD(BLOB_ERR_SHAPE, "overflows", blob_create_desc_strided(NULL, BLOB_F32, one, 1, b16, o16, 16, 0, big16, big16, &out));
        }
        BAD(BLOB_ERR_NULL_POINTER, "out", blob_layout_by_dims(3, NULL));
        BAD(BLOB_ERR_OUT_OF_RANGE, "", blob_desc_offset_linear(a, 6, room));
        BAD(BLOB_ERR_OUT_OF_RANGE, "negative", blob_desc_offset_linear(a, -1, room));
        BAD(BLOB_ERR_NULL_POINTER, "out", blob_desc_offset_linear(a, 0, NULL));
        BAD(BLOB_ERR_INVALID_HANDLE, "", blob_desc_offset_linear(fake, 0, room));
        BAD(BLOB_ERR_OUT_OF_RANGE, "room for 1", blob_desc_blocking(a, 1, room, NULL, NULL, NULL, &n, NULL));
        BAD(BLOB_ERR_NULL_POINTER, "out_n", blob_desc_blocking(a, 2, room, NULL, NULL, NULL, NULL, NULL));
        BAD(BLOB_ERR_INVALID_HANDLE, "", blob_desc_blocking(fake, 2, room, NULL, NULL, NULL, &n, NULL));
        CHECK(room[0] == -7 && n == 99 && out == sentinel && lay == -1);
    }
    /* Misaligned arrays and out-pointers (made by casting a byte buffer):
     * refused before anything is read or written, never dereferenced. */
    {
        uint64_t words[8];
        unsigned char *raw = (unsigned char *)words;
        int64_t *odd_dims = (int64_t *)(void *)(raw + 1);
        int64_t *odd_i64 = (int64_t *)(void *)(raw + 9);
        int32_t *odd_i32 = (int32_t *)(void *)(raw + 2);
        size_t *odd_size = (size_t *)(void *)(raw + 3);
        Blob **odd_blob = (Blob **)(void *)(raw + 4);
        size_t n = 99;
        memset(words, 0x5a, sizeof words);
        BAD(BLOB_ERR_INVALID_ARGUMENT, "not aligned to 8", blob_create_tensor(NULL, BLOB_F32, odd_dims, 2, &out));
        BAD(BLOB_ERR_INVALID_ARGUMENT, "not aligned to 8", blob_create_tensor(NULL, BLOB_F32, d23, 2, odd_blob));
        BAD(BLOB_ERR_INVALID_ARGUMENT, "not aligned to 8", blob_reshape(a, odd_dims, 2));
        BAD(BLOB_ERR_INVALID_ARGUMENT, "not aligned to 8", blob_dims(a, odd_i64, 4));
        BAD(BLOB_ERR_INVALID_ARGUMENT, "not aligned to 4", blob_dtype(a, odd_i32));
        BAD(BLOB_ERR_INVALID_ARGUMENT, "not aligned to 8", blob_data_size(a, odd_i64));
        BAD(BLOB_ERR_INVALID_ARGUMENT, "not aligned to 8", blob_shape_string(a, NULL, 0, odd_size));
        BAD(BLOB_ERR_INVALID_ARGUMENT, "not aligned to 8", blob_desc_blocking(a, 8, odd_i64, NULL, NULL, NULL, &n, NULL));
        BAD(BLOB_ERR_INVALID_ARGUMENT, "not aligned to 8", blob_desc_blocking(a, 8, NULL, NULL, NULL, NULL, &n, odd_i64));
        BAD(BLOB_ERR_INVALID_ARGUMENT, "not aligned to 8", blob_slice(a, odd_dims, 1, &out));
        BAD(BLOB_ERR_INVALID_ARGUMENT, "not aligned to 8",
            blob_from_dlpack(NULL, (struct DLManagedTensorVersioned *)(void *)(raw + 4), &out));
        BAD(BLOB_ERR_INVALID_ARGUMENT, "not aligned to 8",
            blob_from_dlpack_legacy(NULL, (struct DLManagedTensor *)(void *)(raw + 4), &out));
        CHECK(n == 99 && out == sentinel);
        for (i = 0; i < (int)sizeof words; i++) CHECK(raw[i] == 0x5a);
    }
    /* Memory-mapped .npy. */
    BAD(BLOB_ERR_INVALID_ARGUMENT, "mmap_mode", blob_load_npy_mapped(NULL, "/nonexistent/x.npy", "w", &out));
    BAD(BLOB_ERR_IO, "nonexistent", blob_load_npy_mapped(NULL, "/nonexistent/x.npy", "r", &out));
    BAD(BLOB_ERR_NULL_POINTER, "mode", blob_load_npy_mapped(NULL, "/nonexistent/x.npy", NULL, &out));
    BAD(BLOB_ERR_NULL_POINTER, "out", blob_load_npy_mapped(NULL, "/nonexistent/x.npy", "r", NULL));
    CHECK(out == sentinel);
    /* Weight files and BlobMap handles. */
    {
        BlobMap *mo = (BlobMap *)&rows, *const msent = (BlobMap *)&rows, *m = NULL;
        BlobMap *mfake = (BlobMap *)(uintptr_t)0xdead0;
        const char *s = "unchanged", *s2 = "unchanged";
        size_t n = 77;
        BAD(BLOB_ERR_IO, "nonexistent", blob_load_safetensors(NULL, "/nonexistent/x.safetensors", true, &mo));
        BAD(BLOB_ERR_IO, "nonexistent", blob_load_safetensors(NULL, "/nonexistent/x.safetensors", false, &mo));
        BAD(BLOB_ERR_NULL_POINTER, "path", blob_load_safetensors(NULL, NULL, true, &mo));
        BAD(BLOB_ERR_NULL_POINTER, "out", blob_load_safetensors(NULL, "/nonexistent/x.safetensors", true, NULL));
        BAD(BLOB_ERR_IO, "nonexistent", blob_load_caffemodel(NULL, "/nonexistent/x.caffemodel", &mo));
        BAD(BLOB_ERR_NULL_POINTER, "out", blob_load_caffemodel(NULL, "/nonexistent/x.caffemodel", NULL));
        BAD(BLOB_ERR_NULL_POINTER, "out", blob_map_create(NULL));
        BAD(BLOB_ERR_NULL_POINTER, "map", blob_map_free(NULL));
        BAD(BLOB_ERR_INVALID_HANDLE, "BlobMap", blob_map_free(mfake));
        BAD(BLOB_ERR_INVALID_HANDLE, "BlobMap", blob_map_len(mfake, &n));
        BAD(BLOB_ERR_INVALID_HANDLE, "BlobMap", blob_map_len((BlobMap *)a, &n));
        BAD(BLOB_ERR_NULL_POINTER, "out", blob_map_len(mfake, NULL));
        BAD(BLOB_ERR_INVALID_HANDLE, "BlobMap", blob_save_safetensors(mfake, "/tmp/x.safetensors"));
        BAD(BLOB_ERR_INVALID_HANDLE, "BlobMap", blob_save_caffemodel(mfake, "/tmp/x.caffemodel"));
        BAD(BLOB_ERR_INVALID_HANDLE, "BlobMap", blob_save_safetensors_sharded(mfake, "/tmp/x.index.json", 8));
        BAD(BLOB_ERR_INVALID_HANDLE, "BlobMap", blob_save_gguf(mfake, "/tmp/x.gguf"));
        BAD(BLOB_ERR_IO, "nonexistent", blob_load_gguf(NULL, "/nonexistent/x.gguf", true, false, &mo));
        BAD(BLOB_ERR_NULL_POINTER, "path", blob_load_gguf(NULL, NULL, true, false, &mo));
        BAD(BLOB_ERR_NULL_POINTER, "out", blob_load_gguf(NULL, "/nonexistent/x.gguf", true, false, NULL));
        BAD(BLOB_ERR_IO, "nonexistent", blob_load_safetensors(NULL, "/nonexistent/m.safetensors.index.json", true, &mo));
        BAD(BLOB_ERR_IO, "nonexistent", blob_load_safetensors_progress(NULL, "/nonexistent/x.safetensors", false, NULL, NULL, &mo));
        BAD(BLOB_ERR_NULL_POINTER, "path", blob_load_safetensors_progress(NULL, NULL, false, NULL, NULL, &mo));
        BAD(BLOB_ERR_NULL_POINTER, "out", blob_load_safetensors_progress(NULL, "/nonexistent/x.safetensors", false, NULL, NULL, NULL));
        BAD(BLOB_ERR_IO, "nonexistent", blob_load_gguf_progress(NULL, "/nonexistent/x.gguf", false, false, NULL, NULL, &mo));
        BAD(BLOB_ERR_NULL_POINTER, "path", blob_load_gguf_progress(NULL, NULL, false, false, NULL, NULL, &mo));
        BAD(BLOB_ERR_NULL_POINTER, "out", blob_load_gguf_progress(NULL, "/nonexistent/x.gguf", false, false, NULL, NULL, NULL));
        BAD(BLOB_ERR_IO, "nonexistent", blob_load_caffemodel_progress(NULL, "/nonexistent/x.caffemodel", NULL, NULL, &mo));
        {
            uint8_t *js = (uint8_t *)&rows;
            size_t jn = 5;
            BAD(BLOB_ERR_IO, "nonexistent", blob_gguf_header_json("/nonexistent/x.gguf", &js, &jn));
            BAD(BLOB_ERR_NULL_POINTER, "path", blob_gguf_header_json(NULL, &js, &jn));
            BAD(BLOB_ERR_NULL_POINTER, "out", blob_gguf_header_json("/nonexistent/x.gguf", NULL, &jn));
            BAD(BLOB_ERR_NULL_POINTER, "len", blob_gguf_header_json("/nonexistent/x.gguf", &js, NULL));
            CHECK(js == (uint8_t *)&rows && jn == 5);
        }
        BAD(BLOB_ERR_NULL_POINTER, "path", blob_load_caffemodel_progress(NULL, NULL, NULL, NULL, &mo));
        BAD(BLOB_ERR_NULL_POINTER, "out", blob_load_caffemodel_progress(NULL, "/nonexistent/x.caffemodel", NULL, NULL, NULL));
        CHECK(blob_map_create(&m) == BLOB_OK);
        BAD(BLOB_ERR_OUT_OF_RANGE, "entry 0", blob_map_name(m, 0, &s));
        BAD(BLOB_ERR_OUT_OF_RANGE, "entry 0", blob_map_kind(m, 0, &s));
        BAD(BLOB_ERR_OUT_OF_RANGE, "entry 0", blob_map_count(m, 0, &n));
        BAD(BLOB_ERR_OUT_OF_RANGE, "entry 0", blob_map_at(m, 0, 0, &out));
        BAD(BLOB_ERR_OUT_OF_RANGE, "metadata entry 0", blob_map_metadata_at(m, 0, &s, &s2));
        BAD(BLOB_ERR_NULL_POINTER, "out_value", blob_map_metadata_at(m, 0, &s, NULL));
        BAD(BLOB_ERR_INVALID_ARGUMENT, "no entry named", blob_map_get(m, "x", &out));
        BAD(BLOB_ERR_NULL_POINTER, "name", blob_map_get(m, NULL, &out));
        BAD(BLOB_ERR_INVALID_ARGUMENT, "no metadata key", blob_map_metadata_get(m, "k", &s));
        BAD(BLOB_ERR_INVALID_ARGUMENT, "no entry named", blob_map_set_kind(m, "x", "ReLU"));
        BAD(BLOB_ERR_NULL_POINTER, "blob", blob_map_insert(m, "x", NULL));
        BAD(BLOB_ERR_INVALID_HANDLE, "", blob_map_push(m, "x", fake));
        BAD(BLOB_ERR_NULL_POINTER, "name", blob_map_push(m, NULL, a));
        BAD(BLOB_ERR_NULL_POINTER, "value", blob_map_set_metadata(m, "k", NULL));
        BAD(BLOB_ERR_INVALID_ARGUMENT, "UTF-8", blob_map_insert(m, "\xff", a));
        BAD(BLOB_ERR_NULL_POINTER, "path", blob_save_safetensors(m, NULL));
        BAD(BLOB_ERR_IO, "nonexistent", blob_save_safetensors(m, "/nonexistent/dir/x.safetensors"));
        BAD(BLOB_ERR_NULL_POINTER, "path", blob_save_safetensors_sharded(m, NULL, 8));
        BAD(BLOB_ERR_INVALID_ARGUMENT, "at least one byte", blob_save_safetensors_sharded(m, "/tmp/never.index.json", 0));
        BAD(BLOB_ERR_INVALID_ARGUMENT, "ending in .index.json", blob_save_safetensors_sharded(m, "/tmp/never.safetensors", 8));
        {
            const int64_t d1[1] = {2};
            Blob *ib = NULL;
            CHECK(blob_create_tensor(NULL, BLOB_I32, d1, 1, &ib) == BLOB_OK && blob_map_insert(m, "i", ib) == BLOB_OK);
            BAD(BLOB_ERR_DTYPE, "float32 or float64", blob_save_caffemodel(m, "/tmp/never.caffemodel"));
            CHECK(blob_map_push(m, "i", ib) == BLOB_OK);
            blob_free(ib);
        }
        BAD(BLOB_ERR_INVALID_ARGUMENT, "holds 2 blobs", blob_map_get(m, "i", &out));
        BAD(BLOB_ERR_INVALID_ARGUMENT, "holds 2 blobs", blob_save_safetensors(m, "/tmp/never.safetensors"));
        BAD(BLOB_ERR_INVALID_ARGUMENT, "holds 2 blobs", blob_save_safetensors_sharded(m, "/tmp/never.index.json", 8));
        BAD(BLOB_ERR_INVALID_ARGUMENT, "holds 2 blobs", blob_save_gguf(m, "/tmp/never.gguf"));
        BAD(BLOB_ERR_NULL_POINTER, "path", blob_save_gguf(m, NULL));
        CHECK(blob_map_len(m, &n) == BLOB_OK && n == 1);
        CHECK(blob_map_free(m) == BLOB_OK);
        BAD(BLOB_ERR_INVALID_HANDLE, "double free", blob_map_free(m));
        CHECK(mo == msent && out == sentinel && strcmp(s, "unchanged") == 0 && strcmp(s2, "unchanged") == 0);
    }
    /* Engine counters. */
    {
        BlobEngineStats st;
        memset(&st, 0x5a, sizeof st);
        BAD(BLOB_ERR_NULL_POINTER, "out", blob_engine_stats(NULL, NULL));
        BAD(BLOB_ERR_INVALID_HANDLE, "", blob_engine_stats((BlobEngine *)(uintptr_t)0xdead0, &st));
        BAD(BLOB_ERR_INVALID_HANDLE, "", blob_engine_reset_stats((BlobEngine *)(uintptr_t)0xdead0));
        BAD(BLOB_ERR_INVALID_HANDLE, "", blob_engine_synchronize((BlobEngine *)(uintptr_t)0xdead0));
        CHECK(st.uploads == 0x5a5a5a5a5a5a5a5aULL);
    }
    /* DLPack: NULLs, flags, layouts it cannot describe. */
    {
        struct DLManagedTensorVersioned *tv = (struct DLManagedTensorVersioned *)&rows;
        struct DLManagedTensor *tl = (struct DLManagedTensor *)&rows;
        BAD(BLOB_ERR_INVALID_ARGUMENT, "only 0 or", blob_to_dlpack(a, 2, &tv));
        BAD(BLOB_ERR_NULL_POINTER, "out", blob_to_dlpack(a, 0, NULL));
        BAD(BLOB_ERR_INVALID_HANDLE, "", blob_to_dlpack(fake, 0, &tv));
        BAD(BLOB_ERR_UNSUPPORTED, "blocked", blob_to_dlpack(blk, 0, &tv));
        BAD(BLOB_ERR_UNSUPPORTED, "blocked", blob_to_dlpack_legacy(blk, &tl));
        BAD(BLOB_ERR_NULL_POINTER, "out", blob_to_dlpack_legacy(a, NULL));
        /* kDLCUDA exports: a CPU blob has no device memory; bad stream and
         * copy. The blob is made on the CPU engine by name (the default
         * engine may be CUDA's under BLOBCORE_ENGINE=cuda). */
        {
            BlobEngine *cpu = NULL;
            Blob *h = NULL;
            int32_t dt = -7, id = -7;
            const int64_t hd[1] = {4};
            CHECK(blob_engine_cpu(&cpu) == BLOB_OK);
            CHECK(blob_create_tensor(cpu, BLOB_F32, hd, 1, &h) == BLOB_OK);
            BAD(BLOB_ERR_UNSUPPORTED, "CUDA engine", blob_to_dlpack_cuda(h, 1, 0, &tv));
            BAD(BLOB_ERR_INVALID_ARGUMENT, "copy", blob_to_dlpack_cuda(h, 1, 5, &tv));
            BAD(BLOB_ERR_NULL_POINTER, "out", blob_to_dlpack_cuda(h, 1, 0, NULL));
            BAD(BLOB_ERR_INVALID_HANDLE, "", blob_to_dlpack_cuda(fake, 1, 0, &tv));
            BAD(BLOB_ERR_NULL_POINTER, "out_device_type", blob_dlpack_device(h, NULL, &id));
            BAD(BLOB_ERR_NULL_POINTER, "out_device_id", blob_dlpack_device(h, &dt, NULL));
            BAD(BLOB_ERR_INVALID_HANDLE, "", blob_dlpack_device(fake, &dt, &id));
            CHECK(dt == -7 && id == -7);
            CHECK(blob_dlpack_device(h, &dt, &id) == BLOB_OK && dt == 1 && id == 0);
            blob_free(h);
            blob_engine_free(cpu);
        }
        BAD(BLOB_ERR_NULL_POINTER, "NULL", blob_from_dlpack(NULL, NULL, &out));
        BAD(BLOB_ERR_NULL_POINTER, "NULL", blob_from_dlpack_legacy(NULL, NULL, &out));
        BAD(BLOB_ERR_NULL_POINTER, "out", blob_from_dlpack(NULL, tv, NULL));
        CHECK(tv == (struct DLManagedTensorVersioned *)&rows && tl == (struct DLManagedTensor *)&rows && out == sentinel);
    }
    /* NeoML archive forms. */
    {
        uint8_t *bytes = (uint8_t *)&rows;
        size_t blen = 7;
        const int64_t one[1] = {1};
        Blob *big64 = NULL;
        CHECK(blob_create_tensor(NULL, BLOB_F64, one, 1, &big64) == BLOB_OK);
        BAD(BLOB_ERR_INVALID_ARGUMENT, "neither 0 (blob) nor 1", blob_to_neoml_bytes_form(a, 2, &bytes, &blen));
        BAD(BLOB_ERR_INVALID_ARGUMENT, "neither", blob_save_neoml_form(a, "/nonexistent/x.neoml", -1));
        BAD(BLOB_ERR_DTYPE, "float32 or int32", blob_to_neoml_bytes_form(big64, BLOB_NEOML_SERIALIZE, &bytes, &blen));
        BAD(BLOB_ERR_NULL_POINTER, "out", blob_to_neoml_bytes_form(a, BLOB_NEOML_SERIALIZE, NULL, &blen));
        BAD(BLOB_ERR_NULL_POINTER, "", blob_save_neoml_form(a, NULL, BLOB_NEOML_SERIALIZE));
        BAD(BLOB_ERR_INVALID_HANDLE, "", blob_save_neoml_form(fake, "/tmp/x.neoml", BLOB_NEOML_BLOB));
        CHECK(bytes == (uint8_t *)&rows && blen == 7);
        blob_free(big64);
    }
    /* Serrano: numpy.full and shape equality. */
    {
        const int64_t d2[1] = {2}, dneg[1] = {-2};
        BAD(BLOB_ERR_OUT_OF_RANGE, "does not fit in uint8", blob_create_full(NULL, BLOB_U8, d2, 1, 256.0, &out));
        BAD(BLOB_ERR_OUT_OF_RANGE, "does not fit in int32", blob_create_full(NULL, BLOB_I32, d2, 1, 0.0 / 0.0, &out));
        BAD(BLOB_ERR_SHAPE, "", blob_create_full(NULL, BLOB_F32, dneg, 1, 1.0, &out));
        BAD(BLOB_ERR_DTYPE, "", blob_create_full(NULL, 42, d2, 1, 1.0, &out));
        BAD(BLOB_ERR_NULL_POINTER, "out", blob_create_full(NULL, BLOB_F32, d2, 1, 1.0, NULL));
        BAD(BLOB_ERR_NULL_POINTER, "out", blob_same_shape(a, b, true, NULL));
        BAD(BLOB_ERR_INVALID_HANDLE, "", blob_same_shape(a, fake, true, &flag));
        /* Overlap queries (issue 26). */
        BAD(BLOB_ERR_NULL_POINTER, "out", blob_shares_memory(a, b, NULL));
        BAD(BLOB_ERR_NULL_POINTER, "a is NULL", blob_shares_memory(NULL, b, &flag));
        BAD(BLOB_ERR_INVALID_HANDLE, "", blob_shares_memory(a, fake, &flag));
        BAD(BLOB_ERR_NULL_POINTER, "out", blob_may_share_memory(a, b, NULL));
        BAD(BLOB_ERR_NULL_POINTER, "b is NULL", blob_may_share_memory(a, NULL, &flag));
        BAD(BLOB_ERR_INVALID_HANDLE, "", blob_may_share_memory(fake, b, &flag));
        CHECK(out == sentinel);
    }
    /* Typed prefix copies (NeoML CopyTo / CopyFrom). */
    {
        float room[8] = {0};
        int32_t ints[2] = {0};
        BAD(BLOB_ERR_DTYPE, "holds float32", blob_copy_to(a, BLOB_I32, ints, 2));
        BAD(BLOB_ERR_DTYPE, "", blob_copy_to(a, 99, room, 2));
        BAD(BLOB_ERR_INVALID_ARGUMENT, "only 6", blob_copy_to(a, BLOB_F32, room, 7));
        BAD(BLOB_ERR_INVALID_ARGUMENT, "exceed", blob_copy_to(a, BLOB_F32, room, SIZE_MAX / 2));
        BAD(BLOB_ERR_NULL_POINTER, "dst", blob_copy_to(a, BLOB_F32, NULL, 1));
        BAD(BLOB_ERR_INVALID_HANDLE, "", blob_copy_to(fake, BLOB_F32, room, 1));
        BAD(BLOB_ERR_DTYPE, "holds float32", blob_copy_from_typed(a, BLOB_I32, ints, 2));
        BAD(BLOB_ERR_INVALID_ARGUMENT, "only 6", blob_copy_from_typed(a, BLOB_F32, room, 8));
        BAD(BLOB_ERR_NULL_POINTER, "src", blob_copy_from_typed(a, BLOB_F32, NULL, 1));
        BAD(BLOB_ERR_INVALID_HANDLE, "", blob_copy_from_typed(fake, BLOB_F32, room, 1));
        CHECK(ints[0] == 0 && room[0] == 0);
    }
    BAD(BLOB_ERR_SHAPE, "reshape", blob_copy_from_blob(a, c, false, false));
    BAD(BLOB_ERR_DTYPE, "dtypes differ", blob_copy_from_blob(a, b, false, true));
    BAD(BLOB_ERR_INVALID_HANDLE, "", blob_copy_from_blob(fake, a, false, false));
    BAD(BLOB_ERR_DTYPE, "", blob_share_data(a, b));
    BAD(BLOB_ERR_SHAPE, "", blob_share_data(a, v));
    BAD(BLOB_ERR_INVALID_HANDLE, "", blob_share_data(a, fake));
    BAD(BLOB_ERR_DTYPE, "", blob_share_diff(a, b));
    BAD(BLOB_ERR_INVALID_HANDLE, "", blob_share_diff(fake, a));
    {
        const int32_t far[2] = {0, 2}, dup[2] = {1, 1}, swap[2] = {1, 0}, neg_swap[2] = {-1, 0};
        BAD(BLOB_ERR_OUT_OF_RANGE, "axis", blob_permute(a, far, 2, &out));
        BAD(BLOB_ERR_INVALID_ARGUMENT, "permutation", blob_permute(a, dup, 2, &out));
        BAD(BLOB_ERR_INVALID_ARGUMENT, "permutation", blob_permute(a, swap, 1, &out));
        BAD(BLOB_ERR_NULL_POINTER, "axes", blob_permute(a, NULL, 2, &out));
        BAD(BLOB_ERR_INVALID_ARGUMENT, "at most", blob_permute(a, swap, 99, &out));
        BAD(BLOB_ERR_NULL_POINTER, "out", blob_permute(a, swap, 2, NULL));
        BAD(BLOB_ERR_INVALID_HANDLE, "", blob_permute(fake, swap, 2, &out));
        BAD(BLOB_ERR_DTYPE, "dtypes differ", blob_permute_from(c, b, swap, 2));
        BAD(BLOB_ERR_SHAPE, "destination", blob_permute_from(a, a, swap, 2));
        const int64_t d22[2] = {2, 2};
        Blob *sq = NULL;
        CHECK(blob_create_tensor(NULL, BLOB_F32, d22, 2, &sq) == BLOB_OK);
        /* In place is NumPy's a[...] = a.T: the source is read first (issue 26). */
        CHECK(blob_permute_from(sq, sq, neg_swap, 2) == BLOB_OK);
        CHECK(blob_free(sq) == BLOB_OK);
        BAD(BLOB_ERR_INVALID_ARGUMENT, "permutation", blob_permute_from(c, a, dup, 2));
        BAD(BLOB_ERR_INVALID_HANDLE, "", blob_permute_from(fake, a, swap, 2));
    }
    BAD(BLOB_ERR_OUT_OF_RANGE, "", blob_fill_object(a, 6, 1.0));
    /* Fills refuse a double an integer dtype cannot hold (no saturation);
     * the exact fills take one element of the blob's own dtype. */
    {
        const int64_t big = 8587004344907571699LL;
        const int32_t seven = 7;
        BAD(BLOB_ERR_OUT_OF_RANGE, "does not fit in int32", blob_fill(b, 2147483648.0));
        BAD(BLOB_ERR_OUT_OF_RANGE, "does not fit in int32", blob_fill(b, -1e300));
        BAD(BLOB_ERR_OUT_OF_RANGE, "NaN does not fit in int32", blob_fill(b, strtod("nan", NULL)));
        BAD(BLOB_ERR_OUT_OF_RANGE, "inf does not fit in int32", blob_fill_object(b, 0, strtod("inf", NULL)));
        BAD(BLOB_ERR_OUT_OF_RANGE, "256 does not fit in uint8", blob_create_full(NULL, BLOB_U8, d3, 1, 256.0, &out));
        BAD(BLOB_ERR_DTYPE, "without a cast", blob_fill_element(b, BLOB_I64, &big));
        BAD(BLOB_ERR_DTYPE, "without a cast", blob_fill_object_element(b, 0, BLOB_I64, &big));
        BAD(BLOB_ERR_DTYPE, "code 17", blob_fill_element(b, 17, &seven));
        BAD(BLOB_ERR_DTYPE, "code 0", blob_fill_object_element(b, 0, 0, &seven));
        BAD(BLOB_ERR_NULL_POINTER, "value is NULL", blob_fill_element(b, BLOB_I32, NULL));
        BAD(BLOB_ERR_NULL_POINTER, "value is NULL", blob_fill_object_element(b, 0, BLOB_I32, NULL));
        BAD(BLOB_ERR_NULL_POINTER, "", blob_fill_element(NULL, BLOB_I32, &seven));
        BAD(BLOB_ERR_NULL_POINTER, "", blob_fill_object_element(NULL, 0, BLOB_I32, &seven));
        BAD(BLOB_ERR_OUT_OF_RANGE, "object 6", blob_fill_object_element(b, 6, BLOB_I32, &seven));
        BAD(BLOB_ERR_OUT_OF_RANGE, "object", blob_fill_object_element(b, -1, BLOB_I32, &seven));
        BAD(BLOB_ERR_INVALID_HANDLE, "", blob_fill_element(freed, BLOB_F32, &seven));
        BAD(BLOB_ERR_INVALID_HANDLE, "", blob_fill_object_element(fake, 0, BLOB_F32, &seven));
    }
    BAD(BLOB_ERR_OUT_OF_RANGE, "", blob_clear_object(a, -1));
    CHECK(got64 == 777 && got32 == 777 && out == sentinel);

    /* mismatched copies, arithmetic, merges and splits */
    BAD(BLOB_ERR_DTYPE, "dtypes differ", blob_copy_from(a, b));
    BAD(BLOB_ERR_SHAPE, "dims differ", blob_copy_from(a, c));
    BAD(BLOB_ERR_DTYPE, "dtypes differ", blob_add(a, b));
    BAD(BLOB_ERR_SHAPE, "dims differ", blob_add(a, c));
    BAD(BLOB_ERR_DTYPE, "dtypes differ", blob_transpose_from(a, b, 0, 1));
    BAD(BLOB_ERR_INVALID_ARGUMENT, "23 bytes", blob_copy_from_host(a, host, 23));
    BAD(BLOB_ERR_INVALID_ARGUMENT, "", blob_copy_to_host(a, host, 25));
    BAD(BLOB_ERR_INVALID_ARGUMENT, "empty", blob_merge(pair, 0, 0, a));
    pair[0] = a;
    pair[1] = b;
    BAD(BLOB_ERR_DTYPE, "", blob_merge(pair, 2, 0, v));
    pair[1] = c;
    BAD(BLOB_ERR_SHAPE, "", blob_merge(pair, 2, 0, v));
    pair[0] = c;
    BAD(BLOB_ERR_SHAPE, "add up", blob_merge(pair, 2, 0, c));
    BAD(BLOB_ERR_OUT_OF_RANGE, "axis", blob_merge(pair, 1, 5, c));
    outs[0] = c;
    outs[1] = c;
    BAD(BLOB_ERR_SHAPE, "", blob_split(a, 0, outs, 2));
    outs[0] = w;
    outs[1] = w;
    BAD(BLOB_ERR_INVALID_ARGUMENT, "destinations 0 and 1 share memory", blob_split(a, 0, outs, 2));
    outs[0] = b;
    BAD(BLOB_ERR_DTYPE, "", blob_split(a, 0, outs, 1));
    pair[0] = v;
    BAD(BLOB_ERR_SHAPE, "", blob_merge_objects(pair, 1, a));
    outs[0] = v;
    BAD(BLOB_ERR_SHAPE, "", blob_split_objects(a, outs, 1));
    BAD(BLOB_ERR_INVALID_ARGUMENT, "", blob_merge(pair, (size_t)1 << 40, 0, a));

    /* windows, slices and regions out of range */
    BAD(BLOB_ERR_OUT_OF_RANGE, "", blob_create_window(a, 3, &out));
    BAD(BLOB_ERR_OUT_OF_RANGE, "", blob_create_window(a, -1, &out));
    BAD(BLOB_ERR_OUT_OF_RANGE, "", blob_set_parent_pos(w, 2));
    BAD(BLOB_ERR_OUT_OF_RANGE, "negative", blob_set_parent_pos(w, -1));
    BAD(BLOB_ERR_OUT_OF_RANGE, "", blob_shift_parent_pos(w, 5));
    BAD(BLOB_ERR_OUT_OF_RANGE, "", blob_shift_parent_pos(w, INT64_MIN));
    BAD(BLOB_ERR_INVALID_ARGUMENT, "window", blob_set_parent_pos(a, 0));
    BAD(BLOB_ERR_INVALID_ARGUMENT, "window", blob_parent_pos(a, &got64));
    {
        const int64_t i2[1] = {2}, begin[2] = {0, 0}, end[2] = {3, 3}, rbegin[2] = {1, 0}, rend[2] = {0, 3};
        BAD(BLOB_ERR_OUT_OF_RANGE, "", blob_slice(a, i2, 1, &out));
        BAD(BLOB_ERR_OUT_OF_RANGE, "", blob_slice(a, idx3, 3, &out));
        BAD(BLOB_ERR_OUT_OF_RANGE, "", blob_region(a, begin, end, 2, &out));
        BAD(BLOB_ERR_OUT_OF_RANGE, "", blob_region(a, rbegin, rend, 2, &out));
    }
    CHECK(out == sentinel);

    /* buffers: ranges, LIFO, busy reallocation */
    BAD(BLOB_ERR_OUT_OF_RANGE, "negative", blob_get_buffer(a, -1, 1, false, &ptr));
    BAD(BLOB_ERR_OUT_OF_RANGE, "exceeds", blob_get_buffer(a, 0, 7, false, &ptr));
    BAD(BLOB_ERR_OUT_OF_RANGE, "exceeds", blob_get_buffer(a, 5, 2, true, &ptr));
    BAD(BLOB_ERR_OUT_OF_RANGE, "", blob_get_buffer(a, INT64_MAX, 2, true, &ptr));
    BAD(BLOB_ERR_LIFO, "no buffer", blob_release_buffer(a, ptr, false));
    BAD(BLOB_ERR_LIFO, "not a buffer", blob_release_buffer(l, junk, true));
    BAD(BLOB_ERR_LIFO, "not a buffer", blob_release_buffer(l, (char *)held + 4, true));
    BAD(BLOB_ERR_LIFO, "", blob_release_buffer(v, held, true));
    BAD(BLOB_ERR_BUSY, "", blob_reshape(l, d100, 1));
    BAD(BLOB_ERR_BUSY, "", blob_reshape(a, d100, 1));
    CHECK(ptr == (void *)&rows);

    /* layouts */
    {
        const int64_t dims[2] = {2, 3}, blkd[2] = {2, 3}, order_bad[2] = {0, 2}, order_short[1] = {0};
        const int64_t off_idx[4] = {0, 8, 0, 0}, part_begin[4] = {0, 1, 0, 0}, part_end[4] = {1, 3, 2, 2}, flat[1] = {32};
        BAD(BLOB_ERR_SHAPE, "leaves out dim 1", blob_create_desc(NULL, BLOB_F32, dims, 2, blkd, order_bad, 2, &out));
        BAD(BLOB_ERR_SHAPE, "", blob_create_desc(NULL, BLOB_F32, dims, 2, blkd, order_short, 1, &out));
        BAD(BLOB_ERR_OUT_OF_RANGE, "", blob_desc_offset(blk, off_idx, 4, &got64));
        BAD(BLOB_ERR_UNSUPPORTED, "inside its blocks", blob_region(blk, part_begin, part_end, 4, &out));
        BAD(BLOB_ERR_UNSUPPORTED, "reorder", blob_reshape(blk, flat, 1));
        BAD(BLOB_ERR_OUT_OF_RANGE, "window size 2", blob_create_window(blk, 2, &out));
        BAD(BLOB_ERR_SHAPE, "dims differ", blob_reorder(a, c));
        BAD(BLOB_ERR_DTYPE, "dtypes differ", blob_reorder(a, b));
    }

    /* files: truncated, hostile, missing, refused */
    BAD(BLOB_ERR_FORMAT, "magic", blob_from_npy_bytes(NULL, not_npy, sizeof not_npy, &out));
    BAD(BLOB_ERR_FORMAT, "", blob_from_caffe_bytes(NULL, junk, sizeof junk, &out));
    BAD(BLOB_ERR_FORMAT, "truncated", blob_from_neoml_bytes(NULL, junk, 0, &out));
    BAD(BLOB_ERR_FORMAT, "version", blob_from_neoml_bytes(NULL, junk, sizeof junk, &out));
    {
        static const unsigned char hostile[] = "\x93NUMPY\x01\x00\x46\x00{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776,), }";
        BAD(BLOB_ERR_FORMAT, "truncated", blob_from_npy_bytes(NULL, hostile, sizeof hostile - 1, &out));
    }
    CHECK(blob_to_npy_bytes(a, &bytes, &len) == BLOB_OK);
    BAD(BLOB_ERR_FORMAT, "truncated", blob_from_npy_bytes(NULL, bytes, len - 1, &out));
    CHECK(blob_bytes_free(bytes) == BLOB_OK);
    BAD(BLOB_ERR_INVALID_HANDLE, "", blob_bytes_free(bytes));
    snprintf(path, sizeof path, "%s/missing.npy", scratch);
    BAD(BLOB_ERR_IO, "missing.npy", blob_load_npy(NULL, path, &out));
    BAD(BLOB_ERR_IO, "", blob_load_caffe(NULL, "/nonexistent/x.binaryproto", &out));
    BAD(BLOB_ERR_IO, "", blob_load_caffe_vector(NULL, "/nonexistent/x", NULL, 0, &count));
    BAD(BLOB_ERR_INVALID_ARGUMENT, "empty", blob_load_neoml(NULL, "", &out));
    BAD(BLOB_ERR_IO, "", blob_save_npy(a, "/nonexistent/dir/x.npy"));
    BAD(BLOB_ERR_DTYPE, "", blob_save_caffe(b, "/nonexistent/x", false));
    BAD(BLOB_ERR_IO, "nonexistent", blob_save_neoml(blk, "/nonexistent/x"));
    BAD(BLOB_ERR_DTYPE, "int32", blob_load_caffe_into(b, "/nonexistent/x", true));
    CHECK(out == sentinel && count == 777);

    /* memory that cannot be had, engines, wrapped memory */
    {
        const int64_t petabyte[1] = {INT64_C(1) << 50};
        Blob *huge_blob = NULL;
        CHECK(blob_create_tensor(NULL, BLOB_U8, petabyte, 1, &huge_blob) == BLOB_OK);
        BAD(BLOB_ERR_OUT_OF_MEMORY, "", blob_fill(huge_blob, 0.0));
        BAD(BLOB_ERR_OUT_OF_MEMORY, "", blob_asum(huge_blob, &sum));
        blob_free(huge_blob);
    }
    /* Encoders into memory size their output before the blob's memory
     * exists: refused memory is an error, not an abort (found by the
     * capi_ops fuzzer in blob_save_caffemodel). */
    {
        const int64_t four_tb[1] = {INT64_C(1) << 40};
        Blob *huge_f32 = NULL;
        BlobMap *m = NULL;
        uint8_t *bytes = NULL;
        size_t n = 777;
        CHECK(blob_create_tensor(NULL, BLOB_F32, four_tb, 1, &huge_f32) == BLOB_OK);
        BAD(BLOB_ERR_OUT_OF_MEMORY, "", blob_to_npy_bytes(huge_f32, &bytes, &n));
        CHECK(bytes == NULL && n == 777);
        CHECK(blob_map_create(&m) == BLOB_OK && blob_map_insert(m, "x", huge_f32) == BLOB_OK);
        BAD(BLOB_ERR_OUT_OF_MEMORY, "", blob_save_caffemodel(m, "/tmp/blobcore-never-written.caffemodel"));
        blob_map_free(m);
        blob_free(huge_f32);
    }
    BAD(BLOB_ERR_INVALID_ARGUMENT, "aligned", blob_wrap(NULL, BLOB_F32, d4, 1, (char *)wrap_mem + 1, 32, never, NULL, &out));
    BAD(BLOB_ERR_INVALID_ARGUMENT, "", blob_wrap(NULL, BLOB_F32, d100, 1, wrap_mem, sizeof wrap_mem, never, NULL, &out));
    BAD(BLOB_ERR_NULL_POINTER, "", blob_wrap(NULL, BLOB_F32, d4, 1, NULL, 16, never, NULL, &out));
    /* read-only blobs: every write refused, nothing changes; casts */
    {
        static const float ro_mem[4] = {1, 2, 3, 4};
        const int64_t d22[2] = {2, 2}, d8[1] = {8};
        Blob *ro = NULL, *win = NULL, *cast = NULL, *dst = NULL;
        void *p = NULL;
        double s = 0;
        bool writable = true;
        BAD(BLOB_ERR_NULL_POINTER, "", blob_wrap_read_only(NULL, BLOB_F32, d4, 1, NULL, 16, never, NULL, &out));
        BAD(BLOB_ERR_INVALID_ARGUMENT, "aligned", blob_wrap_read_only(NULL, BLOB_F32, d4, 1, (const char *)ro_mem + 1, 16, never, NULL, &out));
        CHECK(blob_wrap_read_only(NULL, BLOB_F32, d4, 1, ro_mem, sizeof ro_mem, NULL, NULL, &ro) == BLOB_OK);
        CHECK(blob_is_writable(ro, &writable) == BLOB_OK && !writable);
        CHECK(blob_is_writable(a, &writable) == BLOB_OK && writable);
        CHECK(blob_create_window(ro, 1, &win) == BLOB_OK);
        CHECK(blob_create_tensor(NULL, BLOB_F32, d4, 1, &dst) == BLOB_OK);
        BAD(BLOB_ERR_READ_ONLY, "read-only", blob_fill(ro, 0.0));
        BAD(BLOB_ERR_READ_ONLY, "read-only", blob_fill(win, 0.0));
        {
            const float f = 1.0f;
            BAD(BLOB_ERR_READ_ONLY, "read-only", blob_fill_element(ro, BLOB_F32, &f));
            BAD(BLOB_ERR_READ_ONLY, "read-only", blob_fill_object_element(win, 0, BLOB_F32, &f));
        }
        BAD(BLOB_ERR_READ_ONLY, "read-only", blob_scale(ro, 2.0));
        BAD(BLOB_ERR_READ_ONLY, "read-only", blob_clear(ro));
        BAD(BLOB_ERR_READ_ONLY, "read-only", blob_add(ro, dst));
        BAD(BLOB_ERR_READ_ONLY, "read-only", blob_copy_from(ro, dst));
        BAD(BLOB_ERR_READ_ONLY, "read-only", blob_copy_from_host(ro, ro_mem, sizeof ro_mem));
        BAD(BLOB_ERR_READ_ONLY, "read-only", blob_get_buffer(ro, 0, 2, false, &p));
        BAD(BLOB_ERR_READ_ONLY, "read-only", blob_reshape(ro, d8, 1));
        BAD(BLOB_ERR_NULL_POINTER, "", blob_is_writable(ro, NULL));
        BAD(BLOB_ERR_INVALID_HANDLE, "", blob_is_writable(fake, &writable));
        CHECK(blob_reshape(ro, d22, 2) == BLOB_OK); /* same memory: allowed */
        CHECK(blob_asum(ro, &s) == BLOB_OK && s == 10.0);
        CHECK(blob_copy_from(dst, win) == BLOB_ERR_SHAPE);
        CHECK(blob_get_buffer(ro, 0, 2, true, &p) == BLOB_OK && blob_release_buffer(ro, p, false) == BLOB_OK);
        CHECK(ro_mem[0] == 1 && ro_mem[3] == 4);
        BAD(BLOB_ERR_NULL_POINTER, "", blob_cast(a, BLOB_I32, NULL));
        BAD(BLOB_ERR_DTYPE, "", blob_cast(a, 99, &out));
        BAD(BLOB_ERR_INVALID_HANDLE, "", blob_cast(fake, BLOB_I32, &out));
        CHECK(blob_cast(ro, BLOB_I8, &cast) == BLOB_OK && blob_is_writable(cast, &writable) == BLOB_OK && writable);
        CHECK(blob_asum(cast, &s) == BLOB_OK && s == 10.0);
        blob_free(cast);
        blob_free(dst);
        blob_free(win);
        blob_free(ro);
    }
    /* Shared memory: moving busy memory, descriptors of blobs not shared,
     * and hostile descriptors, sizes and offsets. */
    {
        int fd = -7, pipefd[2], plain, unsealed, sealed;
        uint64_t off = 77;
        Blob *ok = NULL;
        char file[1100];
        BAD(BLOB_ERR_NULL_POINTER, "", blob_share_memory(NULL));
        BAD(BLOB_ERR_INVALID_HANDLE, "", blob_share_memory(fake));
        BAD(BLOB_ERR_BUSY, "view", blob_share_memory(a));
        BAD(BLOB_ERR_BUSY, "view", blob_share_memory(w));
        BAD(BLOB_ERR_BUSY, "buffer", blob_share_memory(l));
        /* Writable memory a blob wraps stays the blob's: neither moved
         * into a file nor reallocated by a growing reshape. */
        {
            float lent_mem[4] = {1, 2, 3, 4};
            const int64_t d5[1] = {5};
            Blob *lent = NULL;
            int64_t rank_dims[1] = {0};
            bool shared = true;
            CHECK(blob_wrap(NULL, BLOB_F32, d4, 1, lent_mem, sizeof lent_mem, NULL, NULL, &lent) == BLOB_OK);
            BAD(BLOB_ERR_BUSY, "lent by its owner", blob_share_memory(lent));
            BAD(BLOB_ERR_BUSY, "lent by its owner", blob_reshape(lent, d5, 1));
            CHECK(blob_is_shared(lent, &shared) == BLOB_OK && !shared);
            CHECK(blob_dims(lent, rank_dims, 1) == BLOB_OK && rank_dims[0] == 4);
            CHECK(blob_fill(lent, 9.0) == BLOB_OK && lent_mem[0] == 9 && lent_mem[3] == 9);
            blob_free(lent);
        }
        BAD(BLOB_ERR_NULL_POINTER, "", blob_is_shared(a, NULL));
        BAD(BLOB_ERR_INVALID_HANDLE, "", blob_is_shared(fake, &flag));
        BAD(BLOB_ERR_INVALID_ARGUMENT, "share_memory", blob_shared_fd(a, &fd, &off));
        BAD(BLOB_ERR_NULL_POINTER, "fd", blob_shared_fd(a, NULL, &off));
        BAD(BLOB_ERR_NULL_POINTER, "offset", blob_shared_fd(a, &fd, NULL));
        BAD(BLOB_ERR_INVALID_HANDLE, "", blob_shared_fd(fake, &fd, &off));
        CHECK(fd == -7 && off == 77);
        CHECK(pipe(pipefd) == 0);
        snprintf(file, sizeof file, "%s/plain.bin", scratch);
        plain = open(file, O_RDWR | O_CREAT | O_TRUNC, 0600);
        CHECK(plain >= 0 && write(plain, junk, sizeof junk) == (ssize_t)sizeof junk);
        unsealed = memfd_create("unsealed", MFD_CLOEXEC);
        CHECK(unsealed >= 0 && ftruncate(unsealed, 64) == 0);
        sealed = memfd_create("sealed", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        CHECK(sealed >= 0 && ftruncate(sealed, 64) == 0 && fcntl(sealed, F_ADD_SEALS, F_SEAL_SHRINK) == 0);
        BAD(BLOB_ERR_INVALID_ARGUMENT, "not an open file", blob_from_shared_fd(NULL, BLOB_F32, d4, 1, -1, 0, &out));
        BAD(BLOB_ERR_INVALID_ARGUMENT, "not an open file", blob_from_shared_fd(NULL, BLOB_F32, d4, 1, 1000, 0, &out));
        BAD(BLOB_ERR_INVALID_ARGUMENT, "not a regular file", blob_from_shared_fd(NULL, BLOB_F32, d4, 1, pipefd[0], 0, &out));
        BAD(BLOB_ERR_INVALID_ARGUMENT, "not a shared memory file", blob_from_shared_fd(NULL, BLOB_F32, d4, 1, plain, 0, &out));
        BAD(BLOB_ERR_INVALID_ARGUMENT, "F_SEAL_SHRINK", blob_from_shared_fd(NULL, BLOB_F32, d4, 1, unsealed, 0, &out));
        BAD(BLOB_ERR_INVALID_ARGUMENT, "holds 64 bytes", blob_from_shared_fd(NULL, BLOB_F32, d100, 1, sealed, 0, &out));
        BAD(BLOB_ERR_INVALID_ARGUMENT, "holds 64 bytes", blob_from_shared_fd(NULL, BLOB_F32, d4, 1, sealed, 56, &out));
        BAD(BLOB_ERR_INVALID_ARGUMENT, "holds 64 bytes", blob_from_shared_fd(NULL, BLOB_F32, d4, 1, sealed, UINT64_MAX - 3, &out));
        BAD(BLOB_ERR_INVALID_ARGUMENT, "multiple", blob_from_shared_fd(NULL, BLOB_F32, d4, 1, sealed, 2, &out));
        BAD(BLOB_ERR_DTYPE, "", blob_from_shared_fd(NULL, 99, d4, 1, sealed, 0, &out));
        BAD(BLOB_ERR_SHAPE, "", blob_from_shared_fd(NULL, BLOB_F32, neg, 2, sealed, 0, &out));
        BAD(BLOB_ERR_NULL_POINTER, "", blob_from_shared_fd(NULL, BLOB_F32, NULL, 1, sealed, 0, &out));
        BAD(BLOB_ERR_NULL_POINTER, "out", blob_from_shared_fd(NULL, BLOB_F32, d4, 1, sealed, 0, NULL));
        BAD(BLOB_ERR_INVALID_HANDLE, "", blob_from_shared_fd((BlobEngine *)fake, BLOB_F32, d4, 1, sealed, 0, &out));
        CHECK(out == sentinel);
        /* The same file with a fitting shape and offset is a blob over it. */
        CHECK(blob_from_shared_fd(NULL, BLOB_F32, d4, 1, sealed, 48, &ok) == BLOB_OK);
        CHECK(blob_is_shared(ok, &flag) == BLOB_OK && flag);
        CHECK(blob_fill(ok, 2.0) == BLOB_OK);
        {
            float back[16];
            CHECK(pread(sealed, back, sizeof back, 0) == (ssize_t)sizeof back && back[12] == 2.0f && back[11] == 0.0f);
        }
        blob_free(ok);
        close(sealed);
        close(unsealed);
        close(plain);
        unlink(file);
        close(pipefd[0]);
        close(pipefd[1]);
    }
    BAD(BLOB_ERR_INVALID_HANDLE, "", blob_engine_is_gpu((BlobEngine *)fake, &flag));
    BAD(BLOB_ERR_INVALID_HANDLE, "", blob_engine_is_software((BlobEngine *)fake, &flag));
    BAD(BLOB_ERR_NULL_POINTER, "", blob_engine_is_software(NULL, NULL));
    BAD(BLOB_ERR_NULL_POINTER, "out", blob_engine_cuda(0, NULL));
    BAD(BLOB_ERR_INVALID_ARGUMENT, "negative", blob_engine_cuda(-1, &eng_out));
    BAD(BLOB_ERR_NULL_POINTER, "", blob_engine_cpu(NULL));
    BAD(BLOB_ERR_INVALID_HANDLE, "", blob_set_default_engine((BlobEngine *)fake));
    BAD(BLOB_ERR_INVALID_HANDLE, "", blob_engine(fake, &eng_out));
    CHECK(out == sentinel && eng_out == (BlobEngine *)&rows && sum == -1);

    CHECK(blob_release_buffer(l, held, false) == BLOB_OK);
    blob_free(a);
    blob_free(b);
    blob_free(c);
    blob_free(v);
    blob_free(w);
    blob_free(l);
    blob_free(blk);
    blob_free(flags);
    blob_free(f8);
    if (rows < 100) {
        fprintf(stderr, "only %d rows: the matrix needs at least 100\n", rows);
        failures++;
    }
    if (failures) fprintf(stderr, "%d checks failed\n", failures);
    else printf("bad_input: %d rows, all checks passed\n", rows);
    return failures != 0;
}
