/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <systemd/sd-bus.h>

#include "config.h"
#include "runtimes.h"

/* Appends Preflight()'s two arrays to REPLY: one (class, runtime, path,
 * available, reason) row per class, as the gate would decide it now, then one
 * (wall, verified, detail) row per wall ("namespaces", "ip-firewall"). */
int preflight_append_rows(sd_bus_message *reply, const RuntimeTable *t, const SbxConfig *c);

/* Appends the Manager's Classes property: one (class, usable) row per class,
 * as the gate decides it from T as it stands. Starts no probe, so anyone may
 * ask as often as they like (shell completion does, on every TAB). */
int preflight_append_classes(sd_bus_message *reply, const RuntimeTable *t, const SbxConfig *c);
