/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <errno.h>
#include <stdio.h>

#include "systemd-bus.h"
#include "util.h"

int systemd_bus_open(const char *bus_address, sd_bus *shared, sd_bus **ret) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        int r;

        assert(ret);
        if (bus_address) {
                assert(shared);
                *ret = sd_bus_ref(shared);
                return 0;
        }
        r = sd_bus_new(&bus);
        if (r < 0)
                return r;
        (void) sd_bus_set_description(bus, "systemd-private");
        r = sd_bus_set_address(bus, SYSTEMD_PRIVATE_ADDRESS);
        if (r < 0)
                return r;
        r = sd_bus_start(bus);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(bus);
        return 0;
}

int systemd_match_signal_async(sd_bus *bus, sd_bus_slot **ret_slot, const char *path, const char *iface,
                               const char *member, sd_bus_message_handler_t callback,
                               sd_bus_message_handler_t install_callback, void *userdata) {
        _cleanup_(sd_bus_creds_unrefp) sd_bus_creds *creds = NULL;
        const char *sender = NULL;
        int r;

        assert(bus);
        if (sd_bus_is_bus_client(bus) > 0) {
                r = sd_bus_get_name_creds(bus, SYSTEMD_DEST, SD_BUS_CREDS_UNIQUE_NAME, &creds);
                if (r < 0)
                        return r;
                r = sd_bus_creds_get_unique_name(creds, &sender);
                if (r < 0)
                        return r;
        }
        return sd_bus_match_signal_async(bus, ret_slot, sender, path, iface, member, callback, install_callback,
                                         userdata);
}

int systemd_match_manager_signal_async(sd_bus *bus, sd_bus_slot **ret_slot, const char *member,
                                       sd_bus_message_handler_t callback, sd_bus_message_handler_t install_callback,
                                       void *userdata) {
        assert(member);
        return systemd_match_signal_async(bus, ret_slot, SYSTEMD_PATH, SYSTEMD_MANAGER, member, callback,
                                          install_callback, userdata);
}

int systemd_match_unit_properties_async(sd_bus *bus, sd_bus_slot **ret_slot, const char *unit_path,
                                        sd_bus_message_handler_t callback, void *userdata) {
        assert(unit_path);
        return systemd_match_signal_async(bus, ret_slot, unit_path, "org.freedesktop.DBus.Properties",
                                          "PropertiesChanged", callback, NULL, userdata);
}

int systemd_unit_path(const char *unit, char **ret) {
        assert(unit);
        assert(ret);
        return sd_bus_path_encode(SYSTEMD_UNIT_PATH_PREFIX, unit, ret);
}

int systemd_start_transient_unit_new(sd_bus *bus, sd_bus_message **ret, const char *unit, const char *mode) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        int r;

        assert(bus);
        assert(ret);
        assert(unit && mode);
        r = sd_bus_message_new_method_call(bus, &m, SYSTEMD_DEST, SYSTEMD_PATH, SYSTEMD_MANAGER,
                                           "StartTransientUnit");
        if (r < 0)
                return r;
        r = sd_bus_message_append(m, "ss", unit, mode);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(m);
        return 0;
}

int systemd_set_unit_properties_new(sd_bus *bus, sd_bus_message **ret, const char *unit, bool runtime) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        int r;

        assert(bus);
        assert(ret);
        assert(unit);
        r = sd_bus_message_new_method_call(bus, &m, SYSTEMD_DEST, SYSTEMD_PATH, SYSTEMD_MANAGER,
                                           "SetUnitProperties");
        if (r < 0)
                return r;
        r = sd_bus_message_append(m, "sb", unit, (int) runtime);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(m);
        return 0;
}

int systemd_stop_unit_async(sd_bus *bus, sd_bus_slot **ret_slot, const char *unit, const char *mode,
                            sd_bus_message_handler_t callback, void *userdata) {
        assert(bus);
        assert(unit && mode);
        return sd_bus_call_method_async(bus, ret_slot, SYSTEMD_DEST, SYSTEMD_PATH, SYSTEMD_MANAGER, "StopUnit",
                                        callback, userdata, "ss", unit, mode);
}

int systemd_start_unit_async(sd_bus *bus, sd_bus_slot **ret_slot, const char *unit, const char *mode,
                             sd_bus_message_handler_t callback, void *userdata) {
        assert(bus);
        assert(unit && mode);
        return sd_bus_call_method_async(bus, ret_slot, SYSTEMD_DEST, SYSTEMD_PATH, SYSTEMD_MANAGER, "StartUnit",
                                        callback, userdata, "ss", unit, mode);
}

int systemd_stop_unit(sd_bus *bus, const char *unit, const char *mode) {
        assert(bus);
        assert(unit && mode);
        return sd_bus_call_method(bus, SYSTEMD_DEST, SYSTEMD_PATH, SYSTEMD_MANAGER, "StopUnit", NULL, NULL, "ss",
                                  unit, mode);
}

int systemd_reset_failed_unit(sd_bus *bus, const char *unit) {
        assert(bus);
        assert(unit);
        return sd_bus_call_method(bus, SYSTEMD_DEST, SYSTEMD_PATH, SYSTEMD_MANAGER, "ResetFailedUnit", NULL, NULL,
                                  "s", unit);
}

int systemd_list_units_by_pattern(sd_bus *bus, const char *pattern, sd_bus_error *ret_error, char ***ret_names,
                                  char ***ret_active) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_strv_free_ char **names = NULL, **active = NULL;
        const char *name, *state;
        int r;

        assert(bus);
        assert(pattern);
        assert(ret_names);
        r = sd_bus_call_method(bus, SYSTEMD_DEST, SYSTEMD_PATH, SYSTEMD_MANAGER, "ListUnitsByPatterns", ret_error,
                               &reply, "asas", 0, 1, pattern);
        if (r < 0)
                return r;
        r = sd_bus_message_enter_container(reply, 'a', "(ssssssouso)");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_read(reply, "(ssssssouso)", &name, NULL, NULL, &state, NULL, NULL, NULL, NULL,
                                        NULL, NULL)) > 0)
                if (strv_extend(&names, name) < 0 || (ret_active && strv_extend(&active, state) < 0))
                        return -ENOMEM;
        if (r < 0)
                return r;
        /* An empty list is an empty vector, not NULL. */
        if (!names && !(names = calloc(1, sizeof(char *))))
                return -ENOMEM;
        if (ret_active && !active && !(active = calloc(1, sizeof(char *))))
                return -ENOMEM;
        *ret_names = TAKE_PTR(names);
        if (ret_active)
                *ret_active = TAKE_PTR(active);
        return 0;
}

int systemd_subscribe(sd_bus *bus) {
        assert(bus);
        return sd_bus_call_method(bus, SYSTEMD_DEST, SYSTEMD_PATH, SYSTEMD_MANAGER, "Subscribe", NULL, NULL, NULL);
}

int systemd_unit_get_string(sd_bus *bus, const char *unit_path, const char *property, sd_bus_error *ret_error,
                            char **ret) {
        assert(bus);
        assert(unit_path && property);
        assert(ret);
        return sd_bus_get_property_string(bus, SYSTEMD_DEST, unit_path, SYSTEMD_UNIT_IFACE, property, ret_error,
                                          ret);
}

int systemd_unit_job_type(sd_bus *bus, const char *unit, char **ret_type) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_free_ char *path = NULL;
        const char *job_path;
        uint32_t job_id;
        int r;

        assert(bus);
        assert(unit);
        assert(ret_type);
        r = systemd_unit_path(unit, &path);
        if (r < 0)
                return r;
        r = sd_bus_get_property(bus, SYSTEMD_DEST, path, SYSTEMD_UNIT_IFACE, "Job", NULL, &reply, "(uo)");
        if (r < 0)
                return r;
        r = sd_bus_message_read(reply, "(uo)", &job_id, &job_path);
        if (r < 0)
                return r;
        if (job_id == 0) {
                *ret_type = NULL;
                return 0;
        }
        return sd_bus_get_property_string(bus, SYSTEMD_DEST, job_path, SYSTEMD_JOB_IFACE, "JobType", NULL,
                                          ret_type);
}

int systemd_unit_state_read_async(sd_bus *bus, sd_bus_slot **ret_slot, const char *unit_path,
                                  sd_bus_message_handler_t callback, void *userdata) {
        assert(bus);
        assert(unit_path);
        return sd_bus_call_method_async(bus, ret_slot, SYSTEMD_DEST, unit_path, "org.freedesktop.DBus.Properties",
                                        "GetAll", callback, userdata, "s", "");
}

static void copy_state(char *dst, size_t size, const char *src) {
        snprintf(dst, size, "%s", src);
}

int systemd_unit_state_parse(sd_bus_message *reply, SystemdUnitState *ret) {
        SystemdUnitState s = { .exec_main_code = 0 };
        const sd_bus_error *e;
        int r;

        assert(reply);
        assert(ret);
        e = sd_bus_message_get_error(reply);
        if (e)
                return -sd_bus_error_get_errno(e) ?: -EIO;
        r = sd_bus_message_enter_container(reply, 'a', "{sv}");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_enter_container(reply, 'e', "sv")) > 0) {
                const char *name, *contents, *v;
                int32_t i;

                r = sd_bus_message_read(reply, "s", &name);
                if (r >= 0)
                        r = sd_bus_message_peek_type(reply, NULL, &contents);
                if (r < 0)
                        return r;
                if (streq(contents, "s") &&
                    (streq(name, "LoadState") || streq(name, "ActiveState") || streq(name, "SubState") ||
                     streq(name, "Result"))) {
                        r = sd_bus_message_read(reply, "v", "s", &v);
                        if (r < 0)
                                return r;
                        copy_state(streq(name, "LoadState") ? s.load_state :
                                   streq(name, "ActiveState") ? s.active_state :
                                   streq(name, "SubState") ? s.sub_state : s.result,
                                   sizeof(s.result), v);
                } else if (streq(contents, "i") && (streq(name, "ExecMainCode") || streq(name, "ExecMainStatus"))) {
                        r = sd_bus_message_read(reply, "v", "i", &i);
                        if (r < 0)
                                return r;
                        *(streq(name, "ExecMainCode") ? &s.exec_main_code : &s.exec_main_status) = i;
                } else if ((r = sd_bus_message_skip(reply, "v")) < 0)
                        return r;
                r = sd_bus_message_exit_container(reply);
                if (r < 0)
                        return r;
        }
        if (r < 0)
                return r;
        if (!s.active_state[0])
                return -EBADMSG;
        *ret = s;
        return 0;
}

bool systemd_unit_state_down(const SystemdUnitState *s) {
        return streq(s->active_state, "inactive") || streq(s->active_state, "failed");
}

bool systemd_unit_state_not_up(const SystemdUnitState *s) {
        return systemd_unit_state_down(s) || streq(s->active_state, "deactivating");
}

bool systemd_unit_state_unloaded(const SystemdUnitState *s) {
        return streq(s->load_state, "not-found");
}

bool systemd_unit_state_not_loaded(const SystemdUnitState *s) {
        return !streq(s->load_state, "loaded");
}

typedef struct UnitConfirm {
        systemd_unit_check_t check;
        systemd_unit_confirmed_t confirmed;
        void *userdata;
        char *unit, *signal, *claim;
} UnitConfirm;

static void unit_confirm_free(void *p) {
        UnitConfirm *c = p;

        free(c->unit);
        free(c->signal);
        free(c->claim);
        free(c);
}

static int on_unit_confirm_read(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        UnitConfirm *c = userdata;
        SystemdUnitState s;
        int r;

        r = systemd_unit_state_parse(reply, &s);
        if (r < 0 || !c->check(&s)) {
                log_struct(LOG_WARNING, "systemd does not confirm what a signal said of a unit; nothing is done",
                           "SANDBOXD_UNIT", c->unit, "SANDBOXD_SIGNAL", c->signal, "SANDBOXD_CLAIM", c->claim,
                           "SANDBOXD_EVENT", "signal-unconfirmed",
                           "SANDBOXD_LOAD_STATE", r < 0 ? strerror(-r) : s.load_state,
                           "SANDBOXD_ACTIVE_STATE", r < 0 ? "" : s.active_state, NULL);
                return 0;
        }
        /* C is freed with the slot, after this returns. */
        c->confirmed(c->unit, c->claim, c->userdata);
        return 0;
}

int systemd_unit_confirm_async(sd_bus *bus, sd_bus_slot **ret_slot, const char *unit, const char *signal,
                               const char *claim, systemd_unit_check_t check, systemd_unit_confirmed_t confirmed,
                               void *userdata) {
        _cleanup_free_ char *path = NULL;
        sd_bus_slot *slot = NULL;
        UnitConfirm *c;
        int r;

        assert(bus && unit && signal && check && confirmed);
        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        *c = (UnitConfirm) { .check = check, .confirmed = confirmed, .userdata = userdata,
                             .unit = strdup(unit), .signal = strdup(signal), .claim = strdup(claim ?: "") };
        r = c->unit && c->signal && c->claim ? 0 : -ENOMEM;
        if (r >= 0)
                r = systemd_unit_path(unit, &path);
        if (r >= 0)
                r = systemd_unit_state_read_async(bus, &slot, path, on_unit_confirm_read, c);
        if (r < 0) {
                log_struct(LOG_ERR, "Failed to ask systemd to confirm what a signal said of a unit; nothing is done",
                           "SANDBOXD_UNIT", unit, "SANDBOXD_SIGNAL", signal, "SANDBOXD_CLAIM", claim ?: "",
                           "SANDBOXD_EVENT", "signal-unconfirmed", "SANDBOXD_REASON", strerror(-r), NULL);
                unit_confirm_free(c);
                return r;
        }
        (void) sd_bus_slot_set_destroy_callback(slot, unit_confirm_free);
        if (ret_slot)
                *ret_slot = slot;
        else {
                (void) sd_bus_slot_set_floating(slot, 1);
                sd_bus_slot_unref(slot);
        }
        return 0;
}

/* ExecStartEx=a(sasas): the flags array lets us say "no-env-expand", so an
 * argv such as ["sh", "-c", "echo $HOME"] reaches the worker verbatim
 * instead of being expanded by systemd, and "privileged" for the launcher. */
int unit_append_exec(sd_bus_message *m, const char *property, const char *path, char * const *argv,
                     const char * const *flags) {
        int r = sd_bus_message_open_container(m, 'r', "sv");
        if (r >= 0)
                r = sd_bus_message_append(m, "s", property);
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'v', flags ? "a(sasas)" : "a(sasb)");
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'a', flags ? "(sasas)" : "(sasb)");
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'r', flags ? "sasas" : "sasb");
        if (r >= 0)
                r = sd_bus_message_append(m, "s", path);
        if (r >= 0)
                r = sd_bus_message_append_strv(m, (char **) argv);
        if (r >= 0)
                r = flags ? sd_bus_message_append_strv(m, (char **) flags)
                          : sd_bus_message_append(m, "b", 0);     /* failure is not ignored */
        for (int i = 0; r >= 0 && i < 4; i++)
                r = sd_bus_message_close_container(m);
        return r;
}
