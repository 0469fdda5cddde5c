/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "egress-host.h"
#include "fuzz.h"

/* Input: one flag byte (bit 0: the host was bracketed in CONNECT), then a
 * NUL-free text that is normalised as a host and parsed as a pattern. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char host[EGRESS_HOST_MAX + 1], again[EGRESS_HOST_MAX + 1], text[EGRESS_HOST_MAX + 16];
        EgressHostKind kind, kind2;
        EgressPattern pat, pat2;

        if (size < 1 || size > 4096)
                return 0;
        bool bracketed = data[0] & 1;
        char *in = strndup((const char *) data + 1, size - 1);
        if (!in)
                return 0;

        if (egress_host_normalize(in, bracketed, host, sizeof(host), &kind) == 0) {
                /* Normalising is idempotent: the policy compares normalised bytes. */
                assert(strlen(host) > 0 && strlen(host) <= EGRESS_HOST_MAX);
                assert(egress_host_normalize(host, bracketed, again, sizeof(again), &kind2) == 0);
                assert(strcmp(host, again) == 0);
                assert(kind == kind2);
        }

        if (egress_pattern_parse(in, &pat) == 0) {
                /* A parsed pattern prints back to one that parses the same. */
                assert(egress_pattern_format(&pat, text, sizeof(text)) == 0);
                assert(egress_pattern_parse(text, &pat2) == 0);
                assert(pat.any_host == pat2.any_host && pat.subdomains == pat2.subdomains && pat.port == pat2.port);
                assert(strcmp(pat.domain, pat2.domain) == 0);
                /* An exact pattern matches its own domain; "*.d" matches only below d. */
                if (!pat.any_host) {
                        assert(egress_pattern_match_host(&pat, pat.domain) == !pat.subdomains);
                        assert(egress_pattern_match(&pat, pat.domain, pat.port ? pat.port : 443, 443) == !pat.subdomains);
                }
        }
        free(in);
        return 0;
}
