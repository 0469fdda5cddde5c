/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>

/* Worker.SetEgress(a{sv} policy) and Manager.SetWorkerEgress(s id, a{sv}
 * policy): EgressAllow (as), EgressRateBps (t), EgressMode (s) replace the
 * worker's (worker-egress.h). Who may: those who may manage the worker
 * (its owner, root, manage-workers; anyone else finds no such worker) and
 * who may create a worker of its class (polkit, as CreateWorker asks). */
int bus_worker_method_set_egress(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error);

#define BUS_WORKER_EGRESS_METHODS                                                                            \
        SD_BUS_METHOD_WITH_ARGS("SetEgress", SD_BUS_ARGS("a{sv}", policy), SD_BUS_NO_RESULT,                \
                                bus_worker_method_set_egress, SD_BUS_VTABLE_UNPRIVILEGED)
