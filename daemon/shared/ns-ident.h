/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Namespace identities: a namespace is the same one exactly when its
 * /proc/PID/ns/KIND has the same (st_dev, st_ino). systemd silently runs a
 * unit in the host's namespace where it cannot make a private one, so the
 * walls are verified by comparing a unit's identities with PID 1's. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum NsKind {
        NS_NET,
        NS_IPC,
        NS_MNT,
        _NS_KIND_MAX,
} NsKind;

#define NS_MASK(k) (1u << (k))
#define NS_MASK_ALL (NS_MASK(NS_NET) | NS_MASK(NS_IPC) | NS_MASK(NS_MNT))

typedef struct NsId {
        uint64_t dev;
        uint64_t ino;
} NsId;

typedef struct NsIdSet {
        NsId id[_NS_KIND_MAX];
        unsigned mask;                  /* which entries are set */
} NsIdSet;

/* "net", "ipc", "mnt": the names under /proc/PID/ns and in the text forms. */
const char *ns_kind_to_string(NsKind k);
/* "network", "IPC", "mount": for messages. */
const char *ns_kind_description(NsKind k);

/* Reads the identities of MASK's kinds of PROC ("self", "1"). */
int ns_id_set_read(const char *proc, unsigned mask, NsIdSet *ret);

/* "DEV:INO", both decimal. */
int ns_id_parse(const char *s, NsId *ret);
/* "net=DEV:INO ipc=DEV:INO mnt=DEV:INO", the kinds in the set, in that order. */
int ns_id_set_format(const NsIdSet *s, char *buf, size_t n);
/* The format above: each of REQUIRED's kinds exactly once, nothing else.
 * -EBADMSG otherwise. */
int ns_id_set_parse(const char *s, unsigned required, NsIdSet *ret);

/* 0 when each of MASK's kinds is set in both and differs. A kind equal to
 * HOST's (or missing from either) returns -EHOSTDOWN, and REASON says which:
 * "the network and IPC namespaces are PID 1's (net=..., ipc=...)". */
int ns_id_set_compare(const NsIdSet *own, const NsIdSet *host, unsigned mask, char *reason, size_t n);
