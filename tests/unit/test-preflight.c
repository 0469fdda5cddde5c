/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "preflight.h"
#include "test-bus.h"

/* The Manager's Classes property (what shell completion reads on every TAB)
 * must say what the gate would decide: a class it shows as usable and
 * CreateWorker refuses, or the reverse, would mislead. */

static sd_bus *bus;
static int peer = -1;
static SbxConfig config;
static RuntimeTable table;

static int setup(void **state) {
        WallsReport walls;

        bus = test_bus_new_offline(&peer);
        sbx_config_init_defaults(&config);
        runtime_table_init(&table);
        assert_int_equal(walls_report_parse("host net=4:1 ipc=4:2 mnt=4:3\nunit net=4:11 ipc=4:12 mnt=4:13\n",
                                            &walls), 0);
        walls_status_from_report(&table.walls, &walls, "done");
        return bus ? 0 : -1;
}

static int teardown(void **state) {
        sbx_config_done(&config);
        close(peer);
        sd_bus_close_unref(bus);
        return 0;
}

/* Reads the property's value back as a string "class=0|1 ..." in row order. */
static void classes_read(char *buf, size_t size) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = test_message_new(bus, "Get");
        const char *name;
        int usable, r;
        size_t len = 0;

        assert_non_null(m);
        assert_int_equal(preflight_append_classes(m, &table, &config), 0);
        assert_int_equal(test_message_seal(m), 0);
        assert_int_equal(sd_bus_message_enter_container(m, 'a', "(sb)"), 1);
        buf[0] = '\0';
        while ((r = sd_bus_message_read(m, "(sb)", &name, &usable)) > 0)
                len += (size_t) snprintf(buf + len, size - len, "%s%s=%d", len ? " " : "", name, usable);
        assert_int_equal(r, 0);
        assert_int_equal(sd_bus_message_exit_container(m), 1);
}

static void test_every_class_once_in_order(void **state) {
        char got[256];

        classes_read(got, sizeof(got));
        /* Nothing probed but the shared kernel (which needs no probe). */
        assert_string_equal(got, "trusted=1 standard=0 devcontainer=0 untrusted=0 hostile=0 wasm=0");
}

static void test_follows_the_probed_runtimes(void **state) {
        char got[256];

        runtime_status_set(&table.status[SBX_RUNTIME_RUNSC], true, "/usr/bin/runsc", "ok");
        classes_read(got, sizeof(got));
        assert_string_equal(got, "trusted=1 standard=1 devcontainer=1 untrusted=1 hostile=0 wasm=0");
}

static void test_shared_kernel_exception_for_standard_only(void **state) {
        char got[256];

        config.allow_shared_kernel_for_standard = true;
        classes_read(got, sizeof(got));
        assert_string_equal(got, "trusted=1 standard=1 devcontainer=0 untrusted=0 hostile=0 wasm=0");
}

static void test_unverified_walls_refuse_every_class(void **state) {
        char got[256];

        runtime_status_set(&table.status[SBX_RUNTIME_RUNSC], true, "/usr/bin/runsc", "ok");
        table.walls.namespaces_private = false;
        classes_read(got, sizeof(got));
        assert_string_equal(got, "trusted=0 standard=0 devcontainer=0 untrusted=0 hostile=0 wasm=0");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_every_class_once_in_order, setup, teardown),
                cmocka_unit_test_setup_teardown(test_follows_the_probed_runtimes, setup, teardown),
                cmocka_unit_test_setup_teardown(test_shared_kernel_exception_for_standard_only, setup, teardown),
                cmocka_unit_test_setup_teardown(test_unverified_walls_refuse_every_class, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
