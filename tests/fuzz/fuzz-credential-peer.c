/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "creds.h"
#include "fuzz.h"

/* Any local process that can reach the credential socket picks its own
 * peer address; the parse decides which unit's secret it is given. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        const char *unit, *name;
        char *buf = NULL;

        if (size > 108)   /* sizeof(sun_path): no longer address exists */
                return 0;
        if (credential_peer_parse((const char *) data, size, &buf, &unit, &name) < 0) {
                assert(!buf);
                return 0;
        }
        /* The answer names exactly one unit and one credential, both
         * non-empty, and the credential cannot carry a path. */
        assert(size >= 2 && data[0] == 0);
        assert(*unit && *name);
        assert(!strchr(name, '/'));
        assert(unit >= buf && name > unit && name < buf + size);
        /* Both come from the address itself: "/unit/<unit>/<name>" ends it. */
        size_t ul = strlen(unit), nl = strlen(name);
        size_t tail = strlen("/unit/") + ul + 1 + nl;
        assert(tail <= size - 1);
        const char *end = (const char *) data + size - tail;
        assert(memcmp(end, "/unit/", 6) == 0);
        assert(memcmp(end + 6, unit, ul) == 0 && end[6 + ul] == '/' && memcmp(end + 7 + ul, name, nl) == 0);
        free(buf);
        return 0;
}
