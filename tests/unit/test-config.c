/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "config.h"
#include "errors.h"

static char *write_conf(const char *text) {
        char *path = strdup("/tmp/sandboxd-test-conf-XXXXXX");
        int fd = mkstemp(path);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, text, strlen(text)), (ssize_t) strlen(text));
        close(fd);
        return path;
}

static int load(const char *text, SbxConfig *c, SbxError *e) {
        _cleanup_free_ char *path = write_conf(text);
        int r;
        sbx_config_init_defaults(c);
        r = sbx_config_load(c, path, e);
        unlink(path);
        return r;
}

static void test_missing_file_keeps_defaults(void **state) {
        SbxConfig c;
        SbxError e = {};
        sbx_config_init_defaults(&c);
        assert_int_equal(sbx_config_load(&c, "/nonexistent/sandboxd.conf", &e), 0);
        assert_int_equal(c.defaults.memory_max, 256u << 20);
        assert_int_equal(c.defaults.idle_timeout_usec, 600 * USEC_PER_SEC);
        assert_false(c.allow_shared_kernel_for_standard);
        assert_true(c.egress_require_tls);
        assert_int_equal(c.suspend_image_max, UINT64_C(1) << 30);
        /* A reboot loses suspended workers unless the operator says otherwise. */
        assert_false(c.suspend_keep_across_reboot);
        assert_int_equal(c.checkpoint_extra_memory, UINT64_C(1) << 30);
        assert_int_equal(c.runsc_timer_slack_usec, 20 * USEC_PER_MSEC);
        sbx_config_done(&c);
}

static void test_values(void **state) {
        SbxConfig c;
        SbxError e = {};
        assert_int_equal(load("[Defaults]\nMemoryMax=512M\nTasksMax=100\nCPUQuotaPercent=150\n"
                              "IdleTimeoutSec=5min\nRuntimeMaxSec=2h\nClass=untrusted\n"
                              "[Limits]\nMaxWorkers=7\nEndedWorkersMax=9\nEndedWorkersMaxAgeSec=10min\nSuspendImageMax=3G\n"
                              "[Suspend]\nKeepAcrossReboot=yes\nCheckpointExtraMemory=0\n"
                              "[Isolation]\nAllowSharedKernelForStandard=yes\nRunscPlatform=ptrace\nRunscTimerSlackSec=5ms\n"
                              "[Egress]\nFloor=*.github.com github.com\nRateBps=1M\nRequireTLS=no\n", &c, &e), 0);
        assert_int_equal(c.defaults.memory_max, 512u << 20);
        assert_int_equal(c.defaults.tasks_max, 100);
        assert_int_equal(c.defaults.cpu_quota_percent, 150);
        assert_int_equal(c.defaults.idle_timeout_usec, 300 * USEC_PER_SEC);
        assert_int_equal(c.defaults.runtime_max_usec, 7200 * USEC_PER_SEC);
        assert_int_equal(c.default_class, SBX_CLASS_UNTRUSTED);
        assert_int_equal(c.max_workers, 7);
        assert_int_equal(c.ended_workers_max, 9);
        assert_int_equal(c.ended_workers_max_age_usec, 600 * USEC_PER_SEC);
        assert_int_equal(c.suspend_image_max, UINT64_C(3) << 30);
        assert_true(c.suspend_keep_across_reboot);
        assert_int_equal(c.checkpoint_extra_memory, 0);
        assert_true(c.allow_shared_kernel_for_standard);
        assert_string_equal(c.runsc_platform, "ptrace");
        assert_int_equal(c.runsc_timer_slack_usec, 5 * USEC_PER_MSEC);
        assert_int_equal(strv_length(c.egress_floor), 2);
        assert_string_equal(c.egress_floor[0], "*.github.com");
        assert_string_equal(c.egress_floor[1], "github.com");
        assert_int_equal(c.egress_rate_bps, 1u << 20);
        assert_false(c.egress_require_tls);
        sbx_config_done(&c);
}

static void test_broker_ca_file(void **state) {
        SbxConfig c;
        SbxError e = {};

        sbx_config_init_defaults(&c);
        assert_null(c.egress_broker_ca_file);
        sbx_config_done(&c);
        assert_int_equal(load("[Egress]\nBrokerCAFile=/etc/sandboxd/broker-ca.pem\n", &c, &e), 0);
        assert_string_equal(c.egress_broker_ca_file, "/etc/sandboxd/broker-ca.pem");
        sbx_config_done(&c);
        /* Empty: back to the system trust store. */
        assert_int_equal(load("[Egress]\nBrokerCAFile=\n", &c, &e), 0);
        assert_null(c.egress_broker_ca_file);
        sbx_config_done(&c);
        assert_true(load("[Egress]\nBrokerCAFile=broker-ca.pem\n", &c, &e) < 0);
        assert_string_equal(e.name, SBX_ERROR_INVALID_SPEC);
        assert_non_null(strstr(e.message, "Egress:BrokerCAFile"));
        sbx_config_done(&c);
}

static void test_errors(void **state) {
        SbxConfig c;
        SbxError e = {};
        assert_true(load("[Defaults]\nMemoryMax=lots\n", &c, &e) < 0);
        assert_non_null(strstr(e.message, "Defaults:MemoryMax"));
        sbx_config_done(&c);
        e = (SbxError) {};
        assert_true(load("[Defaults]\nBogus=1\n", &c, &e) < 0);
        assert_non_null(strstr(e.message, "Unknown key"));
        sbx_config_done(&c);
        e = (SbxError) {};
        assert_true(load("[Defaults]\nClass=superduper\n", &c, &e) < 0);
        sbx_config_done(&c);
        e = (SbxError) {};
        assert_true(load("[Defaults]\nTasksMax=100000\n", &c, &e) < 0);
        assert_string_equal(e.name, SBX_ERROR_LIMIT_OUT_OF_RANGE);
        sbx_config_done(&c);
        e = (SbxError) {};
        assert_true(load("[Limits]\nMaxWorkers=0\n", &c, &e) < 0);
        sbx_config_done(&c);
        e = (SbxError) {};
        assert_true(load("[Limits]\nSuspendImageMax=0\n", &c, &e) < 0);
        assert_non_null(strstr(e.message, "SuspendImageMax"));
        sbx_config_done(&c);
        e = (SbxError) {};
        assert_true(load("[Isolation]\nAllowSharedKernelForStandard=maybe\n", &c, &e) < 0);
        sbx_config_done(&c);
        e = (SbxError) {};
        assert_true(load("[Isolation]\nRunscTimerSlackSec=2s\n", &c, &e) < 0);
        assert_string_equal(e.name, SBX_ERROR_LIMIT_OUT_OF_RANGE);
        assert_non_null(strstr(e.message, "RunscTimerSlackSec"));
        sbx_config_done(&c);
        e = (SbxError) {};
        assert_int_equal(load("[Isolation]\nRunscTimerSlackSec=0\n", &c, &e), 0);
        assert_int_equal(c.runsc_timer_slack_usec, 0);
        sbx_config_done(&c);
}

static void test_syscall_names(void **state) {
        SbxConfig c;
        SbxError e = {};
        assert_int_equal(load("[Isolation]\nSystemCallAllow=personality io_uring_setup\n", &c, &e), 0);
        assert_int_equal(strv_length(c.syscall_allow), 2);
        sbx_config_done(&c);
        e = (SbxError) {};
        assert_true(load("[Isolation]\nSystemCallAllow=read not_a_syscall\n", &c, &e) < 0);
        assert_non_null(strstr(e.message, "not_a_syscall"));
        sbx_config_done(&c);
}

static void test_parsers(void **state) {
        uint64_t v;
        assert_int_equal(parse_size("4096", &v), 0);
        assert_int_equal(v, 4096);
        assert_int_equal(parse_size("2G", &v), 0);
        assert_int_equal(v, UINT64_C(2) << 30);
        assert_int_equal(parse_size("1KiB", &v), 0);
        assert_int_equal(v, 1024);
        assert_true(parse_size("-1", &v) < 0);
        assert_true(parse_size("1X", &v) < 0);
        assert_true(parse_size("", &v) < 0);
        assert_true(parse_size("99999999999999T", &v) < 0);
        assert_int_equal(parse_duration_usec("90", &v), 0);
        assert_int_equal(v, 90 * USEC_PER_SEC);
        assert_int_equal(parse_duration_usec("500ms", &v), 0);
        assert_int_equal(v, 500 * USEC_PER_MSEC);
        assert_int_equal(parse_duration_usec("2h", &v), 0);
        assert_int_equal(v, 7200 * USEC_PER_SEC);
        assert_true(parse_duration_usec("soon", &v) < 0);
        assert_int_equal(parse_boolean("Yes"), 1);
        assert_int_equal(parse_boolean("off"), 0);
        assert_true(parse_boolean("2") < 0);
}

/* The disk cap cannot be turned off, and its bounds must nest:
 * Defaults <= Limits <= Disk:TotalMax. */
static void test_disk(void **state) {
        SbxConfig c;
        SbxError e = {};

        sbx_config_init_defaults(&c);
        assert_int_equal(c.disk_default, UINT64_C(1) << 30);
        assert_int_equal(c.disk_limit, UINT64_C(16) << 30);
        assert_int_equal(c.disk_total_max, UINT64_C(64) << 30);
        assert_int_equal(c.disk_keep_free, UINT64_C(2) << 30);
        sbx_config_done(&c);
        assert_int_equal(load("[Defaults]\nDiskMax=64M\n[Limits]\nDiskMax=512M\n[Disk]\nTotalMax=1G\nKeepFree=100M\n",
                              &c, &e), 0);
        assert_int_equal(c.disk_default, UINT64_C(64) << 20);
        assert_int_equal(c.disk_limit, UINT64_C(512) << 20);
        assert_int_equal(c.disk_total_max, UINT64_C(1) << 30);
        assert_int_equal(c.disk_keep_free, UINT64_C(100) << 20);
        sbx_config_done(&c);
        assert_true(load("[Defaults]\nDiskMax=0\n", &c, &e) < 0);
        assert_string_equal(e.name, SBX_ERROR_LIMIT_OUT_OF_RANGE);
        assert_non_null(strstr(e.message, "every worker's disk is capped"));
        sbx_config_done(&c);
        assert_true(load("[Defaults]\nDiskMax=32G\n", &c, &e) < 0);
        assert_non_null(strstr(e.message, "Defaults:DiskMax exceeds Limits:DiskMax"));
        sbx_config_done(&c);
        assert_true(load("[Limits]\nDiskMax=128G\n", &c, &e) < 0);
        assert_non_null(strstr(e.message, "Disk:TotalMax"));
        sbx_config_done(&c);
        assert_true(load("[Disk]\nTotalMax=lots\n", &c, &e) < 0);
        assert_non_null(strstr(e.message, "Disk:TotalMax"));
        sbx_config_done(&c);
}

/* The caps on workspace creations under way: read from [Bus], each
 * positive, the per-user one within the total, the total bounded. */
static void test_workspace_creations(void **state) {
        SbxConfig c;
        SbxError e = {};

        sbx_config_init_defaults(&c);
        assert_int_equal(c.bus_workspace_creations_per_user, 2);
        assert_int_equal(c.bus_workspace_creations_max, 4);
        sbx_config_done(&c);
        assert_int_equal(load("[Bus]\nWorkspaceCreationsPerUser=3\nWorkspaceCreationsMax=8\n", &c, &e), 0);
        assert_int_equal(c.bus_workspace_creations_per_user, 3);
        assert_int_equal(c.bus_workspace_creations_max, 8);
        sbx_config_done(&c);
        static const char * const bad[] = {
                "[Bus]\nWorkspaceCreationsPerUser=0\n",
                "[Bus]\nWorkspaceCreationsPerUser=5\n",
                "[Bus]\nWorkspaceCreationsMax=65\n",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                e = (SbxError) {};
                assert_true(load(bad[i], &c, &e) < 0);
                assert_string_equal(e.name, SBX_ERROR_LIMIT_OUT_OF_RANGE);
                assert_non_null(strstr(e.message, "Bus:WorkspaceCreationsPerUser"));
                sbx_config_done(&c);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_missing_file_keeps_defaults),
                cmocka_unit_test(test_values),
                cmocka_unit_test(test_errors),
                cmocka_unit_test(test_broker_ca_file),
                cmocka_unit_test(test_syscall_names),
                cmocka_unit_test(test_parsers),
                cmocka_unit_test(test_disk),
                cmocka_unit_test(test_workspace_creations),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
