/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Size, duration, number and boolean parsing shared by sandboxd.conf,
 * sandbox-launch and sandboxctl. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "parse-util.h"
#include "util.h"

static void assert_size(const char *s, uint64_t expected) {
        uint64_t v = 0;
        int r = parse_size(s, &v);
        if (r != 0)
                fail_msg("parse_size(\"%s\") = %d", s, r);
        assert_int_equal(v, expected);
}

static void assert_size_error(const char *s, int expected) {
        uint64_t v = 0xdead;
        int r = parse_size(s, &v);
        if (r != expected)
                fail_msg("parse_size(\"%s\") = %d, expected %d", s, r, expected);
        assert_int_equal(v, 0xdead);
}

static void test_size_valid(void **state) {
        assert_size("0", 0);
        assert_size("512", 512);
        assert_size("10B", 10);
        assert_size("1K", 1024);
        assert_size("1k", 1024);
        assert_size("1KiB", 1024);
        assert_size("1KB", 1024);
        assert_size("64M", 64ULL << 20);
        assert_size("256MiB", 256ULL << 20);
        assert_size("1.5G", 3ULL << 29);
        assert_size("0.5K", 512);
        assert_size("2T", 2ULL << 40);
        assert_size("18446744073709551615", UINT64_MAX);
        assert_size("16777215T", 16777215ULL << 40);
}

static void test_size_invalid(void **state) {
        assert_size_error(NULL, -EINVAL);
        assert_size_error("", -EINVAL);
        assert_size_error("K", -EINVAL);
        assert_size_error("-1", -EINVAL);
        assert_size_error("+1", -EINVAL);
        assert_size_error(" 1", -EINVAL);
        assert_size_error("1 ", -EINVAL);
        assert_size_error("1X", -EINVAL);
        assert_size_error("1KK", -EINVAL);
        assert_size_error("1Ki", -EINVAL);
        assert_size_error("1.K", -EINVAL);
        assert_size_error(".5K", -EINVAL);
        assert_size_error("1.2.3", -EINVAL);
        assert_size_error("1P", -EINVAL);
        assert_size_error("18446744073709551616", -ERANGE);
        assert_size_error("16777216T", -ERANGE);
        assert_size_error("99999999999999999999999G", -ERANGE);
}

static void assert_duration(const char *s, uint64_t expected) {
        uint64_t v = 0;
        int r = parse_duration_usec(s, &v);
        if (r != 0)
                fail_msg("parse_duration_usec(\"%s\") = %d", s, r);
        assert_int_equal(v, expected);
}

static void assert_duration_error(const char *s, int expected) {
        uint64_t v = 0xdead;
        int r = parse_duration_usec(s, &v);
        if (r != expected)
                fail_msg("parse_duration_usec(\"%s\") = %d, expected %d", s, r, expected);
        assert_int_equal(v, 0xdead);
}

static void test_duration_valid(void **state) {
        const uint64_t S = USEC_PER_SEC;

        assert_duration("0", 0);
        assert_duration("30", 30 * S);
        assert_duration("30s", 30 * S);
        assert_duration("30sec", 30 * S);
        assert_duration("5min", 300 * S);
        assert_duration("5m", 300 * S);
        assert_duration("1h", 3600 * S);
        assert_duration("1h30min", 5400 * S);
        assert_duration("1h 30min", 5400 * S);
        assert_duration("2 hours", 7200 * S);
        assert_duration("250ms", 250 * USEC_PER_MSEC);
        assert_duration("1.5s", 1500 * USEC_PER_MSEC);
        assert_duration("1.5", 1500 * USEC_PER_MSEC);
        assert_duration("2d", 2 * 86400 * S);
        assert_duration("1w", 7 * 86400 * S);
        assert_duration("100us", 100);
        /* A bare number after a unit still means seconds. */
        assert_duration("1min30", 90 * S);
}

static void test_duration_invalid(void **state) {
        assert_duration_error(NULL, -EINVAL);
        assert_duration_error("", -EINVAL);
        assert_duration_error("   ", -EINVAL);
        assert_duration_error("abc", -EINVAL);
        assert_duration_error("min", -EINVAL);
        assert_duration_error("-5", -EINVAL);
        assert_duration_error("5 parsecs", -EINVAL);
        assert_duration_error("5mins", -EINVAL);
        assert_duration_error("1.5.5", -EINVAL);
        assert_duration_error("5s-", -EINVAL);
        assert_duration_error("99999999999999999w", -ERANGE);
        assert_duration_error("18446744073709551615s", -ERANGE);
        assert_duration_error("18446744073709551615us 1us", -ERANGE);
}

static void test_uint64(void **state) {
        uint64_t v = 0;

        assert_int_equal(parse_uint64("0", &v), 0);
        assert_int_equal(v, 0);
        assert_int_equal(parse_uint64("4096", &v), 0);
        assert_int_equal(v, 4096);
        assert_int_equal(parse_uint64("18446744073709551615", &v), 0);
        assert_int_equal(v, UINT64_MAX);
        assert_int_equal(parse_uint64("18446744073709551616", &v), -ERANGE);
        assert_int_equal(parse_uint64("", &v), -EINVAL);
        assert_int_equal(parse_uint64("12a", &v), -EINVAL);
        assert_int_equal(parse_uint64("-1", &v), -EINVAL);
        assert_int_equal(parse_uint64("+1", &v), -EINVAL);
        assert_int_equal(parse_uint64("1K", &v), -EINVAL);
        assert_int_equal(parse_uint64(NULL, &v), -EINVAL);
}

/* A directory not made yet is on its nearest existing ancestor's file
 * system: the disk admission measures free space there. */
static void test_stat_nearest(void **state) {
        struct stat st, tmp;
        struct statvfs vfs;

        assert_int_equal(stat("/tmp", &tmp), 0);
        assert_int_equal(stat_nearest("/tmp/sbx-not-made-yet/a/b", &st), 0);
        assert_true(st.st_dev == tmp.st_dev && st.st_ino == tmp.st_ino);
        assert_int_equal(statvfs_nearest("/tmp/sbx-not-made-yet/a", &vfs), 0);
        assert_int_equal(stat_nearest("/", &st), 0);
        /* Only ENOENT climbs: a path through a file is ENOTDIR. */
        char file[] = "/tmp/sbx-stat-nearest-XXXXXX", below[64];
        int fd = mkstemp(file);
        assert_true(fd >= 0);
        close(fd);
        snprintf(below, sizeof(below), "%s/x/y", file);
        assert_int_equal(stat_nearest(below, &st), -ENOTDIR);
        unlink(file);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_size_valid),
                cmocka_unit_test(test_size_invalid),
                cmocka_unit_test(test_duration_valid),
                cmocka_unit_test(test_duration_invalid),
                cmocka_unit_test(test_uint64),
                cmocka_unit_test(test_stat_nearest),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
