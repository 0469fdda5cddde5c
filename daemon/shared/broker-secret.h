/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A broker service's secret as sandboxd keeps it across its own restart: a
 * sealed memfd in systemd's fd store, which only root can reach and nobody
 * can change, and never a file (the worker-state file holds no secret). */

#include <stddef.h>
#include <stdint.h>

/* A memfd holding DATA, sealed against writes, growing and shrinking, and
 * against further seals. Returns the fd or a negative errno. */
int broker_secret_memfd(const uint8_t *data, size_t size);

/* Reads back what broker_secret_memfd() stored: -EPERM for an fd that is not
 * a memfd sealed that way (it could have been changed since), -E2BIG for one
 * larger than MAX, -EBADMSG for an empty one. *RET is the caller's to wipe. */
int broker_secret_read(int fd, size_t max, uint8_t **ret, size_t *ret_size);

/* The fd store's name of worker ID's secret for service NAME:
 * "secret-<id>-<name>". */
int broker_secret_fdname(const char *id, const char *name, char *buf, size_t size);
