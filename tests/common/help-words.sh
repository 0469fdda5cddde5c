# The options and verbs `sandboxctl --help` prints, for the tests that hold
# the man page and the completion to it. Sourced.
#   help_options HELP_TEXT  -> one option per line (-h, --class, ...)
#   help_verbs HELP_TEXT    -> one verb per line, from the SYNOPSIS lines

help_options() {
    # A dash after a blank, '[', '|', ',' or '('; "--" alone (the argument
    # separator) is not an option.
    grep -oE '(^|[][ |,(])--?[a-zA-Z][a-zA-Z-]*' <<<"$1" | sed -E 's/^[][ |,(]//' | sort -u
}

help_verbs() {
    sed -nE 's/^ *sandboxctl ([a-z]+)( .*)?$/\1/p' <<<"$1" | sort -u
}
