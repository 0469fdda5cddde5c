/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* sandbox-files: one file operation inside a worker's home, run as the
 * worker (inside its walls; `runsc exec` for gVisor workers), so the
 * kernel's permission checks are the worker's own and the files are the
 * ones the workload sees. sandboxd starts it for the Worker's file methods
 * (daemon/files/README.md); the data of a read or write flows between the
 * client's pipe and this process, never through sandboxd. Its status goes to
 * stderr as file-frame.h says, entries of list and stat to stdout. */
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>

#include "fd-copy.h"
#include "file-frame.h"
#include "files-resolve.h"
#include "rmrf.h"
#include "util.h"

static const char usage[] =
        "Usage: sandbox-files --root=HOME [--alias=PATH] [--resolve=auto|openat2|walk] VERB ARGS...\n"
        "  read PATH                          the file to stdout\n"
        "  write PATH [--how=write|create|append] [--perm=MODE]\n"
        "                                     stdin to the file (truncated, new only, appended)\n"
        "  replace PATH [--perm=MODE]         stdin to a temporary file beside PATH; commit renames it\n"
        "  commit TEMP PATH | abort TEMP PATH\n"
        "  list PATH [--max-entries=N] | stat PATH\n"
        "  mkdir PATH [--perm=MODE] [--parents] | remove PATH [--recursive] | rename FROM TO\n";

#define EXIT_USAGE 2

/* Prints the one status line of a failure (the message on one line: a
 * path may hold any byte) and returns the exit status. */
static int fail(int err, const char *path, const char *fmt, ...) _printf_(3, 4);
static int fail(int err, const char *path, const char *fmt, ...) {
        char text[SBX_FILES_STATUS_MAX / 2], where[SBX_FILES_STATUS_MAX / 4];
        va_list ap;

        va_start(ap, fmt);
        if (fmt)
                vsnprintf(text, sizeof(text), fmt, ap);
        else if (err == ELOOP)
                snprintf(text, sizeof(text), "a symlink is never followed");
        else if (err == EXDEV)
                snprintf(text, sizeof(text), "the path leaves the home");
        else if (err == ENXIO)
                snprintf(text, sizeof(text), "not a regular file or directory");
        else
                snprintf(text, sizeof(text), "%s", strerror(err));
        va_end(ap);
        snprintf(where, sizeof(where), "%s", path ?: "");
        for (char *c = where; *c; c++)
                if ((unsigned char) *c < 0x20 || *c == 0x7f)
                        *c = '?';
        fprintf(stderr, SBX_FILES_STATUS_PREFIX "error %s: %s%s%s\n", file_error_from_errno(err), where,
                *where ? ": " : "", text);
        return EXIT_FAILURE;
}

static void status_open(uint64_t size, const char *temp) {
        fprintf(stderr, SBX_FILES_STATUS_PREFIX "open %" PRIu64 "%s%s\n", size, temp ? " " : "", temp ?: "");
        fflush(stderr);
}

static int status_done(uint64_t n) {
        fprintf(stderr, SBX_FILES_STATUS_PREFIX "done %" PRIu64 "\n", n);
        return EXIT_SUCCESS;
}

/* Opens the last component without following a symlink and without
 * blocking on a FIFO; anything but a regular file or directory is -ENXIO
 * (a FIFO, socket or device node a worker planted at the path). */
static int open_final(int dirfd, const char *name, int flags, mode_t perm, struct stat *st) {
        _cleanup_close_ int fd = openat(dirfd, name, flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, perm);
        if (fd < 0) {
                int err = errno;
                struct stat lst;
                /* Which refusal it was: the kernel says ELOOP for a symlink
                 * (EMLINK on some), ENXIO for a FIFO without reader or a
                 * socket, EISDIR for a directory opened to write. */
                if (fstatat(dirfd, name, &lst, AT_SYMLINK_NOFOLLOW) == 0) {
                        if (S_ISLNK(lst.st_mode))
                                return -ELOOP;
                        if (!S_ISREG(lst.st_mode) && !S_ISDIR(lst.st_mode))
                                return -ENXIO;
                }
                return -err;
        }
        if (fstat(fd, st) < 0)
                return -errno;
        if (!S_ISREG(st->st_mode) && !S_ISDIR(st->st_mode))
                return -ENXIO;
        if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0)
                return -errno;
        return TAKE_FD(fd);
}

static int verb_read(FilesRoot *root, char *rel, const char *path) {
        _cleanup_close_ int dirfd = -1, fd = -1;
        const char *name;
        struct stat st;
        uint64_t n;
        int r;

        r = files_resolve_parent(root, rel, &dirfd, &name);
        if (r < 0)
                return fail(-r, path, NULL);
        if (!name)
                return fail(EISDIR, path, NULL);
        fd = open_final(dirfd, name, O_RDONLY, 0, &st);
        if (fd < 0)
                return fail(-fd, path, NULL);
        if (S_ISDIR(st.st_mode))
                return fail(EISDIR, path, NULL);
        status_open((uint64_t) st.st_size, NULL);
        r = fd_copy_all(fd, STDOUT_FILENO, &n);
        if (r < 0)
                return fail(-r, path, r == -EPIPE ? "the reader closed its end after %" PRIu64 " bytes" : NULL, n);
        return status_done(n);
}

/* An explicit --perm is the mode itself, not one the umask cut. */
static int apply_perm(int fd, const struct stat *st, long perm) {
        if (perm < 0 || st->st_uid != geteuid())
                return 0;
        return fchmod(fd, (mode_t) perm) < 0 ? -errno : 0;
}

/* stdin into FD; a file system that is full is DiskFull (file-frame.c). */
static int fill(int fd, const char *path, bool sync) {
        uint64_t n;
        int r = sync ? fd_copy_all_durable(STDIN_FILENO, fd, &n) : fd_copy_all(STDIN_FILENO, fd, &n);
        if (r == 0 && sync && fsync(fd) < 0)
                r = -errno;
        if (r < 0)
                return fail(-r, path, -r == ENOSPC || -r == EDQUOT || -r == EFBIG ?
                            "the worker's disk cap is reached after %" PRIu64 " bytes" : NULL, n);
        return status_done(n);
}

static int verb_write(FilesRoot *root, char *rel, const char *path, const char *how, long perm) {
        _cleanup_close_ int dirfd = -1, fd = -1;
        const char *name;
        struct stat st;
        int flags = O_WRONLY | O_CREAT, r;

        if (streq(how, "create"))
                flags |= O_EXCL;
        else if (streq(how, "append"))
                flags |= O_APPEND;
        else if (!streq(how, "write"))
                return fail(EINVAL, NULL, "unknown --how=%s", how);
        r = files_resolve_parent(root, rel, &dirfd, &name);
        if (r < 0)
                return fail(-r, path, NULL);
        if (!name)
                return fail(EISDIR, path, NULL);
        fd = open_final(dirfd, name, flags, perm >= 0 ? (mode_t) perm : 0666, &st);
        if (fd < 0)
                return fail(-fd, path, NULL);
        if (S_ISDIR(st.st_mode))
                return fail(EISDIR, path, NULL);
        /* Truncated only now: nothing was cut before the checks passed. */
        if (streq(how, "write") && ftruncate(fd, 0) < 0)
                return fail(errno, path, NULL);
        r = apply_perm(fd, &st, perm);
        if (r < 0)
                return fail(-r, path, NULL);
        status_open(streq(how, "append") ? (uint64_t) st.st_size : 0, NULL);
        return fill(fd, path, false);
}

/* A replace's temporary file is ".NAME.sbx-XXXXXXXX" beside the target, so
 * the rename that commits it stays within one directory (and file system). */
static bool is_temp_name(const char *s) {
        const char *tag = strstr(s, ".sbx-");
        return s[0] == '.' && !strchr(s, '/') && tag && strlen(tag) == 5 + 16 && !strchr(tag + 1, '.');
}

static int verb_replace(FilesRoot *root, char *rel, const char *path, long perm) {
        _cleanup_close_ int dirfd = -1, fd = -1;
        char temp[NAME_MAX + 1], rnd[17];
        const char *name;
        struct stat st, target;
        mode_t mode = perm >= 0 ? (mode_t) perm : 0666;
        int r;

        r = files_resolve_parent(root, rel, &dirfd, &name);
        if (r < 0)
                return fail(-r, path, NULL);
        if (!name)
                return fail(EISDIR, path, NULL);
        if (fstatat(dirfd, name, &target, AT_SYMLINK_NOFOLLOW) == 0) {
                if (S_ISDIR(target.st_mode))
                        return fail(EISDIR, path, NULL);
                if (S_ISLNK(target.st_mode))
                        return fail(ELOOP, path, NULL);
                if (!S_ISREG(target.st_mode))
                        return fail(ENXIO, path, NULL);
                /* A replace keeps the mode of what it replaces. */
                if (perm < 0)
                        perm = target.st_mode & 07777;
        } else if (errno != ENOENT)
                return fail(errno, path, NULL);
        r = random_hex_id(rnd, 16);
        if (r < 0)
                return fail(-r, path, NULL);
        snprintf(temp, sizeof(temp), ".%.*s.sbx-%s", NAME_MAX - 6 - 16 - 1, name, rnd);
        fd = open_final(dirfd, temp, O_WRONLY | O_CREAT | O_EXCL, mode, &st);
        if (fd < 0)
                return fail(-fd, path, NULL);
        r = apply_perm(fd, &st, perm);
        if (r >= 0) {
                status_open(0, temp);
                r = fill(fd, path, true);
        } else
                r = fail(-r, path, NULL);
        if (r != EXIT_SUCCESS)
                (void) unlinkat(dirfd, temp, 0);
        return r;
}

static int verb_commit(FilesRoot *root, const char *temp, char *rel, const char *path, bool commit) {
        _cleanup_close_ int dirfd = -1;
        const char *name;
        struct stat st;
        int r;

        if (!is_temp_name(temp))
                return fail(EINVAL, temp, "not a temporary file of a replace");
        r = files_resolve_parent(root, rel, &dirfd, &name);
        if (r < 0)
                return fail(-r, path, NULL);
        if (!name)
                return fail(EISDIR, path, NULL);
        if (fstatat(dirfd, temp, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return fail(errno, path, errno == ENOENT ? "the temporary file is gone" : NULL);
        if (!S_ISREG(st.st_mode))
                return fail(ENXIO, path, NULL);
        if (!commit)
                return unlinkat(dirfd, temp, 0) < 0 ? fail(errno, path, NULL) : status_done(0);
        /* rename(2) replaces a file, never follows a symlink at the target,
         * and fails on a directory there (EISDIR). */
        if (renameat(dirfd, temp, dirfd, name) < 0)
                return fail(errno, path, NULL);
        return status_done((uint64_t) st.st_size);
}

static int open_dir(FilesRoot *root, char *rel, const char *path, int *ret) {
        _cleanup_close_ int dirfd = -1;
        const char *name;
        struct stat st;
        int r;

        r = files_resolve_parent(root, rel, &dirfd, &name);
        if (r < 0)
                return fail(-r, path, NULL);
        int fd = open_final(dirfd, name ?: ".", O_RDONLY | O_DIRECTORY, 0, &st);
        if (fd < 0)
                return fail(-fd, path, NULL);
        *ret = fd;
        return EXIT_SUCCESS;
}

static int verb_list(FilesRoot *root, char *rel, const char *path, unsigned long max_entries) {
        _cleanup_(closedirp) DIR *d = NULL;
        int fd = -1, r;
        uint64_t n = 0;

        r = open_dir(root, rel, path, &fd);
        if (r != EXIT_SUCCESS)
                return r;
        d = fdopendir(fd);
        if (!d) {
                safe_close(fd);
                return fail(errno, path, NULL);
        }
        for (struct dirent *de; (errno = 0, de = readdir(d)); ) {
                FileEntry e;
                struct stat st;
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                        if (errno == ENOENT)    /* removed while we listed */
                                continue;
                        return fail(errno, path, NULL);
                }
                if (++n > max_entries)
                        return fail(E2BIG, path, "more than %lu entries", max_entries);
                file_entry_from_stat(&e, de->d_name, &st);
                if (file_entry_write(stdout, &e) < 0)
                        return fail(EIO, path, NULL);
        }
        if (errno != 0)
                return fail(errno, path, NULL);
        if (fflush(stdout) == EOF)
                return fail(errno, path, NULL);
        return status_done(n);
}

static int verb_stat(FilesRoot *root, char *rel, const char *path) {
        _cleanup_close_ int dirfd = -1;
        const char *name;
        struct stat st;
        FileEntry e;
        int r;

        r = files_resolve_parent(root, rel, &dirfd, &name);
        if (r < 0)
                return fail(-r, path, NULL);
        /* The entry itself: a symlink is reported, not followed. */
        if (fstatat(dirfd, name ?: "", &st, name ? AT_SYMLINK_NOFOLLOW : AT_EMPTY_PATH) < 0)
                return fail(errno, path, NULL);
        file_entry_from_stat(&e, name ?: ".", &st);
        if (file_entry_write(stdout, &e) < 0 || fflush(stdout) == EOF)
                return fail(EIO, path, NULL);
        return status_done(1);
}

static int verb_mkdir(FilesRoot *root, char *rel, const char *path, long perm, bool parents) {
        mode_t mode = perm >= 0 ? (mode_t) perm : 0777;
        _cleanup_close_ int dirfd = -1;
        const char *name;
        int r;

        if (!*rel)
                return parents ? status_done(0) : fail(EEXIST, path, NULL);
        if (parents) {
                /* One component at a time, each made if missing and then
                 * entered without following a symlink. */
                dirfd = fcntl(root->fd, F_DUPFD_CLOEXEC, 3);
                if (dirfd < 0)
                        return fail(errno, path, NULL);
                for (char *p = rel, *slash; p && *p; p = slash ? slash + 1 : NULL) {
                        slash = strchr(p, '/');
                        if (slash)
                                *slash = 0;
                        if (mkdirat(dirfd, p, mode) < 0 && errno != EEXIST)
                                return fail(errno, path, NULL);
                        struct stat st;
                        int next = open_final(dirfd, p, O_RDONLY | O_DIRECTORY, 0, &st);
                        if (next < 0)
                                return fail(-next, path, NULL);
                        safe_close(dirfd);
                        dirfd = next;
                }
                return status_done(0);
        }
        r = files_resolve_parent(root, rel, &dirfd, &name);
        if (r < 0)
                return fail(-r, path, NULL);
        if (mkdirat(dirfd, name, mode) < 0)
                return fail(errno, path, NULL);
        return status_done(0);
}

static int verb_remove(FilesRoot *root, char *rel, const char *path, bool recursive) {
        _cleanup_close_ int dirfd = -1;
        const char *name;
        struct stat st;
        int r;

        if (!*rel)
                return fail(EINVAL, path, "the home itself cannot be removed");
        r = files_resolve_parent(root, rel, &dirfd, &name);
        if (r < 0)
                return fail(-r, path, NULL);
        if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return fail(errno, path, NULL);
        if (!S_ISDIR(st.st_mode))
                r = unlinkat(dirfd, name, 0) < 0 ? -errno : 0;
        else if (recursive)
                r = rm_rf_at_fd(dirfd, name);
        else
                r = unlinkat(dirfd, name, AT_REMOVEDIR) < 0 ? -errno : 0;
        if (r < 0)
                return fail(-r, path, NULL);
        return status_done(0);
}

static int verb_rename(FilesRoot *root, char *from_rel, const char *from, char *to_rel, const char *to) {
        _cleanup_close_ int from_dir = -1, to_dir = -1;
        const char *from_name, *to_name;
        int r;

        if (!*from_rel || !*to_rel)
                return fail(EINVAL, !*from_rel ? from : to, "the home itself cannot be renamed");
        r = files_resolve_parent(root, from_rel, &from_dir, &from_name);
        if (r < 0)
                return fail(-r, from, NULL);
        r = files_resolve_parent(root, to_rel, &to_dir, &to_name);
        if (r < 0)
                return fail(-r, to, NULL);
        if (renameat(from_dir, from_name, to_dir, to_name) < 0)
                return fail(errno, from, NULL);
        return status_done(0);
}

static int parse_perm(const char *s, long *ret) {
        char *end;
        errno = 0;
        long v = strtol(s, &end, 8);
        if (errno != 0 || end == s || *end || v < 0 || v > 07777)
                return -EINVAL;
        *ret = v;
        return 0;
}

static int relative(const FilesRoot *root, const char *path, char **ret) {
        int r = files_path_relative(root->path, root->alias, path, ret);
        return r < 0 ? fail(-r, path, NULL) : EXIT_SUCCESS;
}

int main(int argc, char *argv[]) {
        enum { ARG_ROOT = 0x100, ARG_ALIAS, ARG_RESOLVE, ARG_HOW, ARG_PERM, ARG_PARENTS, ARG_RECURSIVE, ARG_MAX_ENTRIES };
        static const struct option options[] = {
                { "root", required_argument, NULL, ARG_ROOT },
                { "alias", required_argument, NULL, ARG_ALIAS },
                { "resolve", required_argument, NULL, ARG_RESOLVE },
                { "how", required_argument, NULL, ARG_HOW },
                { "perm", required_argument, NULL, ARG_PERM },
                { "parents", no_argument, NULL, ARG_PARENTS },
                { "recursive", no_argument, NULL, ARG_RECURSIVE },
                { "max-entries", required_argument, NULL, ARG_MAX_ENTRIES },
                {}
        };
        _cleanup_free_ char *rel = NULL, *rel2 = NULL;
        FilesRoot root = { .fd = -1, .how = RESOLVE_HOW_AUTO };
        const char *how = "write";
        unsigned long max_entries = SBX_FILES_LIST_MAX;
        bool parents = false, recursive = false;
        long perm = -1;
        int c, r;

        /* A reader that went away is an EPIPE to report, not a signal. */
        signal(SIGPIPE, SIG_IGN);
        /* A file size limit is EFBIG (DiskFull), not a signal that kills us. */
        signal(SIGXFSZ, SIG_IGN);
        while ((c = getopt_long(argc, argv, "", options, NULL)) >= 0) {
                switch (c) {
                case ARG_ROOT:
                        root.path = optarg;
                        break;
                case ARG_ALIAS:
                        root.alias = optarg;
                        break;
                case ARG_RESOLVE:
                        if (streq(optarg, "auto"))
                                root.how = RESOLVE_HOW_AUTO;
                        else if (streq(optarg, "openat2"))
                                root.how = RESOLVE_HOW_OPENAT2;
                        else if (streq(optarg, "walk"))
                                root.how = RESOLVE_HOW_WALK;
                        else
                                goto bad;
                        break;
                case ARG_HOW:
                        how = optarg;
                        break;
                case ARG_PERM:
                        if (parse_perm(optarg, &perm) < 0)
                                goto bad;
                        break;
                case ARG_PARENTS:
                        parents = true;
                        break;
                case ARG_RECURSIVE:
                        recursive = true;
                        break;
                case ARG_MAX_ENTRIES:
                        max_entries = strtoul(optarg, NULL, 10);
                        if (max_entries == 0 || max_entries > SBX_FILES_LIST_MAX)
                                goto bad;
                        break;
                default:
                        goto bad;
                }
        }
        if (!root.path || root.path[0] != '/' || (root.alias && root.alias[0] != '/') || optind >= argc)
                goto bad;
        const char *verb = argv[optind], *a1 = argv[optind + 1], *a2 = a1 ? argv[optind + 2] : NULL;
        int nargs = argc - optind - 1;
        bool two = streq(verb, "commit") || streq(verb, "abort") || streq(verb, "rename");
        if (nargs != (two ? 2 : 1))
                goto bad;
        root.fd = open(root.path, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (root.fd < 0)
                return fail(errno, root.path, "cannot open the home: %s", strerror(errno));
        /* Where a verb has two paths, the one relative path is its last. */
        r = relative(&root, two ? a2 : a1, &rel);
        if (r != EXIT_SUCCESS)
                return r;
        if (streq(verb, "read"))
                return verb_read(&root, rel, a1);
        if (streq(verb, "write"))
                return verb_write(&root, rel, a1, how, perm);
        if (streq(verb, "replace"))
                return verb_replace(&root, rel, a1, perm);
        if (streq(verb, "commit") || streq(verb, "abort"))
                return verb_commit(&root, a1, rel, a2, streq(verb, "commit"));
        if (streq(verb, "list"))
                return verb_list(&root, rel, a1, max_entries);
        if (streq(verb, "stat"))
                return verb_stat(&root, rel, a1);
        if (streq(verb, "mkdir"))
                return verb_mkdir(&root, rel, a1, perm, parents);
        if (streq(verb, "remove"))
                return verb_remove(&root, rel, a1, recursive);
        if (streq(verb, "rename")) {
                r = relative(&root, a1, &rel2);
                if (r != EXIT_SUCCESS)
                        return r;
                return verb_rename(&root, rel2, a1, rel, a2);
        }
bad:
        fputs(usage, stderr);
        return EXIT_USAGE;
}
