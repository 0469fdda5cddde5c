/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>

/* Without this every entry would carry CODE_FILE=util.c, CODE_LINE and
 * CODE_FUNC=log_struct_internal: the same three fields for every caller,
 * which tell nothing and cost journald three more fields per entry (the
 * egress proxy writes two entries per tunnel). */
#define SD_JOURNAL_SUPPRESS_LOCATION
#include <systemd/sd-journal.h>

#include "util.h"

void strv_free(char **l) {
        if (!l)
                return;
        for (char **i = l; *i; i++)
                free(*i);
        free(l);
}

void strv_free_erase(char **l) {
        if (!l)
                return;
        for (char **i = l; *i; i++)
                erase_and_free(*i, strlen(*i));
        free(l);
}

size_t strv_length(char * const *l) {
        size_t n = 0;
        while (l && l[n])
                n++;
        return n;
}

int strv_push(char ***l, char *s) {
        size_t n = strv_length(*l);
        char **nl = reallocarray(*l, n + 2, sizeof(char *));

        if (!nl)
                return -ENOMEM;
        nl[n] = s;
        nl[n + 1] = NULL;
        *l = nl;
        return 0;
}

int strv_extend(char ***l, const char *s) {
        char *copy = strdup(s);
        int r;

        if (!copy)
                return -ENOMEM;
        r = strv_push(l, copy);
        if (r < 0)
                free(copy);
        return r;
}

bool strv_contains(char * const *l, const char *s) {
        for (; l && *l; l++)
                if (streq(*l, s))
                        return true;
        return false;
}

char **strv_copy(char * const *l) {
        size_t n = strv_length(l);
        char **r = calloc(n + 1, sizeof(char *));
        if (!r)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                r[i] = strdup(l[i]);
                if (!r[i]) {
                        strv_free(r);
                        return NULL;
                }
        }
        return r;
}

void erase_and_free(void *p, size_t n) {
        if (!p)
                return;
        explicit_bzero(p, n);
        free(p);
}

bool startswith(const char *s, const char *prefix) {
        return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Bytes of the UTF-8 character at s if sd-bus would send it (shortest form,
 * no surrogate, no noncharacter, at most U+10FFFF), else 0. */
static size_t utf8_char_len(const unsigned char *s) {
        size_t n;
        uint32_t c;

        if (s[0] < 0x80)
                return 1;
        if ((s[0] & 0xe0) == 0xc0)
                n = 2, c = s[0] & 0x1f;
        else if ((s[0] & 0xf0) == 0xe0)
                n = 3, c = s[0] & 0x0f;
        else if ((s[0] & 0xf8) == 0xf0)
                n = 4, c = s[0] & 0x07;
        else
                return 0;
        for (size_t i = 1; i < n; i++) {
                if ((s[i] & 0xc0) != 0x80)
                        return 0;   /* also stops at the terminating NUL */
                c = (c << 6) | (s[i] & 0x3f);
        }
        if ((n == 2 && c < 0x80) || (n == 3 && c < 0x800) || (n == 4 && c < 0x10000) || c > 0x10ffff ||
            (c >= 0xd800 && c <= 0xdfff) || (c >= 0xfdd0 && c <= 0xfdef) || (c & 0xfffe) == 0xfffe)
                return 0;
        return n;
}

void utf8_replace_invalid(char *s) {
        while (*s) {
                size_t n = utf8_char_len((const unsigned char *) s);
                if (n == 0)
                        *s++ = '?';
                else
                        s += n;
        }
}

int sbx_error_set(SbxError *e, int errnum, const char *name, const char *fmt, ...) {
        if (e) {
                va_list ap;
                e->name = name;
                va_start(ap, fmt);
                vsnprintf(e->message, sizeof(e->message), fmt, ap);
                va_end(ap);
                /* Messages quote the client's text cut to a bound ("%.64s", this
                 * buffer); a cut inside a character would make the reply unsendable,
                 * and the client would get no answer at all. */
                utf8_replace_invalid(e->message);
        }
        return errnum < 0 ? errnum : -errnum;
}

/* Under systemd, stderr is connected to the journal and JOURNAL_STREAM says
 * so; then the structured journal API is the only sink, to avoid printing
 * everything twice. Elsewhere (tests, a shell) messages go to stderr. */
static bool log_to_stderr(void) {
        return !getenv("JOURNAL_STREAM") || getenv("SANDBOXD_LOG_STDERR");
}

/* A program whose stderr is somebody else's pipe (the launcher's is the
 * worker's client) can ask for a copy of each message in the journal, where
 * an operator looks. Process-wide, like stderr itself; set once in main(). */
static struct {
        bool journal_too;
        const char *worker_id;
} log_copy;

void log_copy_to_journal(const char *worker_id) {
        log_copy.journal_too = true;
        log_copy.worker_id = worker_id;
}

void log_tag_worker(const char *worker_id) {
        log_copy.worker_id = worker_id;
}

static bool log_to_journal(void) {
        return !log_to_stderr() || log_copy.journal_too;
}

void log_msg(int priority, const char *fmt, ...) {
        char buf[2048];
        va_list ap;
        int saved = errno;

        va_start(ap, fmt);
        vsnprintf(buf, sizeof(buf), fmt, ap);
        va_end(ap);
        if (log_to_stderr())
                fprintf(stderr, "%s\n", buf);
        if (log_to_journal()) {
                if (log_copy.worker_id)
                        sd_journal_send("MESSAGE=%s", buf, "PRIORITY=%i", priority, "SANDBOXD_WORKER_ID=%s",
                                        log_copy.worker_id, NULL);
                else
                        sd_journal_send("MESSAGE=%s", buf, "PRIORITY=%i", priority, NULL);
        }
        errno = saved;
}

/* One datagram per entry on a socket connected once: sd_journal_sendv()
 * names the socket's path in every sendmsg(), so the kernel resolves it for
 * each entry, and it needs each field as one string, an asprintf() each.
 * The egress proxy writes two entries per tunnel. Process-wide, like stderr. */
#define JOURNAL_SOCKET "/run/systemd/journal/socket"
static int journal_fd = -1;
/* The egress proxy's loops log from several threads: one connects, one
 * reconnects after journald restarted, none closes the fd another sends on. */
static pthread_mutex_t journal_lock = PTHREAD_MUTEX_INITIALIZER;

static int journal_connect(void) {
        union {
                struct sockaddr sa;
                struct sockaddr_un un;
        } a = { .un = { .sun_family = AF_UNIX } };
        /* $SANDBOXD_JOURNAL_SOCKET: for tests, which have no journald to read
         * back from; every program of ours runs with a fixed environment. */
        const char *path = getenv("SANDBOXD_JOURNAL_SOCKET") ?: JOURNAL_SOCKET;
        int fd;

        if (strlen(path) >= sizeof(a.un.sun_path))
                return -ENAMETOOLONG;
        memcpy(a.un.sun_path, path, strlen(path) + 1);
        fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        /* As libsystemd does: room for a burst of entries before sendmsg() blocks. */
        (void) setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &(int) { 8 << 20 }, sizeof(int));
        if (connect(fd, &a.sa, (socklen_t) (offsetof(struct sockaddr_un, sun_path) + strlen(path) + 1)) < 0) {
                int r = -errno;
                safe_close(fd);
                return r;
        }
        return fd;
}

/* The native protocol's KEY=value lines, sent as they are. False when the
 * entry did not go: the caller then hands it to sd_journal_sendv(), which
 * also covers what this does not (a value with a newline, an entry too big
 * for one datagram). */
static bool journal_send_connected_locked(const struct iovec *iov, size_t n) {
        for (int attempt = 0; attempt < 2; attempt++) {
                if (journal_fd < 0)
                        journal_fd = journal_connect();
                if (journal_fd < 0)
                        return false;
                struct msghdr mh = { .msg_iov = (struct iovec *) iov, .msg_iovlen = n };
                if (sendmsg(journal_fd, &mh, MSG_NOSIGNAL) >= 0)
                        return true;
                if (errno != ECONNREFUSED && errno != ENOTCONN && errno != ECONNRESET && errno != EPIPE)
                        return false;
                /* journald restarted: its socket is a new one. */
                journal_fd = safe_close(journal_fd);
        }
        return false;
}

static bool journal_send_connected(const struct iovec *iov, size_t n) {
        pthread_mutex_lock(&journal_lock);
        bool sent = journal_send_connected_locked(iov, n);
        pthread_mutex_unlock(&journal_lock);
        return sent;
}

bool log_struct_echo(const char *message) {
        if (log_to_stderr())
                fprintf(stderr, "%s\n", message);
        return log_to_journal();
}

static int journal_sendmmsg_locked(struct mmsghdr *msgs, unsigned n) {
        unsigned done = 0;

        for (int attempt = 0; attempt < 2 && done < n; attempt++) {
                if (journal_fd < 0)
                        journal_fd = journal_connect();
                if (journal_fd < 0)
                        return journal_fd;
                while (done < n) {
                        int k = sendmmsg(journal_fd, msgs + done, n - done, MSG_NOSIGNAL);
                        if (k < 0 && errno == EINTR)
                                continue;
                        if (k <= 0)
                                break;
                        done += (unsigned) k;
                }
                if (done == n)
                        break;
                if (errno != ECONNREFUSED && errno != ENOTCONN && errno != ECONNRESET && errno != EPIPE)
                        return done > 0 ? (int) done : -errno;
                journal_fd = safe_close(journal_fd);   /* journald restarted */
        }
        return (int) done;
}

int log_journal_sendmmsg(struct mmsghdr *msgs, unsigned n) {
        pthread_mutex_lock(&journal_lock);
        int r = journal_sendmmsg_locked(msgs, n);
        pthread_mutex_unlock(&journal_lock);
        return r;
}

#define LOG_STRUCT_FIELDS_MAX 32

static struct iovec iov_str(const char *s) {
        return (struct iovec) { .iov_base = (char *) s, .iov_len = strlen(s) };
}

void log_struct_internal(int priority, const char *message, ...) {
        const char *keys[LOG_STRUCT_FIELDS_MAX], *values[LOG_STRUCT_FIELDS_MAX];
        struct iovec iov[4 * LOG_STRUCT_FIELDS_MAX + 3 * 4];   /* KEY = value \n each, and the fixed fields */
        char *fields[LOG_STRUCT_FIELDS_MAX + 3];
        char prio[16];
        size_t n_keys = 0, n = 0;
        bool newline;
        va_list ap;
        int saved = errno;

        if (log_to_stderr())
                fprintf(stderr, "%s\n", message);
        if (!log_to_journal()) {
                errno = saved;
                return;
        }
        /* The rest are KEY, value string pairs; a NULL key ends the list. */
        va_start(ap, message);
        for (const char *key = va_arg(ap, const char *); key && n_keys < LOG_STRUCT_FIELDS_MAX;
             key = va_arg(ap, const char *)) {
                const char *value = va_arg(ap, const char *);
                keys[n_keys] = key;
                values[n_keys++] = value ?: "";
        }
        va_end(ap);
        snprintf(prio, sizeof(prio), "%i", priority);

        newline = strchr(message, '\n') || (log_copy.worker_id && strchr(log_copy.worker_id, '\n'));
        for (size_t i = 0; i < n_keys && !newline; i++)
                newline = strchr(values[i], '\n');
        if (!newline) {
                const char *fixed[][2] = {
                        { "MESSAGE=", message },
                        { "PRIORITY=", prio },
                        { "SYSLOG_IDENTIFIER=", program_invocation_short_name },
                        { "SANDBOXD_WORKER_ID=", log_copy.worker_id },
                };
                for (size_t i = 0; i < ELEMENTSOF(fixed); i++)
                        if (fixed[i][1]) {
                                iov[n++] = iov_str(fixed[i][0]);
                                iov[n++] = iov_str(fixed[i][1]);
                                iov[n++] = iov_str("\n");
                        }
                for (size_t i = 0; i < n_keys; i++) {
                        iov[n++] = iov_str(keys[i]);
                        iov[n++] = iov_str("=");
                        iov[n++] = iov_str(values[i]);
                        iov[n++] = iov_str("\n");
                }
                if (journal_send_connected(iov, n)) {
                        errno = saved;
                        return;
                }
                n = 0;
        }

        if (asprintf(&fields[n], "MESSAGE=%s", message) >= 0)
                n++;
        if (asprintf(&fields[n], "PRIORITY=%s", prio) >= 0)
                n++;
        if (log_copy.worker_id && asprintf(&fields[n], "SANDBOXD_WORKER_ID=%s", log_copy.worker_id) >= 0)
                n++;
        for (size_t i = 0; i < n_keys; i++)
                if (asprintf(&fields[n], "%s=%s", keys[i], values[i]) >= 0)
                        n++;
        for (size_t i = 0; i < n; i++)
                iov[i] = iov_str(fields[i]);
        sd_journal_sendv(iov, (int) n);
        for (size_t i = 0; i < n; i++)
                free(fields[i]);
        errno = saved;
}

uint64_t now_usec(int clock_id) {
        struct timespec ts;
        clock_gettime(clock_id, &ts);
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / 1000;
}

int random_hex_id(char *buf, size_t n_hex) {
        static const char hex[] = "0123456789abcdef";
        uint8_t raw[32];
        size_t n_bytes = (n_hex + 1) / 2;

        if (n_bytes > sizeof(raw))
                return -EINVAL;
        if (getrandom(raw, n_bytes, 0) != (ssize_t) n_bytes)
                return -errno ?: -EIO;
        for (size_t i = 0; i < n_hex; i++)
                buf[i] = hex[(raw[i / 2] >> ((i % 2) ? 0 : 4)) & 0xf];
        buf[n_hex] = 0;
        return 0;
}

ssize_t read_full(int fd, void *buf, size_t size) {
        size_t done = 0;

        while (done < size) {
                ssize_t k = read(fd, (uint8_t *) buf + done, size - done);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                if (k == 0)
                        break;
                done += (size_t) k;
        }
        return (ssize_t) done;
}

int fd_nonblock(int fd, bool nonblock) {
        int flags = fcntl(fd, F_GETFL);
        if (flags < 0)
                return -errno;
        flags = nonblock ? (flags | O_NONBLOCK) : (flags & ~O_NONBLOCK);
        return fcntl(fd, F_SETFL, flags) < 0 ? -errno : 0;
}


/* Calls F on PATH, then on each parent while F fails with ENOENT. */
static int call_nearest(const char *path, int (*f)(const char *, void *), void *ret) {
        _cleanup_free_ char *p = strdup(path);
        char *slash;

        if (!p)
                return -ENOMEM;
        for (;;) {
                if (f(p, ret) == 0)
                        return 0;
                if (errno != ENOENT)
                        return -errno;
                slash = strrchr(p, '/');
                if (!slash)
                        return -ENOENT;
                if (slash == p) {
                        if (p[1] == '\0')
                                return -ENOENT;
                        p[1] = '\0';
                } else
                        *slash = '\0';
        }
}

static int stat_into(const char *path, void *ret) {
        return stat(path, ret);
}

static int statvfs_into(const char *path, void *ret) {
        return statvfs(path, ret);
}

int stat_nearest(const char *path, struct stat *ret) {
        return call_nearest(path, stat_into, ret);
}

int statvfs_nearest(const char *path, struct statvfs *ret) {
        return call_nearest(path, statvfs_into, ret);
}

int loop_write(int fd, const void *buf, size_t n) {
        const uint8_t *p = buf;

        while (n > 0) {
                ssize_t k = write(fd, p, n);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                p += k;
                n -= (size_t) k;
        }
        return 0;
}
