/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "unit-stop.h"
#include "event-util.h"
#include "systemd-bus.h"


typedef struct UnitStop UnitStop;
struct UnitStop {
        UnitStops *owner;
        UnitStop *next;
        char *unit;
        char *worker_id;                /* NULL: not a worker's (or a pool sandbox's) */
        sd_bus_slot *call;              /* the StopUnit in flight */
        sd_event_source *retry;         /* or the next one, after a refusal */
        bool queued;                    /* or waiting for a free place among the calls in flight */
        uint64_t seq;                   /* the order in which the queued go */
        unsigned attempts;
        uint64_t first_usec;            /* monotonic: the give-up clock starts here */
};

struct UnitStops {
        sd_bus *bus;
        sd_event *event;
        sd_bus_slot *removed_match;
        UnitStop *pending;              /* a few at a time; a burst of stops makes hundreds */
        uint64_t step_usec, max_usec, give_up_usec;
        unsigned n_in_flight, max_in_flight;
        uint64_t next_seq;
};

/* The optional worker ID goes last: a NULL key ends log_struct's list. */
#define WORKER_FIELD(u) (u)->worker_id ? "SANDBOXD_WORKER_ID" : NULL, (u)->worker_id

static UnitStop *unit_stop_free(UnitStop *u) {
        if (!u)
                return NULL;
        for (UnitStop **p = &u->owner->pending; *p; p = &(*p)->next)
                if (*p == u) {
                        *p = u->next;
                        break;
                }
        if (u->call)
                u->owner->n_in_flight--;
        sd_bus_slot_unref(u->call);
        sd_event_source_disable_unref(u->retry);
        free(u->unit);
        free(u->worker_id);
        free(u);
        return NULL;
}

UnitStops *unit_stops_free(UnitStops *s) {
        if (!s)
                return NULL;
        while (s->pending)
                unit_stop_free(s->pending);
        sd_bus_slot_unref(s->removed_match);
        sd_bus_unref(s->bus);
        sd_event_unref(s->event);
        free(s);
        return NULL;
}

void unit_stops_set_policy(UnitStops *s, uint64_t step_usec, uint64_t max_usec, uint64_t give_up_usec) {
        s->step_usec = step_usec;
        s->max_usec = max_usec;
        s->give_up_usec = give_up_usec;
}

void unit_stops_set_max_in_flight(UnitStops *s, unsigned max) {
        s->max_in_flight = MAX(max, 1u);
}

uint64_t unit_stop_retry_delay(unsigned attempt, uint64_t step_usec, uint64_t max_usec) {
        return MIN((uint64_t) MAX(attempt, 1u) * step_usec, max_usec);
}

bool unit_stop_error_transient(const char *name) {
        static const char * const transient[] = {
                "org.freedesktop.DBus.Error.LimitsExceeded", "org.freedesktop.DBus.Error.NoReply",
                "org.freedesktop.DBus.Error.Timeout", "org.freedesktop.DBus.Error.TimedOut",
                "org.freedesktop.DBus.Error.NoMemory", "org.freedesktop.DBus.Error.ServiceUnknown",
                "org.freedesktop.DBus.Error.NameHasNoOwner",
        };

        for (size_t i = 0; name && i < ELEMENTSOF(transient); i++)
                if (streq(name, transient[i]))
                        return true;
        return false;
}

static UnitStop *unit_stops_find(const UnitStops *s, const char *unit) {
        for (UnitStop *u = s->pending; u; u = u->next)
                if (streq(u->unit, unit))
                        return u;
        return NULL;
}

bool unit_stops_pending(const UnitStops *s, const char *unit) {
        return unit_stops_find(s, unit);
}

unsigned unit_stops_attempts(const UnitStops *s, const char *unit) {
        UnitStop *u = unit_stops_find(s, unit);
        return u ? u->attempts : 0;
}

static void unit_stops_dispatch(UnitStops *s);
static void on_stop_answer(UnitStop *u, const sd_bus_error *e);

void unit_stops_cancel(UnitStops *s, const char *unit) {
        unit_stop_free(unit_stops_find(s, unit));
        unit_stops_dispatch(s);
}

static void unit_stop_refused(UnitStop *u, const char *reason);

static int on_stop_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        UnitStop *u = userdata;
        UnitStops *s = u->owner;
        const sd_bus_error *e = sd_bus_message_get_error(reply);

        u->call = sd_bus_slot_unref(u->call);
        s->n_in_flight--;
        on_stop_answer(u, e);
        /* A place is free: the longest-queued stop goes. */
        unit_stops_dispatch(s);
        return 0;
}

static void on_stop_answer(UnitStop *u, const sd_bus_error *e) {
        /* A job: systemd has the stop. NoSuchUnit: nothing is left to stop. */
        if (!e || sd_bus_error_has_name(e, SYSTEMD_ERROR_NO_SUCH_UNIT)) {
                unit_stop_free(u);
                return;
        }
        /* Only what says nothing of the call's fate is asked again: the
         * bus's cap, a timeout. systemd's own refusal (access, a bad name)
         * is the same the next time. */
        if (!unit_stop_error_transient(e->name)) {
                log_struct(LOG_ERR, "systemd refused the stop of a unit", "SANDBOXD_UNIT", u->unit,
                           "SANDBOXD_REASON", e->message ?: e->name, "SANDBOXD_EVENT", "stop-gave-up",
                           WORKER_FIELD(u), NULL);
                unit_stop_free(u);
                return;
        }
        unit_stop_refused(u, e->message ?: e->name);
}

/* Sends the call, or queues it while max_in_flight are awaited: the bus
 * daemon's cap on awaited replies is the whole connection's, and a burst of
 * stops must leave room for sandboxd's other calls (a CreateWorker's start,
 * polkit). */
static int unit_stop_send(UnitStop *u) {
        UnitStops *s = u->owner;
        int r;

        if (s->n_in_flight >= s->max_in_flight) {
                u->queued = true;
                u->seq = s->next_seq++;
                return 0;
        }
        u->queued = false;
        u->attempts++;
        r = systemd_stop_unit_async(s->bus, &u->call, u->unit, "replace", on_stop_reply, u);
        if (r >= 0)
                s->n_in_flight++;
        return r;
}

static void unit_stops_dispatch(UnitStops *s) {
        while (s->n_in_flight < s->max_in_flight) {
                UnitStop *oldest = NULL;
                int r;

                for (UnitStop *u = s->pending; u; u = u->next)
                        if (u->queued && (!oldest || u->seq < oldest->seq))
                                oldest = u;
                if (!oldest)
                        return;
                r = unit_stop_send(oldest);
                if (r < 0)
                        unit_stop_refused(oldest, strerror(-r));
        }
}

static int on_retry(sd_event_source *source, uint64_t usec, void *userdata) {
        UnitStop *u = userdata;
        int r;

        u->retry = sd_event_source_disable_unref(u->retry);
        r = unit_stop_send(u);
        if (r < 0)
                unit_stop_refused(u, strerror(-r));
        return 0;
}

/* Asked again unless the give-up time has passed; frees U when not. */
static void unit_stop_refused(UnitStop *u, const char *reason) {
        UnitStops *s = u->owner;
        uint64_t elapsed = now_usec(CLOCK_MONOTONIC) - u->first_usec, delay;
        char attempt[16];
        int r;

        snprintf(attempt, sizeof(attempt), "%u", u->attempts);
        if (elapsed >= s->give_up_usec) {
                log_struct(LOG_ERR, "systemd never took the stop of a unit; giving up, a restart of sandboxd wipes it",
                           "SANDBOXD_UNIT", u->unit, "SANDBOXD_REASON", reason, "SANDBOXD_ATTEMPT", attempt,
                           "SANDBOXD_EVENT", "stop-gave-up", WORKER_FIELD(u), NULL);
                unit_stop_free(u);
                return;
        }
        /* A burst of hundreds would log each attempt of each: the first
         * is what an operator searches for, the rest are debug. */
        log_struct(u->attempts == 1 ? LOG_WARNING : LOG_DEBUG, "systemd did not take the stop of a unit; asking again",
                   "SANDBOXD_UNIT", u->unit, "SANDBOXD_REASON", reason, "SANDBOXD_ATTEMPT", attempt,
                   "SANDBOXD_EVENT", "stop-retry", WORKER_FIELD(u), NULL);
        delay = unit_stop_retry_delay(u->attempts, s->step_usec, s->max_usec);
        /* Spread by up to a quarter: the stops of one burst, refused
         * together, must not all come back on the same tick. */
        delay += delay / 4 * (uint64_t) (random() % 1024) / 1024;
        r = event_add_timer(s->event, &u->retry, delay, TIMER_WAIT, on_retry, u, "unit-stop-retry");
        if (r < 0) {
                log_struct(LOG_ERR, "Cannot schedule another stop of a unit", "SANDBOXD_UNIT", u->unit,
                           "SANDBOXD_REASON", strerror(-r), "SANDBOXD_EVENT", "stop-gave-up", WORKER_FIELD(u), NULL);
                unit_stop_free(u);
        }
}

int unit_stops_stop(UnitStops *s, const char *unit, const char *worker_id) {
        UnitStop *u;
        int r;

        if (unit_stops_find(s, unit))
                return 0;
        u = calloc(1, sizeof(*u));
        if (!u || !(u->unit = strdup(unit)) || (worker_id && !(u->worker_id = strdup(worker_id)))) {
                if (u) {
                        free(u->unit);
                        free(u);
                }
                log_struct(LOG_ERR, "Cannot ask systemd to stop a unit: out of memory", "SANDBOXD_UNIT", unit,
                           worker_id ? "SANDBOXD_WORKER_ID" : NULL, worker_id, NULL);
                return -ENOMEM;
        }
        u->owner = s;
        u->first_usec = now_usec(CLOCK_MONOTONIC);
        u->next = s->pending;
        s->pending = u;
        r = unit_stop_send(u);
        if (r < 0)
                unit_stop_refused(u, strerror(-r));
        return 0;
}

/* Gone from systemd: a later StopUnit of this name could only meet a new
 * unit (a resumed worker's), which nobody asked to stop. */
static int on_unit_removed(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        const char *unit;

        if (sd_bus_message_read(msg, "s", &unit) >= 0)
                unit_stops_cancel(userdata, unit);
        return 0;
}

/* Without this, sd-bus closes the whole connection when the bus refuses the
 * match; without the match, the owners' cancels and the give-up end a retry. */
static int on_match_installed(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        const sd_bus_error *e = sd_bus_message_get_error(reply);

        if (e)
                log_warning("Cannot watch for UnitRemoved (%s); a unit's stop is asked again until it is taken",
                            e->message ?: e->name);
        return 0;
}

int unit_stops_new(UnitStops **ret, sd_bus *bus, sd_event *event) {
        _cleanup_(unit_stops_freep) UnitStops *s = NULL;
        int r;

        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->bus = sd_bus_ref(bus);
        s->event = sd_event_ref(event);
        unit_stops_set_policy(s, UNIT_STOP_RETRY_STEP_USEC, UNIT_STOP_RETRY_MAX_USEC, UNIT_STOP_GIVE_UP_USEC);
        unit_stops_set_max_in_flight(s, UNIT_STOP_MAX_IN_FLIGHT);
        r = systemd_match_manager_signal_async(bus, &s->removed_match, "UnitRemoved", on_unit_removed,
                                              on_match_installed, s);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(s);
        return 0;
}
