/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "env-cred.h"
#include "pool-job.h"

void pool_job_done(PoolJob *j) {
        strv_free_erase(j->argv);
        strv_free_erase(j->environment);
        for (size_t i = 0; i < j->n_credentials; i++) {
                free(j->credentials[i].name);
                erase_and_free(j->credentials[i].data, j->credentials[i].size);
        }
        free(j->credentials);
        *j = (PoolJob) {};
}

typedef struct Writer {
        uint8_t *p;
        size_t n, size;
        int error;
} Writer;

static void put_u32(uint8_t *p, uint32_t v) {
        for (int i = 0; i < 4; i++)
                p[i] = (uint8_t) (v >> (8 * i));
}

static uint32_t get_u32(const uint8_t *p) {
        return (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16 | (uint32_t) p[3] << 24;
}

static void put_record(Writer *w, char type, const void *data, size_t len) {
        if (w->error)
                return;
        if (len > POOL_JOB_SIZE_MAX || w->n + 5 + len > POOL_JOB_SIZE_MAX) {
                w->error = -E2BIG;
                return;
        }
        if (w->n + 5 + len > w->size) {
                size_t size = MAX(w->size * 2, w->n + 5 + len + 256);
                uint8_t *p = malloc(size);
                if (!p) {
                        w->error = -ENOMEM;
                        return;
                }
                /* Copied, never realloc'ed: the old buffer holds secrets to erase. */
                if (w->p)
                        memcpy(p, w->p, w->n);
                erase_and_free(w->p, w->size);
                w->p = p;
                w->size = size;
        }
        w->p[w->n] = (uint8_t) type;
        put_u32(w->p + w->n + 1, (uint32_t) len);
        if (len > 0 && data)
                memcpy(w->p + w->n + 5, data, len);
        else if (len > 0)
                memset(w->p + w->n + 5, 0, len);
        w->n += 5 + len;
}

int pool_job_encode(const PoolJob *j, uint8_t **ret, size_t *ret_size) {
        Writer w = {};
        uint8_t nproc[8];

        /* Room for the header, filled in at the end. */
        put_record(&w, 0, NULL, POOL_JOB_HEADER_SIZE - 5);
        for (char **a = j->argv; a && *a; a++)
                put_record(&w, 'a', *a, strlen(*a));
        for (char **e = j->environment; e && *e; e++)
                put_record(&w, 'e', *e, strlen(*e));
        for (size_t i = 0; i < j->n_credentials; i++) {
                put_record(&w, 'n', j->credentials[i].name, strlen(j->credentials[i].name));
                put_record(&w, 'd', j->credentials[i].data, j->credentials[i].size);
        }
        for (int i = 0; i < 8; i++)
                nproc[i] = (uint8_t) (j->nproc >> (8 * i));
        put_record(&w, 'p', nproc, sizeof(nproc));
        if (w.error) {
                erase_and_free(w.p, w.size);
                return w.error;
        }
        memcpy(w.p, POOL_JOB_MAGIC, 8);
        put_u32(w.p + 8, (uint32_t) (w.n - POOL_JOB_HEADER_SIZE));
        *ret = w.p;
        *ret_size = w.n;
        return 0;
}

int pool_job_header_parse(const uint8_t *header, size_t *ret_size) {
        uint32_t size;

        if (memcmp(header, POOL_JOB_MAGIC, 8) != 0)
                return -EBADMSG;
        size = get_u32(header + 8);
        if (size > POOL_JOB_SIZE_MAX - POOL_JOB_HEADER_SIZE)
                return -EBADMSG;
        *ret_size = size;
        return 0;
}

static int strv_add(char ***l, size_t *n, const uint8_t *data, size_t len) {
        char **nl;

        /* A string with a NUL inside would be cut short where it is used. */
        if (memchr(data, 0, len))
                return -EBADMSG;
        nl = realloc(*l, (*n + 2) * sizeof(char *));
        if (!nl)
                return -ENOMEM;
        *l = nl;
        nl[*n] = strndup((const char *) data, len);
        if (!nl[*n])
                return -ENOMEM;
        nl[++*n] = NULL;
        return 0;
}

static bool job_is_valid(const PoolJob *j) {
        if (!j->argv || j->argv[0][0] != '/' || j->nproc == 0)
                return false;
        for (char **e = j->environment; e && *e; e++) {
                const char *eq = strchr(*e, '=');
                if (!eq || !environment_name_is_valid(*e, (size_t) (eq - *e)))
                        return false;
        }
        for (size_t i = 0; i < j->n_credentials; i++) {
                if (!credential_name_is_valid(j->credentials[i].name) || !j->credentials[i].data)
                        return false;
                for (size_t k = 0; k < i; k++)
                        if (streq(j->credentials[i].name, j->credentials[k].name))
                                return false;
        }
        return true;
}

static int decode_record(PoolJob *j, size_t *n_argv, size_t *n_env, char type, const uint8_t *data, size_t len) {
        SbxCredential *c;

        switch (type) {
        case 'a':
                return strv_add(&j->argv, n_argv, data, len);
        case 'e':
                return strv_add(&j->environment, n_env, data, len);
        case 'n':
                if (len == 0 || memchr(data, 0, len) || j->n_credentials >= SBX_CREDENTIALS_MAX)
                        return -EBADMSG;
                c = realloc(j->credentials, (j->n_credentials + 1) * sizeof(*c));
                if (!c)
                        return -ENOMEM;
                j->credentials = c;
                c[j->n_credentials] = (SbxCredential) { .name = strndup((const char *) data, len) };
                if (!c[j->n_credentials++].name)
                        return -ENOMEM;
                return 0;
        case 'd':
                c = j->n_credentials > 0 ? &j->credentials[j->n_credentials - 1] : NULL;
                if (!c || c->data)
                        return -EBADMSG;
                /* One byte more, so that an empty credential still has data. */
                c->data = malloc(len + 1);
                if (!c->data)
                        return -ENOMEM;
                memcpy(c->data, data, len);
                c->size = len;
                return 0;
        case 'p':
                if (len != 8)
                        return -EBADMSG;
                j->nproc = 0;
                for (int i = 7; i >= 0; i--)
                        j->nproc = j->nproc << 8 | data[i];
                return 0;
        default:
                return -EBADMSG;
        }
}

int pool_job_decode(const uint8_t *data, size_t size, PoolJob *ret) {
        PoolJob j = {};
        size_t off = 0, n_argv = 0, n_env = 0;
        int r = 0;

        while (r >= 0 && off < size) {
                uint32_t len;
                if (size - off < 5) {
                        r = -EBADMSG;
                        break;
                }
                len = get_u32(data + off + 1);
                if (len > size - off - 5) {
                        r = -EBADMSG;
                        break;
                }
                r = decode_record(&j, &n_argv, &n_env, (char) data[off], data + off + 5, len);
                off += 5 + (size_t) len;
        }
        if (r >= 0 && !job_is_valid(&j))
                r = -EBADMSG;
        if (r < 0) {
                pool_job_done(&j);
                return r;
        }
        *ret = j;
        return 0;
}
