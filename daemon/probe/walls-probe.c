/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>

#include "probe-unit.h"
#include "unit-props.h"
#include "util.h"
#include "walls-probe.h"

#define WALLS_PROBE_TIMEOUT_USEC (30 * USEC_PER_SEC)

static void walls_log(const WallsStatus *s, const char *unit) {
        log_struct(s->namespaces_private ? LOG_INFO : LOG_ERR,
                   s->namespaces_private ? "Walls probe: a worker's namespaces are private"
                                         : "Walls probe: a worker's namespaces are not private; every class is refused",
                   "SANDBOXD_UNIT", unit, "SANDBOXD_REASON", s->namespaces_reason,
                   "SANDBOXD_IP_FIREWALL", s->ip_firewall ? "available" : "unavailable",
                   "SANDBOXD_IP_FIREWALL_REASON", s->ip_firewall_reason, NULL);
}

static void walls_probe_finish(WallsProbe *w) {
        walls_log(w->status, probe_unit_name(w->unit));
        w->unit = probe_unit_free(w->unit);
        /* Started before ended() so that whoever waits for a verdict (a
         * Preflight) waits for this one too. */
        if (w->again) {
                w->again = false;
                (void) walls_probe_start(w);
        }
        w->ended(w);
}

static void walls_probe_fail(WallsProbe *w, const char *reason) {
        walls_status_refuse(w->status, reason);
        walls_probe_finish(w);
}

static void on_walls_probe_done(ProbeUnit *u, const sd_bus_error *start_error, const char *result,
                                const char *output, void *userdata) {
        WallsProbe *w = userdata;
        const char *unit = probe_unit_name(u);
        char reason[320];
        WallsReport report;

        if (start_error) {
                snprintf(reason, sizeof(reason), "cannot start the namespace probe unit: %s",
                         start_error->message ?: start_error->name);
                walls_probe_fail(w, reason);
        } else if (walls_report_parse(output, &report) < 0) {
                snprintf(reason, sizeof(reason), "the namespace probe unit %s gave no usable answer (job %s); "
                         "see journalctl -u %s", unit, result, unit);
                walls_probe_fail(w, reason);
        } else {
                walls_status_from_report(w->status, &report, result);
                walls_probe_finish(w);
        }
}

bool walls_probe_job_removed(WallsProbe *w, const char *unit, const char *result) {
        assert(w);
        return probe_unit_job_removed(w->unit, unit, result);
}

/* The probe's unit: a trusted worker's identity and walls (the same list the
 * worker gets), a privileged first step that reads PID 1's namespaces, which
 * the unprivileged probe cannot see under ProtectProc=invisible, then the
 * probe itself inside the walls. IPAddressAllow= is emptied so that its own
 * loopback connection tests IPAddressDeny=any. */
static int walls_probe_append_properties(sd_bus_message *msg, void *userdata) {
        WallsProbe *w = userdata;
        WorkerUnitParams params = {
                .id = "probe-walls",
                .config = w->config,
                .runtime = SBX_RUNTIME_SYSTEMD,
        };
        const char *host_argv[] = { *w->walls_path, "host", NULL };
        static const char * const privileged[] = { "privileged", NULL };
        int r;

        r = sd_bus_message_append(msg, "(sv)", "DynamicUser", "b", 1);
        if (r >= 0)
                r = unit_append_exec(msg, "ExecStartPreEx", *w->walls_path, (char **) host_argv, privileged);
        if (r >= 0)
                r = unit_append_hardening(msg, &params);
        if (r >= 0)
                r = sd_bus_message_append(msg, "(sv)", "IPAddressAllow", "a(iayu)", 0);
        return r;
}

int walls_probe_start(WallsProbe *w) {
        const char *probe_argv[] = { *w->walls_path, "probe", NULL };
        const ProbeUnitParams params = {
                .kind = "walls",
                .description = "sandboxd walls probe",
                .timeout_usec = WALLS_PROBE_TIMEOUT_USEC,
                .path = *w->walls_path,
                .argv = (char **) probe_argv,
                .append = walls_probe_append_properties,
                .done = on_walls_probe_done,
                .userdata = w,
        };
        char reason[128];
        int r;

        assert(w);
        if (w->unit) {
                w->again = true;
                return 0;
        }
        r = probe_unit_start(*w->systemd, &params, &w->unit);
        if (r >= 0)
                return 0;
        snprintf(reason, sizeof(reason), "cannot start the namespace probe: %s", strerror(-r));
        walls_status_refuse(w->status, reason);
        log_struct(LOG_ERR, "Walls probe: cannot start it; every class is refused", "SANDBOXD_REASON", reason, NULL);
        return r;
}

void walls_probe_timeout(WallsProbe *w) {
        if (w->unit)
                walls_probe_fail(w, "the namespace probe did not answer in time");
}

void walls_probe_done(WallsProbe *w) {
        w->again = false;
        w->unit = probe_unit_free(w->unit);
}
