/* Layouts through the C API: the OpenVINO seed's offsets, reorders
 * between NCHW, NHWC and channels blocked by 8, regions, and errors. */
#include "check.h"

#include <string.h>

int main(void) {
    const int64_t dims[4] = {1, 25, 20, 20};
    const int64_t blk[5] = {1, 4, 20, 20, 8}, order[5] = {0, 1, 2, 3, 1};
    const int64_t nhwc_blk[4] = {1, 20, 20, 25}, nhwc_order[4] = {0, 2, 3, 1};
    Blob *b8 = NULL, *nhwc = NULL, *dense = NULL, *back = NULL, *roi = NULL, *small = NULL;
    int64_t off = -1, i;
    int32_t layout = -1;
    static float src[10000], got[10000];

    /* The seed: tdesc.offset(0) = 0, offset(1) = 8, {0,0,0,2} = 16, {0,1,0,2} = 17. */
    CHECK(blob_create_desc(NULL, BLOB_F32, dims, 4, blk, order, 5, &b8) == BLOB_OK);
    {
        const int64_t i0[4] = {0, 0, 0, 0}, i1[4] = {0, 0, 0, 1}, i2[4] = {0, 0, 0, 2}, i3[4] = {0, 1, 0, 2};
        CHECK(blob_desc_offset(b8, i0, 4, &off) == BLOB_OK && off == 0);
        CHECK(blob_desc_offset(b8, i1, 4, &off) == BLOB_OK && off == 8);
        CHECK(blob_desc_offset(b8, i2, 4, &off) == BLOB_OK && off == 16);
        CHECK(blob_desc_offset(b8, i3, 4, &off) == BLOB_OK && off == 17);
    }
    CHECK(blob_layout(b8, &layout) == BLOB_OK && layout == BLOB_LAYOUT_BLOCKED);
    CHECK(blob_create_desc(NULL, BLOB_F32, dims, 4, nhwc_blk, nhwc_order, 4, &nhwc) == BLOB_OK);
    CHECK(blob_layout(nhwc, &layout) == BLOB_OK && layout == BLOB_LAYOUT_NHWC);

    /* dense -> NHWC -> blocked -> dense is the identity */
    CHECK(blob_create_tensor(NULL, BLOB_F32, dims, 4, &dense) == BLOB_OK);
    CHECK(blob_create_tensor(NULL, BLOB_F32, dims, 4, &back) == BLOB_OK);
    for (i = 0; i < 10000; i++) src[i] = (float)i;
    CHECK(blob_copy_from_host(dense, src, sizeof src) == BLOB_OK);
    CHECK(blob_layout(dense, &layout) == BLOB_OK && layout == BLOB_LAYOUT_NCHW);
    CHECK(blob_reorder(nhwc, dense) == BLOB_OK);
    CHECK(blob_reorder(b8, nhwc) == BLOB_OK);
    CHECK(blob_reorder(back, b8) == BLOB_OK);
    CHECK(blob_copy_to_host(back, got, sizeof got) == BLOB_OK);
    for (i = 0; i < 10000; i++) {
        if (got[i] != src[i]) {
            CHECK(got[i] == src[i]);
            break;
        }
    }

    /* a region keeps strides; reorder it into a small dense blob */
    {
        const int64_t begin[4] = {0, 2, 3, 4}, end[4] = {1, 4, 5, 7}, sdims[4] = {1, 2, 2, 3};
        float part[12];
        CHECK(blob_region(dense, begin, end, 4, &roi) == BLOB_OK);
        CHECK(blob_create_tensor(NULL, BLOB_F32, sdims, 4, &small) == BLOB_OK);
        CHECK(blob_reorder(small, roi) == BLOB_OK);
        CHECK(blob_copy_to_host(small, part, sizeof part) == BLOB_OK);
        CHECK(part[0] == src[(2 * 20 + 3) * 20 + 4]);
        CHECK(part[11] == src[(3 * 20 + 4) * 20 + 6]);
        /* every operation takes every layout (issue 27): savers write the
         * region's logical values, reductions read them, fills touch only
         * the region's elements (and a blocked blob's logical ones) */
        {
            uint8_t *bytes = NULL;
            size_t len = 0, k;
            Blob *saved = NULL;
            float v[12];
            double sum = 0, want = 0;
            CHECK(blob_to_npy_bytes(roi, &bytes, &len) == BLOB_OK);
            CHECK(blob_from_npy_bytes(NULL, bytes, len, &saved) == BLOB_OK);
            CHECK(blob_bytes_free(bytes) == BLOB_OK);
            CHECK(blob_copy_to_host(saved, v, sizeof v) == BLOB_OK);
            for (k = 0; k < 12; k++) {
                CHECK(v[k] == part[k]);
                want += part[k] < 0 ? -part[k] : part[k];
            }
            CHECK(blob_asum(roi, &sum) == BLOB_OK && sum == want);
            CHECK(blob_fill(roi, -1.0) == BLOB_OK);
            CHECK(blob_copy_to_host(dense, got, sizeof got) == BLOB_OK);
            CHECK(got[(2 * 20 + 3) * 20 + 4] == -1.0f && got[(3 * 20 + 4) * 20 + 6] == -1.0f);
            CHECK(got[(2 * 20 + 3) * 20 + 3] == src[(2 * 20 + 3) * 20 + 3] && got[0] == src[0]);
            CHECK(blob_fill(b8, 2.0) == BLOB_OK);
            CHECK(blob_asum(b8, &sum) == BLOB_OK && sum == 2.0 * 10000);
            blob_free(saved);
            CHECK(blob_copy_to_host(back, got, sizeof got) == BLOB_OK);
        }
        CHECK(blob_reorder(small, dense) == BLOB_ERR_SHAPE);
        CHECK(blob_region(dense, end, begin, 4, &roi) == BLOB_ERR_OUT_OF_RANGE);
    }
    {
        const int64_t short_blk[3] = {1, 3, 8}, short_order[3] = {0, 1, 1}, d2[2] = {1, 25};
        Blob *bad = (Blob *)0x10;
        CHECK(blob_create_desc(NULL, BLOB_F32, d2, 2, short_blk, short_order, 3, &bad) == BLOB_ERR_SHAPE);
        CHECK(bad == (Blob *)0x10);
        CHECK(blob_desc_offset(b8, dims, 4, &off) == BLOB_ERR_OUT_OF_RANGE);
        CHECK(blob_layout(NULL, &layout) == BLOB_ERR_NULL_POINTER);
    }
    CHECK(blob_copy_to_host(back, got, sizeof got) == BLOB_OK && got[9999] == 9999.0f);

    /* blob_permute / blob_permute_from: numpy.transpose(dense, (2, 0, 3, 1))
     * against the index arithmetic, into a dense blob and into NHWC. */
    {
        const int32_t axes[4] = {2, 0, 3, 1}, neg_axes[4] = {-2, 0, -1, 1};
        Blob *p = NULL, *q = NULL;
        int64_t pd[4], k;
        size_t r = 0;
        CHECK(blob_copy_from_host(dense, src, sizeof src) == BLOB_OK);
        CHECK(blob_permute(dense, axes, 4, &p) == BLOB_OK);
        CHECK(blob_rank(p, &r) == BLOB_OK && r == 4);
        for (k = 0; k < 4; k++) CHECK(blob_dim(p, (int32_t)k, &pd[k]) == BLOB_OK && pd[k] == dims[axes[k]]);
        CHECK(blob_copy_to_host(p, got, sizeof got) == BLOB_OK);
        {
            int64_t i0, i1, i2, i3, n = 0, bad = 0;
            /* p[i0][i1][i2][i3] = dense[i1][i3][i0][i2] */
            for (i0 = 0; i0 < pd[0]; i0++)
                for (i1 = 0; i1 < pd[1]; i1++)
                    for (i2 = 0; i2 < pd[2]; i2++)
                        for (i3 = 0; i3 < pd[3]; i3++) {
                            int64_t s = ((i1 * dims[1] + i3) * dims[2] + i0) * dims[3] + i2;
                            if (got[n++] != src[s]) bad++;
                        }
            CHECK(bad == 0);
        }
        CHECK(blob_create_tensor(NULL, BLOB_F32, pd, 4, &q) == BLOB_OK);
        CHECK(blob_permute_from(q, dense, neg_axes, 4) == BLOB_OK);
        {
            float again[sizeof got / sizeof got[0]];
            CHECK(blob_copy_to_host(q, again, sizeof again) == BLOB_OK && memcmp(again, got, sizeof again) == 0);
        }
        blob_free(p);
        blob_free(q);
    }

    /* The seed through the newer calls: offset(l), NHWC by name, the
     * BlockingDesc read back, explicit strides and offset padding, and
     * getLayoutByDims. */
    CHECK(blob_desc_offset_linear(b8, 0, &off) == BLOB_OK && off == 0);
    CHECK(blob_desc_offset_linear(b8, 1, &off) == BLOB_OK && off == 8);
    CHECK(blob_desc_offset_linear(b8, 2, &off) == BLOB_OK && off == 16);
    CHECK(blob_desc_offset_linear(b8, 402, &off) == BLOB_OK && off == 17); /* {0,1,0,2} */
    CHECK(blob_desc_offset_linear(b8, 10000, &off) == BLOB_ERR_OUT_OF_RANGE && off == 17);
    {
        Blob *named = NULL, *padded = NULL;
        int64_t bd[8] = {0}, ord[8] = {0}, st[8] = {0}, of[8] = {0}, pad = -1;
        size_t n = 0;
        CHECK(blob_create_layout(NULL, BLOB_F32, dims, 4, BLOB_LAYOUT_NHWC, &named) == BLOB_OK);
        CHECK(blob_layout(named, &layout) == BLOB_OK && layout == BLOB_LAYOUT_NHWC);
        CHECK(blob_desc_blocking(named, 8, bd, ord, st, of, &n, &pad) == BLOB_OK && n == 4 && pad == 0);
        CHECK(bd[0] == 1 && bd[1] == 20 && bd[2] == 20 && bd[3] == 25);
        CHECK(ord[0] == 0 && ord[1] == 2 && ord[2] == 3 && ord[3] == 1);
        CHECK(st[0] == 10000 && st[1] == 500 && st[2] == 25 && st[3] == 1 && of[3] == 0);
        /* The same as the explicit NHWC blocking: reorder between them is a copy. */
        CHECK(blob_reorder(named, dense) == BLOB_OK);
        CHECK(blob_reorder(back, named) == BLOB_OK);
        CHECK(blob_copy_to_host(back, got, sizeof got) == BLOB_OK && memcmp(got, src, sizeof got) == 0);
        /* Size query, then the blocked desc of the seed's example 2. */
        CHECK(blob_desc_blocking(b8, 0, NULL, NULL, NULL, NULL, &n, NULL) == BLOB_OK && n == 5);
        CHECK(blob_desc_blocking(b8, 4, bd, NULL, NULL, NULL, &n, NULL) == BLOB_ERR_OUT_OF_RANGE);
        CHECK(blob_desc_blocking(b8, 8, bd, ord, st, NULL, &n, NULL) == BLOB_OK);
        CHECK(bd[1] == 4 && bd[4] == 8 && ord[4] == 1 && st[0] == 12800 && st[3] == 8 && st[4] == 1);
        /* Rows padded to 32 elements and 3 elements before the data. */
        {
            const int64_t d2[2] = {2, 3}, b2[2] = {2, 3}, o2[2] = {0, 1}, s2[2] = {32, 1};
            static const float six[6] = {1, 2, 3, 4, 5, 6};
            float back6[6] = {0};
            Blob *flat = NULL;
            CHECK(blob_create_desc_strided(NULL, BLOB_F32, d2, 2, b2, o2, 2, 3, NULL, s2, &padded) == BLOB_OK);
            CHECK(blob_desc_offset_linear(padded, 4, &off) == BLOB_OK && off == 3 + 32 + 1);
            CHECK(blob_desc_blocking(padded, 8, bd, ord, st, of, &n, &pad) == BLOB_OK && pad == 3 && st[0] == 32);
            CHECK(blob_create_tensor(NULL, BLOB_F32, d2, 2, &flat) == BLOB_OK);
            CHECK(blob_copy_from_host(flat, six, sizeof six) == BLOB_OK);
            CHECK(blob_reorder(padded, flat) == BLOB_OK);
            CHECK(blob_fill(flat, 0) == BLOB_OK && blob_reorder(flat, padded) == BLOB_OK);
            CHECK(blob_copy_to_host(flat, back6, sizeof back6) == BLOB_OK && memcmp(back6, six, sizeof six) == 0);
            blob_free(flat);
        }
        CHECK(blob_create_layout(NULL, BLOB_F32, dims, 4, BLOB_LAYOUT_NCDHW, &padded) == BLOB_ERR_SHAPE);
        blob_free(named);
        blob_free(padded);
    }
    {
        static const struct { size_t rank; int32_t want; } by_dims[] = {
            {0, BLOB_LAYOUT_SCALAR}, {1, BLOB_LAYOUT_C}, {2, BLOB_LAYOUT_NC}, {3, BLOB_LAYOUT_CHW},
            {4, BLOB_LAYOUT_NCHW}, {5, BLOB_LAYOUT_NCDHW}, {6, BLOB_LAYOUT_BLOCKED}};
        size_t k;
        for (k = 0; k < sizeof by_dims / sizeof by_dims[0]; k++)
            CHECK(blob_layout_by_dims(by_dims[k].rank, &layout) == BLOB_OK && layout == by_dims[k].want);
    }

    blob_free(b8);
    blob_free(nhwc);
    blob_free(dense);
    blob_free(back);
    blob_free(roi);
    blob_free(small);
    if (failures) return 1;
    printf("layouts: all checks passed\n");
    return 0;
}
