/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* run/create options -> CliSpec -> the a{sv} of CreateWorker: every key
 * with its D-Bus type, only given options present, bad input refused before
 * any bus is involved. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <sys/stat.h>

#include "sandboxctl-spec.h"
#include "test-bus.h"

#define ARGV(...) ((char *[]) { __VA_ARGS__, NULL })
#define ARGC(...) ((int) (sizeof((char *[]) { __VA_ARGS__ }) / sizeof(char *)))
#define PARSE(spec, error, ...) cli_spec_parse_args(spec, ARGC(__VA_ARGS__), ARGV(__VA_ARGS__), NULL, error)

static char credential_path[] = "/tmp/test-sandboxctl-cred-XXXXXX";
static const uint8_t credential_bytes[] = { 's', 'e', 'c', 0, 'r', 'e', 't', '\n', 0xff };

static int setup_credential(void **state) {
        int fd = mkstemp(credential_path);
        if (fd < 0)
                return -1;
        if (write(fd, credential_bytes, sizeof(credential_bytes)) != (ssize_t) sizeof(credential_bytes)) {
                close(fd);
                return -1;
        }
        close(fd);
        return 0;
}

static int teardown_credential(void **state) {
        unlink(credential_path);
        return 0;
}

/* The message as a list of (key, signature) pairs, with the reader left at the
 * variant of `key` when it is found. */
static sd_bus_message *spec_message(const CliSpec *spec) {
        int peer = -1;
        sd_bus *bus = test_bus_new_offline(&peer);
        sd_bus_message *m;

        assert_non_null(bus);
        m = test_message_new(bus, "CreateWorker");
        assert_non_null(m);
        assert_int_equal(cli_spec_append(m, spec), 0);
        assert_int_equal(test_message_seal(m), 0);
        sd_bus_unref(bus);
        close(peer);
        return m;
}

static size_t count_keys(sd_bus_message *m) {
        size_t n = 0;

        assert_int_equal(sd_bus_message_rewind(m, true), 1);
        assert_true(sd_bus_message_enter_container(m, 'a', "{sv}") > 0);
        while (sd_bus_message_enter_container(m, 'e', "sv") > 0) {
                assert_true(sd_bus_message_skip(m, "sv") >= 0);
                assert_true(sd_bus_message_exit_container(m) >= 0);
                n++;
        }
        return n;
}

/* Positions the reader inside the variant for `key`, checking its signature. */
static void enter_key(sd_bus_message *m, const char *key, const char *signature) {
        assert_int_equal(sd_bus_message_rewind(m, true), 1);
        assert_true(sd_bus_message_enter_container(m, 'a', "{sv}") > 0);
        while (sd_bus_message_enter_container(m, 'e', "sv") > 0) {
                const char *name, *contents;
                char type;

                assert_true(sd_bus_message_read(m, "s", &name) > 0);
                if (streq(name, key)) {
                        assert_true(sd_bus_message_peek_type(m, &type, &contents) > 0);
                        assert_int_equal(type, 'v');
                        if (!streq(contents, signature))
                                fail_msg("key %s has type %s, expected %s", key, contents, signature);
                        assert_true(sd_bus_message_enter_container(m, 'v', contents) > 0);
                        return;
                }
                assert_true(sd_bus_message_skip(m, "v") >= 0);
                assert_true(sd_bus_message_exit_container(m) >= 0);
        }
        fail_msg("key %s missing from the spec", key);
}

static bool has_key(sd_bus_message *m, const char *key) {
        assert_int_equal(sd_bus_message_rewind(m, true), 1);
        assert_true(sd_bus_message_enter_container(m, 'a', "{sv}") > 0);
        while (sd_bus_message_enter_container(m, 'e', "sv") > 0) {
                const char *name;
                assert_true(sd_bus_message_read(m, "s", &name) > 0);
                if (streq(name, key))
                        return true;
                assert_true(sd_bus_message_skip(m, "v") >= 0);
                assert_true(sd_bus_message_exit_container(m) >= 0);
        }
        return false;
}

static uint64_t read_u64(sd_bus_message *m, const char *key) {
        uint64_t v;
        enter_key(m, key, "t");
        assert_true(sd_bus_message_read(m, "t", &v) > 0);
        return v;
}

static const char *read_string(sd_bus_message *m, const char *key) {
        const char *s;
        enter_key(m, key, "s");
        assert_true(sd_bus_message_read(m, "s", &s) > 0);
        return s;
}

static char **read_strv(sd_bus_message *m, const char *key) {
        char **l = NULL;
        enter_key(m, key, "as");
        assert_true(sd_bus_message_read_strv(m, &l) > 0);
        return l;
}

static void assert_strv(char **l, const char * const *expected, size_t n) {
        assert_int_equal(strv_length(l), n);
        for (size_t i = 0; i < n; i++)
                assert_string_equal(l[i], expected[i]);
        strv_free(l);
}

static void test_every_option(void **state) {
        CliSpec spec = {};
        SbxError error = {};
        _cleanup_free_ char *credential_arg = NULL;
        sd_bus_message *m;
        const char *name;
        const void *data;
        size_t size;
        uint32_t cpu;

        assert_true(asprintf(&credential_arg, "api-token:%s", credential_path) > 0);
        assert_int_equal(PARSE(&spec, &error, "run",
                               "--class", "trusted", "--memory", "1G", "--tasks", "64", "--cpu", "150%",
                               "--runtime", "1h30min", "--idle", "45", "--setenv", "A=1", "--setenv", "B=x=y",
                               "--credential", credential_arg, "--disk", "2G", "--allow", "example.org",
                               "--allow", "*.example.net:8443", "--egress-rate", "1M", "--egress-mode", "report",
                               "--idle-action", "suspend", "--", "/usr/bin/agent", "--json", "-v"),
                         0);
        m = spec_message(&spec);
        cli_spec_done(&spec);

        assert_int_equal(count_keys(m), 14);
        assert_strv(read_strv(m, "Argv"), (const char *[]) { "/usr/bin/agent", "--json", "-v" }, 3);
        assert_strv(read_strv(m, "Environment"), (const char *[]) { "A=1", "B=x=y" }, 2);
        assert_string_equal(read_string(m, "Class"), "trusted");
        assert_int_equal(read_u64(m, "MemoryMax"), 1ULL << 30);
        assert_int_equal(read_u64(m, "TasksMax"), 64);
        enter_key(m, "CPUQuotaPercent", "u");
        assert_true(sd_bus_message_read(m, "u", &cpu) > 0);
        assert_int_equal(cpu, 150);
        assert_int_equal(read_u64(m, "RuntimeMaxUSec"), 5400 * USEC_PER_SEC);
        assert_int_equal(read_u64(m, "IdleTimeoutUSec"), 45 * USEC_PER_SEC);
        assert_int_equal(read_u64(m, "DiskMax"), 2ULL << 30);
        assert_strv(read_strv(m, "EgressAllow"), (const char *[]) { "example.org", "*.example.net:8443" }, 2);
        assert_int_equal(read_u64(m, "EgressRateBps"), 1ULL << 20);
        assert_string_equal(read_string(m, "EgressMode"), "report");
        assert_string_equal(read_string(m, "IdleAction"), "suspend");

        /* The file's exact bytes, NUL and high bytes included. */
        enter_key(m, "Credentials", "a(say)");
        assert_true(sd_bus_message_enter_container(m, 'a', "(say)") > 0);
        assert_true(sd_bus_message_enter_container(m, 'r', "say") > 0);
        assert_true(sd_bus_message_read(m, "s", &name) > 0);
        assert_string_equal(name, "api-token");
        assert_true(sd_bus_message_read_array(m, 'y', &data, &size) > 0);
        assert_int_equal(size, sizeof(credential_bytes));
        assert_memory_equal(data, credential_bytes, size);
        assert_true(sd_bus_message_exit_container(m) > 0);
        assert_int_equal(sd_bus_message_enter_container(m, 'r', "say"), 0);

        sd_bus_message_unref(m);
}

static void test_only_given_keys(void **state) {
        CliSpec spec = {};
        SbxError error = {};
        sd_bus_message *m;

        assert_int_equal(PARSE(&spec, &error, "create", "/bin/true"), 0);
        m = spec_message(&spec);
        cli_spec_done(&spec);
        assert_int_equal(count_keys(m), 1);
        assert_strv(read_strv(m, "Argv"), (const char *[]) { "/bin/true" }, 1);
        sd_bus_message_unref(m);

        assert_int_equal(PARSE(&spec, &error, "create", "--memory", "64M", "/bin/true"), 0);
        m = spec_message(&spec);
        cli_spec_done(&spec);
        assert_int_equal(count_keys(m), 2);
        assert_int_equal(read_u64(m, "MemoryMax"), 64ULL << 20);
        assert_false(has_key(m, "TasksMax"));
        assert_false(has_key(m, "Credentials"));
        sd_bus_message_unref(m);
}

static void test_command_options_are_not_ours(void **state) {
        CliSpec spec = {};
        SbxError error = {};

        /* Without "--", parsing stops at the command: -c and --memory belong to it. */
        assert_int_equal(PARSE(&spec, &error, "run", "--tasks", "8", "/bin/sh", "-c", "echo", "--memory", "x"), 0);
        assert_int_equal(strv_length(spec.argv), 5);
        assert_string_equal(spec.argv[0], "/bin/sh");
        assert_string_equal(spec.argv[3], "--memory");
        assert_false(spec.memory_max.set);
        assert_int_equal(spec.tasks_max.value, 8);
        cli_spec_done(&spec);

        /* "--" lets the command itself start with a dash. */
        assert_int_equal(PARSE(&spec, &error, "run", "--", "--odd-name"), 0);
        assert_string_equal(spec.argv[0], "--odd-name");
        cli_spec_done(&spec);
}

static void test_last_scalar_wins(void **state) {
        CliSpec spec = {};
        SbxError error = {};

        assert_int_equal(PARSE(&spec, &error, "run", "--class", "trusted", "--class", "hostile", "--memory", "1M",
                               "--memory", "2M", "/bin/true"),
                         0);
        assert_string_equal(spec.class, "hostile");
        assert_int_equal(spec.memory_max.value, 2ULL << 20);
        cli_spec_done(&spec);
}

static void test_help(void **state) {
        CliSpec spec = {};
        SbxError error = {};

        assert_int_equal(PARSE(&spec, &error, "run", "--help"), 1);
        cli_spec_done(&spec);
        assert_int_equal(PARSE(&spec, &error, "run", "-h", "/bin/true"), 1);
        cli_spec_done(&spec);
}

static void assert_usage_error(int argc, char **argv, const char *message_part) {
        CliSpec spec = {};
        SbxError error = {};
        int r = cli_spec_parse_args(&spec, argc, argv, NULL, &error);

        cli_spec_done(&spec);
        if (r != -EINVAL)
                fail_msg("%s %s: got %d, expected -EINVAL", argv[1], argc > 2 ? argv[2] : "", r);
        if (!strstr(error.message, message_part))
                fail_msg("message '%s' does not mention '%s'", error.message, message_part);
}

#define ASSERT_USAGE_ERROR(part, ...) assert_usage_error(ARGC(__VA_ARGS__), ARGV(__VA_ARGS__), part)

static void test_bad_input(void **state) {
        ASSERT_USAGE_ERROR("--memory", "run", "--memory", "12Q", "/bin/true");
        ASSERT_USAGE_ERROR("too large", "run", "--memory", "99999999T", "/bin/true");
        ASSERT_USAGE_ERROR("--disk", "run", "--disk", "lots", "/bin/true");
        ASSERT_USAGE_ERROR("--egress-rate", "run", "--egress-rate", "fast", "/bin/true");
        ASSERT_USAGE_ERROR("--tasks", "run", "--tasks", "x", "/bin/true");
        ASSERT_USAGE_ERROR("--tasks", "run", "--tasks", "-1", "/bin/true");
        ASSERT_USAGE_ERROR("--cpu", "run", "--cpu", "50x", "/bin/true");
        ASSERT_USAGE_ERROR("--cpu", "run", "--cpu", "4294967296", "/bin/true");
        ASSERT_USAGE_ERROR("--runtime", "run", "--runtime", "5parsecs", "/bin/true");
        ASSERT_USAGE_ERROR("--idle", "run", "--idle", "", "/bin/true");
        ASSERT_USAGE_ERROR("KEY=VALUE", "run", "--setenv", "NOEQUALS", "/bin/true");
        ASSERT_USAGE_ERROR("KEY=VALUE", "run", "--setenv", "=value", "/bin/true");
        ASSERT_USAGE_ERROR("NAME:PATH", "run", "--credential", "nocolon", "/bin/true");
        ASSERT_USAGE_ERROR("NAME:PATH", "run", "--credential", ":/etc/hostname", "/bin/true");
        ASSERT_USAGE_ERROR("NAME:PATH", "run", "--credential", "name:", "/bin/true");
        ASSERT_USAGE_ERROR("--allow", "run", "--allow", "", "/bin/true");
        ASSERT_USAGE_ERROR("enforce", "run", "--egress-mode", "block", "/bin/true");
        ASSERT_USAGE_ERROR("'stop' or 'suspend'", "run", "--idle-action", "sleep", "/bin/true");
        ASSERT_USAGE_ERROR("Unknown option '--bogus'", "run", "--bogus", "/bin/true");
        ASSERT_USAGE_ERROR("requires an argument", "run", "--memory");
        ASSERT_USAGE_ERROR("Missing command", "run", "--memory", "1M");
        ASSERT_USAGE_ERROR("Missing command", "create", "--");
}

static void test_unreadable_credential(void **state) {
        CliSpec spec = {};
        SbxError error = {};

        /* Not a usage error: the format is fine, the file is not there. */
        assert_int_equal(PARSE(&spec, &error, "run", "--credential", "tok:/nonexistent/cred", "/bin/true"), -ENOENT);
        assert_non_null(strstr(error.message, "tok"));
        assert_non_null(strstr(error.message, "/nonexistent/cred"));
        cli_spec_done(&spec);

        assert_int_equal(PARSE(&spec, &error, "run", "--credential", "dir:/tmp", "/bin/true"), -EISDIR);
        cli_spec_done(&spec);
}

static void test_credential_read_file(void **state) {
        uint8_t *data = NULL;
        size_t size = 0;
        char path[] = "/tmp/test-sandboxctl-big-XXXXXX";
        int fd;

        assert_int_equal(credential_read_file(credential_path, &data, &size), 0);
        assert_int_equal(size, sizeof(credential_bytes));
        assert_memory_equal(data, credential_bytes, size);
        erase_and_free(data, size);

        /* Larger than the first buffer, so the growth path is exercised. */
        fd = mkstemp(path);
        assert_true(fd >= 0);
        for (int i = 0; i < 3000; i++)
                assert_int_equal(write(fd, "0123456789", 10), 10);
        close(fd);
        assert_int_equal(credential_read_file(path, &data, &size), 0);
        assert_int_equal(size, 30000);
        assert_memory_equal(data + 29990, "0123456789", 10);
        erase_and_free(data, size);

        /* Over the cap. */
        assert_int_equal(truncate(path, SPEC_CREDENTIAL_SIZE_MAX + 1), 0);
        assert_int_equal(credential_read_file(path, &data, &size), -EFBIG);
        unlink(path);

        /* Empty credentials are the daemon's call, not ours. */
        assert_int_equal(credential_read_file("/dev/null", &data, &size), 0);
        assert_int_equal(size, 0);
        erase_and_free(data, 1);
}

static char service_key_path[] = "/tmp/test-sandboxctl-svc-XXXXXX";

/* Reads Services[0]'s settings into the fields the test checks. */
static void read_service(sd_bus_message *m, const char *expected_name) {
        const char *name, *key, *url = NULL, *header = NULL;
        const void *cred = NULL;
        size_t cred_size = 0, n_methods = 0, n_paths = 0;
        uint64_t max_req = 0, max_resp = 0, rate = 0;
        char **methods = NULL, **paths = NULL;

        enter_key(m, "Services", "a(sa{sv})");
        assert_true(sd_bus_message_enter_container(m, 'a', "(sa{sv})") > 0);
        assert_true(sd_bus_message_enter_container(m, 'r', "sa{sv}") > 0);
        assert_true(sd_bus_message_read(m, "s", &name) > 0);
        assert_string_equal(name, expected_name);
        assert_true(sd_bus_message_enter_container(m, 'a', "{sv}") > 0);
        while (sd_bus_message_enter_container(m, 'e', "sv") > 0) {
                assert_true(sd_bus_message_read(m, "s", &key) > 0);
                if (streq(key, "Url"))
                        assert_true(sd_bus_message_read(m, "v", "s", &url) > 0);
                else if (streq(key, "Header"))
                        assert_true(sd_bus_message_read(m, "v", "s", &header) > 0);
                else if (streq(key, "Credential")) {
                        assert_true(sd_bus_message_enter_container(m, 'v', "ay") > 0);
                        assert_true(sd_bus_message_read_array(m, 'y', &cred, &cred_size) >= 0);
                        assert_true(sd_bus_message_exit_container(m) >= 0);
                } else if (streq(key, "Methods") || streq(key, "Paths")) {
                        char ***l = streq(key, "Methods") ? &methods : &paths;
                        assert_true(sd_bus_message_enter_container(m, 'v', "as") > 0);
                        assert_true(sd_bus_message_read_strv(m, l) > 0);
                        assert_true(sd_bus_message_exit_container(m) >= 0);
                } else if (streq(key, "MaxRequestBytes"))
                        assert_true(sd_bus_message_read(m, "v", "t", &max_req) > 0);
                else if (streq(key, "MaxResponseBytes"))
                        assert_true(sd_bus_message_read(m, "v", "t", &max_resp) > 0);
                else if (streq(key, "RateBps"))
                        assert_true(sd_bus_message_read(m, "v", "t", &rate) > 0);
                else
                        fail_msg("unexpected service key %s", key);
                assert_true(sd_bus_message_exit_container(m) >= 0);
        }
        assert_string_equal(url, "https://api.example.org/v1/");
        assert_string_equal(header, "X-Api-Key: {}");
        /* The file's trailing newline is not part of the key. */
        assert_int_equal(cred_size, 7);
        assert_memory_equal(cred, "sk-1234", 7);
        n_methods = strv_length(methods);
        assert_int_equal(n_methods, 2);
        assert_string_equal(methods[0], "GET");
        assert_string_equal(methods[1], "POST");
        n_paths = strv_length(paths);
        assert_int_equal(n_paths, 2);
        assert_string_equal(paths[0], "/models");
        assert_string_equal(paths[1], "/chat/");
        assert_int_equal(max_req, 4096);
        assert_int_equal(max_resp, 2u << 20);
        assert_int_equal(rate, 1000);
        strv_free(methods);
        strv_free(paths);
}

static void test_service_options(void **state) {
        _cleanup_free_ char *cred = NULL;
        CliSpec spec = {};
        SbxError e = {};
        sd_bus_message *m;
        int fd;

        fd = mkstemp(service_key_path);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, "sk-1234\n", 8), 8);
        close(fd);
        assert_true(asprintf(&cred, "api:%s", service_key_path) > 0);
        /* Options about a service may come before the --service that names its URL. */
        assert_int_equal(PARSE(&spec, &e, "run", "--service-credential", cred,
                               "--service", "api=https://api.example.org/v1/",
                               "--service-header", "api:X-Api-Key: {}",
                               "--service-method", "api:get,Post",
                               "--service-path", "api:/models", "--service-path", "api:/chat/",
                               "--service-max-request", "api:4K", "--service-max-response", "api:2M",
                               "--service-rate", "api:1000", "/bin/true"), 0);
        unlink(service_key_path);
        assert_int_equal(spec.n_services, 1);
        m = spec_message(&spec);
        read_service(m, "api");
        sd_bus_message_unref(m);
        cli_spec_done(&spec);
}

static void test_service_bad_input(void **state) {
        CliSpec spec = {};
        SbxError e = {};

        assert_true(PARSE(&spec, &e, "run", "--service", "api", "/bin/true") < 0);
        assert_non_null(strstr(e.message, "--service expects NAME=VALUE"));
        cli_spec_done(&spec);

        assert_true(PARSE(&spec, &e, "run", "--service", "api=https://a.example.org",
                          "--service", "api=https://b.example.org", "/bin/true") < 0);
        assert_non_null(strstr(e.message, "--service api is given twice"));
        cli_spec_done(&spec);

        assert_true(PARSE(&spec, &e, "run", "--service-method", "api:GET", "/bin/true") < 0);
        assert_non_null(strstr(e.message, "Service api has options but no --service api="));
        cli_spec_done(&spec);

        assert_true(PARSE(&spec, &e, "run", "--service", "api=https://a.example.org",
                          "--service-max-request", "api:lots", "/bin/true") < 0);
        assert_non_null(strstr(e.message, "--service-max-request"));
        cli_spec_done(&spec);

        assert_true(PARSE(&spec, &e, "run", "--service", "api=https://a.example.org",
                          "--service-credential", "api:/nonexistent/key", "/bin/true") == -ENOENT);
        assert_non_null(strstr(e.message, "credential of service api"));
        cli_spec_done(&spec);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_every_option),
                cmocka_unit_test(test_only_given_keys),
                cmocka_unit_test(test_command_options_are_not_ours),
                cmocka_unit_test(test_last_scalar_wins),
                cmocka_unit_test(test_help),
                cmocka_unit_test(test_bad_input),
                cmocka_unit_test(test_unreadable_credential),
                cmocka_unit_test(test_credential_read_file),
                cmocka_unit_test(test_service_options),
                cmocka_unit_test(test_service_bad_input),
        };
        return cmocka_run_group_tests(tests, setup_credential, teardown_credential);
}
