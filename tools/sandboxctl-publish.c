/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <string.h>

#include "parse-util.h"
#include "sandboxctl-publish.h"
#include "sandboxctl-spec.h"

void cli_publish_done(CliPublish *p) {
        if (p->token)
                erase_and_free(p->token, p->token_size);
        free(p->name);
        *p = (CliPublish) {};
}

static int read_token(CliPublish *p, const char *path, SbxError *error) {
        int r;

        if (p->token)
                erase_and_free(p->token, p->token_size);
        p->token = NULL;
        p->token_size = 0;
        r = credential_read_file(path, &p->token, &p->token_size);
        if (r < 0)
                return sbx_error_set(error, r == -EINVAL ? -EIO : r, NULL, "Failed to read the token from %s: %s",
                                     path, strerror(-r));
        /* A token kept in a text file ends with a newline: not part of it. */
        if (p->token_size > 0 && p->token[p->token_size - 1] == '\n')
                p->token[--p->token_size] = 0;
        if (p->token_size > 0 && p->token[p->token_size - 1] == '\r')
                p->token[--p->token_size] = 0;
        return 0;
}

int cli_publish_apply(CliPublish *p, CliPublishOption option, const char *arg, SbxError *error) {
        uint64_t v;
        int r;

        switch (option) {
        case CLI_PUBLISH_PORT:
                if (parse_uint64(arg, &v) < 0 || v == 0 || v > 65535)
                        return sbx_error_set(error, EINVAL, NULL, "--publish expects the worker's port (1-65535), got '%s'",
                                             arg);
                p->port = (uint16_t) v;
                p->set = true;
                return 0;
        case CLI_PUBLISH_TOKEN_FILE:
                return read_token(p, arg, error);
        case CLI_PUBLISH_MAX_REQUEST:
        case CLI_PUBLISH_MAX_RESPONSE:
                r = parse_size(arg, &v);
                if (r < 0)
                        return sbx_error_set(error, EINVAL, NULL, "--publish-max-%s: invalid size '%s'",
                                             option == CLI_PUBLISH_MAX_REQUEST ? "request" : "response", arg);
                if (option == CLI_PUBLISH_MAX_REQUEST) {
                        p->max_request_bytes = v;
                        p->has_max_request = true;
                } else {
                        p->max_response_bytes = v;
                        p->has_max_response = true;
                }
                return 0;
        case CLI_PUBLISH_TIMEOUT:
                if (parse_duration_usec(arg, &p->timeout_usec) < 0)
                        return sbx_error_set(error, EINVAL, NULL, "--publish-timeout: invalid duration '%s'", arg);
                p->has_timeout = true;
                return 0;
        case CLI_PUBLISH_MAX_CONCURRENT:
                if (parse_uint64(arg, &v) < 0 || v > UINT32_MAX)
                        return sbx_error_set(error, EINVAL, NULL, "--publish-max-concurrent: invalid number '%s'", arg);
                p->max_concurrent = (uint32_t) v;
                p->has_max_concurrent = true;
                return 0;
        case CLI_PUBLISH_PUBLIC:
                p->public = true;
                return 0;
        case CLI_PUBLISH_NAME:
                free(p->name);
                p->name = strdup(arg);
                return p->name ? 0 : sbx_error_set(error, ENOMEM, NULL, "Out of memory");
        }
        return sbx_error_set(error, EINVAL, NULL, "Unhandled option");
}

int cli_publish_check(const CliPublish *p, SbxError *error) {
        if (!p->set && (p->token || p->public || p->name || p->has_max_request || p->has_max_response || p->has_timeout ||
                        p->has_max_concurrent))
                return sbx_error_set(error, EINVAL, NULL, "--publish-* options need --publish PORT");
        return 0;
}

#define CHECK(expr) do { r = (expr); if (r < 0) return r; } while (0)

int cli_publish_append(sd_bus_message *m, const CliPublish *p) {
        int r;

        if (!p->set)
                return 0;
        CHECK(sd_bus_message_open_container(m, 'e', "sv"));
        CHECK(sd_bus_message_append(m, "s", "Endpoint"));
        CHECK(sd_bus_message_open_container(m, 'v', "a{sv}"));
        CHECK(sd_bus_message_open_container(m, 'a', "{sv}"));
        CHECK(sd_bus_message_append(m, "{sv}", "Port", "q", p->port));
        if (p->has_max_request)
                CHECK(sd_bus_message_append(m, "{sv}", "MaxRequestBytes", "t", p->max_request_bytes));
        if (p->has_max_response)
                CHECK(sd_bus_message_append(m, "{sv}", "MaxResponseBytes", "t", p->max_response_bytes));
        if (p->has_timeout)
                CHECK(sd_bus_message_append(m, "{sv}", "TimeoutUSec", "t", p->timeout_usec));
        if (p->has_max_concurrent)
                CHECK(sd_bus_message_append(m, "{sv}", "MaxConcurrent", "u", p->max_concurrent));
        if (p->public)
                CHECK(sd_bus_message_append(m, "{sv}", "Public", "b", 1));
        if (p->name)
                CHECK(sd_bus_message_append(m, "{sv}", "Name", "s", p->name));
        if (p->token) {
                CHECK(sd_bus_message_open_container(m, 'e', "sv"));
                CHECK(sd_bus_message_append(m, "s", "TokenCredential"));
                CHECK(sd_bus_message_open_container(m, 'v', "ay"));
                CHECK(sd_bus_message_append_array(m, 'y', p->token, p->token_size));
                CHECK(sd_bus_message_close_container(m));
                CHECK(sd_bus_message_close_container(m));
        }
        CHECK(sd_bus_message_close_container(m));
        CHECK(sd_bus_message_close_container(m));
        return sd_bus_message_close_container(m);
}
