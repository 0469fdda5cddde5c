/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>

#include "manager.h"
#include "worker-persist.h"

/* What a restart finds again is written by the worker layer (worker-persist.h). */

/* At start-up, before the credential socket: after a boot (another boot ID,
 * or no state) wipes as before; after a restart re-adopts every worker it
 * can account for and stops and cleans everything else. */
int manager_restore(Manager *m);
/* Once the bus name is ours: WorkerRemoved for the workers it had to clean,
 * to every subscriber and, for RESTORE_ANNOUNCE_USEC, to each new one. */
#define RESTORE_ANNOUNCE_USEC (60 * USEC_PER_SEC)
void manager_restore_announce(Manager *m);

/* At SIGTERM: whether systemd is stopping sandboxd for good (a stop job: an
 * operator's stop, a package's removal, shutdown) rather than restarting it. */
bool manager_stop_is_final(Manager *m);
/* Before a restart: every running worker's state, last activity included. */
void manager_save_all(Manager *m);
