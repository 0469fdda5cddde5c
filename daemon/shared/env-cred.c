/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "env-cred.h"
#include "spec.h"
#include "util.h"

bool credential_name_is_reserved(const char *name) {
        return name && startswith(name, SBX_RESERVED_CREDENTIAL_PREFIX);
}

bool environment_name_is_valid(const char *s, size_t n) {
        if (n == 0 || n > 255 || (!isalpha((unsigned char) s[0]) && s[0] != '_'))
                return false;
        for (size_t i = 1; i < n; i++)
                if (!isalnum((unsigned char) s[i]) && s[i] != '_')
                        return false;
        return true;
}

int env_credential_encode(char * const *env, uint8_t **ret, size_t *ret_size) {
        size_t size = 0, at = 0;
        uint8_t *buf;

        for (size_t i = 0; env && env[i]; i++)
                size += strlen(env[i]) + 1;
        if (size == 0) {
                *ret = NULL;
                *ret_size = 0;
                return 0;
        }
        buf = malloc(size);
        if (!buf)
                return -ENOMEM;
        for (size_t i = 0; env[i]; i++) {
                size_t n = strlen(env[i]) + 1;
                memcpy(buf + at, env[i], n);
                at += n;
        }
        *ret = buf;
        *ret_size = size;
        return 0;
}

static bool entry_is_valid(const char *e, size_t n) {
        const char *eq = memchr(e, '=', n);
        return eq && environment_name_is_valid(e, (size_t) (eq - e));
}

int env_credential_decode(const uint8_t *data, size_t size, char ***ret) {
        _cleanup_strv_free_ char **env = NULL;
        size_t n = 0, count = 0;

        if (size > 0 && data[size - 1] != 0)
                return -EBADMSG;
        for (size_t i = 0; i < size; i++)
                count += data[i] == 0;
        if (count > SBX_ENV_MAX)
                return -EBADMSG;
        env = calloc(count + 1, sizeof(char *));
        if (!env)
                return -ENOMEM;
        for (size_t at = 0; at < size; n++) {
                const char *e = (const char *) data + at;
                size_t len = strlen(e);

                if (!entry_is_valid(e, len))
                        return -EBADMSG;
                env[n] = strdup(e);
                if (!env[n])
                        return -ENOMEM;
                at += len + 1;
        }
        *ret = TAKE_PTR(env);
        return 0;
}

int env_credential_dir(const char *id, char **ret) {
        if (isempty(id) || strchr(id, '/') || streq(id, ".") || streq(id, ".."))
                return -EINVAL;
        return asprintf(ret, SBX_UNIT_CREDENTIALS_ROOT "/sandbox-%s.service", id) < 0 ? -ENOMEM : 0;
}

static int read_regular(int fd, uint8_t **ret, size_t *ret_size) {
        struct stat st;
        uint8_t *buf;
        size_t at = 0;

        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return -EBADMSG;
        if ((uint64_t) st.st_size > SBX_CREDENTIAL_SIZE_MAX)
                return -EFBIG;
        /* One byte more than the file claims, so growth shows as EFBIG. */
        buf = malloc((size_t) st.st_size + 1);
        if (!buf)
                return -ENOMEM;
        for (;;) {
                ssize_t k = read(fd, buf + at, (size_t) st.st_size + 1 - at);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0) {
                        int r = -errno;
                        erase_and_free(buf, (size_t) st.st_size + 1);
                        return r;
                }
                if (k == 0)
                        break;
                at += (size_t) k;
                if (at > (size_t) st.st_size) {
                        erase_and_free(buf, (size_t) st.st_size + 1);
                        return -EFBIG;
                }
        }
        *ret = buf;
        *ret_size = at;
        return 0;
}

int env_credential_read(const char *dir, char ***ret) {
        _cleanup_free_ char *path = NULL;
        _cleanup_close_ int fd = -1;
        uint8_t *data = NULL;
        size_t size = 0;
        int r;

        if (asprintf(&path, "%s/" SBX_ENV_CREDENTIAL, dir) < 0)
                return -ENOMEM;
        /* O_NONBLOCK: a FIFO planted here must not hang the caller. */
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return errno == ELOOP ? -EBADMSG : -errno;
        r = read_regular(fd, &data, &size);
        if (r < 0)
                return r;
        r = env_credential_decode(data, size, ret);
        erase_and_free(data, size);
        return r;
}
