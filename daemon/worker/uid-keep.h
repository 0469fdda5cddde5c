/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A suspended gVisor worker's UID, reserved while it sleeps. Its image holds
 * that UID (the launcher refuses to restore under another) and its home is
 * owned by it; with no unit of its own, systemd's dynamic user is released,
 * and a user or unit that takes the UID meanwhile would make systemd give
 * the resumed unit another one and chown the home to it.
 *
 * So a keeper unit, sandbox-<id>-keep.service, holds the worker's dynamic
 * user from before the checkpoint until the resumed unit runs: DynamicUser=
 * with the worker's User= name, which systemd hands, with the same UID, to
 * every unit of that name while one of them is active (seen on systemd 252:
 * a second unit got the first's UID even with a user of that UID added to
 * /etc/passwd meanwhile). It is a oneshot of /bin/true that remains active
 * after it exited, so it holds the user with no process at all; that one
 * /bin/true runs with no capabilities, no network and little memory. The checkpoint unit requires it and is ordered after
 * it: no suspend without the reservation. It stops once the resumed unit
 * holds the user (the resume is done), when the checkpoint fails (the
 * worker's unit holds it still) and when the worker ends. A restart of
 * sandboxd keeps it (it is a unit of an adopted worker); a boot ends it, and
 * a worker kept across the reboot gets a new one at the start.
 *
 * Still, a resume checks first (uid_keep_check): with the UID held by
 * anyone else it is refused (UIDTaken) and the worker stays suspended. */

#include <stddef.h>

#include "worker.h"

#define UID_KEEP_UNIT_SUFFIX "-keep.service"

int uid_keep_unit_name(const char *id, char **ret);
/* Appends Requires= and After= on ID's keeper to an open property array. */
int uid_keep_append_dependency(sd_bus_message *m, const char *id);
/* Asks systemd for W's keeper and calls DONE once systemd has it, so that
 * what requires it (the checkpoint) finds it. One that runs already
 * stands. One still loaded from the resume just before (its stop under
 * way, or stopped and not yet collected: systemd says UnitExists) is
 * started again by name, its start replacing the stop; one collected in
 * between (NoSuchUnit then) is made anew, at most UID_KEEP_ATTEMPTS calls in
 * all. Fails at once only when the call cannot be sent. */
#define UID_KEEP_ATTEMPTS 4
int uid_keep_start(Worker *w, uid_keep_done_t done);
/* Stops W's keeper, if one was asked for or adopted (w->uid_kept; unit-stop.h
 * asks again when refused). */
void uid_keep_stop(Worker *w);
/* Whether W's resumed unit would get W's UID: 0, or -EBUSY and WHY (who
 * holds it). */
int uid_keep_check(const Worker *w, char *why, size_t size);
