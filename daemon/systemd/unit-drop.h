/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Stops a few units and tells when systemd holds none of them any more
 * (UnitRemoved, or NoSuchUnit for one that was gone already): only then may
 * a transient unit of the same name be made again. A stop job that is done
 * is not enough: StartTransientUnit refuses a name systemd still has loaded
 * ("already loaded or has a fragment file"), and a new start meeting a
 * pending stop job fails its transaction. */

#include <stdbool.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

typedef struct UnitDrop UnitDrop;
typedef struct UnitStops UnitStops;

/* ALL_GONE is false when TIMEOUT_USEC passed first. Called from the event
 * loop, never from unit_drop_start(); it may free the UnitDrop. */
typedef void (*unit_drop_done_t)(UnitDrop *d, bool all_gone, void *userdata);

/* Stops each of UNITS (NULL-terminated); a stop the bus refuses is handed
 * to STOPS, which asks again (unit-stop.h), and may outlive the drop. */
int unit_drop_start(sd_bus *bus, sd_event *event, UnitStops *stops, char * const *units, uint64_t timeout_usec,
                    unit_drop_done_t done, void *userdata, UnitDrop **ret);
UnitDrop *unit_drop_free(UnitDrop *d);
/* The worker ID the retries of refused stops are logged with. */
int unit_drop_set_log_id(UnitDrop *d, const char *id);
static inline void unit_drop_freep(UnitDrop **d) { unit_drop_free(*d); }
/* The units still loaded, for a log line (a static string when none). */
const char *unit_drop_pending_first(const UnitDrop *d);
