/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "egress-ctl.h"

int egress_ctl_path(const char *id, char *buf, size_t size) {
        if (!id || !*id || strchr(id, '/') || id[0] == '.')
                return -EINVAL;
        int n = snprintf(buf, size, "%s/%s.ctl", EGRESS_CTL_DIR, id);
        if (n < 0 || (size_t) n >= size)
                return -EINVAL;
        return 0;
}

EgressCtlRequest egress_ctl_parse_request(const char *buf, size_t len, size_t *ret_json_offset) {
        static const char stats[] = "stats", policy[] = "policy\n";

        if (len == sizeof(stats) - 1 && memcmp(buf, stats, len) == 0)
                return EGRESS_CTL_STATS;
        if (len > sizeof(policy) - 1 && memcmp(buf, policy, sizeof(policy) - 1) == 0) {
                /* A NUL inside would cut the JSON short of what was sent. */
                if (memchr(buf, 0, len))
                        return EGRESS_CTL_INVALID;
                if (ret_json_offset)
                        *ret_json_offset = sizeof(policy) - 1;
                return EGRESS_CTL_POLICY;
        }
        return EGRESS_CTL_INVALID;
}

static int written(int n, size_t size) {
        return n < 0 || (size_t) n >= size ? -ENOBUFS : n;
}

int egress_ctl_format_stats(const EgressCounters *c, char *buf, size_t size) {
        return written(snprintf(buf, size, "stats %" PRIu64 " %" PRIu64 " %" PRIu64, c->bytes_sent,
                                c->bytes_received, c->connections), size);
}

int egress_ctl_format_status(int error, char *buf, size_t size) {
        if (error == 0)
                return written(snprintf(buf, size, "ok"), size);
        return written(snprintf(buf, size, "error %d", error < 0 ? -error : error), size);
}

/* One unsigned decimal, no sign, no leading space, up to END. */
static int parse_u64(const char **p, const char *end, uint64_t *ret) {
        uint64_t v = 0;
        const char *s = *p;

        if (s >= end || *s < '0' || *s > '9')
                return -EINVAL;
        for (; s < end && *s >= '0' && *s <= '9'; s++) {
                if (v > (UINT64_MAX - (uint64_t) (*s - '0')) / 10)
                        return -EINVAL;
                v = v * 10 + (uint64_t) (*s - '0');
        }
        *p = s;
        *ret = v;
        return 0;
}

int egress_ctl_parse_stats(const char *buf, size_t len, EgressCounters *ret) {
        const char *p = buf, *end = buf + len;
        uint64_t v[3];

        if (len < 6 || memcmp(p, "stats ", 6) != 0)
                return -EINVAL;
        p += 6;
        for (size_t i = 0; i < 3; i++) {
                if (i > 0) {
                        if (p >= end || *p != ' ')
                                return -EINVAL;
                        p++;
                }
                if (parse_u64(&p, end, &v[i]) < 0)
                        return -EINVAL;
        }
        if (p != end)
                return -EINVAL;
        *ret = (EgressCounters) { .bytes_sent = v[0], .bytes_received = v[1], .connections = v[2] };
        return 0;
}

int egress_ctl_parse_status(const char *buf, size_t len) {
        const char *p = buf + 6, *end = buf + len;
        uint64_t e;

        if (len == 2 && memcmp(buf, "ok", 2) == 0)
                return 0;
        if (len < 7 || memcmp(buf, "error ", 6) != 0 || parse_u64(&p, end, &e) < 0 || p != end || e == 0 ||
            e > 4095)
                return -EBADMSG;
        return -(int) e;
}
