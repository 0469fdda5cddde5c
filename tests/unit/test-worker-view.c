/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The search for a bare command name, in a fake root: a temporary tree
 * whose files exist nowhere else, so a name found on the host but not in
 * the tree proves the search stays inside the view. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "errors.h"
#include "rmrf.h"
#include "worker-view.h"

static char root[] = "/tmp/sbx-view-XXXXXX";
static SbxConfig config;

static void make_dir(const char *rel, mode_t mode) {
        char p[512];
        snprintf(p, sizeof(p), "%s/%s", root, rel);
        assert_int_equal(mkdir(p, mode), 0);
        assert_int_equal(chmod(p, mode), 0);    /* past the umask */
}

static void make_file(const char *rel, mode_t mode) {
        char p[512];
        int fd;
        snprintf(p, sizeof(p), "%s/%s", root, rel);
        fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
        assert_true(fd >= 0);
        assert_int_equal(fchmod(fd, mode), 0);
        close(fd);
}

static void make_link(const char *rel, const char *target) {
        char p[512];
        snprintf(p, sizeof(p), "%s/%s", root, rel);
        assert_int_equal(symlink(target, p), 0);
}

static int setup(void **state) {
        assert_non_null(mkdtemp(root));
        assert_int_equal(chmod(root, 0755), 0);
        make_dir("usr", 0755);
        make_dir("usr/bin", 0755);
        make_dir("usr/local", 0755);
        make_dir("usr/local/bin", 0755);
        make_link("bin", "usr/bin");                    /* merged /usr, as Debian has it */
        make_dir("home", 0755);
        make_dir("home/u", 0755);
        make_dir("run", 0755);
        make_dir("etc", 0755);
        make_dir("etc/sandboxd", 0755);
        make_dir("opt", 0755);
        make_dir("opt/locked", 0750);

        make_file("usr/bin/prog", 0755);
        make_file("usr/bin/busybox", 0755);
        make_file("usr/bin/owneronly", 0700);
        make_file("usr/bin/module.wasm", 0644);
        make_file("usr/local/bin/tool", 0644);          /* not executable: skipped */
        make_file("usr/bin/tool", 0755);
        make_dir("usr/local/bin/dirname", 0755);        /* a directory: skipped */
        make_file("usr/bin/dirname", 0755);
        make_file("home/u/prog", 0755);
        make_file("run/prog", 0755);
        make_file("etc/sandboxd/prog", 0755);
        make_file("opt/locked/prog", 0755);
        make_file("opt/open", 0755);

        make_link("usr/local/bin/ls", "/usr/bin/busybox");
        make_link("usr/local/bin/up", "../../../../../../usr/bin/prog");   /* ".." stops at the root */
        make_link("usr/local/bin/home-prog", "/home/u/prog");
        make_link("usr/local/bin/run-prog", "../../../run/prog");
        make_link("usr/local/bin/through-home", "/home/../usr/bin/prog");
        make_link("usr/local/bin/cfg-prog", "/etc/sandboxd/prog");
        make_link("usr/local/bin/locked", "/opt/locked/prog");
        make_link("usr/local/bin/chain", "ls");
        make_link("usr/local/bin/loop", "loop");
        make_link("usr/local/bin/dangling", "/nowhere");
        make_link("usr/local/bin/via-file", "/opt/open/prog");

        sbx_config_init_defaults(&config);
        return 0;
}

static int teardown(void **state) {
        sbx_config_done(&config);
        return rm_rf(root);
}

static void trusted_view(WorkerView *v) {
        assert_int_equal(worker_view_for_runtime(SBX_RUNTIME_SYSTEMD, &config, v), 0);
        v->root = root;
}

static void assert_found(const WorkerView *v, const char *name, const char *expected) {
        _cleanup_free_ char *path = NULL;
        SbxError e = {};
        assert_int_equal(worker_view_find_executable(v, name, &path, &e), 0);
        assert_string_equal(path, expected);
}

static void assert_not_found(const WorkerView *v, const char *name) {
        _cleanup_free_ char *path = NULL;
        char expected[512];
        SbxError e = {};
        assert_int_equal(worker_view_find_executable(v, name, &path, &e), -ENOENT);
        assert_null(path);
        assert_string_equal(e.name, SBX_ERROR_EXECUTABLE_NOT_FOUND);
        snprintf(expected, sizeof(expected), "executable '%s' not found in /usr/local/bin:/usr/bin:/bin", name);
        assert_string_equal(e.message, expected);
}

static void test_search_order(void **state) {
        WorkerView v;
        trusted_view(&v);
        assert_found(&v, "prog", "/usr/bin/prog");
        assert_found(&v, "tool", "/usr/bin/tool");
        assert_found(&v, "dirname", "/usr/bin/dirname");
        assert_not_found(&v, "owneronly");
        assert_not_found(&v, "nosuchcmd");
        assert_not_found(&v, ".");
        assert_not_found(&v, "..");
}

/* The fake root has no "true": the host's /bin/true must not be found. */
static void test_stays_in_root(void **state) {
        WorkerView v;
        trusted_view(&v);
        assert_not_found(&v, "true");
        assert_found(&v, "up", "/usr/local/bin/up");
        assert_not_found(&v, "dangling");
}

/* The path found is where the name was, not the link's target: a multi-call
 * program dispatches on its name. */
static void test_links_keep_the_name(void **state) {
        WorkerView v;
        trusted_view(&v);
        assert_found(&v, "ls", "/usr/local/bin/ls");
        assert_found(&v, "chain", "/usr/local/bin/chain");
        assert_not_found(&v, "loop");
        assert_not_found(&v, "via-file");
}

static void test_hidden_paths(void **state) {
        WorkerView v;
        trusted_view(&v);
        assert_not_found(&v, "home-prog");
        assert_not_found(&v, "run-prog");
        assert_not_found(&v, "through-home");
        /* The unit shows /etc read-only; the OCI bundle masks /etc/sandboxd. */
        assert_found(&v, "cfg-prog", "/usr/local/bin/cfg-prog");
        free(config.root_image);
        config.root_image = strdup(root);
        assert_int_equal(worker_view_for_runtime(SBX_RUNTIME_RUNSC, &config, &v), 0);
        assert_string_equal(v.root, root);
        assert_not_found(&v, "cfg-prog");
        assert_not_found(&v, "home-prog");
        assert_found(&v, "ls", "/usr/local/bin/ls");
}

/* A directory the worker may not search hides what is in it. */
static void test_directory_permissions(void **state) {
        WorkerView v;
        trusted_view(&v);
        assert_not_found(&v, "locked");
}

/* A wasm module is read by the runtime, not executed. */
static void test_wasm_module(void **state) {
        WorkerView v;
        assert_int_equal(worker_view_for_runtime(SBX_RUNTIME_WASM, &config, &v), 0);
        v.root = root;
        assert_found(&v, "module.wasm", "/usr/bin/module.wasm");
        trusted_view(&v);
        assert_not_found(&v, "module.wasm");
}

static void test_bare_names(void **state) {
        assert_true(exec_name_is_bare("sh"));
        assert_true(exec_name_is_bare("python3"));
        assert_false(exec_name_is_bare("/bin/sh"));
        assert_false(exec_name_is_bare("./x"));
        assert_false(exec_name_is_bare(""));
        assert_false(exec_name_is_bare(NULL));
}

/* The real host root: sh is where Debian puts it. */
static void test_host_root(void **state) {
        _cleanup_free_ char *path = NULL;
        WorkerView v;
        SbxError e = {};
        assert_int_equal(worker_view_for_runtime(SBX_RUNTIME_SYSTEMD, &config, &v), 0);
        assert_int_equal(worker_view_find_executable(&v, "sh", &path, &e), 0);
        assert_true(streq(path, "/usr/bin/sh") || streq(path, "/bin/sh"));
        assert_int_equal(worker_view_for_runtime(_SBX_RUNTIME_INVALID, &config, &v), -EOPNOTSUPP);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_search_order),
                cmocka_unit_test(test_stays_in_root),
                cmocka_unit_test(test_links_keep_the_name),
                cmocka_unit_test(test_hidden_paths),
                cmocka_unit_test(test_directory_permissions),
                cmocka_unit_test(test_wasm_module),
                cmocka_unit_test(test_bare_names),
                cmocka_unit_test(test_host_root),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
