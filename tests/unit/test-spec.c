/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <limits.h>

#include "errors.h"
#include "spec.h"

static SbxConfig config;

static int setup(void **state) {
        sbx_config_init_defaults(&config);
        return 0;
}

static int teardown(void **state) {
        sbx_config_done(&config);
        return 0;
}

static char **strv(const char *a, const char *b) {
        char **l = calloc(3, sizeof(char *));
        l[0] = a ? strdup(a) : NULL;
        l[1] = b ? strdup(b) : NULL;
        return l;
}

static void spec_ok(WorkerSpec *s) {
        worker_spec_init(s);
        s->argv = strv("/bin/true", NULL);
        s->set |= SPEC_HAS_ARGV;
        worker_spec_apply_defaults(s, &config);
}

static void assert_refused(WorkerSpec *s, const char *name, const char *fragment) {
        SbxError e = {};
        assert_true(worker_spec_validate(s, &config, &e) < 0);
        assert_string_equal(e.name, name);
        assert_non_null(strstr(e.message, fragment));
        worker_spec_done(s);
}

static void test_defaults_apply(void **state) {
        WorkerSpec s;
        SbxError e = {};
        spec_ok(&s);
        assert_int_equal(s.class, SBX_CLASS_STANDARD);
        assert_int_equal(s.limits.memory_max, 256u * 1024 * 1024);
        assert_int_equal(s.limits.tasks_max, 256);
        assert_int_equal(s.limits.cpu_quota_percent, 50);
        assert_int_equal(s.limits.idle_timeout_usec, 600 * USEC_PER_SEC);
        assert_int_equal(worker_spec_validate(&s, &config, &e), 0);
        worker_spec_done(&s);
}

static void test_explicit_values_win(void **state) {
        WorkerSpec s;
        worker_spec_init(&s);
        s.argv = strv("/bin/true", NULL);
        s.limits.memory_max = 32u * 1024 * 1024;
        s.set |= SPEC_HAS_ARGV | SPEC_HAS_MEMORY_MAX;
        worker_spec_apply_defaults(&s, &config);
        assert_int_equal(s.limits.memory_max, 32u * 1024 * 1024);
        assert_int_equal(s.limits.tasks_max, 256);
        worker_spec_done(&s);
}

static void test_argv(void **state) {
        WorkerSpec s;
        spec_ok(&s);
        strv_free(s.argv);
        s.argv = NULL;
        assert_refused(&s, SBX_ERROR_MISSING_ARGV, "missing or empty");
        spec_ok(&s);
        strv_free(s.argv);
        s.argv = strv("", NULL);
        assert_refused(&s, SBX_ERROR_MISSING_ARGV, "empty");
        /* The worker's cwd is its new home: nothing relative to name there. */
        spec_ok(&s);
        strv_free(s.argv);
        s.argv = strv("./x.py", NULL);
        assert_refused(&s, SBX_ERROR_INVALID_SPEC, "relative path");
        spec_ok(&s);
        strv_free(s.argv);
        s.argv = strv("bin/sh", NULL);
        assert_refused(&s, SBX_ERROR_INVALID_SPEC, "relative path");
}

/* A bare name is searched for later, in the worker's view, once the
 * runtime is known: validation lets it through. */
static void test_argv_bare_name(void **state) {
        WorkerSpec s;
        SbxError e = {};
        char longname[NAME_MAX + 2];

        spec_ok(&s);
        strv_free(s.argv);
        s.argv = strv("sh", "-c");
        assert_int_equal(worker_spec_validate(&s, &config, &e), 0);
        worker_spec_done(&s);

        memset(longname, 'a', sizeof(longname) - 1);
        longname[sizeof(longname) - 1] = 0;
        spec_ok(&s);
        strv_free(s.argv);
        s.argv = strv(longname, NULL);
        assert_refused(&s, SBX_ERROR_INVALID_SPEC, "at most");
}

static void test_limits(void **state) {
        WorkerSpec s;
        spec_ok(&s);
        s.limits.memory_max = 0;
        assert_refused(&s, SBX_ERROR_LIMIT_OUT_OF_RANGE, "MemoryMax=0");
        spec_ok(&s);
        s.limits.tasks_max = UINT64_MAX;
        assert_refused(&s, SBX_ERROR_LIMIT_OUT_OF_RANGE, "TasksMax");
        spec_ok(&s);
        s.limits.cpu_quota_percent = 0;
        assert_refused(&s, SBX_ERROR_LIMIT_OUT_OF_RANGE, "CPUQuotaPercent");
        spec_ok(&s);
        s.limits.runtime_max_usec = 10;
        assert_refused(&s, SBX_ERROR_LIMIT_OUT_OF_RANGE, "RuntimeMaxUSec");
        spec_ok(&s);
        s.limits.idle_timeout_usec = 365ull * 86400 * USEC_PER_SEC;
        assert_refused(&s, SBX_ERROR_LIMIT_OUT_OF_RANGE, "IdleTimeoutUSec");
}

/* Every worker's disk is capped: a spec without DiskMax gets the default,
 * one on a Workspace none of its own, and trusted may ask for one. */
static void test_disk_max(void **state) {
        WorkerSpec s;
        SbxError e = {};

        spec_ok(&s);
        assert_int_equal(s.disk_max, UINT64_C(1) << 30);
        assert_false(s.set & SPEC_HAS_DISK_MAX);
        worker_spec_done(&s);

        worker_spec_init(&s);
        s.argv = strv("/bin/true", NULL);
        s.workspace = strdup("proj");
        s.set |= SPEC_HAS_ARGV | SPEC_HAS_CLASS;
        s.class = SBX_CLASS_TRUSTED;
        worker_spec_apply_defaults(&s, &config);
        assert_int_equal(s.disk_max, 0);
        worker_spec_done(&s);

        worker_spec_init(&s);
        s.argv = strv("/bin/true", NULL);
        s.set |= SPEC_HAS_ARGV | SPEC_HAS_CLASS | SPEC_HAS_DISK_MAX;
        s.class = SBX_CLASS_TRUSTED;
        s.disk_max = UINT64_C(8) << 30;         /* above the default MemoryMax: a disk, not memory */
        worker_spec_apply_defaults(&s, &config);
        assert_int_equal(s.disk_max, UINT64_C(8) << 30);
        assert_int_equal(worker_spec_validate(&s, &config, &e), 0);
        s.disk_max = config.disk_limit + 1;
        assert_refused(&s, SBX_ERROR_LIMIT_OUT_OF_RANGE, "DiskMax");
        spec_ok(&s);
        s.set |= SPEC_HAS_DISK_MAX;
        s.disk_max = SBX_DISK_MIN - 1;
        assert_refused(&s, SBX_ERROR_LIMIT_OUT_OF_RANGE, "DiskMax");
}

static void test_class_invalid(void **state) {
        WorkerSpec s;
        spec_ok(&s);
        s.class = _SBX_CLASS_INVALID;
        assert_refused(&s, SBX_ERROR_UNKNOWN_CLASS, "Unknown isolation class");
        assert_int_equal(sbx_class_from_string("hostile"), SBX_CLASS_HOSTILE);
        assert_int_equal(sbx_class_from_string("Hostile"), _SBX_CLASS_INVALID);
        assert_string_equal(sbx_class_to_string(SBX_CLASS_WASM), "wasm");
}

static void test_environment(void **state) {
        WorkerSpec s;
        SbxError e = {};
        spec_ok(&s);
        s.environment = strv("LANG=C.UTF-8", "EMPTY=");
        assert_int_equal(worker_spec_validate(&s, &config, &e), 0);
        worker_spec_done(&s);
        spec_ok(&s);
        s.environment = strv("NOEQUALS", NULL);
        assert_refused(&s, SBX_ERROR_INVALID_ENVIRONMENT, "KEY=VALUE");
        spec_ok(&s);
        s.environment = strv("1BAD=x", NULL);
        assert_refused(&s, SBX_ERROR_INVALID_ENVIRONMENT, "KEY=VALUE");
        spec_ok(&s);
        /* The environment travels as a NUL-separated credential, not in a
         * unit file: a newline is data. Other control characters are not. */
        s.environment = strv("A=line\nbreak", "B=tab\there");
        assert_int_equal(worker_spec_validate(&s, &config, &e), 0);
        worker_spec_done(&s);
        spec_ok(&s);
        s.environment = strv("A=bell\a", NULL);
        assert_refused(&s, SBX_ERROR_INVALID_ENVIRONMENT, "KEY=VALUE");
        spec_ok(&s);
        s.environment = strv("HOME=/tmp", NULL);
        assert_refused(&s, SBX_ERROR_INVALID_ENVIRONMENT, "HOME");
        spec_ok(&s);
        s.environment = strv("https_proxy=http://evil", NULL);
        assert_refused(&s, SBX_ERROR_INVALID_ENVIRONMENT, "https_proxy");
}

/* Entries systemd's StartTransientUnit refuses as an "Invalid environment
 * block" must be refused here, with the entry named, rather than reach
 * systemd and come back as StartFailed. Found by tests/busfuzz (seed 1, case 365). */
static void test_environment_systemd_would_refuse(void **state) {
        WorkerSpec s;
        spec_ok(&s);
        s.environment = strv("K=v", "K=w");
        assert_refused(&s, SBX_ERROR_INVALID_ENVIRONMENT, "K is given more than once");
        spec_ok(&s);
        s.environment = strv("A=b", "A=b");
        assert_refused(&s, SBX_ERROR_INVALID_ENVIRONMENT, "A is given more than once");
        /* A name that is a prefix of another's is no duplicate. */
        SbxError e = {};
        spec_ok(&s);
        s.environment = strv("AB=1", "A=2");
        assert_int_equal(worker_spec_validate(&s, &config, &e), 0);
        worker_spec_done(&s);
}

static void add_credential(WorkerSpec *s, const char *name, size_t size) {
        s->credentials = realloc(s->credentials, (s->n_credentials + 1) * sizeof(SbxCredential));
        s->credentials[s->n_credentials++] = (SbxCredential) {
                .name = strdup(name), .data = calloc(1, size ?: 1), .size = size };
}

static void test_credentials(void **state) {
        WorkerSpec s;
        SbxError e = {};
        spec_ok(&s);
        add_credential(&s, "github-token", 40);
        assert_int_equal(worker_spec_validate(&s, &config, &e), 0);
        worker_spec_done(&s);

        spec_ok(&s);
        add_credential(&s, "a/b", 1);
        assert_refused(&s, SBX_ERROR_INVALID_CREDENTIAL, "a/b");
        spec_ok(&s);
        add_credential(&s, "..", 1);
        assert_refused(&s, SBX_ERROR_INVALID_CREDENTIAL, "invalid");
        spec_ok(&s);
        add_credential(&s, "", 1);
        assert_refused(&s, SBX_ERROR_INVALID_CREDENTIAL, "invalid");
        spec_ok(&s);
        add_credential(&s, "x", 1);
        add_credential(&s, "x", 1);
        assert_refused(&s, SBX_ERROR_INVALID_CREDENTIAL, "twice");
        spec_ok(&s);
        add_credential(&s, "big", SBX_CREDENTIAL_SIZE_MAX + 1);
        assert_refused(&s, SBX_ERROR_INVALID_CREDENTIAL, "bytes");

        /* The environment counts towards systemd's cap on a unit's credentials. */
        spec_ok(&s);
        add_credential(&s, "big", SBX_CREDENTIAL_SIZE_MAX - 4);
        s.environment = strv("A=b", NULL);
        assert_int_equal(worker_spec_validate(&s, &config, &e), 0);
        worker_spec_done(&s);
        spec_ok(&s);
        add_credential(&s, "big", SBX_CREDENTIAL_SIZE_MAX - 3);
        s.environment = strv("A=b", NULL);
        assert_refused(&s, SBX_ERROR_INVALID_CREDENTIAL, "Environment total");
}

/* sandboxd's own credentials (the environment) share the unit's namespace
 * of names with the spec's: a spec may not supply or shadow one. */
static void test_credentials_reserved(void **state) {
        WorkerSpec s;
        SbxError e = {};

        spec_ok(&s);
        add_credential(&s, "sandboxd.environment", 8);
        assert_refused(&s, SBX_ERROR_INVALID_CREDENTIAL, "reserved");
        spec_ok(&s);
        add_credential(&s, "ok", 1);
        add_credential(&s, "sandboxd.anything", 1);
        assert_refused(&s, SBX_ERROR_INVALID_CREDENTIAL, "reserved");
        spec_ok(&s);
        add_credential(&s, "sandboxd-token", 1);
        add_credential(&s, "my.sandboxd.environment", 1);
        assert_int_equal(worker_spec_validate(&s, &config, &e), 0);
        worker_spec_done(&s);
}

static void test_egress_patterns(void **state) {
        assert_true(egress_pattern_is_valid("example.org"));
        assert_true(egress_pattern_is_valid("*.example.org"));
        assert_true(egress_pattern_is_valid("api.example.org:8443"));
        assert_true(egress_pattern_is_valid("*"));          /* bounded by the operator floor */
        assert_false(egress_pattern_is_valid("10.0.0.1"));
        assert_false(egress_pattern_is_valid("0x7f.1"));
        assert_false(egress_pattern_is_valid("exa mple.org"));
        assert_false(egress_pattern_is_valid("example.org:0"));
        assert_false(egress_pattern_is_valid("example.org:70000"));
        assert_false(egress_pattern_is_valid("a..b"));
        assert_false(egress_pattern_is_valid("**.x"));
        assert_false(egress_pattern_is_valid(""));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_defaults_apply),
                cmocka_unit_test(test_explicit_values_win),
                cmocka_unit_test(test_argv),
                cmocka_unit_test(test_argv_bare_name),
                cmocka_unit_test(test_limits),
cmocka_unit_test(test_disk_max),
                cmocka_unit_test(test_class_invalid),
                cmocka_unit_test(test_environment),
                cmocka_unit_test(test_environment_systemd_would_refuse),
                cmocka_unit_test(test_credentials),
                cmocka_unit_test(test_credentials_reserved),
                cmocka_unit_test(test_egress_patterns),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
