/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "rmrf.h"
#include "uid-keep.h"
#include "systemd-bus.h"
#include "unit-drop.h"
#include "unit-props.h"
#include "worker-disk.h"
#include "worker-gate.h"
#include "worker-persist.h"
#include "worker-resume.h"
#include "worker-secrets.h"
#include "worker-spawn.h"
#include "worker-suspend.h"
#include "worker-unit.h"
#include "worker-wake.h"

/* Beyond systemd's default stop timeout (90 s), after which it kills the
 * proxy: the old units go in time unless something holds them. */
#define SUSPEND_DROP_TIMEOUT_USEC (100 * USEC_PER_SEC)

int worker_check_suspendable(const WorkerSpec *spec, SbxRuntime runtime, SbxError *error) {
        if (runtime == SBX_RUNTIME_SYSTEMD || runtime == SBX_RUNTIME_WASM)
                return sbx_error_set(error, -EOPNOTSUPP, SBX_ERROR_NOT_SUPPORTED,
                                     "A %s worker runs on the host's shared kernel, whose processes cannot be "
                                     "checkpointed: only gVisor (runsc) workers can be suspended",
                                     sbx_class_to_string(spec->class));
        if (runtime != SBX_RUNTIME_RUNSC)
                return sbx_error_set(error, -EOPNOTSUPP, SBX_ERROR_NOT_SUPPORTED,
                                     "The %s runtime cannot checkpoint a worker: only gVisor (runsc) workers can "
                                     "be suspended", sbx_runtime_to_string(runtime));
        return 0;
}

static int waiter_add(Worker *w, sd_bus_message *request) {
        sd_bus_message **l;

        if (!request)
                return 0;
        l = reallocarray(w->waiters, w->n_waiters + 1, sizeof(*l));
        if (!l)
                return -ENOMEM;
        w->waiters = l;
        w->waiters[w->n_waiters++] = sd_bus_message_ref(request);
        return 0;
}

/* Answers the waiting calls with member MEMBER ("Suspend" answers
 * SuspendWorker too), or all of them with MEMBER NULL. */
static void waiters_reply(Worker *w, const char *member, const char *error_name, const char *error_message) {
        size_t k = 0;

        for (size_t i = 0; i < w->n_waiters; i++) {
                sd_bus_message *msg = w->waiters[i];
                const char *mm = sd_bus_message_get_member(msg) ?: "";

                if (member && !startswith(mm, member)) {
                        w->waiters[k++] = msg;
                        continue;
                }
                w->owned_by->reply_waiter(w, msg, error_name, error_message);
                sd_bus_message_unref(msg);
        }
        w->n_waiters = k;
}

void worker_waiters_fail(Worker *w, const char *name, const char *message) {
        waiters_reply(w, NULL, name, message);
}

void worker_delete_images(Worker *w) {
        _cleanup_free_ char *dir = NULL;
        int r;

        if (asprintf(&dir, SBX_SUSPEND_ROOT "/%s", w->id) < 0)
                return;
        r = rm_rf(dir);
        if (r < 0)
                log_warning_errno(r, "Failed to remove the checkpoint image %s: %m", dir);
}

uint64_t worker_image_bytes(const Worker *w) {
        _cleanup_free_ char *dir = NULL;
        uint64_t total = 0;
        struct dirent *de;
        DIR *d;

        if (asprintf(&dir, SBX_SUSPEND_ROOT "/%s", w->id) < 0)
                return 0;
        d = opendir(dir);
        if (!d)
                return 0;
        while ((de = readdir(d))) {
                struct stat st;
                if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
                        total += (uint64_t) st.st_blocks * 512;
        }
        closedir(d);
        return total;
}

bool worker_image_complete(const Worker *w) {
        _cleanup_free_ char *marker = NULL;

        if (asprintf(&marker, SBX_SUSPEND_ROOT "/%s/" SBX_IMAGE_MARKER, w->id) < 0)
                return false;
        return access(marker, F_OK) == 0;
}

/* ---- suspend ------------------------------------------------------------ */

/* runsc 0.0~20240729 saves a sandbox by building gVisor's whole state in
 * the sentry's Go heap, which is charged to the worker's unit, and that
 * state grows with every suspend and resume of a worker that keeps opening
 * connections (docs/benchmarks.md, checkpoint): the save went past
 * MemoryMax after about 90 cycles and the kernel's OOM killer took the
 * sentry: the worker was lost. So while its checkpoint runs, the unit may use
 * [Suspend] CheckpointExtraMemory= beyond MemoryMax; the sandbox is paused
 * meanwhile (launch-suspend.c), so that room is the save's. A failed
 * checkpoint takes it back; a saved sandbox's unit ends, and the resumed one
 * starts with its MemoryMax. */
static int on_memory_max_set(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        const sd_bus_error *e = sd_bus_message_get_error(reply);

        if (e)
                log_warning("systemd refused to change a worker unit's MemoryMax= for its checkpoint: %s",
                            e->message ?: e->name);
        return 0;
}

static void checkpoint_memory_max(Worker *w, bool saving) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *msg = NULL;
        uint64_t extra = w->owned_by->config->checkpoint_extra_memory, max = w->spec.limits.memory_max;
        int r;

        if (extra == 0 || !w->unit)
                return;
        if (saving)
                max = max > UINT64_MAX - extra ? UINT64_MAX : max + extra;
        /* Sent before the checkpoint's start, on the same connection: PID 1
         * applies it first. No slot: the answer only logs. */
        r = systemd_set_unit_properties_new(worker_systemd(w), &msg, w->unit, true);
        if (r >= 0)
                r = sd_bus_message_append(msg, "a(sv)", 1, "MemoryMax", "t", max);
        if (r >= 0)
                r = sd_bus_call_async(worker_systemd(w), NULL, msg, on_memory_max_set, NULL, 0);
        if (r < 0)
                log_struct(LOG_WARNING, "Failed to change the worker unit's MemoryMax= for its checkpoint",
                           "SANDBOXD_WORKER_ID", w->id, "SANDBOXD_REASON", strerror(-r), NULL);
}

static void checkpoint_failed(Worker *w, const char *why) {
        char message[512];

        log_struct(LOG_ERR, "Failed to suspend the worker", "SANDBOXD_WORKER_ID", w->id,
                   "SANDBOXD_UNIT", w->suspend.unit, "SANDBOXD_REASON", why, "SANDBOXD_EVENT", "suspend-failed", NULL);
        w->suspend.result = -1;
        /* The launcher removes what a failed attempt wrote, unless it was
         * killed (the unit's timeout) halfway: no image without its marker
         * is ever restored, and none may stay behind either. A complete one
         * is the last resume's, which its sandbox may still be reading. */
        if (!worker_image_complete(w))
                worker_delete_images(w);
        snprintf(message, sizeof(message),
                 "The checkpoint of worker %s failed (%s; runsc is tried up to %d times while the sandbox "
                 "runs on); see journalctl -u %s", w->id, why, SBX_CHECKPOINT_ATTEMPTS, w->suspend.unit);
        waiters_reply(w, "Suspend", SBX_ERROR_SUSPEND_FAILED, message);
        if (w->unit_ended) {
                /* The sandbox is gone with its image: the worker ended. */
                worker_waiters_fail(w, SBX_ERROR_NOT_RUNNING, message);
                worker_unit_gone(w);
                return;
        }
        /* It runs on: so does its endpoint, whose gate went for the
         * checkpoint (what sandboxd held meanwhile goes to it: worker-wake.h),
         * whether this sandboxd drained it or one before a restart did (a
         * socket that listens is left as it is). */
        if (w->gate.service) {
                int k = worker_gate_start(w);
                if (k < 0)
                        log_struct(LOG_ERR, "Failed to start the worker's gate socket again after its failed "
                                   "checkpoint: its endpoint is closed", "SANDBOXD_WORKER_ID", w->id,
                                   "SANDBOXD_REASON", strerror(-k), NULL);
        }
        /* runsc leaves a sandbox it could not save running, and its unit
         * holds its user: the reservation is not needed (nor the disk's
         * keep mark, which running again clears). */
        uid_keep_stop(w);
        checkpoint_memory_max(w, false);
        (void) worker_set_state(w, WORKER_RUNNING);
        /* Recorded as running again: no checkpoint to watch after a restart. */
        if (worker_save_state(w) < 0)
                log_struct(LOG_ERR, "Failed to persist the worker's state after its failed checkpoint",
                           "SANDBOXD_WORKER_ID", w->id, NULL);
        if (w->n_waiters > 0)
                /* OpenChannel calls that came meanwhile: the channel is there. */
                waiters_reply(w, NULL, NULL, NULL);
        if (w->suspend.for_idle) {
                /* The reaper asked: idle still means it goes. */
                (void) worker_stop(w, "idle", NULL);
                return;
        }
        (void) worker_arm_idle_timer(w);
}

static int on_checkpoint_start_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        Worker *w = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(reply);

        w->suspend.call = sd_bus_slot_unref(w->suspend.call);
        if (e && w->state == WORKER_SUSPENDING && w->suspend.result == 0)
                checkpoint_failed(w, e->message ?: e->name);
        return 0;
}

/* The keeper is had (or not): the checkpoint goes, or the suspend fails
 * with the worker running on. */
static void on_keeper_had(Worker *w, int r, const char *why) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *msg = TAKE_PTR(w->suspend.checkpoint);

        /* Over already (the unit ended, a stop came): nothing to start. */
        if (!msg || w->state != WORKER_SUSPENDING || w->suspend.result != 0)
                return;
        if (r < 0) {
                checkpoint_failed(w, why ?: strerror(-r));
                return;
        }
        /* The slot goes with the worker: no reply finds it freed. */
        w->suspend.call = sd_bus_slot_unref(w->suspend.call);
        r = sd_bus_call_async(worker_systemd(w), &w->suspend.call, msg, on_checkpoint_start_reply, w, 0);
        if (r < 0)
                checkpoint_failed(w, strerror(-r));
}

static void suspend_settled(Worker *w) {
        char bytes[32], owner_uid[16];
        uint64_t image = worker_image_bytes(w);

        /* What systemd said about the old unit is no use for the next. */
        w->unit_ended = false;
        w->unit_seen_active = false;
        w->exec_main_code = 0;
        w->exec_main_status = 0;
        free(w->unit_result);
        w->unit_result = NULL;
        worker_forget(w);
        snprintf(bytes, sizeof(bytes), "%" PRIu64, image);
        worker_owner_field(w, owner_uid);
        log_struct(LOG_INFO, "Worker suspended", "SANDBOXD_WORKER_ID", w->id, "SANDBOXD_UNIT", w->unit,
                   "SANDBOXD_IMAGE_BYTES", bytes, "SANDBOXD_EVENT", "suspended", "SANDBOXD_OWNER_UID", owner_uid,
                   NULL);
        if (worker_set_state(w, WORKER_SUSPENDED) < 0)
                return;
        /* Saved as suspended (before, the record said it ran, with no unit). */
        if (worker_save_state(w) < 0)
                log_struct(LOG_ERR, "Failed to persist the suspended worker's state; a restart of sandboxd loses it",
                           "SANDBOXD_WORKER_ID", w->id, NULL);
        w->owned_by->suspended(w);
        waiters_reply(w, "Suspend", NULL, NULL);
        /* An OpenChannel or Resume that came while it was being saved. */
        if (w->n_waiters > 0) {
                SbxError e = {};
                if (worker_resume(w, NULL, &e) < 0)
                        worker_waiters_fail(w, e.name ?: SBX_ERROR_START_FAILED, e.name ? e.message : "Resume failed");
        }
}

static void on_old_units_dropped(UnitDrop *d, bool all_gone, void *userdata) {
        Worker *w = userdata;

        if (!all_gone)
                log_struct(LOG_WARNING, "A unit of the suspended worker is still loaded; its resume may fail to "
                           "make it again", "SANDBOXD_WORKER_ID", w->id, "SANDBOXD_UNIT", unit_drop_pending_first(d),
                           NULL);
        w->suspend.drop = unit_drop_free(w->suspend.drop);
        suspend_settled(w);
}

int worker_drop_units(Worker *w, uint64_t timeout_usec, unit_drop_done_t done, UnitDrop **ret) {
        _cleanup_free_ char *workspace_unit = NULL, *disk_unit = NULL, *exec_socket = NULL;
        /* The unit, the proxy's and the gate's pairs, the workspace's and
         * disk's units, the exec channel, and the NULL at the end. */
        char *units[9] = {};
        size_t n = 0;
        int r;

        units[n++] = w->unit;
        if (w->egress.service) {
                units[n++] = w->egress.socket;
                units[n++] = w->egress.service;
        }
        if (w->gate.service) {
                units[n++] = w->gate.socket;
                units[n++] = w->gate.service;
        }
        if (w->spec.workspace && worker_workspace_unit_name(w->id, &workspace_unit) >= 0)
                units[n++] = workspace_unit;
        if (w->spec.disk_max > 0 && worker_disk_unit_name(w->id, &disk_unit) >= 0)
                units[n++] = disk_unit;
        /* Its exec channel is made again under the same name too. */
        if (w->runtime != SBX_RUNTIME_KATA && worker_exec_socket_unit_name(w->id, &exec_socket) >= 0)
                units[n++] = exec_socket;
        r = unit_drop_start(worker_systemd(w), worker_event(w), worker_unit_stops(w), units, timeout_usec,
                            done, w, ret);
        if (r >= 0)
                (void) unit_drop_set_log_id(*ret, w->id);
        return r;
}

static void suspend_finish(Worker *w) {
        int r;

        w->timers.idle = sd_event_source_disable_unref(w->timers.idle);
        /* Its pipes went with the unit; a resume makes new ones. */
        channel_worker_ended(w->channel);
        w->channel = channel_free(w->channel);
        /* So does it make its unit, the proxy pair and the workspace's
         * mount unit again, under the same names: it is suspended (and a
         * Resume may start) only once systemd holds none of the old ones
         * (unit-drop.h). PartOf= does not stop the pair for a unit that
         * ended by itself; the mount unit stops when unneeded, and is
         * waited for too. */
        r = worker_drop_units(w, SUSPEND_DROP_TIMEOUT_USEC, on_old_units_dropped, &w->suspend.drop);
        if (r >= 0 && worker_save_state(w) < 0)
                log_struct(LOG_ERR, "Failed to persist the suspended worker's state; a restart of sandboxd loses it",
                           "SANDBOXD_WORKER_ID", w->id, NULL);
        if (r < 0) {
                log_struct(LOG_WARNING, "Cannot wait for the suspended worker's units to go; stopping them",
                           "SANDBOXD_WORKER_ID", w->id, "SANDBOXD_REASON", strerror(-r), NULL);
                worker_stop_egress(w);
                suspend_settled(w);
        }
}

void worker_suspend_unit_gone(Worker *w) {
        /* Saved and ended already: what comes now is the old unit's last word. */
        if (w->suspend.drop)
                return;
        w->unit_ended = true;
        if (w->suspend.gate_drain) {
                /* It ended by itself while its gate drained: no checkpoint. */
                w->suspend.gate_drain = unit_halt_free(w->suspend.gate_drain);
                checkpoint_failed(w, "its unit ended while its gate drained");
                return;
        }
        if (w->suspend.result > 0)
                suspend_finish(w);
        /* Otherwise the checkpoint's job decides. */
}

bool worker_suspend_job_removed(Worker *workers, const char *unit, const char *result) {
        char id[WORKER_ID_LEN + 1];
        Worker *w;

        if (!startswith(unit, "sandbox-") || strlen(unit) != strlen("sandbox--suspend.service") + WORKER_ID_LEN ||
            !streq(unit + strlen("sandbox-") + WORKER_ID_LEN, "-suspend.service"))
                return false;
        memcpy(id, unit + strlen("sandbox-"), WORKER_ID_LEN);
        id[WORKER_ID_LEN] = 0;
        for (w = workers; w; w = w->next)
                if (streq(w->id, id))
                        break;
        if (!w || w->state != WORKER_SUSPENDING || w->suspend.result != 0)
                return true;
        if (!streq(result, "done") || !worker_image_complete(w)) {
                char why[64];
                snprintf(why, sizeof(why), "checkpoint job %s", result);
                checkpoint_failed(w, why);
                return true;
        }
        w->suspend.result = 1;
        if (w->unit_ended)
                suspend_finish(w);
        return true;
}

/* The budget W's image may take now, or the named error. */
static int checkpoint_budget(Worker *w, uint64_t *ret, SbxError *error) {
        /* The image is bounded by the owner's checkpoint budget while runsc
         * writes it (the launcher's image file system is that size). */
        *ret = w->owned_by->checkpoint_budget(w);
        if (*ret < SBX_CHECKPOINT_BUDGET_MIN)
                return sbx_error_set(error, -EDQUOT, SBX_ERROR_QUOTA_EXCEEDED,
                                     "Worker %s cannot be suspended: its owner's checkpoint images (or all of this "
                                     "host's) fill their budget ([Quota] CheckpointBytesPerOwner=, "
                                     "CheckpointBytesTotal=); it runs on", w->id);
        return 0;
}

/* Starts the checkpoint's unit, its image within BUDGET. REQUEST (may be
 * NULL) waits for its end; on an error it is not kept: the caller answers it. */
static int checkpoint_start(Worker *w, sd_bus_message *request, uint64_t budget, SbxError *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *msg = NULL;
        const WorkerOwner *o = w->owned_by;
        WorkerUnitParams p = {
                .id = w->id,
                .spec = &w->spec,
                .config = o->config,
                .runtime = w->runtime,
                .launcher_path = *o->launcher_path,
        };
        int r;

        /* "replace": the keeper it requires may still have a stop job from
         * the resume or failed checkpoint just before (uid_keep_stop), which
         * "fail" would take for a destructive transaction and refuse; the
         * keeper's start replaces that stop, as this checkpoint needs. */
        r = systemd_start_transient_unit_new(*o->systemd, &msg, w->suspend.unit, "replace");
        if (r >= 0)
                r = worker_checkpoint_unit_append_properties(msg, &p, budget);
        if (r >= 0)
                r = sd_bus_message_append(msg, "a(sa(sv))", 0);
        if (r >= 0)
                r = waiter_add(w, request);
        if (r < 0)
                return sbx_error_set(error, r, SBX_ERROR_SUSPEND_FAILED, "Failed to set up the checkpoint of %s: %s",
                                     w->id, strerror(-r));
        /* The checkpoint ends the unit, and with it the disk's: that stop
         * must keep the image and the home. */
        if (w->spec.disk_max > 0) {
                r = worker_disk_mark_kept(w->id, true);
                if (r < 0) {
                        if (request)
                                sd_bus_message_unref(w->waiters[--w->n_waiters]);
                        return sbx_error_set(error, r, SBX_ERROR_SUSPEND_FAILED,
                                             "Failed to mark the disk of %s to be kept: %s", w->id, strerror(-r));
                }
        }
        /* Asked first: the checkpoint is sent once systemd has the keeper
         * (on_keeper_had), which it requires and is ordered after. */
        r = uid_keep_start(w, on_keeper_had);
        if (r < 0) {
                if (w->spec.disk_max > 0)
                        (void) worker_disk_mark_kept(w->id, false);
                if (request)
                        sd_bus_message_unref(w->waiters[--w->n_waiters]);
                return sbx_error_set(error, r, SBX_ERROR_SUSPEND_FAILED, "Failed to reserve the UID of %s: %s",
                                     w->id, strerror(-r));
        }
        /* Recorded before the checkpoint starts: a restart of sandboxd while
         * it runs must watch it to its end, not take the sandbox's end for
         * the worker's (adopt.c). Unrecorded, it would lose the worker. */
        r = worker_save_state_suspending(w, w->suspend.unit, budget);
        if (r < 0) {
                uid_keep_stop(w);
                if (w->spec.disk_max > 0)
                        (void) worker_disk_mark_kept(w->id, false);
                if (request)
                        sd_bus_message_unref(w->waiters[--w->n_waiters]);
                return sbx_error_set(error, r, SBX_ERROR_SUSPEND_FAILED, "Failed to record the checkpoint of %s: "
                                     "%s; it runs on", w->id, strerror(-r));
        }
        checkpoint_memory_max(w, true);
        sd_bus_message_unref(w->suspend.checkpoint);
        w->suspend.checkpoint = TAKE_PTR(msg);
        w->suspend.result = 0;
        w->suspend.budget = budget;
        log_struct(LOG_INFO, "Suspending worker", "SANDBOXD_WORKER_ID", w->id, "SANDBOXD_UNIT", w->suspend.unit,
                   "SANDBOXD_EVENT", "suspending", NULL);
        /* After its gate's drain it is suspending already. */
        return w->state == WORKER_SUSPENDING ? 0 : worker_set_state(w, WORKER_SUSPENDING);
}

static void gate_halt_late(const Worker *w, const UnitHalt *h) {
        log_struct(LOG_WARNING, "A unit of the worker's gate did not stop in time before its checkpoint; the "
                   "checkpoint goes on all the same", "SANDBOXD_WORKER_ID", w->id,
                   "SANDBOXD_UNIT", unit_halt_unit(h), NULL);
}

static void on_gate_drained(UnitHalt *h, bool down, void *userdata) {
        Worker *w = userdata;
        SbxError e = {};

        if (!down)
                gate_halt_late(w, h);
        w->suspend.gate_drain = unit_halt_free(w->suspend.gate_drain);
        /* The budget asked for before the drain: asked again now, this
         * suspending worker's own reservation would count against it. */
        if (checkpoint_start(w, NULL, w->suspend.budget, &e) < 0)
                checkpoint_failed(w, e.name ? e.message : "its checkpoint could not start");
}

/* Its socket is down: nothing new reaches the gate. */
static void on_gate_socket_down(UnitHalt *h, bool down, void *userdata) {
        Worker *w = userdata;
        int r;

        w->suspend.gate_drain = unit_halt_free(w->suspend.gate_drain);
        if (!down) {
                /* Still listening (or its state unknown): binding over it, or
                 * a checkpoint with a gate that may start, are both wrong. */
                checkpoint_failed(w, "its gate's socket did not stop");
                return;
        }
        /* Requests from now on are held for its wake (worker-wake.h). */
        worker_wake_listen(w);
        r = worker_gate_halt(w, true, SUSPEND_DROP_TIMEOUT_USEC, on_gate_drained, &w->suspend.gate_drain);
        if (r < 0)
                checkpoint_failed(w, "its gate could not be stopped");
}

int worker_suspend(Worker *w, sd_bus_message *request, SbxError *error) {
        uint64_t budget;
        int r;

        r = worker_check_suspendable(&w->spec, w->runtime, error);
        if (r < 0)
                return r;
        if (worker_secrets_missing(w))
                return sbx_error_set(error, -EOPNOTSUPP, SBX_ERROR_NOT_SUPPORTED,
                                     "Worker %s has Credentials or an Environment of which sandboxd kept no copy "
                                     "(a warm-pool sandbox gets them from its job), so a resumed unit could not "
                                     "be given them again", w->id);
        if (w->state == WORKER_SUSPENDING)
                return waiter_add(w, request);
        if (w->state != WORKER_RUNNING)
                return sbx_error_set(error, -ESRCH, w->state == WORKER_SUSPENDED ? SBX_ERROR_SUSPENDED :
                                     SBX_ERROR_NOT_RUNNING, "Worker %s is %s, not running", w->id,
                                     worker_state_to_string(w->state));
        r = checkpoint_budget(w, &budget, error);
        if (r < 0)
                return r;
        /* Named before either way to the checkpoint: a failure during the
         * gate's drain cites it too. */
        if (!w->suspend.unit && asprintf(&w->suspend.unit, "sandbox-%s-suspend.service", w->id) < 0)
                return -ENOMEM;
        w->suspend.for_idle = !request && !error;
        if (!w->gate.service)
                return checkpoint_start(w, request, budget, error);
        /* An endpoint: its gate stops taking connections and answers the
         * requests under way before the sandbox is paused, so no inbound
         * handshake is caught by runsc's checkpoint (launch-suspend.c) and
         * no request is cut by the suspend. */
        r = waiter_add(w, request);
        if (r >= 0)
                r = worker_gate_halt(w, false, SUSPEND_DROP_TIMEOUT_USEC, on_gate_socket_down, &w->suspend.gate_drain);
        if (r < 0) {
                if (request && w->n_waiters > 0 && w->waiters[w->n_waiters - 1] == request)
                        sd_bus_message_unref(w->waiters[--w->n_waiters]);
                return sbx_error_set(error, r, SBX_ERROR_SUSPEND_FAILED, "Failed to stop the gate of %s before its "
                                     "checkpoint: %s; it runs on", w->id, strerror(-r));
        }
        w->suspend.result = 0;
        /* Reserved from now on, as a checkpoint's (manager-quota.c). */
        w->suspend.budget = budget;
        log_struct(LOG_INFO, "Suspending worker: its gate answers the requests under way first",
                   "SANDBOXD_WORKER_ID", w->id, "SANDBOXD_UNIT", w->gate.service, "SANDBOXD_EVENT", "gate-drain",
                   NULL);
        return worker_set_state(w, WORKER_SUSPENDING);
}

/* ---- resume ------------------------------------------------------------- */

int worker_resume(Worker *w, sd_bus_message *request, SbxError *error) {
        char why[256];
        int r;

        if (w->state == WORKER_RUNNING && request)
                return 1;               /* nothing to do: answered now */
        if (w->state == WORKER_SUSPENDING || w->state == WORKER_RESUMING)
                return waiter_add(w, request);
        if (w->state != WORKER_SUSPENDED)
                return sbx_error_set(error, -ESRCH, SBX_ERROR_NOT_RUNNING, "Worker %s is %s, not suspended", w->id,
                                     worker_state_to_string(w->state));
        if (!worker_image_complete(w))
                return sbx_error_set(error, -ENOENT, SBX_ERROR_START_FAILED,
                                     "The checkpoint image of worker %s is missing in " SBX_SUSPEND_ROOT, w->id);
        /* Under another UID systemd would chown the home to it, and the
         * launcher refuse the image: nothing is started, nothing changes. */
        r = uid_keep_check(w, why, sizeof(why));
        if (r < 0) {
                worker_resume_log_failed(w, why);
                return sbx_error_set(error, r, SBX_ERROR_UID_TAKEN,
                                     "Worker %s cannot be resumed now: %s; it is still suspended, with its image and "
                                     "home: Resume it again once that UID is free, or Stop it", w->id, why);
        }
        r = waiter_add(w, request);
        if (r < 0)
                return r;
        w->suspend.restore = true;
        /* Unwatched (it logs why), the resume is done at its job as before. */
        (void) worker_resume_watch(w);
        r = worker_start_resumed_unit(w, error);
        if (r < 0) {
                /* Nothing was made: it is as suspended as before. */
                w->suspend.restore = false;
                worker_resume_unwatch(w);
                channel_worker_ended(w->channel);
                w->channel = channel_free(w->channel);
                if (request) {
                        /* The caller answers this one with the error. */
                        sd_bus_message_unref(w->waiters[--w->n_waiters]);
                }
                if (error && error->name) {
                        worker_resume_log_failed(w, error->message);
                        if (strlen(error->message) + 64 < sizeof(error->message))
                                strcat(error->message, "; it is still suspended: Resume it again, or Stop it");
                } else
                        worker_resume_log_failed(w, strerror(-r));
                return r;
        }
        log_struct(LOG_INFO, "Resuming worker", "SANDBOXD_WORKER_ID", w->id, "SANDBOXD_UNIT", w->unit,
                   "SANDBOXD_EVENT", "resuming", NULL);
        r = worker_set_state(w, WORKER_RESUMING);
        if (r < 0)
                return r;
        /* The new channel goes to systemd's fd store now, before the image
         * can go: a restart of sandboxd after the restored sandbox ran
         * adopts it as running (adopt.c). The record still says suspended. */
        r = worker_persist_channel(w);
        if (r < 0)
                log_struct(LOG_ERR, "Failed to persist the resuming worker's channel; a restart of sandboxd "
                           "during the resume loses it", "SANDBOXD_WORKER_ID", w->id,
                           "SANDBOXD_REASON", strerror(-r), NULL);
        return 0;
}

void worker_resume_done(Worker *w) {
        _cleanup_free_ char *priv = NULL;
        struct stat st;
        char uid[16];
        int r;

        w->suspend.restore = false;
        /* systemd reuses the UID that owns the state directory if it is free
         * (its dynamic-user allocation tries the directory's owner first); the
         * launcher refused to restore under any other. */
        if (asprintf(&priv, SBX_PRIVATE_STATE_ROOT "/%s", w->id) >= 0 && stat(priv, &st) == 0 && st.st_uid != w->uid) {
                log_struct(LOG_WARNING, "The resumed worker's unit got another UID", "SANDBOXD_WORKER_ID", w->id, NULL);
                w->uid = st.st_uid;
        }
        worker_start_idle_clock(w);
        r = worker_persist(w);
        if (r < 0)
                log_struct(LOG_ERR, "Failed to persist the worker's state; it will not survive a restart of sandboxd",
                           "SANDBOXD_WORKER_ID", w->id, "SANDBOXD_REASON", strerror(-r), NULL);
        snprintf(uid, sizeof(uid), "%u", (unsigned) w->uid);
        log_struct(LOG_INFO, "Worker resumed", "SANDBOXD_WORKER_ID", w->id, "SANDBOXD_UNIT", w->unit,
                   "SANDBOXD_WORKER_UID", uid, "SANDBOXD_EVENT", "resumed", NULL);
        /* Its unit holds its user now. */
        uid_keep_stop(w);
        if (worker_set_state(w, WORKER_RUNNING) < 0)
                return;
        waiters_reply(w, NULL, NULL, NULL);
        if (w->unit_ended)
                worker_unit_gone(w);
}
