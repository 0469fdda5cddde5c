/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A worker's broker secrets on sandboxd's side: what its proxy unit may
 * load, the sealed memfds that carry them across a restart, and the wipe
 * when the worker ends. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <fcntl.h>
#include <sys/mman.h>

#include "broker-secret.h"
#include "egress-units.h"
#include "spec-service.h"
#include "test-fdstore.h"
#include "worker-broker.h"

#define ID "0123456789ab"
#define SECRET "sbx-broker-unit-secret-77ae"

static void test_memfd_roundtrip(void **state) {
        _cleanup_free_ uint8_t *back = NULL;
        size_t size = 0;
        int fd = broker_secret_memfd((const uint8_t *) SECRET, strlen(SECRET));

        assert_true(fd >= 0);
        /* Sealed: nobody who gets the fd (systemd keeps it) can change it. */
        assert_int_equal(fcntl(fd, F_GET_SEALS) & (F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL),
                         F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL);
        assert_true(write(fd, "x", 1) < 0);
        assert_int_equal(errno, EPERM);
        assert_int_equal(broker_secret_read(fd, SBX_SERVICE_CREDENTIAL_MAX, &back, &size), 0);
        assert_int_equal(size, strlen(SECRET));
        assert_memory_equal(back, SECRET, size);
        /* Bigger than what the caller accepts. */
        assert_int_equal(broker_secret_read(fd, 4, &back, &size), -E2BIG);
        close(fd);
        assert_int_equal(broker_secret_memfd(NULL, 0), -EINVAL);
}

static void test_unsealed_refused(void **state) {
        uint8_t *back = NULL;
        size_t size = 0;
        int fd = memfd_create("not-ours", MFD_CLOEXEC | MFD_ALLOW_SEALING);

        assert_true(fd >= 0);
        assert_int_equal(write(fd, SECRET, strlen(SECRET)), (ssize_t) strlen(SECRET));
        assert_int_equal(broker_secret_read(fd, SBX_SERVICE_CREDENTIAL_MAX, &back, &size), -EPERM);
        assert_null(back);
        close(fd);
}

static void test_fdname(void **state) {
        char buf[64];

        assert_int_equal(broker_secret_fdname(ID, "github", buf, sizeof(buf)), 0);
        assert_string_equal(buf, "secret-" ID "-github");
        assert_int_equal(broker_secret_fdname(ID, "github", buf, 10), -ENAMETOOLONG);
}

static void spec_with_service(WorkerSpec *s, const char *name, const char *secret) {
        worker_spec_init(s);
        s->services = calloc(1, sizeof(SbxService));
        assert_non_null(s->services);
        s->n_services = 1;
        s->set |= SPEC_HAS_SERVICES;
        s->services[0] = (SbxService) {
                .set = SERVICE_HAS_URL | SERVICE_HAS_CREDENTIAL,
                .name = strdup(name),
                .url = strdup("https://api.example.test"),
                .credential = (uint8_t *) strdup(secret),
                .credential_size = strlen(secret),
        };
        sbx_service_apply_defaults(&s->services[0]);
}

/* A worker as manager_create_worker() leaves it: spec, policy. */
static Worker *new_worker(void) {
        SbxConfig c;
        WorkerSpec s;
        Worker *w = NULL;

        sbx_config_init_defaults(&c);
        spec_with_service(&s, "github", SECRET);
        assert_int_equal(worker_new_with_id(&w, NULL, &s, SBX_RUNTIME_SYSTEMD, ID), 0);
        assert_int_equal(worker_egress_policy_json(&w->spec, &c, ID, (char **) &w->egress.policy.data, NULL), 0);
        w->egress.policy.size = strlen((char *) w->egress.policy.data);
        sbx_config_done(&c);
        return w;
}

static void test_proxy_credential(void **state) {
        Worker *w = new_worker();
        const uint8_t *data = NULL;
        size_t size = 0;

        assert_int_equal(worker_proxy_credential(w, "egress-policy", &data, &size), 0);
        assert_ptr_equal(data, w->egress.policy.data);
        assert_int_equal(worker_proxy_credential(w, "broker-github", &data, &size), 0);
        assert_int_equal(size, strlen(SECRET));
        assert_memory_equal(data, SECRET, size);
        /* Only the broker's own ids, only the worker's services. */
        assert_int_equal(worker_proxy_credential(w, "github", &data, &size), -ENOENT);
        assert_int_equal(worker_proxy_credential(w, "broker-", &data, &size), -ENOENT);
        assert_int_equal(worker_proxy_credential(w, "broker-other", &data, &size), -ENOENT);
        assert_int_equal(worker_proxy_credential(w, "broker-GITHUB", &data, &size), -ENOENT);
        assert_int_equal(worker_proxy_credential(w, "sandboxd.environment", &data, &size), -ENOENT);

        /* The end wipes the daemon's copy: nothing more to serve. */
        uint8_t *copy = w->spec.services[0].credential;
        assert_non_null(copy);
        worker_broker_forget(w);
        assert_null(w->spec.services[0].credential);
        assert_int_equal(w->spec.services[0].credential_size, 0);
        assert_int_equal(worker_proxy_credential(w, "broker-github", &data, &size), -ENOENT);
        worker_free(w);
}

/* After a restart: the spec is rebuilt from the state file, which has the
 * policy but no secret; the secret comes back from the fd store. */
static Worker *adopted_worker(const Worker *before) {
        WorkerSpec s;
        Worker *w = NULL;

        worker_spec_init(&s);
        assert_int_equal(worker_new_with_id(&w, NULL, &s, SBX_RUNTIME_SYSTEMD, ID), 0);
        w->egress.policy.data = (uint8_t *) strdup((const char *) before->egress.policy.data);
        w->egress.policy.size = before->egress.policy.size;
        return w;
}

static void test_restore(void **state) {
        Worker *before = new_worker(), *w;
        const uint8_t *data = NULL;
        size_t size = 0;
        FdStore st = {};
        char name[64];

        assert_int_equal(broker_secret_fdname(ID, "github", name, sizeof(name)), 0);
        fdstore_one(&st, name, broker_secret_memfd((const uint8_t *) SECRET, strlen(SECRET)));
        w = adopted_worker(before);
        assert_int_equal(worker_broker_restore(w, &st), 0);
        assert_int_equal(w->spec.n_services, 1);
        assert_string_equal(w->spec.services[0].name, "github");
        assert_int_equal(worker_proxy_credential(w, "broker-github", &data, &size), 0);
        assert_int_equal(size, strlen(SECRET));
        assert_memory_equal(data, SECRET, size);
        /* Taken: nothing left for fdstore_done() to drop. */
        assert_false(fdstore_has(&st, name));
        fdstore_done(&st);
        worker_free(w);

        /* Not kept: the worker cannot be accounted for. */
        st = (FdStore) {};
        w = adopted_worker(before);
        assert_int_equal(worker_broker_restore(w, &st), -ENOKEY);
        worker_free(w);

        /* Under the right name but not sealed: not what sandboxd stored. */
        int fd = memfd_create("forged", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, "forged", 6), 6);
        fdstore_one(&st, name, fd);
        w = adopted_worker(before);
        assert_int_equal(worker_broker_restore(w, &st), -ENOKEY);
        assert_int_equal(worker_proxy_credential(w, "broker-github", &data, &size), -ENOENT);
        fdstore_done(&st);
        worker_free(w);

        /* A worker without services (or egress) has nothing to restore. */
        WorkerSpec s;
        worker_spec_init(&s);
        assert_int_equal(worker_new_with_id(&w, NULL, &s, SBX_RUNTIME_SYSTEMD, ID), 0);
        assert_int_equal(worker_broker_restore(w, &st), 0);
        assert_int_equal(w->spec.n_services, 0);
        worker_free(w);
        worker_free(before);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_memfd_roundtrip),
                cmocka_unit_test(test_unsealed_refused),
                cmocka_unit_test(test_fdname),
                cmocka_unit_test(test_proxy_credential),
                cmocka_unit_test(test_restore),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
