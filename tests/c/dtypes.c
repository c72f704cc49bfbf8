/* The dtypes of today's checkpoints through the C API (issue 28): every
 * code from BLOB_F32 to BLOB_F8_E8M0FNU creates, copies, casts (values
 * checked against float32 values computed here), transposes and exports
 * through DLPack with the specification's type codes; arithmetic on bool
 * and float8 is BLOB_ERR_DTYPE. */
#include "check.h"

#include <blob_dlpack.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

int main(void) {
    const int64_t d23[2] = {2, 3};
    /* The value 0..5 of each dtype's bytes (little-endian). */
    static const uint8_t bool_bytes[6] = {0, 1, 1, 1, 1, 1};
    static const uint16_t u16[6] = {0, 1, 2, 3, 4, 5};
    static const uint32_t u32[6] = {0, 1, 2, 3, 4, 5};
    static const uint64_t u64[6] = {0, 1, 2, 3, INT64_C(1) << 40, UINT64_MAX};
    /* float8_e4m3fn 0, 1, 1.5, 448, NaN, -2^-9; float8_e5m2 0, 1, -inf,
     * 57344, NaN, 2^-16; float8_e8m0fnu 2^-127, 1, 2, 2^127, NaN, 0.5 */
    static const uint8_t e4m3[6] = {0x00, 0x38, 0x3c, 0x7e, 0x7f, 0x81};
    static const uint8_t e5m2[6] = {0x00, 0x3c, 0xfc, 0x7b, 0x7e, 0x01};
    static const uint8_t e8m0[6] = {0, 127, 128, 254, 255, 126};
    const float inf = INFINITY;
    const float want_e4m3[6] = {0, 1, 1.5f, 448, NAN, -0.001953125f};
    const float want_e5m2[6] = {0, 1, -inf, 57344, NAN, 1.52587890625e-05f};
    const float want_e8m0[6] = {5.877471754111438e-39f, 1, 2, 1.7014118346046923e38f, NAN, 0.5f};
    const float want_u64[6] = {0, 1, 2, 3, 1099511627776.0f, 18446744073709551616.0f};
    const float ramp[6] = {0, 1, 2, 3, 4, 5};
    struct {
        int32_t code;
        const void *bytes;
        size_t size;
        const float *want;
        uint8_t dl_code, dl_bits;
    } cases[] = {
        {BLOB_BOOL, bool_bytes, 1, NULL, kDLBool, 8},
        {BLOB_I16, u16, 2, ramp, kDLInt, 16},
        {BLOB_U16, u16, 2, ramp, kDLUInt, 16},
        {BLOB_U32, u32, 4, ramp, kDLUInt, 32},
        {BLOB_U64, u64, 8, want_u64, kDLUInt, 64},
        {BLOB_F8_E4M3FN, e4m3, 1, want_e4m3, kDLFloat8_e4m3fn, 8},
        {BLOB_F8_E5M2, e5m2, 1, want_e5m2, kDLFloat8_e5m2, 8},
        {BLOB_F8_E8M0FNU, e8m0, 1, want_e8m0, kDLFloat8_e8m0fnu, 8},
    };
    size_t k;
    int i;

    CHECK(BLOB_BOOL == 9 && BLOB_I16 == 10 && BLOB_U16 == 11 && BLOB_U32 == 12 && BLOB_U64 == 13);
    CHECK(BLOB_F8_E4M3FN == 14 && BLOB_F8_E5M2 == 15 && BLOB_F8_E8M0FNU == 16);
    for (k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        Blob *b = NULL, *f = NULL, *t = NULL, *back = NULL;
        float got[6];
        uint8_t raw[48], traw[48];
        int32_t dtype = 0;
        DLManagedTensorVersioned *dl = NULL;
        double sum = 0;

        CHECK(blob_create_tensor(NULL, cases[k].code, d23, 2, &b) == BLOB_OK);
        CHECK(blob_dtype(b, &dtype) == BLOB_OK && dtype == cases[k].code);
        CHECK(blob_copy_from_host(b, cases[k].bytes, 6 * cases[k].size) == BLOB_OK);
        /* a wrong byte count is refused */
        CHECK(blob_copy_from_host(b, cases[k].bytes, 6 * cases[k].size + 1) != BLOB_OK);
        CHECK(blob_cast(b, BLOB_F32, &f) == BLOB_OK);
        CHECK(blob_copy_to_host(f, got, sizeof got) == BLOB_OK);
        for (i = 0; i < 6; i++) {
            float w = cases[k].want ? cases[k].want[i] : (float)((const uint8_t *)cases[k].bytes)[i];
            if (!(got[i] == w || (isnan(got[i]) && isnan(w)))) {
                fprintf(stderr, "dtype %d element %d: got %g, want %g\n", cases[k].code, i, (double)got[i], (double)w);
                failures++;
            }
        }
        /* back from float32 to the dtype restores the bytes (NaN as NaN) */
        CHECK(blob_cast(f, cases[k].code, &back) == BLOB_OK);
        CHECK(blob_copy_to_host(back, raw, 6 * cases[k].size) == BLOB_OK);
        if (cases[k].code != BLOB_U64 && cases[k].code != BLOB_F8_E4M3FN && cases[k].code != BLOB_F8_E5M2 &&
            cases[k].code != BLOB_F8_E8M0FNU)
            CHECK(memcmp(raw, cases[k].bytes, 6 * cases[k].size) == 0);
        /* a transposed copy moves whole elements */
        CHECK(blob_transposed(b, 0, 1, &t) == BLOB_OK);
        CHECK(blob_copy_to_host(b, raw, 6 * cases[k].size) == BLOB_OK);
        CHECK(blob_copy_to_host(t, traw, 6 * cases[k].size) == BLOB_OK);
        for (i = 0; i < 6; i++)
            CHECK(memcmp(traw + ((i % 3) * 2 + i / 3) * cases[k].size, raw + i * cases[k].size, cases[k].size) == 0);
        /* DLPack carries the specification's type code */
        CHECK(blob_to_dlpack(b, 1, &dl) == BLOB_OK);
        if (dl) {
            CHECK(dl->dl_tensor.dtype.code == cases[k].dl_code && dl->dl_tensor.dtype.bits == cases[k].dl_bits);
            dl->deleter(dl);
        }
        /* arithmetic only where the dtype has it */
        if (cases[k].code == BLOB_BOOL || cases[k].code >= BLOB_F8_E4M3FN) {
            CHECK(blob_asum(b, &sum) == BLOB_ERR_DTYPE && strstr(blob_last_error(), "astype"));
            CHECK(blob_add(b, b) == BLOB_ERR_DTYPE);
        } else {
            CHECK(blob_add(t, t) == BLOB_OK);
            CHECK(blob_asum(b, &sum) == BLOB_OK);
        }
        /* exact fills: every element's bit pattern, then one object */
        for (i = 0; i < 6; i++) {
            const uint8_t *one = (const uint8_t *)cases[k].bytes + i * cases[k].size;
            int j;
            CHECK(blob_fill_element(b, cases[k].code, one) == BLOB_OK);
            CHECK(blob_copy_to_host(b, raw, 6 * cases[k].size) == BLOB_OK);
            for (j = 0; j < 6; j++) CHECK(memcmp(raw + j * cases[k].size, one, cases[k].size) == 0);
        }
        CHECK(blob_fill_object_element(b, 2, cases[k].code, cases[k].bytes) == BLOB_OK);
        CHECK(blob_copy_to_host(b, raw, 6 * cases[k].size) == BLOB_OK);
        CHECK(memcmp(raw + 2 * cases[k].size, cases[k].bytes, cases[k].size) == 0);
        CHECK(memcmp(raw + 1 * cases[k].size, (const uint8_t *)cases[k].bytes + 5 * cases[k].size, cases[k].size) == 0);
        blob_free(b);
        blob_free(f);
        blob_free(t);
        blob_free(back);
    }
    /* 64-bit integers past 2^53 go in exactly; a double too wide for the
     * dtype is refused, not saturated (issue 29's outside tests). */
    {
        const int64_t d4[1] = {4};
        const int64_t big = INT64_C(8587004344907571699), max = INT64_MAX;
        const uint64_t umax = UINT64_MAX;
        int64_t got64[4];
        uint64_t gotu[4];
        uint8_t got8[4];
        Blob *x = NULL, *u = NULL, *small = NULL;
        CHECK(blob_create_tensor(NULL, BLOB_I64, d4, 1, &x) == BLOB_OK);
        CHECK(blob_fill_element(x, BLOB_I64, &big) == BLOB_OK);
        CHECK(blob_copy_to_host(x, got64, sizeof got64) == BLOB_OK);
        for (i = 0; i < 4; i++) CHECK(got64[i] == big);
        CHECK(blob_fill_element(x, BLOB_I64, &max) == BLOB_OK);
        CHECK(blob_copy_to_host(x, got64, sizeof got64) == BLOB_OK && got64[3] == INT64_MAX);
        CHECK(blob_fill(x, 9223372036854775807.0) == BLOB_ERR_OUT_OF_RANGE);
        CHECK(blob_copy_to_host(x, got64, sizeof got64) == BLOB_OK && got64[0] == INT64_MAX);
        CHECK(blob_fill(x, -9223372036854775808.0) == BLOB_OK);
        CHECK(blob_copy_to_host(x, got64, sizeof got64) == BLOB_OK && got64[1] == INT64_MIN);
        CHECK(blob_create_tensor(NULL, BLOB_U64, d4, 1, &u) == BLOB_OK);
        CHECK(blob_fill_element(u, BLOB_U64, &umax) == BLOB_OK);
        CHECK(blob_copy_to_host(u, gotu, sizeof gotu) == BLOB_OK && gotu[2] == UINT64_MAX);
        CHECK(blob_create_tensor(NULL, BLOB_U8, d4, 1, &small) == BLOB_OK);
        CHECK(blob_fill(small, 255.9) == BLOB_OK);
        CHECK(blob_copy_to_host(small, got8, sizeof got8) == BLOB_OK && got8[0] == 255);
        CHECK(blob_fill(small, -0.5) == BLOB_OK);
        CHECK(blob_copy_to_host(small, got8, sizeof got8) == BLOB_OK && got8[3] == 0);
        CHECK(blob_fill(small, 256.0) == BLOB_ERR_OUT_OF_RANGE && blob_fill(small, -1.0) == BLOB_ERR_OUT_OF_RANGE);
        /* scale keeps int64's and uint64's low bits past 2^53 (a product
         * formed in double dropped them), and is NumPy's double product
         * below (252 * (1/3) is 84 there, as in NumPy; exactly it is just
         * under). */
        CHECK(blob_fill_element(x, BLOB_I64, &big) == BLOB_OK);
        CHECK(blob_scale(x, -1.0) == BLOB_OK);
        CHECK(blob_copy_to_host(x, got64, sizeof got64) == BLOB_OK && got64[0] == -big && got64[3] == -big);
        CHECK(blob_scale(x, -0.5) == BLOB_OK);
        CHECK(blob_copy_to_host(x, got64, sizeof got64) == BLOB_OK && got64[1] == big / 2);
        CHECK(blob_scale(u, 1.0) == BLOB_OK);
        CHECK(blob_copy_to_host(u, gotu, sizeof gotu) == BLOB_OK && gotu[0] == UINT64_MAX);
        CHECK(blob_fill(small, 252.0) == BLOB_OK && blob_scale(small, 1.0 / 3.0) == BLOB_OK);
        CHECK(blob_copy_to_host(small, got8, sizeof got8) == BLOB_OK && got8[2] == 84);
        blob_free(x);
        blob_free(u);
        blob_free(small);
    }
    /* double -> float16 / bfloat16 through blob_wrap's door rounds once:
     * each value lies just past a halfway point that a trip through float
     * would land on exactly (and then round to even, the other way). */
    {
        static double lent[4] = {0x1.0100000001p0, -0x1.0100000001p0, 0x1.0020000001p0, 65519.99};
        static const uint16_t want_bf16[4] = {0x3f81, 0xbf81, 0x3f80, 0x4780};
        static const uint16_t want_f16[4] = {0x3c04, 0xbc04, 0x3c01, 0x7bff};
        const int64_t d4[1] = {4};
        uint16_t got16[4];
        Blob *w = NULL, *h = NULL, *bh = NULL;
        CHECK(blob_wrap(NULL, BLOB_F64, d4, 1, lent, sizeof lent, NULL, NULL, &w) == BLOB_OK);
        CHECK(blob_cast(w, BLOB_BF16, &bh) == BLOB_OK);
        CHECK(blob_copy_to_host(bh, got16, sizeof got16) == BLOB_OK && memcmp(got16, want_bf16, sizeof got16) == 0);
        CHECK(blob_cast(w, BLOB_F16, &h) == BLOB_OK);
        CHECK(blob_copy_to_host(h, got16, sizeof got16) == BLOB_OK && memcmp(got16, want_f16, sizeof got16) == 0);
        blob_free(w);
        blob_free(h);
        blob_free(bh);
    }
    if (failures == 0) printf("dtypes: all checks passed\n");
    return failures != 0;
}
