/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "class.h"
#include "util.h"
#include "workspace-name.h"

/* A workspace is an ext4 image, <root>/<key>.img, with its metadata beside
 * it in <root>/<key>.meta (the key: workspace-name.h). A worker gets it as its home: the unit loop-mounts
 * the image on the state directory before anything of the worker runs
 * (unit-props.c), so the cap is the file system's own size, whatever the class. */
#define SBX_WORKSPACE_ROOT "/var/lib/sandboxd/workspaces"
/* ext4 with a journal needs a few MiB of its own; below this nothing useful fits. */
#define SBX_WORKSPACE_SIZE_MIN (UINT64_C(16) * 1024 * 1024)
#define SBX_WORKSPACE_SIZE_MAX (UINT64_C(1024) * 1024 * 1024 * 1024)
#define SBX_WORKSPACES_MAX 1024

typedef struct Workspace Workspace;
struct Workspace {
        Workspace *next;
        char *name;                     /* its key (workspace-name.h): NAME or NAME.UID */
        char *label;                    /* its owner's name for it: the key up to the dot */
        char *object_path;              /* /org/sandboxd1/workspace/<label>[_U<uid>] */
        uid_t owner;
        uint64_t size_max;
        SbxClass class;                 /* the least class a worker on it runs as */
        uint64_t created_usec;
        uint64_t last_used_usec;
        char *worker_id;                /* the worker it is attached to, NULL when free */
        struct WorkspaceCreation *creating; /* being formatted: not on the bus, not usable (manager-workspace.h) */
};


int workspace_new(Workspace **ret, const char *key);
Workspace *workspace_free(Workspace *ws);
static inline void workspace_freep(Workspace **ws) { workspace_free(*ws); }

int workspace_image_path(const char *root, const char *name, char **ret);

/* Bytes the image occupies on the host's file system (it is sparse). */
uint64_t workspace_size_used(const char *root, const Workspace *ws);

/* The metadata file: written to a temporary name and renamed into place, 0600. */
int workspace_save(const char *root, const Workspace *ws);
/* Reads <root>/<name>.meta; -EINVAL for a file that is not one of ours. */
int workspace_load(const char *root, const char *name, Workspace **ret);

/* Makes the image, sparse, of SizeMax bytes and with no file system yet
 * (workspace-mkfs.h makes it; workspace_save() then completes it). -EEXIST
 * if either file exists; on failure nothing of it is left behind. */
int workspace_image_create(const char *root, const Workspace *ws);
/* Removes the image and the metadata. */
int workspace_remove(const char *root, const char *name);
