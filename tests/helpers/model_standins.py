"""Loopback fakes of two more model APIs: Gemini's and the OpenAI chat completions API.

Like :mod:`helpers.agent_standins`, each fake plays a model that wants one thing: to run
``touch approved-file`` through the agent's shell tool. Its first answer to a turn is that
tool call; once the request carries the tool's result, it ends the turn with a line of
text. ``calls`` is how many times a turn asks (two show whether an approval granted more
than that one use). Every request body is kept.

- :class:`FakeGemini`: ``:streamGenerateContent`` (SSE with ``?alt=sse``),
  ``:generateContent`` and ``:countTokens``, for Gemini CLI via ``GOOGLE_GEMINI_BASE_URL``.
- :class:`FakeChatCompletions`: ``POST /v1/chat/completions`` (streamed or not) and
  ``GET /v1/models``, for Qwen Code, Copilot CLI, opencode and aider. The tool is picked
  from those the agent offers; an agent that offers none (aider) gets a fenced ``bash``
  block holding the command.

Both answer every model request with an error of HTTP status ``fail_status`` while it
is set (the "error" scenario). Both agents retry a 500 for a long while with backoff; a
400 fails the turn at once.
"""

from __future__ import annotations

import json
import re
from typing import Any, Self

from helpers.agent_standins import COMMAND, FINAL_TEXT, _Fake

# (event name or "" for none, data: a JSON document or a raw string such as "[DONE]")
Events = list[tuple[str, Any]]
Answer = tuple[int, Events | None, object]

DESCRIPTION = "Create the marker file"
# Shell tools by name, most likely first; any other tool with a ``command`` argument will do.
SHELL_TOOLS = ("run_shell_command", "bash", "shell", "execute", "exec_command", "run_command")
# Words in a tool result that mean the user refused the call.
_REFUSED = re.compile(r"reject|denied|deny|cancel|abort|declin|not allowed", re.IGNORECASE)
FENCED = f"```bash\n{COMMAND}\n```\n"


class _StreamFake(_Fake):
    """A :class:`_Fake` whose SSE follows the OpenAI and Google style: a bare ``data:``
    line per event (an ``event:`` line only when named), raw strings sent as they are,
    and ``GET`` answered by :meth:`respond_get`."""

    fail_status: int | None = None
    # Another tool to call in the shell tool's place, with its arguments as given (an
    # agent's question tool, say); None: the shell tool, asked to run COMMAND.
    tool_call: tuple[str, dict[str, Any]] | None = None
    # The text of the answer to the first request, for an agent that offers no tools, in
    # place of the fenced command (aider); the later answers are FINAL_TEXT.
    first_text: str | None = None

    def __init__(self, calls: int = 1) -> None:
        super().__init__(calls)
        # The user's message the tool was first asked for: a later message (after a
        # refusal the agent dropped, or the agent's own side questions) gets text.
        self._prompt: str | None = None

    def sse_event(self, name: str, data: Any) -> str:
        text = data if isinstance(data, str) else json.dumps(data)
        head = f"event: {name}\n" if name else ""
        return f"{head}data: {text}\n\n"

    def respond_get(self, path: str) -> tuple[int, object]:
        return 404, {"error": {"code": 404, "message": "fake", "status": "NOT_FOUND"}}

    def _same_turn(self, prompt: str) -> bool:
        """Whether the user's latest message ``prompt`` is the one the tool was first
        asked for (the first one asked for is taken as it)."""
        with self._lock:
            if self._prompt is None:
                self._prompt = prompt
            return self._prompt == prompt

    def __enter__(self) -> Self:
        super().__enter__()
        return self

    def _tool(self, tools: dict[str, object]) -> tuple[str, dict[str, Any]] | None:
        """The tool to call among ``tools``, and its arguments; None when not offered."""
        if self.tool_call is not None:
            return self.tool_call if self.tool_call[0] in tools else None
        name = _pick_tool(tools)
        return None if name is None else (name, _arguments(tools[name]))


def _arguments(schema: object, command_as_list: bool = False) -> dict[str, Any]:
    """Arguments for a shell tool, filled from its JSON schema: the command, a
    description, and a harmless value for each other required argument."""
    spec = schema if isinstance(schema, dict) else {}
    properties = spec.get("properties") or {}
    required = set(spec.get("required") or [])
    found: dict[str, Any] = {}
    for name, given in properties.items():
        prop = given if isinstance(given, dict) else {}
        kind = str(prop.get("type", "")).lower()
        if name in ("command", "cmd", "script"):
            as_list = kind == "array" or command_as_list
            found[name] = COMMAND.split() if as_list else COMMAND
        elif name in ("description", "justification", "reason"):
            found[name] = DESCRIPTION
        elif name == "is_background":
            found[name] = False
        elif name not in required:
            continue
        elif prop.get("enum"):
            values = prop["enum"]
            found[name] = "sync" if "sync" in values else values[0]
        elif kind == "boolean":
            found[name] = False
        elif kind in ("integer", "number"):
            found[name] = prop.get("default", 30)
        elif kind == "array":
            found[name] = []
        elif kind == "object":
            found[name] = {}
        else:
            found[name] = prop.get("default", "")
    if not any(key in found for key in ("command", "cmd", "script")):
        found["command"] = COMMAND
    return found


def _pick_tool(tools: dict[str, object]) -> str | None:
    """The shell tool among ``tools`` (name -> JSON schema of its arguments)."""
    by_lower = {name.lower(): name for name in tools}
    for wanted in SHELL_TOOLS:
        if wanted in by_lower:
            return by_lower[wanted]
    for name, schema in tools.items():
        properties = schema.get("properties") if isinstance(schema, dict) else None
        if isinstance(properties, dict) and ("command" in properties or "cmd" in properties):
            return name
    return None


# ----------------------------------------------------------------- chat completions


def tool_messages(requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ``role: tool`` messages of the last request that carries any: the results the
    agent sent back to :class:`FakeChatCompletions` (each request repeats the whole
    conversation, so the last one holds them all)."""
    found: list[dict[str, Any]] = []
    for body in requests:
        messages = [
            m for m in body.get("messages") or [] if isinstance(m, dict) and m.get("role") == "tool"
        ]
        if messages:
            found = messages
    return found


def _text(content: object) -> str:
    """A message's content as text (a string, or a list of ``{"type": "text"}`` parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def _chat_tools(body: dict[str, Any]) -> dict[str, object]:
    tools: dict[str, object] = {}
    for tool in body.get("tools") or []:
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            tools[function["name"]] = function.get("parameters") or {}
    return tools


class FakeChatCompletions(_StreamFake):
    """``POST /v1/chat/completions``: a call of the agent's shell tool while the turn is
    open, else a line of text; streamed as ``data:`` chunks when asked to stream.

    The turn is open while fewer than ``calls`` tool results came back, none of them a
    refusal, the last message is the user's or a tool result, and the user's latest
    message is still the one the tool was first asked for: a new message after a refused
    (and dropped) call gets text, not the tool again.
    """

    def respond_get(self, path: str) -> tuple[int, object]:
        if path.split("?", maxsplit=1)[0].rstrip("/").endswith("/models"):
            model = {"id": "fake-model", "object": "model", "created": 0, "owned_by": "fake"}
            return 200, {"object": "list", "data": [model]}
        return 404, {"error": {"message": "fake", "type": "not_found"}}

    def respond(self, path: str, body: dict[str, Any]) -> Answer:
        if not path.split("?", maxsplit=1)[0].endswith("/chat/completions"):
            return 404, None, {"error": {"message": "fake", "type": "not_found"}}
        if self.fail_status is not None:
            error = {"message": "fake model failure", "type": "server_error", "code": None}
            return self.fail_status, None, {"error": error}
        number = len(self.requests)
        messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        tools = _chat_tools(body)
        call = self._call(messages, tools, number)
        message: dict[str, Any] = {"role": "assistant", "content": None}
        if call is not None:
            message["tool_calls"] = [call]
            finish = "tool_calls"
        else:
            message["content"] = self._text_answer(messages, tools)
            finish = "stop"
        head = {"id": f"chatcmpl-fake{number}", "created": 0, "model": body.get("model", "fake")}
        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        if not body.get("stream"):
            choice = {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
            document = {**head, "object": "chat.completion", "choices": [choice], "usage": usage}
            return 200, None, document
        chunk = {**head, "object": "chat.completion.chunk"}
        delta: dict[str, Any] = {"role": "assistant", "content": message["content"] or ""}
        if call is not None:
            delta = {"role": "assistant", "content": None, "tool_calls": [{"index": 0, **call}]}
        events: Events = [
            ("", {**chunk, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}),
            ("", {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}),
            ("", {**chunk, "choices": [], "usage": usage}),
            ("", "[DONE]"),
        ]
        return 200, events, None

    def _call(
        self, messages: list[dict[str, Any]], tools: dict[str, object], number: int
    ) -> dict[str, Any] | None:
        picked = self._tool(tools)
        if picked is None:
            return None
        name, arguments = picked
        results = [m for m in messages if m.get("role") == "tool"]
        if len(results) >= self.calls or any(
            _REFUSED.search(_text(m.get("content"))) for m in results
        ):
            return None
        asked = any(m.get("role") == "assistant" and m.get("tool_calls") for m in messages)
        last = messages[-1].get("role") if messages else None
        if asked and last != "tool":
            return None
        users = [_text(m.get("content")) for m in messages if m.get("role") == "user"]
        if not self._same_turn(users[-1] if users else ""):
            return None
        return {
            "id": f"call_fake{number}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)},
        }

    def _text_answer(self, messages: list[dict[str, Any]], tools: dict[str, object]) -> str:
        if self.first_text is not None:
            # The first request with messages gets it: aider's every request opens with
            # the example exchanges of its edit format, so an assistant message in the
            # request says nothing of an earlier answer.
            asked = [body for body in self.seen() if body.get("messages")]
            return self.first_text if len(asked) <= 1 else FINAL_TEXT
        return FENCED if self._fenced(messages, tools) else FINAL_TEXT

    def _fenced(self, messages: list[dict[str, Any]], tools: dict[str, object]) -> bool:
        """Whether to answer with the command in a fenced block: the agent offers no
        shell tool (aider), and fewer than ``calls`` earlier answers held it."""
        if _pick_tool(tools) is not None:
            return False
        earlier = sum(
            1
            for m in messages
            if m.get("role") == "assistant" and COMMAND in _text(m.get("content"))
        )
        last = messages[-1] if messages else {}
        refused = last.get("role") == "user" and bool(_REFUSED.search(_text(last.get("content"))))
        return earlier < self.calls and not refused


# ----------------------------------------------------------------------------- Gemini


def function_responses(requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ``functionResponse`` parts of the last request that carries any: the tool
    results Gemini CLI sent back to :class:`FakeGemini`."""
    found: list[dict[str, Any]] = []
    for body in requests:
        parts = [
            part["functionResponse"]
            for content in body.get("contents") or []
            if isinstance(content, dict)
            for part in content.get("parts") or []
            if isinstance(part, dict) and isinstance(part.get("functionResponse"), dict)
        ]
        if parts:
            found = parts
    return found


def _gemini_tools(body: dict[str, Any]) -> dict[str, object]:
    tools: dict[str, object] = {}
    for tool in body.get("tools") or []:
        declarations = tool.get("functionDeclarations") if isinstance(tool, dict) else None
        for declaration in declarations or []:
            if isinstance(declaration, dict) and isinstance(declaration.get("name"), str):
                schema = declaration.get("parametersJsonSchema") or declaration.get("parameters")
                tools[declaration["name"]] = schema or {}
    return tools


def _schema_value(schema: object, name: str = "") -> object:
    """A value that fits a JSON schema, for the agent's own side questions (routing, "who
    speaks next"): the user speaks next, and otherwise the first choice offered."""
    spec = schema if isinstance(schema, dict) else {}
    kind = str(spec.get("type", "")).lower()
    if spec.get("enum"):
        values = list(spec["enum"])
        return "user" if "user" in values else values[0]
    if kind == "object" or "properties" in spec:
        properties = spec.get("properties") or {}
        return {key: _schema_value(value, key) for key, value in properties.items()}
    if kind == "array":
        return []
    if kind == "boolean":
        return False
    if kind in ("integer", "number"):
        return 0
    return "user" if name == "next_speaker" else FINAL_TEXT


class FakeGemini(_StreamFake):
    """Gemini's ``models/M:streamGenerateContent`` (SSE), ``:generateContent`` and
    ``:countTokens``: a ``run_shell_command`` call while the turn is open, else text.

    The turn is open as for :class:`FakeChatCompletions`: fewer than ``calls`` function
    responses, none an error or a cancellation, the last content the user's or a function
    response, and the user's latest text the one the tool was first asked for. A request
    that asks for JSON (``responseSchema``: the agent's own side questions, such as its
    model router's) gets a document fitting its schema.
    """

    def respond(self, path: str, body: dict[str, Any]) -> Answer:
        route = path.split("?", maxsplit=1)[0]
        if route.endswith(":countTokens"):
            return 200, None, {"totalTokens": 10}
        if not route.endswith(("GenerateContent", "generateContent")):
            return 404, None, {"error": {"code": 404, "message": "fake", "status": "NOT_FOUND"}}
        if self.fail_status is not None:
            status = "INVALID_ARGUMENT" if self.fail_status == 400 else "INTERNAL"
            error = {"code": self.fail_status, "message": "fake model failure", "status": status}
            return self.fail_status, None, {"error": error}
        config = body.get("generationConfig") or {}
        schema = config.get("responseJsonSchema") or config.get("responseSchema")
        part: dict[str, Any]
        if schema:
            part = {"text": json.dumps(_schema_value(schema))}
        else:
            call = self._call(body)
            part = {"functionCall": call} if call is not None else {"text": FINAL_TEXT}
        candidate = {
            "content": {"role": "model", "parts": [part]},
            "finishReason": "STOP",
            "index": 0,
        }
        usage = {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}
        document = {"candidates": [candidate], "usageMetadata": usage, "modelVersion": "fake"}
        if route.endswith(":streamGenerateContent"):
            return 200, [("", document)], None
        return 200, None, document

    def _call(self, body: dict[str, Any]) -> dict[str, Any] | None:
        picked = self._tool(_gemini_tools(body))
        if picked is None:
            return None
        name, arguments = picked
        contents = [c for c in body.get("contents") or [] if isinstance(c, dict)]
        responses = [
            part["functionResponse"]
            for content in contents
            for part in content.get("parts") or []
            if isinstance(part, dict) and isinstance(part.get("functionResponse"), dict)
        ]
        if len(responses) >= self.calls:
            return None
        if any(_REFUSED.search(json.dumps(r.get("response"))) for r in responses):
            return None
        asked = any(
            isinstance(part, dict) and "functionCall" in part
            for content in contents
            for part in content.get("parts") or []
        )
        last = contents[-1].get("parts") or [] if contents else []
        answered = any(isinstance(p, dict) and "functionResponse" in p for p in last)
        if asked and not answered:
            return None
        said = [
            " ".join(
                str(p["text"]) for p in c.get("parts") or [] if isinstance(p, dict) and "text" in p
            )
            for c in contents
            if c.get("role") == "user"
        ]
        said = [text for text in said if text]
        if not self._same_turn(said[-1] if said else ""):
            return None
        return {"name": name, "args": arguments}
