/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "unit-drop.h"
#include "event-util.h"
#include "unit-stop.h"
#include "systemd-bus.h"
#include "util.h"


struct UnitDrop {
        char **pending;                 /* still loaded, as far as we know */
        sd_bus_slot *removed_match;
        sd_bus_slot **stop_calls;       /* one per unit of the start, until answered */
        sd_bus_slot **confirm_calls;    /* asking systemd whether a unit it said it removed is gone */
        size_t n_confirms;
        sd_bus *bus;
        UnitStops *stops;               /* asks again for a stop the bus refused */
        size_t n_calls;
        sd_event_source *timer;         /* the timeout, then the deferred call of done */
        unit_drop_done_t done;
        void *userdata;
        char *log_id;                   /* the worker's, for the retries' log lines; may be NULL */
};

UnitDrop *unit_drop_free(UnitDrop *d) {
        if (!d)
                return NULL;
        for (size_t i = 0; i < d->n_calls; i++)
                sd_bus_slot_unref(d->stop_calls[i]);
        free(d->stop_calls);
        for (size_t i = 0; i < d->n_confirms; i++)
                sd_bus_slot_unref(d->confirm_calls[i]);
        free(d->confirm_calls);
        sd_bus_slot_unref(d->removed_match);
        sd_event_source_disable_unref(d->timer);
        strv_free(d->pending);
        free(d->log_id);
        free(d);
        return NULL;
}

int unit_drop_set_log_id(UnitDrop *d, const char *id) {
        char *copy = id ? strdup(id) : NULL;

        if (id && !copy)
                return -ENOMEM;
        free(d->log_id);
        d->log_id = copy;
        return 0;
}

static bool unit_pending(const UnitDrop *d, const char *unit) {
        for (char **u = d->pending; u && *u; u++)
                if (streq(*u, unit))
                        return true;
        return false;
}

const char *unit_drop_pending_first(const UnitDrop *d) {
        return d->pending[0] ?: "none";
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        UnitDrop *d = userdata;

        d->done(d, !d->pending[0], d->userdata);
        return 0;
}

static void unit_gone(UnitDrop *d, const char *unit) {
        size_t n = strv_length(d->pending), i;

        for (i = 0; i < n && !streq(d->pending[i], unit); i++)
                ;
        if (i == n)
                return;
        free(d->pending[i]);
        memmove(d->pending + i, d->pending + i + 1, (n - i) * sizeof(char *));
        /* done runs from the loop: the caller may free D in it. */
        if (!d->pending[0] && (sd_event_source_set_time(d->timer, 0) < 0 ||
                               sd_event_source_set_enabled(d->timer, SD_EVENT_ONESHOT) < 0))
                log_warning("Cannot schedule the end of a unit stop; its timeout ends it.");
}

static void on_unit_removed_confirmed(const char *unit, const char *claim, void *userdata) {
        unit_gone(userdata, unit);
}

/* A unit said removed too early lets a resume make its namesake while the
 * old one still runs (or fail to, and lose the worker): systemd is asked. */
static int on_unit_removed(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        UnitDrop *d = userdata;
        sd_bus_slot **l;
        const char *unit;

        if (sd_bus_message_read(msg, "s", &unit) < 0 || !unit_pending(d, unit))
                return 0;
        l = reallocarray(d->confirm_calls, d->n_confirms + 1, sizeof(*l));
        if (!l)
                return 0;
        d->confirm_calls = l;
        if (systemd_unit_confirm_async(d->bus, &l[d->n_confirms], unit, "UnitRemoved", "", systemd_unit_state_unloaded,
                                       on_unit_removed_confirmed, d) >= 0)
                (void) sd_bus_slot_set_description(l[d->n_confirms++], unit);
        return 0;
}

static bool unit_said_removed(const UnitDrop *d, const char *unit) {
        const char *u;

        for (size_t i = 0; i < d->n_confirms; i++)
                if (sd_bus_slot_get_description(d->confirm_calls[i], &u) >= 0 && u && streq(u, unit))
                        return true;
        return false;
}

static int on_stop_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        UnitDrop *d = userdata;
        sd_bus_slot *slot = sd_bus_get_current_slot(sd_bus_message_get_bus(reply));
        const sd_bus_error *e = sd_bus_message_get_error(reply);
        const char *unit = NULL;

        if (!e || !slot || sd_bus_slot_get_description(slot, &unit) < 0 || !unit)
                return 0;               /* stopping: UnitRemoved says when it is gone */
        if (sd_bus_error_has_name(e, SYSTEMD_ERROR_NO_SUCH_UNIT)) {
                unit_gone(d, unit);
                return 0;
        }
        /* Refused, or timed out: that says nothing of the unit, which may
         * still be loaded and running. It is asked again (logged there);
         * UnitRemoved or the timeout ends the wait. Not once UnitRemoved
         * came (it can overtake the refusal), even while systemd is asked
         * whether it is so: a retry then could only meet the unit a resume
         * makes under the same name. */
        if (unit_pending(d, unit) && !unit_said_removed(d, unit))
                (void) unit_stops_stop(d->stops, unit, d->log_id);
        return 0;
}

/* Without this, sd-bus closes the whole connection when the bus refuses the
 * match (a connection's match limit): the drop then ends at its timeout. */
static int on_match_installed(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        const sd_bus_error *e = sd_bus_message_get_error(reply);

        if (e)
                log_warning("Cannot watch for UnitRemoved (%s); the wait for stopped units ends at its timeout",
                            e->message ?: e->name);
        return 0;
}

int unit_drop_start(sd_bus *bus, sd_event *event, UnitStops *stops, char * const *units, uint64_t timeout_usec,
                    unit_drop_done_t done, void *userdata, UnitDrop **ret) {
        _cleanup_(unit_drop_freep) UnitDrop *d = NULL;
        size_t n = strv_length(units);
        int r;

        d = calloc(1, sizeof(*d));
        if (!d)
                return -ENOMEM;
        d->done = done;
        d->userdata = userdata;
        d->stops = stops;
        d->bus = bus;
        d->pending = strv_copy(units);
        d->stop_calls = calloc(n ?: 1, sizeof(sd_bus_slot *));
        if (!d->pending || !d->stop_calls)
                return -ENOMEM;
        r = event_add_timer(event, &d->timer, timeout_usec, TIMER_WAIT, on_timer, d, "unit-drop-timer");
        if (r < 0)
                return r;
        /* The bus routes this connection's messages in order: the match is
         * in place before systemd sees the first stop. */
        r = systemd_match_manager_signal_async(bus, &d->removed_match, "UnitRemoved", on_unit_removed,
                                              on_match_installed, d);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                r = systemd_stop_unit_async(bus, &d->stop_calls[i], units[i], "replace", on_stop_reply, d);
                if (r < 0)
                        return r;
                /* Counted at once: a failure below must unref this call's slot too. */
                d->n_calls++;
                r = sd_bus_slot_set_description(d->stop_calls[i], units[i]);
                if (r < 0)
                        return r;
        }
        if (n == 0 && (r = sd_event_source_set_time(d->timer, 0)) < 0)
                return r;
        *ret = TAKE_PTR(d);
        return 0;
}
