/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "errors.h"
#include "sandboxctl-exit.h"
#include "util.h"

/* The daemon's own errors first. */
static const struct {
        const char *name;
        int code;
} error_codes[] = {
        { SBX_ERROR_INVALID_SPEC,                               EXIT_INVALID },
        { SBX_ERROR_UNKNOWN_KEY,                                EXIT_INVALID },
        { SBX_ERROR_WRONG_TYPE,                                 EXIT_INVALID },
        { SBX_ERROR_MISSING_ARGV,                               EXIT_INVALID },
        { SBX_ERROR_LIMIT_OUT_OF_RANGE,                         EXIT_INVALID },
        { SBX_ERROR_UNKNOWN_CLASS,                              EXIT_INVALID },
        { SBX_ERROR_UNKNOWN_ORIGIN,                             EXIT_INVALID },
        { SBX_ERROR_INVALID_CREDENTIAL,                         EXIT_INVALID },
        { SBX_ERROR_INVALID_ENVIRONMENT,                        EXIT_INVALID },
        { SBX_ERROR_INVALID_EGRESS,                             EXIT_INVALID },
        { SBX_ERROR_INVALID_SERVICE,                            EXIT_INVALID },
        { SBX_ERROR_INVALID_ENDPOINT,                           EXIT_INVALID },
        { SBX_ERROR_ISOLATION_UNAVAILABLE,                      EXIT_REFUSED },
        { SBX_ERROR_NO_SUCH_WORKER,                             EXIT_NOT_FOUND },
        { SBX_ERROR_EXECUTABLE_NOT_FOUND,                       EXIT_NOT_FOUND },
        { SBX_ERROR_START_FAILED,                               EXIT_FAILED },
        { SBX_ERROR_CHANNEL_BUSY,                               EXIT_FAILED },
        { SBX_ERROR_NOT_RUNNING,                                EXIT_FAILED },
        { SBX_ERROR_TOO_MANY_WORKERS,                           EXIT_REFUSED },
        { SBX_ERROR_TOO_MANY_PROCESSES,                         EXIT_REFUSED },
        { SBX_ERROR_ACCESS_DENIED,                              EXIT_REFUSED },
        { SBX_ERROR_NOT_SUPPORTED,                              EXIT_REFUSED },
        { SBX_ERROR_TOO_MANY_SUBSCRIBERS,                       EXIT_REFUSED },
        { SBX_ERROR_NOT_SUBSCRIBED,                             EXIT_REFUSED },
        { SBX_ERROR_EGRESS_OUTSIDE_FLOOR,                       EXIT_REFUSED },
        { SBX_ERROR_SUSPENDED,                                  EXIT_FAILED },
        { SBX_ERROR_SUSPEND_FAILED,                             EXIT_FAILED },
        { SBX_ERROR_UID_TAKEN,                                  EXIT_FAILED },
        { SBX_ERROR_INVALID_WORKSPACE,                          EXIT_INVALID },
        { SBX_ERROR_WORKSPACE_EXISTS,                           EXIT_FAILED },
        { SBX_ERROR_ENDPOINT_NAME_TAKEN,                        EXIT_FAILED },
        { SBX_ERROR_NO_SUCH_WORKSPACE,                          EXIT_NOT_FOUND },
        { SBX_ERROR_WORKSPACE_BUSY,                             EXIT_FAILED },
        { SBX_ERROR_QUOTA_EXCEEDED,                             EXIT_REFUSED },
        { SBX_ERROR_TOO_MANY_REQUESTS,                          EXIT_REFUSED },
        { SBX_ERROR_INSUFFICIENT_SPACE,                         EXIT_REFUSED },
        { SBX_ERROR_FILE_NOT_FOUND,                             EXIT_NOT_FOUND },
        { SBX_ERROR_FILE_EXISTS,                                EXIT_FAILED },
        { SBX_ERROR_NOT_A_DIRECTORY,                            EXIT_FAILED },
        { SBX_ERROR_IS_A_DIRECTORY,                             EXIT_FAILED },
        { SBX_ERROR_NOT_REGULAR_FILE,                           EXIT_REFUSED },
        { SBX_ERROR_PATH_OUTSIDE_HOME,                          EXIT_REFUSED },
        { SBX_ERROR_PERMISSION_DENIED,                          EXIT_REFUSED },
        { SBX_ERROR_DISK_FULL,                                  EXIT_FAILED },
        { SBX_ERROR_DIRECTORY_NOT_EMPTY,                        EXIT_FAILED },
        { SBX_ERROR_TOO_MANY_ENTRIES,                           EXIT_FAILED },
        { SBX_ERROR_NO_SUCH_TRANSFER,                           EXIT_NOT_FOUND },
        { SBX_ERROR_FILE_ERROR,                                 EXIT_FAILED },
        /* Refusals by the bus or polkit. */
        { SD_BUS_ERROR_ACCESS_DENIED,                           EXIT_REFUSED },
        { SD_BUS_ERROR_INTERACTIVE_AUTHORIZATION_REQUIRED,      EXIT_REFUSED },
        { SD_BUS_ERROR_AUTH_FAILED,                             EXIT_REFUSED },
        { "org.freedesktop.PolicyKit1.Error.NotAuthorized",     EXIT_REFUSED },
        /* Nobody there to answer, or no answer. */
        { SD_BUS_ERROR_SERVICE_UNKNOWN,                         EXIT_UNAVAILABLE },
        { SD_BUS_ERROR_NAME_HAS_NO_OWNER,                       EXIT_UNAVAILABLE },
        { SD_BUS_ERROR_NO_REPLY,                                EXIT_UNAVAILABLE },
        { SD_BUS_ERROR_TIMEOUT,                                 EXIT_UNAVAILABLE },
        { "org.freedesktop.DBus.Error.TimedOut",                EXIT_UNAVAILABLE },
        { SD_BUS_ERROR_NO_SERVER,                               EXIT_UNAVAILABLE },
        { SD_BUS_ERROR_DISCONNECTED,                            EXIT_UNAVAILABLE },
        { SD_BUS_ERROR_BAD_ADDRESS,                             EXIT_UNAVAILABLE },
        { SD_BUS_ERROR_NO_NETWORK,                              EXIT_UNAVAILABLE },
        { SD_BUS_ERROR_LIMITS_EXCEEDED,                         EXIT_UNAVAILABLE },
        /* A daemon that does not offer the call: not this version of sandboxd. */
        { SD_BUS_ERROR_UNKNOWN_METHOD,                          EXIT_UNAVAILABLE },
        { SD_BUS_ERROR_UNKNOWN_INTERFACE,                       EXIT_UNAVAILABLE },
        /* A worker's object that went away between two calls. */
        { SD_BUS_ERROR_UNKNOWN_OBJECT,                          EXIT_NOT_FOUND },
        { SD_BUS_ERROR_INVALID_ARGS,                            EXIT_INVALID },
};

int exit_code_from_errno(int r) {
        switch (r < 0 ? -r : r) {
        case 0:
                return EXIT_OK;
        case ENOENT:
        case ENOTDIR:
        case EISDIR:
        case ELOOP:
        case EACCES:
        case EPERM:
        case EFBIG:
                /* sysexits(3): an input file did not exist or was not readable. */
                return EXIT_NOT_FOUND;
        default:
                return EXIT_FAILED;
        }
}

int exit_code_from_bus_error(const sd_bus_error *error, int r) {
        if (error && sd_bus_error_is_set(error)) {
                for (size_t i = 0; i < ELEMENTSOF(error_codes); i++)
                        if (sd_bus_error_has_name(error, error_codes[i].name))
                                return error_codes[i].code;
                /* Bus activation that could not start the daemon: Spawn.ChildExited, ... */
                if (startswith(error->name, "org.freedesktop.DBus.Error.Spawn."))
                        return EXIT_UNAVAILABLE;
                if (startswith(error->name, "org.sandboxd1.Error.Invalid"))
                        return EXIT_INVALID;
                return EXIT_FAILED;
        }
        /* No reply at all: the connection or the call itself failed. */
        switch (r < 0 ? -r : r) {
        case ETIMEDOUT:
        case ENOTCONN:
        case ECONNRESET:
        case ECONNREFUSED:
        case ENOENT:
        case EHOSTUNREACH:
        case ENXIO:
        case EPIPE:
                return EXIT_UNAVAILABLE;
        default:
                return EXIT_FAILED;
        }
}
