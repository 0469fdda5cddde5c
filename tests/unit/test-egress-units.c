/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <cmocka.h>

#include "egress-policy.h"
#include "egress-units.h"
#include "errors.h"
#include "spec-service.h"
#include "test-bus.h"

static char **strv2(const char *a, const char *b) {
        char **l = calloc(3, sizeof(char *));
        l[0] = a ? strdup(a) : NULL;
        l[1] = b ? strdup(b) : NULL;
        return l;
}

static void test_policy_json(void **state) {
        SbxConfig c;
        WorkerSpec s;
        _cleanup_free_ char *json = NULL;
        EgressPolicy *p = NULL;
        char host[300];

        sbx_config_init_defaults(&c);
        c.egress_floor = strv2("*.example.org", NULL);
        c.egress_deny = strv2("evil.example.org", NULL);
        c.egress_private_ranges = strv2("203.0.113.128/25", NULL);
        worker_spec_init(&s);
        s.egress_allow = strv2("*.example.org", "other.net");
        s.egress_rate_bps = 4096;
        s.egress_report_only = true;

        assert_int_equal(worker_egress_policy_json(&s, &c, "0123456789ab", &json, NULL), 0);
        assert_int_equal(egress_policy_from_json(json, &p), 0);
        assert_string_equal(p->worker_id, "0123456789ab");
        assert_int_equal(p->mode, EGRESS_MODE_REPORT);
        assert_true(p->require_tls);
        assert_int_equal(p->rate_bps, 4096);
        assert_int_equal(p->n_allow, 2);
        assert_int_equal(p->n_floor, 1);
        assert_int_equal(p->n_deny, 1);
        assert_int_equal(p->n_private_ranges, 1);
        /* Allowed by the spec and inside the floor. */
        assert_null(egress_policy_check_host(p, "api.example.org", false, 443, host, sizeof(host)));
        /* Allowed by the spec, outside the operator's floor. */
        assert_non_null(egress_policy_check_host(p, "other.net", false, 443, host, sizeof(host)));
        /* Denied by the operator whatever the spec says. */
        assert_non_null(egress_policy_check_host(p, "evil.example.org", false, 443, host, sizeof(host)));
        egress_policy_free(p);

        /* No floor configured: nothing is reachable. */
        strv_free(c.egress_floor);
        c.egress_floor = NULL;
        free(json);
        json = NULL;
        assert_int_equal(worker_egress_policy_json(&s, &c, "0123456789ab", &json, NULL), 0);
        assert_int_equal(egress_policy_from_json(json, &p), 0);
        assert_non_null(egress_policy_check_host(p, "api.example.org", false, 443, host, sizeof(host)));
        egress_policy_free(p);

        worker_spec_done(&s);
        sbx_config_done(&c);
}

static void test_policy_refuses_bad_operator_entries(void **state) {
        SbxConfig c;
        WorkerSpec s;
        char *json = NULL;
        SbxError e = {};

        sbx_config_init_defaults(&c);
        c.egress_private_ranges = strv2("10.0.0.0/99", NULL);
        worker_spec_init(&s);
        s.egress_allow = strv2("example.org", NULL);
        assert_true(worker_egress_policy_json(&s, &c, "0123456789ab", &json, &e) < 0);
        assert_string_equal(e.name, SBX_ERROR_INVALID_EGRESS);
        assert_null(json);
        worker_spec_done(&s);
        sbx_config_done(&c);
}

static void test_aux_units(void **state) {
        int peer = -1;
        sd_bus *bus = test_bus_new_offline(&peer);
        sd_bus_message *m = NULL;
        _cleanup_free_ char *d = NULL;
        WorkerSpec spec;

        worker_spec_init(&spec);
        spec.egress_allow = strv2("example.org", NULL);
        assert_non_null(bus);
        assert_int_equal(sd_bus_message_new_method_call(bus, &m, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                                        "org.freedesktop.systemd1.Manager", "StartTransientUnit"), 0);
        assert_int_equal(worker_egress_append_aux_units(m, "0123456789ab", "sandbox-0123456789ab.service", &spec,
                                                        SBX_RUNTIME_SYSTEMD, "/usr/libexec/sandboxd/sandbox-egress",
                                                        "/run/sandboxd/credentials.sock"), 0);
        d = test_message_dump(m);
        assert_non_null(d);
        assert_non_null(strstr(d, "\"sandbox-0123456789ab-egress.socket\""));
        assert_non_null(strstr(d, "\"sandbox-0123456789ab-egress.service\""));
        assert_non_null(strstr(d, "\"127.0.0.1:3128\""));
        assert_non_null(strstr(d, "\"[::1]:3128\""));
        assert_non_null(strstr(d, "\"JoinsNamespaceOf\""));
        /* The joined namespaces are the socket's: it must ask for IPC too. */
        assert_non_null(strstr(d, "\"PrivateIPC\""));
        assert_non_null(strstr(d, "\"FreeBind\""));
        assert_non_null(strstr(d, "\"egress-policy\""));
        assert_non_null(strstr(d, "\"/run/sandboxd/credentials.sock\""));
        assert_non_null(strstr(d, "\"/usr/libexec/sandboxd/sandbox-egress\""));
        assert_non_null(strstr(d, "\"LogRateLimitIntervalUSec\""));
        /* The proxy has no path to the system bus (issue 22). */
        assert_non_null(strstr(d, "\"-/run/dbus\""));
        assert_non_null(strstr(d, "\"-/run/systemd/private\""));
        /* The proxy never gets the policy by value. */
        assert_null(strstr(d, "SetCredential"));
        /* The second wall and the hardening systemd-analyze security counts
         * (issue 8 items 5 and 9); integration holds the score itself. */
        assert_non_null(strstr(d, "\"IPAddressDeny\""));
        assert_non_null(strstr(d, "\"AF_NETLINK\""));
        static const char *const hardening[] = {
                "PrivateUsers", "PrivateMounts", "PrivateIPC", "ProtectProc", "ProcSubset", "ProtectHostname",
                "ProtectClock", "ProtectKernelLogs", "MemoryDenyWriteExecute", "LockPersonality",
                "RestrictRealtime", "RestrictSUIDSGID", "RemoveIPC", "UMask", "DevicePolicy",
                "SystemCallArchitectures", "SystemCallFilter", "SystemCallErrorNumber",
        };
        for (size_t i = 0; i < sizeof(hardening) / sizeof(hardening[0]); i++) {
                char quoted[64];
                snprintf(quoted, sizeof(quoted), "\"%s\"", hardening[i]);
                if (!strstr(d, quoted))
                        fail_msg("proxy unit lacks %s", hardening[i]);
        }
        assert_non_null(strstr(d, "\"@system-service\""));
        assert_non_null(strstr(d, "\"seccomp\""));
        sd_bus_message_unref(m);

        /* No destination allowed: no aux units at all. */
        assert_int_equal(sd_bus_message_new_method_call(bus, &m, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                                        "org.freedesktop.systemd1.Manager", "StartTransientUnit"), 0);
        assert_int_equal(worker_egress_append_aux_units(m, "0123456789ab", "sandbox-0123456789ab.service", &spec, SBX_RUNTIME_SYSTEMD, NULL,
                                                        "/run/sandboxd/credentials.sock"), 0);
        free(d);
        d = test_message_dump(m);
        assert_null(strstr(d, "egress"));
        sd_bus_message_unref(m);
        close(peer);
        sd_bus_close_unref(bus);
        worker_spec_done(&spec);
}

#define SECRET "sbx-unit-test-secret-4f1e"

/* Two services, as a spec has them once validated and defaulted. */
static void spec_with_services(WorkerSpec *s) {
        worker_spec_init(s);
        s->services = calloc(2, sizeof(SbxService));
        assert_non_null(s->services);
        s->n_services = 2;
        s->set |= SPEC_HAS_SERVICES;
        s->services[0] = (SbxService) {
                .set = SERVICE_HAS_URL | SERVICE_HAS_CREDENTIAL | SERVICE_HAS_HEADER | SERVICE_HAS_METHODS |
                       SERVICE_HAS_PATHS | SERVICE_HAS_RATE,
                .name = strdup("github"),
                .url = strdup("https://API.Example.test:8443/v1/"),
                .credential = (uint8_t *) strdup(SECRET),
                .credential_size = strlen(SECRET),
                .header = strdup("X-Api-Key: token {}"),
                .methods = strv2("GET", "POST"),
                .paths = strv2("/repos/", NULL),
                .rate_bps = 1000,
        };
        s->services[1] = (SbxService) {
                .set = SERVICE_HAS_URL | SERVICE_HAS_CREDENTIAL,
                .name = strdup("Other_2"),
                .url = strdup("https://other.example.test"),
                .credential = (uint8_t *) strdup(SECRET "-2"),
                .credential_size = strlen(SECRET "-2"),
        };
        for (size_t i = 0; i < s->n_services; i++)
                sbx_service_apply_defaults(&s->services[i]);
}

static char *aux_units_dump_runtime(const WorkerSpec *spec, SbxRuntime runtime) {
        int peer = -1;
        sd_bus *bus = test_bus_new_offline(&peer);
        sd_bus_message *m = NULL;
        char *d;

        assert_non_null(bus);
        assert_int_equal(sd_bus_message_new_method_call(bus, &m, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                                        "org.freedesktop.systemd1.Manager", "StartTransientUnit"), 0);
        assert_int_equal(worker_egress_append_aux_units(m, "0123456789ab", "sandbox-0123456789ab.service", spec,
                                                        runtime, "/usr/libexec/sandboxd/sandbox-egress",
                                                        "/run/sandboxd/credentials.sock"), 0);
        d = test_message_dump(m);
        assert_non_null(d);
        sd_bus_message_unref(m);
        close(peer);
        sd_bus_close_unref(bus);
        return d;
}

static char *aux_units_dump(const WorkerSpec *spec) {
        return aux_units_dump_runtime(spec, SBX_RUNTIME_SYSTEMD);
}

/* A gVisor worker reaches only the veth's address of the unit's namespace:
 * every listener is there, none on loopback (which it cannot reach), and
 * FreeBind lets the socket bind before the launcher makes the address. */
static void test_aux_units_veth(void **state) {
        _cleanup_free_ char *d = NULL;
        WorkerSpec s;

        spec_with_services(&s);
        s.egress_allow = strv2("example.org", NULL);
        d = aux_units_dump_runtime(&s, SBX_RUNTIME_RUNSC);
        assert_non_null(strstr(d, "\"10.255.255.1:3128\""));
        assert_non_null(strstr(d, "\"10.255.255.1:3129\""));
        assert_non_null(strstr(d, "\"10.255.255.1:3130\""));
        assert_null(strstr(d, "127.0.0.1"));
        assert_null(strstr(d, "[::1]"));
        assert_non_null(strstr(d, "\"FreeBind\""));
        worker_spec_done(&s);
}

static void test_aux_units_services(void **state) {
        _cleanup_free_ char *d = NULL;
        WorkerSpec s;

        /* Services without egress: the proxy pair with only the service
         * listeners, no CONNECT listener for a worker allowed nowhere. */
        spec_with_services(&s);
        assert_true(worker_wants_proxy(&s));
        assert_false(worker_wants_egress(&s));
        d = aux_units_dump(&s);
        assert_non_null(strstr(d, "\"sandbox-0123456789ab-egress.socket\""));
        assert_non_null(strstr(d, "\"sandbox-0123456789ab-egress.service\""));
        assert_non_null(strstr(d, "\"127.0.0.1:3129\""));
        assert_non_null(strstr(d, "\"127.0.0.1:3130\""));
        assert_null(strstr(d, ":3128\""));
        assert_null(strstr(d, ":3131\""));
        /* Each secret by reference to the socket, under its own id. */
        assert_non_null(strstr(d, "\"egress-policy\""));
        assert_non_null(strstr(d, "\"broker-github\""));
        assert_non_null(strstr(d, "\"broker-Other_2\""));
        assert_null(strstr(d, "SetCredential"));
        assert_null(strstr(d, SECRET));
        free(d);

        /* With egress as well: the CONNECT listener first, then the services. */
        s.egress_allow = strv2("example.org", NULL);
        d = aux_units_dump(&s);
        assert_non_null(strstr(d, "\"127.0.0.1:3128\""));
        assert_non_null(strstr(d, "\"[::1]:3128\""));
        assert_non_null(strstr(d, "\"127.0.0.1:3129\""));
        assert_true(strstr(d, "\"127.0.0.1:3128\"") < strstr(d, "\"127.0.0.1:3129\""));
        assert_null(strstr(d, SECRET));
        worker_spec_done(&s);
}

static void test_policy_services(void **state) {
        _cleanup_free_ char *json = NULL;
        EgressPolicy *p = NULL;
        const EgressService *e;
        SbxConfig c;
        WorkerSpec s;

        sbx_config_init_defaults(&c);
        c.egress_broker_ca_file = strdup("/etc/sandboxd/broker-ca.pem");
        spec_with_services(&s);
        s.egress_rate_bps = 4096;
        assert_int_equal(worker_egress_policy_json(&s, &c, "0123456789ab", &json, NULL), 0);
        /* The policy names the services; the secrets stay out of it. */
        assert_null(strstr(json, SECRET));
        assert_int_equal(egress_policy_from_json(json, &p), 0);
        assert_string_equal(p->broker_ca_file, "/etc/sandboxd/broker-ca.pem");
        assert_int_equal(p->n_services, 2);
        /* No allow-list: the CONNECT side reaches nothing. */
        assert_int_equal(p->n_allow, 0);

        e = egress_policy_find_service(p, 3129);
        assert_non_null(e);
        assert_string_equal(e->name, "github");
        assert_string_equal(e->host, "api.example.test");
        assert_int_equal(e->port, 8443);
        assert_string_equal(e->base, "/v1");
        assert_string_equal(e->header_name, "X-Api-Key");
        assert_string_equal(e->header_template, "token {}");
        assert_int_equal(e->n_methods, 2);
        assert_string_equal(e->methods[1], "POST");
        assert_int_equal(e->n_paths, 1);
        assert_string_equal(e->paths[0], "/repos/");
        assert_int_equal(e->rate_bps, 1000);
        assert_int_equal(e->max_request_bytes, 1u << 20);

        /* The defaults: Authorization: Bearer {}, GET, "/", the worker's rate. */
        e = egress_policy_find_service(p, 3130);
        assert_non_null(e);
        assert_string_equal(e->name, "Other_2");
        assert_string_equal(e->host, "other.example.test");
        assert_int_equal(e->port, 443);
        assert_string_equal(e->base, "");
        assert_string_equal(e->header_name, "Authorization");
        assert_string_equal(e->header_template, "Bearer {}");
        assert_int_equal(e->n_methods, 1);
        assert_string_equal(e->methods[0], "GET");
        assert_string_equal(e->paths[0], "/");
        assert_int_equal(e->rate_bps, 4096);
        assert_int_equal(e->max_response_bytes, 1u << 20);
        egress_policy_free(p);

        /* Without BrokerCAFile: the system trust store. */
        free(c.egress_broker_ca_file);
        c.egress_broker_ca_file = NULL;
        free(json);
        json = NULL;
        assert_int_equal(worker_egress_policy_json(&s, &c, "0123456789ab", &json, NULL), 0);
        assert_int_equal(egress_policy_from_json(json, &p), 0);
        assert_null(p->broker_ca_file);
        egress_policy_free(p);
        worker_spec_done(&s);
        sbx_config_done(&c);
}

static void test_service_url_env(void **state) {
        _cleanup_free_ char *a = NULL, *b = NULL;
        WorkerSpec s;

        spec_with_services(&s);
        assert_int_equal(worker_service_url_env(&s.services[0], 0, SBX_RUNTIME_SYSTEMD, &a), 0);
        assert_string_equal(a, "SANDBOX_SERVICE_GITHUB_URL=http://127.0.0.1:3129");
        assert_int_equal(worker_service_url_env(&s.services[1], 1, SBX_RUNTIME_SYSTEMD, &b), 0);
        assert_string_equal(b, "SANDBOX_SERVICE_OTHER_2_URL=http://127.0.0.1:3130");
        free(a);
        assert_int_equal(worker_service_url_env(&s.services[0], 0, SBX_RUNTIME_RUNSC, &a), 0);
        assert_string_equal(a, "SANDBOX_SERVICE_GITHUB_URL=http://10.255.255.1:3129");
        worker_spec_done(&s);
}

static void test_resolver_addresses(void **state) {
        char path[] = "/tmp/test-egress-units-XXXXXX";
        EgressCidr r[8];
        char buf[64];
        int fd = mkstemp(path);
        FILE *f;

        assert_true(fd >= 0);
        f = fdopen(fd, "w");
        assert_non_null(f);
        fputs("# a comment\nsearch corp.example\nnameserver 10.0.0.2\nnameserver\tfe80::1%eth0\n"
              "nameserver 169.254.169.253 # trailing\nnameserver not-an-address\nnameserver 10.0.0.0/8\n"
              "options ndots:5\nnameserver 127.0.0.53\n", f);
        fclose(f);
        assert_int_equal(egress_resolver_addresses(path, r, 8), 4);
        assert_int_equal(egress_cidr_format(&r[0], buf, sizeof(buf)), 0);
        assert_string_equal(buf, "10.0.0.2/32");
        assert_int_equal(egress_cidr_format(&r[1], buf, sizeof(buf)), 0);
        assert_string_equal(buf, "fe80::1/128");
        assert_int_equal(egress_cidr_format(&r[2], buf, sizeof(buf)), 0);
        assert_string_equal(buf, "169.254.169.253/32");
        assert_int_equal(egress_cidr_format(&r[3], buf, sizeof(buf)), 0);
        assert_string_equal(buf, "127.0.0.53/32");
        assert_int_equal(egress_resolver_addresses(path, r, 2), 2);
        unlink(path);
        assert_int_equal(egress_resolver_addresses(path, r, 8), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_policy_json),
                cmocka_unit_test(test_policy_refuses_bad_operator_entries),
                cmocka_unit_test(test_aux_units),
                cmocka_unit_test(test_aux_units_services),
                cmocka_unit_test(test_aux_units_veth),
                cmocka_unit_test(test_policy_services),
                cmocka_unit_test(test_service_url_env),
                cmocka_unit_test(test_resolver_addresses),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
