/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

typedef struct Manager Manager;

/* Exports /org/sandboxd1, the worker objects below it and an object manager. */
int bus_manager_install(Manager *m);
/* sd_notify STATUS= with the worker count. */
void bus_manager_notify_status(Manager *m);
