/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "broker-path.h"
#include "egress-policy.h"
#include "http-token.h"
#include "log-limit.h"

int egress_policy_new(EgressPolicy **ret) {
        EgressPolicy *p;

        assert(ret);
        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        p->mode = EGRESS_MODE_ENFORCE;
        p->require_tls = true;
        p->max_tunnels = 64;
        p->request_timeout_usec = 10 * 1000000ULL;
        p->connect_timeout_usec = 10 * 1000000ULL;
        p->hello_timeout_usec = 5 * 1000000ULL;
        p->refusal_log_burst = LOG_LIMIT_BURST_DEFAULT;
        p->refusal_log_window_usec = LOG_LIMIT_WINDOW_USEC_DEFAULT;
        int r = egress_policy_add_floor(p, "*");
        if (r < 0) {
                egress_policy_free(p);
                return r;
        }
        *ret = p;
        return 0;
}

EgressPolicy *egress_policy_free(EgressPolicy *p) {
        if (!p)
                return NULL;
        free(p->worker_id);
        free(p->allow);
        free(p->deny);
        free(p->floor);
        free(p->private_ranges);
        for (size_t i = 0; i < p->n_services; i++)
                egress_service_done(&p->services[i]);
        free(p->services);
        free(p->broker_ca_file);
        free(p);
        return NULL;
}

static bool worker_id_valid(const char *id) {
        size_t n = strlen(id);
        if (n == 0 || n > EGRESS_WORKER_ID_MAX)
                return false;
        for (size_t i = 0; i < n; i++) {
                char c = id[i];
                if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '_' || c == '.'))
                        return false;
        }
        return true;
}

int egress_policy_set_worker_id(EgressPolicy *p, const char *id) {
        assert(p);
        assert(id);
        if (!worker_id_valid(id))
                return -EINVAL;
        char *copy = strdup(id);
        if (!copy)
                return -ENOMEM;
        free(p->worker_id);
        p->worker_id = copy;
        return 0;
}

/* Grows an array by one element; the new slot is returned zeroed. */
static void *append_slot(void **array, size_t *n, size_t size) {
        if (*n >= EGRESS_POLICY_ENTRIES_MAX) {
                errno = E2BIG;
                return NULL;
        }
        void *a = reallocarray(*array, *n + 1, size);
        if (!a) {
                errno = ENOMEM;
                return NULL;
        }
        *array = a;
        void *slot = (uint8_t *) a + *n * size;
        memset(slot, 0, size);
        (*n)++;
        return slot;
}

static int add_pattern(EgressPattern **array, size_t *n, const char *s) {
        EgressPattern pat;
        int r = egress_pattern_parse(s, &pat);
        if (r < 0)
                return r;
        EgressPattern *slot = append_slot((void **) array, n, sizeof(pat));
        if (!slot)
                return -errno;
        *slot = pat;
        return 0;
}

int egress_policy_add_allow(EgressPolicy *p, const char *pattern) {
        assert(p);
        return add_pattern(&p->allow, &p->n_allow, pattern);
}

int egress_policy_add_deny(EgressPolicy *p, const char *pattern) {
        assert(p);
        return add_pattern(&p->deny, &p->n_deny, pattern);
}

int egress_policy_add_floor(EgressPolicy *p, const char *pattern) {
        assert(p);
        return add_pattern(&p->floor, &p->n_floor, pattern);
}

void egress_policy_clear_floor(EgressPolicy *p) {
        assert(p);
        free(p->floor);
        p->floor = NULL;
        p->n_floor = 0;
}

int egress_policy_add_private_range(EgressPolicy *p, const char *cidr) {
        EgressCidr c;
        assert(p);
        int r = egress_cidr_parse(cidr, &c);
        if (r < 0)
                return r;
        EgressCidr *slot = append_slot((void **) &p->private_ranges, &p->n_private_ranges, sizeof(c));
        if (!slot)
                return -errno;
        *slot = c;
        return 0;
}

/* ---- services ---- */

static void strv_free_n(char **v, size_t n) {
        if (!v)
                return;
        for (size_t i = 0; i < n; i++)
                free(v[i]);
        free(v);
}

void egress_service_done(EgressService *s) {
        if (!s)
                return;
        free(s->name);
        free(s->host);
        free(s->base);
        free(s->header_name);
        free(s->header_template);
        strv_free_n(s->methods, s->n_methods);
        strv_free_n(s->paths, s->n_paths);
        *s = (EgressService) {};
}

static bool service_name_valid(const char *name) {
        size_t n = name ? strlen(name) : 0;
        if (n == 0 || n > EGRESS_SERVICE_NAME_MAX)
                return false;
        if (!((name[0] >= 'a' && name[0] <= 'z') || (name[0] >= 'A' && name[0] <= 'Z')))
                return false;
        for (size_t i = 0; i < n; i++) {
                char c = name[i];
                if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'))
                        return false;
        }
        return true;
}

static bool token_valid(const char *s, size_t max) {
        size_t n = s ? strlen(s) : 0;
        if (n == 0 || n > max)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!http_is_tchar((uint8_t) s[i]))
                        return false;
        return true;
}

/* Framing and hop-by-hop headers are the proxy's own (as spec-service.c
 * refuses them in a spec): an injected one could change how the upstream
 * splits requests. */
static bool header_name_reserved(const char *name) {
        static const char *const reserved[] = {
                "Host", "Content-Length", "Transfer-Encoding", "Connection", "Keep-Alive", "TE", "Trailer",
                "Upgrade", "Proxy-Connection", "Expect",
        };
        for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++)
                if (strcasecmp(name, reserved[i]) == 0)
                        return true;
        return false;
}

/* Visible ASCII, space and tab, not starting or ending with whitespace,
 * with exactly one "{}": nothing in it can end the header line. */
static bool header_template_valid(const char *t) {
        size_t n = t ? strlen(t) : 0;
        if (n < 2 || n > EGRESS_SERVICE_HEADER_MAX)
                return false;
        if (t[0] == ' ' || t[0] == '\t' || t[n - 1] == ' ' || t[n - 1] == '\t')
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((unsigned char) t[i] >= 0x20 && (unsigned char) t[i] < 0x7f) && t[i] != '\t')
                        return false;
        const char *brace = strstr(t, "{}");
        return brace && !strstr(brace + 2, "{}");
}

static bool base_valid(const char *base) {
        size_t n = base ? strlen(base) : 0;
        if (!base)
                return false;
        if (n == 0)
                return true;
        return n <= EGRESS_SERVICE_PATH_MAX && base[n - 1] != '/' && broker_path_is_valid(base, n);
}

static bool service_path_valid(const char *path) {
        size_t n = path ? strlen(path) : 0;
        return n > 0 && n <= EGRESS_SERVICE_PATH_MAX && broker_path_is_valid(path, n);
}

static int strv_copy_checked(char *const *src, size_t n, size_t max, bool (*valid)(const char *),
                             char ***ret, size_t *ret_n) {
        if (n == 0 || n > max)
                return -EINVAL;
        char **v = calloc(n + 1, sizeof(char *));
        if (!v)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                if (!valid(src[i])) {
                        strv_free_n(v, i);
                        return -EINVAL;
                }
                v[i] = strdup(src[i]);
                if (!v[i]) {
                        strv_free_n(v, i);
                        return -ENOMEM;
                }
        }
        *ret = v;
        *ret_n = n;
        return 0;
}

static bool method_valid(const char *m) {
        return token_valid(m, 15);   /* BrokerRequest.method holds 15 */
}

static bool header_name_valid(const char *name) {
        return token_valid(name, EGRESS_SERVICE_HEADER_MAX) && !header_name_reserved(name);
}

static char *strdup_checked(const char *s, int *r) {
        char *c = strdup(s);
        if (!c)
                *r = -ENOMEM;
        return c;
}

int egress_policy_add_service(EgressPolicy *p, const EgressService *in) {
        char host[EGRESS_HOST_MAX + 1];
        EgressHostKind kind;
        EgressService s = {};
        int r = 0;

        assert(p);
        assert(in);
        if (p->n_services >= EGRESS_SERVICES_MAX)
                return -E2BIG;
        if (!service_name_valid(in->name) || in->listen_port == 0 || in->listen_port == EGRESS_PROXY_PORT ||
            in->port == 0 || !in->host || !base_valid(in->base) || !header_name_valid(in->header_name) ||
            !header_template_valid(in->header_template) ||
            in->max_request_bytes == 0 || in->max_request_bytes > EGRESS_SERVICE_REQUEST_MAX ||
            in->max_response_bytes == 0 || in->max_response_bytes > EGRESS_SERVICE_RESPONSE_MAX ||
            in->rate_bps > (UINT64_C(1) << 40))
                return -EINVAL;
        /* The broker connects to names only: an address would skip the floor and TLS's name check. */
        if (egress_host_normalize(in->host, false, host, sizeof(host), &kind) < 0 || kind != EGRESS_HOST_NAME)
                return -EINVAL;
        for (size_t i = 0; i < p->n_services; i++)
                if (p->services[i].listen_port == in->listen_port || strcasecmp(p->services[i].name, in->name) == 0)
                        return -EINVAL;

        s.listen_port = in->listen_port;
        s.port = in->port;
        s.max_request_bytes = in->max_request_bytes;
        s.max_response_bytes = in->max_response_bytes;
        s.rate_bps = in->rate_bps;
        s.name = strdup_checked(in->name, &r);
        s.host = strdup_checked(host, &r);
        s.base = strdup_checked(in->base, &r);
        s.header_name = strdup_checked(in->header_name, &r);
        s.header_template = strdup_checked(in->header_template, &r);
        if (r == 0)
                r = strv_copy_checked(in->methods, in->n_methods, EGRESS_SERVICE_METHODS_MAX, method_valid,
                                      &s.methods, &s.n_methods);
        if (r == 0)
                r = strv_copy_checked(in->paths, in->n_paths, EGRESS_SERVICE_PATHS_MAX, service_path_valid,
                                      &s.paths, &s.n_paths);
        EgressService *slot = r == 0 ? append_slot((void **) &p->services, &p->n_services, sizeof(s)) : NULL;
        if (!slot) {
                egress_service_done(&s);
                return r < 0 ? r : -errno;
        }
        *slot = s;
        return 0;
}

const EgressService *egress_policy_find_service(const EgressPolicy *p, uint16_t listen_port) {
        assert(p);
        for (size_t i = 0; i < p->n_services; i++)
                if (p->services[i].listen_port == listen_port)
                        return &p->services[i];
        return NULL;
}

int egress_policy_set_broker_ca_file(EgressPolicy *p, const char *path) {
        assert(p);
        if (!path || path[0] != '/' || strlen(path) >= PATH_MAX)
                return -EINVAL;
        char *copy = strdup(path);
        if (!copy)
                return -ENOMEM;
        free(p->broker_ca_file);
        p->broker_ca_file = copy;
        return 0;
}

const char *egress_mode_to_string(EgressMode m) {
        return m == EGRESS_MODE_REPORT ? "report" : "enforce";
}

int egress_mode_from_string(const char *s, EgressMode *ret) {
        if (strcmp(s, "enforce") == 0)
                *ret = EGRESS_MODE_ENFORCE;
        else if (strcmp(s, "report") == 0)
                *ret = EGRESS_MODE_REPORT;
        else
                return -EINVAL;
        return 0;
}

static bool patterns_match(const EgressPattern *pats, size_t n, const char *host, uint16_t port) {
        for (size_t i = 0; i < n; i++)
                if (egress_pattern_match(&pats[i], host, port, 0))
                        return true;
        return false;
}

const char *egress_policy_check_operator(const EgressPolicy *p, const char *host, uint16_t port) {
        assert(p);
        assert(host);

        if (patterns_match(p->deny, p->n_deny, host, port))
                return "denied-by-rule";
        return patterns_match(p->floor, p->n_floor, host, port) ? NULL : "outside-operator-floor";
}

const char *egress_policy_check_host(const EgressPolicy *p, const char *raw_host, bool bracketed,
                                     uint16_t port, char *host_out, size_t host_out_size) {
        EgressHostKind kind;
        bool host_allowed = false;

        assert(p);
        assert(raw_host);
        assert(host_out);

        if (egress_host_normalize(raw_host, bracketed, host_out, host_out_size, &kind) < 0)
                return "invalid-host";
        if (kind == EGRESS_HOST_IPV4_DISGUISED)
                return "ip-literal-obfuscated";
        if (kind != EGRESS_HOST_NAME)
                return "ip-literal";   /* TLS cannot name an IP in SNI, and addresses bypass the allow-list */

        /* Deny comes before the allow-list, the floor after it. */
        if (patterns_match(p->deny, p->n_deny, host_out, port))
                return "denied-by-rule";

        for (size_t i = 0; i < p->n_allow; i++) {
                if (!egress_pattern_match_host(&p->allow[i], host_out))
                        continue;
                host_allowed = true;
                if (egress_pattern_match(&p->allow[i], host_out, port, EGRESS_DEFAULT_PORT))
                        goto floor;
        }
        return host_allowed ? "port-not-allowed" : "not-in-allow-list";

floor:
        return patterns_match(p->floor, p->n_floor, host_out, port) ? NULL : "outside-operator-floor";
}

/* ---- JSON ---- */

static void json_putp(json_object **o) { json_object_put(*o); }
#define _cleanup_json_ __attribute__((cleanup(json_putp)))

static json_object *patterns_to_json(const EgressPattern *pats, size_t n) {
        json_object *a = json_object_new_array();
        if (!a)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                char buf[EGRESS_HOST_MAX + 16];
                if (egress_pattern_format(&pats[i], buf, sizeof(buf)) < 0 ||
                    json_object_array_add(a, json_object_new_string(buf)) < 0) {
                        json_object_put(a);
                        return NULL;
                }
        }
        return a;
}

static json_object *strv_to_json(char *const *v, size_t n) {
        json_object *a = json_object_new_array();
        if (!a)
                return NULL;
        for (size_t i = 0; i < n; i++)
                if (json_object_array_add(a, json_object_new_string(v[i])) < 0) {
                        json_object_put(a);
                        return NULL;
                }
        return a;
}

/* Adds each field to O; on any failure every value not yet owned by O is
 * released and -ENOMEM returned. */
typedef struct JsonField {
        const char *key;
        json_object *value;
} JsonField;

static int add_fields(json_object *o, JsonField *fields, size_t n) {
        int r = 0;
        for (size_t i = 0; i < n; i++) {
                if (!fields[i].value) {
                        r = -ENOMEM;
                        continue;
                }
                if (r < 0 || json_object_object_add(o, fields[i].key, fields[i].value) < 0) {
                        json_object_put(fields[i].value);
                        r = -ENOMEM;
                }
        }
        return r;
}

static json_object *service_to_json(const EgressService *s) {
        json_object *o = json_object_new_object();
        if (!o)
                return NULL;
        JsonField fields[] = {
                { "name", json_object_new_string(s->name) },
                { "listen_port", json_object_new_uint64(s->listen_port) },
                { "host", json_object_new_string(s->host) },
                { "port", json_object_new_uint64(s->port) },
                { "base", json_object_new_string(s->base) },
                { "header_name", json_object_new_string(s->header_name) },
                { "header_template", json_object_new_string(s->header_template) },
                { "methods", strv_to_json(s->methods, s->n_methods) },
                { "paths", strv_to_json(s->paths, s->n_paths) },
                { "max_request_bytes", json_object_new_uint64(s->max_request_bytes) },
                { "max_response_bytes", json_object_new_uint64(s->max_response_bytes) },
                { "rate_bps", json_object_new_uint64(s->rate_bps) },
        };
        if (add_fields(o, fields, sizeof(fields) / sizeof(fields[0])) < 0) {
                json_object_put(o);
                return NULL;
        }
        return o;
}

static json_object *services_to_json(const EgressService *s, size_t n) {
        json_object *a = json_object_new_array();
        if (!a)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                json_object *e = service_to_json(&s[i]);
                if (!e || json_object_array_add(a, e) < 0) {
                        json_object_put(e);
                        json_object_put(a);
                        return NULL;
                }
        }
        return a;
}

static json_object *cidrs_to_json(const EgressCidr *c, size_t n) {
        json_object *a = json_object_new_array();
        if (!a)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                char buf[64];
                if (egress_cidr_format(&c[i], buf, sizeof(buf)) < 0 ||
                    json_object_array_add(a, json_object_new_string(buf)) < 0) {
                        json_object_put(a);
                        return NULL;
                }
        }
        return a;
}

int egress_policy_to_json(const EgressPolicy *p, char **ret) {
        _cleanup_json_ json_object *o = NULL;
        const char *s;

        assert(p);
        assert(ret);
        o = json_object_new_object();
        if (!o)
                return -ENOMEM;
        if (p->worker_id && json_object_object_add(o, "worker_id", json_object_new_string(p->worker_id)) < 0)
                return -ENOMEM;
        if (p->broker_ca_file &&
            json_object_object_add(o, "broker_ca_file", json_object_new_string(p->broker_ca_file)) < 0)
                return -ENOMEM;
        JsonField fields[] = {
                { "mode", json_object_new_string(egress_mode_to_string(p->mode)) },
                { "require_tls", json_object_new_boolean(p->require_tls) },
                { "allow", patterns_to_json(p->allow, p->n_allow) },
                { "deny", patterns_to_json(p->deny, p->n_deny) },
                { "floor", patterns_to_json(p->floor, p->n_floor) },
                { "private_ranges", cidrs_to_json(p->private_ranges, p->n_private_ranges) },
                { "rate_bps", json_object_new_uint64(p->rate_bps) },
                { "rate_burst", json_object_new_uint64(p->rate_burst) },
                { "max_tunnels", json_object_new_uint64(p->max_tunnels) },
                { "request_timeout_ms", json_object_new_uint64(p->request_timeout_usec / 1000) },
                { "connect_timeout_ms", json_object_new_uint64(p->connect_timeout_usec / 1000) },
                { "hello_timeout_ms", json_object_new_uint64(p->hello_timeout_usec / 1000) },
                { "refusal_log_burst", json_object_new_uint64(p->refusal_log_burst) },
                { "refusal_log_window_ms", json_object_new_uint64(p->refusal_log_window_usec / 1000) },
        };
        int r = add_fields(o, fields, sizeof(fields) / sizeof(fields[0]));
        /* Left out when empty: a policy without services reads as it did before them. */
        if (r == 0 && p->n_services > 0) {
                json_object *a = services_to_json(p->services, p->n_services);
                if (!a || json_object_object_add(o, "services", a) < 0) {
                        json_object_put(a);
                        r = -ENOMEM;
                }
        }
        if (r < 0)
                return r;
        s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE);
        if (!s)
                return -ENOMEM;
        *ret = strdup(s);
        return *ret ? 0 : -ENOMEM;
}

static int strings_from_json(json_object *a, EgressPolicy *p, int (*add)(EgressPolicy *, const char *)) {
        if (!json_object_is_type(a, json_type_array))
                return -EINVAL;
        size_t n = json_object_array_length(a);
        for (size_t i = 0; i < n; i++) {
                json_object *e = json_object_array_get_idx(a, i);
                if (!json_object_is_type(e, json_type_string))
                        return -EINVAL;
                int r = add(p, json_object_get_string(e));
                if (r < 0)
                        return r;
        }
        return 0;
}

static int uint_from_json(json_object *v, uint64_t max, uint64_t *ret) {
        if (!json_object_is_type(v, json_type_int))
                return -EINVAL;
        /* json-c keeps what does not fit int64 as uint64; negative numbers are refused. */
        if (json_object_get_int64(v) < 0)
                return -EINVAL;
        uint64_t u = json_object_get_uint64(v);
        if (u > max)
                return -EINVAL;
        *ret = u;
        return 0;
}

static int timeout_from_json(json_object *v, uint64_t *ret_usec) {
        uint64_t ms;
        int r = uint_from_json(v, 3600 * 1000, &ms);
        if (r < 0)
                return r;
        if (ms == 0)
                return -EINVAL;
        *ret_usec = ms * 1000;
        return 0;
}

static int strv_from_json(json_object *a, size_t max, char ***ret, size_t *ret_n) {
        if (!json_object_is_type(a, json_type_array))
                return -EINVAL;
        size_t n = json_object_array_length(a);
        if (n > max)
                return -EINVAL;
        char **v = calloc(n + 1, sizeof(char *));
        if (!v)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                json_object *e = json_object_array_get_idx(a, i);
                v[i] = json_object_is_type(e, json_type_string) ? strdup(json_object_get_string(e)) : NULL;
                if (!v[i]) {
                        int r = json_object_is_type(e, json_type_string) ? -ENOMEM : -EINVAL;
                        strv_free_n(v, i);
                        return r;
                }
        }
        *ret = v;
        *ret_n = n;
        return 0;
}

static int port_from_json(json_object *v, uint16_t *ret) {
        uint64_t u;
        int r = uint_from_json(v, 65535, &u);
        if (r < 0)
                return r;
        *ret = (uint16_t) u;
        return 0;
}

static int string_from_json(json_object *v, char **ret) {
        if (!json_object_is_type(v, json_type_string))
                return -EINVAL;
        char *c = strdup(json_object_get_string(v));
        if (!c)
                return -ENOMEM;
        free(*ret);
        *ret = c;
        return 0;
}

/* Every key is required: sandboxd writes them all, and a service missing
 * one (say its paths) must not load with a permissive default. */
static int service_from_json(EgressPolicy *p, json_object *o) {
        enum { NAME = 1 << 0, LISTEN = 1 << 1, HOST = 1 << 2, PORT = 1 << 3, BASE = 1 << 4, HNAME = 1 << 5,
               HTMPL = 1 << 6, METHODS = 1 << 7, PATHS = 1 << 8, MAXREQ = 1 << 9, MAXRESP = 1 << 10,
               RATE = 1 << 11, ALL = (1 << 12) - 1 };
        EgressService s = {};
        unsigned seen = 0;
        int r = 0;

        if (!json_object_is_type(o, json_type_object))
                return -EINVAL;
        json_object_object_foreach(o, key, v) {
                unsigned bit;
                if (strcmp(key, "name") == 0)
                        bit = NAME, r = string_from_json(v, &s.name);
                else if (strcmp(key, "listen_port") == 0)
                        bit = LISTEN, r = port_from_json(v, &s.listen_port);
                else if (strcmp(key, "host") == 0)
                        bit = HOST, r = string_from_json(v, &s.host);
                else if (strcmp(key, "port") == 0)
                        bit = PORT, r = port_from_json(v, &s.port);
                else if (strcmp(key, "base") == 0)
                        bit = BASE, r = string_from_json(v, &s.base);
                else if (strcmp(key, "header_name") == 0)
                        bit = HNAME, r = string_from_json(v, &s.header_name);
                else if (strcmp(key, "header_template") == 0)
                        bit = HTMPL, r = string_from_json(v, &s.header_template);
                else if (strcmp(key, "methods") == 0 && !(seen & METHODS))
                        bit = METHODS, r = strv_from_json(v, EGRESS_SERVICE_METHODS_MAX, &s.methods, &s.n_methods);
                else if (strcmp(key, "paths") == 0 && !(seen & PATHS))
                        bit = PATHS, r = strv_from_json(v, EGRESS_SERVICE_PATHS_MAX, &s.paths, &s.n_paths);
                else if (strcmp(key, "max_request_bytes") == 0)
                        bit = MAXREQ, r = uint_from_json(v, EGRESS_SERVICE_REQUEST_MAX, &s.max_request_bytes);
                else if (strcmp(key, "max_response_bytes") == 0)
                        bit = MAXRESP, r = uint_from_json(v, EGRESS_SERVICE_RESPONSE_MAX, &s.max_response_bytes);
                else if (strcmp(key, "rate_bps") == 0)
                        bit = RATE, r = uint_from_json(v, UINT64_C(1) << 40, &s.rate_bps);
                else
                        bit = 0, r = -EINVAL;
                if (r < 0)
                        break;
                seen |= bit;
        }
        if (r == 0 && seen != ALL)
                r = -EINVAL;
        if (r == 0)
                r = egress_policy_add_service(p, &s);
        egress_service_done(&s);
        return r;
}

static int services_from_json(EgressPolicy *p, json_object *a) {
        if (!json_object_is_type(a, json_type_array) || p->n_services > 0)
                return -EINVAL;
        size_t n = json_object_array_length(a);
        for (size_t i = 0; i < n; i++) {
                int r = service_from_json(p, json_object_array_get_idx(a, i));
                if (r < 0)
                        return r;
        }
        return 0;
}

static int policy_field_from_json(EgressPolicy *p, const char *key, json_object *v) {
        uint64_t u;
        int r;

        if (strcmp(key, "worker_id") == 0)
                return json_object_is_type(v, json_type_string) ?
                        egress_policy_set_worker_id(p, json_object_get_string(v)) : -EINVAL;
        if (strcmp(key, "mode") == 0)
                return json_object_is_type(v, json_type_string) ?
                        egress_mode_from_string(json_object_get_string(v), &p->mode) : -EINVAL;
        if (strcmp(key, "require_tls") == 0) {
                if (!json_object_is_type(v, json_type_boolean))
                        return -EINVAL;
                p->require_tls = json_object_get_boolean(v);
                return 0;
        }
        if (strcmp(key, "allow") == 0)
                return strings_from_json(v, p, egress_policy_add_allow);
        if (strcmp(key, "deny") == 0)
                return strings_from_json(v, p, egress_policy_add_deny);
        if (strcmp(key, "floor") == 0) {
                egress_policy_clear_floor(p);
                return strings_from_json(v, p, egress_policy_add_floor);
        }
        if (strcmp(key, "private_ranges") == 0)
                return strings_from_json(v, p, egress_policy_add_private_range);
        if (strcmp(key, "rate_bps") == 0)
                return uint_from_json(v, UINT64_C(1) << 40, &p->rate_bps);
        if (strcmp(key, "rate_burst") == 0)
                return uint_from_json(v, UINT64_C(1) << 40, &p->rate_burst);
        if (strcmp(key, "max_tunnels") == 0) {
                r = uint_from_json(v, 65536, &u);
                if (r < 0 || u == 0)
                        return -EINVAL;
                p->max_tunnels = (unsigned) u;
                return 0;
        }
        if (strcmp(key, "request_timeout_ms") == 0)
                return timeout_from_json(v, &p->request_timeout_usec);
        if (strcmp(key, "connect_timeout_ms") == 0)
                return timeout_from_json(v, &p->connect_timeout_usec);
        if (strcmp(key, "hello_timeout_ms") == 0)
                return timeout_from_json(v, &p->hello_timeout_usec);
        if (strcmp(key, "refusal_log_burst") == 0) {
                r = uint_from_json(v, 1000000, &u);
                if (r < 0)
                        return r;
                p->refusal_log_burst = (unsigned) u;
                return 0;
        }
        if (strcmp(key, "refusal_log_window_ms") == 0)
                return timeout_from_json(v, &p->refusal_log_window_usec);
        if (strcmp(key, "services") == 0)
                return services_from_json(p, v);
        if (strcmp(key, "broker_ca_file") == 0)
                return json_object_is_type(v, json_type_string) ?
                        egress_policy_set_broker_ca_file(p, json_object_get_string(v)) : -EINVAL;
        return -EINVAL;   /* unknown key */
}

int egress_policy_from_json(const char *text, EgressPolicy **ret) {
        _cleanup_json_ json_object *o = NULL;
        EgressPolicy *p = NULL;
        json_tokener *tok;
        int r;

        assert(text);
        assert(ret);
        if (strlen(text) > EGRESS_POLICY_FILE_MAX)
                return -EFBIG;
        tok = json_tokener_new_ex(16);
        if (!tok)
                return -ENOMEM;
        o = json_tokener_parse_ex(tok, text, (int) strlen(text));
        bool complete = json_tokener_get_error(tok) == json_tokener_success &&
                        json_tokener_get_parse_end(tok) == strlen(text);
        json_tokener_free(tok);
        if (!o || !complete || !json_object_is_type(o, json_type_object))
                return -EINVAL;

        r = egress_policy_new(&p);
        if (r < 0)
                return r;
        json_object_object_foreach(o, key, value) {
                r = policy_field_from_json(p, key, value);
                if (r < 0) {
                        egress_policy_free(p);
                        return r;
                }
        }
        *ret = p;
        return 0;
}

int egress_policy_to_json_file(const EgressPolicy *p, const char *path) {
        char *text = NULL;
        char tmp[PATH_MAX];
        int fd, r;

        assert(p);
        assert(path);
        if (snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= (int) sizeof(tmp))
                return -ENAMETOOLONG;
        r = egress_policy_to_json(p, &text);
        if (r < 0)
                return r;
        fd = mkostemp(tmp, O_CLOEXEC);   /* mode 0600 */
        if (fd < 0) {
                r = -errno;
                free(text);
                return r;
        }
        size_t n = strlen(text), done = 0;
        while (done < n) {
                ssize_t k = write(fd, text + done, n - done);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        r = -errno;
                        break;
                }
                done += (size_t) k;
        }
        free(text);
        if (r == 0 && (write(fd, "\n", 1) != 1 || fsync(fd) < 0))
                r = -errno ?: -EIO;
        if (close(fd) < 0 && r == 0)
                r = -errno;
        if (r == 0 && rename(tmp, path) < 0)
                r = -errno;
        if (r < 0)
                unlink(tmp);
        return r;
}

int egress_policy_from_json_file(const char *path, EgressPolicy **ret) {
        struct stat st;
        char *text;
        int fd, r = 0;

        assert(path);
        assert(ret);
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
                r = errno ? -errno : -EINVAL;
                close(fd);
                return r;
        }
        if (st.st_size > EGRESS_POLICY_FILE_MAX) {
                close(fd);
                return -EFBIG;
        }
        text = malloc((size_t) st.st_size + 1);
        if (!text) {
                close(fd);
                return -ENOMEM;
        }
        size_t done = 0;
        while (done < (size_t) st.st_size) {
                ssize_t k = read(fd, text + done, (size_t) st.st_size - done);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0) {
                        r = k < 0 ? -errno : -EIO;
                        break;
                }
                done += (size_t) k;
        }
        close(fd);
        text[done] = 0;
        if (r == 0)
                r = egress_policy_from_json(text, ret);
        free(text);
        return r;
}

const EgressPattern *egress_policy_allow_outside_floor(const EgressPolicy *p) {
        assert(p);
        for (size_t i = 0; i < p->n_allow; i++) {
                bool within = false;
                for (size_t j = 0; j < p->n_floor && !within; j++)
                        within = egress_pattern_within(&p->allow[i], EGRESS_DEFAULT_PORT, &p->floor[j]);
                if (!within)
                        return &p->allow[i];
        }
        return NULL;
}
