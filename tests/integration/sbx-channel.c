/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Integration-test client for sandboxd's channel: busctl cannot hold the fd
 * that OpenChannel returns, so this does, and reports what came back.
 *
 *   sbx-channel roundtrip ID DATA          Manager.OpenChannel, write DATA, expect it echoed within 5 s
 *   sbx-channel worker-roundtrip ID DATA   the same through the Worker object's OpenChannel
 *   sbx-channel pace ID INTERVAL_MS COUNT  send one byte every INTERVAL_MS, COUNT times, each echoed
 *   sbx-channel busy ID                    hold one channel and open a second; print the second's error
 *   sbx-channel read ID TIMEOUT_MS         print what the worker writes until EOF or the timeout
 *   sbx-channel drop ID WAIT_MS            open the channel, read nothing for WAIT_MS, then exit
 *                                          (a client that dies with the worker's output unread)
 *   sbx-channel stop-burst ID...           Manager.StopWorker for every ID, all sent before the
 *                                          first reply is read (as many clients at once would)
 *
 * D-Bus errors print as "error: NAME: MESSAGE" on stderr; the exit status is 0
 * only when the operation did what it says above. */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-bus.h>

/* Generous: a gVisor worker's cat may still be booting on a loaded host,
 * and the callers bound the whole run with timeout(1) anyway. */
#define ECHO_TIMEOUT_MS 20000

static int open_channel(sd_bus *bus, const char *id, int via_worker, int quiet_error, char *error_name, size_t error_name_size) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        char path[256];
        int r, fd;

        if (via_worker) {
                snprintf(path, sizeof path, "/org/sandboxd1/worker/%s", id);
                r = sd_bus_call_method(bus, "org.sandboxd1", path, "org.sandboxd1.Worker", "OpenChannel",
                                       &error, &reply, "");
        } else
                r = sd_bus_call_method(bus, "org.sandboxd1", "/org/sandboxd1", "org.sandboxd1.Manager",
                                       "OpenChannel", &error, &reply, "s", id);
        if (r < 0) {
                if (error_name)
                        snprintf(error_name, error_name_size, "%s", error.name ? error.name : "");
                if (!quiet_error)
                        fprintf(stderr, "error: %s: %s\n", error.name ? error.name : strerror(-r),
                                error.message ? error.message : "");
                sd_bus_error_free(&error);
                return r;
        }
        r = sd_bus_message_read(reply, "h", &fd);
        if (r < 0) {
                fprintf(stderr, "error: cannot read the fd from the reply: %s\n", strerror(-r));
                sd_bus_message_unref(reply);
                return r;
        }
        /* The fd belongs to the message; keep our own copy. */
        fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        r = fd < 0 ? -errno : fd;
        sd_bus_message_unref(reply);
        return r;
}

static int write_all(int fd, const char *buf, size_t len) {
        while (len > 0) {
                ssize_t n = write(fd, buf, len);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                buf += n;
                len -= (size_t) n;
        }
        return 0;
}

/* Reads up to len bytes; returns how many arrived before EOF or the timeout. */
/* Reads up to LEN bytes for at most TIMEOUT_MS; *RET_CLOSED tells an end
 * of file from a timeout. */
static ssize_t read_for(int fd, char *buf, size_t len, int timeout_ms, int *ret_closed) {
        struct timespec start, now;
        size_t got = 0;

        if (ret_closed)
                *ret_closed = 0;
        clock_gettime(CLOCK_MONOTONIC, &start);
        while (got < len) {
                struct pollfd p = { .fd = fd, .events = POLLIN };
                long elapsed;
                int r;

                clock_gettime(CLOCK_MONOTONIC, &now);
                elapsed = (now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000;
                if (elapsed >= timeout_ms)
                        break;
                r = poll(&p, 1, (int) (timeout_ms - elapsed));
                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0)
                        return -errno;
                if (r == 0)
                        break;
                ssize_t n = read(fd, buf + got, len - got);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0) {
                        if (ret_closed)
                                *ret_closed = 1;
                        break;
                }
                got += (size_t) n;
        }
        return (ssize_t) got;
}

static int roundtrip(sd_bus *bus, const char *id, const char *data, int via_worker) {
        size_t len = strlen(data);
        char *back;
        ssize_t n;
        int fd, r, closed;

        fd = open_channel(bus, id, via_worker, 0, NULL, 0);
        if (fd < 0)
                return 1;
        r = write_all(fd, data, len);
        if (r < 0) {
                fprintf(stderr, "error: write to the channel: %s\n", strerror(-r));
                close(fd);
                return 1;
        }
        back = calloc(1, len + 1);
        if (!back) {
                close(fd);
                return 1;
        }
        n = read_for(fd, back, len, ECHO_TIMEOUT_MS, &closed);
        close(fd);
        if (n < 0) {
                fprintf(stderr, "error: read from the channel: %s\n", strerror((int) -n));
                free(back);
                return 1;
        }
        printf("%.*s\n", (int) n, back);
        r = (size_t) n == len && memcmp(back, data, len) == 0 ? 0 : 1;
        if (r)
                fprintf(stderr, "error: sent %zu bytes, got %zd back (%s)\n", len, n,
                        closed ? "the channel closed" : "timed out");
        free(back);
        return r;
}

static int pace(sd_bus *bus, const char *id, int interval_ms, int count) {
        int fd, i;

        fd = open_channel(bus, id, 0, 0, NULL, 0);
        if (fd < 0)
                return 1;
        for (i = 0; i < count; i++) {
                char c = 'a' + (char) (i % 26), back = 0;
                struct timespec ts = { .tv_sec = interval_ms / 1000, .tv_nsec = (long) (interval_ms % 1000) * 1000000 };

                if (write_all(fd, &c, 1) < 0 || read_for(fd, &back, 1, ECHO_TIMEOUT_MS, NULL) != 1 || back != c) {
                        fprintf(stderr, "error: byte %d was not echoed\n", i);
                        close(fd);
                        return 1;
                }
                if (i + 1 < count)
                        nanosleep(&ts, NULL);
        }
        close(fd);
        printf("paced %d bytes\n", count);
        return 0;
}

static int busy(sd_bus *bus, const char *id) {
        char name[256] = "";
        int first, second;

        first = open_channel(bus, id, 0, 0, NULL, 0);
        if (first < 0)
                return 1;
        second = open_channel(bus, id, 0, 1, name, sizeof name);
        close(first);
        if (second >= 0) {
                close(second);
                fprintf(stderr, "error: a second channel was opened while the first was held\n");
                return 1;
        }
        printf("%s\n", name);
        return 0;
}

static int read_output(sd_bus *bus, const char *id, int timeout_ms) {
        char buf[65536];
        ssize_t n;
        int fd;

        fd = open_channel(bus, id, 0, 0, NULL, 0);
        if (fd < 0)
                return 1;
        n = read_for(fd, buf, sizeof buf, timeout_ms, NULL);
        close(fd);
        if (n < 0) {
                fprintf(stderr, "error: read from the channel: %s\n", strerror((int) -n));
                return 1;
        }
        fwrite(buf, 1, (size_t) n, stdout);
        return 0;
}

static int drop(sd_bus *bus, const char *id, int wait_ms) {
        struct timespec ts = { .tv_sec = wait_ms / 1000, .tv_nsec = (long) (wait_ms % 1000) * 1000000L };
        int fd;

        fd = open_channel(bus, id, 0, 0, NULL, 0);
        if (fd < 0)
                return 1;
        (void) nanosleep(&ts, NULL);
        close(fd);
        return 0;
}

static int stop_replied(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        const sd_bus_error *e = sd_bus_message_get_error(reply);
        int *pending = userdata;

        (*pending)--;
        if (e) {
                fprintf(stderr, "error: %s: %s\n", e->name, e->message ?: "");
                pending[1] = 1;
        }
        return 0;
}

static int stop_burst(sd_bus *bus, char **ids, int n) {
        int state[2] = { n, 0 };        /* replies still due, whether one was an error */

        for (int i = 0; i < n; i++) {
                int r = sd_bus_call_method_async(bus, NULL, "org.sandboxd1", "/org/sandboxd1",
                                                 "org.sandboxd1.Manager", "StopWorker", stop_replied, state, "s",
                                                 ids[i]);
                if (r < 0) {
                        fprintf(stderr, "error: cannot send StopWorker: %s\n", strerror(-r));
                        return 1;
                }
        }
        while (state[0] > 0) {
                int r = sd_bus_process(bus, NULL);
                if (r == 0)
                        r = sd_bus_wait(bus, UINT64_C(30) * 1000000);
                if (r < 0) {
                        fprintf(stderr, "error: waiting for StopWorker replies: %s\n", strerror(-r));
                        return 1;
                }
        }
        return state[1];
}

static int usage(void) {
        fprintf(stderr, "usage: sbx-channel roundtrip|worker-roundtrip ID DATA\n"
                        "       sbx-channel pace ID INTERVAL_MS COUNT\n"
                        "       sbx-channel busy ID\n"
                        "       sbx-channel read ID TIMEOUT_MS\n"
                        "       sbx-channel drop ID WAIT_MS\n"
                        "       sbx-channel stop-burst ID...\n");
        return 2;
}

int main(int argc, char **argv) {
        sd_bus *bus = NULL;
        int r;

        if (argc < 3)
                return usage();
        r = sd_bus_open_system(&bus);
        if (r < 0) {
                fprintf(stderr, "error: cannot connect to the system bus: %s\n", strerror(-r));
                return 1;
        }
        if (strcmp(argv[1], "roundtrip") == 0 && argc == 4)
                r = roundtrip(bus, argv[2], argv[3], 0);
        else if (strcmp(argv[1], "worker-roundtrip") == 0 && argc == 4)
                r = roundtrip(bus, argv[2], argv[3], 1);
        else if (strcmp(argv[1], "pace") == 0 && argc == 5)
                r = pace(bus, argv[2], atoi(argv[3]), atoi(argv[4]));
        else if (strcmp(argv[1], "busy") == 0 && argc == 3)
                r = busy(bus, argv[2]);
        else if (strcmp(argv[1], "drop") == 0 && argc == 4)
                r = drop(bus, argv[2], atoi(argv[3]));
        else if (strcmp(argv[1], "stop-burst") == 0)
                r = stop_burst(bus, argv + 2, argc - 2);
        else if (strcmp(argv[1], "read") == 0 && argc == 4)
                r = read_output(bus, argv[2], atoi(argv[3]));
        else
                r = usage();
        sd_bus_flush_close_unref(bus);
        return r;
}
