# tray @VERSION@ for fish: in ~/.config/fish/config.fish, tray init fish | source
# Wrapped commands run under `tray run`; a command typed at the prompt that runs longer
# than @DONE_AFTER@ is recorded as a finished session when it ends.

set -g __tray_program @PROGRAM@
set -g __tray_ignore @IGNORE@
set -g __tray_stopped @STOPPED@
set -g __tray_threshold_ms @THRESHOLD_MS@

function __tray_program
    # The tray that printed this code; a tray on PATH once that one is gone.
    if test -x "$__tray_program[1]"
        printf '%s\n' $__tray_program
    else if command -q tray
        echo tray
    else
        return 1
    end
end

function __tray_in_session
    # A tmux pane or a terminal started from a `tray run` inherits its TRAY_SESSION_ID:
    # that session is ours only when its terminal is this one.
    test -n "$TRAY_SESSION_ID" -a -n "$TRAY_TTY"; or return 1
    if not set -q __tray_tty[1]
        set -l tty (command tty 2>/dev/null); or return 1
        set -g __tray_tty $tty
    end
    test "$TRAY_TTY" = "$__tray_tty"
end

function __tray_wrap
    # Pipes, scripts and a command missing from PATH behave exactly as without tray.
    set -l tray
    if status is-interactive; and isatty stdin; and isatty stdout; and command -q -- $argv[1]
        and not __tray_in_session
        set tray (__tray_program)
    end
    if set -q tray[1]
        set -g __tray_wrapped 1
        command $tray run -- $argv
    else
        command $argv
    end
end

function __tray_warn
    contains -- $argv[1] $__tray_warned; and return
    set -ga __tray_warned $argv[1]
    printf "tray: not wrapping %s: it is %s (have it run 'tray run -- %s' for a session)\n" \
        $argv[1] $argv[2] $argv[1] >&2
end

for __tray_name in @WRAP@
    if functions -q -- $__tray_name
        set -l description (functions --details --verbose -- $__tray_name)[5]
        if string match -q -- 'alias *' $description
            __tray_warn $__tray_name "an alias"
            continue
        else if test "$description" != "tray: run under tray run"
            __tray_warn $__tray_name "a function"
            continue
        end
    end
    # Functions named as the command: completion for the name stays the command's own.
    function $__tray_name -V __tray_name -d "tray: run under tray run"
        __tray_wrap $__tray_name $argv
    end
end
set -e __tray_name

# fish measures every command itself ($CMD_DURATION): nothing runs at a prompt unless the
# command ran long.
function __tray_postexec --on-event fish_postexec
    set -l s $status
    set -l ms $CMD_DURATION
    if set -q __tray_wrapped
        set -e __tray_wrapped
        return
    end
    test "$ms" -gt $__tray_threshold_ms 2>/dev/null; or return
    contains -- $s $__tray_stopped; and return
    # A command stopped with Ctrl-Z has not ended, though fish gives it status 0: it is
    # the newest job, stopped, and the line started with it.
    set -l job (string split \t -- (jobs --last 2>/dev/null))
    if test "$job[4]" = stopped
        and test (string sub -l (string length -- "$job[5]") -- $argv[1]) = "$job[5]"
        return
    end
    __tray_in_session; and return
    set -l first (string match -r -- '^\s*(?:[A-Za-z_][A-Za-z0-9_]*=\S*\s+)*([^\s;&|()<>]+)' $argv[1])
    or return
    contains -- (string replace -r -- '.*/' '' $first[2]) $__tray_ignore; and return
    set -l tray (__tray_program); or return
    # In the background and disowned: no job messages, and the prompt does not wait.
    command $tray _finished --cmdline=$argv[1] --status=$s --duration=(math $ms / 1000) \
        --cwd=$PWD --pid=$fish_pid >/dev/null 2>&1 &
    disown $last_pid 2>/dev/null
end

# `tray doctor` reads this to tell whether the shell it runs in has the integration.
set -gx TRAY_SHELL_INIT fish
