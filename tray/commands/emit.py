"""``tray emit``: one OSC 7501 report to the session's terminal.

Two forms. ``tray emit STATE ...`` is what scripts run in their loops, so it imports only
the protocol and the write loop. ``tray emit --hook APP EVENT`` is what an agent's own
hooks run (``tray hooks install``): it reads the hook's JSON payload on stdin, looks the
event up in APP's rules, and writes the report those give, marked ``via=hook``. A hook
must never disturb the agent that runs it, so that form prints nothing on stdout (agents
parse it), says at most one line on stderr, never waits long, and exits 0 whatever
happens.

The terminal is ``$TRAY_TTY`` when set (what ``tray run`` gives its command: a hook may
run with no controlling terminal), else the controlling terminal.
"""

from __future__ import annotations

import os
import select
import time
from typing import TYPE_CHECKING

from tray.base.exit_codes import FAILURE, SUCCESS, UsageError
from tray.protocol.report import Report, ReportError, encode_sequence
from tray.state.environment import Environment
from tray.terminal.fdio import write_all

if TYPE_CHECKING:
    import argparse

TTY_VARIABLE = "TRAY_TTY"
# A hook's payload is a page of JSON; more than this is not one tray reads.
MAX_PAYLOAD = 64 * 1024
# How long a hook may spend reading its payload, and then writing the report: the agent
# waits for the hook, and a terminal that takes nothing must not hold it up.
PAYLOAD_SECONDS = 1.0
WRITE_SECONDS = 2.0
_FIELDS = ("kind", "app", "id", "title", "msg", "progress")


class _NoTerminal(Exception):  # noqa: N818 - a reason to give up, said in one line
    pass


def run(args: argparse.Namespace, env: Environment) -> int:
    # argparse drops a "--" given as an option's value (``--msg=--``) and leaves an
    # empty list; "--" is a legitimate message, so it is put back.
    for option in ("kind", "app", "id", "title", "msg"):
        if getattr(args, option) == []:
            setattr(args, option, "--")
    if args.hook is not None:
        if args.state is not None or any(getattr(args, name) is not None for name in _FIELDS):
            raise UsageError("tray emit: --hook APP EVENT takes no STATE and no other option")
        app, event = args.hook
        return run_hook(app, event, env)
    if args.state is None:
        raise UsageError("tray emit: the following arguments are required: STATE")
    if args.id == "":
        raise UsageError("tray emit: argument --id: must not be empty (omit it for the root)")
    report = Report(
        state=args.state,
        id=args.id or "",
        kind=args.kind,
        progress=args.progress,
        app=args.app,
        title=args.title,
        msg=args.msg,
    )
    try:
        sequence = encode_sequence(report)
    except ReportError as error:
        raise UsageError(f"tray emit: {error}") from None
    # Validated before opening, so a bad argument writes nothing at all.
    try:
        fd = open_terminal(env)
    except _NoTerminal as reason:
        env.stderr.write(f"tray emit: {reason}\n")
        return FAILURE
    try:
        # A script's report may wait for a slow terminal, as any write to it would.
        os.set_blocking(fd, True)
        write_all(fd, sequence)
    finally:
        os.close(fd)
    return SUCCESS


def open_terminal(env: Environment) -> int:
    """The session's terminal, open for writing (non-blocking); _NoTerminal says why not."""
    chosen = env.environ.get(TTY_VARIABLE)
    path = chosen or env.tty_path
    try:
        # O_NONBLOCK: a FIFO planted at the path would otherwise hold the open forever.
        fd = os.open(path, os.O_WRONLY | os.O_NOCTTY | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as error:
        raise _NoTerminal(f"no terminal to write to ({path}: {error.strerror or error})") from None
    # $TRAY_TTY comes from the environment, which anything may have set: only a
    # terminal is written to. (/dev/tty is one by definition; tests point env.tty_path
    # at a plain file.)
    if chosen and not os.isatty(fd):
        os.close(fd)
        raise _NoTerminal(f"no terminal to write to ({TTY_VARIABLE}={path} is not a terminal)")
    return fd


# --- the hook form --------------------------------------------------------------------


def run_hook(app: str, event: str, env: Environment) -> int:
    """Report what the hook EVENT of APP means; exits 0 whatever happens."""
    try:
        problem = _report_hook(app, event, env)
    except Exception as error:  # a hook that fails would disturb the agent: never a traceback
        problem = f"{type(error).__name__}: {error}"
    if problem is not None:
        env.stderr.write(f"tray emit: {' '.join(problem.split())}\n")
    return SUCCESS


def _report_hook(app: str, event: str, env: Environment) -> str | None:
    """Write the hook's report; the one-line reason when nothing was written."""
    # Read first, whatever follows: an agent writing the payload to a hook that has
    # already gone would get an error on its pipe.
    payload = read_payload(env.stdin_fd)
    # Imported here: the plain form, in scripts' loops, needs none of the agents' rules.
    from tray.core.agents.rules import hook_report  # noqa: PLC0415
    from tray.state.agent_files import load_agent_rules  # noqa: PLC0415

    rules = load_agent_rules(env, app)
    if rules is None:
        return f"no agent named {app!r} in tray's rules"
    report = hook_report(rules, event, payload)
    if report is None:
        return f"{app}'s rules say nothing about the hook event {event!r}"
    try:
        sequence = encode_sequence(report, from_hook=True)
    except ReportError as error:
        return str(error)
    try:
        fd = open_terminal(env)
    except _NoTerminal as reason:
        return str(reason)
    try:
        if not _write_within(fd, sequence, WRITE_SECONDS):
            return f"the terminal took no report within {WRITE_SECONDS:g} s"
    finally:
        os.close(fd)
    return None


def read_payload(fd: int, seconds: float = PAYLOAD_SECONDS) -> object:
    """The JSON document on ``fd``, or None: a terminal, nothing, too much, or not JSON.

    Reads until the end of input or a whole document, for at most ``seconds``: an agent
    may leave its hook's stdin open, and a terminal's input is the user's, not a payload.
    """
    if os.isatty(fd):
        return None
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    deadline = time.monotonic() + seconds
    data = b""
    while len(data) <= MAX_PAYLOAD:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        ready = poller.poll(remaining * 1000)
        if not ready:
            break
        if any(mask & select.POLLNVAL for _, mask in ready):
            break  # no stdin at all (closed)
        try:
            chunk = os.read(fd, MAX_PAYLOAD + 1 - len(data))
        except BlockingIOError:
            continue
        except OSError:
            break
        if not chunk:
            break
        data += chunk
        if _document(data) is not None:
            break
    if len(data) > MAX_PAYLOAD:
        return None
    return _document(data)


def _document(data: bytes) -> object:
    import json  # noqa: PLC0415 - only the hook form reads JSON

    try:
        document: object = json.loads(data)
    except (ValueError, RecursionError):
        return None
    return document


def _write_within(fd: int, data: bytes, seconds: float) -> bool:
    """Write all of ``data`` to the non-blocking ``fd``; False if it took too long."""
    deadline = time.monotonic() + seconds
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    view = memoryview(data)
    while view:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not poller.poll(remaining * 1000):
            return False
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            continue
    return True


__all__ = ["MAX_PAYLOAD", "open_terminal", "read_payload", "run", "run_hook"]
