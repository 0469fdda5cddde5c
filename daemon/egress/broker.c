/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "broker-session.h"
#include "broker-upstream.h"
#include "broker.h"
#include "util.h"

/* The credential's bytes, as sandboxd serves them; one trailing newline
 * (a secret kept in a text file) is not part of it. Anything that could
 * end or split the header line refuses the service. */
static int read_secret(const char *dir, const char *name, uint8_t *buf, size_t *ret_size) {
        char path[PATH_MAX];
        struct stat st;
        size_t done = 0;
        int fd, r = 0;

        if (snprintf(path, sizeof(path), "%s/%s%s", dir, BROKER_CREDENTIAL_PREFIX, name) >= (int) sizeof(path))
                return -ENAMETOOLONG;
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return log_error_errno(-errno, "Failed to open the credential of service %s (%s): %m", name, path);
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > BROKER_SECRET_MAX) {
                close(fd);
                log_error("The credential of service %s is not a regular file of at most %d bytes", name,
                          BROKER_SECRET_MAX);
                return -EINVAL;
        }
        ssize_t n = read_full(fd, buf, (size_t) st.st_size);
        close(fd);
        /* Shorter than fstat() said: it changed under us. */
        r = n < 0 ? (int) n : (size_t) n < (size_t) st.st_size ? -EIO : 0;
        if (r < 0)
                return log_error_errno(r, "Failed to read the credential of service %s: %m", name);
        done = (size_t) n;
        if (done > 0 && buf[done - 1] == '\n')
                done--;
        if (done > 0 && buf[done - 1] == '\r')
                done--;
        for (size_t i = 0; i < done; i++)
                if ((buf[i] < 0x20 && buf[i] != '\t') || buf[i] == 0x7f) {
                        /* Never the byte itself: it is part of the secret. */
                        log_error("The credential of service %s holds a control character: it cannot be sent in a header",
                                  name);
                        return -EINVAL;
                }
        if (done == 0) {
                log_error("The credential of service %s is empty", name);
                return -EINVAL;
        }
        *ret_size = done;
        return 0;
}

static int service_init(Broker *b, BrokerService *s, const EgressService *config, const char *dir) {
        uint8_t secret[BROKER_SECRET_MAX];
        size_t n = 0;
        const char *brace;
        int r;

        s->broker = b;
        s->config = config;
        r = read_secret(dir, config->name, secret, &n);
        if (r < 0)
                goto finish;
        brace = strstr(config->header_template, "{}");
        assert(brace);   /* egress_policy_add_service checked it */
        size_t before = (size_t) (brace - config->header_template), after = strlen(brace + 2);
        s->inject_size = before + n + after;
        s->inject_value = malloc(s->inject_size + 1);
        if (!s->inject_value) {
                r = -ENOMEM;
                goto finish;
        }
        memcpy(s->inject_value, config->header_template, before);
        memcpy(s->inject_value + before, secret, n);
        memcpy(s->inject_value + before + n, brace + 2, after + 1);
        s->route = (BrokerRoute) {
                .host = config->host,
                .port = config->port,
                .base = config->base,
                .methods = config->methods,
                .paths = config->paths,
                .inject_name = config->header_name,
                .inject_value = s->inject_value,
                .max_request_bytes = config->max_request_bytes,
        };
        /* A service without a rate of its own has the worker's. */
        uint64_t rate = config->rate_bps ?: b->proxy->policy->rate_bps;
        token_bucket_init(&s->bucket, rate, rate == config->rate_bps ? 0 : b->proxy->policy->rate_burst,
                          now_usec(CLOCK_MONOTONIC));
finish:
        explicit_bzero(secret, sizeof(secret));
        return r;
}

static void service_done(BrokerService *s) {
        broker_conn_free_opening(s);
        while (s->idle) {
                BrokerConn *c = broker_conn_take_idle(s);
                broker_conn_free(c);
        }
        if (s->inject_value)
                erase_and_free(s->inject_value, s->inject_size + 1);
        s->inject_value = NULL;
}

int broker_new(Proxy *proxy, Broker **ret) {
        const EgressPolicy *policy = proxy->policy;
        const char *dir = getenv("CREDENTIALS_DIRECTORY");
        Broker *b;
        int r;

        assert(ret);
        if (!dir) {
                log_error("The policy has services but there is no $CREDENTIALS_DIRECTORY with their credentials");
                return -ENOENT;
        }
        b = calloc(1, sizeof(*b));
        if (!b)
                return -ENOMEM;
        b->proxy = proxy;
        r = broker_tls_context_new(policy->broker_ca_file, &b->tls);
        if (r < 0)
                goto fail;
        b->services = calloc(policy->n_services, sizeof(BrokerService));
        if (!b->services) {
                r = -ENOMEM;
                goto fail;
        }
        b->buffer_budget = BROKER_BUFFER_BUDGET_MIN;
        for (size_t i = 0; i < policy->n_services; i++) {
                b->buffer_budget = MAX(b->buffer_budget, 2 * policy->services[i].max_request_bytes + (UINT64_C(1) << 20));
                r = service_init(b, &b->services[i], &policy->services[i], dir);
                b->n_services++;
                if (r < 0)
                        goto fail;
        }
        *ret = b;
        return 0;
fail:
        broker_free(b);
        return r;
}

Broker *broker_free(Broker *b) {
        if (!b)
                return NULL;
        while (b->sessions)
                broker_session_free(b->sessions);
        for (size_t i = 0; i < b->n_listeners; i++)
                sd_event_source_disable_unref(b->listeners[i]);
        free(b->listeners);
        for (size_t i = 0; i < b->n_services; i++)
                service_done(&b->services[i]);
        free(b->services);
        SSL_CTX_free(b->tls);
        free(b);
        return NULL;
}

BrokerService *broker_find_service(Broker *b, uint16_t listen_port) {
        for (size_t i = 0; b && i < b->n_services; i++)
                if (b->services[i].config->listen_port == listen_port)
                        return &b->services[i];
        return NULL;
}

const char *broker_service_check_floor(const BrokerService *s) {
        return egress_policy_check_operator(s->broker->proxy->policy, s->config->host, s->config->port);
}

static int on_listener(sd_event_source *source, int fd, uint32_t revents, void *userdata) {
        BrokerService *s = userdata;

        for (;;) {
                int cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
                if (cfd < 0) {
                        if (errno == EAGAIN || errno == EINTR)
                                return 0;
                        if (errno == ECONNABORTED)
                                continue;
                        log_warning_errno(-errno, "accept() on the listener of service %s failed: %m", s->config->name);
                        return 0;
                }
                int r = broker_session_start(s, cfd);
                if (r < 0)
                        log_warning_errno(r, "Failed to start a broker session for %s: %m", s->config->name);
        }
}

int broker_add_listener(Broker *b, BrokerService *service, int fd) {
        sd_event_source **a, *source = NULL;
        int r;

        r = fd_nonblock(fd, true);
        if (r < 0)
                goto fail;
        a = reallocarray(b->listeners, b->n_listeners + 1, sizeof(*a));
        if (!a) {
                r = -ENOMEM;
                goto fail;
        }
        b->listeners = a;
        r = sd_event_add_io(b->proxy->event, &source, fd, EPOLLIN, on_listener, service);
        if (r < 0)
                goto fail;
        (void) sd_event_source_set_description(source, "broker-listener");
        sd_event_source_set_io_fd_own(source, true);
        b->listeners[b->n_listeners++] = source;
        return 0;
fail:
        safe_close(fd);
        return r;
}

