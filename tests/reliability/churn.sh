#!/usr/bin/env bash
# The churn driver (issue 11, "Churn and faults"): COUNT worker lifecycles,
# run INSIDE the test bed as root (tests/reliability/integration.sh and
# bench/churn.sh copy it in), so that each cycle costs sandboxd's work and
# not an nsenter per call. Each cycle picks a kind and a class from bash's
# RANDOM seeded with SEED, so a run replays:
#   run         sandboxctl run of an echo: created, ran, exited 0, output seen
#   stop        a cat worker, a byte through its channel, then StopWorker at
#               a random moment (at once, or after 0-300 ms); result stopped
#   early-stop  StopWorker right after CreateWorker, while it may be starting
#   idle        a cat worker with --idle 1s left alone; checked later to end
#               with result idle (reaped by the idle timer)
#   disconnect  a client attached to a cat worker is killed (SIGKILL), in
#               half the cycles after another went away with the worker's
#               output unread; the worker runs on and takes a new client
#   egress      sandboxd run --allow HOST of curl through the worker's proxy to
#               the local upstream (only when EGRESS_HOST is given)
# Prints one "churn: FAIL ..." line per failed check and a summary line
# "churn: COUNT cycles in MS ms (...)"; exits 1 if anything failed.
#   churn.sh COUNT SEED CLASSES [EGRESS_HOST CACERT]
#   CLASSES: comma-separated, e.g. trusted,standard,untrusted
set -uo pipefail

COUNT=${1:?usage: churn.sh COUNT SEED CLASSES [EGRESS_HOST CACERT]}
SEED=${2:?seed}
IFS=, read -r -a CLASSES <<<"${3:?classes}"
EGRESS_HOST=${4:-}
CACERT=${5:-}
CHANNEL=/usr/lib/sandboxd-tests/sbx-channel
TMP=$(mktemp -d /run/sbx-churn.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

RANDOM=$SEED
failures=0
declare -A done_kind=()
declare -a idle_ids=() idle_since=()

now_ms() { echo $(($(date +%s%N) / 1000000)); }
fail() {
    failures=$((failures + 1))
    echo "churn: FAIL cycle $cycle ($kind, $class): $*"
}

# prop ID NAME: one Worker property, unquoted.
prop() {
    local out
    out=$(busctl --system get-property org.sandboxd1 "/org/sandboxd1/worker/$1" org.sandboxd1.Worker "$2" 2>/dev/null) || return 1
    out=${out#* }
    out=${out#\"}
    printf '%s\n' "${out%\"}"
}

# wait_ended ID RESULT_RE SECONDS: the worker reaches State ended with a
# Result matching RESULT_RE (polled every 50 ms).
wait_ended() {
    local id=$1 re=$2 deadline=$(($(now_ms) + $3 * 1000)) state result
    while :; do
        state=$(prop "$id" State)
        if [ "$state" = ended ]; then
            result=$(prop "$id" Result)
            [[ $result =~ ^($re)$ ]] && return 0
            echo "ended with result '$result', wanted $re"
            return 1
        fi
        if [ -z "$state" ] && ! busctl --system get-property org.sandboxd1 /org/sandboxd1/worker/"$id" \
            org.sandboxd1.Worker Id >/dev/null 2>&1; then
            # Gone from the bus already (the ended list evicted it): it ended.
            return 0
        fi
        [ "$(now_ms)" -ge "$deadline" ] && { echo "state '$state' after $3 s"; return 1; }
        sleep 0.05
    done
}

create() { # create CLASS ARGS...: prints the ID
    local class=$1
    shift
    sandboxctl create --class "$class" "$@" 2>"$TMP/create.err"
}

# The idle workers whose timer (1 s) is long past are checked here, a few
# cycles after their creation, so the checks never wait for the timer.
check_idle() {
    local all=${1:-} i id keep_ids=() keep_since=() msg
    for i in "${!idle_ids[@]}"; do
        id=${idle_ids[$i]}
        if [ -z "$all" ] && [ $(($(now_ms) - idle_since[i])) -lt 3000 ]; then
            keep_ids+=("$id")
            keep_since+=("${idle_since[$i]}")
            continue
        fi
        msg=$(wait_ended "$id" idle 30) || { kind=idle class='?' fail "idle worker $id: $msg"; }
    done
    idle_ids=("${keep_ids[@]}")
    idle_since=("${keep_since[@]}")
}

t0=$(now_ms)
for ((cycle = 1; cycle <= COUNT; cycle++)); do
    class=${CLASSES[RANDOM % ${#CLASSES[@]}]}
    pick=$((RANDOM % 100))
    if [ -n "$EGRESS_HOST" ] && [ $pick -lt 10 ]; then kind=egress
    elif [ $pick -lt 35 ]; then kind=run
    elif [ $pick -lt 60 ]; then kind=stop
    elif [ $pick -lt 70 ]; then kind=early-stop
    elif [ $pick -lt 82 ]; then kind=idle
    else kind=disconnect
    fi
    delay_ms=$((RANDOM % 300))
    done_kind[$kind]=$((${done_kind[$kind]:-0} + 1))
    case $kind in
    run)
        out=$(timeout 60 sandboxctl run --class "$class" -- /bin/echo "churn-$cycle" 2>&1)
        rc=$?
        if [ $rc -ne 0 ] || [ "$out" != "churn-$cycle" ]; then fail "run exited $rc: $out"; fi
        ;;
    stop | early-stop)
        if ! id=$(create "$class" -- /bin/cat); then
            fail "create: $(cat "$TMP/create.err")"
            continue
        fi
        if [ $kind = stop ]; then
            out=$(timeout 30 "$CHANNEL" roundtrip "$id" "c$cycle" 2>&1) || fail "roundtrip through $id: $out"
            [ $((delay_ms % 2)) = 1 ] && sleep "0.$(printf '%03d' "$delay_ms")"
        fi
        sandboxctl stop "$id" >/dev/null 2>"$TMP/stop.err" || fail "stop $id: $(cat "$TMP/stop.err")"
        msg=$(wait_ended "$id" 'stopped|exited 0|killed by signal (15|9)' 30) || fail "$id after stop: $msg"
        ;;
    idle)
        if id=$(create "$class" --idle 1s -- /bin/cat); then
            idle_ids+=("$id")
            idle_since+=("$(now_ms)")
        else
            fail "create: $(cat "$TMP/create.err")"
        fi
        ;;
    disconnect)
        # Two ways a client goes away: killed while attached (sandboxctl
        # attach, SIGKILL), or gone with the worker's output still unread
        # in its socket (sbx-channel drop). Either only detaches it.
        if ! id=$(create "$class" -- /bin/sh -c 'echo ready; exec cat'); then
            fail "create: $(cat "$TMP/create.err")"
            continue
        fi
        if [ $((delay_ms % 2)) = 1 ]; then
            out=$("$CHANNEL" drop "$id" 300 2>&1) || fail "a client that reads nothing: $out"
        fi
        # attach's stdin stays open, as a terminal would: a fifo of its own
        # that this shell holds open for writing (O_RDWR does not block).
        rm -f "$TMP/client.out"
        mkfifo "$TMP/in.$cycle"
        exec {hold}<>"$TMP/in.$cycle"
        sandboxctl attach "$id" <"$TMP/in.$cycle" >"$TMP/client.out" 2>&1 &
        client=$!
        echo "a$cycle" >&"$hold"
        deadline=$(($(now_ms) + 30000))
        until grep -qx "a$cycle" "$TMP/client.out" 2>/dev/null || [ "$(now_ms)" -ge $deadline ]; do sleep 0.05; done
        if ! grep -qx "a$cycle" "$TMP/client.out" 2>/dev/null; then
            alive=exited
            kill -0 "$client" 2>/dev/null && alive=running
            fail "no echo through the attached client (client $alive, worker $(prop "$id" State)" \
                "$(prop "$id" Result)): $(cat "$TMP/client.out" 2>&1)"
        fi
        kill -KILL "$client" 2>/dev/null
        wait "$client" 2>/dev/null
        exec {hold}>&-
        rm -f "$TMP/in.$cycle"
        # The channel is freed once sandboxd sees the client's end close.
        deadline=$(($(now_ms) + 10000))
        until out=$("$CHANNEL" roundtrip "$id" "d$cycle" 2>&1) || [ "$(now_ms)" -ge $deadline ]; do sleep 0.05; done
        [ "$out" = "d$cycle" ] || grep -qx "d$cycle" <<<"$out" || fail "a new client after the killed one: $out"
        [ "$(prop "$id" State)" = running ] || fail "$id not running after its client went away: $(prop "$id" State) $(prop "$id" Result)"
        sandboxctl stop "$id" >/dev/null 2>&1
        msg=$(wait_ended "$id" 'stopped|killed by signal (15|9)' 30) || fail "$id after stop: $msg"
        ;;
    egress)
        n=$((delay_ms + 1))
        out=$(timeout 60 sandboxctl run --class "$class" --allow "$EGRESS_HOST" -- \
            /usr/bin/curl -sS -m 30 --cacert "$CACERT" "https://$EGRESS_HOST/$n" 2>&1)
        rc=$?
        if [ $rc -ne 0 ] || [ ${#out} -ne $n ] || [ -n "${out//x/}" ]; then fail "egress exited $rc: ${out:0:200}"; fi
        ;;
    esac
    check_idle
done
check_idle all
t1=$(now_ms)
kinds=
for k in run stop early-stop idle disconnect egress; do kinds+=" $k=${done_kind[$k]:-0}"; done
echo "churn: $COUNT cycles in $((t1 - t0)) ms (seed $SEED, classes ${CLASSES[*]};$kinds), $failures failed"
[ $failures -eq 0 ]
