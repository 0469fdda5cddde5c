/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <sys/random.h>
#include <sys/uio.h>
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

void log_struct_internal(int priority, const char *message, ...) {
        struct iovec iov[34];
        char *fields[34];
        size_t n = 0;
        va_list ap;
        int saved = errno;

        if (log_to_stderr())
                fprintf(stderr, "%s\n", message);
        if (!log_to_journal()) {
                errno = saved;
                return;
        }
        if (asprintf(&fields[n], "MESSAGE=%s", message) >= 0)
                n++;
        if (asprintf(&fields[n], "PRIORITY=%i", priority) >= 0)
                n++;
        if (log_copy.worker_id && asprintf(&fields[n], "SANDBOXD_WORKER_ID=%s", log_copy.worker_id) >= 0)
                n++;
        /* The rest are KEY, value string pairs; a NULL key ends the list. */
        va_start(ap, message);
        for (const char *key = va_arg(ap, const char *); key && n < ELEMENTSOF(fields);
             key = va_arg(ap, const char *)) {
                const char *value = va_arg(ap, const char *);
                if (asprintf(&fields[n], "%s=%s", key, value ?: "") >= 0)
                        n++;
        }
        va_end(ap);
        for (size_t i = 0; i < n; i++)
                iov[i] = (struct iovec) { .iov_base = fields[i], .iov_len = strlen(fields[i]) };
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

int fd_nonblock(int fd, bool nonblock) {
        int flags = fcntl(fd, F_GETFL);
        if (flags < 0)
                return -errno;
        flags = nonblock ? (flags | O_NONBLOCK) : (flags & ~O_NONBLOCK);
        return fcntl(fd, F_SETFL, flags) < 0 ? -errno : 0;
}

