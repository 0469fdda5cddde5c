/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* For cmocka tests (include after <cmocka.h>): an fd store as a restart
 * of sandboxd would read it back, holding the one entry NAME -> FD. */

#include <stdlib.h>
#include <string.h>

#include "fdstore.h"

static inline void fdstore_one(FdStore *st, const char *name, int fd) {
        st->entries = calloc(1, sizeof(FdStoreEntry));
        assert_non_null(st->entries);
        st->entries[0] = (FdStoreEntry) { .name = strdup(name), .fd = fd };
        st->n = 1;
}
