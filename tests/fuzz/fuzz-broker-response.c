/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <string.h>

#include "broker-response.h"
#include "fuzz.h"

/* Feeds IN in pieces of STEP bytes (then the close, if the response is not
 * done), as the session does with what SSL_read returns. */
static void run(const uint8_t *in, size_t size, size_t step, uint64_t cap, bool no_body, BrokerResponse *r,
                size_t *ret_consumed) {
        size_t done = 0;

        broker_response_init(r, cap, no_body);
        while (done < size && !r->complete && !r->error) {
                size_t n = size - done < step ? size - done : step;
                ssize_t k = broker_response_feed(r, in + done, n);
                if (k < 0) {
                        assert(r->error);
                        break;
                }
                assert((size_t) k <= n);
                /* Bytes are left over only where the response completed. */
                assert((size_t) k == n || r->complete);
                done += (size_t) k;
        }
        if (!r->complete && !r->error) {
                ssize_t k = broker_response_feed(r, NULL, 0);
                assert(k == 0 || (k < 0 && r->error));
        }
        /* Once refused, always refused. */
        if (r->error)
                assert(broker_response_feed(r, in, size) == -1);
        /* What went to the worker never passed the cap. */
        assert(r->error || r->body_bytes <= cap);
        assert(!r->complete || r->head_done);
        *ret_consumed = done;
}

/* Where a response ends must not depend on how the upstream's bytes were
 * split into reads: that is what keeps a pooled connection's next
 * response apart from this one. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        BrokerResponse whole, split;
        size_t a, b;

        if (size < 2)
                return 0;
        uint64_t cap = (uint64_t) data[0] * 64;
        bool no_body = data[1] & 1;
        size_t step = 1 + (data[1] >> 1);
        data += 2;
        size -= 2;

        run(data, size, size ? size : 1, cap, no_body, &whole, &a);
        run(data, size, step, cap, no_body, &split, &b);
        assert(!whole.error == !split.error);
        if (whole.error)
                assert(strcmp(whole.error, split.error) == 0);
        else {
                assert(whole.complete == split.complete);
                assert(a == b);
                assert(whole.body_bytes == split.body_bytes);
                assert(whole.status == split.status);
                assert(whole.keep_alive == split.keep_alive);
        }
        return 0;
}
