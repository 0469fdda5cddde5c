/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The Credentials and Environment a suspendable worker keeps for its
 * resume: kept past the start, served again while it resumes, carried
 * across a restart as one sealed memfd, refused when forged, wiped at the
 * end. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <fcntl.h>
#include <sys/mman.h>

#include "broker-secret.h"
#include "env-cred.h"
#include "suspend-keep.h"
#include "test-fdstore.h"
#include "worker-secrets.h"

#define ID "0123456789ab"
#define TOKEN "sbx-kept-cred-5c1e"
#define ENV0 "KEPT_VAR=sbx-kept-env-91d0"

static Worker *new_worker(SbxRuntime runtime) {
        WorkerSpec s;
        Worker *w = NULL;

        worker_spec_init(&s);
        s.class = SBX_CLASS_STANDARD;
        s.environment = calloc(2, sizeof(char *));
        assert_non_null(s.environment);
        s.environment[0] = strdup(ENV0);
        s.set |= SPEC_HAS_ENVIRONMENT | SPEC_HAS_CREDENTIALS;
        s.credentials = calloc(2, sizeof(SbxCredential));
        assert_non_null(s.credentials);
        s.credentials[0] = (SbxCredential) { .name = strdup("tok"), .data = (uint8_t *) strdup(TOKEN),
                                             .size = strlen(TOKEN) };
        /* An empty credential is a valid one: it must come back empty. */
        s.credentials[1] = (SbxCredential) { .name = strdup("empty"), .data = malloc(1), .size = 0 };
        s.n_credentials = 2;
        assert_int_equal(worker_new_with_id(&w, NULL, &s, runtime, ID), 0);
        worker_spec_done(&s);
        assert_int_equal(env_credential_encode(w->spec.environment, &w->environment.data, &w->environment.size), 0);
        w->environment.name = (char *) SBX_ENV_CREDENTIAL;
        w->secrets.keep = worker_secrets_wanted(&w->spec, runtime);
        return w;
}

/* What the state file lets a restart rebuild: no secret. */
static Worker *bare_worker(void) {
        WorkerSpec s;
        Worker *w = NULL;

        worker_spec_init(&s);
        assert_int_equal(worker_new_with_id(&w, NULL, &s, SBX_RUNTIME_RUNSC, ID), 0);
        return w;
}

static void assert_same_secrets(const Worker *w) {
        assert_int_equal(w->spec.n_credentials, 2);
        assert_string_equal(w->spec.credentials[0].name, "tok");
        assert_int_equal(w->spec.credentials[0].size, strlen(TOKEN));
        assert_memory_equal(w->spec.credentials[0].data, TOKEN, strlen(TOKEN));
        assert_string_equal(w->spec.credentials[1].name, "empty");
        assert_int_equal(w->spec.credentials[1].size, 0);
        assert_int_equal(strv_length(w->spec.environment), 1);
        assert_string_equal(w->spec.environment[0], ENV0);
        assert_string_equal(w->environment.name, SBX_ENV_CREDENTIAL);
        assert_int_equal(w->environment.size, strlen(ENV0) + 1);
        assert_memory_equal(w->environment.data, ENV0, strlen(ENV0) + 1);
}

static void test_kept_past_start(void **state) {
        Worker *w = new_worker(SBX_RUNTIME_RUNSC);

        assert_true(w->secrets.keep);
        worker_secrets_started(w);
        assert_same_secrets(w);
        assert_false(worker_secrets_missing(w));
        /* Served while its unit starts and while a resumed one does. */
        w->state = WORKER_STARTING;
        assert_true(worker_secrets_servable(w));
        w->state = WORKER_RUNNING;
        assert_false(worker_secrets_servable(w));
        w->state = WORKER_SUSPENDED;
        assert_false(worker_secrets_servable(w));
        w->state = WORKER_RESUMING;
        assert_true(worker_secrets_servable(w));
        worker_free(w);
}

static void test_wiped_when_not_kept(void **state) {
        Worker *w = new_worker(SBX_RUNTIME_SYSTEMD);

        assert_false(w->secrets.keep);
        worker_secrets_started(w);
        assert_memory_not_equal(w->spec.credentials[0].data, TOKEN, strlen(TOKEN));
        for (size_t i = 0; i < strlen(TOKEN); i++)
                assert_int_equal(w->spec.credentials[0].data[i], 0);
        assert_int_equal(w->spec.environment[0][0], 0);
        assert_int_equal(w->environment.data[0], 0);
        /* Such a worker cannot be resumed with them: its suspend is refused. */
        assert_true(worker_secrets_missing(w));
        w->state = WORKER_RESUMING;
        assert_false(worker_secrets_servable(w));
        worker_free(w);
}

static void test_codec(void **state) {
        Worker *w = new_worker(SBX_RUNTIME_RUNSC), *back = bare_worker();
        uint8_t *data = NULL;
        size_t size = 0;

        assert_int_equal(worker_secrets_encode(w, &data, &size), 0);
        assert_int_equal(worker_secrets_decode(back, data, size), 0);
        assert_same_secrets(back);
        worker_free(back);

        /* Cut short anywhere: refused, and nothing half-decoded stays. */
        for (size_t cut = 1; cut < size; cut++) {
                back = bare_worker();
                if (worker_secrets_decode(back, data, cut) == 0) {
                        /* Only at an entry's end is a prefix itself valid. */
                        assert_true(back->spec.n_credentials < 2 || strv_length(back->spec.environment) == 0);
                } else {
                        assert_int_equal(back->spec.n_credentials, 0);
                        assert_null(back->spec.environment);
                        assert_null(back->environment.data);
                }
                worker_free(back);
        }
        back = bare_worker();
        assert_int_equal(worker_secrets_decode(back, data, 0), -EBADMSG);
        worker_free(back);
        erase_and_free(data, size);

        /* A duplicate name, a reserved one, a bad environment. */
        static const uint8_t dup[] = "a\0\1\0\0\0xa\0\1\0\0\0y";
        static const uint8_t reserved[] = "sandboxd.x\0\1\0\0\0x";
        static const uint8_t badenv[] = "sandboxd.environment\0\4\0\0\0a=b";
        static const uint8_t toolong[] = "a\0\xff\0\0\0x";
        const struct { const uint8_t *d; size_t n; } bad[] = {
                { dup, sizeof(dup) - 1 }, { reserved, sizeof(reserved) - 1 }, { badenv, sizeof(badenv) - 1 },
                { toolong, sizeof(toolong) - 1 },
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                back = bare_worker();
                assert_int_equal(worker_secrets_decode(back, bad[i].d, bad[i].n), -EBADMSG);
                assert_int_equal(back->spec.n_credentials, 0);
                assert_null(back->spec.environment);
                worker_free(back);
        }
        worker_free(w);
}

static void test_restore(void **state) {
        Worker *w = new_worker(SBX_RUNTIME_RUNSC), *back;
        uint8_t *data = NULL;
        size_t size = 0;
        FdStore st = {};
        char name[64];
        int fd;

        assert_int_equal(worker_secrets_fdname(ID, name, sizeof(name)), 0);
        assert_string_equal(name, "cred-" ID);
        assert_int_equal(worker_secrets_fdname(ID, name, 8), -ENAMETOOLONG);
        assert_int_equal(worker_secrets_fdname(ID, name, sizeof(name)), 0);

        /* What worker_secrets_persist() hands systemd. */
        assert_int_equal(worker_secrets_encode(w, &data, &size), 0);
        fdstore_one(&st, name, broker_secret_memfd(data, size));
        back = bare_worker();
        assert_int_equal(worker_secrets_restore(back, &st), 0);
        assert_same_secrets(back);
        assert_true(back->secrets.keep);
        assert_true(back->secrets.stored);
        assert_false(fdstore_has(&st, name));
        fdstore_done(&st);

        /* The end wipes the copy. */
        worker_secrets_forget(back);
        assert_int_equal(back->spec.n_credentials, 0);
        assert_null(back->spec.credentials);
        assert_null(back->spec.environment);
        assert_null(back->environment.data);
        assert_int_equal(back->environment.size, 0);
        assert_false(back->secrets.stored);
        worker_free(back);

        /* Lost: the worker cannot be accounted for. */
        st = (FdStore) {};
        back = bare_worker();
        assert_int_equal(worker_secrets_restore(back, &st), -ENOKEY);
        assert_false(back->secrets.keep);
        worker_free(back);

        /* Under its name but not sealed: not what sandboxd stored. */
        fd = memfd_create("forged", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, data, size), (ssize_t) size);
        fdstore_one(&st, name, fd);
        back = bare_worker();
        assert_int_equal(worker_secrets_restore(back, &st), -ENOKEY);
        assert_int_equal(back->spec.n_credentials, 0);
        assert_null(back->spec.environment);
        fdstore_done(&st);
        worker_free(back);

        /* Sealed but garbage. */
        fdstore_one(&st, name, broker_secret_memfd((const uint8_t *) "junk", 4));
        back = bare_worker();
        assert_int_equal(worker_secrets_restore(back, &st), -ENOKEY);
        assert_int_equal(back->spec.n_credentials, 0);
        fdstore_done(&st);
        worker_free(back);

        erase_and_free(data, size);
        worker_free(w);
}

static void test_persist_outside_systemd(void **state) {
        Worker *w = new_worker(SBX_RUNTIME_RUNSC);
        const char *saved = getenv("NOTIFY_SOCKET");

        /* No fd store to hand it to: nothing is counted as stored. */
        assert_null(saved);
        assert_int_equal(worker_secrets_persist(w), 0);
        assert_false(w->secrets.stored);
        worker_secrets_forget(w);
        assert_null(w->spec.credentials);
        worker_free(w);
}

/* Which suspended workers a reboot may keep: workspace-bound ones without
 * secrets or Services (a plain proxy is made again at the resume). */
static void test_keep_refusal(void **state) {
        Worker *w = new_worker(SBX_RUNTIME_RUNSC);

        assert_non_null(strstr(suspend_keep_refusal(w), "no workspace"));
        w->spec.workspace = strdup("ws");
        assert_non_null(w->spec.workspace);
        assert_non_null(strstr(suspend_keep_refusal(w), "Credentials or an Environment"));
        worker_secrets_forget(w);
        w->secrets.keep = false;
        assert_null(suspend_keep_refusal(w));
        w->egress.service = strdup("sandbox-" ID "-egress.service");
        assert_null(suspend_keep_refusal(w));
        w->spec.services = calloc(1, sizeof(SbxService));
        assert_non_null(w->spec.services);
        w->spec.n_services = 1;
        assert_non_null(strstr(suspend_keep_refusal(w), "Services"));
        worker_free(w);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_kept_past_start),
                cmocka_unit_test(test_wiped_when_not_kept),
                cmocka_unit_test(test_codec),
                cmocka_unit_test(test_restore),
                cmocka_unit_test(test_persist_outside_systemd),
                cmocka_unit_test(test_keep_refusal),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
