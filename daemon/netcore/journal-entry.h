/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* One journal entry in journald's native protocol, as the bytes of one
 * datagram: KEY=value lines, and the length-prefixed form for a value with
 * a newline in it. Pure: the caller sends it (journal-batch.c). */

#include <stdarg.h>
#include <stddef.h>

/* MESSAGE, PRIORITY and SYSLOG_IDENTIFIER (when identifier is not NULL),
 * then the KEY, value string pairs of ap up to a NULL key (a NULL value is
 * empty), into buf. Returns the entry's length, which may exceed size (as
 * snprintf's does): then buf holds only a part and the caller needs a
 * bigger one. */
size_t journal_entry_formatv(char *buf, size_t size, int priority, const char *identifier, const char *message,
                             va_list ap);
size_t journal_entry_format(char *buf, size_t size, int priority, const char *identifier, const char *message, ...)
        __attribute__((sentinel));
