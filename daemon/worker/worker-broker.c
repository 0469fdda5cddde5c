/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "broker-secret.h"
#include "egress-policy.h"
#include "egress-units.h"
#include "spec-service.h"
#include "worker-broker.h"

#define FDNAME_MAX 128

static const SbxService *service_for_credential(const Worker *w, const char *name) {
        const char *service = startswith(name, SBX_BROKER_CREDENTIAL_PREFIX) ? name + strlen(SBX_BROKER_CREDENTIAL_PREFIX)
                                                                                 : NULL;

        for (size_t i = 0; service && i < w->spec.n_services; i++)
                if (streq(w->spec.services[i].name, service))
                        return &w->spec.services[i];
        return NULL;
}

int worker_proxy_credential(const Worker *w, const char *name, const uint8_t **ret_data, size_t *ret_size) {
        const SbxService *s;

        if (streq(name, "egress-policy") && w->egress.policy.data) {
                *ret_data = w->egress.policy.data;
                *ret_size = w->egress.policy.size;
                return 0;
        }
        s = service_for_credential(w, name);
        if (!s || !s->credential || s->credential_size == 0)
                return -ENOENT;
        *ret_data = s->credential;
        *ret_size = s->credential_size;
        return 0;
}

int worker_broker_persist(Worker *w) {
        char name[FDNAME_MAX];
        int r;

        for (size_t i = 0; i < w->spec.n_services; i++) {
                const SbxService *s = &w->spec.services[i];
                _cleanup_close_ int fd = -1;

                r = broker_secret_fdname(w->id, s->name, name, sizeof(name));
                if (r < 0)
                        return r;
                fd = broker_secret_memfd(s->credential, s->credential_size);
                if (fd < 0)
                        return fd;
                /* A resumed worker's are there from before its suspend:
                 * one entry per name. */
                (void) fdstore_remove(name);
                r = fdstore_push(name, fd);
                if (r < 0)
                        return r;
        }
        return 0;
}

void worker_broker_forget(Worker *w) {
        char name[FDNAME_MAX];

        for (size_t i = 0; i < w->spec.n_services; i++) {
                SbxService *s = &w->spec.services[i];

                if (broker_secret_fdname(w->id, s->name, name, sizeof(name)) >= 0)
                        (void) fdstore_remove(name);
                erase_and_free(s->credential, s->credential_size);
                s->credential = NULL;
                s->credential_size = 0;
        }
}

static int restore_one(Worker *w, FdStore *fds, const char *service) {
        SbxService *s = &w->spec.services[w->spec.n_services];
        char name[FDNAME_MAX];
        _cleanup_close_ int fd = -1;
        int r;

        r = broker_secret_fdname(w->id, service, name, sizeof(name));
        if (r < 0)
                return r;
        fd = fdstore_take(fds, name);
        if (fd < 0)
                return -ENOKEY;
        *s = (SbxService) { .name = strdup(service) };
        if (!s->name)
                return -ENOMEM;
        r = broker_secret_read(fd, SBX_SERVICE_CREDENTIAL_MAX, &s->credential, &s->credential_size);
        if (r < 0) {
                free(s->name);
                *s = (SbxService) {};
                return r == -ENOMEM ? r : -ENOKEY;
        }
        s->set = SERVICE_HAS_CREDENTIAL;
        w->spec.n_services++;
        w->spec.set |= SPEC_HAS_SERVICES;
        return 0;
}

int worker_broker_restore(Worker *w, FdStore *fds) {
        _cleanup_egress_policy_ EgressPolicy *p = NULL;
        int r;

        if (!w->egress.policy.data)
                return 0;
        r = egress_policy_from_json((const char *) w->egress.policy.data, &p);
        if (r < 0)
                return r;
        if (p->n_services == 0)
                return 0;
        w->spec.services = calloc(p->n_services, sizeof(SbxService));
        if (!w->spec.services)
                return -ENOMEM;
        for (size_t i = 0; i < p->n_services; i++) {
                r = restore_one(w, fds, p->services[i].name);
                if (r < 0)
                        break;
        }
        if (r >= 0)
                return 0;
        /* Taking an fd does not remove it from systemd's store: the other
         * secrets of a worker that is not adopted must not stay there. */
        for (size_t i = 0; i < p->n_services; i++) {
                char name[FDNAME_MAX];
                if (broker_secret_fdname(w->id, p->services[i].name, name, sizeof(name)) >= 0)
                        (void) fdstore_remove(name);
        }
        return r;
}
