/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>

#include "errors.h"
#include "worker-view.h"

#define OCI_MASKED_HOST_PATHS                                                           \
        "/etc/sandboxd",                                                                \
        "/var/lib/sandboxd",                                                            \
        "/var/lib/private",     /* where DynamicUser StateDirectories really live */    \
        "/root",                                                                        \
        "/home",                                                                        \
        "/run"                  /* sockets, credentials of other units, bundles */

const char * const oci_masked_host_paths[] = { OCI_MASKED_HOST_PATHS, NULL };

/* A gVisor or Kata worker's root is the root image (read-only) with the
 * bundle's mounts over it (daemon/runtime/oci-bundle.c): the masks, and the
 * runtime's own /proc, /dev, /sys and an empty /tmp. The home is mounted
 * too, but it is new and empty when the command is looked for. */
static const char * const oci_hidden[] = { OCI_MASKED_HOST_PATHS, "/proc", "/dev", "/sys", "/tmp", NULL };

/* A trusted or wasm worker sees the host's root through its unit
 * (daemon/worker/unit-props.c, unit_append_hardening): ProtectHome=yes empties
 * /home and /root, TemporaryFileSystem= replaces /run (and /run/user with
 * it), PrivateTmp= gives it an empty /tmp and /var/tmp of its own,
 * PrivateDevices= a /dev of device nodes; /proc and /sys are the kernel's,
 * and what the daemon reads there (its own /proc/self) is not the worker's.
 * ProtectSystem=strict only makes the rest read-only: still there to run.
 * sandboxd.service's own ProtectHome=, PrivateTmp= and PrivateDevices= hide
 * from the daemon only what is hidden here anyway, and its ProtectSystem=
 * leaves /usr and /etc as they are, so the daemon's "/" serves as the
 * worker's. */
static const char * const unit_hidden[] = {
        "/home", "/root", "/run", "/tmp", "/var/tmp", "/dev", "/proc", "/sys", NULL,
};

/* The kernel's own bound on symbolic links in one lookup. */
#define LINKS_MAX 40

int worker_view_for_runtime(SbxRuntime runtime, const SbxConfig *c, WorkerView *ret) {
        assert(c);
        assert(ret);

        switch (runtime) {
        case SBX_RUNTIME_SYSTEMD:
        case SBX_RUNTIME_WASM:
                *ret = (WorkerView) { .root = "/", .hidden = unit_hidden, .need_exec = runtime == SBX_RUNTIME_SYSTEMD };
                return 0;
        case SBX_RUNTIME_RUNSC:
        case SBX_RUNTIME_KATA:
                *ret = (WorkerView) { .root = c->root_image ?: "/", .hidden = oci_hidden, .need_exec = true };
                return 0;
        default:
                return -EOPNOTSUPP;
        }
}

bool exec_name_is_bare(const char *name) {
        return !isempty(name) && !strchr(name, '/');
}

static bool path_is_hidden(const char *path, const char * const *hidden) {
        for (size_t i = 0; hidden && hidden[i]; i++) {
                size_t n = strlen(hidden[i]);
                if (strncmp(path, hidden[i], n) == 0 && (path[n] == 0 || path[n] == '/'))
                        return true;
        }
        return false;
}

static int reopen_dir(int root_fd, const char *done) {
        int fd = isempty(done) ? fcntl(root_fd, F_DUPFD_CLOEXEC, 3)
                               : openat(root_fd, done + 1, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

/* Replaces PENDING by TARGET followed by what was left of it at REST. */
static int splice_link(char *pending, const char *rest, const char *target) {
        char next[PATH_MAX];
        int k = snprintf(next, sizeof(next), "%s%s%s", target, *rest ? "/" : "", rest);

        if (k < 0 || (size_t) k >= sizeof(next))
                return -ENAMETOOLONG;
        memcpy(pending, next, (size_t) k + 1);
        return 0;
}

/* Opens PATH (absolute, in the worker's terms) below ROOT_FD as the
 * worker's own lookup would go: ".." stops at the root, an absolute link
 * starts again from it, a hidden directory is not there, and every
 * directory passed must be searchable by "other": the worker's dynamic UID
 * and GID own no file outside its home. */
static int view_open(int root_fd, const char *path, const char * const *hidden, int *ret_fd, struct stat *ret_st) {
        char pending[PATH_MAX], done[PATH_MAX] = "";       /* done: the resolved part, "" is "/" */
        _cleanup_close_ int fd = -1;
        unsigned links = 0;
        char *p = pending;
        int r;

        if (strlen(path) >= sizeof(pending))
                return -ENAMETOOLONG;
        strcpy(pending, path);
        fd = reopen_dir(root_fd, done);
        if (fd < 0)
                return fd;
        for (;;) {
                _cleanup_close_ int child = -1;
                char comp[NAME_MAX + 1], next[PATH_MAX];
                struct stat st;
                size_t n;
                bool last;

                p += strspn(p, "/");
                if (!*p)
                        return -EISDIR;         /* the root or a directory: never a command */
                n = strcspn(p, "/");
                if (n > NAME_MAX)
                        return -ENAMETOOLONG;
                memcpy(comp, p, n);
                comp[n] = 0;
                p += n;
                last = p[strspn(p, "/")] == 0;

                if (streq(comp, "."))
                        continue;
                if (streq(comp, "..")) {
                        char *slash = strrchr(done, '/');
                        if (slash)
                                *slash = 0;
                        safe_close(fd);
                        fd = reopen_dir(root_fd, done);
                        if (fd < 0)
                                return fd;
                        continue;
                }
                if (snprintf(next, sizeof(next), "%s/%s", done, comp) >= (int) sizeof(next))
                        return -ENAMETOOLONG;
                if (path_is_hidden(next, hidden))
                        return -ENOENT;
                child = openat(fd, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
                if (child < 0 || fstatat(child, "", &st, AT_EMPTY_PATH) < 0)
                        return -errno;

                if (S_ISLNK(st.st_mode)) {
                        char target[PATH_MAX];
                        ssize_t k;

                        if (++links > LINKS_MAX)
                                return -ELOOP;
                        k = readlinkat(child, "", target, sizeof(target) - 1);
                        if (k < 0)
                                return -errno;
                        if (k == 0 || (size_t) k >= sizeof(target) - 1)
                                return k == 0 ? -ENOENT : -ENAMETOOLONG;
                        target[k] = 0;
                        r = splice_link(pending, p, target);
                        if (r < 0)
                                return r;
                        p = pending;
                        if (target[0] == '/') {
                                done[0] = 0;
                                safe_close(fd);
                                fd = reopen_dir(root_fd, done);
                                if (fd < 0)
                                        return fd;
                        }
                        continue;
                }
                if (!last && !S_ISDIR(st.st_mode))
                        return -ENOTDIR;
                if (!last && !(st.st_mode & S_IXOTH))
                        return -EACCES;
                strcpy(done, next);
                safe_close(fd);
                fd = TAKE_FD(child);
                if (last) {
                        *ret_st = st;
                        *ret_fd = TAKE_FD(fd);
                        return 0;
                }
        }
}

static bool file_is_usable(const struct stat *st, bool need_exec) {
        return S_ISREG(st->st_mode) && (st->st_mode & (need_exec ? S_IXOTH : S_IROTH));
}

int worker_view_find_executable(const WorkerView *view, const char *name, char **ret, SbxError *error) {
        _cleanup_close_ int root_fd = -1;
        const char *dir = SBX_EXEC_SEARCH_PATH;

        assert(view);
        assert(name);
        assert(ret);

        root_fd = open(view->root, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (root_fd < 0)
                return sbx_error_set(error, -errno, SBX_ERROR_START_FAILED,
                                     "Cannot open the workers' root %s: %s", view->root, strerror(errno));
        while (exec_name_is_bare(name) && *dir) {
                _cleanup_close_ int fd = -1;
                _cleanup_free_ char *candidate = NULL;
                size_t n = strcspn(dir, ":");
                struct stat st;

                if (asprintf(&candidate, "%.*s/%s", (int) n, dir, name) < 0)
                        return -ENOMEM;
                dir += n + (dir[n] == ':');
                if (view_open(root_fd, candidate, view->hidden, &fd, &st) < 0 || !file_is_usable(&st, view->need_exec))
                        continue;
                *ret = TAKE_PTR(candidate);
                return 0;
        }
        return sbx_error_set(error, -ENOENT, SBX_ERROR_EXECUTABLE_NOT_FOUND,
                             "executable '%.255s' not found in " SBX_EXEC_SEARCH_PATH, name);
}
