/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>
#include <systemd/sd-bus.h>

/* sd-bus builds messages only on a bus that has left the unset state; a bus
 * on one end of a socketpair, started but never read, is enough. */
static inline sd_bus *test_bus_new(int *ret_peer) {
        sd_bus *bus = NULL;
        int pair[2];

        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0)
                return NULL;
        if (sd_bus_new(&bus) < 0 || sd_bus_set_fd(bus, pair[0], pair[0]) < 0 || sd_bus_start(bus) < 0) {
                sd_bus_unref(bus);
                return NULL;
        }
        *ret_peer = pair[1];
        return bus;
}

/* Seals M and renders it as sd-bus's textual dump, for substring checks. */
static inline char *test_message_dump(sd_bus_message *m) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        if (!f)
                return NULL;
        if (sd_bus_message_seal(m, 1, 0) < 0 || sd_bus_message_rewind(m, 1) < 0 ||
            sd_bus_message_dump(m, f, 0) < 0) {
                fclose(f);
                free(buf);
                return NULL;
        }
        fclose(f);
        return buf;
}
