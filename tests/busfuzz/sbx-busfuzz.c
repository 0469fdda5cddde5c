/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Sends generated worker specs (spec-gen.h) to org.sandboxd1.Manager.CreateWorker
 * and checks every answer:
 *   - a refusal is a named org.sandboxd1.Error.* with a message; only
 *     arguments that are not one a{sv} may get org.freedesktop.DBus.Error.InvalidArgs
 *     (sd-bus refuses those by signature before sandboxd sees them);
 *   - an accepted spec created a worker, which is stopped (StopWorker) and
 *     must then be removed (WorkerRemoved) within the stop timeout;
 *   - the daemon is the same process at the end (its unique bus name) and
 *     still answers, with no worker of the run left (NWorkers back where it was).
 * Anything else (no reply, a generic error, a crash) is a failure, printed
 * with the case's number and its message, to be replayed with --first I --count 1.
 *
 *   sbx-busfuzz [--seed N] [--count N] [--first I] [--call-timeout SEC]
 *               [--stop-timeout SEC] [--max-pending N] [--budget BYTES] [--verbose]
 *
 * Prints a summary ("busfuzz: ...") and per-error counts; exits 0 only
 * when nothing failed. */

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-bus.h>

#include "spec-gen.h"

#define DEST "org.sandboxd1"
#define PATH "/org/sandboxd1"
#define MANAGER "org.sandboxd1.Manager"
#define ERROR_PREFIX "org.sandboxd1.Error."
#define FAILURES_SHOWN 20
#define NO_CASE UINT64_MAX     /* a failure of the run, not of one case */

typedef struct Options {
        uint64_t seed, first, count;
        uint64_t call_timeout_usec, stop_timeout_usec;
        size_t max_pending, budget;
        bool verbose;
} Options;

typedef struct Pending {
        char id[64];
        uint64_t deadline;
} Pending;

typedef struct Run {
        sd_bus *bus;
        const Options *opts;
        char **removed;                 /* ids WorkerRemoved named, in order */
        size_t n_removed;
        Pending *pending;               /* stopped (or ended) workers not yet removed */
        size_t n_pending;
        struct { char *name; uint64_t count; } *errors;
        size_t n_errors;
        uint64_t sent, accepted, refused, failures;
        uint64_t by_shape[_SPEC_SHAPE_MAX];
} Run;

static uint64_t now_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000;
}

static void failure(Run *run, uint64_t i, sd_bus_message *m, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void failure(Run *run, uint64_t i, sd_bus_message *m, const char *fmt, ...) {
        va_list ap;

        run->failures++;
        if (run->failures > FAILURES_SHOWN)
                return;
        if (i == NO_CASE)
                printf("FAIL (seed %" PRIu64 ", after the cases): ", run->opts->seed);
        else
                printf("FAIL case %" PRIu64 " (seed %" PRIu64 "): ", i, run->opts->seed);
        va_start(ap, fmt);
        vprintf(fmt, ap);
        va_end(ap);
        printf("\n");
        if (m) {
                /* The spec as sent, so the failure can be read without a replay. */
                printf("  replay: sbx-busfuzz --seed %" PRIu64 " --first %" PRIu64 " --count 1 --verbose\n",
                       run->opts->seed, i);
                if (run->opts->verbose)
                        sd_bus_message_dump(m, stdout, SD_BUS_MESSAGE_DUMP_WITH_HEADER);
        }
        fflush(stdout);
}

static void count_error(Run *run, const char *name) {
        for (size_t i = 0; i < run->n_errors; i++)
                if (strcmp(run->errors[i].name, name) == 0) {
                        run->errors[i].count++;
                        return;
                }
        void *n = realloc(run->errors, (run->n_errors + 1) * sizeof(*run->errors));
        if (!n)
                return;
        run->errors = n;
        run->errors[run->n_errors].name = strdup(name);
        run->errors[run->n_errors].count = run->errors[run->n_errors].name ? 1 : 0;
        if (run->errors[run->n_errors].name)
                run->n_errors++;
}

static int on_worker_removed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        Run *run = userdata;
        const char *id;

        if (sd_bus_message_read(m, "s", &id) < 0)
                return 0;
        char **n = realloc(run->removed, (run->n_removed + 1) * sizeof(char *));
        if (!n)
                return 0;
        run->removed = n;
        run->removed[run->n_removed] = strdup(id);
        if (run->removed[run->n_removed])
                run->n_removed++;
        return 0;
}

static bool was_removed(const Run *run, const char *id) {
        for (size_t i = run->n_removed; i > 0; i--)
                if (strcmp(run->removed[i - 1], id) == 0)
                        return true;
        return false;
}

/* Dispatches what has arrived (signals queued while waiting for replies). */
static int drain(Run *run) {
        int r;
        while ((r = sd_bus_process(run->bus, NULL)) > 0)
                ;
        return r;
}

/* Waits until at most `keep` stopped workers are still to be removed. */
static int wait_pending(Run *run, size_t keep) {
        while (run->n_pending > keep) {
                Pending *p = &run->pending[0];
                int r = drain(run);
                if (r < 0)
                        return r;
                if (was_removed(run, p->id)) {
                        memmove(run->pending, run->pending + 1, (run->n_pending - 1) * sizeof(Pending));
                        run->n_pending--;
                        continue;
                }
                uint64_t now = now_usec();
                if (now >= p->deadline) {
                        failure(run, NO_CASE, NULL, "worker %s was not removed within %" PRIu64 " s of its stop",
                                p->id, run->opts->stop_timeout_usec / 1000000);
                        memmove(run->pending, run->pending + 1, (run->n_pending - 1) * sizeof(Pending));
                        run->n_pending--;
                        continue;
                }
                r = sd_bus_wait(run->bus, p->deadline - now);
                if (r < 0)
                        return r;
        }
        return 0;
}

static void stop_worker(Run *run, uint64_t i, const char *id) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        int r;

        r = sd_bus_call_method(run->bus, DEST, PATH, MANAGER, "StopWorker", &error, NULL, "s", id);
        /* A quick worker (/bin/true, a bad command) may have ended already. */
        if (r < 0 && !sd_bus_error_has_names(&error, ERROR_PREFIX "NotRunning", ERROR_PREFIX "NoSuchWorker"))
                failure(run, i, NULL, "StopWorker(%s) failed: %s: %s", id, error.name ?: strerror(-r),
                        error.message ?: "");
        bool gone = r < 0 && sd_bus_error_has_name(&error, ERROR_PREFIX "NoSuchWorker");
        sd_bus_error_free(&error);
        if (gone)
                return;
        Pending *n = realloc(run->pending, (run->n_pending + 1) * sizeof(Pending));
        if (!n) {
                failure(run, i, NULL, "out of memory");
                return;
        }
        run->pending = n;
        n = &run->pending[run->n_pending++];
        snprintf(n->id, sizeof(n->id), "%s", id);
        n->deadline = now_usec() + run->opts->stop_timeout_usec;
}

static void check_reply(Run *run, uint64_t i, SpecShape shape, sd_bus_message *m, int r, sd_bus_message *reply,
                        const sd_bus_error *error) {
        if (r >= 0) {
                const char *id, *path;
                run->accepted++;
                if (shape == SPEC_SHAPE_WRONG_SIGNATURE)
                        failure(run, i, m, "arguments that are not one a{sv} were accepted");
                if (sd_bus_message_read(reply, "so", &id, &path) < 0) {
                        failure(run, i, m, "CreateWorker's reply is not (so)");
                        return;
                }
                count_error(run, "(accepted)");
                if (run->opts->verbose)
                        printf("case %" PRIu64 ": accepted, worker %s\n", i, id);
                stop_worker(run, i, id);
                return;
        }
        run->refused++;
        count_error(run, error->name ?: "(no error name)");
        if (run->opts->verbose)
                printf("case %" PRIu64 " (%s): %s: %s\n", i, spec_shape_to_string(shape), error->name ?: "-",
                       error->message ?: "");
        if (error->name && strncmp(error->name, ERROR_PREFIX, strlen(ERROR_PREFIX)) == 0) {
                if (!error->message || !*error->message)
                        failure(run, i, m, "%s without a message", error->name);
                return;
        }
        if (shape == SPEC_SHAPE_WRONG_SIGNATURE && sd_bus_error_has_name(error, SD_BUS_ERROR_INVALID_ARGS))
                return;
        failure(run, i, m, "refused with %s (%s), not a named " ERROR_PREFIX "* error", error->name ?: strerror(-r),
                error->message ?: "no message");
}

static int send_case(Run *run, uint64_t i, int fd) {
        sd_bus_message *m = NULL, *reply = NULL;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        SpecGenOptions gen = { .budget = run->opts->budget, .unix_fd = fd };
        SpecShape shape;
        SpecRng rng;
        int r;

        spec_rng_seed(&rng, run->opts->seed, i);
        r = sd_bus_message_new_method_call(run->bus, &m, DEST, PATH, MANAGER, "CreateWorker");
        if (r < 0)
                return r;
        r = spec_gen_append(m, &rng, &gen, &shape);
        if (r < 0) {
                failure(run, i, NULL, "the generator made a message sd-bus refuses: %s", strerror(-r));
                sd_bus_message_unref(m);
                return 0;
        }
        run->sent++;
        run->by_shape[shape]++;
        r = sd_bus_call(run->bus, m, run->opts->call_timeout_usec, &error, &reply);
        check_reply(run, i, shape, m, r, reply, &error);
        sd_bus_error_free(&error);
        sd_bus_message_unref(reply);
        sd_bus_message_unref(m);
        r = drain(run);
        if (r < 0)
                return r;
        return wait_pending(run, run->opts->max_pending);
}

static int connect_bus(Run *run) {
        int r;

        run->bus = sd_bus_flush_close_unref(run->bus);
        r = sd_bus_open_system(&run->bus);
        if (r < 0) {
                fprintf(stderr, "busfuzz: cannot connect to the system bus: %s\n", strerror(-r));
                return r;
        }
        r = sd_bus_match_signal(run->bus, NULL, DEST, PATH, MANAGER, "WorkerRemoved", on_worker_removed, run);
        if (r < 0) {
                fprintf(stderr, "busfuzz: cannot subscribe to WorkerRemoved: %s\n", strerror(-r));
                return r;
        }
        /* sandboxd sends WorkerRemoved to its subscribers only. */
        r = sd_bus_call_method(run->bus, DEST, PATH, MANAGER, "Subscribe", NULL, NULL, NULL);
        if (r < 0)
                fprintf(stderr, "busfuzz: Subscribe failed: %s\n", strerror(-r));
        return r;
}

static int daemon_owner(sd_bus *bus, char **ret) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        const char *owner;
        int r;

        r = sd_bus_call_method(bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                               "GetNameOwner", &error, &reply, "s", DEST);
        if (r >= 0)
                r = sd_bus_message_read(reply, "s", &owner);
        if (r >= 0)
                *ret = strdup(owner);
        if (r < 0)
                fprintf(stderr, "busfuzz: %s has no owner: %s\n", DEST, error.message ?: strerror(-r));
        sd_bus_error_free(&error);
        sd_bus_message_unref(reply);
        return r < 0 ? r : *ret ? 0 : -ENOMEM;
}

static int n_workers(sd_bus *bus, uint32_t *ret) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        int r = sd_bus_get_property_trivial(bus, DEST, PATH, MANAGER, "NWorkers", &error, 'u', ret);
        if (r < 0)
                fprintf(stderr, "busfuzz: cannot read NWorkers: %s\n", error.message ?: strerror(-r));
        sd_bus_error_free(&error);
        return r;
}

static int parse_u64(const char *s, uint64_t *ret) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 0);
        if (errno || end == s || *end || *s == '-')
                return -EINVAL;
        *ret = v;
        return 0;
}

static int parse_options(int argc, char **argv, Options *o) {
        static const struct option longopts[] = {
                { "seed", required_argument, NULL, 's' },
                { "count", required_argument, NULL, 'n' },
                { "first", required_argument, NULL, 'f' },
                { "call-timeout", required_argument, NULL, 'c' },
                { "stop-timeout", required_argument, NULL, 't' },
                { "max-pending", required_argument, NULL, 'p' },
                { "budget", required_argument, NULL, 'b' },
                { "verbose", no_argument, NULL, 'v' },
                {}
        };
        uint64_t v;
        int c;

        *o = (Options) { .seed = 1, .count = 1000, .call_timeout_usec = 30 * 1000000,
                         .stop_timeout_usec = 60 * 1000000, .max_pending = 16, .budget = 3 << 20 };
        while ((c = getopt_long(argc, argv, "", longopts, NULL)) >= 0) {
                if (c == 'v') {
                        o->verbose = true;
                        continue;
                }
                if (c == '?' || !optarg || parse_u64(optarg, &v) < 0) {
                        fprintf(stderr, "usage: sbx-busfuzz [--seed N] [--count N] [--first I] [--call-timeout SEC] "
                                        "[--stop-timeout SEC] [--max-pending N] [--budget BYTES] [--verbose]\n");
                        return -EINVAL;
                }
                switch (c) {
                case 's': o->seed = v; break;
                case 'n': o->count = v; break;
                case 'f': o->first = v; break;
                case 'c': o->call_timeout_usec = v * 1000000; break;
                case 't': o->stop_timeout_usec = v * 1000000; break;
                case 'p': o->max_pending = (size_t) v; break;
                default: o->budget = (size_t) v; break;
                }
        }
        return 0;
}

int main(int argc, char **argv) {
        Options opts;
        Run run = { .opts = &opts };
        char *owner_before = NULL, *owner_after = NULL;
        uint32_t workers_before = 0, workers_after = 0;
        uint64_t t0;
        int r, fd;

        if (parse_options(argc, argv, &opts) < 0)
                return 2;
        if (connect_bus(&run) < 0 || daemon_owner(run.bus, &owner_before) < 0 ||
            n_workers(run.bus, &workers_before) < 0)
                return 1;
        /* 'h' values carry this fd; sandboxd must close what it receives. */
        fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (sd_bus_can_send(run.bus, SD_BUS_TYPE_UNIX_FD) <= 0)
                fd = -1;

        t0 = now_usec();
        for (uint64_t i = opts.first; i < opts.first + opts.count; i++) {
                r = send_case(&run, i, fd);
                if (r < 0) {
                        /* The bus daemon drops a client whose message it finds invalid;
                         * that is a generator bug, and the run goes on. */
                        failure(&run, i, NULL, "the bus connection failed: %s", strerror(-r));
                        if (connect_bus(&run) < 0)
                                break;
                }
        }
        if (wait_pending(&run, 0) < 0)
                failure(&run, NO_CASE, NULL, "the bus connection failed while waiting for removals");
        double secs = (double) (now_usec() - t0) / 1e6;

        if (daemon_owner(run.bus, &owner_after) < 0)
                failure(&run, NO_CASE, NULL, "sandboxd no longer owns %s", DEST);
        else if (strcmp(owner_before, owner_after) != 0)
                failure(&run, NO_CASE, NULL, "sandboxd was restarted: %s owned by %s, then by %s", DEST,
                        owner_before, owner_after);
        if (n_workers(run.bus, &workers_after) < 0)
                failure(&run, NO_CASE, NULL, "sandboxd does not answer a property read");
        else if (workers_after != workers_before)
                failure(&run, NO_CASE, NULL, "NWorkers is %u after the run, %u before", workers_after,
                        workers_before);

        printf("busfuzz: seed %" PRIu64 ", cases %" PRIu64 "..%" PRIu64 ": %" PRIu64 " sent (%" PRIu64 " valid, %" PRIu64
               " mutated, %" PRIu64 " random, %" PRIu64 " wrong signature), %" PRIu64 " accepted and stopped, %" PRIu64
               " refused, %" PRIu64 " failures, %.1f s\n",
               opts.seed, opts.first, opts.first + opts.count - 1, run.sent, run.by_shape[SPEC_SHAPE_VALID],
               run.by_shape[SPEC_SHAPE_MUTATED], run.by_shape[SPEC_SHAPE_RANDOM],
               run.by_shape[SPEC_SHAPE_WRONG_SIGNATURE], run.accepted, run.refused, run.failures, secs);
        for (size_t i = 0; i < run.n_errors; i++)
                printf("busfuzz:   %8" PRIu64 "  %s\n", run.errors[i].count, run.errors[i].name);
        if (run.failures > FAILURES_SHOWN)
                printf("busfuzz: %" PRIu64 " failures not shown\n", run.failures - FAILURES_SHOWN);
        return run.failures == 0 ? 0 : 1;
}
