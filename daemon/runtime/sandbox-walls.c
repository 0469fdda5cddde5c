/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* sandbox-walls: the witness of the walls systemd was asked to build.
 *   host   (privileged step of the walls probe unit) prints PID 1's namespaces
 *   probe  (inside the probe unit's walls) prints its own namespaces and
 *          whether IPAddressDeny=any stops a loopback connection
 * (A shared-kernel worker's own check is sandbox-exec --check.)
 * sandboxd reads the first two (daemon/shared/walls.h has the line format); the
 * verdict is its own. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include "ns-ident.h"
#include "util.h"

#define CONNECT_TIMEOUT_MSEC 5000

static const char usage[] =
        "Usage:\n"
        "  sandbox-walls host\n"
        "  sandbox-walls probe\n";

static int print_ids(const char *tag, const char *proc) {
        char ids[160];
        NsIdSet s;
        int r;

        r = ns_id_set_read(proc, NS_MASK_ALL, &s);
        if (r >= 0)
                r = ns_id_set_format(&s, ids, sizeof(ids));
        if (r < 0) {
                printf("%s unavailable cannot read /proc/%s/ns: %s\n", tag, proc, strerror(-r));
                return EXIT_FAILURE;
        }
        printf("%s %s\n", tag, ids);
        return EXIT_SUCCESS;
}

/* Whether a connection the probe makes to itself gets through; 1 if it did,
 * 0 if it was refused or dropped (WHY says how), negative if it could not be tried. */
static int loopback_connects(char *why, size_t n) {
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t len = sizeof(a);
        _cleanup_close_ int l = -1, c = -1;
        struct pollfd p;
        int err = 0, k;

        l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (l < 0 || bind(l, (struct sockaddr *) &a, sizeof(a)) < 0 || listen(l, 1) < 0 ||
            getsockname(l, (struct sockaddr *) &a, &len) < 0) {
                snprintf(why, n, "cannot listen on 127.0.0.1: %s", strerror(errno));
                return -errno;
        }
        c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (c < 0) {
                snprintf(why, n, "cannot make a socket: %s", strerror(errno));
                return -errno;
        }
        if (connect(c, (struct sockaddr *) &a, sizeof(a)) == 0)
                return 1;
        if (errno != EINPROGRESS) {
                snprintf(why, n, "refused (%s)", strerror(errno));
                return 0;
        }
        p = (struct pollfd) { .fd = c, .events = POLLOUT };
        k = poll(&p, 1, CONNECT_TIMEOUT_MSEC);
        if (k == 0) {
                snprintf(why, n, "dropped (no answer within %d ms)", CONNECT_TIMEOUT_MSEC);
                return 0;
        }
        len = sizeof(err);
        if (k < 0 || getsockopt(c, SOL_SOCKET, SO_ERROR, &err, &len) < 0) {
                snprintf(why, n, "cannot wait for it: %s", strerror(errno));
                return -errno;
        }
        if (err == 0)
                return 1;
        snprintf(why, n, "refused (%s)", strerror(err));
        return 0;
}

static int verb_probe(void) {
        char why[192] = "";
        int r;

        if (print_ids("unit", "self") != EXIT_SUCCESS)
                return EXIT_FAILURE;
        r = loopback_connects(why, sizeof(why));
        if (r > 0)
                printf("ip-firewall unavailable a loopback connection got through IPAddressDeny=any "
                       "(no cgroup BPF firewall here)\n");
        else if (r == 0)
                printf("ip-firewall ok IPAddressDeny=any %s a loopback connection\n", why);
        else
                printf("ip-firewall unavailable cannot test it: %s\n", why);
        return EXIT_SUCCESS;
}

int main(int argc, char *argv[]) {
        if (argc == 2 && streq(argv[1], "host"))
                return print_ids("host", "1");
        if (argc == 2 && streq(argv[1], "probe"))
                return verb_probe();
        fputs(usage, argc == 2 && (streq(argv[1], "--help") || streq(argv[1], "-h")) ? stdout : stderr);
        return argc == 2 && (streq(argv[1], "--help") || streq(argv[1], "-h")) ? EXIT_SUCCESS : 2;
}
