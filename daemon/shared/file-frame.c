/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <sys/stat.h>

#include "file-frame.h"
#include "util.h"

static const char * const file_type_names[_FILE_TYPE_MAX] = {
        [FILE_TYPE_REGULAR] = "file",
        [FILE_TYPE_DIRECTORY] = "directory",
        [FILE_TYPE_SYMLINK] = "symlink",
        [FILE_TYPE_FIFO] = "fifo",
        [FILE_TYPE_SOCKET] = "socket",
        [FILE_TYPE_CHAR_DEVICE] = "char-device",
        [FILE_TYPE_BLOCK_DEVICE] = "block-device",
        [FILE_TYPE_UNKNOWN] = "unknown",
};

/* The frame's one-letter type, in FileType's order. */
static const char file_type_chars[_FILE_TYPE_MAX + 1] = "fdlpscb?";

const char *file_type_to_string(FileType t) {
        return t >= 0 && t < _FILE_TYPE_MAX ? file_type_names[t] : NULL;
}

FileType file_type_from_mode(mode_t mode) {
        switch (mode & S_IFMT) {
        case S_IFREG:  return FILE_TYPE_REGULAR;
        case S_IFDIR:  return FILE_TYPE_DIRECTORY;
        case S_IFLNK:  return FILE_TYPE_SYMLINK;
        case S_IFIFO:  return FILE_TYPE_FIFO;
        case S_IFSOCK: return FILE_TYPE_SOCKET;
        case S_IFCHR:  return FILE_TYPE_CHAR_DEVICE;
        case S_IFBLK:  return FILE_TYPE_BLOCK_DEVICE;
        default:       return FILE_TYPE_UNKNOWN;
        }
}

void file_entry_from_stat(FileEntry *e, const char *name, const struct stat *st) {
        snprintf(e->name, sizeof(e->name), "%s", name);
        e->type = file_type_from_mode(st->st_mode);
        e->size = (uint64_t) st->st_size;
        e->mode = st->st_mode & 07777;
        e->mtime_usec = (uint64_t) st->st_mtim.tv_sec * USEC_PER_SEC + (uint64_t) st->st_mtim.tv_nsec / 1000;
        e->uid = st->st_uid;
        e->gid = st->st_gid;
}

int file_entry_write(FILE *f, const FileEntry *e) {
        size_t len = strlen(e->name);

        if (fprintf(f, "%c %" PRIu64 " %o %" PRIu64 " %" PRIu32 " %" PRIu32 " %zu:", file_type_chars[e->type],
                    e->size, (unsigned) e->mode, e->mtime_usec, e->uid, e->gid, len) < 0 ||
            fwrite(e->name, 1, len, f) != len || fputc('\n', f) == EOF)
                return -EIO;
        return 0;
}

/* A decimal (or octal) number ending at SEP within [*P, END): no sign, no
 * leading space, no overflow. */
static int parse_number(const char **p, const char *end, int base, char sep, uint64_t *ret) {
        uint64_t v = 0;
        const char *s = *p;

        if (s >= end || *s < '0' || *s > (base == 8 ? '7' : '9'))
                return s >= end ? 0 : -EBADMSG;
        for (; s < end && *s != sep; s++) {
                unsigned d = (unsigned) (*s - '0');
                if (*s < '0' || d >= (unsigned) base || v > (UINT64_MAX - d) / (uint64_t) base)
                        return -EBADMSG;
                v = v * (uint64_t) base + d;
        }
        if (s >= end)
                return 0;       /* not all there yet */
        *ret = v;
        *p = s + 1;
        return 1;
}

int file_entry_parse(const char *buf, size_t n, FileEntry *ret, size_t *consumed) {
        const char *p = buf + 2, *end = buf + n, *t;
        uint64_t size, mode, mtime, uid, gid, len;
        int r;

        *consumed = 0;
        if (n < 2)
                return 0;
        t = memchr(file_type_chars, buf[0], _FILE_TYPE_MAX);
        if (!t || buf[0] == 0 || buf[1] != ' ')
                return -EBADMSG;
#define NUM(base, sep, out) do { r = parse_number(&p, end, base, sep, out); if (r <= 0) return r; } while (0)
        NUM(10, ' ', &size);
        NUM(8, ' ', &mode);
        NUM(10, ' ', &mtime);
        NUM(10, ' ', &uid);
        NUM(10, ' ', &gid);
        NUM(10, ':', &len);
#undef NUM
        if (size > INT64_MAX || mode > 07777 || uid > UINT32_MAX || gid > UINT32_MAX ||
            len == 0 || len > SBX_FILES_NAME_MAX)
                return -EBADMSG;
        if ((size_t) (end - p) < len + 1)
                return 0;
        if (memchr(p, 0, len) || memchr(p, '/', len) || p[len] != '\n')
                return -EBADMSG;
        memcpy(ret->name, p, len);
        ret->name[len] = 0;
        ret->type = (FileType) (t - file_type_chars);
        ret->size = size;
        ret->mode = (uint32_t) mode;
        ret->mtime_usec = mtime;
        ret->uid = (uint32_t) uid;
        ret->gid = (uint32_t) gid;
        *consumed = (size_t) (p + len + 1 - buf);
        return 1;
}

const char * const file_error_names[] = {
        "FileNotFound",
        "FileExists",
        "NotADirectory",
        "IsADirectory",
        "NotRegularFile",
        "PathOutsideHome",
        "PermissionDenied",
        "DiskFull",
        "DirectoryNotEmpty",
        "TooManyEntries",
        "InvalidArgument",
        "FileError",
        NULL,
};

const char *file_error_from_errno(int err) {
        switch (err) {
        case ENOENT:    return "FileNotFound";
        case EEXIST:    return "FileExists";
        case ENOTDIR:   return "NotADirectory";
        case EISDIR:    return "IsADirectory";
        case ENXIO:     /* a FIFO without reader, opened without blocking */
        case ENODEV:
        case EOPNOTSUPP:
                return "NotRegularFile";
        case ELOOP:     /* a symlink: never followed */
        case EXDEV:     /* out of the home, or across a mount */
                return "PathOutsideHome";
        case EACCES:
        case EPERM:
        case EROFS:
                return "PermissionDenied";
        case ENOSPC:
        case EDQUOT:
        case EFBIG:
                return "DiskFull";
        case ENOTEMPTY: return "DirectoryNotEmpty";
        case E2BIG:     return "TooManyEntries";
        case EINVAL:
        case ENAMETOOLONG:
                return "InvalidArgument";
        default:        return "FileError";
        }
}

int file_status_parse(const char *line, FileStatus *ret) {
        const char *p;
        char *end;

        if (!startswith(line, SBX_FILES_STATUS_PREFIX) || strlen(line) >= SBX_FILES_STATUS_MAX)
                return -EBADMSG;
        p = line + strlen(SBX_FILES_STATUS_PREFIX);
        *ret = (FileStatus) {};
        if (startswith(p, "open ") || startswith(p, "done ")) {
                ret->kind = p[0] == 'o' ? FILE_STATUS_OPEN : FILE_STATUS_DONE;
                p += 5;
                if (*p < '0' || *p > '9')
                        return -EBADMSG;
                errno = 0;
                unsigned long long v = strtoull(p, &end, 10);
                if (errno != 0 || v > INT64_MAX)
                        return -EBADMSG;
                ret->value = v;
                if (*end == 0)
                        return 0;
                if (ret->kind != FILE_STATUS_OPEN || *end != ' ' || strlen(end + 1) == 0 ||
                    strlen(end + 1) > SBX_FILES_NAME_MAX || strchr(end + 1, '/'))
                        return -EBADMSG;
                strcpy(ret->temp, end + 1);
                return 0;
        }
        if (!startswith(p, "error "))
                return -EBADMSG;
        p += 6;
        const char *colon = strchr(p, ':');
        if (!colon || colon[1] != ' ')
                return -EBADMSG;
        for (size_t i = 0; file_error_names[i]; i++)
                if (strlen(file_error_names[i]) == (size_t) (colon - p) &&
                    strncmp(file_error_names[i], p, (size_t) (colon - p)) == 0)
                        ret->error = file_error_names[i];
        if (!ret->error)
                return -EBADMSG;
        ret->kind = FILE_STATUS_ERROR;
        snprintf(ret->message, sizeof(ret->message), "%s", colon + 2);
        return 0;
}
