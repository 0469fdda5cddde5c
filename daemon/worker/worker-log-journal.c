/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>
#include <time.h>
#include <systemd/sd-journal.h>

#include "parse-util.h"
#include "util.h"
#include "worker-log.h"

/* How many of sandboxd's own entries about a worker are looked at for its
 * owner: the creation entry ("Starting worker") is among the first. */
#define OWNER_SCAN_MAX 64u

void worker_log_page_done(WorkerLogPage *p) {
        for (size_t i = 0; i < p->n; i++) {
                free(p->entries[i].event);
                free(p->entries[i].message);
        }
        free(p->entries);
        free(p->next_cursor);
        *p = (WorkerLogPage) {};
}

/* FIELD's value in the current entry, NUL-terminated and cut at MAX bytes;
 * NULL when absent. */
static int journal_field_max(sd_journal *j, const char *field, size_t max, char **ret) {
        const void *data;
        size_t len, flen = strlen(field);
        int r;

        r = sd_journal_get_data(j, field, &data, &len);
        if (r == -ENOENT) {
                *ret = NULL;
                return 0;
        }
        if (r < 0)
                return r;
        if (len <= flen || ((const char *) data)[flen] != '=')
                return -EBADMSG;
        *ret = strndup((const char *) data + flen + 1, MIN(len - flen - 1, max));
        return *ret ? 0 : -ENOMEM;
}

static int journal_field(sd_journal *j, const char *field, char **ret) {
        return journal_field_max(j, field, SIZE_MAX, ret);
}

/* FIELD=PREFIX VALUE SUFFIX */
static int add_match(sd_journal *j, const char *field, const char *prefix, const char *value, const char *suffix) {
        char m[128];

        snprintf(m, sizeof(m), "%s=%s%s%s", field, prefix, value, suffix);
        return sd_journal_add_match(j, m, 0);
}

/* The journal's own index narrows the search to the candidates: entries
 * naming ID (root's only, unless EGRESS: the proxy's UID is a dynamic one)
 * and root's in the worker's units; worker_log_classify() decides each. */
static int journal_open_for(const char *id, bool egress, bool daemon_only, sd_journal **ret) {
        _cleanup_(sd_journal_closep) sd_journal *j = NULL;
        int r;

        r = sd_journal_open(&j, SD_JOURNAL_LOCAL_ONLY);
        if (r < 0)
                return r;
        r = add_match(j, "SANDBOXD_WORKER_ID", "", id, "");
        if (r >= 0 && daemon_only)
                r = add_match(j, "_SYSTEMD_UNIT", "", WORKER_LOG_DAEMON_UNIT, "");
        if (r >= 0 && !egress)
                r = add_match(j, "_UID", "", "0", "");
        if (r >= 0 && !daemon_only) {
                r = sd_journal_add_disjunction(j);
                if (r >= 0)
                        r = add_match(j, "_SYSTEMD_UNIT", "sandbox-", id, ".service");
                if (r >= 0)
                        r = add_match(j, "_SYSTEMD_UNIT", "sandbox-", id, "-cleanup.service");
                if (r >= 0)
                        r = add_match(j, "_UID", "", "0", "");
                if (r >= 0 && egress) {
                        r = sd_journal_add_disjunction(j);
                        if (r >= 0)
                                r = add_match(j, "_SYSTEMD_UNIT", "sandbox-", id, "-egress.service");
                }
        }
        if (r < 0)
                return r;
        *ret = TAKE_PTR(j);
        return 0;
}

static WorkerLogSource journal_classify(sd_journal *j, const char *id, bool egress) {
        _cleanup_free_ char *unit = NULL, *uid = NULL, *wid = NULL;

        if (journal_field(j, "_SYSTEMD_UNIT", &unit) < 0 || journal_field(j, "_UID", &uid) < 0 ||
            journal_field(j, "SANDBOXD_WORKER_ID", &wid) < 0)
                return WORKER_LOG_SOURCE_UNTRUSTED;
        return worker_log_classify(id, &(WorkerLogFields) { .systemd_unit = unit, .uid = uid, .worker_id = wid },
                                   egress);
}

static int journal_event(sd_journal *j, WorkerLogSource source, char **ret) {
        static const struct { const char *field, *event; } egress_kinds[] = {
                { "EGRESS_BYTES_IN", "close" },
                { "EGRESS_SUPPRESSED", "suppressed" },
        };
        char *v = NULL;
        int r;

        if (source == WORKER_LOG_SOURCE_SANDBOXD)
                r = journal_field(j, "SANDBOXD_EVENT", &v);
        else if (source == WORKER_LOG_SOURCE_EGRESS) {
                r = journal_field(j, "EGRESS_DECISION", &v);
                for (size_t i = 0; r >= 0 && !v && i < ELEMENTSOF(egress_kinds); i++) {
                        const void *data;
                        size_t len;
                        if (sd_journal_get_data(j, egress_kinds[i].field, &data, &len) >= 0)
                                v = strdup(egress_kinds[i].event);
                }
        } else
                r = 0;
        if (r < 0)
                return r;
        if (!v && !(v = strdup("")))
                return -ENOMEM;
        worker_log_text_sanitize(v);
        *ret = v;
        return 0;
}

static int journal_entry_read(sd_journal *j, WorkerLogSource source, WorkerLogEntry *e) {
        _cleanup_free_ char *priority = NULL;
        uint64_t prio = 6;      /* LOG_INFO, as journald assumes */
        int r;

        *e = (WorkerLogEntry) { .source = source };
        r = sd_journal_get_realtime_usec(j, &e->realtime_usec);
        if (r >= 0)
                r = journal_field(j, "PRIORITY", &priority);
        if (r >= 0 && priority && (parse_uint64(priority, &prio) < 0 || prio > 7))
                prio = 6;
        e->priority = (uint32_t) prio;
        if (r >= 0)
                r = journal_field_max(j, "MESSAGE", WORKER_LOG_MAX_MESSAGE, &e->message);
        if (r >= 0 && !e->message && !(e->message = strdup("")))
                r = -ENOMEM;
        if (r >= 0)
                r = journal_event(j, source, &e->event);
        if (r < 0) {
                free(e->message);
                free(e->event);
                return r;
        }
        worker_log_text_sanitize(e->message);
        return 0;
}

/* Positions J on the first entry after CURSOR (the cursor's own entry, if it
 * still matches, is skipped). Returns > 0 when there is one. */
static int journal_seek_after(sd_journal *j, const char *cursor) {
        int r;

        if (isempty(cursor)) {
                r = sd_journal_seek_head(j);
                return r < 0 ? r : sd_journal_next(j);
        }
        r = sd_journal_seek_cursor(j, cursor);
        if (r < 0)
                return r;
        r = sd_journal_next(j);
        if (r <= 0)
                return r;
        if (sd_journal_test_cursor(j, cursor) > 0)
                return sd_journal_next(j);
        return r;
}

int worker_log_read(const char *id, const char *after_cursor, bool egress, unsigned max, WorkerLogPage *ret) {
        _cleanup_(sd_journal_closep) sd_journal *j = NULL;
        _cleanup_(worker_log_page_done) WorkerLogPage page = {};
        uint64_t deadline = now_usec(CLOCK_MONOTONIC) + WORKER_LOG_MAX_USEC;
        unsigned scanned = 0;
        size_t bytes = 0;
        int r;

        max = max == 0 ? WORKER_LOG_MAX_ENTRIES : MIN(max, WORKER_LOG_MAX_ENTRIES);
        r = journal_open_for(id, egress, false, &j);
        if (r < 0)
                return r;
        page.entries = calloc(max, sizeof(WorkerLogEntry));
        if (!page.entries)
                return -ENOMEM;
        for (r = journal_seek_after(j, after_cursor); r > 0 && page.n < max && scanned < WORKER_LOG_MAX_SCAN;
             r = sd_journal_next(j)) {
                WorkerLogSource source;
                WorkerLogEntry e;
                size_t size;

                /* Out of time: what was read so far is the page. */
                if (scanned > 0 && now_usec(CLOCK_MONOTONIC) >= deadline)
                        break;
                scanned++;
                source = journal_classify(j, id, egress);
                if (source != WORKER_LOG_SOURCE_UNTRUSTED) {
                        r = journal_entry_read(j, source, &e);
                        if (r < 0)
                                return r;
                        size = strlen(e.message) + strlen(e.event) + 32;
                        /* Full: this entry is the next call's first; the
                         * cursor stays on the one before. */
                        if (page.n > 0 && bytes + size > WORKER_LOG_MAX_BYTES) {
                                free(e.message);
                                free(e.event);
                                break;
                        }
                        bytes += size;
                        page.entries[page.n++] = e;
                }
                free(page.next_cursor);
                page.next_cursor = NULL;
                r = sd_journal_get_cursor(j, &page.next_cursor);
                if (r < 0)
                        return r;
        }
        if (r < 0)
                return r;
        if (!page.next_cursor && !(page.next_cursor = strdup(after_cursor ?: "")))
                return -ENOMEM;
        *ret = page;
        page = (WorkerLogPage) {};
        return 0;
}

int worker_log_find_owner(const char *id, uid_t *ret) {
        _cleanup_(sd_journal_closep) sd_journal *j = NULL;
        unsigned scanned = 0;
        int r;

        r = journal_open_for(id, false, true, &j);
        if (r < 0)
                return r;
        for (r = journal_seek_after(j, NULL); r > 0 && scanned < OWNER_SCAN_MAX; r = sd_journal_next(j)) {
                _cleanup_free_ char *owner = NULL;
                uint64_t uid;

                scanned++;
                if (journal_classify(j, id, false) != WORKER_LOG_SOURCE_SANDBOXD)
                        continue;
                r = journal_field(j, "SANDBOXD_OWNER_UID", &owner);
                if (r < 0)
                        return r;
                if (owner && parse_uint64(owner, &uid) >= 0 && uid < UINT32_MAX) {
                        *ret = (uid_t) uid;
                        return 0;
                }
        }
        return r < 0 ? r : -ENOENT;
}
