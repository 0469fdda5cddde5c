/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* sandboxctl exec: relays this terminal to a process Worker.Exec started
 * and learns how it ended. Without a terminal, FDS are the process's stdin
 * (written only with INTERACTIVE; else closed at once), stdout and stderr;
 * with TTY, FDS[0] is the terminal's master: this terminal goes raw (so
 * Ctrl-C is a byte the process's terminal turns into its SIGINT), and a
 * window change of ours is the process's too (ResizeTty). Without a
 * terminal, SIGINT, SIGTERM and SIGHUP are passed to the process (Signal).
 * BUS is subscribed already (Manager.Subscribe), so the process's Exited
 * signal reaches it. Returns the process's exit status (128+N for signal
 * N), or a negative errno. Takes FDS. */

#include <stdbool.h>
#include <stddef.h>
#include <systemd/sd-bus.h>

int exec_relay(sd_bus *bus, const char *process_path, int *fds, size_t n_fds, bool tty, bool interactive);

/* The size of the terminal on FD (rows, columns), or -ENOTTY. */
int exec_terminal_size(int fd, uint16_t *ret_rows, uint16_t *ret_cols);
