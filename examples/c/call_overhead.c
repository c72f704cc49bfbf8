/* call_overhead: per-call cost of small C API calls, handle validation
 * included (a benchmark, not a test). */
#include <blob.h>
#include <stdio.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(void) {
    Blob *b = NULL;
    int64_t d = 0;
    const long n = 2000000;
    long i;
    double t0, t_fill, t_dim;

    if (blob_create_vector(NULL, BLOB_F32, 8, &b) != BLOB_OK) return 1;
    t0 = now();
    for (i = 0; i < n; i++) blob_fill(b, (double)i);
    t_fill = (now() - t0) / (double)n;
    t0 = now();
    for (i = 0; i < n; i++) blob_dim(b, 0, &d);
    t_dim = (now() - t0) / (double)n;
    printf("blob_fill on 8 elements: %.1f ns/call\n", t_fill * 1e9);
    printf("blob_dim:                %.1f ns/call\n", t_dim * 1e9);
    blob_free(b);
    return 0;
}
