# Drives tools/completion/sandboxctl the way readline would, without a
# terminal. Sourced by the completion tests and by tests/cli/integration.sh
# (inside a test-bed container).
#   complete_line 'sandboxctl list --state=ru'   -> COMPREPLY, one per line
# The line is completed at its end; a trailing space means a new, empty word.

BASH_COMPLETION_MAIN=${BASH_COMPLETION_MAIN:-/usr/share/bash-completion/bash_completion}

completion_load() {
    local file=$1
    # bash_completion refuses to load in a non-interactive shell unless told.
    # shellcheck disable=SC1090
    . "$BASH_COMPLETION_MAIN" || return 1
    # shellcheck disable=SC1090
    . "$file" || return 1
    declare -F _init_completion >/dev/null && declare -F _sandboxctl >/dev/null
}

complete_line() {
    local line=$1 tok part rest
    local -a words=()
    # Split as readline does: at blanks, and at the word-break characters
    # '=' and ':' (each its own word), which _init_completion reassembles.
    for tok in $line; do
        rest=$tok
        while [[ $rest =~ ^([^=:]*)([=:])(.*)$ ]]; do
            part=${BASH_REMATCH[1]}
            [ -n "$part" ] && words+=("$part")
            words+=("${BASH_REMATCH[2]}")
            rest=${BASH_REMATCH[3]}
        done
        [ -n "$rest" ] && words+=("$rest")
    done
    [[ $line == *' ' ]] && words+=("")
    COMP_WORDS=("${words[@]}")
    COMP_CWORD=$((${#words[@]} - 1))
    COMP_LINE=$line
    COMP_POINT=${#line}
    COMPREPLY=()
    _sandboxctl sandboxctl "${words[COMP_CWORD]}" "${words[COMP_CWORD - 1]}" 2>/dev/null
    [ ${#COMPREPLY[@]} -gt 0 ] && printf '%s\n' "${COMPREPLY[@]}" | sort
    return 0
}
