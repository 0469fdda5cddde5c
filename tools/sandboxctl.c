/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* sandboxctl: the command-line client of sandboxd's org.sandboxd1 bus API.
 * Exit codes: sandboxctl-exit.h; `run` exits with the worker's own status. */

#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <systemd/sd-bus.h>
#include <time.h>

#include "errors.h"
#include "pager.h"
#include "sandboxctl-args.h"
#include "sandboxctl-bus.h"
#include "sandboxctl-endpoints.h"
#include "sandboxctl-exec.h"
#include "sandboxctl-exit.h"
#include "sandboxctl-export.h"
#include "sandboxctl-files.h"
#include "sandboxctl-logs.h"
#include "sandboxctl-mcp.h"
#include "sandboxctl-output.h"
#include "sandboxctl-relay.h"
#include "sandboxctl-spec.h"
#include "sandboxctl-top.h"
#include "sandboxctl-workspace.h"
#include "util.h"

#define BUS_NAME          "org.sandboxd1"
#define MANAGER_PATH      "/org/sandboxd1"
#define MANAGER_INTERFACE "org.sandboxd1.Manager"
#define WORKER_INTERFACE  "org.sandboxd1.Worker"
#define WORKER_PATH_PREFIX "/org/sandboxd1/worker"

/* CreateWorker replies once the unit's start job is done; starting a VM-backed
 * class can take far longer than sd-bus's 25 s default. */
#define CREATE_TIMEOUT_USEC (300 * USEC_PER_SEC)
/* After the worker ended, how long its remaining output may make no progress
 * before the run stops waiting for it. Progress, not total time: a client
 * that was itself descheduled that long must still collect what is there. */
#define OUTPUT_DRAIN_USEC (2 * USEC_PER_SEC)

/* The global options (sandboxctl-args.h), before or after the verb. */
static struct {
        bool ask_password;      /* every call of this run may let polkit ask */
        bool json;
        bool legend;
        bool pager;             /* for the verbs that page (logs) */
} arg = { .ask_password = true, .legend = true, .pager = true };

_printf_(1, 2)
static void print_error(const char *fmt, ...) {
        va_list ap;

        fputs("sandboxctl: ", stderr);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
}

/* What the daemon said, as "name: message", when it said anything; returns
 * the exit status that failure gets. */
static int print_failure(const char *what, const sd_bus_error *error, int r) {
        if (error && sd_bus_error_is_set(error))
                print_error("%s: %s", error->name, error->message ?: what);
        else
                print_error("%s: %s", what, strerror(r < 0 ? -r : r));
        return exit_code_from_bus_error(error, r);
}

static void help(void) {
        printf("sandboxctl - control sandboxd, the conversation-worker supervisor\n"
               "\n"
               "SYNOPSIS\n"
               "  sandboxctl [--help|--version]\n"
               "  sandboxctl run [OPTIONS] [--] COMMAND [ARGUMENTS...]\n"
               "  sandboxctl create [OPTIONS] [--] COMMAND [ARGUMENTS...]\n"
               "  sandboxctl list [--all] [--state=STATE[,STATE...]] [--json] [--no-legend]\n"
               "  sandboxctl status ID [--json]\n"
               "  sandboxctl stop ID\n"
               "  sandboxctl suspend ID\n"
               "  sandboxctl resume ID\n"
               "  sandboxctl attach ID\n"
               "  sandboxctl top [-d SECONDS] [-n N] [--json] [--no-legend]\n"
               "  sandboxctl egress ID [--allow PATTERN]... [--deny PATTERN]... [--rate BYTES]\n"
               "                       [--mode enforce|report] [--json]\n"
               "  sandboxctl exec [-t] [-i] [--setenv NAME=VALUE]... [--workdir DIR] ID [--] COMMAND...\n"
               "  sandboxctl preflight [--json] [--no-legend]\n"
               "  sandboxctl logs ID [-f] [--egress] [-n N] [--json] [--no-legend] [--no-pager]\n"
               "  sandboxctl export --format=kubernetes --image=IMAGE [OPTIONS] [--] COMMAND...\n"
               "  sandboxctl workspace create NAME --size SIZE [--class CLASS]\n"
               "  sandboxctl workspace list [--json] [--no-legend]\n"
               "  sandboxctl workspace delete NAME\n"
               "  sandboxctl cp [-r] SRC DST            (SRC or DST: ID:PATH; \"-\": stdin/stdout)\n"
               "  sandboxctl ls [--json] [--no-legend] ID:PATH\n"
               "  sandboxctl mcp [--listen PATH|127.0.0.1:PORT [--token-file FILE]] [OPTIONS]\n"
               "\n"
               "COMMANDS\n"
               "  run       Create a worker running COMMAND, connect this terminal's\n"
               "            stdin/stdout to it, wait until it ends and exit with its exit\n"
               "            status. COMMAND is an absolute path or a name sandboxd finds in\n"
               "            /usr/local/bin:/usr/bin:/bin as the worker sees them (not in PATH).\n"
               "            End of input is passed on as end of the worker's stdin.\n"
               "            SIGINT, SIGTERM and SIGHUP stop the worker (exit 128+N).\n"
               "  create    Create a worker and print its id (--json: {\"id\", \"path\"}); do not\n"
               "            wait.\n"
               "  list      List the workers: ID CLASS STATE RESULT OWNER AGE IDLE MEMORY\n"
               "            (everyone's to root and holders of org.sandboxd1.manage-workers,\n"
               "            else your own). STATE is starting, running, stopping, suspending,\n"
               "            suspended, resuming or ended;\n"
               "            RESULT says how an ended worker ended: exited N, killed by signal N,\n"
               "            idle, timeout, oom, stopped or failed: REASON.\n"
               "            Alive workers only, unless:\n"
               "    -a --all              also the ended workers sandboxd still remembers\n"
               "       --state=STATES     only workers in these states (comma-separated)\n"
               "  status    Show every property of worker ID.\n"
               "  stop      Stop worker ID (asynchronously); a suspended one's image and home go.\n"
               "  suspend   Checkpoint gVisor worker ID to disk and end its unit, keeping its\n"
               "            id, home and spec; returns once it is suspended.\n"
               "  resume    Restore suspended worker ID in a new unit; returns once it runs.\n"
               "  attach    Connect this terminal to worker ID's channel until it closes;\n"
               "            interrupting attach only detaches, the worker keeps running.\n"
               "            A suspended worker is resumed first.\n"
               "  top       The workers' use, refreshed every -d/--delay SECONDS (default 1):\n"
               "            ID CLASS STATE CPU%% MEMORY PEAK TASKS OOM IO-READ IO-WRITE NET-OUT\n"
               "            NET-IN CONNS; CPU%% of one CPU over the delay, the busiest first;\n"
               "            '-' where this host cannot tell. -n/--iterations N: N tables,\n"
               "            then exit. --json: one sample, after one delay.\n"
               "  egress    Change worker ID's egress policy while it runs: --allow adds a\n"
               "            pattern to its list, --deny takes one out, --rate sets the bytes\n"
               "            per second per destination, --mode enforce or report. Tunnels to\n"
               "            hosts no longer allowed are closed. Without options, show it.\n"
               "  exec      Run COMMAND as another process in running worker ID, with the\n"
               "            worker's user, walls and limits, and exit with its status (128+N\n"
               "            for signal N). COMMAND as for run. Like docker exec:\n"
               "    -t --tty              give it a terminal (this one's size, kept in step)\n"
               "    -i --interactive      pass this terminal's input (with -t: a shell); without\n"
               "                          it the process's stdin is empty\n"
               "       --setenv NAME=VALUE  add to its environment (repeatable)\n"
               "       --workdir DIR      start it in DIR, inside the worker's home\n"
               "  cp        Copy a file (-r: a directory) into or out of worker ID's home; ID:PATH\n"
               "            is relative to the home (or absolute inside it). A file is replaced\n"
               "            atomically; symlinks are never followed, and skipped in a tree.\n"
               "  ls        List ID:PATH, a directory (or one entry) of worker ID's home:\n"
               "            MODE UID GID SIZE MODIFIED NAME.\n"
               "  preflight Re-probe the isolation runtimes and the walls (namespaces, IP firewall)\n"
               "            and show which classes are usable.\n"
               "  logs      Show worker ID's journal entries: sandboxd's about it and its\n"
               "            launcher's (to its owner, root and holders of manage-workers;\n"
               "            also after it ended). -f/--follow prints new ones until the\n"
               "            worker has ended; --egress adds its proxy's decisions;\n"
               "            -n/--lines N only the last N; --no-pager: do not page through\n"
               "            $SANDBOXCTL_PAGER, $PAGER or less on a terminal.\n"
               "  export    Print the worker run/create's options describe as a multi-document\n"
               "            YAML for Kubernetes with Agent Sandbox (agents.x-k8s.io v1beta1),\n"
               "            under the operator's sandboxd.conf; what the cluster enforces more\n"
               "            weakly is a WARNING on stderr, what it cannot express is refused.\n"
               "            Talks to no daemon. Its options, besides run/create's:\n"
               "       --format FORMAT    kubernetes (required)\n"
               "       --image IMAGE      the worker container's image (required)\n"
               "       --egress-image IMAGE  sandbox-egress's image (with --allow; default\n"
               "                          localhost/sandbox-egress:VERSION)\n"
               "       --name NAME        the objects' name prefix (default sandboxd-worker)\n"
               "       --namespace NS     their namespace (default: none, kubectl's)\n"
               "       --pool N           a SandboxWarmPool of N and a SandboxClaim instead\n"
               "                          of one Sandbox\n"
               "       --workspace        the home on a PersistentVolumeClaim of --disk\n"
               "       --config PATH      the policy to apply (default /etc/sandboxd.conf)\n"
               "  workspace Files that outlive a worker: an ext4 image of its own, the home\n"
               "            of one worker at a time (run/create --workspace NAME).\n"
               "            create makes one capped at SIZE (writes beyond it fail with\n"
               "            ENOSPC); every worker on it runs at least as CLASS. list shows\n"
               "            NAME OWNER CLASS SIZE-MAX SIZE-USED IN-USE (yours, or everyone's\n"
               "            to root and holders of org.sandboxd1.manage-workspaces); delete\n"
               "            wipes one that no worker uses.\n"
               "       --size SIZE        the workspace's cap (create; required)\n"
               "  mcp       Serve the Model Context Protocol (stdio, or Streamable HTTP with\n"
               "            --listen) so an agent host can start workers and run commands\n"
               "            in them, inside ceilings this command's options set; every\n"
               "            worker is Origin=llm-generated. See sandboxctl mcp --help.\n"
               "\n"
               "OPTIONS FOR run AND create (only given options are sent; sandboxd.conf\n"
               "supplies the rest)\n"
               "  --class CLASS           trusted, standard, devcontainer, untrusted,\n"
               "                          hostile or wasm\n"
               "  --origin ORIGIN         where the code came from: first-party (default), user,\n"
               "                          llm-generated, marketplace or an operator's origin;\n"
               "                          llm-generated and marketplace run at least untrusted\n"
               "  --memory SIZE           memory cap; SIZE is bytes or uses a K, M, G, T\n"
               "                          suffix (base 1024), e.g. 512M, 1.5G\n"
               "  --tasks N               cap on processes and threads\n"
               "  --cpu PERCENT           CPU quota in percent of one CPU (e.g. 50 or 200%%)\n"
               "  --runtime DURATION      stop the worker after this long; DURATION is seconds\n"
               "                          or uses suffixes: ms, s, min, h, d, w (e.g. 1h30min)\n"
               "  --idle DURATION         stop it after no byte crossed its channel (and no\n"
               "                          request its endpoint served) this long\n"
               "  --setenv KEY=VALUE      set an environment variable (repeatable); nothing\n"
               "                          else is inherited\n"
               "  --credential NAME:PATH  read PATH (with your own permissions) and pass its\n"
               "                          bytes as $CREDENTIALS_DIRECTORY/NAME (repeatable)\n"
               "  --disk SIZE             size cap of the worker's home\n"
               "  --workspace NAME        the workspace NAME is the worker's home (required by\n"
               "                          --class devcontainer; not with --disk)\n"
               "  --allow PATTERN         allow egress to a host pattern: example.org,\n"
               "                          *.example.org, optionally :PORT (repeatable)\n"
               "  --egress-rate SIZE      egress bytes per second per destination\n"
               "  --egress-mode MODE      enforce (default) or report\n"
               "  --idle-action ACTION    stop (default) or suspend when idle (--idle): a\n"
               "                          suspended gVisor worker resumes on the next attach\n"
               "  --service NAME=URL      an https://HOST[:PORT][/BASE] upstream the worker calls\n"
               "                          through the proxy's credential broker, at\n"
               "                          $SANDBOX_SERVICE_<NAME>_URL (repeatable)\n"
               "  --service-credential NAME:PATH\n"
               "                          the secret the broker injects (one trailing newline\n"
               "                          dropped); the worker never sees it\n"
               "  --service-header NAME:HEADER\n"
               "                          header to inject, {} for the secret\n"
               "                          (default \"Authorization: Bearer {}\")\n"
               "  --service-method NAME:M[,M...]  allowed methods (default GET)\n"
               "  --service-path NAME:PREFIX      allowed path prefix (repeatable; default /)\n"
               "  --service-max-request NAME:SIZE, --service-max-response NAME:SIZE\n"
               "                          body caps (default 1M each)\n"
               "  --service-rate NAME:SIZE        bytes per second to the service\n"
               "  --publish PORT          serve the worker's PORT through its gate, on\n"
               "                          /run/sandboxd-endpoints/ID.sock (sandboxctl endpoints)\n"
               "  --publish-token-file PATH\n"
               "                          the bearer token callers must send (one trailing\n"
               "                          newline dropped); the worker never sees it\n"
               "  --publish-max-request SIZE, --publish-max-response SIZE\n"
               "                          body caps (default 1M each)\n"
               "  --publish-timeout DURATION      the handler's answer, at most (default 30s)\n"
               "  --publish-max-concurrent N      requests at the handler at once (default 16)\n"
               "  --publish-public        no token (where sandboxd.conf allows it)\n"
               "  --publish-name NAME     a second name of the endpoint, unique on the host\n"
               "                          (NAME.sock beside ID.sock; released with the worker)\n"
               "\n"
               "GLOBAL OPTIONS (before or after the command)\n"
               "  -h --help               show this help\n"
               "     --version            show the version\n"
               "     --json               print JSON (list, status, preflight, logs, create;\n"
               "                          stop prints nothing; not with run or attach)\n"
               "     --no-legend          omit the header and footer (list, preflight, logs)\n"
               "     --no-pager           do not pipe output into a pager (logs)\n"
               "     --no-ask-password    never let polkit ask for a password\n"
               "\n"
               "ENVIRONMENT\n"
               "  SANDBOXCTL_BUS_ADDRESS  connect to this D-Bus address instead of the\n"
               "                          system bus\n"
               "  SANDBOXCTL_PAGER, PAGER the pager of logs (default: less; \"\" or cat: none)\n"
               "\n"
               "EXIT STATUS\n"
               "  0   success\n"
               "  64  usage error (a bad option, a missing argument)\n"
               "  65  sandboxd refused the request as invalid (InvalidSpec, Invalid*, ...)\n"
               "  66  not found: no such worker, executable or input file\n"
               "  69  the bus or sandboxd is unavailable, or did not reply\n"
               "  70  any other failure\n"
               "  77  refused: not authorized, isolation unavailable, a quota\n"
               "  run exits with the worker's own exit status (128+N when it was killed by\n"
               "  signal N), which can be any of the above: the message on stderr\n"
               "  (\"sandboxctl: ...\") tells a failure of sandboxctl apart.\n");
}

static int bus_connect(sd_bus **ret) {
        const char *address = getenv("SANDBOXCTL_BUS_ADDRESS");
        int r;

        r = sandboxctl_bus_open(arg.ask_password, ret);
        if (r < 0)
                print_error("Failed to connect to %s: %s", isempty(address) ? "the system bus" : address,
                            strerror(-r));
        return r;
}

enum {
        ARG_ALL = 0x100,
        ARG_STATE,
        ARG_SIZE,
        ARG_CLASS,
        ARG_ALLOW,
        ARG_DENY,
        ARG_RATE,
        ARG_MODE,
};

/* Applies a global option found before or after the verb: 0, or 1 when it
 * printed what was asked and the program is done. */
static int apply_global_option(int c) {
        switch (c) {
        case ARG_VERSION:
                printf("sandboxctl %s\n", SANDBOXCTL_VERSION);
                return 1;
        case ARG_NO_ASK_PASSWORD:
                arg.ask_password = false;
                return 0;
        case ARG_JSON:
                arg.json = true;
                return 0;
        case ARG_NO_LEGEND:
                arg.legend = false;
                return 0;
        case ARG_NO_PAGER:
                arg.pager = false;
                return 0;
        default:
                return 0;
        }
}

/* The verbs' getopt loop around their own handler OWN (NULL: none of their
 * own). Returns 0 on success, 1 when --help or --version printed what was
 * asked, -EINVAL after printing a usage error. */
static int parse_verb_options(int argc, char *argv[], const char *short_options, const struct option *options,
                              int (*own)(int c, const char *value, void *userdata), void *userdata) {
        int c, r;

        optind = 0;
        while ((c = getopt_long(argc, argv, short_options, options, NULL)) >= 0) {
                if (c == 'h') {
                        help();
                        return 1;
                }
                if (is_global_option(c)) {
                        if (apply_global_option(c) > 0)
                                return 1;
                        continue;
                }
                if (c == ':') {
                        print_error("%s: option '%s' requires an argument", argv[0], argv[optind - 1]);
                        return -EINVAL;
                }
                if (c == '?' || !own) {
                        print_error("%s: unknown option '%s'", argv[0], argv[optind - 1]);
                        return -EINVAL;
                }
                r = own(c, optarg, userdata);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int check_positional(int argc, char *argv[], int n_positional) {
        if (argc - optind == n_positional)
                return 0;
        print_error("%s: expected %s, got %d argument%s", argv[0],
                    n_positional == 0 ? "no arguments" : "one worker ID", argc - optind,
                    argc - optind == 1 ? "" : "s");
        return -EINVAL;
}

/* The verbs with no options of their own: N_POSITIONAL arguments, left in
 * *ret_positional. */
static int parse_verb_args(int argc, char *argv[], int n_positional, char ***ret_positional) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                SANDBOXCTL_GLOBAL_OPTIONS,
                {}
        };
        int r;

        r = parse_verb_options(argc, argv, ":h", options, NULL, NULL);
        if (r != 0)
                return r;
        r = check_positional(argc, argv, n_positional);
        if (r < 0)
                return r;
        *ret_positional = argv + optind;
        return 0;
}

#define PARSE_OR_RETURN(expr)                                                     \
        do {                                                                       \
                int _p = (expr);                                                   \
                if (_p != 0)                                                       \
                        return _p > 0 ? EXIT_OK : EXIT_USAGE;                      \
        } while (0)

/* --json for the verbs that relay the worker's own bytes: nothing to format. */
static int refuse_json(const char *verb) {
        if (!arg.json)
                return 0;
        print_error("%s: --json does not apply: %s relays the worker's own output", verb, verb);
        return -EINVAL;
}

/* A suspend is answered when its checkpoint (a unit of up to 540 s) is done,
 * a resume or an attach of a suspended worker when the restore (up to 300 s)
 * is: sd-bus's 25 s would give up on a big one still under way. */
#define SUSPEND_RESUME_TIMEOUT_USEC (600 * USEC_PER_SEC)

static uint64_t method_timeout(const char *method) {
        return streq(method, "SuspendWorker") || streq(method, "ResumeWorker") || streq(method, "OpenChannel")
                       ? SUSPEND_RESUME_TIMEOUT_USEC : 0;
}

static int call_manager(sd_bus *bus, const char *method, sd_bus_error *error, sd_bus_message **reply,
                        const char *types, ...) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        va_list ap;
        int r;

        r = sd_bus_message_new_method_call(bus, &m, BUS_NAME, MANAGER_PATH, MANAGER_INTERFACE, method);
        if (r < 0)
                return r;
        if (types) {
                va_start(ap, types);
                r = sd_bus_message_appendv(m, types, ap);
                va_end(ap);
                if (r < 0)
                        return r;
        }
        return sd_bus_call(bus, m, method_timeout(method), error, reply);
}

typedef struct ListArgs {
        unsigned states;
        bool all;
        bool states_given;
} ListArgs;

static int list_option(int c, const char *value, void *userdata) {
        _cleanup_free_ char *bad = NULL;
        ListArgs *a = userdata;
        int r;

        switch (c) {
        case 'a':
        case ARG_ALL:
                a->all = true;
                return 0;
        case ARG_STATE:
                r = worker_states_parse(value, &a->states, &bad);
                if (r == -EINVAL) {
                        print_error("list: unknown state '%s' (expected starting, running, stopping, ended, suspending, "
                                    "suspended or resuming)", bad);
                        return r;
                }
                if (r < 0) {
                        print_error("list: %s", strerror(-r));
                        return r;
                }
                a->states_given = true;
                return 0;
        default:
                return -EINVAL;
        }
}

static int append_list_options(sd_bus_message *m, unsigned states) {
        int r;

        r = sd_bus_message_open_container(m, 'a', "{sv}");
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'e', "sv");
        if (r >= 0)
                r = sd_bus_message_append(m, "s", "States");
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'v', "as");
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'a', "s");
        for (size_t i = 0; r >= 0 && worker_state_names[i]; i++)
                if (states & (1u << i))
                        r = sd_bus_message_append(m, "s", worker_state_names[i]);
        for (int depth = 0; r >= 0 && depth < 4; depth++)
                r = sd_bus_message_close_container(m);
        return r;
}

/* ListWorkersEx, or ListWorkers from a daemon that predates it (a running
 * daemon is not restarted by an upgrade): the rows in STATES, in *ret_reply's
 * strings. */
static int list_workers(sd_bus *bus, unsigned states, sd_bus_message **ret_reply, WorkerEntry **ret, size_t *ret_n,
                        sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL, *reply = NULL;
        _cleanup_free_ WorkerEntry *workers = NULL;
        size_t n = 0, kept = 0;
        bool legacy = false;
        int r;

        r = sd_bus_message_new_method_call(bus, &m, BUS_NAME, MANAGER_PATH, MANAGER_INTERFACE, "ListWorkersEx");
        if (r < 0)
                return r;
        r = append_list_options(m, states);
        if (r < 0)
                return r;
        r = sd_bus_call(bus, m, 0, error, &reply);
        if (r < 0 && sd_bus_error_has_name(error, SD_BUS_ERROR_UNKNOWN_METHOD)) {
                sd_bus_error_free(error);
                legacy = true;
                r = call_manager(bus, "ListWorkers", error, &reply, NULL);
        }
        if (r < 0)
                return r;
        r = legacy ? worker_list_read(reply, &workers, &n) : worker_list_ex_read(reply, &workers, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++)
                if (worker_states_match(states, workers[i].state))
                        workers[kept++] = workers[i];
        *ret_reply = TAKE_PTR(reply);
        *ret = TAKE_PTR(workers);
        *ret_n = kept;
        return 0;
}

static char *owner_name(uid_t uid) {
        struct passwd pw, *found = NULL;
        char buf[4096];

        if (getpwuid_r(uid, &pw, buf, sizeof(buf), &found) != 0 || !found)
                return NULL;
        return strdup(found->pw_name);
}

/* systemd's MemoryCurrent of a live worker's unit, readable by anyone;
 * UINT64_MAX when it cannot say (no accounting, the unit gone). */
static uint64_t unit_memory(sd_bus *bus, const char *unit) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        _cleanup_free_ char *path = NULL;
        uint64_t v = UINT64_MAX;

        if (!unit || sd_bus_path_encode("/org/freedesktop/systemd1/unit", unit, &path) < 0)
                return UINT64_MAX;
        if (sd_bus_get_property_trivial(bus, "org.freedesktop.systemd1", path, "org.freedesktop.systemd1.Service",
                                        "MemoryCurrent", &e, 't', &v) < 0)
                return UINT64_MAX;
        return v;
}

static int verb_list(int argc, char *argv[]) {
        static const struct option options[] = {
                { "help",  no_argument,       NULL, 'h' },
                { "all",   no_argument,       NULL, ARG_ALL },
                { "state", required_argument, NULL, ARG_STATE },
                SANDBOXCTL_GLOBAL_OPTIONS,
                {}
        };
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_free_ WorkerEntry *workers = NULL;
        _cleanup_free_ char **names = NULL;
        ListArgs args = {};
        size_t n = 0;
        int r;

        PARSE_OR_RETURN(parse_verb_options(argc, argv, ":ha", options, list_option, &args));
        PARSE_OR_RETURN(check_positional(argc, argv, 0));
        if (!args.states_given)
                args.states = args.all ? WORKER_STATES_ALL : WORKER_STATES_ALIVE;
        if (bus_connect(&bus) < 0)
                return EXIT_UNAVAILABLE;
        r = list_workers(bus, args.states, &reply, &workers, &n, &error);
        if (r < 0)
                return print_failure("Failed to list workers", &error, r);
        worker_list_sort(workers, n);
        names = calloc(MAX(n, 1u), sizeof(char *));
        if (!names)
                return print_failure("Failed to list workers", NULL, -ENOMEM);
        for (size_t i = 0; i < n; i++) {
                workers[i].owner_name = names[i] = owner_name(workers[i].owner);
                if (!streq(workers[i].state, "ended"))
                        workers[i].memory_bytes = unit_memory(bus, workers[i].unit);
        }

        if (arg.json) {
                _cleanup_(json_object_putp) json_object *o = worker_list_to_json(workers, n);
                r = o ? json_print(o, stdout) : -ENOMEM;
        } else {
                _cleanup_(table_freep) Table *t = worker_list_to_table(workers, n, now_usec(CLOCK_REALTIME));
                r = t ? table_print(t, stdout, arg.legend) : -ENOMEM;
                if (r >= 0 && arg.legend && printf("\n%zu worker%s listed.\n", n, n == 1 ? "" : "s") < 0)
                        r = -EIO;
        }
        for (size_t i = 0; i < n; i++)
                free(names[i]);
        if (r < 0)
                return print_failure("Failed to print the list", NULL, r);
        return EXIT_OK;
}

static int verb_preflight(int argc, char *argv[]) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_free_ PreflightEntry *entries = NULL;
        _cleanup_free_ PreflightWall *walls = NULL;
        size_t n, n_walls;
        char **positional;
        int r;

        PARSE_OR_RETURN(parse_verb_args(argc, argv, 0, &positional));
        if (bus_connect(&bus) < 0)
                return EXIT_UNAVAILABLE;
        r = call_manager(bus, "Preflight", &error, &reply, NULL);
        if (r < 0)
                return print_failure("Failed to run the preflight checks", &error, r);
        r = preflight_read(reply, &entries, &n);
        if (r >= 0)
                r = preflight_walls_read(reply, &walls, &n_walls);
        if (r < 0)
                return print_failure("Failed to parse the preflight reply", NULL, r);

        if (arg.json) {
                _cleanup_(json_object_putp) json_object *o = preflight_report_to_json(entries, n, walls, n_walls);
                if (!o || json_print(o, stdout) < 0)
                        return print_failure("Failed to print JSON", NULL, -ENOMEM);
                return EXIT_OK;
        }
        _cleanup_(table_freep) Table *t = preflight_to_table(entries, n);
        if (!t || table_print(t, stdout, arg.legend) < 0)
                return print_failure("Failed to print the table", NULL, -ENOMEM);
        /* The walls are not classes: lines of their own below the table. */
        if ((n_walls > 0 && arg.legend && putchar('\n') == EOF) || preflight_walls_print(walls, n_walls, stdout) < 0)
                return print_failure("Failed to print the walls", NULL, -EIO);
        return EXIT_OK;
}

static int verb_status(int argc, char *argv[]) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL, *properties = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(json_object_putp) json_object *o = NULL;
        const char *path;
        char **positional;
        int r;

        PARSE_OR_RETURN(parse_verb_args(argc, argv, 1, &positional));
        if (bus_connect(&bus) < 0)
                return EXIT_UNAVAILABLE;
        r = call_manager(bus, "GetWorker", &error, &reply, "s", positional[0]);
        if (r < 0)
                return print_failure("Failed to look up the worker", &error, r);
        r = sd_bus_message_read(reply, "o", &path);
        if (r < 0)
                return print_failure("Failed to parse the GetWorker reply", NULL, r);
        r = sd_bus_call_method(bus, BUS_NAME, path, "org.freedesktop.DBus.Properties", "GetAll", &error,
                               &properties, "s", WORKER_INTERFACE);
        if (r < 0)
                return print_failure("Failed to read the worker's properties", &error, r);
        r = properties_to_json(properties, &o);
        if (r < 0)
                return print_failure("Failed to parse the worker's properties", NULL, r);
        r = arg.json ? json_print(o, stdout) : properties_print(o, stdout);
        return r < 0 ? print_failure("Failed to print the properties", NULL, r) : EXIT_OK;
}

/* stop ID, suspend ID, resume ID: one Manager method on the worker, answered
 * once it is done. --json is accepted: they print nothing, in JSON as in text. */
static int verb_worker_method(int argc, char *argv[], const char *method, const char *failure) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        char **positional;
        int r;

        PARSE_OR_RETURN(parse_verb_args(argc, argv, 1, &positional));
        if (bus_connect(&bus) < 0)
                return EXIT_UNAVAILABLE;
        r = call_manager(bus, method, &error, NULL, "s", positional[0]);
        if (r < 0)
                return print_failure(failure, &error, r);
        return EXIT_OK;
}

static int verb_stop(int argc, char *argv[]) {
        return verb_worker_method(argc, argv, "StopWorker", "Failed to stop the worker");
}

static int verb_suspend(int argc, char *argv[]) {
        return verb_worker_method(argc, argv, "SuspendWorker", "Failed to suspend the worker");
}

static int verb_resume(int argc, char *argv[]) {
        return verb_worker_method(argc, argv, "ResumeWorker", "Failed to resume the worker");
}

/* Returns a channel fd we own, or a negative errno with *error filled in. */
static int open_channel(sd_bus *bus, const char *id, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int fd, r;

        r = call_manager(bus, "OpenChannel", error, &reply, "s", id);
        if (r < 0)
                return r;
        r = sd_bus_message_read(reply, "h", &fd);
        if (r < 0)
                return r;
        /* The fd belongs to the reply message: keep a copy that outlives it. */
        fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        return fd < 0 ? -errno : fd;
}

static int verb_attach(int argc, char *argv[]) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_free_ Relay *relay = NULL;
        _cleanup_close_ int channel = -1;
        char **positional;
        int r;

        PARSE_OR_RETURN(parse_verb_args(argc, argv, 1, &positional));
        PARSE_OR_RETURN(refuse_json("attach"));
        if (bus_connect(&bus) < 0)
                return EXIT_UNAVAILABLE;
        channel = open_channel(bus, positional[0], &error);
        if (channel < 0)
                return print_failure("Failed to open the worker's channel", &error, channel);
        /* The channel is all we need: the bus connection has nothing more to say. */
        bus = sd_bus_flush_close_unref(bus);

        relay = malloc(sizeof(Relay));
        if (!relay)
                return print_failure("Failed to allocate the relay", NULL, -ENOMEM);
        r = relay_init(relay, STDIN_FILENO, STDOUT_FILENO, channel);
        if (r >= 0)
                r = relay_run(relay);
        if (r < 0)
                return print_failure("Channel failed", NULL, r);
        return EXIT_OK;
}

/* What `run` learns about its worker while relaying. */
typedef struct RunState {
        const char *id;
        const char *path;
        bool ended;
        bool daemon_restarted;  /* its subscriptions went with the old one */
        int exit_status;  /* -1 until known */
        char reason[32];
} RunState;

static void run_state_note_state(RunState *s, const char *state) {
        /* "exited" and "failed": a daemon older than State=ended. */
        if (streq(state, "ended") || streq(state, "exited") || streq(state, "failed"))
                s->ended = true;
}

static int run_state_read_property(sd_bus_message *m, const char *name, void *userdata) {
        RunState *s = userdata;
        int r;

        if (streq(name, "State")) {
                const char *state;
                r = sd_bus_message_read(m, "v", "s", &state);
                if (r >= 0)
                        run_state_note_state(s, state);
        } else if (streq(name, "ExitStatus")) {
                int32_t status;
                r = sd_bus_message_read(m, "v", "i", &status);
                if (r >= 0 && status >= 0)
                        s->exit_status = status;
        } else
                r = sd_bus_message_skip(m, "v");
        return r;
}

static int run_state_read_properties(RunState *s, sd_bus_message *m) {
        return bus_read_dict(m, run_state_read_property, s);
}

static int on_properties_changed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        RunState *s = userdata;
        const char *interface;

        /* The match covers every worker (our id was not known when it was
         * added): only ours counts. */
        if (!s->path || !streq_ptr(sd_bus_message_get_path(m), s->path))
                return 0;
        if (sd_bus_message_read(m, "s", &interface) < 0 || !streq(interface, WORKER_INTERFACE))
                return 0;
        (void) run_state_read_properties(s, m);
        return 0;
}

static int on_worker_removed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        RunState *s = userdata;
        const char *id, *path, *reason;

        if (sd_bus_message_read(m, "sos", &id, &path, &reason) < 0)
                return 0;
        if (!s->id || !streq(id, s->id))
                return 0;
        s->ended = true;
        snprintf(s->reason, sizeof(s->reason), "%s", reason);
        return 0;
}

/* Reads State and ExitStatus directly: covers an end that happened before we
 * looked, and a final ExitStatus that no signal carried. */
static int run_state_refresh(RunState *s, sd_bus *bus) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        int r;

        r = sd_bus_call_method(bus, BUS_NAME, s->path, "org.freedesktop.DBus.Properties", "GetAll", &error,
                               &reply, "s", WORKER_INTERFACE);
        if (r < 0)
                return r;
        return run_state_read_properties(s, reply);
}

/* sandboxd sends its signals about a worker only to clients that asked,
 * and only those about workers they may list. A daemon older than
 * Subscribe broadcasts them. */
static int subscribe(sd_bus *bus, sd_bus_error *error) {
        int r = call_manager(bus, "Subscribe", error, NULL, NULL);

        if (r < 0 && sd_bus_error_has_name(error, SD_BUS_ERROR_UNKNOWN_METHOD)) {
                sd_bus_error_free(error);
                return 0;
        }
        return r;
}

static int on_daemon_owner_changed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        RunState *s = userdata;
        const char *name, *old_owner, *new_owner;

        if (!streq_ptr(sd_bus_message_get_sender(m), "org.freedesktop.DBus") ||
            sd_bus_message_read(m, "sss", &name, &old_owner, &new_owner) < 0)
                return 0;
        if (streq(name, BUS_NAME) && !isempty(new_owner))
                s->daemon_restarted = true;
        return 0;
}

static int add_worker_matches(sd_bus *bus, RunState *s, sd_bus_slot **ret_changed, sd_bus_slot **ret_removed,
                              sd_bus_slot **ret_owner) {
        int r;

        r = sd_bus_add_match(bus, ret_owner,
                             "type='signal',sender='org.freedesktop.DBus',path='/org/freedesktop/DBus',"
                             "interface='org.freedesktop.DBus',member='NameOwnerChanged',arg0='" BUS_NAME "'",
                             on_daemon_owner_changed, s);
        if (r < 0)
                return r;

        r = sd_bus_add_match(bus, ret_changed,
                             "type='signal',sender='" BUS_NAME "',"
                             "interface='org.freedesktop.DBus.Properties',member='PropertiesChanged',"
                             "path_namespace='" WORKER_PATH_PREFIX "',arg0='" WORKER_INTERFACE "'",
                             on_properties_changed, s);
        if (r < 0)
                return r;
        return sd_bus_match_signal(bus, ret_removed, BUS_NAME, MANAGER_PATH, MANAGER_INTERFACE, "WorkerRemoved",
                                   on_worker_removed, s);
}

static int create_worker(sd_bus *bus, const CliSpec *spec, sd_bus_error *error, sd_bus_message **ret_reply) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        int r;

        r = sd_bus_message_new_method_call(bus, &m, BUS_NAME, MANAGER_PATH, MANAGER_INTERFACE, "CreateWorker");
        if (r < 0)
                return r;
        r = cli_spec_append(m, spec);
        if (r < 0)
                return r;
        /* m is marked sensitive: freeing it wipes the credential bytes it carries. */
        return sd_bus_call(bus, m, CREATE_TIMEOUT_USEC, error, ret_reply);
}

/* Advice, not a refusal: the daemon decides, and with an empty floor its
 * proxy refuses every destination as outside-operator-floor. A daemon that
 * does not say what its floor is gets no hint. */
static void hint_empty_egress_floor(sd_bus *bus) {
        _cleanup_strv_free_ char **floor = NULL;

        if (sd_bus_get_property_strv(bus, BUS_NAME, MANAGER_PATH, MANAGER_INTERFACE, "EgressFloor", NULL, &floor) < 0)
                return;
        if (strv_length(floor) == 0)
                fprintf(stderr, "sandboxctl: hint: the operator's egress floor is empty, so every --allow is refused; "
                        "see [Egress] in " SANDBOXD_CONFIG_FILE "\n");
}

static int run_exit_code(const RunState *s) {
        if (!isempty(s->reason) && !streq(s->reason, "exited"))
                print_error("Worker %s ended: %s (exit status %i)", s->id, s->reason, s->exit_status);
        if (s->exit_status >= 0 && s->exit_status <= 255)
                return s->exit_status;
        return EXIT_FAILED;
}

static int poll_timeout_ms(uint64_t deadline_usec) {
        uint64_t now = now_usec(CLOCK_MONOTONIC);

        if (deadline_usec == UINT64_MAX)
                return -1;
        if (deadline_usec <= now)
                return 0;
        return (int) MIN((deadline_usec - now + USEC_PER_MSEC - 1) / USEC_PER_MSEC, (uint64_t) INT32_MAX);
}

enum { POLL_BUS = RELAY_N_POLLFDS, POLL_SIGNAL, N_POLL };

/* Relays the channel (if any) until the worker has ended and its output has
 * drained, or a signal asks us to stop it. Returns the exit code. */
static int run_loop(sd_bus *bus, RunState *s, Relay *relay, int signal_fd) {
        uint64_t drain_deadline = UINT64_MAX;
        uint64_t progress_seen = relay ? relay->output_progress : 0;
        bool output_done = !relay, refreshed_after_eof = false;
        int r;

        for (;;) {
                struct pollfd pfd[N_POLL];
                uint64_t bus_timeout;

                while ((r = sd_bus_process(bus, NULL)) > 0)
                        ;
                if (r < 0) {
                        print_error("Lost the bus connection: %s", strerror(-r));
                        return EXIT_UNAVAILABLE;
                }
                if (relay && !output_done && relay_output_done(relay))
                        output_done = true;
                if (s->daemon_restarted) {
                        /* What the old daemon would have said is lost: ask. */
                        s->daemon_restarted = false;
                        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;

                        if (subscribe(bus, &error) < 0)
                                print_error("Failed to subscribe again after sandboxd restarted: %s",
                                            error.message ?: error.name ?: "no answer");
                        (void) run_state_refresh(s, bus);
                }
                if (output_done && !refreshed_after_eof && !s->ended) {
                        refreshed_after_eof = true;
                        r = run_state_refresh(s, bus);
                        if (r < 0) {
                                print_error("Failed to read the state of worker %s: %s", s->id, strerror(-r));
                                return exit_code_from_bus_error(NULL, r);
                        }
                }
                if (s->ended) {
                        if (output_done)
                                break;
                        if (drain_deadline == UINT64_MAX)
                                drain_deadline = now_usec(CLOCK_MONOTONIC) + OUTPUT_DRAIN_USEC;
                }

                if (relay && !output_done)
                        relay_fill_pollfds(relay, pfd);
                else
                        for (size_t i = 0; i < RELAY_N_POLLFDS; i++)
                                pfd[i] = (struct pollfd) { .fd = -1 };
                pfd[POLL_BUS] = (struct pollfd) { .fd = sd_bus_get_fd(bus), .events = (short) sd_bus_get_events(bus) };
                pfd[POLL_SIGNAL] = (struct pollfd) { .fd = signal_fd, .events = POLLIN };
                if (sd_bus_get_timeout(bus, &bus_timeout) < 0)
                        bus_timeout = UINT64_MAX;

                if (poll(pfd, N_POLL, poll_timeout_ms(MIN(bus_timeout, drain_deadline))) < 0) {
                        if (errno == EINTR)
                                continue;
                        print_error("poll() failed: %s", strerror(errno));
                        return EXIT_FAILED;
                }
                if (pfd[POLL_SIGNAL].revents & POLLIN) {
                        struct signalfd_siginfo si;
                        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;

                        if (read(signal_fd, &si, sizeof(si)) != sizeof(si))
                                continue;
                        r = call_manager(bus, "StopWorker", &error, NULL, "s", s->id);
                        if (r < 0)
                                print_failure("Failed to stop the worker", &error, r);
                        return 128 + (int) si.ssi_signo;
                }
                if (relay && !output_done) {
                        r = relay_dispatch(relay, pfd);
                        if (r < 0) {
                                print_error("Channel failed: %s", strerror(-r));
                                output_done = true;
                        }
                }
                if (s->ended && !output_done) {
                        if (relay->output_progress != progress_seen) {
                                progress_seen = relay->output_progress;
                                drain_deadline = now_usec(CLOCK_MONOTONIC) + OUTPUT_DRAIN_USEC;
                        } else if (now_usec(CLOCK_MONOTONIC) >= drain_deadline)
                                break;
                }
        }
        /* A final ExitStatus may not have been in any signal we saw. */
        if (s->exit_status < 0)
                (void) run_state_refresh(s, bus);
        return run_exit_code(s);
}

/* Blocked before the worker exists, so a Ctrl-C that arrives while
 * CreateWorker is still pending is handled (by stopping the new worker)
 * rather than killing us and leaving the worker behind. SIGHUP: a closed
 * terminal ends the run the same way. */
static int stop_signals_to_fd(void) {
        sigset_t mask;
        int fd;

        sigemptyset(&mask);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGHUP);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                return -errno;
        fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
        return fd < 0 ? -errno : fd;
}

static int print_created(const char *id, const char *path) {
        _cleanup_(json_object_putp) json_object *o = NULL;

        if (!arg.json)
                return printf("%s\n", id) < 0 ? print_failure("Failed to print the id", NULL, -EIO) : EXIT_OK;
        o = json_object_new_object();
        if (!o || json_object_object_add(o, "id", json_object_new_string(id)) < 0 ||
            json_object_object_add(o, "path", json_object_new_string(path)) < 0 || json_print(o, stdout) < 0)
                return print_failure("Failed to print JSON", NULL, -ENOMEM);
        return EXIT_OK;
}

static int verb_run_or_create(int argc, char *argv[], bool run) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_slot_unrefp) sd_bus_slot *changed_slot = NULL, *removed_slot = NULL, *owner_slot = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(cli_spec_done) CliSpec spec = {};
        _cleanup_free_ Relay *relay = NULL;
        _cleanup_close_ int channel = -1, signal_fd = -1;
        RunState state = { .exit_status = -1 };
        SbxError spec_error = {};
        int r;

        r = cli_spec_parse_args(&spec, argc, argv, apply_global_option, &spec_error);
        if (r == 1)
                help();
        if (r > 0)
                return EXIT_OK;
        if (r < 0) {
                print_error("%s", spec_error.message);
                /* A credential file that is not there or not readable is input not found. */
                return r == -EINVAL ? EXIT_USAGE : exit_code_from_errno(r);
        }
        if (run && refuse_json("run") < 0)
                return EXIT_USAGE;

        if (run) {
                signal_fd = stop_signals_to_fd();
                if (signal_fd < 0)
                        return print_failure("Failed to set up signal handling", NULL, signal_fd);
        }
        if (bus_connect(&bus) < 0)
                return EXIT_UNAVAILABLE;
        if (run) {
                /* Before CreateWorker, so even an immediate end is seen. */
                r = add_worker_matches(bus, &state, &changed_slot, &removed_slot, &owner_slot);
                if (r < 0)
                        return print_failure("Failed to subscribe to worker signals", NULL, r);
                r = subscribe(bus, &error);
                if (r < 0)
                        return print_failure("Failed to subscribe to worker signals", &error, r);
        }

        if (spec.egress_allow)
                hint_empty_egress_floor(bus);
        r = create_worker(bus, &spec, &error, &reply);
        cli_spec_done(&spec);
        if (r < 0)
                return print_failure("Failed to create the worker", &error, r);
        r = sd_bus_message_read(reply, "so", &state.id, &state.path);
        if (r < 0)
                return print_failure("Failed to parse the CreateWorker reply", NULL, r);
        if (!run)
                return print_created(state.id, state.path);

        channel = open_channel(bus, state.id, &error);
        if (channel < 0) {
                /* A worker that already finished has no channel; its result still counts. */
                if (!sd_bus_error_has_name(&error, SBX_ERROR_NOT_RUNNING)) {
                        r = print_failure("Failed to open the worker's channel", &error, channel);
                        (void) call_manager(bus, "StopWorker", NULL, NULL, "s", state.id);
                        return r;
                }
        } else {
                relay = malloc(sizeof(Relay));
                if (!relay)
                        return print_failure("Failed to allocate the relay", NULL, -ENOMEM);
                r = relay_init(relay, STDIN_FILENO, STDOUT_FILENO, channel);
                if (r < 0)
                        return print_failure("Failed to set up the channel", NULL, r);
        }
        return run_loop(bus, &state, relay, signal_fd);
}

static int verb_run(int argc, char *argv[]) {
        return verb_run_or_create(argc, argv, true);
}

static int verb_create(int argc, char *argv[]) {
        return verb_run_or_create(argc, argv, false);
}

static int verb_export(int argc, char *argv[]) {
        return export_run(argc, argv, apply_global_option, help, SANDBOXCTL_VERSION);
}

static int verb_mcp(int argc, char *argv[]) {
        return mcp_verb_run(argc, argv, apply_global_option, SANDBOXCTL_VERSION);
}

static int verb_logs(int argc, char *argv[]) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_close_ int signal_fd = -1;
        Pager pager = { .saved_stdout = -1 };
        LogsArgs args;
        char err[256];
        int r;

        r = logs_parse_args(argc, argv, apply_global_option, &args, err, sizeof(err));
        if (r == 1)
                help();
        if (r > 0)
                return EXIT_OK;
        if (r < 0) {
                print_error("%s", err);
                return EXIT_USAGE;
        }
        /* The same options given before the verb. */
        args.json = args.json || arg.json;
        args.legend = args.legend && arg.legend;
        args.pager = args.pager && arg.pager;
        if (args.follow) {
                /* Ctrl-C ends following cleanly (exit 0), as with journalctl -f. */
                signal_fd = stop_signals_to_fd();
                if (signal_fd < 0)
                        return print_failure("Failed to set up signal handling", NULL, signal_fd);
        }
        if (bus_connect(&bus) < 0)
                return EXIT_UNAVAILABLE;
        if (args.pager && !args.follow) {
                r = pager_open(&pager);
                if (r < 0)
                        print_error("Failed to start the pager, printing directly: %s", strerror(-r));
        }
        r = logs_run(bus, &args, stdout, signal_fd, &error);
        pager_close(&pager);
        /* The reader (a pager the user quit, head) went away: not a failure. */
        if (r == -EPIPE)
                return EXIT_OK;
        if (r < 0)
                return print_failure("Failed to read the worker's log", &error, r);
        return EXIT_OK;
}

typedef struct Verb {
        const char *name;
        int (*run)(int argc, char *argv[]);
} Verb;

typedef struct WorkspaceArgs {
        uint64_t size_max;
        bool size_given;
        const char *class;
} WorkspaceArgs;

static int workspace_option(int c, const char *value, void *userdata) {
        WorkspaceArgs *a = userdata;

        switch (c) {
        case ARG_SIZE:
                if (parse_size(value, &a->size_max) < 0) {
                        print_error("workspace: --size: invalid size '%s' (use bytes or a K, M, G, T suffix)", value);
                        return -EINVAL;
                }
                a->size_given = true;
                return 0;
        case ARG_CLASS:
                a->class = value;
                return 0;
        default:
                return -EINVAL;
        }
}

/* workspace create|list|delete: argv[0] is "workspace", argv[1] the action. */
static int verb_workspace(int argc, char *argv[]) {
        static const struct option options[] = {
                { "help",  no_argument,       NULL, 'h' },
                { "size",  required_argument, NULL, ARG_SIZE },
                { "class", required_argument, NULL, ARG_CLASS },
                SANDBOXCTL_GLOBAL_OPTIONS,
                {}
        };
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL, *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        WorkspaceArgs a = {};
        const char *action = argc > 1 ? argv[1] : "";
        bool create = streq(action, "create"), list = streq(action, "list"), delete = streq(action, "delete");
        int r;

        if (!create && !list && !delete) {
                print_error("workspace: expected create, list or delete, got '%s'", action);
                return EXIT_USAGE;
        }
        PARSE_OR_RETURN(parse_verb_options(argc - 1, argv + 1, ":h", options, workspace_option, &a));
        if (argc - 1 - optind != (list ? 0 : 1)) {
                print_error("workspace %s: expected %s", action, list ? "no arguments" : "one workspace name");
                return EXIT_USAGE;
        }
        if (!create && (a.size_given || a.class)) {
                print_error("workspace %s: --size and --class are for create", action);
                return EXIT_USAGE;
        }
        if (create && !a.size_given) {
                print_error("workspace create: --size SIZE is required: a workspace always has a cap");
                return EXIT_USAGE;
        }
        if (bus_connect(&bus) < 0)
                return EXIT_UNAVAILABLE;
        if (list) {
                r = call_manager(bus, "ListWorkspaces", &error, &reply, NULL);
                if (r < 0)
                        return print_failure("Failed to list the workspaces", &error, r);
                r = workspace_list_print(reply, arg.json, arg.legend, stdout);
                return r < 0 ? print_failure("Failed to print the workspaces", NULL, r) : EXIT_OK;
        }
        if (delete) {
                r = call_manager(bus, "DeleteWorkspace", &error, NULL, "s", argv[1 + optind]);
                return r < 0 ? print_failure("Failed to delete the workspace", &error, r) : EXIT_OK;
        }
        r = sd_bus_message_new_method_call(bus, &m, BUS_NAME, MANAGER_PATH, MANAGER_INTERFACE, "CreateWorkspace");
        if (r >= 0)
                r = sd_bus_message_append(m, "s", argv[1 + optind]);
        if (r >= 0)
                r = workspace_settings_append(m, a.size_max, a.class);
        if (r < 0)
                return print_failure("Failed to build the request", NULL, r);
        r = sd_bus_call(bus, m, 0, &error, &reply);
        return r < 0 ? print_failure("Failed to create the workspace", &error, r) : EXIT_OK;
}

/* endpoints: the caller's live workers that have one (sandboxctl-endpoints.h). */
static int verb_endpoints(int argc, char *argv[]) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                SANDBOXCTL_GLOBAL_OPTIONS,
                {}
        };
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_free_ WorkerEntry *workers = NULL;
        size_t n = 0;
        int r;

        PARSE_OR_RETURN(parse_verb_options(argc, argv, ":h", options, NULL, NULL));
        PARSE_OR_RETURN(check_positional(argc, argv, 0));
        if (bus_connect(&bus) < 0)
                return EXIT_UNAVAILABLE;
        r = list_workers(bus, WORKER_STATES_ALIVE, &reply, &workers, &n, &error);
        if (r < 0)
                return print_failure("Failed to list workers", &error, r);
        worker_list_sort(workers, n);
        r = endpoints_print(bus, workers, n, arg.json, arg.legend, stdout);
        return r < 0 ? print_failure("Failed to print the endpoints", NULL, r) : EXIT_OK;
}

typedef struct ExecArgs {
        bool tty;
        bool interactive;
        char **environment;
        const char *workdir;
} ExecArgs;

enum { ARG_SETENV = 0x180, ARG_WORKDIR };

static int exec_option(int c, const char *value, void *userdata) {
        ExecArgs *a = userdata;

        switch (c) {
        case 't':
                a->tty = true;
                return 0;
        case 'i':
                a->interactive = true;
                return 0;
        case ARG_SETENV:
                if (!strchr(value, '=') || value[0] == '=') {
                        print_error("exec: --setenv wants NAME=VALUE, not '%s'", value);
                        return -EINVAL;
                }
                return strv_extend(&a->environment, value) < 0 ? -ENOMEM : 0;
        case ARG_WORKDIR:
                a->workdir = value;
                return 0;
        default:
                return -EINVAL;
        }
}

static int append_exec_options(sd_bus_message *m, const ExecArgs *a) {
        uint16_t rows, cols;
        int r;

        r = sd_bus_message_open_container(m, 'a', "{sv}");
        if (r >= 0 && a->environment) {
                r = sd_bus_message_open_container(m, 'e', "sv");
                if (r >= 0)
                        r = sd_bus_message_append(m, "s", "Environment");
                if (r >= 0)
                        r = sd_bus_message_open_container(m, 'v', "as");
                if (r >= 0)
                        r = sd_bus_message_append_strv(m, a->environment);
                if (r >= 0)
                        r = sd_bus_message_close_container(m);
                if (r >= 0)
                        r = sd_bus_message_close_container(m);
        }
        if (r >= 0 && a->workdir)
                r = sd_bus_message_append(m, "{sv}", "WorkingDirectory", "s", a->workdir);
        if (r >= 0 && a->tty)
                r = sd_bus_message_append(m, "{sv}", "Tty", "b", 1);
        if (r >= 0 && a->tty && exec_terminal_size(STDOUT_FILENO, &rows, &cols) >= 0)
                r = sd_bus_message_append(m, "{sv}", "TtySize", "(qq)", rows, cols);
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        return r;
}

/* Like docker exec and ssh HOST CMD: no terminal unless -t, no input
 * unless -i; exits with the process's status (128+N for signal N). */
static int verb_exec(int argc, char *argv[]) {
        static const struct option options[] = {
                { "help",        no_argument,       NULL, 'h' },
                { "tty",         no_argument,       NULL, 't' },
                { "interactive", no_argument,       NULL, 'i' },
                { "setenv",      required_argument, NULL, ARG_SETENV },
                { "workdir",     required_argument, NULL, ARG_WORKDIR },
                SANDBOXCTL_GLOBAL_OPTIONS,
                {}
        };
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL, *m = NULL;
        _cleanup_strv_free_ char **environment = NULL;
        ExecArgs a = {};
        const char *worker_path, *process_path;
        _cleanup_free_ char *process = NULL;
        char **cmd;
        int fds[3] = { -1, -1, -1 };
        size_t n_fds = 0;
        int r;

        /* '+': the options end at the worker ID; what follows is the command's. */
        r = parse_verb_options(argc, argv, "+:hit", options, exec_option, &a);
        environment = a.environment;
        PARSE_OR_RETURN(r);
        PARSE_OR_RETURN(refuse_json("exec"));
        if (argc - optind < 2 || (streq(argv[optind + 1], "--") && argc - optind < 3)) {
                print_error("exec: expected a worker ID and a command");
                return EXIT_USAGE;
        }
        cmd = argv + optind + 1;
        if (streq(cmd[0], "--"))
                cmd++;
        if (bus_connect(&bus) < 0)
                return EXIT_UNAVAILABLE;
        r = call_manager(bus, "GetWorker", &error, &reply, "s", argv[optind]);
        if (r >= 0)
                r = sd_bus_message_read(reply, "o", &worker_path);
        if (r < 0)
                return print_failure("Failed to find the worker", &error, r);
        r = subscribe(bus, &error);
        if (r < 0)
                return print_failure("Failed to subscribe to sandboxd's signals", &error, r);
        r = sd_bus_message_new_method_call(bus, &m, BUS_NAME, worker_path, WORKER_INTERFACE, "Exec");
        if (r >= 0)
                r = sd_bus_message_append_strv(m, cmd);
        if (r >= 0)
                r = append_exec_options(m, &a);
        if (r < 0)
                return print_failure("Failed to build the request", NULL, r);
        reply = sd_bus_message_unref(reply);
        r = sd_bus_call(bus, m, 0, &error, &reply);
        if (r < 0)
                return print_failure("Failed to start the process", &error, r);
        r = sd_bus_message_read(reply, "o", &process_path);
        if (r >= 0 && !(process = strdup(process_path)))
                r = -ENOMEM;
        if (r >= 0)
                r = sd_bus_message_enter_container(reply, 'a', "h");
        while (r >= 0 && n_fds < 3) {
                int fd;
                r = sd_bus_message_read(reply, "h", &fd);
                if (r <= 0)
                        break;
                /* The fds belong to the reply: keep copies that outlive it. */
                fds[n_fds] = fcntl(fd, F_DUPFD_CLOEXEC, 3);
                if (fds[n_fds++] < 0)
                        r = -errno;
        }
        if (r < 0 || n_fds != (a.tty ? 1u : 3u)) {
                for (size_t i = 0; i < n_fds; i++)
                        safe_close(fds[i]);
                return print_failure("Unexpected reply to Exec", NULL, r < 0 ? r : -EBADMSG);
        }
        /* The reply holds the fds it carried: while it lives, the stdin
         * pipe has a second writer and the process never sees its EOF. */
        reply = sd_bus_message_unref(reply);
        r = exec_relay(bus, process, fds, n_fds, a.tty, a.interactive);
        if (r < 0)
                return print_failure("Lost the process", NULL, r);
        return r;
}

typedef struct CpArgs {
        bool recursive;
} CpArgs;

static int cp_option(int c, const char *value, void *userdata) {
        CpArgs *a = userdata;
        if (c != 'r')
                return -EINVAL;
        a->recursive = true;
        return 0;
}

/* GetWorker: the object path of ID, or the daemon's error. */
static int worker_path(sd_bus *bus, const char *id, sd_bus_error *error, char **ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const char *path;
        int r;

        r = call_manager(bus, "GetWorker", error, &reply, "s", id);
        if (r >= 0)
                r = sd_bus_message_read(reply, "o", &path);
        if (r >= 0 && !(*ret = strdup(path)))
                r = -ENOMEM;
        return r;
}

static int verb_cp(int argc, char *argv[]) {
        static const struct option options[] = {
                { "help",      no_argument, NULL, 'h' },
                { "recursive", no_argument, NULL, 'r' },
                SANDBOXCTL_GLOBAL_OPTIONS,
                {}
        };
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_free_ char *src_id = NULL, *src_path = NULL, *dst_id = NULL, *dst_path = NULL, *path = NULL;
        CpArgs a = {};
        int src_remote, dst_remote, r;

        PARSE_OR_RETURN(parse_verb_options(argc, argv, ":hr", options, cp_option, &a));
        PARSE_OR_RETURN(refuse_json("cp"));
        if (argc - optind != 2) {
                print_error("cp: expected SRC and DST, got %d argument%s", argc - optind, argc - optind == 1 ? "" : "s");
                return EXIT_USAGE;
        }
        src_remote = files_split_remote(argv[optind], &src_id, &src_path);
        dst_remote = files_split_remote(argv[optind + 1], &dst_id, &dst_path);
        if (src_remote < 0 || dst_remote < 0)
                return print_failure("Failed to parse the arguments", NULL, -ENOMEM);
        if (src_remote == dst_remote) {
                print_error("cp: exactly one of SRC and DST is ID:PATH, a place in a worker");
                return EXIT_USAGE;
        }
        if (bus_connect(&bus) < 0)
                return EXIT_UNAVAILABLE;
        r = worker_path(bus, src_remote ? src_id : dst_id, &error, &path);
        if (r < 0)
                return print_failure("Failed to look up the worker", &error, r);
        FilesCopy c = { .bus = bus, .worker = path, .recursive = a.recursive, .err = stderr, .error = &error };
        r = src_remote ? files_copy_out(&c, src_path, argv[optind + 1]) : files_copy_in(&c, argv[optind], dst_path);
        if (r < 0)
                return print_failure("Failed to copy", &error, r);
        return EXIT_OK;
}

static int verb_ls(int argc, char *argv[]) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_free_ char *id = NULL, *path = NULL, *object = NULL;
        char **positional;
        int r;

        PARSE_OR_RETURN(parse_verb_args(argc, argv, 1, &positional));
        r = files_split_remote(positional[0], &id, &path);
        if (r < 0)
                return print_failure("Failed to parse the arguments", NULL, r);
        if (r == 0) {
                /* A bare ID lists the home. */
                id = strdup(positional[0]);
                path = strdup("");
                if (!id || !path)
                        return print_failure("Failed to parse the arguments", NULL, -ENOMEM);
        }
        if (bus_connect(&bus) < 0)
                return EXIT_UNAVAILABLE;
        r = worker_path(bus, id, &error, &object);
        if (r < 0)
                return print_failure("Failed to look up the worker", &error, r);
        r = sd_bus_call_method(bus, BUS_NAME, object, WORKER_INTERFACE, "ListDirectory", &error, &reply, "s", path);
        if (r < 0 && sd_bus_error_has_name(&error, SBX_ERROR_NOT_A_DIRECTORY)) {
                /* A file: its one entry, as ls does. */
                sd_bus_error_free(&error);
                r = sd_bus_call_method(bus, BUS_NAME, object, WORKER_INTERFACE, "Stat", &error, &reply, "s", path);
                if (r >= 0)
                        r = files_stat_print(reply, arg.json, arg.legend, stdout);
        } else if (r >= 0)
                r = files_list_print(reply, arg.json, arg.legend, stdout);
        if (r < 0)
                return print_failure("Failed to list", &error, r);
        return EXIT_OK;
}

typedef struct TopArgs {
        uint64_t delay_usec;
        uint64_t iterations;    /* 0: until interrupted */
} TopArgs;

static int top_option(int c, const char *value, void *userdata) {
        TopArgs *a = userdata;

        if (c == 'd') {
                if (parse_duration_usec(value, &a->delay_usec) < 0 || a->delay_usec < USEC_PER_MSEC * 100) {
                        print_error("top: --delay '%s' is not a duration of at least 0.1s", value);
                        return -EINVAL;
                }
                return 0;
        }
        if (c == 'n') {
                if (parse_uint64(value, &a->iterations) < 0 || a->iterations == 0) {
                        print_error("top: --iterations '%s' is not a positive number", value);
                        return -EINVAL;
                }
                return 0;
        }
        return -EINVAL;
}

/* Every worker the caller may see, with its metrics, in one call. */
static int top_read(sd_bus *bus, TopSample *ret, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r;

        r = sd_bus_call_method(bus, BUS_NAME, MANAGER_PATH, "org.freedesktop.DBus.ObjectManager",
                               "GetManagedObjects", error, &reply, NULL);
        if (r < 0)
                return r;
        r = top_sample_read(reply, now_usec(CLOCK_MONOTONIC), ret);
        if (r < 0)
                return r;
        /* An ended worker lingers a moment on the bus: it uses nothing. */
        size_t k = 0;
        for (size_t i = 0; i < ret->n; i++) {
                if (streq(ret->rows[i].state, "ended")) {
                        free(ret->rows[i].id);
                        free(ret->rows[i].class);
                        free(ret->rows[i].state);
                } else
                        ret->rows[k++] = ret->rows[i];
        }
        ret->n = k;
        return 0;
}

static int verb_top(int argc, char *argv[]) {
        static const struct option options[] = {
                { "help",       no_argument,       NULL, 'h' },
                { "delay",      required_argument, NULL, 'd' },
                { "iterations", required_argument, NULL, 'n' },
                SANDBOXCTL_GLOBAL_OPTIONS,
                {}
        };
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        TopArgs args = { .delay_usec = USEC_PER_SEC };
        TopSample before = {}, now = {};
        bool tty = isatty(STDOUT_FILENO);
        int r;

        PARSE_OR_RETURN(parse_verb_options(argc, argv, ":hd:n:", options, top_option, &args));
        PARSE_OR_RETURN(check_positional(argc, argv, 0));
        if (bus_connect(&bus) < 0)
                return EXIT_UNAVAILABLE;
        r = top_read(bus, &before, &error);
        if (r < 0)
                return print_failure("Failed to read the workers", &error, r);
        for (uint64_t i = 0; args.iterations == 0 || i < args.iterations; i++) {
                struct timespec ts = { .tv_sec = (time_t) (args.delay_usec / USEC_PER_SEC),
                                       .tv_nsec = (long) (args.delay_usec % USEC_PER_SEC) * 1000 };
                (void) nanosleep(&ts, NULL);
                r = top_read(bus, &now, &error);
                if (r < 0) {
                        top_sample_done(&before);
                        return print_failure("Failed to read the workers", &error, r);
                }
                top_sample_compare(&now, &before);
                if (arg.json) {
                        _cleanup_(json_object_putp) json_object *o = top_to_json(&now);
                        r = o ? json_print(o, stdout) : -ENOMEM;
                } else {
                        _cleanup_(table_freep) Table *t = top_to_table(&now);
                        if (tty)
                                fputs("\033[H\033[2J", stdout);
                        r = t ? table_print(t, stdout, arg.legend) : -ENOMEM;
                        if (r >= 0 && !tty && arg.legend)
                                putchar('\n');
                }
                fflush(stdout);
                top_sample_done(&before);
                before = now;
                now = (TopSample) {};
                if (r < 0 || arg.json)
                        break;
        }
        top_sample_done(&before);
        if (r < 0)
                return print_failure("Failed to print the workers", NULL, r);
        return EXIT_OK;
}

typedef struct EgressArgs {
        char **allow, **deny;
        uint64_t rate;
        bool has_rate;
        const char *mode;
} EgressArgs;

static int egress_option(int c, const char *value, void *userdata) {
        EgressArgs *a = userdata;

        switch (c) {
        case ARG_ALLOW:
                return strv_extend(&a->allow, value);
        case ARG_DENY:
                return strv_extend(&a->deny, value);
        case ARG_RATE:
                if (parse_size(value, &a->rate) < 0 || a->rate == 0) {
                        print_error("egress: --rate '%s' is not a positive size in bytes (K, M, G allowed)", value);
                        return -EINVAL;
                }
                a->has_rate = true;
                return 0;
        case ARG_MODE:
                if (!streq(value, "enforce") && !streq(value, "report")) {
                        print_error("egress: --mode '%s' is neither enforce nor report", value);
                        return -EINVAL;
                }
                a->mode = value;
                return 0;
        default:
                return -EINVAL;
        }
}

static int egress_show(sd_bus *bus, const char *path, sd_bus_error *error) {
        _cleanup_strv_free_ char **allow = NULL;
        _cleanup_free_ char *mode = NULL;
        uint64_t rate = 0;
        int r;

        r = sd_bus_get_property_strv(bus, BUS_NAME, path, WORKER_INTERFACE, "EgressAllow", error, &allow);
        if (r >= 0)
                r = sd_bus_get_property_trivial(bus, BUS_NAME, path, WORKER_INTERFACE, "EgressRateBps", error, 't',
                                                &rate);
        if (r >= 0)
                r = sd_bus_get_property_string(bus, BUS_NAME, path, WORKER_INTERFACE, "EgressMode", error, &mode);
        if (r < 0)
                return r;
        if (arg.json) {
                _cleanup_(json_object_putp) json_object *o = json_object_new_object();
                json_object *a = json_object_new_array();
                if (!o || !a) {
                        json_object_put(a);
                        return -ENOMEM;
                }
                for (char **i = allow; i && *i; i++)
                        json_object_array_add(a, json_object_new_string(*i));
                json_object_object_add(o, "allow", a);
                json_object_object_add(o, "rate_bps", json_object_new_uint64(rate));
                json_object_object_add(o, "mode", json_object_new_string(mode));
                return json_print(o, stdout);
        }
        printf("Allow:");
        for (char **i = allow; i && *i; i++)
                printf(" %s", *i);
        printf("\nRateBps: %" PRIu64 "%s\nMode: %s\n", rate, rate ? "" : " (unlimited)", mode);
        return ferror(stdout) ? -EIO : 0;
}

static int verb_egress(int argc, char *argv[]) {
        static const struct option options[] = {
                { "help",  no_argument,       NULL, 'h' },
                { "allow", required_argument, NULL, ARG_ALLOW },
                { "deny",  required_argument, NULL, ARG_DENY },
                { "rate",  required_argument, NULL, ARG_RATE },
                { "mode",  required_argument, NULL, ARG_MODE },
                SANDBOXCTL_GLOBAL_OPTIONS,
                {}
        };
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL, *m = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_strv_free_ char **current = NULL, **allow = NULL;
        EgressArgs args = {};
        const char *path, *id, *missing = NULL;
        int r;

        r = parse_verb_options(argc, argv, ":h", options, egress_option, &args);
        if (r == 0)
                r = check_positional(argc, argv, 1);
        if (r != 0) {
                strv_free(args.allow);
                strv_free(args.deny);
                return r > 0 ? EXIT_OK : EXIT_USAGE;
        }
        _cleanup_strv_free_ char **add = args.allow, **remove = args.deny;
        id = argv[optind];
        if (bus_connect(&bus) < 0)
                return EXIT_UNAVAILABLE;
        r = call_manager(bus, "GetWorker", &error, &reply, "s", id);
        if (r < 0)
                return print_failure("Failed to look up the worker", &error, r);
        r = sd_bus_message_read(reply, "o", &path);
        if (r < 0)
                return print_failure("Failed to parse the GetWorker reply", NULL, r);
        if (!add && !remove && !args.has_rate && !args.mode) {
                r = egress_show(bus, path, &error);
                return r < 0 ? print_failure("Failed to read the worker's egress policy", &error, r) : EXIT_OK;
        }
        /* SetEgress replaces the whole list: this edits the one it has now.
         * Two clients editing at once: the last one's list wins. */
        if (add || remove) {
                r = sd_bus_get_property_strv(bus, BUS_NAME, path, WORKER_INTERFACE, "EgressAllow", &error, &current);
                if (r < 0)
                        return print_failure("Failed to read the worker's egress policy", &error, r);
                r = egress_allow_edit(current, add, remove, &allow, &missing);
                if (r == -ENOENT) {
                        print_error("egress: '%s' is not in worker %s's list", missing, id);
                        return EXIT_USAGE;
                }
                if (r < 0)
                        return print_failure("Failed to edit the list", NULL, r);
        }
        r = sd_bus_message_new_method_call(bus, &m, BUS_NAME, MANAGER_PATH, MANAGER_INTERFACE, "SetWorkerEgress");
        if (r >= 0)
                r = sd_bus_message_append(m, "s", id);
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'a', "{sv}");
        if (r >= 0 && allow) {
                r = sd_bus_message_open_container(m, 'e', "sv");
                if (r >= 0)
                        r = sd_bus_message_append(m, "s", "EgressAllow");
                if (r >= 0)
                        r = sd_bus_message_open_container(m, 'v', "as");
                if (r >= 0)
                        r = sd_bus_message_append_strv(m, allow);
                if (r >= 0)
                        r = sd_bus_message_close_container(m);
                if (r >= 0)
                        r = sd_bus_message_close_container(m);
        }
        if (r >= 0 && args.has_rate)
                r = sd_bus_message_append(m, "{sv}", "EgressRateBps", "t", args.rate);
        if (r >= 0 && args.mode)
                r = sd_bus_message_append(m, "{sv}", "EgressMode", "s", args.mode);
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        if (r < 0)
                return print_failure("Failed to build the request", NULL, r);
        r = sd_bus_call(bus, m, 0, &error, NULL);
        if (r < 0)
                return print_failure("Failed to change the worker's egress", &error, r);
        return EXIT_OK;
}

static const Verb verbs[] = {
        { "run",       verb_run },
        { "create",    verb_create },
        { "list",      verb_list },
        { "status",    verb_status },
        { "stop",      verb_stop },
        { "suspend",   verb_suspend },
        { "resume",    verb_resume },
        { "attach",    verb_attach },
        { "top",       verb_top },
        { "egress",    verb_egress },
        { "exec",      verb_exec },
        { "preflight", verb_preflight },
        { "logs",      verb_logs },
        { "export",    verb_export },
        { "workspace", verb_workspace },
        { "mcp",       verb_mcp },
        { "endpoints", verb_endpoints },
        { "cp",        verb_cp },
        { "ls",        verb_ls },
};

int main(int argc, char *argv[]) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                SANDBOXCTL_GLOBAL_OPTIONS,
                {}
        };
        int c;

        /* Output to a closed pipe is handled where it is written. */
        signal(SIGPIPE, SIG_IGN);

        /* '+': the verb ends the global options; each verb parses the rest,
         * the global options among them. */
        while ((c = getopt_long(argc, argv, "+:h", options, NULL)) >= 0) {
                if (c == 'h') {
                        help();
                        return EXIT_OK;
                }
                if (!is_global_option(c)) {
                        print_error("Unknown option '%s'; see sandboxctl --help", argv[optind - 1]);
                        return EXIT_USAGE;
                }
                if (apply_global_option(c) > 0)
                        return EXIT_OK;
        }
        if (optind >= argc) {
                print_error("Missing command; see sandboxctl --help");
                return EXIT_USAGE;
        }
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                if (streq(argv[optind], verbs[i].name))
                        return verbs[i].run(argc - optind, argv + optind);
        print_error("Unknown command '%s'; see sandboxctl --help", argv[optind]);
        return EXIT_USAGE;
}
