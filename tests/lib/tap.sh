# shellcheck shell=bash
# The one TAP library of the shell tests: every test script sources it, the
# integration scripts through tests/integration/lib.sh (which adds the
# container and sandboxd helpers), the others (meson's shell tests, the egress
# script's half that runs inside the container) directly. Output is plan-less
# TAP: "ok N - name" / "not ok N - name", diagnostics as "# ..." lines, and a
# closing "# N checks, N failed" comment (tap_done).
#
#   check NAME CMD...              ok when CMD exits 0
#   check_fails NAME CMD...        ok when CMD exits non-zero
#   check_output NAME REGEX CMD... ok when CMD exits 0 and its output matches REGEX (grep -E)
#   check_eq NAME EXPECTED ACTUAL  ok when the two strings are equal
#   check_match NAME REGEX STRING  ok when STRING matches REGEX (bash's =~, the whole string)
#   check_exit NAME STATUS REGEX ACTUAL_STATUS ACTUAL_OUTPUT
#                                  ok when a command the caller ran exited with STATUS and
#                                  its output matches REGEX (grep -E): a program's
#                                  command-line contract
#   ok NAME / not_ok NAME [DIAG...] / diag LINE...
#   skip REASON                    a check that cannot run here ("ok N # skip REASON")
#   tap_failed                     whether a check has failed so far
#   wait_until SECONDS CMD...      poll CMD every 0.1 s until it succeeds
#   tap_done                       print the summary comment; exit 1 if anything failed
#
# CMD runs in the calling shell (its assignments stay), its output captured:
# a failing check shows the command, its exit status and the output's last
# lines, and CHECK_DIAG's lines when the caller set it (CHECK_DIAG=... check ...).
# A NAME with TAP's "# TODO" directive is a check of a known, open bug: shown
# (run-all.sh lists it), not counted as a failure.
# TAP_ON_FAIL, when a script sets it: a command run once, after the script's
# first failed check, with the time (seconds since the epoch) the check before
# it ended; its output's last lines are shown as diagnostics. A failure on a
# CI machine is then explained by what only that machine saw (the integration
# scripts' shows the test bed's journal since then).

_tap_n=0
_tap_failed=0
_tap_mark=$EPOCHSECONDS
_tap_context_shown=0

diag() {
    local line
    for line in "$@"; do
        printf '%s\n' "$line" | sed 's/^/# /'
    done
}

ok() {
    _tap_n=$((_tap_n + 1))
    echo "ok $_tap_n - $*"
    _tap_mark=$EPOCHSECONDS
}

not_ok() {
    _tap_not_ok "$@"
    _tap_context
}

_tap_not_ok() {
    local name=$1
    shift
    _tap_n=$((_tap_n + 1))
    [[ $name == *"# TODO"* ]] || { _tap_failed=$((_tap_failed + 1)); _tap_context_due=1; }
    echo "not ok $_tap_n - $name"
    [ $# -gt 0 ] && diag "$@"
    return 0
}

# After a failed check's own diagnostics: TAP_ON_FAIL's, the first time.
_tap_context() {
    if [ "${_tap_context_due:-0}" = 1 ] && [ "$_tap_context_shown" = 0 ] && [ -n "${TAP_ON_FAIL:-}" ]; then
        _tap_context_shown=1
        "$TAP_ON_FAIL" "$_tap_mark" 2>&1 | head -n 30 | sed 's/^/#   /'
    fi
    _tap_context_due=0
    _tap_mark=$EPOCHSECONDS
}

# The output goes to a file, not through $(...), so CMD runs in this shell;
# the locals are _tap_ names so that a CMD reading its caller's $out, $rc or
# $name sees the caller's. TAP_TMP, when the script has one
# (tests/integration/lib.sh's tap_init).
_tap_run() {
    local _tap_out _tap_rc
    if [ -n "${TAP_TMP:-}" ]; then _tap_out=$TAP_TMP/check.out; else _tap_out=$(mktemp); fi
    "$@" >"$_tap_out" 2>&1
    _tap_rc=$?
    CHECK_OUTPUT=$(cat "$_tap_out")
    [ -n "${TAP_TMP:-}" ] || rm -f "$_tap_out"
    return $_tap_rc
}

_tap_diag_cmd() {
    local _tap_rc=$1
    shift
    diag "command: $*" "exit status: $_tap_rc"
    [ -n "$CHECK_OUTPUT" ] && printf '%s\n' "$CHECK_OUTPUT" | tail -n 20 | sed 's/^/#   /'
    [ -n "${CHECK_DIAG:-}" ] && diag "$CHECK_DIAG"
    return 0
}

check() {
    local _tap_name=$1 _tap_rc
    shift
    _tap_run "$@"
    _tap_rc=$?
    if [ $_tap_rc -eq 0 ]; then ok "$_tap_name"; else _tap_not_ok "$_tap_name"; _tap_diag_cmd $_tap_rc "$@"; fi
    _tap_context
}

check_fails() {
    local _tap_name=$1 _tap_rc
    shift
    _tap_run "$@"
    _tap_rc=$?
    if [ $_tap_rc -ne 0 ]; then
        ok "$_tap_name"
    else
        _tap_not_ok "$_tap_name" "expected a failure"
        _tap_diag_cmd $_tap_rc "$@"
    fi
    _tap_context
}

check_output() {
    local _tap_name=$1 _tap_regex=$2 _tap_rc
    shift 2
    _tap_run "$@"
    _tap_rc=$?
    if [ $_tap_rc -eq 0 ] && printf '%s\n' "$CHECK_OUTPUT" | grep -Eq -- "$_tap_regex"; then
        ok "$_tap_name"
    else
        _tap_not_ok "$_tap_name" "expected output matching: $_tap_regex"
        _tap_diag_cmd $_tap_rc "$@"
    fi
    _tap_context
}

check_eq() {
    if [ "$2" = "$3" ]; then ok "$1"; else _tap_not_ok "$1" "expected: '$2'" "actual:   '$3'"; fi
    _tap_context
}

check_match() {
    if [[ $3 =~ $2 ]]; then ok "$1"; else _tap_not_ok "$1" "expected to match: $2" "actual: '$3'"; fi
    _tap_context
}

check_exit() {
    if [ "$4" = "$2" ] && printf '%s\n' "$5" | grep -Eq -- "$3"; then
        ok "$1"
    else
        _tap_not_ok "$1" "expected exit status $2 and output matching: $3" "actual exit status $4, output: '$5'"
    fi
    _tap_context
}

skip() {
    _tap_n=$((_tap_n + 1))
    echo "ok $_tap_n # skip $*"
}

tap_failed() { [ $_tap_failed -gt 0 ]; }

wait_until() {
    local _tap_deadline=$(($(date +%s%N) / 1000000 + ${1%.*} * 1000))
    shift
    while ! "$@" >/dev/null 2>&1; do
        [ $(($(date +%s%N) / 1000000)) -ge $_tap_deadline ] && return 1
        sleep 0.1
    done
    return 0
}

tap_done() {
    echo "# $_tap_n checks, $_tap_failed failed"
    [ $_tap_failed -eq 0 ]
    exit
}
