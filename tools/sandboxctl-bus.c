/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdlib.h>

#include "sandboxctl-bus.h"
#include "util.h"

int sandboxctl_bus_open(bool ask_password, sd_bus **ret) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        const char *address = getenv("SANDBOXCTL_BUS_ADDRESS");
        int r;

        if (isempty(address))
                r = sd_bus_open_system(&bus);
        else {
                r = sd_bus_new(&bus);
                if (r >= 0)
                        r = sd_bus_set_address(bus, address);
                if (r >= 0)
                        r = sd_bus_set_bus_client(bus, true);
                if (r >= 0)
                        r = sd_bus_start(bus);
        }
        if (r < 0)
                return r;
        /* Let polkit ask (an agent of the user's session) rather than just
         * refuse, as systemctl does, unless told not to. */
        r = sd_bus_set_allow_interactive_authorization(bus, ask_password);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(bus);
        return 0;
}
