"""One finding of a check, as ``tray doctor`` prints it and the app logs it: whatever was
checked (the desktop, a terminal's focus, another machine), the same four fields."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Status = Literal["ok", "warn", "FAIL"]


@dataclass(frozen=True, slots=True)
class Check:
    status: Status
    name: str
    found: str
    fix: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def line(self) -> str:
        text = f"{self.status:<4} {self.name}: {self.found}"
        return f"{text}; fix: {self.fix}" if self.fix else text
