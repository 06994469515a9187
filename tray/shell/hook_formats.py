"""Where each agent keeps its hooks, and tray's hooks in that agent's own format.

Each hook runs ``tray emit --hook APP EVENT`` (the path of the tray that installed it)
and gets the agent's JSON payload on stdin. tray's hook is told from the user's own by
its command alone: the last words ``emit --hook APP EVENT`` after a tray program. So
``install`` changes only those, ``remove`` takes only those away, and the user's hooks
and settings around them stay exactly as they were (the file is rewritten with two-space
indents, though: JSON keeps no record of the user's spacing).

An event the rules name ``EVENT:SUBTYPE`` is the agent's EVENT with its ``matcher`` set to
SUBTYPE (a notification's type: ``notification:permission_prompt``); the hook still
passes the whole name to ``tray emit``, so the rules tell the subtypes apart. An agent
takes an unknown event name as its key without a word, and never runs it.

- GitHub Copilot CLI: a file of its own, ``$COPILOT_HOME/hooks/tray.json`` (else
  ``~/.copilot``): ``{"version": 1, "hooks": {EVENT: [{"type": "command", "matcher":
  SUBTYPE, "bash": CMD, "timeoutSec": N}]}}``. Never ``permissionRequest`` nor
  ``preToolUse``: Copilot denies the tool call when those fail.
- Gemini CLI: ``hooks`` in ``$GEMINI_CLI_HOME/.gemini/settings.json`` (else ``~``):
  ``{EVENT: [{"matcher": SUBTYPE, "hooks": [{"name", "type": "command", "command": CMD,
  "timeout": MS}]}]}``.
- Qwen Code: the same shape in ``$QWEN_HOME/settings.json`` (else ``~/.qwen``), with
  its timeout in seconds.

opencode takes a plugin instead: :mod:`tray.shell.opencode_plugin`.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Protocol

from tray.shell.hook_files import (
    HookFileError,
    json_bytes,
    parse_object,
    read_bytes,
    read_object,
    remove,
    write_atomically,
)

# How long an agent lets tray's hook run before it gives up on it: `tray emit --hook`
# takes well under a second, and bounds its own waits to less than this.
TIMEOUT_SECONDS: Final = 5
HOOK_NAME: Final = "tray"


@dataclass(frozen=True, slots=True)
class Installed:
    """tray's hook for one event, as found in an agent's settings."""

    event: str
    command: str


@dataclass(frozen=True, slots=True)
class Change:
    """What ``install`` or ``remove`` did, or would do, to one file."""

    path: Path
    added: tuple[str, ...] = ()
    updated: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    deleted: bool = False  # the file itself went away
    notes: tuple[str, ...] = ()

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated or self.removed or self.deleted)


class HookFormat(Protocol):
    """One agent's hooks: where they live and how tray's are written there."""

    app: str
    timeout: str  # said to the user: "5 s"

    def path(self, environ: Mapping[str, str], home: Path) -> Path: ...

    def refusal(self, event: str) -> str | None:
        """Why tray never installs a hook for ``event``; None when it does."""
        ...

    def installed(self, path: Path) -> tuple[Installed, ...]: ...

    def install(
        self, path: Path, events: Sequence[str], argv: Sequence[str], *, write: bool = True
    ) -> Change:
        """Bring tray's hooks in ``path`` to ``events``; with ``write`` False, only say what
        that would change."""
        ...

    def remove(self, path: Path) -> Change: ...


def hook_argv(argv: Sequence[str], app: str, event: str) -> list[str]:
    return [*argv, "emit", "--hook", app, event]


def command_line(argv: Sequence[str], app: str, event: str) -> str:
    """The shell command of tray's hook: the agents run it with ``bash -c``."""
    return shlex.join(hook_argv(argv, app, event))


def split_event(event: str) -> tuple[str, str | None]:
    """A rules file's event name as the agent's event and its subtype (its matcher)."""
    name, _, subtype = event.partition(":")
    return (name, subtype) if name and subtype else (event, None)


def hook_event(command: object, app: str) -> str | None:
    """EVENT when ``command`` is ``TRAY emit --hook APP EVENT``, TRAY being a ``tray``
    program or ``PYTHON -m tray``; None for any other command."""
    if not isinstance(command, str):
        return None
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    if len(words) < 5 or words[-4:-1] != ["emit", "--hook", app]:
        return None
    program = words[:-4]
    if os.path.basename(program[-1]) == "tray" or program[-2:] == ["-m", "tray"]:
        return words[-1]
    return None


def _home_dir(environ: Mapping[str, str], variable: str, default: Path) -> Path:
    value = environ.get(variable)
    return Path(value) if value else default


# --- the JSON formats ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Slot:
    """Where tray's hook for one event goes: the event's key, its matcher, its command."""

    key: str
    matcher: str | None
    command: str


@dataclass(frozen=True, slots=True, eq=False)
class _Place:
    """One single hook found under an event's key: the list it is in, and the object its
    matcher sits on (the hook itself in Copilot's shape, its group in Gemini's)."""

    hooks: list[Any]
    hook: dict[str, Any]
    holder: dict[str, Any]
    event: str  # the EVENT its command passes to tray emit


class JsonHooks:
    """Hooks kept in a JSON document's ``hooks`` table: event name -> list of entries.

    A subclass says where the command and the matcher sit in an entry and how tray's entry
    looks.
    """

    app: str
    timeout: str
    # Whether the file is tray's own (Copilot's hooks folder): then it goes away once it
    # holds nothing but tray's emptied shell.
    own_file: bool = False

    def path(self, environ: Mapping[str, str], home: Path) -> Path:
        raise NotImplementedError

    def holders(self, entries: list[Any]) -> Iterator[tuple[list[Any], dict[str, Any], Any]]:
        """Each single hook in an event's entries: (its list, its matcher's object, it)."""
        raise NotImplementedError

    def command_of(self, hook: object) -> object:
        raise NotImplementedError

    def set_command(self, hook: dict[str, Any], command: str) -> None:
        raise NotImplementedError

    def new_entry(self, command: str, matcher: str | None) -> dict[str, Any]:
        raise NotImplementedError

    def tidy(self, entries: list[Any]) -> list[Any]:
        """The entries once tray's hooks are out: what is left of them."""
        return entries

    def empty_document(self) -> dict[str, Any]:
        return {}

    def notes(self, document: Mapping[str, Any], path: Path) -> tuple[str, ...]:
        return ()

    def refusal(self, event: str) -> str | None:
        return None

    # The work.

    def installed(self, path: Path) -> tuple[Installed, ...]:
        document = read_object(path)
        if document is None:
            return ()
        return tuple(
            Installed(place.event, str(self.command_of(place.hook)))
            for key, entries in self._table(document, path).items()
            for place in self._ours(key, entries)
        )

    def install(
        self, path: Path, events: Sequence[str], argv: Sequence[str], *, write: bool = True
    ) -> Change:
        wanted = {}
        for event in events:
            key, matcher = split_event(event)
            wanted[event] = _Slot(key, matcher, command_line(argv, self.app, event))
        return self._apply(path, wanted, write)

    def remove(self, path: Path) -> Change:
        return self._apply(path, {}, write=True)

    def _ours(self, key: str, entries: object) -> list[_Place]:
        """tray's hooks under ``key``: those for the event ``key`` or one of its subtypes."""
        if not isinstance(entries, list):
            return []  # not an event's list (Qwen keeps "enabled" there): none of tray's
        found = []
        for hooks, holder, hook in self.holders(entries):
            event = hook_event(self.command_of(hook), self.app)
            if event is not None and key in (event, split_event(event)[0]):
                found.append(_Place(hooks, hook, holder, event))
        return found

    def _apply(self, path: Path, wanted: Mapping[str, _Slot], write: bool) -> Change:
        before = read_bytes(path)
        if before is None:
            if not wanted:
                return Change(path)
            document = self.empty_document()
        else:
            document = parse_object(before, path)
        table = self._table(document, path)
        kept: set[str] = set()
        fixed: set[str] = set()
        taken: list[str] = []  # the events of tray's hooks taken out
        for key in list(table):
            ours = self._ours(key, table[key])
            keepers = _keepers(key, ours, wanted, self._is_right)
            took_out = False
            for place in ours:
                slot = wanted.get(place.event)
                if slot is not None and keepers.get(place.event) is place:
                    if self._is_right(place, slot):
                        kept.add(place.event)
                        continue
                    if self._fix(place, slot):
                        kept.add(place.event)
                        fixed.add(place.event)
                        continue
                # By identity: a duplicate is equal to the one kept.
                place.hooks[:] = [other for other in place.hooks if other is not place.hook]
                took_out = True
                taken.append(place.event)
            if took_out:
                table[key] = self.tidy(table[key])
                if not table[key]:
                    del table[key]
        for event, slot in wanted.items():
            if event not in kept:
                entries = table.setdefault(slot.key, [])
                if not isinstance(entries, list):
                    raise HookFileError(f"{path}: hooks.{slot.key} is not a list; left as it is")
                entries.append(self.new_entry(slot.command, slot.matcher))
        if not document.get("hooks", True):
            del document["hooks"]  # emptied by tray (an empty one never gets written alone)
        change = Change(
            path,
            added=tuple(e for e in wanted if e not in kept and e not in taken),
            updated=tuple(e for e in wanted if e in fixed or e in taken),
            removed=tuple(dict.fromkeys(e for e in taken if e not in wanted)),
            notes=self.notes(document, path) if wanted else (),
        )
        if not change.changed or not write:
            return change
        if self._is_empty(document) and not wanted:
            remove(path)
            return Change(path, removed=change.removed, deleted=True)
        write_atomically(path, json_bytes(document))
        return change

    def _is_right(self, place: _Place, slot: _Slot) -> bool:
        return (
            self.command_of(place.hook) == slot.command
            and place.holder.get("matcher") == slot.matcher
        )

    def _fix(self, place: _Place, slot: _Slot) -> bool:
        """Make tray's hook what ``slot`` says, where it is; False when it cannot be (its
        matcher is wrong, on a group that holds the user's hooks too)."""
        if place.holder.get("matcher") != slot.matcher:
            if place.holder is not place.hook and len(place.hooks) > 1:
                return False
            if slot.matcher is None:
                del place.holder["matcher"]
            else:
                place.holder["matcher"] = slot.matcher
        self.set_command(place.hook, slot.command)
        return True

    def _table(self, document: dict[str, Any], path: Path) -> dict[str, Any]:
        table = document.setdefault("hooks", {})
        if not isinstance(table, dict):
            raise HookFileError(f"{path}: hooks is not a JSON object; left as it is")
        return table

    def _is_empty(self, document: Mapping[str, Any]) -> bool:
        return self.own_file and not document.get("hooks") and set(document) <= {"version"}


def _keepers(
    key: str,
    ours: Sequence[_Place],
    wanted: Mapping[str, _Slot],
    is_right: Callable[[_Place, _Slot], bool],
) -> dict[str, _Place]:
    """The one hook of tray's kept for each wanted event under ``key``: the one that is
    right already, else the first, to be made right where it is."""
    keepers: dict[str, _Place] = {}
    for place in ours:
        slot = wanted.get(place.event)
        if slot is None or slot.key != key:
            continue  # not wanted, or wanted under another key: taken out
        if place.event not in keepers or (
            is_right(place, slot) and not is_right(keepers[place.event], slot)
        ):
            keepers[place.event] = place
    return keepers


# Copilot CLI denies the tool call when one of these hooks fails: when its command is not
# found (a tray moved or uninstalled), or prints anything but a verdict. Measured on
# 1.0.102 for permissionRequest; its documentation says so of preToolUse.
_COPILOT_FAIL_CLOSED: Final = frozenset({"permissionRequest", "preToolUse"})


class CopilotHooks(JsonHooks):
    app = "copilot"
    timeout = f"{TIMEOUT_SECONDS} s"
    own_file = True

    def path(self, environ: Mapping[str, str], home: Path) -> Path:
        return _home_dir(environ, "COPILOT_HOME", home / ".copilot") / "hooks" / "tray.json"

    def refusal(self, event: str) -> str | None:
        if split_event(event)[0] in _COPILOT_FAIL_CLOSED:
            return (
                "Copilot CLI denies every tool call when this hook fails, so a tray moved "
                "or removed would block them all"
            )
        return None

    def holders(self, entries: list[Any]) -> Iterator[tuple[list[Any], dict[str, Any], Any]]:
        for hook in entries:
            if isinstance(hook, dict):
                yield entries, hook, hook

    def command_of(self, hook: object) -> object:
        return hook.get("bash") if isinstance(hook, dict) else None

    def set_command(self, hook: dict[str, Any], command: str) -> None:
        hook["bash"] = command

    def new_entry(self, command: str, matcher: str | None) -> dict[str, Any]:
        entry: dict[str, Any] = {"type": "command"}
        if matcher is not None:
            entry["matcher"] = matcher
        return {**entry, "bash": command, "timeoutSec": TIMEOUT_SECONDS}

    def empty_document(self) -> dict[str, Any]:
        return {"version": 1}


class _MatcherGroups(JsonHooks):
    """Gemini CLI's shape (Qwen Code's too): each entry a group of hooks with a matcher."""

    timeout_value: int

    def holders(self, entries: list[Any]) -> Iterator[tuple[list[Any], dict[str, Any], Any]]:
        for group in entries:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                for hook in group["hooks"]:
                    if isinstance(hook, dict):
                        yield group["hooks"], group, hook

    def command_of(self, hook: object) -> object:
        return hook.get("command") if isinstance(hook, dict) else None

    def set_command(self, hook: dict[str, Any], command: str) -> None:
        hook["command"] = command

    def new_entry(self, command: str, matcher: str | None) -> dict[str, Any]:
        hook = {"name": HOOK_NAME, "type": "command", "command": command}
        group: dict[str, Any] = {} if matcher is None else {"matcher": matcher}
        return {**group, "hooks": [{**hook, "timeout": self.timeout_value}]}

    def tidy(self, entries: list[Any]) -> list[Any]:
        # A group tray's hook was the last of is tray's own, added with it.
        return [
            group for group in entries if not (isinstance(group, dict) and group.get("hooks") == [])
        ]


class GeminiHooks(_MatcherGroups):
    app = "gemini"
    timeout = f"{TIMEOUT_SECONDS} s"
    timeout_value = TIMEOUT_SECONDS * 1000  # milliseconds

    def path(self, environ: Mapping[str, str], home: Path) -> Path:
        return _home_dir(environ, "GEMINI_CLI_HOME", home) / ".gemini" / "settings.json"

    def notes(self, document: Mapping[str, Any], path: Path) -> tuple[str, ...]:
        config = document.get("hooksConfig")
        if isinstance(config, dict) and config.get("enabled") is False:
            return (f"hooksConfig.enabled is false in {path}: Gemini CLI runs no hook",)
        return ()


class QwenHooks(_MatcherGroups):
    app = "qwen-code"
    timeout = f"{TIMEOUT_SECONDS} s"
    timeout_value = TIMEOUT_SECONDS  # seconds

    def path(self, environ: Mapping[str, str], home: Path) -> Path:
        return _home_dir(environ, "QWEN_HOME", home / ".qwen") / "settings.json"

    def notes(self, document: Mapping[str, Any], path: Path) -> tuple[str, ...]:
        if document.get("disableAllHooks") is True:
            return (f"disableAllHooks is true in {path}: Qwen Code runs no hook",)
        return ()


__all__ = [
    "TIMEOUT_SECONDS",
    "Change",
    "CopilotHooks",
    "GeminiHooks",
    "HookFileError",
    "HookFormat",
    "Installed",
    "JsonHooks",
    "QwenHooks",
    "command_line",
    "hook_argv",
    "hook_event",
    "split_event",
]
