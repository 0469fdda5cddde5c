/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The ceilings of `sandboxctl mcp` and the spec a tool's arguments become
 * (mcp-policy.h). */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "mcp-policy.h"
#include "parse-util.h"

static void split_port(const char *pattern, char *host, size_t host_size, const char **ret_port) {
        const char *colon = strrchr(pattern, ':');
        size_t n = colon ? (size_t) (colon - pattern) : strlen(pattern);

        snprintf(host, host_size, "%.*s", (int) MIN(n, host_size - 1), pattern);
        *ret_port = colon ? colon + 1 : "";
}

static bool host_covered(const char *ceiling, const char *host) {
        size_t lc, lh;

        if (strcasecmp(ceiling, host) == 0)
                return true;
        if (!startswith(ceiling, "*."))
                return false;
        /* *.example.org covers a.example.org and *.a.example.org, not example.org. */
        lc = strlen(ceiling + 1);       /* ".example.org" */
        lh = strlen(host);
        return lh > lc && strcasecmp(host + lh - lc, ceiling + 1) == 0;
}

bool mcp_allow_covered(char * const *ceiling, const char *pattern) {
        char host[256], chost[256];
        const char *port, *cport;

        if (isempty(pattern) || strlen(pattern) >= sizeof(host))
                return false;
        split_port(pattern, host, sizeof(host), &port);
        for (size_t i = 0; ceiling && ceiling[i]; i++) {
                if (streq(ceiling[i], "*"))
                        return true;
                split_port(ceiling[i], chost, sizeof(chost), &cport);
                if (streq(port, cport) && host_covered(chost, host))
                        return true;
        }
        return false;
}

/* A size as a string with a suffix ("512M") or a number of bytes. */
static int json_size(json_object *v, uint64_t *ret) {
        if (json_object_is_type(v, json_type_int)) {
                int64_t n = json_object_get_int64(v);
                if (n <= 0)
                        return -EINVAL;
                *ret = (uint64_t) n;
                return 0;
        }
        if (json_object_is_type(v, json_type_string))
                return parse_size(json_object_get_string(v), ret);
        return -EINVAL;
}

/* Whole seconds, 1 or more, as microseconds. */
static int json_seconds(json_object *v, uint64_t *ret) {
        int64_t n;

        if (!json_object_is_type(v, json_type_int))
                return -EINVAL;
        n = json_object_get_int64(v);
        if (n <= 0 || (uint64_t) n > UINT64_MAX / USEC_PER_SEC)
                return -EINVAL;
        *ret = (uint64_t) n * USEC_PER_SEC;
        return 0;
}

int mcp_policy_timeout(const McpPolicy *p, json_object *arguments, uint64_t *ret_usec, char *err, size_t err_size) {
        json_object *v = NULL;
        uint64_t usec = MCP_DEFAULT_TIMEOUT_SEC * USEC_PER_SEC;

        if (json_object_object_get_ex(arguments, "timeout", &v) && v && json_seconds(v, &usec) < 0) {
                snprintf(err, err_size, "\"timeout\" is a whole number of seconds, 1 or more");
                return -EINVAL;
        }
        if (usec > p->runtime_max_usec) {
                snprintf(err, err_size, "\"timeout\" may be at most %" PRIu64 " seconds on this server",
                         p->runtime_max_usec / USEC_PER_SEC);
                return -EPERM;
        }
        *ret_usec = MIN(usec, p->runtime_max_usec);
        return 0;
}

int mcp_command_argv(json_object *command, char ***ret_argv, char *err, size_t err_size) {
        _cleanup_strv_free_ char **argv = NULL;

        if (command && json_object_is_type(command, json_type_string) && !isempty(json_object_get_string(command))) {
                if (strv_extend(&argv, "/bin/sh") < 0 || strv_extend(&argv, "-c") < 0 ||
                    strv_extend(&argv, json_object_get_string(command)) < 0)
                        return -ENOMEM;
        } else if (command && json_object_is_type(command, json_type_array) && json_object_array_length(command) > 0) {
                for (size_t i = 0; i < json_object_array_length(command); i++) {
                        json_object *a = json_object_array_get_idx(command, i);
                        if (!json_object_is_type(a, json_type_string)) {
                                snprintf(err, err_size, "\"command\" as an array holds strings only (argv)");
                                return -EINVAL;
                        }
                        if (strv_extend(&argv, json_object_get_string(a)) < 0)
                                return -ENOMEM;
                }
        } else {
                snprintf(err, err_size, "\"command\" is a non-empty string (run by /bin/sh -c) or an array of strings (argv)");
                return -EINVAL;
        }
        *ret_argv = TAKE_PTR(argv);
        return 0;
}

static int policy_class(const McpPolicy *p, json_object *arguments, CliSpec *spec, char *notes, size_t notes_size,
                        char *err, size_t err_size) {
        json_object *v = NULL;
        SbxClass c = p->class_floor;

        if (json_object_object_get_ex(arguments, "class", &v) && v) {
                SbxClass asked = json_object_is_type(v, json_type_string)
                                         ? sbx_class_from_string(json_object_get_string(v)) : _SBX_CLASS_INVALID;
                if (asked < 0) {
                        snprintf(err, err_size, "\"class\" is one of trusted, standard, devcontainer, untrusted, hostile, wasm");
                        return -EINVAL;
                }
                if (asked < p->class_floor)
                        snprintf(notes, notes_size, "Class %s was asked; this server runs every worker at least %s, so it "
                                 "was raised to %s. ", sbx_class_to_string(asked), sbx_class_to_string(p->class_floor),
                                 sbx_class_to_string(p->class_floor));
                c = MAX(asked, p->class_floor);
        }
        spec->class = strdup(sbx_class_to_string(c));
        return spec->class ? 0 : -ENOMEM;
}

static int policy_allow(const McpPolicy *p, json_object *arguments, CliSpec *spec, char *err, size_t err_size) {
        json_object *v = NULL;

        if (!json_object_object_get_ex(arguments, "allow", &v) || !v)
                return 0;
        if (!json_object_is_type(v, json_type_array)) {
                snprintf(err, err_size, "\"allow\" is an array of host patterns (example.org, *.example.org, with :PORT)");
                return -EINVAL;
        }
        for (size_t i = 0; i < json_object_array_length(v); i++) {
                json_object *a = json_object_array_get_idx(v, i);
                const char *s = json_object_is_type(a, json_type_string) ? json_object_get_string(a) : NULL;
                if (!s) {
                        snprintf(err, err_size, "\"allow\" holds strings only");
                        return -EINVAL;
                }
                if (!mcp_allow_covered(p->allow, s)) {
                        _cleanup_free_ char *list = NULL;
                        size_t len = 0;
                        FILE *f = open_memstream(&list, &len);
                        for (size_t j = 0; f && p->allow && p->allow[j]; j++)
                                fprintf(f, "%s%s", j ? ", " : "", p->allow[j]);
                        if (f)
                                fclose(f);
                        snprintf(err, err_size, "egress to \"%.100s\" is beyond this server's allow-list (%s)", s,
                                 isempty(list) ? "nothing: no egress at all" : list);
                        return -EPERM;
                }
                if (strv_extend(&spec->egress_allow, s) < 0)
                        return -ENOMEM;
        }
        return 0;
}

static int policy_memory(const McpPolicy *p, json_object *arguments, CliSpec *spec, char *err, size_t err_size) {
        json_object *v = NULL;
        uint64_t m = p->memory_max;

        if (json_object_object_get_ex(arguments, "memory", &v) && v) {
                if (json_size(v, &m) < 0) {
                        snprintf(err, err_size, "\"memory\" is a size: bytes, or a number with K, M or G (\"512M\")");
                        return -EINVAL;
                }
                if (m > p->memory_max) {
                        snprintf(err, err_size, "\"memory\" may be at most %" PRIu64 " MiB on this server",
                                 p->memory_max >> 20);
                        return -EPERM;
                }
        }
        spec->memory_max = (SpecU64) { m, true };
        return 0;
}

static int policy_workspace(const McpPolicy *p, json_object *arguments, CliSpec *spec, char *err, size_t err_size) {
        json_object *v = NULL;
        const char *name;

        if (!json_object_object_get_ex(arguments, "workspace", &v) || !v)
                return 0;
        name = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
        if (isempty(name)) {
                snprintf(err, err_size, "\"workspace\" is a workspace's name");
                return -EINVAL;
        }
        if (!strv_contains(p->workspaces, name)) {
                snprintf(err, err_size, "workspace \"%.100s\" is not one this server was started to offer", name);
                return -EPERM;
        }
        spec->workspace = strdup(name);
        return spec->workspace ? 0 : -ENOMEM;
}

static int policy_idle(const McpPolicy *p, json_object *arguments, CliSpec *spec, char *err, size_t err_size) {
        json_object *v = NULL;
        uint64_t idle = MIN(MCP_DEFAULT_IDLE_SEC * USEC_PER_SEC, p->idle_max_usec);

        if (json_object_object_get_ex(arguments, "idle_timeout", &v) && v) {
                if (json_seconds(v, &idle) < 0) {
                        snprintf(err, err_size, "\"idle_timeout\" is a whole number of seconds, 1 or more");
                        return -EINVAL;
                }
                if (idle > p->idle_max_usec) {
                        snprintf(err, err_size, "\"idle_timeout\" may be at most %" PRIu64 " seconds on this server",
                                 p->idle_max_usec / USEC_PER_SEC);
                        return -EPERM;
                }
        }
        spec->idle_timeout_usec = (SpecU64) { idle, true };
        return 0;
}

int mcp_policy_spec(const McpPolicy *p, json_object *arguments, char **argv, uint64_t runtime_usec, CliSpec *spec,
                    char *notes, size_t notes_size, char *err, size_t err_size) {
        _cleanup_strv_free_ char **a = argv;
        int r;

        *spec = (CliSpec) {};
        notes[0] = err[0] = '\0';
        if (!a && (strv_extend(&a, "sleep") < 0 || strv_extend(&a, "infinity") < 0))
                return -ENOMEM;
        spec->argv = TAKE_PTR(a);
        spec->origin = strdup(MCP_ORIGIN);
        if (!spec->origin)
                r = -ENOMEM;
        else if ((r = policy_class(p, arguments, spec, notes, notes_size, err, err_size)) >= 0 &&
                 (r = policy_allow(p, arguments, spec, err, err_size)) >= 0 &&
                 (r = policy_memory(p, arguments, spec, err, err_size)) >= 0 &&
                 (r = policy_workspace(p, arguments, spec, err, err_size)) >= 0)
                r = policy_idle(p, arguments, spec, err, err_size);
        if (r < 0) {
                cli_spec_done(spec);
                return r;
        }
        spec->runtime_max_usec = (SpecU64) { runtime_usec ? MIN(runtime_usec, p->runtime_max_usec) : p->runtime_max_usec,
                                             true };
        /* A command that prints nothing for a while is not idle until its
         * timeout: the idle reaper would cut it short. */
        if (runtime_usec)
                spec->idle_timeout_usec = (SpecU64) { spec->runtime_max_usec.value, true };
        return 0;
}

int mcp_output_init(McpOutput *o, size_t cap) {
        *o = (McpOutput) { .cap = MAX(cap, 2u) };
        o->head = malloc(o->cap / 2);
        o->tail = malloc(o->cap / 2);
        return o->head && o->tail ? 0 : -ENOMEM;
}

void mcp_output_add(McpOutput *o, const char *buf, size_t n) {
        size_t half = o->cap / 2;

        o->total += n;
        while (n > 0 && o->n_head < half) {
                o->head[o->n_head++] = *buf++;
                n--;
        }
        /* The tail is a ring of the last HALF bytes. */
        for (; n > 0; n--, buf++) {
                o->tail[(o->tail_start + o->n_tail) % half] = *buf;
                if (o->n_tail < half)
                        o->n_tail++;
                else
                        o->tail_start = (o->tail_start + 1) % half;
        }
}

uint64_t mcp_output_omitted(const McpOutput *o) {
        return o->total - o->n_head - o->n_tail;
}

char *mcp_output_text(const McpOutput *o) {
        size_t half = o->cap / 2, len = 0;
        char *text = NULL;
        FILE *f = open_memstream(&text, &len);

        if (!f)
                return NULL;
        fwrite(o->head, 1, o->n_head, f);
        if (mcp_output_omitted(o) > 0)
                fprintf(f, "\n[... %" PRIu64 " bytes of output omitted: the output was longer than this server's "
                        "limit of %zu bytes; the first and the last %zu are shown ...]\n",
                        mcp_output_omitted(o), o->cap, half);
        for (size_t i = 0; i < o->n_tail; i++)
                fputc(o->tail[(o->tail_start + i) % half], f);
        if (fclose(f) != 0) {
                free(text);
                return NULL;
        }
        /* NUL bytes would end the string early; bytes that are not UTF-8
         * would make the JSON invalid. */
        for (size_t i = 0; i < len; i++)
                if (text[i] == '\0')
                        text[i] = '?';
        utf8_replace_invalid(text);
        return text;
}

void mcp_output_done(McpOutput *o) {
        free(o->head);
        free(o->tail);
        *o = (McpOutput) {};
}
