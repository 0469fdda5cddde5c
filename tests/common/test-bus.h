/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* sd-bus only builds messages on a bus that has been started; a socketpair
 * with nobody on the other end is enough for building, sealing and reading
 * messages back, without any bus daemon. */

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>
#include <errno.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>
#include <systemd/sd-id128.h>

/* The peer end must stay open while the bus starts (it writes its AUTH
 * line): the caller closes *ret_peer when done. */
static inline sd_bus *test_bus_new_offline(int *ret_peer) {
        sd_bus *bus = NULL;
        int sv[2];

        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
                return NULL;
        if (sd_bus_new(&bus) < 0 || sd_bus_set_fd(bus, sv[0], sv[0]) < 0 || sd_bus_start(bus) < 0) {
                sd_bus_unref(bus);
                close(sv[1]);
                return NULL;
        }
        *ret_peer = sv[1];
        return bus;
}

static inline sd_bus_message *test_message_new(sd_bus *bus, const char *member) {
        sd_bus_message *m = NULL;

        if (sd_bus_message_new_method_call(bus, &m, "org.sandboxd1", "/org/sandboxd1", "org.sandboxd1.Manager",
                                           member) < 0)
                return NULL;
        return m;
}

/* Makes a message readable from the start, as a received one would be. */
static inline int test_message_seal(sd_bus_message *m) {
        static uint64_t cookie = 1;
        int r = sd_bus_message_seal(m, cookie++, 0);
        if (r < 0)
                return r;
        r = sd_bus_message_rewind(m, true);
        return r < 0 ? r : 0;
}

/* Seals M and renders it as sd-bus's textual dump, for substring checks. */
static inline char *test_message_dump(sd_bus_message *m) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f;

        if (test_message_seal(m) < 0)
                return NULL;
        f = open_memstream(&buf, &size);
        if (!f)
                return NULL;
        if (sd_bus_message_dump(m, f, 0) < 0) {
                fclose(f);
                free(buf);
                return NULL;
        }
        fclose(f);
        return buf;
}

/* A client and a server bus on a socketpair, both on EVENT: the server
 * plays a peer (systemd, in the unit-stop and unit-drop tests) through
 * FILTER. Returns 0, or a negative errno; the caller waits for both to be
 * ready (sd_bus_is_ready) before it calls anything. */
static inline int test_bus_pair(sd_event *event, sd_bus_message_handler_t filter, void *userdata,
                                sd_bus **ret_client, sd_bus **ret_server, sd_bus_slot **ret_filter) {
        sd_bus *client = NULL, *server = NULL;
        sd_id128_t id;
        int sv[2], r;

        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
                return -errno;
        r = sd_id128_randomize(&id);
        if (r >= 0)
                r = sd_bus_new(&server);
        if (r >= 0)
                r = sd_bus_set_fd(server, sv[1], sv[1]);
        if (r >= 0)
                r = sd_bus_set_server(server, 1, id);
        if (r >= 0)
                r = sd_bus_add_filter(server, ret_filter, filter, userdata);
        if (r >= 0)
                r = sd_bus_start(server);
        if (r >= 0)
                r = sd_bus_attach_event(server, event, 0);
        if (r >= 0)
                r = sd_bus_new(&client);
        if (r >= 0)
                r = sd_bus_set_fd(client, sv[0], sv[0]);
        if (r >= 0)
                r = sd_bus_start(client);
        if (r >= 0)
                r = sd_bus_attach_event(client, event, 0);
        if (r < 0) {
                sd_bus_unref(client);
                sd_bus_unref(server);
                return r;
        }
        *ret_client = client;
        *ret_server = server;
        return 0;
}
