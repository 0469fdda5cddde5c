/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>

#include "class.h"

/* What a spec may name as its Workspace (spec.c), apart from the workspace
 * object (workspace.h), which only the daemon's workspace layer handles. */
#define SBX_WORKSPACE_NAME_MAX 64

/* 1-64 characters of [a-z0-9_-], starting with a letter or digit: the name
 * is a file name, an object path element and a command-line argument. */
bool workspace_name_is_valid(const char *name);
/* Classes a workspace can back: the shared kernel and gVisor. */
bool workspace_class_is_valid(SbxClass c);
