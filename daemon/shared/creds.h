/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-event.h>

#include "spec.h"

/* Serves worker secrets from memory to systemd's LoadCredential= socket
 * client. systemd connects from an abstract address of the form
 * "\0<random>/unit/<unit>/<credential>", which names who is asking; the
 * socket itself is reachable by root only. */
typedef struct CredentialServer CredentialServer;

/* Sets *RET_DATA and *RET_SIZE to what UNIT may have as credential NAME (the
 * bytes stay the caller's) and returns 0, or -ENOENT when it may have none. */
typedef int (*CredentialLookupFn)(const char *unit, const char *name, void *userdata, const uint8_t **ret_data,
                                  size_t *ret_size);

int credential_server_new(CredentialServer **ret, sd_event *event, const char *path,
                          CredentialLookupFn lookup, void *userdata);
/* 0 while the socket file bound is still at its path; -ENOENT once it was
 * removed, -ESTALE once something else took the path: systemd, which
 * connects by path, could not reach the server. */
int credential_server_reachable(const CredentialServer *s);
CredentialServer *credential_server_free(CredentialServer *s);

/* Parses systemd's peer address. Returns 0 and pointers into a copy the
 * caller frees via *ret_buf, or -EBADMSG. Exposed for the unit tests. */
int credential_peer_parse(const char *addr, size_t len, char **ret_buf, const char **ret_unit, const char **ret_name);
