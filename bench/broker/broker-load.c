/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Load client for bench/broker: THREADS keep-alive connections, each
 * sending REQUESTS GETs one after the other, over TLS (to the upstream
 * directly) or plain HTTP (to the broker's listener). Prints JSON with
 * the latency percentiles of every request and the rate of all. The
 * responses of bench/broker's upstream carry a Content-Length; nothing
 * else is understood. Not part of the proxy: a measuring tool.
 *   broker-load tls|plain ADDRESS PORT PATH THREADS REQUESTS [CAFILE HOST] */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static const char *mode, *address, *path, *cafile, *host;
static int port, requests;
static SSL_CTX *ctx;
static uint64_t *lat;

static uint64_t now_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

typedef struct Conn { int fd; SSL *ssl; } Conn;

static int io_read(Conn *c, char *buf, int n) { return c->ssl ? SSL_read(c->ssl, buf, n) : (int) read(c->fd, buf, (size_t) n); }
static int io_write(Conn *c, const char *buf, int n) { return c->ssl ? SSL_write(c->ssl, buf, n) : (int) write(c->fd, buf, (size_t) n); }

static void die(const char *what) {
        fprintf(stderr, "broker-load: %s\n", what);
        ERR_print_errors_fp(stderr);
        exit(1);
}

static void conn_open(Conn *c) {
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t) port) };
        inet_pton(AF_INET, address, &a.sin_addr);
        c->fd = socket(AF_INET, SOCK_STREAM, 0);
        setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &(int) { 1 }, sizeof(int));
        if (connect(c->fd, (struct sockaddr *) &a, sizeof(a)) < 0)
                die("connect");
        c->ssl = NULL;
        if (strcmp(mode, "tls") == 0) {
                c->ssl = SSL_new(ctx);
                SSL_set_fd(c->ssl, c->fd);
                SSL_set_tlsext_host_name(c->ssl, host);
                SSL_set1_host(c->ssl, host);
                if (SSL_connect(c->ssl) != 1)
                        die("TLS handshake");
        }
}

/* One request; returns when the whole response is in. */
static void one(Conn *c, char *buf, size_t size) {
        char req[512];
        int n = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: broker-load\r\n\r\n", path, host);
        if (io_write(c, req, n) != n)
                die("write");
        size_t have = 0;
        char *end = NULL;
        while (!end) {
                int k = io_read(c, buf + have, (int) (size - have - 1));
                if (k <= 0)
                        die("read head");
                have += (size_t) k;
                buf[have] = 0;
                end = strstr(buf, "\r\n\r\n");
        }
        char *cl = strcasestr(buf, "\r\nContent-Length:");
        if (!cl || cl > end)
                die("no Content-Length");
        size_t body = strtoul(cl + 17, NULL, 10), got = have - (size_t) (end + 4 - buf);
        while (got < body) {
                int k = io_read(c, buf, (int) (size < body - got ? size : body - got));
                if (k <= 0)
                        die("read body");
                got += (size_t) k;
        }
}

static void *worker(void *arg) {
        uint64_t *out = arg;
        static __thread char buf[1 << 16];
        Conn c;
        conn_open(&c);
        one(&c, buf, sizeof(buf));   /* warm: the broker's upstream connection, the TLS session */
        for (int i = 0; i < requests; i++) {
                uint64_t t = now_ns();
                one(&c, buf, sizeof(buf));
                out[i] = now_ns() - t;
        }
        if (c.ssl)
                SSL_free(c.ssl);
        close(c.fd);
        return NULL;
}

static int cmp(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
        if (argc < 7)
                die("usage: broker-load tls|plain ADDRESS PORT PATH THREADS REQUESTS [CAFILE HOST]");
        mode = argv[1], address = argv[2], port = atoi(argv[3]), path = argv[4];
        int threads = atoi(argv[5]);
        requests = atoi(argv[6]);
        cafile = argc > 7 ? argv[7] : NULL;
        host = argc > 8 ? argv[8] : "localhost";
        ctx = SSL_CTX_new(TLS_client_method());
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
        if (cafile && SSL_CTX_load_verify_locations(ctx, cafile, NULL) != 1)
                die("CA file");
        lat = calloc((size_t) threads * (size_t) requests, sizeof(*lat));
        pthread_t t[64];
        uint64_t start = now_ns();
        for (int i = 0; i < threads && i < 64; i++)
                pthread_create(&t[i], NULL, worker, lat + (size_t) i * (size_t) requests);
        for (int i = 0; i < threads && i < 64; i++)
                pthread_join(t[i], NULL);
        double secs = (double) (now_ns() - start) / 1e9;
        size_t n = (size_t) threads * (size_t) requests;
        qsort(lat, n, sizeof(*lat), cmp);
        printf("{\"requests\": %zu, \"threads\": %d, \"requests_per_s\": %.1f, \"p50_us\": %.1f, \"p99_us\": %.1f}\n", n,
               threads, (double) n / secs, (double) lat[n / 2] / 1e3, (double) lat[n * 99 / 100] / 1e3);
        return 0;
}
