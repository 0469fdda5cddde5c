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

        assert_non_null(bus);
        assert_int_equal(sd_bus_message_new_method_call(bus, &m, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                                        "org.freedesktop.systemd1.Manager", "StartTransientUnit"), 0);
        assert_int_equal(worker_egress_append_aux_units(m, "0123456789ab", "sandbox-0123456789ab.service",
                                                        "/usr/libexec/sandboxd/sandbox-egress",
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
        assert_int_equal(worker_egress_append_aux_units(m, "0123456789ab", "sandbox-0123456789ab.service", NULL,
                                                        "/run/sandboxd/credentials.sock"), 0);
        free(d);
        d = test_message_dump(m);
        assert_null(strstr(d, "egress"));
        sd_bus_message_unref(m);
        close(peer);
        sd_bus_close_unref(bus);
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
                cmocka_unit_test(test_resolver_addresses),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
