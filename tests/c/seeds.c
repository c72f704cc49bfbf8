/* The seed documents' operations through the C API, on their documented
 * examples: NeoML's named dims on blobs of any rank (padded with trailing
 * 1s), typed CopyTo / CopyFrom, OpenVINO descs built from layouts and
 * introspected, raw memory of every dense layout.
 */
#include "check.h"
#include <string.h>

static size_t rank_of(const Blob *b) {
    size_t r = 99;
    blob_rank(b, &r);
    return r;
}

static int dims_are(const Blob *b, const int64_t *want, size_t n) {
    int64_t got[8] = {0};
    size_t i;
    if (rank_of(b) != n || blob_dims(b, got, 8) != BLOB_OK) return 0;
    for (i = 0; i < n; i++)
        if (got[i] != want[i]) return 0;
    return 1;
}

/* NeoML: MergeByDim / SplitByDim / GetTransposed by named dims work on
 * vectors and matrices as on 7-D blobs. */
static void named_dims(void) {
    static const float a[5] = {0, 1, 2, 3, 4}, b[5] = {10, 11, 12, 13, 14};
    static const float interleaved[10] = {0, 10, 1, 11, 2, 12, 3, 13, 4, 14};
    const int64_t merged_dims[7] = {5, 1, 1, 1, 1, 1, 2}, m23[2] = {2, 3}, m231[3] = {2, 3, 1};
    float got[10];
    bool eq = false;
    Blob *va = NULL, *vb = NULL, *m = NULL, *x = NULL, *y = NULL, *t = NULL, *mat = NULL, *mat1 = NULL, *back = NULL;
    const Blob *parts[2];
    Blob *outs[2];

    CHECK(blob_create_vector(NULL, BLOB_F32, 5, &va) == BLOB_OK && blob_copy_from_host(va, a, sizeof a) == BLOB_OK);
    CHECK(blob_create_vector(NULL, BLOB_F32, 5, &vb) == BLOB_OK && blob_copy_from_host(vb, b, sizeof b) == BLOB_OK);
    CHECK(blob_create_tensor(NULL, BLOB_F32, merged_dims, 7, &m) == BLOB_OK);
    parts[0] = va;
    parts[1] = vb;
    /* The int-axis merge needs equal ranks. */
    CHECK(blob_merge(parts, 2, 6, m) == BLOB_ERR_SHAPE);
    CHECK(blob_merge_dim(parts, 2, BLOB_DIM_CHANNELS, m) == BLOB_OK);
    CHECK(blob_copy_to_host(m, got, sizeof got) == BLOB_OK && memcmp(got, interleaved, sizeof got) == 0);
    CHECK(blob_create_vector(NULL, BLOB_F32, 5, &x) == BLOB_OK && blob_create_vector(NULL, BLOB_F32, 5, &y) == BLOB_OK);
    outs[0] = x;
    outs[1] = y;
    CHECK(blob_split_dim(m, BLOB_DIM_CHANNELS, outs, 2) == BLOB_OK);
    CHECK(blob_copy_to_host(y, got, 5 * sizeof(float)) == BLOB_OK && memcmp(got, b, sizeof b) == 0);
    CHECK(blob_merge_dim(parts, 2, 7, m) == BLOB_ERR_OUT_OF_RANGE);
    CHECK(blob_merge_dim(parts, 2, BLOB_DIM_HEIGHT, m) == BLOB_ERR_SHAPE);

    /* A 2x3 matrix (BatchLength 2, BatchWidth 3) transposed with Channels. */
    CHECK(blob_create_tensor(NULL, BLOB_F32, m23, 2, &mat) == BLOB_OK);
    {
        static const float six[6] = {0, 1, 2, 3, 4, 5}, want[6] = {0, 3, 1, 4, 2, 5};
        CHECK(blob_copy_from_host(mat, six, sizeof six) == BLOB_OK);
        CHECK(blob_transposed_dims(mat, BLOB_DIM_BATCH_LENGTH, BLOB_DIM_CHANNELS, &t) == BLOB_OK);
        /* padded {2,3,1,1,1,1,1} -> {1,3,1,1,1,1,2}: rank 7, t[j, c] = mat[c, j] */
        {
            const int64_t want_dims[7] = {1, 3, 1, 1, 1, 1, 2};
            CHECK(dims_are(t, want_dims, 7));
        }
        CHECK(blob_copy_to_host(t, got, 6 * sizeof(float)) == BLOB_OK && memcmp(got, want, sizeof want) == 0);
        CHECK(blob_create_tensor(NULL, BLOB_F32, m23, 2, &back) == BLOB_OK);
        CHECK(blob_transpose_from_dims(back, t, BLOB_DIM_BATCH_LENGTH, BLOB_DIM_CHANNELS) == BLOB_OK);
        CHECK(blob_copy_to_host(back, got, 6 * sizeof(float)) == BLOB_OK && memcmp(got, six, sizeof six) == 0);
        blob_free(t);
        t = NULL;
        /* Swapping two padding dims keeps the rank. */
        CHECK(blob_transposed_dims(mat, BLOB_DIM_HEIGHT, BLOB_DIM_CHANNELS, &t) == BLOB_OK && dims_are(t, m23, 2));
        CHECK(blob_transposed_dims(mat, BLOB_DIM_HEIGHT, -1, &x) == BLOB_ERR_OUT_OF_RANGE);
    }

    /* HasEqualDimensions compares the 7 padded dims. */
    CHECK(blob_create_tensor(NULL, BLOB_F32, m231, 3, &mat1) == BLOB_OK);
    CHECK(blob_has_equal_dims(mat, mat1, &eq) == BLOB_OK && eq);
    CHECK(blob_has_equal_dims(mat, va, &eq) == BLOB_OK && !eq);

    blob_free(va);
    blob_free(vb);
    blob_free(m);
    blob_free(x);
    blob_free(y);
    blob_free(t);
    blob_free(mat);
    blob_free(mat1);
    blob_free(back);
}

/* NeoML CopyTo(dst, size) / CopyFrom(src): typed, the first elements. */
static void typed_copies(void) {
    static const int32_t six[6] = {0, 1, 2, 3, 4, 5};
    const int64_t d23[2] = {2, 3};
    int32_t got[6] = {9, 9, 9, 9, 9, 9};
    float f[2] = {0};
    Blob *b = NULL;
    CHECK(blob_create_tensor(NULL, BLOB_I32, d23, 2, &b) == BLOB_OK);
    CHECK(blob_copy_from_typed(b, BLOB_I32, six, 6) == BLOB_OK);
    CHECK(blob_copy_to(b, BLOB_I32, got, 4) == BLOB_OK);
    CHECK(got[0] == 0 && got[3] == 3 && got[4] == 9);
    CHECK(blob_copy_to(b, BLOB_I32, NULL, 0) == BLOB_OK);
    CHECK(blob_copy_to(b, BLOB_F32, f, 2) == BLOB_ERR_DTYPE && f[0] == 0);
    CHECK(blob_copy_to(b, BLOB_I32, got, 7) == BLOB_ERR_INVALID_ARGUMENT);
    /* A prefix write keeps the rest. */
    CHECK(blob_copy_from_typed(b, BLOB_I32, six + 4, 2) == BLOB_OK);
    CHECK(blob_copy_to(b, BLOB_I32, got, 6) == BLOB_OK && got[0] == 4 && got[1] == 5 && got[2] == 2 && got[5] == 5);
    blob_free(b);
}

/* Serrano: a repeating value (numpy.full) and shape equality. */
static void construction(void) {
    const int64_t d23[2] = {2, 3}, d231[3] = {2, 3, 1};
    int32_t got[6] = {0};
    bool eq = false;
    Blob *f = NULL, *g = NULL, *h = NULL, *bad = (Blob *)&failures;
    CHECK(blob_create_full(NULL, BLOB_I32, d23, 2, -2.75, &f) == BLOB_OK);
    CHECK(blob_copy_to(f, BLOB_I32, got, 6) == BLOB_OK && got[0] == -2 && got[5] == -2);
    CHECK(blob_create_full(NULL, BLOB_U8, d23, 2, 256.0, &bad) == BLOB_ERR_OUT_OF_RANGE && bad == (Blob *)&failures);
    CHECK(blob_create_full(NULL, BLOB_F32, d23, 2, 1.0, &g) == BLOB_OK);
    CHECK(blob_same_shape(f, g, false, &eq) == BLOB_OK && eq);
    CHECK(blob_same_shape(f, g, true, &eq) == BLOB_OK && !eq);
    CHECK(blob_create_full(NULL, BLOB_F32, d231, 3, 1.0, &h) == BLOB_OK);
    CHECK(blob_same_shape(g, h, true, &eq) == BLOB_OK && !eq);
    CHECK(blob_has_equal_dims(g, h, &eq) == BLOB_OK && eq);
    blob_free(f);
    blob_free(g);
    blob_free(h);
}

/* OpenVINO buffer(): the raw memory of any dense layout, padding included. */
static void raw_memory(void) {
    const int64_t dims[4] = {1, 25, 20, 20}, blk[5] = {1, 4, 20, 20, 8}, order[5] = {0, 1, 2, 3, 1};
    const int64_t v[4] = {0, 1, 0, 2};
    static float logical[10000], raw[12800];
    int64_t n = 0, off = 0, i;
    void *p = NULL;
    Blob *b8 = NULL, *dense = NULL, *r = NULL, *nhwc = NULL;
    for (i = 0; i < 10000; i++) logical[i] = (float)i;
    CHECK(blob_create_desc(NULL, BLOB_F32, dims, 4, blk, order, 5, &b8) == BLOB_OK);
    CHECK(blob_create_tensor(NULL, BLOB_F32, dims, 4, &dense) == BLOB_OK);
    CHECK(blob_copy_from_host(dense, logical, sizeof logical) == BLOB_OK);
    CHECK(blob_reorder(b8, dense) == BLOB_OK);
    CHECK(blob_raw_count(b8, &n) == BLOB_OK && n == 12800);
    /* Logical copies read a blocked blob's logical values; blob_raw its
     * memory as laid out. */
    CHECK(blob_copy_to_host(b8, raw, sizeof logical) == BLOB_OK && memcmp(raw, logical, sizeof logical) == 0);
    CHECK(blob_raw(b8, &r) == BLOB_OK && blob_copy_to_host(r, raw, sizeof raw) == BLOB_OK);
    CHECK(blob_desc_offset(b8, v, 4, &off) == BLOB_OK && raw[off] == logical[402]);
    CHECK(raw[12800 - 1] == 0.0f); /* padding channel 31 */
    CHECK(blob_get_buffer(b8, 8, 8, true, &p) == BLOB_OK);
    CHECK(((float *)p)[1] == logical[400 + 1]); /* (0, 1, 0, 1) */
    ((float *)p)[1] = -1.0f;
    CHECK(blob_release_buffer(b8, p, true) == BLOB_OK);
    CHECK(blob_reorder(dense, b8) == BLOB_OK && blob_copy_to_host(dense, logical, sizeof logical) == BLOB_OK);
    CHECK(logical[401] == -1.0f);
    /* NHWC by name: the buffer is channels-last memory. */
    CHECK(blob_create_layout(NULL, BLOB_F32, dims, 4, BLOB_LAYOUT_NHWC, &nhwc) == BLOB_OK);
    CHECK(blob_reorder(nhwc, dense) == BLOB_OK);
    CHECK(blob_get_buffer(nhwc, 0, 25, true, &p) == BLOB_OK);
    CHECK(((float *)p)[1] == logical[400] && ((float *)p)[24] == logical[24 * 400]);
    CHECK(blob_release_buffer(nhwc, p, false) == BLOB_OK);
    blob_free(b8);
    blob_free(dense);
    blob_free(r);
    blob_free(nhwc);
}

int main(void) {
    raw_memory();
    named_dims();
    typed_copies();
    construction();
    if (failures) fprintf(stderr, "%d checks failed\n", failures);
    else printf("seeds: all checks passed\n");
    return failures != 0;
}
