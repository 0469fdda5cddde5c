#!/usr/bin/env bash
# Workspace ownership across dynamic UIDs (issue 13): what each way of giving
# a new worker's UID the files of a workspace costs, on a loop-mounted ext4
# image holding 100,000 files.
#   A  systemd's StateDirectory= fix-up: a recursive chown to the new UID
#      (measured as chown -R, the same one fchownat per inode); paid at a start
#      whose predecessor's UID is taken, since DynamicUser= reuses it when free
#   B  an idmapped mount (mount_setattr MOUNT_ATTR_IDMAP): constant per start,
#      needs a privileged helper that builds a user namespace per worker
#   C  a stable UID per workspace: nothing per start, but a fixed UID that
#      must be reserved against the range DynamicUser= allocates from
# Runs on the host (root; needs loop devices), prints a table, writes JSON.
#   sudo bash bench/workspace-ownership.sh [FILES] [RUNS]   (default 100000 3)
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
FILES=${1:-100000}
RUNS=${2:-3}
OUT=$SRC/bench/results
mkdir -p "$OUT"
work=$(mktemp -d /var/tmp/ws-bench.XXXXXX)
mnt=$work/mnt
cleanup() { umount "$mnt" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

now() { date +%s.%N; }
elapsed() { python3 -c "import sys; print(round(float(sys.argv[2]) - float(sys.argv[1]), 4))" "$1" "$2"; }

truncate -s 2G "$work/ws.img"
t0=$(now); mkfs.ext4 -q -E nodiscard,root_owner=0:0 "$work/ws.img"; t1=$(now)
mkfs_s=$(elapsed "$t0" "$t1")
mkdir -p "$mnt"
t0=$(now); mount -o loop,nosuid,nodev "$work/ws.img" "$mnt"; t1=$(now)
mount_s=$(elapsed "$t0" "$t1")

# 100 directories of FILES/100 small files: a checked-out repository's shape.
python3 - "$mnt" "$FILES" <<'PY'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
per = max(1, n // 100)
for i in range(n):
    d = os.path.join(root, "d%03d" % (i // per))
    if i % per == 0:
        os.makedirs(d, exist_ok=True)
    fd = os.open(os.path.join(d, "f%06d" % i), os.O_CREAT | os.O_WRONLY, 0o600)
    os.write(fd, b"x")
    os.close(fd)
PY
sync
inodes=$(find "$mnt" | wc -l)

chown_runs=()
for i in $(seq "$RUNS"); do
    uid=$((61184 + i))
    t0=$(now); chown -R "$uid:$uid" "$mnt"; t1=$(now)
    chown_runs+=("$(elapsed "$t0" "$t1")")
done
# The same tree once it is owned already: systemd skips the walk when the top
# directory has the right owner, which never happens with a new dynamic UID.
t0=$(now); find "$mnt" -maxdepth 0 -uid "$((61184 + RUNS))" >/dev/null; t1=$(now)

# B: can this kernel idmap an ext4 mount, and what does one cost?
idmap=$(python3 - "$mnt" "$RUNS" <<'PY'
import ctypes, json, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
SYS_open_tree, SYS_mount_setattr = 428, 442
OPEN_TREE_CLONE, AT_RECURSIVE, MOUNT_ATTR_IDMAP = 1, 0x8000, 0x00100000
class Attr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]
def userns(inside, outside):
    r, w = os.pipe()
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(w)
        rc = libc.unshare(0x10000000)       # CLONE_NEWUSER
        os.write(ready_w, b"1" if rc == 0 else b"0")
        os.read(r, 1)
        os._exit(0)
    os.close(r)
    if os.read(ready_r, 1) != b"1":
        raise OSError("unshare(CLONE_NEWUSER) failed")
    with open("/proc/%d/uid_map" % pid, "w") as f: f.write("%d %d 1\n" % (inside, outside))
    with open("/proc/%d/setgroups" % pid, "w") as f: f.write("deny")
    with open("/proc/%d/gid_map" % pid, "w") as f: f.write("%d %d 1\n" % (inside, outside))
    fd = os.open("/proc/%d/ns/user" % pid, os.O_RDONLY)
    os.write(w, b"x"); os.close(w); os.waitpid(pid, 0)
    return fd
samples, err = [], None
for i in range(int(sys.argv[2])):
    t0 = time.monotonic()
    ns = userns(61184 + int(sys.argv[2]), 62000 + i)
    tree = libc.syscall(SYS_open_tree, -100, sys.argv[1].encode(), OPEN_TREE_CLONE | AT_RECURSIVE)
    if tree < 0:
        err = os.strerror(ctypes.get_errno()); break
    a = Attr(MOUNT_ATTR_IDMAP, 0, 0, ns)
    rc = libc.syscall(SYS_mount_setattr, tree, b"", 0x1000, ctypes.byref(a), ctypes.sizeof(a))
    if rc < 0:
        err = os.strerror(ctypes.get_errno()); break
    st = os.fstat(tree)
    samples.append(time.monotonic() - t0)
    os.close(tree); os.close(ns)
print(json.dumps({"supported": err is None, "error": err, "seconds": [round(s, 5) for s in samples],
                  "owner_seen": st.st_uid if err is None else None}))
PY
)

python3 - "$OUT/workspace-ownership.json" "$FILES" "$inodes" "$mkfs_s" "$mount_s" "$idmap" "$(uname -r)" "${chown_runs[@]}" <<'PY'
import json, statistics, sys
out, files, inodes, mkfs_s, mount_s, idmap, kernel = sys.argv[1:8]
chown = [float(x) for x in sys.argv[8:]]
idmap = json.loads(idmap)
r = {
    "files": int(files), "inodes": int(inodes), "kernel": kernel, "fs": "ext4 on a loop-mounted 2 GiB image",
    "image_mkfs_s": float(mkfs_s), "image_mount_s": float(mount_s),
    "A_statedirectory_chown_s": chown, "A_median_s": statistics.median(chown),
    "B_idmapped_mount": idmap,
    "C_stable_uid_per_start_s": 0.0,
}
json.dump(r, open(out, "w"), indent=2)
print("%-44s %s" % ("method", "per worker start"))
print("%-44s %.3f s median of %s (%d inodes)" % ("A StateDirectory chown fix-up", r["A_median_s"], chown, r["inodes"]))
if idmap["supported"]:
    print("%-44s %.4f s median (supported on %s)" % ("B idmapped mount", statistics.median(idmap["seconds"]), kernel))
else:
    print("%-44s unsupported: %s" % ("B idmapped mount", idmap["error"]))
print("%-44s 0 (a static user record per workspace)" % "C stable UID")
print("image: mkfs %.3f s, mount %.3f s; JSON: %s" % (r["image_mkfs_s"], r["image_mount_s"], out))
PY
