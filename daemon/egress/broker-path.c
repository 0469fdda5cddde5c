/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <string.h>

#include "broker-path.h"

static bool path_char_is_valid(const char *p, size_t left) {
        unsigned char c = (unsigned char) *p;

        /* Encoded control characters too: an upstream that decodes the path
         * into a log line or a header would get a CR or LF. */
        if (c == '%')
                return left >= 3 && isxdigit((unsigned char) p[1]) && isxdigit((unsigned char) p[2]) &&
                       p[1] != '0' && p[1] != '1' && !(p[1] == '7' && (p[2] == 'f' || p[2] == 'F')) &&
                       !(p[1] == '2' && (p[2] == 'e' || p[2] == 'E' || p[2] == 'f' || p[2] == 'F'));
        return isalnum(c) || (c && strchr("-._~!$&'()*+,;=:@/", c));
}

bool broker_path_is_valid(const char *path, size_t n) {
        size_t seg_start = 1;

        if (n == 0 || path[0] != '/')
                return false;
        for (size_t i = 0; i < n; i++)
                if (!path_char_is_valid(path + i, n - i))
                        return false;
        for (size_t i = 1; i <= n; i++) {
                if (i < n && path[i] != '/')
                        continue;
                size_t len = i - seg_start;
                if (len == 0 && i < n)
                        return false;           /* "//": an empty segment */
                if ((len == 1 && path[seg_start] == '.') ||
                    (len == 2 && path[seg_start] == '.' && path[seg_start + 1] == '.'))
                        return false;
                seg_start = i + 1;
        }
        return true;
}

bool broker_path_allowed(const char *path, size_t n, const char *prefix) {
        size_t pn = strlen(prefix);

        if (n < pn || strncmp(path, prefix, pn) != 0)
                return false;
        return pn > 0 && (prefix[pn - 1] == '/' || n == pn || path[pn] == '/');
}
