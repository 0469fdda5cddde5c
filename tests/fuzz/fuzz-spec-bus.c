/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "errors.h"
#include "fuzz.h"
#include "spec-bus.h"
#include "spec-gen.h"
#include "test-bus.h"

static sd_bus *bus;
static SbxConfig config;

/* What sd-bus requires of a string it sends: UTF-8 without surrogates,
 * noncharacters or overlong forms. */
static bool utf8_is_sendable(const char *s) {
        const unsigned char *p = (const unsigned char *) s;
        while (*p) {
                uint32_t c;
                size_t n;
                if (*p < 0x80) {
                        p++;
                        continue;
                }
                if ((*p & 0xe0) == 0xc0) { c = *p & 0x1f; n = 1; }
                else if ((*p & 0xf0) == 0xe0) { c = *p & 0x0f; n = 2; }
                else if ((*p & 0xf8) == 0xf0) { c = *p & 0x07; n = 3; }
                else return false;
                for (size_t i = 1; i <= n; i++) {
                        if ((p[i] & 0xc0) != 0x80)
                                return false;
                        c = (c << 6) | (p[i] & 0x3f);
                }
                if ((n == 1 && c < 0x80) || (n == 2 && c < 0x800) || (n == 3 && c < 0x10000) || c > 0x10ffff ||
                    (c >= 0xd800 && c <= 0xdfff) || (c >= 0xfdd0 && c <= 0xfdef) || (c & 0xfffe) == 0xfffe)
                        return false;
                p += n + 1;
        }
        return true;
}

/* The fuzz input drives the spec generator (tests/busfuzz/spec-gen.c):
 * every byte is one of its choices. The spec goes through what
 * CreateWorker does before it asks systemd for anything: parse, defaults,
 * validation. A refusal must be a named error whose reply can be sent. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static int peer = -1;
        sd_bus_message *m, *reply = NULL;
        SpecGenOptions opts = { .budget = 16 * 1024, .unix_fd = -1 };
        SpecShape shape;
        SpecRng rng;
        WorkerSpec spec;
        SbxError e = {};

        if (!bus) {
                bus = test_bus_new_offline(&peer);
                assert(bus);
                sbx_config_init_defaults(&config);
        }
        m = test_message_new(bus, "CreateWorker");
        assert(m);
        spec_rng_from_bytes(&rng, data, size);
        assert(spec_gen_append(m, &rng, &opts, &shape) == 0);
        assert(test_message_seal(m) == 0);
        if (shape == SPEC_SHAPE_WRONG_SIGNATURE) {
                /* sd-bus's vtable refuses those before the handler runs. */
                sd_bus_message_unref(m);
                return 0;
        }

        worker_spec_init(&spec);
        int r = worker_spec_from_bus(&spec, m, &e);
        if (r >= 0) {
                worker_spec_apply_defaults(&spec, &config);
                r = worker_spec_validate(&spec, &config, &e);
        }
        worker_spec_done(&spec);
        if (r < 0) {
                assert(e.name && strncmp(e.name, "org.sandboxd1.Error.", 20) == 0);
                assert(e.message[0]);
                assert(utf8_is_sendable(e.message));
                sd_bus_error error = SD_BUS_ERROR_MAKE_CONST(e.name, e.message);
                assert(sd_bus_message_new_method_error(m, &reply, &error) >= 0);
                sd_bus_message_unref(reply);
        }
        sd_bus_message_unref(m);
        return 0;
}
