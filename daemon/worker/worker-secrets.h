/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The Credentials and Environment of a worker that can be suspended. A
 * resumed unit must be given exactly what its sandbox was saved with (the
 * restored processes read the same credential files), so for such a worker
 * sandboxd keeps them, where they were at creation (the spec, and the
 * environment's encoded credential), until the worker ends, instead of
 * wiping them once its unit started. Across a restart of sandboxd they are
 * kept as broker secrets are (broker-secret.h): one sealed memfd in systemd's
 * fd store, named "cred-<id>"; the worker's state file says only that there
 * is one. Never a file. Everything is wiped when the worker ends. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fdstore.h"
#include "spec.h"
#include "worker.h"

/* Whether a worker with SPEC on RUNTIME keeps its secrets: it has some, and
 * it could be suspended (worker_check_suspendable()). */
bool worker_secrets_wanted(const WorkerSpec *spec, SbxRuntime runtime);

/* Sets W->secrets.keep as worker_secrets_wanted() says, and encodes the
 * environment's credential if it is kept and not encoded yet. */
int worker_secrets_keep(Worker *w);

/* A worker that has Credentials or an Environment it did not keep: a resumed
 * unit could not get them back. */
bool worker_secrets_missing(const Worker *w);

/* The unit has them now: the daemon's copy goes, unless it is kept. */
void worker_secrets_started(Worker *w);

/* Whether the credential socket may serve the worker unit's own credentials
 * now: while it starts, and while a unit of a worker that kept them resumes. */
bool worker_secrets_servable(const Worker *w);

/* One buffer holding the credentials, and the environment under
 * SBX_ENV_CREDENTIAL: per entry its name, a NUL, its size as a little-endian
 * uint32, its bytes. The caller wipes it (erase_and_free). */
int worker_secrets_encode(const Worker *w, uint8_t **ret, size_t *ret_size);
/* Into W's spec and environment credential: -EBADMSG for anything
 * worker_secrets_encode() could not have written (a bad or duplicate name, a
 * size past the end, an empty buffer, an invalid environment). */
int worker_secrets_decode(Worker *w, const uint8_t *data, size_t size);

/* "cred-<id>". */
int worker_secrets_fdname(const char *id, char *buf, size_t size);

/* Hands the copy to systemd's fd store, once per worker (a resume pushes
 * nothing new: the entry is still there). */
int worker_secrets_persist(Worker *w);

/* Removes it from the fd store and wipes the daemon's copy. */
void worker_secrets_forget(Worker *w);

/* After a restart, for a worker whose state file says it kept its secrets:
 * takes them back from FDS. -ENOKEY when the entry is missing or not what
 * sandboxd stored (then it is removed from systemd's store too). */
int worker_secrets_restore(Worker *w, FdStore *fds);
