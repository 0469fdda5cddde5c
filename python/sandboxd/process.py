# SPDX-License-Identifier: LGPL-2.1-or-later
"""A process started in a worker (``Worker.Exec``): write to it, read its
output, signal it, wait for it."""

from __future__ import annotations

import os
import selectors
import signal as _signal
import time
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

from . import errors
from ._spec import Command, Duration, command_argv, duration_usec, environment_list

if TYPE_CHECKING:
    from .client import Result, Worker

PROCESS_IFACE = "org.sandboxd1.Process"

#: The worker properties :meth:`Worker.metrics` reads.
METRIC_PROPERTIES: Tuple[str, ...] = (
    "CPUUsageNSec", "MemoryCurrent", "MemoryPeak", "TasksCurrent", "IOReadBytes",
    "IOWriteBytes", "EgressBytesSent", "EgressBytesReceived", "EgressConnections", "OOMKills",
)

_CHUNK = 65536


def _raw(fd: Any) -> int:
    """A raw fd from what jeepney hands over (a FileDescriptor), owned by us."""
    if hasattr(fd, "to_raw_fd"):
        return int(fd.to_raw_fd())
    return int(fd)


def exec_options(*, env: Optional[Mapping[str, str]] = None, cwd: Optional[str] = None,
                 tty: bool = False, tty_size: Optional[Sequence[int]] = None,
                 timeout: Optional[Duration] = None) -> Dict[str, Tuple[str, Any]]:
    """Exec's ``a{sv}`` options from the library's arguments."""
    opts: Dict[str, Tuple[str, Any]] = {}
    if env:
        opts["Environment"] = ("as", environment_list(env))
    if cwd is not None:
        opts["WorkingDirectory"] = ("s", cwd)
    if tty:
        opts["Tty"] = ("b", True)
        if tty_size is not None:
            rows, cols = (int(x) for x in tty_size)
            opts["TtySize"] = ("(qq)", (rows, cols))
    elif tty_size is not None:
        raise ValueError("tty_size needs tty=True")
    if timeout is not None:
        opts["TimeoutUSec"] = ("t", duration_usec(timeout))
    return opts


def start_process(worker: "Worker", cmd: Command, **kw: Any) -> "Process":
    """``Worker.Exec(as argv, a{sv} options) -> (o process, ah stdio)``:
    starts ``cmd`` and returns its :class:`Process` once it runs."""
    argv = command_argv(cmd)
    opts = exec_options(**kw)
    worker._require("Exec")
    path, stdio = worker._call("Exec", "asa{sv}", (argv, opts))
    return Process(worker, str(path), [_raw(x) for x in stdio], tty=bool(kw.get("tty")))


class Process:
    """A process in a worker.

    Without a terminal it has three pipes: :meth:`write` feeds its standard
    input (:meth:`close_stdin` ends it), iterating yields ``(stream,
    bytes)`` with stream ``"stdout"`` or ``"stderr"`` as output comes, and
    :meth:`wait` returns its exit code. With ``tty=True`` there is one
    terminal: what it prints comes as ``"stdout"``, :meth:`resize` changes
    its size. A context manager: leaving it kills a process still running.
    """

    def __init__(self, worker: "Worker", path: str, fds: List[int], *, tty: bool) -> None:
        self.worker = worker
        self.path = path
        self.tty = tty
        self.exit_code: Optional[int] = None
        if tty:
            if len(fds) != 1:
                raise errors.SandboxdError(f"Exec with a terminal returned {len(fds)} fds, not 1")
            self._stdin: Optional[int] = fds[0]
            self._out: Dict[int, str] = {os.dup(fds[0]): "stdout"}
        else:
            if len(fds) != 3:
                raise errors.SandboxdError(f"Exec returned {len(fds)} fds, not 3")
            self._stdin = fds[0]
            self._out = {fds[1]: "stdout", fds[2]: "stderr"}

    # ---- input --------------------------------------------------------

    def write(self, data: bytes) -> None:
        """Writes all of ``data`` to the process's standard input (terminal)."""
        if self._stdin is None:
            raise ValueError("standard input is closed")
        view = memoryview(data)
        while view:
            n = os.write(self._stdin, view)
            view = view[n:]

    def close_stdin(self) -> None:
        """End of file on the process's standard input (not with a terminal:
        there, write ``b"\\x04"``)."""
        if self._stdin is not None and not self.tty:
            os.close(self._stdin)
            self._stdin = None

    # ---- output -------------------------------------------------------

    def __iter__(self) -> Iterator[Tuple[str, bytes]]:
        return self.output()

    def output(self, timeout: Optional[float] = None) -> Iterator[Tuple[str, bytes]]:
        """Yields ``(stream, bytes)`` until every output stream has ended.

        Past ``timeout`` seconds without the end, raises ProcessTimeout
        (the process runs on).
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        with selectors.DefaultSelector() as sel:
            for fd in self._out:
                sel.register(fd, selectors.EVENT_READ)
            while self._out:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise errors.ProcessTimeout(f"no end of output within {timeout} s")
                for key, _ in sel.select(left):
                    fd = int(key.fd)
                    try:
                        data = os.read(fd, _CHUNK)
                    except OSError:  # EIO: a terminal whose other side is gone
                        data = b""
                    if data:
                        yield self._out[fd], data
                    else:
                        sel.unregister(fd)
                        os.close(fd)
                        del self._out[fd]

    def communicate(self, input: Optional[bytes] = None,
                    timeout: Optional[Duration] = None) -> "Result":
        """Writes ``input`` (then end of file) while reading all output, and
        waits for the end; a process that stops reading its input early
        only loses the rest of it.

        Past ``timeout`` seconds the process is killed and ProcessTimeout
        raised.
        """
        from .client import Result
        start = time.monotonic()
        bufs: Dict[str, List[bytes]] = {"stdout": [], "stderr": []}
        pending = memoryview(input or b"")
        try:
            if self._stdin is not None and not self.tty:
                os.set_blocking(self._stdin, False)
            while pending and self._stdin is not None:
                left = None if timeout is None else timeout - (time.monotonic() - start)
                if left is not None and left <= 0:
                    raise errors.ProcessTimeout(f"the process did not end within {timeout} s")
                with selectors.DefaultSelector() as sel:
                    sel.register(self._stdin, selectors.EVENT_WRITE, None)
                    for fd, stream in self._out.items():
                        sel.register(fd, selectors.EVENT_READ, stream)
                    for key, _ in sel.select(left):
                        if key.data is None:
                            try:
                                pending = pending[os.write(self._stdin, pending[:_CHUNK]):]
                            except BlockingIOError:
                                pass
                            except BrokenPipeError:
                                pending = pending[:0]
                        else:
                            self._read_one(int(key.fd), bufs)
            self.close_stdin()
            left = None if timeout is None else max(0.0, timeout - (time.monotonic() - start))
            for stream, data in self.output(timeout=left):
                bufs[stream].append(data)
            left = None if timeout is None else max(0.0, timeout - (time.monotonic() - start))
            code = self.wait(timeout=left)
        except errors.ProcessTimeout:
            self.kill()
            raise
        return Result(b"".join(bufs["stdout"]), b"".join(bufs["stderr"]), code)

    def _read_one(self, fd: int, bufs: Dict[str, List[bytes]]) -> None:
        try:
            data = os.read(fd, _CHUNK)
        except OSError:
            data = b""
        if data:
            bufs[self._out[fd]].append(data)
        else:
            os.close(fd)
            del self._out[fd]

    # ---- its life -----------------------------------------------------

    def _props(self) -> Dict[str, Any]:
        return self.worker.bus.get_all(self.path, PROCESS_IFACE)

    def poll(self) -> Optional[int]:
        """The exit code (128 + N for signal N) once it ended, else None."""
        if self.exit_code is not None:
            return self.exit_code
        try:
            props = self._props()
        except errors.NoSuchWorker:
            raise errors.NotRunning("the process object is gone before its end was read")
        code = _exit_code(props)
        if code is not None:
            self.exit_code = code
        return code

    def wait(self, timeout: Optional[Duration] = None) -> int:
        """Waits until the process has ended; returns its exit code."""
        deadline = None if timeout is None else time.monotonic() + timeout
        delay = 0.01
        while True:
            code = self.poll()
            if code is not None:
                return code
            if deadline is not None and time.monotonic() >= deadline:
                raise errors.ProcessTimeout(f"the process did not end within {timeout} s")
            time.sleep(delay)
            delay = min(delay * 2, 0.2)

    def signal(self, sig: int) -> None:
        """Sends signal ``sig`` (``signal.SIGTERM``...) to the process."""
        self.worker.bus.call(self.path, PROCESS_IFACE, "Signal", "i", (int(sig),))

    def kill(self) -> None:
        """SIGKILL, unless it ended already."""
        try:
            if self.exit_code is None:
                self.signal(_signal.SIGKILL)
        except errors.SandboxdError:
            pass

    def resize(self, rows: int, cols: int) -> None:
        """The terminal's new size (``tty=True`` only)."""
        if not self.tty:
            raise ValueError("resize needs a process started with tty=True")
        self.worker.bus.call(self.path, PROCESS_IFACE, "ResizeTty", "qq", (rows, cols))

    def close(self) -> None:
        """Closes this side's fds (the process sees end of file and a hang-up)."""
        if self._stdin is not None:
            os.close(self._stdin)
            self._stdin = None
        for fd in list(self._out):
            os.close(fd)
        self._out.clear()

    def __enter__(self) -> "Process":
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.exit_code is None:
            self.kill()
        self.close()


def _exit_code(props: Mapping[str, Any]) -> Optional[int]:
    """The exit code from an org.sandboxd1.Process's properties (its
    ExitStatus is 128 + N for signal N already), None until it exited."""
    if props.get("State") != "exited":
        return None
    return int(props.get("ExitStatus", -1))
