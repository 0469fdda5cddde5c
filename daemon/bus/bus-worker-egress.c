/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdlib.h>

#include "bus-polkit.h"
#include "bus-worker-egress.h"
#include "bus-worker.h"
#include "errors.h"
#include "manager.h"
#include "worker-egress.h"

int bus_worker_property_get_egress(sd_bus *bus, const char *path, const char *interface, const char *property,
                                   sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Worker *w = userdata;

        if (streq(property, "EgressAllow"))
                return sd_bus_message_append_strv(reply, w->spec.egress_allow);
        if (streq(property, "EgressRateBps"))
                return sd_bus_message_append(reply, "t", w->spec.egress_rate_bps);
        return sd_bus_message_append(reply, "s", w->spec.egress_report_only ? "report" : "enforce");
}

static void change_done(WorkerEgressChange *c) {
        strv_free(c->allow);
        c->allow = NULL;
}

static int read_allow(sd_bus_message *msg, WorkerEgressChange *c) {
        const char *s;
        int r;

        r = sd_bus_message_enter_container(msg, 'a', "s");
        if (r < 0)
                return r;
        strv_free(c->allow);
        c->allow = calloc(1, sizeof(char *));
        if (!c->allow)
                return -ENOMEM;
        while ((r = sd_bus_message_read_basic(msg, 's', &s)) > 0)
                if (strv_extend(&c->allow, s) < 0)
                        return -ENOMEM;
        if (r < 0)
                return r;
        c->has_allow = true;
        return sd_bus_message_exit_container(msg);
}

/* The a{sv}: the three egress keys of CreateWorker's spec, nothing else. */
static int read_change(sd_bus_message *msg, WorkerEgressChange *c, sd_bus_error *ret_error) {
        const char *key, *contents, *mode;
        int r;

        r = sd_bus_message_enter_container(msg, 'a', "{sv}");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_enter_container(msg, 'e', "sv")) > 0) {
                r = sd_bus_message_read_basic(msg, 's', &key);
                if (r < 0)
                        return r;
                r = sd_bus_message_peek_type(msg, NULL, &contents);
                if (r < 0)
                        return r;
                const char *want = streq(key, "EgressAllow") ? "as" : streq(key, "EgressRateBps") ? "t"
                                 : streq(key, "EgressMode") ? "s" : NULL;
                if (!want)
                        return sd_bus_error_setf(ret_error, SBX_ERROR_UNKNOWN_KEY,
                                                 "Unknown key \"%.64s\": SetEgress takes EgressAllow, EgressRateBps and EgressMode",
                                                 key);
                if (!streq(contents, want))
                        return sd_bus_error_setf(ret_error, SBX_ERROR_WRONG_TYPE, "%s must be of type %s, not %.16s",
                                                 key, want, contents);
                r = sd_bus_message_enter_container(msg, 'v', want);
                if (r < 0)
                        return r;
                if (streq(key, "EgressAllow"))
                        r = read_allow(msg, c);
                else if (streq(key, "EgressRateBps")) {
                        r = sd_bus_message_read_basic(msg, 't', &c->rate_bps);
                        c->has_rate = true;
                } else {
                        r = sd_bus_message_read_basic(msg, 's', &mode);
                        if (r >= 0 && !streq(mode, "enforce") && !streq(mode, "report"))
                                return sd_bus_error_setf(ret_error, SBX_ERROR_INVALID_EGRESS,
                                                         "EgressMode must be \"enforce\" or \"report\", not \"%.32s\"",
                                                         mode);
                        c->report_only = r >= 0 && streq(mode, "report");
                        c->has_mode = true;
                }
                if (r < 0)
                        return r;
                r = sd_bus_message_exit_container(msg);
                if (r >= 0)
                        r = sd_bus_message_exit_container(msg);
                if (r < 0)
                        return r;
        }
        if (r < 0)
                return r;
        r = sd_bus_message_exit_container(msg);
        if (r < 0)
                return r;
        if (!c->has_allow && !c->has_rate && !c->has_mode)
                return sd_bus_error_setf(ret_error, SBX_ERROR_INVALID_ARGUMENT,
                                         "SetEgress needs at least one of EgressAllow, EgressRateBps, EgressMode");
        return 0;
}

int bus_worker_method_set_egress(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        _cleanup_(change_done) WorkerEgressChange change = {};
        Worker *w = userdata;
        uid_t caller = UID_INVALID;
        SbxError e = {};
        int r;

        (void) bus_caller_uid(msg, &caller);
        /* The filter (or the Manager's redirect) let the caller through;
         * asked again so that no path skips it. */
        if (!bus_authorized(w->manager, msg, caller, SBX_ACTION_MANAGE_WORKERS, w->owner))
                return sd_bus_error_setf(ret_error, SBX_ERROR_NO_SUCH_WORKER, "No worker with id \"%.64s\"", w->id);
        /* A new policy is what a new worker's spec would say: authorized as
         * creating one of this class, before anything is read or changed. */
        r = bus_authorize(w->manager, msg, authz_create_action(w->spec.class), UID_INVALID, NULL, true, ret_error);
        if (r == 0)
                return 1;
        if (r < 0)
                return r;
        r = read_change(msg, &change, ret_error);
        if (r < 0)
                return r;
        r = worker_set_egress(w, caller, &change, NULL, &e);
        if (r < 0)
                return bus_reply_sbx_error(ret_error, &e, r);
        return sd_bus_reply_method_return(msg, NULL);
}
