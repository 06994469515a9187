"""What the scripts that record real agents' terminal output for tests/data/agents share."""

from __future__ import annotations

import re
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol, TypeVar

from helpers.agent_terminal import PROJECT_ROOT, PlayedTerminal


class Named(Protocol):
    @property
    def app(self) -> str: ...

    @property
    def name(self) -> str: ...


S = TypeVar("S", bound=Named)


def idle(terminal: PlayedTerminal, seconds: float) -> None:
    """Keep playing the terminal for ``seconds`` (the agent's last redraws come in)."""
    deadline = terminal.clock() + seconds
    while terminal.clock() < deadline:
        terminal.pump(0.02)


def write_captures(
    argv: list[str],
    scenarios: Sequence[S],
    capture: Callable[[S, Path], bytes],
    titles: bytes,
    more: Callable[[bytes], str] = lambda _: "",
) -> int:
    """Capture each scenario (only those named ``APP-NAME`` in ``argv[2:]``, if any) into
    ``argv[1]`` (default tests/data/agents) as ``APP-NAME.bin``, and print what it holds:
    its size, the window titles set by the OSC codes in ``titles`` (such as ``b"0"``)
    and what ``more`` adds."""
    out = Path(argv[1]) if len(argv) > 1 else PROJECT_ROOT / "tests" / "data" / "agents"
    wanted = set(argv[2:])
    out.mkdir(parents=True, exist_ok=True)
    title = re.compile(rb"\x1b\][" + titles + rb"];([^\x07\x1b]*)")
    for scenario in scenarios:
        name = f"{scenario.app}-{scenario.name}"
        if wanted and name not in wanted:
            continue
        with tempfile.TemporaryDirectory(prefix=f"{name}-") as root:
            data = capture(scenario, Path(root))
        (out / f"{name}.bin").write_bytes(data)
        shown = sorted({m.decode(errors="replace").rstrip() for m in title.findall(data)})
        print(f"{name}.bin: {len(data)} bytes; titles {shown}{more(data)}")
    return 0
