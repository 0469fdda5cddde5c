/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The files integration test's client of OpenFile, CommitFile and AbortFile
 * (tests/files/integration.sh), where sandboxctl cp does all three at once:
 *   sbx-file ID PATH MODE THEN
 * opens PATH of worker ID in MODE (read: the data to stdout; any other: stdin
 * into it), closes its end, then THEN: "commit" (prints the bytes),
 * "abort", "leave" (exits without a word: the bus connection goes), or
 * "commit-when:FILE" (commits once FILE exists; prints "written" on stderr
 * first, so a test can look at the target in between). Errors: the D-Bus
 * error's name and message on stderr, exit 1. Not installed. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>
#include <unistd.h>

static int fail(const char *what, const sd_bus_error *e, int r) {
        if (e && sd_bus_error_is_set(e))
                fprintf(stderr, "%s: %s: %s\n", what, e->name, e->message);
        else
                fprintf(stderr, "%s: %s\n", what, strerror(-r));
        return 1;
}

static int pump(int in, int out) {
        char buf[65536];
        for (;;) {
                ssize_t n = read(in, buf, sizeof(buf));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return n < 0 ? -errno : 0;
                for (ssize_t off = 0; off < n; ) {
                        ssize_t w = write(out, buf + off, (size_t) (n - off));
                        if (w < 0)
                                return -errno;
                        off += w;
                }
        }
}

int main(int argc, char *argv[]) {
        sd_bus *bus = NULL;
        sd_bus_message *reply = NULL;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        const char *object, *handle;
        char path[256], *h;
        uint64_t bytes;
        int fd, r;

        if (argc != 5) {
                fprintf(stderr, "usage: sbx-file ID PATH MODE commit|abort|leave|commit-when:FILE\n");
                return 2;
        }
        r = sd_bus_open_system(&bus);
        if (r < 0)
                return fail("connect", NULL, r);
        r = sd_bus_call_method(bus, "org.sandboxd1", "/org/sandboxd1", "org.sandboxd1.Manager", "GetWorker", &error,
                               &reply, "s", argv[1]);
        if (r < 0)
                return fail("GetWorker", &error, r);
        if (sd_bus_message_read(reply, "o", &object) < 0)
                return 1;
        snprintf(path, sizeof(path), "%s", object);
        reply = sd_bus_message_unref(reply);
        r = sd_bus_call_method(bus, "org.sandboxd1", path, "org.sandboxd1.Worker", "OpenFile", &error, &reply,
                               "ssa{sv}", argv[2], argv[3], 0);
        if (r < 0)
                return fail("OpenFile", &error, r);
        if (sd_bus_message_read(reply, "hs", &fd, &handle) < 0)
                return 1;
        h = strdup(handle);
        fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        reply = sd_bus_message_unref(reply);
        r = strcmp(argv[3], "read") == 0 ? pump(fd, STDOUT_FILENO) : pump(STDIN_FILENO, fd);
        close(fd);
        if (r < 0)
                return fail("data", NULL, r);
        if (strcmp(argv[4], "leave") == 0)
                return 0;
        if (strcmp(argv[4], "abort") == 0) {
                r = sd_bus_call_method(bus, "org.sandboxd1", path, "org.sandboxd1.Worker", "AbortFile", &error, NULL,
                                       "s", h);
                return r < 0 ? fail("AbortFile", &error, r) : 0;
        }
        if (strncmp(argv[4], "commit-when:", 12) == 0) {
                fprintf(stderr, "written\n");
                while (access(argv[4] + 12, F_OK) < 0)
                        usleep(50 * 1000);
        } else if (strcmp(argv[4], "commit") != 0)
                return 2;
        r = sd_bus_call_method(bus, "org.sandboxd1", path, "org.sandboxd1.Worker", "CommitFile", &error, &reply, "s", h);
        if (r < 0)
                return fail("CommitFile", &error, r);
        if (sd_bus_message_read(reply, "t", &bytes) < 0)
                return 1;
        printf("%" PRIu64 "\n", bytes);
        return 0;
}
