/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "systemd-bus.h"
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
