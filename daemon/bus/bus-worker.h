/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>

#include "subscribers.h"
#include "worker.h"

extern const sd_bus_vtable worker_vtable[];

int bus_worker_find(sd_bus *bus, const char *path, const char *interface, void *userdata, void **found,
                    sd_bus_error *error);
/* The one access check of a call that names worker ID: the filter's for its
 * object, the Manager's for its ID. 1 with *RET set to the worker when the
 * caller may act on it; 0 while polkit is asked (bus_authorize()'s
 * contract: the handler changes nothing and returns 1); -ESRCH when, for
 * this caller, there is no such worker: none has ID, or it is another
 * user's and the caller may not manage it (or is past its polkit cap). */
int bus_worker_access(Manager *m, sd_bus_message *msg, const char *id, Worker **ret);
/* The filter's answer again in a handler of W's object (so that no path to
 * a handler skips it): 0 when the caller may act on W, else AccessDenied. */
int bus_worker_check_access(sd_bus_message *msg, Worker *w, sd_bus_error *ret_error);
/* An sd-bus filter: the access check of every call on a worker's object. */
int bus_worker_filter(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error);
/* The Worker object's handlers, USERDATA the worker; the Manager's methods
 * on one worker reach the same ones (bus-manager.c). */
int bus_worker_method_stop(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error);
int bus_worker_method_open_channel(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error);
int bus_worker_method_suspend(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error);
int bus_worker_method_resume(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error);
/* Answers MSG, a Suspend, Resume or OpenChannel call that waited for a
 * suspend or resume of W to end: with the error if ERROR_NAME is set. */
void bus_worker_reply_waiter(sd_bus_message *msg, Worker *w, const char *error_name, const char *error_message);
/* Answers CreateWorker's REQUEST for W: its ID and object path, or the
 * StartFailed error saying WHY (NULL on success). */
void bus_worker_reply_created(Worker *w, sd_bus_message *request, const char *why);
int bus_worker_enumerate(sd_bus *bus, const char *path, void *userdata, char ***nodes, sd_bus_error *error);

void bus_worker_emit_new(Worker *w);          /* InterfacesAdded + WorkerNew */
void bus_worker_emit_state(Worker *w);        /* PropertiesChanged State */
void bus_worker_emit_activity(Worker *w);     /* PropertiesChanged LastActivityUSec */
void bus_worker_emit_ended(Worker *w);        /* PropertiesChanged + WorkerRemoved */
/* WorkerRemoved of a worker with no object (one cleaned at start-up),
 * OWNER UID_INVALID when unknown: then to root and holders of manage-workers. */
void bus_worker_emit_removed(Manager *m, const char *id, uid_t owner, const char *reason);
/* WorkerRemoved "lost" of each worker cleaned at start-up (restore_removed),
 * to ONLY, a new subscriber, or to every subscriber when NULL. */
void bus_worker_announce_lost(Manager *m, const Subscriber *only);
void bus_worker_emit_gone(Worker *w);         /* InterfacesRemoved */
/* Each of these goes only to subscribers entitled to see W (bus-subscribe.h). */

/* Maps an SbxError (or a bare errno) to the reply of a failed method call. */
int bus_reply_sbx_error(sd_bus_error *ret_error, const SbxError *e, int r);
