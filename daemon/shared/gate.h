/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "config.h"
#include "runtimes.h"

/* The fail-closed gate. A class is served by the runtime it needs or, for
 * "standard" only and only when the operator said so, by the shared kernel;
 * otherwise it is refused with IsolationUnavailable. Nothing is downgraded.
 * Every class is refused while the walls probe has not verified that a
 * worker's namespaces are private (RuntimeTable.walls). */
int gate_choose(const RuntimeTable *t, const SbxConfig *c, SbxClass class, SbxRuntime *ret, SbxError *error);

/* The second check, just before the unit is emitted: the runtime chosen
 * earlier must still be what the gate would choose now. */
int gate_recheck(const RuntimeTable *t, const SbxConfig *c, SbxClass class, SbxRuntime chosen, SbxError *error);
