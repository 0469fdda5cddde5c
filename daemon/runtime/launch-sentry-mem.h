/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* The gVisor sentry's own memory accounting, read from the host without
 * asking the sentry: see launch-sentry-mem.c. */
typedef struct SentryMem {
        int file_fd;    /* the sentry's memory file, "memfd:runsc-memory" */
        int usage_fd;   /* its shared usage counter, "memfd:memory-usage" */
} SentryMem;

#define SENTRY_MEM_NULL ((SentryMem) { .file_fd = -1, .usage_fd = -1 })

/* Opens the accounting of the sentry ("runsc-sandbox") that runtime_pid
 * ("runsc run") started. -ESRCH: no sentry among its children (yet);
 * -ENOENT: a sentry without those files (another runsc). */
int sentry_mem_open(pid_t runtime_pid, SentryMem *ret);
/* The bytes "runsc events" reports as memory.usage.usage. */
int sentry_mem_read(const SentryMem *m, uint64_t *ret);
void sentry_mem_close(SentryMem *m);
