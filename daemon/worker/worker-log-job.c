/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <pthread.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "errors.h"
#include "worker.h"
#include "worker-log-job.h"
#include "worker-log.h"

struct WorkerLogJob {
        const WorkerOwner *host;        /* its list and the reads' quota */
        WorkerLogJob *next;
        sd_bus_message *request;
        sd_event_source *done_source;
        int done_fd;                    /* the thread writes it once, when it is over */
        pthread_t thread;
        bool started, counted;

        /* The thread's input, copied: it reads nothing of the manager's. */
        char id[WORKER_ID_LEN + 1];
        char *cursor;
        bool egress, all;
        unsigned max;
        uid_t caller, owner;

        /* The thread's output, read only after done_fd said so. */
        int result;
        WorkerLogPage page;
};

static WorkerLogJob *job_free(WorkerLogJob *j) {
        if (!j)
                return NULL;
        for (WorkerLogJob **p = j->host->log_jobs; *p; p = &(*p)->next)
                if (*p == j) {
                        *p = j->next;
                        break;
                }
        if (j->started)
                (void) pthread_join(j->thread, NULL);
        if (j->counted)
                caller_quota_release(j->host->log_read_quota, j->caller);
        sd_event_source_disable_unref(j->done_source);
        if (j->done_fd >= 0)
                close(j->done_fd);
        sd_bus_message_unref(j->request);
        worker_log_page_done(&j->page);
        free(j->cursor);
        free(j);
        return NULL;
}

void worker_log_jobs_free(const WorkerOwner *o) {
        while (*o->log_jobs)
                job_free(*o->log_jobs);
}

/* In the job's thread: whose worker it is (the journal says, for one that
 * ended), whether the caller may see it, and the page. */
static void *job_run(void *userdata) {
        WorkerLogJob *j = userdata;
        int r = 0;

        if (j->owner == UID_INVALID)
                r = worker_log_find_owner(j->id, &j->owner);
        /* Not the caller's: the same answer as a worker that never was. */
        if (r >= 0 && !j->all && j->owner != j->caller)
                r = -ENOENT;
        if (r >= 0)
                r = worker_log_read(j->id, j->cursor, j->egress, j->max, &j->page);
        j->result = r;
        (void) eventfd_write(j->done_fd, 1);
        return NULL;
}

static int reply_page(sd_bus_message *msg, const WorkerLogPage *page) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r;

        r = sd_bus_message_new_method_return(msg, &reply);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(reply, 'a', "(tsuss)");
        for (size_t i = 0; r >= 0 && i < page->n; i++) {
                const WorkerLogEntry *e = &page->entries[i];
                r = sd_bus_message_append(reply, "(tsuss)", e->realtime_usec, worker_log_source_to_string(e->source),
                                          e->priority, e->event, e->message);
        }
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r >= 0)
                r = sd_bus_message_append(reply, "s", page->next_cursor);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

static int on_job_done(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        WorkerLogJob *j = userdata;
        int r;

        /* Joined before its output is read: the join orders the thread's
         * writes before these reads (the eventfd alone does not, for TSan). */
        (void) pthread_join(j->thread, NULL);
        r = j->result;
        j->started = false;
        if (r == -ENOENT)
                r = sd_bus_reply_method_errorf(j->request, SBX_ERROR_NO_SUCH_WORKER,
                                               "No worker with id \"%s\" whose log you may read", j->id);
        else if (r == -EINVAL)
                r = sd_bus_reply_method_errorf(j->request, SBX_ERROR_INVALID_ARGUMENT,
                                               "The journal cannot parse this cursor");
        else if (r < 0)
                r = sd_bus_reply_method_errnof(j->request, -r, "Failed to read the journal: %s", strerror(-r));
        else {
                r = reply_page(j->request, &j->page);
                if (r < 0)
                        r = sd_bus_reply_method_errnof(j->request, -r, "Failed to send the log: %s", strerror(-r));
        }
        if (r < 0)
                log_errno(LOG_DEBUG, r, "Failed to answer ReadWorkerLog for %s: %m", j->id);
        job_free(j);
        return 0;
}

static int refuse_over_cap(const WorkerOwner *o, int cap, sd_bus_error *ret_error) {
        static const CallerQuotaWords words = { "log reads are under way", "LogReadsPerUser", "LogReadsMax", "answered" };
        SbxError e = {};

        (void) caller_quota_refusal(o->log_read_quota, cap, &words, &e);
        sd_bus_error_set(ret_error, e.name, e.message);
        return -EBUSY;
}

int worker_log_job_start(const WorkerOwner *o, sd_bus_message *msg, const WorkerLogRequest *req, sd_bus_error *ret_error) {
        WorkerLogJob *j;
        int r;

        j = calloc(1, sizeof(*j));
        if (!j)
                return -ENOMEM;
        *j = (WorkerLogJob) { .host = o, .done_fd = -1, .egress = req->egress, .all = req->all,
                              .max = req->max, .caller = req->caller, .owner = req->owner };
        j->next = *o->log_jobs;
        *o->log_jobs = j;
        /* Root gets its answer whatever the users hold: only its own cap
         * applies to it, so reads under way stay bounded all the same. */
        r = req->caller == 0 ? caller_quota_acquire_reserved(o->log_read_quota, 0)
                             : caller_quota_acquire(o->log_read_quota, req->caller);
        if (r == -EUSERS || r == -ENOBUFS) {
                job_free(j);
                return refuse_over_cap(o, r, ret_error);
        }
        if (r < 0)
                goto fail;
        j->counted = true;
        snprintf(j->id, sizeof(j->id), "%s", req->id);
        j->cursor = strdup(req->cursor ?: "");
        j->request = sd_bus_message_ref(msg);
        j->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (!j->cursor || j->done_fd < 0) {
                r = j->cursor ? -errno : -ENOMEM;
                goto fail;
        }
        r = sd_event_add_io(*o->event, &j->done_source, j->done_fd, EPOLLIN, on_job_done, j);
        if (r < 0)
                goto fail;
        (void) sd_event_source_set_description(j->done_source, "log-job-done");
        /* The thread inherits the event loop's blocked signals, so
         * signalfd()s keep getting them. */
        r = -pthread_create(&j->thread, NULL, job_run, j);
        if (r < 0)
                goto fail;
        j->started = true;
        return 0;
fail:
        job_free(j);
        return r;
}
