/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <sys/stat.h>

#include "ns-ident.h"
#include "parse-util.h"
#include "util.h"

static const char * const kind_names[_NS_KIND_MAX] = {
        [NS_NET] = "net",
        [NS_IPC] = "ipc",
        [NS_MNT] = "mnt",
};

static const char * const kind_descriptions[_NS_KIND_MAX] = {
        [NS_NET] = "network",
        [NS_IPC] = "IPC",
        [NS_MNT] = "mount",
};

const char *ns_kind_to_string(NsKind k) {
        return k < _NS_KIND_MAX ? kind_names[k] : NULL;
}

const char *ns_kind_description(NsKind k) {
        return k < _NS_KIND_MAX ? kind_descriptions[k] : NULL;
}

int ns_id_set_read(const char *proc, unsigned mask, NsIdSet *ret) {
        NsIdSet s = {};

        for (NsKind k = 0; k < _NS_KIND_MAX; k++) {
                char path[64];
                struct stat st;

                if (!(mask & NS_MASK(k)))
                        continue;
                snprintf(path, sizeof(path), "/proc/%s/ns/%s", proc, kind_names[k]);
                if (stat(path, &st) < 0)
                        return -errno;
                s.id[k] = (NsId) { .dev = (uint64_t) st.st_dev, .ino = (uint64_t) st.st_ino };
                s.mask |= NS_MASK(k);
        }
        *ret = s;
        return 0;
}

int ns_id_parse(const char *s, NsId *ret) {
        const char *colon = s ? strchr(s, ':') : NULL;
        char dev[32];
        NsId id;

        if (!colon || (size_t) (colon - s) >= sizeof(dev))
                return -EINVAL;
        snprintf(dev, sizeof(dev), "%.*s", (int) (colon - s), s);
        if (parse_uint64(dev, &id.dev) < 0 || parse_uint64(colon + 1, &id.ino) < 0 || id.ino == 0)
                return -EINVAL;
        *ret = id;
        return 0;
}

int ns_id_set_format(const NsIdSet *s, char *buf, size_t n) {
        size_t used = 0;

        if (n == 0)
                return -ENOBUFS;
        buf[0] = 0;
        for (NsKind k = 0; k < _NS_KIND_MAX; k++) {
                int w;

                if (!(s->mask & NS_MASK(k)))
                        continue;
                w = snprintf(buf + used, n - used, "%s%s=%" PRIu64 ":%" PRIu64, used ? " " : "", kind_names[k],
                             s->id[k].dev, s->id[k].ino);
                if (w < 0 || (size_t) w >= n - used)
                        return -ENOBUFS;
                used += (size_t) w;
        }
        return 0;
}

int ns_id_set_parse(const char *s, unsigned required, NsIdSet *ret) {
        NsIdSet set = {};

        while (s && *s) {
                char word[96];
                const char *eq;
                size_t len = strcspn(s, " ");
                NsKind k;

                if (len == 0 || len >= sizeof(word))
                        return -EBADMSG;
                snprintf(word, sizeof(word), "%.*s", (int) len, s);
                s += len;
                if (*s == ' ' && *++s == 0)
                        return -EBADMSG;        /* a trailing blank: not what the probe writes */
                eq = strchr(word, '=');
                if (!eq)
                        return -EBADMSG;
                for (k = 0; k < _NS_KIND_MAX; k++)
                        if (strlen(kind_names[k]) == (size_t) (eq - word) && startswith(word, kind_names[k]))
                                break;
                if (k == _NS_KIND_MAX || (set.mask & NS_MASK(k)) || !(required & NS_MASK(k)))
                        return -EBADMSG;
                if (ns_id_parse(eq + 1, &set.id[k]) < 0)
                        return -EBADMSG;
                set.mask |= NS_MASK(k);
        }
        if (set.mask != required)
                return -EBADMSG;
        *ret = set;
        return 0;
}

int ns_id_set_compare(const NsIdSet *own, const NsIdSet *host, unsigned mask, char *reason, size_t n) {
        char names[64] = "", ids[192] = "";
        unsigned shared = 0, missing = 0, count = 0, done = 0;

        for (NsKind k = 0; k < _NS_KIND_MAX; k++) {
                if (!(mask & NS_MASK(k)))
                        continue;
                if (!(own->mask & host->mask & NS_MASK(k)))
                        missing |= NS_MASK(k);
                else if (own->id[k].dev == host->id[k].dev && own->id[k].ino == host->id[k].ino) {
                        shared |= NS_MASK(k);
                        count++;
                }
        }
        if (missing) {
                for (NsKind k = 0; k < _NS_KIND_MAX; k++)
                        if (missing & NS_MASK(k))
                                snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
                                         names[0] ? ", " : "", kind_names[k]);
                snprintf(reason, n, "the identities of the %s namespace(s) are unknown", names);
                return -EHOSTDOWN;
        }
        if (!shared)
                return 0;
        for (NsKind k = 0; k < _NS_KIND_MAX; k++) {
                if (!(shared & NS_MASK(k)))
                        continue;
                done++;
                snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
                         done == 1 ? "" : done == count ? " and " : ", ", kind_descriptions[k]);
                snprintf(ids + strlen(ids), sizeof(ids) - strlen(ids), "%s%s=%" PRIu64 ":%" PRIu64,
                         ids[0] ? ", " : "", kind_names[k], own->id[k].dev, own->id[k].ino);
        }
        snprintf(reason, n, "the %s namespace%s %s PID 1's (%s)", names, count > 1 ? "s" : "",
                 count > 1 ? "are" : "is", ids);
        return -EHOSTDOWN;
}
