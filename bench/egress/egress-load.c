/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Load generator and upstream for bench.sh, in C so that the client and the
 * server cost little CPU next to the proxies they measure (on a 2-vCPU test
 * bed a Python client and a thread-per-connection Python server compete
 * with the proxy for the same CPUs). Same protocol and output as the Python load generator it replaced:
 * every connection sends the ClientHello read from HELLO_FILE; the upstream
 * answers on BULK_PORT with BYTES bytes then closes, on PING_PORT with "!".
 *
 *   egress-load server ADDRESS BULK_PORT PING_PORT BYTES HELLO_FILE
 *   egress-load throughput VIA TARGET BYTES REPEAT HELLO_FILE  -> bytes/s (median)
 *   egress-load latency VIA TARGET COUNT HELLO_FILE            -> p50_us p99_us
 *   egress-load rate VIA TARGET SECONDS THREADS HELLO_FILE     -> tunnels/s
 * VIA is "direct" or a proxy "HOST:PORT" (IPv4); TARGET is "NAME:PORT".
 * With EGRESS_LOAD_SAMPLES=FILE, latency also writes every sample (us) there;
 * with EGRESS_LOAD_CPU=FILE, a client writes its own CPU time (us, user +
 * system, all threads) there when it ends. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/param.h>
#include <sys/resource.h>
#include <sys/epoll.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static uint8_t hello[16384];
static size_t hello_len;
static const char *via, *target;
static struct sockaddr_in via_addr, target_addr;
static char connect_request[512];

static void die(const char *what) {
        fprintf(stderr, "egress-load: %s: %s\n", what, strerror(errno));
        exit(1);
}

static double now_s(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

static void load_hello(const char *path) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                die(path);
        ssize_t n = read(fd, hello, sizeof(hello));
        if (n <= 0)
                die("reading the ClientHello");
        hello_len = (size_t) n;
        close(fd);
}

static void resolve(const char *hostport, struct sockaddr_in *sa) {
        char host[256];
        const char *colon = strrchr(hostport, ':');
        struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *ai;

        if (!colon || (size_t) (colon - hostport) >= sizeof(host)) {
                fprintf(stderr, "egress-load: bad HOST:PORT %s\n", hostport);
                exit(2);
        }
        memcpy(host, hostport, (size_t) (colon - hostport));
        host[colon - hostport] = 0;
        if (getaddrinfo(host, colon + 1, &hints, &ai) != 0 || !ai) {
                fprintf(stderr, "egress-load: cannot resolve %s\n", hostport);
                exit(1);
        }
        memcpy(sa, ai->ai_addr, sizeof(*sa));
        freeaddrinfo(ai);
}

static int write_all(int fd, const void *buf, size_t len) {
        const uint8_t *p = buf;
        while (len > 0) {
                ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -1;
                }
                p += n;
                len -= (size_t) n;
        }
        return 0;
}

/* A socket on which the upstream waits for the ClientHello, or -1. */
static int open_tunnel(void) {
        bool direct = strcmp(via, "direct") == 0;
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -1;
        (void) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int) { 1 }, sizeof(int));
        if (connect(fd, (struct sockaddr *) (direct ? &target_addr : &via_addr), sizeof(struct sockaddr_in)) < 0)
                goto fail;
        if (!direct) {
                char buf[4096];
                size_t got = 0;
                if (write_all(fd, connect_request, strlen(connect_request)) < 0)
                        goto fail;
                while (!memmem(buf, got, "\r\n\r\n", 4)) {
                        /* The proxy answers nothing after its status until the hello. */
                        ssize_t n = recv(fd, buf + got, sizeof(buf) - got, 0);
                        if (n <= 0 || (got += (size_t) n) == sizeof(buf))
                                goto fail;
                }
                if (got < 12 || (memcmp(buf, "HTTP/1.1 200", 12) != 0 && memcmp(buf, "HTTP/1.0 200", 12) != 0)) {
                        fprintf(stderr, "egress-load: proxy refused: %.*s\n", (int) MIN(got, 60), buf);
                        goto fail;
                }
        }
        return fd;
fail:
        close(fd);
        return -1;
}

static _Thread_local double last_ping_start;

static double one_ping(void) {
        double t0 = last_ping_start = now_s();
        int fd = open_tunnel();
        char c;
        if (fd < 0 || write_all(fd, hello, hello_len) < 0 || recv(fd, &c, 1, MSG_WAITALL) != 1 || c != '!') {
                fprintf(stderr, "egress-load: ping failed\n");
                exit(1);
        }
        double dt = now_s() - t0;
        /* The upstream closes first: waiting for its FIN makes this side
         * the passive closer. Closing at once, before the FIN was in, left
         * this side in TIME_WAIT for a minute per connection: the rate test
         * of the direct column then held most of the ephemeral ports to the
         * upstream, which the proxies' own connections to it need next
         * (tcp_tw_reuse covers loopback only): a proxy measured right after
         * it opened a tenth of the tunnels it did otherwise. */
        char rest[64];
        while (recv(fd, rest, sizeof(rest), 0) > 0)
                ;
        close(fd);
        return dt;
}

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;
        return x < y ? -1 : x > y;
}

static void latency(long count) {
        double *samples = calloc((size_t) count, sizeof(double));
        if (!samples)
                die("calloc");
        for (int i = 0; i < 20; i++)
                one_ping();   /* warm caches and the proxy */
        /* With EGRESS_LOAD_TRACE=FILE, each sample in order with its start
         * (CLOCK_MONOTONIC ns), to match against the proxy's trace. */
        const char *trace_path = getenv("EGRESS_LOAD_TRACE");
        FILE *trace = trace_path ? fopen(trace_path, "we") : NULL;
        if (trace_path && !trace)
                die(trace_path);
        for (long i = 0; i < count; i++) {
                samples[i] = one_ping();
                if (trace)
                        fprintf(trace, "C %.0f %d\n", last_ping_start * 1e9, (int) (samples[i] * 1e6));
        }
        if (trace && fclose(trace) != 0)
                die(trace_path);
        qsort(samples, (size_t) count, sizeof(double), cmp_double);
        /* Every sample, for the latency distributions bench/run.sh draws. */
        const char *path = getenv("EGRESS_LOAD_SAMPLES");
        if (path) {
                FILE *f = fopen(path, "we");
                if (!f)
                        die(path);
                for (long i = 0; i < count; i++)
                        fprintf(f, "%d\n", (int) (samples[i] * 1e6));
                if (fclose(f) != 0)
                        die(path);
        }
        long p99 = (long) ((double) count * 0.99);
        printf("%d %d\n", (int) (samples[count / 2] * 1e6), (int) (samples[MIN(count - 1, p99)] * 1e6));
        free(samples);
}

static void throughput(long nbytes, int repeat) {
        static char buf[1 << 20];
        double rates[64];
        if (repeat < 1 || repeat > 64) {
                fprintf(stderr, "egress-load: REPEAT must be 1..64\n");
                exit(2);
        }
        for (int i = 0; i < repeat; i++) {
                int fd = open_tunnel();
                long got = 0;
                if (fd < 0)
                        die("open tunnel");
                double t0 = now_s();
                if (write_all(fd, hello, hello_len) < 0)
                        die("send hello");
                for (;;) {
                        ssize_t n = recv(fd, buf, sizeof(buf), 0);
                        if (n < 0 && errno == EINTR)
                                continue;
                        if (n < 0)
                                die("recv");
                        if (n == 0)
                                break;
                        got += n;
                }
                double dt = now_s() - t0;
                close(fd);
                if (got != nbytes) {
                        fprintf(stderr, "egress-load: short transfer %ld\n", got);
                        exit(1);
                }
                rates[i] = (double) got / dt;
        }
        qsort(rates, (size_t) repeat, sizeof(double), cmp_double);
        /* The median as Python's statistics.median computes it. */
        double median = repeat % 2 ? rates[repeat / 2] : (rates[repeat / 2 - 1] + rates[repeat / 2]) / 2;
        printf("%ld\n", (long) median);
}

static double rate_end;
static atomic_long rate_count;

static void *rate_thread(void *arg) {
        (void) arg;
        long n = 0;
        while (now_s() < rate_end) {
                one_ping();
                n++;
        }
        atomic_fetch_add(&rate_count, n);
        return NULL;
}

static void rate(double seconds, int threads) {
        pthread_t tids[256];
        if (threads < 1 || threads > 256) {
                fprintf(stderr, "egress-load: THREADS must be 1..256\n");
                exit(2);
        }
        double t0 = now_s();
        rate_end = t0 + seconds;
        for (int i = 0; i < threads; i++)
                if (pthread_create(&tids[i], NULL, rate_thread, NULL) != 0)
                        die("pthread_create");
        for (int i = 0; i < threads; i++)
                pthread_join(tids[i], NULL);
        printf("%ld\n", (long) ((double) atomic_load(&rate_count) / (now_s() - t0)));
}

/* ---- upstream ---- */

static const char *payload_path = "/dev/shm/egress-bench-payload";
static long payload_bytes;

static bool recv_hello(int fd) {
        static _Thread_local uint8_t buf[sizeof(hello)];
        size_t got = 0;
        while (got < hello_len) {
                ssize_t n = recv(fd, buf + got, hello_len - got, 0);
                if (n <= 0)
                        return false;
                got += (size_t) n;
        }
        return true;
}

static void *serve_bulk(void *arg) {
        int fd = (int) (intptr_t) arg;
        if (recv_hello(fd)) {
                int file = open(payload_path, O_RDONLY | O_CLOEXEC);
                off_t off = 0;
                while (file >= 0 && off < payload_bytes)
                        if (sendfile(fd, file, &off, (size_t) (payload_bytes - off)) <= 0 && errno != EINTR)
                                break;
                if (file >= 0)
                        close(file);
        }
        close(fd);
        return NULL;
}

/* The ping port is served by one thread on epoll, not a thread per
 * connection: creating a thread for each short connection cost the upstream
 * about as much CPU as the proxies it measures, and a new thread that does
 * not preempt what runs on its CPU waits for the next tick (4 ms here),
 * the largest phase in most of the slowest tunnels of a trace. */
#define PING_FDS 65536
static void ping_loop(int listen_fd) {
        static uint32_t got[PING_FDS];
        static uint8_t buf[sizeof(hello)];
        struct epoll_event ev[64];
        int ep = epoll_create1(EPOLL_CLOEXEC);

        if (ep < 0 || fcntl(listen_fd, F_SETFL, O_NONBLOCK) < 0 ||
            epoll_ctl(ep, EPOLL_CTL_ADD, listen_fd, &(struct epoll_event) { .events = EPOLLIN, .data.fd = listen_fd }) < 0)
                die("ping epoll");
        for (;;) {
                int n = epoll_wait(ep, ev, 64, -1);
                for (int i = 0; i < n; i++) {
                        int fd = ev[i].data.fd;
                        if (fd == listen_fd) {
                                int c = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
                                if (c < 0)
                                        continue;
                                if (c >= PING_FDS) {
                                        close(c);
                                        continue;
                                }
                                (void) setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &(int) { 1 }, sizeof(int));
                                got[c] = 0;
                                if (epoll_ctl(ep, EPOLL_CTL_ADD, c, &(struct epoll_event) { .events = EPOLLIN, .data.fd = c }) < 0)
                                        close(c);
                                continue;
                        }
                        ssize_t k = recv(fd, buf, hello_len - got[fd], 0);
                        if (k < 0 && errno == EAGAIN)
                                continue;
                        if (k > 0 && (got[fd] += (uint32_t) k) < hello_len)
                                continue;
                        if (k > 0)
                                (void) send(fd, "!", 1, MSG_NOSIGNAL);
                        close(fd);   /* also leaves the epoll set */
                }
        }
}

typedef struct Listener {
        int fd;
        void *(*handler)(void *);
} Listener;

static void *accept_loop(void *arg) {
        const Listener *l = arg;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&attr, 64 * 1024);
        for (;;) {
                int fd = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC);
                pthread_t tid;
                if (fd < 0)
                        continue;
                (void) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int) { 1 }, sizeof(int));
                if (pthread_create(&tid, &attr, l->handler, (void *) (intptr_t) fd) != 0)
                        close(fd);
        }
        return NULL;
}

static int listen_on(const char *address, int port) {
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t) port) };
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || inet_pton(AF_INET, address, &sa.sin_addr) != 1)
                die("listen address");
        (void) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &(int) { 1 }, sizeof(int));
        if (bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0 || listen(fd, 1024) < 0)
                die("bind/listen");
        return fd;
}

static void server(const char *address, int bulk_port, int ping_port) {
        static char zeros[1 << 20];
        int out = open(payload_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (out < 0)
                die(payload_path);
        for (long left = payload_bytes; left > 0;) {
                ssize_t n = write(out, zeros, (size_t) MIN(left, (long) sizeof(zeros)));
                if (n <= 0)
                        die("writing the payload");
                left -= n;
        }
        close(out);
        static Listener bulk;
        bulk = (Listener) { listen_on(address, bulk_port), serve_bulk };
        int ping = listen_on(address, ping_port);
        pthread_t tid;
        if (pthread_create(&tid, NULL, accept_loop, &bulk) != 0)
                die("pthread_create");
        ping_loop(ping);
}

int main(int argc, char **argv) {
        if (argc == 7 && strcmp(argv[1], "server") == 0) {
                payload_bytes = atol(argv[5]);
                load_hello(argv[6]);
                server(argv[2], atoi(argv[3]), atoi(argv[4]));
                return 0;
        }
        if (argc != 6 && argc != 7) {
                fprintf(stderr, "usage: see the comment at the top of egress-load.c\n");
                return 2;
        }
        via = argv[2];
        target = argv[3];
        load_hello(argv[argc - 1]);
        resolve(target, &target_addr);
        if (strcmp(via, "direct") != 0)
                resolve(via, &via_addr);
        snprintf(connect_request, sizeof(connect_request), "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target);
        if (argc == 7 && strcmp(argv[1], "throughput") == 0)
                throughput(atol(argv[4]), atoi(argv[5]));
        else if (argc == 6 && strcmp(argv[1], "latency") == 0)
                latency(atol(argv[4]));
        else if (argc == 7 && strcmp(argv[1], "rate") == 0)
                rate(atof(argv[4]), atoi(argv[5]));
        else {
                fprintf(stderr, "usage: see the comment at the top of egress-load.c\n");
                return 2;
        }
        const char *cpu_path = getenv("EGRESS_LOAD_CPU");
        if (cpu_path) {
                struct rusage ru;
                FILE *f = fopen(cpu_path, "we");
                if (!f || getrusage(RUSAGE_SELF, &ru) < 0)
                        die(cpu_path);
                fprintf(f, "%ld\n", (long) (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000L +
                                    ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
                if (fclose(f) != 0)
                        die(cpu_path);
        }
        return 0;
}
