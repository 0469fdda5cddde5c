/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <string.h>

#include "connect-request.h"
#include "http-token.h"

#define MIN_LEN(a, b) ((a) < (b) ? (a) : (b))

static const char *const HTTP_METHODS[] = {
        "GET ", "HEAD ", "POST ", "PUT ", "DELETE ", "OPTIONS ", "TRACE ", "PATCH ", "PRI ",
};

static bool is_reg_name_char(uint8_t c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '-' || c == '.' || c == '_';
}

static bool is_ipv6_literal_char(uint8_t c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') ||
               c == ':' || c == '.';
}

/* Finds the CRLF ending the line that starts at buf[pos]; returns its offset
 * or -1 if none within len. A bare CR or LF anywhere is malformed: it is
 * how request smuggling starts. */
static long find_crlf(const uint8_t *buf, size_t len, size_t pos, bool *bad) {
        for (size_t i = pos; i < len; i++) {
                if (buf[i] == '\n') {
                        *bad = true;
                        return -1;
                }
                if (buf[i] == '\r') {
                        if (i + 1 >= len)
                                return -1;
                        if (buf[i + 1] != '\n') {
                                *bad = true;
                                return -1;
                        }
                        return (long) i;
                }
        }
        return -1;
}

static ConnectParseResult parse_port(const uint8_t *s, size_t n, uint16_t *ret) {
        unsigned long v = 0;

        if (n == 0 || n > 5 || s[0] == '0')
                return CONNECT_PARSE_MALFORMED;
        for (size_t i = 0; i < n; i++) {
                if (s[i] < '0' || s[i] > '9')
                        return CONNECT_PARSE_MALFORMED;
                v = v * 10 + (s[i] - '0');
        }
        if (v == 0 || v > 65535)
                return CONNECT_PARSE_MALFORMED;
        *ret = (uint16_t) v;
        return CONNECT_PARSE_OK;
}

static ConnectParseResult parse_authority(const uint8_t *s, size_t n, ConnectRequest *ret) {
        const uint8_t *host, *colon;
        size_t host_len;

        if (n == 0)
                return CONNECT_PARSE_MALFORMED;
        if (s[0] == '[') {
                const uint8_t *close = memchr(s, ']', n);
                if (!close || close + 1 >= s + n || close[1] != ':')
                        return CONNECT_PARSE_MALFORMED;
                host = s + 1;
                host_len = (size_t) (close - host);
                colon = close + 1;
                for (size_t i = 0; i < host_len; i++)
                        if (!is_ipv6_literal_char(host[i]))
                                return CONNECT_PARSE_MALFORMED;
                ret->host_is_bracketed = true;
        } else {
                colon = memchr(s, ':', n);
                if (!colon)
                        return CONNECT_PARSE_MALFORMED;   /* CONNECT needs an explicit port */
                host = s;
                host_len = (size_t) (colon - s);
                for (size_t i = 0; i < host_len; i++)
                        if (!is_reg_name_char(host[i]))
                                return CONNECT_PARSE_MALFORMED;
                ret->host_is_bracketed = false;
        }
        if (host_len == 0)
                return CONNECT_PARSE_MALFORMED;
        if (host_len > CONNECT_HOST_MAX)
                return CONNECT_PARSE_TOO_LONG;
        memcpy(ret->host, host, host_len);
        ret->host[host_len] = 0;
        return parse_port(colon + 1, (size_t) (s + n - colon - 1), &ret->port);
}

/* HTTP/1.0 as well as 1.1: Python's http.client (urllib, pip) and OpenSSL's
 * s_client -proxy send "CONNECT host:port HTTP/1.0". CONNECT means the same
 * in both, and the answer (HTTP/1.1 200) is one both accept (RFC 9110 2.5:
 * a server answers with the highest minor version it implements). */
static bool is_accepted_version(const uint8_t *v, size_t n) {
        return n == 9 && (memcmp(v, " HTTP/1.1", 9) == 0 || memcmp(v, " HTTP/1.0", 9) == 0);
}

static ConnectParseResult parse_request_line(const uint8_t *line, size_t n, ConnectRequest *ret) {
        static const char prefix[] = "CONNECT ";
        const size_t plen = sizeof(prefix) - 1;

        if (n < plen || memcmp(line, prefix, plen) != 0) {
                for (size_t i = 0; i < sizeof(HTTP_METHODS) / sizeof(HTTP_METHODS[0]); i++) {
                        size_t m = strlen(HTTP_METHODS[i]);
                        if (n >= m && memcmp(line, HTTP_METHODS[i], m) == 0)
                                return CONNECT_PARSE_NOT_CONNECT;
                }
                return CONNECT_PARSE_MALFORMED;
        }
        line += plen;
        n -= plen;
        const uint8_t *sp = memchr(line, ' ', n);
        if (!sp)
                return CONNECT_PARSE_MALFORMED;
        size_t auth_len = (size_t) (sp - line);
        /* Absolute-form ("CONNECT http://...") is a plain-HTTP proxy request in disguise. */
        if (memchr(line, '/', auth_len))
                return CONNECT_PARSE_NOT_CONNECT;
        if (!is_accepted_version(sp, n - auth_len))
                return n - auth_len >= 6 && memcmp(sp, " HTTP/", 6) == 0 ? CONNECT_PARSE_BAD_VERSION
                                                                         : CONNECT_PARSE_MALFORMED;
        return parse_authority(line, auth_len, ret);
}

static bool header_line_valid(const uint8_t *line, size_t n) {
        const uint8_t *colon = memchr(line, ':', n);
        if (!colon || colon == line)
                return false;
        for (const uint8_t *p = line; p < colon; p++)
                if (!http_is_tchar(*p))
                        return false;
        for (const uint8_t *p = colon + 1; p < line + n; p++)
                if (*p != '\t' && (*p < 0x20 || *p == 0x7f))
                        return false;
        return true;
}

ConnectParseResult connect_request_parse(const uint8_t *buf, size_t len, ConnectRequest *ret) {
        ConnectRequest req = {};
        size_t pos = 0, n_headers = 0;
        ConnectParseResult r;
        bool bad = false;
        long eol;

        assert(buf || len == 0);
        assert(ret);

        eol = find_crlf(buf, MIN_LEN(len, CONNECT_LINE_MAX + 2), 0, &bad);
        if (bad)
                return CONNECT_PARSE_MALFORMED;
        if (eol < 0) {
                /* Decide early on what cannot become a CONNECT, so garbage is
                 * refused at once rather than after a timeout. */
                static const char connect[] = "CONNECT ";
                size_t m = MIN_LEN(len, sizeof(connect) - 1);
                if (memcmp(buf, connect, m) != 0) {
                        for (size_t i = 0; i < sizeof(HTTP_METHODS) / sizeof(HTTP_METHODS[0]); i++)
                                if (len >= strlen(HTTP_METHODS[i]) &&
                                    memcmp(buf, HTTP_METHODS[i], strlen(HTTP_METHODS[i])) == 0)
                                        return CONNECT_PARSE_NOT_CONNECT;
                        for (size_t i = 0; i < m; i++)
                                if (!(buf[i] >= 'A' && buf[i] <= 'Z') && buf[i] != ' ')
                                        return CONNECT_PARSE_MALFORMED;
                }
                return len >= CONNECT_LINE_MAX + 2 ? CONNECT_PARSE_TOO_LONG : CONNECT_PARSE_NEED_MORE;
        }
        r = parse_request_line(buf, (size_t) eol, &req);
        if (r != CONNECT_PARSE_OK)
                return r;
        pos = (size_t) eol + 2;

        for (;;) {
                size_t window = MIN_LEN(len, MIN_LEN(pos + CONNECT_LINE_MAX + 2, CONNECT_REQUEST_MAX));
                eol = find_crlf(buf, window, pos, &bad);
                if (bad)
                        return CONNECT_PARSE_MALFORMED;
                if (eol < 0) {
                        if (window >= CONNECT_REQUEST_MAX || window >= pos + CONNECT_LINE_MAX + 2)
                                return CONNECT_PARSE_TOO_LONG;
                        return CONNECT_PARSE_NEED_MORE;
                }
                if ((size_t) eol == pos)
                        break;   /* the blank line */
                if (++n_headers > CONNECT_HEADERS_MAX)
                        return CONNECT_PARSE_TOO_LONG;
                if (!header_line_valid(buf + pos, (size_t) eol - pos))
                        return CONNECT_PARSE_MALFORMED;
                pos = (size_t) eol + 2;
        }
        req.request_size = pos + 2;
        /* Early tunnel bytes may only be the first byte of a TLS handshake record. */
        if (len > req.request_size && buf[req.request_size] != 0x16)
                return CONNECT_PARSE_EXTRA_DATA;
        *ret = req;
        return CONNECT_PARSE_OK;
}

const char *connect_parse_result_to_string(ConnectParseResult r) {
        switch (r) {
        case CONNECT_PARSE_NEED_MORE:   return "need-more";
        case CONNECT_PARSE_OK:          return "ok";
        case CONNECT_PARSE_TOO_LONG:    return "request-too-long";
        case CONNECT_PARSE_NOT_CONNECT: return "plain-http";
        case CONNECT_PARSE_MALFORMED:   return "malformed-request";
        case CONNECT_PARSE_BAD_VERSION: return "bad-http-version";
        case CONNECT_PARSE_EXTRA_DATA:  return "data-before-tunnel";
        }
        return "unknown";
}
