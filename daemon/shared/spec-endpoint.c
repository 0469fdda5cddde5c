/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "spec-endpoint.h"

/* The egress proxy's listeners in a worker's namespace (egress-units.h):
 * a gate sent there would hand callers the worker's way out. */
#define PROXY_PORT_FIRST 3128
#define PROXY_PORT_LAST (3129 + 16)

void sbx_endpoint_done(SbxEndpoint *e) {
        if (e->token)
                erase_and_free(e->token, e->token_size);
        free(e->name);
        *e = (SbxEndpoint) {};
}

void sbx_endpoint_apply_defaults(SbxEndpoint *e) {
        if (!sbx_endpoint_wanted(e))
                return;
        if (!(e->set & ENDPOINT_HAS_MAX_REQUEST))
                e->max_request_bytes = SBX_ENDPOINT_BODY_DEFAULT;
        if (!(e->set & ENDPOINT_HAS_MAX_RESPONSE))
                e->max_response_bytes = SBX_ENDPOINT_BODY_DEFAULT;
        if (!(e->set & ENDPOINT_HAS_TIMEOUT))
                e->timeout_usec = SBX_ENDPOINT_TIMEOUT_DEFAULT_USEC;
        if (!(e->set & ENDPOINT_HAS_MAX_CONCURRENT))
                e->max_concurrent = SBX_ENDPOINT_CONCURRENT_DEFAULT;
}

static const struct {
        const char *key;
        const char *signature;
        SbxEndpointField flag;
} endpoint_keys[] = {
        { "Port", "q", ENDPOINT_HAS_PORT },
        { "MaxRequestBytes", "t", ENDPOINT_HAS_MAX_REQUEST },
        { "MaxResponseBytes", "t", ENDPOINT_HAS_MAX_RESPONSE },
        { "TimeoutUSec", "t", ENDPOINT_HAS_TIMEOUT },
        { "MaxConcurrent", "u", ENDPOINT_HAS_MAX_CONCURRENT },
        { "TokenCredential", "ay", ENDPOINT_HAS_TOKEN },
        { "Public", "b", ENDPOINT_HAS_PUBLIC },
        { "Name", "s", ENDPOINT_HAS_NAME },
};

bool sbx_endpoint_name_valid(const char *name) {
        size_t n = strlen(name), hex = 0;

        if (n == 0 || n > 63 || name[0] == '-' || name[n - 1] == '-')
                return false;
        for (size_t i = 0; i < n; i++) {
                char c = name[i];
                if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
                        return false;
                hex += (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
        }
        return !(n == 12 && hex == 12);
}

static int read_value(SbxEndpoint *e, SbxEndpointField flag, sd_bus_message *m) {
        const void *data;
        size_t size;
        int b, r;

        switch (flag) {
        case ENDPOINT_HAS_PORT:
                return sd_bus_message_read_basic(m, 'q', &e->port);
        case ENDPOINT_HAS_MAX_REQUEST:
                return sd_bus_message_read_basic(m, 't', &e->max_request_bytes);
        case ENDPOINT_HAS_MAX_RESPONSE:
                return sd_bus_message_read_basic(m, 't', &e->max_response_bytes);
        case ENDPOINT_HAS_TIMEOUT:
                return sd_bus_message_read_basic(m, 't', &e->timeout_usec);
        case ENDPOINT_HAS_MAX_CONCURRENT:
                return sd_bus_message_read_basic(m, 'u', &e->max_concurrent);
        case ENDPOINT_HAS_TOKEN:
                r = sd_bus_message_read_array(m, 'y', &data, &size);
                if (r < 0)
                        return r;
                e->token = malloc(size ?: 1);
                if (!e->token)
                        return -ENOMEM;
                memcpy(e->token, data, size);
                e->token_size = size;
                return 0;
        case ENDPOINT_HAS_PUBLIC:
                r = sd_bus_message_read_basic(m, 'b', &b);
                e->public = b;
                return r;
        case ENDPOINT_HAS_NAME: {
                const char *s;
                r = sd_bus_message_read_basic(m, 's', &s);
                if (r < 0)
                        return r;
                e->name = strdup(s);
                return e->name ? 0 : -ENOMEM;
        }
        }
        return -EINVAL;
}

int sbx_endpoint_from_bus(SbxEndpoint *e, sd_bus_message *m, SbxError *error) {
        int r;

        r = sd_bus_message_enter_container(m, 'a', "{sv}");
        if (r < 0)
                return r;
        for (;;) {
                const char *key, *contents;
                size_t i;

                r = sd_bus_message_enter_container(m, 'e', "sv");
                if (r < 0)
                        return r;
                if (r == 0)
                        break;
                r = sd_bus_message_read_basic(m, 's', &key);
                if (r < 0)
                        return r;
                for (i = 0; i < ELEMENTSOF(endpoint_keys); i++)
                        if (streq(endpoint_keys[i].key, key))
                                break;
                if (i == ELEMENTSOF(endpoint_keys))
                        return sbx_error_set(error, -EINVAL, SBX_ERROR_INVALID_ENDPOINT,
                                             "Endpoint: unknown key \"%.64s\"; use Port, MaxRequestBytes, "
                                             "MaxResponseBytes, TimeoutUSec, MaxConcurrent, TokenCredential, Public or Name",
                                             key);
                if (e->set & endpoint_keys[i].flag)
                        return sbx_error_set(error, -EINVAL, SBX_ERROR_INVALID_ENDPOINT,
                                             "Endpoint: key %s is given more than once", key);
                e->set |= endpoint_keys[i].flag;
                r = sd_bus_message_peek_type(m, NULL, &contents);
                if (r < 0)
                        return r;
                if (!streq(contents, endpoint_keys[i].signature))
                        return sbx_error_set(error, -EINVAL, SBX_ERROR_WRONG_TYPE,
                                             "Endpoint: key %s must be of type %s, not %s", key,
                                             endpoint_keys[i].signature, contents);
                r = sd_bus_message_enter_container(m, 'v', contents);
                if (r >= 0)
                        r = read_value(e, endpoint_keys[i].flag, m);
                if (r >= 0)
                        r = sd_bus_message_exit_container(m);
                if (r >= 0)
                        r = sd_bus_message_exit_container(m);
                if (r < 0)
                        return r;
        }
        r = sd_bus_message_exit_container(m);
        if (r < 0)
                return r;
        /* An empty a{sv} asks for an endpoint all the same: without a port it is refused. */
        e->requested = true;
        return 0;
}

static int refuse(SbxError *error, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int refuse(SbxError *error, const char *fmt, ...) {
        char message[512];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(message, sizeof(message), fmt, ap);
        va_end(ap);
        return sbx_error_set(error, -EINVAL, SBX_ERROR_INVALID_ENDPOINT, "%s", message);
}

int sbx_endpoint_validate(const SbxEndpoint *e, SbxClass class, const SbxConfig *c, SbxError *error) {
        if (!sbx_endpoint_wanted(e))
                return 0;
        if (!(e->set & ENDPOINT_HAS_PORT) || e->port == 0)
                return refuse(error, "Endpoint needs Port, where the handler listens in the worker (1-65535)");
        if (e->port >= PROXY_PORT_FIRST && e->port <= PROXY_PORT_LAST)
                return refuse(error, "Endpoint Port %u is the egress proxy's (%d-%d): choose another",
                              (unsigned) e->port, PROXY_PORT_FIRST, PROXY_PORT_LAST);
        if (class == SBX_CLASS_HOSTILE || class == SBX_CLASS_WASM)
                return refuse(error, "Endpoint is served for trusted, standard, devcontainer and untrusted workers, "
                              "not %s", sbx_class_to_string(class));
        if (e->name && !sbx_endpoint_name_valid(e->name))
                return refuse(error, "Endpoint Name must be 1 to 63 lowercase letters, digits and inner hyphens, "
                              "and not 12 hex digits (a worker id)");
        if ((e->set & ENDPOINT_HAS_TOKEN) && e->public)
                return refuse(error, "Endpoint has a TokenCredential and Public=true: give one");
        if (e->public) {
                if (!c->endpoints_allow_public)
                        return refuse(error, "Endpoint Public=true is not allowed on this host "
                                      "([Endpoints] AllowPublic= in sandboxd.conf)");
                if (c->endpoints_port_range && c->endpoints_port_range[0])
                        return refuse(error, "Endpoint Public=true is refused where endpoints also listen on TCP "
                                      "([Endpoints] PortRange=): there the token is the only wall");
        } else {
                if (!(e->set & ENDPOINT_HAS_TOKEN))
                        return refuse(error, "Endpoint needs a TokenCredential (or Public=true where allowed)");
                if (e->token_size < SBX_ENDPOINT_TOKEN_MIN || e->token_size > SBX_ENDPOINT_TOKEN_MAX)
                        return refuse(error, "Endpoint TokenCredential must be %d to %d bytes",
                                      SBX_ENDPOINT_TOKEN_MIN, SBX_ENDPOINT_TOKEN_MAX);
                for (size_t i = 0; i < e->token_size; i++)
                        if (e->token[i] <= 0x20 || e->token[i] >= 0x7f)
                                /* Never the byte: it is part of the secret. */
                                return refuse(error, "Endpoint TokenCredential must be printable ASCII without "
                                              "spaces: it travels as \"Authorization: Bearer <token>\"");
        }
        if (e->max_request_bytes > c->endpoints_max_request_bytes)
                return refuse(error, "Endpoint MaxRequestBytes %" PRIu64 " is above this host's %" PRIu64
                              " ([Endpoints] MaxRequestBytes=)", e->max_request_bytes, c->endpoints_max_request_bytes);
        if (e->max_response_bytes == 0 || e->max_response_bytes > c->endpoints_max_response_bytes)
                return refuse(error, "Endpoint MaxResponseBytes must be 1 to %" PRIu64 " ([Endpoints] MaxResponseBytes=)",
                              c->endpoints_max_response_bytes);
        if (e->timeout_usec < 1000 || e->timeout_usec > SBX_ENDPOINT_TIMEOUT_MAX_USEC)
                return refuse(error, "Endpoint TimeoutUSec must be 1ms to 1h");
        if (e->max_concurrent == 0 || e->max_concurrent > SBX_ENDPOINT_CONCURRENT_MAX)
                return refuse(error, "Endpoint MaxConcurrent must be 1 to %d", SBX_ENDPOINT_CONCURRENT_MAX);
        return 0;
}

int sbx_endpoint_socket_path(const char *worker_id, char **ret) {
        return asprintf(ret, SBX_ENDPOINTS_DIR "/%s.sock", worker_id) < 0 ? -ENOMEM : 0;
}
