/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <systemd/sd-event.h>

/* Names S and hands it to its event loop, which frees it with itself: for a
 * source nobody reaches again (a signal, a loop's own eventfd), which would
 * otherwise be created floating and so nameless. Takes the caller's
 * reference; should the loop refuse it, S stays the caller's and runs all
 * the same. Header-only, so that a binary without libsystemd can include
 * util's neighbours. */
static inline int event_source_float(sd_event_source *s, const char *description) {
        int r;

        (void) sd_event_source_set_description(s, description);
        r = sd_event_source_set_floating(s, true);
        if (r >= 0)
                sd_event_source_unref(s);
        return r;
}
