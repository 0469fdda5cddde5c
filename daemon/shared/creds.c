/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/epoll.h>
#include <stddef.h>
#include <time.h>

#include "creds.h"

struct CredentialServer {
        int fd;
        dev_t dev;                      /* the socket file bound, to tell it from a replacement */
        ino_t ino;
        sd_event_source *source;
        char *path;
        CredentialLookupFn lookup;
        void *userdata;
};

int credential_peer_parse(const char *addr, size_t len, char **ret_buf, const char **ret_unit, const char **ret_name) {
        char *buf, *unit, *name;

        /* Abstract: a leading NUL, no terminating one. */
        if (len < 2 || addr[0] != 0 || memchr(addr + 1, 0, len - 1))
                return -EBADMSG;
        buf = strndup(addr + 1, len - 1);
        if (!buf)
                return -ENOMEM;
        unit = strstr(buf, "/unit/");
        if (!unit) {
                free(buf);
                return -EBADMSG;
        }
        unit += strlen("/unit/");
        name = strchr(unit, '/');
        if (!name || name == unit || !name[1] || strchr(name + 1, '/')) {
                free(buf);
                return -EBADMSG;
        }
        *name++ = 0;
        *ret_buf = buf;
        *ret_unit = unit;
        *ret_name = name;
        return 0;
}

static void serve_one(CredentialServer *s, int fd) {
        struct sockaddr_un sa = {};
        socklen_t salen = sizeof(sa);
        struct ucred cred;
        socklen_t credlen = sizeof(cred);
        _cleanup_free_ char *buf = NULL;
        const char *unit, *name;
        const uint8_t *data;
        size_t size;
        struct timeval tv = { .tv_sec = 5 };
        int r;

        /* Only PID 1's credential loader (root) may ask. */
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &credlen) < 0 || cred.uid != 0) {
                log_warning("Refusing credential request from uid %u", (unsigned) cred.uid);
                return;
        }
        if (getpeername(fd, (struct sockaddr *) &sa, &salen) < 0 || salen <= offsetof(struct sockaddr_un, sun_path)) {
                log_warning("Refusing credential request without a peer address");
                return;
        }
        r = credential_peer_parse(sa.sun_path, salen - offsetof(struct sockaddr_un, sun_path), &buf, &unit, &name);
        if (r < 0) {
                log_warning("Refusing credential request with an unexpected peer address");
                return;
        }
        if (s->lookup(unit, name, s->userdata, &data, &size) < 0) {
                log_struct(LOG_WARNING, "Credential request for an unknown unit or credential",
                           "SANDBOXD_UNIT", unit, "SANDBOXD_CREDENTIAL", name, NULL);
                return;
        }
        (void) setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        r = loop_write(fd, data, size);
        if (r < 0)
                log_struct(LOG_ERR, "Failed to deliver a credential",
                           "SANDBOXD_UNIT", unit, "SANDBOXD_CREDENTIAL", name, "ERRNO", strerror(-r), NULL);
}

static int on_accept(sd_event_source *source, int fd, uint32_t revents, void *userdata) {
        CredentialServer *s = userdata;
        int cfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC);

        if (cfd < 0)
                return 0;
        /* The peer reads until EOF, so closing ends the credential. */
        serve_one(s, cfd);
        close(cfd);
        return 0;
}

int credential_server_new(CredentialServer **ret, sd_event *event, const char *path,
                          CredentialLookupFn lookup, void *userdata) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        CredentialServer *s;
        mode_t old;
        struct stat st;
        int r;

        if (strlen(path) >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        strcpy(sa.sun_path, path);

        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        *s = (CredentialServer) { .fd = -1, .lookup = lookup, .userdata = userdata, .path = strdup(path) };
        if (!s->path) {
                free(s);
                return -ENOMEM;
        }
        s->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (s->fd < 0) {
                r = -errno;
                goto fail;
        }
        (void) unlink(path);
        old = umask(0077);
        r = bind(s->fd, (struct sockaddr *) &sa, sizeof(sa)) < 0 ? -errno : 0;
        umask(old);
        if (r < 0)
                goto fail;
        if (chmod(path, 0600) < 0 || listen(s->fd, 64) < 0 || stat(path, &st) < 0) {
                r = -errno;
                goto fail;
        }
        s->dev = st.st_dev;
        s->ino = st.st_ino;
        r = sd_event_add_io(event, &s->source, s->fd, EPOLLIN, on_accept, s);
        if (r < 0)
                goto fail;
        (void) sd_event_source_set_description(s->source, "creds-listener");
        *ret = s;
        return 0;
fail:
        credential_server_free(s);
        return r;
}

int credential_server_reachable(const CredentialServer *s) {
        struct stat st;

        if (!s)
                return -ENOTCONN;
        if (stat(s->path, &st) < 0)
                return -errno;
        return st.st_dev == s->dev && st.st_ino == s->ino ? 0 : -ESTALE;
}

CredentialServer *credential_server_free(CredentialServer *s) {
        if (!s)
                return NULL;
        sd_event_source_disable_unref(s->source);
        if (s->fd >= 0) {
                close(s->fd);
                (void) unlink(s->path);
        }
        free(s->path);
        free(s);
        return NULL;
}
