/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The tools `sandboxctl mcp` offers, each a call (or a few) of the
 * org.sandboxd1 bus API made as the user who started the server: polkit
 * decides as it does for sandboxctl, and a refusal reaches the model as a
 * tool error carrying the D-Bus error's name. Each tool opens its own bus
 * connection, so tools run in parallel threads. */

#include "mcp-core.h"
#include "mcp-policy.h"

typedef struct McpToolsContext {
        McpPolicy policy;
        bool ask_password;              /* let polkit ask the user's agent */
} McpToolsContext;

/* The tools, for McpServer.tools; userdata is an McpToolsContext. */
extern const McpTool * const mcp_tools[];
extern const size_t mcp_tools_count;

/* The instructions initialize hands the host, saying what the sandbox is. */
extern const char mcp_instructions[];
