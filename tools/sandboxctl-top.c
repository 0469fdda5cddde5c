/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sandboxctl-output.h"
#include "sandboxctl-top.h"
#include "util.h"

static const struct {
        const char *property;
        const char *json;
        size_t offset;
} COUNTERS[] = {
        { "CPUUsageNSec",        "cpu_usage_nsec",     offsetof(TopRow, cpu_nsec) },
        { "MemoryCurrent",       "memory_current",     offsetof(TopRow, memory) },
        { "MemoryPeak",          "memory_peak",        offsetof(TopRow, memory_peak) },
        { "TasksCurrent",        "tasks_current",      offsetof(TopRow, tasks) },
        { "IOReadBytes",         "io_read_bytes",      offsetof(TopRow, io_read) },
        { "IOWriteBytes",        "io_write_bytes",     offsetof(TopRow, io_write) },
        { "OOMKills",            "oom_kills",          offsetof(TopRow, oom_kills) },
        { "EgressBytesSent",     "egress_bytes_sent",  offsetof(TopRow, egress_sent) },
        { "EgressBytesReceived", "egress_bytes_received", offsetof(TopRow, egress_received) },
        { "EgressConnections",   "egress_connections", offsetof(TopRow, egress_connections) },
};

static uint64_t *counter(TopRow *row, size_t i) {
        return (uint64_t *) ((char *) row + COUNTERS[i].offset);
}

static uint64_t counter_of(const TopRow *row, size_t i) {
        return *(const uint64_t *) ((const char *) row + COUNTERS[i].offset);
}

static int row_field(sd_bus_message *m, const char *key, void *userdata) {
        TopRow *row = userdata;
        const char *s;
        int r;

        for (size_t i = 0; i < ELEMENTSOF(COUNTERS); i++)
                if (streq(key, COUNTERS[i].property))
                        return sd_bus_message_read(m, "v", "t", counter(row, i));
        char **field = streq(key, "Id") ? &row->id : streq(key, "Class") ? &row->class
                     : streq(key, "State") ? &row->state : NULL;
        if (!field)
                return sd_bus_message_skip(m, "v");
        r = sd_bus_message_read(m, "v", "s", &s);
        if (r < 0)
                return r;
        free(*field);
        *field = strdup(s);
        return *field ? 0 : -ENOMEM;
}

static void row_done(TopRow *row) {
        free(row->id);
        free(row->class);
        free(row->state);
}

/* One object: a{sa{sv}}, of which the Worker interface is ours. */
static int read_object(sd_bus_message *m, TopSample *s) {
        const char *iface;
        int r;

        r = sd_bus_message_enter_container(m, 'a', "{sa{sv}}");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_enter_container(m, 'e', "sa{sv}")) > 0) {
                r = sd_bus_message_read(m, "s", &iface);
                if (r < 0)
                        return r;
                if (!streq(iface, "org.sandboxd1.Worker")) {
                        r = sd_bus_message_skip(m, "a{sv}");
                } else {
                        TopRow *rows = reallocarray(s->rows, s->n + 1, sizeof(TopRow));
                        if (!rows)
                                return -ENOMEM;
                        s->rows = rows;
                        TopRow *row = &rows[s->n++];
                        *row = (TopRow) { .cpu_percent = -1 };
                        for (size_t i = 0; i < ELEMENTSOF(COUNTERS); i++)
                                *counter(row, i) = TOP_UNKNOWN;
                        r = bus_read_dict(m, row_field, row);
                        if (r >= 0 && (!row->id || !row->state))
                                r = -EBADMSG;
                }
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

int top_sample_read(sd_bus_message *reply, uint64_t at_usec, TopSample *ret) {
        TopSample s = { .at_usec = at_usec };
        const char *path;
        int r;

        r = sd_bus_message_enter_container(reply, 'a', "{oa{sa{sv}}}");
        while (r >= 0 && (r = sd_bus_message_enter_container(reply, 'e', "oa{sa{sv}}")) > 0) {
                r = sd_bus_message_read(reply, "o", &path);
                if (r >= 0)
                        r = read_object(reply, &s);
                if (r >= 0)
                        r = sd_bus_message_exit_container(reply);
        }
        if (r >= 0)
                r = sd_bus_message_exit_container(reply);
        if (r < 0) {
                top_sample_done(&s);
                return r;
        }
        *ret = s;
        return 0;
}

void top_sample_done(TopSample *s) {
        for (size_t i = 0; i < s->n; i++)
                row_done(&s->rows[i]);
        free(s->rows);
        *s = (TopSample) {};
}

static int compare_rows(const void *a, const void *b) {
        const TopRow *x = a, *y = b;
        if (x->cpu_percent != y->cpu_percent)
                return x->cpu_percent > y->cpu_percent ? -1 : 1;
        return strcmp(x->id, y->id);
}

void top_sample_compare(TopSample *now, const TopSample *before) {
        for (size_t i = 0; before && i < now->n; i++) {
                TopRow *row = &now->rows[i];
                for (size_t j = 0; j < before->n; j++) {
                        const TopRow *old = &before->rows[j];
                        if (!streq(old->id, row->id))
                                continue;
                        if (row->cpu_nsec != TOP_UNKNOWN && old->cpu_nsec != TOP_UNKNOWN &&
                            row->cpu_nsec >= old->cpu_nsec && now->at_usec > before->at_usec)
                                row->cpu_percent = (double) (row->cpu_nsec - old->cpu_nsec) /
                                                   (double) ((now->at_usec - before->at_usec) * 1000) * 100.0;
                        break;
                }
        }
        if (now->n > 1)
                qsort(now->rows, now->n, sizeof(TopRow), compare_rows);
}

static void cell_bytes(char *buf, size_t size, uint64_t v) {
        if (v == TOP_UNKNOWN)
                snprintf(buf, size, "-");
        else
                format_bytes(buf, size, v);
}

static void cell_number(char *buf, size_t size, uint64_t v) {
        if (v == TOP_UNKNOWN)
                snprintf(buf, size, "-");
        else
                snprintf(buf, size, "%" PRIu64, v);
}

Table *top_to_table(const TopSample *s) {
        static const char * const headers[] = { "ID", "CLASS", "STATE", "CPU%", "MEMORY", "PEAK", "TASKS", "OOM",
                                                "IO-READ", "IO-WRITE", "NET-OUT", "NET-IN", "CONNS" };
        Table *t = table_new(ELEMENTSOF(headers), headers);

        for (size_t i = 0; t && i < s->n; i++) {
                const TopRow *row = &s->rows[i];
                char cpu[16], mem[16], peak[16], tasks[24], oom[24], rd[16], wr[16], out[16], in[16], conns[24];

                if (row->cpu_percent < 0)
                        snprintf(cpu, sizeof(cpu), "-");
                else
                        snprintf(cpu, sizeof(cpu), "%.1f", row->cpu_percent);
                cell_bytes(mem, sizeof(mem), row->memory);
                cell_bytes(peak, sizeof(peak), row->memory_peak);
                cell_number(tasks, sizeof(tasks), row->tasks);
                cell_number(oom, sizeof(oom), row->oom_kills);
                cell_bytes(rd, sizeof(rd), row->io_read);
                cell_bytes(wr, sizeof(wr), row->io_write);
                cell_bytes(out, sizeof(out), row->egress_sent);
                cell_bytes(in, sizeof(in), row->egress_received);
                cell_number(conns, sizeof(conns), row->egress_connections);
                const char *cells[] = { row->id, row->class, row->state, cpu, mem, peak, tasks, oom,
                                        rd, wr, out, in, conns };
                if (table_add_row(t, cells) < 0)
                        return table_free(t);
        }
        return t;
}

json_object *top_to_json(const TopSample *s) {
        json_object *a = json_object_new_array();

        for (size_t i = 0; a && i < s->n; i++) {
                const TopRow *row = &s->rows[i];
                json_object *o = json_object_new_object();
                if (!o || json_object_array_add(a, o) < 0) {
                        json_object_put(o);
                        json_object_put(a);
                        return NULL;
                }
                json_object_object_add(o, "id", json_object_new_string(row->id));
                json_object_object_add(o, "class", row->class ? json_object_new_string(row->class) : NULL);
                json_object_object_add(o, "state", json_object_new_string(row->state));
                json_object_object_add(o, "cpu_percent",
                                       row->cpu_percent < 0 ? NULL : json_object_new_double(row->cpu_percent));
                for (size_t j = 0; j < ELEMENTSOF(COUNTERS); j++) {
                        uint64_t v = counter_of(row, j);
                        json_object_object_add(o, COUNTERS[j].json,
                                               v == TOP_UNKNOWN ? NULL : json_object_new_uint64(v));
                }
        }
        return a;
}

int egress_allow_edit(char **current, char **add, char **remove, char ***ret, const char **ret_missing) {
        _cleanup_strv_free_ char **l = strv_copy(current);

        if (!l)
                return -ENOMEM;
        for (char **r = remove; r && *r; r++) {
                size_t n = 0, k = 0;
                for (char **i = l; *i; i++, n++)
                        if (streq(*i, *r))
                                free(*i);
                        else
                                l[k++] = *i;
                l[k] = NULL;
                if (k == n) {
                        if (ret_missing)
                                *ret_missing = *r;
                        return -ENOENT;
                }
        }
        for (char **a = add; a && *a; a++) {
                bool have = false;
                for (char **i = l; *i && !have; i++)
                        have = streq(*i, *a);
                if (!have && strv_extend(&l, *a) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(l);
        return 0;
}
