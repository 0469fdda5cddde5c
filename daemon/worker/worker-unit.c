/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "egress-units.h"
#include "systemd-bus.h"
#include "unit-props.h"
#include "worker-disk.h"
#include "worker-gate.h"
#include "worker-resume.h"
#include "worker-spawn.h"
#include "worker-unit.h"
#include "workspace.h"

int worker_on_start_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        Worker *w = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(reply);

        w->start.call = sd_bus_slot_unref(w->start.call);
        if (e) {
                char why[400];
                snprintf(why, sizeof(why), "%s", e->message ?: e->name);
                if (w->state == WORKER_RESUMING)
                        worker_resume_start_refused(w, why);
                else
                        worker_start_failed(w, why);
        }
        return 0;
}

int worker_build_start_message(const Worker *w, const WorkerUnitEnv *env, const ChannelWorkerFds *stdio,
                               sd_bus_message **ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *msg = NULL;
        WorkerUnitParams p = {
                .id = w->id,
                .unit = w->unit,
                .user = w->user,
                .home = w->home,
                .spec = &w->spec,
                .config = env->config,
                .runtime = w->runtime,
                .launcher_path = env->launcher_path,
                .exec_path = env->exec_path,
                .stdio = stdio,
                .egress_proxy_url = worker_wants_egress(&w->spec) ? worker_egress_proxy_url(w->runtime) : NULL,
                .egress_socket = w->egress.socket,
                .gate_socket = w->gate.socket,
                .host_ns = env->host_ns,
                .restore = w->suspend.restore,
        };
        _cleanup_free_ char *image = NULL;
        int r;

        if (w->spec.workspace) {
                r = workspace_image_path(env->workspace_root, w->spec.workspace, &image);
                if (r < 0)
                        return r;
                p.workspace_image = image;
        }
        p.disk_bytes = w->spec.workspace ? 0 : w->spec.disk_max;
        r = systemd_start_transient_unit_new(worker_systemd(w), &msg, w->unit, "fail");
        if (r < 0)
                return r;
        r = worker_unit_append_properties(msg, &p);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(msg, 'a', "(sa(sv))");
        if (r >= 0)
                r = worker_egress_append_aux_entries(msg, w->id, w->unit, &w->spec, w->runtime,
                                                     w->egress.service ? env->egress_path : NULL, SBX_CREDENTIAL_SOCKET);
        if (r >= 0 && w->runtime != SBX_RUNTIME_KATA)
                r = worker_exec_append_aux_unit(msg, w->id, w->unit);
        if (r >= 0)
                r = worker_gate_append_aux(msg, w, env);
        if (r >= 0)
                r = worker_workspace_append_aux_unit(msg, &p);
        if (r >= 0)
                r = worker_disk_append_aux_unit(msg, w->id, p.disk_bytes, env->mkfs_path);
        if (r >= 0)
                r = sd_bus_message_close_container(msg);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(msg);
        return 0;
}

int worker_start_resumed_unit(Worker *w, SbxError *error) {
        const WorkerOwner *o = w->owned_by;
        WorkerUnitEnv env;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *start = NULL;
        _cleanup_(channel_worker_fds_close) ChannelWorkerFds worker_stdio = { -1, -1, -1 };
        int r;

        o->unit_env(w, &env);
        /* The sandbox's stdio is the new unit's: a fresh channel, which a
         * client attaches to as to any other. */
        w->channel = channel_free(w->channel);
        r = worker_new_channel(w, &worker_stdio);
        if (r >= 0)
                r = worker_build_start_message(w, &env, &worker_stdio, &start);
        if (r < 0)
                return sbx_error_set(error, r, SBX_ERROR_START_FAILED, "Failed to set up the resumed unit of %s: %s",
                                     w->id, strerror(-r));
        /* The gate again: the runtime must still serve the class. */
        r = o->recheck_gate(w, error);
        if (r < 0)
                return r;
        /* A stop of the old units' names still being asked again would stop
         * the new ones: what was sent already reaches systemd before this
         * start (one connection's calls stay in order), nothing after it. */
        unit_stops_cancel(worker_unit_stops(w), w->unit);
        if (w->egress.service) {
                unit_stops_cancel(worker_unit_stops(w), w->egress.socket);
                unit_stops_cancel(worker_unit_stops(w), w->egress.service);
        }
        if (w->gate.service) {
                unit_stops_cancel(worker_unit_stops(w), w->gate.socket);
                unit_stops_cancel(worker_unit_stops(w), w->gate.service);
        }
        if (w->spec.workspace) {
                _cleanup_free_ char *workspace_unit = NULL;
                if (worker_workspace_unit_name(w->id, &workspace_unit) >= 0)
                        unit_stops_cancel(worker_unit_stops(w), workspace_unit);
        }
        if (w->spec.disk_max > 0) {
                _cleanup_free_ char *disk_unit = NULL;
                if (worker_disk_unit_name(w->id, &disk_unit) >= 0)
                        unit_stops_cancel(worker_unit_stops(w), disk_unit);
        }
        r = sd_bus_call_async(worker_systemd(w), &w->start.call, start, worker_on_start_reply, w, 0);
        if (r < 0)
                return sbx_error_set(error, r, SBX_ERROR_START_FAILED, "Failed to ask systemd to start %s: %s",
                                     w->unit, strerror(-r));
        return 0;
}
