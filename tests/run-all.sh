#!/usr/bin/env bash
# Runs every test of the tree and ends with one line "N passed, N failed".
#   unit:        meson test in build-ci (-Dwerror_ci=true) and in build-asan
#                (ASan+UBSan); counted from meson-logs/testlog.json; with
#                integration tests, the first job of their queue
#   package:     the Debian package, built with dpkg-buildpackage from a copy
#                of the tree in build-deb/src (debs in build-deb/), and lintian
#                on it (one test: no errors, no warnings)
#   integration: tests/integration/*.sh, every tests/*/integration.sh
#                (egress, runtime, cli, package, ...) and the attack suite's
#                sections tests/attacks/*.sh, each against a freshly
#                booted systemd container (tests/testbed/testbed.sh) in which
#                the package is installed with apt (plus the test clients from
#                build-ci), called as SCRIPT LEADER_PID STAGE_DIR; STAGE_DIR
#                holds the .deb and its files extracted (debs/extracted);
#                counted from their TAP lines ("ok N" / "not ok N").
#                A script with a line "# testbed: install=none" gets the
#                container without the package installed (tests/package);
#                one with "# testbed: long" is queued first.
#   sanitizers:  the ASan+UBSan build is not a package: its integration pass
#                copies a meson DESTDIR install of build-asan over / instead
#   bench smoke: bench/run.sh --quick, every benchmark at its smallest sizes,
#                one job of the integration queue (not with --only)
# Installs what it needs with apt when run as root. Integration needs root.
#   usage: tests/run-all.sh [--unit-only] [--integration-only] [--no-asan] [--long] [--jobs N] [--only GLOB]...
#   --jobs N:    integration containers at a time (default: 3, or
#                $INTEGRATION_JOBS)
#   --long:      the long tier: the churn (tests/reliability) and the bus spec
#                fuzzer (tests/busfuzz) at their full sizes, 300 cycles and
#                3000 specs, instead of 100 and 1000 (about 5 minutes more)
#   --only GLOB: run only the integration scripts whose path under the tree
#                matches GLOB (for example 'tests/attacks/*'); repeatable
set -uo pipefail

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$SRC" || exit 1

run_unit=1 run_integration=1 run_asan=1 long_tier=0
declare -a only=()
while [ $# -gt 0 ]; do
    arg=$1
    shift
    case "$arg" in
        --only) [ $# -gt 0 ] || { echo "run-all: --only needs a glob" >&2; exit 2; }
                only+=("$1"); shift ;;
        --unit-only) run_integration=0 ;;
        --integration-only) run_unit=0 ;;
        --no-asan) run_asan=0 ;;
        --long) long_tier=1 ;;
        --jobs) [[ ${1:-} =~ ^[1-9][0-9]*$ ]] || { echo "run-all: --jobs needs a positive number" >&2; exit 2; }
                INTEGRATION_JOBS=$1; shift ;;
        -h|--help) sed -n '2,28p' "$0"; exit 0 ;;
        *) echo "run-all: unknown option $arg (see --help)" >&2; exit 2 ;;
    esac
done

# The long tier's sizes are the scripts' own defaults; an explicit size in
# the environment wins either way.
if [ $long_tier = 0 ]; then
    export CHURN_COUNT=${CHURN_COUNT:-100} BUSFUZZ_COUNT=${BUSFUZZ_COUNT:-1000}
fi

BUILD_CI=$SRC/build-ci
BUILD_ASAN=$SRC/build-asan
BUILD_DEB=$SRC/build-deb
ASAN_STAGE=$BUILD_ASAN/stage
# The sanitizer pass's stage: pending until the unit job has made it (or not).
asan_stage=pending
# -Dman=enabled: CI must render and check the man pages, never skip them.
CI_OPTS=(--prefix=/usr --sysconfdir=/etc --localstatedir=/var -Dwerror_ci=true -Dman=enabled)
LOGDIR=$SRC/build-ci/test-logs
INTEGRATION_TIMEOUT=${INTEGRATION_TIMEOUT:-900}
# Three jobs at a time: most of a script's time is waiting (boots, systemd
# jobs, timeouts it provokes). With two, a 2-core machine's CPUs were busy
# two thirds of the time (sampled over a whole run) and the run took 1996 s;
# with three, 1656 s, each script about a quarter slower. The table at the
# end gives each script's own time.
INTEGRATION_JOBS=${INTEGRATION_JOBS:-3}
declare -a integration_queue=()
# Beside debian/control's Build-Depends (tools/host-deps.sh reads them): the
# sanitizer build, lintian and the man pages' check, the test bed, the tests' Python.
TEST_DEPS="build-essential gcc libc6-dev python3 procps util-linux systemd-container debootstrap
      clang libclang-rt-14-dev lintian man-db groff-base python3-jsonschema python3-yaml"

passed=0 failed=0 skipped=0 known_bugs=0
KNOWN_BUGS_LOG=$(mktemp)
declare -a failures=()
# "SECONDS STEP", one a line: the timing table printed at the end.
TIMINGS=$(mktemp)
timed() { echo "$1 $2" >> "$TIMINGS"; }
# What each failure said, printed after the timing table, at the very end of
# the output: a CI report that shows only the run's last lines still shows why.
DETAILS=$(mktemp)

say() { printf "=== [+%d s] %s\n" "$SECONDS" "$*"; }
record_failure() {
    failed=$((failed + 1))
    failures+=("$1")
    echo "FAILED: $1"
}


# meson setup, or bring an existing build dir's options in line.
configure() {
    local dir=$1
    shift
    if [ -f "$dir/build.ninja" ]; then
        meson configure "$dir" "$@" >/dev/null
    else
        meson setup "$dir" "$@"
    fi
}

# Adds the results of a meson test run (one JSON object per line) to the totals.
count_testlog() {
    local log=$1 label=$2 counts p f s name
    counts=$(python3 - "$log" <<'EOF'
import json, sys
p = f = s = 0
failed = []
for line in open(sys.argv[1]):
    line = line.strip()
    if not line:
        continue
    t = json.loads(line)
    r = t.get("result", "")
    if r in ("OK", "EXPECTEDFAIL"):
        p += 1
    elif r == "SKIP":
        s += 1
    else:
        f += 1
        failed.append("%s (%s)" % (t.get("name"), r))
print(p, f, s)
print("\n".join(failed))
EOF
) || return 1
    read -r p f s <<<"$(head -n1 <<<"$counts")"
    passed=$((passed + p))
    skipped=$((skipped + s))
    while read -r name; do
        [ -n "$name" ] && record_failure "$label: $name"
    done < <(tail -n +2 <<<"$counts")
    echo "$label: $p passed, $f failed, $s skipped"
}

unit_tests() {
    local dir=$1 label
    shift
    label=$(basename "$dir")
    rm -f "$dir/meson-logs/testlog.json"
    say "meson test in $label"
    local t0=$SECONDS
    meson test -C "$dir" --print-errorlogs "$@"
    timed $((SECONDS - t0)) "meson test in $label"
    if [ -s "$dir/meson-logs/testlog.json" ]; then
        count_testlog "$dir/meson-logs/testlog.json" "$label" || record_failure "$label: unreadable testlog.json"
    else
        record_failure "$label: meson test produced no results"
    fi
}

build() {
    local dir=$1 label
    shift
    label=$(basename "$dir")
    say "building $label"
    local t0=$SECONDS
    if configure "$dir" "$@" && ninja -C "$dir"; then
        timed $((SECONDS - t0)) "building $label"
        return 0
    fi
    record_failure "$label: configure or build"
    return 1
}

# The integration test client talks to OpenChannel; tests/integration/meson.build
# builds it. If this tree's tests/meson.build does not include that directory,
# build it the same way by hand rather than lose the channel tests.
integration_client() {
    local out=$BUILD_CI/tests/integration/sbx-channel
    if [ ! -x "$out" ]; then
        mkdir -p "$(dirname "$out")"
        # shellcheck disable=SC2046  # pkg-config's flags are separate words
        cc -std=gnu11 -O2 -D_GNU_SOURCE -Wall -Wextra -Werror -Wshadow -Wformat=2 -Wmissing-prototypes \
            -Wstrict-prototypes -o "$out" "$SRC/tests/integration/sbx-channel.c" \
            $(pkg-config --cflags --libs libsystemd) || return 1
    fi
    echo "$out"
}

# The other test clients meson builds (tests/busfuzz's spec fuzzer), where
# the scripts that run them expect them; a tree without them stages none.
stage_test_clients() {
    local f clients=("$BUILD_CI/tests/busfuzz/sbx-busfuzz" "$BUILD_CI/tests/integration/sbx-watch"
                     "$BUILD_CI/tests/files/sbx-file")
    for f in "${clients[@]}"; do
        [ -x "$f" ] && install -D -m 0755 "$f" "$1/usr/lib/sandboxd-tests/$(basename "$f")"
    done
    return 0
}

# The package, built the way an operator builds it (tools/build-deb.sh). The
# unit tests ran in build-ci already: nocheck.
build_package() {
    local t0=$SECONDS debs
    say "building the Debian package in $BUILD_DEB"
    debs=$(DEB_BUILD_OPTIONS="nocheck ${DEB_BUILD_OPTIONS:-}" "$SRC/tools/build-deb.sh" "$BUILD_DEB") || return 1
    echo "package built in $((SECONDS - t0)) s: $debs"
    timed $((SECONDS - t0)) "building the Debian package"
}

# One test: lintian on what dpkg-buildpackage produced, no errors, no warnings.
lint_package() {
    say "lintian"
    if lintian --fail-on error,warning "$BUILD_DEB"/sandboxd_*.changes; then
        passed=$((passed + 1))
        echo "lintian: clean"
    else
        record_failure "lintian: errors or warnings on the package"
    fi
}

# The integration stage: the package (installed by the test bed), its files
# extracted for scripts that take a binary from it (tests/egress), and the
# test clients, copied.
stage_install() {
    local stage=$1 client deb
    rm -rf "$stage"
    mkdir -p "$stage/debs/extracted"
    for deb in "$BUILD_DEB"/sandboxd_*.deb "$BUILD_DEB"/python3-sandboxd_*.deb; do
        [ -f "$deb" ] || return 1
        cp "$deb" "$stage/debs/" && dpkg-deb -x "$deb" "$stage/debs/extracted" || return 1
    done
    client=$(integration_client) || return 1
    install -D -m 0755 "$client" "$stage/usr/lib/sandboxd-tests/sbx-channel"
    stage_test_clients "$stage"
}

# Counts the TAP lines of one integration log; a script that exits non-zero
# without reporting a failure, or reports nothing, counts as one failure.
count_tap() {
    local name=$1 log=$2 rc=$3 p f s t
    p=$(grep -Ec '^ok [0-9]+' "$log" | head -n1)
    s=$(grep -Eci '^ok [0-9]+.*# *skip' "$log" | head -n1)
    # TAP "not ok ... # TODO": a check of a known, open bug; shown, not a failure.
    t=$(grep -Ec '^not ok [0-9]+.*# *TODO' "$log" | head -n1)
    f=$(grep -Ec '^not ok [0-9]+' "$log" | head -n1)
    f=$((f - t))
    known_bugs=$((known_bugs + t))
    [ "$t" -gt 0 ] && grep -E '^not ok [0-9]+.*# *TODO' "$log" | sed "s|^|  known bug in $name: |" >> "$KNOWN_BUGS_LOG"
    p=$((p - s))
    passed=$((passed + p))
    skipped=$((skipped + s))
    failed=$((failed + f))
    if [ $((p + f + s)) -eq 0 ]; then
        record_failure "$name: no TAP output (exit status $rc)"
    elif [ "$rc" != 0 ] && [ "$f" -eq 0 ]; then
        record_failure "$name: exited with status $rc"
    elif [ "$f" -gt 0 ]; then
        failures+=("$name: $f failed")
        # Each failed check with its diagnostics (the "#" lines after it).
        { echo "--- $name"
          awk '/^not ok [0-9]+/ && !/# *TODO/ { n = 40; print; next }
               n > 0 && /^#/ { n--; print; next } { n = 0 }' "$log" | head -n 90; } >> "$DETAILS"
    fi
    if [ "$t" -gt 0 ]; then
        echo "$name: $p passed, $f failed, $s skipped, $t known bugs (TODO)"
    else
        echo "$name: $p passed, $f failed, $s skipped"
    fi
}

# One integration script in a container of its own: boots it, runs SCRIPT
# with STAGE, saves the journal and stops it. Its output goes to LOG (the TAP
# lines), the exit status to LOG.rc and "SECONDS BOOT_SECONDS" to LOG.time.
# Run in a subshell of its own, beside others: the test bed's traps and
# container list start empty there, so a job stops only its own container.
run_integration_job() {
    local script=$1 stage=$2 log=$3 machine=$4 name t0=$SECONDS install=1 boot_s rc
    _testbed_traps_set=
    _testbed_names=()
    name=${script#"$SRC"/}
    grep -q '^# testbed: install=none' "$script" && install=0
    rm -f "$log.rc" "$log.time"
    say "integration: $name (container $machine)"
    # A boot that fails is the host's trouble (a loaded machine, nspawn), not
    # the test's: it gets one more try, said plainly, before it counts.
    if ! TESTBED_INSTALL=$install testbed_boot "$machine" "$stage"; then
        echo "$name: the test container did not boot; booting a fresh one once more"
        machine=${machine:0:58}-2
        if ! TESTBED_INSTALL=$install testbed_boot "$machine" "$stage"; then
            echo "boot" >"$log.rc"
            echo "$((SECONDS - t0)) $((SECONDS - t0))" >"$log.time"
            return
        fi
    fi
    boot_s=$((SECONDS - t0))
    SANDBOXD_SRC=$SRC SANDBOXD_STAGE=$stage TESTBED_MACHINE=$machine \
        timeout --kill-after=10 "$INTEGRATION_TIMEOUT" bash "$script" "$(testbed_pid "$machine")" "$stage" >"$log" 2>&1
    rc=$?
    [ "$rc" = 124 ] && echo "$name: timed out after ${INTEGRATION_TIMEOUT}s" >>"$log"
    testbed_journal "$machine" "$log.journal" || true
    testbed_stop "$machine"
    echo "$rc" >"$log.rc"
    echo "$((SECONDS - t0)) $boot_s" >"$log.time"
}

# What the parent does once a job has ended: its output in one piece, its
# TAP lines counted, its time, and for the sanitizer build its journal read.
finish_integration_job() {
    local script=$1 log=$2 label=$3 name rc secs boot_s
    name=${script#"$SRC"/}
    cat "$log.out" "$log" 2>/dev/null
    rc=$(cat "$log.rc" 2>/dev/null || echo 1)
    read -r secs boot_s < <(cat "$log.time" 2>/dev/null || echo "0 0")
    if [ "$rc" = boot ]; then
        record_failure "$name$label: the test container did not boot (twice)"
        timed "$secs" "$name$label"
        return
    fi
    count_tap "$name$label" "$log" "$rc"
    echo "$name$label: took $secs s (boot and install: $boot_s s)"
    timed "$secs" "$name$label"
    [ -n "$label" ] || return 0
    # UBSan's line names a source position ("x.c:12:5: runtime error:");
    # runsc's own "encoding error: runtime error: ..." (Go's) is no report.
    local ubsan='\.[ch]:[0-9]+:[0-9]+: runtime error:'
    if grep -E -q "ERROR: AddressSanitizer|$ubsan|SUMMARY: (Address|UndefinedBehavior)Sanitizer" "$log.journal" 2>/dev/null; then
        grep -E -A20 "ERROR: AddressSanitizer|$ubsan" "$log.journal" | head -40
        record_failure "$name under ASan+UBSan: sanitizer report in the journal"
    else
        passed=$((passed + 1))
        echo "$name under ASan+UBSan: no sanitizer report"
    fi
}

# Runs the queued jobs ("SCRIPT|STAGE|LOGDIR|LABEL" each) INTEGRATION_JOBS
# at a time, in the order given. The containers share only the host's CPUs
# and loop devices; each has its own network, file systems and systemd. A
# check that measures a rate must hold on a loaded machine anyway (its
# bounds are generous; the figures themselves are bench/'s).
run_integration_queue() {
    local -a queue=("$@")
    local -A job_script=() job_log=() job_label=()
    local running=0 script stage logdir label log machine pid own_job n=0
    # shellcheck source=tests/testbed/testbed.sh
    source "$SRC/tests/testbed/testbed.sh"
    # Each job's own traps stop its container.
    trap 'kill -TERM $(jobs -p) 2>/dev/null; wait; exit 130' INT TERM
    while [ ${#queue[@]} -gt 0 ] || [ $running -gt 0 ]; do
        while [ ${#queue[@]} -gt 0 ] && [ $running -lt "$INTEGRATION_JOBS" ]; do
            IFS='|' read -r script stage logdir label <<<"${queue[0]}"
            # The sanitizer pass's stage comes from the unit job: its scripts,
            # queued last, wait for that job's end (as a rule long over);
            # without the stage they cannot run, which that job recorded.
            [ "$stage" = "$ASAN_STAGE" ] && [ "$asan_stage" = pending ] && break
            queue=("${queue[@]:1}")
            [ "$stage" = "$ASAN_STAGE" ] && [ "$asan_stage" != ready ] && continue
            n=$((n + 1))
            mkdir -p "$logdir"
            # The jobs without a container of their own: their log and function.
            own_job=
            case "$script" in
                "$BENCH_SMOKE") log=$logdir/bench-quick.log own_job=bench_smoke_job ;;
                "$UNIT_JOB") log=$logdir/unit.log own_job=unit_job ;;
            esac
            if [ -n "$own_job" ]; then
                "$own_job" "$log" >"$log.out" 2>&1 &
                job_script[$!]=$script job_log[$!]=$log job_label[$!]=
                running=$((running + 1))
                continue
            fi
            log=$logdir/$(echo "${script#"$SRC"/}" | tr / _).log
            machine=sbx-it-$$-$n-$(basename "$(dirname "$script")")-$(basename "$script" .sh)
            run_integration_job "$script" "$stage" "$log" "${machine:0:56}" >"$log.out" 2>&1 &
            pid=$!
            job_script[$pid]=$script job_log[$pid]=$log job_label[$pid]=$label
            running=$((running + 1))
        done
        pid=
        wait -n -p pid
        [ -n "$pid" ] || { record_failure "integration: $running job(s) lost"; break; }
        [ -n "${job_script[$pid]:-}" ] || continue
        case "${job_script[$pid]}" in
            "$BENCH_SMOKE") finish_bench_smoke "${job_log[$pid]}" ;;
            "$UNIT_JOB") finish_unit_job "${job_log[$pid]}" ;;
            *) finish_integration_job "${job_script[$pid]}" "${job_log[$pid]}" "${job_label[$pid]}" ;;
        esac
        unset "job_script[$pid]" "job_log[$pid]" "job_label[$pid]"
        running=$((running - 1))
    done
    trap - INT TERM
}

# "SCRIPT: NAME" for every TAP line of the integration logs (ASan passes
# apart), sorted: what a restructuring must leave the same.
tap_names() {
    local log name
    for log in "$LOGDIR"/*.log "$LOGDIR"/asan/*.log; do
        [ -f "$log" ] || continue
        name=$(basename "$log" .log)
        [[ $log == */asan/* ]] && name="$name (ASan)"
        sed -n -E "s/^(not )?ok [0-9]+ - (.*)$/$name: \\2/p" "$log"
    done | LC_ALL=C sort
}

# With --only, whether the script (a path under the tree) is one of those asked for.
selected() {
    local glob
    [ ${#only[@]} -eq 0 ] && return 0
    for glob in "${only[@]}"; do
        # shellcheck disable=SC2053  # the glob is meant to match
        [[ $1 == $glob ]] && return 0
    done
    return 1
}

# Queues tests/integration/*.sh, then each component's own
# tests/*/integration.sh (egress, runtime, cli, ...), then the attack suite's
# further sections (bus-*, quota-*, loss-*; lib-*.sh are their helpers).
# Scripts with a line "# testbed: long" (several minutes) go first, so the
# queue does not end with one of them running alone.
queue_integration_tests() {
    local stage=$1 script
    local -a long=() rest=()
    local scripts=("$SRC"/tests/integration/*.sh)
    for script in "$SRC"/tests/*/integration.sh; do
        [ -f "$script" ] && [ "$script" != "$SRC/tests/integration/integration.sh" ] && scripts+=("$script")
    done
    for script in "$SRC"/tests/attacks/*.sh; do
        case "$(basename "$script")" in integration.sh|lib-*.sh) continue ;; esac
        scripts+=("$script")
    done
    for script in "${scripts[@]}"; do
        [ "$(basename "$script")" = lib.sh ] && continue
        selected "${script#"$SRC"/}" || continue
        if grep -q '^# testbed: long' "$script"; then
            long+=("$script|$stage|$LOGDIR|")
        else
            rest+=("$script|$stage|$LOGDIR|")
        fi
    done
    integration_queue+=("${long[@]}" "${rest[@]}")
}

# The ASan+UBSan build, installed into a container and driven by the
# integration scripts that exercise the most daemon, launcher, proxy and CLI
# code; any sanitizer report in the container's journal is a failure.
ASAN_SCRIPTS="tests/integration/core-lifecycle.sh tests/integration/core-badinput.sh tests/integration/polkit.sh
              tests/integration/egress.sh tests/integration/classes.sh tests/cli/integration.sh
              tests/integration/logs.sh tests/integration/suspend.sh tests/integration/suspend-resume-fail.sh
              tests/integration/exec.sh tests/files/integration.sh tests/integration/endpoint-wake.sh"

asan_stage_install() {
    local stage=$1 client lib
    rm -rf "$stage"
    DESTDIR="$stage" meson install -C "$BUILD_ASAN" --no-rebuild --quiet || return 1
    client=$(integration_client) || return 1
    install -D -m 0755 "$client" "$stage/usr/lib/sandboxd-tests/sbx-channel"
    stage_test_clients "$stage"
    # The rootfs has no compiler runtime: bring the sanitizers' along.
    for lib in $(ldd "$BUILD_ASAN/daemon/sandboxd" | awk '/lib(asan|ubsan)\.so/ {print $3}'); do
        install -D -m 0644 "$lib" "$stage/usr/lib/x86_64-linux-gnu/$(basename "$lib")" || return 1
    done
    # Every unit (workers, probes, proxies) gets these. Leak checking is off:
    # it needs ptrace, which the proxy's seccomp filter rightly refuses, and a
    # leak report would change the exit status a worker's launcher passes on.
    mkdir -p "$stage/etc/systemd/system.conf.d"
    printf '[Manager]\nDefaultEnvironment=ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1\n' \
        > "$stage/etc/systemd/system.conf.d/sanitizers.conf"
}

# Queued last: their stage is the unit job's (unit_phase).
queue_asan_integration_tests() {
    local script
    for script in $ASAN_SCRIPTS; do
        selected "$script" || continue
        integration_queue+=("$SRC/$script|$ASAN_STAGE|$LOGDIR/asan| (ASan)")
    done
}

# The unit tests of both builds, the sanitizer build between them, and that
# build's stage for its integration pass. With integration tests it is a job
# of their queue (unit_job), the first: its compiler and meson test use what
# the first container's waits leave idle, where they ran alone before.
unit_phase() {
    rm -f "$ASAN_STAGE.ready"
    [ $run_unit = 1 ] || return 0
    unit_tests "$BUILD_CI"
    [ $run_asan = 1 ] || return 0
    build "$BUILD_ASAN" "${CI_OPTS[@]}" -Db_sanitize=address,undefined -Db_lundef=false || return 0
    # A UBSan report fails the test (by default UBSan only prints).
    UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 unit_tests "$BUILD_ASAN" --timeout-multiplier 3
    [ $run_integration = 1 ] || return 0
    say "staging a DESTDIR install of build-asan in $ASAN_STAGE"
    if asan_stage_install "$ASAN_STAGE"; then
        touch "$ASAN_STAGE.ready"
    else
        record_failure "asan integration: staging the install"
    fi
}

# unit_phase in a job of the queue: a subshell, whose totals and failures go
# to LOG.counts for the parent (finish_unit_job).
UNIT_JOB=@unit
unit_job() {
    local log=$1
    passed=0 failed=0 skipped=0 failures=()
    unit_phase
    { echo "$passed $failed $skipped"; printf '%s\n' "${failures[@]}"; } >"$log.counts"
}

finish_unit_job() {
    local log=$1 p f s line
    cat "$log.out"
    if [ -s "$log.counts" ]; then
        {
            read -r p f s
            while IFS= read -r line; do
                [ -n "$line" ] && failures+=("$line")
            done
        } <"$log.counts"
        passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
    else
        record_failure "unit tests: their job ended without its totals (log: $log.out)"
    fi
    if [ -f "$ASAN_STAGE.ready" ]; then asan_stage=ready; else asan_stage=failed; fi
}

# Every benchmark of bench/run.sh at its smallest sizes (--quick), from this
# tree, so that none rots unseen: a smoke run that checks no verdicts, so it
# may run beside an integration job (it builds build-bench and boots its own
# test beds one after another). One check: run.sh exits 0 only when every
# benchmark ran and wrote its JSON; otherwise its table's "failed" rows name
# each one and its log. Output in LOG, like an integration job's.
BENCH_SMOKE=@bench-smoke
bench_smoke_job() {
    local log=$1 t0=$SECONDS
    say "bench/run.sh --quick (log $log)"
    bash "$SRC/bench/run.sh" --quick --dir "$LOGDIR/bench" >"$log" 2>&1
    echo $? >"$log.rc"
    echo "$((SECONDS - t0)) 0" >"$log.time"
}

finish_bench_smoke() {
    local log=$1 secs
    cat "$log.out"
    read -r secs _ < <(cat "$log.time" 2>/dev/null || echo "0 0")
    if [ "$(cat "$log.rc" 2>/dev/null)" = 0 ]; then
        passed=$((passed + 1))
        echo "bench/run.sh --quick: every benchmark ran"
    else
        grep -F '| failed' "$log"
        record_failure "bench/run.sh --quick (log: $log)"
        # Each failed benchmark's own log ends with why.
        local blog
        sed -n 's/^=== .* FAILED (.*log \(.*\))$/\1/p' "$log" | sort -u | while read -r blog; do
            echo "--- bench/run.sh --quick: the end of $blog"
            tail -n 30 "$blog"
        done >> "$DETAILS"
    fi
    timed "$secs" "bench smoke (bench/run.sh --quick)"
}

main() {
    local start=$SECONDS run_package=$run_integration
    # shellcheck source=tools/host-deps.sh
    . "$SRC/tools/host-deps.sh"
    # shellcheck disable=SC2086  # a list of package names
    host_deps_install "$SRC" $TEST_DEPS || record_failure "installing build dependencies"
    mkdir -p "$LOGDIR" 2>/dev/null || true

    # Meson tests that boot the test bed find the rootfs through this.
    if [ "$(id -u)" = 0 ]; then
        say "test bed rootfs"
        if TESTBED_ROOTFS=$("$SRC/tests/testbed/mkrootfs.sh"); then
            export TESTBED_ROOTFS SANDBOXD_TESTBED_ROOTFS=$TESTBED_ROOTFS
        elif [ $run_integration = 1 ]; then
            record_failure "building the test bed rootfs (tests/testbed/mkrootfs.sh)"
            run_integration=0
        fi
    fi

    if [ $run_integration = 1 ] && [ "$(id -u)" != 0 ]; then
        record_failure "integration: needs root to boot containers (use --unit-only)"
        run_integration=0
    fi

    local stage=$BUILD_DEB/stage
    if build "$BUILD_CI" "${CI_OPTS[@]}"; then
        mkdir -p "$LOGDIR"
        # The package needs no root to build (Rules-Requires-Root: no); the
        # integration tests install it. --unit-only leaves it out.
        if [ $run_package = 1 ]; then
            if ! build_package; then
                record_failure "package: dpkg-buildpackage (log: $BUILD_DEB/build.log)"
                run_integration=0
            else
                lint_package
                if [ $run_integration = 1 ]; then
                    say "staging the package and the test clients in $stage"
                    if stage_install "$stage"; then
                        export SANDBOXD_STAGE=$stage
                    else
                        record_failure "integration: staging the package"
                        run_integration=0
                    fi
                fi
            fi
        fi
        if [ $run_integration = 1 ]; then
            [ $run_unit = 1 ] && integration_queue+=("$UNIT_JOB||$LOGDIR|")
            # Then the longest job, which leaves the other slot to the
            # scripts. Not with --only, which asks for some scripts alone.
            [ ${#only[@]} -eq 0 ] && integration_queue+=("$BENCH_SMOKE||$LOGDIR|")
            queue_integration_tests "$stage"
            [ $run_unit = 1 ] && [ $run_asan = 1 ] && queue_asan_integration_tests
            run_integration_queue "${integration_queue[@]}"
        else
            unit_phase
        fi
    fi

    say "done in $((SECONDS - start)) s; $skipped skipped; logs in $LOGDIR"
    echo "  seconds  step (slowest first)"
    sort -rn "$TIMINGS" | awk '{ t = $1; $1 = ""; printf "  %7d %s\n", t, substr($0, 2) }'
    rm -f "$TIMINGS"
    # Every TAP check's name, one a line ("SCRIPT: NAME"), to compare runs by.
    tap_names > "$LOGDIR/tap-names.txt" && echo "  check names: $LOGDIR/tap-names.txt"
    local f
    if [ -s "$DETAILS" ]; then
        echo "  what the failures said:"
        sed 's/^/    /' "$DETAILS"
    fi
    rm -f "$DETAILS"
    for f in "${failures[@]}"; do echo "  failed: $f"; done
    [ "$known_bugs" -gt 0 ] && { echo "  $known_bugs check(s) of known open bugs failed (TAP TODO):"; cat "$KNOWN_BUGS_LOG"; }
    rm -f "$KNOWN_BUGS_LOG"
    echo "$passed passed, $failed failed"
    [ $failed -eq 0 ]
}

main
