/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "class.h"
#include "walls.h"

/* What the last probe found out about each runtime. Runtimes are probed,
 * never assumed: an entry is available only after a real sandbox answered. */
typedef struct RuntimeStatus {
        bool available;
        char path[256];
        char reason[256];
        uint64_t probed_usec;           /* CLOCK_REALTIME; 0: never probed */
} RuntimeStatus;

typedef struct RuntimeTable {
        RuntimeStatus status[_SBX_RUNTIME_MAX];
        WallsStatus walls;              /* every class needs these, whatever the runtime */
} RuntimeTable;

void runtime_table_init(RuntimeTable *t);
void runtime_status_set(RuntimeStatus *s, bool available, const char *path, const char *reason);
/* A runtime whose binary disappeared since its probe is unavailable now. */
void runtime_table_revalidate(RuntimeTable *t);

/* The runtime each class needs, strongest wall first; the gate takes the
 * first available one and never goes further down. */
SbxRuntime class_required_runtime(SbxClass c);
