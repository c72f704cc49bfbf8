/* DLPack 1.x through the C API with blob_dlpack.h (the structs generated
 * from the library's own types, for users without dlpack.h): flags
 * (READ_ONLY requested, and forced for read-only blobs), read-only
 * imports, version and flag refusals, exactly-once deleters.
 */
#include <blob_dlpack.h>
#include "check.h"
#include <string.h>

static int deleted = 0;
static void count_delete(DLManagedTensorVersioned *self) {
    deleted++;
    (void)self;
}

int main(void) {
    static float data[4] = {1, 2, 3, 4};
    int64_t shape[1] = {4};
    bool writable = true;
    Blob *b = NULL, *in = NULL, *untouched = (Blob *)&deleted;
    DLManagedTensorVersioned *t = NULL, *t2 = (DLManagedTensorVersioned *)&deleted;

    CHECK(blob_create_vector(NULL, BLOB_F32, 4, &b) == BLOB_OK && blob_copy_from_host(b, data, sizeof data) == BLOB_OK);
    CHECK(blob_to_dlpack(b, 0, &t) == BLOB_OK);
    CHECK(t->version.major == DLPACK_MAJOR_VERSION && t->flags == 0 && t->dl_tensor.ndim == 1);
    t->deleter(t);
    CHECK(blob_to_dlpack(b, DLPACK_FLAG_BITMASK_READ_ONLY, &t) == BLOB_OK);
    CHECK(t->flags == DLPACK_FLAG_BITMASK_READ_ONLY && ((float *)t->dl_tensor.data)[2] == 3.0f);
    CHECK(blob_to_dlpack(b, 2, &t2) == BLOB_ERR_INVALID_ARGUMENT && t2 == (DLManagedTensorVersioned *)&deleted);
    /* Re-import our own export: a read-only blob over the same memory. */
    CHECK(blob_from_dlpack(NULL, t, &in) == BLOB_OK);
    CHECK(blob_is_writable(in, &writable) == BLOB_OK && !writable);
    CHECK(blob_fill(in, 0.0) == BLOB_ERR_READ_ONLY);
    /* A read-only blob always exports READ_ONLY. */
    CHECK(blob_to_dlpack(in, 0, &t2) == BLOB_OK && (t2->flags & DLPACK_FLAG_BITMASK_READ_ONLY));
    t2->deleter(t2);
    CHECK(blob_to_dlpack_legacy(in, NULL) == BLOB_ERR_NULL_POINTER);
    {
        struct DLManagedTensor *legacy = NULL;
        CHECK(blob_to_dlpack_legacy(in, &legacy) == BLOB_ERR_READ_ONLY && legacy == NULL);
    }
    blob_free(in); /* runs our export's deleter */
    blob_free(b);

    /* A foreign versioned tensor. */
    {
        DLManagedTensorVersioned m;
        memset(&m, 0, sizeof m);
        m.version.major = 1;
        m.version.minor = 0;
        m.flags = DLPACK_FLAG_BITMASK_READ_ONLY;
        m.deleter = count_delete;
        m.dl_tensor.data = data;
        m.dl_tensor.device.device_type = kDLCPU;
        m.dl_tensor.ndim = 1;
        m.dl_tensor.dtype.code = kDLFloat;
        m.dl_tensor.dtype.bits = 32;
        m.dl_tensor.dtype.lanes = 1;
        m.dl_tensor.shape = shape;
        m.version.major = 2;
        CHECK(blob_from_dlpack(NULL, &m, &untouched) == BLOB_ERR_UNSUPPORTED && deleted == 0);
        m.version.major = 1;
        m.dl_tensor.dtype.bits = 24;
        CHECK(blob_from_dlpack(NULL, &m, &untouched) == BLOB_ERR_DTYPE && deleted == 0);
        m.dl_tensor.dtype.bits = 32;
        CHECK(untouched == (Blob *)&deleted);
        CHECK(blob_from_dlpack(NULL, &m, &in) == BLOB_OK && deleted == 0);
        CHECK(blob_is_writable(in, &writable) == BLOB_OK && !writable);
        CHECK(blob_free(in) == BLOB_OK && deleted == 1);
        /* Misaligned data (byte_offset 2 into floats) is copied: deleter at once. */
        m.flags = 0;
        m.dl_tensor.byte_offset = 2;
        shape[0] = 3;
        CHECK(blob_from_dlpack(NULL, &m, &in) == BLOB_OK && deleted == 2);
        CHECK(blob_is_writable(in, &writable) == BLOB_OK && writable);
        blob_free(in);
    }
    if (failures) fprintf(stderr, "%d checks failed\n", failures);
    else printf("dlpack_versioned: all checks passed\n");
    return failures != 0;
}
