/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <time.h>

#include "preflight.h"
#include "event-util.h"
#include "probe.h"
#include "unit-props.h"
#include "util.h"

#define PROBE_TIMEOUT_USEC (60 * USEC_PER_SEC)
#define PROBE_INTERVAL_USEC (10 * 60 * USEC_PER_SEC)
#define PROBE_RETRY_FIRST_USEC (30 * USEC_PER_SEC)
/* Steps past this would shift the first delay out of range; the delay has
 * reached the regular interval long before. */
#define PROBE_RETRY_STEP_MAX 16

struct RuntimeProbe {
        Prober *prober;
        SbxRuntime runtime;
        ProbeUnit *unit;
};

static const char *runtime_path(Prober *pr, SbxRuntime rt) {
        switch (rt) {
        case SBX_RUNTIME_RUNSC:
                return pr->config->runsc_path;
        case SBX_RUNTIME_KATA:
                return pr->config->kata_path;
        case SBX_RUNTIME_WASM:
                return pr->config->wasm_path;
        default:
                return NULL;
        }
}

int probe_parse_output(const char *out, bool *ret_available, char *reason, size_t n) {
        const char *rest;
        size_t len;

        if (startswith(out, "ok ") || streq(out, "ok") || startswith(out, "ok\n")) {
                *ret_available = true;
                rest = out + 2;
        } else if (startswith(out, "unavailable")) {
                *ret_available = false;
                rest = out + strlen("unavailable");
        } else
                return -EBADMSG;
        rest += strspn(rest, " ");
        len = strcspn(rest, "\n");
        snprintf(reason, n, "%.*s", (int) MIN(len, n - 1), rest);
        return 0;
}

/* One row per class: which runtime would serve it, and whether it can now;
 * then one row per wall: whether it was verified, and what was found. */
static int preflight_reply(Prober *pr, sd_bus_message *msg) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r;

        r = sd_bus_message_new_method_return(msg, &reply);
        if (r < 0)
                return r;
        /* A runtime binary that vanished since its probe takes its classes with it. */
        runtime_table_revalidate(pr->runtimes);
        r = preflight_append_rows(reply, pr->runtimes, pr->config);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

/* Whether a runtime or the walls probe is still running. */
static bool probes_pending(Prober *pr) {
        for (int i = 0; i < _SBX_RUNTIME_MAX; i++)
                if (pr->probes[i])
                        return true;
        return pr->walls.unit;
}

/* Answers the Preflight() calls waiting for probes, once none is pending. */
static void answer_waiters(Prober *pr) {
        if (probes_pending(pr))
                return;
        for (size_t i = 0; i < pr->n_preflight_waiters; i++) {
                sd_bus_message *req = pr->preflight_waiters[i];
                (void) preflight_reply(pr, req);
                sd_bus_message_unref(req);
        }
        pr->n_preflight_waiters = 0;
}

uint64_t probe_retry_delay_usec(unsigned step) {
        if (step >= PROBE_RETRY_STEP_MAX || PROBE_RETRY_FIRST_USEC << step >= PROBE_INTERVAL_USEC)
                return PROBE_INTERVAL_USEC;
        return PROBE_RETRY_FIRST_USEC << step;
}

/* When the last probe pending has ended: when the next round is. Fail
 * closed does not mean closed for ten minutes: a refusal without a verdict
 * (a probe unit that could not finish on a loaded host, as a density run of
 * 150 workers with proxies saw) is tried again soon. */
static void schedule_next_round(Prober *pr) {
        if (pr->no_verdict) {
                char retry[24];

                pr->next_round_usec = probe_retry_delay_usec(pr->retry_step);
                if (pr->retry_step < PROBE_RETRY_STEP_MAX)
                        pr->retry_step++;
                snprintf(retry, sizeof(retry), "%" PRIu64, pr->next_round_usec / USEC_PER_SEC);
                log_struct(LOG_NOTICE, "A probe gave no verdict: its classes stay refused until one does; probing again soon",
                           "SANDBOXD_RETRY_SEC", retry, NULL);
        } else {
                pr->next_round_usec = PROBE_INTERVAL_USEC;
                pr->retry_step = 0;
        }
        pr->no_verdict = false;
        if (pr->reprobe_timer)
                (void) event_timer_arm(pr->reprobe_timer, pr->next_round_usec, TIMER_HOUSEKEEPING);
}

static void probes_ended(Prober *pr) {
        if (probes_pending(pr))
                return;
        answer_waiters(pr);
        schedule_next_round(pr);
}

static void on_walls_ended(WallsProbe *w) {
        Prober *pr = w->userdata;

        if (w->status->no_verdict)
                pr->no_verdict = true;
        probes_ended(pr);
}

void prober_init(Prober *pr) {
        assert(pr && pr->runtimes);
        pr->walls = (WallsProbe) {
                .systemd = pr->systemd,
                .config = pr->config,
                .status = &pr->runtimes->walls,
                .walls_path = pr->walls_path,
                .ended = on_walls_ended,
                .userdata = pr,
        };
}

static RuntimeProbe *probe_free(RuntimeProbe *p) {
        if (!p)
                return NULL;
        probe_unit_free(p->unit);
        free(p);
        return NULL;
}

static void probe_freep(RuntimeProbe **p) {
        probe_free(*p);
}

static int probe_start_or_refuse(Prober *pr, SbxRuntime rt);

static void probe_finish(RuntimeProbe *p, bool available, bool verdict, const char *reason) {
        Prober *pr = p->prober;
        SbxRuntime rt = p->runtime;
        RuntimeStatus *st = &pr->runtimes->status[rt];

        runtime_status_set(st, available, runtime_path(pr, rt), reason);
        log_struct(available ? LOG_INFO : LOG_NOTICE,
                   available ? "Runtime probe succeeded" : "Runtime probe failed: its classes will be refused",
                   "SANDBOXD_RUNTIME", sbx_runtime_to_string(rt),
                   "SANDBOXD_RUNTIME_PATH", st->path, "SANDBOXD_REASON", reason, NULL);
        pr->probes[rt] = probe_free(p);
        if (!verdict)
                pr->no_verdict = true;
        if (pr->probe_again[rt]) {
                pr->probe_again[rt] = false;
                (void) probe_start_or_refuse(pr, rt);
        }
        probes_ended(pr);
}

static void on_probe_done(ProbeUnit *u, const sd_bus_error *start_error, const char *result, const char *output,
                          void *userdata) {
        RuntimeProbe *p = userdata;
        const char *unit = probe_unit_name(u);
        char reason[256];
        bool available = false, verdict = false;

        if (start_error)
                snprintf(reason, sizeof(reason), "cannot start probe unit: %s",
                         start_error->message ?: start_error->name);
        else if (probe_parse_output(output, &available, reason, sizeof(reason)) >= 0) {
                verdict = true;
                /* A probe that says ok but failed as a unit is not ok. */
                if (available && !streq(result, "done")) {
                        available = verdict = false;
                        snprintf(reason, sizeof(reason), "probe unit %s ended with result %s", unit, result);
                }
        } else
                snprintf(reason, sizeof(reason), "probe unit %s gave no answer (job %s); see journalctl -u %s",
                         unit, result, unit);
        probe_finish(p, available, verdict, reason);
}

bool prober_job_removed(Prober *pr, const char *unit, const char *result) {
        assert(pr);
        if (walls_probe_job_removed(&pr->walls, unit, result))
                return true;
        for (int i = 0; i < _SBX_RUNTIME_MAX; i++)
                if (pr->probes[i] && probe_unit_job_removed(pr->probes[i]->unit, unit, result))
                        return true;
        return false;
}

static int probe_start(Prober *pr, SbxRuntime rt) {
        _cleanup_(probe_freep) RuntimeProbe *p = NULL;
        const char *path = runtime_path(pr, rt);
        const char *argv[] = { *pr->launcher_path, "probe", "--runtime", sbx_runtime_to_string(rt),
                               "--runtime-path", path,
                               rt == SBX_RUNTIME_RUNSC ? "--platform" : NULL, pr->config->runsc_platform, NULL };
        ProbeUnitParams params = {
                .kind = sbx_runtime_to_string(rt),
                .description = "sandboxd runtime probe",
                .timeout_usec = PROBE_TIMEOUT_USEC,
                .path = *pr->launcher_path,
                .argv = (char **) argv,
                .done = on_probe_done,
        };
        char reason[320];
        int r;

        if (pr->probes[rt]) {
                pr->probe_again[rt] = true;
                return 0;
        }
        /* No binary, no probe: say so without starting anything. */
        if (!path || access(path, X_OK) < 0) {
                snprintf(reason, sizeof(reason), "%s not found or not executable at %s",
                         sbx_runtime_to_string(rt), path ?: "(unset)");
                runtime_status_set(&pr->runtimes->status[rt], false, path, reason);
                return 0;
        }
        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        p->prober = pr;
        p->runtime = rt;
        params.userdata = p;
        r = probe_unit_start(*pr->systemd, &params, &p->unit);
        if (r < 0)
                return r;
        pr->probes[rt] = TAKE_PTR(p);
        return 0;
}

/* A probe that cannot start is a verdict too: the runtime's classes refused. */
static int probe_start_or_refuse(Prober *pr, SbxRuntime rt) {
        int r = probe_start(pr, rt);
        if (r < 0) {
                char reason[128];
                snprintf(reason, sizeof(reason), "cannot start the probe: %s", strerror(-r));
                runtime_status_set(&pr->runtimes->status[rt], false, runtime_path(pr, rt), reason);
                pr->no_verdict = true;
        }
        return r;
}

/* A walls probe that cannot start is refused without a verdict. */
static int walls_start(Prober *pr) {
        int r = walls_probe_start(&pr->walls);
        if (r < 0)
                pr->no_verdict = true;
        return r;
}

int prober_probe_walls(Prober *pr) {
        int r;

        assert(pr);
        r = walls_start(pr);
        if (r < 0)
                probes_ended(pr);
        return r;
}

int prober_probe_runtimes(Prober *pr, sd_bus_message *request) {
        int r = 0, k;

        assert(pr);
        /* Its failure is its verdict (every class refused), which Preflight
         * reports like any other: not an error of the call. */
        (void) walls_start(pr);

        for (int rt = SBX_RUNTIME_RUNSC; rt < _SBX_RUNTIME_MAX; rt++) {
                k = probe_start_or_refuse(pr, (SbxRuntime) rt);
                if (k < 0)
                        r = k;
        }
        if (request) {
                sd_bus_message **n = realloc(pr->preflight_waiters,
                                             (pr->n_preflight_waiters + 1) * sizeof(sd_bus_message *));
                if (!n)
                        return -ENOMEM;
                pr->preflight_waiters = n;
                pr->preflight_waiters[pr->n_preflight_waiters++] = sd_bus_message_ref(request);
        }
        /* Nothing started (every binary missing, every start refused):
         * the round is over now. */
        probes_ended(pr);
        return r;
}

static int on_reprobe_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Prober *pr = userdata;
        /* A round that never ends (a lost JobRemoved) still gets another;
         * one that ends re-arms this (schedule_next_round()). */
        (void) event_timer_arm(s, PROBE_INTERVAL_USEC, TIMER_HOUSEKEEPING);
        (void) prober_probe_runtimes(pr, NULL);
        return 0;
}

/* A runtime that breaks without its binary going away (an upgrade gone wrong,
 * a kernel change) is found by probing again now and then, besides Preflight()
 * and the re-probe after a sandboxed worker fails to start. */
int prober_start_reprobe_timer(Prober *pr) {
        assert(pr);
        /* The start-up round ended before there was a timer: its outcome
         * says when the next one is. */
        return event_add_timer(*pr->event, &pr->reprobe_timer, pr->next_round_usec ?: PROBE_INTERVAL_USEC,
                               TIMER_HOUSEKEEPING, on_reprobe_timer, pr, "reprobe-timer");
}

int prober_probe_runtimes_wait(Prober *pr, uint64_t timeout_usec) {
        uint64_t deadline = now_usec(CLOCK_MONOTONIC) + timeout_usec;

        assert(pr);
        while (probes_pending(pr)) {
                uint64_t now = now_usec(CLOCK_MONOTONIC);
                int r;
                if (now >= deadline) {
                        walls_probe_timeout(&pr->walls);
                        for (int i = 0; i < _SBX_RUNTIME_MAX; i++)
                                if (pr->probes[i])
                                        probe_finish(pr->probes[i], false, false, "probe timed out");
                        return -ETIMEDOUT;
                }
                r = sd_event_run(*pr->event, deadline - now);
                if (r < 0)
                        return r;
        }
        return 0;
}

void prober_done(Prober *pr) {
        pr->reprobe_timer = sd_event_source_disable_unref(pr->reprobe_timer);
        for (int i = 0; i < _SBX_RUNTIME_MAX; i++) {
                pr->probe_again[i] = false;
                pr->probes[i] = probe_free(pr->probes[i]);
        }
        walls_probe_done(&pr->walls);
        for (size_t i = 0; i < pr->n_preflight_waiters; i++)
                sd_bus_message_unref(pr->preflight_waiters[i]);
        free(pr->preflight_waiters);
        pr->preflight_waiters = NULL;
        pr->n_preflight_waiters = 0;
}
