/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "creds.h"
#include "rmrf.h"
#include "runtimes.h"
#include "util.h"
#include "worker.h"

static void test_credential_peer_parse(void **state) {
        static const char good[] = "\0" "4f3a9c/unit/sandbox-0123456789ab.service/token";
        static const char nounit[] = "\0" "4f3a9c/sandbox.service/token";
        static const char nested[] = "\0" "x/unit/u.service/a/b";
        static const char nul_inside[] = "\0" "x/unit/u\0.service/a";
        char *buf = NULL;
        const char *unit, *name;

        assert_int_equal(credential_peer_parse(good, sizeof(good) - 1, &buf, &unit, &name), 0);
        assert_string_equal(unit, "sandbox-0123456789ab.service");
        assert_string_equal(name, "token");
        free(buf);
        assert_int_equal(credential_peer_parse(nounit, sizeof(nounit) - 1, &buf, &unit, &name), -EBADMSG);
        assert_int_equal(credential_peer_parse(nested, sizeof(nested) - 1, &buf, &unit, &name), -EBADMSG);
        assert_int_equal(credential_peer_parse(nul_inside, sizeof(nul_inside) - 1, &buf, &unit, &name), -EBADMSG);
        assert_int_equal(credential_peer_parse("/run/x", 6, &buf, &unit, &name), -EBADMSG);
        assert_int_equal(credential_peer_parse("", 0, &buf, &unit, &name), -EBADMSG);
}

/* The server tells its own socket file from none and from a replacement. */
static void test_credential_server_reachable(void **state) {
        char dir[] = "/tmp/sbx-creds-XXXXXX", path[256];
        CredentialServer *s = NULL;
        sd_event *e = NULL;
        int fd;

        assert_non_null(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/credentials.sock", dir);
        assert_int_equal(sd_event_new(&e), 0);
        assert_int_equal(credential_server_new(&s, e, path, NULL, NULL), 0);
        assert_int_equal(credential_server_reachable(s), 0);
        assert_int_equal(unlink(path), 0);
        assert_int_equal(credential_server_reachable(s), -ENOENT);
        fd = open(path, O_CREAT | O_WRONLY, 0600);
        assert_true(fd >= 0);
        close(fd);
        assert_int_equal(credential_server_reachable(s), -ESTALE);
        assert_int_equal(credential_server_reachable(NULL), -ENOTCONN);
        credential_server_free(s);
        (void) unlink(path);
        assert_int_equal(rmdir(dir), 0);
        sd_event_unref(e);
}

static void test_rm_rf_does_not_follow_symlinks(void **state) {
        char outside[] = "/tmp/sbx-outside-XXXXXX", home[] = "/tmp/sbx-home-XXXXXX";
        char path[256];
        int fd;

        assert_non_null(mkdtemp(outside));
        assert_non_null(mkdtemp(home));
        snprintf(path, sizeof(path), "%s/precious", outside);
        fd = open(path, O_CREAT | O_WRONLY, 0600);
        assert_true(fd >= 0);
        close(fd);
        /* A worker plants links to things outside its home. */
        snprintf(path, sizeof(path), "%s/link-dir", home);
        assert_int_equal(symlink(outside, path), 0);
        snprintf(path, sizeof(path), "%s/a", home);
        mkdir(path, 0700);
        snprintf(path, sizeof(path), "%s/a/b", home);
        mkdir(path, 0700);
        snprintf(path, sizeof(path), "%s/a/b/file", home);
        fd = open(path, O_CREAT | O_WRONLY, 0600);
        close(fd);

        assert_int_equal(rm_rf(home), 0);
        assert_int_equal(access(home, F_OK), -1);
        snprintf(path, sizeof(path), "%s/precious", outside);
        assert_int_equal(access(path, F_OK), 0);
        assert_int_equal(rm_rf(home), 0);         /* already gone is fine */
        assert_int_equal(rm_rf(outside), 0);
}

static void test_rm_rf_children(void **state) {
        char dir[] = "/tmp/sbx-root-XXXXXX", path[256];

        assert_non_null(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/w1", dir);
        mkdir(path, 0700);
        snprintf(path, sizeof(path), "%s/w2", dir);
        mkdir(path, 0700);
        assert_int_equal(rm_rf_children(dir), 0);
        assert_int_equal(access(dir, F_OK), 0);
        snprintf(path, sizeof(path), "%s/w1", dir);
        assert_int_equal(access(path, F_OK), -1);
        rmdir(dir);
}

static void test_exit_status_and_reason(void **state) {
        assert_int_equal(worker_exit_status_from_exec(1, 0), 0);
        assert_int_equal(worker_exit_status_from_exec(1, 3), 3);
        assert_int_equal(worker_exit_status_from_exec(2, 15), 143);
        assert_int_equal(worker_exit_status_from_exec(3, 11), 139);
        assert_int_equal(worker_exit_status_from_exec(0, 0), -1);
        assert_string_equal(worker_end_reason(NULL, "success", 1), "exited");
        assert_string_equal(worker_end_reason(NULL, "exit-code", 1), "exited");
        assert_string_equal(worker_end_reason(NULL, "signal", 2), "failed");
        assert_string_equal(worker_end_reason(NULL, "timeout", 2), "timeout");
        assert_string_equal(worker_end_reason(NULL, "oom-kill", 2), "oom");
        assert_string_equal(worker_end_reason("idle", "success", 2), "idle");
        assert_string_equal(worker_end_reason("stopped", "success", 2), "stopped");
}

/* RESULT of a worker that ended the way the arguments say. */
static void assert_result(const char *stop_reason, const char *unit_result, int code, int status, bool launcher,
                          const char *expected) {
        _cleanup_free_ char *s = NULL;

        assert_int_equal(worker_result_format(stop_reason, unit_result, code, status, launcher, &s), 0);
        assert_string_equal(s, expected);
}

static void test_result_strings(void **state) {
        assert_result(NULL, "success", 1, 0, false, "exited 0");
        assert_result(NULL, "exit-code", 1, 3, false, "exited 3");
        assert_result(NULL, "signal", 2, 9, false, "killed by signal 9");
        assert_result(NULL, "core-dump", 3, 11, false, "killed by signal 11");
        assert_result(NULL, "timeout", 2, 15, false, "timeout");
        assert_result(NULL, "oom-kill", 2, 9, true, "oom");
        /* The idle reaper and Stop end a worker with SIGTERM: that is their
         * result, never a failure of the worker. */
        assert_result("idle", "success", 2, 15, false, "idle");
        assert_result("idle", "signal", 2, 15, true, "idle");
        assert_result("stopped", "success", 2, 15, false, "stopped");
        /* The launcher's setup status: the workload never ran. A trusted
         * worker's own 125 is its own answer. */
        assert_result(NULL, "exit-code", 1, 125, true,
                      "failed: the sandbox could not be set up (sandbox-launch exit status 125)");
        assert_result(NULL, "exit-code", 1, 125, false, "exited 125");
        assert_result(NULL, "resources", 0, 0, false, "failed: unit result resources");

        _cleanup_free_ char *f = NULL;
        assert_int_equal(worker_result_format_failed("start job failed", &f), 0);
        assert_string_equal(f, "failed: start job failed");
}

static void test_state_names(void **state) {
        assert_string_equal(worker_state_to_string(WORKER_STARTING), "starting");
        assert_string_equal(worker_state_to_string(WORKER_RUNNING), "running");
        assert_string_equal(worker_state_to_string(WORKER_STOPPING), "stopping");
        assert_string_equal(worker_state_to_string(WORKER_ENDED), "ended");
        for (WorkerState s = 0; s < _WORKER_STATE_MAX; s++)
                assert_int_equal(worker_state_from_string(worker_state_to_string(s)), s);
        assert_int_equal(worker_state_from_string("failed"), _WORKER_STATE_MAX);
        assert_int_equal(worker_state_from_string("exited"), _WORKER_STATE_MAX);
}

static void test_class_runtime_map(void **state) {
        assert_int_equal(class_required_runtime(SBX_CLASS_TRUSTED), SBX_RUNTIME_SYSTEMD);
        assert_int_equal(class_required_runtime(SBX_CLASS_STANDARD), SBX_RUNTIME_RUNSC);
        assert_int_equal(class_required_runtime(SBX_CLASS_UNTRUSTED), SBX_RUNTIME_RUNSC);
        assert_int_equal(class_required_runtime(SBX_CLASS_HOSTILE), SBX_RUNTIME_KATA);
        assert_int_equal(class_required_runtime(SBX_CLASS_WASM), SBX_RUNTIME_WASM);
        assert_int_equal(class_required_runtime(_SBX_CLASS_INVALID), _SBX_RUNTIME_INVALID);
}

/* A journal stand-in: a datagram socket at path, as journald's. */
static int journal_standin(const char *path) {
        struct sockaddr_un a = { .sun_family = AF_UNIX };
        int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

        assert_true(fd >= 0);
        snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
        (void) unlink(path);
        assert_int_equal(bind(fd, (struct sockaddr *) &a, sizeof(a)), 0);
        return fd;
}

static ssize_t journal_read(int fd, char *buf, size_t size) {
        ssize_t n = recv(fd, buf, size - 1, MSG_DONTWAIT);
        if (n >= 0)
                buf[n] = 0;
        return n;
}

/* log_struct() under systemd: the native protocol's KEY=value lines on a
 * socket connected once, every field there (32 of the caller's, the most it
 * takes), again after journald was restarted; a value with a newline is left
 * to sd_journal_sendv(), which encodes it (and here finds no journald). */
static void test_log_struct_journal(void **state) {
        char dir[] = "/tmp/test-misc-journal-XXXXXX", path[128], buf[8192], key[32][8], value[32][8];
        int fd;

        assert_non_null(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/socket", dir);
        fd = journal_standin(path);
        assert_int_equal(setenv("SANDBOXD_JOURNAL_SOCKET", path, 1), 0);
        assert_int_equal(setenv("JOURNAL_STREAM", "0:0", 1), 0);   /* "stderr is the journal": no copy there */
        for (int i = 0; i < 32; i++) {
                snprintf(key[i], sizeof(key[i]), "K%d", i);
                snprintf(value[i], sizeof(value[i]), "v%d", i);
        }
#define KV(i) key[i], value[i]
        log_struct(LOG_NOTICE, "hello journal",
                   KV(0), KV(1), KV(2), KV(3), KV(4), KV(5), KV(6), KV(7), KV(8), KV(9), KV(10), KV(11), KV(12),
                   KV(13), KV(14), KV(15), KV(16), KV(17), KV(18), KV(19), KV(20), KV(21), KV(22), KV(23), KV(24),
                   KV(25), KV(26), KV(27), KV(28), KV(29), KV(30), KV(31), NULL);
#undef KV
        assert_true(journal_read(fd, buf, sizeof(buf)) > 0);
        assert_non_null(strstr(buf, "MESSAGE=hello journal\n"));
        assert_non_null(strstr(buf, "PRIORITY=5\n"));
        assert_non_null(strstr(buf, "SYSLOG_IDENTIFIER=test-misc\n"));
        assert_non_null(strstr(buf, "\nK0=v0\n"));
        assert_non_null(strstr(buf, "\nK31=v31\n"));
        assert_null(strstr(buf, "CODE_FILE="));

        log_struct(LOG_INFO, "two\nlines", "EGRESS_HOST", "a.example", NULL);
        assert_int_equal(journal_read(fd, buf, sizeof(buf)), -1);
        assert_int_equal(errno, EAGAIN);

        /* journald restarted: a new socket at the same path. */
        close(fd);
        fd = journal_standin(path);
        log_struct(LOG_INFO, "after restart", "EGRESS_HOST", "a.example", NULL);
        assert_true(journal_read(fd, buf, sizeof(buf)) > 0);
        assert_non_null(strstr(buf, "MESSAGE=after restart\nPRIORITY=6\n"));
        assert_non_null(strstr(buf, "\nEGRESS_HOST=a.example\n"));

        unsetenv("JOURNAL_STREAM");
        unsetenv("SANDBOXD_JOURNAL_SOCKET");
        close(fd);
        unlink(path);
        rmdir(dir);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_credential_peer_parse),
                cmocka_unit_test(test_credential_server_reachable),
                cmocka_unit_test(test_rm_rf_does_not_follow_symlinks),
                cmocka_unit_test(test_rm_rf_children),
                cmocka_unit_test(test_exit_status_and_reason),
                cmocka_unit_test(test_result_strings),
                cmocka_unit_test(test_state_names),
                cmocka_unit_test(test_class_runtime_map),
                cmocka_unit_test(test_log_struct_journal),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
