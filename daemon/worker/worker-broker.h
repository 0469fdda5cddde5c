/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A worker's broker secrets on the daemon's side: served to its proxy unit
 * only, kept across a restart of sandboxd as sealed memfds in systemd's fd
 * store, and wiped when the worker ends. They live in the worker's spec
 * (its Services' Credential) and nowhere else in sandboxd. */

#include "fdstore.h"
#include "worker.h"

/* What the worker's proxy unit may load as credential NAME: its
 * "egress-policy", or "broker-<service>" for one of the worker's Services.
 * -ENOENT for anything else. */
int worker_proxy_credential(const Worker *w, const char *name, const uint8_t **ret_data, size_t *ret_size);

/* Hands each secret to systemd's fd store as secret-<id>-<service>. */
int worker_broker_persist(Worker *w);

/* Removes them from the fd store and wipes the daemon's copies. */
void worker_broker_forget(Worker *w);

/* After a restart: the Services named by the worker's egress policy, each
 * with the secret taken back from FDS. -ENOKEY when one is missing or not
 * what sandboxd stored, which leaves the worker unaccounted for. */
int worker_broker_restore(Worker *w, FdStore *fds);
