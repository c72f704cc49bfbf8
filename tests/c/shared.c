/* Issue 31 from C: a blob in shared memory passed to another process over
 * a Unix socket (SCM_RIGHTS), both sides writing and seeing each other's
 * writes, and the receiving side's own handles. Valgrind-clean on both
 * sides of the fork. An alarm is the watchdog. */
#define _GNU_SOURCE
#include "check.h"

#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

enum { ROWS = 64, COLS = 1000 };

/* The CPU engine, named explicitly: a forked child cannot use the
 * parent's GPU device (as with CUDA). */
static BlobEngine *cpu;

/* Sends one descriptor and the blob's byte offset over a Unix socket. */
static int send_fd(int sock, int fd, uint64_t offset) {
    struct msghdr msg;
    struct iovec iov;
    char control[CMSG_SPACE(sizeof(int))];
    memset(&msg, 0, sizeof msg);
    memset(control, 0, sizeof control);
    iov.iov_base = &offset;
    iov.iov_len = sizeof offset;
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof fd);
    return sendmsg(sock, &msg, 0) == (ssize_t)sizeof offset ? 0 : -1;
}

static int recv_fd(int sock, uint64_t *offset) {
    struct msghdr msg;
    struct iovec iov;
    char control[CMSG_SPACE(sizeof(int))];
    memset(&msg, 0, sizeof msg);
    iov.iov_base = offset;
    iov.iov_len = sizeof *offset;
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) != (ssize_t)sizeof *offset) return -1;
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    if (c == NULL || c->cmsg_type != SCM_RIGHTS) return -1;
    int fd;
    memcpy(&fd, CMSG_DATA(c), sizeof fd);
    return fd;
}

static void sync_send(int sock, char what) { CHECK(write(sock, &what, 1) == 1); }
static char sync_recv(int sock) {
    char what = 0;
    CHECK(read(sock, &what, 1) == 1);
    return what;
}

/* The worker: maps rows 16..47 it was sent, checks the parent's values,
 * writes its own and checks the parent's next write. */
static int child(int sock) {
    uint64_t offset = 0;
    int fd = recv_fd(sock, &offset);
    CHECK(fd >= 0);
    CHECK(offset == (uint64_t)16 * COLS * sizeof(float));
    int64_t dims[2] = {32, COLS};
    Blob *b = NULL;
    CHECK(blob_from_shared_fd(cpu, BLOB_F32, dims, 2, fd, offset, &b) == BLOB_OK);
    CHECK(close(fd) == 0); /* the blob keeps its own descriptor */
    bool shared = false;
    CHECK(blob_is_shared(b, &shared) == BLOB_OK && shared);
    float *v = malloc(sizeof(float) * 32 * COLS);
    CHECK(blob_copy_to_host(b, v, sizeof(float) * 32 * COLS) == BLOB_OK);
    for (int i = 0; i < 32 * COLS; i++) CHECK(v[i] == (float)(16 * COLS + i));
    CHECK(blob_fill(b, -2.0) == BLOB_OK);
    sync_send(sock, 'w');
    CHECK(sync_recv(sock) == 'p');
    CHECK(blob_copy_to_host(b, v, sizeof(float) * 32 * COLS) == BLOB_OK);
    for (int i = 0; i < 32 * COLS; i++) CHECK(v[i] == (i < COLS ? 5.0f : -2.0f));
    free(v);
    CHECK(blob_free(b) == BLOB_OK);
    return failures == 0 ? 0 : 1;
}

int main(void) {
    alarm(120);
    CHECK(blob_engine_cpu(&cpu) == BLOB_OK);
    int64_t dims[2] = {ROWS, COLS};
    Blob *b = NULL;
    CHECK(blob_create_tensor(cpu, BLOB_F32, dims, 2, &b) == BLOB_OK);
    float *init = malloc(sizeof(float) * ROWS * COLS);
    for (int i = 0; i < ROWS * COLS; i++) init[i] = (float)i;
    CHECK(blob_copy_from_host(b, init, sizeof(float) * ROWS * COLS) == BLOB_OK);
    bool shared = true;
    CHECK(blob_is_shared(b, &shared) == BLOB_OK && !shared);
    int fd = -1;
    uint64_t offset = 1;
    CHECK(blob_shared_fd(b, &fd, &offset) == BLOB_ERR_INVALID_ARGUMENT && fd == -1 && offset == 1);
    CHECK(blob_share_memory(b) == BLOB_OK);
    CHECK(blob_share_memory(b) == BLOB_OK);
    CHECK(blob_is_shared(b, &shared) == BLOB_OK && shared);

    /* A window of rows 16..47 is what travels. */
    Blob *w = NULL;
    CHECK(blob_create_window(b, 32, &w) == BLOB_OK);
    CHECK(blob_set_parent_pos(w, 16) == BLOB_OK);
    CHECK(blob_is_shared(w, &shared) == BLOB_OK && shared);
    CHECK(blob_shared_fd(w, &fd, &offset) == BLOB_OK);

    int socks[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, socks) == 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(socks[0]);
        close(fd);
        CHECK(blob_free(w) == BLOB_OK);
        CHECK(blob_free(b) == BLOB_OK);
        free(init);
        int rc = child(socks[1]);
        blob_engine_free(cpu);
        close(socks[1]);
        exit(rc);
    }
    close(socks[1]);
    CHECK(send_fd(socks[0], fd, offset) == 0);
    CHECK(close(fd) == 0);
    CHECK(sync_recv(socks[0]) == 'w');
    float *v = malloc(sizeof(float) * ROWS * COLS);
    CHECK(blob_copy_to_host(b, v, sizeof(float) * ROWS * COLS) == BLOB_OK);
    for (int i = 0; i < ROWS * COLS; i++) CHECK(v[i] == ((i >= 16 * COLS && i < 48 * COLS) ? -2.0f : (float)i));
    /* The parent's write to row 16 reaches the child. */
    Blob *row = NULL;
    CHECK(blob_create_window(b, 1, &row) == BLOB_OK);
    CHECK(blob_set_parent_pos(row, 16) == BLOB_OK);
    CHECK(blob_fill(row, 5.0) == BLOB_OK);
    sync_send(socks[0], 'p');
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    close(socks[0]);

    /* A shared blob cannot be reallocated; views of it are shared; the
     * dense-only descriptor refuses a strided view. */
    int64_t more[2] = {ROWS + 1, COLS};
    CHECK(blob_free(row) == BLOB_OK);
    CHECK(blob_free(w) == BLOB_OK);
    CHECK(blob_reshape(b, more, 2) == BLOB_ERR_BUSY);
    free(v);
    free(init);
    CHECK(blob_free(b) == BLOB_OK);
    blob_engine_free(cpu);
    if (failures) fprintf(stderr, "%d failure(s)\n", failures);
    return failures == 0 ? 0 : 1;
}
