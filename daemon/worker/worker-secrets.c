/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "broker-secret.h"
#include "env-cred.h"
#include "worker-secrets.h"
#include "worker-suspend.h"

#define FDNAME_MAX 64
/* Every credential at its cap is refused at creation; this bounds a
 * stored buffer by what a valid spec can hold, names and sizes included. */
#define SECRETS_SIZE_MAX (SBX_CREDENTIAL_SIZE_MAX + (SBX_CREDENTIALS_MAX + 1) * (64 + 1 + 4))

bool worker_secrets_wanted(const WorkerSpec *spec, SbxRuntime runtime) {
        if (spec->n_credentials == 0 && strv_length(spec->environment) == 0)
                return false;
        return worker_check_suspendable(spec, runtime, NULL) >= 0;
}

int worker_secrets_keep(Worker *w) {
        int r;

        w->secrets.keep = worker_secrets_wanted(&w->spec, w->runtime);
        if (!w->secrets.keep || w->environment.data || strv_length(w->spec.environment) == 0)
                return 0;
        r = env_credential_encode(w->spec.environment, &w->environment.data, &w->environment.size);
        if (r < 0)
                return r;
        w->environment.name = (char *) SBX_ENV_CREDENTIAL;
        return 0;
}

bool worker_secrets_missing(const Worker *w) {
        return !w->secrets.keep && (w->spec.n_credentials > 0 || strv_length(w->spec.environment) > 0);
}

void worker_secrets_started(Worker *w) {
        if (w->secrets.keep)
                return;
        for (size_t i = 0; i < w->spec.n_credentials; i++)
                explicit_bzero(w->spec.credentials[i].data, w->spec.credentials[i].size);
        if (w->environment.data)
                explicit_bzero(w->environment.data, w->environment.size);
        for (char **e = w->spec.environment; e && *e; e++)
                explicit_bzero(*e, strlen(*e));
}

bool worker_secrets_servable(const Worker *w) {
        return w->state == WORKER_STARTING || (w->state == WORKER_RESUMING && w->secrets.keep);
}

static void put_entry(uint8_t *buf, size_t *at, const char *name, const uint8_t *data, size_t size) {
        size_t n = strlen(name) + 1;

        memcpy(buf + *at, name, n);
        *at += n;
        for (size_t i = 0; i < 4; i++)
                buf[(*at)++] = (uint8_t) (size >> (8 * i));
        if (size > 0)
                memcpy(buf + *at, data, size);
        *at += size;
}

int worker_secrets_encode(const Worker *w, uint8_t **ret, size_t *ret_size) {
        size_t size = 0, at = 0;
        uint8_t *buf;

        for (size_t i = 0; i < w->spec.n_credentials; i++)
                size += strlen(w->spec.credentials[i].name) + 1 + 4 + w->spec.credentials[i].size;
        if (w->environment.size > 0)
                size += strlen(SBX_ENV_CREDENTIAL) + 1 + 4 + w->environment.size;
        if (size == 0 || size > SECRETS_SIZE_MAX)
                return -EINVAL;
        buf = malloc(size);
        if (!buf)
                return -ENOMEM;
        for (size_t i = 0; i < w->spec.n_credentials; i++)
                put_entry(buf, &at, w->spec.credentials[i].name, w->spec.credentials[i].data,
                          w->spec.credentials[i].size);
        if (w->environment.size > 0)
                put_entry(buf, &at, SBX_ENV_CREDENTIAL, w->environment.data, w->environment.size);
        *ret = buf;
        *ret_size = size;
        return 0;
}

static void wipe(Worker *w) {
        for (size_t i = 0; i < w->spec.n_credentials; i++) {
                free(w->spec.credentials[i].name);
                erase_and_free(w->spec.credentials[i].data, w->spec.credentials[i].size);
        }
        free(w->spec.credentials);
        w->spec.credentials = NULL;
        w->spec.n_credentials = 0;
        strv_free_erase(w->spec.environment);
        w->spec.environment = NULL;
        erase_and_free(w->environment.data, w->environment.size);
        w->environment.data = NULL;
        w->environment.size = 0;
}

static int decode_entry(Worker *w, const char *name, const uint8_t *data, size_t size) {
        SbxCredential *c;

        if (streq(name, SBX_ENV_CREDENTIAL)) {
                if (w->environment.data || size == 0 || env_credential_decode(data, size, &w->spec.environment) < 0)
                        return -EBADMSG;
                w->environment = (SbxCredential) { .name = (char *) SBX_ENV_CREDENTIAL, .data = malloc(size),
                                                   .size = size };
                if (!w->environment.data)
                        return -ENOMEM;
                memcpy(w->environment.data, data, size);
                w->spec.set |= SPEC_HAS_ENVIRONMENT;
                return 0;
        }
        if (!credential_name_is_valid(name) || credential_name_is_reserved(name) ||
            w->spec.n_credentials >= SBX_CREDENTIALS_MAX)
                return -EBADMSG;
        for (size_t i = 0; i < w->spec.n_credentials; i++)
                if (streq(w->spec.credentials[i].name, name))
                        return -EBADMSG;
        c = &w->spec.credentials[w->spec.n_credentials];
        *c = (SbxCredential) { .name = strdup(name), .data = malloc(size ?: 1), .size = size };
        if (!c->name || !c->data) {
                free(c->name);
                free(c->data);
                return -ENOMEM;
        }
        memcpy(c->data, data, size);
        w->spec.n_credentials++;
        w->spec.set |= SPEC_HAS_CREDENTIALS;
        return 0;
}

int worker_secrets_decode(Worker *w, const uint8_t *data, size_t size) {
        size_t at = 0;
        int r = 0;

        if (size == 0 || w->spec.credentials || w->spec.environment || w->environment.data)
                return -EBADMSG;
        w->spec.credentials = calloc(SBX_CREDENTIALS_MAX, sizeof(SbxCredential));
        if (!w->spec.credentials)
                return -ENOMEM;
        while (r >= 0 && at < size) {
                const char *name = (const char *) data + at;
                const uint8_t *end = memchr(data + at, 0, size - at);
                size_t n = 0;

                if (!end || (size_t) (end - data) + 1 + 4 > size) {
                        r = -EBADMSG;
                        break;
                }
                at = (size_t) (end - data) + 1;
                for (size_t i = 0; i < 4; i++)
                        n |= (size_t) data[at + i] << (8 * i);
                at += 4;
                if (n > size - at) {
                        r = -EBADMSG;
                        break;
                }
                r = decode_entry(w, name, data + at, n);
                at += n;
        }
        if (r < 0)
                wipe(w);
        return r;
}

int worker_secrets_fdname(const char *id, char *buf, size_t size) {
        int n = snprintf(buf, size, "cred-%s", id);
        return n < 0 || (size_t) n >= size ? -ENAMETOOLONG : 0;
}

int worker_secrets_persist(Worker *w) {
        _cleanup_close_ int fd = -1;
        char name[FDNAME_MAX];
        uint8_t *data = NULL;
        size_t size = 0;
        int r;

        if (!w->secrets.keep || w->secrets.stored)
                return 0;
        r = worker_secrets_fdname(w->id, name, sizeof(name));
        if (r < 0)
                return r;
        r = worker_secrets_encode(w, &data, &size);
        if (r < 0)
                return r;
        fd = broker_secret_memfd(data, size);
        erase_and_free(data, size);
        if (fd < 0)
                return fd;
        r = fdstore_push(name, fd);
        if (r < 0)
                return r;
        /* 0: no fd store (not run by systemd); nothing was kept. */
        w->secrets.stored = r > 0;
        return 0;
}

void worker_secrets_forget(Worker *w) {
        char name[FDNAME_MAX];

        if (w->secrets.stored && worker_secrets_fdname(w->id, name, sizeof(name)) >= 0)
                (void) fdstore_remove(name);
        w->secrets.stored = false;
        wipe(w);
}

int worker_secrets_restore(Worker *w, FdStore *fds) {
        _cleanup_close_ int fd = -1;
        char name[FDNAME_MAX];
        uint8_t *data = NULL;
        size_t size = 0;
        int r;

        r = worker_secrets_fdname(w->id, name, sizeof(name));
        if (r < 0)
                return r;
        fd = fdstore_take(fds, name);
        if (fd < 0)
                return -ENOKEY;
        r = broker_secret_read(fd, SECRETS_SIZE_MAX, &data, &size);
        if (r >= 0) {
                r = worker_secrets_decode(w, data, size);
                erase_and_free(data, size);
        }
        if (r < 0) {
                /* Taking it did not remove it from systemd's store. */
                (void) fdstore_remove(name);
                return r == -ENOMEM ? r : -ENOKEY;
        }
        w->secrets.keep = true;
        w->secrets.stored = true;
        return 0;
}
