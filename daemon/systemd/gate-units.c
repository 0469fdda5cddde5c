/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "gate-units.h"
#include "systemd-bus.h"
#include "util.h"

#define CHECK(expr) do { r = (expr); if (r < 0) return r; } while (0)

int worker_gate_unit_names(const char *id, char **ret_socket, char **ret_service) {
        if (asprintf(ret_socket, "sandbox-%s-gate.socket", id) < 0)
                return -ENOMEM;
        if (asprintf(ret_service, "sandbox-%s-gate.service", id) < 0) {
                free(*ret_socket);
                *ret_socket = NULL;
                return -ENOMEM;
        }
        return 0;
}

static int append_install_dir(sd_bus_message *m, const GateUnitParams *p) {
        _cleanup_free_ char *group = NULL;

        if (asprintf(&group, "--group=%s", p->socket_group) < 0)
                return -ENOMEM;
        /* Setgid: what sandboxd binds there while the worker sleeps
         * (worker-wake.h) gets the group too, with no CAP_CHOWN. */
        char *argv[] = { (char *) "/usr/bin/install", (char *) "-d", (char *) "--mode=2750", (char *) "--owner=root",
                         group, (char *) p->socket_dir, NULL };
        return unit_append_exec(m, "ExecStartPre", argv[0], argv, NULL);
}

/* The EndpointName as a second name of the socket, NAME.sock -> ID.sock
 * beside it, made by PID 1 once the directory is there, and removed when the socket
 * stops, only while it is still this worker's link: names are unique
 * among live workers, and a new worker may hold the name already. */
static int append_name_link(sd_bus_message *m, const GateUnitParams *p) {
        _cleanup_free_ char *link = NULL, *target = NULL, *name = NULL;
        int r;

        if (!p->name)
                return 0;
        if (asprintf(&link, "%s/%s.sock", p->socket_dir, p->name) < 0 || asprintf(&target, "%s.sock", p->id) < 0 ||
            asprintf(&name, "%s.sock", p->name) < 0)
                return -ENOMEM;
        char *ln[] = { (char *) "/bin/ln", (char *) "-sfn", target, link, NULL };
        char *rm[] = { (char *) "/usr/bin/find", (char *) p->socket_dir, (char *) "-maxdepth", (char *) "1",
                       (char *) "-name", name, (char *) "-lname", target, (char *) "-delete", NULL };
        CHECK(unit_append_exec(m, "ExecStartPre", ln[0], ln, NULL));
        return unit_append_exec(m, "ExecStopPost", rm[0], rm, NULL);
}

static int append_socket_unit(sd_bus_message *m, const char *socket, const GateUnitParams *p) {
        char addr[32];
        int r;

        CHECK(sd_bus_message_open_container(m, 'r', "sa(sv)"));
        CHECK(sd_bus_message_append(m, "s", socket));
        CHECK(sd_bus_message_open_container(m, 'a', "(sv)"));
        CHECK(sd_bus_message_append(m, "(sv)", "Description", "s", "sandboxd worker endpoint"));
        CHECK(sd_bus_message_open_container(m, 'r', "sv"));
        CHECK(sd_bus_message_append(m, "s", "Listen"));
        CHECK(sd_bus_message_open_container(m, 'v', "a(ss)"));
        CHECK(sd_bus_message_open_container(m, 'a', "(ss)"));
        CHECK(sd_bus_message_append(m, "(ss)", "Stream", p->socket_path));
        if (p->tcp_port > 0) {
                snprintf(addr, sizeof(addr), "127.0.0.1:%u", (unsigned) p->tcp_port);
                CHECK(sd_bus_message_append(m, "(ss)", "Stream", addr));
        }
        CHECK(sd_bus_message_close_container(m));
        CHECK(sd_bus_message_close_container(m));
        CHECK(sd_bus_message_close_container(m));
        /* The front (a web server in SocketGroup=) may connect; no one else
         * but root. The directory, 0750 of the same group, is made (or put
         * right) by PID 1 before the socket is bound: sandboxd holds no
         * CAP_CHOWN. A command with arguments, never a script. */
        CHECK(append_install_dir(m, p));
        CHECK(append_name_link(m, p));
        CHECK(sd_bus_message_append(m, "(sv)", "SocketUser", "s", "root"));
        CHECK(sd_bus_message_append(m, "(sv)", "SocketGroup", "s", p->socket_group));
        CHECK(sd_bus_message_append(m, "(sv)", "SocketMode", "u", (uint32_t) 0660));
        CHECK(sd_bus_message_append(m, "(sv)", "DirectoryMode", "u", (uint32_t) 0750));
        /* The endpoint goes with its worker: no socket file is left to answer for it. */
        CHECK(sd_bus_message_append(m, "(sv)", "RemoveOnStop", "b", 1));
        CHECK(sd_bus_message_append(m, "(sv)", "PartOf", "as", 1, p->worker_unit));
        CHECK(sd_bus_message_append(m, "(sv)", "CollectMode", "s", "inactive-or-failed"));
        CHECK(sd_bus_message_close_container(m));
        return sd_bus_message_close_container(m);
}

static int append_credentials(sd_bus_message *m, const GateUnitParams *p) {
        int r;

        CHECK(sd_bus_message_open_container(m, 'r', "sv"));
        CHECK(sd_bus_message_append(m, "s", "LoadCredential"));
        CHECK(sd_bus_message_open_container(m, 'v', "a(ss)"));
        CHECK(sd_bus_message_open_container(m, 'a', "(ss)"));
        CHECK(sd_bus_message_append(m, "(ss)", "gate-config", p->credential_socket));
        if (p->token)
                CHECK(sd_bus_message_append(m, "(ss)", "gate-token", p->credential_socket));
        CHECK(sd_bus_message_close_container(m));
        CHECK(sd_bus_message_close_container(m));
        return sd_bus_message_close_container(m);
}

/* IPAddressAllow= the handler's addresses only (loopback, the gVisor
 * sandbox's veth end), IPAddressDeny=any: where the BPF firewall works, a
 * second wall behind the gate's one configured destination. a(iayu). */
static int append_ip_walls(sd_bus_message *m) {
        static const uint8_t loopback[4] = { 127, 0, 0, 0 }, veth[4] = { 10, 255, 255, 0 }, any[4] = {};
        int r;

        CHECK(sd_bus_message_open_container(m, 'r', "sv"));
        CHECK(sd_bus_message_append(m, "s", "IPAddressAllow"));
        CHECK(sd_bus_message_open_container(m, 'v', "a(iayu)"));
        CHECK(sd_bus_message_open_container(m, 'a', "(iayu)"));
        CHECK(sd_bus_message_open_container(m, 'r', "iayu"));
        CHECK(sd_bus_message_append(m, "i", (int32_t) AF_INET));
        CHECK(sd_bus_message_append_array(m, 'y', loopback, 4));
        CHECK(sd_bus_message_append(m, "u", (uint32_t) 8));
        CHECK(sd_bus_message_close_container(m));
        CHECK(sd_bus_message_open_container(m, 'r', "iayu"));
        CHECK(sd_bus_message_append(m, "i", (int32_t) AF_INET));
        CHECK(sd_bus_message_append_array(m, 'y', veth, 4));
        CHECK(sd_bus_message_append(m, "u", (uint32_t) 30));
        CHECK(sd_bus_message_close_container(m));
        CHECK(sd_bus_message_close_container(m));
        CHECK(sd_bus_message_close_container(m));
        CHECK(sd_bus_message_close_container(m));
        CHECK(sd_bus_message_open_container(m, 'r', "sv"));
        CHECK(sd_bus_message_append(m, "s", "IPAddressDeny"));
        CHECK(sd_bus_message_open_container(m, 'v', "a(iayu)"));
        CHECK(sd_bus_message_open_container(m, 'a', "(iayu)"));
        CHECK(sd_bus_message_open_container(m, 'r', "iayu"));
        CHECK(sd_bus_message_append(m, "i", (int32_t) AF_INET));
        CHECK(sd_bus_message_append_array(m, 'y', any, 4));
        CHECK(sd_bus_message_append(m, "u", (uint32_t) 0));
        CHECK(sd_bus_message_close_container(m));
        CHECK(sd_bus_message_close_container(m));
        CHECK(sd_bus_message_close_container(m));
        return sd_bus_message_close_container(m);
}

/* What systemd-analyze security counts, as the egress proxy's
 * (egress-units.c) and more: the gate needs no netlink and no host
 * network, it lives in the worker's namespace. */
static int append_hardening(sd_bus_message *m) {
        int r;

        CHECK(sd_bus_message_append(m, "(sv)", "DynamicUser", "b", 1));
        CHECK(sd_bus_message_append(m, "(sv)", "NoNewPrivileges", "b", 1));
        CHECK(sd_bus_message_append(m, "(sv)", "CapabilityBoundingSet", "t", (uint64_t) 0));
        CHECK(sd_bus_message_append(m, "(sv)", "AmbientCapabilities", "t", (uint64_t) 0));
        CHECK(sd_bus_message_append(m, "(sv)", "ProtectSystem", "s", "strict"));
        CHECK(sd_bus_message_append(m, "(sv)", "ProtectHome", "s", "yes"));
        CHECK(sd_bus_message_append(m, "(sv)", "PrivateTmp", "b", 1));
        CHECK(sd_bus_message_append(m, "(sv)", "PrivateDevices", "b", 1));
        CHECK(sd_bus_message_append(m, "(sv)", "PrivateMounts", "b", 1));
        CHECK(sd_bus_message_append(m, "(sv)", "ProtectKernelTunables", "b", 1));
        CHECK(sd_bus_message_append(m, "(sv)", "ProtectKernelModules", "b", 1));
        CHECK(sd_bus_message_append(m, "(sv)", "ProtectKernelLogs", "b", 1));
        CHECK(sd_bus_message_append(m, "(sv)", "ProtectControlGroups", "b", 1));
        CHECK(sd_bus_message_append(m, "(sv)", "ProtectClock", "b", 1));
        CHECK(sd_bus_message_append(m, "(sv)", "ProtectHostname", "b", 1));
        CHECK(sd_bus_message_append(m, "(sv)", "ProtectProc", "s", "invisible"));
        CHECK(sd_bus_message_append(m, "(sv)", "ProcSubset", "s", "pid"));
        CHECK(sd_bus_message_append(m, "(sv)", "RestrictNamespaces", "t", (uint64_t) 0));
        CHECK(sd_bus_message_append(m, "(sv)", "RestrictAddressFamilies", "(bas)", 1, 2, "AF_UNIX", "AF_INET"));
        CHECK(sd_bus_message_append(m, "(sv)", "MemoryDenyWriteExecute", "b", 1));
        CHECK(sd_bus_message_append(m, "(sv)", "LockPersonality", "b", 1));
        CHECK(sd_bus_message_append(m, "(sv)", "RestrictRealtime", "b", 1));
        CHECK(sd_bus_message_append(m, "(sv)", "RestrictSUIDSGID", "b", 1));
        CHECK(sd_bus_message_append(m, "(sv)", "RemoveIPC", "b", 1));
        CHECK(sd_bus_message_append(m, "(sv)", "KeyringMode", "s", "private"));
        CHECK(sd_bus_message_append(m, "(sv)", "UMask", "u", (uint32_t) 0077));
        CHECK(sd_bus_message_append(m, "(sv)", "DevicePolicy", "s", "closed"));
        CHECK(sd_bus_message_append(m, "(sv)", "SystemCallArchitectures", "as", 1, "native"));
        CHECK(sd_bus_message_append(m, "(sv)", "SystemCallFilter", "(bas)", 1, 2, "@system-service", "seccomp"));
        CHECK(sd_bus_message_append(m, "(sv)", "SystemCallFilter", "(bas)", 0, 2, "@privileged", "@resources"));
        CHECK(sd_bus_message_append(m, "(sv)", "SystemCallErrorNumber", "i", (int32_t) EPERM));
        return append_ip_walls(m);
}

static int append_service_unit(sd_bus_message *m, const char *service, const GateUnitParams *p) {
        int r;

        CHECK(sd_bus_message_open_container(m, 'r', "sa(sv)"));
        CHECK(sd_bus_message_append(m, "s", service));
        CHECK(sd_bus_message_open_container(m, 'a', "(sv)"));
        CHECK(sd_bus_message_append(m, "(sv)", "Description", "s", "sandboxd worker endpoint gate"));
        CHECK(sd_bus_message_append(m, "(sv)", "ExecStart", "a(sasb)", 1, p->gate_path, 1, p->gate_path, 0));
        /* STATUS= carries the request counts `sandboxctl endpoints` shows
         * and sandboxd's idle reaper reads. Type=notify: until READY=1 the
         * unit is "activating", and sandboxd takes the worker for busy (a
         * connection started the gate and waits for it). */
        CHECK(sd_bus_message_append(m, "(sv)", "Type", "s", "notify"));
        CHECK(sd_bus_message_append(m, "(sv)", "NotifyAccess", "s", "main"));
        CHECK(sd_bus_message_append(m, "(sv)", "PartOf", "as", 1, p->worker_unit));
        CHECK(sd_bus_message_append(m, "(sv)", "CollectMode", "s", "inactive-or-failed"));
        CHECK(append_credentials(m, p));
        /* The worker's network namespace, where its handler listens: the
         * gate's listeners came from the socket unit, on the host. */
        CHECK(sd_bus_message_append(m, "(sv)", "PrivateNetwork", "b", 1));
        CHECK(sd_bus_message_append(m, "(sv)", "JoinsNamespaceOf", "as", 1, p->worker_unit));
        /* A request that comes while the worker starts or resumes starts
         * the gate only once the worker's unit is up: a gate that ran
         * first was left outside the namespace of a restored sandbox's
         * link, and answered 502 for its whole life. */
        CHECK(sd_bus_message_append(m, "(sv)", "After", "as", 1, p->worker_unit));
        /* Should a connection start the gate before the worker runs, the
         * worker joins the gate's namespaces: without PrivateIPC= here its
         * own would be dropped (as egress-units.c's socket says). */
        CHECK(sd_bus_message_append(m, "(sv)", "PrivateIPC", "b", 1));
        /* JoinsNamespaceOf= shares /tmp too (DynamicUser= forces
         * PrivateTmp=): the gate has no use for the worker's. */
        CHECK(sd_bus_message_append(m, "(sv)", "InaccessiblePaths", "as", 2, "/tmp", "/var/tmp"));
        CHECK(append_hardening(m));
        /* The gate talks to the journal and to the handler, never to D-Bus. */
        CHECK(systemd_append_no_bus(m));
        CHECK(sd_bus_message_append(m, "(sv)", "LogRateLimitIntervalUSec", "t", (uint64_t) 0));
        CHECK(sd_bus_message_append(m, "(sv)", "MemoryMax", "t", (uint64_t) 256 << 20));
        CHECK(sd_bus_message_append(m, "(sv)", "TasksMax", "t", (uint64_t) 8));
        CHECK(sd_bus_message_close_container(m));
        return sd_bus_message_close_container(m);
}

int worker_gate_append_aux_entries(sd_bus_message *m, const GateUnitParams *p) {
        _cleanup_free_ char *socket = NULL, *service = NULL;
        int r;

        CHECK(worker_gate_unit_names(p->id, &socket, &service));
        CHECK(append_socket_unit(m, socket, p));
        return append_service_unit(m, service, p);
}
