/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "launch.h"
#include "ns-ident.h"

/* A "+" command runs in the unit's network and IPC namespaces but gets no
 * file-system namespacing (systemd 252 gives it at most a mount namespace for
 * PrivateTmp=, with the host's /usr writable and /proc/1 visible), so only
 * those two are promised, and checked. The proxy's end of a sandbox's veth
 * (launch-veth.h) would be in the host's network if the unit's were not
 * private. */
#define LAUNCH_NS_MASK (NS_MASK(NS_NET) | NS_MASK(NS_IPC))

int launch_check_namespaces(const char *id) {
        char reason[320];
        NsIdSet own, host;
        int r;

        r = ns_id_set_read("self", LAUNCH_NS_MASK, &own);
        if (r < 0)
                return log_error_errno(r, "Cannot read the launcher's own namespaces: %m");
        r = ns_id_set_read("1", LAUNCH_NS_MASK, &host);
        if (r < 0)
                return log_error_errno(r, "Cannot read PID 1's namespaces: %m");
        r = ns_id_set_compare(&own, &host, LAUNCH_NS_MASK, reason, sizeof(reason));
        if (r < 0)
                log_error("Refusing to run worker %s: %s; systemd did not make the unit's namespaces private "
                          "(see PrivateNetwork=, PrivateIPC= and drop-ins for sandbox-*.service).", id, reason);
        return r;
}
