/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* sandboxctl top and sandboxctl egress without the bus connection: one
 * sample of every worker's metrics properties from GetManagedObjects, the
 * CPU share between two samples, the table and the JSON; and the egress
 * list as `egress --allow/--deny` edits it. */

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-bus.h>

#include "table.h"

#define TOP_UNKNOWN UINT64_MAX

typedef struct TopRow {
        char *id, *class, *state;
        uint64_t cpu_nsec, memory, memory_peak, tasks, io_read, io_write, oom_kills;
        uint64_t egress_sent, egress_received, egress_connections;
        double cpu_percent;     /* of one CPU over the interval; < 0: not known (first sample) */
} TopRow;

typedef struct TopSample {
        TopRow *rows;
        size_t n;
        uint64_t at_usec;       /* CLOCK_MONOTONIC when read */
} TopSample;

/* The a{oa{sa{sv}}} of GetManagedObjects: one row per org.sandboxd1.Worker. */
int top_sample_read(sd_bus_message *reply, uint64_t at_usec, TopSample *ret);
void top_sample_done(TopSample *s);
/* Each row's CPU share since the same worker's row in BEFORE. Then sorted:
 * the busiest first, then by ID. */
void top_sample_compare(TopSample *now, const TopSample *before);

/* ID CLASS STATE CPU% MEMORY PEAK TASKS OOM IO-READ IO-WRITE NET-OUT NET-IN CONNS */
Table *top_to_table(const TopSample *s);
/* [{ "id", "class", "state", "cpu_percent" (null when unknown), "cpu_usage_nsec", ...}] with
 * the property names' values in snake case; unknown counters are null. */
json_object *top_to_json(const TopSample *s);

/* CURRENT with each of ADD appended (unless there already) and each of
 * REMOVE taken out: what `egress --allow/--deny` sends. -ENOENT names in
 * *RET_MISSING (borrowed) a REMOVE entry CURRENT does not hold. */
int egress_allow_edit(char **current, char **add, char **remove, char ***ret, const char **ret_missing);
