/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Every error a client can get from org.sandboxd1. The names are API. */
#define SBX_ERROR_INVALID_SPEC          "org.sandboxd1.Error.InvalidSpec"
#define SBX_ERROR_UNKNOWN_KEY           "org.sandboxd1.Error.UnknownSpecKey"
#define SBX_ERROR_WRONG_TYPE            "org.sandboxd1.Error.WrongType"
#define SBX_ERROR_MISSING_ARGV          "org.sandboxd1.Error.MissingArgv"
#define SBX_ERROR_LIMIT_OUT_OF_RANGE    "org.sandboxd1.Error.LimitOutOfRange"
#define SBX_ERROR_UNKNOWN_CLASS         "org.sandboxd1.Error.UnknownClass"
#define SBX_ERROR_UNKNOWN_ORIGIN        "org.sandboxd1.Error.UnknownOrigin"
#define SBX_ERROR_INVALID_CREDENTIAL    "org.sandboxd1.Error.InvalidCredential"
#define SBX_ERROR_INVALID_ENVIRONMENT   "org.sandboxd1.Error.InvalidEnvironment"
#define SBX_ERROR_INVALID_EGRESS        "org.sandboxd1.Error.InvalidEgressRule"
#define SBX_ERROR_INVALID_SERVICE       "org.sandboxd1.Error.InvalidService"
#define SBX_ERROR_INVALID_ENDPOINT      "org.sandboxd1.Error.InvalidEndpoint"
#define SBX_ERROR_ENDPOINT_NAME_TAKEN   "org.sandboxd1.Error.EndpointNameTaken"
#define SBX_ERROR_ISOLATION_UNAVAILABLE "org.sandboxd1.Error.IsolationUnavailable"
#define SBX_ERROR_NO_SUCH_WORKER        "org.sandboxd1.Error.NoSuchWorker"
#define SBX_ERROR_START_FAILED          "org.sandboxd1.Error.StartFailed"
#define SBX_ERROR_CHANNEL_BUSY          "org.sandboxd1.Error.ChannelBusy"
#define SBX_ERROR_NOT_RUNNING           "org.sandboxd1.Error.NotRunning"
/* A worker runs as many processes started by Exec as it may (worker-spawn.h). */
#define SBX_ERROR_TOO_MANY_PROCESSES    "org.sandboxd1.Error.TooManyProcesses"
#define SBX_ERROR_TOO_MANY_WORKERS      "org.sandboxd1.Error.TooManyWorkers"
/* The caller's UID, or all callers together, already have as many calls
 * waiting for polkit or reading the journal as sandboxd.conf's [Bus] allows. */
#define SBX_ERROR_TOO_MANY_REQUESTS     "org.sandboxd1.Error.TooManyRequests"
/* A malformed argument that is not a spec: a worker id, a journal cursor. */
#define SBX_ERROR_INVALID_ARGUMENT      "org.sandboxd1.Error.InvalidArgument"
#define SBX_ERROR_EXECUTABLE_NOT_FOUND  "org.sandboxd1.Error.ExecutableNotFound"
#define SBX_ERROR_ACCESS_DENIED         "org.sandboxd1.Error.AccessDenied"
/* The worker's class or setup cannot do what was asked (suspend of a shared-kernel worker). */
#define SBX_ERROR_NOT_SUPPORTED         "org.sandboxd1.Error.NotSupported"
/* The worker is suspended: resume it first (or stop it). */
#define SBX_ERROR_SUSPENDED             "org.sandboxd1.Error.Suspended"
/* The checkpoint of a worker failed (the journal of its -suspend unit says why); it runs on, or ended. */
#define SBX_ERROR_SUSPEND_FAILED        "org.sandboxd1.Error.SuspendFailed"
/* A suspended worker's UID is held by another user or unit: its image and home
 * need that UID, so it is not resumed now and stays suspended (uid-keep.h). */
#define SBX_ERROR_UID_TAKEN             "org.sandboxd1.Error.UIDTaken"
#define SBX_ERROR_INVALID_WORKSPACE     "org.sandboxd1.Error.InvalidWorkspace"
#define SBX_ERROR_WORKSPACE_EXISTS      "org.sandboxd1.Error.WorkspaceExists"
#define SBX_ERROR_NO_SUCH_WORKSPACE     "org.sandboxd1.Error.NoSuchWorkspace"
#define SBX_ERROR_WORKSPACE_BUSY        "org.sandboxd1.Error.WorkspaceBusy"
/* The owner holds as many workers, workspaces or image bytes as [Quota] allows. */
#define SBX_ERROR_QUOTA_EXCEEDED        "org.sandboxd1.Error.QuotaExceeded"
/* The file system cannot hold what would be promised ([Quota] Reserve=, Overcommit=). */
#define SBX_ERROR_INSUFFICIENT_SPACE    "org.sandboxd1.Error.InsufficientSpace"
/* Subscribe: the caller's UID, or sandboxd, has as many subscriptions as it serves. */
#define SBX_ERROR_TOO_MANY_SUBSCRIBERS  "org.sandboxd1.Error.TooManySubscribers"
/* Unsubscribe from a client that has no subscription. */
#define SBX_ERROR_NOT_SUBSCRIBED        "org.sandboxd1.Error.NotSubscribed"
/* The Worker's file methods (sandbox-files, file-frame.h): each names what
 * the worker's own kernel said about a path in its home. */
#define SBX_ERROR_FILE_NOT_FOUND        "org.sandboxd1.Error.FileNotFound"
#define SBX_ERROR_FILE_EXISTS           "org.sandboxd1.Error.FileExists"
#define SBX_ERROR_NOT_A_DIRECTORY       "org.sandboxd1.Error.NotADirectory"
#define SBX_ERROR_IS_A_DIRECTORY        "org.sandboxd1.Error.IsADirectory"
/* A FIFO, socket or device node at the path: never opened, never waited on. */
#define SBX_ERROR_NOT_REGULAR_FILE      "org.sandboxd1.Error.NotRegularFile"
/* A "..", an absolute path outside the home, or a symlink on the way (never followed). */
#define SBX_ERROR_PATH_OUTSIDE_HOME     "org.sandboxd1.Error.PathOutsideHome"
/* The worker's own permission checks refused it. */
#define SBX_ERROR_PERMISSION_DENIED     "org.sandboxd1.Error.PermissionDenied"
/* The worker's disk cap (DiskMax, a workspace's size) is reached. */
#define SBX_ERROR_DISK_FULL             "org.sandboxd1.Error.DiskFull"
#define SBX_ERROR_DIRECTORY_NOT_EMPTY   "org.sandboxd1.Error.DirectoryNotEmpty"
/* A listing longer than ListDirectory returns (file-frame.h, SBX_FILES_LIST_MAX). */
#define SBX_ERROR_TOO_MANY_ENTRIES      "org.sandboxd1.Error.TooManyEntries"
/* A transfer handle the caller does not hold (CommitFile, AbortFile). */
#define SBX_ERROR_NO_SUCH_TRANSFER      "org.sandboxd1.Error.NoSuchTransfer"
/* Any other failure of a file operation; the message says what. */
#define SBX_ERROR_FILE_ERROR            "org.sandboxd1.Error.FileError"
/* Worker.SetEgress: an EgressAllow entry reaches past the operator's Egress:Floor. */
#define SBX_ERROR_EGRESS_OUTSIDE_FLOOR  "org.sandboxd1.Error.EgressOutsideFloor"
