/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workspace-name.h"

bool workspace_name_is_valid(const char *name) {
        size_t n = name ? strlen(name) : 0;

        if (n == 0 || n > SBX_WORKSPACE_NAME_MAX)
                return false;
        for (size_t i = 0; i < n; i++) {
                char c = name[i];
                bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
                if (!alnum && (i == 0 || (c != '-' && c != '_')))
                        return false;
        }
        return true;
}

bool workspace_key_is_valid(const char *key) {
        const char *dot = key ? strchr(key, '.') : NULL;
        char name[SBX_WORKSPACE_NAME_MAX + 1];
        size_t n;

        if (!dot)
                return workspace_name_is_valid(key);
        n = (size_t) (dot - key);
        if (n == 0 || n > SBX_WORKSPACE_NAME_MAX)
                return false;
        memcpy(name, key, n);
        name[n] = 0;
        if (!workspace_name_is_valid(name))
                return false;
        /* A UID other than root's, without leading zeros: one key each. */
        n = strlen(dot + 1);
        if (n == 0 || n > 10 || dot[1] == '0')
                return false;
        for (const char *c = dot + 1; *c; c++)
                if (*c < '0' || *c > '9')
                        return false;
        return strtoull(dot + 1, NULL, 10) < (unsigned long long) (uid_t) -1;
}

int workspace_key_make(const char *name, uid_t owner, char **ret) {
        int n;

        if (!workspace_name_is_valid(name))
                return -EINVAL;
        n = owner == 0 ? asprintf(ret, "%s", name) : asprintf(ret, "%s.%u", name, (unsigned) owner);
        return n < 0 ? -ENOMEM : 0;
}

bool workspace_class_is_valid(SbxClass c) {
        return c == SBX_CLASS_TRUSTED || c == SBX_CLASS_STANDARD || c == SBX_CLASS_DEVCONTAINER ||
               c == SBX_CLASS_UNTRUSTED;
}
