/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <string.h>

#include "fuzz.h"
#include "tls-hello.h"

static TlsHello hello;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        TlsHelloResult whole = tls_hello_parse(data, size, &hello);

        if (whole == TLS_HELLO_OK || whole == TLS_HELLO_ECH) {
                assert(hello.hello_end <= size);
                if (hello.has_sni)
                        assert(strlen(hello.sni) > 0 && strlen(hello.sni) <= TLS_SNI_MAX);
        }
        /* The proxy decides as soon as a verdict is final, on a prefix of what
         * the client sends: that verdict must be the one the whole input gets. */
        if (size > 0) {
                TlsHelloResult prefix = tls_hello_parse(data, size / 2, &hello);
                if (prefix != TLS_HELLO_NEED_MORE)
                        assert(prefix == whole);
                /* After "need more" the proxy skips parses below this length:
                 * they must have had nothing else to say. */
                if (prefix == TLS_HELLO_NEED_MORE) {
                        size_t wanted = tls_hello_bytes_wanted(data, size / 2);
                        assert(wanted > size / 2);
                        size_t skipped = wanted - 1 < size ? wanted - 1 : size;
                        assert(tls_hello_parse(data, skipped, &hello) == TLS_HELLO_NEED_MORE);
                }
        }
        return 0;
}
