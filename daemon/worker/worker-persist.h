/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>

#include "worker.h"

/* A restart of sandboxd is not a boot. What a running worker needs to be
 * accounted for again is kept outside the process: its summary in a state
 * file (worker-state-file.h) and the daemon's ends of its stdio pipes in
 * systemd's file descriptor store, both written before CreateWorker is
 * answered, so that even a kill -9 right after the reply loses nothing. */

/* At the start job's success: stores the channel's ends and the broker's
 * secrets (worker-broker.h) and writes the state. */
int worker_persist(Worker *w);
/* At a resume's start: stores only the new channel's ends, so that a
 * restart after the restored sandbox ran can adopt it (the record says
 * suspended until the resume is done). */
int worker_persist_channel(Worker *w);
/* A resume that failed: the stored channel's ends go. */
void worker_forget_channel(Worker *w);
/* Rewrites the state file (the last activity moves on). */
int worker_save_state(Worker *w);
/* The same record as DIR/<id> (suspend-keep.h). */
int worker_save_state_in(Worker *w, const char *dir);
/* The record of a running worker whose checkpoint UNIT is about to start:
 * written before it starts, so that a restart of sandboxd meanwhile adopts
 * it as suspending (adopt.c), not as a running worker whose unit ends. */
int worker_save_state_suspending(Worker *w, const char *unit, uint64_t budget);
/* The worker ended: its state file and stored fds go, its broker secrets are wiped. */
void worker_forget(Worker *w);
/* The daemon closed its end of the worker's stdin: systemd's copy must go
 * too, or the worker never sees its EOF. */
void worker_forget_stdin(Worker *w);

/* The names of a worker's stdio ends in systemd's fd store: "<id>-stdin",
 * "-stdout", "-stderr" for I from 0 to WORKER_N_STDIO - 1 (adopt.c finds
 * them again after a restart). */
#define WORKER_N_STDIO 3
void worker_fd_name(char *buf, size_t size, const char *id, size_t i);
