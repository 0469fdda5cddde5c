# shellcheck shell=sh
# TAP for the scripts that test a program's command-line contract (exit
# status and output) without systemd. Source it; then call check for each
# case and end with cli_check_done, whose status is the script's.
#   check NAME EXPECTED_EXIT OUTPUT_REGEX ACTUAL_EXIT ACTUAL_OUTPUT
n=0
failed=0
check() {
    n=$((n + 1))
    if [ "$4" = "$2" ] && printf '%s\n' "$5" | grep -Eq -- "$3"; then
        echo "ok $n - $1"
    else
        echo "not ok $n - $1 (exit $4, output '$5')"; failed=$((failed + 1))
    fi
}
cli_check_done() {
    echo "# passed $((n - failed)) failed $failed"
    [ "$failed" = 0 ]
}
