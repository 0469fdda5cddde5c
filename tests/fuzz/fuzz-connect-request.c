/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <string.h>

#include "connect-request.h"
#include "egress-host.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        ConnectRequest req;
        char host[EGRESS_HOST_MAX + 1];

        /* Fed whole and in every early prefix the proxy might see after a short read. */
        for (size_t cut = 0; cut < size && cut < 64; cut += 7)
                (void) connect_request_parse(data, cut, &req);
        if (connect_request_parse(data, size, &req) != CONNECT_PARSE_OK)
                return 0;
        assert(req.request_size <= size);
        assert(req.port > 0);
        assert(strlen(req.host) > 0 && strlen(req.host) <= CONNECT_HOST_MAX);
        /* What the parser lets through goes straight into the normaliser. */
        (void) egress_host_normalize(req.host, req.host_is_bracketed, host, sizeof(host), NULL);
        return 0;
}
