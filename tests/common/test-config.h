/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* For cmocka tests (include after <cmocka.h>): TEXT as a sandboxd.conf,
 * loaded over the defaults into C as the daemon would load it. */

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"

static inline int test_config_load(const char *text, SbxConfig *c, SbxError *e) {
        char path[] = "/tmp/sandboxd-test-conf-XXXXXX";
        int fd = mkstemp(path), r;

        assert_true(fd >= 0);
        assert_int_equal(write(fd, text, strlen(text)), (ssize_t) strlen(text));
        close(fd);
        sbx_config_init_defaults(c);
        r = sbx_config_load(c, path, e);
        unlink(path);
        return r;
}
