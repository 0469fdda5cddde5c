/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "egress-units.h"
#include "errors.h"
#include "gate.h"
#include "k8s-export.h"

#define AGENTS_API "agents.x-k8s.io/v1beta1"
#define EXTENSIONS_API "extensions.agents.x-k8s.io/v1beta1"
#define WORKER_LABEL "sandboxd.io/worker"
#define ROLE_LABEL "sandboxd.io/role"

#define DIV_ROUND_UP(a, b) (((a) + (b) - 1) / (b))

static void json_object_putp(json_object **o) {
        json_object_put(*o);
}

static bool strv_isempty(char * const *l) {
        return !l || !l[0];
}

/* The builder notes an allocation failure once and carries on, so the
 * object code reads as the manifest it writes; build() checks at the end. */
typedef struct Ctx {
        const WorkerSpec *spec;
        const SbxConfig *config;
        const K8sExportOptions *opt;
        bool oom;
        char **warnings;
} Ctx;

static json_object *put(Ctx *x, json_object *o, const char *key, json_object *v) {
        if (!v || !o || json_object_object_add(o, key, v) < 0) {
                json_object_put(v);
                x->oom = true;
                return NULL;
        }
        return v;
}

static json_object *push(Ctx *x, json_object *a, json_object *v) {
        if (!v || !a || json_object_array_add(a, v) < 0) {
                json_object_put(v);
                x->oom = true;
                return NULL;
        }
        return v;
}

static json_object *str(const char *s) {
        return json_object_new_string(s);
}

static json_object *strf(Ctx *x, const char *fmt, ...) _printf_(2, 3);
static json_object *strf(Ctx *x, const char *fmt, ...) {
        _cleanup_free_ char *s = NULL;
        va_list ap;
        int n;

        va_start(ap, fmt);
        n = vasprintf(&s, fmt, ap);
        va_end(ap);
        if (n < 0) {
                s = NULL;
                x->oom = true;
                return NULL;
        }
        return json_object_new_string(s);
}

static json_object *num(int64_t v) {
        return json_object_new_int64(v);
}

static json_object *yes(bool b) {
        return json_object_new_boolean(b);
}

static void warn(Ctx *x, const char *fmt, ...) _printf_(2, 3);
static void warn(Ctx *x, const char *fmt, ...) {
        char *s = NULL;
        size_t n = strv_length(x->warnings);
        char **grown;
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&s, fmt, ap);
        va_end(ap);
        grown = r < 0 ? NULL : realloc(x->warnings, (n + 2) * sizeof(char *));
        if (!grown) {
                if (r >= 0)
                        free(s);
                x->oom = true;
                return;
        }
        grown[n] = s;
        grown[n + 1] = NULL;
        x->warnings = grown;
}

bool k8s_name_is_valid(const char *s) {
        size_t n = s ? strlen(s) : 0;

        /* A DNS-1123 label, short enough for the longest suffix added here
         * ("-egress-gateway") and the controllers' own suffixes. */
        if (n == 0 || n > 40 || s[0] == '-' || s[n - 1] == '-')
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
                        return false;
        return true;
}

const char *k8s_runtime_class(SbxClass c) {
        switch (c) {
        case SBX_CLASS_STANDARD:
        case SBX_CLASS_DEVCONTAINER:
        case SBX_CLASS_UNTRUSTED:
                return "gvisor";
        case SBX_CLASS_HOSTILE:
                return "kata-qemu";
        default:
                return NULL;
        }
}

static const char *runtime_handler(SbxClass c) {
        return c == SBX_CLASS_HOSTILE ? "kata-qemu" : "runsc";
}

static bool has_egress(const WorkerSpec *s) {
        return !strv_isempty(s->egress_allow);
}

static void base64_encode(const uint8_t *in, size_t n, char *out) {
        static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        size_t i, k = 0;

        for (i = 0; i + 2 < n; i += 3) {
                out[k++] = t[in[i] >> 2];
                out[k++] = t[((in[i] & 3) << 4) | (in[i + 1] >> 4)];
                out[k++] = t[((in[i + 1] & 15) << 2) | (in[i + 2] >> 6)];
                out[k++] = t[in[i + 2] & 63];
        }
        if (i < n) {
                out[k++] = t[in[i] >> 2];
                if (i + 1 < n) {
                        out[k++] = t[((in[i] & 3) << 4) | (in[i + 1] >> 4)];
                        out[k++] = t[(in[i + 1] & 15) << 2];
                } else
                        out[k++] = t[(in[i] & 3) << 4];
                while (k % 4)
                        out[k++] = '=';
        }
        out[k] = 0;
}

static json_object *b64(Ctx *x, const uint8_t *data, size_t n) {
        char *buf = malloc((n + 2) / 3 * 4 + 1);
        json_object *o;

        if (!buf) {
                x->oom = true;
                return NULL;
        }
        base64_encode(data, n, buf);
        o = json_object_new_string(buf);
        erase_and_free(buf, (n + 2) / 3 * 4 + 1);
        return o;
}

static json_object *object_new(Ctx *x, const char *api, const char *kind, const char *suffix, const char *role) {
        json_object *o = json_object_new_object(), *meta, *labels;

        put(x, o, "apiVersion", str(api));
        put(x, o, "kind", str(kind));
        meta = put(x, o, "metadata", json_object_new_object());
        put(x, meta, "name", strf(x, "%s%s", x->opt->name, suffix));
        if (x->opt->namespace)
                put(x, meta, "namespace", str(x->opt->namespace));
        labels = put(x, meta, "labels", json_object_new_object());
        put(x, labels, "app.kubernetes.io/managed-by", str("sandboxctl-export"));
        put(x, labels, WORKER_LABEL, str(x->opt->name));
        if (role)
                put(x, labels, ROLE_LABEL, str(role));
        return o;
}

static json_object *selector(Ctx *x, const char *role) {
        json_object *sel = json_object_new_object(), *ml;

        ml = put(x, sel, "matchLabels", json_object_new_object());
        put(x, ml, WORKER_LABEL, str(x->opt->name));
        put(x, ml, ROLE_LABEL, str(role));
        return sel;
}

static json_object *runtime_class(Ctx *x, SbxClass c) {
        json_object *o = json_object_new_object(), *meta, *sched, *ns;
        char label[128];

        snprintf(label, sizeof(label), K8S_RUNTIME_LABEL_PREFIX "%s", runtime_handler(c));
        put(x, o, "apiVersion", str("node.k8s.io/v1"));
        put(x, o, "kind", str("RuntimeClass"));
        meta = put(x, o, "metadata", json_object_new_object());
        put(x, meta, "name", str(k8s_runtime_class(c)));
        put(x, o, "handler", str(runtime_handler(c)));
        sched = put(x, o, "scheduling", json_object_new_object());
        ns = put(x, sched, "nodeSelector", json_object_new_object());
        put(x, ns, label, str("true"));
        return o;
}

/* Environment values are secrets on the host (they reach the worker as a
 * credential, env-cred.h), so here they live in a Secret too and reach the
 * container through secretKeyRef: env, but not readable from the pod spec. */
static json_object *secret(Ctx *x, const char *suffix, bool credentials) {
        json_object *o = object_new(x, "v1", "Secret", suffix, NULL), *data;

        put(x, o, "type", str("Opaque"));
        put(x, o, "immutable", yes(true));
        data = put(x, o, "data", json_object_new_object());
        if (credentials)
                for (size_t i = 0; i < x->spec->n_credentials; i++)
                        put(x, data, x->spec->credentials[i].name,
                            b64(x, x->spec->credentials[i].data, x->spec->credentials[i].size));
        else
                for (char **e = x->spec->environment; e && *e; e++) {
                        const char *eq = strchr(*e, '=');
                        _cleanup_free_ char *key = strndup(*e, (size_t) (eq - *e));

                        if (!key) {
                                x->oom = true;
                                continue;
                        }
                        put(x, data, key, b64(x, (const uint8_t *) eq + 1, strlen(eq + 1)));
                }
        return o;
}

static json_object *egress_policy_secret(Ctx *x, SbxError *error, int *ret) {
        json_object *o = object_new(x, "v1", "Secret", "-egress-policy", "egress"), *data;
        _cleanup_free_ char *policy = NULL;

        *ret = worker_egress_policy_json(x->spec, x->config, x->opt->name, &policy, error);
        if (*ret < 0) {
                json_object_put(o);
                return NULL;
        }
        put(x, o, "type", str("Opaque"));
        data = put(x, o, "stringData", json_object_new_object());
        put(x, data, "policy.json", str(policy));
        return o;
}

static json_object *restricted_security_context(Ctx *x) {
        json_object *sc = json_object_new_object(), *caps, *seccomp;

        put(x, sc, "allowPrivilegeEscalation", yes(false));
        put(x, sc, "privileged", yes(false));
        caps = put(x, sc, "capabilities", json_object_new_object());
        push(x, put(x, caps, "drop", json_object_new_array()), str("ALL"));
        put(x, sc, "readOnlyRootFilesystem", yes(true));
        put(x, sc, "runAsNonRoot", yes(true));
        put(x, sc, "runAsUser", num(K8S_WORKER_UID));
        put(x, sc, "runAsGroup", num(K8S_WORKER_UID));
        put(x, sc, "procMount", str("Default"));
        seccomp = put(x, sc, "seccompProfile", json_object_new_object());
        put(x, seccomp, "type", str("RuntimeDefault"));
        return sc;
}

static json_object *env_value(Ctx *x, const char *name, const char *value) {
        json_object *e = json_object_new_object();

        put(x, e, "name", str(name));
        put(x, e, "value", str(value));
        return e;
}

static json_object *worker_env(Ctx *x) {
        json_object *env = json_object_new_array();

        push(x, env, env_value(x, "HOME", K8S_HOME));
        if (x->spec->n_credentials > 0)
                push(x, env, env_value(x, "CREDENTIALS_DIRECTORY", K8S_CREDENTIALS_DIR));
        if (has_egress(x->spec)) {
                _cleanup_free_ char *url = NULL;

                if (asprintf(&url, "http://%s-egress:%d", x->opt->name, SBX_EGRESS_PORT) < 0) {
                        x->oom = true;
                        return env;
                }
                push(x, env, env_value(x, "HTTPS_PROXY", url));
                push(x, env, env_value(x, "https_proxy", url));
        }
        for (char **a = x->spec->environment; a && *a; a++) {
                const char *eq = strchr(*a, '=');
                json_object *e = push(x, env, json_object_new_object()), *from, *ref;

                put(x, e, "name", json_object_new_string_len(*a, (int) (eq - *a)));
                from = put(x, e, "valueFrom", json_object_new_object());
                ref = put(x, from, "secretKeyRef", json_object_new_object());
                put(x, ref, "name", strf(x, "%s-environment", x->opt->name));
                put(x, ref, "key", json_object_new_string_len(*a, (int) (eq - *a)));
        }
        return env;
}

static json_object *mount(Ctx *x, const char *name, const char *path, bool ro) {
        json_object *m = json_object_new_object();

        put(x, m, "name", str(name));
        put(x, m, "mountPath", str(path));
        if (ro)
                put(x, m, "readOnly", yes(true));
        return m;
}

static uint64_t tmp_size(const WorkerSpec *s) {
        /* The gVisor bundle's /tmp: a quarter of MemoryMax, at most 64 MiB
         * (oci-bundle.c), paid for in memory as a memory-backed emptyDir is. */
        return MIN((uint64_t) 64 << 20, s->limits.memory_max / 4);
}

static json_object *worker_container(Ctx *x) {
        const WorkerSpec *s = x->spec;
        json_object *c = json_object_new_object(), *cmd, *res, *lim, *req, *mounts;

        put(x, c, "name", str("worker"));
        put(x, c, "image", str(x->opt->image));
        put(x, c, "imagePullPolicy", str("IfNotPresent"));
        cmd = put(x, c, "command", json_object_new_array());
        for (char **a = s->argv; a && *a; a++)
                push(x, cmd, str(*a));
        put(x, c, "workingDir", str(K8S_HOME));
        put(x, c, "env", worker_env(x));
        put(x, c, "securityContext", restricted_security_context(x));
        res = put(x, c, "resources", json_object_new_object());
        /* Requests equal to limits: the Guaranteed QoS class, so the pod is
         * the last to be evicted and its memory is not overcommitted. */
        lim = put(x, res, "limits", json_object_new_object());
        req = put(x, res, "requests", json_object_new_object());
        put(x, lim, "memory", strf(x, "%" PRIu64, s->limits.memory_max));
        put(x, req, "memory", strf(x, "%" PRIu64, s->limits.memory_max));
        put(x, lim, "cpu", strf(x, "%" PRIu64 "m", (uint64_t) s->limits.cpu_quota_percent * 10));
        put(x, req, "cpu", strf(x, "%" PRIu64 "m", (uint64_t) s->limits.cpu_quota_percent * 10));
        if (s->disk_max > 0) {
                put(x, lim, "ephemeral-storage", strf(x, "%" PRIu64, s->disk_max));
                put(x, req, "ephemeral-storage", strf(x, "%" PRIu64, s->disk_max));
        }
        mounts = put(x, c, "volumeMounts", json_object_new_array());
        push(x, mounts, mount(x, "tmp", "/tmp", false));
        push(x, mounts, mount(x, "home", K8S_HOME, false));
        if (s->n_credentials > 0)
                push(x, mounts, mount(x, "credentials", K8S_CREDENTIALS_DIR, true));
        return c;
}

/* A volume of the Secret named for the worker and SUFFIX, its files of MODE. */
static json_object *secret_volume(Ctx *x, const char *volume, const char *suffix, int mode) {
        json_object *v = json_object_new_object(), *sec;

        put(x, v, "name", str(volume));
        sec = put(x, v, "secret", json_object_new_object());
        put(x, sec, "secretName", strf(x, "%s%s", x->opt->name, suffix));
        put(x, sec, "defaultMode", num(mode));
        return v;
}

static json_object *worker_volumes(Ctx *x) {
        const WorkerSpec *s = x->spec;
        json_object *vols = json_object_new_array(), *v, *ed;

        v = push(x, vols, json_object_new_object());
        put(x, v, "name", str("tmp"));
        ed = put(x, v, "emptyDir", json_object_new_object());
        put(x, ed, "medium", str("Memory"));
        put(x, ed, "sizeLimit", strf(x, "%" PRIu64, tmp_size(s)));
        /* With --workspace the home is the claim Agent Sandbox creates from
         * volumeClaimTemplates, mounted under the template's name. */
        if (!x->opt->workspace) {
                v = push(x, vols, json_object_new_object());
                put(x, v, "name", str("home"));
                ed = put(x, v, "emptyDir", json_object_new_object());
                /* On the host every class's home is a disk image of DiskMax
                 * (its default included): a disk-backed emptyDir of that size. */
                if (s->disk_max > 0)
                        put(x, ed, "sizeLimit", strf(x, "%" PRIu64, s->disk_max));
        }
        if (s->n_credentials > 0)
                push(x, vols, secret_volume(x, "credentials", "-credentials", 0400));
        return vols;
}

static json_object *pod_security_context(Ctx *x) {
        json_object *sc = json_object_new_object(), *seccomp;

        put(x, sc, "runAsNonRoot", yes(true));
        put(x, sc, "runAsUser", num(K8S_WORKER_UID));
        put(x, sc, "runAsGroup", num(K8S_WORKER_UID));
        put(x, sc, "fsGroup", num(K8S_WORKER_UID));
        seccomp = put(x, sc, "seccompProfile", json_object_new_object());
        put(x, seccomp, "type", str("RuntimeDefault"));
        return sc;
}

static json_object *worker_pod_spec(Ctx *x) {
        const WorkerSpec *s = x->spec;
        json_object *p = json_object_new_object(), *cs;
        const char *rc = k8s_runtime_class(s->class);

        if (rc)
                put(x, p, "runtimeClassName", str(rc));
        put(x, p, "restartPolicy", str("Never"));
        put(x, p, "automountServiceAccountToken", yes(false));
        put(x, p, "enableServiceLinks", yes(false));
        put(x, p, "hostNetwork", yes(false));
        put(x, p, "hostPID", yes(false));
        put(x, p, "hostIPC", yes(false));
        /* On the shared kernel the host's DynamicUser keeps workers apart by
         * UID; a user namespace per pod is the cluster's nearest equivalent. */
        if (s->class == SBX_CLASS_TRUSTED)
                put(x, p, "hostUsers", yes(false));
        put(x, p, "activeDeadlineSeconds", num((int64_t) DIV_ROUND_UP(s->limits.runtime_max_usec, USEC_PER_SEC)));
        put(x, p, "terminationGracePeriodSeconds", num(5));
        put(x, p, "securityContext", pod_security_context(x));
        cs = put(x, p, "containers", json_object_new_array());
        push(x, cs, worker_container(x));
        put(x, p, "volumes", worker_volumes(x));
        return p;
}

static json_object *pod_template(Ctx *x) {
        json_object *t = json_object_new_object(), *meta, *labels;

        meta = put(x, t, "metadata", json_object_new_object());
        labels = put(x, meta, "labels", json_object_new_object());
        put(x, labels, WORKER_LABEL, str(x->opt->name));
        put(x, labels, ROLE_LABEL, str("worker"));
        put(x, t, "spec", worker_pod_spec(x));
        return t;
}

static json_object *volume_claim_templates(Ctx *x) {
        json_object *a = json_object_new_array(), *v, *meta, *spec, *res, *req;

        v = push(x, a, json_object_new_object());
        meta = put(x, v, "metadata", json_object_new_object());
        put(x, meta, "name", str("home"));
        spec = put(x, v, "spec", json_object_new_object());
        push(x, put(x, spec, "accessModes", json_object_new_array()), str("ReadWriteOnce"));
        res = put(x, spec, "resources", json_object_new_object());
        req = put(x, res, "requests", json_object_new_object());
        put(x, req, "storage", strf(x, "%" PRIu64, x->spec->disk_max));
        return a;
}

/* A NetworkPolicy's port. */
static json_object *policy_port(Ctx *x, const char *protocol, long port) {
        json_object *o = json_object_new_object();

        put(x, o, "protocol", str(protocol));
        put(x, o, "port", num(port));
        return o;
}

/* A peer of every address of CIDR's family but EXCEPT's ranges. */
static json_object *ip_block_peer(Ctx *x, const char *cidr, const char * const *except, size_t n_except) {
        json_object *peer = json_object_new_object(), *ipb, *l;

        ipb = put(x, peer, "ipBlock", json_object_new_object());
        put(x, ipb, "cidr", str(cidr));
        l = put(x, ipb, "except", json_object_new_array());
        for (size_t i = 0; i < n_except; i++)
                push(x, l, str(except[i]));
        return peer;
}

/* The one way between a worker and its gateway, as either end's rule: to
 * or from (DIRECTION) the pods of ROLE, on the proxy's port. */
static json_object *proxy_port_rule(Ctx *x, const char *direction, const char *role) {
        json_object *rule = json_object_new_object(), *peers, *peer, *ports;

        peers = put(x, rule, direction, json_object_new_array());
        peer = push(x, peers, json_object_new_object());
        put(x, peer, "podSelector", selector(x, role));
        ports = put(x, rule, "ports", json_object_new_array());
        push(x, ports, policy_port(x, "TCP", SBX_EGRESS_PORT));
        return rule;
}

/* The worker's fence: no ingress, and egress only to its proxy's port. */
static json_object *worker_fence_rules(Ctx *x, json_object *np) {
        json_object *egress;

        put(x, np, "ingress", json_object_new_array());
        egress = put(x, np, "egress", json_object_new_array());
        if (has_egress(x->spec))
                push(x, egress, proxy_port_rule(x, "to", "egress"));
        return np;
}

/* A NetworkPolicy of both directions on the pods of ROLE; *ret_spec is its spec. */
static json_object *network_policy(Ctx *x, const char *suffix, const char *label_role, const char *role,
                                   json_object **ret_spec) {
        json_object *o = object_new(x, "networking.k8s.io/v1", "NetworkPolicy", suffix, label_role), *types;

        *ret_spec = put(x, o, "spec", json_object_new_object());
        put(x, *ret_spec, "podSelector", selector(x, role));
        types = put(x, *ret_spec, "policyTypes", json_object_new_array());
        push(x, types, str("Ingress"));
        push(x, types, str("Egress"));
        return o;
}

static json_object *worker_network_policy(Ctx *x) {
        json_object *spec, *o = network_policy(x, "-worker", NULL, "worker", &spec);

        worker_fence_rules(x, spec);
        return o;
}

/* The ports the allow-list can reach: a pattern's :port, else 443 (the
 * proxy's rule), so the gateway's own fence is no wider than its policy. */
static json_object *allowed_ports(Ctx *x) {
        json_object *ports = json_object_new_array();
        long seen[SBX_EGRESS_RULES_MAX + 1];
        size_t n = 0;

        for (char **a = x->spec->egress_allow; a && *a; a++) {
                const char *colon = strrchr(*a, ':');
                long p = colon ? strtol(colon + 1, NULL, 10) : 443;
                bool dup = false;

                for (size_t i = 0; i < n; i++)
                        dup = dup || seen[i] == p;
                if (dup || n >= ELEMENTSOF(seen))
                        continue;
                seen[n++] = p;
                push(x, ports, policy_port(x, "TCP", p));
        }
        return ports;
}

static json_object *gateway_network_policy(Ctx *x) {
        static const char * const private_ranges[] = {
                "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
                "172.16.0.0/12", "192.168.0.0/16",
        };
        static const char * const private_ranges6[] = { "::1/128", "fc00::/7", "fe80::/10" };
        json_object *spec, *o = network_policy(x, "-egress-gateway", "egress", "egress", &spec);
        json_object *ingress, *egress, *rule, *peers, *peer, *ports, *ns, *ml;

        ingress = put(x, spec, "ingress", json_object_new_array());
        push(x, ingress, proxy_port_rule(x, "from", "worker"));

        egress = put(x, spec, "egress", json_object_new_array());
        /* The host's second wall behind the proxy's own address checks
         * (IPAddressDeny on the proxy's unit): no private destinations. */
        rule = push(x, egress, json_object_new_object());
        peers = put(x, rule, "to", json_object_new_array());
        push(x, peers, ip_block_peer(x, "0.0.0.0/0", private_ranges, ELEMENTSOF(private_ranges)));
        push(x, peers, ip_block_peer(x, "::/0", private_ranges6, ELEMENTSOF(private_ranges6)));
        put(x, rule, "ports", allowed_ports(x));
        /* The cluster's resolver, which sits in a private range. */
        rule = push(x, egress, json_object_new_object());
        peers = put(x, rule, "to", json_object_new_array());
        peer = push(x, peers, json_object_new_object());
        ns = put(x, peer, "namespaceSelector", json_object_new_object());
        ml = put(x, ns, "matchLabels", json_object_new_object());
        put(x, ml, "kubernetes.io/metadata.name", str("kube-system"));
        ns = put(x, peer, "podSelector", json_object_new_object());
        ml = put(x, ns, "matchLabels", json_object_new_object());
        put(x, ml, "k8s-app", str("kube-dns"));
        ports = put(x, rule, "ports", json_object_new_array());
        push(x, ports, policy_port(x, "UDP", 53));
        push(x, ports, policy_port(x, "TCP", 53));
        return o;
}

static json_object *gateway_deployment(Ctx *x) {
        json_object *o = object_new(x, "apps/v1", "Deployment", "-egress", "egress");
        json_object *spec, *tmpl, *meta, *labels, *pod, *cs, *c, *args, *ports, *port, *res, *lim, *vols, *mounts;

        spec = put(x, o, "spec", json_object_new_object());
        put(x, spec, "replicas", num(1));
        put(x, spec, "selector", selector(x, "egress"));
        tmpl = put(x, spec, "template", json_object_new_object());
        meta = put(x, tmpl, "metadata", json_object_new_object());
        labels = put(x, meta, "labels", json_object_new_object());
        put(x, labels, WORKER_LABEL, str(x->opt->name));
        put(x, labels, ROLE_LABEL, str("egress"));
        pod = put(x, tmpl, "spec", json_object_new_object());
        put(x, pod, "automountServiceAccountToken", yes(false));
        put(x, pod, "enableServiceLinks", yes(false));
        put(x, pod, "securityContext", pod_security_context(x));
        cs = put(x, pod, "containers", json_object_new_array());
        c = push(x, cs, json_object_new_object());
        put(x, c, "name", str("sandbox-egress"));
        put(x, c, "image", str(x->opt->egress_image));
        args = put(x, c, "args", json_object_new_array());
        push(x, args, strf(x, "--listen=0.0.0.0:%d", SBX_EGRESS_PORT));
        push(x, args, str("--policy=" K8S_EGRESS_POLICY_DIR "/policy.json"));
        ports = put(x, c, "ports", json_object_new_array());
        port = push(x, ports, json_object_new_object());
        put(x, port, "name", str("connect"));
        put(x, port, "containerPort", num(SBX_EGRESS_PORT));
        put(x, port, "protocol", str("TCP"));
        put(x, c, "securityContext", restricted_security_context(x));
        res = put(x, c, "resources", json_object_new_object());
        lim = put(x, res, "limits", json_object_new_object());
        put(x, lim, "memory", str("64Mi"));
        put(x, lim, "cpu", str("500m"));
        mounts = put(x, c, "volumeMounts", json_object_new_array());
        push(x, mounts, mount(x, "policy", K8S_EGRESS_POLICY_DIR, true));
        vols = put(x, pod, "volumes", json_object_new_array());
        push(x, vols, secret_volume(x, "policy", "-egress-policy", 0444));
        return o;
}

static json_object *gateway_service(Ctx *x) {
        json_object *o = object_new(x, "v1", "Service", "-egress", "egress"), *spec, *sel, *ports, *port;

        spec = put(x, o, "spec", json_object_new_object());
        put(x, spec, "type", str("ClusterIP"));
        sel = put(x, spec, "selector", json_object_new_object());
        put(x, sel, WORKER_LABEL, str(x->opt->name));
        put(x, sel, ROLE_LABEL, str("egress"));
        ports = put(x, spec, "ports", json_object_new_array());
        port = push(x, ports, json_object_new_object());
        put(x, port, "name", str("connect"));
        put(x, port, "port", num(SBX_EGRESS_PORT));
        put(x, port, "targetPort", num(SBX_EGRESS_PORT));
        put(x, port, "protocol", str("TCP"));
        return o;
}

static json_object *rfc3339(Ctx *x, uint64_t usec) {
        time_t t = (time_t) (usec / USEC_PER_SEC);
        struct tm tm;
        char buf[32];

        if (!gmtime_r(&t, &tm) || strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm) == 0) {
                x->oom = true;
                return NULL;
        }
        return str(buf);
}

static json_object *sandbox(Ctx *x) {
        json_object *o = object_new(x, AGENTS_API, "Sandbox", "", NULL), *spec;

        spec = put(x, o, "spec", json_object_new_object());
        put(x, spec, "podTemplate", pod_template(x));
        if (x->opt->workspace)
                put(x, spec, "volumeClaimTemplates", volume_claim_templates(x));
        /* RuntimeMax as a wall-clock end, so the object goes with its pod. */
        put(x, spec, "shutdownTime", rfc3339(x, x->opt->now_usec + x->spec->limits.runtime_max_usec));
        put(x, spec, "shutdownPolicy", str("Delete"));
        return o;
}

static json_object *sandbox_template(Ctx *x) {
        json_object *o = object_new(x, EXTENSIONS_API, "SandboxTemplate", "", NULL), *spec;

        spec = put(x, o, "spec", json_object_new_object());
        put(x, spec, "podTemplate", pod_template(x));
        if (x->opt->workspace) {
                put(x, spec, "volumeClaimTemplates", volume_claim_templates(x));
                put(x, spec, "volumeClaimTemplatesPolicy", str("Disallowed"));
        }
        /* The controller's shared policy is added to ours, and policies only
         * ever widen: it must be the same fence, not its default. */
        put(x, spec, "networkPolicyManagement", str("Managed"));
        put(x, spec, "networkPolicy", worker_fence_rules(x, json_object_new_object()));
        /* Claims must not add environment: the host takes it from the spec only. */
        put(x, spec, "envVarsInjectionPolicy", str("Disallowed"));
        return o;
}

static json_object *warm_pool(Ctx *x) {
        json_object *o = object_new(x, EXTENSIONS_API, "SandboxWarmPool", "-pool", NULL), *spec, *ref;

        spec = put(x, o, "spec", json_object_new_object());
        put(x, spec, "replicas", num(x->opt->pool));
        ref = put(x, spec, "sandboxTemplateRef", json_object_new_object());
        put(x, ref, "name", str(x->opt->name));
        return o;
}

static json_object *sandbox_claim(Ctx *x) {
        json_object *o = object_new(x, EXTENSIONS_API, "SandboxClaim", "-claim", NULL), *spec, *ref, *life;

        spec = put(x, o, "spec", json_object_new_object());
        ref = put(x, spec, "warmPoolRef", json_object_new_object());
        put(x, ref, "name", strf(x, "%s-pool", x->opt->name));
        life = put(x, spec, "lifecycle", json_object_new_object());
        put(x, life, "shutdownTime", rfc3339(x, x->opt->now_usec + x->spec->limits.runtime_max_usec));
        put(x, life, "shutdownPolicy", str("Delete"));
        /* As long as the host remembers an ended worker (ListWorkersEx). */
        put(x, life, "ttlSecondsAfterFinished",
            num((int64_t) MIN(x->config->ended_workers_max_age_usec / USEC_PER_SEC, (uint64_t) INT32_MAX)));
        return o;
}

static void note_weakenings(Ctx *x) {
        const WorkerSpec *s = x->spec;

        warn(x, "per-worker UID: every pod runs as the fixed UID %d; the host gives each worker its own "
             "DynamicUser UID%s", K8S_WORKER_UID,
             s->class == SBX_CLASS_TRUSTED ? " (hostUsers: false maps it into a per-pod user namespace, "
                                             "which needs Kubernetes 1.33 or the UserNamespacesSupport gate)" : "");
        warn(x, "TasksMax=%" PRIu64 ": a pod has no pids field; set the kubelet's podPidsLimit on the nodes "
             "to at most this", s->limits.tasks_max);
        warn(x, "IdleTimeoutUSec=%" PRIu64 "s: the cluster cannot see a worker's idleness; only "
             "activeDeadlineSeconds (RuntimeMaxUSec) and shutdownTime end it", s->limits.idle_timeout_usec / USEC_PER_SEC);
        if (s->class == SBX_CLASS_TRUSTED)
                warn(x, "class trusted: the pod runs on the node's default runtime with seccomp RuntimeDefault, "
                     "wider than the host's SystemCallFilter allow-list and without ProtectSystem/ProtectProc");
        if (has_egress(s))
                warn(x, "egress: the fence is a NetworkPolicy; it holds only where the cluster's network plugin "
                     "enforces NetworkPolicy, and only the gateway's policy checks host names and SNI");
        if (s->egress_rate_bps > 0)
                warn(x, "EgressRateBps: enforced by the gateway for the whole profile, not per worker");
        if (x->opt->pool > 0)
                warn(x, "pool: activeDeadlineSeconds counts from a warm pod's start, not from its claim");
}

/* The spec fields this export maps to a manifest. Any other is refused by
 * name, so a field added to the spec is refused here until it is mapped,
 * rather than dropped from the manifest (and a wall with it). */
#define K8S_EXPORTED_FIELDS                                                                                    \
        (SPEC_HAS_CLASS | SPEC_HAS_MEMORY_MAX | SPEC_HAS_TASKS_MAX | SPEC_HAS_CPU_QUOTA | SPEC_HAS_RUNTIME_MAX | \
         SPEC_HAS_IDLE_TIMEOUT | SPEC_HAS_DISK_MAX | SPEC_HAS_EGRESS_RATE | SPEC_HAS_EGRESS_MODE | SPEC_HAS_ARGV |  \
         SPEC_HAS_ENVIRONMENT | SPEC_HAS_CREDENTIALS | SPEC_HAS_EGRESS_ALLOW | SPEC_HAS_ORIGIN)

static const struct {
        unsigned field;
        const char *error;
        const char *why;
} unexported_fields[] = {
        /* The secrets would have to live in the cluster's proxy, which has
         * no broker. */
        { SPEC_HAS_SERVICES, SBX_ERROR_ISOLATION_UNAVAILABLE,
          "Services (the credential broker) have no Kubernetes export: leave them out" },
        /* Agent Sandbox has no checkpoint of a pod: dropping it would turn
         * "sleeps when idle" into "dies when idle" without saying so. */
        { SPEC_HAS_IDLE_ACTION, SBX_ERROR_NOT_SUPPORTED, "--idle-action suspend has no Kubernetes export: leave it out" },
        /* A host's workspace image is no volume a cluster can mount. */
        { SPEC_HAS_WORKSPACE, SBX_ERROR_NOT_SUPPORTED,
          "A host's Workspace has no Kubernetes export: leave it out (export's --workspace asks for a volume claim)" },
};

static int check_exported_fields(const WorkerSpec *s, SbxError *error) {
        unsigned extra = s->set & ~(unsigned) K8S_EXPORTED_FIELDS;

        /* IdleAction=stop is what an idle timeout does anyway. */
        if (!s->idle_suspend)
                extra &= ~(unsigned) SPEC_HAS_IDLE_ACTION;
        if (extra == 0)
                return 0;
        for (size_t i = 0; i < ELEMENTSOF(unexported_fields); i++)
                if (extra & unexported_fields[i].field)
                        return sbx_error_set(error, -EOPNOTSUPP, unexported_fields[i].error, "%s",
                                             unexported_fields[i].why);
        return sbx_error_set(error, -EOPNOTSUPP, SBX_ERROR_ISOLATION_UNAVAILABLE,
                             "The spec sets a field (0x%x) that has no Kubernetes export", extra);
}

int k8s_export_prepare(WorkerSpec *s, const SbxConfig *c, SbxError *error) {
        int r;

        assert(s);
        assert(c);
        r = check_exported_fields(s, error);
        if (r < 0)
                return r;
        worker_spec_apply_defaults(s, c);
        r = worker_spec_validate(s, c, error);
        if (r < 0)
                return r;
        if ((s->set & SPEC_HAS_CLASS) && s->class != s->requested_class)
                return sbx_error_set(error, -EPERM, SBX_ERROR_UNKNOWN_CLASS,
                                     "Origin \"%.64s\" is held to class %s or above: class %s cannot be exported "
                                     "for it",
                                     s->origin ?: SBX_ORIGIN_DEFAULT, sbx_class_to_string(s->class),
                                     sbx_class_to_string(s->requested_class));
        return 0;
}

static int check_options(const WorkerSpec *s, const K8sExportOptions *o, SbxError *error) {
        if (!k8s_name_is_valid(o->name))
                return sbx_error_set(error, -EINVAL, SBX_ERROR_INVALID_ARGUMENT,
                                     "Name \"%.64s\" is not a DNS label of at most 40 characters ([a-z0-9-])",
                                     o->name ?: "");
        if (o->namespace && !k8s_name_is_valid(o->namespace))
                return sbx_error_set(error, -EINVAL, SBX_ERROR_INVALID_ARGUMENT,
                                     "Namespace \"%.64s\" is not a DNS label of at most 40 characters ([a-z0-9-])",
                                     o->namespace);
        if (isempty(o->image))
                return sbx_error_set(error, -EINVAL, SBX_ERROR_INVALID_ARGUMENT,
                                     "A pod needs an image: give --image");
        if (has_egress(s) && isempty(o->egress_image))
                return sbx_error_set(error, -EINVAL, SBX_ERROR_INVALID_ARGUMENT,
                                     "EgressAllow needs the proxy's image: give --egress-image");
        if (o->pool > INT32_MAX)
                return sbx_error_set(error, -EINVAL, SBX_ERROR_INVALID_ARGUMENT, "--pool is too large");
        if (o->workspace && !(s->set & SPEC_HAS_DISK_MAX))
                return sbx_error_set(error, -EINVAL, SBX_ERROR_INVALID_ARGUMENT,
                                     "--workspace needs --disk: the claim's size is DiskMax");
        if (s->class == SBX_CLASS_WASM)
                return sbx_error_set(error, -EOPNOTSUPP, SBX_ERROR_ISOLATION_UNAVAILABLE,
                                     "Class wasm has no Kubernetes export: a pod runs a container image, "
                                     "not a wasm module under sandboxd's runtime");
        if (s->class < 0 || s->class >= _SBX_CLASS_MAX)
                return sbx_error_set(error, -EINVAL, SBX_ERROR_UNKNOWN_CLASS, "Unknown isolation class");
        return 0;
}

int k8s_export_build(const WorkerSpec *s, const SbxConfig *c, const K8sExportOptions *o, K8sExport *ret,
                     SbxError *error) {
        _cleanup_(json_object_putp) json_object *docs = NULL;
        Ctx x = { .spec = s, .config = c, .opt = o };
        int r;

        assert(s);
        assert(c);
        assert(o);
        assert(ret);
        r = check_options(s, o, error);
        if (r < 0)
                return r;

        docs = json_object_new_array();
        if (k8s_runtime_class(s->class))
                push(&x, docs, runtime_class(&x, s->class));
        if (s->n_credentials > 0)
                push(&x, docs, secret(&x, "-credentials", true));
        if (!strv_isempty(s->environment))
                push(&x, docs, secret(&x, "-environment", false));
        if (has_egress(s)) {
                json_object *policy = egress_policy_secret(&x, error, &r);
                if (r < 0) {
                        strv_free(x.warnings);
                        return r;
                }
                push(&x, docs, policy);
                push(&x, docs, gateway_network_policy(&x));
                push(&x, docs, gateway_deployment(&x));
                push(&x, docs, gateway_service(&x));
        }
        push(&x, docs, worker_network_policy(&x));
        if (o->pool > 0) {
                push(&x, docs, sandbox_template(&x));
                push(&x, docs, warm_pool(&x));
                push(&x, docs, sandbox_claim(&x));
        } else
                push(&x, docs, sandbox(&x));
        note_weakenings(&x);
        if (x.oom) {
                strv_free(x.warnings);
                return sbx_error_set(error, -ENOMEM, NULL, "Out of memory");
        }
        *ret = (K8sExport) { .documents = TAKE_PTR(docs), .warnings = x.warnings };
        return 0;
}

void k8s_export_done(K8sExport *e) {
        if (!e)
                return;
        json_object_put(e->documents);
        strv_free(e->warnings);
        *e = (K8sExport) {};
}

int k8s_export_to_yaml(const K8sExport *e, char **ret) {
        _cleanup_free_ char *out = NULL;
        size_t n = json_object_array_length(e->documents), len = 0;

        for (size_t i = 0; i < n; i++) {
                const char *doc = json_object_to_json_string_ext(json_object_array_get_idx(e->documents, i),
                                                                 JSON_C_TO_STRING_PRETTY |
                                                                 JSON_C_TO_STRING_NOSLASHESCAPE);
                size_t dl = doc ? strlen(doc) : 0;
                char *grown;

                if (!doc)
                        return -ENOMEM;
                grown = realloc(out, len + dl + 6);
                if (!grown)
                        return -ENOMEM;
                out = grown;
                len += (size_t) sprintf(out + len, "---\n%s\n", doc);
        }
        if (!out && !(out = strdup("")))
                return -ENOMEM;
        *ret = TAKE_PTR(out);
        return 0;
}
