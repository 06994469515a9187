"""``tray init bash|zsh|fish``: the code a user's rc file loads.

The snippets are package data with ``@NAME@`` placeholders; here they get the tray to
call, the settings that decide what happens at a prompt (so the hooks read no file at
run time), and nothing else.
"""

from __future__ import annotations

import os
import shlex
import signal
import sys
from collections.abc import Callable, Sequence
from importlib import resources

from tray import __version__
from tray.base.exit_codes import SIGNAL_BASE, SUCCESS, USAGE_ERROR
from tray.core.config.settings import Config, ConfigError, ShellConfig
from tray.state.config_file import load_config
from tray.state.environment import Environment

SHELLS = ("bash", "zsh", "fish")
ALWAYS_IGNORED = ("tray", "fg")
# Statuses of a command that was stopped (Ctrl-Z), not ended: it has not finished.
STOPPED_STATUSES = tuple(
    SIGNAL_BASE + signum
    for signum in (signal.SIGTSTP, signal.SIGSTOP, signal.SIGTTIN, signal.SIGTTOU)
)


def tray_program(argv0: str, executable: str) -> list[str]:
    """How the printed code calls this tray again, by absolute paths.

    ``python -m tray`` runs ``tray/__main__.py`` as argv[0]: that tray is the interpreter
    with ``-m tray``. Paths are made absolute but symlinks are kept: a venv's python and a
    pipx or stow link stay valid across reinstalls where their targets do not.
    """
    if os.path.basename(argv0) == "__main__.py" and executable:
        return [os.path.abspath(executable), "-m", "tray"]
    if argv0 and os.sep in argv0:
        return [os.path.abspath(argv0)]
    return ["tray"]


def fish_quote(word: str) -> str:
    """One word for fish, whose single quotes know ``\\'`` and ``\\\\``."""
    return "'" + word.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _seconds_text(seconds: float) -> str:
    return f"{seconds:g}s"


def init_code(shell: str, program: Sequence[str], settings: ShellConfig, done_after: float) -> str:
    """The code for ``shell``'s rc file."""
    if shell not in SHELLS:
        raise ValueError(f"unknown shell {shell!r}")
    template = resources.files("tray.shell").joinpath(f"tray.{shell}").read_text("utf-8")
    quote: Callable[[str], str] = fish_quote if shell == "fish" else shlex.quote
    # `tray run` has a session of its own, and so may the job `fg` resumes (a wrapped
    # agent stopped with Ctrl-Z); the other tray commands are no news.
    ignored = tuple(dict.fromkeys((*settings.ignore, *ALWAYS_IGNORED)))
    wrapped = tuple(name for name in settings.wrap if name not in ALWAYS_IGNORED)
    if shell == "bash":
        # bash tests membership by matching " word " in one string.
        ignore = quote(" " + " ".join(ignored) + " ")
        stopped = quote(" " + " ".join(map(str, STOPPED_STATUSES)) + " ")
    else:
        ignore = " ".join(quote(name) for name in ignored)
        stopped = " ".join(map(str, STOPPED_STATUSES))
    values = {
        "VERSION": __version__,
        "DONE_AFTER": _seconds_text(done_after),
        "PROGRAM": " ".join(quote(word) for word in program),
        "WRAP": " ".join(quote(name) for name in wrapped),
        "IGNORE": ignore,
        "STOPPED": stopped,
        "THRESHOLD_US": str(round(done_after * 1_000_000)),
        "THRESHOLD_S": repr(float(done_after)),
        "THRESHOLD_MS": str(int(done_after * 1000)),
    }
    for name, value in values.items():
        template = template.replace(f"@{name}@", value)
    return template


def run_init(
    shell: str | None,
    env: Environment,
    argv0: str | None = None,
    executable: str | None = None,
) -> int:
    """Print the code for ``shell``; a missing or unknown shell is a one-line error."""
    if shell is None:
        env.stderr.write(f"tray init: missing SHELL ({_choices()})\n")
        return USAGE_ERROR
    if shell not in SHELLS:
        env.stderr.write(f"tray init: unknown shell {shell[:40]!r} ({_choices()})\n")
        return USAGE_ERROR
    try:
        config = load_config(env, agent_keys={})  # the shell table alone: no agents' rules
    except ConfigError as error:
        # The rc file runs this at every shell start: a broken config must not take the
        # user's wrappers away, only say so.
        env.stderr.write(f"tray init: {' '.join(str(error).split())}; using the defaults\n")
        config = Config()
    program = tray_program(
        sys.argv[0] if argv0 is None else argv0,
        sys.executable if executable is None else executable,
    )
    env.stdout.write(init_code(shell, program, config.shell, config.notify.done_after))
    return SUCCESS


def _choices() -> str:
    return ", ".join(SHELLS[:-1]) + " or " + SHELLS[-1]


__all__ = ["SHELLS", "fish_quote", "init_code", "run_init", "tray_program"]
