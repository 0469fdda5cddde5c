# SPDX-License-Identifier: LGPL-2.1-or-later
"""Exceptions of the sandboxd library, one per ``org.sandboxd1.Error.*`` name.

Every error sandboxd can answer (daemon/shared/errors.h, the API's list) has
a class here named after it: ``org.sandboxd1.Error.IsolationUnavailable`` is
raised as :class:`IsolationUnavailable`, and so on. All derive from
:class:`SandboxdError`, which carries the D-Bus error name and sandboxd's
message. The build checks this module against errors.h in both directions
(tests/python/test_unit.py), so a name added to the daemon without a class
here, or a class here the daemon never answers, fails the unit tests.

A D-Bus error of another name maps to the nearest meaning: the bus's
``AccessDenied`` to :class:`AccessDenied`, ``InteractiveAuthorizationRequired``
to :class:`InteractiveAuthorizationRequired` (an :class:`AccessDenied`),
``UnknownObject`` (a worker object the caller may not see, or that left the
bus) to :class:`NoSuchWorker`, and sandboxd not on the bus to
:class:`DaemonUnavailable`. Anything else is a plain :class:`SandboxdError`
whose ``name`` says what it was.
"""

from __future__ import annotations

from typing import Dict, Optional, Type

ERROR_PREFIX = "org.sandboxd1.Error."


class SandboxdError(Exception):
    """A call to sandboxd failed.

    ``name`` is the D-Bus error name (``org.sandboxd1.Error.StartFailed``),
    ``message`` sandboxd's text for it.
    """

    #: The D-Bus error name this class stands for (None: no single name).
    dbus_name: Optional[str] = None

    def __init__(self, message: str = "", name: Optional[str] = None) -> None:
        self.name = name or self.dbus_name or "org.sandboxd1.Error"
        self.message = message
        super().__init__(f"{self.name}: {message}" if message else self.name)


# The spec and the arguments.
class InvalidSpec(SandboxdError):
    """The spec is malformed in a way no more specific error names."""

    dbus_name = ERROR_PREFIX + "InvalidSpec"


class UnknownSpecKey(InvalidSpec):
    """A spec key sandboxd does not know."""

    dbus_name = ERROR_PREFIX + "UnknownSpecKey"


class WrongType(InvalidSpec):
    """A spec value of the wrong D-Bus type."""

    dbus_name = ERROR_PREFIX + "WrongType"


class MissingArgv(InvalidSpec):
    """Argv is missing, empty or its first element unusable."""

    dbus_name = ERROR_PREFIX + "MissingArgv"


class LimitOutOfRange(InvalidSpec):
    """A limit below the minimum or above the configured maximum."""

    dbus_name = ERROR_PREFIX + "LimitOutOfRange"


class UnknownClass(InvalidSpec):
    """No such isolation class."""

    dbus_name = ERROR_PREFIX + "UnknownClass"


class UnknownOrigin(InvalidSpec):
    """No such origin."""

    dbus_name = ERROR_PREFIX + "UnknownOrigin"


class InvalidCredential(InvalidSpec):
    """A bad credential name or value."""

    dbus_name = ERROR_PREFIX + "InvalidCredential"


class InvalidEnvironment(InvalidSpec):
    """A bad environment entry."""

    dbus_name = ERROR_PREFIX + "InvalidEnvironment"


class InvalidEgressRule(InvalidSpec):
    """A bad egress pattern."""

    dbus_name = ERROR_PREFIX + "InvalidEgressRule"


class InvalidService(InvalidSpec):
    """A bad entry of Services."""

    dbus_name = ERROR_PREFIX + "InvalidService"


class InvalidEndpoint(InvalidSpec):
    """A bad Endpoint or NoExec: a port, a size over the operator's maximum, a token, Public where not allowed."""

    dbus_name = ERROR_PREFIX + "InvalidEndpoint"


class EndpointNameTaken(SandboxdError):
    """Another live worker holds the Endpoint Name: names are first come, released when their worker ends."""

    dbus_name = ERROR_PREFIX + "EndpointNameTaken"


class ExecutableNotFound(SandboxdError):
    """A bare command name was found nowhere on the worker's search path."""

    dbus_name = ERROR_PREFIX + "ExecutableNotFound"


class InvalidArgument(SandboxdError):
    """A method argument that is not what it must be (a worker ID, a cursor)."""

    dbus_name = ERROR_PREFIX + "InvalidArgument"


# Admission and the host.
class IsolationUnavailable(SandboxdError):
    """The class cannot be served on this host now; never downgraded."""

    dbus_name = ERROR_PREFIX + "IsolationUnavailable"


class TooManyWorkers(SandboxdError):
    """The host's MaxWorkers workers are alive."""

    dbus_name = ERROR_PREFIX + "TooManyWorkers"


class TooManyRequests(SandboxdError):
    """Too many calls of the caller (or of all callers) are waiting; retry later."""

    dbus_name = ERROR_PREFIX + "TooManyRequests"


class QuotaExceeded(SandboxdError):
    """The caller holds as much as its quota allows."""

    dbus_name = ERROR_PREFIX + "QuotaExceeded"


class InsufficientSpace(SandboxdError):
    """The disk cannot hold what would be promised."""

    dbus_name = ERROR_PREFIX + "InsufficientSpace"


class StartFailed(SandboxdError):
    """The worker's unit could not be started (the message says why)."""

    dbus_name = ERROR_PREFIX + "StartFailed"


class AccessDenied(SandboxdError):
    """Refused: the caller may not do this (polkit, or not the owner)."""

    dbus_name = ERROR_PREFIX + "AccessDenied"


# A worker's life.
class NoSuchWorker(SandboxdError):
    """No worker with that ID, or none the caller may see."""

    dbus_name = ERROR_PREFIX + "NoSuchWorker"


class ChannelBusy(SandboxdError):
    """Another client holds the worker's channel."""

    dbus_name = ERROR_PREFIX + "ChannelBusy"


class NotRunning(SandboxdError):
    """The worker has ended."""

    dbus_name = ERROR_PREFIX + "NotRunning"


class NotSupported(SandboxdError):
    """The worker (or this sandboxd) cannot do what was asked."""

    dbus_name = ERROR_PREFIX + "NotSupported"


class Suspended(SandboxdError):
    """The worker is suspended (or being suspended or resumed)."""

    dbus_name = ERROR_PREFIX + "Suspended"


class SuspendFailed(SandboxdError):
    """The checkpoint failed."""

    dbus_name = ERROR_PREFIX + "SuspendFailed"


class UIDTaken(SandboxdError):
    """A suspended worker's UID is held by someone else; it stays suspended."""

    dbus_name = ERROR_PREFIX + "UIDTaken"


# Processes (Worker.Exec) and files (OpenFile, ListDirectory, ...).
class TooManyProcesses(SandboxdError):
    """The worker runs as many processes started by Exec as it may."""

    dbus_name = ERROR_PREFIX + "TooManyProcesses"


class FileError(SandboxdError):
    """A file operation in the worker failed (the message says what)."""

    dbus_name = ERROR_PREFIX + "FileError"


class FileNotFound(FileError):
    """No such file or directory in the worker's home."""

    dbus_name = ERROR_PREFIX + "FileNotFound"


class FileExists(FileError):
    """The path exists already."""

    dbus_name = ERROR_PREFIX + "FileExists"


class NotADirectory(FileError):
    """A component of the path, or the path, is not a directory."""

    dbus_name = ERROR_PREFIX + "NotADirectory"


class IsADirectory(FileError):
    """The path is a directory where a file was meant."""

    dbus_name = ERROR_PREFIX + "IsADirectory"


class NotRegularFile(FileError):
    """A FIFO, socket or device node at the path: never opened."""

    dbus_name = ERROR_PREFIX + "NotRegularFile"


class PathOutsideHome(FileError):
    """A "..", an absolute path outside the home, or a symlink on the way."""

    dbus_name = ERROR_PREFIX + "PathOutsideHome"


class PermissionDenied(FileError):
    """The worker's own permission checks refused it."""

    dbus_name = ERROR_PREFIX + "PermissionDenied"


class DiskFull(FileError):
    """The worker's disk cap (DiskMax, a workspace's size) is reached."""

    dbus_name = ERROR_PREFIX + "DiskFull"


class DirectoryNotEmpty(FileError):
    """Remove of a directory that is not empty (without recursion)."""

    dbus_name = ERROR_PREFIX + "DirectoryNotEmpty"


class TooManyEntries(FileError):
    """A directory longer than ListDirectory returns."""

    dbus_name = ERROR_PREFIX + "TooManyEntries"


class NoSuchTransfer(FileError):
    """A file transfer handle the caller does not hold."""

    dbus_name = ERROR_PREFIX + "NoSuchTransfer"


# Egress changed while the worker runs (SetEgress).
class EgressOutsideFloor(SandboxdError):
    """An allow-list entry reaches past the operator's egress floor."""

    dbus_name = ERROR_PREFIX + "EgressOutsideFloor"


# Workspaces.
class InvalidWorkspace(SandboxdError):
    """A bad workspace name or setting."""

    dbus_name = ERROR_PREFIX + "InvalidWorkspace"


class WorkspaceExists(SandboxdError):
    """The workspace name is taken."""

    dbus_name = ERROR_PREFIX + "WorkspaceExists"


class NoSuchWorkspace(SandboxdError):
    """No such workspace, or none the caller may see."""

    dbus_name = ERROR_PREFIX + "NoSuchWorkspace"


class WorkspaceBusy(SandboxdError):
    """Another worker has the workspace, or it is still being made."""

    dbus_name = ERROR_PREFIX + "WorkspaceBusy"


# Subscriptions.
class TooManySubscribers(SandboxdError):
    """Too many subscriptions of this user or in all."""

    dbus_name = ERROR_PREFIX + "TooManySubscribers"


class NotSubscribed(SandboxdError):
    """Unsubscribe without a subscription."""

    dbus_name = ERROR_PREFIX + "NotSubscribed"


class InteractiveAuthorizationRequired(AccessDenied):
    """polkit would have asked for a password, and the call did not allow it."""

    dbus_name = "org.freedesktop.DBus.Error.InteractiveAuthorizationRequired"


class DaemonUnavailable(SandboxdError):
    """sandboxd is not on the system bus (not installed, or not running)."""

    dbus_name = "org.freedesktop.DBus.Error.ServiceUnknown"


class ProcessTimeout(SandboxdError):
    """A command run with ``timeout=`` did not end in time (it was killed)."""

    dbus_name = None


#: Every org.sandboxd1.Error.* name and its class.
BY_NAME: Dict[str, Type[SandboxdError]] = {
    cls.dbus_name: cls
    for cls in list(globals().values())
    if isinstance(cls, type) and issubclass(cls, SandboxdError)
    and cls.dbus_name and cls.dbus_name.startswith(ERROR_PREFIX)
}

# Names of the bus itself, mapped to what they mean for a client of sandboxd.
_OTHER: Dict[str, Type[SandboxdError]] = {
    "org.freedesktop.DBus.Error.AccessDenied": AccessDenied,
    "org.freedesktop.DBus.Error.InteractiveAuthorizationRequired": InteractiveAuthorizationRequired,
    # A worker object the caller may not see answers as one that never was.
    "org.freedesktop.DBus.Error.UnknownObject": NoSuchWorker,
    "org.freedesktop.DBus.Error.ServiceUnknown": DaemonUnavailable,
    "org.freedesktop.DBus.Error.NameHasNoOwner": DaemonUnavailable,
}


_NEWER: Dict[str, Type[SandboxdError]] = {}


def from_dbus(name: str, message: str = "") -> SandboxdError:
    """The exception for a D-Bus error reply of ``name`` with ``message``.

    An ``org.sandboxd1.Error.NAME`` this library does not know (a newer
    sandboxd's) still gets a class named NAME, made once, derived from
    :class:`SandboxdError`.
    """
    cls = BY_NAME.get(name) or _OTHER.get(name) or _NEWER.get(name)
    if cls is None and name.startswith(ERROR_PREFIX) and name[len(ERROR_PREFIX):].isidentifier():
        short = name[len(ERROR_PREFIX):]
        cls = type(short, (SandboxdError,), {"dbus_name": name, "__module__": __name__,
                                             "__doc__": f"{name} (a newer sandboxd's error)."})
        _NEWER[name] = cls
    return (cls or SandboxdError)(message, name=name)


def missing_method(interface: str, member: str) -> SandboxdError:
    """NotSupported for a method this sandboxd does not offer (found by introspection)."""
    return NotSupported(
        f"this sandboxd has no {interface}.{member} (an older version than the library's): "
        f"the call that needs it is not available",
        name=ERROR_PREFIX + "NotSupported")


__all__ = ["SandboxdError", "DaemonUnavailable", "InteractiveAuthorizationRequired",
           "ProcessTimeout", "BY_NAME", "from_dbus"] + sorted(
               c.__name__ for c in BY_NAME.values())
