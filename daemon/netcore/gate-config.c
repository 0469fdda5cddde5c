/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gate-config.h"

void gate_config_init(GateConfig *c) {
        *c = (GateConfig) {
                .max_request_bytes = GATE_BODY_DEFAULT,
                .max_response_bytes = GATE_BODY_DEFAULT,
                .timeout_usec = GATE_TIMEOUT_DEFAULT_USEC,
                .header_timeout_usec = GATE_HEADER_TIMEOUT_DEFAULT_USEC,
                .body_timeout_usec = GATE_BODY_TIMEOUT_DEFAULT_USEC,
                .idle_usec = GATE_IDLE_DEFAULT_USEC,
                .max_concurrent = GATE_MAX_CONCURRENT_DEFAULT,
                .buffer_budget = GATE_BUFFER_BUDGET_DEFAULT,
        };
}

static int parse_u64(const char *v, uint64_t min, uint64_t max, uint64_t *ret) {
        char *end;

        if (*v < '0' || *v > '9')
                return -EINVAL;
        errno = 0;
        unsigned long long n = strtoull(v, &end, 10);
        if (errno || *end || n < min || n > max)
                return -EINVAL;
        *ret = n;
        return 0;
}

static bool id_is_valid(const char *v) {
        size_t n = strlen(v);
        if (n == 0 || n > GATE_WORKER_ID_MAX)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_", v[i]))
                        return false;
        return true;
}

static int parse_upstream(const char *v, GateConfig *c) {
        const char *colon = strrchr(v, ':');
        struct in_addr a;
        uint64_t port;

        if (!colon || (size_t) (colon - v) >= sizeof(c->upstream_host))
                return -EINVAL;
        memcpy(c->upstream_host, v, (size_t) (colon - v));
        c->upstream_host[colon - v] = 0;
        if (inet_pton(AF_INET, c->upstream_host, &a) != 1 || parse_u64(colon + 1, 1, 65535, &port) < 0)
                return -EINVAL;
        c->upstream_port = (uint16_t) port;
        return 0;
}

static int parse_line(char *line, GateConfig *c) {
        char *eq = strchr(line, '=');
        uint64_t n;

        if (!eq)
                return -EINVAL;
        *eq = 0;
        const char *k = line, *v = eq + 1;
        if (strcmp(k, "worker") == 0) {
                if (!id_is_valid(v))
                        return -EINVAL;
                snprintf(c->worker_id, sizeof(c->worker_id), "%s", v);
                return 0;
        }
        if (strcmp(k, "upstream") == 0)
                return parse_upstream(v, c);
        if (strcmp(k, "public") == 0) {
                if (strcmp(v, "0") && strcmp(v, "1"))
                        return -EINVAL;
                c->public = v[0] == '1';
                return 0;
        }
        static const struct {
                const char *key;
                size_t offset;
                uint64_t min, max;
        } numbers[] = {
                { "max_request_bytes", offsetof(GateConfig, max_request_bytes), 0, UINT64_C(1) << 30 },
                { "max_response_bytes", offsetof(GateConfig, max_response_bytes), 0, UINT64_C(1) << 30 },
                { "timeout_usec", offsetof(GateConfig, timeout_usec), 1000, UINT64_C(3600) * 1000000 },
                { "header_timeout_usec", offsetof(GateConfig, header_timeout_usec), 1000, UINT64_C(3600) * 1000000 },
                { "body_timeout_usec", offsetof(GateConfig, body_timeout_usec), 1000, UINT64_C(3600) * 1000000 },
                { "idle_usec", offsetof(GateConfig, idle_usec), 1000, UINT64_C(3600) * 1000000 },
                { "buffer_budget", offsetof(GateConfig, buffer_budget), UINT64_C(64) << 10, UINT64_C(1) << 30 },
        };
        for (size_t i = 0; i < sizeof(numbers) / sizeof(numbers[0]); i++)
                if (strcmp(k, numbers[i].key) == 0) {
                        if (parse_u64(v, numbers[i].min, numbers[i].max, &n) < 0)
                                return -EINVAL;
                        *(uint64_t *) ((char *) c + numbers[i].offset) = n;
                        return 0;
                }
        if (strcmp(k, "max_concurrent") == 0) {
                if (parse_u64(v, 1, GATE_CONNECTIONS_MAX, &n) < 0)
                        return -EINVAL;
                c->max_concurrent = (uint32_t) n;
                return 0;
        }
        return -EINVAL;
}

int gate_config_parse(const char *text, size_t size, GateConfig *ret, unsigned *ret_bad_line) {
        GateConfig c;
        unsigned line_no = 0;
        size_t at = 0;

        gate_config_init(&c);
        *ret_bad_line = 0;
        while (at < size) {
                const char *nl = memchr(text + at, '\n', size - at);
                size_t n = nl ? (size_t) (nl - text - at) : size - at;
                char line[256];

                line_no++;
                if (n >= sizeof(line) || memchr(text + at, 0, n)) {
                        *ret_bad_line = line_no;
                        return -EINVAL;
                }
                memcpy(line, text + at, n);
                line[n] = 0;
                at += n + (nl ? 1 : 0);
                if (n == 0 || line[0] == '#')
                        continue;
                if (parse_line(line, &c) < 0) {
                        *ret_bad_line = line_no;
                        return -EINVAL;
                }
        }
        if (!c.worker_id[0] || c.upstream_port == 0)
                return -EINVAL;
        *ret = c;
        return 0;
}

int gate_config_format(const GateConfig *c, char **ret) {
        char *s;

        if (asprintf(&s,
                     "worker=%s\nupstream=%s:%u\nmax_request_bytes=%" PRIu64 "\nmax_response_bytes=%" PRIu64
                     "\ntimeout_usec=%" PRIu64 "\nheader_timeout_usec=%" PRIu64 "\nbody_timeout_usec=%" PRIu64
                     "\nidle_usec=%" PRIu64 "\nmax_concurrent=%u\nbuffer_budget=%" PRIu64 "\npublic=%d\n",
                     c->worker_id, c->upstream_host, (unsigned) c->upstream_port, c->max_request_bytes,
                     c->max_response_bytes, c->timeout_usec, c->header_timeout_usec, c->body_timeout_usec,
                     c->idle_usec, (unsigned) c->max_concurrent, c->buffer_budget, c->public ? 1 : 0) < 0)
                return -ENOMEM;
        *ret = s;
        return 0;
}

/* The number at P, which ends at a space or the end, into *RET. */
static int parse_field(const char *p, const char **ret_end, uint64_t max, uint64_t *ret) {
        size_t n = strcspn(p, " ");
        char number[24];

        /* parse_u64() wants the number alone: a copy without what follows. */
        if (n == 0 || n >= sizeof(number))
                return -EINVAL;
        memcpy(number, p, n);
        number[n] = 0;
        *ret_end = p + n;
        return parse_u64(number, 0, max, ret);
}

int gate_status_parse(const char *status, GateStatus *ret) {
        uint64_t served, refused, open = 0;
        const char *p;

        if (!status || strncmp(status, "served=", 7) != 0 || parse_field(status + 7, &p, UINT64_MAX, &served) < 0)
                return -EINVAL;
        if (strncmp(p, " refused=", 9) != 0 || parse_field(p + 9, &p, UINT64_MAX, &refused) < 0)
                return -EINVAL;
        if (*p && (strncmp(p, " open=", 6) != 0 || parse_field(p + 6, &p, UINT_MAX, &open) < 0 || *p))
                return -EINVAL;
        *ret = (GateStatus) { .served = served, .open = (unsigned) open };
        return 0;
}
