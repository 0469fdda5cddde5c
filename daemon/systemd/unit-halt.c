/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "unit-halt.h"
#include "event-util.h"
#include "systemd-bus.h"
#include "util.h"

struct UnitHalt {
        sd_bus *bus;
        char *unit, *path;
        sd_bus_slot *changed_match;
        sd_bus_slot *stop_call;
        sd_bus_slot *state_call;
        bool ask_again;                 /* a change came while systemd was being asked */
        bool down;
        sd_event_source *timer;         /* the timeout, then the deferred call of done */
        unit_halt_done_t done;
        void *userdata;
};

UnitHalt *unit_halt_free(UnitHalt *h) {
        if (!h)
                return NULL;
        sd_bus_slot_unref(h->changed_match);
        sd_bus_slot_unref(h->stop_call);
        sd_bus_slot_unref(h->state_call);
        sd_event_source_disable_unref(h->timer);
        free(h->unit);
        free(h->path);
        free(h);
        return NULL;
}

const char *unit_halt_unit(const UnitHalt *h) {
        return h->unit;
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        UnitHalt *h = userdata;

        h->done(h, h->down, h->userdata);
        return 0;
}

/* done runs from the loop: the caller may free H in it. */
static void finish(UnitHalt *h, bool down) {
        h->down = down;
        h->changed_match = sd_bus_slot_unref(h->changed_match);
        if (sd_event_source_set_time(h->timer, 0) < 0 || sd_event_source_set_enabled(h->timer, SD_EVENT_ONESHOT) < 0)
                log_warning("Cannot schedule the end of the stop of %s; its timeout ends it.", h->unit);
}

static void ask_state(UnitHalt *h);

static int on_state(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        UnitHalt *h = userdata;
        SystemdUnitState s;

        h->state_call = sd_bus_slot_unref(h->state_call);
        if (systemd_unit_state_parse(reply, &s) >= 0 &&
            (systemd_unit_state_down(&s) || systemd_unit_state_unloaded(&s))) {
                finish(h, true);
                return 0;
        }
        if (h->ask_again)
                ask_state(h);
        return 0;
}

static void ask_state(UnitHalt *h) {
        if (h->down || !h->changed_match)
                return;
        if (h->state_call) {
                h->ask_again = true;
                return;
        }
        h->ask_again = false;
        if (systemd_unit_state_read_async(h->bus, &h->state_call, h->path, on_state, h) < 0)
                log_warning("Cannot ask systemd for the state of %s; its timeout ends the wait", h->unit);
}

static int on_changed(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        ask_state(userdata);
        return 0;
}

static int on_stop_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        UnitHalt *h = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(reply);

        h->stop_call = sd_bus_slot_unref(h->stop_call);
        if (e && sd_bus_error_has_name(e, SYSTEMD_ERROR_NO_SUCH_UNIT)) {
                finish(h, true);
                return 0;
        }
        if (e) {
                log_warning("systemd refused to stop %s: %s", h->unit, e->message ?: e->name);
                finish(h, false);
                return 0;
        }
        /* Down already (the stop had nothing to do), or on its way. */
        ask_state(h);
        return 0;
}

int unit_halt_start(sd_bus *bus, sd_event *event, const char *unit, const char *mode, uint64_t timeout_usec,
                    unit_halt_done_t done, void *userdata, UnitHalt **ret) {
        _cleanup_(unit_halt_freep) UnitHalt *h = NULL;
        int r;

        h = calloc(1, sizeof(*h));
        if (!h)
                return -ENOMEM;
        *h = (UnitHalt) { .bus = bus, .done = done, .userdata = userdata, .unit = strdup(unit) };
        if (!h->unit)
                return -ENOMEM;
        r = systemd_unit_path(unit, &h->path);
        if (r < 0)
                return r;
        r = event_add_timer(event, &h->timer, timeout_usec, TIMER_WAIT, on_timer, h, "unit-halt-timer");
        if (r < 0)
                return r;
        /* The bus routes this connection's messages in order: the match is
         * in place before systemd sees the stop. */
        r = systemd_match_unit_properties_async(bus, &h->changed_match, h->path, on_changed, h);
        if (r < 0)
                return r;
        r = systemd_stop_unit_async(bus, &h->stop_call, unit, mode, on_stop_reply, h);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(h);
        return 0;
}
