/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* `sandboxctl mcp`: its options, its ceilings, its transport (sandboxctl-mcp.h). */

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mcp-tools.h"
#include "mcp-transport.h"
#include "sandboxctl-args.h"
#include "sandboxctl-exit.h"
#include "sandboxctl-mcp.h"

enum {
        ARG_LISTEN = 0x100,
        ARG_TOKEN_FILE,
        ARG_CLASS,
        ARG_ALLOW,
        ARG_MEMORY,
        ARG_RUNTIME,
        ARG_IDLE,
        ARG_MAX_WORKERS,
        ARG_MAX_OUTPUT,
        ARG_MAX_MESSAGE,
        ARG_WORKSPACE,
        ARG_ASK_PASSWORD,
};

static void mcp_help(void) {
        printf("sandboxctl mcp - a Model Context Protocol server for sandboxd workers\n"
               "\n"
               "  sandboxctl mcp [OPTIONS]                      stdio (an MCP host starts it)\n"
               "  sandboxctl mcp --listen PATH [OPTIONS]        Streamable HTTP on a UNIX socket\n"
               "  sandboxctl mcp --listen 127.0.0.1:PORT --token-file FILE [OPTIONS]\n"
               "                                                Streamable HTTP on loopback TCP\n"
               "\n"
               "Runs as the calling user (never root): polkit decides what it may do, as for\n"
               "sandboxctl. Every worker it starts is Origin=llm-generated. The options below\n"
               "are ceilings a tool's arguments can only narrow:\n"
               "  --class CLASS          the weakest class a worker gets (default untrusted)\n"
               "  --allow PATTERN        egress a tool may ask for (repeatable; default none)\n"
               "  --workspace NAME       a workspace a tool may name (repeatable; default none)\n"
               "  --memory SIZE          memory per worker at most (default 1G)\n"
               "  --runtime DURATION     a worker's life and a command's timeout at most (1h)\n"
               "  --idle DURATION        a worker's idle timeout at most (30min)\n"
               "  --max-workers N        workers started through MCP alive at once (4)\n"
               "  --max-output SIZE      a command's output returned, head and tail (64K)\n"
               "  --max-message SIZE     one protocol message at most (4M)\n"
               "  --ask-password         let polkit ask the user's agent (default: never ask)\n"
               "  --listen ADDR          PATH (a UNIX socket only this user may use) or\n"
               "                         127.0.0.1:PORT, [::1]:PORT; the endpoint is /mcp\n"
               "  --token-file FILE      the bearer token TCP requests carry (mode 0600)\n");
}

static int parse_count(const char *s, unsigned *ret) {
        uint64_t v;

        if (parse_uint64(s, &v) < 0 || v == 0 || v > 1024)
                return -EINVAL;
        *ret = (unsigned) v;
        return 0;
}

typedef struct McpArgs {
        McpToolsContext ctx;
        const char *listen;
        const char *token_file;
        uint64_t max_message;
} McpArgs;

__attribute__((format(printf, 1, 2)))
static int usage(const char *fmt, ...) {
        va_list ap;

        fprintf(stderr, "sandboxctl: mcp: ");
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
        return -EINVAL;
}

static int apply_option(McpArgs *a, int c, const char *v) {
        McpPolicy *p = &a->ctx.policy;
        uint64_t u;

        switch (c) {
        case ARG_LISTEN:
                a->listen = v;
                return 0;
        case ARG_TOKEN_FILE:
                a->token_file = v;
                return 0;
        case ARG_CLASS:
                p->class_floor = sbx_class_from_string(v);
                return p->class_floor < 0 ? usage("--class: unknown class '%s'", v) : 0;
        case ARG_ALLOW:
                return strv_extend(&p->allow, v) < 0 ? -ENOMEM : 0;
        case ARG_WORKSPACE:
                return strv_extend(&p->workspaces, v) < 0 ? -ENOMEM : 0;
        case ARG_MEMORY:
                return parse_size(v, &p->memory_max) < 0 || p->memory_max == 0
                               ? usage("--memory: invalid size '%s'", v) : 0;
        case ARG_RUNTIME:
                return parse_duration_usec(v, &p->runtime_max_usec) < 0 || p->runtime_max_usec < USEC_PER_SEC
                               ? usage("--runtime: invalid duration '%s' (1s or more)", v) : 0;
        case ARG_IDLE:
                return parse_duration_usec(v, &p->idle_max_usec) < 0 || p->idle_max_usec < USEC_PER_SEC
                               ? usage("--idle: invalid duration '%s' (1s or more)", v) : 0;
        case ARG_MAX_WORKERS:
                return parse_count(v, &p->max_workers) < 0 ? usage("--max-workers: expected 1 to 1024, got '%s'", v)
                                                           : 0;
        case ARG_MAX_OUTPUT:
                if (parse_size(v, &u) < 0 || u < 1024 || u > 64u * 1024 * 1024)
                        return usage("--max-output: expected a size from 1K to 64M, got '%s'", v);
                p->max_output = u;
                return 0;
        case ARG_MAX_MESSAGE:
                if (parse_size(v, &u) < 0 || u < 4096 || u > 256u * 1024 * 1024)
                        return usage("--max-message: expected a size from 4K to 256M, got '%s'", v);
                a->max_message = u;
                return 0;
        case ARG_ASK_PASSWORD:
                a->ctx.ask_password = true;
                return 0;
        default:
                return -EINVAL;
        }
}

/* 0, 1 when --help or a global option printed what was asked, -EINVAL. */
static int parse_args(McpArgs *a, int argc, char *argv[], CliGlobalOption global) {
        static const struct option options[] = {
                { "help",         no_argument,       NULL, 'h' },
                { "listen",       required_argument, NULL, ARG_LISTEN },
                { "token-file",   required_argument, NULL, ARG_TOKEN_FILE },
                { "class",        required_argument, NULL, ARG_CLASS },
                { "allow",        required_argument, NULL, ARG_ALLOW },
                { "workspace",    required_argument, NULL, ARG_WORKSPACE },
                { "memory",       required_argument, NULL, ARG_MEMORY },
                { "runtime",      required_argument, NULL, ARG_RUNTIME },
                { "idle",         required_argument, NULL, ARG_IDLE },
                { "max-workers",  required_argument, NULL, ARG_MAX_WORKERS },
                { "max-output",   required_argument, NULL, ARG_MAX_OUTPUT },
                { "max-message",  required_argument, NULL, ARG_MAX_MESSAGE },
                { "ask-password", no_argument,       NULL, ARG_ASK_PASSWORD },
                SANDBOXCTL_GLOBAL_OPTIONS,
                {}
        };
        int c, r;

        optind = 0;
        while ((c = getopt_long(argc, argv, ":h", options, NULL)) >= 0) {
                if (c == 'h') {
                        mcp_help();
                        return 1;
                }
                if (is_global_option(c)) {
                        if (global && global(c) > 0)
                                return 1;
                        continue;
                }
                if (c == ':')
                        return usage("option '%s' requires an argument", argv[optind - 1]);
                if (c == '?')
                        return usage("unknown option '%s'", argv[optind - 1]);
                r = apply_option(a, c, optarg);
                if (r < 0)
                        return r;
        }
        if (optind < argc)
                return usage("unexpected argument '%s'", argv[optind]);
        if (a->token_file && (!a->listen || a->listen[0] == '/'))
                return usage("%s", "--token-file is for --listen on TCP");
        return 0;
}

int mcp_verb_run(int argc, char *argv[], CliGlobalOption global, const char *version) {
        McpArgs a = { .ctx.policy = MCP_POLICY_DEFAULTS, .ctx.lock = PTHREAD_MUTEX_INITIALIZER };
        _cleanup_free_ char *token = NULL;
        McpListen l;
        int r;

        r = parse_args(&a, argc, argv, global);
        if (r != 0) {
                strv_free(a.ctx.policy.allow);
                strv_free(a.ctx.policy.workspaces);
                return r > 0 ? EXIT_OK : r == -ENOMEM ? EXIT_FAILED : EXIT_USAGE;
        }
        /* Root needs no polkit and owns every worker: a model driving root's
         * server would stand above every wall this server keeps. */
        if (geteuid() == 0) {
                fprintf(stderr, "sandboxctl: mcp does not run as root: run it as the user whose workers a model "
                        "may start\n");
                r = EXIT_REFUSED;
                goto out;
        }
        McpServer server = {
                .name = "sandboxd",
                .title = "sandboxd workers",
                .version = version,
                .instructions = mcp_instructions,
                .tools = mcp_tools,
                .n_tools = mcp_tools_count,
                .max_message = a.max_message,
                .userdata = &a.ctx,
                .tool_available = mcp_tools_available,
        };
        /* A host that went away must not kill us mid-answer. */
        signal(SIGPIPE, SIG_IGN);
        if (!a.listen) {
                r = mcp_stdio_run(&server, STDIN_FILENO, STDOUT_FILENO);
                if (r < 0)
                        fprintf(stderr, "sandboxctl: mcp: %s\n", strerror(-r));
                r = r < 0 ? EXIT_FAILED : EXIT_OK;
                goto out;
        }
        r = mcp_listen_parse(a.listen, &l);
        if (r < 0) {
                fprintf(stderr, "sandboxctl: mcp: --listen: %s '%s' (PATH, 127.0.0.1:PORT or [::1]:PORT)\n",
                        r == -EPERM ? "not a loopback address:" : "expected an absolute path or an address, got",
                        a.listen);
                r = EXIT_USAGE;
                goto out;
        }
        if (!l.unix_socket) {
                if (!a.token_file) {
                        fprintf(stderr, "sandboxctl: mcp: --listen on TCP needs --token-file FILE: any local user can "
                                "connect to a port\n");
                        r = EXIT_USAGE;
                        goto out;
                }
                r = mcp_token_read(a.token_file, &token);
                if (r < 0) {
                        fprintf(stderr, "sandboxctl: mcp: --token-file %s: %s\n", a.token_file,
                                r == -EPERM    ? "group or others may read it (chmod 600)"
                                : r == -EINVAL ? "expected one token of 16 or more characters without spaces"
                                               : strerror(-r));
                        r = r == -ENOENT ? EXIT_NOT_FOUND : EXIT_USAGE;
                        goto out;
                }
        }
        r = mcp_http_run(&server, &l, token);
        if (r < 0) {
                fprintf(stderr, "sandboxctl: mcp: --listen %s: %s\n", a.listen, strerror(-r));
                r = EXIT_FAILED;
        } else
                r = EXIT_OK;
out:
        if (token)
                explicit_bzero(token, strlen(token));
        strv_free(a.ctx.policy.allow);
        strv_free(a.ctx.policy.workspaces);
        return r;
}
