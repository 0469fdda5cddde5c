# SPDX-License-Identifier: LGPL-2.1-or-later
"""Files in a worker's home (``Worker.OpenFile``, ``ListDirectory``, ...).

The bus carries a file descriptor, never the bytes: sandboxd opens the file
as the worker (its UID, its view, nothing followed out of the home) and
hands over one end; this side copies through it in chunks, so a large file
never sits in memory whole. Paths are relative to the home, or absolute
inside it as the worker sees it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, BinaryIO, Dict, List, Optional, Union

from . import errors

if TYPE_CHECKING:
    from .client import Worker

_CHUNK = 1 << 20
PathLike = Union[str, "os.PathLike[str]"]


@dataclass(frozen=True)
class FileInfo:
    """One entry of :meth:`Files.list`."""

    name: str
    type: str          # "file", "directory", "symlink", ...
    size: int
    mode: int          # permission bits
    mtime_usec: int


class Files:
    """``w.files``: read, write, list, remove, upload, download."""

    def __init__(self, worker: "Worker") -> None:
        self._w = worker

    def _open(self, path: str, mode: str, options: Optional[Dict[str, Any]] = None) -> BinaryIO:
        self._w._require("OpenFile")
        reply = self._w._call("OpenFile", "ssa{sv}", (path, mode, options or {}))
        fd = reply[0]
        f: BinaryIO = fd.to_file("rb" if mode == "r" else "wb", buffering=0)
        return f

    def open_read(self, path: str) -> BinaryIO:
        """A file object reading ``path`` in the worker."""
        return self._open(path, "r")

    def open_write(self, path: str, *, append: bool = False) -> BinaryIO:
        """A file object writing ``path`` in the worker (created, truncated)."""
        return self._open(path, "a" if append else "w")

    def read(self, path: str) -> bytes:
        """The whole file's bytes."""
        with self.open_read(path) as f:
            chunks: List[bytes] = []
            while True:
                b = f.read(_CHUNK)
                if not b:
                    return b"".join(chunks)
                chunks.append(b)

    def read_text(self, path: str, encoding: str = "utf-8") -> str:
        """The whole file as text."""
        return self.read(path).decode(encoding)

    def write(self, path: str, data: Union[bytes, str]) -> None:
        """Writes ``data`` (str as UTF-8) to ``path``, created or truncated."""
        if isinstance(data, str):
            data = data.encode()
        with self.open_write(path) as f:
            view = memoryview(data)
            while view:
                n = f.write(view[:_CHUNK])
                view = view[n:]

    def list(self, path: str = ".") -> List[FileInfo]:
        """The entries of a directory."""
        self._w._require("ListDirectory")
        (rows,) = self._w._call("ListDirectory", "s", (path,))
        return [FileInfo(str(r[0]), str(r[1]), int(r[2]), int(r[3]), int(r[4])) for r in rows]

    def remove(self, path: str) -> None:
        """Removes a file (or an empty directory)."""
        self._w._require("Remove")
        self._w._call("Remove", "s", (path,))

    def upload(self, local: PathLike, remote: str) -> int:
        """Copies a local file into the worker; returns the bytes copied."""
        with open(local, "rb") as src, self.open_write(remote) as dst:
            return _copy(src, dst)

    def download(self, remote: str, local: PathLike) -> int:
        """Copies a file of the worker to a local path; returns the bytes."""
        with self.open_read(remote) as src, open(local, "wb") as dst:
            return _copy(src, dst)


def _copy(src: BinaryIO, dst: BinaryIO) -> int:
    total = 0
    while True:
        b = src.read(_CHUNK)
        if not b:
            return total
        view = memoryview(b)
        while view:
            n = dst.write(view)
            if n is None:
                raise errors.SandboxdError("the worker's side would block")
            view = view[n:]
            total += n


__all__ = ["Files", "FileInfo"]
