/* windows: walk a sequence blob with a window, without copying. */
#include <blob.h>
#include <stdio.h>

#define CHECK(call)                                                              \
    do {                                                                         \
        int32_t s_ = (call);                                                     \
        if (s_ != BLOB_OK) {                                                     \
            fprintf(stderr, "%s failed: %s\n", #call, blob_last_error());        \
            return 1;                                                            \
        }                                                                        \
    } while (0)

int main(void) {
    Blob *seq = NULL, *win = NULL;
    float data[4 * 2 * 3];
    int i, t;
    int32_t s;

    CHECK(blob_create_data(NULL, BLOB_F32, 4, 2, 3, &seq)); /* 4 steps, batch 2, 3 channels */
    for (i = 0; i < 24; i++) data[i] = (float)i;
    CHECK(blob_copy_from_host(seq, data, sizeof data));
    CHECK(blob_create_window(seq, 1, &win));
    for (t = 0; t < 4; t++) {
        float step[6];
        CHECK(blob_set_parent_pos(win, t));
        CHECK(blob_copy_to_host(win, step, sizeof step));
        printf("step %d: %.0f %.0f %.0f %.0f %.0f %.0f\n", t, step[0], step[1], step[2], step[3], step[4], step[5]);
        if (step[0] != (float)(t * 6)) return 1;
    }
    s = blob_set_parent_pos(win, 4);
    printf("set_parent_pos(4): %s (%s)\n", blob_status_str(s), blob_last_error());
    if (s != BLOB_ERR_OUT_OF_RANGE) return 1;
    /* The window outlives its parent's handle. */
    CHECK(blob_free(seq));
    CHECK(blob_fill(win, 0.0));
    CHECK(blob_free(win));
    return 0;
}
