/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A spec's Services: upstreams the worker calls with plain HTTP on a
 * loopback listener while the egress proxy holds the credential and
 * injects it, so the worker never sees the secret. What is checked here is
 * what the broker relies on: an https origin it can verify, header parts
 * that cannot split a request, methods and path prefixes it can compare
 * byte for byte. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "spec.h"
#include "util.h"

#define SBX_SERVICE_NAME_MAX 32
#define SBX_SERVICE_URL_MAX 1024
#define SBX_SERVICE_PATH_MAX 1024
#define SBX_SERVICE_PATHS_MAX 64
#define SBX_SERVICE_METHODS_MAX 8
#define SBX_SERVICE_HEADER_MAX 256
/* A credential travels as one header line; servers refuse lines far shorter
 * than systemd's credential cap. */
#define SBX_SERVICE_CREDENTIAL_MAX 8192
#define SBX_SERVICE_BODY_DEFAULT (UINT64_C(1) << 20)
/* The request body is held until it is complete (a 413 must come before
 * the upstream sees a byte), so its cap is paid for in the proxy's memory. */
#define SBX_SERVICE_REQUEST_MAX (UINT64_C(16) << 20)
/* The response is streamed: its cap only bounds how long a worker may pull. */
#define SBX_SERVICE_RESPONSE_MAX (UINT64_C(1) << 30)
#define SBX_SERVICE_HEADER_DEFAULT "Authorization: Bearer {}"
#define SBX_SERVICE_METHOD_DEFAULT "GET"
#define SBX_SERVICE_PATH_DEFAULT "/"

typedef enum SbxServiceField {
        SERVICE_HAS_URL = 1 << 0,
        SERVICE_HAS_CREDENTIAL = 1 << 1,
        SERVICE_HAS_HEADER = 1 << 2,
        SERVICE_HAS_METHODS = 1 << 3,
        SERVICE_HAS_PATHS = 1 << 4,
        SERVICE_HAS_MAX_REQUEST = 1 << 5,
        SERVICE_HAS_MAX_RESPONSE = 1 << 6,
        SERVICE_HAS_RATE = 1 << 7,
} SbxServiceField;

/* The parts of a Url the broker connects to. */
typedef struct SbxServiceOrigin {
        char host[254];         /* normalised DNS name */
        uint16_t port;          /* 443 unless given */
        char base[SBX_SERVICE_PATH_MAX + 1];   /* "" or "/v1", no trailing '/' */
} SbxServiceOrigin;

/* Frees everything and wipes the credential. */
void sbx_service_done(SbxService *s);

/* The body caps the client left out. Header, Methods and Paths stay NULL
 * when not given and read through the accessors below. */
void sbx_service_apply_defaults(SbxService *s);

const char *sbx_service_header(const SbxService *s);
/* NULL-terminated; the defaults when the spec gave none. */
char * const *sbx_service_methods(const SbxService *s);
char * const *sbx_service_paths(const SbxService *s);

/* 1-32 of [A-Za-z0-9_], starting with a letter: it is part of the name of
 * the worker's SANDBOX_SERVICE_<NAME>_URL variable. */
bool sbx_service_name_is_valid(const char *name);

/* "https://host[:port][/base]": a DNS name (the proxy never connects to
 * IP literals), no user info, query or fragment. -EINVAL otherwise. */
int sbx_service_url_parse(const char *url, SbxServiceOrigin *ret);

/* An absolute path of RFC 3986 path characters, without "." or ".."
 * segments, which an upstream would resolve past an allowed prefix. */
bool sbx_service_path_is_valid(const char *path);

/* Splits "Name: template" (or "Name", template "{}"): a token name that is
 * not one of the framing or hop-by-hop headers the proxy owns, and a
 * template with exactly one "{}". -EINVAL otherwise. */
int sbx_service_header_parse(const char *header, char *name, size_t name_size, const char **ret_template);

bool sbx_service_method_is_valid(const char *method);

/* Checks the list with defaults applied; a named InvalidService or
 * LimitOutOfRange error saying what to fix. */
int sbx_services_validate(const SbxService *services, size_t n, SbxError *error);
