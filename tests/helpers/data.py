"""Bytes and text as the tests build them: splits of a stream, base64 fields; and where
the committed test data lives."""

from __future__ import annotations

import base64
import itertools
from collections.abc import Sequence
from pathlib import Path

# tests/data: the captures and the agents' recordings.
DATA = Path(__file__).resolve().parent.parent / "data"


def split_at(data: bytes, cuts: Sequence[int]) -> list[bytes]:
    """``data`` cut at each offset of ``cuts`` (in any order; repeats give empty parts)."""
    points = [0, *sorted(cuts), len(data)]
    return [data[a:b] for a, b in itertools.pairwise(points)]


def b64(text: str | bytes, pad: bool = True) -> str:
    """Standard base64 of ``text`` (UTF-8), with or without its ``=`` padding."""
    raw = text.encode() if isinstance(text, str) else text
    encoded = base64.b64encode(raw).decode("ascii")
    return encoded if pad else encoded.rstrip("=")
