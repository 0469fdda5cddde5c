/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "bus-worker-metrics.h"
#include "util.h"
#include "worker-metrics.h"

int bus_worker_property_get_metric(sd_bus *bus, const char *path, const char *interface, const char *property,
                                   sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Worker *w = userdata;
        CgroupStats c;
        EgressCounters e;
        uint64_t v = UINT64_MAX;

        if (startswith(property, "Egress")) {
                worker_metrics_egress(w, &e);
                v = streq(property, "EgressBytesSent")       ? e.bytes_sent
                  : streq(property, "EgressBytesReceived")   ? e.bytes_received
                                                             : e.connections;
                return sd_bus_message_append(reply, "t", v);
        }
        worker_metrics_cgroup(w, &c);
        if (streq(property, "CPUUsageNSec"))
                v = c.cpu_usage_nsec;
        else if (streq(property, "MemoryCurrent"))
                v = c.memory_current;
        else if (streq(property, "MemoryPeak"))
                v = c.memory_peak;
        else if (streq(property, "TasksCurrent"))
                v = c.tasks_current;
        else if (streq(property, "IOReadBytes"))
                v = c.io_read_bytes;
        else if (streq(property, "IOWriteBytes"))
                v = c.io_write_bytes;
        else if (streq(property, "OOMKills"))
                v = c.oom_kills;
        return sd_bus_message_append(reply, "t", v);
}
