"""A small Wayland client that speaks the wire protocol itself, in pure Python: connect to
the compositor's socket, list its globals, bind them, send requests and read events.

It knows no protocol beyond the core objects it needs to start (``wl_display``,
``wl_registry``, ``wl_callback``); a caller describes the interfaces it uses as
:class:`Interface` values (opcodes and argument signatures, from the protocol's XML).
Argument types, one letter each: ``i`` int, ``u`` uint, ``f`` fixed (a float), ``s``
string (or None), ``o`` object (an id, 0 for none), ``n`` new_id, ``a`` array (bytes),
``h`` fd. File descriptors are neither sent nor kept: one that comes with an event is
closed, and the event's argument reads None. Events an :class:`Interface` does not
describe are dropped undecoded.

The compositor is the user's own, but what it sends is still checked: a malformed
message ends the connection with :class:`WaylandError`, never a traceback.
"""

from __future__ import annotations

import array
import os
import select
import socket
import struct
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from tray.base.safe_text import clean_text

HEADER = struct.Struct("=II")  # object id; message size << 16 | opcode (host order)
HEADER_SIZE = HEADER.size
# libwayland's own limit on one message (header included).
MAX_MESSAGE = 4096
# How many file descriptors one read may carry before they are closed unread.
MAX_FDS = 28
DISPLAY_ID = 1
# Client-side ids run from 2 up to this; above are the server's.
MAX_CLIENT_ID = 0xFEFFFFFF
ROUNDTRIP_TIMEOUT = 3.0
# sockaddr_un.sun_path holds 108 bytes, the terminating NUL among them.
MAX_SOCKET_PATH = 107

Arg = int | float | str | bytes | None
EventHandler = Callable[[str, list[Arg]], None]


class WaylandError(Exception):
    """The connection failed, broke, or the compositor sent an error or a bad message."""


@dataclass(frozen=True, slots=True)
class Interface:
    """A Wayland interface as far as a caller uses it: its requests by name, as (opcode,
    signature), and its events by opcode, as (name, signature)."""

    name: str
    requests: Mapping[str, tuple[int, str]]
    events: Mapping[int, tuple[str, str]] = field(default_factory=dict)


WL_DISPLAY = Interface(
    "wl_display",
    {"sync": (0, "n"), "get_registry": (1, "n")},
    {0: ("error", "ous"), 1: ("delete_id", "u")},
)
# bind's new_id has no fixed interface, so it goes as interface name, version, id.
WL_REGISTRY = Interface(
    "wl_registry", {"bind": (0, "usun")}, {0: ("global", "usu"), 1: ("global_remove", "u")}
)
WL_CALLBACK = Interface("wl_callback", {}, {0: ("done", "u")})
WL_SEAT = Interface(
    "wl_seat",
    {"get_pointer": (0, "n"), "get_keyboard": (1, "n"), "get_touch": (2, "n")},
    {0: ("capabilities", "u"), 1: ("name", "s")},
)


# -- the wire format (pure functions) ---------------------------------------------------


def _padded(size: int) -> int:
    return (size + 3) & ~3


def encode_args(signature: str, args: Sequence[Arg]) -> bytes:
    """The payload of a message with ``args`` of ``signature`` (no ``h``: fds are not
    sent)."""
    if len(signature) != len(args):
        raise ValueError(f"{len(args)} arguments for signature {signature!r}")
    parts: list[bytes] = []
    for kind, value in zip(signature, args, strict=True):
        try:
            parts.append(_encode_arg(kind, value))
        except struct.error:
            raise ValueError(f"argument {value!r} is out of range for type {kind!r}") from None
    return b"".join(parts)


def _encode_arg(kind: str, value: Arg) -> bytes:
    """One argument's bytes."""
    if kind == "i" and isinstance(value, int):
        return struct.pack("=i", value)
    if kind in "uon" and isinstance(value, int):
        return struct.pack("=I", value)
    if kind == "f" and isinstance(value, int | float):
        return struct.pack("=i", round(value * 256))
    if kind == "s" and (value is None or isinstance(value, str)):
        data = b"" if value is None else value.encode() + b"\0"
        if b"\0" in data[:-1]:
            raise ValueError("a Wayland string cannot hold NUL")
        return struct.pack("=I", len(data)) + data.ljust(_padded(len(data)), b"\0")
    if kind == "h":
        raise ValueError("this client sends no file descriptors")
    if kind == "a" and isinstance(value, bytes):
        return struct.pack("=I", len(value)) + value.ljust(_padded(len(value)), b"\0")
    raise ValueError(f"argument {value!r} does not fit type {kind!r}")


def encode_message(object_id: int, opcode: int, signature: str, args: Sequence[Arg]) -> bytes:
    """One whole message: header and payload."""
    payload = encode_args(signature, args)
    size = HEADER_SIZE + len(payload)
    if size > MAX_MESSAGE:
        raise ValueError(f"a message of {size} bytes is over Wayland's {MAX_MESSAGE}")
    return HEADER.pack(object_id, size << 16 | opcode) + payload


def decode_args(signature: str, payload: bytes) -> list[Arg]:
    """The arguments in ``payload``; :class:`WaylandError` when it does not match."""
    values: list[Arg] = []
    at = 0

    def word() -> int:
        nonlocal at
        if at + 4 > len(payload):
            raise WaylandError("a Wayland message ends inside an argument")
        (value,) = struct.unpack_from("=I", payload, at)
        at += 4
        return int(value)

    def block(length: int) -> bytes:
        nonlocal at
        end = at + _padded(length)
        if end > len(payload):
            raise WaylandError("a Wayland message ends inside a string or array")
        data = payload[at : at + length]
        at = end
        return data

    for kind in signature:
        if kind == "h":
            values.append(None)  # the fd came beside the bytes, and was closed
        elif kind == "i":
            values.append(struct.unpack("=i", struct.pack("=I", word()))[0])
        elif kind == "f":
            values.append(struct.unpack("=i", struct.pack("=I", word()))[0] / 256)
        elif kind in "uon":
            values.append(word())
        elif kind == "s":
            length = word()
            data = block(length)
            if length and data[-1:] != b"\0":
                raise WaylandError("a Wayland string without its NUL")
            values.append(data[:-1].decode(errors="replace") if length else None)
        elif kind == "a":
            values.append(block(word()))
        else:
            raise ValueError(f"unknown argument type {kind!r}")
    if at != len(payload):
        raise WaylandError("a Wayland message longer than its arguments")
    return values


@dataclass(frozen=True, slots=True)
class RawMessage:
    """One message off the wire, its payload not yet decoded."""

    object_id: int
    opcode: int
    payload: bytes


class MessageReader:
    """Cuts a byte stream into messages, however the reads split it."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[RawMessage]:
        """Add ``data``; every message now complete, in order."""
        self._buffer += data
        found: list[RawMessage] = []
        while len(self._buffer) >= HEADER_SIZE:
            object_id, size_opcode = HEADER.unpack_from(self._buffer)
            size = size_opcode >> 16
            if size < HEADER_SIZE or size % 4 or size > MAX_MESSAGE:
                raise WaylandError(f"a Wayland message with a bad size ({size})")
            if len(self._buffer) < size:
                break
            payload = bytes(self._buffer[HEADER_SIZE:size])
            del self._buffer[:size]
            found.append(RawMessage(object_id, size_opcode & 0xFFFF, payload))
        return found

    @property
    def pending(self) -> int:
        """Bytes of a message not yet complete."""
        return len(self._buffer)


# -- the connection ---------------------------------------------------------------------


def socket_path(env: Mapping[str, str]) -> str:
    """Where the compositor listens: WAYLAND_DISPLAY (default "wayland-0") as a plain name
    in XDG_RUNTIME_DIR, or as an absolute path. Anything else is refused."""
    display = env.get("WAYLAND_DISPLAY") or "wayland-0"
    if display.startswith("/"):
        path = display
    elif "/" in display or display in {".", ".."} or "\0" in display:
        raise WaylandError("WAYLAND_DISPLAY is neither a plain name nor an absolute path")
    else:
        runtime = env.get("XDG_RUNTIME_DIR", "")
        if not runtime.startswith("/"):
            raise WaylandError("XDG_RUNTIME_DIR is not set to an absolute path")
        path = os.path.join(runtime, display)
    if "\0" in path or len(path.encode()) > MAX_SOCKET_PATH:
        raise WaylandError("the Wayland socket's path is too long")
    return path


@dataclass(frozen=True, slots=True)
class Global:
    """A global the compositor announced: its name (a number), interface and version."""

    name: int
    interface: str
    version: int


class Proxy:
    """A client's handle on one object: send its requests, receive its events.

    Events go to ``handler`` when one is set, else into ``events`` for the caller to
    read. Ids are never reused (they would be only after delete_id; a short-lived
    client need not)."""

    def __init__(
        self, connection: WaylandConnection, object_id: int, interface: Interface, version: int
    ) -> None:
        self.connection = connection
        self.id = object_id
        self.interface = interface
        self.version = version
        self.handler: EventHandler | None = None
        self.events: list[tuple[str, list[Arg]]] = []

    def request(self, name: str, *args: Arg, new: Interface | None = None) -> Proxy | None:
        """Send request ``name`` with ``args``. For a request that makes an object (an
        ``n`` in its signature), leave that argument out and name its interface as
        ``new``; the new object's proxy is returned."""
        opcode, signature = self.interface.requests[name]
        made: Proxy | None = None
        values = list(args)
        if "n" in signature:
            if new is None:
                raise ValueError(f"{name} makes an object: give its interface as new=")
            made = self.connection.new_proxy(new, self.version)
            values.insert(signature.index("n"), made.id)
        self.connection.send(self.id, opcode, signature, values)
        return made

    def deliver(self, opcode: int, payload: bytes) -> None:
        known = self.interface.events.get(opcode)
        if known is None:
            return  # an event the caller did not describe: not needed, so not decoded
        name, signature = known
        args = decode_args(signature, payload)
        if self.handler is not None:
            self.handler(name, args)
        else:
            self.events.append((name, args))


class WaylandConnection:
    """One connection to a compositor, with its registry read once :meth:`roundtrip`
    (or :meth:`read_available` after a ``sync``) has seen the compositor's answer.

    Blocking use: ``roundtrip()``. In an event loop: watch :meth:`fileno` for reading
    and call :meth:`read_available` when it is readable."""

    def __init__(self, sock: socket.socket) -> None:
        self._socket = sock
        self._reader = MessageReader()
        self._next_id = DISPLAY_ID + 1
        self._objects: dict[int, Proxy] = {}
        self.closed = False
        self.display = Proxy(self, DISPLAY_ID, WL_DISPLAY, 1)
        self.display.handler = self._display_event
        self._objects[DISPLAY_ID] = self.display
        self.globals: dict[int, Global] = {}
        registry = self.display.request("get_registry", new=WL_REGISTRY)
        assert registry is not None
        registry.handler = self._registry_event
        self.registry = registry

    @classmethod
    def connect(cls, env: Mapping[str, str]) -> WaylandConnection:
        """Connect to the compositor that ``env`` names; :class:`WaylandError` if not."""
        path = socket_path(env)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        try:
            sock.settimeout(ROUNDTRIP_TIMEOUT)
            sock.connect(path)
        except OSError as error:
            sock.close()
            raise WaylandError(f"no Wayland compositor at {path}: {error.strerror}") from None
        return cls(sock)

    def fileno(self) -> int:
        return self._socket.fileno()

    def new_proxy(self, interface: Interface, version: int) -> Proxy:
        if self._next_id > MAX_CLIENT_ID:
            raise WaylandError("out of Wayland object ids")
        proxy = Proxy(self, self._next_id, interface, version)
        self._objects[proxy.id] = proxy
        self._next_id += 1
        return proxy

    def send(self, object_id: int, opcode: int, signature: str, args: Sequence[Arg]) -> None:
        if self.closed:
            raise WaylandError("the Wayland connection is closed")
        message = encode_message(object_id, opcode, signature, args)
        try:
            self._socket.sendall(message)
        except OSError as error:
            self.close()
            raise WaylandError(f"the Wayland connection broke: {error.strerror}") from None

    def find(self, interface: str) -> Global | None:
        """The first global of ``interface``, once the registry was read."""
        return next((item for item in self.globals.values() if item.interface == interface), None)

    def bind(self, interface: Interface, version: int) -> Proxy:
        """Bind the first global of ``interface`` at ``version`` or the compositor's own,
        whichever is lower; :class:`WaylandError` when there is none."""
        found = self.find(interface.name)
        if found is None:
            raise WaylandError(f"the compositor offers no {interface.name}")
        chosen = min(version, found.version)
        proxy = self.new_proxy(interface, chosen)
        self.send(self.registry.id, 0, "usun", [found.name, interface.name, chosen, proxy.id])
        return proxy

    def sync(self) -> Proxy:
        """Ask for a ``done`` event once the compositor has handled everything sent so
        far; the callback's proxy (its ``events`` get ("done", [serial]))."""
        callback = self.display.request("sync", new=WL_CALLBACK)
        assert callback is not None
        return callback

    def roundtrip(self, timeout: float = ROUNDTRIP_TIMEOUT) -> None:
        """Send a sync and read and dispatch events until it is done (blocking)."""
        callback = self.sync()
        done: list[bool] = []
        callback.handler = lambda _name, _args: done.append(True)
        self.dispatch_until(lambda: bool(done), timeout)

    def dispatch_until(self, condition: Callable[[], bool], timeout: float) -> None:
        """Read and dispatch events until ``condition()`` holds (blocking, up to
        ``timeout`` seconds); :class:`WaylandError` when time runs out."""
        deadline = time.monotonic() + timeout
        while not condition():
            left = deadline - time.monotonic()
            if left <= 0:
                raise WaylandError("the Wayland compositor did not answer in time")
            readable, _, _ = select.select([self._socket], [], [], left)
            if readable:
                self.read_available()

    def read_available(self) -> int:
        """Read what the socket holds now (without waiting) and dispatch it; how many
        events were dispatched. The end of the connection raises :class:`WaylandError`."""
        if self.closed:
            raise WaylandError("the Wayland connection is closed")
        fds = array.array("i")
        try:
            data, ancillary, _flags, _address = self._socket.recvmsg(
                MAX_MESSAGE, socket.CMSG_SPACE(MAX_FDS * fds.itemsize), socket.MSG_DONTWAIT
            )
        except (BlockingIOError, InterruptedError):
            return 0
        except OSError as error:
            self.close()
            raise WaylandError(f"the Wayland connection broke: {error.strerror}") from None
        for level, kind, carried in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(carried[: len(carried) - len(carried) % fds.itemsize])
        for fd in fds:
            os.close(fd)  # events' fds are not used here
        if not data:
            self.close()
            raise WaylandError("the Wayland compositor closed the connection")
        messages = self._reader.feed(data)
        for message in messages:
            target = self._objects.get(message.object_id)
            if target is None:
                continue  # an event for an object destroyed since: dropped, as libwayland does
            target.deliver(message.opcode, message.payload)
        return len(messages)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._socket.close()

    def _display_event(self, name: str, args: list[Arg]) -> None:
        if name == "error":
            object_id, code, message = (str(arg) if arg is not None else "" for arg in args)
            self.close()
            raise WaylandError(
                clean_text(f"Wayland protocol error {code} on object {object_id}: {message}")
            )
        if name == "delete_id" and isinstance(args[0], int) and args[0] != DISPLAY_ID:
            self._objects.pop(args[0], None)

    def _registry_event(self, name: str, args: list[Arg]) -> None:
        if name == "global":
            number, interface, version = args
            if isinstance(number, int) and isinstance(interface, str) and isinstance(version, int):
                self.globals[number] = Global(number, interface, version)
        elif name == "global_remove" and isinstance(args[0], int):
            self.globals.pop(args[0], None)


__all__ = [
    "WL_CALLBACK",
    "WL_DISPLAY",
    "WL_REGISTRY",
    "WL_SEAT",
    "Arg",
    "Global",
    "Interface",
    "MessageReader",
    "Proxy",
    "RawMessage",
    "WaylandConnection",
    "WaylandError",
    "decode_args",
    "encode_args",
    "encode_message",
    "socket_path",
]
