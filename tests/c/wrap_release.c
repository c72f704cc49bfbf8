/* blob_wrap: caller memory is shared without copying, and the release
 * callback runs exactly once, when the last blob, view or buffer using
 * the memory lets go (on whichever thread that is) — and never when
 * blob_wrap fails. */
#include "check.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct Owner {
    float *data;
    int released;
};

static void release(void *ctx) {
    struct Owner *o = (struct Owner *)ctx;
    o->released++;
    free(o->data);
    o->data = NULL;
}

static struct Owner make_owner(size_t n) {
    struct Owner o;
    size_t i;
    o.data = (float *)malloc(n * sizeof(float));
    for (i = 0; i < n; i++) o.data[i] = (float)i;
    o.released = 0;
    return o;
}

static void *free_on_thread(void *arg) {
    blob_free((Blob *)arg);
    return NULL;
}

int main(void) {
    const int64_t dims[2] = {4, 6};
    Blob *b = NULL, *win = NULL, *slice = NULL, *copy = NULL;
    void *buf = NULL;
    float host[24];
    double s = 0;
    pthread_t t;

    /* 1. Zero copy in both directions; release waits for the last user. */
    {
        struct Owner o = make_owner(24);
        float *raw = o.data;
        int64_t idx[1] = {1};
        CHECK(blob_wrap(NULL, BLOB_F32, dims, 2, o.data, 24 * sizeof(float), release, &o, &b) == BLOB_OK);
        CHECK(blob_asum(b, &s) == BLOB_OK && s == 276.0); /* 0 + 1 + ... + 23 */
        raw[0] = 1000.0f;                                  /* caller writes, blob sees */
        CHECK(blob_copy_to_host(b, host, sizeof host) == BLOB_OK && host[0] == 1000.0f);
        CHECK(blob_fill(b, 2.0) == BLOB_OK);               /* blob writes, caller sees */
        CHECK(raw[23] == 2.0f);

        CHECK(blob_create_window(b, 2, &win) == BLOB_OK);
        CHECK(blob_slice(b, idx, 1, &slice) == BLOB_OK);
        CHECK(blob_copy(b, &copy) == BLOB_OK); /* a copy owns its own memory */
        CHECK(blob_free(b) == BLOB_OK);
        CHECK(o.released == 0);                /* the window and slice still use it */
        CHECK(blob_get_buffer(slice, 0, 6, true, &buf) == BLOB_OK);
        CHECK(buf == (void *)(raw + 6));       /* no copy: the caller's own bytes */
        CHECK(blob_free(win) == BLOB_OK);
        CHECK(o.released == 0);
        CHECK(blob_release_buffer(slice, buf, true) == BLOB_OK);
        CHECK(blob_free(slice) == BLOB_OK);
        CHECK(o.released == 1);                /* exactly once, at the last user */
        CHECK(blob_free(slice) == BLOB_ERR_INVALID_HANDLE);
        CHECK(o.released == 1);
        CHECK(blob_asum(copy, &s) == BLOB_OK && s == 48.0); /* the copy outlives the memory */
        CHECK(blob_free(copy) == BLOB_OK);
        CHECK(o.released == 1);
    }

    /* 2. Released on another thread when that thread frees the last handle. */
    {
        struct Owner o = make_owner(24);
        CHECK(blob_wrap(NULL, BLOB_F32, dims, 2, o.data, 24 * sizeof(float), release, &o, &b) == BLOB_OK);
        CHECK(pthread_create(&t, NULL, free_on_thread, b) == 0);
        CHECK(pthread_join(t, NULL) == 0);
        CHECK(o.released == 1);
    }

    /* 3. Every failing blob_wrap takes nothing and never calls release. */
    {
        struct Owner o = make_owner(24);
        Blob *untouched = (Blob *)0x10;
        const int64_t bad_dims[2] = {4, -6};
        const int64_t big_dims[2] = {5, 6};
        CHECK(blob_wrap(NULL, 99, dims, 2, o.data, 96, release, &o, &untouched) == BLOB_ERR_DTYPE);
        CHECK(blob_wrap(NULL, BLOB_F32, bad_dims, 2, o.data, 96, release, &o, &untouched) == BLOB_ERR_SHAPE);
        CHECK(blob_wrap(NULL, BLOB_F32, big_dims, 2, o.data, 96, release, &o, &untouched) != BLOB_OK);
        CHECK(blob_wrap(NULL, BLOB_F32, dims, 2, NULL, 96, release, &o, &untouched) == BLOB_ERR_NULL_POINTER);
        CHECK(blob_wrap(NULL, BLOB_F32, dims, 2, (char *)o.data + 1, 95, release, &o, &untouched) != BLOB_OK);
        CHECK(blob_wrap(NULL, BLOB_F32, dims, 2, o.data, 96, release, &o, NULL) == BLOB_ERR_NULL_POINTER);
        CHECK(blob_wrap((BlobEngine *)0x20, BLOB_F32, dims, 2, o.data, 96, release, &o, &untouched) ==
              BLOB_ERR_INVALID_HANDLE);
        CHECK(untouched == (Blob *)0x10);
        CHECK(o.released == 0);
        CHECK(o.data[5] == 5.0f); /* nothing was written either */
        release(&o);
    }

    /* 4. Without a callback the memory simply stays the caller's. */
    {
        float mine[24];
        memset(mine, 0, sizeof mine);
        CHECK(blob_wrap(NULL, BLOB_F32, dims, 2, mine, sizeof mine, NULL, NULL, &b) == BLOB_OK);
        CHECK(blob_fill(b, 3.0) == BLOB_OK);
        CHECK(blob_free(b) == BLOB_OK);
        CHECK(mine[0] == 3.0f && mine[23] == 3.0f);
    }

    if (failures) {
        fprintf(stderr, "wrap_release: %d failure(s)\n", failures);
        return 1;
    }
    printf("wrap_release: all checks passed\n");
    return 0;
}
