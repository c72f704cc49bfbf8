/* quickstart: create a blob, fill it, read it back. */
#include <blob.h>
#include <stdio.h>

#define CHECK(call)                                                              \
    do {                                                                         \
        int32_t s_ = (call);                                                     \
        if (s_ != BLOB_OK) {                                                     \
            fprintf(stderr, "%s failed: %s: %s\n", #call, blob_status_str(s_),   \
                    blob_last_error());                                          \
            return 1;                                                            \
        }                                                                        \
    } while (0)

int main(void) {
    Blob *b = NULL;
    int64_t dims[2];
    float data[6];
    double asum = 0.0;
    int i;

    printf("libblob %s\n", blob_version());
    CHECK(blob_create_matrix(NULL, BLOB_F32, 2, 3, &b)); /* NULL engine = CPU */
    CHECK(blob_fill(b, 1.5));
    CHECK(blob_dims(b, dims, 2));
    CHECK(blob_copy_to_host(b, data, sizeof data));
    CHECK(blob_asum(b, &asum));
    printf("dims [%lld, %lld], data:", (long long)dims[0], (long long)dims[1]);
    for (i = 0; i < 6; i++) printf(" %.1f", data[i]);
    printf(", asum %.1f\n", asum);
    if (asum != 9.0 || data[5] != 1.5f) return 1;
    CHECK(blob_free(b));
    return 0;
}
