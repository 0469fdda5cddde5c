#!/usr/bin/env bash
# Every rendered man page must format without a groff warning and have a
# NAME section that lexgrog (man-db's whatis/apropos indexer) can parse.
#   usage: test-man.sh PAGE...
set -uo pipefail

if ! command -v man >/dev/null || ! command -v lexgrog >/dev/null || ! command -v groff >/dev/null; then
    echo "man-db or groff is not installed; skipping"
    exit 77
fi
[ $# -gt 0 ] || { echo "usage: $0 PAGE..." >&2; exit 2; }

# shellcheck source=../lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"
for page in "$@"; do
    name=$(basename "$page")
    if [ ! -s "$page" ]; then
        not_ok "$name: missing or empty"; continue
    fi
    # MANROFFSEQ='' stops man from running preprocessors named in the page;
    # -Z stops before the output device, so only groff's own warnings remain.
    warnings=$(LC_ALL=C.UTF-8 MANROFFSEQ='' MANWIDTH=80 man --warnings -E UTF-8 -l -Tutf8 -Z "$page" 2>&1 >/dev/null)
    if [ -n "$warnings" ]; then
        not_ok "$name: groff warnings:"; sed 's/^/#   /' <<<"$warnings"
    else
        ok "$name formats without warnings"
    fi
    if grep -qE '@[A-Z_]+@' "$page"; then
        not_ok "$name: an unsubstituted build variable: $(grep -oE '@[A-Z_]+@' "$page" | head -1)"
    fi
    # lexgrog prints PAGE: "name - description" and fails without a NAME section.
    whatis=$(lexgrog "$page" 2>&1)
    stem=${name%.*}
    if [[ $whatis == *": \"$stem - "?* ]]; then
        ok "$name: lexgrog parses NAME ($whatis)"
    else
        not_ok "$name: lexgrog does not find \"$stem - ...\" in NAME: $whatis"
    fi
done
tap_done
