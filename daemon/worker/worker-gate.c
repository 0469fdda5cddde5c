/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>

#include "broker-secret.h"
#include "errors.h"
#include "gate-config.h"
#include "gate-units.h"
#include "systemd-bus.h"
#include "unit-props.h"
#include "unit-stop.h"
#include "worker-gate.h"
#include "worker-veth.h"

/* A gate still draining has its own timeouts (sandbox-gate), within
 * systemd's stop timeout. */
#define GATE_RESTART_TIMEOUT_USEC (100 * USEC_PER_SEC)

/* The socket unit makes the directory (sandboxd has no CAP_CHOWN): the
 * group must exist, or the worker's start would fail on it less clearly. */
static int check_group(const char *group, SbxError *error) {
        if (!getgrnam(group))
                return sbx_error_set(error, -ENOENT, SBX_ERROR_INVALID_ENDPOINT,
                                     "[Endpoints] SocketGroup=%s names no group on this host", group);
        return 0;
}

int worker_gate_prepare(Worker *w, SbxError *error) {
        const SbxEndpoint *e = &w->spec.endpoint;
        GateConfig c;
        int r;

        if (!sbx_endpoint_wanted(e))
                return 0;
        gate_config_init(&c);
        snprintf(c.worker_id, sizeof(c.worker_id), "%s", w->id);
        /* A gVisor worker's handler listens on gVisor's own stack, at the
         * sandbox's end of its veth; any other on the namespace's loopback. */
        snprintf(c.upstream_host, sizeof(c.upstream_host), "%s",
                 w->runtime == SBX_RUNTIME_RUNSC ? SBX_VETH_SANDBOX_ADDR : "127.0.0.1");
        c.upstream_port = e->port;
        c.max_request_bytes = e->max_request_bytes;
        c.max_response_bytes = e->max_response_bytes;
        c.timeout_usec = e->timeout_usec;
        c.max_concurrent = e->max_concurrent;
        c.public = e->public;
        free(w->gate.config.data);
        w->gate.config = (SbxCredential) { .name = (char *) GATE_CONFIG_CREDENTIAL };
        r = gate_config_format(&c, (char **) &w->gate.config.data);
        if (r < 0)
                return r;
        w->gate.config.size = strlen((char *) w->gate.config.data);
        if (!w->gate.socket) {
                r = worker_gate_unit_names(w->id, &w->gate.socket, &w->gate.service);
                if (r < 0)
                        return r;
        }
        return check_group(w->owned_by->config->endpoints_socket_group, error);
}

int worker_gate_credential(const Worker *w, const char *name, const uint8_t **ret_data, size_t *ret_size) {
        if (streq(name, GATE_CONFIG_CREDENTIAL) && w->gate.config.data) {
                *ret_data = w->gate.config.data;
                *ret_size = w->gate.config.size;
                return 0;
        }
        if (streq(name, GATE_TOKEN_CREDENTIAL) && w->spec.endpoint.token && w->spec.endpoint.token_size > 0) {
                *ret_data = w->spec.endpoint.token;
                *ret_size = w->spec.endpoint.token_size;
                return 0;
        }
        return -ENOENT;
}

int worker_gate_pick_port(const Worker *first, const SbxConfig *c) {
        if (c->endpoints_port_first == 0)
                return 0;
        for (unsigned port = c->endpoints_port_first; port <= c->endpoints_port_last; port++) {
                bool taken = false;
                for (const Worker *o = first; o && !taken; o = o->next)
                        taken = worker_is_alive(o) && o->gate.tcp_port == port;
                if (!taken)
                        return (int) port;
        }
        return -EADDRNOTAVAIL;
}

bool worker_gate_seen_status(WorkerGateSeen *seen, const char *status) {
        GateStatus now;
        bool activity;

        if (gate_status_parse(status, &now) < 0) {
                /* No status yet: the gate (re)started and served nothing. */
                seen->served = 0;
                seen->open = 0;
                return false;
        }
        activity = (now.served != seen->served && now.served > 0) || (seen->open > 0 && now.open == 0);
        seen->served = now.served;
        seen->open = now.open;
        return activity;
}

bool worker_gate_seen_state(WorkerGateSeen *seen, const char *active_state) {
        bool was = seen->starting;

        seen->starting = streq(active_state, "activating");
        /* A gate gone (killed before it said its last count, say) has
         * nothing under way. */
        if (streq(active_state, "inactive") || streq(active_state, "failed"))
                seen->open = 0;
        return was && !seen->starting;
}

bool worker_gate_busy(const Worker *w) {
        return w->gate.seen.open > 0 || w->gate.seen.starting;
}

/* The one property of IFACE's that tells of activity, as read from MSG
 * (a PropertiesChanged at its dictionary): whether it does. */
static bool read_activity(sd_bus_message *msg, WorkerGateSeen *seen, bool service_iface) {
        const char *want = service_iface ? "StatusText" : "ActiveState";
        const char *name, *contents, *value;

        while (sd_bus_message_enter_container(msg, 'e', "sv") > 0) {
                if (sd_bus_message_read(msg, "s", &name) < 0 || sd_bus_message_peek_type(msg, NULL, &contents) < 0)
                        return false;
                if (!streq(name, want) || !streq(contents, "s")) {
                        if (sd_bus_message_skip(msg, "v") < 0 || sd_bus_message_exit_container(msg) < 0)
                                return false;
                        continue;
                }
                if (sd_bus_message_read(msg, "v", "s", &value) < 0)
                        return false;
                return service_iface ? worker_gate_seen_status(seen, value) : worker_gate_seen_state(seen, value);
        }
        return false;
}

static int on_gate_properties_changed(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        Worker *w = userdata;
        const char *iface;
        bool service_iface;

        if (sd_bus_message_read(msg, "s", &iface) < 0)
                return 0;
        service_iface = streq(iface, SYSTEMD_SERVICE_IFACE);
        if ((!service_iface && !streq(iface, SYSTEMD_UNIT_IFACE)) ||
            sd_bus_message_enter_container(msg, 'a', "{sv}") < 0)
                return 0;
        /* Seen in every state, so a count from before a suspend is not
         * taken for a request after it; only a running worker's idle clock
         * is set back. */
        if (read_activity(msg, &w->gate.seen, service_iface) && w->state == WORKER_RUNNING && w->channel)
                channel_touch(w->channel);
        return 0;
}

int worker_gate_watch(Worker *w) {
        _cleanup_free_ char *path = NULL;
        int r;

        if (!w->gate.service)
                return 0;
        r = systemd_unit_path(w->gate.service, &path);
        if (r < 0)
                return r;
        w->gate.status_match = sd_bus_slot_unref(w->gate.status_match);
        return systemd_match_unit_properties_async(worker_systemd(w), &w->gate.status_match, path,
                                                   on_gate_properties_changed, w);
}

bool worker_gate_name_taken(const Worker *first, const char *name) {
        for (const Worker *o = first; o; o = o->next)
                if (worker_is_alive(o) && o->spec.endpoint.name && streq(o->spec.endpoint.name, name))
                        return true;
        return false;
}

int worker_gate_append_aux(sd_bus_message *m, const Worker *w, const WorkerUnitEnv *env) {
        _cleanup_free_ char *path = NULL;
        int r;

        if (!w->gate.service)
                return 0;
        r = sbx_endpoint_socket_path(w->id, &path);
        if (r < 0)
                return r;
        return worker_gate_append_aux_entries(m, &(GateUnitParams) {
                .id = w->id,
                .worker_unit = w->unit,
                .gate_path = env->gate_path,
                .credential_socket = SBX_CREDENTIAL_SOCKET,
                .socket_path = path,
                .socket_dir = SBX_ENDPOINTS_DIR,
                .socket_group = env->config->endpoints_socket_group,
                .tcp_port = w->gate.tcp_port,
                .token = !w->spec.endpoint.public,
                .name = w->spec.endpoint.name,
        });
}

int worker_gate_halt(Worker *w, bool service, uint64_t timeout_usec, unit_halt_done_t done, UnitHalt **ret) {
        /* The socket alone: its stop must not take the worker's unit, which
         * Requires= it, with it (nor start the gate's own stop yet). */
        return unit_halt_start(worker_systemd(w), worker_event(w), service ? w->gate.service : w->gate.socket,
                               service ? "replace" : "ignore-dependencies", timeout_usec, done, w, ret);
}

static int on_gate_start_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        Worker *w = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(reply);

        w->gate.start_call = sd_bus_slot_unref(w->gate.start_call);
        if (e)
                log_struct(LOG_ERR, "systemd refused to start the worker's gate socket again: its endpoint is closed",
                           "SANDBOXD_WORKER_ID", w->id, "SANDBOXD_UNIT", w->gate.socket,
                           "SANDBOXD_REASON", e->message ?: e->name, NULL);
        return 0;
}

static void on_gate_service_down(UnitHalt *h, bool down, void *userdata) {
        Worker *w = userdata;
        int r;

        w->gate.restart = unit_halt_free(w->gate.restart);
        if (!down)
                log_struct(LOG_WARNING, "The worker's gate did not stop; its socket is started all the same",
                           "SANDBOXD_WORKER_ID", w->id, "SANDBOXD_UNIT", w->gate.service, NULL);
        r = systemd_start_unit_async(worker_systemd(w), &w->gate.start_call, w->gate.socket, "replace",
                                     on_gate_start_reply, w);
        if (r < 0)
                log_struct(LOG_ERR, "Failed to start the worker's gate socket again: its endpoint is closed",
                           "SANDBOXD_WORKER_ID", w->id, "SANDBOXD_REASON", strerror(-r), NULL);
}

static int on_gate_socket_state(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        Worker *w = userdata;
        SystemdUnitState s;
        int r;

        w->gate.start_call = sd_bus_slot_unref(w->gate.start_call);
        if (systemd_unit_state_parse(reply, &s) >= 0 && streq(s.active_state, "active"))
                return 0;       /* it listens: nothing to do */
        /* systemd starts no socket whose service still runs ("already
         * active"), as a gate still draining does after a restart of
         * sandboxd: it ends first. */
        w->gate.restart = unit_halt_free(w->gate.restart);
        r = unit_halt_start(worker_systemd(w), worker_event(w), w->gate.service, "replace", GATE_RESTART_TIMEOUT_USEC,
                            on_gate_service_down, w, &w->gate.restart);
        if (r < 0)
                log_struct(LOG_ERR, "Failed to stop the worker's gate before starting its socket again: its "
                           "endpoint is closed", "SANDBOXD_WORKER_ID", w->id, "SANDBOXD_REASON", strerror(-r),
                           NULL);
        return 0;
}

int worker_gate_start(Worker *w) {
        _cleanup_free_ char *path = NULL;
        int r;

        if (!w->gate.service)
                return 0;
        /* A stop of the socket still being asked again would stop it
         * again (one connection's calls stay in order). */
        unit_stops_cancel(worker_unit_stops(w), w->gate.socket);
        r = systemd_unit_path(w->gate.socket, &path);
        if (r < 0)
                return r;
        w->gate.start_call = sd_bus_slot_unref(w->gate.start_call);
        return systemd_unit_state_read_async(worker_systemd(w), &w->gate.start_call, path, on_gate_socket_state, w);
}

#define TOKEN_FD_NAME "gate-token"
#define FDNAME_MAX 128

int worker_gate_persist(Worker *w) {
        const SbxEndpoint *e = &w->spec.endpoint;
        char name[FDNAME_MAX];
        _cleanup_close_ int fd = -1;
        int r;

        if (!w->gate.service || !e->token)
                return 0;
        r = broker_secret_fdname(w->id, TOKEN_FD_NAME, name, sizeof(name));
        if (r < 0)
                return r;
        fd = broker_secret_memfd(e->token, e->token_size);
        if (fd < 0)
                return fd;
        /* A resumed worker's is there from before its suspend: one entry per name. */
        (void) fdstore_remove(name);
        return fdstore_push(name, fd);   /* sends a copy: ours is closed here */
}

void worker_gate_forget(Worker *w) {
        SbxEndpoint *e = &w->spec.endpoint;
        char name[FDNAME_MAX];

        if (!w->gate.service)
                return;
        if (broker_secret_fdname(w->id, TOKEN_FD_NAME, name, sizeof(name)) >= 0)
                (void) fdstore_remove(name);
        if (e->token)
                erase_and_free(e->token, e->token_size);
        e->token = NULL;
        e->token_size = 0;
}

int worker_gate_restore(Worker *w, char *config, char *endpoint_name, uint64_t port, FdStore *fds) {
        _cleanup_free_ char *text = config, *endpoint = endpoint_name;
        SbxEndpoint *e = &w->spec.endpoint;
        char name[FDNAME_MAX];
        _cleanup_close_ int fd = -1;
        GateConfig c;
        unsigned bad;
        int r;

        if (!text)
                return 0;
        if (gate_config_parse(text, strlen(text), &c, &bad) < 0 || port > UINT16_MAX)
                return -EINVAL;
        *e = (SbxEndpoint) {
                .requested = true,
                .set = ENDPOINT_HAS_PORT | ENDPOINT_HAS_MAX_REQUEST | ENDPOINT_HAS_MAX_RESPONSE | ENDPOINT_HAS_TIMEOUT |
                       ENDPOINT_HAS_MAX_CONCURRENT | (c.public ? ENDPOINT_HAS_PUBLIC : ENDPOINT_HAS_TOKEN),
                .port = c.upstream_port,
                .max_request_bytes = c.max_request_bytes,
                .max_response_bytes = c.max_response_bytes,
                .timeout_usec = c.timeout_usec,
                .max_concurrent = c.max_concurrent,
                .public = c.public,
                .name = TAKE_PTR(endpoint),
        };
        w->spec.set |= SPEC_HAS_ENDPOINT;
        w->gate.tcp_port = (uint16_t) port;
        w->gate.config = (SbxCredential) { .name = (char *) GATE_CONFIG_CREDENTIAL, .size = strlen(text) };
        w->gate.config.data = (uint8_t *) TAKE_PTR(text);
        r = worker_gate_unit_names(w->id, &w->gate.socket, &w->gate.service);
        if (r < 0 || c.public)
                return r;
        r = broker_secret_fdname(w->id, TOKEN_FD_NAME, name, sizeof(name));
        if (r < 0)
                return r;
        fd = fdstore_take(fds, name);
        if (fd < 0)
                return -ENOKEY;
        r = broker_secret_read(fd, SBX_ENDPOINT_TOKEN_MAX, &e->token, &e->token_size);
        if (r < 0) {
                (void) fdstore_remove(name);
                return r == -ENOMEM ? r : -ENOKEY;
        }
        return 0;
}
