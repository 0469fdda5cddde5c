/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <fcntl.h>

#include "probe-unit.h"
#include "systemd-bus.h"
#include "unit-props.h"
#include "util.h"

struct ProbeUnit {
        char unit[64];
        int output_fd;
        sd_bus_slot *start_call;
        probe_unit_done_t done;
        void *userdata;
};

ProbeUnit *probe_unit_free(ProbeUnit *u) {
        if (!u)
                return NULL;
        sd_bus_slot_unref(u->start_call);
        safe_close(u->output_fd);
        free(u);
        return NULL;
}

static void probe_unit_freep(ProbeUnit **u) {
        probe_unit_free(*u);
}

const char *probe_unit_name(const ProbeUnit *u) {
        assert(u);
        return u->unit;
}

bool probe_unit_job_removed(ProbeUnit *u, const char *unit, const char *result) {
        char out[4096] = {};
        size_t used = 0;

        assert(unit);
        assert(result);
        if (!u || !streq(u->unit, unit))
                return false;
        /* A oneshot's job ends when its last command has exited: all the
         * probe wrote is in the pipe. */
        while (used < sizeof(out) - 1) {
                ssize_t n = read(u->output_fd, out + used, sizeof(out) - 1 - used);
                if (n <= 0)
                        break;
                used += (size_t) n;
        }
        u->done(u, NULL, result, out, u->userdata);
        return true;
}

static int on_start_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        ProbeUnit *u = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(reply);

        u->start_call = sd_bus_slot_unref(u->start_call);
        if (e)
                u->done(u, e, NULL, NULL, u->userdata);
        return 0;
}

static int append_properties(sd_bus_message *msg, const ProbeUnitParams *params, int output_fd) {
        int r = sd_bus_message_open_container(msg, 'a', "(sv)");

        if (r >= 0)
                r = sd_bus_message_append(msg, "(sv)(sv)",
                                          "StandardOutputFileDescriptor", "h", output_fd,
                                          "StandardError", "s", "journal");
        if (r >= 0)
                r = unit_append_helper_oneshot(msg, params->description, params->timeout_usec, params->path,
                                               params->argv);
        if (r >= 0 && params->append)
                r = params->append(msg, params->userdata);
        return r < 0 ? r : sd_bus_message_close_container(msg);
}

int probe_unit_start(sd_bus *bus, const ProbeUnitParams *params, ProbeUnit **ret) {
        _cleanup_(probe_unit_freep) ProbeUnit *u = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *msg = NULL;
        _cleanup_close_ int write_fd = -1;
        char id[9];
        int pipefd[2], r;

        assert(bus);
        assert(params);
        assert(params->kind);
        assert(params->done);
        assert(ret);

        r = random_hex_id(id, 8);
        if (r < 0)
                return r;
        u = calloc(1, sizeof(*u));
        if (!u)
                return -ENOMEM;
        u->output_fd = -1;
        u->done = params->done;
        u->userdata = params->userdata;
        /* A "sandbox-" name: whatever applies to sandbox-*.service (a prefix
         * drop-in, say) applies to the probe as to the workers. */
        if ((size_t) snprintf(u->unit, sizeof(u->unit), "sandbox-probe-%s-%s.service", params->kind, id) >=
            sizeof(u->unit))
                return -ENAMETOOLONG;
        if (pipe2(pipefd, O_CLOEXEC | O_NONBLOCK) < 0)
                return -errno;
        u->output_fd = pipefd[0];
        write_fd = pipefd[1];

        r = systemd_start_transient_unit_new(bus, &msg, u->unit, "fail");
        if (r >= 0)
                r = append_properties(msg, params, write_fd);
        if (r >= 0)
                r = sd_bus_message_append(msg, "a(sa(sv))", 0);
        if (r >= 0)
                r = sd_bus_call_async(bus, &u->start_call, msg, on_start_reply, u, 0);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(u);
        return 0;
}
