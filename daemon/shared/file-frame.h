/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The contract between sandboxd and sandbox-files (daemon/files/README.md),
 * the helper that does one file operation inside a worker, as the worker:
 *  - stderr carries its status, one line each, "sandbox-files: " then
 *      "open SIZE[ TEMP]"   checks passed, the data may flow (read, write);
 *                           TEMP is a replace's temporary name
 *      "done BYTES"         the last line of a success
 *      "error NAME: TEXT"   the last line of a failure; NAME is one of
 *                           file_error_names[], an org.sandboxd1.Error.NAME
 *  - stdout carries, for list and stat, entries of the form
 *      "T SIZE MODE MTIME_USEC UID GID LEN:NAME\n"
 *    (T one of "fdlpscb?", MODE octal permission bits, NAME LEN raw bytes),
 *    so any name can travel and the reader never guesses where one ends. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define SBX_FILES_STATUS_PREFIX "sandbox-files: "
/* The longest status line sandboxd reads; longer is malformed. */
#define SBX_FILES_STATUS_MAX 1024
/* The most entries ListDirectory returns: beyond that, TooManyEntries. */
#define SBX_FILES_LIST_MAX 65536
/* A name in a frame: NAME_MAX bytes of a file system. */
#define SBX_FILES_NAME_MAX 255

typedef enum FileType {
        FILE_TYPE_REGULAR,
        FILE_TYPE_DIRECTORY,
        FILE_TYPE_SYMLINK,
        FILE_TYPE_FIFO,
        FILE_TYPE_SOCKET,
        FILE_TYPE_CHAR_DEVICE,
        FILE_TYPE_BLOCK_DEVICE,
        FILE_TYPE_UNKNOWN,
        _FILE_TYPE_MAX,
} FileType;

/* "file", "directory", "symlink", "fifo", "socket", "char-device",
 * "block-device", "unknown": the names ListDirectory and Stat return. */
const char *file_type_to_string(FileType t);
FileType file_type_from_mode(mode_t mode);

typedef struct FileEntry {
        char name[SBX_FILES_NAME_MAX + 1];
        FileType type;
        uint64_t size;
        uint32_t mode;          /* permission bits, 07777 */
        uint64_t mtime_usec;
        uint32_t uid, gid;
} FileEntry;

/* Fills E from ST and NAME (cut to SBX_FILES_NAME_MAX: a file system's own bound). */
void file_entry_from_stat(FileEntry *e, const char *name, const struct stat *st);
/* Writes E as one frame. */
int file_entry_write(FILE *f, const FileEntry *e);
/* Reads one frame from BUF[0..N): the bytes it took in *CONSUMED. 0 and
 * *CONSUMED = 0 when BUF ends before the frame does; -EBADMSG when it is
 * malformed (a NUL or a '/' in the name included). */
int file_entry_parse(const char *buf, size_t n, FileEntry *ret, size_t *consumed);

typedef enum FileStatusKind {
        FILE_STATUS_OPEN,
        FILE_STATUS_DONE,
        FILE_STATUS_ERROR,
} FileStatusKind;

typedef struct FileStatus {
        FileStatusKind kind;
        uint64_t value;                 /* open: the size; done: the bytes moved */
        char temp[SBX_FILES_NAME_MAX + 1];      /* open of a replace: the temporary name */
        const char *error;              /* error: a name of file_error_names[] */
        char message[SBX_FILES_STATUS_MAX];
} FileStatus;

/* One status line, without its newline: -EBADMSG when it is none (an
 * unknown error name included). */
int file_status_parse(const char *line, FileStatus *ret);

/* The errors the helper may name, each also an org.sandboxd1.Error (errors.h). */
extern const char * const file_error_names[];
/* The error name for what a file operation's ERR (a positive errno) means to a client. */
const char *file_error_from_errno(int err);
