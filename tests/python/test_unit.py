# SPDX-License-Identifier: LGPL-2.1-or-later
"""Unit tests of the Python library's pure parts: sizes, the spec, a
command's argv, Exec's options, the error mapping and its drift against
daemon/shared/errors.h. No bus, no daemon. Run by meson (python3 -m
unittest), and by pytest alike."""

import os
import re
import subprocess
import unittest
from pathlib import Path

import sandboxd
from sandboxd import _spec, errors
from sandboxd.process import _exit_code, exec_options

SRC = Path(os.environ.get("SANDBOXD_SRC", Path(__file__).resolve().parents[2]))


class SizeTest(unittest.TestCase):
    def test_units_are_powers_of_1024(self) -> None:
        cases = {"512M": 512 << 20, "512MiB": 512 << 20, "1G": 1 << 30, "1g": 1 << 30,
                 "4096": 4096, "4096B": 4096, "2K": 2048, "1T": 1 << 40, "1.5G": 3 << 29,
                 "0": 0, 100: 100, "64MB": 64 << 20}
        for text, want in cases.items():
            with self.subTest(text=text):
                self.assertEqual(_spec.parse_size(text), want)

    def test_garbage_is_refused(self) -> None:
        for bad in ["", "M", "-1", "1X", "1 G B", "1iB", "1.G", -5, True, 1.5, None]:
            with self.subTest(bad=bad):
                with self.assertRaises(ValueError):
                    _spec.parse_size(bad)  # type: ignore[arg-type]

    def test_durations(self) -> None:
        self.assertEqual(_spec.duration_usec(600), 600_000_000)
        self.assertEqual(_spec.duration_usec(0.25), 250_000)
        for bad in [-1, "10", True]:
            with self.assertRaises(ValueError):
                _spec.duration_usec(bad)  # type: ignore[arg-type]


class CommandTest(unittest.TestCase):
    def test_a_string_runs_through_sh(self) -> None:
        self.assertEqual(_spec.command_argv("echo a | wc -c"), ["/bin/sh", "-c", "echo a | wc -c"])

    def test_a_list_is_the_argv(self) -> None:
        self.assertEqual(_spec.command_argv(["python3", "-c", "print(1)"]),
                         ["python3", "-c", "print(1)"])
        self.assertEqual(_spec.command_argv(("ls",)), ["ls"])

    def test_empty_or_not_strings(self) -> None:
        for bad in ["", [], ["ls", 3]]:
            with self.assertRaises(ValueError):
                _spec.command_argv(bad)  # type: ignore[arg-type]


class SpecTest(unittest.TestCase):
    def test_only_what_was_set(self) -> None:
        self.assertEqual(_spec.build_spec(), {"Argv": ("as", ["sleep", "infinity"])})

    def test_the_issue_example(self) -> None:
        spec = _spec.build_spec(cls="standard", allow=["pypi.org", "files.pythonhosted.org"],
                                memory="512M", credentials={"token": "s3cret", "key": b"\x00\x01"},
                                services={"gh": {"url": "https://api.github.com",
                                                 "credential": "tok", "methods": ["GET", "POST"],
                                                 "max_response_bytes": "2M"}},
                                workspace="proj", idle=600)
        self.assertEqual(spec["Class"], ("s", "standard"))
        self.assertEqual(spec["EgressAllow"], ("as", ["pypi.org", "files.pythonhosted.org"]))
        self.assertEqual(spec["MemoryMax"], ("t", 512 << 20))
        self.assertEqual(spec["Credentials"], ("a(say)", [("token", b"s3cret"), ("key", b"\x00\x01")]))
        self.assertEqual(spec["Services"], ("a(sa{sv})", [("gh", {
            "Url": ("s", "https://api.github.com"), "Credential": ("ay", b"tok"),
            "Methods": ("as", ["GET", "POST"]), "MaxResponseBytes": ("t", 2 << 20)})]))
        self.assertEqual(spec["Workspace"], ("s", "proj"))
        self.assertEqual(spec["IdleTimeoutUSec"], ("t", 600_000_000))

    def test_other_keys(self) -> None:
        spec = _spec.build_spec(argv="echo hi", env={"A": "1"}, origin="llm-generated", tasks=64,
                                cpu_percent=20, runtime=30, disk="64M", idle_action="suspend",
                                egress_rate="1M", egress_mode="report")
        self.assertEqual(spec["Argv"], ("as", ["/bin/sh", "-c", "echo hi"]))
        self.assertEqual(spec["Environment"], ("as", ["A=1"]))
        self.assertEqual(spec["Origin"], ("s", "llm-generated"))
        self.assertEqual(spec["TasksMax"], ("t", 64))
        self.assertEqual(spec["CPUQuotaPercent"], ("u", 20))
        self.assertEqual(spec["RuntimeMaxUSec"], ("t", 30_000_000))
        self.assertEqual(spec["DiskMax"], ("t", 64 << 20))
        self.assertEqual(spec["IdleAction"], ("s", "suspend"))
        self.assertEqual(spec["EgressRateBps"], ("t", 1 << 20))
        self.assertEqual(spec["EgressMode"], ("s", "report"))

    def test_bad_input_is_refused_before_the_bus(self) -> None:
        with self.assertRaises(ValueError):
            _spec.build_spec(allow="pypi.org")  # one string, not a list
        with self.assertRaises(ValueError):
            _spec.build_spec(env={"1A": "x"})
        with self.assertRaises(ValueError):
            _spec.build_spec(services={"x": {"bogus": 1}})
        with self.assertRaises(ValueError):
            _spec.build_spec(memory="lots")

    def test_the_spec_serialises_as_dbus(self) -> None:
        # jeepney refuses a value whose Python type does not fit its signature.
        from jeepney import DBusAddress, new_method_call
        spec = _spec.build_spec(cls="trusted", memory="64M", credentials={"a": "b"},
                                services={"s": {"url": "https://example.org", "credential": "c",
                                                "rate_bps": 1000}}, idle=1.5, cpu_percent=10)
        msg = new_method_call(DBusAddress("/org/sandboxd1", "org.sandboxd1", "org.sandboxd1.Manager"),
                              "CreateWorker", "a{sv}", (spec,))
        self.assertGreater(len(msg.serialise(1)), 100)

    def test_egress_policy(self) -> None:
        self.assertEqual(_spec.egress_policy(["a.org"], rate="1K", mode="enforce"),
                         {"EgressAllow": ("as", ["a.org"]), "EgressRateBps": ("t", 1024),
                          "EgressMode": ("s", "enforce")})
        self.assertEqual(_spec.egress_policy([]), {"EgressAllow": ("as", [])})
        with self.assertRaises(ValueError):
            _spec.egress_policy()


class FilesTest(unittest.TestCase):
    def test_a_listing_row_is_a_fileinfo(self) -> None:
        from sandboxd.files import FileInfo
        row = ("a.txt", "file", 14, 0o644, 1700000000000000, 61234, 61234)
        info = FileInfo(*row)
        self.assertEqual((info.name, info.size, info.mode, info.is_dir), ("a.txt", 14, 0o644, False))
        self.assertTrue(FileInfo("d", "directory", 0, 0o755, 0, 0, 0).is_dir)


class _FakeBus:
    """Answers a process object's properties from a local child process."""

    def __init__(self, child: "subprocess.Popen[bytes]") -> None:
        self.child = child

    def get_all(self, path: str, interface: str) -> dict:
        code = self.child.poll()
        return {"State": "running" if code is None else "exited",
                "ExitStatus": -1 if code is None else (code if code >= 0 else 128 - code)}


class _FakeWorker:
    def __init__(self, child: "subprocess.Popen[bytes]") -> None:
        self.bus = _FakeBus(child)


class ProcessIOTest(unittest.TestCase):
    """A Process's I/O over local pipes, with a local child in the worker's
    place: what communicate() and iteration do with the fds Exec hands over."""

    def start(self, argv: list) -> "tuple":
        from sandboxd.process import Process
        child = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE)
        fds = [os.dup(child.stdin.fileno()), os.dup(child.stdout.fileno()),
               os.dup(child.stderr.fileno())]
        for f in (child.stdin, child.stdout, child.stderr):
            f.close()
        return child, Process(_FakeWorker(child), "/org/sandboxd1/worker/x/process/1", fds, tty=False)

    def test_communicate_feeds_and_reads_at_once(self) -> None:
        # 4 MiB each way: more than any pipe holds, so writing all of the
        # input before reading would deadlock.
        data = os.urandom(4 << 20)
        child, p = self.start(["sh", "-c", "cat; echo done >&2; exit 5"])
        r = p.communicate(data, timeout=60)
        self.assertEqual((r.stdout == data, r.stderr, r.exit_code), (True, b"done\n", 5))
        child.wait()

    def test_input_the_process_never_reads(self) -> None:
        child, p = self.start(["sh", "-c", "exec 0<&-; echo early"])
        r = p.communicate(b"x" * (1 << 20), timeout=60)
        self.assertEqual((r.stdout, r.exit_code), (b"early\n", 0))
        child.wait()

    def test_iteration_and_timeout(self) -> None:
        child, p = self.start(["sh", "-c", "echo a; echo b >&2"])
        p.close_stdin()
        got = sorted(p)
        self.assertEqual(got, [("stderr", b"b\n"), ("stdout", b"a\n")])
        self.assertEqual(p.wait(timeout=30), 0)
        child.wait()
        child, p = self.start(["sleep", "30"])
        with self.assertRaises(errors.ProcessTimeout):
            list(p.output(timeout=0.2))
        child.kill()
        child.wait()
        p.close()


class ExecOptionsTest(unittest.TestCase):
    def test_options(self) -> None:
        self.assertEqual(exec_options(), {})
        self.assertEqual(exec_options(env={"K": "V"}, cwd="src", tty=True, tty_size=(24, 80),
                                      timeout=2),
                         {"Environment": ("as", ["K=V"]), "WorkingDirectory": ("s", "src"),
                          "Tty": ("b", True), "TtySize": ("(qq)", (24, 80)),
                          "TimeoutUSec": ("t", 2_000_000)})
        with self.assertRaises(ValueError):
            exec_options(tty_size=(24, 80))

    def test_exit_codes(self) -> None:
        self.assertIsNone(_exit_code({"State": "starting", "ExitStatus": -1}))
        self.assertIsNone(_exit_code({"State": "running", "ExitStatus": -1}))
        self.assertEqual(_exit_code({"State": "exited", "ExitStatus": 3, "ExitSignal": 0}), 3)
        self.assertEqual(_exit_code({"State": "exited", "ExitStatus": 137, "ExitSignal": 9}), 137)


class ErrorsTest(unittest.TestCase):
    def daemon_names(self) -> set:
        text = (SRC / "daemon/shared/errors.h").read_text()
        return set(re.findall(r'"(org\.sandboxd1\.Error\.[A-Za-z]+)"', text))

    def test_every_daemon_error_has_its_class_and_no_more(self) -> None:
        daemon = self.daemon_names()
        self.assertGreater(len(daemon), 20)
        ours = set(errors.BY_NAME)
        self.assertEqual(sorted(daemon - ours), [], "errors.h names without a class in sandboxd.errors")
        self.assertEqual(sorted(ours - daemon), [], "classes in sandboxd.errors that errors.h lacks")

    def test_class_names_are_the_error_names(self) -> None:
        for name, cls in errors.BY_NAME.items():
            self.assertEqual(name, "org.sandboxd1.Error." + cls.__name__)
            self.assertIs(getattr(errors, cls.__name__), cls)
            self.assertTrue(issubclass(cls, errors.SandboxdError))
            self.assertTrue(cls.__doc__)

    def test_from_dbus(self) -> None:
        e = errors.from_dbus("org.sandboxd1.Error.IsolationUnavailable", "class hostile: no Kata")
        self.assertIsInstance(e, errors.IsolationUnavailable)
        self.assertEqual(e.name, "org.sandboxd1.Error.IsolationUnavailable")
        self.assertEqual(e.message, "class hostile: no Kata")
        self.assertIn("no Kata", str(e))
        self.assertIsInstance(errors.from_dbus("org.sandboxd1.Error.UnknownClass"), errors.InvalidSpec)
        denied = errors.from_dbus("org.freedesktop.DBus.Error.AccessDenied", "org.sandboxd1.create-worker")
        self.assertIsInstance(denied, errors.AccessDenied)
        self.assertEqual(denied.name, "org.freedesktop.DBus.Error.AccessDenied")
        self.assertIsInstance(errors.from_dbus("org.freedesktop.DBus.Error.InteractiveAuthorizationRequired"),
                              errors.AccessDenied)
        self.assertIsInstance(errors.from_dbus("org.freedesktop.DBus.Error.UnknownObject"),
                              errors.NoSuchWorker)
        self.assertIsInstance(errors.from_dbus("org.freedesktop.DBus.Error.ServiceUnknown"),
                              errors.DaemonUnavailable)
        newer = errors.from_dbus("org.sandboxd1.Error.SomethingNew", "from a newer sandboxd")
        self.assertEqual(type(newer).__name__, "SomethingNew")
        self.assertIsInstance(newer, errors.SandboxdError)
        self.assertIs(type(newer), type(errors.from_dbus("org.sandboxd1.Error.SomethingNew")))
        self.assertIsInstance(errors.from_dbus("org.sandboxd1.Error.DiskFull"), errors.FileError)
        other = errors.from_dbus("org.example.Nope", "x")
        self.assertIs(type(other), errors.SandboxdError)
        self.assertEqual(other.name, "org.example.Nope")

    def test_missing_method_is_not_supported_naming_it(self) -> None:
        e = errors.missing_method("org.sandboxd1.Worker", "Exec")
        self.assertIsInstance(e, errors.NotSupported)
        self.assertIn("org.sandboxd1.Worker.Exec", str(e))

    def test_the_package_exports(self) -> None:
        for name in ["Worker", "workers", "Result", "errors", "Process", "Files"]:
            self.assertTrue(hasattr(sandboxd, name), name)
        import sandboxd.aio as aio
        for name in ["Worker", "workers"]:
            self.assertTrue(hasattr(aio, name), name)


if __name__ == "__main__":
    unittest.main()
