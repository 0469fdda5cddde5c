/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The walls probe's logic without a systemd: namespace identities compared
 * with PID 1's, the probe's output parsed (garbage refused), and the gate and
 * Preflight refusing every class on a bad verdict. */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "errors.h"
#include "gate.h"
#include "ns-ident.h"
#include "preflight.h"
#include "probe.h"
#include "test-bus.h"
#include "walls.h"

#define HOST_LINE "host net=4:4026531992 ipc=4:4026531839 mnt=4:4026531841\n"
#define UNIT_PRIVATE "unit net=4:4026532762 ipc=4:4026532831 mnt=4:4026532760\n"
#define FIREWALL_NONE "ip-firewall unavailable a loopback connection got through IPAddressDeny=any\n"

static NsIdSet ids(uint64_t net, uint64_t ipc, uint64_t mnt) {
        return (NsIdSet) {
                .id = { [NS_NET] = { 4, net }, [NS_IPC] = { 4, ipc }, [NS_MNT] = { 4, mnt } },
                .mask = NS_MASK_ALL,
        };
}

static void test_compare_private(void **state) {
        NsIdSet host = ids(100, 200, 300), own = ids(101, 201, 301);
        char reason[320] = "";

        assert_int_equal(ns_id_set_compare(&own, &host, NS_MASK_ALL, reason, sizeof(reason)), 0);
        /* Same inode on another device is another namespace. */
        own = host;
        for (NsKind k = 0; k < _NS_KIND_MAX; k++)
                own.id[k].dev = 5;
        assert_int_equal(ns_id_set_compare(&own, &host, NS_MASK_ALL, reason, sizeof(reason)), 0);
}

static void assert_shared(NsIdSet own, const char *fragment) {
        NsIdSet host = ids(100, 200, 300);
        char reason[320] = "";

        assert_int_equal(ns_id_set_compare(&own, &host, NS_MASK_ALL, reason, sizeof(reason)), -EHOSTDOWN);
        if (!strstr(reason, fragment))
                fail_msg("reason \"%s\" does not say \"%s\"", reason, fragment);
}

static void test_compare_each_shared(void **state) {
        assert_shared(ids(100, 201, 301), "the network namespace is PID 1's (net=4:100)");
        assert_shared(ids(101, 200, 301), "the IPC namespace is PID 1's (ipc=4:200)");
        assert_shared(ids(101, 201, 300), "the mount namespace is PID 1's (mnt=4:300)");
        assert_shared(ids(100, 200, 301), "the network and IPC namespaces are PID 1's");
        assert_shared(ids(100, 200, 300), "the network, IPC and mount namespaces are PID 1's");
}

static void test_compare_only_mask(void **state) {
        NsIdSet host = ids(100, 200, 300), own = ids(101, 201, 300);
        unsigned launcher = NS_MASK(NS_NET) | NS_MASK(NS_IPC);
        char reason[320] = "";

        /* The launcher checks net and ipc only: its mount namespace is not promised. */
        assert_int_equal(ns_id_set_compare(&own, &host, launcher, reason, sizeof(reason)), 0);
        /* A kind one side lacks is not "different": refused. */
        own.mask &= ~NS_MASK(NS_IPC);
        assert_int_equal(ns_id_set_compare(&own, &host, launcher, reason, sizeof(reason)), -EHOSTDOWN);
        assert_non_null(strstr(reason, "ipc"));
}

static void test_id_parse_format(void **state) {
        NsIdSet s = ids(4026531992, 4026531839, 4026531841), back;
        char buf[160];
        NsId id;

        assert_int_equal(ns_id_set_format(&s, buf, sizeof(buf)), 0);
        assert_string_equal(buf, "net=4:4026531992 ipc=4:4026531839 mnt=4:4026531841");
        assert_int_equal(ns_id_set_parse(buf, NS_MASK_ALL, &back), 0);
        assert_int_equal(back.mask, s.mask);
        for (NsKind k = 0; k < _NS_KIND_MAX; k++) {
                assert_int_equal(back.id[k].dev, s.id[k].dev);
                assert_int_equal(back.id[k].ino, s.id[k].ino);
        }
        assert_int_equal(ns_id_parse("0:17", &id), 0);
        assert_int_equal(id.ino, 17);

        static const char * const bad_ids[] = { "", ":", "4:", ":5", "4:0", "4:x", "-1:5", "4:5:6", "4 :5", "4:5 " };
        for (size_t i = 0; i < ELEMENTSOF(bad_ids); i++)
                if (ns_id_parse(bad_ids[i], &id) >= 0)
                        fail_msg("\"%s\" was taken for an identity", bad_ids[i]);
        static const char * const bad_sets[] = {
                "",
                "net=4:1 ipc=4:2",                      /* mnt missing */
                "net=4:1 ipc=4:2 mnt=4:3 net=4:4",      /* repeated */
                "net=4:1 ipc=4:2 mnt=4:3 uts=4:4",      /* not asked for */
                "net=4:1  ipc=4:2 mnt=4:3",
                "net=4:1 ipc=4:2 mnt=4:3 ",
                "net:4:1 ipc=4:2 mnt=4:3",
                "NET=4:1 ipc=4:2 mnt=4:3",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad_sets); i++)
                if (ns_id_set_parse(bad_sets[i], NS_MASK_ALL, &back) != -EBADMSG)
                        fail_msg("\"%s\" was taken for a set", bad_sets[i]);
}

static void test_report_parse(void **state) {
        WallsReport r;

        assert_int_equal(walls_report_parse(HOST_LINE UNIT_PRIVATE FIREWALL_NONE, &r), 0);
        assert_true(r.has_host && r.has_unit && r.has_ip_firewall);
        assert_false(r.ip_firewall);
        assert_int_equal(r.unit.id[NS_NET].ino, 4026532762);
        assert_int_equal(walls_report_parse("host unavailable cannot read /proc/1/ns: Permission denied\n", &r), 0);
        assert_true(r.has_host && !r.has_unit);
        assert_string_equal(r.host_error, "cannot read /proc/1/ns: Permission denied");
        assert_int_equal(walls_report_parse(HOST_LINE UNIT_PRIVATE "ip-firewall ok IPAddressDeny=any refused it", &r), 0);
        assert_true(r.ip_firewall);

        static const char * const garbage[] = {
                "",
                "\n",
                "ok\n",
                "hello world\n",
                HOST_LINE HOST_LINE UNIT_PRIVATE,
                HOST_LINE UNIT_PRIVATE FIREWALL_NONE FIREWALL_NONE,
                HOST_LINE "unit net=4:1 ipc=4:2\n",
                HOST_LINE "unit net=4:1 ipc=4:2 mnt=4:x\n",
                HOST_LINE UNIT_PRIVATE "ip-firewall maybe\n",
                HOST_LINE UNIT_PRIVATE "ip-firewall ok \n",
                HOST_LINE "\n" UNIT_PRIVATE,
                HOST_LINE "unit unavailable \n",
                "host net=4:1 ipc=4:2 mnt=4:3\tx\n",
        };
        for (size_t i = 0; i < ELEMENTSOF(garbage); i++)
                if (walls_report_parse(garbage[i], &r) != -EBADMSG)
                        fail_msg("garbage #%zu taken for an answer: \"%s\"", i, garbage[i]);
}

static WallsStatus verdict(const char *out, const char *result) {
        WallsStatus s;
        WallsReport r;

        walls_status_init(&s);
        assert_int_equal(walls_report_parse(out, &r), 0);
        walls_status_from_report(&s, &r, result);
        return s;
}

static void test_verdicts(void **state) {
        WallsStatus s;

        walls_status_init(&s);
        assert_false(s.namespaces_private);
        assert_non_null(strstr(s.namespaces_reason, "not verified yet"));

        s = verdict(HOST_LINE UNIT_PRIVATE FIREWALL_NONE, "done");
        assert_true(s.namespaces_private);
        assert_int_equal(s.host.mask, NS_MASK_ALL);
        assert_int_equal(s.host.id[NS_NET].ino, 4026531992);
        assert_false(s.ip_firewall);
        assert_non_null(strstr(s.ip_firewall_reason, "got through"));

        s = verdict(HOST_LINE "unit net=4:4026531992 ipc=4:4026532831 mnt=4:4026532760\n" FIREWALL_NONE, "done");
        assert_false(s.namespaces_private);
        assert_non_null(strstr(s.namespaces_reason, "the network namespace is PID 1's"));

        s = verdict(HOST_LINE "unit net=4:4026532762 ipc=4:4026531839 mnt=4:4026532760\n" FIREWALL_NONE, "done");
        assert_false(s.namespaces_private);
        assert_non_null(strstr(s.namespaces_reason, "the IPC namespace is PID 1's"));

        s = verdict(HOST_LINE "unit net=4:4026532762 ipc=4:4026532831 mnt=4:4026531841\n" FIREWALL_NONE, "done");
        assert_false(s.namespaces_private);
        assert_non_null(strstr(s.namespaces_reason, "the mount namespace is PID 1's"));

        /* Fail closed: a unit that failed, a probe that did not run, no host identities. */
        s = verdict(HOST_LINE UNIT_PRIVATE FIREWALL_NONE, "failed");
        assert_false(s.namespaces_private);
        assert_non_null(strstr(s.namespaces_reason, "result failed"));
        s = verdict(HOST_LINE, "failed");
        assert_false(s.namespaces_private);
        s = verdict(UNIT_PRIVATE FIREWALL_NONE, "done");
        assert_false(s.namespaces_private);
        assert_non_null(strstr(s.namespaces_reason, "PID 1"));
        s = verdict("host unavailable cannot read /proc/1/ns: Permission denied\n", "failed");
        assert_false(s.namespaces_private);
        assert_non_null(strstr(s.namespaces_reason, "Permission denied"));

        /* A good verdict then a probe that cannot run: refused again, PID 1's identities forgotten. */
        s = verdict(HOST_LINE UNIT_PRIVATE FIREWALL_NONE, "done");
        walls_status_refuse(&s, "the namespace probe did not answer in time");
        assert_false(s.namespaces_private);
        assert_int_equal(s.host.mask, 0);
}

/* Which refusals are verdicts: a namespace found shared is one (the next
 * round in ten minutes); a probe that failed, ran short or said nothing
 * usable is none (probe.h: tried again soon). */
static void test_no_verdict(void **state) {
        WallsStatus s;

        s = verdict(HOST_LINE UNIT_PRIVATE FIREWALL_NONE, "done");
        assert_true(s.namespaces_private);
        assert_false(s.no_verdict);
        s = verdict(HOST_LINE "unit net=4:4026531992 ipc=4:4026532831 mnt=4:4026532760\n" FIREWALL_NONE, "done");
        assert_false(s.namespaces_private);
        assert_false(s.no_verdict);

        s = verdict(HOST_LINE UNIT_PRIVATE FIREWALL_NONE, "failed");
        assert_true(s.no_verdict);
        s = verdict(HOST_LINE, "timeout");
        assert_true(s.no_verdict);
        s = verdict(UNIT_PRIVATE FIREWALL_NONE, "done");
        assert_true(s.no_verdict);
        walls_status_init(&s);
        walls_status_refuse(&s, "cannot start the namespace probe: Connection timed out");
        assert_true(s.no_verdict);
        /* A verdict after a round without one clears it. */
        s = verdict(HOST_LINE UNIT_PRIVATE FIREWALL_NONE, "failed");
        walls_status_from_report(&s, &(WallsReport) {}, "done");
        assert_true(s.no_verdict);
        WallsReport r;
        assert_int_equal(walls_report_parse(HOST_LINE UNIT_PRIVATE FIREWALL_NONE, &r), 0);
        walls_status_from_report(&s, &r, "done");
        assert_true(s.namespaces_private);
        assert_false(s.no_verdict);
}

/* 30 s after the first round without a verdict, doubling, never more than
 * the ten minutes a verdict waits. */
static void test_retry_delay(void **state) {
        const uint64_t s = USEC_PER_SEC;

        assert_int_equal(probe_retry_delay_usec(0), 30 * s);
        assert_int_equal(probe_retry_delay_usec(1), 60 * s);
        assert_int_equal(probe_retry_delay_usec(2), 120 * s);
        assert_int_equal(probe_retry_delay_usec(3), 240 * s);
        assert_int_equal(probe_retry_delay_usec(4), 480 * s);
        assert_int_equal(probe_retry_delay_usec(5), 600 * s);
        assert_int_equal(probe_retry_delay_usec(15), 600 * s);
        assert_int_equal(probe_retry_delay_usec(16), 600 * s);
        assert_int_equal(probe_retry_delay_usec(UINT_MAX), 600 * s);
}

static SbxConfig config;
static RuntimeTable table;

static int setup(void **state) {
        sbx_config_init_defaults(&config);
        runtime_table_init(&table);
        for (int rt = SBX_RUNTIME_RUNSC; rt < _SBX_RUNTIME_MAX; rt++)
                runtime_status_set(&table.status[rt], true, "/usr/bin/x", "ok");
        return 0;
}

static int teardown(void **state) {
        sbx_config_done(&config);
        return 0;
}

static void assert_every_class_refused(const char *fragment) {
        for (int c = 0; c < _SBX_CLASS_MAX; c++) {
                SbxRuntime rt = _SBX_RUNTIME_INVALID;
                SbxError e = {};

                assert_true(gate_choose(&table, &config, (SbxClass) c, &rt, &e) < 0);
                assert_string_equal(e.name, SBX_ERROR_ISOLATION_UNAVAILABLE);
                if (!strstr(e.message, fragment))
                        fail_msg("class %s refused with \"%s\", not naming \"%s\"", sbx_class_to_string(c),
                                 e.message, fragment);
                assert_int_equal(rt, _SBX_RUNTIME_INVALID);
        }
}

static void test_gate_refuses_every_class(void **state) {
        SbxRuntime rt;

        /* Nothing verified yet: nothing starts, even though every runtime answered. */
        assert_every_class_refused("not verified yet");

        table.walls = verdict(HOST_LINE UNIT_PRIVATE FIREWALL_NONE, "done");
        for (int c = 0; c < _SBX_CLASS_MAX; c++)
                assert_int_equal(gate_choose(&table, &config, (SbxClass) c, &rt, NULL), 0);

        table.walls = verdict(HOST_LINE "unit net=4:4026531992 ipc=4:4026532831 mnt=4:4026532760\n", "done");
        assert_every_class_refused("the network namespace is PID 1's");
        /* Not even the operator's shared-kernel exception for standard. */
        config.allow_shared_kernel_for_standard = true;
        runtime_status_set(&table.status[SBX_RUNTIME_RUNSC], false, "/usr/bin/runsc", "gone");
        assert_every_class_refused("the network namespace is PID 1's");
        /* Nor the second check. */
        SbxError e = {};
        assert_true(gate_recheck(&table, &config, SBX_CLASS_TRUSTED, SBX_RUNTIME_SYSTEMD, &e) < 0);
        assert_string_equal(e.name, SBX_ERROR_ISOLATION_UNAVAILABLE);
}

static void test_preflight_rows(void **state) {
        int peer = -1;
        sd_bus *bus = test_bus_new_offline(&peer);
        sd_bus_message *m;
        const char *cls, *runtime, *path, *reason, *wall, *detail;
        int available, verified;
        size_t n = 0;

        assert_non_null(bus);
        table.walls = verdict(HOST_LINE "unit net=4:4026532762 ipc=4:4026531839 mnt=4:4026532760\n" FIREWALL_NONE,
                              "done");
        m = test_message_new(bus, "Preflight");
        assert_int_equal(preflight_append_rows(m, &table, &config), 0);
        assert_int_equal(test_message_seal(m), 0);
        assert_int_equal(sd_bus_message_enter_container(m, 'a', "(sssbs)"), 1);
        while (sd_bus_message_read(m, "(sssbs)", &cls, &runtime, &path, &available, &reason) > 0) {
                n++;
                assert_false(available);
                if (!strstr(reason, "the IPC namespace is PID 1's"))
                        fail_msg("Preflight's %s row says \"%s\"", cls, reason);
        }
        assert_int_equal(n, _SBX_CLASS_MAX);
        assert_int_equal(sd_bus_message_exit_container(m), 1);
        assert_int_equal(sd_bus_message_enter_container(m, 'a', "(sbs)"), 1);
        assert_int_equal(sd_bus_message_read(m, "(sbs)", &wall, &verified, &detail), 1);
        assert_string_equal(wall, "namespaces");
        assert_false(verified);
        assert_non_null(strstr(detail, "the IPC namespace is PID 1's"));
        assert_int_equal(sd_bus_message_read(m, "(sbs)", &wall, &verified, &detail), 1);
        assert_string_equal(wall, "ip-firewall");
        assert_false(verified);
        assert_non_null(strstr(detail, "got through IPAddressDeny=any"));
        assert_int_equal(sd_bus_message_read(m, "(sbs)", &wall, &verified, &detail), 0);
        sd_bus_message_unref(m);

        /* Verified walls: the classes are the runtimes' business again. */
        table.walls = verdict(HOST_LINE UNIT_PRIVATE "ip-firewall ok IPAddressDeny=any refused it\n", "done");
        m = test_message_new(bus, "Preflight");
        assert_int_equal(preflight_append_rows(m, &table, &config), 0);
        assert_int_equal(test_message_seal(m), 0);
        assert_int_equal(sd_bus_message_enter_container(m, 'a', "(sssbs)"), 1);
        assert_int_equal(sd_bus_message_read(m, "(sssbs)", &cls, &runtime, &path, &available, &reason), 1);
        assert_string_equal(cls, "trusted");
        assert_true(available);
        assert_int_equal(sd_bus_message_skip(m, "(sssbs)(sssbs)(sssbs)(sssbs)(sssbs)"), 1);
        assert_int_equal(sd_bus_message_exit_container(m), 1);
        assert_int_equal(sd_bus_message_enter_container(m, 'a', "(sbs)"), 1);
        assert_int_equal(sd_bus_message_read(m, "(sbs)", &wall, &verified, &detail), 1);
        assert_true(verified);
        assert_int_equal(sd_bus_message_read(m, "(sbs)", &wall, &verified, &detail), 1);
        assert_true(verified);
        sd_bus_message_unref(m);
        close(peer);
        sd_bus_close_unref(bus);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_compare_private),
                cmocka_unit_test(test_compare_each_shared),
                cmocka_unit_test(test_compare_only_mask),
                cmocka_unit_test(test_id_parse_format),
                cmocka_unit_test(test_report_parse),
                cmocka_unit_test(test_verdicts),
                cmocka_unit_test(test_no_verdict),
                cmocka_unit_test(test_retry_delay),
                cmocka_unit_test_setup_teardown(test_gate_refuses_every_class, setup, teardown),
                cmocka_unit_test_setup_teardown(test_preflight_rows, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
