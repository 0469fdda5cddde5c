/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "errors.h"
#include "spec-bus.h"
#include "spec-service.h"
#include "test-bus.h"

static sd_bus *bus;
static int peer = -1;
static SbxConfig config;

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

static char **strv1(const char *a) {
        char **l = calloc(2, sizeof(char *));
        l[0] = strdup(a);
        return l;
}

/* A service that validates: the tests below break one thing at a time. */
static void service_ok(SbxService *s) {
        static const char key[] = "sk-test-123";
        *s = (SbxService) {
                .set = SERVICE_HAS_URL | SERVICE_HAS_CREDENTIAL,
                .name = strdup("api"),
                .url = strdup("https://api.example.org/v1/"),
                .credential = malloc(sizeof(key) - 1),
                .credential_size = sizeof(key) - 1,
        };
        memcpy(s->credential, key, sizeof(key) - 1);
        sbx_service_apply_defaults(s);
}

static void assert_service_refused(SbxService *s, const char *name, const char *fragment) {
        SbxError e = {};
        assert_true(sbx_services_validate(s, 1, &e) < 0);
        assert_string_equal(e.name, name);
        assert_non_null(strstr(e.message, fragment));
        /* Whatever is wrong, the message never carries the secret. */
        assert_null(strstr(e.message, "sk-test"));
        e = (SbxError) {};
        sbx_service_done(s);
}

static void test_defaults(void **state) {
        SbxService s;
        SbxError e = {};

        service_ok(&s);
        assert_int_equal(sbx_services_validate(&s, 1, &e), 0);
        assert_string_equal(sbx_service_header(&s), "Authorization: Bearer {}");
        assert_string_equal(sbx_service_methods(&s)[0], "GET");
        assert_null(sbx_service_methods(&s)[1]);
        assert_string_equal(sbx_service_paths(&s)[0], "/");
        assert_null(sbx_service_paths(&s)[1]);
        assert_int_equal(s.max_request_bytes, 1u << 20);
        assert_int_equal(s.max_response_bytes, 1u << 20);
        sbx_service_done(&s);
}

static void test_url(void **state) {
        SbxServiceOrigin o;

        assert_int_equal(sbx_service_url_parse("https://API.Example.org", &o), 0);
        assert_string_equal(o.host, "api.example.org");
        assert_int_equal(o.port, 443);
        assert_string_equal(o.base, "");
        assert_int_equal(sbx_service_url_parse("https://api.example.org:8443/v1/", &o), 0);
        assert_int_equal(o.port, 8443);
        assert_string_equal(o.base, "/v1");
        assert_int_equal(sbx_service_url_parse("https://api.example.org/", &o), 0);
        assert_string_equal(o.base, "");

        assert_true(sbx_service_url_parse("http://api.example.org", &o) < 0);
        assert_true(sbx_service_url_parse("https://", &o) < 0);
        assert_true(sbx_service_url_parse("https://user:pw@api.example.org", &o) < 0);
        assert_true(sbx_service_url_parse("https://api.example.org/?q=1", &o) < 0);
        assert_true(sbx_service_url_parse("https://api.example.org/#f", &o) < 0);
        assert_true(sbx_service_url_parse("https://api.example.org:0", &o) < 0);
        assert_true(sbx_service_url_parse("https://api.example.org:65536", &o) < 0);
        assert_true(sbx_service_url_parse("https://api.example.org:", &o) < 0);
        assert_true(sbx_service_url_parse("https://api.example.org:44a", &o) < 0);
        assert_true(sbx_service_url_parse("https://10.0.0.1", &o) < 0);
        assert_true(sbx_service_url_parse("https://0x7f.1", &o) < 0);
        assert_true(sbx_service_url_parse("https://[::1]", &o) < 0);
        assert_true(sbx_service_url_parse("https://api.example.org/a/../b", &o) < 0);
        assert_true(sbx_service_url_parse("https://api.example.org/a b", &o) < 0);
        assert_true(sbx_service_url_parse("https://api.example.org/a\r\nX: y", &o) < 0);
}

static void test_paths(void **state) {
        assert_true(sbx_service_path_is_valid("/"));
        assert_true(sbx_service_path_is_valid("/v1/"));
        assert_true(sbx_service_path_is_valid("/v1/models"));
        assert_true(sbx_service_path_is_valid("/a%20b"));
        assert_false(sbx_service_path_is_valid(""));
        assert_false(sbx_service_path_is_valid("v1/"));
        assert_false(sbx_service_path_is_valid("/v1/.."));
        assert_false(sbx_service_path_is_valid("/./v1"));
        assert_false(sbx_service_path_is_valid("/v1/%2e%2e/admin"));
        assert_false(sbx_service_path_is_valid("/v1%2fadmin"));
        assert_false(sbx_service_path_is_valid("//evil.example"));
        assert_false(sbx_service_path_is_valid("/v1?x=1"));
        assert_false(sbx_service_path_is_valid("/v1#x"));
        assert_false(sbx_service_path_is_valid("/v1 HTTP/1.1\r\nHost: x"));
        assert_false(sbx_service_path_is_valid("/%zz"));
        /* The broker's path rule (broker-path.h; its table is
         * tests/egress/test-broker-path.c): no encoded backslash, second
         * round of decoding or path parameter in a prefix either. */
        assert_false(sbx_service_path_is_valid("/v1/..%5cadmin"));
        assert_false(sbx_service_path_is_valid("/v1/%252e%252e/"));
        assert_false(sbx_service_path_is_valid("/v1;x/"));
}

static void test_header(void **state) {
        char name[SBX_SERVICE_HEADER_MAX + 1];
        const char *tmpl;

        assert_int_equal(sbx_service_header_parse("Authorization: Bearer {}", name, sizeof(name), &tmpl), 0);
        assert_string_equal(name, "Authorization");
        assert_string_equal(tmpl, "Bearer {}");
        assert_int_equal(sbx_service_header_parse("X-Api-Key", name, sizeof(name), &tmpl), 0);
        assert_string_equal(name, "X-Api-Key");
        assert_string_equal(tmpl, "{}");
        assert_int_equal(sbx_service_header_parse("X-Api-Key:{}", name, sizeof(name), &tmpl), 0);
        assert_string_equal(tmpl, "{}");

        assert_int_equal(sbx_service_header_parse("Host: {}", name, sizeof(name), &tmpl), -EPERM);
        assert_int_equal(sbx_service_header_parse("transfer-encoding: {}", name, sizeof(name), &tmpl), -EPERM);
        assert_int_equal(sbx_service_header_parse("Content-Length", name, sizeof(name), &tmpl), -EPERM);
        assert_true(sbx_service_header_parse("Authorization: Bearer", name, sizeof(name), &tmpl) < 0);
        assert_true(sbx_service_header_parse("Authorization: {} {}", name, sizeof(name), &tmpl) < 0);
        assert_true(sbx_service_header_parse("Bad Name: {}", name, sizeof(name), &tmpl) < 0);
        assert_true(sbx_service_header_parse(": {}", name, sizeof(name), &tmpl) < 0);
        assert_true(sbx_service_header_parse("X: {}\r\nX-Injected: 1", name, sizeof(name), &tmpl) < 0);
        assert_true(sbx_service_header_parse("X: {} ", name, sizeof(name), &tmpl) < 0);
}

static void test_refusals(void **state) {
        SbxService s;

        service_ok(&s);
        free(s.name);
        s.name = strdup("my-api");
        assert_service_refused(&s, SBX_ERROR_INVALID_SERVICE, "Service name \"my-api\" is invalid");

        service_ok(&s);
        free(s.name);
        s.name = strdup("1api");
        assert_service_refused(&s, SBX_ERROR_INVALID_SERVICE, "is invalid");

        service_ok(&s);
        s.set &= ~SERVICE_HAS_URL;
        assert_service_refused(&s, SBX_ERROR_INVALID_SERVICE, "has no Url");

        service_ok(&s);
        free(s.url);
        s.url = strdup("http://api.example.org");
        assert_service_refused(&s, SBX_ERROR_INVALID_SERVICE, "is not an https://");

        service_ok(&s);
        s.set &= ~SERVICE_HAS_CREDENTIAL;
        assert_service_refused(&s, SBX_ERROR_INVALID_SERVICE, "has no Credential");

        service_ok(&s);
        s.credential_size = 0;
        assert_service_refused(&s, SBX_ERROR_INVALID_SERVICE, "has no Credential");

        service_ok(&s);
        s.credential[3] = '\n';
        assert_service_refused(&s, SBX_ERROR_INVALID_SERVICE, "printable ASCII");

        service_ok(&s);
        s.credential[3] = 0;
        assert_service_refused(&s, SBX_ERROR_INVALID_SERVICE, "printable ASCII");

        service_ok(&s);
        s.credential[s.credential_size - 1] = ' ';
        assert_service_refused(&s, SBX_ERROR_INVALID_SERVICE, "trailing whitespace");

        service_ok(&s);
        erase_and_free(s.credential, s.credential_size);
        s.credential_size = SBX_SERVICE_CREDENTIAL_MAX + 1;
        s.credential = malloc(s.credential_size);
        memset(s.credential, 'a', s.credential_size);
        assert_service_refused(&s, SBX_ERROR_INVALID_SERVICE, "at most 8192");

        service_ok(&s);
        s.header = strdup("Host: {}");
        s.set |= SERVICE_HAS_HEADER;
        assert_service_refused(&s, SBX_ERROR_INVALID_SERVICE, "Header Host is one the proxy sets");

        service_ok(&s);
        s.header = strdup("Authorization: Basic");
        s.set |= SERVICE_HAS_HEADER;
        assert_service_refused(&s, SBX_ERROR_INVALID_SERVICE, "with one {}");

        service_ok(&s);
        s.methods = strv1("CONNECT");
        s.set |= SERVICE_HAS_METHODS;
        assert_service_refused(&s, SBX_ERROR_INVALID_SERVICE, "Method \"CONNECT\" is not allowed");

        service_ok(&s);
        s.methods = strv1("get");
        s.set |= SERVICE_HAS_METHODS;
        assert_service_refused(&s, SBX_ERROR_INVALID_SERVICE, "(upper case)");

        service_ok(&s);
        s.methods = calloc(1, sizeof(char *));
        s.set |= SERVICE_HAS_METHODS;
        assert_service_refused(&s, SBX_ERROR_INVALID_SERVICE, "Methods is empty");

        service_ok(&s);
        s.paths = strv1("/v1/../admin");
        s.set |= SERVICE_HAS_PATHS;
        assert_service_refused(&s, SBX_ERROR_INVALID_SERVICE, "Path \"/v1/../admin\" is invalid");

        service_ok(&s);
        s.paths = calloc(1, sizeof(char *));
        s.set |= SERVICE_HAS_PATHS;
        assert_service_refused(&s, SBX_ERROR_INVALID_SERVICE, "Paths is empty");

        service_ok(&s);
        s.max_request_bytes = 0;
        s.set |= SERVICE_HAS_MAX_REQUEST;
        assert_service_refused(&s, SBX_ERROR_LIMIT_OUT_OF_RANGE, "MaxRequestBytes=0 is out of range");

        service_ok(&s);
        s.max_request_bytes = SBX_SERVICE_REQUEST_MAX + 1;
        s.set |= SERVICE_HAS_MAX_REQUEST;
        assert_service_refused(&s, SBX_ERROR_LIMIT_OUT_OF_RANGE, "MaxRequestBytes");

        service_ok(&s);
        s.max_response_bytes = SBX_SERVICE_RESPONSE_MAX + 1;
        s.set |= SERVICE_HAS_MAX_RESPONSE;
        assert_service_refused(&s, SBX_ERROR_LIMIT_OUT_OF_RANGE, "MaxResponseBytes");

        service_ok(&s);
        s.set |= SERVICE_HAS_RATE;
        assert_service_refused(&s, SBX_ERROR_LIMIT_OUT_OF_RANGE, "RateBps must be positive");
}

static void test_duplicate_names(void **state) {
        SbxService two[2];
        SbxError e = {};

        service_ok(&two[0]);
        service_ok(&two[1]);
        free(two[1].name);
        two[1].name = strdup("API");
        assert_int_equal(sbx_services_validate(two, 2, &e), -EEXIST);
        assert_string_equal(e.name, SBX_ERROR_INVALID_SERVICE);
        assert_non_null(strstr(e.message, "given twice"));
        e = (SbxError) {};
        sbx_service_done(&two[0]);
        sbx_service_done(&two[1]);
}

static sd_bus_message *new_call(void) {
        sd_bus_message *m = NULL;
        assert_int_equal(sd_bus_message_new_method_call(bus, &m, "org.sandboxd1", "/org/sandboxd1",
                                                        "org.sandboxd1.Manager", "CreateWorker"), 0);
        return m;
}

/* Opens a{sv} with Argv and Services=[(NAME, {...})]; the caller appends
 * the service's settings and calls close_services(). */
static sd_bus_message *open_services(const char *name) {
        sd_bus_message *m = new_call();
        assert_true(sd_bus_message_open_container(m, 'a', "{sv}") >= 0);
        assert_true(sd_bus_message_append(m, "{sv}", "Argv", "as", 1, "/bin/true") >= 0);
        assert_true(sd_bus_message_open_container(m, 'e', "sv") >= 0);
        assert_true(sd_bus_message_append(m, "s", "Services") >= 0);
        assert_true(sd_bus_message_open_container(m, 'v', "a(sa{sv})") >= 0);
        assert_true(sd_bus_message_open_container(m, 'a', "(sa{sv})") >= 0);
        assert_true(sd_bus_message_open_container(m, 'r', "sa{sv}") >= 0);
        assert_true(sd_bus_message_append(m, "s", name) >= 0);
        assert_true(sd_bus_message_open_container(m, 'a', "{sv}") >= 0);
        return m;
}

static int close_and_parse(sd_bus_message *m, WorkerSpec *s, SbxError *e) {
        for (int i = 0; i < 6; i++)
                assert_true(sd_bus_message_close_container(m) >= 0);
        assert_int_equal(test_message_seal(m), 0);
        worker_spec_init(s);
        return worker_spec_from_bus(s, m, e);
}

static void append_credential(sd_bus_message *m, const char *secret) {
        assert_true(sd_bus_message_open_container(m, 'e', "sv") >= 0);
        assert_true(sd_bus_message_append(m, "s", "Credential") >= 0);
        assert_true(sd_bus_message_open_container(m, 'v', "ay") >= 0);
        assert_true(sd_bus_message_append_array(m, 'y', secret, strlen(secret)) >= 0);
        assert_true(sd_bus_message_close_container(m) >= 0);
        assert_true(sd_bus_message_close_container(m) >= 0);
}

static void test_bus_full(void **state) {
        sd_bus_message *m = open_services("api");
        WorkerSpec s;
        SbxError e = {};

        assert_true(sd_bus_message_append(m, "{sv}", "Url", "s", "https://api.example.org/v1") >= 0);
        append_credential(m, "sk-test-123");
        assert_true(sd_bus_message_append(m, "{sv}", "Header", "s", "X-Api-Key: {}") >= 0);
        assert_true(sd_bus_message_append(m, "{sv}", "Methods", "as", 2, "GET", "POST") >= 0);
        assert_true(sd_bus_message_append(m, "{sv}", "Paths", "as", 2, "/models", "/chat/") >= 0);
        assert_true(sd_bus_message_append(m, "{sv}", "MaxRequestBytes", "t", UINT64_C(4096)) >= 0);
        assert_true(sd_bus_message_append(m, "{sv}", "MaxResponseBytes", "t", UINT64_C(8192)) >= 0);
        assert_true(sd_bus_message_append(m, "{sv}", "RateBps", "t", UINT64_C(1000)) >= 0);
        assert_int_equal(close_and_parse(m, &s, &e), 0);
        sd_bus_message_unref(m);

        assert_true(s.set & SPEC_HAS_SERVICES);
        assert_int_equal(s.n_services, 1);
        assert_string_equal(s.services[0].name, "api");
        assert_string_equal(s.services[0].url, "https://api.example.org/v1");
        assert_int_equal(s.services[0].credential_size, 11);
        assert_memory_equal(s.services[0].credential, "sk-test-123", 11);
        assert_string_equal(sbx_service_header(&s.services[0]), "X-Api-Key: {}");
        assert_string_equal(s.services[0].methods[1], "POST");
        assert_string_equal(s.services[0].paths[1], "/chat/");
        assert_int_equal(s.services[0].rate_bps, 1000);
        worker_spec_apply_defaults(&s, &config);
        assert_int_equal(s.services[0].max_request_bytes, 4096);
        assert_int_equal(s.services[0].max_response_bytes, 8192);
        assert_int_equal(worker_spec_validate(&s, &config, &e), 0);
        worker_spec_done(&s);
}

static void test_bus_defaults_and_validate(void **state) {
        sd_bus_message *m = open_services("api");
        WorkerSpec s;
        SbxError e = {};

        assert_true(sd_bus_message_append(m, "{sv}", "Url", "s", "https://api.example.org") >= 0);
        append_credential(m, "sk-test-123");
        assert_int_equal(close_and_parse(m, &s, &e), 0);
        sd_bus_message_unref(m);
        worker_spec_apply_defaults(&s, &config);
        assert_int_equal(s.services[0].max_request_bytes, 1u << 20);
        assert_int_equal(worker_spec_validate(&s, &config, &e), 0);
        worker_spec_done(&s);

        /* A spec-level refusal comes from worker_spec_validate as well. */
        m = open_services("api");
        assert_true(sd_bus_message_append(m, "{sv}", "Url", "s", "https://10.1.2.3") >= 0);
        append_credential(m, "sk-test-123");
        assert_int_equal(close_and_parse(m, &s, &e), 0);
        sd_bus_message_unref(m);
        worker_spec_apply_defaults(&s, &config);
        assert_true(worker_spec_validate(&s, &config, &e) < 0);
        assert_string_equal(e.name, SBX_ERROR_INVALID_SERVICE);
        e = (SbxError) {};
        worker_spec_done(&s);
}

static void test_bus_refusals(void **state) {
        sd_bus_message *m;
        WorkerSpec s;
        SbxError e = {};

        m = open_services("api");
        assert_true(sd_bus_message_append(m, "{sv}", "Token", "s", "x") >= 0);
        assert_true(close_and_parse(m, &s, &e) < 0);
        assert_string_equal(e.name, SBX_ERROR_INVALID_SERVICE);
        assert_non_null(strstr(e.message, "unknown key \"Token\""));
        e = (SbxError) {};
        worker_spec_done(&s);
        sd_bus_message_unref(m);

        m = open_services("api");
        assert_true(sd_bus_message_append(m, "{sv}", "Credential", "s", "sk-test-123") >= 0);
        assert_true(close_and_parse(m, &s, &e) < 0);
        assert_string_equal(e.name, SBX_ERROR_WRONG_TYPE);
        assert_non_null(strstr(e.message, "Credential must be of type ay, not s"));
        assert_null(strstr(e.message, "sk-test"));
        e = (SbxError) {};
        worker_spec_done(&s);
        sd_bus_message_unref(m);

        m = open_services("api");
        assert_true(sd_bus_message_append(m, "{sv}", "Url", "s", "https://a.example.org") >= 0);
        assert_true(sd_bus_message_append(m, "{sv}", "Url", "s", "https://b.example.org") >= 0);
        assert_true(close_and_parse(m, &s, &e) < 0);
        assert_string_equal(e.name, SBX_ERROR_INVALID_SERVICE);
        assert_non_null(strstr(e.message, "more than once"));
        e = (SbxError) {};
        worker_spec_done(&s);
        sd_bus_message_unref(m);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_defaults),
                cmocka_unit_test(test_url),
                cmocka_unit_test(test_paths),
                cmocka_unit_test(test_header),
                cmocka_unit_test(test_refusals),
                cmocka_unit_test(test_duplicate_names),
                cmocka_unit_test(test_bus_full),
                cmocka_unit_test(test_bus_defaults_and_validate),
                cmocka_unit_test(test_bus_refusals),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
