# SPDX-License-Identifier: LGPL-2.1-or-later
"""The pure parts: sizes, durations, CreateWorker's spec, a command's argv.

Nothing here touches the bus, so the unit tests run it without a daemon.
Values of the spec are what jeepney sends for ``a{sv}``: a dict of
``name: (signature, value)``.
"""

from __future__ import annotations

import re
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

Size = Union[int, str]
Duration = Union[int, float]
Command = Union[str, Sequence[str]]
Variant = Tuple[str, Any]

#: What a worker runs when the caller names no argv of its own: a process
#: that waits, so the worker stays up for :meth:`Worker.run` and
#: :meth:`Worker.exec` until it is stopped or its idle timeout ends it.
DEFAULT_ARGV: Tuple[str, ...] = ("sleep", "infinity")

_SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_SIZE_RE = re.compile(r"^\s*([0-9]+)(?:\.([0-9]+))?\s*([KMGTkmgt]?)(iB|B)?\s*$")
_USEC = 1_000_000


def parse_size(value: Size) -> int:
    """Bytes from an int or a string as sandboxd reads sizes.

    ``"512M"``, ``"512MiB"``, ``"1.5G"``, ``"4096"``, ``"4096B"``: K, M, G
    and T are powers of 1024 (as in sandboxd.conf and ``sandboxctl``).
    Raises ValueError for anything else, or a negative number.
    """
    if isinstance(value, bool):
        raise ValueError(f"not a size: {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"a size cannot be negative: {value}")
        return value
    if not isinstance(value, str):
        raise ValueError(f"not a size: {value!r}")
    m = _SIZE_RE.match(value)
    if not m:
        raise ValueError(f"not a size: {value!r} (examples: 512M, 1G, 1.5GiB, 4096)")
    whole, frac, unit, suffix = m.groups()
    if suffix == "iB" and not unit:
        raise ValueError(f"not a size: {value!r}")
    factor = _SIZE_UNITS[unit.upper()]
    result = int(whole) * factor
    if frac:
        result += int(frac) * factor // (10 ** len(frac))
    return result


def duration_usec(seconds: Duration) -> int:
    """Microseconds from seconds (an int or a float, not negative)."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        raise ValueError(f"not a duration in seconds: {seconds!r}")
    if seconds < 0:
        raise ValueError(f"a duration cannot be negative: {seconds}")
    return int(round(seconds * _USEC))


def command_argv(cmd: Command) -> List[str]:
    """The argv a command runs as in the worker.

    A list (or tuple) is the argv itself, run without a shell. A string runs
    through ``/bin/sh -c STRING`` in the worker, as E2B's ``commands.run``
    does, so pipes, redirections and ``&&`` work there.
    """
    if isinstance(cmd, str):
        if not cmd:
            raise ValueError("an empty command")
        return ["/bin/sh", "-c", cmd]
    argv = list(cmd)
    if not argv:
        raise ValueError("an empty argv")
    for a in argv:
        if not isinstance(a, str):
            raise ValueError(f"argv elements are strings, not {type(a).__name__}")
    return argv


def environment_list(env: Optional[Mapping[str, str]]) -> List[str]:
    """``KEY=VALUE`` strings from a mapping; a name is a shell identifier."""
    out: List[str] = []
    for key, val in (env or {}).items():
        if not isinstance(key, str) or not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", key):
            raise ValueError(f"not an environment variable name: {key!r}")
        if not isinstance(val, str):
            raise ValueError(f"the value of {key} is not a string")
        out.append(f"{key}={val}")
    return out


def _as_bytes(value: Union[str, bytes], what: str) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    raise ValueError(f"{what} must be str or bytes, not {type(value).__name__}")


_SERVICE_KEYS: Dict[str, str] = {
    # library key: (spec key, D-Bus signature)
    "url": "Url", "credential": "Credential", "header": "Header", "methods": "Methods",
    "paths": "Paths", "max_request_bytes": "MaxRequestBytes",
    "max_response_bytes": "MaxResponseBytes", "rate_bps": "RateBps",
}
_SERVICE_SIGS = {"Url": "s", "Credential": "ay", "Header": "s", "Methods": "as", "Paths": "as",
                 "MaxRequestBytes": "t", "MaxResponseBytes": "t", "RateBps": "t"}


def service_settings(name: str, settings: Mapping[str, Any]) -> Dict[str, Variant]:
    """One entry of the spec's Services from a mapping.

    Keys are the spec's own (``Url``, ``Credential``, ``Header``, ``Methods``,
    ``Paths``, ``MaxRequestBytes``, ``MaxResponseBytes``, ``RateBps``) or
    their snake_case forms (``url``, ``credential``, ``max_request_bytes``...).
    sizes may be strings (``"1M"``).
    """
    out: Dict[str, Variant] = {}
    for key, val in settings.items():
        spec_key = _SERVICE_KEYS.get(key, key)
        sig = _SERVICE_SIGS.get(spec_key)
        if sig is None:
            raise ValueError(f"service {name}: unknown setting {key!r}")
        if sig == "ay":
            out[spec_key] = (sig, _as_bytes(val, f"service {name}'s {key}"))
        elif sig == "as":
            if isinstance(val, str):
                val = [val]
            out[spec_key] = (sig, [str(v) for v in val])
        elif sig == "t":
            out[spec_key] = (sig, parse_size(val))
        else:
            out[spec_key] = (sig, str(val))
    return out


def build_spec(
    *,
    argv: Optional[Command] = None,
    cls: Optional[str] = None,
    allow: Optional[Iterable[str]] = None,
    memory: Optional[Size] = None,
    credentials: Optional[Mapping[str, Union[str, bytes]]] = None,
    services: Optional[Mapping[str, Mapping[str, Any]]] = None,
    workspace: Optional[str] = None,
    idle: Optional[Duration] = None,
    env: Optional[Mapping[str, str]] = None,
    origin: Optional[str] = None,
    tasks: Optional[int] = None,
    cpu_percent: Optional[int] = None,
    runtime: Optional[Duration] = None,
    disk: Optional[Size] = None,
    idle_action: Optional[str] = None,
    egress_rate: Optional[Size] = None,
    egress_mode: Optional[str] = None,
) -> Dict[str, Variant]:
    """CreateWorker's ``a{sv}`` from the library's keyword arguments.

    Only what the caller set goes into the spec: the rest is sandboxd's
    default (sandboxd.conf). ``argv`` defaults to :data:`DEFAULT_ARGV`; a
    string argv runs through ``/bin/sh -c``. ``idle`` and ``runtime`` are
    seconds; ``memory``, ``disk`` and ``egress_rate`` sizes (``"512M"``).
    """
    spec: Dict[str, Variant] = {
        "Argv": ("as", command_argv(argv) if argv is not None else list(DEFAULT_ARGV)),
    }
    if cls is not None:
        spec["Class"] = ("s", cls)
    if origin is not None:
        spec["Origin"] = ("s", origin)
    if allow is not None:
        if isinstance(allow, str):
            raise ValueError("allow is a list of host patterns, not one string")
        spec["EgressAllow"] = ("as", [str(a) for a in allow])
    if memory is not None:
        spec["MemoryMax"] = ("t", parse_size(memory))
    if disk is not None:
        spec["DiskMax"] = ("t", parse_size(disk))
    if tasks is not None:
        spec["TasksMax"] = ("t", int(tasks))
    if cpu_percent is not None:
        spec["CPUQuotaPercent"] = ("u", int(cpu_percent))
    if runtime is not None:
        spec["RuntimeMaxUSec"] = ("t", duration_usec(runtime))
    if idle is not None:
        spec["IdleTimeoutUSec"] = ("t", duration_usec(idle))
    if idle_action is not None:
        spec["IdleAction"] = ("s", idle_action)
    if egress_rate is not None:
        spec["EgressRateBps"] = ("t", parse_size(egress_rate))
    if egress_mode is not None:
        spec["EgressMode"] = ("s", egress_mode)
    if credentials:
        spec["Credentials"] = ("a(say)", [(str(k), _as_bytes(v, f"credential {k}"))
                                          for k, v in credentials.items()])
    if services:
        spec["Services"] = ("a(sa{sv})", [(str(n), service_settings(n, s))
                                          for n, s in services.items()])
    if env:
        spec["Environment"] = ("as", environment_list(env))
    if workspace is not None:
        spec["Workspace"] = ("s", workspace)
    return spec


def egress_policy(
    allow: Optional[Iterable[str]] = None,
    rate: Optional[Size] = None,
    mode: Optional[str] = None,
) -> Dict[str, Variant]:
    """SetEgress's ``a{sv}``: the whole new policy (what is not set is left out)."""
    policy: Dict[str, Variant] = {}
    if allow is not None:
        if isinstance(allow, str):
            raise ValueError("allow is a list of host patterns, not one string")
        policy["EgressAllow"] = ("as", [str(a) for a in allow])
    if rate is not None:
        policy["EgressRateBps"] = ("t", parse_size(rate))
    if mode is not None:
        policy["EgressMode"] = ("s", mode)
    if not policy:
        raise ValueError("set_egress needs allow, rate or mode")
    return policy
