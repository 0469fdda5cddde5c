#!/usr/bin/env bash
# sandbox-files' contract (daemon/files/README.md) without a worker: every
# refusal beside a control that takes the same road and succeeds, under both
# ways of resolving a path (openat2, and the walk gVisor 20240729 needs).
# What it cannot show here (the worker's UID, the disk cap, gVisor) the
# integration test tests/integration/files.sh shows.
FILES=${1:?usage: test-files-cli.sh PATH-TO-sandbox-files}
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
H=$T/home
mkdir -p "$H" "$T/sibling"
echo sibling-secret >"$T/sibling/secret"
echo outside-secret >"$T/shadow"

out=$("$FILES" 2>&1); rc=$?
check_exit "no arguments: 2 and the usage" 2 'Usage: sandbox-files' "$rc" "$out"
out=$("$FILES" --root=relative stat . 2>&1); rc=$?
check_exit "a relative root: 2" 2 'Usage' "$rc" "$out"
out=$("$FILES" --root="$H" rename a 2>&1); rc=$?
check_exit "rename with one path: 2" 2 'Usage' "$rc" "$out"

for how in openat2 walk; do
    F() { "$FILES" --root="$H" --resolve="$how" "$@"; }
    rm -rf "${H:?}"/* "$H"/.[!.]* 2>/dev/null
    mkdir -p "$H/d/e"
    echo inside >"$H/d/e/f"
    ln -s "$T/shadow" "$H/shadow-link"
    ln -s "$T/sibling" "$H/sibling-link"
    ln -s d "$H/inner-link"
    t="[$how]"

    out=$(F read d/e/f 2>&1); rc=$?
    check_exit "$t control: a file below the home is read" 0 '^inside' "$rc" "$out"
    check_match "$t control: its status says open and done" '.*sandbox-files: open 7.*sandbox-files: done 7.*' "$out"
    out=$(F read "$H/d/e/f" 2>/dev/null); rc=$?
    check_exit "$t control: an absolute path inside the home is read" 0 '^inside$' "$rc" "$out"
    out=$(F read d/../../shadow 2>&1); rc=$?
    check_exit "$t '..' is refused" 1 'error PathOutsideHome: d/../../shadow: the path leaves the home' "$rc" "$out"
    out=$(F read d/e/../e/f 2>&1); rc=$?
    check_exit "$t '..' is refused even where it stays inside" 1 'error PathOutsideHome' "$rc" "$out"
    out=$(F read "$T/shadow" 2>&1); rc=$?
    check_exit "$t an absolute path outside the home is refused" 1 'error PathOutsideHome' "$rc" "$out"
    out=$(F read "${H}x/f" 2>&1); rc=$?
    check_exit "$t a sibling path sharing the home's prefix is refused" 1 'error PathOutsideHome' "$rc" "$out"
    out=$(F read shadow-link 2>&1); rc=$?
    check_exit "$t a symlink to a secret outside: refused, nothing read" 1 \
        '^sandbox-files: error PathOutsideHome: shadow-link: a symlink is never followed$' "$rc" "$out"
    out=$(F read sibling-link/secret 2>&1); rc=$?
    check_exit "$t a symlink to a sibling's home on the way: refused" 1 'error PathOutsideHome.*never followed' "$rc" "$out"
    out=$(F read inner-link/e/f 2>&1); rc=$?
    check_exit "$t a symlink that stays inside is refused as well" 1 'error PathOutsideHome' "$rc" "$out"
    out=$(echo x | F write shadow-link 2>&1); rc=$?
    check_exit "$t a write through a symlink: refused" 1 'error PathOutsideHome' "$rc" "$out"
    check_eq "$t ... and the file it points at is unchanged" outside-secret "$(cat "$T/shadow")"
    out=$(echo x | F write sibling-link/secret 2>&1); rc=$?
    check_exit "$t a write into a sibling's home through a link: refused" 1 'error PathOutsideHome' "$rc" "$out"
    check_eq "$t ... and the sibling's file is unchanged" sibling-secret "$(cat "$T/sibling/secret")"
    out=$(F list sibling-link 2>&1); rc=$?
    check_exit "$t a listing through a symlink: refused" 1 'error PathOutsideHome' "$rc" "$out"
    out=$(F list d 2>&1); rc=$?
    check_exit "$t control: a listing of a directory" 0 '^d 4096 755 [0-9]+ [0-9]+ [0-9]+ 1:e$' "$rc" "$(F list d 2>/dev/null)"
    out=$(F stat shadow-link 2>/dev/null); rc=$?
    check_exit "$t stat of a symlink reports the link, not its target" 0 "^l [0-9]+ 777 [0-9]+ [0-9]+ [0-9]+ 11:shadow-link\$" "$rc" "$out"
    out=$(F mkdir --parents sibling-link/new 2>&1); rc=$?
    check_exit "$t mkdir --parents through a symlink: refused" 1 'error PathOutsideHome' "$rc" "$out"
    check "$t ... and nothing was made in the sibling's home" test ! -e "$T/sibling/new"
    check "$t control: mkdir --parents below the home" F mkdir --parents x/y/z
    check "$t ... made" test -d "$H/x/y/z"
    out=$(F rename d/e/f ../stolen 2>&1); rc=$?
    check_exit "$t rename out of the home: refused" 1 'error PathOutsideHome' "$rc" "$out"
    check "$t control: rename inside the home" F rename d/e/f d/g
    check "$t ... renamed" test -f "$H/d/g"
    out=$(F remove sibling-link/secret 2>&1); rc=$?
    check_exit "$t remove through a symlink: refused" 1 'error PathOutsideHome' "$rc" "$out"
    check "$t ... and the sibling's file is there" test -f "$T/sibling/secret"
    check "$t remove of the link itself removes only the link" F remove sibling-link
    check "$t ... the sibling's home stays" test -f "$T/sibling/secret"
    out=$(F remove . 2>&1); rc=$?
    check_exit "$t the home itself cannot be removed" 1 'error InvalidArgument' "$rc" "$out"
    out=$(F remove x 2>&1); rc=$?
    check_exit "$t a directory that is not empty needs --recursive" 1 'error DirectoryNotEmpty' "$rc" "$out"
    check "$t control: --recursive removes it" F remove --recursive x
    check "$t ... gone" test ! -e "$H/x"

    # A FIFO planted at the path: neither side blocks (no reader, no writer).
    mkfifo "$H/fifo"
    out=$(timeout 5 "$FILES" --root="$H" --resolve="$how" read fifo 2>&1); rc=$?
    check_exit "$t reading a FIFO does not block: NotRegularFile" 1 'error NotRegularFile: fifo' "$rc" "$out"
    out=$(timeout 5 "$FILES" --root="$H" --resolve="$how" write fifo </dev/null 2>&1); rc=$?
    check_exit "$t writing a FIFO without reader does not block: NotRegularFile" 1 'error NotRegularFile' "$rc" "$out"
    exec 7<>"$H/fifo"   # now it has a reader: the open would succeed, the type check refuses
    out=$(echo x | timeout 5 "$FILES" --root="$H" --resolve="$how" write fifo 2>&1); rc=$?
    check_exit "$t writing a FIFO that has a reader: NotRegularFile" 1 'error NotRegularFile' "$rc" "$out"
    exec 7>&-
    if python3 -c "import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])" "$H/sock" 2>/dev/null; then
        out=$(timeout 5 "$FILES" --root="$H" --resolve="$how" read sock 2>&1); rc=$?
        check_exit "$t a socket is refused: NotRegularFile" 1 'error NotRegularFile' "$rc" "$out"
    else
        skip "$t no python3 to plant a socket"
    fi
    if [ "$(id -u)" = 0 ] && mknod "$H/null" c 1 3 2>/dev/null; then
        out=$(timeout 5 "$FILES" --root="$H" --resolve="$how" read null 2>&1); rc=$?
        check_exit "$t a device node is refused: NotRegularFile" 1 'error NotRegularFile' "$rc" "$out"
    else
        skip "$t mknod needs root"
    fi

    # Writes: each way, then the binary-identical round trip.
    check "$t control: write creates a file" sh -c "echo one | '$FILES' --root='$H' --resolve=$how write --perm=0640 new"
    check_eq "$t ... with the mode asked for" 640 "$(stat -c %a "$H/new")"
    out=$(echo two | F write --how=create new 2>&1); rc=$?
    check_exit "$t --how=create on an existing file: FileExists" 1 'error FileExists' "$rc" "$out"
    check_eq "$t ... which is unchanged" one "$(cat "$H/new")"
    check "$t --how=append appends" sh -c "echo two | '$FILES' --root='$H' --resolve=$how write --how=append new"
    check_eq "$t ... both lines" "one two" "$(tr '\n' ' ' <"$H/new" | sed 's/ $//')"
    check "$t --how=write truncates" sh -c "echo three | '$FILES' --root='$H' --resolve=$how write new"
    check_eq "$t ... one line" three "$(cat "$H/new")"
    out=$(echo x | F write d 2>&1); rc=$?
    check_exit "$t writing a directory: IsADirectory" 1 'error IsADirectory' "$rc" "$out"
    head -c 3000000 /dev/urandom >"$T/blob"
    F write blob <"$T/blob" 2>/dev/null
    check_eq "$t 3 MB written in are the same bytes" "$(sha256sum <"$T/blob")" "$(sha256sum <"$H/blob")"
    check_eq "$t ... and read out through a pipe the same" "$(sha256sum <"$T/blob")" "$(F read blob 2>/dev/null | cat | sha256sum)"
    out=$( (ulimit -f 1024; head -c 2000000 /dev/zero | "$FILES" --root="$H" --resolve="$how" write capped) 2>&1); rc=$?
    check_exit "$t a write past the size limit: DiskFull, named" 1 "error DiskFull: capped: the worker's disk cap is reached after 1048576 bytes" "$rc" "$out"
    out=$( (ulimit -f 1024; head -c 1000000 /dev/zero | "$FILES" --root="$H" --resolve="$how" write capped) 2>&1); rc=$?
    check_exit "$t control: below the limit" 0 'done 1000000' "$rc" "$out"

    # The atomic replace: a temporary file beside the target, renamed only by commit.
    echo old >"$H/cfg"
    chmod 0604 "$H/cfg"
    out=$(echo new | F replace cfg 2>&1); rc=$?
    check_exit "$t replace writes a temporary file" 0 'open 0 \.cfg\.sbx-[0-9a-f]{16}$' "$rc" "$out"
    temp=$(printf '%s\n' "$out" | sed -n 's/^sandbox-files: open 0 //p')
    check_eq "$t ... the target is unchanged until commit" old "$(cat "$H/cfg")"
    check "$t commit renames it over the target" F commit "$temp" cfg
    check_eq "$t ... new content" new "$(cat "$H/cfg")"
    check_eq "$t ... the mode of what it replaced" 604 "$(stat -c %a "$H/cfg")"
    check "$t ... no temporary file left" test ! -e "$H/$temp"
    out=$(echo newer | F replace cfg 2>&1)
    temp=$(printf '%s\n' "$out" | sed -n 's/^sandbox-files: open 0 //p')
    check "$t abort removes the temporary file" F abort "$temp" cfg
    check_eq "$t ... the target is unchanged" new "$(cat "$H/cfg")"
    check "$t ... and the temporary file is gone" test ! -e "$H/$temp"
    out=$(F commit cfg cfg 2>&1); rc=$?
    check_exit "$t commit of a name that is not a temporary file: refused" 1 'error InvalidArgument' "$rc" "$out"
    out=$(echo x | F replace shadow-link 2>&1); rc=$?
    check_exit "$t replace of a symlink: refused" 1 'error PathOutsideHome' "$rc" "$out"
    out=$( (ulimit -f 1024; head -c 2000000 /dev/zero | "$FILES" --root="$H" --resolve="$how" replace cfg) 2>&1); rc=$?
    check_exit "$t a replace past the size limit: DiskFull" 1 'error DiskFull' "$rc" "$out"
    check_eq "$t ... the target is unchanged and no temporary file is left" "cfg" "$(cd "$H" && ls -a | grep cfg | tr '\n' ' ' | sed 's/ $//')"

    # Listings are bounded.
    mkdir "$H/many" && touch "$H/many/"{1..20}
    out=$(F list --max-entries=10 many 2>&1); rc=$?
    check_exit "$t a listing longer than --max-entries: TooManyEntries" 1 'error TooManyEntries' "$rc" "$out"
    out=$(F list --max-entries=20 many 2>/dev/null | wc -l); rc=$?
    check_exit "$t control: one that fits" 0 '^20$' "$rc" "$out"
done
out=$("$FILES" --root="$H" --alias=/some/link read /some/link/d/g 2>/dev/null); rc=$?
check_exit "control: an absolute path under --alias (the Home property's name) is the home's" 0 '^inside$' "$rc" "$out"
out=$("$FILES" --root="$H" --alias=/some/link read /some/linkx/d/g 2>&1); rc=$?
check_exit "a sibling of the alias sharing its prefix: PathOutsideHome" 1 'error PathOutsideHome' "$rc" "$out"
out=$("$FILES" --root="$H" --alias=relative read d/g 2>&1); rc=$?
check_exit "a relative --alias: 2" 2 'Usage' "$rc" "$out"
out=$("$FILES" --root="$H" --resolve=openat2 stat d 2>&1); rc=$?
check_exit "openat2 is there on this kernel (else the walk alone was tested)" 0 'done 1' "$rc" "$out"
tap_done
