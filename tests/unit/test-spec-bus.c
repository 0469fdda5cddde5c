/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "errors.h"
#include "spec-bus.h"
#include "test-bus.h"

static sd_bus *bus;
static int peer = -1;

static int setup(void **state) {
        bus = test_bus_new_offline(&peer);
        return bus ? 0 : -1;
}

static int teardown(void **state) {
        close(peer);
        sd_bus_close_unref(bus);
        return 0;
}

static sd_bus_message *new_call(void) {
        sd_bus_message *m = NULL;
        assert_int_equal(sd_bus_message_new_method_call(bus, &m, "org.sandboxd1", "/org/sandboxd1",
                                                        "org.sandboxd1.Manager", "CreateWorker"), 0);
        return m;
}

static int parse(sd_bus_message *m, WorkerSpec *s, SbxError *e) {
        assert_int_equal(test_message_seal(m), 0);
        worker_spec_init(s);
        return worker_spec_from_bus(s, m, e);
}

static void test_full_spec(void **state) {
        sd_bus_message *m = new_call();
        static const uint8_t secret[] = { 's', 0, 'x' };
        WorkerSpec s;
        SbxError e = {};

        assert_true(sd_bus_message_open_container(m, 'a', "{sv}") >= 0);
        assert_true(sd_bus_message_append(m, "{sv}", "Argv", "as", 2, "/bin/echo", "hi") >= 0);
        assert_true(sd_bus_message_append(m, "{sv}", "Environment", "as", 1, "A=b") >= 0);
        assert_true(sd_bus_message_append(m, "{sv}", "Class", "s", "untrusted") >= 0);
        assert_true(sd_bus_message_append(m, "{sv}", "Origin", "s", "llm-generated") >= 0);
        assert_true(sd_bus_message_append(m, "{sv}", "MemoryMax", "t", UINT64_C(1) << 27) >= 0);
        assert_true(sd_bus_message_append(m, "{sv}", "TasksMax", "t", UINT64_C(64)) >= 0);
        assert_true(sd_bus_message_append(m, "{sv}", "CPUQuotaPercent", "u", 20) >= 0);
        assert_true(sd_bus_message_append(m, "{sv}", "RuntimeMaxUSec", "t", UINT64_C(5000000)) >= 0);
        assert_true(sd_bus_message_append(m, "{sv}", "IdleTimeoutUSec", "t", UINT64_C(2000000)) >= 0);
        assert_true(sd_bus_message_append(m, "{sv}", "EgressAllow", "as", 1, "*.example.org") >= 0);
        assert_true(sd_bus_message_append(m, "{sv}", "EgressRateBps", "t", UINT64_C(1000)) >= 0);
        assert_true(sd_bus_message_append(m, "{sv}", "EgressMode", "s", "report") >= 0);
        assert_true(sd_bus_message_append(m, "{sv}", "IdleAction", "s", "suspend") >= 0);
        assert_true(sd_bus_message_open_container(m, 'e', "sv") >= 0);
        assert_true(sd_bus_message_append(m, "s", "Credentials") >= 0);
        assert_true(sd_bus_message_open_container(m, 'v', "a(say)") >= 0);
        assert_true(sd_bus_message_open_container(m, 'a', "(say)") >= 0);
        assert_true(sd_bus_message_open_container(m, 'r', "say") >= 0);
        assert_true(sd_bus_message_append(m, "s", "tok") >= 0);
        assert_true(sd_bus_message_append_array(m, 'y', secret, sizeof(secret)) >= 0);
        for (int i = 0; i < 5; i++)
                assert_true(sd_bus_message_close_container(m) >= 0);

        assert_int_equal(parse(m, &s, &e), 0);
        assert_string_equal(s.argv[1], "hi");
        assert_string_equal(s.environment[0], "A=b");
        assert_int_equal(s.class, SBX_CLASS_UNTRUSTED);
        assert_string_equal(s.origin, "llm-generated");
        assert_true(s.set & SPEC_HAS_ORIGIN);
        assert_int_equal(s.limits.memory_max, UINT64_C(1) << 27);
        assert_int_equal(s.limits.tasks_max, 64);
        assert_int_equal(s.limits.cpu_quota_percent, 20);
        assert_int_equal(s.limits.idle_timeout_usec, 2000000);
        assert_string_equal(s.egress_allow[0], "*.example.org");
        assert_true(s.egress_report_only);
        assert_true(s.idle_suspend);
        assert_true(s.set & SPEC_HAS_IDLE_ACTION);
        assert_int_equal(s.n_credentials, 1);
        assert_string_equal(s.credentials[0].name, "tok");
        assert_int_equal(s.credentials[0].size, 3);
        assert_memory_equal(s.credentials[0].data, secret, 3);
        assert_true(s.set & SPEC_HAS_TASKS_MAX);
        assert_false(s.set & SPEC_HAS_DISK_MAX);
        worker_spec_done(&s);
        sd_bus_message_unref(m);
}

static void refused(const char *key, const char *sig, const char *expected_error, const char *fragment) {
        sd_bus_message *m = new_call();
        WorkerSpec s;
        SbxError e = {};

        assert_true(sd_bus_message_open_container(m, 'a', "{sv}") >= 0);
        assert_true(sd_bus_message_append(m, "{sv}", "Argv", "as", 1, "/bin/true") >= 0);
        if (streq(sig, "s"))
                assert_true(sd_bus_message_append(m, "{sv}", key, "s", "x") >= 0);
        else if (streq(sig, "u"))
                assert_true(sd_bus_message_append(m, "{sv}", key, "u", 1) >= 0);
        else if (streq(sig, "as"))
                assert_true(sd_bus_message_append(m, "{sv}", key, "as", 1, "/bin/true") >= 0);
        assert_true(sd_bus_message_close_container(m) >= 0);
        assert_true(parse(m, &s, &e) < 0);
        assert_string_equal(e.name, expected_error);
        assert_non_null(strstr(e.message, fragment));
        worker_spec_done(&s);
        sd_bus_message_unref(m);
}

static void test_refusals(void **state) {
        refused("Bogus", "s", SBX_ERROR_UNKNOWN_KEY, "Bogus");
        refused("MemoryMax", "s", SBX_ERROR_WRONG_TYPE, "must be of type t, not s");
        refused("Environment", "s", SBX_ERROR_WRONG_TYPE, "must be of type as");
        refused("Argv", "as", SBX_ERROR_INVALID_SPEC, "more than once");
        refused("CPUQuotaPercent", "s", SBX_ERROR_WRONG_TYPE, "type u");
        refused("Class", "s", SBX_ERROR_UNKNOWN_CLASS, "\"x\"");
        refused("EgressMode", "s", SBX_ERROR_INVALID_EGRESS, "EgressMode \"x\" is invalid; use enforce or report");
        refused("IdleAction", "s", SBX_ERROR_INVALID_SPEC, "IdleAction \"x\" is invalid; use stop or suspend");
        refused("IdleAction", "u", SBX_ERROR_WRONG_TYPE, "type s");
        refused("Class", "u", SBX_ERROR_WRONG_TYPE, "type s");
        refused("Origin", "u", SBX_ERROR_WRONG_TYPE, "type s");
}

static void test_origin_name_refused(void **state) {
        static const char * const bad[] = { "", "LLM", "first party", "a/b", "x\n" };

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                sd_bus_message *m = new_call();
                WorkerSpec s;
                SbxError e = {};

                assert_true(sd_bus_message_append(m, "a{sv}", 2, "Argv", "as", 1, "/bin/true",
                                                  "Origin", "s", bad[i]) >= 0);
                assert_true(parse(m, &s, &e) < 0);
                assert_string_equal(e.name, SBX_ERROR_UNKNOWN_ORIGIN);
                assert_null(s.origin);
                worker_spec_done(&s);
                sd_bus_message_unref(m);
        }
}

/* Builds "<n times c><multibyte><tail>" so that a cut at byte n + 1 falls
 * inside the multibyte character. */
static char *straddling(size_t n, char c, const char *multibyte, const char *tail) {
        char *s = malloc(n + strlen(multibyte) + strlen(tail) + 1);
        assert_non_null(s);
        memset(s, c, n);
        strcpy(s + n, multibyte);
        strcat(s, tail);
        return s;
}

/* A refusal quotes what the client sent, cut to a bound ("%.64s", the
 * message buffer): the cut must not split a UTF-8 character, or sd-bus
 * cannot send the error and the client gets no reply at all. Found by
 * tests/busfuzz (sbx-busfuzz --seed 1: cases 61 and 74). */
static void refusal_is_sendable(const char *key, const char *value, bool strv, const char *expected_error) {
        sd_bus_message *m = new_call(), *reply = NULL;
        SbxConfig c;
        WorkerSpec s;
        SbxError e = {};
        int r;

        assert_true(sd_bus_message_open_container(m, 'a', "{sv}") >= 0);
        if (strcmp(key, "Argv") != 0)
                assert_true(sd_bus_message_append(m, "{sv}", "Argv", "as", 1, "/bin/true") >= 0);
        if (strv)
                assert_true(sd_bus_message_append(m, "{sv}", key, "as", 1, value) >= 0);
        else
                assert_true(sd_bus_message_append(m, "{sv}", key, "s", value) >= 0);
        assert_true(sd_bus_message_close_container(m) >= 0);
        r = parse(m, &s, &e);
        if (r >= 0) {
                sbx_config_init_defaults(&c);
                worker_spec_apply_defaults(&s, &c);
                r = worker_spec_validate(&s, &c, &e);
                sbx_config_done(&c);
        }
        assert_true(r < 0);
        assert_string_equal(e.name, expected_error);
        sd_bus_error error = SD_BUS_ERROR_MAKE_CONST(e.name, e.message);
        assert_int_equal(sd_bus_message_new_method_error(m, &reply, &error), 0);
        sd_bus_message_unref(reply);
        worker_spec_done(&s);
        sd_bus_message_unref(m);
}

static void test_refusals_with_cut_multibyte_text(void **state) {
        _cleanup_free_ char *class = straddling(63, 'p', "\xe8\x97\xa7", "p");
        _cleanup_free_ char *key = straddling(62, '/', "\xe8\xba\xab", "//");
        _cleanup_free_ char *mode = straddling(63, 'e', "\xf0\x9f\x92\xa9", "");
        _cleanup_free_ char *env = straddling(63, 'A', "\xc3\xa9", "x");
        _cleanup_free_ char *pattern = straddling(63, 'h', "\xc3\xa9", ".org");
        /* A relative path is quoted with "%.255s". */
        _cleanup_free_ char *argv0 = straddling(254, 'a', "\xe2\x82\xac", "/b");

        refusal_is_sendable("Class", class, false, SBX_ERROR_UNKNOWN_CLASS);
        refusal_is_sendable(key, "x", false, SBX_ERROR_UNKNOWN_KEY);
        refusal_is_sendable("EgressMode", mode, false, SBX_ERROR_INVALID_EGRESS);
        refusal_is_sendable("Environment", env, true, SBX_ERROR_INVALID_ENVIRONMENT);
        refusal_is_sendable("EgressAllow", pattern, true, SBX_ERROR_INVALID_EGRESS);
        refusal_is_sendable("Argv", argv0, true, SBX_ERROR_INVALID_SPEC);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_full_spec),
                cmocka_unit_test(test_refusals),
                cmocka_unit_test(test_origin_name_refused),
                cmocka_unit_test(test_refusals_with_cut_multibyte_text),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
