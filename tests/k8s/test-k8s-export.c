/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The mapping of every spec key and class to Kubernetes objects, and the
 * refusals (tools/k8s-export.c, tools/sandboxctl-export.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <cmocka.h>

#include "errors.h"
#include "k8s-test-util.h"

#define IMAGE "--image=registry.example/agent:1"
#define EXPORT(...) ((char *[]) { "export", "--format=kubernetes", IMAGE, __VA_ARGS__, NULL })

static char cred_path[] = "/tmp/test-k8s-cred-XXXXXX";

static int setup(void **state) {
        int fd = mkstemp(cred_path);
        if (fd < 0 || write(fd, "s3cr3t-tok", 10) != 10)
                return -1;
        close(fd);
        return 0;
}

static int teardown(void **state) {
        unlink(cred_path);
        return 0;
}

static void export_ok(char **argv, const char *config, K8sExport *e) {
        SbxError error = {};
        int r = k8s_test_export(argv, config, e, &error);

        if (r < 0)
                fail_msg("export failed: %d %s", r, error.message);
}

static void export_refused(char **argv, const char *config, const char *name, const char *message) {
        _cleanup_(k8s_export_done) K8sExport e = {};
        SbxError error = {};

        assert_true(k8s_test_export(argv, config, &e, &error) < 0);
        assert_null(e.documents);
        if (name)
                assert_string_equal(error.name, name);
        if (!strstr(error.message, message))
                fail_msg("message \"%s\" lacks \"%s\"", error.message, message);
}

static json_object *pod_of(const K8sExport *e) {
        json_object *s = k8s_find(e, "Sandbox", NULL) ?: k8s_find(e, "SandboxTemplate", NULL);
        assert_non_null(s);
        return k8s_get(s, "spec.podTemplate.spec");
}

static void check_hardened(json_object *pod) {
        json_object *c = k8s_get(pod, "containers.0");

        assert_false(json_object_get_boolean(k8s_get(pod, "automountServiceAccountToken")));
        assert_false(json_object_get_boolean(k8s_get(pod, "enableServiceLinks")));
        assert_false(json_object_get_boolean(k8s_get(pod, "hostNetwork")));
        assert_false(json_object_get_boolean(k8s_get(pod, "hostPID")));
        assert_false(json_object_get_boolean(k8s_get(pod, "hostIPC")));
        assert_true(json_object_get_boolean(k8s_get(pod, "securityContext.runAsNonRoot")));
        assert_int_equal(json_object_get_int64(k8s_get(pod, "securityContext.runAsUser")), K8S_WORKER_UID);
        assert_string_equal(k8s_get_str(pod, "securityContext.seccompProfile.type"), "RuntimeDefault");
        assert_false(json_object_get_boolean(k8s_get(c, "securityContext.allowPrivilegeEscalation")));
        assert_false(json_object_get_boolean(k8s_get(c, "securityContext.privileged")));
        assert_string_equal(k8s_get_str(c, "securityContext.capabilities.drop.0"), "ALL");
        assert_null(k8s_get(c, "securityContext.capabilities.add"));
        assert_true(json_object_get_boolean(k8s_get(c, "securityContext.readOnlyRootFilesystem")));
        assert_true(json_object_get_boolean(k8s_get(c, "securityContext.runAsNonRoot")));
        assert_string_equal(k8s_get_str(c, "securityContext.seccompProfile.type"), "RuntimeDefault");
        assert_string_equal(k8s_get_str(pod, "volumes.0.name"), "tmp");
        assert_string_equal(k8s_get_str(pod, "volumes.0.emptyDir.medium"), "Memory");
        assert_non_null(k8s_get_str(pod, "volumes.0.emptyDir.sizeLimit"));
        assert_string_equal(k8s_get_str(c, "volumeMounts.0.mountPath"), "/tmp");
        assert_string_equal(k8s_get_str(pod, "restartPolicy"), "Never");
}

static void test_class_trusted(void **state) {
        _cleanup_(k8s_export_done) K8sExport e = {};
        json_object *pod;

        export_ok(EXPORT("--class=trusted", "--", "/bin/true"), NULL, &e);
        assert_null(k8s_find(&e, "RuntimeClass", NULL));
        pod = pod_of(&e);
        assert_null(k8s_get(pod, "runtimeClassName"));
        /* The shared kernel: the per-worker UID's stand-in is a user namespace. */
        assert_false(json_object_get_boolean(k8s_get(pod, "hostUsers")));
        check_hardened(pod);
        assert_true(k8s_warned(&e, "class trusted"));
        assert_true(k8s_warned(&e, "per-worker UID"));
}

static void check_runtime_class(const char *cls, const char *name, const char *handler) {
        _cleanup_(k8s_export_done) K8sExport e = {};
        char opt[64], label[128];
        json_object *rc, *pod;

        snprintf(opt, sizeof(opt), "--class=%s", cls);
        snprintf(label, sizeof(label), "%s%s", K8S_RUNTIME_LABEL_PREFIX, handler);
        export_ok(EXPORT(opt, "--", "/bin/true"), NULL, &e);
        rc = k8s_find(&e, "RuntimeClass", name);
        assert_non_null(rc);
        assert_string_equal(k8s_get_str(rc, "handler"), handler);
        /* The gate's second half: only nodes that carry the handler's label. */
        assert_string_equal(k8s_key(k8s_get(rc, "scheduling.nodeSelector"), label), "true");
        pod = pod_of(&e);
        assert_string_equal(k8s_get_str(pod, "runtimeClassName"), name);
        assert_null(k8s_get(pod, "hostUsers"));
        check_hardened(pod);
        assert_false(k8s_warned(&e, "class trusted"));
}

static void test_class_standard(void **state) {
        check_runtime_class("standard", "gvisor", "runsc");
}

static void test_class_untrusted(void **state) {
        check_runtime_class("untrusted", "gvisor", "runsc");
}

static void test_class_hostile(void **state) {
        check_runtime_class("hostile", "kata-qemu", "kata-qemu");
}

static void test_class_default(void **state) {
        _cleanup_(k8s_export_done) K8sExport e = {};

        /* No --class: the configuration's DefaultClass (standard). */
        export_ok(EXPORT("--", "/bin/true"), NULL, &e);
        assert_string_equal(k8s_get_str(pod_of(&e), "runtimeClassName"), "gvisor");
}

static void test_class_wasm_refused(void **state) {
        export_refused(EXPORT("--class=wasm", "--", "/m.wasm"), NULL, SBX_ERROR_ISOLATION_UNAVAILABLE,
                       "wasm has no Kubernetes export");
}

static void test_services_refused(void **state) {
        char cred[sizeof(cred_path) + 8];

        snprintf(cred, sizeof(cred), "API:%s", cred_path);
        export_refused(EXPORT("--service", "API=https://api.example.com", "--service-credential", cred, "--",
                              "/bin/true"),
                       NULL, SBX_ERROR_ISOLATION_UNAVAILABLE, "no Kubernetes export");
}

/* A pod cannot be checkpointed: suspend is refused, stop is what the idle
 * timeout does anyway. */
static void test_idle_action(void **state) {
        _cleanup_(k8s_export_done) K8sExport e = {};

        export_refused(EXPORT("--idle-action", "suspend", "--", "/bin/true"), NULL, SBX_ERROR_NOT_SUPPORTED,
                       "no Kubernetes export");
        export_ok(EXPORT("--idle-action", "stop", "--", "/bin/true"), NULL, &e);
}

/* A spec field the export does not map (one added to the spec later) is
 * refused, not dropped from the manifest. */
static void test_unmapped_field_refused(void **state) {
        _cleanup_(sbx_config_done) SbxConfig c = {};
        _cleanup_(worker_spec_done) WorkerSpec s = {};
        SbxError error = {};

        sbx_config_init_defaults(&c);
        worker_spec_init(&s);
        s.argv = strv_copy((char *[]) { (char *) "/bin/true", NULL });
        assert_non_null(s.argv);
        s.set = SPEC_HAS_ARGV | (1u << 30);
        assert_int_equal(k8s_export_prepare(&s, &c, &error), -EOPNOTSUPP);
        assert_string_equal(error.name, SBX_ERROR_ISOLATION_UNAVAILABLE);
        assert_non_null(strstr(error.message, "no Kubernetes export"));

        s.set = SPEC_HAS_ARGV | SPEC_HAS_WORKSPACE;
        s.workspace = strdup("proj");
        assert_non_null(s.workspace);
        assert_int_equal(k8s_export_prepare(&s, &c, &error), -EOPNOTSUPP);
        assert_string_equal(error.name, SBX_ERROR_NOT_SUPPORTED);
        assert_non_null(strstr(error.message, "Workspace"));
}

static void test_class_unknown_refused(void **state) {
        export_refused(EXPORT("--class=fortress", "--", "/bin/true"), NULL, SBX_ERROR_UNKNOWN_CLASS, "Unknown");
}

static void test_origin_floor(void **state) {
        _cleanup_(k8s_export_done) K8sExport e = {};

        /* As on the host: no class asked, the origin's floor decides. */
        export_ok(EXPORT("--origin=llm-generated", "--", "/bin/true"), NULL, &e);
        assert_string_equal(k8s_get_str(pod_of(&e), "runtimeClassName"), "gvisor");
        /* A class asked for below the floor is refused, not raised silently. */
        export_refused(EXPORT("--class=trusted", "--origin=llm-generated", "--", "/bin/true"), NULL,
                       SBX_ERROR_UNKNOWN_CLASS, "held to class untrusted");
        export_refused(EXPORT("--class=trusted", "--origin=marketplace", "--", "/bin/true"), NULL, NULL,
                       "class trusted cannot be exported");
        /* The operator's own floors, from sandboxd.conf. */
        export_refused(EXPORT("--class=trusted", "--origin=ci-bot", "--", "/bin/true"),
                       "[Classes]\nOrigins = ci-bot:untrusted\n", NULL, "held to class untrusted");
        export_refused(EXPORT("--class=trusted", "--origin=user", "--", "/bin/true"),
                       "[Classes]\nTrustedOnlyFirstParty = yes\n", NULL, "held to class standard");
        export_refused(EXPORT("--origin=nobody-defined", "--", "/bin/true"), NULL, SBX_ERROR_UNKNOWN_ORIGIN,
                       "Unknown origin");
}

static void test_limits(void **state) {
        _cleanup_(k8s_export_done) K8sExport e = {};
        json_object *pod, *c;

        export_ok(EXPORT("--memory=1G", "--cpu=150%", "--runtime=2h", "--disk=256M", "--tasks=64", "--idle=5min",
                         "--", "/bin/true"), NULL, &e);
        pod = pod_of(&e);
        c = k8s_get(pod, "containers.0");
        assert_string_equal(k8s_get_str(c, "resources.limits.memory"), "1073741824");
        assert_string_equal(k8s_get_str(c, "resources.requests.memory"), "1073741824");
        assert_string_equal(k8s_get_str(c, "resources.limits.cpu"), "1500m");
        assert_string_equal(k8s_get_str(c, "resources.limits.ephemeral-storage"), "268435456");
        assert_int_equal(json_object_get_int64(k8s_get(pod, "activeDeadlineSeconds")), 7200);
        assert_string_equal(k8s_get_str(k8s_find(&e, "Sandbox", NULL), "spec.shutdownTime"), "2026-12-01T02:00:00Z");
        assert_string_equal(k8s_get_str(k8s_find(&e, "Sandbox", NULL), "spec.shutdownPolicy"), "Delete");
        /* The home: DiskMax, on disk as the host's disk image is. */
        assert_string_equal(k8s_get_str(pod, "volumes.1.name"), "home");
        assert_string_equal(k8s_get_str(pod, "volumes.1.emptyDir.sizeLimit"), "268435456");
        assert_null(k8s_get(pod, "volumes.1.emptyDir.medium"));
        /* /tmp: a quarter of MemoryMax, at most 64 MiB, as in the gVisor bundle. */
        assert_string_equal(k8s_get_str(pod, "volumes.0.emptyDir.sizeLimit"), "67108864");
        assert_true(k8s_warned(&e, "TasksMax=64"));
        assert_true(k8s_warned(&e, "podPidsLimit"));
        assert_true(k8s_warned(&e, "IdleTimeoutUSec=300s"));
}

static void test_limit_defaults_and_range(void **state) {
        _cleanup_(k8s_export_done) K8sExport e = {};
        json_object *c;

        export_ok(EXPORT("--", "/bin/true"), NULL, &e);
        c = k8s_get(pod_of(&e), "containers.0");
        assert_string_equal(k8s_get_str(c, "resources.limits.memory"), "268435456");
        assert_string_equal(k8s_get_str(c, "resources.limits.cpu"), "500m");
        /* Every worker's disk is capped: the default DiskMax, 1 GiB. */
        assert_string_equal(k8s_get_str(c, "resources.limits.ephemeral-storage"), "1073741824");
        assert_string_equal(k8s_get_str(pod_of(&e), "volumes.1.emptyDir.sizeLimit"), "1073741824");
        assert_int_equal(json_object_get_int64(k8s_get(pod_of(&e), "activeDeadlineSeconds")), 3600);
        /* The daemon's ranges hold for the export too. */
        export_refused(EXPORT("--memory=1K", "--", "/bin/true"), NULL, SBX_ERROR_LIMIT_OUT_OF_RANGE, "MemoryMax");
        export_refused(EXPORT("--disk=17G", "--", "/bin/true"), NULL, SBX_ERROR_LIMIT_OUT_OF_RANGE, "DiskMax");
}

static void test_credentials(void **state) {
        _cleanup_(k8s_export_done) K8sExport e = {};
        _cleanup_free_ char *yaml = NULL;
        char opt[128];
        json_object *sec, *pod, *c, *env;

        snprintf(opt, sizeof(opt), "--credential=token:%s", cred_path);
        export_ok(EXPORT(opt, "--", "/bin/true"), NULL, &e);
        sec = k8s_find(&e, "Secret", "sandboxd-worker-credentials");
        assert_non_null(sec);
        assert_string_equal(k8s_get_str(sec, "data.token"), "czNjcjN0LXRvaw==");
        pod = pod_of(&e);
        assert_string_equal(k8s_get_str(pod, "volumes.2.secret.secretName"), "sandboxd-worker-credentials");
        assert_int_equal(json_object_get_int64(k8s_get(pod, "volumes.2.secret.defaultMode")), 0400);
        c = k8s_get(pod, "containers.0");
        assert_string_equal(k8s_get_str(c, "volumeMounts.2.mountPath"), K8S_CREDENTIALS_DIR);
        assert_true(json_object_get_boolean(k8s_get(c, "volumeMounts.2.readOnly")));
        env = k8s_get(c, "env");
        for (size_t i = 0; i < json_object_array_length(env); i++)
                assert_null(strstr(json_object_to_json_string(json_object_array_get_idx(env, i)), "czNjcjN0"));
        assert_string_equal(k8s_get_str(c, "env.1.name"), "CREDENTIALS_DIRECTORY");
        assert_string_equal(k8s_get_str(c, "env.1.value"), K8S_CREDENTIALS_DIR);
        /* The plain value appears nowhere: only base64 in the Secret. */
        assert_int_equal(k8s_export_to_yaml(&e, &yaml), 0);
        assert_null(strstr(yaml, "s3cr3t-tok"));
        export_refused(EXPORT("--credential=bad/name:/dev/null", "--", "/bin/true"), NULL,
                       SBX_ERROR_INVALID_CREDENTIAL, "");
}

static void test_environment(void **state) {
        _cleanup_(k8s_export_done) K8sExport e = {};
        _cleanup_free_ char *yaml = NULL;
        json_object *sec, *c;

        export_ok(EXPORT("--setenv=API_KEY=plain-value-7", "--", "/bin/true"), NULL, &e);
        sec = k8s_find(&e, "Secret", "sandboxd-worker-environment");
        assert_non_null(sec);
        assert_string_equal(k8s_get_str(sec, "data.API_KEY"), "cGxhaW4tdmFsdWUtNw==");
        c = k8s_get(pod_of(&e), "containers.0");
        assert_string_equal(k8s_get_str(c, "env.0.name"), "HOME");
        assert_string_equal(k8s_get_str(c, "env.0.value"), K8S_HOME);
        assert_string_equal(k8s_get_str(c, "env.1.name"), "API_KEY");
        assert_null(k8s_get(c, "env.1.value"));
        assert_string_equal(k8s_get_str(c, "env.1.valueFrom.secretKeyRef.name"), "sandboxd-worker-environment");
        assert_string_equal(k8s_get_str(c, "env.1.valueFrom.secretKeyRef.key"), "API_KEY");
        assert_int_equal(k8s_export_to_yaml(&e, &yaml), 0);
        assert_null(strstr(yaml, "plain-value-7"));
        /* The host's reserved names stay reserved. */
        export_refused(EXPORT("--setenv=HTTPS_PROXY=http://evil", "--", "/bin/true"), NULL,
                       SBX_ERROR_INVALID_ENVIRONMENT, "");
}

static void test_no_egress(void **state) {
        _cleanup_(k8s_export_done) K8sExport e = {};
        json_object *np, *c;

        export_ok(EXPORT("--", "/bin/true"), NULL, &e);
        np = k8s_find(&e, "NetworkPolicy", "sandboxd-worker-worker");
        assert_non_null(np);
        assert_string_equal(k8s_key(k8s_get(np, "spec.podSelector.matchLabels"), "sandboxd.io/role"), "worker");
        assert_string_equal(k8s_get_str(np, "spec.policyTypes.1"), "Egress");
        assert_int_equal(json_object_array_length(k8s_get(np, "spec.egress")), 0);
        assert_int_equal(json_object_array_length(k8s_get(np, "spec.ingress")), 0);
        assert_null(k8s_find(&e, "Deployment", NULL));
        assert_null(k8s_find(&e, "Service", NULL));
        c = k8s_get(pod_of(&e), "containers.0");
        for (size_t i = 0; i < json_object_array_length(k8s_get(c, "env")); i++)
                assert_string_not_equal(k8s_get_str(json_object_array_get_idx(k8s_get(c, "env"), i), "name"),
                                        "HTTPS_PROXY");
}

static void test_egress(void **state) {
        _cleanup_(k8s_export_done) K8sExport e = {};
        _cleanup_(k8s_json_putp) json_object *policy = NULL;
        json_object *np, *gw, *dep, *c;

        export_ok(EXPORT("--name=coder", "--allow=api.example.org", "--allow=*.pkg.example.org:8443",
                         "--egress-mode=report", "--egress-rate=1M", "--", "/bin/true"),
                  "[Egress]\nFloor = *.example.org\nDeny = bad.example.org\n", &e);
        /* The proxy's policy: the daemon's own JSON, floor and deny included. */
        policy = json_tokener_parse(k8s_key(k8s_get(k8s_find(&e, "Secret", "coder-egress-policy"), "stringData"),
                                            "policy.json"));
        assert_non_null(policy);
        assert_string_equal(k8s_get_str(policy, "allow.0"), "api.example.org");
        assert_string_equal(k8s_get_str(policy, "allow.1"), "*.pkg.example.org:8443");
        assert_string_equal(k8s_get_str(policy, "floor.0"), "*.example.org");
        assert_string_equal(k8s_get_str(policy, "deny.0"), "bad.example.org");
        assert_string_equal(k8s_get_str(policy, "mode"), "report");
        assert_int_equal(json_object_get_int64(k8s_get(policy, "rate_bps")), 1048576);
        /* The worker reaches only the gateway's port. */
        np = k8s_find(&e, "NetworkPolicy", "coder-worker");
        assert_int_equal(json_object_array_length(k8s_get(np, "spec.egress")), 1);
        assert_string_equal(k8s_key(k8s_get(np, "spec.egress.0.to.0.podSelector.matchLabels"), "sandboxd.io/role"),
                            "egress");
        assert_int_equal(json_object_get_int64(k8s_get(np, "spec.egress.0.ports.0.port")), 3128);
        assert_null(k8s_get(np, "spec.egress.1"));
        /* The gateway: its own fence, no wider than its policy's ports. */
        gw = k8s_find(&e, "NetworkPolicy", "coder-egress-gateway");
        assert_non_null(gw);
        assert_string_equal(k8s_get_str(gw, "spec.egress.0.to.0.ipBlock.cidr"), "0.0.0.0/0");
        assert_string_equal(k8s_get_str(gw, "spec.egress.0.to.0.ipBlock.except.1"), "10.0.0.0/8");
        assert_int_equal(json_object_get_int64(k8s_get(gw, "spec.egress.0.ports.0.port")), 443);
        assert_int_equal(json_object_get_int64(k8s_get(gw, "spec.egress.0.ports.1.port")), 8443);
        assert_null(k8s_get(gw, "spec.egress.0.ports.2"));
        assert_int_equal(json_object_get_int64(k8s_get(gw, "spec.ingress.0.ports.0.port")), 3128);
        dep = k8s_find(&e, "Deployment", "coder-egress");
        assert_non_null(dep);
        assert_string_equal(k8s_get_str(dep, "spec.template.spec.containers.0.image"), "localhost/sandbox-egress:test");
        assert_string_equal(k8s_get_str(dep, "spec.template.spec.containers.0.args.1"),
                            "--policy=" K8S_EGRESS_POLICY_DIR "/policy.json");
        assert_string_equal(k8s_get_str(dep, "spec.template.spec.containers.0.securityContext.capabilities.drop.0"),
                            "ALL");
        assert_true(json_object_get_boolean(k8s_get(dep, "spec.template.spec.securityContext.runAsNonRoot")));
        assert_non_null(k8s_find(&e, "Service", "coder-egress"));
        c = k8s_get(pod_of(&e), "containers.0");
        assert_string_equal(k8s_get_str(c, "env.1.name"), "HTTPS_PROXY");
        assert_string_equal(k8s_get_str(c, "env.1.value"), "http://coder-egress:3128");
        assert_string_equal(k8s_get_str(c, "env.2.name"), "https_proxy");
        assert_true(k8s_warned(&e, "EgressRateBps"));
        assert_true(k8s_warned(&e, "NetworkPolicy"));
        export_refused(EXPORT("--allow=10.0.0.1", "--", "/bin/true"), NULL, SBX_ERROR_INVALID_EGRESS, "");
}

static void test_pool(void **state) {
        _cleanup_(k8s_export_done) K8sExport e = {};
        json_object *t, *p, *claim, *np;

        export_ok(EXPORT("--name=pool1", "--pool=3", "--allow=api.example.org", "--", "/bin/true"), NULL, &e);
        assert_null(k8s_find(&e, "Sandbox", NULL));
        t = k8s_find(&e, "SandboxTemplate", "pool1");
        assert_non_null(t);
        assert_string_equal(k8s_get_str(t, "apiVersion"), "extensions.agents.x-k8s.io/v1beta1");
        assert_string_equal(k8s_get_str(t, "spec.envVarsInjectionPolicy"), "Disallowed");
        assert_string_equal(k8s_get_str(t, "spec.networkPolicyManagement"), "Managed");
        /* The controller's shared policy is the same fence as ours. */
        np = k8s_find(&e, "NetworkPolicy", "pool1-worker");
        assert_string_equal(json_object_to_json_string(k8s_get(t, "spec.networkPolicy.egress")),
                            json_object_to_json_string(k8s_get(np, "spec.egress")));
        check_hardened(k8s_get(t, "spec.podTemplate.spec"));
        p = k8s_find(&e, "SandboxWarmPool", "pool1-pool");
        assert_int_equal(json_object_get_int64(k8s_get(p, "spec.replicas")), 3);
        assert_string_equal(k8s_get_str(p, "spec.sandboxTemplateRef.name"), "pool1");
        claim = k8s_find(&e, "SandboxClaim", "pool1-claim");
        assert_string_equal(k8s_get_str(claim, "spec.warmPoolRef.name"), "pool1-pool");
        assert_string_equal(k8s_get_str(claim, "spec.lifecycle.shutdownTime"), "2026-12-01T01:00:00Z");
        assert_int_equal(json_object_get_int64(k8s_get(claim, "spec.lifecycle.ttlSecondsAfterFinished")), 3600);
        assert_true(k8s_warned(&e, "warm pod's start"));
        export_refused(EXPORT("--pool=0", "--", "/bin/true"), NULL, NULL, "--pool");
}

static void test_workspace(void **state) {
        _cleanup_(k8s_export_done) K8sExport e = {};
        json_object *s, *pod;

        export_ok(EXPORT("--workspace", "--disk=128M", "--", "/bin/true"), NULL, &e);
        s = k8s_find(&e, "Sandbox", NULL);
        assert_string_equal(k8s_get_str(s, "spec.volumeClaimTemplates.0.metadata.name"), "home");
        assert_string_equal(k8s_get_str(s, "spec.volumeClaimTemplates.0.spec.resources.requests.storage"), "134217728");
        pod = pod_of(&e);
        /* The claim replaces the emptyDir home. */
        assert_string_equal(k8s_get_str(pod, "volumes.0.name"), "tmp");
        assert_null(k8s_get(pod, "volumes.1"));
        assert_string_equal(k8s_get_str(pod, "containers.0.volumeMounts.1.name"), "home");
        export_refused(EXPORT("--workspace", "--", "/bin/true"), NULL, SBX_ERROR_INVALID_ARGUMENT, "needs --disk");
}

static void test_option_refusals(void **state) {
        export_refused(EXPORT("--name=Bad_Name", "--", "/bin/true"), NULL, SBX_ERROR_INVALID_ARGUMENT, "DNS label");
        export_refused(EXPORT("--namespace=-x", "--", "/bin/true"), NULL, SBX_ERROR_INVALID_ARGUMENT, "Namespace");
        export_refused((char *[]) { "export", "--format=kubernetes", "--", "/bin/true", NULL }, NULL,
                       SBX_ERROR_INVALID_ARGUMENT, "--image");
        export_refused((char *[]) { "export", IMAGE, "--", "/bin/true", NULL }, NULL, NULL, "Missing --format");
        export_refused((char *[]) { "export", "--format=nomad", IMAGE, "--", "/bin/true", NULL }, NULL, NULL,
                       "only 'kubernetes'");
        export_refused(EXPORT("--bogus", "--", "/bin/true"), NULL, NULL, "Unknown option");
        export_refused(EXPORT("--workspace=yes", "--", "/bin/true"), NULL, NULL, "takes no value");
}

static void test_parse_args(void **state) {
        _cleanup_(k8s_export_done) K8sExport e = {};
        json_object *cmd;

        /* Export's options between spec options; a spec option's value that
         * looks like an export option stays its value; after "--" nothing is ours. */
        export_ok((char *[]) { "export", "--setenv", "X=--pool=9", "--format", "kubernetes", "--memory", "512M",
                               "--image", "img:2", "--namespace", "ns1", "--", "/bin/echo", "--pool=5", "--name",
                               NULL }, NULL, &e);
        assert_null(k8s_find(&e, "SandboxWarmPool", NULL));
        assert_string_equal(k8s_get_str(pod_of(&e), "containers.0.image"), "img:2");
        assert_string_equal(k8s_get_str(k8s_find(&e, "Sandbox", NULL), "metadata.namespace"), "ns1");
        cmd = k8s_get(pod_of(&e), "containers.0.command");
        assert_int_equal(json_object_array_length(cmd), 3);
        assert_string_equal(k8s_get_str(cmd, "1"), "--pool=5");
        assert_string_equal(k8s_get_str(cmd, "2"), "--name");
        assert_string_equal(k8s_get_str(pod_of(&e), "containers.0.resources.limits.memory"), "536870912");
}

static void test_yaml_quoting(void **state) {
        _cleanup_(k8s_export_done) K8sExport e = {};
        _cleanup_free_ char *yaml = NULL;
        const char *nasty = "a\"b\\c\nd: e # f\t'g' ---\x01";
        size_t docs = 0;

        export_ok(EXPORT("--", "/bin/sh", "-c", (char *) nasty), NULL, &e);
        assert_int_equal(k8s_export_to_yaml(&e, &yaml), 0);
        assert_int_equal(strncmp(yaml, "---\n", 4), 0);
        /* Each document is JSON (so YAML) on its own; the argument round-trips. */
        for (char *p = yaml; (p = strstr(p, "---\n")); p += 4) {
                char *end = strstr(p + 4, "\n---\n");
                _cleanup_free_ char *doc = end ? strndup(p + 4, (size_t) (end - p - 4)) : strdup(p + 4);
                _cleanup_(k8s_json_putp) json_object *o = json_tokener_parse(doc);

                assert_non_null(o);
                if (streq(k8s_get_str(o, "kind"), "Sandbox"))
                        assert_string_equal(k8s_get_str(o, "spec.podTemplate.spec.containers.0.command.2"), nasty);
                docs++;
        }
        assert_int_equal(docs, json_object_array_length(e.documents));
}

static const char *golden_path;
static bool golden_update;

/* One whole profile, byte for byte: what no single assertion above names. */
static void test_golden(void **state) {
        _cleanup_(k8s_export_done) K8sExport e = {};
        _cleanup_free_ char *yaml = NULL, *want = NULL;
        size_t size = 0;
        char opt[128];

        snprintf(opt, sizeof(opt), "--credential=token:%s", cred_path);
        export_ok(EXPORT("--name=coder", "--namespace=agents", "--class=untrusted", "--origin=llm-generated",
                         "--memory=1G", "--cpu=150", "--disk=512M", "--runtime=2h", "--tasks=128",
                         "--allow=api.example.org", "--allow=*.pkg.example.org:8443", "--setenv=LANG=C.UTF-8",
                         opt, "--pool=2", "--workspace", "--", "/usr/bin/coder", "--serve"),
                  "[Egress]\nFloor = *.example.org\n", &e);
        assert_int_equal(k8s_export_to_yaml(&e, &yaml), 0);
        if (golden_update) {
                _cleanup_fclose_ FILE *f = fopen(golden_path, "we");
                assert_non_null(f);
                assert_true(fputs(yaml, f) >= 0);
                return;
        }
        _cleanup_fclose_ FILE *f = fopen(golden_path, "re");
        assert_non_null(f);
        assert_true(getdelim(&want, &size, 0, f) > 0);
        if (!streq(yaml, want)) {
                fprintf(stderr, "%s", yaml);
                fail_msg("the export differs from %s; if meant, rerun with --update", golden_path);
        }
}

int main(int argc, char *argv[]) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_class_trusted),
                cmocka_unit_test(test_class_standard),
                cmocka_unit_test(test_class_untrusted),
                cmocka_unit_test(test_class_hostile),
                cmocka_unit_test(test_class_default),
                cmocka_unit_test(test_class_wasm_refused),
                cmocka_unit_test(test_class_unknown_refused),
                cmocka_unit_test(test_services_refused),
                cmocka_unit_test(test_unmapped_field_refused),
                cmocka_unit_test(test_idle_action),
                cmocka_unit_test(test_origin_floor),
                cmocka_unit_test(test_limits),
                cmocka_unit_test(test_limit_defaults_and_range),
                cmocka_unit_test(test_credentials),
                cmocka_unit_test(test_environment),
                cmocka_unit_test(test_no_egress),
                cmocka_unit_test(test_egress),
                cmocka_unit_test(test_pool),
                cmocka_unit_test(test_workspace),
                cmocka_unit_test(test_option_refusals),
                cmocka_unit_test(test_parse_args),
                cmocka_unit_test(test_yaml_quoting),
                cmocka_unit_test(test_golden),
        };

        /* test-k8s-export [--update] GOLDEN.yaml */
        golden_update = argc == 3 && streq(argv[1], "--update");
        if (argc != 2 && !golden_update) {
                fprintf(stderr, "Usage: %s [--update] GOLDEN.yaml\n", argv[0]);
                return 2;
        }
        golden_path = argv[argc - 1];
        return cmocka_run_group_tests(tests, setup, teardown);
}
