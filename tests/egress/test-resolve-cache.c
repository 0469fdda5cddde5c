/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <cmocka.h>

#include "resolve-cache.h"

#define SEC (1000ULL * 1000)

static ResolvedAddress v4(const char *s) {
        ResolvedAddress a = { .len = sizeof(struct sockaddr_in) };
        struct sockaddr_in *in = (struct sockaddr_in *) &a.sa;
        in->sin_family = AF_INET;
        in->sin_port = htons(443);
        assert_int_equal(inet_pton(AF_INET, s, &in->sin_addr), 1);
        return a;
}

static const char *addr_of(const ResolveCacheEntry *e, size_t i, char *buf) {
        return inet_ntop(AF_INET, &((const struct sockaddr_in *) &e->addrs[i].sa)->sin_addr, buf, INET_ADDRSTRLEN);
}

static void test_ttl(void **state) {
        static ResolveCache c;
        ResolvedAddress a[2] = { v4("11.0.0.10"), v4("11.0.0.11") };
        char buf[INET_ADDRSTRLEN];
        uint64_t t = 1000 * SEC;

        resolve_cache_init(&c);
        assert_null(resolve_cache_lookup(&c, "api.example.org", t));
        resolve_cache_store(&c, "api.example.org", a, 2, 60 * SEC, t);
        const ResolveCacheEntry *e = resolve_cache_lookup(&c, "api.example.org", t + 59 * SEC);
        assert_non_null(e);
        assert_int_equal(e->n_addrs, 2);
        assert_string_equal(addr_of(e, 0, buf), "11.0.0.10");   /* in the order given */
        assert_string_equal(addr_of(e, 1, buf), "11.0.0.11");
        assert_null(resolve_cache_lookup(&c, "other.example.org", t));
        assert_null(resolve_cache_lookup(&c, "api.example.org", t + 60 * SEC));   /* expired, and gone */
        assert_int_equal(c.n_entries, 0);

        /* A TTL of 0 means do not cache; no addresses, nothing to keep. */
        resolve_cache_store(&c, "zero.example.org", a, 2, 0, t);
        resolve_cache_store(&c, "none.example.org", a, 0, 60 * SEC, t);
        assert_int_equal(c.n_entries, 0);

        /* A long TTL is capped. */
        resolve_cache_store(&c, "long.example.org", a, 1, 86400 * SEC, t);
        assert_non_null(resolve_cache_lookup(&c, "long.example.org", t + RESOLVE_CACHE_TTL_MAX_USEC - 1));
        assert_null(resolve_cache_lookup(&c, "long.example.org", t + RESOLVE_CACHE_TTL_MAX_USEC));
}

static void test_replace(void **state) {
        static ResolveCache c;
        ResolvedAddress a = v4("11.0.0.10"), b = v4("11.0.0.20");
        char buf[INET_ADDRSTRLEN];

        resolve_cache_init(&c);
        resolve_cache_store(&c, "api.example.org", &a, 1, 60 * SEC, 0);
        resolve_cache_store(&c, "api.example.org", &b, 1, 10 * SEC, 5 * SEC);
        assert_int_equal(c.n_entries, 1);
        const ResolveCacheEntry *e = resolve_cache_lookup(&c, "api.example.org", 6 * SEC);
        assert_non_null(e);
        assert_string_equal(addr_of(e, 0, buf), "11.0.0.20");
        assert_null(resolve_cache_lookup(&c, "api.example.org", 15 * SEC));   /* the new TTL counts */
}

static void test_hosts_file_change_flushes(void **state) {
        static ResolveCache c;
        ResolvedAddress a = v4("11.0.0.10");
        ResolveFileId one = { .dev = 1, .ino = 2, .size = 40, .mtime_nsec = 5, .ctime_nsec = 5 }, two = one;

        resolve_cache_init(&c);
        resolve_cache_check_hosts_file(&c, &one);
        resolve_cache_store(&c, "api.example.org", &a, 1, 60 * SEC, 0);
        resolve_cache_check_hosts_file(&c, &one);
        assert_non_null(resolve_cache_lookup(&c, "api.example.org", 1));
        /* Only the ctime moved (touch -d set the mtime back): a new file all the same. */
        two.ctime_nsec = 6;
        resolve_cache_check_hosts_file(&c, &two);
        assert_null(resolve_cache_lookup(&c, "api.example.org", 1));
        /* The file disappearing is a change too. */
        resolve_cache_store(&c, "api.example.org", &a, 1, 60 * SEC, 0);
        resolve_cache_check_hosts_file(&c, &(ResolveFileId) {});
        assert_null(resolve_cache_lookup(&c, "api.example.org", 1));
}

static void test_full_evicts_expired_then_lru(void **state) {
        static ResolveCache c;
        ResolvedAddress a = v4("11.0.0.10");
        char host[64];

        resolve_cache_init(&c);
        for (unsigned i = 0; i < RESOLVE_CACHE_MAX; i++) {
                snprintf(host, sizeof(host), "h%u.example.org", i);
                /* h0 expires at 10 s, every other one later */
                resolve_cache_store(&c, host, &a, 1, (i == 0 ? 10 : 100) * SEC, i);
        }
        assert_int_equal(c.n_entries, RESOLVE_CACHE_MAX);
        resolve_cache_store(&c, "new1.example.org", &a, 1, 100 * SEC, 20 * SEC);
        assert_int_equal(c.n_entries, RESOLVE_CACHE_MAX);
        assert_null(resolve_cache_lookup(&c, "h0.example.org", 20 * SEC));
        /* Full of live entries: h1 is the least recently used unless looked up. */
        assert_non_null(resolve_cache_lookup(&c, "h1.example.org", 21 * SEC));
        resolve_cache_store(&c, "new2.example.org", &a, 1, 100 * SEC, 22 * SEC);
        assert_non_null(resolve_cache_lookup(&c, "h1.example.org", 23 * SEC));
        assert_null(resolve_cache_lookup(&c, "h2.example.org", 23 * SEC));
        assert_non_null(resolve_cache_lookup(&c, "new1.example.org", 23 * SEC));
        assert_non_null(resolve_cache_lookup(&c, "new2.example.org", 23 * SEC));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_ttl),
                cmocka_unit_test(test_replace),
                cmocka_unit_test(test_hosts_file_change_flushes),
                cmocka_unit_test(test_full_evicts_expired_then_lru),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
