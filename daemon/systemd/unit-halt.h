/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Stops one unit with a job mode of the caller's choosing and tells when
 * systemd says it is down (inactive or failed), or when a timeout passed.
 * Unlike unit-drop.h it does not wait for the unit to be unloaded: a unit
 * that a running one still references (a worker's gate socket, which the
 * worker's unit Requires=) stays loaded, inactive, and can be started
 * again. Each PropertiesChanged of the unit (systemd sends them after
 * Subscribe()) has systemd asked for its state; the reply decides. */

#include <stdbool.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

typedef struct UnitHalt UnitHalt;

/* DOWN is false when TIMEOUT_USEC passed first or systemd refused the stop.
 * Called from the event loop, never from unit_halt_start(); it may free H. */
typedef void (*unit_halt_done_t)(UnitHalt *h, bool down, void *userdata);

int unit_halt_start(sd_bus *bus, sd_event *event, const char *unit, const char *mode, uint64_t timeout_usec,
                    unit_halt_done_t done, void *userdata, UnitHalt **ret);
UnitHalt *unit_halt_free(UnitHalt *h);
static inline void unit_halt_freep(UnitHalt **h) { unit_halt_free(*h); }
/* The unit's name, for a log line. */
const char *unit_halt_unit(const UnitHalt *h);
