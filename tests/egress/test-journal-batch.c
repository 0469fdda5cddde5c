/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The proxy's journal entries: the native protocol's bytes (journal-entry.c)
 * and their batches (journal-batch.c) on a stand-in for journald's socket. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "journal-batch.h"
#include "journal-entry.h"
#include "util.h"

static void test_entry_format(void **state) {
        char buf[256];
        size_t n = journal_entry_format(buf, sizeof(buf), LOG_INFO, "egress", "egress allow a:443",
                                        "EGRESS_HOST", "a", "EGRESS_REASON", NULL, NULL);
        static const char want[] = "MESSAGE=egress allow a:443\nPRIORITY=6\nSYSLOG_IDENTIFIER=egress\n"
                                   "EGRESS_HOST=a\nEGRESS_REASON=\n";
        assert_int_equal(n, sizeof(want) - 1);
        assert_memory_equal(buf, want, n);

        /* A newline in a value: KEY, newline, 64-bit little-endian length, value. */
        n = journal_entry_format(buf, sizeof(buf), LOG_WARNING, NULL, "m", "K", "a\nb", NULL);
        static const char want2[] = "MESSAGE=m\nPRIORITY=4\nK\n\x03\0\0\0\0\0\0\0a\nb\n";
        assert_int_equal(n, sizeof(want2) - 1);
        assert_memory_equal(buf, want2, n);

        /* Too small a buffer: the length needed, and nothing written past it. */
        memset(buf, 'x', sizeof(buf));
        assert_int_equal(journal_entry_format(buf, 10, LOG_INFO, NULL, "hello", NULL), strlen(
                         "MESSAGE=hello\nPRIORITY=6\n"));
        assert_memory_equal(buf, "MESSAGE=he", 10);
        assert_int_equal(buf[10], 'x');
}

static int journal_standin(const char *path) {
        assert_true(strlen(path) < sizeof(((struct sockaddr_un *) NULL)->sun_path));
        struct sockaddr_un a = { .sun_family = AF_UNIX };
        int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

        assert_true(fd >= 0);
        memcpy(a.sun_path, path, strlen(path) + 1);
        (void) unlink(path);
        assert_int_equal(bind(fd, (struct sockaddr *) &a, sizeof(a)), 0);
        return fd;
}

/* The stand-in's reader: journald drains its socket as entries come (a
 * batch is more datagrams than the host's net.unix.max_dgram_qlen of 10,
 * so a test that only read afterwards would block the sender). */
static struct {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        int fd, count;
        char last[JOURNAL_BATCH_BYTES + 64];
} reader = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, -1, 0, "" };

static void *reader_thread(void *arg) {
        static char buf[sizeof(reader.last)];
        for (;;) {
                ssize_t k = recv(reader.fd, buf, sizeof(buf) - 1, 0);
                if (k < 0)
                        return NULL;
                buf[k] = 0;
                if (strstr(buf, "MESSAGE=stop reader\n"))
                        return NULL;
                pthread_mutex_lock(&reader.lock);
                memcpy(reader.last, buf, (size_t) k + 1);
                reader.count++;
                pthread_cond_broadcast(&reader.cond);
                pthread_mutex_unlock(&reader.lock);
        }
}

/* Datagrams received since the last call, waiting up to a second for at
 * least `want` of them; the last one's text in buf. */
static int count_datagrams(int want, char *buf) {
        struct timespec deadline;
        clock_gettime(CLOCK_REALTIME, &deadline);
        deadline.tv_sec += 1;
        pthread_mutex_lock(&reader.lock);
        while (reader.count < want && pthread_cond_timedwait(&reader.cond, &reader.lock, &deadline) == 0)
                ;
        int n = reader.count;
        reader.count = 0;
        strcpy(buf, reader.last);
        pthread_mutex_unlock(&reader.lock);
        return n;
}

static void add_entry(JournalBatch *b, int i) {
        char message[64], value[16];
        snprintf(message, sizeof(message), "entry %d", i);
        snprintf(value, sizeof(value), "%d", i);
        journal_batch_add(b, LOG_INFO, message, "EGRESS_HOST", "a.example", "N", value, NULL);
}

/* Nothing goes before the batch is full, the timer is due or the batch is
 * done; then every entry, one datagram each, in order. */
static void test_batch(void **state) {
        char dir[] = "/tmp/test-journal-batch-XXXXXX", path[128], buf[JOURNAL_BATCH_BYTES + 64];
        sd_event *e = NULL;
        JournalBatch b;

        assert_non_null(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/socket", dir);
        int fd = journal_standin(path);
        pthread_t tid;
        reader.fd = fd;
        assert_int_equal(pthread_create(&tid, NULL, reader_thread, NULL), 0);
        assert_int_equal(setenv("SANDBOXD_JOURNAL_SOCKET", path, 1), 0);
        assert_int_equal(setenv("JOURNAL_STREAM", "0:0", 1), 0);
        assert_int_equal(sd_event_new(&e), 0);
        journal_batch_init(&b, e);

        for (int i = 0; i < JOURNAL_BATCH_ENTRIES - 1; i++)
                add_entry(&b, i);
        assert_int_equal(count_datagrams(0, buf), 0);
        add_entry(&b, JOURNAL_BATCH_ENTRIES - 1);
        assert_int_equal(count_datagrams(JOURNAL_BATCH_ENTRIES + 1, buf), JOURNAL_BATCH_ENTRIES);
        assert_non_null(strstr(buf, "MESSAGE=entry 31\n"));
        assert_non_null(strstr(buf, "\nN=31\n"));

        /* The timer: one entry waits at most the delay. */
        uint64_t t0 = now_usec(CLOCK_MONOTONIC);
        add_entry(&b, 100);
        assert_int_equal(count_datagrams(0, buf), 0);
        assert_true(sd_event_run(e, 10 * JOURNAL_BATCH_DELAY_USEC) > 0);
        assert_int_equal(count_datagrams(1, buf), 1);
        assert_true(now_usec(CLOCK_MONOTONIC) - t0 >= JOURNAL_BATCH_DELAY_USEC);
        assert_non_null(strstr(buf, "MESSAGE=entry 100\n"));

        /* Bytes: entries that fill the buffer go before it overflows. */
        char big[4000];
        memset(big, 'b', sizeof(big) - 1);
        big[sizeof(big) - 1] = 0;
        for (int i = 0; i < 5; i++)
                journal_batch_add(&b, LOG_INFO, "big", "V", big, NULL);
        assert_int_equal(count_datagrams(4, buf), 4);
        /* One bigger than the whole buffer goes alone, after what was held. */
        char *huge = malloc(JOURNAL_BATCH_BYTES + 1);
        assert_non_null(huge);
        memset(huge, 'h', JOURNAL_BATCH_BYTES);
        huge[JOURNAL_BATCH_BYTES] = 0;
        journal_batch_add(&b, LOG_INFO, "huge", "V", huge, NULL);
        free(huge);
        assert_int_equal(count_datagrams(2, buf), 2);
        assert_non_null(strstr(buf, "MESSAGE=huge\n"));

        /* Done: what is held goes. */
        add_entry(&b, 200);
        add_entry(&b, 201);
        journal_batch_done(&b);
        assert_int_equal(count_datagrams(2, buf), 2);
        assert_non_null(strstr(buf, "MESSAGE=entry 201\n"));
        assert_int_equal(b.lost, 0);
        log_struct(LOG_INFO, "stop reader", NULL);
        assert_int_equal(pthread_join(tid, NULL), 0);

        sd_event_unref(e);
        unsetenv("JOURNAL_STREAM");
        unsetenv("SANDBOXD_JOURNAL_SOCKET");
        close(fd);
        unlink(path);
        rmdir(dir);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_entry_format),
                cmocka_unit_test(test_batch),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
