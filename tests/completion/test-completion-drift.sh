#!/usr/bin/env bash
# The completion must not fall behind sandboxctl: every verb and every option
# that `sandboxctl --help` prints is offered, after the verb or before it.
#   usage: test-completion-drift.sh SANDBOXCTL COMPLETION_FILE
set -uo pipefail

sandboxctl=${1:?usage: $0 SANDBOXCTL COMPLETION_FILE}
COMPLETION=${2:?usage: $0 SANDBOXCTL COMPLETION_FILE}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib/tap.sh
. "$here/../lib/tap.sh"
# shellcheck source=lib.sh
. "$here/lib.sh"
# shellcheck source=../common/help-words.sh
. "$here/../common/help-words.sh"
if [ ! -r "$BASH_COMPLETION_MAIN" ]; then
    echo "bash-completion is not installed ($BASH_COMPLETION_MAIN); skipping"
    exit 77
fi
help=$("$sandboxctl" --help) || { not_ok "sandboxctl --help failed"; exit 1; }
mapfile -t options < <(help_options "$help")
mapfile -t verbs < <(help_verbs "$help")
if [ "${#options[@]}" -lt 10 ] || [ "${#verbs[@]}" -lt 5 ]; then
    not_ok "found only ${#options[@]} options and ${#verbs[@]} verbs in sandboxctl --help; has its layout changed?"
    exit 1
fi

# No daemon: completion must work from the static lists alone. An empty PATH
# entry for sandboxctl and busctl would not do: point them at false.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ln -s "$(command -v false)" "$tmp/sandboxctl"
ln -s "$(command -v false)" "$tmp/busctl"
export PATH="$tmp:$PATH"
completion_load "$COMPLETION" || { echo "Bail out! cannot load $COMPLETION"; exit 1; }

offered_verbs=$(complete_line "sandboxctl ")
offered=$(complete_line "sandboxctl -"
          for v in $offered_verbs; do complete_line "sandboxctl $v -"; done)
offered=$(sed 's/=$//' <<<"$offered" | sort -u)

for v in "${verbs[@]}"; do
    if grep -qxF -- "$v" <<<"$offered_verbs"; then
        ok "the verb $v is completed"
    else
        not_ok "sandboxctl --help names the verb $v, the completion does not offer it"
    fi
done
for o in "${options[@]}"; do
    if grep -qxF -- "$o" <<<"$offered"; then
        ok "$o is completed"
    else
        not_ok "sandboxctl --help prints $o, the completion offers it for no verb"
    fi
done
tap_done
