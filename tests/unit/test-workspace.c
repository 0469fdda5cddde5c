/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "caller-quota.h"
#include "errors.h"
#include "manager.h"
#include "manager-workspace.h"
#include "rmrf.h"
#include "spec.h"
#include "workspace.h"

static char root[] = "/tmp/sbx-test-workspace.XXXXXX";
static SbxConfig config;

static int setup(void **state) {
        assert_non_null(mkdtemp(root));
        sbx_config_init_defaults(&config);
        return 0;
}

static int teardown(void **state) {
        sbx_config_done(&config);
        return rm_rf(root);
}

static size_t n_entries(const char *dir) {
        DIR *d = opendir(dir);
        size_t n = 0;

        assert_non_null(d);
        for (struct dirent *de; (de = readdir(d)); )
                if (!streq(de->d_name, ".") && !streq(de->d_name, ".."))
                        n++;
        closedir(d);
        return n;
}

static Workspace *sample(const char *name) {
        Workspace *ws = NULL;
        assert_int_equal(workspace_new(&ws, name), 0);
        ws->owner = 1000;
        ws->size_max = 32 << 20;
        ws->class = SBX_CLASS_STANDARD;
        ws->created_usec = 1764580000000000;
        ws->last_used_usec = 1764580000000001;
        return ws;
}

static void test_names(void **state) {
        static const char * const good[] = { "a", "proj", "proj-1", "my_ws", "0abc",
                "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" };
        static const char * const bad[] = { "", "-a", "_a", "A", "proj.img", "a/b", "..", ".", "a b", "ä",
                "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "a\n" };
        Workspace *ws = NULL;

        for (size_t i = 0; i < ELEMENTSOF(good); i++)
                assert_true(workspace_name_is_valid(good[i]));
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                assert_false(workspace_name_is_valid(bad[i]));
                assert_int_equal(workspace_new(&ws, bad[i]), -EINVAL);
        }
        assert_false(workspace_name_is_valid(NULL));
}

static void test_classes(void **state) {
        assert_true(workspace_class_is_valid(SBX_CLASS_TRUSTED));
        assert_true(workspace_class_is_valid(SBX_CLASS_STANDARD));
        assert_true(workspace_class_is_valid(SBX_CLASS_DEVCONTAINER));
        assert_true(workspace_class_is_valid(SBX_CLASS_UNTRUSTED));
        assert_false(workspace_class_is_valid(SBX_CLASS_HOSTILE));
        assert_false(workspace_class_is_valid(SBX_CLASS_WASM));
        assert_string_equal(sbx_class_to_string(SBX_CLASS_DEVCONTAINER), "devcontainer");
        assert_int_equal(sbx_class_from_string("devcontainer"), SBX_CLASS_DEVCONTAINER);
        /* Between standard and untrusted: an untrusted floor still raises it. */
        assert_true(SBX_CLASS_STANDARD < SBX_CLASS_DEVCONTAINER && SBX_CLASS_DEVCONTAINER < SBX_CLASS_UNTRUSTED);
}

static void test_save_load(void **state) {
        _cleanup_(workspace_freep) Workspace *in = sample("round"), *out = NULL;
        _cleanup_free_ char *meta = NULL;
        struct stat st;

        assert_int_equal(workspace_save(root, in), 0);
        assert_true(asprintf(&meta, "%s/round.meta", root) > 0);
        assert_int_equal(stat(meta, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0600);
        assert_int_equal(workspace_load(root, "round", &out), 0);
        assert_string_equal(out->name, "round");
        assert_string_equal(out->object_path, "/org/sandboxd1/workspace/round");
        assert_int_equal(out->owner, 1000);
        assert_int_equal(out->size_max, 32 << 20);
        assert_int_equal(out->class, SBX_CLASS_STANDARD);
        assert_int_equal(out->created_usec, in->created_usec);
        assert_int_equal(out->last_used_usec, in->last_used_usec);
        assert_null(out->worker_id);
        assert_int_equal(unlink(meta), 0);
}

static void write_file(const char *path, const char *text) {
        FILE *f = fopen(path, "we");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
}

/* A file cut short or not ours is no workspace. */
static void test_load_refuses(void **state) {
        static const char * const texts[] = {
                "sandboxd-workspace 1\nowner=1000\nsize-max=33554432\nclass=standard\n",
                "sandboxd-workspace 2\nowner=1000\nsize-max=33554432\nclass=standard\nend\n",
                "sandboxd-workspace 1\nsize-max=33554432\nclass=standard\nend\n",
                "sandboxd-workspace 1\nowner=1000\nsize-max=1024\nclass=standard\nend\n",
                "sandboxd-workspace 1\nowner=1000\nsize-max=33554432\nclass=hostile\nend\n",
                "sandboxd-workspace 1\nowner=x\nsize-max=33554432\nend\n",
                "sandboxd-workspace 1\nowner=1000\nsize-max=33554432\nbogus=1\nend\n",
        };
        _cleanup_free_ char *meta = NULL;
        Workspace *ws = NULL;

        assert_true(asprintf(&meta, "%s/bad.meta", root) > 0);
        for (size_t i = 0; i < ELEMENTSOF(texts); i++) {
                write_file(meta, texts[i]);
                assert_int_equal(workspace_load(root, "bad", &ws), -EINVAL);
        }
        assert_int_equal(unlink(meta), 0);
        assert_int_equal(workspace_load(root, "bad", &ws), -ENOENT);
}

/* Whoever's it is: these tests name each workspace once. */
static Workspace *by_name(Manager *m, const char *name) {
        for (Workspace *ws = m->workspaces; ws; ws = ws->next)
                if (streq(ws->label, name))
                        return ws;
        return NULL;
}

/* A Manager with only what manager_create_workspace() reads. */
static void test_manager(Manager *m, sd_event *e, const char *mkfs) {
        *m = (Manager) { .event = e, .workspace_root = root, .mkfs_path = (char *) mkfs };
        sbx_config_init_defaults(&m->config);
        /* The test's file system may be small: the disk check has its own test. */
        m->config.quota.overcommit = true;
        caller_quota_init(&m->workspace_creation_quota, m->config.bus_workspace_creations_per_user,
                          m->config.bus_workspace_creations_max);
}

static void test_manager_done(Manager *m) {
        manager_workspaces_abort_creations(m);
        while (m->workspaces) {
                Workspace *ws = m->workspaces;
                m->workspaces = ws->next;
                workspace_free(ws);
        }
        /* Every creation gave its place back. */
        assert_int_equal(m->workspace_creation_quota.total, 0);
        caller_quota_done(&m->workspace_creation_quota);
        sbx_config_done(&m->config);
}

typedef struct Created {
        bool called;
        int r;
        Workspace *ws;
        SbxError e;
} Created;

static void on_created(Manager *m, Workspace *ws, int r, const SbxError *e, void *userdata) {
        Created *c = userdata;
        c->called = true;
        c->r = r;
        c->ws = ws;
        if (e)
                c->e = *e;
}

static void run_until(sd_event *e, const bool *flag) {
        for (int i = 0; !*flag && i < 600; i++)
                assert_true(sd_event_run(e, 100 * USEC_PER_MSEC) >= 0);
        assert_true(*flag);
}

static sd_event *event_with_sigchld(void) {
        sd_event *e = NULL;
        sigset_t mask;

        sigemptyset(&mask);
        sigaddset(&mask, SIGCHLD);
        assert_int_equal(sigprocmask(SIG_BLOCK, &mask, NULL), 0);
        assert_int_equal(sd_event_new(&e), 0);
        return e;
}

/* mkfs failing, or missing, leaves neither an image nor metadata behind, and
 * the answer comes from the event loop, not from inside the call. */
static void test_create_failure_leaves_nothing(void **state) {
        static const char * const mkfs[] = { "/bin/false", "/nonexistent/mkfs.ext4" };
        sd_event *e = event_with_sigchld();

        for (size_t i = 0; i < ELEMENTSOF(mkfs); i++) {
                Created c = {};
                SbxError err = {};
                Manager m;

                test_manager(&m, e, mkfs[i]);
                assert_int_equal(manager_create_workspace(&m, "fails", 32 << 20, SBX_CLASS_STANDARD, 1000, false,
                                                          on_created, &c, &err), 0);
                assert_false(c.called);
                /* Being made: the name is taken, and nothing may use it yet. */
                assert_non_null(by_name(&m, "fails"));
                assert_non_null(by_name(&m, "fails")->creating);
                run_until(e, &c.called);
                assert_int_equal(c.r, -EIO);
                assert_null(c.ws);
                assert_string_equal(c.e.name, SBX_ERROR_INVALID_WORKSPACE);
                assert_null(by_name(&m, "fails"));
                assert_int_equal(n_entries(root), 0);
                test_manager_done(&m);
        }
        sd_event_unref(e);
}

/* A creation still running when the daemon goes is killed and leaves nothing. */
static void test_create_aborted(void **state) {
        sd_event *e = event_with_sigchld();
        Created c = {};
        SbxError err = {};
        Manager m;

        /* The loop never runs: the creation is still pending when it is aborted. */
        test_manager(&m, e, "/bin/false");
        assert_int_equal(manager_create_workspace(&m, "cut", 32 << 20, SBX_CLASS_STANDARD, 1000, false, on_created, &c,
                                                  &err), 0);
        assert_int_equal(n_entries(root), 1);
        test_manager_done(&m);
        assert_false(c.called);
        assert_int_equal(n_entries(root), 0);
        sd_event_unref(e);
}

/* A workspace being made counts against its owner's quota at once: a
 * second call cannot slip in while the first one's mkfs runs. Root is
 * exempt by default; another owner has a quota of their own; the disk
 * promise binds everyone. */
static void test_create_quota(void **state) {
        sd_event *e = event_with_sigchld();
        Created c = {};
        SbxError err = {};
        Manager m;

        test_manager(&m, e, "/bin/false");
        m.config.quota.workspaces_per_owner = 1;
        m.config.quota.workspace_bytes_per_owner = 48 << 20;
        assert_int_equal(manager_create_workspace(&m, "first", 32 << 20, SBX_CLASS_STANDARD, 1000, false, on_created, &c,
                                                  &err), 0);
        assert_true(manager_create_workspace(&m, "second", 16 << 20, SBX_CLASS_STANDARD, 1000, false, on_created, &c,
                                             &err) < 0);
        assert_string_equal(err.name, SBX_ERROR_QUOTA_EXCEEDED);
        assert_non_null(strstr(err.message, "WorkspacesPerOwner=1"));
        m.config.quota.workspaces_per_owner = 2;
        assert_true(manager_create_workspace(&m, "second", 32 << 20, SBX_CLASS_STANDARD, 1000, false, on_created, &c,
                                             &err) < 0);
        assert_string_equal(err.name, SBX_ERROR_QUOTA_EXCEEDED);
        assert_non_null(strstr(err.message, "WorkspaceBytesPerOwner"));
        assert_null(by_name(&m, "second"));
        assert_int_equal(manager_create_workspace(&m, "theirs", 32 << 20, SBX_CLASS_STANDARD, 1001, false, on_created, &c,
                                                  &err), 0);
        assert_int_equal(manager_create_workspace(&m, "roots", 1024 << 20, SBX_CLASS_STANDARD, 0, false, on_created, &c,
                                                  &err), 0);
        /* Without overcommit, 1 TiB does not fit this test's file system. */
        m.config.quota.overcommit = false;
        assert_true(manager_create_workspace(&m, "huge", UINT64_C(1) << 40, SBX_CLASS_STANDARD, 0, false, on_created, &c,
                                             &err) < 0);
        assert_string_equal(err.name, SBX_ERROR_INSUFFICIENT_SPACE);
        assert_null(by_name(&m, "huge"));
        test_manager_done(&m);
        assert_int_equal(n_entries(root), 0);
        assert_false(c.called);
        sd_event_unref(e);
}

/* mkfs runs as root in sandboxd's cgroup: creations under way are capped
 * per owner and in total, past either TooManyRequests with nothing made;
 * root meets only its own cap. A finished creation, made or failed, frees
 * its place. */
static void test_create_concurrency_caps(void **state) {
        sd_event *e = event_with_sigchld();
        Created c[8] = {};
        SbxError err = {};
        size_t used = 0;
        Manager m;

        test_manager(&m, e, "/bin/false");
        m.config.bus_workspace_creations_per_user = 2;
        m.config.bus_workspace_creations_max = 3;
        caller_quota_done(&m.workspace_creation_quota);
        caller_quota_init(&m.workspace_creation_quota, 2, 3);
        /* Control: within the caps, each creation starts. */
        assert_int_equal(manager_create_workspace(&m, "a1", 32 << 20, SBX_CLASS_STANDARD, 1000, false, on_created,
                                                  &c[used++], &err), 0);
        assert_int_equal(manager_create_workspace(&m, "a2", 32 << 20, SBX_CLASS_STANDARD, 1000, false, on_created,
                                                  &c[used++], &err), 0);
        /* The owner's third at once: refused, nothing of it exists. */
        assert_int_equal(manager_create_workspace(&m, "a3", 32 << 20, SBX_CLASS_STANDARD, 1000, false, on_created,
                                                  &c[used], &err), -EBUSY);
        assert_string_equal(err.name, SBX_ERROR_TOO_MANY_REQUESTS);
        assert_non_null(strstr(err.message, "WorkspaceCreationsPerUser=2"));
        assert_null(by_name(&m, "a3"));
        assert_int_equal(n_entries(root), 2);
        /* Another owner fills the total; a third owner is refused by it. */
        assert_int_equal(manager_create_workspace(&m, "b1", 32 << 20, SBX_CLASS_STANDARD, 1001, false, on_created,
                                                  &c[used++], &err), 0);
        err = (SbxError) {};
        assert_int_equal(manager_create_workspace(&m, "c1", 32 << 20, SBX_CLASS_STANDARD, 1002, false, on_created,
                                                  &c[used], &err), -EBUSY);
        assert_string_equal(err.name, SBX_ERROR_TOO_MANY_REQUESTS);
        assert_non_null(strstr(err.message, "WorkspaceCreationsMax=3"));
        assert_null(by_name(&m, "c1"));
        /* Root past the total, up to its own cap only. */
        assert_int_equal(manager_create_workspace(&m, "r1", 32 << 20, SBX_CLASS_STANDARD, 0, false, on_created,
                                                  &c[used++], &err), 0);
        assert_int_equal(manager_create_workspace(&m, "r2", 32 << 20, SBX_CLASS_STANDARD, 0, false, on_created,
                                                  &c[used++], &err), 0);
        err = (SbxError) {};
        assert_int_equal(manager_create_workspace(&m, "r3", 32 << 20, SBX_CLASS_STANDARD, 0, false, on_created,
                                                  &c[used], &err), -EBUSY);
        assert_string_equal(err.name, SBX_ERROR_TOO_MANY_REQUESTS);
        assert_int_equal(n_entries(root), 5);
        /* Once they are over (mkfs fails here), the places are free again. */
        for (size_t i = 0; i < used; i++)
                run_until(e, &c[i].called);
        assert_int_equal(m.workspace_creation_quota.total, 0);
        assert_int_equal(manager_create_workspace(&m, "a3", 32 << 20, SBX_CLASS_STANDARD, 1000, false, on_created,
                                                  &c[used], &err), 0);
        assert_int_equal(manager_create_workspace(&m, "c1", 32 << 20, SBX_CLASS_STANDARD, 1002, false, on_created,
                                                  &c[used + 1], &err), 0);
        test_manager_done(&m);
        assert_int_equal(n_entries(root), 0);
        sd_event_unref(e);
}

static const char *find_mkfs(void) {
        static const char * const paths[] = { "/sbin/mkfs.ext4", "/usr/sbin/mkfs.ext4" };
        for (size_t i = 0; i < ELEMENTSOF(paths); i++)
                if (access(paths[i], X_OK) == 0)
                        return paths[i];
        return NULL;
}

static void test_create_and_remove(void **state) {
        _cleanup_free_ char *img = NULL;
        const char *mkfs = find_mkfs();
        Workspace *ws, *again = NULL;
        sd_event *e;
        Created c = {};
        SbxError err = {};
        struct stat st;
        Manager m;

        if (!mkfs)
                skip();
        e = event_with_sigchld();
        test_manager(&m, e, mkfs);
        assert_int_equal(manager_create_workspace(&m, "real", 32 << 20, SBX_CLASS_STANDARD, 1000, false, on_created, &c,
                                                  &err), 0);
        /* Never over one being made. */
        assert_int_equal(manager_create_workspace(&m, "real", 32 << 20, SBX_CLASS_STANDARD, 1000, false, on_created, &c,
                                                  &err), -EEXIST);
        assert_string_equal(err.name, SBX_ERROR_WORKSPACE_EXISTS);
        run_until(e, &c.called);
        assert_int_equal(c.r, 0);
        ws = c.ws;
        assert_non_null(ws);
        assert_null(ws->creating);
        assert_int_equal(workspace_image_path(root, "real.1000", &img), 0);
        assert_int_equal(stat(img, &st), 0);
        /* The cap is the image's size; it is sparse, and only root reads it. */
        assert_int_equal((uint64_t) st.st_size, ws->size_max);
        assert_true((uint64_t) st.st_blocks * 512 < ws->size_max);
        assert_int_equal(st.st_mode & 07777, 0600);
        assert_true(workspace_size_used(root, ws) > 0);
        assert_int_equal(n_entries(root), 2);
        /* Never over an existing one, even one the manager does not know. */
        assert_int_equal(workspace_image_create(root, ws), -EEXIST);
        assert_int_equal(workspace_load(root, "real.1000", &again), 0);
        workspace_free(again);
        assert_int_equal(manager_delete_workspace(&m, ws, &err), 0);
        assert_int_equal(n_entries(root), 0);
        test_manager_done(&m);
        sd_event_unref(e);
}

/* Names are per owner: another user's "proj" neither stops a user's "proj"
 * nor is found by it; each is its own key, file and object. */
static void test_names_per_owner(void **state) {
        sd_event *e = event_with_sigchld();
        Created c = {};
        SbxError err = {};
        Manager m;
        Workspace *a, *b, *r;

        test_manager(&m, e, "/bin/false");
        assert_int_equal(manager_create_workspace(&m, "proj", 32 << 20, SBX_CLASS_STANDARD, 1000, false, on_created,
                                                  &c, &err), 0);
        assert_int_equal(manager_create_workspace(&m, "proj", 32 << 20, SBX_CLASS_STANDARD, 1001, false, on_created,
                                                  &c, &err), 0);
        assert_int_equal(manager_create_workspace(&m, "proj", 32 << 20, SBX_CLASS_STANDARD, 0, false, on_created,
                                                  &c, &err), 0);
        /* The owner's own is in the way. */
        assert_int_equal(manager_create_workspace(&m, "proj", 32 << 20, SBX_CLASS_STANDARD, 1001, false, on_created,
                                                  &c, &err), -EEXIST);
        assert_string_equal(err.name, SBX_ERROR_WORKSPACE_EXISTS);
        a = manager_find_own_workspace(&m, 1000, "proj");
        b = manager_find_own_workspace(&m, 1001, "proj");
        r = manager_find_own_workspace(&m, 0, "proj");
        assert_non_null(a);
        assert_non_null(b);
        assert_non_null(r);
        assert_string_equal(a->name, "proj.1000");
        assert_string_equal(b->name, "proj.1001");
        assert_string_equal(r->name, "proj");
        assert_string_equal(a->label, "proj");
        assert_string_equal(a->object_path, "/org/sandboxd1/workspace/proj_U1000");
        assert_string_equal(r->object_path, "/org/sandboxd1/workspace/proj");
        assert_ptr_equal(manager_find_workspace(&m, "proj.1001"), b);
        assert_null(manager_find_own_workspace(&m, 1002, "proj"));
        assert_int_equal(n_entries(root), 3);
        test_manager_done(&m);
        assert_int_equal(n_entries(root), 0);
        sd_event_unref(e);
}

/* Keys: a name, or a name and a UID other than root's, one spelling each. */
static void test_keys(void **state) {
        static const char * const good[] = { "proj", "proj.1000", "a.1", "a-b_c.4294967294" };
        static const char * const bad[] = { "proj.", ".1000", "proj.0", "proj.01", "proj.1000.1", "proj.x",
                                            "proj.4294967295", "proj.99999999999", "Proj.1000" };
        char *k = NULL;

        for (size_t i = 0; i < ELEMENTSOF(good); i++)
                assert_true(workspace_key_is_valid(good[i]));
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                assert_false(workspace_key_is_valid(bad[i]));
        assert_int_equal(workspace_key_make("proj", 0, &k), 0);
        assert_string_equal(k, "proj");
        free(k);
        assert_int_equal(workspace_key_make("proj", 1000, &k), 0);
        assert_string_equal(k, "proj.1000");
        free(k);
        assert_int_equal(workspace_key_make("proj.1000", 1000, &k), -EINVAL);
}

/* An image without metadata is a creation cut short: start-up removes it. */
static void test_load_drops_orphan_image(void **state) {
        _cleanup_free_ char *img = NULL;
        Manager m;

        test_manager(&m, NULL, "/bin/false");
        assert_true(asprintf(&img, "%s/orphan.img", root) > 0);
        write_file(img, "");
        assert_int_equal(n_entries(root), 1);
        assert_int_equal(manager_load_workspaces(&m), 0);
        assert_null(m.workspaces);
        assert_int_equal(n_entries(root), 0);
        test_manager_done(&m);
}

/* The workspace's class is a floor: raised when the spec names none,
 * refused when it names a lower one, never lowered. */
static void test_apply_class(void **state) {
        _cleanup_(workspace_freep) Workspace *ws = sample("cls");
        WorkerSpec s;
        SbxError e = {};

        ws->class = SBX_CLASS_DEVCONTAINER;
        worker_spec_init(&s);
        config.default_class = SBX_CLASS_TRUSTED;
        worker_spec_apply_defaults(&s, &config);
        assert_int_equal(workspace_apply_class(ws, &s, &e), 0);
        assert_int_equal(s.class, SBX_CLASS_DEVCONTAINER);
        worker_spec_done(&s);

        worker_spec_init(&s);
        s.class = SBX_CLASS_TRUSTED;
        s.set |= SPEC_HAS_CLASS;
        worker_spec_apply_defaults(&s, &config);
        assert_true(workspace_apply_class(ws, &s, &e) < 0);
        assert_string_equal(e.name, SBX_ERROR_INVALID_WORKSPACE);
        assert_non_null(strstr(e.message, "needs class devcontainer or above, not trusted"));
        worker_spec_done(&s);

        worker_spec_init(&s);
        s.class = SBX_CLASS_UNTRUSTED;
        s.set |= SPEC_HAS_CLASS;
        worker_spec_apply_defaults(&s, &config);
        assert_int_equal(workspace_apply_class(ws, &s, &e), 0);
        assert_int_equal(s.class, SBX_CLASS_UNTRUSTED);
        worker_spec_done(&s);
        config.default_class = SBX_CLASS_STANDARD;
}

static void spec_with(WorkerSpec *s, SbxClass class, const char *workspace) {
        worker_spec_init(s);
        s->argv = calloc(2, sizeof(char *));
        s->argv[0] = strdup("/bin/true");
        s->set |= SPEC_HAS_ARGV | SPEC_HAS_CLASS;
        s->class = class;
        if (workspace) {
                s->workspace = strdup(workspace);
                s->set |= SPEC_HAS_WORKSPACE;
        }
        worker_spec_apply_defaults(s, &config);
}

static void assert_spec_refused(WorkerSpec *s, const char *fragment) {
        SbxError e = {};
        assert_true(worker_spec_validate(s, &config, &e) < 0);
        assert_string_equal(e.name, SBX_ERROR_INVALID_WORKSPACE);
        assert_non_null(strstr(e.message, fragment));
        worker_spec_done(s);
}

static void test_spec_workspace(void **state) {
        WorkerSpec s;
        SbxError e = {};

        spec_with(&s, SBX_CLASS_DEVCONTAINER, NULL);
        assert_spec_refused(&s, "devcontainer needs a Workspace");
        spec_with(&s, SBX_CLASS_WASM, "proj");
        assert_spec_refused(&s, "not wasm");
        spec_with(&s, SBX_CLASS_HOSTILE, "proj");
        assert_spec_refused(&s, "not hostile");
        spec_with(&s, SBX_CLASS_STANDARD, "../etc");
        assert_spec_refused(&s, "is not a workspace name");
        spec_with(&s, SBX_CLASS_STANDARD, "proj");
        s.set |= SPEC_HAS_DISK_MAX;
        s.disk_max = 64 << 20;
        assert_spec_refused(&s, "DiskMax does not apply");

        static const SbxClass ok[] = { SBX_CLASS_TRUSTED, SBX_CLASS_STANDARD, SBX_CLASS_DEVCONTAINER,
                                       SBX_CLASS_UNTRUSTED };
        for (size_t i = 0; i < ELEMENTSOF(ok); i++) {
                spec_with(&s, ok[i], "proj");
                assert_int_equal(worker_spec_validate(&s, &config, &e), 0);
                worker_spec_done(&s);
        }
}

/* An llm-generated devcontainer runs untrusted: the origin's floor is above it. */
static void test_devcontainer_under_origin_floor(void **state) {
        WorkerSpec s;

        spec_with(&s, SBX_CLASS_DEVCONTAINER, "proj");
        free(s.origin);
        s.origin = strdup("llm-generated");
        s.set |= SPEC_HAS_ORIGIN;
        worker_spec_apply_defaults(&s, &config);
        assert_int_equal(s.class, SBX_CLASS_UNTRUSTED);
        worker_spec_done(&s);
}

/* A home that is still a mount point (a workspace whose unmount failed) must
 * not be emptied by the home's deletion: rm_rf() stays on the parent's file
 * system, PATH itself included. Needs a mount namespace of its own. */
static int rm_rf_mount_child(void) {
        _cleanup_free_ char *dir = NULL, *file = NULL;
        int fd, r;

        if (unshare(CLONE_NEWNS) < 0)
                return 77;
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                return 77;
        if (asprintf(&dir, "%s/home", root) < 0 || asprintf(&file, "%s/home/data", root) < 0)
                return 1;
        if (mkdir(dir, 0700) < 0 || mount("tmpfs", dir, "tmpfs", 0, "size=1M") < 0)
                return 77;
        fd = open(file, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        if (fd < 0)
                return 2;
        close(fd);
        r = rm_rf(dir);
        if (r != -EXDEV)
                return 3;
        if (access(file, F_OK) < 0)
                return 4;
        if (umount(dir) < 0)
                return 5;
        /* Unmounted, it is an ordinary directory again and goes. */
        return rm_rf(dir) == 0 && access(dir, F_OK) < 0 ? 0 : 6;
}

static void test_rm_rf_leaves_a_mounted_home(void **state) {
        int status;
        pid_t pid = fork();

        assert_true(pid >= 0);
        if (pid == 0)
                _exit(rm_rf_mount_child());
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        if (WEXITSTATUS(status) == 77)
                skip();
        assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_names),
                cmocka_unit_test(test_classes),
                cmocka_unit_test(test_save_load),
                cmocka_unit_test(test_load_refuses),
                cmocka_unit_test(test_create_failure_leaves_nothing),
                cmocka_unit_test(test_create_and_remove),
                cmocka_unit_test(test_create_aborted),
                cmocka_unit_test(test_create_quota),
                cmocka_unit_test(test_names_per_owner),
                cmocka_unit_test(test_keys),
                cmocka_unit_test(test_create_concurrency_caps),
                cmocka_unit_test(test_load_drops_orphan_image),
                cmocka_unit_test(test_apply_class),
                cmocka_unit_test(test_spec_workspace),
                cmocka_unit_test(test_devcontainer_under_origin_floor),
                cmocka_unit_test(test_rm_rf_leaves_a_mounted_home),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
