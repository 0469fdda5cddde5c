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
 * The home is the disk's, bound on the worker's home inside its unit's own
 * mount namespace: by systemd (BindPaths=) for a shared-kernel worker, by
 * the launcher for gVisor and Kata. So each worker adds one mount to the
 * host's table, outside the paths systemd unmounts below in every unit it
 * starts. The image goes with the home (worker_delete_home, the wipe
 * at boot, the sweep of unknown workers after a restart). */

int worker_disk_unit_name(const char *id, char **ret);

/* Why a start job of a worker whose disk cap is DISK_BYTES ended with
 * RESULT, into BUF: "dependency" names the disk unit, the first thing a host
 * without loop devices fails (fail closed: no worker runs without its cap). */
void worker_disk_start_job_why(const char *id, uint64_t disk_bytes, const char *result, char *buf, size_t size);

/* Appends the (sa(sv)) aux-unit entry of ID's disk unit, an image of BYTES
 * made with MKFS_PATH. Its home is bound nowhere on the host: the worker's
 * unit binds it (a shared-kernel worker's), or its launcher (gVisor, Kata). */
int worker_disk_append_aux_unit(sd_bus_message *m, const char *id, uint64_t bytes, const char *mkfs_path);

/* Requires= and After= on ID's disk unit, inside the unit's a(sv) array; for
 * a worker whose runtime gives it neither a home nor a /tmp of its own
 * (SHARED_KERNEL: the shared kernel, wasm) also BindPaths= of the disk's home
 * on the home and of its tmp on /tmp (a bind wins over PrivateTmp=, a
 * TemporaryFileSystem= does not), and the ExecStartPre=+ that gives the home
 * to the worker's UID. */
int worker_disk_append_dependency(sd_bus_message *m, const char *id, bool shared_kernel);
/* Whether a worker of RUNTIME has its disk's home bound by its launcher
 * (gVisor, Kata), or by its unit (the shared kernel, wasm). */
bool worker_disk_bound_by_launcher(SbxRuntime runtime);

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
