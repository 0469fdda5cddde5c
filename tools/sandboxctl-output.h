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

/* One row of `sandboxctl list`. Strings point into the reply message, except
 * owner_name, which the caller resolves and owns. */
typedef struct WorkerEntry {
        const char *id;
        const char *class;
        const char *requested_class;    /* NULL: not known (an older daemon) */
        const char *state;              /* starting, running, stopping, ended */
        const char *result;             /* NULL or "" while alive */
        const char *unit;
        const char *path;               /* NULL: no object on the bus */
        const char *owner_name;         /* NULL: show the UID */
        uint32_t uid;                   /* UINT32_MAX: not known yet */
        uint32_t owner;
        uint64_t created_usec;          /* CLOCK_REALTIME; 0: not known */
        uint64_t ended_usec;            /* 0: alive */
        uint64_t idle_usec;             /* UINT64_MAX: not known */
        uint64_t memory_bytes;          /* UINT64_MAX: not known */
        int32_t exit_status;            /* -1: none */
} WorkerEntry;

/* The states `list --state=` takes, as a bit mask of 1 << index. */
extern const char * const worker_state_names[];
#define WORKER_STATES_ALIVE 0x77u       /* all but ended */
#define WORKER_STATES_ALL   0x7fu
/* Parses "running,ended": 0, or -EINVAL with *ret_bad the unknown word
 * (pointing into ARG). */
int worker_states_parse(const char *arg, unsigned *ret_mask, char **ret_bad);
bool worker_states_match(unsigned mask, const char *state);

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

/* ListWorkersEx(a{sv}) -> aa{sv} (org.sandboxd1(5), docs/man/org.sandboxd1.5.scd) */
/* Walks the a{sv} at M: READ gets each key with the message at its value, a
 * variant it reads or skips. */
int bus_read_dict(sd_bus_message *m, int (*read)(sd_bus_message *m, const char *key, void *userdata),
                  void *userdata);

int worker_list_ex_read(sd_bus_message *reply, WorkerEntry **ret, size_t *ret_n);
/* ListWorkers() -> a(ssssuuo), a daemon older than ListWorkersEx: its
 * exited and failed become ended, without a result. */
int worker_list_read(sd_bus_message *reply, WorkerEntry **ret, size_t *ret_n);
/* Oldest first. */
void worker_list_sort(WorkerEntry *workers, size_t n);
json_object *worker_list_to_json(const WorkerEntry *workers, size_t n);
/* ID CLASS STATE RESULT OWNER AGE IDLE MEMORY, ages measured at NOW (CLOCK_REALTIME). */
Table *worker_list_to_table(const WorkerEntry *workers, size_t n, uint64_t now);

/* "5s", "3min", "2h", "4d": the unit a person reads at a glance, rounded down. */
void format_short_duration(char *buf, size_t size, uint64_t usec);
/* "512B", "1.5K", "12M", "2.0G": base 1024, one decimal below 10. */
void format_bytes(char *buf, size_t size, uint64_t bytes);

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
