/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <sys/inotify.h>
#include <sys/stat.h>

#include "uid-keep.h"
#include "event-util.h"
#include "unit-drop.h"
#include "unit-props.h"
#include "worker-disk.h"
#include "worker-persist.h"
#include "worker-resume.h"
#include "worker-wake.h"
#include "worker-suspend.h"

/* As the suspend's (worker-suspend.c): beyond systemd's default stop timeout. */
#define RESUME_DROP_TIMEOUT_USEC (100 * USEC_PER_SEC)

ResumeVerdict worker_resume_verdict(const ResumeFacts *f) {
        /* Once the image went, the sandbox ran: the image is no longer the
         * worker's state, so there is nothing to go back to. */
        if (f->image_used) {
                if (f->start_failed)
                        return RESUME_END;
                return f->job_done ? RESUME_RUNNING : RESUME_WAIT;
        }
        /* Another UID included: the image and home are what the suspend
         * kept, and are never deleted for a resume that did not run. */
        if (f->start_failed)
                return RESUME_KEEP_SUSPENDED;
        if (!f->job_done)
                return RESUME_WAIT;
        /* The launcher or runsc's restore gave up before the sandbox ran. */
        if (f->unit_ended)
                return RESUME_KEEP_SUSPENDED;
        return f->timed_out ? RESUME_RUNNING : RESUME_WAIT;
}

static void resume_decide(Worker *w, bool start_failed, bool timed_out, const char *why);

/* Whether the home is no longer owned by the UID the worker was saved with. */
static bool home_uid_changed(const Worker *w) {
        _cleanup_free_ char *priv = NULL;
        struct stat st;

        if (w->uid == (uid_t) -1 || asprintf(&priv, SBX_PRIVATE_STATE_ROOT "/%s", w->id) < 0)
                return false;
        return stat(priv, &st) == 0 && st.st_uid != w->uid;
}

static int on_image_changed(sd_event_source *s, const struct inotify_event *ev, void *userdata) {
        Worker *w = userdata;

        /* Anything removed from it is the guard removing it: nothing else
         * touches an image while it is being restored. */
        w->resume.ran = true;
        w->resume.watch = sd_event_source_disable_unref(w->resume.watch);
        if (w->state == WORKER_RESUMING && !w->resume.failing)
                resume_decide(w, false, false, NULL);
        return 0;
}

int worker_resume_watch(Worker *w) {
        _cleanup_free_ char *dir = NULL;
        int r;

        worker_resume_unwatch(w);
        w->resume.ran = false;
        w->resume.job_done = false;
        w->resume.job_failed = false;
        if (asprintf(&dir, SBX_SUSPEND_ROOT "/%s", w->id) < 0)
                return -ENOMEM;
        r = sd_event_add_inotify(worker_event(w), &w->resume.watch, dir,
                                 IN_DELETE | IN_DELETE_SELF | IN_MOVED_FROM | IN_MOVE_SELF | IN_ONLYDIR,
                                 on_image_changed, w);
        if (r < 0) {
                /* Then the resume is done at its job, as before the watch. */
                log_struct(LOG_WARNING, "Cannot watch the image of the resuming worker; a failed restore will end it",
                           "SANDBOXD_WORKER_ID", w->id, "SANDBOXD_REASON", strerror(-r), NULL);
                w->resume.ran = true;
                return r;
        }
        (void) sd_event_source_set_description(w->resume.watch, "worker-resume-watch");
        /* Armed before the unit is asked for: no removal can come unseen. */
        return 0;
}

void worker_resume_unwatch(Worker *w) {
        w->resume.watch = sd_event_source_disable_unref(w->resume.watch);
        w->resume.timer = sd_event_source_disable_unref(w->resume.timer);
}

void worker_resume_log_failed(Worker *w, const char *why) {
        char n[16];

        w->resume.failures++;
        snprintf(n, sizeof(n), "%u", w->resume.failures);
        log_struct(LOG_ERR, "The resume of the worker failed; it stays suspended, with its image and home",
                   "SANDBOXD_WORKER_ID", w->id, "SANDBOXD_UNIT", w->unit, "SANDBOXD_REASON", why,
                   "SANDBOXD_ATTEMPT", n, "SANDBOXD_EVENT", "resume-failed", NULL);
}

static void resume_settled(Worker *w) {
        char message[512];

        /* What systemd said about the failed unit is no use for the next. */
        w->unit_ended = false;
        w->unit_seen_active = false;
        w->exec_main_code = 0;
        w->exec_main_status = 0;
        free(w->unit_result);
        w->unit_result = NULL;
        w->suspend.restore = false;
        w->resume.failing = false;
        worker_wake_failed(w, w->resume.why);
        if (worker_set_state(w, WORKER_SUSPENDED) < 0)
                return;
        /* The record said suspended all along (only a resume that is done
         * saves it as running); written again, so that a restart finds it
         * as it is now. The image, with its kept record, was not touched. */
        if (worker_save_state(w) < 0)
                log_struct(LOG_ERR, "Failed to persist the suspended worker's state; a restart of sandboxd loses it",
                           "SANDBOXD_WORKER_ID", w->id, NULL);
        snprintf(message, sizeof(message),
                 "The resume of worker %s failed (%s); it is still suspended, with its image and home: Resume it "
                 "again, or Stop it; see journalctl -u %s", w->id, w->resume.why ?: "unknown", w->unit);
        free(w->resume.why);
        w->resume.why = NULL;
        worker_waiters_fail(w, w->resume.uid_taken ? SBX_ERROR_UID_TAKEN : SBX_ERROR_START_FAILED, message);
        w->resume.uid_taken = false;
}

static void on_resume_units_dropped(UnitDrop *d, bool all_gone, void *userdata) {
        Worker *w = userdata;

        if (!all_gone)
                log_struct(LOG_WARNING, "A unit of the failed resume is still loaded; the next resume may fail to "
                           "make it again", "SANDBOXD_WORKER_ID", w->id, "SANDBOXD_UNIT", unit_drop_pending_first(d),
                           NULL);
        w->resume.drop = unit_drop_free(w->resume.drop);
        resume_settled(w);
}

/* Back to suspended: what the attempt made goes (the unit, the proxy pair,
 * the workspace's mount unit), the image and home stay, and the callers
 * hear of it once systemd holds none of those units, so that their next
 * Resume can make them again under the same names. */
static void resume_keep_suspended(Worker *w, const char *why) {
        int r;

        w->resume.failing = true;
        worker_resume_unwatch(w);
        w->start.call = sd_bus_slot_unref(w->start.call);
        free(w->resume.why);
        w->resume.why = strdup(why);
        worker_resume_log_failed(w, why);
        /* Its pipes went with the unit; the next resume makes new ones. */
        channel_worker_ended(w->channel);
        w->channel = channel_free(w->channel);
        worker_forget_channel(w);
        r = worker_drop_units(w, RESUME_DROP_TIMEOUT_USEC, on_resume_units_dropped, &w->resume.drop);
        if (r < 0) {
                log_struct(LOG_WARNING, "Cannot wait for the failed resume's units to go; stopping them",
                           "SANDBOXD_WORKER_ID", w->id, "SANDBOXD_REASON", strerror(-r), NULL);
                worker_stop_egress(w);
                resume_settled(w);
        }
}

/* Why the resumed unit ended, for the log and the callers. */
static void resume_end_reason(const Worker *w, char *buf, size_t size) {
        if (w->exec_main_code == 1 && w->exec_main_status == SBX_LAUNCH_EXIT_SETUP)
                snprintf(buf, size, "the launcher could not restore the sandbox (exit status %d)",
                         SBX_LAUNCH_EXIT_SETUP);
        else if (w->exec_main_code == 1)
                snprintf(buf, size, "the restore exited %d before the sandbox ran", w->exec_main_status & 0xff);
        else if (w->exec_main_code == 2 || w->exec_main_code == 3)
                snprintf(buf, size, "the restore was killed by signal %d", w->exec_main_status & 0x7f);
        else
                snprintf(buf, size, "the resumed unit ended before the sandbox ran (result %s)",
                         w->unit_result ?: "unknown");
}

static int on_resume_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        Worker *w = userdata;

        w->resume.timer = sd_event_source_disable_unref(w->resume.timer);
        if (w->state != WORKER_RESUMING || w->resume.failing)
                return 0;
        log_struct(LOG_WARNING, "The resumed worker's image is still there; taking it as resumed",
                   "SANDBOXD_WORKER_ID", w->id, "SANDBOXD_UNIT", w->unit, NULL);
        resume_decide(w, false, true, NULL);
        return 0;
}

static void resume_decide(Worker *w, bool start_failed, bool timed_out, const char *why) {
        char reason[256];
        ResumeFacts f = {
                .start_failed = start_failed,
                .job_done = w->resume.job_done,
                .unit_ended = w->unit_ended,
                /* A marker gone is an image gone, watched or not. */
                .image_used = w->resume.ran || !worker_image_complete(w),
                .timed_out = timed_out,
        };

        if (worker_resume_verdict(&f) == RESUME_KEEP_SUSPENDED && home_uid_changed(w)) {
                f.uid_changed = true;
                w->resume.uid_taken = true;
                why = "the resumed unit got another UID than the image was saved with (its UID was taken "
                      "meanwhile), and systemd gave the home to that UID";
                log_struct(LOG_ERR, "A resumed unit got another UID; the worker stays suspended",
                           "SANDBOXD_WORKER_ID", w->id, "SANDBOXD_EVENT", "resume-uid-taken", NULL);
        }

        switch (worker_resume_verdict(&f)) {
        case RESUME_WAIT:
                if (f.job_done && !w->resume.timer) {
                        if (event_add_timer(worker_event(w), &w->resume.timer, WORKER_RESUME_RUN_TIMEOUT_USEC,
                                            TIMER_WAIT, on_resume_timeout, w, "worker-resume-timer") < 0)
                                /* Without the timer, do not wait on what may never come. */
                                resume_decide(w, false, true, NULL);
                }
                return;
        case RESUME_RUNNING:
                worker_resume_unwatch(w);
                w->resume.failures = 0;
                worker_resume_done(w);
                return;
        case RESUME_KEEP_SUSPENDED:
                if (!why) {
                        resume_end_reason(w, reason, sizeof(reason));
                        why = reason;
                }
                resume_keep_suspended(w, why);
                return;
        case RESUME_END:
                worker_resume_unwatch(w);
                w->suspend.restore = false;
                worker_start_failed(w, why ?: "the resumed unit failed");
                return;
        }
}

void worker_resume_start_refused(Worker *w, const char *why) {
        if (w->state != WORKER_RESUMING || w->resume.failing)
                return;
        resume_decide(w, true, false, why);
}

/* A failed job whose unit's end has not been seen within this: decided
 * without its exit status. */
#define RESUME_EXIT_STATUS_WAIT_USEC (10 * USEC_PER_SEC)

static int on_exit_status_wait(sd_event_source *s, uint64_t usec, void *userdata) {
        Worker *w = userdata;

        w->resume.timer = sd_event_source_disable_unref(w->resume.timer);
        if (w->state == WORKER_RESUMING && !w->resume.failing)
                resume_decide(w, true, false, "start job failed");
        return 0;
}

void worker_resume_job_removed(Worker *w, const char *result) {
        char why[256];

        /* The stop jobs of a failed attempt's units come here too. */
        if (w->state != WORKER_RESUMING || w->resume.failing || w->resume.job_done || w->resume.job_failed)
                return;
        if (streq(result, "done")) {
                w->resume.job_done = true;
                resume_decide(w, false, false, NULL);
                return;
        }
        /* The unit is Type=notify: a launcher or runsc restore that gives up
         * ends it before READY=1 and its job "failed", or "canceled" when the
         * exec channel's socket, which the unit requires and which goes with
         * it, stopped first; the unit's exit status, which may come just
         * after, is the reason worth giving. */
        if (streq(result, "failed") || streq(result, "canceled")) {
                w->resume.job_failed = true;
                if (w->unit_ended)
                        resume_decide(w, true, false, NULL);
                else if (event_add_timer(worker_event(w), &w->resume.timer, RESUME_EXIT_STATUS_WAIT_USEC, TIMER_WAIT,
                                         on_exit_status_wait, w, "worker-exit-status-timer") < 0)
                        resume_decide(w, true, false, "start job failed");
                return;
        }
        worker_disk_start_job_why(w->id, w->spec.disk_max, result, why, sizeof(why));
        resume_decide(w, true, false, why);
}

void worker_resume_unit_ended(Worker *w) {
        if (w->state != WORKER_RESUMING || w->resume.failing)
                return;
        /* Before the job is done, the job's result decides (and sees this). */
        if (w->resume.job_done)
                resume_decide(w, false, false, NULL);
        else if (w->resume.job_failed) {
                w->resume.timer = sd_event_source_disable_unref(w->resume.timer);
                resume_decide(w, true, false, NULL);
        }
}
