/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The Model Context Protocol's message layer, with no transport and no bus:
 * JSON-RPC 2.0 framing and errors, initialize and the revision it settles
 * on, ping, tools/list, tools/call and notifications/cancelled. A transport
 * (mcp-stdio.c, mcp-http.c) hands it one message at a time and writes back
 * what it answers; a tools/call comes back as an McpCall the transport runs
 * when it can (a thread of its own), so a ping or a cancellation is answered
 * while a tool is still at work. Nothing here is global: a server holds the
 * tool table, a session what one client negotiated. Thread-safe per session. */

#include <json-c/json.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

/* JSON-RPC 2.0's error codes, and MCP's use of them. */
#define MCP_PARSE_ERROR      (-32700)
#define MCP_INVALID_REQUEST  (-32600)
#define MCP_METHOD_NOT_FOUND (-32601)
#define MCP_INVALID_PARAMS   (-32602)
#define MCP_INTERNAL_ERROR   (-32603)

/* The revisions this server speaks, newest first: the first is the one the
 * current @modelcontextprotocol/sdk asks for, the rest are those hosts in
 * the field still send. NULL-terminated. */
extern const char * const mcp_protocol_versions[];
/* The revision a server answers a client that asked for REQUESTED: the same
 * when spoken here, else the newest (the client then decides whether it can
 * go on, as the specification says). */
const char *mcp_negotiate_version(const char *requested);

/* Default cap on one message (a line of stdio, an HTTP body). */
#define MCP_MAX_MESSAGE_DEFAULT (4u * 1024u * 1024u)
/* Tool calls at work at once in one session: more are refused. */
#define MCP_MAX_CALLS_DEFAULT 8u

typedef struct McpCall McpCall;
typedef struct McpSession McpSession;

/* What a tool gives back: TEXT for the model (required), STRUCTURED the
 * same as JSON (may be NULL), IS_ERROR a tool error (a refusal, a failed
 * command), which the model sees, as opposed to a protocol error. */
typedef struct McpToolResult {
        char *text;
        json_object *structured;
        bool is_error;
} McpToolResult;

void mcp_tool_result_done(McpToolResult *r);
/* Fills R as a tool error with the message formatted; returns 0. */
__attribute__((format(printf, 2, 3)))
int mcp_tool_error(McpToolResult *r, const char *fmt, ...);

/* A tool's handler: ARGUMENTS is a JSON object (never NULL). Returns 0 with
 * *RET filled in, or a negative errno for a failure of the server itself
 * (answered as an internal error). Must return soon after CALL is
 * cancelled (mcp_call_cancel_fd()). */
typedef int (*McpToolFn)(void *userdata, McpCall *call, json_object *arguments, McpToolResult *ret);

typedef struct McpTool {
        const char *name;
        const char *title;
        const char *description;
        const char *input_schema;       /* a JSON Schema object, as JSON text */
        bool read_only, destructive, idempotent;
        unsigned requires;              /* what the server's tool_available() checks; 0: always there */
        McpToolFn fn;
} McpTool;

typedef struct McpServer {
        const char *name, *title, *version;
        const char *instructions;       /* NULL: none */
        const McpTool * const *tools;   /* what tools/list shows and tools/call runs */
        size_t n_tools;
        size_t max_message;             /* bytes; 0: MCP_MAX_MESSAGE_DEFAULT */
        unsigned max_calls;             /* 0: MCP_MAX_CALLS_DEFAULT */
        void *userdata;                 /* passed to every tool */
        /* Whether a tool whose REQUIRES is not 0 is offered now (tools/list)
         * and may be called (tools/call; otherwise it is an unknown tool).
         * NULL: every tool is. */
        bool (*tool_available)(void *userdata, const McpTool *tool);
} McpServer;

McpSession *mcp_session_new(const McpServer *server);
/* Cancels every call still at work; the caller must have joined their
 * threads first (mcp_session_cancel_all(), then wait). */
McpSession *mcp_session_free(McpSession *s);
void mcp_session_cancel_all(McpSession *s);
unsigned mcp_session_calls(McpSession *s);
/* The revision initialize settled on, "" before. */
const char *mcp_session_version(McpSession *s);
bool mcp_session_initialized(McpSession *s);

/* One message in BUF (LEN bytes, not necessarily NUL-terminated). Returns
 * the JSON text to send back in *RET_RESPONSE (NULL: nothing, a
 * notification), or a tools/call to run in *RET_CALL (then no response yet:
 * mcp_call_run() makes it). Returns 0, or -ENOMEM. Malformed JSON, a
 * message over the size cap, a batch and anything that is not JSON-RPC 2.0
 * are answered with the error the specification names, never dropped. */
int mcp_session_handle(McpSession *s, const char *buf, size_t len, char **ret_response, McpCall **ret_call);

/* The answer to a message of LEN bytes over the server's cap, which a
 * transport throws away unread (so its id is not known): an Invalid
 * Request error with a null id. */
char *mcp_too_large(const McpServer *server, size_t len);

/* What a transport learns from a message before handing it on. */
typedef struct McpPeek {
        bool is_request;        /* has an id and a method */
        bool is_initialize;
        bool is_notification_or_response;
} McpPeek;
void mcp_peek(const char *buf, size_t len, McpPeek *ret);

/* Runs the call's tool (blocking) and returns its response's JSON text, or
 * NULL when the call was cancelled (no response is sent for those) or on
 * -ENOMEM. Frees the call. */
char *mcp_call_run(McpCall *call);
/* Readable once the client cancelled the call: a tool polls it beside what
 * it waits on. */
int mcp_call_cancel_fd(const McpCall *call);
bool mcp_call_cancelled(const McpCall *call);
/* Tells the client that the tool list changed (a method of the daemon
 * appeared), where the transport can send a notification unasked (stdio);
 * elsewhere the client sees it at its next tools/list. */
void mcp_call_tools_changed(McpCall *call);
/* The transport's way to send a notification unasked: SEND takes the text. */
void mcp_session_set_notify(McpSession *s, void (*send)(void *userdata, char *message), void *userdata);

/* Drops a call that will not be run (a transport that failed to start a
 * thread for it), answering nothing. */
void mcp_call_free(McpCall *call);
