/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "journal-entry.h"

typedef struct Out {
        char *buf;
        size_t size, len;
} Out;

static void out_bytes(Out *o, const void *p, size_t n) {
        if (o->len < o->size)
                memcpy(o->buf + o->len, p, n < o->size - o->len ? n : o->size - o->len);
        o->len += n;
}

static void out_field(Out *o, const char *key, const char *value) {
        size_t n = strlen(value);

        out_bytes(o, key, strlen(key));
        if (!memchr(value, '\n', n)) {
                out_bytes(o, "=", 1);
                out_bytes(o, value, n);
        } else {
                /* KEY, newline, the value's length as 64-bit little endian, the value. */
                uint8_t le[8];
                for (int i = 0; i < 8; i++)
                        le[i] = (uint8_t) ((uint64_t) n >> (8 * i));
                out_bytes(o, "\n", 1);
                out_bytes(o, le, sizeof(le));
                out_bytes(o, value, n);
        }
        out_bytes(o, "\n", 1);
}

size_t journal_entry_formatv(char *buf, size_t size, int priority, const char *identifier, const char *message,
                             va_list ap) {
        Out o = { .buf = buf, .size = size };
        char prio[16];

        snprintf(prio, sizeof(prio), "%i", priority);
        out_field(&o, "MESSAGE", message);
        out_field(&o, "PRIORITY", prio);
        if (identifier)
                out_field(&o, "SYSLOG_IDENTIFIER", identifier);
        for (const char *key = va_arg(ap, const char *); key; key = va_arg(ap, const char *)) {
                const char *value = va_arg(ap, const char *);
                out_field(&o, key, value ?: "");
        }
        return o.len;
}

size_t journal_entry_format(char *buf, size_t size, int priority, const char *identifier, const char *message, ...) {
        va_list ap;

        va_start(ap, message);
        size_t n = journal_entry_formatv(buf, size, priority, identifier, message, ap);
        va_end(ap);
        return n;
}
