/* The CUDA engine through the C API: blob_engine_cuda, its heads, and
 * DLPack kDLCUDA export and import (blob_to_dlpack_cuda,
 * blob_dlpack_device, blob_from_dlpack on a CUDA engine). Skips (77)
 * on machines without an NVIDIA GPU and driver, after checking that the
 * engine is refused there with BLOB_ERR_DEVICE; BLOBCORE_REQUIRE_CUDA=1
 * turns the skip into a failure. */
#include <blob_dlpack.h>
#include "check.h"
#include <stdlib.h>
#include <string.h>

int main(void) {
    BlobEngine *cuda = NULL, *cpu = NULL;
    Blob *b = NULL, *back = NULL, *cpu_blob = NULL;
    struct DLManagedTensorVersioned *t = NULL;
    const int64_t dims[2] = {3, 4};
    float got[12];
    int32_t dt = 0, id = -1;
    bool flag = true;
    int i, rc;

    rc = blob_engine_cuda(0, &cuda);
    if (rc != BLOB_OK) {
        CHECK(rc == BLOB_ERR_DEVICE);
        CHECK(cuda == NULL);
        if (getenv("BLOBCORE_REQUIRE_CUDA") != NULL) {
            printf("FAIL: BLOBCORE_REQUIRE_CUDA is set but: %s\n", blob_last_error());
            return 1;
        }
        printf("SKIP: %s\n", blob_last_error());
        return failures ? 1 : 77;
    }
    CHECK(blob_engine_is_gpu(cuda, &flag) == BLOB_OK && flag);
    CHECK(blob_engine_is_software(cuda, &flag) == BLOB_OK && !flag);
    CHECK(blob_create_tensor(cuda, BLOB_F32, dims, 2, &b) == BLOB_OK);
    CHECK(blob_fill(b, 3.0) == BLOB_OK);
    CHECK(blob_dlpack_device(b, &dt, &id) == BLOB_OK && dt == 2 && id == 0);

    /* Export the device memory, ready for the legacy default stream. */
    CHECK(blob_to_dlpack_cuda(b, 0, 0, &t) == BLOB_ERR_INVALID_ARGUMENT);
    CHECK(blob_to_dlpack_cuda(b, 1, 0, &t) == BLOB_OK);
    CHECK(t->dl_tensor.device.device_type == 2 && t->dl_tensor.device.device_id == 0);
    CHECK(t->dl_tensor.ndim == 2 && t->dl_tensor.shape[0] == 3 && t->dl_tensor.shape[1] == 4);
    CHECK(t->dl_tensor.data != NULL);

    /* A CPU engine refuses it and leaves it to us (named: NULL may be
     * the CUDA engine under BLOBCORE_ENGINE=cuda). */
    CHECK(blob_engine_cpu(&cpu) == BLOB_OK);
    CHECK(blob_from_dlpack(cpu, t, &cpu_blob) == BLOB_ERR_UNSUPPORTED);
    CHECK(cpu_blob == NULL);

    /* The CUDA engine takes it back, sharing the storage. */
    CHECK(blob_from_dlpack(cuda, t, &back) == BLOB_OK);
    CHECK(blob_scale(back, 2.0) == BLOB_OK);
    CHECK(blob_copy_to_host(b, got, sizeof got) == BLOB_OK);
    for (i = 0; i < 12; i++) CHECK(got[i] == 6.0f);

    /* A copy export is flagged IS_COPIED. */
    CHECK(blob_to_dlpack_cuda(b, -1, 1, &t) == BLOB_OK);
    CHECK((t->flags & 2) != 0);
    t->deleter(t);

    blob_free(back);
    blob_free(b);
    blob_engine_free(cuda);
    blob_engine_free(cpu);
    return failures ? 1 : 0;
}
