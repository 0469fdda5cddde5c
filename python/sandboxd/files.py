# SPDX-License-Identifier: LGPL-2.1-or-later
"""Files in a worker's home: the Worker's OpenFile, CommitFile, AbortFile,
ListDirectory, Stat, MakeDirectory, Remove and Rename (org.sandboxd1(5)).

The bus carries a file descriptor, never the bytes: sandboxd runs its file
helper inside the worker, as the worker (its UID, its view, nothing followed
out of the home, no FIFO or device opened), and hands over one end of a
pipe; this side copies through it in 1 MiB chunks, so a large file never
sits in memory whole. Paths are relative to the home, or absolute inside it
as the worker sees it. Every transfer ends with CommitFile, whose answer is
the helper's verdict (the bytes moved, or the error: DiskFull, ...); a write
is a replace, so the file changes only once all of it arrived.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, BinaryIO, Dict, Iterator, List, Optional, Tuple, Union

from . import errors

if TYPE_CHECKING:
    from .client import Worker

_CHUNK = 1 << 20
PathLike = Union[str, "os.PathLike[str]"]


@dataclass(frozen=True)
class FileInfo:
    """One entry of :meth:`Files.list`, or :meth:`Files.stat`'s answer."""

    name: str
    type: str          # "file", "directory", "symlink", "fifo", "socket", ...
    size: int
    mode: int          # permission bits
    mtime_usec: int    # CLOCK_REALTIME, microseconds
    uid: int
    gid: int

    @property
    def is_dir(self) -> bool:
        """Whether it is a directory."""
        return self.type == "directory"


class Transfer:
    """One open file of the worker: a binary file object and its handle.

    Leaving its ``with`` block without an error commits it (and raises the
    helper's error if there was one); with an error, aborts it (a replace
    leaves the file as it was).
    """

    def __init__(self, worker: "Worker", fd: Any, handle: str, reading: bool) -> None:
        self._w = worker
        self.handle = handle
        self.reading = reading
        self.file: BinaryIO = fd.to_file("rb" if reading else "wb", buffering=0)
        self.bytes: Optional[int] = None

    def read(self, n: int = _CHUNK) -> bytes:
        """Up to ``n`` bytes; b"" at the end."""
        return self.file.read(n)

    def write(self, data: bytes) -> None:
        """Writes all of ``data``."""
        view = memoryview(data)
        while view:
            n = self.file.write(view[:_CHUNK])
            if n is None:
                raise errors.FileError("the worker's side would block", name=errors.FileError.dbus_name)
            view = view[n:]

    def chunks(self) -> Iterator[bytes]:
        """The data, chunk by chunk, to its end."""
        while True:
            b = self.file.read(_CHUNK)
            if not b:
                return
            yield b

    def commit(self) -> int:
        """Ends the transfer: closes this side, waits for the helper's
        verdict and returns the bytes it moved (a replace takes effect)."""
        self.file.close()
        (n,) = self._w._call("CommitFile", "s", (self.handle,))
        self.bytes = int(n)
        return self.bytes

    def abort(self) -> None:
        """Gives up: a replace leaves the file as it was."""
        self.file.close()
        try:
            self._w._call("AbortFile", "s", (self.handle,))
        except (errors.NoSuchTransfer, errors.NotRunning, errors.NoSuchWorker):
            pass

    def __enter__(self) -> "Transfer":
        return self

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        if self.bytes is not None:
            return
        if exc_type is None:
            self.commit()
        else:
            self.abort()


class Files:
    """``w.files``: read, write, list, remove, upload, download, and stat,
    mkdir, rename."""

    def __init__(self, worker: "Worker") -> None:
        self._w = worker

    def open(self, path: str, mode: str = "read", *, perm: Optional[int] = None) -> Transfer:
        """Opens ``path`` in the worker: ``mode`` is ``read``, ``write``
        (create or truncate), ``create`` (only a new file), ``append`` or
        ``replace`` (a temporary file that takes the path's place on
        commit). ``perm``: a new file's permission bits."""
        self._w._require("OpenFile")
        opts: Dict[str, Tuple[str, Any]] = {}
        if perm is not None:
            opts["Mode"] = ("u", int(perm))
        fd, handle = self._w._call("OpenFile", "ssa{sv}", (path, mode, opts))
        return Transfer(self._w, fd, str(handle), mode == "read")

    def read(self, path: str) -> bytes:
        """The whole file's bytes."""
        with self.open(path, "read") as t:
            data = b"".join(t.chunks())
        if t.bytes is not None and t.bytes != len(data):
            raise errors.FileError(f"{path}: read {len(data)} bytes, the worker sent {t.bytes}",
                                   name=errors.FileError.dbus_name)
        return data

    def read_text(self, path: str, encoding: str = "utf-8") -> str:
        """The whole file as text."""
        return self.read(path).decode(encoding)

    def write(self, path: str, data: Union[bytes, str], *, perm: Optional[int] = None) -> int:
        """Replaces ``path`` with ``data`` (str as UTF-8), atomically: the
        file changes only once all of it is written. Returns the bytes."""
        if isinstance(data, str):
            data = data.encode()
        with self.open(path, "replace", perm=perm) as t:
            t.write(data)
            return t.commit()

    def list(self, path: str = ".") -> List[FileInfo]:
        """The entries of a directory (at most 65536)."""
        self._w._require("ListDirectory")
        (rows,) = self._w._call("ListDirectory", "s", (path,))
        return [FileInfo(*r) for r in rows]

    def stat(self, path: str) -> FileInfo:
        """What the path is (a symlink is reported, never followed)."""
        self._w._require("Stat")
        return FileInfo(*self._w._call("Stat", "s", (path,)))

    def exists(self, path: str) -> bool:
        """Whether the path exists in the worker's home."""
        try:
            self.stat(path)
            return True
        except errors.FileNotFound:
            return False

    def mkdir(self, path: str, *, parents: bool = False, perm: Optional[int] = None) -> None:
        """Makes a directory (with ``parents``, every missing one on the way)."""
        self._w._require("MakeDirectory")
        opts: Dict[str, Tuple[str, Any]] = {}
        if parents:
            opts["Parents"] = ("b", True)
        if perm is not None:
            opts["Mode"] = ("u", int(perm))
        self._w._call("MakeDirectory", "sa{sv}", (path, opts))

    def remove(self, path: str, *, recursive: bool = False) -> None:
        """Removes a file, or a directory (empty unless ``recursive``)."""
        self._w._require("Remove")
        opts: Dict[str, Tuple[str, Any]] = {"Recursive": ("b", True)} if recursive else {}
        self._w._call("Remove", "sa{sv}", (path, opts))

    def rename(self, src: str, dst: str) -> None:
        """Renames within the home."""
        self._w._require("Rename")
        self._w._call("Rename", "ss", (src, dst))

    def upload(self, local: PathLike, remote: str, *, perm: Optional[int] = None) -> int:
        """Copies a local file into the worker (a replace); returns the bytes."""
        with open(local, "rb") as src, self.open(remote, "replace", perm=perm) as t:
            while True:
                b = src.read(_CHUNK)
                if not b:
                    break
                t.write(b)
            return t.commit()

    def download(self, remote: str, local: PathLike) -> int:
        """Copies a file of the worker to a local path; returns the bytes."""
        total = 0
        with self.open(remote, "read") as t, open(local, "wb") as dst:
            for b in t.chunks():
                dst.write(b)
                total += len(b)
        if t.bytes is not None and t.bytes != total:
            raise errors.FileError(f"{remote}: got {total} bytes, the worker sent {t.bytes}",
                                   name=errors.FileError.dbus_name)
        return total


__all__ = ["Files", "FileInfo", "Transfer"]
