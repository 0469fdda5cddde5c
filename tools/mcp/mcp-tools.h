/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The tools `sandboxctl mcp` offers, each a call (or a few) of the
 * org.sandboxd1 bus API made as the user who started the server: polkit
 * decides as it does for sandboxctl, and a refusal reaches the model as a
 * tool error carrying the D-Bus error's name. Each tool opens its own bus
 * connection, so tools run in parallel threads. */

#include <pthread.h>

#include "mcp-core.h"
#include "mcp-policy.h"

/* The Worker methods some tools need (issue 24), as the daemon's
 * introspection of a worker shows them with these exact signatures. */
#define MCP_NEEDS_EXEC  1u      /* Exec(as, a{sv}) -> (o, ah) */
#define MCP_NEEDS_FILES 2u      /* OpenFile(s, s, a{sv}) -> (h, s), CommitFile(s) -> t, ListDirectory(s) -> a(sstutuu) */

typedef struct McpToolsContext {
        McpPolicy policy;
        bool ask_password;              /* let polkit ask the user's agent */
        pthread_mutex_t lock;
        unsigned features;              /* MCP_NEEDS_*: what a worker's introspection showed */
        uint64_t features_checked;      /* CLOCK_MONOTONIC; 0: never */
} McpToolsContext;

/* McpServer.tool_available: a tool that needs a Worker method is offered
 * only once one of this user's workers shows it. */
bool mcp_tools_available(void *userdata, const McpTool *tool);

/* The MCP_NEEDS_* a Worker object's introspection XML shows (pure). */
unsigned mcp_introspect_features(const char *xml);

/* The tools, for McpServer.tools; userdata is an McpToolsContext. */
extern const McpTool * const mcp_tools[];
extern const size_t mcp_tools_count;

/* The instructions initialize hands the host, saying what the sandbox is. */
extern const char mcp_instructions[];
