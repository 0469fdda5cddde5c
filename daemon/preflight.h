/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <systemd/sd-bus.h>

#include "config.h"
#include "runtimes.h"

typedef struct Prober Prober;

/* Appends Preflight()'s two arrays to REPLY: one (class, runtime, path,
 * available, reason) row per class, as the gate would decide it now, then one
 * (wall, verified, detail) row per wall ("namespaces", "ip-firewall"). */
int preflight_append_rows(sd_bus_message *reply, const RuntimeTable *t, const SbxConfig *c);

/* Appends the Manager's Classes property: one (class, usable) row per class,
 * as the gate decides it from T as it stands. Starts no probe, so anyone may
 * ask as often as they like (shell completion does, on every TAB). */
int preflight_append_classes(sd_bus_message *reply, const RuntimeTable *t, const SbxConfig *c);

/* Below the probes (probe.c, walls-probe.c), which tell it when one ends:
 * whether a runtime or the walls probe is still running. */
bool preflight_probes_pending(Prober *p);
/* Answers the Preflight() calls waiting for probes, once none is pending. */
void preflight_answer_waiters(Prober *p);
