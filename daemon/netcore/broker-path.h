/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Request paths as the credential broker compares them; sandboxd checks a
 * spec's Paths with the same code, so a prefix it accepts is one the proxy
 * can match. */

#include <stdbool.h>
#include <stddef.h>

/* The broker's path rule, for a request's path and for a service's base
 * and Paths prefixes alike: an absolute path of RFC 3986 path characters
 * without ';', whose escapes are well-formed (either case) and decode to
 * printable ASCII other than / \ . % ; ? #, with no empty segment but a
 * last one and no segment made only of dots and encoded spaces.
 *
 * So decoding the path once or twice, reading '\' as '/', dropping path
 * parameters and removing dot segments all leave its segments as they are:
 * whichever of those an upstream does, a path under a prefix stays under
 * it (broker_path_allowed() compares the bytes as sent, so "/v%31/" is not
 * under "/v1/"). */
bool broker_path_is_valid(const char *path, size_t n);

/* A request's query (after the '?'): visible ASCII but '#' and '\', with
 * no piece between '/' or '?' made only of dots. Its escapes are the API's
 * data, not judged. */
bool broker_query_is_valid(const char *query, size_t n);

/* PREFIX ending in '/' matches what starts with it; otherwise PATH must be
 * PREFIX or continue it with '/'. */
bool broker_path_allowed(const char *path, size_t n, const char *prefix);
