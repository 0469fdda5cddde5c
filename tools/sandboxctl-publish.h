/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* run/create's --publish options: the spec's Endpoint (org.sandboxd1(5)),
 * the worker's port served through its gate. The token file is read with
 * the caller's own permissions and sent as TokenCredential, never printed. */

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-bus.h>

#include "util.h"

typedef struct CliPublish {
        bool set;
        uint16_t port;
        uint8_t *token;
        size_t token_size;
        bool public;
        bool has_max_request, has_max_response, has_timeout, has_max_concurrent;
        uint64_t max_request_bytes, max_response_bytes, timeout_usec;
        uint32_t max_concurrent;
        char *name;                     /* --publish-name: the EndpointName, checked by sandboxd */
} CliPublish;

typedef enum CliPublishOption {
        CLI_PUBLISH_PORT,
        CLI_PUBLISH_TOKEN_FILE,
        CLI_PUBLISH_MAX_REQUEST,
        CLI_PUBLISH_MAX_RESPONSE,
        CLI_PUBLISH_TIMEOUT,
        CLI_PUBLISH_MAX_CONCURRENT,
        CLI_PUBLISH_PUBLIC,
        CLI_PUBLISH_NAME,
} CliPublishOption;

void cli_publish_done(CliPublish *p);
int cli_publish_apply(CliPublish *p, CliPublishOption option, const char *arg, SbxError *error);
/* A --publish-* option without --publish. */
int cli_publish_check(const CliPublish *p, SbxError *error);
/* The Endpoint entry ({sv}) inside the spec's a{sv}, if --publish was given. */
int cli_publish_append(sd_bus_message *m, const CliPublish *p);
