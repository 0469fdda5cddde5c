/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <unistd.h>

#include "config.h"
#include "errors.h"
#include "quota.h"

#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)

static SbxQuotaConfig small(void) {
        SbxQuotaConfig q;
        quota_config_init_defaults(&q);
        q.workers_per_owner = 2;
        q.workspaces_per_owner = 3;
        q.workspace_bytes_per_owner = 100 * MiB;
        q.checkpoint_bytes_per_owner = 1 * GiB;
        q.checkpoint_bytes_total = 2 * GiB;
        q.reserve_bytes = 1 * GiB;
        return q;
}

static void assert_refused(int r, const SbxError *e, const char *name, const char *fragment) {
        assert_true(r < 0);
        assert_string_equal(e->name, name);
        assert_non_null(strstr(e->message, fragment));
}

/* Each limit refuses the request that would pass it, and only that one. */
static void test_owner_limits(void **state) {
        SbxQuotaConfig q = small();
        QuotaUsage u = { .workers = 1, .workspaces = 2, .workspace_bytes = 60 * MiB, .checkpoint_bytes = 0 };
        SbxError e = {};

        assert_int_equal(quota_check_owner(&q, 1000, &u, &(QuotaRequest) { .workers = 1 }, &e), 0);
        u.workers = 2;
        assert_refused(quota_check_owner(&q, 1000, &u, &(QuotaRequest) { .workers = 1 }, &e), &e,
                       SBX_ERROR_QUOTA_EXCEEDED, "WorkersPerOwner=2");
        /* A request for something else is not refused for the workers it holds. */
        assert_int_equal(quota_check_owner(&q, 1000, &u, &(QuotaRequest) { .workspaces = 1,
                                                                           .workspace_bytes = 40 * MiB }, &e), 0);
        assert_refused(quota_check_owner(&q, 1000, &u, &(QuotaRequest) { .workspaces = 1,
                                                                         .workspace_bytes = 40 * MiB + 1 }, &e),
                       &e, SBX_ERROR_QUOTA_EXCEEDED, "WorkspaceBytesPerOwner=100 MiB");
        u.workspaces = 3;
        assert_refused(quota_check_owner(&q, 1000, &u, &(QuotaRequest) { .workspaces = 1,
                                                                         .workspace_bytes = MiB }, &e),
                       &e, SBX_ERROR_QUOTA_EXCEEDED, "WorkspacesPerOwner=3");
        u.checkpoint_bytes = GiB - MiB;
        assert_int_equal(quota_check_owner(&q, 1000, &u, &(QuotaRequest) { .checkpoint_bytes = MiB }, &e), 0);
        assert_refused(quota_check_owner(&q, 1000, &u, &(QuotaRequest) { .checkpoint_bytes = MiB + 1 }, &e), &e,
                       SBX_ERROR_QUOTA_EXCEEDED, "CheckpointBytesPerOwner");
        /* The message names the owner. */
        assert_non_null(strstr(e.message, "UID 1000"));
}

/* 0 is no limit; usage already above a lowered limit is refused, not wrapped. */
static void test_unlimited_and_above(void **state) {
        SbxQuotaConfig q = small();
        QuotaUsage u = { .workers = 5, .workspace_bytes = UINT64_MAX - 1 };
        SbxError e = {};

        assert_true(quota_check_owner(&q, 7, &u, &(QuotaRequest) { .workers = 1 }, &e) < 0);
        q.workers_per_owner = 0;
        assert_int_equal(quota_check_owner(&q, 7, &u, &(QuotaRequest) { .workers = 1 }, &e), 0);
        assert_true(quota_check_owner(&q, 7, &u, &(QuotaRequest) { .workspaces = 1, .workspace_bytes = 2 }, &e) < 0);
        q.workspace_bytes_per_owner = 0;
        assert_int_equal(quota_check_owner(&q, 7, &u, &(QuotaRequest) { .workspaces = 1, .workspace_bytes = 2 }, &e),
                         0);
}

/* Unwritten promises plus the reserve must leave room for the new one. */
static void test_disk(void **state) {
        SbxQuotaConfig q = small();
        QuotaDisk d = { .available = 10 * GiB, .promised_unwritten = 5 * GiB, .checkpoint_unwritten = 2 * GiB };
        SbxError e = {};

        /* 10 - 5 - 2 - 1 (reserve) = 2 GiB may still be promised. */
        assert_int_equal(quota_check_disk(&q, &d, 2 * GiB, &e), 0);
        assert_refused(quota_check_disk(&q, &d, 2 * GiB + 1, &e), &e, SBX_ERROR_INSUFFICIENT_SPACE,
                       "Quota:Overcommit=yes");
        /* Promises beyond what is free refuse everything, without wrapping. */
        d.promised_unwritten = UINT64_MAX - GiB;
        assert_true(quota_check_disk(&q, &d, 16 * MiB, &e) < 0);
        d.available = 0;
        d.promised_unwritten = 0;
        d.checkpoint_unwritten = 0;
        assert_true(quota_check_disk(&q, &d, 16 * MiB, &e) < 0);
        /* The operator's switch. */
        q.overcommit = true;
        assert_int_equal(quota_check_disk(&q, &d, 1024 * GiB, &e), 0);
}

/* A checkpoint gets the smallest of the image cap, half the owner's room and
 * half the host's: it takes its room twice until its copy is done. */
static void test_checkpoint_budget(void **state) {
        SbxQuotaConfig q = small();

        assert_int_equal(quota_checkpoint_budget(&q, false, 1 * GiB, 0, 0), 512 * MiB);
        assert_int_equal(quota_checkpoint_budget(&q, false, 256 * MiB, 0, 0), 256 * MiB);
        assert_int_equal(quota_checkpoint_budget(&q, false, 1 * GiB, 700 * MiB, 0), 162 * MiB);
        assert_int_equal(quota_checkpoint_budget(&q, false, 1 * GiB, 2 * GiB, 0), 0);
        assert_int_equal(quota_checkpoint_budget(&q, false, 1 * GiB, 0, 2 * GiB - 10 * MiB), 5 * MiB);
        /* Exempt from the owner's quota, never from the host's. */
        assert_int_equal(quota_checkpoint_budget(&q, true, 1 * GiB, 2 * GiB, 0), 1 * GiB);
        assert_int_equal(quota_checkpoint_budget(&q, true, 1 * GiB, 2 * GiB, 2 * GiB), 0);
        q.checkpoint_bytes_total = 0;
        q.checkpoint_bytes_per_owner = 0;
        assert_int_equal(quota_checkpoint_budget(&q, false, 1 * GiB, 100 * GiB, 100 * GiB), 1 * GiB);
}

/* [Quota] keys are read, and an unknown one in the section is an error. */
static void test_config_keys(void **state) {
        char path[] = "/tmp/sbx-test-quota.XXXXXX";
        SbxConfig c;
        SbxError e = {};
        FILE *f;
        int fd;

        fd = mkstemp(path);
        assert_true(fd >= 0);
        f = fdopen(fd, "w");
        fputs("[Quota]\nWorkersPerOwner=3\nWorkspacesPerOwner=4\nWorkspaceBytesPerOwner=5G\n"
              "CheckpointBytesPerOwner=6G\nCheckpointBytesTotal=7G\nReserve=512M\nOvercommit=yes\nExemptRoot=no\nExemptManagers=yes\n", f);
        fclose(f);
        sbx_config_init_defaults(&c);
        assert_true(c.quota.exempt_root);
        assert_false(c.quota.exempt_managers);
        assert_false(c.quota.overcommit);
        assert_int_equal(sbx_config_load(&c, path, &e), 0);
        assert_int_equal(c.quota.workers_per_owner, 3);
        assert_int_equal(c.quota.workspaces_per_owner, 4);
        assert_int_equal(c.quota.workspace_bytes_per_owner, 5 * GiB);
        assert_int_equal(c.quota.checkpoint_bytes_per_owner, 6 * GiB);
        assert_int_equal(c.quota.checkpoint_bytes_total, 7 * GiB);
        assert_int_equal(c.quota.reserve_bytes, 512 * MiB);
        assert_true(c.quota.overcommit);
        assert_false(c.quota.exempt_root);
        assert_true(c.quota.exempt_managers);
        sbx_config_done(&c);

        f = fopen(path, "w");
        fputs("[Quota]\nWorkersPerUser=3\n", f);
        fclose(f);
        sbx_config_init_defaults(&c);
        assert_true(sbx_config_load(&c, path, &e) < 0);
        assert_non_null(strstr(e.message, "quota:workersperuser"));
        sbx_config_done(&c);
        unlink(path);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_owner_limits),
                cmocka_unit_test(test_unlimited_and_above),
                cmocka_unit_test(test_disk),
                cmocka_unit_test(test_checkpoint_budget),
                cmocka_unit_test(test_config_keys),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
