/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>

#include "parse-util.h"
#include "util.h"
#include "worker-log.h"
#include "worker.h"

static const char * const source_table[_WORKER_LOG_SOURCE_MAX] = {
        [WORKER_LOG_SOURCE_SANDBOXD] = "sandboxd",
        [WORKER_LOG_SOURCE_LAUNCHER] = "launcher",
        [WORKER_LOG_SOURCE_EGRESS] = "egress",
};

const char *worker_log_source_to_string(WorkerLogSource s) {
        return s >= 0 && s < _WORKER_LOG_SOURCE_MAX ? source_table[s] : NULL;
}

static bool unit_is(const char *unit, const char *id, const char *suffix) {
        char want[WORKER_ID_LEN + 64];

        snprintf(want, sizeof(want), "sandbox-%s%s", id, suffix);
        return streq_ptr(unit, want);
}

static bool uid_is_dynamic(const char *uid) {
        uint64_t u;

        return uid && parse_uint64(uid, &u) >= 0 && u >= WORKER_LOG_DYNAMIC_UID_MIN && u <= WORKER_LOG_DYNAMIC_UID_MAX;
}

WorkerLogSource worker_log_classify(const char *id, const WorkerLogFields *f, bool egress) {
        bool root, names_id, unit_lost;

        if (!worker_log_id_valid(id) || !f)
                return WORKER_LOG_SOURCE_UNTRUSTED;
        root = streq_ptr(f->uid, "0");
        names_id = streq_ptr(f->worker_id, id);
        unit_lost = !f->systemd_unit;
        if (root && names_id && streq_ptr(f->systemd_unit, WORKER_LOG_DAEMON_UNIT))
                return WORKER_LOG_SOURCE_SANDBOXD;
        if (root && (unit_is(f->systemd_unit, id, ".service") || unit_is(f->systemd_unit, id, "-cleanup.service") ||
                     (unit_lost && names_id)))
                return WORKER_LOG_SOURCE_LAUNCHER;
        /* The proxy runs under a dynamic UID of its own: its unit is what
         * identifies it, and only systemd puts a process in that cgroup. */
        if (egress && f->uid && (unit_is(f->systemd_unit, id, "-egress.service") ||
                                 (unit_lost && names_id && uid_is_dynamic(f->uid))))
                return WORKER_LOG_SOURCE_EGRESS;
        return WORKER_LOG_SOURCE_UNTRUSTED;
}

bool worker_log_id_valid(const char *id) {
        if (!id || strlen(id) != WORKER_ID_LEN)
                return false;
        for (const char *p = id; *p; p++)
                if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
                        return false;
        return true;
}

bool worker_log_cursor_valid(const char *cursor) {
        if (!cursor || strlen(cursor) >= WORKER_LOG_CURSOR_MAX)
                return false;
        for (const char *p = cursor; *p; p++)
                if (*p <= ' ' || *p > '~')
                        return false;
        return true;
}

void worker_log_text_sanitize(char *s) {
        utf8_replace_invalid(s);
        for (unsigned char *p = (unsigned char *) s; *p; p++)
                if (*p < ' ' || *p == 0x7f)
                        *p = ' ';
                else if (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f)
                        /* U+0080..U+009F: C1 controls (CSI among them) to a terminal */
                        p[0] = ' ', p[1] = ' ';
}

bool worker_log_event_is_end(const char *event) {
        return streq_ptr(event, "ended") || streq_ptr(event, "start-failed");
}
