/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdint.h>

/* Copies IN to OUT until IN ends: splice(2) when one side is a pipe (no
 * copy through user space), read and write when neither is. *MOVED holds
 * the bytes that went, also on failure. 0, or the negative errno of the
 * read or write that failed (-EPIPE: OUT's reader went away; callers
 * ignore SIGPIPE). sandbox-files and sandboxctl cp share it. */
int fd_copy_all(int in, int out, uint64_t *moved);

/* The same into OUT, a regular file written from offset 0 that the caller
 * fsyncs at the end: writeback starts as the bytes arrive instead of all at
 * once in that fsync. */
int fd_copy_all_durable(int in, int out, uint64_t *moved);
