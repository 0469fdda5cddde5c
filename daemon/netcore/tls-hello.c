/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <string.h>

#include "tls-hello.h"

#define RECORD_HEADER 5
#define RECORD_PAYLOAD_MAX 16384
#define HANDSHAKE_HEADER 4
#define CONTENT_HANDSHAKE 0x16
#define HANDSHAKE_CLIENT_HELLO 0x01

/* A bounds-checked reader over a byte range: every get fails once the
 * range is exhausted, so the parsing code reads straight through. */
typedef struct Cursor {
        const uint8_t *p;
        size_t left;
        bool bad;
} Cursor;

static bool take(Cursor *c, size_t n, const uint8_t **ret) {
        if (c->bad || c->left < n) {
                c->bad = true;
                return false;
        }
        if (ret)
                *ret = c->p;
        c->p += n;
        c->left -= n;
        return true;
}

static uint32_t get_uint(Cursor *c, size_t n) {
        const uint8_t *p;
        uint32_t v = 0;
        if (!take(c, n, &p))
                return 0;
        for (size_t i = 0; i < n; i++)
                v = (v << 8) | p[i];
        return v;
}

/* A sub-cursor over the next `n` bytes, advancing the parent past them. */
static Cursor sub(Cursor *c, size_t n) {
        const uint8_t *p;
        if (!take(c, n, &p))
                return (Cursor) { .bad = true };
        return (Cursor) { .p = p, .left = n };
}

static TlsHelloResult parse_server_name(Cursor ext, TlsHello *h) {
        Cursor list = sub(&ext, get_uint(&ext, 2));
        bool seen = false;

        if (ext.bad || ext.left != 0 || list.left == 0)
                return TLS_HELLO_MALFORMED;
        while (list.left > 0) {
                uint8_t type = (uint8_t) get_uint(&list, 1);
                Cursor name = sub(&list, get_uint(&list, 2));
                if (list.bad)
                        return TLS_HELLO_MALFORMED;
                if (type != 0)
                        continue;   /* only host_name (0) is defined; skip the rest */
                if (seen || name.left == 0 || name.left > TLS_SNI_MAX)
                        return TLS_HELLO_MALFORMED;   /* RFC 6066: one host_name at most */
                for (size_t i = 0; i < name.left; i++)
                        if (name.p[i] <= 0x20 || name.p[i] >= 0x7f)
                                return TLS_HELLO_MALFORMED;
                memcpy(h->sni, name.p, name.left);
                h->sni[name.left] = 0;
                seen = true;
        }
        h->has_sni = seen;
        return TLS_HELLO_OK;
}

static TlsHelloResult parse_client_hello(Cursor c, TlsHello *h) {
        Cursor exts;
        bool seen_sni = false;

        h->legacy_version = (uint16_t) get_uint(&c, 2);
        take(&c, 32, NULL);                                   /* random */
        size_t sid = get_uint(&c, 1);
        if (sid > 32)
                return TLS_HELLO_MALFORMED;
        take(&c, sid, NULL);
        size_t suites = get_uint(&c, 2);
        if (suites < 2 || suites % 2)
                return TLS_HELLO_MALFORMED;
        take(&c, suites, NULL);
        size_t comp = get_uint(&c, 1);
        if (comp < 1)
                return TLS_HELLO_MALFORMED;
        take(&c, comp, NULL);
        if (c.bad)
                return TLS_HELLO_MALFORMED;
        if (c.left == 0)
                return TLS_HELLO_NO_SNI;                      /* a hello without extensions */
        exts = sub(&c, get_uint(&c, 2));
        if (c.bad || c.left != 0)
                return TLS_HELLO_MALFORMED;

        while (exts.left > 0) {
                uint16_t type = (uint16_t) get_uint(&exts, 2);
                Cursor body = sub(&exts, get_uint(&exts, 2));
                if (exts.bad)
                        return TLS_HELLO_MALFORMED;
                if (type == TLS_EXT_SERVER_NAME) {
                        if (seen_sni)
                                return TLS_HELLO_MALFORMED;   /* duplicate extensions are illegal */
                        seen_sni = true;
                        TlsHelloResult r = parse_server_name(body, h);
                        if (r != TLS_HELLO_OK)
                                return r;
                } else if (type == TLS_EXT_ECH)
                        h->has_ech = true;
        }
        if (h->has_ech)
                return TLS_HELLO_ECH;
        return h->has_sni ? TLS_HELLO_OK : TLS_HELLO_NO_SNI;
}

TlsHelloResult tls_hello_parse(const uint8_t *buf, size_t len, TlsHello *h) {
        size_t pos = 0, have = 0, need = 0;

        assert(buf || len == 0);
        assert(h);

        h->sni[0] = 0;
        h->has_sni = h->has_ech = false;
        h->n_records = 0;
        if (len > 0 && buf[0] != CONTENT_HANDSHAKE)
                return TLS_HELLO_NOT_TLS;

        /* Gather record payloads until the handshake message is complete. */
        for (;;) {
                if (len - pos < RECORD_HEADER)
                        break;
                const uint8_t *rec = buf + pos;
                size_t rlen = ((size_t) rec[3] << 8) | rec[4];
                if (rec[0] != CONTENT_HANDSHAKE)
                        return TLS_HELLO_MALFORMED;   /* nothing may come before the hello */
                if (rec[1] != 0x03 || rec[2] > 0x04)
                        return TLS_HELLO_MALFORMED;
                if (rlen == 0 || rlen > RECORD_PAYLOAD_MAX)
                        return TLS_HELLO_MALFORMED;
                if (len - pos - RECORD_HEADER < rlen)
                        break;
                size_t copy = rlen;
                if (have + copy > sizeof(h->handshake))
                        copy = sizeof(h->handshake) - have;
                memcpy(h->handshake + have, rec + RECORD_HEADER, copy);
                have += copy;
                pos += RECORD_HEADER + rlen;
                /* A hello in hundreds of tiny records is an attack on our time. */
                if (++h->n_records > TLS_HELLO_RECORDS_MAX)
                        return TLS_HELLO_TOO_LARGE;

                if (h->handshake[0] != HANDSHAKE_CLIENT_HELLO)
                        return TLS_HELLO_MALFORMED;
                if (need == 0 && have >= HANDSHAKE_HEADER) {
                        need = HANDSHAKE_HEADER + (((size_t) h->handshake[1] << 16) |
                                                   ((size_t) h->handshake[2] << 8) | h->handshake[3]);
                        if (need > TLS_HELLO_MAX)
                                return TLS_HELLO_TOO_LARGE;
                }
                if (need > 0 && have >= need) {
                        h->hello_end = pos;
                        return parse_client_hello((Cursor) { .p = h->handshake + HANDSHAKE_HEADER,
                                                             .left = need - HANDSHAKE_HEADER }, h);
                }
        }

        /* Incomplete. Refuse early what cannot end well: a declared size over
         * the cap (checked above), or more raw bytes than a capped hello can
         * take in records of any sensible size. */
        if (len > TLS_HELLO_RAW_MAX)
                return TLS_HELLO_TOO_LARGE;
        /* Peek at the first partial handshake header to reject non-hellos before they are complete. */
        if (have == 0 && len - pos > RECORD_HEADER) {
                const uint8_t *msg = buf + pos + RECORD_HEADER;
                if (msg[0] != HANDSHAKE_CLIENT_HELLO)
                        return TLS_HELLO_MALFORMED;
                if (len - pos >= RECORD_HEADER + HANDSHAKE_HEADER &&
                    HANDSHAKE_HEADER + (((size_t) msg[1] << 16) | ((size_t) msg[2] << 8) | msg[3]) > TLS_HELLO_MAX)
                        return TLS_HELLO_TOO_LARGE;
        }
        return TLS_HELLO_NEED_MORE;
}

size_t tls_hello_bytes_wanted(const uint8_t *buf, size_t len) {
        size_t pos = 0;

        assert(buf || len == 0);
        /* The first bytes decide early refusals (not TLS, not a hello, a
         * declared size over the cap): each of them is worth a parse. */
        if (len < RECORD_HEADER + HANDSHAKE_HEADER)
                return len + 1;
        /* Skip the records the last parse saw complete. */
        while (len - pos >= RECORD_HEADER) {
                size_t end = pos + RECORD_HEADER + (((size_t) buf[pos + 3] << 8) | buf[pos + 4]);
                if (end > len)
                        return end;       /* the record being received */
                pos = end;
        }
        return pos + RECORD_HEADER;       /* the next record's header */
}

const char *tls_hello_result_to_string(TlsHelloResult r) {
        switch (r) {
        case TLS_HELLO_NEED_MORE: return "need-more";
        case TLS_HELLO_OK:        return "ok";
        case TLS_HELLO_ECH:       return "ech";
        case TLS_HELLO_NO_SNI:    return "no-sni";
        case TLS_HELLO_NOT_TLS:   return "not-tls";
        case TLS_HELLO_TOO_LARGE: return "client-hello-too-large";
        case TLS_HELLO_MALFORMED: return "malformed-client-hello";
        }
        return "unknown";
}
