/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tls-hello.h"

typedef struct Buf {
        uint8_t data[80000];
        size_t n;
} Buf;

static void put8(Buf *b, unsigned v) { b->data[b->n++] = (uint8_t) v; }
static void put16(Buf *b, unsigned v) { put8(b, v >> 8); put8(b, v & 0xff); }
static void put24(Buf *b, unsigned v) { put8(b, v >> 16); put16(b, v & 0xffff); }
static void putn(Buf *b, const void *p, size_t n) { memcpy(b->data + b->n, p, n); b->n += n; }

typedef struct HelloSpec {
        const char *sni;          /* NULL: no server_name extension */
        bool ech;
        bool duplicate_sni;
        size_t padding;           /* bytes of a padding extension, to make big hellos */
        bool no_extensions;
} HelloSpec;

/* A ClientHello handshake message (type, length, body), as a client writes it. */
static void build_hello(Buf *hs, const HelloSpec *s) {
        Buf body = { .n = 0 }, exts = { .n = 0 };
        uint8_t random[32] = { 1, 2, 3 };

        put16(&body, 0x0303);
        putn(&body, random, 32);
        put8(&body, 32);
        putn(&body, random, 32);            /* session id */
        put16(&body, 4);
        put16(&body, 0x1301);
        put16(&body, 0xc02f);
        put8(&body, 1);
        put8(&body, 0);
        for (int i = 0; s->sni && i < (s->duplicate_sni ? 2 : 1); i++) {
                size_t n = strlen(s->sni);
                put16(&exts, 0x0000);
                put16(&exts, n + 5);
                put16(&exts, n + 3);
                put8(&exts, 0);
                put16(&exts, n);
                putn(&exts, s->sni, n);
        }
        put16(&exts, 0x002b);                /* supported_versions: TLS 1.3 */
        put16(&exts, 3);
        put8(&exts, 2);
        put16(&exts, 0x0304);
        if (s->ech) {
                put16(&exts, 0xfe0d);
                put16(&exts, 4);
                put16(&exts, 0xdead);
                put16(&exts, 0xbeef);
        }
        if (s->padding) {
                put16(&exts, 0x0015);
                put16(&exts, s->padding);
                for (size_t i = 0; i < s->padding; i++)
                        put8(&exts, 0);
        }
        if (!s->no_extensions) {
                put16(&body, exts.n);
                putn(&body, exts.data, exts.n);
        }
        hs->n = 0;
        put8(hs, 0x01);
        put24(hs, body.n);
        putn(hs, body.data, body.n);
}

/* Wraps a handshake message into records of at most `record_size` payload bytes. */
static void wrap_records(Buf *out, const Buf *hs, size_t record_size) {
        out->n = 0;
        for (size_t off = 0; off < hs->n; off += record_size) {
                size_t n = hs->n - off < record_size ? hs->n - off : record_size;
                put8(out, 0x16);
                put16(out, 0x0301);
                put16(out, n);
                putn(out, hs->data + off, n);
        }
}

static TlsHello h;

static TlsHelloResult parse_spec(const HelloSpec *s, size_t record_size) {
        static Buf hs, raw;
        build_hello(&hs, s);
        wrap_records(&raw, &hs, record_size);
        return tls_hello_parse(raw.data, raw.n, &h);
}

static void test_simple(void **state) {
        HelloSpec s = { .sni = "api.example.org" };
        assert_int_equal(parse_spec(&s, 16384), TLS_HELLO_OK);
        assert_true(h.has_sni);
        assert_string_equal(h.sni, "api.example.org");
        assert_int_equal(h.n_records, 1);
}

/* Every prefix of a valid hello is "need more", never an error or a guess. */
static void test_every_split(void **state) {
        static Buf hs, raw;
        HelloSpec s = { .sni = "split.example.org", .padding = 300 };

        for (size_t record = 1; record <= 700; record = record < 16 ? record + 1 : record * 3) {
                build_hello(&hs, &s);
                wrap_records(&raw, &hs, record);
                if (raw.n > TLS_HELLO_RAW_MAX || hs.n / record + 1 > TLS_HELLO_RECORDS_MAX) {
                        assert_int_equal(tls_hello_parse(raw.data, raw.n, &h), TLS_HELLO_TOO_LARGE);
                        continue;
                }
                for (size_t i = 0; i < raw.n; i++)
                        assert_int_equal(tls_hello_parse(raw.data, i, &h), TLS_HELLO_NEED_MORE);
                assert_int_equal(tls_hello_parse(raw.data, raw.n, &h), TLS_HELLO_OK);
                assert_string_equal(h.sni, "split.example.org");
        }
}

static void test_several_records(void **state) {
        HelloSpec s = { .sni = "multi.example.org", .padding = 2000 };
        assert_int_equal(parse_spec(&s, 512), TLS_HELLO_OK);
        assert_true(h.n_records > 3);
        assert_string_equal(h.sni, "multi.example.org");
}

static void test_no_sni(void **state) {
        HelloSpec s = { .sni = NULL };
        assert_int_equal(parse_spec(&s, 16384), TLS_HELLO_NO_SNI);
        HelloSpec bare = { .no_extensions = true };
        assert_int_equal(parse_spec(&bare, 16384), TLS_HELLO_NO_SNI);
}

static void test_ech(void **state) {
        HelloSpec s = { .sni = "public.example.org", .ech = true };
        assert_int_equal(parse_spec(&s, 16384), TLS_HELLO_ECH);
        assert_true(h.has_ech);
        assert_string_equal(h.sni, "public.example.org");
        HelloSpec nosni = { .ech = true };
        assert_int_equal(parse_spec(&nosni, 16384), TLS_HELLO_ECH);
        assert_false(h.has_sni);
}

static void test_too_large(void **state) {
        /* A 20 KiB hello in one legal 16 KiB-record stream: refused as soon as its header is read. */
        static Buf hs, raw;
        HelloSpec s = { .sni = "big.example.org", .padding = 20000 };
        build_hello(&hs, &s);
        wrap_records(&raw, &hs, 16384);
        assert_int_equal(tls_hello_parse(raw.data, 9, &h), TLS_HELLO_TOO_LARGE);
        assert_int_equal(tls_hello_parse(raw.data, raw.n, &h), TLS_HELLO_TOO_LARGE);

        /* A small hello dribbled in tiny records. */
        HelloSpec t = { .sni = "tiny.example.org", .padding = 200 };
        assert_int_equal(parse_spec(&t, 2), TLS_HELLO_TOO_LARGE);

        /* Just under the cap is fine. */
        HelloSpec u = { .sni = "cap.example.org", .padding = TLS_HELLO_MAX - 200 };
        build_hello(&hs, &u);
        assert_true(hs.n <= TLS_HELLO_MAX);
        wrap_records(&raw, &hs, 16384);
        assert_int_equal(tls_hello_parse(raw.data, raw.n, &h), TLS_HELLO_OK);
}

static void test_malformed(void **state) {
        static Buf hs, raw;
        HelloSpec s = { .sni = "a.example.org" };

        HelloSpec dup = { .sni = "a.example.org", .duplicate_sni = true };
        assert_int_equal(parse_spec(&dup, 16384), TLS_HELLO_MALFORMED);

        static const uint8_t http[] = "GET / HTTP/1.1\r\n";
        assert_int_equal(tls_hello_parse(http, sizeof(http) - 1, &h), TLS_HELLO_NOT_TLS);
        static const uint8_t ssh[] = "SSH-2.0-OpenSSH_9.2\r\n";
        assert_int_equal(tls_hello_parse(ssh, sizeof(ssh) - 1, &h), TLS_HELLO_NOT_TLS);

        /* Not a client_hello (a server_hello, type 2), found before the record is complete. */
        build_hello(&hs, &s);
        hs.data[0] = 0x02;
        wrap_records(&raw, &hs, 16384);
        assert_int_equal(tls_hello_parse(raw.data, 6, &h), TLS_HELLO_MALFORMED);
        assert_int_equal(tls_hello_parse(raw.data, raw.n, &h), TLS_HELLO_MALFORMED);

        /* A change_cipher_spec record after the first handshake record. */
        build_hello(&hs, &s);
        wrap_records(&raw, &hs, 40);
        raw.data[45] = 0x14;
        assert_int_equal(tls_hello_parse(raw.data, raw.n, &h), TLS_HELLO_MALFORMED);

        /* Bad record version, zero-length record, oversize record length. */
        wrap_records(&raw, &hs, 16384);
        raw.data[1] = 0x02;
        assert_int_equal(tls_hello_parse(raw.data, raw.n, &h), TLS_HELLO_MALFORMED);
        wrap_records(&raw, &hs, 16384);
        raw.data[3] = 0;
        raw.data[4] = 0;
        assert_int_equal(tls_hello_parse(raw.data, raw.n, &h), TLS_HELLO_MALFORMED);
        raw.data[3] = 0x48;
        assert_int_equal(tls_hello_parse(raw.data, raw.n, &h), TLS_HELLO_MALFORMED);

        /* Extension lengths that overrun: shorten the handshake length by one. */
        build_hello(&hs, &s);
        hs.data[3] -= 1;
        hs.n -= 1;
        wrap_records(&raw, &hs, 16384);
        assert_int_equal(tls_hello_parse(raw.data, raw.n, &h), TLS_HELLO_MALFORMED);

        /* An SNI with a control byte or a NUL in it. */
        HelloSpec ctl = { .sni = "a.exa\x01mple.org" };
        assert_int_equal(parse_spec(&ctl, 16384), TLS_HELLO_MALFORMED);
        build_hello(&hs, &s);
        uint8_t *name = memmem(hs.data, hs.n, "a.example.org", 13);
        assert_non_null(name);
        name[1] = 0;
        wrap_records(&raw, &hs, 16384);
        assert_int_equal(tls_hello_parse(raw.data, raw.n, &h), TLS_HELLO_MALFORMED);
}

/* Parsing only where tls_hello_bytes_wanted() says a parse can progress
 * reaches the same verdict, about once per record instead of once per read. */
static void test_bytes_wanted(void **state) {
        static Buf hs, raw;
        HelloSpec s = { .sni = "wanted.example.org", .padding = 900 };

        build_hello(&hs, &s);
        wrap_records(&raw, &hs, 300);
        for (size_t step = 1; step < 40; step += 3) {
                TlsHelloResult r = TLS_HELLO_NEED_MORE;
                size_t len = 0, parse_at = 0, parses = 0;
                while (r == TLS_HELLO_NEED_MORE && len < raw.n) {
                        len = len + step < raw.n ? len + step : raw.n;
                        if (len < parse_at) {
                                assert_int_equal(tls_hello_parse(raw.data, len, &h), TLS_HELLO_NEED_MORE);
                                continue;
                        }
                        r = tls_hello_parse(raw.data, len, &h);
                        parses++;
                        if (r == TLS_HELLO_NEED_MORE)
                                parse_at = tls_hello_bytes_wanted(raw.data, len);
                }
                assert_int_equal(r, TLS_HELLO_OK);
                assert_int_equal(len, raw.n);
                assert_true(parses <= 9 + 2 * 5);   /* the first bytes, then about one per record */
        }
        assert_int_equal(tls_hello_bytes_wanted(raw.data, 3), 4);
        assert_int_equal(tls_hello_bytes_wanted(raw.data, 10), 305);
        assert_int_equal(tls_hello_bytes_wanted(raw.data, 305), 310);
        assert_int_equal(tls_hello_bytes_wanted(raw.data, 307), 310);
        assert_int_equal(tls_hello_bytes_wanted(raw.data, 311), 610);
}

/* Random bytes after a valid record header: must end in a verdict, never a crash. */
static void test_noise(void **state) {
        static uint8_t buf[4096];
        unsigned seed = 1;
        for (int round = 0; round < 2000; round++) {
                size_t n = (size_t) (rand_r(&seed) % sizeof(buf));
                for (size_t i = 0; i < n; i++)
                        buf[i] = (uint8_t) rand_r(&seed);
                if (n > 0)
                        buf[0] = 0x16;
                if (n > 2) {
                        buf[1] = 3;
                        buf[2] = 1;
                }
                TlsHelloResult r = tls_hello_parse(buf, n, &h);
                assert_true(r >= TLS_HELLO_NEED_MORE && r <= TLS_HELLO_MALFORMED);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_simple),
                cmocka_unit_test(test_every_split),
                cmocka_unit_test(test_several_records),
                cmocka_unit_test(test_no_sni),
                cmocka_unit_test(test_ech),
                cmocka_unit_test(test_too_large),
                cmocka_unit_test(test_malformed),
                cmocka_unit_test(test_bytes_wanted),
                cmocka_unit_test(test_noise),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
