"""The protocol's checks that replaced regular expressions agree with those expressions.

re (with enum, functools and collections) costs every ``tray run`` milliseconds, so the
modules on that path check names, ids and base64 with string and bytes methods. Each test
here holds one such check against the expression it replaced, on generated inputs rich in
the characters where the two could part: the ends of each range, newlines (``$``), and
non-ASCII digits and letters (``str.isdigit``, case folding).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st

import tray
from tray.protocol import attention, prompt_marks, report, terminal_input

PROJECT_ROOT = Path(tray.__file__).resolve().parent.parent

SETTINGS = settings(max_examples=500, deadline=None)

# Every range's ends and neighbours, and characters that trip up a hand-written check.
EDGE_TEXT = (
    "Aa Zz 09 @[`{/:_.+-=%;,?\\\n\r\t\x00\x1f\x20\x7e\x7f\x80\x9f\xa0"
    "\u0660\u0663\u00b2\u2155\uff11\u0130\u0131\u017f\u212a\u00e9\U0001f600"
)
EDGE_BYTES = bytes(range(0x30)) + b"9:;@AFGZ[`afgz{\x7f\x80\x9f\xa0\xff"


def _texts(max_size: int) -> st.SearchStrategy[str]:
    return st.text(st.sampled_from(EDGE_TEXT) | st.characters(), max_size=max_size)


def _bytes(max_size: int) -> st.SearchStrategy[bytes]:
    return st.lists(st.sampled_from(EDGE_BYTES) | st.integers(0, 255), max_size=max_size).map(bytes)


def _names_from(alphabet: str, max_size: int) -> st.SearchStrategy[str]:
    """Mostly valid names, with an odd character here and there."""
    return st.text(st.sampled_from(alphabet) | st.sampled_from(EDGE_TEXT), max_size=max_size)


NAME_ALPHABET = "ABCZabcz0189_.+-"

# The expressions as they were.
OLD_APP = r"[A-Za-z0-9_.+-]{1,32}"
OLD_ID_SEGMENT = r"[A-Za-z0-9_.+-]{1,32}"
OLD_ID = rf"{OLD_ID_SEGMENT}(?:/{OLD_ID_SEGMENT}){{0,7}}"
OLD_BASE64 = r"[A-Za-z0-9+/]*"
OLD_CONTROL = r"[\x00-\x1f\x7f-\x9f]"
OLD_KITTY_ID = rb"[A-Za-z0-9_+.-]{1,64}"
OLD_KITTY_BASE64 = rb"[A-Za-z0-9+/]*={0,2}"
OLD_PERCENT = rb"%([0-9A-Fa-f]{2})"
OLD_BAD_PERCENT = rb"%(?![0-9A-Fa-f]{2})"
OLD_STATUS = rb"-?[0-9]{1,10}"
OLD_C0 = re.compile(rb"[\x00-\x1f]")
OLD_CURSOR_REPORT = re.compile(rb"[0-9]+;[0-9]+")


@SETTINGS
@given(_names_from(NAME_ALPHABET, 40) | _texts(40))
@example("a" * 32)
@example("a" * 33)
@example("")
@example("app\n")
def test_report_app_check_is_the_old_expression(text: str) -> None:
    assert report._is_name(text, report.MAX_APP) == bool(re.fullmatch(OLD_APP, text))


@SETTINGS
@given(_names_from(NAME_ALPHABET + "////", 300) | _texts(60))
@example("/".join(["a"] * 8))
@example("/".join(["a"] * 9))
@example("a" * 32 + "/b")
@example("a" * 33 + "/b")
@example("a/")
@example("/a")
@example("a//b")
@example("a/b\n")
def test_report_id_check_is_the_old_expression(text: str) -> None:
    assert report._is_id(text) == bool(re.fullmatch(OLD_ID, text))


@SETTINGS
@given(_names_from("ABZabz09+/=", 40) | _texts(40))
@example("")
@example("QUJD\n")
def test_report_base64_check_is_the_old_expression(text: str) -> None:
    assert report._is_base64_text(text) == bool(re.fullmatch(OLD_BASE64, text))


@SETTINGS
@given(_texts(40))
@example("plain text")
@example("\x7f")
@example("\x9f")
@example("\xa0")
def test_report_control_check_is_the_old_expression(text: str) -> None:
    assert report._has_control(text) == bool(re.search(OLD_CONTROL, text))


@SETTINGS
@given(_bytes(80) | st.text(NAME_ALPHABET, max_size=70).map(str.encode))
@example(b"a" * 64)
@example(b"a" * 65)
@example(b"")
@example(b"id\n")
def test_kitty_id_check_is_the_old_expression(data: bytes) -> None:
    assert attention._is_kitty_id(data) == bool(re.fullmatch(OLD_KITTY_ID, data))


@SETTINGS
@given(_bytes(20) | st.text("ABZabz09+/====", max_size=20).map(str.encode))
@example(b"QQ==")
@example(b"QQ===")
@example(b"Q=Q=")
@example(b"")
@example(b"QQ==\n")
def test_kitty_base64_check_is_the_old_expression(data: bytes) -> None:
    assert attention._is_padded_base64(data) == bool(re.fullmatch(OLD_KITTY_BASE64, data))


def _old_percent_decode(raw: bytes) -> bytes | None:
    if b"%" not in raw:
        return raw
    if re.search(OLD_BAD_PERCENT, raw):
        return None
    return re.sub(OLD_PERCENT, lambda match: bytes([int(match[1], 16)]), raw)


@SETTINGS
@given(_bytes(30) | st.text("%%%0aAfFgG/z", max_size=30).map(str.encode))
@example(b"%")
@example(b"%4")
@example(b"%41")
@example(b"%%41")
@example(b"%4%41")
@example(b"a%2fb%2F%00")
@example(b"%41\n")
def test_percent_decoding_is_the_old_expressions(data: bytes) -> None:
    assert attention.percent_decode(data) == _old_percent_decode(data)


def _old_exit_status(options: bytes) -> int | None:
    first = options.partition(b";")[0]
    return int(first) if re.fullmatch(OLD_STATUS, first) else None


@SETTINGS
@given(_bytes(16) | st.text("-0129;a", max_size=16).map(str.encode))
@example(b"-")
@example(b"--1")
@example(b"1234567890")
@example(b"12345678901")
@example(b"-1234567890")
@example(b"-12345678901")
@example(b"1\n")
@example(b"+1")
@example(b" 1")
@example(b"1_0")
def test_exit_status_is_the_old_expression(options: bytes) -> None:
    assert prompt_marks._exit_status(options) == _old_exit_status(options)


@SETTINGS
@given(_bytes(400), st.integers(0, 420))
@example(b"a" * 300 + b"\x1b", 0)
@example(b"a" * 5000 + b"\x07", 3)
@example(b"\x1f\x20", 1)
def test_c0_search_is_the_old_expression(data: bytes, pos: int) -> None:
    match = OLD_C0.search(data, pos)
    assert terminal_input._find_c0(data, pos) == (-1 if match is None else match.start())


@SETTINGS
@given(_bytes(12) | st.text("0123456789;;", max_size=12).map(str.encode))
@example(b"1;1")
@example(b";1")
@example(b"1;")
@example(b"1;1;1")
@example(b"1;1\n")
def test_cursor_report_check_is_the_old_expression(params: bytes) -> None:
    expected = OLD_CURSOR_REPORT.fullmatch(params) is not None
    assert terminal_input._is_cursor_report(params) == expected


def _run_bare(code: str) -> None:
    """``code`` in an interpreter without site: an editable install's finder, run from a
    .pth file at start-up, imports pathlib and re before any module of tray."""
    subprocess.run([sys.executable, "-S", "-c", code], cwd=PROJECT_ROOT, check=True, timeout=60)


def test_the_protocol_modules_import_no_re() -> None:
    code = (
        "import sys\n"
        "import tray.protocol.scanner, tray.protocol.report, tray.protocol.attention\n"
        "import tray.protocol.terminal_input, tray.protocol.records\n"
        "heavy = {'re', 'enum', 'json', 'functools', 'collections', 'typing', 'pathlib'}\n"
        "assert not heavy & set(sys.modules), heavy & set(sys.modules)\n"
    )
    _run_bare(code)


def test_the_scanner_imports_re_with_the_first_escape_sequence() -> None:
    code = (
        "import sys\n"
        "from tray.protocol.scanner import Scanner\n"
        "scanner = Scanner()\n"
        "scanner.feed(b'plain text\\n' * 1000)\n"
        "scanner.feed(b'a bell\\x07 and another\\x07')\n"
        "assert 're' not in sys.modules\n"
        "scanner.feed(b'\\x1b[31mred\\x1b[0m')\n"
        "assert 're' in sys.modules\n"
    )
    _run_bare(code)
