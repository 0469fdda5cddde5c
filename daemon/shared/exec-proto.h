/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The exec channel: how sandboxd asks a running worker to start another
 * process inside itself (Worker.Exec, the Files API's helpers).
 *
 * Who starts the process is something that already is the worker, so the
 * process inherits the walls by construction and sandboxd gains no
 * privilege (no setns, setuid or chown): a trusted or wasm worker's
 * sandbox-exec forks a supervisor before it writes its readiness token
 * (exec-supervisor.c; the worker's UID, namespaces, cgroup, seccomp filter,
 * NoNewPrivs and capability sets, since it is the unit's own process), and a
 * gVisor worker's sandbox-launch runs `runsc exec` into its own sandbox.
 *
 * The channel is the worker unit's companion socket unit sandbox-ID.socket
 * (SOCK_SEQPACKET at SBX_EXEC_SOCKET_DIR/ID.sock, 0600 root in a 0700 root
 * directory, bound to the worker's unit): only root reaches it, the worker
 * never does. systemd passes the listening fd to the unit's main process as
 * LISTEN_FDS (named SBX_EXEC_FD_NAME); the workload never inherits it.
 *
 * One connection is one process. sandboxd sends one SPAWN message (with the
 * three stdio fds, or none and SBX_EXEC_TTY); the supervisor answers STARTED
 * (the pid in the worker's view, and with a tty the terminal's master fd) or
 * FAILED (an errno: the process never ran), then EXITED once it ended.
 * sandboxd may send SIGNAL in between. sandboxd closing the connection
 * kills the process (SIGKILL to its process group). Every message is one
 * datagram: a header, then for SPAWN the strings. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SBX_EXEC_SOCKET_DIR "/run/sandboxd/exec"
#define SBX_EXEC_FD_NAME "sandboxd-exec"
/* The strings of one SPAWN (working directory, argv, environment, each with
 * its NUL): below the smallest socket buffer a sender may count on. */
#define SBX_EXEC_STRINGS_MAX (128 * 1024)

typedef enum SbxExecType {
        SBX_EXEC_SPAWN = 1,     /* sandboxd: start it (flags, rows, cols, n_argv, n_env; fds) */
        SBX_EXEC_SIGNAL,        /* sandboxd: value = the signal */
        SBX_EXEC_STARTED,       /* supervisor: value = its pid; a tty's master fd */
        SBX_EXEC_FAILED,        /* supervisor: value = the errno; it never ran */
        SBX_EXEC_EXITED,        /* supervisor: value = CLD_EXITED/CLD_KILLED/CLD_DUMPED, status = the status or signal */
} SbxExecType;

#define SBX_EXEC_TTY 1u         /* a terminal instead of three fds */

typedef struct SbxExecHeader {
        uint32_t type;
        uint32_t flags;
        int32_t value;
        int32_t status;
        uint32_t n_argv;
        uint32_t n_env;
        uint16_t rows;
        uint16_t cols;
        uint32_t reserved;
} SbxExecHeader;

/* A SPAWN request decoded: pointers into the message's buffer. */
typedef struct SbxExecSpawn {
        const char *cwd;        /* "" for the worker's own working directory (its home) */
        char **argv;            /* NULL-terminated, argv[0] an absolute path */
        char **env;             /* NULL-terminated KEY=VALUE, added to the worker's own */
} SbxExecSpawn;

/* Sends one message with N_FDS fds (at most 3). 0 or a negative errno. */
int sbx_exec_send(int fd, const SbxExecHeader *h, const void *payload, size_t len, const int *fds, size_t n_fds);
/* Receives one message into H and BUF (up to SIZE bytes, *RET_LEN set), up
 * to MAX_FDS fds into FDS (the rest, and any beyond a truncated message,
 * closed; *RET_N_FDS set). 1 for a message, 0 for EOF, else a negative
 * errno (-EBADMSG for a short or truncated one). */
int sbx_exec_recv(int fd, SbxExecHeader *h, void *buf, size_t size, size_t *ret_len, int *fds, size_t max_fds,
                  size_t *ret_n_fds);
/* The SPAWN payload for CWD (NULL: ""), ARGV and ENV; -E2BIG above
 * SBX_EXEC_STRINGS_MAX. */
int sbx_exec_spawn_encode(const char *cwd, char * const *argv, char * const *env, char **ret, size_t *ret_len);
/* Decodes PAYLOAD per H into RET (its vectors malloc'ed; free with
 * sbx_exec_spawn_done()): -EBADMSG unless it holds exactly n_argv >= 1
 * strings, argv[0] absolute, and n_env KEY=VALUE ones. */
int sbx_exec_spawn_decode(const SbxExecHeader *h, char *payload, size_t len, SbxExecSpawn *ret);
void sbx_exec_spawn_done(SbxExecSpawn *s);
/* Whether a file descriptor systemd passed (LISTEN_FDS) is the exec channel:
 * the listening fd, or -1 when there is none. It unsets LISTEN_FDS,
 * LISTEN_PID and LISTEN_FDNAMES either way, so nothing the caller execs
 * sees them. */
int sbx_exec_take_listen_fd(void);
