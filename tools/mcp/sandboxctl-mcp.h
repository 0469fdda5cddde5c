/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* `sandboxctl mcp`: a Model Context Protocol server over the bus API
 * (sandboxctl(1), docs/mcp.md). */

#include "sandboxctl-spec.h"

/* argv[0] is "mcp". Returns sandboxctl's exit status. */
int mcp_verb_run(int argc, char *argv[], CliGlobalOption global, const char *version);
