/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Request paths as the credential broker compares them; sandboxd checks a
 * spec's Paths with the same code, so a prefix it accepts is one the proxy
 * can match. */

#include <stdbool.h>
#include <stddef.h>

/* An absolute path of RFC 3986 path characters without ".", ".." or empty
 * segments and without %2e, %2f or an encoded control character, which an upstream that decodes first
 * would resolve past an allowed prefix. Shared with sandboxd's spec check. */
bool broker_path_is_valid(const char *path, size_t n);

/* PREFIX ending in '/' matches what starts with it; otherwise PATH must be
 * PREFIX or continue it with '/'. */
bool broker_path_allowed(const char *path, size_t n, const char *prefix);
