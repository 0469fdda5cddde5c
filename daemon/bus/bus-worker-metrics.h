/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>

/* The Worker's metrics properties (worker-metrics.h), "t" each,
 * UINT64_MAX when unknown, as systemd's own. Read on demand, never
 * announced: a client polls them (sandboxctl top). Like every property of a
 * worker they reach only who may see it (bus_worker_filter()). */
int bus_worker_property_get_metric(sd_bus *bus, const char *path, const char *interface, const char *property,
                                   sd_bus_message *reply, void *userdata, sd_bus_error *error);

#define BUS_WORKER_METRICS_PROPERTIES                                                                        \
        SD_BUS_PROPERTY("CPUUsageNSec", "t", bus_worker_property_get_metric, 0, 0),                         \
        SD_BUS_PROPERTY("MemoryCurrent", "t", bus_worker_property_get_metric, 0, 0),                        \
        SD_BUS_PROPERTY("MemoryPeak", "t", bus_worker_property_get_metric, 0, 0),                           \
        SD_BUS_PROPERTY("TasksCurrent", "t", bus_worker_property_get_metric, 0, 0),                         \
        SD_BUS_PROPERTY("IOReadBytes", "t", bus_worker_property_get_metric, 0, 0),                          \
        SD_BUS_PROPERTY("IOWriteBytes", "t", bus_worker_property_get_metric, 0, 0),                         \
        SD_BUS_PROPERTY("OOMKills", "t", bus_worker_property_get_metric, 0, 0),                             \
        SD_BUS_PROPERTY("EgressBytesSent", "t", bus_worker_property_get_metric, 0, 0),                      \
        SD_BUS_PROPERTY("EgressBytesReceived", "t", bus_worker_property_get_metric, 0, 0),                  \
        SD_BUS_PROPERTY("EgressConnections", "t", bus_worker_property_get_metric, 0, 0)
