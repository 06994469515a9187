"""Loopback fakes of the two model APIs the real agents talk to.

Each fake plays a model that wants one thing: to run ``touch approved-file``. Its first
answer to a turn is that tool call; once the request carries the tool's result, it ends
the turn with a line of text. Every request body is kept, so a test can read what the
agent sent back (Claude's ``tool_result`` with ``is_error``, Codex's
``function_call_output``).

- :class:`FakeAnthropic`: the Messages API (``POST /v1/messages``), streamed as SSE, for
  Claude Code via ``ANTHROPIC_BASE_URL``.
- :class:`FakeResponses`: the OpenAI Responses API (``POST /v1/responses``), streamed as
  SSE, for Codex via a ``model_provider`` in its ``config.toml``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

COMMAND = "touch approved-file"
FINAL_TEXT = "Done."


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class _Fake:
    """A loopback HTTP server on a free port; ``requests`` holds each JSON body seen.

    ``calls`` is how many times a turn asks for the tool, each after the last one's
    result: two show whether an answer granted more than that one use.
    """

    def __init__(self, calls: int = 1) -> None:
        self.calls = calls
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass  # quiet: the test reads ``requests`` instead

            def do_GET(self) -> None:
                fake._note(self.path, {})
                status, document = fake.respond_get(self.path)
                self._send_json(status, document)

            def do_HEAD(self) -> None:
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {}
                if not isinstance(body, dict):
                    body = {}
                fake._note(self.path, body)
                status, events, document = fake.respond(self.path, body)
                if events is None:
                    self._send_json(status, document)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                for name, data in events:
                    self.wfile.write(fake.sse_event(name, data).encode())
                    self.wfile.flush()
                self.close_connection = True

            def _send_json(self, status: int, document: object) -> None:
                data = json.dumps(document).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = _Server(("127.0.0.1", 0), Handler)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _note(self, path: str, body: dict[str, Any]) -> None:
        with self._lock:
            self.paths.append(path)
            self.requests.append(body)

    def seen(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.requests)

    def respond(
        self, path: str, body: dict[str, Any]
    ) -> tuple[int, list[tuple[str, Any]] | None, object]:
        raise NotImplementedError

    def respond_get(self, path: str) -> tuple[int, object]:
        """The status and JSON document for a ``GET``: none is served here."""
        return 404, {"error": {"type": "not_found", "message": "fake"}}

    def sse_event(self, name: str, data: Any) -> str:
        """One server-sent event, Anthropic style: always named, data as JSON."""
        return f"event: {name}\ndata: {json.dumps(data)}\n\n"

    def __enter__(self) -> _Fake:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


class FakeAnthropic(_Fake):
    """The Messages API: a ``Bash`` tool call when the agent offers that tool and has no
    result yet, else a line of text (titles, summaries, the turn's end)."""

    def respond(
        self, path: str, body: dict[str, Any]
    ) -> tuple[int, list[tuple[str, Any]] | None, object]:
        if not path.split("?", maxsplit=1)[0].endswith("/v1/messages"):
            if path.split("?", maxsplit=1)[0].endswith("/count_tokens"):
                return 200, None, {"input_tokens": 10}
            return 404, None, {"type": "error", "error": {"type": "not_found_error"}}
        tools = {t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)}
        results = len(tool_results([body]))
        wants_tool = "Bash" in tools and results < self.calls and _turn_open(body, results)
        content: dict[str, Any]
        if wants_tool:
            content = {
                "type": "tool_use",
                "id": f"toolu_fake{len(self.requests)}",
                "name": "Bash",
                "input": {"command": COMMAND, "description": "Create the marker file"},
            }
        else:
            content = {"type": "text", "text": FINAL_TEXT}
        stop = "tool_use" if wants_tool else "end_turn"
        message = {
            "id": f"msg_fake{len(self.requests)}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "fake"),
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 1},
        }
        if not body.get("stream"):
            done = {**message, "content": [content], "stop_reason": stop}
            return 200, None, done
        return 200, list(_anthropic_events(message, content, stop)), None


def _turn_open(body: dict[str, Any], results: int) -> bool:
    """Whether the turn still wants the tool: none was refused, and the last message is
    the user's prompt or a successful tool result."""
    if any(r.get("is_error") for r in tool_results([body])):
        return False
    messages = body.get("messages") or []
    last = messages[-1] if messages else None
    blocks = last.get("content") if isinstance(last, dict) else None
    if results == 0 or not isinstance(blocks, list):
        return True
    return any(isinstance(b, dict) and b.get("type") == "tool_result" for b in blocks)


def _anthropic_events(
    message: dict[str, Any], content: dict[str, Any], stop: str
) -> Iterator[tuple[str, Any]]:
    yield "message_start", {"type": "message_start", "message": message}
    if content["type"] == "tool_use":
        start = {**content, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(content["input"])}
    else:
        start = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": content["text"]}
    yield "content_block_start", {"type": "content_block_start", "index": 0, "content_block": start}
    yield "content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}
    yield "content_block_stop", {"type": "content_block_stop", "index": 0}
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": 5},
        },
    )
    yield "message_stop", {"type": "message_stop"}


def tool_results(requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every ``tool_result`` block the agent sent to :class:`FakeAnthropic`."""
    found: list[dict[str, Any]] = []
    for body in requests:
        for message in body.get("messages") or []:
            blocks = message.get("content") if isinstance(message, dict) else None
            if isinstance(blocks, list):
                found.extend(
                    b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"
                )
    return found


class FakeResponses(_Fake):
    """The Responses API: a shell tool call asking to run unsandboxed (so Codex, with
    approvals on request, asks the user), until the input carries its output."""

    def respond(
        self, path: str, body: dict[str, Any]
    ) -> tuple[int, list[tuple[str, Any]] | None, object]:
        if not path.split("?", maxsplit=1)[0].endswith("/responses"):
            return 404, None, {"error": {"message": "fake", "type": "not_found"}}
        number = len(self.requests)
        items = body.get("input") or []
        outputs = [
            i for i in items if isinstance(i, dict) and i.get("type") == "function_call_output"
        ]
        aborted = any("abort" in str(o.get("output", "")).lower() for o in outputs)
        tool = None if aborted or len(outputs) >= self.calls else _shell_tool(body)
        item: dict[str, Any]
        if tool is not None:
            item = {
                "type": "function_call",
                "id": f"fc_fake{number}",
                "call_id": f"call_fake{number}",
                "name": tool[0],
                "arguments": json.dumps(tool[1]),
                "status": "completed",
            }
        else:
            item = {
                "type": "message",
                "id": f"msg_fake{number}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": FINAL_TEXT, "annotations": []}],
            }
        response_id = f"resp_fake{number}"
        usage = {
            "input_tokens": 10,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 5,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 15,
        }
        events: list[tuple[str, Any]] = [
            ("response.created", {"type": "response.created", "response": {"id": response_id}}),
            ("response.output_item.done", {"type": "response.output_item.done", "item": item}),
            (
                "response.completed",
                {"type": "response.completed", "response": {"id": response_id, "usage": usage}},
            ),
        ]
        return 200, events, None


def _shell_tool(body: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """The call for whichever shell tool this Codex offers, asking for escalation."""
    tools = {t.get("name"): t for t in body.get("tools") or [] if isinstance(t, dict)}
    escalate = {"sandbox_permissions": "require_escalated", "justification": "create the marker"}
    if "exec_command" in tools:
        return "exec_command", {"cmd": COMMAND, **escalate}
    if "shell_command" in tools:
        return "shell_command", {"command": COMMAND, **escalate}
    if "shell" in tools:
        return "shell", {"command": ["touch", "approved-file"], **escalate}
    return None


def function_outputs(requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every ``function_call_output`` item Codex sent to :class:`FakeResponses`."""
    found: list[dict[str, Any]] = []
    for body in requests:
        for item in body.get("input") or []:
            if isinstance(item, dict) and item.get("type") == "function_call_output":
                found.append(item)
    return found
