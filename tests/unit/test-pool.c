/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The warm pool's pure parts: its configuration, the job frame a waiting
 * sandbox reads, what a claim cannot serve, and the size memory allows. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "config.h"
#include "test-config.h"
#include "errors.h"
#include "pool-job.h"
#include "pool-plan.h"
#include "spec.h"
#include "worker-disk.h"

#define MiB (UINT64_C(1) << 20)

static void test_config(void **state) {
        SbxConfig c;
        SbxError e = {};

        /* On by default, small. */
        sbx_config_init_defaults(&c);
        assert_int_equal(c.pool_standard_size, 2);
        assert_int_equal(c.pool_untrusted_size, 2);
        assert_int_equal(pool_entry_memory(&c), 128 * MiB);
        sbx_config_done(&c);

        assert_int_equal(test_config_load("[Pool]\nStandardSize=3\nUntrustedSize=1\nMemoryMax=1G\nRefillPerSecond=5\n"
                              "MinMemAvailable=2G\nPressureMax=50\n", &c, &e), 0);
        assert_int_equal(pool_configured_size(&c, SBX_CLASS_STANDARD), 3);
        assert_int_equal(pool_configured_size(&c, SBX_CLASS_UNTRUSTED), 1);
        assert_int_equal(pool_configured_size(&c, SBX_CLASS_TRUSTED), 0);
        assert_int_equal(pool_configured_size(&c, SBX_CLASS_HOSTILE), 0);
        /* 3 + 1, each with and without egress: 8 shares. */
        assert_int_equal(pool_configured_total(&c), 8);
        assert_int_equal(pool_entry_memory(&c), 128 * MiB);
        assert_int_equal(c.pool_refill_per_second, 5);
        assert_int_equal(c.pool_min_mem_available, 2048 * MiB);
        assert_int_equal(c.pool_pressure_max, 50);
        sbx_config_done(&c);

        /* Off: no refill rate needed. */
        assert_int_equal(test_config_load("[Pool]\nStandardSize=0\nUntrustedSize=0\nRefillPerSecond=0\n", &c, &e), 0);
        assert_int_equal(pool_entry_memory(&c), 0);
        sbx_config_done(&c);

        e = (SbxError) {};
        assert_true(test_config_load("[Pool]\nRefillPerSecond=0\n", &c, &e) < 0);
        assert_string_equal(e.name, SBX_ERROR_LIMIT_OUT_OF_RANGE);
        sbx_config_done(&c);
        e = (SbxError) {};
        assert_true(test_config_load("[Pool]\nMemoryMax=32M\n", &c, &e) < 0);
        assert_non_null(strstr(e.message, "Pool:MemoryMax"));
        sbx_config_done(&c);
        e = (SbxError) {};
        assert_true(test_config_load("[Pool]\nStandardSize=65\n", &c, &e) < 0);
        sbx_config_done(&c);
        e = (SbxError) {};
        assert_true(test_config_load("[Pool]\nPressureMax=101\n", &c, &e) < 0);
        sbx_config_done(&c);
        e = (SbxError) {};
        assert_true(test_config_load("[Pool]\nSize=2\n", &c, &e) < 0);
        assert_non_null(strstr(e.message, "Unknown key"));
        sbx_config_done(&c);
}

static void test_job_roundtrip(void **state) {
        char *argv[] = { (char *) "/bin/sh", (char *) "-c", (char *) "echo $X", NULL };
        char *env[] = { (char *) "HOME=/var/lib/sandboxd/workers/0123456789ab", (char *) "X=multi\nline", NULL };
        uint8_t secret[] = { 's', 0, 'x', 0xff };
        SbxCredential creds[] = {
                { .name = (char *) "tok", .data = secret, .size = sizeof(secret) },
                { .name = (char *) "empty", .data = (uint8_t *) "", .size = 0 },
        };
        PoolJob job = { .argv = argv, .environment = env, .credentials = creds, .n_credentials = 2, .nproc = 40 };
        _cleanup_(pool_job_done) PoolJob out = {};
        uint8_t *frame = NULL;
        size_t size = 0, payload = 0;

        assert_int_equal(pool_job_encode(&job, &frame, &size), 0);
        assert_true(size > POOL_JOB_HEADER_SIZE);
        assert_memory_equal(frame, POOL_JOB_MAGIC, 8);
        assert_int_equal(pool_job_header_parse(frame, &payload), 0);
        assert_int_equal(payload, size - POOL_JOB_HEADER_SIZE);
        assert_int_equal(pool_job_decode(frame + POOL_JOB_HEADER_SIZE, payload, &out), 0);
        assert_int_equal(strv_length(out.argv), 3);
        assert_string_equal(out.argv[2], "echo $X");
        assert_int_equal(strv_length(out.environment), 2);
        assert_string_equal(out.environment[1], "X=multi\nline");
        assert_int_equal(out.n_credentials, 2);
        assert_string_equal(out.credentials[0].name, "tok");
        assert_int_equal(out.credentials[0].size, sizeof(secret));
        assert_memory_equal(out.credentials[0].data, secret, sizeof(secret));
        assert_int_equal(out.credentials[1].size, 0);
        assert_non_null(out.credentials[1].data);
        assert_int_equal(out.nproc, 40);
        erase_and_free(frame, size);
}

static void test_job_refused(void **state) {
        char *argv[] = { (char *) "/bin/true", NULL };
        char *rel[] = { (char *) "true", NULL };
        char *bad_env[] = { (char *) "NOEQUALS", NULL };
        SbxCredential dup[] = {
                { .name = (char *) "a", .data = (uint8_t *) "1", .size = 1 },
                { .name = (char *) "a", .data = (uint8_t *) "2", .size = 1 },
        };
        SbxCredential badname[] = { { .name = (char *) "../x", .data = (uint8_t *) "1", .size = 1 } };
        PoolJob cases[] = {
                { .argv = rel, .nproc = 1 },
                { .argv = argv, .nproc = 0 },
                { .argv = argv, .environment = bad_env, .nproc = 1 },
                { .argv = argv, .credentials = dup, .n_credentials = 2, .nproc = 1 },
                { .argv = argv, .credentials = badname, .n_credentials = 1, .nproc = 1 },
                { .nproc = 1 },
        };
        uint8_t header[POOL_JOB_HEADER_SIZE] = "SBXJOB1\n";
        size_t payload;

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_(pool_job_done) PoolJob out = {};
                uint8_t *frame = NULL;
                size_t size = 0;
                assert_int_equal(pool_job_encode(&cases[i], &frame, &size), 0);
                assert_int_equal(pool_job_decode(frame + POOL_JOB_HEADER_SIZE, size - POOL_JOB_HEADER_SIZE, &out),
                                 -EBADMSG);
                /* Cut anywhere, a frame is refused, never read past. */
                assert_int_equal(pool_job_decode(frame + POOL_JOB_HEADER_SIZE, size - POOL_JOB_HEADER_SIZE - 1, &out),
                                 -EBADMSG);
                erase_and_free(frame, size);
        }
        /* A string with a NUL inside, an unknown record, a bad magic, a size too large. */
        static const uint8_t nul[] = { 'a', 4, 0, 0, 0, '/', 'b', 0, 'c' };
        static const uint8_t unknown[] = { 'z', 0, 0, 0, 0 };
        _cleanup_(pool_job_done) PoolJob out = {};
        assert_int_equal(pool_job_decode(nul, sizeof(nul), &out), -EBADMSG);
        assert_int_equal(pool_job_decode(unknown, sizeof(unknown), &out), -EBADMSG);
        header[8] = 0xff;
        header[9] = 0xff;
        header[10] = 0xff;
        assert_int_equal(pool_job_header_parse(header, &payload), -EBADMSG);
        memcpy(header, "SBXJOB2\n", 8);
        header[8] = header[9] = header[10] = 0;
        assert_int_equal(pool_job_header_parse(header, &payload), -EBADMSG);
}

static void test_job_too_large(void **state) {
        char *argv[] = { (char *) "/bin/true", NULL };
        size_t big = POOL_JOB_SIZE_MAX;
        uint8_t *data = calloc(1, big);
        SbxCredential c = { .name = (char *) "big", .data = data, .size = big };
        PoolJob job = { .argv = argv, .credentials = &c, .n_credentials = 1, .nproc = 1 };
        uint8_t *frame = NULL;
        size_t size = 0;

        assert_non_null(data);
        assert_int_equal(pool_job_encode(&job, &frame, &size), -E2BIG);
        assert_null(frame);
        free(data);
}

static void test_claim_refusal(void **state) {
        WorkerSpec s;

        worker_spec_init(&s);
        s.class = SBX_CLASS_STANDARD;
        assert_null(pool_claim_refusal(&s));
        s.set |= SPEC_HAS_DISK_MAX;
        assert_non_null(strstr(pool_claim_refusal(&s), "DiskMax"));
        s.set = 0;
        s.n_services = 1;
        assert_non_null(strstr(pool_claim_refusal(&s), "Services"));
        s.n_services = 0;
        s.workspace = (char *) "proj";
        assert_non_null(strstr(pool_claim_refusal(&s), "Workspace"));
        s.workspace = NULL;
        worker_spec_done(&s);
}

/* A claim moves the waiting sandbox's disk, counted already, to the worker:
 * at Disk:TotalMax, with every byte held by the pool, a claim of a spec
 * with the default disk adds nothing, so it is not refused; a larger disk
 * (never served today, pool_claim_refusal) would add the difference. */
static void test_claim_disk_added(void **state) {
        SbxConfig c;
        WorkerSpec s;
        SbxError e = {};

        sbx_config_init_defaults(&c);
        c.disk_total_max = 2 * c.disk_default;
        worker_spec_init(&s);
        s.class = SBX_CLASS_STANDARD;
        worker_spec_apply_defaults(&s, &c);
        assert_int_equal(s.disk_max, c.disk_default);
        /* Two waiting sandboxes hold the whole total: a new disk of the
         * default size no longer fits (a cold start is refused)... */
        assert_true(worker_disk_admit(&c, 2 * c.disk_default, 0, s.disk_max, UINT64_MAX / 2, &e) < 0);
        assert_string_equal(e.name, SBX_ERROR_LIMIT_OUT_OF_RANGE);
        /* ...but claiming one of them adds nothing to admit. */
        assert_int_equal(pool_claim_disk_added(&c, &s), 0);
        s.disk_max = c.disk_default + 4 * MiB;
        assert_int_equal(pool_claim_disk_added(&c, &s), 4 * MiB);
        s.disk_max = c.disk_default / 2;
        assert_int_equal(pool_claim_disk_added(&c, &s), 0);
        worker_spec_done(&s);
        sbx_config_done(&c);
}

static void test_plan(void **state) {
        SbxConfig c;
        PoolMemoryFacts f = {};

        sbx_config_init_defaults(&c);   /* (2 + 2) x 2 kinds, 128M each, keep 512M available, PSI 20% */
        /* Nothing known: the configured size. */
        assert_int_equal(pool_plan_total(&c, 0, &f), 8);
        /* Plenty of memory. */
        f = (PoolMemoryFacts) { .avail_known = true, .mem_available = 8192 * MiB, .pressure_known = true };
        assert_int_equal(pool_plan_total(&c, 0, &f), 8);
        /* Room for two more shares above the floor. */
        f.mem_available = 512 * MiB + 2 * 128 * MiB + 1;
        assert_int_equal(pool_plan_total(&c, 0, &f), 2);
        assert_int_equal(pool_plan_total(&c, 1, &f), 3);
        /* Below the floor by one share and a bit: two fewer than wait now. */
        f.mem_available = 512 * MiB - 128 * MiB - 1;
        assert_int_equal(pool_plan_total(&c, 4, &f), 2);
        assert_int_equal(pool_plan_total(&c, 1, &f), 0);
        /* Pressure empties it, whatever the memory. */
        f.mem_available = 8192 * MiB;
        f.some_avg10 = 20;
        assert_int_equal(pool_plan_total(&c, 4, &f), 0);
        f.some_avg10 = 19;
        assert_int_equal(pool_plan_total(&c, 4, &f), 8);
        c.pool_pressure_max = 0;
        f.some_avg10 = 100;
        assert_int_equal(pool_plan_total(&c, 4, &f), 8);
        /* Off. */
        c.pool_standard_size = c.pool_untrusted_size = 0;
        assert_int_equal(pool_plan_total(&c, 0, &f), 0);
        sbx_config_done(&c);
}

static void test_backoff(void **state) {
        const uint64_t pace = 500000;   /* RefillPerSecond=2 */

        assert_int_equal(pool_plan_backoff(pace, 0), pace);
        assert_int_equal(pool_plan_backoff(pace, 1), 2 * pace);
        assert_int_equal(pool_plan_backoff(pace, 3), 8 * pace);
        /* 0.5 s << 7 is 64 s: the cap. */
        assert_int_equal(pool_plan_backoff(pace, 7), POOL_BACKOFF_MAX_USEC);
        assert_int_equal(pool_plan_backoff(pace, 1000), POOL_BACKOFF_MAX_USEC);
        assert_int_equal(pool_plan_backoff(UINT64_MAX / 2, 5), POOL_BACKOFF_MAX_USEC);
        assert_int_equal(pool_plan_backoff(0, 5), 0);
}

static void test_memory_facts(void **state) {
        char meminfo[] = "/tmp/sandboxd-test-meminfo-XXXXXX", psi[] = "/tmp/sandboxd-test-psi-XXXXXX";
        const char *mi = "MemTotal:       24000000 kB\nMemFree:  100 kB\nMemAvailable:    2097152 kB\n";
        const char *ps = "some avg10=12.50 avg60=3.00 avg300=1.00 total=123\nfull avg10=1.00 avg60=0.00 avg300=0.00 total=1\n";
        PoolMemoryFacts f;
        int fd;

        fd = mkstemp(meminfo);
        assert_int_equal(write(fd, mi, strlen(mi)), (ssize_t) strlen(mi));
        close(fd);
        fd = mkstemp(psi);
        assert_int_equal(write(fd, ps, strlen(ps)), (ssize_t) strlen(ps));
        close(fd);
        pool_memory_facts_read(meminfo, psi, &f);
        assert_true(f.avail_known);
        assert_int_equal(f.mem_available, UINT64_C(2097152) * 1024);
        assert_true(f.pressure_known);
        assert_int_equal(f.some_avg10, 12);
        pool_memory_facts_read("/nonexistent/meminfo", "/nonexistent/psi", &f);
        assert_false(f.avail_known);
        assert_false(f.pressure_known);
        unlink(meminfo);
        unlink(psi);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_config),
                cmocka_unit_test(test_job_roundtrip),
                cmocka_unit_test(test_job_refused),
                cmocka_unit_test(test_job_too_large),
                cmocka_unit_test(test_claim_refusal),
                cmocka_unit_test(test_claim_disk_added),
                cmocka_unit_test(test_plan),
                cmocka_unit_test(test_backoff),
                cmocka_unit_test(test_memory_facts),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
