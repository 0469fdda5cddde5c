/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Measures, for N workers of one class, the time from calling CreateWorker
 * to the first byte the worker writes on its channel. Prints one latency in
 * microseconds per line, so the caller can compute percentiles.
 *   sbx-bench-start CLASS N [pooled|cold [READY]]
 * With a mode, every worker's StartMode must be that mode (else it fails),
 * and for "pooled" each sample first waits, untimed, until READY (default 1)
 * pooled sandboxes are ready, so the series measures claims, not a pool
 * that ran dry. */
#include <errno.h>
#include <stdbool.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <systemd/sd-bus.h>

static long long now_us(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

/* Waits until the worker has ended and its unit is gone (the daemon sets the
 * final state only then), so that one worker's teardown does not eat into the
 * next one's start, just as the bare baselines wait for their runtime to exit. */
static int wait_ended(sd_bus *bus, const char *path, int fd) {
        char buf[4096];
        struct pollfd p = { .fd = fd, .events = POLLIN };

        while (poll(&p, 1, 30000) == 1 && read(fd, buf, sizeof(buf)) > 0)
                ;
        for (int i = 0; i < 3000; i++) {
                char *state = NULL;
                int r = sd_bus_get_property_string(bus, "org.sandboxd1", path, "org.sandboxd1.Worker", "State",
                                                   NULL, &state);
                bool ended = r < 0 || strcmp(state, "ended") == 0;
                free(state);
                if (ended)
                        return 0;
                usleep(10000);
        }
        return -ETIMEDOUT;
}

static int wait_pooled(sd_bus *bus, uint32_t ready) {
        for (int i = 0; i < 6000; i++) {
                uint32_t n = 0;
                sd_bus_message *reply = NULL;
                int r = sd_bus_get_property(bus, "org.sandboxd1", "/org/sandboxd1", "org.sandboxd1.Manager",
                                            "PooledSandboxes", NULL, &reply, "u");
                if (r >= 0)
                        r = sd_bus_message_read(reply, "u", &n);
                sd_bus_message_unref(reply);
                if (r < 0)
                        return r;
                if (n >= ready)
                        return 0;
                usleep(10000);
        }
        return -ETIMEDOUT;
}

static int check_mode(sd_bus *bus, const char *path, const char *mode) {
        char *got = NULL;
        int r = sd_bus_get_property_string(bus, "org.sandboxd1", path, "org.sandboxd1.Worker", "StartMode", NULL,
                                           &got);
        if (r >= 0 && strcmp(got, mode) != 0) {
                fprintf(stderr, "worker %s started %s, not %s\n", path, got, mode);
                r = -EPROTO;
        }
        free(got);
        return r;
}

static int one(sd_bus *bus, const char *class, const char *mode, uint32_t ready, long long *ret_us) {
        sd_bus_error e = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        const char *id, *path;
        char buf[8];
        int fd, r;
        long long t0;

        if (mode && strcmp(mode, "pooled") == 0) {
                r = wait_pooled(bus, ready);
                if (r < 0) {
                        fprintf(stderr, "no pooled sandbox became ready: %s\n", strerror(-r));
                        return r;
                }
        }
        t0 = now_us();

        r = sd_bus_call_method(bus, "org.sandboxd1", "/org/sandboxd1", "org.sandboxd1.Manager", "CreateWorker",
                               &e, &reply, "a{sv}", 3, "Argv", "as", 2, "/bin/echo", "x", "Class", "s", class,
                               /* A quota that does not bind on this machine: the
                                * benchmark measures what sandboxd adds, not the
                                * default 50% CPU cap slowing runsc's start. */
                               "CPUQuotaPercent", "u", 400);
        if (r < 0) {
                fprintf(stderr, "CreateWorker: %s\n", e.message ?: strerror(-r));
                sd_bus_error_free(&e);
                return r;
        }
        r = sd_bus_message_read(reply, "so", &id, &path);
        if (r >= 0) {
                sd_bus_message *ch = NULL;
                r = sd_bus_call_method(bus, "org.sandboxd1", "/org/sandboxd1", "org.sandboxd1.Manager",
                                       "OpenChannel", &e, &ch, "s", id);
                if (r >= 0 && sd_bus_message_read(ch, "h", &fd) >= 0) {
                        struct pollfd p = { .fd = fd, .events = POLLIN };
                        /* The worker may end before its first byte is read: the
                         * daemon keeps its output buffered for the channel. */
                        if (poll(&p, 1, 30000) == 1 && read(fd, buf, 1) == 1) {
                                *ret_us = now_us() - t0;
                                r = mode ? check_mode(bus, path, mode) : 0;
                                if (r >= 0)
                                        r = wait_ended(bus, path, fd);
                        } else
                                r = -ETIMEDOUT;
                }
                sd_bus_message_unref(ch);
        }
        if (r < 0)
                fprintf(stderr, "OpenChannel: %s\n", e.message ?: strerror(-r));
        sd_bus_error_free(&e);
        sd_bus_message_unref(reply);
        return r;
}

int main(int argc, char *argv[]) {
        sd_bus *bus = NULL;
        int n, r;

        if (argc < 3 || argc > 5 || (n = atoi(argv[2])) <= 0 ||
            (argc >= 4 && strcmp(argv[3], "pooled") != 0 && strcmp(argv[3], "cold") != 0) ||
            (argc == 5 && atoi(argv[4]) <= 0)) {
                fprintf(stderr, "usage: %s CLASS N [pooled|cold [READY]]\n", argv[0]);
                return 2;
        }
        r = sd_bus_open_system(&bus);
        if (r < 0) {
                fprintf(stderr, "system bus: %s\n", strerror(-r));
                return 1;
        }
        for (int i = 0; i < n; i++) {
                long long us = 0;
                if (one(bus, argv[1], argc >= 4 ? argv[3] : NULL, argc == 5 ? (uint32_t) atoi(argv[4]) : 1, &us) < 0)
                        return 1;
                printf("%lld\n", us);
                fflush(stdout);
        }
        sd_bus_unref(bus);
        return 0;
}
