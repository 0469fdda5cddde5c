/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The cgroup counters of a worker on both layouts: the parsers on the
 * files' own text, and the reader on fixture trees copied from what v1
 * (hybrid, the test bed's systemd 252) and v2 hosts show. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cgroup-stats.h"

#ifndef CGROUP_FIXTURES
#error "CGROUP_FIXTURES must name tests/unit/fixtures/cgroup"
#endif

static void test_parse_u64(void **state) {
        uint64_t v = 7;
        assert_int_equal(cgroup_parse_u64("1234\n", &v), 0);
        assert_int_equal(v, 1234);
        assert_int_equal(cgroup_parse_u64("0", &v), 0);
        assert_int_equal(v, 0);
        assert_int_equal(cgroup_parse_u64("18446744073709551615\n", &v), 0);
        assert_true(v == UINT64_MAX);
        v = 7;
        assert_int_equal(cgroup_parse_u64("18446744073709551616\n", &v), -EINVAL);
        assert_int_equal(cgroup_parse_u64("max\n", &v), -EINVAL);
        assert_int_equal(cgroup_parse_u64("", &v), -EINVAL);
        assert_int_equal(cgroup_parse_u64("12 34\n", &v), -EINVAL);
        assert_int_equal(cgroup_parse_u64("12\n\n", &v), -EINVAL);
        assert_int_equal(v, 7);
}

static void test_parse_keyed(void **state) {
        uint64_t v = 0;
        const char *cpu = "usage_usec 1234567\nuser_usec 1000000\nsystem_usec 234567\n";
        assert_int_equal(cgroup_parse_keyed(cpu, "usage_usec", &v), 0);
        assert_int_equal(v, 1234567);
        assert_int_equal(cgroup_parse_keyed(cpu, "system_usec", &v), 0);
        assert_int_equal(v, 234567);
        /* A key is a whole word: "oom" is not "oom_kill". */
        const char *events = "low 0\nhigh 0\nmax 5\noom 1\noom_kill 3\noom_group_kill 0\n";
        assert_int_equal(cgroup_parse_keyed(events, "oom_kill", &v), 0);
        assert_int_equal(v, 3);
        assert_int_equal(cgroup_parse_keyed(events, "oom", &v), 0);
        assert_int_equal(v, 1);
        assert_int_equal(cgroup_parse_keyed("oom_kill_disable 0\nunder_oom 0\n", "oom_kill", &v), -EINVAL);
        assert_int_equal(cgroup_parse_keyed("oom_kill x\n", "oom_kill", &v), -EINVAL);
        assert_int_equal(cgroup_parse_keyed("", "oom_kill", &v), -EINVAL);
}

static void test_parse_io_stat(void **state) {
        uint64_t r = 1, w = 1;
        assert_int_equal(cgroup_parse_io_stat("8:0 rbytes=4096 wbytes=8192 rios=1 wios=2 dbytes=0 dios=0\n"
                                              "8:16 rbytes=100 wbytes=0 rios=1 wios=0 dbytes=0 dios=0\n", &r, &w), 0);
        assert_int_equal(r, 4196);
        assert_int_equal(w, 8192);
        assert_int_equal(cgroup_parse_io_stat("", &r, &w), 0);
        assert_int_equal(r, 0);
        assert_int_equal(w, 0);
        /* wbytes= last on the line, no newline at the end */
        assert_int_equal(cgroup_parse_io_stat("259:0 rios=1 rbytes=5 wbytes=6", &r, &w), 0);
        assert_int_equal(r, 5);
        assert_int_equal(w, 6);
        assert_int_equal(cgroup_parse_io_stat("8:0 rbytes=x wbytes=1\n", &r, &w), -EINVAL);
        assert_int_equal(cgroup_parse_io_stat("8:0 rbytes=18446744073709551615\n8:1 rbytes=1\n", &r, &w), -EINVAL);
}

static void test_parse_blkio(void **state) {
        uint64_t r = 1, w = 1;
        const char *text = "8:0 Read 4096\n8:0 Write 8192\n8:0 Sync 12288\n8:0 Async 0\n8:0 Discard 0\n"
                           "8:0 Total 12288\n8:16 Read 100\n8:16 Write 0\n8:16 Total 100\nTotal 12388\n";
        assert_int_equal(cgroup_parse_blkio_bytes(text, &r, &w), 0);
        assert_int_equal(r, 4196);
        assert_int_equal(w, 8192);
        /* A cgroup that did no IO has only the total. */
        assert_int_equal(cgroup_parse_blkio_bytes("Total 0\n", &r, &w), 0);
        assert_int_equal(r, 0);
        assert_int_equal(w, 0);
        assert_int_equal(cgroup_parse_blkio_bytes("", &r, &w), 0);
}

static void test_read_v1(void **state) {
        CgroupStats s;
        assert_int_equal(cgroup_stats_read(CGROUP_FIXTURES "/v1", "sandbox.slice/sandbox-a.service", &s), 0);
        assert_int_equal(s.cpu_usage_nsec, 1234567890);
        assert_int_equal(s.memory_current, 5242880);
        assert_int_equal(s.memory_peak, 8388608);
        assert_int_equal(s.tasks_current, 3);
        assert_int_equal(s.io_read_bytes, 4196);
        assert_int_equal(s.io_write_bytes, 8192);
        /* oom_kill, not failcnt (7), which counts hits of the limit */
        assert_int_equal(s.oom_kills, 2);

        /* A kernel before oom_kill, no blkio or pids for it: unknown, not 0;
         * no cpuacct cgroup (v1 controllers not delegated): the hybrid's
         * unified cpu.stat has the time. */
        assert_int_equal(cgroup_stats_read(CGROUP_FIXTURES "/v1", "sandbox.slice/sandbox-old.service", &s), 0);
        assert_int_equal(s.memory_current, 4096);
        assert_int_equal(s.memory_peak, 8192);
        assert_true(s.oom_kills == CGROUP_STAT_UNKNOWN);
        assert_int_equal(s.cpu_usage_nsec, 4242000);
        assert_true(s.tasks_current == CGROUP_STAT_UNKNOWN);
        assert_true(s.io_read_bytes == CGROUP_STAT_UNKNOWN);
        assert_true(s.io_write_bytes == CGROUP_STAT_UNKNOWN);

        assert_int_equal(cgroup_stats_read(CGROUP_FIXTURES "/v1", "sandbox.slice/sandbox-gone.service", &s), -ENOENT);
}

static void test_read_v2(void **state) {
        CgroupStats s;
        assert_int_equal(cgroup_stats_read(CGROUP_FIXTURES "/v2", "sandbox.slice/sandbox-a.service", &s), 0);
        assert_int_equal(s.cpu_usage_nsec, 1234567000);
        assert_int_equal(s.memory_current, 5242880);
        assert_int_equal(s.memory_peak, 8388608);
        assert_int_equal(s.tasks_current, 3);
        assert_int_equal(s.io_read_bytes, 4196);
        assert_int_equal(s.io_write_bytes, 8192);
        assert_int_equal(s.oom_kills, 1);

        /* Before Linux 5.19 there is no memory.peak; no io controller, no io.stat. */
        assert_int_equal(cgroup_stats_read(CGROUP_FIXTURES "/v2", "sandbox.slice/sandbox-old.service", &s), 0);
        assert_int_equal(s.cpu_usage_nsec, 10000);
        assert_true(s.memory_peak == CGROUP_STAT_UNKNOWN);
        assert_true(s.io_read_bytes == CGROUP_STAT_UNKNOWN);
        assert_int_equal(s.oom_kills, 0);

        assert_int_equal(cgroup_stats_read(CGROUP_FIXTURES "/v2", "sandbox.slice/sandbox-gone.service", &s), -ENOENT);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse_u64),
                cmocka_unit_test(test_parse_keyed),
                cmocka_unit_test(test_parse_io_stat),
                cmocka_unit_test(test_parse_blkio),
                cmocka_unit_test(test_read_v1),
                cmocka_unit_test(test_read_v2),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
