#!/usr/bin/env bash
# The man pages must not fall behind the code: every option and verb that
# `sandboxctl --help` prints is documented in sandboxctl.1, and every key in
# config.c's table (the keys the daemon parses) has its own entry in the right
# section of sandboxd.conf.5.
#   usage: test-man-drift.sh SANDBOXCTL SANDBOXCTL_1 CONFIG_C SANDBOXD_CONF_5
set -uo pipefail

sandboxctl=${1:?usage: $0 SANDBOXCTL SANDBOXCTL_1 CONFIG_C SANDBOXD_CONF_5}
sandboxctl_1=${2:?}
config_c=${3:?}
conf_5=${4:?}
# shellcheck source=../lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"

help=$("$sandboxctl" --help) || { not_ok "sandboxctl --help failed"; exit 1; }
# shellcheck source=../common/help-words.sh
. "$(dirname "$0")/../common/help-words.sh"
mapfile -t options < <(help_options "$help")
mapfile -t verbs < <(help_verbs "$help")
if [ "${#options[@]}" -lt 10 ] || [ "${#verbs[@]}" -lt 5 ]; then
    not_ok "found only ${#options[@]} options and ${#verbs[@]} verbs in sandboxctl --help; has its layout changed?"
    exit 1
fi

# In the roff source an option the page documents is set in bold: \fB--class.
for o in "${options[@]}"; do
    if grep -qF -- "\\fB$o" "$sandboxctl_1"; then
        ok "sandboxctl.1 documents $o"
    else
        not_ok "sandboxctl --help prints $o, sandboxctl.1 does not document it"
    fi
done
for v in "${verbs[@]}"; do
    if grep -qE "^\\\\fB$v\\\\fR" "$sandboxctl_1"; then
        ok "sandboxctl.1 documents the verb $v"
    else
        not_ok "sandboxctl --help names the verb $v, sandboxctl.1 has no entry for it"
    fi
done

# config.c's table: K("Section:Key", TYPE, field).
mapfile -t keys < <(grep -oE '\bK\("[A-Za-z]+:[A-Za-z]+"' "$config_c" | sed -E 's/^K\("//; s/"$//')
if [ "${#keys[@]}" -lt 10 ]; then
    not_ok "found only ${#keys[@]} keys in $config_c; has the table changed shape?"
    exit 1
fi
for k in "${keys[@]}"; do
    section=${k%%:*} key=${k#*:}
    # The key's entry (\fBKey=) must sit under .SH [Section].
    if awk -v sec=".SH [$section]" -v entry="\\\\fB$key=" '
            /^\.SH / { in_sec = ($0 == sec) }
            in_sec && index($0, entry) == 1 { found = 1 }
            END { exit !found }' "$conf_5"; then
        ok "sandboxd.conf.5 documents [$section] $key="
    else
        not_ok "config.c parses $section:$key, sandboxd.conf.5 has no $key= entry under [$section]"
    fi
done
tap_done
