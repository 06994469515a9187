"""``tray demo``: a scripted session under ``tray run``, so a user sees the icon and a ping
without installing any agent.

``tray demo`` starts ``tray app`` in the background when none runs, then runs this module
with ``--script`` under ``tray run --name demo``. The script pretends to be an agent: it
reports working, blocked on a permission, working again and done. At the permission it
waits for an answer: Enter or "y" approves, "n" denies, and a timeout approves. Its app,
``tray-demo``, has a rules file of its own (``tray/core/agents/tray-demo.toml``) whose keys
are those two letters, so the notification offers Approve and Deny, and tray's answer
reaches the script as typed keys, through the same gate as a real agent's. It runs
nothing and writes no file.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import select
import subprocess
import sys
import termios
import time
import tty
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Final

from tray.base.exit_codes import INTERRUPTED
from tray.protocol.report import Report, encode_sequence
from tray.protocol.state import Answer, State
from tray.state.app_lock import app_lock_held
from tray.state.environment import Environment
from tray.state.store import StateStore

# The app's own names (tray/app/main.py), repeated so the demo does not import the app
# and with it pystray.
APP_LOG: Final = "app.log"
# The line the app logs once its icon exists; before it, the app may still fail.
APP_READY_MARK: Final = "tray backend: "
APP_START_TIMEOUT: Final = 30.0
APP_POLL: Final = 0.05

SESSION_NAME: Final = "demo"
DEFAULT_STEP_SECONDS: Final = 2.5
DEFAULT_BLOCKED_SECONDS: Final = 15.0
MAX_SECONDS: Final = 3600.0

# Its rules file (tray/core/agents/tray-demo.toml) is named after it and gives the keys
# below: tray's Approve types "y", its Deny "n".
APP_NAME: Final = "tray-demo"
REQUEST: Final = "approve Bash: touch demo.txt"
APPROVE_KEYS: Final = frozenset(b"yY\r\n")
DENY_KEYS: Final = frozenset(b"nN")
# What a terminal sends for an end of input while it is not in canonical mode (VEOF).
END_OF_INPUT: Final = 0x04


class AppStartError(Exception):
    """The tray app could not be started; the message is one line for the user."""


def _new_log_text(path: Path, offset: int) -> str:
    try:
        with open(path, "rb") as log:
            log.seek(offset)
            return log.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "it printed nothing"


def start_app(env: Environment, state_dir: Path) -> int | None:
    """Start ``tray app`` detached unless one runs; returns its pid, or None if one ran.

    Returns once the app has shown its icon (it logs its backend then). Its output goes
    to ``<state_dir>/app.log``, and it lives on after the demo, in a session of its own
    so the terminal's signals never reach it.
    """
    for _ in range(2):  # a second try only if our own lock probe made the first one leave
        if app_lock_held(state_dir):
            return None
        pid = _spawn_app(env, state_dir)
        if pid is not None:
            return pid
    if app_lock_held(state_dir):
        return None
    raise AppStartError("it exited at once, twice, without holding its lock")


def _spawn_app(env: Environment, state_dir: Path) -> int | None:
    """The started app's pid once it shows its icon; None when it left saying one runs."""
    log_path = state_dir / APP_LOG
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC
    try:
        fd = os.open(log_path, flags, 0o600)
    except OSError as error:
        raise AppStartError(f"cannot open {log_path}: {error.strerror or error}") from error
    try:
        offset = os.fstat(fd).st_size
        proc = subprocess.Popen(
            [sys.executable, "-m", "tray", "app"],
            stdin=subprocess.DEVNULL,
            stdout=fd,
            stderr=fd,
            env={**env.environ, "TRAY_STATE_DIR": str(state_dir)},
            start_new_session=True,
        )
    except OSError as error:
        raise AppStartError(f"cannot run {sys.executable}: {error.strerror or error}") from error
    finally:
        os.close(fd)
    deadline = time.monotonic() + APP_START_TIMEOUT
    while True:
        code = proc.poll()
        if code is None and APP_READY_MARK in _new_log_text(log_path, offset):
            return proc.pid
        if code == 0:
            # "Already running": another app started meanwhile, or our lock probe met
            # it at the wrong moment. The caller looks at the lock again.
            return None
        if code is not None:
            last = _last_line(_new_log_text(log_path, offset)).removeprefix("tray app: ")
            raise AppStartError(last)
        if time.monotonic() >= deadline:
            proc.kill()
            proc.wait()
            raise AppStartError(f"it did not show its icon within {APP_START_TIMEOUT:.0f} s")
        time.sleep(APP_POLL)


def run_demo(env: Environment, step_seconds: float, blocked_seconds: float) -> int:
    store = StateStore(env.state_dir())
    store.ensure()
    try:
        pid = start_app(env, store.directory)
    except AppStartError as error:
        log_path = store.directory / APP_LOG
        env.stderr.write(
            f"tray demo: the tray app did not start: {error} (log: {log_path}; "
            "`tray doctor` checks the desktop)\n"
        )
        return 1
    out = env.stdout
    out.write("tray demo: a pretend agent runs under `tray run`. Watch the tray icon.\n")
    if pid is None:
        out.write("The tray app is already running.\n")
    else:
        out.write(
            f"Started the tray app in the background (pid {pid}); it stays after the demo. "
            f"Stop it from its menu, or with: kill {pid}\n"
        )
    out.flush()
    command = [
        sys.executable,
        "-m",
        "tray.commands.demo",
        "--script",
        "--step-seconds",
        repr(step_seconds),
        "--blocked-seconds",
        repr(blocked_seconds),
    ]
    launcher = importlib.import_module("tray.launcher.run")
    run_session: Callable[[list[str], str | None, Environment], int] = launcher.run_session
    return run_session(command, SESSION_NAME, env)


# -- the script, run under `tray run` -----------------------------------------------------


def _report(state: State, msg: str, kind: str | None = None) -> None:
    sequence = encode_sequence(Report(state=state, kind=kind, app=APP_NAME, msg=msg))
    sys.stdout.buffer.write(sequence)
    sys.stdout.buffer.flush()


def _say(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def drop_typeahead(fd: int) -> None:
    """Forget what was typed so far, so only an answer to the question counts."""
    with contextlib.suppress(OSError, termios.error):
        if os.isatty(fd):
            termios.tcflush(fd, termios.TCIFLUSH)


@contextlib.contextmanager
def keys_at_once(fd: int) -> Iterator[None]:
    """While inside: ``fd``'s terminal hands over each key as it comes, not each line, so
    that a "y" alone (what tray's Approve types) counts. Not a terminal: as it is."""
    try:
        saved = termios.tcgetattr(fd)
    except (OSError, termios.error):
        yield
        return
    try:
        tty.setcbreak(fd, termios.TCSANOW)
        yield
    finally:
        with contextlib.suppress(OSError, termios.error):
            termios.tcsetattr(fd, termios.TCSANOW, saved)


def answer_in(data: bytes) -> Answer | None:
    """The first answer among the keys ``data`` holds; any other key is no answer."""
    for key in data:
        if key in APPROVE_KEYS:
            return Answer.APPROVE
        if key in DENY_KEYS:
            return Answer.DENY
    return None


def wait_for_answer(fd: int, timeout: float) -> Answer | None:
    """The answer typed on ``fd`` within ``timeout`` seconds: Enter or "y" approves, "n"
    denies. None when the time is up.

    An end of input is no answer: the timeout answers instead.
    """
    deadline = time.monotonic() + timeout
    listening = True
    with keys_at_once(fd):
        while (remaining := deadline - time.monotonic()) > 0:
            if not listening:
                time.sleep(remaining)
                break
            try:
                readable, _, _ = select.select([fd], [], [], remaining)
                data = os.read(fd, 1024) if readable else None
            except (OSError, ValueError):
                data = b""
            if data is None:
                break
            answer = answer_in(data)
            if answer is not None:
                return answer
            if not data or END_OF_INPUT in data:
                listening = False
    return None


def run_script(step_seconds: float, blocked_seconds: float) -> int:
    try:
        _report(State.WORKING, "Reading the project")
        _say("* Working: reading the project...")
        time.sleep(step_seconds)
        drop_typeahead(0)
        _report(State.BLOCKED, REQUEST, kind="permission")
        _say(f"* Needs approval: {REQUEST}")
        _say(
            "  Press Enter to approve (n denies), or click Approve or Deny on the "
            f"notification. Nothing is run. In {blocked_seconds:g} s the demo approves for you."
        )
        answer = wait_for_answer(0, blocked_seconds)
        if answer == Answer.DENY:
            _say("  Denied. A real agent would now wait for your next message.")
            _report(State.DONE, "Demo finished: denied")
            _say("* Done: demo finished. `tray status` lists the session.")
            return 0
        if answer == Answer.APPROVE:
            _say("  Approved.")
        else:
            _say(f"  No answer within {blocked_seconds:g} s; carrying on as if approved.")
        _report(State.WORKING, "Writing demo.txt")
        _say("* Working: writing demo.txt... (pretend: no file is written)")
        time.sleep(step_seconds)
        _report(State.DONE, "Demo finished")
        _say("* Done: demo finished. `tray status` lists the session.")
    except KeyboardInterrupt:
        _say("\ndemo stopped")
        return INTERRUPTED
    return 0


def parse_seconds(text: str) -> float:
    """A number of seconds for the demo's options; raises ArgumentTypeError."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 <= value <= MAX_SECONDS:  # also refuses nan and inf
        raise argparse.ArgumentTypeError(f"must be from 0 to {MAX_SECONDS:g} seconds, not {text!r}")
    return value


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tray.commands.demo",
        description="The script `tray demo` runs under `tray run`; use `tray demo` instead.",
    )
    parser.add_argument("--script", action="store_true", required=True)
    parser.add_argument("--step-seconds", type=parse_seconds, default=DEFAULT_STEP_SECONDS)
    parser.add_argument("--blocked-seconds", type=parse_seconds, default=DEFAULT_BLOCKED_SECONDS)
    args = parser.parse_args(argv)
    return run_script(args.step_seconds, args.blocked_seconds)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``tray demo``'s options, whose help shows the defaults above."""
    parser.add_argument(
        "--step-seconds",
        metavar="SECONDS",
        type=parse_seconds,
        default=DEFAULT_STEP_SECONDS,
        help=f"how long each working step lasts (default: {DEFAULT_STEP_SECONDS:g})",
    )
    parser.add_argument(
        "--blocked-seconds",
        metavar="SECONDS",
        type=parse_seconds,
        default=DEFAULT_BLOCKED_SECONDS,
        help="how long the permission waits for an answer before approving itself "
        f"(default: {DEFAULT_BLOCKED_SECONDS:g})",
    )


def command(args: argparse.Namespace, env: Environment) -> int:
    return run_demo(env, args.step_seconds, args.blocked_seconds)
