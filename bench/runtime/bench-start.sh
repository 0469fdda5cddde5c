#!/usr/bin/env bash
# Where a gVisor worker's start time goes, without the daemon: time to the
# first byte of "/bin/echo x" for
#   bare-systemd-run   systemd-run --wait --pipe of a DynamicUser, PrivateNetwork unit
#   bare-runsc         runsc run of the exact bundle a worker gets (copied from a
#                      live worker) with the launcher's flags, outside any unit
#   runsc-unit         the same unit whose ExecStart=+ is that bare runsc run
#                      of the same bundle: the unit's set-up without the launcher
#   launcher-unit      a DynamicUser unit whose ExecStart=+ is sandbox-launch run,
#                      its stdout a connected socket (stdin empty: the launcher
#                      refuses stdin and stdout on one socket, see its README)
# so that the daemon's own share (bench/start-latency.sh) can be told apart
# from the unit's and the launcher's: the split printed at the end is the
# unit's set-up (runsc-unit - bare-runsc) and the launcher's own work, its
# bundle, checks and the readiness path (launcher-unit - runsc-unit). Runs inside a booted test-bed container
# with the build installed at /.
#   bench/runtime/bench-start.sh CONTAINER_LEADER_PID [N] [OUT.json]
set -euo pipefail
PID=${1:?usage: bench-start.sh CONTAINER_LEADER_PID [N] [OUT.json]}
N=${2:-50}
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OUT=${3:-$SRC/bench/results/runtime-start.json}
LAUNCH=${SANDBOX_LAUNCH:-/usr/libexec/sandboxd/sandbox-launch}
RUNSC=${RUNSC:-/usr/bin/runsc}
PLATFORM=${RUNSC_PLATFORM:-systrap}
W=/run/sandboxd-bench-runtime
ct() { nsenter -t "$PID" -a "$@"; }
mkdir -p "$(dirname "$OUT")"

ct mkdir -p "$W"
ct chmod 0700 "$W"
# The launcher-unit path: one socket-activated instance per connection.
ct tee /run/systemd/system/sandbox-rtbench.socket >/dev/null <<EOF
[Socket]
ListenStream=$W/launch.sock
Accept=yes
EOF
ct tee /run/systemd/system/sandbox-rtbench@.service >/dev/null <<EOF
[Service]
DynamicUser=yes
User=sandbox-rtbench
StateDirectory=sandboxd/workers/rtbench
StateDirectoryMode=0700
PrivateNetwork=yes
PrivateIPC=yes
MemoryMax=256M
TasksMax=256
StandardInput=null
StandardOutput=socket
StandardError=journal
ExecStart=+$LAUNCH run --id rtbench --runtime runsc --runtime-path $RUNSC --platform $PLATFORM --home /var/lib/sandboxd/workers/rtbench --pids 256 --memory 256M --cpu-percent 100 -- /bin/echo x
ExecStopPost=+$LAUNCH cleanup --id rtbench --runtime-path $RUNSC
EOF
# A worker that waits, to copy the exact bundle the launcher writes.
ct tee /run/systemd/system/sandbox-rtbundle@.service >/dev/null <<EOF
[Service]
DynamicUser=yes
User=sandbox-rtbench
StateDirectory=sandboxd/workers/rtbench
StateDirectoryMode=0700
PrivateNetwork=yes
PrivateIPC=yes
StandardInput=null
StandardOutput=socket
StandardError=journal
ExecStart=+$LAUNCH run --id rtbench --runtime runsc --runtime-path $RUNSC --platform $PLATFORM --home /var/lib/sandboxd/workers/rtbench --pids 256 --memory 256M --cpu-percent 100 -- /bin/sh -c "echo ready; exec sleep 60"
ExecStopPost=+$LAUNCH cleanup --id rtbench --runtime-path $RUNSC
EOF
# The launcher's unit with runsc itself as its command (same walls and
# limits, same bundle once copied, the launcher's runsc flags).
ct tee /run/systemd/system/sandbox-rtrunsc@.service >/dev/null <<EOF
[Service]
DynamicUser=yes
User=sandbox-rtbench
StateDirectory=sandboxd/workers/rtbench
StateDirectoryMode=0700
PrivateNetwork=yes
PrivateIPC=yes
MemoryMax=256M
TasksMax=256
StandardInput=null
StandardOutput=socket
StandardError=journal
ExecStart=+$RUNSC --root=$W/runsc-unit --ignore-cgroups --network=none --overlay2=none --platform=$PLATFORM run --bundle $W/bundle rtrunsc-%i
EOF
ct tee /run/systemd/system/sandbox-rtrunsc.socket >/dev/null <<EOF
[Socket]
ListenStream=$W/runsc.sock
Accept=yes
EOF
ct tee /run/systemd/system/sandbox-rtbundle.socket >/dev/null <<EOF
[Socket]
ListenStream=$W/bundle.sock
Accept=yes
EOF
ct systemctl daemon-reload
ct systemctl start sandbox-rtbench.socket sandbox-rtbundle.socket sandbox-rtrunsc.socket

ct env N="$N" W="$W" RUNSC="$RUNSC" PLATFORM="$PLATFORM" python3 - > "$OUT.samples" <<'PY'
import json, os, shutil, socket, subprocess, sys, time
N, W, RUNSC, PLATFORM = int(os.environ["N"]), os.environ["W"], os.environ["RUNSC"], os.environ["PLATFORM"]

def idle():
    # the previous instance (and its ExecStopPost) must be gone before the next
    for _ in range(300):
        out = subprocess.run(["systemctl", "list-units", "--no-legend", "--plain", "sandbox-rtbench@*",
                              "sandbox-rtbundle@*", "sandbox-rtrunsc@*"], capture_output=True, text=True).stdout
        if not out.strip():
            return
        time.sleep(0.05)

def first_byte_process(argv):
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    p.stdout.read(1)
    t1 = time.perf_counter()
    p.stdout.read(); p.wait()
    return (t1 - t0) * 1e3

def first_byte_socket(path):
    s = socket.socket(socket.AF_UNIX); s.settimeout(60)
    t0 = time.perf_counter()
    s.connect(path)
    s.recv(1)
    t1 = time.perf_counter()
    while s.recv(4096):
        pass
    s.close()
    return (t1 - t0) * 1e3

# the exact bundle of a worker, taken while one waits
s = socket.socket(socket.AF_UNIX); s.settimeout(60); s.connect(W + "/bundle.sock"); s.recv(16)
bundle = W + "/bundle"
shutil.rmtree(bundle, ignore_errors=True); os.makedirs(bundle)
spec = json.load(open("/run/sandboxd/bundles/rtbench/config.json"))
s.close()
subprocess.run(["systemctl", "stop", "sandbox-rtbundle@*"], check=True)
spec["process"]["args"] = ["/bin/echo", "x"]
json.dump(spec, open(bundle + "/config.json", "w"))
idle()

series = {"bare-systemd-run": [], "bare-runsc": [], "runsc-unit": [], "launcher-unit": []}
for i in range(N + 3):          # the first 3 rounds warm caches and are dropped
    a = first_byte_process(["systemd-run", "--quiet", "--wait", "--pipe", "--collect", "-p", "DynamicUser=yes",
                            "-p", "PrivateNetwork=yes", "/bin/echo", "x"])
    b = first_byte_process([RUNSC, "--root=" + W + "/runsc", "--ignore-cgroups", "--network=none",
                            "--overlay2=none", "--platform=" + PLATFORM, "run", "--bundle", bundle,
                            "bench-%d-%d" % (os.getpid(), i)])
    idle()
    u = first_byte_socket(W + "/runsc.sock")
    idle()
    c = first_byte_socket(W + "/launch.sock")
    idle()
    if i >= 3:
        series["bare-systemd-run"].append(a); series["bare-runsc"].append(b); series["runsc-unit"].append(u)
        series["launcher-unit"].append(c)
json.dump(series, sys.stdout)
PY
ct systemctl stop sandbox-rtbench.socket sandbox-rtbundle.socket sandbox-rtrunsc.socket
ct rm -rf "$W" /run/systemd/system/sandbox-rtbench.socket \
    /run/systemd/system/sandbox-rtbench@.service /run/systemd/system/sandbox-rtbundle.socket \
    /run/systemd/system/sandbox-rtbundle@.service /run/systemd/system/sandbox-rtrunsc.socket \
    /run/systemd/system/sandbox-rtrunsc@.service /var/lib/private/sandboxd/workers/rtbench \
    /var/lib/sandboxd/workers/rtbench
ct systemctl daemon-reload

python3 - "$OUT.samples" "$OUT" "$PLATFORM" <<'PY'
import json, statistics, sys
samples, out, platform = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
def pct(v, p):
    v = sorted(v); return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]
rows = {k: {"n": len(v), "p50_ms": round(pct(v, 50), 1), "p95_ms": round(pct(v, 95), 1),
            "mean_ms": round(statistics.mean(v), 1)} for k, v in samples.items()}
unit = rows["bare-systemd-run"]["p50_ms"]; runsc = rows["bare-runsc"]["p50_ms"]
launcher = rows["launcher-unit"]["p50_ms"]
rows["launcher-unit"]["p50_ratio_to_bare_runsc"] = round(launcher / runsc, 3)
in_unit = rows["runsc-unit"]["p50_ms"]
split = {"unit set-up (runsc-unit - bare-runsc)": round(in_unit - runsc, 1),
         "launcher: bundle, checks, readiness path (launcher-unit - runsc-unit)": round(launcher - in_unit, 1)}
summary = {"benchmark": "runtime-start", "platform": platform, "unit": "milliseconds", "rows": rows,
           "launcher_and_unit_over_bare_runsc_p50_ms": round(launcher - runsc, 1),
           "of_which_unit_start_p50_ms (bare systemd-run)": unit, "split_p50_ms": split}
json.dump(summary, open(out, "w"), indent=2)
print(f"{'path':<18} {'n':>4} {'p50 ms':>8} {'p95 ms':>8} {'mean ms':>8}")
for k, r in rows.items():
    print(f"{k:<18} {r['n']:>4} {r['p50_ms']:>8} {r['p95_ms']:>8} {r['mean_ms']:>8}")
print(f"launcher-unit / bare-runsc at p50: {launcher / runsc:.2f}  (unit start alone: {unit} ms)")
for k, v in split.items():
    print(f"  {v:8.1f} ms  {k}")
print(f"written: {out}")
PY
rm -f "$OUT.samples"
