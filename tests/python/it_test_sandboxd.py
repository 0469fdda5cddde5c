# SPDX-License-Identifier: LGPL-2.1-or-later
"""The Python library against the real sandboxd, inside the test bed, under pytest.

Run by tests/python/integration.sh with Debian's python3-pytest, once per
phase, selected by marker: ``root`` as root, ``tester_denied`` as the plain
user tester without a polkit grant, ``tester`` as tester with
org.sandboxd1.create-worker (root's worker id in ``SBX_ROOT_WORKER``).
conftest.py turns each test's outcome into one TAP check, named by the
test's docstring. It uses the installed python3-sandboxd, never the tree.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import subprocess
import sys
import tempfile
from typing import Any, Callable, Iterator, Type

import pytest

import sandboxd
import sandboxd.aio
from sandboxd import errors

ID_RE = re.compile(r"^[0-9a-f]{12}$")
EXAMPLE = "/usr/share/doc/python3-sandboxd/examples/agent_loop.py"
CLASSES = ("trusted", "standard")


def raises(exc: Type[BaseException], fn: Callable[[], Any], *, contains: str = "") -> BaseException:
    """FN must raise EXC (whose text contains CONTAINS)."""
    with pytest.raises(exc) as info:
        fn()
    assert contains in str(info.value), f"{type(info.value).__name__} without {contains!r}: {info.value}"
    return info.value


def echo_over_channel(w: sandboxd.Worker) -> None:
    """The main process is cat: a line sent on the channel comes back."""
    with w.channel() as s:
        s.sendall(b"ping over the channel\n")
        s.settimeout(30)
        got = b""
        while b"\n" not in got:
            chunk = s.recv(4096)
            assert chunk, f"channel ended after {got!r}"
            got += chunk
        assert got == b"ping over the channel\n", got


def has(w: sandboxd.Worker, member: str) -> bool:
    return member in w.bus.members(w.path, "org.sandboxd1.Worker")


def _run_env_input(w: sandboxd.Worker) -> None:
    r = w.run("read x; echo \"$GREETING $x\"", env={"GREETING": "hi"}, input=b"there\n")
    assert r.stdout == b"hi there\n", r


def _transfer(w: sandboxd.Worker, size: int) -> None:
    with tempfile.TemporaryDirectory() as d:
        src, back = os.path.join(d, "src"), os.path.join(d, "back")
        with open(src, "wb") as f:
            for _ in range(size >> 20):
                f.write(os.urandom(1 << 20))
        assert w.files.upload(src, "big.bin") == size
        inside = w.run(["sha256sum", "big.bin"]).stdout.split()[0].decode()
        assert w.files.download("big.bin", back) == size
        h = [hashlib.sha256(open(p, "rb").read()).hexdigest() for p in (src, back)]
        assert h[0] == h[1] == inside, (h, inside)
        w.files.remove("big.bin")


# ---- root ------------------------------------------------------------------

root = pytest.mark.root


@root
def test_installed() -> None:
    """the library is the installed python3-sandboxd"""
    assert sandboxd.__file__.startswith("/usr/lib/python3/dist-packages/sandboxd/"), sandboxd.__file__


# Errors mapped, each beside a control that the same path succeeds (the
# lifecycle tests below create workers through the same calls).
@root
def test_isolation_unavailable() -> None:
    """a class this host cannot serve raises errors.IsolationUnavailable"""
    raises(errors.IsolationUnavailable, lambda: sandboxd.Worker(cls="hostile"),
           contains="org.sandboxd1.Error.IsolationUnavailable")


@root
def test_unknown_class() -> None:
    """an unknown class raises errors.UnknownClass (an InvalidSpec)"""
    raises(errors.InvalidSpec, lambda: sandboxd.Worker(cls="no-such-class"))


@root
def test_executable_not_found() -> None:
    """a command found nowhere raises errors.ExecutableNotFound"""
    raises(errors.ExecutableNotFound, lambda: sandboxd.Worker(cls="trusted", argv=["no-such-command-xyz"]))


@root
def test_attach_unknown() -> None:
    """attach to an ID nobody has raises errors.NoSuchWorker"""
    raises(errors.NoSuchWorker, lambda: sandboxd.Worker.attach("0123456789ab"))


@root
def test_attach_malformed() -> None:
    """a malformed ID raises errors.InvalidArgument or NoSuchWorker, never another error"""
    raises((errors.InvalidArgument, errors.NoSuchWorker),  # type: ignore[arg-type]
           lambda: sandboxd.Worker.attach("not-an-id"))


@root
@pytest.mark.parametrize("cls", CLASSES)
def test_lifecycle(cls: str) -> None:
    """{cls}: Worker() runs it, workers() lists it, attach(), channel, logs(), the with block stops it"""
    with sandboxd.Worker(cls=cls, memory="256M", idle=300, argv=["cat"]) as w:
        assert ID_RE.match(w.id), w.id
        assert w.state == "running" and w.cls == cls, (w.state, w.cls)
        assert w.get("Runtime") == ("systemd" if cls == "trusted" else "runsc")
        mine = [i for i in sandboxd.workers() if i.id == w.id]
        assert mine and mine[0].state == "running" and mine[0].cls == cls, mine
        with sandboxd.Worker.attach(w.id) as again:
            assert again.state == "running"
        assert w.state == "running", "leaving an attached worker's block stopped it"
        echo_over_channel(w)
        events = [e.event for e in w.logs()]
        assert "started" in events, events
        wid = w.id
    gone = [i for i in sandboxd.workers() if i.id == wid]
    assert not gone, f"still listed alive after the with block: {gone}"
    ended = [i for i in sandboxd.workers(all=True) if i.id == wid]
    assert ended and ended[0].state == "ended" and ended[0].result == "stopped", ended


@root
@pytest.mark.parametrize("cls", CLASSES)
def test_spec_reaches_worker(cls: str) -> None:
    """{cls}: credentials, env and an allow-list reach the worker"""
    with sandboxd.Worker(cls=cls, memory="128M", allow=["pypi.org"], idle=300,
                         credentials={"token": "s3cret"}, env={"MODE": "test"},
                         argv=["sh", "-c", 'cat "$CREDENTIALS_DIRECTORY/token"; '
                               'echo " $MODE $HTTPS_PROXY"; exec cat']) as w:
        with w.channel() as s:
            s.settimeout(30)
            got = b""
            while b"\n" not in got:
                chunk = s.recv(4096)
                assert chunk, got
                got += chunk
        assert got.startswith(b"s3cret test http"), got
        assert w.get("IdleTimeoutUSec") == 300_000_000, w.get("IdleTimeoutUSec")


@pytest.fixture(scope="module", params=CLASSES)
def worker(request: pytest.FixtureRequest) -> Iterator[sandboxd.Worker]:
    """One worker per class for the process, file, metrics and egress tests."""
    with sandboxd.Worker(cls=request.param, idle=300, allow=["pypi.org"]) as w:
        for member in ("Exec", "OpenFile", "CPUUsageNSec", "SetEgress"):
            assert has(w, member), f"this sandboxd has no Worker.{member}"
        yield w


@root
def test_run_string(worker: sandboxd.Worker) -> None:
    """{cls}: run of a string goes through /bin/sh -c"""
    r = worker.run("echo out; echo err >&2; exit 3")
    assert (r.stdout, r.stderr, r.exit_code) == (b"out\n", b"err\n", 3), r


@root
def test_run_argv(worker: sandboxd.Worker) -> None:
    """{cls}: run of a list is the argv, no shell"""
    r = worker.run(["python3", "-c", "print(6*7)"])
    assert r.stdout == b"42\n" and r.exit_code == 0, r
    r = worker.run(["echo", "$HOME;", "|x"])
    assert r.stdout == b"$HOME; |x\n", r


@root
def test_run_env_input(worker: sandboxd.Worker) -> None:
    """{cls}: run with env and input"""
    _run_env_input(worker)


@root
def test_exec_process(worker: sandboxd.Worker) -> None:
    """{cls}: exec writes stdin, iterates output, waits"""
    with worker.exec(["cat"]) as p:
        p.write(b"through stdin\n")
        p.close_stdin()
        out = b"".join(d for s, d in p if s == "stdout")
        assert out == b"through stdin\n", out
        assert p.wait(timeout=30) == 0


@root
def test_exec_signal(worker: sandboxd.Worker) -> None:
    """{cls}: exec'd process signalled ends with 128+SIGTERM"""
    with worker.exec(["sleep", "600"]) as p:
        p.signal(15)
        code = p.wait(timeout=30)
        assert code == 128 + 15, code


@root
def test_exec_tty(worker: sandboxd.Worker) -> None:
    """{cls}: exec with tty=True has a terminal of the asked size"""
    with worker.exec(["sh", "-c", "test -t 0 && test -t 1 && echo on-a-terminal; stty size"],
                     tty=True, tty_size=(33, 101)) as p:
        out = b"".join(d for _, d in p)
        # A terminal turns the process's newlines into CRLF.
        assert out == b"on-a-terminal\r\n33 101\r\n", out
        p.wait(timeout=30)


@root
def test_run_timeout(worker: sandboxd.Worker) -> None:
    """{cls}: run past its timeout raises ProcessTimeout"""
    raises(errors.ProcessTimeout, lambda: worker.run("sleep 30", timeout=1))


@root
def test_files_roundtrip(worker: sandboxd.Worker) -> None:
    """{cls}: files write, read, list, remove"""
    worker.files.write("hello.txt", "hello, worker\n")
    assert worker.files.read("hello.txt") == b"hello, worker\n"
    names = {e.name: e for e in worker.files.list(".")}
    assert "hello.txt" in names and names["hello.txt"].size == 14, names
    worker.files.remove("hello.txt")
    assert "hello.txt" not in {e.name for e in worker.files.list(".")}


@root
def test_files_transfer(worker: sandboxd.Worker) -> None:
    """{cls}: files upload and download 100 MiB, checksums equal"""
    _transfer(worker, 100 << 20)


@root
def test_metrics(worker: sandboxd.Worker) -> None:
    """{cls}: metrics report memory and CPU"""
    m = worker.metrics()
    assert (m.get("MemoryCurrent") or 0) > 0 and "CPUUsageNSec" in m, m


# integration.sh sets the operator floor to "pypi.org *.example.org".
@root
def test_set_egress_outside_floor(worker: sandboxd.Worker) -> None:
    """{cls}: set_egress past the operator's floor raises errors.EgressOutsideFloor"""
    raises(errors.EgressOutsideFloor, lambda: worker.set_egress(["example.net"]))


@root
def test_set_egress(worker: sandboxd.Worker) -> None:
    """{cls}: set_egress within the floor replaces the policy (the control)"""
    worker.set_egress(["pypi.org", "api.example.org"], rate="1M")
    assert worker.get("EgressAllow") == ["pypi.org", "api.example.org"], worker.info()
    assert worker.get("EgressRateBps") == 1 << 20, worker.info()


@root
def test_suspend_resume() -> None:
    """standard: suspend() and resume(), the channel works after"""
    with sandboxd.Worker(cls="standard", argv=["cat"]) as w:
        w.suspend()
        assert w.state == "suspended", w.state
        w.resume()
        assert w.state == "running", w.state
        echo_over_channel(w)


@root
def test_trusted_cannot_suspend() -> None:
    """trusted: suspend() raises errors.NotSupported"""
    with sandboxd.Worker(cls="trusted") as w:
        raises(errors.NotSupported, w.suspend, contains="NotSupported")


@root
def test_stop_explicit() -> None:
    """stop() ends the worker; its channel then raises errors.NotRunning"""
    w = sandboxd.Worker(cls="trusted")
    w.stop()
    assert w.state == "ended" and w.get("Result") == "stopped", w.state
    raises(errors.NotRunning, w.channel)
    w.close()


@root
def test_example_loop() -> None:
    """the example agent loop, end to end"""
    r = subprocess.run([sys.executable, EXAMPLE, "--class", "trusted"], capture_output=True,
                       text=True, timeout=300)
    out = r.stdout + r.stderr
    assert r.returncode == 0 and "solved after 2 attempt(s)" in out, out
    assert "attempt 1: exit 1" in out and "NameError" in out, out


async def _aio_twin() -> None:
    async with sandboxd.aio.Worker(cls="trusted", argv=["cat"]) as w:
        assert ID_RE.match(w.id)
        assert await w.state() == "running"
        assert w.id in [i.id for i in await sandboxd.aio.workers()]
        reader, writer = await w.channel()
        writer.write(b"async ping\n")
        await writer.drain()
        line = await asyncio.wait_for(reader.readline(), 30)
        assert line == b"async ping\n", line
        writer.close()
        entries = await w.logs()
        assert any(e.event == "started" for e in entries)
        r = await w.run(["python3", "-c", "print(6*7)"])
        assert r.stdout == b"42\n", r
        async with await w.exec(["cat"]) as p:
            await p.write(b"async stdin\n")
            await p.close_stdin()
            got = b"".join([d async for s, d in p if s == "stdout"])
            assert got == b"async stdin\n", got
            assert await p.wait(30) == 0
        await w.files.write("a.txt", b"async file")
        assert await w.files.read("a.txt") == b"async file"
        assert "a.txt" in [e.name for e in await w.files.list(".")]
        both = await asyncio.gather(sandboxd.aio.workers(), w.info())
        assert both[1]["Id"] == w.id
    with pytest.raises(errors.IsolationUnavailable):
        await sandboxd.aio.Worker.create(cls="hostile")


@root
def test_aio_twin() -> None:
    """aio: the asyncio twin creates, lists, relays, reads logs, maps errors"""
    asyncio.run(_aio_twin())


# ---- tester, without a polkit grant ----------------------------------------

@pytest.mark.tester_denied
def test_denied_create() -> None:
    """tester without a grant: Worker() raises errors.AccessDenied naming the action"""
    raises(errors.AccessDenied, lambda: sandboxd.Worker(cls="standard"), contains="org.sandboxd1.create-worker")


@pytest.mark.tester_denied
def test_denied_list() -> None:
    """tester without a grant: workers() answers (an empty list of its own)"""
    assert sandboxd.workers() == [], "tester sees workers"


# ---- tester, with org.sandboxd1.create-worker --------------------------------

as_tester = pytest.mark.tester


@as_tester
def test_tester_create() -> None:
    """tester with create-worker: Worker(cls='standard') runs it as tester's"""
    with sandboxd.Worker(cls="standard", argv=["cat"]) as w:
        assert w.get("Owner") == os.getuid(), w.get("Owner")
        echo_over_channel(w)
        assert [i.id for i in sandboxd.workers()] == [w.id]
        r = w.run(["id", "-u"])
        assert r.stdout.decode().strip() == str(w.get("UID")), (r, w.get("UID"))
        w.files.write("mine.txt", "tester's")
        assert w.files.read("mine.txt") == b"tester's"


@as_tester
def test_tester_attach_root() -> None:
    """tester: attach() to root's worker raises errors.NoSuchWorker"""
    root_worker = os.environ["SBX_ROOT_WORKER"]
    assert ID_RE.match(root_worker), root_worker
    raises(errors.NoSuchWorker, lambda: sandboxd.Worker.attach(root_worker))


@as_tester
def test_tester_trusted_denied() -> None:
    """tester without create-trusted-worker: cls='trusted' raises errors.AccessDenied"""
    raises(errors.AccessDenied, lambda: sandboxd.Worker(cls="trusted"),
           contains="org.sandboxd1.create-trusted-worker")
