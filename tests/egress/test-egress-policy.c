/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "egress-policy.h"

#define _cleanup_free_ __attribute__((cleanup(freep)))
static void freep(void *p) { free(*(void **) p); }

static const char *check(const EgressPolicy *p, const char *host, uint16_t port) {
        char out[EGRESS_HOST_MAX + 1];
        return egress_policy_check_host(p, host, false, port, out, sizeof(out));
}

static void test_defaults(void **state) {
        _cleanup_egress_policy_ EgressPolicy *p = NULL;
        assert_int_equal(egress_policy_new(&p), 0);
        assert_int_equal(p->mode, EGRESS_MODE_ENFORCE);
        assert_true(p->require_tls);
        assert_int_equal(p->n_allow, 0);
        assert_int_equal(p->n_floor, 1);
        assert_true(p->floor[0].any_host);
        /* Nothing is allowed until something is. */
        assert_string_equal(check(p, "example.org", 443), "not-in-allow-list");
}

static void test_allow_deny_floor(void **state) {
        _cleanup_egress_policy_ EgressPolicy *p = NULL;
        assert_int_equal(egress_policy_new(&p), 0);
        assert_int_equal(egress_policy_add_allow(p, "*.example.org"), 0);
        assert_int_equal(egress_policy_add_allow(p, "git.example.net:8443"), 0);
        assert_int_equal(egress_policy_add_deny(p, "secret.example.org"), 0);

        assert_null(check(p, "api.example.org", 443));
        assert_null(check(p, "API.Example.Org.", 443));
        assert_string_equal(check(p, "example.org", 443), "not-in-allow-list");
        assert_string_equal(check(p, "evilexample.org", 443), "not-in-allow-list");
        assert_string_equal(check(p, "api.example.org.evil.com", 443), "not-in-allow-list");
        assert_string_equal(check(p, "api.example.org", 22), "port-not-allowed");
        assert_string_equal(check(p, "api.example.org", 80), "port-not-allowed");
        assert_null(check(p, "git.example.net", 8443));
        assert_string_equal(check(p, "git.example.net", 443), "port-not-allowed");
        /* Deny wins over allow, on every port. */
        assert_string_equal(check(p, "secret.example.org", 443), "denied-by-rule");
        assert_string_equal(check(p, "SECRET.example.org.", 443), "denied-by-rule");

        /* The floor bounds the spec: only what both allow passes. */
        egress_policy_clear_floor(p);
        assert_string_equal(check(p, "api.example.org", 443), "outside-operator-floor");
        assert_int_equal(egress_policy_add_floor(p, "*.example.org"), 0);
        assert_null(check(p, "api.example.org", 443));
        assert_string_equal(check(p, "git.example.net", 8443), "outside-operator-floor");
        assert_int_equal(egress_policy_add_floor(p, "git.example.net:9000"), 0);
        assert_string_equal(check(p, "git.example.net", 8443), "outside-operator-floor");
        assert_int_equal(egress_policy_add_floor(p, "git.example.net"), 0);
        assert_null(check(p, "git.example.net", 8443));
}

/* A broker service's host: the operator's deny rules and floor, with no
 * allow-list of the worker's in between. */
static void test_operator_rules(void **state) {
        _cleanup_egress_policy_ EgressPolicy *p = NULL;
        assert_int_equal(egress_policy_new(&p), 0);
        assert_int_equal(egress_policy_add_deny(p, "secret.example.org"), 0);

        /* The default floor lets everything through but the deny rules. */
        assert_null(egress_policy_check_operator(p, "api.example.org", 443));
        assert_string_equal(egress_policy_check_operator(p, "secret.example.org", 443), "denied-by-rule");
        egress_policy_clear_floor(p);
        assert_string_equal(egress_policy_check_operator(p, "api.example.org", 443), "outside-operator-floor");
        assert_int_equal(egress_policy_add_floor(p, "*.example.org"), 0);
        assert_null(egress_policy_check_operator(p, "api.example.org", 443));
        assert_string_equal(egress_policy_check_operator(p, "api.example.net", 443), "outside-operator-floor");
        /* Deny wins over the floor. */
        assert_string_equal(egress_policy_check_operator(p, "secret.example.org", 443), "denied-by-rule");
}

static void test_literals(void **state) {
        _cleanup_egress_policy_ EgressPolicy *p = NULL;
        char out[EGRESS_HOST_MAX + 1];

        assert_int_equal(egress_policy_new(&p), 0);
        assert_int_equal(egress_policy_add_allow(p, "*"), 0);   /* even with everything allowed */
        assert_string_equal(check(p, "127.0.0.1", 443), "ip-literal");
        assert_string_equal(check(p, "203.0.113.10", 443), "ip-literal");
        assert_string_equal(check(p, "0x7f.1", 443), "ip-literal-obfuscated");
        assert_string_equal(check(p, "017.0.0.1", 443), "ip-literal-obfuscated");
        assert_string_equal(check(p, "2130706433", 443), "ip-literal-obfuscated");
        assert_string_equal(check(p, "bad_host!", 443), "invalid-host");
        assert_string_equal(egress_policy_check_host(p, "::ffff:169.254.169.254", true, 443, out, sizeof(out)),
                            "ip-literal");
        assert_null(check(p, "anything.example", 443));
}

static void test_bad_entries(void **state) {
        _cleanup_egress_policy_ EgressPolicy *p = NULL;
        assert_int_equal(egress_policy_new(&p), 0);
        assert_int_equal(egress_policy_add_allow(p, "a*.org"), -EINVAL);
        assert_int_equal(egress_policy_add_allow(p, "10.0.0.1"), -EINVAL);
        assert_int_equal(egress_policy_add_private_range(p, "10.0.0.1/8"), -EINVAL);
        assert_int_equal(egress_policy_add_private_range(p, "192.0.2.0/33"), -EINVAL);
        assert_int_equal(egress_policy_add_private_range(p, "192.0.2.0/24"), 0);
        assert_int_equal(egress_policy_set_worker_id(p, "a/b"), -EINVAL);
        assert_int_equal(egress_policy_set_worker_id(p, ""), -EINVAL);
        assert_int_equal(egress_policy_set_worker_id(p, "w-1234.abc"), 0);
        assert_int_equal(p->n_allow, 0);
        assert_int_equal(p->n_private_ranges, 1);
}

static void test_json_roundtrip(void **state) {
        _cleanup_egress_policy_ EgressPolicy *p = NULL, *q = NULL;
        char path[] = "/tmp/test-egress-policy-XXXXXX";
        _cleanup_free_ char *a = NULL, *b = NULL;
        struct stat st;
        int fd;

        assert_int_equal(egress_policy_new(&p), 0);
        assert_int_equal(egress_policy_set_worker_id(p, "w1"), 0);
        p->mode = EGRESS_MODE_REPORT;
        p->require_tls = false;
        p->rate_bps = 200000;
        p->rate_burst = 50000;
        p->max_tunnels = 7;
        p->hello_timeout_usec = 1500000;
        assert_int_equal(p->refusal_log_burst, 20);
        assert_int_equal(p->refusal_log_window_usec, 10000000);
        p->refusal_log_burst = 1000;
        p->refusal_log_window_usec = 2000000;
        assert_int_equal(egress_policy_add_allow(p, "*.example.org"), 0);
        assert_int_equal(egress_policy_add_allow(p, "example.net:8443"), 0);
        assert_int_equal(egress_policy_add_deny(p, "bad.example.org"), 0);
        egress_policy_clear_floor(p);
        assert_int_equal(egress_policy_add_floor(p, "*.example.org"), 0);
        assert_int_equal(egress_policy_add_private_range(p, "192.0.2.0/24"), 0);
        assert_int_equal(egress_policy_add_private_range(p, "2001:db8::/32"), 0);

        fd = mkstemp(path);
        assert_true(fd >= 0);
        close(fd);
        assert_int_equal(egress_policy_to_json_file(p, path), 0);
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0600);
        assert_int_equal(egress_policy_from_json_file(path, &q), 0);
        unlink(path);

        assert_string_equal(q->worker_id, "w1");
        assert_int_equal(q->mode, EGRESS_MODE_REPORT);
        assert_false(q->require_tls);
        assert_int_equal(q->rate_bps, 200000);
        assert_int_equal(q->rate_burst, 50000);
        assert_int_equal(q->max_tunnels, 7);
        assert_int_equal(q->hello_timeout_usec, 1500000);
        assert_int_equal(q->refusal_log_burst, 1000);
        assert_int_equal(q->refusal_log_window_usec, 2000000);
        assert_int_equal(q->n_allow, 2);
        assert_int_equal(q->n_deny, 1);
        assert_int_equal(q->n_floor, 1);
        assert_int_equal(q->n_private_ranges, 2);
        assert_int_equal(egress_policy_to_json(p, &a), 0);
        assert_int_equal(egress_policy_to_json(q, &b), 0);
        assert_string_equal(a, b);
}

static void test_json_refusals(void **state) {
        EgressPolicy *p = NULL;
        static const char *const bad[] = {
                "",
                "[]",
                "{\"allow\": \"example.org\"}",
                "{\"allow\": [1]}",
                "{\"allow\": [\"a*.org\"]}",
                "{\"unknown\": 1}",
                "{\"mode\": \"permissive\"}",
                "{\"require_tls\": 1}",
                "{\"rate_bps\": -1}",
                "{\"rate_bps\": \"100\"}",
                "{\"max_tunnels\": 0}",
                "{\"hello_timeout_ms\": 0}",
                "{\"refusal_log_burst\": -1}",
                "{\"refusal_log_burst\": 1000001}",
                "{\"refusal_log_window_ms\": 0}",
                "{\"private_ranges\": [\"10.0.0.0/99\"]}",
                "{\"worker_id\": \"../x\"}",
                "{} trailing",
                "{\"allow\": [",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                assert_int_not_equal(egress_policy_from_json(bad[i], &p), 0);
                assert_null(p);
        }
        /* An empty floor is kept empty: the operator allows nothing. */
        assert_int_equal(egress_policy_from_json("{\"allow\": [\"a.org\"], \"floor\": []}", &p), 0);
        assert_int_equal(p->n_floor, 0);
        assert_string_equal(check(p, "a.org", 443), "outside-operator-floor");
        egress_policy_free(p);
        /* A missing floor is the default "*". */
        assert_int_equal(egress_policy_from_json("{\"allow\": [\"a.org\"]}", &p), 0);
        assert_null(check(p, "a.org", 443));
        egress_policy_free(p);
}

static char *gh_methods[] = { "GET", "POST", NULL };
static char *gh_paths[] = { "/repos/", "/user", NULL };

static EgressService gh_service(void) {
        return (EgressService) {
                .name = (char *) "GITHUB", .listen_port = 3129, .host = (char *) "API.Example.Test.", .port = 443,
                .base = (char *) "/v1", .header_name = (char *) "Authorization",
                .header_template = (char *) "Bearer {}", .methods = gh_methods, .n_methods = 2,
                .paths = gh_paths, .n_paths = 2, .max_request_bytes = 1048576, .max_response_bytes = 2097152,
                .rate_bps = 100000,
        };
}

static void test_services_roundtrip(void **state) {
        _cleanup_egress_policy_ EgressPolicy *p = NULL, *q = NULL;
        _cleanup_free_ char *a = NULL, *b = NULL;
        EgressService s = gh_service();
        char *one_method[] = { "GET", NULL }, *one_path[] = { "/", NULL };

        assert_int_equal(egress_policy_new(&p), 0);
        assert_int_equal(egress_policy_add_service(p, &s), 0);
        s = (EgressService) { .name = (char *) "store_2", .listen_port = 3130, .host = (char *) "s.example.test",
                              .port = 8443, .base = (char *) "", .header_name = (char *) "X-Api-Key",
                              .header_template = (char *) "{}", .methods = one_method, .n_methods = 1,
                              .paths = one_path, .n_paths = 1, .max_request_bytes = 1, .max_response_bytes = 1 };
        assert_int_equal(egress_policy_add_service(p, &s), 0);
        assert_int_equal(egress_policy_set_broker_ca_file(p, "/etc/sandboxd/broker-ca.pem"), 0);
        assert_int_equal(egress_policy_to_json(p, &a), 0);
        assert_non_null(strstr(a, "\"listen_port\":3129"));
        assert_int_equal(egress_policy_from_json(a, &q), 0);
        assert_int_equal(q->n_services, 2);
        assert_string_equal(q->broker_ca_file, "/etc/sandboxd/broker-ca.pem");

        const EgressService *g = egress_policy_find_service(q, 3129);
        assert_non_null(g);
        assert_string_equal(g->name, "GITHUB");
        assert_string_equal(g->host, "api.example.test");   /* normalised */
        assert_int_equal(g->port, 443);
        assert_string_equal(g->base, "/v1");
        assert_string_equal(g->header_name, "Authorization");
        assert_string_equal(g->header_template, "Bearer {}");
        assert_int_equal(g->n_methods, 2);
        assert_string_equal(g->methods[1], "POST");
        assert_null(g->methods[2]);   /* NULL-terminated, as BrokerRoute wants */
        assert_int_equal(g->n_paths, 2);
        assert_string_equal(g->paths[0], "/repos/");
        assert_null(g->paths[2]);
        assert_int_equal(g->max_request_bytes, 1048576);
        assert_int_equal(g->max_response_bytes, 2097152);
        assert_int_equal(g->rate_bps, 100000);
        const EgressService *t = egress_policy_find_service(q, 3130);
        assert_non_null(t);
        assert_string_equal(t->name, "store_2");
        assert_string_equal(t->base, "");
        assert_int_equal(t->port, 8443);
        assert_null(egress_policy_find_service(q, 3128));
        assert_null(egress_policy_find_service(q, 3131));

        assert_int_equal(egress_policy_to_json(q, &b), 0);
        assert_string_equal(a, b);
}

static void test_services_refused(void **state) {
        _cleanup_egress_policy_ EgressPolicy *p = NULL;
        char *bad_method[] = { "GE T", NULL }, *bad_path[] = { "/a/../b", NULL }, *rel_path[] = { "a", NULL };
        EgressService s;

        assert_int_equal(egress_policy_new(&p), 0);
#define REFUSED(field, value)                                                   \
        do {                                                                    \
                s = gh_service();                                               \
                s.field = value;                                                \
                assert_int_equal(egress_policy_add_service(p, &s), -EINVAL);    \
                assert_int_equal(p->n_services, 0);                             \
        } while (0)
        REFUSED(name, (char *) "");
        REFUSED(name, (char *) "1ABC");
        REFUSED(name, (char *) "A-B");
        REFUSED(name, (char *) "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456");   /* 33 */
        REFUSED(listen_port, 0);
        REFUSED(listen_port, EGRESS_PROXY_PORT);
        REFUSED(host, (char *) "127.0.0.1");
        REFUSED(host, (char *) "0x7f.1");
        REFUSED(host, (char *) "::1");
        REFUSED(host, (char *) "bad_host!");
        REFUSED(host, NULL);
        REFUSED(port, 0);
        REFUSED(base, (char *) "/v1/");
        REFUSED(base, (char *) "v1");
        REFUSED(base, (char *) "/%2e%2e");
        REFUSED(base, NULL);
        REFUSED(header_name, (char *) "Content-Length");
        REFUSED(header_name, (char *) "host");
        REFUSED(header_name, (char *) "X Key");
        REFUSED(header_name, (char *) "X-Key\r\nEvil");
        REFUSED(header_template, (char *) "Bearer");
        REFUSED(header_template, (char *) "{} {}");
        REFUSED(header_template, (char *) "Bearer {}\r\nX-Evil: 1");
        REFUSED(header_template, (char *) " {}");
        REFUSED(methods, bad_method);
        REFUSED(n_methods, 0);
        REFUSED(n_methods, EGRESS_SERVICE_METHODS_MAX + 1);
        REFUSED(paths, bad_path);
        REFUSED(paths, rel_path);
        REFUSED(n_paths, 0);
        REFUSED(max_request_bytes, 0);
        REFUSED(max_request_bytes, EGRESS_SERVICE_REQUEST_MAX + 1);
        REFUSED(max_response_bytes, 0);
        REFUSED(max_response_bytes, EGRESS_SERVICE_RESPONSE_MAX + 1);
        REFUSED(rate_bps, (UINT64_C(1) << 40) + 1);
#undef REFUSED

        /* Names (case-insensitively: they become SANDBOX_SERVICE_<NAME>_URL) and ports are unique. */
        s = gh_service();
        assert_int_equal(egress_policy_add_service(p, &s), 0);
        s.listen_port = 3130;
        s.name = (char *) "github";
        assert_int_equal(egress_policy_add_service(p, &s), -EINVAL);
        s.name = (char *) "OTHER";
        s.listen_port = 3129;
        assert_int_equal(egress_policy_add_service(p, &s), -EINVAL);
        assert_int_equal(p->n_services, 1);
        for (unsigned i = 1; i < EGRESS_SERVICES_MAX; i++) {
                char name[16];
                snprintf(name, sizeof(name), "S%u", i);
                s.name = name;
                s.listen_port = (uint16_t) (3129 + i);
                assert_int_equal(egress_policy_add_service(p, &s), 0);
        }
        s.name = (char *) "ONE_TOO_MANY";
        s.listen_port = 4000;
        assert_int_equal(egress_policy_add_service(p, &s), -E2BIG);

        assert_int_equal(egress_policy_set_broker_ca_file(p, "relative.pem"), -EINVAL);
        assert_int_equal(egress_policy_set_broker_ca_file(p, ""), -EINVAL);
}

#define SVC_OK "\"name\": \"A\", \"listen_port\": 3129, \"host\": \"a.test\", \"port\": 443, \"base\": \"\", " \
               "\"header_name\": \"Authorization\", \"header_template\": \"Bearer {}\", \"methods\": [\"GET\"], " \
               "\"paths\": [\"/\"], \"max_request_bytes\": 1048576, \"max_response_bytes\": 1048576"

static void test_services_json_refusals(void **state) {
        EgressPolicy *p = NULL;
        static const char *const bad[] = {
                "{\"services\": {}}",
                "{\"services\": [1]}",
                "{\"services\": [{" SVC_OK "}]}",                              /* rate_bps missing */
                "{\"services\": [{" SVC_OK ", \"rate_bps\": 0, \"extra\": 1}]}",
                "{\"services\": [{" SVC_OK ", \"rate_bps\": -1}]}",
                "{\"services\": [{" SVC_OK ", \"rate_bps\": \"0\"}]}",
                "{\"services\": [{" SVC_OK ", \"rate_bps\": 0}, {" SVC_OK ", \"rate_bps\": 0}]}",   /* same port */
                "{\"broker_ca_file\": 1}",
                "{\"broker_ca_file\": \"ca.pem\"}",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                assert_int_not_equal(egress_policy_from_json(bad[i], &p), 0);
                assert_null(p);
        }
        /* Each field checked on the way in as egress_policy_add_service checks it. */
        assert_int_not_equal(egress_policy_from_json("{\"services\": [{\"name\": \"A\", \"listen_port\": 70000, "
                                                     "\"host\": \"a.test\", \"port\": 443, \"base\": \"\", "
                                                     "\"header_name\": \"Authorization\", \"header_template\": \"{}\", "
                                                     "\"methods\": [\"GET\"], \"paths\": [\"/\"], \"max_request_bytes\": 1, "
                                                     "\"max_response_bytes\": 1, \"rate_bps\": 0}]}", &p), 0);
        assert_null(p);
        assert_int_equal(egress_policy_from_json("{\"services\": [{" SVC_OK ", \"rate_bps\": 0}]}", &p), 0);
        assert_int_equal(p->n_services, 1);
        assert_null(p->broker_ca_file);
        egress_policy_free(p);
        /* No services: the key may be left out, and an old policy still loads. */
        assert_int_equal(egress_policy_from_json("{}", &p), 0);
        assert_int_equal(p->n_services, 0);
        /* Nor is it written then: the policy reads as before services existed. */
        char *text = NULL;
        assert_int_equal(egress_policy_to_json(p, &text), 0);
        assert_null(strstr(text, "services"));
        assert_null(strstr(text, "broker_ca_file"));
        free(text);
        egress_policy_free(p);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_defaults),
                cmocka_unit_test(test_allow_deny_floor),
                cmocka_unit_test(test_operator_rules),
                cmocka_unit_test(test_literals),
                cmocka_unit_test(test_bad_entries),
                cmocka_unit_test(test_json_roundtrip),
                cmocka_unit_test(test_json_refusals),
                cmocka_unit_test(test_services_roundtrip),
                cmocka_unit_test(test_services_refused),
                cmocka_unit_test(test_services_json_refusals),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
