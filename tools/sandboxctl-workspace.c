/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>

#include "sandboxctl-output.h"
#include "sandboxctl-workspace.h"
#include "table.h"
#include "util.h"

int workspace_settings_append(sd_bus_message *m, uint64_t size_max, const char *class) {
        int r = sd_bus_message_open_container(m, 'a', "{sv}");
        if (r >= 0)
                r = sd_bus_message_append(m, "{sv}", "SizeMax", "t", size_max);
        if (r >= 0 && class)
                r = sd_bus_message_append(m, "{sv}", "Class", "s", class);
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        return r;
}

int workspace_list_print(sd_bus_message *reply, bool json, bool legend, FILE *f) {
        static const char * const headers[] = { "NAME", "OWNER", "CLASS", "SIZE-MAX", "SIZE-USED", "IN-USE" };
        _cleanup_(table_freep) Table *t = table_new(ELEMENTSOF(headers), headers);
        _cleanup_(json_object_putp) json_object *a = json_object_new_array();
        const char *name, *class, *path;
        uint64_t size_max, size_used;
        uint32_t owner;
        int in_use, r;

        if (!t || !a)
                return -ENOMEM;
        r = sd_bus_message_enter_container(reply, 'a', "(susttbo)");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_read(reply, "(susttbo)", &name, &owner, &class, &size_max, &size_used, &in_use,
                                        &path)) > 0) {
                char owner_s[16], max_s[24], used_s[24];

                snprintf(owner_s, sizeof(owner_s), "%" PRIu32, owner);
                snprintf(max_s, sizeof(max_s), "%" PRIu64, size_max);
                snprintf(used_s, sizeof(used_s), "%" PRIu64, size_used);
                if (json) {
                        json_object *o = json_object_new_object();
                        if (!o || json_object_array_add(a, o) < 0) {
                                json_object_put(o);
                                return -ENOMEM;
                        }
                        json_object_object_add(o, "name", json_object_new_string(name));
                        json_object_object_add(o, "owner", json_object_new_int64(owner));
                        json_object_object_add(o, "class", json_object_new_string(class));
                        json_object_object_add(o, "size_max", json_object_new_uint64(size_max));
                        json_object_object_add(o, "size_used", json_object_new_uint64(size_used));
                        json_object_object_add(o, "in_use", json_object_new_boolean(in_use));
                        json_object_object_add(o, "object", json_object_new_string(path));
                        continue;
                }
                const char * const row[] = { name, owner_s, class, max_s, used_s, in_use ? "yes" : "no" };
                r = table_add_row(t, row);
                if (r < 0)
                        return r;
        }
        if (r < 0)
                return r;
        r = sd_bus_message_exit_container(reply);
        if (r < 0)
                return r;
        return json ? json_print(a, f) : table_print(t, f, legend);
}
