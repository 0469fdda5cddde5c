/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>

/* Worker.SetEgress(a{sv} policy) and Manager.SetWorkerEgress(s id, a{sv}
 * policy): EgressAllow (as), EgressRateBps (t), EgressMode (s) replace the
 * worker's (worker-egress.h). Who may: those who may manage the worker
 * (its owner, root, manage-workers; anyone else finds no such worker) and
 * who may create a worker of its class (polkit, as CreateWorker asks). */
int bus_worker_method_set_egress(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error);

/* The policy it has now (what SetEgress replaced last): EgressAllow (as),
 * EgressRateBps (t), EgressMode (s). Read on demand (sandboxctl egress
 * edits the list from them); like every property of a worker, only for
 * those who may see it. */
int bus_worker_property_get_egress(sd_bus *bus, const char *path, const char *interface, const char *property,
                                   sd_bus_message *reply, void *userdata, sd_bus_error *error);

#define BUS_WORKER_EGRESS_PROPERTIES                                                                         \
        SD_BUS_PROPERTY("EgressAllow", "as", bus_worker_property_get_egress, 0, 0),                         \
        SD_BUS_PROPERTY("EgressRateBps", "t", bus_worker_property_get_egress, 0, 0),                        \
        SD_BUS_PROPERTY("EgressMode", "s", bus_worker_property_get_egress, 0, 0)

#define BUS_WORKER_EGRESS_METHODS                                                                            \
        SD_BUS_METHOD_WITH_ARGS("SetEgress", SD_BUS_ARGS("a{sv}", policy), SD_BUS_NO_RESULT,                \
                                bus_worker_method_set_egress, SD_BUS_VTABLE_UNPRIVILEGED)
