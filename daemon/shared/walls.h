/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The walls a worker's unit is supposed to stand in, as verified on this
 * host rather than assumed: a probe unit with a trusted worker's namespacing
 * reports its namespace identities, and a privileged step of it PID 1's
 * (sandbox-walls, see daemon/runtime/README.md). A namespace that is PID 1's
 * refuses every class; the BPF IP firewall (IPAddressDeny=) is a second wall
 * whose absence is only reported. */

#include <stdbool.h>
#include <stdint.h>

#include "ns-ident.h"

/* The kinds a worker's unit must have private: every one a shared-kernel
 * worker runs in. */
#define WALLS_NS_MASK NS_MASK_ALL

typedef struct WallsStatus {
        bool namespaces_private;        /* the last probe answered, and none is PID 1's */
        char namespaces_reason[320];
        bool ip_firewall;               /* IPAddressDeny= blocked the probe's own connection */
        char ip_firewall_reason[320];
        NsIdSet host;                   /* PID 1's, as the probe's privileged step read them */
        uint64_t probed_usec;           /* CLOCK_REALTIME; 0: never answered */
        /* Refused without a verdict: the probe could not run, did not
         * answer in time, or said nothing usable (a loaded host, a start
         * that failed). Unlike a namespace found shared, another try soon
         * may find the walls (probe.h's retry). */
        bool no_verdict;
} WallsStatus;

void walls_status_init(WallsStatus *s);
/* The probe could not run or its answer is unusable: fail closed, with no
 * verdict (no_verdict). */
void walls_status_refuse(WallsStatus *s, const char *reason);

/* What the probe unit wrote, one line per step:
 *   host net=DEV:INO ipc=DEV:INO mnt=DEV:INO     (or "host unavailable REASON")
 *   unit net=DEV:INO ipc=DEV:INO mnt=DEV:INO     (or "unit unavailable REASON")
 *   ip-firewall ok|unavailable REASON
 * A line that is none of these, a malformed one or a repeated one makes the
 * whole output garbage: -EBADMSG. A missing line is left unset. */
typedef struct WallsReport {
        bool has_host, has_unit, has_ip_firewall;
        NsIdSet host, unit;
        char host_error[256], unit_error[256];  /* set for "unavailable" */
        bool ip_firewall;
        char ip_firewall_reason[256];
} WallsReport;

int walls_report_parse(const char *out, WallsReport *ret);

/* The verdict on one answer of the probe unit that ended with systemd's job
 * RESULT ("done" when it succeeded). */
void walls_status_from_report(WallsStatus *s, const WallsReport *r, const char *result);
