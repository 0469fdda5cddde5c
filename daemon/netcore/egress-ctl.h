/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The root-only control channel between sandboxd and a worker's running
 * sandbox-egress: an AF_UNIX SOCK_SEQPACKET listener of the worker's proxy
 * socket unit at EGRESS_CTL_DIR/<id>.ctl (mode 0600, root's, in a 0700
 * directory), handed to the proxy by socket activation like its other
 * listeners. The proxy has no system-bus path by design; this is the only
 * way in besides its credentials, and the proxy answers only a peer whose
 * SO_PEERCRED uid is 0.
 *
 * One request per datagram, one answer per request:
 *   "stats"           -> "stats <bytes-sent> <bytes-received> <connections>"
 *   "policy\n<JSON>"  -> "ok" | "error <errno>"   (the policy replaces the
 *                        running one: egress_policy_from_json()'s format)
 * Pure: formatting and parsing only. */

#include <stddef.h>
#include <stdint.h>

#define EGRESS_CTL_DIR "/run/sandboxd/egress"
/* A policy bigger than one datagram can carry is not sent: sandboxd restarts
 * the proxy instead, which loads it from its credential. */
#define EGRESS_CTL_MSG_MAX (128 * 1024)

typedef struct EgressCounters {
        uint64_t bytes_sent;      /* worker to upstream, through established tunnels */
        uint64_t bytes_received;  /* upstream to worker */
        uint64_t connections;     /* tunnels established since the proxy started */
} EgressCounters;

typedef enum EgressCtlRequest {
        EGRESS_CTL_STATS,
        EGRESS_CTL_POLICY,
        EGRESS_CTL_INVALID,
} EgressCtlRequest;

/* "EGRESS_CTL_DIR/<id>.ctl" into buf; -EINVAL for an id with a '/' or too long. */
int egress_ctl_path(const char *id, char *buf, size_t size);

/* BUF (LEN bytes, not terminated) as a request; for a policy, *RET_JSON_OFFSET
 * is where its JSON starts in BUF (the caller terminates BUF at LEN). */
EgressCtlRequest egress_ctl_parse_request(const char *buf, size_t len, size_t *ret_json_offset);

/* The answers. Each returns the length written (without the NUL) or -ENOBUFS. */
int egress_ctl_format_stats(const EgressCounters *c, char *buf, size_t size);
int egress_ctl_format_status(int error, char *buf, size_t size);

/* "stats ..." into RET: 0 or -EINVAL. */
int egress_ctl_parse_stats(const char *buf, size_t len, EgressCounters *ret);
/* "ok" is 0, "error N" is -N, anything else -EBADMSG. */
int egress_ctl_parse_status(const char *buf, size_t len);
