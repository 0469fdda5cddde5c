/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "broker-secret.h"
#include "util.h"

#define SECRET_SEALS (F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE)

int broker_secret_memfd(const uint8_t *data, size_t size) {
        _cleanup_close_ int fd = -1;
        size_t done = 0;

        if (!data || size == 0)
                return -EINVAL;
        fd = memfd_create("sandboxd-secret", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (fd < 0)
                return -errno;
        while (done < size) {
                ssize_t k = write(fd, data + done, size - done);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                done += (size_t) k;
        }
        if (fcntl(fd, F_ADD_SEALS, SECRET_SEALS) < 0)
                return -errno;
        return TAKE_FD(fd);
}

int broker_secret_read(int fd, size_t max, uint8_t **ret, size_t *ret_size) {
        struct stat st;
        uint8_t *buf;
        size_t done = 0;
        int seals;

        /* An unsealed fd under our name could have been written to by whoever
         * made it: only what sandboxd itself sealed is a secret it stored. */
        seals = fcntl(fd, F_GET_SEALS);
        if (seals < 0 || (seals & SECRET_SEALS) != SECRET_SEALS)
                return -EPERM;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (st.st_size <= 0)
                return -EBADMSG;
        if ((uint64_t) st.st_size > max)
                return -E2BIG;
        buf = malloc((size_t) st.st_size);
        if (!buf)
                return -ENOMEM;
        while (done < (size_t) st.st_size) {
                ssize_t k = pread(fd, buf + done, (size_t) st.st_size - done, (off_t) done);
                if (k <= 0) {
                        int r = k < 0 && errno != EINTR ? -errno : k == 0 ? -EBADMSG : 0;
                        if (r == 0)
                                continue;
                        erase_and_free(buf, (size_t) st.st_size);
                        return r;
                }
                done += (size_t) k;
        }
        *ret = buf;
        *ret_size = done;
        return 0;
}

int broker_secret_fdname(const char *id, const char *name, char *buf, size_t size) {
        int n = snprintf(buf, size, "secret-%s-%s", id, name);
        return n < 0 || (size_t) n >= size ? -ENAMETOOLONG : 0;
}
