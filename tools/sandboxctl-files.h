/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* sandboxctl cp and ls: files in and out of a worker's home over the
 * Worker's file methods (org.sandboxd1(5), FILES). The bytes go through the
 * pipe OpenFile hands out, never over the bus. */

#include <stdbool.h>
#include <stdio.h>
#include <systemd/sd-bus.h>

/* "ID:PATH" names a place in worker ID's home (ID: the part before the
 * first ':', which holds no '/'): 1 with *RET_ID and *RET_PATH set (an empty
 * PATH is the home); 0 for a local path (write "./a:b" for a local name
 * with a colon); -ENOMEM. */
int files_split_remote(const char *arg, char **ret_id, char **ret_path);

typedef struct FilesCopy {
        sd_bus *bus;
        const char *worker;     /* the worker's object path */
        bool recursive;
        FILE *err;              /* warnings (a symlink skipped) go here */
        sd_bus_error *error;    /* the daemon's error of a failed call */
} FilesCopy;

/* LOCAL ("-": stdin) into REMOTE: a file through an atomic replace (the
 * old file stays whole until the copy is committed), a directory with
 * c->recursive. REMOTE an existing directory (or ending in '/'): the copy
 * goes inside it, under LOCAL's name, as cp does. */
int files_copy_in(const FilesCopy *c, const char *local, const char *remote);
/* REMOTE out to LOCAL ("-": stdout), the same way round. */
int files_copy_out(const FilesCopy *c, const char *remote, const char *local);

/* Prints ListDirectory's a(sstutuu), sorted by name, as a table or JSON. */
int files_list_print(sd_bus_message *reply, bool json, bool legend, FILE *f);
/* One Stat reply as the same table or JSON. */
int files_stat_print(sd_bus_message *reply, bool json, bool legend, FILE *f);
