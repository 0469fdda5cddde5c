# SPDX-License-Identifier: LGPL-2.1-or-later
"""sandboxd: run code in sandboxd workers from Python.

::

    import sandboxd

    with sandboxd.Worker(cls="standard", memory="512M", idle=600) as w:
        r = w.run("python3 -c 'print(6*7)'")
        assert r.stdout == b"42\\n"

A worker is a sandboxd worker (a transient unit with its own UID, walls and
caps; org.sandboxd1(5)); this library is a client of sandboxd's D-Bus API on
the system bus and holds no privilege of its own: what a caller may do is
what polkit lets it do. Errors are :mod:`sandboxd.errors`' exceptions, named
after sandboxd's ``org.sandboxd1.Error.*``. :mod:`sandboxd.aio` is the
asyncio twin.
"""

from . import errors
from ._bus import Bus
from ._spec import DEFAULT_ARGV, parse_size
from .client import LogEntry, Result, Worker, WorkerInfo, workers
from .files import FileInfo, Files
from .process import Process

__version__ = "0.1.0"

__all__ = ["Bus", "DEFAULT_ARGV", "FileInfo", "Files", "LogEntry", "Process", "Result",
           "Worker", "WorkerInfo", "errors", "parse_size", "workers", "__version__"]
