/* caffe_mean: load the ImageNet mean that Caffe's tools wrote (a legacy
 * 1x3x256x256 BlobProto), print its shape and per-channel means, and save
 * it as a NumPy .npy file.
 *
 *   caffe_mean imagenet_mean.binaryproto [out.npy]
 */
#include <blob.h>
#include <stdio.h>

#define TRY(call)                                                        \
    do {                                                                 \
        int32_t s_ = (call);                                             \
        if (s_ != BLOB_OK) {                                             \
            fprintf(stderr, "%s failed: %s (%s)\n", #call,               \
                    blob_status_str(s_), blob_last_error());            \
            return 1;                                                    \
        }                                                                \
    } while (0)

int main(int argc, char **argv) {
    const char *in = argc > 1 ? argv[1] : "imagenet_mean.binaryproto";
    const char *out = argc > 2 ? argv[2] : "imagenet_mean.npy";
    Blob *mean = NULL, *back = NULL;
    bool same = false;
    int64_t dims[4], plane;
    size_t rank;
    int64_t c, i;
    void *p = NULL;
    const float *v;

    TRY(blob_load_caffe(NULL, in, &mean));
    TRY(blob_rank(mean, &rank));
    TRY(blob_dims(mean, dims, 4));
    printf("%s: rank %zu, %lld x %lld x %lld x %lld float32\n", in, rank, (long long)dims[0],
           (long long)dims[1], (long long)dims[2], (long long)dims[3]);

    /* Per-channel means over the mapped data (exchange = read). */
    plane = dims[2] * dims[3];
    TRY(blob_get_buffer(mean, 0, dims[1] * plane, true, &p));
    v = (const float *)p;
    for (c = 0; c < dims[1]; c++) {
        double sum = 0;
        for (i = 0; i < plane; i++) sum += v[c * plane + i];
        printf("channel %lld mean: %.3f\n", (long long)c, sum / (double)plane);
    }
    TRY(blob_release_buffer(mean, p, false));

    TRY(blob_save_npy(mean, out));
    TRY(blob_load_npy(NULL, out, &back));
    TRY(blob_has_equal_dims(mean, back, &same));
    printf("saved %s (%s)\n", out, same ? "same dims" : "reloaded with other dims");
    blob_free(back);
    blob_free(mean);
    return 0;
}
