/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <inttypes.h>
#include <strings.h>

#include "broker-path.h"
#include "egress-host.h"
#include "errors.h"
#include "http-token.h"
#include "spec-service.h"

static char * const default_methods[] = { (char *) SBX_SERVICE_METHOD_DEFAULT, NULL };
static char * const default_paths[] = { (char *) SBX_SERVICE_PATH_DEFAULT, NULL };

/* Methods with a body or an effect an API key plausibly authorises.
 * CONNECT would make the broker a tunnel, TRACE echoes the injected header. */
static const char * const known_methods[] = { "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS" };

/* Framing and hop-by-hop headers are the proxy's: letting a service inject
 * one would let a spec change how the upstream splits requests. */
static const char * const reserved_headers[] = {
        "Host", "Content-Length", "Transfer-Encoding", "Connection", "Keep-Alive", "TE", "Trailer",
        "Upgrade", "Proxy-Connection", "Expect",
};

void sbx_service_done(SbxService *s) {
        free(s->name);
        free(s->url);
        erase_and_free(s->credential, s->credential_size);
        free(s->header);
        strv_free(s->methods);
        strv_free(s->paths);
        *s = (SbxService) {};
}

void sbx_service_apply_defaults(SbxService *s) {
        if (!(s->set & SERVICE_HAS_MAX_REQUEST))
                s->max_request_bytes = SBX_SERVICE_BODY_DEFAULT;
        if (!(s->set & SERVICE_HAS_MAX_RESPONSE))
                s->max_response_bytes = SBX_SERVICE_BODY_DEFAULT;
}

const char *sbx_service_header(const SbxService *s) {
        return s->header ?: SBX_SERVICE_HEADER_DEFAULT;
}

char * const *sbx_service_methods(const SbxService *s) {
        return s->methods && s->methods[0] ? s->methods : default_methods;
}

char * const *sbx_service_paths(const SbxService *s) {
        return s->paths && s->paths[0] ? s->paths : default_paths;
}

bool sbx_service_name_is_valid(const char *name) {
        size_t n = name ? strlen(name) : 0;

        if (n == 0 || n > SBX_SERVICE_NAME_MAX || !isalpha((unsigned char) name[0]))
                return false;
        for (size_t i = 0; i < n; i++)
                if (!isalnum((unsigned char) name[i]) && name[i] != '_')
                        return false;
        return true;
}

bool sbx_service_path_is_valid(const char *path) {
        size_t n = path ? strlen(path) : 0;
        return n > 0 && n <= SBX_SERVICE_PATH_MAX && broker_path_is_valid(path, n);
}

int sbx_service_url_parse(const char *url, SbxServiceOrigin *ret) {
        char host[EGRESS_HOST_MAX + 2];
        const char *p, *end, *slash;
        EgressHostKind kind;
        uint16_t port = EGRESS_DEFAULT_PORT;
        size_t host_len;

        if (!url || strlen(url) > SBX_SERVICE_URL_MAX || strncasecmp(url, "https://", 8) != 0)
                return -EINVAL;
        p = url + 8;
        slash = p + strcspn(p, "/");
        /* User info would be a second secret outside the broker's care; a
         * query or fragment has no place in an origin. */
        if (memchr(p, '@', (size_t) (slash - p)) || strpbrk(p, "?#"))
                return -EINVAL;
        end = memchr(p, ':', (size_t) (slash - p));
        host_len = (size_t) ((end ?: slash) - p);
        if (host_len == 0 || host_len > EGRESS_HOST_MAX || *p == '[')
                return -EINVAL;
        if (end) {
                uint32_t v = 0;
                const char *d = end + 1;
                if (d == slash || slash - d > 5)
                        return -EINVAL;
                for (; d < slash; d++) {
                        if (!isdigit((unsigned char) *d))
                                return -EINVAL;
                        v = v * 10 + (uint32_t) (*d - '0');
                }
                if (v == 0 || v > 65535)
                        return -EINVAL;
                port = (uint16_t) v;
        }
        memcpy(host, p, host_len);
        host[host_len] = 0;
        *ret = (SbxServiceOrigin) { .port = port };
        if (egress_host_normalize(host, false, ret->host, sizeof(ret->host), &kind) < 0 || kind != EGRESS_HOST_NAME)
                return -EINVAL;
        if (*slash) {
                size_t base_len = strlen(slash);
                if (!sbx_service_path_is_valid(slash) || base_len > SBX_SERVICE_PATH_MAX)
                        return -EINVAL;
                /* "/v1/" and "/v1" are one base: the worker's path follows it. */
                while (base_len > 0 && slash[base_len - 1] == '/')
                        base_len--;
                memcpy(ret->base, slash, base_len);
                ret->base[base_len] = 0;
        }
        return 0;
}

/* A field-value's visible characters and inner spaces: no CR, LF or NUL to
 * split the request, no other control characters, no obs-text. */
static bool header_value_is_valid(const uint8_t *v, size_t n) {
        if (n > 0 && (v[0] == ' ' || v[0] == '\t' || v[n - 1] == ' ' || v[n - 1] == '\t'))
                return false;
        for (size_t i = 0; i < n; i++)
                if ((v[i] < 0x20 && v[i] != '\t') || v[i] >= 0x7f)
                        return false;
        return true;
}

int sbx_service_header_parse(const char *header, char *name, size_t name_size, const char **ret_template) {
        const char *colon, *tmpl, *brace;
        size_t n;

        if (!header || strlen(header) > SBX_SERVICE_HEADER_MAX)
                return -EINVAL;
        colon = strchr(header, ':');
        n = colon ? (size_t) (colon - header) : strlen(header);
        if (n == 0 || n >= name_size)
                return -EINVAL;
        for (size_t i = 0; i < n; i++)
                if (!http_is_tchar((uint8_t) header[i]))
                        return -EINVAL;
        memcpy(name, header, n);
        name[n] = 0;
        for (size_t i = 0; i < ELEMENTSOF(reserved_headers); i++)
                if (strcasecmp(name, reserved_headers[i]) == 0)
                        return -EPERM;
        tmpl = "{}";
        if (colon) {
                tmpl = colon + 1;
                tmpl += strspn(tmpl, " \t");
        }
        brace = strstr(tmpl, "{}");
        if (!brace || strstr(brace + 2, "{}") || !header_value_is_valid((const uint8_t *) tmpl, strlen(tmpl)))
                return -EINVAL;
        *ret_template = tmpl;
        return 0;
}

bool sbx_service_method_is_valid(const char *method) {
        for (size_t i = 0; i < ELEMENTSOF(known_methods); i++)
                if (streq_ptr(method, known_methods[i]))
                        return true;
        return false;
}

static int validate_one(const SbxService *s, SbxError *error) {
        SbxServiceOrigin origin;
        char header_name[SBX_SERVICE_HEADER_MAX + 1];
        const char *tmpl;
        size_t n;
        int r;

        if (!(s->set & SERVICE_HAS_URL) || !s->url)
                return sbx_error_set(error, -EINVAL, SBX_ERROR_INVALID_SERVICE,
                                     "Service %s has no Url: give its https://host[:port][/base] origin", s->name);
        if (sbx_service_url_parse(s->url, &origin) < 0)
                return sbx_error_set(error, -EINVAL, SBX_ERROR_INVALID_SERVICE,
                                     "Service %s: Url \"%.128s\" is not an https://host[:port][/base] origin "
                                     "(a DNS name, no user info, query, fragment, \".\" or \"..\" segments)",
                                     s->name, s->url);
        if (!(s->set & SERVICE_HAS_CREDENTIAL) || s->credential_size == 0)
                return sbx_error_set(error, -EINVAL, SBX_ERROR_INVALID_SERVICE,
                                     "Service %s has no Credential: the broker exists to inject one", s->name);
        if (s->credential_size > SBX_SERVICE_CREDENTIAL_MAX)
                return sbx_error_set(error, -E2BIG, SBX_ERROR_INVALID_SERVICE,
                                     "Service %s: Credential is %zu bytes; at most %d are allowed",
                                     s->name, s->credential_size, SBX_SERVICE_CREDENTIAL_MAX);
        /* The message never shows the bytes: it says what kind of byte is wrong. */
        if (!header_value_is_valid(s->credential, s->credential_size))
                return sbx_error_set(error, -EINVAL, SBX_ERROR_INVALID_SERVICE,
                                     "Service %s: Credential must be printable ASCII without leading or trailing "
                                     "whitespace (no newline, control character or NUL): it is sent as a header value",
                                     s->name);
        r = sbx_service_header_parse(sbx_service_header(s), header_name, sizeof(header_name), &tmpl);
        if (r == -EPERM)
                return sbx_error_set(error, -EPERM, SBX_ERROR_INVALID_SERVICE,
                                     "Service %s: Header %s is one the proxy sets itself; name another header",
                                     s->name, header_name);
        if (r < 0)
                return sbx_error_set(error, -EINVAL, SBX_ERROR_INVALID_SERVICE,
                                     "Service %s: Header \"%.64s\" is invalid: use NAME or \"NAME: TEMPLATE\" with one {} "
                                     "where the credential goes, e.g. \"Authorization: Bearer {}\"",
                                     s->name, sbx_service_header(s));
        if (strlen(tmpl) - 2 + s->credential_size > SBX_SERVICE_CREDENTIAL_MAX)
                return sbx_error_set(error, -E2BIG, SBX_ERROR_INVALID_SERVICE,
                                     "Service %s: the injected header value would be over %d bytes",
                                     s->name, SBX_SERVICE_CREDENTIAL_MAX);
        if ((s->set & SERVICE_HAS_METHODS) && strv_length(s->methods) == 0)
                return sbx_error_set(error, -EINVAL, SBX_ERROR_INVALID_SERVICE,
                                     "Service %s: Methods is empty; leave it out for GET only", s->name);
        n = strv_length(s->methods);
        if (n > SBX_SERVICE_METHODS_MAX)
                return sbx_error_set(error, -E2BIG, SBX_ERROR_INVALID_SERVICE,
                                     "Service %s: Methods has %zu entries; at most %d are allowed",
                                     s->name, n, SBX_SERVICE_METHODS_MAX);
        for (char * const *m = sbx_service_methods(s); *m; m++)
                if (!sbx_service_method_is_valid(*m))
                        return sbx_error_set(error, -EINVAL, SBX_ERROR_INVALID_SERVICE,
                                             "Service %s: Method \"%.16s\" is not allowed; use GET, HEAD, POST, PUT, "
                                             "PATCH, DELETE or OPTIONS (upper case)", s->name, *m);
        if ((s->set & SERVICE_HAS_PATHS) && strv_length(s->paths) == 0)
                return sbx_error_set(error, -EINVAL, SBX_ERROR_INVALID_SERVICE,
                                     "Service %s: Paths is empty; leave it out to allow every path (\"/\")", s->name);
        n = strv_length(s->paths);
        if (n > SBX_SERVICE_PATHS_MAX)
                return sbx_error_set(error, -E2BIG, SBX_ERROR_INVALID_SERVICE,
                                     "Service %s: Paths has %zu entries; at most %d are allowed",
                                     s->name, n, SBX_SERVICE_PATHS_MAX);
        for (char * const *p = sbx_service_paths(s); *p; p++)
                if (!sbx_service_path_is_valid(*p))
                        return sbx_error_set(error, -EINVAL, SBX_ERROR_INVALID_SERVICE,
                                             "Service %s: Path \"%.64s\" is invalid: use an absolute path prefix such as "
                                             "/v1/ (RFC 3986 characters, no \".\", \"..\" or empty segments)",
                                             s->name, *p);
        if (s->max_request_bytes < 1 || s->max_request_bytes > SBX_SERVICE_REQUEST_MAX)
                return sbx_error_set(error, -ERANGE, SBX_ERROR_LIMIT_OUT_OF_RANGE,
                                     "Service %s: MaxRequestBytes=%" PRIu64 " is out of range: it must be between 1 "
                                     "and %" PRIu64, s->name, s->max_request_bytes, SBX_SERVICE_REQUEST_MAX);
        if (s->max_response_bytes < 1 || s->max_response_bytes > SBX_SERVICE_RESPONSE_MAX)
                return sbx_error_set(error, -ERANGE, SBX_ERROR_LIMIT_OUT_OF_RANGE,
                                     "Service %s: MaxResponseBytes=%" PRIu64 " is out of range: it must be between 1 "
                                     "and %" PRIu64, s->name, s->max_response_bytes, SBX_SERVICE_RESPONSE_MAX);
        if ((s->set & SERVICE_HAS_RATE) && s->rate_bps == 0)
                return sbx_error_set(error, -ERANGE, SBX_ERROR_LIMIT_OUT_OF_RANGE,
                                     "Service %s: RateBps must be positive; leave it out for the worker's egress rate",
                                     s->name);
        return 0;
}

int sbx_services_validate(const SbxService *services, size_t n, SbxError *error) {
        int r;

        if (n > SBX_SERVICES_MAX)
                return sbx_error_set(error, -E2BIG, SBX_ERROR_INVALID_SERVICE,
                                     "%zu services given; at most %d are allowed", n, SBX_SERVICES_MAX);
        for (size_t i = 0; i < n; i++) {
                const SbxService *s = &services[i];

                if (!sbx_service_name_is_valid(s->name))
                        return sbx_error_set(error, -EINVAL, SBX_ERROR_INVALID_SERVICE,
                                             "Service name \"%.64s\" is invalid: use 1-%d characters of [A-Za-z0-9_], "
                                             "starting with a letter", s->name, SBX_SERVICE_NAME_MAX);
                /* The names become SANDBOX_SERVICE_<NAME>_URL in upper case. */
                for (size_t j = 0; j < i; j++)
                        if (strcasecmp(services[j].name, s->name) == 0)
                                return sbx_error_set(error, -EEXIST, SBX_ERROR_INVALID_SERVICE,
                                                     "Service %s is given twice (names are compared ignoring case)",
                                                     s->name);
                r = validate_one(s, error);
                if (r < 0)
                        return r;
        }
        return 0;
}
