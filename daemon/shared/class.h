/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>

/* Isolation classes, weakest wall first. The order matters: the gate never
 * lets a class run on a runtime whose wall is weaker than the class asks. */
typedef enum SbxClass {
        SBX_CLASS_TRUSTED,
        SBX_CLASS_STANDARD,
        /* standard's wall (gVisor) around a workspace that outlives the
         * worker: right after standard, so every floor above standard
         * (untrusted, an origin's) still raises it. */
        SBX_CLASS_DEVCONTAINER,
        SBX_CLASS_UNTRUSTED,
        SBX_CLASS_HOSTILE,
        SBX_CLASS_WASM,
        _SBX_CLASS_MAX,
        _SBX_CLASS_INVALID = -1,
} SbxClass;

/* Runtimes, i.e. what actually stands between the workload and the host. */
typedef enum SbxRuntime {
        SBX_RUNTIME_SYSTEMD,    /* the unit's own sandboxing on the shared kernel */
        SBX_RUNTIME_RUNSC,      /* gVisor */
        SBX_RUNTIME_KATA,       /* a VM per worker */
        SBX_RUNTIME_WASM,       /* a wasm runtime */
        _SBX_RUNTIME_MAX,
        _SBX_RUNTIME_INVALID = -1,
} SbxRuntime;

const char *sbx_class_to_string(SbxClass c);
SbxClass sbx_class_from_string(const char *s);
const char *sbx_runtime_to_string(SbxRuntime r);
SbxRuntime sbx_runtime_from_string(const char *s);
