/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Where a tunnel's time goes: per-phase timestamps of every tunnel and the
 * length of each journal flush, written to the file $SANDBOX_EGRESS_TRACE
 * names. Only in a build configured with -Degress_trace=true, for
 * bench/egress/bench.sh (EGRESS_BENCH_TRACE); in every other build the
 * marks compile to nothing and the Tunnel carries no timestamps. */

#include <stdint.h>

#ifndef EGRESS_TRACE
#  define EGRESS_TRACE 0
#endif

typedef enum TracePhase {
        TRACE_ACCEPT,      /* tunnel_start(), right after accept4() */
        TRACE_REQUEST,     /* CONNECT parsed, host checked against the policy */
        TRACE_RESOLVED,    /* answers classified */
        TRACE_CONNECTED,   /* upstream connect() done */
        TRACE_OK_SENT,     /* 200 sent */
        TRACE_HELLO,       /* ClientHello complete, SNI checked */
        TRACE_FORWARD,     /* hello sent upstream, forwarding set up */
        TRACE_FIRST_DOWN,  /* first upstream bytes spliced into the pipe */
        TRACE_CLOSE,
        _TRACE_PHASE_MAX,
} TracePhase;

typedef struct TraceMarks {
        uint64_t at[_TRACE_PHASE_MAX];   /* CLOCK_MONOTONIC ns, 0 = not reached */
} TraceMarks;

#if EGRESS_TRACE
/* Opens $SANDBOX_EGRESS_TRACE for appending; without it tracing stays off. */
void trace_open(void);
uint64_t trace_now_ns(void);
void trace_mark(TraceMarks *m, TracePhase phase);
/* One line per tunnel: the thread, the accept time, each phase's offset. */
void trace_tunnel(const TraceMarks *m);
/* One line for a span of the proxy's own work (a journal flush). */
void trace_span(const char *what, uint64_t start_ns, unsigned n);
/* Writes out what the calling thread has buffered. */
void trace_flush(void);
#  define TRACE_MARK(marks, phase) trace_mark(&(marks), (phase))
#  define TRACE_MARK_ONCE(marks, phase) do { if (!(marks).at[phase]) trace_mark(&(marks), (phase)); } while (0)
#else
static inline void trace_open(void) {}
static inline void trace_flush(void) {}
#  define TRACE_MARK(marks, phase) do {} while (0)
#  define TRACE_MARK_ONCE(marks, phase) do {} while (0)
#endif
