#!/bin/bash
# testbed: long
# The attack suite, section exec (issue 24, item 1): what Worker.Exec and
# `sandboxctl exec` must refuse, each with the control beside it that shows
# the same path working where it is allowed.
#
#   exec.sh LEADER_PID STAGE_DIR     (tests/run-all.sh runs it)
#   exec.sh --list                   prints the table for README.md
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../integration/lib.sh"
source "$HERE/lib-attacks.sh"

EXEC_ATTACKS='
exec-other-user|trusted,standard|tester runs sandboxctl exec on root'"'"'s worker, and calls Exec on its object with busctl|NoSuchWorker (exit 66) and UnknownObject, as for an ID never used; nothing ran in the worker
exec-owner-control|trusted,standard|(control) tester runs sandboxctl exec on a worker of its own|the command runs, as the worker'"'"'s UID
exec-dotdot-argv|trusted,standard|Exec of ../../bin/sh and of ./sh|InvalidSpec, nothing ran
exec-dotdot-workdir|trusted,standard|Exec with WorkingDirectory .., ../../etc, sub/../.., /etc and /|InvalidArgument each; (control) WorkingDirectory sub runs in HOME/sub
exec-flood|trusted,standard|17 processes at once through Exec into one worker|the 17th refused with TooManyProcesses; once one ended, another starts
exec-fork-bomb|trusted,standard|an Exec into a worker with TasksMax=32 starts 100 background sleeps|held by the worker'"'"'s cap: at most 32 of the worker'"'"'s tasks (trusted: the unit'"'"'s TasksCurrent and the UID'"'"'s processes; gVisor: processes in the sandbox)
exec-outlive|trusted,standard|an Exec starts a daemon (setsid, double fork, stdio closed) and returns; the worker is stopped|once the worker ended no process of its UID (nor its sandbox) is left, and its exec socket is gone
exec-sibling|trusted,standard|from inside worker A: connect to worker B'"'"'s exec socket, and ask the system bus for B'"'"'s object and Exec into it|no socket reachable (ENOENT/EACCES), no bus or NoSuchWorker/UnknownObject; (control) root'"'"'s Exec into B runs
exec-tiocsti|trusted,standard|under script(1), exec -t runs a program that pushes "echo PWNED" into its terminal with TIOCSTI, then the caller'"'"'s shell reads a line|the caller'"'"'s shell reads nothing of it: the process only holds its own terminal, made inside the worker
'
atk_load_table "$EXEC_ATTACKS"
if [ "${1:-}" = --list ]; then
    atk_list | sed '1s/^| attack |/| attack (exec.sh) |/'
    exit 0
fi
tap_init "$@"
check "tests/attacks/README.md's exec table is what --list prints" \
    diff <(bash "$0" --list) <(sed -n '/^| attack (exec.sh) |/,/^$/p' "$HERE/README.md" | sed '/^$/d')

ct systemctl start sandboxd.service
# tester may create workers of its own (the owner's control), as an
# administrator's rule would let it.
ct sh -c 'cat >/etc/polkit-1/rules.d/50-sbx-exec-tester.rules' <<'JS'
polkit.addRule(function(action, subject) {
    if (subject.user == "tester" &&
        (action.id == "org.sandboxd1.create-worker" || action.id == "org.sandboxd1.create-trusted-worker"))
        return polkit.Result.YES;
});
JS
cleanup() {
    ct sh -c "sandboxctl list --no-legend 2>/dev/null | awk '{print \$1}' | xargs -r -n1 sandboxctl stop
              rm -f /etc/polkit-1/rules.d/50-sbx-exec-tester.rules" >/dev/null 2>&1
}
trap 'cleanup; _tap_cleanup' EXIT

create() { ct timeout 120 sandboxctl create "$@" 2>&1 | tail -n1; }
create_as() { local u=$1; shift; ct timeout 120 runuser -u "$u" -- sandboxctl create "$@" 2>&1 | tail -n1; }
# exec_rc USER ARGS...: the exit status of sandboxctl exec as USER; its output in EXEC_OUT.
exec_rc() {
    local u=$1
    shift
    EXEC_OUT=$(ct timeout 120 runuser -u "$u" -- sandboxctl exec "$@" 2>&1)
}
uid_of() { ct busctl --system get-property "$SBX_DEST" "$SBX_PATH/worker/$1" "$SBX_WORKER_IFACE" UID | awk '{print $2}'; }
home() { echo "$SBX_STATE_ROOT/$1"; }
# Where root on the host sees it (lib.sh): a gVisor worker's disk.
host_home() { sbx_home "$1"; }
valid_id() { [[ $1 =~ ^[0-9a-f]{12}$ ]]; }

# The python a worker runs to reach a sibling: its exec socket, then the bus.
SIBLING_PY='
import socket, subprocess, sys
b = sys.argv[1]
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
try:
    s.connect("/run/sandboxd/exec/%s.sock" % b); print("socket connected")
except OSError as e:
    print("socket refused", e.errno)
for args in (["busctl", "--system", "call", "org.sandboxd1", "/org/sandboxd1", "org.sandboxd1.Manager", "GetWorker", "s", b],
             ["busctl", "--system", "call", "org.sandboxd1", "/org/sandboxd1/worker/" + b, "org.sandboxd1.Worker",
              "Exec", "asa{sv}", "1", "/bin/true", "0"]):
    try:
        p = subprocess.run(args, capture_output=True, text=True, timeout=30)
        print("bus", p.returncode, (p.stdout + p.stderr).strip().replace("\n", " "))
    except Exception as e:
        print("bus unavailable", type(e).__name__)
'

# The TIOCSTI pusher, run inside the worker on its terminal.
TIOCSTI_PY='
import fcntl, termios, sys
n = 0
for c in "echo PWNED\n":
    try:
        fcntl.ioctl(0, termios.TIOCSTI, c.encode()); n += 1
    except OSError as e:
        print("tiocsti refused", e.errno); break
print("pushed", n)
'

for class in trusted standard; do
    victim=$(create --class "$class" -- /bin/sleep 1000)
    valid_id "$victim" || { not_ok "$class: root's worker starts" "$victim"; continue; }
    vpath=$SBX_PATH/worker/$victim

    # ---- another user -------------------------------------------------------------
    exec_rc tester "$victim" -- /bin/sh -c "touch $(home "$victim")/tester-was-here"
    rc=$?
    bus_call tester "$SBX_DEST" "$vpath" "$SBX_WORKER_IFACE" Exec asa{sv} 3 /bin/sh -c 'touch $HOME/tester-bus' 0
    berr=$BUS_ERROR
    problems=()
    [ "$rc" = 66 ] && [[ $EXEC_OUT == *org.sandboxd1.Error.NoSuchWorker* ]] ||
        problems+=("sandboxctl exec as tester: exit $rc: $EXEC_OUT")
    [ "$berr" = org.freedesktop.DBus.Error.UnknownObject ] || problems+=("busctl Exec as tester: ${berr:-succeeded} $BUS_OUT")
    ct test -e "$(host_home "$victim")/tester-was-here" && problems+=("the command ran in root's worker")
    ct test -e "$(host_home "$victim")/tester-bus" && problems+=("the bus call ran in root's worker")
    atk_result exec-other-user "$class" "${problems[@]}"

    own=$(create_as tester --class "$class" -- /bin/sleep 1000)
    if valid_id "$own"; then
        exec_rc tester "$own" -- /usr/bin/id -u
        rc=$?
        [ "$rc" = 0 ] && [ "$EXEC_OUT" = "$(uid_of "$own")" ] && atk_ok exec-owner-control "$class" ||
            atk_not_ok exec-owner-control "$class" "exit $rc: $EXEC_OUT (worker UID $(uid_of "$own"))"
        ct sandboxctl stop "$own" >/dev/null 2>&1
    else
        atk_not_ok exec-owner-control "$class" "tester's worker did not start: $own"
    fi

    # ---- ../ --------------------------------------------------------------------
    problems=()
    for a in ../../bin/sh ./sh sub/../sh; do
        bus_call root "$SBX_DEST" "$vpath" "$SBX_WORKER_IFACE" Exec asa{sv} 2 "$a" -c 0 &&
            problems+=("Exec of $a was accepted: $BUS_OUT")
        [ -z "$BUS_ERROR" ] || [ "$BUS_ERROR" = org.sandboxd1.Error.InvalidSpec ] ||
            problems+=("Exec of $a: $BUS_ERROR, not InvalidSpec")
    done
    atk_result exec-dotdot-argv "$class" "${problems[@]}"
    problems=()
    ct sandboxctl exec "$victim" -- /bin/mkdir -p sub >/dev/null 2>&1
    for d in .. ../../etc sub/../.. /etc / "$(home "$victim")/../x"; do
        bus_call root "$SBX_DEST" "$vpath" "$SBX_WORKER_IFACE" Exec asa{sv} 1 /bin/pwd 1 WorkingDirectory s "$d" &&
            problems+=("WorkingDirectory $d was accepted: $BUS_OUT")
        [ -z "$BUS_ERROR" ] || [ "$BUS_ERROR" = org.sandboxd1.Error.InvalidArgument ] ||
            problems+=("WorkingDirectory $d: $BUS_ERROR, not InvalidArgument")
    done
    out=$(ct timeout 60 sandboxctl exec --workdir sub "$victim" -- /bin/pwd 2>&1)
    [[ $out == */workers/$victim/sub ]] || problems+=("(control) --workdir sub: $out")
    atk_result exec-dotdot-workdir "$class" "${problems[@]}"

    # ---- a flood ----------------------------------------------------------------------
    ct sh -c "for i in \$(seq 16); do sandboxctl exec $victim -- /bin/sleep 30 >/dev/null 2>&1 & done"
    wait_until 60 sh -c "[ \$(nsenter -t $CT_PID -a busctl --system tree --list $SBX_DEST | grep -c '^$vpath/process/') -ge 16 ]"
    exec_rc root "$victim" -- /bin/true
    rc=$?
    problems=()
    [ "$rc" != 0 ] && [[ $EXEC_OUT == *org.sandboxd1.Error.TooManyProcesses* ]] ||
        problems+=("the 17th: exit $rc: $EXEC_OUT")
    if wait_until 90 sh -c "nsenter -t $CT_PID -a sandboxctl exec $victim -- /bin/true >/dev/null 2>&1"; then :; else
        problems+=("(control) once the 16 ended, an Exec still failed: $(ct sandboxctl exec "$victim" -- /bin/true 2>&1)")
    fi
    atk_result exec-flood "$class" "${problems[@]}"

    # ---- a fork bomb inside an exec ------------------------------------------------------
    bomb=$(create --class "$class" --tasks 32 -- /bin/sleep 1000)
    if valid_id "$bomb"; then
        # A shell forks until it cannot (dash then gives up on its script).
        ct timeout 120 sandboxctl exec "$bomb" -- /bin/sh -c 'i=0; while [ $i -lt 100 ]; do sleep 120 & i=$((i+1)); done' \
            >/dev/null 2>&1
        problems=()
        if [ "$class" = trusted ]; then
            tasks=$(ct systemctl show -p TasksCurrent --value "sandbox-$bomb.service")
            procs=$(ct ps -u "$(uid_of "$bomb")" --no-headers | wc -l)
            [ "$tasks" -le 32 ] 2>/dev/null || problems+=("TasksCurrent $tasks")
            [ "$procs" -le 32 ] || problems+=("$procs processes of the worker's UID")
            [ "$procs" -ge 20 ] || problems+=("only $procs processes: did the bomb run at all?")
            diag "trusted: TasksCurrent $tasks, $procs processes of the UID"
        else
            # Counted by another Exec, with shell builtins only (no fork).
            n=$(ct timeout 60 sandboxctl exec "$bomb" -- /bin/sh -c 'set -- /proc/[0-9]*; echo "$#"' 2>&1)
            [ -n "$n" ] && [ "$n" -le 33 ] || problems+=("${n:-no count of} processes in the sandbox")
            [ -n "$n" ] && [ "$n" -ge 10 ] || problems+=("only ${n:-no} processes: did the bomb run at all?")
            diag "standard: $n processes in the sandbox"
        fi
        out=$(ct timeout 60 sandboxctl exec "$victim" -- /bin/echo neighbour-ok 2>&1)
        [ "$out" = neighbour-ok ] || problems+=("another worker's Exec failed meanwhile: $out")
        atk_result exec-fork-bomb "$class" "${problems[@]}"
        ct sandboxctl stop "$bomb" >/dev/null 2>&1
    else
        atk_not_ok exec-fork-bomb "$class" "the worker did not start: $bomb"
    fi

    # ---- outliving the worker ------------------------------------------------------------------
    long=$(create --class "$class" -- /bin/sleep 1000)
    if valid_id "$long"; then
        luid=$(uid_of "$long")
        ct timeout 60 sandboxctl exec "$long" -- /bin/sh -c \
            '(setsid sh -c "sleep 1000 </dev/null >/dev/null 2>&1 &" &) ; exit 0' >/dev/null 2>&1
        sleep 1
        problems=()
        if [ "$class" = trusted ]; then
            n=$(ct ps -u "$luid" --no-headers | wc -l)
            [ "$n" -ge 2 ] || problems+=("the daemon did not start ($n processes of the UID)")
        fi
        ct test -S "/run/sandboxd/exec/$long.sock" || problems+=("no exec socket while it ran")
        ct sandboxctl stop "$long" >/dev/null 2>&1
        wait_until 60 unit_gone "sandbox-$long.service" || problems+=("the unit did not end")
        sleep 1
        left=$(ct ps -u "$luid" -o pid=,args= 2>/dev/null)
        [ -z "$left" ] || problems+=("left running: $left")
        ct pgrep -f "sandbox-$long" >/dev/null && problems+=("left running: $(ct pgrep -af "sandbox-$long")")
        ct test -e "/run/sandboxd/exec/$long.sock" && problems+=("its exec socket is still there")
        ct systemctl is-active -q "sandbox-$long.socket" && problems+=("its socket unit still runs")
        atk_result exec-outlive "$class" "${problems[@]}"
    else
        atk_not_ok exec-outlive "$class" "the worker did not start: $long"
    fi

    # ---- a sibling by ID -------------------------------------------------------------------------
    sib=$(create --class "$class" -- /bin/sleep 1000)
    if valid_id "$sib"; then
        out=$(ct timeout 120 sandboxctl exec "$victim" -- /usr/bin/python3 -c "$SIBLING_PY" "$sib" 2>&1)
        problems=()
        [[ $out == *"socket refused"* ]] || problems+=("the socket: $out")
        while IFS= read -r line; do
            case $line in
                "bus 0 "*) problems+=("a bus call from inside worked: $line") ;;
                "bus "*NoSuchWorker*|"bus "*UnknownObject*|"bus "*"No such file"*|"bus "*"Connection refused"*| \
                    "bus "*"ermission denied"*|"bus unavailable"*|"bus "*"Unknown object"*|"bus "*"No such worker"*) ;;
                "bus "*) problems+=("unexpected: $line") ;;
            esac
        done <<<"$out"
        ct test -e "$(host_home "$sib")/.from-sibling" && problems+=("something ran in B")
        o2=$(ct timeout 60 sandboxctl exec "$sib" -- /bin/echo control-ok 2>&1)
        [ "$o2" = control-ok ] || problems+=("(control) root's Exec into B: $o2")
        diag "$class sibling: $(tr '\n' '|' <<<"$out")"
        atk_result exec-sibling "$class" "${problems[@]}"
        ct sandboxctl stop "$sib" >/dev/null 2>&1
    else
        atk_not_ok exec-sibling "$class" "worker B did not start: $sib"
    fi

    # ---- TIOCSTI into the caller's terminal -----------------------------------------------------------
    printf '%s' "$TIOCSTI_PY" | ct sh -c "cat >$(host_home "$victim")/tiocsti.py && chmod 0644 $(host_home "$victim")/tiocsti.py"
    out=$(ct timeout 60 script -qec "sandboxctl exec -t $victim -- /usr/bin/python3 tiocsti.py; line=\$(timeout 3 head -n 1); echo caller-read=[\$line]" /dev/null 2>&1 | tr -d '\r')
    problems=()
    [[ $out == *"caller-read=[]"* ]] || problems+=("the caller's shell read: $out")
    [[ $out == *"pushed "* || $out == *"tiocsti refused"* ]] || problems+=("the pusher did not run: $out")
    diag "$class tiocsti: $(tr '\n' '|' <<<"$out")"
    atk_result exec-tiocsti "$class" "${problems[@]}"

    ct sandboxctl stop "$victim" >/dev/null 2>&1
done

atk_coverage
tap_done
