/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <sys/stat.h>

#include "parse-util.h"
#include "spec-endpoint.h"
#include "worker-state-file.h"

void worker_record_init(WorkerRecord *r) {
        *r = (WorkerRecord) {
                .class = _SBX_CLASS_INVALID,
                .requested_class = _SBX_CLASS_INVALID,
                .runtime = _SBX_RUNTIME_INVALID,
                .owner = (uid_t) -1,
                .uid = (uid_t) -1,
        };
}

void worker_record_done(WorkerRecord *r) {
        free(r->unit);
        free(r->origin);
        free(r->egress_socket);
        free(r->egress_service);
        free(r->egress_policy);
        free(r->gate_config);
        free(r->endpoint_name);
        strv_free(r->argv);
        free(r->workspace);
        free(r->suspending);
        worker_record_init(r);
}

bool worker_id_is_valid(const char *id) {
        if (strlen(id) != WORKER_ID_LEN)
                return false;
        for (const char *p = id; *p; p++)
                if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
                        return false;
        return true;
}

/* Values are one line each; the policy, JSON of the operator's and the
 * client's making, travels as hex so that nothing in it can end a line. */
static int hex_encode(const char *s, char **ret) {
        size_t n = strlen(s);
        char *h = malloc(2 * n + 1);

        if (!h)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                snprintf(h + 2 * i, 3, "%02x", (unsigned char) s[i]);
        h[2 * n] = 0;
        *ret = h;
        return 0;
}

static int hex_value(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        return -1;
}

static int hex_decode(const char *h, char **ret) {
        size_t n = strlen(h);
        char *s;

        if (n % 2)
                return -EBADMSG;
        s = malloc(n / 2 + 1);
        if (!s)
                return -ENOMEM;
        for (size_t i = 0; i < n / 2; i++) {
                int a = hex_value(h[2 * i]), b = hex_value(h[2 * i + 1]);
                if (a < 0 || b < 0 || (a == 0 && b == 0)) {
                        free(s);
                        return -EBADMSG;
                }
                s[i] = (char) (a << 4 | b);
        }
        s[n / 2] = 0;
        *ret = s;
        return 0;
}

static bool value_is_line(const char *s) {
        return s && !strpbrk(s, "\n\r");
}

int worker_record_format(const WorkerRecord *r, char **ret) {
        _cleanup_free_ char *policy = NULL, *gate = NULL, *buf = NULL;
        size_t size = 0;
        FILE *f;
        int k;

        if (!worker_id_is_valid(r->id) || !value_is_line(r->unit) || (r->origin && !value_is_line(r->origin)) ||
            r->class < 0 || r->class >= _SBX_CLASS_MAX || r->requested_class < 0 ||
            r->requested_class >= _SBX_CLASS_MAX || r->runtime < 0 || r->runtime >= _SBX_RUNTIME_MAX ||
            !r->egress_socket != !r->egress_service ||
            (r->egress_socket && (!value_is_line(r->egress_socket) || !value_is_line(r->egress_service))) ||
            (r->suspending && !value_is_line(r->suspending)) ||
            (r->endpoint_name && !sbx_endpoint_name_valid(r->endpoint_name)))
                return -EINVAL;
        if (r->egress_policy && hex_encode(r->egress_policy, &policy) < 0)
                return -ENOMEM;
        if (r->gate_config && hex_encode(r->gate_config, &gate) < 0)
                return -ENOMEM;
        f = open_memstream(&buf, &size);
        if (!f)
                return -ENOMEM;
        fprintf(f, "%s %d\n", WORKER_RECORD_MAGIC, WORKER_RECORD_VERSION);
        fprintf(f, "id=%s\nunit=%s\nclass=%s\nrequested-class=%s\n", r->id, r->unit, sbx_class_to_string(r->class),
                sbx_class_to_string(r->requested_class));
        if (r->origin)
                fprintf(f, "origin=%s\n", r->origin);
        fprintf(f, "runtime=%s\nowner=%u\nuid=%u\n", sbx_runtime_to_string(r->runtime), (unsigned) r->owner,
                (unsigned) r->uid);
        fprintf(f, "memory-max=%" PRIu64 "\ntasks-max=%" PRIu64 "\ncpu-quota-percent=%" PRIu32 "\n",
                r->limits.memory_max, r->limits.tasks_max, r->limits.cpu_quota_percent);
        fprintf(f, "runtime-max-usec=%" PRIu64 "\nidle-timeout-usec=%" PRIu64 "\n", r->limits.runtime_max_usec,
                r->limits.idle_timeout_usec);
        if (r->has_disk_max)
                fprintf(f, "disk-max=%" PRIu64 "\n", r->disk_max);
        fprintf(f, "egress-rate-bps=%" PRIu64 "\n", r->egress_rate_bps);
        if (r->egress_socket)
                fprintf(f, "egress-socket=%s\negress-service=%s\n", r->egress_socket, r->egress_service);
        if (policy)
                fprintf(f, "egress-policy=%s\n", policy);
        if (gate)
                fprintf(f, "gate-config=%s\ngate-port=%" PRIu64 "\n", gate, r->gate_port);
        if (r->endpoint_name)
                fprintf(f, "endpoint-name=%s\n", r->endpoint_name);
        if (r->suspended)
                fputs("suspended=yes\n", f);
        if (r->idle_suspend)
                fputs("idle-action=suspend\n", f);
        if (r->suspending)
                fprintf(f, "suspending=%s\ncheckpoint-budget=%" PRIu64 "\n", r->suspending, r->checkpoint_budget);
        for (char **a = r->argv; a && *a; a++) {
                _cleanup_free_ char *h = NULL;
                if (hex_encode(*a, &h) < 0) {
                        fclose(f);
                        return -ENOMEM;
                }
                /* One line per element, in order; "-" is the empty string. */
                fprintf(f, "argv=%s\n", *h ? h : "-");
        }
        if (r->workspace)
                fprintf(f, "workspace=%s\n", r->workspace);
        fprintf(f, "created-realtime=%" PRIu64 "\ncreated-monotonic=%" PRIu64 "\nlast-activity-monotonic=%" PRIu64 "\n",
                r->created_realtime, r->created_monotonic, r->last_activity_monotonic);
        if (r->pooled)
                fputs("start-mode=pooled\n", f);
        if (r->kept_secrets)
                fputs("kept-secrets=yes\n", f);
        fputs("end\n", f);
        k = fflush(f) == 0 && !ferror(f) ? 0 : -ENOMEM;
        fclose(f);
        if (k < 0)
                return k;
        *ret = TAKE_PTR(buf);
        return 0;
}

_printf_(3, 4)
static int refuse(char *why, size_t why_size, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(why, why_size, fmt, ap);
        va_end(ap);
        return -EBADMSG;
}

static int set_string(char **field, const char *value) {
        char *s = strdup(value);

        if (!s)
                return -ENOMEM;
        free(*field);
        *field = s;
        return 0;
}

/* One key's value into R. 1: the key is known; 0: skipped; <0: bad value. */
static int record_set(WorkerRecord *r, const char *key, const char *value) {
        static const struct {
                const char *key;
                size_t offset;
        } numbers[] = {
                { "memory-max", offsetof(WorkerRecord, limits.memory_max) },
                { "tasks-max", offsetof(WorkerRecord, limits.tasks_max) },
                { "runtime-max-usec", offsetof(WorkerRecord, limits.runtime_max_usec) },
                { "idle-timeout-usec", offsetof(WorkerRecord, limits.idle_timeout_usec) },
                { "disk-max", offsetof(WorkerRecord, disk_max) },
                { "egress-rate-bps", offsetof(WorkerRecord, egress_rate_bps) },
                { "created-realtime", offsetof(WorkerRecord, created_realtime) },
                { "created-monotonic", offsetof(WorkerRecord, created_monotonic) },
                { "last-activity-monotonic", offsetof(WorkerRecord, last_activity_monotonic) },
                { "checkpoint-budget", offsetof(WorkerRecord, checkpoint_budget) },
                { "gate-port", offsetof(WorkerRecord, gate_port) },
        };
        uint64_t u;
        int k = 0;

        for (size_t i = 0; i < ELEMENTSOF(numbers); i++)
                if (streq(key, numbers[i].key)) {
                        if (parse_uint64(value, &u) < 0)
                                return -EINVAL;
                        memcpy((uint8_t *) r + numbers[i].offset, &u, sizeof(u));
                        if (streq(key, "disk-max"))
                                r->has_disk_max = true;
                        return 1;
                }
        if (streq(key, "id")) {
                if (!worker_id_is_valid(value))
                        return -EINVAL;
                memcpy(r->id, value, WORKER_ID_LEN + 1);
        } else if (streq(key, "unit"))
                k = set_string(&r->unit, value);
        else if (streq(key, "origin"))
                k = set_string(&r->origin, value);
        else if (streq(key, "egress-socket"))
                k = set_string(&r->egress_socket, value);
        else if (streq(key, "egress-service"))
                k = set_string(&r->egress_service, value);
        else if (streq(key, "workspace"))
                k = set_string(&r->workspace, value);
        else if (streq(key, "suspending"))
                k = set_string(&r->suspending, value);
        else if (streq(key, "endpoint-name")) {
                if (!sbx_endpoint_name_valid(value))
                        return -EINVAL;
                k = set_string(&r->endpoint_name, value);
        }
        else if (streq(key, "egress-policy")) {
                char *p = NULL;
                k = hex_decode(value, &p);
                if (k < 0)
                        return k == -ENOMEM ? k : -EINVAL;
                free(r->egress_policy);
                r->egress_policy = p;
        } else if (streq(key, "gate-config")) {
                char *p = NULL;
                k = hex_decode(value, &p);
                if (k < 0)
                        return k == -ENOMEM ? k : -EINVAL;
                free(r->gate_config);
                r->gate_config = p;
        } else if (streq(key, "argv")) {
                char *a = NULL, **l;
                size_t n = strv_length(r->argv);
                k = streq(value, "-") ? ((a = strdup("")) ? 0 : -ENOMEM) : hex_decode(value, &a);
                if (k < 0)
                        return k == -ENOMEM ? k : -EINVAL;
                l = reallocarray(r->argv, n + 2, sizeof(char *));
                if (!l) {
                        free(a);
                        return -ENOMEM;
                }
                l[n] = a;
                l[n + 1] = NULL;
                r->argv = l;
        } else if (streq(key, "suspended") || streq(key, "idle-action") || streq(key, "kept-secrets")) {
                if (streq(key, "suspended") && streq(value, "yes"))
                        r->suspended = true;
                else if (streq(key, "kept-secrets") && streq(value, "yes"))
                        r->kept_secrets = true;
                else if (streq(key, "idle-action") && streq(value, "suspend"))
                        r->idle_suspend = true;
                else
                        return -EINVAL;
        } else if (streq(key, "class") || streq(key, "requested-class")) {
                SbxClass c = sbx_class_from_string(value);
                if (c < 0)
                        return -EINVAL;
                *(streq(key, "class") ? &r->class : &r->requested_class) = c;
        } else if (streq(key, "start-mode")) {
                if (!streq(value, "pooled") && !streq(value, "cold"))
                        return -EINVAL;
                r->pooled = streq(value, "pooled");
        } else if (streq(key, "runtime")) {
                r->runtime = sbx_runtime_from_string(value);
                if (r->runtime < 0)
                        return -EINVAL;
        } else if (streq(key, "owner") || streq(key, "uid") || streq(key, "cpu-quota-percent")) {
                if (parse_uint64(value, &u) < 0 || u > UINT32_MAX)
                        return -EINVAL;
                if (streq(key, "owner"))
                        r->owner = (uid_t) u;
                else if (streq(key, "uid"))
                        r->uid = (uid_t) u;
                else
                        r->limits.cpu_quota_percent = (uint32_t) u;
        } else
                return 0;
        return k < 0 ? k : 1;
}

int worker_record_parse(const char *text, size_t size, WorkerRecord *ret, char *why, size_t why_size) {
        _cleanup_free_ char *copy = NULL;
        WorkerRecord r;
        char *line, *next;
        unsigned lineno = 1;
        bool ended = false;
        int version, k;

        if (memchr(text, 0, size))
                return refuse(why, why_size, "contains a NUL byte");
        copy = strndup(text, size);
        if (!copy)
                return -ENOMEM;
        next = strchr(copy, '\n');
        if (!next)
                return refuse(why, why_size, "has no complete first line");
        *next++ = 0;
        if (sscanf(copy, WORKER_RECORD_MAGIC " %d", &version) != 1)
                return refuse(why, why_size, "does not start with \"" WORKER_RECORD_MAGIC " <version>\"");
        if (version != WORKER_RECORD_VERSION) {
                snprintf(why, why_size, "is version %d, this sandboxd reads version %d", version,
                         WORKER_RECORD_VERSION);
                return -EPROTONOSUPPORT;
        }

        worker_record_init(&r);
        for (line = next; line && *line; line = next) {
                char *eq, *nl = strchr(line, '\n');

                lineno++;
                if (!nl) {
                        worker_record_done(&r);
                        return refuse(why, why_size, "ends inside line %u (cut short)", lineno);
                }
                *nl = 0;
                next = nl + 1;
                if (streq(line, "end")) {
                        ended = true;
                        break;
                }
                eq = strchr(line, '=');
                if (!eq || eq == line) {
                        worker_record_done(&r);
                        return refuse(why, why_size, "line %u is not key=value", lineno);
                }
                *eq = 0;
                k = record_set(&r, line, eq + 1);
                if (k == -ENOMEM) {
                        worker_record_done(&r);
                        return k;
                }
                if (k < 0) {
                        worker_record_done(&r);
                        return refuse(why, why_size, "line %u: bad value for %s", lineno, line);
                }
        }
        if (!ended || (next && *next)) {
                worker_record_done(&r);
                return refuse(why, why_size, ended ? "has data after its end line" : "has no end line (cut short)");
        }
        if (r.suspended && r.suspending) {
                worker_record_done(&r);
                return refuse(why, why_size, "is both suspended and suspending");
        }
        if (r.suspended && (!r.argv || !r.argv[0])) {
                worker_record_done(&r);
                return refuse(why, why_size, "is a suspended worker without its argv");
        }
        if (!r.id[0] || !r.unit || r.class < 0 || r.requested_class < 0 || r.runtime < 0 || r.owner == (uid_t) -1 ||
            !r.egress_socket != !r.egress_service) {
                worker_record_done(&r);
                return refuse(why, why_size, "lacks a required field (id, unit, class, requested-class, runtime, "
                                             "owner, or one of egress-socket and egress-service)");
        }
        *ret = r;
        return 0;
}

int worker_record_save(const char *dir, const WorkerRecord *r) {
        _cleanup_free_ char *text = NULL;
        _cleanup_close_ int dfd = -1, fd = -1;
        char tmp[WORKER_ID_LEN + 8];
        int k;

        k = worker_record_format(r, &text);
        if (k < 0)
                return k;
        if (mkdir(dir, 0700) < 0 && errno != EEXIST)
                return -errno;
        dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return -errno;
        snprintf(tmp, sizeof(tmp), ".#%s", r->id);
        fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return -errno;
        k = loop_write(fd, text, strlen(text));
        if (k >= 0 && fsync(fd) < 0)
                k = -errno;
        if (k >= 0 && renameat(dfd, tmp, dfd, r->id) < 0)
                k = -errno;
        if (k < 0) {
                (void) unlinkat(dfd, tmp, 0);
                return k;
        }
        /* The rename itself must survive too. */
        (void) fsync(dfd);
        return 0;
}

int worker_record_load(const char *dir, const char *id, WorkerRecord *ret, char *why, size_t why_size) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        _cleanup_close_ int fd = -1;
        struct stat st;
        ssize_t n;
        int k;

        if (!worker_id_is_valid(id))
                return refuse(why, why_size, "has a name that is not a worker ID");
        if (asprintf(&path, "%s/%s", dir, id) < 0)
                return -ENOMEM;
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode) || (uint64_t) st.st_size > WORKER_RECORD_SIZE_MAX)
                return refuse(why, why_size, "is not a regular file of at most %" PRIu64 " bytes",
                              WORKER_RECORD_SIZE_MAX);
        text = malloc((size_t) st.st_size + 1);
        if (!text)
                return -ENOMEM;
        n = read(fd, text, (size_t) st.st_size + 1);
        if (n < 0)
                return -errno;
        k = worker_record_parse(text, (size_t) n, ret, why, why_size);
        if (k < 0)
                return k;
        if (!streq(ret->id, id)) {
                k = refuse(why, why_size, "names worker %s", ret->id);
                worker_record_done(ret);
                return k;
        }
        return 0;
}

int worker_record_remove(const char *dir, const char *id) {
        _cleanup_free_ char *path = NULL;

        if (asprintf(&path, "%s/%s", dir, id) < 0)
                return -ENOMEM;
        if (unlink(path) < 0 && errno != ENOENT)
                return -errno;
        return 0;
}
