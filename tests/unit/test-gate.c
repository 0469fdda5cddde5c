/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "errors.h"
#include "gate.h"
#include "probe.h"

static SbxConfig config;
static RuntimeTable table;

static int setup(void **state) {
        WallsReport walls;

        sbx_config_init_defaults(&config);
        runtime_table_init(&table);
        /* The runtimes' part of the gate, on a host whose walls were verified
         * (test-walls.c covers the walls' part). */
        assert_int_equal(walls_report_parse("host net=4:1 ipc=4:2 mnt=4:3\nunit net=4:11 ipc=4:12 mnt=4:13\n",
                                            &walls), 0);
        walls_status_from_report(&table.walls, &walls, "done");
        return 0;
}

static int teardown(void **state) {
        sbx_config_done(&config);
        return 0;
}

static void assert_refused(SbxClass c, const char *fragment) {
        SbxRuntime rt = _SBX_RUNTIME_INVALID;
        SbxError e = {};
        assert_true(gate_choose(&table, &config, c, &rt, &e) < 0);
        assert_string_equal(e.name, SBX_ERROR_ISOLATION_UNAVAILABLE);
        assert_non_null(strstr(e.message, fragment));
        assert_int_equal(rt, _SBX_RUNTIME_INVALID);
}

static void assert_chosen(SbxClass c, SbxRuntime expected) {
        SbxRuntime rt = _SBX_RUNTIME_INVALID;
        assert_int_equal(gate_choose(&table, &config, c, &rt, NULL), 0);
        assert_int_equal(rt, expected);
}

static void test_nothing_probed(void **state) {
        assert_chosen(SBX_CLASS_TRUSTED, SBX_RUNTIME_SYSTEMD);
        assert_refused(SBX_CLASS_STANDARD, "standard needs runtime runsc");
        assert_refused(SBX_CLASS_UNTRUSTED, "untrusted needs runtime runsc");
        assert_refused(SBX_CLASS_HOSTILE, "hostile needs runtime kata");
        assert_refused(SBX_CLASS_WASM, "wasm needs runtime wasm");
}

static void test_runsc_available(void **state) {
        runtime_status_set(&table.status[SBX_RUNTIME_RUNSC], true, "/usr/bin/runsc", "ok");
        assert_chosen(SBX_CLASS_STANDARD, SBX_RUNTIME_RUNSC);
        assert_chosen(SBX_CLASS_UNTRUSTED, SBX_RUNTIME_RUNSC);
        /* gVisor does not stand in for a VM. */
        assert_refused(SBX_CLASS_HOSTILE, "kata");
}

static void test_override_only_for_standard(void **state) {
        runtime_status_set(&table.status[SBX_RUNTIME_RUNSC], false, "/usr/bin/runsc", "runsc broken");
        config.allow_shared_kernel_for_standard = true;
        assert_chosen(SBX_CLASS_STANDARD, SBX_RUNTIME_SYSTEMD);
        assert_refused(SBX_CLASS_UNTRUSTED, "runsc broken");
        assert_refused(SBX_CLASS_HOSTILE, "kata");
        config.allow_shared_kernel_for_standard = false;
        assert_refused(SBX_CLASS_STANDARD, "runsc broken");
}

static void test_second_check_sees_a_runtime_change(void **state) {
        SbxRuntime rt;
        SbxError e = {};

        runtime_status_set(&table.status[SBX_RUNTIME_RUNSC], true, "/usr/bin/runsc", "ok");
        assert_int_equal(gate_choose(&table, &config, SBX_CLASS_UNTRUSTED, &rt, NULL), 0);
        assert_int_equal(gate_recheck(&table, &config, SBX_CLASS_UNTRUSTED, rt, NULL), 0);
        /* runsc breaks between the two checks: the second refuses. */
        runtime_status_set(&table.status[SBX_RUNTIME_RUNSC], false, "/usr/bin/runsc", "runsc vanished");
        assert_true(gate_recheck(&table, &config, SBX_CLASS_UNTRUSTED, rt, &e) < 0);
        assert_string_equal(e.name, SBX_ERROR_ISOLATION_UNAVAILABLE);
        assert_non_null(strstr(e.message, "runsc vanished"));

        /* Standard with the override: the first check said runsc; runsc breaks;
         * the gate would now say "shared kernel", which is a different answer
         * and therefore refused rather than quietly taken. */
        config.allow_shared_kernel_for_standard = true;
        runtime_status_set(&table.status[SBX_RUNTIME_RUNSC], true, "/usr/bin/runsc", "ok");
        assert_int_equal(gate_choose(&table, &config, SBX_CLASS_STANDARD, &rt, NULL), 0);
        assert_int_equal(rt, SBX_RUNTIME_RUNSC);
        runtime_status_set(&table.status[SBX_RUNTIME_RUNSC], false, "/usr/bin/runsc", "gone");
        e = (SbxError) {};
        assert_true(gate_recheck(&table, &config, SBX_CLASS_STANDARD, rt, &e) < 0);
        assert_non_null(strstr(e.message, "no longer"));
        config.allow_shared_kernel_for_standard = false;
}

static void test_probe_output(void **state) {
        char reason[64];
        bool ok;
        assert_int_equal(probe_parse_output("ok runsc version 1 platform=systrap\n", &ok, reason, sizeof(reason)), 0);
        assert_true(ok);
        assert_string_equal(reason, "runsc version 1 platform=systrap");
        assert_int_equal(probe_parse_output("unavailable kata-runtime not found\nmore", &ok, reason, sizeof(reason)), 0);
        assert_false(ok);
        assert_string_equal(reason, "kata-runtime not found");
        assert_true(probe_parse_output("okay", &ok, reason, sizeof(reason)) < 0);
        assert_true(probe_parse_output("garbage", &ok, reason, sizeof(reason)) < 0);
        assert_true(probe_parse_output("", &ok, reason, sizeof(reason)) < 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_nothing_probed, setup, teardown),
                cmocka_unit_test_setup_teardown(test_runsc_available, setup, teardown),
                cmocka_unit_test_setup_teardown(test_override_only_for_standard, setup, teardown),
                cmocka_unit_test_setup_teardown(test_second_check_sees_a_runtime_change, setup, teardown),
                cmocka_unit_test_setup_teardown(test_probe_output, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
