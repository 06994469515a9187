"""Pure: what each agent's signals mean, read from its rules file (``core/agents/*.toml``).

An agent that speaks no OSC 7501 still shows what it is doing: its title, the text of
its desktop notifications, what it draws, its bell and its own hooks. One TOML file an
agent says what each of those means, as data: tray ships one per agent it knows, and a
user's file of the same name replaces it (``state/agent_files.py`` finds them).

Everything a rule reads is untrusted output. A rule picks a state from the closed set,
its message is cleaned as a report's ``msg`` is, and no rule can choose keys, a path or a
command: keys come only from the ``[answer]`` table, which is the file's, never the
program's.

>>> rules = parse_agent_file('''
... name = "Demo"
... commands = ["demo"]
... checked = "1.0"
... [[titles]]
... match = "^Waiting"
... state = "blocked"
... kind = "permission"
... msg = "demo: {title}"
... ''', "demo")
>>> rules.titles[0].effect
Effect(state='blocked', kind='permission', msg='demo: {title}')
>>> parse_agent_file('name = "x"', "demo")
Traceback (most recent call last):
...
tray.core.agents.rules.AgentFileError: demo.toml: commands: missing
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, Final

from tray.base.safe_text import clean_text
from tray.core.answers.gate import AppKeys, key_string
from tray.core.config.parsing import ConfigError, checked, no_unknown_keys
from tray.core.config.parsing import table as toml_table
from tray.protocol.report import KINDS, MAX_APP, MAX_MSG_DECODED, STATES, Clear, Report
from tray.protocol.state import ANSWERS, STATE_NAMED, Answer, State

# The states a rule may give: a report's, never the ``clear`` command.
RULE_STATES: Final = STATES
_APP: Final = re.compile(rf"[A-Za-z0-9_.+-]{{1,{MAX_APP}}}")
# ``{name}`` or ``{dotted.path}`` in a message template; nothing else is special.
_PLACEHOLDER: Final = re.compile(r"\{([A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)*)\}")
# A regex is written by a person, but a user's file is read by every launcher: a pattern
# this long is a mistake, not a rule.
MAX_PATTERN = 512
MAX_TEXT = 512
# Hook payloads are JSON of the agent's making; a path this deep is not one of ours.
_MAX_PATH_PARTS = 8

_TOP_KEYS: Final = frozenset(
    {
        "name",
        "commands",
        "executables",
        "checked",
        "live",
        "speaks_osc7501",
        "answer_ends_hook_prompt",
        "hooks_outrank_rules",
        "titles",
        "notifications",
        "screen",
        "bell",
        "hooks",
        "answer",
        "doctor",
    }
)
_EFFECT_KEYS: Final = frozenset({"state", "kind", "msg"})


class AgentFileError(ConfigError):
    """A rules file that cannot be used; its text is one line naming the file and key."""


@dataclass(frozen=True, slots=True)
class Effect:
    """What a signal means: a state, a kind with ``blocked``, and a message template."""

    # A rule's is a state; a hook's report, ranked as a rule (tracker.hooked), may clear.
    state: State | Clear
    kind: str | None
    msg: str | None


@dataclass(frozen=True, slots=True)
class TextRule:
    """A title or a screen text: ``pattern`` is searched in the cleaned text."""

    pattern: re.Pattern[str]
    effect: Effect


@dataclass(frozen=True, slots=True)
class NotificationRule:
    """An OSC 9, 777 or 99 notification: each given pattern must match its part."""

    title: re.Pattern[str] | None
    body: re.Pattern[str] | None
    effect: Effect


@dataclass(frozen=True, slots=True)
class HookRule:
    """A hook event; with ``field``, only when ``match`` is found in the text at that
    dotted path of the payload (one event can be a permission prompt or a question)."""

    event: str
    effect: Effect
    field: str | None = None
    match: re.Pattern[str] | None = None

    def takes(self, event: str, payload: Mapping[str, object]) -> bool:
        if event != self.event:
            return False
        if self.field is None or self.match is None:
            return True
        found = _at(payload, self.field)
        return isinstance(found, str) and self.match.search(found) is not None


@dataclass(frozen=True, slots=True)
class AgentAnswer:
    """The keys that answer the agent's permission prompt, and the version they were
    checked on; ``why`` says why a key holding Enter is safe there."""

    keys: AppKeys
    checked: str
    why: str | None


@dataclass(frozen=True, slots=True)
class AgentRules:
    """One agent's file, parsed. ``app`` is the file's name and the records' ``app``."""

    app: str
    name: str
    commands: tuple[str, ...]
    executables: tuple[str, ...]
    checked: str
    live: bool
    speaks_osc7501: bool
    titles: tuple[TextRule, ...] = ()
    notifications: tuple[NotificationRule, ...] = ()
    screen: tuple[TextRule, ...] = ()
    bell: Effect | None = None
    hooks: tuple[HookRule, ...] = ()
    answer: AgentAnswer | None = None
    # Whether an answer ends a prompt a hook reported (Copilot runs no hook after a
    # refusal); false where the hooks tell every reply themselves.
    answer_ends_hook_prompt: bool = True
    # Whether a hook's report switches the agent's other rules off, as its own OSC 7501
    # would (true: its hooks tell every turn). False where they tell only some moments
    # and the title the rest (Gemini CLI, Qwen Code): a hook is then one more signal,
    # ranked above notifications, and a prompt it tells is over at the answer.
    hooks_outrank_rules: bool = True
    sees: str = ""
    advice: str = ""

    def hook(self, event: str, payload: Mapping[str, object] | None = None) -> Effect | None:
        """What the hook ``event`` means, with this ``payload``: the first rule that takes
        it (without a payload, the first rule of that event)."""
        for rule in self.hooks:
            if rule.event == event if payload is None else rule.takes(event, payload):
                return rule.effect
        return None

    @property
    def infers(self) -> bool:
        """Whether anything the launcher sees can give this agent a state."""
        return bool(self.titles or self.notifications or self.screen or self.bell)


class AgentBook:
    """Every agent tray knows, by app; ``problems`` are user files that were left out."""

    def __init__(self, agents: Iterable[AgentRules], problems: Iterable[str] = ()) -> None:
        self._by_app = {rules.app: rules for rules in agents}
        self.agents = tuple(sorted(self._by_app.values(), key=lambda rules: rules.app))
        self.problems = tuple(problems)

    def get(self, app: str) -> AgentRules | None:
        return self._by_app.get(app)

    def recognise(self, command_name: str, program_path: str | None) -> AgentRules | None:
        """The agent started as ``command_name`` (argv[0]'s last part), or whose program
        file, resolved, has one of its ``executables`` in its path.

        >>> book = AgentBook([parse_agent_file(
        ...     'name = "G"\\ncommands = ["gemini"]\\nexecutables = ["@google/gemini-cli/"]'
        ...     '\\nchecked = "1"', "gemini")])
        >>> book.recognise("gemini", None).app
        'gemini'
        >>> book.recognise("node", "/usr/lib/node_modules/@google/gemini-cli/dist/index.js").app
        'gemini'
        >>> book.recognise("bash", "/usr/bin/bash") is None
        True
        """
        for rules in self.agents:
            if command_name in rules.commands:
                return rules
        if program_path:
            for rules in self.agents:
                if any(part in program_path for part in rules.executables):
                    return rules
        return None

    def answer_keys(self) -> dict[str, AppKeys]:
        """The verified keys of every agent that has them."""
        return {r.app: r.answer.keys for r in self.agents if r.answer is not None}


# --- the file -----------------------------------------------------------------------------


def is_app_name(name: str) -> bool:
    """Whether ``name`` can name an agent's file: letters, digits and ``_.+-``, no path."""
    return _APP.fullmatch(name) is not None


def parse_agent_file(text: str, app: str) -> AgentRules:
    """One agent's rules from the TOML ``text`` of ``APP.toml``; AgentFileError if bad."""
    where = f"{app}.toml"
    if not is_app_name(app):
        raise AgentFileError("the file name is not an app name (letters, digits, _.+-)", "", where)
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise AgentFileError(str(error), "", where) from None
    try:
        return _rules(document, app)
    except ConfigError as error:
        raise AgentFileError(error.problem, error.key, where) from None


def _rules(document: Mapping[str, Any], app: str) -> AgentRules:
    _known(document, _TOP_KEYS, "")
    doctor = _table(document, "doctor")
    _known(doctor, frozenset({"sees", "advice"}), "doctor.")
    return AgentRules(
        app=app,
        name=_text(document, "name", ""),
        commands=_names(document, "commands", required=True),
        executables=_names(document, "executables", required=False),
        checked=_text(document, "checked", ""),
        live=_flag(document, "live", ""),
        speaks_osc7501=_flag(document, "speaks_osc7501", ""),
        titles=tuple(_text_rule(e, f"titles[{i}]") for i, e in _items(document, "titles")),
        notifications=tuple(
            _notification_rule(e, f"notifications[{i}]")
            for i, e in _items(document, "notifications")
        ),
        screen=tuple(_text_rule(e, f"screen[{i}]") for i, e in _items(document, "screen")),
        bell=_bell(document),
        hooks=tuple(_hook_rule(e, f"hooks[{i}]") for i, e in _items(document, "hooks")),
        answer=_answer(document),
        answer_ends_hook_prompt=_flag(document, "answer_ends_hook_prompt", "", default=True),
        hooks_outrank_rules=_flag(document, "hooks_outrank_rules", "", default=True),
        sees=_optional_text(doctor, "sees", "doctor.") or "",
        advice=_optional_text(doctor, "advice", "doctor.") or "",
    )


def _known(values: Mapping[str, Any], known: frozenset[str], prefix: str) -> None:
    no_unknown_keys(values, sorted(known), prefix)


def _table(document: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    return toml_table(document, key, got=False)


def _items(document: Mapping[str, Any], key: str) -> Iterable[tuple[int, Mapping[str, Any]]]:
    value = document.get(key, [])
    if not isinstance(value, list):
        raise ConfigError(f"expected a list of tables ([[{key}]])", key)
    for index, entry in enumerate(value):
        if not isinstance(entry, dict):
            raise ConfigError("expected a table", f"{key}[{index}]")
        yield index, entry


def _optional_text(table: Mapping[str, Any], key: str, prefix: str) -> str | None:
    value = table.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ConfigError("expected a string", f"{prefix}{key}")
    if len(value) > MAX_TEXT:
        raise ConfigError(f"longer than {MAX_TEXT} characters", f"{prefix}{key}")
    return value


def _text(table: Mapping[str, Any], key: str, prefix: str) -> str:
    value = _optional_text(table, key, prefix)
    if value is None:
        raise ConfigError("missing", f"{prefix}{key}")
    return value


def _flag(table: Mapping[str, Any], key: str, prefix: str, *, default: bool = False) -> bool:
    value = table.get(key, default)
    if not isinstance(value, bool):
        raise ConfigError("expected true or false", f"{prefix}{key}")
    return value


def _names(table: Mapping[str, Any], key: str, *, required: bool) -> tuple[str, ...]:
    value = table.get(key)
    if value is None:
        if required:
            raise ConfigError("missing", key)
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ConfigError("expected a list of non-empty strings", key)
    return tuple(value)


def _pattern(table: Mapping[str, Any], key: str, prefix: str) -> re.Pattern[str] | None:
    value = _optional_text(table, key, prefix)
    if value is None:
        return None
    if len(value) > MAX_PATTERN:
        raise ConfigError(f"longer than {MAX_PATTERN} characters", f"{prefix}{key}")
    try:
        return re.compile(value)
    except re.error as error:
        raise ConfigError(f"not a regular expression ({error})", f"{prefix}{key}") from None


def _effect(entry: Mapping[str, Any], prefix: str) -> Effect:
    state = STATE_NAMED.get(_text(entry, "state", prefix))
    if state is None:
        raise ConfigError(f"expected one of {', '.join(RULE_STATES)}", f"{prefix}state")
    kind = _optional_text(entry, "kind", prefix)
    if kind is not None and (state != State.BLOCKED or kind not in KINDS):
        raise ConfigError(f"only with blocked, one of {', '.join(KINDS)}", f"{prefix}kind")
    return Effect(state, kind, _optional_text(entry, "msg", prefix))


def _text_rule(entry: Mapping[str, Any], where: str) -> TextRule:
    prefix = f"{where}."
    _known(entry, _EFFECT_KEYS | {"match"}, prefix)
    pattern = _pattern(entry, "match", prefix)
    if pattern is None:
        raise ConfigError("missing", f"{prefix}match")
    return TextRule(pattern, _effect(entry, prefix))


def _notification_rule(entry: Mapping[str, Any], where: str) -> NotificationRule:
    prefix = f"{where}."
    _known(entry, _EFFECT_KEYS | {"title", "body"}, prefix)
    title, body = _pattern(entry, "title", prefix), _pattern(entry, "body", prefix)
    if title is None and body is None:
        raise ConfigError("needs a title or a body pattern", where)
    return NotificationRule(title, body, _effect(entry, prefix))


def _hook_rule(entry: Mapping[str, Any], where: str) -> HookRule:
    prefix = f"{where}."
    _known(entry, _EFFECT_KEYS | {"event", "field", "match"}, prefix)
    event = _text(entry, "event", prefix)
    if not re.fullmatch(r"[A-Za-z0-9_.:-]{1,64}", event):
        raise ConfigError("expected an event name (letters, digits, _.:-)", f"{prefix}event")
    field = _optional_text(entry, "field", prefix)
    match = _pattern(entry, "match", prefix)
    if (field is None) != (match is None):
        raise ConfigError("missing", f"{prefix}{'match' if match is None else 'field'}")
    if field is not None and _PLACEHOLDER.fullmatch(f"{{{field}}}") is None:
        raise ConfigError("expected a dotted path (letters, digits, _)", f"{prefix}field")
    return HookRule(event, _effect(entry, prefix), field, match)


def _bell(document: Mapping[str, Any]) -> Effect | None:
    if "bell" not in document:
        return None
    table = _table(document, "bell")
    _known(table, _EFFECT_KEYS, "bell.")
    return _effect(table, "bell.")


def _answer(document: Mapping[str, Any]) -> AgentAnswer | None:
    if "answer" not in document:
        return None
    table = _table(document, "answer")
    _known(table, frozenset({*ANSWERS, "checked", "why"}), "answer.")
    why = _optional_text(table, "why", "answer.")
    check = partial(key_string, allow_enter=bool(why))
    keys = {answer: checked(f"answer.{answer}", check, table.get(answer)) for answer in ANSWERS}
    approve, deny = keys[Answer.APPROVE], keys[Answer.DENY]
    return AgentAnswer(AppKeys(approve, deny), _text(table, "checked", "answer."), why)


# --- what a signal says -------------------------------------------------------------------


def fill(template: str | None, values: Mapping[str, object]) -> str | None:
    """The message of a rule: ``{name}`` replaced by the cleaned value (a dotted name
    walks into nested tables), cut to a report's limit; None when nothing is left.

    >>> fill("Run: {tool.command}", {"tool": {"command": "touch\\nx"}})
    'Run: touch x'
    >>> fill("{missing}", {}) is None
    True
    """
    if template is None:
        return None

    def value(match: re.Match[str]) -> str:
        found = _at(values, match[1])
        if isinstance(found, bool) or found is None:
            return ""
        if isinstance(found, str | int | float):
            return str(found)[:MAX_MSG_DECODED]
        return ""

    text = _cut(clean_text(_PLACEHOLDER.sub(value, template)), MAX_MSG_DECODED)
    return text or None


def _at(values: Mapping[str, object], path: str) -> object:
    """What a dotted path names in nested tables, or None."""
    found: object = values
    for part in path.split(".")[:_MAX_PATH_PARTS]:
        found = found.get(part) if isinstance(found, Mapping) else None
    return found


def _cut(text: str, limit: int) -> str:
    """At most ``limit`` bytes of UTF-8, never half a character."""
    encoded = text.encode()
    if len(encoded) <= limit:
        return text
    return encoded[:limit].decode(errors="ignore").rstrip()


def report_for(rules: AgentRules, effect: Effect, values: Mapping[str, object]) -> Report:
    """The root record's report for ``effect``, as the agent would have sent it."""
    return Report(
        state=effect.state,
        kind=effect.kind,
        app=rules.app,
        msg=fill(effect.msg, values),
    )


def hook_report(rules: AgentRules, event: str, payload: object) -> Report | None:
    """What the hook ``event`` says, with its message from the hook's JSON ``payload``;
    None when the agent's rules do not name the event."""
    values = payload if isinstance(payload, Mapping) else {}
    effect = rules.hook(event, values)
    if effect is None:
        return None
    return report_for(rules, effect, values)
