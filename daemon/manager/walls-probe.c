/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>

#include "manager.h"
#include "preflight.h"
#include "probe-unit.h"
#include "unit-props.h"
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

static void walls_probe_finish(Manager *m) {
        walls_log(&m->runtimes.walls, probe_unit_name(m->walls_probe));
        m->walls_probe = probe_unit_free(m->walls_probe);
        preflight_answer_waiters(m);
}

static void walls_probe_fail(Manager *m, const char *reason) {
        walls_status_refuse(&m->runtimes.walls, reason);
        walls_probe_finish(m);
}

static void on_walls_probe_done(ProbeUnit *u, const sd_bus_error *start_error, const char *result,
                                const char *output, void *userdata) {
        Manager *m = userdata;
        const char *unit = probe_unit_name(u);
        char reason[320];
        WallsReport report;

        if (start_error) {
                snprintf(reason, sizeof(reason), "cannot start the namespace probe unit: %s",
                         start_error->message ?: start_error->name);
                walls_probe_fail(m, reason);
        } else if (walls_report_parse(output, &report) < 0) {
                snprintf(reason, sizeof(reason), "the namespace probe unit %s gave no usable answer (job %s); "
                         "see journalctl -u %s", unit, result, unit);
                walls_probe_fail(m, reason);
        } else {
                walls_status_from_report(&m->runtimes.walls, &report, result);
                walls_probe_finish(m);
        }
}

bool manager_walls_job_removed(Manager *m, const char *unit, const char *result) {
        assert(m);
        return probe_unit_job_removed(m->walls_probe, unit, result);
}

/* The probe's unit: a trusted worker's identity and walls (the same list the
 * worker gets), a privileged first step that reads PID 1's namespaces, which
 * the unprivileged probe cannot see under ProtectProc=invisible, then the
 * probe itself inside the walls. IPAddressAllow= is emptied so that its own
 * loopback connection tests IPAddressDeny=any. */
static int walls_probe_append_properties(sd_bus_message *msg, void *userdata) {
        Manager *m = userdata;
        WorkerUnitParams params = {
                .id = "probe-walls",
                .config = &m->config,
                .runtime = SBX_RUNTIME_SYSTEMD,
        };
        const char *host_argv[] = { m->walls_path, "host", NULL };
        static const char * const privileged[] = { "privileged", NULL };
        int r;

        r = sd_bus_message_append(msg, "(sv)", "DynamicUser", "b", 1);
        if (r >= 0)
                r = unit_append_exec(msg, "ExecStartPreEx", m->walls_path, (char **) host_argv, privileged);
        if (r >= 0)
                r = unit_append_hardening(msg, &params);
        if (r >= 0)
                r = sd_bus_message_append(msg, "(sv)", "IPAddressAllow", "a(iayu)", 0);
        return r;
}

int manager_probe_walls(Manager *m) {
        const char *probe_argv[] = { m->walls_path, "probe", NULL };
        const ProbeUnitParams params = {
                .kind = "walls",
                .description = "sandboxd walls probe",
                .timeout_usec = WALLS_PROBE_TIMEOUT_USEC,
                .path = m->walls_path,
                .argv = (char **) probe_argv,
                .append = walls_probe_append_properties,
                .done = on_walls_probe_done,
                .userdata = m,
        };
        char reason[128];
        int r;

        assert(m);
        if (m->walls_probe)
                return 0;
        r = probe_unit_start(m->systemd, &params, &m->walls_probe);
        if (r >= 0)
                return 0;
        snprintf(reason, sizeof(reason), "cannot start the namespace probe: %s", strerror(-r));
        walls_status_refuse(&m->runtimes.walls, reason);
        log_struct(LOG_ERR, "Walls probe: cannot start it; every class is refused", "SANDBOXD_REASON", reason, NULL);
        return r;
}

void manager_walls_probe_timeout(Manager *m) {
        if (m->walls_probe)
                walls_probe_fail(m, "the namespace probe did not answer in time");
}

void manager_walls_probe_free(Manager *m) {
        m->walls_probe = probe_unit_free(m->walls_probe);
}
