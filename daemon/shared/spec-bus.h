/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>

#include "spec.h"

/* Reads CreateWorker's a{sv} from M into S. Unknown keys, wrong variant
 * types and repeated keys are refused with a named error. */
int worker_spec_from_bus(WorkerSpec *s, sd_bus_message *m, SbxError *error);
