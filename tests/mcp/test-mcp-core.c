/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The MCP message layer without a bus or a transport: each refusal beside a
 * control that the same path answers when the message is right. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "mcp-core.h"
#include "util.h"

static int tool_echo(void *userdata, McpCall *call, json_object *args, McpToolResult *ret) {
        ret->text = strdup(json_object_to_json_string_ext(args, JSON_C_TO_STRING_PLAIN));
        return ret->text ? 0 : -ENOMEM;
}

/* Waits for its cancellation (at most 10 s), as a long command would. */
static int tool_wait(void *userdata, McpCall *call, json_object *args, McpToolResult *ret) {
        struct pollfd p = { .fd = mcp_call_cancel_fd(call), .events = POLLIN };

        (void) poll(&p, 1, 10000);
        ret->text = strdup(p.revents ? "cancelled" : "not cancelled");
        return 0;
}

static const McpTool echo = {
        .name = "echo", .description = "echoes its arguments",
        .input_schema = "{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"string\"}}}", .fn = tool_echo,
};
static const McpTool waiter = {
        .name = "wait", .description = "waits to be cancelled",
        .input_schema = "{\"type\":\"object\"}", .fn = tool_wait,
};
/* A second "echo" offered only when the server says so: it replaces the first. */
static const McpTool echo_hidden = {
        .name = "echo", .description = "hidden until available",
        .input_schema = "{\"type\":\"object\"}", .requires = 1, .fn = tool_echo,
};
static const McpTool * const tools[] = { &echo, &waiter };
/* The one it replaces, offered only while the other is not (as run_command's two). */
static const McpTool echo_plain = {
        .name = "echo", .description = "until replaced",
        .input_schema = "{\"type\":\"object\"}", .requires = 2, .fn = tool_echo,
};
static const McpTool * const tools_gated[] = { &echo_plain, &waiter, &echo_hidden };
static bool available_flag;
static bool available(void *userdata, const McpTool *t) {
        return t->requires == 1 ? available_flag : !available_flag;
}

static McpServer server = {
        .name = "test", .version = "1", .tools = tools, .n_tools = 2, .max_message = 1024, .max_calls = 2,
};

/* The response to LINE, parsed; NULL when there is none. *RET_CALL if a tools/call. */
static json_object *handle(McpSession *s, const char *line, McpCall **ret_call) {
        _cleanup_free_ char *response = NULL;
        McpCall *call = NULL;

        assert_int_equal(mcp_session_handle(s, line, strlen(line), &response, &call), 0);
        if (ret_call)
                *ret_call = call;
        else
                assert_null(call);
        return response ? json_tokener_parse(response) : NULL;
}

static int error_code(json_object *o) {
        json_object *e, *c;

        if (!o || !json_object_object_get_ex(o, "error", &e) || !json_object_object_get_ex(e, "code", &c))
                return 0;
        return json_object_get_int(c);
}

static json_object *result_of(json_object *o) {
        json_object *r = NULL;

        assert_non_null(o);
        assert_true(json_object_object_get_ex(o, "result", &r));
        return r;
}

static McpSession *initialized(const char *version) {
        McpSession *s = mcp_session_new(&server);
        char line[256];

        snprintf(line, sizeof(line), "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":"
                 "{\"protocolVersion\":\"%s\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}",
                 version);
        json_object *o = handle(s, line, NULL);
        json_object_put(o);
        assert_null(handle(s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", NULL));
        assert_true(mcp_session_initialized(s));
        return s;
}

static void test_negotiation(void **state) {
        /* Every revision spoken here is answered with itself. */
        for (size_t i = 0; mcp_protocol_versions[i]; i++) {
                McpSession *s = initialized(mcp_protocol_versions[i]);
                assert_string_equal(mcp_session_version(s), mcp_protocol_versions[i]);
                mcp_session_free(s);
        }
        assert_string_equal(mcp_protocol_versions[0], "2025-11-25");
        assert_non_null(mcp_negotiate_version("2024-11-05"));
        /* One that is not: the newest, and the client decides. */
        McpSession *s = initialized("1999-01-01");
        assert_string_equal(mcp_session_version(s), "2025-11-25");
        mcp_session_free(s);
        /* No protocolVersion at all: invalid params, and still not initialized. */
        s = mcp_session_new(&server);
        json_object *o = handle(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}", NULL);
        assert_int_equal(error_code(o), MCP_INVALID_PARAMS);
        json_object_put(o);
        o = handle(s, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}", NULL);
        assert_int_equal(error_code(o), MCP_INVALID_REQUEST);
        json_object_put(o);
        mcp_session_free(s);
}

static void test_malformed(void **state) {
        McpSession *s = initialized("2025-06-18");
        static const char * const bad[] = {
                "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"",            /* cut short */
                "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"} x",        /* trailing bytes */
                "{'jsonrpc':'2.0','id':1,'method':'ping'}",                     /* not JSON */
                "\xff\xfe",
                "",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                json_object *o = handle(s, bad[i], NULL), *id = NULL;
                assert_int_equal(error_code(o), MCP_PARSE_ERROR);
                assert_true(json_object_object_get_ex(o, "id", &id));
                assert_null(id);
                json_object_put(o);
        }
        /* Well-formed JSON that is no JSON-RPC 2.0 request. */
        static const char * const invalid[] = {
                "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]",          /* a batch */
                "42",
                "{\"id\":1,\"method\":\"ping\"}",                                /* no jsonrpc */
                "{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"ping\"}",
                "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}",         /* MCP: ids are never null */
                "{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}",
                "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":7}",
                "{\"jsonrpc\":\"2.0\",\"id\":1}",
        };
        for (size_t i = 0; i < ELEMENTSOF(invalid); i++) {
                json_object *o = handle(s, invalid[i], NULL);
                assert_int_equal(error_code(o), MCP_INVALID_REQUEST);
                json_object_put(o);
        }
        json_object *o = handle(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":[1]}", NULL);
        assert_int_equal(error_code(o), MCP_INVALID_PARAMS);
        json_object_put(o);
        /* The control: the same ping, well formed, is answered with {}, its
         * id as sent (a string stays a string). */
        o = handle(s, "{\"jsonrpc\":\"2.0\",\"id\":\"p-1\",\"method\":\"ping\"}", NULL);
        assert_int_equal(json_object_object_length(result_of(o)), 0);
        json_object *id;
        assert_true(json_object_object_get_ex(o, "id", &id));
        assert_string_equal(json_object_get_string(id), "p-1");
        json_object_put(o);
        /* A notification or a response of the client is never answered. */
        assert_null(handle(s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/whatever\"}", NULL));
        assert_null(handle(s, "{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{}}", NULL));
        mcp_session_free(s);
}

static void test_unknown_method(void **state) {
        McpSession *s = initialized("2025-11-25");
        json_object *o = handle(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"resources/list\"}", NULL);
        assert_int_equal(error_code(o), MCP_METHOD_NOT_FOUND);
        json_object_put(o);
        /* Control: a method that exists, tools/list, with each tool's schema. */
        o = handle(s, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}", NULL);
        json_object *list, *t, *schema, *type;
        assert_true(json_object_object_get_ex(result_of(o), "tools", &list));
        assert_int_equal(json_object_array_length(list), 2);
        t = json_object_array_get_idx(list, 0);
        assert_true(json_object_object_get_ex(t, "inputSchema", &schema));
        assert_true(json_object_object_get_ex(schema, "type", &type));
        assert_string_equal(json_object_get_string(type), "object");
        json_object_put(o);
        /* An unknown tool is a protocol error; an unknown cursor too. */
        o = handle(s, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"nope\"}}", NULL);
        assert_int_equal(error_code(o), MCP_INVALID_PARAMS);
        json_object_put(o);
        o = handle(s, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/list\",\"params\":{\"cursor\":\"x\"}}", NULL);
        assert_int_equal(error_code(o), MCP_INVALID_PARAMS);
        json_object_put(o);
        mcp_session_free(s);
}

static void test_oversize(void **state) {
        McpSession *s = initialized("2025-11-25");
        char line[1100];
        int n;

        /* 1025 bytes against a cap of 1024. */
        n = snprintf(line, sizeof(line), "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":"
                     "{\"name\":\"echo\",\"arguments\":{\"x\":\"");
        memset(line + n, 'a', 1025 - n - 4);
        memcpy(line + 1025 - 4, "\"}}}", 5);
        assert_int_equal(strlen(line), 1025);
        json_object *o = handle(s, line, NULL);
        assert_int_equal(error_code(o), MCP_INVALID_REQUEST);
        json_object_put(o);
        /* Control: one byte shorter is within the cap and runs. */
        memmove(line + 1025 - 5, "\"}}}", 5);
        McpCall *call = NULL;
        o = handle(s, line, &call);
        assert_null(o);
        assert_non_null(call);
        _cleanup_free_ char *r = mcp_call_run(call);
        assert_non_null(strstr(r, "\"isError\":false"));
        mcp_session_free(s);
}

static void *run_thread(void *p) {
        return mcp_call_run(p);
}

static void test_cancel(void **state) {
        McpSession *s = initialized("2025-11-25");
        McpCall *call = NULL, *other = NULL, *third = NULL;
        pthread_t t;
        char *r;

        json_object *o = handle(s, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"wait\"}}",
                                &call);
        assert_null(o);
        assert_non_null(call);
        assert_int_equal(pthread_create(&t, NULL, run_thread, call), 0);
        /* The same id again while it works: refused. */
        o = handle(s, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\"}}", &other);
        assert_int_equal(error_code(o), MCP_INVALID_REQUEST);
        assert_null(other);
        json_object_put(o);
        /* A cancellation of another id changes nothing; of this one, ends it
         * with no response. "7" (a string) is not 7. */
        assert_null(handle(s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":\"7\"}}",
                           NULL));
        assert_int_equal(mcp_session_calls(s), 1);
        assert_null(handle(s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":7}}",
                           NULL));
        assert_int_equal(pthread_join(t, (void **) &r), 0);
        assert_null(r);
        assert_int_equal(mcp_session_calls(s), 0);

        /* Control: the same tool not cancelled answers with its result. The
         * session's cap of two calls at once holds a third off. */
        o = handle(s, "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"tools/call\",\"params\":{\"name\":\"wait\"}}", &call);
        o = handle(s, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\"}}", &other);
        o = handle(s, "{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\"}}", &third);
        assert_non_null(o);
        assert_int_equal(error_code(o), -32000);
        assert_null(third);
        json_object_put(o);
        r = mcp_call_run(other);
        assert_non_null(strstr(r, "\"id\":9"));
        free(r);
        /* A pipe-like wait: the tool would wait 10 s; cancel-free runs need
         * the fd quiet, so cancel from here after checking it is quiet. */
        struct pollfd p = { .fd = mcp_call_cancel_fd(call), .events = POLLIN };
        assert_int_equal(poll(&p, 1, 0), 0);
        mcp_session_cancel_all(s);
        assert_null(mcp_call_run(call));
        mcp_session_free(s);
}

static void test_tool_result(void **state) {
        McpSession *s = initialized("2025-11-25");
        McpCall *call = NULL;

        json_object *o = handle(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":"
                                "{\"name\":\"echo\",\"arguments\":[1]}}", &call);
        assert_int_equal(error_code(o), MCP_INVALID_PARAMS);
        json_object_put(o);
        o = handle(s, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":"
                   "{\"name\":\"echo\",\"arguments\":{\"x\":\"y\"}}}", &call);
        assert_null(o);
        _cleanup_free_ char *r = mcp_call_run(call);
        o = json_tokener_parse(r);
        json_object *content, *text;
        assert_true(json_object_object_get_ex(result_of(o), "content", &content));
        assert_true(json_object_object_get_ex(json_object_array_get_idx(content, 0), "text", &text));
        assert_string_equal(json_object_get_string(text), "{\"x\":\"y\"}");
        json_object_put(o);
        mcp_session_free(s);
}

static void test_gated(void **state) {
        McpServer gated = { .name = "t", .version = "1", .tools = tools_gated, .n_tools = 3,
                            .tool_available = available };
        McpSession *s = mcp_session_new(&gated);
        McpCall *call = NULL;
        json_object *o, *list;

        json_object_put(handle(s, "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":"
                               "{\"protocolVersion\":\"2025-11-25\"}}", NULL));
        /* Not available: listed once (the ungated one), and a call reaches it. */
        available_flag = false;
        o = handle(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}", NULL);
        assert_true(json_object_object_get_ex(result_of(o), "tools", &list));
        assert_int_equal(json_object_array_length(list), 2);
        json_object_put(o);
        o = handle(s, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\"}}", &call);
        assert_null(o);
        assert_non_null(call);
        free(mcp_call_run(call));
        /* Available: the other one is listed instead, and the name resolves to it. */
        available_flag = true;
        o = handle(s, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\"}", NULL);
        assert_true(json_object_object_get_ex(result_of(o), "tools", &list));
        assert_int_equal(json_object_array_length(list), 2);
        json_object *d;
        assert_true(json_object_object_get_ex(json_object_array_get_idx(list, 1), "description", &d));
        assert_string_equal(json_object_get_string(d), "hidden until available");
        json_object_put(o);
        o = handle(s, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\"}}", &call);
        assert_null(o);
        assert_non_null(call);
        free(mcp_call_run(call));
        mcp_session_free(s);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_negotiation),
                cmocka_unit_test(test_malformed),
                cmocka_unit_test(test_unknown_method),
                cmocka_unit_test(test_oversize),
                cmocka_unit_test(test_cancel),
                cmocka_unit_test(test_tool_result),
                cmocka_unit_test(test_gated),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
