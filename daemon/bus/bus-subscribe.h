/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>

#include "subscribers.h"

typedef struct Manager Manager;

/* Signals about workers and workspaces are never broadcast: a client calls
 * the Manager's Subscribe and gets each one unicast, if it is entitled to
 * it (subscribers.h). Its subscription ends with Unsubscribe or when its
 * unique name leaves the bus. */

/* Starts the registry and watches for subscribers leaving the bus. */
int bus_subscribe_install(Manager *m);

/* Subscribes MSG's sender as UID, seeing every worker when SEES_ALL (the
 * answer of ListWorkers' own rule, bus-manager.c) and replies. */
int bus_subscribe_caller(Manager *m, sd_bus_message *msg, uid_t uid, bool sees_all, sd_bus_error *ret_error);
int bus_method_unsubscribe(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error);

/* Appends an a{sv} of VTABLE's properties of the object at PATH, read by
 * the getters the vtable itself uses: NAMES, or NULL for every constant and
 * change-announcing property (what InterfacesAdded carries). */
int bus_append_properties(sd_bus_message *m, const sd_bus_vtable *vtable, const char *path, const char *iface,
                          void *userdata, char **names);

typedef int (*SignalBuild)(sd_bus_message *m, void *userdata);

/* Sends the signal that BUILD fills to each subscriber entitled to hear
 * about something of OWNER's, each as its own unicast message. */
void bus_emit_to_subscribers(Manager *m, Audience audience, uid_t owner, const char *path, const char *iface,
                             const char *member, SignalBuild build, void *userdata);

/* The same to SUB alone, if it is entitled. */
void bus_emit_to_subscriber(Manager *m, const Subscriber *sub, Audience audience, uid_t owner, const char *path,
                            const char *iface, const char *member, SignalBuild build, void *userdata);

/* The org.freedesktop.DBus.Properties and ObjectManager signals sd-bus
 * would broadcast, sent the same way. */
void bus_emit_properties_changed(Manager *m, Audience audience, uid_t owner, const char *path, const char *iface,
                                 const sd_bus_vtable *vtable, void *userdata, char **names);
void bus_emit_interfaces_added(Manager *m, Audience audience, uid_t owner, const char *path, const char *iface,
                               const sd_bus_vtable *vtable, void *userdata);
void bus_emit_interfaces_removed(Manager *m, Audience audience, uid_t owner, const char *path, const char *iface);
