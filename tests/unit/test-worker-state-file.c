/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "rmrf.h"
#include "worker-state-file.h"

static void fill(WorkerRecord *r) {
        worker_record_init(r);
        memcpy(r->id, "0123456789ab", WORKER_ID_LEN + 1);
        r->unit = strdup("sandbox-0123456789ab.service");
        r->class = SBX_CLASS_STANDARD;
        r->requested_class = SBX_CLASS_TRUSTED;
        r->origin = strdup("llm-generated");
        r->runtime = SBX_RUNTIME_RUNSC;
        r->owner = 1000;
        r->uid = 61234;
        r->limits = (SbxLimits) { .memory_max = 512 << 20, .tasks_max = 64, .cpu_quota_percent = 150,
                                  .runtime_max_usec = 3600 * USEC_PER_SEC, .idle_timeout_usec = 10 * USEC_PER_SEC };
        r->has_disk_max = true;
        r->disk_max = 1 << 30;
        r->egress_rate_bps = 12345;
        r->egress_socket = strdup("sandbox-0123456789ab-egress.socket");
        r->egress_service = strdup("sandbox-0123456789ab-egress.service");
        r->egress_policy = strdup("{\"allow\":[\"example.com\"],\n\"x\":\"a=b\"}");
        r->created_realtime = UINT64_C(1764580000000000);
        r->created_monotonic = 5000000;
        r->last_activity_monotonic = 7000000;
        r->pooled = true;
        r->workspace = strdup("proj-1");
        r->endpoint_name = strdup("my-app");
}

static void assert_same(const WorkerRecord *a, const WorkerRecord *b) {
        assert_string_equal(a->id, b->id);
        assert_string_equal(a->unit, b->unit);
        assert_int_equal(a->class, b->class);
        assert_int_equal(a->requested_class, b->requested_class);
        assert_string_equal(a->origin, b->origin);
        assert_int_equal(a->runtime, b->runtime);
        assert_int_equal(a->owner, b->owner);
        assert_int_equal(a->uid, b->uid);
        assert_memory_equal(&a->limits, &b->limits, sizeof(a->limits));
        assert_int_equal(a->has_disk_max, b->has_disk_max);
        assert_int_equal(a->disk_max, b->disk_max);
        assert_int_equal(a->egress_rate_bps, b->egress_rate_bps);
        assert_string_equal(a->egress_socket, b->egress_socket);
        assert_string_equal(a->egress_service, b->egress_service);
        assert_string_equal(a->egress_policy, b->egress_policy);
        assert_int_equal(a->created_realtime, b->created_realtime);
        assert_int_equal(a->created_monotonic, b->created_monotonic);
        assert_int_equal(a->last_activity_monotonic, b->last_activity_monotonic);
        assert_int_equal(a->pooled, b->pooled);
        /* A re-adopted worker must take its workspace back, not a fresh home. */
        assert_string_equal(a->workspace, b->workspace);
        /* And its EndpointName, which no other worker may take meanwhile. */
        assert_string_equal(a->endpoint_name, b->endpoint_name);
}

static void test_round_trip(void **state) {
        _cleanup_(worker_record_done) WorkerRecord in, out;
        _cleanup_free_ char *text = NULL;
        char why[256] = "";

        fill(&in);
        worker_record_init(&out);
        assert_int_equal(worker_record_format(&in, &text), 0);
        /* One value per line: the policy's newline must not end one. */
        assert_non_null(strstr(text, "\negress-policy=7b22"));
        assert_int_equal(worker_record_parse(text, strlen(text), &out, why, sizeof(why)), 0);
        assert_same(&in, &out);
}

static void test_round_trip_minimal(void **state) {
        _cleanup_(worker_record_done) WorkerRecord in, out;
        _cleanup_free_ char *text = NULL;
        char why[256] = "";

        /* No origin, no disk cap, no egress at all. */
        fill(&in);
        free(in.origin);
        free(in.egress_socket);
        free(in.egress_service);
        free(in.egress_policy);
        free(in.endpoint_name);
        in.origin = in.egress_socket = in.egress_service = in.egress_policy = in.endpoint_name = NULL;
        in.has_disk_max = false;
        in.disk_max = 0;
        in.pooled = false;
        worker_record_init(&out);
        assert_int_equal(worker_record_format(&in, &text), 0);
        assert_int_equal(worker_record_parse(text, strlen(text), &out, why, sizeof(why)), 0);
        assert_null(out.origin);
        assert_null(out.egress_socket);
        assert_null(out.egress_service);
        assert_null(out.egress_policy);
        assert_null(out.endpoint_name);
        assert_false(out.has_disk_max);
        /* A cold worker's file says nothing of it: older daemons read it as before. */
        assert_false(out.pooled);
        assert_null(strstr(text, "start-mode"));
        assert_string_equal(out.unit, in.unit);
}

/* A suspended worker: its state, idle action and argv (with an empty
 * element and one with a newline) come back as they went. */
static void test_round_trip_suspended(void **state) {
        _cleanup_(worker_record_done) WorkerRecord in, out;
        _cleanup_free_ char *text = NULL;
        char *argv[] = { (char *) "/usr/bin/python3", (char *) "", (char *) "-c", (char *) "a\nb", NULL };
        char why[256] = "";

        fill(&in);
        in.suspended = true;
        in.idle_suspend = true;
        in.kept_secrets = true;
        in.argv = argv;
        worker_record_init(&out);
        assert_int_equal(worker_record_format(&in, &text), 0);
        in.argv = NULL;
        assert_non_null(strstr(text, "\nsuspended=yes\n"));
        assert_non_null(strstr(text, "\nidle-action=suspend\n"));
        /* That the secrets were kept, never the secrets (worker-secrets.h). */
        assert_non_null(strstr(text, "\nkept-secrets=yes\n"));
        assert_int_equal(worker_record_parse(text, strlen(text), &out, why, sizeof(why)), 0);
        assert_same(&in, &out);
        assert_true(out.suspended);
        assert_true(out.idle_suspend);
        assert_true(out.kept_secrets);
        assert_int_equal(strv_length(out.argv), 4);
        for (size_t i = 0; i < 4; i++)
                assert_string_equal(out.argv[i], argv[i]);
}

/* A worker whose checkpoint is under way: the checkpoint unit and its
 * budget come back, so that a restart watches it (adopt.c); one that says
 * both suspended and suspending is refused. */
static void test_round_trip_suspending(void **state) {
        _cleanup_(worker_record_done) WorkerRecord in, out;
        _cleanup_free_ char *text = NULL, *both = NULL;
        char why[256] = "";
        char *p;

        fill(&in);
        in.suspending = strdup("sandbox-0123456789abcdef0123456789abcdef-suspend.service");
        assert_non_null(in.suspending);
        in.checkpoint_budget = UINT64_C(1) << 30;
        worker_record_init(&out);
        assert_int_equal(worker_record_format(&in, &text), 0);
        assert_non_null(strstr(text, "\nsuspending=sandbox-0123456789abcdef0123456789abcdef-suspend.service\n"));
        assert_int_equal(worker_record_parse(text, strlen(text), &out, why, sizeof(why)), 0);
        assert_string_equal(out.suspending, in.suspending);
        assert_true(out.checkpoint_budget == in.checkpoint_budget);
        assert_false(out.suspended);
        worker_record_done(&out);
        p = strstr(text, "\nend\n");
        assert_non_null(p);
        assert_true(asprintf(&both, "%.*s\nsuspended=yes\nend\n", (int) (p - text), text) > 0);
        assert_int_equal(worker_record_parse(both, strlen(both), &out, why, sizeof(why)), -EBADMSG);
        assert_non_null(strstr(why, "suspending"));
}

/* Without its argv a suspended worker could not be resumed: refused. */
static void test_suspended_needs_argv(void **state) {
        _cleanup_(worker_record_done) WorkerRecord in, out;
        _cleanup_free_ char *text = NULL;
        char why[256] = "";

        fill(&in);
        in.suspended = true;
        worker_record_init(&out);
        assert_int_equal(worker_record_format(&in, &text), 0);
        assert_int_equal(worker_record_parse(text, strlen(text), &out, why, sizeof(why)), -EBADMSG);
        assert_non_null(strstr(why, "argv"));
}

static void test_format_refuses_bad_records(void **state) {
        _cleanup_(worker_record_done) WorkerRecord r;
        char *text = NULL;

        fill(&r);
        r.id[0] = 'X';
        assert_int_equal(worker_record_format(&r, &text), -EINVAL);
        r.id[0] = '0';
        free(r.unit);
        r.unit = strdup("evil\nclass=trusted");
        assert_int_equal(worker_record_format(&r, &text), -EINVAL);
        assert_null(text);
        /* A name that is no host label would be a path in the front's map. */
        free(r.unit);
        r.unit = strdup("sandbox-0123456789ab.service");
        free(r.endpoint_name);
        r.endpoint_name = strdup("../x");
        assert_int_equal(worker_record_format(&r, &text), -EINVAL);
        assert_null(text);
}

static void assert_refused(const char *text, size_t size, int want, const char *why_part) {
        WorkerRecord r;
        char why[256] = "";

        worker_record_init(&r);
        assert_int_equal(worker_record_parse(text, size, &r, why, sizeof(why)), want);
        if (!strstr(why, why_part))
                fail_msg("refused with \"%s\", expected it to say \"%s\"", why, why_part);
        assert_null(r.unit);
}

static void test_truncated(void **state) {
        _cleanup_(worker_record_done) WorkerRecord in;
        _cleanup_free_ char *text = NULL;

        fill(&in);
        assert_int_equal(worker_record_format(&in, &text), 0);
        /* Every cut short of the whole file is refused, at a line end or inside a line. */
        for (size_t n = 0; n < strlen(text); n++) {
                WorkerRecord r;
                char why[256] = "";

                worker_record_init(&r);
                assert_int_equal(worker_record_parse(text, n, &r, why, sizeof(why)), -EBADMSG);
                assert_true(why[0] != 0);
        }
        assert_refused(text, strlen(text) - strlen("end\n"), -EBADMSG, "no end line");
        assert_refused(text, strlen(text) - 2, -EBADMSG, "cut short");
}

static void test_corrupt(void **state) {
        static const char head[] = WORKER_RECORD_MAGIC " 1\n";
        char buf[512];

        assert_refused("", 0, -EBADMSG, "first line");
        assert_refused("hello world\nend\n", 16, -EBADMSG, "does not start with");
        snprintf(buf, sizeof(buf), "%sid=0123456789ab\nunit=u\nclass=purple\nend\n", head);
        assert_refused(buf, strlen(buf), -EBADMSG, "bad value for class");
        snprintf(buf, sizeof(buf), "%sid=../../etc\nend\n", head);
        assert_refused(buf, strlen(buf), -EBADMSG, "bad value for id");
        snprintf(buf, sizeof(buf), "%sowner=-1\nend\n", head);
        assert_refused(buf, strlen(buf), -EBADMSG, "bad value for owner");
        snprintf(buf, sizeof(buf), "%snot a pair\nend\n", head);
        assert_refused(buf, strlen(buf), -EBADMSG, "not key=value");
        snprintf(buf, sizeof(buf), "%sid=0123456789ab\nend\n", head);
        assert_refused(buf, strlen(buf), -EBADMSG, "lacks a required field");
        snprintf(buf, sizeof(buf), "%sid=0123456789ab\nunit=u\nclass=trusted\nrequested-class=trusted\n"
                 "runtime=systemd\nowner=0\negress-socket=s\nend\n", head);
        assert_refused(buf, strlen(buf), -EBADMSG, "egress-service");
        snprintf(buf, sizeof(buf), "%segress-policy=7b0\nend\n", head);
        assert_refused(buf, strlen(buf), -EBADMSG, "bad value for egress-policy");
        snprintf(buf, sizeof(buf), "%sstart-mode=lukewarm\nend\n", head);
        assert_refused(buf, strlen(buf), -EBADMSG, "bad value for start-mode");
        snprintf(buf, sizeof(buf), "%send\nmore=1\n", head);
        assert_refused(buf, strlen(buf), -EBADMSG, "after its end line");
        assert_refused(WORKER_RECORD_MAGIC " 1\nid=0123\0" "456789ab\nend\n", 40, -EBADMSG, "NUL");
}

static void test_wrong_version(void **state) {
        static const char v2[] = WORKER_RECORD_MAGIC " 2\nid=0123456789ab\nend\n";

        assert_refused(v2, strlen(v2), -EPROTONOSUPPORT, "version 2");
}

static void test_unknown_fields(void **state) {
        _cleanup_(worker_record_done) WorkerRecord in, out;
        _cleanup_free_ char *text = NULL, *more = NULL;
        char why[256] = "";
        char *end;

        /* A field a later version added is skipped, the rest still read. */
        fill(&in);
        worker_record_init(&out);
        assert_int_equal(worker_record_format(&in, &text), 0);
        end = strstr(text, "end\n");
        assert_non_null(end);
        *end = 0;
        assert_true(asprintf(&more, "%sfuture-field=whatever=it is\nend\n", text) > 0);
        assert_int_equal(worker_record_parse(more, strlen(more), &out, why, sizeof(why)), 0);
        assert_same(&in, &out);
}

static void test_save_load_remove(void **state) {
        _cleanup_(worker_record_done) WorkerRecord in, out, other;
        char dir[] = "/tmp/test-worker-state-XXXXXX", path[128], why[256] = "";
        struct stat st;
        int fd;

        assert_non_null(mkdtemp(dir));
        fill(&in);
        worker_record_init(&out);
        worker_record_init(&other);
        assert_int_equal(worker_record_save(dir, &in), 0);
        snprintf(path, sizeof(path), "%s/%s", dir, in.id);
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0600);
        /* No temporary file is left beside it. */
        snprintf(path, sizeof(path), "%s/.#%s", dir, in.id);
        assert_int_equal(access(path, F_OK), -1);
        assert_int_equal(worker_record_load(dir, in.id, &out, why, sizeof(why)), 0);
        assert_same(&in, &out);

        /* A later save replaces it whole. */
        in.last_activity_monotonic = 9000000;
        assert_int_equal(worker_record_save(dir, &in), 0);
        worker_record_done(&out);
        assert_int_equal(worker_record_load(dir, in.id, &out, why, sizeof(why)), 0);
        assert_int_equal(out.last_activity_monotonic, 9000000);

        /* A file under another worker's name is refused. */
        snprintf(path, sizeof(path), "%s/%s", dir, "ba9876543210");
        fd = open(path, O_WRONLY | O_CREAT, 0600);
        assert_true(fd >= 0);
        {
                _cleanup_free_ char *text = NULL;
                assert_int_equal(worker_record_format(&in, &text), 0);
                assert_int_equal(write(fd, text, strlen(text)), (ssize_t) strlen(text));
        }
        close(fd);
        assert_int_equal(worker_record_load(dir, "ba9876543210", &other, why, sizeof(why)), -EBADMSG);
        assert_non_null(strstr(why, "names worker 0123456789ab"));

        assert_int_equal(worker_record_remove(dir, in.id), 0);
        assert_int_equal(worker_record_load(dir, in.id, &other, why, sizeof(why)), -ENOENT);
        assert_int_equal(worker_record_remove(dir, in.id), 0);
        assert_int_equal(rm_rf(dir), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_round_trip),
                cmocka_unit_test(test_round_trip_minimal),
                cmocka_unit_test(test_round_trip_suspended),
                cmocka_unit_test(test_round_trip_suspending),
                cmocka_unit_test(test_suspended_needs_argv),
                cmocka_unit_test(test_format_refuses_bad_records),
                cmocka_unit_test(test_truncated),
                cmocka_unit_test(test_corrupt),
                cmocka_unit_test(test_wrong_version),
                cmocka_unit_test(test_unknown_fields),
                cmocka_unit_test(test_save_load_remove),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
