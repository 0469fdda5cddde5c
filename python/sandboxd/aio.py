# SPDX-License-Identifier: LGPL-2.1-or-later
"""The asyncio twin of :mod:`sandboxd`: the same calls, awaited.

::

    async with sandboxd.aio.Worker(cls="standard") as w:
        r = await w.run(["python3", "-c", "print(6*7)"])
        async with await w.exec("cat", tty=False) as p:
            await p.write(b"hello")
            await p.close_stdin()
            async for stream, data in p:
                ...

Bus calls run on a thread of the default executor, each waiting for its own
reply on the worker's connection (jeepney's threading router), because
jeepney 0.8's asyncio transport cannot pass file descriptors; the event
loop itself never blocks. A process's output is read on the loop
(``add_reader``), not on a thread.
"""

from __future__ import annotations

import asyncio
import functools
import os
from typing import Any, AsyncIterator, Callable, Dict, Iterable, List, Optional, Tuple, TypeVar

from . import client, errors
from ._bus import Bus
from .client import LogEntry, Result, WorkerInfo
from .files import FileInfo
from ._spec import Command
from .process import Process

T = TypeVar("T")

__all__ = ["Worker", "Process", "Files", "workers", "Result", "WorkerInfo", "LogEntry"]


async def _thread(fn: Callable[..., T], *args: Any, **kw: Any) -> T:
    return await asyncio.get_running_loop().run_in_executor(
        None, functools.partial(fn, *args, **kw))


async def workers(*, all: bool = False, bus: Optional[Bus] = None) -> List[WorkerInfo]:
    """As :func:`sandboxd.workers`."""
    return await _thread(client.workers, all=all, bus=bus)


class Worker:
    """As :class:`sandboxd.Worker`, with every call a coroutine.

    ``async with Worker(...) as w`` creates the worker on entering and stops
    it on leaving; ``await Worker.create(...)`` and ``await
    Worker.attach(id)`` give one without the block.
    """

    def __init__(self, *args: Any, **kw: Any) -> None:
        self._args, self._kw = args, kw
        self._sync: Optional[client.Worker] = None

    @classmethod
    async def create(klass, *args: Any, **kw: Any) -> "Worker":  # noqa: N804 (cls= is an argument)
        """Creates the worker; returns once it runs."""
        self = klass(*args, **kw)
        self._sync = await _thread(client.Worker, *args, **kw)
        return self

    @classmethod
    async def attach(klass, worker_id: str, **kw: Any) -> "Worker":  # noqa: N804
        """As :meth:`sandboxd.Worker.attach`."""
        self = klass()
        self._sync = await _thread(client.Worker.attach, worker_id, **kw)
        return self

    @property
    def sync(self) -> client.Worker:
        """The blocking :class:`sandboxd.Worker` underneath."""
        if self._sync is None:
            raise RuntimeError("the worker is not created yet: use 'async with' or create()")
        return self._sync

    @property
    def id(self) -> str:
        """The worker's ID."""
        return self.sync.id

    @property
    def files(self) -> "Files":
        """As :attr:`sandboxd.Worker.files`, awaited."""
        return Files(self.sync)

    async def __aenter__(self) -> "Worker":
        if self._sync is None:
            self._sync = await _thread(client.Worker, *self._args, **self._kw)
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await _thread(self.sync.__exit__, *exc)

    async def close(self) -> None:
        """Closes the connection; the worker runs on."""
        await _thread(self.sync.close)

    async def state(self) -> str:
        """The worker's State."""
        return await _thread(lambda: self.sync.state)

    async def info(self) -> Dict[str, Any]:
        """Every property of the worker."""
        return await _thread(self.sync.info)

    async def channel(self) -> Tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """The main process's stdio as asyncio streams."""
        sock = await _thread(self.sync.channel)
        return await asyncio.open_unix_connection(sock=sock)

    async def run(self, cmd: Command, *, timeout: Optional[float] = None,
                  env: Optional[Dict[str, str]] = None, cwd: Optional[str] = None,
                  input: Optional[bytes] = None) -> Result:
        """As :meth:`sandboxd.Worker.run`."""
        async with await self.exec(cmd, env=env, cwd=cwd, timeout=timeout) as p:
            return await p.communicate(input, timeout=timeout)

    async def exec(self, cmd: Command, **kw: Any) -> "AsyncProcess":
        """As :meth:`sandboxd.Worker.exec`; the process's I/O runs on the loop."""
        p = await _thread(self.sync.exec, cmd, **kw)
        return AsyncProcess(p)

    async def suspend(self) -> None:
        """As :meth:`sandboxd.Worker.suspend`."""
        await _thread(self.sync.suspend)

    async def resume(self) -> None:
        """As :meth:`sandboxd.Worker.resume`."""
        await _thread(self.sync.resume)

    async def stop(self, **kw: Any) -> None:
        """As :meth:`sandboxd.Worker.stop`."""
        await _thread(self.sync.stop, **kw)

    async def logs(self, **kw: Any) -> List[LogEntry]:
        """As :meth:`sandboxd.Worker.logs`."""
        return await _thread(self.sync.logs, **kw)

    async def metrics(self) -> Dict[str, Optional[int]]:
        """As :meth:`sandboxd.Worker.metrics`."""
        return await _thread(self.sync.metrics)

    async def set_egress(self, allow: Optional[Iterable[str]] = None, **kw: Any) -> None:
        """As :meth:`sandboxd.Worker.set_egress`."""
        await _thread(self.sync.set_egress, allow, **kw)


class AsyncProcess:
    """As :class:`sandboxd.process.Process`, its I/O on the event loop."""

    def __init__(self, p: Process) -> None:
        self.sync = p
        for fd in list(p._out) + ([p._stdin] if p._stdin is not None else []):
            os.set_blocking(fd, False)

    async def __aenter__(self) -> "AsyncProcess":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await _thread(self.sync.__exit__, *exc)

    async def _ready(self, fd: int, write: bool) -> None:
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        add, remove = ((loop.add_writer, loop.remove_writer) if write
                       else (loop.add_reader, loop.remove_reader))

        def done() -> None:
            if not fut.done():
                fut.set_result(None)
        add(fd, done)
        try:
            await fut
        finally:
            remove(fd)

    async def write(self, data: bytes) -> None:
        """Writes all of ``data`` to the standard input (terminal)."""
        fd = self.sync._stdin
        if fd is None:
            raise ValueError("standard input is closed")
        view = memoryview(data)
        while view:
            try:
                n = os.write(fd, view)
            except BlockingIOError:
                await self._ready(fd, True)
                continue
            view = view[n:]

    async def close_stdin(self) -> None:
        """End of file on the standard input."""
        self.sync.close_stdin()

    def __aiter__(self) -> AsyncIterator[Tuple[str, bytes]]:
        return self.output()

    async def output(self) -> AsyncIterator[Tuple[str, bytes]]:
        """Yields ``(stream, bytes)`` until every output stream has ended."""
        out = self.sync._out
        loop = asyncio.get_running_loop()
        queue: "asyncio.Queue[Tuple[int, bytes]]" = asyncio.Queue()

        def readable(fd: int) -> None:
            try:
                data = os.read(fd, 65536)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if not data:
                loop.remove_reader(fd)
            queue.put_nowait((fd, data))

        for fd in out:
            loop.add_reader(fd, readable, fd)
        try:
            while out:
                fd, data = await queue.get()
                if data:
                    yield out[fd], data
                else:
                    os.close(fd)
                    del out[fd]
        finally:
            for fd in out:
                loop.remove_reader(fd)

    async def communicate(self, input: Optional[bytes] = None,
                          timeout: Optional[float] = None) -> Result:
        """As :meth:`sandboxd.process.Process.communicate`."""
        async def body() -> Result:
            if input:
                await self.write(input)
            await self.close_stdin()
            bufs: Dict[str, List[bytes]] = {"stdout": [], "stderr": []}
            async for stream, data in self.output():
                bufs[stream].append(data)
            code = await self.wait()
            return Result(b"".join(bufs["stdout"]), b"".join(bufs["stderr"]), code)
        try:
            return await asyncio.wait_for(body(), timeout)
        except asyncio.TimeoutError:
            await self.kill()
            raise errors.ProcessTimeout(f"the process did not end within {timeout} s") from None

    async def wait(self, timeout: Optional[float] = None) -> int:
        """Waits for the end; returns the exit code."""
        return await _thread(self.sync.wait, timeout)

    async def signal(self, sig: int) -> None:
        """Sends ``sig`` to the process."""
        await _thread(self.sync.signal, sig)

    async def kill(self) -> None:
        """SIGKILL unless it ended."""
        await _thread(self.sync.kill)

    async def resize(self, rows: int, cols: int) -> None:
        """The terminal's new size."""
        await _thread(self.sync.resize, rows, cols)


class Files:
    """As :class:`sandboxd.files.Files`, awaited (copies run on a thread)."""

    def __init__(self, worker: client.Worker) -> None:
        self._f = worker.files

    async def read(self, path: str) -> bytes:
        """The whole file."""
        return await _thread(self._f.read, path)

    async def write(self, path: str, data: Any) -> None:
        """Writes the file."""
        await _thread(self._f.write, path, data)

    async def list(self, path: str = ".") -> List[FileInfo]:
        """A directory's entries."""
        return await _thread(self._f.list, path)

    async def remove(self, path: str) -> None:
        """Removes a file."""
        await _thread(self._f.remove, path)

    async def upload(self, local: Any, remote: str) -> int:
        """Copies a local file in."""
        return await _thread(self._f.upload, local, remote)

    async def download(self, remote: str, local: Any) -> int:
        """Copies a file out."""
        return await _thread(self._f.download, remote, local)
