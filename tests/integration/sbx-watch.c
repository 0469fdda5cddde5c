/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Integration-test client that listens to sandboxd's signals the way a
 * client or an eavesdropper would, and prints each one it receives.
 *
 *   sbx-watch [--no-subscribe] [--eavesdrop]
 *
 * Adds match rules for every signal sandboxd sends (sender org.sandboxd1,
 * and anything under /org/sandboxd1), calls Manager.Subscribe unless
 * --no-subscribe, and with --eavesdrop also asks dbus-daemon for signals
 * addressed to other clients (eavesdrop='true'; "eavesdrop-refused" is
 * printed if the bus refuses the rule). Then prints "ready" and one line a
 * signal, "MEMBER PATH -> DESTINATION: BODY", until killed. The subscribe
 * error, if any, is printed as "subscribe-error NAME". */

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <systemd/sd-bus.h>

static int on_match(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        return 0;
}

/* A filter sees every message that arrives, whatever it is addressed to
 * and whichever rule brought it. */
static int on_message(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        const char *sender = sd_bus_message_get_sender(m);
        char *dump = NULL;
        size_t size = 0;
        uint8_t type = 0;
        FILE *f;

        if (sd_bus_message_get_type(m, &type) < 0 || type != SD_BUS_MESSAGE_SIGNAL ||
            (sender && strcmp(sender, "org.freedesktop.DBus") == 0))
                return 0;
        f = open_memstream(&dump, &size);
        if (!f)
                return 0;
        (void) sd_bus_message_dump(m, f, 0);
        fclose(f);
        for (char *p = dump; p && *p; p++)
                if (*p == '\n')
                        *p = ' ';
        printf("%s %s -> %s: %s\n", sd_bus_message_get_member(m) ?: "?", sd_bus_message_get_path(m) ?: "?",
               sd_bus_message_get_destination(m) ?: "(broadcast)", dump ?: "");
        fflush(stdout);
        free(dump);
        return 0;
}

static void subscribe_now(sd_bus *bus) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        int r;

        r = sd_bus_call_method(bus, "org.sandboxd1", "/org/sandboxd1", "org.sandboxd1.Manager", "Subscribe", &error,
                               NULL, NULL);
        if (r < 0)
                printf("subscribe-error %s\n", error.name ?: strerror(-r));
        sd_bus_error_free(&error);
}

/* A restarted sandboxd knows none of its old subscribers. */
static int on_owner_changed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        const char *name, *old_owner, *new_owner;

        if (sd_bus_message_read(m, "sss", &name, &old_owner, &new_owner) >= 0 && *new_owner)
                subscribe_now(sd_bus_message_get_bus(m));
        return 0;
}

int main(int argc, char *argv[]) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        bool subscribe = true, eavesdrop = false;
        sd_bus *bus = NULL;
        int r;

        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--no-subscribe") == 0)
                        subscribe = false;
                else if (strcmp(argv[i], "--eavesdrop") == 0)
                        eavesdrop = true;
                else {
                        fprintf(stderr, "usage: sbx-watch [--no-subscribe] [--eavesdrop]\n");
                        return 2;
                }
        }
        r = sd_bus_open_system(&bus);
        if (r < 0) {
                fprintf(stderr, "sbx-watch: cannot connect to the system bus: %s\n", strerror(-r));
                return 1;
        }
        r = sd_bus_add_filter(bus, NULL, on_message, NULL);
        if (r >= 0)
                r = sd_bus_add_match(bus, NULL, "type='signal',sender='org.sandboxd1'", on_match, NULL);
        if (r >= 0)
                r = sd_bus_add_match(bus, NULL, "type='signal',path_namespace='/org/sandboxd1'", on_match, NULL);
        if (r < 0) {
                fprintf(stderr, "sbx-watch: cannot add match rules: %s\n", strerror(-r));
                return 1;
        }
        if (eavesdrop) {
                /* Straight to the bus: sd-bus has no such key in its own rules. */
                r = sd_bus_call_method(bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                       "AddMatch", &error, NULL, "s", "type='signal',eavesdrop='true'");
                if (r < 0)
                        printf("eavesdrop-refused %s\n", error.name ?: strerror(-r));
                sd_bus_error_free(&error);
        }
        if (subscribe) {
                r = sd_bus_add_match(bus, NULL,
                                     "type='signal',sender='org.freedesktop.DBus',member='NameOwnerChanged',"
                                     "arg0='org.sandboxd1'", on_owner_changed, NULL);
                if (r < 0) {
                        fprintf(stderr, "sbx-watch: cannot watch sandboxd restarting: %s\n", strerror(-r));
                        return 1;
                }
                subscribe_now(bus);
        }
        printf("ready\n");
        fflush(stdout);
        for (;;) {
                r = sd_bus_process(bus, NULL);
                if (r < 0) {
                        fprintf(stderr, "sbx-watch: %s\n", strerror(-r));
                        return 1;
                }
                if (r > 0)
                        continue;
                r = sd_bus_wait(bus, UINT64_MAX);
                if (r < 0 && r != -EINTR) {
                        fprintf(stderr, "sbx-watch: %s\n", strerror(-r));
                        return 1;
                }
        }
}
