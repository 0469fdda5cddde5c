/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <time.h>

#include "sandboxctl-output.h"
#include "util.h"

#define _cleanup_json_ _cleanup_(json_object_putp)

int worker_list_read(sd_bus_message *reply, WorkerEntry **ret, size_t *ret_n) {
        _cleanup_free_ WorkerEntry *workers = NULL;
        size_t n = 0;
        int r;

        r = sd_bus_message_enter_container(reply, 'a', "(ssssuuo)");
        if (r < 0)
                return r;
        for (;;) {
                WorkerEntry w = {};
                WorkerEntry *grown;

                r = sd_bus_message_read(reply, "(ssssuuo)", &w.id, &w.class, &w.state, &w.unit, &w.uid, &w.owner,
                                        &w.path);
                if (r < 0)
                        return r;
                if (r == 0)
                        break;
                grown = realloc(workers, (n + 1) * sizeof(WorkerEntry));
                if (!grown)
                        return -ENOMEM;
                workers = grown;
                workers[n++] = w;
        }
        r = sd_bus_message_exit_container(reply);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(workers);
        *ret_n = n;
        return 0;
}

/* Takes V, also on failure. */
static int json_add(json_object *o, const char *key, json_object *v) {
        if (!v)
                return -ENOMEM;
        if (json_object_object_add(o, key, v) < 0) {
                json_object_put(v);
                return -ENOMEM;
        }
        return 0;
}

static int json_add_string(json_object *o, const char *key, const char *value) {
        return json_add(o, key, json_object_new_string(value ?: ""));
}

/* On failure V still belongs to the caller, which frees it. */
static int json_array_push(json_object *array, json_object *v) {
        return json_object_array_add(array, v) < 0 ? -ENOMEM : 0;
}

json_object *worker_list_to_json(const WorkerEntry *workers, size_t n) {
        _cleanup_json_ json_object *array = json_object_new_array();

        if (!array)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                json_object *o = json_object_new_object();

                if (!o)
                        return NULL;
                if (json_add_string(o, "id", workers[i].id) < 0 ||
                    json_add_string(o, "class", workers[i].class) < 0 ||
                    json_add_string(o, "state", workers[i].state) < 0 ||
                    json_add_string(o, "unit", workers[i].unit) < 0 ||
                    json_add(o, "uid", json_object_new_int64(workers[i].uid)) < 0 ||
                    json_add(o, "owner", json_object_new_int64(workers[i].owner)) < 0 ||
                    json_add_string(o, "path", workers[i].path) < 0 ||
                    json_array_push(array, o) < 0) {
                        json_object_put(o);
                        return NULL;
                }
        }
        return TAKE_PTR(array);
}

Table *worker_list_to_table(const WorkerEntry *workers, size_t n) {
        static const char * const headers[] = { "ID", "CLASS", "STATE", "UNIT", "UID", "OWNER" };
        _cleanup_(table_freep) Table *t = table_new(ELEMENTSOF(headers), headers);

        if (!t)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                char uid[16], owner[16];
                snprintf(uid, sizeof(uid), "%" PRIu32, workers[i].uid);
                snprintf(owner, sizeof(owner), "%" PRIu32, workers[i].owner);
                const char * const cells[] = { workers[i].id, workers[i].class, workers[i].state,
                                               workers[i].unit, uid, owner };
                if (table_add_row(t, cells) < 0)
                        return NULL;
        }
        return TAKE_PTR(t);
}

int preflight_read(sd_bus_message *reply, PreflightEntry **ret, size_t *ret_n) {
        _cleanup_free_ PreflightEntry *entries = NULL;
        size_t n = 0;
        int r;

        r = sd_bus_message_enter_container(reply, 'a', "(sssbs)");
        if (r < 0)
                return r;
        for (;;) {
                PreflightEntry e = {};
                PreflightEntry *grown;
                int available;

                r = sd_bus_message_read(reply, "(sssbs)", &e.class, &e.runtime, &e.path, &available, &e.reason);
                if (r < 0)
                        return r;
                if (r == 0)
                        break;
                e.available = available;
                grown = realloc(entries, (n + 1) * sizeof(PreflightEntry));
                if (!grown)
                        return -ENOMEM;
                entries = grown;
                entries[n++] = e;
        }
        r = sd_bus_message_exit_container(reply);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(entries);
        *ret_n = n;
        return 0;
}

int preflight_walls_read(sd_bus_message *reply, PreflightWall **ret, size_t *ret_n) {
        _cleanup_free_ PreflightWall *walls = NULL;
        size_t n = 0;
        int r;

        r = sd_bus_message_peek_type(reply, NULL, NULL);
        if (r < 0)
                return r;
        if (r == 0) {
                *ret = NULL;
                *ret_n = 0;
                return 0;
        }
        r = sd_bus_message_enter_container(reply, 'a', "(sbs)");
        if (r < 0)
                return r;
        for (;;) {
                PreflightWall w = {}, *grown;
                int verified;

                r = sd_bus_message_read(reply, "(sbs)", &w.wall, &verified, &w.detail);
                if (r < 0)
                        return r;
                if (r == 0)
                        break;
                w.verified = verified;
                grown = realloc(walls, (n + 1) * sizeof(PreflightWall));
                if (!grown)
                        return -ENOMEM;
                walls = grown;
                walls[n++] = w;
        }
        r = sd_bus_message_exit_container(reply);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(walls);
        *ret_n = n;
        return 0;
}

json_object *preflight_report_to_json(const PreflightEntry *entries, size_t n, const PreflightWall *walls,
                                      size_t n_walls) {
        _cleanup_json_ json_object *o = json_object_new_object(), *array = json_object_new_array();
        json_object *classes = preflight_to_json(entries, n);

        if (!o || !array || json_add(o, "classes", classes) < 0)
                return NULL;
        for (size_t i = 0; i < n_walls; i++) {
                json_object *w = json_object_new_object();

                if (!w)
                        return NULL;
                if (json_add_string(w, "wall", walls[i].wall) < 0 ||
                    json_add(w, "verified", json_object_new_boolean(walls[i].verified)) < 0 ||
                    json_add_string(w, "detail", walls[i].detail) < 0 ||
                    json_array_push(array, w) < 0) {
                        json_object_put(w);
                        return NULL;
                }
        }
        if (json_add(o, "walls", TAKE_PTR(array)) < 0)
                return NULL;
        return TAKE_PTR(o);
}

int preflight_walls_print(const PreflightWall *walls, size_t n, FILE *f) {
        for (size_t i = 0; i < n; i++) {
                /* A missing wall is "unavailable"; namespaces are a check's verdict. */
                bool check = streq(walls[i].wall, "namespaces");
                const char *word = walls[i].verified ? (check ? "verified" : "available")
                                                     : (check ? "NOT verified" : "unavailable");

                if (fprintf(f, "%s: %s (%s)\n", walls[i].wall, word, walls[i].detail) < 0)
                        return -EIO;
        }
        return 0;
}

json_object *preflight_to_json(const PreflightEntry *entries, size_t n) {
        _cleanup_json_ json_object *array = json_object_new_array();

        if (!array)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                json_object *o = json_object_new_object();

                if (!o)
                        return NULL;
                if (json_add_string(o, "class", entries[i].class) < 0 ||
                    json_add_string(o, "runtime", entries[i].runtime) < 0 ||
                    json_add_string(o, "path", entries[i].path) < 0 ||
                    json_add(o, "available", json_object_new_boolean(entries[i].available)) < 0 ||
                    json_add_string(o, "reason", entries[i].reason) < 0 ||
                    json_array_push(array, o) < 0) {
                        json_object_put(o);
                        return NULL;
                }
        }
        return TAKE_PTR(array);
}

Table *preflight_to_table(const PreflightEntry *entries, size_t n) {
        static const char * const headers[] = { "CLASS", "RUNTIME", "PATH", "AVAILABLE", "REASON" };
        _cleanup_(table_freep) Table *t = table_new(ELEMENTSOF(headers), headers);

        if (!t)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                const char * const cells[] = { entries[i].class, entries[i].runtime, entries[i].path,
                                               entries[i].available ? "yes" : "no", entries[i].reason };
                if (table_add_row(t, cells) < 0)
                        return NULL;
        }
        return TAKE_PTR(t);
}

static int variant_to_json(sd_bus_message *m, json_object **ret) {
        const char *contents;
        char type;
        union {
                const char *s;
                int b;
                uint8_t y;
                int16_t n;
                uint16_t q;
                int32_t i;
                uint32_t u;
                int64_t x;
                uint64_t t;
                double d;
        } v;
        int r;

        r = sd_bus_message_peek_type(m, &type, &contents);
        if (r < 0)
                return r;
        if (type != 'v')
                return -EBADMSG;
        r = sd_bus_message_enter_container(m, 'v', contents);
        if (r < 0)
                return r;
        if (strlen(contents) != 1)
                /* Not a basic type: the Worker interface has none, skip unknown additions. */
                r = sd_bus_message_skip(m, contents);
        else {
                r = sd_bus_message_read_basic(m, contents[0], &v);
                if (r >= 0)
                        switch (contents[0]) {
                        case 's': case 'o': case 'g':
                                *ret = json_object_new_string(v.s);
                                break;
                        case 'b': *ret = json_object_new_boolean(v.b); break;
                        case 'y': *ret = json_object_new_int64(v.y); break;
                        case 'n': *ret = json_object_new_int64(v.n); break;
                        case 'q': *ret = json_object_new_int64(v.q); break;
                        case 'i': *ret = json_object_new_int64(v.i); break;
                        case 'u': *ret = json_object_new_int64(v.u); break;
                        case 'x': *ret = json_object_new_int64(v.x); break;
                        case 't': *ret = json_object_new_uint64(v.t); break;
                        case 'd': *ret = json_object_new_double(v.d); break;
                        default: break;
                        }
        }
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(m);
}

int properties_to_json(sd_bus_message *reply, json_object **ret) {
        _cleanup_json_ json_object *o = json_object_new_object();
        int r;

        if (!o)
                return -ENOMEM;
        r = sd_bus_message_enter_container(reply, 'a', "{sv}");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_enter_container(reply, 'e', "sv")) > 0) {
                json_object *value = NULL;
                const char *name;

                r = sd_bus_message_read(reply, "s", &name);
                if (r < 0)
                        return r;
                r = variant_to_json(reply, &value);
                if (r < 0)
                        return r;
                if (value && json_add(o, name, value) < 0)
                        return -ENOMEM;
                r = sd_bus_message_exit_container(reply);
                if (r < 0)
                        return r;
        }
        if (r < 0)
                return r;
        r = sd_bus_message_exit_container(reply);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(o);
        return 0;
}

static bool endswith(const char *s, const char *suffix) {
        size_t ls = strlen(s), lx = strlen(suffix);
        return ls >= lx && streq(s + ls - lx, suffix);
}

static void format_duration(char *buf, size_t size, uint64_t usec) {
        if (usec == USEC_INFINITY)
                snprintf(buf, size, "infinity");
        else if (usec % (3600 * USEC_PER_SEC) == 0 && usec > 0)
                snprintf(buf, size, "%" PRIu64 "h", usec / (3600 * USEC_PER_SEC));
        else if (usec % (60 * USEC_PER_SEC) == 0 && usec > 0)
                snprintf(buf, size, "%" PRIu64 "min", usec / (60 * USEC_PER_SEC));
        else if (usec % USEC_PER_SEC == 0)
                snprintf(buf, size, "%" PRIu64 "s", usec / USEC_PER_SEC);
        else
                snprintf(buf, size, "%" PRIu64 "ms", usec / USEC_PER_MSEC);
}

static void format_timestamp(char *buf, size_t size, uint64_t usec) {
        time_t sec = (time_t) (usec / USEC_PER_SEC);
        struct tm tm;

        if (usec == 0 || !localtime_r(&sec, &tm) || strftime(buf, size, "%a %Y-%m-%d %H:%M:%S %Z", &tm) == 0)
                snprintf(buf, size, "n/a");
}

int properties_print(json_object *properties, FILE *f) {
        size_t width = 0;

        if (!properties || !f)
                return -EINVAL;
        json_object_object_foreach(properties, key, _value)
                width = MAX(width, strlen(key));
        json_object_object_foreach(properties, name, value) {
                char pretty[128] = "";

                /* Timestamps and durations both end in USec; the Worker's
                 * timestamps are the ones named for a moment. */
                if (endswith(name, "USec") && json_object_is_type(value, json_type_int)) {
                        uint64_t usec = json_object_get_uint64(value);
                        if (startswith(name, "Created") || startswith(name, "Last"))
                                format_timestamp(pretty, sizeof(pretty), usec);
                        else
                                format_duration(pretty, sizeof(pretty), usec);
                }
                fprintf(f, "%*s: %s%s%s%s\n", (int) width, name,
                        json_object_is_type(value, json_type_string) ? json_object_get_string(value)
                                                                      : json_object_to_json_string(value),
                        *pretty ? " (" : "", pretty, *pretty ? ")" : "");
        }
        return ferror(f) ? -EIO : 0;
}

int json_print(json_object *o, FILE *f) {
        const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE);
        if (!s)
                return -ENOMEM;
        fprintf(f, "%s\n", s);
        return ferror(f) ? -EIO : 0;
}
