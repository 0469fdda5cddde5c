/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "systemd-bus.h"
#include <assert.h>

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
