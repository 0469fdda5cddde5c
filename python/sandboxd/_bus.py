# SPDX-License-Identifier: LGPL-2.1-or-later
"""The connection to sandboxd: jeepney on the system bus, with file descriptors.

jeepney (python3-jeepney 0.8 in Debian 12) is pure Python and passes file
descriptors (``enable_fds=True``: SCM_RIGHTS on the bus socket), which
sandboxd's channel and its file and process methods need. Its threading
router lets several threads wait for replies on one connection, which the
asyncio twin (:mod:`sandboxd.aio`) relies on: jeepney 0.8's own asyncio
transport cannot pass file descriptors.
"""

from __future__ import annotations

import threading
import xml.etree.ElementTree as ET
from typing import Any, Dict, Optional, Sequence, Set, Tuple

from jeepney import DBusAddress, MessageFlag, MessageType, new_method_call
from jeepney.io.threading import DBusRouter, open_dbus_connection
from jeepney.low_level import HeaderFields

from . import errors

BUS_NAME = "org.sandboxd1"
MANAGER_PATH = "/org/sandboxd1"
MANAGER_IFACE = "org.sandboxd1.Manager"
WORKER_IFACE = "org.sandboxd1.Worker"
PROPS_IFACE = "org.freedesktop.DBus.Properties"
INTROSPECT_IFACE = "org.freedesktop.DBus.Introspectable"

#: Seconds a call waits for its reply unless told otherwise: CreateWorker
#: replies once the worker runs, and polkit may take up to 25 s to answer.
DEFAULT_TIMEOUT = 120.0


class Bus:
    """One connection to the system bus, shared by the calls of one client.

    Thread-safe: calls from several threads wait for their own replies.
    ``address`` is jeepney's: ``"SYSTEM"`` (``$DBUS_SYSTEM_BUS_ADDRESS`` or
    the standard socket) or a ``unix:path=...`` address. ``interactive``
    lets polkit ask the user for a password (the call waits for it).
    """

    def __init__(self, address: str = "SYSTEM", *, interactive: bool = False) -> None:
        try:
            self._conn = open_dbus_connection(address, enable_fds=True)
        except (OSError, ValueError) as e:
            raise errors.DaemonUnavailable(f"cannot connect to the system bus: {e}") from e
        self._router = DBusRouter(self._conn)
        self.interactive = interactive
        self._members: Dict[Tuple[str, str], Set[str]] = {}
        self._lock = threading.Lock()
        self._closed = False

    @property
    def unique_name(self) -> str:
        """This connection's unique name on the bus."""
        return str(self._conn.unique_name)

    def close(self) -> None:
        """Closes the connection (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self._router.close()
        self._conn.close()

    def __enter__(self) -> "Bus":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def call(self, path: str, interface: str, member: str, signature: Optional[str] = None,
             body: Sequence[Any] = (), *, timeout: Optional[float] = DEFAULT_TIMEOUT,
             destination: str = BUS_NAME) -> Tuple[Any, ...]:
        """Calls a method and returns the reply's body.

        An error reply raises its :mod:`sandboxd.errors` exception; no reply
        within ``timeout`` seconds raises TimeoutError.
        """
        addr = DBusAddress(path, bus_name=destination, interface=interface)
        msg = new_method_call(addr, member, signature, tuple(body))
        if self.interactive:
            msg.header.flags |= MessageFlag.allow_interactive_authorization
        reply = self._router.send_and_get_reply(msg, timeout=timeout)
        if reply.header.message_type == MessageType.error:
            name = reply.header.fields.get(HeaderFields.error_name, "")
            text = reply.body[0] if reply.body and isinstance(reply.body[0], str) else ""
            raise errors.from_dbus(name, text)
        return tuple(reply.body)

    def manager(self, member: str, signature: Optional[str] = None,
                body: Sequence[Any] = (), **kw: Any) -> Tuple[Any, ...]:
        """A call on the Manager, ``/org/sandboxd1``."""
        return self.call(MANAGER_PATH, MANAGER_IFACE, member, signature, body, **kw)

    def get_property(self, path: str, interface: str, name: str) -> Any:
        """One property's value (the variant unwrapped)."""
        (variant,) = self.call(path, PROPS_IFACE, "Get", "ss", (interface, name))
        return variant[1]

    def get_all(self, path: str, interface: str) -> Dict[str, Any]:
        """Every property of ``interface`` on ``path``, variants unwrapped."""
        (props,) = self.call(path, PROPS_IFACE, "GetAll", "s", (interface,))
        return {k: v[1] for k, v in props.items()}

    def members(self, path: str, interface: str) -> Set[str]:
        """The methods, properties and signals ``interface`` has on ``path``.

        Read once per interface by introspection and kept: a worker's object
        says what this sandboxd can do for every worker.
        """
        key = (path if interface == MANAGER_IFACE else "worker", interface)
        with self._lock:
            known = self._members.get(key)
        if known is not None:
            return known
        (xml,) = self.call(path, INTROSPECT_IFACE, "Introspect")
        found: Set[str] = set()
        for iface in ET.fromstring(xml).iter("interface"):
            if iface.get("name") == interface:
                found.update(str(el.get("name")) for el in iface
                             if el.tag in ("method", "property", "signal"))
        with self._lock:
            self._members[key] = found
        return found

    def require(self, path: str, interface: str, member: str) -> None:
        """Raises NotSupported, naming the member, if this sandboxd lacks it."""
        if member not in self.members(path, interface):
            raise errors.missing_method(interface, member)
