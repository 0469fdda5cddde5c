/* SPDX-License-Identifier: LGPL-2.1-or-later */
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

bool workspace_class_is_valid(SbxClass c) {
        return c == SBX_CLASS_TRUSTED || c == SBX_CLASS_STANDARD || c == SBX_CLASS_DEVCONTAINER ||
               c == SBX_CLASS_UNTRUSTED;
}
