/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What a model may ask of `sandboxctl mcp`: the ceilings the person who
 * started the server set with its flags, and the worker spec a tool's
 * arguments become inside them. A tool argument can only narrow a ceiling;
 * every worker is Origin=llm-generated, so the daemon's origin floor
 * (untrusted unless the operator said otherwise) holds whatever is asked.
 * Pure: no bus, no I/O, unit-tested. */

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "class.h"
#include "sandboxctl-spec.h"

#define MCP_ORIGIN "llm-generated"

typedef struct McpPolicy {
        SbxClass class_floor;           /* the weakest class a tool gets; weaker asks are raised */
        char **allow;                   /* the egress patterns a tool may ask for (NULL: none) */
        char **workspaces;              /* the workspaces a tool may name (NULL: none) */
        uint64_t memory_max;            /* bytes; a tool may ask for less */
        uint64_t runtime_max_usec;      /* a worker's life and a command's timeout at most */
        uint64_t idle_max_usec;         /* a created worker's idle timeout at most */
        unsigned max_workers;           /* alive llm-generated workers of this user at once */
        uint64_t max_output;            /* bytes of a command's output kept, head and tail */
} McpPolicy;

#define MCP_POLICY_DEFAULTS                                             \
        ((McpPolicy) {                                                  \
                .class_floor = SBX_CLASS_UNTRUSTED,                     \
                .memory_max = UINT64_C(1) << 30,                        \
                .runtime_max_usec = 3600 * USEC_PER_SEC,                \
                .idle_max_usec = 1800 * USEC_PER_SEC,                   \
                .max_workers = 4,                                       \
                .max_output = 64 * 1024,                                \
        })

/* The default of run_command's timeout (seconds), and a created worker's
 * idle timeout when the tool names none. */
#define MCP_DEFAULT_TIMEOUT_SEC 60u
#define MCP_DEFAULT_IDLE_SEC 600u

/* Whether PATTERN (host, *.domain, either with :PORT) asks for nothing the
 * ceiling CEILING does not already allow: the same pattern, a host or
 * narrower wildcard under a ceiling wildcard, the same port; "*" in the
 * ceiling covers everything. Case-insensitive. */
bool mcp_allow_covered(char * const *ceiling, const char *pattern);

/* Builds the spec of a worker that runs ARGV (taken; NULL: the idle
 * `sleep infinity` of create_worker) from a tool's ARGUMENTS ("class",
 * "allow", "memory", "idle_timeout", "workspace", "timeout") inside P.
 * RUNTIME_USEC is the worker's life (a command's timeout; 0: P's ceiling).
 * Returns 0 with *SPEC filled and NOTES (may be NULL) a sentence for the
 * model when something was raised, or -EINVAL / -EPERM with ERR saying what
 * the model may ask instead. */
int mcp_policy_spec(const McpPolicy *p, json_object *arguments, char **argv, uint64_t runtime_usec, CliSpec *spec,
                    char *notes, size_t notes_size, char *err, size_t err_size);

/* run_command's "timeout" in seconds (default MCP_DEFAULT_TIMEOUT_SEC) as
 * microseconds, within P: 0, or -EINVAL / -EPERM with ERR. */
int mcp_policy_timeout(const McpPolicy *p, json_object *arguments, uint64_t *ret_usec, char *err, size_t err_size);

/* A command as the tools take it: a string runs through /bin/sh -c, an
 * array of strings as argv. -EINVAL with ERR for anything else. */
int mcp_command_argv(json_object *command, char ***ret_argv, char *err, size_t err_size);

/* Output kept within a cap: the first half and the last half of what was
 * written, and how much was dropped between them. */
typedef struct McpOutput {
        char *head, *tail;              /* each cap/2 bytes */
        size_t cap, n_head, n_tail, tail_start;
        uint64_t total;
} McpOutput;

int mcp_output_init(McpOutput *o, size_t cap);
void mcp_output_add(McpOutput *o, const char *buf, size_t n);
/* The kept bytes, with "[... N bytes omitted ...]" between head and tail
 * when something was dropped; invalid UTF-8 replaced. */
char *mcp_output_text(const McpOutput *o);
uint64_t mcp_output_omitted(const McpOutput *o);
void mcp_output_done(McpOutput *o);
