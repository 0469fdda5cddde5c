/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* sandbox-gate: one worker's inbound gate (gate.h). Reads its settings
 * from the credential "gate-config" and the caller's token from
 * "gate-token" (sandboxd's credential socket serves both to this unit
 * alone), takes its listeners from socket activation, drops what it can,
 * and serves. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "egress-sandbox.h"
#include "event-util.h"
#include "gate-session.h"
#include "sandbox-gate.h"
#include "util.h"

#define CONFIG_MAX 4096

typedef struct Args {
        const char *config_path;
        const char *token_path;
} Args;

static void help(void) {
        printf("sandbox-gate [OPTIONS]\n\n"
               "A worker's inbound gate: strict HTTP/1.1, the caller's bearer token\n"
               "checked first, bodies capped both ways, the handler's response held\n"
               "whole before the caller gets it.\n\n"
               "  --config FILE   settings (default: $CREDENTIALS_DIRECTORY/%s)\n"
               "  --token FILE    the caller's token (default: $CREDENTIALS_DIRECTORY/%s)\n"
               "  --help, --version\n",
               GATE_CONFIG_CREDENTIAL, GATE_TOKEN_CREDENTIAL);
}

static int parse_args(int argc, char **argv, Args *args) {
        enum { ARG_CONFIG = 0x100, ARG_TOKEN, ARG_VERSION };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                { "config", required_argument, NULL, ARG_CONFIG },
                { "token", required_argument, NULL, ARG_TOKEN },
                {}
        };
        int c;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case ARG_VERSION:
                        printf("sandbox-gate %s\n", SANDBOXD_VERSION);
                        return 0;
                case ARG_CONFIG:
                        args->config_path = optarg;
                        break;
                case ARG_TOKEN:
                        args->token_path = optarg;
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

/* A whole small file: the path given, or the credential NAME. Returns the
 * size, 0 for a credential that is not there (a public endpoint has no
 * token), or a negative errno. */
static ssize_t read_small(const char *path, const char *name, uint8_t *buf, size_t max) {
        char p[4096];
        struct stat st;
        int fd;

        if (!path) {
                const char *dir = getenv("CREDENTIALS_DIRECTORY");
                if (!dir)
                        return -ENOENT;
                snprintf(p, sizeof(p), "%s/%s", dir, name);
                path = p;
        }
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return errno == ENOENT && path == p ? 0 : -errno;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t) st.st_size > max) {
                close(fd);
                return -EFBIG;
        }
        ssize_t n = read_full(fd, buf, (size_t) st.st_size);
        close(fd);
        return n;
}

static int load(Gate *g, const Args *args) {
        char text[CONFIG_MAX];
        unsigned bad_line;
        ssize_t n;
        int r;

        n = read_small(args->config_path, GATE_CONFIG_CREDENTIAL, (uint8_t *) text, sizeof(text));
        if (n <= 0)
                return log_error_errno(n < 0 ? (int) n : -ENOENT, "Failed to read the gate's settings: %m");
        r = gate_config_parse(text, (size_t) n, &g->config, &bad_line);
        if (r < 0) {
                log_error("The gate's settings are invalid (line %u)", bad_line);
                return r;
        }
        n = read_small(args->token_path, GATE_TOKEN_CREDENTIAL, g->token, sizeof(g->token));
        if (n < 0)
                return log_error_errno((int) n, "Failed to read the gate's token: %m");
        g->token_size = (size_t) n;
        /* A token kept in a text file ends in one newline: not part of it. */
        if (g->token_size > 0 && g->token[g->token_size - 1] == '\n')
                g->token_size--;
        for (size_t i = 0; i < g->token_size; i++)
                if (g->token[i] <= 0x20 || g->token[i] >= 0x7f) {
                        log_error("The gate's token holds a byte that cannot be sent in a header");
                        return -EINVAL;
                }
        if (g->token_size == 0 && !g->config.public) {
                /* Fail closed: an endpoint is public only when sandboxd said so. */
                log_error("No token and not public: refusing to serve");
                return -ENOKEY;
        }
        if (g->token_size > 0 && g->config.public) {
                log_error("A token for a public endpoint: refusing to guess which was meant");
                return -EINVAL;
        }

        /* Any origin-form path: the handler is the worker's to design. */
        static char * const root[] = { (char *) "/", NULL };
        BrokerRoute route = {
                .host = g->config.upstream_host,
                .port = g->config.upstream_port,
                .base = "",
                .paths = root,
                .max_request_bytes = g->config.max_request_bytes,
                .require_token = g->token_size ? g->token : NULL,
                .require_token_size = g->token_size,
                .any_method = true,
                .keep_host = true,
        };
        g->route_direct = route;
        route.keep_forwarded = true;
        g->route_front = route;
        return 0;
}

/* ---- the journal and systemd's status line ---- */

void gate_log_request(Gate *g, bool front, const char *method, const char *path, int status, uint64_t bytes_in,
                      uint64_t bytes_out, uint64_t usec, const char *reason) {
        char st[8], in[24], out[24], dur[24], message[512 + BROKER_TARGET_MAX];
        uint64_t now = now_usec(CLOCK_MONOTONIC);

        /* Refusals are what a caller can cause without bound. */
        if (reason) {
                if (log_limit_summary_due(&g->refusal_log, now)) {
                        char summary[1024];
                        uint64_t k = log_limit_take_summary(&g->refusal_log, summary, sizeof(summary));
                        snprintf(message, sizeof(message), "gate: %" PRIu64 " refusals not logged: %s worker=%s", k,
                                 summary, g->config.worker_id);
                        journal_batch_add(&g->journal, LOG_WARNING, message, "SANDBOXD_WORKER_ID",
                                          g->config.worker_id, NULL);
                }
                if (!log_limit_refusal(&g->refusal_log, reason, now))
                        return;
        }
        snprintf(st, sizeof(st), "%d", status);
        snprintf(in, sizeof(in), "%" PRIu64, bytes_in);
        snprintf(out, sizeof(out), "%" PRIu64, bytes_out);
        snprintf(dur, sizeof(dur), "%" PRIu64, usec);
        snprintf(message, sizeof(message), "gate: %s %s -> %d (bytes_in=%s bytes_out=%s usec=%s via=%s%s%s) worker=%s",
                 method && method[0] ? method : "-", path && path[0] ? path : "-", status, in, out, dur,
                 front ? "unix" : "tcp", reason ? " reason=" : "", reason ?: "", g->config.worker_id);
        journal_batch_add(&g->journal, reason ? LOG_WARNING : LOG_INFO, message,
                          "SANDBOXD_WORKER_ID", g->config.worker_id,
                          "SANDBOXD_METHOD", method ?: "",
                          "SANDBOXD_PATH", path ?: "",
                          "SANDBOXD_STATUS", st,
                          "SANDBOXD_BYTES_IN", in,
                          "SANDBOXD_BYTES_OUT", out,
                          "SANDBOXD_DURATION_USEC", dur,
                          "SANDBOXD_ENDPOINT_VIA", front ? "unix" : "tcp",
                          reason ? "SANDBOXD_REASON" : NULL, reason,
                          NULL);
}

static void send_status(Gate *g) {
        g->status_due = false;
        g->open_told = g->at_handler;
        (void) sd_notifyf(false, "STATUS=" GATE_STATUS_FORMAT, g->served, g->refused, g->at_handler);
}

static int on_status_timer(sd_event_source *source, uint64_t usec, void *userdata) {
        Gate *g = userdata;

        if (g->status_due)
                send_status(g);
        return 0;
}

void gate_note_status(Gate *g) {
        /* A request reaching the handler while systemd was last told none
         * was open goes at once: sandboxd must not take the worker for idle
         * (and suspend it) while it is served. Every other change waits for
         * the timer, so a flood costs PID 1 a message a second or two. */
        if (g->at_handler > 0 && g->open_told == 0) {
                send_status(g);
                return;
        }
        if (g->status_due)
                return;
        g->status_due = true;
        if (sd_event_source_set_time_relative(g->status_timer, USEC_PER_SEC) >= 0)
                (void) sd_event_source_set_enabled(g->status_timer, SD_EVENT_ONESHOT);
}

/* ---- listeners ---- */

static int on_accept(sd_event_source *source, int fd, uint32_t revents, void *userdata) {
        Gate *g = userdata;
        bool front = false;
        int family = 0;
        socklen_t len = sizeof(family);
        if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &family, &len) == 0)
                front = family == AF_UNIX;
        for (;;) {
                int c = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
                if (c < 0) {
                        if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
                                log_warning_errno(-errno, "Failed to accept a connection: %m");
                        return 0;
                }
                int r = gate_session_start(g, c, front);
                if (r < 0)
                        log_warning_errno(r, "Failed to start a session: %m");
        }
}

int gate_add_listener(Gate *g, int fd, bool front) {
        int r;

        if (g->n_listeners == GATE_LISTENERS_MAX) {
                safe_close(fd);
                return -E2BIG;
        }
        (void) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
        r = sd_event_add_io(g->event, &g->listeners[g->n_listeners], fd, EPOLLIN, on_accept, g);
        if (r < 0) {
                safe_close(fd);
                return r;
        }
        (void) sd_event_source_set_io_fd_own(g->listeners[g->n_listeners], true);
        (void) sd_event_source_set_description(g->listeners[g->n_listeners], front ? "gate-unix" : "gate-tcp");
        g->n_listeners++;
        return 0;
}

void gate_session_gone(Gate *g) {
        if (g->draining && g->n_sessions == 0 && g->event && sd_event_get_state(g->event) != SD_EVENT_FINISHED)
                (void) sd_event_exit(g->event, 0);
}

static int on_drain_deadline(sd_event_source *source, uint64_t usec, void *userdata) {
        Gate *g = userdata;

        log_warning("Stopping with %u connections still under way: the drain's time is up", g->n_sessions);
        return sd_event_exit(g->event, 0);
}

int gate_drain(Gate *g, uint64_t deadline_usec) {
        int r;

        if (g->draining)
                return 0;
        g->draining = true;
        for (size_t i = 0; i < g->n_listeners; i++) {
                (void) on_accept(g->listeners[i], sd_event_source_get_io_fd(g->listeners[i]), EPOLLIN, g);
                g->listeners[i] = sd_event_source_disable_unref(g->listeners[i]);
        }
        g->n_listeners = 0;
        gate_drain_sessions(g);
        log_info("Draining: no new connections, %u under way", g->n_sessions);
        if (g->n_sessions == 0)
                return sd_event_exit(g->event, 0);
        r = sd_event_add_time(g->event, &g->drain_timer, CLOCK_MONOTONIC, deadline_usec, 0, on_drain_deadline, g);
        return r < 0 ? sd_event_exit(g->event, 0) : 0;
}

/* systemd's stop: the requests under way are answered first (a worker's
 * checkpoint must not catch one half way, nor a handshake to its handler). */
static int on_stop_signal(sd_event_source *source, const struct signalfd_siginfo *si, void *userdata) {
        Gate *g = userdata;
        const GateConfig *c = &g->config;

        return gate_drain(g, now_usec(CLOCK_MONOTONIC) + c->body_timeout_usec + c->timeout_usec);
}

static int add_activated(Gate *g) {
        int n = sd_listen_fds(true);

        if (n < 0)
                return log_error_errno(n, "Failed to read socket activation fds: %m");
        for (int i = 0; i < n; i++) {
                int fd = SD_LISTEN_FDS_START + i, family = 0;
                socklen_t len = sizeof(family);
                if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &family, &len) < 0)
                        return log_error_errno(-errno, "Failed to read an activated socket: %m");
                /* Anyone on the host may connect to a TCP port: there the
                 * token is the only wall, so no public endpoint is served. */
                if (family != AF_UNIX && g->config.public) {
                        log_error("A public endpoint on a TCP socket: refusing to serve");
                        return -EPERM;
                }
                int r = gate_add_listener(g, fd, family == AF_UNIX);
                if (r < 0)
                        return log_error_errno(r, "Failed to watch an activated socket: %m");
        }
        if (g->n_listeners == 0) {
                log_error("Nothing to listen on: not socket-activated");
                return -EINVAL;
        }
        return 0;
}

static int run(int argc, char **argv) {
        Args args = {};
        Gate g = { .started_usec = now_usec(CLOCK_MONOTONIC) };
        sd_event_source *sig;
        int r;

        r = parse_args(argc, argv, &args);
        if (r <= 0)
                return r;
        signal(SIGPIPE, SIG_IGN);
        sigset_t mask;
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigprocmask(SIG_BLOCK, &mask, NULL);

        r = load(&g, &args);
        if (r < 0)
                goto finish;
        r = sd_event_default(&g.event);
        if (r < 0) {
                log_error_errno(r, "Failed to allocate event loop: %m");
                goto finish;
        }
        if (sd_event_add_signal(g.event, &sig, SIGTERM, on_stop_signal, &g) >= 0)
                (void) event_source_float(sig, "sigterm");
        if (sd_event_add_signal(g.event, &sig, SIGINT, on_stop_signal, &g) >= 0)
                (void) event_source_float(sig, "sigint");
        r = sd_event_add_time_relative(g.event, &g.status_timer, CLOCK_MONOTONIC, USEC_PER_SEC, 0, on_status_timer,
                                       &g);
        if (r < 0) {
                log_error_errno(r, "Failed to add the status timer: %m");
                goto finish;
        }
        (void) sd_event_source_set_enabled(g.status_timer, SD_EVENT_OFF);
        journal_batch_init(&g.journal, g.event);
        log_limit_init(&g.refusal_log, LOG_LIMIT_BURST_DEFAULT, LOG_LIMIT_WINDOW_USEC_DEFAULT);
        r = add_activated(&g);
        if (r < 0)
                goto finish;

        /* From here on the process reads bytes a caller and a handler control. */
        r = egress_drop_capabilities();
        if (r < 0) {
                log_error_errno(r, "Failed to drop capabilities: %m");
                goto finish;
        }
        r = egress_install_seccomp();
        if (r < 0) {
                log_error_errno(r, "Failed to install seccomp filter: %m");
                goto finish;
        }
        log_info("sandbox-gate ready: worker %s, handler %s:%u, %zu listeners, %s", g.config.worker_id,
                 g.config.upstream_host, (unsigned) g.config.upstream_port, g.n_listeners,
                 g.config.public ? "public" : "token required");
        send_status(&g);
        (void) sd_notify(false, "READY=1");

        r = sd_event_loop(g.event);
        if (r < 0)
                log_error_errno(r, "Event loop failed: %m");
finish:
        gate_free_sessions(&g);
        if (g.event)
                journal_batch_done(&g.journal);
        for (size_t i = 0; i < g.n_listeners; i++)
                sd_event_source_disable_unref(g.listeners[i]);
        sd_event_source_disable_unref(g.status_timer);
        sd_event_source_disable_unref(g.drain_timer);
        sd_event_unref(g.event);
        explicit_bzero(g.token, sizeof(g.token));
        return r;
}

int main(int argc, char **argv) {
        return run(argc, argv) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
