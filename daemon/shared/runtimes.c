/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "runtimes.h"
#include "util.h"

void runtime_status_set(RuntimeStatus *s, bool available, const char *path, const char *reason) {
        s->available = available;
        snprintf(s->path, sizeof(s->path), "%s", path ?: "");
        snprintf(s->reason, sizeof(s->reason), "%s", reason ?: "");
        s->probed_usec = now_usec(CLOCK_REALTIME);
}

void runtime_table_init(RuntimeTable *t) {
        *t = (RuntimeTable) {};
        /* The unit itself is always there: sandboxd only runs under systemd. */
        runtime_status_set(&t->status[SBX_RUNTIME_SYSTEMD], true, "systemd", "the unit's own sandboxing");
        for (int i = SBX_RUNTIME_RUNSC; i < _SBX_RUNTIME_MAX; i++)
                runtime_status_set(&t->status[i], false, "", "not probed yet");
        walls_status_init(&t->walls);
}

SbxRuntime class_required_runtime(SbxClass c) {
        switch (c) {
        case SBX_CLASS_TRUSTED:
                return SBX_RUNTIME_SYSTEMD;
        case SBX_CLASS_STANDARD:
        case SBX_CLASS_DEVCONTAINER:
        case SBX_CLASS_UNTRUSTED:
                return SBX_RUNTIME_RUNSC;
        case SBX_CLASS_HOSTILE:
                return SBX_RUNTIME_KATA;
        case SBX_CLASS_WASM:
                return SBX_RUNTIME_WASM;
        default:
                return _SBX_RUNTIME_INVALID;
        }
}

void runtime_table_revalidate(RuntimeTable *t) {
        for (int rt = SBX_RUNTIME_RUNSC; rt < _SBX_RUNTIME_MAX; rt++) {
                RuntimeStatus *st = &t->status[rt];
                char reason[320];

                if (!st->available || access(st->path, X_OK) >= 0)
                        continue;
                snprintf(reason, sizeof(reason), "%s disappeared from %s since it was probed",
                         sbx_runtime_to_string((SbxRuntime) rt), st->path);
                runtime_status_set(st, false, st->path, reason);
                log_struct(LOG_WARNING, "Runtime disappeared: its classes will be refused",
                           "SANDBOXD_RUNTIME", sbx_runtime_to_string((SbxRuntime) rt), "SANDBOXD_REASON", reason, NULL);
        }
}
