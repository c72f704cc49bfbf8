/* lifo: NeoML buffers are released in LIFO order; a violation is reported
 * (BLOB_ERR_LIFO), changes nothing, and the program recovers. */
#include <blob.h>
#include <stdio.h>

#define CHECK(call)                                                              \
    do {                                                                         \
        int32_t s_ = (call);                                                     \
        if (s_ != BLOB_OK) {                                                     \
            fprintf(stderr, "%s failed: %s\n", #call, blob_last_error());        \
            return 1;                                                            \
        }                                                                        \
    } while (0)

int main(void) {
    Blob *b = NULL;
    void *outer = NULL, *inner = NULL;
    float *f;
    double sum = 0;
    int32_t s;

    CHECK(blob_create_vector(NULL, BLOB_F32, 8, &b));
    CHECK(blob_get_buffer(b, 0, 4, true, &outer));
    CHECK(blob_get_buffer(b, 4, 4, false, &inner));
    f = (float *)inner;
    f[0] = 2.0f;
    s = blob_release_buffer(b, outer, true); /* wrong order */
    printf("release outer first: %s: %s\n", blob_status_str(s), blob_last_error());
    if (s != BLOB_ERR_LIFO) return 1;
    CHECK(blob_release_buffer(b, inner, true)); /* recover: newest first */
    CHECK(blob_release_buffer(b, outer, true));
    CHECK(blob_asum(b, &sum));
    printf("after recovery: asum %.1f\n", sum);
    CHECK(blob_free(b));
    return sum == 2.0 ? 0 : 1;
}
