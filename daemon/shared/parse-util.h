/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The one set of parsers for sizes, durations, numbers and booleans, shared by
 * sandboxd.conf, sandbox-launch's command line and sandboxctl's options. */

#include <stdint.h>

/* "512", "64K", "1.5G", "2TiB": bytes, base 1024. -EINVAL on bad format,
 * -ERANGE on overflow. */
int parse_size(const char *s, uint64_t *ret);
/* "30", "30s", "5min", "1h30min", "250ms": microseconds; a bare number is
 * seconds. -EINVAL on bad format, -ERANGE on overflow. */
int parse_duration_usec(const char *s, uint64_t *ret);
/* A plain decimal number without sign or suffix. */
int parse_uint64(const char *s, uint64_t *ret);

/* "yes"/"no", "true"/"false", "on"/"off", "1"/"0": 1 or 0, else -EINVAL. */
int parse_boolean(const char *s);
