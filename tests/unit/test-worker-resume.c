/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Where a resume ends (worker-resume.h): kept suspended while the image is
 * whole and the start or restore failed, ended once the sandbox ran. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "worker-resume.h"

static ResumeVerdict verdict(bool start_failed, bool job_done, bool unit_ended, bool image_used, bool timed_out) {
        ResumeFacts f = {
                .start_failed = start_failed,
                .job_done = job_done,
                .unit_ended = unit_ended,
                .image_used = image_used,
                .timed_out = timed_out,
        };
        return worker_resume_verdict(&f);
}

/* StartTransientUnit refused, or the start job failed: the image is whole. */
static void test_start_failed_keeps_suspended(void **state) {
        assert_int_equal(verdict(true, false, false, false, false), RESUME_KEEP_SUSPENDED);
        assert_int_equal(verdict(true, false, true, false, false), RESUME_KEEP_SUSPENDED);
}

/* The launcher (exit 125) or runsc's restore gave up before the sandbox ran. */
static void test_unit_ended_before_image_went_keeps_suspended(void **state) {
        assert_int_equal(verdict(false, true, true, false, false), RESUME_KEEP_SUSPENDED);
        assert_int_equal(verdict(false, true, true, false, true), RESUME_KEEP_SUSPENDED);
}

/* Once the image went, the sandbox ran: it is not the worker's state any more. */
static void test_after_image_went_never_kept(void **state) {
        for (int mask = 0; mask < 16; mask++) {
                bool start_failed = mask & 1, job_done = mask & 2, unit_ended = mask & 4, timed_out = mask & 8;
                assert_int_not_equal(verdict(start_failed, job_done, unit_ended, true, timed_out),
                                     RESUME_KEEP_SUSPENDED);
        }
        assert_int_equal(verdict(true, false, false, true, false), RESUME_END);
        /* Done: the callers are answered, and an ended unit then ends it as any other. */
        assert_int_equal(verdict(false, true, false, true, false), RESUME_RUNNING);
        assert_int_equal(verdict(false, true, true, true, false), RESUME_RUNNING);
}

/* systemd gave the unit another UID (its UID was taken meanwhile): the
 * launcher refused the image, which is still the worker's state, and nothing
 * of what the suspend kept is deleted (issue 22, item 6). */
static void test_uid_changed_keeps_suspended(void **state) {
        ResumeFacts ended = { .job_done = true, .unit_ended = true, .uid_changed = true };
        ResumeFacts refused = { .start_failed = true, .uid_changed = true };

        assert_int_equal(worker_resume_verdict(&ended), RESUME_KEEP_SUSPENDED);
        assert_int_equal(worker_resume_verdict(&refused), RESUME_KEEP_SUSPENDED);
}

/* Nothing is decided before the job, nor while the unit runs with its image whole. */
static void test_waits(void **state) {
        assert_int_equal(verdict(false, false, false, false, false), RESUME_WAIT);
        /* The unit's end before its job's: the job's result decides. */
        assert_int_equal(verdict(false, false, true, false, false), RESUME_WAIT);
        /* The image went before the JobRemoved came. */
        assert_int_equal(verdict(false, false, false, true, false), RESUME_WAIT);
        assert_int_equal(verdict(false, true, false, false, false), RESUME_WAIT);
}

/* A sandbox whose guard never reads its stats is not left resuming. */
static void test_timeout_takes_it_as_resumed(void **state) {
        assert_int_equal(verdict(false, true, false, false, true), RESUME_RUNNING);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_start_failed_keeps_suspended),
                cmocka_unit_test(test_unit_ended_before_image_went_keeps_suspended),
                cmocka_unit_test(test_after_image_went_never_kept),
                cmocka_unit_test(test_uid_changed_keeps_suspended),
                cmocka_unit_test(test_waits),
                cmocka_unit_test(test_timeout_takes_it_as_resumed),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
