#!/bin/sh
# Runs one libFuzzer target for a few seconds from its seed corpus. New
# inputs go to a scratch directory, never into the source tree.
set -eu
fuzzer=$1 seeds=$2 seconds=${3:-5}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
exec_status=0
"$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=1024 -print_final_stats=1 \
        "$scratch" "$seeds" || exec_status=$?
exit $exec_status
