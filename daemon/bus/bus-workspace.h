/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>

typedef struct Manager Manager;

/* The Manager's workspace methods, USERDATA the manager (bus-manager.c's vtable). */
int bus_method_create_workspace(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error);
int bus_method_list_workspaces(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error);
int bus_method_delete_workspace(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error);

/* /org/sandboxd1/workspace/<name>, org.sandboxd1.Workspace: each visible to
 * root, its owner and holders of manage-workspaces only. */
int bus_workspace_install(Manager *m);
