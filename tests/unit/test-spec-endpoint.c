/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A spec's Endpoint: read from CreateWorker's a{sv}, checked against
 * [Endpoints]; every refusal names InvalidEndpoint (or WrongType) beside a
 * spec that passes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "errors.h"
#include "spec-bus.h"
#include "spec-endpoint.h"
#include "test-bus.h"

static sd_bus *bus;
static int peer = -1;
static SbxConfig config;
static const char token[] = "0123456789abcdef-token";

static void sbx_error_free(SbxError *e) {
        *e = (SbxError) {};
}

static int setup(void **state) {
        sbx_config_init_defaults(&config);
        bus = test_bus_new_offline(&peer);
        return bus ? 0 : -1;
}

static int teardown(void **state) {
        close(peer);
        sd_bus_close_unref(bus);
        sbx_config_done(&config);
        return 0;
}

/* A spec of Argv and an Endpoint of Port 8080 and the token, plus EXTRA
 * (a {sv} key, its type and value) unless EXTRA_KEY is NULL. */
static int parse(WorkerSpec *s, SbxError *e, bool with_port, bool with_token, const char *extra_key, char type,
                 uint64_t value) {
        sd_bus_message *m = NULL;
        int r;

        assert_int_equal(sd_bus_message_new_method_call(bus, &m, "org.sandboxd1", "/org/sandboxd1",
                                                        "org.sandboxd1.Manager", "CreateWorker"), 0);
        assert_true(sd_bus_message_open_container(m, 'a', "{sv}") >= 0);
        assert_true(sd_bus_message_append(m, "{sv}", "Argv", "as", 1, "/bin/true") >= 0);
        assert_true(sd_bus_message_open_container(m, 'e', "sv") >= 0);
        assert_true(sd_bus_message_append(m, "s", "Endpoint") >= 0);
        assert_true(sd_bus_message_open_container(m, 'v', "a{sv}") >= 0);
        assert_true(sd_bus_message_open_container(m, 'a', "{sv}") >= 0);
        if (with_port)
                assert_true(sd_bus_message_append(m, "{sv}", "Port", "q", (uint16_t) 8080) >= 0);
        if (with_token) {
                assert_true(sd_bus_message_open_container(m, 'e', "sv") >= 0);
                assert_true(sd_bus_message_append(m, "s", "TokenCredential") >= 0);
                assert_true(sd_bus_message_open_container(m, 'v', "ay") >= 0);
                assert_true(sd_bus_message_append_array(m, 'y', token, strlen(token)) >= 0);
                assert_true(sd_bus_message_close_container(m) >= 0);
                assert_true(sd_bus_message_close_container(m) >= 0);
        }
        if (extra_key) {
                if (type == 'q')
                        assert_true(sd_bus_message_append(m, "{sv}", extra_key, "q", (uint16_t) value) >= 0);
                else if (type == 'u')
                        assert_true(sd_bus_message_append(m, "{sv}", extra_key, "u", (uint32_t) value) >= 0);
                else if (type == 'b')
                        assert_true(sd_bus_message_append(m, "{sv}", extra_key, "b", (int) value) >= 0);
                else if (type == 's')
                        assert_true(sd_bus_message_append(m, "{sv}", extra_key, "s",
                                                          (const char *) (uintptr_t) value) >= 0);
                else
                        assert_true(sd_bus_message_append(m, "{sv}", extra_key, "t", value) >= 0);
        }
        for (int i = 0; i < 4; i++)
                assert_true(sd_bus_message_close_container(m) >= 0);
        assert_int_equal(test_message_seal(m), 0);
        worker_spec_init(s);
        r = worker_spec_from_bus(s, m, e);
        sd_bus_message_unref(m);
        if (r < 0)
                return r;
        worker_spec_apply_defaults(s, &config);
        return worker_spec_validate(s, &config, e);
}

static void expect(int r, const SbxError *e, const char *name, const char *words) {
        assert_true(r < 0);
        assert_non_null(e->name);
        assert_string_equal(e->name, name);
        if (words && !strstr(e->message, words))
                fail_msg("\"%s\" not in: %s", words, e->message);
        /* Never the secret in an error. */
        assert_null(strstr(e->message, token));
}

static void test_valid_and_defaults(void **state) {
        WorkerSpec s;
        SbxError e = {};

        assert_int_equal(parse(&s, &e, true, true, NULL, 0, 0), 0);
        assert_true(sbx_endpoint_wanted(&s.endpoint));
        assert_int_equal(s.endpoint.port, 8080);
        assert_int_equal(s.endpoint.max_request_bytes, 1 << 20);
        assert_int_equal(s.endpoint.max_response_bytes, 1 << 20);
        assert_int_equal(s.endpoint.max_concurrent, SBX_ENDPOINT_CONCURRENT_DEFAULT);
        assert_memory_equal(s.endpoint.token, token, strlen(token));
        /* NoExec defaults on with an endpoint... */
        assert_true(s.no_exec);
        worker_spec_done(&s);
        sbx_error_free(&e);
        /* ... and stays off without, unless asked for. */
        worker_spec_init(&s);
        worker_spec_apply_defaults(&s, &config);
        assert_false(s.no_exec);
        worker_spec_done(&s);
}

static void test_refusals(void **state) {
        WorkerSpec s;
        SbxError e = {};

#define REFUSED(call, name, words) do { \
                e = (SbxError) {}; \
                expect(call, &e, name, words); \
                worker_spec_done(&s); \
                sbx_error_free(&e); \
        } while (0)
        REFUSED(parse(&s, &e, false, true, NULL, 0, 0), SBX_ERROR_INVALID_ENDPOINT, "Port");
        REFUSED(parse(&s, &e, true, false, NULL, 0, 0), SBX_ERROR_INVALID_ENDPOINT, "TokenCredential");
        REFUSED(parse(&s, &e, true, true, "Bogus", 't', 1), SBX_ERROR_INVALID_ENDPOINT, "unknown key");
        REFUSED(parse(&s, &e, true, true, "MaxConcurrent", 't', 1), SBX_ERROR_WRONG_TYPE, "MaxConcurrent");
        REFUSED(parse(&s, &e, true, true, "MaxConcurrent", 'u', 0), SBX_ERROR_INVALID_ENDPOINT, "MaxConcurrent");
        REFUSED(parse(&s, &e, true, true, "MaxResponseBytes", 't', UINT64_C(1) << 30), SBX_ERROR_INVALID_ENDPOINT,
                "MaxResponseBytes");
        REFUSED(parse(&s, &e, true, true, "MaxRequestBytes", 't', UINT64_C(1) << 30), SBX_ERROR_INVALID_ENDPOINT,
                "MaxRequestBytes");
        REFUSED(parse(&s, &e, true, true, "TimeoutUSec", 't', 10), SBX_ERROR_INVALID_ENDPOINT, "TimeoutUSec");
        REFUSED(parse(&s, &e, true, true, "Public", 'b', 1), SBX_ERROR_INVALID_ENDPOINT, "give one");
        REFUSED(parse(&s, &e, true, false, "Public", 'b', 1), SBX_ERROR_INVALID_ENDPOINT, "AllowPublic");
#undef REFUSED
}

static void test_name(void **state) {
        static const char *good[] = { "a", "my-app", "app2", "0123456789abc", "x0123456789a",
                                      "abcdefghij-abcdefghij-abcdefghij-abcdefghij-abcdefghij-abcdefgh" };
        static const char *bad[] = { "", "-app", "app-", "My-App", "my_app", "my.app", "0123456789ab", "deadbeef0042",
                                     "app/x", "../app", "abcdefghij-abcdefghij-abcdefghij-abcdefghij-abcdefghij-abcdefghi" };
        WorkerSpec s;
        SbxError e = {};

        for (size_t i = 0; i < ELEMENTSOF(good); i++)
                if (!sbx_endpoint_name_valid(good[i]))
                        fail_msg("\"%s\" refused", good[i]);
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                if (sbx_endpoint_name_valid(bad[i]))
                        fail_msg("\"%s\" accepted", bad[i]);
        /* Through CreateWorker's spec: the control, then a refusal that
         * names the rule. */
        assert_int_equal(parse(&s, &e, true, true, "Name", 's', (uintptr_t) "my-app"), 0);
        assert_string_equal(s.endpoint.name, "my-app");
        worker_spec_done(&s);
        sbx_error_free(&e);
        e = (SbxError) {};
        expect(parse(&s, &e, true, true, "Name", 's', (uintptr_t) "0123456789ab"), &e, SBX_ERROR_INVALID_ENDPOINT,
               "12 hex digits");
        worker_spec_done(&s);
        sbx_error_free(&e);
        e = (SbxError) {};
        expect(parse(&s, &e, true, true, "Name", 'q', 1), &e, SBX_ERROR_WRONG_TYPE, "Name");
        worker_spec_done(&s);
        sbx_error_free(&e);
}

static void test_public_where_allowed(void **state) {
        WorkerSpec s;
        SbxError e = {};

        config.endpoints_allow_public = true;
        assert_int_equal(parse(&s, &e, true, false, "Public", 'b', 1), 0);
        worker_spec_done(&s);
        /* Not where anyone local may reach a TCP port. */
        config.endpoints_port_range = strdup("20000-20010");
        expect(parse(&s, &e, true, false, "Public", 'b', 1), &e, SBX_ERROR_INVALID_ENDPOINT, "PortRange");
        worker_spec_done(&s);
        sbx_error_free(&e);
        free(config.endpoints_port_range);
        config.endpoints_port_range = NULL;
        config.endpoints_allow_public = false;
}

static void test_validate_directly(void **state) {
        SbxEndpoint ep = { .requested = true, .set = ENDPOINT_HAS_PORT | ENDPOINT_HAS_TOKEN, .port = 3128 };
        uint8_t good[] = "0123456789abcdefXYZ", spaced[] = "0123456789 abcdefXYZ", shortt[] = "short";
        SbxError e = {};

        sbx_endpoint_apply_defaults(&ep);
        ep.token = good;
        ep.token_size = sizeof(good) - 1;
        /* The egress proxy's ports are not a handler's. */
        expect(sbx_endpoint_validate(&ep, SBX_CLASS_TRUSTED, &config, &e), &e, SBX_ERROR_INVALID_ENDPOINT, "egress proxy");
        sbx_error_free(&e);
        ep.port = 8000;
        assert_int_equal(sbx_endpoint_validate(&ep, SBX_CLASS_UNTRUSTED, &config, &e), 0);
        expect(sbx_endpoint_validate(&ep, SBX_CLASS_WASM, &config, &e), &e, SBX_ERROR_INVALID_ENDPOINT, "wasm");
        sbx_error_free(&e);
        ep.token = spaced;
        ep.token_size = sizeof(spaced) - 1;
        expect(sbx_endpoint_validate(&ep, SBX_CLASS_TRUSTED, &config, &e), &e, SBX_ERROR_INVALID_ENDPOINT, "printable");
        sbx_error_free(&e);
        ep.token = shortt;
        ep.token_size = sizeof(shortt) - 1;
        expect(sbx_endpoint_validate(&ep, SBX_CLASS_TRUSTED, &config, &e), &e, SBX_ERROR_INVALID_ENDPOINT, "bytes");
        sbx_error_free(&e);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_valid_and_defaults),
                cmocka_unit_test(test_refusals),
                cmocka_unit_test(test_public_where_allowed),
                cmocka_unit_test(test_name),
                cmocka_unit_test(test_validate_directly),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
