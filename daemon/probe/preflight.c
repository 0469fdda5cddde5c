/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "gate.h"
#include "preflight.h"
#include "runtimes.h"

int preflight_append_rows(sd_bus_message *reply, const RuntimeTable *t, const SbxConfig *c) {
        int r;

        r = sd_bus_message_open_container(reply, 'a', "(sssbs)");
        if (r < 0)
                return r;
        for (int k = 0; k < _SBX_CLASS_MAX; k++) {
                SbxRuntime rt = class_required_runtime((SbxClass) k), chosen;
                const RuntimeStatus *st = &t->status[rt];
                SbxError e = {};
                bool ok = gate_choose(t, c, (SbxClass) k, &chosen, &e) >= 0;
                const char *reason = ok ? (chosen != rt ? "shared kernel allowed by AllowSharedKernelForStandard"
                                                        : st->reason)
                                        : e.message;

                r = sd_bus_message_append(reply, "(sssbs)", sbx_class_to_string((SbxClass) k),
                                          sbx_runtime_to_string(ok ? chosen : rt),
                                          ok ? t->status[chosen].path : st->path, ok, reason);
                if (r < 0)
                        return r;
        }
        r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        /* The walls every class stands in, as the last probe found them. */
        r = sd_bus_message_append(reply, "a(sbs)", 2,
                                  "namespaces", t->walls.namespaces_private, t->walls.namespaces_reason,
                                  "ip-firewall", t->walls.ip_firewall, t->walls.ip_firewall_reason);
        return r < 0 ? r : 0;
}

int preflight_append_classes(sd_bus_message *reply, const RuntimeTable *t, const SbxConfig *c) {
        int r;

        r = sd_bus_message_open_container(reply, 'a', "(sb)");
        if (r < 0)
                return r;
        for (int k = 0; k < _SBX_CLASS_MAX; k++) {
                SbxRuntime chosen;

                r = sd_bus_message_append(reply, "(sb)", sbx_class_to_string((SbxClass) k),
                                          gate_choose(t, c, (SbxClass) k, &chosen, NULL) >= 0);
                if (r < 0)
                        return r;
        }
        return sd_bus_message_close_container(reply);
}
