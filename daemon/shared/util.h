/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Small shared helpers: cleanup attributes, fd/pointer ownership transfer,
 * errors that can travel to a D-Bus client, and journal logging with
 * structured fields. Nothing here holds global state. */

#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "build-config.h"

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _unused_ __attribute__((unused))
#define _sentinel_ __attribute__((sentinel))

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))
/* No user: an owner not known, a UID not looked up yet. */
#define UID_INVALID ((uid_t) -1)

#define USEC_PER_SEC  UINT64_C(1000000)
#define USEC_PER_MSEC UINT64_C(1000)
#define USEC_INFINITY UINT64_MAX

/* Hand ownership of a pointer or fd to someone else, leaving the local
 * variable empty so its cleanup attribute does nothing. */
#define TAKE_PTR(p) ({ __typeof__(p) _tp = (p); (p) = NULL; _tp; })
#define TAKE_FD(fd) ({ int _tf = (fd); (fd) = -1; _tf; })

static inline void freep(void *p) { free(*(void **) p); }
#define _cleanup_free_ _cleanup_(freep)

static inline int safe_close(int fd) {
        if (fd >= 0) {
                int saved = errno;
                close(fd);
                errno = saved;
        }
        return -1;
}
static inline void closep(int *fd) { safe_close(*fd); }
#define _cleanup_close_ _cleanup_(closep)

static inline void fclosep(FILE **f) { if (*f) fclose(*f); }
static inline void closedirp(DIR **d) { if (*d) closedir(*d); }
#define _cleanup_fclose_ _cleanup_(fclosep)

void strv_free(char **l);
static inline void strv_freep(char ***l) { strv_free(*l); }
#define _cleanup_strv_free_ _cleanup_(strv_freep)
/* For lists of secrets (a worker's environment): each string is erased first. */
void strv_free_erase(char **l);
static inline void strv_free_erasep(char ***l) { strv_free_erase(*l); }
#define _cleanup_strv_free_erase_ _cleanup_(strv_free_erasep)
size_t strv_length(char * const *l);

/* Writes all N bytes of BUF to the blocking FD, retrying on EINTR and short
 * writes; 0 or -errno. */
int loop_write(int fd, const void *buf, size_t n);
char **strv_copy(char * const *l);
/* Appends S itself to the NULL-terminated *L (which then owns it if the
 * caller frees the strings with the list); *L is unchanged on -ENOMEM. */
int strv_push(char ***l, char *s);
/* Appends a copy of S to *L; *L is unchanged on -ENOMEM. */
int strv_extend(char ***l, const char *s);
/* L (NULL: empty) holds a string equal to S. */
bool strv_contains(char * const *l, const char *s);

/* Zero a buffer that held a secret before freeing it. */
void erase_and_free(void *p, size_t n);

static inline bool streq(const char *a, const char *b) { return strcmp(a, b) == 0; }
static inline bool streq_ptr(const char *a, const char *b) {
        return a == b || (a && b && strcmp(a, b) == 0);
}
static inline bool isempty(const char *s) { return !s || !*s; }
bool startswith(const char *s, const char *prefix);

/* An error that can reach a D-Bus client: a name from errors.h and a message
 * that says what to fix. Functions that can fail for a caller's reason fill
 * one in and return a negative errno; the bus layer turns it into a reply. */
typedef struct SbxError {
        const char *name;
        char message[512];
} SbxError;

_printf_(4, 5)
int sbx_error_set(SbxError *e, int errnum, const char *name, const char *fmt, ...);

/* Replaces each byte that is not part of a UTF-8 character sd-bus would
 * send by '?', in place: text cut to a length may end inside a character. */
void utf8_replace_invalid(char *s);

/* Logging: the journal when running under systemd, stderr otherwise. */
_printf_(2, 3)
void log_msg(int priority, const char *fmt, ...);
_sentinel_
void log_struct_internal(int priority, const char *message, ...);
/* For a caller that sends its own journal entries in batches (the egress
 * proxy): prints MESSAGE to stderr where log_struct() would, and says
 * whether the entry is to go to the journal too. */
bool log_struct_echo(const char *message);
/* Datagrams of native-protocol entries on the socket log_struct() uses, in
 * one sendmmsg() (more if the kernel takes fewer); reconnects once if
 * journald restarted. Returns how many went, or a negative errno. */
struct mmsghdr;
int log_journal_sendmmsg(struct mmsghdr *msgs, unsigned n);
/* Also send every message to the journal, tagged SANDBOXD_WORKER_ID when
 * worker_id is set (it must outlive the process's logging). */
void log_copy_to_journal(const char *worker_id);
/* Tag every journal entry SANDBOXD_WORKER_ID=worker_id (it must outlive the
 * process's logging). A helper that logs once and exits needs it: journald
 * reads a datagram's unit from its sender's /proc, and a sender gone by then
 * leaves the entry without _SYSTEMD_UNIT, invisible to journalctl -u. */
void log_tag_worker(const char *worker_id);

#define log_debug(...)   log_msg(LOG_DEBUG, __VA_ARGS__)
#define log_info(...)    log_msg(LOG_INFO, __VA_ARGS__)
#define log_notice(...)  log_msg(LOG_NOTICE, __VA_ARGS__)
#define log_warning(...) log_msg(LOG_WARNING, __VA_ARGS__)
#define log_error(...)   log_msg(LOG_ERR, __VA_ARGS__)

/* log_errno returns the negative errno so call sites can "return log_errno(...)". */
#define log_errno(prio, err, fmt, ...) \
        ({ int _e = (err) < 0 ? -(err) : (err); errno = _e; log_msg(prio, fmt, ##__VA_ARGS__); -_e; })
#define log_error_errno(err, ...)   log_errno(LOG_ERR, err, __VA_ARGS__)
#define log_warning_errno(err, ...) log_errno(LOG_WARNING, err, __VA_ARGS__)

/* One journal entry with structured fields: an already formatted message,
 * then KEY, value string pairs, then NULL. Example:
 *   log_struct(LOG_INFO, msg, "SANDBOXD_WORKER_ID", id, "SANDBOXD_UNIT", unit, NULL); */
#define log_struct(prio, message, ...) log_struct_internal(prio, message, __VA_ARGS__)

uint64_t now_usec(int clock_id);
int random_hex_id(char *buf, size_t n_hex);

/* stat(2) and statvfs(2) of PATH or, where it does not exist yet, of its
 * nearest existing ancestor: the file system a directory will be made on,
 * which is what its free space and device are. -errno for other errors. */
int stat_nearest(const char *path, struct stat *ret);
int statvfs_nearest(const char *path, struct statvfs *ret);
int fd_nonblock(int fd, bool nonblock);
/* Reads SIZE bytes of FD into BUF, or as many as there are before end of
 * file: the count read (short only at end of file), or -errno. */
ssize_t read_full(int fd, void *buf, size_t size);
