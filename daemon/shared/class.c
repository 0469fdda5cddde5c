/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "class.h"
#include "util.h"

static const char * const class_table[_SBX_CLASS_MAX] = {
        [SBX_CLASS_TRUSTED] = "trusted",
        [SBX_CLASS_STANDARD] = "standard",
        [SBX_CLASS_DEVCONTAINER] = "devcontainer",
        [SBX_CLASS_UNTRUSTED] = "untrusted",
        [SBX_CLASS_HOSTILE] = "hostile",
        [SBX_CLASS_WASM] = "wasm",
};

static const char * const runtime_table[_SBX_RUNTIME_MAX] = {
        [SBX_RUNTIME_SYSTEMD] = "systemd",
        [SBX_RUNTIME_RUNSC] = "runsc",
        [SBX_RUNTIME_KATA] = "kata",
        [SBX_RUNTIME_WASM] = "wasm",
};

const char *sbx_class_to_string(SbxClass c) {
        return c >= 0 && c < _SBX_CLASS_MAX ? class_table[c] : NULL;
}

SbxClass sbx_class_from_string(const char *s) {
        for (int i = 0; s && i < _SBX_CLASS_MAX; i++)
                if (streq(class_table[i], s))
                        return (SbxClass) i;
        return _SBX_CLASS_INVALID;
}

const char *sbx_runtime_to_string(SbxRuntime r) {
        return r >= 0 && r < _SBX_RUNTIME_MAX ? runtime_table[r] : NULL;
}

SbxRuntime sbx_runtime_from_string(const char *s) {
        for (int i = 0; s && i < _SBX_RUNTIME_MAX; i++)
                if (streq(runtime_table[i], s))
                        return (SbxRuntime) i;
        return _SBX_RUNTIME_INVALID;
}

