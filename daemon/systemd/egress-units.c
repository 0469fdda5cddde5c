/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "egress-ctl.h"
#include "egress-policy.h"
#include "egress-units.h"
#include "errors.h"
#include "spec-service.h"
#include "systemd-bus.h"
#include "util.h"

#define RESOLVERS_MAX 8   /* glibc reads three; c-ares a few more */

/* The second wall behind the proxy's own address checks, for hosts where
 * systemd's BPF firewall works (not in every container: testbed.md).
 * Loopback is not in it: a local stub resolver (127.0.0.53) must stay
 * reachable, and loopback destinations are refused by the proxy itself. */
static const char *const PROXY_DENIED_RANGES[] = {
        "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "169.254.0.0/16", "172.16.0.0/12",
        "192.168.0.0/16", "fc00::/7", "fe80::/10",
};

int egress_resolver_addresses(const char *resolv_conf, EgressCidr *ret, size_t max) {
        _cleanup_fclose_ FILE *f = NULL;
        char line[512];
        size_t n = 0;

        assert(resolv_conf);
        f = fopen(resolv_conf, "re");
        if (!f)
                return errno == ENOENT ? 0 : -errno;
        while (n < max && fgets(line, sizeof(line), f)) {
                char *word = strtok(line, " \t\r\n");
                if (!word || !streq(word, "nameserver"))
                        continue;
                char *addr = strtok(NULL, " \t\r\n");
                if (!addr)
                        continue;
                char *scope = strchr(addr, '%');   /* fe80::1%eth0 */
                if (scope)
                        *scope = 0;
                if (strchr(addr, '/') || egress_cidr_parse(addr, &ret[n]) < 0)
                        continue;
                n++;
        }
        return (int) n;
}

/* The broker's view of one validated service: where to connect, what to
 * inject, what to let through. */
static int policy_add_service(EgressPolicy *p, const SbxService *svc, size_t i, uint64_t egress_rate_bps) {
        SbxServiceOrigin origin;
        char header_name[SBX_SERVICE_HEADER_MAX + 1];
        const char *tmpl;
        int r;

        r = sbx_service_url_parse(svc->url, &origin);
        if (r < 0)
                return r;
        r = sbx_service_header_parse(sbx_service_header(svc), header_name, sizeof(header_name), &tmpl);
        if (r < 0)
                return r;
        EgressService e = {
                .name = svc->name,
                .listen_port = worker_service_port(i),
                .host = origin.host,
                .port = origin.port,
                .base = origin.base,
                .header_name = header_name,
                .header_template = (char *) tmpl,
                .methods = (char **) sbx_service_methods(svc),
                .n_methods = strv_length(sbx_service_methods(svc)),
                .paths = (char **) sbx_service_paths(svc),
                .n_paths = strv_length(sbx_service_paths(svc)),
                .max_request_bytes = svc->max_request_bytes,
                .max_response_bytes = svc->max_response_bytes,
                /* A service without its own rate shares the worker's. */
                .rate_bps = svc->rate_bps ?: egress_rate_bps,
        };
        return egress_policy_add_service(p, &e);
}

int worker_egress_policy_json(const WorkerSpec *s, const SbxConfig *c, const char *worker_id, char **ret,
                              SbxError *error) {
        _cleanup_egress_policy_ EgressPolicy *p = NULL;
        int r;

        r = egress_policy_new(&p);
        if (r < 0)
                return r;
        r = egress_policy_set_worker_id(p, worker_id);
        if (r < 0)
                return r;
        p->mode = s->egress_report_only ? EGRESS_MODE_REPORT : EGRESS_MODE_ENFORCE;
        p->require_tls = c->egress_require_tls;
        p->rate_bps = s->egress_rate_bps;
        p->max_tunnels = c->egress_max_tunnels;
        for (char **a = s->egress_allow; a && *a; a++) {
                r = egress_policy_add_allow(p, *a);
                if (r < 0)
                        return sbx_error_set(error, r, SBX_ERROR_INVALID_EGRESS,
                                             "EgressAllow pattern \"%.64s\" is invalid: use host, *.domain, optionally :port",
                                             *a);
        }
        /* The floor bounds every spec: with none configured nothing is reachable. */
        egress_policy_clear_floor(p);
        for (char **f = c->egress_floor; f && *f; f++) {
                r = egress_policy_add_floor(p, *f);
                if (r < 0)
                        return sbx_error_set(error, r, SBX_ERROR_INVALID_EGRESS,
                                             "Egress:Floor entry \"%.64s\" in the configuration is invalid", *f);
        }
        for (char **d = c->egress_deny; d && *d; d++) {
                r = egress_policy_add_deny(p, *d);
                if (r < 0)
                        return sbx_error_set(error, r, SBX_ERROR_INVALID_EGRESS,
                                             "Egress:Deny entry \"%.64s\" in the configuration is invalid", *d);
        }
        for (char **cidr = c->egress_private_ranges; cidr && *cidr; cidr++) {
                r = egress_policy_add_private_range(p, *cidr);
                if (r < 0)
                        return sbx_error_set(error, r, SBX_ERROR_INVALID_EGRESS,
                                             "Egress:PrivateRanges entry \"%.64s\" in the configuration is invalid", *cidr);
        }
        for (size_t i = 0; i < s->n_services; i++) {
                r = policy_add_service(p, &s->services[i], i, s->egress_rate_bps);
                if (r < 0)
                        return sbx_error_set(error, r, SBX_ERROR_INVALID_SERVICE,
                                             "Service %s cannot be given to the broker: %s", s->services[i].name,
                                             strerror(-r));
        }
        if (c->egress_broker_ca_file) {
                r = egress_policy_set_broker_ca_file(p, c->egress_broker_ca_file);
                if (r < 0)
                        return sbx_error_set(error, r, SBX_ERROR_INVALID_SPEC,
                                             "Egress:BrokerCAFile \"%.128s\" in the configuration is invalid",
                                             c->egress_broker_ca_file);
        }
        return egress_policy_to_json(p, ret);
}

int worker_service_url_env(const SbxService *s, size_t i, SbxRuntime runtime, char **ret) {
        _cleanup_free_ char *name = strdup(s->name);

        if (!name)
                return -ENOMEM;
        /* Names are [A-Za-z0-9_] (spec-service.h), so this is the whole mapping. */
        for (char *c = name; *c; c++)
                *c = (char) toupper((unsigned char) *c);
        if (asprintf(ret, "SANDBOX_SERVICE_%s_URL=http://%s:%u", name, worker_proxy_host(runtime),
                     (unsigned) worker_service_port(i)) < 0)
                return -ENOMEM;
        return 0;
}

int worker_egress_unit_names(const char *id, char **ret_socket, char **ret_service) {
        if (asprintf(ret_socket, "sandbox-%s-egress.socket", id) < 0)
                return -ENOMEM;
        if (asprintf(ret_service, "sandbox-%s-egress.service", id) < 0) {
                free(*ret_socket);
                *ret_socket = NULL;
                return -ENOMEM;
        }
        return 0;
}

#define CHECK(expr) do { r = (expr); if (r < 0) return r; } while (0)

/* IPAddressDeny= and IPAddressAllow= take a(iayu): family, address bytes, prefix length. */
static int append_ip_list(sd_bus_message *m, const char *name, const EgressCidr *cidrs, size_t n) {
        int r;

        CHECK(sd_bus_message_open_container(m, 'r', "sv"));
        CHECK(sd_bus_message_append(m, "s", name));
        CHECK(sd_bus_message_open_container(m, 'v', "a(iayu)"));
        CHECK(sd_bus_message_open_container(m, 'a', "(iayu)"));
        for (size_t i = 0; i < n; i++) {
                const EgressCidr *c = &cidrs[i];
                CHECK(sd_bus_message_open_container(m, 'r', "iayu"));
                CHECK(sd_bus_message_append(m, "i", (int32_t) c->family));
                CHECK(sd_bus_message_append_array(m, 'y', c->family == AF_INET ? (const void *) &c->addr.in
                                                                               : (const void *) &c->addr.in6,
                                                  c->family == AF_INET ? 4 : 16));
                CHECK(sd_bus_message_append(m, "u", (uint32_t) c->prefixlen));
                CHECK(sd_bus_message_close_container(m));
        }
        CHECK(sd_bus_message_close_container(m));
        CHECK(sd_bus_message_close_container(m));
        return sd_bus_message_close_container(m);
}

static int append_ip_walls(sd_bus_message *m) {
        EgressCidr denied[ELEMENTSOF(PROXY_DENIED_RANGES)], resolvers[RESOLVERS_MAX];
        int n, r;

        for (size_t i = 0; i < ELEMENTSOF(PROXY_DENIED_RANGES); i++)
                CHECK(egress_cidr_parse(PROXY_DENIED_RANGES[i], &denied[i]));
        CHECK(append_ip_list(m, "IPAddressDeny", denied, ELEMENTSOF(denied)));
        /* Read when the unit is made: a resolver that changes later is
         * refused by the wall until the worker is recreated, and the proxy
         * then fails closed (resolve-failed). */
        n = egress_resolver_addresses("/etc/resolv.conf", resolvers, ELEMENTSOF(resolvers));
        if (n <= 0)
                return 0;
        return append_ip_list(m, "IPAddressAllow", resolvers, (size_t) n);
}

/* What systemd-analyze security counts, kept only where the proxy still
 * works with it: it needs sockets (INET for upstreams, UNIX for the
 * journal, NETLINK for the host's addresses) and the host's network, so
 * PrivateNetwork= and the address-family items stay open. Its own seccomp
 * filter (egress-sandbox.c) is narrower still; systemd's comes first and
 * must let seccomp() through for it. */
static int append_proxy_hardening(sd_bus_message *m) {
        int r;

        CHECK(sd_bus_message_append(m, "(sv)", "PrivateUsers", "b", 1));
        CHECK(sd_bus_message_append(m, "(sv)", "PrivateMounts", "b", 1));
        CHECK(sd_bus_message_append(m, "(sv)", "PrivateIPC", "b", 1));
        CHECK(sd_bus_message_append(m, "(sv)", "ProtectProc", "s", "invisible"));
        CHECK(sd_bus_message_append(m, "(sv)", "ProcSubset", "s", "pid"));
        CHECK(sd_bus_message_append(m, "(sv)", "ProtectHostname", "b", 1));
        CHECK(sd_bus_message_append(m, "(sv)", "ProtectClock", "b", 1));
        CHECK(sd_bus_message_append(m, "(sv)", "ProtectKernelLogs", "b", 1));
        CHECK(sd_bus_message_append(m, "(sv)", "MemoryDenyWriteExecute", "b", 1));
        CHECK(sd_bus_message_append(m, "(sv)", "LockPersonality", "b", 1));
        CHECK(sd_bus_message_append(m, "(sv)", "RestrictRealtime", "b", 1));
        CHECK(sd_bus_message_append(m, "(sv)", "RestrictSUIDSGID", "b", 1));
        CHECK(sd_bus_message_append(m, "(sv)", "RemoveIPC", "b", 1));
        CHECK(sd_bus_message_append(m, "(sv)", "UMask", "u", (uint32_t) 0077));
        CHECK(sd_bus_message_append(m, "(sv)", "DevicePolicy", "s", "closed"));
        CHECK(sd_bus_message_append(m, "(sv)", "SystemCallArchitectures", "as", 1, "native"));
        CHECK(sd_bus_message_append(m, "(sv)", "SystemCallFilter", "(bas)", 1, 2, "@system-service", "seccomp"));
        CHECK(sd_bus_message_append(m, "(sv)", "SystemCallFilter", "(bas)", 0, 2, "@privileged", "@resources"));
        /* Refused calls fail with EPERM rather than kill: getrlimit() and the
         * like have fallbacks, a SIGSYS has none. */
        CHECK(sd_bus_message_append(m, "(sv)", "SystemCallErrorNumber", "i", (int32_t) EPERM));
        return append_ip_walls(m);
}

/* Listen=a(ss): the CONNECT listener if the worker has egress, then one
 * listener per service, on the ports the policy names, all on the address the
 * worker reaches. A gVisor worker reaches the veth's address and nothing
 * else of the unit's namespace: every listener there on that address (or on
 * any) is open to it, so these are the only ones, and no loopback ones, which
 * it could not reach. */
static int append_listen(sd_bus_message *m, const char *id, const WorkerSpec *spec, SbxRuntime runtime) {
        const char *host = worker_proxy_host(runtime);
        char addr[32], ctl[128];
        int r;

        CHECK(egress_ctl_path(id, ctl, sizeof(ctl)));

        CHECK(sd_bus_message_open_container(m, 'r', "sv"));
        CHECK(sd_bus_message_append(m, "s", "Listen"));
        CHECK(sd_bus_message_open_container(m, 'v', "a(ss)"));
        CHECK(sd_bus_message_open_container(m, 'a', "(ss)"));
        if (worker_wants_egress(spec)) {
                snprintf(addr, sizeof(addr), "%s:%u", host, (unsigned) SBX_EGRESS_PORT);
                CHECK(sd_bus_message_append(m, "(ss)", "Stream", addr));
                if (runtime != SBX_RUNTIME_RUNSC)
                        CHECK(sd_bus_message_append(m, "(ss)", "Stream", "[::1]:3128"));
        }
        for (size_t i = 0; i < spec->n_services; i++) {
                snprintf(addr, sizeof(addr), "%s:%u", host, (unsigned) worker_service_port(i));
                CHECK(sd_bus_message_append(m, "(ss)", "Stream", addr));
        }
        /* sandboxd's control channel (egress-ctl.h): a file in the host's
         * /run, which no worker sees, root's and 0600 (SocketMode= below). */
        CHECK(sd_bus_message_append(m, "(ss)", "SequentialPacket", ctl));
        CHECK(sd_bus_message_close_container(m));
        CHECK(sd_bus_message_close_container(m));
        return sd_bus_message_close_container(m);
}

static int append_socket_unit(sd_bus_message *m, const char *id, const char *socket, const char *worker_unit,
                              const WorkerSpec *spec, SbxRuntime runtime) {
        int r;

        CHECK(sd_bus_message_open_container(m, 'r', "sa(sv)"));
        CHECK(sd_bus_message_append(m, "s", socket));
        CHECK(sd_bus_message_open_container(m, 'a', "(sv)"));
        CHECK(sd_bus_message_append(m, "(sv)", "Description", "s", "sandboxd worker egress listener"));
        /* The listeners live in the worker's own network namespace: they are
         * the only things the worker can connect to. */
        CHECK(append_listen(m, id, spec, runtime));
        /* For the control listener, the one file among them: root's alone. */
        CHECK(sd_bus_message_append(m, "(sv)", "SocketMode", "u", (uint32_t) 0600));
        CHECK(sd_bus_message_append(m, "(sv)", "DirectoryMode", "u", (uint32_t) 0700));
        CHECK(sd_bus_message_append(m, "(sv)", "RemoveOnStop", "b", 1));
        /* In a namespace made a moment ago, ::1 is still tentative until the
         * kernel's address work runs (a workqueue: late on a loaded host), and
         * a plain bind() to it fails; the veth's address does not exist until
         * the worker's launcher makes it. With IP_FREEBIND it binds at once
         * and accepts as soon as the address is usable. */
        CHECK(sd_bus_message_append(m, "(sv)", "FreeBind", "b", 1));
        CHECK(sd_bus_message_append(m, "(sv)", "PrivateNetwork", "b", 1));
        /* Units joined by JoinsNamespaceOf= share the namespaces of whichever
         * starts first, this socket: without PrivateIPC= here the worker's own
         * PrivateIPC=yes is silently dropped and it gets PID 1's IPC
         * namespace (found by the worker's namespace check). */
        CHECK(sd_bus_message_append(m, "(sv)", "PrivateIPC", "b", 1));
        CHECK(sd_bus_message_append(m, "(sv)", "JoinsNamespaceOf", "as", 1, worker_unit));
        CHECK(sd_bus_message_append(m, "(sv)", "PartOf", "as", 1, worker_unit));
        CHECK(sd_bus_message_append(m, "(sv)", "CollectMode", "s", "inactive-or-failed"));
        CHECK(sd_bus_message_close_container(m));
        return sd_bus_message_close_container(m);
}

/* LoadCredential=a(ss): the policy and each service's secret, all from
 * sandboxd's socket, which hands them to this unit alone. */
static int append_proxy_credentials(sd_bus_message *m, const WorkerSpec *spec, const char *credential_socket) {
        int r;

        CHECK(sd_bus_message_open_container(m, 'r', "sv"));
        CHECK(sd_bus_message_append(m, "s", "LoadCredential"));
        CHECK(sd_bus_message_open_container(m, 'v', "a(ss)"));
        CHECK(sd_bus_message_open_container(m, 'a', "(ss)"));
        CHECK(sd_bus_message_append(m, "(ss)", "egress-policy", credential_socket));
        for (size_t i = 0; i < spec->n_services; i++) {
                _cleanup_free_ char *id = NULL;
                if (asprintf(&id, SBX_BROKER_CREDENTIAL_PREFIX "%s", spec->services[i].name) < 0)
                        return -ENOMEM;
                CHECK(sd_bus_message_append(m, "(ss)", id, credential_socket));
        }
        CHECK(sd_bus_message_close_container(m));
        CHECK(sd_bus_message_close_container(m));
        return sd_bus_message_close_container(m);
}

static int append_proxy_service(sd_bus_message *m, const char *service, const char *worker_unit,
                                const WorkerSpec *spec, const char *egress_path, const char *credential_socket) {
        /* AF_NETLINK: the proxy follows the host's addresses over rtnetlink
         * to refuse them as destinations. */
        static const char * const families[] = { "AF_INET", "AF_INET6", "AF_UNIX", "AF_NETLINK" };
        int r;

        CHECK(sd_bus_message_open_container(m, 'r', "sa(sv)"));
        CHECK(sd_bus_message_append(m, "s", service));
        CHECK(sd_bus_message_open_container(m, 'a', "(sv)"));
        CHECK(sd_bus_message_append(m, "(sv)", "Description", "s", "sandboxd worker egress proxy"));
        CHECK(sd_bus_message_append(m, "(sv)", "ExecStart", "a(sasb)", 1, egress_path, 1, egress_path, 0));
        CHECK(sd_bus_message_append(m, "(sv)", "PartOf", "as", 1, worker_unit));
        CHECK(sd_bus_message_append(m, "(sv)", "CollectMode", "s", "inactive-or-failed"));
        /* The policy and the secrets come from sandboxd's credential socket,
         * never from the worker, and never by value (SetCredential= would put
         * them in a world-readable unit file and bus property). */
        CHECK(append_proxy_credentials(m, spec, credential_socket));
        CHECK(sd_bus_message_append(m, "(sv)", "DynamicUser", "b", 1));
        CHECK(sd_bus_message_append(m, "(sv)", "NoNewPrivileges", "b", 1));
        CHECK(sd_bus_message_append(m, "(sv)", "CapabilityBoundingSet", "t", (uint64_t) 0));
        CHECK(sd_bus_message_append(m, "(sv)", "ProtectSystem", "s", "strict"));
        CHECK(sd_bus_message_append(m, "(sv)", "ProtectHome", "s", "yes"));
        CHECK(sd_bus_message_append(m, "(sv)", "PrivateTmp", "b", 1));
        CHECK(sd_bus_message_append(m, "(sv)", "PrivateDevices", "b", 1));
        CHECK(sd_bus_message_append(m, "(sv)", "ProtectKernelTunables", "b", 1));
        CHECK(sd_bus_message_append(m, "(sv)", "ProtectKernelModules", "b", 1));
        CHECK(sd_bus_message_append(m, "(sv)", "ProtectControlGroups", "b", 1));
        CHECK(sd_bus_message_append(m, "(sv)", "RestrictNamespaces", "t", (uint64_t) 0));
        CHECK(sd_bus_message_append(m, "(sv)", "RestrictAddressFamilies", "(bas)", 1, 4,
                                    families[0], families[1], families[2], families[3]));
        /* Every decision is a journal entry an operator may need: journald's
         * default rate limit would drop them under a burst of tunnels. */
        CHECK(sd_bus_message_append(m, "(sv)", "LogRateLimitIntervalUSec", "t", (uint64_t) 0));
        CHECK(append_proxy_hardening(m));
        /* The proxy talks to the journal and to upstreams, never to D-Bus. */
        CHECK(systemd_append_no_bus(m));
        CHECK(sd_bus_message_append(m, "(sv)", "MemoryMax", "t", (uint64_t) 64 << 20));
        CHECK(sd_bus_message_append(m, "(sv)", "TasksMax", "t", (uint64_t) 16));
        CHECK(sd_bus_message_close_container(m));
        return sd_bus_message_close_container(m);
}

int worker_egress_append_aux_entries(sd_bus_message *m, const char *id, const char *worker_unit,
                                     const WorkerSpec *spec, SbxRuntime runtime, const char *egress_path,
                                     const char *credential_socket) {
        _cleanup_free_ char *socket = NULL, *service = NULL;
        int r;

        if (egress_path) {
                CHECK(worker_egress_unit_names(id, &socket, &service));
                CHECK(append_socket_unit(m, id, socket, worker_unit, spec, runtime));
                CHECK(append_proxy_service(m, service, worker_unit, spec, egress_path, credential_socket));
        }
        return 0;
}

int worker_egress_append_aux_units(sd_bus_message *m, const char *id, const char *worker_unit, const WorkerSpec *spec,
                                   SbxRuntime runtime, const char *egress_path, const char *credential_socket) {
        int r;

        CHECK(sd_bus_message_open_container(m, 'a', "(sa(sv))"));
        CHECK(worker_egress_append_aux_entries(m, id, worker_unit, spec, runtime, egress_path, credential_socket));
        return sd_bus_message_close_container(m);
}
