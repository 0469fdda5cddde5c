/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup-stats.h"
#include "util.h"

#define CGROUP_FILE_MAX 16384   /* io.stat of a few dozen devices */

static const char *parse_number(const char *s, uint64_t *ret) {
        uint64_t v = 0;

        if (*s < '0' || *s > '9')
                return NULL;
        for (; *s >= '0' && *s <= '9'; s++) {
                if (v > (UINT64_MAX - (uint64_t) (*s - '0')) / 10)
                        return NULL;
                v = v * 10 + (uint64_t) (*s - '0');
        }
        *ret = v;
        return s;
}

int cgroup_parse_u64(const char *text, uint64_t *ret) {
        uint64_t v;
        const char *end;

        assert(text);
        end = parse_number(text, &v);
        if (!end || (*end && !(end[0] == '\n' && end[1] == 0)))
                return -EINVAL;
        *ret = v;
        return 0;
}

int cgroup_parse_keyed(const char *text, const char *key, uint64_t *ret) {
        size_t kl = strlen(key);

        assert(text);
        assert(key);
        for (const char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
                uint64_t v;
                const char *end;

                if (strncmp(line, key, kl) != 0 || line[kl] != ' ')
                        continue;
                end = parse_number(line + kl + 1, &v);
                if (!end || (*end && *end != '\n'))
                        return -EINVAL;
                *ret = v;
                return 0;
        }
        return -EINVAL;
}

static int add(uint64_t *sum, uint64_t v) {
        if (*sum > UINT64_MAX - v)
                return -EINVAL;
        *sum += v;
        return 0;
}

int cgroup_parse_io_stat(const char *text, uint64_t *ret_read, uint64_t *ret_write) {
        uint64_t rd = 0, wr = 0;

        assert(text);
        for (const char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
                const char *eol = strchrnul(line, '\n');
                /* Past "MAJ:MIN", fields are "key=value" separated by spaces. */
                const char *p = memchr(line, ' ', (size_t) (eol - line));
                while (p && p < eol) {
                        uint64_t v;
                        const char *end;
                        p++;
                        if (strncmp(p, "rbytes=", 7) == 0 || strncmp(p, "wbytes=", 7) == 0) {
                                end = parse_number(p + 7, &v);
                                if (!end || (end < eol && *end != ' ') || add(p[0] == 'r' ? &rd : &wr, v) < 0)
                                        return -EINVAL;
                        }
                        p = memchr(p, ' ', (size_t) (eol - p));
                }
        }
        *ret_read = rd;
        *ret_write = wr;
        return 0;
}

int cgroup_parse_blkio_bytes(const char *text, uint64_t *ret_read, uint64_t *ret_write) {
        uint64_t rd = 0, wr = 0;

        assert(text);
        for (const char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
                char dev[32], op[16];
                unsigned long long v;
                int n;

                /* The "Total N" line at the end has no device: not a sum of ours. */
                if (sscanf(line, "%31s %15s %llu%n", dev, op, &v, &n) != 3)
                        continue;
                if (!strchr(dev, ':'))
                        continue;
                if (streq(op, "Read") && add(&rd, v) < 0)
                        return -EINVAL;
                if (streq(op, "Write") && add(&wr, v) < 0)
                        return -EINVAL;
        }
        *ret_read = rd;
        *ret_write = wr;
        return 0;
}

/* ROOT/A/PATH/FILE (A may be NULL) into BUF, NUL-terminated. */
static int read_cgroup_file(const char *root, const char *controller, const char *path, const char *file, char *buf,
                            size_t size) {
        char name[1024];
        int n = controller ? snprintf(name, sizeof(name), "%s/%s/%s/%s", root, controller, path, file)
                           : snprintf(name, sizeof(name), "%s/%s/%s", root, path, file);
        _cleanup_close_ int fd = -1;
        ssize_t l;

        if (n < 0 || (size_t) n >= sizeof(name))
                return -ENAMETOOLONG;
        fd = open(name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
        if (fd < 0)
                return -errno;
        l = read_full(fd, buf, size - 1);
        if (l < 0)
                return (int) l;
        buf[l] = 0;
        return 0;
}

static void read_u64(const char *root, const char *controller, const char *path, const char *file, uint64_t *ret) {
        char buf[64];
        if (read_cgroup_file(root, controller, path, file, buf, sizeof(buf)) < 0 || cgroup_parse_u64(buf, ret) < 0)
                *ret = CGROUP_STAT_UNKNOWN;
}

static void read_keyed(const char *root, const char *controller, const char *path, const char *file, const char *key,
                       uint64_t *ret, char *buf, size_t size) {
        if (read_cgroup_file(root, controller, path, file, buf, size) < 0 || cgroup_parse_keyed(buf, key, ret) < 0)
                *ret = CGROUP_STAT_UNKNOWN;
}

static bool is_unified(const char *root) {
        char name[1024];
        snprintf(name, sizeof(name), "%s/cgroup.controllers", root);
        return access(name, F_OK) == 0;
}

static bool cgroup_exists(const char *root, const char *controller, const char *path) {
        char name[1024];
        int n = controller ? snprintf(name, sizeof(name), "%s/%s/%s", root, controller, path)
                           : snprintf(name, sizeof(name), "%s/%s", root, path);
        return n > 0 && (size_t) n < sizeof(name) && access(name, F_OK) == 0;
}

static int read_v2(const char *root, const char *path, CgroupStats *s, char *buf, size_t size) {
        uint64_t usec;

        if (!cgroup_exists(root, NULL, path))
                return -ENOENT;
        read_keyed(root, NULL, path, "cpu.stat", "usage_usec", &usec, buf, size);
        s->cpu_usage_nsec = usec == CGROUP_STAT_UNKNOWN || usec > UINT64_MAX / 1000 ? CGROUP_STAT_UNKNOWN : usec * 1000;
        read_u64(root, NULL, path, "memory.current", &s->memory_current);
        read_u64(root, NULL, path, "memory.peak", &s->memory_peak);
        read_u64(root, NULL, path, "pids.current", &s->tasks_current);
        read_keyed(root, NULL, path, "memory.events", "oom_kill", &s->oom_kills, buf, size);
        if (read_cgroup_file(root, NULL, path, "io.stat", buf, size) < 0 ||
            cgroup_parse_io_stat(buf, &s->io_read_bytes, &s->io_write_bytes) < 0)
                s->io_read_bytes = s->io_write_bytes = CGROUP_STAT_UNKNOWN;
        return 0;
}

static int read_v1(const char *root, const char *path, CgroupStats *s, char *buf, size_t size) {
        const char *cpuacct = cgroup_exists(root, "cpuacct", path) ? "cpuacct" : "cpu,cpuacct";
        bool any = false;

        any |= cgroup_exists(root, cpuacct, path);
        any |= cgroup_exists(root, "memory", path);
        any |= cgroup_exists(root, "pids", path);
        any |= cgroup_exists(root, "unified", path);
        if (!any)
                return -ENOENT;
        read_u64(root, cpuacct, path, "cpuacct.usage", &s->cpu_usage_nsec);
        /* On the hybrid layout the unified tree's cpu.stat has the time too
         * (Linux 4.15+), where the unit has no cpuacct cgroup of its own
         * (a container whose v1 controllers are not delegated). */
        if (s->cpu_usage_nsec == CGROUP_STAT_UNKNOWN) {
                uint64_t usec;
                read_keyed(root, "unified", path, "cpu.stat", "usage_usec", &usec, buf, size);
                if (usec != CGROUP_STAT_UNKNOWN && usec <= UINT64_MAX / 1000)
                        s->cpu_usage_nsec = usec * 1000;
        }
        read_u64(root, "memory", path, "memory.usage_in_bytes", &s->memory_current);
        read_u64(root, "memory", path, "memory.max_usage_in_bytes", &s->memory_peak);
        read_u64(root, "pids", path, "pids.current", &s->tasks_current);
        /* "oom_kill" since Linux 4.13; failcnt is not a count of kills (it
         * counts every time usage hit the limit, reclaim included). */
        read_keyed(root, "memory", path, "memory.oom_control", "oom_kill", &s->oom_kills, buf, size);
        if (read_cgroup_file(root, "blkio", path, "blkio.throttle.io_service_bytes", buf, size) < 0 ||
            cgroup_parse_blkio_bytes(buf, &s->io_read_bytes, &s->io_write_bytes) < 0)
                s->io_read_bytes = s->io_write_bytes = CGROUP_STAT_UNKNOWN;
        return 0;
}

int cgroup_stats_read(const char *root, const char *path, CgroupStats *ret) {
        _cleanup_free_ char *buf = malloc(CGROUP_FILE_MAX);
        CgroupStats s = {
                CGROUP_STAT_UNKNOWN, CGROUP_STAT_UNKNOWN, CGROUP_STAT_UNKNOWN, CGROUP_STAT_UNKNOWN,
                CGROUP_STAT_UNKNOWN, CGROUP_STAT_UNKNOWN, CGROUP_STAT_UNKNOWN,
        };
        int r;

        assert(root);
        assert(path);
        if (!buf)
                return -ENOMEM;
        r = is_unified(root) ? read_v2(root, path, &s, buf, CGROUP_FILE_MAX)
                             : read_v1(root, path, &s, buf, CGROUP_FILE_MAX);
        if (r < 0)
                return r;
        *ret = s;
        return 0;
}
