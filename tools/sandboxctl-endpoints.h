/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* sandboxctl endpoints: the workers the caller may see that have an
 * endpoint, read from systemd's own view of each worker's gate pair
 * (sandbox-<id>-gate.socket's Listen=, the gate's STATUS= line with its
 * request count), which anyone may read: sandboxd is asked for nothing
 * beyond the list of workers. */

#include <stdbool.h>
#include <stdio.h>
#include <systemd/sd-bus.h>

#include "sandboxctl-output.h"

int endpoints_print(sd_bus *bus, const WorkerEntry *workers, size_t n, bool json, bool legend, FILE *f);
