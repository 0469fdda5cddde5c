/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A worker's spec Environment is a secret like its credentials: it reaches
 * the worker as one internal credential from sandboxd's root-only socket,
 * never through Environment=, a command line or a bus property. The
 * unprivileged exec wrapper (trusted and wasm workers) or the launcher
 * (gVisor, Kata) turns it into the workload's environment.
 *
 * Encoding: each entry "NAME=VALUE" followed by one NUL; no environment is
 * zero bytes. Values may hold any byte but NUL, newlines included. */
#define SBX_ENV_CREDENTIAL "sandboxd.environment"
/* Credential names starting with this belong to sandboxd; a spec's are refused. */
#define SBX_RESERVED_CREDENTIAL_PREFIX "sandboxd."
/* Where systemd mounts a worker unit's credentials; derived from the worker
 * id, never from $CREDENTIALS_DIRECTORY, which whoever runs a program sets. */
#define SBX_UNIT_CREDENTIALS_ROOT "/run/credentials"

bool credential_name_is_reserved(const char *name);

/* An environment variable name as POSIX shells accept it: [A-Za-z_][A-Za-z0-9_]*,
 * N bytes of S, at most 255. */
bool environment_name_is_valid(const char *s, size_t n);

/* ENV NULL or empty gives *ret NULL and *ret_size 0. The caller erases the
 * buffer (erase_and_free) once it is delivered. */
int env_credential_encode(char * const *env, uint8_t **ret, size_t *ret_size);

/* Refuses (-EBADMSG) a last entry without its NUL, an empty entry, an entry
 * without '=' or with an invalid name, and more than SBX_ENV_MAX entries.
 * Zero bytes gives an empty (non-NULL) list. */
int env_credential_decode(const uint8_t *data, size_t size, char ***ret);

/* "/run/credentials/sandbox-ID.service", the worker unit's own credentials
 * directory. -EINVAL when ID could not be a worker id. */
int env_credential_dir(const char *id, char **ret);

/* Reads and decodes DIR/sandboxd.environment: -ENOENT when the unit has no
 * such credential (its spec had no Environment), -EBADMSG when it is
 * malformed or not a regular file, -EFBIG when larger than a credential can be. */
int env_credential_read(const char *dir, char ***ret);
