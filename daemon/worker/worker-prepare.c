/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <string.h>

#include "egress-units.h"
#include "env-cred.h"
#include "worker-prepare.h"
#include "worker-ready.h"
#include "worker-secrets.h"
#include "worker-unit.h"

/* A cold unit's environment as a credential (a claimed sandbox got its
 * environment in its job); the cold-only proxy names and channel follow in
 * worker_prepare_steps(). */
static int worker_prepare_cold_env(Worker *w) {
        int r;

        r = env_credential_encode(w->spec.environment, &w->environment.data, &w->environment.size);
        if (r < 0)
                return r;
        w->environment.name = (char *) SBX_ENV_CREDENTIAL;
        return 0;
}

static int worker_prepare_egress_policy(Worker *w, bool cold, SbxError *error) {
        int r;

        if (!worker_wants_proxy(&w->spec))
                return 0;
        r = worker_egress_policy_json(&w->spec, w->owned_by->config, w->id, (char **) &w->egress.policy.data, error);
        if (r < 0)
                return r;
        w->egress.policy.size = strlen((char *) w->egress.policy.data);
        w->egress.policy.name = (char *) "egress-policy";
        if (cold)
                return worker_egress_unit_names(w->id, &w->egress.socket, &w->egress.service);
        return 0;
}

/* Every step that can fail, in the order a cold start always took them;
 * a claim skips the cold ones. */
static int worker_prepare_steps(Worker *w, const WorkerPrepare *p, SbxError *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *start = NULL;
        _cleanup_(channel_worker_fds_close) ChannelWorkerFds worker_stdio = { -1, -1, -1 };
        const WorkerOwner *o = w->owned_by;
        bool cold = !p->emit;
        int r;

        if (cold) {
                r = worker_prepare_cold_env(w);
                if (r < 0)
                        return r;
        }
        r = worker_secrets_keep(w);
        if (r < 0)
                return r;
        r = worker_prepare_egress_policy(w, cold, error);
        if (r < 0)
                return r;
        if (cold) {
                r = worker_new_channel(w, &worker_stdio);
                if (r < 0)
                        return r;
                /* sandbox-exec's token, not the job, tells that its checks passed. */
                if (w->runtime == SBX_RUNTIME_SYSTEMD || w->runtime == SBX_RUNTIME_WASM)
                        worker_ready_expect(w);
        }
        r = worker_watch_unit(w);
        if (r < 0)
                return r;
        if (cold) {
                WorkerUnitEnv env;
                o->unit_env(w, &env);
                r = worker_build_start_message(w, &env, &worker_stdio, &start);
                if (r < 0)
                        return r;
        }
        /* Gate, second check: the runtime chosen must still serve the class
         * now that the unit is about to be emitted (or the claimed sandbox
         * taken). A runtime that broke in between fails the request; it is
         * never swapped for a weaker one. */
        r = o->recheck_gate(w, error);
        if (r < 0)
                return r;
        if (cold)
                return sd_bus_call_async(worker_systemd(w), &w->start.call, start, worker_on_start_reply, w, 0);
        return p->emit(w, p->userdata);
}

int worker_prepare(Worker *w, const WorkerPrepare *p, SbxError *error) {
        const WorkerOwner *o;
        int r;

        assert(w);
        assert(p);
        o = w->owned_by;

        r = worker_prepare_steps(w, p, error);
        if (r < 0) {
                if (error && !error->name)
                        sbx_error_set(error, r, SBX_ERROR_START_FAILED, "Failed to set up the worker: %s",
                                      strerror(-r));
                return r;
        }
        /* The unit is on its way: nothing below fails. */
        if (p->placed)
                p->placed(w, p->userdata);
        w->start.request = sd_bus_message_ref(p->request);
        o->added(w);
        o->status_changed(w);
        /* A cold start's entry always carries why the pool did not serve it,
         * empty when it had nothing to say (no pool for the runtime). */
        worker_log_starting(w, w->start.mode, p->emit ? NULL : w->start.mode_reason ?: "");
        /* Cold or claimed alike: an operator searching for raised classes
         * finds every one. */
        if (w->spec.class != w->spec.requested_class)
                log_struct(LOG_NOTICE, "Worker's class raised to its origin's floor",
                           "SANDBOXD_WORKER_ID", w->id, "SANDBOXD_ORIGIN", w->spec.origin ?: SBX_ORIGIN_DEFAULT,
                           "SANDBOXD_REQUESTED_CLASS", sbx_class_to_string(w->spec.requested_class),
                           "SANDBOXD_CLASS", sbx_class_to_string(w->spec.class), NULL);
        return 0;
}
