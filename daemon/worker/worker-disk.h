/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>

#include "config.h"
#include "spec.h"
#include "worker-disk-layout.h"

/* A worker's disk: its home (and a shared-kernel worker's /tmp) on an ext4
 * image of its own, so that what the worker writes stops at its cap with
 * ENOSPC and the host's file system loses at most that much. Laid out as
 * daemon/shared/worker-disk-layout.h says. A unit of its own,
 * sandbox-<id>-disk.service, makes and mounts it in the host's mount
 * namespace before the worker's unit starts (as a workspace's mount unit does;
 * mkfs runs there, never in sandboxd's event loop), and unmounts it when the
 * worker's unit stops (a suspend keeps the image; the resume mounts it again).
 * A shared-kernel worker's home is the disk's, bound on its state directory
 * on the host for systemd to bind into the unit; a launcher (gVisor, Kata)
 * binds it there in its own mount namespace, so such a worker adds one mount
 * to the host's table, outside the paths systemd unmounts below in every
 * unit it starts. The image goes with the home (worker_delete_home, the wipe
 * at boot, the sweep of unknown workers after a restart). */

int worker_disk_unit_name(const char *id, char **ret);

/* Why a start job of a worker whose disk cap is DISK_BYTES ended with
 * RESULT, into BUF: "dependency" names the disk unit, the first thing a host
 * without loop devices fails (fail closed: no worker runs without its cap). */
void worker_disk_start_job_why(const char *id, uint64_t disk_bytes, const char *result, char *buf, size_t size);

/* Appends the (sa(sv)) aux-unit entry of ID's disk unit, an image of BYTES
 * made with MKFS_PATH, its home bound on HOME_PRIVATE (the private state
 * directory), or on nothing on the host when HOME_PRIVATE is NULL (the
 * launcher binds it). */
int worker_disk_append_aux_unit(sd_bus_message *m, const char *id, const char *home_private, uint64_t bytes,
                                const char *mkfs_path);
/* Whether a worker of RUNTIME has its disk's home bound on the host (its unit
 * is its sandbox) or by its launcher. */
bool worker_disk_bound_on_host(SbxRuntime runtime);

/* Requires= and After= on ID's disk unit, and for a worker whose runtime does
 * not give it a /tmp of its own (the shared kernel, wasm) BindPaths= of the
 * disk's tmp on /tmp (a bind wins over PrivateTmp=, a TemporaryFileSystem=
 * does not). Inside the unit's a(sv) array. */
int worker_disk_append_dependency(sd_bus_message *m, const char *id, bool bind_tmp);

/* Removes ID's image and its directory; a file system still mounted is left
 * to the disk unit's ExecStop (-EXDEV), which removes what remains. */
int worker_disk_remove(const char *id);

/* KEEP: the next stop of the disk unit keeps the image and an empty home (a
 * suspend's, or a failed resume's); cleared, that stop removes both. Set
 * before a checkpoint; cleared once the worker runs again (a failed
 * checkpoint, a resume done) and before an ended worker's home goes. */
int worker_disk_mark_kept(const char *id, bool keep);

/* Admission of one more disk of WANT bytes while COMMITTED bytes of caps are
 * held and UNWRITTEN of them are not yet taken on the host (sparse images):
 * refused above Disk:TotalMax (LimitOutOfRange), or when the host's FREE
 * bytes could not hold every cap filled plus Disk:KeepFree (InsufficientSpace,
 * as for a workspace the disk cannot hold). */
int worker_disk_admit(const SbxConfig *c, uint64_t committed, uint64_t unwritten, uint64_t want, uint64_t free,
                      SbxError *error);

/* What ID's image of BYTES still may take on the host: its size minus its
 * blocks, or BYTES while it is not made yet. */
uint64_t worker_disk_unwritten(const char *id, uint64_t bytes);
