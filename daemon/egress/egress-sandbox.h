/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Confinement the proxy applies to itself before it reads a byte from a
 * worker: no capabilities (effective, permitted, inheritable, ambient and,
 * where allowed, bounding), no_new_privs, and a seccomp allow-list of the
 * system calls the event loop, c-ares, the journal and splice() need.
 * Anything else kills the process; socket activation starts a fresh one on
 * the next connection. */

/* Environment variable that skips only the seccomp filter. ASan builds
 * serve traffic fine under the filter, but LeakSanitizer's exit-time check
 * ptrace()s the process, which the filter forbids: run them either with
 * ASAN_OPTIONS=detect_leaks=0 (filter on) or with this set (leak check on). */
#define EGRESS_NO_SECCOMP_ENV "SANDBOX_EGRESS_NO_SECCOMP"

int egress_drop_capabilities(void);
int egress_install_seccomp(void);
