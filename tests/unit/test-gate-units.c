/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A worker's gate pair as StartTransientUnit's aux units: where it listens,
 * whose namespace it joins, how its credentials arrive (never by value),
 * and the hardening systemd-analyze security counts (the score itself is
 * held by tests/attacks/endpoint.sh). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <cmocka.h>

#include "gate-units.h"
#include "util.h"
#include "worker-gate.h"
#include "worker.h"
#include "test-bus.h"

static char *dump(const GateUnitParams *p) {
        int peer = -1;
        sd_bus *bus = test_bus_new_offline(&peer);
        sd_bus_message *m = NULL;
        char *d;

        assert_non_null(bus);
        assert_int_equal(sd_bus_message_new_method_call(bus, &m, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                                        "org.freedesktop.systemd1.Manager", "StartTransientUnit"), 0);
        assert_true(sd_bus_message_open_container(m, 'a', "(sa(sv))") >= 0);
        assert_int_equal(worker_gate_append_aux_entries(m, p), 0);
        assert_true(sd_bus_message_close_container(m) >= 0);
        d = test_message_dump(m);
        assert_non_null(d);
        sd_bus_message_unref(m);
        close(peer);
        sd_bus_close_unref(bus);
        return d;
}

static const GateUnitParams params = {
        .id = "0123456789ab",
        .worker_unit = "sandbox-0123456789ab.service",
        .gate_path = "/usr/libexec/sandboxd/sandbox-gate",
        .credential_socket = "/run/sandboxd/credentials.sock",
        .socket_path = "/run/sandboxd-endpoints/0123456789ab.sock",
        .socket_dir = "/run/sandboxd-endpoints",
        .socket_group = "www-data",
        .tcp_port = 20100,
        .token = true,
};

static void test_pair(void **state) {
        _cleanup_free_ char *d = dump(&params);
        static const char *const present[] = {
                "\"sandbox-0123456789ab-gate.socket\"", "\"sandbox-0123456789ab-gate.service\"",
                "\"/run/sandboxd-endpoints/0123456789ab.sock\"", "\"127.0.0.1:20100\"",
                "\"SocketGroup\"", "\"www-data\"", "\"SocketMode\"", "\"RemoveOnStop\"",
                /* PID 1 makes the directory: sandboxd has no CAP_CHOWN. */
                "\"/usr/bin/install\"", "\"--mode=2750\"", "\"--group=www-data\"",
                /* The gate runs in the worker's network namespace. */
                "\"PrivateNetwork\"", "\"JoinsNamespaceOf\"", "\"PrivateIPC\"",
                /* Started once the worker is up (a request during a resume). */
                "\"After\"",
                /* Its settings and the token from sandboxd's socket. */
                "\"gate-config\"", "\"gate-token\"", "\"/run/sandboxd/credentials.sock\"",
                "\"/usr/libexec/sandboxd/sandbox-gate\"", "\"NotifyAccess\"", "\"PartOf\"",
                /* Activating until it takes connections: sandboxd's reaper waits. */
                "\"Type\"", "\"notify\"",
                /* No bus, not the worker's /tmp, the second wall. */
                "\"-/run/dbus\"", "\"-/run/systemd/private\"", "\"/tmp\"", "\"IPAddressDeny\"", "\"IPAddressAllow\"",
                "\"DynamicUser\"", "\"NoNewPrivileges\"", "\"CapabilityBoundingSet\"", "\"ProtectSystem\"",
                "\"ProtectHome\"", "\"PrivateDevices\"", "\"PrivateMounts\"", "\"ProtectProc\"", "\"ProcSubset\"",
                "\"ProtectKernelTunables\"", "\"ProtectKernelModules\"", "\"ProtectKernelLogs\"",
                "\"ProtectControlGroups\"", "\"ProtectClock\"", "\"ProtectHostname\"", "\"RestrictNamespaces\"",
                "\"RestrictAddressFamilies\"", "\"MemoryDenyWriteExecute\"", "\"LockPersonality\"",
                "\"RestrictRealtime\"", "\"RestrictSUIDSGID\"", "\"RemoveIPC\"", "\"SystemCallFilter\"",
                "\"@system-service\"", "\"SystemCallArchitectures\"", "\"MemoryMax\"", "\"TasksMax\"",
        };
        for (size_t i = 0; i < sizeof(present) / sizeof(present[0]); i++)
                if (!strstr(d, present[i]))
                        fail_msg("the gate pair lacks %s", present[i]);
        /* Never a credential by value, never a network family it does not need. */
        assert_null(strstr(d, "SetCredential"));
        assert_null(strstr(d, "AF_NETLINK"));
        assert_null(strstr(d, "AF_INET6"));
}

static void test_public_unix_only(void **state) {
        GateUnitParams p = params;
        _cleanup_free_ char *d = NULL;

        p.tcp_port = 0;
        p.token = false;
        d = dump(&p);
        assert_null(strstr(d, "127.0.0.1:"));
        assert_null(strstr(d, "\"gate-token\""));
        assert_non_null(strstr(d, "\"gate-config\""));
}

/* The EndpointName's link: made by PID 1 before the socket listens, removed
 * when it stops only while it still points at this worker's socket. */
static void test_name_link(void **state) {
        GateUnitParams p = params;
        _cleanup_free_ char *plain = dump(&params), *d = NULL;
        static const char *const present[] = {
                "\"/bin/ln\"", "\"-sfn\"", "\"0123456789ab.sock\"", "\"/run/sandboxd-endpoints/my-app.sock\"",
                "\"ExecStopPost\"", "\"/usr/bin/find\"", "\"-lname\"", "\"my-app.sock\"", "\"-delete\"",
        };

        p.name = "my-app";
        d = dump(&p);
        for (size_t i = 0; i < sizeof(present) / sizeof(present[0]); i++)
                if (!strstr(d, present[i]))
                        fail_msg("the named socket unit lacks %s", present[i]);
        /* The control: without a name, no link and nothing to remove. */
        assert_null(strstr(plain, "\"/bin/ln\""));
        assert_null(strstr(plain, "\"ExecStopPost\""));
}

/* EndpointName, first come: held by a live worker (suspended ones too,
 * which come back with their endpoint), free once its holder ended. */
static void test_name_taken(void **state) {
        Worker ended = { .state = WORKER_ENDED, .spec.endpoint.name = (char *) "my-app" };
        Worker nameless = { .state = WORKER_RUNNING, .next = &ended };
        Worker other = { .state = WORKER_RUNNING, .spec.endpoint.name = (char *) "other-app", .next = &nameless };

        /* Nobody, a worker without a name, another name, an ended holder: free. */
        assert_false(worker_gate_name_taken(NULL, "my-app"));
        assert_false(worker_gate_name_taken(&other, "my-app"));
        /* Its holder alive in any state but ended: taken; a name is one whole label. */
        static const WorkerState alive[] = { WORKER_STARTING, WORKER_RUNNING, WORKER_STOPPING, WORKER_SUSPENDING,
                                             WORKER_SUSPENDED };
        for (size_t i = 0; i < sizeof(alive) / sizeof(alive[0]); i++) {
                ended.state = alive[i];
                assert_true(worker_gate_name_taken(&other, "my-app"));
                assert_false(worker_gate_name_taken(&other, "my-ap"));
                assert_false(worker_gate_name_taken(&other, "my-app2"));
        }
        /* Released with its worker: the same list, the holder ended. */
        ended.state = WORKER_ENDED;
        assert_false(worker_gate_name_taken(&other, "my-app"));
        assert_true(worker_gate_name_taken(&other, "other-app"));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_pair),
                cmocka_unit_test(test_public_unix_only),
                cmocka_unit_test(test_name_link),
                cmocka_unit_test(test_name_taken),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
