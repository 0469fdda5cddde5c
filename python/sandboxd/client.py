# SPDX-License-Identifier: LGPL-2.1-or-later
"""Workers: create, attach, list, and everything one can do with a worker."""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

from . import errors
from ._bus import DEFAULT_TIMEOUT, WORKER_IFACE, Bus
from ._spec import Command, Duration, Size, build_spec, egress_policy

#: The states of a worker that are over: nothing more happens to it.
ENDED = "ended"
#: A metric sandboxd cannot read on this host.
_UNKNOWN = 0xFFFFFFFFFFFFFFFF


@dataclass(frozen=True)
class Result:
    """What :meth:`Worker.run` returns: the output and the exit code.

    ``exit_code`` is the process's exit status, or 128 + N when signal N
    ended it (as a shell says).
    """

    stdout: bytes
    stderr: bytes
    exit_code: int

    @property
    def ok(self) -> bool:
        """Whether the command exited with status 0."""
        return self.exit_code == 0

    @property
    def text(self) -> str:
        """stdout decoded as UTF-8 (bytes that are not become U+FFFD)."""
        return self.stdout.decode("utf-8", "replace")


@dataclass(frozen=True)
class WorkerInfo:
    """One worker as ``ListWorkersEx`` describes it (see org.sandboxd1(5))."""

    id: str
    cls: str
    state: str
    owner: int
    uid: Optional[int]
    created_usec: int
    result: str = ""
    exit_status: int = -1
    path: Optional[str] = None
    requested_class: str = ""
    unit: str = ""
    extra: Dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "WorkerInfo":
        """From ListWorkersEx's dictionary (variants already unwrapped)."""
        known = {"Id", "Class", "State", "Owner", "UID", "CreatedUSec", "Result",
                 "ExitStatus", "Path", "RequestedClass", "Unit"}
        uid: Any = d.get("UID")
        uid_known = uid is not None and int(uid) != 0xFFFFFFFF
        return cls(id=d.get("Id", ""), cls=d.get("Class", ""), state=d.get("State", ""),
                   owner=int(d.get("Owner", 0)),
                   uid=int(uid) if uid_known else None,
                   created_usec=int(d.get("CreatedUSec", 0)), result=d.get("Result", ""),
                   exit_status=int(d.get("ExitStatus", -1)), path=d.get("Path"),
                   requested_class=d.get("RequestedClass", ""), unit=d.get("Unit", ""),
                   extra={k: v for k, v in d.items() if k not in known})


@dataclass(frozen=True)
class LogEntry:
    """One entry of a worker's journal (``ReadWorkerLog``).

    ``source`` is ``sandboxd``, ``launcher`` or ``egress``; ``priority``
    syslog's 0-7; ``event`` sandboxd's or the proxy's event name, or empty.
    """

    timestamp_usec: int
    source: str
    priority: int
    event: str
    message: str


def _unwrap(d: Mapping[str, Any]) -> Dict[str, Any]:
    return {k: (v[1] if isinstance(v, tuple) and len(v) == 2 else v) for k, v in d.items()}


def workers(*, all: bool = False, bus: Optional[Bus] = None) -> List[WorkerInfo]:
    """The workers the caller may see: its own, or everyone's to root and to
    holders of ``org.sandboxd1.manage-workers``.

    ``all=True`` adds the ended workers sandboxd still remembers.
    """
    own = bus is None
    b = bus or Bus()
    try:
        opts: Dict[str, Any] = {}
        if all:
            opts["States"] = ("as", ["starting", "running", "stopping", "ended"])
        (rows,) = b.manager("ListWorkersEx", "a{sv}", (opts,))
        return [WorkerInfo.from_dict(_unwrap(r)) for r in rows]
    finally:
        if own:
            b.close()


class Worker:
    """A sandboxd worker, as a context manager that stops it on leaving.

    ::

        with sandboxd.Worker(cls="standard", allow=["pypi.org"], memory="512M") as w:
            print(w.run("python3 -c 'print(6*7)'").stdout)

    Arguments (all optional; what is left out is sandboxd.conf's default):

    ``cls``: the isolation class (``trusted``, ``standard``, ``devcontainer``,
    ``untrusted``, ``hostile``, ``wasm``); refused with
    :class:`~sandboxd.errors.IsolationUnavailable` when this host cannot
    serve it, never downgraded. ``allow``: egress host patterns. ``memory``:
    MemoryMax, bytes or a size string (``"512M"``). ``credentials``: name to
    secret (str or bytes), files in ``$CREDENTIALS_DIRECTORY``. ``services``:
    the credential broker's upstreams, name to settings (``{"url": ...,
    "credential": ...}``). ``workspace``: a workspace's name as the home.
    ``idle``: seconds without activity after which the worker is stopped.
    ``argv``: the worker's main process, by default one that waits
    (``sleep infinity``) so commands run beside it with :meth:`run`; its
    standard input and output are :meth:`channel`. ``env``, ``origin``,
    ``tasks``, ``cpu_percent``, ``runtime`` (seconds), ``disk``,
    ``idle_action``, ``egress_rate``, ``egress_mode``: the spec's other keys.

    The call returns once the worker runs. ``bus``: a :class:`Bus` to share
    (otherwise the worker opens its own connection and closes it when it is
    closed); ``interactive``: let polkit ask for a password.
    """

    def __init__(
        self,
        cls: Optional[str] = None,
        allow: Optional[Iterable[str]] = None,
        memory: Optional[Size] = None,
        credentials: Optional[Mapping[str, Union[str, bytes]]] = None,
        services: Optional[Mapping[str, Mapping[str, Any]]] = None,
        workspace: Optional[str] = None,
        idle: Optional[Duration] = None,
        *,
        argv: Optional[Command] = None,
        env: Optional[Mapping[str, str]] = None,
        origin: Optional[str] = None,
        tasks: Optional[int] = None,
        cpu_percent: Optional[int] = None,
        runtime: Optional[Duration] = None,
        disk: Optional[Size] = None,
        idle_action: Optional[str] = None,
        egress_rate: Optional[Size] = None,
        egress_mode: Optional[str] = None,
        bus: Optional[Bus] = None,
        interactive: bool = False,
        timeout: Optional[float] = DEFAULT_TIMEOUT,
    ) -> None:
        spec = build_spec(argv=argv, cls=cls, allow=allow, memory=memory,
                          credentials=credentials, services=services, workspace=workspace,
                          idle=idle, env=env, origin=origin, tasks=tasks,
                          cpu_percent=cpu_percent, runtime=runtime, disk=disk,
                          idle_action=idle_action, egress_rate=egress_rate,
                          egress_mode=egress_mode)
        self._own_bus = bus is None
        self._bus = bus or Bus(interactive=interactive)
        try:
            wid, path = self._bus.manager("CreateWorker", "a{sv}", (spec,), timeout=timeout)
        except BaseException:
            self._close_bus()
            raise
        self._init(str(wid), str(path), stop_on_exit=True)

    def _init(self, wid: str, path: str, *, stop_on_exit: bool) -> None:
        self.id: str = wid
        self.path: str = path
        self.stop_on_exit = stop_on_exit
        from .files import Files
        self.files: Files = Files(self)

    @classmethod
    def attach(klass, worker_id: str, *, bus: Optional[Bus] = None,  # noqa: N804 (cls= is an argument)
               stop_on_exit: bool = False, interactive: bool = False) -> "Worker":
        """A worker that exists already, by its ID.

        Leaving its ``with`` block does not stop it unless ``stop_on_exit``.
        :class:`~sandboxd.errors.NoSuchWorker` when there is none the caller
        may see.
        """
        self = klass.__new__(klass)
        self._own_bus = bus is None
        self._bus = bus or Bus(interactive=interactive)
        try:
            (path,) = self._bus.manager("GetWorker", "s", (worker_id,))
        except BaseException:
            self._close_bus()
            raise
        self._init(worker_id, str(path), stop_on_exit=stop_on_exit)
        return self

    # ---- the context manager ------------------------------------------

    def __enter__(self) -> "Worker":
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            if self.stop_on_exit:
                try:
                    self.stop()
                except (errors.NoSuchWorker, errors.NotRunning):
                    pass
        finally:
            self.close()

    def close(self) -> None:
        """Closes this client's connection; the worker itself runs on."""
        self._close_bus()

    def _close_bus(self) -> None:
        if getattr(self, "_own_bus", False):
            self._bus.close()

    def __repr__(self) -> str:
        return f"<sandboxd.Worker {self.id}>"

    # ---- calls on the worker object -----------------------------------

    @property
    def bus(self) -> Bus:
        """The connection this worker's calls use."""
        return self._bus

    def _call(self, member: str, signature: Optional[str] = None,
              body: Sequence[Any] = (), **kw: Any) -> Any:
        return self._bus.call(self.path, WORKER_IFACE, member, signature, body, **kw)

    def _require(self, member: str) -> None:
        self._bus.require(self.path, WORKER_IFACE, member)

    def get(self, name: str) -> Any:
        """One of the worker's properties (org.sandboxd1(5))."""
        return self._bus.get_property(self.path, WORKER_IFACE, name)

    def info(self) -> Dict[str, Any]:
        """Every property of the worker, by name."""
        return self._bus.get_all(self.path, WORKER_IFACE)

    @property
    def state(self) -> str:
        """``starting``, ``running``, ``stopping``, ``ended``, ``suspending``,
        ``suspended`` or ``resuming``."""
        return str(self.get("State"))

    @property
    def cls(self) -> str:
        """The effective class (an origin's floor may have raised it)."""
        return str(self.get("Class"))

    def channel(self) -> socket.socket:
        """The main process's standard input and output (and error, merged)
        as a socket; ``shutdown(SHUT_WR)`` is end of file on its input.

        One client at a time (:class:`~sandboxd.errors.ChannelBusy`); a
        suspended worker is resumed first.
        """
        (fd,) = self._call("OpenChannel")
        sock: socket.socket = fd.to_socket()
        return sock

    def suspend(self) -> None:
        """Checkpoints the worker (gVisor classes) and frees its memory."""
        self._call("Suspend", timeout=None)

    def resume(self) -> None:
        """Restores a suspended worker; returns once it runs."""
        self._call("Resume", timeout=None)

    def stop(self, *, wait: bool = True, timeout: float = 60.0) -> None:
        """Stops the worker; with ``wait``, returns once it has ended."""
        self._call("Stop")
        if not wait:
            return
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if self.state == ENDED:
                    return
            except errors.NoSuchWorker:
                return
            time.sleep(0.1)
        raise TimeoutError(f"worker {self.id} did not end within {timeout} s")

    def logs(self, *, egress: bool = False, after: str = "",
             max_entries: int = 1000) -> List[LogEntry]:
        """The worker's journal entries, oldest first (sandboxd's, the
        launcher's, and with ``egress`` its proxy's decisions).

        Reads until the journal has nothing more (``after``: a cursor to
        start after; :attr:`last_log_cursor` is the one to continue from).
        """
        out: List[LogEntry] = []
        cursor = after
        while True:
            entries, nxt = self._bus.manager("ReadWorkerLog", "ssbu",
                                             (self.id, cursor, egress, max_entries))
            out.extend(LogEntry(int(t), s, int(p), e, m) for t, s, p, e, m in entries)
            if not entries or nxt == cursor:
                self.last_log_cursor = nxt
                return out
            cursor = nxt

    last_log_cursor: str = ""

    # ---- processes, files, metrics, egress (org.sandboxd1.Worker's newer methods)

    def exec(self, cmd: Command, *, env: Optional[Mapping[str, str]] = None,
             cwd: Optional[str] = None, tty: bool = False, tty_size: Optional[Sequence[int]] = None,
             timeout: Optional[Duration] = None) -> "Process":
        """Starts another process in the worker and returns it.

        A list runs as its argv, a string through ``/bin/sh -c`` in the
        worker. ``env`` adds environment variables (delivered as secrets
        are), ``cwd`` is inside the home, ``tty`` gives it a terminal of
        ``tty_size`` (rows, columns), ``timeout`` seconds bound its life.
        """
        from .process import start_process
        return start_process(self, cmd, env=env, cwd=cwd, tty=tty, tty_size=tty_size,
                             timeout=timeout)

    def run(self, cmd: Command, *, timeout: Optional[Duration] = None,
            env: Optional[Mapping[str, str]] = None, cwd: Optional[str] = None,
            input: Optional[bytes] = None) -> Result:
        """Runs a command in the worker to its end and returns its output.

        A list runs as its argv; a string runs through ``/bin/sh -c`` in the
        worker (as E2B's ``commands.run``). ``input`` is its standard input.
        Past ``timeout`` seconds the process is killed and
        :class:`~sandboxd.errors.ProcessTimeout` raised.
        """
        with self.exec(cmd, env=env, cwd=cwd, timeout=timeout) as p:
            return p.communicate(input, timeout=timeout)

    def metrics(self) -> Dict[str, Optional[int]]:
        """The worker's live metrics, by property name: ``CPUUsageNSec``,
        ``MemoryCurrent``, ``MemoryPeak``, ``TasksCurrent``, ``IOReadBytes``,
        ``IOWriteBytes``, ``OOMKills``, ``EgressBytesSent``,
        ``EgressBytesReceived``, ``EgressConnections`` (org.sandboxd1(5)
        says what each counts; a gVisor worker's include its sentry). None
        where this host cannot tell (sandboxd's UINT64_MAX)."""
        from .process import METRIC_PROPERTIES
        self._require(METRIC_PROPERTIES[0])
        allp = self.info()
        return {m: (None if int(allp[m]) == _UNKNOWN else int(allp[m]))
                for m in METRIC_PROPERTIES if m in allp}

    def set_egress(self, allow: Optional[Iterable[str]] = None, *, rate: Optional[Size] = None,
                   mode: Optional[str] = None) -> None:
        """Replaces the worker's egress policy while it runs (within the
        operator's floor): hosts no longer allowed are cut off."""
        policy = egress_policy(allow, rate, mode)
        self._require("SetEgress")
        self._call("SetEgress", "a{sv}", (policy,))


from .process import Process  # noqa: E402  (Process refers to Worker)
