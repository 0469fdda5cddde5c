/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <getopt.h>
#include <signal.h>
#include <systemd/sd-daemon.h>

#include "adopt.h"
#include "bus-manager.h"
#include "config.h"
#include "event-util.h"
#include "manager.h"

static void help(void) {
        printf("sandboxd [--config FILE] [--check-config]\n\n"
               "The sandboxd supervisor: runs conversation workers as transient systemd units.\n"
               "  --config FILE    configuration (default " SANDBOXD_CONFIG_FILE ")\n"
               "  --check-config   parse the configuration, report errors and exit\n");
}

/* A restart of sandboxd is not the end of its workers: they keep running,
 * their state and stdio pipes are kept (adopt.h), and the next start
 * re-adopts them. A stop for good (systemd's stop job: "systemctl stop", a
 * package's removal, which stops the service in prerm, shutdown) still stops
 * every worker and wipes their homes, as nothing may outlive the daemon that
 * accounts for it: the fd store goes with a stopped service, so nothing could
 * be re-adopted anyway. Deciding here, from the job systemd runs, keeps that
 * true whoever stops the service, without a helper in the package. This runs
 * before the loop exits, while the bus is still connected. */
static int on_terminate(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Manager *m = userdata;

        (void) sd_notify(false, "STOPPING=1");
        if (manager_stop_is_final(m))
                (void) manager_wipe_leftovers(m);
        else
                manager_save_all(m);
        return sd_event_exit(sd_event_source_get_event(s), 0);
}

/* The bus going away ("systemctl restart dbus", a crash of dbus-daemon)
 * leaves sd-bus with a dead connection: the daemon would run on, holding its
 * workers yet reachable by no one, and nothing would ever take the name
 * again. It is a restart instead: the state is saved as for one, and the
 * failure exit has systemd start a new daemon (Restart=on-failure), which
 * re-adopts every worker on the new bus. PID 1 drops its private connection
 * when it is re-executed (daemon-reexec, an upgrade of systemd): the same
 * restart is the answer there, since reconnecting in place would still have
 * to subscribe again and re-read every unit, and the restart already does
 * that (manager_restore), proven by the restart tests. */
static int on_bus_disconnected(sd_bus_message *message, void *userdata, sd_bus_error *ret_error) {
        Manager *m = userdata;

        log_warning("Lost the connection to %s; exiting so that systemd restarts sandboxd",
                    sd_bus_message_get_bus(message) == m->systemd ? "systemd (re-executed?)" : "the system bus");
        (void) sd_notify(false, "STOPPING=1");
        manager_save_all(m);
        return sd_event_exit(m->event, EXIT_FAILURE);
}

int main(int argc, char *argv[]) {
        static const struct option options[] = {
                { "config", required_argument, NULL, 'c' },
                { "check-config", no_argument, NULL, 'C' },
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, 'V' },
                {}
        };
        const char *config_path = SANDBOXD_CONFIG_FILE;
        bool check_only = false;
        Manager *m = NULL;
        SbxError e = {};
        sd_event_source *sig;
        sigset_t mask;
        int c, r;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'c':
                        config_path = optarg;
                        break;
                case 'C':
                        check_only = true;
                        break;
                case 'h':
                        help();
                        return 0;
                case 'V':
                        printf("sandboxd %s\n", SANDBOXD_VERSION);
                        return 0;
                default:
                        return 2;
                }

        r = manager_new(&m, config_path, &e);
        if (r < 0) {
                log_error("%s", e.name ? e.message : strerror(-r));
                return 1;
        }
        if (check_only) {
                manager_free(m);
                printf("%s: OK\n", config_path);
                return 0;
        }
        /* Before manager_startup(): the workers its restore re-adopts report
         * to the bus from the first state change on. */
        r = bus_manager_listen(m);
        if (r < 0) {
                log_error_errno(r, "Failed to set up the bus API: %m");
                goto finish;
        }

        /* A worker that closes its stdin must give the channel EPIPE, not kill
         * the daemon (systemd ignores SIGPIPE for services; a manual run does not). */
        (void) signal(SIGPIPE, SIG_IGN);
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        /* sd-event's child sources (workspace-mkfs.h) need it blocked. */
        sigaddset(&mask, SIGCHLD);
        sigprocmask(SIG_BLOCK, &mask, NULL);
        if (sd_event_add_signal(m->event, &sig, SIGTERM, on_terminate, m) >= 0)
                (void) event_source_float(sig, "sigterm");
        if (sd_event_add_signal(m->event, &sig, SIGINT, on_terminate, m) >= 0)
                (void) event_source_float(sig, "sigint");

        r = manager_startup(m);
        if (r >= 0)
                r = bus_manager_install(m);
        if (r >= 0)
                r = manager_serve(m);
        if (r < 0)
                goto finish;
        r = sd_bus_match_signal(m->bus, NULL, NULL, "/org/freedesktop/DBus/Local", "org.freedesktop.DBus.Local",
                                "Disconnected", on_bus_disconnected, m);
        if (r >= 0 && m->systemd != m->bus)
                r = sd_bus_match_signal(m->systemd, NULL, NULL, "/org/freedesktop/DBus/Local",
                                        "org.freedesktop.DBus.Local", "Disconnected", on_bus_disconnected, m);
        if (r < 0) {
                log_error_errno(r, "Failed to watch the bus connection: %m");
                goto finish;
        }
        (void) sd_notify(false, "READY=1\nSTATUS=0 worker(s) running");
        log_info("sandboxd %s ready", SANDBOXD_VERSION);
        r = sd_event_loop(m->event);
        bus_manager_free(m);
        manager_free(m);
        return r < 0 ? 1 : r;
finish:
        bus_manager_free(m);
        manager_free(m);
        return 1;
}
