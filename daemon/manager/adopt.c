/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-id128.h>
#include <systemd/sd-login.h>
#include <time.h>

#include "adopt.h"
#include "egress-policy.h"
#include "event-util.h"
#include "fdstore.h"
#include "pool.h"
#include "rmrf.h"
#include "suspend-keep.h"
#include "uid-keep.h"
#include "systemd-bus.h"
#include "unit-props.h"
#include "worker-disk.h"
#include "worker-broker.h"
#include "worker-gate.h"
#include "worker-secrets.h"
#include "worker-state-file.h"
#include "worker-suspend.h"



static void daemon_fds_close(ChannelDaemonFds *fds) {
        fds->stdin_fd = safe_close(fds->stdin_fd);
        fds->stdout_fd = safe_close(fds->stdout_fd);
        fds->stderr_fd = safe_close(fds->stderr_fd);
}

void manager_save_all(Manager *m) {
        for (Worker *w = m->workers; w; w = w->next) {
                int r;
                if (!w->exported || !worker_is_alive(w))
                        continue;
                r = worker_save_state(w);
                if (r < 0)
                        log_warning_errno(r, "Failed to save the state of worker %s: %m", w->id);
        }
}

bool manager_stop_is_final(Manager *m) {
        _cleanup_free_ char *unit = NULL, *type = NULL;

        if (sd_pid_get_unit(0, &unit) < 0 || systemd_unit_job_type(m->systemd, unit, &type) < 0)
                return false;
        /* No job: a signal from someone else, not systemd's stop; the workers
         * stay, and a start that cannot account for them cleans them up. */
        return type && streq(type, "stop");
}

/* ---- start-up ---------------------------------------------------------- */

/* The boot ID as the service's ExecStartPre= (outside the daemon's mount
 * namespace) copied it: the daemon's own /proc is a new instance
 * (ProtectProc=), which in a container shows the host's boot ID rather than
 * the one the container manager mounted over it. The kernel's, read by the
 * daemon itself, only when that copy is missing. */
static int read_current_boot_id(sd_id128_t *ret) {
        _cleanup_fclose_ FILE *f = NULL;
        char line[64];

        f = fopen(SBX_CURRENT_BOOT_ID_FILE, "re");
        if (!f) {
                int e = errno;
                return sd_id128_get_boot(ret) >= 0 ? 0 : -e;
        }
        if (!fgets(line, sizeof(line), f))
                return -EBADMSG;
        line[strcspn(line, "\n")] = 0;
        return sd_id128_from_string(line, ret);
}

static int read_boot_ids(char current[static 33], char recorded[static 33]) {
        _cleanup_fclose_ FILE *f = NULL;
        sd_id128_t boot;
        int r;

        recorded[0] = 0;
        r = read_current_boot_id(&boot);
        if (r < 0)
                return r;
        sd_id128_to_string(boot, current);
        f = fopen(SBX_BOOT_ID_FILE, "re");
        if (f && !fgets(recorded, 33, f))
                recorded[0] = 0;
        recorded[strcspn(recorded, "\n")] = 0;
        return 0;
}

static int write_boot_id(const char *id) {
        _cleanup_close_ int fd = -1;
        char line[34];

        snprintf(line, sizeof(line), "%s\n", id);
        fd = open(SBX_BOOT_ID_FILE ".tmp", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return -errno;
        if (write(fd, line, strlen(line)) != (ssize_t) strlen(line) || fsync(fd) < 0)
                return -errno ?: -EIO;
        if (rename(SBX_BOOT_ID_FILE ".tmp", SBX_BOOT_ID_FILE) < 0)
                return -errno;
        return 0;
}

typedef struct Unaccounted {
        char id[WORKER_ID_LEN + 1];
        const char *reason;
        bool announce;                  /* a client may have known it: WorkerRemoved */
} Unaccounted;

typedef struct Restore {
        Manager *m;
        FdStore fds;
        char **units;                   /* every loaded sandbox-* unit */
        char **states;                  /* their ActiveState, index for index */
        char **adopted;                 /* worker IDs */
        Unaccounted *lost;
        size_t n_lost;
} Restore;

static void restore_done(Restore *r) {
        fdstore_done(&r->fds);
        strv_free(r->units);
        strv_free(r->states);
        strv_free(r->adopted);
        free(r->lost);
}

static int restore_list_units(Restore *rs) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        int r;

        r = systemd_list_units_by_pattern(rs->m->systemd, "sandbox-*", &e, &rs->units, &rs->states);
        if (r < 0)
                return log_error_errno(r, "Failed to list sandbox units: %s", e.message ?: strerror(-r));
        return 0;
}

static const char *restore_unit_state(const Restore *rs, const char *unit) {
        for (size_t i = 0; rs->units && rs->units[i]; i++)
                if (streq(rs->units[i], unit))
                        return rs->states[i];
        return NULL;
}

static bool restore_handled(const Restore *rs, const char *id) {
        if (strv_contains(rs->adopted, id))
                return true;
        for (size_t i = 0; i < rs->n_lost; i++)
                if (streq(rs->lost[i].id, id))
                        return true;
        return false;
}

static int restore_lose(Restore *rs, const char *id, const char *reason, bool announce) {
        Unaccounted *l = realloc(rs->lost, (rs->n_lost + 1) * sizeof(*l));

        if (!l)
                return -ENOMEM;
        rs->lost = l;
        l = &rs->lost[rs->n_lost++];
        *l = (Unaccounted) { .reason = reason, .announce = announce };
        snprintf(l->id, sizeof(l->id), "%s", id);
        log_struct(LOG_WARNING, "Cannot account for a worker after a restart; stopping it and wiping its home",
                   "SANDBOXD_WORKER_ID", id, "SANDBOXD_REASON", reason, NULL);
        return 0;
}

static bool restore_has_fds(const Restore *rs, const char *id) {
        char name[64];

        for (size_t i = 0; i < WORKER_N_STDIO; i++) {
                worker_fd_name(name, sizeof(name), id, i);
                if (fdstore_has(&rs->fds, name))
                        return true;
        }
        return false;
}

/* The proxy pair's unit names and its policy credential as saved, and the
 * spec's allow-list and mode from that policy: a resume (after a suspend
 * since the restart, or of a worker that was suspended already) makes the
 * proxy's units again from the spec, and a unit started without them would
 * have no way out at all. Services come back with their secrets through
 * worker_broker_restore(). */
static int restore_egress(Worker *w, WorkerRecord *rec) {
        _cleanup_egress_policy_ EgressPolicy *p = NULL;
        int r;

        w->egress.socket = TAKE_PTR(rec->egress_socket);
        w->egress.service = TAKE_PTR(rec->egress_service);
        if (!rec->egress_policy)
                return 0;
        w->egress.policy.size = strlen(rec->egress_policy);
        w->egress.policy.data = (uint8_t *) TAKE_PTR(rec->egress_policy);
        w->egress.policy.name = (char *) "egress-policy";
        r = egress_policy_from_json((const char *) w->egress.policy.data, &p);
        if (r < 0)
                return r;
        w->spec.egress_report_only = p->mode == EGRESS_MODE_REPORT;
        for (size_t i = 0; i < p->n_allow; i++) {
                char buf[EGRESS_HOST_MAX + 16];

                r = egress_pattern_format(&p->allow[i], buf, sizeof(buf));
                if (r >= 0)
                        r = strv_extend(&w->spec.egress_allow, buf);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int restore_adopt(Restore *rs, WorkerRecord *rec) {
        Manager *m = rs->m;
        int fd[WORKER_N_STDIO];
        ChannelDaemonFds fds;
        WorkerSpec spec;
        _cleanup_(worker_freep) Worker *w = NULL;
        char name[64];
        int r;

        for (size_t i = 0; i < ELEMENTSOF(fd); i++) {
                worker_fd_name(name, sizeof(name), rec->id, i);
                fd[i] = fdstore_take(&rs->fds, name);
        }
        fds = (ChannelDaemonFds) { .stdin_fd = fd[0], .stdout_fd = fd[1], .stderr_fd = fd[2] };
        if (fds.stdout_fd < 0 || fds.stderr_fd < 0) {
                daemon_fds_close(&fds);
                return -EBADF;
        }

        worker_spec_init(&spec);
        spec.class = rec->class;
        spec.requested_class = rec->requested_class;
        spec.origin = TAKE_PTR(rec->origin);
        spec.limits = rec->limits;
        if (rec->has_disk_max) {
                spec.set |= SPEC_HAS_DISK_MAX;
                spec.disk_max = rec->disk_max;
        }
        spec.egress_rate_bps = rec->egress_rate_bps;
        if (rec->workspace) {
                spec.set |= SPEC_HAS_WORKSPACE;
                spec.workspace = TAKE_PTR(rec->workspace);
        }
        /* A suspend after the restart saves them again, and a resume needs them. */
        if (rec->argv) {
                spec.set |= SPEC_HAS_ARGV;
                spec.argv = TAKE_PTR(rec->argv);
        }
        spec.idle_suspend = rec->idle_suspend;
        r = worker_new_with_id(&w, &m->worker_owner, &spec, rec->runtime, rec->id);
        worker_spec_done(&spec);
        if (r < 0) {
                daemon_fds_close(&fds);
                return r;
        }
        w->owner = rec->owner;
        w->uid = rec->uid;
        w->created_realtime = rec->created_realtime;
        /* Named, its checkpoint was under way (manager_adopt_worker). */
        if (rec->suspending) {
                w->suspend.unit = TAKE_PTR(rec->suspending);
                w->suspend.budget = rec->checkpoint_budget;
        }
        r = restore_egress(w, rec);
        if (r >= 0)
                r = worker_gate_restore(w, TAKE_PTR(rec->gate_config), TAKE_PTR(rec->endpoint_name), rec->gate_port, &rs->fds);
        if (r < 0) {
                daemon_fds_close(&fds);
                return r;
        }
        if (rec->pooled) {
                /* Its run time is sandboxd's to keep, from the claim on. */
                uint64_t now = now_usec(CLOCK_REALTIME), end = rec->created_realtime + rec->limits.runtime_max_usec;
                w->start.mode = "pooled";
                r = pool_arm_runtime_timer(w, end > now ? end - now : 0);
                if (r < 0) {
                        daemon_fds_close(&fds);
                        return r;
                }
        }
        /* The proxy reloads its secrets whenever it restarts: a worker whose
         * secrets were not kept could not be served again. */
        r = worker_broker_restore(w, &rs->fds);
        if (r >= 0 && rec->kept_secrets)
                r = worker_secrets_restore(w, &rs->fds);
        if (r < 0) {
                daemon_fds_close(&fds);
                return r;
        }
        return manager_adopt_worker(m, TAKE_PTR(w), &fds, rec->last_activity_monotonic);
}

/* A suspended worker has no unit and no channel, only its home and its
 * checkpoint image: it is listed again as suspended, to be resumed. */
/* The record says suspended until a resume is done, and a resume lasts the
 * whole restore (its unit is Type=notify): a unit that runs for a suspended
 * record is a resume that sandboxd stopped in the middle of. Nothing may
 * run unmanaged for it; once its units are gone, the image decides: still
 * whole, the worker is suspended as it was; removed, the restore ran and the
 * worker is lost (image-missing). */
static int restore_stop_interrupted_resume(Restore *rs, const char *id) {
        _cleanup_strv_free_ char **units = NULL;
        static const char * const suffixes[] = { ".service", "-egress.socket", "-egress.service",
                                                 "-gate.socket", "-gate.service", "-workspace.service" };

        log_struct(LOG_WARNING, "A resume was under way when sandboxd stopped; its units go first",
                   "SANDBOXD_WORKER_ID", id, "SANDBOXD_EVENT", "resume-interrupted", NULL);
        for (size_t i = 0; i < ELEMENTSOF(suffixes); i++) {
                char u[sizeof("sandbox-") + WORKER_ID_LEN + sizeof("-workspace.service")];
                snprintf(u, sizeof(u), "sandbox-%s%s", id, suffixes[i]);
                if (strv_extend(&units, u) < 0)
                        return -ENOMEM;
        }
        return manager_stop_units(rs->m, units);
}

static int restore_adopt_suspended(Restore *rs, WorkerRecord *rec) {
        _cleanup_free_ char *marker = NULL;
        Manager *m = rs->m;
        WorkerSpec spec;
        _cleanup_(worker_freep) Worker *w = NULL;
        int r;

        if (asprintf(&marker, SBX_SUSPEND_ROOT "/%s/" SBX_IMAGE_MARKER, rec->id) < 0)
                return -ENOMEM;
        if (access(marker, F_OK) < 0)
                return -ENOENT;
        worker_spec_init(&spec);
        spec.class = rec->class;
        spec.requested_class = rec->requested_class;
        spec.origin = TAKE_PTR(rec->origin);
        spec.limits = rec->limits;
        spec.argv = TAKE_PTR(rec->argv);
        spec.set |= SPEC_HAS_ARGV;
        spec.idle_suspend = rec->idle_suspend;
        if (rec->has_disk_max) {
                spec.set |= SPEC_HAS_DISK_MAX;
                spec.disk_max = rec->disk_max;
        }
        spec.egress_rate_bps = rec->egress_rate_bps;
        /* Its home is the workspace it was suspended on: the resumed unit
         * mounts it again, and no other worker may take it meanwhile. */
        if (rec->workspace) {
                spec.set |= SPEC_HAS_WORKSPACE;
                spec.workspace = TAKE_PTR(rec->workspace);
        }
        r = worker_new_with_id(&w, &m->worker_owner, &spec, rec->runtime, rec->id);
        worker_spec_done(&spec);
        if (r < 0)
                return r;
        w->owner = rec->owner;
        w->uid = rec->uid;
        w->created_realtime = rec->created_realtime;
        /* A resume hands them to the new unit: without them it could not. */
        r = restore_egress(w, rec);
        if (r >= 0)
                r = worker_gate_restore(w, TAKE_PTR(rec->gate_config), TAKE_PTR(rec->endpoint_name), rec->gate_port, &rs->fds);
        if (r >= 0)
                r = worker_broker_restore(w, &rs->fds);
        if (r >= 0 && rec->kept_secrets)
                r = worker_secrets_restore(w, &rs->fds);
        if (r >= 0)
                r = worker_watch_unit(w);
        if (r < 0)
                return r;
        worker_restore_suspended(w);
        manager_add_worker(m, w);
        manager_workspace_hold(m, w);
        log_struct(LOG_INFO, "Suspended worker re-adopted after a restart of sandboxd",
                   "SANDBOXD_WORKER_ID", w->id, "SANDBOXD_UNIT", w->unit, NULL);
        TAKE_PTR(w);    /* the manager's since manager_add_worker() */
        return 0;
}

/* The keeper of an adopted worker's UID (uid-keep.h), if it runs: a
 * suspended worker keeps it, any other needs it no more. None is started
 * here: a unit that does not share the user with a running one gets a UID of
 * systemd's choosing, not necessarily the worker's (the resume checks it). */
static void restore_uid_keep(Restore *rs, const char *id) {
        _cleanup_free_ char *unit = NULL;
        Worker *w = manager_find_worker(rs->m, id);
        const char *state;

        if (!w || uid_keep_unit_name(id, &unit) < 0)
                return;
        state = restore_unit_state(rs, unit);
        w->uid_kept = state && !streq(state, "inactive") && !streq(state, "failed");
        /* A checkpoint unit requires its keeper: it stays until the end. */
        if (w->state != WORKER_SUSPENDED && w->state != WORKER_SUSPENDING)
                uid_keep_stop(w);
}

/* A suspend that sandboxd stopped in the middle of: the record named its
 * checkpoint unit before it started. The worker is adopted as suspending,
 * its sandbox's end (which the checkpoint causes) is no end of the worker,
 * and the checkpoint's job decides as it would have: saved, the worker is
 * suspended with its image; failed with the sandbox running, it runs on;
 * failed with the sandbox gone, it ended. A job that ended while sandboxd was
 * down sent its JobRemoved to nobody: the unit's state and the image's
 * marker stand in for it. One that runs on is heard of (the match and
 * Subscribe came before the restore). */
static int restore_adopt_suspending(Restore *rs, WorkerRecord *rec) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        _cleanup_free_ char *path = NULL, *state = NULL;
        char id[WORKER_ID_LEN + 1];
        Worker *w;
        int r;

        memcpy(id, rec->id, sizeof(id));
        r = restore_adopt(rs, rec);
        if (r < 0)
                return r;
        r = strv_extend(&rs->adopted, id);
        if (r < 0)
                return r;
        restore_uid_keep(rs, id);
        w = manager_find_worker(rs->m, id);
        if (!w || w->state != WORKER_SUSPENDING)
                return 0;
        log_struct(LOG_WARNING, "A suspend was under way when sandboxd stopped: adopted as suspending, its "
                   "checkpoint decides", "SANDBOXD_WORKER_ID", id, "SANDBOXD_UNIT", w->suspend.unit,
                   "SANDBOXD_EVENT", "suspend-adopted", NULL);
        if (systemd_unit_path(w->suspend.unit, &path) < 0)
                return -ENOMEM;
        r = systemd_unit_get_string(rs->m->systemd, path, "ActiveState", &e, &state);
        if (r >= 0 && !streq(state, "inactive") && !streq(state, "failed"))
                return 0;
        (void) worker_suspend_job_removed(rs->m->workers, w->suspend.unit,
                                          r >= 0 && streq(state, "inactive") && worker_image_complete(w) ?
                                          "done" : "failed");
        return 0;
}

/* Whether the launcher removed ID's image (its marker first goes with it):
 * a restored sandbox ran (launch-guard.c). */
static bool restore_image_used(const char *id) {
        _cleanup_free_ char *marker = NULL;

        if (asprintf(&marker, SBX_SUSPEND_ROOT "/%s/" SBX_IMAGE_MARKER, id) < 0)
                return false;
        return access(marker, F_OK) < 0 && errno == ENOENT;
}

/* A resume that sandboxd stopped in the middle of, after the restored
 * sandbox ran: its image went, the unit runs (or is about to report it
 * does), and the channel's ends were stored at the resume's start. It is
 * adopted as running, as the resume would have ended. */
static int restore_adopt_resumed(Restore *rs, WorkerRecord *rec) {
        char id[WORKER_ID_LEN + 1];
        Worker *w;
        int r;

        memcpy(id, rec->id, sizeof(id));
        rec->suspended = false;
        r = restore_adopt(rs, rec);
        if (r < 0)
                return r;
        w = manager_find_worker(rs->m, id);
        if (w && w->spec.disk_max > 0)
                (void) worker_disk_mark_kept(w->id, false);
        if (w && worker_is_alive(w) && worker_save_state(w) < 0)
                log_struct(LOG_ERR, "Failed to persist the resumed worker's state; a restart of sandboxd loses it",
                           "SANDBOXD_WORKER_ID", id, NULL);
        log_struct(LOG_WARNING, "A resume was under way when sandboxd stopped, and its sandbox ran: adopted as "
                   "running", "SANDBOXD_WORKER_ID", id, "SANDBOXD_EVENT", "resume-adopted", NULL);
        return 0;
}

/* Every worker with a state file: adopted if its unit runs and its channel
 * was kept (or, suspended, its image is complete), lost otherwise. */
static int restore_records(Restore *rs) {
        _cleanup_(closedirp) DIR *d = opendir(SBX_WORKER_STATE_DIR);
        struct dirent *de;
        int r;

        if (!d)
                return errno == ENOENT ? 0 : -errno;
        while ((de = readdir(d))) {
                _cleanup_(worker_record_done) WorkerRecord rec;
                const char *state;
                char why[256] = "";

                worker_record_init(&rec);
                if (de->d_name[0] == '.')
                        continue;
                if (!worker_id_is_valid(de->d_name)) {
                        log_struct(LOG_WARNING, "Removing a file in the state directory that names no worker",
                                   "SANDBOXD_PATH", de->d_name, NULL);
                        (void) worker_record_remove(SBX_WORKER_STATE_DIR, de->d_name);
                        continue;
                }
                r = worker_record_load(SBX_WORKER_STATE_DIR, de->d_name, &rec, why, sizeof(why));
                if (r == -ENOMEM)
                        return r;
                if (r < 0) {
                        log_struct(LOG_ERR, "Refusing a worker's state file",
                                   "SANDBOXD_WORKER_ID", de->d_name, "SANDBOXD_REASON", why[0] ? why : strerror(-r),
                                   NULL);
                        r = restore_lose(rs, de->d_name, "state-unreadable", true);
                        if (r < 0)
                                return r;
                        continue;
                }
                state = restore_unit_state(rs, rec.unit);
                if (rec.suspended && state && (streq(state, "active") || streq(state, "activating") ||
                                               streq(state, "reloading")) &&
                    restore_image_used(rec.id) && restore_has_fds(rs, rec.id)) {
                        char id[WORKER_ID_LEN + 1];
                        memcpy(id, rec.id, sizeof(id));
                        r = restore_adopt_resumed(rs, &rec);
                        if (r >= 0)
                                r = strv_extend(&rs->adopted, id);
                        else
                                r = restore_lose(rs, id, r == -ENOKEY ? "secret-lost" : "adoption-failed", true);
                        if (r >= 0)
                                restore_uid_keep(rs, id);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (rec.suspending && !rec.suspended) {
                        char id[WORKER_ID_LEN + 1];
                        memcpy(id, rec.id, sizeof(id));
                        if (!restore_has_fds(rs, id))
                                r = restore_lose(rs, id, "channel-lost", true);
                        else {
                                r = restore_adopt_suspending(rs, &rec);
                                if (r < 0 && r != -ENOMEM && !restore_handled(rs, id))
                                        r = restore_lose(rs, id, r == -ENOKEY ? "secret-lost" : "adoption-failed",
                                                         true);
                        }
                        if (r < 0)
                                return r;
                        continue;
                }
                if (rec.suspended && state && !streq(state, "inactive") && !streq(state, "failed")) {
                        r = restore_stop_interrupted_resume(rs, rec.id);
                        if (r < 0)
                                return r;
                }
                if (rec.suspended) {
                        char id[WORKER_ID_LEN + 1];
                        memcpy(id, rec.id, sizeof(id));
                        r = restore_adopt_suspended(rs, &rec);
                        /* Once adopted, a failure (ENOMEM) is returned, never
                         * taken for a worker to lose: it is in m->workers. */
                        if (r >= 0) {
                                r = strv_extend(&rs->adopted, id);
                                if (r >= 0)
                                        restore_uid_keep(rs, id);
                        } else
                                r = restore_lose(rs, id, r == -ENOENT ? "image-missing" :
                                                 r == -ENOKEY ? "secret-lost" : "adoption-failed", true);
                } else if (!state || !(streq(state, "active") || streq(state, "reloading")))
                        r = restore_lose(rs, rec.id, "unit-gone", true);
                else if (!restore_has_fds(rs, rec.id))
                        r = restore_lose(rs, rec.id, "channel-lost", true);
                else {
                        char id[WORKER_ID_LEN + 1];
                        memcpy(id, rec.id, sizeof(id));
                        r = restore_adopt(rs, &rec);
                        if (r >= 0) {
                                r = strv_extend(&rs->adopted, id);
                                if (r >= 0)
                                        restore_uid_keep(rs, id);
                        } else
                                r = restore_lose(rs, id, r == -ENOKEY ? "secret-lost" : "adoption-failed", true);
                }
                if (r < 0)
                        return r;
        }
        return 0;
}

/* [Suspend] KeepAcrossReboot=: the suspended workers whose record is kept
 * beside their image and that nothing else accounted for (after a boot, or
 * a stop of sandboxd), re-created as suspended; a record that does not check
 * out goes with its image. */
static int restore_kept(Restore *rs) {
        _cleanup_(closedirp) DIR *d = NULL;
        Manager *m = rs->m;
        struct dirent *de;
        int r;

        if (!m->config.suspend_keep_across_reboot)
                return 0;
        d = opendir(SBX_SUSPEND_ROOT);
        if (!d)
                return errno == ENOENT ? 0 : -errno;
        while ((de = readdir(d))) {
                _cleanup_(worker_record_done) WorkerRecord rec;
                _cleanup_free_ char *dir = NULL;
                char id[WORKER_ID_LEN + 1];
                const char *reason = NULL;
                Worker *w;

                worker_record_init(&rec);
                if (!worker_id_is_valid(de->d_name) || restore_handled(rs, de->d_name) ||
                    !suspend_keep_has_record(de->d_name))
                        continue;
                memcpy(id, de->d_name, sizeof(id));
                if (asprintf(&dir, SBX_SUSPEND_ROOT "/%s", id) < 0)
                        return -ENOMEM;
                r = suspend_keep_check(m, id, &rec, &reason);
                if (r == -ENOMEM)
                        return r;
                if (r >= 0) {
                        r = restore_adopt_suspended(rs, &rec);
                        if (r == -ENOMEM)
                                return r;
                        if (r < 0)
                                log_struct(LOG_ERR, "Failed to re-create a suspended worker kept across a reboot",
                                           "SANDBOXD_WORKER_ID", id, "SANDBOXD_REASON", strerror(-r), NULL);
                }
                if (r < 0) {
                        r = rm_rf(dir);
                        if (r < 0)
                                log_warning_errno(r, "Failed to remove %s: %m", dir);
                        continue;
                }
                r = strv_extend(&rs->adopted, id);
                if (r < 0)
                        return r;
                w = manager_find_worker(m, id);
                r = w ? worker_save_state(w) : -ESRCH;
                if (r < 0)
                        log_struct(LOG_ERR, "Failed to persist a kept worker's state; a restart of sandboxd loses it",
                                   "SANDBOXD_WORKER_ID", id, NULL);
                log_struct(LOG_INFO, "Suspended worker kept across a reboot re-created", "SANDBOXD_WORKER_ID", id,
                           "SANDBOXD_WORKSPACE", w ? w->spec.workspace : "", "SANDBOXD_EVENT", "kept-restored", NULL);
        }
        return 0;
}

/* sandbox-<id>.service, -egress.socket, -egress.service: the worker ID. */
static bool unit_worker_id(const char *unit, char id[static WORKER_ID_LEN + 1]) {
        if (!startswith(unit, "sandbox-") || strlen(unit) < strlen("sandbox-") + WORKER_ID_LEN)
                return false;
        memcpy(id, unit + strlen("sandbox-"), WORKER_ID_LEN);
        id[WORKER_ID_LEN] = 0;
        return worker_id_is_valid(id);
}

/* NAME is an adopted worker's: its ID, or the staging file system of its
 * checkpoint (launch-suspend.c), which may be under way: removed, it would
 * be detached under the launcher, whose copy-out then fails after runsc
 * ended the sandbox. The launcher replaces a stale one at its next start. */
static bool restore_keeps(char * const *keep, const char *name) {
        char id[WORKER_ID_LEN + 1];
        const char *rest;

        if (strv_contains(keep, name))
                return true;
        if (name[0] != '.' || strlen(name) < 1 + WORKER_ID_LEN)
                return false;
        memcpy(id, name + 1, WORKER_ID_LEN);
        id[WORKER_ID_LEN] = 0;
        rest = name + 1 + WORKER_ID_LEN;
        return (streq(rest, ".staging") || streq(rest, ".staging.img")) && strv_contains(keep, id);
}

static int restore_remove_unknown(const char *dir, char * const *keep) {
        _cleanup_(closedirp) DIR *d = opendir(dir);
        struct dirent *de;

        if (!d)
                return errno == ENOENT ? 0 : -errno;
        while ((de = readdir(d))) {
                _cleanup_free_ char *path = NULL;
                int r;

                if (streq(de->d_name, ".") || streq(de->d_name, "..") || restore_keeps(keep, de->d_name))
                        continue;
                if (asprintf(&path, "%s/%s", dir, de->d_name) < 0)
                        return -ENOMEM;
                r = rm_rf(path);
                if (r < 0)
                        log_warning_errno(r, "Failed to remove %s: %m", path);
        }
        return 0;
}

static int restore_after_restart(Restore *rs) {
        _cleanup_strv_free_ char **stop = NULL;
        Manager *m = rs->m;
        char id[WORKER_ID_LEN + 1];
        int r;

        r = restore_list_units(rs);
        if (r < 0)
                return r;
        r = restore_records(rs);
        if (r < 0)
                return r;
        r = restore_kept(rs);
        if (r < 0)
                return r;
        /* Units of no adopted worker go, except a cleanup that is under way:
         * a unit without state, the proxies of a lost worker, an earlier
         * daemon's probes, strays. */
        for (size_t i = 0; rs->units && rs->units[i]; i++) {
                const char *u = rs->units[i];
                bool has_id = unit_worker_id(u, id);

                if (has_id && strv_contains(rs->adopted, id))
                        continue;
                if (has_id && strstr(u, "-cleanup.service"))
                        continue;
                if (has_id && !restore_handled(rs, id) && streq(u + strlen("sandbox-") + WORKER_ID_LEN, ".service")) {
                        r = restore_lose(rs, id, "state-missing", restore_has_fds(rs, id));
                        if (r < 0)
                                return r;
                }
                if (!streq(rs->states[i], "inactive") && strv_extend(&stop, u) < 0)
                        return -ENOMEM;
        }
        r = manager_stop_units(m, stop);
        if (r < 0)
                return r;

        /* Homes, bundles and state of anything not adopted, once nothing of
         * it runs any more. */
        (void) restore_remove_unknown(SBX_PRIVATE_STATE_ROOT, rs->adopted);
        (void) restore_remove_unknown(SBX_STATE_ROOT, rs->adopted);
        (void) restore_remove_unknown(SBX_BUNDLE_ROOT, rs->adopted);
        (void) restore_remove_unknown(SBX_DISK_ROOT, rs->adopted);
        (void) restore_remove_unknown(SBX_DISK_MOUNT_ROOT, rs->adopted);
        (void) restore_remove_unknown(SBX_SUSPEND_ROOT, rs->adopted);
        (void) restore_remove_unknown(SBX_WORKER_STATE_DIR, rs->adopted);
        for (size_t i = 0; i < rs->n_lost; i++)
                if (rs->lost[i].announce) {
                        r = strv_extend(&m->restore_removed, rs->lost[i].id);
                        if (r < 0)
                                return r;
                }
        log_info("Restarted: re-adopted %zu worker(s), cleaned %zu it could not account for",
                 strv_length(rs->adopted), rs->n_lost);
        return 0;
}

int manager_restore(Manager *m) {
        _cleanup_(restore_done) Restore rs = { .m = m };
        char current[33] = "", recorded[33] = "";
        int r;

        r = fdstore_load(&rs.fds);
        if (r < 0)
                log_warning_errno(r, "Failed to take the stored fds: %m");
        r = read_boot_ids(current, recorded);
        if (r < 0)
                log_warning_errno(r, "Cannot read the boot ID, wiping as at boot: %m");
        if (mkdir(SBX_RUNTIME_DIR, 0700) < 0 && errno != EEXIST)
                return log_error_errno(errno, "Failed to create " SBX_RUNTIME_DIR ": %m");
        if (r < 0 || !streq(current, recorded) || access(SBX_WORKER_STATE_DIR, F_OK) < 0) {
                if (recorded[0])
                        log_info("Started after a boot (boot ID %s, recorded %s): wiping", current, recorded);
                r = manager_wipe_leftovers(m);
                if (r < 0)
                        return r;
                r = rm_rf(SBX_WORKER_STATE_DIR);
                if (r < 0)
                        log_warning_errno(r, "Failed to empty " SBX_WORKER_STATE_DIR ": %m");
                if (mkdir(SBX_WORKER_STATE_DIR, 0700) < 0 && errno != EEXIST)
                        return log_error_errno(errno, "Failed to create " SBX_WORKER_STATE_DIR ": %m");
                r = restore_kept(&rs);
                if (r < 0)
                        return r;
                if (rs.adopted)
                        log_info("Booted: re-created %zu suspended worker(s) kept across the reboot",
                                 strv_length(rs.adopted));
        } else {
                r = restore_after_restart(&rs);
                if (r < 0)
                        return r;
        }
        if (mkdir(SBX_WORKER_STATE_DIR, 0700) < 0 && errno != EEXIST)
                return log_error_errno(errno, "Failed to create " SBX_WORKER_STATE_DIR ": %m");
        if (current[0] && write_boot_id(current) < 0)
                log_warning("Failed to record the boot ID in " SBX_BOOT_ID_FILE);
        return 0;
}

static int on_restore_announced(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;

        strv_free(m->restore_removed);
        m->restore_removed = NULL;
        return 0;
}

void manager_restore_announce(Manager *m) {
        sd_event_source *s;

        /* Nobody has subscribed yet (the name is just ours): the list is kept
         * a while for the clients that subscribe again (bus-subscribe.c). */
        if (m->listener.workers_lost)
                m->listener.workers_lost(m);
        if (!m->restore_removed ||
            event_add_timer(m->event, &s, RESTORE_ANNOUNCE_USEC, TIMER_HOUSEKEEPING, on_restore_announced, m,
                            "restore-announce-timer") < 0)
                on_restore_announced(NULL, 0, m);
        else
                (void) event_source_float(s, "restore-announce-timer");
}
