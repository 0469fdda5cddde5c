/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <time.h>

#include "egress-units.h"
#include "event-util.h"
#include "env-cred.h"
#include "errors.h"
#include "gate.h"
#include "pool-job.h"
#include "pool-plan.h"
#include "pool.h"
#include "worker-disk.h"
#include "worker-prepare.h"
#include "worker-spawn.h"
#include "rmrf.h"
#include "systemd-bus.h"
#include "unit-props.h"


/* Also sandbox-launch's LAUNCH_POOL_LIMIT_FILE, in the bundle it made. */
#define POOL_LIMIT_FILE "memory-max"
/* How often the pool looks at the host when it has nothing to start. */
#define POOL_CHECK_USEC (5 * USEC_PER_SEC)
/* How long handing a job over may take: the waiter reads as it arrives. */
#define POOL_HANDOVER_TIMEOUT_MSEC 2000
#define POOL_MEMINFO "/proc/meminfo"
#define POOL_PRESSURE "/proc/pressure/memory"

/* The owner's handles (Pool.worker_owner), read at use. */
static const SbxConfig *pool_config(const Pool *pool) {
        return pool->worker_owner->config;
}
static sd_event *pool_event(const Pool *pool) {
        return *pool->worker_owner->event;
}
static sd_bus *pool_systemd(const Pool *pool) {
        return *pool->worker_owner->systemd;
}
static UnitStops *pool_unit_stops(const Pool *pool) {
        return *pool->worker_owner->unit_stops;
}

struct PoolEntry {
        Pool *pool;
        PoolEntry *next;
        char id[WORKER_ID_LEN + 1];
        char *unit, *unit_path, *home, *egress_socket, *egress_service;
        SbxClass class;
        bool egress;                    /* made with its proxy pair (runsc on a veth to it), else
                                         * with gVisor's own loopback only, as cold workers are */
        ChannelDaemonFds fds;           /* the daemon's ends of the sandbox's stdio */
        sd_bus_slot *start_call, *unit_match;
        sd_bus_slot *reload_read;       /* after systemd's Reloading, its state asked; not claimable meanwhile */
        sd_event_source *ready_source;  /* the waiter's POOL_WAITER_READY on stdout */
        bool started;                   /* its start job is done: the launcher runs */
        bool ready;                     /* the waiter runs inside the booted sandbox */
        bool stopping;
        bool failed;                    /* evicted because it did not come up: a failure all the same */
        bool seen_active;
};

static PoolEntry *pool_entry_free(PoolEntry *e) {
        if (!e)
                return NULL;
        sd_bus_slot_unref(e->start_call);
        sd_bus_slot_unref(e->unit_match);
        sd_bus_slot_unref(e->reload_read);
        sd_event_source_disable_unref(e->ready_source);
        safe_close(e->fds.stdin_fd);
        safe_close(e->fds.stdout_fd);
        safe_close(e->fds.stderr_fd);
        free(e->unit);
        free(e->unit_path);
        free(e->home);
        free(e->egress_socket);
        free(e->egress_service);
        free(e);
        return NULL;
}

void pool_free_all(Pool *pool) {
        while (pool->entries) {
                PoolEntry *e = pool->entries;
                pool->entries = e->next;
                pool_entry_free(e);
        }
        pool->timer = sd_event_source_disable_unref(pool->timer);
        pool->reload_match = sd_bus_slot_unref(pool->reload_match);
}

unsigned pool_n_ready(const Pool *pool) {
        unsigned n = 0;
        for (PoolEntry *e = pool->entries; e; e = e->next)
                n += e->ready && !e->stopping;
        return n;
}

uint64_t pool_disk_held(const Pool *pool, uint64_t *ret_unwritten) {
        uint64_t held = 0, unwritten = 0;

        for (const PoolEntry *e = pool->entries; e; e = e->next) {
                held += pool_config(pool)->disk_default;
                unwritten += worker_disk_unwritten(e->id, pool_config(pool)->disk_default);
        }
        *ret_unwritten = unwritten;
        return held;
}

unsigned pool_n_total(const Pool *pool) {
        unsigned n = 0;
        for (PoolEntry *e = pool->entries; e; e = e->next)
                n++;
        return n;
}

static unsigned pool_n_kind(const Pool *pool, SbxClass class, bool egress) {
        unsigned n = 0;
        for (PoolEntry *e = pool->entries; e; e = e->next)
                n += e->class == class && e->egress == egress && !e->stopping;
        return n;
}

static void pool_unlink(Pool *pool, PoolEntry *e) {
        for (PoolEntry **p = &pool->entries; *p; p = &(*p)->next)
                if (*p == e) {
                        *p = e->next;
                        return;
                }
}

static void pool_schedule(Pool *pool, uint64_t usec);

/* Asked again when the bus refuses (unit-stop.h): a pool shrinking by
 * dozens at once passes the bus daemon's cap on awaited replies. */
static void pool_stop_units(PoolEntry *e) {
        _cleanup_free_ char *disk = NULL;
        const char *units[] = { e->unit, e->egress_socket, e->egress_service,
                                worker_disk_unit_name(e->id, &disk) >= 0 ? disk : NULL };

        for (size_t i = 0; i < ELEMENTSOF(units); i++)
                if (units[i])
                        (void) unit_stops_stop(pool_unit_stops(e->pool), units[i], e->id);
}

/* Its unit is gone, never came, or is let go (UNIT_DOWN false: stopping
 * still): nothing of it may stay. */
static void pool_entry_gone(PoolEntry *e, const char *why, bool unit_down) {
        Pool *pool = e->pool;
        _cleanup_free_ char *priv = NULL;

        log_struct(e->stopping ? LOG_DEBUG : LOG_WARNING, "Pool sandbox ended",
                   "SANDBOXD_WORKER_ID", e->id, "SANDBOXD_UNIT", e->unit, "SANDBOXD_REASON", why,
                   "SANDBOXD_EVENT", "pool-ended", NULL);
        pool_stop_units(e);
        /* Its ExecStopPost removes the bundle, unless a reload lost it. */
        if (unit_down)
                worker_cleanup_sandbox_leftovers(pool->worker_owner, e->id, SBX_RUNTIME_RUNSC);
        (void) rm_rf(e->home);
        if (asprintf(&priv, SBX_PRIVATE_STATE_ROOT "/%s", e->id) >= 0)
                (void) rm_rf(priv);
        (void) worker_disk_remove(e->id);
        /* One that never came up says the runtime or the walls may have
         * broken since their probe (a drop-in that shares a namespace makes
         * the launcher refuse): probe again, so that the gate, and with it
         * the pool, knows. */
        bool failed = !e->ready && (!e->stopping || e->failed);
        if (failed) {
                pool->probe_runtimes(pool);
                pool->failures_in_row++;
        }
        pool_unlink(pool, e);
        pool_entry_free(e);
        pool->status_changed(pool);
        /* At the refill's pace, after failures in a row backing off. */
        uint64_t pace = USEC_PER_SEC / MAX(pool_config(pool)->pool_refill_per_second, 1u);
        if (failed) {
                pace = pool_plan_backoff(pace, pool->failures_in_row);
                pool->retry_after = now_usec(CLOCK_MONOTONIC) + pace;
        }
        pool_schedule(pool, pace);
}

static void pool_entry_evict(PoolEntry *e, const char *why) {
        if (e->stopping)
                return;
        e->stopping = true;
        log_struct(LOG_INFO, "Stopping a pool sandbox", "SANDBOXD_WORKER_ID", e->id, "SANDBOXD_UNIT", e->unit,
                   "SANDBOXD_REASON", why, "SANDBOXD_EVENT", "pool-evicted", NULL);
        pool_stop_units(e);
}

static PoolEntry *pool_find(Pool *pool, const char *unit) {
        for (PoolEntry *e = pool->entries; e; e = e->next)
                if (streq(e->unit, unit))
                        return e;
        return NULL;
}

static void pool_entry_down(const char *unit, const char *claim, void *userdata) {
        PoolEntry *e = pool_find(userdata, unit);

        if (e)
                pool_entry_gone(e, e->stopping ? "evicted" : "unit ended while waiting", true);
}

static int on_entry_properties(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        PoolEntry *e = userdata;
        const char *iface, *name, *contents, *s;
        bool down = false;
        int r;

        if (sd_bus_message_read(msg, "s", &iface) < 0 || sd_bus_message_enter_container(msg, 'a', "{sv}") < 0)
                return 0;
        while ((r = sd_bus_message_enter_container(msg, 'e', "sv")) > 0) {
                if (sd_bus_message_read(msg, "s", &name) < 0 || sd_bus_message_peek_type(msg, NULL, &contents) < 0)
                        return 0;
                if (streq(name, "ActiveState") && streq(contents, "s")) {
                        if (sd_bus_message_read(msg, "v", "s", &s) < 0)
                                return 0;
                        if (streq(s, "inactive") || streq(s, "failed"))
                                down = e->seen_active;
                        else
                                e->seen_active = true;
                } else if (sd_bus_message_skip(msg, "v") < 0)
                        return 0;
                if (sd_bus_message_exit_container(msg) < 0)
                        return 0;
        }
        /* Its home and bundle go with it: once systemd, asked again, agrees. */
        if (down)
                (void) systemd_unit_confirm_async(pool_systemd(e->pool), NULL, e->unit, "PropertiesChanged",
                                                  "inactive", systemd_unit_state_down, pool_entry_down, e->pool);
        return 0;
}

static int on_waiter_ready(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        PoolEntry *e = userdata;
        char c = 0;
        ssize_t n = read(fd, &c, 1);

        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return 0;
        e->ready_source = sd_event_source_disable_unref(e->ready_source);
        /* Anything else: the unit's end follows and takes the entry. */
        if (n != 1 || c != POOL_WAITER_READY) {
                log_struct(LOG_WARNING, "Pool sandbox's waiter did not come up",
                           "SANDBOXD_WORKER_ID", e->id, "SANDBOXD_UNIT", e->unit, NULL);
                e->failed = true;
                pool_entry_evict(e, "its waiter did not come up");
                return 0;
        }
        e->ready = true;
        e->pool->failures_in_row = 0;
        log_struct(LOG_DEBUG, "Pool sandbox ready", "SANDBOXD_WORKER_ID", e->id,
                   "SANDBOXD_CLASS", sbx_class_to_string(e->class), NULL);
        e->pool->status_changed(e->pool);
        return 0;
}

bool pool_job_removed(Pool *pool, const char *unit, const char *result) {
        int r;

        for (PoolEntry *e = pool->entries; e; e = e->next) {
                if (!streq(e->unit, unit) || e->started)
                        continue;
                if (!streq(result, "done")) {
                        pool_entry_gone(e, "start job failed", true);
                        return true;
                }
                e->started = true;
                (void) fd_nonblock(e->fds.stdout_fd, true);
                r = sd_event_add_io(pool_event(pool), &e->ready_source, e->fds.stdout_fd, EPOLLIN, on_waiter_ready, e);
                if (r < 0) {
                        log_warning_errno(r, "Failed to watch pool sandbox %s: %m", e->id);
                        e->failed = true;
                        pool_entry_evict(e, "cannot be watched");
                } else
                        (void) sd_event_source_set_description(e->ready_source, "pool-ready");
                return true;
        }
        return false;
}

static int on_entry_start_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        PoolEntry *e = userdata;
        const sd_bus_error *err = sd_bus_message_get_error(reply);

        e->start_call = sd_bus_slot_unref(e->start_call);
        if (err)
                pool_entry_gone(e, err->message ?: err->name, true);
        return 0;
}

/* The three pipes a sandbox's stdio is made of; the daemon keeps its ends.
 * The stdin pipe is as large as a job may be, so that handing it over never
 * waits for the reader. */
static int pool_entry_pipes(PoolEntry *e, ChannelWorkerFds *ret) {
        int in[2], out[2], err[2];

        if (pipe2(in, O_CLOEXEC) < 0)
                return -errno;
        if (pipe2(out, O_CLOEXEC) < 0) {
                safe_close(in[0]);
                safe_close(in[1]);
                return -errno;
        }
        if (pipe2(err, O_CLOEXEC) < 0) {
                safe_close(in[0]);
                safe_close(in[1]);
                safe_close(out[0]);
                safe_close(out[1]);
                return -errno;
        }
        (void) fcntl(in[1], F_SETPIPE_SZ, (int) POOL_JOB_SIZE_MAX);
        e->fds = (ChannelDaemonFds) { .stdin_fd = in[1], .stdout_fd = out[0], .stderr_fd = err[0] };
        *ret = (ChannelWorkerFds) { .stdin_fd = in[0], .stdout_fd = out[1], .stderr_fd = err[1] };
        return 0;
}

static int pool_entry_start(Pool *pool, SbxClass class, bool egress) {
        _cleanup_(channel_worker_fds_close) ChannelWorkerFds stdio = { -1, -1, -1 };
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *msg = NULL;
        char id_arg[sizeof("--id=") + WORKER_ID_LEN], user[sizeof("sandbox-") + WORKER_ID_LEN];
        PoolEntry *e;
        int r;

        /* Each waits with a disk of the default size, held like a worker's. */
        r = pool->admit_disk(pool, pool_config(pool)->disk_default, NULL);
        if (r < 0)
                return r;
        e = calloc(1, sizeof(*e));
        if (!e)
                return -ENOMEM;
        *e = (PoolEntry) { .pool = pool, .class = class, .egress = egress, .fds = { -1, -1, -1 } };
        r = random_hex_id(e->id, WORKER_ID_LEN);
        if (r < 0)
                goto fail;
        r = -ENOMEM;
        if (asprintf(&e->unit, "sandbox-%s.service", e->id) < 0 || asprintf(&e->home, SBX_STATE_ROOT "/%s", e->id) < 0)
                goto fail;
        r = systemd_unit_path(e->unit, &e->unit_path);
        if (r >= 0 && egress)
                r = worker_egress_unit_names(e->id, &e->egress_socket, &e->egress_service);
        if (r >= 0)
                r = pool_entry_pipes(e, &stdio);
        if (r < 0)
                goto fail;
        snprintf(id_arg, sizeof(id_arg), "--id=%s", e->id);
        snprintf(user, sizeof(user), "sandbox-%s", e->id);

        /* A cold worker's unit in every respect but two: the waiter is its
         * workload, and its caps wait for the claim (memory: its share of
         * the pool's; processes: the operator's maximum, which the job
         * lowers; run time: the claim's, kept by sandboxd from then on). One
         * made for egress has its proxy pair, whose policy only a claim can
         * give; one without has gVisor's own loopback, as a cold worker
         * without egress. */
        char *argv[] = { *pool->exec_path, id_arg, (char *) "--pool-wait", NULL };
        WorkerSpec spec = {
                .class = class,
                .requested_class = class,
                .argv = argv,
                .limits = pool_config(pool)->defaults,
        };
        spec.limits.memory_max = pool_entry_memory(pool_config(pool));
        spec.limits.tasks_max = pool_config(pool)->maximum.tasks_max;
        spec.limits.runtime_max_usec = pool_config(pool)->maximum.runtime_max_usec;
        /* Only which listeners the proxy's socket gets is read from it: the
         * policy it serves is the claiming worker's, fetched by unit name. A
         * worker with Services never claims (it starts cold). */
        char *any_host[] = { (char *) "*", NULL };
        WorkerSpec proxy_spec = { .egress_allow = egress ? any_host : NULL };
        WorkerUnitParams p = {
                .id = e->id,
                .unit = e->unit,
                .user = user,
                .home = e->home,
                .spec = &spec,
                .config = pool_config(pool),
                .runtime = SBX_RUNTIME_RUNSC,
                .launcher_path = *pool->worker_owner->launcher_path,
                .exec_path = *pool->exec_path,
                .stdio = &stdio,
                .egress_proxy_url = egress ? worker_egress_proxy_url(SBX_RUNTIME_RUNSC) : NULL,
                .egress_socket = e->egress_socket,
                .host_ns = &pool->runtimes->walls.host,
                .pool = true,
                .disk_bytes = pool_config(pool)->disk_default,
        };
        r = systemd_start_transient_unit_new(pool_systemd(pool), &msg, e->unit, "fail");
        if (r >= 0)
                r = worker_unit_append_properties(msg, &p);
        if (r >= 0)
                r = sd_bus_message_open_container(msg, 'a', "(sa(sv))");
        if (r >= 0)
                r = worker_egress_append_aux_entries(msg, e->id, e->unit, &proxy_spec, SBX_RUNTIME_RUNSC,
                                                     egress ? *pool->egress_path : NULL, SBX_CREDENTIAL_SOCKET);
        if (r >= 0)
                r = worker_exec_append_aux_unit(msg, e->id, e->unit);
        if (r >= 0)
                r = worker_disk_append_aux_unit(msg, e->id, p.disk_bytes, *pool->mkfs_path);
        if (r >= 0)
                r = sd_bus_message_close_container(msg);
        if (r >= 0)
                r = systemd_match_unit_properties_async(pool_systemd(pool), &e->unit_match, e->unit_path,
                                                        on_entry_properties, e);
        if (r >= 0)
                r = sd_bus_call_async(pool_systemd(pool), &e->start_call, msg, on_entry_start_reply, e, 0);
        if (r < 0)
                goto fail;
        e->next = pool->entries;
        pool->entries = e;
        log_struct(LOG_DEBUG, "Starting a pool sandbox", "SANDBOXD_WORKER_ID", e->id, "SANDBOXD_UNIT", e->unit,
                   "SANDBOXD_CLASS", sbx_class_to_string(class), "SANDBOXD_EVENT", "pool-starting", NULL);
        return 0;
fail:
        pool_entry_free(e);
        return r;
}

/* ---- keeping the pool at its size ---------------------------------------- */

/* A class is pooled only while the gate serves it with gVisor right now. */
static bool pool_class_served(Pool *pool, SbxClass class) {
        SbxRuntime runtime;
        return gate_choose(pool->runtimes, pool_config(pool), class, &runtime, NULL) >= 0 &&
               runtime == SBX_RUNTIME_RUNSC;
}

/* Per class, as many of each kind (with and without egress) as configured. */
static void pool_targets(Pool *pool, unsigned target[static _SBX_CLASS_MAX]) {
        static const SbxClass classes[] = { SBX_CLASS_STANDARD, SBX_CLASS_UNTRUSTED };
        PoolMemoryFacts facts;
        unsigned total, room;

        pool_memory_facts_read(POOL_MEMINFO, POOL_PRESSURE, &facts);
        total = pool_plan_total(pool_config(pool), pool_n_total(pool), &facts);
        /* Workers come first: the pool only takes slots nobody uses. */
        room = pool_config(pool)->max_workers > *pool->n_alive ? pool_config(pool)->max_workers - *pool->n_alive : 0;
        total = MIN(total, room);
        for (SbxClass c = 0; c < _SBX_CLASS_MAX; c++)
                target[c] = 0;
        for (size_t i = 0; i < ELEMENTSOF(classes); i++) {
                SbxClass c = classes[i];
                target[c] = pool_class_served(pool, c) ? MIN(pool_configured_size(pool_config(pool), c), total / 2) : 0;
                total -= 2 * target[c];
        }
}

static int on_pool_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Pool *pool = userdata;
        unsigned target[_SBX_CLASS_MAX];
        bool below = false, started = false;

        pool->revalidate_runtimes(pool);
        pool_targets(pool, target);
        for (PoolEntry *e = pool->entries; e; e = e->next)
                if (!e->stopping && pool_n_kind(pool, e->class, e->egress) > target[e->class])
                        pool_entry_evict(e, target[e->class] == 0 && !pool_class_served(pool, e->class)
                                                    ? "the gate no longer serves its class with gVisor"
                                                    : "the pool is shrunk (memory, MaxWorkers or configuration)");
        for (SbxClass c = 0; c < _SBX_CLASS_MAX; c++)
                for (int egress = 0; egress < 2; egress++) {
                        if (pool_n_kind(pool, c, egress) >= target[c])
                                continue;
                        /* One at a time: RefillPerSecond is the pace; none
                         * while failures back off. */
                        if (!started && now_usec(CLOCK_MONOTONIC) >= pool->retry_after) {
                                int r = pool_entry_start(pool, c, egress);
                                /* Full disks are a state the pool waits out, not an error. */
                                if (r == -ENOSPC)
                                        log_debug("No room for a pool sandbox's disk; waiting");
                                else if (r < 0)
                                        log_warning_errno(r, "Failed to start a pool sandbox: %m");
                                started = r >= 0;
                        }
                        below = below || pool_n_kind(pool, c, egress) < target[c];
                }
        uint64_t next = below ? USEC_PER_SEC / pool_config(pool)->pool_refill_per_second : POOL_CHECK_USEC;
        uint64_t now = now_usec(CLOCK_MONOTONIC);
        if (below && pool->retry_after > now)
                next = MAX(next, pool->retry_after - now);
        pool_schedule(pool, next);
        return 0;
}

static void pool_schedule(Pool *pool, uint64_t usec) {
        uint64_t when = now_usec(CLOCK_MONOTONIC) + usec;
        int r;

        if (pool_config(pool)->pool_standard_size + pool_config(pool)->pool_untrusted_size == 0 || !pool_systemd(pool))
                return;
        if (pool->timer) {
                uint64_t next = 0;
                /* An earlier check stays earlier. */
                if (sd_event_source_get_enabled(pool->timer, NULL) > 0 &&
                    sd_event_source_get_time(pool->timer, &next) >= 0 && next <= when)
                        return;
                r = event_timer_arm_at(pool->timer, when, TIMER_PACE);
        } else
                /* A pace (refills per second): late, it would slow the refill. */
                r = event_add_timer_at(pool_event(pool), &pool->timer, when, TIMER_PACE, on_pool_timer, pool,
                                       "pool-refill-timer");
        if (r < 0)
                log_warning_errno(r, "Failed to schedule the pool's refill: %m");
}

/* systemd's answer after a reload: one it cannot read back goes (a new one
 * comes), one it can is claimable again. An answer that does not come goes
 * too: a waiting sandbox is cheap to replace, a claim of a broken one fails. */
static int on_reload_state(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        PoolEntry *e = userdata;
        Pool *pool = e->pool;
        SystemdUnitState s;
        int r;

        e->reload_read = sd_bus_slot_unref(e->reload_read);
        r = systemd_unit_state_parse(reply, &s);
        if (r >= 0 && !systemd_unit_state_not_loaded(&s))
                return 0;
        pool_entry_evict(e, "systemd reloaded its units, which makes them unchangeable");
        pool_schedule(pool, 0);
        return 0;
}

/* systemd 252 re-reads a transient unit it cannot parse back (ExecStartEx=,
 * unit-props.h) as a bad setting, and then refuses SetUnitProperties on it:
 * after a reload no waiting sandbox could be claimed. They go; new ones come. */
static int on_systemd_reloading(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        Pool *pool = userdata;
        int active = 0;

        if (sd_bus_message_read(msg, "b", &active) < 0 || active)
                return 0;
        /* Only those systemd now says it cannot read back: a reload that
         * did not happen, or one by a systemd that parses them, costs none.
         * None is claimed until systemd has said which (pool_find_ready). */
        for (PoolEntry *e = pool->entries, *next; e; e = next) {
                next = e->next;
                if (e->stopping)
                        continue;
                e->reload_read = sd_bus_slot_unref(e->reload_read);
                if (systemd_unit_state_read_async(pool_systemd(pool), &e->reload_read, e->unit_path, on_reload_state,
                                                  e) < 0) {
                        pool_entry_evict(e, "systemd reloaded its units and could not be asked about this one");
                        pool_schedule(pool, 0);
                }
        }
        return 0;
}

int pool_start(Pool *pool) {
        int r;

        if (pool_config(pool)->pool_standard_size + pool_config(pool)->pool_untrusted_size == 0)
                return 0;
        r = systemd_match_manager_signal_async(pool_systemd(pool), &pool->reload_match, "Reloading", on_systemd_reloading,
                                              NULL, pool);
        if (r < 0)
                return log_error_errno(r, "Failed to subscribe to systemd's reloads: %m");
        pool_schedule(pool, 0);
        return 0;
}

void pool_yield_slot(Pool *pool) {
        PoolEntry *victim = NULL;

        if (*pool->n_alive + pool_n_total(pool) < pool_config(pool)->max_workers)
                return;
        for (PoolEntry *e = pool->entries; e; e = e->next)
                if (!e->stopping)
                        victim = e;
        /* Out of the count at once: the cold worker takes its slot now. */
        if (victim) {
                victim->stopping = true;
                pool_entry_gone(victim, "a cold worker needs its MaxWorkers slot", false);
        }
}

/* ---- claiming ------------------------------------------------------------ */

/* The workload's environment, as a cold worker's OCI process gets it
 * (oci-bundle.c): HOME, PATH unless the spec set one, CREDENTIALS_DIRECTORY
 * with credentials, sandboxd's proxy variables with egress, then the spec's. */
static int pool_job_environment(const Worker *w, char ***ret) {
        size_t n = strv_length(w->spec.environment), k = 0;
        bool has_path = false;
        char **env = calloc(n + 6, sizeof(char *));
        _cleanup_free_ char *creds = NULL;

        if (!env)
                return -ENOMEM;
        for (char **e = w->spec.environment; e && *e; e++)
                has_path = has_path || startswith(*e, "PATH=");
        /* The home's real path, as the launcher gives a cold worker: runsc
         * resolves mounts through the StateDirectory= symlink. */
        if (asprintf(&env[k++], "HOME=" SBX_PRIVATE_STATE_ROOT "/%s", w->id) < 0)
                goto oom;
        if (!has_path && !(env[k++] = strdup("PATH=/usr/local/bin:/usr/bin:/bin")))
                goto oom;
        if (w->spec.n_credentials > 0) {
                if (env_credential_dir(w->id, &creds) < 0 || asprintf(&env[k++], "CREDENTIALS_DIRECTORY=%s", creds) < 0)
                        goto oom;
        }
        if (worker_wants_egress(&w->spec)) {
                if (asprintf(&env[k++], "HTTPS_PROXY=%s", worker_egress_proxy_url(SBX_RUNTIME_RUNSC)) < 0 ||
                    asprintf(&env[k++], "https_proxy=%s", worker_egress_proxy_url(SBX_RUNTIME_RUNSC)) < 0)
                        goto oom;
        }
        for (char **e = w->spec.environment; e && *e; e++)
                if (!(env[k++] = strdup(*e)))
                        goto oom;
        *ret = env;
        return 0;
oom:
        env[k ? k - 1 : 0] = NULL;
        strv_free_erase(env);
        return -ENOMEM;
}

static int pool_job_frame(const Worker *w, uint8_t **ret, size_t *ret_size) {
        _cleanup_strv_free_erase_ char **env = NULL;
        PoolJob job = {
                .argv = w->spec.argv,
                .credentials = w->spec.credentials,
                .n_credentials = w->spec.n_credentials,
                .nproc = w->spec.limits.tasks_max,
        };
        int r;

        r = pool_job_environment(w, &env);
        if (r < 0)
                return r;
        job.environment = env;
        return pool_job_encode(&job, ret, ret_size);
}

static int write_all_timeout(int fd, const uint8_t *p, size_t n, int timeout_msec) {
        uint64_t deadline = now_usec(CLOCK_MONOTONIC) + (uint64_t) timeout_msec * USEC_PER_MSEC;

        while (n > 0) {
                ssize_t k = write(fd, p, n);
                if (k < 0 && errno == EAGAIN) {
                        uint64_t now = now_usec(CLOCK_MONOTONIC);
                        struct pollfd pfd = { .fd = fd, .events = POLLOUT };
                        if (now >= deadline)
                                return -ETIMEDOUT;
                        (void) poll(&pfd, 1, (int) ((deadline - now) / USEC_PER_MSEC) + 1);
                        continue;
                }
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                p += k;
                n -= (size_t) k;
        }
        return 0;
}

/* The memory guard of the sandbox's launcher follows this from now on. */
static int pool_write_limit(const Worker *w) {
        _cleanup_free_ char *path = NULL, *tmp = NULL;
        _cleanup_close_ int fd = -1;
        char line[32];
        int n;

        if (asprintf(&path, SBX_BUNDLE_ROOT "/%s/" POOL_LIMIT_FILE, w->id) < 0 ||
            asprintf(&tmp, SBX_BUNDLE_ROOT "/%s/." POOL_LIMIT_FILE ".tmp", w->id) < 0)
                return -ENOMEM;
        n = snprintf(line, sizeof(line), "%" PRIu64 "\n", w->spec.limits.memory_max);
        fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        if (write(fd, line, (size_t) n) != n)
                return errno ? -errno : -EIO;
        return rename(tmp, path) < 0 ? -errno : 0;
}

static int on_runtime_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Worker *w = userdata;

        log_struct(LOG_INFO, "Pooled worker reached its run time limit, stopping it",
                   "SANDBOXD_WORKER_ID", w->id, "SANDBOXD_UNIT", w->unit, NULL);
        (void) worker_stop(w, "timeout", NULL);
        return 0;
}

int pool_arm_runtime_timer(Worker *w, uint64_t usec) {
        return event_add_timer(worker_event(w), &w->timers.runtime, usec, TIMER_WAIT, on_runtime_timer, w,
                               "worker-runtime-timer");
}

/* The caps are on the unit: the limit, the job, and the worker runs. */
static int on_claim_properties_set(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        Worker *w = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(reply);
        ChannelDaemonFds fds = w->start.pool_fds;
        uint8_t *frame = NULL;
        size_t size = 0;
        int r;

        w->start.call = sd_bus_slot_unref(w->start.call);
        if (e) {
                char why[400];
                snprintf(why, sizeof(why), "setting its caps on the pooled unit: %s", e->message ?: e->name);
                (void) unit_stops_stop(worker_unit_stops(w), w->unit, w->id);
                worker_start_failed(w, why);
                return 0;
        }
        r = pool_write_limit(w);
        if (r >= 0)
                r = pool_job_frame(w, &frame, &size);
        if (r >= 0)
                r = write_all_timeout(fds.stdin_fd, frame, size, POOL_HANDOVER_TIMEOUT_MSEC);
        erase_and_free(frame, size);
        if (r >= 0) {
                /* The channel's ends are the worker's now. */
                r = worker_adopt_channel(w, &fds, now_usec(CLOCK_MONOTONIC));
                if (r >= 0)
                        w->start.pool_fds = (ChannelDaemonFds) { -1, -1, -1 };
        }
        if (r >= 0)
                r = pool_arm_runtime_timer(w, w->spec.limits.runtime_max_usec);
        if (r < 0) {
                char why[128];
                snprintf(why, sizeof(why), "handing the job to the pooled sandbox: %s", strerror(-r));
                (void) unit_stops_stop(worker_unit_stops(w), w->unit, w->id);
                worker_start_failed(w, why);
                return 0;
        }
        worker_start_done(w);
        return 0;
}

/* MemoryMax, MemorySwapMax, TasksMax and CPUQuota are cgroup settings that
 * systemd applies to a running unit (and Description a live one); the others of a cold unit are either
 * the pool's own (walls, identity) or kept elsewhere (run time: sandboxd's
 * timer; processes in gVisor: the job's RLIMIT_NPROC; memory inside gVisor:
 * the guard's limit file). */
static int pool_set_caps(Worker *w) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *msg = NULL;
        WorkerUnitParams p = { .spec = &w->spec, .runtime = SBX_RUNTIME_RUNSC };
        _cleanup_free_ char *description = NULL;
        int r;

        /* What a cold worker's unit is called: it is one now. */
        if (asprintf(&description, "sandboxd worker %s (%s)", w->id, sbx_class_to_string(w->spec.class)) < 0)
                return -ENOMEM;

        r = systemd_set_unit_properties_new(worker_systemd(w), &msg, w->unit, true);
        if (r >= 0)
                r = sd_bus_message_append(msg, "a(sv)", 5,
                                          "Description", "s", description,
                                          "MemoryMax", "t", w->spec.limits.memory_max,
                                          "MemorySwapMax", "t", (uint64_t) 0,
                                          "TasksMax", "t", unit_tasks_max(&p),
                                          "CPUQuotaPerSecUSec", "t", (uint64_t) w->spec.limits.cpu_quota_percent * 10000);
        if (r >= 0)
                r = sd_bus_call_async(worker_systemd(w), &w->start.call, msg, on_claim_properties_set, w, 0);
        return r;
}

static PoolEntry *pool_find_ready(Pool *pool, SbxClass class, bool egress) {
        for (PoolEntry *e = pool->entries; e; e = e->next)
                if (e->ready && !e->stopping && !e->reload_read && e->class == class && e->egress == egress)
                        return e;
        return NULL;
}

/* A claim's unit runs already: its caps are set on it, and the job follows
 * (on_claim_properties_set()). USERDATA is the claimed entry. */
static int pool_claim_emit(Worker *w, void *userdata) {
        return pool_set_caps(w);
}

/* The sandbox is the worker's from here: out of the pool. */
static void pool_claim_placed(Worker *w, void *userdata) {
        PoolEntry *e = userdata;

        w->start.pool_fds = e->fds;
        e->fds = (ChannelDaemonFds) { -1, -1, -1 };
        pool_unlink(e->pool, e);
        pool_entry_free(e);
}

int pool_claim(Pool *pool, WorkerSpec *spec, uid_t owner, sd_bus_message *request, const char **ret_reason,
               SbxError *error) {
        PoolEntry *e;
        Worker *w = NULL;
        const char *refusal;
        int r;

        if (pool_configured_size(pool_config(pool), spec->class) == 0) {
                *ret_reason = pool_config(pool)->pool_standard_size + pool_config(pool)->pool_untrusted_size == 0
                                      ? "the pool is off" : "the class has no pool";
                return 0;
        }
        refusal = pool_claim_refusal(spec);
        if (refusal) {
                *ret_reason = refusal;
                return 0;
        }
        e = pool_find_ready(pool, spec->class, worker_wants_egress(spec));
        if (!e) {
                *ret_reason = worker_wants_egress(spec) ? "no pooled sandbox of the class with egress was ready"
                                                        : "no pooled sandbox of the class without egress was ready";
                return 0;
        }
        /* Only what the claim adds: the sandbox's disk is counted already. */
        if (pool_claim_disk_added(pool_config(pool), spec) > 0) {
                r = pool->admit_disk(pool, pool_claim_disk_added(pool_config(pool), spec), error);
                if (r < 0)
                        return r;
        }
        {
                /* Before anything is taken: a job too large for the sandbox starts cold. */
                uint8_t *probe = NULL;
                size_t size = 0;
                Worker tmp = { .spec = *spec };
                snprintf(tmp.id, sizeof(tmp.id), "%s", e->id);
                r = pool_job_frame(&tmp, &probe, &size);
                erase_and_free(probe, size);
                if (r == -E2BIG) {
                        *ret_reason = "the job (credentials and environment) is larger than a pooled sandbox takes";
                        return 0;
                }
                if (r < 0)
                        return sbx_error_set(error, r, SBX_ERROR_START_FAILED, "Failed to prepare the job: %s",
                                             strerror(-r));
        }

        r = worker_new_with_id(&w, pool->worker_owner, spec, SBX_RUNTIME_RUNSC, e->id);
        if (r < 0)
                return sbx_error_set(error, r, SBX_ERROR_START_FAILED, "Failed to set up the worker: %s",
                                     strerror(-r));
        w->owner = owner;
        w->start.mode = "pooled";
        /* Its unit has long been active: its end is an end. */
        w->unit_seen_active = true;
        w->egress.socket = TAKE_PTR(e->egress_socket);
        w->egress.service = TAKE_PTR(e->egress_service);
        /* Its job brings the secrets now; a resumed unit gets them as a cold
         * one does (worker_prepare() keeps them). */
        r = worker_prepare(w, &(WorkerPrepare) { .request = request, .emit = pool_claim_emit,
                                                 .placed = pool_claim_placed, .userdata = e }, error);
        if (r < 0)
                goto fail;
        {
                char owner_uid[16];
                worker_owner_field(w, owner_uid);
                log_struct(LOG_INFO, "Pool sandbox claimed", "SANDBOXD_WORKER_ID", w->id,
                           "SANDBOXD_EVENT", "pool-claimed", "SANDBOXD_OWNER_UID", owner_uid, NULL);
        }
        pool_schedule(pool, 0);
        return 1;
fail:
        /* The sandbox saw nothing of the request; it is not handed to another
         * all the same: it goes, and the pool makes a new one. */
        e->egress_socket = TAKE_PTR(w->egress.socket);
        e->egress_service = TAKE_PTR(w->egress.service);
        worker_free(w);
        e->stopping = true;
        pool_entry_gone(e, "a claim failed", false);
        return r;
}
