#!/usr/bin/env bash
# tools/completion/sandboxctl against stub `sandboxctl` and `busctl` commands:
# verbs, each verb's options, option values, worker ids from `list
# --no-legend`, classes from the Manager's Classes property (and never from
# Preflight, which probes), files after --credential NAME:.
#   usage: test-completion.sh COMPLETION_FILE
set -uo pipefail

COMPLETION=${1:?usage: $0 COMPLETION_FILE}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib/tap.sh
. "$here/../lib/tap.sh"
# shellcheck source=lib.sh
. "$here/lib.sh"
if [ ! -r "$BASH_COMPLETION_MAIN" ]; then
    echo "bash-completion is not installed ($BASH_COMPLETION_MAIN); skipping"
    exit 77
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/bin" "$tmp/files" "$tmp/files/sub"
touch "$tmp/files/token" "$tmp/files/tls.pem"
calls=$tmp/calls

# A sandboxctl that knows two live workers and one ended one; STUB_OLD=1 plays
# a sandboxctl without list --all.
cat >"$tmp/bin/sandboxctl" <<STUB
#!/bin/bash
echo "sandboxctl \$*" >>"$calls"
case " \$* " in
    *" list --all "*)
        [ "\${STUB_OLD-}" = 1 ] && { echo "sandboxctl: list: unknown option '--all'" >&2; exit 64; }
        printf '%s\n' '0123456789ab trusted  running  -          root  5min  1min  12M' \\
                      'aaaabbbbcccc standard running  -          alice 1h    2min  40M' \\
                      'deadbeef0000 trusted  ended    exited 0   root  2h    -     -' ;;
    *" workspace list "*)
        printf '%s\n' 'proj  0 standard 67108864 1048576 no' 'notes 0 trusted  16777216 524288  yes' ;;
    *" list "*)
        printf '%s\n' '0123456789ab trusted  running  -          root  5min  1min  12M' \\
                      'aaaabbbbcccc standard running  -          alice 1h    2min  40M' ;;
    *) echo "unexpected call" >&2; exit 70 ;;
esac
STUB
# A busctl serving Classes: trusted and standard usable; STUB_NO_DAEMON=1 fails
# as busctl does when nobody owns the name.
cat >"$tmp/bin/busctl" <<STUB
#!/bin/bash
echo "busctl \$*" >>"$calls"
[ "\${STUB_NO_DAEMON-}" = 1 ] && { echo "Failed to get property Classes: Unit not found" >&2; exit 1; }
case " \$* " in
    *" get-property org.sandboxd1 /org/sandboxd1 org.sandboxd1.Manager Classes "*)
        echo 'a(sb) 5 "trusted" true "standard" true "untrusted" false "hostile" false "wasm" false' ;;
    *) exit 1 ;;
esac
STUB
chmod +x "$tmp/bin/sandboxctl" "$tmp/bin/busctl"
export PATH="$tmp/bin:$PATH" calls

completion_load "$COMPLETION" || { echo "Bail out! cannot load $COMPLETION"; exit 1; }

# expect NAME LINE EXPECTED...  (the exact set COMPREPLY must hold)
expect() {
    local name=$1 line=$2 got want
    shift 2
    got=$(complete_line "$line" | tr '\n' ' ')
    want=$( (($#)) && printf '%s\n' "$@" | sort | tr '\n' ' ')
    if [ "$got" = "$want" ]; then ok "$name"; else not_ok "$name" "line:     [$line]" "expected: $want" "got:      $got"; fi
}

expect "verbs" "sandboxctl " attach cp create egress endpoints exec export list logs ls mcp preflight resume run status stop suspend top workspace
expect "verbs after a global option" "sandboxctl --no-ask-password s" status stop suspend
expect "global options" "sandboxctl -" -h --help --version --no-ask-password --json --no-legend --no-pager

spec='--class --origin --memory --tasks --cpu --runtime --idle --setenv --credential --disk --allow --egress-rate --egress-mode --idle-action --service --service-credential --service-header --service-method --service-path --service-max-request --service-max-response --service-rate --publish --publish-token-file --publish-max-request --publish-max-response --publish-timeout --publish-max-concurrent --publish-public --publish-name'
# shellcheck disable=SC2086
expect "run's options (no --json: its output is the worker's)" "sandboxctl run --" $spec --workspace --help --no-ask-password --no-pager
# shellcheck disable=SC2086
expect "create's options" "sandboxctl create --" $spec --workspace --help --no-ask-password --no-pager --json
expect "list's options" "sandboxctl list -" -a --all --state= --json --no-legend --help --no-ask-password --no-pager
expect "status's options" "sandboxctl status -" --json --help --no-ask-password --no-pager
expect "stop's options" "sandboxctl stop -" --json --help --no-ask-password --no-pager
expect "attach's options" "sandboxctl attach -" --help --no-ask-password --no-pager
expect "logs' options" "sandboxctl logs -" -f --follow --egress -n --lines --json --no-legend --help --no-ask-password --no-pager
expect "preflight's options" "sandboxctl preflight -" --json --no-legend --help --no-ask-password --no-pager
expect "endpoints' options" "sandboxctl endpoints -" --json --no-legend --help --no-ask-password --no-pager
expect "top's options" "sandboxctl top -" -d --delay -n --iterations --json --no-legend --help --no-ask-password --no-pager
expect "egress's options" "sandboxctl egress -" --allow --deny --rate --mode --json --help --no-ask-password --no-pager
expect "egress's --mode values" "sandboxctl egress x --mode " enforce report
# shellcheck disable=SC2086
expect "export's options" "sandboxctl export --" --format --image --egress-image --name --namespace --pool --workspace --config $spec --help
expect "export's --format values" "sandboxctl export --format " kubernetes
expect "nothing for export's --image" "sandboxctl export --image "
expect "options of a verb after its argument" "sandboxctl logs 0123456789ab --e" --egress

expect "--class: the classes this host serves (Classes property)" "sandboxctl run --class " standard trusted
expect "--class=: the same" "sandboxctl create --class=t" trusted
export STUB_NO_DAEMON=1
expect "--class: every class when no daemon answers" "sandboxctl run --class " trusted standard devcontainer untrusted hostile wasm
unset STUB_NO_DAEMON
expect "--origin values" "sandboxctl run --origin " first-party user llm-generated marketplace
expect "--egress-mode values" "sandboxctl run --egress-mode " enforce report
expect "--egress-mode=: the same" "sandboxctl create --egress-mode=r" report
expect "--idle-action values" "sandboxctl run --idle-action " stop suspend
expect "--state= values" "sandboxctl list --state=" starting running stopping ended suspending suspended resuming
expect "--state= with a prefix" "sandboxctl list --state=st" starting stopping
expect "--state= completes the last element of a list" "sandboxctl list --all --state=running,s" running,starting running,stopping running,suspending running,suspended
expect "--state with a space" "sandboxctl list --state e" ended
expect "nothing for a free value (--memory)" "sandboxctl run --memory "

expect "--credential: nothing before the colon" "sandboxctl run --credential tok"
# readline replaces only what follows the last ':', so that is what COMPREPLY holds.
expect "--credential NAME:PATH: files after the colon" "sandboxctl run --credential tok:$tmp/files/t" \
    "$tmp/files/tls.pem" "$tmp/files/token"
expect "--credential NAME:PATH: a directory gets its slash" "sandboxctl run --credential tok:$tmp/files/su" \
    "$tmp/files/sub/"
expect "--service-credential NAME:PATH: files after the colon" "sandboxctl run --service-credential api:$tmp/files/t" \
    "$tmp/files/tls.pem" "$tmp/files/token"
expect "--service-path: free text, nothing offered" "sandboxctl run --service-path api:/v"

expect "stop: live worker ids (list --no-legend, first column)" "sandboxctl stop " 0123456789ab aaaabbbbcccc
expect "attach: live worker ids, by prefix" "sandboxctl attach 01" 0123456789ab
expect "suspend: live worker ids" "sandboxctl suspend " 0123456789ab aaaabbbbcccc
expect "resume: live worker ids" "sandboxctl resume a" aaaabbbbcccc
expect "suspend's options" "sandboxctl suspend -" --json --help --no-ask-password --no-pager
expect "status: ended workers too (list --all)" "sandboxctl status " 0123456789ab aaaabbbbcccc deadbeef0000
expect "logs: ended workers too" "sandboxctl logs --egress d" deadbeef0000
export STUB_OLD=1
expect "status: live ids from a sandboxctl without list --all" "sandboxctl status " 0123456789ab aaaabbbbcccc
unset STUB_OLD
expect "workspace: its actions" "sandboxctl workspace " create list delete
expect "workspace's options" "sandboxctl workspace create proj --" --size --class --json --no-legend --help --no-ask-password --no-pager
expect "workspace delete: the names workspace list shows" "sandboxctl workspace delete " proj notes
expect "workspace delete: only one name" "sandboxctl workspace delete proj "
expect "nothing for workspace create's name" "sandboxctl workspace create "
expect "run --workspace: the names workspace list shows" "sandboxctl run --workspace n" notes
expect "nothing for --size" "sandboxctl workspace create proj --size "
expect "cp's options" "sandboxctl cp -" -r --recursive --help --no-ask-password --no-pager
expect "ls's options" "sandboxctl ls -" --json --no-legend --help --no-ask-password --no-pager
expect "cp: live worker ids with their colon, and local files" "sandboxctl cp $tmp/files/t" \
    "$tmp/files/tls.pem" "$tmp/files/token"
expect "cp: an id by prefix gets its colon" "sandboxctl cp 01" 0123456789ab:
expect "cp: the destination too" "sandboxctl cp -r $tmp/files/sub aa" aaaabbbbcccc:
expect "cp: nothing inside a worker (no helper on every TAB)" "sandboxctl cp 0123456789ab:sr"
expect "ls: live worker ids with their colon" "sandboxctl ls " 0123456789ab: aaaabbbbcccc:
expect "ls: only one place" "sandboxctl ls 0123456789ab: "
expect "only one id" "sandboxctl stop 0123456789ab "
expect "no ids for list" "sandboxctl list "

expect "exec's options" "sandboxctl exec -" -t --tty -i --interactive --setenv --workdir --help --no-ask-password --no-pager
expect "exec: live worker ids" "sandboxctl exec -it " 0123456789ab aaaabbbbcccc
expect "exec: nothing for --workdir" "sandboxctl exec --workdir "
expect "exec: -- after the id" "sandboxctl exec 0123456789ab -" --
expect "exec: the command after the id and --" "sandboxctl exec -t 0123456789ab -- sandboxct" sandboxctl
expect "exec: the command after the id" "sandboxctl exec 0123456789ab sandboxct" sandboxctl
expect "the command after --" "sandboxctl run --class trusted -- sandboxct" sandboxctl
expect "the command without --" "sandboxctl create --memory 1G sandboxct" sandboxctl

if grep -qi "preflight" "$calls"; then
    not_ok "completion never runs Preflight (it probes)" "$(grep -i preflight "$calls")"
else
    ok "completion never runs Preflight (it probes)"
fi
if grep '^busctl' "$calls" | grep -qv -- '--auto-start=no'; then
    not_ok "busctl never bus-activates sandboxd" "$(grep '^busctl' "$calls" | grep -v -- '--auto-start=no')"
else
    ok "busctl never bus-activates sandboxd"
fi
if grep '^sandboxctl' "$calls" | grep -qvE -- '^sandboxctl --no-ask-password (workspace )?list'; then
    not_ok "sandboxctl is only asked to list, without a password prompt" "$(grep '^sandboxctl' "$calls")"
else
    ok "sandboxctl is only asked to list, without a password prompt"
fi

tap_done
