/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "egress-policy.h"
#include "fuzz.h"

/* The proxy loads its policy from a credential sandboxd wrote, but the
 * loader is the one piece that reads it, so it must hold for any bytes. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_egress_policy_ EgressPolicy *p = NULL, *again = NULL;
        char host[EGRESS_HOST_MAX + 1];
        char *text, *json = NULL, *json2 = NULL;

        /* JSON text ends at the first NUL, as a C string read from a file would. */
        text = malloc(size + 1);
        if (!text)
                return 0;
        memcpy(text, data, size);
        text[size] = 0;
        int r = egress_policy_from_json(text, &p);
        free(text);
        if (r < 0)
                return 0;

        /* What loads writes back, and that loads to the same policy. */
        assert(egress_policy_to_json(p, &json) == 0);
        assert(egress_policy_from_json(json, &again) == 0);
        assert(egress_policy_to_json(again, &json2) == 0);
        assert(strcmp(json, json2) == 0);
        free(json);
        free(json2);

        /* A loaded policy answers every host, allowed or with a reason. */
        static const char *const hosts[] = { "example.org", "a.example.org", "127.0.0.1", "xn--bcher-kva.example", "" };
        for (size_t i = 0; i < sizeof(hosts) / sizeof(hosts[0]); i++)
                (void) egress_policy_check_host(p, hosts[i], false, 443, host, sizeof(host));
        return 0;
}
