/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "bus-manager.h"
#include "bus-polkit.h"
#include "errors.h"
#include "manager.h"

#define POLKIT_DEST "org.freedesktop.PolicyKit1"
#define POLKIT_PATH "/org/freedesktop/PolicyKit1/Authority"
#define POLKIT_IFACE "org.freedesktop.PolicyKit1.Authority"
#define POLKIT_FLAG_ALLOW_USER_INTERACTION 1u
/* A check without a password prompt is polkit reading its rules: sd-bus's
 * default call timeout. One with a prompt waits for a person, up to
 * Bus:InteractiveAuthorizationTimeoutSec; either way the call's slot (and
 * the caller's share of the caps) is given back when it runs out. */
#define POLKIT_TIMEOUT_USEC (25 * USEC_PER_SEC)
/* Refusals past a cap are logged at most once per interval: a flood of them
 * must not become a flood of journal entries. */
#define POLKIT_CAP_LOG_INTERVAL_USEC (10 * USEC_PER_SEC)

/* One pending or answered CheckAuthorization for one method call. It lives
 * until the call has been dispatched a second time with the answer. */
struct PolkitQuery {
        Manager *manager;
        PolkitQuery *next;
        sd_bus_message *request;
        SbxAction action;
        uid_t caller;
        char worker_id[WORKER_ID_LEN + 1];
        sd_bus_slot *call;
        sd_bus_track *track;            /* notices the caller leaving while polkit decides */
        bool counted;                   /* holds one unit of m->bus_state->polkit_quota for CALLER */
        uint32_t flags;                 /* CheckAuthorization's */
        /* The query whose CheckAuthorization answers this one too: the same
         * sender asked the same, while polkit was still deciding. */
        PolkitQuery *leader;
        char cancel_id[64];             /* CancelCheckAuthorization's handle, when interactive */
        sd_event_source *defer;
        bool done;
        bool allowed;
        sd_bus_error error;
};

int bus_caller_uid(sd_bus_message *msg, uid_t *ret) {
        _cleanup_(sd_bus_creds_unrefp) sd_bus_creds *creds = NULL;
        int r;

        r = sd_bus_query_sender_creds(msg, SD_BUS_CREDS_EUID, &creds);
        if (r < 0)
                return r;
        if (sd_bus_creds_get_augmented_mask(creds) & SD_BUS_CREDS_EUID)
                return -EPERM;
        return sd_bus_creds_get_euid(creds, ret);
}

static void log_decision(int prio, const char *what, uid_t caller, SbxAction action, const char *worker_id,
                         const char *result) {
        char uid[16], msg[160];

        snprintf(uid, sizeof(uid), "%u", (unsigned) caller);
        snprintf(msg, sizeof(msg), "%s: %s for UID %s: %s", what, sbx_action_to_string(action), uid, result);
        log_struct(prio, msg, "SANDBOXD_CALLER_UID", uid, "SANDBOXD_ACTION", sbx_action_to_string(action),
                   "SANDBOXD_AUTHZ_RESULT", result, "SANDBOXD_WORKER_ID", worker_id ?: "", NULL);
}

static int set_denied(sd_bus_error *ret_error, SbxAction action) {
        return sd_bus_error_setf(ret_error, SD_BUS_ERROR_ACCESS_DENIED,
                                 "Access denied: this needs the polkit action %s", sbx_action_to_string(action));
}

static PolkitQuery *polkit_query_free(PolkitQuery *q) {
        if (!q)
                return NULL;
        for (PolkitQuery **p = &q->manager->bus_state->polkit_queries; *p; p = &(*p)->next)
                if (*p == q) {
                        *p = q->next;
                        break;
                }
        if (q->counted)
                caller_quota_release(&q->manager->bus_state->polkit_quota, q->caller);
        if (q->call) {
                /* Its followers still wait for the answer: the first one
                 * takes the call over, the others follow that one. */
                PolkitQuery *heir = NULL;
                for (PolkitQuery *f = q->manager->bus_state->polkit_queries; f; f = f->next) {
                        if (f->leader != q)
                                continue;
                        f->leader = heir;
                        if (!heir)
                                heir = f;
                }
                if (heir) {
                        sd_bus_slot_set_userdata(q->call, heir);
                        heir->call = TAKE_PTR(q->call);
                        snprintf(heir->cancel_id, sizeof(heir->cancel_id), "%s", q->cancel_id);
                }
        }
        sd_bus_slot_unref(q->call);
        sd_bus_track_unref(q->track);
        sd_event_source_disable_unref(q->defer);
        /* Answers kept for this call's next dispatch (on_polkit_defer())
         * that no pending check of it will bring now (a caller gone, a
         * failed dispatch): they go on their own. */
        {
                bool pending = false;
                for (PolkitQuery *o = q->manager->bus_state->polkit_queries; o; o = o->next)
                        if (o->request == q->request && !o->done)
                                pending = true;
                for (PolkitQuery *o = q->manager->bus_state->polkit_queries; o && !pending; o = o->next)
                        if (o->request == q->request && o->done && o->defer)
                                (void) sd_event_source_set_enabled(o->defer, SD_EVENT_ONESHOT);
        }
        sd_bus_message_unref(q->request);
        sd_bus_error_free(&q->error);
        free(q);
        return NULL;
}

void bus_polkit_queries_free(Manager *m) {
        while (m->bus_state->polkit_queries)
                polkit_query_free(m->bus_state->polkit_queries);
}

static PolkitQuery *polkit_query_find(Manager *m, sd_bus_message *msg, SbxAction action) {
        for (PolkitQuery *q = m->bus_state->polkit_queries; q; q = q->next)
                if (q->request == msg && q->action == action)
                        return q;
        return NULL;
}

static PolkitQuery *polkit_query_find_follower(PolkitQuery *leader) {
        for (PolkitQuery *q = leader->manager->bus_state->polkit_queries; q; q = q->next)
                if (q->leader == leader)
                        return q;
        return NULL;
}

/* A check still waiting for polkit that asks exactly what MSG's would: the
 * same subject (sender), action, worker and flags. */
static PolkitQuery *polkit_query_find_pending(Manager *m, const char *sender, SbxAction action,
                                              const char *worker_id, uint32_t flags) {
        for (PolkitQuery *q = m->bus_state->polkit_queries; q; q = q->next)
                if (q->call && !q->done && q->action == action && q->flags == flags &&
                    streq(q->worker_id, worker_id ?: "") && streq_ptr(sd_bus_message_get_sender(q->request), sender))
                        return q;
        return NULL;
}

/* A check of another action for the same call that polkit has not answered
 * yet: the call asks for a second action only once the first is allowed
 * (CreateWorker's quota exemption, bus-manager.c), and both answers must
 * still be there in the dispatch that the second one brings. */
static PolkitQuery *polkit_query_find_sibling(PolkitQuery *q, bool done) {
        for (PolkitQuery *o = q->manager->bus_state->polkit_queries; o; o = o->next)
                if (o != q && o->request == q->request && o->done == done)
                        return o;
        return NULL;
}

static int on_polkit_defer(sd_event_source *s, void *userdata) {
        PolkitQuery *q = userdata, *o;

        if (polkit_query_find_sibling(q, false)) {
                /* Kept, its defer off, until the sibling is answered or gone. */
                (void) sd_event_source_set_enabled(s, SD_EVENT_OFF);
                return 0;
        }
        while ((o = polkit_query_find_sibling(q, true)))
                polkit_query_free(o);
        polkit_query_free(q);
        return 0;
}

/* The request is in its second dispatch: free the query as soon as that is
 * over (its defer runs on the next iteration, before the next message is read). */
static void polkit_query_consumed(PolkitQuery *q) {
        if (q->defer)
                (void) sd_event_source_set_priority(q->defer, SD_EVENT_PRIORITY_NORMAL);
}

/* Every message passes here before its handler: an answered request in its
 * second dispatch has its query freed once that dispatch is over, whether
 * or not the handler asks again (a worker gone by then is NoSuchWorker
 * before any bus_authorize()). Without this, such a query would wait for an
 * idle loop, which a flood never gives, with its request message. */
static int on_polkit_dispatch(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        Manager *m = userdata;

        for (PolkitQuery *q = m->bus_state->polkit_queries; q; q = q->next)
                if (q->done && q->request == msg)
                        polkit_query_consumed(q);
        return 0;
}

int bus_polkit_install(Manager *m) {
        int r;

        r = sd_bus_add_filter(m->bus, &m->bus_state->polkit_filter, on_polkit_dispatch, m);
        if (r < 0)
                return log_error_errno(r, "Failed to add the polkit dispatch filter: %m");
        return 0;
}

static int polkit_query_redispatch(PolkitQuery *q) {
        int r;

        q->done = true;
        /* Idle priority: the query is freed only once the second dispatch of
         * the request, which reads the answer, is over. That dispatch
         * raises the priority (on_polkit_dispatch(), polkit_query_consumed()):
         * under a flood the loop is never idle, and answered queries must
         * not pile up. */
        r = sd_event_add_defer(q->manager->event, &q->defer, on_polkit_defer, q);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(q->defer, "polkit-defer");
        r = sd_event_source_set_priority(q->defer, SD_EVENT_PRIORITY_IDLE);
        if (r < 0)
                return r;
        r = sd_bus_message_rewind(q->request, true);
        if (r < 0)
                return r;
        return sd_bus_enqueue_for_read(q->manager->bus, q->request);
}

/* An interactive check that ran out of time may still have a prompt up:
 * polkit is told to drop it, so nobody authorizes a call already refused.
 * Fire and forget: nothing waits for the answer. */
static void polkit_query_cancel(PolkitQuery *q) {
        if (!q->cancel_id[0])
                return;
        (void) sd_bus_call_method_async(q->manager->bus, NULL, POLKIT_DEST, POLKIT_PATH, POLKIT_IFACE,
                                        "CancelCheckAuthorization", NULL, NULL, "s", q->cancel_id);
}

static void polkit_query_read_answer(PolkitQuery *q, sd_bus_message *reply) {
        const sd_bus_error *e = sd_bus_message_get_error(reply);
        int authorized = 0, challenge = 0;
        const char *result;

        if (e && (sd_bus_error_has_name(e, SD_BUS_ERROR_NO_REPLY) || sd_bus_error_has_name(e, SD_BUS_ERROR_TIMEOUT))) {
                polkit_query_cancel(q);
                set_denied(&q->error, q->action);
                result = "timed-out";
        } else if (e) {
                /* polkit not running, or failing: fail closed. */
                log_struct(LOG_WARNING, "polkit did not answer; refusing",
                           "SANDBOXD_ACTION", sbx_action_to_string(q->action),
                           "SANDBOXD_REASON", e->message ?: e->name, NULL);
                set_denied(&q->error, q->action);
                result = "polkit-unavailable";
        } else if (sd_bus_message_enter_container(reply, 'r', "bba{ss}") < 0 ||
                   sd_bus_message_read(reply, "bb", &authorized, &challenge) < 0) {
                set_denied(&q->error, q->action);
                result = "polkit-bad-reply";
        } else if (authorized) {
                q->allowed = true;
                result = "allowed";
        } else if (challenge) {
                sd_bus_error_setf(&q->error, SD_BUS_ERROR_INTERACTIVE_AUTHORIZATION_REQUIRED,
                                  "Interactive authentication is required for the polkit action %s",
                                  sbx_action_to_string(q->action));
                result = "interactive-authorization-required";
        } else {
                set_denied(&q->error, q->action);
                result = "denied";
        }
        log_decision(q->allowed ? LOG_INFO : LOG_NOTICE, "polkit answered", q->caller, q->action,
                     q->worker_id, result);
}

static void polkit_query_answered(PolkitQuery *q) {
        int r;

        /* Polkit is done with it: its place under the caps is free again,
         * whether or not the request has been dispatched again yet. */
        if (q->counted) {
                caller_quota_release(&q->manager->bus_state->polkit_quota, q->caller);
                q->counted = false;
        }
        q->track = sd_bus_track_unref(q->track);
        r = polkit_query_redispatch(q);
        if (r < 0) {
                log_error_errno(r, "Failed to dispatch a call again after polkit's answer: %m");
                (void) sd_bus_reply_method_errorf(q->request, SD_BUS_ERROR_ACCESS_DENIED,
                                                  "Access denied: failed to process polkit's answer for %s",
                                                  sbx_action_to_string(q->action));
                polkit_query_free(q);
        }
}

static int on_polkit_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        PolkitQuery *q = userdata, *f;

        q->call = sd_bus_slot_unref(q->call);
        polkit_query_read_answer(q, reply);
        /* The same answer for every call that joined this check. The list
         * is searched afresh each time: answering one may free it. */
        while ((f = polkit_query_find_follower(q))) {
                f->leader = NULL;
                f->allowed = q->allowed;
                if (sd_bus_error_copy(&f->error, &q->error) < 0 && !f->allowed)
                        set_denied(&f->error, f->action);
                polkit_query_answered(f);
        }
        polkit_query_answered(q);
        return 0;
}

/* Only while polkit decides: once it answered, the second dispatch asks
 * the bus for the caller's credentials again, which a departed caller no
 * longer has. Returns 1: sd-bus calls a handler that returns 0 again for as
 * long as the track stays empty. */
static int on_caller_gone(sd_bus_track *t, void *userdata) {
        PolkitQuery *q = userdata;

        log_decision(LOG_NOTICE, "Caller left before polkit answered", q->caller, q->action, q->worker_id,
                     "caller-gone");
        /* Nothing was changed for it yet; the call and its query go. */
        polkit_query_free(q);
        return 1;
}

static int polkit_query_start(Manager *m, sd_bus_message *msg, SbxAction action, uid_t caller,
                              const char *worker_id, bool interactive) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL;
        const char *sender = sd_bus_message_get_sender(msg);
        char cancel_id[64] = "";
        uint64_t cookie = 0;
        uint32_t flags = 0;
        PolkitQuery *q, *leader;
        int r;

        if (!sender)
                return -EBADMSG;
        /* The caps are taken first of all: past them nothing is asked. */
        r = caller_quota_acquire(&m->bus_state->polkit_quota, caller);
        if (r < 0)
                return r;
        q = calloc(1, sizeof(*q));
        if (!q) {
                caller_quota_release(&m->bus_state->polkit_quota, caller);
                return -ENOMEM;
        }
        *q = (PolkitQuery) { .manager = m, .request = sd_bus_message_ref(msg), .action = action,
                             .caller = caller, .counted = true, .error = SD_BUS_ERROR_NULL };
        snprintf(q->worker_id, sizeof(q->worker_id), "%s", worker_id ?: "");
        q->next = m->bus_state->polkit_queries;
        m->bus_state->polkit_queries = q;
        r = sd_bus_track_new(m->bus, &q->track, on_caller_gone, q);
        if (r >= 0)
                r = sd_bus_track_add_sender(q->track, msg);
        if (r < 0) {
                polkit_query_free(q);
                return r;
        }

        if (interactive && sd_bus_message_get_allow_interactive_authorization(msg) > 0) {
                flags |= POLKIT_FLAG_ALLOW_USER_INTERACTION;
                /* Unique while the call waits: its sender and serial. */
                (void) sd_bus_message_get_cookie(msg, &cookie);
                snprintf(cancel_id, sizeof(cancel_id), "sandboxd-%s-%" PRIu64, sender, cookie);
        }
        q->flags = flags;
        /* Asked already and not answered yet: this call waits for that
         * answer (it still counts against the caps while it waits). */
        leader = polkit_query_find_pending(m, sender, action, worker_id, flags);
        if (leader) {
                q->leader = leader;
                log_decision(LOG_DEBUG, "Waiting for polkit's answer to the same check", caller, action, worker_id,
                             "joined");
                return 0;
        }
        snprintf(q->cancel_id, sizeof(q->cancel_id), "%s", cancel_id);
        r = sd_bus_message_new_method_call(m->bus, &call, POLKIT_DEST, POLKIT_PATH, POLKIT_IFACE,
                                           "CheckAuthorization");
        if (r < 0) {
                polkit_query_free(q);
                return r;
        }
        /* The subject is the caller's unique name: polkit looks up its
         * process and user itself, nothing the caller claims is used. */
        r = sd_bus_message_append(call, "(sa{sv})s", "system-bus-name", 1, "name", "s", sender,
                                  sbx_action_to_string(action));
        if (r >= 0)
                r = sd_bus_message_append(call, "a{ss}us", worker_id ? 1 : 0, "worker", worker_id, flags, cancel_id);
        if (r >= 0)
                r = sd_bus_call_async(m->bus, &q->call, call, on_polkit_reply, q,
                                      flags ? m->config.bus_interactive_authorization_timeout_usec
                                            : POLKIT_TIMEOUT_USEC);
        if (r < 0) {
                polkit_query_free(q);
                return r;
        }
        log_decision(LOG_INFO, "Asking polkit", caller, action, worker_id,
                     flags ? "asking-interactive" : "asking");
        return 0;
}

/* Past a cap the call is refused before anything is looked up or asked. */
static int refuse_over_cap(Manager *m, int cap, uid_t caller, SbxAction action, const char *worker_id,
                           sd_bus_error *ret_error) {
        bool mine = cap == -EUSERS;
        uint64_t now = now_usec(CLOCK_MONOTONIC);

        if (now >= m->bus_state->polkit_cap_logged_usec + POLKIT_CAP_LOG_INTERVAL_USEC) {
                char uid[16], n[16];

                m->bus_state->polkit_cap_logged_usec = now;
                snprintf(uid, sizeof(uid), "%u", (unsigned) caller);
                snprintf(n, sizeof(n), "%u", mine ? m->config.bus_authorizations_per_user
                                                  : m->config.bus_authorizations_max);
                log_struct(LOG_WARNING,
                           mine ? "A user has as many calls waiting for polkit as allowed; refusing more"
                                : "As many calls wait for polkit as allowed; refusing more",
                           "SANDBOXD_EVENT", "authz-cap-reached", "SANDBOXD_CALLER_UID", uid,
                           "SANDBOXD_ACTION", sbx_action_to_string(action), "SANDBOXD_WORKER_ID", worker_id ?: "",
                           "SANDBOXD_CAP", mine ? "per-user" : "total", "SANDBOXD_CAP_VALUE", n, NULL);
        }
        {
                static const CallerQuotaWords words = {
                        "calls wait for an authorization", "AuthorizationsPerUser", "AuthorizationsMax", "answered" };
                SbxError e = {};
                (void) caller_quota_refusal(&m->bus_state->polkit_quota, cap, &words, &e);
                sd_bus_error_set(ret_error, e.name, e.message);
        }
        return -EBUSY;
}

int bus_authorize(Manager *m, sd_bus_message *msg, SbxAction action, uid_t owner, const char *worker_id,
                  bool interactive, sd_bus_error *ret_error) {
        uid_t caller = UID_INVALID;
        PolkitQuery *q;
        int r;

        /* Asked again on the second dispatch too: a caller that has left by
         * then has no credentials any more and is refused. */
        r = bus_caller_uid(msg, &caller);
        if (r < 0)
                caller = UID_INVALID;
        switch (authz_decide(caller, action, owner)) {
        case AUTHZ_ALLOW:
                /* Every read by root or an owner passes here: debug level. */
                log_decision(LOG_DEBUG, "Allowed without polkit", caller, action, worker_id,
                             caller == 0 ? "allowed-root" : "allowed-owner");
                return 1;
        case AUTHZ_DENY:
                log_decision(LOG_NOTICE, "Refused", caller, action, worker_id, "no-credentials");
                return set_denied(ret_error, action);
        case AUTHZ_ASK_POLKIT:
                break;
        }
        q = polkit_query_find(m, msg, action);
        if (!q) {
                r = polkit_query_start(m, msg, action, caller, worker_id, interactive);
                if (r == -EUSERS || r == -ENOBUFS)
                        return refuse_over_cap(m, r, caller, action, worker_id, ret_error);
                if (r < 0) {
                        log_decision(LOG_WARNING, "Cannot ask polkit; refusing", caller, action, worker_id,
                                     strerror(-r));
                        return set_denied(ret_error, action);
                }
                return 0;
        }
        if (!q->done)
                return 0;
        polkit_query_consumed(q);
        if (q->allowed)
                return 1;
        r = sd_bus_error_copy(ret_error, &q->error);
        return r < 0 ? r : -EACCES;
}

bool bus_authorized(Manager *m, sd_bus_message *msg, uid_t caller, SbxAction action, uid_t owner) {
        PolkitQuery *q;

        switch (authz_decide(caller, action, owner)) {
        case AUTHZ_ALLOW:
                return true;
        case AUTHZ_DENY:
                return false;
        case AUTHZ_ASK_POLKIT:
                break;
        }
        q = polkit_query_find(m, msg, action);
        return q && q->done && q->allowed;
}

int bus_quota_exempt(Manager *m, sd_bus_message *msg, uid_t owner, sd_bus_error *ret_error) {
        _cleanup_(sd_bus_error_free) sd_bus_error refused = SD_BUS_ERROR_NULL;
        int r;

        /* Root is exempt by Quota:ExemptRoot (manager-quota.c) or not at all. */
        if (!m->config.quota.exempt_managers || owner == 0)
                return QUOTA_NOT_EXEMPT;
        r = bus_authorize(m, msg, SBX_ACTION_MANAGE_WORKERS, UID_INVALID, NULL, false, &refused);
        if (r > 0 || r == 0)
                return r;
        if (bus_authorize_is_over_cap(r))
                return sd_bus_error_copy(ret_error, &refused) < 0 ? -ENOMEM : r;
        return QUOTA_NOT_EXEMPT;
}
