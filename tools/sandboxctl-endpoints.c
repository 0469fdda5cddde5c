/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sandboxctl-endpoints.h"
#include "table.h"
#include "util.h"

#define SYSTEMD "org.freedesktop.systemd1"
#define SANDBOXD "org.sandboxd1"

typedef struct EndpointRow {
        char name[64];                  /* the EndpointName, "" for none */
        char address[512];              /* the UNIX socket, then the TCP one */
        char state[32];                 /* the socket unit's ActiveState, or the gate's when it runs */
        char served[32];
} EndpointRow;

/* The loaded unit's object path, or -ENOENT: GetUnit does not load one. */
static int unit_path(sd_bus *bus, const char *unit, char **ret) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const char *path;
        int r;

        r = sd_bus_call_method(bus, SYSTEMD, "/org/freedesktop/systemd1", SYSTEMD ".Manager", "GetUnit", &e, &reply,
                               "s", unit);
        if (r < 0)
                return -ENOENT;
        r = sd_bus_message_read(reply, "o", &path);
        if (r < 0)
                return r;
        *ret = strdup(path);
        return *ret ? 0 : -ENOMEM;
}

static int read_listen(sd_bus *bus, const char *path, EndpointRow *row) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const char *type, *addr;
        int r;

        r = sd_bus_get_property(bus, SYSTEMD, path, SYSTEMD ".Socket", "Listen", &e, &reply, "a(ss)");
        if (r < 0)
                return r;
        r = sd_bus_message_enter_container(reply, 'a', "(ss)");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_read(reply, "(ss)", &type, &addr)) > 0) {
                size_t used = strlen(row->address);
                snprintf(row->address + used, sizeof(row->address) - used, "%s%s", used ? " " : "", addr);
        }
        return r;
}

static void read_string(sd_bus *bus, const char *service, const char *path, const char *interface,
                        const char *property, char *buf, size_t size) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        _cleanup_free_ char *v = NULL;

        if (sd_bus_get_property_string(bus, service, path, interface, property, &e, &v) >= 0 && v)
                snprintf(buf, size, "%s", v);
}

/* 0 and ROW filled for a worker with an endpoint, -ENOENT for one without.
 * WORKER_PATH: the worker's object, whose EndpointName is the second name
 * a front maps (NULL: none to ask, an older daemon's listing). */
static int endpoint_row(sd_bus *bus, const char *id, const char *worker_path, EndpointRow *row) {
        _cleanup_free_ char *socket = NULL, *service = NULL, *socket_path = NULL, *service_path = NULL;
        char status[128] = "";
        const char *served;
        int r;

        *row = (EndpointRow) {};
        if (asprintf(&socket, "sandbox-%s-gate.socket", id) < 0 || asprintf(&service, "sandbox-%s-gate.service", id) < 0)
                return -ENOMEM;
        r = unit_path(bus, socket, &socket_path);
        if (r < 0)
                return r;
        r = read_listen(bus, socket_path, row);
        if (r < 0)
                return r;
        read_string(bus, SYSTEMD, socket_path, SYSTEMD ".Unit", "ActiveState", row->state, sizeof(row->state));
        if (streq(row->state, "active"))
                snprintf(row->state, sizeof(row->state), "listening");
        /* The gate runs from the first connection on and says how many it served. */
        snprintf(row->served, sizeof(row->served), "0");
        if (unit_path(bus, service, &service_path) >= 0) {
                char active[32] = "";
                read_string(bus, SYSTEMD, service_path, SYSTEMD ".Unit", "ActiveState", active, sizeof(active));
                if (streq(active, "active"))
                        snprintf(row->state, sizeof(row->state), "serving");
                read_string(bus, SYSTEMD, service_path, SYSTEMD ".Service", "StatusText", status, sizeof(status));
                served = strstr(status, "served=");
                if (served)
                        snprintf(row->served, sizeof(row->served), "%.*s", (int) strcspn(served + 7, " "), served + 7);
        }
        if (worker_path)
                read_string(bus, SANDBOXD, worker_path, SANDBOXD ".Worker", "EndpointName", row->name,
                            sizeof(row->name));
        return 0;
}

int endpoints_print(sd_bus *bus, const WorkerEntry *workers, size_t n, bool json, bool legend, FILE *f) {
        static const char * const headers[] = { "WORKER", "NAME", "ADDRESS", "STATE", "SERVED" };
        _cleanup_(table_freep) Table *t = table_new(5, headers);
        json_object *array = json ? json_object_new_array() : NULL;
        size_t shown = 0;
        int r = 0;

        if (!t || (json && !array)) {
                json_object_put(array);
                return -ENOMEM;
        }
        for (size_t i = 0; i < n; i++) {
                EndpointRow row;
                if (endpoint_row(bus, workers[i].id, workers[i].path, &row) < 0)
                        continue;
                shown++;
                if (json) {
                        json_object *o = json_object_new_object();
                        if (!o)
                                continue;
                        json_object_object_add(o, "worker", json_object_new_string(workers[i].id));
                        json_object_object_add(o, "name", row.name[0] ? json_object_new_string(row.name) : NULL);
                        json_object_object_add(o, "address", json_object_new_string(row.address));
                        json_object_object_add(o, "state", json_object_new_string(row.state));
                        json_object_object_add(o, "served", json_object_new_int64(strtoll(row.served, NULL, 10)));
                        json_object_array_add(array, o);
                        continue;
                }
                r = table_add_row(t, (const char * const[]) { workers[i].id, row.name[0] ? row.name : "-", row.address,
                                                              row.state, row.served });
                if (r < 0)
                        return r;
        }
        if (json) {
                r = fprintf(f, "%s\n", json_object_to_json_string_ext(array, JSON_C_TO_STRING_PRETTY)) < 0 ? -EIO : 0;
                json_object_put(array);
                return r;
        }
        r = table_print(t, f, legend);
        if (r >= 0 && legend && fprintf(f, "\n%zu endpoint%s listed.\n", shown, shown == 1 ? "" : "s") < 0)
                r = -EIO;
        return r;
}
