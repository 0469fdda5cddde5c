/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <grp.h>
#include <pwd.h>

#include "systemd-bus.h"
#include "uid-keep.h"
#include "unit-props.h"
#include "unit-stop.h"

#define UID_KEEP_EXEC "/bin/true"

int uid_keep_unit_name(const char *id, char **ret) {
        return asprintf(ret, "sandbox-%s" UID_KEEP_UNIT_SUFFIX, id) < 0 ? -ENOMEM : 0;
}

int uid_keep_append_dependency(sd_bus_message *m, const char *id) {
        _cleanup_free_ char *keep = NULL;
        int r = uid_keep_unit_name(id, &keep);

        if (r >= 0)
                r = sd_bus_message_append(m, "(sv)", "Requires", "as", 1, keep);
        return r < 0 ? r : sd_bus_message_append(m, "(sv)", "After", "as", 1, keep);
}

static int append_properties(sd_bus_message *m, const Worker *w) {
        static char * const argv[] = { (char *) UID_KEEP_EXEC, NULL };
        int r;

        /* Its one process is /bin/true as the worker's dynamic user, gone at
         * once. DynamicUser= brings ProtectSystem=strict, ProtectHome=,
         * PrivateTmp=, NoNewPrivileges= and RemoveIPC=; on top: no
         * capabilities, no network, no namespaces, a few tasks, little
         * memory. Not every wall of a worker: each costs set-up time, and
         * the checkpoint waits for this unit. */
        r = sd_bus_message_open_container(m, 'a', "(sv)");
        if (r >= 0)
                r = unit_append_helper_oneshot(m, "sandboxd keeper of a suspended worker's UID",
                                               30 * USEC_PER_SEC, UID_KEEP_EXEC, argv);
        if (r >= 0)
                r = sd_bus_message_append(m, "(sv)(sv)(sv)(sv)(sv)(sv)(sv)(sv)(sv)(sv)(sv)(sv)(sv)",
                                          "RemainAfterExit", "b", 1,
                                          "DynamicUser", "b", 1,
                                          "User", "s", w->user,
                                          "Slice", "s", SBX_SLICE,
                                          "NoNewPrivileges", "b", 1,
                                          "CapabilityBoundingSet", "t", (uint64_t) 0,
                                          "AmbientCapabilities", "t", (uint64_t) 0,
                                          "RestrictNamespaces", "t", (uint64_t) 0,
                                          "LockPersonality", "b", 1,
                                          "MemoryMax", "t", (uint64_t) 16 << 20,
                                          "TasksMax", "t", (uint64_t) 4,
                                          "LimitCORE", "t", (uint64_t) 0,
                                          "LimitCORESoft", "t", (uint64_t) 0);
        if (r >= 0)
                r = sd_bus_message_append(m, "(sv)", "RestrictAddressFamilies", "(bas)", 1, 1, "AF_UNIX");
        return r < 0 ? r : sd_bus_message_close_container(m);
}

static int keep_call(Worker *w, bool by_name);

static void log_keep_failed(const Worker *w, const char *why) {
        log_struct(LOG_ERR, "Failed to start the keeper of a suspended worker's UID",
                   "SANDBOXD_WORKER_ID", w->id, "SANDBOXD_REASON", why, "SANDBOXD_EVENT", "uid-keep-failed", NULL);
}

static void keep_done(Worker *w, int r, const char *why) {
        uid_keep_done_t done = w->keep.done;

        w->keep.done = NULL;
        if (r < 0)
                log_keep_failed(w, why);
        if (done)
                done(w, r, why);
}

static int on_keep_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        Worker *w = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(reply);
        int r;

        w->keep.call = sd_bus_slot_unref(w->keep.call);
        if (!e) {
                keep_done(w, 0, NULL);
                return 0;
        }
        if (w->keep.attempts >= UID_KEEP_ATTEMPTS) {
                keep_done(w, -EBUSY, e->message ?: e->name);
                return 0;
        }
        /* Still loaded from the resume before: started again by name (its
         * start replaces the stop). Collected in between: made anew. */
        if (sd_bus_error_has_name(e, SYSTEMD_ERROR_UNIT_EXISTS))
                r = keep_call(w, true);
        else if (sd_bus_error_has_names(e, SYSTEMD_ERROR_NO_SUCH_UNIT, SYSTEMD_ERROR_LOAD_FAILED))
                r = keep_call(w, false);
        else {
                keep_done(w, -EIO, e->message ?: e->name);
                return 0;
        }
        if (r < 0)
                keep_done(w, r, strerror(-r));
        return 0;
}

static int keep_call(Worker *w, bool by_name) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *msg = NULL;
        _cleanup_free_ char *unit = NULL;
        sd_bus *bus = worker_systemd(w);
        int r;

        r = uid_keep_unit_name(w->id, &unit);
        if (r < 0)
                return r;
        w->keep.attempts++;
        w->keep.call = sd_bus_slot_unref(w->keep.call);
        if (by_name)
                return systemd_start_unit_async(bus, &w->keep.call, unit, "replace", on_keep_reply, w);
        r = systemd_start_transient_unit_new(bus, &msg, unit, "fail");
        if (r >= 0)
                r = append_properties(msg, w);
        if (r >= 0)
                r = sd_bus_message_append(msg, "a(sa(sv))", 0);
        return r < 0 ? r : sd_bus_call_async(bus, &w->keep.call, msg, on_keep_reply, w, 0);
}

int uid_keep_start(Worker *w, uid_keep_done_t done) {
        _cleanup_free_ char *unit = NULL;
        int r;

        r = uid_keep_unit_name(w->id, &unit);
        if (r < 0)
                return r;
        /* A stop of an earlier keeper still being asked for would end this one. */
        unit_stops_cancel(worker_unit_stops(w), unit);
        w->keep.attempts = 0;
        w->keep.done = done;
        r = keep_call(w, false);
        if (r < 0) {
                w->keep.done = NULL;
                log_keep_failed(w, strerror(-r));
                return r;
        }
        w->uid_kept = true;
        return 0;
}

void uid_keep_stop(Worker *w) {
        _cleanup_free_ char *unit = NULL;

        if (!w->uid_kept)
                return;
        w->uid_kept = false;
        if (uid_keep_unit_name(w->id, &unit) >= 0)
                (void) unit_stops_stop(worker_unit_stops(w), unit, w->id);
}

int uid_keep_check(const Worker *w, char *why, size_t size) {
        struct passwd *pw;
        struct group *gr;

        if (w->uid == (uid_t) -1)
                return 0;
        /* The worker's user allocated (its keeper): systemd hands the
         * resumed unit that very UID, whoever else was added with it. */
        errno = 0;
        pw = getpwnam(w->user);
        if (pw) {
                if (pw->pw_uid == w->uid)
                        return 0;
                snprintf(why, size, "its user %s holds UID %u now, not its own UID %u", w->user,
                         (unsigned) pw->pw_uid, (unsigned) w->uid);
                return -EBUSY;
        }
        /* Not allocated: systemd takes the home's owner, the worker's UID,
         * only if no user or group has it. */
        pw = getpwuid(w->uid);
        if (pw) {
                snprintf(why, size, "its UID %u is held by the user %s", (unsigned) w->uid, pw->pw_name);
                return -EBUSY;
        }
        gr = getgrgid((gid_t) w->uid);
        if (gr) {
                snprintf(why, size, "its UID %u is held by the group %s", (unsigned) w->uid, gr->gr_name);
                return -EBUSY;
        }
        return 0;
}
