/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Who may do what without polkit, which action a request needs, and the
 * classes an origin forces. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "authz.h"
#include "config.h"
#include "test-config.h"
#include "errors.h"
#include "spec.h"

#define TESTER 1500
#define OTHER 1600

static void test_root_never_asks(void **state) {
        for (SbxAction a = 0; a < _SBX_ACTION_MAX; a++) {
                assert_int_equal(authz_decide(0, a, UID_INVALID), AUTHZ_ALLOW);
                assert_int_equal(authz_decide(0, a, TESTER), AUTHZ_ALLOW);
        }
}

static void test_owner_manages_own_worker(void **state) {
        assert_int_equal(authz_decide(TESTER, SBX_ACTION_MANAGE_WORKERS, TESTER), AUTHZ_ALLOW);
        /* Someone else's worker, or no worker at all (listing): polkit decides. */
        assert_int_equal(authz_decide(TESTER, SBX_ACTION_MANAGE_WORKERS, OTHER), AUTHZ_ASK_POLKIT);
        assert_int_equal(authz_decide(TESTER, SBX_ACTION_MANAGE_WORKERS, 0), AUTHZ_ASK_POLKIT);
        assert_int_equal(authz_decide(TESTER, SBX_ACTION_MANAGE_WORKERS, UID_INVALID), AUTHZ_ASK_POLKIT);
}

/* A workspace's owner manages it as a worker's owner does; owning one is no
 * right over another's, nor over workers. */
static void test_owner_manages_own_workspace(void **state) {
        assert_string_equal(sbx_action_to_string(SBX_ACTION_MANAGE_WORKSPACES), "org.sandboxd1.manage-workspaces");
        assert_int_equal(authz_decide(TESTER, SBX_ACTION_MANAGE_WORKSPACES, TESTER), AUTHZ_ALLOW);
        assert_int_equal(authz_decide(TESTER, SBX_ACTION_MANAGE_WORKSPACES, OTHER), AUTHZ_ASK_POLKIT);
        assert_int_equal(authz_decide(TESTER, SBX_ACTION_MANAGE_WORKSPACES, UID_INVALID), AUTHZ_ASK_POLKIT);
        assert_int_equal(authz_decide(0, SBX_ACTION_MANAGE_WORKSPACES, OTHER), AUTHZ_ALLOW);
        assert_int_equal(authz_decide(UID_INVALID, SBX_ACTION_MANAGE_WORKSPACES, UID_INVALID), AUTHZ_DENY);
}

static void test_owning_a_worker_grants_no_creation(void **state) {
        assert_int_equal(authz_decide(TESTER, SBX_ACTION_CREATE_WORKER, TESTER), AUTHZ_ASK_POLKIT);
        assert_int_equal(authz_decide(TESTER, SBX_ACTION_CREATE_TRUSTED_WORKER, TESTER), AUTHZ_ASK_POLKIT);
        assert_int_equal(authz_decide(TESTER, SBX_ACTION_CREATE_WORKER, UID_INVALID), AUTHZ_ASK_POLKIT);
}

static void test_unknown_caller_is_refused(void **state) {
        for (SbxAction a = 0; a < _SBX_ACTION_MAX; a++)
                assert_int_equal(authz_decide(UID_INVALID, a, UID_INVALID), AUTHZ_DENY);
        /* A worker whose owner is unknown is nobody's: UID_INVALID never matches. */
        assert_int_equal(authz_decide(UID_INVALID, SBX_ACTION_MANAGE_WORKERS, UID_INVALID), AUTHZ_DENY);
        assert_int_equal(authz_decide(TESTER, _SBX_ACTION_MAX, TESTER), AUTHZ_DENY);
}

static void test_create_actions(void **state) {
        assert_int_equal(authz_create_action(SBX_CLASS_TRUSTED), SBX_ACTION_CREATE_TRUSTED_WORKER);
        assert_int_equal(authz_create_action(SBX_CLASS_STANDARD), SBX_ACTION_CREATE_WORKER);
        assert_int_equal(authz_create_action(SBX_CLASS_UNTRUSTED), SBX_ACTION_CREATE_WORKER);
        assert_int_equal(authz_create_action(SBX_CLASS_HOSTILE), SBX_ACTION_CREATE_WORKER);
        assert_int_equal(authz_create_action(SBX_CLASS_WASM), SBX_ACTION_CREATE_WORKER);
        assert_string_equal(sbx_action_to_string(SBX_ACTION_CREATE_WORKER), "org.sandboxd1.create-worker");
        assert_string_equal(sbx_action_to_string(SBX_ACTION_CREATE_TRUSTED_WORKER),
                            "org.sandboxd1.create-trusted-worker");
        assert_string_equal(sbx_action_to_string(SBX_ACTION_MANAGE_WORKERS), "org.sandboxd1.manage-workers");
}

/* ---- origins ------------------------------------------------------------ */

static void test_builtin_floors(void **state) {
        SbxConfig c;

        sbx_config_init_defaults(&c);
        assert_int_equal(sbx_config_origin_floor(&c, "first-party"), SBX_CLASS_TRUSTED);
        assert_int_equal(sbx_config_origin_floor(&c, "user"), SBX_CLASS_TRUSTED);
        assert_int_equal(sbx_config_origin_floor(&c, "llm-generated"), SBX_CLASS_UNTRUSTED);
        assert_int_equal(sbx_config_origin_floor(&c, "marketplace"), SBX_CLASS_UNTRUSTED);
        assert_int_equal(sbx_config_origin_floor(&c, "ci-bot"), _SBX_CLASS_INVALID);
        assert_int_equal(sbx_config_origin_floor(&c, ""), _SBX_CLASS_INVALID);
        assert_int_equal(sbx_config_origin_floor(&c, "LLM-generated"), _SBX_CLASS_INVALID);
        sbx_config_done(&c);
}

/* Raises the requested class of a spec from ORIGIN (NULL: none given). */
static SbxClass effective(const SbxConfig *c, const char *origin, int requested, SbxClass *ret_requested) {
        WorkerSpec s;
        SbxClass cl;

        worker_spec_init(&s);
        s.argv = strv_copy((char *[]) { (char *) "/bin/true", NULL });
        if (requested >= 0) {
                s.class = requested;
                s.set |= SPEC_HAS_CLASS;
        }
        if (origin)
                s.origin = strdup(origin);
        worker_spec_apply_defaults(&s, c);
        cl = s.class;
        *ret_requested = s.requested_class;
        worker_spec_done(&s);
        return cl;
}

static void test_floor_raises_never_lowers(void **state) {
        SbxConfig c;
        SbxClass req;

        sbx_config_init_defaults(&c);
        assert_int_equal(effective(&c, "llm-generated", SBX_CLASS_TRUSTED, &req), SBX_CLASS_UNTRUSTED);
        assert_int_equal(req, SBX_CLASS_TRUSTED);
        assert_int_equal(effective(&c, "marketplace", SBX_CLASS_STANDARD, &req), SBX_CLASS_UNTRUSTED);
        assert_int_equal(req, SBX_CLASS_STANDARD);
        /* The default class is raised too. */
        assert_int_equal(effective(&c, "llm-generated", -1, &req), SBX_CLASS_UNTRUSTED);
        assert_int_equal(req, SBX_CLASS_STANDARD);
        /* Above the floor: untouched. */
        assert_int_equal(effective(&c, "llm-generated", SBX_CLASS_HOSTILE, &req), SBX_CLASS_HOSTILE);
        assert_int_equal(effective(&c, "marketplace", SBX_CLASS_WASM, &req), SBX_CLASS_WASM);
        /* No origin is first-party: trusted stays trusted. */
        assert_int_equal(effective(&c, NULL, SBX_CLASS_TRUSTED, &req), SBX_CLASS_TRUSTED);
        assert_int_equal(effective(&c, "user", SBX_CLASS_TRUSTED, &req), SBX_CLASS_TRUSTED);
        sbx_config_done(&c);
}

static void test_unknown_origin_refused(void **state) {
        SbxConfig c;
        SbxError e = {};
        WorkerSpec s;

        sbx_config_init_defaults(&c);
        worker_spec_init(&s);
        s.argv = strv_copy((char *[]) { (char *) "/bin/true", NULL });
        s.origin = strdup("ci-bot");
        worker_spec_apply_defaults(&s, &c);
        assert_int_equal(s.class, SBX_CLASS_STANDARD);
        assert_true(worker_spec_validate(&s, &c, &e) < 0);
        assert_string_equal(e.name, SBX_ERROR_UNKNOWN_ORIGIN);
        assert_non_null(strstr(e.message, "ci-bot"));
        worker_spec_done(&s);
        sbx_config_done(&c);
}

static void test_operator_origins(void **state) {
        SbxConfig c;
        SbxError e = {};
        SbxClass req;

        assert_int_equal(test_config_load("[Classes]\nOrigins=ci-bot:standard scraped:hostile llm-generated:hostile\n",
                                          &c, &e), 0);
        assert_int_equal(sbx_config_origin_floor(&c, "ci-bot"), SBX_CLASS_STANDARD);
        assert_int_equal(sbx_config_origin_floor(&c, "scraped"), SBX_CLASS_HOSTILE);
        /* A built-in floor can be raised. */
        assert_int_equal(sbx_config_origin_floor(&c, "llm-generated"), SBX_CLASS_HOSTILE);
        assert_int_equal(sbx_config_origin_floor(&c, "marketplace"), SBX_CLASS_UNTRUSTED);
        assert_int_equal(effective(&c, "ci-bot", SBX_CLASS_TRUSTED, &req), SBX_CLASS_STANDARD);
        assert_int_equal(effective(&c, "ci-bot", SBX_CLASS_UNTRUSTED, &req), SBX_CLASS_UNTRUSTED);
        /* A name that is a prefix of another is not that one. */
        assert_int_equal(sbx_config_origin_floor(&c, "ci"), _SBX_CLASS_INVALID);
        sbx_config_done(&c);
}

static void test_operator_origins_refused(void **state) {
        SbxConfig c;
        SbxError e = {};

        assert_true(test_config_load("[Classes]\nOrigins=marketplace:trusted\n", &c, &e) < 0);
        assert_non_null(strstr(e.message, "lowers marketplace below untrusted"));
        sbx_config_done(&c);
        e = (SbxError) {};
        assert_true(test_config_load("[Classes]\nOrigins=ci-bot\n", &c, &e) < 0);
        assert_non_null(strstr(e.message, "ORIGIN:CLASS"));
        sbx_config_done(&c);
        e = (SbxError) {};
        assert_true(test_config_load("[Classes]\nOrigins=ci-bot:sturdy\n", &c, &e) < 0);
        sbx_config_done(&c);
        e = (SbxError) {};
        assert_true(test_config_load("[Classes]\nOrigins=Bad_Name:standard\n", &c, &e) < 0);
        sbx_config_done(&c);
}

static void test_trusted_only_first_party(void **state) {
        SbxConfig c;
        SbxError e = {};
        SbxClass req;

        assert_int_equal(test_config_load("[Classes]\nTrustedOnlyFirstParty=yes\nOrigins=ci-bot:trusted\n", &c, &e), 0);
        assert_true(c.trusted_first_party_only);
        assert_int_equal(effective(&c, NULL, SBX_CLASS_TRUSTED, &req), SBX_CLASS_TRUSTED);
        assert_int_equal(effective(&c, "first-party", SBX_CLASS_TRUSTED, &req), SBX_CLASS_TRUSTED);
        assert_int_equal(effective(&c, "user", SBX_CLASS_TRUSTED, &req), SBX_CLASS_STANDARD);
        assert_int_equal(req, SBX_CLASS_TRUSTED);
        assert_int_equal(effective(&c, "ci-bot", SBX_CLASS_TRUSTED, &req), SBX_CLASS_STANDARD);
        assert_int_equal(effective(&c, "llm-generated", SBX_CLASS_TRUSTED, &req), SBX_CLASS_UNTRUSTED);
        sbx_config_done(&c);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_root_never_asks),
                cmocka_unit_test(test_owner_manages_own_worker),
                cmocka_unit_test(test_owning_a_worker_grants_no_creation),
                cmocka_unit_test(test_owner_manages_own_workspace),
                cmocka_unit_test(test_unknown_caller_is_refused),
                cmocka_unit_test(test_create_actions),
                cmocka_unit_test(test_builtin_floors),
                cmocka_unit_test(test_floor_raises_never_lowers),
                cmocka_unit_test(test_unknown_origin_refused),
                cmocka_unit_test(test_operator_origins),
                cmocka_unit_test(test_operator_origins_refused),
                cmocka_unit_test(test_trusted_only_first_party),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
