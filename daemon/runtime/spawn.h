/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdint.h>

/* Runs argv[0] (an absolute path) with stdin on /dev/null and stdout+stderr
 * captured into out (NUL-terminated, truncated to out_size - 1), in its own
 * process group. After timeout_usec the whole group is killed and -ETIMEDOUT
 * returned. Otherwise returns 0 and the wait status in *ret_status. */
int spawn_capture(char * const *argv, uint64_t timeout_usec, char *out, size_t out_size, int *ret_status);

/* Removes dir_path and everything below it; a missing path is success. */
int rm_rf(const char *dir_path);

/* The first line of s, with control characters turned into spaces and cut to
 * n - 1 bytes, into buf: fit for a one-line status report. */
const char *first_line(const char *s, char *buf, size_t n);
