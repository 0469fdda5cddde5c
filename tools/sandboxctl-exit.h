/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* sandboxctl's exit status (sandboxctl(1), EXIT STATUS): sysexits(3) codes,
 * so a script can tell a refusal from a missing worker from a bus that is
 * not there. `run` exits with the worker's own status instead, which can
 * collide with these; the message on stderr tells them apart. */

#include <sysexits.h>
#include <systemd/sd-bus.h>

enum {
        EXIT_OK = 0,
        EXIT_USAGE = EX_USAGE,            /* 64: bad option, missing argument */
        EXIT_INVALID = EX_DATAERR,        /* 65: the daemon refused the request as invalid */
        EXIT_NOT_FOUND = EX_NOINPUT,      /* 66: no such worker, executable or input file */
        EXIT_UNAVAILABLE = EX_UNAVAILABLE, /* 69: no bus, no daemon, no reply */
        EXIT_FAILED = EX_SOFTWARE,        /* 70: any other failure */
        EXIT_REFUSED = EX_NOPERM,         /* 77: not authorized, isolation unavailable, a quota */
};

/* The exit status for a failed call: from the D-Bus error's name when ERROR
 * is set, else from the negative errno R. */
int exit_code_from_bus_error(const sd_bus_error *error, int r);

/* The exit status for a local input that could not be read (a credential
 * file): EXIT_NOT_FOUND for a missing or unreadable file, else EXIT_FAILED. */
int exit_code_from_errno(int r);
