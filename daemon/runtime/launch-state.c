/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <sys/wait.h>
#include <time.h>

#include <json-c/json.h>

#include "launch-state.h"
#include "spawn.h"
#include "util.h"

#define STATE_TIMEOUT_USEC (20 * USEC_PER_SEC)

int launch_container_status(const char *runtime_path, const char *root_arg, const char *container, char *buf,
                            size_t size) {
        char out[16384];
        struct json_object *o, *v;
        const char *json;
        int status, r;

        char *argv[] = { (char *) runtime_path, (char *) root_arg, (char *) "state", (char *) container, NULL };
        buf[0] = 0;
        r = spawn_capture(argv, STATE_TIMEOUT_USEC, out, sizeof(out), &status);
        if (r < 0)
                return r;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                return 0;
        json = strchr(out, '{');
        o = json ? json_tokener_parse(json) : NULL;
        if (o && json_object_object_get_ex(o, "status", &v) && json_object_is_type(v, json_type_string))
                snprintf(buf, size, "%s", json_object_get_string(v));
        if (o)
                json_object_put(o);
        return 0;
}

int launch_container_running(const char *runtime_path, const char *root_arg, const char *container) {
        char st[32];
        int r = launch_container_status(runtime_path, root_arg, container, st, sizeof(st));

        return r < 0 ? r : streq(st, "running");
}

int launch_wait_container_running(const char *runtime_path, const char *root_arg, const char *container,
                                  uint64_t timeout_usec) {
        uint64_t deadline = now_usec(CLOCK_MONOTONIC) + timeout_usec;

        for (;;) {
                int r = launch_container_running(runtime_path, root_arg, container);
                if (r < 0)
                        return r;
                if (r > 0)
                        return 0;
                if (now_usec(CLOCK_MONOTONIC) >= deadline)
                        return -ETIMEDOUT;
                (void) usleep((useconds_t) LAUNCH_STATE_POLL_USEC);
        }
}
