/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "broker-path.h"
#include "broker-request.h"
#include "fuzz.h"

static char *methods[] = { "GET", "POST", "PUT", NULL };
static char *paths[] = { "/v1/", "/models", NULL };
static const BrokerRoute route = {
        .host = "api.example.org", .port = 443, .base = "/base",
        .methods = methods, .paths = paths,
        .inject_name = "Authorization", .inject_value = "Bearer fuzz-secret",
        .max_request_bytes = 4096,
};

static char *any_method[] = { "GET", "POST", "PUT", NULL };
static char *any_path[] = { "/", NULL };
static const BrokerRoute reparse = {
        .host = "check.example", .port = 443, .base = "",
        .methods = any_method, .paths = any_path,
        .inject_name = "X-Fuzz-Check", .inject_value = "1",
        .max_request_bytes = 4096,
};

static int hex(char c) {
        return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
               c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

static void percent_decode(char *s) {
        char *w = s;
        for (const char *r = s; *r; r++)
                if (r[0] == '%' && hex(r[1]) >= 0 && hex(r[2]) >= 0) {
                        *w++ = (char) (hex(r[1]) << 4 | hex(r[2]));
                        r += 2;
                } else
                        *w++ = *r;
        *w = 0;
}

/* An oracle apart from broker-path.c: the most lenient upstream decodes
 * the path twice, reads '\' as '/', cuts it at a decoded '?' or '#' and
 * drops ";..." parameters. A path the broker forwards must still be under
 * one of its prefixes there, with no dot segment to climb out of it. */
static void assert_stays_under_prefix(const char *target) {
        char p[BROKER_TARGET_MAX + 1];

        snprintf(p, sizeof(p), "%.*s", (int) strcspn(target, "?"), target);
        percent_decode(p);
        percent_decode(p);
        for (char *c = p; *c; c++)
                if (*c == '\\')
                        *c = '/';
        p[strcspn(p, "?#")] = 0;
        assert(strncmp(p, "/v1/", 4) == 0 || (strncmp(p, "/models", 7) == 0 && (!p[7] || p[7] == '/')));
        for (const char *seg = p + 1; seg; ) {
                const char *next = strchr(seg, '/');
                size_t name = strcspn(seg, ";/");
                assert(!(name == 1 && seg[0] == '.') && !(name == 2 && seg[0] == '.' && seg[1] == '.'));
                seg = next ? next + 1 : NULL;
        }
}

/* What the upstream gets must be one request with one framing, whatever
 * the worker sent: checked by parsing the output again. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        BrokerRequest req, again;
        BrokerRefusal refusal;
        const char *up, *auth, *head_end, *second;
        int r;

        for (size_t cut = 0; cut < size && cut < 256; cut += 13)
                if (broker_request_parse(&route, data, cut, &req, &refusal) == BROKER_PARSE_OK)
                        broker_request_done(&req);
        r = broker_request_parse(&route, data, size, &req, &refusal);
        if (r == BROKER_PARSE_REFUSED) {
                assert(refusal.status >= 400 && refusal.status < 600 && refusal.reason);
                return 0;
        }
        if (r != BROKER_PARSE_OK)
                return 0;
        assert(req.consumed > 0 && req.consumed <= size);
        assert_stays_under_prefix(req.path);
        up = req.upstream;
        assert(up && req.upstream_size > 0);
        /* The upstream's Host, and one Authorization: the injected one. */
        assert(memmem(up, req.upstream_size, "\r\nHost: api.example.org\r\n", 25));
        auth = memmem(up, req.upstream_size, "\r\nAuthorization: ", 17);
        assert(auth && strncmp(auth + 17, "Bearer fuzz-secret\r\n", 20) == 0);
        /* Any second one is in the body, past the head's blank line. */
        head_end = memmem(up, req.upstream_size, "\r\n\r\n", 4);
        second = memmem(auth + 17, req.upstream_size - (size_t) (auth + 17 - up), "\r\nAuthorization:", 16);
        assert(head_end && auth < head_end && (!second || second >= head_end));
        /* Read by the same strict parser, the output is exactly one request:
         * nothing is left over to be taken as a second one. Only the caps
         * may refuse it (the added headers make it longer). */
        r = broker_request_parse(&reparse, (const uint8_t *) req.upstream, req.upstream_size, &again, &refusal);
        assert(r == BROKER_PARSE_OK || (r == BROKER_PARSE_REFUSED && refusal.status == 431));
        if (r == BROKER_PARSE_OK) {
                assert(again.consumed == req.upstream_size);
                broker_request_done(&again);
        }
        broker_request_done(&req);
        return 0;
}
