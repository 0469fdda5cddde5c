/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <systemd/sd-bus.h>

/* The bus sandboxctl talks to: $SANDBOXCTL_BUS_ADDRESS if set (tests, a
 * private daemon), else the system bus; polkit may ask the user's agent
 * when ASK_PASSWORD. 0, or a negative errno. */
int sandboxctl_bus_open(bool ask_password, sd_bus **ret);
