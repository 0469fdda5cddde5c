/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A worker's inbound gate as a pair of units (sandbox-gate, gate.h):
 * sandbox-<id>-gate.socket listens on the host, on the UNIX socket
 * /run/sandboxd-endpoints/<id>.sock (0660, group [Endpoints] SocketGroup=)
 * and, given a port, on 127.0.0.1:<port>; sandbox-<id>-gate.service, started
 * by the first connection, runs in the worker's network namespace
 * (PrivateNetwork= with JoinsNamespaceOf= the worker's unit), where the one
 * address it connects to is the worker's handler, under its own dynamic user
 * and with the egress proxy's hardening. Its settings and the caller's token
 * come from sandboxd's credential socket, never by value. */

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-bus.h>

typedef struct GateUnitParams {
        const char *id;
        const char *worker_unit;        /* sandbox-<id>.service */
        const char *gate_path;          /* the sandbox-gate binary */
        const char *credential_socket;
        const char *socket_path;        /* /run/sandboxd-endpoints/<id>.sock */
        const char *socket_dir;         /* /run/sandboxd-endpoints */
        const char *socket_group;
        uint16_t tcp_port;              /* 0: the UNIX socket only */
        bool token;                     /* load "gate-token" (not for a public endpoint) */
        const char *name;               /* EndpointName: <name>.sock -> <id>.sock; NULL: none */
} GateUnitParams;

int worker_gate_unit_names(const char *id, char **ret_socket, char **ret_service);

/* Appends the pair's two aux entries (sa(sv)) inside StartTransientUnit's
 * a(sa(sv)). */
int worker_gate_append_aux_entries(sd_bus_message *m, const GateUnitParams *p);
