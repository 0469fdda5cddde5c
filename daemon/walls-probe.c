/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>

#include "manager.h"
#include "probe.h"
#include "unit-props.h"

#define WALLS_PROBE_TIMEOUT_USEC (30 * USEC_PER_SEC)

struct WallsProbe {
        Manager *manager;
        char unit[64];
        int output_fd;
        sd_bus_slot *start_call;
};

static WallsProbe *walls_probe_free(WallsProbe *p) {
        if (!p)
                return NULL;
        sd_bus_slot_unref(p->start_call);
        safe_close(p->output_fd);
        free(p);
        return NULL;
}

static void walls_log(const WallsStatus *s, const char *unit) {
        log_struct(s->namespaces_private ? LOG_INFO : LOG_ERR,
                   s->namespaces_private ? "Walls probe: a worker's namespaces are private"
                                         : "Walls probe: a worker's namespaces are not private; every class is refused",
                   "SANDBOXD_UNIT", unit, "SANDBOXD_REASON", s->namespaces_reason,
                   "SANDBOXD_IP_FIREWALL", s->ip_firewall ? "available" : "unavailable",
                   "SANDBOXD_IP_FIREWALL_REASON", s->ip_firewall_reason, NULL);
}

static void walls_probe_finish(WallsProbe *p) {
        Manager *m = p->manager;

        walls_log(&m->runtimes.walls, p->unit);
        m->walls_probe = walls_probe_free(p);
        manager_probes_answer_waiters(m);
}

static void walls_probe_fail(WallsProbe *p, const char *reason) {
        walls_status_refuse(&p->manager->runtimes.walls, reason);
        walls_probe_finish(p);
}

bool manager_walls_job_removed(Manager *m, const char *unit, const char *result) {
        WallsProbe *p = m->walls_probe;
        char out[4096] = {}, reason[320];
        WallsReport report;
        size_t used = 0;

        if (!p || !streq(p->unit, unit))
                return false;
        /* A oneshot's job ends when its last command has exited: all the
         * probe wrote is in the pipe. */
        while (used < sizeof(out) - 1) {
                ssize_t n = read(p->output_fd, out + used, sizeof(out) - 1 - used);
                if (n <= 0)
                        break;
                used += (size_t) n;
        }
        if (walls_report_parse(out, &report) < 0) {
                snprintf(reason, sizeof(reason), "the namespace probe unit %s gave no usable answer (job %s); "
                         "see journalctl -u %s", unit, result, unit);
                walls_probe_fail(p, reason);
                return true;
        }
        walls_status_from_report(&m->runtimes.walls, &report, result);
        walls_probe_finish(p);
        return true;
}

static int on_walls_start_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        WallsProbe *p = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(reply);
        char reason[320];

        p->start_call = sd_bus_slot_unref(p->start_call);
        if (e) {
                snprintf(reason, sizeof(reason), "cannot start the namespace probe unit: %s", e->message ?: e->name);
                walls_probe_fail(p, reason);
        }
        return 0;
}

/* The probe's unit: a trusted worker's identity and walls (the same list the
 * worker gets), a privileged first step that reads PID 1's namespaces, which
 * the unprivileged probe cannot see under ProtectProc=invisible, then the
 * probe itself inside the walls. IPAddressAllow= is emptied so that its own
 * loopback connection tests IPAddressDeny=any. */
static int walls_probe_append_properties(Manager *m, sd_bus_message *msg, int output_fd) {
        WorkerUnitParams params = {
                .id = "probe-walls",
                .config = &m->config,
                .runtime = SBX_RUNTIME_SYSTEMD,
        };
        const char *probe_argv[] = { m->walls_path, "probe", NULL };
        const char *host_argv[] = { m->walls_path, "host", NULL };
        static const char * const privileged[] = { "privileged", NULL };
        int r;

        r = sd_bus_message_open_container(msg, 'a', "(sv)");
        if (r >= 0)
                r = sd_bus_message_append(msg, "(sv)(sv)(sv)",
                                          "StandardOutputFileDescriptor", "h", output_fd,
                                          "StandardError", "s", "journal",
                                          "DynamicUser", "b", 1);
        if (r >= 0)
                r = unit_append_helper_oneshot(msg, "sandboxd walls probe", WALLS_PROBE_TIMEOUT_USEC, m->walls_path,
                                               (char **) probe_argv);
        if (r >= 0)
                r = unit_append_exec(msg, "ExecStartPreEx", m->walls_path, (char **) host_argv, privileged);
        if (r >= 0)
                r = unit_append_hardening(msg, &params);
        if (r >= 0)
                r = sd_bus_message_append(msg, "(sv)", "IPAddressAllow", "a(iayu)", 0);
        if (r >= 0)
                r = sd_bus_message_close_container(msg);
        return r;
}

static int walls_probe_start(Manager *m) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *msg = NULL;
        _cleanup_close_ int write_fd = -1;
        WallsProbe *p;
        char id[9];
        int pipefd[2], r;

        if (m->walls_probe)
                return 0;
        r = random_hex_id(id, 8);
        if (r < 0)
                return r;
        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        p->manager = m;
        p->output_fd = -1;
        /* A "sandbox-" name: whatever applies to sandbox-*.service (a prefix
         * drop-in, say) applies to the probe as to the workers. */
        snprintf(p->unit, sizeof(p->unit), "sandbox-probe-walls-%s.service", id);
        if (pipe2(pipefd, O_CLOEXEC | O_NONBLOCK) < 0) {
                walls_probe_free(p);
                return -errno;
        }
        p->output_fd = pipefd[0];
        write_fd = pipefd[1];

        r = sd_bus_message_new_method_call(m->bus, &msg, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                           "org.freedesktop.systemd1.Manager", "StartTransientUnit");
        if (r >= 0)
                r = sd_bus_message_append(msg, "ss", p->unit, "fail");
        if (r >= 0)
                r = walls_probe_append_properties(m, msg, write_fd);
        if (r >= 0)
                r = sd_bus_message_append(msg, "a(sa(sv))", 0);
        if (r >= 0)
                r = sd_bus_call_async(m->bus, &p->start_call, msg, on_walls_start_reply, p, 0);
        if (r < 0) {
                walls_probe_free(p);
                return r;
        }
        m->walls_probe = p;
        return 0;
}

int manager_probe_walls(Manager *m) {
        char reason[128];
        int r = walls_probe_start(m);

        if (r >= 0)
                return 0;
        snprintf(reason, sizeof(reason), "cannot start the namespace probe: %s", strerror(-r));
        walls_status_refuse(&m->runtimes.walls, reason);
        log_struct(LOG_ERR, "Walls probe: cannot start it; every class is refused", "SANDBOXD_REASON", reason, NULL);
        return r;
}

void manager_walls_probe_timeout(Manager *m) {
        if (m->walls_probe)
                walls_probe_fail(m->walls_probe, "the namespace probe did not answer in time");
}

void manager_walls_probe_free(Manager *m) {
        m->walls_probe = walls_probe_free(m->walls_probe);
}
