/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Reads the server name out of a TLS ClientHello that arrives in pieces:
 * the caller keeps every byte the client sent in one buffer and calls
 * tls_hello_parse() again after each read. The hello may be split across
 * TCP segments and across TLS records (a record holds at most 16 KiB, and
 * clients with post-quantum key shares do split); both are reassembled.
 * No allocation: the reassembly buffer lives in the caller's TlsHello. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TLS_HELLO_MAX 16384          /* handshake message, header included */
#define TLS_SNI_MAX   255
#define TLS_HELLO_RECORDS_MAX 64
/* The most raw bytes a capped hello can take: callers size their buffer to this. */
#define TLS_HELLO_RAW_MAX (TLS_HELLO_MAX + 5 * TLS_HELLO_RECORDS_MAX)
#define TLS_EXT_SERVER_NAME 0x0000
#define TLS_EXT_ECH         0xfe0d

typedef enum TlsHelloResult {
        TLS_HELLO_NEED_MORE,
        TLS_HELLO_OK,           /* sni holds the (outer) server name */
        TLS_HELLO_ECH,          /* encrypted_client_hello: sni holds the outer name, if any */
        TLS_HELLO_NO_SNI,
        TLS_HELLO_NOT_TLS,      /* the first byte is not a handshake record */
        TLS_HELLO_TOO_LARGE,
        TLS_HELLO_MALFORMED,
} TlsHelloResult;

typedef struct TlsHello {
        char sni[TLS_SNI_MAX + 1];
        bool has_sni;
        bool has_ech;
        uint16_t legacy_version;
        size_t n_records;             /* how many records the hello took */
        size_t hello_end;             /* raw bytes up to the end of the last record used */
        uint8_t handshake[TLS_HELLO_MAX];
} TlsHello;

TlsHelloResult tls_hello_parse(const uint8_t *buf, size_t len, TlsHello *ret);
/* After tls_hello_parse(buf, len) said "need more": the smallest length
 * at which it can say anything else (the next record, or record header,
 * completes). A caller reading in small pieces parses again only then,
 * which keeps a client that dribbles bytes from costing quadratic time. */
size_t tls_hello_bytes_wanted(const uint8_t *buf, size_t len);

const char *tls_hello_result_to_string(TlsHelloResult r);
