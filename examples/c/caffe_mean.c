/* caffe_mean: load the ImageNet mean (Caffe BlobProto). Skips (exit 77)
 * while this build has no Caffe support or the file is missing. */
#include <blob.h>
#include <stdio.h>

int main(int argc, char **argv) {
    Blob *b = NULL;
    int32_t s;
    int64_t dims[4];
    FILE *f;

    if (argc < 2 || (f = fopen(argv[1], "rb")) == NULL) {
        printf("SKIP: no Caffe mean file given or found\n");
        return 77;
    }
    fclose(f);
    s = blob_load_caffe(NULL, argv[1], &b);
    if (s == BLOB_ERR_UNSUPPORTED) {
        printf("SKIP: %s\n", blob_last_error());
        return 77;
    }
    if (s != BLOB_OK) {
        fprintf(stderr, "blob_load_caffe: %s\n", blob_last_error());
        return 1;
    }
    if (blob_dims(b, dims, 4) != BLOB_OK) return 1;
    printf("imagenet mean: %lld x %lld x %lld x %lld\n", (long long)dims[0], (long long)dims[1],
           (long long)dims[2], (long long)dims[3]);
    blob_free(b);
    return 0;
}
