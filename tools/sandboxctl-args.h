/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The option codes and getopt entries of sandboxctl's global options, which
 * every verb accepts before or after its name (sandboxctl(1)); shared by the
 * verbs' parsers and by `run`/`create`'s spec parser. */

#include <getopt.h>

enum {
        ARG_GLOBAL_FIRST = 0x200,
        ARG_VERSION = ARG_GLOBAL_FIRST,
        ARG_NO_ASK_PASSWORD,
        ARG_JSON,
        ARG_NO_LEGEND,
        ARG_NO_PAGER,
        _ARG_GLOBAL_END,
};

/* -h/--help is global too, but each parser reports it on its own. */
#define SANDBOXCTL_GLOBAL_OPTIONS                                               \
        { "version",         no_argument, NULL, ARG_VERSION },                  \
        { "no-ask-password", no_argument, NULL, ARG_NO_ASK_PASSWORD },          \
        { "json",            no_argument, NULL, ARG_JSON },                     \
        { "no-legend",       no_argument, NULL, ARG_NO_LEGEND },                \
        { "no-pager",        no_argument, NULL, ARG_NO_PAGER }

static inline int is_global_option(int c) {
        return c >= ARG_GLOBAL_FIRST && c < _ARG_GLOBAL_END;
}
