/* DLPack through the C API against an independent header: Debian's
 * libdlpack-dev (DLPack 0.6, the legacy DLManagedTensor), not ours.
 * Export (fields, shared memory, strides of a view, the deleter from
 * another thread, a consumer that never calls it), import (zero-copy,
 * the producer's deleter exactly once at the last user, a NULL deleter,
 * copies of strided tensors) and every refusal leaving the tensor owned
 * by the caller with its deleter not called.
 */
#include <dlpack/dlpack.h>
#include "check.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static int deleted = 0;
static void count_delete(DLManagedTensor *self) {
    deleted++;
    (void)self;
}

static void *call_deleter(void *arg) {
    DLManagedTensor *t = (DLManagedTensor *)arg;
    t->deleter(t);
    return NULL;
}

/* A consumer that never calls the deleter: documented to keep the
 * exported memory alive (a leak, reachable from here until exit). */
static DLManagedTensor *kept_forever = NULL;

int main(void) {
    static float data[6] = {0, 1, 2, 3, 4, 5};
    const int64_t d23[2] = {2, 3};
    int64_t shape[2] = {2, 3};
    Blob *b = NULL, *in = NULL, *untouched = (Blob *)&deleted;
    DLManagedTensor *t = NULL;
    pthread_t th;
    float got[6];
    int64_t n = 0;

    /* Export: the fields a DLPack 0.6 consumer reads. */
    CHECK(blob_create_tensor(NULL, BLOB_F32, d23, 2, &b) == BLOB_OK);
    CHECK(blob_copy_from_host(b, data, sizeof data) == BLOB_OK);
    CHECK(blob_to_dlpack_legacy(b, &t) == BLOB_OK && t != NULL);
    CHECK(t->dl_tensor.device.device_type == kDLCPU && t->dl_tensor.device.device_id == 0);
    CHECK(t->dl_tensor.ndim == 2 && t->dl_tensor.shape[0] == 2 && t->dl_tensor.shape[1] == 3);
    CHECK(t->dl_tensor.dtype.code == kDLFloat && t->dl_tensor.dtype.bits == 32 && t->dl_tensor.dtype.lanes == 1);
    CHECK(t->dl_tensor.strides == NULL || (t->dl_tensor.strides[0] == 3 && t->dl_tensor.strides[1] == 1));
    CHECK(t->dl_tensor.byte_offset == 0);
    ((float *)t->dl_tensor.data)[4] = 40.0f; /* shared memory */
    CHECK(blob_copy_to_host(b, got, sizeof got) == BLOB_OK && got[4] == 40.0f);
    {
        const int64_t big[1] = {1000};
        CHECK(blob_reshape(b, big, 1) == BLOB_ERR_BUSY); /* the export pins the memory */
    }
    /* The memory outlives the blob; the deleter runs on another thread. */
    CHECK(blob_free(b) == BLOB_OK);
    CHECK(((float *)t->dl_tensor.data)[4] == 40.0f);
    CHECK(pthread_create(&th, NULL, call_deleter, t) == 0 && pthread_join(th, NULL) == 0);

    /* A strided view exports its strides. */
    {
        const int64_t begin[2] = {0, 1}, end[2] = {2, 3};
        Blob *roi = NULL;
        CHECK(blob_create_tensor(NULL, BLOB_F32, d23, 2, &b) == BLOB_OK && blob_copy_from_host(b, data, sizeof data) == BLOB_OK);
        CHECK(blob_region(b, begin, end, 2, &roi) == BLOB_OK);
        CHECK(blob_to_dlpack_legacy(roi, &t) == BLOB_OK);
        CHECK(t->dl_tensor.shape[0] == 2 && t->dl_tensor.shape[1] == 2);
        CHECK(t->dl_tensor.strides != NULL && t->dl_tensor.strides[0] == 3 && t->dl_tensor.strides[1] == 1);
        CHECK(((float *)t->dl_tensor.data)[t->dl_tensor.strides[0] * 1 + 1] == 5.0f); /* roi[1][1] = b[1][2] */
        t->deleter(t);
        blob_free(roi);
        /* Kept forever: never deleted, the blob is freed. */
        CHECK(blob_to_dlpack_legacy(b, &kept_forever) == BLOB_OK);
        blob_free(b);
        CHECK(((float *)kept_forever->dl_tensor.data)[5] == 5.0f);
    }

    /* Import: zero-copy; the producer's deleter runs once, at the last user. */
    {
        DLManagedTensor m;
        Blob *w = NULL;
        memset(&m, 0, sizeof m);
        m.dl_tensor.data = data;
        m.dl_tensor.device.device_type = kDLCPU;
        m.dl_tensor.ndim = 2;
        m.dl_tensor.dtype.code = kDLFloat;
        m.dl_tensor.dtype.bits = 32;
        m.dl_tensor.dtype.lanes = 1;
        m.dl_tensor.shape = shape;
        m.deleter = count_delete;
        CHECK(blob_from_dlpack_legacy(NULL, &m, &in) == BLOB_OK && deleted == 0);
        CHECK(blob_data_size(in, &n) == BLOB_OK && n == 6);
        CHECK(blob_fill(in, 7.0) == BLOB_OK && data[0] == 7.0f); /* shared */
        CHECK(blob_create_window(in, 1, &w) == BLOB_OK);
        CHECK(blob_free(in) == BLOB_OK && deleted == 0); /* the window still uses it */
        CHECK(blob_free(w) == BLOB_OK && deleted == 1);

        /* Strided: copied, and the deleter runs at once. */
        {
            int64_t strides[2] = {1, 2};
            m.dl_tensor.strides = strides;
            CHECK(blob_from_dlpack_legacy(NULL, &m, &in) == BLOB_OK && deleted == 2);
            CHECK(blob_fill(in, 1.0) == BLOB_OK && data[0] == 7.0f); /* a copy */
            blob_free(in);
            m.dl_tensor.strides = NULL;
        }
        /* A NULL deleter: the producer keeps ownership. */
        m.deleter = NULL;
        CHECK(blob_from_dlpack_legacy(NULL, &m, &in) == BLOB_OK);
        blob_free(in);
        m.deleter = count_delete;

        /* Refusals: *out untouched, the deleter not called. */
        m.dl_tensor.dtype.code = 5; /* kDLComplex */
        CHECK(blob_from_dlpack_legacy(NULL, &m, &untouched) == BLOB_ERR_DTYPE);
        m.dl_tensor.dtype.code = kDLFloat;
        m.dl_tensor.device.device_type = kDLCUDA;
        CHECK(blob_from_dlpack_legacy(NULL, &m, &untouched) == BLOB_ERR_UNSUPPORTED);
        m.dl_tensor.device.device_type = kDLCPU;
        shape[0] = -2;
        CHECK(blob_from_dlpack_legacy(NULL, &m, &untouched) == BLOB_ERR_SHAPE);
        shape[0] = (int64_t)1 << 62;
        CHECK(blob_from_dlpack_legacy(NULL, &m, &untouched) == BLOB_ERR_SHAPE);
        shape[0] = 2;
        m.dl_tensor.ndim = 33;
        CHECK(blob_from_dlpack_legacy(NULL, &m, &untouched) == BLOB_ERR_SHAPE);
        m.dl_tensor.ndim = 2;
        CHECK(blob_from_dlpack_legacy(NULL, NULL, &untouched) == BLOB_ERR_NULL_POINTER);
        CHECK(blob_from_dlpack_legacy(NULL, &m, NULL) == BLOB_ERR_NULL_POINTER);
        CHECK(untouched == (Blob *)&deleted && deleted == 2);
    }

    if (failures) fprintf(stderr, "%d checks failed\n", failures);
    else printf("dlpack_legacy: all checks passed\n");
    return failures != 0;
}
