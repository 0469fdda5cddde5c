/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The MCP message layer: JSON-RPC 2.0 and the MCP methods (mcp-core.h). */

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "mcp-core.h"
#include "util.h"

const char * const mcp_protocol_versions[] = {
        "2025-11-25",   /* @modelcontextprotocol/sdk 1.2x's LATEST_PROTOCOL_VERSION */
        "2025-06-18",
        "2025-03-26",
        "2024-11-05",   /* the first revision; Claude Desktop and most hosts of 2025 */
        NULL,
};

/* Server-defined JSON-RPC error (the -32000..-32099 range): too many calls. */
#define MCP_SERVER_BUSY (-32000)

static inline void json_object_putp_core(json_object **o) {
        if (*o)
                json_object_put(*o);
}

struct McpCall {
        McpSession *session;
        json_object *id;
        char *id_key;                   /* the id as JSON text: 7 and "7" are different ids */
        const McpTool *tool;
        json_object *arguments;
        int cancel_fd;
        bool cancelled;                 /* under the session's lock */
        McpCall *next;
};

struct McpSession {
        const McpServer *server;
        pthread_mutex_t lock;
        char version[16];
        bool answered_initialize;
        bool initialized;
        McpCall *calls;
        unsigned n_calls;
        void (*notify)(void *userdata, char *message);
        void *notify_userdata;
};

const char *mcp_negotiate_version(const char *requested) {
        for (size_t i = 0; requested && mcp_protocol_versions[i]; i++)
                if (streq(requested, mcp_protocol_versions[i]))
                        return mcp_protocol_versions[i];
        return mcp_protocol_versions[0];
}

void mcp_tool_result_done(McpToolResult *r) {
        free(r->text);
        r->text = NULL;
        if (r->structured)
                json_object_put(r->structured);
        r->structured = NULL;
}

int mcp_tool_error(McpToolResult *r, const char *fmt, ...) {
        va_list ap;

        mcp_tool_result_done(r);
        va_start(ap, fmt);
        if (vasprintf(&r->text, fmt, ap) < 0)
                r->text = NULL;
        va_end(ap);
        r->is_error = true;
        return r->text ? 0 : -ENOMEM;
}

McpSession *mcp_session_new(const McpServer *server) {
        McpSession *s = calloc(1, sizeof(McpSession));

        if (!s)
                return NULL;
        s->server = server;
        pthread_mutex_init(&s->lock, NULL);
        return s;
}

McpSession *mcp_session_free(McpSession *s) {
        if (!s)
                return NULL;
        while (s->calls) {
                McpCall *c = s->calls;
                s->calls = c->next;
                c->session = NULL;
                mcp_call_free(c);
        }
        pthread_mutex_destroy(&s->lock);
        free(s);
        return NULL;
}

static void call_cancel_locked(McpCall *c) {
        uint64_t one = 1;

        if (c->cancelled)
                return;
        c->cancelled = true;
        /* An eventfd's counter cannot overflow on the first write. */
        (void) !write(c->cancel_fd, &one, sizeof(one));
}

void mcp_session_cancel_all(McpSession *s) {
        pthread_mutex_lock(&s->lock);
        for (McpCall *c = s->calls; c; c = c->next)
                call_cancel_locked(c);
        pthread_mutex_unlock(&s->lock);
}

unsigned mcp_session_calls(McpSession *s) {
        unsigned n;

        pthread_mutex_lock(&s->lock);
        n = s->n_calls;
        pthread_mutex_unlock(&s->lock);
        return n;
}

const char *mcp_session_version(McpSession *s) {
        return s->version;
}

bool mcp_session_initialized(McpSession *s) {
        bool b;

        pthread_mutex_lock(&s->lock);
        b = s->initialized;
        pthread_mutex_unlock(&s->lock);
        return b;
}

int mcp_call_cancel_fd(const McpCall *call) {
        return call->cancel_fd;
}

bool mcp_call_cancelled(const McpCall *call) {
        bool b;

        if (!call->session)
                return call->cancelled;
        pthread_mutex_lock(&call->session->lock);
        b = call->cancelled;
        pthread_mutex_unlock(&call->session->lock);
        return b;
}

void mcp_call_free(McpCall *call) {
        McpSession *s;

        if (!call)
                return;
        s = call->session;
        if (s) {
                pthread_mutex_lock(&s->lock);
                for (McpCall **p = &s->calls; *p; p = &(*p)->next)
                        if (*p == call) {
                                *p = call->next;
                                s->n_calls--;
                                break;
                        }
                pthread_mutex_unlock(&s->lock);
        }
        json_object_put(call->id);
        json_object_put(call->arguments);
        free(call->id_key);
        safe_close(call->cancel_fd);
        free(call);
}

/* The response envelope around RESULT (taken), as text. */
static char *response_text(json_object *id, json_object *result) {
        json_object *o = json_object_new_object();
        char *text = NULL;

        if (!o) {
                json_object_put(result);
                return NULL;
        }
        json_object_object_add(o, "jsonrpc", json_object_new_string("2.0"));
        json_object_object_add(o, "id", id ? json_object_get(id) : NULL);
        json_object_object_add(o, "result", result);
        text = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(o);
        return text;
}

static char *error_text(json_object *id, int code, const char *message) {
        json_object *o = json_object_new_object(), *e = json_object_new_object();
        char *text = NULL;

        if (!o || !e) {
                json_object_put(o);
                json_object_put(e);
                return NULL;
        }
        json_object_object_add(e, "code", json_object_new_int(code));
        json_object_object_add(e, "message", json_object_new_string(message));
        json_object_object_add(o, "jsonrpc", json_object_new_string("2.0"));
        json_object_object_add(o, "id", id ? json_object_get(id) : NULL);
        json_object_object_add(o, "error", e);
        text = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(o);
        return text;
}

/* Strict JSON of exactly LEN bytes (whitespace around it allowed); NULL if
 * it is not. */
static json_object *parse_strict(const char *buf, size_t len) {
        json_tokener *tok;
        json_object *o;
        bool continued = false;
        size_t end;

        if (len > INT32_MAX)
                return NULL;
        tok = json_tokener_new_ex(64);
        if (!tok)
                return NULL;
        json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
        o = json_tokener_parse_ex(tok, buf, (int) len);
        if (json_tokener_get_error(tok) != json_tokener_success) {
                /* A bare number at the end of the buffer waits for more input. */
                if (json_tokener_get_error(tok) == json_tokener_continue) {
                        o = json_tokener_parse_ex(tok, "", 1);
                        continued = true;
                }
                if (!o || json_tokener_get_error(tok) != json_tokener_success) {
                        json_object_put(o);
                        json_tokener_free(tok);
                        return NULL;
                }
        }
        /* After the second, empty chunk the end is that chunk's: all of BUF was read. */
        end = continued ? len : json_tokener_get_parse_end(tok);
        json_tokener_free(tok);
        for (; end < len; end++)
                if (!strchr(" \t\r\n", buf[end]) && buf[end] != '\0') {
                        json_object_put(o);
                        return NULL;
                }
        return o;
}

/* JSON-RPC's id as MCP allows it: a string or an integer, never null. */
static bool id_valid(json_object *id) {
        return id && (json_object_is_type(id, json_type_string) || json_object_is_type(id, json_type_int));
}

void mcp_peek(const char *buf, size_t len, McpPeek *ret) {
        json_object *o = parse_strict(buf, len), *id = NULL, *method = NULL;

        *ret = (McpPeek) {};
        if (!o || !json_object_is_type(o, json_type_object)) {
                json_object_put(o);
                return;
        }
        bool has_id = json_object_object_get_ex(o, "id", &id);
        bool has_method = json_object_object_get_ex(o, "method", &method) &&
                          json_object_is_type(method, json_type_string);
        ret->is_request = has_id && has_method;
        ret->is_initialize = ret->is_request && streq(json_object_get_string(method), "initialize");
        ret->is_notification_or_response = !has_id || !has_method;
        json_object_put(o);
}

static json_object *initialize_result(McpSession *s, const char *version) {
        const McpServer *server = s->server;
        json_object *r = json_object_new_object(), *caps = json_object_new_object(),
                    *tools = json_object_new_object(), *info = json_object_new_object();

        if (!r || !caps || !tools || !info) {
                json_object_put(r);
                json_object_put(caps);
                json_object_put(tools);
                json_object_put(info);
                return NULL;
        }
        /* Tools that need a method of the daemon appear once it offers it
         * (stdio says so with notifications/tools/list_changed). */
        json_object_object_add(tools, "listChanged", json_object_new_boolean(server->tool_available != NULL));
        json_object_object_add(caps, "tools", tools);
        json_object_object_add(info, "name", json_object_new_string(server->name));
        if (server->title)
                json_object_object_add(info, "title", json_object_new_string(server->title));
        json_object_object_add(info, "version", json_object_new_string(server->version));
        json_object_object_add(r, "protocolVersion", json_object_new_string(version));
        json_object_object_add(r, "capabilities", caps);
        json_object_object_add(r, "serverInfo", info);
        if (server->instructions)
                json_object_object_add(r, "instructions", json_object_new_string(server->instructions));
        return r;
}

static char *handle_initialize(McpSession *s, json_object *id, json_object *params) {
        json_object *v = NULL, *result;
        const char *version;

        if (!params || !json_object_object_get_ex(params, "protocolVersion", &v) ||
            !json_object_is_type(v, json_type_string))
                return error_text(id, MCP_INVALID_PARAMS, "initialize: params.protocolVersion (a string) is required");
        pthread_mutex_lock(&s->lock);
        if (s->answered_initialize) {
                pthread_mutex_unlock(&s->lock);
                return error_text(id, MCP_INVALID_REQUEST, "initialize: this session is already initialized");
        }
        version = mcp_negotiate_version(json_object_get_string(v));
        snprintf(s->version, sizeof(s->version), "%s", version);
        s->answered_initialize = true;
        pthread_mutex_unlock(&s->lock);
        result = initialize_result(s, version);
        return result ? response_text(id, result) : NULL;
}

void mcp_session_set_notify(McpSession *s, void (*send)(void *userdata, char *message), void *userdata) {
        s->notify = send;
        s->notify_userdata = userdata;
}

void mcp_call_tools_changed(McpCall *call) {
        McpSession *s = call->session;
        char *text;

        if (!s || !s->notify)
                return;
        text = strdup("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}");
        if (text)
                s->notify(s->notify_userdata, text);
}

static bool tool_available(const McpServer *server, const McpTool *t) {
        return t->requires == 0 || !server->tool_available || server->tool_available(server->userdata, t);
}

static json_object *tool_to_json(const McpTool *t) {
        json_object *o = json_object_new_object(), *a = json_object_new_object();
        json_object *schema = json_tokener_parse(t->input_schema);

        if (!o || !a || !schema) {
                json_object_put(o);
                json_object_put(a);
                json_object_put(schema);
                return NULL;
        }
        json_object_object_add(o, "name", json_object_new_string(t->name));
        if (t->title)
                json_object_object_add(o, "title", json_object_new_string(t->title));
        json_object_object_add(o, "description", json_object_new_string(t->description));
        json_object_object_add(o, "inputSchema", schema);
        if (t->title)
                json_object_object_add(a, "title", json_object_new_string(t->title));
        json_object_object_add(a, "readOnlyHint", json_object_new_boolean(t->read_only));
        json_object_object_add(a, "destructiveHint", json_object_new_boolean(t->destructive));
        json_object_object_add(a, "idempotentHint", json_object_new_boolean(t->idempotent));
        /* A worker reaches only what the allow-list names, inside the
         * operator's floor: not the open world. */
        json_object_object_add(a, "openWorldHint", json_object_new_boolean(false));
        json_object_object_add(o, "annotations", a);
        return o;
}

static char *handle_tools_list(McpSession *s, json_object *id, json_object *params) {
        json_object *cursor = NULL, *result, *list;

        if (params && json_object_object_get_ex(params, "cursor", &cursor) && cursor)
                /* One page holds every tool: no cursor was ever handed out. */
                return error_text(id, MCP_INVALID_PARAMS, "tools/list: unknown cursor");
        result = json_object_new_object();
        list = json_object_new_array();
        if (!result || !list) {
                json_object_put(result);
                json_object_put(list);
                return NULL;
        }
        for (size_t i = 0; i < s->server->n_tools; i++) {
                if (!tool_available(s->server, s->server->tools[i]))
                        continue;
                json_object *t = tool_to_json(s->server->tools[i]);
                if (!t) {
                        json_object_put(result);
                        json_object_put(list);
                        return error_text(id, MCP_INTERNAL_ERROR, "tools/list: a tool's schema failed to build");
                }
                json_object_array_add(list, t);
        }
        json_object_object_add(result, "tools", list);
        return response_text(id, result);
}

static const McpTool *find_tool(const McpServer *server, const char *name) {
        /* Two tools may share a name (one replaces the other when the
         * daemon offers more): the first one available now. */
        for (size_t i = 0; i < server->n_tools; i++)
                if (streq(server->tools[i]->name, name) && tool_available(server, server->tools[i]))
                        return server->tools[i];
        return NULL;
}

static char *handle_tools_call(McpSession *s, json_object *id, json_object *params, McpCall **ret_call) {
        const McpServer *server = s->server;
        json_object *name = NULL, *args = NULL;
        const McpTool *tool;
        const char *key;
        McpCall *c;
        char msg[256];

        if (!params || !json_object_object_get_ex(params, "name", &name) || !json_object_is_type(name, json_type_string))
                return error_text(id, MCP_INVALID_PARAMS, "tools/call: params.name (a string) is required");
        tool = find_tool(server, json_object_get_string(name));
        if (!tool) {
                snprintf(msg, sizeof(msg), "Unknown tool: %.200s", json_object_get_string(name));
                return error_text(id, MCP_INVALID_PARAMS, msg);
        }
        if (json_object_object_get_ex(params, "arguments", &args) && args &&
            !json_object_is_type(args, json_type_object))
                return error_text(id, MCP_INVALID_PARAMS, "tools/call: params.arguments must be an object");

        c = calloc(1, sizeof(McpCall));
        if (!c)
                return NULL;
        c->cancel_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        key = json_object_to_json_string_ext(id, JSON_C_TO_STRING_PLAIN);
        c->id_key = strdup(key);
        c->arguments = args ? json_object_get(args) : json_object_new_object();
        if (c->cancel_fd < 0 || !c->id_key || !c->arguments) {
                mcp_call_free(c);
                return NULL;
        }
        c->id = json_object_get(id);
        c->tool = tool;

        pthread_mutex_lock(&s->lock);
        unsigned max = server->max_calls ?: MCP_MAX_CALLS_DEFAULT;
        bool busy = s->n_calls >= max, duplicate = false;
        for (McpCall *o = s->calls; o && !duplicate; o = o->next)
                duplicate = streq(o->id_key, c->id_key);
        if (!busy && !duplicate) {
                c->session = s;
                c->next = s->calls;
                s->calls = c;
                s->n_calls++;
        }
        pthread_mutex_unlock(&s->lock);
        if (busy || duplicate) {
                mcp_call_free(c);
                if (duplicate)
                        return error_text(id, MCP_INVALID_REQUEST, "a request with this id is still at work");
                snprintf(msg, sizeof(msg), "too many tool calls at work in this session (at most %u); retry later", max);
                return error_text(id, MCP_SERVER_BUSY, msg);
        }
        *ret_call = c;
        return NULL;
}

static void handle_cancelled(McpSession *s, json_object *params) {
        json_object *rid = NULL;
        const char *key;

        if (!params || !json_object_object_get_ex(params, "requestId", &rid) || !id_valid(rid))
                return;
        key = json_object_to_json_string_ext(rid, JSON_C_TO_STRING_PLAIN);
        pthread_mutex_lock(&s->lock);
        for (McpCall *c = s->calls; c; c = c->next)
                if (streq(c->id_key, key))
                        call_cancel_locked(c);
        pthread_mutex_unlock(&s->lock);
}

/* Requests other than initialize and ping wait for initialize's answer
 * (the lifecycle of the specification). */
static bool session_ready(McpSession *s) {
        bool b;

        pthread_mutex_lock(&s->lock);
        b = s->answered_initialize;
        pthread_mutex_unlock(&s->lock);
        return b;
}

static char *handle_request(McpSession *s, const char *method, json_object *id, json_object *params,
                            McpCall **ret_call) {
        char msg[256];

        if (streq(method, "initialize"))
                return handle_initialize(s, id, params);
        if (streq(method, "ping"))
                return response_text(id, json_object_new_object());
        if (streq(method, "tools/list") || streq(method, "tools/call")) {
                if (!session_ready(s))
                        return error_text(id, MCP_INVALID_REQUEST, "the session is not initialized: send initialize first");
                return streq(method, "tools/list") ? handle_tools_list(s, id, params)
                                                   : handle_tools_call(s, id, params, ret_call);
        }
        snprintf(msg, sizeof(msg), "Method not found: %.200s", method);
        return error_text(id, MCP_METHOD_NOT_FOUND, msg);
}

static void handle_notification(McpSession *s, const char *method, json_object *params) {
        if (streq(method, "notifications/cancelled"))
                handle_cancelled(s, params);
        else if (streq(method, "notifications/initialized")) {
                pthread_mutex_lock(&s->lock);
                s->initialized = s->answered_initialize;
                pthread_mutex_unlock(&s->lock);
        }
        /* Any other notification needs nothing from us (JSON-RPC: never answered). */
}

char *mcp_too_large(const McpServer *server, size_t len) {
        size_t max = server->max_message ?: MCP_MAX_MESSAGE_DEFAULT;
        char msg[160];

        snprintf(msg, sizeof(msg), "Invalid Request: a message of %zu bytes exceeds this server's limit of %zu bytes",
                 len, max);
        return error_text(NULL, MCP_INVALID_REQUEST, msg);
}

int mcp_session_handle(McpSession *s, const char *buf, size_t len, char **ret_response, McpCall **ret_call) {
        _cleanup_(json_object_putp_core) json_object *o = NULL;
        json_object *id = NULL, *method = NULL, *params = NULL, *v = NULL;
        size_t max = s->server->max_message ?: MCP_MAX_MESSAGE_DEFAULT;
        char *response = NULL;
        bool has_id;

        *ret_response = NULL;
        *ret_call = NULL;
        if (len > max) {
                response = mcp_too_large(s->server, len);
                goto out;
        }
        o = parse_strict(buf, len);
        if (!o) {
                response = error_text(NULL, MCP_PARSE_ERROR, "Parse error: not one well-formed JSON value");
                goto out;
        }
        if (json_object_is_type(o, json_type_array)) {
                /* Batches were in 2025-03-26 only; no client this server serves sends them. */
                response = error_text(NULL, MCP_INVALID_REQUEST, "Invalid Request: JSON-RPC batches are not supported");
                goto out;
        }
        if (!json_object_is_type(o, json_type_object)) {
                response = error_text(NULL, MCP_INVALID_REQUEST, "Invalid Request: a message is a JSON object");
                goto out;
        }
        has_id = json_object_object_get_ex(o, "id", &id);
        if (has_id && !id_valid(id))
                id = NULL;
        if (!json_object_object_get_ex(o, "jsonrpc", &v) || !json_object_is_type(v, json_type_string) ||
            !streq(json_object_get_string(v), "2.0")) {
                response = error_text(id, MCP_INVALID_REQUEST, "Invalid Request: \"jsonrpc\" must be \"2.0\"");
                goto out;
        }
        if (!json_object_object_get_ex(o, "method", &method)) {
                /* A response to a request of ours: this server sends none, so
                 * there is nothing to match it with. */
                if (has_id && (json_object_object_get_ex(o, "result", NULL) ||
                               json_object_object_get_ex(o, "error", NULL)))
                        goto out;
                response = error_text(id, MCP_INVALID_REQUEST, "Invalid Request: no \"method\"");
                goto out;
        }
        if (!json_object_is_type(method, json_type_string)) {
                response = error_text(id, MCP_INVALID_REQUEST, "Invalid Request: \"method\" must be a string");
                goto out;
        }
        if (has_id && !id) {
                response = error_text(NULL, MCP_INVALID_REQUEST, "Invalid Request: \"id\" must be a string or an integer");
                goto out;
        }
        if (json_object_object_get_ex(o, "params", &params) && !json_object_is_type(params, json_type_object)) {
                if (has_id)
                        response = error_text(id, MCP_INVALID_PARAMS, "Invalid params: \"params\" must be an object");
                goto out;
        }
        if (!has_id) {
                handle_notification(s, json_object_get_string(method), params);
                goto out;
        }
        response = handle_request(s, json_object_get_string(method), id, params, ret_call);
        if (!response && !*ret_call)
                return -ENOMEM;
out:
        *ret_response = response;
        return 0;
}

static json_object *tool_result_json(McpToolResult *r) {
        json_object *o = json_object_new_object(), *content = json_object_new_array(),
                    *text = json_object_new_object();

        if (!o || !content || !text) {
                json_object_put(o);
                json_object_put(content);
                json_object_put(text);
                return NULL;
        }
        json_object_object_add(text, "type", json_object_new_string("text"));
        json_object_object_add(text, "text", json_object_new_string(r->text ?: ""));
        json_object_array_add(content, text);
        json_object_object_add(o, "content", content);
        if (r->structured && json_object_is_type(r->structured, json_type_object))
                json_object_object_add(o, "structuredContent", json_object_get(r->structured));
        json_object_object_add(o, "isError", json_object_new_boolean(r->is_error));
        return o;
}

char *mcp_call_run(McpCall *call) {
        McpSession *s = call->session;
        McpToolResult r = {};
        char *response = NULL;
        int k;

        k = call->tool->fn(s->server->userdata, call, call->arguments, &r);
        if (mcp_call_cancelled(call))
                ;       /* The client no longer waits: no response (the specification). */
        else if (k < 0) {
                char msg[160];
                snprintf(msg, sizeof(msg), "Internal error in %s: %s", call->tool->name, strerror(-k));
                response = error_text(call->id, MCP_INTERNAL_ERROR, msg);
        } else {
                json_object *result = tool_result_json(&r);
                response = result ? response_text(call->id, result) : NULL;
        }
        mcp_tool_result_done(&r);
        mcp_call_free(call);
        return response;
}
