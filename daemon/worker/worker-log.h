/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A worker's log as ReadWorkerLog serves it (org.sandboxd1(5), docs/man/org.sandboxd1.5.scd): which journal
 * entries belong to worker ID, decided from the fields journald itself
 * attaches (_SYSTEMD_UNIT, _UID), never from a field the sender wrote.
 * Everything here is pure; worker-log-journal.c does the reading. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The most entries one call returns, and the most it looks at, so a call's
 * work is bounded; also the bytes of text it returns (a reply stays far below
 * D-Bus's message limit, and one entry's message is cut at
 * WORKER_LOG_MAX_MESSAGE), and the time it may read before it returns what it
 * has (the next call resumes from its cursor). */
#define WORKER_LOG_MAX_ENTRIES 1000u
#define WORKER_LOG_MAX_SCAN    (8u * WORKER_LOG_MAX_ENTRIES)
#define WORKER_LOG_MAX_BYTES   (1024u * 1024u)
#define WORKER_LOG_MAX_MESSAGE (64u * 1024u)
#define WORKER_LOG_MAX_USEC    (2u * 1000u * 1000u)
/* A cursor is journald's "s=...;i=...;b=...;m=...;t=...;x=..." (about 130 bytes). */
#define WORKER_LOG_CURSOR_MAX 512u
/* The one unit sandboxd runs as (units/sandboxd.service). */
#define WORKER_LOG_DAEMON_UNIT "sandboxd.service"
/* systemd's DynamicUser= range: the proxy's UID, and no login user's. */
#define WORKER_LOG_DYNAMIC_UID_MIN 61184u
#define WORKER_LOG_DYNAMIC_UID_MAX 65519u

typedef enum WorkerLogSource {
        WORKER_LOG_SOURCE_SANDBOXD,     /* the daemon's lifecycle entries about the worker */
        WORKER_LOG_SOURCE_LAUNCHER,     /* root's processes in the worker's own unit (sandbox-launch) */
        WORKER_LOG_SOURCE_EGRESS,       /* the worker's proxy unit */
        _WORKER_LOG_SOURCE_MAX,
        WORKER_LOG_SOURCE_UNTRUSTED = -1,
} WorkerLogSource;

const char *worker_log_source_to_string(WorkerLogSource s);

/* The fields of one entry the decision needs; NULL when absent. */
typedef struct WorkerLogFields {
        const char *systemd_unit;       /* _SYSTEMD_UNIT (trusted: journald, from the cgroup) */
        const char *uid;                /* _UID (trusted: journald, from SCM_CREDENTIALS) */
        const char *worker_id;          /* SANDBOXD_WORKER_ID (the sender's own: trusted only from sandboxd) */
} WorkerLogFields;

/* Where an entry comes from if it is one of worker ID's, else
 * WORKER_LOG_SOURCE_UNTRUSTED. sandboxd's entries count only when they name
 * ID; the launcher's only when root wrote them from sandbox-ID.service (the
 * workload runs there under its dynamic UID) or sandbox-ID-cleanup.service;
 * the proxy's only from sandbox-ID-egress.service, and only with EGRESS.
 *
 * journald reads _SYSTEMD_UNIT from /proc when it gets to a datagram: a
 * sender that exited by then (the launcher reporting a kill, the proxy
 * stopped just after a decision) leaves it unset. _UID comes with the
 * datagram (SCM_CREDENTIALS) and is always there. Such an entry still counts
 * when it names ID and its _UID is root's (launcher: root may write anything
 * anyway) or a dynamic one (egress: no login user has one, and no worker
 * reaches journald's socket). A known unit that is not the worker's never counts. */
WorkerLogSource worker_log_classify(const char *id, const WorkerLogFields *f, bool egress);

/* Exactly WORKER_ID_LEN lowercase hex digits, as worker_new() makes them. */
bool worker_log_id_valid(const char *id);

/* What a caller may put in after_cursor: empty, or printable ASCII of
 * bounded length (journald parses the rest). */
bool worker_log_cursor_valid(const char *cursor);

/* Makes a journal value fit for a D-Bus string and a terminal, in place:
 * bytes that are not UTF-8 become '?', control characters a space. */
void worker_log_text_sanitize(char *s);

/* "ended" or "start-failed" from sandboxd: the worker's last lifecycle entry. */
bool worker_log_event_is_end(const char *event);

/* ---- reading the journal (worker-log-journal.c) ---------------------------- */

typedef struct WorkerLogEntry {
        uint64_t realtime_usec;
        WorkerLogSource source;
        uint32_t priority;
        char *event;            /* SANDBOXD_EVENT, the egress decision, or "" */
        char *message;          /* sanitized */
} WorkerLogEntry;

typedef struct WorkerLogPage {
        WorkerLogEntry *entries;
        size_t n;
        char *next_cursor;      /* where the next call resumes; "" when nothing was seen */
} WorkerLogPage;

void worker_log_page_done(WorkerLogPage *p);

/* Up to MAX (at most WORKER_LOG_MAX_ENTRIES) of worker ID's entries after
 * AFTER_CURSOR ("" for the start), oldest first. -EINVAL for a cursor the
 * journal cannot parse. */
int worker_log_read(const char *id, const char *after_cursor, bool egress, unsigned max, WorkerLogPage *ret);

/* The owner sandboxd recorded (SANDBOXD_OWNER_UID) when it created worker ID;
 * -ENOENT when its journal names no such worker. */
int worker_log_find_owner(const char *id, uid_t *ret);
