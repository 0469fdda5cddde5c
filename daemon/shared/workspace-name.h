/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "class.h"

/* What a spec may name as its Workspace (spec.c), apart from the workspace
 * object (workspace.h), which only the daemon's workspace layer handles. */
#define SBX_WORKSPACE_NAME_MAX 64

/* 1-64 characters of [a-z0-9_-], starting with a letter or digit: the name
 * is a file name, an object path element and a command-line argument. */
bool workspace_name_is_valid(const char *name);

/* Names are per owner: two users may each have a workspace "proj", and a
 * name another user holds is never refused nor revealed. Inside sandboxd
 * (files, a spec's Workspace once resolved, records) a workspace is its
 * key: root's name as it is, another owner's NAME.UID ("proj.1000"; a
 * workspace made before names were per owner keeps its plain name). Root
 * (and holders of manage-workspaces) name another owner's workspace by its
 * key; everyone else names only their own, by name. */
bool workspace_key_is_valid(const char *key);
/* *RET: the key of OWNER's workspace NAME (free() it). */
int workspace_key_make(const char *name, uid_t owner, char **ret);
/* Classes a workspace can back: the shared kernel and gVisor. */
bool workspace_class_is_valid(SbxClass c);
