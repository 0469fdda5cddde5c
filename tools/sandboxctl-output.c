/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <time.h>

#include "sandboxctl-output.h"
#include "util.h"

#define _cleanup_json_ _cleanup_(json_object_putp)

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

/* Takes V, also on failure; a NULL V is out of memory. */
static int json_array_push(json_object *array, json_object *v) {
        if (!v)
                return -ENOMEM;
        if (json_object_array_add(array, v) < 0) {
                json_object_put(v);
                return -ENOMEM;
        }
        return 0;
}

const char * const worker_state_names[] = { "starting", "running", "stopping", "ended", "suspending",
                                             "suspended", "resuming", NULL };

bool worker_states_match(unsigned mask, const char *state) {
        for (size_t i = 0; worker_state_names[i]; i++)
                if (streq_ptr(state, worker_state_names[i]))
                        return mask & (1u << i);
        return false;
}

int worker_states_parse(const char *arg, unsigned *ret_mask, char **ret_bad) {
        _cleanup_free_ char *copy = strdup(arg);
        unsigned mask = 0;
        char *save = NULL;

        if (!copy)
                return -ENOMEM;
        for (char *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
                size_t i;

                for (i = 0; worker_state_names[i]; i++)
                        if (streq(w, worker_state_names[i]))
                                break;
                if (!worker_state_names[i]) {
                        *ret_bad = strdup(w);
                        return *ret_bad ? -EINVAL : -ENOMEM;
                }
                mask |= 1u << i;
        }
        if (mask == 0) {
                *ret_bad = strdup(arg);
                return *ret_bad ? -EINVAL : -ENOMEM;
        }
        *ret_mask = mask;
        return 0;
}

/* An array of the reply into a realloc()ed one of SIZE-byte items: READ_ONE
 * fills the next item and returns 0 at the end. An empty array is NULL. */
static int bus_read_array(sd_bus_message *m, const char *contents, size_t size,
                          int (*read_one)(sd_bus_message *m, void *item), void **ret, size_t *ret_n) {
        _cleanup_free_ void *items = NULL;
        size_t n = 0;
        int r;

        r = sd_bus_message_enter_container(m, 'a', contents);
        if (r < 0)
                return r;
        for (;;) {
                void *grown = realloc(items, (n + 1) * size);

                if (!grown)
                        return -ENOMEM;
                items = grown;
                r = read_one(m, (uint8_t *) items + n * size);
                if (r < 0)
                        return r;
                if (r == 0)
                        break;
                n++;
        }
        r = sd_bus_message_exit_container(m);
        if (r < 0)
                return r;
        *ret = n > 0 ? TAKE_PTR(items) : NULL;
        *ret_n = n;
        return 0;
}

static WorkerEntry worker_entry_unknown(void) {
        return (WorkerEntry) { .uid = UINT32_MAX, .owner = UINT32_MAX, .idle_usec = UINT64_MAX,
                               .memory_bytes = UINT64_MAX, .exit_status = -1 };
}

int bus_read_dict(sd_bus_message *m, int (*read)(sd_bus_message *m, const char *key, void *userdata),
                  void *userdata) {
        int r;

        r = sd_bus_message_enter_container(m, 'a', "{sv}");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_enter_container(m, 'e', "sv")) > 0) {
                const char *key;

                r = sd_bus_message_read(m, "s", &key);
                if (r < 0)
                        return r;
                r = read(m, key, userdata);
                if (r < 0)
                        return r;
                r = sd_bus_message_exit_container(m);
                if (r < 0)
                        return r;
        }
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(m);
}

/* One field of a ListWorkersEx entry; keys it does not know are skipped, so
 * a newer daemon may add some. */
static int worker_entry_field_read(sd_bus_message *m, const char *key, void *userdata) {
        static const struct {
                const char *key;
                char type;
                size_t offset;
        } fields[] = {
                { "Id", 's', offsetof(WorkerEntry, id) },
                { "Class", 's', offsetof(WorkerEntry, class) },
                { "RequestedClass", 's', offsetof(WorkerEntry, requested_class) },
                { "State", 's', offsetof(WorkerEntry, state) },
                { "Result", 's', offsetof(WorkerEntry, result) },
                { "Unit", 's', offsetof(WorkerEntry, unit) },
                { "Path", 'o', offsetof(WorkerEntry, path) },
                { "UID", 'u', offsetof(WorkerEntry, uid) },
                { "Owner", 'u', offsetof(WorkerEntry, owner) },
                { "CreatedUSec", 't', offsetof(WorkerEntry, created_usec) },
                { "EndedUSec", 't', offsetof(WorkerEntry, ended_usec) },
                { "IdleUSec", 't', offsetof(WorkerEntry, idle_usec) },
                { "ExitStatus", 'i', offsetof(WorkerEntry, exit_status) },
        };
        WorkerEntry *w = userdata;
        const char *contents;
        int r;

        r = sd_bus_message_peek_type(m, NULL, &contents);
        if (r < 0)
                return r;
        for (size_t i = 0; i < ELEMENTSOF(fields); i++) {
                if (!streq(key, fields[i].key) || strlen(contents) != 1 || contents[0] != fields[i].type)
                        continue;
                r = sd_bus_message_enter_container(m, 'v', contents);
                if (r >= 0)
                        r = sd_bus_message_read_basic(m, fields[i].type, (uint8_t *) w + fields[i].offset);
                if (r >= 0)
                        r = sd_bus_message_exit_container(m);
                return r;
        }
        return sd_bus_message_skip(m, "v");
}

static int worker_entry_ex_read_one(sd_bus_message *m, void *item) {
        WorkerEntry *w = item;
        int r;

        /* 0 at the end of the array. */
        r = sd_bus_message_peek_type(m, NULL, NULL);
        if (r <= 0)
                return r;
        *w = worker_entry_unknown();
        r = bus_read_dict(m, worker_entry_field_read, w);
        if (r < 0)
                return r;
        if (!w->id || !w->state)
                return -EBADMSG;
        if (isempty(w->result))
                w->result = NULL;
        return 1;
}

int worker_list_ex_read(sd_bus_message *reply, WorkerEntry **ret, size_t *ret_n) {
        void *workers;
        int r = bus_read_array(reply, "a{sv}", sizeof(WorkerEntry), worker_entry_ex_read_one, &workers, ret_n);

        if (r >= 0)
                *ret = workers;
        return r;
}

static int worker_entry_read_one(sd_bus_message *m, void *item) {
        WorkerEntry *w = item;
        int r;

        *w = worker_entry_unknown();
        r = sd_bus_message_read(m, "(ssssuuo)", &w->id, &w->class, &w->state, &w->unit, &w->uid, &w->owner,
                                &w->path);
        if (r <= 0)
                return r;
        if (streq(w->state, "exited") || streq(w->state, "failed"))
                w->state = "ended";
        return 1;
}

int worker_list_read(sd_bus_message *reply, WorkerEntry **ret, size_t *ret_n) {
        void *workers;
        int r = bus_read_array(reply, "(ssssuuo)", sizeof(WorkerEntry), worker_entry_read_one, &workers, ret_n);

        if (r >= 0)
                *ret = workers;
        return r;
}

static int worker_entry_compare(const void *a, const void *b) {
        const WorkerEntry *x = a, *y = b;

        if (x->created_usec != y->created_usec)
                return x->created_usec < y->created_usec ? -1 : 1;
        return strcmp(x->id, y->id);
}

void worker_list_sort(WorkerEntry *workers, size_t n) {
        if (n > 1)
                qsort(workers, n, sizeof(WorkerEntry), worker_entry_compare);
}

static const char *worker_owner_string(const WorkerEntry *w, char *buf, size_t size) {
        if (w->owner_name)
                return w->owner_name;
        snprintf(buf, size, "%" PRIu32, w->owner);
        return buf;
}

static json_object *json_u64_or_null(uint64_t v, uint64_t unknown) {
        return v == unknown ? json_object_new_null() : json_object_new_uint64(v);
}

static json_object *json_string_or_null(const char *s) {
        return isempty(s) ? json_object_new_null() : json_object_new_string(s);
}

/* Takes V, also on failure; a NULL V is JSON null (json-c's own null). */
static int json_add_nullable(json_object *o, const char *key, json_object *v) {
        return json_object_object_add(o, key, v) < 0 ? (json_object_put(v), -ENOMEM) : 0;
}

static json_object *worker_entry_to_json(const WorkerEntry *w) {
        _cleanup_json_ json_object *o = json_object_new_object();
        bool ended = streq_ptr(w->state, "ended");
        char owner[16];

        if (!o)
                return NULL;
        if (json_add_string(o, "id", w->id) < 0 ||
            json_add_string(o, "class", w->class) < 0 ||
            json_add_nullable(o, "requested_class", json_string_or_null(w->requested_class)) < 0 ||
            json_add_string(o, "state", w->state) < 0 ||
            json_add_nullable(o, "result", json_string_or_null(w->result)) < 0 ||
            json_add_string(o, "owner", worker_owner_string(w, owner, sizeof(owner))) < 0 ||
            json_add(o, "owner_uid", json_object_new_int64(w->owner)) < 0 ||
            json_add_nullable(o, "uid", w->uid == UINT32_MAX ? NULL : json_object_new_int64(w->uid)) < 0 ||
            json_add_string(o, "unit", w->unit) < 0 ||
            json_add_nullable(o, "path", json_string_or_null(w->path)) < 0 ||
            json_add_nullable(o, "created_usec", json_u64_or_null(w->created_usec, 0)) < 0 ||
            json_add_nullable(o, "ended_usec", json_u64_or_null(w->ended_usec, 0)) < 0 ||
            json_add_nullable(o, "idle_usec", ended ? NULL : json_u64_or_null(w->idle_usec, UINT64_MAX)) < 0 ||
            json_add_nullable(o, "memory_bytes", json_u64_or_null(w->memory_bytes, UINT64_MAX)) < 0 ||
            json_add_nullable(o, "exit_status",
                              w->exit_status < 0 ? NULL : json_object_new_int64(w->exit_status)) < 0)
                return NULL;
        return TAKE_PTR(o);
}

json_object *worker_list_to_json(const WorkerEntry *workers, size_t n) {
        _cleanup_json_ json_object *array = json_object_new_array();

        if (!array)
                return NULL;
        for (size_t i = 0; i < n; i++)
                if (json_array_push(array, worker_entry_to_json(&workers[i])) < 0)
                        return NULL;
        return TAKE_PTR(array);
}

void format_short_duration(char *buf, size_t size, uint64_t usec) {
        uint64_t sec = usec / USEC_PER_SEC;

        if (sec < 60)
                snprintf(buf, size, "%" PRIu64 "s", sec);
        else if (sec < 3600)
                snprintf(buf, size, "%" PRIu64 "min", sec / 60);
        else if (sec < 24 * 3600)
                snprintf(buf, size, "%" PRIu64 "h", sec / 3600);
        else
                snprintf(buf, size, "%" PRIu64 "d", sec / (24 * 3600));
}

void format_bytes(char *buf, size_t size, uint64_t bytes) {
        static const char suffixes[] = "KMGTPE";
        uint64_t unit = 1024;
        size_t i = 0;

        if (bytes < 1024) {
                snprintf(buf, size, "%" PRIu64 "B", bytes);
                return;
        }
        while (i + 1 < sizeof(suffixes) - 1 && bytes / unit >= 1024) {
                unit *= 1024;
                i++;
        }
        if (bytes / unit < 10)
                snprintf(buf, size, "%" PRIu64 ".%" PRIu64 "%c", bytes / unit, (bytes % unit) * 10 / unit,
                         suffixes[i]);
        else
                snprintf(buf, size, "%" PRIu64 "%c", bytes / unit, suffixes[i]);
}

Table *worker_list_to_table(const WorkerEntry *workers, size_t n, uint64_t now) {
        static const char * const headers[] = { "ID", "CLASS", "STATE", "RESULT", "OWNER", "AGE", "IDLE", "MEMORY" };
        _cleanup_(table_freep) Table *t = table_new(ELEMENTSOF(headers), headers);

        if (!t)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                const WorkerEntry *w = &workers[i];
                bool ended = streq_ptr(w->state, "ended");
                char owner[16], age[16] = "", idle[16] = "", memory[16] = "";

                if (w->created_usec > 0 && now >= w->created_usec)
                        format_short_duration(age, sizeof(age), now - w->created_usec);
                if (!ended && w->idle_usec != UINT64_MAX)
                        format_short_duration(idle, sizeof(idle), w->idle_usec);
                if (!ended && w->memory_bytes != UINT64_MAX)
                        format_bytes(memory, sizeof(memory), w->memory_bytes);
                const char * const cells[] = { w->id, w->class, w->state, w->result,
                                               worker_owner_string(w, owner, sizeof(owner)), age, idle, memory };
                if (table_add_row(t, cells) < 0)
                        return NULL;
        }
        return TAKE_PTR(t);
}

static int preflight_entry_read_one(sd_bus_message *m, void *item) {
        PreflightEntry *e = item;
        int available, r;

        *e = (PreflightEntry) {};
        r = sd_bus_message_read(m, "(sssbs)", &e->class, &e->runtime, &e->path, &available, &e->reason);
        if (r <= 0)
                return r;
        e->available = available;
        return 1;
}

int preflight_read(sd_bus_message *reply, PreflightEntry **ret, size_t *ret_n) {
        void *entries;
        int r = bus_read_array(reply, "(sssbs)", sizeof(PreflightEntry), preflight_entry_read_one, &entries, ret_n);

        if (r >= 0)
                *ret = entries;
        return r;
}

static int preflight_wall_read_one(sd_bus_message *m, void *item) {
        PreflightWall *w = item;
        int verified, r;

        *w = (PreflightWall) {};
        r = sd_bus_message_read(m, "(sbs)", &w->wall, &verified, &w->detail);
        if (r <= 0)
                return r;
        w->verified = verified;
        return 1;
}

int preflight_walls_read(sd_bus_message *reply, PreflightWall **ret, size_t *ret_n) {
        void *walls = NULL;
        int r;

        r = sd_bus_message_peek_type(reply, NULL, NULL);
        if (r < 0)
                return r;
        if (r == 0) {
                *ret = NULL;
                *ret_n = 0;
                return 0;
        }
        r = bus_read_array(reply, "(sbs)", sizeof(PreflightWall), preflight_wall_read_one, &walls, ret_n);
        if (r >= 0)
                *ret = walls;
        return r;
}

static json_object *preflight_wall_to_json(const PreflightWall *wall) {
        _cleanup_json_ json_object *o = json_object_new_object();

        if (!o)
                return NULL;
        if (json_add_string(o, "wall", wall->wall) < 0 ||
            json_add(o, "verified", json_object_new_boolean(wall->verified)) < 0 ||
            json_add_string(o, "detail", wall->detail) < 0)
                return NULL;
        return TAKE_PTR(o);
}

json_object *preflight_report_to_json(const PreflightEntry *entries, size_t n, const PreflightWall *walls,
                                      size_t n_walls) {
        _cleanup_json_ json_object *o = json_object_new_object(), *array = json_object_new_array();
        json_object *classes = preflight_to_json(entries, n);

        if (!o || !array || json_add(o, "classes", classes) < 0)
                return NULL;
        for (size_t i = 0; i < n_walls; i++)
                if (json_array_push(array, preflight_wall_to_json(&walls[i])) < 0)
                        return NULL;
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

static json_object *preflight_entry_to_json(const PreflightEntry *e) {
        _cleanup_json_ json_object *o = json_object_new_object();

        if (!o)
                return NULL;
        if (json_add_string(o, "class", e->class) < 0 ||
            json_add_string(o, "runtime", e->runtime) < 0 ||
            json_add_string(o, "path", e->path) < 0 ||
            json_add(o, "available", json_object_new_boolean(e->available)) < 0 ||
            json_add_string(o, "reason", e->reason) < 0)
                return NULL;
        return TAKE_PTR(o);
}

json_object *preflight_to_json(const PreflightEntry *entries, size_t n) {
        _cleanup_json_ json_object *array = json_object_new_array();

        if (!array)
                return NULL;
        for (size_t i = 0; i < n; i++)
                if (json_array_push(array, preflight_entry_to_json(&entries[i])) < 0)
                        return NULL;
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

static int property_to_json(sd_bus_message *m, const char *name, void *userdata) {
        json_object *o = userdata, *value = NULL;
        int r = variant_to_json(m, &value);

        if (r < 0)
                return r;
        return value && json_add(o, name, value) < 0 ? -ENOMEM : 0;
}

int properties_to_json(sd_bus_message *reply, json_object **ret) {
        _cleanup_json_ json_object *o = json_object_new_object();
        int r;

        if (!o)
                return -ENOMEM;
        r = bus_read_dict(reply, property_to_json, o);
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
                        if (startswith(name, "Created") || startswith(name, "Last") || startswith(name, "Ended"))
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
