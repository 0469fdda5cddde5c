/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>

#include "launch-env.h"
#include "util.h"

char * const launch_runtime_environment[] = { (char *) "PATH=" LAUNCH_FIXED_PATH, NULL };

/* 128-bit id, as 32 lowercase hex digits. */
static bool invocation_id_valid(const char *s) {
        size_t n = 0;

        for (; s && s[n]; n++)
                if (!isxdigit((unsigned char) s[n]))
                        return false;
        return n == 32;
}

/* "<device>:<inode>", both decimal. */
static bool journal_stream_valid(const char *s) {
        const char *colon = s ? strchr(s, ':') : NULL;

        if (!colon || colon == s || !colon[1])
                return false;
        for (const char *p = s; *p; p++)
                if (p != colon && !isdigit((unsigned char) *p))
                        return false;
        return true;
}

/* systemd's notify socket: an absolute path that fits a sockaddr_un. */
static bool notify_socket_valid(const char *s) {
        size_t n = s ? strlen(s) : 0;

        if (n < 2 || n >= 108 || s[0] != '/')
                return false;
        for (size_t i = 0; i < n; i++)
                if (iscntrl((unsigned char) s[i]))
                        return false;
        return true;
}

int launch_env_reset(void) {
        char invocation[33] = "", journal[64] = "", notify[108] = "";
        const char *v;

        v = getenv("INVOCATION_ID");
        if (invocation_id_valid(v))
                snprintf(invocation, sizeof(invocation), "%s", v);
        v = getenv("JOURNAL_STREAM");
        if (journal_stream_valid(v) && strlen(v) < sizeof(journal))
                snprintf(journal, sizeof(journal), "%s", v);
        /* A restore's unit is Type=notify: the guard says READY=1 once the
         * sandbox runs (launch-guard.c). Never passed on: children get
         * launch_runtime_environment. */
        v = getenv("NOTIFY_SOCKET");
        if (notify_socket_valid(v))
                snprintf(notify, sizeof(notify), "%s", v);
        if (clearenv() != 0)
                return -ENOMEM;
        if (setenv("PATH", LAUNCH_FIXED_PATH, 1) < 0 ||
            (invocation[0] && setenv("INVOCATION_ID", invocation, 1) < 0) ||
            (journal[0] && setenv("JOURNAL_STREAM", journal, 1) < 0) ||
            (notify[0] && setenv("NOTIFY_SOCKET", notify, 1) < 0))
                return -errno;
        return 0;
}
