/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "egress-policy.h"
#include "egress-units.h"
#include "worker-egress.h"
#include "worker-metrics.h"
#include "worker-persist.h"

#define SET_EGRESS_TIMEOUT_MSEC 2000   /* a proxy being started by the connection needs its start */

/* "a b c" for the journal. */
static char *join(char **l) {
        size_t n = 1;
        char *s, *p;

        for (char **i = l; i && *i; i++)
                n += strlen(*i) + 1;
        s = p = malloc(n);
        if (!s)
                return NULL;
        *p = 0;
        for (char **i = l; i && *i; i++)
                p += sprintf(p, "%s%s", p == s ? "" : " ", *i);
        return s;
}

static const char *applied_to_string(WorkerEgressApplied a) {
        return a == WORKER_EGRESS_APPLIED_LIVE ? "live" : a == WORKER_EGRESS_APPLIED_RESTART ? "restart" : "later";
}

static int validate(const Worker *w, const WorkerEgressChange *c, SbxError *error) {
        size_t n = strv_length(c->allow);

        if (!w->egress.service || !w->egress.policy.data || !worker_wants_egress(&w->spec))
                return sbx_error_set(error, -EOPNOTSUPP, SBX_ERROR_NOT_SUPPORTED,
                                     "Worker %s was created without egress (no EgressAllow): it has no proxy to change",
                                     w->id);
        if (w->state != WORKER_RUNNING && w->state != WORKER_SUSPENDED)
                return sbx_error_set(error, -ESRCH, SBX_ERROR_NOT_RUNNING, "Worker %s is %s", w->id,
                                     worker_state_to_string(w->state));
        if (c->has_allow && n == 0)
                return sbx_error_set(error, -EINVAL, SBX_ERROR_INVALID_EGRESS,
                                     "EgressAllow must keep at least one pattern; stop the worker to end its egress");
        if (n > SBX_EGRESS_RULES_MAX)
                return sbx_error_set(error, -E2BIG, SBX_ERROR_INVALID_EGRESS,
                                     "EgressAllow has %zu patterns; at most %d are allowed", n, SBX_EGRESS_RULES_MAX);
        for (size_t i = 0; i < n; i++)
                if (!egress_pattern_is_valid(c->allow[i]))
                        return sbx_error_set(error, -EINVAL, SBX_ERROR_INVALID_EGRESS,
                                             "EgressAllow pattern \"%.64s\" is invalid: use host, *.domain, optionally :port",
                                             c->allow[i]);
        if (c->has_rate && c->rate_bps == 0)
                return sbx_error_set(error, -ERANGE, SBX_ERROR_LIMIT_OUT_OF_RANGE,
                                     "EgressRateBps must be positive");
        return 0;
}

/* The policy W would get with CHANGE, refused when it reaches past the floor. */
static int build_policy(const Worker *w, const WorkerEgressChange *c, char **ret, SbxError *error) {
        _cleanup_egress_policy_ EgressPolicy *p = NULL;
        _cleanup_free_ char *json = NULL;
        WorkerSpec spec = w->spec;   /* borrowed fields: never freed */
        char pattern[EGRESS_HOST_MAX + 16];
        int r;

        if (c->has_allow)
                spec.egress_allow = c->allow;
        if (c->has_rate)
                spec.egress_rate_bps = c->rate_bps;
        if (c->has_mode)
                spec.egress_report_only = c->report_only;
        r = worker_egress_policy_json(&spec, w->owned_by->config, w->id, &json, error);
        if (r < 0)
                return r;
        r = egress_policy_from_json(json, &p);
        if (r < 0)
                return r;
        const EgressPattern *outside = egress_policy_allow_outside_floor(p);
        if (outside) {
                if (egress_pattern_format(outside, pattern, sizeof(pattern)) < 0)
                        snprintf(pattern, sizeof(pattern), "?");
                return sbx_error_set(error, -EPERM, SBX_ERROR_EGRESS_OUTSIDE_FLOOR,
                                     "EgressAllow pattern \"%.64s\" reaches past the operator's Egress:Floor", pattern);
        }
        *ret = TAKE_PTR(json);
        return 0;
}

/* W takes CHANGE: its spec (what a resume and a restart read) and its
 * credential. Undone by swapping back OLD_* on failure. */
static int commit(Worker *w, const WorkerEgressChange *c, char *json, SbxError *error) {
        SbxCredential old_policy = w->egress.policy;
        char **old_allow = w->spec.egress_allow;
        uint64_t old_rate = w->spec.egress_rate_bps;
        bool old_report = w->spec.egress_report_only;
        char **allow = NULL;
        int r;

        if (c->has_allow) {
                allow = strv_copy(c->allow);
                if (!allow)
                        return -ENOMEM;
                w->spec.egress_allow = allow;
        }
        if (c->has_rate)
                w->spec.egress_rate_bps = c->rate_bps;
        if (c->has_mode)
                w->spec.egress_report_only = c->report_only;
        w->egress.policy.data = (uint8_t *) json;
        w->egress.policy.size = strlen(json);
        r = worker_save_state(w);
        if (r < 0) {
                w->egress.policy = old_policy;
                w->spec.egress_allow = old_allow;
                w->spec.egress_rate_bps = old_rate;
                w->spec.egress_report_only = old_report;
                strv_free(allow);
                log_struct(LOG_ERR, "Could not save the worker's state: its egress policy stays",
                           "SANDBOXD_WORKER_ID", w->id, "SANDBOXD_REASON", strerror(-r), NULL);
                return r;
        }
        if (c->has_allow)
                strv_free(old_allow);
        free(old_policy.data);
        return 0;
}

/* The running proxy takes the policy now, or is stopped so that the next
 * connection starts one that loads it. */
static WorkerEgressApplied push(Worker *w) {
        _cleanup_free_ char *req = NULL;
        char reply[64];
        int n, r;

        /* A proxy that does not run loads the new policy when it starts
         * (the credential is the new one already); once its process exists
         * (its cgroup does) it may hold the old one, so it is told. */
        if (w->state != WORKER_RUNNING || !worker_proxy_running(w))
                return WORKER_EGRESS_APPLIED_LATER;
        if (asprintf(&req, "policy\n%s", (const char *) w->egress.policy.data) >= 0) {
                n = worker_egress_ctl_call(w, req, strlen(req), SET_EGRESS_TIMEOUT_MSEC, reply, sizeof(reply));
                r = n < 0 ? n : egress_ctl_parse_status(reply, (size_t) n);
                if (r == 0)
                        return WORKER_EGRESS_APPLIED_LIVE;
                log_struct(LOG_WARNING, "The worker's proxy did not take its new egress policy: stopping it",
                           "SANDBOXD_WORKER_ID", w->id, "SANDBOXD_UNIT", w->egress.service,
                           "SANDBOXD_REASON", strerror(-r), NULL);
        }
        (void) unit_stops_stop(worker_unit_stops(w), w->egress.service, w->id);
        return WORKER_EGRESS_APPLIED_RESTART;
}

int worker_set_egress(Worker *w, uid_t caller, const WorkerEgressChange *change, WorkerEgressApplied *ret_applied,
                      SbxError *error) {
        _cleanup_free_ char *json = NULL, *allow = NULL;
        char uid[16], rate[24];
        int r;

        r = validate(w, change, error);
        if (r < 0)
                return r;
        r = build_policy(w, change, &json, error);
        if (r < 0)
                return r;
        r = commit(w, change, json, error);
        if (r < 0)
                return r;
        json = NULL;   /* the worker's credential now */
        WorkerEgressApplied applied = push(w);

        snprintf(uid, sizeof(uid), "%u", (unsigned) caller);
        snprintf(rate, sizeof(rate), "%" PRIu64, w->spec.egress_rate_bps);
        allow = join(w->spec.egress_allow);
        log_struct(LOG_NOTICE, "Worker egress policy changed",
                   "SANDBOXD_WORKER_ID", w->id, "SANDBOXD_CALLER_UID", uid,
                   "SANDBOXD_EGRESS_ALLOW", allow ?: "", "SANDBOXD_EGRESS_RATE_BPS", rate,
                   "SANDBOXD_EGRESS_MODE", w->spec.egress_report_only ? "report" : "enforce",
                   "SANDBOXD_EGRESS_APPLIED", applied_to_string(applied), NULL);
        if (ret_applied)
                *ret_applied = applied;
        return 0;
}
