/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Turns the Manager's and Worker's replies into what the CLI prints: a table
 * or JSON (json-c). Readers keep pointers into the message, so the message
 * must outlive the entries. No bus connection is involved, which keeps all of
 * this testable on messages a test builds itself. */

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <systemd/sd-bus.h>

#include "table.h"

static inline void json_object_putp(json_object **o) {
        if (*o)
                json_object_put(*o);
}

typedef struct WorkerEntry {
        const char *id;
        const char *class;
        const char *state;
        const char *unit;
        uint32_t uid;
        uint32_t owner;
        const char *path;
} WorkerEntry;

typedef struct PreflightEntry {
        const char *class;
        const char *runtime;
        const char *path;
        bool available;
        const char *reason;
} PreflightEntry;

typedef struct PreflightWall {
        const char *wall;               /* "namespaces", "ip-firewall" */
        bool verified;
        const char *detail;
} PreflightWall;

/* ListWorkers() -> a(ssssuuo) */
int worker_list_read(sd_bus_message *reply, WorkerEntry **ret, size_t *ret_n);
json_object *worker_list_to_json(const WorkerEntry *workers, size_t n);
Table *worker_list_to_table(const WorkerEntry *workers, size_t n);

/* Preflight() -> a(sssbs) classes, a(sbs) walls. preflight_walls_read reads
 * the second array; a daemon older than it sent none: zero walls. */
int preflight_read(sd_bus_message *reply, PreflightEntry **ret, size_t *ret_n);
int preflight_walls_read(sd_bus_message *reply, PreflightWall **ret, size_t *ret_n);
json_object *preflight_to_json(const PreflightEntry *entries, size_t n);
/* {"classes": [...], "walls": [{"wall", "verified", "detail"}...]} */
json_object *preflight_report_to_json(const PreflightEntry *entries, size_t n, const PreflightWall *walls,
                                      size_t n_walls);
Table *preflight_to_table(const PreflightEntry *entries, size_t n);
/* "namespaces: verified (DETAIL)", "ip-firewall: unavailable (DETAIL)" */
int preflight_walls_print(const PreflightWall *walls, size_t n, FILE *f);

/* Properties.GetAll() -> a{sv}, basic types only (the Worker interface has no
 * others): one JSON object in reply order. */
int properties_to_json(sd_bus_message *reply, json_object **ret);
/* "Name: value" lines, with timestamps and durations also shown readably. */
int properties_print(json_object *properties, FILE *f);

/* The formatting every --json output shares. */
int json_print(json_object *o, FILE *f);
