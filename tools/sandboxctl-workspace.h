/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* sandboxctl workspace: the ListWorkspaces reply as a table or JSON, and the
 * CreateWorkspace settings from the command line. No bus connection here. */

#include <stdbool.h>
#include <stdio.h>
#include <systemd/sd-bus.h>

/* Prints the a(susttbo) of ListWorkspaces. */
int workspace_list_print(sd_bus_message *reply, bool json, bool legend, FILE *f);

/* Appends the a{sv} settings: SizeMax always, Class when CLASS is set. */
int workspace_settings_append(sd_bus_message *m, uint64_t size_max, const char *class);
