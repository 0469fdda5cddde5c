/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <arpa/inet.h>
#include <assert.h>
#include <string.h>

#include "addr-class.h"
#include "fuzz.h"

/* Input: one selector byte; if its low bit is set, a NUL-terminated CIDR
 * (parsed, printed, reparsed, then used as an operator range); then raw
 * address bytes, classified as IPv6 and IPv4 sockaddrs. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct sockaddr_storage ss = {};
        EgressCidr extra[2];
        size_t n_extra = 0;
        char text[128];

        if (size < 1)
                return 0;
        uint8_t sel = data[0];
        data++;
        size--;

        if (sel & 1) {
                /* The text runs to the first NUL; what follows is an address. */
                size_t n = strnlen((const char *) data, size < sizeof(text) - 1 ? size : sizeof(text) - 1);
                memcpy(text, data, n);
                text[n] = 0;
                if (n < size)
                        n++;
                if (egress_cidr_parse(text, &extra[0]) == 0) {
                        char back[128];
                        assert(egress_cidr_format(&extra[0], back, sizeof(back)) == 0);
                        EgressCidr again;
                        assert(egress_cidr_parse(back, &again) == 0);
                        assert(again.family == extra[0].family && again.prefixlen == extra[0].prefixlen);
                        n_extra = 1;
                }
                data += n;
                size -= n;
        }
        if (size >= 16) {
                struct sockaddr_in6 *s6 = (struct sockaddr_in6 *) &ss;
                s6->sin6_family = AF_INET6;
                memcpy(&s6->sin6_addr, data, 16);
                const char *r = egress_addr_classify((struct sockaddr *) &ss, sizeof(*s6), extra, n_extra);
                (void) r;
        }
        if (size >= 4) {
                struct sockaddr_in *s4 = (struct sockaddr_in *) &ss;
                memset(&ss, 0, sizeof(ss));
                s4->sin_family = AF_INET;
                memcpy(&s4->sin_addr, data, 4);
                const char *r4 = egress_addr_classify((struct sockaddr *) &ss, sizeof(*s4), extra, n_extra);
                /* The same address mapped into IPv6 must get the same answer. */
                struct in6_addr mapped = { .s6_addr = { [10] = 0xff, [11] = 0xff } };
                memcpy(&mapped.s6_addr[12], data, 4);
                const char *r6 = egress_addr_classify_in6(&mapped, extra, n_extra);
                assert(!r4 == !r6);
        }
        (void) egress_addr_classify((struct sockaddr *) &ss, (socklen_t) (sel >> 1), extra, n_extra);
        return 0;
}
