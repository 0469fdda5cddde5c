#!/usr/bin/env bash
# Suspend and resume of a gVisor worker with Credentials and an Environment
# (issue 13): sandboxd keeps a copy for the resume, the restored process still
# reads its credential file and its environment, also after a restart of
# sandboxd while it was suspended; the copy is a sealed memfd in PID 1's fd
# store, which no unprivileged user and no sibling worker can read, in no
# file, and gone once the worker is stopped.
source "$(dirname "$0")/lib.sh"
tap_init "$@"

CHANNEL=/usr/lib/sandboxd-tests/sbx-channel
R=$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
CRED=sbx-susp-cred-$R
ENVV=sbx-susp-env-$R
# The same strings as patterns that do not match their own text: a search
# inside a sandbox would otherwise find its own command line.
CRED_RE="sbx-susp-cre[d]-$R"
ENVV_RE="sbx-susp-en[v]-$R"
# Re-reads its credential file on every line: a resumed unit must bring it back.
PROG='import os, time
path = os.path.join(os.environ["CREDENTIALS_DIRECTORY"], "tok")
i = 0
while True:
    i += 1
    try:
        cred = open(path).read().strip()
    except OSError as e:
        cred = "unreadable:%s" % e.errno
    print(i, cred, os.environ.get("KEPT_VAR", "unset"), flush=True)
    time.sleep(0.2)'

lines_of() { ct timeout 30 "$CHANNEL" read "$1" "$2" 2>/dev/null | grep -E '^[0-9]+ ' || true; }
has_output() { [ -n "$(lines_of "$1" 500)" ]; }
# The fds PID 1 holds whose memfd carries STRING: root's view of the fd store.
store_holding() {
    ct sh -c 'for f in /proc/1/fd/*; do case $(readlink "$f") in *memfd:sandboxd-secret*) grep -qF "$1" "$f" 2>/dev/null && echo "$f";; esac; done' sh "$1" | wc -l
}
store_empty_of() { [ "$(store_holding "$1")" = 0 ]; }
# Lines within 1.5 s, kept in READ_OUT (wait_until runs it in this shell).
read_some() { READ_OUT=$(lines_of "$1" 1500); [ -n "$READ_OUT" ]; }
# Every line since the resume: the count goes on, the secrets are there.
check_reads() {
    local tag=$1 id=$2 last=$3 first out
    # A restored sandbox on a loaded host may take a while to print again.
    READ_OUT=
    wait_until 30 read_some "$id"
    out=$READ_OUT
    first=$(printf '%s\n' "$out" | head -n1 | awk '{print $1}')
    diag "$tag: last before=$last first after=$first: $(printf '%s\n' "$out" | tail -n1)"
    if [ -n "$first" ] && [ -n "$last" ] && [ "$first" -gt "$last" ]; then
        ok "$tag: the process counts on ($last -> $first)"
    else
        not_ok "$tag: the process counts on" "last=$last first=$first"
    fi
    check_output "$tag: it reads its credential file and its environment" "^[0-9]+ $CRED $ENVV\$" \
        sh -c "printf '%s\n' \"\$1\" | tail -n1" sh "$out"
}

ct systemctl start sandboxd.service
ct sh -c "umask 077; printf '%s\n' '$CRED' >/root/susp-cred"
WID=$(ct sandboxctl create --class standard --credential tok:/root/susp-cred --setenv "KEPT_VAR=$ENVV" \
    -- /usr/bin/python3 -c "$PROG")
diag "worker $WID"
check "the worker runs" wait_until 60 has_output "$WID"
ct rm -f /root/susp-cred
check_output "it reads its credential and environment" "^[0-9]+ $CRED $ENVV\$" last_line lines_of "$WID" 600
check_eq "the copy is in PID 1's fd store, once" 1 "$(store_holding "$CRED")"
check_eq "the environment with it" 1 "$(store_holding "$ENVV")"
uid_before=$(sbx_prop "$WID" UID | awk '{print $NF}')

# ---- suspend and resume ----------------------------------------------------------
last=$(last_line lines_of "$WID" 600 | awk '{print $1}')
check "a worker with Credentials and an Environment is suspended" sbx_call SuspendWorker s "$WID"
check_eq "it is listed as suspended" suspended "$(state_of "$WID")"
check "its unit is gone" unit_gone "sandbox-$WID.service"
check_fails "so are the unit's credentials" ct test -e "/run/credentials/sandbox-$WID.service"
check_eq "the copy stays in the fd store" 1 "$(store_holding "$CRED")"
nobody_reads() {
    ct runuser -u nobody -- sh -c 'cat /proc/1/fd/* /proc/[0-9]*/environ 2>/dev/null; grep -rsh -D skip -e "$1" -e "$2" /run /tmp /var/tmp /dev/shm /var/lib/sandboxd 2>/dev/null' sh "$CRED_RE" "$ENVV_RE" |
        grep -acE "$CRED_RE|$ENVV_RE"
}
check_eq "no unprivileged user can read it" 0 "$(nobody_reads)"
# Root's view: in no file under /run or sandboxd's state, only in PID 1's
# memfd. The checkpoint image (process memory, root's alone, 0600) is the
# one place the sandbox's own memory sits.
root_files=$(ct grep -rlsF -D skip -e "$CRED" -e "$ENVV" /run /var/lib/sandboxd /var/lib/private/sandboxd /etc/sandboxd \
    --exclude-dir=suspend 2>/dev/null)
check_eq "in no file under /run, /etc/sandboxd or sandboxd's state" "" "$root_files"
SIB=$(ct timeout 120 sandboxctl run --class standard -- /bin/sh -c \
    'grep -rsl -D skip -e "$1" -e "$2" /run /tmp /var /proc /home /etc 2>/dev/null; echo sibling-done' sh "$CRED_RE" "$ENVV_RE" 2>&1)
check_eq "a sibling worker finds it nowhere" sibling-done "$SIB"

check "ResumeWorker resumes it" sbx_call ResumeWorker s "$WID"
check_eq "running again" running "$(state_of "$WID")"
check_eq "with the same UID" "$uid_before" "$(sbx_prop "$WID" UID | awk '{print $NF}')"
check_reads "resume" "$WID" "$last"
check_eq "the fd store holds one copy still" 1 "$(store_holding "$CRED")"

# ---- a restart of sandboxd: while running, then while suspended -------------------
check "restart (running): sandboxd restarts" ct systemctl restart sandboxd.service
check_eq "restart (running): the worker runs on" running "$(state_of "$WID")"
last=$(last_line lines_of "$WID" 600 | awk '{print $1}')
check "restart (running): and is suspended" sbx_call SuspendWorker s "$WID"
check "restart (suspended): sandboxd restarts" ct systemctl restart sandboxd.service
check_eq "restart (suspended): still listed as suspended" suspended "$(state_of "$WID")"
check_eq "restart (suspended): one copy in the fd store" 1 "$(store_holding "$CRED")"
check "restart (suspended): it resumes" sbx_call ResumeWorker s "$WID"
check_reads "restart" "$WID" "$last"

# ---- stop: the copy goes ---------------------------------------------------------
check "suspended once more" sbx_call SuspendWorker s "$WID"
check "stop of the suspended worker" sbx_call StopWorker s "$WID"
check "it ended" wait_until 20 state_is "$WID" ended
check "the fd store no longer holds its credential" wait_until 20 store_empty_of "$CRED"
check "nor its environment" store_empty_of "$ENVV"

# ---- a worker that can never be suspended keeps nothing --------------------------
ct sh -c "umask 077; printf '%s\n' 'trusted-$CRED' >/root/susp-cred"
TID=$(ct sandboxctl create --class trusted --credential tok:/root/susp-cred -- /bin/sleep 300)
ct rm -f /root/susp-cred
check "trusted: the worker runs" wait_until 30 state_is "$TID" running
check_eq "trusted: no copy of its credential is kept" 0 "$(store_holding "trusted-$CRED")"
check_error "trusted: and it cannot be suspended" org.sandboxd1.Error.NotSupported root SuspendWorker s "$TID"
ct sandboxctl stop "$TID" >/dev/null

tap_done
