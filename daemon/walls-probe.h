/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>

typedef struct Prober Prober;

/* The walls probe (walls-probe.c, verdicts in walls.h): a unit with a trusted
 * worker's namespacing that reports its namespaces and PID 1's.
 * Starts the walls probe unless it is running; if it cannot, the walls are
 * refused (every class with them) until a probe answers. */
int prober_probe_walls(Prober *p);
/* Called for every JobRemoved; returns true if UNIT was the walls probe. */
bool prober_walls_job_removed(Prober *p, const char *unit, const char *result);
/* The walls probe did not answer in time: fail closed. */
void prober_walls_probe_timeout(Prober *p);
void prober_walls_probe_free(Prober *p);
