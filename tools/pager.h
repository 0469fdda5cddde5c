/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* sandboxctl's pager, as journalctl's: when stdout is a terminal, output goes
 * through $SANDBOXCTL_PAGER, else $PAGER, else "less -FRX"; an empty value or
 * "cat" means none, and without less the output is printed directly. */

#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>

typedef struct Pager {
        pid_t pid;                      /* 0: no pager running */
        int saved_stdout;
        struct sigaction saved_int, saved_quit;
} Pager;

/* The command to run through "sh -c" for these two variables' values (NULL
 * when unset), or NULL when no pager is wanted. *RET_DEFAULT is set when
 * neither named one and less is to be tried. */
const char *pager_pick(const char *sandboxctl_pager, const char *pager, bool *ret_default);

/* Starts the pager when stdout is a terminal; stdout then writes to it.
 * Returns 1 when one runs, 0 when output stays as it was (not a terminal,
 * no pager wanted, or none could be started), a negative errno on failure. */
int pager_open(Pager *p);

/* Ends the pager's input, waits for it to exit and restores stdout. Once the
 * user has quit it, writes to stdout fail with EPIPE: the caller stops
 * quietly (SIGPIPE is ignored by sandboxctl). */
void pager_close(Pager *p);
