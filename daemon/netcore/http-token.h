/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* A tchar of RFC 9110 5.6.2, the bytes of a token such as a header's name:
 * ASCII letters and digits and "!#$%&'*+-.^_`|~", never NUL (which strchr()
 * would find at the end of the list). Pure, for the egress core and sandboxd
 * alike. */
static inline bool http_is_tchar(uint8_t c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               (c && strchr("!#$%&'*+-.^_`|~", c));
}
