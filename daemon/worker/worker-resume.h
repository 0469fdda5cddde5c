/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The end of a resume (worker-suspend.h starts it). A resume that fails
 * before the restored sandbox ran keeps the worker suspended, with its
 * image and home, instead of ending it: the image is still its latest
 * state, and what failed (systemd busy, a refused start, runsc's restore
 * under load) may well work the next time.
 *
 * Where the line is: the launcher's memory guard removes the image once
 * runsc state reports the sandbox running (launch-guard.c), and only then
 * tells systemd the unit is ready; from then on the workload may have run, changed its home and
 * talked to its client, and the image is no longer what the worker is. So
 * the daemon watches the image directory (inotify): a resume is done when
 * the start job is done AND the image went; it failed, and the worker goes
 * back to suspended, when the start was refused, its job failed, or its
 * unit ended while the image was still whole. A unit that ends after the
 * image went ends the worker as any other. One whose unit got another UID
 * than the image was saved with (its UID was taken meanwhile, although
 * uid-keep.h reserves it and checks it first) is kept suspended too, with
 * UIDTaken for the callers: the launcher refused the image, which is still
 * the worker's state, though systemd gave the home to the new UID (an
 * operator gives it back with chown -R). The one gap: the guard asks runsc
 * every 250 ms, and a workload that ran and ended within that time after
 * its restore is kept with an image that much older than its home.
 *
 * Nothing retries on its own: each Resume (or OpenChannel) tries once, and
 * a worker whose resumes keep failing stays suspended until a Resume works
 * or a Stop removes it; the count of failures in a row (since sandboxd
 * started) is logged as SANDBOXD_ATTEMPT. */

#include <stdbool.h>

#include "worker.h"

/* After the job is done, how long the image may stay before the resume is
 * taken as done anyway. The unit is Type=notify and its launcher removes the
 * image before READY=1, so this is only for a removal that failed: a sandbox
 * that runs must not stay resuming. */
#define WORKER_RESUME_RUN_TIMEOUT_USEC (120 * USEC_PER_SEC)

typedef enum ResumeVerdict {
        RESUME_WAIT,            /* not known yet */
        RESUME_RUNNING,         /* the sandbox runs: answer the callers */
        RESUME_KEEP_SUSPENDED,  /* failed before the sandbox ran: back to suspended */
        RESUME_END,             /* failed after it ran: ends as any failed worker */
} ResumeVerdict;

typedef struct ResumeFacts {
        bool start_failed;      /* StartTransientUnit refused, or the start job not "done" */
        bool job_done;          /* the start job is done */
        bool unit_ended;        /* the resumed unit ended */
        bool image_used;        /* the launcher removed the image: the sandbox ran */
        bool timed_out;         /* WORKER_RESUME_RUN_TIMEOUT_USEC passed after the job */
        bool uid_changed;       /* systemd gave the unit another UID and chowned the home to it: kept suspended */
} ResumeFacts;

/* What the facts so far mean for a resuming worker (no I/O). */
ResumeVerdict worker_resume_verdict(const ResumeFacts *f);

/* Before the resumed unit is asked for: watches the image directory. */
int worker_resume_watch(Worker *w);
/* Stops watching (the resume ended one way or the other). */
void worker_resume_unwatch(Worker *w);
/* A Resume that could not even ask systemd: logs it, W stays suspended. */
void worker_resume_log_failed(Worker *w, const char *why);

/* systemd refused the StartTransientUnit of the resumed unit. */
void worker_resume_start_refused(Worker *w, const char *why);
/* The JobRemoved of the resumed unit's start job, with RESULT. */
void worker_resume_job_removed(Worker *w, const char *result);
/* The resumed unit ended while W was resuming. */
void worker_resume_unit_ended(Worker *w);
