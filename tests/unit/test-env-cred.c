/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "env-cred.h"
#include "spec.h"

static void assert_decodes(const char *data, size_t size, char * const *want) {
        _cleanup_strv_free_ char **got = NULL;

        assert_int_equal(env_credential_decode((const uint8_t *) data, size, &got), 0);
        assert_non_null(got);
        assert_int_equal(strv_length(got), strv_length(want));
        for (size_t i = 0; want && want[i]; i++)
                assert_string_equal(got[i], want[i]);
}

static void assert_malformed(const char *data, size_t size) {
        char **got = NULL;

        assert_int_equal(env_credential_decode((const uint8_t *) data, size, &got), -EBADMSG);
        assert_null(got);
}

static void test_round_trip(void **state) {
        char *env[] = { "TOKEN=s3cret", "MULTI=line one\nline two\n", "EMPTY=", "EQ=a=b=c", "_U=\t", NULL };
        _cleanup_free_ uint8_t *buf = NULL;
        size_t size;

        assert_int_equal(env_credential_encode(env, &buf, &size), 0);
        /* NUL-terminated entries, back to back. */
        assert_int_equal(size, strlen("TOKEN=s3cret") + strlen("MULTI=line one\nline two\n") + strlen("EMPTY=") +
                                       strlen("EQ=a=b=c") + strlen("_U=\t") + 5);
        assert_memory_equal(buf, "TOKEN=s3cret\0MULTI=", 19);
        assert_int_equal(buf[size - 1], 0);
        assert_decodes((const char *) buf, size, env);
}

static void test_empty(void **state) {
        uint8_t *buf = (uint8_t *) "x";
        size_t size = 1;
        char *none[] = { NULL };

        assert_int_equal(env_credential_encode(NULL, &buf, &size), 0);
        assert_null(buf);
        assert_int_equal(size, 0);
        assert_int_equal(env_credential_encode(none, &buf, &size), 0);
        assert_null(buf);
        assert_decodes("", 0, none);
}

static void test_malformed(void **state) {
        assert_malformed("A=b", 3);                     /* last entry without its NUL */
        assert_malformed("A=b\0C=d", 7);
        assert_malformed("\0", 1);                      /* empty entry */
        assert_malformed("A=b\0\0", 5);
        assert_malformed("NOEQUALS\0", 9);
        assert_malformed("=value\0", 7);
        assert_malformed("1BAD=x\0", 7);
        assert_malformed("BA-D=x\0", 7);
        assert_malformed("A B=x\0", 6);
        assert_malformed("A=ok\0B\nC=x\0", 11);         /* a newline in the name, not the value */
}

static void test_too_many(void **state) {
        size_t n = SBX_ENV_MAX + 1;
        _cleanup_free_ char *buf = malloc(n * 4);
        char **got = NULL;

        for (size_t i = 0; i < n; i++)
                memcpy(buf + i * 4, "A=b", 4);
        assert_int_equal(env_credential_decode((uint8_t *) buf, n * 4, &got), -EBADMSG);
        assert_int_equal(env_credential_decode((uint8_t *) buf, (n - 1) * 4, &got), 0);
        assert_int_equal(strv_length(got), SBX_ENV_MAX);
        strv_free(got);
}

static void test_reserved_names(void **state) {
        assert_true(credential_name_is_reserved(SBX_ENV_CREDENTIAL));
        assert_true(credential_name_is_reserved("sandboxd.other"));
        assert_false(credential_name_is_reserved("sandboxd-token"));
        assert_false(credential_name_is_reserved("token"));
        assert_false(credential_name_is_reserved(NULL));
        /* A spec may not name it either (spec.c refuses; test-spec.c). */
        assert_true(credential_name_is_valid(SBX_ENV_CREDENTIAL));
}

static void test_dir(void **state) {
        _cleanup_free_ char *d = NULL;
        char *bad = NULL;

        assert_int_equal(env_credential_dir("0123456789ab", &d), 0);
        assert_string_equal(d, "/run/credentials/sandbox-0123456789ab.service");
        assert_int_equal(env_credential_dir("../x", &bad), -EINVAL);
        assert_int_equal(env_credential_dir("..", &bad), -EINVAL);
        assert_int_equal(env_credential_dir("", &bad), -EINVAL);
        assert_int_equal(env_credential_dir(NULL, &bad), -EINVAL);
        assert_null(bad);
}

static void write_file(const char *dir, const char *name, const void *data, size_t size) {
        char path[512];
        int fd;

        snprintf(path, sizeof(path), "%s/%s", dir, name);
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, data, size), (ssize_t) size);
        close(fd);
}

static void test_read(void **state) {
        char dir[] = "/tmp/test-env-cred-XXXXXX", path[512], link[512];
        char *want[] = { "TOKEN=x", "NL=a\nb", NULL };
        _cleanup_strv_free_ char **got = NULL;
        char **none = NULL;

        assert_non_null(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/" SBX_ENV_CREDENTIAL, dir);
        assert_int_equal(env_credential_read(dir, &none), -ENOENT);

        write_file(dir, SBX_ENV_CREDENTIAL, "TOKEN=x\0NL=a\nb\0", 15);
        assert_int_equal(env_credential_read(dir, &got), 0);
        assert_int_equal(strv_length(got), 2);
        for (size_t i = 0; want[i]; i++)
                assert_string_equal(got[i], want[i]);

        write_file(dir, SBX_ENV_CREDENTIAL, "TOKEN=x", 7);
        assert_int_equal(env_credential_read(dir, &none), -EBADMSG);

        /* Never followed: the credential is the unit's own file, nothing it points at. */
        assert_int_equal(unlink(path), 0);
        snprintf(link, sizeof(link), "%s/target", dir);
        write_file(dir, "target", "A=b\0", 4);
        assert_int_equal(symlink(link, path), 0);
        assert_int_equal(env_credential_read(dir, &none), -EBADMSG);
        assert_int_equal(unlink(path), 0);

        /* A FIFO neither blocks nor counts. */
        assert_int_equal(mkfifo(path, 0600), 0);
        assert_int_equal(env_credential_read(dir, &none), -EBADMSG);
        assert_int_equal(unlink(path), 0);

        /* Larger than any credential systemd would deliver. */
        assert_int_equal(truncate(link, (off_t) SBX_CREDENTIAL_SIZE_MAX + 1), 0);
        assert_int_equal(rename(link, path), 0);
        assert_int_equal(env_credential_read(dir, &none), -EFBIG);
        assert_null(none);
        assert_int_equal(unlink(path), 0);
        assert_int_equal(rmdir(dir), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_round_trip),
                cmocka_unit_test(test_empty),
                cmocka_unit_test(test_malformed),
                cmocka_unit_test(test_too_many),
                cmocka_unit_test(test_reserved_names),
                cmocka_unit_test(test_dir),
                cmocka_unit_test(test_read),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
