"""The Wayland wire client (tray/desktop/wayland_wire.py) without a compositor: its
encoding against bytes worked out by hand from the protocol's rules, decoding, messages
split across reads at every byte, and a connection whose other end is the test itself
(a socket pair), speaking as a compositor would."""

from __future__ import annotations

import array
import os
import socket
import struct
from collections.abc import Iterator

import pytest

from tray.desktop.wayland_wire import (
    WL_REGISTRY,
    Arg,
    Interface,
    MessageReader,
    RawMessage,
    WaylandConnection,
    WaylandError,
    decode_args,
    encode_args,
    encode_message,
    socket_path,
)


def words(*values: int) -> bytes:
    return b"".join(struct.pack("=I", value) for value in values)


def test_a_string_is_its_length_with_the_nul_then_the_bytes_padded_to_four() -> None:
    assert encode_args("s", ["abc"]) == words(4) + b"abc\0"
    assert encode_args("s", ["abcd"]) == words(5) + b"abcd\0\0\0\0"
    assert encode_args("s", [None]) == words(0)
    assert encode_args("s", [""]) == words(1) + b"\0\0\0\0"


def test_numbers_fixed_objects_and_arrays_encode_as_the_protocol_says() -> None:
    assert encode_args("iu", [-2, 0xFFFFFFFF]) == words(0xFFFFFFFE, 0xFFFFFFFF)
    # 24.8 fixed point: 1.5 is 0x180, -0.25 is -0x40.
    assert encode_args("ff", [1.5, -0.25]) == struct.pack("=ii", 0x180, -0x40)
    assert encode_args("on", [7, 8]) == words(7, 8)
    assert encode_args("a", [b"\x01\x02\x03\x04\x05"]) == words(5) + b"\x01\x02\x03\x04\x05\0\0\0"


def test_a_message_header_holds_the_object_and_the_size_over_the_opcode() -> None:
    message = encode_message(3, 9, "ff", [640.0, 400.0])
    assert message[:8] == words(3, (16 << 16) | 9)
    assert len(message) == 16


def test_arguments_that_do_not_fit_their_types_are_refused() -> None:
    with pytest.raises(ValueError, match="does not fit"):
        encode_args("u", ["1"])
    with pytest.raises(ValueError, match="NUL"):
        encode_args("s", ["a\0b"])
    with pytest.raises(ValueError, match="out of range"):
        encode_args("u", [-1])
    with pytest.raises(ValueError, match="out of range"):
        encode_args("i", [2**31])
    with pytest.raises(ValueError, match="no file descriptors"):
        encode_args("h", [3])
    with pytest.raises(ValueError, match="arguments"):
        encode_args("uu", [1])
    with pytest.raises(ValueError, match="over"):
        encode_message(1, 0, "s", ["x" * 5000])


def test_decoding_gives_back_what_was_encoded() -> None:
    signature = "iufsosan"
    values: list[Arg] = [-7, 42, -3.5, "grüße", 5, None, b"\x00\xff", 12]
    assert decode_args(signature, encode_args(signature, values)) == values
    # An fd is carried beside the bytes: it takes no room, and reads None.
    assert decode_args("uhu", words(1, 2)) == [1, None, 2]


@pytest.mark.parametrize(
    ("signature", "payload", "problem"),
    [
        ("u", b"\x01\x00", "inside an argument"),
        ("s", words(8) + b"abc\0", "inside a string"),
        ("s", words(4) + b"abcd", "without its NUL"),
        ("u", words(1, 2), "longer than its arguments"),
    ],
)
def test_a_payload_that_does_not_match_is_a_wayland_error(
    signature: str, payload: bytes, problem: str
) -> None:
    with pytest.raises(WaylandError, match=problem):
        decode_args(signature, payload)


def stream() -> tuple[bytes, list[RawMessage]]:
    """Three messages back to back, and what they are."""
    first = encode_message(2, 0, "usu", [1, "wl_seat", 8])
    second = encode_message(1, 1, "u", [5])
    third = encode_message(9, 0, "", [])
    expected = [
        RawMessage(2, 0, first[8:]),
        RawMessage(1, 1, second[8:]),
        RawMessage(9, 0, b""),
    ]
    return first + second + third, expected


def test_every_split_of_the_stream_into_two_reads_gives_the_same_messages() -> None:
    data, expected = stream()
    for cut in range(len(data) + 1):
        reader = MessageReader()
        found = reader.feed(data[:cut]) + reader.feed(data[cut:])
        assert found == expected, cut
        assert reader.pending == 0


def test_byte_by_byte_reads_give_each_message_when_its_last_byte_comes() -> None:
    data, expected = stream()
    reader = MessageReader()
    found: list[RawMessage] = []
    for index in range(len(data)):
        found += reader.feed(data[index : index + 1])
        assert reader.pending == (len(data[: index + 1]) - sum(8 + len(m.payload) for m in found))
    assert found == expected


@pytest.mark.parametrize("size", [0, 4, 10, 8192])
def test_a_header_with_an_impossible_size_is_a_wayland_error(size: int) -> None:
    with pytest.raises(WaylandError, match="bad size"):
        MessageReader().feed(words(1, size << 16))


def test_the_socket_is_a_plain_name_in_the_runtime_dir_or_an_absolute_path() -> None:
    assert socket_path({"WAYLAND_DISPLAY": "wayland-1", "XDG_RUNTIME_DIR": "/run/u"}) == (
        "/run/u/wayland-1"
    )
    assert socket_path({"XDG_RUNTIME_DIR": "/run/u"}) == "/run/u/wayland-0"
    assert socket_path({"WAYLAND_DISPLAY": "/tmp/w/sock"}) == "/tmp/w/sock"


@pytest.mark.parametrize(
    "env",
    [
        {"WAYLAND_DISPLAY": "../wayland-0", "XDG_RUNTIME_DIR": "/run/u"},
        {"WAYLAND_DISPLAY": "sub/wayland-0", "XDG_RUNTIME_DIR": "/run/u"},
        {"WAYLAND_DISPLAY": "..", "XDG_RUNTIME_DIR": "/run/u"},
        {"WAYLAND_DISPLAY": "wayland-0"},
        {"WAYLAND_DISPLAY": "wayland-0", "XDG_RUNTIME_DIR": "relative"},
        {"WAYLAND_DISPLAY": "/" + "x" * 200},
    ],
)
def test_any_other_socket_is_refused(env: dict[str, str]) -> None:
    with pytest.raises(WaylandError):
        socket_path(env)


# -- a connection whose compositor is the test --------------------------------------------


class FakeWireCompositor:
    """The other end of a socket pair: reads the client's requests, writes events."""

    def __init__(self, end: socket.socket) -> None:
        self.end = end
        self.reader = MessageReader()

    def requests(self, count: int) -> list[RawMessage]:
        found: list[RawMessage] = []
        while len(found) < count:
            found += self.reader.feed(self.end.recv(4096))
        return found

    def send(self, data: bytes, fds: list[int] | None = None) -> None:
        ancillary = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))] if fds else []
        self.end.sendmsg([data], ancillary)


@pytest.fixture
def pair() -> Iterator[tuple[WaylandConnection, FakeWireCompositor]]:
    client_end, server_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    connection = WaylandConnection(client_end)
    try:
        yield connection, FakeWireCompositor(server_end)
    finally:
        connection.close()
        server_end.close()


def test_a_roundtrip_reads_the_registry_and_binding_sends_name_interface_version_id(
    pair: tuple[WaylandConnection, FakeWireCompositor],
) -> None:
    connection, compositor = pair
    (get_registry,) = compositor.requests(1)
    assert (get_registry.object_id, get_registry.opcode, get_registry.payload) == (1, 1, words(2))
    callback_id = 3
    # The globals and the callback's done, cut into reads at odd places.
    events = (
        encode_message(2, 0, "usu", [12, "wl_seat", 8])
        + encode_message(2, 0, "usu", [21, "ext_idle_notifier_v1", 1])
        + encode_message(callback_id, 0, "u", [99])
    )
    compositor.send(events[:5])
    compositor.send(events[5:31])
    compositor.send(events[31:])
    connection.roundtrip(timeout=5)
    (sync,) = compositor.requests(1)
    assert (sync.object_id, sync.opcode, sync.payload) == (1, 0, words(callback_id))
    assert {g.interface: (g.name, g.version) for g in connection.globals.values()} == {
        "wl_seat": (12, 8),
        "ext_idle_notifier_v1": (21, 1),
    }
    notifier = Interface("ext_idle_notifier_v1", {"get_idle_notification": (1, "nuo")})
    note = Interface("ext_idle_notification_v1", {}, {0: ("idled", ""), 1: ("resumed", "")})
    bound = connection.bind(notifier, 3)
    assert bound.version == 1  # the compositor's, being lower
    (bind,) = compositor.requests(1)
    assert bind.object_id == connection.registry.id
    assert bind.payload == encode_args("usun", [21, "ext_idle_notifier_v1", 1, bound.id])
    made = bound.request("get_idle_notification", 5000, 4, new=note)
    assert made is not None
    (request,) = compositor.requests(1)
    assert (request.opcode, request.payload) == (1, words(made.id, 5000, 4))
    compositor.send(encode_message(made.id, 0, "", []) + encode_message(made.id, 7, "", []))
    connection.dispatch_until(lambda: bool(made.events), 5)
    assert made.events == [("idled", [])]  # the undescribed event 7 is dropped


def test_fds_that_come_with_events_are_closed(
    pair: tuple[WaylandConnection, FakeWireCompositor],
) -> None:
    connection, compositor = pair
    compositor.requests(1)
    keymap = Interface("wl_keyboard", {}, {0: ("keymap", "uhu")})
    keyboard = connection.new_proxy(keymap, 1)
    read_end, write_end = os.pipe()
    try:
        before = set(os.listdir("/proc/self/fd"))
        # The fd takes no bytes in the message: it goes beside them.
        compositor.send(encode_message(keyboard.id, 0, "uu", [1, 48]), [read_end])
        connection.dispatch_until(lambda: bool(keyboard.events), 5)
        assert keyboard.events == [("keymap", [1, None, 48])]
        assert set(os.listdir("/proc/self/fd")) <= before
    finally:
        os.close(read_end)
        os.close(write_end)


def test_a_protocol_error_and_the_compositor_leaving_are_wayland_errors(
    pair: tuple[WaylandConnection, FakeWireCompositor],
) -> None:
    connection, compositor = pair
    compositor.requests(1)
    compositor.send(encode_message(1, 0, "ous", [2, 1, "invalid\x1b[31m arguments"]))
    expected = r"^Wayland protocol error 1 on object 2: invalid"
    with pytest.raises(WaylandError, match=expected) as error:
        connection.dispatch_until(lambda: False, 5)
    assert "\x1b" not in str(error.value)
    assert connection.closed
    with pytest.raises(WaylandError, match="closed"):
        connection.send(1, 0, "n", [9])


def test_a_compositor_that_hangs_up_ends_the_connection(
    pair: tuple[WaylandConnection, FakeWireCompositor],
) -> None:
    connection, compositor = pair
    compositor.requests(1)  # unread, they would make it a reset rather than an end
    compositor.end.close()
    with pytest.raises(WaylandError, match="closed the connection"):
        connection.dispatch_until(lambda: False, 5)
    assert connection.closed


def test_no_compositor_at_the_socket_is_a_one_line_error() -> None:
    with pytest.raises(WaylandError, match="no Wayland compositor at /nonexistent/w-0"):
        WaylandConnection.connect({"WAYLAND_DISPLAY": "/nonexistent/w-0"})


def test_the_registry_forgets_a_removed_global(
    pair: tuple[WaylandConnection, FakeWireCompositor],
) -> None:
    connection, compositor = pair
    compositor.requests(1)
    compositor.send(
        encode_message(2, 0, "usu", [5, "wl_output", 4])
        + encode_message(2, 1, "u", [5])
        + encode_message(3, 0, "u", [1])
    )
    connection.roundtrip(timeout=5)
    assert connection.find("wl_output") is None
    assert WL_REGISTRY.events[1] == ("global_remove", "u")
