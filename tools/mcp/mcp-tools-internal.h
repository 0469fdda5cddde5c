/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What the tool files share (mcp-tools.c: the Manager's methods,
 * mcp-tools-worker.c: the Worker methods of issue 24). */

#include <systemd/sd-bus.h>

#include "mcp-tools.h"

#define BUS_NAME          "org.sandboxd1"
#define MANAGER_PATH      "/org/sandboxd1"
#define MANAGER_INTERFACE "org.sandboxd1.Manager"
#define WORKER_INTERFACE  "org.sandboxd1.Worker"
#define PROCESS_INTERFACE "org.sandboxd1.Process"

/* run_command without a worker_id only: offered while Exec is not. */
#define MCP_WITHOUT_EXEC 4u

static inline void json_putp(json_object **o) {
        if (*o)
                json_object_put(*o);
}

/* A bus connection as the calling user: 1, or 0 with a tool error in RET. */
int mcp_tool_connect(const McpToolsContext *ctx, McpToolResult *ret, sd_bus **bus);
/* A refusal or failure as the model sees it, the D-Bus error's name first; returns 0. */
int mcp_tool_bus_error(McpToolResult *ret, const char *what, const sd_bus_error *e, int r);
int mcp_call_manager(sd_bus *bus, const char *method, uint64_t timeout, sd_bus_error *error, sd_bus_message **reply,
                     const char *types, ...);
const char *mcp_arg_string(json_object *args, const char *key);
/* The worker named by "worker_id", if a model started it for this user: 1
 * with *ret_id (in ARGS) and *ret_path (a copy), or 0 with a tool error. */
int mcp_our_worker(sd_bus *bus, json_object *args, McpToolResult *ret, const char **ret_id, char **ret_path);
/* What worker PATH's introspection shows (MCP_NEEDS_*), or a negative errno. */
int mcp_worker_features(sd_bus *bus, const char *path);

/* run_command in a fresh worker (mcp-tools.c). */
int mcp_run_fresh(void *userdata, McpCall *call, json_object *args, McpToolResult *ret);

/* The schemas' shared properties. */
#define WORKER_ID_SCHEMA                                                                                  \
        "\"worker_id\":{\"type\":\"string\",\"description\":\"The worker's id, as create_worker or "     \
        "list_workers gave it.\"}"

#define SPEC_SCHEMA                                                                                       \
        "\"class\":{\"type\":\"string\",\"enum\":[\"trusted\",\"standard\",\"devcontainer\",\"untrusted\"," \
        "\"hostile\",\"wasm\"],\"description\":\"The isolation class. A weaker class than this server's floor " \
        "(untrusted unless its operator chose otherwise) is raised to the floor, never honoured: a model's " \
        "worker is never trusted. hostile (a VM) and wasm are refused where the host cannot serve them.\"}," \
        "\"allow\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"description\":\"Hosts the worker may " \
        "reach over HTTPS through its proxy: example.org, *.example.org, optionally with :PORT. Only patterns " \
        "inside this server's allow-list are accepted; without one the worker reaches nothing at all.\"}," \
        "\"memory\":{\"type\":[\"string\",\"integer\"],\"description\":\"Memory cap: bytes, or a number with " \
        "K, M or G (\\\"512M\\\"); at most this server's ceiling, which is the default.\"}," \
        "\"workspace\":{\"type\":\"string\",\"description\":\"A workspace (files that outlive the worker) " \
        "this server was started to offer; none otherwise.\"}"

/* The Worker-method tools (mcp-tools-worker.c). */
extern const McpTool mcp_tool_run_in_worker, mcp_tool_exec, mcp_tool_read_file, mcp_tool_write_file,
        mcp_tool_list_files;
