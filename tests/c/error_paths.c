/* Error paths of the C API: every bad call returns its documented status,
 * leaves out-pointers untouched and the blobs' data unchanged. */
#include <blob.h>
#include <stdio.h>
#include <string.h>

static int failures = 0, checks = 0;

#define EXPECT(call, code)                                                            \
    do {                                                                              \
        int32_t s_ = (call);                                                          \
        checks++;                                                                     \
        if (s_ != (code)) {                                                           \
            fprintf(stderr, "%s:%d: %s returned %s, expected %s (%s)\n", __FILE__,    \
                    __LINE__, #call, blob_status_str(s_), blob_status_str(code),      \
                    blob_last_error());                                               \
            failures++;                                                               \
        } else if ((code) != BLOB_OK && blob_last_error()[0] == '\0') {               \
            fprintf(stderr, "%s:%d: %s gave no message\n", __FILE__, __LINE__, #call); \
            failures++;                                                               \
        }                                                                             \
    } while (0)

#define TRUE_(cond)                                                                   \
    do {                                                                              \
        checks++;                                                                     \
        if (!(cond)) {                                                                \
            fprintf(stderr, "%s:%d: %s is false\n", __FILE__, __LINE__, #cond);       \
            failures++;                                                               \
        }                                                                             \
    } while (0)

static double asum(Blob *b) {
    double s = -1;
    blob_asum(b, &s);
    return s;
}

int main(void) {
    Blob *a = NULL, *b = NULL, *freed = NULL, *w = NULL;
    Blob *fake = (Blob *)(uintptr_t)0xdead0;
    int64_t dims[33], d = 12345, pos = 777;
    const Blob *parts[2];
    Blob *outs[2];
    void *p1 = NULL, *p2 = NULL, *untouched = (void *)0x2;
    float buf[6];
    int i;

    for (i = 0; i < 33; i++) dims[i] = 1;
    EXPECT(blob_create_matrix(NULL, BLOB_F32, 2, 3, &a), BLOB_OK);
    EXPECT(blob_fill(a, 1.0), BLOB_OK);
    EXPECT(blob_create_matrix(NULL, BLOB_F32, 2, 3, &freed), BLOB_OK);
    EXPECT(blob_free(freed), BLOB_OK);
    TRUE_(strcmp(blob_last_error(), "") == 0);

    /* NULL arguments */
    EXPECT(blob_create_matrix(NULL, BLOB_F32, 2, 3, NULL), BLOB_ERR_NULL_POINTER);
    EXPECT(blob_fill(NULL, 1.0), BLOB_ERR_NULL_POINTER);
    EXPECT(blob_dim(a, 0, NULL), BLOB_ERR_NULL_POINTER);
    EXPECT(blob_dim(NULL, 0, &d), BLOB_ERR_NULL_POINTER);
    EXPECT(blob_free(NULL), BLOB_ERR_NULL_POINTER);
    EXPECT(blob_create_tensor(NULL, BLOB_F32, NULL, 2, &b), BLOB_ERR_NULL_POINTER);
    EXPECT(blob_copy_from_host(a, NULL, 24), BLOB_ERR_NULL_POINTER);
    EXPECT(blob_copy_to_host(a, NULL, 24), BLOB_ERR_NULL_POINTER);
    EXPECT(blob_merge(NULL, 2, 0, a), BLOB_ERR_NULL_POINTER);
    EXPECT(blob_load_caffe(NULL, NULL, &b), BLOB_ERR_NULL_POINTER);
    EXPECT(blob_wrap(NULL, BLOB_F32, dims, 1, NULL, 4, NULL, NULL, &b), BLOB_ERR_NULL_POINTER);
    EXPECT(blob_engine_free(NULL), BLOB_ERR_NULL_POINTER);
    TRUE_(d == 12345 && b == NULL);

    /* freed, double-freed and never-issued handles */
    EXPECT(blob_fill(freed, 2.0), BLOB_ERR_INVALID_HANDLE);
    EXPECT(blob_free(freed), BLOB_ERR_INVALID_HANDLE);
    EXPECT(blob_dim(fake, 0, &d), BLOB_ERR_INVALID_HANDLE);
    EXPECT(blob_add(a, freed), BLOB_ERR_INVALID_HANDLE);
    EXPECT(blob_create_matrix((BlobEngine *)a, BLOB_F32, 1, 1, &b), BLOB_ERR_INVALID_HANDLE);
    EXPECT(blob_engine_free((BlobEngine *)fake), BLOB_ERR_INVALID_HANDLE);
    TRUE_(d == 12345 && b == NULL && asum(a) == 6.0);

    /* bad dims: negative, overflowing, rank 33, bad dtype */
    dims[0] = -1;
    EXPECT(blob_create_tensor(NULL, BLOB_F32, dims, 2, &b), BLOB_ERR_SHAPE);
    dims[0] = INT64_MAX;
    dims[1] = 4;
    EXPECT(blob_create_tensor(NULL, BLOB_F32, dims, 2, &b), BLOB_ERR_SHAPE);
    dims[0] = dims[1] = 1;
    EXPECT(blob_create_tensor(NULL, BLOB_F32, dims, 33, &b), BLOB_ERR_SHAPE);
    EXPECT(blob_create_data(NULL, BLOB_F32, 1, -2, 3, &b), BLOB_ERR_SHAPE);
    EXPECT(blob_create_vector(NULL, 0, 3, &b), BLOB_ERR_DTYPE);
    EXPECT(blob_create_vector(NULL, 99, 3, &b), BLOB_ERR_DTYPE);
    EXPECT(blob_clone_as(a, -4, &b), BLOB_ERR_DTYPE);
    TRUE_(b == NULL);
    dims[0] = 3;
    dims[1] = 3;
    EXPECT(blob_reinterpret(a, dims, 2), BLOB_ERR_SHAPE);
    dims[0] = -3;
    EXPECT(blob_reshape(a, dims, 2), BLOB_ERR_SHAPE);
    EXPECT(blob_dims(a, dims, 1), BLOB_ERR_OUT_OF_RANGE);
    EXPECT(blob_dim(a, 2, &d), BLOB_ERR_OUT_OF_RANGE);
    EXPECT(blob_dim(a, -3, &d), BLOB_ERR_OUT_OF_RANGE);
    EXPECT(blob_named_dim(a, 7, &d), BLOB_ERR_OUT_OF_RANGE);
    EXPECT(blob_count_range(a, 1, 3, &d), BLOB_ERR_OUT_OF_RANGE);
    EXPECT(blob_count_range(a, -1, 1, &d), BLOB_ERR_OUT_OF_RANGE);
    TRUE_(d == 12345);

    /* windows, positions, slices */
    EXPECT(blob_create_window(a, 3, &w), BLOB_ERR_OUT_OF_RANGE);
    EXPECT(blob_create_window(a, -1, &w), BLOB_ERR_OUT_OF_RANGE);
    EXPECT(blob_create_window(a, 1, &w), BLOB_OK);
    EXPECT(blob_set_parent_pos(w, 2), BLOB_ERR_OUT_OF_RANGE);
    EXPECT(blob_set_parent_pos(w, -1), BLOB_ERR_OUT_OF_RANGE);
    EXPECT(blob_shift_parent_pos(w, INT64_MAX), BLOB_ERR_OUT_OF_RANGE);
    EXPECT(blob_parent_pos(w, &pos), BLOB_OK);
    TRUE_(pos == 0);
    EXPECT(blob_parent_pos(a, &pos), BLOB_ERR_INVALID_ARGUMENT);
    EXPECT(blob_set_parent_pos(a, 0), BLOB_ERR_INVALID_ARGUMENT);
    dims[0] = 2;
    EXPECT(blob_slice(a, dims, 1, &b), BLOB_ERR_OUT_OF_RANGE);
    dims[0] = -1;
    EXPECT(blob_slice(a, dims, 1, &b), BLOB_ERR_OUT_OF_RANGE);
    EXPECT(blob_offset(a, dims, 33, &d), BLOB_ERR_OUT_OF_RANGE);

    /* buffers and LIFO */
    EXPECT(blob_get_buffer(a, 4, 3, true, &untouched), BLOB_ERR_OUT_OF_RANGE);
    EXPECT(blob_get_buffer(a, -1, 1, true, &untouched), BLOB_ERR_OUT_OF_RANGE);
    EXPECT(blob_get_buffer(a, 0, INT64_MAX, true, &untouched), BLOB_ERR_OUT_OF_RANGE);
    TRUE_(untouched == (void *)0x2);
    EXPECT(blob_get_buffer(a, 0, 3, true, &p1), BLOB_OK);
    EXPECT(blob_get_buffer(a, 3, 3, true, &p2), BLOB_OK);
    EXPECT(blob_release_buffer(a, p1, true), BLOB_ERR_LIFO);
    EXPECT(blob_release_buffer(a, (void *)buf, true), BLOB_ERR_LIFO);
    EXPECT(blob_release_buffer(a, p2, true), BLOB_OK);
    EXPECT(blob_release_buffer(a, p1, true), BLOB_OK);
    EXPECT(blob_release_buffer(a, p1, true), BLOB_ERR_LIFO);

    /* busy: a view shares the memory, so growing is refused */
    dims[0] = 100;
    EXPECT(blob_reshape(a, dims, 1), BLOB_ERR_BUSY);
    EXPECT(blob_dim(a, 0, &d), BLOB_OK);
    TRUE_(d == 2);

    /* merge / split shape and dtype mismatches */
    EXPECT(blob_create_matrix(NULL, BLOB_F32, 2, 2, &b), BLOB_OK);
    parts[0] = a;
    parts[1] = b;
    EXPECT(blob_merge(parts, 2, 0, a), BLOB_ERR_SHAPE);
    EXPECT(blob_merge(parts, 2, 5, a), BLOB_ERR_OUT_OF_RANGE);
    EXPECT(blob_merge(parts, 0, 0, a), BLOB_ERR_INVALID_ARGUMENT);
    outs[0] = b;
    outs[1] = b;
    EXPECT(blob_split(a, 1, outs, 2), BLOB_ERR_SHAPE);
    EXPECT(blob_merge_objects(parts, 2, a), BLOB_ERR_SHAPE);
    EXPECT(blob_copy_from(a, b), BLOB_ERR_SHAPE);
    EXPECT(blob_add(a, b), BLOB_ERR_SHAPE);
    EXPECT(blob_transpose_from(b, a, 0, 1), BLOB_ERR_SHAPE);
    blob_free(b);
    b = NULL;
    EXPECT(blob_create_matrix(NULL, BLOB_I32, 2, 3, &b), BLOB_OK);
    EXPECT(blob_add(a, b), BLOB_ERR_DTYPE);
    EXPECT(blob_copy_from(a, b), BLOB_ERR_DTYPE);
    parts[1] = b;
    EXPECT(blob_merge(parts, 2, 0, a), BLOB_ERR_DTYPE);
    EXPECT(blob_copy_from_host(a, buf, 23), BLOB_ERR_INVALID_ARGUMENT);
    EXPECT(blob_copy_to_host(a, buf, 25), BLOB_ERR_INVALID_ARGUMENT);
    EXPECT(blob_fill_object(a, 6, 1.0), BLOB_ERR_OUT_OF_RANGE);
    EXPECT(blob_clear_object(a, -1), BLOB_ERR_OUT_OF_RANGE);
    /* (blob_engine_gpu's errors are tested in gpu.c: loading GPU drivers
     * is not something valgrind can judge.) */

    /* nothing above changed the data */
    TRUE_(asum(a) == 6.0);
    EXPECT(blob_copy_to_host(a, buf, sizeof buf), BLOB_OK);
    TRUE_(buf[0] == 1.0f && buf[5] == 1.0f);
    TRUE_(strcmp(blob_status_str(BLOB_OK), "BLOB_OK") == 0);
    TRUE_(strcmp(blob_status_str(BLOB_ERR_LIFO), "BLOB_ERR_LIFO") == 0);
    TRUE_(strcmp(blob_status_str(BLOB_ERR_NULL_POINTER), "BLOB_ERR_NULL_POINTER") == 0);
    TRUE_(strcmp(blob_status_str(999), "BLOB_UNKNOWN") == 0);
    TRUE_(strcmp(blob_status_str(BLOB_ERR_READ_ONLY), "BLOB_ERR_READ_ONLY") == 0);
    TRUE_(strcmp(blob_status_str(-1), "BLOB_UNKNOWN") == 0);
    TRUE_(strcmp(blob_status_str(16), "BLOB_UNKNOWN") == 0);

    blob_free(w);
    blob_free(b);
    blob_free(a);
    printf("%d passed, %d failed\n", checks - failures, failures);
    return failures == 0 ? 0 : 1;
}
