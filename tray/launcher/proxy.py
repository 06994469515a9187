"""The loop between the user's terminal and the command's pty, with job control.

There are no threads: signals arrive as bytes on a pipe, and one ``poll()`` waits for
the user's input, the command's output, signals and timers alike.

Timers are one interval timer (SIGALRM, which lands on the same pipe), armed only when
the earliest deadline moves earlier, never a poll() timeout. A poll() with a timeout
sets up and cancels a kernel timer on every sleep, twice per keystroke; in a virtual
machine that costs several microseconds of each keystroke's round trip, while the
deadlines here (state file writes, the drain at the end) change rarely.

Output that keeps coming is read again at once, without a poll() in between: the pty
hands out at most 4 KB a read, and a poll() per read, with the loop's bookkeeping around
it, cost more CPU than the read itself. Each read is written out at once, though: one big
write to a terminal that reads slowly blocks and wakes over and over, and costs more.
"""

from __future__ import annotations

import math
import os
import select
import signal
import termios
import time
from collections.abc import Callable, Sequence
from contextlib import suppress

from tray.base.exit_codes import SIGNAL_BASE
from tray.launcher.alarm import Alarm
from tray.launcher.command_signals import (
    continue_command,
    foreground_group,
    hang_up_command,
    send,
    send_group,
)
from tray.launcher.loop_seat import LoopGuest
from tray.launcher.recorder import SessionRecorder
from tray.launcher.spawn import Spawned, exit_code
from tray.launcher.terminal import SignalPipe, UserTerminal, get_size, set_size
from tray.protocol.output_events import Event
from tray.protocol.scanner import Scanner
from tray.state.logs import LauncherLog
from tray.terminal.fdio import write_all

# Also the most output read in a row, before the loop looks at input, signals and timers
# again: a keystroke never waits long behind streaming output.
READ_SIZE = 65536
# A read at least this big suggests that the command streams output, and more is waiting.
STREAMING_READ = 1024
# Typed bytes the command has not read yet; past this we stop reading stdin, so a
# command that never reads cannot make us block or grow without end.
INPUT_LIMIT = 65536
# After the command exits, a grandchild may still hold the pty open: read until it is
# closed, or quiet this long, but never longer than the limit.
DRAIN_SILENCE = 0.1
DRAIN_LIMIT = 2.0
# After a hangup, how long we wait for the command to die before leaving anyway.
HANGUP_WAIT = 2.0

HANGUP_STATUS = SIGNAL_BASE + signal.SIGHUP

# In pipe mode the terminal's keys reach us, not the command's pty: pass them on.
_FORWARDED = frozenset({signal.SIGINT, signal.SIGQUIT, signal.SIGTSTP})
_IN = select.POLLIN | select.POLLHUP | select.POLLERR


class TerminalGoneError(Exception):
    """The user's terminal went away (SIGHUP, EIO): hang the command up."""


class PtyProxy:
    """Bytes both ways between the user's terminal and the pty until the command ends.

    Each fd the loop polls has its handler in ``_handlers``, called with poll's events:
    another fd joins the loop with an entry there and its registration.

    ``guests`` (the session's answer socket) sit in the same poll, as the loop's
    :class:`Seat`: their fds among the pty's, their wake-ups among the timers. Only a
    guest's own activity changes what is polled, so the byte loop pays nothing for it.
    """

    def __init__(
        self,
        terminal: UserTerminal,
        child: Spawned,
        *,
        signals: SignalPipe,
        recorder: SessionRecorder,
        log: LauncherLog,
        scanner: Scanner,
        guests: Sequence[LoopGuest] = (),
        later: tuple[float, Callable[[], None]] | None = None,
    ) -> None:
        """``later``: after that many seconds, work the session needs but the program's
        start must not wait for, done once from the loop (if it still runs then)."""
        self._stdin = terminal.stdin
        self._stdout = terminal.stdout
        self._stdin_open = terminal.stdin >= 0
        self._raw = terminal.raw
        self._size_fd = terminal.size_fd
        self._tstp_ignored = terminal.tstp_ignored
        self._master = child.master
        self._spawned = child
        self._veof = child.veof
        self._signals = signals
        self._recorder = recorder
        self._log = log
        self._scanner = scanner
        self._master_eof = False
        self._to_child = bytearray()
        # No input at all: the command sees an empty one.
        self._eof_pending = not self._stdin_open
        self._last_input_newline = True
        self._status: int | None = None
        self._drain_deadline = math.inf
        self._drain_limit = math.inf
        self._later: Callable[[], None] | None = None
        self._later_due = math.inf
        if later is not None:
            self._later_due, self._later = time.monotonic() + later[0], later[1]
        self._hanging_up = False
        self._poller = select.poll()
        self._handlers: dict[int, Callable[[int], None]] = {
            self._master: self._on_master,
            signals.fileno(): self._on_signals,
        }
        if self._stdin_open:
            self._handlers[self._stdin] = self._on_stdin
        self._master_mask = 0
        self._stdin_mask = 0
        self._alarm = Alarm()
        self._guests = tuple(guests)
        self._wakes: dict[LoopGuest, float] = {}
        self._guest_due = math.inf

    def run(self) -> int:
        """Proxy until the command has ended and its output is drained; its status."""
        try:
            return self._proxy()
        finally:
            self._alarm.disarm()

    def close_master(self) -> None:
        if self._master >= 0:
            os.close(self._master)
            self._master = -1

    # ----------------------------------------------------------------- the loop

    def _proxy(self) -> int:
        os.set_blocking(self._master, False)
        self._poller.register(self._signals.fileno(), select.POLLIN)
        for guest in self._guests:
            guest.join(self)
        self._reap()  # it may have exited before our SIGCHLD handler mattered
        self._flush_to_child()
        poll = self._poller.poll
        handlers = self._handlers
        alarm = self._alarm
        try:
            while True:
                if alarm.rung:
                    alarm.heard()
                    self._on_timers(time.monotonic())
                if self._status is not None and (
                    self._master_eof or time.monotonic() >= self._drain_deadline
                ):
                    break
                self._update_poll()
                alarm.arm(self._deadline())
                for fd, events in poll():
                    handlers[fd](events)
            # A support query never completed: what is left of it can be shown now.
            self._pass_on(self._scanner.finish())
        except TerminalGoneError as reason:
            return self._hang_up(str(reason))
        assert self._status is not None
        return self._status

    def _update_poll(self) -> None:
        running = not self._master_eof
        master_mask = (select.POLLIN | (select.POLLOUT if self._to_child else 0)) if running else 0
        stdin_mask = (
            select.POLLIN
            if self._stdin_open
            and running
            and self._status is None
            and len(self._to_child) < INPUT_LIMIT
            else 0
        )
        if master_mask != self._master_mask:
            self._set_mask(self._master, self._master_mask, master_mask)
            self._master_mask = master_mask
        if stdin_mask != self._stdin_mask:
            self._set_mask(self._stdin, self._stdin_mask, stdin_mask)
            self._stdin_mask = stdin_mask

    def _set_mask(self, fd: int, old: int, new: int) -> None:
        if not new:
            self._poller.unregister(fd)
        elif old:
            self._poller.modify(fd, new)
        else:
            self._poller.register(fd, new)

    # ----------------------------------------------------------------- timers

    def _deadline(self) -> float:
        deadline = self._drain_deadline
        write_due = self._recorder.next_write()
        if write_due is not None and write_due < deadline:
            deadline = write_due
        # A comparison, not min(): this runs on every pass of the byte loop.
        if self._guest_due < deadline:  # noqa: PLR1730
            deadline = self._guest_due
        if self._later_due < deadline:  # noqa: PLR1730
            deadline = self._later_due
        return deadline

    def _on_timers(self, now: float) -> None:
        if now >= self._later_due:
            later, self._later, self._later_due = self._later, None, math.inf
            assert later is not None
            later()
        self._recorder.maybe_persist(now)
        if now >= self._guest_due:
            self._wake_guests(now)

    # ----------------------------------------------------------------- guests

    def watch(self, fd: int, handler: Callable[[int], None]) -> None:
        self._poller.register(fd, select.POLLIN)
        self._handlers[fd] = handler

    def unwatch(self, fd: int) -> None:
        self._poller.unregister(fd)
        del self._handlers[fd]

    def wake_at(self, guest: LoopGuest, when: float) -> None:
        """Wake ``guest`` at ``when`` (monotonic), or never: ``math.inf``."""
        self._wakes[guest] = when
        self._guest_due = min(self._wakes.values())

    def _wake_guests(self, now: float) -> None:
        for guest, when in list(self._wakes.items()):
            if now >= when:
                self._wakes[guest] = math.inf  # until it asks again, as it wakes
                guest.wake()
        self._guest_due = min(self._wakes.values(), default=math.inf)

    # ----------------------------------------------------------------- answers

    @property
    def running(self) -> bool:
        """The command has neither exited nor closed its pty."""
        return self._status is None and not self._master_eof and self._master >= 0

    def type_answer(self, keys: bytes) -> bool:
        """Type an answer's keys into the command's input, alone in one write; False
        when not now: the user's bytes are still on their way to the command, or their
        input ended inside what may be one of their escape sequences (keys put in there
        would join it). They never pass through the recorder: they are not the user's."""
        if not self.running or self._to_child or self._recorder.input_pending:
            return False
        try:
            written = os.write(self._master, keys)
        except OSError:  # BlockingIOError: the command's input queue is full
            return False
        if written < len(keys):
            # A nearly full queue took part: the rest goes next, before any key of the
            # user's, so nothing comes between.
            self._to_child += keys[written:]
            self._flush_to_child()
        return True

    # ----------------------------------------------------------------- bytes

    def _on_master(self, events: int) -> None:
        if events & select.POLLOUT:
            self._flush_to_child()
        if events & _IN:
            self._read_master()

    def _read_master(self) -> bool:
        """Pass on the command's output that is there now, up to READ_SIZE bytes; False
        when there was none."""
        master = self._master
        feed = self._scanner.feed
        pass_on = self._pass_on
        # Only an agent whose rules read the screen: any other command's output is
        # never searched.
        screen = self._recorder.screen if self._recorder.watches_screen else None
        size = 0
        while size < READ_SIZE:
            try:
                data = os.read(master, READ_SIZE)
            except BlockingIOError:
                break
            except OSError:  # EIO: no process has the pty open any more
                data = b""
            if not data:
                self._master_eof = True
                self._to_child.clear()
                break
            size += len(data)
            output, events = feed(data)
            if events:
                self._on_events(events)
            if screen is not None:
                screen(output)
            pass_on(output)
            if len(data) < STREAMING_READ:
                # Interactive output, an echo: the next keystroke matters more than a
                # read that would most likely find nothing (and can wait for the pty).
                break
        if size and self._status is not None:
            self._drain_deadline = min(self._drain_limit, time.monotonic() + DRAIN_SILENCE)
        return size > 0

    def _on_events(self, events: tuple[Event, ...]) -> None:
        answers = self._recorder.apply(events)
        if answers:
            # Straight into the command's input, ahead of whatever this chunk's output
            # makes the terminal answer (the DA1 that follows the query).
            self._to_child += answers
            self._flush_to_child()

    def _pass_on(self, data: bytes) -> None:
        if not data or self._stdout is None:
            return
        try:
            write_all(self._stdout, data)
        except OSError as error:
            raise TerminalGoneError(f"writing output: {error.strerror}") from None

    def _on_stdin(self, events: int) -> None:
        try:
            data = os.read(self._stdin, READ_SIZE)
        except BlockingIOError:
            return
        except OSError:  # EIO from a terminal that hung up
            data = b""
        if not data:
            self._stdin_open = False
            if self._raw is not None:
                raise TerminalGoneError("end of input from the terminal")
            # Like a person pressing Ctrl-D: on an empty line once is enough, after a
            # partial line the first only ends that line.
            self._eof_pending = True
            self._flush_to_child()
            return
        self._last_input_newline = data.endswith(b"\n")
        self._to_child += data
        self._flush_to_child()
        # After the bytes are on their way: telling keys from replies must not delay them.
        self._recorder.input(data)

    def _flush_to_child(self) -> None:
        while True:
            if not self._to_child:
                if not self._eof_pending:
                    return
                self._eof_pending = False
                self._to_child += self._veof * (1 if self._last_input_newline else 2)
            try:
                written = os.write(self._master, self._to_child)
            except BlockingIOError:
                return
            except OSError:  # the command's side is gone; nobody will read this
                self._to_child.clear()
                self._eof_pending = False
                return
            del self._to_child[:written]

    # ----------------------------------------------------------------- signals

    def _on_signals(self, events: int) -> None:
        for signum in self._signals.read():
            if signum == signal.SIGALRM:
                self._alarm.ring()
            elif signum == signal.SIGCHLD:
                self._reap()
            elif signum == signal.SIGWINCH:
                self._copy_size()
            elif signum == signal.SIGCONT:
                self._resumed()
            elif signum == signal.SIGTERM:
                self._log("SIGTERM: passed on to the command")
                send(self._spawned.child, signal.SIGTERM)
            elif signum in _FORWARDED:
                self._log(f"{signal.Signals(signum).name}: passed on to the foreground group")
                send_group(foreground_group(self._master, self._spawned), signum)
            elif signum == signal.SIGHUP:
                raise TerminalGoneError("SIGHUP")

    def _reap(self) -> None:
        if self._status is not None:
            return
        try:
            pid, status = os.waitpid(self._spawned.keeper, os.WNOHANG | os.WUNTRACED)
        except ChildProcessError:  # pragma: no cover - only if someone else reaped it
            pid, status = self._spawned.keeper, 1 << 8
        if pid == 0:
            return
        if os.WIFSTOPPED(status):
            self._child_stopped()
            return
        self._status = exit_code(status)
        now = time.monotonic()
        self._drain_limit = now + DRAIN_LIMIT
        self._drain_deadline = min(self._drain_limit, now + DRAIN_SILENCE)
        self._log(f"command exited status={self._status}")

    def _child_stopped(self) -> None:
        """The command stopped (Ctrl-Z): give the user's shell the terminal, as it would."""
        if not self._hanging_up and not self._tstp_ignored:
            self._log("command stopped: suspending")
            # What the command's pty echoed as it stopped ("^Z") belongs before the
            # shell's "Stopped" line, as it would appear without us.
            # Bounded: something outside the stopped group may be writing without end.
            for _ in range(16):
                if self._master < 0 or self._master_eof or not self._read_master():
                    break
            if self._raw is not None:
                self._raw.restore()
            # If our own process group is orphaned (no job-control shell above us), the
            # kernel discards this SIGTSTP and we simply carry on, as would the command.
            with self._signals.default(signal.SIGTSTP):
                os.kill(os.getpid(), signal.SIGTSTP)
            self._log("resumed")
            self._resumed()
        continue_command(self._master, self._spawned)

    def _resumed(self) -> None:
        if self._raw is not None:
            try:
                self._raw.enter()
            except (OSError, termios.error):
                raise TerminalGoneError("terminal unusable on resume") from None
        self._copy_size()

    def _copy_size(self) -> None:
        if self._size_fd is None or self._master < 0:
            return
        size = get_size(self._size_fd)
        if size is not None:
            with suppress(OSError):  # the command's pty is gone
                set_size(self._master, size)

    # ----------------------------------------------------------------- hangup

    def hang_up_child(self) -> None:
        """Hang the command up as a closing terminal would (:func:`hang_up_command`),
        and close our end. Closing the master then hangs the pty up, and the keeper
        passes that on to the command's group too (see spawn): what hears the first
        hangup seldom waits for the second."""
        if self._status is None:
            hang_up_command(self._master, self._spawned)
        self.close_master()

    def _hang_up(self, reason: str) -> int:
        """The user's terminal is gone: hang the command up, wait a little for its end."""
        self._log(f"hangup ({reason})")
        self._alarm.disarm()
        self._hanging_up = True
        self._stdout = None
        self.hang_up_child()
        deadline = time.monotonic() + HANGUP_WAIT
        waiter = select.poll()
        waiter.register(self._signals.fileno(), select.POLLIN)
        self._reap()
        while self._status is None:
            left = deadline - time.monotonic()
            if left <= 0:
                self._log("command still running after hangup; leaving it")
                return HANGUP_STATUS
            waiter.poll(math.ceil(left * 1000))  # SIGCHLD wakes us
            self._signals.read()
            self._reap()
        return self._status
