/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <inttypes.h>
#include <sys/stat.h>
#include <unistd.h>

#include "parse-util.h"
#include "workspace.h"

#define META_MAGIC "sandboxd-workspace 1"

int workspace_new(Workspace **ret, const char *key) {
        _cleanup_(workspace_freep) Workspace *ws = NULL;
        const char *dot;

        if (!workspace_key_is_valid(key))
                return -EINVAL;
        ws = calloc(1, sizeof(*ws));
        if (!ws)
                return -ENOMEM;
        *ws = (Workspace) { .owner = (uid_t) -1, .class = SBX_CLASS_TRUSTED };
        dot = strchr(key, '.');
        ws->name = strdup(key);
        ws->label = dot ? strndup(key, (size_t) (dot - key)) : strdup(key);
        /* '.' is no object path character: "_U" (no name has capitals). */
        if (!ws->name || !ws->label ||
            asprintf(&ws->object_path, "/org/sandboxd1/workspace/%s%s%s", ws->label, dot ? "_U" : "",
                     dot ? dot + 1 : "") < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(ws);
        return 0;
}

Workspace *workspace_free(Workspace *ws) {
        if (!ws)
                return NULL;
        free(ws->name);
        free(ws->label);
        free(ws->object_path);
        free(ws->worker_id);
        free(ws);
        return NULL;
}

static int workspace_file(const char *root, const char *name, const char *suffix, char **ret) {
        if (!workspace_key_is_valid(name))
                return -EINVAL;
        return asprintf(ret, "%s/%s%s", root, name, suffix) < 0 ? -ENOMEM : 0;
}

int workspace_image_path(const char *root, const char *name, char **ret) {
        return workspace_file(root, name, ".img", ret);
}

uint64_t workspace_size_used(const char *root, const Workspace *ws) {
        _cleanup_free_ char *img = NULL;
        struct stat st;

        if (workspace_image_path(root, ws->name, &img) < 0 || stat(img, &st) < 0)
                return 0;
        return (uint64_t) st.st_blocks * 512;
}

int workspace_save(const char *root, const Workspace *ws) {
        _cleanup_free_ char *path = NULL, *tmp = NULL;
        _cleanup_fclose_ FILE *f = NULL;
        int fd, r;

        r = workspace_file(root, ws->name, ".meta", &path);
        if (r < 0)
                return r;
        r = workspace_file(root, ws->name, ".meta.tmp", &tmp);
        if (r < 0)
                return r;
        fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return -errno;
        f = fdopen(fd, "w");
        if (!f) {
                r = -errno;
                close(fd);
                (void) unlink(tmp);
                return r;
        }
        fprintf(f, "%s\nowner=%u\nsize-max=%" PRIu64 "\nclass=%s\ncreated-usec=%" PRIu64 "\nlast-used-usec=%" PRIu64
                "\nend\n", META_MAGIC, (unsigned) ws->owner, ws->size_max, sbx_class_to_string(ws->class),
                ws->created_usec, ws->last_used_usec);
        r = fflush(f) == 0 && fsync(fileno(f)) == 0 ? 0 : -errno;
        if (r >= 0 && rename(tmp, path) < 0)
                r = -errno;
        if (r < 0)
                (void) unlink(tmp);
        return r;
}

static int parse_meta_line(Workspace *ws, const char *key, const char *value, bool *end) {
        uint64_t v;

        if (streq(key, "end")) {
                *end = true;
                return 0;
        }
        if (streq(key, "class")) {
                ws->class = sbx_class_from_string(value);
                return workspace_class_is_valid(ws->class) ? 0 : -EINVAL;
        }
        if (parse_uint64(value, &v) < 0)
                return -EINVAL;
        if (streq(key, "owner")) {
                if (v >= (uint64_t) (uid_t) -1)
                        return -EINVAL;
                ws->owner = (uid_t) v;
        } else if (streq(key, "size-max"))
                ws->size_max = v;
        else if (streq(key, "created-usec"))
                ws->created_usec = v;
        else if (streq(key, "last-used-usec"))
                ws->last_used_usec = v;
        else
                return -EINVAL;
        return 0;
}

int workspace_load(const char *root, const char *name, Workspace **ret) {
        _cleanup_(workspace_freep) Workspace *ws = NULL;
        _cleanup_free_ char *path = NULL, *line = NULL;
        _cleanup_fclose_ FILE *f = NULL;
        size_t cap = 0;
        bool end = false, magic = false;
        int r;

        r = workspace_file(root, name, ".meta", &path);
        if (r < 0)
                return r;
        r = workspace_new(&ws, name);
        if (r < 0)
                return r;
        f = fopen(path, "re");
        if (!f)
                return -errno;
        while (!end && getline(&line, &cap, f) > 0) {
                char *eq;

                line[strcspn(line, "\n")] = 0;
                if (!magic) {
                        if (!streq(line, META_MAGIC))
                                return -EINVAL;
                        magic = true;
                        continue;
                }
                eq = strchr(line, '=');
                if (eq)
                        *eq = 0;
                if (!eq && !streq(line, "end"))
                        return -EINVAL;
                r = parse_meta_line(ws, line, eq ? eq + 1 : "", &end);
                if (r < 0)
                        return r;
        }
        /* A file cut short by a crash is not a workspace we can vouch for. */
        if (!end || ws->owner == (uid_t) -1 || ws->size_max < SBX_WORKSPACE_SIZE_MIN ||
            ws->size_max > SBX_WORKSPACE_SIZE_MAX)
                return -EINVAL;
        /* A key's UID is its owner's (root's key has none; one made before
         * names were per owner has none either, whoever owns it). */
        if (strchr(name, '.') && strtoul(strchr(name, '.') + 1, NULL, 10) != (unsigned long) ws->owner)
                return -EINVAL;
        *ret = TAKE_PTR(ws);
        return 0;
}

int workspace_image_create(const char *root, const Workspace *ws) {
        _cleanup_free_ char *img = NULL, *meta = NULL;
        int fd, r;

        r = workspace_image_path(root, ws->name, &img);
        if (r < 0)
                return r;
        r = workspace_file(root, ws->name, ".meta", &meta);
        if (r < 0)
                return r;
        if (access(meta, F_OK) == 0)
                return -EEXIST;
        fd = open(img, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return -errno;
        r = ftruncate(fd, (off_t) ws->size_max) < 0 ? -errno : 0;
        close(fd);
        if (r < 0)
                (void) unlink(img);
        return r;
}

int workspace_remove(const char *root, const char *name) {
        _cleanup_free_ char *img = NULL, *meta = NULL;
        int r;

        r = workspace_image_path(root, name, &img);
        if (r < 0)
                return r;
        r = workspace_file(root, name, ".meta", &meta);
        if (r < 0)
                return r;
        /* The metadata last: a crash in between leaves a workspace whose image
         * is gone, which the next start-up reports, rather than an image
         * nothing accounts for. */
        if (unlink(img) < 0 && errno != ENOENT)
                return -errno;
        if (unlink(meta) < 0 && errno != ENOENT)
                return -errno;
        return 0;
}
