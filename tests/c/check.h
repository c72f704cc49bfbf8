/* A tiny assertion macro shared by the C tests: reports the failed
 * condition with the library's last error and counts failures. */
#ifndef BLOB_TESTS_CHECK_H
#define BLOB_TESTS_CHECK_H

#include <blob.h>
#include <stdio.h>

static int failures = 0;

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: %s is false (%s)\n", __FILE__, __LINE__, #cond,  \
                    blob_last_error());                                              \
            failures++;                                                              \
        }                                                                            \
    } while (0)

#endif
