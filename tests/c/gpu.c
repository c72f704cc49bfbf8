/* The GPU engine through the C API: Caffe's SyncedMemory head transitions
 * (CPU write -> GPU read -> synced; GPU write -> CPU read -> synced),
 * blob_engine, and no stale data through held buffers. Skips (77) when
 * the machine has no GPU adapter; CI installs lavapipe. */
#include "check.h"
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Forks; the child opens a GPU of its own and fills and reads a blob on
 * it. Returns 10 when the child was refused naming the fork, 11 when its
 * GPU worked, 1 for another error, 2 for wrong values, -1 if it died. */
static int child_opens_a_gpu(void) {
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        BlobEngine *mine = NULL;
        Blob *c = NULL;
        float v[4] = {0};
        const int64_t cd[1] = {4};
        int st;
        alarm(60);
        st = blob_engine_gpu(NULL, &mine);
        if (st == BLOB_ERR_DEVICE && strstr(blob_last_error(), "forked") != NULL) _exit(10);
        if (st != BLOB_OK) _exit(1);
        _exit(blob_create_tensor(mine, BLOB_F32, cd, 1, &c) == BLOB_OK && blob_fill(c, 2.0) == BLOB_OK &&
                      blob_copy_to_host(c, v, sizeof v) == BLOB_OK && v[3] == 2.0f
                  ? 11
                  : 2);
    }
    int status = 0;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int32_t head(const Blob *b) {
    int32_t h = -1;
    CHECK(blob_head(b, &h) == BLOB_OK);
    return h;
}

int main(void) {
    BlobEngine *gpu = NULL, *owner = NULL;
    Blob *b = NULL;
    const int64_t dims[2] = {4, 8};
    float src[32], got[32];
    double s = 0;
    bool is_gpu = false;
    void *p = NULL;
    int i;

    /* A missing adapter is an error that names it and leaves *out alone. */
    gpu = (BlobEngine *)&failures;
    CHECK(blob_engine_gpu("no adapter is called this", &gpu) == BLOB_ERR_DEVICE);
    CHECK(gpu == (BlobEngine *)&failures);
    CHECK(strstr(blob_last_error(), "no adapter is called this") != NULL);
    gpu = NULL;
    if (blob_engine_gpu(NULL, &gpu) != BLOB_OK) {
        printf("SKIP: %s\n", blob_last_error());
        return 77;
    }
    CHECK(blob_engine_is_gpu(gpu, &is_gpu) == BLOB_OK && is_gpu);
    CHECK(blob_create_tensor(gpu, BLOB_F32, dims, 2, &b) == BLOB_OK);
    CHECK(blob_engine(b, &owner) == BLOB_OK);
    CHECK(blob_engine_is_gpu(owner, &is_gpu) == BLOB_OK && is_gpu);
    CHECK(head(b) == BLOB_HEAD_UNINITIALIZED);

    /* CPU write -> GPU read -> synced */
    for (i = 0; i < 32; i++) src[i] = (float)i;
    CHECK(blob_copy_from_host(b, src, sizeof src) == BLOB_OK);
    CHECK(head(b) == BLOB_HEAD_CPU);
    CHECK(blob_asum(b, &s) == BLOB_OK && s == 496.0);
    CHECK(head(b) == BLOB_HEAD_SYNCED);

    /* GPU write -> CPU read -> synced */
    CHECK(blob_scale(b, 2.0) == BLOB_OK);
    CHECK(head(b) == BLOB_HEAD_GPU);
    CHECK(blob_copy_to_host(b, got, sizeof got) == BLOB_OK);
    CHECK(head(b) == BLOB_HEAD_SYNCED);
    for (i = 0; i < 32; i++) CHECK(got[i] == 2.0f * (float)i);

    /* A held buffer sees kernels and keeps its writes. */
    CHECK(blob_fill(b, 1.0) == BLOB_OK);
    CHECK(blob_get_buffer(b, 0, 4, true, &p) == BLOB_OK);
    CHECK(((float *)p)[3] == 1.0f);
    ((float *)p)[0] = 10.0f;
    CHECK(blob_fill_object(b, 2, 3.0) == BLOB_OK);
    CHECK(blob_release_buffer(b, p, true) == BLOB_OK);
    /* A [4, 8] blob has 32 objects of one element: object 2 is element 2. */
    CHECK(blob_asum(b, &s) == BLOB_OK && s == 10.0 + 3.0 + 30.0);
    CHECK(blob_copy_to_host(b, got, sizeof got) == BLOB_OK);
    CHECK(got[0] == 10.0f && got[2] == 3.0f && got[31] == 1.0f);

    /* Transfers as Caffe's SyncedMemory makes them, counted: a GPU write,
     * a host read (one download), a kernel (nothing moves); a buffer taken
     * with exchange and released without is a read (nothing moves); one
     * released with exchange is a write (the next kernel uploads once). */
    {
        BlobEngineStats s0, s1;
        CHECK(blob_engine_reset_stats(gpu) == BLOB_OK);
        CHECK(blob_engine_stats(gpu, &s0) == BLOB_OK && s0.uploads == 0 && s0.downloads == 0 && s0.kernels == 0);
        CHECK(blob_fill(b, 5.0) == BLOB_OK);
        CHECK(blob_copy_to_host(b, got, sizeof got) == BLOB_OK && got[7] == 5.0f);
        CHECK(blob_asum(b, &s) == BLOB_OK && s == 160.0);
        CHECK(blob_get_buffer(b, 0, 32, true, &p) == BLOB_OK && blob_release_buffer(b, p, false) == BLOB_OK);
        CHECK(blob_sumsq(b, &s) == BLOB_OK && s == 800.0);
        CHECK(head(b) == BLOB_HEAD_SYNCED);
        CHECK(blob_engine_stats(gpu, &s1) == BLOB_OK);
        CHECK(s1.uploads == 0 && s1.downloads == 1 && s1.bytes_downloaded == sizeof got && s1.kernels >= 3);
        CHECK(blob_get_buffer(b, 0, 32, true, &p) == BLOB_OK && blob_release_buffer(b, p, true) == BLOB_OK);
        CHECK(blob_asum(b, &s) == BLOB_OK && s == 160.0);
        CHECK(blob_engine_stats(gpu, &s1) == BLOB_OK && s1.uploads == 1 && s1.bytes_uploaded == sizeof got);
        CHECK(blob_engine_stats(gpu, NULL) == BLOB_ERR_NULL_POINTER);
    }

    /* Integer sums are exact: ten 0x01010101 are 168430090 (f32: ...080). */
    {
        static const int32_t ten[10] = {0x01010101, 0x01010101, 0x01010101, 0x01010101, 0x01010101,
                                        0x01010101, 0x01010101, 0x01010101, 0x01010101, 0x01010101};
        Blob *bi = NULL;
        CHECK(blob_create_vector(gpu, BLOB_I32, 10, &bi) == BLOB_OK && blob_copy_from_host(bi, ten, sizeof ten) == BLOB_OK);
        CHECK(blob_asum(bi, &s) == BLOB_OK && s == 168430090.0);
        blob_free(bi);
    }
    /* Past 2^64: five squares of -2^31 are 5 * 2^62 (64-bit sums wrapped
     * to 2^62); f32 squares past f32's range are the host's f64 sum. */
    {
        static const int32_t mins[5] = {INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN};
        static const float bigs[3] = {2e19f, 2e19f, 2e19f};
        Blob *bi = NULL, *bf = NULL;
        CHECK(blob_create_vector(gpu, BLOB_I32, 5, &bi) == BLOB_OK && blob_copy_from_host(bi, mins, sizeof mins) == BLOB_OK);
        CHECK(blob_sumsq(bi, &s) == BLOB_OK && s == 5.0 * 4611686018427387904.0);
        CHECK(blob_create_vector(gpu, BLOB_F32, 3, &bf) == BLOB_OK && blob_copy_from_host(bf, bigs, sizeof bigs) == BLOB_OK);
        CHECK(blob_sumsq(bf, &s) == BLOB_OK && s == 3.0 * (double)2e19f * (double)2e19f);
        blob_free(bi);
        blob_free(bf);
    }

    /* Work submitted and not yet seen done counts as being inside the
     * driver (lavapipe compiles kernels on its own threads, under LLVM's
     * process-wide locks): a child forked right after a fill is refused a
     * GPU of its own, naming the fork; after blob_engine_synchronize a
     * child opens one and computes on it. */
    {
        int during, after;
        CHECK(blob_engine_synchronize(gpu) == BLOB_OK);
        CHECK(blob_fill(b, 7.0) == BLOB_OK);
        during = child_opens_a_gpu();
        CHECK(blob_engine_synchronize(gpu) == BLOB_OK);
        after = child_opens_a_gpu();
        CHECK(during == 10 && after == 11);
        CHECK(blob_engine_synchronize(NULL) == BLOB_OK);
        CHECK(blob_copy_to_host(b, got, sizeof got) == BLOB_OK && got[31] == 7.0f);
    }

    blob_free(b);
    blob_engine_free(owner);
    blob_engine_free(gpu);
    if (failures) fprintf(stderr, "%d checks failed\n", failures);
    else printf("gpu: all checks passed\n");
    return failures != 0;
}
