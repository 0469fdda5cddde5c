/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The job a warm-pool sandbox waits for (pool.h). sandboxd writes it into
 * the waiting sandbox's stdin, a pipe whose other end only the sandbox holds
 * (the launcher keeps none: it moves its own stdio to /dev/null), and
 * sandbox-exec --pool-wait, already running inside gVisor as the worker's
 * UID, reads exactly one frame, writes the credentials into the sandbox's
 * private credentials tmpfs, lowers RLIMIT_NPROC and execve()s the workload
 * with exactly the environment given. Everything after the frame is the
 * workload's own stdin, so the frame is read byte-exact.
 *
 * Frame: the 8-byte magic, a little-endian uint32 payload size, then records
 * of a type byte, a little-endian uint32 length and that many bytes:
 *   'a' one argv entry        'e' one KEY=VALUE of the final environment
 *   'n' a credential's name   'd' its data (right after its 'n')
 *   'p' RLIMIT_NPROC, 8 bytes little-endian */

#include <stddef.h>
#include <stdint.h>

#include "spec.h"

#define POOL_JOB_MAGIC "SBXJOB1\n"
/* The one byte the waiter writes on its stdout once it runs inside the
 * booted sandbox; sandboxd reads it before anyone else sees the pipe, and
 * counts the sandbox ready only then (its unit's start job is done as soon
 * as the launcher runs, long before runsc has booted). */
#define POOL_WAITER_READY 'R'
#define POOL_JOB_HEADER_SIZE 12
/* Larger jobs (many or large credentials) start cold: the waiting sandbox's
 * credentials tmpfs is sized for this, and the frame must fit the pipe. */
#define POOL_JOB_SIZE_MAX (UINT64_C(1) << 20)

typedef struct PoolJob {
        char **argv;
        char **environment;
        SbxCredential *credentials;
        size_t n_credentials;
        uint64_t nproc;
} PoolJob;

void pool_job_done(PoolJob *j);

/* The whole frame, header included; -E2BIG above POOL_JOB_SIZE_MAX. The
 * caller erases it (erase_and_free) once written. */
int pool_job_encode(const PoolJob *j, uint8_t **ret, size_t *ret_size);

/* HEADER is POOL_JOB_HEADER_SIZE bytes: the payload's size, or -EBADMSG. */
int pool_job_header_parse(const uint8_t *header, size_t *ret_size);
/* Decodes and checks a payload: argv[0] absolute, environment entries
 * KEY=VALUE, credential names valid and unique, nproc positive; -EBADMSG
 * otherwise. */
int pool_job_decode(const uint8_t *data, size_t size, PoolJob *ret);
