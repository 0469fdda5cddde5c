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

/* ListWorkers() -> a(ssssuuo) */
int worker_list_read(sd_bus_message *reply, WorkerEntry **ret, size_t *ret_n);
json_object *worker_list_to_json(const WorkerEntry *workers, size_t n);
Table *worker_list_to_table(const WorkerEntry *workers, size_t n);

/* Preflight() -> a(sssbs) */
int preflight_read(sd_bus_message *reply, PreflightEntry **ret, size_t *ret_n);
json_object *preflight_to_json(const PreflightEntry *entries, size_t n);
Table *preflight_to_table(const PreflightEntry *entries, size_t n);

/* Properties.GetAll() -> a{sv}, basic types only (the Worker interface has no
 * others): one JSON object in reply order. */
int properties_to_json(sd_bus_message *reply, json_object **ret);
/* "Name: value" lines, with timestamps and durations also shown readably. */
int properties_print(json_object *properties, FILE *f);

/* The formatting every --json output shares. */
int json_print(json_object *o, FILE *f);
