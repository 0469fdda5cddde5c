/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "sandboxctl-exec.h"
#include "util.h"

#define PROCESS_INTERFACE "org.sandboxd1.Process"
#define PUMP_SIZE (64U * 1024U)
/* After the process exited, how long what it left running may keep its
 * output open before we stop reading (a background child holding stdout). */
#define DRAIN_USEC (2 * USEC_PER_SEC)

typedef struct Pump {
        int from, to;
        uint8_t buf[PUMP_SIZE];
        size_t start, end;
        bool eof;               /* FROM reached EOF (or failed) */
        bool done;              /* and everything went out, or TO went away */
} Pump;

typedef struct ExecState {
        const char *path;
        bool exited;
        int status;
} ExecState;

int exec_terminal_size(int fd, uint16_t *ret_rows, uint16_t *ret_cols) {
        struct winsize ws;

        if (ioctl(fd, TIOCGWINSZ, &ws) < 0)
                return -errno;
        if (ws.ws_row == 0 || ws.ws_col == 0)
                return -ENOTTY;
        *ret_rows = ws.ws_row;
        *ret_cols = ws.ws_col;
        return 0;
}

static void pump_init(Pump *p, int from, int to) {
        *p = (Pump) { .from = from, .to = to, .eof = from < 0, .done = from < 0 };
}

static short pump_events_from(const Pump *p) {
        return !p->eof && p->end < PUMP_SIZE ? POLLIN : 0;
}

static short pump_events_to(const Pump *p) {
        return !p->done && p->end > p->start ? POLLOUT : 0;
}

/* Reads and writes what poll allowed. IN_REVENTS for FROM, OUT_REVENTS for TO. */
static void pump_step(Pump *p, short in_revents, short out_revents) {
        ssize_t n;

        if (!p->eof && (in_revents & (POLLIN | POLLHUP | POLLERR)) && p->end < PUMP_SIZE) {
                n = read(p->from, p->buf + p->end, PUMP_SIZE - p->end);
                if (n > 0)
                        p->end += (size_t) n;
                else if (n == 0 || (errno != EAGAIN && errno != EINTR))
                        /* EIO: a terminal's master once the process side closed. */
                        p->eof = true;
        }
        if (!p->done && p->end > p->start && (out_revents & (POLLOUT | POLLERR | POLLHUP))) {
                n = write(p->to, p->buf + p->start, p->end - p->start);
                if (n > 0)
                        p->start += (size_t) n;
                else if (n < 0 && errno != EAGAIN && errno != EINTR)
                        p->done = true;         /* our reader went: discard */
        }
        if (p->start == p->end)
                p->start = p->end = 0;
        if (p->eof && p->start == p->end)
                p->done = true;
}

static int on_exited(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        ExecState *s = userdata;
        int32_t status, sig;

        if (!streq_ptr(sd_bus_message_get_path(m), s->path))
                return 0;
        if (sd_bus_message_read(m, "ii", &status, &sig) >= 0) {
                s->exited = true;
                s->status = status;
        }
        return 0;
}

/* The process's state read back, for when its Exited signal did not come
 * (a daemon restarted in between: it lost the process). */
static void read_exit_status(sd_bus *bus, ExecState *s) {
        _cleanup_free_ char *state = NULL;
        int32_t status = -1;

        if (sd_bus_get_property_string(bus, "org.sandboxd1", s->path, PROCESS_INTERFACE, "State", NULL, &state) < 0)
                return;
        if (!streq(state, "exited"))
                return;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        if (sd_bus_get_property(bus, "org.sandboxd1", s->path, PROCESS_INTERFACE, "ExitStatus", NULL, &reply,
                                "i") >= 0 &&
            sd_bus_message_read(reply, "i", &status) >= 0) {
                s->exited = true;
                s->status = status;
        }
}

static void call_process(sd_bus *bus, const char *path, const char *method, const char *types, ...) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        va_list ap;
        int r;

        r = sd_bus_message_new_method_call(bus, &m, "org.sandboxd1", path, PROCESS_INTERFACE, method);
        if (r < 0)
                return;
        va_start(ap, types);
        r = sd_bus_message_appendv(m, types, ap);
        va_end(ap);
        /* Fire and forget: the answer changes nothing here. */
        if (r >= 0)
                (void) sd_bus_message_set_expect_reply(m, false);
        if (r >= 0)
                (void) sd_bus_send(bus, m, NULL);
}

static struct termios saved_termios;
static bool termios_saved;

static void restore_terminal(void) {
        if (termios_saved)
                (void) tcsetattr(STDIN_FILENO, TCSADRAIN, &saved_termios);
        termios_saved = false;
}

static void make_terminal_raw(void) {
        struct termios t;

        if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, &saved_termios) < 0)
                return;
        t = saved_termios;
        cfmakeraw(&t);
        if (tcsetattr(STDIN_FILENO, TCSADRAIN, &t) >= 0) {
                termios_saved = true;
                atexit(restore_terminal);
        }
}

static int make_signalfd(void) {
        sigset_t mask;

        sigemptyset(&mask);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGHUP);
        sigaddset(&mask, SIGWINCH);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                return -errno;
        return signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
}

static void on_signal(sd_bus *bus, int sfd, const char *path, bool tty) {
        struct signalfd_siginfo si;
        uint16_t rows, cols;

        while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
                if (si.ssi_signo == SIGWINCH) {
                        if (tty && exec_terminal_size(STDOUT_FILENO, &rows, &cols) >= 0)
                                call_process(bus, path, "ResizeTty", "qq", rows, cols);
                } else
                        call_process(bus, path, "Signal", "i", (int32_t) si.ssi_signo);
        }
}

int exec_relay(sd_bus *bus, const char *process_path, int *fds, size_t n_fds, bool tty, bool interactive) {
        _cleanup_(sd_bus_slot_unrefp) sd_bus_slot *slot = NULL;
        _cleanup_free_ Pump *pumps = calloc(3, sizeof(Pump));
        _cleanup_close_ int sfd = -1;
        ExecState s = { .path = process_path, .status = -1 };
        uint64_t exited_at = 0;
        size_t n_pumps;
        int r;

        if (!pumps)
                return -ENOMEM;
        r = sd_bus_match_signal(bus, &slot, NULL, process_path, PROCESS_INTERFACE, "Exited", on_exited, &s);
        if (r < 0)
                return r;
        sfd = make_signalfd();
        if (sfd < 0)
                return sfd;
        for (size_t i = 0; i < n_fds; i++)
                (void) fd_nonblock(fds[i], true);
        if (tty) {
                /* One fd both ways: our input to the master, its output to us. */
                pump_init(&pumps[0], interactive ? STDIN_FILENO : -1, fds[0]);
                pump_init(&pumps[1], fds[0], STDOUT_FILENO);
                n_pumps = 2;
                if (interactive)
                        make_terminal_raw();
        } else {
                if (!interactive)
                        fds[0] = safe_close(fds[0]);
                pump_init(&pumps[0], interactive ? STDIN_FILENO : -1, fds[0]);
                pump_init(&pumps[1], fds[1], STDOUT_FILENO);
                pump_init(&pumps[2], fds[2], STDERR_FILENO);
                n_pumps = 3;
        }

        for (;;) {
                struct pollfd pfd[2 * 3 + 2];
                size_t k = 0;
                bool outputs_done = pumps[1].done && (tty || pumps[2].done);
                uint64_t now = now_usec(CLOCK_MONOTONIC);
                int timeout = -1;

                if (s.exited && !exited_at)
                        exited_at = now;
                if (s.exited && (outputs_done || now - exited_at >= DRAIN_USEC))
                        break;
                if (outputs_done && !s.exited) {
                        /* All output is in; the end comes as a signal. */
                        r = sd_bus_process(bus, NULL);
                        if (r > 0)
                                continue;
                        if (r >= 0 && !s.exited)
                                read_exit_status(bus, &s);
                        if (s.exited)
                                continue;
                }
                /* Input that ended: the process sees EOF on its stdin. */
                if (!tty && pumps[0].done && fds[0] >= 0 && pumps[0].from >= 0)
                        fds[0] = pumps[0].to = safe_close(fds[0]);
                for (size_t i = 0; i < n_pumps; i++) {
                        pfd[k++] = (struct pollfd) { .fd = pumps[i].eof ? -1 : pumps[i].from,
                                                     .events = pump_events_from(&pumps[i]) };
                        pfd[k++] = (struct pollfd) { .fd = pumps[i].done ? -1 : pumps[i].to,
                                                     .events = pump_events_to(&pumps[i]) };
                }
                pfd[k++] = (struct pollfd) { .fd = sd_bus_get_fd(bus), .events = (short) sd_bus_get_events(bus) };
                pfd[k++] = (struct pollfd) { .fd = sfd, .events = POLLIN };
                if (s.exited)
                        timeout = (int) ((DRAIN_USEC - (now - exited_at)) / USEC_PER_MSEC) + 1;
                else if (outputs_done)
                        timeout = 1000;
                r = poll(pfd, k, timeout);
                if (r < 0 && errno != EINTR)
                        return -errno;
                for (size_t i = 0; i < n_pumps; i++)
                        pump_step(&pumps[i], pfd[2 * i].revents, pfd[2 * i + 1].revents);
                if (pfd[k - 1].revents)
                        on_signal(bus, sfd, process_path, tty);
                do
                        r = sd_bus_process(bus, NULL);
                while (r > 0);
                if (r < 0)
                        return r;
        }
        restore_terminal();
        for (size_t i = 0; i < n_fds; i++)
                fds[i] = safe_close(fds[i]);
        return s.status;
}
