/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Built only with -Degress_trace=true (see egress-trace.h). Each thread
 * buffers its lines and appends them in one write() when the buffer is
 * full or the loop ends, so that tracing costs a tunnel about two
 * clock_gettime() calls per phase and no system call of its own. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "egress-trace.h"

#define TRACE_BUFFER (64 * 1024)

static int trace_fd = -1;
static _Thread_local char buffer[TRACE_BUFFER];
static _Thread_local size_t used;
static _Thread_local long tid;

static long thread_id(void) {
        if (tid == 0)
                tid = (long) syscall(SYS_gettid);
        return tid;
}

void trace_open(void) {
        const char *path = getenv("SANDBOX_EGRESS_TRACE");
        if (path)
                trace_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (path && trace_fd < 0)
                fprintf(stderr, "sandbox-egress: cannot open trace file %s: %m\n", path);
}

uint64_t trace_now_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

void trace_mark(TraceMarks *m, TracePhase phase) {
        m->at[phase] = trace_now_ns();
}

void trace_flush(void) {
        if (trace_fd >= 0 && used > 0)
                (void) !write(trace_fd, buffer, used);
        used = 0;
}

static void append(const char *line, size_t len) {
        if (trace_fd < 0)
                return;
        if (used + len > sizeof(buffer))
                trace_flush();
        memcpy(buffer + used, line, len);
        used += len;
}

void trace_tunnel(const TraceMarks *m) {
        char line[256];
        int n = snprintf(line, sizeof(line), "T %ld %llu", thread_id(),
                         (unsigned long long) m->at[TRACE_ACCEPT]);
        for (int p = TRACE_ACCEPT + 1; p < _TRACE_PHASE_MAX && n > 0 && (size_t) n < sizeof(line); p++)
                n += snprintf(line + n, sizeof(line) - (size_t) n, " %lld",
                              m->at[p] ? (long long) (m->at[p] - m->at[TRACE_ACCEPT]) / 1000 : -1LL);
        if (n > 0 && (size_t) n < sizeof(line) - 1) {
                line[n++] = '\n';
                append(line, (size_t) n);
        }
}

void trace_span(const char *what, uint64_t start_ns, unsigned count) {
        char line[128];
        int n = snprintf(line, sizeof(line), "S %ld %s %llu %llu %u\n", thread_id(), what,
                         (unsigned long long) start_ns, (unsigned long long) (trace_now_ns() - start_ns) / 1000,
                         count);
        if (n > 0 && (size_t) n < sizeof(line))
                append(line, (size_t) n);
}
