/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <time.h>

#include "errors.h"
#include "fd-copy.h"
#include "sandboxctl-files.h"
#include "sandboxctl-output.h"
#include "table.h"
#include "util.h"

#define BUS_NAME "org.sandboxd1"
#define WORKER_INTERFACE "org.sandboxd1.Worker"
/* CommitFile answers once the helper has written (and for a replace
 * fsynced) everything: a big file on a slow disk takes longer than
 * sd-bus's 25 s. */
#define COMMIT_TIMEOUT_USEC (600 * USEC_PER_SEC)

int files_split_remote(const char *arg, char **ret_id, char **ret_path) {
        const char *colon = strchr(arg, ':');

        if (!colon || colon == arg || memchr(arg, '/', (size_t) (colon - arg)))
                return 0;
        *ret_id = strndup(arg, (size_t) (colon - arg));
        *ret_path = strdup(colon + 1);
        if (!*ret_id || !*ret_path) {
                free(*ret_id);
                free(*ret_path);
                return -ENOMEM;
        }
        return 1;
}

/* "" and paths ending in '/' name a directory whatever it holds. */
static bool names_directory(const char *path) {
        size_t n = strlen(path);
        return n == 0 || path[n - 1] == '/';
}

static char *path_join(const char *dir, const char *name) {
        char *s;
        size_t n = strlen(dir);
        if (asprintf(&s, "%s%s%s", dir, n == 0 || dir[n - 1] == '/' ? "" : "/", name) < 0)
                return NULL;
        return s;
}

/* The last component of PATH ("" for the home or "/"). */
static const char *last_component(const char *path, char *buf, size_t size) {
        snprintf(buf, size, "%s", path);
        size_t n = strlen(buf);
        while (n > 0 && buf[n - 1] == '/')
                buf[--n] = 0;
        char *slash = strrchr(buf, '/');
        return slash ? slash + 1 : buf;
}

/* Stat of REMOTE: 1 with *TYPE ("file", "directory", ...) and *MODE, 0
 * when there is nothing there, else the error. */
static int remote_stat(const FilesCopy *c, const char *remote, char **type, uint32_t *mode) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        const char *name, *t;
        uint64_t size, mtime;
        uint32_t uid, gid;
        int r;

        r = sd_bus_call_method(c->bus, BUS_NAME, c->worker, WORKER_INTERFACE, "Stat", &error, &reply, "s", remote);
        if (r < 0) {
                if (sd_bus_error_has_name(&error, SBX_ERROR_FILE_NOT_FOUND))
                        return 0;
                sd_bus_error_move(c->error, &error);
                return r;
        }
        r = sd_bus_message_read(reply, "sstutuu", &name, &t, &size, mode, &mtime, &uid, &gid);
        if (r < 0)
                return r;
        *type = strdup(t);
        return *type ? 1 : -ENOMEM;
}

static int open_file(const FilesCopy *c, const char *remote, const char *mode, long perm, int *ret_fd,
                     char **ret_handle) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL, *reply = NULL;
        const char *handle;
        int fd, r;

        r = sd_bus_message_new_method_call(c->bus, &m, BUS_NAME, c->worker, WORKER_INTERFACE, "OpenFile");
        if (r >= 0)
                r = sd_bus_message_append(m, "ss", remote, mode);
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'a', "{sv}");
        if (r >= 0 && perm >= 0)
                r = sd_bus_message_append(m, "{sv}", "Mode", "u", (uint32_t) perm);
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        if (r < 0)
                return r;
        r = sd_bus_call(c->bus, m, 0, c->error, &reply);
        if (r < 0)
                return r;
        r = sd_bus_message_read(reply, "hs", &fd, &handle);
        if (r < 0)
                return r;
        /* The fd belongs to the reply: a copy that outlives it. */
        *ret_fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        if (*ret_fd < 0)
                return -errno;
        *ret_handle = strdup(handle);
        if (!*ret_handle) {
                *ret_fd = safe_close(*ret_fd);
                return -ENOMEM;
        }
        return 0;
}

/* CommitFile: the daemon's answer for the whole transfer (a disk cap
 * reached on the far side included), the bytes it moved in *RET. */
static int commit(const FilesCopy *c, const char *handle, uint64_t *ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL, *reply = NULL;
        int r;

        r = sd_bus_message_new_method_call(c->bus, &m, BUS_NAME, c->worker, WORKER_INTERFACE, "CommitFile");
        if (r >= 0)
                r = sd_bus_message_append(m, "s", handle);
        if (r >= 0)
                r = sd_bus_call(c->bus, m, COMMIT_TIMEOUT_USEC, c->error, &reply);
        if (r >= 0)
                r = sd_bus_message_read(reply, "t", ret);
        return r;
}

static void abort_file(const FilesCopy *c, const char *handle) {
        (void) sd_bus_call_method(c->bus, BUS_NAME, c->worker, WORKER_INTERFACE, "AbortFile", NULL, NULL, "s",
                                  handle);
}

static int copy_in_fd(const FilesCopy *c, int in, const char *remote, long perm) {
        _cleanup_free_ char *handle = NULL;
        _cleanup_close_ int fd = -1;
        uint64_t sent, taken;
        int r;

        r = open_file(c, remote, "replace", perm, &fd, &handle);
        if (r < 0)
                return r;
        r = fd_copy_all(in, fd, &sent);
        fd = safe_close(fd);
        if (r < 0 && r != -EPIPE) {
                /* Our side failed: the old file stays as it was. */
                abort_file(c, handle);
                return r;
        }
        /* EPIPE: the helper stopped reading; CommitFile says why. */
        r = commit(c, handle, &taken);
        if (r < 0)
                return r;
        if (taken != sent)
                return sd_bus_error_setf(c->error, SBX_ERROR_FILE_ERROR, "%s: %" PRIu64 " bytes sent, %" PRIu64 " written",
                                         remote, sent, taken);
        return 0;
}

static int copy_in_tree(const FilesCopy *c, int dirfd, const char *local, const char *remote);

static int make_remote_dir(const FilesCopy *c, const char *remote, uint32_t mode) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        int r;

        r = sd_bus_message_new_method_call(c->bus, &m, BUS_NAME, c->worker, WORKER_INTERFACE, "MakeDirectory");
        if (r >= 0)
                r = sd_bus_message_append(m, "sa{sv}", remote, 1, "Mode", "u", mode);
        if (r >= 0)
                r = sd_bus_call(c->bus, m, 0, &error, NULL);
        if (r < 0 && sd_bus_error_has_name(&error, SBX_ERROR_FILE_EXISTS)) {
                _cleanup_free_ char *type = NULL;
                uint32_t unused;
                if (remote_stat(c, remote, &type, &unused) > 0 && streq(type, "directory"))
                        return 0;
        }
        if (r < 0)
                sd_bus_error_move(c->error, &error);
        return r;
}

/* One entry of a local tree: a file, a directory (walked), anything else
 * skipped with a warning (a symlink is never followed, as on the far side). */
static int copy_in_entry(const FilesCopy *c, int dirfd, const char *name, const char *local, const char *remote) {
        struct stat st;

        if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        if (S_ISDIR(st.st_mode)) {
                int r = make_remote_dir(c, remote, st.st_mode & 07777);
                if (r < 0)
                        return r;
                int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0)
                        return -errno;
                r = copy_in_tree(c, fd, local, remote);
                close(fd);
                return r;
        }
        if (!S_ISREG(st.st_mode)) {
                fprintf(c->err, "sandboxctl: skipping %s: not a regular file or directory\n", local);
                return 0;
        }
        _cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        return copy_in_fd(c, fd, remote, st.st_mode & 07777);
}

/* Takes nothing: DIRFD stays the caller's. */
static int copy_in_tree(const FilesCopy *c, int dirfd, const char *local, const char *remote) {
        int dup_fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
        _cleanup_(closedirp) DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;

        if (!d) {
                safe_close(dup_fd);
                return -errno;
        }
        for (struct dirent *de; (de = readdir(d)); ) {
                _cleanup_free_ char *l = NULL, *rp = NULL;
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                l = path_join(local, de->d_name);
                rp = path_join(remote, de->d_name);
                if (!l || !rp)
                        return -ENOMEM;
                int r = copy_in_entry(c, dirfd, de->d_name, l, rp);
                if (r < 0)
                        return r;
        }
        return 0;
}

int files_copy_in(const FilesCopy *c, const char *local, const char *remote) {
        _cleanup_free_ char *target = NULL, *type = NULL;
        char base[PATH_MAX];
        struct stat st;
        uint32_t mode;
        int r;

        if (streq(local, "-")) {
                if (names_directory(remote))
                        return sd_bus_error_setf(c->error, SBX_ERROR_INVALID_ARGUMENT,
                                                 "Copying stdin needs a file name, not the directory '%s'.", remote);
                return copy_in_fd(c, STDIN_FILENO, remote, -1);
        }
        if (stat(local, &st) < 0)
                return -errno;
        if (S_ISDIR(st.st_mode) && !c->recursive)
                return sd_bus_error_setf(c->error, SBX_ERROR_INVALID_ARGUMENT,
                                         "%s is a directory: copying it needs -r.", local);
        /* Into a directory that is there: under the source's own name. */
        r = names_directory(remote) ? 1 : remote_stat(c, remote, &type, &mode);
        if (r < 0)
                return r;
        if (r > 0 && (!type || streq(type, "directory")))
                target = path_join(remote, last_component(local, base, sizeof(base)));
        else
                target = strdup(remote);
        if (!target)
                return -ENOMEM;
        if (S_ISDIR(st.st_mode)) {
                _cleanup_close_ int fd = open(local, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (fd < 0)
                        return -errno;
                r = make_remote_dir(c, target, st.st_mode & 07777);
                return r < 0 ? r : copy_in_tree(c, fd, local, target);
        }
        if (!S_ISREG(st.st_mode))
                return sd_bus_error_setf(c->error, SBX_ERROR_INVALID_ARGUMENT,
                                         "%s is not a regular file or directory.", local);
        _cleanup_close_ int fd = open(local, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        return copy_in_fd(c, fd, target, st.st_mode & 07777);
}

/* REMOTE into OUT, or when OUT is -1 into LOCAL, made (MODE) only once
 * the worker's side has opened REMOTE: a refused copy leaves no file. */
static int copy_out(const FilesCopy *c, const char *remote, int out, const char *local, uint32_t mode) {
        _cleanup_free_ char *handle = NULL;
        _cleanup_close_ int fd = -1, made = -1;
        uint64_t got, sent;
        int r;

        r = open_file(c, remote, "read", -1, &fd, &handle);
        if (r < 0)
                return r;
        if (out < 0) {
                made = open(local, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, mode & 0777);
                if (made < 0) {
                        r = -errno;
                        abort_file(c, handle);
                        return r;
                }
                out = made;
        }
        r = fd_copy_all(fd, out, &got);
        fd = safe_close(fd);
        if (r < 0) {
                abort_file(c, handle);
                return r;
        }
        /* EOF alone cannot tell the file's end from a failure inside. */
        r = commit(c, handle, &sent);
        if (r < 0)
                return r;
        if (got != sent)
                return sd_bus_error_setf(c->error, SBX_ERROR_FILE_ERROR, "%s: %" PRIu64 " bytes sent, %" PRIu64 " received",
                                         remote, sent, got);
        return 0;
}

static int copy_out_tree(const FilesCopy *c, const char *remote, const char *local, uint32_t mode) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const char *name, *type;
        uint64_t size, mtime;
        uint32_t emode, uid, gid;
        int r;

        if (mkdir(local, mode & 07777) < 0 && errno != EEXIST)
                return -errno;
        r = sd_bus_call_method(c->bus, BUS_NAME, c->worker, WORKER_INTERFACE, "ListDirectory", c->error, &reply, "s",
                               remote);
        if (r < 0)
                return r;
        r = sd_bus_message_enter_container(reply, 'a', "(sstutuu)");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_read(reply, "(sstutuu)", &name, &type, &size, &emode, &mtime, &uid, &gid)) > 0) {
                _cleanup_free_ char *l = path_join(local, name), *rp = path_join(remote, name);
                if (!l || !rp)
                        return -ENOMEM;
                if (streq(type, "directory"))
                        r = copy_out_tree(c, rp, l, emode);
                else if (streq(type, "file"))
                        r = copy_out(c, rp, -1, l, emode);
                else {
                        fprintf(c->err, "sandboxctl: skipping %s: a %s\n", rp, type);
                        r = 0;
                }
                if (r < 0)
                        return r;
        }
        return r;
}

int files_copy_out(const FilesCopy *c, const char *remote, const char *local) {
        _cleanup_free_ char *type = NULL, *target = NULL;
        char base[PATH_MAX];
        struct stat st;
        uint32_t mode;
        int r;

        r = remote_stat(c, remote, &type, &mode);
        if (r == 0)
                return sd_bus_error_setf(c->error, SBX_ERROR_FILE_NOT_FOUND, "%s: No such file or directory", remote);
        if (r < 0)
                return r;
        if (streq(type, "directory") && !c->recursive)
                return sd_bus_error_setf(c->error, SBX_ERROR_INVALID_ARGUMENT,
                                         "%s is a directory: copying it needs -r.", remote);
        /* Anything but a directory goes to OpenFile, whose refusal names
         * what is there (a symlink, a FIFO). */
        if (streq(local, "-")) {
                if (streq(type, "directory"))
                        return sd_bus_error_setf(c->error, SBX_ERROR_IS_A_DIRECTORY,
                                                 "%s is a directory: only a file can be copied to stdout.", remote);
                return copy_out(c, remote, STDOUT_FILENO, NULL, 0);
        }
        /* Into a local directory that is there: under the source's own name
         * (the home, which has none: into it). */
        const char *name = last_component(remote, base, sizeof(base));
        if (stat(local, &st) == 0 && S_ISDIR(st.st_mode) && *name)
                target = path_join(local, name);
        else
                target = strdup(local);
        if (!target)
                return -ENOMEM;
        if (streq(type, "directory"))
                return copy_out_tree(c, remote, target, mode);
        return copy_out(c, remote, -1, target, mode);
}

typedef struct ListEntry {
        const char *name, *type;
        uint64_t size, mtime;
        uint32_t mode, uid, gid;
} ListEntry;

static int compare_entries(const void *a, const void *b) {
        return strcmp(((const ListEntry *) a)->name, ((const ListEntry *) b)->name);
}

static char type_letter(const char *type) {
        return streq(type, "directory") ? 'd' : streq(type, "symlink") ? 'l' : streq(type, "fifo") ? 'p' :
               streq(type, "socket") ? 's' : streq(type, "char-device") ? 'c' : streq(type, "block-device") ? 'b' : '-';
}

static int print_entries(ListEntry *e, size_t n, bool json, bool legend, FILE *f) {
        static const char * const headers[] = { "MODE", "UID", "GID", "SIZE", "MODIFIED", "NAME" };
        _cleanup_(table_freep) Table *t = table_new(ELEMENTSOF(headers), headers);
        _cleanup_(json_object_putp) json_object *a = json_object_new_array();

        if (!t || !a)
                return -ENOMEM;
        qsort(e, n, sizeof(*e), compare_entries);
        for (size_t i = 0; i < n; i++) {
                if (json) {
                        json_object *o = json_object_new_object();
                        if (!o || json_object_array_add(a, o) < 0) {
                                json_object_put(o);
                                return -ENOMEM;
                        }
                        json_object_object_add(o, "name", json_object_new_string(e[i].name));
                        json_object_object_add(o, "type", json_object_new_string(e[i].type));
                        json_object_object_add(o, "size", json_object_new_uint64(e[i].size));
                        json_object_object_add(o, "mode", json_object_new_int64(e[i].mode));
                        json_object_object_add(o, "mtime_usec", json_object_new_uint64(e[i].mtime));
                        json_object_object_add(o, "uid", json_object_new_int64(e[i].uid));
                        json_object_object_add(o, "gid", json_object_new_int64(e[i].gid));
                        continue;
                }
                char mode[16], uid[16], gid[16], size[24], when[32];
                static const char rwx[] = "rwxrwxrwx";
                mode[0] = type_letter(e[i].type);
                for (int b = 0; b < 9; b++)
                        mode[1 + b] = e[i].mode & (0400 >> b) ? rwx[b] : '-';
                mode[10] = 0;
                snprintf(uid, sizeof(uid), "%" PRIu32, e[i].uid);
                snprintf(gid, sizeof(gid), "%" PRIu32, e[i].gid);
                snprintf(size, sizeof(size), "%" PRIu64, e[i].size);
                time_t sec = (time_t) (e[i].mtime / USEC_PER_SEC);
                struct tm tm;
                if (!localtime_r(&sec, &tm) || strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm) == 0)
                        snprintf(when, sizeof(when), "-");
                const char * const row[] = { mode, uid, gid, size, when, e[i].name };
                int r = table_add_row(t, row);
                if (r < 0)
                        return r;
        }
        return json ? json_print(a, f) : table_print(t, f, legend);
}

int files_list_print(sd_bus_message *reply, bool json, bool legend, FILE *f) {
        _cleanup_free_ ListEntry *e = NULL;
        size_t n = 0, size = 0;
        ListEntry x;
        int r;

        r = sd_bus_message_enter_container(reply, 'a', "(sstutuu)");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_read(reply, "(sstutuu)", &x.name, &x.type, &x.size, &x.mode, &x.mtime, &x.uid,
                                        &x.gid)) > 0) {
                if (n == size) {
                        size = size ? size * 2 : 64;
                        ListEntry *p = reallocarray(e, size, sizeof(*e));
                        if (!p)
                                return -ENOMEM;
                        e = p;
                }
                e[n++] = x;
        }
        if (r < 0)
                return r;
        return print_entries(e, n, json, legend, f);
}

int files_stat_print(sd_bus_message *reply, bool json, bool legend, FILE *f) {
        ListEntry x;
        int r = sd_bus_message_read(reply, "sstutuu", &x.name, &x.type, &x.size, &x.mode, &x.mtime, &x.uid, &x.gid);
        if (r < 0)
                return r;
        return print_entries(&x, 1, json, legend, f);
}
