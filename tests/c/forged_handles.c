/* Forged handles never reach a live blob. Eight threads create, merge,
 * check and free blobs through the C API while each also calls the API
 * with made-up handles: small integers, the values of the old counter
 * (0x1000 + 16 i), multiples of 16 near recently issued handles, freed
 * handles of other threads, live handles +- 16, and random 64-bit values.
 * Every forged call must return BLOB_ERR_INVALID_HANDLE, and every real
 * operation must give its exact result (a forged fill or free that hit a
 * live blob would change it). Forged engine handles and forged
 * blob_bytes_free pointers (freed buffers of other threads, live buffers
 * +- 16) are checked the same way. Bounded: ITERS per thread.
 *
 * Usage: forged_handles [runs]   (each run uses fresh threads) */
#define _POSIX_C_SOURCE 200809L
#include "check.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#define THREADS 8
#define ITERS 150
#define FORGED_PER_ITER 24
#define RING 256
#define COLS 32

/* Handles and buffers other threads may forge from. */
static _Atomic uintptr_t issued[RING], freed[RING], live_bytes[RING], freed_bytes[RING];
static atomic_uint issued_at, freed_at, live_bytes_at, freed_bytes_at;
static atomic_long forged_calls, real_checks, bad;

static void publish(_Atomic uintptr_t *ring, atomic_uint *at, const void *p) {
    atomic_store(&ring[atomic_fetch_add(at, 1) % RING], (uintptr_t)p);
}

static uintptr_t pick(_Atomic uintptr_t *ring, uint64_t r) { return atomic_load(&ring[r % RING]); }

static uint64_t next(uint64_t *s) { /* xorshift64* */
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545F4914F6CDD1DULL;
}

static void fail(const char *what, uintptr_t v, int32_t st) {
    fprintf(stderr, "forged %s %#llx got %s, not BLOB_ERR_INVALID_HANDLE (%s)\n", what,
            (unsigned long long)v, blob_status_str(st), blob_last_error());
    atomic_fetch_add(&bad, 1);
}

/* One forged value from the patterns above (never 0: NULL has its own code). */
static uintptr_t forge(uint64_t *s, Blob *const *mine, int n_mine) {
    uint64_t r = next(s);
    uintptr_t v = 0;
    int64_t k = (int64_t)(r >> 40 & 127) - 64;
    switch (r % 6) {
    case 0: v = 1 + (uintptr_t)(r >> 8) % 0x10000; break;       /* small integers */
    case 1: v = 0x1000 + 16 * (uintptr_t)((r >> 8) % 4096); break; /* the old counter */
    case 2: v = pick(issued, r >> 16) + 16 * (uintptr_t)(k ? k : 1); break;
    case 3: v = pick(freed, r >> 16); break;                  /* freed by any thread */
    case 4: v = (uintptr_t)mine[(r >> 16) % n_mine] + ((r >> 32) & 1 ? 16 : (uintptr_t)-16); break;
    default: v = (uintptr_t)next(s); break;                   /* random 64-bit */
    }
    return v ? v : 16;
}

static void forged_calls_on(uintptr_t v, uint64_t r) {
    Blob *f = (Blob *)v, *out = NULL;
    double d = 0;
    int64_t dim = 0;
    int32_t st;
    const int64_t dims[1] = {4};
    switch (r % 6) {
    case 0: st = blob_fill(f, 1.0); break;
    case 1: st = blob_asum(f, &d); break;
    case 2: st = blob_free(f); break;
    case 3: st = blob_dim(f, 0, &dim); break;
    case 4: st = blob_scale(f, 0.0); break;
    default: st = blob_create_tensor((const BlobEngine *)v, BLOB_F32, dims, 1, &out); break;
    }
    atomic_fetch_add(&forged_calls, 1);
    if (st != BLOB_ERR_INVALID_HANDLE) fail("handle", v, st);
    if (out) blob_free(out);
}

static void *worker(void *arg) {
    int t = (int)(intptr_t)arg;
    uint64_t s = 0x9E3779B97F4A7C15ULL * (uint64_t)(t + 1) ^ (uint64_t)(uintptr_t)&s;
    int i, j;
    for (i = 0; i < ITERS; i++) {
        const int64_t half[2] = {2, COLS}, whole[2] = {2, 2 * COLS};
        Blob *x = NULL, *y = NULL, *m = NULL;
        const Blob *from[2];
        Blob *mine[3];
        double v = t * 1000 + i, sum = 0;
        double want = 2.0 * COLS * v + 2.0 * COLS;
        uint8_t *bytes = NULL;
        size_t len = 0;
        int ok = blob_create_tensor(NULL, BLOB_F32, half, 2, &x) == BLOB_OK &&
                 blob_create_tensor(NULL, BLOB_F32, half, 2, &y) == BLOB_OK &&
                 blob_create_tensor(NULL, BLOB_F32, whole, 2, &m) == BLOB_OK;
        if (!ok) {
            fprintf(stderr, "create: %s\n", blob_last_error());
            atomic_fetch_add(&bad, 1);
            break;
        }
        from[0] = x;
        from[1] = y;
        mine[0] = x, mine[1] = y, mine[2] = m;
        publish(issued, &issued_at, x);
        publish(issued, &issued_at, y);
        publish(issued, &issued_at, m);
        if (blob_fill(x, v) != BLOB_OK || blob_fill(y, 1.0) != BLOB_OK || blob_merge(from, 2, 1, m) != BLOB_OK)
            atomic_fetch_add(&bad, 1);
        if (blob_to_npy_bytes(m, &bytes, &len) != BLOB_OK) atomic_fetch_add(&bad, 1);
        publish(live_bytes, &live_bytes_at, bytes);

        for (j = 0; j < FORGED_PER_ITER; j++) {
            uintptr_t f = forge(&s, mine, 3);
            forged_calls_on(f, next(&s));
        }
        /* byte buffers: freed ones of any thread, live ones +- 16 */
        {
            uint64_t r = next(&s);
            uintptr_t fb = r & 1 ? pick(freed_bytes, r >> 8) : pick(live_bytes, r >> 8) + (r & 2 ? 16 : (uintptr_t)-16);
            if (fb) {
                int32_t st = blob_bytes_free((uint8_t *)fb);
                atomic_fetch_add(&forged_calls, 1);
                if (st != BLOB_ERR_INVALID_HANDLE) fail("byte buffer", fb, st);
            }
        }

        /* the real blobs are exactly as written */
        if (blob_asum(m, &sum) != BLOB_OK || sum != want) {
            fprintf(stderr, "thread %d iteration %d: asum %g, want %g\n", t, i, sum, want);
            atomic_fetch_add(&bad, 1);
        }
        if (blob_asum(x, &sum) != BLOB_OK || sum != 2.0 * COLS * v) atomic_fetch_add(&bad, 1);
        atomic_fetch_add(&real_checks, 2);
        if (blob_bytes_free(bytes) != BLOB_OK) atomic_fetch_add(&bad, 1);
        publish(freed_bytes, &freed_bytes_at, bytes);
        if (blob_free(x) != BLOB_OK || blob_free(y) != BLOB_OK || blob_free(m) != BLOB_OK) {
            fprintf(stderr, "free: %s\n", blob_last_error());
            atomic_fetch_add(&bad, 1);
        }
        publish(freed, &freed_at, x);
        publish(freed, &freed_at, y);
        publish(freed, &freed_at, m);
    }
    return NULL;
}

int main(int argc, char **argv) {
    int runs = argc > 1 ? atoi(argv[1]) : 1, run, t;
    for (run = 0; run < runs; run++) {
        pthread_t th[THREADS];
        for (t = 0; t < THREADS; t++) CHECK(pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t) == 0);
        for (t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
    }
    CHECK(atomic_load(&bad) == 0);
    printf("forged_handles: %d run(s), %ld forged calls, %ld real results checked, %ld failures\n", runs,
           atomic_load(&forged_calls), atomic_load(&real_checks), atomic_load(&bad));
    return failures ? 1 : 0;
}
