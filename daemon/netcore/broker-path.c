/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <string.h>

#include "broker-path.h"

static int hex_value(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

/* One character of a path at P (LEFT bytes left): its length (3 for an
 * escape), its decoded byte in *ret, or 0 for a malformed escape or a byte
 * other than an RFC 3986 pchar but ';'. */
static size_t path_char(const char *p, size_t left, unsigned char *ret) {
        unsigned char c = (unsigned char) p[0];
        int hi, lo;

        if (c == '%') {
                if (left < 3 || (hi = hex_value(p[1])) < 0 || (lo = hex_value(p[2])) < 0)
                        return 0;
                *ret = (unsigned char) (hi << 4 | lo);
                return 3;
        }
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              (c && strchr("-._~!$&'()*+,=:@", c))))
                return 0;
        *ret = c;
        return 1;
}

/* What an escape in the path may not decode to: whatever some upstream
 * would take for structure rather than data. '/' and '\' separate segments,
 * '.' makes dot segments, '%' is a second round of decoding, ';' starts
 * path parameters (servlet containers drop ";..." so "..;" is ".."), '?'
 * and '#' end the path for an upstream that decodes before it splits.
 * Controls and DEL would end a header or log line; bytes over 0x7f are
 * non-ASCII, where overlong UTF-8, Unicode normalisation (U+FF0E, U+FF0F)
 * and best-fit code pages (U+00A5 to '\') make more dots and slashes than
 * a list could name. */
static bool escape_is_data(unsigned char c) {
        return c >= 0x20 && c < 0x7f && !strchr("/\\.%;?#", c);
}

bool broker_path_is_valid(const char *path, size_t n) {
        size_t seg_len = 0;
        bool seg_blank = true;          /* only '.' and ' ' so far */

        if (n == 0 || path[0] != '/')
                return false;
        for (size_t i = 1; i <= n;) {
                unsigned char c;
                size_t k;

                if (i == n || path[i] == '/') {
                        /* "//" is a network path to some readers; a segment of
                         * dots (and spaces, which Windows trims) is a dot segment
                         * to some upstream. An empty last segment is "/v1/". */
                        if (seg_len == 0 ? i < n : seg_blank)
                                return false;
                        seg_len = 0;
                        seg_blank = true;
                        i++;
                        continue;
                }
                k = path_char(path + i, n - i, &c);
                if (k == 0 || (k == 3 && !escape_is_data(c)))
                        return false;
                seg_len++;
                seg_blank = seg_blank && (c == '.' || c == ' ');
                i += k;
        }
        return true;
}

bool broker_query_is_valid(const char *query, size_t n) {
        size_t piece_len = 0;
        bool piece_dots = true;

        for (size_t i = 0; i <= n; i++) {
                unsigned char c = i < n ? (unsigned char) query[i] : 0;

                /* A piece between '/' or '?' that is all dots: a path in the
                 * query for an upstream that resolves the whole target. */
                if (i == n || c == '/' || c == '?') {
                        if (piece_len > 0 && piece_dots)
                                return false;
                        piece_len = 0;
                        piece_dots = true;
                        continue;
                }
                /* Visible ASCII: clients send '[', '{', '|' and a stray '%'
                 * in queries unencoded, and escapes are the API's data. */
                if (c <= ' ' || c >= 0x7f || c == '#' || c == '\\')
                        return false;
                piece_len++;
                piece_dots = piece_dots && c == '.';
        }
        return true;
}

bool broker_path_allowed(const char *path, size_t n, const char *prefix) {
        size_t pn = strlen(prefix);

        if (n < pn || strncmp(path, prefix, pn) != 0)
                return false;
        return pn > 0 && (prefix[pn - 1] == '/' || n == pn || path[pn] == '/');
}
