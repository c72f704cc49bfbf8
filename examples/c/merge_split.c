/* merge_split: merge two image blobs along Channels, then split them back. */
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
    Blob *rgb = NULL, *alpha = NULL, *rgba = NULL, *r2 = NULL, *a2 = NULL;
    const Blob *parts[2];
    Blob *outs[2];
    double s1 = 0, s2 = 0;
    int64_t c = 0;

    CHECK(blob_create_image2d(NULL, BLOB_F32, 1, 2, 4, 4, 3, &rgb));
    CHECK(blob_create_image2d(NULL, BLOB_F32, 1, 2, 4, 4, 1, &alpha));
    CHECK(blob_create_image2d(NULL, BLOB_F32, 1, 2, 4, 4, 4, &rgba));
    CHECK(blob_fill(rgb, 0.5));
    CHECK(blob_fill(alpha, 1.0));
    parts[0] = rgb;
    parts[1] = alpha;
    CHECK(blob_merge(parts, 2, BLOB_DIM_CHANNELS, rgba));
    CHECK(blob_named_dim(rgba, BLOB_DIM_CHANNELS, &c));
    CHECK(blob_asum(rgba, &s1));
    printf("merged: %lld channels, asum %.1f\n", (long long)c, s1);
    CHECK(blob_clone(rgb, &r2));
    CHECK(blob_clone(alpha, &a2));
    outs[0] = r2;
    outs[1] = a2;
    CHECK(blob_split(rgba, BLOB_DIM_CHANNELS, outs, 2));
    CHECK(blob_asum(r2, &s2));
    printf("split back: rgb asum %.1f\n", s2);
    /* Mismatched shapes are reported, not guessed at. */
    outs[0] = a2;
    outs[1] = a2;
    printf("bad split: %s\n", blob_status_str(blob_split(rgba, BLOB_DIM_CHANNELS, outs, 2)));
    blob_free(rgb); blob_free(alpha); blob_free(rgba); blob_free(r2); blob_free(a2);
    return (s1 == 2 * 16 * 2.5 && s2 == 2 * 16 * 1.5) ? 0 : 1;
}
