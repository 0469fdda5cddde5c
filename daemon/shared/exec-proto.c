/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "exec-proto.h"
#include "util.h"

#define SBX_EXEC_FDS_MAX 3

int sbx_exec_send(int fd, const SbxExecHeader *h, const void *payload, size_t len, const int *fds, size_t n_fds) {
        union {
                struct cmsghdr cmsg;
                char buf[CMSG_SPACE(sizeof(int) * SBX_EXEC_FDS_MAX)];
        } control = {};
        struct iovec iov[2] = {
                { .iov_base = (void *) h, .iov_len = sizeof(*h) },
                { .iov_base = (void *) payload, .iov_len = len },
        };
        struct msghdr mh = { .msg_iov = iov, .msg_iovlen = len > 0 ? 2 : 1 };
        ssize_t n;

        if (n_fds > SBX_EXEC_FDS_MAX)
                return -EINVAL;
        if (n_fds > 0) {
                mh.msg_control = &control;
                mh.msg_controllen = CMSG_SPACE(sizeof(int) * n_fds);
                struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
                c->cmsg_level = SOL_SOCKET;
                c->cmsg_type = SCM_RIGHTS;
                c->cmsg_len = CMSG_LEN(sizeof(int) * n_fds);
                memcpy(CMSG_DATA(c), fds, sizeof(int) * n_fds);
        }
        do
                n = sendmsg(fd, &mh, MSG_NOSIGNAL);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;
        return (size_t) n == sizeof(*h) + len ? 0 : -EIO;
}

int sbx_exec_recv(int fd, SbxExecHeader *h, void *buf, size_t size, size_t *ret_len, int *fds, size_t max_fds,
                  size_t *ret_n_fds) {
        union {
                struct cmsghdr cmsg;
                char buf[CMSG_SPACE(sizeof(int) * SBX_EXEC_FDS_MAX)];
        } control = {};
        struct iovec iov[2] = {
                { .iov_base = h, .iov_len = sizeof(*h) },
                { .iov_base = buf, .iov_len = size },
        };
        struct msghdr mh = { .msg_iov = iov, .msg_iovlen = buf && size > 0 ? 2 : 1,
                             .msg_control = &control, .msg_controllen = sizeof(control) };
        size_t got = 0;
        ssize_t n;

        if (ret_n_fds)
                *ret_n_fds = 0;
        do
                n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
                if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
                        continue;
                size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                int *in = (int *) CMSG_DATA(c);
                for (size_t i = 0; i < k; i++) {
                        if (got < max_fds && fds && !(mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)))
                                fds[got++] = in[i];
                        else
                                safe_close(in[i]);
                }
        }
        if (n == 0)
                return 0;
        if ((size_t) n < sizeof(*h) || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
                for (size_t i = 0; i < got; i++)
                        safe_close(fds[i]);
                return -EBADMSG;
        }
        if (ret_len)
                *ret_len = (size_t) n - sizeof(*h);
        if (ret_n_fds)
                *ret_n_fds = got;
        return 1;
}

static size_t strv_bytes(char * const *l) {
        size_t n = 0;
        for (char * const *s = l; s && *s; s++)
                n += strlen(*s) + 1;
        return n;
}

static char *append_strv(char *p, char * const *l) {
        for (char * const *s = l; s && *s; s++)
                p = stpcpy(p, *s) + 1;
        return p;
}

int sbx_exec_spawn_encode(const char *cwd, char * const *argv, char * const *env, char **ret, size_t *ret_len) {
        size_t len = strlen(cwd ?: "") + 1 + strv_bytes(argv) + strv_bytes(env);
        char *buf, *p;

        if (len > SBX_EXEC_STRINGS_MAX)
                return -E2BIG;
        buf = malloc(len);
        if (!buf)
                return -ENOMEM;
        p = stpcpy(buf, cwd ?: "") + 1;
        p = append_strv(p, argv);
        append_strv(p, env);
        *ret = buf;
        *ret_len = len;
        return 0;
}

/* N strings from *P (at most END), each NUL-terminated, into a new vector. */
static int split_strings(char **p, const char *end, uint32_t n, bool need_eq, char ***ret) {
        char **v = calloc((size_t) n + 1, sizeof(char *));

        if (!v)
                return -ENOMEM;
        for (uint32_t i = 0; i < n; i++) {
                char *nul = *p < end ? memchr(*p, 0, end - *p) : NULL;
                if (!nul || (need_eq && (nul == *p || !strchr(*p, '=') || **p == '='))) {
                        free(v);
                        return -EBADMSG;
                }
                v[i] = *p;
                *p = nul + 1;
        }
        *ret = v;
        return 0;
}

int sbx_exec_spawn_decode(const SbxExecHeader *h, char *payload, size_t len, SbxExecSpawn *ret) {
        const char *end = payload + len;
        char *p = payload, *nul;
        SbxExecSpawn s = {};
        int r;

        if (h->type != SBX_EXEC_SPAWN || h->n_argv < 1 || len > SBX_EXEC_STRINGS_MAX ||
            h->n_argv > len || h->n_env > len || !payload)
                return -EBADMSG;
        nul = memchr(p, 0, len);
        if (!nul)
                return -EBADMSG;
        s.cwd = p;
        p = nul + 1;
        r = split_strings(&p, end, h->n_argv, false, &s.argv);
        if (r < 0)
                return r;
        r = split_strings(&p, end, h->n_env, true, &s.env);
        if (r < 0 || p != end || s.argv[0][0] != '/' || (s.cwd[0] && s.cwd[0] != '/')) {
                sbx_exec_spawn_done(&s);
                return r < 0 ? r : -EBADMSG;
        }
        *ret = s;
        return 0;
}

void sbx_exec_spawn_done(SbxExecSpawn *s) {
        free(s->argv);
        free(s->env);
        *s = (SbxExecSpawn) {};
}

int sbx_exec_take_listen_fd(void) {
        const char *pid = getenv("LISTEN_PID"), *n = getenv("LISTEN_FDS"), *names = getenv("LISTEN_FDNAMES");
        int fd = -1;

        /* Exactly one fd, for this process, and named as the worker's unit
         * names it: anything else is not the channel. */
        if (pid && n && names && (pid_t) strtol(pid, NULL, 10) == getpid() && streq(n, "1") &&
            streq(names, SBX_EXEC_FD_NAME))
                fd = 3;
        unsetenv("LISTEN_PID");
        unsetenv("LISTEN_FDS");
        unsetenv("LISTEN_FDNAMES");
        return fd;
}
