# SPDX-License-Identifier: LGPL-2.1-or-later
"""The Python library against the real sandboxd, inside the test bed.

Run by tests/python/integration.sh as root (``root``), as the plain user
tester without a polkit grant (``tester-denied``) and with one
(``tester``); ``python3 it_sandboxd.py PHASE [ROOT_WORKER_ID]``. Prints one
line per check, ``PYOK NAME`` or ``PYFAIL NAME: WHY``, which the shell side
turns into TAP. It uses the installed python3-sandboxd, never the tree.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import traceback
from typing import Any, Callable, List, Type

import sandboxd
import sandboxd.aio
from sandboxd import errors

RESULTS: List[bool] = []
ID_RE = re.compile(r"^[0-9a-f]{12}$")
EXAMPLE = "/usr/share/doc/python3-sandboxd/examples/agent_loop.py"


def check(name: str, fn: Callable[[], Any]) -> Any:
    """Runs FN; ok when it returns without raising (AssertionError or other)."""
    try:
        value = fn()
    except Exception as e:  # noqa: BLE001 - a check reports any failure
        why = f"{type(e).__name__}: {e}".replace("\n", " ")
        traceback.print_exc(file=sys.stdout)
        print(f"PYFAIL {name}: {why}", flush=True)
        RESULTS.append(False)
        return None
    print(f"PYOK {name}", flush=True)
    RESULTS.append(True)
    return value


def raises(exc: Type[BaseException], fn: Callable[[], Any], *, contains: str = "") -> errors.SandboxdError:
    """FN must raise EXC (whose text contains CONTAINS)."""
    try:
        fn()
    except exc as e:
        assert contains in str(e), f"{type(e).__name__} without {contains!r}: {e}"
        return e  # type: ignore[return-value]
    raise AssertionError(f"no {getattr(exc, '__name__', exc)} raised")


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


def wait_state(w: sandboxd.Worker, want: str, secs: float = 60) -> None:
    deadline = time.monotonic() + secs
    while time.monotonic() < deadline:
        if w.state == want:
            return
        time.sleep(0.1)
    raise AssertionError(f"state {w.state}, not {want}")


def has(w: sandboxd.Worker, member: str) -> bool:
    return member in w.bus.members(w.path, "org.sandboxd1.Worker")


def process_and_files(w: sandboxd.Worker, label: str) -> None:
    """run, exec, files, metrics, set_egress on W: real checks where this
    sandboxd has the method, and NotSupported naming it where it has not."""
    if not has(w, "Exec"):
        check(f"{label}: run without Worker.Exec is NotSupported naming it",
              lambda: raises(errors.NotSupported, lambda: w.run("true"),
                             contains="org.sandboxd1.Worker.Exec"))
    else:
        def run_string() -> None:
            r = w.run("echo out; echo err >&2; exit 3")
            assert (r.stdout, r.stderr, r.exit_code) == (b"out\n", b"err\n", 3), r
        check(f"{label}: run of a string goes through /bin/sh -c", run_string)

        def run_argv() -> None:
            r = w.run(["python3", "-c", "print(6*7)"])
            assert r.stdout == b"42\n" and r.exit_code == 0, r
            r = w.run(["echo", "$HOME;", "|x"])
            assert r.stdout == b"$HOME; |x\n", r
        check(f"{label}: run of a list is the argv, no shell", run_argv)
        check(f"{label}: run with env and input", lambda: _run_env_input(w))

        def exec_process() -> None:
            with w.exec(["cat"]) as p:
                p.write(b"through stdin\n")
                p.close_stdin()
                out = b"".join(d for s, d in p if s == "stdout")
                assert out == b"through stdin\n", out
                assert p.wait(timeout=30) == 0
        check(f"{label}: exec writes stdin, iterates output, waits", exec_process)

        def exec_signal() -> None:
            with w.exec(["sleep", "600"]) as p:
                p.signal(15)
                code = p.wait(timeout=30)
                assert code == 128 + 15, code
        check(f"{label}: exec'd process signalled ends with 128+SIGTERM", exec_signal)

        def exec_tty() -> None:
            with w.exec(["sh", "-c", "test -t 0 && test -t 1 && echo on-a-terminal; stty size"],
                        tty=True, tty_size=(33, 101)) as p:
                out = b"".join(d for _, d in p)
                # A terminal turns the process's newlines into CRLF.
                assert out == b"on-a-terminal\r\n33 101\r\n", out
                p.wait(timeout=30)
        check(f"{label}: exec with tty=True has a terminal of the asked size", exec_tty)
        check(f"{label}: run past its timeout raises ProcessTimeout",
              lambda: raises(errors.ProcessTimeout, lambda: w.run("sleep 30", timeout=1)))

    if not has(w, "OpenFile"):
        check(f"{label}: files without Worker.OpenFile are NotSupported naming it",
              lambda: raises(errors.NotSupported, lambda: w.files.read("x"),
                             contains="org.sandboxd1.Worker.OpenFile"))
    else:
        def files_roundtrip() -> None:
            w.files.write("hello.txt", "hello, worker\n")
            assert w.files.read("hello.txt") == b"hello, worker\n"
            names = {e.name: e for e in w.files.list(".")}
            assert "hello.txt" in names and names["hello.txt"].size == 14, names
            w.files.remove("hello.txt")
            assert "hello.txt" not in {e.name for e in w.files.list(".")}
        check(f"{label}: files write, read, list, remove", files_roundtrip)
        check(f"{label}: files upload and download 100 MiB, checksums equal",
              lambda: _transfer(w, 100 << 20))

    if not has(w, "CPUUsageNSec"):
        check(f"{label}: metrics without the properties are NotSupported naming one",
              lambda: raises(errors.NotSupported, w.metrics, contains="CPUUsageNSec"))
    else:
        def metrics() -> None:
            m = w.metrics()
            assert (m.get("MemoryCurrent") or 0) > 0 and "CPUUsageNSec" in m, m
        check(f"{label}: metrics report memory and CPU", metrics)
    if not has(w, "SetEgress"):
        check(f"{label}: set_egress without Worker.SetEgress is NotSupported naming it",
              lambda: raises(errors.NotSupported, lambda: w.set_egress(["example.org"]),
                             contains="org.sandboxd1.Worker.SetEgress"))
    else:
        # integration.sh sets the operator floor to "pypi.org *.example.org".
        check(f"{label}: set_egress past the operator's floor raises errors.EgressOutsideFloor",
              lambda: raises(errors.EgressOutsideFloor, lambda: w.set_egress(["example.net"])))

        def set_egress() -> None:
            w.set_egress(["pypi.org", "api.example.org"], rate="1M")
            assert w.get("EgressAllow") == ["pypi.org", "api.example.org"], w.info()
            assert w.get("EgressRateBps") == 1 << 20, w.info()
        check(f"{label}: set_egress within the floor replaces the policy (the control)", set_egress)


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


def root_phase() -> None:
    check("the library is the installed python3-sandboxd",
          lambda: _assert(sandboxd.__file__.startswith("/usr/lib/python3/dist-packages/sandboxd/"),
                          sandboxd.__file__))

    # ---- errors mapped, each beside a control that the same path succeeds
    check("a class this host cannot serve raises errors.IsolationUnavailable",
          lambda: raises(errors.IsolationUnavailable, lambda: sandboxd.Worker(cls="hostile"),
                         contains="org.sandboxd1.Error.IsolationUnavailable"))
    check("an unknown class raises errors.UnknownClass (an InvalidSpec)",
          lambda: raises(errors.InvalidSpec, lambda: sandboxd.Worker(cls="no-such-class")))
    check("a command found nowhere raises errors.ExecutableNotFound",
          lambda: raises(errors.ExecutableNotFound,
                         lambda: sandboxd.Worker(cls="trusted", argv=["no-such-command-xyz"])))
    check("attach to an ID nobody has raises errors.NoSuchWorker",
          lambda: raises(errors.NoSuchWorker, lambda: sandboxd.Worker.attach("0123456789ab")))
    check("a malformed ID raises errors.InvalidArgument or NoSuchWorker, never another error",
          lambda: raises((errors.InvalidArgument, errors.NoSuchWorker),  # type: ignore[arg-type]
                         lambda: sandboxd.Worker.attach("not-an-id")))

    for cls in ("trusted", "standard"):
        label = f"{cls}"

        def lifecycle(cls: str = cls) -> str:
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
            return wid
        check(f"{label}: Worker() runs it, workers() lists it, attach(), channel, logs(), "
              "the with block stops it", lifecycle)

        def with_spec(cls: str = cls) -> None:
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
        check(f"{label}: credentials, env and an allow-list reach the worker", with_spec)

        with sandboxd.Worker(cls=cls, idle=300, allow=["pypi.org"]) as w:
            process_and_files(w, label)

    def suspend_resume() -> None:
        with sandboxd.Worker(cls="standard", argv=["cat"]) as w:
            w.suspend()
            assert w.state == "suspended", w.state
            w.resume()
            assert w.state == "running", w.state
            echo_over_channel(w)
    check("standard: suspend() and resume(), the channel works after", suspend_resume)

    def trusted_cannot_suspend() -> None:
        with sandboxd.Worker(cls="trusted") as w:
            raises(errors.NotSupported, w.suspend, contains="NotSupported")
    check("trusted: suspend() raises errors.NotSupported", trusted_cannot_suspend)

    def stop_explicit() -> None:
        w = sandboxd.Worker(cls="trusted")
        w.stop()
        assert w.state == "ended" and w.get("Result") == "stopped", w.state
        raises(errors.NotRunning, w.channel)
        w.close()
    check("stop() ends the worker; its channel then raises errors.NotRunning", stop_explicit)

    def example_loop() -> None:
        with sandboxd.Worker(cls="trusted") as probe:
            full = has(probe, "Exec") and has(probe, "OpenFile")
        r = subprocess.run([sys.executable, EXAMPLE, "--class", "trusted"], capture_output=True,
                           text=True, timeout=300)
        out = r.stdout + r.stderr
        if full:
            assert r.returncode == 0 and "solved after 2 attempt(s)" in out, out
            assert "attempt 1: exit 1" in out and "NameError" in out, out
        else:
            assert r.returncode == 2 and "NotSupported" in out, out
    check("the example agent loop, end to end (or NotSupported naming the missing method)",
          example_loop)

    async def aio_twin() -> None:
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
            if has(w.sync, "Exec"):
                r = await w.run(["python3", "-c", "print(6*7)"])
                assert r.stdout == b"42\n", r
                async with await w.exec(["cat"]) as p:
                    await p.write(b"async stdin\n")
                    await p.close_stdin()
                    got = b"".join([d async for s, d in p if s == "stdout"])
                    assert got == b"async stdin\n", got
                    assert await p.wait(30) == 0
            if has(w.sync, "OpenFile"):
                await w.files.write("a.txt", b"async file")
                assert await w.files.read("a.txt") == b"async file"
                assert "a.txt" in [e.name for e in await w.files.list(".")]
            both = await asyncio.gather(sandboxd.aio.workers(), w.info())
            assert both[1]["Id"] == w.id
        try:
            await sandboxd.aio.Worker.create(cls="hostile")
        except errors.IsolationUnavailable:
            pass
        else:
            raise AssertionError("no IsolationUnavailable from the aio twin")
    check("aio: the asyncio twin creates, lists, relays, reads logs, maps errors",
          lambda: asyncio.run(aio_twin()))


def _assert(cond: bool, what: Any) -> None:
    assert cond, what


def tester_denied_phase() -> None:
    check("tester without a grant: Worker() raises errors.AccessDenied naming the action",
          lambda: raises(errors.AccessDenied, lambda: sandboxd.Worker(cls="standard"),
                         contains="org.sandboxd1.create-worker"))
    check("tester without a grant: workers() answers (an empty list of its own)",
          lambda: _assert(sandboxd.workers() == [], "tester sees workers"))


def tester_phase(root_worker: str) -> None:
    def create() -> None:
        with sandboxd.Worker(cls="standard", argv=["cat"]) as w:
            assert w.get("Owner") == os.getuid(), w.get("Owner")
            echo_over_channel(w)
            assert [i.id for i in sandboxd.workers()] == [w.id]
            if has(w, "Exec"):
                r = w.run(["id", "-u"])
                assert r.stdout.decode().strip() == str(w.get("UID")), (r, w.get("UID"))
            if has(w, "OpenFile"):
                w.files.write("mine.txt", "tester's")
                assert w.files.read("mine.txt") == b"tester's"
    check("tester with create-worker: Worker(cls='standard') runs it as tester's", create)
    check("tester: attach() to root's worker raises errors.NoSuchWorker",
          lambda: raises(errors.NoSuchWorker, lambda: sandboxd.Worker.attach(root_worker)))
    check("tester without create-trusted-worker: cls='trusted' raises errors.AccessDenied",
          lambda: raises(errors.AccessDenied, lambda: sandboxd.Worker(cls="trusted"),
                         contains="org.sandboxd1.create-trusted-worker"))


def main() -> int:
    phase = sys.argv[1]
    if phase == "root":
        root_phase()
    elif phase == "tester-denied":
        tester_denied_phase()
    elif phase == "tester":
        tester_phase(sys.argv[2])
    else:
        print(f"unknown phase {phase}", file=sys.stderr)
        return 2
    return 0 if all(RESULTS) else 1


if __name__ == "__main__":
    socket.setdefaulttimeout(None)
    sys.exit(main())
