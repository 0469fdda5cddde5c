/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <sys/prctl.h>

#include "launch-caps.h"
#include "util.h"

const cap_value_t launch_runsc_caps[] = {
        CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER, CAP_FSETID, CAP_SYS_CHROOT,
        CAP_SYS_ADMIN, CAP_SYS_PTRACE, CAP_SETUID, CAP_SETGID, CAP_SETPCAP, CAP_KILL, CAP_SETFCAP,
};
const size_t launch_runsc_caps_n = ELEMENTSOF(launch_runsc_caps);

const cap_value_t launch_runsc_netstack_caps[] = {
        CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER, CAP_FSETID, CAP_SYS_CHROOT,
        CAP_SYS_ADMIN, CAP_SYS_PTRACE, CAP_SETUID, CAP_SETGID, CAP_SETPCAP, CAP_KILL, CAP_SETFCAP,
        CAP_NET_ADMIN, CAP_NET_RAW,
};
const size_t launch_runsc_netstack_caps_n = ELEMENTSOF(launch_runsc_netstack_caps);

const cap_value_t launch_own_caps[] = { CAP_SYS_NICE };
const size_t launch_own_caps_n = ELEMENTSOF(launch_own_caps);

bool launch_caps_contains(const cap_value_t *set, size_t n, cap_value_t c) {
        for (size_t i = 0; i < n; i++)
                if (set[i] == c)
                        return true;
        return false;
}

static void cap_freep(cap_t *c) {
        if (*c)
                cap_free(*c);
}

int launch_caps_limit(const cap_value_t *keep, size_t n, const cap_value_t *own, size_t own_n) {
        __attribute__((cleanup(cap_freep))) cap_t caps = NULL;
        cap_value_t last = cap_max_bits();

        /* The bounding set first: dropping from it needs CAP_SETPCAP, which
         * the permitted set below may no longer hold. */
        for (cap_value_t c = 0; c < last; c++) {
                if (launch_caps_contains(keep, n, c))
                        continue;
                if (cap_drop_bound(c) < 0 && errno != EINVAL)
                        return -errno;
        }
        if (CAP_AMBIENT_SUPPORTED() && cap_reset_ambient() < 0)
                return -errno;
        caps = cap_init();
        if (!caps)
                return -errno;
        if (n > 0 && (cap_set_flag(caps, CAP_PERMITTED, (int) n, keep, CAP_SET) < 0 ||
                      cap_set_flag(caps, CAP_EFFECTIVE, (int) n, keep, CAP_SET) < 0))
                return -errno;
        /* Out of the bounding set, so no exec (even of a set-ID or
         * file-capability binary) gets it back. */
        if (own_n > 0 && (cap_set_flag(caps, CAP_PERMITTED, (int) own_n, own, CAP_SET) < 0 ||
                          cap_set_flag(caps, CAP_EFFECTIVE, (int) own_n, own, CAP_SET) < 0))
                return -errno;
        if (cap_set_proc(caps) < 0)
                return -errno;
        return 0;
}
