"""tray's plugin for opencode: the events its rules name, passed to ``tray emit --hook``.

opencode has no hook commands; it loads every ``plugins/*.js`` of its global config
folder (``$XDG_CONFIG_HOME/opencode``, else ``~/.config/opencode``) and gives a plugin's
``event`` handler each event of its bus, ``{id, type, properties}``. tray's plugin,
``tray.js`` there, is a file of tray's own: its first line says so, and a ``tray.js``
without that line is the user's and is never touched.

The plugin is written with the event names the rules give: ``TYPE``, or
``TYPE:SUBTYPE`` for the types whose events carry one (``session.status:busy`` is a
``session.status`` event whose ``properties.status.type`` is ``busy``). For each event
so named it runs ``TRAY emit --hook opencode NAME`` with the whole event as JSON on
stdin (the rules' messages are paths into it: ``{properties.metadata.command}``), one
at a time and in order (``permission.asked`` must not overtake the
``permission.replied`` before it), without making opencode wait, and kills one that runs
longer than the timeout. Two kinds of event are not passed on:
- the ``session.idle`` (and idle ``session.status``) that follow a ``session.error`` of
  the same session: opencode sends them 30 to 60 ms after the error, and they would
  turn the error into "done" at once. The session's next busy status ends that.
- the turn's events of a subagent's session (one whose ``info.parentID`` is set, as
  ``session.created`` and ``session.updated`` say): its idle is not the end of the
  user's turn. Its permission dialogs are the user's to answer, so those still go.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

from tray.shell.hook_files import read_bytes, remove, write_atomically
from tray.shell.hook_formats import (
    TIMEOUT_SECONDS,
    Change,
    HookFileError,
    Installed,
    hook_argv,
    split_event,
)

APP: Final = "opencode"
MARK: Final = (
    "// Written by `tray hooks install opencode`; `tray hooks remove opencode` deletes it."
)
# The line the settings are read back from: what the file runs, as data.
_SETTINGS: Final = "const TRAY = "
# The event types whose events have a subtype, and where it is in their properties.
SUBTYPES: Final[Mapping[str, tuple[str, ...]]] = {"session.status": ("status", "type")}

_TEMPLATE: Final = """\
{mark}
// It passes the opencode events that tray's rules for opencode name to `tray emit --hook`,
// which writes one status report to the session's terminal. A change made here is lost
// at the next install.
import {{ spawn }} from "node:child_process";

{settings}{json};

function report(name, event) {{
  return new Promise((done) => {{
    const [program, ...words] = TRAY.argv;
    const child = spawn(program, [...words, "emit", "--hook", "opencode", name], {{
      stdio: ["pipe", "ignore", "ignore"],
    }});
    const timer = setTimeout(() => child.kill("SIGKILL"), TRAY.timeoutMs);
    const end = () => {{
      clearTimeout(timer);
      done();
    }};
    child.on("error", end);
    child.on("close", end);
    child.stdin.on("error", () => {{}});
    child.stdin.end(JSON.stringify(event));
  }});
}}

function at(value, path) {{
  for (const key of path) {{
    value = value !== null && typeof value === "object" ? value[key] : undefined;
  }}
  return value;
}}

// The rules' name for the event: TYPE:SUBTYPE, else TYPE; null when they name neither.
function nameOf(event) {{
  const path = TRAY.subtypes[event.type];
  const subtype = path ? at(event.properties, path) : undefined;
  if (typeof subtype === "string" && TRAY.events.includes(`${{event.type}}:${{subtype}}`)) {{
    return `${{event.type}}:${{subtype}}`;
  }}
  return TRAY.events.includes(event.type) ? event.type : null;
}}

const subagents = new Set();
const failed = new Set();

// The name to pass on, or null: see tray/shell/opencode_plugin.py.
function passed(event) {{
  const properties = event.properties ?? {{}};
  const session = properties.sessionID;
  const info = properties.info;
  const told = event.type === "session.created" || event.type === "session.updated";
  if (told && info && info.parentID) {{
    subagents.add(info.id ?? session);
  }}
  if (subagents.has(session) && !event.type.startsWith("permission.")) {{
    return null;
  }}
  const name = nameOf(event);
  const status = at(properties, ["status", "type"]);
  if (event.type === "session.error") {{
    if (name && session) failed.add(session);
  }} else if (event.type === "session.status" && status === "busy") {{
    failed.delete(session);
  }} else if (failed.has(session) && (event.type === "session.idle" || status === "idle")) {{
    return null;
  }}
  return name;
}}

let queue = Promise.resolve();

export const TrayHooks = async () => ({{
  event: async ({{ event }}) => {{
    const name = event && typeof event.type === "string" ? passed(event) : null;
    if (name) {{
      queue = queue.then(() => report(name, event)).catch(() => {{}});
    }}
  }},
}});
"""


def render(argv: Sequence[str], events: Sequence[str]) -> bytes:
    """The plugin file that runs ``argv`` (tray) for ``events``."""
    settings = {
        "argv": list(argv),
        "events": list(events),
        "subtypes": {kind: list(path) for kind, path in SUBTYPES.items()},
        "timeoutMs": TIMEOUT_SECONDS * 1000,
    }
    # ASCII JSON is a JavaScript literal as it is, whatever the paths hold.
    text = _TEMPLATE.format(mark=MARK, settings=_SETTINGS, json=json.dumps(settings))
    return text.encode("utf-8")


def _settings(data: bytes) -> tuple[list[str], list[str]] | None:
    """The argv and events of tray's plugin; None when the file is not tray's."""
    text = data.decode("utf-8", "replace")
    if text.split("\n", 1)[0] != MARK:
        return None
    for line in text.splitlines():
        if line.startswith(_SETTINGS):
            try:
                settings = json.loads(line.removeprefix(_SETTINGS).rstrip(";"))
                argv, events = settings["argv"], settings["events"]
            except (ValueError, TypeError, KeyError):
                break
            if _strings(argv) and _strings(events):
                return list(argv), list(events)
            break
    # tray's by its first line, but changed past reading: install writes it anew.
    return [], []


def _strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


class OpencodePlugin:
    app = APP
    timeout = f"{TIMEOUT_SECONDS} s"

    def path(self, environ: Mapping[str, str], home: Path) -> Path:
        # As opencode finds it (xdg-basedir): the variable when set, else ~/.config.
        config = environ.get("XDG_CONFIG_HOME")
        base = Path(config) if config and os.path.isabs(config) else home / ".config"
        return base / "opencode" / "plugins" / "tray.js"

    def refusal(self, event: str) -> str | None:
        kind, subtype = split_event(event)
        if subtype is not None and kind not in SUBTYPES:
            return f"tray's plugin knows no subtype of opencode's {kind} events"
        return None

    def installed(self, path: Path) -> tuple[Installed, ...]:
        data = read_bytes(path)
        found = None if data is None else _settings(data)
        if found is None:
            return ()
        argv, events = found
        return tuple(Installed(event, shlex.join(hook_argv(argv, APP, event))) for event in events)

    def install(
        self, path: Path, events: Sequence[str], argv: Sequence[str], *, write: bool = True
    ) -> Change:
        data = read_bytes(path)
        new = render(argv, events)
        if data is None:
            if write:
                write_atomically(path, new)
            return Change(path, added=tuple(events))
        found = _settings(data)
        if found is None:
            raise HookFileError(
                f"{path}: not tray's plugin (its first line is not tray's); left as it is"
            )
        if data == new:
            return Change(path)
        old_argv, old_events = found
        added = tuple(event for event in events if event not in old_events)
        removed = tuple(event for event in old_events if event not in events)
        # The same events with another tray, or another version of the plugin's code.
        updated = tuple(event for event in events if event in old_events)
        if old_argv == list(argv) and (added or removed):
            updated = ()
        if write:
            write_atomically(path, new)
        return Change(path, added=added, updated=updated, removed=removed)

    def remove(self, path: Path) -> Change:
        data = read_bytes(path)
        if data is None:
            return Change(path)
        found = _settings(data)
        if found is None:
            return Change(path, notes=(f"{path} is not tray's plugin: left as it is",))
        remove(path)
        return Change(path, removed=tuple(found[1]), deleted=True)


__all__ = ["APP", "MARK", "SUBTYPES", "OpencodePlugin", "render"]
