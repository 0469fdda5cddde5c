/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* sandbox-egress: one worker's mandatory CONNECT proxy and the broker of
 * its services. Started by socket activation (Accept=no) from
 * sandbox-<id>-egress.socket, whose listeners sit in the worker's network
 * namespace; reads its policy from the credential "egress-policy" and each
 * service's secret from "broker-<name>". */
#include <ares.h>
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>

#include "broker.h"
#include "egress-control.h"
#include "egress-policy.h"
#include "egress-loops.h"
#include "egress-proxy.h"
#include "egress-sandbox.h"
#include "egress-trace.h"
#include "event-util.h"
#include "util.h"

#define LISTEN_MAX 8

typedef struct Args {
        const char *policy_path;
        const char *resolv_conf;
        const char *hosts_file;
        const char *listen[LISTEN_MAX];
        size_t n_listen;
} Args;

static void help(void) {
        printf("sandbox-egress [OPTIONS]\n\n"
               "A worker's egress proxy: CONNECT only, TLS with an SNI equal to the\n"
               "requested host, allow-listed names, no private destinations.\n\n"
               "  --policy FILE       policy JSON (default: $CREDENTIALS_DIRECTORY/%s)\n"
               "  --listen ADDR:PORT  listen here when not socket-activated (repeatable;\n"
               "                      IPv6 as [::1]:3128); a service's listen_port is its\n"
               "                      broker listener, any other port a CONNECT listener\n"
               "  --resolv-conf FILE  resolver configuration (default /etc/resolv.conf;\n"
               "                      /etc/hosts is always consulted first)\n"
               "  --hosts-file FILE   consult FILE instead of /etc/hosts (for tests)\n"
               "  --help, --version\n",
               EGRESS_POLICY_CREDENTIAL);
}

static int parse_args(int argc, char **argv, Args *args) {
        enum { ARG_POLICY = 0x100, ARG_LISTEN, ARG_RESOLV_CONF, ARG_HOSTS_FILE, ARG_VERSION };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                { "policy", required_argument, NULL, ARG_POLICY },
                { "listen", required_argument, NULL, ARG_LISTEN },
                { "resolv-conf", required_argument, NULL, ARG_RESOLV_CONF },
                { "hosts-file", required_argument, NULL, ARG_HOSTS_FILE },
                {}
        };
        int c;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case ARG_VERSION:
                        printf("sandbox-egress %s\n", SANDBOXD_VERSION);
                        return 0;
                case ARG_POLICY:
                        args->policy_path = optarg;
                        break;
                case ARG_LISTEN:
                        if (args->n_listen >= LISTEN_MAX) {
                                log_error("Too many --listen addresses (at most %d)", LISTEN_MAX);
                                return -EINVAL;
                        }
                        args->listen[args->n_listen++] = optarg;
                        break;
                case ARG_RESOLV_CONF:
                        args->resolv_conf = optarg;
                        break;
                case ARG_HOSTS_FILE:
                        args->hosts_file = optarg;
                        break;
                default:
                        return -EINVAL;
                }
        }
        if (optind < argc) {
                log_error("Unexpected argument: %s", argv[optind]);
                return -EINVAL;
        }
        return 1;
}

/* "127.0.0.1:3128" or "[::1]:3128" into a listening TCP socket. */
static int listen_on(const char *spec) {
        union { struct sockaddr sa; struct sockaddr_in in; struct sockaddr_in6 in6; } addr = {};
        char host[INET6_ADDRSTRLEN + 2];
        const char *colon = strrchr(spec, ':');
        socklen_t len;
        int fd, one = 1;

        if (!colon || (size_t) (colon - spec) >= sizeof(host))
                return -EINVAL;
        memcpy(host, spec, (size_t) (colon - spec));
        host[colon - spec] = 0;
        char *end;
        unsigned long port = strtoul(colon + 1, &end, 10);
        if (*end || port == 0 || port > 65535)
                return -EINVAL;
        if (host[0] == '[' && host[strlen(host) - 1] == ']') {
                host[strlen(host) - 1] = 0;
                if (inet_pton(AF_INET6, host + 1, &addr.in6.sin6_addr) != 1)
                        return -EINVAL;
                addr.in6.sin6_family = AF_INET6;
                addr.in6.sin6_port = htons((uint16_t) port);
                len = sizeof(addr.in6);
        } else {
                if (inet_pton(AF_INET, host, &addr.in.sin_addr) != 1)
                        return -EINVAL;
                addr.in.sin_family = AF_INET;
                addr.in.sin_port = htons((uint16_t) port);
                len = sizeof(addr.in);
        }
        fd = socket(addr.sa.sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        (void) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (bind(fd, &addr.sa, len) < 0 || listen(fd, 128) < 0) {
                int r = -errno;
                safe_close(fd);
                return r;
        }
        return fd;
}

static int load_policy(const Args *args, EgressPolicy **ret) {
        char path[4096];
        const char *p = args->policy_path;

        if (!p) {
                const char *dir = getenv("CREDENTIALS_DIRECTORY");
                if (!dir) {
                        log_error("No --policy given and no $CREDENTIALS_DIRECTORY: refusing to run without a policy");
                        return -ENOENT;
                }
                snprintf(path, sizeof(path), "%s/%s", dir, EGRESS_POLICY_CREDENTIAL);
                p = path;
        }
        int r = egress_policy_from_json_file(p, ret);
        if (r < 0)
                return log_error_errno(r, "Failed to load egress policy %s: %m", p);
        return 0;
}

/* Each tunnel holds two sockets and two pipes. */
static void raise_fd_limit(void) {
        struct rlimit rl;
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
                rl.rlim_cur = rl.rlim_max;
                (void) setrlimit(RLIMIT_NOFILE, &rl);
        }
}

static int socket_port(int fd) {
        union { struct sockaddr sa; struct sockaddr_in in; struct sockaddr_in6 in6; } addr = {};
        socklen_t len = sizeof(addr);

        if (getsockname(fd, &addr.sa, &len) < 0)
                return -errno;
        if (addr.sa.sa_family == AF_INET)
                return ntohs(addr.in.sin_port);
        if (addr.sa.sa_family == AF_INET6)
                return ntohs(addr.in6.sin6_port);
        return -EAFNOSUPPORT;
}

/* Listeners are told apart by their port: a service's listen_port is its
 * broker listener, any other port (3128 in a worker's socket unit) a
 * CONNECT listener. A socket unit and a policy that disagree thus fail
 * closed either way: a service port taken for CONNECT answers nothing but
 * CONNECT, which the allow-list still governs. */
static int add_listener(Proxy *proxy, Broker *broker, ProxyLoops *const *loops, EgressControl **control, int fd) {
        /* sandboxd's control channel: an AF_UNIX listener only root reaches. */
        if (egress_control_is_listener(fd)) {
                if (*control) {
                        safe_close(fd);
                        return log_error_errno(-EEXIST, "More than one control listener: %m");
                }
                return egress_control_new(proxy, loops, fd, control);
        }
        int port = socket_port(fd);
        if (port < 0) {
                safe_close(fd);
                return log_error_errno(port, "Failed to read the address of a listening socket: %m");
        }
        BrokerService *s = broker_find_service(broker, (uint16_t) port);
        if (s)
                return broker_add_listener(broker, s, fd);
        return proxy_add_listener(proxy, fd);
}

static int run(int argc, char **argv) {
        Args args = {};
        EgressPolicy *policy = NULL;
        sd_event *event = NULL;
        sd_event_source *sig;
        Proxy *proxy = NULL;
        Broker *broker = NULL;
        ProxyLoops *loops = NULL;
        EgressControl *control = NULL;
        int r, n_fds;

        r = parse_args(argc, argv, &args);
        if (r <= 0)
                return r;
        r = load_policy(&args, &policy);
        if (r < 0)
                return r;

        signal(SIGPIPE, SIG_IGN);
        trace_open();
        raise_fd_limit();
        /* One malloc arena for every event loop: a thread's own arena would
         * keep up to its trim threshold of freed tunnels for good, a
         * quarter more memory per idle proxy, for locks that two loops
         * hardly ever contend. */
        (void) mallopt(M_ARENA_MAX, 1);
        sigset_t mask;
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigprocmask(SIG_BLOCK, &mask, NULL);

        r = ares_library_init(ARES_LIB_INIT_ALL);
        if (r != ARES_SUCCESS) {
                log_error("Failed to initialize c-ares: %s", ares_strerror(r));
                egress_policy_free(policy);
                return -EIO;
        }
        r = sd_event_default(&event);
        if (r < 0) {
                log_error_errno(r, "Failed to allocate event loop: %m");
                egress_policy_free(policy);
                goto finish;
        }
        if (sd_event_add_signal(event, &sig, SIGTERM, NULL, NULL) >= 0)
                (void) event_source_float(sig, "sigterm");
        if (sd_event_add_signal(event, &sig, SIGINT, NULL, NULL) >= 0)
                (void) event_source_float(sig, "sigint");

        r = proxy_new(event, policy, args.resolv_conf, args.hosts_file, &proxy);
        if (r < 0) {
                log_error_errno(r, "Failed to set up proxy: %m");
                egress_policy_free(policy);
                goto finish;
        }

        /* Secrets and the trust store are read now, before the seccomp filter. */
        if (proxy->policy->n_services > 0) {
                r = broker_new(proxy, &broker);
                if (r < 0) {
                        log_error_errno(r, "Failed to set up the credential broker: %m");
                        goto finish;
                }
        }

        n_fds = sd_listen_fds(true);
        if (n_fds < 0) {
                r = log_error_errno(n_fds, "Failed to read socket activation fds: %m");
                goto finish;
        }
        for (int i = 0; i < n_fds; i++) {
                r = add_listener(proxy, broker, &loops, &control, SD_LISTEN_FDS_START + i);
                if (r < 0) {
                        log_error_errno(r, "Failed to watch activated socket: %m");
                        goto finish;
                }
        }
        for (size_t i = 0; i < args.n_listen; i++) {
                int fd = listen_on(args.listen[i]);
                if (fd < 0) {
                        r = log_error_errno(fd, "Failed to listen on %s: %m", args.listen[i]);
                        goto finish;
                }
                r = add_listener(proxy, broker, &loops, &control, fd);
                if (r < 0)
                        goto finish;
        }
        for (size_t i = 0; broker && i < broker->n_services; i++) {
                bool found = false;
                for (size_t j = 0; j < broker->n_listeners; j++)
                        found = found || sd_event_source_get_userdata(broker->listeners[j]) == &broker->services[i];
                if (!found)
                        log_warning("Service %s has no listener (port %u): it cannot be called",
                                    broker->services[i].config->name, broker->services[i].config->listen_port);
        }
        if (proxy->n_listeners == 0 && (!broker || broker->n_listeners == 0)) {
                log_error("Nothing to listen on: not socket-activated and no --listen given");
                r = -EINVAL;
                goto finish;
        }

        /* From here on the process reads bytes a worker controls. */
        r = egress_drop_capabilities();
        if (r < 0) {
                log_error_errno(r, "Failed to drop capabilities: %m");
                goto finish;
        }
        if (proxy->n_listeners > 0) {
                /* More loops are for speed only: without them (a TasksMax, no
                 * memory) the one loop serves every tunnel as it always did. */
                r = proxy_loops_start(proxy, proxy_loops_wanted(proxy), args.resolv_conf, args.hosts_file, &loops);
                if (r < 0)
                        log_warning_errno(r, "Failed to start more event loops, running with one: %m");
        }
        r = egress_install_seccomp();
        if (r < 0) {
                log_error_errno(r, "Failed to install seccomp filter: %m");
                goto finish;
        }
        log_info("sandbox-egress ready: worker %s, mode %s, %zu allow rules, %zu listeners, %zu services, %u event loops",
                 proxy->policy->worker_id ?: "-", egress_mode_to_string(proxy->policy->mode),
                 proxy->policy->n_allow, proxy->n_listeners + (broker ? broker->n_listeners : 0),
                 proxy->policy->n_services, 1 + proxy_loops_count(loops));
        (void) sd_notify(false, "READY=1");

        r = sd_event_loop(event);
        if (r < 0)
                log_error_errno(r, "Event loop failed: %m");
finish:
        /* The secrets are wiped here, before the proxy's memory is released. */
        egress_control_free(control);
        proxy_loops_stop(loops);
        broker_free(broker);
        proxy_free(proxy);
        sd_event_unref(event);
        ares_library_cleanup();
        return r;
}

int main(int argc, char **argv) {
        return run(argc, argv) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
