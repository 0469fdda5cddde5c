/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The ceilings of sandboxctl mcp and the walls of its transports that need
 * no bus: each refusal beside its control. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mcp-policy.h"
#include "mcp-tools.h"
#include "mcp-transport.h"
#include "util.h"

static McpPolicy policy(void) {
        static char *allow[] = { "*.pypi.org", "files.pythonhosted.org:443", NULL };
        static char *workspaces[] = { "proj", NULL };
        McpPolicy p = MCP_POLICY_DEFAULTS;

        p.allow = allow;
        p.workspaces = workspaces;
        p.memory_max = 512u << 20;
        p.runtime_max_usec = 120 * USEC_PER_SEC;
        return p;
}

static int spec_of(const char *args_json, CliSpec *spec, char *notes, char *err) {
        McpPolicy p = policy();
        json_object *args = json_tokener_parse(args_json);
        int r;

        assert_non_null(args);
        r = mcp_policy_spec(&p, args, NULL, 0, spec, notes, 256, err, 256);
        json_object_put(args);
        return r;
}

static void test_class_floor(void **state) {
        CliSpec spec;
        char notes[256], err[256];

        /* A model asking for trusted gets the floor, and is told so. */
        assert_int_equal(spec_of("{\"class\":\"trusted\"}", &spec, notes, err), 0);
        assert_string_equal(spec.class, "untrusted");
        assert_string_equal(spec.origin, "llm-generated");
        assert_non_null(strstr(notes, "raised to untrusted"));
        cli_spec_done(&spec);
        /* Control: a class at or above the floor is kept, with no note. */
        assert_int_equal(spec_of("{\"class\":\"hostile\"}", &spec, notes, err), 0);
        assert_string_equal(spec.class, "hostile");
        assert_string_equal(notes, "");
        cli_spec_done(&spec);
        /* Nothing asked: the floor, the memory ceiling, Origin, the idle argv. */
        assert_int_equal(spec_of("{}", &spec, notes, err), 0);
        assert_string_equal(spec.class, "untrusted");
        assert_int_equal(spec.memory_max.value, 512u << 20);
        assert_string_equal(spec.argv[0], "sleep");
        assert_true(spec.runtime_max_usec.set);
        cli_spec_done(&spec);
        assert_int_equal(spec_of("{\"class\":\"root\"}", &spec, notes, err), -EINVAL);
}

static void test_allow(void **state) {
        char *ceiling[] = { "*.pypi.org", "files.pythonhosted.org:443", NULL };
        char *star[] = { "*", NULL };
        CliSpec spec;
        char notes[256], err[256];

        assert_true(mcp_allow_covered(ceiling, "pypi.pypi.org"));
        assert_true(mcp_allow_covered(ceiling, "*.a.PyPI.org"));
        assert_true(mcp_allow_covered(ceiling, "files.pythonhosted.org:443"));
        assert_false(mcp_allow_covered(ceiling, "pypi.org"));             /* the wildcard's own domain */
        assert_false(mcp_allow_covered(ceiling, "*.org"));
        assert_false(mcp_allow_covered(ceiling, "evilpypi.org"));
        assert_false(mcp_allow_covered(ceiling, "files.pythonhosted.org"));  /* another port */
        assert_false(mcp_allow_covered(ceiling, "files.pythonhosted.org:80"));
        assert_false(mcp_allow_covered(NULL, "example.org"));
        assert_true(mcp_allow_covered(star, "example.org"));

        assert_int_equal(spec_of("{\"allow\":[\"a.pypi.org\",\"example.org\"]}", &spec, notes, err), -EPERM);
        assert_non_null(strstr(err, "example.org"));
        assert_int_equal(spec_of("{\"allow\":[\"a.pypi.org\"]}", &spec, notes, err), 0);
        assert_string_equal(spec.egress_allow[0], "a.pypi.org");
        assert_null(spec.egress_allow[1]);
        cli_spec_done(&spec);
        assert_int_equal(spec_of("{\"allow\":\"a.pypi.org\"}", &spec, notes, err), -EINVAL);
}

static void test_memory_workspace_idle(void **state) {
        CliSpec spec;
        char notes[256], err[256];

        assert_int_equal(spec_of("{\"memory\":\"1G\"}", &spec, notes, err), -EPERM);
        assert_int_equal(spec_of("{\"memory\":\"256M\"}", &spec, notes, err), 0);
        assert_int_equal(spec.memory_max.value, 256u << 20);
        cli_spec_done(&spec);
        assert_int_equal(spec_of("{\"memory\":-1}", &spec, notes, err), -EINVAL);
        assert_int_equal(spec_of("{\"workspace\":\"other\"}", &spec, notes, err), -EPERM);
        assert_int_equal(spec_of("{\"workspace\":\"proj\"}", &spec, notes, err), 0);
        assert_string_equal(spec.workspace, "proj");
        cli_spec_done(&spec);
        assert_int_equal(spec_of("{\"idle_timeout\":999999}", &spec, notes, err), -EPERM);
        assert_int_equal(spec_of("{\"idle_timeout\":30}", &spec, notes, err), 0);
        assert_int_equal(spec.idle_timeout_usec.value, 30 * USEC_PER_SEC);
        cli_spec_done(&spec);
}

static void test_timeout_and_command(void **state) {
        McpPolicy p = policy();
        json_object *a = json_tokener_parse("{\"timeout\":121}"), *b = json_tokener_parse("{\"timeout\":120}");
        json_object *c = json_tokener_parse("[\"python3\",\"-c\",\"print(6*7)\"]"), *d = json_tokener_parse("[1]");
        json_object *e = json_object_new_string("echo hi");
        char **argv = NULL, err[256];
        uint64_t usec;

        assert_int_equal(mcp_policy_timeout(&p, a, &usec, err, sizeof(err)), -EPERM);
        assert_int_equal(mcp_policy_timeout(&p, b, &usec, err, sizeof(err)), 0);
        assert_int_equal(usec, 120 * USEC_PER_SEC);
        assert_int_equal(mcp_command_argv(c, &argv, err, sizeof(err)), 0);
        assert_string_equal(argv[2], "print(6*7)");
        strv_free(argv);
        assert_int_equal(mcp_command_argv(e, &argv, err, sizeof(err)), 0);
        assert_string_equal(argv[0], "/bin/sh");
        assert_string_equal(argv[2], "echo hi");
        strv_free(argv);
        assert_int_equal(mcp_command_argv(d, &argv, err, sizeof(err)), -EINVAL);
        assert_int_equal(mcp_command_argv(NULL, &argv, err, sizeof(err)), -EINVAL);
        json_object_put(a);
        json_object_put(b);
        json_object_put(c);
        json_object_put(d);
        json_object_put(e);
}

static void test_output(void **state) {
        McpOutput o;
        char big[1000];
        _cleanup_free_ char *t1 = NULL, *t2 = NULL;

        /* Within the cap: all of it, no notice. */
        assert_int_equal(mcp_output_init(&o, 100), 0);
        mcp_output_add(&o, "hello\n", 6);
        t1 = mcp_output_text(&o);
        assert_string_equal(t1, "hello\n");
        mcp_output_done(&o);
        /* Beyond it: the first and last 50 bytes and the count between. */
        assert_int_equal(mcp_output_init(&o, 100), 0);
        for (size_t i = 0; i < sizeof(big); i++)
                big[i] = (char) ('a' + i % 26);
        big[0] = 'S';
        big[sizeof(big) - 1] = 'E';
        mcp_output_add(&o, big, 500);
        mcp_output_add(&o, big + 500, 500);
        assert_int_equal(mcp_output_omitted(&o), 900);
        t2 = mcp_output_text(&o);
        assert_true(t2[0] == 'S');
        assert_true(t2[strlen(t2) - 1] == 'E');
        assert_non_null(strstr(t2, "900 bytes of output omitted"));
        mcp_output_done(&o);
}

static void test_http_parse(void **state) {
        HttpRequest req;
        const char *ok = "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 12\r\n"
                         "Authorization: Bearer abc\r\nMcp-Session-Id: s1\r\n\r\n{\"a\":1}....";

        assert_int_equal(http_request_parse(ok, strlen(ok), 4096, &req), (int) (strstr(ok, "{") - ok));
        assert_string_equal(req.method, "POST");
        assert_string_equal(req.target, "/mcp");
        assert_int_equal(req.content_length, 12);
        assert_string_equal(req.session_id, "s1");
        assert_true(http_bearer_ok(req.authorization, "abc"));
        assert_false(http_bearer_ok(req.authorization, "abd"));
        assert_false(http_bearer_ok(req.authorization, "ab"));
        assert_false(http_bearer_ok("Basic abc", "abc"));
        assert_false(http_bearer_ok(NULL, "abc"));
        /* Not complete yet; malformed; too long a head. */
        assert_int_equal(http_request_parse(ok, 20, 4096, &req), 0);
        const char *bad = "POST /mcp\r\n\r\n";
        assert_int_equal(http_request_parse(bad, strlen(bad), 4096, &req), -EBADMSG);
        const char *two = "POST /mcp HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n";
        assert_int_equal(http_request_parse(two, strlen(two), 4096, &req), -EBADMSG);
        const char *neg = "POST /mcp HTTP/1.1\r\nContent-Length: -1\r\n\r\n";
        assert_int_equal(http_request_parse(neg, strlen(neg), 4096, &req), -EBADMSG);
        assert_int_equal(http_request_parse(ok, strlen(ok), 16, &req), -E2BIG);
        /* Origin: a web page elsewhere is refused, loopback and none are not. */
        const char *evil = "POST /mcp HTTP/1.1\r\nOrigin: http://evil.example\r\n\r\n";
        assert_true(http_request_parse(evil, strlen(evil), 4096, &req) > 0);
        assert_false(http_origin_ok(&req));
        const char *tricky = "POST /mcp HTTP/1.1\r\nOrigin: http://localhost.evil.example\r\n\r\n";
        assert_true(http_request_parse(tricky, strlen(tricky), 4096, &req) > 0);
        assert_false(http_origin_ok(&req));
        const char *local = "POST /mcp HTTP/1.1\r\nOrigin: http://127.0.0.1:8080\r\n\r\n";
        assert_true(http_request_parse(local, strlen(local), 4096, &req) > 0);
        assert_true(http_origin_ok(&req));
        assert_true(http_request_parse(ok, strlen(ok), 4096, &req) > 0);
        assert_true(http_origin_ok(&req));
}

static void test_listen_and_token(void **state) {
        McpListen l;
        char path[] = "/tmp/test-mcp-token.XXXXXX";
        _cleanup_free_ char *token = NULL;
        int fd;

        assert_int_equal(mcp_listen_parse("0.0.0.0:8080", &l), -EPERM);
        assert_int_equal(mcp_listen_parse("192.168.1.1:8080", &l), -EPERM);
        assert_int_equal(mcp_listen_parse("[::]:8080", &l), -EPERM);
        assert_int_equal(mcp_listen_parse("127.0.0.1:0", &l), -EINVAL);
        assert_int_equal(mcp_listen_parse("localhost:80", &l), -EINVAL);
        assert_int_equal(mcp_listen_parse("relative/path", &l), -EINVAL);
        assert_int_equal(mcp_listen_parse("127.0.0.1:8080", &l), 0);
        assert_false(l.unix_socket);
        assert_int_equal(mcp_listen_parse("[::1]:8080", &l), 0);
        assert_int_equal(mcp_listen_parse("/run/user/1000/mcp.sock", &l), 0);
        assert_true(l.unix_socket);

        fd = mkstemp(path);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, "0123456789abcdef0123\n", 21), 21);
        close(fd);
        /* Readable by others: refused; by its owner only: read, newline dropped. */
        assert_int_equal(chmod(path, 0644), 0);
        assert_int_equal(mcp_token_read(path, &token), -EPERM);
        assert_int_equal(chmod(path, 0600), 0);
        assert_int_equal(mcp_token_read(path, &token), 0);
        assert_string_equal(token, "0123456789abcdef0123");
        free(TAKE_PTR(token));
        fd = open(path, O_WRONLY | O_TRUNC);
        assert_int_equal(write(fd, "short\n", 6), 6);
        close(fd);
        assert_int_equal(mcp_token_read(path, &token), -EINVAL);
        unlink(path);
}

static const McpServer stdio_server = { .name = "t", .version = "1", .max_message = 4096 };

static void *stdio_thread(void *p) {
        int *fds = p;
        return (void *) (intptr_t) mcp_stdio_run(&stdio_server, fds[0], fds[1]);
}

/* The stdio transport: an over-long line is answered (null id) and thrown
 * away, and the next line is served as ever. */
static void test_stdio_oversize(void **state) {
        int in[2], out[2], fds[2];
        pthread_t t;
        _cleanup_free_ char *big = malloc(100000);
        char reply[4096] = "";
        size_t got = 0;
        void *ret;

        assert_int_equal(pipe2(in, O_CLOEXEC), 0);
        assert_int_equal(pipe2(out, O_CLOEXEC), 0);
        fds[0] = in[0];
        fds[1] = out[1];
        assert_int_equal(pthread_create(&t, NULL, stdio_thread, fds), 0);
        memset(big, 'x', 100000);
        big[99999] = '\n';
        assert_int_equal(write(in[1], big, 100000), 100000);
        const char *ping = "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\"}\n";
        assert_int_equal(write(in[1], ping, strlen(ping)), (ssize_t) strlen(ping));
        close(in[1]);
        assert_int_equal(pthread_join(t, &ret), 0);
        assert_int_equal((intptr_t) ret, 0);
        close(out[1]);
        for (ssize_t n; (n = read(out[0], reply + got, sizeof(reply) - 1 - got)) > 0;)
                got += (size_t) n;
        close(in[0]);
        close(out[0]);
        assert_non_null(strstr(reply, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,"
                                      "\"message\":\"Invalid Request: a message of 99999 bytes exceeds"));
        assert_non_null(strstr(reply, "\n{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{}}\n"));
}

/* The Exec and file tools are offered on exactly the signatures they were
 * written against; a method of another shape, or none, offers nothing. */
static void test_introspect_features(void **state) {
        static const char head[] = "<node><interface name=\"org.sandboxd1.Worker\">\n"
                "  <method name=\"Stop\">\n  </method>\n";
        static const char exec[] = "  <method name=\"Exec\">\n"
                "   <arg type=\"as\" name=\"argv\" direction=\"in\"/>\n"
                "   <arg type=\"a{sv}\" name=\"options\" direction=\"in\"/>\n"
                "   <arg type=\"o\" name=\"process\" direction=\"out\"/>\n"
                "   <arg type=\"ah\" name=\"stdio\" direction=\"out\"/>\n  </method>\n";
        static const char exec_other[] = "  <method name=\"Exec\">\n"
                "   <arg type=\"as\" name=\"argv\" direction=\"in\"/>\n"
                "   <arg type=\"o\" name=\"process\" direction=\"out\"/>\n  </method>\n";
        static const char files[] = "  <method name=\"OpenFile\">\n"
                "   <arg type=\"s\" name=\"path\" direction=\"in\"/>\n"
                "   <arg type=\"s\" name=\"mode\" direction=\"in\"/>\n"
                "   <arg type=\"a{sv}\" name=\"options\" direction=\"in\"/>\n"
                "   <arg type=\"h\" name=\"data\" direction=\"out\"/>\n"
                "   <arg type=\"s\" name=\"transfer\" direction=\"out\"/>\n  </method>\n"
                "  <method name=\"CommitFile\">\n   <arg type=\"s\" name=\"transfer\" direction=\"in\"/>\n"
                "   <arg type=\"t\" name=\"bytes\" direction=\"out\"/>\n  </method>\n"
                "  <method name=\"ListDirectory\">\n   <arg type=\"s\" name=\"path\" direction=\"in\"/>\n"
                "   <arg type=\"a(sstutuu)\" name=\"entries\" direction=\"out\"/>\n  </method>\n";
        static const char tail[] = "</interface></node>";
        char xml[8192];

        snprintf(xml, sizeof(xml), "%s%s", head, tail);
        assert_int_equal(mcp_introspect_features(xml), 0);
        snprintf(xml, sizeof(xml), "%s%s%s", head, exec_other, tail);
        assert_int_equal(mcp_introspect_features(xml), 0);
        snprintf(xml, sizeof(xml), "%s%s%s", head, exec, tail);
        assert_int_equal(mcp_introspect_features(xml), MCP_NEEDS_EXEC);
        snprintf(xml, sizeof(xml), "%s%s%s%s", head, exec, files, tail);
        assert_int_equal(mcp_introspect_features(xml), MCP_NEEDS_EXEC | MCP_NEEDS_FILES);
        /* The same methods on another interface count for nothing. */
        snprintf(xml, sizeof(xml), "<node><interface name=\"org.example.Other\">%s%s%s", exec, files, tail);
        assert_int_equal(mcp_introspect_features(xml), 0);
        assert_int_equal(mcp_introspect_features(NULL), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_class_floor),
                cmocka_unit_test(test_allow),
                cmocka_unit_test(test_memory_workspace_idle),
                cmocka_unit_test(test_timeout_and_command),
                cmocka_unit_test(test_output),
                cmocka_unit_test(test_http_parse),
                cmocka_unit_test(test_listen_and_token),
                cmocka_unit_test(test_stdio_oversize),
                cmocka_unit_test(test_introspect_features),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
