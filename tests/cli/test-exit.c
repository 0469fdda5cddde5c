/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* sandboxctl's exit status for each error a call can end with
 * (sandboxctl-exit.h): every org.sandboxd1.Error.* of daemon/shared/errors.h, the
 * bus's and polkit's refusals, and a bus that is not there. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "errors.h"
#include "sandboxctl-exit.h"
#include "util.h"

static const struct {
        const char *name;
        int code;
} expected[] = {
        { SBX_ERROR_INVALID_SPEC, 65 },
        { SBX_ERROR_UNKNOWN_KEY, 65 },
        { SBX_ERROR_WRONG_TYPE, 65 },
        { SBX_ERROR_MISSING_ARGV, 65 },
        { SBX_ERROR_LIMIT_OUT_OF_RANGE, 65 },
        { SBX_ERROR_UNKNOWN_CLASS, 65 },
        { SBX_ERROR_UNKNOWN_ORIGIN, 65 },
        { SBX_ERROR_INVALID_CREDENTIAL, 65 },
        { SBX_ERROR_INVALID_ENVIRONMENT, 65 },
        { SBX_ERROR_INVALID_EGRESS, 65 },
        { SBX_ERROR_INVALID_SERVICE, 65 },
        { SBX_ERROR_INVALID_ENDPOINT, 65 },
        { SBX_ERROR_INVALID_ARGUMENT, 65 },
        { SBX_ERROR_ISOLATION_UNAVAILABLE, 77 },
        { SBX_ERROR_NO_SUCH_WORKER, 66 },
        { SBX_ERROR_EXECUTABLE_NOT_FOUND, 66 },
        { SBX_ERROR_START_FAILED, 70 },
        { SBX_ERROR_CHANNEL_BUSY, 70 },
        { SBX_ERROR_NOT_RUNNING, 70 },
        { SBX_ERROR_TOO_MANY_WORKERS, 77 },
        { SBX_ERROR_TOO_MANY_PROCESSES, 77 },
        { SBX_ERROR_FILE_NOT_FOUND, 66 },
        { SBX_ERROR_FILE_EXISTS, 70 },
        { SBX_ERROR_NOT_A_DIRECTORY, 70 },
        { SBX_ERROR_IS_A_DIRECTORY, 70 },
        { SBX_ERROR_NOT_REGULAR_FILE, 77 },
        { SBX_ERROR_PATH_OUTSIDE_HOME, 77 },
        { SBX_ERROR_PERMISSION_DENIED, 77 },
        { SBX_ERROR_DISK_FULL, 70 },
        { SBX_ERROR_DIRECTORY_NOT_EMPTY, 70 },
        { SBX_ERROR_TOO_MANY_ENTRIES, 70 },
        { SBX_ERROR_NO_SUCH_TRANSFER, 66 },
        { SBX_ERROR_FILE_ERROR, 70 },
        { SBX_ERROR_ACCESS_DENIED, 77 },
        { SBX_ERROR_NOT_SUPPORTED, 77 },
        { SBX_ERROR_TOO_MANY_SUBSCRIBERS, 77 },
        { SBX_ERROR_NOT_SUBSCRIBED, 77 },
        { SBX_ERROR_EGRESS_OUTSIDE_FLOOR, 77 },
        { SBX_ERROR_SUSPENDED, 70 },
        { SBX_ERROR_SUSPEND_FAILED, 70 },
        { SBX_ERROR_UID_TAKEN, 70 },
        { SBX_ERROR_INVALID_WORKSPACE, 65 },
        { SBX_ERROR_WORKSPACE_EXISTS, 70 },
        { SBX_ERROR_ENDPOINT_NAME_TAKEN, 70 },
        { SBX_ERROR_NO_SUCH_WORKSPACE, 66 },
        { SBX_ERROR_WORKSPACE_BUSY, 70 },
        { SBX_ERROR_QUOTA_EXCEEDED, 77 },
        { SBX_ERROR_TOO_MANY_REQUESTS, 77 },
        { SBX_ERROR_INSUFFICIENT_SPACE, 77 },
        /* A new Invalid* error is a refusal as invalid before anyone lists it. */
        { "org.sandboxd1.Error.InvalidSomethingNew", 65 },
        { "org.sandboxd1.Error.SomethingNew", 70 },
        { "org.freedesktop.DBus.Error.AccessDenied", 77 },
        { "org.freedesktop.DBus.Error.InteractiveAuthorizationRequired", 77 },
        { "org.freedesktop.DBus.Error.AuthFailed", 77 },
        { "org.freedesktop.PolicyKit1.Error.NotAuthorized", 77 },
        { "org.freedesktop.DBus.Error.ServiceUnknown", 69 },
        { "org.freedesktop.DBus.Error.NameHasNoOwner", 69 },
        { "org.freedesktop.DBus.Error.NoReply", 69 },
        { "org.freedesktop.DBus.Error.Timeout", 69 },
        { "org.freedesktop.DBus.Error.TimedOut", 69 },
        { "org.freedesktop.DBus.Error.NoServer", 69 },
        { "org.freedesktop.DBus.Error.Disconnected", 69 },
        { "org.freedesktop.DBus.Error.BadAddress", 69 },
        { "org.freedesktop.DBus.Error.Spawn.ChildExited", 69 },
        { "org.freedesktop.DBus.Error.Spawn.ServiceNotFound", 69 },
        { "org.freedesktop.DBus.Error.UnknownMethod", 69 },
        { "org.freedesktop.DBus.Error.UnknownInterface", 69 },
        { "org.freedesktop.DBus.Error.UnknownObject", 66 },
        { "org.freedesktop.DBus.Error.InvalidArgs", 65 },
        { "org.freedesktop.DBus.Error.NoMemory", 70 },
        { "org.freedesktop.DBus.Error.Failed", 70 },
};

static int code_of(const char *name) {
        sd_bus_error e = SD_BUS_ERROR_NULL;
        int code;

        assert_true(sd_bus_error_set(&e, name, "message") < 0);
        code = exit_code_from_bus_error(&e, -EIO);
        sd_bus_error_free(&e);
        return code;
}

static void test_named_errors(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(expected); i++) {
                int code = code_of(expected[i].name);
                if (code != expected[i].code)
                        fail_msg("%s: exit %d, expected %d", expected[i].name, code, expected[i].code);
        }
}

/* Every name daemon/shared/errors.h defines has its line above: an error added
 * there gets its exit status decided, not defaulted. */
static void test_every_daemon_error_is_listed(void **state) {
        _cleanup_fclose_ FILE *f = fopen(ERRORS_H, "re");
        char line[512];
        unsigned n = 0;

        assert_non_null(f);
        while (fgets(line, sizeof(line), f)) {
                char *name = strstr(line, "\"org.sandboxd1.Error.");
                bool found = false;

                if (!name || !startswith(line, "#define"))
                        continue;
                name++;
                *strchrnul(name, '"') = 0;
                for (size_t i = 0; i < ELEMENTSOF(expected); i++)
                        found = found || streq(expected[i].name, name);
                if (!found)
                        fail_msg("%s (daemon/shared/errors.h) has no exit status in this test", name);
                n++;
        }
        assert_true(n >= 17);
}

static void test_no_error_name(void **state) {
        assert_int_equal(exit_code_from_bus_error(NULL, -ETIMEDOUT), 69);
        assert_int_equal(exit_code_from_bus_error(NULL, -ECONNREFUSED), 69);
        assert_int_equal(exit_code_from_bus_error(NULL, -ENOENT), 69);
        assert_int_equal(exit_code_from_bus_error(NULL, -ECONNRESET), 69);
        assert_int_equal(exit_code_from_bus_error(NULL, -ENOMEM), 70);
        assert_int_equal(exit_code_from_bus_error(NULL, -EBADMSG), 70);
}

static void test_local_input(void **state) {
        assert_int_equal(exit_code_from_errno(0), 0);
        assert_int_equal(exit_code_from_errno(-ENOENT), 66);
        assert_int_equal(exit_code_from_errno(-EACCES), 66);
        assert_int_equal(exit_code_from_errno(-EISDIR), 66);
        assert_int_equal(exit_code_from_errno(-EFBIG), 66);
        assert_int_equal(exit_code_from_errno(-ENOMEM), 70);
}

static void test_values_are_sysexits(void **state) {
        assert_int_equal(EXIT_USAGE, 64);
        assert_int_equal(EXIT_INVALID, 65);
        assert_int_equal(EXIT_NOT_FOUND, 66);
        assert_int_equal(EXIT_UNAVAILABLE, 69);
        assert_int_equal(EXIT_FAILED, 70);
        assert_int_equal(EXIT_REFUSED, 77);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_named_errors),
                cmocka_unit_test(test_every_daemon_error_is_listed),
                cmocka_unit_test(test_no_error_name),
                cmocka_unit_test(test_local_input),
                cmocka_unit_test(test_values_are_sysexits),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
