/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "event-util.h"
#include "spec-endpoint.h"
#include "worker-suspend.h"
#include "worker-wake.h"

/* A connection to the endpoint while the worker sleeps: held until it
 * runs, then relayed to its gate; or answered 503 and lingering until the
 * caller closes (WAKE_LINGER_USEC at most), so that a request it sends
 * after our answer finds the socket open, not a reset. buf[i] holds what was read from
 * fd[i] and is still to be written to the other. */
typedef struct WakeConn WakeConn;
struct WakeConn {
        WorkerWake *wake;
        WakeConn *next;
        int fd[2];                      /* [0] the caller's, [1] the gate's */
        sd_event_source *src[2];
        bool eof[2], shut[2];
        bool lingering;
        size_t len[2], off[2];
        char buf[2][16384];
};

struct WorkerWake {
        Worker *w;
        int listen_fd;                  /* the socket file's; -1: closed */
        sd_event_source *listen_src;
        sd_event_source *hold_timer;
        sd_event_source *wake_soon;     /* held during the checkpoint: the resume once it is suspended */
        sd_event_source *relay_timer;   /* the gate's socket is not bound yet: tried again */
        uint64_t relay_until;
        bool woken;                     /* by a resume (else its checkpoint failed) */
        WakeConn *conns;
        unsigned n_held;
        uint64_t first_held_usec;
        /* The last wake that failed: callers within WAKE_RETRY_USEC get its
         * reason at once, not another resume (each makes units of PID 1's). */
        uint64_t failed_usec;
        char failed_why[256];
        /* Ours until the gate's socket unit binds over it (told by inode). */
        char *path, *link;
        dev_t dev;
        ino_t ino;
};

/* It has an endpoint and IdleAction=suspend. */
static bool wakes_on_request(const Worker *w) {
        return w->spec.idle_suspend && w->gate.service;
}

/* Held while the gate's socket is back: PID 1 binds it when the pair's
 * start job runs, which a RUNNING state (a resume's job done; a failed
 * checkpoint's pair just asked for) may come before. */
#define WAKE_RELAY_RETRY_USEC (3 * USEC_PER_SEC)
#define WAKE_RELAY_STEP_USEC (20 * USEC_PER_MSEC)

static bool conn_held(const WakeConn *c) {
        return c->fd[1] < 0 && !c->lingering;
}

static void conn_free(WakeConn *c) {
        WorkerWake *k = c->wake;

        for (WakeConn **p = &k->conns; *p; p = &(*p)->next)
                if (*p == c) {
                        *p = c->next;
                        break;
                }
        if (conn_held(c))
                k->n_held--;
        for (int i = 0; i < 2; i++) {
                sd_event_source_disable_unref(c->src[i]);
                if (c->fd[i] >= 0)
                        close(c->fd[i]);
        }
        free(c);
}

#define WAKE_LINGER_USEC (5 * USEC_PER_SEC)

static int on_linger_io(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
        WakeConn *c = userdata;
        ssize_t got = read(fd, c->buf[0], sizeof(c->buf[0]));

        /* What it sends is dropped; its close (or an error) ends it. */
        if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR))
                conn_free(c);
        return 0;
}

static int on_linger_timeout(sd_event_source *src, uint64_t usec, void *userdata) {
        conn_free(userdata);
        return 0;
}

/* What a held caller gets when its worker does not come: the gate's kind
 * of answer, said by sandboxd. */
static void conn_refuse(WakeConn *c, const char *why) {
        sd_event *e = worker_event(c->wake->w);
        char body[512], msg[768];
        int n, m;

        n = snprintf(body, sizeof(body), "worker %s did not wake: %s\n", c->wake->w->id, why);
        if (n < 0 || (size_t) n >= sizeof(body))
                n = (int) sizeof(body) - 1;
        m = snprintf(msg, sizeof(msg),
                     "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n"
                     "Connection: close\r\n\r\n%.*s", n, n, body);
        if (m > 0)
                (void) !write(c->fd[0], msg, MIN((size_t) m, sizeof(msg) - 1));
        (void) shutdown(c->fd[0], SHUT_WR);
        c->wake->n_held--;
        c->lingering = true;
        if (sd_event_add_io(e, &c->src[0], c->fd[0], EPOLLIN, on_linger_io, c) < 0 ||
            sd_event_add_time_relative(e, &c->src[1], CLOCK_MONOTONIC, WAKE_LINGER_USEC, 0, on_linger_timeout,
                                       c) < 0)
                conn_free(c);
}

static void refuse_held(WorkerWake *k, const char *why) {
        WakeConn *next;

        for (WakeConn *c = k->conns; c; c = next) {
                next = c->next;
                if (conn_held(c))
                        conn_refuse(c, why);
        }
        k->hold_timer = sd_event_source_disable_unref(k->hold_timer);
}

/* ---- the relay ------------------------------------------------------------ */

static int conn_update(WakeConn *c) {
        bool done = true;

        for (int i = 0; i < 2; i++) {
                /* Its half is over: what it said went on, and the other
                 * side heard the end. */
                if (c->eof[i] && c->len[i] == c->off[i] && !c->shut[!i]) {
                        (void) shutdown(c->fd[!i], SHUT_WR);
                        c->shut[!i] = true;
                }
                done = done && c->eof[i] && c->len[i] == c->off[i];
        }
        if (done) {
                conn_free(c);
                return 0;
        }
        for (int i = 0; i < 2; i++) {
                uint32_t ev = (!c->eof[i] && c->len[i] == c->off[i] ? EPOLLIN : 0) |
                              (c->len[!i] > c->off[!i] ? EPOLLOUT : 0);
                if (sd_event_source_set_io_events(c->src[i], ev) < 0 ||
                    sd_event_source_set_enabled(c->src[i], ev ? SD_EVENT_ON : SD_EVENT_OFF) < 0) {
                        conn_free(c);
                        return 0;
                }
        }
        return 0;
}

static int on_conn_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        WakeConn *c = userdata;
        int i = fd == c->fd[0] ? 0 : 1;
        ssize_t n;

        if (revents & EPOLLERR) {
                conn_free(c);
                return 0;
        }
        if ((revents & (EPOLLIN | EPOLLHUP)) && !c->eof[i] && c->len[i] == c->off[i]) {
                n = read(fd, c->buf[i], sizeof(c->buf[i]));
                if (n > 0) {
                        c->len[i] = (size_t) n;
                        c->off[i] = 0;
                } else if (n == 0)
                        c->eof[i] = true;
                else if (errno != EAGAIN && errno != EINTR) {
                        conn_free(c);
                        return 0;
                }
        }
        if ((revents & EPOLLOUT) && c->len[!i] > c->off[!i]) {
                n = write(fd, c->buf[!i] + c->off[!i], c->len[!i] - c->off[!i]);
                if (n > 0) {
                        c->off[!i] += (size_t) n;
                        if (c->off[!i] == c->len[!i])
                                c->len[!i] = c->off[!i] = 0;
                } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
                        conn_free(c);
                        return 0;
                }
        }
        return conn_update(c);
}

static int gate_connect(const WorkerWake *k) {
        _cleanup_free_ char *path = NULL;
        struct sockaddr_un a = { .sun_family = AF_UNIX };
        int fd;

        if (sbx_endpoint_socket_path(k->w->id, &path) < 0 || strlen(path) >= sizeof(a.sun_path))
                return -EINVAL;
        strcpy(a.sun_path, path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        /* PID 1's listening socket: the connect is queued at once, or
         * refused. */
        if (connect(fd, (struct sockaddr *) &a, sizeof(a)) < 0 || fcntl(fd, F_SETFL, O_NONBLOCK) < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        return fd;
}

static int conn_relay(WakeConn *c) {
        sd_event *e = worker_event(c->wake->w);
        int fd, r;

        fd = gate_connect(c->wake);
        if (fd < 0)
                return fd;
        c->fd[1] = fd;
        c->wake->n_held--;
        for (int i = 0; i < 2; i++) {
                r = sd_event_add_io(e, &c->src[i], c->fd[i], EPOLLIN, on_conn_io, c);
                if (r < 0)
                        return r;
                (void) sd_event_source_set_description(c->src[i], "worker-wake-relay");
        }
        return conn_update(c) < 0 ? -EIO : 0;
}

/* ---- listening ---------------------------------------------------------- */

static void close_listener(WorkerWake *k) {
        k->listen_src = sd_event_source_disable_unref(k->listen_src);
        if (k->listen_fd >= 0)
                close(k->listen_fd);
        k->listen_fd = -1;
}

static int on_hold_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        WorkerWake *k = userdata;

        k->hold_timer = sd_event_source_disable_unref(k->hold_timer);
        log_struct(LOG_WARNING, "A request held for the worker's wake timed out", "SANDBOXD_WORKER_ID", k->w->id,
                   "SANDBOXD_EVENT", "wake-timeout", NULL);
        refuse_held(k, "it did not run again within 60 s");
        return 0;
}

static void accept_pending(WorkerWake *k) {
        while (k->listen_fd >= 0) {
                int fd = accept4(k->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
                if (fd < 0)
                        return;
                WakeConn *c = calloc(1, sizeof(*c));
                if (!c) {
                        close(fd);
                        return;
                }
                *c = (WakeConn) { .wake = k, .next = k->conns, .fd = { fd, -1 } };
                k->conns = c;
                k->n_held++;
                if (k->n_held > WAKE_HELD_MAX) {
                        conn_refuse(c, "too many requests are waiting for it already");
                        continue;
                }
                if (!k->hold_timer) {
                        k->first_held_usec = now_usec(CLOCK_MONOTONIC);
                        if (event_add_timer(worker_event(k->w), &k->hold_timer, WAKE_HOLD_USEC, TIMER_WAIT,
                                            on_hold_timeout, k, "worker-wake-hold") < 0)
                                k->hold_timer = NULL;
                }
        }
}

/* Held requests and a suspended worker: its resume. While its checkpoint
 * runs (the gate drained, SUSPENDING) they wait for it to end. */
static void wake_if_held(WorkerWake *k) {
        Worker *w = k->w;
        SbxError e = {};

        if (k->n_held == 0 || w->state != WORKER_SUSPENDED)
                return;
        if (k->failed_usec > 0 && now_usec(CLOCK_MONOTONIC) < k->failed_usec + WAKE_RETRY_USEC) {
                refuse_held(k, k->failed_why);
                return;
        }
        log_struct(LOG_INFO, "Waking the worker: a request came to its endpoint", "SANDBOXD_WORKER_ID", w->id,
                   "SANDBOXD_EVENT", "wake", NULL);
        /* Nothing started: it sleeps on, its listener open. */
        if (worker_resume(w, NULL, &e) < 0)
                worker_wake_failed(w, e.name ? e.message : "its resume could not start");
}

static int on_listen(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        WorkerWake *k = userdata;

        accept_pending(k);
        wake_if_held(k);
        return 0;
}

static int on_wake_soon(sd_event_source *s, void *userdata) {
        WorkerWake *k = userdata;

        k->wake_soon = sd_event_source_disable_unref(k->wake_soon);
        accept_pending(k);
        wake_if_held(k);
        return 0;
}

static int listen_file(WorkerWake *k) {
        const SbxConfig *c = k->w->owned_by->config;
        _cleanup_free_ char *path = NULL;
        struct sockaddr_un a = { .sun_family = AF_UNIX };
        struct group *g;
        struct stat st;
        int fd;

        if (sbx_endpoint_socket_path(k->w->id, &path) < 0 || strlen(path) >= sizeof(a.sun_path))
                return -EINVAL;
        strcpy(a.sun_path, path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        /* A file left by a gate that is gone (its unit removes it on stop). */
        (void) unlink(path);
        if (bind(fd, (struct sockaddr *) &a, sizeof(a)) < 0 || chmod(path, 0660) < 0 || stat(path, &st) < 0 ||
            listen(fd, SOMAXCONN) < 0) {
                int r = -errno;
                close(fd);
                (void) unlink(path);
                return r;
        }
        g = getgrnam(c->endpoints_socket_group);
        if (!g || st.st_gid != g->gr_gid) {
                /* The directory is not (yet) the gate's setgid one: the
                 * front could not connect, and nobody else may. */
                close(fd);
                (void) unlink(path);
                return -EPERM;
        }
        k->listen_fd = fd;
        k->dev = st.st_dev;
        k->ino = st.st_ino;
        free(k->path);
        k->path = TAKE_PTR(path);
        if (k->w->spec.endpoint.name) {
                _cleanup_free_ char *target = NULL;
                free(k->link);
                k->link = NULL;
                if (asprintf(&k->link, SBX_ENDPOINTS_DIR "/%s.sock", k->w->spec.endpoint.name) < 0 ||
                    asprintf(&target, "%s.sock", k->w->id) < 0)
                        return -ENOMEM;
                /* Names are unique among live workers: one left is this one's. */
                (void) unlink(k->link);
                if (symlink(target, k->link) < 0) {
                        free(k->link);
                        k->link = NULL;
                }
        }
        return 0;
}

/* Whether the file at our path is still the socket we bound. */
static bool path_ours(const WorkerWake *k) {
        struct stat st;

        return k->path && lstat(k->path, &st) == 0 && st.st_dev == k->dev && st.st_ino == k->ino;
}

void worker_wake_listen(Worker *w) {
        WorkerWake *k = w->wake;
        int r;

        if (!wakes_on_request(w) || (w->state != WORKER_SUSPENDED && w->state != WORKER_SUSPENDING))
                return;
        if (!k) {
                k = calloc(1, sizeof(*k));
                if (!k) {
                        log_error("Out of memory holding the endpoint of worker %s", w->id);
                        return;
                }
                *k = (WorkerWake) { .w = w, .listen_fd = -1 };
                w->wake = k;
        }
        /* A resume that failed after the gate's socket unit bound over our
         * file took the file with it when the unit went. */
        if (k->listen_fd >= 0 && !path_ours(k))
                close_listener(k);
        /* Suspended with requests held during its checkpoint: they wake it,
         * from the loop (the state change under way ends first). */
        if (k->n_held > 0 && w->state == WORKER_SUSPENDED && !k->wake_soon &&
            sd_event_add_defer(worker_event(w), &k->wake_soon, on_wake_soon, k) < 0)
                k->wake_soon = NULL;
        if (k->listen_fd >= 0)
                return;
        r = listen_file(k);
        if (r >= 0)
                r = sd_event_add_io(worker_event(w), &k->listen_src, k->listen_fd, EPOLLIN, on_listen, k);
        if (r < 0) {
                close_listener(k);
                log_struct(LOG_WARNING, "Cannot hold the suspended worker's endpoint: a request cannot wake it",
                           "SANDBOXD_WORKER_ID", w->id, "SANDBOXD_REASON",
                           r == -EPERM ? "the endpoints directory does not give its socket SocketGroup="
                                       : strerror(-r), NULL);
                return;
        }
        (void) sd_event_source_set_description(k->listen_src, "worker-wake-listen");
        log_struct(LOG_INFO, "Holding the endpoint of the sleeping worker: a request wakes it",
                   "SANDBOXD_WORKER_ID", w->id, "SANDBOXD_STATE", worker_state_to_string(w->state),
                   "SANDBOXD_EVENT", "wake-hold", NULL);
}


static int on_relay_retry(sd_event_source *s, uint64_t usec, void *userdata);

/* Each held connection to the gate's socket; one that finds it not bound
 * yet is tried again until relay_until. */
static void relay_held(WorkerWake *k) {
        const char *why = k->woken ? "Worker woken by a request; the held requests go to its gate"
                                   : "Worker runs on after its checkpoint failed; the held requests go to its gate";
        unsigned n = 0, failed = 0, waiting = 0;
        char count[16], usec[24];
        WakeConn *next;

        k->relay_timer = sd_event_source_disable_unref(k->relay_timer);
        for (WakeConn *c = k->conns; c; c = next) {
                next = c->next;
                if (!conn_held(c))
                        continue;
                int r = conn_relay(c);
                if (r >= 0) {
                        n++;
                        continue;
                }
                if ((r == -ENOENT || r == -ECONNREFUSED) && conn_held(c) &&
                    now_usec(CLOCK_MONOTONIC) < k->relay_until) {
                        waiting++;
                        continue;
                }
                failed++;
                if (conn_held(c))
                        conn_refuse(c, "its gate did not take the request");
                else
                        conn_free(c);
        }
        if (waiting > 0 && event_add_timer(worker_event(k->w), &k->relay_timer, WAKE_RELAY_STEP_USEC, TIMER_WAIT,
                                           on_relay_retry, k, "worker-wake-relay-retry") < 0)
                refuse_held(k, "its gate did not take the request");
        if (n == 0 && failed == 0)
                return;
        snprintf(count, sizeof(count), "%u", n);
        snprintf(usec, sizeof(usec), "%" PRIu64, now_usec(CLOCK_MONOTONIC) - k->first_held_usec);
        log_struct(failed ? LOG_WARNING : LOG_INFO, why,
                   "SANDBOXD_WORKER_ID", k->w->id, "SANDBOXD_HELD", count, "SANDBOXD_WAKE_USEC", usec,
                   "SANDBOXD_EVENT", "woken", NULL);
}

static int on_relay_retry(sd_event_source *s, uint64_t usec, void *userdata) {
        relay_held(userdata);
        return 0;
}

void worker_wake_running(Worker *w, bool woken) {
        WorkerWake *k = w->wake;

        if (!k)
                return;
        k->woken = woken;
        k->failed_usec = 0;
        k->wake_soon = sd_event_source_disable_unref(k->wake_soon);
        accept_pending(k);
        close_listener(k);
        /* The gate's socket unit bound its own over ours: the path and the
         * name link are PID 1's now. */
        if (!path_ours(k)) {
                free(k->path);
                free(k->link);
                k->path = k->link = NULL;
        }
        k->hold_timer = sd_event_source_disable_unref(k->hold_timer);
        k->relay_until = now_usec(CLOCK_MONOTONIC) + WAKE_RELAY_RETRY_USEC;
        relay_held(k);
}

void worker_wake_failed(Worker *w, const char *why) {
        WorkerWake *k = w->wake;

        if (!k)
                return;
        k->failed_usec = now_usec(CLOCK_MONOTONIC);
        snprintf(k->failed_why, sizeof(k->failed_why), "%s", why ?: "its resume failed");
        refuse_held(k, k->failed_why);
}

void worker_wake_free(Worker *w) {
        WorkerWake *k = w->wake;
        char target[64];
        ssize_t n;

        if (!k)
                return;
        refuse_held(k, "it ended");
        while (k->conns)
                conn_free(k->conns);
        close_listener(k);
        sd_event_source_disable_unref(k->wake_soon);
        sd_event_source_disable_unref(k->relay_timer);
        if (path_ours(k)) {
                (void) unlink(k->path);
                /* The name's link, while it still points at this worker. */
                if (k->link && (n = readlink(k->link, target, sizeof(target) - 1)) > 0) {
                        target[n] = 0;
                        if (startswith(target, w->id) && streq(target + strlen(w->id), ".sock"))
                                (void) unlink(k->link);
                }
        }
        free(k->path);
        free(k->link);
        free(k);
        w->wake = NULL;
}
