/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The worker state machine without a real systemd: the daemon's bus is one
 * end of a socketpair, the test holds the other end as client and as
 * systemd (it answers StopUnit), and reads every signal the daemon sends. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <time.h>

#include "bus-manager.h"
#include "bus-worker.h"
#include "errors.h"
#include "gate-units.h"
#include "systemd-bus.h"
#include "manager.h"
#include "pool.h"
#include "test-bus.h"
#include "sandbox-exec.h"
#include "uid-keep.h"
#include "worker-gate.h"
#include "worker-history.h"
#include "worker-ready.h"
#include "worker-secrets.h"
#include "worker-suspend.h"
#include "worker.h"

#define MAX_SEEN 256
#define OTHER_UID 4243

typedef struct Fixture {
        Manager *m;
        sd_bus *peer;
        uid_t caller;                   /* who the daemon sees on the other end */
        sd_bus_message *seen[MAX_SEEN]; /* signals the daemon sent */
        size_t n_seen;
        char *stop_units[16];           /* StopUnit calls "systemd" received */
        char stop_mode[32];             /* the last one's job mode */
        size_t n_stop_units;
        const char *unit_active_state;  /* what "systemd" says when asked for a unit's properties */
        const char *unit_load_state;    /* and its LoadState; NULL: "loaded" */
        bool answer_starts;             /* "systemd" takes StartTransientUnit calls */
        char *started_units[8];         /* and records their units */
        size_t n_started_units;
        unsigned n_unit_reads;
        bool unit_never_ran;            /* no ExecMainCode in the answer */
        const char *keep_errors[4];     /* what "systemd" answers a keeper's starts, in turn; NULL: a job */
        char keep_calls[8];             /* and which they were: T StartTransientUnit, S StartUnit */
} Fixture;

/* The peer plays systemd for the daemon's StopUnit calls and records the rest. */
static int peer_filter(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        Fixture *f = userdata;
        uint8_t type = 0;

        (void) sd_bus_message_get_type(msg, &type);
        if (type == SD_BUS_MESSAGE_SIGNAL && f->n_seen < MAX_SEEN) {
                f->seen[f->n_seen++] = sd_bus_message_ref(msg);
                return 0;
        }
        if (sd_bus_message_is_method_call(msg, "org.freedesktop.systemd1.Manager", "StopUnit")) {
                const char *unit = NULL, *mode = NULL;
                assert_true(sd_bus_message_read(msg, "ss", &unit, &mode) >= 0);
                snprintf(f->stop_mode, sizeof(f->stop_mode), "%s", mode);
                assert_true(f->n_stop_units < ELEMENTSOF(f->stop_units));
                f->stop_units[f->n_stop_units++] = strdup(unit);
                (void) sd_bus_reply_method_return(msg, "o", "/org/freedesktop/systemd1/job/1");
                return 1;
        }
        if ((sd_bus_message_is_method_call(msg, "org.freedesktop.systemd1.Manager", "StartTransientUnit") ||
             sd_bus_message_is_method_call(msg, "org.freedesktop.systemd1.Manager", "StartUnit")) &&
            f->answer_starts) {
                const char *unit = NULL;
                assert_true(sd_bus_message_read(msg, "s", &unit) >= 0);
                size_t n = strlen(f->keep_calls);
                if (strstr(unit, "-keep.service") && n < ELEMENTSOF(f->keep_calls) - 1) {
                        f->keep_calls[n] = streq(sd_bus_message_get_member(msg), "StartUnit") ? 'S' : 'T';
                        if (n < ELEMENTSOF(f->keep_errors) && f->keep_errors[n]) {
                                (void) sd_bus_reply_method_errorf(msg, f->keep_errors[n], "%s: as told", unit);
                                return 1;
                        }
                }
                if (f->n_started_units < ELEMENTSOF(f->started_units))
                        f->started_units[f->n_started_units++] = strdup(unit);
                (void) sd_bus_reply_method_return(msg, "o", "/org/freedesktop/systemd1/job/2");
                return 1;
        }
        if (sd_bus_message_is_method_call(msg, "org.freedesktop.DBus.Properties", "GetAll") && f->unit_active_state) {
                f->n_unit_reads++;
                (void) sd_bus_reply_method_return(msg, "a{sv}", 5, "LoadState", "s", f->unit_load_state ?: "loaded",
                                                  "ActiveState", "s",
                                                  f->unit_active_state, "Result", "s", "success", "ExecMainCode",
                                                  "i", f->unit_never_ran ? 0 : 1, "ExecMainStatus", "i",
                                                  f->unit_never_ran ? 0 : 7);
                return 1;
        }
        return 0;
}

static void seen_clear(Fixture *f) {
        for (size_t i = 0; i < f->n_seen; i++)
                sd_bus_message_unref(f->seen[i]);
        f->n_seen = 0;
        for (size_t i = 0; i < f->n_stop_units; i++)
                free(f->stop_units[i]);
        f->n_stop_units = 0;
}

static int setup(void **state) {
        Fixture *f = calloc(1, sizeof(*f));
        SbxError e = {};
        sd_id128_t server_id;
        int sv[2];

        assert_non_null(f);
        assert_int_equal(manager_new(&f->m, "/nonexistent/sandboxd.conf", &e), 0);
        assert_int_equal(bus_manager_listen(f->m), 0);
        /* The socket's peer credentials are its creator's: as root, create it
         * as someone else, so that the daemon sees a caller that is neither
         * root nor, unless the test says so, a worker's owner. */
        f->caller = geteuid();
        if (f->caller == 0) {
                assert_int_equal(seteuid(OTHER_UID - 1), 0);
                f->caller = OTHER_UID - 1;
        }
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv), 0);
        if (geteuid() != getuid())
                assert_int_equal(seteuid(0), 0);

        assert_int_equal(sd_bus_new(&f->m->bus), 0);
        assert_int_equal(sd_bus_set_fd(f->m->bus, sv[0], sv[0]), 0);
        assert_int_equal(sd_bus_start(f->m->bus), 0);
        assert_int_equal(sd_bus_attach_event(f->m->bus, f->m->event, SD_EVENT_PRIORITY_NORMAL), 0);
        /* The peer plays systemd too: one connection serves as both. */
        f->m->systemd = sd_bus_ref(f->m->bus);
        assert_int_equal(unit_stops_new(&f->m->unit_stops, f->m->systemd, f->m->event), 0);

        assert_int_equal(sd_id128_randomize(&server_id), 0);
        assert_int_equal(sd_bus_new(&f->peer), 0);
        assert_int_equal(sd_bus_set_fd(f->peer, sv[1], sv[1]), 0);
        assert_int_equal(sd_bus_set_server(f->peer, 1, server_id), 0);
        assert_int_equal(sd_bus_set_anonymous(f->peer, 1), 0);
        assert_int_equal(sd_bus_start(f->peer), 0);
        assert_int_equal(sd_bus_attach_event(f->peer, f->m->event, SD_EVENT_PRIORITY_NORMAL), 0);
        assert_int_equal(sd_bus_add_filter(f->peer, NULL, peer_filter, f), 0);

        assert_int_equal(bus_manager_install(f->m), 0);
        /* The peer has no unique name on a direct connection: it subscribes
         * under one, as the caller it is; the daemon's unicast signals reach
         * it whatever their destination says. */
        assert_int_equal(subscribers_add(&f->m->subscribers, ":1.test", f->caller, false), 0);
        *state = f;
        return 0;
}

static int teardown(void **state) {
        Fixture *f = *state;

        seen_clear(f);
        for (size_t i = 0; i < f->n_started_units; i++)
                free(f->started_units[i]);
        sd_bus_flush_close_unref(f->peer);
        bus_manager_free(f->m);
        manager_free(f->m);
        free(f);
        return 0;
}

static int on_barrier(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        *(bool *) userdata = true;
        return 0;
}

/* Runs the loop until the daemon has answered a Ping: whatever it sent
 * before, on the same socket, has arrived by then. */
static void barrier(Fixture *f) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL;
        bool done = false;

        assert_true(sd_bus_message_new_method_call(f->peer, &call, NULL, "/org/sandboxd1",
                                                   "org.freedesktop.DBus.Peer", "Ping") >= 0);
        assert_true(sd_bus_call_async(f->peer, NULL, call, on_barrier, &done, 0) >= 0);
        for (unsigned i = 0; !done && i < 1000; i++)
                assert_true(sd_event_run(f->m->event, 5 * USEC_PER_SEC) >= 0);
        assert_true(done);
}

/* Two barriers: the daemon has handled what the peer sent, and the answer
 * to any question it asked the peer about it meanwhile. */
static void settle(Fixture *f) {
        barrier(f);
        barrier(f);
}

typedef struct Reply {
        bool done;
        char error[128];                /* "" on success */
        int fd;
} Reply;

static int on_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        Reply *r = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(reply);
        char type = 0;

        r->done = true;
        r->fd = -1;
        snprintf(r->error, sizeof(r->error), "%s", e ? e->name : "");
        if (!e && sd_bus_message_peek_type(reply, &type, NULL) > 0 && type == 'h') {
                int fd;
                assert_true(sd_bus_message_read(reply, "h", &fd) >= 0);
                r->fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        }
        return 0;
}

/* Calls METHOD on the Manager with the worker's ID, or on the worker's own
 * object (ID NULL then, PATH set), and waits for the answer. */
static Reply call(Fixture *f, const char *path, const char *iface, const char *method, const char *id) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *msg = NULL;
        Reply r = { .fd = -1 };

        assert_true(sd_bus_message_new_method_call(f->peer, &msg, NULL, path, iface, method) >= 0);
        if (id)
                assert_true(sd_bus_message_append(msg, "s", id) >= 0);
        assert_true(sd_bus_call_async(f->peer, NULL, msg, on_reply, &r, 0) >= 0);
        for (unsigned i = 0; !r.done && i < 1000; i++)
                assert_true(sd_event_run(f->m->event, 5 * USEC_PER_SEC) >= 0);
        assert_true(r.done);
        return r;
}

static Reply call_manager(Fixture *f, const char *method, const Worker *w) {
        return call(f, "/org/sandboxd1", "org.sandboxd1.Manager", method, w->id);
}

static Reply call_object(Fixture *f, const char *method, const Worker *w) {
        return call(f, w->object_path, "org.sandboxd1.Worker", method, NULL);
}

static size_t count_signal(Fixture *f, const char *path, const char *iface, const char *member) {
        size_t n = 0;

        for (size_t i = 0; i < f->n_seen; i++)
                if (sd_bus_message_is_signal(f->seen[i], iface, member) &&
                    (!path || streq(sd_bus_message_get_path(f->seen[i]), path)))
                        n++;
        return n;
}

/* The names of the properties in the one PropertiesChanged of IFACE at
 * PATH, comma-separated, or NULL when there is none. */
static char *changed_properties(Fixture *f, const char *path, const char *iface) {
        char *out = NULL;

        for (size_t i = 0; i < f->n_seen; i++) {
                sd_bus_message *m = f->seen[i];
                const char *name, *in;
                char buf[256] = "";

                if (!sd_bus_message_is_signal(m, "org.freedesktop.DBus.Properties", "PropertiesChanged") ||
                    !streq(sd_bus_message_get_path(m), path))
                        continue;
                assert_true(sd_bus_message_rewind(m, true) >= 0);
                assert_true(sd_bus_message_read(m, "s", &in) >= 0);
                if (!streq(in, iface))
                        continue;
                assert_null(out);
                assert_true(sd_bus_message_enter_container(m, 'a', "{sv}") >= 0);
                while (sd_bus_message_enter_container(m, 'e', "sv") > 0) {
                        assert_true(sd_bus_message_read(m, "s", &name) >= 0);
                        assert_true(sd_bus_message_skip(m, "v") >= 0);
                        assert_true(sd_bus_message_exit_container(m) >= 0);
                        snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%s%s", *buf ? "," : "", name);
                }
                out = strdup(buf);
        }
        return out;
}

static void assert_changed(Fixture *f, const char *path, const char *iface, const char *expected) {
        _cleanup_free_ char *got = changed_properties(f, path, iface);

        if (!expected) {
                assert_null(got);
                return;
        }
        assert_non_null(got);
        assert_string_equal(got, expected);
}

static Worker *add_worker(Fixture *f, uid_t owner) {
        _cleanup_(channel_worker_fds_close) ChannelWorkerFds fds = { -1, -1, -1 };
        WorkerSpec spec;
        Worker *w;

        worker_spec_init(&spec);
        /* A runtime that needs no probe when its start fails. */
        assert_int_equal(worker_new(&w, &f->m->worker_owner, &spec, SBX_RUNTIME_RUNSC), 0);
        w->owner = owner;
        assert_int_equal(worker_new_channel(w, &fds), 0);
        manager_add_worker(f->m, w);
        return w;
}

/* A worker brought to STATE the way the daemon brings one there. */
static Worker *add_worker_in(Fixture *f, WorkerState state, uid_t owner) {
        Worker *w = add_worker(f, owner);

        if (state != WORKER_STARTING)
                assert_int_equal(worker_set_state(w, WORKER_RUNNING), 0);
        if (state == WORKER_STOPPING)
                assert_int_equal(worker_set_state(w, WORKER_STOPPING), 0);
        if (state == WORKER_SUSPENDING || state == WORKER_SUSPENDED || state == WORKER_RESUMING)
                assert_int_equal(worker_set_state(w, WORKER_SUSPENDING), 0);
        if (state == WORKER_SUSPENDED || state == WORKER_RESUMING)
                assert_int_equal(worker_set_state(w, WORKER_SUSPENDED), 0);
        if (state == WORKER_RESUMING)
                assert_int_equal(worker_set_state(w, WORKER_RESUMING), 0);
        if (state == WORKER_ENDED)
                assert_int_equal(worker_set_state(w, WORKER_ENDED), 0);
        assert_int_equal(w->state, state);
        barrier(f);
        seen_clear(f);
        return w;
}

static bool listed_transition(WorkerState from, WorkerState to) {
        return (from == WORKER_STARTING && to == WORKER_RUNNING) ||
               (from == WORKER_STARTING && to == WORKER_ENDED) ||
               (from == WORKER_RUNNING && to == WORKER_STOPPING) ||
               (from == WORKER_RUNNING && to == WORKER_ENDED) ||
               (from == WORKER_STOPPING && to == WORKER_ENDED) ||
               (from == WORKER_RUNNING && to == WORKER_SUSPENDING) ||
               (from == WORKER_SUSPENDING && to == WORKER_SUSPENDED) ||
               (from == WORKER_SUSPENDING && to == WORKER_RUNNING) ||
               (from == WORKER_SUSPENDING && to == WORKER_ENDED) ||
               (from == WORKER_SUSPENDED && to == WORKER_RESUMING) ||
               (from == WORKER_SUSPENDED && to == WORKER_ENDED) ||
               (from == WORKER_RESUMING && to == WORKER_RUNNING) ||
               (from == WORKER_RESUMING && to == WORKER_ENDED) ||
               (from == WORKER_RESUMING && to == WORKER_SUSPENDED);
}

static void test_transition_table(void **state) {
        for (WorkerState from = 0; from <= _WORKER_STATE_MAX; from++)
                for (WorkerState to = 0; to <= _WORKER_STATE_MAX; to++)
                        assert_int_equal(worker_state_transition_valid(from, to), listed_transition(from, to));
}

static void test_starting_to_running(void **state) {
        Fixture *f = *state;
        Worker *w = add_worker_in(f, WORKER_STARTING, f->caller);

        assert_false(w->exported);
        assert_int_equal(worker_set_state(w, WORKER_RUNNING), 0);
        assert_int_equal(w->state, WORKER_RUNNING);
        assert_true(w->exported);
        barrier(f);
        assert_int_equal(count_signal(f, "/org/sandboxd1", "org.sandboxd1.Manager", "WorkerNew"), 1);
        assert_int_equal(count_signal(f, "/org/sandboxd1", "org.freedesktop.DBus.ObjectManager", "InterfacesAdded"), 1);
        assert_changed(f, w->object_path, "org.sandboxd1.Worker", NULL);
        assert_int_equal(f->m->n_alive, 1);
}

static void test_running_to_stopping(void **state) {
        Fixture *f = *state;
        Worker *w = add_worker_in(f, WORKER_RUNNING, f->caller);

        assert_int_equal(worker_set_state(w, WORKER_STOPPING), 0);
        assert_int_equal(w->state, WORKER_STOPPING);
        barrier(f);
        assert_changed(f, w->object_path, "org.sandboxd1.Worker", "State");
        assert_int_equal(count_signal(f, NULL, "org.sandboxd1.Manager", "WorkerRemoved"), 0);
        assert_int_equal(f->m->n_alive, 1);
}

static void check_ended(Fixture *f, WorkerState from) {
        Worker *w = add_worker_in(f, from, f->caller);

        assert_int_equal(worker_set_state(w, WORKER_ENDED), 0);
        assert_int_equal(w->state, WORKER_ENDED);
        assert_true(w->ended_realtime > 0);
        assert_int_equal(f->m->n_alive, 0);
        barrier(f);
        assert_changed(f, w->object_path, "org.sandboxd1.Worker", "State,ExitStatus,Result,EndedUSec");
        assert_int_equal(count_signal(f, "/org/sandboxd1", "org.sandboxd1.Manager", "WorkerRemoved"), 1);
        /* NWorkers, once, from the status update. */
        assert_changed(f, "/org/sandboxd1", "org.sandboxd1.Manager", "NWorkers");
}

/* Every signal about a worker, whatever its path. */
static size_t count_about(Fixture *f, const Worker *w) {
        size_t n = 0;

        for (size_t i = 0; i < f->n_seen; i++) {
                _cleanup_free_ char *dump = NULL;
                size_t size = 0;
                FILE *out = open_memstream(&dump, &size);

                assert_non_null(out);
                assert_true(sd_bus_message_rewind(f->seen[i], true) >= 0);
                assert_true(sd_bus_message_dump(f->seen[i], out, SD_BUS_MESSAGE_DUMP_WITH_HEADER) >= 0);
                fclose(out);
                n += strstr(dump, w->id) != NULL;
        }
        return n;
}

/* A worker of another user is a secret to this subscriber: not one signal
 * names it through its whole life; only the host-wide count changes. */
static void test_other_owner_not_signalled(void **state) {
        Fixture *f = *state;
        Worker *w = add_worker(f, OTHER_UID);

        assert_int_equal(worker_set_state(w, WORKER_RUNNING), 0);
        assert_int_equal(worker_set_state(w, WORKER_SUSPENDING), 0);
        assert_int_equal(worker_set_state(w, WORKER_SUSPENDED), 0);
        assert_int_equal(worker_set_state(w, WORKER_RESUMING), 0);
        assert_int_equal(worker_set_state(w, WORKER_RUNNING), 0);
        bus_worker_emit_activity(w);
        assert_int_equal(worker_set_state(w, WORKER_ENDED), 0);
        bus_worker_emit_gone(w);
        barrier(f);
        assert_int_equal(count_about(f, w), 0);
        for (size_t i = 0; i < f->n_seen; i++)
                assert_string_equal(sd_bus_message_get_path(f->seen[i]), "/org/sandboxd1");
        assert_int_equal(count_signal(f, NULL, "org.freedesktop.DBus.Properties", "PropertiesChanged"),
                         f->n_seen);
}

/* The control: the same life, to a subscriber that may see every worker. */
static void test_other_owner_signalled_to_manager(void **state) {
        Fixture *f = *state;
        Worker *w = add_worker(f, OTHER_UID);

        assert_int_equal(subscribers_add(&f->m->subscribers, ":1.test", f->caller, true), 0);
        assert_int_equal(worker_set_state(w, WORKER_RUNNING), 0);
        assert_int_equal(worker_set_state(w, WORKER_ENDED), 0);
        bus_worker_emit_gone(w);
        barrier(f);
        assert_int_equal(count_signal(f, "/org/sandboxd1", "org.sandboxd1.Manager", "WorkerNew"), 1);
        assert_int_equal(count_signal(f, "/org/sandboxd1", "org.freedesktop.DBus.ObjectManager", "InterfacesAdded"), 1);
        assert_int_equal(count_signal(f, "/org/sandboxd1", "org.sandboxd1.Manager", "WorkerRemoved"), 1);
        assert_int_equal(count_signal(f, "/org/sandboxd1", "org.freedesktop.DBus.ObjectManager", "InterfacesRemoved"), 1);
        assert_changed(f, w->object_path, "org.sandboxd1.Worker", "State,ExitStatus,Result,EndedUSec");
        /* Unicast, to the subscriber's name. */
        for (size_t i = 0; i < f->n_seen; i++)
                assert_string_equal(sd_bus_message_get_destination(f->seen[i]), ":1.test");
}

/* InterfacesAdded carries the properties GetAll would, from the same getters. */
static void test_interfaces_added_properties(void **state) {
        Fixture *f = *state;
        Worker *w = add_worker(f, f->caller);
        _cleanup_free_ char *dump = NULL;
        size_t size = 0;
        FILE *out;

        assert_int_equal(worker_set_state(w, WORKER_RUNNING), 0);
        barrier(f);
        for (size_t i = 0; i < f->n_seen; i++) {
                if (!sd_bus_message_is_signal(f->seen[i], "org.freedesktop.DBus.ObjectManager", "InterfacesAdded"))
                        continue;
                out = open_memstream(&dump, &size);
                assert_non_null(out);
                assert_true(sd_bus_message_rewind(f->seen[i], true) >= 0);
                assert_true(sd_bus_message_dump(f->seen[i], out, 0) >= 0);
                fclose(out);
        }
        assert_non_null(dump);
        assert_non_null(strstr(dump, w->id));
        assert_non_null(strstr(dump, w->unit));
        assert_non_null(strstr(dump, "STRING \"running\""));
        assert_non_null(strstr(dump, "\"Owner\""));
        assert_non_null(strstr(dump, "\"Home\""));
}

/* The registry forgets a client only on dbus-daemon's word: the same
 * NameOwnerChanged from anyone else changes nothing. */
static void name_lost(Fixture *f, const char *sender, const char *name) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *sig = NULL;

        assert_true(sd_bus_message_new_signal(f->peer, &sig, "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                              "NameOwnerChanged") >= 0);
        assert_true(sd_bus_message_set_sender(sig, sender) >= 0);
        assert_true(sd_bus_message_append(sig, "sss", name, name, "") >= 0);
        assert_true(sd_bus_send(f->peer, sig, NULL) >= 0);
        barrier(f);
}

static void test_subscriber_leaves(void **state) {
        Fixture *f = *state;

        name_lost(f, ":1.evil", ":1.test");
        assert_non_null(subscribers_find(&f->m->subscribers, ":1.test"));
        name_lost(f, "org.freedesktop.DBus", ":1.other");
        assert_non_null(subscribers_find(&f->m->subscribers, ":1.test"));
        name_lost(f, "org.freedesktop.DBus", ":1.test");
        assert_null(subscribers_find(&f->m->subscribers, ":1.test"));
}

static void test_running_to_ended(void **state) {
        check_ended(*state, WORKER_RUNNING);
}

static void test_stopping_to_ended(void **state) {
        check_ended(*state, WORKER_STOPPING);
}

static void test_starting_to_ended(void **state) {
        Fixture *f = *state;
        Worker *w = add_worker_in(f, WORKER_STARTING, f->caller);

        assert_int_equal(worker_set_state(w, WORKER_ENDED), 0);
        assert_int_equal(w->state, WORKER_ENDED);
        assert_int_equal(f->m->n_alive, 0);
        barrier(f);
        /* Never on the bus: only the count changes. */
        assert_int_equal(count_signal(f, NULL, "org.sandboxd1.Manager", "WorkerRemoved"), 0);
        assert_int_equal(count_signal(f, NULL, "org.freedesktop.DBus.ObjectManager", "InterfacesRemoved"), 0);
        assert_changed(f, w->object_path, "org.sandboxd1.Worker", NULL);
        assert_changed(f, "/org/sandboxd1", "org.sandboxd1.Manager", "NWorkers");
}

/* running -> suspending -> suspended -> resuming -> running: one object all
 * along (no second WorkerNew), each move a State change, still counted. */
static void test_suspend_resume_cycle(void **state) {
        static const WorkerState path[] = { WORKER_SUSPENDING, WORKER_SUSPENDED, WORKER_RESUMING, WORKER_RUNNING };
        Fixture *f = *state;
        Worker *w = add_worker_in(f, WORKER_RUNNING, f->caller);

        for (size_t i = 0; i < ELEMENTSOF(path); i++) {
                assert_int_equal(worker_set_state(w, path[i]), 0);
                assert_int_equal(w->state, path[i]);
                assert_true(w->exported);
                assert_true(worker_is_alive(w));
                barrier(f);
                assert_changed(f, w->object_path, "org.sandboxd1.Worker", "State");
                assert_int_equal(count_signal(f, NULL, "org.sandboxd1.Manager", "WorkerNew"), 0);
                assert_int_equal(count_signal(f, NULL, "org.freedesktop.DBus.ObjectManager", "InterfacesAdded"), 0);
                assert_int_equal(f->m->n_alive, 1);
                seen_clear(f);
        }
        assert_string_equal(worker_state_to_string(WORKER_SUSPENDED), "suspended");
        assert_int_equal(worker_state_from_string("suspended"), WORKER_SUSPENDED);
}

/* A checkpoint that failed while the sandbox runs on: running again, same object. */
static void test_suspending_back_to_running(void **state) {
        Fixture *f = *state;
        Worker *w = add_worker_in(f, WORKER_SUSPENDING, f->caller);

        assert_int_equal(worker_set_state(w, WORKER_RUNNING), 0);
        barrier(f);
        assert_changed(f, w->object_path, "org.sandboxd1.Worker", "State");
        assert_int_equal(count_signal(f, NULL, "org.sandboxd1.Manager", "WorkerNew"), 0);
}

/* A resume that failed before the sandbox ran: suspended again, same object,
 * still counted, nothing ended. */
static void test_resuming_back_to_suspended(void **state) {
        Fixture *f = *state;
        Worker *w = add_worker_in(f, WORKER_RESUMING, f->caller);

        assert_int_equal(worker_set_state(w, WORKER_SUSPENDED), 0);
        assert_int_equal(w->state, WORKER_SUSPENDED);
        assert_true(worker_is_alive(w));
        assert_int_equal(f->m->n_alive, 1);
        barrier(f);
        assert_changed(f, w->object_path, "org.sandboxd1.Worker", "State");
        assert_int_equal(count_signal(f, NULL, "org.sandboxd1.Manager", "WorkerNew"), 0);
        assert_int_equal(count_signal(f, NULL, "org.sandboxd1.Manager", "WorkerRemoved"), 0);
        /* And it can be resumed again. */
        assert_int_equal(worker_set_state(w, WORKER_RESUMING), 0);
}

static void test_suspended_to_ended(void **state) {
        check_ended(*state, WORKER_SUSPENDED);
}

static void test_suspending_to_ended(void **state) {
        check_ended(*state, WORKER_SUSPENDING);
}

static void test_resuming_to_ended(void **state) {
        check_ended(*state, WORKER_RESUMING);
}

/* Stop of a suspended worker: nothing to ask systemd, it ends at once as "stopped". */
static void test_stop_suspended(void **state) {
        Fixture *f = *state;
        Worker *w = add_worker_in(f, WORKER_SUSPENDED, f->caller);
        SbxError e = {};

        assert_int_equal(worker_stop(w, "stopped", &e), 0);
        assert_int_equal(w->state, WORKER_ENDED);
        assert_string_equal(w->result, "stopped");
        assert_int_equal(f->m->n_alive, 0);
}

static void test_suspended_channel_and_stop_refusals(void **state) {
        Fixture *f = *state;
        Worker *w = add_worker_in(f, WORKER_SUSPENDING, f->caller);
        SbxError e = {};
        int fd = -1;

        assert_true(worker_open_channel(w, &fd, &e) < 0);
        assert_string_equal(e.name, SBX_ERROR_SUSPENDED);
        e = (SbxError) {};
        assert_true(worker_stop(w, "stopped", &e) < 0);
        assert_string_equal(e.name, SBX_ERROR_NOT_RUNNING);
        assert_int_equal(w->state, WORKER_SUSPENDING);
        /* Suspending again waits for the same end. */
        e = (SbxError) {};
        assert_int_equal(worker_suspend(w, NULL, &e), 0);
        assert_int_equal(w->state, WORKER_SUSPENDING);
}

static void test_suspendable(void **state) {
        WorkerSpec spec;
        SbxError e = {};
        char *env[] = { (char *) "A=1", NULL };
        SbxCredential cred = { .name = (char *) "tok" };

        worker_spec_init(&spec);
        spec.class = SBX_CLASS_STANDARD;
        assert_int_equal(worker_check_suspendable(&spec, SBX_RUNTIME_RUNSC, &e), 0);
        spec.class = SBX_CLASS_TRUSTED;
        assert_true(worker_check_suspendable(&spec, SBX_RUNTIME_SYSTEMD, &e) < 0);
        assert_string_equal(e.name, SBX_ERROR_NOT_SUPPORTED);
        assert_non_null(strstr(e.message, "shared kernel"));
        e = (SbxError) {};
        assert_true(worker_check_suspendable(&spec, SBX_RUNTIME_WASM, &e) < 0);
        assert_string_equal(e.name, SBX_ERROR_NOT_SUPPORTED);
        e = (SbxError) {};
        assert_true(worker_check_suspendable(&spec, SBX_RUNTIME_KATA, &e) < 0);
        assert_string_equal(e.name, SBX_ERROR_NOT_SUPPORTED);
        spec.class = SBX_CLASS_STANDARD;
        e = (SbxError) {};
        /* Egress and Services no longer stop it: gVisor's own network stack
         * on a veth (worker-veth.h), which runsc can checkpoint. */
        spec.egress_allow = (char *[]) { (char *) "example.org", NULL };
        assert_int_equal(worker_check_suspendable(&spec, SBX_RUNTIME_RUNSC, &e), 0);
        spec.egress_allow = NULL;
        /* Secrets no longer stand in the way: such a worker keeps a copy. */
        e = (SbxError) {};
        assert_false(worker_secrets_wanted(&spec, SBX_RUNTIME_RUNSC));
        spec.environment = env;
        assert_int_equal(worker_check_suspendable(&spec, SBX_RUNTIME_RUNSC, &e), 0);
        assert_true(worker_secrets_wanted(&spec, SBX_RUNTIME_RUNSC));
        spec.environment = NULL;
        spec.credentials = &cred;
        spec.n_credentials = 1;
        assert_int_equal(worker_check_suspendable(&spec, SBX_RUNTIME_RUNSC, &e), 0);
        assert_true(worker_secrets_wanted(&spec, SBX_RUNTIME_RUNSC));
        /* One that can never be suspended keeps nothing past its start. */
        spec.class = SBX_CLASS_TRUSTED;
        assert_false(worker_secrets_wanted(&spec, SBX_RUNTIME_SYSTEMD));
}

/* A trusted worker's Suspend is refused by name and changes nothing. */
static void test_suspend_trusted_refused(void **state) {
        Fixture *f = *state;
        Worker *w = add_worker_in(f, WORKER_RUNNING, f->caller);
        SbxError e = {};

        w->runtime = SBX_RUNTIME_SYSTEMD;
        w->spec.class = SBX_CLASS_TRUSTED;
        assert_true(worker_suspend(w, NULL, &e) < 0);
        assert_string_equal(e.name, SBX_ERROR_NOT_SUPPORTED);
        assert_int_equal(w->state, WORKER_RUNNING);
        assert_null(w->suspend.unit);
        barrier(f);
        assert_int_equal(f->n_seen, 0);
}

static void test_refused_transitions(void **state) {
        Fixture *f = *state;

        for (WorkerState from = 0; from < _WORKER_STATE_MAX; from++)
                for (WorkerState to = 0; to <= _WORKER_STATE_MAX; to++) {
                        Worker *w;
                        unsigned alive;

                        if (listed_transition(from, to))
                                continue;
                        w = add_worker_in(f, from, f->caller);
                        alive = f->m->n_alive;
                        assert_int_equal(worker_set_state(w, to), -EINVAL);
                        assert_int_equal(w->state, from);
                        assert_int_equal(f->m->n_alive, alive);
                        barrier(f);
                        assert_int_equal(f->n_seen, 0);
                }
}

typedef struct GcProbe {
        Fixture *f;
        Worker *w;
        bool ran;
} GcProbe;

/* What a bus callback that ends a worker does: the worker must stay valid
 * until the callback has returned (ASan would see the use otherwise). */
static int on_end_in_callback(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        GcProbe *p = userdata;
        Worker *w = p->w;

        if (!sd_bus_message_is_signal(msg, "org.sandboxd.Test", "End"))
                return 0;
        worker_start_failed(w, "test failure");
        assert_int_equal(w->state, WORKER_ENDED);
        assert_string_equal(w->result, "failed: test failure");
        assert_ptr_equal(manager_find_worker(p->f->m, w->id), w);
        manager_enqueue_gc(p->f->m, w);         /* twice is once */
        assert_ptr_equal(manager_find_worker(p->f->m, w->id), w);
        p->ran = true;
        return 1;
}

static void test_deferred_free_after_failed_start(void **state) {
        Fixture *f = *state;
        Worker *w = add_worker_in(f, WORKER_STARTING, f->caller);
        GcProbe p = { .f = f, .w = w };
        char id[WORKER_ID_LEN + 1];
        _cleanup_(sd_bus_slot_unrefp) sd_bus_slot *slot = NULL;

        memcpy(id, w->id, sizeof(id));
        assert_true(sd_bus_add_filter(f->m->bus, &slot, on_end_in_callback, &p) >= 0);
        assert_true(sd_bus_emit_signal(f->peer, "/", "org.sandboxd.Test", "End", NULL) >= 0);
        for (unsigned i = 0; manager_find_worker(f->m, id) && i < 1000; i++)
                assert_true(sd_event_run(f->m->event, 5 * USEC_PER_SEC) >= 0);
        assert_true(p.ran);
        assert_null(manager_find_worker(f->m, id));
        assert_null(f->m->workers);
        assert_int_equal(f->m->n_alive, 0);
        /* Remembered for ListWorkersEx with its result. */
        assert_int_equal(f->m->history.n, 1);
        assert_string_equal(f->m->history.records[0].id, id);
        assert_string_equal(f->m->history.records[0].result, "failed: test failure");
        barrier(f);
        assert_int_equal(count_signal(f, NULL, "org.sandboxd1.Manager", "WorkerRemoved"), 0);
}

/* A PropertiesChanged saying a running worker's unit ended, as systemd
 * (the peer) sends it; ACTIVE is what the peer answers when asked again. */
static void unit_end_signalled(Fixture *f, Worker *w, const char *active) {
        f->unit_active_state = active;
        assert_true(worker_watch_unit(w) >= 0);
        assert_true(sd_bus_emit_signal(f->peer, w->unit_path, "org.freedesktop.DBus.Properties", "PropertiesChanged",
                                       "sa{sv}as", "org.freedesktop.systemd1.Unit", 2, "ExecMainCode", "i", 1,
                                       "ActiveState", "s", "inactive", 0) >= 0);
        for (unsigned i = 0; f->n_unit_reads == 0 && i < 1000; i++)
                assert_true(sd_event_run(f->m->event, 5 * USEC_PER_SEC) >= 0);
        assert_int_equal(f->n_unit_reads, 1);
        barrier(f);
}

/* Ending a worker deletes its home: a signal alone does not do it; systemd,
 * asked again, must say the unit is down (issue 22). */
static void test_unit_end_unconfirmed_keeps_worker(void **state) {
        Fixture *f = *state;
        Worker *w = add_worker_in(f, WORKER_RUNNING, f->caller);

        unit_end_signalled(f, w, "active");
        assert_int_equal(w->state, WORKER_RUNNING);
        assert_false(w->unit_ended);
        assert_int_equal(f->m->history.n, 0);
        assert_int_equal(count_signal(f, "/org/sandboxd1", "org.sandboxd1.Manager", "WorkerRemoved"), 0);
}

/* The control: the same signal, confirmed, ends the worker with systemd's
 * own account of how the process ended. */
static void test_unit_end_confirmed_ends_worker(void **state) {
        Fixture *f = *state;
        Worker *w = add_worker_in(f, WORKER_RUNNING, f->caller);

        unit_end_signalled(f, w, "inactive");
        assert_int_equal(w->state, WORKER_ENDED);
        assert_string_equal(w->result, "exited 7");
        assert_int_equal(w->exit_status, 7);
}

/* ---- a request the endpoint's gate served is activity (worker-gate.h) ---- */

/* The decision alone: a served count that moved, requests at the handler
 * that are no longer, a start that ended; and busy while either is under way. */
static void test_gate_status_decision(void **state) {
        WorkerGateSeen seen = {};

        assert_false(worker_gate_seen_status(&seen, ""));               /* no status yet */
        assert_true(worker_gate_seen_status(&seen, "served=1 refused=0"));
        assert_int_equal(seen.served, 1);
        /* Refusals alone are no request the handler answered. */
        assert_false(worker_gate_seen_status(&seen, "served=1 refused=9"));
        assert_true(worker_gate_seen_status(&seen, "served=3 refused=9"));
        /* A gate started again (the worker resumed) counts from 1. */
        assert_true(worker_gate_seen_status(&seen, "served=1 refused=0"));
        assert_int_equal(seen.served, 1);
        /* Its StatusText cleared, then the same count as before: a request. */
        assert_false(worker_gate_seen_status(&seen, ""));
        assert_int_equal(seen.served, 0);
        assert_true(worker_gate_seen_status(&seen, "served=1 refused=0"));
        assert_false(worker_gate_seen_status(&seen, "garbage"));
        assert_false(worker_gate_seen_status(&seen, "served=0 refused=4"));

        /* A request at the handler: no activity yet, but open ... */
        assert_true(worker_gate_seen_status(&seen, "served=4 refused=0 open=0"));
        assert_false(worker_gate_seen_status(&seen, "served=4 refused=0 open=2"));
        assert_int_equal(seen.open, 2);
        assert_false(worker_gate_seen_status(&seen, "served=4 refused=0 open=1"));
        /* ... and its end is activity even when the handler's timeout
         * refused it (the caller held the token). */
        assert_true(worker_gate_seen_status(&seen, "served=4 refused=1 open=0"));
        assert_int_equal(seen.open, 0);

        /* The gate service's start: busy while activating, its end activity. */
        assert_false(worker_gate_seen_state(&seen, "activating"));
        assert_true(seen.starting);
        assert_true(worker_gate_seen_state(&seen, "active"));
        assert_false(seen.starting);
        assert_false(worker_gate_seen_state(&seen, "active"));
        /* A gate gone with requests told open has none. */
        assert_true(worker_gate_seen_status(&seen, "served=5 refused=1 open=1"));
        assert_false(worker_gate_seen_state(&seen, "deactivating"));
        assert_int_equal(seen.open, 1);
        assert_false(worker_gate_seen_state(&seen, "inactive"));
        assert_int_equal(seen.open, 0);
        assert_false(worker_gate_seen_status(&seen, "served=5 refused=1 open=1"));
        assert_false(worker_gate_seen_state(&seen, "failed"));
        assert_int_equal(seen.open, 0);
}

/* PropertiesChanged of the Service interface at PATH with StatusText
 * STATUS, among the other properties systemd sends with it. */
static void gate_status_signalled(Fixture *f, const char *path, const char *status) {
        assert_true(sd_bus_emit_signal(f->peer, path, "org.freedesktop.DBus.Properties", "PropertiesChanged",
                                       "sa{sv}as", "org.freedesktop.systemd1.Service", 3, "MainPID", "u", 42,
                                       "StatusText", "s", status, "StatusErrno", "i", 0, 0) >= 0);
        settle(f);
}

/* The monotonic clock moves on before a signal, so a touch shows. */
static void clock_moves(void) {
        uint64_t t = now_usec(CLOCK_MONOTONIC);
        while (now_usec(CLOCK_MONOTONIC) == t)
                ;
}

/* A worker in STATE with an endpoint whose gate sandboxd watches; its gate
 * service's object path into *RET_GATE. */
static Worker *add_gate_worker(Fixture *f, WorkerState state, char **ret_gate) {
        Worker *w = add_worker_in(f, state, f->caller);

        assert_int_equal(worker_gate_unit_names(w->id, &w->gate.socket, &w->gate.service), 0);
        assert_int_equal(systemd_unit_path(w->gate.service, ret_gate), 0);
        assert_true(worker_watch_unit(w) >= 0);
        assert_non_null(w->gate.status_match);
        return w;
}

/* Whether STATUS from the gate at PATH set W's idle clock back. */
static bool gate_status_touches(Fixture *f, Worker *w, const char *path, const char *status) {
        uint64_t last = channel_last_activity(w->channel);

        clock_moves();
        gate_status_signalled(f, path, status);
        return channel_last_activity(w->channel) > last;
}

static void test_gate_request_is_activity(void **state) {
        Fixture *f = *state;
        _cleanup_free_ char *gate = NULL;
        Worker *w = add_gate_worker(f, WORKER_RUNNING, &gate);
        uint64_t last;

        assert_true(gate_status_touches(f, w, gate, "served=1 refused=0"));
        /* The controls: the same count again, or the gate's text on the
         * worker's own unit, or on another interface, is no request. */
        assert_false(gate_status_touches(f, w, gate, "served=1 refused=5"));
        assert_false(gate_status_touches(f, w, w->unit_path, "served=2 refused=0"));
        last = channel_last_activity(w->channel);
        assert_true(sd_bus_emit_signal(f->peer, gate, "org.freedesktop.DBus.Properties", "PropertiesChanged",
                                       "sa{sv}as", "org.freedesktop.systemd1.Unit", 1, "StatusText", "s",
                                       "served=2 refused=0", 0) >= 0);
        settle(f);
        assert_int_equal(channel_last_activity(w->channel), last);
        assert_true(gate_status_touches(f, w, gate, "served=2 refused=5"));
}

/* A worker that is not running has no idle clock to set back; the count
 * is still taken, so it is not mistaken for a request later. */
static void test_gate_request_not_running(void **state) {
        Fixture *f = *state;
        _cleanup_free_ char *gate = NULL;
        Worker *w = add_gate_worker(f, WORKER_SUSPENDED, &gate);

        assert_false(gate_status_touches(f, w, gate, "served=4 refused=0"));
        assert_int_equal(w->gate.seen.served, 4);
}

/* Runs the daemon's loop for USEC. */
static void run_for(Fixture *f, uint64_t usec) {
        uint64_t until = now_usec(CLOCK_MONOTONIC) + usec;

        while (now_usec(CLOCK_MONOTONIC) < until)
                assert_true(sd_event_run(f->m->event, until - now_usec(CLOCK_MONOTONIC)) >= 0);
}

/* PropertiesChanged of the Unit interface at PATH with ActiveState STATE. */
static void gate_state_signalled(Fixture *f, const char *path, const char *state) {
        assert_true(sd_bus_emit_signal(f->peer, path, "org.freedesktop.DBus.Properties", "PropertiesChanged",
                                       "sa{sv}as", "org.freedesktop.systemd1.Unit", 2, "ActiveState", "s", state,
                                       "SubState", "s", "start", 0) >= 0);
        settle(f);
}

#define IDLE_TEST_USEC (40 * USEC_PER_MSEC)

/* The idle reaper waits while a request is at the gate's handler or a
 * connection started the gate and waits for it (the CI failure of stop 40:
 * a request that woke a worker cut by the next idle suspend while the gate
 * was still starting); once the gate says so, the worker is idle again. */
static void test_gate_busy_holds_reaper(void **state) {
        Fixture *f = *state;
        _cleanup_free_ char *gate = NULL;
        Worker *w = add_gate_worker(f, WORKER_RUNNING, &gate);

        w->spec.limits.idle_timeout_usec = IDLE_TEST_USEC;
        gate_status_signalled(f, gate, "served=3 refused=0 open=1");
        worker_start_idle_clock(w);
        run_for(f, 5 * IDLE_TEST_USEC);
        assert_int_equal(w->state, WORKER_RUNNING);
        assert_int_equal(f->n_stop_units, 0);

        /* The answer: idle from then on, and reaped. */
        gate_status_signalled(f, gate, "served=4 refused=0 open=0");
        run_for(f, 5 * IDLE_TEST_USEC);
        assert_int_equal(w->state, WORKER_STOPPING);
        assert_int_equal(f->n_stop_units, 1);
}

static void test_gate_starting_holds_reaper(void **state) {
        Fixture *f = *state;
        _cleanup_free_ char *gate = NULL;
        Worker *w = add_gate_worker(f, WORKER_RUNNING, &gate);

        w->spec.limits.idle_timeout_usec = IDLE_TEST_USEC;
        gate_state_signalled(f, gate, "activating");
        worker_start_idle_clock(w);
        run_for(f, 5 * IDLE_TEST_USEC);
        assert_int_equal(w->state, WORKER_RUNNING);
        gate_state_signalled(f, gate, "active");
        run_for(f, 5 * IDLE_TEST_USEC);
        assert_int_equal(w->state, WORKER_STOPPING);
}

/* The control: the same worker with its gate neither starting nor
 * serving is reaped at its idle timeout, and a gate that went while it
 * said a request was open holds nothing. */
static void test_gate_idle_reaped(void **state) {
        Fixture *f = *state;
        _cleanup_free_ char *gate = NULL;
        Worker *w = add_gate_worker(f, WORKER_RUNNING, &gate);

        w->spec.limits.idle_timeout_usec = IDLE_TEST_USEC;
        gate_status_signalled(f, gate, "served=3 refused=0 open=1");
        gate_state_signalled(f, gate, "failed");
        worker_start_idle_clock(w);
        run_for(f, 5 * IDLE_TEST_USEC);
        assert_int_equal(w->state, WORKER_STOPPING);
        assert_int_equal(f->n_stop_units, 1);
}

/* Without an endpoint there is nothing to watch. */
static void test_gate_none_no_watch(void **state) {
        Fixture *f = *state;
        Worker *w = add_worker_in(f, WORKER_RUNNING, f->caller);

        assert_true(worker_watch_unit(w) >= 0);
        assert_null(w->gate.status_match);
}

/* JobRemoved for UNIT with RESULT, as systemd (the peer) sends it; ACTIVE
 * is what the peer answers when asked again for the unit's state. */
static void job_removed_signalled(Fixture *f, const char *unit, const char *result, const char *active) {
        f->unit_active_state = active;
        if (!f->m->job_removed_match)
                assert_true(manager_watch_jobs(f->m) >= 0);
        assert_true(sd_bus_emit_signal(f->peer, "/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager",
                                       "JobRemoved", "uoss", 42, "/org/freedesktop/systemd1/job/42", unit,
                                       result) >= 0);
        settle(f);
}

/* A failed start job ends the worker and deletes its home: not while
 * systemd, asked again, says the unit is still starting (issue 22). */
static void test_start_job_failure_unconfirmed_keeps_worker(void **state) {
        Fixture *f = *state;
        Worker *w = add_worker_in(f, WORKER_STARTING, f->caller);

        job_removed_signalled(f, w->unit, "failed", "activating");
        assert_int_equal(w->state, WORKER_STARTING);
        assert_null(w->result);
        assert_int_equal(f->m->history.n, 0);
        /* Nor when it runs already. */
        job_removed_signalled(f, w->unit, "failed", "active");
        assert_int_equal(w->state, WORKER_STARTING);
        assert_int_equal(f->m->history.n, 0);
        assert_int_equal(f->n_unit_reads, 2);
}

/* The control: confirmed, the same signal ends it. */
static void test_start_job_failure_confirmed_ends_worker(void **state) {
        Fixture *f = *state;
        Worker *w = add_worker_in(f, WORKER_STARTING, f->caller);

        job_removed_signalled(f, w->unit, "failed", "failed");
        assert_int_equal(w->state, WORKER_ENDED);
        assert_string_equal(w->result, "failed: start job failed");
        assert_int_equal(f->m->history.n, 1);
}

static Worker *add_checkpointing_worker(Fixture *f) {
        Worker *w = add_worker_in(f, WORKER_SUSPENDING, f->caller);

        assert_true(asprintf(&w->suspend.unit, "sandbox-%s-suspend.service", w->id) > 0);
        return w;
}

/* A failed checkpoint deletes what it wrote of the image: not while systemd
 * says the checkpoint still runs; nor does a "done" one that is not. */
static void test_checkpoint_job_unconfirmed_changes_nothing(void **state) {
        Fixture *f = *state;
        Worker *w = add_checkpointing_worker(f);

        job_removed_signalled(f, w->suspend.unit, "failed", "activating");
        assert_int_equal(w->state, WORKER_SUSPENDING);
        assert_int_equal(w->suspend.result, 0);
        job_removed_signalled(f, w->suspend.unit, "done", "activating");
        assert_int_equal(w->state, WORKER_SUSPENDING);
        assert_int_equal(w->suspend.result, 0);
        assert_int_equal(f->n_unit_reads, 2);
}

/* The control: systemd says the checkpoint unit failed: so did the suspend. */
static void test_checkpoint_job_failure_confirmed(void **state) {
        Fixture *f = *state;
        Worker *w = add_checkpointing_worker(f);

        job_removed_signalled(f, w->suspend.unit, "failed", "failed");
        assert_int_equal(w->suspend.result, -1);
        /* Running again (and, idle long enough here, already stopping). */
        assert_int_not_equal(w->state, WORKER_SUSPENDING);
}

/* ---- a checkpoint drains the endpoint's gate first (issue 25) ---- */

/* UNIT is down, as systemd says it (PropertiesChanged; asked again: inactive). */
static void unit_down_signalled(Fixture *f, const char *unit) {
        _cleanup_free_ char *path = NULL;

        assert_int_equal(systemd_unit_path(unit, &path), 0);
        f->unit_active_state = "inactive";
        assert_true(sd_bus_emit_signal(f->peer, path, "org.freedesktop.DBus.Properties", "PropertiesChanged",
                                       "sa{sv}as", "org.freedesktop.systemd1.Unit", 1, "ActiveState", "s",
                                       "inactive", 0) >= 0);
        /* The signal, the question asked about it, and what its answer set going. */
        settle(f);
        settle(f);
        f->unit_active_state = NULL;
}

static bool started_unit(Fixture *f, const char *unit) {
        for (size_t i = 0; i < f->n_started_units; i++)
                if (streq(f->started_units[i], unit))
                        return true;
        return false;
}

/* A gVisor worker with an endpoint, asked to suspend: its gate's drain is
 * under way, the socket's stop asked for. */
static Worker *suspend_gate_worker(Fixture *f) {
        _cleanup_free_ char *gate = NULL;
        Worker *w = add_gate_worker(f, WORKER_RUNNING, &gate);
        SbxError e = {};

        w->runtime = SBX_RUNTIME_RUNSC;
        f->answer_starts = true;
        seen_clear(f);
        assert_int_equal(worker_suspend(w, NULL, &e), 0);
        settle(f);
        assert_int_equal(w->state, WORKER_SUSPENDING);
        return w;
}

/* Whether the checkpoint was set going: its UID's keeper is asked for
 * first (uid-keep.h). In this fixture the worker's record cannot be saved,
 * so the checkpoint's own unit is never started: its start fails there. */
static bool checkpoint_asked(Fixture *f, const Worker *w) {
        _cleanup_free_ char *keeper = NULL;

        assert_int_equal(uid_keep_unit_name(w->id, &keeper), 0);
        return started_unit(f, keeper);
}

static void test_suspend_drains_gate_first(void **state) {
        Fixture *f = *state;
        Worker *w = suspend_gate_worker(f);

        /* The socket first, alone (the worker's unit Requires= it): nothing
         * new reaches the gate. */
        assert_int_equal(f->n_stop_units, 1);
        assert_string_equal(f->stop_units[0], w->gate.socket);
        assert_string_equal(f->stop_mode, "ignore-dependencies");
        assert_false(checkpoint_asked(f, w));
        /* Then the gate, whose stop is its drain. */
        unit_down_signalled(f, w->gate.socket);
        assert_int_equal(f->n_stop_units, 2);
        assert_string_equal(f->stop_units[1], w->gate.service);
        assert_string_equal(f->stop_mode, "replace");
        assert_false(checkpoint_asked(f, w));
        assert_false(started_unit(f, w->gate.socket));
        /* Only once the gate is gone: the checkpoint. */
        unit_down_signalled(f, w->gate.service);
        assert_true(checkpoint_asked(f, w));
        /* It could not start (the fixture's record): the worker runs on, and
         * so does its endpoint, whose gate went for it: its socket, found
         * down, is started again once the gate is (still) down. */
        assert_int_equal(w->suspend.result, -1);
        assert_int_not_equal(w->state, WORKER_SUSPENDING);
        f->unit_active_state = "inactive";
        for (unsigned i = 0; i < 4 && !started_unit(f, w->gate.socket); i++)
                settle(f);
        f->unit_active_state = NULL;
        assert_true(started_unit(f, w->gate.socket));
}

/* The keeper's start, as sandboxd sees it through uid_keep_start(). */
static int keep_result;
static unsigned keep_results;

static void on_keep_had(Worker *w, int r, const char *why) {
        keep_result = r;
        keep_results++;
}

static void keep_started_as(Fixture *f, const char *e1, const char *e2, const char *e3, const char *e4) {
        Worker *w = add_worker_in(f, WORKER_RUNNING, f->caller);

        f->answer_starts = true;
        f->keep_errors[0] = e1, f->keep_errors[1] = e2, f->keep_errors[2] = e3, f->keep_errors[3] = e4;
        keep_results = 0;
        keep_result = 1;
        assert_int_equal(uid_keep_start(w, on_keep_had), 0);
        for (unsigned i = 0; keep_results == 0 && i < 8; i++)
                settle(f);
        assert_int_equal(keep_results, 1);
}

/* A suspend the moment a resume answered (suspend-race.sh's round 3 in
 * CI): the last keeper, its stop under way, is still loaded, so systemd
 * says UnitExists; it is started again by name, and the checkpoint that
 * requires it is sent only then. Had it been collected between the two
 * calls, NoSuchUnit: it is made anew. */
static void test_keeper_loaded_started_by_name(void **state) {
        Fixture *f = *state;

        keep_started_as(f, SYSTEMD_ERROR_UNIT_EXISTS, NULL, NULL, NULL);
        assert_int_equal(keep_result, 0);
        assert_string_equal(f->keep_calls, "TS");
}

static void test_keeper_collected_made_anew(void **state) {
        Fixture *f = *state;

        keep_started_as(f, SYSTEMD_ERROR_UNIT_EXISTS, SYSTEMD_ERROR_NO_SUCH_UNIT, NULL, NULL);
        assert_int_equal(keep_result, 0);
        assert_string_equal(f->keep_calls, "TST");
}

/* The controls: one made at once is one call; systemd's refusal for any
 * other reason, or a race that never settles, fails the suspend (the
 * worker runs on) and is not asked again and again. */
static void test_keeper_made_at_once(void **state) {
        Fixture *f = *state;

        keep_started_as(f, NULL, NULL, NULL, NULL);
        assert_int_equal(keep_result, 0);
        assert_string_equal(f->keep_calls, "T");
}

static void test_keeper_refused(void **state) {
        Fixture *f = *state;

        keep_started_as(f, "org.freedesktop.DBus.Error.AccessDenied", NULL, NULL, NULL);
        assert_int_equal(keep_result, -EIO);
        assert_string_equal(f->keep_calls, "T");
}

static void test_keeper_race_bounded(void **state) {
        Fixture *f = *state;

        keep_started_as(f, SYSTEMD_ERROR_UNIT_EXISTS, SYSTEMD_ERROR_NO_SUCH_UNIT, SYSTEMD_ERROR_UNIT_EXISTS,
                        SYSTEMD_ERROR_NO_SUCH_UNIT);
        assert_int_equal(keep_result, -EBUSY);
        assert_int_equal(strlen(f->keep_calls), UID_KEEP_ATTEMPTS);
}

/* The control: a worker without an endpoint is checkpointed at once, and no
 * gate is made after its failure. */
static void test_suspend_without_gate_checkpoints_at_once(void **state) {
        Fixture *f = *state;
        Worker *w = add_worker_in(f, WORKER_RUNNING, f->caller);
        SbxError e = {};

        w->runtime = SBX_RUNTIME_RUNSC;
        f->answer_starts = true;
        seen_clear(f);
        /* The fixture's record: the start fails, said to the caller. */
        assert_true(worker_suspend(w, NULL, &e) < 0);
        assert_string_equal(e.name, SBX_ERROR_SUSPEND_FAILED);
        settle(f);
        assert_true(checkpoint_asked(f, w));
        assert_int_equal(w->state, WORKER_RUNNING);
        assert_int_equal(f->n_started_units, 1);
}

/* Its unit ends by itself while the gate drains: no checkpoint starts, and
 * the worker ended. */
static void test_unit_end_during_gate_drain(void **state) {
        Fixture *f = *state;
        Worker *w = suspend_gate_worker(f);

        w->unit_ended = true;
        worker_unit_gone(w);
        assert_int_equal(w->state, WORKER_ENDED);
        assert_null(w->suspend.gate_drain);
        unit_down_signalled(f, w->gate.socket);
        assert_false(checkpoint_asked(f, w));
        assert_false(started_unit(f, w->gate.socket));
}

/* The pool refills at its own pace (a second sandbox may start while a
 * slow test runs): how many it started, probes and cleanups not counted. */
static size_t pool_started(Fixture *f) {
        size_t n = 0;

        for (size_t i = 0; i < f->n_started_units; i++)
                n += strlen(f->started_units[i]) == strlen("sandbox-.service") + WORKER_ID_LEN;
        return n;
}

/* One pooled sandbox, started as the pool starts one; returns its unit. */
static const char *pool_one(Fixture *f) {
        RuntimeStatus *runsc = &f->m->runtimes.status[SBX_RUNTIME_RUNSC];

        f->answer_starts = true;
        f->m->config.pool_standard_size = 1;
        f->m->config.pool_untrusted_size = 0;
        f->m->config.pool_refill_per_second = 1;
        f->m->config.pool_min_mem_available = 0;
        f->m->config.pool_pressure_max = 0;
        f->m->runtimes.walls.namespaces_private = true;
        runtime_status_set(runsc, true, "/bin/sh", "");
        assert_int_equal(pool_start(&f->m->pool), 0);
        for (unsigned i = 0; f->n_started_units == 0 && i < 1000; i++)
                assert_true(sd_event_run(f->m->event, 5 * USEC_PER_SEC) >= 0);
        assert_int_equal(f->n_started_units, 1);
        barrier(f);
        assert_int_equal(pool_n_total(&f->m->pool), pool_started(f));
        return f->started_units[0];
}

static bool stopped_unit(Fixture *f, const char *unit) {
        for (size_t i = 0; i < f->n_stop_units; i++)
                if (streq(f->stop_units[i], unit))
                        return true;
        return false;
}

/* A pooled sandbox whose start job failed goes, with its home and bundle:
 * only once systemd agrees; the control is the confirmed failure. */
static void test_pool_start_failure_confirmed_only(void **state) {
        Fixture *f = *state;
        const char *unit = pool_one(f);

        job_removed_signalled(f, unit, "failed", "activating");
        assert_int_equal(pool_n_total(&f->m->pool), pool_started(f));
        assert_false(stopped_unit(f, unit));
        assert_int_equal(f->n_unit_reads, 1);
        job_removed_signalled(f, unit, "failed", "failed");
        assert_int_equal(pool_n_total(&f->m->pool), pool_started(f) - 1);
        assert_true(stopped_unit(f, unit));
}

/* PropertiesChanged ActiveState=ACTIVE on UNIT's path, from the peer. */
static void pool_unit_state_signalled(Fixture *f, const char *unit, const char *active) {
        _cleanup_free_ char *path = NULL;

        assert_true(sd_bus_path_encode("/org/freedesktop/systemd1/unit", unit, &path) >= 0);
        assert_true(sd_bus_emit_signal(f->peer, path, "org.freedesktop.DBus.Properties", "PropertiesChanged",
                                       "sa{sv}as", "org.freedesktop.systemd1.Unit", 1, "ActiveState", "s",
                                       active, 0) >= 0);
}

/* Its unit's end, said but not confirmed, leaves a pooled sandbox be. */
static void test_pool_unit_end_confirmed_only(void **state) {
        Fixture *f = *state;
        const char *unit = pool_one(f);

        pool_unit_state_signalled(f, unit, "active");
        barrier(f);
        f->unit_active_state = "active";
        pool_unit_state_signalled(f, unit, "inactive");
        settle(f);
        assert_int_equal(pool_n_total(&f->m->pool), pool_started(f));
        assert_false(stopped_unit(f, unit));
        assert_int_equal(f->n_unit_reads, 1);
        f->unit_active_state = "inactive";
        pool_unit_state_signalled(f, unit, "inactive");
        settle(f);
        assert_int_equal(pool_n_total(&f->m->pool), pool_started(f) - 1);
        assert_true(stopped_unit(f, unit));
}

/* A reload replaces only the pooled sandboxes systemd can no longer read
 * back (systemd 252's bad-setting); one it says nothing of, none. */
static void test_pool_reload_confirmed_only(void **state) {
        Fixture *f = *state;
        const char *unit = pool_one(f);

        f->unit_active_state = "active";
        assert_true(sd_bus_emit_signal(f->peer, "/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager",
                                       "Reloading", "b", 0) >= 0);
        settle(f);
        assert_false(stopped_unit(f, unit));
        assert_int_equal(f->n_unit_reads, 1);
        f->unit_load_state = "bad-setting";
        assert_true(sd_bus_emit_signal(f->peer, "/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager",
                                       "Reloading", "b", 0) >= 0);
        settle(f);
        assert_true(stopped_unit(f, unit));
}

static void test_unit_gone_lingers_then_deferred_free(void **state) {
        Fixture *f = *state;
        Worker *w = add_worker_in(f, WORKER_RUNNING, f->caller);
        char id[WORKER_ID_LEN + 1];

        memcpy(id, w->id, sizeof(id));
        w->exec_main_code = 1;                  /* CLD_EXITED */
        w->exec_main_status = 3;
        worker_unit_gone(w);
        assert_int_equal(w->state, WORKER_ENDED);
        assert_string_equal(w->result, "exited 3");
        assert_int_equal(w->exit_status, 3);
        assert_non_null(w->timers.linger);
        barrier(f);
        assert_int_equal(count_signal(f, "/org/sandboxd1", "org.sandboxd1.Manager", "WorkerRemoved"), 1);
        assert_ptr_equal(manager_find_worker(f->m, id), w);
        assert_int_equal(f->m->history.n, 1);

        /* The linger's end, now rather than in 30 s: the object goes from the
         * bus in the timer's callback, the worker itself only after it. */
        seen_clear(f);
        assert_true(sd_event_source_set_time(w->timers.linger, 1) >= 0);
        for (unsigned i = 0; manager_find_worker(f->m, id) && i < 1000; i++)
                assert_true(sd_event_run(f->m->event, 5 * USEC_PER_SEC) >= 0);
        assert_null(manager_find_worker(f->m, id));
        barrier(f);
        assert_int_equal(count_signal(f, "/org/sandboxd1", "org.freedesktop.DBus.ObjectManager", "InterfacesRemoved"), 1);
}

static void test_stop_redirect(void **state) {
        Fixture *f = *state;
        Worker *a = add_worker_in(f, WORKER_RUNNING, f->caller);
        Worker *b = add_worker_in(f, WORKER_RUNNING, f->caller);
        Reply ra, rb;

        /* Running: both ways ask systemd to stop the unit and move to stopping. */
        ra = call_manager(f, "StopWorker", a);
        rb = call_object(f, "Stop", b);
        assert_string_equal(ra.error, "");
        assert_string_equal(rb.error, "");
        assert_int_equal(a->state, WORKER_STOPPING);
        assert_int_equal(b->state, WORKER_STOPPING);
        assert_string_equal(a->stop_reason, "stopped");
        assert_string_equal(b->stop_reason, "stopped");
        barrier(f);
        assert_int_equal(f->n_stop_units, 2);
        assert_string_equal(f->stop_units[0], a->unit);
        assert_string_equal(f->stop_units[1], b->unit);
        assert_changed(f, a->object_path, "org.sandboxd1.Worker", "State");
        assert_changed(f, b->object_path, "org.sandboxd1.Worker", "State");

        /* Ended (still lingering): the same refusal both ways. */
        assert_int_equal(worker_set_state(a, WORKER_ENDED), 0);
        assert_int_equal(worker_set_state(b, WORKER_ENDED), 0);
        seen_clear(f);
        ra = call_manager(f, "StopWorker", a);
        rb = call_object(f, "Stop", b);
        assert_string_equal(ra.error, SBX_ERROR_NOT_RUNNING);
        assert_string_equal(rb.error, SBX_ERROR_NOT_RUNNING);
        barrier(f);
        assert_int_equal(f->n_stop_units, 0);
}

static void test_redirect_same_authorization(void **state) {
        Fixture *f = *state;
        Worker *a = add_worker_in(f, WORKER_RUNNING, OTHER_UID);
        Worker *b = add_worker_in(f, WORKER_RUNNING, OTHER_UID);
        const char *methods[][2] = { { "StopWorker", "Stop" }, { "OpenChannel", "OpenChannel" } };

        /* Someone else's worker, and no polkit to ask: refused both ways,
         * with nothing changed, and in the words used for an ID that was
         * never used, so the answer does not say the worker exists. */
        for (size_t i = 0; i < ELEMENTSOF(methods); i++) {
                Reply ra = call_manager(f, methods[i][0], a);
                Reply rb = call_object(f, methods[i][1], b);
                Reply ru = call(f, "/org/sandboxd1", "org.sandboxd1.Manager", methods[i][0], "000000000000");
                Reply rv = call(f, "/org/sandboxd1/worker/000000000000", "org.sandboxd1.Worker", methods[i][1],
                                NULL);
                assert_string_equal(ra.error, SBX_ERROR_NO_SUCH_WORKER);
                assert_string_equal(ru.error, SBX_ERROR_NO_SUCH_WORKER);
                assert_string_equal(rb.error, SD_BUS_ERROR_UNKNOWN_OBJECT);
                assert_string_equal(rv.error, SD_BUS_ERROR_UNKNOWN_OBJECT);
        }
        assert_int_equal(a->state, WORKER_RUNNING);
        assert_int_equal(b->state, WORKER_RUNNING);
        assert_false(channel_is_attached(a->channel));
        assert_false(channel_is_attached(b->channel));
        barrier(f);
        assert_int_equal(f->n_stop_units, 0);
}

static void test_open_channel_redirect(void **state) {
        Fixture *f = *state;
        Worker *a = add_worker_in(f, WORKER_RUNNING, f->caller);
        Worker *b = add_worker_in(f, WORKER_RUNNING, f->caller);
        Worker *s = add_worker_in(f, WORKER_STARTING, f->caller);
        Reply ra, rb;

        ra = call_manager(f, "OpenChannel", a);
        rb = call_object(f, "OpenChannel", b);
        assert_string_equal(ra.error, "");
        assert_string_equal(rb.error, "");
        assert_true(ra.fd >= 0 && rb.fd >= 0);
        assert_true(channel_is_attached(a->channel));
        assert_true(channel_is_attached(b->channel));

        /* A second client while the first is attached: busy both ways. */
        {
                Reply sa = call_manager(f, "OpenChannel", a);
                Reply sb = call_object(f, "OpenChannel", b);
                assert_string_equal(sa.error, SBX_ERROR_CHANNEL_BUSY);
                assert_string_equal(sb.error, SBX_ERROR_CHANNEL_BUSY);
        }
        safe_close(ra.fd);
        safe_close(rb.fd);

        /* A starting worker is not on the bus yet: no such worker by ID. */
        ra = call_manager(f, "OpenChannel", s);
        assert_string_equal(ra.error, SBX_ERROR_NO_SUCH_WORKER);
        ra = call_manager(f, "GetWorker", s);
        assert_string_equal(ra.error, SBX_ERROR_NO_SUCH_WORKER);
}

/* ---- a shared-kernel worker's start: job done, then the token ------------ */

/* A worker that awaits sandbox-exec's token, with the worker's end of its
 * stdout kept in *RET_STDOUT (the rest closed) to write as sandbox-exec. */
static Worker *add_ready_worker(Fixture *f, int *ret_stdout) {
        ChannelWorkerFds fds = { -1, -1, -1 };
        WorkerSpec spec;
        Worker *w;

        worker_spec_init(&spec);
        /* Not reaped while the test spins the loop. */
        spec.limits.idle_timeout_usec = 3600 * USEC_PER_SEC;
        /* RUNSC: a failed start re-probes nothing; what is tested does not
         * depend on the runtime. */
        assert_int_equal(worker_new(&w, &f->m->worker_owner, &spec, SBX_RUNTIME_RUNSC), 0);
        w->owner = f->caller;
        assert_int_equal(worker_new_channel(w, &fds), 0);
        worker_ready_expect(w);
        manager_add_worker(f->m, w);
        *ret_stdout = TAKE_FD(fds.stdout_fd);
        channel_worker_fds_close(&fds);
        return w;
}

static void spin(Fixture *f) {
        for (int i = 0; i < 50; i++)
                if (sd_event_run(f->m->event, 1000) <= 0)
                        break;
}

static const char *last_result(Fixture *f) {
        assert_true(f->m->history.n > 0);
        return f->m->history.records[f->m->history.n - 1].result;
}

/* Neither the job alone nor the token alone makes it running. */
static void test_ready_after_job_and_token(void **state) {
        Fixture *f = *state;
        _cleanup_close_ int out = -1;
        Worker *w = add_ready_worker(f, &out);

        worker_ready_job_done(w);
        assert_int_equal(w->state, WORKER_STARTING);
        assert_non_null(w->start.ready_timer);
        assert_int_equal(write(out, "sandbox-exec: rea", 17), 17);
        spin(f);
        assert_int_equal(w->state, WORKER_STARTING);
        assert_int_equal(write(out, "dy\n", 3), 3);
        spin(f);
        assert_int_equal(w->state, WORKER_RUNNING);
        assert_true(w->exported);
        assert_null(w->start.ready_timer);
}

/* A second job's end (a stop job's, while the unit's end is being
 * confirmed) arms no second readiness timer over the first: the first would
 * outlive the worker and fire on freed memory (seen as a crash, issue 22). */
static void test_ready_second_job_end_arms_no_timer(void **state) {
        Fixture *f = *state;
        _cleanup_close_ int out = -1;
        Worker *w = add_ready_worker(f, &out);
        sd_event_source *first;

        worker_ready_job_done(w);
        first = w->start.ready_timer;
        assert_non_null(first);
        worker_ready_job_removed(w, "done");
        assert_ptr_equal(w->start.ready_timer, first);
        assert_int_equal(w->state, WORKER_STARTING);
}

static void test_ready_token_before_job(void **state) {
        Fixture *f = *state;
        _cleanup_close_ int out = -1;
        Worker *w = add_ready_worker(f, &out);

        assert_int_equal(write(out, SBX_EXEC_READY_TOKEN, SBX_EXEC_READY_TOKEN_LEN), (ssize_t) SBX_EXEC_READY_TOKEN_LEN);
        spin(f);
        assert_int_equal(w->state, WORKER_STARTING);
        assert_false(w->exported);
        worker_ready_job_done(w);
        assert_int_equal(w->state, WORKER_RUNNING);
}

/* A failed check: sandbox-exec exits 127 without a token. The start fails
 * with the reason its status means, and the worker is never on the bus. */
static void test_ready_check_failed(void **state) {
        Fixture *f = *state;
        _cleanup_close_ int out = -1;
        Worker *w = add_ready_worker(f, &out);
        char id[WORKER_ID_LEN + 1];

        memcpy(id, w->id, sizeof(id));
        worker_ready_job_done(w);
        w->exec_main_code = 1;
        w->exec_main_status = SBX_EXEC_EXIT_NOT_FOUND;
        w->unit_ended = true;
        worker_ready_unit_ended(w);
        assert_int_equal(w->state, WORKER_ENDED);
        assert_false(w->exported);
        assert_string_equal(last_result(f), "failed: the command does not exist (sandbox-exec exit status 127)");
        for (unsigned i = 0; manager_find_worker(f->m, id) && i < 1000; i++)
                assert_true(sd_event_run(f->m->event, 5 * USEC_PER_SEC) >= 0);
        assert_null(manager_find_worker(f->m, id));
        barrier(f);
        assert_int_equal(count_signal(f, NULL, "org.sandboxd1.Manager", "WorkerNew"), 0);
}

/* A quick workload: the token and its output were in the pipe when the unit
 * ended, before the loop read them. It ran: running, then ended by itself,
 * its output kept for a client. */
static void test_ready_token_then_quick_end(void **state) {
        Fixture *f = *state;
        _cleanup_close_ int out = -1;
        Worker *w = add_ready_worker(f, &out);

        worker_ready_job_done(w);
        assert_int_equal(write(out, SBX_EXEC_READY_TOKEN "hi\n", SBX_EXEC_READY_TOKEN_LEN + 3),
                         (ssize_t) SBX_EXEC_READY_TOKEN_LEN + 3);
        w->exec_main_code = 1;
        w->exec_main_status = 0;
        w->unit_ended = true;
        worker_ready_unit_ended(w);
        assert_int_equal(w->state, WORKER_ENDED);
        assert_string_equal(w->result, "exited 0");
        assert_true(w->exported);
        assert_true(channel_has_pending_output(w->channel));
        assert_int_equal(channel_bytes_out(w->channel), 3);
}

/* A workload that ended at once, before systemd saw sandbox-exec's exec:
 * the start job "failed", yet the token is in the pipe. It ran, and ended
 * with its own status, not as a failed start (tests/cli/integration.sh's
 * "echo early; exit 4" met this in CI). */
static void test_ready_job_failed_after_token(void **state) {
        Fixture *f = *state;
        _cleanup_close_ int out = -1;
        Worker *w = add_ready_worker(f, &out);

        assert_int_equal(write(out, SBX_EXEC_READY_TOKEN "early\n", SBX_EXEC_READY_TOKEN_LEN + 6),
                         (ssize_t) SBX_EXEC_READY_TOKEN_LEN + 6);
        w->exec_main_code = 1;
        w->exec_main_status = 4;
        w->unit_ended = true;
        worker_ready_unit_ended(w);
        assert_int_equal(w->state, WORKER_STARTING);
        worker_ready_job_removed(w, "failed");
        assert_int_equal(w->state, WORKER_ENDED);
        assert_string_equal(w->result, "exited 4");
        assert_true(w->exported);
        assert_int_equal(channel_bytes_out(w->channel), 6);
}

/* A failed job without a token is a failed start, with the check's reason;
 * a job that never ran (a dependency) fails at once. */
static void test_ready_job_failed_without_token(void **state) {
        Fixture *f = *state;
        _cleanup_close_ int out = -1, out2 = -1;
        Worker *w = add_ready_worker(f, &out);

        worker_ready_job_removed(w, "failed");
        assert_int_equal(w->state, WORKER_STARTING);
        w->exec_main_code = 1;
        w->exec_main_status = SBX_EXEC_EXIT_SHARED;
        w->unit_ended = true;
        worker_ready_unit_ended(w);
        assert_int_equal(w->state, WORKER_ENDED);
        assert_false(w->exported);
        assert_string_equal(last_result(f), "failed: a namespace of the worker is PID 1's (sandbox-exec exit status 125)");

        w = add_ready_worker(f, &out2);
        worker_ready_job_removed(w, "dependency");
        assert_int_equal(w->state, WORKER_ENDED);
        assert_false(w->exported);
        assert_string_equal(last_result(f), "failed: start job dependency");
}

/* A workload that ended at once ended its unit while the start job ran:
 * the exec socket, bound to the unit, stopped with it and its stop canceled
 * the start job (CI, December 2026: "start job canceled" for /bin/true).
 * The token is in the pipe: it ran, and ended with its own status. */
static void test_ready_job_canceled_after_token(void **state) {
        Fixture *f = *state;
        _cleanup_close_ int out = -1;
        Worker *w = add_ready_worker(f, &out);

        assert_int_equal(write(out, SBX_EXEC_READY_TOKEN "quick\n", SBX_EXEC_READY_TOKEN_LEN + 6),
                         (ssize_t) SBX_EXEC_READY_TOKEN_LEN + 6);
        job_removed_signalled(f, w->unit, "canceled", "inactive");
        for (unsigned i = 0; w->state != WORKER_ENDED && i < 1000; i++)
                assert_true(sd_event_run(f->m->event, 5 * USEC_PER_SEC) >= 0);
        assert_int_equal(w->state, WORKER_ENDED);
        assert_string_equal(w->result, "exited 7");
        assert_true(w->exported);
        assert_int_equal(channel_bytes_out(w->channel), 6);
}

/* The control: canceled before anything ran (no token, no exit status) is
 * a failed start that says so, without waiting for the readiness timeout. */
static void test_ready_job_canceled_without_token(void **state) {
        Fixture *f = *state;
        _cleanup_close_ int out = -1;
        Worker *w = add_ready_worker(f, &out);

        out = safe_close(out);
        f->unit_never_ran = true;
        job_removed_signalled(f, w->unit, "canceled", "inactive");
        for (unsigned i = 0; w->state == WORKER_STARTING && i < 1000; i++)
                assert_true(sd_event_run(f->m->event, 5 * USEC_PER_SEC) >= 0);
        assert_int_equal(w->state, WORKER_ENDED);
        assert_false(w->exported);
        assert_string_equal(last_result(f), "failed: start job canceled");
}

/* Other bytes first: not running, whatever follows; the unit's end then
 * fails the start. */
static void test_ready_wrong_bytes(void **state) {
        Fixture *f = *state;
        _cleanup_close_ int out = -1;
        Worker *w = add_ready_worker(f, &out);

        worker_ready_job_done(w);
        assert_int_equal(write(out, "hello " SBX_EXEC_READY_TOKEN, 6 + SBX_EXEC_READY_TOKEN_LEN),
                         (ssize_t) (6 + SBX_EXEC_READY_TOKEN_LEN));
        spin(f);
        assert_int_equal(w->state, WORKER_STARTING);
        assert_non_null(w->start.ready_timer);
        w->exec_main_code = 2;
        w->exec_main_status = 9;
        w->unit_ended = true;
        worker_ready_unit_ended(w);
        assert_int_equal(w->state, WORKER_ENDED);
        assert_string_equal(last_result(f), "failed: sandbox-exec was killed by signal 9 before the workload ran");
}

/* EOF on stdout before the token and the unit still there: nothing yet; the
 * timer bounds the wait. */
static void test_ready_eof_waits_for_unit(void **state) {
        Fixture *f = *state;
        int out = -1;
        Worker *w = add_ready_worker(f, &out);
        _cleanup_free_ char *unit = strdup(w->unit);

        worker_ready_job_done(w);
        out = safe_close(out);
        spin(f);
        assert_int_equal(w->state, WORKER_STARTING);
        assert_non_null(w->start.ready_timer);
        /* The bound, now rather than in 90 s: the unit is stopped, the start
         * failed (and the worker is freed). */
        assert_true(sd_event_source_set_time(w->start.ready_timer, 1) >= 0);
        spin(f);
        barrier(f);
        assert_null(f->m->workers);
        assert_string_equal(last_result(f), "failed: sandbox-exec's output was not its readiness token");
        assert_int_equal(f->n_stop_units, 1);
        assert_string_equal(f->stop_units[0], unit);
}

static void test_ready_failure_reasons(void **state) {
        static const struct {
                int code, status;
                const char *reason;
        } cases[] = {
                { 1, 122, "the worker's environment could not be read (sandbox-exec exit status 122)" },
                { 1, 123, "sandbox-exec was given a bad command line (sandbox-exec exit status 123)" },
                { 1, 124, "sandbox-exec could not write its readiness token (sandbox-exec exit status 124)" },
                { 1, 125, "a namespace of the worker is PID 1's (sandbox-exec exit status 125)" },
                { 1, 126, "the command cannot be executed (sandbox-exec exit status 126)" },
                { 1, 127, "the command does not exist (sandbox-exec exit status 127)" },
                { 1, 1, "sandbox-exec exited 1 before the workload ran" },
                { 2, 15, "sandbox-exec was killed by signal 15 before the workload ran" },
                { 3, 11, "sandbox-exec was killed by signal 11 before the workload ran" },
                { 0, 0, "the unit ended before the workload ran" },
        };
        char buf[160];

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                worker_ready_failure_reason(cases[i].code, cases[i].status, buf, sizeof(buf));
                assert_string_equal(buf, cases[i].reason);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_transition_table),
                cmocka_unit_test_setup_teardown(test_starting_to_running, setup, teardown),
                cmocka_unit_test_setup_teardown(test_running_to_stopping, setup, teardown),
                cmocka_unit_test_setup_teardown(test_running_to_ended, setup, teardown),
                cmocka_unit_test_setup_teardown(test_other_owner_not_signalled, setup, teardown),
                cmocka_unit_test_setup_teardown(test_other_owner_signalled_to_manager, setup, teardown),
                cmocka_unit_test_setup_teardown(test_interfaces_added_properties, setup, teardown),
                cmocka_unit_test_setup_teardown(test_subscriber_leaves, setup, teardown),
                cmocka_unit_test_setup_teardown(test_stopping_to_ended, setup, teardown),
                cmocka_unit_test_setup_teardown(test_starting_to_ended, setup, teardown),
                cmocka_unit_test_setup_teardown(test_refused_transitions, setup, teardown),
                cmocka_unit_test_setup_teardown(test_suspend_resume_cycle, setup, teardown),
                cmocka_unit_test_setup_teardown(test_resuming_back_to_suspended, setup, teardown),
                cmocka_unit_test_setup_teardown(test_suspending_back_to_running, setup, teardown),
                cmocka_unit_test_setup_teardown(test_suspended_to_ended, setup, teardown),
                cmocka_unit_test_setup_teardown(test_suspending_to_ended, setup, teardown),
                cmocka_unit_test_setup_teardown(test_resuming_to_ended, setup, teardown),
                cmocka_unit_test_setup_teardown(test_stop_suspended, setup, teardown),
                cmocka_unit_test_setup_teardown(test_suspended_channel_and_stop_refusals, setup, teardown),
                cmocka_unit_test(test_suspendable),
                cmocka_unit_test_setup_teardown(test_suspend_trusted_refused, setup, teardown),
                cmocka_unit_test_setup_teardown(test_deferred_free_after_failed_start, setup, teardown),
                cmocka_unit_test_setup_teardown(test_unit_gone_lingers_then_deferred_free, setup, teardown),
                cmocka_unit_test_setup_teardown(test_unit_end_unconfirmed_keeps_worker, setup, teardown),
                cmocka_unit_test_setup_teardown(test_unit_end_confirmed_ends_worker, setup, teardown),
                cmocka_unit_test(test_gate_status_decision),
                cmocka_unit_test_setup_teardown(test_gate_request_is_activity, setup, teardown),
                cmocka_unit_test_setup_teardown(test_gate_request_not_running, setup, teardown),
                cmocka_unit_test_setup_teardown(test_gate_busy_holds_reaper, setup, teardown),
                cmocka_unit_test_setup_teardown(test_gate_starting_holds_reaper, setup, teardown),
                cmocka_unit_test_setup_teardown(test_gate_idle_reaped, setup, teardown),
                cmocka_unit_test_setup_teardown(test_gate_none_no_watch, setup, teardown),
                cmocka_unit_test_setup_teardown(test_suspend_drains_gate_first, setup, teardown),
                cmocka_unit_test_setup_teardown(test_suspend_without_gate_checkpoints_at_once, setup, teardown),
                cmocka_unit_test_setup_teardown(test_keeper_loaded_started_by_name, setup, teardown),
                cmocka_unit_test_setup_teardown(test_keeper_collected_made_anew, setup, teardown),
                cmocka_unit_test_setup_teardown(test_keeper_made_at_once, setup, teardown),
                cmocka_unit_test_setup_teardown(test_keeper_refused, setup, teardown),
                cmocka_unit_test_setup_teardown(test_keeper_race_bounded, setup, teardown),
                cmocka_unit_test_setup_teardown(test_unit_end_during_gate_drain, setup, teardown),
                cmocka_unit_test_setup_teardown(test_start_job_failure_unconfirmed_keeps_worker, setup, teardown),
                cmocka_unit_test_setup_teardown(test_start_job_failure_confirmed_ends_worker, setup, teardown),
                cmocka_unit_test_setup_teardown(test_checkpoint_job_unconfirmed_changes_nothing, setup, teardown),
                cmocka_unit_test_setup_teardown(test_checkpoint_job_failure_confirmed, setup, teardown),
                cmocka_unit_test_setup_teardown(test_pool_start_failure_confirmed_only, setup, teardown),
                cmocka_unit_test_setup_teardown(test_pool_unit_end_confirmed_only, setup, teardown),
                cmocka_unit_test_setup_teardown(test_pool_reload_confirmed_only, setup, teardown),
                cmocka_unit_test_setup_teardown(test_stop_redirect, setup, teardown),
                cmocka_unit_test_setup_teardown(test_redirect_same_authorization, setup, teardown),
                cmocka_unit_test_setup_teardown(test_open_channel_redirect, setup, teardown),
                cmocka_unit_test_setup_teardown(test_ready_after_job_and_token, setup, teardown),
                cmocka_unit_test_setup_teardown(test_ready_second_job_end_arms_no_timer, setup, teardown),
                cmocka_unit_test_setup_teardown(test_ready_token_before_job, setup, teardown),
                cmocka_unit_test_setup_teardown(test_ready_check_failed, setup, teardown),
                cmocka_unit_test_setup_teardown(test_ready_job_failed_after_token, setup, teardown),
                cmocka_unit_test_setup_teardown(test_ready_job_failed_without_token, setup, teardown),
                cmocka_unit_test_setup_teardown(test_ready_job_canceled_after_token, setup, teardown),
                cmocka_unit_test_setup_teardown(test_ready_job_canceled_without_token, setup, teardown),
                cmocka_unit_test_setup_teardown(test_ready_token_then_quick_end, setup, teardown),
                cmocka_unit_test_setup_teardown(test_ready_wrong_bytes, setup, teardown),
                cmocka_unit_test_setup_teardown(test_ready_eof_waits_for_unit, setup, teardown),
                cmocka_unit_test(test_ready_failure_reasons),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
