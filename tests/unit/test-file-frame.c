/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The frames and status lines sandbox-files writes and sandboxd reads
 * (file-frame.h): what a worker-controlled name or a short read can make of them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <sys/stat.h>

#include "errors.h"
#include "file-frame.h"
#include "util.h"

static void test_round_trip(void **state) {
        const char *names[] = { "a", "with space", "new\nline", "ütf-8", "-dash", ":colon 9:x", NULL };
        for (size_t i = 0; names[i]; i++) {
                struct stat st = { .st_mode = S_IFREG | 0640, .st_size = 12345, .st_uid = 61234, .st_gid = 61234 };
                st.st_mtim.tv_sec = 1700000000;
                st.st_mtim.tv_nsec = 123456789;
                FileEntry in, out;
                char *buf = NULL;
                size_t len = 0, used;
                FILE *f = open_memstream(&buf, &len);

                file_entry_from_stat(&in, names[i], &st);
                assert_int_equal(file_entry_write(f, &in), 0);
                fclose(f);
                assert_int_equal(file_entry_parse(buf, len, &out, &used), 1);
                assert_int_equal(used, len);
                assert_string_equal(out.name, names[i]);
                assert_int_equal(out.type, FILE_TYPE_REGULAR);
                assert_int_equal(out.size, 12345);
                assert_int_equal(out.mode, 0640);
                assert_int_equal(out.mtime_usec, UINT64_C(1700000000123456));
                assert_int_equal(out.uid, 61234);
                /* Every prefix is "not yet", never a wrong entry. */
                for (size_t cut = 0; cut < len; cut++) {
                        assert_int_equal(file_entry_parse(buf, cut, &out, &used), 0);
                        assert_int_equal(used, 0);
                }
                free(buf);
        }
}

static void test_types(void **state) {
        assert_string_equal(file_type_to_string(file_type_from_mode(S_IFDIR)), "directory");
        assert_string_equal(file_type_to_string(file_type_from_mode(S_IFLNK)), "symlink");
        assert_string_equal(file_type_to_string(file_type_from_mode(S_IFIFO)), "fifo");
        assert_string_equal(file_type_to_string(file_type_from_mode(S_IFSOCK)), "socket");
        assert_string_equal(file_type_to_string(file_type_from_mode(S_IFCHR)), "char-device");
        assert_string_equal(file_type_to_string(file_type_from_mode(S_IFBLK)), "block-device");
        assert_null(file_type_to_string(_FILE_TYPE_MAX));
}

static void assert_malformed(const char *frame) {
        FileEntry e;
        size_t used;
        assert_int_equal(file_entry_parse(frame, strlen(frame), &e, &used), -EBADMSG);
}

static void test_malformed(void **state) {
        FileEntry e;
        size_t used;

        assert_int_equal(file_entry_parse("f 1 644 2 3 4 1:a\n", 18, &e, &used), 1);     /* the control */
        assert_malformed("x 1 644 2 3 4 1:a\n");                /* an unknown type */
        assert_malformed("f -1 644 2 3 4 1:a\n");               /* a sign */
        assert_malformed("f 1 648 2 3 4 1:a\n");                /* not octal */
        assert_malformed("f 1 17777 2 3 4 1:a\n");              /* more than permission bits */
        assert_malformed("f 99999999999999999999 644 2 3 4 1:a\n");     /* overflow */
        assert_malformed("f 1 644 2 4294967296 4 1:a\n");       /* a UID beyond 32 bits */
        assert_malformed("f 1 644 2 3 4 0:\n");                 /* an empty name */
        assert_malformed("f 1 644 2 3 4 3:a/b\n");              /* a slash in a name */
        assert_malformed("f 1 644 2 3 4 1:ab\n");               /* a length that lies */
        assert_malformed("f 1 644 2 3 4 256:a\n");              /* longer than NAME_MAX */
        assert_malformed("f  1 644 2 3 4 1:a\n");
        assert_int_equal(file_entry_parse("f 1 644 2 3 4 3:a\0b\n", 20, &e, &used), -EBADMSG);  /* a NUL */
}

static void test_status(void **state) {
        FileStatus s;

        assert_int_equal(file_status_parse("sandbox-files: open 42", &s), 0);
        assert_int_equal(s.kind, FILE_STATUS_OPEN);
        assert_int_equal(s.value, 42);
        assert_string_equal(s.temp, "");
        assert_int_equal(file_status_parse("sandbox-files: open 0 .f.sbx-0123456789abcdef", &s), 0);
        assert_string_equal(s.temp, ".f.sbx-0123456789abcdef");
        assert_int_equal(file_status_parse("sandbox-files: done 7", &s), 0);
        assert_int_equal(s.kind, FILE_STATUS_DONE);
        assert_int_equal(file_status_parse("sandbox-files: error DiskFull: f: the worker's disk cap is reached", &s), 0);
        assert_int_equal(s.kind, FILE_STATUS_ERROR);
        assert_string_equal(s.error, "DiskFull");
        assert_string_equal(s.message, "f: the worker's disk cap is reached");

        assert_int_equal(file_status_parse("sandbox-files: error NoSuchWorker: x", &s), -EBADMSG);  /* not a file error */
        assert_int_equal(file_status_parse("sandbox-files: done 7 x", &s), -EBADMSG);
        assert_int_equal(file_status_parse("sandbox-files: open 0 a/b", &s), -EBADMSG);
        assert_int_equal(file_status_parse("sandbox-files: open -1", &s), -EBADMSG);
        assert_int_equal(file_status_parse("sandbox-files: done", &s), -EBADMSG);
        assert_int_equal(file_status_parse("other: done 1", &s), -EBADMSG);
}

static void test_errno_names(void **state) {
        assert_string_equal(file_error_from_errno(ENOSPC), "DiskFull");
        assert_string_equal(file_error_from_errno(EDQUOT), "DiskFull");
        assert_string_equal(file_error_from_errno(ELOOP), "PathOutsideHome");
        assert_string_equal(file_error_from_errno(ENXIO), "NotRegularFile");
        assert_string_equal(file_error_from_errno(EIO), "FileError");
        /* Each name the helper may say is an org.sandboxd1 error. */
        for (size_t i = 0; file_error_names[i]; i++) {
                FileStatus s;
                char line[128];
                snprintf(line, sizeof(line), "sandbox-files: error %s: x", file_error_names[i]);
                assert_int_equal(file_status_parse(line, &s), 0);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_round_trip),
                cmocka_unit_test(test_types),
                cmocka_unit_test(test_malformed),
                cmocka_unit_test(test_status),
                cmocka_unit_test(test_errno_names),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
