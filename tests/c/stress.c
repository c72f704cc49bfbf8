/* Eight threads through the C API at once: creating, viewing, merging,
 * filling, holding buffers and freeing the same and different blobs.
 * Bounded in iterations and by a watchdog; no crash, no deadlock, the
 * shared blob ends exactly as a serial run leaves it, and of eight threads
 * freeing the same handles exactly one free of each succeeds. */
#define _POSIX_C_SOURCE 200809L
#include "check.h"
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define THREADS 8
#define ITERS 100
#define ROW 256
#define SHARED_HANDLES 64

static Blob *shared;
static Blob *victims[SHARED_HANDLES];
static atomic_int freed_ok, done, bad;

/* Retries while another thread holds the memory (an answer, not a failure). */
#define RETRY(call)                                                           \
    do {                                                                      \
        int32_t s_;                                                           \
        int n_ = 0;                                                           \
        while ((s_ = (call)) == BLOB_ERR_BUSY && n_++ < 100000) sched_yield(); \
        if (s_ != BLOB_OK) {                                                  \
            fprintf(stderr, "%s: %s (%s)\n", #call, blob_status_str(s_),      \
                    blob_last_error());                                       \
            atomic_fetch_add(&bad, 1);                                        \
        }                                                                     \
    } while (0)

static void work(Blob *target, int t) {
    const int64_t half[2] = {2, ROW / 2};
    Blob *row = NULL, *x = NULL, *y = NULL, *m = NULL, *parts[2] = {NULL, NULL};
    const Blob *from[2];
    void *p = NULL;
    double sum = 0;
    int i;

    RETRY(blob_create_window(target, 1, &row));
    RETRY(blob_set_parent_pos(row, t));
    for (i = 0; i < ITERS; i++) {
        /* private blobs */
        const int64_t whole[2] = {2, ROW};
        RETRY(blob_create_tensor(NULL, BLOB_F32, half, 2, &x));
        RETRY(blob_create_tensor(NULL, BLOB_F32, half, 2, &y));
        RETRY(blob_fill(x, t * 1000 + i));
        RETRY(blob_fill(y, 1.0));
        RETRY(blob_create_tensor(NULL, BLOB_F32, whole, 2, &m));
        from[0] = x;
        from[1] = y;
        RETRY(blob_merge(from, 2, 1, m));
        RETRY(blob_create_tensor(NULL, BLOB_F32, half, 2, &parts[0]));
        RETRY(blob_create_tensor(NULL, BLOB_F32, half, 2, &parts[1]));
        RETRY(blob_split(m, 1, parts, 2));
        RETRY(blob_asum(parts[1], &sum));
        if (sum != ROW) atomic_fetch_add(&bad, 1);
        blob_free(x);
        blob_free(y);
        blob_free(m);
        blob_free(parts[0]);
        blob_free(parts[1]);
        /* this thread's row of the shared blob */
        RETRY(blob_fill(row, i));
        RETRY(blob_scale(row, 2.0));
        RETRY(blob_fill_object(row, 0, t)); /* a [1, ROW] row: object 0 is element 0 */
        /* A raw buffer is held and released (LIFO) but not written: raw
         * buffers are plain memory outside the borrow checks, so writing
         * one while other threads read the blob would be our own race. */
        RETRY(blob_get_buffer(row, 4, 2, true, &p));
        RETRY(blob_release_buffer(row, p, false));
        /* contended whole-blob reads: a result or Busy */
        {
            int32_t s = blob_asum(target, &sum);
            if (s != BLOB_OK && s != BLOB_ERR_BUSY) atomic_fetch_add(&bad, 1);
        }
    }
    blob_free(row);
}

static void *thread_main(void *arg) {
    int t = (int)(intptr_t)arg, k;
    work(shared, t);
    /* every thread frees every victim: exactly one free of each succeeds */
    for (k = 0; k < SHARED_HANDLES; k++) {
        int32_t s = blob_free(victims[(k + t * 7) % SHARED_HANDLES]);
        if (s == BLOB_OK) atomic_fetch_add(&freed_ok, 1);
        else if (s != BLOB_ERR_INVALID_HANDLE) atomic_fetch_add(&bad, 1);
    }
    atomic_fetch_add(&done, 1);
    return NULL;
}

int main(void) {
    const int64_t dims[2] = {THREADS, ROW};
    pthread_t th[THREADS];
    Blob *serial = NULL;
    static float got[THREADS * ROW], want[THREADS * ROW];
    int t, waited = 0;

    CHECK(blob_create_tensor(NULL, BLOB_F32, dims, 2, &shared) == BLOB_OK);
    for (t = 0; t < SHARED_HANDLES; t++) {
        Blob *w = NULL;
        CHECK(blob_create_window(shared, 1, &w) == BLOB_OK);
        victims[t] = w;
    }
    for (t = 0; t < THREADS; t++) CHECK(pthread_create(&th[t], NULL, thread_main, (void *)(intptr_t)t) == 0);
    /* watchdog: a deadlock fails instead of hanging */
    while (atomic_load(&done) < THREADS && waited < 120000) {
        const struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
        waited++;
    }
    if (atomic_load(&done) < THREADS) {
        fprintf(stderr, "deadlock: only %d of %d threads finished\n", atomic_load(&done), THREADS);
        return 1;
    }
    for (t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
    CHECK(atomic_load(&bad) == 0);
    CHECK(atomic_load(&freed_ok) == SHARED_HANDLES);

    /* the same work, serially */
    CHECK(blob_create_tensor(NULL, BLOB_F32, dims, 2, &serial) == BLOB_OK);
    for (t = 0; t < THREADS; t++) work(serial, t);
    CHECK(blob_copy_to_host(shared, got, sizeof got) == BLOB_OK);
    CHECK(blob_copy_to_host(serial, want, sizeof want) == BLOB_OK);
    CHECK(memcmp(got, want, sizeof got) == 0);
    blob_free(serial);
    blob_free(shared);
    if (failures) fprintf(stderr, "%d checks failed\n", failures);
    else printf("stress: %d threads x %d iterations, all checks passed\n", THREADS, ITERS);
    return failures != 0;
}
