/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <signal.h>
#include <time.h>

#include "manager.h"
#include "unit-props.h"
#include "worker.h"

static const char * const state_table[_WORKER_STATE_MAX] = {
        [WORKER_STARTING] = "starting",
        [WORKER_RUNNING] = "running",
        [WORKER_STOPPING] = "stopping",
        [WORKER_ENDED] = "ended",
};

const char *worker_state_to_string(WorkerState s) {
        return s < _WORKER_STATE_MAX ? state_table[s] : "unknown";
}

WorkerState worker_state_from_string(const char *s) {
        for (WorkerState i = 0; i < _WORKER_STATE_MAX; i++)
                if (streq(state_table[i], s))
                        return i;
        return _WORKER_STATE_MAX;
}

int worker_new(Worker **ret, Manager *m, WorkerSpec *spec, SbxRuntime runtime) {
        char id[WORKER_ID_LEN + 1];
        int r;

        r = random_hex_id(id, WORKER_ID_LEN);
        if (r < 0)
                return r;
        return worker_new_with_id(ret, m, spec, runtime, id);
}

int worker_new_with_id(Worker **ret, Manager *m, WorkerSpec *spec, SbxRuntime runtime, const char *id) {
        Worker *w;
        int r;

        w = calloc(1, sizeof(*w));
        if (!w)
                return -ENOMEM;
        w->manager = m;
        w->runtime = runtime;
        w->uid = (uid_t) -1;
        w->owner = (uid_t) -1;
        w->exit_status = -1;
        w->created_realtime = now_usec(CLOCK_REALTIME);
        w->spec = *spec;                /* takes ownership */
        worker_spec_init(spec);

        snprintf(w->id, sizeof(w->id), "%s", id);
        r = -ENOMEM;
        if (asprintf(&w->unit, "sandbox-%s.service", w->id) < 0 ||
            asprintf(&w->user, "sandbox-%s", w->id) < 0 ||
            asprintf(&w->home, SBX_STATE_ROOT "/%s", w->id) < 0 ||
            asprintf(&w->object_path, "/org/sandboxd1/worker/%s", w->id) < 0)
                goto fail;
        r = sd_bus_path_encode("/org/freedesktop/systemd1/unit", w->unit, &w->unit_path);
        if (r < 0)
                goto fail;
        *ret = w;
        return 0;
fail:
        worker_free(w);
        return r;
}

Worker *worker_free(Worker *w) {
        if (!w)
                return NULL;
        channel_free(w->channel);
        sd_bus_message_unref(w->create_request);
        sd_bus_slot_unref(w->unit_match);
        sd_bus_slot_unref(w->start_call);
        sd_event_source_disable_unref(w->idle_timer);
        sd_event_source_disable_unref(w->linger_timer);
        worker_spec_done(&w->spec);
        free(w->egress_policy.data);
        erase_and_free(w->environment.data, w->environment.size);
        free(w->egress_socket);
        free(w->egress_service);
        free(w->unit);
        free(w->unit_path);
        free(w->user);
        free(w->home);
        free(w->object_path);
        free(w->unit_result);
        free(w->result);
        free(w);
        return NULL;
}

uint64_t worker_last_activity_realtime(const Worker *w) {
        uint64_t mono_now, last;

        if (!w->channel)
                return w->created_realtime;
        mono_now = now_usec(CLOCK_MONOTONIC);
        last = channel_last_activity(w->channel);
        return now_usec(CLOCK_REALTIME) - (mono_now > last ? mono_now - last : 0);
}

uint64_t worker_idle_usec(const Worker *w, uint64_t now_monotonic) {
        uint64_t last;

        if (!w->channel)
                return 0;
        last = channel_last_activity(w->channel);
        return now_monotonic > last ? now_monotonic - last : 0;
}

bool worker_is_alive(const Worker *w) {
        return w->state == WORKER_STARTING || w->state == WORKER_RUNNING || w->state == WORKER_STOPPING;
}

int worker_exit_status_from_exec(int code, int status) {
        switch (code) {
        case 1: /* CLD_EXITED */
                return status & 0xff;
        case 2: /* CLD_KILLED */
        case 3: /* CLD_DUMPED */
                return 128 + (status & 0x7f);
        default:
                return -1;
        }
}

const char *worker_end_reason(const char *stop_reason, const char *unit_result, int exec_main_code) {
        if (stop_reason)
                return stop_reason;
        if (unit_result && streq(unit_result, "timeout"))
                return "timeout";
        if (unit_result && streq(unit_result, "oom-kill"))
                return "oom";
        /* Any exit code is the worker's own answer; a signal is not. */
        return exec_main_code == 1 ? "exited" : "failed";
}

int worker_result_format(const char *stop_reason, const char *unit_result, int exec_main_code,
                         int exec_main_status, bool launcher, char **ret) {
        int r;

        /* What we stopped it for comes first: an idle reap or a Stop kills
         * with SIGTERM, which is not the worker failing. */
        if (stop_reason)
                r = asprintf(ret, "%s", stop_reason);
        else if (unit_result && streq(unit_result, "timeout"))
                r = asprintf(ret, "timeout");
        else if (unit_result && streq(unit_result, "oom-kill"))
                r = asprintf(ret, "oom");
        else if (exec_main_code == 1 && launcher && exec_main_status == SBX_LAUNCH_EXIT_SETUP)
                r = asprintf(ret, "failed: the sandbox could not be set up (sandbox-launch exit status %d)",
                             SBX_LAUNCH_EXIT_SETUP);
        else if (exec_main_code == 1)
                r = asprintf(ret, "exited %d", exec_main_status & 0xff);
        else if (exec_main_code == 2 || exec_main_code == 3)
                r = asprintf(ret, "killed by signal %d", exec_main_status & 0x7f);
        else
                r = asprintf(ret, "failed: unit result %s", unit_result ?: "unknown");
        return r < 0 ? -ENOMEM : 0;
}

int worker_result_format_failed(const char *reason, char **ret) {
        return asprintf(ret, "failed: %s", reason ?: "unknown") < 0 ? -ENOMEM : 0;
}
